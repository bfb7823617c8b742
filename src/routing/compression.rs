//! A request's tool results compressed once, before any attempt (see `compress`): the mode
//! is the request's `x-fcm-compress` header, else its set's `compress`, else
//! `router.compress`. The trace keeps the tokens saved; every attempt sends the compressed
//! body, and the ledger counts the saving per request sent (`attempt`). The router's memo
//! keeps what earlier turns compressed: the history comes back every turn.

use std::borrow::Cow;

use serde_json::Value;

use crate::compress::{self, Mode};
use crate::state::trace::Trace;

use super::failover::Ask;
use super::router::{Route, Router};

impl Router {
    /// The compression `ask` gets on `route`; a header fcm cannot read is noted and passed
    /// over. Noted once, when a continuation routes the request again.
    pub(super) fn compress_mode(&self, route: &Route, ask: &Ask<'_>, trace: &mut Trace) -> Mode {
        if let Some(header) = ask.compress {
            let mode = Mode::parse(header);
            let note = match mode {
                Some(m) => format!("compress:{m}:header"),
                None => "compress:unknown_header_value".to_string(),
            };
            if !trace.notes.contains(&note) {
                trace.notes.push(note);
            }
            if let Some(m) = mode {
                return m;
            }
        }
        let set = match route {
            Route::Set(name) => self.sets.get(name).and_then(|s| s.compress),
            _ => None,
        };
        set.unwrap_or(self.compress)
    }

    /// `ask`'s body with its tool results compressed (borrowed when none changed); the
    /// tokens saved go into the trace when the request held tool results.
    pub(super) fn compressed<'a>(
        &self,
        route: &Route,
        ask: &Ask<'a>,
        trace: &mut Trace,
    ) -> Cow<'a, Value> {
        let mode = self.compress_mode(route, ask, trace);
        let c = compress::chat_body(ask.body, mode, Some(&self.memo));
        if c.tool_results > 0 {
            trace.saved_tokens = Some(c.saved_tokens());
        }
        match c.body {
            Some(body) => Cow::Owned(body),
            None => Cow::Borrowed(ask.body),
        }
    }
}

//! A request's tool results compressed once, in place, before it is routed (see
//! `compress`): the mode is the request's `x-fcm-compress` header, else its set's
//! `compress`, else `router.compress`. The trace and the `/metrics` counters keep the
//! tokens saved; every attempt sends the compressed body, and the ledger counts the saving
//! per request sent (`attempt`). The router's memo keeps what earlier turns compressed:
//! the history comes back every turn.

use serde_json::Value;

use crate::compress::{self, Mode};
use crate::state::trace::Trace;

use super::router::{Route, Router};

impl Router {
    /// The compression a request on `route` gets, `header` its `x-fcm-compress`; a header
    /// fcm cannot read is noted and passed over.
    fn compress_mode(&self, route: &Route, header: Option<&str>, trace: &mut Trace) -> Mode {
        if let Some(header) = header {
            match Mode::parse(header) {
                Some(m) => {
                    trace.notes.push(format!("compress:{m}:header"));
                    return m;
                }
                None => trace.notes.push("compress:unknown_header_value".into()),
            }
        }
        let set = match route {
            Route::Set(name) => self.sets.get(name).and_then(|s| s.compress),
            _ => None,
        };
        set.unwrap_or(self.compress)
    }

    /// Compresses the tool results of `body`, a chat request on `route`, in place; the
    /// tokens saved go into the trace when the request held tool results.
    pub(crate) fn compress(
        &self,
        route: &Route,
        header: Option<&str>,
        body: &mut Value,
        trace: &mut Trace,
    ) {
        let mode = self.compress_mode(route, header, trace);
        let c = compress::chat_body(body, mode, Some(&self.memo));
        if c.tool_results > 0 {
            let saved = c.saved_tokens();
            trace.saved_tokens = Some(saved);
            self.metrics.compressed(mode, saved);
        }
    }
}

//! The request that asks another model to finish an answer whose stream broke off: the
//! conversation as the client sent it, the answer so far as the assistant's turn, and a
//! short instruction to go on from its last word. The client sees one answer: the partial
//! text it already has, then the continuation.
//!
//! An instruction rather than a bare assistant prefix: OpenAI-compatible servers differ on
//! a last assistant message (some continue it, some start a new turn, some refuse), while
//! every chat model follows a user turn.

use serde_json::{json, Value};

use crate::state::trace::Trace;

use super::attempt::Served;
use super::failover::Ask;
use super::refusal::Refused;
use super::router::{Route, Router};

/// How many times an answer that broke off is handed to another model to finish.
pub(crate) const CONTINUATIONS: usize = 2;

/// An answer whose stream broke off after content, as the client has it so far.
pub(crate) struct Broken<'a> {
    /// The model whose stream broke: not asked to finish it.
    pub model: &'a str,
    /// The answer's text so far (not its reasoning).
    pub text: &'a str,
    /// A tool call had begun: another model cannot finish half a call.
    pub call_begun: bool,
    /// The client is still reading.
    pub client_here: bool,
    /// Continuations this answer has had already.
    pub continued: usize,
    /// The last continuation did not fit: it started the answer over (see `seam`).
    pub misfit: bool,
}

/// What an answer that broke off comes to.
pub(crate) enum Continued<'r> {
    /// Not continued (a pinned model, a call begun, the client gone, continued enough
    /// already, or a continuation that did not fit): the trace as it was; the answer ends
    /// as broken off.
    Not(Trace),
    /// Another model finishes it.
    Served(Served<'r>),
    /// No model could: the refusal, with every attempt.
    Refused(Box<Refused>),
}

impl Router {
    /// Whether another model finishes an answer that broke off (`broken`), and the request
    /// routed for it the way the answer was (`route`, `ask`), without the model that broke:
    /// the conversation, the text so far as the assistant's turn, and [`INSTRUCTION`]. The
    /// one place this is decided; the edge only relays what comes of it.
    pub(crate) fn continue_broken<'r>(
        &'r self,
        route: &Route,
        ask: &Ask<'_>,
        broken: &Broken<'_>,
        mut trace: Trace,
    ) -> Continued<'r> {
        let pinned = matches!(route, Route::Pinned(_));
        let enough = broken.continued >= CONTINUATIONS || broken.misfit;
        if enough || broken.call_begun || pinned || !broken.client_here {
            return Continued::Not(trace);
        }
        trace
            .notes
            .push(format!("continued_after:{}", broken.model));
        let body = request(ask.body, broken.text);
        let ask = Ask {
            body: &body,
            exclude: Some(broken.model),
            session: ask.session.clone(),
            tools: ask.tools.clone(),
            ..*ask
        };
        match self.route(route, &ask, trace) {
            Ok(served) => Continued::Served(served),
            Err(refused) => Continued::Refused(refused),
        }
    }
}

/// What the continuing model is told, after the partial answer.
pub(crate) const INSTRUCTION: &str = "Your reply above was cut off. Continue it exactly \
where it stops, without repeating any of it and without comment: write only the rest.";

/// The chat request for the rest of an answer that broke off after `given` (its text so
/// far; empty when only reasoning had come, and the request is then asked again as it was).
pub(crate) fn request(original: &Value, given: &str) -> Value {
    let mut body = original.clone();
    if given.is_empty() {
        return body;
    }
    if let Some(messages) = body.get_mut("messages").and_then(Value::as_array_mut) {
        messages.push(json!({"role": "assistant", "content": given}));
        messages.push(json!({"role": "user", "content": INSTRUCTION}));
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_partial_answer_and_the_instruction_follow_the_conversation() {
        let original = json!({"model": "fcm", "stream": true, "messages": [
            {"role": "system", "content": "Be brief."}, {"role": "user", "content": "Plan it."}]});
        let body = request(&original, "Step 1: read the file. Step 2:");
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 4);
        assert_eq!(
            messages[2],
            json!({"role": "assistant", "content": "Step 1: read the file. Step 2:"})
        );
        assert_eq!(messages[3]["role"], "user");
        assert_eq!(body["stream"], true);
        assert_eq!(
            request(&original, ""),
            original,
            "nothing said yet: asked again"
        );
    }
}

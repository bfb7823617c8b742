//! A committed chat stream's shape on its way to the client: chat bytes repaired where
//! needed (`chat`), or translated into another protocol's events ([`StreamTranslator`]).

use serde_json::Value;

use super::chat;
use super::wire::CallIds;

/// A committed chat stream on its way to the client: chat bytes repaired where needed
/// (`chat`), or translated into another protocol's events.
pub(crate) enum StreamShape {
    Chat(Box<chat::ChatStream>),
    Events(Box<dyn StreamTranslator>),
}

impl StreamShape {
    /// Bytes to send before the stream's own.
    pub(crate) fn start(&mut self) -> Vec<u8> {
        match self {
            StreamShape::Chat(_) => Vec::new(),
            StreamShape::Events(t) => t.start(),
        }
    }

    /// The client's bytes for chat bytes the hold buffer released, and their parsed chunks.
    pub(crate) fn shape(&mut self, bytes: Vec<u8>, chunks: Vec<Value>) -> Vec<u8> {
        match self {
            StreamShape::Chat(c) => c.shape(bytes, chunks),
            StreamShape::Events(t) => t.feed(&chunks),
        }
    }

    /// The ids given to the provider's tool calls so far.
    pub(crate) fn call_ids(&mut self) -> CallIds {
        match self {
            StreamShape::Chat(c) => c.call_ids(),
            StreamShape::Events(t) => t.call_ids(),
        }
    }

    /// Ends the client's stream: cleanly, or after content when `error` says the answer
    /// broke off. A chat stream then ends with an `error` data frame as OpenAI sends one
    /// (its SDKs raise on it) and no `[DONE]`; the others with their own error event.
    pub(crate) fn finish(&mut self, error: Option<&str>) -> Vec<u8> {
        match self {
            StreamShape::Chat(c) => {
                let mut out = c.finish();
                if let Some(message) = error {
                    let frame = serde_json::json!({"error": {
                        "message": format!("the model's answer broke off: {message}"),
                        "type": "server_error", "param": Value::Null, "code": "stream_broken"}});
                    out.extend_from_slice(format!("data: {frame}\n\n").as_bytes());
                }
                out
            }
            StreamShape::Events(t) => t.finish(error),
        }
    }
}

/// Turns a committed chat completion stream into a client's event stream, chunk by chunk.
/// It reads the chunks the content gate already parsed: a stream is parsed once.
pub(crate) trait StreamTranslator: Send {
    /// Bytes to send before anything else (e.g. `message_start`).
    fn start(&mut self) -> Vec<u8>;
    /// Translates one parsed chat chunk, appending the client's events to `out`.
    fn on_chunk(&mut self, chunk: &Value, out: &mut Vec<u8>);
    /// Ends the client's stream cleanly. `error` is set when the upstream broke after
    /// content had been sent.
    fn finish(&mut self, error: Option<&str>) -> Vec<u8>;

    /// The ids given to the provider's tool calls so far (taken).
    fn call_ids(&mut self) -> CallIds {
        CallIds::default()
    }

    /// Translates parsed chat chunks, in stream order.
    fn feed(&mut self, chunks: &[Value]) -> Vec<u8> {
        let mut out = Vec::new();
        for chunk in chunks {
            self.on_chunk(chunk, &mut out);
        }
        out
    }
}

//! A stream's shape that gives the client nothing of a secret: every byte of a committed
//! stream is made by its [`StreamShape`], so cleaning what the shape gives is cleaning all
//! of it, whatever protocol it was shaped into, once per event batch.

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::Value;

use crate::secrets::Secrets;

use super::shape::StreamShape;

/// A [`StreamShape`] whose output has every secret removed (see `secrets`).
pub(crate) struct RedactedShape<'s> {
    shape: &'s mut StreamShape,
    secrets: Arc<Secrets>,
}

impl StreamShape {
    /// This shape with `secrets` removed from all it gives the client.
    pub(crate) fn redacted(&mut self, secrets: Arc<Secrets>) -> RedactedShape<'_> {
        RedactedShape {
            shape: self,
            secrets,
        }
    }
}

impl RedactedShape<'_> {
    /// [`StreamShape::start`], cleaned.
    pub(crate) fn start(&mut self) -> Vec<u8> {
        let out = self.shape.start();
        self.clean(out)
    }

    /// [`StreamShape::shape`], cleaned.
    pub(crate) fn shape(&mut self, bytes: Vec<u8>, chunks: Vec<Value>) -> Vec<u8> {
        let out = self.shape.shape(bytes, chunks);
        self.clean(out)
    }

    /// [`StreamShape::finish`], cleaned (the error text is the provider's too).
    pub(crate) fn finish(&mut self, error: Option<&str>) -> Vec<u8> {
        let out = self.shape.finish(error);
        self.clean(out)
    }

    /// The bytes as they are when nothing matched (no copy), else the cleaned copy.
    fn clean(&self, bytes: Vec<u8>) -> Vec<u8> {
        match self.secrets.redact_bytes(&bytes) {
            Cow::Owned(clean) => clean,
            Cow::Borrowed(_) => bytes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Protocol;
    use serde_json::json;

    #[test]
    fn events_of_every_protocol_are_cleaned() {
        let secrets = Arc::new(Secrets::new(["sk-SECRET-1234567890"]));
        let chunk = json!({"id": "c1", "object": "chat.completion.chunk", "model": "m",
            "choices": [{"index": 0, "delta": {"role": "assistant", "content": "key sk-SECRE****7890"}, "finish_reason": null}]});
        let bytes = format!("data: {chunk}\n\n").into_bytes();
        for proto in [Protocol::Chat, Protocol::Anthropic, Protocol::Responses] {
            let mut shape = proto.stream_shape("fcm", false, None, Default::default());
            let mut shape = shape.redacted(secrets.clone());
            let mut out = shape.start();
            out.extend(shape.shape(bytes.clone(), vec![chunk.clone()]));
            out.extend(shape.finish(Some("broke at sk-SECRET-1234567890")));
            let text = String::from_utf8(out).unwrap();
            assert!(text.contains("key [redacted]****7890"), "{proto:?}: {text}");
            assert!(!text.contains("sk-SEC"), "{proto:?}: {text}");
        }
    }
}

//! Answers of thinking models: reasoning, then the answer, in each provider's shape
//! ([`Thinker`]), whole or streamed.

use std::io;
use std::net::TcpStream;

use serde_json::{json, Value};

use super::behavior::Thinker;
use super::wire::{completion, content_pieces, stream_deltas};

/// Reasoning, then `answer`, in a thinker's shape.
pub(super) fn thinking_answer(
    out: &mut TcpStream,
    id: &str,
    model: &str,
    thinker: Thinker,
    stream: bool,
    answer: &str,
) -> io::Result<bool> {
    let reasoning = Thinker::REASONING;
    if !stream {
        let mut message = match thinker {
            Thinker::ThinkTags => {
                json!({"content": format!("<think>{reasoning}</think>\n\n{answer}")})
            }
            Thinker::ContentArray => json!({"content": [
                {"type": "thinking", "thinking": [{"type": "text", "text": reasoning}]},
                {"type": "text", "text": answer}]}),
            _ => {
                let mut m = reasoning_shape(thinker, reasoning);
                m["content"] = json!(answer);
                m
            }
        };
        message["role"] = json!("assistant");
        return completion(out, id, model, message, "stop");
    }
    let mut deltas = vec![json!({"content": ""})];
    if thinker == Thinker::ThinkTags {
        // The whole content in 3-character pieces: the tags are cut in the middle.
        let text = format!("<think>{reasoning}</think>\n\n{answer}");
        deltas.extend(content_pieces(&text, 3));
    } else {
        deltas.extend(
            reasoning
                .split_inclusive(' ')
                .map(|part| reasoning_shape(thinker, part)),
        );
        deltas.extend(
            answer
                .split_inclusive(' ')
                .map(|word| json!({"content": word})),
        );
    }
    stream_deltas(out, id, model, deltas, "stop")
}

/// The message (or one stream delta) carrying `reasoning`, in `thinker`'s shape.
fn reasoning_shape(thinker: Thinker, reasoning: &str) -> Value {
    match thinker {
        Thinker::ReasoningContent => json!({"content": null, "reasoning_content": reasoning}),
        Thinker::Reasoning => json!({"content": null, "reasoning": reasoning}),
        Thinker::ReasoningDetails => json!({"reasoning": reasoning,
            "reasoning_details": [{"type": "reasoning.text", "text": reasoning, "format": "unknown"}]}),
        Thinker::ThinkTags => json!({"content": reasoning}),
        Thinker::ContentArray => {
            json!({"content": [{"type": "thinking", "thinking": [{"type": "text", "text": reasoning}]}]})
        }
    }
}

//! What a request needs from a model before any is chosen: vision, PDF, audio, tools.
//!
//! Looks at the current user turn (everything after the last assistant message) of a chat,
//! Anthropic Messages or Responses body, and at whether tools are offered. Pure.

use serde_json::Value;

/// The capabilities a model cannot fake: without them the request's media is dropped
/// (tools, by contrast, a model may call without claiming them).
pub const HARD: [&str; 3] = ["vision", "pdf", "audio"];

/// Capabilities a request needs (names as the catalog's `capabilities` lists them).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Needs {
    pub vision: bool,
    pub pdf: bool,
    pub audio: bool,
    pub tools: bool,
}

impl Needs {
    /// The catalog names of what is needed.
    pub fn names(&self) -> Vec<&'static str> {
        [
            (self.vision, "vision"),
            (self.pdf, "pdf"),
            (self.audio, "audio"),
            (self.tools, "tools"),
        ]
        .into_iter()
        .filter_map(|(on, name)| on.then_some(name))
        .collect()
    }

    /// Whether a model claiming `capabilities` has everything needed.
    pub fn met_by(&self, capabilities: &[String]) -> bool {
        self.names()
            .iter()
            .all(|n| capabilities.iter().any(|c| c == n))
    }

    /// Like [`met_by`](Self::met_by), with a bench proof of tool calls standing in for a
    /// `tools` claim: what a model did beats what its catalog entry says.
    pub fn met_by_or_proven(&self, capabilities: &[String], calls_tools: bool) -> bool {
        let rest = Needs {
            tools: self.tools && !calls_tools,
            ..*self
        };
        rest.met_by(capabilities)
    }
}

fn is_assistant(item: &Value) -> bool {
    item.get("role").and_then(Value::as_str) == Some("assistant")
        || matches!(
            item.get("type").and_then(Value::as_str),
            Some("function_call" | "reasoning")
        )
}

/// Detects what the request's current user turn needs.
pub fn detect(body: &Value) -> Needs {
    let mut needs = Needs {
        tools: body
            .get("tools")
            .and_then(Value::as_array)
            .is_some_and(|t| !t.is_empty()),
        ..Needs::default()
    };
    let items = body
        .get("messages")
        .or_else(|| body.get("input"))
        .and_then(Value::as_array);
    if let Some(items) = items {
        let start = items.iter().rposition(is_assistant).map_or(0, |i| i + 1);
        for item in &items[start..] {
            scan(item, &mut needs);
        }
    }
    needs
}

fn scan(v: &Value, needs: &mut Needs) {
    match v {
        Value::String(s) => {
            needs.vision |= s.starts_with("data:image/");
            needs.pdf |= s.starts_with("data:application/pdf");
            needs.audio |= s.starts_with("data:audio/");
        }
        Value::Array(a) => a.iter().for_each(|x| scan(x, needs)),
        Value::Object(o) => {
            let kind = o.get("type").and_then(Value::as_str).unwrap_or("");
            let media = ["media_type", "mime_type", "file_type"]
                .iter()
                .filter_map(|k| o.get(*k).and_then(Value::as_str))
                .chain(
                    o.get("source")
                        .and_then(|s| s.get("media_type"))
                        .and_then(Value::as_str),
                )
                .next()
                .unwrap_or("");
            let filename = o.get("filename").and_then(Value::as_str).unwrap_or("");
            match kind {
                "image_url" | "image" | "input_image" => needs.vision = true,
                "input_audio" | "audio" => needs.audio = true,
                "document" | "file" | "input_file"
                    if media == "application/pdf"
                        || filename.to_ascii_lowercase().ends_with(".pdf") =>
                {
                    needs.pdf = true
                }
                _ => {}
            }
            o.values().for_each(|x| scan(x, needs));
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn detection_table() {
        let cases: Vec<(Value, Needs)> = vec![
            // Chat: image in the current turn.
            (
                json!({"messages": [{"role": "user", "content": [{"type": "text", "text": "x"}, {"type": "image_url", "image_url": {"url": "https://x/a.png"}}]}]}),
                Needs {
                    vision: true,
                    ..Default::default()
                },
            ),
            // An image before the last assistant message belongs to an old turn.
            (
                json!({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,AA"}}]},
                                 {"role": "assistant", "content": "seen"}, {"role": "user", "content": "and now?"}]}),
                Needs::default(),
            ),
            // Anthropic: base64 image, PDF document, tools offered.
            (
                json!({"tools": [{"name": "Bash"}], "messages": [{"role": "user", "content": [
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA"}},
                {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBE"}}]}]}),
                Needs {
                    vision: true,
                    pdf: true,
                    tools: true,
                    ..Default::default()
                },
            ),
            // Responses: input_image and input_file PDF after a function call.
            (
                json!({"input": [{"type": "function_call", "call_id": "c"}, {"type": "function_call_output", "call_id": "c", "output": "ok"},
                              {"role": "user", "content": [{"type": "input_image", "image_url": "data:image/jpeg;base64,AA"},
                                                           {"type": "input_file", "filename": "spec.PDF", "file_data": "x"}]}]}),
                Needs {
                    vision: true,
                    pdf: true,
                    ..Default::default()
                },
            ),
            // Audio in chat.
            (
                json!({"messages": [{"role": "user", "content": [{"type": "input_audio", "input_audio": {"data": "AA", "format": "wav"}}]}]}),
                Needs {
                    audio: true,
                    ..Default::default()
                },
            ),
            (
                json!({"messages": [{"role": "user", "content": "plain"}], "tools": []}),
                Needs::default(),
            ),
        ];
        for (body, want) in cases {
            assert_eq!(detect(&body), want, "{body}");
        }
    }

    #[test]
    fn capabilities_meet_needs() {
        let n = Needs {
            vision: true,
            tools: true,
            ..Default::default()
        };
        assert_eq!(n.names(), ["vision", "tools"]);
        assert!(n.met_by(&["tools".into(), "vision".into()]));
        assert!(!n.met_by(&["tools".into()]));
        assert!(Needs::default().met_by(&[]));
        assert!(n.met_by_or_proven(&["vision".into()], true));
        assert!(!n.met_by_or_proven(&["vision".into()], false));
        assert!(
            !n.met_by_or_proven(&["tools".into()], true),
            "a proof of tools is no vision"
        );
    }
}

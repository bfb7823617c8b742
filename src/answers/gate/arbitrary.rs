//! Generated chat answers and streams for the property tests of the stream path (SSE
//! parser, hold buffer, gate, translators): one small grammar of what providers send, so
//! every test draws from the same shapes.
//!
//! A stream is a list of [`Part`]s (role, content, reasoning and tool-call deltas, a finish
//! and a usage chunk, keep-alive comments, blank lines, garbled frames, error frames,
//! `[DONE]`), written with `\n` or `\r\n` line ends, and possibly cut before its last blank
//! line. Text is drawn from an alphabet without `>`, so no `<think>` block can form and
//! every piece of content reaches a client as text.

use proptest::prelude::*;
use serde_json::{json, Value};

/// One thing a provider's stream can carry.
#[derive(Debug, Clone)]
pub(crate) enum Part {
    Role,
    Content(String),
    Reasoning(String),
    /// The start of call `index`: its id, name and a first piece of arguments.
    CallStart {
        index: u64,
        name: String,
        args: String,
    },
    /// More arguments for call `index`.
    CallArgs {
        index: u64,
        args: String,
    },
    Finish(&'static str),
    Usage(u64, u64),
    KeepAlive,
    Blank,
    /// A `data:` line that is not JSON.
    Garbled,
    Error(String),
    /// An `event: error` frame (Anthropic style).
    NamedError,
    Done,
}

impl Part {
    /// The chat chunk this part is, if it is one (keep-alives, blanks, garbage, errors and
    /// `[DONE]` are not).
    pub(crate) fn chunk(&self) -> Option<Value> {
        let delta = |d: Value, finish: Option<&str>| {
            json!({"id": "c", "object": "chat.completion.chunk", "model": "m",
                   "choices": [{"index": 0, "delta": d, "finish_reason": finish}]})
        };
        Some(match self {
            Part::Role => delta(json!({"role": "assistant", "content": ""}), None),
            Part::Content(s) => delta(json!({"content": s}), None),
            Part::Reasoning(s) => delta(json!({"reasoning_content": s}), None),
            Part::CallStart { index, name, args } => delta(
                json!({"tool_calls": [{"index": index, "id": format!("call_{index}"),
                    "type": "function", "function": {"name": name, "arguments": args}}]}),
                None,
            ),
            Part::CallArgs { index, args } => delta(
                json!({"tool_calls": [{"index": index, "function": {"arguments": args}}]}),
                None,
            ),
            Part::Finish(reason) => delta(json!({}), Some(reason)),
            Part::Usage(p, c) => {
                json!({"id": "c", "object": "chat.completion.chunk", "choices": [],
                                         "usage": {"prompt_tokens": p, "completion_tokens": c}})
            }
            _ => return None,
        })
    }

    /// The part as SSE lines, each without its line end.
    fn lines(&self) -> Vec<String> {
        if let Some(chunk) = self.chunk() {
            return vec![format!("data: {chunk}")];
        }
        match self {
            Part::KeepAlive => vec![": keep-alive".into()],
            Part::Blank => vec![],
            Part::Garbled => vec!["data: {\"choices\": [".into()],
            Part::Error(message) => {
                vec![format!("data: {}", json!({"error": {"message": message}}))]
            }
            Part::NamedError => vec![
                "event: error".into(),
                "data: {\"type\":\"error\",\"error\":{\"message\":\"overloaded\"}}".into(),
            ],
            _ => vec!["data: [DONE]".into()],
        }
    }
}

/// A generated provider stream.
#[derive(Debug, Clone)]
pub(crate) struct ChatStream {
    pub parts: Vec<Part>,
    pub crlf: bool,
    /// The stream ends right after its last line, without the blank line.
    pub cut_last_blank: bool,
}

impl ChatStream {
    /// The stream as the provider sends it.
    pub(crate) fn bytes(&self) -> Vec<u8> {
        let end = if self.crlf { "\r\n" } else { "\n" };
        let mut out = String::new();
        for part in &self.parts {
            for line in part.lines() {
                out.push_str(&line);
                out.push_str(end);
            }
            out.push_str(end);
        }
        if self.cut_last_blank && !self.parts.is_empty() {
            out.truncate(out.len() - end.len());
        }
        out.into_bytes()
    }

    /// The chat chunks in stream order.
    pub(crate) fn chunks(&self) -> Vec<Value> {
        self.parts.iter().filter_map(Part::chunk).collect()
    }

    pub(crate) fn content(&self) -> String {
        self.texts(|p| match p {
            Part::Content(s) => Some(s),
            _ => None,
        })
    }

    pub(crate) fn reasoning(&self) -> String {
        self.texts(|p| match p {
            Part::Reasoning(s) => Some(s),
            _ => None,
        })
    }

    /// Each call's (name, arguments), in the order they started.
    pub(crate) fn calls(&self) -> Vec<(String, String)> {
        let mut calls: Vec<(u64, String, String)> = Vec::new();
        for part in &self.parts {
            match part {
                Part::CallStart { index, name, args } => {
                    calls.push((*index, name.clone(), args.clone()))
                }
                Part::CallArgs { index, args } => {
                    if let Some(call) = calls.iter_mut().rev().find(|c| c.0 == *index) {
                        call.2.push_str(args);
                    }
                }
                _ => {}
            }
        }
        calls.into_iter().map(|(_, n, a)| (n, a)).collect()
    }

    fn texts<'a>(&'a self, pick: impl Fn(&'a Part) -> Option<&'a String>) -> String {
        self.parts
            .iter()
            .filter_map(pick)
            .map(String::as_str)
            .collect()
    }
}

/// Text of any kind: plain, whitespace, escapes, multi-byte characters, a `<` that opens
/// no tag.
pub(crate) fn text() -> impl Strategy<Value = String> {
    let ch = prop_oneof![
        4 => prop::char::range('a', 'z'),
        1 => prop::sample::select(vec![
            ' ', '\n', '\t', '"', '\\', '<', '/', 'é', '€', '😀', '\r', ':'
        ]),
    ];
    prop::collection::vec(ch, 0..12).prop_map(|cs| cs.into_iter().collect())
}

/// A piece of tool-call arguments: some make a call the shell tool of [`offered`] can
/// run, most do not.
fn arguments() -> impl Strategy<Value = String> {
    prop_oneof![
        2 => text(),
        1 => prop::sample::select(vec!["{\"command\":\"ls\"}", "{\"command\":", "\"ls\"}", "{}"])
            .prop_map(str::to_string),
    ]
}

fn name() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["Bash", "Read", "get_weather", "x"]).prop_map(str::to_string)
}

/// The answer parts of a stream: deltas, with calls numbered in the order they start and
/// their arguments continued only while they are the latest call.
fn answer_parts() -> impl Strategy<Value = Vec<Part>> {
    #[derive(Debug, Clone)]
    enum Draw {
        Content(String),
        Reasoning(String),
        Call(String, String),
        MoreArgs(String),
        Finish(&'static str),
        Usage(u64, u64),
        KeepAlive,
        Blank,
    }
    let draw = prop_oneof![
        4 => text().prop_map(Draw::Content),
        2 => text().prop_map(Draw::Reasoning),
        1 => (name(), arguments()).prop_map(|(n, a)| Draw::Call(n, a)),
        2 => arguments().prop_map(Draw::MoreArgs),
        1 => prop::sample::select(vec!["stop", "tool_calls", "length"]).prop_map(Draw::Finish),
        1 => (0..100u64, 0..100u64).prop_map(|(p, c)| Draw::Usage(p, c)),
        1 => Just(Draw::KeepAlive),
        1 => Just(Draw::Blank),
    ];
    (any::<bool>(), prop::collection::vec(draw, 0..12)).prop_map(|(role, draws)| {
        let mut parts = Vec::new();
        if role {
            parts.push(Part::Role);
        }
        let mut calls = 0u64;
        for d in draws {
            parts.push(match d {
                Draw::Content(s) => Part::Content(s),
                Draw::Reasoning(s) => Part::Reasoning(s),
                Draw::Call(name, args) => {
                    calls += 1;
                    Part::CallStart {
                        index: calls - 1,
                        name,
                        args,
                    }
                }
                Draw::MoreArgs(args) if calls > 0 => Part::CallArgs {
                    index: calls - 1,
                    args,
                },
                Draw::MoreArgs(s) => Part::Content(s),
                Draw::Finish(f) => Part::Finish(f),
                Draw::Usage(p, c) => Part::Usage(p, c),
                Draw::KeepAlive => Part::KeepAlive,
                Draw::Blank => Part::Blank,
            });
        }
        parts
    })
}

/// A stream a committed translator can receive: answer parts only.
pub(crate) fn answer_stream() -> impl Strategy<Value = ChatStream> {
    answer_parts().prop_map(|parts| ChatStream {
        parts,
        crlf: false,
        cut_last_blank: false,
    })
}

/// Any stream a provider may send: answer parts with garbled and error frames anywhere,
/// `[DONE]` or not, `\n` or `\r\n`, with or without its last blank line (empty ones too).
pub(crate) fn provider_stream() -> impl Strategy<Value = ChatStream> {
    let noise = prop_oneof![
        Just(Part::Garbled),
        text().prop_map(Part::Error),
        Just(Part::NamedError),
    ];
    (
        answer_parts(),
        prop::collection::vec((any::<prop::sample::Index>(), noise), 0..2),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(mut parts, noise, done, crlf, cut_last_blank)| {
            for (at, part) in noise {
                let at = at.index(parts.len() + 1);
                parts.insert(at, part);
            }
            if done {
                parts.push(Part::Done);
            }
            ChatStream {
                parts,
                crlf,
                cut_last_blank,
            }
        })
}

/// Cut points for `bytes`: the reads a stream arrives in.
pub(crate) fn reads() -> impl Strategy<Value = Vec<prop::sample::Index>> {
    prop::collection::vec(any::<prop::sample::Index>(), 0..10)
}

/// `items` (a stream's bytes, or its chunks) cut at the drawn points, empty pieces left
/// out (a read of 0 bytes is the end of a stream).
pub(crate) fn split<'a, T>(items: &'a [T], cuts: &[prop::sample::Index]) -> Vec<&'a [T]> {
    let mut at: Vec<usize> = cuts.iter().map(|c| c.index(items.len() + 1)).collect();
    at.push(0);
    at.push(items.len());
    at.sort_unstable();
    at.dedup();
    at.windows(2).map(|w| &items[w[0]..w[1]]).collect()
}

/// Text with pieces of reasoning tags and tool-call markup (Hermes, Kimi) among it, for
/// inputs that should never make a translator panic.
pub(crate) fn markup_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        2 => text(),
        1 => prop::sample::select(vec![
            "<think>", "</think>", "<thought>", "</thought>", "<tool_call>", "</tool_call>",
            "{\"name\": \"Bash\", \"arguments\": {\"command\": \"ls\"}}", "{\"name\":",
            "<|tool_calls_section_begin|>", "<|tool_call_begin|>", "functions.Bash:0",
            "<|tool_call_argument_begin|>", "<|tool_call_end|>", "<|tool_calls_section_end|>",
        ])
        .prop_map(str::to_string),
    ];
    prop::collection::vec(piece, 0..6).prop_map(|ps| ps.concat())
}

/// Chunks that may be anything: arbitrary JSON, and chat chunks whose text is markup.
pub(crate) fn any_chunks() -> impl Strategy<Value = Vec<Value>> {
    let chunk = prop_oneof![
        json_value(),
        (markup_text(), markup_text(), any::<bool>()).prop_map(|(content, reasoning, finish)| {
            let finish = if finish { json!("stop") } else { Value::Null };
            json!({"choices": [{"index": 0, "finish_reason": finish,
                "delta": {"content": content, "reasoning_content": reasoning}}]})
        }),
    ];
    prop::collection::vec(chunk, 0..10)
}

/// The request tools a translator may be given: none, or a shell tool that needs `command`.
pub(crate) fn offered(
) -> impl Strategy<Value = Option<std::sync::Arc<crate::answers::toolcall::Offered>>> {
    any::<bool>().prop_map(|some| {
        some.then(|| {
            let request = json!({"tools": [{"type": "function", "function": {"name": "Bash",
                "parameters": {"type": "object", "properties": {"command": {"type": "string"}},
                "required": ["command"]}}}]});
            std::sync::Arc::new(crate::answers::toolcall::Offered::of(&request).unwrap_or_default())
        })
    })
}

/// The events of a translated stream as (event name, data), checking that every event has
/// a name and JSON data.
pub(crate) fn client_events(bytes: &[u8]) -> Result<Vec<(String, Value)>, TestCaseError> {
    let mut events = Vec::new();
    let mut parser = crate::answers::sse::SseParser::new();
    parser.feed(bytes, &mut events);
    prop_assert!(!parser.has_partial(), "the stream ends on a whole event");
    events
        .into_iter()
        .map(|e| {
            let data: Value = serde_json::from_str(&e.data)
                .map_err(|err| TestCaseError::fail(format!("{err}: {}", e.data)))?;
            let name = e
                .event
                .ok_or_else(|| TestCaseError::fail("an event without a name"))?;
            prop_assert_eq!(data["type"].as_str(), Some(name.as_str()));
            Ok((name, data))
        })
        .collect()
}

/// Bytes made mostly of what SSE and chat chunks are made of, for inputs that are almost
/// a stream.
pub(crate) fn sse_bytes() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        3 => prop::sample::select(vec![
            &b"data: "[..], b"data:", b"event: error", b": ping", b"\n", b"\r\n", b"\r", b"\n\n",
            b"[DONE]", b"{\"choices\":[{\"delta\":{\"content\":\"a\"}}]}",
            b"{\"choices\":[]}", b"{\"error\":{\"message\":\"x\"}}", b"<html>", b" ", b"{", b"\"",
        ])
        .prop_map(<[u8]>::to_vec),
        1 => prop::collection::vec(any::<u8>(), 0..8),
    ];
    prop::collection::vec(piece, 0..40).prop_map(|ps| ps.concat())
}

/// Any JSON value, with the keys chat answers use so that some draws look like one.
pub(crate) fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| json!(f)),
        text().prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        let key = prop::sample::select(vec![
            "choices",
            "message",
            "delta",
            "content",
            "error",
            "message",
            "tool_calls",
            "function",
            "name",
            "arguments",
            "index",
            "id",
            "reasoning_content",
            "reasoning",
            "reasoning_details",
            "text",
            "type",
            "thinking",
            "object",
            "usage",
            "completion_tokens",
            "prompt_tokens",
            "finish_reason",
            "role",
            "function_call",
        ]);
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::vec((key, inner), 0..5).prop_map(|kv| {
                Value::Object(kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
            }),
        ]
    })
}

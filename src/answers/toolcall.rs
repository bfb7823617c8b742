//! Tool calls: assembled from stream deltas, and checked against the tools the request
//! offered, so an agent only ever receives a call it can run.
//!
//! A call passes when it names an offered tool and its arguments are a JSON object holding
//! the tool's `required` properties. Providers' trivial slips are repaired instead of failed:
//! empty arguments for a tool that requires nothing are `{}`. Pure: values in, verdicts out.

use std::collections::HashMap;

use crate::answers::path::Lookup;
use serde_json::Value;

/// The pieces of one chat tool call, whole or a stream delta, as a provider sent them:
/// every place that reads a call's index, id, name or arguments reads them here. An empty id
/// or name is none.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Piece<'a> {
    pub index: Option<u64>,
    pub id: Option<&'a str>,
    pub name: Option<&'a str>,
    pub arguments: Option<&'a str>,
}

impl<'a> Piece<'a> {
    pub(crate) fn of(call: &'a Value) -> Piece<'a> {
        let text = |v: Option<&'a Value>| v.and_then(Value::as_str);
        let function = call.get("function");
        Piece {
            index: call.get("index").and_then(Value::as_u64),
            id: text(call.get("id")).filter(|s| !s.is_empty()),
            name: text(function.and_then(|f| f.get("name"))).filter(|s| !s.is_empty()),
            arguments: text(function.and_then(|f| f.get("arguments"))),
        }
    }

    /// The name, `""` when none was sent.
    pub(crate) fn name(&self) -> &'a str {
        self.name.unwrap_or("")
    }

    /// The arguments, `""` when none were sent.
    pub(crate) fn arguments(&self) -> &'a str {
        self.arguments.unwrap_or("")
    }
}

/// One tool call assembled from stream deltas.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ToolCall {
    pub name: String,
    pub arguments: String,
    /// The provider's id for it (empty when it sent none): what it said about the call is
    /// kept under the id the client is given instead (see `routing::carry`).
    pub id: String,
}

/// Tool calls assembled from chat stream deltas, in the order they started. A delta joins
/// the latest call with its `index` unless it carries a different, non-empty id: providers
/// repeat the id on every chunk, interleave parallel calls, or send none at all.
#[derive(Debug, Default)]
pub struct ToolCalls {
    calls: Vec<(u64, Option<String>, ToolCall)>,
}

impl ToolCalls {
    pub fn add(&mut self, delta: &Value) {
        let piece = Piece::of(delta);
        let index = piece.index.unwrap_or(0);
        let id = piece.id.map(str::to_string);
        let (name, args) = (piece.name(), piece.arguments());
        let existing = self.calls.iter_mut().rev().find(|(i, _, _)| *i == index);
        let call = match existing {
            Some((_, known, call)) if id.is_none() || known.is_none() || *known == id => {
                if known.is_none() {
                    *known = id;
                }
                call
            }
            _ => {
                self.calls.push((index, id, ToolCall::default()));
                &mut self.calls.last_mut().expect("just pushed").2
            }
        };
        if call.name.is_empty() {
            call.name = name.to_string();
        }
        call.arguments.push_str(args);
    }

    /// The finished calls, in order.
    pub fn take(&mut self) -> Vec<ToolCall> {
        std::mem::take(&mut self.calls)
            .into_iter()
            .map(|(_, id, c)| ToolCall {
                id: id.unwrap_or_default(),
                ..c
            })
            .collect()
    }
}

/// The tools a request offers: each name with its schema's required properties.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Offered {
    tools: HashMap<String, Vec<String>>,
}

impl Offered {
    /// No tool at all, shared: what a request that offers none is checked against (every
    /// call in its answer names a tool the client does not have).
    pub(crate) fn none() -> std::sync::Arc<Offered> {
        static NONE: std::sync::OnceLock<std::sync::Arc<Offered>> = std::sync::OnceLock::new();
        NONE.get_or_init(Default::default).clone()
    }

    /// The function tools of a chat request (`tools[].function`); `None` when it offers none.
    pub(crate) fn of(chat_request: &Value) -> Option<Offered> {
        let tools: HashMap<String, Vec<String>> = chat_request
            .get("tools")?
            .as_array()?
            .iter()
            .filter_map(|t| {
                let f = t.get("function")?;
                let name = f.get("name")?.as_str()?.to_string();
                let required = f
                    .at("/parameters/required")
                    .and_then(Value::as_array)
                    .map(|r| {
                        r.iter()
                            .filter_map(Value::as_str)
                            .map(str::to_string)
                            .collect()
                    })
                    .unwrap_or_default();
                Some((name, required))
            })
            .collect();
        (!tools.is_empty()).then_some(Offered { tools })
    }

    /// Checks one finished call. `Ok` holds the arguments to send (repaired where a slip
    /// was trivial); `Err` says why the call cannot run.
    pub(crate) fn check(&self, name: &str, arguments: &str) -> Result<String, String> {
        let Some(required) = self.tools.get(name) else {
            return Err(if name.is_empty() {
                "a tool call without a tool name".to_string()
            } else {
                format!("a call of {name:?}, a tool the request did not offer")
            });
        };
        if arguments.trim().is_empty() {
            return match required.first() {
                None => Ok("{}".to_string()),
                Some(missing) => Err(format!(
                    "a call of {name} without arguments (it requires {missing:?})"
                )),
            };
        }
        let args = match serde_json::from_str::<Value>(arguments) {
            Ok(Value::Object(args)) => args,
            Ok(_) => {
                return Err(format!(
                    "a call of {name} whose arguments are not a JSON object"
                ))
            }
            Err(_) => {
                return Err(format!(
                    "a call of {name} whose arguments are not valid JSON (cut off?)"
                ))
            }
        };
        match required.iter().find(|r| !args.contains_key(r.as_str())) {
            Some(missing) => Err(format!(
                "a call of {name} without its required argument {missing:?}"
            )),
            None => Ok(arguments.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_piece_reads_what_was_sent_and_nothing_for_empty_names() {
        let whole =
            json!({"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}});
        assert_eq!(
            Piece::of(&whole),
            Piece {
                index: None,
                id: Some("c1"),
                name: Some("ls"),
                arguments: Some("{}")
            }
        );
        let delta = json!({"index": 2, "id": "", "function": {"name": "", "arguments": "{\"a"}});
        let p = Piece::of(&delta);
        assert_eq!(
            (p.index, p.id, p.name, p.name(), p.arguments()),
            (Some(2), None, None, "", "{\"a")
        );
        assert_eq!(Piece::of(&json!("not a call")), Piece::default());
    }

    fn delta(index: u64, id: Option<&str>, name: Option<&str>, args: &str) -> Value {
        let mut f = json!({"arguments": args});
        if let Some(n) = name {
            f["name"] = json!(n);
        }
        let mut d = json!({"index": index, "function": f});
        if let Some(i) = id {
            d["id"] = json!(i);
        }
        d
    }

    #[test]
    fn repeated_ids_and_interleaving_assemble_whole_calls() {
        let mut calls = ToolCalls::default();
        // The same id on every chunk, two parallel calls interleaved.
        calls.add(&delta(0, Some("c1"), Some("Bash"), "{\"command\":"));
        calls.add(&delta(1, Some("c2"), Some("Read"), "{\"path\":"));
        calls.add(&delta(0, Some("c1"), None, "\"ls\"}"));
        calls.add(&delta(1, Some(""), None, "\"a\"}"));
        let got = calls.take();
        assert_eq!(
            got,
            vec![
                ToolCall {
                    name: "Bash".into(),
                    arguments: "{\"command\":\"ls\"}".into(),
                    id: "c1".into(),
                },
                ToolCall {
                    name: "Read".into(),
                    arguments: "{\"path\":\"a\"}".into(),
                    id: "c2".into(),
                },
            ]
        );
        // A new id at a used index is a new call.
        calls.add(&delta(0, Some("x"), Some("A"), "{}"));
        calls.add(&delta(0, Some("y"), Some("B"), "{}"));
        assert_eq!(calls.take().len(), 2);
    }

    #[test]
    fn calls_are_checked_against_the_offered_tools() {
        let request = json!({"tools": [
            {"type": "function", "function": {"name": "Bash", "parameters": {"type": "object",
                "properties": {"command": {"type": "string"}}, "required": ["command"]}}},
            {"type": "function", "function": {"name": "Now", "parameters": {"type": "object", "properties": {}}}}]});
        let offered = Offered::of(&request).unwrap();
        let cases: [(&str, &str, Result<&str, &str>); 8] = [
            ("Bash", r#"{"command":"ls"}"#, Ok(r#"{"command":"ls"}"#)),
            ("Bash", r#"{"command":"ls""#, Err("not valid JSON")),
            (
                "Bash",
                r#"{"cmd":"ls"}"#,
                Err("required argument \"command\""),
            ),
            ("Bash", "", Err("without arguments")),
            ("Bash", "[1]", Err("not a JSON object")),
            ("Now", "", Ok("{}")),
            ("Nope", "{}", Err("did not offer")),
            ("", "{}", Err("without a tool name")),
        ];
        for (name, args, want) in cases {
            match (offered.check(name, args), want) {
                (Ok(got), Ok(w)) => assert_eq!(got, w, "{name} {args}"),
                (Err(why), Err(w)) => assert!(why.contains(w), "{name} {args}: {why}"),
                (got, w) => panic!("{name} {args}: got {got:?}, want {w:?}"),
            }
        }
        assert_eq!(Offered::of(&json!({"tools": []})), None);
        assert_eq!(Offered::of(&json!({"messages": []})), None);
    }
}

//! A complete chat answer read without building its JSON tree: the fields the gate judges
//! and the client's chat repairs look at, borrowed from the body.
//!
//! Building a `serde_json::Value` of an answer (a map per object, a string per key and
//! value, every key hashed) and dropping it again was the largest cost left on the proxy's
//! request path that was fcm's own (about a fifth of a non-stream request's instructions).
//! The skim models only the plain shape nearly every answer has: text or reasoning in
//! strings, usage counts, no error, no tool calls. Anything else (a tool call, an error, a
//! content array, a field of an unexpected type, a duplicated key) makes [`Skim::of`] say
//! `None`, and the caller reads the tree as before; the property test below holds the two
//! readings to the same verdicts.

use std::borrow::Cow;
use std::marker::PhantomData;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;

/// What a plain chat answer says.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Skim<'a> {
    /// Present and not null: an error payload (not modeled).
    #[serde(default)]
    error: Option<IgnoredAny>,
    #[serde(default, borrow, deserialize_with = "text")]
    object: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    choices: Option<Vec<Object<Choice<'a>>>>,
    #[serde(default)]
    usage: Option<Object<Usage>>,
}

#[derive(Debug, Default, Deserialize)]
struct Choice<'a> {
    /// `None`: no `message` key; `Some(None)`: `"message": null`.
    #[serde(default, borrow, deserialize_with = "present")]
    message: Option<Option<Object<Message<'a>>>>,
    #[serde(default, borrow, deserialize_with = "text")]
    finish_reason: Option<Cow<'a, str>>,
}

#[derive(Debug, Default, Deserialize)]
struct Message<'a> {
    #[serde(default, borrow, deserialize_with = "text")]
    content: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "text")]
    reasoning_content: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "text")]
    reasoning: Option<Cow<'a, str>>,
    /// Present and not null: not modeled.
    #[serde(default)]
    reasoning_details: Option<IgnoredAny>,
    #[serde(default)]
    tool_calls: Option<Vec<IgnoredAny>>,
    /// Present and not null: not modeled.
    #[serde(default)]
    function_call: Option<IgnoredAny>,
}

#[derive(Debug, Default, Deserialize)]
struct Usage {
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<Object<PromptDetails>>,
    /// DeepSeek's name for the cached part of the prompt.
    #[serde(default)]
    prompt_cache_hit_tokens: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

/// A struct read from a JSON object only: serde would also fill a struct from an array,
/// field by field, where the tree reading sees no such fields.
#[derive(Debug, Default)]
struct Object<T>(T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Only<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for Only<T> {
            type Value = Object<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Object<T>, A::Error> {
                T::deserialize(de::value::MapAccessDeserializer::new(map)).map(Object)
            }
        }
        d.deserialize_map(Only(PhantomData))
    }
}

/// A string borrowed from the body when it has no escapes. serde's own `Option<Cow<str>>`
/// always copies (its borrowing applies to a bare `Cow` only): five strings an answer.
struct Text<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Either;
        impl<'de> Visitor<'de> for Either {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Borrowed(s)))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(s.to_string())))
            }
            fn visit_string<E: de::Error>(self, s: String) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(s)))
            }
        }
        d.deserialize_str(Either)
    }
}

/// An optional string, borrowed where it can be (see [`Text`]).
fn text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Cow<'de, str>>, D::Error> {
    Option::<Text<'de>>::deserialize(d).map(|t| t.map(|t| t.0))
}

/// A field that is there, even as `null`: `Some(value)`.
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// Characters of `s` when any of them is visible, else 0 (`reasoning::useful_lengths`).
fn useful(s: &str) -> usize {
    if s.trim().is_empty() {
        0
    } else {
        s.chars().count()
    }
}

impl<'a> Skim<'a> {
    /// The answer's plain shape, or `None` when it has anything the skim does not model.
    pub(crate) fn of(body: &'a [u8]) -> Option<Skim<'a>> {
        let skim: Skim<'a> = serde_json::from_slice(body).ok()?;
        let plain = skim.error.is_none()
            && skim.object.as_deref() != Some("error")
            && skim.messages().all(|m| {
                m.reasoning_details.is_none()
                    && m.function_call.is_none()
                    && m.tool_calls.as_ref().is_none_or(Vec::is_empty)
            });
        plain.then_some(skim)
    }

    fn messages(&self) -> impl Iterator<Item = &Message<'a>> {
        self.choices
            .iter()
            .flatten()
            .filter_map(|c| c.0.message.as_ref()?.as_ref().map(|m| &m.0))
    }

    fn first(&self) -> Option<&Choice<'a>> {
        self.choices.as_ref()?.first().map(|c| &c.0)
    }

    /// Whether there is a first choice (else the answer is `empty_choices`).
    /// The first choice's text, when it has some.
    pub(crate) fn content(&self) -> Option<&str> {
        self.first()?
            .message
            .as_ref()?
            .as_ref()?
            .0
            .content
            .as_deref()
    }

    pub(crate) fn has_choices(&self) -> bool {
        self.first().is_some()
    }

    pub(crate) fn completion_tokens(&self) -> Option<u64> {
        self.usage.as_ref()?.0.completion_tokens
    }

    pub(crate) fn prompt_tokens(&self) -> Option<u64> {
        self.usage.as_ref()?.0.prompt_tokens
    }

    /// As `gate::cached_tokens` reads them.
    pub(crate) fn cached_tokens(&self) -> Option<u64> {
        let u = &self.usage.as_ref()?.0;
        u.prompt_tokens_details
            .as_ref()
            .and_then(|d| d.0.cached_tokens)
            .or(u.prompt_cache_hit_tokens)
    }

    /// A usage in DeepSeek's words only (`prompt_cache_hit_tokens`): a chat client gets
    /// it said the OpenAI way too, so the body is rewritten.
    pub(crate) fn cached_deepseek_way(&self) -> bool {
        self.usage.as_ref().is_some_and(|u| {
            u.0.prompt_cache_hit_tokens.is_some()
                && u.0
                    .prompt_tokens_details
                    .as_ref()
                    .is_none_or(|d| d.0.cached_tokens.is_none())
        })
    }

    /// Characters of useful content in the first choice's message, as `gate::useful_chars`
    /// counts them (text, and the first reasoning field that is a non-empty string); `None`
    /// when there is none.
    pub(crate) fn useful_chars(&self) -> Option<usize> {
        let message = &self.first()?.message.as_ref()?.as_ref()?.0;
        let text = message.content.as_deref().map_or(0, useful);
        let reasoning = [&message.reasoning_content, &message.reasoning]
            .into_iter()
            .find_map(|r| r.as_deref().filter(|s| !s.is_empty()))
            .map_or(0, useful);
        let total = text + reasoning;
        (total > 0).then_some(total)
    }

    /// Whether `protocol::chat::normalize` would leave this answer as it is: no content
    /// array to flatten, no markup that think tags or text calls could take apart (both
    /// start with `<`), no calls to check, and a finish reason that needs no fix.
    pub(crate) fn needs_no_repair(&self, split_think_tags: bool, tools: bool) -> bool {
        let Some(first) = self.first() else {
            return true;
        };
        let Some(message) = &first.message else {
            return true;
        };
        let markup = |m: &Object<Message<'a>>| {
            m.0.content
                .as_deref()
                .is_some_and(|c| memchr::memchr(b'<', c.as_bytes()).is_some())
        };
        let could_split = (split_think_tags || tools) && message.as_ref().is_some_and(markup);
        !could_split
            && first.finish_reason.as_deref() != Some("tool_calls")
            && !self.cached_deepseek_way()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::answers::gate::ContentValidation;
    use proptest::prelude::*;
    use serde_json::{json, Value};

    #[test]
    fn plain_answers_are_skimmed_and_the_rest_left_to_the_tree() {
        let plain = br#"{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"PERF-OK"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2}}"#;
        let s = Skim::of(plain).unwrap();
        assert_eq!(
            (s.useful_chars(), s.completion_tokens(), s.prompt_tokens()),
            (Some(7), Some(2), Some(5))
        );
        assert!(s.needs_no_repair(true, true));
        for not_plain in [
            r#"{"error":{"message":"x"}}"#,
            r#"{"object":"error","message":"x"}"#,
            r#"{"choices":[{"message":{"content":null,"tool_calls":[{"id":"c"}]}}]}"#,
            r#"{"choices":[{"message":{"content":[{"type":"text","text":"hi"}]}}]}"#,
            r#"{"choices":[{"message":{"function_call":{"name":"f"}}}]}"#,
            r#"{"choices":[{"message":{"reasoning_details":[{"text":"r"}]}}]}"#,
            r#"{"choices":[["not", "an object"]]}"#,
            r#"{"choices":[{"message":{"content":"a","content":"b"}}]}"#,
            r#"{"usage":{"completion_tokens":2.5},"choices":[]}"#,
            r#"not json"#,
        ] {
            assert!(Skim::of(not_plain.as_bytes()).is_none(), "{not_plain}");
        }
        let think = br#"{"choices":[{"message":{"content":"<think>x</think>y"}}]}"#;
        let s = Skim::of(think).unwrap();
        assert!(!s.needs_no_repair(true, false) && s.needs_no_repair(false, false));
        let finish = br#"{"choices":[{"message":null,"finish_reason":"tool_calls"}]}"#;
        assert!(!Skim::of(finish).unwrap().needs_no_repair(false, false));
        let no_message = br#"{"choices":[{"finish_reason":"tool_calls"}]}"#;
        assert!(Skim::of(no_message).unwrap().needs_no_repair(false, false));
    }

    /// A field of a chat answer: absent, or one of a few values of various types.
    fn field(values: Vec<Value>) -> impl Strategy<Value = Option<Value>> {
        prop_oneof![Just(None), prop::sample::select(values).prop_map(Some)]
    }

    fn object(fields: Vec<(&'static str, Option<Value>)>) -> Value {
        Value::Object(
            fields
                .into_iter()
                .filter_map(|(k, v)| Some((k.to_string(), v?)))
                .collect(),
        )
    }

    /// Chat answers of many shapes, plain or not.
    fn answers() -> impl Strategy<Value = Value> {
        let text = || {
            vec![
                json!(null),
                json!(""),
                json!("  \n"),
                json!("PERF-OK"),
                json!("é ✓"),
                json!("<think>plan</think>done"),
                json!(" <tool_call>{\"name\":\"f\",\"arguments\":{}}</tool_call>"),
                json!(7),
                json!([{"type": "text", "text": "hi"}]),
            ]
        };
        let message = (
            field(text()),
            field(text()),
            field(text()),
            field(vec![json!(null), json!([]), json!([{"text": "r"}])]),
            field(vec![
                json!(null),
                json!([]),
                json!([{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]),
            ]),
            field(vec![json!(null), json!("f"), json!({"name": "f", "arguments": ""})]),
        )
            .prop_map(|(c, rc, r, rd, tc, fc)| {
                object(vec![
                    ("role", Some(json!("assistant"))),
                    ("content", c),
                    ("reasoning_content", rc),
                    ("reasoning", r),
                    ("reasoning_details", rd),
                    ("tool_calls", tc),
                    ("function_call", fc),
                ])
            });
        let choice = (
            prop_oneof![
                Just(None),
                Just(Some(json!(null))),
                Just(Some(json!("text"))),
                message.prop_map(Some)
            ],
            field(vec![
                json!(null),
                json!("stop"),
                json!("tool_calls"),
                json!(1),
            ]),
        )
            .prop_map(|(m, f)| {
                object(vec![
                    ("index", Some(json!(0))),
                    ("message", m),
                    ("finish_reason", f),
                ])
            });
        let choices = prop_oneof![
            Just(None),
            Just(Some(json!(null))),
            Just(Some(json!({}))),
            prop::collection::vec(choice, 0..3).prop_map(|c| Some(Value::Array(c))),
        ];
        let count = || vec![json!(null), json!(3), json!(2.5), json!(-1), json!("4")];
        let usage = prop_oneof![
            Just(None),
            Just(Some(json!(null))),
            Just(Some(json!([1]))),
            (field(count()), field(count())).prop_map(|(c, p)| Some(object(vec![
                ("completion_tokens", c),
                ("prompt_tokens", p)
            ]))),
        ];
        (
            choices,
            usage,
            field(vec![json!(null), json!({"message": "down"})]),
            field(vec![json!("chat.completion"), json!("error"), json!(1)]),
        )
            .prop_map(|(choices, usage, error, object_kind)| {
                object(vec![
                    ("id", Some(json!("x"))),
                    ("object", object_kind),
                    ("choices", choices),
                    ("usage", usage),
                    ("error", error),
                ])
            })
    }

    proptest! {
        /// Whenever the skim reads an answer, the gate's verdict and figures, and whether
        /// the chat repairs change it, are what the tree reading gives.
        #[test]
        fn the_skim_agrees_with_the_tree(answer in answers()) {
            let body = serde_json::to_vec(&answer).unwrap();
            let Some(skim) = Skim::of(&body) else { return Ok(()) };
            for mode in [ContentValidation::Strict, ContentValidation::Basic] {
                let fast = crate::answers::gate::check_payload(&body, mode, None)
                    .map(|(stats, _)| stats);
                let tree = super::super::check_tree(&body, mode, None)
                    .map(|(stats, _)| stats);
                prop_assert_eq!(fast, tree, "{}", answer);
            }
            for (think, tools) in [(false, false), (true, false), (false, true), (true, true)] {
                let mut repaired = answer.clone();
                let offered = crate::answers::toolcall::Offered::of(&json!({"tools": [
                    {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
                ]}));
                let changed = crate::protocol::chat::normalize(
                    &mut repaired,
                    think,
                    offered.as_ref().filter(|_| tools),
                );
                if skim.needs_no_repair(think, tools) {
                    prop_assert!(!changed, "{} ({}, {})", answer, think, tools);
                }
            }
        }
    }
}

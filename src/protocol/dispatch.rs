//! The protocol a client speaks, chosen by the endpoint, and the one table of what each
//! protocol does: its request as a chat request, its error envelope, its whole answer, its
//! stream's shape.

use std::sync::Arc;

use serde_json::{json, Value};

use crate::answers::toolcall::Offered;

use super::errors::{BadRequest, ErrorReport};
use super::freeform::ClientTools;
use super::shape::StreamShape;
use super::wire::CallIds;
use super::{anthropic, anthropic_stream, chat, responses, responses_stream};

/// The protocol a client speaks; chosen by the endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Protocol {
    /// OpenAI chat completions (also accepts a Responses-style `input`, as Cursor sends).
    Chat,
    /// Anthropic Messages (Claude Code).
    Anthropic,
    /// OpenAI Responses (Codex).
    Responses,
}

impl Protocol {
    /// The client's request (already parsed) as a chat request. A chat request is used as
    /// it is: moved, never copied.
    pub(crate) fn to_chat(self, body: Value) -> Result<Value, BadRequest> {
        match self {
            Protocol::Chat if body.get("messages").is_some_and(Value::is_array) => Ok(body),
            Protocol::Chat if body.get("input").is_some() => responses::to_chat(body),
            Protocol::Chat => Err(BadRequest::Shape(
                "request body must be a JSON object with a \"messages\" array",
            )),
            Protocol::Anthropic => anthropic::to_chat(body),
            Protocol::Responses => responses::to_chat(body),
        }
    }

    /// An error body in this protocol's envelope (OpenAI's for chat and Responses): the one
    /// table from protocol to envelope. Both envelopes carry the failed attempts, when there
    /// were any, as `error.attempts`.
    pub(crate) fn error(self, report: &ErrorReport<'_>) -> Value {
        let mut body = match self {
            Protocol::Anthropic => anthropic::error(report.status, report.message),
            Protocol::Chat | Protocol::Responses => openai_error(report),
        };
        if let Some(attempts) = &report.attempts {
            body["error"]["attempts"] = attempts.clone();
        }
        body
    }

    /// A complete chat answer in this protocol's shape.
    /// `parsed`: the body as the gate parsed it, when it did (it is not parsed again). A
    /// plain answer the gate only skimmed goes to a chat client as the provider's bytes
    /// when no repair applies, without being parsed at all.
    pub(crate) fn answer(
        self,
        chat_body: Vec<u8>,
        parsed: Option<Value>,
        model: &str,
        split_think_tags: bool,
        tools: RequestTools<'_>,
        ids: &mut CallIds,
    ) -> Vec<u8> {
        let RequestTools {
            offered: tools,
            client,
        } = tools;
        if self == Protocol::Chat
            && parsed.is_none()
            && crate::answers::gate::skim::Skim::of(&chat_body)
                .is_some_and(|s| s.needs_no_repair(split_think_tags, tools.is_some()))
        {
            return chat_body;
        }
        let parsed =
            parsed.unwrap_or_else(|| serde_json::from_slice(&chat_body).unwrap_or(Value::Null));
        if self == Protocol::Chat {
            return chat::answer(chat_body, parsed, split_think_tags, tools);
        }
        let mut chat = parsed;
        // Reasoning always goes apart for these clients; tool-call markup becomes calls.
        chat::normalize(&mut chat, true, tools);
        let answer = match self {
            Protocol::Anthropic => anthropic::from_chat_ids(&chat, model, ids),
            _ => responses::from_chat_ids(&chat, model, ids, client),
        };
        answer.to_string().into_bytes()
    }

    /// How a Responses client runs the calls of its tools (custom tools, a bridged
    /// `apply_patch`); nothing to know for the other protocols.
    pub(crate) fn client_tools(self, request: &Value) -> ClientTools {
        match self {
            Protocol::Responses => ClientTools::of(request),
            _ => ClientTools::default(),
        }
    }

    /// What turns a chat stream into this protocol's stream.
    /// `tools`: the request's tools, which every call the client gets must pass.
    /// `client`: how a Responses client runs each call.
    pub(crate) fn stream_shape(
        self,
        model: &str,
        split_think_tags: bool,
        tools: Option<Arc<Offered>>,
        client: Arc<ClientTools>,
    ) -> StreamShape {
        match self {
            Protocol::Chat => {
                StreamShape::Chat(Box::new(chat::ChatStream::new(split_think_tags, tools)))
            }
            Protocol::Anthropic => {
                StreamShape::Events(Box::new(anthropic_stream::Translator::new(model, tools)))
            }
            Protocol::Responses => StreamShape::Events(Box::new(
                responses_stream::Translator::new(model, tools, client),
            )),
        }
    }
}

/// The request's tools, as an answer needs them: what a call must pass (in strict mode), and
/// how the client runs each call.
#[derive(Clone, Copy)]
pub(crate) struct RequestTools<'a> {
    pub offered: Option<&'a Offered>,
    pub client: &'a ClientTools,
}

/// OpenAI's error envelope (chat completions and Responses clients read `error.message`).
fn openai_error(r: &ErrorReport<'_>) -> Value {
    let kind = r.kind.unwrap_or(match r.status {
        401 => "authentication_error",
        404 => "not_found_error",
        429 => "rate_limit_error",
        400..=499 => "invalid_request_error",
        _ => "server_error",
    });
    json!({"error": {"message": r.message, "type": kind, "code": r.code}})
}

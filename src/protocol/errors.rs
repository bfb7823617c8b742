//! What goes wrong, in words a client's user can act on: a request that cannot be routed
//! ([`BadRequest`]), and what an error answer says whatever its protocol ([`ErrorReport`]).

use serde_json::Value;

/// Why a client's request cannot be routed, in words the client's user can act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum BadRequest {
    /// The body is not JSON at all.
    NotJson(String),
    /// JSON, but not the protocol's request shape.
    Shape(&'static str),
}

impl std::fmt::Display for BadRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BadRequest::NotJson(e) => write!(f, "request body is not valid JSON: {e}"),
            BadRequest::Shape(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for BadRequest {}

/// What an error answer says, whatever the protocol: the one input of [`Protocol::error`].
#[derive(Debug, Default)]
pub(crate) struct ErrorReport<'a> {
    pub status: u16,
    pub message: &'a str,
    /// OpenAI's `error.type` when the status alone does not say it (`overloaded`).
    pub kind: Option<&'a str>,
    /// OpenAI's `error.code`: the routing outcome (`all_failed`).
    pub code: Option<&'a str>,
    /// Each failed attempt, for clients that can show them.
    pub attempts: Option<Value>,
}

impl<'a> ErrorReport<'a> {
    pub(crate) fn new(status: u16, message: &'a str) -> ErrorReport<'a> {
        ErrorReport {
            status,
            message,
            ..ErrorReport::default()
        }
    }
}

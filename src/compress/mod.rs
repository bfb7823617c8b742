//! Tool-result compression: the terminal noise of a coding agent's tool outputs taken out
//! before a request goes upstream, since the agent resends its whole history on every turn
//! and free tiers count tokens as much as requests.
//!
//! Only tool results are touched (chat `role: "tool"` messages, which is what Anthropic
//! `tool_result` blocks and Responses `function_call_output` items become); never the
//! system prompt, the user's words or the model's own turns. Three [`Mode`]s:
//! - `lossless` (the default): ANSI escapes and carriage-return redraws go (a redrawn line
//!   keeps its last state), and a long run of one line is said once with its count; every
//!   line a person would see on the terminal stays ([`terminal`]);
//! - `aggressive`: on top, long outputs are cut by kind, each cut saying what it left out
//!   and how many lines ([`cut`]);
//! - `off`: nothing changes.
//!
//! A file's contents are never changed: [`source`] tells them apart by the tool and the
//! command that produced the result. Everything here is a pure function of one tool result
//! and its call, so the same history gives the same bytes on every turn (providers' prompt
//! caches keep hitting).
//!
//! The files: [`mode`] (the setting), [`body`] (a chat request's tool results, and what was
//! saved), [`result`] (one tool result: its envelope, its source, the passes), [`source`],
//! [`terminal`] (with `escape`, the sequences, and `screen`, the whole-screen model),
//! [`cut`] and [`lines`] (what a line of output is: a passing test, build progress, an
//! error), and [`memo`] (results compressed on an earlier turn, remembered).

pub mod body;
pub mod cut;
mod escape;
pub mod lines;
pub mod memo;
pub mod mode;
pub mod result;
mod screen;
pub mod source;
pub mod terminal;

pub use body::{chat_body, Compressed};
pub use memo::Memo;
pub use mode::Mode;
pub use result::{tool_result, Call};
pub use source::Source;

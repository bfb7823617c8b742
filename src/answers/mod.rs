//! Answers: one call to one model and the judgment of what comes back. A call sends a
//! chat request through a provider's exchange (`call`); the content gate (`gate`) decides
//! whether a 2xx answer carries content and runnable tool calls (`toolcall`), with
//! reasoning (`reasoning`) and tool calls written as text (`textcalls`) told apart; a
//! stream is held (`hold`) until it proves useful and then owned by `stream`; failures
//! get a kind and a verdict (`classify`, `failure`). `path` reads a field deep in an
//! answer.
//!
//! Nothing here knows which model should be tried, nor keeps anything between calls
//! (that is `routing` and `state`), nor speaks a client's protocol (that is `protocol`).

pub(crate) mod call;
pub(crate) mod classify;
pub(crate) mod exhaustion;
pub(crate) mod failure;
pub(crate) mod gate;
pub(crate) mod hold;
pub(crate) mod limits;
pub(crate) mod notice;
pub(crate) mod path;
pub(crate) mod readers;
pub(crate) mod reasoning;
pub mod sse;
pub(crate) mod stream;
pub(crate) mod textcalls;
pub(crate) mod toolcall;

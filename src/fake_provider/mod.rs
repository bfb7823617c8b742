//! A scripted OpenAI-compatible provider on loopback that misbehaves on purpose.
//!
//! One implementation serves `fcm demo`, the integration tests and the benchmark scripts.
//! Each request's `model` picks a behaviour: `ok`, `slow:300`, `empty_choices`, `hang`, ...
//! (see [`Behavior::parse`]); anything after `#` is a free tag, so a catalog can hold many
//! models with one behaviour. It records every request so tests can assert what fcm sent.
//!
//! The files, each using only those after it: `server` (the listener and its connections),
//! `respond` (which answer a request gets), the answer files `tools`, `thinking`,
//! `rate_limits`, `awkward_streams` and `continuations`, `state` (what the connections
//! share), `behavior` (the repertoire, by name) and `wire` (how any answer is written).

mod awkward_streams;
mod behavior;
mod continuations;
mod rate_limits;
mod respond;
mod server;
mod signatures;
mod state;
mod thinking;
mod tools;
mod wire;

pub use awkward_streams::huge_text;
pub use behavior::{Behavior, CacheStyle, Finishing, LimitStyle, Thinker};
pub use rate_limits::WINDOW as COUNTDOWN_WINDOW;
pub use respond::LATENCY_PATH;
pub use server::FakeProvider;
pub use state::RecordedRequest;
pub use tools::{noisy_verdict, NOISY_COMMAND, PATCH};

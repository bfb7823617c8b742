//! fcm: find, benchmark and route between free coding LLMs.
//!
//! The binary is `src/main.rs`. The library exposes only what the binary, the integration
//! tests and the benchmark tools use (the command line, the fake provider, the SSE parser,
//! the token estimate, one installer constant); everything else is crate-private.

pub(crate) mod access;
pub(crate) mod attempt;
pub(crate) mod bench;
pub(crate) mod breaker;
pub(crate) mod capability;
pub(crate) mod catalog;
pub(crate) mod classify;
pub mod cli;
pub(crate) mod cmd;
pub(crate) mod config;
pub(crate) mod connections;
pub(crate) mod daemon;
pub(crate) mod dashboard;
pub(crate) mod failure;
pub mod fake_provider;
pub(crate) mod fusion;
pub(crate) mod gate;
pub(crate) mod hold;
pub(crate) mod http;
pub mod install;
pub(crate) mod ledger;
pub(crate) mod overlay;
pub(crate) mod persist;
pub(crate) mod process;
pub(crate) mod protocol;
pub(crate) mod quota;
pub(crate) mod rank;
pub(crate) mod readers;
pub(crate) mod reasoning;
pub(crate) mod resolve;
pub mod router;
pub(crate) mod secrets;
pub(crate) mod serve;
pub(crate) mod service;
pub(crate) mod sets;
pub(crate) mod signals;
pub mod sse;
pub(crate) mod state;
pub(crate) mod stream;
pub(crate) mod table;
pub(crate) mod target;
pub(crate) mod textcalls;
pub(crate) mod time;
pub(crate) mod toolcall;
pub(crate) mod trace;
pub(crate) mod trim;
pub(crate) mod upstream;

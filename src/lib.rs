//! fcm: find, benchmark and route between free coding LLMs.
//!
//! The binary is `src/main.rs`; this library exposes the modules so that integration tests
//! and benchmark scripts use the same code (the fake provider above all).

pub mod attempt;
pub mod bench;
pub mod breaker;
pub mod capability;
pub mod catalog;
pub mod classify;
pub mod cli;
pub mod cmd;
pub mod config;
pub mod dashboard;
pub mod fake_provider;
pub mod gate;
pub mod hold;
pub mod http;
pub mod install;
pub mod persist;
pub mod protocol;
pub mod router;
pub mod serve;
pub mod sets;
pub mod signals;
pub mod sse;
pub mod state;
pub mod table;
pub mod time;
pub mod trace;
pub mod upstream;

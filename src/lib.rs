//! fcm: find, benchmark and route between free coding LLMs.
//!
//! The binary is `src/main.rs`. The folders are the layers, each above the ones it uses:
//! the commands (`cli`, `commands`, `install`), the HTTP edge (`edge`) with the client
//! protocols (`protocol`), the bench (`bench`), routing (`routing`), state (`state`),
//! answers (`answers`) with tool-result compression beside them (`compress`, pure text in
//! and out), and providers (`providers`); `fake_provider` is the scripted provider of tests
//! and demos. The library exposes only what the binary, the integration tests and the
//! benchmark tools use; everything else is crate-private.

pub mod answers;
pub(crate) mod bench;
pub(crate) mod capability;
pub mod cli;
pub(crate) mod commands;
pub mod compress;
pub(crate) mod edge;
pub mod fake_provider;
pub(crate) mod hex;
pub mod install;
pub(crate) mod process;
pub(crate) mod protocol;
pub(crate) mod providers;
pub mod routing;
pub(crate) mod secrets;
pub(crate) mod state;
pub(crate) mod table;
pub(crate) mod time;
pub mod tokens;

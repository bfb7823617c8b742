//! State: what fcm keeps between requests and between runs. The user's settings
//! (`config`), per-model breakers (`breaker`), the usage ledger (`ledger`), decision traces
//! and the history ring (`trace`) with its summary (`summary`), their files under
//! `$FCM_HOME` (`files`: paths, atomic writes, tolerant loads), a running server's debounced writes (`persist`) and its
//! `serve.json` record (`serve_info`); conversations and the model each keeps
//! (`affinity`), model sets (`sets`), the last bench (`bench_file`) and the counters behind
//! `/metrics` (`metrics`, with `histogram`); providers down right now (`outages`); the provider state later turns need
//! (`carry_file`).
//!
//! Nothing here decides which model to try (`routing`) or talks to a provider.

pub(crate) mod affinity;
pub(crate) mod bench_file;
pub(crate) mod breaker;
pub(crate) mod carry_file;
pub(crate) mod config;
pub(crate) mod files;
pub(crate) mod histogram;
pub(crate) mod ledger;
pub(crate) mod metrics;
pub(crate) mod outages;
pub(crate) mod persist;
pub(crate) mod serve_info;
pub(crate) mod sets;
pub(crate) mod summary;
pub(crate) mod trace;

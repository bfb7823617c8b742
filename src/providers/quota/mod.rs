//! Free-tier limits: what the catalog says a provider or model allows (`quota`), what a
//! provider says is left (`x-ratelimit-*` headers on every answer), and whether one more
//! request fits in either. Pure: numbers and header values in, verdicts out. The usage
//! ledger (`ledger`) keeps the counts and the latest figures, and asks this module.
//!
//! What it does not do: count anything, or decide which key or model to use.
//!
//! The files: `limits` (the catalog's), `window` (a provider's reported window) and
//! `headers` (reading those windows from an answer).

mod headers;
mod limits;
mod window;

pub use headers::{parse_duration, read_headers};
pub use limits::{probe_reserve, rules, Exhausted, Quota, Scope, Spent, MINUTE_MS};
pub use window::Period;
pub use window::{Unit, Window};

//! Circuit breakers: per-model health that keeps failing models out of rotation.
//!
//! States: CLOSED (healthy), DEGRADED (some consecutive failures: still routed, ranked after
//! healthy ones), OPEN (too many: skipped until the cooldown ends), HALF_OPEN (cooldown over:
//! exactly one trial request at a time). OPEN → HALF_OPEN is computed from the clock when
//! asked, so no timer thread exists. Cooldowns escalate with each trip and trips are
//! forgotten after a quiet day. Pauses are kept beside the breaker: quota pauses (429s) and
//! an overloaded model's short back-off skip a model without counting the pause against its
//! health. [`Health`](health::Health) is the pure state machine; the [`Breakers`] store wraps the book in a
//! mutex and tracks whether it needs saving.
//!
//! Times are fcm's clock in ms (`time::now_ms`, which never runs backwards within a run). A
//! book loaded from disk may have been written under a clock that was ahead: its cooldowns
//! and pauses are cut to the longest fcm would set from now ([`BreakerBook::clamp`]), so a
//! clock set back never keeps a model out for longer than `maxCooldownMs`.
//!
//! The files: `health` (the state machine), `book` (`breakers.json`), `rows` (what
//! commands show of it) and `store` (the shared book of a running process).

mod book;
mod health;
mod rows;
mod store;

pub use book::BreakerBook;
pub use health::{Admission, BreakerState, Pause};
pub use rows::{rows, Answering, BreakerRow, Counts};
pub use store::Breakers;

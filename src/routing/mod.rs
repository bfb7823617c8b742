//! Routing: which model serves a request, in what order the others are tried, and what
//! each attempt's outcome does to them. It owns the router and its per-request state; it
//! reads and writes `state` (breakers, ledger, history), calls models through `answers`,
//! and never speaks a client's protocol (that is `edge` and `protocol`).
//!
//! The files below are the request's path through it:
//! - [`router`]: the [`Router`], built from its [`Parts`], and what a request's model name
//!   means ([`Route`]);
//! - [`candidates`]: who may serve (keys, skips before dispatch, set and capability order),
//!   ranked by [`rank`] with what [`live`] knows of each model ([`silence`]: how long each
//!   may take to start, and the silent ones);
//! - [`compression`]: the request's tool results compressed once, before any attempt;
//! - [`failover`]: the request's loop over its candidates within the budget;
//! - [`attempt`]: one attempt's steps (admit, reserve, send, settle) and the one place its
//!   outcome is recorded, after a stream's commit too;
//! - [`race`] and [`fusion`]: a set's first candidates side by side ([`racers`]: the
//!   racers' own clients, kept between races);
//! - [`trim`]: a conversation's middle dropped to fit the largest window left;
//! - [`refusal`]: the status and message when no model could serve;
//! - [`continuation`]: the request that asks another model to finish an answer whose
//!   stream broke off after content, and [`seam`]: how its text joins what the client has
//!   (a repeat left out, a start over refused);
//! - [`carry`]: provider state a later turn needs (thought signatures, reasoning
//!   details), kept per call id (and in `carry.json`) and put back on requests to the
//!   provider that made it, and [`placeholder`]: Google's stand-in for a thought signature
//!   that was lost all the same;
//! - [`status`]: each routable model as the router sees it now (rank, breaker, evidence,
//!   budget, conversations), for `fcm top` and `/metrics`, read off the request path;
//! - [`ping`] and [`probe`]: small real questions (the bench's, `fcm check`'s, and opt-in
//!   trials of models whose cooldown ended), recorded like any attempt.
//!
//! A pinned model (`fcm:provider/modelId`) gets one attempt, whatever its breaker says.

mod affinity;
mod attempt;
mod candidates;
pub(crate) mod carry;
mod compression;
pub(crate) mod continuation;
mod conversation;
mod failover;
mod fusion;
mod live;
pub(crate) mod ping;
mod placeholder;
mod probe;
mod race;
mod racers;
pub(crate) mod rank;
mod refusal;
mod router;
pub(crate) mod seam;
mod silence;
mod status;
pub(crate) mod trim;

pub(crate) use attempt::{Committed, Delivery, Recorder, Served};
pub(crate) use candidates::Candidate;
pub(crate) use conversation::SessionName;
pub(crate) use failover::Ask;
pub(crate) use live::LIVE_WINDOW;
pub(crate) use refusal::Refused;
pub(crate) use router::{NamedIn, Parts, Route, Router};
pub(crate) use status::{Evidence, EvidenceFrom, ModelStatus};

#[cfg(test)]
mod script;
#[cfg(test)]
mod tests;

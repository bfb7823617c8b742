//! `fcm serve`: the local proxy's HTTP edge. It owns the sockets and everything HTTP: the
//! listener and its connection slots, request framing and deadlines, admission, which path
//! goes where, and writing answers (a stream's head and first event in one write, so delayed
//! ACKs do not hold it back; then chunk by chunk as events arrive). One thread per
//! connection, bounded: past the limits a fast 503, never a hang.
//!
//! A connection cannot hold its slot by being slow: a request's head and body must arrive
//! within `serve.requestTimeoutMs` of its first byte (else 408), an idle keep-alive
//! connection closes after `serve.idleTimeoutMs`, and when every slot is taken the
//! connections without a request in progress are shed, oldest first, so a real request
//! still gets in. A request is admitted (`access`) as soon as its head is read, before a
//! byte of its body is; from then on every error it gets is in the envelope of its path.
//!
//! What the edge may reach into: `routing` (resolve a model name, route, record a finished
//! request), `protocol` (translate requests, shape answers and errors for the client) and
//! `state` (read for `/health`, the admin endpoints and the dashboard). It never decides
//! which model to try nor judges an answer: that is `routing`'s and `answers`' business.
//!
//! The files, in the order a request meets them: [`listener`] (accept, slots, shutdown),
//! `client` (one connection's request loop), `endpoints` (the table of paths), `completion`
//! (the completion flow) or `local` (what fcm answers itself; with `live`, the snapshot
//! `fcm top` polls, and `metrics`, the Prometheus text, written by `exposition`, with
//! `process_metrics` and gzipped by `encoding`), `reply` (writing the answer) and
//! `request_log` (its line on stderr); `forward` carries a committed stream to the client
//! (`joining`: a continuation's first events, until its seam is decided). The files of this
//! folder import each other in that direction only, and this file
//! only declares and re-exports them.

pub(crate) mod access;
mod app;
mod client;
mod completion;
pub(crate) mod connections;
pub(crate) mod dashboard;
mod encoding;
mod endpoints;
mod exposition;
mod forward;
pub(crate) mod http;
mod joining;
mod listener;
pub(crate) mod live;
mod local;
pub(crate) mod metrics;
mod process_metrics;
mod reply;
mod request_id;
mod request_log;
pub(crate) mod signals;

pub use app::App;
pub use listener::run;

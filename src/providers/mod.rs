//! Providers: what the catalog says of them (`catalog`, its drift in `overlay`, their
//! free-tier limits in `quota`), one model to call (`target`), and the HTTP exchange with
//! them (`upstream`, with cached name lookups in `resolve`).
//!
//! Nothing here judges an answer (`answers`) or keeps state between requests (`state`).

pub(crate) mod catalog;
pub(crate) mod exchange;
pub(crate) mod overlay;
pub(crate) mod quota;
pub(crate) mod resolve;
pub(crate) mod target;
pub(crate) mod upstream;

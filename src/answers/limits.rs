//! How long one attempt may take and how strictly its answer is judged: set per request by
//! the router, per ping by the bench.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::answers::gate::ContentValidation;
use crate::answers::toolcall::Offered;

/// Deadlines and strictness for one attempt.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Non-stream: the whole answer must arrive within this.
    pub body_read: Duration,
    /// Stream: the first useful content must arrive within this.
    pub first_token: Duration,
    /// Stream: after content, the longest silence between chunks.
    pub stream_stall: Duration,
    /// Hard end of the attempt (the caller's overall budget).
    pub deadline: Instant,
    pub validation: ContentValidation,
    /// Largest non-stream answer accepted.
    pub max_body: usize,
    /// Streams: keep the parsed chat chunks for a protocol translator.
    pub keep_chunks: bool,
    /// The request's tools: calls are checked against them (strict mode).
    pub tools: Option<Arc<Offered>>,
}

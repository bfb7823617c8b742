//! Server-sent events framing, fed raw bytes in whatever chunks the network delivers.
//!
//! Shared by the content gate (is there useful content yet?) and the protocol adapters. It
//! only frames events; what an event means is the caller's business. Lines are decoded only
//! once complete, so a chunk boundary inside a UTF-8 character or a `\r\n` pair is harmless.

/// One dispatched event: the `event:` name (if any) and the joined `data:` lines.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    pub event: Option<String>,
    pub data: String,
}

/// Incremental SSE parser. Comment lines (`: keep-alive`) and `id:`/`retry:` fields are ignored.
#[derive(Debug, Default)]
pub struct SseParser {
    line: Vec<u8>,
    /// The previous byte was `\r`: a following `\n` belongs to the same line end.
    after_cr: bool,
    event: Option<String>,
    data: Option<String>,
    /// Offset just past the last blank line (the end of an event or comment block) in the
    /// chunk most recently fed: where the stream can be cut between events.
    boundary: Option<usize>,
}

impl SseParser {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds bytes and appends every event they complete to `out`.
    pub fn feed(&mut self, bytes: &[u8], out: &mut Vec<SseEvent>) {
        self.feed_with_ends(bytes, out, &mut Vec::new());
    }

    /// Like [`feed`](Self::feed), and records in `ends` where in `bytes` each event ended
    /// (the offset just past the byte that completed it), so a caller can cut between events.
    pub fn feed_with_ends(&mut self, bytes: &[u8], out: &mut Vec<SseEvent>, ends: &mut Vec<usize>) {
        self.boundary = None;
        for (i, &b) in bytes.iter().enumerate() {
            match b {
                b'\n' if self.after_cr => self.after_cr = false,
                b'\n' | b'\r' => {
                    self.after_cr = b == b'\r';
                    let blank = self.line.is_empty();
                    let before = out.len();
                    self.end_line(out);
                    // A CRLF ends one byte later than its CR.
                    let end = if b == b'\r' && bytes.get(i + 1) == Some(&b'\n') {
                        i + 2
                    } else {
                        i + 1
                    };
                    if out.len() > before {
                        ends.push(end);
                    }
                    if blank {
                        self.boundary = Some(end);
                    }
                }
                _ => {
                    self.after_cr = false;
                    self.line.push(b);
                }
            }
        }
    }

    /// See the `boundary` field: `None` when the last chunk held no complete block.
    pub fn last_boundary(&self) -> Option<usize> {
        self.boundary
    }

    /// Whether a line or an event is still incomplete.
    pub fn has_partial(&self) -> bool {
        !self.line.is_empty() || self.data.is_some()
    }

    /// Dispatches a final event that the stream ended without a blank line after.
    pub fn finish(&mut self, out: &mut Vec<SseEvent>) {
        if !self.line.is_empty() {
            self.end_line(out);
        }
        self.dispatch(out);
    }

    fn end_line(&mut self, out: &mut Vec<SseEvent>) {
        if self.line.is_empty() {
            self.dispatch(out);
            return;
        }
        let line = String::from_utf8_lossy(&self.line).into_owned();
        self.line.clear();
        if line.starts_with(':') {
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line.as_str(), ""),
        };
        match field {
            "data" => match &mut self.data {
                Some(d) => {
                    d.push('\n');
                    d.push_str(value);
                }
                None => self.data = Some(value.to_string()),
            },
            "event" => self.event = Some(value.to_string()),
            _ => {}
        }
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        let event = self.event.take();
        if let Some(data) = self.data.take() {
            out.push(SseEvent { event, data });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_in_chunks(input: &[u8], chunk: usize) -> Vec<SseEvent> {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        for c in input.chunks(chunk) {
            p.feed(c, &mut out);
        }
        p.finish(&mut out);
        out
    }

    #[test]
    fn frames_survive_any_chunking() {
        let input = "data: {\"a\":\"é€\"}\r\n\r\n: keep-alive\n\nevent: error\ndata: x\ndata: y\n\ndata:[DONE]\n\n";
        let want = vec![
            SseEvent {
                event: None,
                data: "{\"a\":\"é€\"}".into(),
            },
            SseEvent {
                event: Some("error".into()),
                data: "x\ny".into(),
            },
            SseEvent {
                event: None,
                data: "[DONE]".into(),
            },
        ];
        for chunk in 1..=input.len() {
            assert_eq!(
                parse_in_chunks(input.as_bytes(), chunk),
                want,
                "chunk size {chunk}"
            );
        }
    }

    #[test]
    fn event_ends_are_offsets_into_the_chunk() {
        let mut p = SseParser::new();
        let (mut out, mut ends) = (Vec::new(), Vec::new());
        p.feed_with_ends(b"data: a\n\ndata: b\r\n\r\nda", &mut out, &mut ends);
        assert_eq!(ends, vec![9, 20]);
        assert_eq!(out.len(), 2);
        assert_eq!(p.last_boundary(), Some(20));
        assert!(p.has_partial());
        p.feed_with_ends(b"ta: c\n: ping\n\n", &mut out, &mut ends);
        assert_eq!(p.last_boundary(), Some(14));
        p.feed_with_ends(b"data: d", &mut out, &mut ends);
        assert_eq!(p.last_boundary(), None);
    }

    #[test]
    fn comments_and_unknown_fields_yield_nothing() {
        assert!(parse_in_chunks(b": ping\n\nid: 3\nretry: 10\n\n", 4).is_empty());
    }

    #[test]
    fn unterminated_last_event_is_dispatched_on_finish() {
        assert_eq!(parse_in_chunks(b"data: tail", 3)[0].data, "tail");
    }
}

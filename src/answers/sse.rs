//! Server-sent events framing, fed raw bytes in whatever chunks the network delivers.
//!
//! Shared by the content gate (is there useful content yet?) and the protocol adapters. It
//! only frames events; what an event means is the caller's business. Lines are decoded only
//! once complete, so a chunk boundary inside a UTF-8 character or a `\r\n` pair is harmless.
//! Memory is bounded: a block (the lines up to a blank line) longer than [`MAX_EVENT`] is
//! not kept; it yields no event, and the parser only watches for its end.

/// The longest block the parser keeps, line ends included. A chat chunk is tens of bytes to
/// a few KiB (a whole tool call in one delta rarely reaches 100 KiB), so 1 MiB is far above
/// any real event while bounding what one stream can make the proxy hold.
pub const MAX_EVENT: usize = 1024 * 1024;

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
    /// Bytes of the current line, kept or not (a dropped line is still not a blank one).
    line_len: usize,
    /// The previous byte was `\r`: a following `\n` belongs to the same line end.
    after_cr: bool,
    event: Option<String>,
    data: Option<String>,
    /// Bytes of the current block so far: its lines and their ends (a `\r\n` counts once,
    /// so the count, and whether a block is too long, does not depend on where chunks split).
    block: usize,
    /// The current block passed [`MAX_EVENT`]: nothing of it is kept until its blank line.
    oversized: bool,
}

impl SseParser {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds bytes and appends every event they complete to `out`.
    pub fn feed(&mut self, bytes: &[u8], out: &mut Vec<SseEvent>) {
        self.feed_with_starts(bytes, out, &mut Vec::new());
    }

    /// Like [`feed`](Self::feed), and records in `starts`, for each event completed, where
    /// in `bytes` its block began (0 when it began in an earlier chunk), so a caller can cut
    /// just before any event. Returns the offset just past the last blank line in `bytes`
    /// (the end of an event or comment block): where the stream can be cut between events.
    pub fn feed_with_starts(
        &mut self,
        bytes: &[u8],
        out: &mut Vec<SseEvent>,
        starts: &mut Vec<usize>,
    ) -> Option<usize> {
        let mut boundary = None;
        for (i, &b) in bytes.iter().enumerate() {
            match b {
                b'\n' if self.after_cr => self.after_cr = false,
                b'\n' | b'\r' => {
                    self.after_cr = b == b'\r';
                    if self.line_len > 0 {
                        self.count(1);
                        self.end_line();
                        continue;
                    }
                    // A blank line: the block ends (a CRLF one byte after its CR).
                    let end = if b == b'\r' && bytes.get(i + 1) == Some(&b'\n') {
                        i + 2
                    } else {
                        i + 1
                    };
                    if self.dispatch(out) {
                        starts.push(boundary.unwrap_or(0));
                    }
                    boundary = Some(end);
                }
                _ => {
                    self.after_cr = false;
                    self.line_len += 1;
                    if self.count(1) {
                        self.line.push(b);
                    }
                }
            }
        }
        boundary
    }

    /// Counts `n` more bytes of the current block; false once it is too long to keep (its
    /// lines and fields are then dropped).
    fn count(&mut self, n: usize) -> bool {
        self.block += n;
        if self.block > MAX_EVENT && !self.oversized {
            self.oversized = true;
            self.line = Vec::new();
            self.event = None;
            self.data = None;
        }
        !self.oversized
    }

    /// Whether a line or an event is still incomplete.
    pub fn has_partial(&self) -> bool {
        self.line_len > 0 || self.data.is_some() || self.oversized
    }

    /// The block now arriving is longer than [`MAX_EVENT`]: it will yield no event.
    pub fn is_oversized(&self) -> bool {
        self.oversized
    }

    /// Bytes the parser keeps of an unfinished line and event (at most [`MAX_EVENT`]).
    #[cfg(test)]
    pub fn buffered(&self) -> usize {
        self.line.len()
            + self.data.as_ref().map_or(0, String::len)
            + self.event.as_ref().map_or(0, String::len)
    }

    /// Dispatches a final event that the stream ended without a blank line after.
    pub fn finish(&mut self, out: &mut Vec<SseEvent>) {
        if self.line_len > 0 {
            self.end_line();
        }
        self.dispatch(out);
    }

    fn end_line(&mut self) {
        self.line_len = 0;
        if self.oversized {
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

    /// Ends the block: its event (if it had data and was not too long) goes to `out`.
    fn dispatch(&mut self, out: &mut Vec<SseEvent>) -> bool {
        let oversized = std::mem::take(&mut self.oversized);
        self.block = 0;
        let event = self.event.take();
        match self.data.take() {
            Some(data) if !oversized => {
                out.push(SseEvent { event, data });
                true
            }
            _ => false,
        }
    }
}

/// Where each blank line of `bytes` ends (the end of a block), for bytes that start inside
/// a line. `\r\n`, `\n` and `\r` all end a line.
fn block_ends(bytes: &[u8]) -> impl Iterator<Item = usize> + '_ {
    let mut at_line_start = false;
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < bytes.len() {
            let b = bytes[i];
            i += 1;
            if b == b'\r' || b == b'\n' {
                if b == b'\r' && bytes.get(i) == Some(&b'\n') {
                    i += 1;
                }
                if at_line_start {
                    at_line_start = false;
                    return Some(i);
                }
                at_line_start = true;
            } else {
                at_line_start = false;
            }
        }
        None
    })
}

/// The end of the first block in `bytes` (just past its blank line), for bytes that
/// continue an event begun earlier; `None` when the event goes on past them.
pub fn block_end(bytes: &[u8]) -> Option<usize> {
    block_ends(bytes).next()
}

/// Whether `bytes` end where a block ends (with a blank line).
pub fn ends_a_block(bytes: &[u8]) -> bool {
    block_ends(bytes).last() == Some(bytes.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn where_blocks_end() {
        assert_eq!(block_end(b"xx\"}\n\ndata: {}\n\n"), Some(6));
        assert_eq!(block_end(b"xx\"}\r\n\r\ndata"), Some(8));
        assert_eq!(block_end(b"xxxx"), None);
        assert_eq!(block_end(b"x\ny\n"), None);
        assert!(ends_a_block(b"data: {}\n\ndata: {}\n\n"));
        assert!(ends_a_block(b"x\r\n\r\n"));
        assert!(!ends_a_block(b"data: {}\n\ndata: {"));
        assert!(!ends_a_block(b"data: {}\n"));
        assert!(!ends_a_block(b""));
    }

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
    fn event_starts_and_cut_points_are_offsets_into_the_chunk() {
        let mut p = SseParser::new();
        let (mut out, mut starts) = (Vec::new(), Vec::new());
        let cut = p.feed_with_starts(b"data: a\n\ndata: b\r\n\r\nda", &mut out, &mut starts);
        assert_eq!((starts.clone(), cut), (vec![0, 9], Some(20)));
        assert_eq!(out.len(), 2);
        assert!(p.has_partial());
        starts.clear();
        let cut = p.feed_with_starts(
            b"ta: c\n: ping\n\n: x\n\ndata: e\n\n",
            &mut out,
            &mut starts,
        );
        assert_eq!(
            (starts.clone(), cut),
            (vec![0, 19], Some(28)),
            "c began earlier"
        );
        assert_eq!(p.feed_with_starts(b"data: d", &mut out, &mut starts), None);
    }

    /// Feeds `pieces` of a block, checking after each that the parser keeps at most
    /// [`MAX_EVENT`] bytes.
    fn feed_bounded(p: &mut SseParser, out: &mut Vec<SseEvent>, piece: &[u8], times: usize) {
        for _ in 0..times {
            p.feed(piece, out);
            assert!(p.buffered() <= MAX_EVENT, "{} bytes kept", p.buffered());
        }
    }

    #[test]
    fn a_block_over_the_cap_is_not_kept_and_yields_no_event() {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        p.feed(b"data: {\"a\":\"", &mut out);
        // 3 MiB on one line, in 64 KiB pieces.
        feed_bounded(&mut p, &mut out, &[b'x'; 64 * 1024], 48);
        assert!(p.is_oversized() && p.has_partial());
        p.feed(b"\"}\n\ndata: after\n\n", &mut out);
        assert_eq!(
            out.len(),
            1,
            "the long event is dropped, the next one is read"
        );
        assert_eq!(out[0].data, "after");
        assert!(!p.is_oversized() && !p.has_partial());
        // Many short data lines add up to one long event just the same.
        let mut out = Vec::new();
        feed_bounded(&mut p, &mut out, &b"data: 0123456789\n".repeat(1024), 100);
        p.feed(b"\nevent: error\ndata: x\n\n", &mut out);
        assert_eq!(
            out,
            vec![SseEvent {
                event: Some("error".into()),
                data: "x".into()
            }]
        );
    }

    #[test]
    fn a_block_at_the_cap_is_kept_however_its_crlf_is_split() {
        // The block after a CRLF blank line is counted the same when the CR and LF arrive
        // apart: whether it is too long never depends on the split.
        let head = "data: ";
        let body = "y".repeat(MAX_EVENT - head.len() - 1);
        let input = format!(": c\r\n\r\n{head}{body}\r\n\r\n");
        let want = vec![SseEvent {
            event: None,
            data: body.clone(),
        }];
        for split in [6, 7, 8, 9] {
            let mut p = SseParser::new();
            let mut out = Vec::new();
            p.feed(&input.as_bytes()[..split], &mut out);
            p.feed(&input.as_bytes()[split..], &mut out);
            assert_eq!(out, want, "split at {split}");
        }
        let longer = format!(": c\r\n\r\n{head}{body}y\r\n\r\n");
        assert!(parse_in_chunks(longer.as_bytes(), 7).is_empty());
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

/// Property tests: the events never depend on how the bytes were split, and every place
/// the parser says a stream can be cut is one.
#[cfg(test)]
mod properties {
    use super::*;
    use crate::answers::gate::arbitrary::{provider_stream, reads, split, sse_bytes};
    use proptest::prelude::*;

    /// The events of `reads` fed in turn, then the end, and whether an event was unfinished.
    fn parse(reads: &[&[u8]]) -> (Vec<SseEvent>, bool) {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        for read in reads {
            p.feed(read, &mut out);
            assert!(p.buffered() <= MAX_EVENT);
        }
        let partial = p.has_partial();
        p.finish(&mut out);
        (out, partial)
    }

    /// The events of `bytes` alone, if it ends where a stream can be cut (nothing partial).
    fn clean_prefix(bytes: &[u8]) -> Option<Vec<SseEvent>> {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        p.feed(bytes, &mut out);
        (!p.has_partial()).then_some(out)
    }

    fn input() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            sse_bytes(),
            provider_stream().prop_map(|s| s.bytes()),
            prop::collection::vec(any::<u8>(), 0..256),
        ]
    }

    proptest! {
        #[test]
        fn any_split_gives_the_events_of_the_whole(input in input(), cuts in reads()) {
            prop_assert_eq!(parse(&split(&input, &cuts)), parse(&[&input]));
        }

        #[test]
        fn cut_points_and_event_starts_are_places_to_cut(input in input(), cuts in reads()) {
            let mut p = SseParser::new();
            let mut events = Vec::new();
            let mut offset = 0;
            for read in split(&input, &cuts) {
                let before = events.len();
                let mut starts = Vec::new();
                let cut = p.feed_with_starts(read, &mut events, &mut starts);
                prop_assert_eq!(starts.len(), events.len() - before);
                for (n, &start) in starts.iter().enumerate() {
                    if start > 0 || offset == 0 {
                        // Just before this event: the events before it, and nothing partial.
                        let at = offset + start;
                        let so_far = events[..before + n].to_vec();
                        prop_assert_eq!(clean_prefix(&input[..at]), Some(so_far));
                    }
                }
                if let Some(cut) = cut {
                    prop_assert!(cut <= read.len());
                    prop_assert_eq!(clean_prefix(&input[..offset + cut]), Some(events.clone()));
                }
                offset += read.len();
            }
        }
    }
}

//! HTTP/1.1 on a provider connection, as pure functions over bytes: the request's head, the
//! response's head (parsed by `httparse`) and how its body is framed, and the chunked
//! decoder. The client in [`super::client`] moves bytes between these and a connection.
//!
//! It exists because fcm needs little of a general HTTP client on its hottest path (one
//! POST, a JSON or event-stream answer, keep-alive): under 64 connections ureq's request
//! and response building was a quarter of the proxy's own CPU per request.

use httparse::{Status, EMPTY_HEADER};

/// Response headers parsed at most; a response with more is refused.
const MAX_HEADERS: usize = 96;

/// Why a request could not be written or a response could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WireError(pub String);

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A request header's name and value, and whether both may go on the wire as they are
/// (a token for the name; no line break, NUL or other control byte but tab in the value).
fn header_fits(name: &str, value: &str) -> bool {
    const SEPARATORS: &[u8] = b"()<>@,;:\\\"/[]?={} \t";
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_graphic() && !SEPARATORS.contains(&b))
        && value
            .bytes()
            .all(|b| b == b'\t' || (b >= 0x20 && b != 0x7f))
}

/// A POST's bytes, written to `out`: its head (`headers` in the order given, then
/// `Content-Length`) and its body, in one buffer so that a small request leaves in one write.
pub(crate) fn post<'h>(
    out: &mut Vec<u8>,
    path: &str,
    host: &str,
    headers: impl IntoIterator<Item = (&'h str, &'h str)>,
    body: &[u8],
) -> Result<(), WireError> {
    out.reserve(256 + body.len());
    out.extend_from_slice(b"POST ");
    out.extend_from_slice(path.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\nHost: ");
    out.extend_from_slice(host.as_bytes());
    out.extend_from_slice(b"\r\n");
    for (name, value) in headers {
        if !header_fits(name, value) {
            return Err(WireError(format!(
                "the request header {name:?} holds characters HTTP does not allow"
            )));
        }
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"Content-Length: ");
    out.extend_from_slice(body.len().to_string().as_bytes());
    out.extend_from_slice(b"\r\n\r\n");
    out.extend_from_slice(body);
    Ok(())
}

/// How a response's body ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Framing {
    /// After this many more bytes (0: no body).
    Length(u64),
    /// At the last chunk.
    Chunked(Chunked),
    /// When the provider closes the connection (the connection is not reused).
    Close,
}

/// What a response head says, beside the headers a caller picks out as they are parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Head {
    pub status: u16,
    /// The head's length in bytes.
    pub len: usize,
    pub framing: Framing,
    /// Whether the connection may carry another request once the body is read.
    pub reusable: bool,
}

/// Whether `status` is an interim answer (`1xx` but `101`): a head that another follows.
pub(crate) fn is_interim(status: u16) -> bool {
    (100..200).contains(&status) && status != 101
}

/// Parses a response head from the start of `input`: `Ok(None)` while it is incomplete.
/// Each header of a final answer is shown to `each` (name as sent, value as bytes) before
/// the head is returned; an interim answer's headers are not (they say nothing of the final
/// answer). An interim answer is returned like any other: its framing is an empty body, and
/// the caller parses the next head after it. A connection is not reused after a `101` (it
/// speaks another protocol then), nor after an answer framed by both `Transfer-Encoding` and
/// `Content-Length` (read as chunked, as RFC 9112 says, but a sign of a confused peer); a
/// `Content-Length` must be plain digits.
pub(crate) fn parse_head(
    input: &[u8],
    mut each: impl FnMut(&str, &[u8]),
) -> Result<Option<Head>, WireError> {
    // Left uninitialised: filling 96 empty headers cost more than parsing a small head.
    let mut slots =
        [const { std::mem::MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_HEADERS];
    let mut response = httparse::Response::new(&mut []);
    let parsed = httparse::ParserConfig::default().parse_response_with_uninit_headers(
        &mut response,
        input,
        &mut slots,
    );
    let len = match parsed {
        Ok(Status::Complete(len)) => len,
        Ok(Status::Partial) => return Ok(None),
        Err(e) => {
            return Err(WireError(format!(
                "the provider's response head is not HTTP/1.1 ({e})"
            )))
        }
    };
    let status = response.code.unwrap_or(0);
    let interim = is_interim(status);
    let mut close = response.version != Some(1) || status == 101;
    let mut length: Option<u64> = None;
    let mut chunked = None;
    for h in response.headers.iter() {
        if !interim {
            each(h.name, h.value);
        }
        if h.name.eq_ignore_ascii_case("content-length") {
            let digits = h.value.trim_ascii();
            let n = (!digits.is_empty() && digits.iter().all(u8::is_ascii_digit))
                .then(|| std::str::from_utf8(digits).ok()?.parse::<u64>().ok())
                .flatten()
                .ok_or_else(|| WireError("the provider's Content-Length is not a number".into()))?;
            if length.is_some_and(|l| l != n) {
                return Err(WireError(
                    "the provider sent two different Content-Lengths".into(),
                ));
            }
            length = Some(n);
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            // The last coding says how the body ends: chunked, or else at the close.
            let last = h.value.rsplit(|b| *b == b',').next().unwrap_or(b"");
            chunked = Some(last.trim_ascii().eq_ignore_ascii_case(b"chunked"));
        } else if h.name.eq_ignore_ascii_case("connection") {
            close |= h
                .value
                .split(|b| *b == b',')
                .any(|t| t.trim_ascii().eq_ignore_ascii_case(b"close"));
        }
    }
    let framing = if (100..200).contains(&status) || status == 204 || status == 304 {
        Framing::Length(0)
    } else {
        match (chunked, length) {
            (Some(true), _) => Framing::Chunked(Chunked::Size),
            (Some(false), _) | (None, None) => Framing::Close,
            (None, Some(n)) => Framing::Length(n),
        }
    };
    let both = chunked.is_some() && length.is_some();
    let reusable = !close && !both && framing != Framing::Close;
    Ok(Some(Head {
        status,
        len,
        framing,
        reusable,
    }))
}

/// Where a chunked body's decoder is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Chunked {
    /// Before a chunk's size line.
    Size,
    /// Within a chunk: this many of its bytes are still to come.
    Data(u64),
    /// After a chunk's bytes, before the line break that ends them.
    DataEnd,
    /// After the last chunk, before the trailer section's end.
    Trailers,
    Done,
}

impl Chunked {
    /// Decodes what it can of `input` into `out`: the bytes of `input` used and of `out`
    /// filled. It stops after filling any of `out`, and when it needs more input (nothing
    /// filled and not [`Chunked::Done`]).
    pub(crate) fn decode(
        &mut self,
        input: &[u8],
        out: &mut [u8],
    ) -> Result<(usize, usize), WireError> {
        let mut used = 0;
        loop {
            let rest = &input[used..];
            match *self {
                // httparse reads an empty line as size 0, which would end the body early.
                Chunked::Size if rest.first().is_some_and(|b| !b.is_ascii_hexdigit()) => {
                    return Err(WireError("a chunk's size line is not hex".into()))
                }
                Chunked::Size => match httparse::parse_chunk_size(rest) {
                    Ok(Status::Complete((n, 0))) => {
                        used += n;
                        *self = Chunked::Trailers;
                    }
                    Ok(Status::Complete((n, size))) => {
                        used += n;
                        *self = Chunked::Data(size);
                    }
                    Ok(Status::Partial) => return Ok((used, 0)),
                    Err(_) => return Err(WireError("a chunk's size line is not hex".into())),
                },
                Chunked::Data(left) => {
                    let n = (left.min(usize::MAX as u64) as usize)
                        .min(rest.len())
                        .min(out.len());
                    if n == 0 {
                        return Ok((used, 0));
                    }
                    out[..n].copy_from_slice(&rest[..n]);
                    *self = match left - n as u64 {
                        0 => Chunked::DataEnd,
                        more => Chunked::Data(more),
                    };
                    return Ok((used + n, n));
                }
                Chunked::DataEnd => match rest {
                    [b'\r', b'\n', ..] => {
                        used += 2;
                        *self = Chunked::Size;
                    }
                    [] | [b'\r'] => return Ok((used, 0)),
                    _ => return Err(WireError("a chunk runs past its size".into())),
                },
                Chunked::Trailers => {
                    let mut trailers = [EMPTY_HEADER; 16];
                    match httparse::parse_headers(rest, &mut trailers) {
                        Ok(Status::Complete((n, _))) => {
                            *self = Chunked::Done;
                            return Ok((used + n, 0));
                        }
                        Ok(Status::Partial) => return Ok((used, 0)),
                        Err(e) => return Err(WireError(format!("a chunked body's trailers: {e}"))),
                    }
                }
                Chunked::Done => return Ok((used, 0)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(raw: &str) -> Result<Option<Head>, WireError> {
        parse_head(raw.as_bytes(), |_, _| {})
    }

    #[test]
    fn a_post_is_one_buffer_head_then_body() {
        let mut bytes = b"left from before".to_vec();
        bytes.clear();
        post(
            &mut bytes,
            "/v1/chat/completions?x=1",
            "api.example.com:8443",
            [("Content-Type", "application/json"), ("x-key", "a\tb")],
            b"{}",
        )
        .unwrap();
        assert_eq!(
            String::from_utf8(bytes).unwrap(),
            "POST /v1/chat/completions?x=1 HTTP/1.1\r\nHost: api.example.com:8443\r\n\
             Content-Type: application/json\r\nx-key: a\tb\r\nContent-Length: 2\r\n\r\n{}"
        );
    }

    #[test]
    fn a_header_that_would_break_the_head_is_refused_by_name() {
        for (name, value) in [
            ("x-a", "1\r\nEvil: yes"),
            ("x a", "1"),
            ("", "1"),
            ("x-a", "\0"),
        ] {
            let err = post(&mut Vec::new(), "/", "h", [(name, value)], b"").unwrap_err();
            assert!(err.0.contains(&format!("{name:?}")), "{err}");
        }
    }

    #[test]
    fn heads_are_framed_by_length_chunks_or_close() {
        let h = head("HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\nrest")
            .unwrap()
            .unwrap();
        assert_eq!(
            (h.status, h.len, h.framing.clone(), h.reusable),
            (200, 39, Framing::Length(12), true)
        );
        let h = head(
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, Chunked\r\nContent-Length: 3\r\n\r\n",
        )
        .unwrap()
        .unwrap();
        assert_eq!(h.framing, Framing::Chunked(Chunked::Size));
        assert!(
            !h.reusable,
            "both framings: read as chunked, the connection not reused"
        );
        let h = head("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n")
            .unwrap()
            .unwrap();
        assert_eq!((h.framing, h.reusable), (Framing::Close, false));
        let h = head("HTTP/1.1 200 OK\r\n\r\n").unwrap().unwrap();
        assert_eq!((h.framing, h.reusable), (Framing::Close, false));
        let h = head("HTTP/1.1 204 No Content\r\nContent-Length: 9\r\n\r\n")
            .unwrap()
            .unwrap();
        assert_eq!((h.framing, h.reusable), (Framing::Length(0), true));
        let h = head("HTTP/1.1 100 Continue\r\n\r\n").unwrap().unwrap();
        assert_eq!((h.status, h.framing), (100, Framing::Length(0)));
    }

    #[test]
    fn a_connection_is_reused_only_when_http_1_1_says_so() {
        let h =
            head("HTTP/1.1 200 OK\r\nConnection: keep-alive, Close\r\nContent-Length: 0\r\n\r\n")
                .unwrap()
                .unwrap();
        assert!(!h.reusable);
        let h = head("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n")
            .unwrap()
            .unwrap();
        assert!(!h.reusable);
        // After 101 the connection speaks another protocol.
        let h = head(
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
        )
        .unwrap()
        .unwrap();
        assert!(!h.reusable && !is_interim(h.status));
    }

    #[test]
    fn an_interim_answers_headers_are_not_the_answers() {
        let mut seen = Vec::new();
        let h = parse_head(
            b"HTTP/1.1 100 Continue\r\nRetry-After: 3600\r\nContent-Type: text/event-stream\r\n\r\n",
            |n, _| seen.push(n.to_string()),
        )
        .unwrap()
        .unwrap();
        assert!(is_interim(h.status) && seen.is_empty(), "{seen:?}");
        assert!(is_interim(103) && !is_interim(101) && !is_interim(200));
    }

    #[test]
    fn a_partial_head_waits_and_a_broken_one_is_an_error() {
        assert_eq!(head("HTTP/1.1 200 OK\r\nContent-Le").unwrap(), None);
        assert!(head("SMTP ready\r\n\r\n").is_err());
        assert!(head("HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n").is_err());
        for odd in ["+5", "-1", "5 5", "0x5", ""] {
            let raw = format!("HTTP/1.1 200 OK\r\nContent-Length: {odd}\r\n\r\n");
            assert!(head(&raw).is_err(), "{odd:?}");
        }
        assert!(head("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n").is_err());
    }

    #[test]
    fn every_header_is_shown_as_sent() {
        let mut seen = Vec::new();
        parse_head(
            b"HTTP/1.1 429 Too Many\r\nRetry-After: 3\r\nX-RateLimit-Reset-Tokens: 7s\r\n\r\n",
            |n, v| seen.push(format!("{n}={}", String::from_utf8_lossy(v))),
        )
        .unwrap();
        assert_eq!(seen, ["Retry-After=3", "X-RateLimit-Reset-Tokens=7s"]);
    }

    /// Decodes `wire` fed `step` bytes at a time into an `out` buffer of `room` bytes.
    fn dechunk(wire: &[u8], step: usize, room: usize) -> Result<(Vec<u8>, usize), WireError> {
        let mut state = Chunked::Size;
        let (mut fed, mut pending, mut body) = (0, Vec::new(), Vec::new());
        let mut out = vec![0; room];
        while state != Chunked::Done {
            let (used, made) = state.decode(&pending, &mut out)?;
            pending.drain(..used);
            body.extend_from_slice(&out[..made]);
            if made == 0 && state != Chunked::Done {
                if fed == wire.len() {
                    return Err(WireError("ran out".into()));
                }
                let end = (fed + step).min(wire.len());
                pending.extend_from_slice(&wire[fed..end]);
                fed = end;
            }
        }
        Ok((body, pending.len() + wire.len() - fed))
    }

    #[test]
    fn chunks_decode_whole_or_a_byte_at_a_time() {
        let wire = b"5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\nX-Trailer: 1\r\n\r\nNEXT";
        for step in [1, 2, 3, 7, wire.len()] {
            for room in [1, 4, 64] {
                let (body, left) = dechunk(wire, step, room).unwrap();
                assert_eq!(body, b"hello, world", "step {step} room {room}");
                assert_eq!(left, 4, "what follows the body is left unread");
            }
        }
        assert_eq!(dechunk(b"0\r\n\r\n", 1, 8).unwrap().0, b"");
    }

    #[test]
    fn broken_chunks_are_errors() {
        assert!(dechunk(b"zz\r\nhello\r\n0\r\n\r\n", 64, 64).is_err());
        assert!(dechunk(b"2\r\nhello\r\n0\r\n\r\n", 64, 64).is_err());
        assert!(
            dechunk(b"2\r\nhe\r\n\r\n2\r\nll\r\n0\r\n\r\n", 1, 64).is_err(),
            "a blank size line is not the last chunk"
        );
        assert!(
            dechunk(b"5\r\nhel", 64, 64).is_err(),
            "a cut chunk is not a body"
        );
    }

    mod properties {
        use super::super::*;
        use proptest::prelude::*;

        /// A response as a provider might frame it: interim answers first (with headers that
        /// must not be the answer's), then the body by length or in chunks of the given sizes.
        fn wire(interim: usize, body: &[u8], chunks: Option<&[usize]>) -> Vec<u8> {
            let mut out = Vec::new();
            for n in 0..interim {
                out.extend_from_slice(
                    format!("HTTP/1.1 103 Early Hints\r\nRetry-After: 36{n}\r\n\r\n").as_bytes(),
                );
            }
            match chunks {
                None => {
                    out.extend_from_slice(
                        format!(
                            "HTTP/1.1 200 OK\r\nX-Mark: final\r\nContent-Length: {}\r\n\r\n",
                            body.len()
                        )
                        .as_bytes(),
                    );
                    out.extend_from_slice(body);
                }
                Some(sizes) => {
                    out.extend_from_slice(
                        b"HTTP/1.1 200 OK\r\nX-Mark: final\r\nTransfer-Encoding: chunked\r\n\r\n",
                    );
                    let mut rest = body;
                    for size in sizes.iter().cycle() {
                        if rest.is_empty() {
                            break;
                        }
                        let n = (*size).clamp(1, rest.len());
                        out.extend_from_slice(format!("{n:x}\r\n").as_bytes());
                        out.extend_from_slice(&rest[..n]);
                        out.extend_from_slice(b"\r\n");
                        rest = &rest[n..];
                    }
                    out.extend_from_slice(b"0\r\n\r\n");
                }
            }
            out
        }

        /// Reads `wire` as the client does, its bytes arriving in pieces of the given sizes:
        /// heads parsed as they complete (interim ones skipped), then the body decoded. The
        /// final status, the headers shown, the body, and the bytes left after it.
        fn read(wire: &[u8], splits: &[usize]) -> (u16, Vec<String>, Vec<u8>, usize) {
            let mut pending: Vec<u8> = Vec::new();
            let mut fed = 0;
            let mut pieces = splits.iter().cycle();
            let mut feed = |pending: &mut Vec<u8>| -> bool {
                if fed == wire.len() {
                    return false;
                }
                let n = (*pieces.next().unwrap()).clamp(1, wire.len() - fed);
                pending.extend_from_slice(&wire[fed..fed + n]);
                fed += n;
                true
            };
            let (head, shown) = loop {
                let mut seen = Vec::new();
                match parse_head(pending.as_slice(), |n, _| seen.push(n.to_string())).unwrap() {
                    Some(h) if is_interim(h.status) => {
                        assert!(seen.is_empty(), "interim headers shown: {seen:?}");
                        pending.drain(..h.len);
                    }
                    Some(h) => {
                        pending.drain(..h.len);
                        break (h, seen);
                    }
                    None => assert!(feed(&mut pending), "the head never completed"),
                }
            };
            let mut body = Vec::new();
            match head.framing {
                Framing::Length(n) => {
                    while (pending.len() as u64) < n && feed(&mut pending) {}
                    body.extend(pending.drain(..n as usize));
                }
                Framing::Chunked(mut state) => {
                    let mut out = [0u8; 7];
                    while state != Chunked::Done {
                        let (used, made) = state.decode(&pending, &mut out).unwrap();
                        pending.drain(..used);
                        body.extend_from_slice(&out[..made]);
                        if made == 0 && state != Chunked::Done {
                            assert!(feed(&mut pending), "the body never ended");
                        }
                    }
                }
                Framing::Close => unreachable!("every case is framed"),
            }
            let left = pending.len() + wire.len() - fed;
            (head.status, shown, body, left)
        }

        proptest! {
            #[test]
            fn any_split_of_interim_answers_and_any_framing_reads_the_same(
                interim in 0usize..4,
                body in proptest::collection::vec(any::<u8>(), 0..300),
                chunked in any::<bool>(),
                sizes in proptest::collection::vec(1usize..40, 1..6),
                splits in proptest::collection::vec(1usize..50, 1..8),
                extra in proptest::collection::vec(any::<u8>(), 0..20),
            ) {
                let mut bytes = wire(interim, &body, chunked.then_some(sizes.as_slice()));
                // Bytes after the answer (a pipelined answer, a confused provider) are
                // never read as this one's.
                bytes.extend_from_slice(&extra);
                let (status, shown, got, left) = read(&bytes, &splits);
                prop_assert_eq!(status, 200);
                prop_assert_eq!(shown.iter().filter(|h| h.as_str() == "Retry-After").count(), 0);
                prop_assert!(shown.iter().any(|h| h == "X-Mark"));
                prop_assert_eq!(got, body);
                prop_assert_eq!(left, extra.len());
            }
        }
    }
}

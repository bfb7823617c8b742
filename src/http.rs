//! HTTP/1.1 server framing for `fcm serve`: read a request head, then (once the request is
//! admitted) its body, and write response heads. Just what a local proxy needs (keep-alive,
//! Content-Length and chunked request bodies, `Expect: 100-continue`, size limits) and
//! nothing more.
//!
//! Parsing is strict (RFC 9112): `httparse` reads the request line, the headers and chunk
//! sizes, and every ambiguity that could make fcm and a client disagree about where a
//! request ends (two Content-Lengths, Content-Length beside Transfer-Encoding, folded lines,
//! bare CRs) is refused and the connection closed, never guessed at. Reading is over any
//! `BufRead`: timeouts belong to the connection (`serve`), not to the framing.
//!
//! fcm first used tiny_http here. Its connection pool can leave a freshly accepted
//! connection waiting until some other connection closes (a lost wake-up when several
//! connections arrive together), which a burst of agent requests hits; so the server owns
//! its accept loop and gives every connection its own thread.

use std::io::{self, BufRead, Read, Write};

/// Largest request head (request line and headers): ample for agents' headers, small enough
/// that a connection cannot make the server buffer much before it is admitted.
const MAX_HEAD: usize = 64 * 1024;
/// Most header lines in one request head (or one trailer section).
const MAX_HEADERS: usize = 128;
/// Longest chunk-size line, extensions included.
const MAX_CHUNK_LINE: usize = 4 * 1024;

/// A request's line and headers, read before anything is decided about its body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    pub method: String,
    /// Path and query, as sent (`/v1/messages?beta=true`).
    pub target: String,
    /// Header names lower-cased, in order; values without surrounding whitespace.
    pub headers: Vec<(String, String)>,
    /// The client may send another request on this connection.
    pub keep_alive: bool,
    framing: Framing,
    /// `Expect: 100-continue` on HTTP/1.1: the client waits for `100 Continue` before the body.
    expects_continue: bool,
}

/// How the body of a request is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    None,
    Length(u64),
    Chunked,
}

impl Head {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or("")
    }

    /// A query parameter's raw value.
    pub fn query(&self, name: &str) -> Option<&str> {
        let q = self.target.split_once('?')?.1;
        q.split('&').find_map(|kv| {
            kv.split_once('=')
                .filter(|(k, _)| *k == name)
                .map(|(_, v)| v)
        })
    }
}

/// One request, body included.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub head: Head,
    pub body: Vec<u8>,
}

/// Why no request could be read. Those with a [`status`](ReadError::status) are answered
/// (and the connection closed); the others have nobody left to answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadError {
    /// The client closed the connection (or stayed idle too long) between requests.
    Closed,
    /// The request did not arrive in time (the connection's deadline passed).
    TimedOut,
    /// The declared or received body is this many bytes, over the limit; it was not read.
    TooLarge(u64),
    /// The head is over [`MAX_HEAD`] or has more than [`MAX_HEADERS`] lines.
    HeadTooLarge,
    /// Not HTTP/1.1 framing fcm can read unambiguously; the message says what.
    Malformed(String),
    /// A well-formed request line naming another HTTP version.
    UnsupportedVersion(String),
    /// A transfer coding other than `chunked` alone.
    UnsupportedCoding(String),
    /// An `Expect` other than `100-continue`.
    UnsupportedExpectation(String),
    /// The connection failed while reading.
    Io,
}

impl ReadError {
    /// The status to answer with before closing the connection, if anyone is listening.
    pub fn status(&self) -> Option<u16> {
        match self {
            ReadError::Closed | ReadError::Io => None,
            ReadError::TimedOut => Some(408),
            ReadError::TooLarge(_) => Some(413),
            ReadError::HeadTooLarge => Some(431),
            ReadError::Malformed(_) => Some(400),
            ReadError::UnsupportedVersion(_) => Some(505),
            ReadError::UnsupportedCoding(_) => Some(501),
            ReadError::UnsupportedExpectation(_) => Some(417),
        }
    }
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::Closed => f.write_str("the connection closed"),
            ReadError::TimedOut => f.write_str("the request did not arrive in time"),
            ReadError::TooLarge(n) => write!(f, "the request body is {n} bytes, over the limit"),
            ReadError::HeadTooLarge => write!(
                f,
                "the request head is over {} KiB or {MAX_HEADERS} header lines",
                MAX_HEAD / 1024
            ),
            ReadError::Malformed(why) => write!(f, "malformed HTTP request: {why}"),
            ReadError::UnsupportedVersion(v) => {
                write!(f, "fcm serves HTTP/1.1 and HTTP/1.0, not {v}")
            }
            ReadError::UnsupportedCoding(c) => write!(
                f,
                "Transfer-Encoding {c:?} is not supported; send the body as is or chunked"
            ),
            ReadError::UnsupportedExpectation(e) => {
                write!(f, "Expect: {e} is not supported (only 100-continue)")
            }
            ReadError::Io => f.write_str("the connection failed"),
        }
    }
}

impl std::error::Error for ReadError {}

impl From<io::Error> for ReadError {
    fn from(e: io::Error) -> Self {
        match e.kind() {
            // A socket read timeout shows as either, depending on the platform.
            io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => ReadError::TimedOut,
            _ => ReadError::Io,
        }
    }
}

fn malformed(why: impl Into<String>) -> ReadError {
    ReadError::Malformed(why.into())
}

/// Reads a request and its body in one go, for servers that admit every request.
/// `interim` receives `100 Continue` when the client waits for it.
pub fn read_request(
    r: &mut impl BufRead,
    interim: &mut impl Write,
    max_body: usize,
) -> Result<Request, ReadError> {
    let head = read_head(r)?;
    let body = read_body(r, &head, interim, max_body)?;
    Ok(Request { head, body })
}

/// Reads the next request head, leaving its body unread. Blank lines before it are skipped
/// (RFC 9112 §2.2).
pub fn read_head(r: &mut impl BufRead) -> Result<Head, ReadError> {
    skip_blank_lines(r)?;
    let mut buf: Vec<u8> = Vec::new();
    loop {
        let available = r.fill_buf()?;
        if available.is_empty() {
            return Err(malformed("the connection closed inside the request head"));
        }
        let old = buf.len();
        let take = available.len().min(MAX_HEAD - old);
        buf.extend_from_slice(&available[..take]);
        if let Some(end) = head_end(&buf, old) {
            r.consume(end - old);
            buf.truncate(end);
            return parse_head(&buf);
        }
        r.consume(take);
        if buf.len() == MAX_HEAD {
            return Err(ReadError::HeadTooLarge);
        }
    }
}

/// Consumes CRLFs (or bare LFs) before a request line; `Closed` when the connection ends
/// first.
fn skip_blank_lines(r: &mut impl BufRead) -> Result<(), ReadError> {
    let mut after_cr = false;
    loop {
        let available = r.fill_buf()?;
        if available.is_empty() {
            return Err(if after_cr {
                malformed("a bare CR before the request line")
            } else {
                ReadError::Closed
            });
        }
        let mut blank = 0;
        let mut found = false;
        for &b in available {
            match (after_cr, b) {
                (_, b'\n') => after_cr = false,
                (false, b'\r') => after_cr = true,
                (true, _) => return Err(malformed("a bare CR before the request line")),
                (false, _) => {
                    found = true;
                    break;
                }
            }
            blank += 1;
        }
        r.consume(blank);
        if found {
            return Ok(());
        }
    }
}

/// Where the head ends (just past its blank line), searching the bytes from `new` on (and
/// the two before them, where a blank line may have begun).
fn head_end(buf: &[u8], new: usize) -> Option<usize> {
    let from = new.saturating_sub(2);
    memchr::memchr_iter(b'\n', &buf[from..])
        .map(|i| from + i)
        .find_map(|lf| match &buf[lf + 1..] {
            [b'\n', ..] => Some(lf + 2),
            [b'\r', b'\n', ..] => Some(lf + 3),
            _ => None,
        })
}

/// Parses a complete head (ending in its blank line) and checks its framing headers.
fn parse_head(bytes: &[u8]) -> Result<Head, ReadError> {
    let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut parsed = httparse::Request::new(&mut slots);
    match parsed.parse(bytes) {
        Ok(httparse::Status::Complete(n)) if n == bytes.len() => {}
        Ok(_) => return Err(malformed("the request head ends early")),
        Err(httparse::Error::TooManyHeaders) => return Err(ReadError::HeadTooLarge),
        Err(httparse::Error::Version) => {
            return Err(match named_version(bytes) {
                Some(v) => ReadError::UnsupportedVersion(v),
                None => malformed("the request line is not METHOD TARGET HTTP/1.1"),
            })
        }
        Err(e) => return Err(malformed(describe(e))),
    }
    let http11 = parsed.version == Some(1);
    let headers: Vec<(String, String)> = parsed
        .headers
        .iter()
        .map(|h| {
            let value = String::from_utf8_lossy(h.value);
            (
                h.name.to_ascii_lowercase(),
                value.trim_matches([' ', '\t']).to_string(),
            )
        })
        .collect();
    let all = |name: &str| -> Vec<&str> {
        headers
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .collect()
    };
    match all("host").len() {
        0 if http11 => return Err(malformed("an HTTP/1.1 request without a Host header")),
        0 | 1 => {}
        _ => return Err(malformed("more than one Host header")),
    }
    let framing = framing(&all("content-length"), &all("transfer-encoding"), http11)?;
    let mut expects_continue = false;
    for expect in all("expect") {
        if !expect.eq_ignore_ascii_case("100-continue") {
            return Err(ReadError::UnsupportedExpectation(expect.to_string()));
        }
        // An HTTP/1.0 client cannot have asked for it (RFC 9110 §10.1.1).
        expects_continue = http11;
    }
    let connection = tokens(&all("connection"));
    let keep_alive = if http11 {
        !connection.iter().any(|t| t == "close")
    } else {
        connection.iter().any(|t| t == "keep-alive")
    };
    Ok(Head {
        method: parsed.method.unwrap_or_default().to_string(),
        target: parsed.path.unwrap_or_default().to_string(),
        headers,
        keep_alive,
        framing,
        expects_continue,
    })
}

/// The version a request line names, when it is well formed apart from that
/// (`GET / HTTP/2.0`), so it earns a 505 rather than a 400.
fn named_version(head: &[u8]) -> Option<String> {
    let line = head.split(|b| *b == b'\r' || *b == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?;
    let mut parts = line.split(' ');
    let (_, _, version, None) = (parts.next()?, parts.next()?, parts.next()?, parts.next()) else {
        return None;
    };
    let digits = version.strip_prefix("HTTP/")?;
    let well_formed = match digits.as_bytes() {
        [major] => major.is_ascii_digit(),
        [major, b'.', minor] => major.is_ascii_digit() && minor.is_ascii_digit(),
        _ => false,
    };
    well_formed.then(|| version.to_string())
}

fn describe(e: httparse::Error) -> &'static str {
    match e {
        httparse::Error::HeaderName => {
            "a header name is invalid (no colon, whitespace before the colon, or a folded line)"
        }
        httparse::Error::HeaderValue => "a header value holds a control character (a bare CR?)",
        httparse::Error::NewLine => "a line ends in a bare CR",
        httparse::Error::Token => "the request line is not METHOD TARGET HTTP/1.1",
        _ => "the request head is not HTTP/1.1",
    }
}

/// The comma-separated elements of a list header, lower-cased, over all its lines.
fn tokens(values: &[&str]) -> Vec<String> {
    values
        .iter()
        .flat_map(|v| v.split(','))
        .map(|t| t.trim_matches([' ', '\t']).to_ascii_lowercase())
        .filter(|t| !t.is_empty())
        .collect()
}

/// The body's framing from its Content-Length and Transfer-Encoding lines (RFC 9112 §6):
/// exactly one way of saying where the body ends, or a refusal.
fn framing(lengths: &[&str], codings: &[&str], http11: bool) -> Result<Framing, ReadError> {
    match (lengths, codings) {
        ([], []) => Ok(Framing::None),
        ([length], []) => {
            if length.is_empty() || !length.bytes().all(|b| b.is_ascii_digit()) {
                return Err(malformed(format!(
                    "Content-Length {length:?} is not a number"
                )));
            }
            // All digits: only a value past u64 fails to parse, and it is over any limit.
            Ok(Framing::Length(length.parse().unwrap_or(u64::MAX)))
        }
        ([_, _, ..], []) => Err(malformed("more than one Content-Length header")),
        ([_, ..], [_, ..]) => Err(malformed(
            "both Content-Length and Transfer-Encoding: fcm cannot tell where the body ends",
        )),
        ([], [_, ..]) if !http11 => Err(malformed("Transfer-Encoding in an HTTP/1.0 request")),
        ([], [_, ..]) => {
            let list = tokens(codings);
            match list.as_slice() {
                [only] if only == "chunked" => Ok(Framing::Chunked),
                [first, .., last]
                    if last == "chunked" && !list[..list.len() - 1].contains(last) =>
                {
                    Err(ReadError::UnsupportedCoding(first.clone()))
                }
                _ => Err(malformed(format!(
                    "Transfer-Encoding {:?} does not end in a single chunked",
                    codings.join(", ")
                ))),
            }
        }
    }
}

/// Reads the body `head` announces, over at most `max_body` bytes (`TooLarge` beyond, before
/// anything is read). `interim` receives `100 Continue` when the client waits for it.
pub fn read_body(
    r: &mut impl BufRead,
    head: &Head,
    interim: &mut impl Write,
    max_body: usize,
) -> Result<Vec<u8>, ReadError> {
    let length = match head.framing {
        Framing::None | Framing::Length(0) => return Ok(Vec::new()),
        Framing::Length(n) if n > max_body as u64 => return Err(ReadError::TooLarge(n)),
        Framing::Length(n) => Some(n as usize),
        Framing::Chunked => None,
    };
    if head.expects_continue {
        interim.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
        interim.flush()?;
    }
    match length {
        Some(n) => {
            let mut body = vec![0; n];
            r.read_exact(&mut body)?;
            Ok(body)
        }
        None => read_chunked(r, max_body),
    }
}

/// Reads a line up to and including its LF, at most `limit` bytes; `Io` when the connection
/// ends first.
fn read_line(r: &mut impl BufRead, limit: usize, what: &str) -> Result<Vec<u8>, ReadError> {
    let mut line = Vec::new();
    r.take(limit as u64 + 1).read_until(b'\n', &mut line)?;
    if line.len() > limit {
        return Err(malformed(format!("{what} is too long")));
    }
    if line.last() != Some(&b'\n') {
        return Err(ReadError::Io);
    }
    Ok(line)
}

fn read_chunked(r: &mut impl BufRead, max_body: usize) -> Result<Vec<u8>, ReadError> {
    let mut body = Vec::new();
    loop {
        let line = read_line(r, MAX_CHUNK_LINE, "a chunk-size line")?;
        let bad = || {
            malformed(format!(
                "bad chunk size {:?}",
                String::from_utf8_lossy(line.trim_ascii_end())
            ))
        };
        // httparse reads an empty line as size 0, which would end the body early.
        if !line.first().is_some_and(u8::is_ascii_hexdigit) {
            return Err(bad());
        }
        let size = match httparse::parse_chunk_size(&line) {
            Ok(httparse::Status::Complete((n, size))) if n == line.len() => size,
            _ => return Err(bad()),
        };
        if size == 0 {
            read_trailers(r)?;
            return Ok(body);
        }
        let room = max_body.saturating_sub(body.len()) as u64;
        if size > room {
            return Err(ReadError::TooLarge(
                (body.len() as u64).saturating_add(size),
            ));
        }
        let start = body.len();
        body.resize(start + size as usize, 0);
        r.read_exact(&mut body[start..])?;
        let mut end = [0u8; 2];
        r.read_exact(&mut end)?;
        if &end != b"\r\n" {
            return Err(malformed("chunk data not followed by CRLF"));
        }
    }
}

/// Reads (and checks, then drops) the trailer section after the last chunk.
fn read_trailers(r: &mut impl BufRead) -> Result<(), ReadError> {
    let mut section = Vec::new();
    loop {
        let room = MAX_HEAD.saturating_sub(section.len());
        if room == 0 {
            return Err(ReadError::HeadTooLarge);
        }
        let line = read_line(r, room, "the trailer section")?;
        let blank = matches!(line.as_slice(), b"\r\n" | b"\n");
        section.extend_from_slice(&line);
        if blank {
            break;
        }
    }
    let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
    match httparse::parse_headers(&section, &mut slots) {
        Ok(httparse::Status::Complete((n, _))) if n == section.len() => Ok(()),
        Err(httparse::Error::TooManyHeaders) => Err(ReadError::HeadTooLarge),
        Err(e) => Err(malformed(describe(e))),
        Ok(_) => Err(malformed("the trailer section ends early")),
    }
}

/// The reason phrase of every status fcm sends (RFC 9110 §15), and one by class for others.
pub fn reason(status: u16) -> &'static str {
    let known = match status {
        100 => "Continue",
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        402 => "Payment Required",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        411 => "Length Required",
        413 => "Content Too Large",
        415 => "Unsupported Media Type",
        417 => "Expectation Failed",
        422 => "Unprocessable Content",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
        _ => "",
    };
    match (known, status / 100) {
        ("", 1) => "Informational",
        ("", 2) => "Success",
        ("", 3) => "Redirection",
        ("", 4) => "Client Error",
        ("", _) => "Server Error",
        (phrase, _) => phrase,
    }
}

/// A response head; `length: None` means a chunked body.
pub fn head(
    status: u16,
    headers: &[(String, String)],
    length: Option<usize>,
    keep_alive: bool,
) -> Vec<u8> {
    let mut h = format!("HTTP/1.1 {status} {}\r\n", reason(status));
    for (k, v) in headers {
        h.push_str(k);
        h.push_str(": ");
        h.push_str(v);
        h.push_str("\r\n");
    }
    if !keep_alive {
        h.push_str("connection: close\r\n");
    }
    match length {
        Some(n) => h.push_str(&format!("content-length: {n}\r\n\r\n")),
        None => h.push_str("transfer-encoding: chunked\r\n\r\n"),
    }
    h.into_bytes()
}

/// Appends `bytes` as one chunk of a chunked body (nothing for empty input: an empty chunk
/// would end the body).
pub fn chunk(bytes: &[u8], out: &mut Vec<u8>) {
    if bytes.is_empty() {
        return;
    }
    out.extend_from_slice(format!("{:x}\r\n", bytes.len()).as_bytes());
    out.extend_from_slice(bytes);
    out.extend_from_slice(b"\r\n");
}

/// The end of a chunked body.
pub const LAST_CHUNK: &[u8] = b"0\r\n\r\n";

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::BufReader;

    /// A reader that hands out the input in the given read sizes (then the rest at once),
    /// like a slow socket.
    struct Trickle<'a> {
        data: &'a [u8],
        steps: Vec<usize>,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let step = if self.steps.is_empty() {
                usize::MAX
            } else {
                self.steps.remove(0).max(1)
            };
            let n = step.min(buf.len()).min(self.data.len());
            buf[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    /// Every request on a connection read in reads of `steps`, until it closes or fails.
    fn parse_split(
        input: &[u8],
        steps: Vec<usize>,
        max: usize,
    ) -> (Vec<Result<Request, ReadError>>, Vec<u8>) {
        let mut r = BufReader::with_capacity(7, Trickle { data: input, steps });
        let mut interim = Vec::new();
        let mut out = Vec::new();
        loop {
            match read_request(&mut r, &mut interim, max) {
                Ok(req) => out.push(Ok(req)),
                Err(ReadError::Closed) => break,
                Err(e) => {
                    out.push(Err(e));
                    break;
                }
            }
        }
        (out, interim)
    }

    fn parse_all(
        input: &[u8],
        step: usize,
        max: usize,
    ) -> (Vec<Result<Request, ReadError>>, Vec<u8>) {
        parse_split(input, vec![step; input.len()], max)
    }

    fn first_error(input: &[u8]) -> ReadError {
        match parse_all(input, 64, 100).0.into_iter().next() {
            Some(Err(e)) => e,
            other => panic!("{:?} was read as {other:?}", String::from_utf8_lossy(input)),
        }
    }

    #[test]
    fn keep_alive_requests_in_any_read_sizes() {
        let input = b"POST /v1/messages?beta=true HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nX-Api-Key: k\r\n\r\nhello\
GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
        for step in 1..=input.len() {
            let (reqs, _) = parse_all(input, step, 100);
            assert_eq!(reqs.len(), 2, "step {step}");
            let a = reqs[0].as_ref().unwrap();
            assert_eq!(
                (a.head.method.as_str(), a.head.path(), a.head.query("beta")),
                ("POST", "/v1/messages", Some("true"))
            );
            assert_eq!(
                (
                    a.body.as_slice(),
                    a.head.header("x-api-key"),
                    a.head.keep_alive
                ),
                (&b"hello"[..], Some("k"), true)
            );
            let b = reqs[1].as_ref().unwrap();
            assert_eq!(
                (b.head.path(), b.head.keep_alive, b.body.len()),
                ("/health", false, 0)
            );
        }
    }

    #[test]
    fn chunked_bodies_and_continue() {
        let input = b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nTrailer: x\r\n\r\n";
        let (reqs, interim) = parse_all(input, 3, 100);
        assert_eq!(reqs[0].as_ref().unwrap().body, b"hello world");
        assert_eq!(interim, b"HTTP/1.1 100 Continue\r\n\r\n");
    }

    #[test]
    fn blank_lines_before_a_request_and_bare_lf_lines_are_read() {
        let (reqs, _) = parse_all(b"\r\n\nGET / HTTP/1.1\nHost: x\n\n", 1, 10);
        assert_eq!(reqs.len(), 1);
        assert_eq!(reqs[0].as_ref().unwrap().head.header("host"), Some("x"));
    }

    #[test]
    fn the_head_alone_leaves_the_body_unread() {
        let input =
            b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\nabc";
        let mut r = BufReader::new(&input[..]);
        let head = read_head(&mut r).unwrap();
        assert_eq!(r.fill_buf().unwrap(), b"abc");
        let mut interim = Vec::new();
        assert_eq!(read_body(&mut r, &head, &mut interim, 10).unwrap(), b"abc");
        assert_eq!(interim, b"HTTP/1.1 100 Continue\r\n\r\n");
    }

    #[test]
    fn limits() {
        let (reqs, interim) = parse_all(
            b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 101\r\nExpect: 100-continue\r\n\r\n",
            64,
            100,
        );
        assert_eq!(reqs[0], Err(ReadError::TooLarge(101)));
        assert!(
            interim.is_empty(),
            "no 100 Continue for a body that will be refused"
        );
        let huge = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999999\r\n\r\n";
        assert_eq!(first_error(huge), ReadError::TooLarge(u64::MAX));
        let (reqs, _) = parse_all(
            b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n80\r\n",
            64,
            100,
        );
        assert_eq!(reqs[0], Err(ReadError::TooLarge(128)));
        let long = format!("GET /{} HTTP/1.1\r\nHost: x\r\n\r\n", "a".repeat(MAX_HEAD));
        assert_eq!(first_error(long.as_bytes()), ReadError::HeadTooLarge);
        let many: String = (0..=MAX_HEADERS).map(|i| format!("X-{i}: 1\r\n")).collect();
        let many = format!("GET / HTTP/1.1\r\nHost: x\r\n{many}\r\n");
        assert_eq!(first_error(many.as_bytes()), ReadError::HeadTooLarge);
    }

    /// What RFC 9112 says to reject, and what fcm answers each with.
    #[test]
    fn ambiguous_or_broken_framing_is_refused() {
        let cases: &[(&str, &[u8], u16)] = &[
            ("garbage", b"NONSENSE\r\n\r\n", 400),
            ("two spaces", b"GET  / HTTP/1.1\r\nHost: x\r\n\r\n", 400),
            ("space in target", b"GET /a b HTTP/1.1\r\nHost: x\r\n\r\n", 400),
            ("HTTP/2", b"GET / HTTP/2\r\n\r\n", 505),
            ("HTTP/1.2", b"GET / HTTP/1.2\r\nHost: x\r\n\r\n", 505),
            ("no colon", b"GET / HTTP/1.1\r\nHost: x\r\nno colon\r\n\r\n", 400),
            ("bad length", b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: x\r\n\r\n", 400),
            ("signed length", b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: +91\r\n\r\n", 400),
            ("negative length", b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", 400),
            ("empty length", b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length:\r\n\r\n", 400),
            ("listed length", b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3, 3\r\n\r\nabc", 400),
            (
                "two lengths",
                b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 40\r\n\r\nabc",
                400,
            ),
            (
                "two equal lengths",
                b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc",
                400,
            ),
            ("space before colon", b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length : 3\r\n\r\nabc", 400),
            ("obs-fold", b"GET / HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n  folded\r\n\r\n", 400),
            ("tab fold", b"GET / HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n\tfolded\r\n\r\n", 400),
            ("bare CR in a value", b"GET / HTTP/1.1\r\nHost: x\r\nX-A: 1\rX-B: 2\r\n\r\n", 400),
            ("bare CR before the line", b"\rGET / HTTP/1.1\r\nHost: x\r\n\r\n", 400),
            ("NUL in a value", b"GET / HTTP/1.1\r\nHost: x\r\nX-A: a\0b\r\n\r\n", 400),
            ("no Host", b"GET / HTTP/1.1\r\n\r\n", 400),
            ("two Hosts", b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),
            (
                "length and chunked",
                b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
                400,
            ),
            ("gzip last", b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", 400),
            ("identity", b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: identity\r\n\r\n", 400),
            ("chunked twice", b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
            ("empty coding", b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding:\r\n\r\n", 400),
            ("gzip then chunked", b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501),
            ("chunked on 1.0", b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400),
            ("signed chunk size", b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n+5b\r\n", 400),
            ("0x chunk size", b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0x5\r\n", 400),
            ("empty chunk size", b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n\r\nhello\r\n0\r\n\r\n", 400),
            ("chunk size too big", b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffff\r\n", 400),
            ("bare LF chunk size", b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n", 400),
            ("chunk overlong", b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello!\r\n0\r\n\r\n", 400),
            ("chunk without CRLF", b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello0\r\n\r\n", 400),
            ("bad trailer", b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nBad Trailer\r\n\r\n", 400),
            ("expect other", b"POST / HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\nContent-Length: 1\r\n\r\nx", 417),
        ];
        for (name, input, status) in cases {
            let e = first_error(input);
            assert_eq!(e.status(), Some(*status), "{name}: {e:?}");
            assert!(!e.to_string().is_empty());
        }
    }

    #[test]
    fn lengths_codings_and_connections_that_are_fine() {
        let cases: &[(&[u8], &[u8], bool)] = &[
            (b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 003\r\n\r\nabc", b"abc", true),
            (b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: Chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", b"abc", true),
            (b"POST / HTTP/1.1\r\nHost: x\r\nConnection: keep-alive, Close\r\nContent-Length: 1\r\n\r\na", b"a", false),
            (b"GET / HTTP/1.0\r\n\r\n", b"", false),
            (b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", b"", true),
            (b"GET / HTTP/1.1\r\nHost: x\r\nX-Obs: caf\xc3\xa9 \t\r\n\r\n", b"", true),
        ];
        for (input, body, keep_alive) in cases {
            let (reqs, _) = parse_all(input, 64, 100);
            let req = reqs[0]
                .as_ref()
                .unwrap_or_else(|e| panic!("{:?}: {e:?}", String::from_utf8_lossy(input)));
            assert_eq!(
                (req.body.as_slice(), req.head.keep_alive),
                (*body, *keep_alive)
            );
        }
        let (reqs, _) = parse_all(
            b"GET / HTTP/1.1\r\nHost: x\r\nX-Obs: caf\xc3\xa9 \t\r\n\r\n",
            64,
            0,
        );
        assert_eq!(reqs[0].as_ref().unwrap().head.header("x-obs"), Some("café"));
    }

    #[test]
    fn an_http10_client_is_not_sent_100_continue() {
        let (reqs, interim) = parse_all(
            b"POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\na",
            64,
            10,
        );
        assert_eq!(reqs[0].as_ref().unwrap().body, b"a");
        assert!(interim.is_empty());
    }

    #[test]
    fn a_connection_cut_inside_a_request() {
        assert!(matches!(
            first_error(b"GET / HTTP/1.1\r\nHost: x\r\n"),
            ReadError::Malformed(_)
        ));
        let body_cut = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 9\r\n\r\nabc";
        assert_eq!(first_error(body_cut), ReadError::Io);
        assert!(first_error(body_cut).status().is_none(), "nobody to answer");
    }

    #[test]
    fn reason_phrases() {
        for (status, phrase) in [
            (403, "Forbidden"),
            (408, "Request Timeout"),
            (411, "Length Required"),
            (413, "Content Too Large"),
            (417, "Expectation Failed"),
            (431, "Request Header Fields Too Large"),
            (501, "Not Implemented"),
            (505, "HTTP Version Not Supported"),
            (418, "Client Error"),
            (299, "Success"),
            (599, "Server Error"),
        ] {
            assert_eq!(reason(status), phrase, "{status}");
        }
    }

    #[test]
    fn heads_and_chunks() {
        let h =
            String::from_utf8(head(200, &[("x-a".into(), "1".into())], Some(3), false)).unwrap();
        assert_eq!(
            h,
            "HTTP/1.1 200 OK\r\nx-a: 1\r\nconnection: close\r\ncontent-length: 3\r\n\r\n"
        );
        let mut out = Vec::new();
        chunk(b"", &mut out);
        chunk(b"hello world, sixteen", &mut out);
        assert_eq!(out, b"14\r\nhello world, sixteen\r\n");
    }

    mod properties {
        use super::*;
        use proptest::prelude::*;

        /// A valid request and its bytes on the wire.
        #[derive(Debug, Clone)]
        struct Wire {
            method: String,
            target: String,
            headers: Vec<(String, String)>,
            body: Vec<u8>,
            chunks: Option<Vec<usize>>,
        }

        impl Wire {
            fn bytes(&self) -> Vec<u8> {
                let mut out = format!(
                    "{} {} HTTP/1.1\r\nHost: 127.0.0.1:1\r\n",
                    self.method, self.target
                )
                .into_bytes();
                for (k, v) in &self.headers {
                    out.extend_from_slice(format!("{k}: {v}\r\n").as_bytes());
                }
                match &self.chunks {
                    None => out.extend_from_slice(
                        format!("Content-Length: {}\r\n\r\n", self.body.len()).as_bytes(),
                    ),
                    Some(_) => out.extend_from_slice(b"Transfer-Encoding: chunked\r\n\r\n"),
                }
                match &self.chunks {
                    None => out.extend_from_slice(&self.body),
                    Some(sizes) => {
                        let mut rest = self.body.as_slice();
                        for size in sizes {
                            let n = (*size).min(rest.len());
                            if n == 0 {
                                break;
                            }
                            out.extend_from_slice(format!("{n:X};x=1\r\n").as_bytes());
                            out.extend_from_slice(&rest[..n]);
                            out.extend_from_slice(b"\r\n");
                            rest = &rest[n..];
                        }
                        if !rest.is_empty() {
                            out.extend_from_slice(format!("{:x}\r\n", rest.len()).as_bytes());
                            out.extend_from_slice(rest);
                            out.extend_from_slice(b"\r\n");
                        }
                        out.extend_from_slice(b"0\r\nX-Trailer: t\r\n\r\n");
                    }
                }
                out
            }
        }

        fn wire() -> impl Strategy<Value = Wire> {
            (
                prop::sample::select(vec!["GET", "POST", "HEAD", "PUT", "DELETE"]),
                "/[a-z0-9/._-]{0,20}(\\?[a-z]=[a-z0-9]{0,5})?",
                prop::collection::vec(("x-[a-z]{1,8}", "[!-~]([ -~]{0,20}[!-~])?"), 0..6),
                prop::collection::vec(any::<u8>(), 0..300),
                prop::option::of(prop::collection::vec(1usize..100, 0..6)),
            )
                .prop_map(|(method, target, headers, body, chunks)| Wire {
                    method: method.to_string(),
                    target,
                    headers,
                    body,
                    chunks,
                })
        }

        // `ProptestConfig::default()` reads `PROPTEST_CASES`, so a longer run is one variable away.
        proptest! {
            /// Any valid request split into any reads parses as the request sent.
            #[test]
            fn splits_do_not_change_a_request(
                w in wire(),
                next in wire(),
                steps in prop::collection::vec(1usize..40, 0..200),
            ) {
                let mut input = w.bytes();
                input.extend_from_slice(&next.bytes());
                let (whole, _) = parse_split(&input, vec![], 1 << 20);
                let (split, _) = parse_split(&input, steps, 1 << 20);
                prop_assert_eq!(&whole, &split);
                prop_assert_eq!(whole.len(), 2);
                for (got, sent) in whole.iter().zip([&w, &next]) {
                    let got = got.as_ref().unwrap();
                    prop_assert_eq!(&got.head.method, &sent.method);
                    prop_assert_eq!(&got.head.target, &sent.target);
                    prop_assert_eq!(&got.body, &sent.body);
                    for (k, v) in &sent.headers {
                        prop_assert!(got.head.headers.contains(&(k.clone(), v.clone())));
                    }
                }
            }

            /// Arbitrary bytes give requests or an error, never a panic or a hang.
            #[test]
            fn any_bytes_are_read_or_refused(
                prefix in prop::sample::select(vec![
                    &b""[..],
                    &b"POST / HTTP/1.1\r\nHost: x\r\n"[..],
                    &b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"[..],
                ]),
                bytes in prop::collection::vec(any::<u8>(), 0..400),
                steps in prop::collection::vec(1usize..40, 0..50),
            ) {
                let mut input = prefix.to_vec();
                input.extend_from_slice(&bytes);
                let (whole, _) = parse_split(&input, vec![], 1000);
                let (split, _) = parse_split(&input, steps, 1000);
                prop_assert_eq!(whole, split);
            }
        }
    }
}

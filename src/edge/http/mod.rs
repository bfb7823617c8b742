//! HTTP/1.1 server framing for `fcm serve`: read a request head, then (once the request is
//! admitted) its body, and write response heads. Just what a local proxy needs (keep-alive,
//! Content-Length and chunked request bodies, `Expect: 100-continue`, size limits) and
//! nothing more.
//!
//! Parsing is strict (RFC 9112): `httparse` reads the request line, the headers and chunk
//! sizes, and every ambiguity that could make fcm and a client disagree about where a
//! request ends (two Content-Lengths, Content-Length beside Transfer-Encoding, folded lines,
//! bare CRs) is refused and the connection closed, never guessed at. Reading is over any
//! `BufRead`: timeouts belong to the connection (`edge::client`), not to the framing.
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
///
/// The method, the target and every header live in one string, each found by its span:
/// a string per name and value cost two allocations a header, most of a small request's.
#[derive(Clone, PartialEq, Eq)]
pub struct Head {
    /// The method, the target, then each header's name (lower-cased) and value (without
    /// surrounding whitespace), end to end.
    text: String,
    /// Where the method ends and the target begins.
    method_end: u32,
    /// Where the target ends and the first header begins.
    target_end: u32,
    /// Each header's name end and value end in `text`, in order; a name begins where the
    /// one before it ends.
    headers: Vec<(u32, u32)>,
    /// The client may send another request on this connection.
    pub keep_alive: bool,
    framing: Framing,
    /// `Expect: 100-continue` on HTTP/1.1: the client waits for `100 Continue` before the body.
    expects_continue: bool,
}

impl std::fmt::Debug for Head {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Head")
            .field("method", &self.method())
            .field("target", &self.target())
            .field("headers", &self.headers().collect::<Vec<_>>())
            .field("keep_alive", &self.keep_alive)
            .finish_non_exhaustive()
    }
}

/// How the body of a request is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    None,
    Length(u64),
    Chunked,
}

impl Head {
    pub fn method(&self) -> &str {
        &self.text[..self.method_end as usize]
    }

    /// Path and query, as sent (`/v1/messages?beta=true`).
    pub fn target(&self) -> &str {
        &self.text[self.method_end as usize..self.target_end as usize]
    }

    /// Header names lower-cased, in order, each with its value (without surrounding
    /// whitespace).
    pub fn headers(&self) -> impl Iterator<Item = (&str, &str)> {
        let mut at = self.target_end as usize;
        self.headers.iter().map(move |&(name_end, value_end)| {
            let (name_end, value_end) = (name_end as usize, value_end as usize);
            let header = (&self.text[at..name_end], &self.text[name_end..value_end]);
            at = value_end;
            header
        })
    }

    /// The first value of the header `name` (lower-case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers().find(|(k, _)| *k == name).map(|(_, v)| v)
    }

    /// Every value of the header `name` (lower-case), in order.
    fn values<'h>(&'h self, name: &'h str) -> impl Iterator<Item = &'h str> + 'h {
        self.headers()
            .filter(move |(k, _)| *k == name)
            .map(|(_, v)| v)
    }

    pub fn path(&self) -> &str {
        self.target().split('?').next().unwrap_or("")
    }

    /// A query parameter's raw value.
    /// A query parameter's value, percent-decoded (`p%2Fm%23x` is `p/m#x`).
    pub fn query(&self, name: &str) -> Option<String> {
        let q = self.target().split_once('?')?.1;
        q.split('&').find_map(|kv| {
            kv.split_once('=')
                .filter(|(k, _)| *k == name)
                .map(|(_, v)| {
                    percent_encoding::percent_decode_str(&v.replace('+', " "))
                        .decode_utf8_lossy()
                        .into_owned()
                })
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
    // Usually the whole head is in the reader's buffer already: parsed there, not copied.
    let available = r.fill_buf()?;
    if let Some(end) = head_end(available, 0).filter(|end| *end <= MAX_HEAD) {
        let head = parse_head(&available[..end]);
        r.consume(end);
        return head;
    }
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
    // Left uninitialised: httparse fills what it uses, and writing out 128 empty headers
    // (4 KiB) for every request cost more than the parse of a short head.
    let mut slots =
        [const { std::mem::MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_HEADERS];
    let mut parsed = httparse::Request::new(&mut []);
    match parsed.parse_with_uninit_headers(bytes, &mut slots) {
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
    let method = parsed.method.unwrap_or_default();
    let target = parsed.path.unwrap_or_default();
    let size = method.len()
        + target.len()
        + parsed
            .headers
            .iter()
            .map(|h| h.name.len() + h.value.len())
            .sum::<usize>();
    let mut text = String::with_capacity(size);
    text.push_str(method);
    text.push_str(target);
    let mut spans = Vec::with_capacity(parsed.headers.len());
    for h in parsed.headers.iter() {
        // Names are tokens (ASCII), values may hold any byte: non-UTF-8 ones are replaced.
        text.extend(h.name.chars().map(|c| c.to_ascii_lowercase()));
        let name_end = text.len();
        text.push_str(String::from_utf8_lossy(h.value).trim_matches([' ', '\t']));
        spans.push((name_end as u32, text.len() as u32));
    }
    let mut head = Head {
        method_end: method.len() as u32,
        target_end: (method.len() + target.len()) as u32,
        text,
        headers: spans,
        keep_alive: false,
        framing: Framing::None,
        expects_continue: false,
    };
    match head.values("host").count() {
        0 if http11 => return Err(malformed("an HTTP/1.1 request without a Host header")),
        0 | 1 => {}
        _ => return Err(malformed("more than one Host header")),
    }
    // Two lengths are enough to refuse several; none or one is the rule.
    let mut lengths = [""; 2];
    let mut n_lengths = 0;
    for length in head.values("content-length").take(2) {
        lengths[n_lengths] = length;
        n_lengths += 1;
    }
    let codings: Vec<&str> = head.values("transfer-encoding").collect();
    let framing = framing(&lengths[..n_lengths], &codings, http11)?;
    let mut expects_continue = false;
    for expect in head.values("expect") {
        if !expect.eq_ignore_ascii_case("100-continue") {
            return Err(ReadError::UnsupportedExpectation(expect.to_string()));
        }
        // An HTTP/1.0 client cannot have asked for it (RFC 9110 §10.1.1).
        expects_continue = http11;
    }
    let connection: Vec<&str> = head.values("connection").collect();
    let connection = tokens(&connection);
    let keep_alive = if http11 {
        !connection.iter().any(|t| t == "close")
    } else {
        connection.iter().any(|t| t == "keep-alive")
    };
    head.framing = framing;
    head.expects_continue = expects_continue;
    head.keep_alive = keep_alive;
    Ok(head)
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
    let mut lines = String::new();
    for (k, v) in headers {
        header_line(&mut lines, k, v);
    }
    let mut out = Vec::with_capacity(lines.len() + 96);
    write_head(&mut out, status, &lines, length, keep_alive);
    out
}

/// Appends a `name: value` line to a head's header lines.
pub fn header_line(lines: &mut String, name: &str, value: &str) {
    lines.push_str(name);
    lines.push_str(": ");
    lines.push_str(value);
    lines.push_str("\r\n");
}

/// Appends a response head to `out`: the status line, `lines` (`name: value\r\n` each, as
/// [`header_line`] writes them), then the framing; `length: None` means a chunked body.
pub fn write_head(
    out: &mut Vec<u8>,
    status: u16,
    lines: &str,
    length: Option<usize>,
    keep_alive: bool,
) {
    use std::io::Write as _;
    let _ = write!(out, "HTTP/1.1 {status} {}\r\n", reason(status));
    out.extend_from_slice(lines.as_bytes());
    if !keep_alive {
        out.extend_from_slice(b"connection: close\r\n");
    }
    match length {
        Some(n) => {
            let _ = write!(out, "content-length: {n}\r\n\r\n");
        }
        None => out.extend_from_slice(b"transfer-encoding: chunked\r\n\r\n"),
    }
}

/// Appends `bytes` as one chunk of a chunked body (nothing for empty input: an empty chunk
/// would end the body).
pub fn chunk(bytes: &[u8], out: &mut Vec<u8>) {
    if bytes.is_empty() {
        return;
    }
    let _ = std::io::Write::write_fmt(out, format_args!("{:x}\r\n", bytes.len()));
    out.extend_from_slice(bytes);
    out.extend_from_slice(b"\r\n");
}

/// The end of a chunked body.
pub const LAST_CHUNK: &[u8] = b"0\r\n\r\n";

#[cfg(test)]
mod tests;

//! HTTP/1.1 server framing for `fcm serve`: read one request from a connection, write a
//! response head. Just what a local proxy needs (keep-alive, Content-Length and chunked
//! request bodies, `Expect: 100-continue`, size limits) and nothing more.
//!
//! fcm first used tiny_http here. Its connection pool can leave a freshly accepted
//! connection waiting until some other connection closes (a lost wake-up when several
//! connections arrive together), which a burst of agent requests hits; so the server owns
//! its accept loop and gives every connection its own thread.

use std::io::{self, BufRead, Read, Write};

/// Longest request line or header line.
const MAX_LINE: usize = 16 * 1024;
/// Most header lines in one request.
const MAX_HEADERS: usize = 128;

/// One request, body included.
#[derive(Debug, Clone, Default)]
pub struct Request {
    pub method: String,
    /// Path and query, as sent (`/v1/messages?beta=true`).
    pub target: String,
    /// Header names lower-cased, in order.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// The client may send another request on this connection.
    pub keep_alive: bool,
}

impl Request {
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

/// Why no request could be read.
#[derive(Debug)]
pub enum ReadError {
    /// The client closed the connection (or stayed idle too long) between requests.
    Closed,
    /// The declared or received body is over the limit; it was not read.
    TooLarge(usize),
    /// Not HTTP we understand; the message says what.
    Malformed(String),
    /// The connection failed while reading.
    Io,
}

impl From<io::Error> for ReadError {
    fn from(_: io::Error) -> Self {
        ReadError::Io
    }
}

/// Reads a line ending in `\n` (without it), refusing lines over [`MAX_LINE`].
fn read_line(r: &mut impl BufRead, buf: &mut Vec<u8>) -> Result<usize, ReadError> {
    buf.clear();
    let n = r.take(MAX_LINE as u64 + 1).read_until(b'\n', buf)?;
    if n > MAX_LINE {
        return Err(ReadError::Malformed("header line too long".into()));
    }
    while buf.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
        buf.pop();
    }
    Ok(n)
}

/// Reads the next request. `interim` receives `100 Continue` when the client waits for it.
pub fn read_request(
    r: &mut impl BufRead,
    interim: &mut impl Write,
    max_body: usize,
) -> Result<Request, ReadError> {
    let mut line = Vec::new();
    // Tolerate blank lines between requests (RFC 9112 §2.2).
    loop {
        if read_line(r, &mut line)? == 0 {
            return Err(ReadError::Closed);
        }
        if !line.is_empty() {
            break;
        }
    }
    let text = String::from_utf8_lossy(&line).into_owned();
    let mut parts = text.split(' ');
    let (Some(method), Some(target), Some(version)) = (parts.next(), parts.next(), parts.next())
    else {
        return Err(ReadError::Malformed(format!("bad request line {text:?}")));
    };
    let http11 = match version {
        "HTTP/1.1" => true,
        "HTTP/1.0" => false,
        _ => {
            return Err(ReadError::Malformed(format!(
                "unsupported version {version:?}"
            )))
        }
    };
    let mut req = Request {
        method: method.to_string(),
        target: target.to_string(),
        ..Default::default()
    };
    loop {
        if read_line(r, &mut line)? == 0 {
            return Err(ReadError::Malformed(
                "connection closed inside the headers".into(),
            ));
        }
        if line.is_empty() {
            break;
        }
        if req.headers.len() == MAX_HEADERS {
            return Err(ReadError::Malformed("too many headers".into()));
        }
        let l = String::from_utf8_lossy(&line);
        let (k, v) = l
            .split_once(':')
            .ok_or_else(|| ReadError::Malformed(format!("bad header line {l:?}")))?;
        req.headers
            .push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
    }
    let connection = req
        .header("connection")
        .map(str::to_ascii_lowercase)
        .unwrap_or_default();
    req.keep_alive = if http11 {
        !connection.contains("close")
    } else {
        connection.contains("keep-alive")
    };
    let chunked = req
        .header("transfer-encoding")
        .is_some_and(|t| t.to_ascii_lowercase().contains("chunked"));
    let length = match req.header("content-length") {
        Some(v) => Some(
            v.parse::<usize>()
                .map_err(|_| ReadError::Malformed(format!("bad content-length {v:?}")))?,
        ),
        None => None,
    };
    if let Some(n) = length.filter(|n| *n > max_body) {
        return Err(ReadError::TooLarge(n));
    }
    if (chunked || length.unwrap_or(0) > 0)
        && req
            .header("expect")
            .is_some_and(|e| e.eq_ignore_ascii_case("100-continue"))
    {
        interim.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
        interim.flush()?;
    }
    if chunked {
        req.body = read_chunked(r, max_body)?;
    } else if let Some(n) = length {
        let mut body = vec![0; n];
        r.read_exact(&mut body)?;
        req.body = body;
    }
    Ok(req)
}

fn read_chunked(r: &mut impl BufRead, max_body: usize) -> Result<Vec<u8>, ReadError> {
    let mut body = Vec::new();
    let mut line = Vec::new();
    loop {
        read_line(r, &mut line)?;
        let size_text = String::from_utf8_lossy(&line);
        let size_text = size_text.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size_text, 16)
            .map_err(|_| ReadError::Malformed(format!("bad chunk size {size_text:?}")))?;
        if size == 0 {
            // Trailers, then the blank line.
            while read_line(r, &mut line)? > 0 && !line.is_empty() {}
            return Ok(body);
        }
        if size > max_body.saturating_sub(body.len()) {
            return Err(ReadError::TooLarge(body.len().saturating_add(size)));
        }
        let start = body.len();
        body.resize(start + size, 0);
        r.read_exact(&mut body[start..])?;
        read_line(r, &mut line)?;
        if !line.is_empty() {
            return Err(ReadError::Malformed(
                "chunk data longer than its size".into(),
            ));
        }
    }
}

pub fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        405 => "Method Not Allowed",
        413 => "Payload Too Large",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Status",
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

    /// A reader that hands out at most `step` bytes per read, like a slow socket.
    struct Trickle<'a> {
        data: &'a [u8],
        step: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = self.step.min(buf.len()).min(self.data.len());
            buf[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    fn parse_all(input: &[u8], step: usize, max: usize) -> (Vec<Result<Request, String>>, Vec<u8>) {
        let mut r = BufReader::with_capacity(7, Trickle { data: input, step });
        let mut interim = Vec::new();
        let mut out = Vec::new();
        loop {
            match read_request(&mut r, &mut interim, max) {
                Ok(req) => out.push(Ok(req)),
                Err(ReadError::Closed) => break,
                Err(e) => {
                    out.push(Err(format!("{e:?}")));
                    break;
                }
            }
        }
        (out, interim)
    }

    #[test]
    fn keep_alive_requests_in_any_read_sizes() {
        let input = b"POST /v1/messages?beta=true HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nX-Api-Key: k\r\n\r\nhello\
GET /health HTTP/1.1\r\nConnection: close\r\n\r\n";
        for step in 1..=input.len() {
            let (reqs, _) = parse_all(input, step, 100);
            assert_eq!(reqs.len(), 2, "step {step}");
            let a = reqs[0].as_ref().unwrap();
            assert_eq!(
                (a.method.as_str(), a.path(), a.query("beta")),
                ("POST", "/v1/messages", Some("true"))
            );
            assert_eq!(
                (a.body.as_slice(), a.header("x-api-key"), a.keep_alive),
                (&b"hello"[..], Some("k"), true)
            );
            let b = reqs[1].as_ref().unwrap();
            assert_eq!(
                (b.path(), b.keep_alive, b.body.len()),
                ("/health", false, 0)
            );
        }
    }

    #[test]
    fn chunked_bodies_and_continue() {
        let input = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nTrailer: x\r\n\r\n";
        let (reqs, interim) = parse_all(input, 3, 100);
        assert_eq!(reqs[0].as_ref().unwrap().body, b"hello world");
        assert_eq!(interim, b"HTTP/1.1 100 Continue\r\n\r\n");
    }

    #[test]
    fn limits_and_garbage() {
        let (reqs, interim) = parse_all(
            b"POST / HTTP/1.1\r\nContent-Length: 101\r\nExpect: 100-continue\r\n\r\n",
            64,
            100,
        );
        assert!(matches!(&reqs[0], Err(e) if e.contains("TooLarge(101)")));
        assert!(
            interim.is_empty(),
            "no 100 Continue for a body that will be refused"
        );
        let (reqs, _) = parse_all(
            b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n80\r\n",
            64,
            100,
        );
        assert!(matches!(&reqs[0], Err(e) if e.contains("TooLarge")));
        for bad in [
            &b"NONSENSE\r\n\r\n"[..],
            b"GET / HTTP/2\r\n\r\n",
            b"GET / HTTP/1.1\r\nno colon\r\n\r\n",
            b"POST / HTTP/1.1\r\nContent-Length: x\r\n\r\n",
        ] {
            let (reqs, _) = parse_all(bad, 64, 100);
            assert!(
                matches!(&reqs[0], Err(e) if e.contains("Malformed")),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
        let long = format!("GET /{} HTTP/1.1\r\n\r\n", "a".repeat(MAX_LINE));
        assert!(
            matches!(&parse_all(long.as_bytes(), 4096, 100).0[0], Err(e) if e.contains("too long"))
        );
    }

    #[test]
    fn http10_closes_unless_asked() {
        let (reqs, _) = parse_all(b"GET / HTTP/1.0\r\n\r\n", 64, 10);
        assert!(!reqs[0].as_ref().unwrap().keep_alive);
        let (reqs, _) = parse_all(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", 64, 10);
        assert!(reqs[0].as_ref().unwrap().keep_alive);
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
}

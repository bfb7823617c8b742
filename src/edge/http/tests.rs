//! Request framing: splits, limits, refusals, and properties over generated requests.

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

fn parse_all(input: &[u8], step: usize, max: usize) -> (Vec<Result<Request, ReadError>>, Vec<u8>) {
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
            (a.head.method(), a.head.path(), a.head.query("beta")),
            ("POST", "/v1/messages", Some("true".to_string()))
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
    let h = String::from_utf8(head(200, &[("x-a".into(), "1".into())], Some(3), false)).unwrap();
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
                prop_assert_eq!(got.head.method(), sent.method.as_str());
                prop_assert_eq!(got.head.target(), sent.target.as_str());
                prop_assert_eq!(&got.body, &sent.body);
                for (k, v) in &sent.headers {
                    prop_assert!(got.head.headers().any(|h| h == (k.as_str(), v.as_str())));
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

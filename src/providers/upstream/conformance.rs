//! The provider client's HTTP/1.1 framing held to a maintained implementation: ureq-proto
//! (ureq's own sans-IO protocol crate) reads the same random answers, split anywhere, and
//! both must agree on the status, the body, where the answer ends and whether the
//! connection may be reused. Where fcm is stricter on purpose (both framing headers, an
//! upgrade), the cases say so. `framing_cost` (ignored: a measurement, not a check) shows
//! why fcm frames by itself on its hottest path; ARCHITECTURE.md carries its figures.

use proptest::prelude::*;
use ureq_proto::client::{Call, RecvBodyResult, RecvResponseResult, SendRequestResult};
use ureq_proto::http::Request;

use super::http1::{is_interim, parse_head, Chunked, Framing};

/// What a reader made of an answer: its final status, its body, the bytes of the input
/// it used, and whether the connection may carry another request.
#[derive(Debug, PartialEq, Eq)]
struct Read {
    status: u16,
    body: Vec<u8>,
    used: usize,
    reusable: bool,
}

/// The pieces `wire` arrives in: sizes from `splits`, in turn.
fn arrivals(wire: &[u8], splits: &[usize]) -> Vec<usize> {
    let mut ends = Vec::new();
    let mut at = 0;
    for size in splits.iter().cycle() {
        if at == wire.len() {
            break;
        }
        at = (at + size.max(&1)).min(wire.len());
        ends.push(at);
    }
    ends
}

/// fcm's client: heads as they complete (interim ones passed over), then the body.
fn ours(wire: &[u8], splits: &[usize]) -> Result<Read, String> {
    let ends = arrivals(wire, splits);
    let mut arrived = ends.iter().copied();
    let mut have = arrived.next().unwrap_or(0);
    let mut at = 0;
    let head = loop {
        match parse_head(&wire[at..have], |_, _| {}).map_err(|e| e.0)? {
            Some(h) if is_interim(h.status) => at += h.len,
            Some(h) => {
                at += h.len;
                break h;
            }
            None => have = arrived.next().ok_or("the head never completed")?,
        }
    };
    let mut body = Vec::new();
    match head.framing {
        Framing::Length(n) => {
            while ((have - at) as u64) < n {
                have = arrived.next().ok_or("the body was cut")?;
            }
            body.extend_from_slice(&wire[at..at + n as usize]);
            at += n as usize;
        }
        Framing::Chunked(mut state) => {
            let mut out = [0u8; 11];
            while state != Chunked::Done {
                let (used, made) = state.decode(&wire[at..have], &mut out).map_err(|e| e.0)?;
                at += used;
                body.extend_from_slice(&out[..made]);
                if made == 0 && state != Chunked::Done {
                    have = arrived.next().ok_or("the body never ended")?;
                }
            }
        }
        Framing::Close => return Err("read to the close".into()),
    }
    Ok(Read {
        status: head.status,
        body,
        used: at,
        reusable: head.reusable,
    })
}

/// ureq-proto's client on the same pieces, after a GET (no request body to send).
fn theirs(wire: &[u8], splits: &[usize]) -> Result<Read, String> {
    let request = Request::get("http://provider.test/v1/models")
        .body(())
        .map_err(|e| e.to_string())?;
    let mut call = Call::new(request).map_err(|e| e.to_string())?.proceed();
    let mut scratch = vec![0u8; 1024];
    call.write(&mut scratch).map_err(|e| e.to_string())?;
    let Ok(Some(SendRequestResult::RecvResponse(mut call))) = call.proceed() else {
        return Err("no response state".into());
    };
    let ends = arrivals(wire, splits);
    let mut arrived = ends.iter().copied();
    let mut have = arrived.next().unwrap_or(0);
    let mut at = 0;
    let status = loop {
        let (used, response) = call
            .try_response(&wire[at..have], false)
            .map_err(|e| e.to_string())?;
        at += used;
        match response {
            Some(r) => break r.status().as_u16(),
            None if used > 0 => {}
            None => have = arrived.next().ok_or("the head never completed")?,
        }
    };
    let mut body = Vec::new();
    let cleanup = match call.proceed().ok_or("no state after the head")? {
        RecvResponseResult::RecvBody(mut call) => {
            let mut out = [0u8; 11];
            while !call.can_proceed() {
                let (used, made) = call
                    .read(&wire[at..have], &mut out)
                    .map_err(|e| e.to_string())?;
                at += used;
                body.extend_from_slice(&out[..made]);
                if used == 0 && made == 0 && !call.can_proceed() {
                    have = arrived.next().ok_or("the body never ended")?;
                }
            }
            match call.proceed().ok_or("no state after the body")? {
                RecvBodyResult::Cleanup(c) => c,
                RecvBodyResult::Redirect(_) => return Err("a redirect".into()),
            }
        }
        RecvResponseResult::Cleanup(c) => c,
        RecvResponseResult::Redirect(_) => return Err("a redirect".into()),
    };
    Ok(Read {
        status,
        body,
        used: at,
        reusable: !cleanup.must_close_connection(),
    })
}

/// How a generated answer is framed.
#[derive(Debug, Clone)]
enum Frame {
    Length,
    /// Chunks of these sizes, each size line with an extension or not, then trailers.
    Chunks {
        sizes: Vec<usize>,
        extensions: bool,
        trailers: bool,
    },
}

fn frame() -> impl Strategy<Value = Frame> {
    prop_oneof![
        Just(Frame::Length),
        (
            proptest::collection::vec(1usize..70, 1..6),
            any::<bool>(),
            any::<bool>()
        )
            .prop_map(|(sizes, extensions, trailers)| Frame::Chunks {
                sizes,
                extensions,
                trailers
            }),
    ]
}

/// An answer as a provider might send it: `interim` 1xx heads, then the final one with
/// its framing, the body, and `after` (bytes of whatever follows on the connection).
fn answer(
    interim: &[u16],
    status: u16,
    close: bool,
    frame: &Frame,
    body: &[u8],
    after: &[u8],
) -> Vec<u8> {
    let mut out = Vec::new();
    for code in interim {
        // ureq-proto refuses a `100 Continue` with headers; early hints carry some.
        let hints = if *code == 100 { "" } else { "Link: </a>\r\n" };
        out.extend_from_slice(format!("HTTP/1.1 {code} Info\r\n{hints}\r\n").as_bytes());
    }
    out.extend_from_slice(format!("HTTP/1.1 {status} X\r\nServer: p\r\n").as_bytes());
    if close {
        out.extend_from_slice(b"Connection: close\r\n");
    }
    match frame {
        Frame::Length => {
            out.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
            out.extend_from_slice(body);
        }
        Frame::Chunks {
            sizes,
            extensions,
            trailers,
        } => {
            out.extend_from_slice(b"Transfer-Encoding: chunked\r\n\r\n");
            let mut rest = body;
            for size in sizes.iter().cycle() {
                if rest.is_empty() {
                    break;
                }
                let n = (*size).min(rest.len());
                let ext = if *extensions { ";x=\"1\"" } else { "" };
                out.extend_from_slice(format!("{n:X}{ext}\r\n").as_bytes());
                out.extend_from_slice(&rest[..n]);
                out.extend_from_slice(b"\r\n");
                rest = &rest[n..];
            }
            out.extend_from_slice(b"0\r\n");
            if *trailers {
                out.extend_from_slice(b"X-Checksum: 1\r\n");
            }
            out.extend_from_slice(b"\r\n");
        }
    }
    out.extend_from_slice(after);
    out
}

proptest! {
    #[test]
    fn fcm_frames_answers_as_ureq_proto_does(
        interim in proptest::collection::vec(prop_oneof![Just(100u16), Just(102), Just(103)], 0..3),
        status in prop_oneof![Just(200u16), Just(400), Just(429), Just(503)],
        close in any::<bool>(),
        frame in frame(),
        body in proptest::collection::vec(any::<u8>(), 0..400),
        after in proptest::collection::vec(any::<u8>(), 0..30),
        splits in proptest::collection::vec(1usize..60, 1..8),
    ) {
        let wire = answer(&interim, status, close, &frame, &body, &after);
        let fcm = ours(&wire, &splits);
        let reference = theirs(&wire, &splits);
        prop_assert_eq!(&fcm, &reference);
        let fcm = fcm.unwrap();
        prop_assert_eq!(fcm.body, body);
        prop_assert_eq!(fcm.used, wire.len() - after.len());
    }
}

#[test]
fn fcm_is_stricter_than_ureq_proto_where_a_peer_is_confused() {
    let whole = [usize::MAX];
    // Both framing headers: read as chunked by both; fcm does not reuse the connection.
    let both = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n\
                 2\r\nhi\r\n0\r\n\r\n";
    let (fcm, reference) = (ours(both, &whole).unwrap(), theirs(both, &whole).unwrap());
    assert_eq!(
        (fcm.body.as_slice(), reference.body.as_slice()),
        (&b"hi"[..], &b"hi"[..])
    );
    assert!(reference.reusable && !fcm.reusable, "{fcm:?} {reference:?}");
    // A length with a sign is no length to fcm.
    let signed = b"HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\nhi";
    assert!(ours(signed, &whole).is_err());
    // An upgrade: the connection speaks another protocol after it.
    let upgrade = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n";
    let head = parse_head(upgrade, |_, _| {}).unwrap().unwrap();
    assert!(!head.reusable);
}

/// Microseconds of CPU per exchange, fcm's framing beside ureq-proto's, on one streamed
/// answer as providers send them (15 headers, 40 chunked events) after a 20 kB POST.
/// `cargo test --release framing_cost -- --ignored --nocapture`
#[test]
#[ignore = "a measurement: run it by name"]
fn framing_cost() {
    let mut wire = b"HTTP/1.1 200 OK\r\nDate: Sat, 05 Dec 2026 00:00:00 GMT\r\n\
        Content-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\nConnection: keep-alive\r\n\
        x-ratelimit-limit-requests: 30\r\nx-ratelimit-remaining-requests: 29\r\n\
        x-ratelimit-reset-requests: 2s\r\nx-ratelimit-limit-tokens: 6000\r\n\
        x-ratelimit-remaining-tokens: 5800\r\nx-request-id: req_0123456789\r\n\
        cf-ray: 8f00000000-AMS\r\nserver: cloudflare\r\nvary: Origin\r\ncache-control: no-cache\r\n\r\n"
        .to_vec();
    for i in 0..40 {
        let event =
            format!("data: {{\"choices\":[{{\"delta\":{{\"content\":\"token {i} \"}}}}]}}\n\n");
        wire.extend_from_slice(format!("{:x}\r\n{event}\r\n", event.len()).as_bytes());
    }
    wire.extend_from_slice(b"0\r\n\r\n");
    let body = vec![b'x'; 20_000];
    let headers = [
        ("Authorization", "Bearer 0123456789abcdef"),
        ("Content-Type", "application/json"),
        ("Accept", "text/event-stream"),
        ("User-Agent", "fcm"),
    ];
    let mut out = Vec::new();
    let mut buf = vec![0u8; 16 * 1024];
    let mut fcm = || {
        out.clear();
        super::http1::post(&mut out, "/v1/chat/completions", "p.test", headers, &body).unwrap();
        let head = parse_head(&wire, |_, _| {}).unwrap().unwrap();
        let Framing::Chunked(mut state) = head.framing else {
            panic!("chunked")
        };
        let (mut at, mut total) = (head.len, 0);
        while state != Chunked::Done {
            let (used, made) = state.decode(&wire[at..], &mut buf).unwrap();
            at += used;
            total += made;
        }
        total
    };
    let mut out2 = vec![0u8; 24 * 1024];
    let mut buf2 = vec![0u8; 16 * 1024];
    let mut reference = || {
        let mut request = Request::post("http://p.test/v1/chat/completions");
        for (name, value) in headers {
            request = request.header(name, value);
        }
        let request = request
            .header("Content-Length", body.len().to_string())
            .body(())
            .unwrap();
        let mut call = Call::new(request).unwrap().proceed();
        let n = call.write(&mut out2).unwrap();
        let Ok(Some(SendRequestResult::SendBody(mut call))) = call.proceed() else {
            panic!("a body to send")
        };
        call.write(&body, &mut out2[n..]).unwrap();
        let mut call = call.proceed().unwrap();
        let (mut at, _) = call.try_response(&wire, false).unwrap();
        let Some(RecvResponseResult::RecvBody(mut call)) = call.proceed() else {
            panic!("a body")
        };
        let mut total = 0;
        while !call.can_proceed() {
            let (used, made) = call.read(&wire[at..], &mut buf2).unwrap();
            at += used;
            total += made;
        }
        total
    };
    assert_eq!(fcm(), reference());
    let rounds = 50_000;
    for round in 0..3 {
        let start = std::time::Instant::now();
        (0..rounds).for_each(|_| assert!(fcm() > 0));
        let ours = start.elapsed().as_secs_f64() * 1e6 / f64::from(rounds);
        let start = std::time::Instant::now();
        (0..rounds).for_each(|_| assert!(reference() > 0));
        let theirs = start.elapsed().as_secs_f64() * 1e6 / f64::from(rounds);
        println!("round {round}: fcm {ours:.2} us, ureq-proto {theirs:.2} us per exchange");
    }
}

//! A provider that misbehaves at the HTTP level, scripted over raw TCP on loopback: interim
//! answers and their headers, an upgrade, a connection closed while idle in fcm's pool, both
//! framing headers. Each scripted provider serves a bounded number of connections and stops
//! by itself; every read has a timeout.

mod support;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::json;
use support::*;

/// What the scripted provider does with a request: the `n`th on connection `conn`.
enum Act {
    /// Writes these bytes and keeps the connection for another request.
    Answer(String),
    /// Writes these bytes and closes.
    AnswerAndClose(String),
    /// Closes without a byte (a provider's idle timeout racing the request).
    Close,
    /// Writes the first bytes, then `piece` every `every`, `times` times, then closes.
    Trickle {
        first: String,
        piece: String,
        times: usize,
        every: Duration,
    },
}

/// A scripted provider: its base URL, and the requests it read as (connection, model).
struct Scripted {
    url: String,
    seen: Arc<Mutex<Vec<(usize, String)>>>,
    _thread: JoinHandle<()>,
}

/// Serves up to `connections` connections, each on a thread of its own, asking `script`
/// what to do with each request.
fn scripted(
    connections: usize,
    script: impl Fn(usize, usize) -> Act + Send + Sync + 'static,
) -> Scripted {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let seen: Arc<Mutex<Vec<(usize, String)>>> = Arc::default();
    let log = seen.clone();
    let script = Arc::new(script);
    let thread = std::thread::spawn(move || {
        for conn in 0..connections {
            let Ok((c, _)) = listener.accept() else {
                return;
            };
            let (log, script) = (log.clone(), script.clone());
            // Each connection on a thread of its own: a slow one does not hold the others.
            std::thread::spawn(move || serve_one(c, conn, &log, &*script));
        }
    });
    Scripted {
        url,
        seen,
        _thread: thread,
    }
}

/// One connection's requests, as the script says.
fn serve_one(
    mut c: TcpStream,
    conn: usize,
    log: &Mutex<Vec<(usize, String)>>,
    script: &(dyn Fn(usize, usize) -> Act + Send + Sync),
) {
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    {
        {
            for n in 0.. {
                let Some(body) = read_request(&mut c) else {
                    break;
                };
                let model = serde_json::from_slice::<serde_json::Value>(&body)
                    .ok()
                    .and_then(|v| v["model"].as_str().map(str::to_string))
                    .unwrap_or_default();
                log.lock().unwrap().push((conn, model));
                match script(conn, n) {
                    Act::Answer(bytes) => {
                        let _ = c.write_all(bytes.as_bytes());
                    }
                    Act::AnswerAndClose(bytes) => {
                        let _ = c.write_all(bytes.as_bytes());
                        break;
                    }
                    Act::Close => break,
                    Act::Trickle {
                        first,
                        piece,
                        times,
                        every,
                    } => {
                        let _ = c.write_all(first.as_bytes());
                        for _ in 0..times {
                            std::thread::sleep(every);
                            if c.write_all(piece.as_bytes()).is_err() {
                                break;
                            }
                        }
                        break;
                    }
                }
            }
        }
    }
}

/// One request's body, read by its `Content-Length`; `None` at the connection's end.
fn read_request(c: &mut TcpStream) -> Option<Vec<u8>> {
    let mut data = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        if let Some(end) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&data[..end]).to_ascii_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            while data.len() < end + 4 + len {
                let n = c.read(&mut buf).ok().filter(|n| *n > 0)?;
                data.extend_from_slice(&buf[..n]);
            }
            return Some(data[end + 4..end + 4 + len].to_vec());
        }
        let n = c.read(&mut buf).ok().filter(|n| *n > 0)?;
        data.extend_from_slice(&buf[..n]);
    }
}

/// A whole JSON answer saying `text`, with `extra` header lines.
fn ok(text: &str, extra: &str) -> String {
    let body = json!({"id": "x", "object": "chat.completion", "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 3, "total_tokens": 6}})
    .to_string();
    format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n{extra}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

fn world_for(url: &str, models: &[&str]) -> World {
    let w = World::new();
    w.catalog(&[("p", url, None, models)]);
    w
}

fn metric(s: &Server, name: &str) -> f64 {
    let text = s.get("/metrics").body;
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.trim().parse().ok())
        .unwrap_or_else(|| panic!("{name} not in /metrics"))
}

#[test]
fn a_pooled_connection_the_provider_closed_is_retried_on_a_new_one() {
    // Connection 0 answers once, then is closed under the next request; connection 1
    // answers everything.
    let p = scripted(3, |conn, n| match (conn, n) {
        (0, 0) => Act::Answer(ok("first", "")),
        (0, _) => Act::Close,
        _ => Act::Answer(ok("again", "")),
    });
    let w = world_for(&p.url, &["m"]);
    let s = w.serve(&[]);
    assert_eq!(s.chat("fcm:p/m", false).status, 200);
    let r = s.chat("fcm:p/m", false);
    assert_eq!(r.status, 200, "{r:?}");
    assert!(r.body.contains("again"), "{r:?}");
    assert_eq!(
        r.header("x-fcm-v2-attempts"),
        Some("1"),
        "one attempt, sent twice"
    );
    let seen = p.seen.lock().unwrap().clone();
    assert_eq!(
        seen.iter().map(|(c, _)| *c).collect::<Vec<_>>(),
        [0, 0, 1],
        "the second request reached connection 0 unanswered, then a new one"
    );
    assert_eq!(metric(&s, "fcm_upstream_stale_retries_total"), 1.0);
}

#[test]
fn interim_answers_are_skipped_bounded_and_their_headers_ignored() {
    // A 100 that says Retry-After: 3600 and a 103 that says the stream is an event stream,
    // before a 429 that says 2 seconds; then 3 interim answers before a 200; then a flood.
    let p = scripted(4, |conn, _| {
        match conn {
        0 => Act::AnswerAndClose(
            "HTTP/1.1 100 Continue\r\nRetry-After: 3600\r\n\r\nHTTP/1.1 103 Early Hints\r\nContent-Type: text/event-stream\r\n\r\nHTTP/1.1 429 Too Many Requests\r\nRetry-After: 2\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}".into(),
        ),
        1 => Act::AnswerAndClose(format!(
            "{}{}",
            "HTTP/1.1 103 Early Hints\r\nx-ratelimit-remaining-requests: 0\r\n\r\n".repeat(3),
            ok("past the hints", "")
        )),
        _ => Act::AnswerAndClose(format!(
            "{}{}",
            "HTTP/1.1 103 Early Hints\r\nLink: </x>; rel=preload\r\n\r\n".repeat(500),
            ok("never", "")
        )),
    }
    });
    let w = world_for(&p.url, &["m"]);
    let s = w.serve(&[]);
    let r = s.chat("fcm:p/m", false);
    assert_eq!(r.status, 429, "{r:?}");
    let retry: u64 = r.header("retry-after").unwrap().parse().unwrap();
    assert!(
        retry <= 2,
        "the 429's own Retry-After, not the 100's: {retry}"
    );
    let r = s.chat("fcm:p/m", false);
    assert_eq!(r.status, 200, "{r:?}");
    assert!(r.body.contains("past the hints"));
    // The hints said nothing of the model's budget.
    let row = s.breaker("p/m").unwrap();
    assert_eq!(row["consecutiveFailures"], 0, "{row}");
    let r = s.chat("fcm:p/m", false);
    assert_ne!(
        r.status, 200,
        "a flood of interim answers is no answer: {r:?}"
    );
    assert!(!r.body.contains("never"));
}

#[test]
fn after_an_upgrade_or_both_framing_headers_the_connection_is_not_reused() {
    let p = scripted(4, |conn, _| {
        match conn {
        0 => Act::Answer(
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"
                .into(),
        ),
        1 => Act::Answer(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n"
                .to_string()
                + &{
                    let body = json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": "chunked"}, "finish_reason": "stop"}]}).to_string();
                    format!("{:x}\r\n{body}\r\n0\r\n\r\n", body.len())
                },
        ),
        _ => Act::Answer(ok("fresh", "")),
    }
    });
    let w = world_for(&p.url, &["m"]);
    let s = w.serve(&[]);
    let r = s.chat("fcm:p/m", false);
    assert_ne!(r.status, 200, "{r:?}");
    let r = s.chat("fcm:p/m", false);
    assert_eq!(r.status, 200, "{r:?}");
    assert!(r.body.contains("chunked"), "read as chunked: {r:?}");
    let r = s.chat("fcm:p/m", false);
    assert!(r.body.contains("fresh"), "{r:?}");
    let conns: Vec<usize> = p.seen.lock().unwrap().iter().map(|(c, _)| *c).collect();
    assert_eq!(conns, [0, 1, 2], "each on a connection of its own");
}

#[test]
fn a_stream_that_trickles_bytes_but_no_event_stalls() {
    // One event of content, then a byte of a never-finished event every 100 ms for 6 s.
    let event = json!({"choices": [{"index": 0, "delta": {"content": "Hello there, partial"}}]});
    let p = scripted(1, move |_, _| {
        Act::Trickle {
        first: format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\ndata: {event}\n\n\r\n",
            format!("data: {event}\n\n").len()
        ),
        piece: "1\r\na\r\n".into(),
        times: 60,
        every: Duration::from_millis(100),
    }
    });
    let w = world_for(&p.url, &["m"]);
    w.write_config(&json!({"router": {"failover": {"streamStallTimeoutMs": 1000}}}));
    let s = w.serve(&[]);
    let started = std::time::Instant::now();
    let r = s.chat("fcm:p/m", true);
    let took = started.elapsed();
    assert!(r.body.contains("Hello there, partial"), "{r:?}");
    let entry = s.history().pop().unwrap();
    assert_eq!(entry["attempts"][0]["kind"], "stream_stall", "{entry}");
    // Ended by the stall timer, long before the provider stopped trickling.
    assert!(took < Duration::from_secs(5), "{took:?}");
}

#[test]
fn abandoned_streams_free_their_slots_while_the_provider_pings() {
    // Two streams that send one event of content, then a keep-alive comment every 100 ms
    // for 6 s (alive by the stall timer), and a provider that answers the third request.
    let event = json!({"choices": [{"index": 0, "delta": {"content": "Working on it, long answer ahead"}}]});
    let p = scripted(3, move |conn, _| {
        let first = format!("data: {event}\n\n");
        let ping = ": ping\n\n";
        match conn {
            0 | 1 => Act::Trickle {
                first: format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{first}\r\n",
                    first.len()
                ),
                piece: format!("{:x}\r\n{ping}\r\n", ping.len()),
                times: 60,
                every: Duration::from_millis(100),
            },
            _ => Act::Answer(ok("a slot was free", "")),
        }
    });
    let w = world_for(&p.url, &["m"]);
    let s = w.serve(&["--max-in-flight", "2"]);
    let addr = s.base.trim_start_matches("http://").to_string();
    let body = json!({"model": "fcm:p/m", "stream": true, "messages": [{"role": "user", "content": "hi"}]}).to_string();
    for _ in 0..2 {
        let mut c = TcpStream::connect(&addr).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let req = format!(
            "POST /v1/chat/completions HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        c.write_all(req.as_bytes()).unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        while !String::from_utf8_lossy(&got).contains("Working on it") {
            let n = c.read(&mut buf).unwrap();
            assert!(
                n > 0,
                "the stream ended early: {}",
                String::from_utf8_lossy(&got)
            );
            got.extend_from_slice(&buf[..n]);
        }
        // The client goes away mid-answer.
        drop(c);
    }
    // Both slots come free while the provider still pings: seen in /metrics.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while metric(&s, "fcm_in_flight_requests") > 0.0 {
        assert!(
            std::time::Instant::now() < deadline,
            "abandoned streams still hold their slots"
        );
        std::thread::yield_now();
    }
    let r = s.chat("fcm:p/m", false);
    assert_eq!(r.status, 200, "{r:?}");
    assert!(r.body.contains("a slot was free"));
}

#[test]
fn bytes_after_an_answer_are_never_read_as_the_next_answer() {
    // Connection 0 answers, and a second answer nobody asked for follows in the same write
    // (a desynchronised provider): the connection is not reused for the next request.
    let p = scripted(3, |conn, _| match conn {
        0 => Act::Answer(ok("first", "") + &ok("smuggled", "")),
        _ => Act::Answer(ok("second", "")),
    });
    let w = world_for(&p.url, &["m"]);
    let s = w.serve(&[]);
    let r = s.chat("fcm:p/m", false);
    assert!(r.body.contains("first"), "{r:?}");
    let r = s.chat("fcm:p/m", false);
    assert!(r.body.contains("second"), "{r:?}");
    assert!(!r.body.contains("smuggled"), "{r:?}");
    let conns: Vec<usize> = p.seen.lock().unwrap().iter().map(|(c, _)| *c).collect();
    assert_eq!(conns, [0, 1]);
}

#[test]
fn malformed_huge_or_undeclared_answers_are_failures_and_fcm_keeps_serving() {
    // Provider pa: a head of 2 MB, a chunk size that is not hex, a gzip body fcm did not
    // ask for, each on a connection of its own. Each is a failure in the client's words,
    // none of its bytes reach the client, and the model after it in a set stands in.
    let gzip = [
        0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0xab, 0xae, 0x05, 0x00,
    ];
    let bad = scripted(6, move |conn, _| {
        match conn % 3 {
        0 => Act::AnswerAndClose(format!(
            "HTTP/1.1 200 OK\r\n{}Content-Length: 2\r\n\r\n{{}}",
            "X-Pad: 0123456789012345678901234567890123456789\r\n".repeat(40_000)
        )),
        1 => Act::AnswerAndClose(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n"
                .into(),
        ),
        _ => {
            let mut answer = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\nContent-Length: {}\r\n\r\n",
                gzip.len()
            );
            answer.extend(gzip.iter().map(|b| char::from(*b)));
            Act::AnswerAndClose(answer)
        }
    }
    });
    let good = scripted(3, |_, _| Act::Answer(ok("from b", "")));
    let w = World::new();
    w.catalog(&[
        ("pa", &bad.url, None, &["a"]),
        ("pb", &good.url, None, &["b"]),
    ]);
    w.write_config(&json!({"sets": {"ab": {"strategy": "fallback", "models": ["pa/a", "pb/b"]}}}));
    let s = w.serve(&[]);
    for _ in 0..3 {
        let r = s.chat("fcm:pa/a", false);
        assert!(r.status >= 500, "{r:?}");
        assert!(
            r.body.contains("\"error\""),
            "an error in the client's words: {r:?}"
        );
        assert!(!r.body.contains("X-Pad"), "{r:?}");
    }
    let r = s.chat("ab", false);
    assert_eq!(r.status, 200, "{r:?}");
    assert!(r.body.contains("from b"), "{r:?}");
}

//! `fcm serve` at the byte level, as a hostile or broken client meets it over raw TCP:
//! slow and half-open connections, work done before admission, origins and hosts, strict
//! framing (request smuggling), and config errors that name the setting.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::json;
use support::*;

/// Longest any test waits for the server to answer or close: generous, never asserted as a
/// speed.
const PATIENCE: Duration = Duration::from_secs(10);

/// `host:port` of a running server.
fn address(s: &Server) -> String {
    s.base.trim_start_matches("http://").to_string()
}

fn connect(s: &Server) -> TcpStream {
    let c = TcpStream::connect(address(s)).unwrap();
    c.set_read_timeout(Some(PATIENCE)).unwrap();
    c
}

/// Everything the server sends until it closes the connection; panics when it does not
/// close within [`PATIENCE`].
fn until_closed(c: &mut TcpStream) -> String {
    let mut out = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    loop {
        match c.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            // A reset after the answer also means closed.
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
            Err(e) => panic!(
                "the connection was not closed ({e}); got so far: {}",
                String::from_utf8_lossy(&out)
            ),
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Sends `bytes` on a new connection and returns all the server answers before closing.
fn exchange(s: &Server, bytes: &[u8]) -> String {
    let mut c = connect(s);
    c.write_all(bytes).unwrap();
    until_closed(&mut c)
}

/// Reads one response head (through its blank line) from `c`.
fn read_head(c: &mut TcpStream) -> String {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match c.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            other => panic!(
                "no complete response head ({other:?}): {}",
                String::from_utf8_lossy(&head)
            ),
        }
    }
    String::from_utf8(head).unwrap()
}

/// Writes one byte of `bytes` every 200 ms on a clone of `c` until they run out, the
/// connection breaks or [`PATIENCE`] has passed.
fn trickle(c: &TcpStream, bytes: Vec<u8>) -> std::thread::JoinHandle<()> {
    let mut w = c.try_clone().unwrap();
    std::thread::spawn(move || {
        let start = Instant::now();
        for b in bytes {
            if start.elapsed() > PATIENCE || w.write_all(&[b]).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    })
}

/// The status lines of the responses in `raw`, read one after another by their
/// Content-Length (a smuggled answer shows up as a second one).
fn status_lines(raw: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut rest = raw;
    while let Some((head, after)) = rest.split_once("\r\n\r\n") {
        lines.push(head.lines().next().unwrap_or(""));
        let length = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length: "))
            .and_then(|n| n.parse::<usize>().ok())
            .unwrap_or(0);
        rest = after.get(length..).unwrap_or("");
    }
    lines
}

fn server_with_timeouts(request_ms: u64, idle_ms: u64, args: &[&str]) -> (World, Server) {
    let w = World::new();
    ordered(&w, "http://127.0.0.1:9/v1", &["ok"]);
    w.write_config(&json!({"serve": {"requestTimeoutMs": request_ms, "idleTimeoutMs": idle_ms}}));
    let s = w.serve(args);
    (w, s)
}

#[test]
fn half_open_connections_are_shed_so_a_real_request_gets_in() {
    // One request in flight allows 4 connections; twelve clients connect and never finish a
    // request head.
    let w = World::new();
    ordered(&w, "http://127.0.0.1:9/v1", &["ok"]);
    let s = w.serve(&["--max-in-flight", "1"]);
    let host = address(&s);
    let mut idle: Vec<TcpStream> = Vec::new();
    for i in 0..12 {
        let mut c = connect(&s);
        if i % 2 == 0 {
            write!(c, "GET /health HTTP/1.1\r\nHost: {host}\r\n").unwrap();
        }
        idle.push(c);
    }
    for _ in 0..3 {
        let answer = exchange(
            &s,
            format!("GET /health HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").as_bytes(),
        );
        assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer}");
        assert!(answer.contains("\"status\":\"ok\""), "{answer}");
    }
    // The oldest ones were closed to make room; the server was never full of real requests.
    let closed = until_closed(&mut idle[0]);
    assert_eq!(closed, "", "a shed connection is closed without an answer");
}

#[test]
fn a_server_full_of_requests_in_progress_answers_503() {
    let w = World::new();
    ordered(&w, "http://127.0.0.1:9/v1", &["ok"]);
    let s = w.serve(&["--max-in-flight", "1"]);
    let host = address(&s);
    // Four requests whose bodies are still to come hold all four slots: `100 Continue` says
    // each head was read and admitted.
    let busy: Vec<TcpStream> = (0..4)
        .map(|_| {
            let mut c = connect(&s);
            write!(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: {host}\r\nExpect: 100-continue\r\nContent-Length: 10\r\n\r\n").unwrap();
            assert!(read_head(&mut c).starts_with("HTTP/1.1 100 Continue"));
            c
        })
        .collect();
    let answer = exchange(
        &s,
        format!("GET /health HTTP/1.1\r\nHost: {host}\r\nx-request-id: probe-1\r\n\r\n").as_bytes(),
    );
    assert!(
        answer.starts_with("HTTP/1.1 503 Service Unavailable\r\n"),
        "{answer}"
    );
    assert!(answer.contains("retry-after: 1"), "{answer}");
    assert!(answer.contains("x-request-id: "), "{answer}");
    drop(busy);
}

#[test]
fn a_trickled_body_gets_408_at_the_request_deadline() {
    let (_w, s) = server_with_timeouts(1000, 60_000, &[]);
    let host = address(&s);
    let mut c = connect(&s);
    write!(
        c,
        "POST /v1/chat/completions HTTP/1.1\r\nHost: {host}\r\nContent-Length: 200\r\n\r\n"
    )
    .unwrap();
    let writer = trickle(&c, vec![b' '; 200]);
    let answer = until_closed(&mut c);
    assert!(
        answer.starts_with("HTTP/1.1 408 Request Timeout\r\n"),
        "{answer}"
    );
    assert!(answer.contains("connection: close"), "{answer}");
    assert!(answer.contains("serve.requestTimeoutMs"), "{answer}");
    writer.join().unwrap();
}

#[test]
fn a_trickled_head_gets_408_too() {
    let (_w, s) = server_with_timeouts(1000, 60_000, &[]);
    let host = address(&s);
    let mut c = connect(&s);
    let head = format!(
        "GET /health HTTP/1.1\r\nHost: {host}\r\nX-Padding: {}\r\n\r\n",
        "x".repeat(200)
    );
    let writer = trickle(&c, head.into_bytes());
    let answer = until_closed(&mut c);
    assert!(
        answer.starts_with("HTTP/1.1 408 Request Timeout\r\n"),
        "{answer}"
    );
    writer.join().unwrap();
}

#[test]
fn an_idle_keep_alive_connection_is_closed() {
    let (_w, s) = server_with_timeouts(30_000, 1000, &[]);
    let host = address(&s);
    let mut c = connect(&s);
    write!(c, "GET /health HTTP/1.1\r\nHost: {host}\r\n\r\n").unwrap();
    let answer = until_closed(&mut c);
    assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer}");
    assert_eq!(status_lines(&answer), ["HTTP/1.1 200 OK"]);
    assert!(
        !answer.contains("connection: close"),
        "kept alive, then closed when idle: {answer}"
    );
}

#[test]
fn out_of_range_serve_timeouts_are_clamped_with_a_warning() {
    let (_w, s) = server_with_timeouts(5, 60_000, &[]);
    let start = Instant::now();
    while !s
        .stderr()
        .contains("serve.requestTimeoutMs = 5 is out of range")
    {
        assert!(start.elapsed() < PATIENCE, "no warning: {}", s.stderr());
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(s.get("/health").status, 200);
}

#[test]
fn a_request_without_the_token_is_refused_before_its_body() {
    let w = World::new();
    ordered(&w, "http://127.0.0.1:9/v1", &["ok"]);
    let s = w.serve(&["--token", "tok-123"]);
    let mut c = connect(&s);
    c.write_all(b"POST /v1/chat/completions HTTP/1.1\r\nHost: tunnel.example\r\nExpect: 100-continue\r\nContent-Length: 30000000\r\n\r\n").unwrap();
    let answer = until_closed(&mut c);
    assert!(
        answer.starts_with("HTTP/1.1 401 Unauthorized\r\n"),
        "no 100 Continue first: {answer}"
    );
    assert!(!answer.contains("100 Continue"), "{answer}");
    assert!(answer.contains("connection: close"), "{answer}");
    assert!(answer.contains("authentication_error"), "{answer}");
    // The token admits the same request; /health needs none.
    let mut c = connect(&s);
    c.write_all(b"POST /v1/chat/completions HTTP/1.1\r\nHost: tunnel.example\r\nAuthorization: Bearer tok-123\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n").unwrap();
    assert!(read_head(&mut c).starts_with("HTTP/1.1 100 Continue"));
    let answer = exchange(
        &s,
        b"GET /health HTTP/1.1\r\nHost: tunnel.example\r\nConnection: close\r\n\r\n",
    );
    assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer}");
}

#[test]
fn only_the_servers_own_origin_and_host_are_served_without_a_token() {
    let w = World::new();
    ordered(&w, "http://127.0.0.1:9/v1", &["ok"]);
    let s = w.serve(&[]);
    let host = address(&s);
    let port = host.rsplit_once(':').unwrap().1.to_string();
    let other_port = if port == "3000" { "3001" } else { "3000" };
    let get = |host_value: &str, origin: Option<&str>| {
        let origin = origin.map_or(String::new(), |o| format!("Origin: {o}\r\n"));
        exchange(
            &s,
            format!("GET /v1/models HTTP/1.1\r\nHost: {host_value}\r\n{origin}Connection: close\r\n\r\n")
                .as_bytes(),
        )
    };
    let own = [
        format!("http://127.0.0.1:{port}"),
        format!("http://localhost:{port}"),
        format!("http://[::1]:{port}"),
    ];
    for origin in &own {
        let answer = get(&host, Some(origin));
        assert!(
            answer.starts_with("HTTP/1.1 200 OK\r\n"),
            "{origin}: {answer}"
        );
    }
    for origin in [
        "null".to_string(),
        format!("http://localhost:{other_port}"),
        "http://[::1]:5173".to_string(),
        "http://evil.example".to_string(),
    ] {
        let answer = get(&host, Some(&origin));
        assert!(
            answer.starts_with("HTTP/1.1 403 Forbidden\r\n"),
            "{origin}: {answer}"
        );
        assert!(answer.contains("permission_error"), "{answer}");
    }
    for host_value in [format!("localhost:{port}"), format!("[::1]:{port}")] {
        assert!(
            get(&host_value, None).starts_with("HTTP/1.1 200 OK\r\n"),
            "{host_value}"
        );
    }
    for host_value in [
        format!("127.0.0.1:{other_port}"),
        "127.0.0.1".to_string(),
        format!("attacker.example:{port}"),
    ] {
        let answer = get(&host_value, None);
        assert!(
            answer.starts_with("HTTP/1.1 403 Forbidden\r\n"),
            "Host {host_value}: {answer}"
        );
    }
}

#[test]
fn a_smuggled_second_request_gets_one_400_and_a_closed_connection() {
    let w = World::new();
    ordered(&w, "http://127.0.0.1:9/v1", &["ok"]);
    let s = w.serve(&[]);
    let host = address(&s);
    let hidden = format!("GET /v1/models HTTP/1.1\r\nHost: {host}\r\n\r\n");
    let answer = exchange(
        &s,
        format!(
            "POST /fcm/admin/breakers/reset HTTP/1.1\r\nHost: {host}\r\nContent-Length: 0\r\nContent-Length: {}\r\n\r\n{hidden}",
            hidden.len()
        )
        .as_bytes(),
    );
    assert!(
        answer.starts_with("HTTP/1.1 400 Bad Request\r\n"),
        "{answer}"
    );
    assert_eq!(
        status_lines(&answer),
        ["HTTP/1.1 400 Bad Request"],
        "one answer only: {answer}"
    );
    assert!(answer.contains("Content-Length"), "{answer}");
    assert!(answer.contains("connection: close"), "{answer}");
}

#[test]
fn ambiguous_framing_is_refused_and_the_connection_closed() {
    let w = World::new();
    ordered(&w, "http://127.0.0.1:9/v1", &["ok"]);
    let s = w.serve(&[]);
    let host = address(&s);
    let post = |lines: &str, body: &str| {
        format!("POST /v1/messages/count_tokens HTTP/1.1\r\nHost: {host}\r\n{lines}\r\n{body}")
    };
    let chunked = "Transfer-Encoding: chunked\r\n";
    let cases = [
        (
            "signed length",
            post("Content-Length: +2\r\n", "{}"),
            "400 Bad Request",
        ),
        (
            "space before colon",
            post("Content-Length : 2\r\n", "{}"),
            "400 Bad Request",
        ),
        (
            "folded line",
            post("Content-Length: 2\r\nX-A: 1\r\n  folded\r\n", "{}"),
            "400 Bad Request",
        ),
        (
            "bare CR",
            post("Content-Length: 2\r\nX-A: 1\rX-B: 2\r\n", "{}"),
            "400 Bad Request",
        ),
        (
            "two Hosts",
            post(&format!("Host: {host}\r\nContent-Length: 2\r\n"), "{}"),
            "400 Bad Request",
        ),
        (
            "length and chunked",
            post(
                &format!("Content-Length: 2\r\n{chunked}"),
                "2\r\n{}\r\n0\r\n\r\n",
            ),
            "400 Bad Request",
        ),
        (
            "signed chunk size",
            post(chunked, "+2\r\n{}\r\n0\r\n\r\n"),
            "400 Bad Request",
        ),
        (
            "chunk without CRLF",
            post(chunked, "2\r\n{}!!0\r\n\r\n"),
            "400 Bad Request",
        ),
        (
            "gzip",
            post("Transfer-Encoding: gzip, chunked\r\n", "0\r\n\r\n"),
            "501 Not Implemented",
        ),
        (
            "no Host",
            "GET /health HTTP/1.1\r\n\r\n".to_string(),
            "400 Bad Request",
        ),
        (
            "HTTP/2.0",
            "GET /health HTTP/2.0\r\n\r\n".to_string(),
            "505 HTTP Version Not Supported",
        ),
        (
            "expectation",
            post("Expect: the-moon\r\nContent-Length: 2\r\n", "{}"),
            "417 Expectation Failed",
        ),
        (
            "huge head",
            format!(
                "GET /health HTTP/1.1\r\nHost: {host}\r\nX-A: {}\r\n\r\n",
                "a".repeat(70_000)
            ),
            "431 Request Header Fields Too Large",
        ),
    ];
    for (name, request, status) in cases {
        let answer = exchange(&s, request.as_bytes());
        assert!(
            answer.starts_with(&format!("HTTP/1.1 {status}\r\n")),
            "{name}: {answer}"
        );
        assert_eq!(status_lines(&answer).len(), 1, "{name}: {answer}");
        assert!(answer.contains("connection: close"), "{name}: {answer}");
    }
    // The same request framed plainly is answered.
    let answer = exchange(
        &s,
        post(
            &format!("Connection: close\r\n{chunked}"),
            "2\r\n{}\r\n0\r\n\r\n",
        )
        .as_bytes(),
    );
    assert_eq!(status_lines(&answer), ["HTTP/1.1 200 OK"], "{answer}");
    assert!(answer.ends_with("{\"input_tokens\":0}"), "{answer}");
}

#[test]
fn a_wrong_config_value_names_its_setting_and_the_file() {
    let w = World::new();
    ordered(&w, "http://127.0.0.1:9/v1", &["ok"]);
    std::fs::create_dir_all(&w.home).unwrap();
    std::fs::write(
        w.home_file("config.json"),
        "{\n  \"router\": {\n    \"failover\": { \"maxAttempts\": \"lots\" }\n  }\n}\n",
    )
    .unwrap();
    let out = w.fcm(&["serve", "--port", "0"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stderr.contains("router.failover.maxAttempts"),
        "{out:?}"
    );
    assert!(out.stderr.contains("config.json"), "{out:?}");
    assert!(
        out.stderr.contains("\"lots\"") && out.stderr.contains("line 3"),
        "{out:?}"
    );
}

//! A scripted OpenAI-compatible provider on loopback that misbehaves on purpose.
//!
//! One implementation serves `fcm demo`, the integration tests and the benchmark scripts.
//! Each request's `model` picks a behaviour: `ok`, `slow:300`, `empty_choices`, `hang`, ...
//! (see [`Behavior::parse`]); anything after `#` is a free tag, so a catalog can hold many
//! models with one behaviour. It records every request so tests can assert what fcm sent.
//! It speaks just enough HTTP/1.1 (keep-alive, Content-Length bodies, chunked answers) and
//! nothing more; it is not a general server.

use std::collections::HashMap;
use std::io::{self, BufReader, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

mod behavior;
mod tools;

use behavior::{behavior_for, respond};
pub use behavior::{huge_text, Behavior, LimitStyle, Thinker, COUNTDOWN_WINDOW};

/// How long `hang` holds a connection at most, so a forgotten test cannot hang forever.
const HANG_LIMIT: Duration = Duration::from_secs(120);
/// Largest request body the fake provider reads.
const MAX_REQUEST: usize = 64 * 1024 * 1024;

/// A request as the fake provider received it.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    pub method: String,
    pub path: String,
    /// Header names lower-cased.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// When the request had been read.
    pub at: Instant,
    pub keep_alive: bool,
}

impl RecordedRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }

    pub fn model(&self) -> String {
        self.json()
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    }
}

pub(super) struct Shared {
    script: HashMap<String, Behavior>,
    requests: Mutex<Vec<RecordedRequest>>,
    record: bool,
    stop: AtomicBool,
    counter: AtomicU64,
    /// Answers cut short because the client went away.
    aborted: AtomicU64,
    /// Connections accepted.
    connections: AtomicU64,
    /// Requests seen per model (for behaviours that change over time).
    seen: Mutex<HashMap<String, u64>>,
    /// Rate-limit windows per model and key: when each started, requests in it.
    windows: Mutex<HashMap<String, (Instant, u64)>>,
}

/// A running fake provider; stops when dropped.
pub struct FakeProvider {
    addr: SocketAddr,
    shared: Arc<Shared>,
}

impl FakeProvider {
    /// Starts on `127.0.0.1:port` (0 picks a free port). `script` maps model ids to behaviours
    /// for ids that do not name one themselves.
    pub fn start(port: u16, script: HashMap<String, Behavior>) -> io::Result<FakeProvider> {
        FakeProvider::start_with(port, script, true)
    }

    /// `record: false` keeps no request log (long benchmark runs).
    pub fn start_with(
        port: u16,
        script: HashMap<String, Behavior>,
        record: bool,
    ) -> io::Result<FakeProvider> {
        let listener = TcpListener::bind(("127.0.0.1", port))?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            script,
            requests: Mutex::new(Vec::new()),
            record,
            stop: AtomicBool::new(false),
            counter: AtomicU64::new(0),
            aborted: AtomicU64::new(0),
            connections: AtomicU64::new(0),
            seen: Mutex::new(HashMap::new()),
            windows: Mutex::new(HashMap::new()),
        });
        let s = shared.clone();
        std::thread::Builder::new()
            .name("fake-provider".into())
            .spawn(move || {
                for conn in listener.incoming() {
                    if s.stop.load(Ordering::SeqCst) {
                        return;
                    }
                    let Ok(conn) = conn else { continue };
                    s.connections.fetch_add(1, Ordering::SeqCst);
                    let s = s.clone();
                    let _ = std::thread::Builder::new()
                        .stack_size(256 * 1024)
                        .spawn(move || serve_connection(conn, &s));
                }
            })?;
        Ok(FakeProvider { addr, shared })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT/v1`, a catalog `baseUrl`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.requests.lock().unwrap().clone()
    }

    /// Requests whose body named this model.
    pub fn requests_for(&self, model: &str) -> Vec<RecordedRequest> {
        self.requests()
            .into_iter()
            .filter(|r| r.model() == model)
            .collect()
    }

    /// How many answers were cut short because the client closed the connection.
    pub fn aborted(&self) -> u64 {
        self.shared.aborted.load(Ordering::SeqCst)
    }

    /// How many connections clients opened.
    pub fn connections(&self) -> u64 {
        self.shared.connections.load(Ordering::SeqCst)
    }

    pub fn behavior_for(&self, model: &str) -> Behavior {
        behavior_for(&self.shared, model)
    }

    /// Blocks until the process is killed (for `fcm fake-provider`).
    pub fn wait_forever(&self) -> ! {
        loop {
            std::thread::sleep(Duration::from_secs(3600));
        }
    }
}

impl Drop for FakeProvider {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(200));
    }
}

fn serve_connection(conn: TcpStream, shared: &Shared) {
    let _ = conn.set_nodelay(true);
    let Ok(write_half) = conn.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(conn);
    let mut out = write_half;
    loop {
        let Some(req) = read_request(&mut reader, &mut out) else {
            return;
        };
        if shared.record {
            shared.requests.lock().unwrap().push(req.clone());
        }
        let keep_alive = req.keep_alive;
        match respond(&req, shared, &mut out) {
            Ok(true) if keep_alive => {}
            Err(_) => {
                shared.aborted.fetch_add(1, Ordering::SeqCst);
                return;
            }
            _ => {
                let _ = out.shutdown(Shutdown::Both);
                return;
            }
        }
    }
}

/// Reads the next request with fcm's own HTTP framing; `None` when the connection is done.
fn read_request(reader: &mut BufReader<TcpStream>, out: &mut TcpStream) -> Option<RecordedRequest> {
    let crate::edge::http::Request { head, body } =
        crate::edge::http::read_request(reader, out, MAX_REQUEST).ok()?;
    Some(RecordedRequest {
        keep_alive: head.keep_alive,
        method: head.method,
        path: head.target,
        headers: head.headers,
        body,
        at: Instant::now(),
    })
}

/// Writes the head and (for fixed bodies) the body in one write: a split write meets
/// delayed ACKs. Returns whether the connection may be kept.
pub(super) fn send_fixed(
    out: &mut TcpStream,
    status: u16,
    content_type: &str,
    extra: &[(&str, String)],
    body: &[u8],
) -> io::Result<bool> {
    let mut headers = vec![("content-type".to_string(), content_type.to_string())];
    headers.extend(extra.iter().map(|(k, v)| (k.to_string(), v.clone())));
    let mut msg = crate::edge::http::head(status, &headers, Some(body.len()), true);
    msg.extend_from_slice(body);
    out.write_all(&msg)?;
    Ok(true)
}

/// A chunked SSE response, written frame by frame.
pub(super) struct SseWriter<'a> {
    out: &'a mut TcpStream,
    pending: Vec<u8>,
}

impl<'a> SseWriter<'a> {
    pub(super) fn start(out: &'a mut TcpStream) -> Self {
        SseWriter::start_with(out, &[])
    }

    /// A stream whose head carries `extra` headers too.
    pub(super) fn start_with(out: &'a mut TcpStream, extra: &[(&str, String)]) -> Self {
        let mut headers = vec![
            ("content-type".to_string(), "text/event-stream".to_string()),
            ("cache-control".to_string(), "no-cache".to_string()),
        ];
        headers.extend(extra.iter().map(|(k, v)| (k.to_string(), v.clone())));
        SseWriter {
            out,
            pending: crate::edge::http::head(200, &headers, None, true),
        }
    }

    pub(super) fn raw(&mut self, text: &str) -> io::Result<()> {
        crate::edge::http::chunk(text.as_bytes(), &mut self.pending);
        self.flush()
    }

    pub(super) fn data(&mut self, v: &Value) -> io::Result<()> {
        self.raw(&format!("data: {v}\n\n"))
    }

    pub(super) fn flush(&mut self) -> io::Result<()> {
        let bytes = std::mem::take(&mut self.pending);
        self.out.write_all(&bytes)
    }

    pub(super) fn done(mut self) -> io::Result<bool> {
        self.raw("data: [DONE]\n\n")?;
        self.pending
            .extend_from_slice(crate::edge::http::LAST_CHUNK);
        self.flush()?;
        Ok(true)
    }
}

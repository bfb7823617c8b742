//! The fake provider as a server on loopback: [`FakeProvider`] listens, a thread per
//! connection reads each request with fcm's own HTTP framing, records it and has
//! `respond` answer it. It speaks just enough HTTP/1.1 (keep-alive, Content-Length bodies,
//! chunked answers) and nothing more; it is not a general server.

use std::collections::HashMap;
use std::io::{self, BufReader};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::behavior::Behavior;
use super::respond::respond;
use super::state::{RecordedRequest, Shared};

/// Largest request body the fake provider reads.
const MAX_REQUEST: usize = 64 * 1024 * 1024;

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
        let shared = Arc::new(Shared::new(script, record));
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

    /// Model `model` answers `extra` later from now on (zero: at once again); over HTTP,
    /// the same is `POST` [`LATENCY_PATH`](super::respond::LATENCY_PATH).
    pub fn set_latency(&self, model: &str, extra: Duration) {
        self.shared.set_latency(model, extra);
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
        self.shared.behavior_for(model)
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
        // A test's own instructions are not requests of a model.
        if shared.record && req.path != super::respond::LATENCY_PATH {
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
        method: head.method().to_string(),
        path: head.target().to_string(),
        headers: head
            .headers()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        body,
        at: Instant::now(),
    })
}

//! `fcm serve`: the local proxy. tiny_http accepts connections; each request runs on a
//! worker thread (bounded: past the limit a fast 503, never a hang) and goes through the
//! router. Responses are written by hand, head and first bytes in one write, so a stream's
//! first event is not held back by delayed ACKs; streams are forwarded chunk by chunk.
//!
//! This module is the HTTP edge only: what to try and how to judge it lives in `router`,
//! `attempt` and `gate`; state files are written by the flusher in `persist`.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;
use serde_json::{json, Value};

use crate::attempt::{Answer, StreamItem};
use crate::breaker::BreakerState;
use crate::router::{Refused, Router, StreamEnd};
use crate::trace::{new_request_id, Outcome, Trace};

/// Largest request body accepted (413 beyond).
pub const MAX_REQUEST_BYTES: usize = 32 * 1024 * 1024;
/// Requests handled at once; past this a fast 503 with `Retry-After: 1`.
pub const DEFAULT_MAX_IN_FLIGHT: usize = 256;
/// Workers kept however quiet the server is.
const MIN_WORKERS: usize = 4;
/// A worker idle this long leaves when more than [`MIN_WORKERS`] exist.
const WORKER_IDLE_EXIT: Duration = Duration::from_secs(30);
/// How long shutdown waits for running streams.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

/// A running server's shared state.
pub struct App {
    pub router: Router,
    pub address: SocketAddr,
    pub started: Instant,
    pub in_flight: AtomicUsize,
    pub quiet: bool,
    /// Required on every request but `/health` when set (`Authorization: Bearer` or `x-api-key`).
    pub token: Option<String>,
    pub writes: crate::persist::WriteCounts,
}

/// A response to write: status, headers and body bytes.
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Reply {
    fn json(status: u16, v: &Value) -> Reply {
        Reply {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: v.to_string().into_bytes(),
        }
    }

    fn with_trace(mut self, trace: &Trace) -> Reply {
        self.headers
            .extend(trace.headers().into_iter().map(|(k, v)| (k.to_string(), v)));
        self
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        405 => "Method Not Allowed",
        413 => "Payload Too Large",
        429 => "Too Many Requests",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "",
    }
}

fn head(status: u16, headers: &[(String, String)], length: Option<usize>) -> Vec<u8> {
    let mut h = format!("HTTP/1.1 {status} {}\r\n", reason(status));
    for (k, v) in headers {
        h.push_str(k);
        h.push_str(": ");
        h.push_str(v);
        h.push_str("\r\n");
    }
    match length {
        Some(n) => h.push_str(&format!("content-length: {n}\r\n\r\n")),
        None => h.push_str("transfer-encoding: chunked\r\n\r\n"),
    }
    h.into_bytes()
}

fn chunk(bytes: &[u8], out: &mut Vec<u8>) {
    if bytes.is_empty() {
        return;
    }
    out.extend_from_slice(format!("{:x}\r\n", bytes.len()).as_bytes());
    out.extend_from_slice(bytes);
    out.extend_from_slice(b"\r\n");
}

/// Writes a complete response in one write.
#[inline(never)]
fn send(req: tiny_http::Request, reply: Reply) {
    let mut bytes = head(reply.status, &reply.headers, Some(reply.body.len()));
    if *req.method() != tiny_http::Method::Head {
        bytes.extend_from_slice(&reply.body);
    }
    let mut w = req.into_writer();
    let _ = w.write_all(&bytes).and_then(|_| w.flush());
}

/// An error in OpenAI's shape.
fn error_body(status: u16, message: &str, kind: &str) -> Value {
    let _ = status;
    json!({"error": {"message": message, "type": kind, "code": Value::Null}})
}

/// Starts serving on `listener` until SIGINT/SIGTERM; returns after a clean shutdown.
pub fn run(listener: TcpListener, app: Arc<App>, max_in_flight: usize) -> Result<()> {
    crate::signals::install();
    let server = tiny_http::Server::from_listener(listener, None)
        .map_err(|e| anyhow::anyhow!("cannot serve: {e}"))?;
    let pool = Arc::new(Workers {
        server,
        app: app.clone(),
        max_in_flight,
        workers: AtomicUsize::new(0),
        idle: AtomicUsize::new(0),
    });
    Workers::spawn(&pool);
    while !crate::signals::stop_requested() {
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(pool);
    let deadline = Instant::now() + DRAIN_TIMEOUT;
    while app.in_flight.load(Ordering::Acquire) > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

/// Worker threads that take requests straight from tiny_http's queue (no hand-off thread).
/// A new worker starts whenever none is left waiting, up to one more than the in-flight
/// limit: that last one answers the overflow with a fast 503 instead of letting it queue.
struct Workers {
    server: tiny_http::Server,
    app: Arc<App>,
    max_in_flight: usize,
    workers: AtomicUsize,
    idle: AtomicUsize,
}

impl Workers {
    fn spawn(pool: &Arc<Workers>) {
        if pool.workers.fetch_add(1, Ordering::AcqRel) > pool.max_in_flight {
            pool.workers.fetch_sub(1, Ordering::AcqRel);
            return;
        }
        let p = pool.clone();
        let spawned = std::thread::Builder::new()
            .name("fcm-serve".into())
            .stack_size(256 * 1024)
            .spawn(move || p.work());
        if spawned.is_err() {
            pool.workers.fetch_sub(1, Ordering::AcqRel);
        }
    }

    fn work(self: Arc<Self>) {
        let mut idle_since = Instant::now();
        while !crate::signals::stop_requested() {
            self.idle.fetch_add(1, Ordering::AcqRel);
            let next = self.server.recv_timeout(Duration::from_millis(200));
            let idle_left = self.idle.fetch_sub(1, Ordering::AcqRel) - 1;
            let req = match next {
                Ok(Some(r)) => r,
                Ok(None) => {
                    // After a burst, surplus workers leave, and their stacks with them.
                    if idle_since.elapsed() > WORKER_IDLE_EXIT
                        && self.workers.load(Ordering::Acquire) > MIN_WORKERS
                    {
                        break;
                    }
                    continue;
                }
                Err(e) => {
                    eprintln!("fcm serve: accept failed: {e}");
                    continue;
                }
            };
            if idle_left == 0 {
                Workers::spawn(&self);
            }
            let app = &self.app;
            if app.in_flight.fetch_add(1, Ordering::AcqRel) >= self.max_in_flight {
                app.in_flight.fetch_sub(1, Ordering::AcqRel);
                overloaded(req);
                continue;
            }
            idle_since = Instant::now();
            match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| handle(req, app))) {
                Ok(Handled::HandedOff) => {}
                Ok(Handled::Done) => {
                    app.in_flight.fetch_sub(1, Ordering::AcqRel);
                }
                Err(_) => {
                    eprintln!("fcm serve: a request handler panicked; the server keeps running");
                    app.in_flight.fetch_sub(1, Ordering::AcqRel);
                }
            }
        }
        self.workers.fetch_sub(1, Ordering::AcqRel);
    }
}

#[inline(never)]
fn overloaded(req: tiny_http::Request) {
    let mut trace = Trace::new(&new_request_id(), "", false);
    trace.outcome = Outcome::Rejected;
    let msg = "fcm is at its limit of requests in flight; retry in a second";
    let mut reply = Reply::json(503, &error_body(503, msg, "overloaded")).with_trace(&trace);
    reply.headers.push(("retry-after".into(), "1".into()));
    reply.headers.push(("connection".into(), "close".into()));
    send(req, reply);
}

fn header<'a>(req: &'a tiny_http::Request, name: &'static str) -> Option<&'a str> {
    req.headers()
        .iter()
        .find(|h| h.field.equiv(name))
        .map(|h| h.value.as_str())
}

/// The client's `x-request-id` when it is a sane token, else a new one.
fn request_id(req: &tiny_http::Request) -> String {
    match header(req, "x-request-id") {
        Some(id)
            if !id.is_empty()
                && id.len() <= 128
                && id
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(&b)) =>
        {
            id.to_string()
        }
        _ => new_request_id(),
    }
}

/// Whether the request carries the access token (always true when none is configured).
fn authorized(req: &tiny_http::Request, token: Option<&str>) -> bool {
    let Some(token) = token else { return true };
    let bearer = header(req, "authorization").and_then(|v| {
        v.strip_prefix("Bearer ")
            .or_else(|| v.strip_prefix("bearer "))
    });
    let given = bearer.or_else(|| header(req, "x-api-key")).map(str::trim);
    // Compare without an early exit so timing does not reveal a prefix.
    given.is_some_and(|g| {
        g.len() == token.len()
            && g.bytes()
                .zip(token.bytes())
                .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                == 0
    })
}

fn handle(req: tiny_http::Request, app: &Arc<App>) -> Handled {
    let path = req.url().split('?').next().unwrap_or("").to_string();
    let method = req.method().clone();
    if path != "/health" && !authorized(&req, app.token.as_deref()) {
        let msg = "fcm serve requires its access token: send it as `Authorization: Bearer <token>` or `x-api-key`";
        let mut trace = crate::trace::Trace::new(&request_id(&req), "", false);
        trace.outcome = Outcome::Rejected;
        send(
            req,
            Reply::json(401, &error_body(401, msg, "authentication_error")).with_trace(&trace),
        );
        return Handled::Done;
    }
    use tiny_http::Method::*;
    match (&method, path.as_str()) {
        (Post, "/v1/chat/completions") => return chat(req, app),
        (Get, "/health") => send(req, Reply::json(200, &health(app))),
        (Get, "/v1/models") => send(req, Reply::json(200, &models(app))),
        (Get, "/fcm/admin/breakers") => admin_breakers(req, app),
        (Post, "/fcm/admin/breakers/reset") => admin_reset(req, app),
        (Get, "/fcm/admin/history") => admin_history(req, app),
        (_, "/v1/chat/completions" | "/health" | "/v1/models") => send(
            req,
            Reply::json(
                405,
                &error_body(
                    405,
                    &format!("{method} is not allowed on {path}"),
                    "invalid_request_error",
                ),
            ),
        ),
        _ => {
            let msg = format!("no route for {method} {path}; fcm serves /v1/chat/completions, /v1/models and /health");
            send(
                req,
                Reply::json(404, &error_body(404, &msg, "not_found_error")),
            )
        }
    }
    Handled::Done
}

fn query<'a>(url: &'a str, name: &str) -> Option<&'a str> {
    let q = url.split_once('?')?.1;
    q.split('&').find_map(|kv| {
        kv.split_once('=')
            .filter(|(k, _)| *k == name)
            .map(|(_, v)| v)
    })
}

// The handlers below are kept out of line so that their temporaries do not enlarge the
// frame every request (and every stream) carries on its stack.
#[inline(never)]
fn admin_breakers(req: tiny_http::Request, app: &App) {
    let rows = app.router.breakers.rows(crate::time::now_ms());
    send(
        req,
        Reply::json(200, &serde_json::to_value(rows).unwrap_or_default()),
    );
}

#[inline(never)]
fn admin_history(req: tiny_http::Request, app: &App) {
    let n = query(req.url(), "n")
        .and_then(|v| v.parse().ok())
        .unwrap_or(usize::MAX);
    send(
        req,
        Reply::json(
            200,
            &serde_json::to_value(app.router.history.last(n)).unwrap_or_default(),
        ),
    );
}

#[inline(never)]
fn admin_reset(req: tiny_http::Request, app: &App) {
    let model = query(req.url(), "model")
        .unwrap_or("all")
        .replace("%2F", "/")
        .replace("%2f", "/");
    let n = app.router.breakers.reset(if model == "all" {
        None
    } else {
        Some(model.as_str())
    });
    send(req, Reply::json(200, &json!({"reset": n, "model": model})));
}

#[inline(never)]
fn health(app: &App) -> Value {
    let now = crate::time::now_ms();
    let rows = app.router.breakers.rows(now);
    let count = |s: BreakerState| rows.iter().filter(|r| r.state == s).count();
    let routable = app.router.routable().count();
    json!({
        "status": "ok",
        "version": env!("CARGO_PKG_VERSION"),
        "uptimeSecs": app.started.elapsed().as_secs(),
        "address": app.address.to_string(),
        "pid": std::process::id(),
        "models": {
            "routable": routable,
            "closed": routable.saturating_sub(rows.iter().filter(|r| r.state != BreakerState::Closed && app.router.knows(&r.model)).count()),
            "degraded": count(BreakerState::Degraded),
            "halfOpen": count(BreakerState::HalfOpen),
            "open": count(BreakerState::Open),
            "quotaPaused": rows.iter().filter(|r| r.quota_pause_ms_left > 0).count(),
        },
        "inFlight": app.in_flight.load(Ordering::Acquire),
        "stateWrites": {"breakers": app.writes.breakers.load(Ordering::Relaxed), "history": app.writes.history.load(Ordering::Relaxed)},
    })
}

#[inline(never)]
fn models(app: &App) -> Value {
    let mut data = vec![json!({"id": "fcm", "object": "model", "owned_by": "fcm", "created": 0})];
    data.extend(app.router.routable().map(|c| json!({"id": format!("fcm:{}", c.target.key), "object": "model", "owned_by": c.target.provider_id, "created": 0})));
    json!({"object": "list", "data": data})
}

/// Reads the body up to the limit; `Err(reply)` for a request to refuse.
#[inline(never)]
fn read_body(req: &mut tiny_http::Request) -> Result<Vec<u8>, (u16, String)> {
    if req.body_length().is_some_and(|n| n > MAX_REQUEST_BYTES) {
        return Err((
            413,
            format!(
                "request body is {} bytes; the limit is {MAX_REQUEST_BYTES} (32 MiB)",
                req.body_length().unwrap_or(0)
            ),
        ));
    }
    let mut body = Vec::with_capacity(req.body_length().unwrap_or(0).min(MAX_REQUEST_BYTES));
    req.as_reader()
        .take(MAX_REQUEST_BYTES as u64 + 1)
        .read_to_end(&mut body)
        .map_err(|e| (400, format!("cannot read the request body: {e}")))?;
    if body.len() > MAX_REQUEST_BYTES {
        return Err((
            413,
            format!("request body is over the limit of {MAX_REQUEST_BYTES} bytes (32 MiB)"),
        ));
    }
    Ok(body)
}

#[inline(never)]
fn reject(
    req: tiny_http::Request,
    app: &App,
    mut trace: Trace,
    started: Instant,
    status: u16,
    message: &str,
    kind: &str,
) -> Handled {
    trace.outcome = Outcome::Rejected;
    let mut reply = Reply::json(status, &error_body(status, message, kind)).with_trace(&trace);
    if status == 413 {
        reply.headers.push(("connection".into(), "close".into()));
    }
    send(req, reply);
    log(app, &trace, status, started);
    app.router.complete(trace, started);
    Handled::Done
}

fn chat(mut req: tiny_http::Request, app: &Arc<App>) -> Handled {
    let started = Instant::now();
    let id = request_id(&req);
    let trace = Trace::new(&id, "", false);
    let body = match read_body(&mut req) {
        Ok(b) => b,
        Err((status, msg)) => {
            return reject(
                req,
                app,
                trace,
                started,
                status,
                &msg,
                "invalid_request_error",
            )
        }
    };
    let parsed: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => {
            return reject(
                req,
                app,
                trace,
                started,
                400,
                &format!("request body is not valid JSON: {e}"),
                "invalid_request_error",
            )
        }
    };
    drop(body);
    if !parsed.get("messages").is_some_and(Value::is_array) {
        return reject(
            req,
            app,
            trace,
            started,
            400,
            "request body must be a JSON object with a \"messages\" array",
            "invalid_request_error",
        );
    }
    let requested = parsed
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("fcm")
        .to_string();
    let stream = parsed
        .get("stream")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let mut trace = Trace::new(&id, &requested, stream);
    let route = match app.router.resolve(&requested) {
        Ok(r) => r,
        Err(msg) => return reject(req, app, trace, started, 404, &msg, "not_found_error"),
    };
    trace.requested_model = requested;
    match app.router.route(&route, &parsed, stream, trace) {
        Ok(served) => deliver(req, app, served, stream, started),
        Err(refused) => refuse(req, app, refused, started),
    }
}

#[inline(never)]
fn refuse(req: tiny_http::Request, app: &App, refused: Box<Refused>, started: Instant) -> Handled {
    let mut reply = Reply::json(refused.status, &refused.openai_body()).with_trace(&refused.trace);
    if let Some(secs) = refused.retry_after_secs {
        reply.headers.push(("retry-after".into(), secs.to_string()));
    }
    send(req, reply);
    log(app, &refused.trace, refused.status, started);
    app.router.complete(refused.trace, started);
    Handled::Done
}

#[inline(never)]
fn deliver(
    req: tiny_http::Request,
    app: &Arc<App>,
    served: crate::router::Served,
    stream: bool,
    started: Instant,
) -> Handled {
    let crate::router::Served {
        answer,
        mut trace,
        model,
    } = served;
    match answer {
        Answer::Full { status, body, .. } if !stream => {
            let mut reply = Reply {
                status,
                headers: vec![("content-type".into(), "application/json".into())],
                body,
            };
            reply = reply.with_trace(&trace);
            send(req, reply);
        }
        Answer::Full { body, stats, .. } => {
            // The provider ignored `stream: true`: give the client the stream it asked for.
            let mut out = head(200, &sse_headers(&trace), None);
            chunk(&crate::sse::events_from_completion(&body), &mut out);
            out.extend_from_slice(b"0\r\n\r\n");
            let mut w = req.into_writer();
            let _ = w.write_all(&out).and_then(|_| w.flush());
            trace.completion_tokens = stats.completion_tokens;
        }
        Answer::Stream(s) => {
            let mut w = req.into_writer();
            let mut out = head(200, &sse_headers(&trace), None);
            chunk(&s.held, &mut out);
            let alive = w.write_all(&out).and_then(|_| w.flush()).is_ok();
            // The routing work is done; a thread with a small stack forwards the rest so
            // this worker (whose stack the upstream call made deep) serves other requests.
            let pump = Pump {
                writer: w,
                stream: s,
                trace,
                model,
                alive,
                started,
            };
            let app2 = app.clone();
            let spawned = std::thread::Builder::new()
                .name("fcm-stream".into())
                .stack_size(64 * 1024)
                .spawn(move || {
                    pump.run(&app2);
                    app2.in_flight.fetch_sub(1, Ordering::AcqRel);
                });
            return match spawned {
                Ok(_) => Handled::HandedOff,
                Err(e) => {
                    eprintln!(
                        "fcm serve: cannot start a stream thread ({e}); the stream was dropped"
                    );
                    Handled::Done
                }
            };
        }
    }
    log(app, &trace, 200, started);
    app.router.complete(trace, started);
    Handled::Done
}

/// A committed stream being forwarded to its client.
struct Pump {
    writer: Box<dyn Write + Send>,
    stream: Box<crate::attempt::OpenStream>,
    trace: Trace,
    model: String,
    /// The first write reached the client.
    alive: bool,
    started: Instant,
}

impl Pump {
    fn run(self, app: &App) {
        let Pump {
            writer: mut w,
            stream: mut s,
            mut trace,
            model,
            mut alive,
            started,
        } = self;
        let mut out = Vec::new();
        let end = loop {
            if !alive {
                break StreamEnd::ClientGone;
            }
            match s.next_item() {
                StreamItem::Data(bytes) => {
                    if bytes.is_empty() {
                        continue;
                    }
                    out.clear();
                    chunk(&bytes, &mut out);
                    alive = w.write_all(&out).and_then(|_| w.flush()).is_ok();
                }
                StreamItem::End => {
                    let _ = w.write_all(b"0\r\n\r\n").and_then(|_| w.flush());
                    break StreamEnd::Complete {
                        completion_tokens: s.stats().completion_tokens,
                    };
                }
                StreamItem::Failed(f, tail) => {
                    // Content already reached the client: end its stream cleanly.
                    out.clear();
                    chunk(&tail, &mut out);
                    chunk(b"data: [DONE]\n\n", &mut out);
                    out.extend_from_slice(b"0\r\n\r\n");
                    let _ = w.write_all(&out).and_then(|_| w.flush());
                    break StreamEnd::Failed(f);
                }
            }
        };
        // Dropping the stream closes the upstream connection at once.
        drop(s);
        drop(w);
        app.router.finish_stream(&mut trace, &model, end);
        log(app, &trace, 200, started);
        app.router.complete(trace, started);
    }
}

/// Whether a handler finished its request or handed it to a stream thread (which then
/// owns the in-flight slot).
enum Handled {
    Done,
    HandedOff,
}

fn sse_headers(trace: &Trace) -> Vec<(String, String)> {
    let mut h = vec![
        ("content-type".to_string(), "text/event-stream".to_string()),
        ("cache-control".to_string(), "no-cache".to_string()),
    ];
    h.extend(trace.headers().into_iter().map(|(k, v)| (k.to_string(), v)));
    h
}

fn log(app: &App, trace: &Trace, status: u16, started: Instant) {
    if app.quiet {
        return;
    }
    eprintln!(
        "{} {} {status} {} ms {}",
        trace.id,
        trace.requested_model,
        started.elapsed().as_millis(),
        trace.decision_header()
    );
}

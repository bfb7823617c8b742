//! `fcm serve`: the local proxy's HTTP edge. One thread per connection (bounded: past the
//! limits a fast 503, never a hang); each request goes through the router. Responses are
//! written by hand, head and first bytes in one write, so a stream's first event is not held
//! back by delayed ACKs; streams are forwarded chunk by chunk as they arrive.
//!
//! A connection cannot hold its slot by being slow: a request's head and body must arrive
//! within `serve.requestTimeoutMs` of its first byte (else 408), an idle keep-alive
//! connection closes after `serve.idleTimeoutMs`, and when every slot is taken the
//! connections without a request in progress are shed, oldest first, so a real request
//! still gets in. A request is admitted (`access`) as soon as its head is read, before a
//! byte of its body is.
//!
//! What to try and how to judge it lives in `router`, `attempt` and `gate`; request framing
//! in `http`; state files are written by the flusher in `persist`.

pub(crate) mod access;
pub(crate) mod connections;
pub(crate) mod dashboard;
mod forward;
pub(crate) mod http;
pub(crate) mod live;
pub(crate) mod metrics;
pub(crate) mod signals;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::edge::connections::{ClientReader, Connections, Slot};
use crate::protocol::{self, BadRequest, ErrorReport, Protocol};
use crate::routing::{Ask, Delivery, Refused, Router, Served, SessionName};
use crate::state::trace::{new_request_id, Outcome, Trace};
use forward::ClientSink;
use http::{chunk, Head, ReadError, Request, LAST_CHUNK};

/// Largest request body accepted (413 beyond).
pub const MAX_REQUEST_BYTES: usize = 32 * 1024 * 1024;
/// Open connections (idle keep-alive ones included) per allowed request in flight.
const CONNECTIONS_PER_REQUEST: usize = 4;
/// How long shutdown waits for running streams.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);
/// A write to a client that takes longer than this means the client is gone.
const CLIENT_WRITE_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a refused request's unread bytes are drained before the connection closes.
const LINGER: Duration = Duration::from_secs(2);

/// A running server's shared state.
pub struct App {
    pub router: Router,
    /// The catalog the router was built from (the dashboard's usage section names limits).
    pub catalog: crate::providers::catalog::Catalog,
    pub address: SocketAddr,
    pub started: Instant,
    pub in_flight: AtomicUsize,
    pub connections: Arc<Connections>,
    pub max_in_flight: usize,
    /// A request's head and body must arrive within this from its first byte.
    pub request_timeout: Duration,
    /// A connection waits this long for the next request before it closes.
    pub idle_timeout: Duration,
    pub quiet: bool,
    /// Required on every request but `/health` when set (`Authorization: Bearer` or `x-api-key`).
    pub token: Option<String>,
    /// Admits `fcm stop` (see [`crate::edge::access`]); also in `serve.json`.
    pub stop_key: String,
    pub writes: crate::state::persist::WriteCounts,
}

impl crate::state::persist::StateSource for App {
    fn breakers(&self) -> &crate::state::breaker::Breakers {
        &self.router.breakers
    }
    fn history(&self) -> &crate::state::trace::History {
        &self.router.history
    }
    fn ledger(&self) -> &crate::state::ledger::Ledger {
        &self.router.ledger
    }
    fn affinity(&self) -> Option<&crate::state::affinity::Affinity> {
        self.router.affinity.as_ref()
    }
    fn writes(&self) -> &crate::state::persist::WriteCounts {
        &self.writes
    }
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

/// The writing side of a client connection.
struct Conn {
    stream: TcpStream,
    /// Whether the connection stays open after this response.
    keep_alive: bool,
    /// A write failed: the client is gone.
    broken: bool,
}

impl Conn {
    fn write(&mut self, bytes: &[u8]) -> bool {
        if !self.broken && self.stream.write_all(bytes).is_err() {
            self.broken = true;
        }
        !self.broken
    }

    /// Writes a complete response in one write (`head_only` for HEAD requests).
    fn send(&mut self, reply: Reply, head_only: bool) {
        let mut bytes = http::head(
            reply.status,
            &reply.headers,
            Some(reply.body.len()),
            self.keep_alive,
        );
        if !head_only {
            bytes.extend_from_slice(&reply.body);
        }
        self.write(&bytes);
    }
}

/// An error of the HTTP edge itself (no protocol known yet, or not an API endpoint), in
/// OpenAI's envelope.
fn edge_error(status: u16, message: &str, kind: &str) -> Value {
    Protocol::Chat.error(&ErrorReport {
        kind: Some(kind),
        ..ErrorReport::new(status, message)
    })
}

/// Serves on `listener` until SIGINT/SIGTERM; returns after running requests finished (or
/// [`DRAIN_TIMEOUT`]).
pub fn run(listener: TcpListener, app: Arc<App>) -> std::io::Result<()> {
    crate::edge::signals::install();
    let address = listener.local_addr()?;
    let a = app.clone();
    let acceptor = std::thread::Builder::new()
        .name("fcm-accept".into())
        .spawn(move || {
            for conn in listener.incoming() {
                if crate::edge::signals::stop_requested() {
                    return;
                }
                let stream = match conn {
                    Ok(s) => s,
                    Err(_) => {
                        // Out of file descriptors or similar: back off instead of spinning.
                        std::thread::sleep(Duration::from_millis(50));
                        continue;
                    }
                };
                accept(stream, &a);
            }
        })?;
    while !crate::edge::signals::stop_requested() {
        std::thread::sleep(Duration::from_millis(100));
    }
    // Wake the acceptor so it sees the flag and stops taking connections.
    let _ = TcpStream::connect_timeout(&wake_address(address), Duration::from_millis(500));
    let _ = acceptor.join();
    let deadline = Instant::now() + DRAIN_TIMEOUT;
    while app.in_flight.load(Ordering::Acquire) > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

fn wake_address(bound: SocketAddr) -> SocketAddr {
    if bound.ip().is_unspecified() {
        SocketAddr::from(([127, 0, 0, 1], bound.port()))
    } else {
        bound
    }
}

/// Gives a new connection its thread, or a fast 503 when there are too many.
fn accept(stream: TcpStream, app: &Arc<App>) {
    let _ = stream.set_nodelay(true);
    // A client that stops reading must not hold its slot (and the upstream) forever.
    let _ = stream.set_write_timeout(Some(CLIENT_WRITE_TIMEOUT));
    let Ok(handle) = stream.try_clone() else {
        return;
    };
    let limit = app.max_in_flight * CONNECTIONS_PER_REQUEST;
    let Some(mut slot) = Slot::take(&app.connections, limit, handle) else {
        let mut conn = Conn {
            stream,
            keep_alive: false,
            broken: false,
        };
        overloaded(&mut conn, &new_request_id());
        return;
    };
    let a = app.clone();
    // If the thread cannot start, the slot is dropped with the closure: released.
    let _ = std::thread::Builder::new()
        .name("fcm-conn".into())
        .stack_size(256 * 1024)
        .spawn(move || {
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                connection(stream, &mut slot, &a)
            }));
        });
}

fn overloaded(conn: &mut Conn, id: &str) {
    let mut trace = Trace::new(id, "", false);
    trace.outcome = Outcome::Rejected;
    let msg = "fcm is at its limit of requests in flight; retry in a second";
    let mut reply = Reply::json(503, &edge_error(503, msg, "overloaded")).with_trace(&trace);
    reply.headers.push(("retry-after".into(), "1".into()));
    conn.send(reply, false);
}

/// Serves the requests of one connection until it closes.
fn connection(stream: TcpStream, slot: &mut Slot, app: &Arc<App>) {
    let Ok(read_half) = stream.try_clone() else {
        return;
    };
    let client = ClientReader {
        stream: read_half,
        deadline: None,
        idle: app.idle_timeout,
    };
    let mut reader = BufReader::with_capacity(16 * 1024, client);
    let mut conn = Conn {
        stream,
        keep_alive: true,
        broken: false,
    };
    loop {
        slot.stand_by();
        reader.get_mut().deadline = None;
        if reader.fill_buf().map_or(true, |b| b.is_empty()) {
            return;
        }
        // The first byte of a request starts its deadline.
        reader.get_mut().deadline = Some(Instant::now() + app.request_timeout);
        let head = http::read_head(&mut reader);
        if !slot.leave_standby() {
            return;
        }
        let head = match head {
            Ok(head) => head,
            Err(e) => return unreadable(conn, reader, slot, app, None, &e),
        };
        if let Err(denied) =
            crate::edge::access::admit(&head, app.token.as_deref(), &app.stop_key, app.address)
        {
            // Nothing of the body is read (nor `100 Continue` sent) for a refused request.
            conn.keep_alive = false;
            let mut trace = Trace::new(&request_id(&head), "", false);
            trace.outcome = Outcome::Rejected;
            let (status, kind) = denied.status();
            let body = edge_error(status, &denied.to_string(), kind);
            let reply = Reply::json(status, &body).with_trace(&trace);
            conn.send(reply, head.method == "HEAD");
            return linger(conn, reader, slot);
        }
        let req = match http::read_body(&mut reader, &head, &mut conn.stream, MAX_REQUEST_BYTES) {
            Ok(body) => Request { head, body },
            Err(e) => return unreadable(conn, reader, slot, app, Some(&head), &e),
        };
        conn.keep_alive = req.head.keep_alive && !crate::edge::signals::stop_requested();
        if app.in_flight.fetch_add(1, Ordering::AcqRel) >= app.max_in_flight {
            app.in_flight.fetch_sub(1, Ordering::AcqRel);
            // The request was read: its answer carries its id, like every other answer.
            overloaded(&mut conn, &request_id(&req.head));
        } else {
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                handle_request(&req, &mut conn, app)
            }));
            app.in_flight.fetch_sub(1, Ordering::AcqRel);
            if result.is_err() {
                eprintln!("fcm serve: a request handler panicked; the server keeps running");
                return;
            }
        }
        if !conn.keep_alive || conn.broken {
            return;
        }
    }
}

/// Answers a request that could not be read (when anyone is left to answer) and closes.
/// `head` is the request's, when the failure was in its body.
fn unreadable(
    mut conn: Conn,
    reader: BufReader<ClientReader>,
    slot: &mut Slot,
    app: &App,
    head: Option<&Head>,
    e: &ReadError,
) {
    let Some(status) = e.status() else {
        return;
    };
    conn.keep_alive = false;
    match e {
        ReadError::TooLarge(n) => {
            let msg =
                format!("request body is {n} bytes; the limit is {MAX_REQUEST_BYTES} (32 MiB)");
            // In OpenAI's shape, like every error of the HTTP edge; recorded like any other
            // refusal.
            let id = head.map_or_else(new_request_id, request_id);
            reject_in(
                &mut conn,
                app,
                Protocol::Chat,
                Trace::new(&id, "", false),
                Instant::now(),
                413,
                &msg,
            );
        }
        _ => {
            let msg = match e {
                ReadError::TimedOut => format!(
                    "the request did not arrive within {} ms (serve.requestTimeoutMs)",
                    app.request_timeout.as_millis()
                ),
                _ => e.to_string(),
            };
            let reply = Reply::json(status, &edge_error(status, &msg, "invalid_request_error"));
            conn.send(reply, false);
        }
    }
    linger(conn, reader, slot);
}

/// After refusing a request: stop writing, read (and drop) what the client still sends for
/// a moment, then close. Closing with unread data would reset the connection and the client
/// might never see the answer. A draining connection is on standby: sheddable.
fn linger(conn: Conn, mut reader: BufReader<ClientReader>, slot: &mut Slot) {
    slot.stand_by();
    let _ = conn.stream.shutdown(Shutdown::Write);
    reader.get_mut().deadline = Some(Instant::now() + LINGER);
    let mut sink = [0u8; 16 * 1024];
    while matches!(reader.read(&mut sink), Ok(n) if n > 0) {}
}

/// The client's `x-request-id` when it is a sane token, else a new one.
fn request_id(head: &Head) -> String {
    match head.header("x-request-id") {
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

/// An admitted, fully read request: the endpoint answers it.
fn handle_request(req: &Request, conn: &mut Conn, app: &Arc<App>) {
    let path = req.head.path();
    let head_only = req.head.method == "HEAD";
    let reply = match (req.head.method.as_str(), path) {
        ("POST", "/v1/chat/completions") => return complete(req, conn, app, Protocol::Chat),
        ("POST", "/v1/messages") => return complete(req, conn, app, Protocol::Anthropic),
        ("POST", "/v1/responses") => return complete(req, conn, app, Protocol::Responses),
        ("POST", "/v1/messages/count_tokens") => match serde_json::from_slice::<Value>(&req.body) {
            Ok(v) => Reply::json(200, &protocol::anthropic::count_tokens(&v)),
            Err(e) => {
                let why = BadRequest::NotJson(e.to_string()).to_string();
                Reply::json(
                    400,
                    &Protocol::Anthropic.error(&ErrorReport::new(400, &why)),
                )
            }
        },
        ("HEAD" | "GET", "/") => dashboard(app),
        ("GET" | "HEAD", "/health") => Reply::json(200, &health(app)),
        ("GET" | "HEAD", "/v1/models") => Reply::json(200, &models(app)),
        ("GET", "/fcm/admin/breakers") => Reply::json(
            200,
            &serde_json::to_value(app.router.breakers.rows(crate::time::now_ms()))
                .unwrap_or_default(),
        ),
        ("POST", "/fcm/admin/breakers/reset") => admin_reset(req, app),
        ("GET", "/fcm/admin/live") => Reply::json(200, &live::answer(req, app)),
        ("GET" | "HEAD", "/metrics") => metrics::reply(app),
        ("POST", crate::edge::access::STOP_PATH) => {
            // Stops as SIGTERM does: running streams finish, state is saved.
            crate::edge::signals::request_stop();
            Reply::json(200, &json!({"stopping": true, "pid": std::process::id()}))
        }
        ("GET", "/fcm/admin/usage") => Reply::json(
            200,
            &serde_json::to_value(app.router.ledger.snapshot()).unwrap_or_default(),
        ),
        ("GET", "/fcm/admin/history") => {
            let n = req
                .head
                .query("n")
                .and_then(|v| v.parse().ok())
                .unwrap_or(usize::MAX);
            Reply::json(
                200,
                &serde_json::to_value(app.router.history.last(n)).unwrap_or_default(),
            )
        }
        (method, "/v1/chat/completions" | "/health" | "/v1/models") => Reply::json(
            405,
            &edge_error(
                405,
                &format!("{method} is not allowed on {path}"),
                "invalid_request_error",
            ),
        ),
        (method, _) => {
            let msg = format!("no route for {method} {path}; fcm serves /v1/chat/completions, /v1/messages, /v1/responses, /v1/models and /health");
            Reply::json(404, &edge_error(404, &msg, "not_found_error"))
        }
    };
    conn.send(reply, head_only);
}

fn dashboard(app: &App) -> Reply {
    let now = crate::time::now_ms();
    let summary = crate::edge::dashboard::Summary {
        version: env!("CARGO_PKG_VERSION"),
        address: app.address.to_string(),
        uptime_ms: app.started.elapsed().as_millis() as u64,
        routable: app.router.routable().count(),
        in_flight: app.in_flight.load(Ordering::Acquire),
    };
    let mut configured: Vec<(&str, Vec<String>)> = app
        .router
        .routable()
        .filter(|c| !c.target.keys.is_empty())
        .map(|c| {
            let labels = c.target.keys.iter().map(|k| k.label.clone()).collect();
            (c.target.provider_id.as_str(), labels)
        })
        .collect();
    configured.dedup_by(|a, b| a.0 == b.0);
    let usage = crate::state::ledger::report::report(
        &app.router.ledger.snapshot(),
        &app.catalog,
        &configured,
        now,
        1,
    );
    let history = app.router.history.last(crate::state::trace::HISTORY_LEN);
    let strips = crate::edge::dashboard::strips(&history, now, |m| app.router.live_results(m));
    let page = crate::edge::dashboard::render(
        &summary,
        &strips,
        &app.router.breakers.rows(now),
        &usage,
        &history[history.len().saturating_sub(50)..],
    );
    Reply {
        status: 200,
        headers: vec![("content-type".into(), "text/html; charset=utf-8".into())],
        body: page.into_bytes(),
    }
}

fn admin_reset(req: &Request, app: &App) -> Reply {
    let model = req.head.query("model").unwrap_or_else(|| "all".into());
    let n = app.router.reset(if model == "all" {
        None
    } else {
        Some(model.as_str())
    });
    Reply::json(200, &json!({"reset": n, "model": model}))
}

fn health(app: &App) -> Value {
    let now = crate::time::now_ms();
    let rows = app.router.breakers.rows(now);
    let c = crate::state::breaker::Counts::of(&rows, app.router.routable().count(), |m| {
        app.router.knows(m)
    });
    json!({
        "status": "ok",
        "version": env!("CARGO_PKG_VERSION"),
        "uptimeSecs": app.started.elapsed().as_secs(),
        "address": app.address.to_string(),
        "pid": std::process::id(),
        "models": {
            "routable": c.routable,
            "closed": c.closed,
            "degraded": c.degraded,
            "halfOpen": c.half_open,
            "open": c.open,
            "quotaPaused": c.quota_paused,
        },
        "inFlight": app.in_flight.load(Ordering::Acquire),
        "connections": app.connections.open(),
        "stateWrites": {"breakers": app.writes.breakers.load(Ordering::Relaxed), "history": app.writes.history.load(Ordering::Relaxed), "usage": app.writes.usage.load(Ordering::Relaxed), "affinity": app.writes.affinity.load(Ordering::Relaxed)},
    })
}

fn models(app: &App) -> Value {
    let mut data = vec![json!({"id": "fcm", "object": "model", "owned_by": "fcm", "created": 0})];
    data.extend(app.router.routable().map(|c| json!({"id": format!("fcm:{}", c.target.key), "object": "model", "owned_by": c.target.provider_id, "created": 0})));
    json!({"object": "list", "data": data})
}

/// Refuses a request before routing in the client's protocol, and records it.
fn reject_in(
    conn: &mut Conn,
    app: &App,
    proto: Protocol,
    mut trace: Trace,
    started: Instant,
    status: u16,
    message: &str,
) {
    trace.outcome = Outcome::Rejected;
    conn.send(
        Reply::json(status, &proto.error(&ErrorReport::new(status, message))).with_trace(&trace),
        false,
    );
    log(app, &trace, status, started);
    app.router.complete(trace, started);
}

/// A completion request in any protocol: translate, route, answer in the client's shapes.
fn complete(req: &Request, conn: &mut Conn, app: &Arc<App>, proto: Protocol) {
    let started = Instant::now();
    let id = request_id(&req.head);
    // Needs are read from the client's own body: translation may drop what a chat provider
    // cannot take (a PDF document), but the choice of model must still know about it.
    let mut needs = crate::capability::Needs::default();
    let mut session = None;
    let chat = serde_json::from_slice::<Value>(&req.body)
        .map_err(|e| BadRequest::NotJson(e.to_string()))
        .and_then(|parsed| {
            // The same field in all three protocols: anything but a boolean is a mistake to
            // name, not to guess at.
            if parsed
                .get("stream")
                .is_some_and(|s| !s.is_boolean() && !s.is_null())
            {
                return Err(BadRequest::Shape("\"stream\" must be true or false"));
            }
            needs = crate::capability::detect(&parsed);
            session = SessionName::of(|h| req.head.header(h), &parsed);
            proto.to_chat(parsed)
        });
    let chat = match chat {
        Ok(c) => c,
        Err(why) => {
            let trace = Trace::new(&id, "", false);
            return reject_in(conn, app, proto, trace, started, 400, &why.to_string());
        }
    };
    let requested = chat
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("fcm")
        .to_string();
    let stream = chat.get("stream").and_then(Value::as_bool).unwrap_or(false);
    let trace = Trace::new(&id, &requested, stream);
    let route = match app.router.resolve(&requested) {
        Ok(r) => r,
        Err(unknown) => {
            return reject_in(conn, app, proto, trace, started, 404, &unknown.to_string())
        }
    };
    // Tool calls are checked in strict mode only (`contentValidation: basic|off` turn it off).
    let strict =
        app.router.failover.content_validation == crate::answers::gate::ContentValidation::Strict;
    let tools = crate::answers::toolcall::Offered::of(&chat)
        .filter(|_| strict)
        .map(Arc::new);
    let ask = Ask {
        body: &chat,
        stream,
        needs,
        tools: tools.clone(),
        session,
    };
    let asked = Asked {
        proto,
        requested: &requested,
        stream,
        started,
        tools: &tools,
    };
    match app.router.route(&route, &ask, trace) {
        Ok(served) => deliver(conn, app, served, &asked),
        Err(refused) => refuse(conn, app, *refused, started, proto),
    }
}

/// What delivering an answer needs to know of the request.
struct Asked<'a> {
    proto: Protocol,
    /// The model name the client asked for (answers carry it back).
    requested: &'a str,
    stream: bool,
    started: Instant,
    /// The tools it offered: every call handed over must pass the check.
    tools: &'a Option<Arc<crate::answers::toolcall::Offered>>,
}

impl Asked<'_> {
    fn shape(&self, app: &App) -> protocol::StreamShape {
        self.proto.stream_shape(
            self.requested,
            app.router.reasoning.split_think_tags,
            self.tools.clone(),
        )
    }
}

/// What a refusal's error answer says, for the client's protocol to wrap: the outcome as
/// its code and every failed attempt.
fn refusal_report(refused: &Refused) -> ErrorReport<'_> {
    let attempts: Vec<Value> = refused
        .details
        .iter()
        .map(|a| json!({"model": a.model, "status": a.status, "kind": a.kind, "detail": a.detail}))
        .collect();
    ErrorReport {
        code: Some(refused.trace.outcome.as_str()),
        attempts: Some(Value::Array(attempts)),
        ..ErrorReport::new(refused.status, &refused.message)
    }
}

fn refuse(conn: &mut Conn, app: &App, refused: Refused, started: Instant, proto: Protocol) {
    let body = proto.error(&refusal_report(&refused));
    let mut reply = Reply::json(refused.status, &body).with_trace(&refused.trace);
    if let Some(secs) = refused.retry_after_secs {
        reply.headers.push(("retry-after".into(), secs.to_string()));
    }
    conn.send(reply, false);
    log(app, &refused.trace, refused.status, started);
    app.router.complete(refused.trace, started);
}

fn deliver(conn: &mut Conn, app: &App, served: Served<'_>, asked: &Asked<'_>) {
    let Served {
        delivery,
        mut trace,
    } = served;
    let (proto, requested, started) = (asked.proto, asked.requested, asked.started);
    let split_think = app.router.reasoning.split_think_tags;
    match delivery {
        Delivery::Full {
            status,
            body,
            parsed,
            stats,
        } if !asked.stream => {
            trace.completion_tokens = stats.completion_tokens;
            let body = proto.answer(body, parsed, requested, split_think, asked.tools.as_deref());
            let reply = Reply {
                status,
                headers: vec![("content-type".into(), "application/json".into())],
                body,
            };
            conn.send(reply.with_trace(&trace), false);
        }
        Delivery::Full {
            body,
            parsed,
            stats,
            ..
        } => {
            // The provider ignored `stream: true`: give the client the stream it asked for.
            let v = parsed.unwrap_or_else(|| serde_json::from_slice(&body).unwrap_or(Value::Null));
            let chunks = protocol::chunks_from_completion(&v);
            let mut shape = asked.shape(app);
            let mut bytes = shape.start();
            bytes.extend(shape.shape(protocol::chat_events(&chunks), chunks));
            bytes.extend(shape.finish(None));
            let mut client = StreamReply::new(conn, &trace);
            client.end(&bytes);
            trace.completion_tokens = stats.completion_tokens;
        }
        Delivery::Stream(committed) => {
            let mut client = StreamReply::new(conn, &trace);
            let mut committed = *committed;
            let end = forward::forward(&mut committed.stream, &mut client, asked.shape(app));
            committed.finish(&end, &mut trace);
        }
    }
    log(app, &trace, 200, started);
    app.router.complete(trace, started);
}

/// A stream's response on the client connection: the head goes out with the first bytes
/// (one write, so the first event is not held back by delayed ACKs), then one HTTP chunk
/// per send.
struct StreamReply<'c> {
    conn: &'c mut Conn,
    head: Option<Vec<u8>>,
}

impl<'c> StreamReply<'c> {
    fn new(conn: &'c mut Conn, trace: &Trace) -> StreamReply<'c> {
        let head = http::head(200, &sse_headers(trace), None, conn.keep_alive);
        StreamReply {
            conn,
            head: Some(head),
        }
    }

    fn framed(&mut self, bytes: &[u8], last: bool) -> Vec<u8> {
        let mut out = self.head.take().unwrap_or_default();
        chunk(bytes, &mut out);
        if last {
            out.extend_from_slice(LAST_CHUNK);
        }
        out
    }
}

impl ClientSink for StreamReply<'_> {
    fn send(&mut self, bytes: &[u8]) -> bool {
        let out = self.framed(bytes, false);
        if !out.is_empty() {
            self.conn.write(&out);
        }
        !self.conn.broken
    }

    fn end(&mut self, bytes: &[u8]) {
        let out = self.framed(bytes, true);
        self.conn.write(&out);
    }
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
        app.router.redact(&trace.id),
        app.router.redact(&trace.requested_model),
        started.elapsed().as_millis(),
        trace.decision_header()
    );
}

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

use serde_json::{json, Value};

/// How long `hang` holds a connection at most, so a forgotten test cannot hang forever.
const HANG_LIMIT: Duration = Duration::from_secs(120);
/// Largest request body the fake provider reads.
const MAX_REQUEST: usize = 64 * 1024 * 1024;

/// What the fake provider does with a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Behavior {
    /// Answers in the mode asked for (JSON or SSE).
    Ok,
    /// Like `ok` but streams word by word with a short pause between words.
    OkStream,
    /// Waits this long, then answers like `ok`.
    Slow(Duration),
    EmptyChoices,
    EmptyContent,
    /// 200 with an `error` object as the whole body.
    ErrorPayload200,
    InvalidJson,
    /// 200 with an HTML maintenance page.
    Html,
    /// An SSE stream with only a role delta, then `[DONE]`.
    SseEmpty,
    SseErrorFirst,
    SseErrorAfterContent,
    /// Keep-alive comments for a while, then a normal stream.
    SseKeepaliveThenOk,
    /// 429 with `Retry-After` of this many seconds.
    RateLimit(u64),
    /// 429 with `x-ratelimit-reset-requests` (as `XmYs`) instead of `Retry-After`.
    RateLimitReset(u64),
    /// 400 saying the prompt exceeds the model's maximum context length.
    ContextOverflow,
    /// The first request gets 503 with `Retry-After: 1`; later ones are answered.
    BusyOnce,
    Auth401,
    BadRequest400,
    Server500,
    /// Accepts and never answers.
    Hang,
    /// Reads the request and closes the connection.
    DropConnection,
    /// Over 256 KiB of frames without content, then `[DONE]`.
    SseNoUseful256k,
    ReasoningOnly,
    ToolCallsOnly,
    /// 200 with this many bytes of garbage.
    Garbage(usize),
    /// Streams some content, then stalls for this long before finishing.
    StallAfterContent(Duration),
    /// Waits this long, then answers 500.
    SlowFail(Duration),
    /// An agent's turn: calls the client's shell tool (`Bash`, `exec_command`,
    /// `run_commands`, ...) to echo `fcm-tool-ok`, then answers with what the tool returned.
    ToolRoundTrip,
    /// Streams a word every 100 ms for this long (client disconnects, many open streams).
    LongStream(Duration),
}

impl Behavior {
    /// Parses `name[:param][#tag]`, e.g. `slow:2500`, `rate_limit:30`, `ok#17`.
    pub fn parse(model: &str) -> Option<Behavior> {
        let name = model.split('#').next().unwrap_or("");
        let (name, param) = match name.split_once(':') {
            Some((n, p)) => (n, p.parse::<u64>().ok()),
            None => (name, None),
        };
        let ms = |default: u64| Duration::from_millis(param.unwrap_or(default));
        Some(match name {
            "ok" => Behavior::Ok,
            "ok_stream" => Behavior::OkStream,
            "slow" => Behavior::Slow(ms(300)),
            "empty_choices" => Behavior::EmptyChoices,
            "empty_content" => Behavior::EmptyContent,
            "error_payload_200" => Behavior::ErrorPayload200,
            "invalid_json" => Behavior::InvalidJson,
            "html" => Behavior::Html,
            "sse_empty" => Behavior::SseEmpty,
            "sse_error_first" => Behavior::SseErrorFirst,
            "sse_error_after_content" => Behavior::SseErrorAfterContent,
            "sse_keepalive_then_ok" => Behavior::SseKeepaliveThenOk,
            "rate_limit" => Behavior::RateLimit(param.unwrap_or(30)),
            "rate_limit_reset" => Behavior::RateLimitReset(param.unwrap_or(90)),
            "context_overflow" => Behavior::ContextOverflow,
            "busy_once" => Behavior::BusyOnce,
            "auth_401" => Behavior::Auth401,
            "bad_request_400" => Behavior::BadRequest400,
            "server_500" => Behavior::Server500,
            "hang" => Behavior::Hang,
            "drop_connection" => Behavior::DropConnection,
            "sse_no_useful_256k" => Behavior::SseNoUseful256k,
            "reasoning_only" => Behavior::ReasoningOnly,
            "tool_calls_only" => Behavior::ToolCallsOnly,
            "garbage" => Behavior::Garbage(param.unwrap_or(5 * 1024 * 1024) as usize),
            "stall_after_content" => Behavior::StallAfterContent(ms(5000)),
            "slow_fail" => Behavior::SlowFail(ms(300)),
            "long_stream" => Behavior::LongStream(ms(10_000)),
            "tool_round_trip" => Behavior::ToolRoundTrip,
            _ => return None,
        })
    }
}

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

struct Shared {
    script: HashMap<String, Behavior>,
    requests: Mutex<Vec<RecordedRequest>>,
    record: bool,
    stop: AtomicBool,
    counter: AtomicU64,
    /// Answers cut short because the client went away.
    aborted: AtomicU64,
    /// Requests seen per model (for behaviours that change over time).
    seen: Mutex<HashMap<String, u64>>,
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
            seen: Mutex::new(HashMap::new()),
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

fn behavior_for(shared: &Shared, model: &str) -> Behavior {
    shared
        .script
        .get(model)
        .cloned()
        .or_else(|| Behavior::parse(model))
        .unwrap_or(Behavior::Ok)
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
    let req = crate::http::read_request(reader, out, MAX_REQUEST).ok()?;
    Some(RecordedRequest {
        keep_alive: req.keep_alive,
        method: req.method,
        path: req.target,
        headers: req.headers,
        body: req.body,
        at: Instant::now(),
    })
}

/// Writes the head and (for fixed bodies) the body in one write: a split write meets
/// delayed ACKs. Returns whether the connection may be kept.
fn send_fixed(
    out: &mut TcpStream,
    status: u16,
    content_type: &str,
    extra: &[(&str, String)],
    body: &[u8],
) -> io::Result<bool> {
    let mut headers = vec![("content-type".to_string(), content_type.to_string())];
    headers.extend(extra.iter().map(|(k, v)| (k.to_string(), v.clone())));
    let mut msg = crate::http::head(status, &headers, Some(body.len()), true);
    msg.extend_from_slice(body);
    out.write_all(&msg)?;
    Ok(true)
}

/// A chunked SSE response, written frame by frame.
struct SseWriter<'a> {
    out: &'a mut TcpStream,
    pending: Vec<u8>,
}

impl<'a> SseWriter<'a> {
    fn start(out: &'a mut TcpStream) -> Self {
        let headers = [
            ("content-type".to_string(), "text/event-stream".to_string()),
            ("cache-control".to_string(), "no-cache".to_string()),
        ];
        SseWriter {
            out,
            pending: crate::http::head(200, &headers, None, true),
        }
    }

    fn raw(&mut self, text: &str) -> io::Result<()> {
        crate::http::chunk(text.as_bytes(), &mut self.pending);
        self.flush()
    }

    fn data(&mut self, v: &Value) -> io::Result<()> {
        self.raw(&format!("data: {v}\n\n"))
    }

    fn flush(&mut self) -> io::Result<()> {
        let bytes = std::mem::take(&mut self.pending);
        self.out.write_all(&bytes)
    }

    fn done(mut self) -> io::Result<bool> {
        self.raw("data: [DONE]\n\n")?;
        self.pending.extend_from_slice(crate::http::LAST_CHUNK);
        self.flush()?;
        Ok(true)
    }
}

fn chunk(id: &str, model: &str, delta: Value, finish: Option<&str>) -> Value {
    json!({"id": id, "object": "chat.completion.chunk", "created": 1_700_000_000u64, "model": model,
           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
}

fn respond(req: &RecordedRequest, shared: &Shared, out: &mut TcpStream) -> io::Result<bool> {
    let n = shared.counter.fetch_add(1, Ordering::Relaxed);
    if req.method == "GET" && req.path.ends_with("/models") {
        let body = json!({"object": "list", "data": shared.script.keys().map(|k| json!({"id": k})).collect::<Vec<_>>()});
        return send_fixed(
            out,
            200,
            "application/json",
            &[],
            body.to_string().as_bytes(),
        );
    }
    if req.method != "POST" || !req.path.ends_with("/chat/completions") {
        return send_fixed(
            out,
            404,
            "application/json",
            &[],
            br#"{"error":{"message":"no such route"}}"#,
        );
    }
    let body = req.json();
    let model = body
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let stream = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
    let usage = body
        .pointer("/stream_options/include_usage")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let behavior = behavior_for(shared, &model);
    let id = format!("chatcmpl-fake-{n}");
    let answer = format!("Hello from {model}.");
    let json_ct = "application/json";
    let error =
        |msg: &str, kind: &str| json!({"error": {"message": msg, "type": kind}}).to_string();
    match behavior {
        Behavior::Slow(d) => {
            std::thread::sleep(d);
            ok_answer(out, &id, &model, &answer, stream, usage, Duration::ZERO)
        }
        Behavior::Ok => ok_answer(out, &id, &model, &answer, stream, usage, Duration::ZERO),
        Behavior::OkStream => ok_answer(out, &id, &model, &answer, stream, usage, Duration::from_millis(5)),
        Behavior::EmptyChoices if !stream => {
            let b = json!({"id": id, "object": "chat.completion", "model": model, "choices": []});
            send_fixed(out, 200, json_ct, &[], b.to_string().as_bytes())
        }
        Behavior::EmptyChoices => {
            let mut w = SseWriter::start(out);
            w.data(&json!({"id": id, "object": "chat.completion.chunk", "model": model, "choices": []}))?;
            w.done()
        }
        Behavior::EmptyContent if !stream => {
            let b = json!({"id": id, "object": "chat.completion", "model": model,
                           "choices": [{"index": 0, "message": {"role": "assistant", "content": ""}, "finish_reason": "stop"}]});
            send_fixed(out, 200, json_ct, &[], b.to_string().as_bytes())
        }
        Behavior::EmptyContent => {
            let mut w = SseWriter::start(out);
            w.data(&chunk(&id, &model, json!({"role": "assistant", "content": ""}), None))?;
            w.data(&chunk(&id, &model, json!({"content": ""}), Some("stop")))?;
            w.done()
        }
        Behavior::ErrorPayload200 => {
            send_fixed(out, 200, json_ct, &[], error("upstream model failed", "server_error").as_bytes())
        }
        Behavior::InvalidJson => send_fixed(out, 200, json_ct, &[], b"{\"choices\": [{\"message\": "),
        Behavior::Html => send_fixed(
            out,
            200,
            "text/html",
            &[],
            b"<!DOCTYPE html><html><head><title>Maintenance</title></head><body>We'll be back soon.</body></html>",
        ),
        Behavior::SseEmpty => {
            let mut w = SseWriter::start(out);
            w.data(&chunk(&id, &model, json!({"role": "assistant"}), None))?;
            w.done()
        }
        Behavior::SseErrorFirst => {
            let mut w = SseWriter::start(out);
            w.data(&json!({"error": {"message": "provider stream failed", "type": "server_error"}}))?;
            w.done()
        }
        Behavior::SseErrorAfterContent => {
            let mut w = SseWriter::start(out);
            w.data(&chunk(&id, &model, json!({"role": "assistant", "content": "Partial answer from "}), None))?;
            w.data(&chunk(&id, &model, json!({"content": model}), None))?;
            // A pause, so the content reaches the client before the error does.
            std::thread::sleep(Duration::from_millis(100));
            w.data(&json!({"error": {"message": "stream broke mid-answer", "type": "server_error"}}))?;
            w.done()
        }
        Behavior::SseKeepaliveThenOk if !stream => ok_answer(out, &id, &model, &answer, false, usage, Duration::ZERO),
        Behavior::SseKeepaliveThenOk => {
            let mut w = SseWriter::start(out);
            for _ in 0..5 {
                w.raw(": keep-alive\n\n")?;
                std::thread::sleep(Duration::from_millis(50));
            }
            stream_words(w, &id, &model, &answer, usage, Duration::ZERO)
        }
        Behavior::RateLimit(secs) => send_fixed(
            out,
            429,
            json_ct,
            &[("retry-after", secs.to_string())],
            error("Rate limit exceeded: too many requests", "rate_limit_error").as_bytes(),
        ),
        Behavior::RateLimitReset(secs) => send_fixed(
            out,
            429,
            json_ct,
            &[("x-ratelimit-reset-requests", format!("{}m{}s", secs / 60, secs % 60))],
            error("Too many requests", "rate_limit_error").as_bytes(),
        ),
        Behavior::BusyOnce => {
            let first = {
                let mut seen = shared.seen.lock().unwrap();
                let n = seen.entry(model.clone()).or_insert(0);
                *n += 1;
                *n == 1
            };
            if first {
                send_fixed(out, 503, json_ct, &[("retry-after", "1".to_string())], error("warming up", "server_error").as_bytes())
            } else {
                ok_answer(out, &id, &model, &answer, stream, usage, Duration::ZERO)
            }
        }
        Behavior::ContextOverflow => send_fixed(
            out,
            400,
            json_ct,
            &[],
            error("This model's maximum context length is 8192 tokens; your messages resulted in 9000 tokens", "invalid_request_error").as_bytes(),
        ),
        Behavior::Auth401 => send_fixed(out, 401, json_ct, &[], error("Invalid API key", "authentication_error").as_bytes()),
        Behavior::BadRequest400 => send_fixed(out, 400, json_ct, &[], error("unsupported parameter: foo", "invalid_request_error").as_bytes()),
        Behavior::Server500 => send_fixed(out, 500, json_ct, &[], error("internal error", "server_error").as_bytes()),
        Behavior::Hang => {
            let start = Instant::now();
            while start.elapsed() < HANG_LIMIT && !shared.stop.load(Ordering::SeqCst) {
                // Ends early when the client goes away.
                if out.peek(&mut [0u8; 1]).is_ok_and(|n| n == 0) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            Ok(false)
        }
        Behavior::DropConnection => Ok(false),
        Behavior::SseNoUseful256k => {
            let mut w = SseWriter::start(out);
            let frame = format!("data: {}\n\n", chunk(&id, &model, json!({"role": "assistant", "content": ""}), None));
            let mut sent = 0;
            while sent <= 300 * 1024 {
                w.raw(&frame.repeat(16))?;
                sent += frame.len() * 16;
            }
            w.done()
        }
        Behavior::ReasoningOnly if !stream => {
            let b = json!({"id": id, "object": "chat.completion", "model": model,
                           "choices": [{"index": 0, "message": {"role": "assistant", "content": "", "reasoning_content": "Thinking it over."}, "finish_reason": "stop"}]});
            send_fixed(out, 200, json_ct, &[], b.to_string().as_bytes())
        }
        Behavior::ReasoningOnly => {
            let mut w = SseWriter::start(out);
            w.data(&chunk(&id, &model, json!({"role": "assistant", "reasoning_content": "Thinking it over."}), None))?;
            w.data(&chunk(&id, &model, json!({}), Some("stop")))?;
            w.done()
        }
        Behavior::ToolCallsOnly => tool_call_answer(out, &id, &model, stream),
        Behavior::ToolRoundTrip => {
            let messages = body.get("messages").and_then(Value::as_array).cloned().unwrap_or_default();
            let last = messages.last().cloned().unwrap_or(Value::Null);
            match (last.get("role").and_then(Value::as_str), shell_tool(&body)) {
                (Some("tool"), _) => {
                    let output = last.get("content").map(|c| match c {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    });
                    let text = if output.unwrap_or_default().contains("fcm-tool-ok") {
                        "The tool said fcm-tool-ok."
                    } else {
                        "The tool ran, but its output did not come back."
                    };
                    ok_answer(out, &id, &model, text, stream, usage, Duration::ZERO)
                }
                (_, Some((name, args))) => call_answer(out, &id, &model, stream, &name, &args.to_string()),
                (_, None) => ok_answer(out, &id, &model, &answer, stream, usage, Duration::ZERO),
            }
        }
        Behavior::Garbage(n) => {
            let garbage: Vec<u8> = (0..n).map(|i| b"x7#\xff{"[i % 5]).collect();
            send_fixed(out, 200, json_ct, &[], &garbage)
        }
        Behavior::SlowFail(d) => {
            std::thread::sleep(d);
            send_fixed(out, 500, json_ct, &[], error("slow and broken", "server_error").as_bytes())
        }
        Behavior::LongStream(d) => {
            let mut w = SseWriter::start(out);
            w.data(&chunk(&id, &model, json!({"role": "assistant", "content": "Long "}), None))?;
            let start = Instant::now();
            while start.elapsed() < d {
                std::thread::sleep(Duration::from_millis(100));
                w.data(&chunk(&id, &model, json!({"content": "word "}), None))?;
            }
            w.data(&chunk(&id, &model, json!({}), Some("stop")))?;
            w.done()
        }
        Behavior::StallAfterContent(d) => {
            let mut w = SseWriter::start(out);
            w.data(&chunk(&id, &model, json!({"role": "assistant", "content": answer}), None))?;
            std::thread::sleep(d);
            w.data(&chunk(&id, &model, json!({}), Some("stop")))?;
            w.done()
        }
    }
}

fn ok_answer(
    out: &mut TcpStream,
    id: &str,
    model: &str,
    answer: &str,
    stream: bool,
    usage: bool,
    pause: Duration,
) -> io::Result<bool> {
    if stream {
        return stream_words(SseWriter::start(out), id, model, answer, usage, pause);
    }
    let words = answer.split_whitespace().count() as u64;
    let b = json!({"id": id, "object": "chat.completion", "created": 1_700_000_000u64, "model": model,
                   "choices": [{"index": 0, "message": {"role": "assistant", "content": answer}, "finish_reason": "stop"}],
                   "usage": {"prompt_tokens": 12, "completion_tokens": words, "total_tokens": 12 + words}});
    send_fixed(out, 200, "application/json", &[], b.to_string().as_bytes())
}

fn stream_words(
    mut w: SseWriter<'_>,
    id: &str,
    model: &str,
    answer: &str,
    usage: bool,
    pause: Duration,
) -> io::Result<bool> {
    w.data(&chunk(
        id,
        model,
        json!({"role": "assistant", "content": ""}),
        None,
    ))?;
    let words: Vec<&str> = answer.split_inclusive(' ').collect();
    for word in &words {
        w.data(&chunk(id, model, json!({"content": word}), None))?;
        if !pause.is_zero() {
            std::thread::sleep(pause);
        }
    }
    w.data(&chunk(id, model, json!({}), Some("stop")))?;
    if usage {
        let n = words.len() as u64;
        w.data(&json!({"id": id, "object": "chat.completion.chunk", "model": model, "choices": [],
                       "usage": {"prompt_tokens": 12, "completion_tokens": n, "total_tokens": 12 + n}}))?;
    }
    w.done()
}

fn tool_call_answer(out: &mut TcpStream, id: &str, model: &str, stream: bool) -> io::Result<bool> {
    call_answer(
        out,
        id,
        model,
        stream,
        "Bash",
        r#"{"command":"echo fcm-tool-ok"}"#,
    )
}

/// The shell tool a coding client offers, with arguments that echo `fcm-tool-ok`.
fn shell_tool(body: &Value) -> Option<(String, Value)> {
    let names: Vec<&str> = body
        .get("tools")
        .and_then(Value::as_array)?
        .iter()
        .filter_map(|t| t.pointer("/function/name").and_then(Value::as_str))
        .collect();
    let echo = "echo fcm-tool-ok";
    let pick = |name: &str, args: Value| names.contains(&name).then(|| (name.to_string(), args));
    pick(
        "Bash",
        json!({"command": echo, "description": "Print a marker"}),
    )
    .or_else(|| pick("exec_command", json!({"cmd": echo})))
    .or_else(|| pick("run_commands", json!({"commands": [echo]})))
    .or_else(|| {
        pick(
            "execute_command",
            json!({"command": echo, "requires_approval": false}),
        )
    })
    .or_else(|| pick("shell", json!({"command": ["bash", "-lc", echo]})))
}

fn call_answer(
    out: &mut TcpStream,
    id: &str,
    model: &str,
    stream: bool,
    name: &str,
    args: &str,
) -> io::Result<bool> {
    if !stream {
        let b = json!({"id": id, "object": "chat.completion", "model": model,
                       "choices": [{"index": 0, "message": {"role": "assistant", "content": null,
                           "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": name, "arguments": args}}]},
                           "finish_reason": "tool_calls"}]});
        return send_fixed(out, 200, "application/json", &[], b.to_string().as_bytes());
    }
    let mut w = SseWriter::start(out);
    w.data(&chunk(id, model, json!({"role": "assistant", "tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": name, "arguments": ""}}]}), None))?;
    let mut mid = args.len() / 2;
    while !args.is_char_boundary(mid) {
        mid -= 1;
    }
    let (a, b) = args.split_at(mid);
    for part in [a, b] {
        w.data(&chunk(
            id,
            model,
            json!({"tool_calls": [{"index": 0, "function": {"arguments": part}}]}),
            None,
        ))?;
    }
    w.data(&chunk(id, model, json!({}), Some("tool_calls")))?;
    w.done()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn behaviours_parse_with_params_and_tags() {
        assert_eq!(Behavior::parse("ok#3"), Some(Behavior::Ok));
        assert_eq!(
            Behavior::parse("slow:2500"),
            Some(Behavior::Slow(Duration::from_millis(2500)))
        );
        assert_eq!(
            Behavior::parse("slow:300#12"),
            Some(Behavior::Slow(Duration::from_millis(300)))
        );
        assert_eq!(Behavior::parse("rate_limit"), Some(Behavior::RateLimit(30)));
        assert_eq!(Behavior::parse("nope"), None);
    }
}

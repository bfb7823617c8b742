//! The fake provider's repertoire: what each model name makes it do ([`Behavior`]), and
//! the answers it writes for each behaviour.

use std::io;
use std::net::TcpStream;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::tools::{
    call_answer, offered_tool_answer, repeated_call_ids, shell_tool, text_answer_in_pieces,
    text_then_cut_call, tool_call_answer, ToolMove,
};
use super::{send_fixed, RecordedRequest, Shared, SseWriter, HANG_LIMIT};

mod awkward_streams;
mod rate_limits;
pub use awkward_streams::huge_text;
pub use rate_limits::{LimitStyle, WINDOW as COUNTDOWN_WINDOW};

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
    /// Reasoning, then the answer, in one provider's shape (see [`Thinker`]).
    Thinks(Thinker),
    /// Two parallel tool calls that repeat one id (`call_1`) and continue with `""` and
    /// `null` ids, as some hosts send them.
    RepeatedCallIds,
    /// A call of `Bash` whose arguments are cut off (`{"command":"ec`).
    CutToolArgs,
    /// A call of a tool no client offers (`launch_rockets`).
    UnknownTool,
    /// Streams some text, then a call of `Bash` with cut-off arguments.
    TextThenCutToolArgs,
    /// Text with `finish_reason: tool_calls` but no call at all.
    ToolFinishWithoutCalls,
    /// The shell call written as text in a Hermes `<tool_call>` block, streamed in
    /// 5-character pieces (tags cut), finish `stop`.
    HermesTextCall,
    /// The shell call written as text in a Kimi tool-call section.
    KimiTextCall,
    /// With tools offered, a call of the first one holding its required properties (a
    /// proven tool caller); without, answers like `ok`.
    CallsOfferedTool,
    /// With tools offered, says in words which tool it would call, with no call (a model
    /// that cannot call tools); without, answers like `ok`.
    DescribesOfferedTool,
    /// With tools offered, a call of the first one whose arguments are cut off; without,
    /// answers like `ok`.
    BreaksOfferedTool,
    /// 200 whose whole body is an error saying the model is overloaded, stream asked or
    /// not; with `Retry-After` of this many seconds when given (`overloaded_200:7`).
    Overloaded200(Option<u64>),
    /// Echoes the key it was sent (`Authorization`, else `x-api-key`), masked the way
    /// providers do (`sk-SECRE****7890`): in a 401 `Incorrect API key provided: …` with
    /// `echo_masked_key:401`, else in the content of a 200 answer (streamed when asked).
    EchoMaskedKey {
        status: u16,
    },
    /// A stream whose first write is only blank lines, then writes cut at awkward points
    /// (one byte, inside `data:`, between a CR and its LF), with pauses so that each write
    /// arrives as its own read; the text is `Hello from <model>.`
    SseBlankLinesThenSplit,
    /// Some content, then one `data:` event of about this many bytes (written in 64 KiB
    /// pieces), then the rest of the answer: `Hello ` + the long text + ` and goodbye.`
    SseHugeEvent(usize),
    /// Answers like `ok` with `x-ratelimit-*` headers in one provider's style
    /// (`countdown_groq:3`, `countdown_openrouter`, `countdown_cerebras`,
    /// `countdown_mistral`) that count this model's requests per key down from the limit
    /// (default 3) in windows of [`rate_limits::WINDOW`]; past the limit, 429.
    CountsDown {
        style: LimitStyle,
        limit: u64,
    },
    /// 401 for a key holding `REVOKED`; other keys are answered like `ok`.
    RejectsRevoked,
    /// 404 saying the model does not exist, in Groq's words (a retired model).
    ModelNotFound,
}

/// Where a provider puts its model's reasoning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Thinker {
    /// `reasoning_content` (DeepSeek, Z.ai, Qwen).
    ReasoningContent,
    /// `reasoning` (gpt-oss on Groq and Cerebras, Ollama).
    Reasoning,
    /// `reasoning` and `reasoning_details` with the same text (OpenRouter).
    ReasoningDetails,
    /// `<think>…</think>` at the start of `content`, streamed in 3-character pieces so the
    /// tags are cut (DeepSeek-R1 hosts).
    ThinkTags,
    /// `content` as an array with a `thinking` part (Mistral's Magistral).
    ContentArray,
}

impl Thinker {
    /// The reasoning every thinker sends, and the answer after it.
    pub const REASONING: &'static str = "First, the user greets me.";

    /// The message (or one stream delta) carrying `reasoning`.
    fn reasoning(self, reasoning: &str) -> Value {
        match self {
            Thinker::ReasoningContent => json!({"content": null, "reasoning_content": reasoning}),
            Thinker::Reasoning => json!({"content": null, "reasoning": reasoning}),
            Thinker::ReasoningDetails => json!({"reasoning": reasoning,
                "reasoning_details": [{"type": "reasoning.text", "text": reasoning, "format": "unknown"}]}),
            Thinker::ThinkTags => json!({"content": reasoning}),
            Thinker::ContentArray => {
                json!({"content": [{"type": "thinking", "thinking": [{"type": "text", "text": reasoning}]}]})
            }
        }
    }
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
            "thinks_reasoning_content" => Behavior::Thinks(Thinker::ReasoningContent),
            "thinks_reasoning" => Behavior::Thinks(Thinker::Reasoning),
            "thinks_reasoning_details" => Behavior::Thinks(Thinker::ReasoningDetails),
            "thinks_tags" => Behavior::Thinks(Thinker::ThinkTags),
            "thinks_content_array" => Behavior::Thinks(Thinker::ContentArray),
            "repeated_call_ids" => Behavior::RepeatedCallIds,
            "cut_tool_args" => Behavior::CutToolArgs,
            "unknown_tool" => Behavior::UnknownTool,
            "text_then_cut_tool_args" => Behavior::TextThenCutToolArgs,
            "tool_finish_without_calls" => Behavior::ToolFinishWithoutCalls,
            "hermes_text_call" => Behavior::HermesTextCall,
            "kimi_text_call" => Behavior::KimiTextCall,
            "calls_offered_tool" => Behavior::CallsOfferedTool,
            "describes_offered_tool" => Behavior::DescribesOfferedTool,
            "breaks_offered_tool" => Behavior::BreaksOfferedTool,
            "overloaded_200" => Behavior::Overloaded200(param),
            "echo_masked_key" => Behavior::EchoMaskedKey {
                status: param.and_then(|p| u16::try_from(p).ok()).unwrap_or(200),
            },
            "sse_blank_lines_then_split" => Behavior::SseBlankLinesThenSplit,
            "sse_huge_event" => Behavior::SseHugeEvent(param.unwrap_or(3 * 1024 * 1024) as usize),
            "rejects_revoked" => Behavior::RejectsRevoked,
            "model_not_found" => Behavior::ModelNotFound,
            _ => match name.strip_prefix("countdown_").and_then(LimitStyle::parse) {
                Some(style) => Behavior::CountsDown {
                    style,
                    limit: param.unwrap_or(3),
                },
                None => return None,
            },
        })
    }
}

/// A stream of one choice: `deltas` in order (the first also says `role: assistant`), then
/// a chunk with `finish` and `[DONE]`.
pub(super) fn stream_deltas(
    out: &mut TcpStream,
    id: &str,
    model: &str,
    deltas: impl IntoIterator<Item = Value>,
    finish: &str,
) -> io::Result<bool> {
    let mut w = SseWriter::start(out);
    for (n, mut delta) in deltas.into_iter().enumerate() {
        if n == 0 {
            delta["role"] = json!("assistant");
        }
        w.data(&chunk(id, model, delta, None))?;
    }
    w.data(&chunk(id, model, json!({}), Some(finish)))?;
    w.done()
}

/// A complete chat answer of one choice.
pub(super) fn completion(
    out: &mut TcpStream,
    id: &str,
    model: &str,
    message: Value,
    finish: &str,
) -> io::Result<bool> {
    let b = json!({"id": id, "object": "chat.completion", "model": model,
                   "choices": [{"index": 0, "message": message, "finish_reason": finish}]});
    send_fixed(out, 200, "application/json", &[], b.to_string().as_bytes())
}

pub(super) fn chunk(id: &str, model: &str, delta: Value, finish: Option<&str>) -> Value {
    json!({"id": id, "object": "chat.completion.chunk", "created": 1_700_000_000u64, "model": model,
           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
}

pub(super) fn behavior_for(shared: &Shared, model: &str) -> Behavior {
    shared
        .script
        .get(model)
        .cloned()
        .or_else(|| Behavior::parse(model))
        .unwrap_or(Behavior::Ok)
}

/// Waits `d` before answering, like a slow model, but stops with an error as soon as the
/// client closes the connection (a server noticing a cancelled request): it counts as an
/// aborted answer.
fn wait_for_client(out: &mut TcpStream, d: Duration) -> io::Result<()> {
    let end = Instant::now() + d;
    let mut byte = [0u8; 1];
    while let Some(left) = end
        .checked_duration_since(Instant::now())
        .filter(|l| !l.is_zero())
    {
        out.set_read_timeout(Some(left.min(Duration::from_millis(50))))?;
        let peeked = out.peek(&mut byte);
        out.set_read_timeout(None)?;
        match peeked {
            Ok(0) => return Err(io::ErrorKind::ConnectionAborted.into()),
            // A pipelined request waiting: keep waiting out the delay.
            Ok(_) => std::thread::sleep(left.min(Duration::from_millis(50))),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

pub(super) fn respond(
    req: &RecordedRequest,
    shared: &Shared,
    out: &mut TcpStream,
) -> io::Result<bool> {
    let n = shared.counter.fetch_add(1, Ordering::Relaxed);
    if req.method == "GET" && req.path.ends_with("/models") {
        // The scripted models, else a fixed list: a few behaviours and one model no test
        // catalog has, so that a refresh finds something retired and something new.
        let mut ids: Vec<&str> = shared.script.keys().map(String::as_str).collect();
        if ids.is_empty() {
            ids = LISTED.to_vec();
        }
        ids.sort_unstable();
        let data: Vec<Value> = ids
            .iter()
            .map(|id| match *id {
                "newcomer-coder" => json!({"id": id, "object": "model", "context_window": 262144}),
                _ => json!({"id": id, "object": "model"}),
            })
            .collect();
        let body = json!({"object": "list", "data": data});
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
            wait_for_client(out, d)?;
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
            completion(out, &id, &model, json!({"role": "assistant", "content": ""}), "stop")
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
            completion(out, &id, &model, json!({"role": "assistant", "content": "", "reasoning_content": "Thinking it over."}), "stop")
        }
        Behavior::ReasoningOnly => {
            let mut w = SseWriter::start(out);
            w.data(&chunk(&id, &model, json!({"role": "assistant", "reasoning_content": "Thinking it over."}), None))?;
            w.data(&chunk(&id, &model, json!({}), Some("stop")))?;
            w.done()
        }
        Behavior::ToolCallsOnly => tool_call_answer(out, &id, &model, stream),
        Behavior::Thinks(thinker) => thinking_answer(out, &id, &model, thinker, stream),
        Behavior::RepeatedCallIds => repeated_call_ids(out, &id, &model, stream),
        Behavior::CutToolArgs => call_answer(out, &id, &model, stream, "Bash", r#"{"command":"ec"#),
        Behavior::UnknownTool => call_answer(out, &id, &model, stream, "launch_rockets", "{}"),
        Behavior::TextThenCutToolArgs => text_then_cut_call(out, &id, &model, stream),
        Behavior::HermesTextCall | Behavior::KimiTextCall => {
            let (name, args) = shell_tool(&body).unwrap_or(("Bash".into(), json!({"command": "echo fcm-tool-ok"})));
            let text = if behavior == Behavior::HermesTextCall {
                format!("Running it.<tool_call>{}</tool_call>", json!({"name": name, "arguments": args}))
            } else {
                format!("Running it.<|tool_calls_section_begin|><|tool_call_begin|>functions.{name}:0<|tool_call_argument_begin|>{args}<|tool_call_end|><|tool_calls_section_end|>")
            };
            text_answer_in_pieces(out, &id, &model, &text, stream)
        }
        Behavior::ToolFinishWithoutCalls if !stream => {
            completion(out, &id, &model, json!({"role": "assistant", "content": "Nothing to run."}), "tool_calls")
        }
        Behavior::ToolFinishWithoutCalls => {
            stream_deltas(out, &id, &model, [json!({"content": "Nothing to run."})], "tool_calls")
        }
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
        Behavior::CallsOfferedTool => offered_tool_answer(out, &id, &model, stream, usage, &body, ToolMove::Call),
        Behavior::DescribesOfferedTool => offered_tool_answer(out, &id, &model, stream, usage, &body, ToolMove::Describe),
        Behavior::BreaksOfferedTool => offered_tool_answer(out, &id, &model, stream, usage, &body, ToolMove::Break),
        Behavior::Overloaded200(retry) => {
            let extra: Vec<(&str, String)> = retry.map(|r| ("retry-after", r.to_string())).into_iter().collect();
            let body = error("The model is overloaded. Please try again later.", "overloaded_error");
            send_fixed(out, 200, json_ct, &extra, body.as_bytes())
        }
        Behavior::EchoMaskedKey { status } => {
            let sent = req.header("authorization").or_else(|| req.header("x-api-key"));
            let masked = masked_key(sent.unwrap_or(""));
            if (200..300).contains(&status) {
                let text = format!("Your key is {masked} today.");
                ok_answer(out, &id, &model, &text, stream, usage, Duration::ZERO)
            } else {
                let msg = format!("Incorrect API key provided: {masked}. You can find your API key in your account settings.");
                send_fixed(out, status, json_ct, &[], error(&msg, "invalid_request_error").as_bytes())
            }
        }
        Behavior::SseBlankLinesThenSplit => awkward_streams::blank_lines_then_split(out, &id, &model),
        Behavior::SseHugeEvent(len) => awkward_streams::huge_event(out, &id, &model, len),
        Behavior::CountsDown { style, limit } => {
            let said = Said { id: &id, model: &model, answer: &answer, stream, usage };
            rate_limits::counts_down(req, shared, out, &said, style, limit)
        }
        Behavior::ModelNotFound => {
            let body = json!({"error": {"code": "model_not_found", "type": "invalid_request_error",
                "message": format!("The model `{model}` does not exist or you do not have access to it.")}});
            send_fixed(out, 404, json_ct, &[], body.to_string().as_bytes())
        }
        Behavior::RejectsRevoked => {
            let sent = req.header("authorization").unwrap_or("");
            if sent.contains("REVOKED") {
                send_fixed(out, 401, json_ct, &[], error("Invalid API key: this key was revoked", "authentication_error").as_bytes())
            } else {
                ok_answer(out, &id, &model, &answer, stream, usage, Duration::ZERO)
            }
        }
    }
}

/// What `GET /models` lists when no model is scripted.
pub const LISTED: [&str; 5] = [
    "calls_offered_tool",
    "newcomer-coder",
    "ok",
    "ok_stream",
    "slow",
];

/// A key as providers show it back: its first 8 and last 4 characters around `****`.
fn masked_key(authorization: &str) -> String {
    let key: Vec<char> = authorization
        .trim_start_matches("Bearer ")
        .chars()
        .collect();
    if key.len() < 12 {
        return "****".to_string();
    }
    let head: String = key[..8].iter().collect();
    let tail: String = key[key.len() - 4..].iter().collect();
    format!("{head}****{tail}")
}

pub(super) fn ok_answer(
    out: &mut TcpStream,
    id: &str,
    model: &str,
    answer: &str,
    stream: bool,
    usage: bool,
    pause: Duration,
) -> io::Result<bool> {
    let said = Said {
        id,
        model,
        answer,
        stream,
        usage,
    };
    ok_answer_with(out, &said, pause, &[])
}

/// What an `ok` answer says, and how.
#[derive(Clone, Copy)]
pub(super) struct Said<'a> {
    pub id: &'a str,
    pub model: &'a str,
    pub answer: &'a str,
    pub stream: bool,
    pub usage: bool,
}

/// An `ok` answer whose head carries `extra` headers too.
pub(super) fn ok_answer_with(
    out: &mut TcpStream,
    said: &Said<'_>,
    pause: Duration,
    extra: &[(&str, String)],
) -> io::Result<bool> {
    let Said {
        id,
        model,
        answer,
        stream,
        usage,
    } = *said;
    if stream {
        return stream_words(
            SseWriter::start_with(out, extra),
            id,
            model,
            answer,
            usage,
            pause,
        );
    }
    let words = answer.split_whitespace().count() as u64;
    let b = json!({"id": id, "object": "chat.completion", "created": 1_700_000_000u64, "model": model,
                   "choices": [{"index": 0, "message": {"role": "assistant", "content": answer}, "finish_reason": "stop"}],
                   "usage": {"prompt_tokens": 12, "completion_tokens": words, "total_tokens": 12 + words}});
    send_fixed(
        out,
        200,
        "application/json",
        extra,
        b.to_string().as_bytes(),
    )
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

/// Reasoning, then `Hello from thinks.`, in a thinker's shape.
fn thinking_answer(
    out: &mut TcpStream,
    id: &str,
    model: &str,
    thinker: Thinker,
    stream: bool,
) -> io::Result<bool> {
    let answer = "Hello from thinks.";
    let reasoning = Thinker::REASONING;
    if !stream {
        let mut message = match thinker {
            Thinker::ThinkTags => {
                json!({"content": format!("<think>{reasoning}</think>\n\n{answer}")})
            }
            Thinker::ContentArray => json!({"content": [
                {"type": "thinking", "thinking": [{"type": "text", "text": reasoning}]},
                {"type": "text", "text": answer}]}),
            _ => {
                let mut m = thinker.reasoning(reasoning);
                m["content"] = json!(answer);
                m
            }
        };
        message["role"] = json!("assistant");
        return completion(out, id, model, message, "stop");
    }
    let mut deltas = vec![json!({"content": ""})];
    if thinker == Thinker::ThinkTags {
        // The whole content in 3-character pieces: the tags are cut in the middle.
        let text = format!("<think>{reasoning}</think>\n\n{answer}");
        let chars: Vec<char> = text.chars().collect();
        deltas.extend(
            chars
                .chunks(3)
                .map(|piece| json!({"content": piece.iter().collect::<String>()})),
        );
    } else {
        deltas.extend(
            reasoning
                .split_inclusive(' ')
                .map(|part| thinker.reasoning(part)),
        );
        deltas.extend(
            answer
                .split_inclusive(' ')
                .map(|word| json!({"content": word})),
        );
    }
    stream_deltas(out, id, model, deltas, "stop")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake_provider::tools::offered_call;

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
        assert_eq!(
            Behavior::parse("echo_masked_key:401#a"),
            Some(Behavior::EchoMaskedKey { status: 401 })
        );
        assert_eq!(
            Behavior::parse("overloaded_200"),
            Some(Behavior::Overloaded200(None))
        );
        assert_eq!(
            masked_key("Bearer sk-SECRET-1234567890"),
            "sk-SECRE****7890"
        );
        assert_eq!(masked_key("Bearer short"), "****");
    }

    #[test]
    fn split_and_long_streams_parse() {
        assert_eq!(
            Behavior::parse("sse_blank_lines_then_split#off"),
            Some(Behavior::SseBlankLinesThenSplit)
        );
        assert_eq!(
            Behavior::parse("sse_huge_event"),
            Some(Behavior::SseHugeEvent(3 * 1024 * 1024))
        );
        assert_eq!(
            Behavior::parse("sse_huge_event:2000000"),
            Some(Behavior::SseHugeEvent(2_000_000))
        );
    }

    #[test]
    fn offered_calls_hold_the_required_properties() {
        let body = json!({"tools": [{"type": "function", "function": {"name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                "days": {"type": "integer"}, "hourly": {"type": "boolean"}},
            "required": ["city", "unit", "days"]}}}]});
        assert_eq!(
            offered_call(&body),
            Some((
                "get_weather".to_string(),
                json!({"city": "Paris", "unit": "celsius", "days": 1})
            ))
        );
        let bare = json!({"tools": [{"type": "function", "function": {"name": "now"}}]});
        assert_eq!(offered_call(&bare), Some(("now".to_string(), json!({}))));
        assert_eq!(offered_call(&json!({"messages": []})), None);
        assert_eq!(
            Behavior::parse("calls_offered_tool#2"),
            Some(Behavior::CallsOfferedTool)
        );
    }
}

//! Answering one request: `GET /models` lists models; a chat completion gets what the
//! behaviour its model names says, written through `wire` or by the answer files beside
//! this one (`tools`, `thinking`, `rate_limits`, `awkward_streams`).

use std::io;
use std::net::TcpStream;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::behavior::Behavior;
use super::state::{RecordedRequest, Shared};
use super::tools::{
    call_answer, noisy_verdict, offered_tool_answer, repeated_call_ids, shell_tool,
    shell_tool_running, text_answer_in_pieces, text_then_cut_call, tool_call_answer, ToolMove,
    NOISY_COMMAND,
};
use super::wire::{
    chunk, completion, ok_answer, ok_answer_with, send_fixed, stream_deltas, stream_words, Said,
    SseWriter,
};
use super::{awkward_streams, continuations, rate_limits, thinking};

/// How long a stream that breaks after content pauses after it: the content has reached
/// the client by then (fcm holds a short text for up to a second to tell a notice).
const CONTENT_PAUSE: Duration = Duration::from_millis(1_200);
/// How long `hang` holds a connection at most, so a forgotten test cannot hang forever.
const HANG_LIMIT: Duration = Duration::from_secs(120);

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
    if req.method == "POST" && req.path == LATENCY_PATH {
        return set_latency(req, shared, out);
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
    let behavior = shared.behavior_for(&model);
    if let Some(extra) = shared.latency_of(&model) {
        // Set while the provider runs: this model answers that much later, whatever it does.
        wait_for_client(out, extra)?;
    }
    let id = format!("chatcmpl-fake-{n}");
    // A model that works answers the bench's question right, and anything else with a
    // greeting that names it.
    let answer = if asks_the_sum(&body) {
        crate::routing::ping::PING_SUM.to_string()
    } else {
        format!("Hello from {model}.")
    };
    let json_ct = "application/json";
    let said_ok = Said {
        id: &id,
        model: &model,
        answer: &answer,
        stream,
        usage,
        cached: None,
    };
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
            // A pause, so the content reaches the client before the error does: longer than
            // a router's wait for more of a short text (a notice's first words).
            std::thread::sleep(CONTENT_PAUSE);
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
            let said = Said { id: &id, model: &model, answer: &answer, stream, usage, cached: None };
            stream_words(w, &said, Duration::ZERO)
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
        Behavior::FreeTierExhausted => send_fixed(
            out,
            403,
            json_ct,
            &[],
            br#"{"error":{"code":"AllocationQuota.FreeTierOnly","message":"The free tier of the model has been exhausted. If you wish to continue access the model on a paid basis, please disable the \"use free tier only\" mode in the management console.","type":"AllocationQuota.FreeTierOnly"}}"#,
        ),
        Behavior::InsufficientQuota => send_fixed(
            out,
            429,
            json_ct,
            &[],
            error("You exceeded your current quota, please check your plan and billing details.", "insufficient_quota").as_bytes(),
        ),
        Behavior::FailsFirst(failing) => {
            if shared.count_seen(&model) <= failing {
                send_fixed(out, 500, json_ct, &[], error("internal error", "server_error").as_bytes())
            } else {
                ok_answer(out, &id, &model, &answer, stream, usage, Duration::ZERO)
            }
        }
        Behavior::BusyOnce => {
            if shared.count_seen(&model) == 1 {
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
        Behavior::BadRequestAfter(answered) => {
            if shared.count_seen(&model) <= answered {
                ok_answer(out, &id, &model, &answer, stream, usage, Duration::ZERO)
            } else {
                send_fixed(out, 400, json_ct, &[], error("unsupported parameter: foo", "invalid_request_error").as_bytes())
            }
        }
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
            completion(out, &id, &model, json!({"role": "assistant", "content": "", "reasoning_content": "Thinking it over."}), "length")
        }
        Behavior::ReasoningOnly => {
            let mut w = SseWriter::start(out);
            w.data(&chunk(&id, &model, json!({"role": "assistant", "reasoning_content": "Thinking it over."}), None))?;
            w.data(&chunk(&id, &model, json!({}), Some("length")))?;
            w.done()
        }
        Behavior::ToolCallsOnly => tool_call_answer(out, &id, &model, stream),
        Behavior::Thinks(thinker) => {
            let said = if asks_the_sum(&body) { answer.as_str() } else { "Hello from thinks." };
            thinking::thinking_answer(out, &id, &model, thinker, stream, said)
        }
        Behavior::WrongSum => {
            let said = if asks_the_sum(&body) { "The answer is 41." } else { answer.as_str() };
            ok_answer(out, &id, &model, said, stream, usage, Duration::ZERO)
        }
        Behavior::PaidNotice if !stream => ok_answer(out, &id, &model, PAID_NOTICE, false, usage, Duration::ZERO),
        Behavior::PaidNotice => {
            // Written by the provider, not generated: the whole notice in one piece.
            let mut w = SseWriter::start(out);
            w.data(&chunk(&id, &model, json!({"role": "assistant", "content": PAID_NOTICE}), None))?;
            w.data(&chunk(&id, &model, json!({}), Some("stop")))?;
            w.done()
        }
        Behavior::PaidNoticeStreamed if !stream => {
            ok_answer(out, &id, &model, PAID_NOTICE, false, usage, Duration::ZERO)
        }
        Behavior::PaidNoticeStreamed => {
            let mut w = SseWriter::start(out);
            let words: Vec<&str> = PAID_NOTICE.split_inclusive(' ').collect();
            for (n, piece) in words.chunks(2).enumerate() {
                let text = piece.concat();
                let delta = if n == 0 {
                    json!({"role": "assistant", "content": text})
                } else {
                    json!({"content": text})
                };
                w.data(&chunk(&id, &model, delta, None))?;
                std::thread::sleep(Duration::from_millis(20));
            }
            w.data(&chunk(&id, &model, json!({}), Some("stop")))?;
            w.done()
        }
        Behavior::RepeatedCallIds => repeated_call_ids(out, &id, &model, stream),
        Behavior::CutToolArgs => call_answer(out, &id, &model, stream, "Bash", r#"{"command":"ec"#),
        Behavior::UnknownTool => call_answer(out, &id, &model, stream, "launch_rockets", "{}"),
        Behavior::Patches => match super::tools::patch_call(&body) {
            Some(args) => call_answer(out, &id, &model, stream, "apply_patch", &args),
            None => ok_answer(out, &id, &model, super::tools::PATCHED, stream, usage, Duration::ZERO),
        },
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
        Behavior::NoisyToolRoundTrip => {
            let last = body.get("messages").and_then(Value::as_array).and_then(|m| m.last());
            match (last.and_then(|m| m.get("role")).and_then(Value::as_str), shell_tool_running(&body, NOISY_COMMAND)) {
                (Some("tool"), _) => {
                    let output = match last.and_then(|m| m.get("content")) {
                        Some(Value::String(s)) => s.clone(),
                        Some(other) => other.to_string(),
                        None => String::new(),
                    };
                    ok_answer(out, &id, &model, &noisy_verdict(&output), stream, usage, Duration::ZERO)
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
        Behavior::DropAfterContent | Behavior::EndsWithoutFinish => {
            let mut w = SseWriter::start(out);
            w.data(&chunk(&id, &model, json!({"role": "assistant", "content": "Partial answer from "}), None))?;
            w.data(&chunk(&id, &model, json!({"content": model}), None))?;
            std::thread::sleep(CONTENT_PAUSE);
            if behavior == Behavior::DropAfterContent {
                // The chunked body never ends: the connection closes mid-answer.
                return Ok(false);
            }
            w.end_body()
        }
        Behavior::FinishThenDrop(silence) => {
            awkward_streams::finish_then_drop(out, &id, &model, stream, silence)
        }
        Behavior::CutAtLength if !stream => completion(
            out,
            &id,
            &model,
            json!({"role": "assistant", "content": "The first half of a long answer"}),
            "length",
        ),
        Behavior::CutAtLength => stream_deltas(
            out,
            &id,
            &model,
            [json!({"content": "The first half "}), json!({"content": "of a long answer"})],
            "length",
        ),
        Behavior::SignedToolTurns => super::signatures::signed_turn(out, &id, &model, stream, &body),
        Behavior::AiderEdit => {
            let asks_commit = body
                .get("messages")
                .is_some_and(|m| m.to_string().to_ascii_lowercase().contains("commit message"));
            let text = if asks_commit {
                "Write fcm-edit-ok into hello.txt"
            } else {
                "hello.txt\n```\nfcm-edit-ok\n```\n"
            };
            ok_answer(out, &id, &model, text, stream, usage, Duration::ZERO)
        }
        Behavior::Finishes(how, silence) => {
            if let Some(d) = silence {
                std::thread::sleep(d);
            }
            continuations::finish(out, &id, &model, &body, how, (stream, usage))
        }
        Behavior::CallsOfferedTool => offered_tool_answer(out, &said_ok, &body, ToolMove::Call),
        Behavior::DescribesOfferedTool => offered_tool_answer(out, &said_ok, &body, ToolMove::Describe),
        Behavior::BreaksOfferedTool => offered_tool_answer(out, &said_ok, &body, ToolMove::Break),
        Behavior::Overloaded200(retry) => {
            let extra: Vec<(&str, String)> = retry.map(|r| ("retry-after", r.to_string())).into_iter().collect();
            let body = error("The model is overloaded. Please try again later.", "overloaded_error");
            send_fixed(out, 200, json_ct, &extra, body.as_bytes())
        }
        Behavior::EchoMaskedKey { status } => {
            let sent = req.header("authorization").or_else(|| req.header("x-api-key"));
            let masked = masked_key(sent.unwrap_or(""));
            if (200..300).contains(&status) {
                let text = format!("{answer} Your key is {masked} today.");
                ok_answer(out, &id, &model, &text, stream, usage, Duration::ZERO)
            } else {
                let msg = format!("Incorrect API key provided: {masked}. You can find your API key in your account settings.");
                send_fixed(out, status, json_ct, &[], error(&msg, "invalid_request_error").as_bytes())
            }
        }
        Behavior::SseBlankLinesThenSplit => awkward_streams::blank_lines_then_split(out, &id, &model),
        Behavior::SseHugeEvent(len) => awkward_streams::huge_event(out, &id, &model, len),
        Behavior::CountsDown { style, limit } => {
            let said = Said { id: &id, model: &model, answer: &answer, stream, usage, cached: None };
            rate_limits::counts_down(req, shared, out, &said, style, limit)
        }
        Behavior::ModelNotFound => {
            let body = json!({"error": {"code": "model_not_found", "type": "invalid_request_error",
                "message": format!("The model `{model}` does not exist or you do not have access to it.")}});
            send_fixed(out, 404, json_ct, &[], body.to_string().as_bytes())
        }
        Behavior::Cached(style) => {
            let said = Said { id: &id, model: &model, answer: &answer, stream, usage, cached: Some(style) };
            ok_answer_with(out, &said, Duration::ZERO, &[])
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

/// What `paid_notice` answers: a provider's notice written as the model's reply.
pub const PAID_NOTICE: &str =
    "This model now requires a paid plan. Add credits at https://billing.example.test to keep using it.";

/// Whether the request is the bench's sum question (its last user message asks it).
fn asks_the_sum(body: &Value) -> bool {
    let last_user = body
        .get("messages")
        .and_then(Value::as_array)
        .and_then(|m| {
            m.iter()
                .rev()
                .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))
        });
    last_user
        .and_then(|m| m.get("content"))
        .is_some_and(|c| c.to_string().contains(crate::routing::ping::PING_QUESTION))
}

/// `POST` here with `{"model": ID, "ms": N}` and model `ID` answers `N` ms later from now
/// on (`0` takes it back): a provider slowing down while a test or a benchmark runs.
pub const LATENCY_PATH: &str = "/__fake/latency";

fn set_latency(req: &RecordedRequest, shared: &Shared, out: &mut TcpStream) -> io::Result<bool> {
    let body = req.json();
    let (Some(model), Some(ms)) = (
        body.get("model").and_then(Value::as_str),
        body.get("ms").and_then(Value::as_u64),
    ) else {
        return send_fixed(
            out,
            400,
            "application/json",
            &[],
            br#"{"error":{"message":"send {\"model\": ID, \"ms\": N}"}}"#,
        );
    };
    shared.set_latency(model, Duration::from_millis(ms));
    send_fixed(out, 200, "application/json", &[], b"{}")
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_masked_as_providers_show_them() {
        assert_eq!(
            masked_key("Bearer sk-SECRET-1234567890"),
            "sk-SECRE****7890"
        );
        assert_eq!(masked_key("Bearer short"), "****");
    }
}

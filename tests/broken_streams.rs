//! Answers that are what they claim, in all three protocols: a stream that breaks after
//! content (an error frame, a dropped connection, a stall, an end without a finish) is
//! finished by the next model or reported as broken, never passed off as whole; an answer
//! cut at the length limit says so.

mod support;

use serde_json::{json, Value};
use support::*;

/// Each way a stream breaks after content: the model, how the failure is named, the text
/// the client had before the break, and the config it needs.
fn breaks() -> [(&'static str, &'static str, &'static str, Value); 4] {
    [
        (
            "sse_error_after_content",
            "error_payload",
            "Partial answer from sse_error_after_content#top",
            json!({}),
        ),
        (
            "drop_after_content",
            "network_error",
            "Partial answer from drop_after_content#top",
            json!({}),
        ),
        (
            "ends_without_finish",
            "network_error",
            "Partial answer from ends_without_finish#top",
            json!({}),
        ),
        (
            "stall_after_content:4000",
            "stream_stall",
            "Hello from stall_after_content:4000#top.",
            json!({"streamStallTimeoutMs": 1000}),
        ),
    ]
}

/// What the continuing fake model says after the `given` text.
fn rest(given: &str) -> String {
    format!(" and the rest (continued: {} chars)", given.chars().count())
}

#[test]
fn a_stream_broken_after_content_is_finished_by_the_next_model() {
    let fake = fake();
    for (model, kind, said, failover) in breaks() {
        let w = World::new();
        let top = format!("{model}#top");
        ordered(&w, &fake.base_url(), &[&top, "continues#next"]);
        w.write_config(&json!({"router": {"failover": failover}}));
        let s = w.serve(&["--quiet"]);
        let r = s.chat("fcm", true);
        assert_eq!(r.status, 200, "{model}");
        // The head went out with the first model's content.
        assert_eq!(
            r.decision(),
            format!("p/{top}!served|p/{top}:200|skips=0"),
            "{model}"
        );
        assert_eq!(
            text("chat", &r.body),
            format!("{said}{}", rest(said)),
            "{model}: one answer"
        );
        assert!(r.body.trim_end().ends_with("data: [DONE]"), "{model}");
        assert!(!r.body.contains("\"error\""), "{model}: {}", r.body);
        let h = s.history();
        let last = h.last().unwrap();
        assert_eq!(last["outcome"], "continued", "{model}: {last}");
        assert_eq!(last["servedModel"], "p/continues#next", "{model}");
        assert_eq!(
            (
                last["attempts"][0]["kind"].as_str(),
                last["attempts"][1]["model"].as_str()
            ),
            (Some(kind), Some("p/continues#next")),
            "{model}: {last}"
        );
        let row = s.breaker(&format!("p/{top}")).unwrap();
        assert_eq!(
            row["lastFailureKind"], kind,
            "{model}: the break is the first model's failure"
        );
        // The continuation was asked with the answer so far and the instruction.
        let asked = fake.requests_for("continues#next");
        let body: Value = serde_json::from_slice(&asked.last().unwrap().body).unwrap();
        let messages = body["messages"].as_array().unwrap();
        let n = messages.len();
        assert_eq!(
            messages[n - 2],
            json!({"role": "assistant", "content": said}),
            "{model}"
        );
        assert!(
            messages[n - 1]["content"]
                .as_str()
                .unwrap()
                .contains("cut off"),
            "{model}: {}",
            messages[n - 1]
        );
        assert_eq!(s.stop(), 0);
    }
}

#[test]
fn a_continuation_reads_as_one_answer_in_every_protocol() {
    let fake = fake();
    let said = "Partial answer from sse_error_after_content#top";
    for proto in PROTOCOLS {
        // A server each: a model that broke moves down the live ranking.
        let w = World::new();
        ordered(
            &w,
            &fake.base_url(),
            &["sse_error_after_content#top", "continues#next"],
        );
        let s = w.serve(&["--quiet"]);
        let (path, body) = request(proto, "fcm", true);
        let r = s.post(path, &body.to_string());
        assert_eq!(r.status, 200, "{proto}");
        assert_eq!(
            text(proto, &r.body),
            format!("{said}{}", rest(said)),
            "{proto}: {}",
            r.body
        );
        let names: Vec<String> = events(&r.body).into_iter().map(|(n, _)| n).collect();
        match proto {
            "anthropic" => {
                assert_eq!(
                    names.last().map(String::as_str),
                    Some("message_stop"),
                    "{names:?}"
                );
                assert!(!names.iter().any(|n| n == "error"), "{names:?}");
                // One text block, opened once.
                let starts = names.iter().filter(|n| *n == "content_block_start").count();
                assert_eq!(starts, 1, "{names:?}");
            }
            "responses" => {
                assert_eq!(
                    names.last().map(String::as_str),
                    Some("response.completed"),
                    "{names:?}"
                );
                assert!(!names.iter().any(|n| n == "response.failed"), "{names:?}");
            }
            _ => assert!(r.body.trim_end().ends_with("data: [DONE]")),
        }
        assert_eq!(
            s.history().last().unwrap()["outcome"],
            "continued",
            "{proto}"
        );
    }
}

#[test]
fn with_no_model_to_finish_it_the_client_is_told_in_its_protocol() {
    let fake = fake();
    for (model, kind, said, failover) in breaks() {
        let w = World::new();
        let top = format!("{model}#top");
        ordered(&w, &fake.base_url(), &[&top, "continues#next"]);
        w.write_config(&json!({"router": {"failover": failover}}));
        let s = w.serve(&["--quiet"]);
        // Pinned: no other model may answer for it.
        let pinned = format!("fcm:p/{top}");
        for proto in PROTOCOLS {
            let (path, body) = request(proto, &pinned, true);
            let r = s.post(path, &body.to_string());
            assert_eq!(r.status, 200, "{model} {proto}");
            assert_eq!(
                text(proto, &r.body),
                said,
                "{model} {proto}: what came before the break"
            );
            let evs = events(&r.body);
            let (last_name, last_data) = evs.last().cloned().unwrap();
            let last: Value = serde_json::from_str(&last_data).unwrap_or(Value::Null);
            match proto {
                "chat" => {
                    // As OpenAI sends one: its SDKs raise on it. No [DONE]: not a finish.
                    assert_eq!(
                        last["error"]["code"], "stream_broken",
                        "{model}: {}",
                        r.body
                    );
                    assert!(last["error"]["message"]
                        .as_str()
                        .unwrap()
                        .contains("broke off"));
                    assert!(!r.body.contains("data: [DONE]"), "{model}: {}", r.body);
                    assert!(!r.body.contains("\"finish_reason\":\"stop\""), "{model}");
                }
                "anthropic" => {
                    assert_eq!(last_name, "error", "{model}: {}", r.body);
                    assert_eq!(last["error"]["type"], "api_error");
                    assert!(!r.body.contains("message_stop"), "{model}");
                }
                _ => {
                    assert_eq!(last_name, "response.failed", "{model}: {}", r.body);
                    assert_eq!(last["response"]["status"], "failed");
                    assert!(!r.body.contains("response.completed"), "{model}");
                    assert_broken_responses(&r.body, said);
                }
            }
            let h = s.history();
            let entry = h.last().unwrap();
            assert_eq!(
                entry["outcome"], "stream_failed_after_content",
                "{model} {proto}"
            );
            assert_eq!(entry["attempts"][0]["kind"], kind, "{model} {proto}");
        }
        assert_eq!(s.stop(), 0);
    }
}

#[test]
fn a_finished_answer_is_whole_whatever_its_connection_does_after() {
    let fake = fake();
    let said = "Hello from finish_then_drop#top.";
    for model in ["fcm", "fcm:p/finish_then_drop#top"] {
        // A server each: the first is not to learn from the second.
        let w = World::new();
        ordered(
            &w,
            &fake.base_url(),
            &["finish_then_drop#top", "continues#next"],
        );
        let s = w.serve(&["--quiet"]);
        for proto in PROTOCOLS {
            for stream in [true, false] {
                let (path, body) = request(proto, model, stream);
                let r = s.post(path, &body.to_string());
                let case = format!("{model} {proto} stream={stream}");
                assert_eq!(r.status, 200, "{case}: {}", r.body);
                if stream {
                    assert_eq!(text(proto, &r.body), said, "{case}: once: {}", r.body);
                    let names: Vec<String> = events(&r.body).into_iter().map(|(n, _)| n).collect();
                    let last = names.last().map(String::as_str);
                    match proto {
                        "chat" => {
                            // As the provider ended it: its finish, no error.
                            let finish = data(&r.body).iter().find_map(|c| {
                                c["choices"][0]["finish_reason"].as_str().map(String::from)
                            });
                            assert_eq!(finish.as_deref(), Some("stop"), "{case}");
                            assert!(!r.body.contains("\"error\""), "{case}: {}", r.body);
                        }
                        "anthropic" => assert_eq!(last, Some("message_stop"), "{case}"),
                        _ => {
                            assert_eq!(last, Some("response.completed"), "{case}");
                            assert!(!r.body.contains("\"incomplete\""), "{case}");
                        }
                    }
                } else {
                    let v = r.json();
                    assert_eq!(whole_text(proto, &v), said, "{case}: {v}");
                    if proto == "responses" {
                        assert_eq!(v["status"], "completed", "{case}");
                    }
                }
                let h = s.history();
                let entry = h.last().unwrap();
                assert_eq!(entry["outcome"], "served", "{case}: {entry}");
                assert_eq!(entry["attempts"].as_array().unwrap().len(), 1, "{case}");
            }
        }
        assert!(
            fake.requests_for("continues#next").is_empty(),
            "{model}: nobody was asked to go on with a finished answer"
        );
        let row = s.breaker("p/finish_then_drop#top");
        assert!(
            row.as_ref().is_none_or(|r| r["lastFailureKind"].is_null()),
            "{model}: {row:?}"
        );
        assert_eq!(s.stop(), 0);
    }
}

/// A finished answer whose connection stays open and silent ends whole soon after its
/// finish reason (the usage and `[DONE]` that follow a finish come at once), not at the
/// stall timeout: here 60 s, against 20 s of silence.
#[test]
fn a_finished_answer_whose_connection_goes_silent_ends_whole_soon_after() {
    let fake = fake();
    let w = World::new();
    let top = "finish_then_drop:20000#top";
    ordered(&w, &fake.base_url(), &[top, "continues#next"]);
    w.write_config(&json!({"router": {"failover": {"streamStallTimeoutMs": 60000}}}));
    let s = w.serve(&["--quiet"]);
    let (path, body) = request("anthropic", "fcm", true);
    let r = s.post(path, &body.to_string());
    assert_eq!(text("anthropic", &r.body), format!("Hello from {top}."));
    let names: Vec<String> = events(&r.body).into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        names.last().map(String::as_str),
        Some("message_stop"),
        "{names:?}"
    );
    let h = s.history().last().unwrap().clone();
    assert_eq!(h["outcome"], "served");
    // Ended before the provider's silence did (it would end at 20 s, the stall at 60 s).
    assert!(h["wallMs"].as_u64().unwrap() < 15_000, "{h}");
    assert!(fake.requests_for("continues#next").is_empty());
}

/// A Responses stream that broke: nothing in it is completed (a client keeps a done item as
/// a finished reply, and would send it back on its retry); the failed response lists the
/// message it broke in as incomplete, with the text so far, and says why.
fn assert_broken_responses(body: &str, said: &str) {
    assert!(!body.contains("\"completed\""), "never completed: {body}");
    assert!(
        !events(body)
            .iter()
            .any(|(name, _)| name == "response.output_item.done"),
        "{body}"
    );
    let failed = data(body).pop().unwrap();
    assert_eq!(failed["type"], "response.failed", "{body}");
    let message = &failed["response"]["output"][0];
    assert_eq!(
        (message["type"].as_str(), message["status"].as_str()),
        (Some("message"), Some("incomplete")),
        "{failed}"
    );
    assert_eq!(message["content"][0]["text"], said);
    let why = failed["response"]["error"]["message"].as_str().unwrap();
    assert!(why.contains("broke off"), "{why}");
}

#[test]
fn with_one_model_a_broken_responses_stream_is_never_completed() {
    let fake = fake();
    for (model, kind, said, failover) in breaks() {
        let w = World::new();
        ordered(&w, &fake.base_url(), &[&format!("{model}#only")]);
        w.write_config(&json!({"router": {"failover": failover}}));
        let s = w.serve(&["--quiet"]);
        let (path, body) = request("responses", "fcm", true);
        let r = s.post(path, &body.to_string());
        assert_eq!(r.status, 200, "{model}");
        let said = said.replace("#top", "#only");
        assert_eq!(text("responses", &r.body), said, "{model}");
        assert_broken_responses(&r.body, &said);
        let h = s.history();
        let entry = h.last().unwrap();
        assert_eq!(entry["outcome"], "stream_failed_after_content", "{model}");
        assert_eq!(entry["attempts"][0]["kind"], kind, "{model}");
    }
}

#[test]
fn a_continuation_that_no_model_can_give_ends_as_broken() {
    let fake = fake();
    let w = World::new();
    ordered(
        &w,
        &fake.base_url(),
        &["sse_error_after_content#top", "server_500#next"],
    );
    let s = w.serve(&["--quiet"]);
    let r = s.chat("fcm", true);
    let said = "Partial answer from sse_error_after_content#top";
    assert_eq!(text("chat", &r.body), said);
    let last = data(&r.body).pop().unwrap();
    assert!(
        last["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no other model could finish it"),
        "{last}"
    );
    let h = s.history();
    let entry = h.last().unwrap();
    assert_eq!(entry["outcome"], "stream_failed_after_content");
    assert_eq!(
        entry["attempts"][1]["kind"], "provider_server_error",
        "{entry}"
    );
}

#[test]
fn an_answer_cut_at_the_length_limit_says_so_in_every_protocol() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &["cut_at_length"]);
    let s = w.serve(&["--quiet"]);
    for proto in PROTOCOLS {
        for stream in [false, true] {
            let (path, body) = request(proto, "fcm", stream);
            let r = s.post(path, &body.to_string());
            assert_eq!(r.status, 200, "{proto} {stream}");
            let said = match (proto, stream) {
                ("chat", false) => r.json()["choices"][0]["finish_reason"].clone(),
                ("anthropic", false) => r.json()["stop_reason"].clone(),
                ("responses", false) => {
                    let v = r.json();
                    assert_eq!(v["incomplete_details"]["reason"], "max_output_tokens");
                    v["status"].clone()
                }
                ("chat", true) => data(&r.body)
                    .iter()
                    .find_map(|c| c["choices"][0]["finish_reason"].as_str().map(|f| json!(f)))
                    .unwrap(),
                ("anthropic", true) => data(&r.body)
                    .iter()
                    .find(|v| v["type"] == "message_delta")
                    .map(|v| v["delta"]["stop_reason"].clone())
                    .unwrap(),
                _ => data(&r.body).last().unwrap()["response"]["status"].clone(),
            };
            let want = match proto {
                "chat" => "length",
                "anthropic" => "max_tokens",
                _ => "incomplete",
            };
            assert_eq!(said, want, "{proto} stream={stream}: {}", r.body);
        }
    }
}

/// While the model that finishes a broken answer is slow to start, the client hears an SSE
/// comment every 5 s, between the first model's words and the rest, so that no client or
/// proxy takes the quiet stream for a dead one; the answer still reads as one.
#[test]
fn a_slow_continuation_keeps_the_client_hearing() {
    let fake = fake();
    let said = "Partial answer from sse_error_after_content#top";
    let w = World::new();
    ordered(
        &w,
        &fake.base_url(),
        &["sse_error_after_content#top", "continues:6000#next"],
    );
    let s = w.serve(&["--quiet"]);
    let (path, body) = request("anthropic", "fcm", true);
    let r = s.post(path, &body.to_string());
    assert_eq!(r.status, 200);
    assert_eq!(text("anthropic", &r.body), format!("{said}{}", rest(said)));
    let ping = r
        .body
        .find(": keep-alive\n\n")
        .expect("a keep-alive comment");
    let (before, after) = r.body.split_at(ping);
    assert!(before.contains("Partial answer from"), "{}", r.body);
    assert!(after.contains("(continued: "), "{}", r.body);
    assert_eq!(s.history().last().unwrap()["outcome"], "continued");
}

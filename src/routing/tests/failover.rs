//! The failover loop's decisions: these models, these answers, this decision.

use serde_json::json;

use super::super::script::Reply;
use super::{chat, ranked, status, Model, Setup};
use crate::providers::exchange::TransportFailure;

/// One request over `models` (tried in the order given) with `replies` per model and
/// router `config`: the decision header and status it must come to.
struct Case {
    name: &'static str,
    models: Vec<Model>,
    config: serde_json::Value,
    replies: Vec<(&'static str, Vec<Reply>)>,
    decision: &'static str,
    status: u16,
}

fn run(cases: Vec<Case>) {
    for case in cases {
        let world = Setup {
            models: case.models,
            config: case.config,
            ..Setup::default()
        }
        .world();
        for (model, replies) in case.replies {
            world.script.on(model, replies);
        }
        let got = world.auto();
        assert_eq!(got.decision, case.decision, "{}", case.name);
        assert_eq!(got.status, case.status, "{}: {:?}", case.name, got.trace);
    }
}

#[test]
fn which_model_next() {
    let abc = || ranked(&["p/a", "p/b", "q/c"]);
    run(vec![
        Case {
            name: "the first answers",
            models: abc(),
            config: json!({}),
            replies: vec![],
            decision: "p/a!served|p/a:200|skips=0",
            status: 200,
        },
        Case {
            name: "a 500 fails over to the next",
            models: abc(),
            config: json!({}),
            replies: vec![("a", vec![status(500, "boom")])],
            decision: "p/b!served|p/a:500->p/b:200|skips=0",
            status: 200,
        },
        Case {
            name: "HTTP 200 with choices: [] is a failure",
            models: abc(),
            config: json!({}),
            replies: vec![("a", vec![Reply::Json(json!({"choices": []}))])],
            decision: "p/b!served|p/a:empty_choices->p/b:200|skips=0",
            status: 200,
        },
        Case {
            name: "HTTP 200 whose body is an error object is a failure",
            models: abc(),
            config: json!({}),
            replies: vec![(
                "a",
                vec![Reply::Json(json!({"error": {"message": "internal"}}))],
            )],
            decision: "p/b!served|p/a:error_payload->p/b:200|skips=0",
            status: 200,
        },
        Case {
            name: "no answer at all",
            models: abc(),
            config: json!({}),
            replies: vec![("a", vec![Reply::Transport(TransportFailure::Timeout)])],
            decision: "p/b!served|p/a:timeout->p/b:200|skips=0",
            status: 200,
        },
        Case {
            name: "a rejected key keeps the rest of the request off its provider",
            models: abc(),
            config: json!({}),
            replies: vec![("a", vec![status(401, "invalid api key")])],
            decision: "q/c!served|p/a:401->q/c:200|skips=1",
            status: 200,
        },
        Case {
            name: "maxAttempts bounds the attempts that reached a model; all failed is a 503",
            models: abc(),
            config: json!({"failover": {"maxAttempts": 2}}),
            replies: vec![
                ("a", vec![Reply::Json(json!({"choices": []}))]),
                ("b", vec![Reply::Transport(TransportFailure::Timeout)]),
            ],
            decision: "none!all_failed|p/a:empty_choices->p/b:timeout|skips=0",
            status: 503,
        },
        Case {
            name: "instant refusals cost no attempt: the next model is tried",
            models: ranked(&["p/a", "q/b", "r/c", "s/d"]),
            config: json!({"failover": {"maxAttempts": 1}}),
            replies: vec![
                ("a", vec![status(429, "rate limit")]),
                ("b", vec![Reply::Transport(TransportFailure::Connection)]),
                ("c", vec![status(404, "no such model")]),
            ],
            decision: "s/d!served|p/a:429->q/b:network_error->r/c:404->s/d:200|skips=0",
            status: 200,
        },
        Case {
            name: "a request models refuse as bad uses up attempts: it is not sent everywhere",
            models: ranked(&["p/a", "q/b", "r/c"]),
            config: json!({"failover": {"maxAttempts": 2}}),
            replies: vec![
                ("a", vec![status(400, "messages: invalid")]),
                ("b", vec![status(400, "messages: invalid")]),
            ],
            decision: "none!client_error|p/a:400->q/b:400|skips=0",
            status: 400,
        },
        Case {
            name: "the last resort takes the slot kept for it",
            models: ranked(&["p/a", "p/b", "q/c", "q/d"]),
            config: json!({"failover": {"maxAttempts": 2, "lastResortModel": "q/d"}}),
            replies: vec![
                ("a", vec![Reply::Transport(TransportFailure::Timeout)]),
                ("b", vec![Reply::Transport(TransportFailure::Timeout)]),
            ],
            decision: "q/d!served|p/a:timeout->q/d:200|skips=0",
            status: 200,
        },
        Case {
            name: "every model refusing the request answers with its 4xx",
            models: ranked(&["p/a", "q/b"]),
            config: json!({}),
            replies: vec![
                ("a", vec![status(400, "messages: invalid")]),
                ("b", vec![status(422, "messages: invalid")]),
            ],
            decision: "none!client_error|p/a:400->q/b:422|skips=0",
            status: 400,
        },
        Case {
            name: "an overflowing window goes to a larger one, past a smaller",
            models: vec![
                Model::new("p/a", "S+", 8_192),
                Model::new("p/b", "S", 8_192),
                Model::new("q/c", "A", 200_000),
            ],
            config: json!({}),
            replies: vec![("a", vec![status(400, "maximum context length exceeded")])],
            decision: "q/c!served|p/a:400->q/c:200|skips=1",
            status: 200,
        },
        Case {
            name: "the last candidate's short Retry-After on a 503 is waited out once",
            models: ranked(&["p/a"]),
            config: json!({}),
            replies: vec![(
                "a",
                vec![Reply::Status(503, "busy", vec![("retry-after", "0")])],
            )],
            decision: "p/a!served|p/a:503->p/a:200|skips=0",
            status: 200,
        },
    ]);
}

#[test]
fn a_pinned_model_gets_one_attempt_and_the_status_that_fits() {
    let cases = [
        (status(429, "slow down"), 429, Some(30)),
        (status(401, "bad key"), 401, None),
        (Reply::Transport(TransportFailure::Timeout), 504, None),
        (Reply::Json(json!({"choices": []})), 502, None),
    ];
    for (reply, want, retry) in cases {
        let world = Setup {
            models: ranked(&["p/a", "p/b"]),
            ..Setup::default()
        }
        .world();
        let reply = match reply {
            Reply::Status(429, m, _) => Reply::Status(429, m, vec![("retry-after", "30")]),
            r => r,
        };
        world.script.on("a", [reply]);
        let got = world.ask("fcm:p/a", chat("hi"));
        assert_eq!(got.status, want, "{:?}", got.trace);
        assert_eq!(got.retry_after, retry);
        assert_eq!(
            world.script.models_sent(),
            ["a"],
            "one attempt, no failover"
        );
    }
}

#[test]
fn a_second_key_takes_over_from_a_rate_limited_one() {
    let world = Setup {
        models: ranked(&["p/a", "q/b"]),
        env: &[("P_KEY_2", "key-two")],
        ..Setup::default()
    }
    .world();
    world.script.on("a", [status(429, "rate limit")]);
    let got = world.auto();
    assert_eq!(got.decision, "p/a!served|p/a:429->p/a:200|skips=0");
    let keys: Vec<Option<String>> = world.script.sent().into_iter().map(|s| s.api_key).collect();
    assert_eq!(keys.len(), 2);
    assert_ne!(keys[0], keys[1], "the same model again, with the other key");
}

#[test]
fn a_request_with_history_too_long_for_every_window_is_trimmed() {
    let world = Setup {
        models: vec![Model::new("p/a", "S", 2_000)],
        ..Setup::default()
    }
    .world();
    let long = "x".repeat(4_000);
    let mut messages = vec![json!({"role": "system", "content": "be brief"})];
    for n in 0..6 {
        messages.push(json!({"role": "user", "content": format!("{n} {long}")}));
        messages.push(json!({"role": "assistant", "content": format!("{n} done")}));
    }
    messages.push(json!({"role": "user", "content": "and now?"}));
    let got = world.ask("fcm", json!({"model": "fcm", "messages": messages}));
    assert_eq!(got.status, 200, "{:?}", got.trace);
    let dropped = got.trace.trimmed.expect("trimmed");
    let sent = &world.script.sent()[0].body;
    assert_eq!(
        sent["messages"].as_array().unwrap().len(),
        messages.len() - dropped
    );
    assert!(crate::tokens::prompt(sent) <= 2_000);
}

#[test]
fn streams_are_judged_before_commit_and_recorded_at_their_end() {
    let error_frame = json!({"error": {"message": "internal error"}}).to_string();
    let text = |t: &str| json!({"choices": [{"index": 0, "delta": {"content": t}}]}).to_string();
    let cases: Vec<(&str, Reply, &str)> = vec![
        (
            "content streams through",
            Reply::stream(&["Hel", "lo"]),
            "p/a!served|p/a:200|skips=0",
        ),
        (
            "a stream with no chunk before [DONE] fails over",
            Reply::Sse(vec![]),
            "p/b!served|p/a:empty_choices->p/b:200|skips=0",
        ),
        (
            "an error frame before any content fails over",
            Reply::Sse(vec![error_frame.clone()]),
            "p/b!served|p/a:error_payload->p/b:200|skips=0",
        ),
        (
            "an error frame after content ends the stream, recorded as the model's failure",
            Reply::Sse(vec![text(&"half a plan ".repeat(8)), error_frame.clone()]),
            "p/a!stream_failed_after_content|p/a:error_payload|skips=0",
        ),
        (
            "an error frame in the first few words fails over: they were still held",
            Reply::Sse(vec![text("half a plan"), error_frame]),
            "p/b!served|p/a:error_payload->p/b:200|skips=0",
        ),
    ];
    for (name, reply, decision) in cases {
        let world = Setup {
            models: ranked(&["p/a", "p/b"]),
            ..Setup::default()
        }
        .world();
        world.script.on("a", [reply]);
        world.script.on("b", [Reply::stream(&["fine"])]);
        let mut body = chat("hi");
        body["stream"] = json!(true);
        let got = world.ask("fcm", body);
        assert_eq!(got.decision, decision, "{name}");
        let a = world.breaker("p/a");
        let failed = decision.contains("p/a:") && !decision.contains("p/a:200");
        assert_eq!(
            a.map_or(0, |r| r.consecutive_failures),
            u32::from(failed),
            "{name}: the breaker saw the end"
        );
        assert_eq!(
            world.live("p/a").last().copied().map(|r| r.is_some()),
            Some(!failed),
            "{name}"
        );
    }
}

#[test]
fn refused_connections_on_two_models_take_their_provider_out_at_once() {
    let world = Setup {
        models: ranked(&["p/a", "p/b", "p/c", "q/d"]),
        ..Setup::default()
    }
    .world();
    let refused = || Reply::Transport(TransportFailure::Connection);
    world.script.on("a", [refused()]);
    world.script.on("b", [refused()]);
    let first = world.auto();
    // The second refusal is the outage: p/c is not sent the request.
    assert_eq!(
        first.decision,
        "q/d!served|p/a:network_error->p/b:network_error->q/d:200|skips=1"
    );
    let down = &first.trace.skipped[0];
    assert_eq!(
        (down.model.as_str(), down.reason.as_str()),
        ("p/c", "provider_down")
    );
    assert!(down.until.is_some());
    let next = world.auto();
    assert_eq!(next.decision, "q/d!served|q/d:200|skips=3");
    assert_eq!(world.script.sent().len(), 4);
}

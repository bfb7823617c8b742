//! `fcm bench` against a fake provider scripted to misbehave in every way we know.

mod support;

use serde_json::Value;
use support::*;

fn model<'a>(report: &'a Value, key: &str) -> &'a Value {
    report["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["model"] == key)
        .unwrap_or_else(|| panic!("{key} missing"))
}

#[test]
fn every_behaviour_gets_the_right_verdict_and_kind() {
    let fake = fake();
    let url = fake.base_url();
    let models = [
        "ok",
        "ok_stream",
        "slow:300",
        "empty_choices",
        "empty_content",
        "error_payload_200",
        "invalid_json",
        "html",
        "sse_empty",
        "sse_error_first",
        "sse_error_after_content",
        "sse_keepalive_then_ok",
        "rate_limit:30",
        "auth_401",
        "bad_request_400",
        "server_500",
        "hang",
        "drop_connection",
        "sse_no_useful_256k",
        "reasoning_only",
        "tool_calls_only",
        "wrong_sum",
        "paid_notice",
        "garbage",
    ];
    let mut w = World::new();
    w.catalog(&[
        ("fake", &url, Some("FAKE_KEY"), &models),
        ("nokey", &url, Some("NOKEY_KEY"), &["ok#never"]),
    ]);
    w.set_env("FAKE_KEY", KEY);
    let out = w.fcm(&["bench", "--json", "--pings", "2", "--timeout", "2"]);
    assert_eq!(out.code, 0, "{out:?}");
    let report = out.json();
    let expect: &[(&str, &str, Option<&str>, u64)] = &[
        ("ok", "perfect", None, 2),
        ("ok_stream", "perfect", None, 2),
        ("slow:300", "perfect", None, 2),
        ("empty_choices", "empty_answers", Some("empty_choices"), 2),
        ("empty_content", "empty_answers", Some("empty_stream"), 2),
        (
            "error_payload_200",
            "empty_answers",
            Some("error_payload"),
            2,
        ),
        ("invalid_json", "empty_answers", Some("invalid_json"), 2),
        ("html", "empty_answers", Some("html_maintenance"), 2),
        ("sse_empty", "empty_answers", Some("empty_stream"), 2),
        ("sse_error_first", "empty_answers", Some("error_payload"), 2),
        (
            "sse_error_after_content",
            "empty_answers",
            Some("error_payload"),
            2,
        ),
        ("sse_keepalive_then_ok", "perfect", None, 2),
        ("rate_limit:30", "rate_limited", Some("rate_limit"), 1),
        ("auth_401", "auth_failed", Some("auth_error"), 1),
        ("bad_request_400", "down", Some("invalid_request"), 2),
        ("server_500", "down", Some("provider_server_error"), 2),
        ("hang", "down", Some("timeout"), 2),
        ("drop_connection", "down", Some("network_error"), 2),
        (
            "sse_no_useful_256k",
            "empty_answers",
            Some("empty_stream"),
            2,
        ),
        ("reasoning_only", "perfect", None, 2),
        // Asked a sum with no tool offered, it calls a tool: no answer to the question.
        ("tool_calls_only", "wrong_answer", None, 2),
        ("wrong_sum", "wrong_answer", None, 2),
        ("paid_notice", "provider_notice", Some("provider_notice"), 2),
        ("garbage", "empty_answers", Some("invalid_json"), 2),
    ];
    for (id, verdict, kind, pings) in expect {
        let m = model(&report, &format!("fake/{id}"));
        assert_eq!(m["verdict"], *verdict, "{id}: {m}");
        assert_eq!(m["lastFailureKind"].as_str(), *kind, "{id}: {m}");
        assert_eq!(m["pings"], *pings, "{id}: {m}");
        let answers = kind.is_none() && !matches!(*verdict, "wrong_answer" | "provider_notice");
        assert_eq!(m["usable"], answers, "{id}");
    }
    // Usable models first, each rank once.
    let ranks: Vec<u64> = report["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["rank"].as_u64().unwrap())
        .collect();
    assert_eq!(ranks, (1..=ranks.len() as u64).collect::<Vec<_>>());
    assert_eq!(report["models"][0]["usable"], true);
    let nokey = model(&report, "nokey/ok#never");
    assert_eq!(
        (nokey["verdict"].as_str(), nokey["pings"].as_u64()),
        (Some("no_key"), Some(0))
    );

    // What fcm sent: a real streaming question, the key only to its provider, never elsewhere.
    let requests = fake.requests();
    assert!(
        requests.iter().all(|r| r.model() != "ok#never"),
        "a model without a key was contacted"
    );
    for r in &requests {
        assert_eq!(
            r.header("authorization"),
            Some(format!("Bearer {KEY}").as_str())
        );
        let body = r.json();
        assert_eq!(body["stream"], true);
        assert!(body["max_tokens"].as_u64().unwrap() <= 64);
        assert!(!body["messages"][0]["content"].as_str().unwrap().is_empty());
    }
    // Saved for the router, private, without the key.
    let saved = w.home_file("bench.json");
    assert_mode(&saved, 0o600);
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&saved).unwrap()).unwrap();
    assert_eq!(saved["models"].as_array().unwrap().len(), models.len() + 1);
    assert!(saved["generatedAt"].as_str().unwrap().ends_with('Z'));
    assert_not_in_files(&w.home, KEY);
    assert!(!out.stdout.contains(KEY) && !out.stderr.contains(KEY));
}

#[test]
fn table_output_and_no_save() {
    let fake = fake();
    let mut w = World::new();
    w.catalog(&[
        (
            "fake",
            &fake.base_url(),
            Some("FAKE_KEY"),
            &["ok", "empty_choices"],
        ),
        (
            "other",
            "https://example.invalid/v1",
            Some("OTHER_KEY"),
            &["m"],
        ),
    ]);
    w.set_env("FAKE_KEY", KEY);
    let out = w.fcm(&["bench", "--no-save", "--pings", "1"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout.contains("fake/ok") && out.stdout.contains("Perfect"),
        "{out:?}"
    );
    assert!(
        out.stdout.contains("Empty answers") && out.stdout.contains("empty_choices"),
        "{out:?}"
    );
    assert!(out.stdout.contains("2 models probed, 1 usable"), "{out:?}");
    assert!(
        out.stdout
            .contains("1 models not contacted (no key): other"),
        "{out:?}"
    );
    assert!(!w.home_file("bench.json").exists());
}

#[test]
fn exit_one_when_nothing_is_usable() {
    let fake = fake();
    let w = World::new();
    w.catalog(&[(
        "fake",
        &fake.base_url(),
        None,
        &["server_500", "empty_choices"],
    )]);
    let out = w.fcm(&["bench", "--json", "--pings", "1", "--no-save"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(out.json()["models"].as_array().unwrap().len(), 2);
}

#[test]
fn short_retry_after_is_waited_out_not_hammered() {
    let fake = fake();
    let w = World::new();
    w.catalog(&[("fake", &fake.base_url(), None, &["rate_limit:1"])]);
    let out = w.fcm(&["bench", "--json", "--pings", "3", "--no-save"]);
    assert_eq!(out.code, 1, "{out:?}");
    let reqs = fake.requests();
    // The first 429's second is waited out; a second 429 in a row pauses the model a
    // minute, which ends its pings.
    assert_eq!(reqs.len(), 2);
    for pair in reqs.windows(2) {
        let gap = pair[1].at.duration_since(pair[0].at);
        assert!(
            gap.as_millis() >= 900,
            "pinged again after {gap:?} despite Retry-After: 1"
        );
    }
}

#[test]
fn filters_by_provider_and_model() {
    let fake = fake();
    let url = fake.base_url();
    let w = World::new();
    w.catalog(&[
        ("a", &url, None, &["ok#a1", "ok#a2"]),
        ("b", &url, None, &["ok#b1"]),
        ("c", &url, None, &["ok#c1"]),
    ]);
    let out = w.fcm(&[
        "bench",
        "--json",
        "--provider",
        "a,c",
        "--pings",
        "1",
        "--no-save",
    ]);
    let keys: Vec<String> = out.json()["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["model"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(keys.len(), 3, "{keys:?}");
    assert!(!keys.contains(&"b/ok#b1".to_string()));
    let out = w.fcm(&[
        "bench",
        "--json",
        "--model",
        "b/ok#b1",
        "--pings",
        "1",
        "--no-save",
    ]);
    assert_eq!(out.json()["models"].as_array().unwrap().len(), 1);
}

#[test]
fn results_merge_into_saved_bench() {
    let fake = fake();
    let url = fake.base_url();
    let w = World::new();
    w.catalog(&[("a", &url, None, &["ok#1", "ok#2"])]);
    assert_eq!(w.fcm(&["bench", "--pings", "1"]).code, 0);
    assert_eq!(
        w.fcm(&["bench", "--pings", "1", "--model", "a/ok#1"]).code,
        0
    );
    let saved: Value =
        serde_json::from_str(&std::fs::read_to_string(w.home_file("bench.json")).unwrap()).unwrap();
    assert_eq!(
        saved["models"].as_array().unwrap().len(),
        2,
        "the unprobed model keeps its result"
    );
}

#[test]
fn corrupt_bench_file_is_set_aside() {
    let fake = fake();
    let w = World::new();
    w.catalog(&[("a", &fake.base_url(), None, &["ok"])]);
    std::fs::create_dir_all(&w.home).unwrap();
    std::fs::write(w.home_file("bench.json"), "{broken").unwrap();
    let out = w.fcm(&["bench", "--pings", "1"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stderr.contains("bench.json is corrupt"), "{out:?}");
    let names: Vec<String> = std::fs::read_dir(&w.home)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(
        names.iter().any(|n| n.starts_with("bench.json.corrupt-")),
        "{names:?}"
    );
    let saved: Value =
        serde_json::from_str(&std::fs::read_to_string(w.home_file("bench.json")).unwrap()).unwrap();
    assert_eq!(saved["models"][0]["model"], "a/ok");
}

#[test]
fn usage_errors_exit_two() {
    let w = World::new();
    w.catalog(&[("a", "http://127.0.0.1:9/v1", None, &["ok"])]);
    for (args, needle) in [
        (vec!["bench", "--provider", "nope"], "valid providers: a"),
        (vec!["bench", "--model", "a/missing"], "fcm models"),
        (vec!["bench", "--pings", "0"], "--pings"),
        (vec!["bench", "--concurrency", "0"], "--concurrency"),
        (vec!["bench", "--pings", "-1"], ""),
        (vec!["bench", "--bogus"], "Unrecognized argument"),
        (vec!["frobnicate"], ""),
    ] {
        let out = w.fcm(&args);
        assert_eq!(out.code, 2, "{args:?}: {out:?}");
        assert!(out.stderr.contains(needle), "{args:?}: {out:?}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn unwritable_home_is_a_clear_error() {
    let fake = fake();
    let w = World::new();
    w.catalog(&[("a", &fake.base_url(), None, &["ok"])]);
    std::fs::write(&w.home, "a file, not a directory").unwrap();
    let out = w.fcm(&["bench", "--pings", "1"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stderr.contains(&w.home.display().to_string()),
        "{out:?}"
    );
    assert_eq!(out.stderr.lines().count(), 1, "{out:?}");
}

#[test]
fn probes_run_in_parallel() {
    // 24 models that each take 400 ms per ping: one after another the last request would
    // arrive 9.2 s after the first; in parallel they arrive together. A generous bound
    // keeps this a check of concurrency, not of speed.
    let fake = fake();
    let ids: Vec<String> = (0..24).map(|i| format!("slow:400#{i}")).collect();
    let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
    let w = World::new();
    w.catalog(&[("a", &fake.base_url(), None, &refs)]);
    let out = w.fcm(&[
        "bench",
        "--json",
        "--pings",
        "1",
        "--concurrency",
        "32",
        "--no-save",
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 24);
    let first = reqs.iter().map(|r| r.at).min().unwrap();
    let last = reqs.iter().map(|r| r.at).max().unwrap();
    assert!(
        last.duration_since(first).as_millis() < 3000,
        "requests were not concurrent: spread {:?}",
        last.duration_since(first)
    );
}

#[test]
fn each_key_goes_only_to_its_own_provider() {
    let fake = fake();
    let url = fake.base_url();
    let mut w = World::new();
    w.catalog(&[
        ("a", &url, Some("A_KEY"), &["ok#a"]),
        ("b", &url, Some("B_KEY"), &["ok#b"]),
        ("free", &url, None, &["ok#free"]),
    ]);
    w.set_env("A_KEY", "key-for-provider-a-000000");
    w.set_env("B_KEY", "key-for-provider-b-111111");
    let out = w.fcm(&["bench", "--json", "--pings", "2", "--no-save"]);
    assert_eq!(out.code, 0, "{out:?}");
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 6);
    for r in reqs {
        let auth = r.header("authorization");
        match r.model().as_str() {
            "ok#a" => assert_eq!(auth, Some("Bearer key-for-provider-a-000000")),
            "ok#b" => assert_eq!(auth, Some("Bearer key-for-provider-b-111111")),
            "ok#free" => assert_eq!(auth, None, "a provider that needs no key gets none"),
            other => panic!("unexpected model {other}"),
        }
    }
}

/// The cells of the table row naming `model` (piped, the table is tab-separated).
fn row<'a>(table: &'a str, model: &str) -> Vec<&'a str> {
    table
        .lines()
        .map(|l| l.split('\t').collect::<Vec<_>>())
        .find(|cells| cells.contains(&model))
        .unwrap_or_else(|| panic!("no row for {model}:\n{table}"))
}

/// (model, verdict, pings, successes, tool calls, tool failures, last failure kind)
type ToolPingRow = (
    &'static str,
    &'static str,
    u64,
    u64,
    u64,
    u64,
    Option<&'static str>,
);

#[test]
fn tool_pings_tell_callers_from_talkers_and_breakers() {
    let fake = fake();
    let models = [
        "calls_offered_tool",
        "describes_offered_tool",
        "breaks_offered_tool",
        "tool_calls_only",
        "text_then_cut_tool_args",
        "server_500",
    ];
    let w = World::new();
    w.catalog(&[("fake", &fake.base_url(), None, &models)]);
    let out = w.fcm(&["bench", "--json", "--tools", "--pings", "2", "--no-save"]);
    assert_eq!(out.code, 0, "{out:?}");
    let report = out.json();
    let expect: &[ToolPingRow] = &[
        ("calls_offered_tool", "perfect", 4, 4, 2, 0, None),
        ("describes_offered_tool", "perfect", 4, 4, 0, 0, None),
        // The right tool with cut-off arguments, before anything else was said.
        (
            "breaks_offered_tool",
            "unstable",
            4,
            2,
            0,
            2,
            Some("invalid_tool_call"),
        ),
        // A tool the request did not offer; asked the sum (no tool offered), it calls a
        // tool too: no answer to either question.
        (
            "tool_calls_only",
            "wrong_answer",
            4,
            0,
            0,
            2,
            Some("invalid_tool_call"),
        ),
        // Text first, then a broken call: judged when the turn ends, as the router does;
        // its text never answers the sum either.
        (
            "text_then_cut_tool_args",
            "wrong_answer",
            4,
            0,
            0,
            2,
            Some("invalid_tool_call"),
        ),
        (
            "server_500",
            "down",
            4,
            0,
            0,
            2,
            Some("provider_server_error"),
        ),
    ];
    for (id, verdict, pings, successes, calls, failures, kind) in expect {
        let m = model(&report, &format!("fake/{id}"));
        assert_eq!(m["verdict"], *verdict, "{id}: {m}");
        assert_eq!(
            (m["pings"].as_u64(), m["successes"].as_u64()),
            (Some(*pings), Some(*successes)),
            "{id}: {m}"
        );
        assert_eq!(
            (
                m["toolPings"].as_u64(),
                m["toolCalls"].as_u64(),
                m["toolFailures"].as_u64()
            ),
            (Some(2), Some(*calls), Some(*failures)),
            "{id}: {m}"
        );
        assert_eq!(m["lastFailureKind"].as_str(), *kind, "{id}: {m}");
        assert_eq!(m["toolsMeasuredAt"], m["measuredAt"], "{id}");
    }
    assert!(model(&report, "fake/breaks_offered_tool")["lastFailure"]
        .as_str()
        .unwrap()
        .contains("get_weather"));

    // What fcm sent: the plain question, then one tool offered with a required argument.
    let sent = fake.requests_for("calls_offered_tool");
    assert_eq!(sent.len(), 4);
    for (n, r) in sent.iter().enumerate() {
        let body = r.json();
        assert_eq!(body["stream"], true);
        if n % 2 == 0 {
            assert!(body.get("tools").is_none(), "{body}");
        } else {
            let tool = &body["tools"][0]["function"];
            assert_eq!(tool["name"], "get_weather", "{body}");
            assert_eq!(tool["parameters"]["required"], serde_json::json!(["city"]));
            assert!(body["max_tokens"].as_u64().unwrap() <= 256);
        }
    }
}

#[test]
fn tools_column_only_with_tools() {
    let fake = fake();
    let w = World::new();
    w.catalog(&[(
        "fake",
        &fake.base_url(),
        None,
        &[
            "calls_offered_tool",
            "describes_offered_tool",
            "breaks_offered_tool",
        ],
    )]);
    let out = w.fcm(&["bench", "--tools", "--pings", "1", "--no-save"]);
    assert_eq!(out.code, 0, "{out:?}");
    let header = row(&out.stdout, "Model");
    assert_eq!(&header[..5], ["#", "Model", "Verdict", "OK", "Tools"]);
    assert_eq!(
        &row(&out.stdout, "fake/calls_offered_tool")[3..5],
        ["2/2", "1/1"]
    );
    assert_eq!(
        &row(&out.stdout, "fake/describes_offered_tool")[3..5],
        ["2/2", "0/1"]
    );
    let broken = row(&out.stdout, "fake/breaks_offered_tool");
    assert_eq!(&broken[3..5], ["1/2", "0/1"]);
    assert_eq!(broken.last(), Some(&"invalid_tool_call"));
    let plain = w.fcm(&["bench", "--pings", "1", "--no-save"]);
    assert!(!plain.stdout.contains("Tools"), "{plain:?}");
    assert_eq!(row(&plain.stdout, "Model")[4], "TTFT p50");
}

#[test]
fn tool_results_are_saved_and_survive_a_run_without_tools() {
    let fake = fake();
    let w = World::new();
    w.catalog(&[(
        "fake",
        &fake.base_url(),
        None,
        &["calls_offered_tool", "describes_offered_tool"],
    )]);
    let saved = || -> Value {
        serde_json::from_str(&std::fs::read_to_string(w.home_file("bench.json")).unwrap()).unwrap()
    };
    assert_eq!(w.fcm(&["bench", "--tools", "--pings", "3"]).code, 0);
    let first = saved();
    let caller = model(&first, "fake/calls_offered_tool");
    assert_eq!(
        (caller["toolPings"].as_u64(), caller["toolCalls"].as_u64()),
        (Some(3), Some(3))
    );
    let tools_at = caller["toolsMeasuredAt"].clone();
    assert!(tools_at.as_str().unwrap().ends_with('Z'));
    // A plain run replaces the figures but keeps what the tool pings showed, and when.
    let out = w.fcm(&["bench", "--json", "--pings", "1"]);
    assert_eq!(
        model(&out.json(), "fake/calls_offered_tool")["toolPings"],
        Value::Null
    );
    let second = saved();
    let caller = model(&second, "fake/calls_offered_tool");
    assert_eq!(caller["pings"], 1);
    assert_eq!(
        (caller["toolPings"].as_u64(), caller["toolCalls"].as_u64()),
        (Some(3), Some(3))
    );
    assert_eq!(caller["toolsMeasuredAt"], tools_at);
    let talker = model(&second, "fake/describes_offered_tool");
    assert_eq!(talker["toolCalls"], 0);
}

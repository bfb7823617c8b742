//! What a monitoring system and `fcm top` read of a running server: `GET /metrics`, parsed
//! by a Prometheus text-format parser that is not fcm's (the `prometheus-parse` crate),
//! with values checked after known traffic; and `GET /fcm/admin/live`. Both under the
//! same access rules as every other endpoint.

mod support;

use std::collections::HashMap;

use prometheus_parse::Value;
use serde_json::Value as Json;
use support::scrape::*;
use support::*;

#[test]
fn metrics_count_known_traffic_in_the_prometheus_text_format() {
    let fake = fake();
    let w = World::new();
    // Provider p has a daily limit of 20 requests in the catalog; provider b's model says
    // what it has left in its answers' headers (50 a day, counted down).
    let catalog = serde_json::json!({"version": 1, "providers": [
        {"id": "p", "name": "P", "baseUrl": fake.base_url(), "keyRequired": false,
         "quota": {"requestsPerDay": 20}, "models": [
            {"id": "server_500", "label": "server_500", "tier": "S+", "context": 131072},
            {"id": "ok", "label": "ok", "tier": "S", "context": 131072}]},
        {"id": "b", "name": "B", "baseUrl": fake.base_url(), "keyRequired": false, "models": [
            {"id": "countdown_groq:50", "label": "countdown", "tier": "C", "context": 131072}]}]});
    std::fs::write(&w.catalog, catalog.to_string()).unwrap();
    let token = "scrape-token-0123456789";
    let server = w.serve(&["--token", token]);
    let auth = format!("Bearer {token}");
    let headers = [("authorization", auth.as_str())];
    let chat_saying = |model: &str, text: &str| {
        let body =
            serde_json::json!({"model": model, "messages": [{"role": "user", "content": text}]});
        server.post_with("/v1/chat/completions", &body.to_string(), &headers)
    };
    let chat = |model: &str| chat_saying(model, "hi");

    // Without the token, or with a wrong one, /metrics is refused like every endpoint but
    // /health.
    let wrong = [("authorization", "Bearer scrape-token-9876543210")];
    for path in ["/metrics", "/fcm/admin/live"] {
        assert_eq!(server.get(path).status, 401, "{path} without a token");
        assert_eq!(
            server.get_with(path, &wrong).status,
            401,
            "{path} with a wrong token"
        );
    }
    assert_eq!(server.get("/health").status, 200);

    // Three served (the first two after p/server_500 fails), then p/server_500 pinned: its
    // third failure opens its breaker, and the request fails.
    for _ in 0..3 {
        assert_eq!(chat("fcm").status, 200);
    }
    assert_eq!(chat("fcm:p/server_500").status, 502);
    // Provider b, asked by name in another conversation: its answer's headers say 49 left.
    assert_eq!(
        chat_saying("fcm:b/countdown_groq:50", "hello b").status,
        200
    );

    let r = server.get_with("/metrics", &headers);
    assert_eq!(r.status, 200);
    assert!(
        r.header("content-type")
            .unwrap()
            .starts_with("text/plain; version=0.0.4"),
        "{r:?}"
    );
    let s = parse(&r.body);
    let requests = |outcome: &str| value(&s, "fcm_requests_total", &[("outcome", outcome)]);
    assert_eq!(requests("served"), Some(4.0));
    assert_eq!(requests("all_failed"), Some(1.0));
    assert_eq!(requests("rejected"), Some(0.0), "every outcome is listed");
    let attempts = |model: &str, result: &str| {
        value(
            &s,
            "fcm_attempts_total",
            &[("model", model), ("result", result)],
        )
    };
    assert_eq!(attempts("p/ok", "ok"), Some(3.0));
    assert_eq!(attempts("p/server_500", "provider_server_error"), Some(3.0));
    assert_eq!(
        attempts("p/ok", "timeout"),
        Some(0.0),
        "a routable model's series exist from the start, so a rate sees the first one"
    );
    let state = |model: &str, state: &str| {
        value(
            &s,
            "fcm_breaker_state",
            &[("model", model), ("state", state)],
        )
    };
    assert_eq!(state("p/server_500", "OPEN"), Some(1.0));
    assert_eq!(state("p/server_500", "CLOSED"), Some(0.0));
    assert_eq!(state("p/ok", "CLOSED"), Some(1.0));
    assert!(
        value(
            &s,
            "fcm_breaker_cooldown_seconds",
            &[("model", "p/server_500")]
        )
        .unwrap()
            > 0.0
    );
    assert_eq!(
        value(&s, "fcm_model_rank", &[("model", "p/server_500")]),
        Some(0.0),
        "an OPEN model is skipped"
    );
    assert_eq!(value(&s, "fcm_model_rank", &[("model", "p/ok")]), Some(1.0));
    assert_eq!(
        value(&s, "fcm_model_rank", &[("model", "b/countdown_groq:50")]),
        Some(2.0)
    );
    assert_eq!(
        value(&s, "fcm_conversations_active", &[("model", "p/ok")]),
        Some(1.0),
        "one conversation (the same first message each time), held by p/ok"
    );
    assert_eq!(
        value(
            &s,
            "fcm_conversations_active",
            &[("model", "b/countdown_groq:50")]
        ),
        Some(0.0),
        "a pinned request holds no conversation"
    );
    assert_eq!(value(&s, "fcm_routable_models", &[]), Some(3.0));
    // Budgets, requests and tokens apart: p's daily 20 less the 6 attempts sent to it
    // today (failed ones count: the provider counted them); b's what its last answer said.
    let left = |unit: &str, provider: &str, window: &str| {
        value(
            &s,
            &format!("fcm_budget_remaining_{unit}"),
            &[("provider", provider), ("window", window)],
        )
    };
    assert_eq!(left("requests", "p", "day"), Some(14.0));
    assert_eq!(left("requests", "b", "live"), Some(49.0));
    assert!(left("tokens", "b", "live").unwrap() > 0.0);
    assert_eq!(
        left("requests", "p", "live"),
        None,
        "p never said: not written"
    );
    assert_eq!(left("requests", "b", "day"), None, "no daily limit known");
    assert_eq!(
        left("tokens", "p", "day"),
        None,
        "no daily token limit known"
    );
    assert!(
        !s.docs.contains_key("fcm_budget_remaining"),
        "requests and tokens are never one metric"
    );
    // Tokens per model, as the ledger counted them (its rows of p/ok, one per day and key).
    let book: Json = server.get_with("/fcm/admin/usage", &headers).json();
    let ledger = |field: &str| -> f64 {
        book["days"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|d| d["rows"].as_array().unwrap())
            .filter(|r| r["model"] == "p/ok")
            .map(|r| r[field].as_f64().unwrap_or(0.0))
            .sum()
    };
    for (metric, field) in [
        ("fcm_prompt_tokens_total", "promptTokens"),
        ("fcm_completion_tokens_total", "completionTokens"),
        ("fcm_cached_prompt_tokens_total", "cachedTokens"),
    ] {
        let counted = value(&s, metric, &[("provider", "p"), ("model", "p/ok")]);
        assert_eq!(counted, Some(ledger(field)), "{metric}");
    }
    assert!(value(&s, "fcm_completion_tokens_total", &[("model", "p/ok")]).unwrap() > 0.0);
    assert_eq!(value(&s, "fcm_in_flight_requests", &[]), Some(0.0));

    // Histograms: every request's duration; p/ok's three first tokens.
    let histogram = |metric: &str, labels: &[(&str, &str)]| -> Vec<(f64, f64)> {
        let sample = s
            .samples
            .iter()
            .find(|x| x.metric == metric && labels.iter().all(|(k, v)| x.labels.get(k) == Some(*v)))
            .unwrap_or_else(|| panic!("no {metric} {labels:?}"));
        match &sample.value {
            Value::Histogram(b) => b.iter().map(|c| (c.less_than, c.count)).collect(),
            v => panic!("{metric} is not a histogram: {v:?}"),
        }
    };
    let duration = histogram("fcm_request_duration_seconds", &[]);
    assert_eq!(duration.last(), Some(&(f64::INFINITY, 5.0)), "{duration:?}");
    let bounds: Vec<f64> = duration.iter().map(|b| b.0).take(4).collect();
    assert_eq!(
        bounds,
        [0.001, 0.0025, 0.005, 0.01],
        "from 1 ms: fcm's own answers take a few"
    );
    assert!(
        duration
            .windows(2)
            .all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1),
        "bounds rise and counts are cumulative: {duration:?}"
    );
    assert_eq!(
        value(&s, "fcm_request_duration_seconds_count", &[]),
        Some(5.0)
    );
    let ttft = histogram("fcm_time_to_first_token_seconds", &[("model", "p/ok")]);
    assert_eq!(ttft.last().map(|b| b.1), Some(3.0));
    assert_eq!(
        value(
            &s,
            "fcm_time_to_first_token_seconds_count",
            &[("model", "p/ok")]
        ),
        Some(3.0)
    );
    // Every family has its help text.
    for family in [
        "fcm_requests_total",
        "fcm_attempts_total",
        "fcm_breaker_state",
        "fcm_budget_remaining_requests",
        "fcm_budget_remaining_tokens",
        "fcm_prompt_tokens_total",
        "fcm_completion_tokens_total",
        "fcm_cached_prompt_tokens_total",
        "fcm_compression_requests_total",
        "fcm_compression_saved_tokens_total",
        "fcm_conversations_active",
        "fcm_request_duration_seconds",
        "fcm_time_to_first_token_seconds",
    ] {
        assert!(s.docs.contains_key(family), "no # HELP for {family}");
    }
    assert!(!r.body.contains(token), "the token never appears");
    promtool_check(&r.body);
    named_as_prometheus_names(&s);

    // Every family is listed in docs/monitoring.md, and every metric the Grafana dashboard
    // queries is one that is written.
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/monitoring.md")).unwrap();
    for family in s.docs.keys() {
        assert!(
            doc.contains(&format!("| `{family}` |")),
            "docs/monitoring.md does not list {family}"
        );
    }
    let dashboard: Json =
        serde_json::from_str(&std::fs::read_to_string(root.join("docs/grafana/fcm.json")).unwrap())
            .unwrap();
    let mut queried = 0;
    for panel in dashboard["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().into_iter().flatten() {
            let expr = target["expr"].as_str().unwrap();
            for word in expr.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
                if !word.starts_with("fcm_") {
                    continue;
                }
                let family = ["_bucket", "_sum", "_count"]
                    .iter()
                    .find_map(|suffix| word.strip_suffix(suffix))
                    .unwrap_or(word);
                assert!(
                    s.docs.contains_key(family),
                    "panel {:?} queries {word}, which /metrics does not write",
                    panel["title"]
                );
                queried += 1;
            }
        }
    }
    assert!(
        queried >= 12,
        "{queried} metric references in the dashboard"
    );

    // The same server's live view (what `fcm top` polls), after the first two decisions.
    let live: Json = server.get_with("/fcm/admin/live?since=2", &headers).json();
    assert_eq!(live["seq"], 5);
    let ids: Vec<u64> = live["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(ids, [3, 4, 5], "only the decisions after `since`");
    assert_eq!(live["decisions"][1]["outcome"], "all_failed");
    let models: HashMap<&str, &Json> = live["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["model"].as_str().unwrap(), m))
        .collect();
    assert_eq!(models["p/server_500"]["state"], "OPEN");
    assert_eq!(models["p/server_500"]["evidence"], "failing");
    assert_eq!(models["p/ok"]["rank"], 1);
    assert_eq!(models["p/ok"]["liveOk"], 3);
    assert_eq!(models["p/ok"]["conversations"], 1);
    assert_eq!(live["server"]["inFlight"], 0, "not counting itself");
}

#[test]
fn tool_result_compression_is_counted_per_mode() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &["ok"]);
    let server = w.serve(&[]);
    let noisy = "\x1b[1m\x1b[32m   Compiling\x1b[0m demo v0.1.0\n".repeat(3)
        + &"\x1b[33mwarning\x1b[0m: deprecated call\n".repeat(40);
    let with_tool_result = |mode: &str| {
        let body = serde_json::json!({"model": "fcm", "messages": [
            {"role": "user", "content": "build it"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
                "function": {"name": "bash", "arguments": "{\"command\":\"cargo build\"}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": noisy}],
            "tools": [{"type": "function", "function": {"name": "bash",
                "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}}}]});
        let r = server.post_with(
            "/v1/chat/completions",
            &body.to_string(),
            &[("x-fcm-compress", mode)],
        );
        assert_eq!(r.status, 200, "{}", r.body);
    };
    with_tool_result("lossless");
    with_tool_result("lossless");
    with_tool_result("off");
    with_tool_result("aggressive");
    assert_eq!(server.chat("fcm", false).status, 200, "no tool result");

    let s = parse(&server.get("/metrics").body);
    let counted = |metric: &str, mode: &str| value(&s, metric, &[("mode", mode)]).unwrap();
    assert_eq!(counted("fcm_compression_requests_total", "lossless"), 2.0);
    assert_eq!(counted("fcm_compression_requests_total", "aggressive"), 1.0);
    assert_eq!(
        value(&s, "fcm_compression_requests_total", &[("mode", "off")]),
        None,
        "off compresses nothing"
    );
    // The same saving the history gives each request.
    let saved: f64 = server
        .history()
        .iter()
        .filter_map(|t| t["savedTokens"].as_f64())
        .sum();
    assert!(saved > 0.0);
    assert_eq!(
        counted("fcm_compression_saved_tokens_total", "lossless")
            + counted("fcm_compression_saved_tokens_total", "aggressive"),
        saved
    );
}

#[test]
fn serve_prints_the_dashboards_address_and_the_page_is_there() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &["ok"]);
    let server = w.serve(&[]);
    let said = || {
        server
            .stderr()
            .lines()
            .find_map(|l| l.strip_prefix("fcm serve: dashboard: "))
            .map(|rest| {
                rest.split_whitespace()
                    .next()
                    .unwrap_or_default()
                    .to_string()
            })
    };
    eventually("the dashboard's address on stderr", || said().is_some());
    assert_eq!(said().unwrap(), format!("{}/", server.base));
    let page = server.get("/");
    assert_eq!(page.status, 200, "{page:?}");
    assert!(page.body.contains("<html"), "{}", page.body);
}

/// A detached server, stopped when the test ends (however it ends).
struct Detached<'w>(&'w World);

impl Drop for Detached<'_> {
    fn drop(&mut self) {
        let _ = self.0.fcm(&["stop"]);
    }
}

#[test]
fn a_detached_server_prints_the_dashboards_address_too() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &["ok"]);
    let out = w.fcm(&["serve", "--detach", "--port", "0"]);
    assert_eq!(out.code, 0, "{out:?}");
    let _stop = Detached(&w);
    let url = out
        .stdout
        .split("; dashboard: ")
        .nth(1)
        .and_then(|rest| rest.split(';').next())
        .unwrap_or_else(|| panic!("no dashboard address: {out:?}"))
        .to_string();
    let address = out
        .stdout
        .split("http://")
        .nth(1)
        .unwrap()
        .split("/v1")
        .next()
        .unwrap();
    assert_eq!(url, format!("http://{address}/"), "{out:?}");
    let agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .proxy(None)
        .build()
        .new_agent();
    let mut page = agent.get(&url).call().expect("the dashboard answers");
    assert_eq!(page.status().as_u16(), 200);
    assert!(page.body_mut().read_to_string().unwrap().contains("<html"));
}

//! What a scrape of `/metrics` costs the scraper: with every provider of the shipped
//! catalog keyed, the series stay within what a Prometheus takes without a second thought,
//! idle and after traffic; and the text is gzipped when the scraper asks for it.

mod support;

use prometheus_parse::Scrape;
use serde_json::Value as Json;
use support::scrape::*;
use support::*;

/// The shipped catalog with every provider keyed (each of its `apiKeyEnv` names set to a
/// test key) and every provider's URL on the fake provider: a user who signed up
/// everywhere. Returns every model, as `provider/modelId`.
fn every_provider_keyed(w: &mut World, base_url: &str) -> Vec<String> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("providers.json")).unwrap();
    let mut catalog: Json = serde_json::from_str(&text).unwrap();
    let mut models = Vec::new();
    for p in catalog["providers"].as_array_mut().unwrap() {
        p["baseUrl"] = base_url.into();
        for env in p["apiKeyEnv"].as_array().cloned().unwrap_or_default() {
            w.set_env(env.as_str().unwrap(), KEY);
        }
        let id = p["id"].as_str().unwrap().to_string();
        for m in p["models"].as_array().unwrap() {
            models.push(format!("{id}/{}", m["id"].as_str().unwrap()));
        }
    }
    std::fs::write(&w.catalog, catalog.to_string()).unwrap();
    models
}

/// Samples in a scrape: each line that is not a comment is one series.
fn series(text: &str) -> usize {
    text.lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .count()
}

/// The most series one scrape may hold with every provider keyed: what a Prometheus
/// keeps per scrape without a second thought (the catalog wrote over 13,000 before).
const MAX_SERIES: usize = 2_000;

#[test]
fn a_scrape_with_every_provider_keyed_stays_small() {
    let fake = fake();
    let mut w = World::new();
    let models = every_provider_keyed(&mut w, &fake.base_url());
    assert!(models.len() > 200, "the whole catalog: {}", models.len());
    let server = w.serve(&[]);

    // Idle: every routable model has its place in the order, and nothing else per model.
    let idle = server.get("/metrics");
    let s = parse(&idle.body);
    assert_eq!(
        value(&s, "fcm_routable_models", &[]),
        Some(models.len() as f64)
    );
    let count = |s: &Scrape, metric: &str| s.samples.iter().filter(|x| x.metric == metric).count();
    assert_eq!(count(&s, "fcm_model_rank"), models.len());
    for per_model in [
        "fcm_attempts_total",
        "fcm_breaker_state",
        "fcm_time_to_first_token_seconds",
        "fcm_prompt_tokens_total",
    ] {
        assert_eq!(count(&s, per_model), 0, "{per_model} of models never used");
    }
    assert!(
        series(&idle.body) <= MAX_SERIES,
        "{} series idle",
        series(&idle.body)
    );

    // Traffic: a model of every provider asked for by name, and conversations on model fcm.
    let providers: Vec<&str> = {
        let mut seen = std::collections::BTreeMap::new();
        for m in &models {
            seen.entry(m.split_once('/').unwrap().0)
                .or_insert(m.as_str());
        }
        seen.into_values().collect()
    };
    for model in &providers {
        assert_eq!(
            server.chat(&format!("fcm:{model}"), false).status,
            200,
            "{model}"
        );
    }
    for i in 0..10 {
        let body = serde_json::json!({"model": "fcm", "messages": [
            {"role": "user", "content": format!("conversation {i}")}]});
        let r = server.post("/v1/chat/completions", &body.to_string());
        assert_eq!(r.status, 200, "{}", r.body);
    }
    let busy = server.get("/metrics");
    let s = parse(&busy.body);
    assert_eq!(
        value(&s, "fcm_requests_total", &[("outcome", "served")]),
        Some((providers.len() + 10) as f64)
    );
    for model in &providers {
        let ok = value(
            &s,
            "fcm_attempts_total",
            &[("model", model), ("result", "ok")],
        );
        assert!(
            ok >= Some(1.0),
            "{model}: its own request (and model fcm's when it ranks first): {ok:?}"
        );
        assert_eq!(
            value(
                &s,
                "fcm_attempts_total",
                &[("model", model), ("result", "timeout")]
            ),
            Some(0.0),
            "a model in use has every result, so a rate sees its first failure"
        );
        assert_eq!(
            value(
                &s,
                "fcm_breaker_state",
                &[("model", model), ("state", "CLOSED")]
            ),
            Some(1.0)
        );
    }
    assert_eq!(count(&s, "fcm_model_rank"), models.len());
    assert!(
        series(&busy.body) <= MAX_SERIES,
        "{} series after traffic to {} models",
        series(&busy.body),
        providers.len() + 1
    );
    promtool_check(&busy.body);
    named_as_prometheus_names(&s);
}

#[test]
fn metrics_are_gzipped_when_the_scraper_asks() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &["ok", "server_500"]);
    let server = w.serve(&[]);
    assert_eq!(server.chat("fcm", false).status, 200);

    let plain = server.get("/metrics");
    assert_eq!(plain.header("content-encoding"), None, "not asked");
    assert_eq!(plain.header("vary"), Some("accept-encoding"));
    let (refused, body) = server.get_bytes("/metrics", &[("accept-encoding", "gzip;q=0")]);
    assert_eq!(refused.header("content-encoding"), None);
    assert!(String::from_utf8(body)
        .unwrap()
        .contains("fcm_requests_total"));

    // What Prometheus sends on every scrape.
    let (r, packed) = server.get_bytes(
        "/metrics",
        &[
            ("accept-encoding", "gzip"),
            ("accept", "text/plain;version=0.0.4"),
        ],
    );
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-encoding"), Some("gzip"));
    assert_eq!(r.header("vary"), Some("accept-encoding"));
    assert!(r
        .header("content-type")
        .unwrap()
        .starts_with("text/plain; version=0.0.4"));
    assert_eq!(
        r.header("content-length"),
        Some(packed.len().to_string().as_str())
    );
    let mut text = String::new();
    std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&packed[..]), &mut text)
        .expect("a gzip body");
    assert!(
        packed.len() * 3 < text.len(),
        "{} bytes gzipped, {} plain",
        packed.len(),
        text.len()
    );
    // The same series as the plain scrape (values move: uptime, CPU time).
    let names = |s: &Scrape| -> Vec<String> {
        let mut v: Vec<String> = s
            .samples
            .iter()
            .map(|x| {
                let labels: std::collections::BTreeMap<_, _> = x.labels.iter().collect();
                format!("{} {labels:?}", x.metric)
            })
            .collect();
        v.sort();
        v
    };
    assert_eq!(names(&parse(&text)), names(&parse(&plain.body)));
}

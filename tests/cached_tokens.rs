//! Prompt tokens a provider served from its prompt cache reach every client in its own
//! words, and `fcm usage`: OpenAI's `prompt_tokens_details.cached_tokens` and DeepSeek's
//! `prompt_cache_hit_tokens` in, Anthropic's `cache_read_input_tokens`, the Responses API's
//! `input_tokens_details.cached_tokens` and chat's `prompt_tokens_details.cached_tokens` out.

mod support;

use serde_json::{json, Value};
use support::*;

/// What the fake provider's cached answers report: 1,200 prompt tokens, 1,024 of them cached.
const PROMPT: u64 = fcm::fake_provider::CacheStyle::PROMPT;
const CACHED: u64 = fcm::fake_provider::CacheStyle::CACHED;

fn request(proto: &str, stream: bool) -> (&'static str, Value) {
    match proto {
        "chat" => (
            "/v1/chat/completions",
            json!({"model": "fcm", "stream": stream, "stream_options": {"include_usage": true},
                "messages": [{"role": "user", "content": "hi"}]}),
        ),
        "anthropic" => (
            "/v1/messages",
            json!({"model": "fcm", "stream": stream, "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}),
        ),
        _ => (
            "/v1/responses",
            json!({"model": "fcm", "stream": stream, "input": "hi"}),
        ),
    }
}

/// The usage object the client got, whole or from the stream's last event that had one.
fn usage(proto: &str, stream: bool, body: &str) -> Value {
    if !stream {
        let v: Value = serde_json::from_str(body).unwrap();
        return v["usage"].clone();
    }
    let mut last = Value::Null;
    for line in body.lines() {
        let Some(data) = line.strip_prefix("data: ") else {
            continue;
        };
        let Ok(v) = serde_json::from_str::<Value>(data) else {
            continue;
        };
        let u = match proto {
            "responses" => v.pointer("/response/usage").cloned(),
            _ => v.get("usage").cloned(),
        };
        if let Some(u) = u.filter(|u| !u.is_null()) {
            last = u;
        }
    }
    last
}

#[test]
fn cached_prompt_tokens_reach_every_client_and_the_usage_report() {
    let fake = fake();
    for model in ["cached", "cached_deepseek"] {
        let w = World::new();
        ordered(&w, &fake.base_url(), &[model]);
        let s = w.serve(&["--quiet"]);
        let mut answers = 0;
        for proto in ["chat", "anthropic", "responses"] {
            for stream in [false, true] {
                let (path, body) = request(proto, stream);
                let r = s.post(path, &body.to_string());
                assert_eq!(r.status, 200, "{model} {proto} {stream}: {}", r.body);
                answers += 1;
                let u = usage(proto, stream, &r.body);
                let what = format!("{model} {proto} stream={stream}: {u}");
                match proto {
                    "chat" => {
                        assert_eq!(u["prompt_tokens"], PROMPT, "{what}");
                        assert_eq!(
                            u["prompt_tokens_details"]["cached_tokens"], CACHED,
                            "{what}"
                        );
                    }
                    "anthropic" => {
                        // Anthropic counts the cached part apart from input_tokens.
                        assert_eq!(u["cache_read_input_tokens"], CACHED, "{what}");
                        assert_eq!(u["input_tokens"], PROMPT - CACHED, "{what}");
                    }
                    _ => {
                        assert_eq!(u["input_tokens"], PROMPT, "{what}");
                        assert_eq!(u["input_tokens_details"]["cached_tokens"], CACHED, "{what}");
                    }
                }
            }
        }
        assert_eq!(s.stop(), 0);
        let out = w.fcm(&["usage", "--json"]);
        assert_eq!(out.code, 0, "{out:?}");
        let report = out.json();
        let p = &report["providers"][0];
        assert_eq!(p["cachedTokens"], CACHED * answers, "{model}: {report}");
        assert_eq!(p["promptTokens"], PROMPT * answers, "{model}");
        let table = w.fcm(&["usage"]);
        assert!(
            table
                .stdout
                .contains(&format!("({} cached)", CACHED * answers)),
            "{}",
            table.stdout
        );
    }
}

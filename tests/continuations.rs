//! A continuation joins what the client already has, in all three protocols: a model that
//! starts the answer over, or says its last words again, is read once (what it repeated is
//! left out, and counted in the history); one that starts over and departs from it is
//! refused, and the client is told the answer broke off, in its own protocol.

mod support;

use serde_json::Value;
use support::*;

/// What the first model (`sse_error_after_content#top`) says before its stream breaks.
const SAID: &str = "Partial answer from sse_error_after_content#top";

fn last_notes(s: &Server) -> Vec<String> {
    let h = s.history();
    h.last().unwrap()["notes"]
        .as_array()
        .map(|n| {
            n.iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_continuation_that_starts_over_is_read_once_in_every_protocol() {
    let fake = fake();
    for proto in PROTOCOLS {
        let w = World::new();
        ordered(
            &w,
            &fake.base_url(),
            &["sse_error_after_content#top", "restarts#next"],
        );
        let s = w.serve(&["--quiet"]);
        let (path, body) = request(proto, "fcm", true);
        let r = s.post(path, &body.to_string());
        assert_eq!(r.status, 200, "{proto}");
        assert_eq!(
            text(proto, &r.body),
            format!("{SAID} and the rest (restarted)"),
            "{proto}: {}",
            r.body
        );
        let (name, last) = events(&r.body).pop().unwrap();
        let end = match proto {
            "chat" => ("", "[DONE]"),
            "anthropic" => ("message_stop", ""),
            _ => ("response.completed", ""),
        };
        assert_eq!(name, end.0, "{proto}");
        assert!(last.contains(end.1), "{proto}: {last}");
        if proto == "responses" {
            let done = data(&r.body).pop().unwrap();
            let item = &done["response"]["output"][0];
            assert_eq!(
                item["content"][0]["text"],
                format!("{SAID} and the rest (restarted)"),
                "the stored reply says it once"
            );
        }
        let h = s.history();
        let entry = h.last().unwrap();
        assert_eq!(entry["outcome"], "continued", "{proto}: {entry}");
        assert_eq!(entry["servedModel"], "p/restarts#next");
        let notes = last_notes(&s);
        assert!(
            notes.contains(&format!("overlap_dropped:{}", SAID.chars().count())),
            "{proto}: {notes:?}"
        );
    }
}

#[test]
fn a_continuation_that_says_the_last_words_again_is_read_once() {
    let fake = fake();
    let said = "Partial answer from drop_after_content#top";
    for (n, again) in [
        (1, "drop_after_content#top"),
        (2, "from drop_after_content#top"),
        (3, "answer from drop_after_content#top"),
    ] {
        let w = World::new();
        let next = format!("repeats_last:{n}#next");
        ordered(&w, &fake.base_url(), &["drop_after_content#top", &next]);
        let s = w.serve(&["--quiet"]);
        let r = s.chat("fcm", true);
        assert_eq!(
            text("chat", &r.body),
            format!("{said} and the rest (repeated {n} words)"),
            "{n}: {}",
            r.body
        );
        assert!(r.body.trim_end().ends_with("data: [DONE]"), "{n}");
        assert_eq!(s.history().last().unwrap()["outcome"], "continued");
        let notes = last_notes(&s);
        assert!(
            notes.contains(&format!("overlap_dropped:{}", again.chars().count())),
            "{n}: {notes:?}"
        );
    }
}

#[test]
fn a_continuation_that_goes_on_is_passed_as_it_came() {
    let fake = fake();
    let w = World::new();
    ordered(
        &w,
        &fake.base_url(),
        &["sse_error_after_content#top", "continues#next"],
    );
    let s = w.serve(&["--quiet"]);
    let r = s.chat("fcm", true);
    assert_eq!(
        text("chat", &r.body),
        format!("{SAID} and the rest (continued: 47 chars)")
    );
    assert!(
        !last_notes(&s)
            .iter()
            .any(|n| n.starts_with("overlap_dropped")),
        "nothing left out"
    );
}

#[test]
fn a_continuation_that_starts_over_and_departs_is_refused_in_every_protocol() {
    let fake = fake();
    for proto in PROTOCOLS {
        let w = World::new();
        ordered(
            &w,
            &fake.base_url(),
            &[
                "sse_error_after_content#top",
                "starts_over#next",
                "continues#third",
            ],
        );
        let s = w.serve(&["--quiet"]);
        let (path, body) = request(proto, "fcm", true);
        let r = s.post(path, &body.to_string());
        assert_eq!(r.status, 200, "{proto}");
        assert_eq!(
            text(proto, &r.body),
            SAID,
            "{proto}: nothing of it reached the client: {}",
            r.body
        );
        let (last_name, last_data) = events(&r.body).pop().unwrap();
        let last: Value = serde_json::from_str(&last_data).unwrap();
        let message = match proto {
            "chat" => {
                assert_eq!(last["error"]["code"], "stream_broken", "{}", r.body);
                assert!(!r.body.contains("[DONE]"));
                last["error"]["message"].clone()
            }
            "anthropic" => {
                assert_eq!(last_name, "error", "{}", r.body);
                assert!(!r.body.contains("message_stop"));
                last["error"]["message"].clone()
            }
            _ => {
                assert_eq!(last_name, "response.failed", "{}", r.body);
                assert!(!r.body.contains("\"completed\""), "{}", r.body);
                assert_eq!(last["response"]["output"][0]["status"], "incomplete");
                last["response"]["error"]["message"].clone()
            }
        };
        let message = message.as_str().unwrap();
        assert!(
            message.contains("broke off") && message.contains("started the answer over"),
            "{proto}: {message}"
        );
        let h = s.history();
        let entry = h.last().unwrap();
        assert_eq!(entry["outcome"], "stream_failed_after_content", "{entry}");
        assert_eq!(
            (
                entry["attempts"][1]["model"].as_str(),
                entry["attempts"][1]["kind"].as_str()
            ),
            (Some("p/starts_over#next"), Some("continuation_misfit")),
            "{entry}"
        );
        assert!(
            fake.requests_for("continues#third").is_empty(),
            "{proto}: the break is declared, not handed on"
        );
        let row = s.breaker("p/starts_over#next").unwrap();
        assert_eq!(row["lastFailureKind"], "continuation_misfit");
        assert_eq!(row["state"], "CLOSED", "its own answers are not in doubt");
    }
}

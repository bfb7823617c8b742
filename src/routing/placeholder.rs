//! Google's documented way to go on without a thought signature. Gemini refuses a turn
//! whose history holds a function call of its own without `thought_signature`, which is
//! what a conversation brings when its calls came from another model, or when fcm lost
//! the signature it kept (`carry.json` gone). Google's thought-signature docs name a
//! placeholder value that its validator accepts in place of a lost one; fcm puts it on the
//! first call of each assistant message that has no signature at all (Gemini signs the
//! first call of a step, not the parallel ones after it), only on requests to a Gemini
//! model, after whatever `carry` could put back.
//!
//! Not a signature: the model goes on without the reasoning it had, which Google says may
//! answer less well. Better than a 400 on every retry.

use serde_json::{json, Value};

/// The value Google's docs give for a function call whose signature is missing.
pub(crate) const PLACEHOLDER: &str = "skip_thought_signature_validator";

/// Whether a model checks thought signatures on the OpenAI-compatible wire: Google's
/// Gemini models, named by id as Google names them (`gemini-3-flash`). Through a router
/// (`google/gemini-...` on OpenRouter) the state travels in `reasoning_details` instead.
pub(crate) fn checks_signatures(model_id: &str) -> bool {
    model_id
        .get(..6)
        .is_some_and(|p| p.eq_ignore_ascii_case("gemini"))
}

/// `body` with the placeholder on the first call of every assistant message whose calls
/// carry no signature, or `None` when each already has one (or there are no calls).
pub(crate) fn fill(body: &Value) -> Option<Value> {
    let messages = body.get("messages")?.as_array()?;
    let unsigned: Vec<usize> = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m.get("role").and_then(Value::as_str) == Some("assistant"))
        .filter(|(_, m)| {
            let calls = m.get("tool_calls").and_then(Value::as_array);
            calls.is_some_and(|c| !c.is_empty() && !c.iter().any(signed))
        })
        .map(|(i, _)| i)
        .collect();
    if unsigned.is_empty() {
        return None;
    }
    let mut body = body.clone();
    let messages = body.get_mut("messages")?.as_array_mut()?;
    for i in unsigned {
        let call = messages[i].pointer_mut("/tool_calls/0")?.as_object_mut()?;
        let extra = call.entry("extra_content").or_insert_with(|| json!({}));
        if !extra.is_object() {
            *extra = json!({});
        }
        let google = extra
            .as_object_mut()?
            .entry("google")
            .or_insert_with(|| json!({}));
        if !google.is_object() {
            *google = json!({});
        }
        google
            .as_object_mut()?
            .insert("thought_signature".into(), PLACEHOLDER.into());
    }
    Some(body)
}

fn signed(call: &Value) -> bool {
    call.pointer("/extra_content/google/thought_signature")
        .and_then(Value::as_str)
        .is_some_and(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(id: &str, sig: Option<&str>) -> Value {
        let mut c =
            json!({"id": id, "type": "function", "function": {"name": "f", "arguments": "{}"}});
        if let Some(s) = sig {
            c["extra_content"] = json!({"google": {"thought_signature": s}});
        }
        c
    }

    #[test]
    fn only_gemini_ids_check_signatures() {
        for (id, checks) in [
            ("gemini-3-flash", true),
            ("Gemini-2.5-pro", true),
            ("google/gemini-2.5-flash", false),
            ("gemma-3-27b-it", false),
            ("llama", false),
        ] {
            assert_eq!(checks_signatures(id), checks, "{id}");
        }
    }

    #[test]
    fn an_unsigned_step_gets_the_placeholder_on_its_first_call_only() {
        let body = json!({"messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "tool_calls": [call("a", None), call("b", None)]},
            {"role": "tool", "tool_call_id": "a", "content": "1"},
            {"role": "assistant", "tool_calls": [call("c", Some("REAL")), call("d", None)]},
            {"role": "assistant", "content": "no calls"}]});
        let filled = fill(&body).expect("one step unsigned");
        let m = &filled["messages"];
        assert_eq!(
            m[1]["tool_calls"][0]["extra_content"]["google"]["thought_signature"],
            PLACEHOLDER
        );
        assert!(m[1]["tool_calls"][1].get("extra_content").is_none());
        assert_eq!(m[3], body["messages"][3], "a signed step is left alone");
        assert_eq!(fill(&filled), None, "nothing left to fill");
    }

    #[test]
    fn other_extra_content_is_kept() {
        let mut c = call("a", None);
        c["extra_content"] = json!({"google": {"thought": true}, "other": 1});
        let body = json!({"messages": [{"role": "assistant", "tool_calls": [c]}]});
        let filled = fill(&body).unwrap();
        assert_eq!(
            filled["messages"][0]["tool_calls"][0]["extra_content"],
            json!({"google": {"thought": true, "thought_signature": PLACEHOLDER}, "other": 1})
        );
    }
}

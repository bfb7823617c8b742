//! A model's limits a minute, as a rate-limit answer states them in its body.
//!
//! Google's 429 (`RESOURCE_EXHAUSTED`) names the quota that was hit and its size: a
//! `QuotaFailure` detail with `quotaId` (`GenerateRequestsPerMinutePerProjectPerModel-FreeTier`)
//! and `quotaValue` (`"5"`), and a message "Quota exceeded for metric: …, limit: 5". No
//! header says it. Read here, the limit is kept for the model, so fcm paces it and does not
//! make it a conversation's home, from the first refusal on, rather than inferring the
//! limit from what it sent. Per-day quotas are exhaustion's business (`exhaustion`). Pure:
//! body text in, figures out.

use serde_json::Value;

/// A model's limits a minute that an answer stated.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PerMinute {
    pub requests: Option<u32>,
    pub tokens: Option<u32>,
}

impl PerMinute {
    fn is_empty(&self) -> bool {
        self.requests.is_none() && self.tokens.is_none()
    }

    /// Adds one stated quota: `id` names it (its quota id or metric), `amount` its size.
    fn add(&mut self, id: &str, amount: u32) {
        let id = id.to_ascii_lowercase();
        let per_minute = id.contains("perminute") || id.contains("per minute");
        if !per_minute || amount == 0 {
            return;
        }
        let slot = if id.contains("token") {
            &mut self.tokens
        } else {
            &mut self.requests
        };
        *slot = Some(slot.map_or(amount, |s| s.min(amount)));
    }
}

/// The limits a minute `body` states, if it states any: Google's `QuotaFailure`
/// violations (the body may be a list of error objects), else the message's
/// "Quota exceeded for metric: …, limit: N" with the per-minute quota id in its words.
pub fn per_minute(body: &str) -> Option<PerMinute> {
    if !body.contains("PerMinute") && !body.contains("per minute") {
        return None;
    }
    let mut out = PerMinute::default();
    if let Ok(v) = serde_json::from_str::<Value>(body) {
        let errors: Vec<&Value> = match &v {
            Value::Array(list) => list.iter().collect(),
            one => vec![one],
        };
        for e in errors {
            let error = e.get("error").unwrap_or(e);
            for detail in error
                .get("details")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                for violation in detail
                    .get("violations")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    let id = ["quotaId", "quotaMetric"]
                        .iter()
                        .filter_map(|k| violation.get(*k).and_then(Value::as_str))
                        .collect::<Vec<_>>()
                        .join(" ");
                    let amount = match violation.get("quotaValue") {
                        Some(Value::String(s)) => s.parse().ok(),
                        Some(n) => n.as_u64().and_then(|n| u32::try_from(n).ok()),
                        None => None,
                    };
                    if let Some(amount) = amount {
                        out.add(&id, amount);
                    }
                }
            }
            if out.is_empty() {
                if let Some(message) = error.get("message").and_then(Value::as_str) {
                    from_words(message, &mut out);
                }
            }
        }
    } else {
        from_words(body, &mut out);
    }
    (!out.is_empty()).then_some(out)
}

/// "Quota exceeded for metric: M, limit: N" segments of a message, each per minute when
/// its segment (or the quota id that follows it) says so.
fn from_words(text: &str, out: &mut PerMinute) {
    for segment in text.split("Quota exceeded for metric:").skip(1) {
        let Some(at) = segment.find("limit: ") else {
            continue;
        };
        let digits: String = segment[at + 7..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        if let Ok(amount) = digits.parse() {
            out.add(segment, amount);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn googles_quota_failure_states_the_minutes_limits() {
        let body = r#"[{"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details.\n* Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: 5, model: gemini-3-flash (requests per minute)\nPlease retry in 41.2s.","status":"RESOURCE_EXHAUSTED","details":[
            {"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[
              {"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":"GenerateRequestsPerMinutePerProjectPerModel-FreeTier","quotaDimensions":{"model":"gemini-3-flash","location":"global"},"quotaValue":"5"},
              {"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_input_token_count","quotaId":"GenerateContentInputTokensPerModelPerMinute-FreeTier","quotaValue":"250000"}]},
            {"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"41s"}]}}]"#;
        assert_eq!(
            per_minute(body),
            Some(PerMinute {
                requests: Some(5),
                tokens: Some(250_000)
            })
        );
    }

    #[test]
    fn the_message_alone_says_it_too() {
        let body = r#"{"error":{"code":429,"message":"Quota exceeded for metric: generate_content_free_tier_requests, quotaId: GenerateRequestsPerMinutePerProjectPerModel-FreeTier, limit: 15. Please retry in 12s.","status":"RESOURCE_EXHAUSTED"}}"#;
        assert_eq!(
            per_minute(body),
            Some(PerMinute {
                requests: Some(15),
                tokens: None
            })
        );
    }

    #[test]
    fn a_days_quota_or_a_plain_429_states_nothing_a_minute() {
        for body in [
            r#"[{"error":{"code":429,"message":"Quota exceeded for metric: generate_content_free_tier_requests, limit: 20","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaId":"GenerateRequestsPerDayPerProjectPerModel-FreeTier","quotaValue":"20"}]}]}}]"#,
            r#"{"error":{"message":"Rate limit exceeded","code":429}}"#,
            r#"{"error":{"message":"PerMinute quota hit","code":429,"details":[{"violations":[{"quotaId":"GenerateRequestsPerMinutePerProjectPerModel-FreeTier","quotaValue":"0"}]}]}}"#,
            "Too many requests per minute",
        ] {
            assert_eq!(per_minute(body), None, "{body}");
        }
    }
}

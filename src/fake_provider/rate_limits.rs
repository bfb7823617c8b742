//! Providers that say what is left: `x-ratelimit-*` headers on every answer in one
//! provider's style, counting one model's requests per key down from a limit and resetting
//! after a short window; past the limit, a 429 with the same headers.

use std::io;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use super::behavior::LimitStyle;
use super::state::{RecordedRequest, Shared};
use super::wire::{ok_answer_with, send_fixed, Said};

/// How long one window lasts before the count starts again (short, so tests see a reset).
pub const WINDOW: Duration = Duration::from_secs(2);
/// The token limit the styles with a token window report.
const TOKEN_LIMIT: u64 = 12_000;
/// Tokens each request costs in those windows.
const TOKENS_PER_REQUEST: u64 = 20;

/// What each style writes (the styles and their names are `behavior`'s).
impl LimitStyle {
    /// The headers saying `used` of `limit` requests are gone and all come back in
    /// `resets_in`.
    fn headers(self, limit: u64, used: u64, resets_in: Duration) -> Vec<(&'static str, String)> {
        let left = limit.saturating_sub(used);
        let tokens_left = TOKEN_LIMIT
            .saturating_sub(used * TOKENS_PER_REQUEST)
            .to_string();
        let go = |d: Duration| match d.as_millis() {
            ms if ms < 1000 => format!("{ms}ms"),
            ms => format!("{:.2}s", ms as f64 / 1000.0),
        };
        let secs = format!("{:.2}", resets_in.as_secs_f64());
        match self {
            LimitStyle::Groq => vec![
                ("x-ratelimit-limit-requests", limit.to_string()),
                ("x-ratelimit-remaining-requests", left.to_string()),
                ("x-ratelimit-reset-requests", go(resets_in)),
                ("x-ratelimit-limit-tokens", TOKEN_LIMIT.to_string()),
                ("x-ratelimit-remaining-tokens", tokens_left),
                ("x-ratelimit-reset-tokens", go(resets_in)),
            ],
            LimitStyle::OpenRouter => {
                let at = crate::time::unix_ms(std::time::SystemTime::now())
                    + resets_in.as_millis() as u64;
                vec![
                    ("X-RateLimit-Limit", limit.to_string()),
                    ("X-RateLimit-Remaining", left.to_string()),
                    ("X-RateLimit-Reset", at.to_string()),
                ]
            }
            LimitStyle::Cerebras => vec![
                ("x-ratelimit-limit-requests-day", limit.to_string()),
                ("x-ratelimit-remaining-requests-day", left.to_string()),
                ("x-ratelimit-reset-requests-day", secs.clone()),
                ("x-ratelimit-limit-tokens-minute", TOKEN_LIMIT.to_string()),
                ("x-ratelimit-remaining-tokens-minute", tokens_left),
                ("x-ratelimit-reset-tokens-minute", secs),
            ],
            LimitStyle::Mistral => vec![
                ("x-ratelimit-limit-req-minute", limit.to_string()),
                ("x-ratelimit-remaining-req-minute", left.to_string()),
            ],
        }
    }
}

/// Counts this request in `model`'s window for the key it carries: the requests in the
/// window so far (this one included) and when the window ends.
fn count(shared: &Shared, model: &str, key: &str) -> (u64, Duration) {
    let mut windows = shared.windows.lock().unwrap();
    let now = Instant::now();
    let w = windows.entry(format!("{model}\n{key}")).or_insert((now, 0));
    if now.duration_since(w.0) >= WINDOW {
        *w = (now, 0);
    }
    w.1 += 1;
    (w.1, WINDOW.saturating_sub(now.duration_since(w.0)))
}

/// See [`Behavior::CountsDown`](super::behavior::Behavior::CountsDown).
pub(super) fn counts_down(
    req: &RecordedRequest,
    shared: &Shared,
    out: &mut TcpStream,
    said: &Said<'_>,
    style: LimitStyle,
    limit: u64,
) -> io::Result<bool> {
    let key = req.header("authorization").unwrap_or("");
    let (used, resets_in) = count(shared, said.model, key);
    let mut headers = style.headers(limit, used, resets_in);
    if used > limit {
        headers.push(("retry-after", resets_in.as_secs().max(1).to_string()));
        let body = serde_json::json!({"error": {"message": "Rate limit reached for requests", "type": "requests", "code": "rate_limit_exceeded"}});
        return send_fixed(
            out,
            429,
            "application/json",
            &headers,
            body.to_string().as_bytes(),
        );
    }
    ok_answer_with(out, said, Duration::ZERO, &headers)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::quota::{read_headers, Period, Unit};

    #[test]
    fn every_style_reads_back_as_what_it_said() {
        let now = crate::time::now_ms();
        for style in [
            LimitStyle::Groq,
            LimitStyle::OpenRouter,
            LimitStyle::Cerebras,
            LimitStyle::Mistral,
        ] {
            let h = style.headers(5, 2, Duration::from_millis(1500));
            let windows = read_headers(h.iter().map(|(k, v)| (*k, v.as_str())), now);
            let requests = windows.iter().find(|w| w.unit == Unit::Requests).unwrap();
            assert_eq!(
                (requests.limit, requests.remaining),
                (Some(5), Some(3)),
                "{style:?}"
            );
            let reset = requests.reset_at.saturating_sub(now);
            match style {
                // No reset header: a minute window is full again within the minute.
                LimitStyle::Mistral => assert_eq!(requests.period, Some(Period::Minute)),
                _ => assert!((1000..=1600).contains(&reset), "{style:?}: {reset}"),
            }
        }
    }
}

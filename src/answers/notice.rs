//! Provider notices: an HTTP 200 whose "answer" is the provider talking, not the model
//! (a paid plan is now required, credits ran out, a quota is used up, sign up first). Free
//! providers turn free models paid this way: the request succeeds and the reply is the
//! bill (Pollinations did it to six models in September 2026).
//!
//! The rule is narrow on purpose, because fcm cannot know what a right answer is: a whole
//! answer (or what a stream said before it was committed) that is short, carries no tool
//! call, and says one of a notice's phrases, from a default list or its provider's own
//! (`noticePatterns` in the catalog). A long answer that mentions pricing is an answer.

use serde_json::Value;

/// Longest text that can be a notice: a notice is a sentence or two, an answer about
/// billing code is longer.
pub const MAX_NOTICE_CHARS: usize = 400;

/// Phrases of provider notices, lower case: payment, credits, plan, quota, sign-up.
pub const DEFAULT_PHRASES: &[&str] = &[
    "requires a paid",
    "require a paid",
    "paid plan",
    "paid tier",
    "paid subscription",
    "upgrade your plan",
    "upgrade to a paid",
    "upgrade your account",
    "add credits",
    "add more credits",
    "buy credits",
    "purchase credits",
    "insufficient credits",
    "insufficient balance",
    "out of credits",
    "no credits",
    "credit balance",
    "top up",
    "payment required",
    "add a payment method",
    "billing details",
    "free tier has ended",
    "free quota",
    "quota has been exhausted",
    "quota exceeded",
    "exceeded your quota",
    "daily limit reached",
    "please sign up",
    "sign up to continue",
    "create an account",
    "log in to continue",
];

/// Whether `text`, a whole answer without tool calls, is only a provider notice: short, and
/// saying one of [`DEFAULT_PHRASES`] or one of the provider's own `phrases` (compared
/// without case).
pub fn is_notice(text: &str, phrases: &[String]) -> bool {
    let text = text.trim();
    // Every answer passes here: most are long, or a word without a space (each default
    // phrase has one), and are done with before a copy is made.
    if text.is_empty() || text.len() > MAX_NOTICE_CHARS * 4 {
        return false;
    }
    if !text.contains(' ') && phrases.iter().all(|p| p.contains(' ')) {
        return false;
    }
    if text.chars().count() > MAX_NOTICE_CHARS {
        return false;
    }
    DEFAULT_PHRASES.iter().any(|p| says(text, p))
        || phrases
            .iter()
            .filter(|p| !p.trim().is_empty())
            .any(|p| says(text, p))
}

/// Whether `text` holds `phrase`, without case. An ASCII phrase (every default one) is
/// looked for in place; any other is compared on lower-cased copies.
fn says(text: &str, phrase: &str) -> bool {
    if phrase.is_ascii() {
        let phrase = phrase.as_bytes();
        return text
            .as_bytes()
            .windows(phrase.len())
            .any(|w| w.eq_ignore_ascii_case(phrase));
    }
    text.to_lowercase().contains(&phrase.to_lowercase())
}

/// The notice a chat message or stream deltas (each `choices[0]`'s `delta` or `message`)
/// say, when that is all they say: no tool call, and text (reasoning set aside) that
/// [`is_notice`].
pub fn only_a_notice<'a>(
    parts: impl IntoIterator<Item = &'a Value>,
    phrases: &[String],
) -> Option<String> {
    let mut text = String::new();
    for part in parts {
        if part
            .get("tool_calls")
            .is_some_and(|c| c.as_array().is_some_and(|a| !a.is_empty()))
        {
            return None;
        }
        text.push_str(&crate::answers::reasoning::parts(part).text);
        if text.len() > MAX_NOTICE_CHARS * 4 {
            return None;
        }
    }
    is_notice(&text, phrases).then_some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notices_are_short_and_say_so() {
        let own = vec!["Pollen".to_string()];
        let cases = [
            (
                "This model now requires a paid plan. Add credits at https://x.test to continue.",
                true,
            ),
            ("Insufficient credits: top up your balance.", true),
            ("You have exceeded your quota for today.", true),
            ("Please sign up to continue using this model.", true),
            (
                "This model requires more pollen. Get some at pollinations.test.",
                true,
            ),
            ("42", false),
            ("The answer is 42.", false),
            ("", false),
        ];
        for (text, want) in cases {
            assert_eq!(is_notice(text, &own), want, "{text}");
        }
        let long = format!(
            "Here is the billing module you asked for. {} It raises PaymentRequired when the \
             customer must add credits.",
            "fn charge() {} ".repeat(40)
        );
        assert!(
            !is_notice(&long, &own),
            "a long answer about credits is an answer"
        );
    }

    #[test]
    fn a_message_or_deltas_that_say_only_a_notice() {
        use serde_json::json;
        let none: Vec<String> = Vec::new();
        let whole = json!({"role": "assistant", "content": "This model requires a paid plan."});
        assert!(only_a_notice([&whole], &none).is_some());
        let pieces = [
            json!({"content": "Insufficient "}),
            json!({"content": "credits."}),
        ];
        assert_eq!(
            only_a_notice(&pieces, &none).as_deref(),
            Some("Insufficient credits.")
        );
        let with_call = json!({"content": "Add credits", "tool_calls": [{"id": "c"}]});
        assert_eq!(only_a_notice([&with_call], &none), None);
        let reasoning =
            json!({"reasoning_content": "The user needs a paid plan?", "content": "42"});
        assert_eq!(only_a_notice([&reasoning], &none), None);
    }
}

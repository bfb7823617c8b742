//! Models asked to finish an answer another model began (the answer so far as the
//! assistant's turn, then an instruction to go on), finishing it well or badly: going on,
//! saying all of it again first, saying its last words again, or starting over and
//! departing from it. Each says what it was given, so a test can see what fcm sent.

use std::io;
use std::net::TcpStream;
use std::time::Duration;

use serde_json::Value;

use super::behavior::Finishing;
use super::wire::ok_answer;

/// The answer so far that the request carries: the assistant's turn before the last
/// (the instruction to go on).
fn given(body: &Value) -> &str {
    body.get("messages")
        .and_then(Value::as_array)
        .and_then(|m| m.iter().rev().nth(1))
        .filter(|m| m.get("role").and_then(Value::as_str) == Some("assistant"))
        .and_then(|m| m.get("content").and_then(Value::as_str))
        .unwrap_or("")
}

/// What a model finishing `given` this way says.
fn finishing_text(how: Finishing, given: &str) -> String {
    let words: Vec<&str> = given.split_whitespace().collect();
    match how {
        Finishing::GoesOn => {
            format!(" and the rest (continued: {} chars)", given.chars().count())
        }
        Finishing::StartsOver => format!("{given} and the rest (restarted)"),
        Finishing::RepeatsLast(n) => {
            let again = words[words.len().saturating_sub(n)..].join(" ");
            format!("{again} and the rest (repeated {n} words)")
        }
        Finishing::DepartsFromIt => {
            let n = words.len().saturating_sub(1).clamp(1, 5);
            let again = words[..n.min(words.len())].join(" ");
            format!("{again} a different answer altogether.")
        }
    }
}

/// Answers `body`, finishing the answer it carries `how`, streamed word by word when asked.
pub(super) fn finish(
    out: &mut TcpStream,
    id: &str,
    model: &str,
    body: &Value,
    how: Finishing,
    (stream, usage): (bool, bool),
) -> io::Result<bool> {
    let text = finishing_text(how, given(body));
    ok_answer(out, id, model, &text, stream, usage, Duration::ZERO)
}

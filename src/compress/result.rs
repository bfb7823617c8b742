//! One tool result through the passes: its envelope opened (Cline's `run_commands` answers
//! with a JSON list of `{query, result, success}`, one per command), its [`Source`] told
//! from its call, then the lossless pass and, when asked, the cuts.

use std::borrow::Cow;

use serde_json::Value;

use super::cut;
use super::mode::Mode;
use super::source::{self, Source};
use super::terminal::{self, Fold};

/// The call a tool result answers: the tool's name and its arguments (JSON text).
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    pub name: &'a str,
    pub arguments: &'a str,
}

/// Results shorter than this are left alone: nothing in them is worth a token.
const MIN_BYTES: usize = 24;

/// One tool result's text compressed in `mode`; borrowed when nothing changed.
pub fn tool_result<'t>(text: &'t str, call: Option<Call<'_>>, mode: Mode) -> Cow<'t, str> {
    if mode == Mode::Off || text.len() < MIN_BYTES || file_contents(text, call) {
        return Cow::Borrowed(text);
    }
    let tool = call.map_or(Source::Other, |c| source::of_tool(c.name));
    if tool == Source::Terminal {
        if let Some(out) = command_list(text, mode) {
            return out;
        }
    }
    let source = match call {
        Some(c) if tool == Source::Terminal => source::of_call(c.name, c.arguments),
        _ => tool,
    };
    output(text, source, reported_failure(text), mode)
}

/// Whether a tool result is a file's contents, told from its call: a tool that reads,
/// edits or writes files, or a shell command that prints one (Cline's list of several
/// commands' results is judged command by command instead). Left exactly as it is.
pub fn file_contents(text: &str, call: Option<Call<'_>>) -> bool {
    let Some(c) = call else {
        return false;
    };
    match source::of_tool(c.name) {
        Source::File => true,
        Source::Terminal => {
            !command_list_shape(text) && source::of_call(c.name, c.arguments) == Source::File
        }
        Source::Other => false,
    }
}

/// A command's (or any tool's) output through the passes.
fn output(text: &str, source: Source, failed: bool, mode: Mode) -> Cow<'_, str> {
    let fold = match source {
        Source::Terminal => Fold::Always,
        Source::Other => Fold::IfTerminal,
        Source::File => return Cow::Borrowed(text),
    };
    let clean = terminal::clean(text, fold);
    if mode != Mode::Aggressive {
        return clean;
    }
    match cut::cut(&clean, failed) {
        Cow::Owned(cut) => Cow::Owned(cut),
        Cow::Borrowed(_) => clean,
    }
}

/// Cline's answer to `run_commands`: `[{"query": command, "result": output, "success":
/// bool}, ...]`, each output compressed by its own command. `None` when `text` is not
/// such a list.
fn command_list(text: &str, mode: Mode) -> Option<Cow<'_, str>> {
    if !command_list_shape(text) {
        return None;
    }
    let mut items: Vec<Value> = serde_json::from_str(text.trim()).ok()?;
    let mut changed = false;
    for item in &mut items {
        let obj = item.as_object_mut()?;
        let query = obj.get("query")?.as_str()?.to_string();
        let failed = obj.get("success").and_then(Value::as_bool) == Some(false);
        let Some(Value::String(result)) = obj.get_mut("result") else {
            continue;
        };
        let source = source::of_command(&query);
        let failed = failed || reported_failure(result);
        if let Cow::Owned(new) = output(result, source, failed, mode) {
            *result = new;
            changed = true;
        }
    }
    Some(if changed {
        Cow::Owned(serde_json::to_string(&items).ok()?)
    } else {
        Cow::Borrowed(text)
    })
}

/// Whether `text` looks like Cline's list of commands' results (read only when it does).
fn command_list_shape(text: &str) -> bool {
    let t = text.trim();
    t.starts_with("[{") && t.ends_with("}]") && t.contains("\"query\"")
}

/// Whether a tool result says its command failed: an Anthropic `is_error` result (fcm's
/// translation starts it with `Error: `), Claude Code's `Exit code 1`, Codex's `Process
/// exited with code 1`, within its first lines.
pub fn reported_failure(text: &str) -> bool {
    if text.starts_with("Error: ") {
        return true;
    }
    text.lines().take(6).any(|line| {
        let code = line
            .strip_prefix("Exit code ")
            .or_else(|| line.strip_prefix("Process exited with code "))
            .or_else(|| line.strip_prefix("Error: Exit code "));
        code.and_then(|c| c.trim().parse::<i64>().ok())
            .is_some_and(|c| c != 0)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOISY: &str = "\x1b[1;32mfcm-noisy-ok\x1b[0m\nprogress 10%\rprogress 50%\rprogress 100%\nwarning: the same line again\nwarning: the same line again\nwarning: the same line again\nwarning: the same line again\nwarning: the same line again\nwarning: the same line again\n";
    const CLEAN: &str = "fcm-noisy-ok\nprogress 100%\nwarning: the same line again\n[fcm: the line above appeared 6 times in a row]\n";

    fn call<'a>(name: &'a str, arguments: &'a str) -> Option<Call<'a>> {
        Some(Call { name, arguments })
    }

    #[test]
    fn shell_outputs_lose_their_noise() {
        let bash = call("Bash", r#"{"command":"./noisy.sh"}"#);
        assert_eq!(tool_result(NOISY, bash, Mode::Lossless), CLEAN);
        assert_eq!(tool_result(NOISY, bash, Mode::Off), NOISY);
        let codex = format!("Chunk ID: 1\nWall time: 0.1 seconds\nProcess exited with code 0\nOriginal token count: 40\nOutput:\n{NOISY}");
        assert_eq!(
            tool_result(
                &codex,
                call("exec_command", r#"{"cmd":"./noisy.sh"}"#),
                Mode::Lossless
            ),
            codex.replace(NOISY, CLEAN)
        );
    }

    #[test]
    fn file_contents_are_never_changed() {
        // Repeated lines, runs of blank lines, trailing spaces, CRLF: exactly as read.
        let file = "fn main() {   \n\n\n\n\n    let x = 1;\r\n    x;\n    x;\n    x;\n    x;\n    x;\n    x;\n}\n";
        for (name, args) in [
            ("Read", r#"{"file_path":"/repo/src/main.rs"}"#),
            ("Bash", r#"{"command":"cat src/main.rs"}"#),
            ("exec_command", r#"{"cmd":"sed -n '1,200p' src/main.rs"}"#),
            (
                "exec_command",
                r#"{"cmd":"nl -ba src/main.rs | sed -n 1,40p"}"#,
            ),
        ] {
            for mode in Mode::ALL {
                assert!(
                    matches!(tool_result(file, call(name, args), mode), Cow::Borrowed(_)),
                    "{name} {args} {mode}"
                );
            }
        }
        // Claude Code's Read output: numbered lines.
        let numbered: String = file
            .lines()
            .enumerate()
            .map(|(i, l)| format!("{:>6}\t{l}\n", i + 1))
            .collect();
        assert_eq!(
            tool_result(&numbered, call("Read", "{}"), Mode::Aggressive),
            numbered
        );
        // Unknown tools: no terminal evidence, so no run is folded.
        assert_eq!(
            tool_result(file, call("mcp__fs__get", "{}"), Mode::Lossless),
            file
        );
        assert_eq!(tool_result(file, None, Mode::Lossless), file);
    }

    #[test]
    fn cline_command_lists_are_compressed_per_command() {
        let list = serde_json::to_string(&serde_json::json!([
            {"query": "./noisy.sh", "result": NOISY, "success": true},
            {"query": "cat notes.txt", "result": "same\nsame\nsame\nsame\nsame\nsame\nsame\n", "success": true},
        ]))
        .unwrap();
        let out = tool_result(
            &list,
            call(
                "run_commands",
                r#"{"commands":["./noisy.sh","cat notes.txt"]}"#,
            ),
            Mode::Lossless,
        );
        let items: Vec<Value> = serde_json::from_str(&out).unwrap();
        assert_eq!(items[0]["result"], CLEAN);
        assert_eq!(
            items[1]["result"],
            "same\nsame\nsame\nsame\nsame\nsame\nsame\n"
        );
        assert_eq!(items[0]["query"], "./noisy.sh");
    }

    #[test]
    fn failures_are_told() {
        for text in [
            "Error: Exit code 1\nboom",
            "Exit code 2\nboom",
            "Chunk ID: a\nWall time: 1 seconds\nProcess exited with code 101\nOutput:\n",
        ] {
            assert!(reported_failure(text), "{text}");
        }
        for text in [
            "Process exited with code 0\nOutput:\n",
            "ok",
            "Exit code zero",
        ] {
            assert!(!reported_failure(text), "{text}");
        }
    }
}

//! Tool-result compression through `fcm serve`, on all three protocols, judged by what
//! reached the provider (the fake records every request body): terminal noise gone, every
//! visible line kept, file contents exact, the same bytes for the same history, `off`
//! untouched, aggressive cuts that say what they cut; the saving on the response header,
//! in the history and in `fcm usage`.

mod support;

use serde_json::{json, Value};
use support::*;

/// A `cargo build` as a terminal shows it with colour forced: escapes, a progress bar
/// redrawn and erased, one warning printed twelve times.
fn noisy_build() -> String {
    let mut s = String::new();
    s.push_str("\x1b[1m\x1b[32m    Updating\x1b[0m crates.io index\n");
    s.push_str("\x1b[1m\x1b[36m    Building\x1b[0m [=>      ] 1/4: serde\r\x1b[K");
    s.push_str("\x1b[1m\x1b[32m   Compiling\x1b[0m serde v1.0.219\n");
    s.push_str("\x1b[1m\x1b[36m    Building\x1b[0m [===>    ] 2/4: demo\r\x1b[K");
    s.push_str("\x1b[1m\x1b[32m   Compiling\x1b[0m demo v0.1.0 (/home/dev/demo)\n");
    s.push_str("\x1b[1m\x1b[33mwarning\x1b[0m\x1b[1m: unused variable: `x`\x1b[0m\n");
    s.push_str(" \x1b[1m\x1b[34m-->\x1b[0m src/main.rs:2:9\n");
    s.push_str(&"\x1b[33mwarning\x1b[0m: deprecated call\n".repeat(12));
    s.push_str("\x1b[1m\x1b[32m    Finished\x1b[0m `dev` profile [unoptimized + debuginfo] target(s) in 1.20s\n");
    s
}

/// What a person sees of [`noisy_build`] on the terminal, the repeats said once.
const BUILD_SHOWN: &str = "    Updating crates.io index\n   Compiling serde v1.0.219\n   Compiling demo v0.1.0 (/home/dev/demo)\nwarning: unused variable: `x`\n --> src/main.rs:2:9\nwarning: deprecated call\n[fcm: the line above appeared 12 times in a row]\n    Finished `dev` profile [unoptimized + debuginfo] target(s) in 1.20s\n";

/// A source file an agent will edit: runs of blank lines, trailing spaces, the same line
/// many times in a row, a tab, a CRLF line.
const SOURCE: &str = "def f():   \n\n\n\n\n    x = 1\n    x += 1\n    x += 1\n    x += 1\n    x += 1\n    x += 1\n    x += 1\n\treturn x  \r\n# end\n";

/// Claude Code's `Read` output of [`SOURCE`]: numbered lines.
fn numbered(text: &str) -> String {
    text.split_inclusive('\n')
        .enumerate()
        .map(|(i, l)| format!("{:>6}\t{l}", i + 1))
        .collect()
}

/// A `cargo test` run with colour: `passing` tests pass, two fail.
fn test_run(passing: usize) -> String {
    let mut s = String::from("\x1b[1m\x1b[32m    Finished\x1b[0m `test` profile in 0.9s\n\x1b[1m\x1b[32m     Running\x1b[0m unittests src/lib.rs\n\nrunning tests\n");
    for i in 0..passing {
        s.push_str(&format!("test tests::case_{i:04} ... \x1b[32mok\x1b[0m\n"));
    }
    s.push_str("test tests::broken ... \x1b[31mFAILED\x1b[0m\n\nfailures:\n\n---- tests::broken stdout ----\nthread 'tests::broken' panicked at src/lib.rs:9:5:\nassertion `left == right` failed\n  left: 1\n right: 2\n\nfailures:\n    tests::broken\n\n");
    s.push_str(&format!(
        "test result: \x1b[31mFAILED\x1b[0m. {passing} passed; 1 failed; 0 ignored\n"
    ));
    s
}

fn claude_code_history() -> Value {
    json!({
        "model": "claude-sonnet-4-5", "max_tokens": 1024, "stream": false,
        "system": [{"type": "text", "text": "You are an agent. \x1b[1mBold\x1b[0m stays."}],
        "tools": [
            {"name": "Bash", "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}},
            {"name": "Read", "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}}}}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "build it; my log says \x1b[31mred\x1b[0m\rdone"}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_build", "name": "Bash", "input": {"command": "cargo build"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_build", "content": noisy_build(), "is_error": false}]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Reading \x1b[2mboth\x1b[0m files."},
                {"type": "tool_use", "id": "toolu_read", "name": "Read", "input": {"file_path": "/w/f.py"}},
                {"type": "tool_use", "id": "toolu_cat", "name": "Bash", "input": {"command": "cat f.py"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_read", "content": [{"type": "text", "text": numbered(SOURCE)}]},
                {"type": "tool_result", "tool_use_id": "toolu_cat", "content": SOURCE}]},
        ]
    })
}

/// The chat `tool` message answering `id` in the last request the provider got.
fn sent_tool(fake: &FakeProvider, id: &str) -> String {
    let sent = fake.requests().last().unwrap().json();
    let m = sent["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == id)
        .unwrap_or_else(|| panic!("no tool message {id} in {sent}"))
        .clone();
    m["content"].as_str().unwrap().to_string()
}

fn saved(r: &Resp) -> u64 {
    r.header("x-fcm-v2-compressed")
        .unwrap_or_else(|| panic!("no x-fcm-v2-compressed header: {r:?}"))
        .parse()
        .unwrap()
}

#[test]
fn anthropic_tool_results_lose_their_noise_and_files_stay_exact() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &["ok"]);
    let s = w.serve(&[]);
    let body = claude_code_history().to_string();
    let r = s.post("/v1/messages", &body);
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(sent_tool(&fake, "toolu_build"), BUILD_SHOWN);
    assert_eq!(
        sent_tool(&fake, "toolu_read"),
        numbered(SOURCE),
        "Read: byte for byte"
    );
    assert_eq!(sent_tool(&fake, "toolu_cat"), SOURCE, "cat: byte for byte");
    // Never the system prompt, the user's words or the model's own turns.
    let sent = fake.requests().last().unwrap().json();
    let text = sent.to_string();
    for kept in [
        "You are an agent. \\u001b[1mBold\\u001b[0m stays.",
        "my log says \\u001b[31mred\\u001b[0m\\rdone",
        "Reading \\u001b[2mboth\\u001b[0m files.",
    ] {
        assert!(text.contains(kept), "{kept} missing from {text}");
    }
    let saving = saved(&r);
    assert!(saving > 50, "{saving}");
    // The history keeps the saving, and so does the ledger (`fcm usage`).
    let entry = s.history().pop().unwrap();
    assert_eq!(entry["savedTokens"], saving);
    let usage = w.fcm(&["usage", "--json"]).json();
    let p = usage["providers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["provider"] == "p")
        .unwrap()
        .clone();
    assert_eq!(p["savedTokens"], saving, "{usage}");
    let text = w.fcm(&["usage"]).stdout;
    assert!(
        text.contains(&format!(
            "Compression kept ~{saving} tokens of tool output out of the requests (p ~{saving})"
        )),
        "{text}"
    );
}

#[test]
fn the_same_history_gives_the_same_bytes_turn_after_turn() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &["ok"]);
    let s = w.serve(&[]);
    let first = claude_code_history();
    assert_eq!(s.post("/v1/messages", &first.to_string()).status, 200);
    assert_eq!(s.post("/v1/messages", &first.to_string()).status, 200);
    let mut next = first.clone();
    let msgs = next["messages"].as_array_mut().unwrap();
    msgs.push(json!({"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_again", "name": "Bash", "input": {"command": "cargo build"}}]}));
    msgs.push(json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_again", "content": noisy_build()}]}));
    assert_eq!(s.post("/v1/messages", &next.to_string()).status, 200);
    let sent = fake.requests();
    assert_eq!(sent[0].body, sent[1].body, "same history, same bytes");
    // The next turn starts with the same bytes: a provider's prompt cache keeps hitting.
    let before = sent[1].json()["messages"].as_array().unwrap().clone();
    let after = sent[2].json()["messages"].as_array().unwrap().clone();
    assert_eq!(
        serde_json::to_string(&before).unwrap(),
        serde_json::to_string(&after[..before.len()]).unwrap()
    );
}

#[test]
fn off_leaves_tool_results_untouched() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &["ok"]);
    let s = w.serve(&[]);
    let body = claude_code_history().to_string();
    let r = s.post_with("/v1/messages", &body, &[("x-fcm-compress", "off")]);
    assert_eq!(r.status, 200);
    assert_eq!(r.header("x-fcm-v2-compressed"), None);
    assert_eq!(sent_tool(&fake, "toolu_build"), noisy_build());
    let entry = s.history().pop().unwrap();
    assert!(entry.get("savedTokens").is_none(), "{entry}");
    assert!(entry["notes"].to_string().contains("compress:off:header"));
    drop(s);

    // And by configuration.
    w.write_config(&json!({"router": {"compress": "off"}}));
    let s = w.serve(&[]);
    assert_eq!(s.post("/v1/messages", &body).status, 200);
    assert_eq!(sent_tool(&fake, "toolu_build"), noisy_build());
    // A request may still ask for it.
    let r = s.post_with("/v1/messages", &body, &[("x-fcm-compress", "lossless")]);
    assert!(saved(&r) > 0);
    assert_eq!(sent_tool(&fake, "toolu_build"), BUILD_SHOWN);
}

/// Codex's `exec_command` output: its header, then what the command printed.
fn codex_output(code: i32, printed: &str) -> String {
    format!("Chunk ID: 7f1e2a\nWall time: 3.1000 seconds\nProcess exited with code {code}\nOriginal token count: 9000\nOutput:\n{printed}")
}

fn codex_history(test_output: &str, file: &str) -> Value {
    json!({
        "model": "gpt-5-codex", "stream": false,
        "tools": [{"type": "function", "name": "exec_command", "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}}],
        "input": [
            {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "You are a coding agent."}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix the test"}]},
            {"type": "function_call", "call_id": "call_test", "name": "exec_command", "arguments": "{\"cmd\":\"cargo test --color always\"}"},
            {"type": "function_call_output", "call_id": "call_test", "output": test_output},
            {"type": "function_call", "call_id": "call_read", "name": "exec_command", "arguments": "{\"cmd\":\"sed -n '1,400p' src/lib.rs\"}"},
            {"type": "function_call_output", "call_id": "call_read", "output": file},
        ]
    })
}

#[test]
fn responses_aggressive_cuts_say_what_they_cut() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &["ok"]);
    w.write_config(
        &json!({"router": {"sets": {"terse": {"models": ["p/ok"], "compress": "aggressive"}}}}),
    );
    let s = w.serve(&[]);
    let run = codex_output(101, &test_run(2870));
    // A long file with repeats and blank runs: read, so exact in every mode.
    let file = codex_output(0, &SOURCE.repeat(30));
    let mut body = codex_history(&run, &file);
    body["model"] = json!("fcm:terse");
    let r = s.post("/v1/responses", &body.to_string());
    assert_eq!(r.status, 200, "{r:?}");
    let sent = sent_tool(&fake, "call_test");
    assert!(
        sent.contains("[fcm: 2,870 passing test lines omitted]"),
        "{sent}"
    );
    for kept in [
        "Process exited with code 101",
        "test tests::broken ... FAILED",
        "---- tests::broken stdout ----",
        "assertion `left == right` failed",
        "test result: FAILED. 2870 passed; 1 failed; 0 ignored",
    ] {
        assert!(sent.contains(kept), "{kept} missing:\n{sent}");
    }
    assert!(!sent.contains("... ok") && !sent.contains('\u{1b}'));
    assert_eq!(
        sent_tool(&fake, "call_read"),
        file,
        "a file read is never cut"
    );
    assert!(saved(&r) > 10_000);

    // Lossless (the default) keeps every test line, without colour.
    body["model"] = json!("fcm");
    assert_eq!(s.post("/v1/responses", &body.to_string()).status, 200);
    let sent = sent_tool(&fake, "call_test");
    assert_eq!(sent.matches(" ... ok\n").count(), 2870);
    assert!(!sent.contains('\u{1b}') && !sent.contains("[fcm:"));
    // The header asks for aggressive on any route.
    let r = s.post_with(
        "/v1/responses",
        &body.to_string(),
        &[("x-fcm-compress", "Aggressive")],
    );
    assert_eq!(r.status, 200);
    assert!(sent_tool(&fake, "call_test").contains("[fcm: 2,870 passing test lines omitted]"));
}

#[test]
fn chat_cline_command_results_are_compressed_inside_their_json() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &["ok"]);
    let s = w.serve(&[]);
    let results =
        json!([{"query": "cargo build", "result": noisy_build(), "success": true}]).to_string();
    let read = json!([{"path": "f.py", "content": SOURCE}]).to_string();
    let body = json!({
        "model": "fcm", "stream": false,
        "tools": [{"type": "function", "function": {"name": "run_commands", "parameters": {"type": "object"}}},
                  {"type": "function", "function": {"name": "read_files", "parameters": {"type": "object"}}}],
        "messages": [
            {"role": "system", "content": "You are Cline."},
            {"role": "user", "content": "build"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_run", "type": "function", "function": {"name": "run_commands", "arguments": "{\"commands\":[\"cargo build\"]}"}},
                {"id": "call_read", "type": "function", "function": {"name": "read_files", "arguments": "{\"paths\":[\"f.py\"]}"}}]},
            {"role": "tool", "tool_call_id": "call_run", "content": results},
            {"role": "tool", "tool_call_id": "call_read", "content": read},
        ]
    });
    let r = s.post("/v1/chat/completions", &body.to_string());
    assert_eq!(r.status, 200, "{r:?}");
    let sent: Value = serde_json::from_str(&sent_tool(&fake, "call_run")).unwrap();
    assert_eq!(
        sent,
        json!([{"query": "cargo build", "result": BUILD_SHOWN, "success": true}])
    );
    assert_eq!(
        sent_tool(&fake, "call_read"),
        read,
        "read_files: byte for byte"
    );
    assert!(saved(&r) > 50);
    // Without a tool result there is nothing to say.
    let plain = s.chat("fcm", false);
    assert_eq!(plain.header("x-fcm-v2-compressed"), None);
}

/// The client protocols, each with its agent's tools: Cline on chat completions, Claude
/// Code on Anthropic Messages, Codex on Responses (which reads files through its shell).
#[derive(Debug, Clone, Copy)]
enum Client {
    Cline,
    ClaudeCode,
    Codex,
}

/// One tool call of a history and what it printed.
struct Step {
    id: &'static str,
    /// A file read (through the agent's read tool, or Codex's `sed -n`), else a command.
    read: bool,
    command: &'static str,
    printed: String,
    failed: bool,
}

impl Client {
    const ALL: [Client; 3] = [Client::Cline, Client::ClaudeCode, Client::Codex];

    fn path(self) -> &'static str {
        match self {
            Client::Cline => "/v1/chat/completions",
            Client::ClaudeCode => "/v1/messages",
            Client::Codex => "/v1/responses",
        }
    }

    /// A step's result as the router gets it, before compression: what the client
    /// wraps around the output, and fcm's `Error: ` for an Anthropic `is_error`.
    fn framed(self, s: &Step, printed: &str) -> String {
        let code = i32::from(s.failed);
        match self {
            Client::Cline if s.failed => format!("Exit code {code}\n{printed}"),
            Client::Cline => printed.to_string(),
            Client::ClaudeCode if s.failed => format!("Error: {printed}"),
            Client::ClaudeCode => printed.to_string(),
            Client::Codex => codex_output(code, printed),
        }
    }

    /// A history: a system prompt and the user's words, both with escapes that must
    /// stay, then each step's call and result.
    fn history(self, steps: &[Step]) -> Value {
        let system = "You are an agent. \x1b[1mBold\x1b[0m stays.";
        let user = "my log says \x1b[31mred\x1b[0m\rdone";
        let (mut turns, body) = match self {
            Client::Cline => (
                vec![
                    json!({"role": "system", "content": system}),
                    json!({"role": "user", "content": user}),
                ],
                json!({"model": "fcm", "stream": false, "tools": [
                    {"type": "function", "function": {"name": "execute_command", "parameters": {"type": "object"}}},
                    {"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}}]}),
            ),
            Client::ClaudeCode => (
                vec![json!({"role": "user", "content": [{"type": "text", "text": user}]})],
                json!({"model": "fcm", "max_tokens": 1024, "stream": false,
                       "system": [{"type": "text", "text": system}], "tools": [
                    {"name": "Bash", "input_schema": {"type": "object"}},
                    {"name": "Read", "input_schema": {"type": "object"}}]}),
            ),
            Client::Codex => (
                vec![
                    json!({"type": "message", "role": "developer", "content": [{"type": "input_text", "text": system}]}),
                    json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": user}]}),
                ],
                json!({"model": "fcm", "stream": false, "tools": [
                    {"type": "function", "name": "exec_command", "parameters": {"type": "object"}}]}),
            ),
        };
        for s in steps {
            let result = self.framed(s, &s.printed);
            match self {
                Client::Cline => {
                    let (name, args) = if s.read {
                        ("read_file", json!({"path": s.command}))
                    } else {
                        ("execute_command", json!({"command": s.command}))
                    };
                    turns.push(json!({"role": "assistant", "content": null, "tool_calls": [
                        {"id": s.id, "type": "function", "function": {"name": name, "arguments": args.to_string()}}]}));
                    turns.push(json!({"role": "tool", "tool_call_id": s.id, "content": result}));
                }
                Client::ClaudeCode => {
                    let (name, input) = if s.read {
                        ("Read", json!({"file_path": s.command}))
                    } else {
                        ("Bash", json!({"command": s.command}))
                    };
                    turns.push(json!({"role": "assistant", "content": [
                        {"type": "tool_use", "id": s.id, "name": name, "input": input}]}));
                    turns.push(json!({"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": s.id, "content": s.printed, "is_error": s.failed}]}));
                }
                Client::Codex => {
                    let cmd = if s.read {
                        format!("sed -n '1,400p' {}", s.command)
                    } else {
                        s.command.to_string()
                    };
                    turns.push(
                        json!({"type": "function_call", "call_id": s.id, "name": "exec_command",
                                      "arguments": json!({"cmd": cmd}).to_string()}),
                    );
                    turns.push(
                        json!({"type": "function_call_output", "call_id": s.id, "output": result}),
                    );
                }
            }
        }
        let mut body = body;
        let key = match self {
            Client::Codex => "input",
            _ => "messages",
        };
        body[key] = Value::Array(turns);
        body
    }
}

/// A long listing of `n` paths.
fn listing(n: usize) -> String {
    (1..=n)
        .map(|i| format!("./src/part_{i:03}/lib.rs\n"))
        .collect()
}

/// A search through a tree that could not all be read: the command failed, its errors
/// spread through its results.
fn failed_search() -> String {
    (1..=250)
        .map(|i| {
            if i % 50 == 0 {
                format!("find: '/srv/vault_{i}': Permission denied\n")
            } else {
                format!("/usr/share/doc/pkg_{i}/notes.txt\n")
            }
        })
        .collect()
}

fn history_steps() -> Vec<Step> {
    vec![
        Step {
            id: "call_build",
            read: false,
            command: "cargo build",
            printed: noisy_build(),
            failed: false,
        },
        Step {
            id: "call_read",
            read: true,
            command: "f.py",
            printed: SOURCE.repeat(10),
            failed: false,
        },
        Step {
            id: "call_test",
            read: false,
            command: "cargo test --color always",
            printed: test_run(300),
            failed: true,
        },
        Step {
            id: "call_find",
            read: false,
            command: "find . -name '*.rs'",
            printed: listing(250),
            failed: false,
        },
        Step {
            id: "call_search",
            read: false,
            command: "find / -name notes.txt",
            printed: failed_search(),
            failed: true,
        },
    ]
}

#[test]
fn every_protocol_sends_what_the_mode_says() {
    let fake = fake();
    let w = World::new();
    ordered(&w, &fake.base_url(), &["ok"]);
    let s = w.serve(&[]);
    let steps = history_steps();
    let step = |id: &str| steps.iter().find(|s| s.id == id).unwrap();
    for client in Client::ALL {
        let body = client.history(&steps).to_string();
        let framed = |id: &str, printed: &str| client.framed(step(id), printed);
        let sent_text = || fake.requests().last().unwrap().json().to_string();

        // Lossless, the default: noise gone, every visible line kept, files exact.
        let r = s.post(client.path(), &body);
        assert_eq!(r.status, 200, "{client:?}: {r:?}");
        assert!(saved(&r) > 50, "{client:?}");
        assert_eq!(
            sent_tool(&fake, "call_build"),
            framed("call_build", BUILD_SHOWN),
            "{client:?}"
        );
        let test = sent_tool(&fake, "call_test");
        assert_eq!(test.matches(" ... ok\n").count(), 300, "{client:?}");
        assert!(
            !test.contains('\u{1b}') && !test.contains("[fcm:"),
            "{client:?}"
        );
        for id in ["call_read", "call_find", "call_search"] {
            assert_eq!(
                sent_tool(&fake, id),
                framed(id, &step(id).printed),
                "{client:?} {id}"
            );
        }
        // The system prompt and the user's words keep their escapes.
        let text = sent_text();
        for kept in [
            "You are an agent. \\u001b[1mBold\\u001b[0m stays.",
            "my log says \\u001b[31mred\\u001b[0m\\rdone",
        ] {
            assert!(
                text.contains(kept),
                "{client:?}: {kept} missing from {text}"
            );
        }

        // The same history, the same bytes; the next turn starts with them.
        let first = fake.requests().last().unwrap().body.clone();
        assert_eq!(s.post(client.path(), &body).status, 200);
        assert_eq!(fake.requests().last().unwrap().body, first, "{client:?}");
        let mut longer = history_steps();
        longer.push(Step {
            id: "call_again",
            read: false,
            command: "cargo build",
            printed: noisy_build(),
            failed: false,
        });
        let next = client.history(&longer).to_string();
        assert_eq!(s.post(client.path(), &next).status, 200);
        let messages = |body: &[u8]| -> Vec<Value> {
            let v: Value = serde_json::from_slice(body).unwrap();
            v["messages"].as_array().unwrap().clone()
        };
        let (before, after) = (
            messages(&first),
            messages(&fake.requests().last().unwrap().body),
        );
        assert_eq!(
            serde_json::to_string(&before).unwrap(),
            serde_json::to_string(&after[..before.len()]).unwrap(),
            "{client:?}: the next turn starts with the same bytes"
        );

        // Off: every tool result as the client sent it.
        let r = s.post_with(client.path(), &body, &[("x-fcm-compress", "off")]);
        assert_eq!(r.status, 200);
        assert_eq!(r.header("x-fcm-v2-compressed"), None, "{client:?}");
        for st in &steps {
            assert_eq!(
                sent_tool(&fake, st.id),
                framed(st.id, &st.printed),
                "{client:?} {}",
                st.id
            );
        }

        // Aggressive: long outputs cut by kind, each cut saying what it left out; the
        // file, and the failed command's results and errors, whole.
        let r = s.post_with(client.path(), &body, &[("x-fcm-compress", "aggressive")]);
        assert_eq!(r.status, 200);
        let test = sent_tool(&fake, "call_test");
        assert!(
            test.contains("[fcm: 300 passing test lines omitted]"),
            "{client:?}: {test}"
        );
        for kept in [
            "test tests::broken ... FAILED",
            "thread 'tests::broken' panicked at src/lib.rs:9:5:",
            "test result: FAILED. 300 passed; 1 failed; 0 ignored",
        ] {
            assert!(test.contains(kept), "{client:?}: {kept} missing:\n{test}");
        }
        let find = sent_tool(&fake, "call_find");
        assert!(find.contains(" lines omitted ("), "{client:?}: {find}");
        assert!(
            find.contains("./src/part_001/lib.rs\n") && find.contains("./src/part_250/lib.rs\n")
        );
        assert!(find.lines().count() < 80, "{client:?}: {find}");
        assert!(saved(&r) > 2_000, "{client:?}");
        for id in ["call_read", "call_search"] {
            assert_eq!(
                sent_tool(&fake, id),
                framed(id, &step(id).printed),
                "{client:?} {id}"
            );
        }
    }
}

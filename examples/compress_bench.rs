//! The tool-result compression benchmark of `scripts/bench-compress.sh`: counts the tokens
//! of a corpus of real tool outputs before and after compression, in both modes, with a
//! real tokenizer (OpenAI's o200k BPE, whose ranks ship inside the `tiktoken-rs` crate:
//! nothing is downloaded), and times the compression per tool result and per request.
//!
//! Usage: compress_bench CORPUS_DIR [CAPTURED_REQUEST.json]
//!
//! CORPUS_DIR holds `manifest.tsv` (kind, exit code, command, file: one output per line)
//! and the outputs. Each output is sent as Claude Code sends a `Bash` result (a failed
//! command's with `Error: Exit code N` before it, as fcm's translation of `is_error` has
//! it). Prints markdown tables; writes `session.json` into CORPUS_DIR: an Anthropic
//! Messages request holding every output as a tool result, for the script's whole-server
//! CPU run. The fcm binary keeps its own characters / 4 estimate; only this tool
//! tokenizes.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use fcm::compress::{chat_body, source, tool_result, Call, Memo, Mode, Source};
use serde_json::{json, Value};

/// One tool output of the corpus.
struct Sample {
    kind: String,
    exit: i32,
    command: String,
    text: String,
}

impl Sample {
    /// The tool result as Claude Code's `Bash` result reaches fcm's router.
    fn result_text(&self) -> String {
        if self.exit == 0 {
            self.text.clone()
        } else {
            format!("Error: Exit code {}\n{}", self.exit, self.text)
        }
    }

    fn arguments(&self) -> String {
        json!({"command": self.command}).to_string()
    }
}

fn load(dir: &Path) -> Vec<Sample> {
    let manifest = std::fs::read_to_string(dir.join("manifest.tsv")).expect("manifest.tsv");
    manifest
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.splitn(4, '\t').collect();
            let bytes = std::fs::read(dir.join(f[3])).expect("corpus file");
            Sample {
                kind: f[0].to_string(),
                exit: f[1].parse().unwrap_or(0),
                command: f[2].to_string(),
                text: String::from_utf8_lossy(&bytes).into_owned(),
            }
        })
        .collect()
}

/// The median of `run`'s own measurements over enough runs to fill ~50 ms (at least 5).
fn median(mut run: impl FnMut() -> Duration) -> Duration {
    let once = run().max(Duration::from_nanos(50));
    let runs = (Duration::from_millis(50).as_nanos() / once.as_nanos()).clamp(5, 20_000) as usize;
    let mut times: Vec<Duration> = (0..runs).map(|_| run()).collect();
    times.sort();
    times[runs / 2]
}

/// The median time of `f`.
fn time<T>(mut f: impl FnMut() -> T) -> Duration {
    median(|| {
        let t = Instant::now();
        std::hint::black_box(f());
        t.elapsed()
    })
}

/// The median time of `f` on a fresh copy of `body` (the copy is not timed): compression
/// changes the request in place.
fn time_on(body: &Value, mut f: impl FnMut(&mut Value)) -> Duration {
    median(|| {
        let mut b = body.clone();
        let t = Instant::now();
        f(&mut b);
        let spent = t.elapsed();
        drop(std::hint::black_box(b));
        spent
    })
}

fn us(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1e6)
}

fn pct(before: usize, after: usize) -> String {
    if before == 0 {
        return "-".into();
    }
    format!(
        "{:.0}%",
        100.0 * (before as f64 - after as f64) / before as f64
    )
}

fn grouped(n: usize) -> String {
    fcm::compress::cut::grouped(n as u64)
}

/// Kinds the issue counts as noisy: builds, installs, test runs with colour.
fn noisy(kind: &str) -> bool {
    ["build", "install", "test"]
        .iter()
        .any(|k| kind.contains(k))
}

#[derive(Default, Clone, Copy)]
struct Totals {
    before: usize,
    lossless: usize,
    aggressive: usize,
}

impl Totals {
    fn add(&mut self, b: usize, l: usize, a: usize) {
        self.before += b;
        self.lossless += l;
        self.aggressive += a;
    }

    fn row(&self, name: &str) -> String {
        format!(
            "| **{name}** | | **{}** | **{}** | **{}** | **{}** | **{}** | |",
            grouped(self.before),
            grouped(self.lossless),
            pct(self.before, self.lossless),
            grouped(self.aggressive),
            pct(self.before, self.aggressive),
        )
    }
}

/// A chat request as the router sees one: a system prompt, the user's words, and one
/// assistant call and tool result per sample.
fn chat_session(system: &str, samples: &[&Sample]) -> Value {
    let mut messages = vec![
        json!({"role": "system", "content": system}),
        json!({"role": "user", "content": "Build it, run the tests and fix what fails."}),
    ];
    for (i, s) in samples.iter().enumerate() {
        let id = format!("toolu_{i:03}");
        messages.push(json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": id, "type": "function", "function": {"name": "Bash", "arguments": s.arguments()}}]}));
        messages.push(json!({"role": "tool", "tool_call_id": id, "content": s.result_text()}));
    }
    json!({"model": "fcm", "max_tokens": 32000, "stream": true, "messages": messages,
           "tools": [{"type": "function", "function": {"name": "Bash", "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}}}]})
}

/// The same session as Claude Code sends it (Anthropic Messages).
fn anthropic_session(system: &str, samples: &[&Sample]) -> Value {
    let mut messages = vec![
        json!({"role": "user", "content": [{"type": "text", "text": "Build it, run the tests and fix what fails."}]}),
    ];
    for (i, s) in samples.iter().enumerate() {
        let id = format!("toolu_{i:03}");
        messages.push(json!({"role": "assistant", "content": [{"type": "tool_use", "id": id, "name": "Bash", "input": {"command": s.command}}]}));
        messages.push(json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": s.text, "is_error": s.exit != 0}]}));
    }
    json!({"model": "claude-sonnet-4-5", "max_tokens": 32000, "stream": false,
           "system": [{"type": "text", "text": system}], "messages": messages,
           "tools": [{"name": "Bash", "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}}]})
}

/// A captured Claude Code request (a JSON file `{"body": ...}`) as a chat request:
/// its system text, user text, and tool uses and results.
fn captured_chat(path: &Path) -> Option<Value> {
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()?;
    let body = doc.get("body")?;
    let text = |v: &Value| -> String {
        match v {
            Value::String(s) => s.clone(),
            Value::Array(parts) => parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n"),
            _ => String::new(),
        }
    };
    let mut messages = vec![json!({"role": "system", "content": text(body.get("system")?)})];
    for m in body.get("messages")?.as_array()? {
        let blocks = m
            .get("content")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let mut calls = Vec::new();
        for b in &blocks {
            match b.get("type").and_then(Value::as_str) {
                Some("tool_use") => calls.push(json!({"id": b["id"], "type": "function", "function": {"name": b["name"], "arguments": b["input"].to_string()}})),
                Some("tool_result") => messages.push(json!({"role": "tool", "tool_call_id": b["tool_use_id"], "content": text(&b["content"])})),
                Some("text") => messages.push(json!({"role": m["role"], "content": b["text"]})),
                _ => {}
            }
        }
        if !calls.is_empty() {
            messages.push(json!({"role": "assistant", "content": null, "tool_calls": calls}));
        }
    }
    let tools: Vec<Value> = body.get("tools")?.as_array()?.iter().map(|t| json!({"type": "function", "function": {"name": t["name"], "description": t["description"], "parameters": t["input_schema"]}})).collect();
    Some(
        json!({"model": "fcm", "max_tokens": body["max_tokens"], "stream": true, "messages": messages, "tools": tools}),
    )
}

/// One request's line of the CPU table: the compression's time beside the JSON work fcm
/// does for any request (parse the body, write it upstream), each mode with its results
/// remembered from earlier turns (warm: the steady state of a session, where each turn
/// brings one new result) and not (cold: all of them compressed at once).
fn cpu_row(name: &str, body: &Value) -> String {
    let bytes = serde_json::to_vec(body).unwrap();
    let json_work = time(|| {
        let v: Value = serde_json::from_slice(&bytes).unwrap();
        serde_json::to_vec(&v).unwrap()
    });
    let share = |d: Duration| format!("{:.0}%", 100.0 * d.as_secs_f64() / json_work.as_secs_f64());
    let mut cells = vec![format!(
        "{name} | {} KB | {}",
        bytes.len() / 1024,
        us(json_work)
    )];
    for mode in [Mode::Lossless, Mode::Aggressive] {
        let memo = Memo::new(256 << 20);
        chat_body(&mut body.clone(), mode, Some(&memo));
        let warm = time_on(body, |b| {
            chat_body(b, mode, Some(&memo));
        });
        cells.push(format!("{} ({})", us(warm), share(warm)));
    }
    for mode in [Mode::Lossless, Mode::Aggressive] {
        let cold = time_on(body, |b| {
            chat_body(b, mode, None);
        });
        cells.push(format!("{} ({})", us(cold), share(cold)));
    }
    format!("| {} |", cells.join(" | "))
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let dir = PathBuf::from(
        args.first()
            .expect("usage: compress_bench CORPUS_DIR [CAPTURED_REQUEST.json]"),
    );
    let captured = args.get(1).map(PathBuf::from);
    let samples = load(&dir);
    let bpe = tiktoken_rs::o200k_base().expect("o200k ranks ship in the crate");
    let tokens = |s: &str| bpe.encode_ordinary(s).len();

    println!("Tokens: o200k_base (tiktoken-rs). Before: the tool result as the client sends it; after: what fcm sends upstream.\n");
    println!("| kind | lines | tokens before | lossless | saved | aggressive | saved | compression time (lossless / aggressive) |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    let (mut all, mut loud, mut long, mut long_output) = (
        Totals::default(),
        Totals::default(),
        Totals::default(),
        Totals::default(),
    );
    for s in &samples {
        let text = s.result_text();
        let args = s.arguments();
        let call = Some(Call {
            name: "Bash",
            arguments: &args,
        });
        let lossless = tool_result(&text, call, Mode::Lossless);
        let aggressive = tool_result(&text, call, Mode::Aggressive);
        let (b, l, a) = (tokens(&text), tokens(&lossless), tokens(&aggressive));
        let lines = text.lines().count();
        let t_l = time(|| tool_result(&text, call, Mode::Lossless));
        let t_a = time(|| tool_result(&text, call, Mode::Aggressive));
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} / {} µs |",
            s.kind,
            grouped(lines),
            grouped(b),
            grouped(l),
            pct(b, l),
            grouped(a),
            pct(b, a),
            us(t_l),
            us(t_a)
        );
        all.add(b, l, a);
        if noisy(&s.kind) {
            loud.add(b, l, a);
        }
        if lines > 200 {
            long.add(b, l, a);
            // A file's contents (a read, a diff) are never changed, in any mode.
            if source::of_call("Bash", &args) != Source::File {
                long_output.add(b, l, a);
            }
        }
    }
    println!("{}", loud.row("noisy kinds (builds, installs, test runs)"));
    println!("{}", long.row("outputs over 200 lines"));
    println!(
        "{}",
        long_output.row("outputs over 200 lines, file contents and diffs aside")
    );
    println!("{}", all.row("all"));

    // Per request: what compression costs beside the JSON work of any request.
    let system = captured
        .as_deref()
        .and_then(|p| std::fs::read_to_string(p).ok())
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .and_then(|d| {
            d.pointer("/body/system/0/text")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .unwrap_or_else(|| "You are a coding agent.".repeat(200));
    let everything: Vec<&Sample> = samples.iter().collect();
    let session = chat_session(&system, &everything);
    std::fs::write(
        dir.join("session.json"),
        anthropic_session(&system, &everything).to_string(),
    )
    .expect("session.json written");
    println!("\nCPU per request (median, µs): the compression step beside parsing the request's JSON and writing it upstream once, which fcm does for every request (the share in brackets). Warm: the results were compressed on earlier turns and are remembered (a session's steady state; each turn adds its one new result's time from the table above). Cold: every result compressed at once.\n");
    println!("| request | size | JSON parse + write | lossless, warm | aggressive, warm | lossless, cold | aggressive, cold |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
    let first_turn = json!({"model": "fcm", "stream": true, "messages": [
        {"role": "system", "content": system}, {"role": "user", "content": "say hi"}]});
    println!(
        "{}",
        cpu_row("an agent's first turn (no tool result)", &first_turn)
    );
    if let Some(body) = captured.as_deref().and_then(captured_chat) {
        println!(
            "{}",
            cpu_row("captured Claude Code tool_result turn", &body)
        );
    }
    let clean: Vec<&Sample> = samples.iter().filter(|s| !noisy(&s.kind)).collect();
    println!(
        "{}",
        cpu_row(
            &format!("a session of {} quiet tool results", clean.len()),
            &chat_session(&system, &clean)
        )
    );
    println!(
        "{}",
        cpu_row(
            &format!("a session of all {} tool results", samples.len()),
            &session
        )
    );
}

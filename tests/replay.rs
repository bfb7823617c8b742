//! Real provider answers, replayed. Every `.sse` and `.json` sample in the realwire folder
//! beside the checkout (answers real providers sent, as other public projects recorded
//! them) is served byte for byte from loopback and asked for through `fcm serve` on all
//! three client protocols. The client must get what the sample means: the same answer
//! text, the same tool calls with usable ids, the reasoning in its protocol's own shape,
//! and the next model's answer when the sample is an error before any content.
//!
//! What a sample means is worked out here from the sample alone, by a small reader of chat
//! chunks and bodies that shares nothing with fcm. The samples are read where they are and
//! never copied into the repository; a missing folder fails the tests unless `FCM_REALWIRE_OPTIONAL` is set.

mod support;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::{json, Value};
use support::*;

/// The catalog's provider id, as the decision header names it (`replay/<model>`).
const PROVIDER: &str = "replay";

/// A good model behind every sample, so an error before content has somewhere to go.
const FALLBACK: &str = "fallback";

/// The good model's answer, as a stream and as a whole body: short enough to read in a
/// failure message.
const FALLBACK_STREAM: &str = concat!(
    "data: {\"id\":\"chatcmpl-fb\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"The next model \"},\"finish_reason\":null}]}\n\n",
    "data: {\"id\":\"chatcmpl-fb\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"answered.\"},\"finish_reason\":null}]}\n\n",
    "data: {\"id\":\"chatcmpl-fb\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":4,\"total_tokens\":7}}\n\n",
    "data: [DONE]\n\n",
);
const FALLBACK_JSON: &str = r#"{"id":"chatcmpl-fb","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"The next model answered."},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}"#;

/// Tools are offered with no parameters: the samples' arguments are whatever the model sent.
fn tool_schema() -> Value {
    json!({"type": "object", "properties": {}})
}

/// Headers that describe the recorded transfer, not the answer: the replay frames its own.
const FRAMING: [&str; 4] = [
    "content-length",
    "transfer-encoding",
    "connection",
    "content-encoding",
];

/// Every socket read and write of the loopback provider gives up after this.
const IO_LIMIT: Duration = Duration::from_secs(30);

// ---------------------------------------------------------------------------------------
// The samples

/// A recorded provider answer: status, headers and body as the provider sent them.
#[derive(Clone)]
struct Sample {
    /// The file name, e.g. `deepseek__reasoner_toolcall_args_split.sse`.
    file: String,
    /// `.sse`: a `text/event-stream` body; `.json`: a whole body.
    stream: bool,
    status: u16,
    reason: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Sample {
    /// The catalog model that serves this sample: the file name without its extension.
    fn model(&self) -> &str {
        self.file
            .rsplit_once('.')
            .map_or(self.file.as_str(), |(stem, _)| stem)
    }

    fn load(dir: &Path, file: &str) -> Sample {
        let body = std::fs::read(dir.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        let mut sample = Sample {
            file: file.to_string(),
            stream: file.ends_with(".sse"),
            status: 200,
            reason: "OK".to_string(),
            headers: Vec::new(),
            body,
        };
        let stem = sample.model().to_string();
        if let Ok(text) = std::fs::read_to_string(dir.join(format!("{stem}.headers"))) {
            let mut lines = text.lines();
            // `HTTP <code> <reason>`; some recordings kept no reason.
            let status_line = lines.next().unwrap_or_default();
            let mut words = status_line.splitn(3, ' ').skip(1);
            sample.status = words
                .next()
                .and_then(|c| c.parse().ok())
                .unwrap_or_else(|| panic!("{file}: bad status line {status_line:?}"));
            sample.reason = words.next().unwrap_or_default().trim().to_string();
            sample.headers = lines
                .filter_map(|l| l.split_once(':'))
                .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                .collect();
        }
        sample
    }

    fn fallback(stream: bool) -> Sample {
        Sample {
            file: format!("{FALLBACK}.{}", if stream { "sse" } else { "json" }),
            stream,
            status: 200,
            reason: "OK".to_string(),
            headers: Vec::new(),
            body: if stream {
                FALLBACK_STREAM
            } else {
                FALLBACK_JSON
            }
            .into(),
        }
    }

    /// The content type the provider sent, else the one its kind implies.
    fn content_type(&self) -> &str {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("content-type"))
            .map(|(_, v)| v.as_str())
            .unwrap_or(if self.stream {
                "text/event-stream"
            } else {
                "application/json"
            })
    }

    /// The whole HTTP answer: the sample's status, its headers but framing, its bytes.
    fn http_answer(&self) -> Vec<u8> {
        let mut head = format!(
            "HTTP/1.1 {} {}\r\ncontent-type: {}\r\n",
            self.status,
            self.reason,
            self.content_type()
        );
        for (k, v) in &self.headers {
            let k_lower = k.to_ascii_lowercase();
            if k_lower != "content-type" && !FRAMING.contains(&k_lower.as_str()) {
                head.push_str(&format!("{k}: {v}\r\n"));
            }
        }
        head.push_str(&format!(
            "content-length: {}\r\nconnection: close\r\n\r\n",
            self.body.len()
        ));
        let mut out = head.into_bytes();
        out.extend_from_slice(&self.body);
        out
    }
}

/// Every sample with a body, by file name (see [`support::realwire_dir`] for when there are
/// none).
fn samples() -> Option<Vec<Sample>> {
    let dir = support::realwire_dir("the replay of real provider answers")?;
    let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let mut files: Vec<String> = entries
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|f| f.ends_with(".sse") || f.ends_with(".json"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no samples in {}", dir.display());
    Some(files.iter().map(|f| Sample::load(&dir, f)).collect())
}

// ---------------------------------------------------------------------------------------
// Reading chat answers

/// One server-sent event: its `event:` name (empty if none) and its `data:` lines joined.
struct Event {
    name: String,
    data: String,
}

fn sse_events(body: &str) -> Vec<Event> {
    let mut out = Vec::new();
    let mut name = String::new();
    let mut data: Vec<&str> = Vec::new();
    let lines = body.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l));
    for line in lines.chain(std::iter::once("")) {
        if line.is_empty() {
            if !data.is_empty() {
                out.push(Event {
                    name: std::mem::take(&mut name),
                    data: data.join("\n"),
                });
                data.clear();
            }
            name.clear();
            continue;
        }
        if line.starts_with(':') {
            continue;
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "event" => name = value.to_string(),
            "data" => data.push(value),
            _ => {}
        }
    }
    out
}

/// Who reads a chat answer. Providers carry reasoning in many shapes; a chat client of fcm
/// is promised it in `reasoning_content` (or the provider's own `reasoning`).
#[derive(Clone, Copy, PartialEq)]
enum Reader {
    Provider,
    Client,
}

/// Whether an error arrived before anything of the answer, or broke an answer off.
#[derive(Debug, Clone, Copy, PartialEq)]
enum ErrorAt {
    BeforeContent,
    AfterContent,
}

/// A tool call put together from deltas, with every id value the answer gave it.
#[derive(Debug, Default)]
struct Call {
    ids: Vec<Value>,
    name: String,
    arguments: String,
}

impl Call {
    /// The arguments as JSON; no arguments at all mean an empty object.
    fn arguments_json(&self) -> Value {
        if self.arguments.trim().is_empty() {
            return json!({});
        }
        serde_json::from_str(&self.arguments).unwrap_or_else(|_| json!(self.arguments))
    }
}

/// A chat answer as it accumulates from chunks (or from one whole message).
struct Answer {
    reader: Reader,
    content: String,
    reasoning: String,
    calls: Vec<Call>,
    by_index: HashMap<u64, usize>,
    error: Option<ErrorAt>,
}

impl Answer {
    fn new(reader: Reader) -> Answer {
        Answer {
            reader,
            content: String::new(),
            reasoning: String::new(),
            calls: Vec::new(),
            by_index: HashMap::new(),
            error: None,
        }
    }

    fn has_content(&self) -> bool {
        !self.content.is_empty() || !self.reasoning.is_empty() || !self.calls.is_empty()
    }

    /// An error ends the answer: nothing after it counts.
    fn error(&mut self) {
        if self.error.is_none() {
            self.error = Some(if self.has_content() {
                ErrorAt::AfterContent
            } else {
                ErrorAt::BeforeContent
            });
        }
    }

    /// One parsed stream event (`event:` name and data).
    fn event(&mut self, event: &Event) {
        if self.error.is_some() || event.data == "[DONE]" {
            return;
        }
        if event.name == "error" {
            self.error();
            return;
        }
        if let Ok(chunk) = serde_json::from_str::<Value>(&event.data) {
            self.chunk(&chunk);
        }
    }

    fn chunk(&mut self, chunk: &Value) {
        if is_error_payload(chunk) {
            self.error();
            return;
        }
        for choice in choices(chunk) {
            if let Some(delta) = choice.get("delta") {
                self.part(delta, false);
            }
        }
    }

    /// A whole (non-stream) body.
    fn body(&mut self, body: &Value) {
        if is_error_payload(body) {
            self.error();
            return;
        }
        for choice in choices(body) {
            if let Some(message) = choice.get("message") {
                self.part(message, true);
            }
        }
    }

    /// A delta or a message: content, reasoning and tool calls.
    fn part(&mut self, d: &Value, whole: bool) {
        match d.get("content") {
            Some(Value::String(s)) => self.content.push_str(s),
            Some(Value::Array(parts)) => {
                for p in parts {
                    match p.get("type").and_then(Value::as_str) {
                        Some("text") => self.content.push_str(str_at(p, "text")),
                        // Mistral's Magistral: reasoning as `thinking` parts of the content.
                        Some("thinking") if self.reader == Reader::Provider => {
                            for t in p
                                .get("thinking")
                                .and_then(Value::as_array)
                                .into_iter()
                                .flatten()
                            {
                                self.reasoning.push_str(str_at(t, "text"));
                            }
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
        let field = ["reasoning_content", "reasoning"]
            .iter()
            .map(|k| str_at(d, k))
            .find(|s| !s.is_empty());
        if let Some(text) = field {
            self.reasoning.push_str(text);
        } else if self.reader == Reader::Provider {
            for detail in d
                .get("reasoning_details")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                self.reasoning.push_str(str_at(detail, "text"));
            }
        }
        for call in d
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            self.tool_call(call, whole);
        }
    }

    /// A tool call delta joins the call with its `index`; without one it joins the current
    /// call unless it brings a new id (a null or empty id or name continues).
    fn tool_call(&mut self, tc: &Value, whole: bool) {
        let fresh_id = tc
            .get("id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty());
        let slot = if whole {
            None
        } else if let Some(index) = tc.get("index").and_then(Value::as_u64) {
            self.by_index.get(&index).copied()
        } else {
            match (self.calls.last(), fresh_id) {
                (Some(last), Some(id)) if last.ids.iter().any(|v| v == id) => {
                    Some(self.calls.len() - 1)
                }
                (Some(_), None) => Some(self.calls.len() - 1),
                _ => None,
            }
        };
        let slot = slot.unwrap_or_else(|| {
            self.calls.push(Call::default());
            let at = self.calls.len() - 1;
            if let Some(index) = tc.get("index").and_then(Value::as_u64) {
                self.by_index.insert(index, at);
            }
            at
        });
        let call = &mut self.calls[slot];
        if let Some(id) = tc.get("id") {
            call.ids.push(id.clone());
        }
        let function = tc.get("function").unwrap_or(&Value::Null);
        let name = str_at(function, "name");
        if call.name.is_empty() {
            call.name = name.to_string();
        }
        call.arguments.push_str(str_at(function, "arguments"));
    }
}

fn choices(v: &Value) -> impl Iterator<Item = &Value> {
    v.get("choices")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// The string at `key`, or "" (null, absent and non-strings alike).
fn str_at<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// `{"error": …}` (OpenAI, Groq, OpenRouter) or `{"object": "error"}` (vLLM, Mistral).
fn is_error_payload(v: &Value) -> bool {
    v.get("error").is_some_and(|e| !e.is_null()) || v.get("object") == Some(&json!("error"))
}

const THINK_TAGS: [(&str, &str); 2] = [("<think>", "</think>"), ("<thought>", "</thought>")];

/// A leading `<think>…</think>` (DeepSeek R1) or `<thought>…</thought>` (Gemini) block is
/// reasoning written into the content: (reasoning, answer text).
fn split_leading_think(content: &str) -> (String, String) {
    let start = content.trim_start();
    for (open, close) in THINK_TAGS {
        if let Some(rest) = start.strip_prefix(open) {
            return match rest.split_once(close) {
                Some((thought, text)) => (thought.to_string(), text.to_string()),
                None => (rest.to_string(), String::new()),
            };
        }
    }
    (String::new(), content.to_string())
}

// ---------------------------------------------------------------------------------------
// What a sample means

#[derive(Debug, Clone, Copy, PartialEq)]
enum Outcome {
    /// An answer: text, reasoning, tool calls, or some of them.
    Answer,
    /// An error status, or an error payload before anything else: the next model answers.
    ErrorBeforeContent,
    /// An error after part of the answer: the part is kept.
    ErrorAfterContent,
    /// A well-formed answer with nothing in it: as useless as an error.
    Nothing,
}

#[derive(Debug)]
struct Meaning {
    text: String,
    reasoning: String,
    /// Name and arguments of each call, in order.
    calls: Vec<(String, Value)>,
    outcome: Outcome,
}

impl Meaning {
    fn of(sample: &Sample) -> Meaning {
        let mut answer = Answer::new(Reader::Provider);
        let body = String::from_utf8_lossy(&sample.body);
        if sample.stream {
            for event in sse_events(&body) {
                answer.event(&event);
            }
        } else {
            let v: Value = serde_json::from_str(&body)
                .unwrap_or_else(|e| panic!("{}: the body is not JSON: {e}", sample.file));
            answer.body(&v);
        }
        let (tagged_reasoning, text) = split_leading_think(&answer.content);
        let outcome = match answer.error {
            _ if sample.status >= 400 => Outcome::ErrorBeforeContent,
            Some(ErrorAt::BeforeContent) => Outcome::ErrorBeforeContent,
            Some(ErrorAt::AfterContent) => Outcome::ErrorAfterContent,
            None if !answer.has_content() => Outcome::Nothing,
            None => Outcome::Answer,
        };
        Meaning {
            text,
            reasoning: answer.reasoning + &tagged_reasoning,
            calls: answer
                .calls
                .iter()
                .map(|c| (c.name.clone(), c.arguments_json()))
                .collect(),
            outcome,
        }
    }

    /// The tool names to offer, once each.
    fn tool_names(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for (name, _) in &self.calls {
            if !names.contains(name) {
                names.push(name.clone());
            }
        }
        names
    }
}

// ---------------------------------------------------------------------------------------
// The loopback provider

/// A provider on loopback that answers each POST with the sample its `model` names. It
/// stops accepting when dropped; a connection lives at most one request and [`IO_LIMIT`].
struct Replayer {
    base_url: String,
    stop: Arc<AtomicBool>,
    acceptor: Option<JoinHandle<()>>,
}

impl Replayer {
    fn start(samples: &[Sample]) -> Replayer {
        let by_model: HashMap<String, Sample> = samples
            .iter()
            .map(|s| (s.model().to_string(), s.clone()))
            .collect();
        let by_model = Arc::new(by_model);
        let listener = TcpListener::bind("127.0.0.1:0").expect("loopback listens");
        listener.set_nonblocking(true).unwrap();
        let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let acceptor = std::thread::spawn(move || {
            while !stopped.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((conn, _)) => {
                        let by_model = by_model.clone();
                        std::thread::spawn(move || {
                            let _ = serve_one(conn, &by_model);
                        });
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Replayer {
            base_url,
            stop,
            acceptor: Some(acceptor),
        }
    }
}

impl Drop for Replayer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
    }
}

/// Reads one request (head and Content-Length body) and answers it; no keep-alive.
fn serve_one(conn: TcpStream, by_model: &HashMap<String, Sample>) -> std::io::Result<()> {
    conn.set_nonblocking(false)?;
    conn.set_read_timeout(Some(IO_LIMIT))?;
    conn.set_write_timeout(Some(IO_LIMIT))?;
    let mut reader = BufReader::new(conn.try_clone()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 || line.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            if k.trim().eq_ignore_ascii_case("content-length") {
                length = v.trim().parse().unwrap_or(0);
            }
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let model = str_at(&request, "model");
    // The good model answers in the shape it was asked for, as real providers do.
    let fallback = Sample::fallback(request["stream"] == true);
    let sample = match model {
        FALLBACK => Some(&fallback),
        _ => by_model.get(model),
    }
    .filter(|_| request_line.starts_with("POST "));
    let answer = match sample {
        Some(sample) => sample.http_answer(),
        None => {
            let body = r#"{"error":{"message":"no sample for this model"}}"#;
            format!("HTTP/1.1 404 Not Found\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}", body.len()).into_bytes()
        }
    };
    let mut conn = conn;
    conn.write_all(&answer)?;
    conn.flush()?;
    conn.shutdown(Shutdown::Write)
}

/// A catalog of the sample's model (tried first) and the good model after it. The good
/// model has the larger window: after a context overflow fcm tries only larger windows.
fn catalog(w: &World, base_url: &str, model: &str) {
    let doc = json!({"version": 1, "providers": [{
        "id": PROVIDER, "name": "Replayed provider", "baseUrl": base_url, "keyRequired": false,
        "models": [
            {"id": model, "label": model, "tier": "S", "context": 131072},
            {"id": FALLBACK, "label": FALLBACK, "tier": "A", "context": 1048576},
        ],
    }]});
    std::fs::write(&w.catalog, doc.to_string()).unwrap();
}

// ---------------------------------------------------------------------------------------
// The three client protocols

#[derive(Debug, Clone, Copy, PartialEq)]
enum Protocol {
    Chat,
    Anthropic,
    Responses,
}

/// What a content block or output item holds: reasoning must come before the text.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Part {
    Reasoning,
    Text,
    Call,
}

#[derive(Debug)]
struct SeenCall {
    /// Every id value the client got for this call.
    ids: Vec<Value>,
    name: String,
    arguments: Value,
}

/// What the client got, in terms common to the protocols.
#[derive(Debug, Default)]
struct Seen {
    text: String,
    reasoning: String,
    /// A Responses stream's reasoning item as `response.output_item.done` carries it.
    reasoning_item: Option<String>,
    calls: Vec<SeenCall>,
    /// Content blocks or output items in the order the client got them.
    order: Vec<Part>,
}

impl Protocol {
    fn name(self) -> &'static str {
        match self {
            Protocol::Chat => "chat completions",
            Protocol::Anthropic => "Anthropic Messages",
            Protocol::Responses => "Responses",
        }
    }

    fn path(self) -> &'static str {
        match self {
            Protocol::Chat => "/v1/chat/completions",
            Protocol::Anthropic => "/v1/messages",
            Protocol::Responses => "/v1/responses",
        }
    }

    fn request(self, stream: bool, tools: &[String]) -> String {
        let mut body = match self {
            Protocol::Chat => {
                json!({"model": "fcm", "stream": stream, "messages": [{"role": "user", "content": "hi"}]})
            }
            Protocol::Anthropic => {
                json!({"model": "fcm", "max_tokens": 1024, "stream": stream, "messages": [{"role": "user", "content": "hi"}]})
            }
            Protocol::Responses => json!({"model": "fcm", "stream": stream, "input": "hi"}),
        };
        if !tools.is_empty() {
            body["tools"] = tools
                .iter()
                .map(|name| match self {
                    Protocol::Chat => json!({"type": "function", "function": {"name": name, "parameters": tool_schema()}}),
                    Protocol::Anthropic => json!({"name": name, "input_schema": tool_schema()}),
                    Protocol::Responses => json!({"type": "function", "name": name, "parameters": tool_schema()}),
                })
                .collect();
        }
        body.to_string()
    }

    fn read(self, body: &str, stream: bool) -> Seen {
        match (self, stream) {
            (Protocol::Chat, true) => {
                let mut answer = Answer::new(Reader::Client);
                for event in sse_events(body) {
                    answer.event(&event);
                }
                seen_chat(answer)
            }
            (Protocol::Chat, false) => {
                let mut answer = Answer::new(Reader::Client);
                answer.body(&serde_json::from_str(body).unwrap_or(Value::Null));
                seen_chat(answer)
            }
            (Protocol::Anthropic, true) => seen_anthropic_stream(body),
            (Protocol::Anthropic, false) => {
                let v: Value = serde_json::from_str(body).unwrap_or(Value::Null);
                let mut seen = Seen::default();
                for block in v
                    .get("content")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    match str_at(block, "type") {
                        "text" => {
                            seen.text.push_str(str_at(block, "text"));
                            seen.order.push(Part::Text);
                        }
                        "thinking" => {
                            seen.reasoning.push_str(str_at(block, "thinking"));
                            seen.order.push(Part::Reasoning);
                        }
                        "tool_use" => {
                            seen.calls.push(SeenCall {
                                ids: block.get("id").cloned().into_iter().collect(),
                                name: str_at(block, "name").to_string(),
                                arguments: block.get("input").cloned().unwrap_or(Value::Null),
                            });
                            seen.order.push(Part::Call);
                        }
                        _ => {}
                    }
                }
                seen
            }
            (Protocol::Responses, true) => seen_responses_stream(body),
            (Protocol::Responses, false) => {
                let v: Value = serde_json::from_str(body).unwrap_or(Value::Null);
                let mut seen = Seen::default();
                for item in v
                    .get("output")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    if let Some(summary) = responses_item(item, &mut seen) {
                        seen.reasoning.push_str(&summary);
                    }
                    if item["type"] == "message" {
                        for part in item
                            .get("content")
                            .and_then(Value::as_array)
                            .into_iter()
                            .flatten()
                        {
                            seen.text.push_str(str_at(part, "text"));
                        }
                    }
                }
                seen
            }
        }
    }
}

fn seen_chat(answer: Answer) -> Seen {
    Seen {
        text: answer.content.clone(),
        reasoning: answer.reasoning.clone(),
        reasoning_item: None,
        calls: answer
            .calls
            .iter()
            .map(|c| SeenCall {
                ids: c.ids.clone(),
                name: c.name.clone(),
                arguments: c.arguments_json(),
            })
            .collect(),
        order: Vec::new(),
    }
}

fn seen_anthropic_stream(body: &str) -> Seen {
    let mut seen = Seen::default();
    // Block index → (call position, its partial JSON).
    let mut partial: HashMap<u64, (usize, String)> = HashMap::new();
    for event in sse_events(body) {
        let Ok(d) = serde_json::from_str::<Value>(&event.data) else {
            continue;
        };
        let index = d.get("index").and_then(Value::as_u64).unwrap_or(0);
        match event.name.as_str() {
            "content_block_start" => {
                let block = &d["content_block"];
                match str_at(block, "type") {
                    "text" => seen.order.push(Part::Text),
                    "thinking" => seen.order.push(Part::Reasoning),
                    "tool_use" => {
                        seen.calls.push(SeenCall {
                            ids: block.get("id").cloned().into_iter().collect(),
                            name: str_at(block, "name").to_string(),
                            arguments: block.get("input").cloned().unwrap_or(json!({})),
                        });
                        partial.insert(index, (seen.calls.len() - 1, String::new()));
                        seen.order.push(Part::Call);
                    }
                    _ => {}
                }
            }
            "content_block_delta" => {
                let delta = &d["delta"];
                match str_at(delta, "type") {
                    "text_delta" => seen.text.push_str(str_at(delta, "text")),
                    "thinking_delta" => seen.reasoning.push_str(str_at(delta, "thinking")),
                    "input_json_delta" => {
                        if let Some((_, json)) = partial.get_mut(&index) {
                            json.push_str(str_at(delta, "partial_json"));
                        }
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
    for (at, json) in partial.into_values() {
        if !json.is_empty() {
            seen.calls[at].arguments = serde_json::from_str(&json).unwrap_or(json!(json));
        }
    }
    seen
}

fn seen_responses_stream(body: &str) -> Seen {
    let mut seen = Seen::default();
    for event in sse_events(body) {
        let Ok(d) = serde_json::from_str::<Value>(&event.data) else {
            continue;
        };
        let name = if event.name.is_empty() {
            str_at(&d, "type").to_string()
        } else {
            event.name.clone()
        };
        match name.as_str() {
            "response.output_text.delta" => seen.text.push_str(str_at(&d, "delta")),
            "response.reasoning_summary_text.delta" => seen.reasoning.push_str(str_at(&d, "delta")),
            "response.output_item.done" => {
                if let Some(summary) = responses_item(&d["item"], &mut seen) {
                    seen.reasoning_item
                        .get_or_insert_with(String::new)
                        .push_str(&summary);
                }
            }
            _ => {}
        }
    }
    seen
}

/// Notes a Responses output item's place and its call; returns a reasoning item's summary.
fn responses_item(item: &Value, seen: &mut Seen) -> Option<String> {
    match str_at(item, "type") {
        "message" => seen.order.push(Part::Text),
        "reasoning" => {
            seen.order.push(Part::Reasoning);
            let summary = item
                .get("summary")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter(|part| part["type"] == "summary_text")
                .map(|part| str_at(part, "text"))
                .collect();
            return Some(summary);
        }
        "function_call" => {
            let args = str_at(item, "arguments");
            seen.calls.push(SeenCall {
                ids: item.get("call_id").cloned().into_iter().collect(),
                name: str_at(item, "name").to_string(),
                arguments: if args.trim().is_empty() {
                    json!({})
                } else {
                    serde_json::from_str(args).unwrap_or(json!(args))
                },
            });
            seen.order.push(Part::Call);
        }
        _ => {}
    }
    None
}

// ---------------------------------------------------------------------------------------
// The judge

/// A long text shortened for a failure message.
fn brief(s: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    if chars.len() <= 120 {
        return format!("{s:?}");
    }
    let head: String = chars[..60].iter().collect();
    let tail: String = chars[chars.len() - 40..].iter().collect();
    format!("{head:?} … {tail:?} ({} chars)", chars.len())
}

/// Asks for one sample on one protocol; returns what is wrong with the answer, if anything.
fn replay(
    sample: &Sample,
    meaning: &Meaning,
    fallback: &Meaning,
    protocol: Protocol,
    provider: &Replayer,
) -> Vec<String> {
    let w = World::new();
    catalog(&w, &provider.base_url, sample.model());
    let s = w.serve(&[]);
    let r = s.post(
        protocol.path(),
        &protocol.request(sample.stream, &meaning.tool_names()),
    );
    let mut wrong = Vec::new();
    let decision = r.header("x-fcm-v2-decision").unwrap_or("").to_string();
    if r.status != 200 {
        wrong.push(format!(
            "HTTP {} (decision {decision:?}): {}",
            r.status,
            brief(&r.body)
        ));
        return wrong;
    }
    let seen = protocol.read(&r.body, sample.stream);
    let failed_over = decision.starts_with(&format!("{PROVIDER}/{FALLBACK}!served|"));
    let fails_over = match meaning.outcome {
        Outcome::ErrorBeforeContent | Outcome::Nothing => true,
        // Once part of an answer has reached the client it must be kept. With no text yet
        // (only reasoning) fcm may still have held everything back and failed over
        // cleanly: then nothing of the broken answer may reach the client.
        Outcome::ErrorAfterContent => {
            if failed_over && !meaning.text.trim().is_empty() {
                wrong.push(format!(
                    "failed over after the answer had begun, dropping {}",
                    brief(meaning.text.trim())
                ));
            }
            failed_over
        }
        Outcome::Answer => false,
    };
    let continued;
    let expected = if fails_over {
        let want = format!(
            "{PROVIDER}/{FALLBACK}!served|{PROVIDER}/{}:",
            sample.model()
        );
        let attempts = r.header("x-fcm-v2-attempts").unwrap_or("");
        if !decision.starts_with(&want) || attempts != "2" {
            wrong.push(format!(
                "failover: want two attempts, the second ({FALLBACK}) served; decision {decision:?}, attempts {attempts:?}"
            ));
        }
        fallback
    } else {
        let want = format!("{PROVIDER}/{}!served|", sample.model());
        if !decision.starts_with(&want) {
            wrong.push(format!("served by: want {want:?}…, decision {decision:?}"));
        }
        if meaning.outcome == Outcome::ErrorAfterContent && meaning.calls.is_empty() {
            // Broken off in text or reasoning, not inside a call: the next model finishes
            // the answer in the same stream.
            continued = Meaning {
                text: format!("{}{}", meaning.text, fallback.text),
                reasoning: format!("{}{}", meaning.reasoning, fallback.reasoning),
                calls: fallback.calls.clone(),
                outcome: Outcome::Answer,
            };
            &continued
        } else {
            meaning
        }
    };
    judge(expected, &seen, protocol, sample.stream, &mut wrong);
    wrong
}

/// Whether what the client saw is the expected answer, in the protocol's own shapes.
fn judge(
    expected: &Meaning,
    seen: &Seen,
    protocol: Protocol,
    stream: bool,
    wrong: &mut Vec<String>,
) {
    judge_text(expected, seen, wrong);
    judge_calls(expected, seen, wrong);
    if !expected.reasoning.trim().is_empty() {
        judge_reasoning(expected, seen, protocol, stream, wrong);
    } else if !seen.reasoning.trim().is_empty() {
        // After a failover: the failed attempt's reasoning must not reach the client.
        wrong.push(format!(
            "reasoning the answer does not have: {}",
            brief(seen.reasoning.trim())
        ));
    }
}

fn judge_text(expected: &Meaning, seen: &Seen, wrong: &mut Vec<String>) {
    if seen.text.trim() != expected.text.trim() {
        wrong.push(format!(
            "text: want {}, got {}",
            brief(expected.text.trim()),
            brief(seen.text.trim())
        ));
    }
    for tag in THINK_TAGS.iter().flat_map(|(open, close)| [open, close]) {
        if seen.text.contains(tag) {
            wrong.push(format!("text: contains {tag}"));
        }
    }
}

fn judge_calls(expected: &Meaning, seen: &Seen, wrong: &mut Vec<String>) {
    let got: Vec<(String, Value)> = seen
        .calls
        .iter()
        .map(|c| (c.name.clone(), c.arguments.clone()))
        .collect();
    if got != expected.calls {
        wrong.push(format!(
            "tool calls: want {:?}, got {got:?}",
            expected.calls
        ));
    }
    let mut ids: Vec<&str> = Vec::new();
    for call in &seen.calls {
        let bad: Vec<&Value> = call
            .ids
            .iter()
            .filter(|v| v.as_str().is_none_or(str::is_empty))
            .collect();
        let first = call
            .ids
            .iter()
            .find_map(|v| v.as_str())
            .filter(|s| !s.is_empty());
        match first {
            None => wrong.push(format!("tool call {}: no id", call.name)),
            Some(_) if !bad.is_empty() => wrong.push(format!(
                "tool call {}: the client got ids {:?} (null or empty)",
                call.name, call.ids
            )),
            Some(id) if ids.contains(&id) => {
                wrong.push(format!("tool call {}: id {id:?} used twice", call.name))
            }
            Some(id) => ids.push(id),
        }
    }
}

fn judge_reasoning(
    expected: &Meaning,
    seen: &Seen,
    protocol: Protocol,
    stream: bool,
    wrong: &mut Vec<String>,
) {
    let want = expected.reasoning.trim();
    let carrier = match (protocol, stream) {
        (Protocol::Chat, _) => "reasoning_content",
        (Protocol::Anthropic, true) => "thinking_delta events",
        (Protocol::Anthropic, false) => "a thinking block",
        (Protocol::Responses, true) => "reasoning_summary_text.delta events",
        (Protocol::Responses, false) => "a reasoning item's summary",
    };
    if seen.reasoning.trim() != want {
        wrong.push(format!(
            "reasoning in {carrier}: want {}, got {}",
            brief(want),
            brief(seen.reasoning.trim())
        ));
    }
    if protocol == Protocol::Responses && stream {
        match &seen.reasoning_item {
            None => wrong.push("reasoning: no reasoning item in response.output_item.done".into()),
            Some(item) if item.trim() != want => wrong.push(format!(
                "reasoning item in response.output_item.done: want {}, got {}",
                brief(want),
                brief(item.trim())
            )),
            Some(_) => {}
        }
    }
    let first = |part| seen.order.iter().position(|p| *p == part);
    if protocol == Protocol::Anthropic
        && seen.reasoning.trim() == want
        && first(Part::Reasoning).is_none()
    {
        wrong.push("reasoning: thinking deltas outside a thinking block".into());
    }
    if protocol != Protocol::Chat && !expected.text.trim().is_empty() {
        if let (Some(reasoning), Some(text)) = (first(Part::Reasoning), first(Part::Text)) {
            if reasoning > text {
                wrong.push("reasoning: comes after the text".into());
            }
        }
    }
}

/// Replays every sample on one protocol and fails once, listing every broken sample.
fn replay_all(protocol: Protocol) {
    let Some(samples) = samples() else {
        return;
    };
    let provider = Replayer::start(&samples);
    let mut failures = Vec::new();
    for sample in &samples {
        let meaning = Meaning::of(sample);
        let fallback = Meaning::of(&Sample::fallback(sample.stream));
        // One broken case (fcm not starting, say) must not hide the others.
        let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            replay(sample, &meaning, &fallback, protocol, &provider)
        }));
        let wrong = run.unwrap_or_else(|panic| {
            let why = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            vec![format!("the replay panicked: {why}")]
        });
        failures.extend(
            wrong
                .into_iter()
                .map(|w| format!("{} × {}: {w}", sample.file, protocol.name())),
        );
    }
    assert!(
        failures.is_empty(),
        "{} failing assertion(s) over {} samples on {}:\n{}",
        failures.len(),
        samples.len(),
        protocol.name(),
        failures.join("\n")
    );
}

#[test]
fn chat_completions_clients_get_what_each_real_answer_means() {
    replay_all(Protocol::Chat);
}

#[test]
fn claude_code_gets_what_each_real_answer_means() {
    replay_all(Protocol::Anthropic);
}

#[test]
fn codex_gets_what_each_real_answer_means() {
    replay_all(Protocol::Responses);
}

// ---------------------------------------------------------------------------------------
// The reader itself, so a failure above is fcm's and not the reader's

fn meaning_of_stream(chunks: &[Value]) -> Meaning {
    let body: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
    Meaning::of(&Sample {
        file: "hand.sse".into(),
        stream: true,
        status: 200,
        reason: "OK".into(),
        headers: Vec::new(),
        body: body.into_bytes(),
    })
}

fn delta(d: Value) -> Value {
    json!({"choices": [{"index": 0, "delta": d}]})
}

#[test]
fn the_reader_assembles_calls_by_index_or_in_order_and_moves_think_blocks() {
    let m = meaning_of_stream(&[
        delta(json!({"content": "<think>plan</think>Done."})),
        delta(
            json!({"tool_calls": [{"index": 0, "id": "a", "function": {"name": "add", "arguments": "{\"x\""}}]}),
        ),
        delta(
            json!({"tool_calls": [{"index": 1, "id": "b", "function": {"name": "mul", "arguments": "{}"}}]}),
        ),
        delta(
            json!({"tool_calls": [{"index": 0, "id": null, "function": {"name": null, "arguments": ":1}"}}]}),
        ),
    ]);
    assert_eq!((m.text.as_str(), m.reasoning.as_str()), ("Done.", "plan"));
    assert_eq!(
        m.calls,
        [
            ("add".to_string(), json!({"x": 1})),
            ("mul".to_string(), json!({}))
        ]
    );
    assert_eq!(m.outcome, Outcome::Answer);

    let m = meaning_of_stream(&[
        delta(
            json!({"tool_calls": [{"id": "a", "function": {"name": "f", "arguments": "{\"q\":"}}]}),
        ),
        delta(json!({"tool_calls": [{"id": "", "function": {"name": "", "arguments": "2}"}}]})),
        delta(json!({"tool_calls": [{"id": "b", "function": {"name": "g", "arguments": ""}}]})),
    ]);
    assert_eq!(
        m.calls,
        [
            ("f".to_string(), json!({"q": 2})),
            ("g".to_string(), json!({}))
        ]
    );

    let m = meaning_of_stream(&[
        delta(json!({"reasoning": "hm"})),
        json!({"error": {"message": "boom"}}),
    ]);
    assert_eq!(
        (m.reasoning.as_str(), m.outcome),
        ("hm", Outcome::ErrorAfterContent)
    );
    let m = meaning_of_stream(&[json!({"object": "error", "message": "no"})]);
    assert_eq!(m.outcome, Outcome::ErrorBeforeContent);
}

#[test]
fn the_reader_knows_what_the_real_answers_mean() {
    let Some(samples) = samples() else {
        return;
    };
    let meaning = |file: &str| {
        let sample = samples
            .iter()
            .find(|s| s.file == file)
            .unwrap_or_else(|| panic!("no sample {file}"));
        Meaning::of(sample)
    };
    // Kimi on Chutes: `"id":null, "name":null` continue calls 0 and 1.
    let m = meaning("openrouter__kimi_chutes_toolcalls_null_id_name.sse");
    assert_eq!(
        m.calls,
        [
            ("add".to_string(), json!({"a": 2, "b": 3})),
            ("multiply".to_string(), json!({"a": 2, "b": 3}))
        ]
    );
    // Qwen on DashScope: `"id":""` continues the call.
    let m = meaning("dashscope__qwen3max_toolcall_empty_id_trailing_chunk.sse");
    assert_eq!(
        m.calls,
        [("weather".to_string(), json!({"location": "San Francisco"}))]
    );
    // Mistral and Gemini send no `index`.
    let m = meaning("mistral__toolcall_one_chunk_no_index_no_type.sse");
    assert_eq!(
        m.calls,
        [("weather".to_string(), json!({"location": "San Francisco"}))]
    );
    // DeepSeek R1 on Together: the reasoning is a `<think>` block in the content.
    let m = meaning("together_via_hf__deepseek_r1_think_tags_in_content.sse");
    assert!(m.reasoning.trim_start().starts_with("Okay"), "{m:?}");
    assert!(!m.text.contains("think>") && m.text.trim().ends_with('🌟'));
    // Gemini: a `<thought>` block, closed in the chunk that starts the answer.
    let m = meaning("gemini__thought_tags_extra_content_google_thought.sse");
    assert_eq!(m.text, "你好！有什么我可以帮助你的吗？");
    assert!(m.reasoning.starts_with("**Defining the Greeting**"));
    // Magistral: `thinking` parts of an array content, then string content.
    let m = meaning("mistral__magistral_thinking_content_array.sse");
    assert!(m.reasoning.starts_with("Okay, the user"), "{m:?}");
    assert!(m.text.starts_with("To cross the street safely"));
    // Groq ends a 200 stream with `event: error` after reasoning; OpenRouter sends an
    // `error` chunk after reasoning.
    for file in [
        "groq__midstream_error_event_tool_use_failed.sse",
        "openrouter__midstream_error_after_processing_comments.sse",
    ] {
        let m = meaning(file);
        assert_eq!(m.outcome, Outcome::ErrorAfterContent, "{file}");
        assert!(!m.reasoning.is_empty() && m.text.is_empty(), "{file}");
    }
    assert_eq!(
        meaning("openrouter__midstream_error_after_processing_comments.sse").reasoning,
        "We need to respond to a greeting. The user"
    );
    // Error bodies, with and without an error status.
    for file in [
        "groq__400_tool_use_failed.json",
        "mistral__429_flat_object_error.json",
        "vllm__400_context_length_object_error.json",
        "groq__413_request_too_large_tpm.json",
    ] {
        assert_eq!(meaning(file).outcome, Outcome::ErrorBeforeContent, "{file}");
    }
    assert_eq!(
        meaning("gemini__role_only_stop_chunk_zero_output.sse").outcome,
        Outcome::Nothing
    );
    let m = meaning("deepseek__reasoner_toolcall_nonstream.json");
    assert_eq!(m.text, "Let me load the dice rolling capability!");
    assert_eq!(
        m.calls,
        [("load_capability".to_string(), json!({"id": "DICE_ROLL"}))]
    );
    assert!(m
        .reasoning
        .starts_with("The user wants to play a dice game."));
}

/// Writes SSE events as a server would (`event:` line when named).
fn sse(events: &[(&str, Value)]) -> String {
    events
        .iter()
        .map(|(name, data)| match *name {
            "" => format!("data: {data}\n\n"),
            _ => format!("event: {name}\ndata: {data}\n\n"),
        })
        .collect()
}

#[test]
fn the_judge_accepts_the_reasoning_shapes_each_protocol_promises() {
    let expected = Meaning {
        text: "Hi".into(),
        reasoning: "hm".into(),
        calls: vec![("f".into(), json!({"a": 1}))],
        outcome: Outcome::Answer,
    };
    let chat_stream = sse(&[
        (
            "",
            delta(json!({"role": "assistant", "reasoning_content": "hm"})),
        ),
        ("", delta(json!({"content": "Hi"}))),
        (
            "",
            delta(
                json!({"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{\"a\":1}"}}]}),
            ),
        ),
    ]);
    let chat_body = json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi", "reasoning_content": "hm",
        "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{\"a\":1}"}}]}}]});
    let block = |index: u64, block: Value| {
        (
            "content_block_start",
            json!({"index": index, "content_block": block}),
        )
    };
    let block_delta = |index: u64, delta: Value| {
        (
            "content_block_delta",
            json!({"index": index, "delta": delta}),
        )
    };
    let anthropic_stream = sse(&[
        ("message_start", json!({"message": {"content": []}})),
        block(0, json!({"type": "thinking", "thinking": ""})),
        block_delta(0, json!({"type": "thinking_delta", "thinking": "hm"})),
        ("content_block_stop", json!({"index": 0})),
        block(1, json!({"type": "text", "text": ""})),
        block_delta(1, json!({"type": "text_delta", "text": "Hi"})),
        ("content_block_stop", json!({"index": 1})),
        block(
            2,
            json!({"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}),
        ),
        block_delta(
            2,
            json!({"type": "input_json_delta", "partial_json": "{\"a\":1}"}),
        ),
        ("content_block_stop", json!({"index": 2})),
        ("message_stop", json!({})),
    ]);
    let anthropic_body = json!({"content": [{"type": "thinking", "thinking": "hm", "signature": ""}, {"type": "text", "text": "Hi"},
        {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"a": 1}}]});
    let reasoning_item = json!({"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "hm"}]});
    let message_item = json!({"type": "message", "id": "msg_1", "role": "assistant", "content": [{"type": "output_text", "text": "Hi"}]});
    let call_item = json!({"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f", "arguments": "{\"a\":1}"});
    let responses_stream = sse(&[
        (
            "response.reasoning_summary_text.delta",
            json!({"delta": "hm"}),
        ),
        ("response.output_item.done", json!({"item": reasoning_item})),
        ("response.output_text.delta", json!({"delta": "Hi"})),
        ("response.output_item.done", json!({"item": message_item})),
        ("response.output_item.done", json!({"item": call_item})),
    ]);
    let responses_body = json!({"output": [reasoning_item, message_item, call_item]});
    for (protocol, stream, body) in [
        (Protocol::Chat, true, chat_stream),
        (Protocol::Chat, false, chat_body.to_string()),
        (Protocol::Anthropic, true, anthropic_stream.clone()),
        (Protocol::Anthropic, false, anthropic_body.to_string()),
        (Protocol::Responses, true, responses_stream),
        (Protocol::Responses, false, responses_body.to_string()),
    ] {
        let mut wrong = Vec::new();
        judge(
            &expected,
            &protocol.read(&body, stream),
            protocol,
            stream,
            &mut wrong,
        );
        assert!(
            wrong.is_empty(),
            "{} stream={stream}: {wrong:?}",
            protocol.name()
        );
    }

    // Thinking after the text, a `<think>` tag left in the text, an empty id: each is caught.
    let late = sse(&[
        block(0, json!({"type": "text", "text": ""})),
        block_delta(0, json!({"type": "text_delta", "text": "Hi"})),
        block(1, json!({"type": "thinking", "thinking": ""})),
        block_delta(1, json!({"type": "thinking_delta", "thinking": "hm"})),
        block(
            2,
            json!({"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"a": 1}}),
        ),
    ]);
    let mut wrong = Vec::new();
    judge(
        &expected,
        &Protocol::Anthropic.read(&late, true),
        Protocol::Anthropic,
        true,
        &mut wrong,
    );
    assert_eq!(wrong, ["reasoning: comes after the text"]);
    let leaky = sse(&[
        ("", delta(json!({"content": "<think>hm</think>Hi"}))),
        (
            "",
            delta(
                json!({"tool_calls": [{"index": 0, "id": "", "function": {"name": "f", "arguments": "{\"a\":1}"}}]}),
            ),
        ),
    ]);
    let mut wrong = Vec::new();
    judge(
        &expected,
        &Protocol::Chat.read(&leaky, true),
        Protocol::Chat,
        true,
        &mut wrong,
    );
    let what: Vec<&str> = wrong.iter().map(|w| w.split(':').next().unwrap()).collect();
    assert_eq!(
        what,
        [
            "text",
            "text",
            "text",
            "tool call f",
            "reasoning in reasoning_content"
        ],
        "{wrong:?}"
    );
}

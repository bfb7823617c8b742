//! A scripted provider behind the [`Exchange`] seam, for in-process tests of routing: each
//! model (by the id it is sent as) answers from its own queue of [`Reply`]s, in order, and
//! every request it was sent is kept. No socket, no thread of its own: the failover loop,
//! races and fusion run exactly as in a server, against answers a test chose.

use std::collections::{HashMap, VecDeque};
use std::io::{self, Read};

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::providers::exchange::{
    Exchange, ExchangeTimeouts, Incoming, Outgoing, TransportFailure,
};

/// One scripted answer.
#[derive(Debug, Clone)]
pub(crate) enum Reply {
    /// A whole chat answer whose text is this.
    Text(&'static str),
    /// A status with a JSON body (`{"error": {"message": ...}}`) and headers.
    Status(u16, &'static str, Vec<(&'static str, &'static str)>),
    /// HTTP 200 whose body is this JSON (an `error` object, `choices: []`, ...).
    Json(Value),
    /// An SSE stream of these `data:` payloads, `[DONE]` after them.
    Sse(Vec<String>),
    /// No answer at all: the connection failed.
    Transport(TransportFailure),
    /// This reply after a wait (cut short, as a connection error, when the client is shut
    /// down: a race's loser).
    After(Duration, Box<Reply>),
}

impl Reply {
    /// A stream of `pieces` of text, then a stop.
    pub(crate) fn stream(pieces: &[&str]) -> Reply {
        let mut frames: Vec<String> = pieces
            .iter()
            .map(|p| json!({"choices": [{"index": 0, "delta": {"content": p}}]}).to_string())
            .collect();
        frames.push(
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}).to_string(),
        );
        Reply::Sse(frames)
    }

    pub(crate) fn after(ms: u64, then: Reply) -> Reply {
        Reply::After(Duration::from_millis(ms), Box::new(then))
    }
}

/// A whole chat completion with `text` as its answer.
pub(crate) fn completion(text: &str) -> Value {
    json!({"id": "x", "object": "chat.completion", "model": "m",
           "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                        "finish_reason": "stop"}],
           "usage": {"prompt_tokens": 10, "completion_tokens": 2}})
}

/// What a model was sent.
#[derive(Debug, Clone)]
pub(crate) struct Sent {
    pub model: String,
    pub body: Value,
    pub api_key: Option<String>,
}

#[derive(Default)]
struct Book {
    replies: HashMap<String, VecDeque<Reply>>,
    sent: Vec<Sent>,
    /// Models whose answer was cut short by their client's shutdown.
    cut: Vec<String>,
}

/// The script: what each model answers, and what it was sent. Cheap to clone: clones share
/// one script.
#[derive(Clone, Default)]
pub(crate) struct Script {
    book: Arc<Mutex<Book>>,
}

impl Script {
    /// `model` answers its next requests with `replies`, in order; once they are used up it
    /// answers "ok".
    pub(crate) fn on(&self, model: &str, replies: impl IntoIterator<Item = Reply>) -> &Self {
        let mut book = self.book.lock().unwrap();
        book.replies
            .entry(model.to_string())
            .or_default()
            .extend(replies);
        self
    }

    /// Every request sent so far, in order.
    pub(crate) fn sent(&self) -> Vec<Sent> {
        self.book.lock().unwrap().sent.clone()
    }

    /// The models sent a request so far, in order.
    pub(crate) fn models_sent(&self) -> Vec<String> {
        self.sent().into_iter().map(|s| s.model).collect()
    }

    /// The models whose answer was cut short by a shutdown (a race's losers), in order.
    pub(crate) fn cut(&self) -> Vec<String> {
        self.book.lock().unwrap().cut.clone()
    }

    /// A client on this script, as the router holds one.
    pub(crate) fn client(&self) -> Box<dyn Exchange> {
        Box::new(Client {
            script: self.clone(),
            shut: Arc::new(AtomicBool::new(false)),
        })
    }

    fn next(&self, out: &Outgoing<'_>) -> (String, Reply) {
        let body: Value = serde_json::from_slice(&out.body).unwrap_or(Value::Null);
        let model = body["model"].as_str().unwrap_or_default().to_string();
        let mut book = self.book.lock().unwrap();
        book.sent.push(Sent {
            model: model.clone(),
            body,
            api_key: out.api_key.map(str::to_string),
        });
        let reply = book
            .replies
            .get_mut(&model)
            .and_then(VecDeque::pop_front)
            .unwrap_or(Reply::Text("ok"));
        (model, reply)
    }
}

/// One client: its own shutdown switch, the script shared.
struct Client {
    script: Script,
    shut: Arc<AtomicBool>,
}

impl Exchange for Client {
    fn send(
        &self,
        out: Outgoing<'_>,
        t: ExchangeTimeouts,
    ) -> Result<Incoming, (TransportFailure, String)> {
        let (model, mut reply) = self.script.next(&out);
        let started = Instant::now();
        let limit = t.per_call.or(t.head).unwrap_or(Duration::from_secs(30));
        while let Reply::After(wait, then) = reply {
            while started.elapsed() < wait {
                if self.shut.load(Ordering::SeqCst) {
                    self.script.book.lock().unwrap().cut.push(model);
                    return Err((TransportFailure::Connection, "connection shut down".into()));
                }
                if started.elapsed() >= limit {
                    return Err((TransportFailure::Timeout, "timed out".into()));
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            reply = *then;
        }
        let (status, headers, content_type, body) = match reply {
            Reply::Text(text) => (
                200,
                Vec::new(),
                "application/json",
                vec![completion(text).to_string()],
            ),
            Reply::Json(v) => (200, Vec::new(), "application/json", vec![v.to_string()]),
            Reply::Status(status, message, headers) => {
                let body = json!({"error": {"message": message}}).to_string();
                (status, headers, "application/json", vec![body])
            }
            Reply::Sse(frames) => {
                // One event a read, as they come off a network.
                let mut body: Vec<String> =
                    frames.iter().map(|f| format!("data: {f}\n\n")).collect();
                body.push("data: [DONE]\n\n".to_string());
                (200, Vec::new(), "text/event-stream", body)
            }
            Reply::Transport(t) => return Err((t, "scripted transport failure".into())),
            Reply::After(..) => unreachable!("waited out above"),
        };
        let header = |name: &str| {
            headers
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.to_string())
        };
        Ok(Incoming {
            status,
            content_type: Some(content_type.to_string()),
            retry_after: header("retry-after"),
            resets: Vec::new(),
            rate: crate::providers::quota::read_headers(
                headers.iter().map(|(k, v)| (*k, *v)),
                crate::time::now_ms(),
            ),
            body: Box::new(Pieces(body.into_iter().map(String::into_bytes).collect())),
        })
    }

    fn sibling(&self) -> Box<dyn Exchange> {
        self.script.client()
    }

    fn shutdown(&self) {
        self.shut.store(true, Ordering::SeqCst);
    }
}

/// A body read from memory, at most one piece a read.
struct Pieces(VecDeque<Vec<u8>>);

impl Read for Pieces {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let Some(piece) = self.0.front_mut() else {
            return Ok(0);
        };
        let n = piece.len().min(buf.len());
        buf[..n].copy_from_slice(&piece[..n]);
        piece.drain(..n);
        if piece.is_empty() {
            self.0.pop_front();
        }
        Ok(n)
    }
}

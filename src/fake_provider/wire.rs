//! How the fake provider writes an answer: a fixed body in one write, a chunked SSE stream
//! frame by frame, the chat completion and chunk shapes, and the plain `ok` answer (whole,
//! or streamed word by word) that many behaviours give. Every answer goes out through
//! here; which answer a request gets is `respond`'s.

use std::io::{self, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::{json, Value};

use super::behavior::CacheStyle;

/// Writes the head and (for fixed bodies) the body in one write: a split write meets
/// delayed ACKs. Returns whether the connection may be kept.
pub(super) fn send_fixed(
    out: &mut TcpStream,
    status: u16,
    content_type: &str,
    extra: &[(&str, String)],
    body: &[u8],
) -> io::Result<bool> {
    let mut headers = vec![("content-type".to_string(), content_type.to_string())];
    headers.extend(extra.iter().map(|(k, v)| (k.to_string(), v.clone())));
    let mut msg = crate::edge::http::head(status, &headers, Some(body.len()), true);
    msg.extend_from_slice(body);
    out.write_all(&msg)?;
    Ok(true)
}

/// A chunked SSE response, written frame by frame.
pub(super) struct SseWriter<'a> {
    out: &'a mut TcpStream,
    pending: Vec<u8>,
}

impl<'a> SseWriter<'a> {
    pub(super) fn start(out: &'a mut TcpStream) -> Self {
        SseWriter::start_with(out, &[])
    }

    /// A stream whose head carries `extra` headers too.
    pub(super) fn start_with(out: &'a mut TcpStream, extra: &[(&str, String)]) -> Self {
        let mut headers = vec![
            ("content-type".to_string(), "text/event-stream".to_string()),
            ("cache-control".to_string(), "no-cache".to_string()),
        ];
        headers.extend(extra.iter().map(|(k, v)| (k.to_string(), v.clone())));
        SseWriter {
            out,
            pending: crate::edge::http::head(200, &headers, None, true),
        }
    }

    pub(super) fn raw(&mut self, text: &str) -> io::Result<()> {
        crate::edge::http::chunk(text.as_bytes(), &mut self.pending);
        self.flush()
    }

    pub(super) fn data(&mut self, v: &Value) -> io::Result<()> {
        self.raw(&format!("data: {v}\n\n"))
    }

    pub(super) fn flush(&mut self) -> io::Result<()> {
        let bytes = std::mem::take(&mut self.pending);
        self.out.write_all(&bytes)
    }

    /// Ends the body without `[DONE]`.
    pub(super) fn end_body(mut self) -> io::Result<bool> {
        self.pending
            .extend_from_slice(crate::edge::http::LAST_CHUNK);
        self.flush()?;
        Ok(true)
    }

    pub(super) fn done(mut self) -> io::Result<bool> {
        self.raw("data: [DONE]\n\n")?;
        self.pending
            .extend_from_slice(crate::edge::http::LAST_CHUNK);
        self.flush()?;
        Ok(true)
    }
}

/// One chunk of a streamed answer of one choice.
pub(super) fn chunk(id: &str, model: &str, delta: Value, finish: Option<&str>) -> Value {
    json!({"id": id, "object": "chat.completion.chunk", "created": 1_700_000_000u64, "model": model,
           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
}

/// A complete chat answer of one choice.
pub(super) fn completion(
    out: &mut TcpStream,
    id: &str,
    model: &str,
    message: Value,
    finish: &str,
) -> io::Result<bool> {
    let b = json!({"id": id, "object": "chat.completion", "model": model,
                   "choices": [{"index": 0, "message": message, "finish_reason": finish}]});
    send_fixed(out, 200, "application/json", &[], b.to_string().as_bytes())
}

/// A stream of one choice: `deltas` in order (the first also says `role: assistant`), then
/// a chunk with `finish` and `[DONE]`.
pub(super) fn stream_deltas(
    out: &mut TcpStream,
    id: &str,
    model: &str,
    deltas: impl IntoIterator<Item = Value>,
    finish: &str,
) -> io::Result<bool> {
    let mut w = SseWriter::start(out);
    for (n, mut delta) in deltas.into_iter().enumerate() {
        if n == 0 {
            delta["role"] = json!("assistant");
        }
        w.data(&chunk(id, model, delta, None))?;
    }
    w.data(&chunk(id, model, json!({}), Some(finish)))?;
    w.done()
}

/// `text` as content deltas of `n` characters each, so that tags and words are cut anywhere.
pub(super) fn content_pieces(text: &str, n: usize) -> Vec<Value> {
    let chars: Vec<char> = text.chars().collect();
    chars
        .chunks(n)
        .map(|piece| json!({"content": piece.iter().collect::<String>()}))
        .collect()
}

pub(super) fn ok_answer(
    out: &mut TcpStream,
    id: &str,
    model: &str,
    answer: &str,
    stream: bool,
    usage: bool,
    pause: Duration,
) -> io::Result<bool> {
    let said = Said {
        id,
        model,
        answer,
        stream,
        usage,
        cached: None,
    };
    ok_answer_with(out, &said, pause, &[])
}

/// What an `ok` answer says, and how.
#[derive(Clone, Copy)]
pub(super) struct Said<'a> {
    pub id: &'a str,
    pub model: &'a str,
    pub answer: &'a str,
    pub stream: bool,
    pub usage: bool,
    /// Usage says the provider's cache served most of the prompt (a usage chunk is sent
    /// whether asked or not, as DeepSeek does).
    pub cached: Option<CacheStyle>,
}

/// The usage of an `ok` answer of `words` words.
fn usage_of(words: u64, cached: Option<CacheStyle>) -> Value {
    let prompt = if cached.is_some() {
        CacheStyle::PROMPT
    } else {
        12
    };
    let mut u = json!({"prompt_tokens": prompt, "completion_tokens": words, "total_tokens": prompt + words});
    match cached {
        Some(CacheStyle::OpenAi) => {
            u["prompt_tokens_details"] = json!({"cached_tokens": CacheStyle::CACHED});
        }
        Some(CacheStyle::DeepSeek) => {
            u["prompt_cache_hit_tokens"] = json!(CacheStyle::CACHED);
            u["prompt_cache_miss_tokens"] = json!(CacheStyle::PROMPT - CacheStyle::CACHED);
        }
        None => {}
    }
    u
}

/// An `ok` answer whose head carries `extra` headers too.
pub(super) fn ok_answer_with(
    out: &mut TcpStream,
    said: &Said<'_>,
    pause: Duration,
    extra: &[(&str, String)],
) -> io::Result<bool> {
    let Said {
        id,
        model,
        answer,
        stream,
        usage,
        cached,
    } = *said;
    if stream {
        return stream_words(SseWriter::start_with(out, extra), said, pause);
    }
    let words = answer.split_whitespace().count() as u64;
    let b = json!({"id": id, "object": "chat.completion", "created": 1_700_000_000u64, "model": model,
                   "choices": [{"index": 0, "message": {"role": "assistant", "content": answer}, "finish_reason": "stop"}],
                   "usage": usage_of(words, cached)});
    let _ = usage;
    send_fixed(
        out,
        200,
        "application/json",
        extra,
        b.to_string().as_bytes(),
    )
}

/// An `ok` answer as a stream: a role delta, the words one by one (`pause` apart), the
/// finish, and a usage chunk when asked.
pub(super) fn stream_words(
    mut w: SseWriter<'_>,
    said: &Said<'_>,
    pause: Duration,
) -> io::Result<bool> {
    let Said {
        id,
        model,
        answer,
        usage,
        cached,
        ..
    } = *said;
    w.data(&chunk(
        id,
        model,
        json!({"role": "assistant", "content": ""}),
        None,
    ))?;
    let words: Vec<&str> = answer.split_inclusive(' ').collect();
    for word in &words {
        w.data(&chunk(id, model, json!({"content": word}), None))?;
        if !pause.is_zero() {
            std::thread::sleep(pause);
        }
    }
    w.data(&chunk(id, model, json!({}), Some("stop")))?;
    if usage || cached.is_some() {
        let n = words.len() as u64;
        w.data(
            &json!({"id": id, "object": "chat.completion.chunk", "model": model, "choices": [],
                       "usage": usage_of(n, cached)}),
        )?;
    }
    w.done()
}

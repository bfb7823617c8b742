//! Streams that try how fcm reads a provider: writes cut at awkward points so that each
//! arrives as its own read, one event longer than fcm holds at once, and a whole answer
//! whose connection drops before its body ends.

use std::io::{self, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::json;

use super::wire::{chunk, SseWriter};

/// Between the writes of a stream meant to arrive in separate reads.
const WRITE_PAUSE: Duration = Duration::from_millis(30);

/// See [`Behavior::SseBlankLinesThenSplit`](super::behavior::Behavior::SseBlankLinesThenSplit).
pub(super) fn blank_lines_then_split(
    out: &mut TcpStream,
    id: &str,
    model: &str,
) -> io::Result<bool> {
    let first = chunk(
        id,
        model,
        json!({"role": "assistant", "content": "Hello "}),
        None,
    );
    let second = chunk(
        id,
        model,
        json!({"content": format!("from {model}.")}),
        None,
    );
    let last = chunk(id, model, json!({}), Some("stop"));
    let writes = [
        "\r\n\r\n\n\n".to_string(),
        "d".to_string(),
        format!("ata: {first}\n"),
        "\nda".to_string(),
        format!("ta: {second}\r\n\r"),
        format!("\ndata: {last}\n"),
        "\n".to_string(),
    ];
    let mut w = SseWriter::start(out);
    for piece in &writes {
        w.raw(piece)?;
        std::thread::sleep(WRITE_PAUSE);
    }
    w.done()
}

/// See [`Behavior::SseHugeEvent`](super::behavior::Behavior::SseHugeEvent).
pub(super) fn huge_event(
    out: &mut TcpStream,
    id: &str,
    model: &str,
    len: usize,
) -> io::Result<bool> {
    let mut w = SseWriter::start(out);
    w.data(&chunk(
        id,
        model,
        json!({"role": "assistant", "content": "Hello "}),
        None,
    ))?;
    let event = format!(
        "data: {}\n\n",
        chunk(id, model, json!({"content": huge_text(len)}), None)
    );
    let mut rest = event.as_str();
    while !rest.is_empty() {
        let mut n = rest.len().min(64 * 1024);
        while !rest.is_char_boundary(n) {
            n -= 1;
        }
        let (piece, after) = rest.split_at(n);
        w.raw(piece)?;
        rest = after;
    }
    w.data(&chunk(id, model, json!({"content": " and goodbye."}), None))?;
    w.data(&chunk(id, model, json!({}), Some("stop")))?;
    w.done()
}

/// The long text of `sse_huge_event`: `x`s with a `<` every 1000 characters, so that a
/// proxy looking for tags or text calls meets it in every piece.
pub fn huge_text(len: usize) -> String {
    (0..len)
        .map(|i| if i % 1000 == 999 { '<' } else { 'x' })
        .collect()
}

/// See [`Behavior::FinishThenDrop`](super::behavior::Behavior::FinishThenDrop).
pub(super) fn finish_then_drop(
    out: &mut TcpStream,
    id: &str,
    model: &str,
    stream: bool,
    silence: Option<Duration>,
) -> io::Result<bool> {
    let text = format!("Hello from {model}.");
    if !stream {
        let body = json!({"id": id, "object": "chat.completion", "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]})
        .to_string();
        // The head promises more than comes: the connection closes before the body's end.
        let headers = [("content-type".to_string(), "application/json".to_string())];
        let mut msg = crate::edge::http::head(200, &headers, Some(body.len() + 64), true);
        msg.extend_from_slice(body.as_bytes());
        out.write_all(&msg)?;
        return Ok(false);
    }
    let mut w = SseWriter::start(out);
    w.data(&chunk(
        id,
        model,
        json!({"role": "assistant", "content": "Hello "}),
        None,
    ))?;
    w.data(&chunk(
        id,
        model,
        json!({"content": format!("from {model}.")}),
        None,
    ))?;
    w.data(&chunk(id, model, json!({}), Some("stop")))?;
    if let Some(d) = silence {
        std::thread::sleep(d);
    }
    // The usage chunk is cut, and the chunked body never ends.
    w.raw("data: {\"id\":\"usage\",\"choices\":[],\"usage\":{\"prompt_tok")?;
    Ok(false)
}

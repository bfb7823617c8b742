#!/usr/bin/env python3
"""A minimal OpenAI-compatible upstream: one thread, asyncio, standard library only.

It is the baseline for scripts/bench-proxy.sh: what a small single-threaded server spends
to answer a chat completion, to set fcm's proxy CPU per request against. HTTP/1.1 is parsed
by hand (request line, headers, Content-Length bodies, keep-alive); nothing else is spoken.

  POST .../chat/completions          -> a fixed chat.completion JSON
  ... with "stream": true            -> text/event-stream, chunked: role, content, finish, [DONE]
  ... with model "long_stream:MS"    -> a stream sending a word every 100 ms for MS milliseconds
  GET  .../models                    -> a one-model list

Prints its base URL (http://127.0.0.1:PORT/v1) on the first stdout line.
Usage: asyncio-upstream.py [--port N]   (default 0: any free port)
"""
import asyncio
import json
import sys

MAX_BODY = 64 * 1024 * 1024
MAX_HEAD = 64 * 1024

ANSWER = json.dumps({
    "id": "chatcmpl-asyncio", "object": "chat.completion", "created": 1700000000, "model": "ok",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "42"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11},
}, separators=(",", ":")).encode()


def chunk(delta, finish=None):
    """One SSE frame as an HTTP chunk (hex size, CRLF, data, CRLF)."""
    event = {"id": "chatcmpl-asyncio", "object": "chat.completion.chunk", "created": 1700000000,
             "model": "ok", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return frame(b"data: " + json.dumps(event, separators=(",", ":")).encode() + b"\n\n")


def frame(data):
    return b"%x\r\n%s\r\n" % (len(data), data)


ROLE = chunk({"role": "assistant", "content": ""})
CONTENT = chunk({"content": "42"})
WORD = chunk({"content": "word "})
FINISH = chunk({}, "stop")
DONE = frame(b"data: [DONE]\n\n") + b"0\r\n\r\n"  # the last SSE frame, then the last chunk
MODELS = b'{"object":"list","data":[{"id":"ok","object":"model"}]}'


def head(status, content_type, length=None):
    """Status line and headers; a fixed length, or chunked when length is None."""
    framing = b"content-length: %d" % length if length is not None else b"transfer-encoding: chunked"
    return (b"HTTP/1.1 %d %s\r\ncontent-type: %s\r\n%s\r\n\r\n"
            % (status, b"OK" if status == 200 else b"Error", content_type, framing))


def fixed(status, body, content_type=b"application/json"):
    return head(status, content_type, len(body)) + body


async def handle(reader, writer):
    try:
        while True:  # one request per pass; the loop ends when the client closes
            try:
                raw = await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                return
            lines = raw.decode("latin-1").split("\r\n")
            method, target, version = lines[0].split(" ", 2)
            headers = {}
            for line in lines[1:]:
                if line:
                    name, _, value = line.partition(":")
                    headers[name.strip().lower()] = value.strip()
            length = int(headers.get("content-length", "0"))
            if length > MAX_BODY or "chunked" in headers.get("transfer-encoding", ""):
                writer.write(fixed(413, b'{"error":{"message":"unsupported body"}}'))
                return
            body = await reader.readexactly(length) if length else b""
            # HTTP/1.1 keeps the connection unless told otherwise; HTTP/1.0 closes it.
            conn = headers.get("connection", "").lower()
            keep = conn != "close" if version == "HTTP/1.1" else conn == "keep-alive"

            if method == "POST" and target.endswith("/chat/completions"):
                try:
                    req = json.loads(body)
                except ValueError:
                    req = None
                if not isinstance(req, dict):
                    writer.write(fixed(400, b'{"error":{"message":"invalid JSON"}}'))
                elif req.get("stream") is True:
                    model = str(req.get("model", ""))
                    writer.write(head(200, b"text/event-stream") + ROLE)
                    if model.startswith("long_stream:"):  # many open streams, for RSS figures
                        for _ in range(int(model.split(":", 1)[1]) // 100):
                            await asyncio.sleep(0.1)
                            writer.write(WORD)
                            await writer.drain()
                    writer.write(CONTENT)
                    writer.write(FINISH + DONE)
                else:
                    writer.write(fixed(200, ANSWER))
            elif method == "GET" and target.endswith("/models"):
                writer.write(fixed(200, MODELS))
            else:
                writer.write(fixed(404, b'{"error":{"message":"no such route"}}'))
            await writer.drain()
            if not keep:
                return
    except (ConnectionError, ValueError):
        return  # a reset peer or a malformed request: drop the connection
    finally:
        writer.close()


async def main():
    port = int(sys.argv[sys.argv.index("--port") + 1]) if "--port" in sys.argv else 0
    # asyncio sets TCP_NODELAY on accepted TCP sockets, so small writes leave at once.
    server = await asyncio.start_server(handle, "127.0.0.1", port, limit=MAX_HEAD, backlog=1024)
    print(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass

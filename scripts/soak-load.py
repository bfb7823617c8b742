#!/usr/bin/env python3
"""The client side of scripts/soak.sh: many clients and long streams against `fcm serve`,
every answer checked, some requests abandoned half way.

Usage: soak-load.py HOST:PORT SECONDS CLIENTS STREAMS PINNED_MODELS...

CLIENTS threads send a random mix of requests (chat, Anthropic messages, Responses; stream
or not; model `fcm` or one of PINNED_MODELS, pinned) back to back; STREAMS threads each keep
one long stream open, over and over. A few of both close their connection in the middle of
an answer. Every answer that is read to its end is checked:
  - the HTTP framing is whole (a cut chunked body or short Content-Length is an error);
  - a 200 is a whole answer in the client's protocol: JSON that parses, or a stream whose
    every event parses and which ends the way its protocol ends;
  - an error is the protocol's JSON error envelope;
  - the answer comes from one model: every "from <model>" in its text names the model the
    `x-fcm-v2-model` header names.
Prints one JSON object of counts and the first problems found; exits 1 if any.
"""

import http.client
import json
import random
import re
import socket
import sys
import threading
import time

FROM = re.compile(r"from ([A-Za-z0-9_:#.\-]+?)\.?(?:$|\s|\")")
MESSAGES = [{"role": "user", "content": "What is 17 + 25?"}]


SCHEMA = {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}
OFFERED = {"Bash"}
CHECK_CALLS = threading.local()


def body_for(protocol, model, stream, tools):
    if protocol == "chat":
        body = {"model": model, "stream": stream, "messages": MESSAGES}
        if tools:
            body["tools"] = [{"type": "function", "function": {"name": "Bash", "parameters": SCHEMA}}]
        return "/v1/chat/completions", body
    if protocol == "messages":
        body = {"model": model, "stream": stream, "max_tokens": 256, "messages": MESSAGES}
        if tools:
            body["tools"] = [{"name": "Bash", "description": "Run a command", "input_schema": SCHEMA}]
        return "/v1/messages", body
    return "/v1/responses", {"model": model, "stream": stream, "input": "What is 17 + 25?"}


def check_call(name, arguments):
    """A tool call the client can run: an offered tool, arguments a JSON object. (Calls in
    answers to requests that offered no tools are not judged by fcm, nor here.)"""
    if not CHECK_CALLS.on:
        return
    if name not in OFFERED:
        raise ValueError(f"a call to {name!r}, which was not offered")
    args = json.loads(arguments) if isinstance(arguments, str) else arguments
    if not isinstance(args, dict):
        raise ValueError(f"tool arguments are not an object: {arguments!r}")


def sse_events(raw):
    """(event name, data) pairs of a server-sent event stream."""
    events = []
    for block in raw.replace("\r\n", "\n").split("\n\n"):
        name, data = None, []
        for line in block.split("\n"):
            if line.startswith(":") or not line:
                continue
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "event":
                name = value
            elif field == "data":
                data.append(value)
        if data:
            events.append((name, "\n".join(data)))
    return events


def text_of_answer(protocol, answer):
    if protocol == "chat":
        choices = answer.get("choices") or []
        for c in choices:
            for call in (c.get("message") or {}).get("tool_calls") or []:
                check_call(call["function"]["name"], call["function"]["arguments"])
        return "".join((c.get("message") or {}).get("content") or "" for c in choices)
    if protocol == "messages":
        for b in answer.get("content", []):
            if b.get("type") == "tool_use":
                check_call(b["name"], b["input"])
        return "".join(b.get("text", "") for b in answer.get("content", []) if b.get("type") == "text")
    out = []
    for item in answer.get("output", []):
        for part in item.get("content", []) or []:
            if part.get("type") == "output_text":
                out.append(part.get("text", ""))
    return "".join(out)


def check_stream(protocol, raw):
    """The streamed text, or raises ValueError saying what is wrong."""
    events = sse_events(raw)
    if not events:
        raise ValueError("a 200 stream with no events")
    text = []
    if protocol == "chat":
        if events[-1][1] != "[DONE]":
            raise ValueError("chat stream does not end with [DONE]")
        calls = {}
        for _, data in events[:-1]:
            chunk = json.loads(data)
            for c in chunk.get("choices", []):
                delta = c.get("delta") or {}
                text.append(delta.get("content") or "")
                for call in delta.get("tool_calls") or []:
                    slot = calls.setdefault(call["index"], {"name": "", "arguments": ""})
                    f = call.get("function") or {}
                    slot["name"] += f.get("name") or ""
                    slot["arguments"] += f.get("arguments") or ""
        for call in calls.values():
            check_call(call["name"], call["arguments"])
        return "".join(text)
    if protocol == "messages":
        # A stream that fails after its content ends with an `error` event.
        if events[-1][0] not in ("message_stop", "error") or events[0][0] != "message_start":
            raise ValueError(f"messages stream runs {events[0][0]} .. {events[-1][0]}")
        blocks = {}
        for name, data in events:
            e = json.loads(data)
            if name == "content_block_start" and e["content_block"]["type"] == "tool_use":
                blocks[e["index"]] = [e["content_block"]["name"], ""]
            if name == "content_block_delta" and e["delta"].get("type") == "text_delta":
                text.append(e["delta"]["text"])
            if name == "content_block_delta" and e["delta"].get("type") == "input_json_delta":
                blocks[e["index"]][1] += e["delta"]["partial_json"]
        if events[-1][0] == "message_stop":
            for tool, arguments in blocks.values():
                check_call(tool, arguments or "{}")
        return "".join(text)
    names = [json.loads(d).get("type") for _, d in events]
    if names[0] != "response.created" or names[-1] not in (
        "response.completed", "response.incomplete", "response.failed"):
        raise ValueError(f"responses stream runs {names[0]} .. {names[-1]}")
    for _, data in events:
        e = json.loads(data)
        if e.get("type") == "response.output_text.delta":
            text.append(e.get("delta", ""))
    return "".join(text)


def check_error(body):
    e = json.loads(body)
    if not isinstance(e, dict) or ("error" not in e and e.get("type") != "error"):
        raise ValueError("an error answer without an error envelope")


class Tally:
    def __init__(self):
        self.lock = threading.Lock()
        self.counts = {}
        self.problems = []

    def add(self, key, problem=None):
        with self.lock:
            self.counts[key] = self.counts.get(key, 0) + 1
            if problem:
                self.counts["problems"] = self.counts.get("problems", 0) + 1
                if len(self.problems) < 20:
                    self.problems.append(problem)


def one(address, protocol, model, stream, abort, tally, tools=False, timeout=120):
    host, port = address.rsplit(":", 1)
    path, body = body_for(protocol, model, stream, tools)
    conn = http.client.HTTPConnection(host, int(port), timeout=timeout)
    what = f"{protocol} {model} stream={stream} tools={tools}"
    CHECK_CALLS.on = tools
    try:
        conn.request("POST", path, json.dumps(body), {"content-type": "application/json"})
        resp = conn.getresponse()
        if abort:
            resp.read(random.randint(1, 200))
            # A reset, not a polite close: the way a killed agent leaves.
            conn.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            conn.close()
            tally.add("aborted")
            return
        raw = resp.read().decode("utf-8")
        served = resp.getheader("x-fcm-v2-model") or ""
        if resp.status != 200:
            check_error(raw)
            tally.add(f"status {resp.status}")
            return
        if stream:
            text = check_stream(protocol, raw)
        else:
            text = text_of_answer(protocol, json.loads(raw))
        named = {m for m in FROM.findall(text)}
        model_id = served.split("/", 1)[-1]
        # The thinking behaviours all answer "Hello from thinks."
        expected = {"thinks"} if model_id.startswith("thinks") else {model_id}
        if named and named != expected:
            tally.add("mixed", f"{what}: served by {served!r} but text names {sorted(named)}")
            return
        tally.add("streams 200" if stream else "answers 200")
    except (ValueError, KeyError, TypeError, json.JSONDecodeError) as e:
        tally.add("bad", f"{what}: {e}")
    except (http.client.HTTPException, OSError) as e:
        tally.add("transport", f"{what}: {type(e).__name__}: {e}")
    finally:
        conn.close()


def main():
    address, seconds, clients, streams = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    pinned = sys.argv[5:]
    deadline = time.monotonic() + seconds
    tally = Tally()

    def client(seed):
        rng = random.Random(seed)
        while time.monotonic() < deadline:
            protocol = rng.choice(["chat", "chat", "messages", "responses"])
            model = "fcm" if rng.random() < 0.6 else "fcm:" + rng.choice(pinned)
            stream = rng.random() < 0.5
            tools = protocol != "responses" and rng.random() < 0.25
            one(address, protocol, model, stream, stream and rng.random() < 0.05, tally, tools)

    def streamer(seed):
        rng = random.Random(seed)
        while time.monotonic() < deadline:
            protocol = rng.choice(["chat", "messages", "responses"])
            one(address, protocol, "fcm:good/long_stream:3000", True, rng.random() < 0.1, tally)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    threads += [threading.Thread(target=streamer, args=(1000 + i,)) for i in range(streams)]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - started
    done = sum(v for k, v in tally.counts.items() if k != "problems")
    print(json.dumps({"seconds": round(elapsed, 1), "requests": done,
                      "counts": dict(sorted(tally.counts.items())), "problems": tally.problems}))
    sys.exit(1 if tally.problems else 0)


if __name__ == "__main__":
    main()

"""The agents of fcm's day benchmark: AGENTS coding agents working at once for the day, a
third each shaped as Claude Code, Codex and Cline, all asking fcm for model `fcm`.

    python3 agents.py --proxy HOST:PORT --control URL --agents 8 --minutes 10 --seed 1 --out turns.jsonl

Each agent runs conversations back to back (see conversation.py), thinks 0.5-3 s between
turns, and retries a failed turn after 2, 4 and 8 s as the tools do, giving the conversation
up after that. Every request it sends is one JSON line in --out: status, whether it was
served (200 and a complete stream with content, no error event), time to the answer's first
byte, fcm's x-fcm-v2-* headers, and for a served turn the strongest tier that had room in
the world right after. Conversations and the day itself get a line each too.
"""

import argparse
import http.client
import json
import random
import threading
import time
import urllib.request

import claude_code
import cline
import codex
import texts
from conversation import Conversation

STYLES = [claude_code, codex, cline]
OPENING_TOKENS = 10000      # the first request of a conversation, characters / 4
THINK_SECONDS = (0.5, 3.0)
RETRY_BACKOFF_SECONDS = (2, 4, 8)
CLIENT_TIMEOUT_SECONDS = 300
START_SPREAD_SECONDS = 10   # agents start within this, not all in the same instant
FCM_HEADERS = {"model": "x-fcm-v2-model", "affinity": "x-fcm-v2-affinity",
               "attempts": "x-fcm-v2-attempts", "decision": "x-fcm-v2-decision"}


class Recorder:
    """One JSON line per request, conversation and day, written as they end."""

    def __init__(self, path):
        self.file = open(path, "a", buffering=1)
        self.lock = threading.Lock()

    def write(self, record):
        with self.lock:
            self.file.write(json.dumps(record) + "\n")


def instructions_for(style, rng):
    """A system prompt sized so that a conversation's first request is OPENING_TOKENS."""
    bare = json.dumps(style.body(Conversation(random.Random(0), "0.0"), ""))
    return texts.instructions(rng, max(1000, OPENING_TOKENS * 4 - len(bare)))


class Agent:
    def __init__(self, index, style, args, recorder, deadline):
        self.index = index
        self.style = style
        self.args = args
        self.recorder = recorder
        self.deadline = deadline
        self.rng = random.Random(f"agent:{args.seed}:{index}")
        self.instructions = instructions_for(style, self.rng)
        self.connection = None

    def run(self):
        time.sleep(self.rng.uniform(0, START_SPREAD_SECONDS))
        number = 0
        while time.time() < self.deadline:
            number += 1
            self.converse(Conversation(self.rng, f"{self.index}.{number}"))

    def converse(self, conversation):
        started, given_up = time.time(), False
        while not conversation.done() and time.time() < self.deadline:
            if not self.turn(conversation):
                given_up = True
                break
            time.sleep(min(self.rng.uniform(*THINK_SECONDS), max(0.0, self.deadline - time.time())))
        self.recorder.write({"kind": "conversation", "id": conversation.number, "agent": self.index,
                             "style": self.style.NAME, "start": started, "end": time.time(),
                             "turns": conversation.turns, "given_up": given_up})

    def turn(self, conversation):
        """One turn: its request, retried after a failure. True when it was served."""
        for attempt, backoff in enumerate((0,) + RETRY_BACKOFF_SECONDS, start=1):
            time.sleep(backoff)
            record, answer = self.send(conversation)
            record.update(conversation=conversation.number, turn=conversation.turns + 1, attempt=attempt)
            if record["served"]:
                record.update(self.room_now(record["prompt_tokens"]))
                self.recorder.write(record)
                conversation.add(answer, record["prompt_tokens"])
                return True
            self.recorder.write(record)
        return False

    def send(self, conversation):
        """Sends the conversation's next request; returns its record and the answer read."""
        payload = json.dumps(self.style.body(conversation, self.instructions)).encode()
        record = {"kind": "request", "agent": self.index, "style": self.style.NAME,
                  "prompt_tokens": len(payload) // 4, "at": time.time(), "status": 0,
                  "served": False, "ttfb_ms": None, "error": None}
        started = time.monotonic()
        first_byte = []
        answer = None
        try:
            response = self.post(self.style.PATH, self.style.headers(conversation), payload)
            record["status"] = response.status
            record.update({k: response.getheader(h) for k, h in FCM_HEADERS.items()})
            if response.status == 200:
                answer = self.style.read(response, lambda: first_byte.append(time.monotonic()))
                record["served"] = answer.served
                record["error"] = answer.error or (None if answer.served else "incomplete or empty stream")
            else:
                record["error"] = response.read().decode("utf-8", "replace")[:300]
            if response.will_close:
                self.disconnect()
        except (OSError, http.client.HTTPException) as error:
            record["error"] = f"{type(error).__name__}: {error}"
            self.disconnect()
        record["ms"] = round((time.monotonic() - started) * 1000)
        if first_byte:
            record["ttfb_ms"] = round((first_byte[0] - started) * 1000)
        record["end"] = time.time()
        return record, answer

    def post(self, path, headers, payload):
        """POSTs on the agent's kept-alive connection; a connection the server closed while
        idle is opened again once, as HTTP clients do, without counting as a failure."""
        for fresh in (self.connection is None, True):
            if self.connection is None:
                host, port = self.args.proxy.rsplit(":", 1)
                self.connection = http.client.HTTPConnection(host, int(port), timeout=CLIENT_TIMEOUT_SECONDS)
            try:
                self.connection.request("POST", path, payload, headers)
                return self.connection.getresponse()
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                self.disconnect()
                if fresh:
                    raise
        raise AssertionError("unreachable")

    def disconnect(self):
        if self.connection is not None:
            self.connection.close()
            self.connection = None

    def room_now(self, prompt_tokens):
        """The world's strongest tier with room for this prompt, right after the turn."""
        url = (f"{self.args.control}/state?tokens={prompt_tokens}"
               f"&max_tokens={self.style.MAX_TOKENS}")
        try:
            with urllib.request.urlopen(url, timeout=10) as r:
                state = json.load(r)
        except OSError:
            return {"strongest_with_room": None, "strong_with_room": None}
        return {"strongest_with_room": state["strongestWithRoom"],
                "strong_with_room": state["strongWithRoom"]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--proxy", required=True, help="fcm serve's host:port")
    parser.add_argument("--control", required=True, help="the world's control URL")
    parser.add_argument("--agents", type=int, default=8)
    parser.add_argument("--minutes", type=float, default=10)
    parser.add_argument("--seed", default="1")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    recorder = Recorder(args.out)
    start = time.time()
    deadline = start + args.minutes * 60
    agents = [Agent(i, STYLES[i % len(STYLES)], args, recorder, deadline) for i in range(args.agents)]
    threads = [threading.Thread(target=a.run, daemon=True) for a in agents]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    recorder.write({"kind": "day", "start": start, "end": time.time(), "agents": args.agents,
                    "minutes": args.minutes, "seed": args.seed})


if __name__ == "__main__":
    main()

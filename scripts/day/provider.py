"""One simulated provider on its own port: an OpenAI-compatible `POST .../chat/completions`
(stream and whole answers) and `GET .../models`. `answer` is the whole flow of a request, top
to bottom: key, model, paid-only, silent, limits, capacity, server errors, notice, and then a
real-looking completion at the model's pace. The handler around it reads requests, resets
the connection during an outage of the `reset` kind, and writes what the flow decided.
"""

import json
import random
import select
import socket
import struct
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import answers
import refusals
from faults import PAID_NOTICE, SERVER_ERROR_SHARE

SILENT_PATIENCE_SECONDS = 600  # a silent model waits at most this long for the client to go


@dataclass
class Request:
    provider: str
    path: str
    authorization: str
    body: dict

    @property
    def model(self):
        return self.body.get("model", "")

    @property
    def stream(self):
        return bool(self.body.get("stream"))

    @property
    def prompt_tokens(self):
        size = len(json.dumps(self.body.get("messages") or [])) + len(json.dumps(self.body.get("tools") or []))
        return size // 4

    @property
    def max_tokens(self):
        return int(self.body.get("max_completion_tokens") or self.body.get("max_tokens") or 0)


@dataclass
class Completion:
    reply: answers.Reply
    first_token_delay: float
    tokens_per_second: float
    headers: list
    outcome: str = "ok"


class Silent:
    outcome = "silent"


def answer(world, request, now):
    """What `request` gets from its provider at `now` (seconds into the day)."""
    provider = world.providers[request.provider]
    profile = world.profile(request.provider)
    key = f"{request.provider}/{request.model}"
    if provider.key_env and request.authorization != f"Bearer {world.keys[provider.key_env]}":
        return refusals.unauthorized()
    if key not in world.models or not world.path_fits(request.provider, request.path):
        return refusals.unknown_model(request.model)
    if request.model in profile.paid_only:
        return refusals.zai_paid_only()
    if key == world.plan.silent:
        return Silent()
    rng = random.Random(f"{world.seed}:{key}:{world.next_index(key)}")
    reply = answers.plan_reply(request.body, rng)
    reserved = request.max_tokens if profile.reserves_max_tokens else reply.tokens
    cost = {"requests": 1, "tokens": request.prompt_tokens + reserved}
    overrun = world.ledger.admit(request.provider, request.model, cost, now)
    headers = refusals.rate_headers(profile.style, world.ledger.figures(request.provider, request.model, now))
    if overrun is not None:
        refusal = refusals.refuse(profile.style, request.model, overrun)
        refusal.headers += [h for h in headers if h[0] not in dict(refusal.headers)]
        return refusal
    if rng.random() < profile.busy:
        return refusals.busy(profile.style, request.model)
    if rng.random() < SERVER_ERROR_SHARE:
        return refusals.server_error(rng)
    pace = world.plan.paces[key]
    if key == world.plan.paid:
        return Completion(answers.Reply(text=PAID_NOTICE), pace.first_token_delay(rng),
                          pace.tokens_per_second, headers, "notice")
    return Completion(reply, pace.first_token_delay(rng), pace.tokens_per_second, headers)


class ProviderServer(ThreadingHTTPServer):
    """One provider's listener; it knows its open connections so an outage can cut them."""
    daemon_threads = True
    block_on_close = False
    request_queue_size = 128  # a router opens many connections at once

    def __init__(self, address, world, provider_id):
        self.world = world
        self.provider_id = provider_id
        self.connections = set()
        super().__init__(address, ProviderHandler)

    def process_request(self, request, client_address):
        self.connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request):
        self.connections.discard(request)
        super().shutdown_request(request)

    def cut_connections(self):
        for connection in list(self.connections):
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class ProviderHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        world = self.server.world
        if not self.path.rstrip("/").endswith("/models"):
            return self._write_error(refusals.unknown_model(self.path))
        ids = [m.id for m in world.providers[self.server.provider_id].models]
        self._write_json(200, {"object": "list", "data": [{"id": i, "object": "model"} for i in ids]})

    def do_POST(self):
        world = self.server.world
        started = time.monotonic()
        now = world.clock()
        request = Request(self.server.provider_id, self.path, self.headers.get("Authorization", ""),
                          self._read_json())
        if world.plan.outage(request.provider, now):
            self._reset_connection()
            status, outcome = 0, "reset"
        elif not self.path.rstrip("/").endswith("/chat/completions"):
            status, outcome = self._deliver(refusals.unknown_model(self.path), request)
        else:
            status, outcome = self._deliver(answer(world, request, now), request)
        world.record(request.provider, request.model, status, outcome, request.prompt_tokens, started, now)

    # --- what the flow decided, on the wire ---

    def _deliver(self, decision, request):
        if isinstance(decision, refusals.ErrorAnswer):
            self._write_error(decision)
            return decision.status, decision.outcome
        if isinstance(decision, Silent):
            self._wait_for_client_to_leave()
            return 0, "silent"
        ident = f"chatcmpl-day{random.getrandbits(48):012x}"
        try:
            if request.stream:
                self._write_stream(decision, request, ident)
            else:
                self._write_whole(decision, request, ident)
        except OSError:
            self.close_connection = True
            cut = self.server.world.plan.outage(request.provider, self.server.world.clock())
            return 200, "cut" if cut else "client_gone"
        return 200, decision.outcome

    def _write_stream(self, completion, request, ident):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        for name, value in completion.headers:
            self.send_header(name, str(value))
        self.end_headers()
        self.close_connection = True
        self.wfile.write(answers.role_frame(request.model, ident))
        time.sleep(completion.first_token_delay)
        for frame, tokens in answers.stream_frames(completion.reply, request.model,
                                                    request.prompt_tokens, ident):
            self.wfile.write(frame)
            time.sleep(tokens / completion.tokens_per_second)

    def _write_whole(self, completion, request, ident):
        time.sleep(completion.first_token_delay + completion.reply.tokens / completion.tokens_per_second)
        body = answers.whole_body(completion.reply, request.model, request.prompt_tokens, ident)
        self._write_json(200, body, completion.headers)

    def _write_error(self, error):
        self._write_json(error.status, error.body, error.headers, error.content_type)

    def _write_json(self, status, body, headers=(), content_type="application/json"):
        if not isinstance(body, bytes):
            body = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers:
            self.send_header(name, str(value))
        self.end_headers()
        self.wfile.write(body)

    # --- the connection itself ---

    def _read_json(self):
        """The request's JSON object body ({} when it is not one)."""
        try:
            parsed = json.loads(self._read_body() or b"{}")
        except ValueError:
            return {}
        return parsed if isinstance(parsed, dict) else {}

    def _read_body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _wait_for_client_to_leave(self):
        """Accepts and never answers: returns once the client closes the connection."""
        self.close_connection = True
        deadline = time.monotonic() + SILENT_PATIENCE_SECONDS
        while time.monotonic() < deadline:
            readable, _, _ = select.select([self.connection], [], [], 1.0)
            if readable:
                try:
                    if not self.connection.recv(1024, socket.MSG_PEEK):
                        return
                    self.connection.recv(1024)
                except OSError:
                    return

    def _reset_connection(self):
        """Closes with a TCP reset (SO_LINGER 0), as a provider's load balancer may."""
        self.close_connection = True
        try:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
        except OSError:
            pass

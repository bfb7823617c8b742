"""The world's control port, for the agents and the report, never for fcm:

    GET /state[?tokens=N&max_tokens=M]  each model's tier and whether it has room NOW for a
                                        request of N prompt tokens (not over a limit or a
                                        grant, its provider not down, not the silent or the
                                        paid model), and the strongest tier with room among
                                        the models that take tools
    GET /log[?since=N]                  the upstream request log (JSONL) from line N
"""

import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from catalog import STRONG_TIERS, tier_rank


def state(world, tokens, max_tokens):
    now = world.clock()
    models = []
    for key, model in world.models.items():
        why = world.why_no_room(key, tokens, max_tokens, now)
        models.append({"model": key, "tier": model.tier, "tools": model.tools, "room": why is None,
                       "why": why})
    roomy = [m for m in models if m["room"] and m["tools"]]
    strongest = min((m["tier"] for m in roomy), key=tier_rank, default=None)
    return {"t": round(now, 3), "strongestWithRoom": strongest,
            "strongWithRoom": sum(m["tier"] in STRONG_TIERS for m in roomy), "models": models}


class ControlServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, address, world):
        self.world = world
        super().__init__(address, ControlHandler)


class ControlHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        url = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        if url.path == "/state":
            status, kind = 200, "application/json"
            body = json.dumps(state(self.server.world, int(query.get("tokens", 1)),
                                    int(query.get("max_tokens", 0)))).encode()
        elif url.path == "/log":
            status, kind = 200, "application/x-ndjson"
            with open(self.server.world.log.name) as f:
                body = "".join(f.readlines()[int(query.get("since", 0)):]).encode()
        else:
            status, kind, body = 404, "application/json", b'{"error":"not found"}'
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

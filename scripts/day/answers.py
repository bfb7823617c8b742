"""What a simulated model answers: a call of one of the tools the request OFFERS (most of the
time when it offers any), with JSON object arguments holding the tool's required properties,
or a short text; written as a chat-completions stream (`data:` chunks, finish_reason, usage,
`data: [DONE]`) or as one JSON body.

Answers are made up, not thought: they only have to look like a coding model's to a router
and to the agent that runs the call. The bench's question (17 + 25) gets its sum.
"""

import json
import re
import time
from dataclasses import dataclass

# Tools an agent runs most, by name: read, shell, edit, search, write.
PREFERRED_TOOLS = [r"^read$|read_file|read_files", r"^bash$|exec_command|run_command|shell",
                   r"^edit$|editor|apply_patch", r"grep|search|glob", r"^write$|write_file"]
TOOL_CALL_SHARE = 0.75
WORDS = ("the parser keeps its state in one struct so the next step can reuse it; the failing "
         "test expects the trailing newline to stay; I will change the match arm, run the tests "
         "again and check the error path handles an empty input before the loop starts").split()
FILES = ["src/parser.rs", "src/lexer.rs", "src/main.rs", "tests/parse.rs", "src/config.rs",
         "README.md", "src/routing/plan.py", "lib/index.ts"]
COMMANDS = ["cargo test -q", "git status --short", "rg -n 'fn parse' src", "ls -la src",
            "npm test --silent", "python3 -m pytest -q", "git diff --stat"]


@dataclass
class Reply:
    text: str = ""
    tool: str | None = None
    arguments: dict | None = None

    @property
    def tokens(self):
        size = len(self.text) + (len(json.dumps(self.arguments)) if self.arguments else 0)
        return max(1, size // 4)


def last_user_text(messages):
    for m in reversed(messages):
        if m.get("role") == "user":
            content = m.get("content")
            if isinstance(content, list):
                return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
            return content or ""
    return ""


def offered_tools(body):
    """(name, parameters schema) of each function tool the request offers."""
    out = []
    for tool in body.get("tools") or []:
        function = tool.get("function") or {}
        if function.get("name"):
            out.append((function["name"], function.get("parameters") or {}))
    return out


def pick_tool(tools, rng):
    """One of the offered tools an agent runs most (read, shell, edit, search, write), else
    the first offered."""
    preferred = [t for t in tools if any(re.search(p, t[0], re.IGNORECASE) for p in PREFERRED_TOOLS)]
    return rng.choice(preferred) if preferred else tools[0]


def example_value(name, schema, rng, question):
    """A plausible value for one property, by its schema's type and its name."""
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if "enum" in schema:
        return schema["enum"][0]
    if kind is None and "anyOf" in schema:
        return example_value(name, schema["anyOf"][0], rng, question)
    if kind == "object":
        return arguments_for(schema, rng, question)
    if kind == "array":
        return [example_value(name, schema.get("items") or {"type": "string"}, rng, question)]
    if kind in ("integer", "number"):
        return rng.randint(1, 40)
    if kind == "boolean":
        return False
    return example_text(name, rng, question)


def example_text(name, rng, question):
    name = name.lower()
    if name in ("city", "location"):
        places = re.findall(r"\b[A-Z][a-z]{2,}\b", question)
        return places[-1] if places else "Paris"
    if "path" in name or "file" in name:
        return "/work/project/" + rng.choice(FILES)
    if name in ("command", "cmd") or "command" in name:
        return rng.choice(COMMANDS)
    if "pattern" in name or "query" in name:
        return rng.choice(["fn parse", "TODO", "unwrap()", "class Router"])
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 8)))


def arguments_for(schema, rng, question):
    """A JSON object with every required property of `schema` (and no other)."""
    properties = schema.get("properties") or {}
    return {name: example_value(name, properties.get(name, {}), rng, question)
            for name in schema.get("required") or []}


def plan_reply(body, rng):
    """What the model answers to a chat request."""
    question = last_user_text(body.get("messages") or [])
    if re.search(r"17\s*\+\s*25", question):
        return Reply(text="42")
    tools = offered_tools(body)
    if tools and (rng.random() < TOOL_CALL_SHARE or "weather" in question.lower()):
        name, schema = pick_tool(tools, rng)
        lead = "" if rng.random() < 0.5 else " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 30)))
        return Reply(text=lead, tool=name, arguments=arguments_for(schema, rng, question))
    words = rng.randint(40, 230)
    return Reply(text=" ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + ".")


# --- On the wire ----------------------------------------------------------------------------

def _chunk(ident, model, created, delta, finish=None, usage=None):
    data = {"id": ident, "object": "chat.completion.chunk", "created": created, "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    if usage is not None:
        data["usage"] = usage
    return b"data: " + json.dumps(data).encode() + b"\n\n"


def _usage(prompt_tokens, reply):
    return {"prompt_tokens": prompt_tokens, "completion_tokens": reply.tokens,
            "total_tokens": prompt_tokens + reply.tokens}


def stream_frames(reply, model, prompt_tokens, ident):
    """(bytes, tokens) pieces of the stream after the first role chunk: text a few words at a
    time, then the call (its arguments in two halves), the finish chunk with usage, [DONE]."""
    created = int(time.time())
    frames = []
    words = reply.text.split(" ") if reply.text else []
    for i in range(0, len(words), 4):
        piece = " ".join(words[i:i + 4]) + (" " if i + 4 < len(words) else "")
        frames.append((_chunk(ident, model, created, {"content": piece}), max(1, len(piece) // 4)))
    if reply.tool:
        call_id = "call_" + ident[-12:]
        args = json.dumps(reply.arguments)
        half = len(args) // 2
        first = {"tool_calls": [{"index": 0, "id": call_id, "type": "function",
                                 "function": {"name": reply.tool, "arguments": args[:half]}}]}
        rest = {"tool_calls": [{"index": 0, "function": {"arguments": args[half:]}}]}
        frames.append((_chunk(ident, model, created, first), max(1, half // 4)))
        frames.append((_chunk(ident, model, created, rest), max(1, (len(args) - half) // 4)))
    finish = "tool_calls" if reply.tool else "stop"
    frames.append((_chunk(ident, model, created, {}, finish, _usage(prompt_tokens, reply)), 0))
    frames.append((b"data: [DONE]\n\n", 0))
    return frames


def role_frame(model, ident):
    return _chunk(ident, model, int(time.time()), {"role": "assistant", "content": ""})


def whole_body(reply, model, prompt_tokens, ident):
    message = {"role": "assistant", "content": reply.text or None}
    if reply.tool:
        message["tool_calls"] = [{"id": "call_" + ident[-12:], "type": "function",
                                  "function": {"name": reply.tool,
                                               "arguments": json.dumps(reply.arguments)}}]
    return json.dumps({"id": ident, "object": "chat.completion", "created": int(time.time()),
                       "model": model, "choices": [{"index": 0, "message": message,
                                                    "finish_reason": "tool_calls" if reply.tool else "stop"}],
                       "usage": _usage(prompt_tokens, reply)}).encode()

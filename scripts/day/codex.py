"""Codex's requests (`POST /v1/responses`, OpenAI Responses, streamed, with its `session-id`
header and `prompt_cache_key`) and how it reads the event stream, after
client-requests/codex_0.171.0_*.json: developer messages, exec_command and the rest of its
tools, function_call / function_call_output items."""

import json
import zlib

import sse
from conversation import Answer, ToolCall

NAME = "codex"
PATH = "/v1/responses"
MAX_TOKENS = 0  # Codex sends no max_output_tokens

# (name, required properties, optional properties), as recorded.
FUNCTIONS = [
    ("exec_command", ["cmd"], ["workdir", "yield_time_ms", "max_output_tokens", "tty", "login"]),
    ("write_stdin", ["session_id"], ["chars", "yield_time_ms"]),
    ("request_user_input", ["question"], []),
    ("view_image", ["path"], []),
    ("multi_agent_v1", ["task"], []),
    ("get_goal", [], []), ("create_goal", ["objective"], []), ("update_goal", ["status"], []),
]
NUMBERS = {"yield_time_ms", "max_output_tokens", "session_id"}
FLAGS = {"tty", "login"}


def _property(name):
    kind = "number" if name in NUMBERS else "boolean" if name in FLAGS else "string"
    return {"type": kind, "description": f"The {name.replace('_', ' ')}."}


def tools():
    functions = [{"type": "function", "name": name, "strict": False,
                  "description": f"The {name} tool of the Codex CLI.",
                  "parameters": {"type": "object",
                                 "properties": {p: _property(p) for p in required + optional},
                                 "required": required, "additionalProperties": False}}
                 for name, required, optional in FUNCTIONS]
    return functions + [{"type": "web_search"}]


def headers(conversation):
    sid = conversation.session_id
    return {"session-id": sid, "thread-id": sid, "x-client-request-id": sid,
            "x-codex-window-id": f"{sid}:0", "accept": "text/event-stream",
            "content-type": "application/json", "authorization": "Bearer fcm-local",
            "originator": "codex_exec",
            "user-agent": "codex_exec/0.171.0 (Debian 12.0.0; x86_64) dumb (codex_exec; 0.171.0)"}


def _message(role, text, kind="input_text"):
    return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}


def _shell_output(text):
    """exec_command's output, framed as Codex frames it for the model."""
    return (f"Chunk ID: {zlib.crc32(text.encode()) & 0xffffff:06x}\nWall time: 0.4000 seconds\n"
            f"Process exited with code 0\nOriginal token count: {len(text) // 4}\nOutput:\n{text}\n")


def _input(conversation, instructions):
    first, *rest = conversation.history
    items = [_message("developer", instructions),
             _message("developer", "<permissions instructions>\nThe sandbox allows writes in the "
                                   "working directory only.\n</permissions instructions>"),
             _message("user", "<environment_context>\n  <cwd>/work/project</cwd>\n  <shell>bash"
                              "</shell>\n</environment_context>"),
             _message("user", first.text)]
    for entry in rest:
        if entry.role == "assistant":
            if entry.text:
                items.append(_message("assistant", entry.text, "output_text"))
            items += [{"type": "function_call", "name": c.name, "arguments": c.arguments,
                       "call_id": c.id} for c in entry.calls]
        elif entry.role == "tool":
            output = _shell_output(entry.text) if entry.call.name == "exec_command" else entry.text
            items.append({"type": "function_call_output", "call_id": entry.call.id, "output": output})
        else:
            items.append(_message("user", entry.text))
    return items


def body(conversation, instructions):
    sid = conversation.session_id
    return {"model": "fcm", "stream": True, "input": _input(conversation, instructions),
            "tools": tools(), "tool_choice": "auto", "parallel_tool_calls": True,
            "reasoning": {"summary": "auto"}, "store": False,
            "include": ["reasoning.encrypted_content"], "prompt_cache_key": sid,
            "client_metadata": {"session_id": sid, "thread_id": sid}}


def read(response, on_first_byte):
    """The answer in a Responses event stream: the items of `response.completed` (or those
    done before it), complete at response.completed, failed on response.failed or error."""
    answer, items = Answer(), []
    for _, data in sse.events(response, on_first_byte):
        kind = data.get("type") if isinstance(data, dict) else None
        if kind in ("error", "response.failed", "response.incomplete"):
            answer.error = json.dumps(data)[:300]
        elif kind == "response.output_item.done":
            items.append(data["item"])
        elif kind == "response.completed":
            answer.complete = True
            items = data["response"].get("output") or items
    for item in items:
        if item.get("type") == "message":
            answer.text += "".join(p.get("text", "") for p in item.get("content") or [])
        elif item.get("type") == "function_call":
            answer.calls.append(ToolCall(item.get("call_id") or item.get("id"), item["name"],
                                         item.get("arguments") or "{}"))
    return answer

"""Claude Code's requests (`POST /v1/messages?beta=true`, Anthropic Messages, streamed, with
its headers and `X-Claude-Code-Session-Id`) and how it reads the event stream, after
client-requests/claude_code_2.1.197_*.json: system blocks, a long tool list, max_tokens
32000, adaptive thinking, tool results in user turns."""

import json

import sse
from conversation import Answer, ToolCall, arguments_object

NAME = "claude-code"
PATH = "/v1/messages?beta=true"
MAX_TOKENS = 32000

# (name, required properties, optional properties): the tool list's names as recorded.
TOOLS = [
    ("Agent", ["description", "prompt"], ["subagent_type", "model"]),
    ("Bash", ["command"], ["description", "timeout", "run_in_background"]),
    ("CronCreate", ["schedule", "prompt"], []), ("CronDelete", ["id"], []), ("CronList", [], []),
    ("Edit", ["file_path", "old_string", "new_string"], ["replace_all"]),
    ("EnterWorktree", ["branch"], []), ("ExitWorktree", [], ["keep"]),
    ("NotebookEdit", ["notebook_path", "new_source"], ["cell_id"]),
    ("Read", ["file_path"], ["offset", "limit"]), ("ReportFindings", ["summary"], []),
    ("ScheduleWakeup", ["delay_seconds"], []), ("SendMessage", ["to", "message"], []),
    ("Skill", ["skill"], []), ("TaskCreate", ["subject", "description"], []),
    ("TaskGet", ["taskId"], []), ("TaskList", [], []), ("TaskOutput", ["taskId"], []),
    ("TaskStop", ["taskId"], []), ("TaskUpdate", ["taskId"], ["status"]),
    ("WebFetch", ["url", "prompt"], []), ("WebSearch", ["query"], []),
    ("Workflow", ["name"], ["input"]), ("Write", ["file_path", "content"], []),
]
NUMBERS = {"timeout", "offset", "limit", "delay_seconds"}
FLAGS = {"run_in_background", "replace_all", "keep"}


def _property(name):
    kind = "number" if name in NUMBERS else "boolean" if name in FLAGS else "string"
    return {"type": kind, "description": f"The {name.replace('_', ' ')}."}


def tools():
    return [{"name": name, "description": f"The {name} tool. Read each parameter's description before calling it, "
                                                 "and call it only when the task needs it.",
             "input_schema": {"$schema": "https://json-schema.org/draft/2020-12/schema",
                              "type": "object",
                              "properties": {p: _property(p) for p in required + optional},
                              "required": required, "additionalProperties": False}}
            for name, required, optional in TOOLS]


def headers(conversation):
    return {"Accept": "application/json", "Authorization": "Bearer fcm-local",
            "Content-Type": "application/json", "User-Agent": "claude-cli/2.1.197 (external, sdk-cli)",
            "X-Claude-Code-Session-Id": conversation.session_id, "X-Stainless-Lang": "js",
            "X-Stainless-Package-Version": "0.94.0", "X-Stainless-Retry-Count": "0",
            "X-Stainless-Runtime": "node", "X-Stainless-Timeout": "600",
            "anthropic-beta": "claude-code-20250219,interleaved-thinking-2025-05-14",
            "anthropic-dangerous-direct-browser-access": "true",
            "anthropic-version": "2023-06-01", "x-app": "cli"}


def _messages(conversation):
    first, *rest = conversation.history
    messages = [{"role": "user", "content": [
        {"type": "text", "text": "<system-reminder>\nThe working directory is /work/project.\n"
                                 "</system-reminder>"},
        {"type": "text", "text": first.text, "cache_control": {"type": "ephemeral"}}]},
        {"role": "system", "content": "Agent types you can start with the Agent tool: general, "
                                      "explore (read only), plan."}]
    for entry in rest:
        if entry.role == "assistant":
            content = [{"type": "text", "text": entry.text}] if entry.text else []
            content += [{"type": "tool_use", "id": c.id, "name": c.name, "input": arguments_object(c)}
                        for c in entry.calls]
            messages.append({"role": "assistant", "content": content})
        elif entry.role == "tool":
            block = {"type": "tool_result", "tool_use_id": entry.call.id, "content": entry.text,
                     "is_error": False}
            if messages[-1]["role"] == "user" and messages[-1]["content"][-1].get("type") == "tool_result":
                messages[-1]["content"].append(block)
            else:
                messages.append({"role": "user", "content": [block]})
        else:
            messages.append({"role": "user", "content": [{"type": "text", "text": entry.text}]})
    return messages


def body(conversation, instructions):
    return {"model": "fcm", "messages": _messages(conversation),
            "system": [{"type": "text", "text": "You are a coding agent in a terminal."},
                       {"type": "text", "text": instructions, "cache_control": {"type": "ephemeral"}}],
            "tools": tools(),
            "metadata": {"user_id": json.dumps({"device_id": "day", "session_id": conversation.session_id})},
            "max_tokens": MAX_TOKENS, "thinking": {"type": "adaptive"},
            "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
            "output_config": {"effort": "high"}, "stream": True}


def read(response, on_first_byte):
    """The answer in an Anthropic event stream: text, tool_use blocks (input as JSON
    deltas), complete at message_stop, failed on an error event."""
    answer, blocks = Answer(), {}
    for name, data in sse.events(response, on_first_byte):
        kind = data.get("type") if isinstance(data, dict) else name
        if kind == "error" or name == "error":
            answer.error = json.dumps(data)[:300]
        elif kind == "content_block_start":
            blocks[data["index"]] = dict(data["content_block"], partial="")
        elif kind == "content_block_delta":
            delta, block = data["delta"], blocks.setdefault(data["index"], {"type": "text", "partial": ""})
            block["partial"] += delta.get("text") or delta.get("partial_json") or ""
        elif kind == "message_stop":
            answer.complete = True
    for _, block in sorted(blocks.items()):
        if block.get("type") == "text":
            answer.text += block["partial"]
        elif block.get("type") == "tool_use":
            answer.calls.append(ToolCall(block["id"], block["name"], block["partial"] or "{}"))
    return answer

"""Cline's requests (`POST /v1/chat/completions`, streamed with usage, no session header: fcm
knows the conversation by its beginning) and how it reads the chat stream, after
client-requests/cline_3.0.65_*.json: read_files, run_commands, editor and its other tools,
`role: tool` results (run_commands' as a JSON list of each command's result)."""

import json

import sse
from conversation import Answer, ToolCall

NAME = "cline"
PATH = "/v1/chat/completions"
MAX_TOKENS = 0  # Cline sends no max_tokens

FILE_ENTRY = {"type": "object", "properties": {
    "path": {"type": "string", "description": "The absolute path of a text file to read."},
    "start_line": {"anyOf": [{"type": "integer", "exclusiveMinimum": 0}, {"type": "null"}]},
    "end_line": {"anyOf": [{"type": "integer", "exclusiveMinimum": 0}, {"type": "null"}]}},
    "required": ["path"], "additionalProperties": False}
# (name, parameters' properties, required), names as recorded.
FUNCTIONS = [
    ("read_files", {"files": {"type": "array", "items": FILE_ENTRY}}, ["files"]),
    ("search_codebase", {"queries": {"type": "array", "items": {"type": "string"}}}, ["queries"]),
    ("run_commands", {"commands": {"type": "array", "items": {"type": "string"}}}, ["commands"]),
    ("fetch_web_content", {"url": {"type": "string"}}, ["url"]),
    ("editor", {"command": {"type": "string", "enum": ["str_replace", "create", "insert"]},
                "path": {"type": "string"}, "old_text": {"type": "string"},
                "new_text": {"type": "string"}}, ["command", "path", "new_text"]),
    ("ask_question", {"question": {"type": "string"}}, ["question"]),
    ("spawn_agent", {"task": {"type": "string"}}, ["task"]),
] + [(name, {"message": {"type": "string"}}, ["message"]) for name in (
    "team_spawn_teammate", "team_shutdown_teammate", "team_status", "team_task", "team_run_task",
    "team_cancel_run", "team_list_runs", "team_await_runs", "team_send_message", "team_broadcast",
    "team_read_mailbox", "team_mission_log", "team_cleanup")]


def tools():
    return [{"type": "function", "function": {
        "name": name, "description": f"The {name.replace('_', ' ')} tool. Use it when the task "
                                     "needs it; one call may do several things at once.",
        "parameters": {"type": "object", "properties": properties, "required": required,
                       "additionalProperties": False}}}
        for name, properties, required in FUNCTIONS]


def headers(conversation):
    return {"Authorization": "Bearer fcm-local", "Content-Type": "application/json",
            "User-Agent": "ai-sdk/openai-compatible/3.0.37 ai-sdk/provider-utils/5.0.30 runtime/bun/1.3.13",
            "Accept": "*/*"}


def _tool_content(entry):
    """run_commands answers with each command's result in a JSON list; others with text."""
    if entry.call.name != "run_commands":
        return entry.text
    try:
        commands = json.loads(entry.call.arguments).get("commands") or ["true"]
    except (ValueError, AttributeError):
        commands = ["true"]
    return json.dumps([{"query": commands[0], "result": entry.text, "success": True}])


def _messages(conversation, instructions):
    messages = [{"role": "system", "content": instructions}]
    for entry in conversation.history:
        if entry.role == "assistant":
            message = {"role": "assistant", "content": entry.text or None}
            if entry.calls:
                message["tool_calls"] = [{"id": c.id, "type": "function",
                                          "function": {"name": c.name, "arguments": c.arguments}}
                                         for c in entry.calls]
            messages.append(message)
        elif entry.role == "tool":
            messages.append({"role": "tool", "tool_call_id": entry.call.id, "content": _tool_content(entry)})
        else:
            messages.append({"role": "user", "content": entry.text})
    return messages


def body(conversation, instructions):
    return {"model": "fcm", "messages": _messages(conversation, instructions), "tools": tools(),
            "tool_choice": "auto", "stream": True, "stream_options": {"include_usage": True}}


def read(response, on_first_byte):
    """The answer in a chat stream: content and tool-call deltas by index, complete at
    `[DONE]` after a finish_reason, failed on an error frame."""
    answer, calls, finished = Answer(), {}, False
    for _, data in sse.events(response, on_first_byte):
        if data == "[DONE]":
            answer.complete = finished
            continue
        if not isinstance(data, dict):
            continue
        if data.get("error"):
            answer.error = json.dumps(data["error"])[:300]
        for choice in data.get("choices") or []:
            delta = choice.get("delta") or {}
            answer.text += delta.get("content") or ""
            for call in delta.get("tool_calls") or []:
                slot = calls.setdefault(call.get("index", 0), {"id": None, "name": "", "arguments": ""})
                slot["id"] = call.get("id") or slot["id"]
                function = call.get("function") or {}
                slot["name"] = function.get("name") or slot["name"]
                slot["arguments"] += function.get("arguments") or ""
            finished = finished or bool(choice.get("finish_reason"))
    answer.calls = [ToolCall(c["id"] or f"call_{i}", c["name"], c["arguments"] or "{}")
                    for i, c in sorted(calls.items())]
    return answer

"""One agent's conversation, whatever protocol carries it: the task, then turns that append
the model's answer and, for a tool call, the tool's output (1-4k tokens), or for a text
answer the user's next message. It plans 15-40 turns; its prompt starts near 10k tokens
(the client's system prompt and tools) and grows towards ~40k, where tool outputs shrink.
"""

import json
import uuid
from dataclasses import dataclass, field

import texts

TURNS = (15, 40)
TOOL_OUTPUT_TOKENS = (1000, 4000)
PROMPT_CEILING_TOKENS = 40000
SMALLEST_TOOL_OUTPUT_TOKENS = 300


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: str  # JSON text, as the model sent it


@dataclass
class Entry:
    role: str                 # "user", "assistant" or "tool"
    text: str = ""
    calls: list = field(default_factory=list)  # assistant: ToolCall
    call: ToolCall | None = None               # tool: the call it answers


@dataclass
class Answer:
    """What one request got back, as the client read it."""
    text: str = ""
    calls: list = field(default_factory=list)
    complete: bool = False
    error: str | None = None

    @property
    def served(self):
        return self.complete and self.error is None and bool(self.text.strip() or self.calls)


class Conversation:
    def __init__(self, rng, number):
        self.rng = rng
        self.number = number
        self.session_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        self.planned_turns = rng.randint(*TURNS)
        self.turns = 0
        self.history = [Entry("user", texts.task(rng, number))]

    def done(self):
        return self.turns >= self.planned_turns

    def add(self, answer, prompt_tokens):
        """Appends a served answer, then the tool outputs it asked for or the user's reply."""
        self.turns += 1
        self.history.append(Entry("assistant", answer.text, list(answer.calls)))
        for call in answer.calls:
            room = PROMPT_CEILING_TOKENS - prompt_tokens
            tokens = max(SMALLEST_TOOL_OUTPUT_TOKENS, min(self.rng.randint(*TOOL_OUTPUT_TOKENS), room))
            self.history.append(Entry("tool", texts.tool_output(call.name, self.rng, tokens), call=call))
            prompt_tokens += tokens
        if not answer.calls:
            self.history.append(Entry("user", texts.follow_up(self.rng)))


def arguments_object(call):
    """A call's arguments as an object (a client sends them back parsed)."""
    try:
        value = json.loads(call.arguments or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}

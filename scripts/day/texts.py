"""Made-up text for the agents' requests, drawn from a seeded random source: a coding agent's
instructions (the long system prompt), tasks, follow-up messages and tool outputs (source
files, command output). None of it means anything; it has the size and the look of the real
thing, and it varies enough that it does not compress to nothing.
"""

RULES = [
    "Read the code you are about to change before you change it, and keep its style.",
    "Prefer the smallest change that makes the failing test pass; explain why it is enough.",
    "Run the project's own test command after every edit and read its whole output.",
    "Never invent a file path: list the directory first when you are not sure it exists.",
    "When a command fails, quote the first error line and say what you will try next.",
    "Keep answers short; the user reads the diff, not a report about it.",
    "Do not commit, push or publish anything unless the user asked for it in this session.",
    "Ask before deleting files, and never touch files outside the working directory.",
    "Use the edit tool for changes to existing files and the write tool only for new ones.",
    "When two approaches work, choose the one that leaves less code behind.",
    "Tests come with fixes: a bug you fixed without a test will come back.",
    "Search the repository for other callers before you change a function's signature.",
    "Report what you did not verify, so nobody mistakes a guess for a checked fact.",
    "Long outputs should be filtered with the search tool rather than read in full.",
    "Keep secrets out of logs, commits and answers, even when they appear in a file.",
]
SUBJECTS = ["the config loader", "the CSV exporter", "the retry loop", "the cache layer",
            "the HTTP client", "the date parser", "the CLI flags", "the migration script",
            "the search index", "the websocket handler", "the billing report", "the plugin loader"]
VERBS = ["fix the failing test in", "add logging to", "refactor", "speed up", "add a --dry-run flag to",
         "write tests for", "remove the dead code from", "handle empty input in"]
IDENTIFIERS = ["parse", "load", "state", "buffer", "config", "entry", "cursor", "index", "token",
               "limit", "window", "reader", "writer", "handle", "record", "value", "result", "span"]
KEYWORDS = ["let", "fn", "if", "match", "return", "for", "while", "pub", "impl", "use"]


def instructions(rng, chars):
    """A system prompt of about `chars` characters: numbered sections of rules."""
    parts, size, section = [], 0, 1
    while size < chars:
        rules = rng.sample(RULES, 5)
        block = f"\n## Section {section}\n" + "\n".join(f"- {r}" for r in rules)
        parts.append(block)
        size += len(block)
        section += 1
    return "You are a coding agent working in the user's repository." + "".join(parts)


def task(rng, number):
    subject = rng.choice(SUBJECTS)
    return (f"Task {number}: {rng.choice(VERBS)} {subject}. The code is under src/; the tests "
            f"are run with the project's usual command. Tell me when it is done.")


def follow_up(rng):
    return rng.choice(["Good. Now run the whole test suite.", "Also check the error path.",
                       "Can you make that change smaller?", "Go on with the next step.",
                       "Update the README for that too.", "What about the other caller?"])


def _code_line(rng):
    indent = "    " * rng.randint(0, 3)
    words = [rng.choice(KEYWORDS)] + [f"{rng.choice(IDENTIFIERS)}_{rng.randint(0, 99)}"
                                       for _ in range(rng.randint(1, 5))]
    return indent + " ".join(words) + rng.choice([";", " {", "", " }", ","])


def source_file(rng, tokens):
    """Numbered lines of code, about `tokens` tokens (characters / 4)."""
    lines, size, n = [], 0, 1
    while size < tokens * 4:
        line = f"{n:>6}\t{_code_line(rng)}"
        lines.append(line)
        size += len(line) + 1
        n += 1
    return "\n".join(lines)


def command_output(rng, tokens):
    """A command's output of about `tokens` tokens: compiler or test lines, then a summary."""
    lines, size = [], 0
    while size < tokens * 4:
        kind = rng.random()
        if kind < 0.6:
            line = f"test {rng.choice(IDENTIFIERS)}::{rng.choice(IDENTIFIERS)}_{rng.randint(1, 999)} ... ok"
        elif kind < 0.85:
            line = (f"   Compiling {rng.choice(IDENTIFIERS)}-{rng.choice(IDENTIFIERS)} "
                    f"v0.{rng.randint(1, 30)}.{rng.randint(0, 9)}")
        else:
            line = (f"warning: unused variable `{rng.choice(IDENTIFIERS)}` --> src/"
                    f"{rng.choice(IDENTIFIERS)}.rs:{rng.randint(1, 400)}:{rng.randint(1, 40)}")
        lines.append(line)
        size += len(line) + 1
    lines.append(f"test result: ok. {len(lines)} passed; 0 failed; finished in {rng.uniform(0.2, 9):.2f}s")
    return "\n".join(lines)


def tool_output(tool_name, rng, tokens):
    """What running a tool of this name printed: a file for a read, else command output."""
    if "read" in tool_name.lower() or "view" in tool_name.lower():
        return source_file(rng, tokens)
    return command_output(rng, tokens)

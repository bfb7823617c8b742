#!/usr/bin/env python3
"""Builds providers.json (the embedded catalog) from the reference tables.

Usage: scripts/gen-catalog.py REFERENCE_DIR > providers.json

REFERENCE_DIR holds free-model-catalog.tsv and provider-signup.tsv. The output is
committed; this script only documents how it was made and lets it be remade.
"""
import csv
import json
import re
import sys

# Providers left out on purpose, with the reason.
RETIRED = {"github-models"}  # endpoint retired 2026-07-30, answers 410

# Fields some providers reject with a 400 (provider quirks); stripped before sending.
STRICT_FIELDS = ["parallel_tool_calls", "n", "top_k", "logprobs", "echo", "user",
                 "metadata", "prompt_cache_key", "store"]
DROP_FIELDS = {p: STRICT_FIELDS for p in ("zai", "mistral", "codestral", "nvidia")}
# Providers whose free quota is shared by all their models.
SHARED_QUOTA = {"openrouter"}
# Extra headers a provider expects on every request.
HEADERS = {"openrouter": {"X-Title": "fcm"}, "orcarouter": {"X-Title": "fcm"}}
# Providers that want one random id per process in the named header.
SESSION_HEADER = {"opencode-zen": "x-opencode-session"}
# Model ids carrying a prefix the API does not expect.
STRIP_PREFIX = {"zai": "zai/"}
UNKNOWN_CONTEXT = 32768  # conservative window for models whose context is not published

# Capabilities claimed from what a model family is publicly known for; anything not matched is
# "not claimed" (the router then tries it after the models that claim it, never drops it).
VISION = re.compile(r"(^|[-/_.])vl([-/_.:]|$)|vision|omni|gemini|pixtral|gemma-?[34]|llama-4|"
                    r"glm-4\.[56]v|kimi-k2\.5|mistral-(small|medium)-3", re.I)
TOOLS = re.compile(r"gpt-oss|qwen|coder|kimi|deepseek|glm|llama-3\.3|llama-4|mistral|devstral|"
                   r"codestral|gemini|nemotron|minimax|gemma|grok|laguna|step-3", re.I)
NOT_CHAT = re.compile(r"bge|embed|guard|whisper|tts|rerank", re.I)


def capabilities(model_id, label):
    text = f"{model_id} {label}"
    if NOT_CHAT.search(text):
        return []
    caps = []
    if TOOLS.search(text):
        caps.append("tools")
    if VISION.search(text):
        caps.append("vision")
    return caps


def tokens(text):
    text = text.strip()
    if text in ("", "-"):
        return UNKNOWN_CONTEXT
    unit = text[-1].lower()
    scale = {"k": 1024, "m": 1024 * 1024}.get(unit)
    if scale is None:
        return int(text)
    return int(round(float(text[:-1]) * scale))


def swe(text):
    text = text.strip().rstrip("%")
    return None if text in ("", "-") else float(text)


def main(ref):
    signup = {}
    with open(f"{ref}/provider-signup.tsv", newline="") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            signup[row["provider"]] = row
    providers = {}
    with open(f"{ref}/free-model-catalog.tsv", newline="") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            pid = row["provider"]
            if pid in RETIRED:
                continue
            url = row["chat_completions_url"]
            suffix = "/chat/completions"
            assert url.endswith(suffix), url
            base = url[: -len(suffix)].replace("{$", "{")
            info = signup.get(pid, {})
            envs = [e for e in info.get("api_key_env", "").split(",") if e]
            p = providers.setdefault(pid, {
                "id": pid,
                "name": row["provider_name"],
                "baseUrl": base,
                "apiKeyEnv": envs,
                "keyRequired": row["no_key_needed"].strip().lower() != "yes",
                "signupUrl": info.get("signup_url", ""),
                "limits": info.get("rate_limits", ""),
                "quota": row["quota_code"],
                "models": [],
            })
            if pid in SHARED_QUOTA:
                p["sharedQuota"] = True
            if pid in HEADERS:
                p["headers"] = HEADERS[pid]
            if pid in SESSION_HEADER:
                p["sessionHeader"] = SESSION_HEADER[pid]
            if pid in DROP_FIELDS:
                p["dropFields"] = DROP_FIELDS[pid]
            mid = row["model_id"]
            prefix = STRIP_PREFIX.get(pid)
            if prefix and mid.startswith(prefix):
                mid = mid[len(prefix):]
            p["models"].append({
                "id": mid,
                "label": row["label"],
                "tier": row["tier"],
                "sweBench": swe(row["swe_bench_verified"]),
                "context": tokens(row["context"]),
                "capabilities": capabilities(mid, row["label"]),
            })
    doc = {"version": 1, "providers": list(providers.values())}
    json.dump(doc, sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "../shared/reference")

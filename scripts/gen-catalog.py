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

# The day of the newest fact the catalog holds (written as its top-level `updated`; fcm
# says how old that is, and `fcm doctor` calls it old after 60 days). The reference tables
# are free-coding-models 0.5.92's catalog, re-verified against the providers on 2026-09-15
# (its changelog for 0.5.92); the changes below are of facts up to free-coding-models
# 0.5.98 (2026-10-10). Source short names as in free-tier-2026-10.md: [aag] is
# cuihuan/awesome-ai-gateway data/free_tiers.json (2026-08-31), [cheahjs] the README of
# cheahjs/free-llm-api-resources (July 2026), [fcm-js X] the changelog of the npm package
# free-coding-models version X.
UPDATED = "2026-10-10"

# Providers left out on purpose, with the reason.
RETIRED = {
    # Free tier retired 2026-07-30; the endpoint answers 410 [aag].
    "github-models",
    # Since 2026-09-16/17 its free models (all the catalog had) answer API clients 403
    # FreeTierError, "only from within OpenCode" (9Router issue 4101; freellmapi issue 1249
    # disabled them).
    "opencode-zen",
    # "Now bills most text models per token" [fcm-js 0.5.98]; which stay free is not
    # published in a form we can read, and its other entries are embedding and moderation
    # models, not chat models. Calling it with a key would bill the user.
    "ovhcloud",
}
# Models left out on purpose (ids as sent, after STRIP_PREFIX), with the reason.
REMOVED_MODELS = {
    # Went paid; five free models left [fcm-js 0.5.98].
    ("sambanova", "MiniMax-M2.7"), ("sambanova", "MiniMax-M3"),
    # Paid only [fcm-js 0.5.97].
    ("zai", "glm-5.3"), ("zai", "glm-4.7-flashx"),
    # The three NIM models re-added by free-coding-models 0.5.92 to the 13 it had verified
    # live in 0.5.90 are "ghost catalog entries again" (listed, not served): NIM is back to
    # 13 [fcm-js 0.5.98]; MiniMax M3 had already answered 410 at its end of life on
    # 2026-09-09 [fcm-js 0.5.90].
    ("nvidia", "qwen/qwen3-coder-480b-a35b-instruct"), ("nvidia", "minimaxai/minimax-m3"),
    ("nvidia", "minimaxai/minimax-m2.7"),
}

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
# Free-tier limits as `quota` objects, each number with where it comes from. `scope`
# "provider" is one counter for the account; "model" gives every model its own. Providers
# whose free tier is stated without numbers ("generous", credits, monthly tokens) get none:
# the `x-ratelimit-*` headers they send tell fcm at run time.
QUOTA = {
    # provider-signup.tsv: "Free tier: 40 requests/min"
    "nvidia": {"requestsPerMinute": 40, "scope": "provider"},
    # provider-signup.tsv: "30-50 RPM per model (varies by model)": the low end, per model
    "groq": {"requestsPerMinute": 30, "scope": "model"},
    # provider-signup.tsv: "text-gen 300 RPM" (its 10k neurons/day are not tokens)
    "cloudflare": {"requestsPerMinute": 300, "scope": "provider"},
    # provider-signup.tsv: "50/day <$10 ... (20 req/min)"; provider-quirks.md: one
    # account-wide quota for every :free model (the 1,000/day tier needs a purchase)
    "openrouter": {"requestsPerMinute": 20, "requestsPerDay": 50, "scope": "provider"},
    # provider-signup.tsv: "Codestral free access: 30 req/min, 2000/day"
    "codestral": {"requestsPerMinute": 30, "requestsPerDay": 2000, "scope": "provider"},
    # provider-signup.tsv: "1000 RPM · 1M tokens/day per model"
    "siliconflow": {"requestsPerMinute": 1000, "tokensPerDay": 1000000, "scope": "model"},
    # provider-signup.tsv: "200 req/day on free models (20 req/min)"
    "requesty": {"requestsPerMinute": 20, "requestsPerDay": 200, "scope": "provider"},
    # [aag]: 5 RPM, 30k TPM, 1M tokens/hour, 1M TPD; [cheahjs]: 30 RPM, 60k TPM, 14,400 RPD,
    # 1M TPD. The lower of each (RPD only [cheahjs] states); one counter for the account,
    # as neither says per model.
    "cerebras": {"requestsPerMinute": 5, "requestsPerDay": 14400, "tokensPerMinute": 30000,
                 "tokensPerDay": 1000000, "scope": "provider"},
    # [cheahjs]: 1 request/s (as 60 a minute) and 500k TPM ([aag]: unpublished); its 1B
    # tokens a month per model has no field. One counter for the account.
    "mistral": {"requestsPerMinute": 60, "tokensPerMinute": 500000, "scope": "provider"},
    # [aag]: 20 RPM, 20 RPD, 200k TPD without a payment method.
    "sambanova": {"requestsPerMinute": 20, "requestsPerDay": 20, "tokensPerDay": 200000,
                  "scope": "provider"},
    # [fcm-js 0.5.97]: 10 RPM, 50 RPD.
    "orcarouter": {"requestsPerMinute": 10, "requestsPerDay": 50, "scope": "provider"},
}
# Model limits that differ from the provider's.
GEMINI_FLASH = {"requestsPerMinute": 5, "requestsPerDay": 20, "tokensPerMinute": 250000}
MODEL_QUOTA = {
    # realwire/groq__200_ratelimit_headers.headers: llama-3.3-70b-versatile on the free
    # tier sends x-ratelimit-limit-requests 1000 (per day) and -tokens 12000 (per minute);
    # [aag] agrees and adds 100k TPD.
    ("groq", "llama-3.3-70b-versatile"): {"requestsPerDay": 1000, "tokensPerMinute": 12000,
                                          "tokensPerDay": 100000},
    # [aag]: gpt-oss-120b 30 RPM / 1k RPD / 8k TPM / 200k TPD; llama-3.1-8b 30 / 14.4k /
    # 6k / 500k (30 RPM is the provider's per-model figure).
    ("groq", "openai/gpt-oss-120b"): {"requestsPerDay": 1000, "tokensPerMinute": 8000,
                                      "tokensPerDay": 200000},
    ("groq", "llama-3.1-8b-instant"): {"requestsPerDay": 14400, "tokensPerMinute": 6000,
                                       "tokensPerDay": 500000},
    # [cheahjs]: Gemini 3.5 / 3 / 2.5 Flash 5 RPM, 20 RPD, 250k TPM (Gemini 3 Flash is
    # the catalog's gemini-3-flash-preview); 3.1 Flash-Lite 15 RPM, 500 RPD. Google counts
    # them per model.
    ("googleai", "gemini-3.5-flash"): GEMINI_FLASH,
    ("googleai", "gemini-3-flash-preview"): GEMINI_FLASH,
    ("googleai", "gemini-2.5-flash"): GEMINI_FLASH,
    ("googleai", "gemini-3.1-flash-lite"): {"requestsPerMinute": 15, "requestsPerDay": 500},
}
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
                "access": row["quota_code"],
                **({"quota": QUOTA[pid]} if pid in QUOTA else {}),
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
            if (pid, mid) in REMOVED_MODELS:
                continue
            model = {
                "id": mid,
                "label": row["label"],
                "tier": row["tier"],
                "sweBench": swe(row["swe_bench_verified"]),
                "context": tokens(row["context"]),
                "capabilities": capabilities(mid, row["label"]),
            }
            if (pid, mid) in MODEL_QUOTA:
                model["quota"] = MODEL_QUOTA[(pid, mid)]
            p["models"].append(model)
    doc = {"version": 1, "updated": UPDATED, "providers": list(providers.values())}
    json.dump(doc, sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "../shared/reference")

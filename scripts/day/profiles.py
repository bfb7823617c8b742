"""What the simulated world knows of each provider beyond the catalog: the limits the catalog
does not state, how the provider says no (its refusal style, see refusals.py), which of its
listed models are paid only, how fast it is, and how often it is out of capacity.

The catalog's own `quota` fields are enforced too (the world adds them, marked published);
the limits here are the unpublished ones, each with where its number comes from
(free-tier-2026-10.md, quota-signals.md) or, when nothing public says, a plausible guess
marked as one.
"""

from dataclasses import dataclass

from limits import Limit


@dataclass(frozen=True)
class Profile:
    style: str                  # how it refuses: a key of refusals.STYLES
    limits: tuple = ()          # unpublished limits
    paid_only: tuple = ()       # listed models that refuse at once as paid only
    speed: float = 1.0          # >1: faster first tokens and more tokens a second
    busy: float = 0.0           # share of admitted requests refused for the provider's capacity
    reserves_max_tokens: bool = False  # counts max_tokens against its token limits up front


def _per_model(unit, period, amount, *models):
    return Limit(unit, period, amount, "model", tuple(models))


def _account(unit, period, amount):
    return Limit(unit, period, amount, "account")


GROQ_SMALL = ("openai/gpt-oss-20b", "qwen/qwen3.8-27b", "minimaxai/minimax-m2.7")
GROQ_COMPOUND = ("groq/compound", "groq/compound-mini")
GOOGLE_FLASH = ("gemini-3.8-flash", "gemini-3.7-flash", "gemini-3.6-flash")
GOOGLE_LITE = ("gemini-3.5-flash-lite", "gemini-2.5-flash-lite")
GOOGLE_PAID = ("gemini-2.5-pro", "gemini-3.1-pro-preview")

PROFILES = {
    # Hidden per-model caps, about 30 requests an hour (free-tier-2026-10.md).
    "nvidia": Profile("nvidia", (Limit("requests", "hour", 30, "model"),), speed=0.7),
    # Per-model RPD/TPM as [aag] gives them for the models the catalog leaves without.
    "groq": Profile("groq", (
        _per_model("requests", "day", 1000, *GROQ_SMALL),
        _per_model("tokens", "minute", 8000, "openai/gpt-oss-20b"),
        _per_model("tokens", "minute", 6000, "qwen/qwen3.8-27b"),
        _per_model("tokens", "minute", 10000, "minimaxai/minimax-m2.7"),
        _per_model("requests", "day", 250, *GROQ_COMPOUND),  # guess
        _per_model("tokens", "minute", 70000, *GROQ_COMPOUND),  # guess
    ), speed=3.0),
    "cerebras": Profile("cerebras", speed=3.0, reserves_max_tokens=True),
    # Flash 5 RPM / 20 RPD, Flash-Lite 15 RPM [cheahjs]; Pro models have no free quota
    # ("limit: 0", quota-signals.md).
    "googleai": Profile("google", (
        _per_model("requests", "minute", 5, *GOOGLE_FLASH),
        _per_model("requests", "day", 20, *GOOGLE_FLASH),
        _per_model("tokens", "minute", 250000, *GOOGLE_FLASH),
        _per_model("requests", "minute", 15, *GOOGLE_LITE),
        _per_model("requests", "day", 500, *GOOGLE_LITE),
        _per_model("requests", "day", 0, *GOOGLE_PAID),
    ), speed=1.2),
    # 1 request a second [cheahjs]; 3505 when their tier is out of capacity.
    "mistral": Profile("mistral", (_account("requests", "second", 1),), busy=0.03),
    "codestral": Profile("mistral", (_account("requests", "second", 1),), busy=0.03),
    # 10,000 neurons a day, about 300k input tokens [aag].
    "cloudflare": Profile("cloudflare", (_account("tokens", "day", 300000),)),
    # The catalog states 20 RPM / 50 RPD account-wide; "temporarily rate-limited upstream"
    # now and then (realwire/openrouter__429_*).
    "openrouter": Profile("openrouter", busy=0.04),
    "sambanova": Profile("generic", speed=2.0),
    # GLM-5.x and 4.6/4.7 are paid only (free-tier-2026-10.md); the Flash models' rate: a guess.
    "zai": Profile("zai", (Limit("requests", "minute", 20, "model"),),
                   paid_only=("glm-5.2", "glm-5.1", "glm-5", "glm-5-turbo", "glm-4.7", "glm-4.6")),
    # 1M free tokens, account-wide [cheahjs]; a per-model rate: a guess.
    "scaleway": Profile("insufficient_quota", (
        _account("tokens", "grant", 1000000), Limit("requests", "minute", 60, "model"))),
    # A free token grant per model (1M in the catalog, what is left of it here), then
    # AllocationQuota.FreeTierOnly; a per-model rate limit (Throttling.RateQuota).
    "qwen": Profile("dashscope", (
        Limit("tokens", "grant", 400000, "model"), Limit("requests", "minute", 60, "model"))),
    # Keyless shared tiers: guesses.
    "kilo": Profile("generic", (_account("requests", "minute", 30), _account("requests", "day", 300))),
    "llm7": Profile("generic", (_account("requests", "minute", 20), _account("requests", "day", 500))),
    "routeway": Profile("generic", (_account("requests", "minute", 20), _account("requests", "day", 200))),
    "novita": Profile("generic", (Limit("requests", "minute", 30, "model"),)),
    "pollinations": Profile("generic", (_account("requests", "minute", 12),), speed=0.8),
    "siliconflow": Profile("generic"),
    "requesty": Profile("generic"),
    "orcarouter": Profile("generic"),
    # $5 of credits every 30 days: about 100 requests of this size (a guess).
    "vercel-gateway": Profile("insufficient_quota", (_account("requests", "grant", 100),)),
    # A session cap of a few dozen requests, account-wide (free-tier-2026-10.md: "session
    # and weekly caps"; the number is a guess).
    "ollama-cloud": Profile("ollama", (_account("requests", "session", 40),), speed=0.8),
}


def profile(provider_id):
    return PROFILES.get(provider_id, Profile("generic"))

"""The day's plan of what goes wrong, and how fast each model is, drawn once from the seed so
two runs see the same world: which providers have an outage (when, for how long, refused or
reset connections), which listed model is silent, which one went paid and answers with a
notice, the share of random server errors, and each model's pace (a heavy-tailed time to
first token and a token rate).
"""

import math
import random
from dataclasses import dataclass

SERVER_ERROR_SHARE = 0.015
PAID_NOTICE = "This model now requires a paid plan. Add credits to continue."
# Providers an outage may hit: ones whose strong models a router is likely to be using.
OUTAGE_CANDIDATES = ["qwen", "ollama-cloud", "nvidia", "mistral", "zai", "scaleway",
                     "pollinations", "cloudflare", "requesty"]
OUTAGE_SECONDS = (60.0, 120.0)
OUTAGE_SHARE_OF_DAY = 0.35     # a short test day gets a shorter outage
TTFT_MEDIAN_SECONDS = (0.4, 4.0)
TTFT_SIGMA = 0.45
TTFT_TAIL_SHARE = 0.03         # a few percent of first tokens come very late
TTFT_TAIL_SECONDS = (12.0, 28.0)
TOKENS_PER_SECOND = (30.0, 300.0)


@dataclass(frozen=True)
class Outage:
    provider: str
    mode: str      # "refused": nothing listens; "reset": accepted, then reset
    start: float   # seconds into the day
    end: float

    def covers(self, t):
        return self.start <= t < self.end


@dataclass(frozen=True)
class Pace:
    ttft_median: float
    tokens_per_second: float

    def first_token_delay(self, rng):
        if rng.random() < TTFT_TAIL_SHARE:
            return rng.uniform(*TTFT_TAIL_SECONDS)
        return min(rng.lognormvariate(math.log(self.ttft_median), TTFT_SIGMA), TTFT_TAIL_SECONDS[1])


def _log_uniform(rng, low, high):
    return math.exp(rng.uniform(math.log(low), math.log(high)))


def _strongest_with_tools(providers, provider_id):
    """A provider's tier-S+ models that take tools: a router tries those first, so a fault
    there is one it meets."""
    return sorted(m.key for p in providers if p.id == provider_id
                  for m in p.models if m.tier == "S+" and m.tools)


@dataclass
class Plan:
    outages: list
    silent: str    # `provider/modelId`
    paid: str
    paces: dict    # `provider/modelId` -> Pace

    def outage(self, provider, t):
        return next((o for o in self.outages if o.provider == provider and o.covers(t)), None)


def draw(providers, profile_of, seed, day_seconds):
    """The plan for a world of `providers` (catalog.Provider, each with its profile from
    `profile_of`) over a day of `day_seconds`."""
    rng = random.Random(f"plan:{seed}")
    present = {p.id for p in providers}
    hit = rng.sample([p for p in OUTAGE_CANDIDATES if p in present], 2)
    outages = []
    for provider, mode in zip(hit, ["refused", "reset"]):
        length = min(rng.uniform(*OUTAGE_SECONDS), OUTAGE_SHARE_OF_DAY * day_seconds)
        start = rng.uniform(0.2, 0.75) * day_seconds
        outages.append(Outage(provider, mode, start, min(start + length, day_seconds)))
    silent = rng.choice(_strongest_with_tools(providers, "nvidia"))
    paid = rng.choice(_strongest_with_tools(providers, "pollinations"))
    paces = {}
    for p in providers:
        speed = profile_of(p.id).speed
        for m in p.models:
            model_rng = random.Random(f"pace:{seed}:{m.key}")
            ttft = _log_uniform(model_rng, *TTFT_MEDIAN_SECONDS) / speed
            rate = _log_uniform(model_rng, *TOKENS_PER_SECOND) * speed
            paces[m.key] = Pace(max(ttft, TTFT_MEDIAN_SECONDS[0]), min(rate, TOKENS_PER_SECOND[1]))
    return Plan(outages, silent, paid, paces)

"""The catalog as the day benchmark reads it: providers and models with their tiers, and
the copy of providers.json that points every provider at its port in the simulated world.

Shared by the world (which models exist, what the catalog publishes of their limits), the
agents (none) and the report (which tier served). It never changes providers.json itself.
"""

import json
from dataclasses import dataclass, field
from urllib.parse import urlsplit

# Strongest first, as fcm orders coding strength.
TIERS = ["S+", "S", "A+", "A", "A-", "B+", "B", "C"]
STRONG_TIERS = {"S+", "S"}


def tier_rank(tier):
    """0 for S+, larger for weaker; an unknown tier ranks below every known one."""
    return TIERS.index(tier) if tier in TIERS else len(TIERS)


@dataclass
class Model:
    provider: str
    id: str
    tier: str
    tools: bool
    quota: dict = field(default_factory=dict)

    @property
    def key(self):
        """The name fcm gives it: `provider/modelId` (x-fcm-v2-model)."""
        return f"{self.provider}/{self.id}"


@dataclass
class Provider:
    id: str
    base_url: str
    key_env: str | None   # the variable its key is read from first; None: it needs no key
    key_envs: list        # every variable fcm may read a key of it from
    quota: dict
    models: list


def load(path):
    """The providers of a catalog file, each with its models."""
    with open(path) as f:
        raw = json.load(f)
    providers = []
    for p in raw["providers"]:
        needs_key = p.get("keyRequired", True) and p.get("apiKeyEnv")
        models = [
            Model(p["id"], m["id"], m.get("tier", "C"), "tools" in m.get("capabilities", []),
                  m.get("quota") or {})
            for m in p["models"]
        ]
        providers.append(Provider(p["id"], p["baseUrl"], p["apiKeyEnv"][0] if needs_key else None,
                                  p.get("apiKeyEnv") or [], p.get("quota") or {}, models))
    return providers


def tiers_by_key(path):
    """`provider/modelId` -> tier, for every model of a catalog file."""
    return {m.key: m.tier for p in load(path) for m in p.models}


def write_pointed(source, target, ports):
    """Writes `source` to `target` with each provider's baseUrl on 127.0.0.1 at its port
    (`ports`: provider id -> port), the path (and any `{VAR}` in it) kept; nothing else
    changes."""
    with open(source) as f:
        raw = json.load(f)
    for p in raw["providers"]:
        p["baseUrl"] = f"http://127.0.0.1:{ports[p['id']]}{urlsplit(p['baseUrl']).path}"
    with open(target, "w") as f:
        json.dump(raw, f, indent=1)

"""The simulated world of fcm's day benchmark: fake versions of the catalog's providers on
127.0.0.1, one port each, with their published and unpublished free-tier limits, their ways
of saying no, and the day's faults; a control port that says which models have room now and
serves the log of every upstream request.

    python3 world.py --catalog providers.json --seed 1 --day-seconds 600 --dir DIR

writes DIR/catalog.json (providers.json with each baseUrl on its port), DIR/keys.env (the
providers' key variables, to source), DIR/log.jsonl (one line per upstream request) and, once
everything listens, DIR/world.json (the control address, ports and the day's plan). It runs
until SIGTERM or SIGINT. Real clock: a daily limit that runs out stays out for the run.
"""

import argparse
import hashlib
import json
import os
import signal
import threading
import time

import catalog
import faults
from control import ControlServer
from limits import Ledger, from_catalog_quota
from profiles import profile
from provider import ProviderServer

LOOPBACK = "127.0.0.1"
# A stray numbered key (GROQ_API_KEY_2 ...) would be a second key fcm sends: unset them.
NUMBERED_KEYS = range(2, 6)


def key_for(seed, env):
    return "wk-" + hashlib.sha256(f"{seed}:{env}".encode()).hexdigest()[:32]


def limits_of(provider):
    """The catalog's own limits (provider and model quotas) and the unpublished ones."""
    limits = from_catalog_quota(provider.quota)
    for model in provider.models:
        if model.quota:
            limits += from_catalog_quota({**model.quota, "scope": "model"}, only=[model.id])
    return limits + list(profile(provider.id).limits)


class World:
    """The state every provider port shares: catalog, keys, limits, plan, clock and log."""

    def __init__(self, catalog_path, seed, day_seconds, directory):
        self.seed = seed
        self.directory = directory
        self.providers = {p.id: p for p in catalog.load(catalog_path)}
        self.models = {m.key: m for p in self.providers.values() for m in p.models}
        self.keys = {p.key_env: key_for(seed, p.key_env) for p in self.providers.values() if p.key_env}
        self.account_id = "day" + hashlib.sha256(f"{seed}:account".encode()).hexdigest()[:16]
        self.ledger = Ledger({pid: limits_of(p) for pid, p in self.providers.items()})
        self.plan = faults.draw(list(self.providers.values()), profile, seed, day_seconds)
        self.profile = profile
        self.started = time.monotonic()
        self.counts = {}
        self.lock = threading.Lock()
        self.log = open(os.path.join(directory, "log.jsonl"), "a", buffering=1)

    def clock(self):
        """Seconds into the day."""
        return time.monotonic() - self.started

    def next_index(self, model_key):
        """The how-manyth request this model gets (seeds its answer)."""
        with self.lock:
            self.counts[model_key] = self.counts.get(model_key, 0) + 1
            return self.counts[model_key]

    def path_fits(self, provider_id, path):
        """Cloudflare's URL carries the account id."""
        return provider_id != "cloudflare" or f"/accounts/{self.account_id}/" in path

    def record(self, provider, model, status, outcome, prompt_tokens, started, at):
        line = {"t": round(at, 3), "at": round(time.time() - (time.monotonic() - started), 3),
                "provider": provider, "model": model, "status": status,
                "outcome": outcome, "prompt_tokens": prompt_tokens,
                "ms": round((time.monotonic() - started) * 1000)}
        with self.lock:
            self.log.write(json.dumps(line) + "\n")

    def event(self, what, **fields):
        with self.lock:
            self.log.write(json.dumps({"t": round(self.clock(), 3), "event": what, **fields}) + "\n")

    def why_no_room(self, model_key, tokens, max_tokens, now):
        """None when the model could take a request of `tokens` now, else why not."""
        model = self.models[model_key]
        prof = self.profile(model.provider)
        if self.plan.outage(model.provider, now):
            return "outage"
        if model_key == self.plan.silent:
            return "silent"
        if model_key == self.plan.paid or model.id in prof.paid_only:
            return "paid"
        reserved = max_tokens if prof.reserves_max_tokens and max_tokens else 200
        overrun = self.ledger.overrun(model.provider, model.id,
                                      {"requests": 1, "tokens": tokens + reserved}, now)
        return f"{overrun.limit.describe()} reached" if overrun else None


class Ports:
    """Each provider's listener, which an outage of the `refused` kind takes down and back."""

    def __init__(self, world):
        self.world = world
        self.servers = {pid: ProviderServer((LOOPBACK, 0), world, pid) for pid in world.providers}
        self.numbers = {pid: s.server_address[1] for pid, s in self.servers.items()}
        for server in self.servers.values():
            threading.Thread(target=server.serve_forever, daemon=True).start()

    def close(self, provider_id):
        server = self.servers[provider_id]
        server.shutdown()
        server.server_close()
        server.cut_connections()

    def reopen(self, provider_id):
        server = ProviderServer((LOOPBACK, self.numbers[provider_id]), self.world, provider_id)
        self.servers[provider_id] = server
        threading.Thread(target=server.serve_forever, daemon=True).start()


def run_outages(world, ports, stop):
    """Takes each outage's provider down and back at its times, logging both."""
    changes = sorted([(o.start, "outage_start", o) for o in world.plan.outages] +
                     [(o.end, "outage_end", o) for o in world.plan.outages], key=lambda c: c[0])
    for at, what, outage in changes:
        if stop.wait(max(0.0, at - world.clock())):
            return
        if outage.mode == "refused":
            (ports.close if what == "outage_start" else ports.reopen)(outage.provider)
        world.event(what, provider=outage.provider, mode=outage.mode)


def write_files(world, ports, control, catalog_path):
    directory = world.directory
    catalog.write_pointed(catalog_path, os.path.join(directory, "catalog.json"), ports.numbers)
    with open(os.path.join(directory, "keys.env"), "w") as f:
        for env, key in sorted(world.keys.items()):
            f.write(f"export {env}={key}\n")
        every_env = {env for p in world.providers.values() for env in p.key_envs}
        for env in sorted(every_env):
            for name in [env] + [f"{env}_{n}" for n in NUMBERED_KEYS]:
                if name not in world.keys:
                    f.write(f"unset {name}\n")
        f.write(f"export CLOUDFLARE_ACCOUNT_ID={world.account_id}\n")
    plan = world.plan
    info = {"control": f"http://{LOOPBACK}:{control.server_address[1]}", "ports": ports.numbers,
            "log": os.path.join(directory, "log.jsonl"), "silent": plan.silent, "paid": plan.paid,
            "outages": [vars(o) for o in plan.outages]}
    with open(os.path.join(directory, "world.json.tmp"), "w") as f:
        json.dump(info, f, indent=1)
    os.replace(os.path.join(directory, "world.json.tmp"), os.path.join(directory, "world.json"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--catalog", required=True)
    parser.add_argument("--seed", default="1")
    parser.add_argument("--day-seconds", type=float, default=600)
    parser.add_argument("--dir", required=True)
    args = parser.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    world = World(args.catalog, args.seed, args.day_seconds, args.dir)
    ports = Ports(world)
    control = ControlServer((LOOPBACK, 0), world)
    threading.Thread(target=control.serve_forever, daemon=True).start()
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    threading.Thread(target=run_outages, args=(world, ports, stop), daemon=True).start()
    write_files(world, ports, control, args.catalog)
    while not stop.wait(1.0):
        pass


if __name__ == "__main__":
    main()

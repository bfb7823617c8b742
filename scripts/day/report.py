"""The figures of fcm's day benchmark, from the agents' records and the world's log: printed
as a markdown table and written as JSON with the same figures.

    python3 report.py --turns turns.jsonl --log log.jsonl --world world.json --catalog catalog.json
                      [--bench-requests N] [--json-out report.json]
"""

import argparse
import json
import statistics
from collections import Counter, defaultdict

from catalog import tier_rank, tiers_by_key

LIMIT_OUTCOMES = {"rate_limit", "quota", "tpm_413"}


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def percentile(values, share):
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))]


def share(part, whole):
    return round(100.0 * part / whole, 1) if whole else None


def first_try(requests):
    """Turns whose first request was served, of all turns."""
    firsts = [r for r in requests if r["attempt"] == 1]
    served = sum(r["served"] for r in firsts)
    return {"turns": len(firsts), "servedFirstTry": served, "percent": share(served, len(firsts)),
            "turnsNeverServed": len(given_up_turns(requests))}


def given_up_turns(requests):
    served = {(r["conversation"], r["turn"]) for r in requests if r["served"]}
    return {(r["conversation"], r["turn"]) for r in requests} - served


def failures_by_status(requests):
    """Failed requests by status (0: no HTTP answer; 200: a stream that broke or was empty),
    with how fast they came back."""
    groups = defaultdict(list)
    for r in requests:
        if not r["served"]:
            groups[r["status"]].append(r["ms"])
    return {str(status): {"count": len(ms), "p50Ms": percentile(ms, 0.5), "maxMs": max(ms)}
            for status, ms in sorted(groups.items())}


def upstream(log, served_turns, requests):
    calls = [line for line in log if "status" in line]
    outcomes = Counter(line["outcome"] for line in calls)
    limits = sum(outcomes[o] for o in LIMIT_OUTCOMES)
    silent = [line["ms"] for line in calls if line["outcome"] == "silent"]
    fcm_attempts = sum(int(r.get("attempts") or 0) for r in requests)
    return {"requests": len(calls),
            "perServedTurn": round(len(calls) / served_turns, 2) if served_turns else None,
            "fcmAttemptsPerServedTurn": round(fcm_attempts / served_turns, 2) if served_turns else None,
            "limitAnswers": limits, "limitAnswersPercent": share(limits, len(calls)),
            "outcomes": dict(outcomes.most_common()),
            "silentWaitsMs": sorted(silent)}


def switches(served):
    """Consecutive served turns of one conversation on different models."""
    by_conversation = defaultdict(list)
    for r in sorted(served, key=lambda r: r["end"]):
        by_conversation[r["conversation"]].append(r["model"])
    counts = [sum(a != b for a, b in zip(models, models[1:])) for models in by_conversation.values()]
    return {"conversations": len(counts),
            "average": round(statistics.mean(counts), 2) if counts else None,
            "max": max(counts, default=None)}


def crowding(conversations, served):
    """The most live conversations whose current model was the same, at any moment."""
    events = [(c["start"], 0, c["id"], None) for c in conversations]
    events += [(r["end"], 1, r["conversation"], r["model"]) for r in served]
    events += [(c["end"], 2, c["id"], None) for c in conversations]
    current, on_model = {}, Counter()
    best = (0, None)
    for _, kind, conversation, model in sorted(events, key=lambda e: (e[0], e[1])):
        previous = current.pop(conversation, None)
        if previous:
            on_model[previous] -= 1
        if kind == 1:
            current[conversation] = model
            on_model[model] += 1
            if on_model[model] > best[0]:
                best = (on_model[model], model)
    return {"max": best[0], "model": best[1]}


def below_strongest(served, tiers):
    """Served turns whose model was weaker than the strongest tier that had room."""
    judged = [r for r in served if r.get("strongest_with_room")]
    below = [r for r in judged if tier_rank(tiers.get(r["model"], "?")) > tier_rank(r["strongest_with_room"])]
    served_tiers = Counter(tiers.get(r["model"], "?") for r in served)
    return {"judged": len(judged), "below": len(below), "percent": share(len(below), len(judged)),
            "servedByTier": dict(sorted(served_tiers.items(), key=lambda t: tier_rank(t[0]))),
            "fewestStrongWithRoom": min((r["strong_with_room"] for r in judged
                                         if r.get("strong_with_room") is not None), default=None)}


def notices_served(served, world):
    """Served turns whose answer was the paid model's notice: the world's paid model answers
    nothing else, so fcm handed a provider notice to the agent as if it were an answer."""
    return sum(r["model"] == world.get("paid") for r in served)


def first_byte(served):
    ms = [r["ttfb_ms"] for r in served if r["ttfb_ms"] is not None]
    return {"p50Ms": percentile(ms, 0.5), "p95Ms": percentile(ms, 0.95), "maxMs": max(ms, default=None)}


def failed_attempt_labels(requests):
    """What fcm's decision headers say its failed attempts got (`model:label` after the `|`)."""
    labels = Counter()
    for r in requests:
        chain = (r.get("decision") or "").split("|")
        if len(chain) >= 2:
            for step in chain[1].split("->"):
                label = step.rsplit(":", 1)[-1]
                if label != "200":
                    labels[label] += 1
    return dict(labels.most_common())


def figures(turns, log, world, tiers, bench_requests):
    requests = [r for r in turns if r["kind"] == "request"]
    conversations = [r for r in turns if r["kind"] == "conversation"]
    day = next((r for r in turns if r["kind"] == "day"), {})
    served = [r for r in requests if r["served"]]
    return {"day": {"agents": day.get("agents"), "minutes": day.get("minutes"), "seed": day.get("seed"),
                    "requests": len(requests), "servedTurns": len(served),
                    "conversations": len(conversations)},
            "firstTry": first_try(requests),
            "failuresByStatus": failures_by_status(requests),
            "upstream": upstream(log, len(served), requests),
            "switchesPerConversation": switches(served),
            "conversationsOnOneModel": crowding(conversations, served),
            "belowStrongestWithRoom": below_strongest(served, tiers),
            "timeToFirstByte": first_byte(served),
            "noticesServedAsAnswers": notices_served(served, world),
            "fcmFailedAttempts": failed_attempt_labels(requests),
            "world": {"silent": world.get("silent"), "paid": world.get("paid"),
                      "outages": world.get("outages")},
            "benchToolsUpstreamRequests": bench_requests}


def table(f):
    """The markdown table of the figures."""
    day, up = f["day"], f["upstream"]
    failures = ", ".join(f"{status}: {g['count']} (p50 {g['p50Ms']} ms, max {g['maxMs']} ms)"
                         for status, g in f["failuresByStatus"].items()) or "none"
    below, ttfb = f["belowStrongestWithRoom"], f["timeToFirstByte"]
    sw, crowd = f["switchesPerConversation"], f["conversationsOnOneModel"]
    outcomes = ", ".join(f"{k} {v}" for k, v in up["outcomes"].items())
    rows = [
        ("day", f"{day['agents']} agents, {day['minutes']} min, seed {day['seed']}: "
                f"{day['requests']} requests, {day['servedTurns']} served turns, "
                f"{day['conversations']} conversations"),
        ("served on the first try", f"{f['firstTry']['percent']}% ({f['firstTry']['servedFirstTry']} of "
                                    f"{f['firstTry']['turns']} turns; {f['firstTry']['turnsNeverServed']} never served)"),
        ("failures by status (how fast)", failures),
        ("upstream requests per served turn", f"{up['perServedTurn']} (world log; fcm's x-fcm-v2-attempts: "
                                              f"{up['fcmAttemptsPerServedTurn']})"),
        ("limit/quota answers", f"{up['limitAnswers']} of {up['requests']} upstream requests "
                                f"({up['limitAnswersPercent']}%)"),
        ("upstream outcomes", outcomes),
        ("model switches per conversation", f"average {sw['average']}, max {sw['max']} "
                                            f"({sw['conversations']} conversations)"),
        ("conversations on one model at once", f"max {crowd['max']} ({crowd['model']})"),
        ("served below the strongest tier with room", f"{below['percent']}% ({below['below']} of "
                                                      f"{below['judged']}); served by tier "
                                                      f"{below['servedByTier']}"),
        ("time to first byte", f"p50 {ttfb['p50Ms']} ms, p95 {ttfb['p95Ms']} ms, max {ttfb['maxMs']} ms"),
        ("silent model's waits", ", ".join(f"{ms} ms" for ms in up["silentWaitsMs"]) or "none"),
        ("paid-plan notices handed to the agent as answers", f["noticesServedAsAnswers"]),
        ("fewest strong models with room (S+/S, seen after a turn)", f"{below['fewestStrongWithRoom']}"),
        ("`fcm bench --tools` upstream requests (fresh world)",
         "not measured (BENCH_FIRST=1 measures it)" if f["benchToolsUpstreamRequests"] is None else f["benchToolsUpstreamRequests"]),
    ]
    lines = ["| figure | value |", "| --- | --- |"]
    lines += [f"| {name} | {value} |" for name, value in rows]
    labels = ", ".join(f"{k} {v}" for k, v in f["fcmFailedAttempts"].items()) or "none"
    lines += ["", f"fcm's failed attempts by label (x-fcm-v2-decision): {labels}"]
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--world", required=True)
    parser.add_argument("--catalog", required=True)
    parser.add_argument("--bench-requests", type=int)
    parser.add_argument("--json-out")
    args = parser.parse_args()
    with open(args.world) as f:
        world = json.load(f)
    result = figures(read_jsonl(args.turns), read_jsonl(args.log), world,
                     tiers_by_key(args.catalog), args.bench_requests)
    print(table(result))
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()

#!/usr/bin/env bash
# Benchmark: which model serves an agent, measured in one run on loopback. Each row runs
# twice: as fcm routes by default (router.prefer "quality", conversation affinity on) and
# the way it used to ("speed", affinity off), each on a server of its own after the same
# `fcm bench`.
#   - switches: one 40-turn conversation over three equally strong models whose latency
#     jitters by +-JITTER_MS around BASE_MS before every turn (the fake provider's latency
#     is changed while it runs); how often the serving model changes;
#   - spread: 8 new conversations over 4 equally strong models; how many each model gets;
#   - strongest: a tier-S+ model that answers in STRONG_MS beside a tier-B one that answers
#     at once; who serves after a bench;
#   - CPU: fcm's CPU per request over REQUESTS turns of one conversation on one
#     connection, affinity on and off (the same ordering, prefer quality).
set -euo pipefail
cd "$(dirname "$0")/.."

TURNS=${TURNS:-40}
BASE_MS=${BASE_MS:-150}
JITTER_MS=${JITTER_MS:-80}
STRONG_MS=${STRONG_MS:-400}
REQUESTS=${REQUESTS:-3000}
source scripts/common.sh
release_binaries loadgen
start_fake "$fcm"
base=${url%/v1}

# catalog FILE MODEL:TIER...: one provider on the fake, equal SWE scores.
catalog() {
  local file=$1 models="" sep=""
  shift
  for m in "$@"; do
    models+="$sep{\"id\":\"${m%%=*}\",\"tier\":\"${m##*=}\",\"sweBench\":60,\"context\":131072}"
    sep=","
  done
  echo "{\"version\":1,\"providers\":[{\"id\":\"f\",\"name\":\"Fake\",\"baseUrl\":\"$url\",\"keyRequired\":false,\"models\":[$models]}]}" > "$file"
}

# server NAME MODE CATALOG: a fresh FCM_HOME with `fcm bench` run in it, then `fcm serve`
# (MODE quality: defaults; speed: prefer speed, affinity off; quality-off: affinity off).
server() {
  export FCM_HOME="$work/$1" FCM_CATALOG="$3"
  mkdir -p "$FCM_HOME"
  case $2 in
    quality) echo '{}' ;;
    speed) echo '{"router":{"prefer":"speed","affinity":{"enabled":false}}}' ;;
    quality-off) echo '{"router":{"affinity":{"enabled":false}}}' ;;
  esac > "$FCM_HOME/config.json"
  "$fcm" bench --pings 3 --json > /dev/null
  start_serve
}

stop_serve() { kill "$serve_pid"; wait "$serve_pid" 2>/dev/null || true; serve_pid=; }

# client.py: the agent's side of each row, printing one JSON line.
cat > "$work/client.py" <<'PY'
import json, random, sys, urllib.request
proxy, fake, row = sys.argv[1], sys.argv[2], sys.argv[3]
def post(url, body, headers=None):
    req = urllib.request.Request(url, json.dumps(body).encode(), {"content-type": "application/json", **(headers or {})})
    with urllib.request.urlopen(req, timeout=60) as r:
        r.read()
        return r.headers
def ask(messages, session=None):
    h = post(f"http://{proxy}/v1/chat/completions", {"model": "fcm", "messages": messages},
             {"x-fcm-session": session} if session else None)
    return h["x-fcm-v2-model"], h.get("x-fcm-v2-affinity")
if row == "switches":
    turns, base, jitter = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
    rnd = random.Random(7)
    messages = [{"role": "system", "content": "You are a coding agent."},
                {"role": "user", "content": "Refactor the parser."}]
    served = []
    for t in range(turns):
        for m in ("ok#a", "ok#b", "ok#c"):
            post(f"{fake}/__fake/latency", {"model": m, "ms": base + rnd.randint(-jitter, jitter)})
        model, _ = ask(messages)
        served.append(model)
        messages += [{"role": "assistant", "content": f"step {t} done"}, {"role": "user", "content": "go on"}]
    for m in ("ok#a", "ok#b", "ok#c"):
        post(f"{fake}/__fake/latency", {"model": m, "ms": 0})
    switches = sum(1 for a, b in zip(served, served[1:]) if a != b)
    print(json.dumps({"switches": switches, "models": sorted(set(served))}))
elif row == "spread":
    counts = {}
    for n in range(8):
        model, _ = ask([{"role": "user", "content": f"Task {n}: fix the build."}], session=f"agent-{n}")
        counts[model] = counts.get(model, 0) + 1
    print(json.dumps({"counts": sorted(counts.values(), reverse=True)}))
else:
    model, _ = ask([{"role": "user", "content": "Write the function."}])
    print(json.dumps({"served": model}))
PY

rows="$work/rows"
: > "$rows"
for mode in quality speed; do
  catalog "$work/equal3.json" "ok#a=S" "ok#b=S" "ok#c=S"
  server "switches-$mode" "$mode" "$work/equal3.json"
  echo "switches $mode $(python3 "$work/client.py" "$proxy" "$base" switches "$TURNS" "$BASE_MS" "$JITTER_MS")" >> "$rows"
  stop_serve
  catalog "$work/equal4.json" "ok#a=S" "ok#b=S" "ok#c=S" "ok#d=S"
  server "spread-$mode" "$mode" "$work/equal4.json"
  echo "spread $mode $(python3 "$work/client.py" "$proxy" "$base" spread)" >> "$rows"
  stop_serve
  catalog "$work/strong.json" "ok#fast=B" "slow:$STRONG_MS#strong=S+"
  server "strongest-$mode" "$mode" "$work/strong.json"
  echo "strongest $mode $(python3 "$work/client.py" "$proxy" "$base" strongest)" >> "$rows"
  stop_serve
done

# CPU per request: one conversation's turn (with history) sent REQUESTS times.
body='{"model":"fcm","messages":[{"role":"system","content":"You are a coding agent."},{"role":"user","content":"Refactor the parser."},{"role":"assistant","content":"done"},{"role":"user","content":"go on"}]}'
catalog "$work/equal3.json" "ok#a=S" "ok#b=S" "ok#c=S"
for round in 1 2 3; do
  for mode in quality quality-off; do
    server "cpu-$mode-$round" "$mode" "$work/equal3.json"
    "$load" "$proxy" /v1/chat/completions "$body" --requests 300 > /dev/null
    t0=$(ticks "$serve_pid")
    out=$("$load" "$proxy" /v1/chat/completions "$body" --requests "$REQUESTS")
    echo "cpu $mode ${out%\}},\"fcmTicks\":$(( $(ticks "$serve_pid") - t0 ))}" >> "$rows"
    stop_serve
  done
done

python3 - "$rows" "$tck" <<'PY'
import json, statistics, sys
rows = [l.split(" ", 2) for l in open(sys.argv[1])]
tck = int(sys.argv[2])
get = lambda row, mode: [json.loads(j) for r, m, j in rows if r == row and m == mode]
print("| figure | quality, affinity on (default) | speed, affinity off (before) |")
print("|---|---|---|")
q, s = get("switches", "quality")[0], get("switches", "speed")[0]
print(f"| model switches in one 40-turn conversation | {q['switches']} ({len(q['models'])} model) | {s['switches']} ({len(s['models'])} models) |")
q, s = get("spread", "quality")[0], get("spread", "speed")[0]
print(f"| 8 new conversations over 4 equal models | {q['counts']} | {s['counts']} |")
q, s = get("strongest", "quality")[0], get("strongest", "speed")[0]
print(f"| served after a bench (S+ slow vs B fast) | {q['served']} | {s['served']} |")
cpu = lambda mode: [r["fcmTicks"] * 1e6 / tck / r["requests"] for r in get("cpu", mode)]
on, off = cpu("quality"), cpu("quality-off")
ratios = [a / b for a, b in zip(on, off)]
print()
print(f"fcm CPU per request, one conversation's turns on one connection, 3 rounds: affinity on "
      f"{statistics.median(on):.0f} µs, off {statistics.median(off):.0f} µs; on/off per round "
      + ", ".join(f"{r:.2f}" for r in ratios))
PY

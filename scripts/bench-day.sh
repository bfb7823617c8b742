#!/usr/bin/env bash
# Benchmark: a working day on the free tiers. A simulated world (scripts/day/world.py) stands
# in for the catalog's providers on loopback, each on a port of its own, with their published
# and unpublished limits and their ways of saying no (quota-signals.md), an outage or two,
# random server errors, a silent model, a model gone paid, heavy-tailed first tokens. AGENTS
# coding agents (scripts/day/agents.py: a third each shaped as Claude Code, Codex and Cline)
# work through `fcm serve` (model `fcm`, an empty config: fcm's defaults) for DAY_MINUTES on
# the real clock: no time scaling, so a daily limit that runs out stays out. Reports (a
# markdown table, and report.json in OUT with the same figures):
#   - agent turns served on the first try, and failures by status (how fast they came back);
#   - upstream requests per served turn, and the limit/quota answers among them;
#   - model switches per conversation, and the most conversations on one model at once;
#   - served turns below the strongest tier that had room, and time to first byte;
#   - with BENCH_FIRST=1, first: the upstream requests `fcm bench --tools` spends, in a fresh
#     world of its own (the day itself starts with no bench).
# AGENTS (8; SCARCE=1 makes it 16), DAY_MINUTES (10), SEED (1: the same seed, the same world),
# FCM_BIN (a binary to compare instead of a fresh release build), OUT (where the report, the
# agents' records, the world's log and fcm's state files go).
set -euo pipefail
cd "$(dirname "$0")/.."

SEED=${SEED:-1}
DAY_MINUTES=${DAY_MINUTES:-10}
if [ "${SCARCE:-0}" = 1 ]; then AGENTS=${AGENTS:-16}; else AGENTS=${AGENTS:-8}; fi
BENCH_FIRST=${BENCH_FIRST:-0}
OUT=${OUT:-target/bench-day/$(date +%Y%m%d-%H%M%S)-agents$AGENTS-seed$SEED}
day_seconds=$(python3 -c "print(float('$DAY_MINUTES') * 60)")

source scripts/common.sh
helper_pids=()
stop_helpers() {
  for pid in ${helper_pids[@]+"${helper_pids[@]}"}; do kill "$pid" 2>/dev/null || true; done
}
trap 'stop_helpers; cleanup' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
release_binaries
say() { echo "bench-day: $*" >&2; }

# start_world NAME: a world in $work/NAME; sets $world (its directory) and $control (its
# control URL).
start_world() {
  world=$work/$1
  python3 scripts/day/world.py --catalog providers.json --seed "$SEED" \
    --day-seconds "$day_seconds" --dir "$world" &
  helper_pids+=($!)
  world_pid=$!
  for _ in $(seq 200); do [ -s "$world/world.json" ] && break; sleep 0.05; done
  if [ ! -s "$world/world.json" ]; then
    say "the world did not start"
    exit 1
  fi
  control=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["control"])' "$world/world.json")
}

# use_world HOME: fcm pointed at the world in $world: its catalog, its keys, and a fresh
# FCM_HOME in $work/HOME with an empty config.
use_world() {
  export FCM_HOME="$work/$1" FCM_CATALOG="$world/catalog.json"
  mkdir -p "$FCM_HOME"
  echo '{}' > "$FCM_HOME/config.json"
  source "$world/keys.env"
}

upstream_requests() { grep -c '"status"' "$world/log.jsonl" || true; }

bench_requests=
if [ "$BENCH_FIRST" = 1 ]; then
  start_world bench-world
  use_world bench-home
  say "counting what \`fcm bench --tools\` spends in a fresh world"
  "$fcm" bench --tools --json > "$work/bench.json" || true
  bench_requests=$(upstream_requests)
  kill "$world_pid"
  wait "$world_pid" 2>/dev/null || true
fi

start_world day-world
use_world home
start_serve 2> "$work/serve.log"
say "$AGENTS agents for $DAY_MINUTES minutes behind fcm serve at $proxy (seed $SEED)"
python3 scripts/day/agents.py --proxy "$proxy" --control "$control" --agents "$AGENTS" \
  --minutes "$DAY_MINUTES" --seed "$SEED" --out "$work/turns.jsonl" &
helper_pids+=($!)
wait $!
kill "$serve_pid"
wait "$serve_pid" 2>/dev/null || true
serve_pid=

mkdir -p "$OUT/fcm-home"
cp "$work/turns.jsonl" "$world/log.jsonl" "$world/world.json" "$work/serve.log" "$OUT/"
[ -z "$bench_requests" ] || cp "$work/bench.json" "$OUT/bench-tools.json"
cp "$FCM_HOME"/*.json "$OUT/fcm-home/" 2>/dev/null || true
python3 scripts/day/report.py --turns "$work/turns.jsonl" --log "$world/log.jsonl" \
  --world "$world/world.json" --catalog "$FCM_CATALOG" ${bench_requests:+--bench-requests "$bench_requests"} \
  --json-out "$OUT/report.json" | tee "$OUT/report.md"
say "report, agents' records, world log and fcm's state in $OUT"

#!/usr/bin/env bash
# Benchmark: several simulated working days (scripts/bench-day.sh), and each figure's mean and
# range over them. One day's switch count varies by up to about 0.9 for the same build
# (docs/performance.md), so a change to placement is judged over several days, not one.
#   SEEDS ("1 2 3 4"): the days; FCM_BIN (default: a fresh release build) is build `a`;
#   FCM_BIN_B, when given, is build `b`: each seed's day runs for both at the same time, so
#   that the two see the same machine, and the report adds their difference seed by seed.
#   Without it the days run two at a time. OUT (where each day's directory goes, as
#   OUT/<build>/seed<N>, and spread.md); AGENTS, SCARCE and DAY_MINUTES go to each day.
set -euo pipefail
cd "$(dirname "$0")/.."

SEEDS=${SEEDS:-1 2 3 4}
OUT=${OUT:-target/bench-days/$(date +%Y%m%d-%H%M%S)}
source scripts/common.sh
release_binaries
mkdir -p "$OUT"
say() { echo "bench-days: $*" >&2; }

# day BUILD BINARY SEED: one day in the background, its output in OUT/BUILD/seedSEED.log.
day() {
  mkdir -p "$OUT/$1"
  FCM_BIN=$2 SEED=$3 OUT="$OUT/$1/seed$3" bash scripts/bench-day.sh > "$OUT/$1/seed$3.log" 2>&1 &
  pids+=($!)
}

# wait_days: waits for this round's days; says which failed.
wait_days() {
  local pid
  for pid in "${pids[@]}"; do
    wait "$pid" || say "a day failed (exit $?): see the logs under $OUT"
  done
  pids=()
}

pids=()
trap 'kill "${pids[@]}" 2>/dev/null; exit 130' INT
trap 'kill "${pids[@]}" 2>/dev/null; exit 143' TERM
if [ -n "${FCM_BIN_B:-}" ]; then
  for seed in $SEEDS; do
    say "seed $seed: a and b side by side"
    day a "$fcm" "$seed"
    day b "$FCM_BIN_B" "$seed"
    wait_days
  done
else
  set -- $SEEDS
  while [ $# -gt 0 ]; do
    say "seed $1${2:+ and seed $2}"
    day a "$fcm" "$1"
    if [ $# -gt 1 ]; then day a "$fcm" "$2"; shift; fi
    shift
    wait_days
  done
fi
python3 scripts/day/spread.py "$OUT" | tee "$OUT/spread.md"
say "days and spread.md in $OUT"

#!/usr/bin/env bash
# Fuzz: the property tests (modules named `prop` and `properties` beside the code they
# test) with a large case count, round after round with a new seed, for MINUTES
# (default 10). They cover the request parser, the SSE parser, the hold buffer in every
# validation mode, both stream translators and the gate: no panic, and each one's
# invariants. Prints the cases run per round and in all; a failing case stops the run and
# proptest prints it (and saves it under proptest-regressions/, which replays it in
# `cargo test`).
#
# CASES sets the cases per property per round (default 20000).
set -euo pipefail
cd "$(dirname "$0")/.."

minutes=${1:-10}
cases=${CASES:-20000}
# Optimised, but without the release profile's whole-program LTO: the build is minutes
# shorter and the cases run nearly as fast.
export CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16
cargo test --release --locked --quiet --no-run 2>/dev/null || cargo test --release --locked --no-run
properties=$(cargo test --release --locked --quiet -- --list prop 2>/dev/null | grep -c ': test$' || true)
if [ "$properties" -eq 0 ]; then
  echo "fuzz.sh: no property tests found" >&2
  exit 1
fi
echo "fuzz: $properties properties, $cases cases each per round, for $minutes min"
deadline=$(( $(date +%s) + minutes * 60 ))
round=0 total=0
while [ "$(date +%s)" -lt "$deadline" ]; do
  round=$((round + 1))
  seed=$(( $(date +%s%N) % 4294967296 ))
  start=$(date +%s)
  if ! PROPTEST_CASES=$cases PROPTEST_RNG_SEED=$seed \
      cargo test --release --locked --quiet -- prop > "${TMPDIR:-/tmp}/fcm-fuzz.log" 2>&1; then
    grep -v '^$' "${TMPDIR:-/tmp}/fcm-fuzz.log" | tail -60
    echo "fuzz: round $round (PROPTEST_RNG_SEED=$seed) FAILED after $total cases" >&2
    exit 1
  fi
  total=$((total + properties * cases))
  echo "fuzz: round $round, seed $seed: $((properties * cases)) cases in $(( $(date +%s) - start )) s, clean"
done
echo "fuzz: clean: $total cases in $round rounds ($properties properties x $cases cases per round)"

#!/usr/bin/env bash
# Benchmark: what a race or a fusion set costs and gains, on loopback, in one run.
# One `fcm serve` and the fake provider; one connection, REQUESTS requests per row (streams
# and whole answers). Rows:
#   - fallback: a set of two fast models (one attempt per request), the baseline;
#   - race: the same two raced (two attempts per request, the loser cancelled);
#   - fusion: the same two as a panel and a third as the judge (three attempts);
#   - fallback/race behind a slow model (answers after SLOW_MS): what a race saves.
# Reports latency p50/p99 (streams: time to first byte) and fcm's CPU per request, and
# each row as a ratio of the fallback row.
set -euo pipefail
cd "$(dirname "$0")/.."

REQUESTS=${REQUESTS:-2000}
SLOW_MS=${SLOW_MS:-200}
source scripts/common.sh
release_binaries loadgen

start_fake "$fcm"
export FCM_HOME="$work/home" FCM_CATALOG="$work/catalog.json"
cat > "$FCM_CATALOG" <<JSON
{"version":1,"providers":[{"id":"f","name":"Fake","baseUrl":"$url","keyRequired":false,
 "models":[{"id":"ok#a","tier":"S","context":131072},{"id":"ok#b","tier":"S","context":131072},
  {"id":"ok#judge","tier":"S","context":131072},{"id":"slow:$SLOW_MS","tier":"S","context":131072}]}]}
JSON
"$fcm" sets add plain f/ok#a f/ok#b > /dev/null
"$fcm" sets add quick --strategy race f/ok#a f/ok#b > /dev/null
"$fcm" sets add fused --strategy fusion --judge f/ok#judge f/ok#a f/ok#b > /dev/null
"$fcm" sets add slow-first f/slow:$SLOW_MS f/ok#a > /dev/null
"$fcm" sets add slow-race --strategy race f/slow:$SLOW_MS f/ok#a > /dev/null
start_serve

# row SET STREAM(0|1) REQUESTS: one loadgen run; prints its JSON line with fcm's ticks.
row() {
  local body="{\"model\":\"fcm:$1\",\"stream\":$([ "$2" = 1 ] && echo true || echo false),\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"
  local flag=()
  [ "$2" = 1 ] && flag=(--stream)
  local t0 out
  "$load" "$proxy" /v1/chat/completions "$body" --requests 200 "${flag[@]}" > /dev/null
  t0=$(ticks "$serve_pid")
  out=$("$load" "$proxy" /v1/chat/completions "$body" --requests "$3" "${flag[@]}")
  echo "${out%\}},\"fcmTicks\":$(( $(ticks "$serve_pid") - t0 ))}"
}

slow_requests=$(( REQUESTS / 20 > 20 ? REQUESTS / 20 : 20 ))
{
  for stream in 0 1; do
    for set in plain quick fused; do
      echo "$set $stream $REQUESTS $(row "$set" "$stream" "$REQUESTS")"
    done
  done
  for set in slow-first slow-race; do
    echo "$set 1 $slow_requests $(row "$set" 1 "$slow_requests")"
  done
} > "$work/rows"

python3 - "$work/rows" "$tck" <<'PY'
import json, sys
rows = []
for line in open(sys.argv[1]):
    name, stream, n, js = line.split(" ", 3)
    rows.append((name, stream == "1", int(n), json.loads(js)))
tck = int(sys.argv[2])
def key(r, stream):
    return r["ttfbP50Us"] if stream else r["p50Us"]
base = {s: next(r for n, st, _, r in rows if n == "plain" and st == s) for s in (False, True)}
print("| set | stream | requests | errors | p50 µs | p99 µs | ttfb p50 µs | fcm CPU µs/req | p50 vs fallback | CPU vs fallback |")
print("|---|---|---|---|---|---|---|---|---|---|")
for name, stream, n, r in rows:
    cpu = r["fcmTicks"] * 1e6 / tck / max(r["requests"], 1)
    b = base[stream]
    bcpu = b["fcmTicks"] * 1e6 / tck / max(b["requests"], 1)
    print(f"| {name} | {'yes' if stream else 'no'} | {r['requests']} | {r['errors']} | {r['p50Us']} | {r['p99Us']} | "
          f"{r['ttfbP50Us'] if stream else '-'} | {cpu:.0f} | {key(r, stream) / key(b, stream):.2f}× | {cpu / bcpu if bcpu else 0:.2f}× |")
PY

#!/usr/bin/env bash
# Soak: `fcm serve` under a long random mix of every fault the fake provider can script,
# 64 clients plus 256 concurrent long streams plus client aborts (scripts/soak-load.py), for
# SECONDS (default 600). At the end it checks that
#   - every answer read to its end was whole, in its protocol, and from one model, and every
#     tool call in it names the offered tool with arguments that parse;
#   - the server's RSS, threads and open file descriptors came back near where they started
#     once the load stopped (parked reader threads and idle upstream connections are let go
#     first: both expire after 30 s);
#   - breakers.json, history.json and usage.json parse and are mode 0600, while running and
#     after a graceful stop;
# and prints the figures. Exit 0 only when all of it holds.
#
# FCM_BIN=/path/to/fcm uses that binary instead of building one; CLIENTS and STREAMS size
# the load.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-600}
clients=${CLIENTS:-64}
streams=${STREAMS:-256}
source scripts/common.sh
release_binaries

start_fake "$fcm"

# Behaviours grouped by provider, so that a rejected key or a provider-wide pause reaches
# only its own group.
good="ok ok_stream slow:150 sse_keepalive_then_ok thinks_reasoning_content thinks_tags long_stream:3000 tool_round_trip"
flaky="empty_choices empty_content invalid_json html sse_empty sse_error_first server_500 drop_connection garbage:20000 slow_fail:200 busy_once reasoning_only tool_calls_only context_overflow"
late="sse_error_after_content stall_after_content:1500"
# Budgets: providers that count each model's requests per key down in their own header
# style (fcm must skip them before they 429), and a provider with a revoked and a good key.
budget="countdown_groq:5 countdown_cerebras:5 countdown_openrouter:5"
keys="rejects_revoked countdown_mistral:5"
tools="calls_offered_tool repeated_call_ids cut_tool_args unknown_tool text_then_cut_tool_args tool_finish_without_calls hermes_text_call kimi_text_call breaks_offered_tool describes_offered_tool"
models() { for m in $1; do printf '{"id":"%s","tier":"%s","context":131072},' "$m" "$2"; done | sed 's/,$//'; }
provider() { printf '{"id":"%s","name":"%s","baseUrl":"%s","keyRequired":false,"models":[%s]}' "$1" "$1" "$url" "$(models "$2" "$3")"; }
cat > "$work/catalog.json" <<JSON
{"version":1,"providers":[
 $(provider good "$good" A), $(provider flaky "$flaky" S), $(provider late "$late" S),
 $(provider tools "$tools" S), $(provider hangs "hang" S), $(provider limited "rate_limit:2" S), $(provider denied "auth_401" S),
 $(provider budget "$budget" S | sed 's/"models":/"quota":{"requestsPerMinute":600},"models":/'),
 $(provider keys "$keys" S | sed 's/"keyRequired":false/"keyRequired":true,"apiKeyEnv":["SOAK_KEY"]/')]}
JSON
export SOAK_KEY=fake-key-REVOKED-soak-0123456789 SOAK_KEY_2=fake-key-GOOD-soak-0123456789
export FCM_HOME="$work/home" FCM_CATALOG="$work/catalog.json"
mkdir -p "$FCM_HOME"
# Short timeouts so hanging and stalling models cost seconds, not minutes.
cat > "$FCM_HOME/config.json" <<JSON
{"router": {"failover": {"maxAttempts": 4, "totalBudgetMs": 20000, "bodyReadTimeoutMs": 3000,
  "firstTokenTimeoutMs": 3000, "streamStallTimeoutMs": 1000},
  "breaker": {"initialCooldownMs": 2000, "maxCooldownMs": 10000}}}
JSON
start_serve --max-in-flight 512 2> "$work/serve.err"

rss() { awk '/VmRSS/ {print $2}' "/proc/$serve_pid/status"; }
hwm() { awk '/VmHWM/ {print $2}' "/proc/$serve_pid/status"; }
threads() { awk '/Threads/ {print $2}' "/proc/$serve_pid/status"; }
fds() { ls "/proc/$serve_pid/fd" | wc -l; }
in_flight() { curl -s "http://$proxy/health" | python3 -c 'import json,sys; print(json.load(sys.stdin)["inFlight"])'; }
# state_ok: both state files parse and are 0600 (missing is fine: nothing to write yet).
state_ok() {
  local f
  for f in breakers.json history.json usage.json; do
    [ -e "$FCM_HOME/$f" ] || continue
    python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$FCM_HOME/$f" || { echo "$f does not parse"; return 1; }
    [ "$(stat -c %a "$FCM_HOME/$f")" = 600 ] || { echo "$f is not 0600"; return 1; }
  done
}

# A few requests first, so the start figures include what any first request sets up.
python3 scripts/soak-load.py "$proxy" 2 4 0 good/ok >/dev/null || true
sleep 1
rss0=$(rss) threads0=$(threads) fds0=$(fds)

pinned="good/ok good/ok_stream good/thinks_tags flaky/empty_choices flaky/sse_empty flaky/garbage:20000 late/sse_error_after_content late/stall_after_content:1500 tools/cut_tool_args tools/unknown_tool tools/hermes_text_call tools/repeated_call_ids hangs/hang limited/rate_limit:2 denied/auth_401 budget/countdown_groq:5 keys/rejects_revoked"
status=0
# shellcheck disable=SC2086
python3 scripts/soak-load.py "$proxy" "$seconds" "$clients" "$streams" $pinned > "$work/load.json" &
load_pid=$!
peak_threads=0 peak_fds=0 state_checks=0 state_bad=0
while kill -0 $load_pid 2>/dev/null; do
  t=$(threads); f=$(fds)
  [ "$t" -gt "$peak_threads" ] && peak_threads=$t
  [ "$f" -gt "$peak_fds" ] && peak_fds=$f
  state_checks=$((state_checks + 1))
  state_ok >/dev/null || state_bad=$((state_bad + 1))
  sleep 2
done
wait $load_pid || status=1
peak_rss=$(hwm)
rss_end=$(rss)

# Let the running answers finish, parked readers and idle connections expire.
for _ in $(seq 60); do [ "$(in_flight)" -le 1 ] && break; sleep 1; done
sleep 35
python3 scripts/soak-load.py "$proxy" 1 1 0 good/ok >/dev/null || true
sleep 1
rss1=$(rss) threads1=$(threads) fds1=$(fds)
kill -TERM "$serve_pid"
wait "$serve_pid" || { echo "soak.sh: fcm serve did not stop cleanly" >&2; status=1; }
serve_pid=
state_ok || status=1
[ "$state_bad" -eq 0 ] || status=1

# Near where they started: threads and descriptors within a few of the start, RSS within
# what the allocator keeps of a peak.
[ "$threads1" -le $((threads0 + 8)) ] || { echo "soak.sh: threads $threads0 -> $threads1" >&2; status=1; }
[ "$fds1" -le $((fds0 + 16)) ] || { echo "soak.sh: file descriptors $fds0 -> $fds1" >&2; status=1; }
[ "$rss1" -le $((rss0 + 65536)) ] || { echo "soak.sh: RSS ${rss0} kB -> ${rss1} kB" >&2; status=1; }
if grep -q panicked "$work/serve.err"; then
  echo "soak.sh: fcm serve reported a panic:" >&2
  grep panicked "$work/serve.err" | head -5 >&2
  status=1
fi

python3 - "$work/load.json" <<PY
import json, sys
r = json.load(open(sys.argv[1]))
print(f"soak: {r['seconds']} s, {r['requests']} requests ({r['requests'] / r['seconds']:.0f}/s), $clients clients + $streams streams")
for k, v in r["counts"].items():
    print(f"  {k}: {v}")
for p in r["problems"]:
    print(f"  problem: {p}")
print(f"  RSS kB: start $rss0, peak $peak_rss, end of load $rss_end, settled $rss1")
print(f"  threads: start $threads0, peak $peak_threads, settled $threads1")
print(f"  file descriptors: start $fds0, peak $peak_fds, settled $fds1")
print(f"  state files: {$state_checks} checks while running, {$state_bad} bad; valid after stop: {'yes' if $status == 0 else 'see above'}")
PY
# What the budget providers were sent, and how often they still answered 429 (a request
# that crosses a window's reset in flight can; fcm's own skips never do).
python3 - "$FCM_HOME/usage.json" <<'PY'
import json, sys
usage = json.load(open(sys.argv[1]))
rows = [r for d in usage["days"] for r in d["rows"] if r["provider"] in ("budget", "keys")]
print(f"  budgets: {sum(r['requests'] for r in rows)} requests sent to the budget providers, "
      f"{sum(r['rateLimited'] for r in rows)} answered 429")
PY
[ "$status" -eq 0 ] && echo "soak: clean" || echo "soak: FAILED"
exit "$status"

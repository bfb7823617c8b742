#!/usr/bin/env bash
# Benchmark: what `fcm serve` adds on top of calling a provider directly, on loopback.
# The fake provider (the Rust one from src/fake_provider.rs) answers at once; the load
# generator is examples/loadgen.rs. All figures come from one run, compared as differences
# and ratios (these machines are noisy). Reports:
#   - added latency p50/p99, non-stream, one request at a time
#   - added time to first byte for streams
#   - throughput at 64 keep-alive connections, via fcm vs direct
#   - fcm's peak RSS under that load and with 256 open streams
set -euo pipefail
cd "$(dirname "$0")/.."

REQUESTS=${REQUESTS:-5000}
SECONDS_LOAD=${SECONDS_LOAD:-8}

cargo build --release --locked --quiet
cargo build --release --locked --quiet --example loadgen
fcm=$PWD/target/release/fcm
load=$PWD/target/release/examples/loadgen
source scripts/common.sh
start_fake "$fcm"
direct=${url#http://}; direct=${direct%/v1}

cat > "$work/catalog.json" <<JSON
{"version":1,"providers":[{"id":"fake","name":"Fake","baseUrl":"$url","keyRequired":false,
 "models":[{"id":"ok","tier":"S","context":131072},{"id":"long_stream:6000","tier":"C","context":131072}]}]}
JSON
export FCM_CATALOG="$work/catalog.json"
# Starts `fcm serve` with its own FCM_HOME; sets $proxy (host:port) and $serve_pid.
start_serve() {
  export FCM_HOME="$work/$1"
  "$fcm" serve --port 0 --quiet --max-in-flight 512 &
  serve_pid=$!
  for _ in $(seq 200); do [ -s "$FCM_HOME/serve.json" ] && break; sleep 0.05; done
  proxy=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["address"])' "$FCM_HOME/serve.json")
}
hwm() { awk '/VmHWM/ {print $2}' "/proc/$1/status"; }
start_serve home1

msg='"messages":[{"role":"user","content":"What is 17 + 25?"}]'
plain_direct="{\"model\":\"ok\",$msg}"
plain_proxy="{\"model\":\"fcm\",$msg}"
stream_direct="{\"model\":\"ok\",\"stream\":true,$msg}"
stream_proxy="{\"model\":\"fcm\",\"stream\":true,$msg}"
path=/v1/chat/completions

run() { "$load" "$@"; }
# Warm both paths (connection pools, page cache).
run "$direct" $path "$plain_direct" --requests 500 >/dev/null
run "$proxy" $path "$plain_proxy" --requests 500 >/dev/null

d1=$(run "$direct" $path "$plain_direct" --requests "$REQUESTS")
p1=$(run "$proxy" $path "$plain_proxy" --requests "$REQUESTS")
ds=$(run "$direct" $path "$stream_direct" --requests "$REQUESTS" --stream)
ps=$(run "$proxy" $path "$stream_proxy" --requests "$REQUESTS" --stream)
dt=$(run "$direct" $path "$plain_direct" --conns 64 --seconds "$SECONDS_LOAD")
pt=$(run "$proxy" $path "$plain_proxy" --conns 64 --seconds "$SECONDS_LOAD")
rss_load=$(hwm "$serve_pid")

# 256 streams held open at once (each lasts 6 s) through fcm; peak open count sampled
# from /health. Run on a fresh server, then again on the loaded one (the worst case).
long="{\"model\":\"fcm:fake/long_stream:6000\",\"stream\":true,$msg}"
open_streams() {
  run "$proxy" $path "$long" --conns 256 --requests 256 --stream > "$work/long.json" &
  local long_pid=$!
  peak_streams=0
  while kill -0 $long_pid 2>/dev/null; do
    open=$(curl -s "http://$proxy/health" | python3 -c 'import json,sys; print(json.load(sys.stdin)["inFlight"] - 1)' 2>/dev/null || echo 0)
    [ "$open" -gt "$peak_streams" ] && peak_streams=$open
    sleep 0.2
  done
}
loaded_pid=$serve_pid
loaded_proxy=$proxy
start_serve home2
open_streams
rss_streams=$(hwm "$serve_pid")
long_result=$(cat "$work/long.json")
kill "$serve_pid"; wait "$serve_pid" 2>/dev/null || true
serve_pid=$loaded_pid
proxy=$loaded_proxy
open_streams
rss_both=$(hwm "$serve_pid")

python3 - "$d1" "$p1" "$ds" "$ps" "$dt" "$pt" "$rss_load" "$rss_streams" "$peak_streams" "$long_result" "$rss_both" <<'PY'
import json, sys
d1, p1, ds, ps, dt, pt = (json.loads(a) for a in sys.argv[1:7])
rss_load, rss_streams, peak_streams = int(sys.argv[7]), int(sys.argv[8]), int(sys.argv[9])
long = json.loads(sys.argv[10])
rss_both = int(sys.argv[11])
ms = lambda us: us / 1000
print(f"non-stream, 1 connection, {p1['requests']} requests:")
print(f"  direct p50 {ms(d1['p50Us']):.3f} ms  p99 {ms(d1['p99Us']):.3f} ms")
print(f"  via fcm p50 {ms(p1['p50Us']):.3f} ms  p99 {ms(p1['p99Us']):.3f} ms")
print(f"  added   p50 {ms(p1['p50Us'] - d1['p50Us']):.3f} ms (target <= 0.5)  p99 {ms(p1['p99Us'] - d1['p99Us']):.3f} ms (target <= 2)")
print(f"stream, 1 connection: time to first byte p50 direct {ms(ds['ttfbP50Us']):.3f} ms, via fcm {ms(ps['ttfbP50Us']):.3f} ms, "
      f"added {ms(ps['ttfbP50Us'] - ds['ttfbP50Us']):.3f} ms (p99 added {ms(ps['ttfbP99Us'] - ds['ttfbP99Us']):.3f} ms)")
print(f"throughput, 64 keep-alive connections: direct {dt['rps']:.0f} req/s, via fcm {pt['rps']:.0f} req/s "
      f"(target >= 5000), errors {pt['errors']}, ratio {pt['rps'] / dt['rps']:.2f}")
print(f"fcm peak RSS (target <= 40 MB): {rss_load / 1024:.1f} MB under the 64-connection load; "
      f"{rss_streams / 1024:.1f} MB with {peak_streams} streams open at once (fresh server; "
      f"{long['requests']}/256 completed, {long['errors']} errors); {rss_both / 1024:.1f} MB for the same streams right after the load")
PY

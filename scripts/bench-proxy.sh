#!/usr/bin/env bash
# Benchmark: what `fcm serve` adds on top of calling a provider directly, on loopback.
# Two upstreams answer at once: the Rust fake provider (src/fake_provider/) and a minimal
# single-threaded asyncio server (scripts/asyncio-upstream.py), the baseline for CPU per
# answer. The load generator is examples/loadgen.rs. All figures come from one run, compared
# as differences and ratios (these machines are noisy). For each upstream it reports:
#   - added latency p50/p99, non-stream, one request at a time
#   - added time to first byte for streams
#   - throughput at 64 keep-alive connections, via fcm vs direct
#   - CPU per request of fcm and per answer of the upstream (utime+stime from /proc/PID/stat)
#   - fcm's peak RSS under that load and with 256 open streams
#   - the floor of fcm's design: examples/relay_floor.rs (one blocking thread per client
#     connection, as fcm serve has, relaying bytes and nothing else) under the same load;
#     fcm's CPU less the floor's is what fcm's own work costs
# and ends with one markdown table of all of it beside the targets.
#
# FCM_BIN=/path/to/fcm, LOADGEN_BIN=/path/to/loadgen and RELAY_BIN=/path/to/relay_floor use
# those binaries instead of building them; REQUESTS (one-connection runs) and SECONDS_LOAD
# (64-connection runs) size it.
# FAKE_BIN=/path/to/fcm runs the fake provider from another build, so two builds of fcm (glibc
# and musl, say) are compared against the same upstream.
# EXTRA_MODELS=N adds N more models to the catalog, ranked after `ok` (a real catalog has
# hundreds: what planning costs per candidate shows), every tenth of them under a quota.
set -euo pipefail
cd "$(dirname "$0")/.."

REQUESTS=${REQUESTS:-5000}
SECONDS_LOAD=${SECONDS_LOAD:-8}
source scripts/common.sh
release_binaries loadgen
if [ -n "${RELAY_BIN:-}" ]; then
  relay=$RELAY_BIN
else
  cargo build --release --locked --quiet --example relay_floor
  relay=${CARGO_TARGET_DIR:-$PWD/target}/release/examples/relay_floor
fi
# The interpreter itself (not a version manager's shim), so $! is the server's pid.
python=$(python3 -c 'import sys; print(sys.executable)')

serve_pids=()
trap 'kill "${asyncio_pid:-}" "${relay_pid:-}" "${serve_pids[@]}" 2>/dev/null || true; cleanup' EXIT
start_fake "${FAKE_BIN:-$fcm}"
fake_url=$url
"$python" scripts/asyncio-upstream.py > "$work/asyncio.url" &
asyncio_pid=$!
for _ in $(seq 100); do [ -s "$work/asyncio.url" ] && break; sleep 0.05; done
asyncio_url=$(head -n1 "$work/asyncio.url")
[ -n "$asyncio_url" ] || { echo "bench-proxy.sh: the asyncio upstream did not start" >&2; exit 1; }

# serve_in HOME_NAME CATALOG: `fcm serve` with its own FCM_HOME and catalog; sets $proxy
# (host:port) and $serve_pid.
serve_in() {
  export FCM_HOME="$work/$1" FCM_CATALOG="$2"
  start_serve --max-in-flight 512
  serve_pids+=("$serve_pid")
}
hwm() { awk '/VmHWM/ {print $2}' "/proc/$1/status"; }

msg='"messages":[{"role":"user","content":"What is 17 + 25?"}]'
path=/v1/chat/completions
run() { "$load" "$@"; }
# measured UPSTREAM_PID ARGS...: a loadgen run; its JSON line gains the CPU ticks that fcm
# ($serve_pid) and the upstream spent during it.
measured() {
  local up=$1; shift
  local f0 u0 out
  f0=$(ticks "$serve_pid"); u0=$(ticks "$up")
  out=$(run "$@")
  echo "${out%\}},\"fcmTicks\":$(( $(ticks "$serve_pid") - f0 )),\"upTicks\":$(( $(ticks "$up") - u0 ))}"
}

# 256 streams held open at once (each lasts 6 s) through fcm; peak open count sampled
# from /health. Sets $peak_streams; the loadgen line goes to $work/long.json.
open_streams() {
  local long="{\"model\":\"fcm:$1/long_stream:6000\",\"stream\":true,$msg}"
  run "$proxy" $path "$long" --conns 256 --requests 256 --stream > "$work/long.json" &
  local long_pid=$!
  peak_streams=0
  while kill -0 $long_pid 2>/dev/null; do
    open=$(curl -s "http://$proxy/health" | python3 -c 'import json,sys; print(json.load(sys.stdin)["inFlight"] - 1)' 2>/dev/null || echo 0)
    [ "$open" -gt "$peak_streams" ] && peak_streams=$open
    sleep 0.2
  done
  wait $long_pid || true
}

# bench NAME BASE_URL UPSTREAM_PID: the whole set of runs against one upstream, written as
# one JSON object to $work/NAME.json.
bench() {
  local name=$1 base=$2 up=$3
  local direct=${base#http://}; direct=${direct%/v1}
  local extra
  extra=$(python3 -c '
import json, sys
n = int(sys.argv[1])
print("".join("," + json.dumps({"id": f"ok#extra{i}", "tier": "B", "context": 131072,
    **({"quota": {"requestsPerMinute": 1000000, "requestsPerDay": 100000000}} if i % 10 == 0 else {})})
    for i in range(n)))' "${EXTRA_MODELS:-0}")
  cat > "$work/catalog-$name.json" <<JSON
{"version":1,"providers":[{"id":"$name","name":"$name","baseUrl":"$base","keyRequired":false,
 "models":[{"id":"ok","tier":"S","context":131072},{"id":"long_stream:6000","tier":"C","context":131072}$extra]}]}
JSON
  serve_in "home-$name" "$work/catalog-$name.json"
  local plain_direct="{\"model\":\"ok\",$msg}" plain_proxy="{\"model\":\"fcm\",$msg}"
  local stream_direct="{\"model\":\"ok\",\"stream\":true,$msg}" stream_proxy="{\"model\":\"fcm\",\"stream\":true,$msg}"
  # Warm both paths (connection pools, page cache).
  run "$direct" $path "$plain_direct" --requests 500 >/dev/null
  run "$proxy" $path "$plain_proxy" --requests 500 >/dev/null

  local d1 p1 ds ps dt pt rss_load rss_streams rss_both long_result streams_fresh
  d1=$(measured "$up" "$direct" $path "$plain_direct" --requests "$REQUESTS")
  p1=$(measured "$up" "$proxy" $path "$plain_proxy" --requests "$REQUESTS")
  ds=$(measured "$up" "$direct" $path "$stream_direct" --requests "$REQUESTS" --stream)
  ps=$(measured "$up" "$proxy" $path "$stream_proxy" --requests "$REQUESTS" --stream)
  dt=$(measured "$up" "$direct" $path "$plain_direct" --conns 64 --seconds "$SECONDS_LOAD")
  pt=$(measured "$up" "$proxy" $path "$plain_proxy" --conns 64 --seconds "$SECONDS_LOAD")
  rss_load=$(hwm "$serve_pid")

  # The design's floor under the same load: the relay's CPU, sampled as fcm's is.
  local relay_port ft
  relay_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  "$relay" "127.0.0.1:$relay_port" "$direct" > "$work/relay.out" &
  relay_pid=$!
  for _ in $(seq 100); do [ -s "$work/relay.out" ] && break; sleep 0.05; done
  run "127.0.0.1:$relay_port" $path "$plain_direct" --requests 500 >/dev/null
  local fcm_pid=$serve_pid
  serve_pid=$relay_pid
  ft=$(measured "$up" "127.0.0.1:$relay_port" $path "$plain_direct" --conns 64 --seconds "$SECONDS_LOAD")
  serve_pid=$fcm_pid
  kill "$relay_pid"; wait "$relay_pid" 2>/dev/null || true

  # The streams on a fresh server, then again on the loaded one (the worst case).
  local loaded_pid=$serve_pid loaded_proxy=$proxy
  serve_in "home-$name-streams" "$work/catalog-$name.json"
  open_streams "$name"
  rss_streams=$(hwm "$serve_pid")
  streams_fresh=$peak_streams
  long_result=$(cat "$work/long.json")
  kill "$serve_pid"; wait "$serve_pid" 2>/dev/null || true
  serve_pid=$loaded_pid
  proxy=$loaded_proxy
  open_streams "$name"
  rss_both=$(hwm "$serve_pid")
  kill "$serve_pid"; wait "$serve_pid" 2>/dev/null || true
  cat > "$work/$name.json" <<JSON
{"d1":$d1,"p1":$p1,"ds":$ds,"ps":$ps,"dt":$dt,"pt":$pt,"ft":$ft,"rssLoad":$rss_load,"rssStreams":$rss_streams,
 "peakStreams":$streams_fresh,"peakStreamsLoaded":$peak_streams,"long":$long_result,"longLoaded":$(cat "$work/long.json"),"rssBoth":$rss_both}
JSON
}

bench fake "$fake_url" "$fake_pid"
bench asyncio "$asyncio_url" "$asyncio_pid"

python3 - "$work/fake.json" "$work/asyncio.json" "$tck" <<'PY'
import json, sys
runs = {"Rust fake provider": json.load(open(sys.argv[1])), "asyncio": json.load(open(sys.argv[2]))}
tck = int(sys.argv[3])
ms = lambda us: us / 1000
# CPU milliseconds per completed request of fcm ("fcmTicks") or of the upstream ("upTicks").
cpu = lambda r, key: r[key] * 1000 / tck / max(r["requests"], 1)

for name, r in runs.items():
    d1, p1, ds, ps, dt, pt = (r[k] for k in ("d1", "p1", "ds", "ps", "dt", "pt"))
    print(f"## upstream: {name}")
    print(f"non-stream, 1 connection, {p1['requests']} requests:")
    print(f"  direct p50 {ms(d1['p50Us']):.3f} ms  p99 {ms(d1['p99Us']):.3f} ms")
    print(f"  via fcm p50 {ms(p1['p50Us']):.3f} ms  p99 {ms(p1['p99Us']):.3f} ms")
    print(f"  added   p50 {ms(p1['p50Us'] - d1['p50Us']):.3f} ms  p99 {ms(p1['p99Us'] - d1['p99Us']):.3f} ms")
    print(f"stream, 1 connection: time to first byte p50 direct {ms(ds['ttfbP50Us']):.3f} ms, via fcm {ms(ps['ttfbP50Us']):.3f} ms, "
          f"added {ms(ps['ttfbP50Us'] - ds['ttfbP50Us']):.3f} ms (p99 added {ms(ps['ttfbP99Us'] - ds['ttfbP99Us']):.3f} ms)")
    print(f"throughput, 64 keep-alive connections: direct {dt['rps']:.0f} req/s (errors {dt['errors']}), "
          f"via fcm {pt['rps']:.0f} req/s (errors {pt['errors']}), ratio {pt['rps'] / dt['rps']:.2f}")
    print(f"cpu at 64 connections: fcm {cpu(pt, 'fcmTicks'):.4f} ms/request; upstream {cpu(pt, 'upTicks'):.4f} ms/answer "
          f"via fcm, {cpu(dt, 'upTicks'):.4f} ms/answer direct")
    print(f"design floor (relay_floor), 64 connections: {r['ft']['rps']:.0f} req/s (errors {r['ft']['errors']}), "
          f"{cpu(r['ft'], 'fcmTicks'):.4f} ms cpu/request; fcm's own work {cpu(pt, 'fcmTicks') - cpu(r['ft'], 'fcmTicks'):.4f} ms/request")
    print(f"cpu at 1 connection: fcm {cpu(p1, 'fcmTicks'):.4f} ms/request non-stream, {cpu(ps, 'fcmTicks'):.4f} stream; "
          f"upstream {cpu(d1, 'upTicks'):.4f} ms/answer non-stream direct, {cpu(ds, 'upTicks'):.4f} stream direct")
    print(f"fcm peak RSS: {r['rssLoad'] / 1024:.1f} MB under the 64-connection load; "
          f"{r['rssStreams'] / 1024:.1f} MB with {r['peakStreams']} streams open at once (fresh server; "
          f"{r['long']['requests']}/256 completed, {r['long']['errors']} errors); {r['rssBoth'] / 1024:.1f} MB "
          f"for the same streams right after the load ({r['longLoaded']['requests']}/256 completed, {r['longLoaded']['errors']} errors)")
    print()

verdict = lambda ok: "ok" if ok else "MISSED"
rows = []  # (label, {upstream: (text, ok or None)}, target)
def row(label, target, f):
    rows.append((label, {n: f(r) for n, r in runs.items()}, target))

def added(kd, kp, key, limit=None):
    def f(r):
        a = ms(r[kp][key] - r[kd][key])
        return (f"{a:+.3f} ms ({ms(r[kd][key]):.3f} → {ms(r[kp][key]):.3f})", None if limit is None else a <= limit)
    return f
row("added latency p50, non-stream, 1 conn", "", added("d1", "p1", "p50Us"))
row("added latency p99, non-stream, 1 conn", "≤ 1 ms", added("d1", "p1", "p99Us", 1.0))
row("added TTFB p50, stream, 1 conn", "", added("ds", "ps", "ttfbP50Us"))
row("added TTFB p99, stream, 1 conn", "≤ 1 ms", added("ds", "ps", "ttfbP99Us", 1.0))
row("throughput at 64 conns, via fcm / direct", "",
    lambda r: (f"{r['pt']['rps']:.0f} / {r['dt']['rps']:.0f} req/s (errors {r['pt']['errors']}/{r['dt']['errors']})", None))
row("throughput via fcm, % of direct", "≥ 25%",
    lambda r: (f"{100 * r['pt']['rps'] / r['dt']['rps']:.0f}%", r['pt']['rps'] >= 0.25 * r['dt']['rps']))
row("fcm cpu ms/request, 64 conns", "", lambda r: (f"{cpu(r['pt'], 'fcmTicks'):.4f}", None))
row("upstream cpu ms/answer, 64 conns: via fcm / direct", "",
    lambda r: (f"{cpu(r['pt'], 'upTicks'):.4f} / {cpu(r['dt'], 'upTicks'):.4f}", None))
def cpu_ratio(r):
    f, u, ud = cpu(r['pt'], 'fcmTicks'), cpu(r['pt'], 'upTicks'), cpu(r['dt'], 'upTicks')
    return (f"{f / u:.2f}× (vs direct {f / ud:.2f}×)", f <= 4 * u)
row("fcm cpu / upstream cpu (same run)", "≤ 4× the asyncio server's", cpu_ratio)
row("design floor (relay_floor) cpu ms/request, 64 conns / its % of direct", "",
    lambda r: (f"{cpu(r['ft'], 'fcmTicks'):.4f} / {100 * r['ft']['rps'] / r['dt']['rps']:.0f}%", None))
row("fcm's own work: fcm cpu − floor cpu, ms/request", "",
    lambda r: (f"{cpu(r['pt'], 'fcmTicks') - cpu(r['ft'], 'fcmTicks'):.4f}", None))
row("fcm cpu ms/request, 1 conn, non-stream / stream", "",
    lambda r: (f"{cpu(r['p1'], 'fcmTicks'):.4f} / {cpu(r['ps'], 'fcmTicks'):.4f}", None))
row("fcm peak RSS under the 64-conn load", "≤ 20 MB",
    lambda r: (f"{r['rssLoad'] / 1024:.1f} MB", r['rssLoad'] <= 20 * 1024))
row("fcm peak RSS, 256 streams open: fresh / after the load", "≤ 40 MB",
    lambda r: (f"{r['rssStreams'] / 1024:.1f} / {r['rssBoth'] / 1024:.1f} MB ({r['peakStreams']}/{r['peakStreamsLoaded']} open)",
               max(r['rssStreams'], r['rssBoth']) <= 40 * 1024))

names = list(runs)
print("| figure | " + " | ".join(names) + " | target |")
print("|---|" + "---|" * len(names) + "---|")
for label, cells, target in rows:
    texts = []
    for n in names:
        text, ok = cells[n]
        # The CPU target is set against the asyncio server; the fake provider's column is for reference.
        if ok is not None and not (label.startswith("fcm cpu /") and n != "asyncio"):
            text += f" **{verdict(ok)}**"
        texts.append(text)
    print(f"| {label} | " + " | ".join(texts) + f" | {target} |")
PY

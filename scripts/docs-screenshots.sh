#!/usr/bin/env bash
# Regenerates the pictures in docs/images/ from a real run, on loopback only:
#   fcm-top.png            `fcm top` in a 150x40 tmux pane, captured with its colours
#                          (tmux capture-pane -e) and drawn by headless Chromium
#                          (scripts/ansi-to-html.py);
#   grafana-dashboard.png  docs/grafana/fcm.json's panels, their own queries evaluated by a
#                          real Prometheus that scraped fcm serve's /metrics every 2 s during
#                          the run, drawn by scripts/render-dashboard.py and Chromium (Grafana
#                          itself is not installed: the picture says so).
# The run: the fake provider behind a catalog of misbehaving models (one always failing,
# one failing its first requests, one rate-limited, one with a daily budget, slow ones),
# and ~90 s of scripted traffic in 12 conversations, some turns after a tool ran (a build
# log for compression). Needs tmux, chromium, prometheus
# (promtool checks /metrics too) and python3: Debian's packages, installed when missing.
# Usage: scripts/docs-screenshots.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-90}

need=()
command -v tmux >/dev/null || need+=(tmux)
command -v chromium >/dev/null || need+=(chromium)
command -v prometheus >/dev/null || need+=(prometheus)
fc-list 2>/dev/null | grep -qi "DejaVu Sans Mono" || need+=(fonts-dejavu-core)
if [ ${#need[@]} -gt 0 ]; then
  echo "docs-screenshots: installing ${need[*]}" >&2
  sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq && $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

cargo build --locked --quiet
fcm=$PWD/target/debug/fcm
source scripts/common.sh
session="fcm-docs-$$"
trap 'tmux kill-session -t "$session" 2>/dev/null || true; kill "${prom_pid:-}" "${traffic_pid:-}" 2>/dev/null || true; cleanup' EXIT
start_fake "$fcm"
cat > "$work/catalog.json" <<JSON
{"version":1,"providers":[
 {"id":"demo","name":"Demo","baseUrl":"$url","keyRequired":false,"models":[
  {"id":"server_500","label":"Always 500","tier":"S+","context":131072},
  {"id":"fails_first:8","label":"Flaky at first","tier":"S","context":131072},
  {"id":"rate_limit:20","label":"Rate limited","tier":"A+","context":131072},
  {"id":"ok_stream","label":"Fast","tier":"A","context":131072},
  {"id":"slow:400","label":"Slow","tier":"A-","context":131072},
  {"id":"slow:900","label":"Slower","tier":"B+","context":131072}]},
 {"id":"budget","name":"Budget","baseUrl":"$url","keyRequired":false,"quota":{"requestsPerDay":600},"models":[
  {"id":"countdown_groq:400","label":"Daily budget","tier":"S","context":131072}]}]}
JSON
export FCM_HOME="$work/home" FCM_CATALOG="$work/catalog.json"
start_serve
echo "docs-screenshots: fcm serve at $proxy" >&2

# The reference parser and linter of the text format.
if command -v promtool >/dev/null; then
  curl -sf "http://$proxy/metrics" | promtool check metrics
fi

prom_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat > "$work/prometheus.yml" <<YAML
global: {scrape_interval: 2s, evaluation_interval: 2s}
scrape_configs:
  - job_name: fcm
    static_configs: [{targets: ["$proxy"]}]
YAML
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/tsdb" \
  --web.listen-address="127.0.0.1:$prom_port" --log.level=warn > "$work/prometheus.log" 2>&1 &
prom_pid=$!
prom="http://127.0.0.1:$prom_port"
for _ in $(seq 100); do curl -sf "$prom/-/ready" >/dev/null && break; sleep 0.1; done
start=$(date +%s)

# Traffic: 3 clients for $seconds s, each request in one of 12 conversations; some pinned,
# some streamed.
python3 - "$proxy" "$seconds" > "$work/traffic.log" 2>&1 <<'PY' &
import json, random, sys, threading, time, urllib.request, urllib.error
proxy, seconds = sys.argv[1], float(sys.argv[2])
end = time.time() + seconds
def client(n):
    rnd = random.Random(n)
    while time.time() < end:
        # Mostly model "fcm"; some pinned, the failing models too (a pinned request gets
        # its one attempt whatever the breaker says: they open, cool down, try again).
        model = rnd.choice(["fcm"] * 12 + ["fcm:demo/slow:400", "fcm:demo/slow:900",
                           "fcm:demo/ok_stream", "fcm:demo/server_500", "fcm:demo/fails_first:8"])
        messages = [{"role": "user", "content": "What is 17 + 25?"}]
        if rnd.random() < 0.3:
            # A turn after a tool ran: a coloured build log for compression to clean.
            log = "\x1b[1m\x1b[32m   Compiling\x1b[0m demo v0.1.0\n" + "\x1b[33mwarning\x1b[0m: unused\n" * rnd.randrange(5, 40)
            messages += [{"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function",
                          "function": {"name": "bash", "arguments": "{\"command\":\"cargo build\"}"}}]},
                         {"role": "tool", "tool_call_id": "call_1", "content": log}]
        body = {"model": model, "stream": rnd.random() < 0.5,
                "prompt_cache_key": f"conversation-{rnd.randrange(12)}", "messages": messages}
        req = urllib.request.Request(f"http://{proxy}/v1/chat/completions", json.dumps(body).encode(),
                                     {"content-type": "application/json"})
        try:
            urllib.request.urlopen(req, timeout=60).read()
        except urllib.error.HTTPError as e:
            e.read()
        except Exception as e:
            print("request failed:", e)
        time.sleep(rnd.uniform(0.1, 0.5))
threads = [threading.Thread(target=client, args=(n,)) for n in range(3)]
for t in threads: t.start()
for t in threads: t.join()
PY
traffic_pid=$!

# fcm top while the traffic runs, captured two thirds of the way in.
tmux new-session -d -s "$session" -x 150 -y 40 \
  "env FCM_HOME=$FCM_HOME FCM_CATALOG=$FCM_CATALOG TERM=xterm-256color $fcm top; sleep 600"
sleep $(( seconds * 2 / 3 ))
tmux send-keys -t "$session" Down
sleep 1.5
mkdir -p docs/images
tmux capture-pane -e -p -t "$session" > "$work/top.ansi"
python3 scripts/ansi-to-html.py "fcm top" < "$work/top.ansi" > "$work/top.html"
tmux send-keys -t "$session" q
wait "$traffic_pid"
sleep 4   # one more scrape after the last request
end=$(date +%s)

shot() { # shot HTML PNG WIDTH HEIGHT
  chromium --headless --no-sandbox --disable-gpu --disable-background-networking \
    --disable-component-update --disable-sync --no-first-run --hide-scrollbars \
    --user-data-dir="$work/chrome" --window-size="$3,$4" --screenshot="$2" "file://$1" >/dev/null 2>&1
}
shot "$work/top.html" docs/images/fcm-top.png 1340 850
python3 scripts/render-dashboard.py "$prom" "$start" "$end" 8s docs/grafana/fcm.json > "$work/dashboard.html"
# As tall as the panels' lowest edge (36 px a grid row) and the note under them.
height=$(python3 -c 'import json; print(max(p["gridPos"]["y"] + p["gridPos"]["h"] for p in json.load(open("docs/grafana/fcm.json"))["panels"]) * 36 + 102)')
shot "$work/dashboard.html" docs/images/grafana-dashboard.png 1544 "$height"
echo "docs-screenshots: wrote docs/images/fcm-top.png and docs/images/grafana-dashboard.png" >&2

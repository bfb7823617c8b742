#!/usr/bin/env bash
# Renders fcm serve's page at / in headless Chromium (Debian's chromium package) after some
# traffic through the fake provider, and checks the screenshot is a real, non-blank page.
# Usage: scripts/dashboard-screenshot.sh [OUT.png]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-target/dashboard.png}

if ! command -v chromium >/dev/null; then
  echo "dashboard-screenshot: installing Debian's chromium" >&2
  apt-get update -qq && apt-get install -y -qq chromium >/dev/null
fi
cargo build --locked --quiet
fcm=$PWD/target/debug/fcm
source scripts/common.sh
start_fake "$fcm"
cat > "$work/catalog.json" <<JSON
{"version":1,"providers":[{"id":"demo","name":"Demo","baseUrl":"$url","keyRequired":false,"models":[
 {"id":"empty_choices","tier":"S+","context":131072},{"id":"rate_limit:120","tier":"S","context":131072},
 {"id":"server_500","tier":"A+","context":131072},{"id":"ok","tier":"A","context":131072},
 {"id":"slow:150","tier":"A-","context":131072}]},
 {"id":"budget","name":"Budget","baseUrl":"$url","keyRequired":false,"quota":{"requestsPerDay":12},"models":[
 {"id":"countdown_groq:4","tier":"S","context":131072}]}]}
JSON
export FCM_HOME="$work/home" FCM_CATALOG="$work/catalog.json"
start_serve
addr=$proxy
for _ in $(seq 12); do
  curl -s -o /dev/null "http://$addr/v1/chat/completions" -d '{"model":"fcm","messages":[{"role":"user","content":"hi"}]}'
  curl -s -o /dev/null "http://$addr/v1/chat/completions" -d '{"model":"fcm:demo/slow:150","messages":[{"role":"user","content":"hi"}]}'
done

mkdir -p "$(dirname "$out")"
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$work/chrome" --window-size=1280,900 --hide-scrollbars \
  --screenshot="$out" "http://$addr/" >/dev/null 2>&1

python3 - "$out" <<'PY'
import struct, sys, zlib
path = sys.argv[1]
data = open(path, "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
w, h = struct.unpack(">II", data[16:24])
# Decode the image rows and count distinct pixel values: a blank page has one or two.
pos, idat = 8, b""
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    if kind == b"IDAT":
        idat += data[pos + 8:pos + 8 + n]
    pos += 12 + n
raw = zlib.decompress(idat)
distinct = len(set(raw[i:i + 4] for i in range(0, min(len(raw), 400_000), 4)))
print(f"dashboard screenshot: {path} {w}x{h}, {distinct} distinct pixel values")
sys.exit(0 if w >= 1000 and distinct > 20 else 1)
PY

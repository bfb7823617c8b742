#!/usr/bin/env bash
# Benchmark: `fcm bench --provider all` over a fake catalog of 250 models whose fake provider
# answers in 300 ms, 3 pings each, concurrency 64. Reports wall time against the ideal
# (ceil(250/64) rounds x 3 pings x 0.3 s) and fcm's peak RSS. Loopback only.
set -euo pipefail
cd "$(dirname "$0")/.."

MODELS=${MODELS:-250}
DELAY_MS=${DELAY_MS:-300}
PINGS=${PINGS:-3}
CONCURRENCY=${CONCURRENCY:-64}

source scripts/common.sh
release_binaries
bin=$fcm
start_fake "$bin"

python3 - "$url" "$MODELS" "$DELAY_MS" > "$work/catalog.json" <<'PY'
import json, sys
url, n, delay = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
providers = []
for p in range(10):
    ids = [f"slow:{delay}#{i}" for i in range(p, n, 10)]
    providers.append({"id": f"fake{p}", "name": f"Fake {p}", "baseUrl": url, "keyRequired": False,
                      "models": [{"id": i, "label": i, "tier": "A", "context": 131072} for i in ids]})
print(json.dumps({"version": 1, "providers": providers}))
PY

python3 - "$bin" "$work" "$MODELS" "$DELAY_MS" "$PINGS" "$CONCURRENCY" <<'PY'
import json, math, os, resource, subprocess, sys, time
bin, work, n, delay, pings, conc = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:])
env = dict(os.environ, FCM_HOME=f"{work}/home", FCM_CATALOG=f"{work}/catalog.json")
start = time.monotonic()
out = subprocess.run([bin, "bench", "--provider", "all", "--pings", str(pings), "--concurrency", str(conc),
                      "--json", "--no-save"], env=env, capture_output=True, text=True)
wall = time.monotonic() - start
rss_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
report = json.loads(out.stdout)
usable = sum(m["usable"] for m in report["models"])
ideal = math.ceil(n / conc) * pings * delay / 1000
print(f"models={n} pings={pings} concurrency={conc} delay={delay}ms usable={usable}/{len(report['models'])}")
print(f"wall={wall:.2f}s ideal={ideal:.2f}s ratio={wall / ideal:.2f} (target <= 1.30)")
print(f"peak_rss={rss_mb:.1f}MB (target <= 30)")
sys.exit(0 if out.returncode == 0 and usable == n else 1)
PY

#!/usr/bin/env bash
# Benchmark: tool-result compression on real tool outputs of the machine it runs on.
#
# 1. Builds a corpus by running what coding agents run: cargo build and cargo test with
#    colour and progress forced, npm install and pip install with their progress (in a
#    terminal, through `script`), pytest -v with colour, a failing cargo test and pytest run,
#    git log and diff, grep -rn, ls -laR, find, and a file read (cat).
# 2. examples/compress_bench.rs counts each output's tokens before and after compression,
#    lossless and aggressive, with OpenAI's o200k BPE (its ranks ship in the tiktoken-rs
#    crate), per kind and in total, and times the compression per result and per request.
# 3. fcm serve's CPU per request (utime + stime from /proc) for Claude Code requests holding
#    the whole corpus as tool results and one new result each, with compression off,
#    lossless and aggressive.
#
# Cargo builds offline (from the local registry); npm, pip and pytest need Node.js, Python's
# venv and the package registries: a kind that cannot run is left out, with a note.
# CORPUS=DIR keeps the corpus there; REQUESTS sizes the CPU run (default 600 a mode); CAPTURED=FILE
# adds a captured Claude Code request (`{"body": ...}`) to the CPU table and takes its system
# prompt for the sessions; FCM_BIN uses that fcm binary instead of a release build.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
REQUESTS=${REQUESTS:-600}
source scripts/common.sh
corpus=${CORPUS:-$work/corpus}
mkdir -p "$corpus"
: > "$corpus/manifest.tsv"

n=0
# capture KIND DIR COMMAND [pty]: runs COMMAND with bash in DIR, stdout and stderr
# together, into the corpus; with `pty`, in a terminal (as a person sees it).
capture() {
  local kind=$1 dir=$2 cmd=$3 pty=${4:-} file code=0
  n=$((n + 1))
  file=$(printf '%02d-%s.out' "$n" "${kind// /-}")
  if [ -n "$pty" ] && command -v script > /dev/null; then
    (cd "$dir" && script -qefc "$cmd" /dev/null > "$corpus/$file" 2>&1 < /dev/null) || code=$?
  else
    (cd "$dir" && bash -c "$cmd" > "$corpus/$file" 2>&1 < /dev/null) || code=$?
  fi
  printf '%s\t%s\t%s\t%s\n' "$kind" "$code" "$cmd" "$file" >> "$corpus/manifest.tsv"
  echo "bench-compress: $kind: $(wc -l < "$corpus/$file") lines, exit $code" >&2
}
skipped() { echo "bench-compress: $1 left out: $2" >&2; }

# A Rust project with dependencies and a dozen warnings, and one with 400 tests.
rust="$work/rust"
mkdir -p "$rust/app/src" "$rust/tests/src"
cat > "$rust/app/Cargo.toml" << 'TOML'
[package]
name = "app"
version = "0.1.0"
edition = "2021"

[dependencies]
serde = { version = "1", features = ["derive"] }
serde_json = "1"
memchr = "2"
TOML
{
  echo '#[derive(serde::Serialize)] struct Point { x: i32, y: i32 }'
  for i in $(seq 12); do echo "fn helper_$i() { let unused_$i = $i; }"; done
  echo 'fn main() { println!("{}", serde_json::to_string(&Point { x: 1, y: 2 }).unwrap()); }'
} > "$rust/app/src/main.rs"
cat > "$rust/tests/Cargo.toml" << 'TOML'
[package]
name = "suite"
version = "0.1.0"
edition = "2021"
TOML
{
  echo 'pub fn add(a: u64, b: u64) -> u64 { a + b }'
  echo '#[cfg(test)] mod tests { use super::*;'
  for i in $(seq 400); do
    if [ $((i % 130)) -eq 0 ]; then
      echo "#[test] fn case_$i() { let want = if std::env::var(\"FAIL\").is_ok() { $i + 1 } else { $i }; assert_eq!(add($i, 0), want); }"
    else
      echo "#[test] fn case_$i() { assert_eq!(add($i, 0), $i); }"
    fi
  done
  echo '}'
} > "$rust/tests/src/lib.rs"
cargo_env="CARGO_TARGET_DIR=$work/target CARGO_TERM_COLOR=always CARGO_TERM_PROGRESS_WHEN=always CARGO_TERM_PROGRESS_WIDTH=100"
capture "cargo build (colour, progress)" "$rust/app" "$cargo_env cargo build --offline"
(cd "$rust/tests" && CARGO_TARGET_DIR="$work/target" cargo test --offline --no-run -q > /dev/null 2>&1) || true
capture "cargo test (colour)" "$rust/tests" "$cargo_env cargo test --offline -- --color always"
capture "cargo test, failing (colour)" "$rust/tests" "FAIL=1 $cargo_env cargo test --offline -- --color always"

# npm install with its progress, in a terminal.
if command -v npm > /dev/null; then
  mkdir -p "$work/npm"
  echo '{"name": "bench", "version": "1.0.0", "private": true}' > "$work/npm/package.json"
  capture "npm install (progress)" "$work/npm" "npm install --no-fund --no-audit express@4 lodash@4 chalk@4 debug@4" pty
else
  skipped "npm install" "no npm"
fi

# pip install with its progress bars, in a terminal; pytest from it.
venv="$work/venv"
if python3 -m venv "$venv" > /dev/null 2>&1; then
  capture "pip install (progress)" "$work" "$venv/bin/pip install --no-cache-dir --progress-bar on pytest requests rich" pty
  mkdir -p "$work/py"
  cat > "$work/py/test_suite.py" << 'PY'
import os
import pytest

@pytest.mark.parametrize("n", range(300))
def test_square(n):
    broken = os.environ.get("FAIL") and n % 97 == 0
    assert n * n == n ** 2 + (1 if broken else 0)

def test_text():
    assert "fcm".upper() == "FCM"
PY
  if [ -x "$venv/bin/pytest" ]; then
    capture "pytest -v (colour)" "$work/py" "$venv/bin/pytest -v --color=yes -p no:cacheprovider"
    capture "pytest -v, failing (colour)" "$work/py" "FAIL=1 $venv/bin/pytest -v --color=yes -p no:cacheprovider"
  else
    skipped "pytest" "pip install did not install it"
  fi
else
  skipped "pip install and pytest" "python3 -m venv failed"
fi

# What agents read of a repository, plain (no terminal: as their shell tools run it).
capture "git log" "$repo" "git log -n 40"
# The diff of the latest commit that changed the code (a merge's would be every change it
# brought in).
changed=$(git rev-list -1 --no-merges HEAD -- src)
capture "git diff" "$repo" "git diff $changed~1 $changed"
capture "grep -rn" "$repo" "grep -rn 'fn ' src"
capture "ls -laR" "$repo" "ls -laR src"
capture "find" "$repo" "find src tests scripts -type f"
capture "file read (cat)" "$repo" "cat src/compress/terminal.rs"

cargo build --release --locked --quiet --example compress_bench
"${CARGO_TARGET_DIR:-$repo/target}/release/examples/compress_bench" "$corpus" ${CAPTURED:+"$CAPTURED"}

# fcm serve's own CPU per request, by compression mode: one server per mode, all three up
# at once and driven in turns (rounds of REQUESTS / 6), so a load beside the run weighs on
# each alike. Each request is the whole session plus one new tool result (the corpus's
# outputs in turn, each with a line of its own), as an agent's next turn brings: the
# history is remembered, the new result is compressed.
release_binaries
start_fake "$fcm"
cat > "$work/catalog.json" << JSON
{"version":1,"providers":[{"id":"fake","name":"Fake","baseUrl":"$url","keyRequired":false,
 "models":[{"id":"ok","tier":"S","context":1000000}]}]}
JSON
export FCM_CATALOG="$work/catalog.json"
servers=()
pids=()
trap 'kill "${pids[@]}" 2> /dev/null || true; cleanup' EXIT
for mode in off lossless aggressive; do
  export FCM_HOME="$work/home-$mode"
  mkdir -p "$FCM_HOME"
  echo "{\"router\":{\"compress\":\"$mode\"}}" > "$FCM_HOME/config.json"
  start_serve
  servers+=("$mode=$proxy=$serve_pid")
  pids+=("$serve_pid")
done
echo
echo "fcm serve's CPU per request (utime + stime), $REQUESTS requests per mode of the whole session ($(($(wc -c < "$corpus/session.json") / 1024)) KB, Anthropic Messages, non-stream) plus one new tool result each:"
echo
python3 - "$corpus" "$REQUESTS" "${servers[@]}" << 'PY'
import http.client, json, os, sys
corpus, n, servers = sys.argv[1], int(sys.argv[2]), [s.split("=") for s in sys.argv[3:]]
session = json.load(open(os.path.join(corpus, "session.json")))
outputs = []
for line in open(os.path.join(corpus, "manifest.tsv")):
    kind, code, cmd, name = line.rstrip("\n").split("\t", 3)
    text = open(os.path.join(corpus, name), "rb").read().decode("utf-8", "replace")
    outputs.append((cmd, text, code != "0"))

def body(i):
    cmd, text, failed = outputs[i % len(outputs)]
    msgs = session["messages"] + [
        {"role": "assistant", "content": [{"type": "tool_use", "id": f"toolu_new{i}", "name": "Bash", "input": {"command": cmd}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_new{i}", "content": f"run {i}\n{text}", "is_error": failed}]},
    ]
    return json.dumps(dict(session, messages=msgs)).encode()

def ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])

conns = {}
for mode, addr, pid in servers:
    host, port = addr.rsplit(":", 1)
    conns[mode] = http.client.HTTPConnection(host, int(port))
saved = {}
def post(mode, b):
    conns[mode].request("POST", "/v1/messages", b, {"content-type": "application/json"})
    r = conns[mode].getresponse()
    r.read()
    assert r.status == 200, r.status
    saved[mode] = r.getheader("x-fcm-v2-compressed") or "-"

for mode, _, _ in servers:
    for i in range(20):
        post(mode, body(i))
spent = {mode: 0 for mode, _, _ in servers}
rounds = 6
per = max(1, n // rounds)
for r in range(rounds):
    bodies = [body(1000 + r * per + i) for i in range(per)]
    for mode, _, pid in servers:
        t0 = ticks(pid)
        for b in bodies:
            post(mode, b)
        spent[mode] += ticks(pid) - t0
hz = os.sysconf("SC_CLK_TCK")
ms = {m: spent[m] / hz * 1000 / (per * rounds) for m in spent}
print("| router.compress | fcm CPU per request | x-fcm-v2-compressed (tokens, estimated) |")
print("| --- | ---: | ---: |")
for mode, _, _ in servers:
    share = "" if mode == "off" else f" ({100 * (ms[mode] - ms['off']) / ms['off']:+.1f}%)"
    print(f"| {mode} | {ms[mode]:.3f} ms{share} | {saved[mode]} |")
PY
kill "${pids[@]}"
wait "${pids[@]}" 2> /dev/null || true

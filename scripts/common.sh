# Sourced by the scripts here: a scratch directory removed on exit (stopping the processes
# the script started), release binaries, and the fake provider on a free loopback port.
work=$(mktemp -d)
cleanup() {
  kill "${serve_pid:-}" "${fake_pid:-}" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# start_fake FCM_BINARY: runs `fcm fake-provider`; sets $fake_pid and $url (its /v1 base URL).
start_fake() {
  "$1" fake-provider --no-record > "$work/fake.url" &
  fake_pid=$!
  for _ in $(seq 100); do [ -s "$work/fake.url" ] && break; sleep 0.05; done
  url=$(head -n1 "$work/fake.url")
  if [ -z "$url" ]; then
    echo "$(basename "$0"): the fake provider did not start" >&2
    exit 1
  fi
}

# release_binaries [loadgen]: sets $fcm to $FCM_BIN or a fresh release build, and with
# `loadgen` $load to $LOADGEN_BIN or a fresh build of examples/loadgen.rs.
release_binaries() {
  local target=${CARGO_TARGET_DIR:-$PWD/target}
  if [ -n "${FCM_BIN:-}" ]; then
    fcm=$FCM_BIN
  else
    cargo build --release --locked --quiet
    fcm=$target/release/fcm
  fi
  if [ "${1:-}" = loadgen ]; then
    if [ -n "${LOADGEN_BIN:-}" ]; then
      load=$LOADGEN_BIN
    else
      cargo build --release --locked --quiet --example loadgen
      load=$target/release/examples/loadgen
    fi
  fi
}

# start_serve [ARGS...]: `$fcm serve --port 0 --quiet ARGS` in the background, with the
# FCM_HOME and FCM_CATALOG exported now; sets $serve_pid and, once it listens, $proxy
# (host:port, from its serve.json).
start_serve() {
  "$fcm" serve --port 0 --quiet "$@" &
  serve_pid=$!
  for _ in $(seq 200); do [ -s "$FCM_HOME/serve.json" ] && break; sleep 0.05; done
  proxy=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["address"])' "$FCM_HOME/serve.json")
}

# ticks PID: utime + stime of a whole process (all its threads, live and exited), in clock
# ticks ($tck a second): fields 14 and 15 of /proc/PID/stat, counted after the ")" that
# ends the command name.
ticks() { sed 's/^.*) //' "/proc/$1/stat" | awk '{print $12 + $13}'; }
tck=$(getconf CLK_TCK)

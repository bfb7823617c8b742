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

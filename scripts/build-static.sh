#!/usr/bin/env bash
# Builds a fully static x86-64 Linux fcm binary and proves it is static.
# Uses the musl target when the toolchain has it, else glibc with crt-static.
# Prints the binary's path and size.
set -euo pipefail
cd "$(dirname "$0")/.."

if rustup target list --installed 2>/dev/null | grep -qx x86_64-unknown-linux-musl; then
  target=x86_64-unknown-linux-musl
  cargo build --release --locked --target "$target"
else
  target=x86_64-unknown-linux-gnu
  echo "musl target not installed; building with glibc and crt-static" >&2
  RUSTFLAGS="${RUSTFLAGS:-} -C target-feature=+crt-static" \
    cargo build --release --locked --target "$target"
fi

bin="target/$target/release/fcm"
if command -v file >/dev/null 2>&1; then
  desc=$(file -L "$bin")
  echo "$desc" >&2
  case "$desc" in
    *"statically linked"*|*"static-pie linked"*) ;;
    *) echo "error: $bin is not statically linked" >&2; exit 1 ;;
  esac
fi
deps=$(ldd "$bin" 2>&1 || true)
case "$deps" in
  *"not a dynamic executable"*|*"statically linked"*) ;;
  *) echo "$deps" >&2; echo "error: ldd reports dynamic dependencies for $bin" >&2; exit 1 ;;
esac
"$bin" --help >/dev/null
size=$(stat -c %s "$bin")
printf '%s\t%s bytes (%.1f MiB)\n' "$bin" "$size" "$(echo "$size / 1048576" | bc -l)"

#!/usr/bin/env bash
# Fails when a platform-specific API (`libc::`, `std::os::unix`, `std::os::fd`, `/proc`) is
# used outside a module or item that is cfg-gated for its platform, so a Linux-only call
# cannot slip back in (fcm builds for Linux, macOS and Windows). The check is
# examples/portability.rs, which reads the sources with `syn`; tests/portability.rs shows it
# catching planted calls. Usage: scripts/portability-check.sh [PATH...] (default: the
# crate's sources, tests, examples and build script).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -eq 0 ]; then
  set -- src tests examples build.rs
fi
cargo run --quiet --locked --example portability -- "$@"

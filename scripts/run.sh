#!/usr/bin/env bash
# Sets up and runs Trimgate. With a display, the desktop app (window, tray, keys in the OS
# keychain); without one — or with --headless — the gateway alone (trimgate serve), whose
# window is the address it prints. Both listen on 127.0.0.1:8788 unless the config says
# otherwise, keep the ledger (SQLite) in the platform data dir and read the config from the
# platform config dir. Extra arguments go to `trimgate serve` (e.g. --listen 127.0.0.1:9000).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
headless=0
if [ "${1:-}" = --headless ]; then headless=1; shift; fi
if [ -z "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then headless=1; fi

./scripts/deps.sh build
# The window's files, which both the binary and the desktop app carry.
(cd ui && npm ci --no-audit --no-fund --silent && npx vite build --logLevel warn)

# The `fast` profile (Cargo.toml): release's optimizations without cross-crate LTO, so a
# rebuild after a change takes seconds to a minute instead of minutes. The packaged app
# (tauri build) uses `release`, with fat LTO.
if [ "$headless" = 1 ]; then
  cargo build --profile fast --quiet -p trimgate
  echo "starting the headless gateway (trimgate serve); stop it with Ctrl-C" >&2
  exec "$CARGO_TARGET_DIR/fast/trimgate" serve "$@"
fi
echo "building the desktop app (the first build takes about 15 minutes on 2 cores)" >&2
cargo build --profile fast --quiet -p trimgate-desktop
exec "$CARGO_TARGET_DIR/fast/trimgate-desktop"

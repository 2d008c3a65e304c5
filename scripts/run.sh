#!/usr/bin/env bash
# Sets up and runs Trimgate. With a display, the desktop app (window, tray, keys in the OS
# keychain); without one — or with --headless — the gateway alone (trimgate serve), whose
# window is the address it prints. Both listen on 127.0.0.1:8788 unless the config says
# otherwise, keep the ledger (SQLite) in the platform data dir and read the config from the
# platform config dir. Extra arguments go to `trimgate serve` (e.g. --listen 127.0.0.1:9000).
#
#   scripts/run.sh                          # the release build (default)
#   TRIMGATE_PROFILE=fast scripts/run.sh    # the fast build, to iterate on the code
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
headless=0
if [ "${1:-}" = --headless ]; then headless=1; shift; fi
if [ -z "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then headless=1; fi

./scripts/deps.sh build
# The window's files, which both the binary and the desktop app carry.
(cd ui && npm ci --no-audit --no-fund --silent && npx vite build --logLevel warn)

# The build profile (Cargo.toml): `release` unless TRIMGATE_PROFILE names another. Release
# (fat LTO, one codegen unit) is what the packaged app ships and what the benchmarks measure:
# side by side, the release binary served 0.88x an nginx hop's throughput at c=50 and the
# `fast` one 0.56x, so the gateway you run here is the one users get. A rebuild after a change
# takes minutes, though (the whole-program link); TRIMGATE_PROFILE=fast builds `fast`,
# release's optimizations without cross-crate LTO, whose rebuilds take seconds to a minute
# (BENCHMARKS.md, "Build profiles").
profile="${TRIMGATE_PROFILE:-release}"
case "$profile" in
  dev) out=debug ;;   # cargo writes the dev profile to target/debug
  *) out="$profile" ;;
esac
if [ "$headless" = 1 ]; then
  echo "building the headless gateway (profile $profile)" >&2
  cargo build --profile "$profile" --quiet -p trimgate
  echo "starting the headless gateway (trimgate serve); stop it with Ctrl-C" >&2
  exec "$CARGO_TARGET_DIR/$out/trimgate" serve "$@"
fi
echo "building the desktop app (profile $profile; the first build takes about 15 minutes on 2 cores)" >&2
cargo build --profile "$profile" --quiet -p trimgate-desktop
exec "$CARGO_TARGET_DIR/$out/trimgate-desktop"

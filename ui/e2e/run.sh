#!/usr/bin/env bash
# npm run e2e: the window in Chromium against the real gateway binary.
#  - installs Debian's chromium if missing (no browser download: none is possible here);
#  - builds ui/dist, then the trimgate binary that serves it at /ui (cargo; skipped when
#    TRIMGATE_BIN names a binary);
#  - runs the test inside a private D-Bus session with an unlocked gnome-keyring, so
#    provider keys set from the window go to a real Secret Service (as on a desktop).
set -euo pipefail
cd "$(dirname "$0")/.."

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
need=()
command -v "${CHROMIUM:-/usr/bin/chromium}" >/dev/null 2>&1 || need+=(chromium)
if [ "${E2E_GATEWAY:-}" != fake ]; then
  command -v dbus-run-session >/dev/null 2>&1 || need+=(dbus)
  command -v gnome-keyring-daemon >/dev/null 2>&1 || need+=(gnome-keyring)
fi
if [ ${#need[@]} -gt 0 ]; then
  echo "== installing ${need[*]}" >&2
  as_root apt-get update -qq || { sleep 15; as_root apt-get update -qq; }
  as_root apt-get install -y -qq "${need[@]}" >/dev/null || { sleep 15; as_root apt-get install -y -qq "${need[@]}" >/dev/null; }
fi

if [ "${E2E_GATEWAY:-}" != fake ]; then
  # The first-run step runs the line the window shows with the real Claude Code.
  [ -x ../tests/agents/node_modules/.bin/claude ] || (cd ../tests/agents && npm ci --no-audit --no-fund --silent)
fi

echo "== building ui/dist (the gateway embeds it)" >&2
npx vite build --logLevel warn

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

if [ "${E2E_GATEWAY:-}" != fake ] && [ -z "${TRIMGATE_BIN:-}" ]; then
  echo "== cargo build (the trimgate binary)" >&2
  (cd .. && cargo build --quiet --bin trimgate)
  # A copy of our own: a target dir shared with other checkouts may get their binary next.
  cp "${CARGO_TARGET_DIR:-$(cd .. && pwd)/target}/debug/trimgate" "$scratch/trimgate"
  export TRIMGATE_BIN="$scratch/trimgate"
fi

if [ "${E2E_GATEWAY:-}" = fake ] || [ -n "${DBUS_SESSION_BUS_ADDRESS:-}" ]; then
  node --test --test-concurrency=1 e2e/
  exit
fi
# A keyring of its own, in a temporary data dir, unlocked with an empty password.
mkdir -p "$scratch/keyring"
XDG_DATA_HOME="$scratch/keyring" dbus-run-session -- bash -c \
  'printf "\n" | gnome-keyring-daemon --unlock --components=secrets >/dev/null && exec node --test --test-concurrency=1 e2e/' \
  2> >(grep -v 'Failed to set fd limit' >&2)

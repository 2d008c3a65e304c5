#!/usr/bin/env bash
# Sets up and runs every test: formatting, lints, Rust unit and end-to-end tests (the
# ledger's against SQLite and a PostgreSQL server started here), the official OpenAI
# and Anthropic SDKs (Python and Node), Google's google-genai, and the real Claude Code,
# Codex CLI and Gemini CLI driven through the gateway.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
# The disk-full tests need user namespaces, which this machine allows: never skip them here.
export TRIMGATE_REQUIRE_DISK_FULL="${TRIMGATE_REQUIRE_DISK_FULL:-1}"

# Build and test packages: the keychain's D-Bus library, python3-venv for the SDK tests,
# a Secret Service (gnome-keyring) for the keychain tests.
./scripts/deps.sh test

# A PostgreSQL server on loopback for the ledger tests (installed with apt if missing).
echo "== PostgreSQL for the ledger tests"
TRIMGATE_TEST_POSTGRES_URL=$(./scripts/postgres.sh)
export TRIMGATE_TEST_POSTGRES_URL

# The window (ui/): built first, since the gateway binary embeds ui/dist.
echo "== ui: npm ci, type-check and build, unit tests"
(cd ui && npm ci --no-audit --no-fund --silent && npm run build --silent && npm test --silent)

echo "== gateway-core's module graph: no import circle, no arrow a layering rule forbids"
graph=$(python3 scripts/modules.py gateway-core/src) || { echo "$graph"; exit 1; }
echo "$graph" | tail -n 1
echo "== documentation: every relative link and anchor in the Markdown files resolves"
python3 scripts/links.py
echo "== cargo fmt --check"
cargo fmt --all --check
echo "== cargo clippy -D warnings"
cargo clippy --workspace --all-targets --quiet -- -D warnings
echo "== cargo test"
cargo test --workspace

echo "== benchmark gate self-test (bench/compare.py on synthetic runs)"
python3 bench/compare.py --self-test

echo "== instruction gate: instructions per proxied request, the fast profile, under callgrind"
cargo build --profile fast --quiet -p trimgate
(cd bench/driver && cargo build --release --quiet)
python3 bench/instructions.py --gate --bin "$CARGO_TARGET_DIR/fast/trimgate"

echo "== keychain tests (a gnome-keyring Secret Service on a private D-Bus session)"
keychain_stage() {
  TRIMGATE_REQUIRE_KEYCHAIN=1 dbus-run-session -- bash -c \
    'printf "\n" | gnome-keyring-daemon --unlock --components=secrets >/dev/null && cargo test --test keychain --test admin --test import 2>&1' \
    | grep -v 'Failed to set fd limit'
}
# On a loaded machine the freshly started keyring daemon has been seen to drop off the bus
# mid-call ("recipient disconnected"); a second session with a new daemon tells that apart
# from a real failure, which fails both times.
if ! keychain_stage; then
  echo "== keychain tests failed: once more, with a new D-Bus session and keyring daemon"
  keychain_stage
fi

echo "== SDK tests (official openai, anthropic and google-genai packages)"
venv="$root/.venv"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/pip" install --quiet --disable-pip-version-check -r tests/sdk/requirements.txt
TRIMGATE_BIN="$CARGO_TARGET_DIR/debug/trimgate" "$venv/bin/python" -m pytest tests/sdk -q -p no:cacheprovider

echo "== release tooling: the workflows (actionlint), install.sh (shellcheck), the Homebrew files (ruby -c)"
bash scripts/lint-workflows.sh
echo "== release tooling: latest.json, the Homebrew files, the installer against a local release"
TRIMGATE_BIN="$CARGO_TARGET_DIR/debug/trimgate" "$venv/bin/python" -m pytest tests/release -q -p no:cacheprovider

echo "== scale-out: three replicas behind nginx sharing PostgreSQL and Redis, under SDK load"
echo "   (a key's rpm and budget across replicas, a replica killed, Redis stopped and started)"
TRIMGATE_BIN="$CARGO_TARGET_DIR/debug/trimgate" "$venv/bin/python" -m pytest tests/scale -q -p no:cacheprovider -rA

echo "== server deployment: the Kubernetes manifests against the schemas, and the image"
echo "   (deploy/Containerfile built with buildah, unpacked and run as uid 65532)"
# The image runs unpacked in mount and PID namespaces, which takes root (sudo otherwise).
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo --preserve-env=PATH,CARGO_TARGET_DIR,RUSTUP_HOME,CARGO_HOME,TRIMGATE_BIN "$@"; fi; }
TRIMGATE_BIN="$CARGO_TARGET_DIR/debug/trimgate" as_root "$venv/bin/python" -m pytest tests/deploy tests/image -q -p no:cacheprovider -rA

echo "== the real agents: Claude Code, Codex CLI and Gemini CLI (pinned npm releases) through every routing"
(cd tests/agents && npm ci --no-audit --no-fund --silent)
TRIMGATE_BIN="$CARGO_TARGET_DIR/debug/trimgate" "$venv/bin/python" -m pytest tests/agents -q -p no:cacheprovider

echo "== SDK tests (official openai and @anthropic-ai/sdk npm packages)"
(cd tests/sdk-node && npm ci --no-audit --no-fund --silent && TRIMGATE_BIN="$CARGO_TARGET_DIR/debug/trimgate" node --test)

echo "== ui end-to-end (the window in Chromium against trimgate serve and the mock)"
(cd ui && TRIMGATE_BIN="$CARGO_TARGET_DIR/debug/trimgate" npm run e2e --silent)

echo "== desktop app (the .deb built, installed with dpkg, driven on Xvfb, removed)"
bash tests/desktop/deb.sh

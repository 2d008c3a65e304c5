#!/usr/bin/env bash
# Sets up and runs every test: formatting, lints, Rust unit and end-to-end tests (the
# ledger's against SQLite and a PostgreSQL server started here), and the official OpenAI
# and Anthropic SDKs (Python and Node) driven through the gateway.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
# The disk-full tests need user namespaces, which this machine allows: never skip them here.
export TRIMGATE_REQUIRE_DISK_FULL="${TRIMGATE_REQUIRE_DISK_FULL:-1}"

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# Python with venv for the SDK tests (Debian/Ubuntu split venv into its own package).
if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
  as_root apt-get update -qq
  as_root apt-get install -y -qq python3-venv >/dev/null
fi

# A PostgreSQL server on loopback for the ledger tests (installed with apt if missing).
echo "== PostgreSQL for the ledger tests"
TRIMGATE_TEST_POSTGRES_URL=$(./scripts/postgres.sh)
export TRIMGATE_TEST_POSTGRES_URL

echo "== cargo fmt --check"
cargo fmt --all --check
echo "== cargo clippy -D warnings"
cargo clippy --workspace --all-targets --quiet -- -D warnings
echo "== cargo test"
cargo test --workspace

echo "== SDK tests (official openai and anthropic packages)"
venv="$root/.venv"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/pip" install --quiet --disable-pip-version-check -r tests/sdk/requirements.txt
TRIMGATE_BIN="$CARGO_TARGET_DIR/debug/trimgate" "$venv/bin/python" -m pytest tests/sdk -q -p no:cacheprovider

echo "== SDK tests (official openai and @anthropic-ai/sdk npm packages)"
(cd tests/sdk-node && npm ci --no-audit --no-fund --silent && TRIMGATE_BIN="$CARGO_TARGET_DIR/debug/trimgate" node --test)

#!/usr/bin/env bash
# Builds Trimgate and runs the gateway on 127.0.0.1:8788 (or --listen ADDR).
# Providers come from the config file it names on start, or from OPENAI_API_KEY,
# ANTHROPIC_API_KEY and DEEPSEEK_API_KEY when there is no config file.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
./scripts/deps.sh build
# The window's files, which the binary embeds and serves at /ui.
(cd ui && npm ci --no-audit --no-fund --silent && npx vite build --logLevel warn)
cargo build --release --quiet -p trimgate
echo "starting the headless gateway (trimgate serve); stop it with Ctrl-C" >&2
exec "$CARGO_TARGET_DIR/release/trimgate" serve "$@"

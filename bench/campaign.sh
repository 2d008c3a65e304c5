#!/usr/bin/env bash
# The benchmark campaign in one command: Trimgate beside LiteLLM and Portkey, nginx as the
# floor cost of one proxy hop, and the mock reached directly as the baseline, all against
# the project's own mock on loopback, one target at a time, in one run.
#
#   bench/campaign.sh                     # install peers, build, run everything (~10 min + builds)
#   CAMPAIGN_QUICK=1 bench/campaign.sh    # tiny durations: checks the harness, measures nothing
#   CAMPAIGN_TARGETS=direct,nginx,trimgate CAMPAIGN_SCENARIOS=sweep bench/campaign.sh
#
# Steps: bench/install_peers.sh (pinned LiteLLM and Portkey into bench/peers/, wrk and
# nginx-light from apt), `cargo build --release -p trimgate`, the open-loop driver
# (bench/driver, its own crate outside the workspace), then bench/campaign.py (the
# scenarios; see its docstring), then bench/compare.py against bench/recorded.json.
# Env: BENCH_SKIP_BUILD=1 (use the binaries already built), BENCH_BIN=PATH (measure that
# trimgate binary), and the CAMPAIGN_* knobs of bench/campaign.py.
# Output: bench/results/campaign-<ts>.json and .md (git-ignored); the report on stdout.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
log() { echo "[campaign] $*" >&2; }

COMMAND="$(for v in CAMPAIGN_QUICK CAMPAIGN_TARGETS CAMPAIGN_SCENARIOS CAMPAIGN_TRIMGATE_TOML BENCH_SKIP_BUILD BENCH_BIN; do
  if [[ -n "${!v:-}" ]]; then printf '%s=%s ' "$v" "${!v}"; fi; done)bench/campaign.sh${*:+ $*}"

"$HERE/install_peers.sh"
for t in python3 node wrk nginx curl; do command -v "$t" >/dev/null || { log "$t not found"; exit 1; }; done

BIN=${BENCH_BIN:-$TARGET/release/trimgate}
DRIVER=$TARGET/release/trimgate-bench-driver
if [[ "${BENCH_SKIP_BUILD:-}" != 1 ]]; then
  if [[ -z "${BENCH_BIN:-}" ]]; then
    log "cargo build --release -p trimgate"
    (cd "$ROOT" && cargo build --release -p trimgate) >&2
  fi
  log "cargo build --release (bench/driver)"
  (cd "$HERE/driver" && CARGO_TARGET_DIR=$TARGET cargo build --release) >&2
fi
[[ -x "$BIN" ]] || { log "no trimgate binary at $BIN"; exit 1; }
[[ -x "$DRIVER" ]] || { log "no driver at $DRIVER"; exit 1; }

# Open loop keeps thousands of connections open in each process.
ulimit -n 30000 2>/dev/null || ulimit -n "$(ulimit -Hn)"

export CAMPAIGN_BIN=$BIN CAMPAIGN_DRIVER=$DRIVER CAMPAIGN_COMMAND=$COMMAND
python3 "$HERE/campaign.py"

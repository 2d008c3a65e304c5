#!/usr/bin/env bash
# Optimizer figures in one command:
#   1. builds the corpus requests from the captured command outputs (bench/corpus),
#   2. runs the savings evaluator over them (every mode: tokens, needle recall, validity,
#      determinism across fresh processes, prefix stability, cached session cost, pass time),
#   3. runs the modes x payload matrix through the real gateway and mock (overhead per mode).
#
#   bench/savings.sh                      # all three
#   MATRIX_N=50 bench/savings.sh          # requests per matrix cell (default 30)
#   SKIP_MATRIX=1 bench/savings.sh        # evaluator only
# Output: Markdown on stdout; JSON in bench/results/savings-<ts>.json and optimize-matrix-<ts>.json.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
cd "$ROOT"
TS=$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p bench/results
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}

echo "## Savings corpus ($TS, $(nproc) cores, $(uname -m))" 
python3 bench/corpus/build.py >&2
cargo build --release -q -p trimgate-optimize --example savings
cargo build --release -q --bin trimgate
echo
echo "Command: \`bench/savings.sh\` (evaluator: \`cargo run --release -p trimgate-optimize --example savings -- bench/corpus/requests\`)"
echo
"$TARGET/release/examples/savings" bench/corpus/requests "bench/results/savings-$TS.json"
if [[ -z "${SKIP_MATRIX:-}" ]]; then
  echo
  echo "## Optimizer matrix through the gateway (N=${MATRIX_N:-30} per cell after one first request)"
  echo
  python3 bench/optimize_matrix.py "$TARGET/release/trimgate" bench/corpus/requests "${MATRIX_N:-30}" \
    "bench/results/optimize-matrix-$TS.json"
fi

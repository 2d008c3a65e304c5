#!/usr/bin/env bash
# Runs the optimizer's fuzz target for FUZZ_SECONDS (default 600) from the committed seeds;
# prints its executions and whether it found a crash. Needs cargo-fuzz (cargo install
# cargo-fuzz); builds without a sanitizer, on the stable toolchain.
set -uo pipefail
cd "$(dirname "$0")"
secs=${FUZZ_SECONDS:-600}
mkdir -p results corpus/optimize
cargo fuzz build -s none >&2 || exit 1
cargo fuzz run -s none optimize corpus/optimize seeds/optimize -- -max_total_time="$secs" -timeout=20 \
  -print_final_stats=1 > results/optimize.log 2>&1
rc=$?
execs=$(grep -E "stat::number_of_executed_units" results/optimize.log | awk '{print $2}')
echo "optimize: exit=$rc executions=${execs:-?} crash_files=$(ls artifacts/optimize 2>/dev/null | wc -l)"

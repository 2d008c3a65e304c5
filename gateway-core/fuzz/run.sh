#!/usr/bin/env bash
# Runs every fuzz target of gateway-core for FUZZ_SECONDS (default 600), two at a time, starting from the
# committed seeds; prints each target's executions and whether it found a crash.
# Needs cargo-fuzz (cargo install cargo-fuzz). Builds without a sanitizer, which works on
# the stable toolchain: the code under test forbids `unsafe`, so panics are what to find.
set -uo pipefail
cd "$(dirname "$0")"
secs=${FUZZ_SECONDS:-600}
targets=(${FUZZ_TARGETS:-stream_translate decode_request decode_response sniff_edit scan_reads sse_frames})
mkdir -p results
cargo fuzz build -s none >&2 || exit 1
run() {
  local t=$1
  mkdir -p "corpus/$t"
  cargo fuzz run -s none "$t" "corpus/$t" "seeds/$t" -- -max_total_time="$secs" -timeout=20 -print_final_stats=1 \
    > "results/$t.log" 2>&1
  local rc=$?
  local execs
  execs=$(grep -E "stat::number_of_executed_units" "results/$t.log" | awk '{print $2}')
  echo "$t: exit=$rc executions=${execs:-?} crash_files=$(ls "artifacts/$t" 2>/dev/null | wc -l)"
}
i=0
for t in "${targets[@]}"; do
  run "$t" &
  i=$((i + 1))
  if (( i % 2 == 0 )); then wait; fi
done
wait
# The optimizer's target lives with its crate, which it depends on alone.
if [[ -z "${FUZZ_TARGETS:-}" ]]; then
  ../../crates/optimize/fuzz/run.sh
fi

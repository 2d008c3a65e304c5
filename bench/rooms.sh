#!/usr/bin/env bash
# Each captured output of the savings corpus through the compactor alone, in o200k tokens:
# as captured, at the default level (auto) and at aggressive (the retrievable mode).
#   bench/rooms.sh            # Markdown table on stdout
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
# Touched first: another checkout sharing the target directory may have left its own build there.
touch crates/optimize/examples/compact.rs
cargo build --release -q -p trimgate-optimize --example compact
bin="$TARGET/release/examples/compact"
tokens() { # FILE LEVEL -> tokens after (or before, when unchanged)
  "$bin" "$1" "$2" | sed -E 's/.*: ([0-9]+) → ([0-9]+) tokens.*/\2/; s/.*unchanged \(([0-9]+) tokens.*/\1/'
}
echo "| output | o200k tokens | auto | saved | aggressive | saved |"
echo "|---|---:|---:|---:|---:|---:|"
total_before=0 total_auto=0 total_aggr=0
for f in bench/corpus/outputs/*.txt; do
  before=$("$bin" "$f" light | sed -E 's/.*: ([0-9]+) → .*/\1/; s/.*unchanged \(([0-9]+) tokens.*/\1/')
  auto=$(tokens "$f" auto)
  aggr=$(tokens "$f" aggressive)
  total_before=$((total_before + before)) total_auto=$((total_auto + auto)) total_aggr=$((total_aggr + aggr))
  printf '| %s | %d | %d | %s | %d | %s |\n' "$(basename "$f" .txt)" "$before" "$auto" \
    "$(awk -v b="$before" -v a="$auto" 'BEGIN{printf "%.0f %%", 100*(1-a/b)}')" "$aggr" \
    "$(awk -v b="$before" -v a="$aggr" 'BEGIN{printf "%.0f %%", 100*(1-a/b)}')"
done
printf '| **all %d outputs** | %d | %d | %s | %d | %s |\n' "$(ls bench/corpus/outputs/*.txt | wc -l)" \
  "$total_before" "$total_auto" "$(awk -v b="$total_before" -v a="$total_auto" 'BEGIN{printf "%.1f %%", 100*(1-a/b)}')" \
  "$total_aggr" "$(awk -v b="$total_before" -v a="$total_aggr" 'BEGIN{printf "%.1f %%", 100*(1-a/b)}')"

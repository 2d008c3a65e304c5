# Shared by capture.sh, capture_runners.sh and capture_deps.sh (sourced): writing one output
# and its MANIFEST row. Expects OUT (the outputs directory), T (the scratch directory, shown
# as $TMP) and ROWS (the file MANIFEST rows collect in).

# run NAME DIR COMMAND: run COMMAND with bash in DIR, save stdout+stderr to outputs/NAME.txt.
run() {
  local name=$1 dir=$2 cmd=$3 rc=0
  echo ">> $name: $cmd" >&2
  (cd "$dir" && bash -c "$cmd") >"$OUT/$name.txt" 2>&1 </dev/null || rc=$?
  manifest_row "$name" "$dir" "$cmd" "$rc"
}

# manifest_row NAME DIR COMMAND RC: the MANIFEST entry of an output already written.
manifest_row() {
  local name=$1 dir=$2 cmd=$3 rc=$4
  local shown_dir=${dir/#$T/\$TMP}
  {
    echo "### \`$name.txt\`"
    echo "- directory: \`$shown_dir\`"
    echo "- command: \`${cmd//$T/\$TMP}\`"
    echo "- exit code: $rc; size: $(wc -c <"$OUT/$name.txt") bytes; lines: $(wc -l <"$OUT/$name.txt")"
    echo "- captured: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo
  } >>"$ROWS"
}

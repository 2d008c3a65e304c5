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

# drop_section MANIFEST SECTION: removes SECTION (a `## …` heading and its rows, up to the
# next `## ` heading) from MANIFEST, leaving the other scripts' sections as they are.
drop_section() {
  touch "$1"
  python3 - "$1" "$2" <<'PY'
import re, sys
path, section = sys.argv[1], sys.argv[2]
text = open(path, encoding="utf-8").read()
start = text.find(section + "\n") if text.startswith(section + "\n") else text.find("\n" + section + "\n")
if start >= 0:
    head = text[:start]
    rest = text[start:].lstrip("\n")[len(section):]
    nxt = re.search(r"^## ", rest, re.M)
    text = head.rstrip("\n") + "\n" + ("\n" + rest[nxt.start():] if nxt else "")
open(path, "w", encoding="utf-8").write(text.rstrip("\n") + "\n")
PY
}

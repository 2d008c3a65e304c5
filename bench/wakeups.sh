#!/usr/bin/env bash
# Thread switches and CPU per request: the gateway in passthrough over `trimgate mock`,
# driven by wrk at each concurrency, with the direct-to-mock rate beside it.
#
#   bench/wakeups.sh [BIN] [CONCURRENCY...]      # defaults: target/release/trimgate, 1 50
#
# Per concurrency, one line each for direct and the gateway: rps, p50/p99 in µs, and for the
# gateway the voluntary and involuntary context switches per request summed over its
# threads (/proc/PID/task/*/status), its CPU time per request (/proc/PID/stat), and that CPU
# time split by thread name (/proc/PID/task/*/stat: the serving threads, the runtime thread
# the ledger writer task runs on, the ledger thread that writes SQLite). A voluntary switch
# is a thread going to sleep, to be woken again: the cost this measures.
# Env: D (seconds per cell, default 5).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
BIN=${1:-${CARGO_TARGET_DIR:-$ROOT/target}/release/trimgate}
shift || true
CONCS=${*:-1 50}
D=${D:-5}
command -v wrk >/dev/null || { echo "wrk not found (apt-get install wrk)" >&2; exit 1; }
[[ -x $BIN ]] || { echo "no trimgate binary at $BIN" >&2; exit 1; }

TMP=$(mktemp -d)
cleanup() { kill "${GW:-}" "${MOCK:-}" 2>/dev/null || true; rm -rf "$TMP"; }
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
MPORT=$(free_port)
GPORT=$(free_port)
python3 - "$TMP/body.json" <<'EOF'
import json, sys
prompt = "Explain the following text briefly. " + "lorem ipsum dolor sit amet " * 30
body = {"model": "gpt-5-mini", "temperature": 0.7, "messages": [
    {"role": "system", "content": "You are a helpful assistant. " * 8},
    {"role": "user", "content": prompt}]}
open(sys.argv[1], "w").write(json.dumps(body))
EOF
cat >"$TMP/t.toml" <<EOF
[providers.mock]
kind = "openai"
base_url = "http://127.0.0.1:$MPORT/v1"
api_key = { env = "MOCK_OPENAI_KEY" }
[[routes]]
match = "gpt-5-mini"
provider = "mock"
EOF
"$BIN" mock --listen "127.0.0.1:$MPORT" --any-key >/dev/null 2>&1 &
MOCK=$!
MOCK_OPENAI_KEY=sk-mock-openai TRIMGATE_LOG=warn XDG_DATA_HOME=$TMP/data \
  "$BIN" serve --config "$TMP/t.toml" --listen "127.0.0.1:$GPORT" >"$TMP/gw.log" 2>&1 &
GW=$!
for _ in $(seq 100); do
  curl -sf -o /dev/null "http://127.0.0.1:$GPORT/healthz" && break
  sleep 0.05
done
export BENCH_BODY_FILE=$TMP/body.json

switches() {
  cat /proc/"$GW"/task/*/status | awk '/^voluntary_ctxt/{v+=$2} /^nonvoluntary_ctxt/{n+=$2} END{print v, n}'
}
cpu_ticks() { awk '{print $14+$15}' /proc/"$GW"/stat; }
# "name=ticks,name=ticks" summed by thread name (comm may contain spaces; it sits in parens)
thread_ticks() {
  for t in /proc/"$GW"/task/*; do
    sed -E 's/^[0-9]+ \((.*)\) [A-Z] (.*)$/\1|\2/' "$t/stat" | awk -F'|' '{split($2, f, " "); print $1 "=" f[11] + f[12]}'
  done | awk -F= '{a[$1] += $2} END {for (k in a) printf "%s=%d,", k, a[k]}'
}
run() { # port conc seconds -> BENCH_JSON
  local threads=2
  [[ $2 == 1 ]] && threads=1
  wrk -t$threads -c"$2" -d"$3"s --timeout 10s -s "$HERE/post.lua" "http://127.0.0.1:$1/v1/chat/completions" |
    sed -n 's/^BENCH_JSON //p'
}

echo "# $(date -u +%FT%TZ) $BIN ($(nproc) CPUs), ${D}s per cell"
for c in $CONCS; do
  run "$MPORT" "$c" 1 >/dev/null
  run "$GPORT" "$c" 1 >/dev/null
  direct=$(run "$MPORT" "$c" "$D")
  read -r v0 n0 <<<"$(switches)"
  t0=$(cpu_ticks)
  p0=$(thread_ticks)
  gw=$(run "$GPORT" "$c" "$D")
  read -r v1 n1 <<<"$(switches)"
  t1=$(cpu_ticks)
  p1=$(thread_ticks)
  python3 - "$c" "$direct" "$gw" "$v1" "$v0" "$n1" "$n0" "$t1" "$t0" "$(getconf CLK_TCK)" "$p0" "$p1" <<'EOF'
import json, sys
c, direct, gw = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
v1, v0, n1, n0, t1, t0, hz = map(int, sys.argv[4:11])
parse = lambda s: {k: int(v) for k, v in (x.split("=") for x in s.split(",") if x)}
p0, p1 = parse(sys.argv[11]), parse(sys.argv[12])
def rate(d): return d["requests"] / d["duration_us"] * 1e6
n = gw["requests"]
print(f"c={c} direct  {rate(direct):9.0f} rps  p50 {direct['latency_us']['p50']:6d} µs  p99 {direct['latency_us']['p99']:6d} µs")
print(f"c={c} gateway {rate(gw):9.0f} rps  p50 {gw['latency_us']['p50']:6d} µs  p99 {gw['latency_us']['p99']:6d} µs  "
      f"voluntary switches/req {(v1 - v0) / n:.2f}  involuntary/req {(n1 - n0) / n:.2f}  "
      f"CPU µs/req {(t1 - t0) / hz * 1e6 / n:.1f}  errors {sum(gw['errors'].values())}")
by_thread = {k: (p1[k] - p0.get(k, 0)) / hz * 1e6 / n for k in p1}
print(f"c={c} gateway CPU µs/req by thread: " +
      "  ".join(f"{k} {v:.1f}" for k, v in sorted(by_thread.items()) if v > 0.05))
EOF
done

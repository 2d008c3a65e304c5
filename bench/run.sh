#!/usr/bin/env bash
# Trimgate benchmark: one run measures three targets in front of the same mock
# provider -- direct to the mock, through nginx (plain keep-alive reverse
# proxy) and through Trimgate -- plus binary size, RSS, cold start and CPU time
# per request. Everything runs on this machine and talks over 127.0.0.1 only.
#
#   bench/run.sh                        # defaults: 5 s warm-up + 10 s measured per row
#   BENCH_DURATION=20 BENCH_WARMUP=5 bench/run.sh
#
# Env: BENCH_DURATION (s, measured), BENCH_WARMUP (s), BENCH_COLD_STARTS (count),
#      BENCH_SKIP_BUILD=1 (use the existing target/release/trimgate),
#      BENCH_BIN=PATH (benchmark that binary instead; implies no build),
#      BENCH_KEEP_TMP=1 (keep the temp dir with configs and logs).
# Output: bench/results/<timestamp>.json and a Markdown report on stdout.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
DURATION=${BENCH_DURATION:-10}
WARMUP=${BENCH_WARMUP:-5}
COLD_STARTS=${BENCH_COLD_STARTS:-5}
((COLD_STARTS >= 1)) || { echo "BENCH_COLD_STARTS must be at least 1" >&2; exit 1; }
COMMAND="$(for v in BENCH_DURATION BENCH_WARMUP BENCH_COLD_STARTS BENCH_SKIP_BUILD BENCH_BIN; do
  if [[ -n "${!v:-}" ]]; then printf '%s=%s ' "$v" "${!v}"; fi; done)bench/run.sh${*:+ $*}"
BIN=${BENCH_BIN:-${CARGO_TARGET_DIR:-$ROOT/target}/release/trimgate}

log() { echo "[bench] $*" >&2; }
die() { log "error: $*"; exit 1; }

# --- tools -------------------------------------------------------------------
need=()
command -v wrk >/dev/null || need+=(wrk)
command -v nginx >/dev/null || need+=(nginx-light)
if ((${#need[@]})); then
  log "installing ${need[*]}"
  apt-get update -qq >&2
  apt-get install -y -qq "${need[@]}" >&2
fi
for t in curl python3 wrk nginx; do command -v "$t" >/dev/null || die "$t not found"; done

# --- build -------------------------------------------------------------------
if [[ "${BENCH_SKIP_BUILD:-}" != 1 && -z "${BENCH_BIN:-}" ]]; then
  log "cargo build --release -p trimgate"
  (cd "$ROOT" && cargo build --release -p trimgate) >&2 || die "release build failed"
fi
[[ -x "$BIN" ]] || die "no binary at $BIN"

# --- processes and cleanup -----------------------------------------------------
TMP=$(mktemp -d /tmp/trimgate-bench.XXXXXX)
# The gateway keeps its default ledger (SQLite, as a user gets it) in the run's temp dir.
export XDG_DATA_HOME="$TMP"
PIDS=()
cleanup() {
  local pid
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [[ "${BENCH_KEEP_TMP:-}" == 1 ]]; then log "kept $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# wait_url NAME LOGFILE: waits for "listening on http://ADDR" in LOGFILE, prints ADDR.
wait_url() {
  local i line
  for ((i = 0; i < 200; i++)); do
    line=$(grep -m1 -o 'listening on http://[0-9.:]*' "$2" 2>/dev/null || true)
    if [[ -n "$line" ]]; then echo "${line#listening on http://}"; return; fi
    sleep 0.05
  done
  cat "$2" "$2.err" >&2 2>/dev/null || true
  die "$1 did not start"
}

# check_chat NAME ADDR: one chat request must answer 200 with "choices".
check_chat() {
  local code
  code=$(curl -s -o "$TMP/check.out" -w '%{http_code}' --max-time 5 \
    -H 'Content-Type: application/json' -H 'Authorization: Bearer sk-mock-openai' \
    --data-binary @"$BODY" "http://$2/v1/chat/completions" || true)
  if [[ "$code" != 200 ]] || ! grep -q '"choices"' "$TMP/check.out"; then
    head -c 500 "$TMP/check.out" >&2 || true
    die "$1 at $2: chat request gave HTTP $code"
  fi
}

# cpu_ticks PID...: utime+stime, in clock ticks, summed over the processes.
cpu_ticks() {
  local p files=()
  for p in "$@"; do files+=("/proc/$p/stat"); done
  awk '{ sub(/.*\) /, ""); s += $12 + $13 } END { print s + 0 }' "${files[@]}"
}
# rss_kib FIELD PID...: a /proc/PID/status field (VmRSS, VmHWM) in KiB, summed.
rss_kib() {
  local field=$1 p files=()
  shift
  for p in "$@"; do files+=("/proc/$p/status"); done
  awk -v f="$field:" '$1 == f { s += $2 } END { print s + 0 }' "${files[@]}"
}
# idle_ticks: idle+iowait ticks of all cores. The kernel counts idle time exactly
# but busy time by sampling ticks, so "busy" below is cores x wall time - idle.
idle_ticks() { awk '$1 == "cpu" { print $5 + $6; exit }' /proc/stat; }
# child_cpu: sets CHILD_TICKS to the CPU time of this shell's finished children
# (wrk) in clock ticks; `times` must run in this shell, not in $(...).
child_cpu() {
  times >"$TMP/times"
  CHILD_TICKS=$(awk -v hz="$HZ" 'NR == 2 { for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); t += a[1] * 60 + a[2] }
    printf "%d", t * hz }' "$TMP/times")
}
HZ=$(getconf CLK_TCK)
NPROC=$(nproc)
nginx_pids() { echo "$NGINX_PID" $(ps -o pid= --ppid "$NGINX_PID"); }

BODY=$TMP/body.json
log "request body: $(python3 "$HERE/bench.py" body "$BODY") bytes"

"$BIN" mock --listen 127.0.0.1:0 >"$TMP/mock.log" 2>"$TMP/mock.log.err" &
MOCK_PID=$!; PIDS+=("$MOCK_PID")
MOCK=$(wait_url mock "$TMP/mock.log")

cat >"$TMP/trimgate.toml" <<EOF
[providers.mock]
kind = "openai"
base_url = "http://$MOCK/v1"
api_key = { env = "MOCK_OPENAI_KEY" }

[[routes]]
match = "*"
provider = "mock"
EOF
export MOCK_OPENAI_KEY=sk-mock-openai
TRIMGATE_LOG=warn "$BIN" serve --config "$TMP/trimgate.toml" --listen 127.0.0.1:0 \
  >"$TMP/trimgate.log" 2>"$TMP/trimgate.log.err" &
TG_PID=$!; PIDS+=("$TG_PID")
TG=$(wait_url trimgate "$TMP/trimgate.log")

NGINX_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir -p "$TMP/nginx"
cat >"$TMP/nginx/nginx.conf" <<EOF
worker_processes auto;
daemon off;
pid $TMP/nginx/nginx.pid;
error_log $TMP/nginx/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path $TMP/nginx/body;
  proxy_temp_path $TMP/nginx/proxy;
  upstream mock {
    server $MOCK;
    keepalive 64;
  }
  server {
    listen 127.0.0.1:$NGINX_PORT;
    location / {
      proxy_pass http://mock;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
  }
}
EOF
nginx -p "$TMP/nginx/" -c "$TMP/nginx/nginx.conf" -e "$TMP/nginx/error.log" \
  >"$TMP/nginx.log" 2>&1 &
NGINX_PID=$!; PIDS+=("$NGINX_PID")
NGINX=127.0.0.1:$NGINX_PORT
for ((i = 0; i < 100; i++)); do
  curl -s -o /dev/null "http://$NGINX/" && break
  sleep 0.05
done

declare -A ADDR=([direct]=$MOCK [nginx]=$NGINX [trimgate]=$TG)
for t in direct nginx trimgate; do check_chat "$t" "${ADDR[$t]}"; done
curl -sf -o /dev/null "http://$TG/healthz" || die "trimgate /healthz failed"
log "mock $MOCK, nginx $NGINX, trimgate $TG"

IDLE_RSS=$(rss_kib VmRSS "$TG_PID")
NGINX_IDLE_RSS=$(rss_kib VmRSS $(nginx_pids))

# --- load ----------------------------------------------------------------------
RUNS=$TMP/runs.jsonl
: >"$RUNS"
ORDER=0
# bench TARGET CONC THREADS LABEL: warm-up, then a measured run with CPU deltas.
bench() {
  local target=$1 conc=$2 threads=$3 label=$4 url="http://${ADDR[$1]}/v1/chat/completions"
  local m0 n0 t0 w0 i0 c0 m1 n1 t1 w1 i1 c1
  log "$target c=$conc ($label): ${WARMUP}s warm-up, ${DURATION}s measured"
  BENCH_BODY_FILE=$BODY wrk -t"$threads" -c"$conc" -d"${WARMUP}s" -s "$HERE/post.lua" "$url" >/dev/null
  child_cpu; w0=$CHILD_TICKS; i0=$(idle_ticks); c0=$(date +%s%N)
  m0=$(cpu_ticks "$MOCK_PID"); n0=$(cpu_ticks $(nginx_pids)); t0=$(cpu_ticks "$TG_PID")
  BENCH_BODY_FILE=$BODY wrk -t"$threads" -c"$conc" -d"${DURATION}s" -s "$HERE/post.lua" "$url" >"$TMP/wrk.out"
  m1=$(cpu_ticks "$MOCK_PID"); n1=$(cpu_ticks $(nginx_pids)); t1=$(cpu_ticks "$TG_PID")
  child_cpu; w1=$CHILD_TICKS; i1=$(idle_ticks); c1=$(date +%s%N)
  grep -q '^BENCH_JSON ' "$TMP/wrk.out" || { cat "$TMP/wrk.out" >&2; die "wrk gave no result"; }
  ORDER=$((ORDER + 1))
  printf '{"order":%d,"target":"%s","conc":%d,"threads":%d,"label":"%s",' "$ORDER" "$target" "$conc" "$threads" "$label" >>"$RUNS"
  printf '"cpu_ticks":{"mock":%d,"nginx":%d,"trimgate":%d,"wrk":%d,"machine_busy":%d},' \
    $((m1 - m0)) $((n1 - n0)) $((t1 - t0)) $((w1 - w0)) $((NPROC * (c1 - c0) * HZ / 1000000000 - (i1 - i0))) >>"$RUNS"
  printf '"cpu_window_us":%d,"wrk":%s}\n' $(((c1 - c0) / 1000)) "$(grep -m1 '^BENCH_JSON ' "$TMP/wrk.out" | cut -d' ' -f2-)" >>"$RUNS"
}
# Interleaved so that drift on the host hits every target alike; the last row
# repeats the first as a control.
for t in direct nginx trimgate; do bench "$t" 1 1 main; done
for t in direct nginx trimgate; do bench "$t" 50 2 main; done
bench direct 1 1 control-after

AFTER_RSS=$(rss_kib VmRSS "$TG_PID")
PEAK_RSS=$(rss_kib VmHWM "$TG_PID")
NGINX_AFTER_RSS=$(rss_kib VmRSS $(nginx_pids))

# --- cold start ------------------------------------------------------------------
log "cold start x$COLD_STARTS"
python3 "$HERE/bench.py" coldstart "$BIN" "$TMP/trimgate.toml" "$BODY" "$COLD_STARTS" >"$TMP/cold.json"

# --- report ----------------------------------------------------------------------
TS=$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$HERE/results"
python3 "$HERE/bench.py" report "$RUNS" "$TMP/cold.json" "$HERE/results/$TS.json" \
  "timestamp=$TS" "command=$COMMAND" \
  "warmup_s=$WARMUP" "duration_s=$DURATION" "clk_tck=$HZ" \
  "nproc=$NPROC" "cpu_model=$(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')" \
  "kernel=$(uname -r)" "rustc=$(rustc --version)" \
  "wrk_version=$(wrk -v 2>&1 | head -1 | awk '{print $2}')" \
  "nginx_version=$(nginx -v 2>&1 | sed 's,.*nginx/,,')" \
  "git_commit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo none)" \
  "binary_bytes=$(stat -c %s "$BIN")" "binary_sha256=$(sha256sum "$BIN" | cut -d' ' -f1)" \
  "idle_rss_kib=$IDLE_RSS" "after_rss_kib=$AFTER_RSS" "peak_rss_kib=$PEAK_RSS" \
  "nginx_idle_rss_kib=$NGINX_IDLE_RSS" "nginx_after_rss_kib=$NGINX_AFTER_RSS"

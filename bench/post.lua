-- wrk script: POST one fixed chat body (from $BENCH_BODY_FILE) on every request,
-- and at the end print one machine-readable line, "BENCH_JSON {...}", with
-- the request count, errors and latency percentiles in microseconds.
-- $BENCH_HEADERS, when set, adds headers: "Name: value" lines, one per line.

local f = assert(io.open(os.getenv("BENCH_BODY_FILE"), "rb"))
wrk.method = "POST"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "application/json"
-- The mock's OpenAI key. nginx passes it through; Trimgate accepts any client
-- key and injects the provider's own, so one header serves all three targets.
wrk.headers["Authorization"] = "Bearer sk-mock-openai"
for line in string.gmatch(os.getenv("BENCH_HEADERS") or "", "[^\n]+") do
  local name, value = string.match(line, "^%s*([^:]+):%s*(.-)%s*$")
  if name then wrk.headers[name] = value end
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'BENCH_JSON {"requests":%d,"duration_us":%d,"bytes":%d,' ..
    '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
    '"latency_us":{"mean":%.1f,"stdev":%.1f,"min":%d,"max":%d,' ..
    '"p50":%d,"p90":%d,"p95":%d,"p99":%d,"p999":%d}}\n',
    summary.requests, summary.duration, summary.bytes,
    e.connect, e.read, e.write, e.status, e.timeout,
    latency.mean, latency.stdev, latency.min, latency.max,
    latency:percentile(50), latency:percentile(90), latency:percentile(95),
    latency:percentile(99), latency:percentile(99.9)))
end

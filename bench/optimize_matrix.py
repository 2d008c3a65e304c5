#!/usr/bin/env python3
"""Optimizer benchmark matrix: modes x payload profiles through the real gateway.

For each payload profile (a corpus request of about 1 KiB, 97 KiB and 633 KiB, in each
of the three dialects) and each mode (sent as the x-trimgate-optimize header), it sends
the request N times to `trimgate serve` in front of `trimgate mock` and reads what the
gateway says it did: x-trimgate-overhead-ms (the gateway's own time, upstream wait
excluded), x-trimgate-saved-tokens and x-trimgate-saved-bytes; and the input tokens the
provider (the mock, which counts a quarter of the bytes it got) says it was sent. The
all-off row is the baseline. Python stdlib only.

  python3 bench/optimize_matrix.py BIN CORPUS_REQUESTS_DIR [N] [OUT.json]
"""

import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

MODES = [
    "off",
    "default",
    "tool_output=light",
    "tool_output=standard",
    "tool_output=aggressive",
    "tool_output=auto",
    "terse=lite",
    "prune=balanced",
    "squeeze=on",
]
ALL_OFF = "tool_output=off terse=off prune=off squeeze=off"
PROFILES = [("small", 1 * 1024), ("~97 KiB", 97 * 1024), ("~633 KiB", 633 * 1024)]
DIALECT_MODEL = {"chat": "gpt-5", "responses": "gpt-5", "messages": "claude-sonnet-4-5"}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_up(port, proc, timeout=15):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("process exited early")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listening on {port}")


def pick(requests_dir):
    """For each profile, the scenario whose Anthropic request is nearest in size, in all
    three dialects (the same turn of the same session), so the rows compare."""
    by_id = {}
    for name in sorted(os.listdir(requests_dir)):
        if name.endswith(".json"):
            with open(os.path.join(requests_dir, name)) as f:
                r = json.load(f)
            by_id[r["id"]] = (r, json.dumps(r["body"]).encode())
    chosen = []
    for label, size in PROFILES:
        anthropic = [x for x in by_id.values() if x[0]["dialect"] == "messages"]
        r, _ = min(anthropic, key=lambda x: abs(len(x[1]) - size))
        for dialect in ("chat", "responses", "messages"):
            twin = by_id[r["id"].replace("-messages-", f"-{dialect}-")]
            chosen.append((label, dialect, twin[0], twin[1]))
    return chosen


def main():
    binary, requests_dir = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 30
    out = sys.argv[4] if len(sys.argv) > 4 else None
    tmp = tempfile.mkdtemp(prefix="tg-opt-")
    mock_port, gw_port = free_port(), free_port()
    config = os.path.join(tmp, "config.toml")
    with open(config, "w") as f:
        f.write(f"""
[providers.openai]
kind = "openai"
base_url = "http://127.0.0.1:{mock_port}/v1"
api_key = {{ env = "TG_BENCH_KEY" }}
[providers.anthropic]
kind = "anthropic"
base_url = "http://127.0.0.1:{mock_port}/v1"
api_key = {{ env = "TG_BENCH_KEY" }}
""")
    env = dict(os.environ, TG_BENCH_KEY="sk-bench", TRIMGATE_LOG="warn", XDG_DATA_HOME=tmp)
    mock = subprocess.Popen([binary, "mock", "--any-key", "--listen", f"127.0.0.1:{mock_port}"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    gw = subprocess.Popen([binary, "serve", "--config", config, "--listen", f"127.0.0.1:{gw_port}"],
                          env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_up(mock_port, mock)
        wait_up(gw_port, gw)
        rows = []
        conn = http.client.HTTPConnection("127.0.0.1", gw_port, timeout=60)
        for label, dialect, r, body in pick(requests_dir):
            payload = dict(r["body"], model=DIALECT_MODEL[dialect], stream=False)
            data = json.dumps(payload).encode()
            for mode in MODES:
                overheads, saved_tokens, saved_bytes, applied = [], None, None, None
                for i in range(n + 1):
                    headers = {"content-type": "application/json", "anthropic-version": "2023-06-01"}
                    if mode != "default":
                        # Each mode alone: every other pass off.
                        headers["x-trimgate-optimize"] = ALL_OFF if mode == "off" else f"{ALL_OFF} {mode}"

                    conn.request("POST", r["path"], body=data, headers=headers)
                    res = conn.getresponse()
                    answer = res.read()
                    if res.status != 200:
                        raise RuntimeError(f"{r['id']} {mode}: HTTP {res.status}")
                    ms = float(res.getheader("x-trimgate-overhead-ms"))
                    if i == 0:
                        first = ms
                    else:
                        overheads.append(ms)
                    saved_tokens = int(res.getheader("x-trimgate-saved-tokens") or 0)
                    saved_bytes = int(res.getheader("x-trimgate-saved-bytes") or 0)
                    applied = res.getheader("x-trimgate-applied")
                    usage = json.loads(answer).get("usage") or {}
                    provider_input = usage.get("input_tokens", usage.get("prompt_tokens"))
                overheads.sort()
                rows.append({
                    "profile": label, "dialect": dialect, "request": r["id"], "bytes": len(data),
                    "mode": mode, "applied": applied, "saved_tokens": saved_tokens,
                    "saved_bytes": saved_bytes, "provider_input_tokens": provider_input, "first_ms": first,
                    "p50_ms": statistics.median(overheads),
                    "p95_ms": overheads[int(0.95 * (len(overheads) - 1))],
                })
        print("| profile | dialect | body | mode | applied | saved tokens | saved bytes | provider's input tokens | overhead p50 ms | p95 ms | first request ms | p50 − all-off |")
        print("|---|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|")
        base = {(x["profile"], x["dialect"]): x["p50_ms"] for x in rows if x["mode"] == "off"}
        for x in rows:
            delta = x["p50_ms"] - base[(x["profile"], x["dialect"])]
            print(f"| {x['profile']} | {x['dialect']} | {x['bytes'] / 1024:.0f} KiB | {x['mode']} | {x['applied'] or '—'} | "
                  f"{x['saved_tokens']:,} | {x['saved_bytes']:,} | {x['provider_input_tokens'] or 0:,} | {x['p50_ms']:.3f} | {x['p95_ms']:.3f} | "
                  f"{x['first_ms']:.3f} | {delta:+.3f} |")
        if out:
            with open(out, "w") as f:
                json.dump({"n": n, "rows": rows}, f, indent=1)
    finally:
        for p in (gw, mock):
            p.terminate()
            p.wait()


if __name__ == "__main__":
    main()

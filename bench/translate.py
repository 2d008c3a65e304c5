#!/usr/bin/env python3
"""Translation overhead: the same request through Trimgate passed through (an OpenAI Chat
client to an OpenAI-dialect provider) and translated (an Anthropic Messages client to the
same provider), in one run, against the project's mock; JSON at c=1 and c=50 with wrk,
then the time to the first stream event, native vs translated.

    python3 bench/translate.py            # after a release build (bench/run.sh builds one)

Env: BENCH_BIN (default target/release/trimgate), BENCH_DURATION (s, default 10),
BENCH_STREAMS (requests per stream mode, default 400). Loopback only; stops what it starts.
"""

import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BIN = os.environ.get("BENCH_BIN", os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")), "release", "trimgate"))
DURATION = int(os.environ.get("BENCH_DURATION", "10"))
STREAMS = int(os.environ.get("BENCH_STREAMS", "400"))

SYSTEM = "You are a careful coding assistant. Answer briefly."
USER = "Explain what this function does. " + "x" * 830


# The gateway keeps its default ledger in a temp dir, not the user's data dir.
DATA_HOME = tempfile.mkdtemp(prefix="trimgate-translate-data-")


def start(args, prefix, env=None):
    p = subprocess.Popen([BIN, *args], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                         env={**os.environ, "XDG_DATA_HOME": DATA_HOME, **(env or {})})
    for line in p.stdout:
        if line.startswith(prefix):
            return p, line[len(prefix):].strip().replace("http://", "")
    raise SystemExit(f"{args[0]} did not start")


def wrk(addr, path, body_file, conc, threads, secs):
    env = {**os.environ, "BENCH_BODY_FILE": body_file}
    out = subprocess.run(["wrk", f"-t{threads}", f"-c{conc}", f"-d{secs}s", "-s", os.path.join(HERE, "post.lua"),
                          f"http://{addr}{path}"], capture_output=True, text=True, env=env).stdout
    m = re.search(r"BENCH_JSON (\{.*\})", out)
    if not m:
        raise SystemExit("wrk gave no result:\n" + out)
    d = json.loads(m.group(1))
    errors = sum(d["errors"].values())
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return {"rps": d["requests"] / (d["duration_us"] / 1e6), "p50_ms": d["latency_us"]["p50"] / 1e3,
            "p99_ms": d["latency_us"]["p99"] / 1e3, "errors": errors + (int(non2xx.group(1)) if non2xx else 0)}


def first_event_ms(sock, request):
    """Sends one streamed request on a keep-alive socket; returns ms to the first `data:`
    of the body, then drains the stream to its end."""
    t0 = time.perf_counter_ns()
    sock.sendall(request)
    buf = b""
    first = None
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            raise SystemExit("connection closed mid-stream")
        buf += chunk
        if first is None:
            head, sep, body = buf.partition(b"\r\n\r\n")
            if sep and b"data:" in body:
                first = (time.perf_counter_ns() - t0) / 1e6
        # Chunked transfer ends with a zero-length chunk.
        if buf.endswith(b"\r\n0\r\n\r\n"):
            return first


def stream_request(addr, path, body):
    data = json.dumps(body).encode()
    headers = (f"POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n"
               f"Authorization: Bearer sk-mock-openai\r\nanthropic-version: 2023-06-01\r\n"
               f"Content-Length: {len(data)}\r\n\r\n").encode()
    return headers + data


def main():
    tmp = tempfile.mkdtemp(prefix="trimgate-translate-")
    procs = []
    try:
        mock, mock_addr = start(["mock", "--listen", "127.0.0.1:0"], "mock provider listening on ")
        procs.append(mock)
        config = os.path.join(tmp, "config.toml")
        with open(config, "w") as f:
            f.write(f'[providers.mock]\nkind = "openai"\nbase_url = "http://{mock_addr}/v1"\n'
                    f'api_key = {{ env = "MOCK_OPENAI_KEY" }}\n\n[[routes]]\nmatch = "*"\nprovider = "mock"\n')
        gw, addr = start(["serve", "--config", config, "--listen", "127.0.0.1:0"], "Trimgate listening on ",
                         {"MOCK_OPENAI_KEY": "sk-mock-openai", "TRIMGATE_LOG": "warn"})
        procs.append(gw)

        chat = {"model": "gpt-5-mini", "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": USER}]}
        messages = {"model": "claude-x", "max_tokens": 256, "system": SYSTEM, "messages": [{"role": "user", "content": USER}]}
        files = {}
        for name, body in (("passthrough", chat), ("translated", messages)):
            files[name] = os.path.join(tmp, f"{name}.json")
            with open(files[name], "w") as f:
                json.dump(body, f)
        paths = {"passthrough": "/v1/chat/completions", "translated": "/v1/messages"}
        sizes = {k: os.path.getsize(v) for k, v in files.items()}

        rows = []
        plan = [("passthrough", 1, 1), ("translated", 1, 1), ("passthrough", 50, 2), ("translated", 50, 2), ("passthrough", 1, 1)]
        for mode, conc, threads in plan:
            wrk(addr, paths[mode], files[mode], conc, threads, 2)  # warm-up
            r = wrk(addr, paths[mode], files[mode], conc, threads, DURATION)
            r.update(mode=mode, conc=conc)
            rows.append(r)
            print(f"[translate] {mode} c={conc}: {r['rps']:.0f} rps p50 {r['p50_ms']:.3f} ms p99 {r['p99_ms']:.3f} ms errors {r['errors']}", file=sys.stderr)

        native = stream_request(addr, "/v1/chat/completions", {**chat, "stream": True})
        translated = stream_request(addr, "/v1/messages", {**messages, "stream": True})
        times = {"native": [], "translated": []}
        socks = {k: socket.create_connection(tuple(addr.rsplit(":", 1)[0:1]) + (int(addr.rsplit(":", 1)[1]),)) for k in times}
        for s in socks.values():
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for i in range(STREAMS + 20):
            for k, req in (("native", native), ("translated", translated)) if i % 2 == 0 else (("translated", translated), ("native", native)):
                ms = first_event_ms(socks[k], req)
                if i >= 20:
                    times[k].append(ms)
        q = lambda xs, p: sorted(xs)[min(len(xs) - 1, int(p * len(xs)))]
        ttfe = {k: {"p50_ms": statistics.median(v), "p99_ms": q(v, 0.99)} for k, v in times.items()}

        find = lambda mode, conc, i=0: [r for r in rows if r["mode"] == mode and r["conc"] == conc][i]
        result = {
            "machine": {"nproc": os.cpu_count(), "kernel": os.uname().release},
            "command": "python3 bench/translate.py", "duration_s": DURATION, "streams": STREAMS,
            "body_bytes": sizes, "rows": rows, "first_event": ttfe,
            "added_p50_ms_c1": find("translated", 1)["p50_ms"] - find("passthrough", 1)["p50_ms"],
            "rps_ratio_c50": find("translated", 50)["rps"] / find("passthrough", 50)["rps"],
            "first_event_added_p50_ms": ttfe["translated"]["p50_ms"] - ttfe["native"]["p50_ms"],
        }
        os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
        out = os.path.join(HERE, "results", time.strftime("translate-%Y%m%dT%H%M%SZ.json", time.gmtime()))
        with open(out, "w") as f:
            json.dump(result, f, indent=1)

        print(f"Command: `python3 bench/translate.py` (BENCH_DURATION={DURATION}, BENCH_STREAMS={STREAMS}); bodies {sizes['passthrough']} / {sizes['translated']} bytes\n")
        print("| # | request | conc. | rps | p50 ms | p99 ms | errors |\n|---|---|---|---:|---:|---:|---:|")
        for i, r in enumerate(rows, 1):
            label = "passthrough (Chat → Chat)" if r["mode"] == "passthrough" else "translated (Messages → Chat)"
            if i == len(rows):
                label += ", control after"
            print(f"| {i} | {label} | {r['conc']} | {r['rps']:.0f} | {r['p50_ms']:.3f} | {r['p99_ms']:.3f} | {r['errors']} |")
        print("\n| stream, time to first event | p50 ms | p99 ms |\n|---|---:|---:|")
        for k, v in ttfe.items():
            print(f"| {k} | {v['p50_ms']:.3f} | {v['p99_ms']:.3f} |")
        print(f"\nTranslation adds {result['added_p50_ms_c1']:.3f} ms at p50 (c=1; goal ≤ 0.05 ms); "
              f"rps at c=50 translated ÷ passthrough {result['rps_ratio_c50']:.2f}; "
              f"first translated event {result['first_event_added_p50_ms']:.3f} ms after the native one at p50 (goal ≤ 0.5 ms).")
        print(f"\nResults JSON: {out}")
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(timeout=10)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""What a cloud provider's edge adds to a request: the same streamed Messages request sent
to the mock's Anthropic endpoint directly, and through one gateway to four providers on the
same `trimgate mock` — Anthropic (the dialect as sent), Bedrock's InvokeModel (SigV4 signed,
the answer's AWS event stream read back into SSE), Bedrock's Converse (the request
translated into Converse's shape, its event stream back into Messages SSE) and Vertex's
rawPredict (a Google access token; the answer already SSE).

    cargo build --profile fast --bin trimgate
    python3 bench/clouds.py [--bin PATH] [--rounds 300] [--warmups 20]

Each round sends the request once to every target, in a rotating order, on keep-alive
connections, and reads the whole stream: the median and p90 of the client's time (the
event stream's reading and rewriting included), and the median of the gateway's own
`x-trimgate-overhead-ms` (its time up to the answer's headers: routing, the body's edits,
the signature or token). Prints a Markdown table and writes
bench/results/clouds-<ts>.json. Loopback only; stops what it starts.
"""

import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "sdk"))
from clouds import isolated_env, service_account, aws_keys  # noqa: E402

TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))


def start(binary, args, prefix, env):
    proc = subprocess.Popen([binary, *args], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True, env=env)
    for line in proc.stdout:
        if line.startswith(prefix):
            return proc, line[len(prefix):].strip()
    raise RuntimeError(f"{args[0]} exited before listening")


def body(model):
    text = "Summarise what this log says. " + " ".join(f"line {i}: ok" for i in range(600))
    return json.dumps({"model": model, "max_tokens": 200, "stream": True,
                       "messages": [{"role": "user", "content": text}]}).encode()


def send(conn, path, payload, headers):
    started = time.perf_counter()
    conn.request("POST", path, payload, headers)
    response = conn.getresponse()
    data = response.read()
    took = time.perf_counter() - started
    if response.status != 200 or b"message_stop" not in data:
        raise RuntimeError(f"{path}: {response.status} {data[:300]!r}")
    overhead = response.getheader("x-trimgate-overhead-ms")
    return took * 1e3, float(overhead) if overhead else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(TARGET, "fast", "trimgate"))
    ap.add_argument("--rounds", type=int, default=300)
    ap.add_argument("--warmups", type=int, default=20)
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="trimgate-bench-clouds-") as d:
        env = isolated_env(aws_keys())
        mock, mock_url = start(args.bin, ["mock", "--listen", "127.0.0.1:0"], "mock provider listening on ", env)
        try:
            sa_file, _, _ = service_account(d, f"{mock_url}/token")
            config = os.path.join(d, "config.toml")
            with open(config, "w") as f:
                f.write(f"""
[providers.anthropic]
kind = "anthropic"
base_url = "{mock_url}/v1"
api_key = {{ env = "BENCH_ANTHROPIC_KEY" }}

[providers.bedrock]
kind = "bedrock"
region = "us-east-1"
base_url = "{mock_url}"

[providers.vertex]
kind = "vertex"
project = "proj"
location = "us-east5"
base_url = "{mock_url}/v1/projects/proj/locations/us-east5"
credentials_file = "{sa_file}"

[[routes]]
match = "claude-direct"
provider = "anthropic"
model = "claude-sonnet-4-5"

[[routes]]
match = "claude-bedrock"
provider = "bedrock"
model = "anthropic.claude-sonnet-4-5-20250929-v1:0"

[[routes]]
match = "nova-bedrock"
provider = "bedrock"
model = "amazon.nova-pro-v1:0"

[[routes]]
match = "claude-vertex"
provider = "vertex"
model = "claude-sonnet-4-5@20250929"

# The edge alone: no optimizer pass and no cache breakpoint changes the body.
[optimize]
tool_output = "off"
prune = "off"
cache_breakpoints = false
""")
            gw_env = {**env, "BENCH_ANTHROPIC_KEY": "sk-ant-mock", "XDG_DATA_HOME": d, "TRIMGATE_LOG": "error"}
            gateway, gw_url = start(args.bin, ["serve", "--config", config, "--listen", "127.0.0.1:0"],
                                    "Trimgate listening on ", gw_env)
            try:
                run(args, mock_url, gw_url)
            finally:
                gateway.terminate()
                gateway.wait(timeout=10)
        finally:
            mock.terminate()
            mock.wait(timeout=10)


def run(args, mock_url, gw_url):
    headers = {"content-type": "application/json", "anthropic-version": "2023-06-01",
               "x-api-key": "sk-ant-mock"}
    targets = [
        ("direct to the mock (Anthropic)", mock_url, "claude-sonnet-4-5"),
        ("gateway → Anthropic", gw_url, "claude-direct"),
        ("gateway → Bedrock InvokeModel", gw_url, "claude-bedrock"),
        ("gateway → Bedrock Converse", gw_url, "nova-bedrock"),
        ("gateway → Vertex rawPredict", gw_url, "claude-vertex"),
    ]
    conns = {}
    for name, url, _ in targets:
        host = url.split("://", 1)[1]
        conns[name] = http.client.HTTPConnection(host, timeout=30)
    payloads = {name: body(model) for name, _, model in targets}
    times = {name: [] for name, _, _ in targets}
    overheads = {name: [] for name, _, _ in targets}
    for i in range(args.warmups + args.rounds):
        order = targets[i % len(targets):] + targets[:i % len(targets)]
        for name, _, _ in order:
            took, overhead = send(conns[name], "/v1/messages", payloads[name], headers)
            if i >= args.warmups:
                times[name].append(took)
                if overhead is not None:
                    overheads[name].append(overhead)

    def p(values, q):
        return statistics.quantiles(values, n=100)[q - 1] if len(values) > 1 else values[0]

    print(f"| target | client median ms | p90 ms | gateway's own ms (median) |")
    print("|---|---|---|---|")
    result = {}
    for name, _, _ in targets:
        med, p90 = statistics.median(times[name]), p(times[name], 90)
        own = statistics.median(overheads[name]) if overheads[name] else None
        result[name] = {"median_ms": med, "p90_ms": p90, "overhead_ms": own, "n": len(times[name])}
        print(f"| {name} | {med:.2f} | {p90:.2f} | {'' if own is None else f'{own:.3f}'} |")
    os.makedirs(os.path.join(ROOT, "bench", "results"), exist_ok=True)
    out = os.path.join(ROOT, "bench", "results", f"clouds-{time.strftime('%Y%m%d-%H%M%S')}.json")
    with open(out, "w") as f:
        json.dump({"rounds": args.rounds, "bin": args.bin, "targets": result}, f, indent=1)
    print(f"\nwritten to {out}")


if __name__ == "__main__":
    main()

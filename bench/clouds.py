#!/usr/bin/env python3
"""What a cloud provider's edge adds to a request: the same streamed request sent to each
of the mock's endpoints directly and through one gateway on that mock — Anthropic (the
dialect as sent), Bedrock's InvokeModel (SigV4 signed, the answer's AWS event stream read
back into SSE), Bedrock's Converse (the Messages request translated into Converse's shape,
its event stream back into Messages SSE) and Vertex's rawPredict (a Google access token; the
answer already SSE); and InvokeModel once more with a Bedrock API key, unsigned, to tell
the signature's part from the event stream's.

    cargo build --profile fast --bin trimgate
    python3 bench/clouds.py [--bin PATH] [--rounds 300] [--warmups 30]

Each pair is the cloud's own request sent straight to the mock (a SigV4 header of the form
and time the mock checks, a Google token the mock issued to google-auth), and an Anthropic
Messages request to the gateway routed there: the difference of their medians is what the
gateway adds for that cloud, the mock's own work (encoding frames, base64) on both sides.
Each round sends every request once, in a rotating order, on keep-alive connections, and
reads the whole answer; the client's median and p90. The optimizer's passes and cache
breakpoints are off, so the body is changed only by the edge. Prints a Markdown table and
writes bench/results/clouds-<ts>.json. Loopback only; stops what it starts.
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


def send(conn, path, payload, headers, end):
    started = time.perf_counter()
    conn.request("POST", path, payload, headers)
    response = conn.getresponse()
    data = response.read()
    took = time.perf_counter() - started
    if response.status != 200 or end not in data:
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

[providers.bedrock-key]
kind = "bedrock"
region = "us-east-1"
base_url = "{mock_url}"
api_key = {{ env = "BENCH_BEDROCK_KEY" }}

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
match = "claude-bedrock-key"
provider = "bedrock-key"
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
            gw_env = {**env, "BENCH_ANTHROPIC_KEY": "sk-ant-mock", "BENCH_BEDROCK_KEY": "ABSK-bench", "XDG_DATA_HOME": d, "TRIMGATE_LOG": "error"}
            gateway, gw_url = start(args.bin, ["serve", "--config", config, "--listen", "127.0.0.1:0"],
                                    "Trimgate listening on ", gw_env)
            try:
                run(args, mock_url, gw_url, sa_file)
            finally:
                gateway.terminate()
                gateway.wait(timeout=10)
        finally:
            mock.terminate()
            mock.wait(timeout=10)


def direct_auth(mock_url, sa_file):
    """What the mock's cloud endpoints take from a client that goes to them directly: a
    SigV4 header of the right form and time (the mock checks the form and the clock, not
    the signature), and a Google access token the mock issued (google-auth's own sign-in)."""
    from google.auth.transport.requests import Request
    from google.oauth2 import service_account as sa

    amz_date = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    sigv4 = {
        "x-amz-date": amz_date,
        "authorization": f"AWS4-HMAC-SHA256 Credential=AKIDBENCH/{amz_date[:8]}/us-east-1/bedrock/"
                         "aws4_request, SignedHeaders=content-type;host;x-amz-date, Signature=" + "0" * 64,
    }
    creds = sa.Credentials.from_service_account_file(
        sa_file, scopes=["https://www.googleapis.com/auth/cloud-platform"])
    creds.refresh(Request())
    return sigv4, {"authorization": f"Bearer {creds.token}"}


def run(args, mock_url, gw_url, sa_file):
    anthropic = {"content-type": "application/json", "anthropic-version": "2023-06-01",
                 "x-api-key": "sk-ant-mock"}
    sigv4, bearer = direct_auth(mock_url, sa_file)
    claude = "anthropic.claude-sonnet-4-5-20250929-v1%3A0"
    vertex = "/v1/projects/proj/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict"
    messages = json.loads(body("x"))
    invoke = {k: v for k, v in messages.items() if k not in ("model", "stream")}
    invoke["anthropic_version"] = "bedrock-2023-05-31"
    on_vertex = {k: v for k, v in messages.items() if k != "model"}
    on_vertex["anthropic_version"] = "vertex-2023-10-16"
    converse = {"messages": [{"role": "user", "content": [{"text": messages["messages"][0]["content"]}]}],
                "inferenceConfig": {"maxTokens": 200}}
    json_ct = {"content-type": "application/json"}
    # (name, base, path, body, headers, what ends the answer)
    targets = [
        ("direct: Anthropic Messages", mock_url, "/v1/messages", body("claude-sonnet-4-5"), anthropic, b"message_stop"),
        ("gateway → Anthropic", gw_url, "/v1/messages", body("claude-direct"), anthropic, b"message_stop"),
        ("direct: Bedrock InvokeModel stream", mock_url, f"/model/{claude}/invoke-with-response-stream",
         # Its events are base64 inside the frames: the whole body read is the check.
         json.dumps(invoke).encode(), {**json_ct, **sigv4}, b":event-type"),
        ("gateway → Bedrock InvokeModel", gw_url, "/v1/messages", body("claude-bedrock"), anthropic, b"message_stop"),
        # The same with a Bedrock API key: no SigV4 signature, the event stream read the same.
        ("gateway → Bedrock InvokeModel, API key", gw_url, "/v1/messages", body("claude-bedrock-key"),
         anthropic, b"message_stop"),
        ("direct: Bedrock ConverseStream", mock_url, "/model/amazon.nova-pro-v1%3A0/converse-stream",
         json.dumps(converse).encode(), {**json_ct, **sigv4}, b"metadata"),
        ("gateway → Bedrock Converse", gw_url, "/v1/messages", body("nova-bedrock"), anthropic, b"message_stop"),
        ("direct: Vertex streamRawPredict", mock_url, vertex, json.dumps(on_vertex).encode(),
         {**json_ct, **bearer}, b"message_stop"),
        ("gateway → Vertex rawPredict", gw_url, "/v1/messages", body("claude-vertex"), anthropic, b"message_stop"),
    ]
    conns = {}
    for name, url, *_ in targets:
        conns[name] = http.client.HTTPConnection(url.split("://", 1)[1], timeout=30)
    times = {t[0]: [] for t in targets}
    overheads = {t[0]: [] for t in targets}
    for i in range(args.warmups + args.rounds):
        order = targets[i % len(targets):] + targets[:i % len(targets)]
        for name, _, path, payload, headers, end in order:
            took, overhead = send(conns[name], path, payload, headers, end)
            if i >= args.warmups:
                times[name].append(took)
                if overhead is not None:
                    overheads[name].append(overhead)

    def p(values, q):
        return statistics.quantiles(values, n=100)[q - 1] if len(values) > 1 else values[0]

    print("| target | client median ms | p90 ms | gateway − direct, median ms |")
    print("|---|---|---|---|")
    result = {}
    direct = None
    for name, *_ in targets:
        med, p90 = statistics.median(times[name]), p(times[name], 90)
        own = statistics.median(overheads[name]) if overheads[name] else None
        added = None if name.startswith("direct") else med - direct
        direct = med if name.startswith("direct") else direct
        result[name] = {"median_ms": med, "p90_ms": p90, "overhead_header_ms": own,
                        "added_ms": added, "n": len(times[name])}
        print(f"| {name} | {med:.3f} | {p90:.3f} | {'' if added is None else f'+{added:.3f}'} |")
    os.makedirs(os.path.join(ROOT, "bench", "results"), exist_ok=True)
    out = os.path.join(ROOT, "bench", "results", f"clouds-{time.strftime('%Y%m%d-%H%M%S')}.json")
    with open(out, "w") as f:
        json.dump({"rounds": args.rounds, "bin": args.bin, "targets": result}, f, indent=1)
    print(f"\nwritten to {out}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""What prompt-cache breakpoints save on multi-turn sessions whose client sets none: the
same sessions through `trimgate serve` with `[optimize] cache_breakpoints` on (the default)
and off, to `trimgate mock --prompt-cache`, which plays Anthropic's cache (marks write
their prefix for 5 minutes, later requests read the longest written prefix at or up to
20 blocks before one of their marks, 1,024 tokens at least) and reports the reads and
writes in its usage. The gateway's ledger prices every request at the bundled rates of
claude-sonnet-4-6: input $3 / MTok, cache write 1.25× ($3.75), cache read 0.1× ($0.30),
output $15.

    python3 bench/cache_sessions.py [--sessions 8] [--turns 16]

Two kinds of client, each a coding-agent loop (a system prompt and tool definitions, then
turns of tool calls and file-sized tool results): an Anthropic Messages client, and an
OpenAI Chat client whose requests the gateway translates to Messages. The optimizer's
passes are off in both runs, so breakpoints are the only difference. Prints a Markdown
table and writes bench/results/cache-sessions-<ts>.json. Env: BENCH_BIN as bench/attacks.py.
"""

import argparse
import http.client
import json
import os
import random
import sqlite3
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from attacks import BIN, machine, start, stop  # noqa: E402

MODEL = "claude-sonnet-4-6"
WORDS = ("parse config route provider stream token cache ledger request response error "
         "retry budget window session prefix header body reader writer buffer handler "
         "module struct trait impl async await match return result option vector string").split()


def text(rng, words):
    return " ".join(rng.choice(WORDS) for _ in range(words))


def agent_session(rng, turns):
    """A coding-agent session: (system, tools, [(user ask, [(tool call, result)…])…])."""
    system = "You are a coding agent working in a Rust repository. " + text(rng, 1800)
    tools = [
        {"name": name, "description": text(rng, 160),
         "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}
        for name in ("read_file", "list_dir", "grep", "run_tests", "edit_file", "git_diff")
    ]
    steps = []
    for t in range(turns):
        tool = rng.choice(tools)["name"]
        steps.append((f"Step {t}: {text(rng, 20)}", tool, f"src/mod{t}.rs", text(rng, rng.randint(300, 1500))))
    return system, tools, steps


def messages_requests(session):
    """Each turn's Messages request, without any cache_control (as an SDK script sends)."""
    system, tools, steps = session
    history = []
    for i, (ask, tool, path, result) in enumerate(steps):
        history.append({"role": "user", "content": ask if i == 0 else [
            {"type": "tool_result", "tool_use_id": f"toolu_{i - 1:04d}", "content": steps[i - 1][3]},
            {"type": "text", "text": ask}]})
        yield {"model": MODEL, "max_tokens": 64, "system": system, "tools": tools, "messages": list(history)}
        history.append({"role": "assistant", "content": [
            {"type": "text", "text": f"Reading {path}."},
            {"type": "tool_use", "id": f"toolu_{i:04d}", "name": tool, "input": {"path": path}}]})


def chat_requests(session):
    """The same turns as an OpenAI Chat client sends them (translated to Messages)."""
    system, tools, steps = session
    chat_tools = [{"type": "function", "function": {"name": t["name"], "description": t["description"],
                                                     "parameters": t["input_schema"]}} for t in tools]
    history = [{"role": "system", "content": system}]
    for i, (ask, tool, path, result) in enumerate(steps):
        if i > 0:
            history.append({"role": "tool", "tool_call_id": f"call_{i - 1:04d}", "content": steps[i - 1][3]})
        history.append({"role": "user", "content": ask})
        yield {"model": MODEL, "max_tokens": 64, "tools": chat_tools, "messages": list(history)}
        history.append({"role": "assistant", "content": f"Reading {path}.", "tool_calls": [
            {"id": f"call_{i:04d}", "type": "function",
             "function": {"name": tool, "arguments": json.dumps({"path": path})}}]})


def post(addr, path, body, headers):
    host, port = addr.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=60)
    conn.request("POST", path, json.dumps(body), {"content-type": "application/json", **headers})
    res = conn.getresponse()
    data = res.read()
    conn.close()
    if res.status != 200:
        raise SystemExit(f"{path}: {res.status} {data[:300]!r}")


def run(breakpoints, args, scratch):
    """Every session through a fresh mock and gateway; the ledger's totals."""
    tag = "on" if breakpoints else "off"
    env = {**os.environ, "HOME": scratch, "XDG_DATA_HOME": scratch, "XDG_CONFIG_HOME": scratch,
           "BENCH_ANTHROPIC_KEY": "sk-ant-mock"}
    mock, mock_addr = start([BIN, "mock", "--listen", "127.0.0.1:0", "--prompt-cache"],
                            "mock provider listening on ", env, os.path.join(scratch, f"mock-{tag}.log"))
    ledger = os.path.join(scratch, f"ledger-{tag}.sqlite")
    config = os.path.join(scratch, f"config-{tag}.toml")
    with open(config, "w") as f:
        f.write(f"""
[optimize]
tool_output = "off"
terse = "off"
prune = "off"
cache_breakpoints = {str(breakpoints).lower()}

[ledger]
url = "sqlite://{ledger}"

[providers.anthropic]
kind = "anthropic"
base_url = "http://{mock_addr}/v1"
api_key = {{ env = "BENCH_ANTHROPIC_KEY" }}
models = ["claude-*"]
""")
    gw, gw_addr = start([BIN, "serve", "--config", config, "--listen", "127.0.0.1:0"],
                        "Trimgate listening on ", env, os.path.join(scratch, f"gateway-{tag}.log"))
    try:
        for kind in ("messages", "chat"):
            rng = random.Random(args.seed)
            for s in range(args.sessions):
                session = agent_session(rng, args.turns)
                if kind == "messages":
                    for body in messages_requests(session):
                        post(gw_addr, "/v1/messages", body, {"x-api-key": "client", "anthropic-version": "2023-06-01"})
                else:
                    for body in chat_requests(session):
                        post(gw_addr, "/v1/chat/completions", body, {"authorization": "Bearer client"})
    finally:
        stop(gw)
        stop(mock)
    db = sqlite3.connect(ledger)
    out = {}
    for kind, dialect in (("messages", "anthropic_messages"), ("chat", "openai_chat")):
        row = db.execute(
            "SELECT count(*), sum(input_tokens), sum(cache_read_tokens), sum(cache_write_tokens), sum(cost_usd) "
            "FROM requests WHERE dialect = ? AND status = 200", (dialect,)).fetchone()
        out[kind] = {"requests": row[0], "input_tokens": row[1], "cache_read_tokens": row[2],
                     "cache_write_tokens": row[3], "cost_usd": row[4]}
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sessions", type=int, default=8)
    ap.add_argument("--turns", type=int, default=16)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    scratch = tempfile.mkdtemp(prefix="trimgate-cache-sessions-")
    results = {"off": run(False, args, scratch), "on": run(True, args, scratch)}
    print(f"\n{args.sessions} sessions × {args.turns} turns per client, {MODEL} prices, `trimgate mock --prompt-cache`\n")
    print("| client | breakpoints | requests | input tokens (all) | of them cache reads | cache writes | cost | vs off |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for kind, label in (("messages", "Anthropic Messages, no marks"), ("chat", "OpenAI Chat → Messages")):
        off = results["off"][kind]["cost_usd"]
        for tag in ("off", "on"):
            r = results[tag][kind]
            print(f"| {label} | {tag} | {r['requests']} | {r['input_tokens']:,} | {r['cache_read_tokens']:,} | "
                  f"{r['cache_write_tokens']:,} | ${r['cost_usd']:.4f} | {r['cost_usd'] / off - 1:+.1%} |")
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    path = os.path.join(HERE, "results", f"cache-sessions-{time.strftime('%Y%m%dT%H%M%S')}.json")
    with open(path, "w") as f:
        json.dump({"args": vars(args), "machine": machine(), "results": results}, f, indent=1)
    print(f"\n{path}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""What the secrets guard adds to a request: the same agent requests sent to the mock
directly, through a gateway with `[guard] mode = "off"` and through one with the default
(`redact`), all three on one `trimgate mock`.

    cargo build --profile fast --bin trimgate
    python3 bench/guard.py [--bin PATH] [--sizes 100,600] [--warm 50] [--warmups 5] [--cold 5]

The requests are what Claude Code sends to `/v1/messages` (non-streamed): a system prompt,
a dozen tool definitions, and a history of tool_use / tool_result turns whose results are
the real command outputs captured in bench/corpus/outputs (source files read with line
numbers, logs, listings, git logs, test failures), each cut at 30,000 characters as Claude
Code cuts a Bash output. That text is full of `token`, `key`, `password`, `auth` and `://`,
so it passes the guard's keyword prefilter and every string is searched by the rules, as
in real use. Two variants per size: (a) no secrets, (b) the same request with one more turn
whose tool result is a `.env` file holding 6 secrets (values of
tests/fixtures/secrets/dot-env, each of them found by the detector); the mock quotes the
start of that tool result back, so the answer gets values put back as well.

- **warm**, twice per case: the same request every round (**resent**: an agent sends its
  whole history again each turn, and the guard remembers the strings it found clean), and
  every searched string made new each round (**all new**: a round number in front of each,
  so nothing is remembered — the cost of a first sight). Each gets a fresh pair of
  gateways (off, redact); after `--warmups`
  requests to each target, `--warm` rounds, each sending the request once to every target
  in a rotating order on keep-alive connections: the median and p90 of the client's time
  (request sent to answer read), and the median of the gateway's own
  `x-trimgate-overhead-ms` (its time before the upstream call, the guard's search and
  replacement included; the answer's restore runs after that header is stamped).
- **cold**: the first request to a freshly started gateway (the process started, its
  `listening` line read, the request sent on a new connection), `--cold` times per mode,
  off and redact alternating; direct = the first request on a new connection to the mock.

The response cache stays on its default (exact answers only for `temperature: 0`, which
these requests do not send); the optimizer's passes keep their defaults unless
`--passes off`. Each gateway has its own ledger, read afterwards to check what the guard
found: (a) must show nothing, (b) 6 secrets per request through redact. Prints Markdown
tables and writes bench/results/guard-<ts>.json. Loopback only; stops what it starts.
"""

import argparse
import http.client
import json
import os
import random
import re
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from attacks import machine, start, stop  # noqa: E402

ROOT = os.path.dirname(HERE)
TARGET_DIR = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
OUTPUTS = os.path.join(HERE, "corpus", "outputs")
MODEL = "claude-sonnet-4-6"
KEY = "sk-ant-mock"
BASH_MAX = 30_000  # Claude Code's default cap on a Bash output, in characters

# The tool results, in the order a session reads them: (file in bench/corpus/outputs, tool).
STEPS = [
    ("ls-laR-core-src.txt", "Bash"),
    ("cat-n-proxy-rs.txt", "Read"),
    ("cat-n-config-rs.txt", "Read"),
    ("cargo-build-errors.txt", "Bash"),
    ("grep-error-rs.txt", "Grep"),
    ("gateway-debug-log.txt", "Bash"),
    ("cat-n-upstream-rs.txt", "Read"),
    ("git-log-format.txt", "Bash"),
    ("cargo-test-failures.txt", "Bash"),
    ("cat-n-routing-rs.txt", "Read"),
    ("pytest-failures.txt", "Bash"),
    ("postgres-log.txt", "Bash"),
    ("cat-n-error-rs.txt", "Read"),
    ("git-diff-core-src.txt", "Bash"),
    ("nginx-access-log.txt", "Bash"),
    ("cat-n-usage-rs.txt", "Read"),
    ("jest-verbose-failures.txt", "Bash"),
    ("cat-cargo-lock.txt", "Bash"),
    ("redis-server-log.txt", "Bash"),
    ("cat-n-relay-rs.txt", "Read"),
    ("go-test-v.txt", "Bash"),
    ("find-repo-pruned.txt", "Bash"),
    ("rust-panic-backtrace-full.txt", "Bash"),
    ("cat-n-sniff-rs.txt", "Read"),
    ("vitest-verbose-failures.txt", "Bash"),
    ("gateway-debug-log-tail.txt", "Bash"),
    ("cat-n-bench-py.txt", "Read"),
    ("npm-install-http.txt", "Bash"),
    ("git-log-stat-200.txt", "Bash"),
    ("mocha-spec-failures.txt", "Bash"),
]

# A .env as an agent reads it (Read: numbered lines): 6 secrets (values from
# tests/fixtures/secrets/dot-env and labels.toml) among settings that only look like them.
# Each is of a kind found after a line number too: a bare `NAME_SECRET=value` (the
# env-assignment rule) is not, as its name must start the line.
DOT_ENV_SECRETS = 6
DOT_ENV = """# App settings, loaded by dotenv
NODE_ENV=production
PORT=3000
DATABASE_URL=postgres://app_user:3zgUc2-N4Desicqr@db.internal:5432/app?sslmode=require
LOG_LEVEL=info
OPENAI_API_KEY=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
ANTHROPIC_API_KEY=sk-ant-api03-BbmMk3kSaYzqq8F6C7G580FRjJlEuJNG7WlHZuyGAzPBO2OKWSpgsJfURRL6VewtreUv19_xaBlelvzJsZ6glL4ThLBaPAA
STRIPE_SECRET_KEY=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
SLACK_USER_TOKEN=xoxp-399403314456-358346763902-8695900905012-390c5ea1cf28c0e85de07f0c328abf10
HF_TOKEN=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
NEXTAUTH_URL=https://app.acme.dev
SMTP_HOST=smtp.acme.dev
SMTP_USER=mailer
FEATURE_FLAGS=search,billing
ADMIN_EMAIL=ops@acme.dev
MAX_TOKENS=4096
AUTH_ENABLED=true
TOKEN_TTL_SECONDS=3600
PASSWORD_MIN_LENGTH=12
"""

GUIDANCE = [
    "You are an interactive CLI tool that helps users with software engineering tasks. Use the instructions below and the tools available to you to assist the user.",
    "IMPORTANT: Assist with defensive security tasks only. Refuse to create, modify, or improve code that may be used maliciously. Never print, log or commit secrets, API keys, tokens or passwords you come across; refer to them by the name of their variable.",
    "When the user asks about the codebase, search it with the Grep and Glob tools before answering, and read the files you will change with the Read tool first. Prefer editing existing files to creating new ones.",
    "Keep your responses short, since they will be displayed on a command line interface. Answer the user's question directly, without elaboration, explanation, or details, unless the user asks for them.",
    "When you run a non-trivial bash command, explain what the command does and why you are running it, to make sure the user understands what you are doing, particularly when the command changes the user's system.",
    "Follow the conventions of the code you work in: look at neighbouring files, the imports, the test layout and the configuration (Cargo.toml, package.json, pyproject.toml) before adding a dependency or a new pattern.",
    "Use the TodoWrite tool to plan and track tasks that take several steps; mark each todo completed as soon as it is done, and do not batch up several tasks before marking them.",
    "When you are done with a change, run the project's lint and type-check commands (cargo clippy, npm run lint, ruff) if you can find them, and its tests; never commit unless the user asks you to.",
    "Authentication code deserves extra care: check how tokens are refreshed, where credentials are read from, which keys are rotated, and that a password or a session secret never reaches a log line.",
]

TOOLS = {
    "Bash": ("Executes a given bash command in a persistent shell session with optional timeout, ensuring proper handling and security measures.",
             {"command": "string", "description": "string", "timeout": "number", "run_in_background": "boolean"}, ["command"]),
    "Read": ("Reads a file from the local filesystem. You can access any file directly by using this tool. Results are returned using cat -n format, with line numbers starting at 1.",
             {"file_path": "string", "offset": "number", "limit": "number"}, ["file_path"]),
    "Grep": ("A powerful search tool built on ripgrep. Supports full regex syntax; filter files with the glob or type parameter; output modes: content, files_with_matches, count.",
             {"pattern": "string", "path": "string", "glob": "string", "output_mode": "string", "-n": "boolean", "-i": "boolean"}, ["pattern"]),
    "Glob": ("Fast file pattern matching tool that works with any codebase size. Supports glob patterns like **/*.js or src/**/*.ts and returns matching file paths sorted by modification time.",
             {"pattern": "string", "path": "string"}, ["pattern"]),
    "Edit": ("Performs exact string replacements in files. You must use your Read tool at least once in the conversation before editing. The edit will FAIL if old_string is not unique in the file.",
             {"file_path": "string", "old_string": "string", "new_string": "string", "replace_all": "boolean"}, ["file_path", "old_string", "new_string"]),
    "MultiEdit": ("Makes multiple edits to a single file in one operation, each an exact string replacement applied in sequence.",
                  {"file_path": "string", "edits": "array"}, ["file_path", "edits"]),
    "Write": ("Writes a file to the local filesystem, overwriting the existing file if there is one. ALWAYS prefer editing existing files in the codebase.",
              {"file_path": "string", "content": "string"}, ["file_path", "content"]),
    "TodoWrite": ("Use this tool to create and manage a structured task list for your current coding session. This helps you track progress and organize complex tasks.",
                  {"todos": "array"}, ["todos"]),
    "WebFetch": ("Fetches content from a specified URL and processes it using an AI model; takes a URL and a prompt as input, converts HTML to markdown.",
                 {"url": "string", "prompt": "string"}, ["url", "prompt"]),
    "WebSearch": ("Allows Claude to search the web and use the results to inform responses; provides up-to-date information for current events and recent data.",
                  {"query": "string", "allowed_domains": "array", "blocked_domains": "array"}, ["query"]),
    "Task": ("Launch a new agent to handle complex, multi-step tasks autonomously. Each agent type has specific capabilities and tools available to it.",
             {"description": "string", "prompt": "string", "subagent_type": "string"}, ["description", "prompt", "subagent_type"]),
    "NotebookEdit": ("Completely replaces the contents of a specific cell in a Jupyter notebook (.ipynb file) with new source.",
                     {"notebook_path": "string", "cell_id": "string", "new_source": "string", "edit_mode": "string"}, ["notebook_path", "new_source"]),
}


# ---------------------------------------------------------------------------------------
# The requests


def commands():
    """{file: the command that produced it}, from the corpus's MANIFEST.md."""
    out, name = {}, None
    with open(os.path.join(OUTPUTS, "MANIFEST.md")) as f:
        for line in f:
            m = re.match(r"### `(.+)`", line)
            if m:
                name = m.group(1)
            m = re.match(r"- command: `(.+)`$", line.rstrip("\n"))
            if m and name:
                out[name] = m.group(1)
    return out


def tool_id(rng):
    return "toolu_01" + "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789") for _ in range(22))


def tool_input(name, file, command):
    if name == "Read":
        path = re.sub(r"^cat -n ", "", command or f"src/{file}")
        return {"file_path": "/home/dev/trimgate/" + path.split()[-1].lstrip("./")}
    if name == "Grep":
        return {"pattern": "GatewayError::", "path": "gateway-core/src", "output_mode": "content", "-n": True}
    return {"command": command or file, "description": f"Run {command.split()[0] if command else file}"}


def base_request(rng):
    sentences = GUIDANCE * 4
    system = "\n\n".join(sentences) + "\n\n<env>\nWorking directory: /home/dev/trimgate\nIs directory a git repo: Yes\nPlatform: linux\n</env>"
    tools = []
    for name, (desc, props, required) in TOOLS.items():
        long_desc = desc + "\n\nUsage notes:\n" + "\n".join(f"  - {g}" for g in rng.sample(GUIDANCE, 5))
        tools.append({"name": name, "description": long_desc, "input_schema": {
            "type": "object", "$schema": "http://json-schema.org/draft-07/schema#", "additionalProperties": False,
            "properties": {p: {"type": t, "description": f"The {p.replace('_', ' ')} to use"} for p, t in props.items()},
            "required": required}})
    first = ("<system-reminder>\nAs you answer the user's questions, you can use the following context: "
             "the project's CLAUDE.md says to run scripts/test.sh before committing.\n</system-reminder>\n"
             "The gateway sometimes answers 502 when the upstream resets a keep-alive connection; "
             "find where the retry decides, explain it, and propose a fix with a test.")
    return {"model": MODEL, "max_tokens": 32000, "stream": False,
            "system": [{"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude."},
                       {"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}],
            "tools": tools,
            "metadata": {"user_id": "user_5f0c7e0d_account__session_2b8e4a3c-7d1f-4e6b-9a52-c0ffee000001"},
            "messages": [{"role": "user", "content": [{"type": "text", "text": first}]}]}


def add_turn(req, rng, name, input_, result, note):
    tid = tool_id(rng)
    req["messages"].append({"role": "assistant", "content": [
        {"type": "text", "text": note},
        {"type": "tool_use", "id": tid, "name": name, "input": input_}]})
    req["messages"].append({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": tid, "content": result}]})


def size(req):
    return len(json.dumps(req, separators=(",", ":")).encode())


def agent_request(target_bytes, seed=7):
    """(a) a no-secrets request of about `target_bytes` (the last tool result cut to fit),
    and (b) the same with a `.env` read appended."""
    rng = random.Random(seed)
    cmds = commands()
    req = base_request(rng)
    i = 0
    while size(req) < target_bytes:
        file, name = STEPS[i % len(STEPS)]
        with open(os.path.join(OUTPUTS, file), errors="replace") as f:
            text = f.read()[:BASH_MAX]
        if i >= len(STEPS):  # a second pass: a later read of the same output
            text = f"(run {i // len(STEPS) + 1})\n" + text
        add_turn(req, rng, name, tool_input(name, file, cmds.get(file)), text,
                 f"Let me look at {file.rsplit('.', 1)[0].replace('-', ' ')}.")
        i += 1
    # Cut the last result so the body is target_bytes, or just over.
    over = size(req) - target_bytes
    last = req["messages"][-1]["content"][0]
    if over > 0:
        last["content"] = last["content"][:max(0, len(last["content"]) - over)]
        while size(req) < target_bytes:  # escapes made the cut too deep
            last["content"] += " "
    plain = req
    secrets = json.loads(json.dumps(req))
    numbered = "".join(f"{n:6d}\t{line}\n" for n, line in enumerate(DOT_ENV.splitlines(), 1))
    add_turn(secrets, rng, "Read", {"file_path": "/home/dev/app/.env"}, numbered,
             "The connection settings come from the environment; let me read .env.")
    return plain, secrets


# ---------------------------------------------------------------------------------------
# Processes and HTTP


def gateway_config(path, mock_addr, mode, ledger, passes):
    with open(path, "w") as f:
        f.write(f'[providers.anthropic]\nkind = "anthropic"\nbase_url = "http://{mock_addr}/v1"\n'
                f'api_key = {{ env = "BENCH_ANTHROPIC_KEY" }}\nmodels = ["claude-*"]\n\n'
                f'[ledger]\nurl = "sqlite://{ledger}"\n')
        if mode == "off":
            f.write('\n[guard]\nmode = "off"\n')
        if passes == "off":
            f.write('\n[optimize]\ntool_output = "off"\nterse = "off"\nprune = "off"\ncache_breakpoints = false\n')


class Gateways:
    """Starts gateways on the mock, each in its own directory with its own ledger; keeps
    what their ledgers recorded."""

    def __init__(self, bin_, scratch, mock_addr, passes):
        self.bin, self.scratch, self.mock_addr, self.passes = bin_, scratch, mock_addr, passes
        self.n = 0
        self.found = []  # (mode, case, [secrets column per request])

    def start(self, mode):
        self.n += 1
        d = os.path.join(self.scratch, f"gw-{self.n:03d}-{mode}")
        os.makedirs(d)
        ledger = os.path.join(d, "ledger.sqlite")
        config = os.path.join(d, "config.toml")
        gateway_config(config, self.mock_addr, mode, ledger, self.passes)
        env = {**os.environ, "HOME": d, "XDG_DATA_HOME": d, "XDG_CONFIG_HOME": d,
               "BENCH_ANTHROPIC_KEY": KEY, "TRIMGATE_LOG": "warn"}
        t0 = time.perf_counter_ns()
        p, addr = start([self.bin, "serve", "--config", config, "--listen", "127.0.0.1:0"],
                        "Trimgate listening on ", env, os.path.join(d, "gateway.log"))
        p.started_ms = (time.perf_counter_ns() - t0) / 1e6
        p.ledger = ledger
        return p, addr

    def stop(self, p, mode, case):
        stop(p)
        try:
            db = sqlite3.connect(p.ledger)
            rows = [r[0] or "" for r in db.execute("SELECT secrets FROM requests ORDER BY rowid")]
            db.close()
        except sqlite3.Error as e:
            rows = [f"ledger unreadable: {e}"]
        self.found.append((mode, case, rows))


class Client:
    """One keep-alive connection; post() returns (ms, overhead header or None, body)."""

    def __init__(self, addr):
        host, port = addr.rsplit(":", 1)
        self.conn = http.client.HTTPConnection(host, int(port), timeout=120)
        self.conn.connect()
        self.conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def post(self, body):
        headers = {"content-type": "application/json", "x-api-key": KEY, "anthropic-version": "2023-06-01"}
        t0 = time.perf_counter_ns()
        self.conn.request("POST", "/v1/messages", body, headers)
        res = self.conn.getresponse()
        data = res.read()
        ms = (time.perf_counter_ns() - t0) / 1e6
        if res.status != 200:
            raise SystemExit(f"status {res.status}: {data[:300]!r}")
        overhead = res.getheader("x-trimgate-overhead-ms")
        return ms, (float(overhead) if overhead is not None else None), data

    def close(self):
        self.conn.close()


def q(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))]


def summary(times, overheads=None):
    out = {"n": len(times), "median_ms": statistics.median(times), "p90_ms": q(times, 0.9),
           "min_ms": min(times), "samples_ms": [round(t, 3) for t in times]}
    if overheads and all(o is not None for o in overheads):
        out["overhead_median_ms"] = statistics.median(overheads)
        out["overhead_p90_ms"] = q(overheads, 0.9)
        out["overhead_samples_ms"] = overheads
    return out


# ---------------------------------------------------------------------------------------
# The measurements


SKIPPED_KEYS = {"model", "type", "role", "id", "tool_use_id", "name", "signature", "data", "media_type"}


def renewed(req, n):
    """`req` with every string the guard would search made new (a round number in front):
    what a first sight of a whole history costs, with nothing remembered from before."""
    def walk(node, key=None):
        if isinstance(node, dict):
            return {k: walk(v, k) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v, key) for v in node]
        if isinstance(node, str) and len(node) >= 8 and key not in SKIPPED_KEYS:
            return f"#{n} {node}"
        return node
    return json.dumps(walk(req), separators=(",", ":")).encode()


def warm(gws, mock_addr, case, body, args):
    """Fresh off and redact gateways; warm-ups, then rounds over the three targets.
    `body(i)` is round i's request (the same bytes every round, or renewed ones)."""
    procs = {m: gws.start(m) for m in ("off", "redact")}
    try:
        addrs = {"direct": mock_addr, "off": procs["off"][1], "redact": procs["redact"][1]}
        clients = {t: Client(a) for t, a in addrs.items()}
        answers = {}
        for t, c in clients.items():
            for w in range(args.warmups):
                answers[t] = c.post(body(-1 - w))[2]
        times = {t: [] for t in clients}
        over = {t: [] for t in clients}
        order = list(clients)
        for i in range(args.warm):
            sent = body(i)
            for t in order[i % 3:] + order[:i % 3]:
                ms, oh, _ = clients[t].post(sent)
                times[t].append(ms)
                over[t].append(oh)
        for c in clients.values():
            c.close()
        return {t: summary(times[t], over[t]) for t in clients}, answers
    finally:
        for m, (p, _) in procs.items():
            gws.stop(p, m, case)


def cold(gws, mock_addr, case, body, args):
    times = {"direct": [], "off": [], "redact": []}
    over = {"off": [], "redact": []}
    started = {"off": [], "redact": []}
    for i in range(args.cold):
        c = Client(mock_addr)
        times["direct"].append(c.post(body)[0])
        c.close()
        for mode in (("off", "redact") if i % 2 == 0 else ("redact", "off")):
            p, addr = gws.start(mode)
            try:
                c = Client(addr)
                ms, oh, _ = c.post(body)
                c.close()
            finally:
                gws.stop(p, mode, case)
            times[mode].append(ms)
            over[mode].append(oh)
            started[mode].append(p.started_ms)
    out = {"direct": summary(times["direct"])}
    for mode in ("off", "redact"):
        out[mode] = summary(times[mode], over[mode])
        out[mode]["spawn_to_listening_median_ms"] = statistics.median(started[mode])
    return out


def commit():
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True).stdout.strip()
        return head + ("+dirty" if dirty else "")
    except OSError:
        return ""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.path.join(TARGET_DIR, "fast", "trimgate"))
    ap.add_argument("--sizes", default="100,600", help="request sizes in KiB, comma-separated")
    ap.add_argument("--warm", type=int, default=50, help="measured rounds per warm case")
    ap.add_argument("--warmups", type=int, default=5)
    ap.add_argument("--cold", type=int, default=5, help="fresh gateways per mode and cold case")
    ap.add_argument("--passes", choices=("default", "off"), default="default",
                    help="the optimizer's passes: their defaults, or all off")
    args = ap.parse_args()
    if not os.access(args.bin, os.X_OK):
        raise SystemExit(f"no trimgate binary at {args.bin}: cargo build --profile fast --bin trimgate")

    load_before = os.getloadavg()
    scratch = tempfile.mkdtemp(prefix="trimgate-guard-bench-")
    env = {**os.environ, "HOME": scratch, "XDG_DATA_HOME": scratch, "XDG_CONFIG_HOME": scratch}
    mock, mock_addr = start([args.bin, "mock", "--listen", "127.0.0.1:0"], "mock provider listening on ",
                            env, os.path.join(scratch, "mock.log"))
    gws = Gateways(args.bin, scratch, mock_addr, args.passes)
    cases = []
    try:
        for kib in (int(s) for s in args.sizes.split(",")):
            plain, secrets = agent_request(kib * 1024)
            for variant, req in (("no secrets", plain), ("6 secrets", secrets)):
                body = json.dumps(req, separators=(",", ":")).encode()
                case = f"{kib} KiB, {variant}"
                print(f"[guard] {case}: {len(body):,} bytes, {len(req['messages'])} messages; warm…", file=sys.stderr, flush=True)
                w, answers = warm(gws, mock_addr, case, lambda i, b=body: b, args)
                print(f"[guard] {case}: warm, every string new each round…", file=sys.stderr, flush=True)
                fresh, _ = warm(gws, mock_addr, case + " (all new)", lambda i, r=req: renewed(r, i), args)
                print(f"[guard] {case}: cold…", file=sys.stderr, flush=True)
                c = cold(gws, mock_addr, case, body, args)
                restored = variant == "6 secrets" and b"3zgUc2-N4Desicqr" in answers["redact"] \
                    and b"3zgUc2-N4Desicqr" in answers["off"]
                cases.append({"case": case, "kib": kib, "variant": variant, "bytes": len(body),
                              "messages": len(req["messages"]), "warm": w, "warm_all_new": fresh, "cold": c,
                              "answer_has_value_back": restored if variant == "6 secrets" else None})
    finally:
        stop(mock)
    load_after = os.getloadavg()

    # What the guard found, from every gateway's ledger.
    found = {}
    for mode, case, rows in gws.found:
        f = found.setdefault(case, {}).setdefault(mode, {"requests": 0, "with_secrets": 0, "tallies": set()})
        f["requests"] += len(rows)
        f["with_secrets"] += sum(1 for r in rows if r)
        f["tallies"].update(r for r in rows if r)
    for case in found.values():
        for f in case.values():
            f["tallies"] = sorted(f["tallies"])
    for c in cases:
        c["ledger"] = found.get(c["case"], {})

    result = {"command": "python3 bench/guard.py " + " ".join(sys.argv[1:]), "bin": args.bin, "commit": commit(),
              "machine": machine(), "load_before": load_before, "load_after": load_after,
              "args": vars(args), "cases": cases}
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    out = os.path.join(HERE, "results", time.strftime("guard-%Y%m%dT%H%M%SZ.json", time.gmtime()))
    with open(out, "w") as f:
        json.dump(result, f, indent=1)

    m = result["machine"]
    print(f"Command: `{result['command']}`; commit {result['commit']}; {m['nproc']} vCPUs, {m['cpu']}; "
          f"load average {load_before[0]:.2f} before, {load_after[0]:.2f} after; passes: {args.passes}\n")
    print(f"Warm: median (p90) of {args.warm} rounds after {args.warmups} warm-ups, ms; "
          "overhead = the gateway's `x-trimgate-overhead-ms`, median.\n")
    print("Strings: **resent** = the same request every round (an agent's history, which the guard has "
          "searched before); **all new** = every searched string new each round (nothing remembered).\n")
    print("| request | strings | bytes | direct | guard off | guard redact | **redact − off** | off − direct | overhead off | overhead redact | **overhead redact − off** |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for c, which, label in [(c, w, l) for c in cases for w, l in (("warm", "resent"), ("warm_all_new", "all new"))]:
        d, o, r = c[which]["direct"], c[which]["off"], c[which]["redact"]
        print(f"| {c['case']} | {label} | {c['bytes']:,} | {d['median_ms']:.3f} ({d['p90_ms']:.3f}) | {o['median_ms']:.3f} ({o['p90_ms']:.3f}) | "
              f"{r['median_ms']:.3f} ({r['p90_ms']:.3f}) | **{r['median_ms'] - o['median_ms']:+.3f}** ({r['p90_ms'] - o['p90_ms']:+.3f}) | "
              f"{o['median_ms'] - d['median_ms']:+.3f} | {o['overhead_median_ms']:.3f} | {r['overhead_median_ms']:.3f} | "
              f"**{r['overhead_median_ms'] - o['overhead_median_ms']:+.3f}** |")
    print(f"\nCold: the first request to a fresh gateway, median (max) of {args.cold}, ms; direct = a new connection to the mock.\n")
    print("| request | direct | guard off | guard redact | **redact − off** | off − direct | overhead off | overhead redact | **overhead redact − off** |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for c in cases:
        d, o, r = c["cold"]["direct"], c["cold"]["off"], c["cold"]["redact"]
        mx = lambda s: max(s["samples_ms"])
        print(f"| {c['case']} | {d['median_ms']:.3f} ({mx(d):.3f}) | {o['median_ms']:.3f} ({mx(o):.3f}) | {r['median_ms']:.3f} ({mx(r):.3f}) | "
              f"**{r['median_ms'] - o['median_ms']:+.3f}** | {o['median_ms'] - d['median_ms']:+.3f} | {o['overhead_median_ms']:.3f} | "
              f"{r['overhead_median_ms']:.3f} | **{r['overhead_median_ms'] - o['overhead_median_ms']:+.3f}** |")
    print("\nWhat the ledgers recorded (requests with secrets found / requests):\n")
    for c in cases:
        led = c["ledger"]
        parts = [f"{mode} {f['with_secrets']}/{f['requests']} {'; '.join(f['tallies'])}".strip() for mode, f in sorted(led.items())]
        extra = "" if c["answer_has_value_back"] is None else f"; value back in the answer: {c['answer_has_value_back']}"
        print(f"- {c['case']}: " + ", ".join(parts) + extra)
    print(f"\nResults JSON: {out}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The fault campaign: what a client sees when a provider fails, and whether the gateway
holds up under failing traffic. Three parts, each against the release `trimgate serve` in
front of `trimgate mock` processes on loopback (RELIABILITY.md has the figures):

    python3 bench/faults.py table                 # every fault × stream or not × dialect × fallback, ~2 min
    python3 bench/faults.py soak --minutes 10     # mixed traffic at 20 req/s with 5 % faults, RSS and fds
    .venv/bin/python bench/faults.py streams      # 10,000 streams held open at once (needs `h2`)

`table` prints a Markdown table and writes bench/results/faults-table-<ts>.json; `soak`
and `streams` likewise (`faults-soak-…`, `faults-streams-…`). Env: BENCH_BIN (default
$CARGO_TARGET_DIR or target/, then release/trimgate). Everything the gateway writes goes
to a temp dir used as HOME; stops what it starts. `table` and `soak` need only the Python
3 stdlib; `streams` needs the `h2` package (HTTP/2 to the gateway, so that 10,000 streams
take 100 client connections instead of 10,000 descriptors on top of the 10,000 upstream).
"""

import argparse
import asyncio
import http.client
import json
import os
import random
import resource
import shutil
import socket
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from attacks import BIN, machine, mib, start, status_kib, stop  # noqa: E402

OPENAI_KEY = "sk-mock-openai"
ANTHROPIC_KEY = "sk-ant-mock"

CHAT, RESPONSES, MESSAGES = "chat", "responses", "messages"
DIALECTS = [CHAT, RESPONSES, MESSAGES]
PATHS = {CHAT: "/v1/chat/completions", RESPONSES: "/v1/responses", MESSAGES: "/v1/messages"}
# The provider kind that speaks each client dialect natively.
NATIVE = {CHAT: "openai", RESPONSES: "openai", MESSAGES: "anthropic"}
OTHER = {"openai": "anthropic", "anthropic": "openai"}
MODEL_OF = {"openai": "gpt-5", "anthropic": "claude-sonnet-5-5"}

# Small provider timeouts, so the timeout and stall faults take a second, not a minute.
FIRST_BYTE_SECS = 1
IDLE_SECS = 1


# ---------------------------------------------------------------------------------------
# Processes, configs and the ledger


def limits(want=65536):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = min(hard, want) if hard != resource.RLIM_INFINITY else want
    if soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


class Bench:
    """A temp HOME, the child processes started in it, and a clean stop."""

    def __init__(self, binary):
        self.bin = binary
        self.tmp = tempfile.mkdtemp(prefix="trimgate-faults-")
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("OPENAI_", "ANTHROPIC_", "DEEPSEEK_", "OTEL_"))}
        env.update({"HOME": self.tmp, "XDG_CONFIG_HOME": os.path.join(self.tmp, "config"),
                    "XDG_DATA_HOME": os.path.join(self.tmp, "data"),
                    "XDG_CACHE_HOME": os.path.join(self.tmp, "cache"),
                    "TRIMGATE_LOG": "warn", "MOCK_OPENAI_KEY": OPENAI_KEY,
                    "MOCK_ANTHROPIC_KEY": ANTHROPIC_KEY})
        env.pop("TRIMGATE_CONFIG", None)
        self.env = env
        self.procs = []

    def mock(self, name, *flags):
        p, addr = start([self.bin, "mock", "--listen", "127.0.0.1:0", "--any-key", *flags],
                        "mock provider listening on ", self.env, os.path.join(self.tmp, f"mock-{name}.log"))
        self.procs.append(p)
        return p, addr

    def gateway(self, config):
        cfg = os.path.join(self.tmp, "config.toml")
        with open(cfg, "w") as f:
            f.write(config)
        p, addr = start([self.bin, "serve", "--config", cfg, "--listen", "127.0.0.1:0"],
                        "Trimgate listening on ", self.env, os.path.join(self.tmp, "gateway.log"))
        self.procs.append(p)
        return p, addr

    @property
    def ledger(self):
        return os.path.join(self.tmp, "ledger.db")

    def close(self, keep=False):
        for p in reversed(self.procs):
            stop(p)
        if keep:
            print(f"kept {self.tmp}", file=sys.stderr)
        else:
            shutil.rmtree(self.tmp, ignore_errors=True)


def provider(name, kind, base, timeouts=True):
    key = "MOCK_OPENAI_KEY" if kind == "openai" else "MOCK_ANTHROPIC_KEY"
    t = (f"timeouts = {{ connect_secs = 2, first_byte_secs = {FIRST_BYTE_SECS}, idle_secs = {IDLE_SECS} }}\n"
         if timeouts else "")
    return (f'[providers.{name}]\nkind = "{kind}"\nbase_url = "{base}/v1"\n'
            f'api_key = {{ env = "{key}" }}\nmodels = ["{MODEL_OF[kind]}"]\n{t}\n')


def route(match, provider_name, kind, fallback_kind=None):
    fb = f'fallbacks = ["mock-{fallback_kind}/{MODEL_OF[fallback_kind]}"]\n' if fallback_kind else ""
    return f'[[routes]]\nmatch = "{match}"\nprovider = "{provider_name}"\nmodel = "{MODEL_OF[kind]}"\n{fb}\n'


def ledger_rows(path, request_id):
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
    except sqlite3.Error:
        return []
    try:
        return db.execute("SELECT attempt, outcome, status, error, provider FROM requests "
                          "WHERE request_id = ? ORDER BY attempt", (request_id,)).fetchall()
    except sqlite3.Error:
        return []
    finally:
        db.close()


def wait_rows(path, request_id, timeout=5.0):
    """The request's ledger rows once its final (non-retried) row is written."""
    deadline = time.monotonic() + timeout
    rows = []
    while time.monotonic() < deadline:
        rows = ledger_rows(path, request_id)
        if any(r[1] != "retried" for r in rows):
            # The writer stores a batch at once; a little more for stragglers.
            time.sleep(0.05)
            return ledger_rows(path, request_id)
        time.sleep(0.05)
    return rows


# ---------------------------------------------------------------------------------------
# Requests in each dialect, and what the client made of the answer


def body_for(dialect, model, stream):
    if dialect == CHAT:
        b = {"model": model, "messages": [{"role": "user", "content": "hello"}]}
    elif dialect == RESPONSES:
        b = {"model": model, "input": "hello"}
    else:
        b = {"model": model, "max_tokens": 64, "messages": [{"role": "user", "content": "hello"}]}
    if stream:
        b["stream"] = True
    return json.dumps(b, separators=(",", ":")).encode()


def base_headers(dialect):
    h = {"content-type": "application/json"}
    if dialect == MESSAGES:
        h["anthropic-version"] = "2023-06-01"
    return h


def sse_events(text):
    """(event name or None, data) per SSE frame."""
    out = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        event, data = None, []
        for line in block.split("\n"):
            if line.startswith("event:"):
                event = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].lstrip(" "))
        if data or event:
            out.append((event, "\n".join(data)))
    return out


def judge_stream(dialect, text):
    """What a streaming client saw: `complete`, `error_event` (the dialect's error frame was
    there, and which), malformed frames it could not parse."""
    complete, error_event, malformed = False, None, 0
    for event, data in sse_events(text):
        if data == "[DONE]":
            if dialect == CHAT:
                complete = complete or error_event is None
            continue
        try:
            j = json.loads(data) if data else {}
        except ValueError:
            malformed += 1
            continue
        kind = j.get("type") if isinstance(j, dict) else None
        if dialect == CHAT:
            if isinstance(j, dict) and "error" in j:
                error_event = "chat error chunk"
        elif dialect == RESPONSES:
            if kind == "error" or event == "error":
                error_event = "error"
            elif kind == "response.failed":
                error_event = (error_event + " + " if error_event else "") + "response.failed"
            elif kind == "response.completed":
                complete = True
        else:
            if kind == "error" or event == "error":
                error_event = "event: error"
            elif kind == "message_stop":
                complete = True
    return {"complete": complete and error_event is None, "error_event": error_event,
            "malformed_frames": malformed}


def judge_whole(dialect, status, body):
    try:
        j = json.loads(body)
    except ValueError:
        return {"complete": False, "error": body[:100].decode("utf-8", "replace"), "error_shape": None}
    if status != 200:
        e = j.get("error") if isinstance(j, dict) else None
        if dialect == MESSAGES:
            shape_ok = j.get("type") == "error" and isinstance(e, dict) and "type" in e
        else:
            shape_ok = isinstance(e, dict) and "message" in e
        code = (e or {}).get("type") if dialect == MESSAGES else ((e or {}).get("code") or (e or {}).get("type"))
        return {"complete": False, "error": f"{code}", "error_shape": "client's" if shape_ok else "other"}
    if dialect == CHAT:
        ok = bool(j.get("choices") and j["choices"][0].get("message", {}).get("content")
                  and j["choices"][0].get("finish_reason"))
    elif dialect == RESPONSES:
        ok = j.get("status") == "completed" and bool(j.get("output"))
    else:
        ok = j.get("type") == "message" and bool(j.get("content")) and bool(j.get("stop_reason"))
    return {"complete": ok, "error": None, "error_shape": None}


def send(addr, dialect, model, stream, headers, timeout=60):
    """One request; the client's view of it."""
    host, port = addr.rsplit(":", 1)
    rid = "faults-" + uuid.uuid4().hex[:16]
    h = {**base_headers(dialect), "x-request-id": rid, **headers}
    body = body_for(dialect, model, stream)
    t0 = time.monotonic()
    conn = http.client.HTTPConnection(host, int(port), timeout=timeout)
    try:
        conn.request("POST", PATHS[dialect], body=body, headers=h)
        res = conn.getresponse()
        data = res.read()
        status = res.status
        rh = {k.lower(): v for k, v in res.getheaders()}
    except Exception as e:  # a broken answer is a result
        return {"request_id": rid, "status": None, "client_error": f"{type(e).__name__}: {e}",
                "seconds": round(time.monotonic() - t0, 2), "complete": False}
    finally:
        conn.close()
    out = {"request_id": rid, "status": status, "seconds": round(time.monotonic() - t0, 2),
           "attempts": int(rh["x-trimgate-attempts"]) if rh.get("x-trimgate-attempts") else None,
           "provider": rh.get("x-trimgate-provider")}
    text = data.decode("utf-8", "replace")
    if rh.get("content-type", "").startswith("text/event-stream"):
        out.update(judge_stream(dialect, text))
    else:
        out.update(judge_whole(dialect, status, data))
    out["tail"] = text[-400:]
    return out


# ---------------------------------------------------------------------------------------
# Part 1: the fault table

# Each fault: how it is made without a fallback (a transient fault on a working provider,
# or a permanently broken provider for the transport faults) and with one (the first
# provider fails every time, or the fault is mid-stream and the fallback must stay unused),
# what is expected of each, and whether it applies to streams, whole answers or both.
#
#   kind "transport": a provider that cannot be reached at all (`broken` names it).
#   kind "status": header fault on the working mock (`hdr`), `fail-first 1` without a
#       fallback; with one, a mock that fails every request (`perm` names it).
#   kind "mid": a fault after the headers of a stream; never retried; `hdr` on the working mock.
#   kind "body": a whole answer's body that stalls; retried (`fail-first`, two with a fallback).
FAULTS = [
    {"id": "refused", "name": "connection refused (closed port)", "kind": "transport", "broken": "refused"},
    {"id": "dns", "name": "DNS failure (nonexistent.invalid)", "kind": "transport", "broken": "dns"},
    {"id": "tls", "name": "TLS handshake failure (https:// to the plain-HTTP mock)", "kind": "transport",
     "broken": "tls"},
    {"id": "drop", "name": "connection closed before the status line", "kind": "status",
     "hdr": {"x-mock-drop": "1"}, "perm": "drop"},
    {"id": "429", "name": "429 with retry-after: 1", "kind": "status",
     "hdr": {"x-mock-error-status": "429", "x-mock-retry-after": "1"}, "perm": "429",
     # A 429's reset takes its provider out of rotation until then, by design: the next
     # cell waits it out, so that each cell starts with every provider in rotation.
     "settle": 1.2},
    {"id": "500", "name": "500", "kind": "status", "hdr": {"x-mock-error-status": "500"}, "perm": "500"},
    {"id": "503", "name": "503", "kind": "status", "hdr": {"x-mock-error-status": "503"}, "perm": "503"},
    {"id": "529", "name": "529 overloaded", "kind": "status", "hdr": {"x-mock-error-status": "529"},
     "perm": "529"},
    {"id": "timeout", "name": f"no headers within first_byte_secs = {FIRST_BYTE_SECS} (mock waits 3 s)",
     "kind": "status", "hdr": {"x-mock-delay-ms": "3000"}, "perm": "slow"},
    {"id": "stall", "name": f"stall mid-stream (3 frames, then silence; idle_secs = {IDLE_SECS})", "kind": "mid",
     "hdr": {"x-mock-stall-after": "3"}, "streams_only": True},
    {"id": "stall-body", "name": f"stall mid-body (16 B every 1.5 s; idle_secs = {IDLE_SECS})", "kind": "body",
     "hdr": {"x-mock-drip-ms": "1500"}, "whole_only": True},
    {"id": "reset", "name": "reset mid-stream (3 frames, then the connection is cut)", "kind": "mid",
     "hdr": {"x-mock-reset-after": "3"}, "streams_only": True},
    {"id": "malformed", "name": "malformed SSE frame (cut-off JSON after 2 frames, then the rest)",
     "kind": "mid", "hdr": {"x-mock-malformed-after": "2"}, "streams_only": True},
    {"id": "drip", "name": "slow drip (16 B every 5 ms)", "kind": "mid", "hdr": {"x-mock-drip-ms": "5"}},
]

# Mock-wide flags of the permanently failing mocks, by `perm`.
PERMANENT = {
    "429": ["--fail-status", "429", "--retry-after", "1"],
    "500": ["--fail-status", "500"],
    "503": ["--fail-status", "503"],
    "529": ["--fail-status", "529"],
    "drop": ["--drop-every", "1"],
    "slow": ["--delay-ms", "3000"],
}


def expected(fault, stream, fallback):
    """(what the client should see, attempts, ledger rows as outcomes) by design."""
    kind = fault["kind"]
    if kind == "transport":
        if fallback:
            return "complete", 3, ["retried", "retried", "completed"]
        return "error status", 3, ["retried", "retried", "gateway_error"]
    # A whole answer's body that breaks off: nothing reached the client, so it is retried
    # like a failure before the headers.
    if kind in ("status", "body"):
        if fallback:
            return "complete", 3, ["retried", "retried", "completed"]
        return "complete", 2, ["retried", "completed"]
    if fault["id"] in ("malformed", "drip"):
        return "complete", 1, ["completed"]
    if not stream:
        return "error status", 1, ["gateway_error"]
    return "error event", 1, ["upstream_failed"]


def seen_as(r):
    if r.get("status") is None:
        return "no answer"
    if r["status"] != 200:
        return "error status"
    if r.get("error_event"):
        return "error event"
    return "complete" if r.get("complete") else "incomplete"


def run_table(args):
    b = Bench(args.bin)
    try:
        _, ok_addr = b.mock("ok")
        perm = {k: b.mock(k, *flags)[1] for k, flags in PERMANENT.items()}
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            closed_port = s.getsockname()[1]
        broken = {"refused": f"http://127.0.0.1:{closed_port}", "dns": "http://nonexistent.invalid:8080",
                  "tls": f"https://{ok_addr}"}
        providers, routes = [], []
        for kind in ("openai", "anthropic"):
            providers.append(provider(f"mock-{kind}", kind, f"http://{ok_addr}"))
            for name, base in [*broken.items(), *((k, f"http://{a}") for k, a in perm.items())]:
                providers.append(provider(f"{name}-{kind}", kind, base))
                routes.append(route(f"{name}-{kind}", f"{name}-{kind}", kind))
                routes.append(route(f"{name}-fb-{kind}", f"{name}-{kind}", kind, OTHER[kind]))
            routes.append(route(f"ok-{kind}", f"mock-{kind}", kind))
            routes.append(route(f"ok-fb-{kind}", f"mock-{kind}", kind, OTHER[kind]))
        # Cooldowns and the retry budget are turned out of the way so each cell shows the
        # retry policy on its own (each failing provider is asked a dozen times in a row).
        config = (f'[ledger]\nurl = "sqlite://{b.ledger}"\n\n'
                  "[retry]\ncooldown_failures = 1000\nbudget_floor = 100000\n\n"
                  + "".join(providers) + "".join(routes))
        gw, gw_addr = b.gateway(config)
        warm = send(gw_addr, CHAT, "ok-openai", False, {})
        if warm.get("status") != 200:
            raise SystemExit(f"the gateway does not serve a plain request: {warm}; see {b.tmp}")
        results = []
        only = set(args.only.split(",")) if args.only else None
        for fault in FAULTS:
            if only and fault["id"] not in only:
                continue
            for stream in (False, True):
                if fault.get("streams_only") and not stream or fault.get("whole_only") and stream:
                    continue
                for dialect in DIALECTS:
                    kind = NATIVE[dialect]
                    for fallback in (False, True):
                        fb = "-fb" if fallback else ""
                        headers = {}
                        if fault["kind"] == "transport":
                            model = f"{fault['broken']}{fb}-{kind}"
                        elif fault["kind"] == "status" and fallback:
                            model = f"{fault['perm']}-fb-{kind}"
                        else:
                            model = f"ok{fb}-{kind}"
                            headers = dict(fault["hdr"])
                            if fault["kind"] == "status":
                                headers.update({"x-mock-fail-first": "1",
                                                "x-mock-fault-key": uuid.uuid4().hex})
                            elif fault["kind"] == "body":
                                # Both tries of the first provider break; the fallback's is whole.
                                headers.update({"x-mock-fail-first": "2" if fallback else "1",
                                                "x-mock-fault-key": uuid.uuid4().hex})
                        time.sleep(fault.get("settle", 0))
                        r = send(gw_addr, dialect, model, stream, headers)
                        rows = wait_rows(b.ledger, r["request_id"])
                        want, want_attempts, want_rows = expected(fault, stream, fallback)
                        got = seen_as(r)
                        outcomes = [row[1] for row in rows]
                        r.update({"fault": fault["id"], "fault_name": fault["name"], "stream": stream,
                                  "dialect": dialect, "fallback": fallback, "model": model,
                                  "seen": got, "expected": want, "expected_attempts": want_attempts,
                                  "expected_rows": want_rows,
                                  "ledger": [{"attempt": a, "outcome": o, "status": s, "error": e,
                                              "provider": p} for a, o, s, e, p in rows]})
                        misses = []
                        if got != want:
                            misses.append(f"saw {got}")
                        if r.get("attempts") != want_attempts:
                            misses.append(f"{r.get('attempts')} attempts")
                        if outcomes != want_rows:
                            misses.append("ledger " + ",".join(outcomes))
                        if got == "error status" and r.get("error_shape") != "client's":
                            misses.append("error not in the client's shape")
                        if fallback and want == "complete" and fault["kind"] != "mid" and \
                                r.get("provider") != f"mock-{OTHER[kind]}":
                            misses.append(f"answered by {r.get('provider')}")
                        r["mismatch"] = misses
                        results.append(r)
                        mark = "ok" if not misses else "MISMATCH " + "; ".join(misses)
                        print(f"{fault['id']:>10} {'stream' if stream else 'whole':>6} {dialect:>9} "
                              f"{'fb' if fallback else '--'}: {r.get('status')} {got}, "
                              f"{r.get('attempts')} att, {r['seconds']} s  {mark}", file=sys.stderr, flush=True)
        report = {"run": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                  "command": " ".join(["python3", "bench/faults.py", *sys.argv[1:]]),
                  "bin": args.bin, "machine": machine(),
                  "settings": {"first_byte_secs": FIRST_BYTE_SECS, "idle_secs": IDLE_SECS,
                               "retry": "defaults (max_attempts 3, attempts_per_step 2, backoff 0.25 s "
                                        "doubling) but cooldown_failures 1000, budget_floor 100000"},
                  "results": results}
        out = write_json(args.out, "faults-table", report)
        print(fault_table(results))
        print(f"\n{sum(1 for r in results if r['mismatch'])} of {len(results)} cells differ from "
              f"the expected behaviour. JSON: {out}")
    finally:
        b.close(args.keep)


def fault_table(results):
    short = {CHAT: "Chat", RESPONSES: "Responses", MESSAGES: "Messages"}
    rows = ["| fault | stream | fallback | expected | Chat | Responses | Messages | ledger (each dialect) |",
            "|---|---|---|---|---|---|---|---|"]
    groups = {}
    for r in results:
        groups.setdefault((r["fault"], r["stream"], r["fallback"]), {})[r["dialect"]] = r
    for (fid, stream, fallback), by in groups.items():
        any_r = next(iter(by.values()))
        cells = []
        ledgers = []
        for d in DIALECTS:
            r = by.get(d)
            if r is None:
                cells.append("–")
                continue
            seen = r["seen"]
            if seen == "error status":
                what = f"{r['status']} {r.get('error') or ''}".strip()
            elif seen == "error event":
                what = f"200 + {r['error_event']}"
            else:
                what = f"{r['status']} {seen}"
                if r.get("malformed_frames"):
                    what += f" ({r['malformed_frames']} bad frame relayed)"
            if fallback and r.get("provider") and seen == "complete" and r["attempts"] and r["attempts"] > 1:
                what += f" via {r['provider']}"
            flag = " **≠**" if r["mismatch"] else ""
            cells.append(f"{what}; {r.get('attempts')} att; {r['seconds']} s{flag}")
            ledgers.append(",".join(f"{x['outcome']}" + (f"({x['error']})" if x["error"] else "")
                                    for x in r["ledger"]) or "none")
        same = len(set(ledgers)) == 1
        ledger = ledgers[0] if same else " / ".join(f"{short[d]}: {l}" for d, l in zip(DIALECTS, ledgers))
        exp = f"{any_r['expected']}, {any_r['expected_attempts']} att"
        rows.append(f"| {any_r['fault_name']} | {'yes' if stream else 'no'} | {'yes' if fallback else 'no'} "
                    f"| {exp} | {' | '.join(cells)} | {ledger} |")
    return "\n".join(rows)


def write_json(out, prefix, report):
    out = out or os.path.join(HERE, "results", time.strftime(f"{prefix}-%Y%m%dT%H%M%SZ.json", time.gmtime()))
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        json.dump(report, f, indent=2)
    return out


# ---------------------------------------------------------------------------------------
# A small asyncio HTTP/1.1 client with keep-alive, for the soak


class Pool:
    def __init__(self, host, port):
        self.host, self.port = host, port
        self.idle = []
        self.opened = 0
        self.stale = 0

    async def request(self, path, body, headers, timeout):
        """As HTTP clients do, a request that finds its kept-alive connection closed by the
        server (idle timeout) before any answer is sent again once on a new connection."""
        reused = bool(self.idle)
        if reused:
            reader, writer = self.idle.pop()
        else:
            reader, writer = await asyncio.open_connection(self.host, self.port)
            self.opened += 1
        try:
            head = [f"POST {path} HTTP/1.1", f"host: {self.host}:{self.port}",
                    f"content-length: {len(body)}"] + [f"{k}: {v}" for k, v in headers.items()]
            writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)
            status, rh, data = await asyncio.wait_for(read_response(reader), timeout)
        except StaleConnection:
            writer.close()
            if not reused:
                raise
            self.stale += 1
            self.idle.clear()
            return await self.request(path, body, headers, timeout)
        except BaseException:
            writer.close()
            raise
        if rh.get("connection", "").lower() == "close":
            writer.close()
        else:
            self.idle.append((reader, writer))
        return status, rh, data

    def close(self):
        for _, w in self.idle:
            w.close()
        self.idle = []


class StaleConnection(ConnectionError):
    """The server closed the connection before any byte of an answer."""


async def read_response(reader):
    try:
        line = await reader.readline()
    except ConnectionResetError as e:
        raise StaleConnection(str(e)) from e
    if not line:
        raise StaleConnection("closed before the status line")
    status = int(line.split()[1])
    rh = {}
    while True:
        line = await reader.readline()
        if line in (b"\r\n", b"\n", b""):
            break
        k, _, v = line.decode("latin-1").partition(":")
        rh[k.strip().lower()] = v.strip()
    if rh.get("transfer-encoding", "").lower() == "chunked":
        parts = []
        while True:
            size_line = await reader.readline()
            if not size_line:
                raise ConnectionError("closed mid-body")
            size = int(size_line.split(b";")[0].strip(), 16)
            if size == 0:
                await reader.readline()
                break
            parts.append(await reader.readexactly(size))
            await reader.readexactly(2)
        data = b"".join(parts)
    elif "content-length" in rh:
        data = await reader.readexactly(int(rh["content-length"]))
    else:
        data = await reader.read()
    return status, rh, data


# ---------------------------------------------------------------------------------------
# Part 2: the soak

# The faults mixed into the soak, with what the client must then see: `recovers` (a
# complete answer: the retry or the fallback fixes it) or `breaks` (the stream's error
# event: a fault after the first byte, by design not retried).
SOAK_FAULTS = [
    ("500, then fine", {"x-mock-error-status": "500", "x-mock-fail-first": "1"}, "recovers", None),
    ("503 twice: the fallback answers", {"x-mock-error-status": "503", "x-mock-fail-first": "2"}, "recovers", None),
    ("529, then fine", {"x-mock-error-status": "529", "x-mock-fail-first": "1"}, "recovers", None),
    ("429, then fine", {"x-mock-error-status": "429", "x-mock-fail-first": "1"}, "recovers", None),
    ("dropped, then fine", {"x-mock-drop": "1", "x-mock-fail-first": "1"}, "recovers", None),
    ("timeout, then fine", {"x-mock-delay-ms": "2500", "x-mock-fail-first": "1"}, "recovers", None),
    ("slow drip", {"x-mock-drip-ms": "2"}, "recovers", None),
    ("malformed frame", {"x-mock-malformed-after": "2"}, "recovers", True),
    ("stall mid-stream", {"x-mock-stall-after": "3"}, "breaks", True),
    ("reset mid-stream", {"x-mock-reset-after": "3"}, "breaks", True),
]


def proc_sample(pid):
    try:
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        fds = None
    # Anonymous memory (the heap) apart from file pages (the executable's code, which the
    # gateway hands back at start and faults in again as paths first run).
    return {"rss_kib": status_kib(pid, "VmRSS"), "anon_kib": status_kib(pid, "RssAnon"),
            "file_kib": status_kib(pid, "RssFile"), "fds": fds}


async def soak_traffic(addr, seconds, rate, share, stream_share, pid, sample_every, seed, skip):
    rng = random.Random(seed)
    host, port = addr.rsplit(":", 1)
    pool = Pool(host, int(port))
    results = []
    samples = []
    tasks = set()

    async def one(i, dialect, stream, fault):
        rid = f"soak-{i:07d}"
        headers = {**base_headers(dialect), "x-request-id": rid}
        if stream:
            headers["x-mock-frame-interval-ms"] = "10"
        name, expect = None, "complete"
        if fault is not None:
            name, hdr, how, _ = fault
            headers.update(hdr)
            if "x-mock-fail-first" in hdr:
                headers["x-mock-fault-key"] = rid
            expect = "complete" if how == "recovers" else "error event"
        t0 = time.monotonic()
        r = {"i": i, "id": rid, "dialect": dialect, "stream": stream, "fault": name, "expect": expect}
        try:
            status, rh, data = await pool.request(PATHS[dialect], body_for(dialect, f"soak-{NATIVE[dialect]}",
                                                                            stream), headers, 30)
            r["status"] = status
            r["attempts"] = rh.get("x-trimgate-attempts")
            if rh.get("content-type", "").startswith("text/event-stream"):
                r.update(judge_stream(dialect, data.decode("utf-8", "replace")))
            else:
                r.update(judge_whole(dialect, status, data))
            r["seen"] = seen_as(r)
        except Exception as e:
            r["status"] = None
            r["seen"] = f"client error: {type(e).__name__}: {e}"[:160]
        r["ms"] = round((time.monotonic() - t0) * 1000, 1)
        results.append(r)

    async def sampler(t0):
        while True:
            s = proc_sample(pid)
            s["t"] = round(time.monotonic() - t0, 1)
            s["in_flight"] = len(tasks)
            samples.append(s)
            await asyncio.sleep(sample_every)

    t0 = time.monotonic()
    sampling = asyncio.create_task(sampler(t0))
    n = int(seconds * rate)
    for i in range(n):
        due = t0 + i / rate
        delay = due - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        dialect = rng.choice(DIALECTS)
        stream = rng.random() < stream_share
        fault = None
        if rng.random() < share:
            choices = [f for f in SOAK_FAULTS if (not f[3] or stream) and f[0] not in skip]
            fault = rng.choice(choices)
        t = asyncio.create_task(one(i, dialect, stream, fault))
        tasks.add(t)
        t.add_done_callback(tasks.discard)
        if i % (rate * 60) == 0 and i:
            print(f"   {i} sent, {len(tasks)} in flight, RSS {mib(samples[-1]['rss_kib'])} MiB, "
                  f"{samples[-1]['fds']} fds", file=sys.stderr, flush=True)
    sent_for = time.monotonic() - t0
    if tasks:
        await asyncio.wait(tasks, timeout=60)
    await asyncio.sleep(sample_every)
    sampling.cancel()
    pool.close()
    return results, samples, sent_for, (pool.opened, pool.stale)


def run_soak(args):
    limits()
    b = Bench(args.bin)
    try:
        _, mock_addr = b.mock("ok")
        providers = "".join(provider(f"mock-{k}", k, f"http://{mock_addr}") for k in ("openai", "anthropic"))
        routes = "".join(route(f"soak-{k}", f"mock-{k}", k, OTHER[k]) for k in ("openai", "anthropic"))
        # first_byte 2 s (the timeout fault waits 2.5 s), idle as the table's.
        providers = providers.replace(f"first_byte_secs = {FIRST_BYTE_SECS}", "first_byte_secs = 2")
        # Without its own [ledger] the gateway would write to the user's default ledger.
        ledger = (f'[ledger]\nurl = "sqlite://{b.ledger}"\n\n' if not args.no_ledger
                  else "[ledger]\nenabled = false\n\n")
        config = ledger + providers + routes
        gw, gw_addr = b.gateway(config)
        first = send(gw_addr, CHAT, "soak-openai", False, {})
        if first.get("status") != 200:
            raise SystemExit(f"the gateway does not serve a plain request: {first}; see {b.tmp}")
        at_start = proc_sample(gw.pid)
        seconds = args.minutes * 60
        print(f"-- soak: {seconds:.0f} s at {args.rate}/s, {args.fault_share:.0%} faults", file=sys.stderr)
        results, samples, sent_for, connections = asyncio.run(soak_traffic(
            gw_addr, seconds, args.rate, args.fault_share, args.stream_share, gw.pid, args.sample_every,
            args.seed, set(args.skip_fault)))
        time.sleep(1.5)  # the ledger writer's last batch
        final_rows, retried_rows, by_outcome = (None, None), None, {}
        if not args.no_ledger:
            db = sqlite3.connect(f"file:{b.ledger}?mode=ro", uri=True)
            final_rows = db.execute("SELECT count(*), count(DISTINCT request_id) FROM requests "
                                    "WHERE request_id LIKE 'soak-%' AND outcome != 'retried'").fetchone()
            retried_rows = db.execute("SELECT count(*) FROM requests WHERE request_id LIKE 'soak-%' "
                                      "AND outcome = 'retried'").fetchone()[0]
            by_outcome = dict(db.execute("SELECT outcome, count(*) FROM requests WHERE request_id LIKE 'soak-%' "
                                         "GROUP BY outcome").fetchall())
            db.close()
        report = soak_report(args, results, samples, sent_for, connections, at_start, final_rows,
                             retried_rows, by_outcome, gw.pid)
        out = write_json(args.out, "faults-soak", report)
        print(soak_markdown(report))
        print(f"\nJSON: {out}")
    finally:
        b.close(args.keep)


def soak_report(args, results, samples, sent_for, connections, at_start, final_rows, retried_rows,
                by_outcome, pid):
    # A short trial run counts growth after its first quarter.
    warm = min(args.warmup, args.minutes * 60 / 4)
    after = [s for s in samples if s["t"] >= warm and s["rss_kib"]]
    window = max(1, int(min(60, len(after) * args.sample_every / 4) / args.sample_every))
    first, last = after[:window], after[-window:]

    def growth(key):
        a = statistics.mean(s[key] for s in first)
        z = statistics.mean(s[key] for s in last)
        return {"first_minute_after_warmup": round(a, 1), "last_minute": round(z, 1),
                "growth_pct": round(100 * (z - a) / a, 2) if a else None,
                "max": max(s[key] for s in after), "min": min(s[key] for s in after)}

    sent = len(results)
    injected = [r for r in results if r["fault"]]
    clean = [r for r in results if not r["fault"]]
    clean_bad = [r for r in clean if r["seen"] != "complete" or r["status"] != 200]
    fault_bad = [r for r in injected if r["seen"] != r["expect"]]
    per_fault = {}
    for r in injected:
        d = per_fault.setdefault(r["fault"], {"sent": 0, "as_expected": 0, "expect": r["expect"]})
        d["sent"] += 1
        d["as_expected"] += r["seen"] == r["expect"]
    def why(r):
        return f"{r['status']} {r.get('error') or r['seen']}" if r["status"] != 200 else r["seen"]

    clean_bad_by = {}
    for r in clean_bad:
        clean_bad_by[why(r)] = clean_bad_by.get(why(r), 0) + 1
    lat = sorted(r["ms"] for r in clean)
    return {
        "run": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": " ".join(["python3", "bench/faults.py", *sys.argv[1:]]),
        "bin": args.bin, "machine": machine(),
        "duration_s": round(sent_for, 1), "rate": args.rate, "fault_share": args.fault_share,
        "stream_share": args.stream_share, "warmup_s": warm, "window_s": window * args.sample_every, "sample_every_s": args.sample_every,
        "client_connections_opened": connections[0], "stale_keepalive_resends": connections[1],
        "ledger": not args.no_ledger, "skipped_faults": args.skip_fault,
        "sent": sent, "streamed": sum(r["stream"] for r in results),
        "by_dialect": {d: sum(r["dialect"] == d for r in results) for d in DIALECTS},
        "injected": len(injected), "per_fault": per_fault,
        "clean_not_complete": len(clean_bad), "clean_not_complete_by_kind": clean_bad_by,
        "clean_not_complete_examples": clean_bad[:10],
        "injected_not_as_expected": len(fault_bad), "injected_not_as_expected_examples": fault_bad[:10],
        "clean_latency_ms": {"p50": lat[len(lat) // 2], "p99": lat[int(len(lat) * 0.99)], "max": lat[-1]}
        if lat else None,
        "ledger_final_rows": final_rows[0], "ledger_distinct_requests": final_rows[1],
        "ledger_retried_rows": retried_rows, "ledger_by_outcome": by_outcome,
        "gateway_at_start": at_start, "gateway_at_end": proc_sample(pid),
        "rss": growth("rss_kib"), "anon": growth("anon_kib"), "file": growth("file_kib"),
        "fds": growth("fds"),
        "samples": samples,
    }


def soak_markdown(r):
    rss, fds, anon, file = r["rss"], r["fds"], r["anon"], r["file"]
    lines = [
        f"# Soak: {r['duration_s']} s at {r['rate']} req/s, {r['fault_share']:.0%} injected faults, {r['run']}",
        "",
        "| figure | value | goal |",
        "|---|---|---|",
        f"| requests sent | {r['sent']} ({r['streamed']} streamed; Chat {r['by_dialect'][CHAT]}, "
        f"Responses {r['by_dialect'][RESPONSES]}, Messages {r['by_dialect'][MESSAGES]}) | |",
        f"| with an injected fault | {r['injected']}"
        + (f" (not: {', '.join(r['skipped_faults'])})" if r["skipped_faults"] else "") + f" | ~{r['fault_share']:.0%} |",
        f"| errors not injected (clean requests not answered completely) | {r['clean_not_complete']}"
        + ("".join(f"; {n} × {k}" for k, n in sorted(r["clean_not_complete_by_kind"].items())))
        + " | 0 |",
        f"| injected faults not seen as expected | {r['injected_not_as_expected']} | 0 |",
        f"| ledger rows, not `retried` (distinct request ids) | {r['ledger_final_rows']} "
        f"({r['ledger_distinct_requests']}) | = requests sent ({r['sent']}) |",
        f"| ledger rows `retried` | {r['ledger_retried_rows']} | |",
        f"| RSS, first {r['window_s']:.0f} s after {r['warmup_s']:.0f} s warm-up → last {r['window_s']:.0f} s | "
        f"{mib(rss['first_minute_after_warmup'])} → {mib(rss['last_minute'])} MiB "
        f"({rss['growth_pct']:+.2f} %; max {mib(rss['max'])}) | ≤ +5 % |",
        f"| of which anonymous (heap) / file (code), same windows | "
        f"{mib(anon['first_minute_after_warmup'])} → {mib(anon['last_minute'])} ({anon['growth_pct']:+.2f} %) / "
        f"{mib(file['first_minute_after_warmup'])} → {mib(file['last_minute'])} ({file['growth_pct']:+.2f} %) | |",
        f"| open fds, same windows | {fds['first_minute_after_warmup']} → {fds['last_minute']} "
        f"({fds['growth_pct']:+.2f} %; min {fds['min']}, max {fds['max']}) | ≤ +5 % |",
        f"| client connections opened (kept-alive ones the gateway had closed, sent again) | "
        f"{r['client_connections_opened']} ({r['stale_keepalive_resends']}) | |",
        f"| clean requests, latency p50 / p99 / max | {r['clean_latency_ms']['p50']} / "
        f"{r['clean_latency_ms']['p99']} / {r['clean_latency_ms']['max']} ms | |",
        "",
        "| injected fault | sent | as expected | expected |",
        "|---|---:|---:|---|",
    ]
    for name, d in sorted(r["per_fault"].items()):
        lines.append(f"| {name} | {d['sent']} | {d['as_expected']} | {d['expect']} |")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------
# Part 3: 10,000 streams held open at once, over HTTP/2


async def measure_held(state, n, t0, on_held):
    """Held: waits (120 s at most) until every stream has its headers and a first frame,
    then 3 s more, and measures. Returns the time to all held, the counts then, and what
    `on_held` measured."""
    deadline = time.monotonic() + 120
    while state["first_data"] < n and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    held_s = time.monotonic() - t0
    await asyncio.sleep(3)
    return held_s, dict(state), on_held()


async def hold_streams(addr, n, per_conn, ramp_rate, interval_ms, on_held):
    import h2.config
    import h2.connection
    import h2.events

    host, port = addr.rsplit(":", 1)
    body = body_for(CHAT, "streams-openai", True)
    state = {"headers": 0, "first_data": 0, "ended": 0, "reset": 0, "bad_status": 0, "bytes": 0}
    conns = []

    class Conn:
        def __init__(self, reader, writer):
            self.reader, self.writer = reader, writer
            self.h2 = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True,
                                                                            header_encoding="utf-8"))
            self.h2.initiate_connection()
            self.h2.increment_flow_control_window(1 << 30)
            self.flush()
            self.seen = set()
            self.task = asyncio.create_task(self.read())

        def flush(self):
            data = self.h2.data_to_send()
            if data:
                self.writer.write(data)

        def open(self):
            sid = self.h2.get_next_available_stream_id()
            self.h2.send_headers(sid, [(":method", "POST"), (":path", PATHS[CHAT]), (":scheme", "http"),
                                       (":authority", addr), ("content-type", "application/json"),
                                       ("x-mock-frame-interval-ms", str(interval_ms))])
            self.h2.send_data(sid, body, end_stream=True)
            self.flush()

        async def read(self):
            while True:
                data = await self.reader.read(65536)
                if not data:
                    return
                for ev in self.h2.receive_data(data):
                    if isinstance(ev, h2.events.ResponseReceived):
                        state["headers"] += 1
                        if dict(ev.headers).get(":status") != "200":
                            state["bad_status"] += 1
                    elif isinstance(ev, h2.events.DataReceived):
                        state["bytes"] += len(ev.data)
                        if ev.stream_id not in self.seen:
                            self.seen.add(ev.stream_id)
                            state["first_data"] += 1
                        self.h2.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
                    elif isinstance(ev, h2.events.StreamEnded):
                        state["ended"] += 1
                    elif isinstance(ev, h2.events.StreamReset):
                        state["reset"] += 1
                self.flush()

    t0 = time.monotonic()
    opened = 0
    for i in range(n):
        if i % per_conn == 0:
            reader, writer = await asyncio.open_connection(host, int(port))
            conns.append(Conn(reader, writer))
        conns[-1].open()
        opened += 1
        due = t0 + opened / ramp_rate
        if due > time.monotonic():
            await asyncio.sleep(due - time.monotonic())
    ramp_s = time.monotonic() - t0
    held_s, snapshot, figures = await measure_held(state, n, t0, on_held)
    for c in conns:
        c.writer.close()
        c.task.cancel()
    return {"ramp_s": round(ramp_s, 1), "all_open_after_s": round(held_s, 1), "state_when_measured": snapshot,
            "connections": len(conns), **figures}


async def hold_streams_http1(addr, n, ramp_rate, interval_ms, on_held):
    """The same streams over HTTP/1.1, one connection each: as the gateway holds its
    upstream side."""
    host, port = addr.rsplit(":", 1)
    body = body_for(CHAT, "streams-openai", True)
    head = (f"POST {PATHS[CHAT]} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n"
            f"x-mock-frame-interval-ms: {interval_ms}\r\ncontent-length: {len(body)}\r\n\r\n").encode() + body
    state = {"headers": 0, "first_data": 0, "ended": 0, "reset": 0, "bad_status": 0, "bytes": 0}
    writers = []

    async def one():
        reader, writer = await asyncio.open_connection(host, int(port))
        writers.append(writer)
        writer.write(head)
        line = await reader.readline()
        state["headers"] += 1
        if b" 200 " not in line:
            state["bad_status"] += 1
        while (await reader.readline()) not in (b"\r\n", b""):
            pass
        first = True
        while True:
            data = await reader.read(65536)
            if not data:
                state["ended"] += 1
                return
            state["bytes"] += len(data)
            if first:
                state["first_data"] += 1
                first = False

    t0 = time.monotonic()
    tasks = []
    for i in range(n):
        tasks.append(asyncio.create_task(one()))
        due = t0 + (i + 1) / ramp_rate
        if due > time.monotonic():
            await asyncio.sleep(due - time.monotonic())
    ramp_s = time.monotonic() - t0
    held_s, snapshot, figures = await measure_held(state, n, t0, on_held)
    for w in writers:
        w.close()
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return {"ramp_s": round(ramp_s, 1), "all_open_after_s": round(held_s, 1), "state_when_measured": snapshot,
            "connections": len(writers), **figures}


def run_streams(args):
    have = limits()
    b = Bench(args.bin)
    try:
        mock, mock_addr = b.mock("frames")
        config = (f'[server]\nmax_connections = 4096\nmax_in_flight = {args.streams * 2}\n'
                  f'max_streams_per_connection = {args.per_conn}\n\n'
                  + provider("mock-openai", "openai", f"http://{mock_addr}", timeouts=False)
                  + route("streams-openai", "mock-openai", "openai"))
        gw, gw_addr = b.gateway(config)
        first = send(gw_addr, CHAT, "streams-openai", True, {})
        if first.get("status") != 200:
            raise SystemExit(f"the gateway does not serve a stream: {first}; see {b.tmp}")
        time.sleep(1)
        report = {"run": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                  "command": " ".join(["bench/faults.py", *sys.argv[1:]]), "bin": args.bin,
                  "machine": machine(), "streams": args.streams, "per_connection": args.per_conn,
                  "frame_interval_ms": args.interval_ms, "client_fd_limit": have,
                  "gateway_fd_limit": fd_limit(gw.pid)}

        def measure(pids):
            def now():
                return {name: {"rss_mib": mib(status_kib(pid, "VmRSS")), "fds": proc_sample(pid)["fds"]}
                        for name, pid in pids.items()}
            return now

        before = measure({"gateway": gw.pid, "mock": mock.pid})()
        print(f"-- {args.streams} streams through the gateway", file=sys.stderr, flush=True)
        through = asyncio.run(hold_streams(gw_addr, args.streams, args.per_conn, args.ramp, args.interval_ms,
                                           measure({"gateway": gw.pid, "mock": mock.pid})))
        time.sleep(5)
        after = measure({"gateway": gw.pid, "mock": mock.pid})()
        report["through_gateway"] = {"before": before, "held": {k: through[k] for k in ("gateway", "mock")},
                                     "after_close_5s": after,
                                     **{k: v for k, v in through.items() if k not in ("gateway", "mock")}}
        g0, g1 = before["gateway"]["rss_mib"], through["gateway"]["rss_mib"]
        report["gateway_kib_per_stream"] = round((g1 - g0) * 1024 / args.streams, 2)

        # The baseline: the same streams straight to a fresh mock.
        direct, direct_addr = b.mock("direct")
        # The mock answers on the same path; its model name does not matter to it.
        time.sleep(0.5)
        d_before = measure({"mock": direct.pid})()
        print(f"-- {args.streams} streams straight to the mock", file=sys.stderr, flush=True)
        straight = asyncio.run(hold_streams(direct_addr, args.streams, args.per_conn, args.ramp,
                                            args.interval_ms, measure({"mock": direct.pid})))
        report["direct_to_mock"] = {"before": d_before, "held": {"mock": straight["mock"]},
                                    **{k: v for k, v in straight.items() if k != "mock"}}
        m0, m1 = d_before["mock"]["rss_mib"], straight["mock"]["rss_mib"]
        report["mock_kib_per_stream_direct"] = round((m1 - m0) * 1024 / args.streams, 2)

        # And over HTTP/1.1, a connection per stream, as the gateway's upstream side holds them.
        direct1, direct1_addr = b.mock("direct-http1")
        time.sleep(0.5)
        d1_before = measure({"mock": direct1.pid})()
        print(f"-- {args.streams} streams straight to the mock over HTTP/1.1", file=sys.stderr, flush=True)
        straight1 = asyncio.run(hold_streams_http1(direct1_addr, args.streams, args.ramp, args.interval_ms,
                                                   measure({"mock": direct1.pid})))
        report["direct_to_mock_http1"] = {"before": d1_before, "held": {"mock": straight1["mock"]},
                                          **{k: v for k, v in straight1.items() if k != "mock"}}
        m0, m1 = d1_before["mock"]["rss_mib"], straight1["mock"]["rss_mib"]
        report["mock_kib_per_stream_direct_http1"] = round((m1 - m0) * 1024 / args.streams, 2)
        out = write_json(args.out, "faults-streams", report)
        print(streams_markdown(report))
        print(f"\nJSON: {out}")
    finally:
        b.close(args.keep)


def fd_limit(pid):
    with open(f"/proc/{pid}/limits") as f:
        for line in f:
            if line.startswith("Max open files"):
                return int(line.split()[3])
    return None


def streams_markdown(r):
    t, d, d1 = r["through_gateway"], r["direct_to_mock"], r["direct_to_mock_http1"]
    n = r["streams"]
    lines = [
        f"# {n} streams held open at once, {r['run']}",
        f"HTTP/2 client, {r['per_connection']} streams per connection ({t['connections']} connections); "
        f"the mock sends a frame every {r['frame_interval_ms']} ms; gateway fd limit {r['gateway_fd_limit']}.",
        "",
        "| path | streams with headers / first frame when measured | RSS before → held → 5 s after closing "
        "| per stream | fds held |",
        "|---|---|---|---:|---:|",
        f"| client → Trimgate → mock: Trimgate | {t['state_when_measured']['headers']} / "
        f"{t['state_when_measured']['first_data']} (ended {t['state_when_measured']['ended']}, reset "
        f"{t['state_when_measured']['reset']}, non-200 {t['state_when_measured']['bad_status']}) | "
        f"{t['before']['gateway']['rss_mib']} → {t['held']['gateway']['rss_mib']} → "
        f"{t['after_close_5s']['gateway']['rss_mib']} MiB | {r['gateway_kib_per_stream']} KiB | "
        f"{t['held']['gateway']['fds']} ({t['after_close_5s']['gateway']['fds']} after) |",
        f"| (its mock) | | {t['before']['mock']['rss_mib']} → {t['held']['mock']['rss_mib']} → "
        f"{t['after_close_5s']['mock']['rss_mib']} MiB | | {t['held']['mock']['fds']} "
        f"({t['after_close_5s']['mock']['fds']} after) |",
        f"| client → mock over HTTP/2 (baseline): mock | {d['state_when_measured']['headers']} / "
        f"{d['state_when_measured']['first_data']} | {d['before']['mock']['rss_mib']} → "
        f"{d['held']['mock']['rss_mib']} MiB | {r['mock_kib_per_stream_direct']} KiB | {d['held']['mock']['fds']} |",
        f"| client → mock over HTTP/1.1 (baseline): mock | {d1['state_when_measured']['headers']} / "
        f"{d1['state_when_measured']['first_data']} | {d1['before']['mock']['rss_mib']} → "
        f"{d1['held']['mock']['rss_mib']} MiB | {r['mock_kib_per_stream_direct_http1']} KiB | "
        f"{d1['held']['mock']['fds']} |",
        "",
        f"All {n} open after {t['all_open_after_s']} s through the gateway (ramp {t['ramp_s']} s), "
        f"{d['all_open_after_s']} s direct over HTTP/2, {d1['all_open_after_s']} s over HTTP/1.1.",
    ]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", default=BIN)
    ap.add_argument("--out", default=None, help="the JSON file (default bench/results/faults-<part>-<ts>.json)")
    ap.add_argument("--keep", action="store_true", help="keep the temp dir (configs, logs, ledger)")
    sub = ap.add_subparsers(dest="part", required=True)
    t = sub.add_parser("table", help="the fault table")
    t.add_argument("--only", default=None, help="comma-separated fault ids (" +
                   ",".join(f["id"] for f in FAULTS) + ")")
    s = sub.add_parser("soak", help="mixed traffic with faults; RSS and fds over time")
    s.add_argument("--minutes", type=float, default=10)
    s.add_argument("--rate", type=float, default=20, help="requests per second (open loop)")
    s.add_argument("--fault-share", type=float, default=0.05)
    s.add_argument("--stream-share", type=float, default=0.5)
    s.add_argument("--warmup", type=float, default=60, help="seconds before growth is counted")
    s.add_argument("--sample-every", type=float, default=5)
    s.add_argument("--seed", type=int, default=19)
    s.add_argument("--skip-fault", action="append", default=[], metavar="NAME",
                   help="leave this fault out of the mix (e.g. '429, then fine'); repeatable")
    s.add_argument("--no-ledger", action="store_true", help="run the gateway without its ledger")
    st = sub.add_parser("streams", help="streams held open at once")
    st.add_argument("--streams", type=int, default=10_000)
    st.add_argument("--per-conn", type=int, default=100, help="HTTP/2 streams per client connection")
    st.add_argument("--ramp", type=float, default=1000, help="streams opened per second")
    st.add_argument("--interval-ms", type=int, default=2000, help="the mock's pause between frames")
    args = ap.parse_args()
    if not os.access(args.bin, os.X_OK):
        raise SystemExit(f"no trimgate binary at {args.bin} (cargo build --release -p trimgate)")
    {"table": run_table, "soak": run_soak, "streams": run_streams}[args.part](args)


if __name__ == "__main__":
    main()

"""Instructions per request, counted by callgrind: the mock reached directly, nginx, the
hyper floor (a proxy doing only hyper's two HTTP/1 exchanges, bench/driver/src/hyperhop.rs)
and Trimgate, each run under valgrind in turn while the driver sends the campaign's ~1 KiB chat
request at concurrency 1.

Wall-clock figures on two shared vCPUs move by ±10 % from one minute to the next, which
hides a change worth 2 %. An instruction count does not move with the host: it is the
figure to compare builds by, and wall-clock runs (bench/campaign.sh) say what the count is
worth in time. It counts user-space instructions only (no kernel time, no cache misses),
in every thread of the process (Trimgate's ledger thread included), after a warm-up.

    python3 bench/instructions.py [--bin PATH] [--seconds S] [--top N]
    python3 bench/instructions.py --gate [--record]

--gate measures Trimgate alone (the mock outside valgrind) and compares its instructions
per request with the figure kept in bench/instructions-gate.json: more than `tolerance`
(3 %) above it fails (exit 1), so CI stops a change that makes every request dearer. To
accept a deliberate increase (or keep a saving), run with --record and commit the file
with a line in its `why` saying what changed. The figure is only comparable on the
toolchain and the build profile it was recorded with, which the file names.

Needs valgrind (`apt-get install valgrind`) and the binaries bench/campaign.sh builds
(the trimgate binary and the driver). Output: a table on stdout and
bench/results/instructions-<ts>.json. With --top N, the N functions with the most
instructions of their own in Trimgate (names need symbols: the `profiling` build has them,
`cargo build --profile profiling -p trimgate`).
"""

import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from types import SimpleNamespace

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import campaign  # noqa: E402
from campaign import KEY, ROOT, Proc, bodies, free_port, nginx_conf, nginx_hop, wait_listening  # noqa: E402
from optimize_matrix import wait_up  # noqa: E402


def log(msg):
    print(f"[instructions {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def callgrind(name, argv, tmp, env=None):
    out = os.path.join(tmp, f"{name}.callgrind")
    vg = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", "--dump-line=no", *argv]
    return Proc(name, vg, tmp, env=env), out


def control(proc, command):
    """Sends callgrind a command (zero or dump); callgrind_control returns once the tool
    has acted on it."""
    r = subprocess.run(["callgrind_control", f"--{command}", str(proc.p.pid)], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"callgrind_control --{command} failed: {r.stderr or r.stdout}")


def parse(path):
    """(total instructions, {function: its own instructions}) from a callgrind dump."""
    names, own, total = {}, collections.Counter(), 0
    fn, in_call = None, False
    with open(path, errors="replace") as f:
        for line in f:
            # `fn=(id) name` names a function where it first appears, `fn=(id)` after;
            # `cfn=` (a callee) may be the first appearance too.
            m = re.match(r"(c?fn)=(?:\((\d+)\))? ?(.*)", line.rstrip("\n"))
            if m:
                key, name = m.group(2), m.group(3)
                if key is not None and name:
                    names[key] = name
                if m.group(1) == "fn":
                    fn = names.get(key, key) if key is not None else name
                continue
            if line.startswith("calls="):
                in_call = True
                continue
            if line[:1].isdigit() or line[:1] in "+-*":
                parts = line.split()
                if len(parts) >= 2:
                    if in_call:
                        in_call = False  # the callee's inclusive cost, counted where it ran
                    else:
                        cost = int(parts[1])
                        own[fn] += cost
                        total += cost
    return total, own


def dumped(out, number=1):
    """The dump file callgrind_control wrote: `<out>.<number>` for the number-th dump."""
    path = f"{out}.{number}"
    for _ in range(200):
        if os.path.exists(path):
            time.sleep(0.3)  # callgrind_control returns as the tool starts writing
            return path
        time.sleep(0.1)
    raise SystemExit(f"no callgrind dump at {path}")


def drive(url, body, seconds):
    r = campaign.driver(["closed", "--url", url, "--body", body, "--header", "Content-Type: application/json",
                         "--header", f"Authorization: Bearer {KEY}", "--conc", "1", "--duration", str(seconds),
                         "--warmup", "0", "--timeout", "30"])
    bad = sum(r["counts"].values()) - r["counts"]["ok"]
    if bad:
        raise SystemExit(f"{bad} requests failed at {url}: {r['first_error']}")
    return r["counts"]["ok"]


def measure(name, proc, out, url, body, args, idle=False):
    """Instructions per request over `args.seconds` of driving. With `idle`, what the
    process spends over the same time with no request (timers, the ledger's wake-ups) is
    measured first and taken off, so the figure does not move with how many requests a
    busy machine lets through."""
    drive(url, body, args.warmup)
    spent_idle, dumps = 0, 0
    if idle:
        control(proc, "zero")
        time.sleep(args.seconds)
        control(proc, "dump")
        dumps += 1
        spent_idle, _ = parse(dumped(out, dumps))
    control(proc, "zero")
    started = time.monotonic()
    n = drive(url, body, args.seconds)
    elapsed = time.monotonic() - started
    control(proc, "dump")
    total, own = parse(dumped(out, dumps + 1))
    proc.stop()
    spent = total - round(spent_idle * elapsed / args.seconds)
    log(f"{name}: {n} requests, {spent / n:,.0f} instructions each"
        + (f" ({spent_idle:,} idle over {args.seconds:.0f} s taken off)" if idle else ""))
    return {"requests": n, "instructions": total, "idle_instructions": spent_idle, "per_request": round(spent / n),
            "top": [(f, round(c / n)) for f, c in own.most_common(args.top)]}


GATE_FILE = os.path.join(HERE, "instructions-gate.json")


def rustc_version():
    return subprocess.run(["rustc", "--version"], capture_output=True, text=True).stdout.strip()


def gate_once(args):
    """One measurement of Trimgate alone, the mock outside valgrind."""
    tmp = tempfile.mkdtemp(prefix="trimgate-instr-gate-")
    body = bodies(tmp)["chat"]
    mock_env = {"TRIMGATE_LOG": "warn"}
    mock = Proc("mock", [args.bin, "mock", "--listen", "127.0.0.1:0", "--any-key"], tmp, env=mock_env)
    mock_addr = wait_listening(mock, r"listening on http://([0-9.:]+)")
    try:
        trimgate = campaign.Trimgate(tmp, SimpleNamespace(addr=dict.fromkeys(("instant", "slow", "frames"), mock_addr)),
                                     None)
        argv, env, _ = trimgate.argv_env()
        proc, out = callgrind("trimgate", argv, tmp, env)
        wait_listening(proc, r"(listening)", timeout=60)
        return measure("trimgate", proc, out, f"http://{trimgate.addr}/v1/chat/completions", body, args,
                       idle=True)["per_request"]
    finally:
        mock.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def gate(args):
    """Trimgate's instructions per request against the recorded figure. A record is the
    median of three runs; the check passes on the first of up to three runs within the
    tolerance, since a busy machine can only add to a run (fewer requests share the fixed
    costs), never take away."""
    if args.record:
        figure = sorted(gate_once(args) for _ in range(3))[1]
    else:
        with open(GATE_FILE) as f:
            kept = json.load(f)
        limit = kept["per_request"] * (1 + kept["tolerance"])
        runs = []
        for _ in range(3):
            runs.append(gate_once(args))
            if runs[-1] <= limit:
                break
        figure = min(runs)
    if args.record:
        why = args.why or "recorded"
        previous = {}
        if os.path.exists(GATE_FILE):
            with open(GATE_FILE) as f:
                previous = json.load(f)
        with open(GATE_FILE, "w") as f:
            json.dump({"per_request": figure, "tolerance": previous.get("tolerance", 0.03),
                       "rustc": rustc_version(), "profile": args.profile,
                       "recorded": time.strftime("%Y-%m-%d", time.gmtime()),
                       "why": [*previous.get("why", []), f"{time.strftime('%Y-%m-%d')}: {figure:,} ({why})"]},
                      f, indent=1)
            f.write("\n")
        print(f"recorded {figure:,} instructions per request in {os.path.relpath(GATE_FILE, ROOT)}")
        return 0
    change = figure / kept["per_request"] - 1
    print(f"instructions per proxied request: {figure:,} (recorded {kept['per_request']:,}, "
          f"{change:+.1%}; the gate allows +{kept['tolerance']:.0%})")
    if kept.get("rustc") and kept["rustc"] != rustc_version():
        print(f"note: recorded with {kept['rustc']}, measured with {rustc_version()}")
    if figure > limit:
        print("FAIL: the hot path got dearer; if that is deliberate, run "
              "`python3 bench/instructions.py --gate --record --why '...'` and commit the file")
        return 1
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gate", action="store_true", help="Trimgate only, against bench/instructions-gate.json")
    ap.add_argument("--record", action="store_true", help="with --gate: keep this run's figure")
    ap.add_argument("--why", default="", help="with --record: what changed")
    ap.add_argument("--profile", default="release", help="with --record: the build profile measured")
    ap.add_argument("--bin", default=campaign.BIN)
    ap.add_argument("--seconds", type=float, default=4.0, help="measured seconds per target")
    ap.add_argument("--warmup", type=float, default=2.0)
    ap.add_argument("--top", type=int, default=0)
    args = ap.parse_args()
    for tool in ("valgrind", "callgrind_control") + (() if args.gate else ("nginx",)):
        if not shutil.which(tool):
            raise SystemExit(f"{tool} not found (apt-get install valgrind nginx-light)")
    for path in (args.bin, campaign.DRIVER):
        if not os.access(path, os.X_OK):
            raise SystemExit(f"no binary at {path}: bench/campaign.sh builds it")
    campaign.BIN = args.bin
    if args.gate:
        return gate(args)
    tmp = tempfile.mkdtemp(prefix="trimgate-instr-")
    body = bodies(tmp)["chat"]
    results = {}
    path = "/v1/chat/completions"
    mock_env = {"TRIMGATE_LOG": "warn"}

    # The mock alone, under callgrind: the baseline every hop adds to.
    proc, out = callgrind("direct", [args.bin, "mock", "--listen", "127.0.0.1:0", "--any-key"], tmp, mock_env)
    addr = wait_listening(proc, r"listening on http://([0-9.:]+)", timeout=60)
    results["direct"] = measure("direct (the mock)", proc, out, f"http://{addr}{path}", body, args)

    # The hops run over a mock outside valgrind.
    mock = Proc("mock", [args.bin, "mock", "--listen", "127.0.0.1:0", "--any-key"], tmp, env=mock_env)
    mock_addr = wait_listening(mock, r"listening on http://([0-9.:]+)")
    try:
        d = os.path.join(tmp, "nginx")
        os.makedirs(d)
        port = free_port()
        # One process (no master) so callgrind follows the worker that serves.
        with open(os.path.join(d, "nginx.conf"), "w") as f:
            f.write(nginx_conf(d, [nginx_hop("instant", mock_addr, port)], one_process=True))
        proc, out = callgrind("nginx", ["nginx", "-p", d + "/", "-c", f"{d}/nginx.conf", "-e", f"{d}/error.log"], tmp)
        # A process under valgrind starts slowly.
        wait_up(port, proc.p, timeout=60)
        results["nginx"] = measure("nginx", proc, out, f"http://127.0.0.1:{port}{path}", body, args)

        # The hyper floor: hyper's two HTTP/1 exchanges and nothing else, one serving thread
        # as nginx has one process here.
        if os.access(campaign.HYPERHOP, os.X_OK):
            port = free_port()
            proc, out = callgrind("hyper", [campaign.HYPERHOP, f"127.0.0.1:{port}", mock_addr, "1"], tmp)
            wait_listening(proc, r"(listening)", timeout=60)
            results["hyper"] = measure("hyper (the floor)", proc, out, f"http://127.0.0.1:{port}{path}", body, args)
        else:
            log(f"no hyper floor at {campaign.HYPERHOP} (cd bench/driver && cargo build --release): left out")

        # Trimgate as the campaign runs it, every provider of its config on this one mock.
        trimgate = campaign.Trimgate(tmp, SimpleNamespace(addr=dict.fromkeys(("instant", "slow", "frames"), mock_addr)),
                                     None)
        argv, env, _ = trimgate.argv_env()
        proc, out = callgrind("trimgate", argv, tmp, env)
        wait_listening(proc, r"(listening)", timeout=60)
        results["trimgate"] = measure("trimgate", proc, out, f"http://{trimgate.addr}{path}", body, args)
    finally:
        mock.stop()
        shutil.rmtree(tmp, ignore_errors=True)

    base = results["direct"]["per_request"]
    lines = ["| process | requests | instructions per request | × the mock's | × nginx's |", "|---|---:|---:|---:|---:|"]
    for name, r in results.items():
        lines.append(f"| {name} | {r['requests']} | {r['per_request']:,} | {r['per_request'] / base:.2f} | "
                     f"{r['per_request'] / results['nginx']['per_request']:.2f} |")
    print("\n".join(lines))
    if args.top:
        print(f"\nTrimgate's {args.top} functions with the most instructions of their own, per request:")
        for f, c in results["trimgate"]["top"]:
            print(f"{c:>8,}  {f[:140]}")
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    dest = os.path.join(HERE, "results", f"instructions-{stamp}.json")
    with open(dest, "w") as f:
        json.dump({"run": stamp, "bin": args.bin, "seconds": args.seconds, "results": results,
                   "valgrind": subprocess.run(["valgrind", "--version"], capture_output=True, text=True).stdout.strip()},
                  f, indent=1)
    log(f"wrote {dest}")


if __name__ == "__main__":
    sys.exit(main())

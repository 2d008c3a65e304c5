#!/usr/bin/env python3
"""One proxy hop: Trimgate beside nginx over the same mock, in one run, with both load
generators. The figures of "a hop that costs no more than nginx's" (BENCHMARKS.md).

Each block is a direct cell (the mock reached without a hop), nginx, the hyper floor (a
proxy doing only hyper's two HTTP/1 exchanges: bench/driver/src/hyperhop.rs) and Trimgate
in a Williams order, and a direct cell again. Each cell measures, on the campaign's ~1 KiB chat
request (non-stream, the defaults: ledger and metrics on, logging at `warn` as nginx's
access log is off):

  driver   closed loop at c=50 with the campaign's driver (bench/driver)
  wrk      closed loop at c=50 with `wrk -t1 -c50`
  c=1      closed loop at c=1 with the driver: p50 and p99

Rates: each gateway's rate divided by nginx's in the same block (cells seconds apart;
this box's rate drifts by a fifth over minutes). Latency: each cell's p99 less the mean of
its block's two direct p99s is the hop's added p99; Trimgate's added p99 divided by
nginx's in the same block. Every figure is the mean over blocks with a 95 % t-interval.

    python3 bench/hop.py                  # 8 blocks, about 6 minutes
    HOP_BLOCKS=2 HOP_D=1 python3 bench/hop.py   # a smoke test of the script

Needs what bench/campaign.sh builds (the release trimgate and the driver; CAMPAIGN_BIN and
CAMPAIGN_DRIVER name others), wrk and nginx. Output: a table on stdout and
bench/results/hop-<ts>.json.
"""

import json
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import campaign  # noqa: E402
from campaign import (CLASSES, Mocks, bodies, closed, log, machine, mean_ci, run_blocks,  # noqa: E402
                      settle, williams, wrk)

BLOCKS = int(os.environ.get("HOP_BLOCKS", "8"))
# Whole seconds: wrk takes no fractions.
SECONDS = int(os.environ.get("HOP_D", "3"))
WARM = int(os.environ.get("HOP_W", "1"))
LATENCY_SECONDS = float(os.environ.get("HOP_LAT", "2.5"))
CONC = 50
# "hyper": the floor under any gateway on hyper (bench/driver/src/hyperhop.rs), the two
# HTTP/1 exchanges and nothing else. HOP_GATEWAYS="nginx trimgate" leaves it out.
GATEWAYS = os.environ.get("HOP_GATEWAYS", "nginx hyper trimgate").split()


def measure(target):
    req = target.request("chat")
    url, headers, body = req
    out = {}
    closed(req, CONC, WARM, 0.0)
    settle(target)
    out["driver"] = closed(req, CONC, SECONDS, 0.0)
    wrk(url, headers, body, CONC, WARM, threads=1)
    settle(target)
    out["wrk"] = wrk(url, headers, body, CONC, SECONDS, threads=1)
    settle(target)
    out["c1"] = closed(req, 1, LATENCY_SECONDS, 0.5)
    for k, r in out.items():
        if r["errors"]:
            raise SystemExit(f"{target.name} {k}: {r['errors']} failed requests: {r.get('error_kinds')}")
    return out


def main():
    ts = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    tmp = tempfile.mkdtemp(prefix="trimgate-hop-")
    mocks = Mocks(tmp)
    files = bodies(tmp)
    targets = {name: CLASSES[name](tmp, mocks, files) for name in ["direct", *GATEWAYS]}
    cells = []
    try:
        for t in targets.values():
            t.start()
        log("up: " + ", ".join(f"{n} {t.addr}" for n, t in targets.items()))
        order = williams(len(GATEWAYS), BLOCKS)

        def cell(block, pos, name):
            cells.append({"block": block, "pos": pos, "target": name, **measure(targets[name])})

        run_blocks("hop", order, GATEWAYS, cell)
        versions = {n: t.version() for n, t in targets.items() if n != "direct"}
    finally:
        for t in targets.values():
            t.stop()
        mocks.stop()

    def of(block, name, f):
        return statistics.fmean(f(c) for c in cells if c["block"] == block and c["target"] == name)

    rows = {}
    for name in ["direct", *GATEWAYS]:
        row = {}
        for load in ("driver", "wrk"):
            rate = lambda b, n, load=load: of(b, n, lambda c: c[load]["rps"])
            row[load] = {"rps": round(statistics.fmean(rate(b, name) for b in range(BLOCKS)), 1),
                         "vs_direct": mean_ci([rate(b, name) / rate(b, "direct") for b in range(BLOCKS)]),
                         "vs_nginx": mean_ci([rate(b, name) / rate(b, "nginx") for b in range(BLOCKS)]),
                         "p99_ms": round(statistics.fmean(c[load]["ms"]["p99"] for c in cells if c["target"] == name), 3)}
        p99 = lambda b, n: of(b, n, lambda c: c["c1"]["ms"]["p99"])
        p50 = lambda b, n: of(b, n, lambda c: c["c1"]["ms"]["p50"])
        row["c1"] = {"p50_ms": round(statistics.fmean(p50(b, name) for b in range(BLOCKS)), 4),
                     "p99_ms": round(statistics.fmean(p99(b, name) for b in range(BLOCKS)), 4)}
        if name != "direct":
            added = [p99(b, name) - p99(b, "direct") for b in range(BLOCKS)]
            row["c1"]["added_p99_ms"] = mean_ci(added)
            row["c1"]["added_p50_ms"] = mean_ci([p50(b, name) - p50(b, "direct") for b in range(BLOCKS)])
        rows[name] = row
    nginx_added = statistics.fmean(p99(b, "nginx") - p99(b, "direct") for b in range(BLOCKS))
    for name in GATEWAYS:
        if name != "nginx":
            added = statistics.fmean(p99(b, name) - p99(b, "direct") for b in range(BLOCKS))
            rows[name]["c1"]["added_p99_vs_nginx"] = round(added / nginx_added, 3) if nginx_added > 0 else None

    result = {"meta": {"timestamp": ts, "blocks": BLOCKS, "seconds": SECONDS, "warmup": WARM,
                       "latency_seconds": LATENCY_SECONDS, "conc": CONC, "bin": campaign.BIN,
                       "versions": versions, "machine": machine()},
              "per_target": rows, "cells": cells}
    out_dir = os.path.join(HERE, "results")
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, f"hop-{ts}.json")
    with open(path, "w") as f:
        json.dump(result, f, indent=1)

    def ci(m):
        lo, hi = m["ci95"] or (m["mean"], m["mean"])
        return f"{m['mean']:.3f} [{lo:.3f}, {hi:.3f}]"

    print(f"\n{BLOCKS} blocks; c=50 cells {SECONDS:g} s after {WARM:g} s of warm-up; c=1 cells {LATENCY_SECONDS:g} s\n")
    print("| target | driver c=50 rps | ÷ nginx | wrk -t1 -c50 rps | ÷ nginx | c=1 p50 ms | c=1 p99 ms | added p99 ms |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, r in rows.items():
        vs = lambda load: "–" if name in ("direct", "nginx") else ci(r[load]["vs_nginx"])
        added = ci(r["c1"]["added_p99_ms"]) if "added_p99_ms" in r["c1"] else "–"
        print(f"| {name} | {r['driver']['rps']:.0f} | {vs('driver')} | {r['wrk']['rps']:.0f} | {vs('wrk')} "
              f"| {r['c1']['p50_ms']:.3f} | {r['c1']['p99_ms']:.3f} | {added} |")
    for name in GATEWAYS:
        if name != "nginx":
            print(f"{name}'s added p99 at c=1 ÷ nginx's: {rows[name]['c1']['added_p99_vs_nginx']}")
    print(f"versions: {versions}; results in {os.path.relpath(path, campaign.ROOT)}")


if __name__ == "__main__":
    main()

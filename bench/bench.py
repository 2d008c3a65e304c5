#!/usr/bin/env python3
"""Helpers for bench/run.sh (python3 stdlib only).

  bench.py body FILE                       write the ~1 KiB chat request body
  bench.py coldstart BIN CONFIG BODY N     time N cold starts; print JSON
  bench.py report RUNS COLD OUT k=v ...    write the results JSON, print Markdown
"""

import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import time

MIB = 1024 * 1024


def cmd_body(path):
    """A chat body of about 1 KiB: a system message and a padded user message."""
    filler = ("Refactor the parser so that errors carry the line and column of the "
              "offending token, and add a test for an unterminated string. ")
    body = {
        "model": "gpt-5-mini",
        "messages": [
            {"role": "system", "content": "You are a careful coding assistant. Answer briefly."},
            {"role": "user", "content": ""},
        ],
    }
    base = len(json.dumps(body, separators=(",", ":")))
    body["messages"][1]["content"] = (filler * 20)[: 1024 - base]
    data = json.dumps(body, separators=(",", ":")).encode()
    with open(path, "wb") as f:
        f.write(data)
    print(len(data))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def one_cold_start(binary, config, body, timeout_s=10.0):
    """Milliseconds from spawning `trimgate serve` to the first 200 on a chat request."""
    port = free_port()
    env = dict(os.environ, TRIMGATE_LOG="warn")
    argv = [binary, "serve", "--config", config, "--listen", f"127.0.0.1:{port}"]
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = t0 + timeout_s
        while time.perf_counter() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"trimgate serve exited with {proc.returncode}")
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout_s)
            try:
                conn.request("POST", "/v1/chat/completions", body=body, headers={
                    "Content-Type": "application/json",
                    "Authorization": "Bearer sk-mock-openai",
                })
                resp = conn.getresponse()
                resp.read()
                if resp.status == 200:
                    return (time.perf_counter() - t0) * 1000.0
                raise RuntimeError(f"first response was HTTP {resp.status}")
            except ConnectionRefusedError:
                time.sleep(0.0005)
            finally:
                conn.close()
        raise RuntimeError("no 200 within the timeout")
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def cmd_coldstart(binary, config, body_path, n):
    with open(body_path, "rb") as f:
        body = f.read()
    times = [round(one_cold_start(binary, config, body), 2) for _ in range(int(n))]
    print(json.dumps(times))


def parse_value(v):
    for cast in (int, float):
        try:
            return cast(v)
        except ValueError:
            pass
    return v


def cmd_report(runs_path, cold_path, out_path, *pairs):
    meta = {}
    for p in pairs:
        k, _, v = p.partition("=")
        meta[k] = parse_value(v)
    with open(runs_path) as f:
        runs = [json.loads(line) for line in f if line.strip()]
    with open(cold_path) as f:
        cold = json.load(f)

    tick_us = 1e6 / meta["clk_tck"]
    for r in runs:
        w = r["wrk"]
        r["rps"] = w["requests"] / (w["duration_us"] / 1e6)
        r["errors"] = sum(w["errors"].values())
        ticks = dict(r["cpu_ticks"])
        busy = ticks.pop("machine_busy")
        r["cpu_us_per_req"] = {
            proc: round(t * tick_us / w["requests"], 1) if w["requests"] else None for proc, t in ticks.items()
        }
        # CPU that none of mock, nginx, Trimgate or wrk used: other load on the host.
        r["other_cpu_cores"] = round((busy - sum(ticks.values())) * tick_us / r["cpu_window_us"], 2)

    def find(target, conc, label="main"):
        return next(r for r in runs if r["target"] == target and r["conc"] == conc and r["label"] == label)

    have_nginx = any(r["target"] == "nginx" for r in runs)
    have_tg = any(r["target"] == "trimgate" for r in runs)

    def lat(r, p):
        return r["wrk"]["latency_us"][p] / 1000.0

    d1, d50, ctl = find("direct", 1), find("direct", 50), find("direct", 1, "control-after")
    summary = {}
    for t in ("nginx", "trimgate"):
        if not any(r["target"] == t for r in runs):
            continue
        c1, c50 = find(t, 1), find(t, 50)
        summary[t] = {
            "added_p50_ms_c1": round(lat(c1, "p50") - lat(d1, "p50"), 3),
            "added_p99_ms_c1": round(lat(c1, "p99") - lat(d1, "p99"), 3),
            "rps_ratio_vs_direct_c50": round(c50["rps"] / d50["rps"], 3),
        }
    if have_nginx and have_tg:
        summary["trimgate"]["rps_ratio_vs_nginx_c50"] = round(find("trimgate", 50)["rps"] / find("nginx", 50)["rps"], 3)
    summary["control_drift"] = {
        "direct_c1_p50_ms_before": lat(d1, "p50"), "direct_c1_p50_ms_after": lat(ctl, "p50"),
        "direct_c1_p99_ms_before": lat(d1, "p99"), "direct_c1_p99_ms_after": lat(ctl, "p99"),
        "direct_c1_rps_before": round(d1["rps"], 1), "direct_c1_rps_after": round(ctl["rps"], 1),
    }
    cold_median = statistics.median(cold) if cold else None
    summary["cold_start_ms"] = {"median": cold_median, "all": cold}

    targets = []
    if have_tg:
        tg = summary["trimgate"]
        targets = [
            ("added p99 at c=1 (vs direct)", f'{tg["added_p99_ms_c1"]:.3f} ms', "≤ 0.10 ms", tg["added_p99_ms_c1"] <= 0.10),
            ("rps at c=50 vs nginx", f'{tg["rps_ratio_vs_nginx_c50"]:.2f}×' if have_nginx else "n/a", "≥ 0.80×",
             have_nginx and tg["rps_ratio_vs_nginx_c50"] >= 0.80),
            ("idle RSS", f'{meta["idle_rss_kib"] / 1024:.1f} MiB', "≤ 15 MiB", meta["idle_rss_kib"] <= 15 * 1024),
            ("release binary size", f'{meta["binary_bytes"] / MIB:.1f} MiB', "≤ 15 MiB", meta["binary_bytes"] <= 15 * MIB),
            ("cold start to first 200 (median)", f"{cold_median:.1f} ms", "≤ 50 ms", cold_median <= 50),
        ]

    result = {"meta": meta, "runs": runs, "summary": summary,
              "targets": [{"measure": m, "value": v, "target": t, "met": ok} for m, v, t, ok in targets]}
    with open(out_path, "w") as f:
        json.dump(result, f, indent=2)
        f.write("\n")

    # Markdown
    out = []
    out.append(f'Command: `{meta["command"]}`  ')
    out.append(f'Machine: {meta["nproc"]} cores, {meta["cpu_model"]}, Linux {meta["kernel"]}, '
               f'{meta["rustc"]}, wrk {meta["wrk_version"]}, nginx {meta["nginx_version"]}  ')
    out.append(f'Trimgate: commit {meta["git_commit"]}, binary sha256 {meta["binary_sha256"][:12]}; '
               f'warm-up {meta["warmup_s"]} s + measured {meta["duration_s"]} s per row; {meta["timestamp"]}')
    out.append("")
    out.append("| # | target | conc. | rps | p50 ms | p90 ms | p99 ms | errors | CPU µs/req (that proxy) | other CPU, cores |")
    out.append("|---|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in runs:
        name = r["target"] + (" (control after)" if r["label"] == "control-after" else "")
        cpu = r["cpu_us_per_req"].get(r["target"] if r["target"] != "direct" else "mock")
        cpu_s = f"{cpu:.1f}" + (" (mock)" if r["target"] == "direct" else "") if cpu is not None else "–"
        out.append(f'| {r["order"]} | {name} | {r["conc"]} | {r["rps"]:.0f} | {lat(r, "p50"):.3f} | '
                   f'{lat(r, "p90"):.3f} | {lat(r, "p99"):.3f} | {r["errors"]} | {cpu_s} | {r["other_cpu_cores"]:.2f} |')
    out.append("")
    out.append("| measure | nginx | Trimgate |")
    out.append("|---|---:|---:|")
    for key, label in (("added_p50_ms_c1", "added p50 at c=1, ms"), ("added_p99_ms_c1", "added p99 at c=1, ms"),
                       ("rps_ratio_vs_direct_c50", "rps at c=50 ÷ direct")):
        cells = [f'{summary[t][key]:.3f}' if t in summary else "–" for t in ("nginx", "trimgate")]
        out.append(f"| {label} | {cells[0]} | {cells[1]} |")
    if have_nginx and have_tg:
        out.append(f'| rps at c=50 ÷ nginx | 1.000 | {summary["trimgate"]["rps_ratio_vs_nginx_c50"]:.3f} |')
    out.append(f'| RSS idle, MiB | {meta["nginx_idle_rss_kib"] / 1024:.1f} (all processes) | {meta["idle_rss_kib"] / 1024:.1f} |')
    out.append(f'| RSS after load (peak), MiB | {meta["nginx_after_rss_kib"] / 1024:.1f} | '
               f'{meta["after_rss_kib"] / 1024:.1f} ({meta["peak_rss_kib"] / 1024:.1f}) |')
    cd = summary["control_drift"]
    out.append("")
    out.append(f'Control: direct c=1 p50 {cd["direct_c1_p50_ms_before"]:.3f} → {cd["direct_c1_p50_ms_after"]:.3f} ms, '
               f'p99 {cd["direct_c1_p99_ms_before"]:.3f} → {cd["direct_c1_p99_ms_after"]:.3f} ms, '
               f'rps {cd["direct_c1_rps_before"]:.0f} → {cd["direct_c1_rps_after"]:.0f} (first row vs last row).  ')
    out.append(f'Cold start (exec → first 200 on a chat request), ms: {", ".join(f"{c:.1f}" for c in cold)}')
    if targets:
        out.append("")
        out.append("| target | measured | goal | |")
        out.append("|---|---:|---:|---|")
        for m, v, t, ok in targets:
            out.append(f"| {m} | {v} | {t} | {'met' if ok else '**missed**'} |")
    out.append("")
    out.append(f"Results JSON: {out_path}")
    print("\n".join(out))


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    {"body": cmd_body, "coldstart": cmd_coldstart, "report": cmd_report}[cmd](*args)


if __name__ == "__main__":
    main()

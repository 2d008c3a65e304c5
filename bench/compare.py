#!/usr/bin/env python3
"""Reads a campaign run as ratios to its own baseline, and compares two runs only when the
host was in the same state for both.

  python3 bench/compare.py RUN.json [--recorded bench/recorded.json] [--json OUT]
  python3 bench/compare.py --record RUN.json        # make RUN the recorded reference
  python3 bench/compare.py --self-test              # the gate, on synthetic runs

Every gateway figure is restated against the same run's baseline (the mock reached
directly, and nginx as one plain proxy hop): added milliseconds, rps as a share of
direct's or nginx's, CPU per completion. Absolute figures from two runs are never diffed
as such: on a shared 2-core VM they move with whatever else runs.

The host-state gate: the baseline's own absolute throughput is used for one thing only,
deciding whether a run is comparable with the recorded one. measured / recorded must lie
in [0.7, 1.4] for direct at c=1 and at c=50. Outside the band the run is refused: drift is
still computed and kept in the JSON, but none of it is reported as a finding. Inside it, a
measure is flagged only when it moves by both the relative and the absolute floor of its
kind (so 0.02 -> 0.03 ms, +50 %, is noise, not a regression).

Python stdlib only. `summarize` and `report` are used by bench/campaign.py.
"""

import copy
import json
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
RECORDED = os.path.join(HERE, "recorded.json")

BAND = (0.7, 1.4)
# kind -> (relative floor, absolute floor)
FLOORS = {
    "ms": (0.20, 0.05),
    "ratio": (0.15, 0.05),
    "us": (0.20, 5.0),
    "mib": (0.20, 1.0),
    "rate": (0.0, 1.0),
    "cold_ms": (0.30, 5.0),
}
GATE_MEASURES = ("direct_rps_c1", "direct_rps_c50")
OPEN_TARGET_RATE = 2000


# --- a run as ratios -----------------------------------------------------------------------

def _get(d, *path):
    for k in path:
        if not isinstance(d, dict) or k not in d:
            return None
        d = d[k]
    return d


def summarize(run):
    """The run's baseline (absolute, direct) and each gateway's measures relative to it:
    {"meta", "baseline", "targets": {name: {measure: {"value", "kind"}}}}."""
    out = {"meta": {"timestamp": _get(run, "meta", "timestamp"), "quick": _get(run, "meta", "quick"),
                    "cpu_model": _get(run, "meta", "machine", "cpu_model"),
                    "versions": _get(run, "meta", "versions")},
           "baseline": {}, "targets": {}}
    direct = _get(run, "targets", "direct") or {}
    base = out["baseline"]
    for c in ("1", "50"):
        v = _get(direct, "sweep", c, "rps")
        if v is not None:
            base[f"direct_rps_c{c}"] = round(v, 1)
    p50 = _get(run, "latency", "per_target", "direct", "client_ms", "p50")
    if p50 is not None:
        base["direct_p50_ms_c1"] = p50
    nginx = _get(run, "targets", "nginx") or {}

    def held_step(t, rate):
        for s in _get(run, "targets", t, "open", "steps") or []:
            if s["rate"] == rate:
                return s
        return None

    names = set(_get(run, "targets") or {}) | set(_get(run, "latency", "per_target") or {})
    for t in sorted(names - {"direct"}):
        m = {}

        def put(key, value, kind):
            if value is not None and not (isinstance(value, float) and math.isnan(value)):
                m[key] = {"value": round(value, 4), "kind": kind}

        lat = _get(run, "latency", "per_target", t)
        if lat:
            for q in ("p50", "p95", "p99", "p999"):
                put(f"added_{q}_ms_c1", _get(lat, "added_ms", q, "mean"), "ms")
            put("cpu_us_per_completion_c1", lat.get("cpu_us_per_completion"), "us")
        cap = _get(run, "capacity", "per_target", t)
        if cap:
            put("rps_vs_nginx_c50_blocks", _get(cap, "vs_nginx", "mean"), "ratio")
            put("rps_vs_direct_c50_blocks", _get(cap, "vs_direct", "mean"), "ratio")
        me = _get(run, "targets", t) or {}
        for c in ("1", "10", "50", "100"):
            rps, drps = _get(me, "sweep", c, "rps"), _get(direct, "sweep", c, "rps")
            if rps is not None and drps:
                put(f"rps_vs_direct_c{c}", rps / drps, "ratio")
        rps50, nrps50 = _get(me, "sweep", "50", "rps"), _get(nginx, "sweep", "50", "rps")
        if t != "nginx" and rps50 is not None and nrps50:
            put("rps_vs_nginx_c50", rps50 / nrps50, "ratio")
        p99, dp99 = _get(me, "sweep", "50", "ms", "p99"), _get(direct, "sweep", "50", "ms", "p99")
        if p99 is not None and dp99 is not None:
            put("added_p99_ms_c50", p99 - dp99, "ms")
        put("cpu_us_per_completion_c50", _get(me, "sweep", "50", "cpu_us_per_completion", "target"), "us")
        if _get(me, "open") is not None:
            put("open_held_rate", _get(me, "open", "held_rate") or 0, "rate")
            s, d = held_step(t, OPEN_TARGET_RATE), held_step("direct", OPEN_TARGET_RATE)
            if s and d and s.get("latency_us") and d.get("latency_us"):
                put(f"open_added_p99_ms_at_{OPEN_TARGET_RATE}", (s["latency_us"]["p99"] - d["latency_us"]["p99"]) / 1e3, "ms")
        for kind in ("native_stream", "translated_stream"):
            mine = _get(me, "stream", kind)
            ref = _get(direct, "stream", "native_stream")
            if mine and not mine.get("unsupported") and ref and mine.get("first_token_us") and ref.get("first_token_us"):
                short = kind.split("_")[0]
                put(f"ttft_added_p50_ms_{short}", (mine["first_token_us"]["p50"] - ref["first_token_us"]["p50"]) / 1e3, "ms")
                put(f"ttlt_added_p50_ms_{short}", (mine["latency_us"]["p50"] - ref["latency_us"]["p50"]) / 1e3, "ms")
        for route, r in (_get(me, "endpoints") or {}).items():
            ref = _get(direct, "endpoints", route)
            if r.get("rps") and ref and ref.get("rps") and r["counts"]["ok"] and not _failed(r):
                put(f"endpoint_rps_vs_direct_{route}", r["rps"] / ref["rps"], "ratio")
        if me.get("idle_rss_kib"):
            put("idle_rss_mib", me["idle_rss_kib"] / 1024, "mib")
        if me.get("peak_rss_kib_closed_loop"):
            put("peak_rss_mib", me["peak_rss_kib_closed_loop"] / 1024, "mib")
        cold = me.get("cold_starts_ms") or ([me["cold_start_ms"]] if me.get("cold_start_ms") else [])
        if cold:
            put("cold_start_ms", sorted(cold)[len(cold) // 2], "cold_ms")
        out["targets"][t] = m
    return out


def _failed(r):
    return sum(v for k, v in r.get("counts", {}).items() if k != "ok")


# --- the gate and the drift ------------------------------------------------------------------

def compare(run_summary, recorded):
    """Gate, then drift. Returns {"comparable", "reasons", "host_factors", "drift",
    "significant", "suppressed", "new", "missing"}."""
    result = {"comparable": True, "reasons": [], "host_factors": {}, "drift": [], "significant": [],
              "suppressed": [], "new": [], "missing": []}
    rb, mb = recorded.get("baseline", {}), run_summary.get("baseline", {})
    for key in GATE_MEASURES:
        if key not in rb:
            result["comparable"] = False
            result["reasons"].append(f"the recorded run has no baseline {key}")
            continue
        if key not in mb or not mb[key]:
            result["comparable"] = False
            result["reasons"].append(f"this run has no baseline {key} (was direct measured?)")
            continue
        f = mb[key] / rb[key]
        result["host_factors"][key] = round(f, 3)
        if not BAND[0] <= round(f, 3) <= BAND[1]:
            result["comparable"] = False
            result["reasons"].append(f"{key}: measured/recorded = {f:.2f}, outside [{BAND[0]}, {BAND[1]}]: "
                                     f"the host was {'busier' if f < 1 else 'faster'} than when the recorded run was made")
    rt, mt = recorded.get("targets", {}), run_summary.get("targets", {})
    result["new"] = sorted(set(mt) - set(rt))
    result["missing"] = sorted(set(rt) - set(mt))
    for t in sorted(set(rt) & set(mt)):
        for key, rec in rt[t].items():
            cur = mt[t].get(key)
            if cur is None:
                result["missing"].append(f"{t}.{key}")
                continue
            rel_floor, abs_floor = FLOORS[rec["kind"]]
            delta = cur["value"] - rec["value"]
            rel = abs(delta) / abs(rec["value"]) if rec["value"] else math.inf
            row = {"target": t, "measure": key, "kind": rec["kind"], "recorded": rec["value"],
                   "measured": cur["value"], "delta": round(delta, 4),
                   "relative": None if math.isinf(rel) else round(rel, 4)}
            result["drift"].append(row)
            if abs(delta) >= abs_floor and rel >= rel_floor:
                (result["significant"] if result["comparable"] else result["suppressed"]).append(row)
    return result


def verdict_text(res):
    lines = []
    if res["comparable"]:
        lines.append(f"Host state: comparable with the recorded run (direct measured/recorded: "
                     f"{', '.join(f'{k} {v:.2f}' for k, v in res['host_factors'].items())}; band {BAND[0]}–{BAND[1]}).")
        if res["significant"]:
            lines.append(f"{len(res['significant'])} measure(s) moved past their floors:")
            for r in res["significant"]:
                lines.append(f"  {r['target']}.{r['measure']}: {r['recorded']} -> {r['measured']} ({r['delta']:+})")
        else:
            lines.append("No measure moved past its floors.")
    else:
        lines.append("REFUSED: this run is not compared with the recorded one.")
        for why in res["reasons"]:
            lines.append(f"  {why}")
        if res["suppressed"]:
            lines.append(f"  ({len(res['suppressed'])} per-measure moves are kept in the JSON, not reported as findings)")
    if res["new"]:
        lines.append(f"New (not in the recorded run): {', '.join(res['new'])}")
    if res["missing"]:
        lines.append(f"Missing from this run: {', '.join(res['missing'])}")
    return "\n".join(lines)


# --- the Markdown report ---------------------------------------------------------------------

NAMES = {"direct": "direct (mock)", "nginx": "nginx", "trimgate": "**Trimgate**", "portkey": "Portkey", "litellm": "LiteLLM"}


def _f(v, fmt="{:.3f}", none="–"):
    return none if v is None else fmt.format(v)


def shown_ratio(x, goal):
    """A ratio with two decimals, or four when two would round it onto the other side of
    its goal (0.7998 shown as 0.80 beside a "missed")."""
    two = f"{x:.2f}"
    return two if (float(two) >= goal) == (x >= goal) else f"{x:.4f}"


def targets_check(run, summ):
    """The issue's targets: (what, measured, goal, met)."""
    tg = summ["targets"].get("trimgate", {})
    val = lambda t, k: _get(summ, "targets", t, k, "value")
    rows = []
    a99 = val("trimgate", "added_p99_ms_c1")
    if a99 is not None:
        rows.append(("added p99 at c=1 (block mean)", f"{a99:.3f} ms", "≤ 0.10 ms", a99 <= 0.10))
        for peer in ("portkey", "litellm"):
            p = val(peer, "added_p99_ms_c1")
            if p is not None:
                if a99 <= 0:
                    rows.append((f"added p99 vs {peer}'s", f"{p:.3f} ms vs {a99:.3f} ms (≤ 0)", "≥ 20× lower", p > 0))
                else:
                    rows.append((f"added p99 vs {peer}'s", f"{p / a99:.0f}× lower", "≥ 20× lower", p / a99 >= 20))
    blocks = val("trimgate", "rps_vs_nginx_c50_blocks")
    r = val("trimgate", "rps_vs_nginx_c50")
    if blocks is not None:
        ci = _get(run, "capacity", "per_target", "trimgate", "vs_nginx", "ci95")
        shown = f"{shown_ratio(blocks, 0.8)}×" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")
        if r is not None:
            shown += f" (sweep alone: {r:.2f}×)"
        rows.append(("capacity at c=50 vs nginx (interleaved blocks)", shown, "≥ 0.80×", blocks >= 0.8))
    elif r is not None:
        rows.append(("capacity at c=50 vs nginx", f"{shown_ratio(r, 0.8)}×", "≥ 0.80×", r >= 0.8))
    cpu = val("trimgate", "cpu_us_per_completion_c50")
    if cpu is not None:
        rows.append(("CPU per completion (c=50)", f"{cpu:.1f} µs", "≤ 100 µs", cpu <= 100))
    rss = val("trimgate", "idle_rss_mib")
    if rss is not None:
        rows.append(("idle RSS", f"{rss:.1f} MiB", "≤ 15 MiB", rss <= 15))
    if "open_held_rate" in tg:
        step = next((s for s in _get(run, "targets", "trimgate", "open", "steps") or [] if s["rate"] == OPEN_TARGET_RATE), None)
        added = val("trimgate", f"open_added_p99_ms_at_{OPEN_TARGET_RATE}")
        ok = bool(step and step.get("all_ok") and added is not None and added <= 5)
        shown = (f"{step['counts']['ok']}/{step['sent']} 200, added p99 {_f(added, '{:.1f}')} ms" if step
                 else "not reached")
        rows.append((f"open loop {OPEN_TARGET_RATE}/s, 1.5 s delay", shown, "all 200, added p99 ≤ 5 ms", ok))
    return rows


def report(run, path=None):
    summ = run.get("summary") or summarize(run)
    meta = run["meta"]
    m = meta["machine"]
    plan = meta["plan"]
    out = []
    w = out.append
    if meta.get("quick"):
        w("> **QUICK run (CAMPAIGN_QUICK=1): tiny durations, a smoke test of the harness. Not a measurement.**\n")
    w(f"Command: `{meta['command']}` — run `{meta['timestamp']}`, {meta.get('elapsed_s', '?')} s  ")
    w(f"Machine: {m['cpus']} vCPUs ({m['cpu_model']}, {m.get('hypervisor') or 'bare metal'} guest), "
      f"{m['memory_gib']} GiB, {m['os']}, Linux {m['kernel']}; load average {' '.join(m['loadavg_at_start'])} at start, "
      f"{' '.join(m.get('loadavg_at_end', ['?']))} at end  ")
    vers = meta.get("versions", {})
    w("Versions: " + "; ".join(f"{NAMES.get(k, k).strip('*')} {v}" for k, v in vers.items() if v) +
      f"; {m['wrk']}; driver `bench/driver` (hyper, hdrhistogram)  ")
    w("Everything shares the 2 vCPUs: the three mocks, the target under test, the load generator (wrk or the "
      "driver) and anything else running on the host. Absolute figures are ceilings for this box; read the ratios.")
    w("")

    lat = run.get("latency")
    if lat:
        w(f"### (a) Added latency at c=1, ~1 KiB prompt — block quantiles")
        w("")
        w(f"{len(lat['order'])} Williams blocks × ({len(lat['order'][0])} gateways + a direct cell before and after), "
          f"{plan['lat_cell']} s per cell after {plan['lat_warm']} s of warm-up on the same connection (the driver, closed loop, c=1). Added = gateway quantile "
          f"− mean of its block's two direct quantiles; mean over blocks, [95 % t-interval].")
        w("")
        w("| target | added p50 ms | added p95 ms | added p99 ms | added p99.9 ms | client p99 ms | req/cell | CPU µs/completion |")
        w("|---|---:|---:|---:|---:|---:|---:|---:|")
        d = lat["per_target"]["direct"]
        w(f"| direct (mock) | — | — | — | — | {d['client_ms']['p99']:.3f} | {d['requests_per_cell']} | — |")
        for t in [x for x in ("nginx", "trimgate", "portkey", "litellm") if x in lat["per_target"]]:
            p = lat["per_target"][t]
            a = p["added_ms"]
            ci = a["p99"]["ci95"]
            w(f"| {NAMES[t]} | {a['p50']['mean']:.3f} | {a['p95']['mean']:.3f} | {a['p99']['mean']:.3f}"
              f"{f' [{ci[0]:.3f}, {ci[1]:.3f}]' if ci else ''} | {a['p999']['mean']:.3f} | {p['client_ms']['p99']:.3f} | "
              f"{p['requests_per_cell']} | {p['cpu_us_per_completion']:.1f} |")
        w("")
        w(f"Direct controls: p99 {d['before_p99_ms']:.3f} ms before vs {d['after_p99_ms']:.3f} ms after the blocks' "
          f"gateways; p50 ranged {d['p50_ms_range'][0]:.3f}–{d['p50_ms_range'][1]:.3f} ms over all direct cells. "
          f"Idle gateways used {', '.join(f'{k} {v:.3f}' for k, v in lat['idle_target_cores'].items())} cores while "
          f"another was measured; other load on the host averaged {lat['other_cores_mean']:.2f} cores.")
        w("")

    cap = run.get("capacity")
    if cap:
        w(f"### (b) Capacity at c={cap['conc']}, interleaved blocks (wrk, ~1 KiB chat, non-stream)")
        w("")
        w(f"{len(cap['order'])} blocks × (a direct cell, {' and '.join(cap['order'][0])} in Williams order, a direct "
          f"cell), {plan['cap_d']} s per cell after {plan['cap_w']} s of warm-up, every target up and the idle ones "
          f"idle. Each gateway's rate ÷ nginx's and ÷ the mean of its block's direct cells; mean over blocks, "
          f"[95 % t-interval].")
        w("")
        w("| target | rps (mean) | ÷ direct | ÷ nginx | p99 ms | CPU µs/req | errors |")
        w("|---|---:|---:|---:|---:|---:|---:|")
        d = cap["per_target"]["direct"]
        w(f"| direct (mock) | {d['rps']:.0f} ({d['rps_range'][0]}–{d['rps_range'][1]}) | 1.00 | – | – | – | – |")

        def ratio(x):
            if not x:
                return "–"
            ci = x.get("ci95")
            return f"{x['mean']:.2f}" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")

        for t in [x for x in ("nginx", "trimgate") if x in cap["per_target"]]:
            p = cap["per_target"][t]
            w(f"| {NAMES[t]} | {p['rps']:.0f} | {ratio(p['vs_direct'])} | "
              f"{'1.00' if t == 'nginx' else ratio(p.get('vs_nginx'))} | {p['p99_ms']:.2f} | "
              f"{p['cpu_us_per_completion']:.1f} | {p['errors']} |")
        w("")
        w(f"Other load on the host averaged {cap['other_cores_mean']:.2f} cores over the blocks.")
        w("")

    tg = run.get("targets", {})
    if any("sweep" in r for r in tg.values()):
        w(f"### ({'b′' if cap else 'b'}) Capacity sweep, closed loop (wrk, ~1 KiB chat, non-stream), each target alone")
        w("")
        concs = [str(int(c)) for c in plan["sweep_conc"]]
        w("| target | " + " | ".join(f"c={c} rps | p99 ms" for c in concs) + " | c=50 ÷ direct | c=50 ÷ nginx | CPU µs/req c=50 | other cores c=50 |")
        w("|---|" + "---:|---:|" * len(concs) + "---:|---:|---:|---:|")
        for t, r in tg.items():
            if "sweep" not in r:
                continue
            cells = []
            for c in concs:
                x = r["sweep"].get(c)
                cells.append(f"{x['rps']:.0f}{' (' + str(x['errors']) + ' err)' if x['errors'] else ''} | {x['ms']['p99']:.2f}" if x else "– | –")
            s = summ["targets"].get(t, {})
            cpu = _get(r, "sweep", "50", "cpu_us_per_completion", "target")
            w(f"| {NAMES.get(t, t)} | " + " | ".join(cells) +
              f" | {_f(_get(s, 'rps_vs_direct_c50', 'value'), '{:.2f}', '1.00' if t == 'direct' else '–')}"
              f" | {_f(_get(s, 'rps_vs_nginx_c50', 'value'), '{:.2f}', '1.00' if t == 'nginx' else '–')}"
              f" | {_f(cpu, '{:.1f}', '–') if t != 'direct' else _f(_get(r, 'sweep', '50', 'cpu_us_per_completion', 'mocks'), '{:.1f} (mock)')}"
              f" | {_get(r, 'sweep', '50', 'other_cores'):.2f} |")
        w("")

    if any("open" in r for r in tg.values()):
        w(f"### (c) Open loop, mock answers after {plan['open_delay_ms'] / 1000:g} s (driver, coordinated-omission corrected)")
        w("")
        w(f"Rates {', '.join(str(int(x)) for x in plan['open_rates'])}/s in turn, each {plan['open_w']} s warm-up + "
          f"{plan['open_d']} s measured on one pool of keep-alive connections, stopping at the first rate not held. "
          f"Held = every request answered 200 and p99 ≤ delay + {plan['open_slack_ms']} ms. Latency counts from when "
          f"each request was due. Added p99 = target p99 − direct p99 at the same rate.")
        w("")
        w("| target | highest rate held | step | 200s / sent | p50 ms | p99 ms | added p99 ms | max ms | connections |")
        w("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        dsteps = {s["rate"]: s for s in _get(tg, "direct", "open", "steps") or []}
        for t, r in tg.items():
            if "open" not in r:
                continue
            for i, s in enumerate(r["open"]["steps"]):
                l = s.get("latency_us") or {}
                d = (dsteps.get(s["rate"]) or {}).get("latency_us") or {}
                added = (l["p99"] - d["p99"]) / 1e3 if l and d else None
                note = "" if s.get("held") else f" ✗ {s.get('first_error') or 'p99 over the limit'}"
                w(f"| {NAMES.get(t, t) if i == 0 else ''} | {(_f(r['open']['held_rate'], '{:.0f}/s', 'none') if i == 0 else '')} | "
                  f"{s['rate']:.0f}/s | {s['counts']['ok']}/{s['sent']}{note} | {_f(l.get('p50') and l['p50'] / 1e3, '{:.1f}')} | "
                  f"{_f(l.get('p99') and l['p99'] / 1e3, '{:.1f}')} | {_f(added, '{:+.1f}')} | "
                  f"{_f(l.get('max') and l['max'] / 1e3, '{:.0f}')} | {s['connections_opened']} |")
        w("")

    if any("stream" in r for r in tg.values()):
        w(f"### (d) Streaming: time to first token and to the last (mock frames every {plan['frame_ms']} ms, "
          f"c={plan['stream_conc']}, {plan['stream_d']} s)")
        w("")
        w("| target | stream | streams/s | first token p50 ms | p99 ms | last token p50 ms | p99 ms | added first-token p50 ms | failed |")
        w("|---|---|---:|---:|---:|---:|---:|---:|---:|")
        ref = _get(tg, "direct", "stream", "native_stream", "first_token_us", "p50")
        for t, r in tg.items():
            for kind in ("native_stream", "translated_stream"):
                x = _get(r, "stream", kind)
                if x is None:
                    continue
                label = "native (Chat → Chat)" if kind == "native_stream" else "translated (Messages → Chat)"
                if x.get("unsupported"):
                    if t not in ("direct", "nginx"):
                        w(f"| {NAMES.get(t, t)} | {label} | not offered | | | | | | |")
                    continue
                ft, lt = x.get("first_token_us") or {}, x.get("latency_us") or {}
                added = (ft["p50"] - ref) / 1e3 if ft and ref else None
                w(f"| {NAMES.get(t, t)} | {label} | {x['rps']:.1f} | {_f(ft.get('p50') and ft['p50'] / 1e3)} | "
                  f"{_f(ft.get('p99') and ft['p99'] / 1e3)} | {_f(lt.get('p50') and lt['p50'] / 1e3, '{:.1f}')} | "
                  f"{_f(lt.get('p99') and lt['p99'] / 1e3, '{:.1f}')} | {_f(added, '{:+.3f}')} | "
                  f"{_failed(x)}{' (' + x['first_error'] + ')' if x.get('first_error') else ''} |")
        w("")

    if any("endpoints" in r for r in tg.values()):
        w(f"### (e) Endpoints × stream (driver, closed loop c={plan['ep_conc']}, {plan['ep_d']} s each, instant mock, "
          f"each endpoint served natively)")
        w("")
        routes = ["chat", "chat_stream", "responses", "responses_stream", "messages", "messages_stream"]
        w("| target | " + " | ".join(routes) + " |")
        w("|---|" + "---:|" * len(routes))
        w("| | " + " | ".join("rps · p99 ms" + (" · TTFT p50" if r.endswith("stream") else "") for r in routes) + " |")
        for t, r in tg.items():
            if "endpoints" not in r:
                continue
            cells = []
            for route in routes:
                x = r["endpoints"].get(route) or {}
                if x.get("unsupported"):
                    cells.append("n/a")
                elif not x.get("counts", {}).get("ok"):
                    cells.append(f"✗ {x.get('first_error') or 'no answer'}"[:60])
                else:
                    lt, ft = x.get("latency_us") or {}, x.get("first_token_us") or {}
                    bad = _failed(x)
                    cell = f"{x['rps']:.0f} · {lt['p99'] / 1e3:.2f}"
                    if route.endswith("stream"):
                        cell += f" · {ft['p50'] / 1e3:.2f}" if ft else " · –"
                    if bad:
                        cell += f" ({bad} failed: {x.get('first_error')})"[:60]
                    cells.append(cell)
            w(f"| {NAMES.get(t, t)} | " + " | ".join(cells) + " |")
        w("")

    if tg:
        w("### (f) Footprint")
        w("")
        w("| target | size on disk | processes | idle RSS MiB | peak RSS MiB (closed loop) | peak RSS MiB (after open loop) | cold start to first 200 ms | CPU µs/completion c=1 · c=50 |")
        w("|---|---:|---:|---:|---:|---:|---:|---:|")
        for t, r in tg.items():
            if t == "direct":
                continue
            size = r.get("size")
            size_s = f"{size['bytes'] / 2**20:.1f} MiB ({size['kind']})" if size else "–"
            cold = r.get("cold_starts_ms")
            first = _f(r.get("cold_start_ms"), "{:.0f}")
            cold_s = (f"{first} first start (new ledger); restarts {', '.join(f'{c:.1f}' for c in cold)}"
                      if cold else first)
            c1 = _get(run, "latency", "per_target", t, "cpu_us_per_completion")
            c50 = _get(r, "sweep", "50", "cpu_us_per_completion", "target")
            split = (f" ({r['idle_rss_anon_kib'] / 1024:.1f} anon, {r['idle_rss_file_kib'] / 1024:.1f} file)"
                     if r.get("idle_rss_anon_kib") is not None and r.get("idle_rss_file_kib") is not None else "")
            w(f"| {NAMES.get(t, t)} | {size_s} | {r.get('processes', '–')} | {r['idle_rss_kib'] / 1024:.1f}{split} | "
              f"{_f(r.get('peak_rss_kib_closed_loop') and r['peak_rss_kib_closed_loop'] / 1024, '{:.1f}')} | "
              f"{_f(_get(r, 'open', 'peak_rss_kib') and r['open']['peak_rss_kib'] / 1024, '{:.1f}')} | {cold_s} | "
              f"{_f(c1, '{:.0f}')} · {_f(c50, '{:.0f}')} |")
        w("")
        w("RSS sums every process of a target (nginx: master + workers; LiteLLM: the proxy and its workers), "
          "so pages they share count more than once; in brackets, anonymous memory (the processes' own) and "
          "file-backed pages (binaries and libraries the kernel mapped, which depends on the page cache). "
          "Size on disk: Trimgate's release binary; the peers' installed trees (venv, node_modules), without the Python or Node runtime itself. Cold start: spawn to the first "
          "200 on a chat request, polled every millisecond; Trimgate's first start also creates its ledger, its "
          "restarts reopen it.")
        w("")

    opt = run.get("optimizer")
    if opt:
        w(f"### (g) Optimizer matrix (Trimgate only; `bench/optimize_matrix.py`, N={opt['n']}, {opt['elapsed_s']} s)")
        w("")
        w(opt["markdown"].strip())
        w("")

    ctl = run.get("control_after")
    if ctl and "1" in ctl:
        d1, d50 = _get(tg, "direct", "sweep", "1"), _get(tg, "direct", "sweep", "50")
        if d1 and d50:
            w(f"Direct control at the end of the run: c=1 {d1['rps']:.0f} → {ctl['1']['rps']:.0f} rps, "
              f"c=50 {d50['rps']:.0f} → {ctl['50']['rps']:.0f} rps (its own phase → last).")
            w("")

    rows = targets_check(run, summ)
    if rows:
        w("### Targets (Trimgate, ratios from this run)")
        w("")
        w("| target | measured | goal | |")
        w("|---|---:|---:|---|")
        for what, measured, goal, ok in rows:
            w(f"| {what} | {measured} | {goal} | {'met' if ok else '**missed**'} |")
        w("")
    if os.path.exists(RECORDED) and summ.get("baseline"):
        with open(RECORDED) as f:
            rec = json.load(f)
        res = compare(summ, rec)
        w("### Against the recorded run (`bench/compare.py`)")
        w("")
        w("```")
        w(verdict_text(res))
        w("```")
        w("")
    if path:
        w(f"Results JSON: `{os.path.relpath(path, os.path.dirname(HERE))}`")
    return "\n".join(out) + "\n"


# --- the self-test -----------------------------------------------------------------------------

def _synthetic_base():
    """The recorded summary when there is one (so the test follows each re-measurement),
    else a fixed one of the same shape."""
    if os.path.exists(RECORDED):
        with open(RECORDED) as f:
            rec = json.load(f)
        if rec.get("baseline", {}).keys() >= set(GATE_MEASURES) and "trimgate" in rec.get("targets", {}):
            return rec, RECORDED
    rec = {"meta": {"timestamp": "synthetic"},
           "baseline": {"direct_rps_c1": 9500.0, "direct_rps_c50": 58000.0, "direct_p50_ms_c1": 0.1},
           "targets": {
               "nginx": {"added_p50_ms_c1": {"value": 0.02, "kind": "ms"}, "added_p99_ms_c1": {"value": 0.08, "kind": "ms"},
                         "rps_vs_direct_c50": {"value": 0.79, "kind": "ratio"}, "idle_rss_mib": {"value": 15.6, "kind": "mib"}},
               "trimgate": {"added_p50_ms_c1": {"value": 0.02, "kind": "ms"}, "added_p99_ms_c1": {"value": 0.09, "kind": "ms"},
                            "rps_vs_direct_c50": {"value": 0.5, "kind": "ratio"}, "rps_vs_nginx_c50": {"value": 0.63, "kind": "ratio"},
                            "cpu_us_per_completion_c50": {"value": 40.0, "kind": "us"},
                            "open_held_rate": {"value": 4000, "kind": "rate"},
                            "idle_rss_mib": {"value": 12.0, "kind": "mib"}},
               "litellm": {"added_p50_ms_c1": {"value": 14.0, "kind": "ms"}, "added_p99_ms_c1": {"value": 18.0, "kind": "ms"},
                           "rps_vs_direct_c50": {"value": 0.01, "kind": "ratio"}}}}
    return rec, "built-in fixture"


def _host(summary, factor):
    """The same run on a host `factor` times as fast: baseline throughput scales, and so
    (roughly) do the gateways' own absolute figures; the ratios do not."""
    s = copy.deepcopy(summary)
    for k in s["baseline"]:
        s["baseline"][k] = s["baseline"][k] * factor if k.startswith("direct_rps") else s["baseline"][k] / factor
    for t in s["targets"].values():
        for m in t.values():
            if m["kind"] in ("ms", "us", "cold_ms"):
                m["value"] = m["value"] / factor
    return s


def self_test():
    rec, source = _synthetic_base()
    checks = []

    def check(name, cond, detail=""):
        checks.append((name, bool(cond), detail))

    def pick(kind_or_key):
        """A trimgate measure to plant a change in: the key, or the first of a kind."""
        tg = rec["targets"]["trimgate"]
        if kind_or_key in tg:
            return kind_or_key
        return next(k for k, m in tg.items() if m["kind"] == kind_or_key)

    r = compare(copy.deepcopy(rec), rec)
    check("replaying the recorded run is comparable and shows no drift",
          r["comparable"] and not r["significant"] and not r["suppressed"] and r["drift"], r["reasons"])

    for factor, why in ((0.55, "a busier host (0.55×)"), (2.0, "a host twice as fast")):
        s = _host(rec, factor)
        r = compare(s, rec)
        check(f"{why} is refused, nothing reported as a finding, the per-measure moves kept",
              not r["comparable"] and not r["significant"] and r["drift"] and r["reasons"], r["reasons"])

    s = _host(rec, 0.5)
    key = pick("added_p99_ms_c1")
    s["targets"]["trimgate"][key]["value"] = rec["targets"]["trimgate"][key]["value"] + 5.0
    r = compare(s, rec)
    check("a planted regression on a refused run is kept in the JSON but not reported",
          not r["comparable"] and not r["significant"] and any(x["measure"] == key for x in r["suppressed"]))

    for edge, ok in ((0.70, True), (1.40, True), (0.69, False), (1.41, False)):
        s = copy.deepcopy(rec)
        for k in GATE_MEASURES:
            s["baseline"][k] = rec["baseline"][k] * edge
        check(f"host factor {edge} is {'inside' if ok else 'outside'} the band", compare(s, rec)["comparable"] == ok)

    s = copy.deepcopy(rec)
    s["baseline"]["direct_rps_c50"] *= 0.5
    r = compare(s, rec)
    check("one baseline measure out of band is enough to refuse", not r["comparable"] and len(r["reasons"]) == 1)

    s = copy.deepcopy(rec)
    s["targets"]["trimgate"][key]["value"] += 1.0
    r = compare(s, rec)
    check(f"a +1 ms regression of trimgate.{key} is the one flagged measure",
          r["comparable"] and [(x["target"], x["measure"]) for x in r["significant"]] == [("trimgate", key)],
          r["significant"])

    ratio = pick("ratio")
    s = copy.deepcopy(rec)
    s["targets"]["trimgate"][ratio]["value"] /= 2
    r = compare(s, rec)
    check(f"halving trimgate.{ratio} is the one flagged measure",
          [(x["target"], x["measure"]) for x in r["significant"]] == [("trimgate", ratio)], r["significant"])

    s = copy.deepcopy(rec)
    small = rec["targets"]["trimgate"][key]["value"]
    s["targets"]["trimgate"][key]["value"] = small + 0.03 if abs(small) < 0.1 else small * 1.19
    r = compare(s, rec)
    check("a move under the floors (< 0.05 ms or < 20 %) is not flagged", r["comparable"] and not r["significant"],
          r["significant"])

    zero = copy.deepcopy(rec)
    zero["targets"]["trimgate"][key]["value"] = 0.0
    s = copy.deepcopy(zero)
    s["targets"]["trimgate"][key]["value"] = 0.2
    r1 = compare(s, zero)
    s["targets"]["trimgate"][key]["value"] = 0.01
    r2 = compare(s, zero)
    check("a move from zero is judged by its absolute floor alone, without dividing by zero",
          [x["measure"] for x in r1["significant"]] == [key] and not r2["significant"])

    s = copy.deepcopy(rec)
    del s["baseline"]["direct_rps_c50"]
    r = compare(s, rec)
    check("a run without its baseline is refused with a reason, not a crash",
          not r["comparable"] and any("no baseline" in x for x in r["reasons"]))

    s = copy.deepcopy(rec)
    s["targets"]["bifrost"] = {"added_p99_ms_c1": {"value": 2.0, "kind": "ms"}}
    del s["targets"]["litellm" if "litellm" in s["targets"] else "nginx"]
    r = compare(s, rec)
    check("a target absent from the recorded run is listed as new, one absent from this run as missing",
          r["comparable"] and r["new"] == ["bifrost"] and r["missing"] and not r["significant"])

    s = copy.deepcopy(rec)
    other = next(k for k in s["targets"]["trimgate"] if k != key)
    del s["targets"]["trimgate"][other]
    r = compare(s, rec)
    check("a measure missing from this run is listed as missing, not as drift",
          f"trimgate.{other}" in r["missing"] and not any(x["measure"] == other and x["target"] == "trimgate" for x in r["drift"]))

    check("a ratio that two decimals would round onto its goal is shown with four",
          shown_ratio(0.7998, 0.8) == "0.7998" and shown_ratio(0.8, 0.8) == "0.80"
          and shown_ratio(0.834, 0.8) == "0.83" and shown_ratio(0.7949, 0.8) == "0.79")

    passed = sum(ok for _, ok, _ in checks)
    print(f"gate self-test on synthetic runs derived from {source}:")
    for name, ok, detail in checks:
        print(f"  {'ok  ' if ok else 'FAIL'} {name}" + ("" if ok else f"  {detail}"))
    print(f"{passed} passed, {len(checks) - passed} failed")
    return passed == len(checks)


def main(argv):
    if argv[:1] == ["--self-test"]:
        return 0 if self_test() else 1
    if argv[:1] == ["--record"] and len(argv) == 2:
        with open(argv[1]) as f:
            run = json.load(f)
        if run["meta"].get("quick"):
            print("refusing to record a QUICK run as the reference", file=sys.stderr)
            return 1
        summ = run.get("summary") or summarize(run)
        with open(RECORDED, "w") as f:
            json.dump(summ, f, indent=1)
            f.write("\n")
        print(f"recorded {argv[1]} as {RECORDED}")
        return 0
    if not argv or argv[0].startswith("-"):
        print(__doc__)
        return 2
    with open(argv[0]) as f:
        run = json.load(f)
    recorded = RECORDED
    out_json = None
    rest = argv[1:]
    while rest:
        flag, value, rest = rest[0], rest[1], rest[2:]
        if flag == "--recorded":
            recorded = value
        elif flag == "--json":
            out_json = value
    summ = run.get("summary") or summarize(run)
    print("Ratios to this run's baseline:")
    for t, ms in summ["targets"].items():
        print(f"  {t}: " + ", ".join(f"{k}={v['value']}" for k, v in ms.items()))
    if not os.path.exists(recorded):
        print(f"no recorded run at {recorded}: nothing to compare with")
        return 0
    with open(recorded) as f:
        rec = json.load(f)
    res = compare(summ, rec)
    print(verdict_text(res))
    if out_json:
        with open(out_json, "w") as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

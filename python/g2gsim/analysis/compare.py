"""HostCopy vs GPUDirect (and mixed what-ifs) on one trace: ``g2gsim compare``."""
from __future__ import annotations

import functools
import math
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..sim import legacy_buffers, machine_info, simulate
from ..vocab import HOST_SPACES
from ._common import (
    COLL_CLASS,
    COPY_CLASS,
    SEND_OPS,
    SIZE_EDGES,
    SIZE_LABELS,
    KiB,
    TraceData,
    categories,
    category,
    load_trace,
    ratio,
    size_class,
    size_label,
)
from ._parallel import check_jobs, run_all
from .attribution import UNKNOWN_SITE, Attributor, core_supports_call_times, core_supports_timeline
from .metrics import pop_metrics, profile_tables, summary

BASE, TARGET = "hostcopy", "gpudirect"
MAX_CALLSITES = 30
# a core without call times gives exact per-call times only through its timeline, parsed in Python:
# "auto" takes that way only for traces this small (with call times, always)
TIMELINE_AUTO_MAX_ROWS = 200_000


@dataclass
class Column:
    name: str
    mode: str
    options: dict[str, Any]


def columns_for(mixed: bool = False, gpudirect_min_bytes: int | None = None,
                gpudirect_collectives_only: bool = False) -> list[Column]:
    cols = [Column("as-traced", "as-traced", {}), Column(BASE, BASE, {}), Column(TARGET, TARGET, {})]
    mins = []
    if mixed:
        mins.append(64 * KiB)
    if gpudirect_min_bytes:
        mins.append(int(gpudirect_min_bytes))
    for m in dict.fromkeys(mins):
        cols.append(Column(f"gpudirect >= {size_label(m)}", TARGET, {"gpudirect_min_bytes": m}))
    if mixed or gpudirect_collectives_only:
        cols.append(Column("gpudirect collectives only", TARGET, {"gpudirect_collectives_only": True}))
    return cols


def slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", name.replace(">=", "ge")).strip("-")


def host_buffer_share(td: TraceData) -> float:
    df = td.df
    cat = categories(df["op"])
    mpi = (cat == "p2p") | (cat == "collective")
    return float(np.isin(df["mem_space"].to_numpy(object)[mpi], HOST_SPACES).mean()) if mpi.any() else 0.0


def trace_compute_share(td: TraceData) -> float | None:
    """Share of the traced run spent in Compute (from the trace's own timestamps), when it has them."""
    df = td.df
    if df["t_start_ns"].isna().all() or df["t_end_ns"].isna().all():
        return None
    g = df.groupby("rank")
    span = (g["t_end_ns"].max() - g["t_start_ns"].min()).sum()
    comp = df.loc[categories(df["op"]) == "compute", "dur_ns"].sum()
    return float(comp / span) if span > 0 else None


def compare(trace: str | Path, machine: str | Path = "lassen", *, mixed: bool = False,
            gpudirect_min_bytes: int | None = None, gpudirect_collectives_only: bool = False,
            class_gains: bool = True, attribution: str = "auto", timeline: str | Path | None = None,
            buffers: str | None = None, window: str = "traced", sensitivity: bool = True,
            machine_default: bool = False, staged_as_device: bool | str | None = None,
            assume_buffers: str | None = None, jobs: int | None = None,
            progress: Callable[[str], None] | None = None, **sim_kw: Any) -> dict:
    """Simulates ``trace`` as traced, under HostCopy and GPUDirect (plus mixed what-if columns) and
    returns the comparison as a JSON-serialisable dict (see docs/analysis.md for every field).

    jobs: simulations run side by side (default: the processors this process may use, at most 8,
    and no more than the available memory holds at 32 KiB a rank; 1: one after the other).  The
    answer is the same whatever the number: each run is the same deterministic simulation, and the
    results are put together in one order.

    buffers / window: as g2gsim.simulate (docs/semantics.md); every column uses the same.
    sensitivity: re-simulate HostCopy and GPUDirect at the low and high end of every range the
    machine file gives (``[uncertainty."table.key"]``) and say whether the verdict holds.
    sim_kw are simulate()'s options (gpus_per_node, mapping, coll_algos, network_scale, ...).
    attribution: "timeline" (exact per-call times from the core), "estimate" or "auto" (exact; with a
    core built before per-call times, through its timeline and only for traces of at most 200k rows).
    timeline: a path; each column's Perfetto timeline is written next to it as NAME-<column>.json.
    ``staged_as_device`` / ``assume_buffers``: the old names of ``buffers`` (mapped, with a notice;
    "auto" is what ``buffers="traced"`` now does in every run).
    """
    check_jobs(jobs)  # a bad value fails before the trace is read
    notes: list[str] = []
    sad = None if staged_as_device is None or staged_as_device == "auto" else bool(staged_as_device)
    legacy, lnotes = legacy_buffers(assume_buffers, sad)
    if legacy is not None:
        if buffers is not None and buffers != legacy:
            raise ValueError(f"buffers={buffers!r} contradicts the old option that means buffers={legacy!r}")
        buffers = legacy
    buffers = buffers or "traced"
    td = load_trace(trace)
    native = td.path
    jobs = check_jobs(jobs, td.nranks)
    cols = columns_for(mixed, gpudirect_min_bytes, gpudirect_collectives_only)
    sim_kw = {k: v for k, v in sim_kw.items() if v is not None}
    for k in ("staged_as_device", "gpudirect_min_bytes", "gpudirect_collectives_only", "buffers", "window",
              "machine_default"):
        sim_kw.pop(k, None)
    sim_kw.update(buffers=buffers, window=window)

    ct_support = core_supports_call_times() if attribution != "estimate" else False
    tl_support = core_supports_timeline() if ((attribution != "estimate" and not ct_support) or timeline) else False
    use_ct = ct_support and attribution != "estimate"
    use_tl = not use_ct and (attribution == "timeline"
                             or (attribution == "auto" and len(td.df) <= TIMELINE_AUTO_MAX_ROWS))
    if (use_tl or timeline) and not tl_support:
        if attribution == "timeline" or timeline:
            notes.append("the compiled core does not accept the timeline option (built before it was "
                         "added): no timeline written, per-call times estimated; rebuild with "
                         "`pip install -e . --no-build-isolation`")
        use_tl = False
    tmp = tempfile.TemporaryDirectory(prefix="g2gsim-compare-")
    att_engine = Attributor(td)
    reports: dict[str, dict] = {}
    atts = {}
    timelines: dict[str, str] = {}

    def user_timeline(c: Column) -> Path:
        """Where column ``c``'s timeline goes when the user asked for timelines: NAME-<column>.json"""
        assert timeline is not None
        t = Path(timeline)
        return t.with_name(f"{t.stem}-{slug(c.name)}{t.suffix or '.json'}")

    def run_column(c: Column, stop: Callable[[int, int], None]) -> tuple[dict, Any]:
        opts = dict(sim_kw, **c.options)
        tl_path = None
        if tl_support and (use_tl or timeline):
            tl_path = user_timeline(c) if timeline else Path(tmp.name) / f"{slug(c.name)}.json"
            opts["timeline"] = str(tl_path)
            opts["timeline_max_events"] = max(2_000_000, 20 * len(td.df) + 100_000)
        ct_path = Path(tmp.name) / f"{slug(c.name)}.calls" if use_ct else None
        if ct_path is not None:
            opts["call_times"] = str(ct_path)
        rep = simulate(native, machine, mode=c.mode, machine_default=machine_default, progress=stop, **opts)
        att = att_engine.attribute(rep, tl_path if use_tl else None, call_times=ct_path)
        if tl_path is not None and not timeline:
            tl_path.unlink(missing_ok=True)
        if ct_path is not None:
            ct_path.unlink(missing_ok=True)
        return rep, att

    # every simulation is known before any runs (the sensitivity ranges come from the machine file):
    # one pool for all of them, so that no phase waits for the slowest run of the one before
    calls: list[tuple[str, Callable[[Callable[[int, int], None]], Any]]] = [
        (c.name, functools.partial(run_column, c)) for c in cols]
    gain_calls, gains_table = _class_gains_plan(native, machine, sim_kw, att_engine) if class_gains else ([], None)
    sens_calls, sens_table = (_sensitivity_plan(native, machine, sim_kw, machine_info(machine, explicit=not machine_default))
                              if sensitivity else ([], None))
    try:
        results = run_all(calls + gain_calls + sens_calls, jobs, progress)
        done = results[:len(cols)]
        for c, (rep, att) in zip(cols, done):
            reports[c.name] = rep
            atts[c.name] = att
            if timeline and tl_support:
                timelines[c.name] = str(user_timeline(c))
            for n in att.notes:
                if n not in notes:
                    notes.append(n)
        method = atts[BASE].method
        rest = results[len(cols):]
        gains = gains_table(rest[:len(gain_calls)], reports) if gains_table else None
        sens = sens_table(rest[len(gain_calls):], reports) if sens_table else None
    finally:
        tmp.cleanup()
    res = _assemble(td, machine, cols, reports, atts, method, gains, notes, timelines, sim_kw)
    # what every column assumed and which options changed nothing (the core's words, once each)
    notices = list(dict.fromkeys(lnotes + [n for name in (BASE, TARGET) for n in reports[name].get("notices", [])]))
    assumptions = list(dict.fromkeys(a for name in (BASE, TARGET) for a in reports[name].get("assumptions", [])))
    res.update(notices=notices, assumptions=assumptions, trace_buffers=td.buffers, buffers=buffers, window=window,
               machine_info=reports[BASE].get("machine_info"), sensitivity=sens)
    bs = reports[TARGET].get("buffer_stats") or {}
    if bs and bs.get("device", 0) + bs.get("staged", 0) == 0:
        res["runtime"]["verdict"] = ("no GPU data in the MPI calls: HostCopy and GPUDirect are the same run "
                                     f"(--buffers {buffers}; --buffers device asks what GPU-resident buffers would give)")
    _apply_sensitivity(res)
    return res


def _sensitivity_plan(native, machine, sim_kw, info: dict):
    """HostCopy and GPUDirect at the low and high end of each range the machine file gives: the runs
    (label, run(stop)), and the table from their results (with the columns' reports)."""
    opts = {k: v for k, v in sim_kw.items() if k not in ("timeline", "timeline_max_events")}
    opts["per_rank"] = False
    ranges = info.get("ranges", [])
    runs = [(rg, end, mode) for rg in ranges for end in ("low", "high") for mode in (BASE, TARGET)]

    def run(rg: dict, end: str, mode: str, stop: Callable[[int, int], None]) -> float:
        rep = simulate(native, machine, mode=mode, machine_set={rg["key"]: rg[end]}, progress=stop, **opts)
        return summary(rep)["runtime_s"]

    calls = [(f"sensitivity: {rg['key']} = {rg[end]} ({mode})", functools.partial(run, rg, end, mode))
             for rg, end, mode in runs]

    def table(results: list[float], reports: dict) -> dict:
        times = {(rg["key"], end, mode): t for (rg, end, mode), t in zip(runs, results)}
        base_change = ratio(summary(reports[TARGET])["runtime_s"], summary(reports[BASE])["runtime_s"]) - 1
        rows = []
        for rg in ranges:
            row = {"key": rg["key"], "low": rg["low"], "high": rg["high"], "source": rg["source"],
                   "value": info["key_parameters"].get(rg["key"], "default")}
            for end in ("low", "high"):
                rt = {mode: times[(rg["key"], end, mode)] for mode in (BASE, TARGET)}
                ch = ratio(rt[TARGET], rt[BASE]) - 1
                row[f"change_{end}"] = ch
                row[f"verdict_{end}"] = _verdict(-ch)
                row[f"hostcopy_s_{end}"], row[f"gpudirect_s_{end}"] = rt[BASE], rt[TARGET]
            row["spread"] = abs(row["change_high"] - row["change_low"])
            rows.append(row)
        rows.sort(key=lambda r: -r["spread"])
        return {"parameters": rows, "base_change": base_change,
                "note": None if rows else f"{info['name']} gives no ranges for its uncertain parameters: "
                                          "the verdict's sensitivity is not known ([uncertainty] in docs/machine-files.md)"}

    return calls, table


def _apply_sensitivity(res: dict) -> None:
    """The verdict with its uncertainty: holds across every range, or depends on a parameter."""
    rt = res["runtime"]
    sens = res.get("sensitivity")
    base = rt["verdict"]
    if base.startswith("no GPU data"):
        rt.update(verdict_holds=None, depends_on=[], band=None, verdict_statement=base)
        return
    if not sens or not sens["parameters"]:
        rt["verdict_holds"] = None
        rt["depends_on"] = []
        rt["band"] = None
        rt["verdict_statement"] = base + (" (sensitivity unknown: the machine gives no ranges)" if sens is not None else "")
        return
    ps = sens["parameters"]
    changes = [rt["simulated_change"]] + [p[f"change_{e}"] for p in ps for e in ("low", "high")]
    finite = [c for c in changes if c == c]
    rt["band"] = [min(finite), max(finite)] if finite else None
    flips = [p for p in ps if p["verdict_low"] != base or p["verdict_high"] != base]
    rt["depends_on"] = [p["key"] for p in flips]
    rt["verdict_holds"] = not flips
    if flips:
        p = flips[0]
        rt["verdict_statement"] = (f"depends on {', '.join(rt['depends_on'])}: {p['verdict_low']} at {p['key']} = "
                                   f"{p['low']} ({p['change_low']:+.1%}), {p['verdict_high']} at {p['high']} "
                                   f"({p['change_high']:+.1%})")
        rt["verdict"] = f"depends on {', '.join(rt['depends_on'])}"
    else:
        lo, hi = rt["band"]
        rt["verdict_statement"] = (f"{base}; holds across {', '.join(p['key'] for p in ps)} "
                                   f"(run-time change {lo:+.1%} to {hi:+.1%})")


def _class_gains_plan(native, machine, sim_kw, att_engine):
    """GPUDirect saving per size class by simulation: messages of at least a threshold go GPU-direct
    (gpudirect_min_bytes); the saving of a class is the drop in communication time when the threshold
    moves from its upper to its lower bound. Classes are taken largest first.  The runs (label,
    run(stop)), and the table from their results (with the columns' reports)."""
    present = [c for c in SIZE_LABELS if c in att_engine.class_messages]
    lower = {lab: (0 if i == 0 else SIZE_EDGES[i - 1] + 1) for i, lab in enumerate(SIZE_LABELS)}
    opts = dict(sim_kw)
    thresholds = [1 << 62] + [lower[c] for c in reversed(present) if lower[c] > 0]

    def run(t: int, stop: Callable[[int, int], None]) -> float:
        return summary(simulate(native, machine, mode=TARGET, gpudirect_min_bytes=t, progress=stop, **opts))["comm_s"]

    calls = [(f"gpudirect >= {size_label(t) if t < 1 << 62 else 'none'}", functools.partial(run, t))
             for t in thresholds]

    def table(results: list[float], reports: dict) -> dict:
        comm = dict(zip(thresholds, results))
        comm[0] = summary(reports[TARGET])["comm_s"]
        out: dict[str, dict] = {}
        prev = comm[1 << 62]
        for c in reversed(present):
            t = lower[c]
            cur = comm[t]
            out[c] = {"threshold_bytes": t, "comm_s_after": cur, "saving_s": prev - cur}
            prev = cur
        rest = prev - comm[0]
        if abs(rest) > 1e-12:
            out["smaller messages and collectives"] = {"threshold_bytes": 0, "comm_s_after": comm[0], "saving_s": rest}
        base = comm[1 << 62]
        for v in out.values():
            v["saving_share"] = ratio(v["saving_s"], base - comm[0]) if base != comm[0] else float("nan")
        return {"all_staged_comm_s": base, "classes": out}

    return calls, table


def _verdict(runtime_gain: float) -> str:
    if not np.isfinite(runtime_gain):
        return "no communication to speed up"
    if runtime_gain >= 0.10:
        return "good candidate for GPUDirect"
    if runtime_gain >= 0.03:
        return "modest candidate for GPUDirect"
    if runtime_gain > -0.01:
        return "not worth porting to GPUDirect"
    return "GPUDirect slows this run down"


def _assemble(td, machine, cols, reports, atts, method, gains, notes, timelines, sim_kw) -> dict:
    names = [c.name for c in cols]
    hc = reports[BASE]
    n = max(int(hc["nranks"]), 1)
    summ = {k: summary(r) for k, r in reports.items()}
    s_hc, s_gd = summ[BASE], summ[TARGET]
    speedup = {k: ratio(s_hc["comm_s"], v["comm_s"]) for k, v in summ.items()}
    S = speedup[TARGET]
    f = s_hc["comm_share"]
    amdahl_ratio = (1 - f) + f / S if np.isfinite(S) and S > 0 else float("nan")
    traced_cs = trace_compute_share(td)
    runtime: dict[str, Any] = {
        "hostcopy_s": s_hc["runtime_s"], "gpudirect_s": s_gd["runtime_s"],
        "simulated_change": ratio(s_gd["runtime_s"], s_hc["runtime_s"]) - 1,
        "comm_share_hostcopy": f,
        "amdahl_change": amdahl_ratio - 1,
        "traced_compute_share": traced_cs,
    }
    if traced_cs is not None and np.isfinite(S) and S > 0:
        runtime["amdahl_change_traced_share"] = (traced_cs + (1 - traced_cs) / S) - 1
    runtime["verdict"] = _verdict(-runtime["simulated_change"])

    # by operation: exact from the core's per_op
    ops = sorted({k for r in reports.values() for k in r["per_op"]
                  if category(k) in ("p2p", "collective", "wait", "copy")},
                 key=lambda k: -hc["per_op"].get(k, {}).get("total_s", 0.0))
    by_op = {}
    for op in ops:
        row = {name: reports[name]["per_op"].get(op, {}).get("total_s", 0.0) / n for name in names}
        by_op[op] = {"time_s": row, "count": int(hc["per_op"].get(op, {}).get("count", 0)),
                     "category": category(op), "speedup": ratio(row[BASE], row[TARGET])}
    # by size class
    cls_t = {name: atts[name].by_class() for name in names}
    cls_names = [c for c in SIZE_LABELS + [COLL_CLASS, COPY_CLASS, "unmatched waits"]
                 if any(c in v for v in cls_t.values())]
    by_class = {}
    for c in cls_names:
        row = {name: cls_t[name].get(c, 0.0) for name in names}
        cm = _class_messages(td, c)
        by_class[c] = {"time_s": row, "speedup": ratio(row[BASE], row[TARGET]), **cm}
    # by call site
    by_site = None
    if td.has_callsites:
        site_t = {name: atts[name].by_callsite() for name in names}
        sites = sorted(site_t[BASE], key=lambda s: -site_t[BASE][s])
        by_site = {}
        for s in sites[:MAX_CALLSITES]:
            row = {name: site_t[name].get(s, 0.0) for name in names}
            by_site[s] = {"time_s": row, "speedup": ratio(row[BASE], row[TARGET])}
        if len(sites) > MAX_CALLSITES:
            row = {name: sum(site_t[name].get(s, 0.0) for s in sites[MAX_CALLSITES:]) for name in names}
            by_site[f"({len(sites) - MAX_CALLSITES} other call sites)"] = {"time_s": row, "speedup": ratio(row[BASE], row[TARGET])}
    # messages (Observation 3)
    p2p, coll = int(hc["p2p_messages"]), int(hc["collective_messages"])
    p2p_t = {name: sum(v for k, v in cls_t[name].items() if k in SIZE_LABELS or k == "unmatched waits") for name in names}
    coll_t = {name: cls_t[name].get(COLL_CLASS, 0.0) for name in names}
    messages = {
        "p2p": p2p, "collective": coll,
        "p2p_share": ratio(p2p, p2p + coll), "collective_share": ratio(coll, p2p + coll),
        "p2p_time_s": p2p_t, "collective_time_s": coll_t,
        "p2p_speedup": ratio(p2p_t[BASE], p2p_t[TARGET]), "collective_speedup": ratio(coll_t[BASE], coll_t[TARGET]),
        "paths": {name: reports[name]["paths"] for name in names},
    }
    pop = {name: pop_metrics(reports[name]) for name in names}
    pop_gain = ratio(pop[TARGET]["communication_efficiency"], pop[BASE]["communication_efficiency"])
    profiles = {name: profile_tables(reports[name], atts[name]) for name in (BASE, TARGET)}
    return {
        "trace": str(td.path), "machine": str(machine), "source": td.source, "buffers": td.buffers,
        "nranks": int(hc["nranks"]), "nodes": int(hc["nodes"]), "gpus_per_node": int(hc["gpus_per_node"]),
        "options": {k: (v if not isinstance(v, (list, tuple)) else list(v)) for k, v in sim_kw.items()},
        "columns": names,
        "column_options": {c.name: {"mode": c.mode, **c.options} for c in cols},
        "summary": summ, "speedup": speedup, "runtime": runtime,
        "by_op": by_op, "by_class": by_class, "class_gains": gains, "by_callsite": by_site,
        "messages": messages, "pop": pop, "pop_comm_efficiency_gain": pop_gain, "profiles": profiles,
        "attribution": method, "timelines": timelines, "notes": notes,
        "reports": {name: {k: v for k, v in r.items() if k != "per_rank"} for name, r in reports.items()},
        "per_rank": {name: r.get("per_rank") for name, r in reports.items() if name in (BASE, TARGET)},
    }


def _class_messages(td: TraceData, cls: str) -> dict:
    df = td.df
    if cls in SIZE_LABELS:
        s = df[df["op"].isin(SEND_OPS) & (df["peer"] >= 0)]
        b = s["bytes"].to_numpy(np.int64)
        sel = size_class(b) == cls
        return {"messages": int(sel.sum()), "bytes": int(b[sel].sum())}
    if cls == COLL_CLASS:
        s = df[categories(df["op"]) == "collective"]
        return {"calls": int(len(s)), "bytes": int(np.maximum(s["bytes"], s["recv_bytes"]).sum())}
    if cls == COPY_CLASS:
        s = df[df["op"] == "Memcpy"]
        return {"calls": int(len(s)), "bytes": int(s["bytes"].sum())}
    return {}


def sanitize(obj: Any) -> Any:
    """NaN/inf -> None, numpy scalars -> Python, for strict JSON."""
    if isinstance(obj, dict):
        return {str(k): sanitize(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [sanitize(v) for v in obj]
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        f = float(obj)
        return f if math.isfinite(f) else None
    return obj


__all__ = ["compare", "columns_for", "sanitize", "UNKNOWN_SITE"]

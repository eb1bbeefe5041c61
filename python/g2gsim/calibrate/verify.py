"""Verify a machine file against calibration measurements by simulating every measured point.

``verify(raw, machine)`` simulates each curve of the raw file (ping-pong, ping-ping, cudaMemcpy,
collectives, concurrency; see ``micro.py``) with the machine file and returns one row per size:
measured and predicted time and the relative error (predicted / measured - 1).  ``summarize``
groups the rows by benchmark, mode and size range (below 32 KiB, 32 KiB and up) with the median and
worst absolute error, against the targets of issue 6: 5% median and 10% worst from 32 KiB, 15%
below.
"""
from __future__ import annotations

import numpy as np

from .micro import KiB, closed_form, load_raw, series_from_raw, simulate_series

SPLIT = 32 * KiB
TARGETS = {"large": {"median": 0.05, "worst": 0.10}, "small": {"median": 0.15, "worst": 0.15}}
P2P_KINDS = ("pingpong", "pingping")


def verify(raw, machine, kinds=None, workdir=None, progress=None) -> list[dict]:
    rows: list[dict] = []
    series = series_from_raw(load_raw(raw))
    for i, s in enumerate(series):
        if kinds is not None and s.kind not in kinds:
            continue
        pred = simulate_series(s, machine, workdir=workdir)
        for n, m, p, it in zip(s.sizes, s.t, pred, s.iterations):
            rows.append({"kind": s.kind, "mode": s.mode, "op": s.op, "scope": s.scope, "series": s.name,
                         "bytes": int(n), "iterations": int(it), "measured_s": float(m), "predicted_s": float(p),
                         "error": float(p / m - 1)})
        if progress:
            progress(i + 1, len(series))
    return rows


def group_key(r: dict) -> str:
    if r["kind"] == "memcpy":
        return f"memcpy {r['mode']} ({r['op']})"
    if r["kind"] == "collective":
        return f"{r['op']} ({r['mode']})"
    return f"{r['kind']} ({r['mode']})" + ("" if r.get("scope", "intra") == "intra" else f" {r['scope']}")


def summarize(rows: list[dict], split: int = SPLIT) -> list[dict]:
    """Median / worst absolute error per (group, size range), in the order the rows came."""
    out: list[dict] = []
    groups: dict[tuple, list] = {}
    order: list[tuple] = []
    for r in rows:
        rng = "small" if r["bytes"] < split else "large"
        k = (group_key(r), r["kind"], r["mode"], rng)
        if k not in groups:
            groups[k] = []
            order.append(k)
        groups[k].append(r["error"])
    for k in order:
        e = np.abs(np.array(groups[k]))
        sgn = np.array(groups[k])
        tgt = TARGETS[k[3]]
        med, worst = float(np.median(e)), float(e.max())
        out.append({"group": k[0], "kind": k[1], "mode": k[2], "range": "< 32 KiB" if k[3] == "small" else ">= 32 KiB",
                    "n": len(e), "median_abs": med, "worst_abs": worst, "median_signed": float(np.median(sgn)),
                    "meets_target": bool(med <= tgt["median"] and worst <= tgt["worst"])})
    return out


def closed_form_check(raw, params, machine) -> float:
    """Largest relative difference between the closed forms the fit used (``params``) and the
    simulation of the same curves on ``machine`` (the file written from them): a check that the
    fitter's algebra is the simulator's."""
    worst = 0.0
    for s in series_from_raw(load_raw(raw)):
        if s.kind in P2P_KINDS and s.scope == "intra":
            sel = s.sizes[::4]
            sim = simulate_series(s, machine, sizes=sel)
            cf = closed_form(s.kind, s.mode, sel, params)
            worst = max(worst, float(np.max(np.abs(sim / cf - 1))))
    return worst


def table_rows(summary: list[dict]) -> list[list[str]]:
    return [[s["group"], s["range"], str(s["n"]), f"{100 * s['median_abs']:.1f}%", f"{100 * s['worst_abs']:.1f}%",
             f"{100 * s['median_signed']:+.1f}%", "yes" if s["meets_target"] else "no"] for s in summary]

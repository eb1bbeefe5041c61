"""Leave-one-out error of the calibration (issue 25): how well the fit generalises.

For each measured series of a raw file (one point-to-point pattern in one buffer mode, one
concurrency or multi-peer pattern, one cudaMemcpy curve, optionally one collective), the machine
file is fitted on every series but that one and then predicts it.  The report gives, per series,
the error of the fit that saw it (fit-set error) beside the error of the fit that did not
(held-out error): a fit that only reproduces what it was given shows a small fit-set error and a
large held-out one.  Series the fit cannot do without (the host ping-pong: the fit starts from it)
are reported as such, never silently skipped.

``leave_one_out(raw)`` returns the rows; ``g2gsim calibrate loo RAW`` prints and writes them.
"""
from __future__ import annotations

import copy
from typing import Any

import numpy as np

from .fit import fit, machine_file
from .micro import KiB, load_raw, series_from_raw, simulate_series, variant_suffix

SPLIT = 32 * KiB
SECTIONS = ("p2p", "memcpy", "concurrency", "multipeer", "burst", "collectives")


def _label(sec: str, e: dict) -> str:
    if sec == "p2p":
        return f"{e['pattern']} {e['mode']}" + ("" if e.get("scope", "intra") == "intra" else f" ({e['scope']})")
    if sec == "memcpy":
        return f"memcpy {e['kind']} {e['host']}"
    if sec == "collectives":
        return f"{e['op']} {e['mode']}"
    kind = {"ring-sendrecv": "ring"}.get(e["pattern"], e["pattern"])      # the Series kind of the pattern
    return f"{e['pattern']} {e['mode']}" + variant_suffix(kind, len(e.get("ranks") or []), e.get("order", "ascending"))


def entries(raw: dict, collectives: bool = False) -> list[tuple[str, str, int]]:
    """(label, section, index) of every series that can be left out."""
    out = []
    for sec in SECTIONS:
        if sec == "collectives" and not collectives:
            continue
        for i, e in enumerate(raw.get(sec) or []):
            if not e.get("sizes"):
                continue
            out.append((_label(sec, e), sec, i))
    return out


def _errors(pred: np.ndarray, meas: np.ndarray, sizes: np.ndarray) -> dict:
    e = pred / meas - 1
    out: dict[str, Any] = {}
    for name, sel in (("small", sizes < SPLIT), ("large", sizes >= SPLIT)):
        if sel.any():
            a = np.abs(e[sel])
            out[name] = {"n": int(sel.sum()), "median_abs": float(np.median(a)), "worst_abs": float(a.max()),
                         "median_signed": float(np.median(e[sel]))}
    return out


def _spread(raw_entry_series) -> float | None:
    sp = [s.spread for s in raw_entry_series if s.spread is not None]
    return float(np.median(np.concatenate(sp))) if sp else None


def leave_one_out(raw, base: str = "h200x4", collectives: bool = False, workdir=None, progress=None,
                  only: list[str] | None = None, bins: bool = False) -> list[dict]:
    """One row per series: measured, fit-set and held-out predictions and their errors.

    The fits are those of ``g2gsim calibrate fit`` (the joint per-call fit; ``bins``: size bins per
    path, as ``--bins``) without the collective algorithm search (it only changes collectives; with
    ``collectives=True`` it is on, with ``bins`` the collective bins too, and the collective series
    are left out in turn: slower)."""
    raw = load_raw(raw)
    def fit_(r):
        return fit(r, base=base, workdir=workdir, collectives=collectives, coll_bins=collectives and bins, bins=bins)

    full = fit_(raw)
    ents = entries(raw, collectives)
    if only:
        ents = [x for x in ents if x[0] in only]
    rows = []
    with machine_file(full) as m_full:
        for k, (label, sec, idx) in enumerate(ents):
            held_raw = {"format": raw["format"], sec: [raw[sec][idx]]}
            held = series_from_raw(held_raw)
            rest = copy.deepcopy(raw)
            rest[sec] = [e for j, e in enumerate(rest[sec]) if j != idx]
            row: dict[str, Any] = {"series": label, "section": sec}
            try:
                res = fit_(rest)
            except (ValueError, KeyError) as e:
                row["held_out"] = None
                row["why"] = f"the fit cannot do without it: {e}"
                rows.append(row)
                continue
            with machine_file(res) as m_rest:
                pts = []
                for s in held:
                    fs = simulate_series(s, m_full, workdir=workdir)
                    ho = simulate_series(s, m_rest, workdir=workdir)
                    pts.append((s, fs, ho))
            sizes = np.concatenate([s.sizes for s, _, _ in pts])
            meas = np.concatenate([s.t for s, _, _ in pts])
            fs = np.concatenate([x for _, x, _ in pts])
            ho = np.concatenate([x for _, _, x in pts])
            row.update(sizes=[int(x) for x in sizes], measured_s=[float(x) for x in meas],
                       fit_set_s=[float(x) for x in fs], held_out_s=[float(x) for x in ho],
                       fit_set=_errors(fs, meas, sizes), held_out=_errors(ho, meas, sizes),
                       spread=_spread([s for s, _, _ in pts]),
                       changed=[k_ for k_, v in res.machine_params().items() if full.machine_params().get(k_) != v])
            rows.append(row)
            if progress:
                progress(k + 1, len(ents))
    return rows


def table(rows: list[dict]) -> list[list[str]]:
    """Rows of the printed / markdown table: series, range, points, fit-set and held-out median and
    worst absolute error, the run's spread."""
    out = []
    for r in rows:
        if r.get("held_out") is None:
            out.append([r["series"], "-", "-", "-", "-", "-", "-", "-", r.get("why", "")])
            continue
        for rng in ("small", "large"):
            f, h = r["fit_set"].get(rng), r["held_out"].get(rng)
            if not f:
                continue
            out.append([r["series"], "< 32 KiB" if rng == "small" else ">= 32 KiB", str(f["n"]),
                        f"{100 * f['median_abs']:.1f}%", f"{100 * f['worst_abs']:.1f}%",
                        f"{100 * h['median_abs']:.1f}%", f"{100 * h['worst_abs']:.1f}%",
                        "-" if r.get("spread") is None else f"{100 * r['spread']:.1f}%",
                        ", ".join(r.get("changed", [])[:4]) + (" ..." if len(r.get("changed", [])) > 4 else "")])
    return out


HEADER = ["series", "sizes", "points", "fit-set median", "fit-set worst", "held-out median", "held-out worst",
          "run spread (p90-p10)/median", "what the fit without it changed"]


def markdown(rows: list[dict]) -> str:
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    for r in table(rows):
        lines.append("| " + " | ".join(r) + " |")
    return "\n".join(lines) + "\n"

"""Run-to-run spread of two calibration runs of the same script (measure.py's JSON).

    PYTHONPATH=python python3 bench/calibrate/run_spread.py RUN_A.json RUN_B.json [--json out.json] [--md out.md]

Per series (the names of ``g2gsim calibrate loo``) and size range (< 32 KiB, >= 32 KiB):
  * between runs: |median_B / median_A - 1| at each size both runs measured; the table gives the
    median and the largest over the range's sizes;
  * within each run: (p90 - p10) / median of the samples at each size, median over the range
    (the figure ``calibrate loo`` prints as "run spread").
Multi-rank series (two pairs, ring, all-pairs) compare their per-rank means.  Sizes measured by
one run only are skipped and counted.
"""
from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from g2gsim.calibrate.micro import load_raw, series_from_raw

SMALL_BELOW = 32 * 1024


def spread_rows(raw_a, raw_b) -> list[dict]:
    a = {s.name: s for s in series_from_raw(load_raw(raw_a))}
    b = {s.name: s for s in series_from_raw(load_raw(raw_b))}
    rows = []
    for name, sa in a.items():
        sb = b.get(name)
        if sb is None:
            rows.append({"series": name, "why": "not in the second run"})
            continue
        ia = {int(n): i for i, n in enumerate(sa.sizes)}
        ib = {int(n): i for i, n in enumerate(sb.sizes)}
        common = sorted(set(ia) & set(ib))
        for rng, sel in (("< 32 KiB", lambda n: n < SMALL_BELOW), (">= 32 KiB", lambda n: n >= SMALL_BELOW)):
            ns = [n for n in common if sel(n)]
            if not ns:
                continue
            d = np.array([abs(sb.t[ib[n]] / sa.t[ia[n]] - 1) for n in ns])
            worst = ns[int(np.argmax(d))]
            row = {"series": name, "sizes": rng, "points": len(ns),
                   "between_median": float(np.median(d)), "between_worst": float(d.max()),
                   "between_worst_bytes": worst,
                   "skipped_one_run_only": len([n for n in set(ia) ^ set(ib) if sel(n)])}
            for key, s, idx in (("within_a", sa, ia), ("within_b", sb, ib)):
                row[key] = (None if s.spread is None
                            else float(np.median([s.spread[idx[n]] for n in ns])))
            rows.append(row)
    for name in b:
        if name not in a:
            rows.append({"series": name, "why": "not in the first run"})
    return rows


def _pct(x):
    return "-" if x is None else f"{100 * x:.1f}%"


def markdown(rows: list[dict]) -> str:
    head = ["series", "sizes", "points", "between runs median", "between runs worst (at)",
            "within run A (p90-p10)/median", "within run B"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        if "why" in r:
            out.append(f"| {r['series']} | - | - | - | - | - | {r['why']} |")
            continue
        out.append(f"| {r['series']} | {r['sizes']} | {r['points']} | {_pct(r['between_median'])} | "
                   f"{_pct(r['between_worst'])} ({r['between_worst_bytes']} B) | {_pct(r['within_a'])} | "
                   f"{_pct(r['within_b'])} |")
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_a")
    ap.add_argument("run_b")
    ap.add_argument("--json")
    ap.add_argument("--md")
    a = ap.parse_args(argv)
    try:
        rows = spread_rows(a.run_a, a.run_b)
    except (OSError, ValueError, KeyError) as e:
        print(f"run_spread: {e}", file=sys.stderr)
        return 2
    md = markdown(rows)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"run_a": a.run_a, "run_b": a.run_b, "rows": rows}, f, indent=1)
    if a.md:
        with open(a.md, "w") as f:
            f.write(md)
    print(md, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())

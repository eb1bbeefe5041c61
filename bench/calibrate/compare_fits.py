"""Two fits side by side (issue 25: size bins vs the joint per-call fit), from the outputs of the
commands in docs/validation/percall-fit.md.

    PYTHONPATH=python python3 bench/calibrate/compare_fits.py loo BEFORE-loo.json AFTER-loo.json
    PYTHONPATH=python python3 bench/calibrate/compare_fits.py check BEFORE-check.json AFTER-check.json
    PYTHONPATH=python python3 bench/calibrate/compare_fits.py validate BEFORE-validate.json AFTER-validate.json

``loo``: per series and size range, fit-set / held-out median absolute error of each, and the
median / mean / worst over the rows (pageable copies left out: neither fit models them).
``check``: per series of another run of the same script, median / worst error of each.
``validate``: |communication error| of the workloads, point-to-point ones and matmul (collectives)
apart, own mode and cross mode apart (rows whose measured communication is under 2 % of the run
left out: hidden by overlap).
"""
from __future__ import annotations

import json
import sys

import numpy as np


def loo(a_path: str, b_path: str) -> None:
    a = {r["series"]: r for r in json.load(open(a_path))["rows"]}
    b = {r["series"]: r for r in json.load(open(b_path))["rows"]}
    print("| series | sizes | points | before: fit-set / held-out median | after: fit-set / held-out median "
          "| run spread (p90-p10)/median |")
    print("|---|---|---|---|---|---|")
    agg: dict[str, list[float]] = {"bf": [], "bh": [], "af": [], "ah": []}
    for k in list(a) + [k for k in b if k not in a]:
        ra, rb = a.get(k, {}), b.get(k, {})
        for rng in ("small", "large"):
            fa, ha = (ra.get("fit_set") or {}).get(rng), (ra.get("held_out") or {}).get(rng)
            fb, hb = (rb.get("fit_set") or {}).get(rng), (rb.get("held_out") or {}).get(rng)
            if not (fa or fb):
                continue

            def f(x):
                return f"{100 * x['median_abs']:.1f}%" if x else "-"

            sp = rb.get("spread") if rb.get("spread") is not None else ra.get("spread")
            print(f"| {k} | {'< 32 KiB' if rng == 'small' else '>= 32 KiB'} | {(fa or fb)['n']} | {f(fa)} / {f(ha)} "
                  f"| {f(fb)} / {f(hb)} | {'-' if sp is None else f'{100 * sp:.1f}%'} |")
            if "pageable" in k or not (fa and ha and fb and hb):
                continue
            for key, x in (("bf", fa), ("bh", ha), ("af", fb), ("ah", hb)):
                agg[key].append(x["median_abs"])
    for name, ff, hh in (("before", "bf", "bh"), ("after", "af", "ah")):
        print(f"\n{name}: {len(agg[ff])} rows; fit-set median {100 * np.median(agg[ff]):.1f}%, mean "
              f"{100 * np.mean(agg[ff]):.1f}%; held-out median {100 * np.median(agg[hh]):.1f}%, mean "
              f"{100 * np.mean(agg[hh]):.1f}%, worst {100 * np.max(agg[hh]):.1f}%")


def check(a_path: str, b_path: str) -> None:
    a = {(s["group"], s["range"]): s for s in json.load(open(a_path))["summary"]}
    b = {(s["group"], s["range"]): s for s in json.load(open(b_path))["summary"]}
    A, B = [], []
    for k in a:
        if k in b and "pageable" not in k[0]:
            A.append(a[k]["median_abs"])
            B.append(b[k]["median_abs"])
    print(f"{len(A)} rows (pageable left out): median of medians before {100 * np.median(A):.1f}%, after "
          f"{100 * np.median(B):.1f}%; mean before {100 * np.mean(A):.1f}%, after {100 * np.mean(B):.1f}%")


def validate(a_path: str, b_path: str) -> None:
    def rows(f):
        return {(r["workload"], r["trace"], r["predicted_mode"]): r for r in json.load(open(f))["rows"]
                if r.get("how") == "core"}
    a, b = rows(a_path), rows(b_path)
    for label, coll in (("point-to-point workloads", False), ("matmul (collectives)", True)):
        for kind in ("own", "cross"):
            ea, eb = [], []
            for k, r in a.items():
                if k not in b or k[0].startswith("matmul") != coll or (kind == "own") != (k[1] == k[2]):
                    continue
                if r["measured_comm_s"] < 0.02 * r["measured_total_s"]:
                    continue
                ea.append(abs(r["error_comm"]))
                eb.append(abs(b[k]["error_comm"]))
            if ea:
                print(f"| {label} | {kind} | {len(ea)} | {100 * np.median(ea):.1f}% / {100 * np.mean(ea):.1f}% "
                      f"| {100 * np.median(eb):.1f}% / {100 * np.mean(eb):.1f}% |")


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] not in ("loo", "check", "validate"):
        sys.exit(__doc__)
    {"loo": loo, "check": check, "validate": validate}[sys.argv[1]](sys.argv[2], sys.argv[3])

"""Workload prediction errors against the workloads' own run-to-run spread (issue 28's criterion).

    PYTHONPATH=python python3 bench/calibrate/validate_spread.py VALIDATE.json RUNS_B/ [--json out.json] [--md out.md]

VALIDATE.json is the output of ``g2gsim validate compare RUNS_A ... --json``; RUNS_B is a second
recording of the same workloads (``workloads.py`` run again on the same node).  Per row (workload,
trace mode, predicted mode): the measured total of the predicted mode's run in A and in B, the
spread |B / A - 1|, the prediction error (against A, as in VALIDATE.json), and whether
|error| <= max(spread, 10 %).  Own-mode and cross-mode rows are counted separately.  Measured totals
are the recorded end of the slowest rank (what ``validate compare`` uses).
"""
from __future__ import annotations

import argparse
import json
import sys

from g2gsim.calibrate.validate import load_runs

FLOOR = 0.10


def spread_rows(validate: dict, runs_b) -> list[dict]:
    b = {(r.workload, r.mode): float(r.end_s().max()) for r in load_runs([runs_b])}
    out = []
    for row in validate["rows"]:
        if row.get("measured_total_s") is None or row["how"] != "core":
            continue
        mb = b.get((row["workload"], row["predicted_mode"]))
        if mb is None:
            continue
        spread = abs(mb / row["measured_total_s"] - 1)
        err = row["error_total"]
        out.append({"workload": row["workload"], "trace": row["trace"], "predicted": row["predicted_mode"],
                    "kind": "own" if row["trace"] == row["predicted_mode"] else "cross",
                    "measured_a_ms": row["measured_total_s"] * 1e3, "measured_b_ms": mb * 1e3,
                    "spread": spread, "predicted_ms": row["predicted_total_s"] * 1e3, "error": err,
                    "error_vs_b": row["predicted_total_s"] / mb - 1,
                    "within": abs(err) <= max(spread, FLOOR)})
    return out


def markdown(rows: list[dict]) -> str:
    lines = ["| workload | trace | predicted | measured A (ms) | measured B (ms) | spread | predicted (ms) "
             "| error vs A | error vs B | within max(spread, 10 %) |", "|---" * 10 + "|"]
    for r in rows:
        lines.append(f"| {r['workload']} | {r['trace']} | {r['predicted']} | {r['measured_a_ms']:.3f} "
                     f"| {r['measured_b_ms']:.3f} | {100 * r['spread']:.1f}% | {r['predicted_ms']:.3f} "
                     f"| {100 * r['error']:+.1f}% | {100 * r['error_vs_b']:+.1f}% | {'yes' if r['within'] else 'no'} |")
    for kind in ("own", "cross"):
        k = [r for r in rows if r["kind"] == kind]
        lines.append(f"\n{kind} mode: {sum(r['within'] for r in k)} of {len(k)} within max(spread, 10 %)")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("validate_json")
    ap.add_argument("runs_b")
    ap.add_argument("--json")
    ap.add_argument("--md")
    a = ap.parse_args(argv)
    with open(a.validate_json) as f:
        rows = spread_rows(json.load(f), a.runs_b)
    if not rows:
        print("no row of the validation has a measured run in both recordings", file=sys.stderr)
        return 1
    md = markdown(rows)
    print(md)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    if a.md:
        with open(a.md, "w") as f:
            f.write(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Check a machine file against the blocking / nonblocking probe (small_device_probe.py's JSON):
simulate its four patterns at its sizes and print measured vs predicted with the error.  Nothing
here is fitted to the probe.

    PYTHONPATH=python python3 bench/calibrate/probe_check.py h200x4-calibrated \
        docs/validation/h200x4/probe/probe_host.json docs/validation/h200x4/probe/probe_device.json

Patterns (half round trip for ping-pongs, per exchange for ping-ping):
  pingpong-blocking  Send / Recv                 -> micro series "pingpong"
  pingpong-nonblock  Isend + Wait / Irecv + Wait -> "pingpong-nb"
  pingping           Irecv + Isend + Waitall     -> "pingping"
  pingpong-sync-src  blocking, cudaDeviceSynchronize before each Send: the model has no cost for a
                     synchronisation with nothing queued, so it is predicted as pingpong-blocking
"""
from __future__ import annotations

import json
import sys

import numpy as np

from g2gsim.calibrate.micro import Series, simulate_series

PATTERNS = {"pingpong-blocking": "pingpong", "pingpong-nonblock": "pingpong-nb", "pingping": "pingping",
            "pingpong-sync-src": "pingpong"}


def check(machine: str, path: str) -> list[dict]:
    d = json.load(open(path))
    mode = "device" if d["mem"] == "device" else "host"
    sizes = np.array([r["bytes"] for r in d["rows"]])
    rows = []
    for pat, kind in PATTERNS.items():
        s = Series(kind, mode, sizes, np.ones(len(sizes)), np.ones(len(sizes)))
        pred = simulate_series(s, machine) * 1e6
        for r, p in zip(d["rows"], pred):
            m = r[pat + "_us"]
            rows.append({"mode": mode, "pattern": pat, "bytes": int(r["bytes"]), "measured_us": m,
                         "predicted_us": round(float(p), 3), "error": float(p / m - 1)})
    return rows


def main(argv: list[str]) -> None:
    machine, files = argv[0], argv[1:]
    allrows = []
    for f in files:
        rows = check(machine, f)
        allrows += rows
        print(f"\n{f} ({rows[0]['mode']} buffers), machine {machine}: measured / predicted us, error")
        pats = list(PATTERNS)
        print("| bytes | " + " | ".join(pats) + " |")
        print("|---|" + "---|" * len(pats))
        for n in sorted({r["bytes"] for r in rows}):
            cells = []
            for p in pats:
                r = next(x for x in rows if x["bytes"] == n and x["pattern"] == p)
                cells.append(f"{r['measured_us']:.2f} / {r['predicted_us']:.2f}, {100 * r['error']:+.0f}%")
            print(f"| {n} | " + " | ".join(cells) + " |")
        print("\n| pattern | sizes | points | median abs error | worst abs error | median signed |")
        print("|---|---|---|---|---|---|")
        for p in pats:
            for lab, sel in (("< 32 KiB", lambda b: b < 32768), (">= 32 KiB", lambda b: b >= 32768)):
                e = np.array([r["error"] for r in rows if r["pattern"] == p and sel(r["bytes"])])
                if len(e):
                    print(f"| {p} | {lab} | {len(e)} | {100 * np.median(np.abs(e)):.1f}% | "
                          f"{100 * np.max(np.abs(e)):.1f}% | {100 * np.median(e):+.1f}% |")


if __name__ == "__main__":
    main(sys.argv[1:])

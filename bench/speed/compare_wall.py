#!/usr/bin/env python3
"""Wall time of ``g2gsim compare`` (the main question's command: every column, the size-class runs
and the sensitivity runs) for builds and job counts, interleaved, and whether the answers agree.

    python3 bench/speed/compare_wall.py --trace T.g2g.parquet --build old=/tmp/wt-old/python \\
        --build new=python --jobs 1,2 --reps 3

A build is a directory holding the ``g2gsim`` package with its compiled ``_core`` (``python/`` of a
built checkout).  Each rep runs every (build, jobs) once, in turn, so that host noise falls on all of
them alike (absolute times on shared machines vary by up to 50 %).  A build that has no ``--jobs``
option runs once per rep, without it.  The comparisons' JSON, less each report's engine block
(host timings), must be identical across job counts of one build; across builds the largest
relative difference of any number is printed (per-call times read another way differ by float
rounding).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def has_jobs(pkg: Path) -> bool:
    return (pkg / "g2gsim" / "analysis" / "_parallel.py").exists()


def run(pkg: Path, trace: str, machine: str, jobs: int | None, out: Path) -> tuple[float, float]:
    cmd = [sys.executable, "-m", "g2gsim", "compare", trace, "--machine", machine, "--no-progress",
           "--json", str(out)]
    if jobs is not None:
        cmd += ["--jobs", str(jobs)]
    env = dict(os.environ, PYTHONPATH=str(pkg))
    t0 = time.perf_counter()
    r0 = os.times()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
    r1 = os.times()
    return time.perf_counter() - t0, (r1.children_user - r0.children_user) + (r1.children_system - r0.children_system)


def answer(path: Path) -> dict:
    d = json.loads(path.read_text())
    for rep in d.get("reports", {}).values():
        rep.pop("engine", None)
    return d


def max_rel_diff(a, b) -> float:
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            return float("inf")
        return max((max_rel_diff(a[k], b[k]) for k in a), default=0.0)
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return float("inf")
        return max((max_rel_diff(x, y) for x, y in zip(a, b)), default=0.0)
    if isinstance(a, float) and isinstance(b, float):
        if a == b or (a != a and b != b):
            return 0.0
        return abs(a - b) / max(abs(a), abs(b))
    return 0.0 if a == b else float("inf")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trace", required=True)
    ap.add_argument("--machine", default="lassen")
    ap.add_argument("--build", action="append", required=True, help="NAME=DIR (the directory holding g2gsim/)")
    ap.add_argument("--jobs", default="1,2", help="job counts for builds that have --jobs")
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    builds = [(b.split("=", 1)[0], Path(b.split("=", 1)[1]).resolve()) for b in a.build]
    jobs = [int(j) for j in a.jobs.split(",")]
    runs = [(name, pkg, j) for name, pkg in builds for j in (jobs if has_jobs(pkg) else [None])]
    times: dict[tuple, list[tuple[float, float]]] = {(n, j): [] for n, _, j in runs}
    tmp = Path(tempfile.mkdtemp(prefix="g2gsim-cmpwall-"))
    for rep in range(a.reps):
        for name, pkg, j in runs:
            out = tmp / f"{name}-{j}.json"
            times[(name, j)].append(run(pkg, a.trace, a.machine, j, out))
            print(f"rep {rep + 1}: {name} jobs={j}: {times[(name, j)][-1][0]:.2f} s wall", file=sys.stderr)
    print(f"trace {a.trace}, machine {a.machine}, {a.reps} reps each, interleaved; "
          f"host {os.cpu_count()} CPUs")
    print("| build | jobs | wall s fastest / median | CPU s (children) median |")
    print("|---|---|---|---|")
    for (name, j), v in times.items():
        w = [x[0] for x in v]
        c = [x[1] for x in v]
        print(f"| {name} | {j if j is not None else '-'} | {min(w):.2f} / {statistics.median(w):.2f} | "
              f"{statistics.median(c):.2f} |")
    answers = {(n, j): answer(tmp / f"{n}-{j}.json") for n, _, j in runs}
    ok = True
    for name, _ in builds:
        mine = [k for k in answers if k[0] == name]
        for k in mine[1:]:
            same = json.dumps(answers[k], sort_keys=True) == json.dumps(answers[mine[0]], sort_keys=True)
            print(f"{name}: jobs={k[1]} against jobs={mine[0][1]}: {'identical' if same else 'DIFFERENT'}")
            ok &= same
    keys = list(answers)
    for k in keys[1:]:
        if k[0] != keys[0][0]:
            print(f"{k[0]} (jobs={k[1]}) against {keys[0][0]}: largest relative difference "
                  f"{max_rel_diff(answers[keys[0]], answers[k]):.2e}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Compares the speed of two builds of the core on one trace, interleaved (A, B, A, B, ...).

On a shared or virtual machine the same binary's fastest run moves by up to 20 % between series a
few minutes apart (docs/scaling.md), so two builds timed one after the other can differ by the
host's mood alone.  Alternating them run by run puts both under the same conditions; the script
prints, per build, the fastest, the median and the mean of the faster half of the engine's own
wall time (``engine.wall_s``), and B's change against A on each.  It also checks that both builds
simulate the same thing (the reports without their ``engine`` block are equal).

    python3 bench/speed/ab.py /tmp/core-before target/release/g2gsim-core            # 1,024-rank halo, bottleneck
    python3 bench/speed/ab.py A B --trace T.g2g.parquet --machine lassen --reps 31

Without ``--trace``, the 1,024-rank halo of ``run.py`` (generated into its trace cache if needed).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import PRESETS  # noqa: E402


def default_inputs(sharing: str | None) -> tuple[Path, Path]:
    import run
    trace_dir = Path(os.environ.get("TMPDIR", "/tmp")) / "g2gsim-speed"   # run.py's default cache
    gen, params = run.WORKLOADS["halo"]
    info = run.ensure_trace(trace_dir, gen, 1024, params, 8 << 30, lambda msg: print(msg, file=sys.stderr))
    trace = Path(info["path"])
    machine = PRESETS / "lassen.toml"
    if sharing:
        machine = run.derived_machine(machine, {"network": {"sharing": sharing}}, trace_dir, f"lassen+sharing={sharing}")
    return trace, machine


def once(core: Path, trace: Path, machine: Path, mode: str) -> tuple[dict, float]:
    """The report and the CPU seconds (user + system) of the whole process."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run([str(core), str(trace), str(machine), "--mode", mode, "--json"], text=True, capture_output=True)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise SystemExit(f"{core} failed (exit {p.returncode}):\n{p.stderr[-2000:]}")
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return json.loads(p.stdout[p.stdout.index("{"):]), cpu


def summary(walls: list[float]) -> tuple[float, float, float]:
    s = sorted(walls)
    return s[0], statistics.median(s), statistics.mean(s[: max(1, len(s) // 2)])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("a", type=Path, help="core binary A (the reference)")
    ap.add_argument("b", type=Path, help="core binary B")
    ap.add_argument("--trace", type=Path, help="trace (default: run.py's 1,024-rank halo)")
    ap.add_argument("--machine", default=None, help="preset name or TOML (default lassen)")
    ap.add_argument("--sharing", default="bottleneck", help="network.sharing for the default machine (default %(default)s; '' keeps the preset's)")
    ap.add_argument("--mode", default="gpudirect")
    ap.add_argument("--reps", type=int, default=21)
    a = ap.parse_args(argv)
    for c in (a.a, a.b):
        if not c.exists():
            ap.error(f"{c} not found")
    trace, machine = (a.trace, PRESETS / "lassen.toml") if a.trace else default_inputs(a.sharing or None)
    if a.machine:
        machine = Path(a.machine) if Path(a.machine).exists() else PRESETS / f"{a.machine}.toml"
    walls: dict[str, list[float]] = {"A": [], "B": []}
    cpus: dict[str, list[float]] = {"A": [], "B": []}
    reports: dict[str, dict] = {}
    for _ in range(a.reps):
        for k, core in (("A", a.a), ("B", a.b)):
            rep, cpu = once(core, trace, machine, a.mode)
            walls[k].append(rep["engine"]["wall_s"])
            cpus[k].append(cpu)
            rep.pop("engine")
            rep.pop("trace", None)
            reports.setdefault(k, rep)
    if "sharing" not in reports["A"]:
        reports["B"].pop("sharing", None)   # a reference from before the report named its sharing
    same = reports["A"] == reports["B"]
    print(f"{trace.name} on {machine.name}, {a.mode}, {a.reps} runs each, interleaved")
    sa, sb = summary(walls["A"]), summary(walls["B"])
    for k, core, s in (("A", a.a, sa), ("B", a.b, sb)):
        print(f"  {k} {core}: fastest {s[0] * 1e3:.2f} ms, median {s[1] * 1e3:.2f} ms, faster half {s[2] * 1e3:.2f} ms")
    print("  B against A: fastest {:+.1f} %, median {:+.1f} %, faster half {:+.1f} %".format(
        *((y / x - 1) * 100 for x, y in zip(sa, sb))))
    # CPU seconds of the whole process (start-up and trace reading included): what the load of
    # other jobs on a shared host inflates least
    ca, cb = summary(cpus["A"]), summary(cpus["B"])
    for k, s in (("A", ca), ("B", cb)):
        print(f"  {k} CPU s (process): fastest {s[0]:.3f}, median {s[1]:.3f}, faster half {s[2]:.3f}")
    print("  CPU, B against A: fastest {:+.1f} %, median {:+.1f} %, faster half {:+.1f} %".format(
        *((y / x - 1) * 100 for x, y in zip(ca, cb))))
    print(f"  reports (without engine): {'identical' if same else 'DIFFERENT'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())

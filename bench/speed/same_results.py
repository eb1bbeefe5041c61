#!/usr/bin/env python3
"""Checks that two builds of the core simulate the same thing (for optimisation work, issue 9).

Runs a reference ``g2gsim-core`` binary and a candidate one on the same traces, machines and modes
and compares their JSON reports field by field, except the ``engine`` block (wall time, rates) and
the trace path.  Any difference in a simulated time, a per-rank figure or a message count is printed
and makes the exit status 1.  Traces are generated into ``--trace-dir`` the first time.

    cp target/release/g2gsim-core /tmp/core-ref         # before the change
    ... change, cargo build --release -p g2g-mpi --bin g2gsim-core ...
    python3 bench/speed/same_results.py /tmp/core-ref target/release/g2gsim-core
    # exact max-min, incremental against the whole-component reference, one build:
    python3 bench/speed/same_results.py --ref-sharing max-min-full target/release/g2gsim-core target/release/g2gsim-core
    # the grouped solve (issue 27, for study) against the whole-component reference:
    python3 bench/speed/same_results.py --ref-sharing max-min-full --cand-sharing max-min-grouped \
        target/release/g2gsim-core target/release/g2gsim-core

A run that differs also prints how far apart the two run times are (``total_time_s``), and the
last line the worst of them.
"""
from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python"))

# (generator, ranks, parameters): small but exercising p2p, collectives, compute and copies
CASES = [
    ("halo3d", 64, {"iterations": 3, "msg_bytes": 65536, "compute_ns": 20000}),
    ("halo3d", 1024, {"iterations": 2, "msg_bytes": 65536, "compute_ns": 20000}),
    ("allreduce", 256, {"iterations": 3, "per_iteration": 2, "msg_bytes": 8192, "compute_ns": 20000}),
    ("alltoall", 64, {"iterations": 2, "block_bytes": 4096, "compute_ns": 20000}),
    ("jacobi2d", 16, {}),
    ("matmul", 8, {}),
]
MACHINES = ["lassen", "lassen+bottleneck", "h200x4-calibrated", "leonardo"]
MODES = ["as-traced", "hostcopy", "gpudirect"]


def generate(trace_dir: Path, gen: str, ranks: int, params: dict) -> Path:
    from g2gsim import generate as g
    name = f"{gen}-{ranks}-" + "-".join(f"{k}{v}" for k, v in sorted(params.items()))
    path = trace_dir / f"{name}.g2g.parquet"
    if not path.exists():
        g.generate_to_file(gen, ranks, str(path), **params)
    return path


def machine_file(trace_dir: Path, machine: str) -> Path:
    """A preset, or ``<preset>+bottleneck``: the preset with ``network.sharing = "bottleneck"``."""
    base, _, variant = machine.partition("+")
    toml = REPO / "python" / "g2gsim" / "presets" / f"{base}.toml"
    if not variant:
        return toml
    import tomllib

    import tomli_w
    doc = tomllib.loads(toml.read_text())
    doc.setdefault("network", {})["sharing"] = variant
    out = trace_dir / f"{machine}.toml"
    out.write_text(tomli_w.dumps(doc))
    return out


def run(core: str, trace: Path, toml: Path, mode: str, extra: list[str]) -> dict:
    p = subprocess.run([core, str(trace), str(toml), "--mode", mode, "--json", *extra],
                       capture_output=True, text=True)
    if p.returncode != 0:
        return {"error": p.stderr.strip()[-400:]}
    d = json.loads(p.stdout)
    d.pop("engine", None)
    d.pop("trace", None)
    return d


def diff(a, b, path="") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                out.append(f"{path}.{k}: only in {'reference' if k in a else 'candidate'}")
            else:
                out += diff(a[k], b[k], f"{path}.{k}")
        return out
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: length {len(a)} != {len(b)}"]
        out = []
        for i, (x, y) in enumerate(zip(a, b)):
            out += diff(x, y, f"{path}[{i}]")
            if len(out) > 5:
                break
        return out
    if isinstance(a, float) and isinstance(b, float):
        return [] if a == b or (math.isnan(a) and math.isnan(b)) else [f"{path}: {a!r} != {b!r}"]
    return [] if a == b else [f"{path}: {a!r} != {b!r}"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("reference")
    ap.add_argument("candidate")
    ap.add_argument("--trace-dir", type=Path, default=Path(tempfile.gettempdir()) / "g2gsim-same")
    ap.add_argument("--ref-sharing", choices=["max-min", "max-min-full", "bottleneck"],
                    help="run the reference with this network.sharing on the machines that keep their "
                         "preset's sharing (not the '+bottleneck' ones): e.g. the same build with "
                         "max-min-full, to check the incremental max-min against the whole-component solve")
    ap.add_argument("--cand-sharing", choices=["max-min", "max-min-full", "max-min-grouped", "bottleneck"],
                    help="run the candidate with this network.sharing, on the same machines as "
                         "--ref-sharing (max-min-grouped: g2gsim-core's study option)")
    a = ap.parse_args(argv)
    a.trace_dir.mkdir(parents=True, exist_ok=True)
    bad = 0
    n = 0
    worst = (0.0, "")
    for gen, ranks, params in CASES:
        trace = generate(a.trace_dir, gen, ranks, params)
        for machine in MACHINES:
            toml = machine_file(a.trace_dir, machine)
            for mode in MODES:
                ref_extra = ["--sharing", a.ref_sharing] if a.ref_sharing and "+" not in machine else []
                ref = run(a.reference, trace, toml, mode, ref_extra)
                cand_extra = ["--sharing", a.cand_sharing] if a.cand_sharing and "+" not in machine else []
                cand = run(a.candidate, trace, toml, mode, cand_extra)
                # the model that ran is said in the report (`sharing`): the one asked of the
                # reference differs by design, and a reference from before the field has none
                if ref_extra or cand_extra or "sharing" not in ref:
                    ref.pop("sharing", None)
                    cand.pop("sharing", None)
                d = diff(ref, cand)
                n += 1
                if d:
                    bad += 1
                    case = f"{gen}-{ranks} {machine} {mode}"
                    t_ref, t_cand = ref.get("total_time_s"), cand.get("total_time_s")
                    rel = abs(t_cand - t_ref) / t_ref if t_ref and t_cand is not None else math.inf
                    worst = max(worst, (rel, case))
                    print(f"DIFF {case} (total_time_s {rel:.2e} apart):")
                    for line in d[:8]:
                        print("   ", line)
    print(f"{n - bad} of {n} runs identical")
    if bad:
        print(f"worst total_time_s difference: {worst[0]:.3e} (relative), {worst[1]}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

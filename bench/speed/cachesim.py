#!/usr/bin/env python3
"""Compares two builds of the core on one trace by counts that do not move with the host's load:
instructions, and D1 and last-level misses of cachegrind's cache simulation.

On a shared or virtual machine, interleaved CPU times (``ab.py``) of the same two builds can
disagree in sign for changes under ~10 % (docs/scaling.md, twenty-fifth step).  valgrind's
cachegrind counts the instructions a run executes and simulates a D1 and a last-level cache: for
the same binary and input the counts do not depend on what else runs, and move only a little with
where the process's memory lands (its environment, the stack: one build against itself on the
4,096-rank halo, 1e-6 of the instructions and of the misses; on a 2-rank ping-pong 0.02 % of the
misses).  The simulated cache has no
hardware prefetcher, so it overstates the misses of loops that prefetch; a change's effect on
misses it does not prefetch (a record touched once, a table indexed at random) is what it shows
best.  A small simulated LL stands in for a large trace: a 4,096-rank halo's tables are ~10 MiB,
so a 2 MiB LL gives it the ratio that a 32 MiB L3 gives a halo of ~16 times the ranks.  Both builds
run side by side (two processes; valgrind is ~50 times slower than the core), and the script
checks that they simulate the same thing (the reports without their ``engine`` block are equal).

    python3 bench/speed/cachesim.py /tmp/core-before target/release/g2gsim-core \\
        --trace $TMPDIR/g2gsim-speed/halo3d-4096-*.g2g.parquet --sharing '' --ll 2MiB
    python3 bench/speed/cachesim.py A B --trace T --machine M --mode as-traced --ll 32MiB

Without ``--trace``, the 1,024-rank halo of ``run.py`` (as ``ab.py``).  Needs valgrind.
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ab import add_inputs, inputs, trace_info  # noqa: E402

# cachegrind's summary lines (on stderr, "==PID== I   refs:      14,787,207,207") -> our names
COUNTS = {"I   refs": "instructions", "D1  misses": "D1 misses", "LL misses": "LL misses"}
LINE = re.compile(r"^==\d+== (I   refs|D1  misses|LL misses):\s+([\d,]+)")


def size_bytes(s: str) -> int:
    """"2MiB", "32MiB", "512KiB" or a plain byte count."""
    m = re.fullmatch(r"(\d+)\s*(KiB|MiB)?", s.strip())
    if not m:
        raise argparse.ArgumentTypeError(f"{s!r}: a size such as 2MiB, 512KiB or 33554432")
    return int(m.group(1)) << {None: 0, "KiB": 10, "MiB": 20}[m.group(2)]


def parse_counts(stderr: str) -> dict[str, int] | None:
    """The instructions and misses of cachegrind's summary, or None if one is missing."""
    counts = {}
    for line in stderr.splitlines():
        m = LINE.match(line)
        if m:
            counts[COUNTS[m.group(1)]] = int(m.group(2).replace(",", ""))
    return counts if len(counts) == len(COUNTS) else None


def once(core: Path, trace: Path, machine: Path, mode: str, d1: str, ll: str) -> tuple[dict[str, int], dict]:
    """The counts of one run under cachegrind, and its report."""
    with tempfile.TemporaryDirectory() as tmp:
        cmd = ["valgrind", "--tool=cachegrind", "--cache-sim=yes", f"--D1={d1}", f"--LL={ll}",
               f"--cachegrind-out-file={tmp}/cachegrind.out", str(core), str(trace), str(machine),
               "--mode", mode, "--json"]
        p = subprocess.run(cmd, text=True, capture_output=True)
    if p.returncode != 0:
        raise SystemExit(f"{core} under cachegrind failed (exit {p.returncode}):\n{p.stderr[-2000:]}")
    counts = parse_counts(p.stderr)
    if counts is None:
        raise SystemExit(f"{core}: cachegrind printed no summary:\n{p.stderr[-2000:]}")
    rep = json.loads(p.stdout[p.stdout.index("{"):])
    rep.pop("engine")
    rep.pop("trace", None)
    return counts, rep


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_inputs(ap)
    ap.add_argument("--ll", type=size_bytes, default=size_bytes("2MiB"),
                    help="simulated last-level cache (16-way, 64-byte lines; default 2MiB)")
    ap.add_argument("--d1", type=size_bytes, default=size_bytes("32KiB"),
                    help="simulated D1 cache (8-way, 64-byte lines; default 32KiB)")
    a = ap.parse_args(argv)
    if not shutil.which("valgrind"):
        ap.error("valgrind not found (apt-get install -y valgrind)")
    trace, machine = inputs(ap, a)
    d1, ll = f"{a.d1},8,64", f"{a.ll},16,64"
    with ThreadPoolExecutor(max_workers=2) as pool:
        ra, rb = pool.map(lambda core: once(core, trace, machine, a.mode, d1, ll), (a.a, a.b))
    print(f"{trace.name} on {machine.name} ({rb[1].get('sharing', '?')} sharing), {a.mode}; cachegrind, D1 {a.d1:,} B, LL {a.ll:,} B")
    print(f"  trace: {trace_info(trace)[0]}")
    print("  | count | A | B | B against A |")
    print("  |---|---|---|---|")
    for name in COUNTS.values():
        x, y = ra[0][name], rb[0][name]
        print(f"  | {name} | {x:,} | {y:,} | {(y / x - 1) * 100:+.2f} % |")
    same = ra[1] == rb[1]
    print(f"  reports (without engine): {'identical' if same else 'DIFFERENT'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())

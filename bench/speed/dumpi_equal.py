#!/usr/bin/env python3
"""DUMPI readers agree (issue 26): the Rust streaming converter (``import_dumpi``, what ``g2gsim
import`` runs) against the Python reference reader (``read_dumpi(engine="python")``) on every DUMPI
trace of the corpus (``$G2GSIM_CORPUS``, default ../shared/corpus; MiniFE's renamed traces with
their untraced stretches included) and of tests/data, and optionally on generated traces
(``--generated META ...``): identical rows (every column, in (rank, seq) order), communicators,
source, buffer mode, and the same warnings (notes, matching problems).  Prints one line per trace;
exits 1 on any difference.

    PYTHONPATH=python python3 bench/speed/dumpi_equal.py
    PYTHONPATH=python python3 bench/speed/dumpi_equal.py --generated /tmp/g2gsim-dumpi-bench/dumpi-halo-64r-2000000rec/halo.meta
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python"))
CORPUS = Path(os.environ.get("G2GSIM_CORPUS", REPO.parent / "shared" / "corpus"))


def compare(meta: Path) -> tuple[bool, str, int]:
    import pyarrow.compute as pc

    from g2gsim.readers.dumpi_reader import read_dumpi

    def srt(t):
        return t.take(pc.sort_indices(t, sort_keys=[("rank", "ascending"), ("seq", "ascending")])).combine_chunks()

    def run(engine):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            tr = read_dumpi(meta, engine=engine)
        return tr, sorted(str(x.message) for x in w)

    ref, wref = run("python")
    got, wgot = run("rust")
    a, b = srt(ref.table), srt(got.table)
    if a.schema.names != b.schema.names or a.num_rows != b.num_rows:
        return False, f"columns or row count differ ({a.num_rows} vs {b.num_rows} rows)", a.num_rows
    for name in a.schema.names:
        if not a.column(name).equals(b.column(name)):
            return False, f"column {name} differs", a.num_rows
    if [c.to_json() for c in ref.comms] != [c.to_json() for c in got.comms]:
        return False, "communicators differ", a.num_rows
    if (ref.source, ref.buffers, ref.nranks) != (got.source, got.buffers, got.nranks):
        return False, "source, buffers or ranks differ", a.num_rows
    if wref != wgot:
        return False, f"warnings differ: {wref} vs {wgot}", a.num_rows
    return True, f"{len(wref)} warning(s) alike", a.num_rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--generated", nargs="*", default=[], help="more .meta files (generated traces)")
    a = ap.parse_args(argv)
    metas = sorted(CORPUS.rglob("*.meta")) if CORPUS.is_dir() else []
    if not metas:
        print(f"(corpus not present at {CORPUS})")
    metas += sorted((REPO / "tests" / "data").rglob("*.meta")) + [Path(g) for g in a.generated]
    bad = 0
    for m in metas:
        t = time.perf_counter()
        try:
            ok, why, rows = compare(m)
        except Exception as e:  # a reader failing on a trace the other reads is a difference too
            ok, why, rows = False, f"{type(e).__name__}: {e}", 0
        bad += not ok
        print(f"{'same' if ok else 'DIFFERENT'}  {m}  {rows:,} rows  ({why}; {time.perf_counter() - t:.1f} s)",
              flush=True)
    print(f"{len(metas) - bad} of {len(metas)} traces: identical rows from both readers")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

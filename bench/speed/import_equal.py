#!/usr/bin/env python3
"""OTF2 import equality check (issue 9): import a fixed set of archives and save, or compare with
a saved reference, the Parquet file ``Trace.write`` produces (byte for byte, and table + metadata
when the bytes differ), the communicators, source, buffer mode, import statistics (timings left
out) and the matching warnings.

    python3 bench/speed/import_equal.py --save /tmp/import_ref          # with the reference code
    python3 bench/speed/import_equal.py --compare /tmp/import_ref       # after a change
    python3 bench/speed/import_equal.py --compare /tmp/import_ref --big /tmp/g2gsim-otf2-bench/halo2d-64r-10000000ev/traces.otf2

Archives: every ``*.otf2`` of the corpus (``$G2GSIM_CORPUS``, default ../shared/corpus) and of the
tarballs in tests/data, synthetic archives from ``g2gsim.testing.otf2_synth.write_synthetic`` (one of ~1 M events
read by worker processes), each in the four ``assume_buffers`` modes (the big ones: traced only),
and optionally ``--big`` archives (traced, 1 and 2 processes).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tarfile
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python"))

import pyarrow.parquet as pq  # noqa: E402

from g2gsim.readers.otf2_reader import read_otf2  # noqa: E402
from g2gsim.testing.otf2_synth import write_synthetic  # noqa: E402

CORPUS = Path(os.environ.get("G2GSIM_CORPUS", REPO.parent / "shared" / "corpus"))
MODES = ("traced", "host", "device", "infer")
TIMING = {"seconds_read", "seconds_total", "events_per_s", "events_per_cpu_s", "cpu_s"}
SYNTH = {  # name: (kwargs of write_synthetic, big)
    "synth-4x3": (dict(nranks=4, iterations=3), False),
    "synth-2x2-uint8": (dict(nranks=2, iterations=2, mem_attr="uint8", gpu=False), False),
    "synth-2x1-noattr": (dict(nranks=2, iterations=1, mem_attr=None, gpu=False), False),
    "synth-6x4": (dict(nranks=6, iterations=4), False),
    "synth-3x1-unmatched": (dict(nranks=3, iterations=1, gpu=False, unmatched=True), False),
    "synth-16x1150": (dict(nranks=16, iterations=1150), True),
}


def archives(work: Path) -> list[tuple[str, Path, bool]]:
    out = []
    for a in sorted(CORPUS.rglob("*.otf2")):
        if a.is_file():
            out.append(("corpus-" + str(a.relative_to(CORPUS).parent).replace("/", "_"), a, False))
    for tgz in sorted((REPO / "tests" / "data").glob("*/*.tar.gz")):
        d = work / "tar" / tgz.name.split(".")[0]
        if not d.exists():
            d.mkdir(parents=True)
            with tarfile.open(tgz) as tf:
                tf.extractall(d)
        for a in sorted(d.rglob("*.otf2")):
            out.append(("data-" + str(a.relative_to(work / "tar").parent).replace("/", "_"), a,
                        False))
    for name, (kw, big) in SYNTH.items():
        d = work / "synth" / name
        if not (d / "traces.otf2").exists():
            write_synthetic(d, **kw)
        out.append((name, d / "traces.otf2", big))
    return out


def run_one(anchor: Path, mode: str, processes: int | None, outdir: Path, name: str) -> dict:
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            tr = read_otf2(anchor, assume_buffers=mode, processes=processes)
        except Exception as e:  # noqa: BLE001
            return {"error": f"{type(e).__name__}: {e}"}
    pq_path = outdir / f"{name}.parquet"
    tr.write(pq_path)
    stats = {k: v for k, v in tr.import_stats.items() if k not in TIMING}
    return {"nranks": tr.nranks, "comms": [c.to_json() for c in tr.comms], "source": tr.source,
            "buffers": tr.buffers, "stats": stats, "rows": tr.table.num_rows,
            "warnings": [str(x.message) for x in w],
            "sha256": hashlib.sha256(pq_path.read_bytes()).hexdigest()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--save", type=Path)
    g.add_argument("--compare", type=Path)
    ap.add_argument("--work", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp"))
                    / "g2gsim-import-equal", help="extracted / generated archives")
    ap.add_argument("--big", action="append", default=[], help="also this archive (traced)")
    ap.add_argument("--only", default="", help="substring of the case names to run")
    a = ap.parse_args(argv)
    ref = a.save or a.compare
    outdir = ref if a.save else a.work / "cmp"
    outdir.mkdir(parents=True, exist_ok=True)
    cases = []
    for name, anchor, big in archives(a.work):
        for mode in (("traced",) if big else MODES):
            cases.append((f"{name}-{mode}", anchor, mode, 2 if big else None))
    for i, b in enumerate(a.big):
        for p in (1, 2):
            cases.append((f"big{i}-{Path(b).parent.name}-p{p}", Path(b), "traced", p))
    results = {}
    bad = 0
    old = json.loads((ref / "index.json").read_text()) if a.compare else {}
    for name, anchor, mode, procs in cases:
        if a.only and a.only not in name:
            continue
        r = run_one(anchor, mode, procs, outdir, name)
        results[name] = r
        if a.compare:
            o = old.get(name)
            if o is None and "-p1" in name:
                o = old.get(name.replace("-p1", "-p2"))
            if o is None and "-p2" in name:
                o = old.get(name.replace("-p2", "-p1"))
            if o is None:
                print(f"?  {name}: not in the reference")
                continue
            diffs = [k for k in set(o) | set(r) if k != "sha256" and o.get(k) != r.get(k)]
            same_bytes = o.get("sha256") == r.get("sha256")
            if not same_bytes and "error" not in r and "error" not in o:
                rp = (ref / f"{name}.parquet")
                if not rp.exists():
                    rp = ref / f"{name.replace('-p1', '-p2')}.parquet"
                t_old, t_new = pq.read_table(rp), pq.read_table(outdir / f"{name}.parquet")
                if not t_old.equals(t_new, check_metadata=True):
                    diffs.append("table")
                    for c in t_old.column_names:
                        if not t_old.column(c).equals(t_new.column(c)):
                            diffs.append(f"col:{c}")
            if diffs:
                bad += 1
                print(f"DIFF {name}: {sorted(diffs)}")
                for k in diffs:
                    if k in o or k in r:
                        print(f"     {k}: ref={str(o.get(k))[:300]}\n     {k}: new={str(r.get(k))[:300]}")
            else:
                print(f"ok   {name} ({r.get('rows', 0)} rows{', same bytes' if same_bytes else ''})")
        else:
            print(f"saved {name}: {r.get('rows', r.get('error'))}")
    if a.save:
        idx = ref / "index.json"
        prev = json.loads(idx.read_text()) if idx.exists() else {}
        prev.update(results)
        idx.write_text(json.dumps(prev, indent=1))
    else:
        print(f"{len(results)} cases, {bad} different")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Checks that a change to the trace readers imports the same rows (issue 22: readers share their
rules).  Imports every OTF2 and DUMPI trace of ``tests/data`` and of the shared corpus with the
``g2gsim`` found on PYTHONPATH and writes each table, or the error it raised, under OUT; a second
run with ``--compare REF`` compares table by table (values, schema, communicators, source/buffers
metadata) and prints every difference.

    PYTHONPATH=/path/to/old/python python3 bench/readers/same_rows.py /tmp/rows-old
    PYTHONPATH=$PWD/python python3 bench/readers/same_rows.py /tmp/rows-new --compare /tmp/rows-old
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import tarfile
import tempfile
import warnings
from pathlib import Path

import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO.parent / "shared" / "corpus"


def traces(work: Path) -> list[tuple[str, Path]]:
    out = []
    for tgz in sorted((REPO / "tests" / "data").glob("*/*.tar.gz")):
        dest = work / tgz.name.removesuffix(".tar.gz")
        if not dest.exists():
            with tarfile.open(tgz) as tf:
                tf.extractall(dest, filter="data")
        out += [(f"data/{tgz.parent.name}/{p.relative_to(dest)}", p) for p in sorted(dest.rglob("*.otf2"))]
    if CORPUS.is_dir():
        out += [(f"corpus/{p.relative_to(CORPUS)}", p) for p in sorted(CORPUS.rglob("*.otf2"))]
        for p in sorted(CORPUS.rglob("*.meta")):
            out.append((f"corpus/{p.relative_to(CORPUS)}", _renamed_bins(p, work)))
    return out


def _renamed_bins(meta: Path, work: Path) -> Path:
    """The corpus stores some DUMPI traces as ``<stem>-NNNN.bin`` while their .meta names another
    ``fileprefix``: read those through a copy of the .meta pointing at the files."""
    text = meta.read_text()
    prefix = next((ln.split("=", 1)[1].strip() for ln in text.splitlines() if ln.startswith("fileprefix=")), "")
    if not prefix or list(meta.parent.glob(f"{prefix}-*.bin")) or not list(meta.parent.glob(f"{meta.stem}-*.bin")):
        return meta
    d = work / "renamed" / meta.parent.relative_to(CORPUS)
    d.mkdir(parents=True, exist_ok=True)
    for b in meta.parent.glob(f"{meta.stem}-*.bin"):
        (d / b.name).symlink_to(b)
    out = d / meta.name
    out.write_text(text.replace(f"fileprefix={prefix}", f"fileprefix={meta.stem}"))
    return out


def _norm(res: dict) -> dict:
    """The temporary folder the archives were unpacked in is not part of the result."""
    return json.loads(re.sub(r"/tmp/tmp[A-Za-z0-9_]+/", "<work>/", json.dumps(res)))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--compare", type=Path, default=None)
    a = ap.parse_args(argv)
    import g2gsim
    from g2gsim.sim import import_trace
    print(f"g2gsim from {Path(g2gsim.__file__).parent}", file=sys.stderr)
    a.out.mkdir(parents=True, exist_ok=True)
    bad = 0
    with tempfile.TemporaryDirectory() as d:
        for name, path in traces(Path(d)):
            key = name.replace("/", "__")
            res: dict = {"name": name}
            try:
                with warnings.catch_warnings(record=True) as w:
                    warnings.simplefilter("always")
                    t = import_trace(path)
                t.write(a.out / f"{key}.parquet")
                res.update(rows=len(t.table), comms=[c.to_json() for c in t.comms], source=t.source,
                           buffers=t.buffers, warnings=sorted({str(x.message)[:300] for x in w}))
            except Exception as e:  # noqa: BLE001 - recorded and compared
                res["error"] = f"{type(e).__name__}: {e}"[:500]
            (a.out / f"{key}.json").write_text(json.dumps(res, indent=1, sort_keys=True))
            if a.compare is None:
                print(f"{name}: {res.get('rows', res.get('error'))}")
                continue
            ref = _norm(json.loads((a.compare / f"{key}.json").read_text()))
            res = _norm(res)
            diffs = [k for k in ("rows", "comms", "source", "buffers", "error") if ref.get(k) != res.get(k)]
            if "error" not in res and "error" not in ref:
                ta = pq.read_table(a.compare / f"{key}.parquet")
                tb = pq.read_table(a.out / f"{key}.parquet")
                if not ta.equals(tb):
                    diffs.append("table")
            new_warn = set(res.get("warnings", [])) - set(ref.get("warnings", []))
            status = "SAME" if not diffs else "DIFF " + ", ".join(diffs)
            print(f"{status:20s} {name}" + (f"  ({len(new_warn)} new warning(s), e.g. {sorted(new_warn)[0][:200]!r})"
                                            if new_warn else ""))
            for k in diffs:
                if k != "table":
                    print(f"    {k}: {ref.get(k)!r:.200} -> {res.get(k)!r:.200}")
            bad += bool(diffs)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

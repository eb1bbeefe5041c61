#!/usr/bin/env python3
"""Import speed.  OTF2 (issue 9): events/s of ``g2gsim.readers.otf2_reader.read_otf2`` on the corpus
archives and on a generated ~10-million-event Score-P-like archive.  DUMPI (issue 26, ``--format
dumpi``): records/s and peak memory of ``import_dumpi`` (the Rust streaming converter, trace to
native file) on every corpus DUMPI trace and on generated traces of several lengths
(``bench/speed/dumpi_gen.py``), optionally against the Python reference (``--reference``):

    python3 bench/speed/import_bench.py --format dumpi                 # corpus + 2M and 8M records
    python3 bench/speed/import_bench.py --format dumpi --records 2e6,8e6,16e6 --reference

    python3 bench/speed/import_bench.py                       # corpus + 10M-event archive, 1 and 2 processes
    python3 bench/speed/import_bench.py --events 1e6 --processes 2
    python3 bench/speed/import_bench.py --generate-only /tmp/otf2-10M   # just write the archive

The archive is written with the ``otf2`` PyPI package's writer API (``otf2.writer.open``, its
definition registry and ``EventWriter`` event objects; ``--raw-events`` writes the same records
through the package's ``_otf2.EvtWriter_*`` calls, ~5x faster).  It holds what Score-P records for
an MPI program -- no user regions, compute is the time between MPI calls: per rank per iteration a
4-neighbour halo on a periodic 2D process grid (``MPI_Irecv`` x4 with ``MpiIrecvRequest``, ``MPI_Isend``
x4 with ``MpiIsend``, ``MPI_Waitall`` with 4 ``MpiIsendComplete`` and 4 ``MpiIrecv``), then an
``MPI_Allreduce`` (``MpiCollectiveBegin``/``End``): 38 events, plus ``MPI_Init``/``MPI_Finalize``.

Each import runs in a fresh process under ``/usr/bin/time -v`` (peak RSS); the reported time is
``read_otf2`` alone (definitions, events, assembly into a Trace), and separately the Parquet write;
for archives under 2 M events the first call (which pays ~0.2 s of one-time imports) is not timed
and a second call is.
events/s = OTF2 event records in the archive (the sum over locations of ``number_of_events``) /
read time.  Results: markdown on stdout, JSON in bench/speed/import_results.json.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import REPO, fmt_bytes, fmt_rate, host_info, load_json, markdown_table, measure, save_json  # noqa: E402

CORPUS = Path(os.environ.get("G2GSIM_CORPUS", REPO.parent / "shared" / "corpus"))
RESULTS = Path(__file__).resolve().parent / "import_results.json"
EVENTS_PER_RANK_ITER = 38


# ------------------------------------------------------------------------------- generation
def _grid(n: int) -> tuple[int, int]:
    px = int(math.isqrt(n))
    while n % px:
        px -= 1
    return px, n // px


def generate_otf2(path: str | Path, nranks: int = 64, events: int = 10_000_000, raw: bool = False,
                  msg_bytes: int = 65536, compute_ns: int = 20_000) -> dict:
    """Writes a Score-P-like OTF2 archive of about ``events`` event records to directory ``path``
    (anchor ``path/traces.otf2``); returns {"anchor", "events", "nranks", "iterations", "write_s"}."""
    import otf2
    from otf2.enums import CollectiveOp, GroupType, Paradigm, RegionRole
    from otf2 import events as ev

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    iterations = max(1, round((events - 8 * nranks) / (EVENTS_PER_RANK_ITER * nranks)))
    px, py = _grid(nranks)
    t0 = time.perf_counter()
    written = 0
    with otf2.writer.open(str(path), timer_resolution=1_000_000_000) as tr:
        tr.creator = "g2gsim bench/speed/import_bench.py"
        d = tr.definitions
        node = d.system_tree_node("node0")
        groups = [d.location_group(f"MPI Rank {r}", system_tree_parent=node) for r in range(nranks)]
        locs = [d.location("Master thread", group=groups[r]) for r in range(nranks)]
        comm_locs = d.group("", group_type=GroupType.COMM_LOCATIONS, paradigm=Paradigm.MPI, members=locs)
        world_group = d.group("", group_type=GroupType.COMM_GROUP, paradigm=Paradigm.MPI, members=locs)
        del comm_locs
        world = d.comm("MPI_COMM_WORLD", group=world_group)
        reg = {name: d.region(name, paradigm=Paradigm.MPI, region_role=role) for name, role in [
            ("MPI_Init", RegionRole.FUNCTION), ("MPI_Finalize", RegionRole.FUNCTION),
            ("MPI_Irecv", RegionRole.POINT2POINT), ("MPI_Isend", RegionRole.POINT2POINT),
            ("MPI_Waitall", RegionRole.POINT2POINT), ("MPI_Allreduce", RegionRole.COLL_ALL2ALL)]}
        undef_root = 0xFFFFFFFF
        for r in range(nranks):
            x, y = r % px, r // px
            nbrs = [((x + 1) % px) + y * px, ((x - 1) % px) + y * px, x + ((y + 1) % py) * px,
                    x + ((y - 1) % py) * px]
            w = tr.event_writer_from_location(locs[r])
            t = 1000 + r
            n = 0
            if raw:
                import _otf2
                h = w.handle
                E, L = _otf2.EvtWriter_Enter, _otf2.EvtWriter_Leave
                R = {k: v._ref for k, v in reg.items()}
                c = world._ref
                E(h, None, t, R["MPI_Init"]); L(h, None, t + 500, R["MPI_Init"])  # noqa: E702
                t += 1000
                n += 2
                for it in range(iterations):
                    t += compute_ns
                    base = it * 8 + 1
                    for k in range(4):
                        E(h, None, t, R["MPI_Irecv"])
                        _otf2.EvtWriter_MpiIrecvRequest(h, None, t + 50, base + k)
                        L(h, None, t + 100, R["MPI_Irecv"])
                        t += 150
                    for k in range(4):
                        E(h, None, t, R["MPI_Isend"])
                        _otf2.EvtWriter_MpiIsend(h, None, t + 50, nbrs[k], c, k, msg_bytes, base + 4 + k)
                        L(h, None, t + 100, R["MPI_Isend"])
                        t += 150
                    E(h, None, t, R["MPI_Waitall"])
                    for k in range(4):
                        _otf2.EvtWriter_MpiIsendComplete(h, None, t + 10 + k, base + 4 + k)
                    for k in range(4):
                        _otf2.EvtWriter_MpiIrecv(h, None, t + 5000 + k, nbrs[k ^ 1], c, k, msg_bytes, base + k)
                    L(h, None, t + 5100, R["MPI_Waitall"])
                    t += 5200
                    E(h, None, t, R["MPI_Allreduce"])
                    _otf2.EvtWriter_MpiCollectiveBegin(h, None, t + 10)
                    _otf2.EvtWriter_MpiCollectiveEnd(h, None, t + 3000, CollectiveOp.ALLREDUCE, c, undef_root,
                                                     8 * nranks, 8 * nranks)
                    L(h, None, t + 3010, R["MPI_Allreduce"])
                    t += 3100
                    n += EVENTS_PER_RANK_ITER
                E(h, None, t, R["MPI_Finalize"]); L(h, None, t + 500, R["MPI_Finalize"])  # noqa: E702
                n += 2
                locs[r]._number_of_events_written = n
                tr._update_timestamps(1000 + r)
                tr._update_timestamps(t + 500)
            else:
                w(ev.Enter(t, reg["MPI_Init"]))
                w(ev.Leave(t + 500, reg["MPI_Init"]))
                t += 1000
                n += 2
                for it in range(iterations):
                    t += compute_ns
                    base = it * 8 + 1
                    for k in range(4):
                        w(ev.Enter(t, reg["MPI_Irecv"]))
                        w(ev.MpiIrecvRequest(t + 50, base + k))
                        w(ev.Leave(t + 100, reg["MPI_Irecv"]))
                        t += 150
                    for k in range(4):
                        w(ev.Enter(t, reg["MPI_Isend"]))
                        w(ev.MpiIsend(t + 50, nbrs[k], world, k, msg_bytes, base + 4 + k))
                        w(ev.Leave(t + 100, reg["MPI_Isend"]))
                        t += 150
                    w(ev.Enter(t, reg["MPI_Waitall"]))
                    for k in range(4):
                        w(ev.MpiIsendComplete(t + 10 + k, base + 4 + k))
                    for k in range(4):
                        w(ev.MpiIrecv(t + 5000 + k, nbrs[k ^ 1], world, k, msg_bytes, base + k))
                    w(ev.Leave(t + 5100, reg["MPI_Waitall"]))
                    t += 5200
                    w(ev.Enter(t, reg["MPI_Allreduce"]))
                    w(ev.MpiCollectiveBegin(t + 10))
                    w(ev.MpiCollectiveEnd(t + 3000, CollectiveOp.ALLREDUCE, world, undef_root, 8 * nranks,
                                          8 * nranks))
                    w(ev.Leave(t + 3010, reg["MPI_Allreduce"]))
                    t += 3100
                    n += EVENTS_PER_RANK_ITER
                w(ev.Enter(t, reg["MPI_Finalize"]))
                w(ev.Leave(t + 500, reg["MPI_Finalize"]))
                n += 2
            written += n
    # neighbour k of rank r receives on direction k from the rank whose neighbour k^1 is r: the
    # grid is periodic, so +x / -x (k = 0 / 1) and +y / -y (2 / 3) pair up; tags are the direction
    return {"anchor": str(path / "traces.otf2"), "events": written, "nranks": nranks,
            "iterations": iterations, "write_s": time.perf_counter() - t0, "raw": raw}


# ----------------------------------------------------------------------------------- import
IMPORT_SNIPPET = r"""
import json, sys, time, os
anchor, processes, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
import otf2
t = time.perf_counter()
with otf2.reader.open(anchor) as tr:
    nev = sum(int(getattr(l, "number_of_events", 0) or 0) for l in tr.definitions.locations)
t_defs = time.perf_counter() - t
from g2gsim.readers.otf2_reader import read_otf2
first_s = None
if nev < 2_000_000:
    # small archives: the first call pays one-time imports (~0.2 s); time a second, warm call
    t = time.perf_counter()
    read_otf2(anchor, processes=processes)
    first_s = time.perf_counter() - t
t = time.perf_counter()
trace = read_otf2(anchor, processes=processes)
read_s = time.perf_counter() - t
t = time.perf_counter()
if out:
    trace.write(out)
write_s = time.perf_counter() - t if out else None
print(json.dumps({"events": nev, "rows": trace.table.num_rows, "nranks": trace.nranks,
                  "read_s": read_s, "first_call_s": first_s, "write_s": write_s, "count_s": t_defs}))
"""


def run_import(anchor: str, processes: int, out: str | None, timeout: float, mem_limit: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(REPO / "python") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    m = measure([sys.executable, "-c", IMPORT_SNIPPET, anchor, str(processes), out or ""], timeout_s=timeout,
                mem_limit_bytes=mem_limit, env=env)
    r = {"anchor": anchor, "processes": processes, "status": m.status, "process_wall_s": round(m.wall_s, 3),
         "cpu_s": round(m.cpu_s, 3), "max_rss_bytes": m.max_rss_bytes,
         "watch_peak_rss_bytes": m.watch_peak_rss_bytes}
    if m.status == "ok":
        try:
            r.update(json.loads(m.stdout.strip().splitlines()[-1]))
            r["events_per_s"] = r["events"] / r["read_s"] if r["read_s"] else None
            r["rows_per_s"] = r["rows"] / r["read_s"] if r["read_s"] else None
        except (ValueError, IndexError):
            r["status"] = "error"
    if r["status"] != "ok":
        r["error_tail"] = m.stderr[-2000:]
    return r


def table(results: list[dict]) -> str:
    rows = []
    for r in results:
        name = r.get("label") or r["anchor"]
        if r["status"] != "ok":
            rows.append([name, r["processes"], "-", "-", "-", "-", "-", fmt_bytes(r.get("max_rss_bytes")),
                         r["status"]])
            continue
        rows.append([name, r["processes"], f"{r['events']:,}", f"{r['rows']:,}", f"{r['read_s']:.2f}",
                     fmt_rate(r["events_per_s"]),
                     f"{r['write_s']:.2f}" if r.get("write_s") is not None else "-",
                     fmt_bytes(r.get("max_rss_bytes")), "ok"])
    return markdown_table(["archive", "processes", "OTF2 events", "trace rows", "read_otf2 s", "events/s",
                           "Parquet write s", "peak RSS (all processes' max)", "status"], rows)


# ----------------------------------------------------------------------------------- DUMPI
DUMPI_RESULTS = Path(__file__).resolve().parent / "import_dumpi_results.json"
DUMPI_SNIPPET = r"""
import json, sys, time, warnings
warnings.simplefilter("ignore")
meta, out, engine = sys.argv[1], sys.argv[2], sys.argv[3]
from g2gsim.readers.dumpi_reader import import_dumpi, read_dumpi
t = time.perf_counter(); c = time.process_time()
if engine == "rust":
    st = import_dumpi(meta, out)
    rows, records = st["rows"], st["records"]
else:
    from g2gsim.readers.dumpi_reader import read_dumpi_meta, _open_rank
    tr = read_dumpi(meta, engine="python")
    tr.write(out)
    rows = tr.table.num_rows
    m = read_dumpi_meta(meta)
    records = sum(len(_open_rank(m, r).records().fids) for r in range(m.numprocs))
print(json.dumps({"read_s": time.perf_counter() - t, "cpu_s": time.process_time() - c,
                  "rows": rows, "records": records}))
"""


def run_dumpi(meta: str, engine: str, out: str, timeout: float, mem_limit: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(REPO / "python") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    m = measure([sys.executable, "-c", DUMPI_SNIPPET, meta, out, engine], timeout_s=timeout,
                mem_limit_bytes=mem_limit, env=env)
    r = {"meta": meta, "engine": engine, "status": m.status, "process_wall_s": round(m.wall_s, 3),
         "max_rss_bytes": m.max_rss_bytes}
    if m.status == "ok":
        try:
            r.update(json.loads(m.stdout.strip().splitlines()[-1]))
            # python reference: records counted by decoding again, outside the timed part
            r["records_per_s"] = r["records"] / r["read_s"] if r["read_s"] else None
            r["records_per_cpu_s"] = r["records"] / r["cpu_s"] if r["cpu_s"] else None
        except (ValueError, IndexError):
            r["status"] = "error"
    if r["status"] != "ok":
        r["error_tail"] = m.stderr[-2000:]
    Path(out).unlink(missing_ok=True)
    return r


def main_dumpi(a) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from dumpi_gen import generate_dumpi
    mem_limit = int(a.mem_limit * (1 << 30))
    traces: list[tuple[str, str]] = []
    if not a.no_corpus:
        for m in sorted(CORPUS.rglob("*.meta")):
            traces.append((str(m.relative_to(CORPUS)), str(m)))
    gen = []
    if not a.no_generated:
        for rec in [parse_rec for parse_rec in (int(float(x)) for x in a.records.split(",")) if parse_rec]:
            gdir = a.archive_dir / f"dumpi-halo-{a.ranks}r-{rec}rec"
            info = load_json(gdir / "generated.json")
            if not info or not Path(info.get("meta", "")).exists():
                print(f"writing a {rec:,}-record DUMPI trace to {gdir} ...", file=sys.stderr, flush=True)
                info = generate_dumpi(gdir, a.ranks, rec)
                (gdir / "generated.json").write_text(json.dumps(info))
            gen.append(info)
            traces.append((f"generated halo {a.ranks} ranks, {info['records']:,} records", info["meta"]))
    engines = ["rust"] + (["python"] if a.reference else [])
    results = []
    out = str(a.archive_dir / "dumpi-import-out.g2g.parquet")
    a.archive_dir.mkdir(parents=True, exist_ok=True)
    for label, meta in traces:
        for eng in engines:
            print(f"importing {label} ({eng}) ...", file=sys.stderr, flush=True)
            r = run_dumpi(meta, eng, out, a.timeout, mem_limit)
            r["label"] = label
            results.append(r)
    save_json(a.out if a.out != RESULTS else DUMPI_RESULTS, {"host": host_info(), "generated": gen, "results": results})
    rows = []
    for r in results:
        if r["status"] != "ok":
            rows.append([r["label"], r["engine"], "-", "-", "-", "-", "-", fmt_bytes(r.get("max_rss_bytes")), r["status"]])
            continue
        rows.append([r["label"], r["engine"], f"{r['records']:,}", f"{r['rows']:,}", f"{r['read_s']:.2f}",
                     f"{r['cpu_s']:.2f}", f"{fmt_rate(r['records_per_s'])} / {fmt_rate(r['records_per_cpu_s'])}",
                     fmt_bytes(r.get("max_rss_bytes")), "ok"])
    print(markdown_table(["trace", "engine", "records", "rows", "wall s", "CPU s", "records/s (wall / CPU)",
                          "peak RSS (process)", "status"], rows))
    return 0 if all(r["status"] == "ok" for r in results) else 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--format", choices=["otf2", "dumpi"], default="otf2")
    ap.add_argument("--records", default="2e6,8e6", help="dumpi: comma list of generated trace lengths (records)")
    ap.add_argument("--reference", action="store_true", help="dumpi: also time the Python reference reader")
    ap.add_argument("--events", type=float, default=10e6, help="events of the generated archive")
    ap.add_argument("--ranks", type=int, default=64, help="ranks of the generated archive")
    ap.add_argument("--raw-events", action="store_true", help="write events with _otf2.EvtWriter_* (faster)")
    ap.add_argument("--archive-dir", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "g2gsim-otf2-bench",
                    help="where the generated archive is kept (reused when it has the asked size)")
    ap.add_argument("--processes", default="1,2", help="comma list of read_otf2(processes=...)")
    ap.add_argument("--no-corpus", action="store_true")
    ap.add_argument("--no-generated", action="store_true")
    ap.add_argument("--write-parquet", action="store_true", help="also time Trace.write to Parquet")
    ap.add_argument("--generate-only", type=Path, metavar="DIR", help="write the archive to DIR and stop")
    ap.add_argument("--timeout", type=float, default=1800.0)
    ap.add_argument("--mem-limit", type=float, default=21.0, help="GiB")
    ap.add_argument("--out", type=Path, default=RESULTS)
    a = ap.parse_args(argv)
    if a.format == "dumpi":
        if a.archive_dir == Path(os.environ.get("TMPDIR", "/tmp")) / "g2gsim-otf2-bench":
            a.archive_dir = Path(os.environ.get("TMPDIR", "/tmp")) / "g2gsim-dumpi-bench"
        return main_dumpi(a)
    if a.generate_only:
        info = generate_otf2(a.generate_only, a.ranks, int(a.events), raw=a.raw_events)
        (a.generate_only / "generated.json").write_text(json.dumps(info))
        print(json.dumps(info))
        return 0
    procs = [int(p) for p in a.processes.split(",") if p.strip()]
    mem_limit = int(a.mem_limit * (1 << 30))
    archives: list[tuple[str, str]] = []
    if not a.no_corpus:
        for anc in sorted(CORPUS.rglob("traces.otf2")):
            archives.append((str(anc.relative_to(CORPUS).parent), str(anc)))
    gen_info = None
    if not a.no_generated:
        gdir = a.archive_dir / f"halo2d-{a.ranks}r-{int(a.events)}ev"
        meta = gdir / "generated.json"
        gen_info = load_json(meta)
        if not gen_info or not Path(gen_info.get("anchor", "")).exists():
            print(f"writing {int(a.events):,}-event archive to {gdir} ...", file=sys.stderr, flush=True)
            if gdir.exists():
                import shutil
                shutil.rmtree(gdir)
            gen_info = generate_otf2(gdir, a.ranks, int(a.events), raw=a.raw_events)
            meta.write_text(json.dumps(gen_info))
            print(f"  {gen_info['events']:,} events in {gen_info['write_s']:.1f} s "
                  f"({gen_info['events'] / gen_info['write_s']:,.0f} events/s written)", file=sys.stderr)
        archives.append((f"generated halo2d {a.ranks} ranks", gen_info["anchor"]))
    results = []
    for label, anchor in archives:
        for p in procs:
            out = None
            if a.write_parquet:
                out = str(Path(a.archive_dir) / "import-out.g2g.parquet")
            print(f"importing {label} with {p} process(es) ...", file=sys.stderr, flush=True)
            r = run_import(anchor, p, out, a.timeout, mem_limit)
            r["label"] = label
            results.append(r)
            if out:
                Path(out).unlink(missing_ok=True)
    data = {"host": host_info(), "generated": gen_info, "results": results}
    save_json(a.out, data)
    print(table(results))
    return 0 if all(r["status"] == "ok" for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())

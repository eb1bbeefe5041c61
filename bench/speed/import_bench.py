#!/usr/bin/env python3
"""Import speed.  OTF2 (issue 9): events/s of ``g2gsim.readers.otf2_reader.read_otf2`` on the corpus
archives and on a generated ~10-million-event Score-P-like archive.  DUMPI (issue 26, ``--format
dumpi``): records per CPU-second and peak memory of the whole ``g2gsim import TRACE.meta -o
OUT.g2g.parquet`` command (a fresh process: interpreter start-up, the Rust streaming converter with
its matching check, the file written; CPU = user + sys, as the machine may be shared) on every
corpus DUMPI trace and on generated traces of several lengths (``bench/speed/dumpi_gen.py``),
optionally for several builds interleaved (``--builds main=/path/to/python,new=python``) and against
the Python reference reader (``--reference``):

    python3 bench/speed/import_bench.py --format dumpi                 # corpus + 2M and 8M records
    python3 bench/speed/import_bench.py --format dumpi --records 2e6,8e6 --repeat 3 \
        --builds main=/tmp/main-tree/python,new=python --reference

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
# records of a trace: every record of every rank, decoded by the Rust scan (not timed)
DUMPI_RECORDS = r"""
import sys
from g2gsim import _core
from g2gsim.readers.dumpi_reader import _open_rank, read_dumpi_meta
m = read_dumpi_meta(sys.argv[1])
files = [_open_rank(m, r) for r in range(m.numprocs)]
for f in files:
    f.close()
print(sum(s[1] for s in _core.dumpi_scan([f.stream_spec() for f in files], True)))
"""
# the Python reference reader, trace to native file (--reference)
DUMPI_REFERENCE = r"""
import sys, warnings
warnings.simplefilter("ignore")
from g2gsim.readers.dumpi_reader import read_dumpi
tr = read_dumpi(sys.argv[1], engine="python")
tr.write(sys.argv[2])
print(tr.table.num_rows)
"""


def _dumpi_env(pythonpath: str) -> dict:
    return dict(os.environ, PYTHONPATH=pythonpath + os.pathsep + os.environ.get("PYTHONPATH", ""))


def dumpi_records(meta: str, pythonpath: str) -> int:
    import subprocess
    out = subprocess.run([sys.executable, "-c", DUMPI_RECORDS, meta], env=_dumpi_env(pythonpath),
                         capture_output=True, text=True, check=True).stdout
    return int(out.split()[-1])


def run_dumpi(meta: str, build: str, pythonpath: str, out: str, timeout: float, mem_limit: int,
              records: int) -> dict:
    """One import in a fresh process: the CLI (``g2gsim import META -o OUT``, the whole command:
    interpreter start-up, the Rust conversion and its matching check, the file written) or, for
    build ``python-reference``, the Python reader.  CPU = user + sys of the process (the machine
    may be loaded: wall time is reported but not used for the rate)."""
    if build == "python-reference":
        argv = [sys.executable, "-c", DUMPI_REFERENCE, meta, out]
    else:
        argv = [sys.executable, "-m", "g2gsim.cli", "import", meta, "-o", out]
    m = measure(argv, timeout_s=timeout, mem_limit_bytes=mem_limit, env=_dumpi_env(pythonpath))
    r = {"meta": meta, "build": build, "pythonpath": pythonpath, "status": m.status,
         "wall_s": round(m.wall_s, 3), "user_s": m.user_s, "sys_s": m.sys_s, "cpu_s": round(m.cpu_s, 3),
         "max_rss_bytes": m.max_rss_bytes, "records": records}
    if m.status == "ok" and m.rc == 0:
        r["records_per_cpu_s"] = records / m.cpu_s if m.cpu_s else None
        r["out_bytes"] = Path(out).stat().st_size if Path(out).exists() else None
    else:
        r["status"] = m.status if m.status != "ok" else "error"
        r["error_tail"] = m.stderr[-2000:]
    Path(out).unlink(missing_ok=True)
    return r


def main_dumpi(a) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from dumpi_gen import generate_dumpi
    mem_limit = int(a.mem_limit * (1 << 30))
    builds: list[tuple[str, str]] = []
    for spec in (a.builds.split(",") if a.builds else []):
        name, _, path = spec.partition("=")
        builds.append((name, str(Path(path).resolve())))
    if not builds:
        builds = [("this", str(REPO / "python"))]
    if a.reference:
        builds.append(("python-reference", builds[0][1]))
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
    results = []
    out = str(a.archive_dir / "dumpi-import-out.g2g.parquet")
    a.archive_dir.mkdir(parents=True, exist_ok=True)
    for label, meta in traces:
        records = dumpi_records(meta, builds[0][1])
        # builds interleaved, repeated: A B A B ... on a shared machine
        for rep in range(a.repeat):
            for name, pp in builds:
                if name == "python-reference" and rep:
                    continue
                print(f"importing {label} ({name}, run {rep + 1}) ...", file=sys.stderr, flush=True)
                r = run_dumpi(meta, name, pp, out, a.timeout, mem_limit, records)
                r["label"] = label
                r["run"] = rep
                results.append(r)
    save_json(a.out if a.out != RESULTS else DUMPI_RESULTS,
              {"host": host_info(), "builds": builds, "generated": gen, "results": results})
    rows = []
    for label, _ in traces:
        for name, _ in builds:
            rs = [r for r in results if r["label"] == label and r["build"] == name]
            ok = [r for r in rs if r["status"] == "ok"]
            if not ok:
                rows.append([label, name, "-", "-", "-", "-", "-", rs[0]["status"] if rs else "-"])
                continue
            cpu = sorted(r["cpu_s"] for r in ok)
            med = cpu[len(cpu) // 2]
            rows.append([label, name, f"{ok[0]['records']:,}", " ".join(f"{c:.2f}" for c in cpu),
                         fmt_rate(ok[0]["records"] / med if med else None),
                         fmt_bytes(max(r["max_rss_bytes"] for r in ok)),
                         fmt_bytes(ok[0].get("out_bytes")), "ok" if len(ok) == len(rs) else "some failed"])
    print(markdown_table(["trace", "build", "records", "CPU s (user+sys, each run)",
                          "records per CPU-s (median run)", "peak RSS", "output", "status"], rows))
    return 0 if all(r["status"] == "ok" for r in results) else 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--format", choices=["otf2", "dumpi"], default="otf2")
    ap.add_argument("--records", default="2e6,8e6", help="dumpi: comma list of generated trace lengths (records)")
    ap.add_argument("--reference", action="store_true", help="dumpi: also time the Python reference reader")
    ap.add_argument("--builds", default="", help="dumpi: NAME=PYTHONPATH,... the python/ trees (with their _core) to "
                    "compare, interleaved (default: this tree's python/)")
    ap.add_argument("--repeat", type=int, default=1, help="dumpi: runs of each build per trace")
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

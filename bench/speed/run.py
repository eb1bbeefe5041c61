#!/usr/bin/env python3
"""Speed and memory benchmark of the g2gsim core (issue 9).

Generates synthetic traces (halo exchange, Allreduce-heavy, all-to-all) at 64 ... 1,048,576 ranks,
runs each through the core in its own process (``target/release/g2gsim-core``, or the Python API with
``--runner python``) under ``/usr/bin/time -v``, and reports MPI operations per second, events per
second, peak resident memory and bytes per rank: a markdown table on stdout and JSON in
``bench/speed/results.json`` (merged: a run replaces the entries of the same workload / ranks /
runner / mode / machine and keeps the others, so big sizes can be run one at a time).

    cargo build --release -p g2g-mpi --bin g2gsim-core
    python3 bench/speed/run.py                                # all workloads, 64 .. 1M ranks
    python3 bench/speed/run.py -w halo -s 1024 --reps 3       # the 5 M ops/s target case
    python3 bench/speed/run.py -w halo -s 1M --timeout 3600   # the 1,048,576-rank halo
    python3 bench/speed/run.py -w allreduce -p allreduce.msg_bytes=8 -s 64,256
    python3 bench/speed/run.py --table                        # print results.json as a table

Definitions (see docs/scaling.md):
* *ops*: trace rows executed (every MPI call, Compute, Init/Finalize); *MPI ops*: rows that are MPI
  calls (not Compute/Kernel/Memcpy/Init/Finalize).  The core's ``engine.ops`` counts all rows.
* *ops/s*: ops / the core's own ``engine.wall_s`` (its ``simulate`` call: building the machine,
  reading the trace and the replay; process start-up and parsing the machine file not); *ops/CPU-s*: ops / (user + system CPU time of the process),
  which is what one core delivers when the machine is shared with other jobs.
* *peak RSS*: ``Maximum resident set size`` of ``/usr/bin/time -v``; *bytes/rank*: peak RSS / ranks;
  *marginal B/rank*: (RSS - RSS of the smallest run of the workload) / (ranks - its ranks).

A run is stopped when it passes ``--timeout`` seconds or ``--mem-limit`` GiB of resident memory (the
machine has no swap; the limit leaves room for the rest of the system) and is reported as such.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (CORE, PRESETS, REPO, fmt_bytes, fmt_int, fmt_rate, host_info, load_json,  # noqa: E402
                     markdown_table, measure, parse_count, save_json)

PYDIR = REPO / "python"
RESULTS = Path(__file__).resolve().parent / "results.json"
DEFAULT_SIZES = [64, 256, 1024, 4096, 16384, 65536, 262144, 1048576]
NON_MPI = {"Compute", "Kernel", "Memcpy", "Init", "Finalize"}

# workload -> (generator, parameters).  Device buffers: GPU-aware MPI, so --mode gpudirect sends
# messages GPU to GPU (NVLink inside a node, GPUDirect RDMA across); every message is a flow in the
# max-min network model (contention on).
WORKLOADS: dict[str, tuple[str, dict]] = {
    # 3D periodic halo, 6 neighbours, 64 KiB faces: 14 rows per rank per iteration
    "halo": ("halo3d", {"iterations": 10, "msg_bytes": 65536, "compute_ns": 20000}),
    # two 8 KiB Allreduces (recursive doubling: log2(p) rounds) per iteration
    "allreduce": ("allreduce", {"iterations": 10, "per_iteration": 2, "msg_bytes": 8192,
                                "compute_ns": 20000}),
    # world Alltoall, 4 KiB per peer (linear algorithm: p-1 messages per rank in flight at once)
    "alltoall": ("alltoall", {"iterations": 2, "block_bytes": 4096, "compute_ns": 20000}),
}
ALLTOALL_MAX_DEFAULT = 1024


def derived_machine(machine: Path, overrides: dict, out_dir: Path, name: str) -> Path:
    """A copy of the machine TOML with ``overrides`` (nested tables) applied, written to out_dir."""
    import tomllib

    import tomli_w
    doc = tomllib.loads(machine.read_text())
    for table_name, kv in overrides.items():
        doc.setdefault(table_name, {}).update(kv)
    out_dir.mkdir(parents=True, exist_ok=True)
    p = out_dir / f"{name}.toml"
    p.write_text(tomli_w.dumps(doc))
    return p


def trace_path(trace_dir: Path, gen: str, ranks: int, params: dict) -> Path:
    """Where the generated trace is cached: named by generator, ranks, parameters and the file
    layout the generator writes today (window size), so a layout change makes a new file."""
    sys.path.insert(0, str(PYDIR))
    from g2gsim.trace import ROW_GROUP_ROWS, auto_window_ops
    layout = [auto_window_ops(ranks), ROW_GROUP_ROWS]
    key = hashlib.sha1(json.dumps([gen, ranks, sorted(params.items())] + ([layout] if layout != [4096, 1 << 20] else [])).encode()).hexdigest()[:10]
    return trace_dir / f"{gen}-{ranks}-{key}.g2g.parquet"


GEN_SNIPPET = r"""
import json, sys, time
import g2gsim.generate as g
gen, ranks, path, params = sys.argv[1], int(sys.argv[2]), sys.argv[3], json.loads(sys.argv[4])
t = time.perf_counter()
g.generate_to_file(gen, ranks, path, **params)
print(json.dumps({"gen_s": time.perf_counter() - t}))
"""


def count_ops(path: Path) -> dict[str, int]:
    """Op counts of a trace, reading the ``op`` column one row group at a time."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
    pf = pq.ParquetFile(path)
    counts: dict[str, int] = {}
    for i in range(pf.num_row_groups):
        col = pf.read_row_group(i, columns=["op"]).column("op")
        for d in pc.value_counts(col).to_pylist():
            counts[str(d["values"])] = counts.get(str(d["values"]), 0) + int(d["counts"])
    return counts


def ensure_trace(trace_dir: Path, gen: str, ranks: int, params: dict, mem_limit: int, log) -> dict:
    """Generates the trace once (cached with a sidecar .json of its op counts); returns the sidecar."""
    path = trace_path(trace_dir, gen, ranks, params)
    side = path.with_suffix(".json")
    info = load_json(side)
    if path.exists() and info.get("rows"):
        info["path"] = str(path)
        return info
    trace_dir.mkdir(parents=True, exist_ok=True)
    log(f"  generating {gen} on {ranks:,} ranks -> {path}")
    env = dict(os.environ, PYTHONPATH=str(PYDIR) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    m = measure([sys.executable, "-c", GEN_SNIPPET, gen, str(ranks), str(path), json.dumps(params)],
                mem_limit_bytes=mem_limit, env=env)
    if m.status != "ok":
        path.unlink(missing_ok=True)
        raise RuntimeError(f"generating {gen} x {ranks}: {m.status}\n{m.stderr[-2000:]}")
    counts = count_ops(path)
    info = {"generator": gen, "ranks": ranks, "params": params, "rows": sum(counts.values()),
            "mpi_ops": sum(v for k, v in counts.items() if k not in NON_MPI), "op_counts": counts,
            "file_bytes": path.stat().st_size, "gen_wall_s": round(m.wall_s, 3),
            "gen_cpu_s": round(m.cpu_s, 3), "gen_max_rss_bytes": m.max_rss_bytes}
    side.write_text(json.dumps(info, indent=1))
    info["path"] = str(path)
    return info


PY_SNIPPET = r"""
import json, sys
import g2gsim
rep = g2gsim.simulate(sys.argv[1], sys.argv[2], mode=sys.argv[3], per_rank=False)
print(json.dumps(rep))
"""


def run_one(runner: str, trace: str, machine: Path, mode: str, timeout: float, mem_limit: int,
            core: Path) -> tuple[dict | None, object]:
    if runner == "core":
        argv = [str(core), trace, str(machine), "--mode", mode, "--json"]
        env = None
    else:
        argv = [sys.executable, "-c", PY_SNIPPET, trace, str(machine), mode]
        env = dict(os.environ, PYTHONPATH=str(PYDIR) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    m = measure(argv, timeout_s=timeout, mem_limit_bytes=mem_limit, env=env)
    rep = None
    if m.status == "ok":
        try:
            text = m.stdout
            rep = json.loads(text[text.index("{"):])
        except ValueError:
            m.status = "error"
    return rep, m


def record(name: str, gen: str, ranks: int, info: dict, rep: dict | None, m, runner: str, mode: str,
           machine: str, rep_walls: list[float], core_mtime: str | None = None) -> dict:
    r = {"workload": name, "generator": gen, "ranks": ranks, "params": info["params"], "runner": runner,
         "machine": machine, "mode": mode, "status": m.status, "rows": info["rows"],
         "mpi_ops": info["mpi_ops"], "trace_file_bytes": info["file_bytes"],
         "gen_wall_s": info.get("gen_wall_s"), "gen_max_rss_bytes": info.get("gen_max_rss_bytes"),
         "process_wall_s": round(m.wall_s, 3), "cpu_s": round(m.cpu_s, 3), "user_s": m.user_s,
         "sys_s": m.sys_s, "max_rss_bytes": m.max_rss_bytes,
         "bytes_per_rank": round(m.max_rss_bytes / ranks, 1) if m.max_rss_bytes else None,
         "core_mtime": core_mtime if runner == "core" else None,
         "date": time.strftime("%Y-%m-%dT%H:%M:%S")}
    if m.status != "ok":
        r["error_tail"] = (m.stderr or "")[-1500:]
    if rep:
        e = rep["engine"]
        wall = min(rep_walls) if rep_walls else e["wall_s"]
        r.update({
            "core_build": e.get("build"),
            "nodes": rep.get("nodes"), "events": e["events"], "ops": e["ops"], "engine_wall_s": wall,
            "engine_wall_s_all": rep_walls, "ops_per_s": e["ops"] / wall if wall else None,
            "mpi_ops_per_s": info["mpi_ops"] / wall if wall else None,
            "events_per_s": e["events"] / wall if wall else None,
            "ops_per_cpu_s": e["ops"] / m.cpu_s if m.cpu_s else None,
            "mpi_ops_per_cpu_s": info["mpi_ops"] / m.cpu_s if m.cpu_s else None,
            "flow_solves": e.get("flow_solves"), "flow_solves_component": e.get("flow_solves_component"), "flow_solve_rounds": e.get("flow_solve_rounds"), "flow_rerates": e.get("flow_rerates"), "flow_rerates_incremental": e.get("flow_rerates_incremental"), "flow_rerate_bottlenecks": e.get("flow_rerate_bottlenecks"), "flow_bottleneck_moves": e.get("flow_bottleneck_moves"), "peak_flows": e.get("peak_flows"), "links": e.get("links"),
            "messages": e.get("messages"), "sim_total_time_s": rep.get("total_time_s"),
            "sim_comm_time_s": rep.get("comm_time_s"),
        })
    return r


def key_of(r: dict) -> tuple:
    # rows of a profile-guided core (`make pgo`) sit beside the plain build's; rows from before the
    # build was recorded came from plain release builds
    return (r["workload"], r["ranks"], r["runner"], r["mode"], r["machine"], r.get("core_build") or "release")


def table(results: list[dict]) -> str:
    rows = []
    base: dict[str, dict] = {}
    for r in sorted(results, key=lambda r: (r["workload"], r["machine"], r["runner"], r["ranks"])):
        if r["status"] == "ok" and r.get("max_rss_bytes"):
            b = base.setdefault((r["workload"], r["machine"], r["runner"]), r)
            marg = ((r["max_rss_bytes"] - b["max_rss_bytes"]) / (r["ranks"] - b["ranks"])
                    if r["ranks"] > b["ranks"] else None)
        else:
            marg = None
        status = r["status"]
        if status != "ok":
            status += f" after {r['process_wall_s']:.0f} s"
        rows.append([
            r["workload"] + (" (pgo)" if r.get("core_build") == "pgo" else ""), r["machine"], f"{r['ranks']:,}", fmt_int(r.get("mpi_ops")), fmt_int(r.get("events")),
            f"{r['engine_wall_s']:.2f}" if r.get("engine_wall_s") is not None else "-",
            f"{r['cpu_s']:.1f}", fmt_rate(r.get("mpi_ops_per_s")), fmt_rate(r.get("mpi_ops_per_cpu_s")),
            fmt_rate(r.get("events_per_s")), fmt_bytes(r.get("max_rss_bytes")),
            fmt_bytes(r.get("bytes_per_rank")), fmt_bytes(marg) if marg is not None else "-",
            fmt_int(r.get("messages")), fmt_int(r.get("flow_solves")), fmt_int(r.get("peak_flows")), status,
        ])
    return markdown_table(["workload", "machine", "ranks", "MPI ops", "events", "sim wall s", "CPU s", "MPI ops/s",
                           "MPI ops/CPU-s", "events/s", "peak RSS", "B/rank", "marginal B/rank",
                           "messages", "flow solves", "peak flows", "status"], rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-w", "--workloads", default="halo,allreduce,alltoall",
                    help="comma list of: " + ", ".join(WORKLOADS))
    ap.add_argument("-s", "--sizes", default=",".join(map(str, DEFAULT_SIZES)),
                    help="comma list of rank counts (1k = 1024, 1M = 1048576)")
    ap.add_argument("--alltoall-max", type=parse_count, default=ALLTOALL_MAX_DEFAULT,
                    help="largest rank count for alltoall (O(p^2) messages; default %(default)s)")
    ap.add_argument("-p", "--param", action="append", default=[],
                    help="WORKLOAD.KEY=VALUE generator parameter override (e.g. halo.iterations=20)")
    ap.add_argument("--iterations", type=int, help="iterations of every workload")
    ap.add_argument("-m", "--machine", default="lassen", help="preset name or machine TOML (default lassen)")
    ap.add_argument("--mode", default="gpudirect", choices=["as-traced", "hostcopy", "gpudirect"])
    ap.add_argument("--sharing", choices=["max-min", "max-min-full", "bottleneck"],
                    help="override the machine's network.sharing (how flows share links; the presets use "
                         "exact max-min); the run uses a derived machine file named MACHINE+sharing=...")
    ap.add_argument("--runner", default="core", choices=["core", "python"],
                    help="core: the pure-Rust g2gsim-core binary; python: g2gsim.simulate in a subprocess")
    ap.add_argument("--core", type=Path, default=CORE, help="g2gsim-core binary (default %(default)s)")
    ap.add_argument("--reps", type=int, default=1, help="repetitions (the fastest engine wall is kept)")
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds per simulation (default %(default)s)")
    ap.add_argument("--mem-limit", type=float, default=21.0, help="GiB of resident memory (default %(default)s)")
    ap.add_argument("--trace-dir", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "g2gsim-speed",
                    help="where generated traces are kept for reuse (default %(default)s)")
    ap.add_argument("--clean", action="store_true", help="delete each generated trace after its run")
    ap.add_argument("--out", type=Path, default=RESULTS, help="JSON results (merged; default %(default)s)")
    ap.add_argument("--table", action="store_true", help="only print the table of --out")
    a = ap.parse_args(argv)

    data = load_json(a.out) or {"results": []}
    if a.table:
        print(table(data.get("results", [])))
        return 0
    machine = Path(a.machine) if a.machine.endswith(".toml") else PRESETS / f"{a.machine}.toml"
    if not machine.exists():
        ap.error(f"machine {a.machine}: no preset {machine}")
    if a.sharing:
        machine = derived_machine(machine, {"network": {"sharing": a.sharing}}, a.trace_dir,
                                  f"{machine.stem}+sharing={a.sharing}")
    if a.runner == "core" and not a.core.exists():
        ap.error(f"{a.core} not found: build it with  cargo build --release -p g2g-mpi --bin g2gsim-core")
    names = [w.strip() for w in a.workloads.split(",") if w.strip()]
    for n in names:
        if n not in WORKLOADS:
            ap.error(f"unknown workload {n!r}; known: {', '.join(WORKLOADS)}")
    sizes = [parse_count(s) for s in a.sizes.split(",") if s.strip()]
    overrides: dict[str, dict] = {}
    for p in a.param:
        k, _, v = p.partition("=")
        w, _, key = k.partition(".")
        if not key or w not in WORKLOADS:
            ap.error(f"-p {p!r}: expected WORKLOAD.KEY=VALUE with WORKLOAD one of {', '.join(WORKLOADS)}")
        try:
            val = json.loads(v)
        except ValueError:
            val = v
        overrides.setdefault(w, {})[key] = val
    mem_limit = int(a.mem_limit * (1 << 30))
    data["host"] = host_info()
    data["core"] = {"path": str(a.core), "mtime": (time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(a.core.stat().st_mtime))
                                                   if a.core.exists() else None)}
    results = {key_of(r): r for r in data.get("results", [])}
    new: list[dict] = []

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    for name in names:
        gen, params = WORKLOADS[name]
        params = dict(params)
        if a.iterations:
            params["iterations"] = a.iterations
        params.update(overrides.get(name, {}))
        for ranks in sizes:
            if name == "alltoall" and ranks > a.alltoall_max:
                log(f"skip alltoall at {ranks:,} ranks (> --alltoall-max {a.alltoall_max:,})")
                continue
            info = ensure_trace(a.trace_dir, gen, ranks, params, mem_limit, log)
            log(f"  {name} {ranks:,} ranks: {info['rows']:,} rows, {info['mpi_ops']:,} MPI ops; simulating "
                f"({a.runner}, {a.mode}, {machine.stem})")
            walls: list[float] = []
            rep = m = None
            for _ in range(max(1, a.reps)):
                rep_i, m_i = run_one(a.runner, info["path"], machine, a.mode, a.timeout, mem_limit, a.core)
                if rep_i:
                    walls.append(rep_i["engine"]["wall_s"])
                if m is None or (m_i.status == "ok" and (rep is None or m_i.max_rss_bytes >= m.max_rss_bytes)):
                    rep, m = rep_i, m_i
                if m_i.status != "ok":
                    break
            r = record(name, gen, ranks, info, rep, m, a.runner, a.mode, machine.stem, walls,
                       data["core"]["mtime"])
            results[key_of(r)] = r
            new.append(r)
            if r["status"] == "ok":
                log(f"    {r['mpi_ops_per_s']:,.0f} MPI ops/s, {r['events_per_s']:,.0f} events/s, "
                    f"wall {r['engine_wall_s']:.2f} s, CPU {r['cpu_s']:.1f} s, RSS {fmt_bytes(r['max_rss_bytes'])}")
            else:
                log(f"    {r['status']} after {r['process_wall_s']:.0f} s (RSS {fmt_bytes(r['max_rss_bytes'])})"
                    + (f": {r.get('error_tail', '').strip()[-300:]}" if r["status"] == "error" else ""))
            data["results"] = sorted(results.values(), key=lambda r: (r["workload"], r["runner"], r["ranks"]))
            save_json(a.out, data)
            if a.clean:
                Path(info["path"]).unlink(missing_ok=True)
                Path(info["path"]).with_suffix(".json").unlink(missing_ok=True)
    print(table(new))
    print(f"\n(JSON: {a.out}; all stored results: python3 {Path(__file__).relative_to(REPO)} --table)")
    return 0 if all(r["status"] == "ok" for r in new) else 1


if __name__ == "__main__":
    sys.exit(main())

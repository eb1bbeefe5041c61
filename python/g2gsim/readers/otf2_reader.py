"""Convert a Score-P OTF2 archive into a g2gsim ``Trace``.

``read_otf2(anchor)`` reads the global definitions (``otf2_defs``), converts the ranks in parallel
worker processes (``otf2_events``: each worker reads the event files of a subset of the ranks with
OTF2's local event readers) and merges the per-rank columns into one table.

Mapping (see docs/trace-format.md for the target semantics):

* ``MpiSend``/``MpiIsend``/``MpiRecv`` -> ``Send``/``Isend``/``Recv`` (``Ssend``/``Bsend``/``Rsend``/
  ``Issend`` when the enclosing region says so); ``MpiIrecvRequest`` -> ``Irecv`` posted there, with
  peer/tag/size taken from the matching ``MpiIrecv`` completion record; completions
  (``MpiIsendComplete``, ``MpiIrecv``, ``NonBlockingCollectiveComplete``) -> ``Wait`` on the request,
  or one ``Waitall`` when several complete in one ``MPI_Wait*``/``MPI_Test*`` region (a successful
  test is a wait); ``MpiRequestTest`` without completion -> ``Test``/``Testall``/...;
  ``MpiRequestCancelled`` drops the cancelled request's row; ``MPI_Sendrecv`` regions -> ``Sendrecv``;
  ``MpiProbe`` + ``MpiMrecv``/``MpiImrecv*`` -> ``Recv``/``Irecv``.
* ``MpiCollectiveEnd`` -> the collective named by the enclosing region (the record's operation when
  the region is not a collective), with comm, root and Score-P's per-rank byte counts converted to
  the per-operation buffer sizes of the format (``otf2_events.coll_sizes``); ``CREATE_HANDLE`` /
  ``DESTROY_HANDLE`` (communicator management, MPI_Init/Finalize in Score-P 8+) carry no data.
  ``NonBlockingCollectiveRequest``/``Complete`` -> ``Iallreduce`` etc. completed by a ``Wait``.
* ``MPI_Init``/``MPI_Finalize`` regions -> ``Init``/``Finalize`` markers; time between leaving the
  MPI call of one operation and entering the next -> ``Compute`` (measurement-off time excluded).
* Communicators: the MPI ``COMM_LOCATIONS`` group defines the world ranks; ``COMM_GROUP`` groups list
  world ranks; peers and roots in records are communicator ranks and stay so.  ``MPI_COMM_SELF``
  (an empty ``COMM_SELF`` group) becomes one communicator per rank that uses it.
* GPU stream locations (Score-P CUDA/HIP): copies are ``RmaGet`` (host-to-device, or device-to-device
  when the remote is a GPU location) and ``RmaPut`` (device-to-host) followed by
  ``RmaOpCompleteBlocking``; they become ``Memcpy`` rows of the owning process's rank, placed where
  the host issued them (``cudaMemcpy*``/``hipMemcpy*`` API region, or the call with the same
  ``g2g:corr`` in our tracer's archives; synchronous ones get stream -1).  Kernels are counted into
  ``gpu_kernels={...}`` in ``Trace.source``.
* GPU streams (docs/gpu-streams.md): host ``cudaLaunchKernel``/``cuLaunchKernel``/``hipLaunchKernel``
  regions -> ``Kernel`` where the launch returned, with the duration, stream and priority of the
  kernel it ran (joined by ``g2g:corr``, else Score-P's ``callsite id``, else in order);
  ``cuda/cu/hip`` ``StreamSynchronize``/``DeviceSynchronize`` (``cuCtxSynchronize``)/
  ``EventSynchronize``/``EventRecord``/``StreamWaitEvent`` regions -> the operations of the same
  name at the call (stream and event ids from ``g2g:stream``/``g2g:event``; where Score-P gives
  none, a sync's stream is inferred from the kernels it waited for, an event sync becomes a stream
  sync, and records/waits are dropped); ``*StreamCreateWithPriority`` gives stream priorities.  The
  time inside a synchronising call is not Compute (the model recomputes the wait).  GPU API calls
  inside MPI calls (the MPI library's own) are ignored, and so are their kernels.  A rank with
  kernels but no launch calls keeps the old behaviour (kernels counted only).
* ``mem_space``: ``assume_buffers="traced"`` reads the ``g2g:mem_space`` attribute of message records
  (string host/device/managed/unknown, or uint8 index 0..3 in that order; absent -> host);
  ``"host"``/``"device"`` assume; ``"infer"`` marks a buffer device-resident when a D2H copy of the
  same size precedes its send (or an H2D follows its receive's completion) with no MPI call of that
  size in the opposite direction in between (a batch of k copies pairs with k sends, in order).

Errors raise ``TraceError`` naming the file, the location/rank and the event index (and time).
"""
from __future__ import annotations

import json
import multiprocessing as mp
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pyarrow as pa

from ..trace import COPY_KINDS, MEM_SPACES, SCHEMA, Comm, Trace, TraceError
from .otf2_defs import OTF2Plan, find_anchor, read_plan
from .otf2_events import OP_NAMES, convert_ranks
from .rules import check_matching, report_matching  # noqa: F401  (check_matching: the public name)

BUFFER_MODES = {"traced": "traced", "host": "assumed-host", "device": "assumed-device",
                "infer": "inferred"}
SERIAL_BELOW_EVENTS = 200_000      # smaller archives are read in-process (no worker start-up)
TASKS_PER_WORKER = 4

__all__ = ["read_otf2", "check_matching"]


def read_otf2(anchor: str | Path, assume_buffers: str = "traced", processes: int | None = None,
              progress: bool = False, strict: bool = False) -> Trace:
    """Read the OTF2 archive ``anchor`` (the .otf2 file or its directory) into a ``Trace``.

    ``processes``: worker processes (default: the CPUs this process may use, as
    ``os.cpu_count()``; 1 reads in this process; archives under 200k events are always read here).
    ``strict``: raise ``TraceError`` on unmatched point-to-point messages instead of warning.
    """
    if assume_buffers not in BUFFER_MODES:
        raise ValueError(f"assume_buffers must be one of {sorted(BUFFER_MODES)}, "
                         f"not {assume_buffers!r}")
    t_begin = time.perf_counter()
    path = find_anchor(anchor)
    plan = read_plan(path)
    if plan.nranks == 0:
        raise TraceError(f"{path}: no process (CPU location) is defined in this archive")
    evt_dir = Path(os.path.splitext(plan.anchor)[0])
    if not evt_dir.is_dir():
        raise TraceError(f"{path}: the archive directory {evt_dir} with the event files is missing")
    if not any(evt_dir.glob("*.sion")):              # POSIX substrate: one file per location
        for r, loc in enumerate(plan.rank_cpu_loc):
            if plan.loc_nevents.get(loc, 0) and not (evt_dir / f"{loc}.evt").exists():
                raise TraceError(f"{path}: location {loc} (rank {r}): event file {loc}.evt is "
                                 f"missing")

    tasks = _partition(plan, processes)
    nproc = _nproc(processes)
    results = []
    t_read = time.perf_counter()
    if nproc == 1 or len(tasks) == 1 or plan.read_events < SERIAL_BELOW_EVENTS:
        for i, ranks in enumerate(tasks):
            results.append(convert_ranks(plan, ranks, assume_buffers))
            if progress:
                _progress(i + 1, len(tasks), results, t_read)
    else:
        ctx = _mp_context()
        with warnings.catch_warnings():
            # Python >= 3.12 warns about fork() in a multi-threaded process; the workers use
            # nothing a thread of the parent could hold (see _mp_context)
            warnings.filterwarnings("ignore", message=".*fork.*", category=DeprecationWarning)
            pool = ctx.Pool(min(nproc, len(tasks)), initializer=_init_worker,
                            initargs=(plan, assume_buffers))
        with pool:
            for res in pool.imap_unordered(_run_task, tasks):
                if isinstance(res, TraceError):
                    pool.terminate()
                    raise res
                results.append(res)
                if progress:
                    _progress(len(results), len(tasks), results, t_read)
    t_conv = time.perf_counter()
    trace = _assemble(plan, results, assume_buffers)
    stats = trace.import_stats
    if stats["mpi_records"] == 0 and stats["gpu_kernels"] == 0 and stats["memcpys"] == 0:
        raise TraceError(f"{path}: the archive has no MPI records (and no GPU activity): nothing "
                         f"to simulate ({stats['events']} events read on {plan.nranks} "
                         f"process(es))")
    stats["seconds_read"] = t_conv - t_read
    stats["seconds_total"] = time.perf_counter() - t_begin
    stats["events_per_s"] = stats["events"] / max(stats["seconds_read"], 1e-9)
    stats["events_per_cpu_s"] = stats["events"] / max(stats.get("cpu_s", 0.0), 1e-9)
    stats["unmatched"] = len(report_matching(trace, path, strict=strict))
    return trace


# ------------------------------------------------------------------------------------ workers
_W_PLAN: OTF2Plan | None = None
_W_MODE = "traced"


def _init_worker(plan: OTF2Plan, mode: str) -> None:
    global _W_PLAN, _W_MODE
    _W_PLAN, _W_MODE = plan, mode


def _mp_context():
    """``fork`` where available: the workers need only the plan and the otf2 library, and a fresh
    interpreter (spawn/forkserver) would re-import ``__main__``, which breaks for stdin/REPL
    callers.  The workers touch no pyarrow state of the parent."""
    methods = mp.get_all_start_methods()
    return mp.get_context("fork" if "fork" in methods else "spawn")


def _run_task(ranks: list[int]):
    try:
        assert _W_PLAN is not None             # set by _init_worker
        return convert_ranks(_W_PLAN, ranks, _W_MODE)
    except TraceError as e:
        return e


def _nproc(processes: int | None) -> int:
    """Worker count: ``processes``, else the CPUs this process may run on (os.cpu_count())."""
    if processes is not None:
        return max(1, int(processes))
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _partition(plan: OTF2Plan, processes: int | None) -> list[list[int]]:
    """Contiguous rank chunks of about equal event counts, a few per worker."""
    nproc = _nproc(processes)
    ntasks = min(plan.nranks, nproc * TASKS_PER_WORKER) if nproc > 1 else 1
    if plan.read_events < SERIAL_BELOW_EVENTS:
        ntasks = 1
    weights = [plan.rank_events(r) + 1 for r in range(plan.nranks)]
    target = sum(weights) / max(ntasks, 1)
    tasks: list[list[int]] = []
    cur: list[int] = []
    acc = 0.0
    for r, w in enumerate(weights):
        cur.append(r)
        acc += w
        if acc >= target and len(tasks) < ntasks - 1:
            tasks.append(cur)
            cur, acc = [], 0.0
    if cur:
        tasks.append(cur)
    return tasks


def _progress(done: int, total: int, results: list, t0: float) -> None:
    ev = sum(r["stats"].get("events", 0) for r in results)
    dt = max(time.perf_counter() - t0, 1e-9)
    print(f"otf2: {done}/{total} chunks, {ev:,} events, {ev / dt:,.0f} events/s",
          file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------------ merge
def _assemble(plan: OTF2Plan, results: list[dict], mode: str) -> Trace:
    results = sorted(results, key=lambda r: int(r["rank"][0]) if len(r["rank"]) else 1 << 31)
    cat = lambda k: np.concatenate([r[k] for r in results]) if results else np.zeros(0)  # noqa
    n = sum(len(r["rank"]) for r in results)
    op_codes = cat("op").astype(np.int32, copy=False)
    op_dict = pa.array(OP_NAMES, type=pa.string())
    op_arr = pa.DictionaryArray.from_arrays(pa.array(op_codes, type=pa.int32()), op_dict)
    mem = cat("mem").astype(np.int32, copy=False)
    mem_arr = pa.DictionaryArray.from_arrays(pa.array(mem, type=pa.int32()),
                                             pa.array(list(MEM_SPACES)))
    ck = cat("copy_kind").astype(np.int32, copy=False)
    ck_arr = pa.DictionaryArray.from_arrays(pa.array(ck, type=pa.int32(), mask=ck < 0),
                                            pa.array(list(COPY_KINDS)))
    reqs = _list_array(cat("reqs_len").astype(np.int64, copy=False),
                       np.concatenate([r["reqs_val"] for r in results]) if results
                       else np.zeros(0, np.uint64))
    # every numeric column comes from the workers with its schema dtype; the others are built here
    built = {
        "op": op_arr.cast(pa.string()),
        "reqs": reqs,
        "counts_bytes": pa.nulls(n, type=pa.list_(pa.uint64())),
        "recv_counts_bytes": pa.nulls(n, type=pa.list_(pa.uint64())),
        "mem_space": mem_arr.cast(pa.string()),
        "copy_kind": ck_arr.cast(pa.string()),
        "callsite": pa.nulls(n, type=pa.string()),
    }
    arrays = {f.name: built[f.name] if f.name in built
              else pa.array(cat(f.name).astype(f.type.to_pandas_dtype(), copy=False)) for f in SCHEMA}
    table = pa.Table.from_arrays([arrays[f.name] for f in SCHEMA], schema=SCHEMA)

    # communicators: the defined ones plus each rank's MPI_COMM_SELF that is used
    comms = list(plan.comms)
    used = set(np.unique(cat("comm_id")).tolist()) if n else set()
    for _ref, (base, name) in sorted(plan.self_comms.items()):
        for r in range(plan.nranks):
            if base + r in used:
                comms.append(Comm(base + r, f"{name} (rank {r})", [r]))

    stats: dict = {}
    for part in results:
        for k, v in part["stats"].items():
            stats[k] = stats.get(k, 0) + v
    stats["tasks"] = len(results)
    kern = [k for r in results for k in r["kernels"]]
    res = plan.timer_resolution
    gk = {"count": int(sum(k[1] for k in kern)),
          "total_ns": int(round(sum(k[2] for k in kern) * 1e9 / res)),
          "gpu_locations": int(sum(len(g) for g in plan.rank_gpu_locs)),
          "per_rank": {str(k[0]): k[1] for k in sorted(kern) if k[1]}}
    stats.setdefault("events", 0)
    stats.setdefault("mpi_records", 0)
    stats.setdefault("memcpys", 0)
    stats["gpu_kernels"] = gk["count"]
    if plan.unowned_gpu_locations:
        stats["unowned_gpu_locations"] = plan.unowned_gpu_locations
    stats["rows"] = n
    notes = {k: stats[k] for k in ("cancelled", "incomplete_requests", "unknown_requests",
                                   "irecv_without_request", "memcpy_inside_mpi",
                                   "unknown_records", "inferred_device",
                                   "unowned_gpu_locations", "nbc_without_request",
                                   "unclosed_mpi_regions", "gpu_calls_outside_mpi",
                                   "launches_without_kernel", "kernels_without_launch",
                                   "gpu_calls_without_ids", "inferred_sync_streams")
             if stats.get(k)}
    source = (f"otf2_reader: {plan.anchor} ({plan.creator or 'unknown creator'}, OTF2 "
              f"{plan.version}); {plan.nranks} ranks; {stats['events']} events; "
              f"gpu_kernels={json.dumps(gk, separators=(',', ':'))}; "
              f"memcpys={stats['memcpys']}"
              + (f"; notes={json.dumps(notes, separators=(',', ':'))}" if notes else ""))
    # "traced" only when the archive has the buffer-space attribute (our tracer); Score-P records
    # none: its host default is an assumption, and the report says so (docs/semantics.md)
    buffers = BUFFER_MODES[mode]
    if mode == "traced" and plan.mem_attr is None:
        buffers = "assumed-host"
    trace = Trace(table=table, nranks=plan.nranks, comms=comms, source=source, buffers=buffers)
    trace.import_stats = stats
    return trace


def _list_array(lens: np.ndarray, values: np.ndarray) -> pa.Array:
    """A list<uint64> array from per-row lengths (-1: null) and the values of all rows in order."""
    offsets = np.zeros(len(lens) + 1, dtype=np.int32)
    np.cumsum(np.maximum(lens, 0), out=offsets[1:])
    null = lens < 0
    arr = pa.ListArray.from_arrays(pa.array(offsets, type=pa.int32()),
                                   pa.array(values.astype(np.uint64), type=pa.uint64()),
                                   mask=pa.array(null) if null.any() else None)
    return arr.cast(pa.list_(pa.uint64()))

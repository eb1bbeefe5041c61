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
import pyarrow.compute as pc

from ..trace import ANY_SOURCE, ANY_TAG, COPY_KINDS, MEM_SPACES, PROC_NULL, SCHEMA, Comm, Trace, \
    TraceError
from .otf2_defs import OTF2Plan, find_anchor, read_plan
from .otf2_events import OP_NAMES, convert_ranks

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
    problems = check_matching(trace, strict=strict)
    stats["unmatched"] = len(problems)
    if problems:
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        warnings.warn(f"{path}: {len(problems)} point-to-point matching problem(s): "
                      + "; ".join(problems[:5]) + more, stacklevel=2)
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
    tasks, cur, acc = [], [], 0.0
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
    for ref, (base, name) in sorted(plan.self_comms.items()):
        for r in range(plan.nranks):
            if base + r in used:
                comms.append(Comm(base + r, f"{name} (rank {r})", [r]))

    stats: dict = {}
    for r in results:
        for k, v in r["stats"].items():
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


# ------------------------------------------------------------------------------------ matching
_SENDS = ("Send", "Ssend", "Bsend", "Rsend", "Isend", "Issend")
_RECVS = ("Recv", "Irecv")


def check_matching(trace: Trace, strict: bool = False) -> list[str]:
    """Point-to-point matching check: per (comm, source, destination, tag), the k-th send must
    meet the k-th receive (program order).  Returns one message per unmatched send or receive and
    per truncated message (send larger than the posted receive), naming rank, peer, tag and time;
    with ``strict`` a non-empty result raises ``TraceError``.  Wildcard receives (ANY_SOURCE /
    ANY_TAG) take the earliest compatible send left over by the exact matching."""
    t = trace.table
    where = str(trace.path) if trace.path else "<trace>"
    opcol = t.column("op")
    is_send, is_recv, is_sr = (_op_mask(opcol, names) for names in (_SENDS, _RECVS, ("Sendrecv",)))
    if not (is_send.any() or is_recv.any() or is_sr.any()):
        return []
    col = {k: t.column(k).to_numpy() for k in ("rank", "seq", "peer", "tag", "comm_id", "bytes",
                                                "recv_bytes", "recv_peer", "recv_tag")}
    tstart = t.column("t_start_ns").to_numpy(zero_copy_only=False)
    members = {c.id: (np.arange(trace.nranks) if c.members is None else np.asarray(c.members))
               for c in trace.comms}

    def to_world(comm, peer):
        out = np.full(len(peer), -100, dtype=np.int64)
        for cid in np.unique(comm):
            m = comm == cid
            mem = members.get(int(cid))
            p = peer[m]
            ok = (p >= 0) & (mem is not None) & (p < (len(mem) if mem is not None else 0))
            w = np.full(len(p), -100, dtype=np.int64)
            if mem is not None:
                w[ok] = mem[p[ok]]
            w[p == ANY_SOURCE] = ANY_SOURCE
            w[p == PROC_NULL] = PROC_NULL
            out[m] = w
        return out

    # sends: (comm, src, dst, tag, order, bytes, rank, seq, time)
    si = np.flatnonzero(is_send | is_sr)
    s_comm = col["comm_id"][si].astype(np.int64)
    s_dst = to_world(s_comm, col["peer"][si].astype(np.int64))
    sends = dict(comm=s_comm, src=col["rank"][si].astype(np.int64), dst=s_dst,
                 tag=col["tag"][si].astype(np.int64), nbytes=col["bytes"][si].astype(np.int64),
                 rank=col["rank"][si], seq=col["seq"][si], t=tstart[si],
                 peer=col["peer"][si])
    ri_plain = np.flatnonzero(is_recv)
    ri_sr = np.flatnonzero(is_sr)
    r_comm = np.concatenate([col["comm_id"][ri_plain], col["comm_id"][ri_sr]]).astype(np.int64)
    r_peer = np.concatenate([col["peer"][ri_plain], col["recv_peer"][ri_sr]]).astype(np.int64)
    r_tag = np.concatenate([col["tag"][ri_plain], col["recv_tag"][ri_sr]]).astype(np.int64)
    ri = np.concatenate([ri_plain, ri_sr])
    recvs = dict(comm=r_comm, src=to_world(r_comm, r_peer), dst=col["rank"][ri].astype(np.int64),
                 tag=r_tag, nbytes=col["recv_bytes"][ri].astype(np.int64), rank=col["rank"][ri],
                 seq=col["seq"][ri], t=tstart[ri], peer=r_peer)
    problems: list[str] = []
    # drop PROC_NULL and invalid peers (reported)
    for side, d, key in (("send", sends, "dst"), ("receive", recvs, "src")):
        bad = d[key] == -100
        for i in np.flatnonzero(bad)[:50]:
            problems.append(f"{side} at rank {d['rank'][i]} (seq {d['seq'][i]}, t={d['t'][i]} ns): "
                            f"peer {d['peer'][i]} is not a rank of communicator {d['comm'][i]}")
        keep = (d[key] != -100) & (d[key] != PROC_NULL)
        for k in d:
            d[k] = d[k][keep]

    wild = (recvs["src"] == ANY_SOURCE) | (recvs["tag"] == ANY_TAG)
    exact = {k: v[~wild] for k, v in recvs.items()}
    wildr = {k: v[wild] for k, v in recvs.items()}
    # program order within (comm, src, dst, tag): sort by key then by seq.  Fast path: the four
    # keys packed into one int64 group code (order-preserving), one stable sort per side and a
    # binary-search join; the general path (codes too wide) sorts and joins with lexsort.
    fast = _match_packed(sends, exact)
    if fast is not None:
        so, ro, s_matched, r_matched, si_m, ri_m = fast
        _truncated(problems, sends, exact, so, ro, si_m, ri_m)
    else:
        so, ro, s_matched, r_matched = _match_lexsort(problems, sends, exact)
    _wild_and_report(problems, sends, exact, wildr, so, ro, s_matched, r_matched)
    if strict and problems:
        raise TraceError(f"{where}: {len(problems)} point-to-point matching problem(s): "
                         + "; ".join(problems[:10]))
    return problems


def _op_mask(col, names) -> np.ndarray:
    """Rows of the string column ``col`` whose value is one of ``names`` (bool numpy array)."""
    m = pc.is_in(col, value_set=pa.array(list(names), type=pa.string()))
    return np.asarray(pc.fill_null(m, False).to_numpy(zero_copy_only=False), dtype=bool)


def _pack(cols: list[list[np.ndarray]]):
    """Order-preserving int64 codes of the tuples (primary key first) of several sides at once:
    ``cols[j]`` holds key j of each side.  None when the codes do not fit in 62 bits."""
    nsides = len(cols[0])
    codes = [np.zeros(len(cols[0][i]), dtype=np.int64) for i in range(nsides)]
    total = 1
    for key in cols:
        vals = [v for v in key if len(v)]
        if not vals:
            continue
        lo = min(int(v.min()) for v in vals)
        hi = max(int(v.max()) for v in vals)
        r = hi - lo + 1
        total *= r
        if total >= 1 << 62:
            return None
        for i in range(nsides):
            codes[i] = codes[i] * r + (key[i].astype(np.int64) - lo)
    return codes, total


def _match_packed(sends: dict, exact: dict):
    """The k-th send of each (comm, src, dst, tag) meets the k-th exact receive: returns (send
    order, receive order, matched flags of both in those orders, matched pairs as positions in
    those orders) or None when the keys are too wide to pack."""
    names = ("comm", "src", "dst", "tag")
    p = _pack([[sends[k], exact[k]] for k in names])
    if p is None:
        return None
    (gs, gr), ngroups = p
    out = []
    kmax = 0
    for g, d in ((gs, sends), (gr, exact)):
        n = len(g)
        seq = d["seq"].astype(np.int64)
        smax = int(seq.max()) + 1 if n else 1
        if ngroups * smax >= 1 << 62:
            return None
        o = np.argsort(g * smax + seq, kind="stable")
        gsorted = g[o]
        if n:
            new = np.ones(n, dtype=bool)
            new[1:] = gsorted[1:] != gsorted[:-1]
            grp = np.cumsum(new) - 1
            start = np.flatnonzero(new)
            k = np.arange(n) - start[grp]
            kmax = max(kmax, int(k.max()) + 1)
        else:
            k = np.zeros(0, dtype=np.int64)
        out.append((o, gsorted, k))
    (so, sg, sk), (ro, rg, rk) = out
    if ngroups * max(kmax, 1) >= 1 << 62:
        return None
    js = sg * kmax + sk                     # strictly increasing (group, k) codes
    jr = rg * kmax + rk
    ns_, nr_ = len(js), len(jr)
    s_matched = np.zeros(ns_, dtype=bool)
    r_matched = np.zeros(nr_, dtype=bool)
    if ns_ and nr_:
        pos = np.searchsorted(js, jr)
        posc = np.minimum(pos, ns_ - 1)
        hit = (pos < ns_) & (js[posc] == jr)
        ri_m = np.flatnonzero(hit)
        si_m = pos[hit]
    else:
        si_m = ri_m = np.zeros(0, dtype=np.int64)
    s_matched[si_m] = True
    r_matched[ri_m] = True
    return so, ro, s_matched, r_matched, si_m, ri_m


def _truncated(problems, sends, exact, so, ro, si_m, ri_m) -> None:
    sb = sends["nbytes"][so[si_m]]
    rb = exact["nbytes"][ro[ri_m]]
    for q in np.flatnonzero(sb > rb)[:100]:
        i, j = so[si_m[q]], ro[ri_m[q]]
        problems.append(
            f"truncated message: rank {sends['rank'][i]} -> rank {exact['rank'][j]} "
            f"(comm {sends['comm'][i]}, tag {sends['tag'][i]}): {sb[q]} bytes sent "
            f"(seq {sends['seq'][i]}) into a {rb[q]}-byte receive (seq {exact['seq'][j]})")


def _match_lexsort(problems, sends, exact):
    """The general (unpacked) matching of ``check_matching``."""
    def order_key(d):
        # program order within (comm, src, dst, tag): sort by key then by (rank, seq)
        o = np.lexsort((d["seq"], d["tag"], d["dst"], d["src"], d["comm"]))
        return o

    def ranked(d):
        o = order_key(d)
        keys = np.stack([d["comm"][o], d["src"][o], d["dst"][o], d["tag"][o]], axis=1)
        if len(o):
            new = np.ones(len(o), dtype=bool)
            new[1:] = np.any(keys[1:] != keys[:-1], axis=1)
            grp = np.cumsum(new) - 1
            start = np.flatnonzero(new)
            k = np.arange(len(o)) - start[grp]
        else:
            k = np.zeros(0, dtype=np.int64)
        return o, keys, k

    so, skeys, sk = ranked(sends)
    ro, rkeys, rk = ranked(exact)
    # join on (key, k): sort both sides together; a match is an adjacent (send, receive) pair
    ns_, nr_ = len(so), len(ro)
    allk = np.concatenate([np.column_stack([skeys, sk]) if ns_ else np.zeros((0, 5), np.int64),
                           np.column_stack([rkeys, rk]) if nr_ else np.zeros((0, 5), np.int64)])
    side = np.concatenate([np.zeros(ns_, np.int64), np.ones(nr_, np.int64)])
    idx = np.concatenate([np.arange(ns_), np.arange(nr_)])
    o = np.lexsort((side, allk[:, 4], allk[:, 3], allk[:, 2], allk[:, 1], allk[:, 0]))
    s_matched = np.zeros(ns_, dtype=bool)
    r_matched = np.zeros(nr_, dtype=bool)
    if len(o) > 1:
        ks = allk[o]
        pair = np.all(ks[1:] == ks[:-1], axis=1) & (side[o][:-1] == 0) & (side[o][1:] == 1)
        pi = np.flatnonzero(pair)
        si_m, ri_m = idx[o][pi], idx[o][pi + 1]
        s_matched[si_m] = True
        r_matched[ri_m] = True
        _truncated(problems, sends, exact, so, ro, si_m, ri_m)
    return so, ro, s_matched, r_matched


def _wild_and_report(problems, sends, exact, wildr, so, ro, s_matched, r_matched) -> None:
    # wildcard receives take the earliest compatible unmatched send (by send time)
    left = [so[i] for i in np.flatnonzero(~s_matched)]
    wo = np.lexsort((wildr["seq"], wildr["dst"]))
    w_matched = np.zeros(len(wo), dtype=bool)
    if len(wo):
        left.sort(key=lambda i: (sends["t"][i], sends["rank"][i], sends["seq"][i]))
        used = set()
        for jj, j in enumerate(wo):
            for i in left:
                if i in used:
                    continue
                if sends["comm"][i] == wildr["comm"][j] and sends["dst"][i] == wildr["dst"][j] \
                        and wildr["src"][j] in (ANY_SOURCE, sends["src"][i]) \
                        and wildr["tag"][j] in (ANY_TAG, sends["tag"][i]):
                    used.add(i)
                    w_matched[jj] = True
                    break
        left = [i for i in left if i not in used]
    for i in left:
        problems.append(f"unmatched send: rank {sends['rank'][i]} -> peer {sends['peer'][i]} "
                        f"(comm {sends['comm'][i]}, tag {sends['tag'][i]}, {sends['nbytes'][i]} "
                        f"bytes) at seq {sends['seq'][i]}, t={sends['t'][i]} ns")
    for j in np.flatnonzero(~r_matched):
        i = ro[j]
        problems.append(f"unmatched receive: rank {exact['rank'][i]} <- peer {exact['peer'][i]} "
                        f"(comm {exact['comm'][i]}, tag {exact['tag'][i]}) at seq "
                        f"{exact['seq'][i]}, t={exact['t'][i]} ns")
    for jj in np.flatnonzero(~w_matched):
        j = wo[jj]
        problems.append(f"unmatched receive: rank {wildr['rank'][j]} <- peer {wildr['peer'][j]} "
                        f"(comm {wildr['comm'][j]}, tag {wildr['tag'][j]}) at seq "
                        f"{wildr['seq'][j]}, t={wildr['t'][j]} ns")

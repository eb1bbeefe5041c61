"""Read an Nsight Systems SQLite export (``nsys export --type sqlite``) into a g2gsim :class:`Trace`.

Tables read (names and columns as NVIDIA's *SQLite Schema Reference* documents them):

* ``MPI_RANKS (globalTid, rank)``: one process per MPI rank; a process is ``globalTid >> 24`` (the
  CUPTI tables' ``globalPid`` has the same upper bits).
* ``MPI_P2P_EVENTS (start, end, globalTid, textId, commHandle, tag, remoteRank, size,
  requestHandle)``, ``MPI_COLLECTIVES_EVENTS (start, end, globalTid, textId, commHandle, rootRank,
  size, recvSize, requestHandle)``, ``MPI_START_WAIT_EVENTS (start, end, globalTid, textId,
  requestHandle)``, ``MPI_OTHER_EVENTS (start, end, globalTid, textId)``: the MPI calls with their
  arguments, written by Nsight Systems versions whose export has these tables when MPI tracing is
  on (``nsys profile --trace=mpi,cuda --mpi-impl=openmpi`` or ``mpich``).  ``textId`` names the
  call (``MPI_Isend``).  ``MPI_COMMUNICATORS (rank, commHandle, size, ...)``, when present, gives
  communicator sizes.
* ``CUPTI_ACTIVITY_KIND_KERNEL`` (start, end, streamId, correlationId, globalPid, shortName),
  ``CUPTI_ACTIVITY_KIND_MEMCPY`` (bytes, copyKind, streamId, srcKind, dstKind, ...),
  ``CUPTI_ACTIVITY_KIND_SYNCHRONIZATION`` (syncType, streamId, eventId), and
  ``CUPTI_ACTIVITY_KIND_RUNTIME`` (start, end, globalTid, correlationId, nameId): the CUDA work and
  the host API calls that issued it (matched by ``correlationId``).  ``ENUM_CUDA_MEMCPY_OPER`` and
  ``ENUM_CUPTI_SYNC_TYPE`` name the enum values when present.

Conversion:

* Rows are the host-side calls in time order per rank.  GPU work is placed at its API call
  (``cudaLaunchKernel``, ``cudaMemcpyAsync``, ...), found through ``correlationId``; without one, at
  the activity's own start.  The time between the end of one call and the start of the next becomes
  a ``Compute`` row, as in the DUMPI reader.
* Kernels become ``Kernel`` rows (``dur_ns`` = traced GPU duration) on their stream; memcpys
  ``Memcpy`` rows with ``copy_kind`` from ``copyKind`` (HtoD h2d, DtoH d2h, DtoD and PtoP d2d, HtoH
  h2h) and ``bytes``; a copy issued by a synchronous API (name without ``Async``) is blocking
  (``stream`` -1).  Stream ids are numbered per rank in order of first use.
* Synchronisations: stream synchronize -> ``StreamSynchronize``, context synchronize ->
  ``DeviceSynchronize``, event synchronize -> ``EventSynchronize``, stream wait event ->
  ``StreamWaitEvent``.
* MPI: ``remoteRank`` and ``rootRank`` are ranks in the call's communicator; ``size`` is the message
  (collectives: this rank's send buffer, ``recvSize`` its receive buffer).  Request handles are
  mapped to fresh request ids (MPI reuses them).  A wait that names no request (the export keeps one
  handle per row) waits for every request the rank has outstanding; rows of one call (same start,
  end and name) are merged.  Communicators other than MPI_COMM_WORLD are refused with an error.
* The export does not say where MPI buffers live: ``mem_space`` is ``assume_buffers`` (host by
  default), and the trace's ``buffers`` metadata says so.
"""
from __future__ import annotations

import shutil
import sqlite3
import subprocess
from collections import defaultdict
from pathlib import Path

from ..trace import ANY_SOURCE, PROC_NULL, Trace, TraceBuilder, TraceError

__all__ = ["read_nsys", "export_sqlite"]

MPI_TABLES = ("MPI_P2P_EVENTS", "MPI_COLLECTIVES_EVENTS", "MPI_START_WAIT_EVENTS", "MPI_OTHER_EVENTS")
RECORD_HINT = ("record with MPI tracing on (`nsys profile --trace=mpi,cuda --mpi-impl=openmpi` or "
               "`--mpi-impl=mpich`) using an Nsight Systems version whose SQLite export writes the "
               "MPI_P2P_EVENTS and MPI_COLLECTIVES_EVENTS tables (listed in the current SQLite "
               "Schema Reference), then `nsys export --type sqlite`")

# CUPTI enum values, used when the export has no ENUM_* table
_MEMCPY_OPER = {1: "h2d", 2: "d2h", 8: "d2d", 9: "h2h", 10: "d2d"}
_MEMCPY_OPER_NAMES = {"HTOD": "h2d", "DTOH": "d2h", "DTOD": "d2d", "HTOH": "h2h", "PTOP": "d2d"}
_SYNC_TYPE = {1: "EventSynchronize", 2: "StreamWaitEvent", 3: "StreamSynchronize", 4: "DeviceSynchronize"}
_SYNC_NAMES = {"EVENT_SYNCHRONIZE": "EventSynchronize", "STREAM_WAIT_EVENT": "StreamWaitEvent",
               "STREAM_SYNCHRONIZE": "StreamSynchronize", "CONTEXT_SYNCHRONIZE": "DeviceSynchronize"}

_P2P = {"MPI_Send": "Send", "MPI_Ssend": "Ssend", "MPI_Bsend": "Bsend", "MPI_Rsend": "Rsend",
        "MPI_Isend": "Isend", "MPI_Issend": "Issend", "MPI_Ibsend": "Isend", "MPI_Irsend": "Isend",
        "MPI_Recv": "Recv", "MPI_Irecv": "Irecv"}
_COLL = {f"MPI_{c}": c for c in ("Barrier", "Bcast", "Reduce", "Allreduce", "Gather", "Scatter",
                                  "Allgather", "Alltoall", "Reduce_scatter", "Reduce_scatter_block",
                                  "Scan", "Exscan")}
_COLL.update({f"MPI_I{c[0].lower()}{c[1:]}": f"I{c[0].lower()}{c[1:]}" for c in
              ("Barrier", "Bcast", "Reduce", "Allreduce", "Gather", "Scatter", "Allgather",
               "Alltoall", "Reduce_scatter", "Reduce_scatter_block", "Scan", "Exscan")})
_ROOTED = {"Bcast", "Reduce", "Gather", "Scatter", "Ibcast", "Ireduce", "Igather", "Iscatter"}
_WAIT = {"MPI_Wait": "Wait", "MPI_Waitall": "Waitall", "MPI_Waitany": "Waitany",
         "MPI_Waitsome": "Waitsome"}


def export_sqlite(rep: str | Path) -> Path:
    """``nsys export --type sqlite`` of a ``.nsys-rep`` (next to it), when ``nsys`` is on PATH."""
    rep = Path(rep)
    out = rep.with_suffix(".sqlite")
    if out.exists() and out.stat().st_mtime >= rep.stat().st_mtime:
        return out
    nsys = shutil.which("nsys")
    if nsys is None:
        raise TraceError(f"{rep}: an Nsight Systems report; g2gsim reads its SQLite export. nsys is "
                         f"not on PATH here: run `nsys export --type sqlite --output {out} {rep}` "
                         f"where Nsight Systems is installed, then import {out.name}")
    p = subprocess.run([nsys, "export", "--type", "sqlite", "--force-overwrite", "true",
                        "--output", str(out), str(rep)], capture_output=True, text=True)
    if p.returncode != 0 or not out.exists():
        tail = (p.stderr or p.stdout).strip().splitlines()[-1:] or [""]
        raise TraceError(f"{rep}: `nsys export --type sqlite` failed ({p.returncode}): {tail[0]}")
    return out


class _Db:
    def __init__(self, path: Path):
        self.path = path
        try:
            self.c = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            self.tables = {r[0] for r in self.c.execute(
                "SELECT name FROM sqlite_master WHERE type='table'")}
        except sqlite3.Error as e:
            raise TraceError(f"{path}: not a readable SQLite file ({e})") from None
        self.strings: dict[int, str] = {}
        if "StringIds" in self.tables:
            self.strings = dict(self.c.execute("SELECT id, value FROM StringIds"))

    def cols(self, table: str) -> set[str]:
        return {r[1] for r in self.c.execute(f"PRAGMA table_info({table})")}

    def rows(self, table: str, cols: list[str]):
        have = self.cols(table)
        sel = ", ".join(c if c in have else "NULL" for c in cols)
        return self.c.execute(f"SELECT {sel} FROM {table}")

    def version(self) -> str:
        for t in ("META_DATA_EXPORT", "EXPORT_META_DATA"):
            if t in self.tables:
                for name, value in self.c.execute(f"SELECT name, value FROM {t}"):
                    if name == "EXPORT_PRODUCT_VERSION":
                        return str(value)
        return "unknown version"

    def enum(self, table: str) -> dict[int, str]:
        if table not in self.tables:
            return {}
        cols = self.cols(table)
        name = "name" if "name" in cols else "label"
        return {int(i): str(n) for i, n in self.c.execute(f"SELECT id, {name} FROM {table}")}


def _nvtx_mpi_ranges(db: _Db) -> dict[str, int]:
    if "NVTX_EVENTS" not in db.tables:
        return {}
    out: dict[str, int] = defaultdict(int)
    for text, tid in db.rows("NVTX_EVENTS", ["text", "textId"]):
        name = text if text is not None else db.strings.get(tid, "")
        if isinstance(name, str) and name.startswith("MPI_"):
            out[name] += 1
    return dict(out)


def read_nsys(path: str | Path, assume_buffers: str | None = None, progress: bool = False) -> Trace:
    """Convert an Nsight Systems SQLite export (or a ``.nsys-rep``, exported with ``nsys``) to a
    Trace.  ``assume_buffers``: ``host`` (default) or ``device``, the MPI buffers' memory space."""
    path = Path(path)
    if path.suffix == ".nsys-rep":
        path = export_sqlite(path)
    if not path.is_file():
        raise TraceError(f"{path}: no such Nsight Systems export")
    mem = assume_buffers or "host"
    if mem not in ("host", "device"):
        raise ValueError(f"assume_buffers must be 'host' or 'device' for Nsight exports, not {mem!r}")
    db = _Db(path)
    version = db.version()
    if not any(t in db.tables for t in ("MPI_P2P_EVENTS", "MPI_COLLECTIVES_EVENTS")):
        nvtx = _nvtx_mpi_ranges(db)
        if nvtx:
            calls = ", ".join(f"{k} x{v}" for k, v in sorted(nvtx.items()))
            raise TraceError(f"{path}: this Nsight Systems export ({version}) has MPI calls only as "
                             f"NVTX ranges ({calls}), without peers, tags, sizes or communicators, so "
                             f"they cannot be replayed; {RECORD_HINT}")
        raise TraceError(f"{path}: Nsight Systems export ({version}) without MPI data (no "
                         f"MPI_P2P_EVENTS or MPI_COLLECTIVES_EVENTS table); {RECORD_HINT}")
    if "MPI_RANKS" not in db.tables:
        raise TraceError(f"{path}: export ({version}) has MPI events but no MPI_RANKS table mapping "
                         f"threads to ranks")
    rank_of_pid: dict[int, int] = {}
    for gtid, rank in db.rows("MPI_RANKS", ["globalTid", "rank"]):
        pid = int(gtid) >> 24
        if pid in rank_of_pid and rank_of_pid[pid] != rank:
            raise TraceError(f"{path}: MPI_RANKS gives process {pid & 0xFFFFFF} two ranks "
                             f"({rank_of_pid[pid]}, {rank})")
        rank_of_pid[pid] = int(rank)
    ranks = sorted(set(rank_of_pid.values()))
    nranks = len(ranks)
    if ranks != list(range(nranks)):
        raise TraceError(f"{path}: MPI_RANKS lists ranks {ranks}; expected 0..{nranks - 1} (merge the "
                         f"per-rank reports into one export, or import all ranks' exports)")
    comm_size: dict[tuple[int, int], int] = {}
    if "MPI_COMMUNICATORS" in db.tables:
        for rank, handle, size in db.rows("MPI_COMMUNICATORS", ["rank", "commHandle", "size"]):
            if rank is not None and handle is not None and size is not None:
                comm_size[(int(rank), int(handle))] = int(size)

    def rank_of(gtid, table: str, i: int) -> int:
        if gtid is None:
            raise TraceError(f"{path}: {table} row {i}: no globalTid")
        r = rank_of_pid.get(int(gtid) >> 24)
        if r is None:
            raise TraceError(f"{path}: {table} row {i}: process {(int(gtid) >> 24) & 0xFFFFFF} is "
                             f"not in MPI_RANKS")
        return r

    # events per rank: (host start, host end, kind, payload)
    ev: list[list[tuple]] = [[] for _ in range(nranks)]
    for table in MPI_TABLES:
        if table not in db.tables:
            continue
        cols = {"MPI_P2P_EVENTS": ["start", "end", "globalTid", "textId", "commHandle", "tag",
                                   "remoteRank", "size", "requestHandle"],
                "MPI_COLLECTIVES_EVENTS": ["start", "end", "globalTid", "textId", "commHandle",
                                           "rootRank", "size", "recvSize", "requestHandle"],
                "MPI_START_WAIT_EVENTS": ["start", "end", "globalTid", "textId", "requestHandle"],
                "MPI_OTHER_EVENTS": ["start", "end", "globalTid", "textId"]}[table]
        for i, row in enumerate(db.rows(table, cols)):
            r = rank_of(row[2], table, i)
            name = db.strings.get(row[3], f"textId {row[3]}")
            end = row[1] if row[1] is not None else row[0]
            ev[r].append((int(row[0]), int(end), table, (i, name) + tuple(row[4:])))
    # CUDA: API calls by correlation id, then the activities
    api: dict[tuple[int, int], tuple[int, int, int, str]] = {}
    if "CUPTI_ACTIVITY_KIND_RUNTIME" in db.tables:
        for s, e, gtid, corr, nid in db.rows(
                "CUPTI_ACTIVITY_KIND_RUNTIME", ["start", "end", "globalTid", "correlationId", "nameId"]):
            if gtid is None or corr is None:
                continue
            pid = int(gtid) >> 24
            if pid in rank_of_pid:
                api[(pid, int(corr))] = (int(s), int(e), rank_of_pid[pid], db.strings.get(nid, ""))
    memcpy_enum = db.enum("ENUM_CUDA_MEMCPY_OPER")
    sync_enum = db.enum("ENUM_CUPTI_SYNC_TYPE")
    used_api: set[tuple[int, int]] = set()

    def place(table: str, i: int, gpid, corr, s, e) -> tuple[int, int, int, str] | None:
        if gpid is None:
            raise TraceError(f"{path}: {table} row {i}: no globalPid")
        pid = int(gpid) >> 24
        if pid not in rank_of_pid:
            return None
        a = api.get((pid, int(corr))) if corr is not None else None
        if a is not None:
            used_api.add((pid, int(corr)))
            return a
        return (int(s), int(s), rank_of_pid[pid], "")

    if "CUPTI_ACTIVITY_KIND_KERNEL" in db.tables:
        for i, (s, e, stream, corr, gpid, nm) in enumerate(db.rows(
                "CUPTI_ACTIVITY_KIND_KERNEL", ["start", "end", "streamId", "correlationId", "globalPid",
                                               "shortName"])):
            p = place("CUPTI_ACTIVITY_KIND_KERNEL", i, gpid, corr, s, e)
            if p is not None:
                ev[p[2]].append((p[0], p[1], "KERNEL", (int(e) - int(s), stream, db.strings.get(nm, ""))))
    if "CUPTI_ACTIVITY_KIND_MEMCPY" in db.tables:
        for i, (s, e, stream, corr, gpid, nbytes, kind) in enumerate(db.rows(
                "CUPTI_ACTIVITY_KIND_MEMCPY", ["start", "end", "streamId", "correlationId", "globalPid",
                                               "bytes", "copyKind"])):
            p = place("CUPTI_ACTIVITY_KIND_MEMCPY", i, gpid, corr, s, e)
            if p is None:
                continue
            if memcpy_enum:
                label = memcpy_enum.get(int(kind), "").upper()
                ck = next((v for k, v in _MEMCPY_OPER_NAMES.items() if k in label), None)
            else:
                ck = _MEMCPY_OPER.get(int(kind))
            if ck is None:
                raise TraceError(f"{path}: CUPTI_ACTIVITY_KIND_MEMCPY row {i}: copy kind {kind} "
                                 f"({memcpy_enum.get(int(kind), 'unknown')}) is not host/device")
            blocking = bool(p[3]) and "Async" not in p[3]
            ev[p[2]].append((p[0], p[1], "MEMCPY", (int(nbytes), ck, None if blocking else stream)))
    if "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION" in db.tables:
        for i, (s, e, stream, corr, gpid, st, event) in enumerate(db.rows(
                "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", ["start", "end", "streamId", "correlationId",
                                                        "globalPid", "syncType", "eventId"])):
            p = place("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", i, gpid, corr, s, e)
            if p is None:
                continue
            if sync_enum:
                label = sync_enum.get(int(st), "").upper()
                op = next((v for k, v in _SYNC_NAMES.items() if k in label), None)
            else:
                op = _SYNC_TYPE.get(int(st))
            if op is None:
                continue        # unknown synchronisation kind: its time stays host time
            ev[p[2]].append((p[0], p[1], "SYNC", (op, stream, event)))

    origin = min((e[0] for evs in ev for e in evs), default=0)
    b = TraceBuilder(nranks, source=f"nsys_reader: {path} (Nsight Systems {version}, {nranks} ranks)",
                     buffers="assumed-host" if mem == "host" else "assumed-device")
    for r in range(nranks):
        _convert_rank(b, path, r, sorted(ev[r], key=lambda x: (x[0], x[1])), origin, mem, comm_size,
                      nranks)
    return b.build()


def _convert_rank(b: TraceBuilder, path: Path, rank: int, evs: list[tuple], origin: int, mem: str,
                  comm_size: dict, nranks: int) -> None:
    prev_end: int | None = None
    reqs: dict[int, int] = {}      # MPI request handle -> our request id (outstanding)
    next_req = 1
    streams: dict[int, int] = {}

    def stream_of(s) -> int:
        if s is None:
            return -1
        return streams.setdefault(int(s), len(streams))

    def emit(s: int, e: int, op: str, **kw) -> None:
        nonlocal prev_end
        if prev_end is not None and s > prev_end:
            b.add(rank, "Compute", dur_ns=s - prev_end, t_start_ns=prev_end - origin,
                  t_end_ns=s - origin)
        b.add(rank, op, t_start_ns=s - origin, t_end_ns=e - origin, **kw)
        prev_end = e if prev_end is None or e > prev_end else prev_end

    def comm(table: str, i: int, name: str, handle) -> int:
        if handle is not None and comm_size:
            size = comm_size.get((rank, int(handle)))
            if size is not None and size != nranks:
                raise TraceError(f"{path}: rank {rank}, {table} row {i}: {name} on a communicator of "
                                 f"{size} ranks (handle {handle}); only MPI_COMM_WORLD is supported")
        return 0

    k = 0
    while k < len(evs):
        s, e, kind, p = evs[k]
        k += 1
        if kind == "MPI_P2P_EVENTS":
            i, name, handle, tag, remote, size, rh = p
            op = _P2P.get(name)
            if op is None:
                raise TraceError(f"{path}: rank {rank}, MPI_P2P_EVENTS row {i}: {name} is not "
                                 f"supported (point-to-point calls: {', '.join(sorted(_P2P))})")
            g = comm(kind, i, name, handle)
            if remote is None:
                raise TraceError(f"{path}: rank {rank}, MPI_P2P_EVENTS row {i}: {name} without remoteRank")
            peer = int(remote)
            if peer < 0:
                peer = PROC_NULL if op not in ("Recv", "Irecv") else ANY_SOURCE
            elif peer >= nranks:
                raise TraceError(f"{path}: rank {rank}, MPI_P2P_EVENTS row {i}: {name} peer {peer} "
                                 f"outside MPI_COMM_WORLD ({nranks} ranks)")
            kw = dict(peer=peer, tag=int(tag) if tag is not None else -1, comm_id=g, mem_space=mem)
            if op in ("Recv", "Irecv"):
                kw["recv_bytes"] = int(size or 0)
            else:
                kw["bytes"] = int(size or 0)
            if op.startswith("I"):
                if rh is None:
                    raise TraceError(f"{path}: rank {rank}, MPI_P2P_EVENTS row {i}: {name} without "
                                     f"requestHandle")
                reqs[int(rh)] = next_req
                kw["req"] = next_req
                next_req += 1
            emit(s, e, op, **kw)
        elif kind == "MPI_COLLECTIVES_EVENTS":
            i, name, handle, root, size, rsize, rh = p
            op = _COLL.get(name)
            if op is None:
                raise TraceError(f"{path}: rank {rank}, MPI_COLLECTIVES_EVENTS row {i}: {name} is not "
                                 f"supported")
            g = comm(kind, i, name, handle)
            kw = dict(comm_id=g, mem_space=mem, bytes=int(size or 0), recv_bytes=int(rsize or 0))
            if op in _ROOTED:
                if root is None or not 0 <= int(root) < nranks:
                    raise TraceError(f"{path}: rank {rank}, MPI_COLLECTIVES_EVENTS row {i}: {name} "
                                     f"root {root} outside MPI_COMM_WORLD")
                kw["root"] = int(root)
            if op == "Barrier":
                kw = dict(comm_id=g)
            if op.startswith("I"):
                if rh is None:
                    raise TraceError(f"{path}: rank {rank}, {kind} row {i}: {name} without requestHandle")
                reqs[int(rh)] = next_req
                kw["req"] = next_req
                next_req += 1
            emit(s, e, op, **kw)
        elif kind == "MPI_START_WAIT_EVENTS":
            i, name, rh = p
            handles = [rh]
            while k < len(evs) and evs[k][2] == kind and evs[k][0] == s and evs[k][1] == e \
                    and evs[k][3][1] == name:
                handles.append(evs[k][3][2])
                k += 1
            op = _WAIT.get(name)
            if op is None:
                raise TraceError(f"{path}: rank {rank}, {kind} row {i}: {name} is not supported")
            named = [int(h) for h in handles if h is not None]
            if named:
                done = [reqs.pop(h) for h in named if h in reqs]
            else:
                done = list(reqs.values())      # no handle recorded: every outstanding request
                reqs.clear()
            if op == "Wait" and len(done) == 1:
                emit(s, e, "Wait", req=done[0])
            else:
                emit(s, e, "Waitall" if op in ("Wait", "Waitall") else op, reqs=done)
        elif kind == "MPI_OTHER_EVENTS":
            i, name = p
            if name in ("MPI_Init", "MPI_Init_thread"):
                emit(s, e, "Init")
            elif name == "MPI_Finalize":
                emit(s, e, "Finalize")
            # other calls (Comm_rank, ...) are skipped: their time becomes compute
        elif kind == "KERNEL":
            dur, stream, _ = p
            emit(s, e, "Kernel", dur_ns=max(int(dur), 0), stream=stream_of(stream))
        elif kind == "MEMCPY":
            nbytes, ck, stream = p
            emit(s, e, "Memcpy", bytes=nbytes, copy_kind=ck, stream=stream_of(stream),
                 mem_space="device" if ck != "h2h" else "host")
        elif kind == "SYNC":
            op, stream, event = p
            if op == "StreamSynchronize":
                emit(s, e, op, stream=stream_of(stream))
            elif op == "DeviceSynchronize":
                emit(s, e, op)
            elif op == "EventSynchronize":
                emit(s, e, op, req=int(event or 0))
            else:
                emit(s, e, op, stream=stream_of(stream), req=int(event or 0))

"""Vectorised construction of per-rank programs, in memory or streamed to a Parquet trace.

A generator describes every rank's program as a sequence of *slots*: one call of ``Program.emit``
adds one operation for each rank of a set (each rank at most once), with per-rank column values
given as numpy arrays or scalars.  A rank's ``seq`` is the number of slots it took part in so far,
so building a 1M-rank iteration costs a handful of numpy operations per slot and no per-row
Python.

Rows are kept column-wise (``_Rows``) and turned into an Arrow table of ``trace.SCHEMA`` by
``rows_to_table``.  ``Program`` either keeps every row (``generate``) or hands complete *windows*
(``seq // window_ops``, see docs/trace-format.md) to a ``StreamWriter`` that sorts them by
``(window, rank, seq)`` and appends them as whole-window row groups, so memory stays bounded by a
few windows plus the rows the slowest rank has not caught up with.
"""
from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from ..trace import (  # noqa: F401
    ALL_OPS,
    COPY_KINDS,
    MEM_SPACES,
    NONBLOCKING_COLLECTIVES,
    PROC_NULL,
    ROW_GROUP_ROWS,
    SCHEMA,
    WINDOW_ROWS,
    Comm,
    NativeWriter,
    Trace,
    auto_window_ops,
    file_metadata,
)

OP_NAMES = sorted(ALL_OPS)
OP_CODE = {n: i for i, n in enumerate(OP_NAMES)}
MEM_CODE = {m: i for i, m in enumerate(MEM_SPACES)}
COPY_CODE = {c: i for i, c in enumerate(COPY_KINDS)}

# numeric columns kept per row: numpy dtype and the default of trace.DEFAULTS (mem_space and
# copy_kind are stored as codes into MEM_SPACES / COPY_KINDS, -1 = null)
NUM_COLS: dict[str, tuple[Any, Any]] = {
    "op": (np.uint8, 0),
    "dur_ns": (np.int64, 0),
    "peer": (np.int32, -1),
    "tag": (np.int32, -1),
    "comm_id": (np.uint32, 0),
    "bytes": (np.uint64, 0),
    "recv_bytes": (np.uint64, 0),
    "recv_peer": (np.int32, -1),
    "recv_tag": (np.int32, -1),
    "root": (np.int32, -1),
    "req": (np.uint64, 0),
    "mem_space": (np.uint8, MEM_CODE["host"]),
    "copy_kind": (np.int8, -1),
    "stream": (np.int32, -1),
    "contiguous": (np.bool_, True),
    "priority": (np.int32, 0),
}
LIST_COLS = ("reqs", "counts_bytes", "recv_counts_bytes")

DEFAULT_ROW_GROUP_ROWS = ROW_GROUP_ROWS  # what Trace.write puts in a row group (at least)
STREAM_WINDOW_ROWS = WINDOW_ROWS         # auto window_ops keeps a window near this many rows
SMALL_TRACE_ROWS = 1 << 20           # generate_to_file hands traces up to this size to Trace.write
SPILL_ROWS = 1 << 23                 # unwritten rows kept in memory before spilling to disk


# --------------------------------------------------------------------------------------- rows
class _Rows:
    """Column-wise rows: ``rank``/``seq`` arrays, full numeric columns, list columns as
    (lengths with -1 = null, flat values)."""

    __slots__ = ("rank", "seq", "cols", "lists")

    def __init__(self, rank: np.ndarray, seq: np.ndarray, cols: dict[str, np.ndarray],
                 lists: dict[str, tuple[np.ndarray, np.ndarray]]):
        self.rank = rank
        self.seq = seq
        self.cols = cols
        self.lists = lists

    def __len__(self) -> int:
        return len(self.rank)

    @staticmethod
    def empty() -> _Rows:
        return _Rows(np.zeros(0, np.uint32), np.zeros(0, np.uint32), {}, {})

    @staticmethod
    def concat(chunks: list[dict]) -> _Rows:
        """Concatenate slot chunks (see ``Program.emit``) or already-built ``_Rows``."""
        if not chunks:
            return _Rows.empty()
        ns = [len(c["rank"]) if isinstance(c, dict) else len(c) for c in chunks]
        n = int(sum(ns))

        def part(c, name):
            return c[name] if isinstance(c, dict) else getattr(c, name)

        rank = np.concatenate([part(c, "rank") for c in chunks]).astype(np.uint32, copy=False)
        seq = np.concatenate([part(c, "seq") for c in chunks]).astype(np.uint32, copy=False)
        names: set[str] = set()
        lnames: set[str] = set()
        for c in chunks:
            if isinstance(c, dict):
                names.update(k for k in c if k in NUM_COLS)
                lnames.update(k for k in c if k in LIST_COLS)
            else:
                names.update(c.cols)
                lnames.update(c.lists)
        cols: dict[str, np.ndarray] = {}
        for name in names:
            dt, d = NUM_COLS[name]
            out = np.empty(n, dtype=dt)
            pos = 0
            for c, k in zip(chunks, ns):
                v = c.get(name, d) if isinstance(c, dict) else c.cols.get(name, d)
                out[pos:pos + k] = v
                pos += k
            cols[name] = out
        lists: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for name in lnames:
            lens, flats = [], []
            for c, k in zip(chunks, ns):
                v = c.get(name) if isinstance(c, dict) else c.lists.get(name)
                if v is None:
                    lens.append(np.full(k, -1, np.int64))
                else:
                    lens.append(np.asarray(v[0], np.int64))
                    flats.append(np.asarray(v[1], np.uint64))
            lists[name] = (np.concatenate(lens),
                           np.concatenate(flats) if flats else np.zeros(0, np.uint64))
        return _Rows(rank, seq, cols, lists)

    def take(self, idx: np.ndarray) -> _Rows:
        cols = {k: v[idx] for k, v in self.cols.items()}
        lists = {}
        for name, (lens, flat) in self.lists.items():
            ln = np.maximum(lens, 0)
            starts = np.zeros(len(ln), np.int64)
            np.cumsum(ln[:-1], out=starts[1:])
            new_lens = lens[idx]
            nl = np.maximum(new_lens, 0)
            total = int(nl.sum())
            if total:
                new_starts = np.zeros(len(nl), np.int64)
                np.cumsum(nl[:-1], out=new_starts[1:])
                gather = np.repeat(starts[idx] - new_starts, nl) + np.arange(total, dtype=np.int64)
                new_flat = flat[gather]
            else:
                new_flat = np.zeros(0, np.uint64)
            lists[name] = (new_lens, new_flat)
        return _Rows(self.rank[idx], self.seq[idx], cols, lists)


def _str_column(codes: np.ndarray, names: Iterable[str], null: np.ndarray | None = None) -> pa.Array:
    idx = pa.array(codes.astype(np.int32, copy=False), mask=null)
    return pa.DictionaryArray.from_arrays(idx, pa.array(list(names), pa.string())).cast(pa.string())


def rows_to_table(rows: _Rows) -> pa.Table:
    """Arrow table with exactly ``trace.SCHEMA`` (no metadata)."""
    n = len(rows)
    arrays = []
    for f in SCHEMA:
        name = f.name
        if name == "rank":
            arrays.append(pa.array(rows.rank, pa.uint32()))
        elif name == "seq":
            arrays.append(pa.array(rows.seq, pa.uint32()))
        elif name == "op":
            arrays.append(_str_column(rows.cols.get("op", np.zeros(n, np.uint8)), OP_NAMES))
        elif name == "mem_space":
            arrays.append(_str_column(rows.cols.get("mem_space", np.zeros(n, np.uint8)), MEM_SPACES))
        elif name == "copy_kind":
            ck = rows.cols.get("copy_kind")
            if ck is None:
                arrays.append(pa.nulls(n, pa.string()))
            else:
                arrays.append(_str_column(np.maximum(ck, 0), COPY_KINDS, null=ck < 0))
        elif name in NUM_COLS:
            dt, d = NUM_COLS[name]
            v = rows.cols.get(name)
            if v is None:
                v = np.full(n, d, dtype=dt)
            arrays.append(pa.array(v, f.type))
        elif name in LIST_COLS:
            lv = rows.lists.get(name)
            if lv is None:
                arrays.append(pa.nulls(n, f.type))
            else:
                lens, flat = lv
                ln = np.maximum(lens, 0)
                offsets = np.zeros(n + 1, np.int32)
                np.cumsum(ln, out=offsets[1:])
                arrays.append(pa.ListArray.from_arrays(pa.array(offsets), pa.array(flat, pa.uint64()),
                                                       type=f.type, mask=pa.array(lens < 0)))
        else:  # t_start_ns, t_end_ns, callsite: not known for synthetic traces
            arrays.append(pa.nulls(n, f.type))
    return pa.Table.from_arrays(arrays, schema=SCHEMA)


def _chunk_take(c: dict, idx: np.ndarray) -> dict:
    """Rows ``idx`` of a slot chunk (scalars stay scalars)."""
    out: dict[str, Any] = {}
    for k, v in c.items():
        if k in LIST_COLS:
            lens, flat = v
            ln = np.maximum(lens, 0)
            keep = np.zeros(len(lens), bool)
            keep[idx] = True
            out[k] = (lens[idx], flat[np.repeat(keep, ln)])
        elif isinstance(v, np.ndarray) and v.ndim:
            out[k] = v[idx]
        else:
            out[k] = v
    return out


class _WindowBuffer:
    """Rows not yet written, bucketed by window; buckets far from completion are spilled to
    ``.npz`` files when more than ``spill_rows`` rows are held, so memory stays bounded even when
    ranks run different numbers of operations."""

    def __init__(self, window_ops: int, spill_rows: int, spill_dir: Path):
        self.w = window_ops
        self.spill_rows = spill_rows
        self.spill_dir = spill_dir
        self.mem: dict[int, list] = {}
        self.mem_count: dict[int, int] = {}
        self.count: dict[int, int] = {}          # rows per window, in memory and spilled
        self.files: dict[int, list[Path]] = {}
        self.mem_rows = 0
        self._nspill = 0

    def add(self, chunk: dict) -> None:
        win = chunk["seq"] // self.w
        lo, hi = int(win.min()), int(win.max())
        parts = [(lo, chunk)] if lo == hi else [
            (int(x), _chunk_take(chunk, np.flatnonzero(win == x))) for x in np.unique(win)]
        for x, c in parts:
            n = len(c["rank"])
            self.mem.setdefault(x, []).append(c)
            self.mem_count[x] = self.mem_count.get(x, 0) + n
            self.count[x] = self.count.get(x, 0) + n
            self.mem_rows += n
        if self.mem_rows > self.spill_rows:
            self._spill()

    def _spill(self) -> None:
        """Move the highest windows' in-memory rows to disk until half the budget is left."""
        self.spill_dir.mkdir(parents=True, exist_ok=True)
        for x in sorted(self.mem, reverse=True):
            if self.mem_rows <= self.spill_rows // 2:
                break
            rows = _Rows.concat(self.mem.pop(x))
            self.mem_rows -= self.mem_count.pop(x)
            f = self.spill_dir / f"w{x}_{self._nspill}.npz"
            self._nspill += 1
            arrays = {"rank": rows.rank, "seq": rows.seq}
            arrays.update({f"c_{k}": v for k, v in rows.cols.items()})
            for k, (lens, flat) in rows.lists.items():
                arrays[f"l_{k}"], arrays[f"f_{k}"] = lens, flat
            np.savez(f, **arrays)  # type: ignore[arg-type]  # (numpy's stub types allow_pickle too)
            self.files.setdefault(x, []).append(f)

    def ready(self, complete: int | None) -> list[int]:
        """Windows below ``complete`` (all when None), in order."""
        return sorted(x for x in self.count if complete is None or x < complete)

    def rows_in(self, windows: list[int]) -> int:
        return sum(self.count[x] for x in windows)

    def pop(self, x: int) -> list:
        parts = self.mem.pop(x, [])
        self.mem_rows -= self.mem_count.pop(x, 0)
        del self.count[x]
        for f in self.files.pop(x, []):
            with np.load(f) as z:
                cols = {k[2:]: z[k] for k in z.files if k.startswith("c_")}
                lists = {k[2:]: (z[k], z["f_" + k[2:]]) for k in z.files if k.startswith("l_")}
                parts.append(_Rows(z["rank"], z["seq"], cols, lists))
            f.unlink()
        return parts


# --------------------------------------------------------------------------------------- writer
class StreamWriter:
    """Appends sorted whole-window row groups to a Parquet trace (the streamed ``Trace.write``).

    Sorting, encoding and compressing a batch run on one background thread (numpy and Arrow
    release the GIL) while the generator builds the next batch; at most one batch is in flight,
    and batches are written in the order given.
    """

    def __init__(self, path: Path, nranks: int, window_ops: int, row_group_rows: int):
        self.path = Path(path)
        self.nranks = nranks
        self.window_ops = window_ops
        self.row_group_rows = row_group_rows
        self._writer: NativeWriter | None = None
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="g2g-write")
        self._inflight: Future | None = None

    @property
    def opened(self) -> bool:
        return self._writer is not None

    def open(self, meta: dict[str, str]) -> None:
        self._writer = NativeWriter(self.path, meta, self.row_group_rows)

    def write(self, rows: _Rows) -> None:
        """Queue ``rows``, which hold complete windows (every row of them, in any order)."""
        if not len(rows):
            return
        self._wait()
        self._inflight = self._pool.submit(self._write, rows)

    def _wait(self) -> None:
        f, self._inflight = self._inflight, None
        if f is not None:
            f.result()

    def _write(self, rows: _Rows) -> None:
        w = self.window_ops
        seq = rows.seq.astype(np.uint64)
        window = seq // np.uint64(w)
        key = window * np.uint64(self.nranks * w) + rows.rank.astype(np.uint64) * np.uint64(w) \
            + seq % np.uint64(w)
        order = np.argsort(key, kind="stable")
        rows = rows.take(order)
        assert self._writer is not None
        self._writer.append(rows_to_table(rows), window[order])

    def close(self) -> None:
        """Finishes the file; if writing failed, removes the partial file and re-raises."""
        ok = False
        try:
            self._wait()
            ok = True
        finally:
            self._pool.shutdown(wait=True)
            if self._writer is not None:
                if ok:
                    self._writer.close()
                else:
                    self._writer.abort()
                self._writer = None


# --------------------------------------------------------------------------------------- program
class Program:
    """Builds all ranks' programs slot by slot.

    ``buffers`` ("device"/"host") is the ``mem_space`` of message rows; ``staged`` (host buffers
    only) adds the HostCopy application's explicit ``Memcpy`` rows: ``d2h`` of the send buffer
    before every send and ``h2d`` of the receive buffer after every receive completes.
    ``jitter``/``seed`` perturb ``Compute`` durations by a seeded uniform factor ``1 ± jitter``.
    """

    def __init__(self, nranks: int, *, buffers: str = "device", staged: bool = False,
                 jitter: float = 0.0, seed: int = 0):
        if nranks < 1:
            raise ValueError(f"need at least 1 rank, got {nranks}")
        if buffers not in ("device", "host"):
            raise ValueError(f"buffers must be 'device' or 'host', got {buffers!r}")
        if staged and buffers != "host":
            raise ValueError("staged=True models the HostCopy style (explicit cudaMemcpy around MPI "
                             "calls on host buffers) and needs buffers='host'")
        if not 0.0 <= jitter < 1.0:
            raise ValueError(f"jitter must be in [0, 1), got {jitter}")
        self.nranks = nranks
        self.all = np.arange(nranks, dtype=np.int64)
        self.buffers = buffers
        self.staged = staged
        self.jitter = jitter
        self._rng = np.random.default_rng(seed)
        self.comms: list[Comm] = [Comm(0, "MPI_COMM_WORLD", None)]
        self.next_seq = np.zeros(nranks, dtype=np.int64)
        self._pending: list[Any] = []        # in-memory mode: every chunk, in slot order
        self.rows = 0
        # streaming
        self._sink: StreamWriter | None = None
        self._buf: _WindowBuffer | None = None
        self._since_check = 0

    # ------------------------------------------------------------------ plumbing
    def attach(self, sink: StreamWriter, meta_fn, spill_dir: Path, spill_rows: int) -> None:
        """Stream complete windows to ``sink``; ``meta_fn()`` gives the file metadata when opened.
        At most about ``spill_rows`` unwritten rows stay in memory, the rest go to ``spill_dir``."""
        self._sink = sink
        self._meta_fn = meta_fn
        self._buf = _WindowBuffer(sink.window_ops, max(spill_rows, 2 * sink.row_group_rows), spill_dir)

    def add_comm(self, name: str, members: list[int] | None) -> int:
        if self._sink is not None and self._sink.opened:
            raise RuntimeError("communicators must be defined before rows are streamed")
        cid = max(c.id for c in self.comms) + 1
        self.comms.append(Comm(cid, name, None if members is None else [int(m) for m in members]))
        return cid

    def _ranks(self, ranks) -> np.ndarray:
        if ranks is None:
            return self.all
        return np.asarray(ranks, dtype=np.int64).reshape(-1)

    def emit(self, op: str, ranks=None, **cols: Any) -> None:
        """One slot: each rank in ``ranks`` (default: all; each at most once) performs ``op``.

        Column values are scalars or arrays aligned with ``ranks``; ``mem_space``/``copy_kind``
        are names; list columns (``reqs``, ``counts_bytes``, ``recv_counts_bytes``) are given as
        ``(lengths, flat_values)`` with one length per rank in ``ranks``.
        """
        r = self._ranks(ranks)
        n = len(r)
        if n == 0:
            return
        chunk: dict[str, Any] = {"rank": r.astype(np.uint32), "seq": self.next_seq[r].astype(np.uint32),
                                 "op": OP_CODE[op]}
        for k, v in cols.items():
            if k in LIST_COLS:
                lens, flat = v
                lens = np.broadcast_to(np.asarray(lens, np.int64), (n,))
                chunk[k] = (lens, np.asarray(flat, np.uint64).reshape(-1))
                continue
            if k == "mem_space":
                v = MEM_CODE[v]
            elif k == "copy_kind":
                v = COPY_CODE[v]
            elif k not in NUM_COLS:
                raise TypeError(f"unknown trace column {k!r}")
            if isinstance(v, np.ndarray) and v.ndim:
                if len(v) != n:
                    raise ValueError(f"{op}: column {k} has {len(v)} values for {n} ranks")
                v = v.astype(NUM_COLS[k][0], copy=False)
            chunk[k] = v
        self.next_seq[r] += 1
        self.rows += n
        if self._buf is None:
            self._pending.append(chunk)
            return
        self._buf.add(chunk)
        self._since_check += n
        assert self._sink is not None          # attached together with _buf
        if self._since_check >= self._sink.row_group_rows // 2:
            self._since_check = 0
            self._flush(final=False)

    def _flush(self, final: bool) -> None:
        """Write the complete windows (every rank is past them) once they fill a row group; all
        remaining windows when ``final``."""
        buf, sink = self._buf, self._sink
        assert buf is not None and sink is not None
        ready = buf.ready(None if final else int(self.next_seq.min()) // buf.w)
        if not ready or (not final and buf.rows_in(ready) < sink.row_group_rows):
            return
        if not sink.opened:
            sink.open(self._meta_fn())
        parts: list = []
        acc = 0
        for k, x in enumerate(ready):
            acc += buf.count[x]
            parts.extend(buf.pop(x))
            if acc >= sink.row_group_rows or k == len(ready) - 1:
                sink.write(_Rows.concat(parts))
                parts, acc = [], 0

    @property
    def streamed(self) -> bool:
        return self._sink is not None and self._sink.opened

    def take_rows(self) -> _Rows:
        """All rows not yet streamed (in slot order in memory mode) and forget them."""
        if self._buf is not None:
            parts = []
            for x in self._buf.ready(None):
                parts.extend(self._buf.pop(x))
            return _Rows.concat(parts)
        rows = _Rows.concat(self._pending)
        self._pending = []
        return rows

    def finish_stream(self) -> None:
        self._flush(final=True)

    # ------------------------------------------------------------------ plain operations
    def init(self) -> None:
        self.emit("Init")

    def finalize(self) -> None:
        self.emit("Finalize")

    def compute(self, ranks, dur_ns) -> None:
        """``Compute`` of ``dur_ns`` (scalar or per rank), perturbed by ``jitter``; 0 is skipped."""
        r = self._ranks(ranks)
        d = np.broadcast_to(np.asarray(dur_ns, dtype=np.float64), r.shape)
        if self.jitter:
            d = d * (1.0 + self.jitter * self._rng.uniform(-1.0, 1.0, size=r.shape))
        d = np.rint(d).astype(np.int64)
        keep = d > 0
        if not keep.any():
            return
        if not keep.all():
            r, d = r[keep], d[keep]
        self.emit("Compute", r, dur_ns=d)

    def _jittered(self, r: np.ndarray, dur_ns) -> np.ndarray:
        d = np.broadcast_to(np.asarray(dur_ns, dtype=np.float64), r.shape)
        if self.jitter:
            d = d * (1.0 + self.jitter * self._rng.uniform(-1.0, 1.0, size=r.shape))
        return np.rint(d).astype(np.int64)

    def kernel(self, ranks, stream: int, dur_ns, priority: int = 0) -> None:
        """A ``Kernel`` of ``dur_ns`` (scalar or per rank, perturbed by ``jitter``) queued on
        ``stream`` with the stream's ``priority``; a rank with no work (0 ns) launches nothing."""
        r = self._ranks(ranks)
        d = self._jittered(r, dur_ns)
        keep = d > 0
        if keep.any():
            self.emit("Kernel", r[keep], dur_ns=d[keep], stream=stream, priority=priority)

    def gpu(self, op: str, ranks=None, *, stream: int = -1, event: int = 0) -> None:
        """A GPU stream operation other than a kernel: ``EventRecord`` (event, stream),
        ``StreamWaitEvent`` (stream, event), ``StreamSynchronize`` (stream),
        ``EventSynchronize`` (event), ``DeviceSynchronize``."""
        self.emit(op, ranks, stream=stream, req=event)

    def memcpy(self, ranks, nbytes, kind: str) -> None:
        r = self._ranks(ranks)
        b = np.broadcast_to(np.asarray(nbytes, dtype=np.int64), r.shape)
        keep = b > 0
        if keep.any():
            self.emit("Memcpy", r[keep], bytes=b[keep].astype(np.uint64), copy_kind=kind)

    def _d2h(self, ranks, nbytes) -> None:
        if self.staged:
            self.memcpy(ranks, nbytes, "d2h")

    def _h2d(self, ranks, nbytes) -> None:
        if self.staged:
            self.memcpy(ranks, nbytes, "h2d")

    # ------------------------------------------------------------------ point to point
    def send(self, ranks, peer, tag, nbytes, *, op: str = "Send", comm: int = 0, req=0,
             contiguous=True) -> None:
        """Blocking or nonblocking send (``op``), with the staged ``d2h`` copy before it."""
        r = self._ranks(ranks)
        peer = np.broadcast_to(np.asarray(peer, np.int64), r.shape)
        real = peer != PROC_NULL
        self._d2h(r[real], np.broadcast_to(np.asarray(nbytes, np.int64), r.shape)[real])
        self.emit(op, r, peer=peer, tag=tag, bytes=nbytes, comm_id=comm, req=req, mem_space=self.buffers,
                  contiguous=contiguous)

    def recv(self, ranks, peer, tag, nbytes, *, op: str = "Recv", comm: int = 0, req=0,
             contiguous=True) -> None:
        """``Recv`` (followed by its staged ``h2d``) or ``Irecv`` (copy after the wait: ``h2d``)."""
        r = self._ranks(ranks)
        self.emit(op, r, peer=peer, tag=tag, recv_bytes=nbytes, comm_id=comm, req=req,
                  mem_space=self.buffers, contiguous=contiguous)
        if op == "Recv":
            peer = np.broadcast_to(np.asarray(peer, np.int64), r.shape)
            real = peer != PROC_NULL
            self._h2d(r[real], np.broadcast_to(np.asarray(nbytes, np.int64), r.shape)[real])

    def h2d(self, ranks, nbytes) -> None:
        """Staged copy of a completed nonblocking receive (no-op unless ``staged``)."""
        self._h2d(ranks, nbytes)

    def waitall(self, ranks, reqs: np.ndarray, valid: np.ndarray | None = None, op: str = "Waitall") -> None:
        """``Waitall`` on ``reqs[i, valid[i]]`` (in column order) for each rank ``ranks[i]``."""
        r = self._ranks(ranks)
        reqs = np.broadcast_to(np.asarray(reqs, np.uint64), (len(r), np.shape(reqs)[-1]))
        if valid is None:
            valid = np.ones(reqs.shape, bool)
        lens = valid.sum(axis=1)
        self.emit(op, r, reqs=(lens, reqs[valid]))

    def sendrecv(self, ranks, dest, send_tag, send_bytes, source, recv_tag, recv_bytes, *,
                 comm: int = 0) -> None:
        """``Sendrecv``; ``dest``/``source`` may be PROC_NULL (-2) as with MPI_Cart_shift."""
        r = self._ranks(ranks)
        dest = np.broadcast_to(np.asarray(dest, np.int64), r.shape)
        source = np.broadcast_to(np.asarray(source, np.int64), r.shape)
        sb = np.broadcast_to(np.asarray(send_bytes, np.int64), r.shape)
        rb = np.broadcast_to(np.asarray(recv_bytes, np.int64), r.shape)
        self._d2h(r[dest != PROC_NULL], sb[dest != PROC_NULL])
        self.emit("Sendrecv", r, peer=dest, tag=send_tag, bytes=sb.astype(np.uint64),
                  recv_peer=source, recv_tag=recv_tag, recv_bytes=rb.astype(np.uint64), comm_id=comm,
                  mem_space=self.buffers)
        self._h2d(r[source != PROC_NULL], rb[source != PROC_NULL])

    def exchange(self, ranks, peers: np.ndarray, send_bytes: np.ndarray, recv_bytes: np.ndarray,
                 send_tags, recv_tags, *, order: str = "recv_first", between=None, comm: int = 0,
                 contiguous=True) -> None:
        """Nonblocking neighbour exchange over K slots: ``peers[i, k]`` (``-1`` = no neighbour,
        skipped; ``PROC_NULL`` = posted to MPI_PROC_NULL) for rank ``ranks[i]``.

        ``order="recv_first"``: all Irecv, then all Isend; ``"interleaved"``: Irecv k, Isend k.
        ``between()`` is called after the last Isend and before the Waitall (overlapped compute).
        Requests: Irecv k -> k+1, Isend k -> K+k+1; the Waitall names them in posting order.
        Staged: ``d2h`` right before each Isend, ``h2d`` per received message after the Waitall.
        """
        r = self._ranks(ranks)
        n, K = peers.shape
        send_tags = np.broadcast_to(np.asarray(send_tags, np.int64), (n, K))
        recv_tags = np.broadcast_to(np.asarray(recv_tags, np.int64), (n, K))
        present = peers != -1
        contig = np.broadcast_to(np.asarray(contiguous, bool), (n, K))
        reqs = np.zeros((n, 2 * K), np.uint64)
        posted = np.zeros((n, 2 * K), bool)

        def post_recv(k):
            m = present[:, k]
            if m.any():
                self.recv(r[m], peers[m, k], recv_tags[m, k], recv_bytes[m, k], op="Irecv", req=k + 1,
                          comm=comm, contiguous=contig[m, k])
                reqs[m, 2 * k] = k + 1
                posted[m, 2 * k] = True

        def post_send(k):
            m = present[:, k]
            if m.any():
                self.send(r[m], peers[m, k], send_tags[m, k], send_bytes[m, k], op="Isend",
                          req=K + k + 1, comm=comm, contiguous=contig[m, k])
                reqs[m, 2 * k + 1] = K + k + 1
                posted[m, 2 * k + 1] = True

        if order == "interleaved":
            for k in range(K):
                post_recv(k)
                post_send(k)
        elif order == "recv_first":
            for k in range(K):
                post_recv(k)
            for k in range(K):
                post_send(k)
            # Waitall names requests in posting order: all receives, then all sends
            reqs = np.concatenate([reqs[:, 0::2], reqs[:, 1::2]], axis=1)
            posted = np.concatenate([posted[:, 0::2], posted[:, 1::2]], axis=1)
        else:
            raise ValueError(f"unknown exchange order {order!r}")
        if between is not None:
            between()
        has = posted.any(axis=1)
        if has.any():
            self.waitall(r[has], reqs[has], posted[has])
        if self.staged:
            for k in range(K):
                m = present[:, k] & (peers[:, k] != PROC_NULL)
                self._h2d(r[m], recv_bytes[m, k])

    # ------------------------------------------------------------------ collectives
    def collective(self, op: str, ranks=None, *, comm: int | np.ndarray = 0, nbytes=0, recv_bytes=0, root: int = -1,
                   root_world: int | None = None, counts_bytes=None, recv_counts_bytes=None) -> None:
        """A blocking collective over the world ranks ``ranks`` (the members of ``comm`` in comm-rank
        order; default all).  ``root`` is the comm rank, ``root_world`` its world rank.

        Staging (HostCopy): the data that leaves a rank's GPU is copied ``d2h`` before the call,
        the data that lands in it ``h2d`` after: Bcast root d2h / others h2d; Scatter(v) root d2h
        of the whole buffer, everyone h2d of its part; Gather(v) everyone d2h, root h2d of the
        whole; Reduce everyone d2h, root h2d; all-to-all kinds everyone both ways.
        """
        r = self._ranks(ranks)
        sb = np.broadcast_to(np.asarray(nbytes, np.int64), r.shape)
        rb = np.broadcast_to(np.asarray(recv_bytes, np.int64), r.shape)
        is_root = (r == root_world) if root_world is not None else np.zeros(r.shape, bool)
        base = op[1].upper() + op[2:] if op in NONBLOCKING_COLLECTIVES else op
        if self.staged:
            if base in ("Bcast",):
                self._d2h(r[is_root], sb[is_root])
            elif base in ("Scatter", "Scatterv"):
                self._d2h(r[is_root], sb[is_root])
            elif base != "Barrier":
                self._d2h(r, sb)
        cols: dict[str, Any] = {"bytes": sb.astype(np.uint64), "recv_bytes": rb.astype(np.uint64),
                                "comm_id": comm, "root": root, "mem_space": self.buffers}
        if counts_bytes is not None:
            cols["counts_bytes"] = counts_bytes
        if recv_counts_bytes is not None:
            cols["recv_counts_bytes"] = recv_counts_bytes
        self.emit(op, r, **cols)
        if self.staged:
            if base == "Bcast":
                self._h2d(r[~is_root], sb[~is_root])
            elif base in ("Gather", "Gatherv", "Reduce"):
                self._h2d(r[is_root], rb[is_root])
            elif base != "Barrier":
                self._h2d(r, rb)


def trace_from_rows(rows: _Rows, nranks: int, comms: list[Comm], source: str, buffers: str) -> Trace:
    """An in-memory Trace, rows sorted by (rank, seq)."""
    if len(rows):
        order = np.lexsort((rows.seq, rows.rank))
        if not np.all(order[1:] > order[:-1]):
            rows = rows.take(order)
    return Trace(table=rows_to_table(rows), nranks=nranks, comms=list(comms), source=source,
                 buffers=buffers)

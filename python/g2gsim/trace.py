"""The native trace: one Parquet file of per-rank operations (see docs/trace-format.md).

``Trace`` holds a pyarrow Table plus the communicator list and metadata.  Readers build traces with
``TraceBuilder`` (row at a time, for converters) or ``Trace.from_columns`` (numpy columns, for
generators of millions of rows); writers and the core read the file written by ``Trace.write``.

This is the lowest layer of the package: it imports neither ``sim.py`` nor the readers.  The readers
of the imported formats (OTF2, DUMPI, Nsight Systems) sit above it and are reached through
``register_format``, which ``g2gsim/formats.py`` calls when ``g2gsim`` is imported.
"""
from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ._trace_base import (  # noqa: F401  (re-exported: the trace's errors, windows and formats)
    _READERS,
    DEFAULT_WINDOW_OPS,
    FORMAT_VERSION,
    ROW_GROUP_ROWS,
    WINDOW_ROWS,
    TraceError,
    auto_window_ops,
    detect_format,
    reader,
    register_format,
)

# the vocabulary and the columns come from the core (g2gsim/vocab.py); re-exported here
from .vocab import (  # noqa: E402,F401
    ALL_OPS,
    ANY_SOURCE,
    ANY_TAG,
    BLOCKING_COLLECTIVES,
    COLLECTIVES,
    COLUMNS,
    COPY_KINDS,
    GPU_OPS,
    MEM_SPACES,
    NONBLOCKING_COLLECTIVES,
    P2P_OPS,
    PROC_NULL,
    TEST_OPS,
    WAIT_OPS,
)


def _arrow_type(name: str) -> pa.DataType:
    if name.startswith("list<") and name.endswith(">"):
        return pa.list_(_arrow_type(name[5:-1]))
    return pa.type_for_alias(name)


SCHEMA = pa.schema([(c.name, _arrow_type(c.type)) for c in COLUMNS])

# every column but rank, seq and op: what a row that does not give it holds
DEFAULTS: dict[str, Any] = {c.name: c.default for c in COLUMNS if not c.required}


def file_metadata(nranks: int, window_ops: int, comms: list[Comm], source: str,
                  buffers: str) -> dict[str, str]:
    """The Parquet key/value metadata of a native trace (docs/trace-format.md)."""
    return {
        "g2gsim.format_version": str(FORMAT_VERSION),
        "g2gsim.nranks": str(nranks),
        "g2gsim.window_ops": str(window_ops),
        "g2gsim.comms": json.dumps([c.to_json() for c in comms]),
        "g2gsim.source": source,
        "g2gsim.buffers": buffers,
    }


class NativeWriter:
    """The one writer of the native format (``Trace.write`` and the generators' streamed writer):
    the format's schema, metadata and encoding, and row groups that hold whole windows.

    ``append(table, window)`` takes rows sorted by (window, rank, seq) with each row's window
    (``seq // window_ops``) and writes them in row groups cut at window boundaries, each of at
    least ``row_group_rows`` rows except the last of the batch; a batch must hold whole windows.
    """

    def __init__(self, path: str | Path, meta: dict[str, str], row_group_rows: int = 0,
                 schema: pa.Schema | None = None):
        self.path = Path(path)
        self.row_group_rows = row_group_rows or ROW_GROUP_ROWS
        # ``schema``: a table read from an older file may lack an optional column (priority)
        self.schema = (schema or SCHEMA).remove_metadata()
        # written next to the final path and renamed into place by close(): a run killed mid-way
        # never leaves a corrupt file at the final path (abort() removes the partial file)
        self._tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        # dictionary encoding on every column: the core decodes such files ~10 % faster
        self._w = pq.ParquetWriter(self._tmp, self.schema.with_metadata(meta), compression="zstd",
                                   use_dictionary=True)
        self.rows_written = 0
        self.row_groups = 0

    def append(self, table: pa.Table, window: np.ndarray) -> None:
        if len(table) == 0:
            return
        lo, hi = int(window[0]), int(window[-1]) + 1
        bounds = np.searchsorted(window, np.arange(lo, hi + 1, dtype=window.dtype), side="left")
        start = 0
        for k in range(1, len(bounds)):
            size = int(bounds[k]) - start
            if size and (size >= self.row_group_rows or k == len(bounds) - 1):
                self._w.write_table(table.slice(start, size), row_group_size=size)
                self.rows_written += size
                self.row_groups += 1
                start = int(bounds[k])

    def close(self) -> None:
        if self.rows_written == 0:
            self._w.write_table(self.schema.empty_table())
        self._w.close()
        os.replace(self._tmp, self.path)

    def abort(self) -> None:
        """Closes and removes the partial file; the final path is left as it was."""
        try:
            self._w.close()
        finally:
            self._tmp.unlink(missing_ok=True)


@dataclass
class Comm:
    """An MPI communicator of a trace: ``id`` (the ``comm`` column's value), ``name`` and its
    ``members`` (world ranks in communicator-rank order; ``None`` means all ranks)."""
    id: int
    name: str
    members: list[int] | None  # world ranks in comm-rank order; None = all world ranks

    def to_json(self) -> dict:
        """The communicator as stored in the trace's metadata."""
        return {"id": self.id, "name": self.name, "members": self.members}


@dataclass
class Trace:
    table: pa.Table
    nranks: int
    comms: list[Comm] = field(default_factory=lambda: [Comm(0, "MPI_COMM_WORLD", None)])
    source: str = ""
    buffers: str = "traced"
    path: Path | None = None
    #: what an importer counted (events, unmatched messages, ...); empty for other traces
    import_stats: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    # ----------------------------------------------------------------- construction
    @classmethod
    def from_columns(cls, nranks: int, columns: dict[str, Any], comms: list[Comm] | None = None,
                     source: str = "", buffers: str = "traced") -> Trace:
        """Build from column arrays (numpy or lists); missing columns take their defaults.

        ``rank`` and ``op`` are required; ``seq`` is computed from the order of rows of each rank
        when absent (rows of one rank must be given in program order).
        """
        n = len(columns["rank"])
        arrays = []
        rank = np.asarray(columns["rank"], dtype=np.uint32)
        if "seq" in columns:
            seq = np.asarray(columns["seq"], dtype=np.uint32)
        else:
            seq = _seq_from_ranks(rank, nranks)
        for f in SCHEMA:
            if f.name == "rank":
                arrays.append(pa.array(rank, type=f.type))
            elif f.name == "seq":
                arrays.append(pa.array(seq, type=f.type))
            elif f.name in columns:
                v = columns[f.name]
                if isinstance(v, np.ndarray) and not pa.types.is_list(f.type) and f.type != pa.string():
                    arrays.append(pa.array(v.astype(f.type.to_pandas_dtype(), copy=False), type=f.type))
                else:
                    arrays.append(pa.array(v, type=f.type))
            else:
                d = DEFAULTS[f.name]
                if d is None:
                    arrays.append(pa.nulls(n, type=f.type))
                elif f.type == pa.string():
                    arrays.append(pa.DictionaryArray.from_arrays(
                        pa.array(np.zeros(n, dtype=np.int32)), pa.array([d])).cast(pa.string()))
                else:
                    arrays.append(pa.array(np.full(n, d, dtype=f.type.to_pandas_dtype()), type=f.type))
        table = pa.Table.from_arrays(arrays, schema=SCHEMA)
        return cls(table=table, nranks=nranks, comms=comms or [Comm(0, "MPI_COMM_WORLD", None)],
                   source=source, buffers=buffers)

    # ----------------------------------------------------------------- I/O
    def write(self, path: str | Path, window_ops: int | None = None) -> Path:
        """Write as Parquet in streaming order (window, rank, seq); ``window_ops`` defaults to
        ``auto_window_ops(nranks)``."""
        path = Path(path)
        if window_ops is None:
            window_ops = auto_window_ops(self.nranks)
        t = self.table
        rank = t.column("rank").to_numpy()
        seq = t.column("seq").to_numpy()
        window = seq // window_ops
        order = np.lexsort((seq, rank, window))
        if not np.all(order[1:] > order[:-1]):
            t = t.take(pa.array(order))
        meta = file_metadata(self.nranks, window_ops, self.comms, self.source, self.buffers)
        w = NativeWriter(path, meta, schema=t.schema)
        try:
            w.append(t, window[order])
        except BaseException:
            w.abort()
            raise
        w.close()
        self.path = path
        return path

    @classmethod
    def read(cls, path: str | Path, progress: bool = False) -> Trace:
        """Reads a trace in any format ``g2gsim.simulate`` accepts: native ``.g2g.parquet``, a Score-P
        or g2gsim-tracer OTF2 archive (its ``traces.otf2`` anchor or directory), an SST DUMPI
        ``.meta``.  Imported formats are converted in memory (nothing is cached), buffer spaces as
        the trace records them (where buffers live is decided by ``simulate(..., buffers=...)``)."""
        path = Path(path)
        if not path.exists():
            raise TraceError(f"{path}: no such trace file")
        if not (path.is_file() and path.suffix == ".parquet"):
            kind = detect_format(path)
            if kind != "native":
                return reader(kind, path)(path, progress=progress)
        try:
            pf = pq.ParquetFile(path)
        except Exception as e:  # noqa: BLE001 - pyarrow raises several kinds
            raise TraceError(f"{path}: not a readable Parquet trace ({e})") from None
        try:
            md = {k.decode(): v.decode() for k, v in (pf.schema_arrow.metadata or {}).items()}
        except UnicodeDecodeError:
            raise TraceError(f"{path}: corrupt metadata (not UTF-8)") from None
        if "g2gsim.format_version" not in md:
            raise TraceError(f"{path}: Parquet file has no g2gsim metadata (not a g2gsim trace)")
        try:
            version = int(md["g2gsim.format_version"])
            json.loads(md.get("g2gsim.comms", "[]"))
            int(md.get("g2gsim.nranks", "x"))
        except ValueError:
            raise TraceError(f"{path}: corrupt g2gsim metadata (format_version, nranks or comms)") from None
        if version > FORMAT_VERSION:
            raise TraceError(f"{path}: trace format version {md['g2gsim.format_version']} is newer "
                             f"than this g2gsim understands ({FORMAT_VERSION})")
        try:
            table = pf.read()
        except Exception as e:  # noqa: BLE001 - pyarrow raises several kinds on a corrupt page
            raise TraceError(f"{path}: corrupt Parquet data ({e})") from None
        try:
            comms = [Comm(int(c["id"]), str(c.get("name", "")), c.get("members"))
                     for c in json.loads(md.get("g2gsim.comms", "[]"))]
        except (TypeError, KeyError, ValueError, AttributeError):
            raise TraceError(f"{path}: corrupt g2gsim.comms metadata (a list of {{id, name, members}})") from None
        return cls(table=table, nranks=int(md["g2gsim.nranks"]), comms=comms,
                   source=md.get("g2gsim.source", ""), buffers=md.get("g2gsim.buffers", "traced"),
                   path=path)

    @classmethod
    def from_otf2(cls, anchor: str | Path, **kw) -> Trace:
        """Imports a Score-P / g2gsim-tracer OTF2 archive (see readers/otf2_reader.py)."""
        return reader("otf2", anchor)(anchor, **kw)

    @classmethod
    def from_dumpi(cls, meta: str | Path, **kw) -> Trace:
        """Imports an SST DUMPI trace from its .meta file (see readers/dumpi_reader.py)."""
        return reader("dumpi", meta)(meta, **kw)

    @classmethod
    def from_nsys(cls, export: str | Path, **kw) -> Trace:
        """Imports an Nsight Systems SQLite export or .nsys-rep (see readers/nsys_reader.py)."""
        return reader("nsys", export)(export, **kw)

    def to_pandas(self):
        """The operations as a pandas DataFrame, one row per operation (columns: docs/trace-format.md)."""
        return self.table.to_pandas()

    # ----------------------------------------------------------------- checks and summaries
    def validate(self) -> None:
        """Raise TraceError naming file, rank and seq for the first inconsistency found."""
        where = str(self.path) if self.path else "<trace>"
        t = self.table
        ops = t.column("op").to_pylist() if len(t) < 5_000_000 else None
        rank = t.column("rank").to_numpy()
        seq = t.column("seq").to_numpy()
        if len(rank) and int(rank.max()) >= self.nranks:
            i = int(np.argmax(rank >= self.nranks))
            raise TraceError(f"{where}: rank {rank[i]} (seq {seq[i]}) is outside 0..{self.nranks - 1}")
        if ops is not None:
            for i, o in enumerate(ops):
                if o not in ALL_OPS:
                    raise TraceError(f"{where}: rank {rank[i]}, event {seq[i]}: unknown operation {o!r}")
        ids = {c.id: c for c in self.comms}
        comm = t.column("comm_id").to_numpy()
        bad = ~np.isin(comm, np.array(list(ids), dtype=comm.dtype))
        if bad.any():
            i = int(np.argmax(bad))
            raise TraceError(f"{where}: rank {rank[i]}, event {seq[i]}: communicator {comm[i]} "
                             f"is not defined")

    def op_counts(self) -> dict[str, int]:
        """Number of rows per operation name (``{"Send": 12, "Compute": 40, ...}``)."""
        vc = self.table.column("op").value_counts()
        return {str(d["values"]): int(d["counts"]) for d in vc.to_pylist()}


def _seq_from_ranks(rank: np.ndarray, nranks: int) -> np.ndarray:
    """seq = index of each row among the rows of its rank, in row order."""
    order = np.argsort(rank, kind="stable")
    counts = np.bincount(rank, minlength=nranks)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    seq_sorted = np.arange(len(rank), dtype=np.int64) - np.repeat(starts, counts)
    seq = np.empty(len(rank), dtype=np.uint32)
    seq[order] = seq_sorted
    return seq


class TraceBuilder:
    """Row-at-a-time construction for readers: ``b.add(rank, "Send", peer=1, bytes=8)``."""

    def __init__(self, nranks: int, source: str = "", buffers: str = "traced"):
        self.nranks = nranks
        self.source = source
        self.buffers = buffers
        self.comms: list[Comm] = [Comm(0, "MPI_COMM_WORLD", None)]
        self._cols: dict[str, list] = {f.name: [] for f in SCHEMA if f.name != "seq"}
        self._next_seq = [0] * nranks
        self._seq: list[int] = []

    def add_comm(self, comm_id: int, name: str, members: Sequence[int] | None) -> None:
        """Defines communicator ``comm_id`` (``members``: world ranks in communicator-rank order,
        ``None`` for all ranks); MPI_COMM_WORLD is id 0 and predefined."""
        if any(c.id == comm_id for c in self.comms):
            raise TraceError(f"communicator id {comm_id} defined twice")
        self.comms.append(Comm(comm_id, name, list(members) if members is not None else None))

    def add(self, rank: int, op: str, **kw: Any) -> None:
        """Appends operation ``op`` (``Send``, ``Irecv``, ``Compute``, ...) to ``rank``'s program; the
        keywords are trace columns (``peer``, ``tag``, ``bytes``, ``recv_bytes``, ``mem_space``,
        ``dur_ns``, ...; docs/trace-format.md)."""
        if op not in ALL_OPS:
            raise TraceError(f"rank {rank}, event {self._next_seq[rank]}: unknown operation {op!r}")
        unknown = set(kw) - set(DEFAULTS)
        if unknown:
            raise TypeError(f"unknown trace columns {sorted(unknown)}")
        cols = self._cols
        cols["rank"].append(rank)
        cols["op"].append(op)
        for k, d in DEFAULTS.items():
            cols[k].append(kw.get(k, d))
        self._seq.append(self._next_seq[rank])
        self._next_seq[rank] += 1

    def __len__(self) -> int:
        return len(self._seq)

    def build(self) -> Trace:
        """The Trace of everything added so far (validated)."""
        cols: dict[str, Any] = dict(self._cols)
        cols["seq"] = self._seq
        t = Trace.from_columns(self.nranks, cols, comms=self.comms, source=self.source,
                               buffers=self.buffers)
        return t


def iter_ops(ops: Iterable[str]) -> list[str]:
    return sorted(set(ops))

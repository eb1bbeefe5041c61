"""Helpers shared by the analysis modules: trace tables, op categories, size classes, formatting."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..trace import Comm, Trace
from ..vocab import (  # noqa: F401
    COLLECTIVES,
    COMPUTE_OPS,
    COPY_OPS,
    MARKER_OPS,
    MODES,
    P2P_OPS,
    SEND_OPS,
    SIZE_CLASSES,
    TEST_OPS,
    WAIT_OPS,
)
from ._fmt import KiB, MiB  # noqa: E402,F401  (re-exported)

# the core's size classes (report.rs); labels without the sort prefix
SIZE_EDGES = [c.max_bytes for c in SIZE_CLASSES if c.max_bytes is not None]
SIZE_LABELS = [c.label for c in SIZE_CLASSES]
COLL_CLASS = "collectives"
COPY_CLASS = "explicit copies"


def size_class(nbytes) -> np.ndarray:
    """Size-class label(s) of message size(s), the same classes as the core's p2p_size_classes."""
    b = np.asarray(nbytes, dtype=np.int64)
    idx = np.searchsorted(np.array(SIZE_EDGES), b, side="left")
    return np.array(SIZE_LABELS, dtype=object)[idx]


def core_class_label(label: str) -> str:
    """'b: 1KiB-64KiB' (the core's report key) -> '1KiB-64KiB'."""
    return label.split(": ", 1)[1] if ": " in label else label


def category(op: str) -> str:
    """compute | copy | p2p | collective | wait | other (waits are resolved by their requests)."""
    if op in COMPUTE_OPS:
        return "compute"
    if op in COPY_OPS:
        return "copy"
    if op in P2P_OPS:
        return "p2p"
    if op in COLLECTIVES:
        return "collective"
    if op in WAIT_OPS or op in TEST_OPS:
        return "wait"
    return "other"


def is_mpi(op: str) -> bool:
    return category(op) in ("p2p", "collective", "wait")


def categories(ops) -> np.ndarray:
    """category() of every element of a pandas Series of op names (computed once per distinct name)."""
    return ops.map({o: category(o) for o in ops.unique()}).to_numpy(object)


@dataclass
class TraceData:
    """The operations of a trace as a pandas DataFrame, with the communicators and rank count."""
    df: Any  # pandas.DataFrame, rows sorted by (rank, seq)
    nranks: int
    comms: list[Comm]
    buffers: str
    source: str
    path: Path

    @property
    def has_callsites(self) -> bool:
        cs = self.df["callsite"]
        return bool(cs.notna().any())


_COLUMNS = ["rank", "seq", "op", "dur_ns", "t_start_ns", "t_end_ns", "peer", "comm_id", "bytes", "recv_bytes",
            "recv_peer", "root", "req", "reqs", "counts_bytes", "recv_counts_bytes", "mem_space", "copy_kind",
            "stream", "callsite"]


def load_trace(trace: str | Path | Trace, assume_buffers: str | None = None) -> TraceData:
    """Reads a trace (native, OTF2 or DUMPI, as g2gsim.simulate accepts) into a TraceData, as
    recorded (``assume_buffers`` is ignored: buffers are decided at simulate time, ``buffers=``)."""
    if isinstance(trace, Trace):
        t = trace
        path = Path(t.path) if t.path else Path("<memory>")
    else:
        from ..sim import as_native
        path = as_native(trace)
        t = Trace.read(path)
    cols = [c for c in _COLUMNS if c in t.table.column_names]
    df = t.table.select(cols).to_pandas()
    df["op"] = df["op"].astype(str)
    df["callsite"] = df["callsite"].astype(object).where(df["callsite"].notna(), None)
    for c in ("mem_space", "copy_kind"):
        df[c] = df[c].astype(object)
    df = df.sort_values(["rank", "seq"], kind="stable").reset_index(drop=True)
    return TraceData(df=df, nranks=t.nranks, comms=t.comms, buffers=t.buffers, source=t.source, path=path)


def world_members(comms: list[Comm], nranks: int) -> dict[int, np.ndarray]:
    """comm id -> world ranks in communicator-rank order."""
    out = {}
    for c in comms:
        out[c.id] = np.arange(nranks) if c.members is None else np.asarray(c.members, dtype=np.int64)
    if 0 not in out:
        out[0] = np.arange(nranks)
    return out


# ------------------------------------------------------------------------------------- formatting
from ._fmt import fmt_bytes, fmt_pct, fmt_s, fmt_x  # noqa: E402,F401  (re-exported)


def ratio(a: float, b: float) -> float:
    """a / b, nan when b is 0."""
    return a / b if b else float("nan")


def size_label(n: int) -> str:
    for unit, k in (("GiB", 1 << 30), ("MiB", MiB), ("KiB", KiB)):
        if n >= k and n % k == 0:
            return f"{n // k}{unit}"
    return f"{n}B"

"""The lowest layer of the native trace that needs neither numpy nor pyarrow: the trace error,
window sizes, format detection and the registry of readers (``register_format``, filled by
g2gsim/formats.py).  trace.py re-exports all of it; commands that only convert a trace (``g2gsim
import`` of a DUMPI trace streams through the Rust converter) import this instead of trace.py and
so start without loading numpy and pyarrow.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

FORMAT_VERSION = 1
DEFAULT_WINDOW_OPS = 4096
# Windows and row groups of about this many rows: the core decodes a row group at a time into
# per-rank queues, and a window of ~16k rows (16 operations per rank at 1,024 ranks) keeps those
# queues in the CPU caches while they are replayed (measured: the 1,024-rank halo of bench/speed
# replays 8-10 % faster than from one 145k-row group), and memory bounded by a window, not a trace.
WINDOW_ROWS = 1 << 14
ROW_GROUP_ROWS = 1 << 14


def auto_window_ops(nranks: int) -> int:
    """``DEFAULT_WINDOW_OPS`` unless a window of all ranks would exceed ``WINDOW_ROWS`` rows; then
    the largest power of two that keeps it there (at least 1)."""
    if nranks * DEFAULT_WINDOW_OPS <= WINDOW_ROWS:
        return DEFAULT_WINDOW_OPS
    w = max(1, WINDOW_ROWS // max(nranks, 1))
    return 1 << (int(w).bit_length() - 1)


class TraceError(ValueError):
    """A trace that cannot be read or is inconsistent; the message names file, rank and event."""


TraceError.__module__ = "g2gsim.trace"  # where users import it from (trace.py re-exports it)


# ----------------------------------------------------------------- the imported formats
#: The reader of each imported format, by the name ``detect_format`` gives: ``read(path, **kw)``
#: returns the trace as recorded (``kw``: the reader's options; ``progress`` always accepted).
#: Filled by ``register_format`` from g2gsim/formats.py, above the readers; never from here.
_READERS: dict[str, Callable[..., Any]] = {}


def register_format(name: str, read: Callable[..., Any]) -> None:
    """Makes ``read`` the reader of format ``name`` (``"otf2"``, ``"dumpi"``, ``"nsys"``) for
    ``Trace.read`` and ``Trace.from_<name>``."""
    _READERS[name] = read


def reader(kind: str, path: str | Path) -> Callable[..., Any]:
    """The registered reader of format ``kind``; a TraceError naming ``path`` when there is none."""
    try:
        return _READERS[kind]
    except KeyError:
        raise TraceError(f"{path}: no reader is registered for {kind} traces (g2gsim.formats registers "
                         f"them when g2gsim is imported)") from None


def detect_format(p: Path) -> str:
    """The format of trace ``p`` by its name: ``native``, ``otf2``, ``dumpi`` or ``nsys`` (a directory:
    the format of the anchor or .meta it holds); a TraceError for anything else."""
    if p.is_dir():
        if list(p.glob("*.otf2")):
            return "otf2"
        if list(p.glob("*.meta")):
            return "dumpi"
        raise TraceError(f"{p}: directory holds no OTF2 anchor (*.otf2) or DUMPI .meta file")
    if p.suffix == ".otf2":
        return "otf2"
    if p.suffix == ".meta":
        return "dumpi"
    if p.suffix == ".parquet":
        return "native"
    if p.suffix in (".sqlite", ".nsys-rep"):
        return "nsys"
    raise TraceError(f"{p}: unknown trace format (expected .g2g.parquet, an OTF2 anchor .otf2, "
                     f"a DUMPI .meta or an Nsight Systems .sqlite / .nsys-rep)")

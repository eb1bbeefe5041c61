"""The trace formats g2gsim imports, each registered with its reader for ``Trace.read`` and
``Trace.from_otf2/from_dumpi/from_nsys``.

This module sits above trace.py and the readers (``g2gsim/__init__.py`` imports it, so the formats
are registered whenever ``g2gsim`` is): trace.py, the lowest layer, reaches the readers only
through ``register_format``.  The readers themselves are imported when a trace is read, not here.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._trace_base import TraceError, detect_format, register_format

if TYPE_CHECKING:
    from .trace import Trace


def dumpi_meta(p: Path) -> Path:
    """The .meta of a DUMPI trace given as the file or as its directory (which must hold one)."""
    if not p.is_dir():
        return p
    metas = sorted(p.glob("*.meta"))
    if len(metas) != 1:
        raise TraceError(f"{p}: directory holds {len(metas)} DUMPI .meta files "
                         f"({', '.join(m.name for m in metas)}); name one")
    return metas[0]


def read_otf2(anchor: str | Path, **kw) -> Trace:
    """readers/otf2_reader.py: an OTF2 archive (buffer spaces as traced)."""
    from .readers.otf2_reader import read_otf2 as read
    return read(anchor, **kw)


def read_dumpi(meta: str | Path, **kw) -> Trace:
    """readers/dumpi_reader.py: a DUMPI trace, from its .meta or the directory holding it (DUMPI
    records no buffer spaces: host)."""
    from .readers.dumpi_reader import read_dumpi as read
    return read(dumpi_meta(Path(meta)), **kw)


def read_nsys(export: str | Path, **kw) -> Trace:
    """readers/nsys_reader.py: an Nsight Systems SQLite export or .nsys-rep."""
    from .readers.nsys_reader import read_nsys as read
    return read(export, **kw)


def import_to_file(p: Path, out: str | Path, progress: bool = False) -> dict[str, Any]:
    """Imports trace ``p`` into the native file ``out``; returns {"nranks", "rows", "op_counts"}.
    DUMPI streams through the Rust converter (memory bounded per rank, not by the trace's
    length; numpy and pyarrow are not loaded); other formats are read by ``Trace.read`` and
    written."""
    p = Path(p)
    if detect_format(p) == "dumpi":
        from ._io import atomic_output
        from .readers.dumpi_reader import import_dumpi
        with atomic_output(out) as tmp:  # a temporary file renamed into place (removed on error)
            st = import_dumpi(dumpi_meta(p), tmp, assume_buffers="host", progress=progress)
        return {"nranks": st["nranks"], "rows": st["rows"], "op_counts": st["op_counts"]}
    from .trace import Trace
    t = Trace.read(p, progress=progress)
    t.write(out)
    return {"nranks": t.nranks, "rows": len(t.table), "op_counts": t.op_counts()}


register_format("otf2", read_otf2)
register_format("dumpi", read_dumpi)
register_format("nsys", read_nsys)

"""The trace formats g2gsim imports, each registered with its reader for ``Trace.read`` and
``Trace.from_otf2/from_dumpi/from_nsys``.

This module sits above trace.py and the readers (``g2gsim/__init__.py`` imports it, so the formats
are registered whenever ``g2gsim`` is): trace.py, the lowest layer, reaches the readers only
through ``register_format``.  The readers themselves are imported when a trace is read, not here.
"""
from __future__ import annotations

from pathlib import Path

from .trace import Trace, TraceError, register_format


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


register_format("otf2", read_otf2)
register_format("dumpi", read_dumpi)
register_format("nsys", read_nsys)

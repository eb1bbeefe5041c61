"""g2gsim: predict what GPU-aware MPI saves an MPI+GPU application, by trace replay."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

from . import formats  # noqa: F401,E402  (registers the imported formats' readers)

# The public names load on first use (PEP 562): `g2gsim import` of a DUMPI trace then starts
# without numpy and pyarrow, which trace.py loads; sim.py loads trace.py only where Python reads a
# trace itself, so `g2gsim.simulate` of a native trace (the core reads it) loads neither.
_LAZY = {
    "Report": "report",
    "SimulationError": "sim",
    "simulate": "sim",
    "Comm": "trace",
    "Trace": "trace",
    "TraceBuilder": "trace",
    "TraceError": "trace",
}
_SUBMODULES = {"report", "sim", "trace", "machines", "vocab", "readers", "analysis", "calibrate", "generate",
               "writers", "timeline", "record", "detect", "units", "cli"}

__all__ = ["Comm", "Report", "SimulationError", "Trace", "TraceBuilder", "TraceError", "simulate"]

if TYPE_CHECKING:
    from .report import Report
    from .sim import SimulationError, simulate
    from .trace import Comm, Trace, TraceBuilder, TraceError


def __getattr__(name: str) -> Any:
    import importlib
    if name in _LAZY:
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    if name in _SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))

"""g2gsim: predict what GPU-aware MPI saves an MPI+GPU application, by trace replay."""
from __future__ import annotations

__version__ = "0.1.0"

from . import formats  # noqa: F401,E402  (registers the imported formats' readers)
from .report import Report  # noqa: F401,E402
from .sim import SimulationError, simulate  # noqa: F401,E402
from .trace import Comm, Trace, TraceBuilder, TraceError  # noqa: F401

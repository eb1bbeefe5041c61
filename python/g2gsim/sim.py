"""Running simulations from Python: ``g2gsim.simulate(trace, machine, mode=...)``."""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Callable

from . import _core, machines
from .report import Report
from .trace import TraceError

CACHE_DIR = Path(os.environ.get("G2GSIM_CACHE", Path.home() / ".cache" / "g2gsim"))


class SimulationError(RuntimeError):
    """The replay could not finish (e.g. a deadlock in the trace); the message says where."""


def _cache_key(path: Path, extra: str) -> str:
    h = hashlib.sha256()
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    for f in files:
        st = f.stat()
        h.update(f"{f}:{st.st_size}:{st.st_mtime_ns}".encode())
    h.update(extra.encode())
    return h.hexdigest()[:20]


def as_native(trace: str | Path, assume_buffers: str | None = None, progress: bool = False) -> Path:
    """Returns a native .g2g.parquet for ``trace``: itself, or an OTF2 / DUMPI trace imported once
    and cached under ~/.cache/g2gsim (G2GSIM_CACHE)."""
    p = Path(trace)
    if not p.exists():
        raise TraceError(f"{p}: no such trace")
    if p.is_file() and p.suffix == ".parquet":
        return p
    kind = detect_format(p)
    if kind == "native":
        return p
    key = _cache_key(p, f"{kind}:{assume_buffers}")
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    out = CACHE_DIR / f"{p.stem}-{key}.g2g.parquet"
    if not out.exists():
        t = import_trace(p, assume_buffers=assume_buffers, progress=progress)
        tmp = out.with_suffix(".tmp")
        t.write(tmp)
        tmp.replace(out)
    return out


def detect_format(p: Path) -> str:
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
    raise TraceError(f"{p}: unknown trace format (expected .g2g.parquet, an OTF2 anchor .otf2 "
                     f"or a DUMPI .meta)")


def import_trace(p: Path, assume_buffers: str | None = None, progress: bool = False):
    kind = detect_format(p)
    if kind == "otf2":
        from .readers.otf2_reader import read_otf2
        return read_otf2(p, assume_buffers=assume_buffers or "traced", progress=progress)
    if kind == "dumpi":
        from .readers.dumpi_reader import read_dumpi
        return read_dumpi(p, assume_buffers=assume_buffers or "host", progress=progress)
    from .trace import Trace
    return Trace.read(p)


def simulate(trace: str | Path, machine: "str | Path | machines.MachineSpec" = "lassen", mode: str = "as-traced",
             progress: Callable[[int, int], None] | None = None, assume_buffers: str | None = None,
             **options: Any) -> Report:
    """Simulates ``trace`` on ``machine`` (preset name, TOML path, or a ``machines.MachineSpec`` from
    ``machines.with_sets(name, {"node.nic.bw": "50GB/s"})``); returns the :class:`Report` (a dict).

    options: staged_as_device, gpus_per_node, mapping ("linear", "round-robin" or a list of node
    indices), coll_algos ("allreduce=ring,..."), gpudirect_min_bytes, gpudirect_collectives_only,
    network_scale, per_rank.
    """
    native = as_native(trace, assume_buffers=assume_buffers)
    text, label = machines.resolve(machine)
    opts = {"mode": mode, **{k: v for k, v in options.items() if v is not None}}
    try:
        out = _core.simulate(str(native), text, label, opts, progress)
    except _core.TraceError as e:
        raise TraceError(str(e)) from None
    except _core.MachineError as e:
        raise machines.MachineError(str(e)) from None
    except _core.DeadlockError as e:
        raise SimulationError(str(e)) from None
    rep = Report(json.loads(out))
    if isinstance(machine, machines.MachineSpec):     # the report says what it assumed
        rep["machine_set"] = list(machine.sets)
    return rep

"""Running simulations from Python: ``g2gsim.simulate(trace, machine, mode=...)``."""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Callable

from . import _core, machines
from .trace import TraceError

CACHE_DIR = Path(os.environ.get("G2GSIM_CACHE", Path.home() / ".cache" / "g2gsim"))


class SimulationError(RuntimeError):
    pass


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
        tmp = out.with_suffix(".tmp")
        import_to_file(p, tmp, assume_buffers=assume_buffers, progress=progress)
        tmp.replace(out)
    return out


def import_to_file(p: Path, out: str | Path, assume_buffers: str | None = None,
                   progress: bool = False) -> dict:
    """Imports trace ``p`` into the native file ``out``; returns {"nranks", "rows", "op_counts"}.
    DUMPI streams through the Rust converter (memory bounded per rank, not by the trace's
    length); other formats are built in memory and written."""
    p = Path(p)
    if detect_format(p) == "dumpi":
        from .readers.dumpi_reader import import_dumpi
        st = import_dumpi(_dumpi_meta(p), out, assume_buffers=assume_buffers or "host",
                          progress=progress)
        return {"nranks": st["nranks"], "rows": st["rows"], "op_counts": st["op_counts"]}
    t = import_trace(p, assume_buffers=assume_buffers, progress=progress)
    t.write(out)
    return {"nranks": t.nranks, "rows": len(t.table), "op_counts": t.op_counts()}


def _dumpi_meta(p: Path) -> Path:
    """The .meta of a DUMPI trace given as the file or as its directory (which must hold one)."""
    if not p.is_dir():
        return p
    metas = sorted(p.glob("*.meta"))
    if len(metas) != 1:
        raise TraceError(f"{p}: directory holds {len(metas)} DUMPI .meta files "
                         f"({', '.join(m.name for m in metas)}); name one")
    return metas[0]


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
    if p.suffix in (".sqlite", ".nsys-rep"):
        return "nsys"
    raise TraceError(f"{p}: unknown trace format (expected .g2g.parquet, an OTF2 anchor .otf2, "
                     f"a DUMPI .meta or an Nsight Systems .sqlite / .nsys-rep)")


def import_trace(p: Path, assume_buffers: str | None = None, progress: bool = False):
    kind = detect_format(p)
    if kind == "otf2":
        from .readers.otf2_reader import read_otf2
        return read_otf2(p, assume_buffers=assume_buffers or "traced", progress=progress)
    if kind == "dumpi":
        from .readers.dumpi_reader import read_dumpi
        return read_dumpi(_dumpi_meta(p), assume_buffers=assume_buffers or "host", progress=progress)
    if kind == "nsys":
        from .readers.nsys_reader import read_nsys
        return read_nsys(p, assume_buffers=assume_buffers, progress=progress)
    from .trace import Trace
    return Trace.read(p)


def simulate(trace: str | Path, machine: str | Path = "lassen", mode: str = "as-traced",
             progress: Callable[[int, int], None] | None = None, assume_buffers: str | None = None,
             **options: Any) -> dict:
    """Simulates ``trace`` on ``machine`` (preset name or TOML path); returns the report dict.

    options: staged_as_device, gpus_per_node, mapping ("linear", "round-robin" or a list of node
    indices), coll_algos ("allreduce=ring,..."), gpudirect_min_bytes, gpudirect_collectives_only,
    network_scale, per_rank, timeline (a Perfetto JSON file; ``.json.gz`` is gzip-compressed),
    timeline_ranks (list of ranks), timeline_window_ns ((start, end) in simulated ns),
    timeline_max_events.
    """
    native = as_native(trace, assume_buffers=assume_buffers)
    text, label = machines.resolve(machine)
    opts = {"mode": mode, **{k: v for k, v in options.items() if v is not None}}
    gz = None
    if opts.get("timeline") and str(opts["timeline"]).endswith(".gz"):
        gz = Path(opts["timeline"])
        opts["timeline"] = str(gz.with_name(gz.name[:-3] + ".tmp"))
    if "timeline_window_ns" in opts:
        a, b = opts["timeline_window_ns"]
        opts["timeline_window_ns"] = (int(a), int(b))
    try:
        out = _core.simulate(str(native), text, label, opts, progress)
        if gz is not None:
            import gzip
            import shutil
            tmp = Path(opts["timeline"])
            with open(tmp, "rb") as src, gzip.open(gz, "wb", compresslevel=6) as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
            tmp.unlink()
    except _core.TraceError as e:
        raise TraceError(str(e)) from None
    except _core.MachineError as e:
        raise machines.MachineError(str(e)) from None
    except _core.DeadlockError as e:
        raise SimulationError(str(e)) from None
    return json.loads(out)

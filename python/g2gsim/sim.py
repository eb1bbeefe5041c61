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


BUFFERS = ("traced", "device", "host")
WINDOWS = ("traced", "all")


def legacy_buffers(assume_buffers: str | None = None, staged_as_device: bool | None = None) -> tuple[str | None, list[str]]:
    """Maps the options ``--buffers`` replaced onto it: returns (buffers or None, notices).
    ``assume_buffers`` (import time, before) and ``staged_as_device`` (gpudirect only, before) are both
    the simulate-time question "where do the MPI buffers live" (docs/semantics.md)."""
    notes = []
    out = None
    if assume_buffers is not None:
        if assume_buffers not in ("traced", "host", "device", "infer"):
            raise ValueError(f"assume_buffers={assume_buffers!r}: use buffers= traced, device or host")
        out = "traced" if assume_buffers == "infer" else assume_buffers
        why = (" (staging copies are now recognised by the simulator in every run)" if assume_buffers == "infer" else "")
        notes.append(f"--assume-buffers {assume_buffers} is replaced by --buffers {out}{why}")
    if staged_as_device:
        if out not in (None, "device"):
            raise ValueError("--staged-buffers-are-device and --assume-buffers "
                             f"{assume_buffers} contradict each other: use --buffers device or --buffers {out}")
        out = "device"
        notes.append("--staged-buffers-are-device is replaced by --buffers device (every MPI data buffer on the "
                     "GPU; hostcopy stages it, gpudirect moves it directly and drops the trace's staging copies)")
    return out, notes


def as_native(trace: str | Path, progress: bool = False, assume_buffers: str | None = None) -> Path:
    """Returns a native .g2g.parquet for ``trace``: itself, or an OTF2 / DUMPI trace imported once
    and cached under ~/.cache/g2gsim (G2GSIM_CACHE). The import records what the trace says; where
    buffers live is decided at simulate time (``buffers=``), so ``assume_buffers`` is ignored here."""
    p = Path(trace)
    if not p.exists():
        raise TraceError(f"{p}: no such trace")
    if p.is_file() and p.suffix == ".parquet":
        return p
    kind = detect_format(p)
    if kind == "native":
        return p
    key = _cache_key(p, f"{kind}:v2")
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    out = CACHE_DIR / f"{p.stem}-{key}.g2g.parquet"
    if not out.exists():
        t = import_trace(p, progress=progress)
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


def import_trace(p: Path, progress: bool = False):
    """Reads an OTF2 or DUMPI trace as it was recorded (buffer spaces as traced; DUMPI records none:
    host, marked ``assumed-host``)."""
    kind = detect_format(p)
    if kind == "otf2":
        from .readers.otf2_reader import read_otf2
        return read_otf2(p, assume_buffers="traced", progress=progress)
    if kind == "dumpi":
        from .readers.dumpi_reader import read_dumpi
        return read_dumpi(p, assume_buffers="host", progress=progress)
    from .trace import Trace
    return Trace.read(p)


def machine_info(machine: str | Path, explicit: bool = True) -> dict:
    """What the report says about the machine: name, preset or the user's file, calibrated or not,
    whether it was chosen by default, its key parameters and the ranges it gives for uncertain ones."""
    text, label = machines.resolve(machine)
    return machines.describe(text, label, default=not explicit)


def simulate(trace: str | Path, machine: str | Path = "lassen", mode: str = "as-traced",
             progress: Callable[[int, int], None] | None = None, buffers: str | None = None,
             window: str = "traced", machine_set: dict[str, Any] | None = None,
             machine_default: bool = False, assume_buffers: str | None = None,
             staged_as_device: bool | None = None, **options: Any) -> dict:
    """Simulates ``trace`` on ``machine`` (preset name or TOML path); returns the report dict.

    buffers: where MPI data buffers live: "traced" (as the trace records them; explicit staging
    copies are recognised), "device" or "host" (docs/semantics.md). window: "traced" (default:
    stretches the tracer did not record are skipped and reported) or "all" (simulated as host time).
    machine_set: {"gpu.copy_delay": "2us", ...} overrides of machine-file keys.
    options: gpus_per_node, mapping ("linear", "round-robin" or a list of node indices), coll_algos
    ("allreduce=ring,..."), gpudirect_min_bytes, gpudirect_collectives_only, network_scale, per_rank.
    ``assume_buffers`` and ``staged_as_device`` are the old names of ``buffers`` (mapped, with a notice).
    """
    legacy, notes = legacy_buffers(assume_buffers, staged_as_device)
    if legacy is not None:
        if buffers is not None and buffers != legacy:
            raise ValueError(f"buffers={buffers!r} contradicts the old option that means buffers={legacy!r}")
        buffers = legacy
    buffers = buffers or "traced"
    if buffers not in BUFFERS:
        raise ValueError(f"buffers must be one of {', '.join(BUFFERS)}, not {buffers!r}")
    if window not in WINDOWS:
        raise ValueError(f"window must be one of {', '.join(WINDOWS)}, not {window!r}")
    native = as_native(trace)
    text, label = machines.resolve(machine)
    if machine_set:
        text = machines.with_overrides(text, label, machine_set)
    opts = {"mode": mode, "buffers": buffers, "window": window,
            **{k: v for k, v in options.items() if v is not None}}
    try:
        out = _core.simulate(str(native), text, label, opts, progress)
    except _core.TraceError as e:
        raise TraceError(str(e)) from None
    except _core.MachineError as e:
        raise machines.MachineError(str(e)) from None
    except _core.DeadlockError as e:
        raise SimulationError(str(e)) from None
    rep = json.loads(out)
    info = machines.describe(text, label, default=machine_default)
    if machine_set:
        info["overrides"] = {k: str(v) for k, v in machine_set.items()}
    rep["machine_info"] = info
    rep["notices"] = notes + list(rep.get("notices", []))
    rep["assumptions"] = [info["sentence"]] + list(rep.get("assumptions", []))
    return rep

"""Running simulations from Python: ``g2gsim.simulate(trace, machine, mode=...)``."""
from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import _core, machines
from ._trace_base import TraceError, detect_format
from .formats import import_to_file  # noqa: F401  (g2gsim import; re-exported)
from .report import Report
from .vocab import BUFFERS, WINDOWS  # noqa: F401  (re-exported: simulate's choices)

if TYPE_CHECKING:   # trace.py loads numpy and pyarrow: `simulate` of a native trace needs neither
    from .trace import Trace

CACHE_DIR = Path(os.environ.get("G2GSIM_CACHE", Path.home() / ".cache" / "g2gsim"))


class SimulationError(RuntimeError):
    """The replay cannot go on (e.g. a deadlock in the trace): the message says where; ``blocked`` lists
    every blocked rank's line."""

    def __init__(self, msg: str, blocked: list[str] | None = None):
        super().__init__(msg)
        self.blocked = blocked or []


# what the fingerprint of a file reads: its first and last bytes (a changed header, a truncated or
# appended file, a rewritten record near either end all change it; with the size and mtime too)
_FP_BYTES = 64 * 1024


def _fingerprint(f: Path) -> list:
    """[size, mtime_ns, blake2b of the head and tail] of one file."""
    st = f.stat()
    h = hashlib.blake2b(digest_size=16)
    with open(f, "rb") as fh:
        h.update(fh.read(_FP_BYTES))
        if st.st_size > _FP_BYTES:
            fh.seek(max(_FP_BYTES, st.st_size - _FP_BYTES))
            h.update(fh.read(_FP_BYTES))
    return [st.st_size, st.st_mtime_ns, h.hexdigest()]


def archive_files(p: Path, kind: str) -> list[Path]:
    """Every file an import of ``p`` reads: an OTF2 anchor's definitions and event folder, a DUMPI
    .meta's per-rank .bin files, or every file of a folder."""
    if p.is_dir():
        return sorted(f for f in p.rglob("*") if f.is_file())
    files = [p]
    if kind == "otf2":
        files += [f for f in [p.with_suffix(".def")] if f.is_file()]
        d = p.parent / p.stem
        if d.is_dir():
            files += sorted(f for f in d.rglob("*") if f.is_file())
    elif kind == "dumpi":
        prefix = None
        try:
            for line in p.read_text(errors="replace").splitlines():
                if line.startswith("fileprefix="):
                    prefix = line.split("=", 1)[1].strip()
        except OSError:
            pass
        bins = sorted(f for f in p.parent.glob(f"{glob_escape(prefix)}-*.bin") if f.is_file()) if prefix else []
        if not bins:  # renamed files: the reader then takes <meta stem>-NNNN.bin
            bins = sorted(f for f in p.parent.glob(f"{glob_escape(p.stem)}-*.bin") if f.is_file())
        files += bins
    return files


def glob_escape(s: str) -> str:
    import glob
    return glob.escape(s)


def manifest(p: Path, kind: str) -> dict:
    """The content that an import of ``p`` depends on: every file's name, size, mtime and head/tail hash."""
    base = p if p.is_dir() else p.parent
    return {str(f.relative_to(base)) if f.is_relative_to(base) else str(f): _fingerprint(f)
            for f in archive_files(p, kind)}


def _cache_key(path: Path, extra: str, kind: str = "") -> str:
    from . import __version__
    h = hashlib.sha256()
    h.update(json.dumps(manifest(path, kind or detect_format(path)), sort_keys=True).encode())
    h.update(f"{extra}:{__version__}".encode())
    return h.hexdigest()[:20]


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


def _source_tag(p: Path) -> str:
    return hashlib.sha256(str(p.resolve()).encode()).hexdigest()[:8]


def _cache_valid(out: Path, meta: Path) -> bool:
    """A cached trace is used only when its sidecar records exactly the file that is there."""
    try:
        side = json.loads(meta.read_text())
        return side.get("trace") == _fingerprint(out)
    except (OSError, ValueError, AttributeError):
        return False


def cache_entries(cache_dir: Path | None = None) -> list[Path]:
    d = cache_dir or CACHE_DIR
    return sorted(d.glob("*.g2g.parquet")) if d.is_dir() else []


def clear_cache(cache_dir: Path | None = None) -> tuple[int, int]:
    """Removes every cached import; returns (files, bytes) removed."""
    d = cache_dir or CACHE_DIR
    n = b = 0
    if d.is_dir():
        for f in list(d.glob("*.g2g.parquet")) + list(d.glob("*.g2g.parquet.json")) + list(d.glob(".*.part-*")):
            try:
                b += f.stat().st_size
                f.unlink()
                n += 1
            except OSError:
                pass
    return n, b


_TEMP_DIRS: list = []


def _no_cache_dir() -> Path:
    import atexit
    import shutil
    import tempfile
    d = Path(tempfile.mkdtemp(prefix="g2gsim-import-"))
    if not _TEMP_DIRS:
        def _cleanup() -> None:
            for x in _TEMP_DIRS:
                shutil.rmtree(x, ignore_errors=True)
        atexit.register(_cleanup)
    _TEMP_DIRS.append(d)
    return d


def as_native(trace: str | Path, assume_buffers: str | None = None, progress: bool = False,
              cache: bool | None = None) -> Path:
    """Returns a native .g2g.parquet for ``trace``: itself, or an OTF2 / DUMPI trace imported once
    and cached under ~/.cache/g2gsim (G2GSIM_CACHE). The import records what the trace says; where
    buffers live is decided at simulate time (``buffers=``), so ``assume_buffers`` is ignored here.

    The cache is keyed by the content of every file of the archive (names, sizes, mtimes and a hash
    of each file's head and tail) and the import options; an entry is used only if it is exactly the
    file its sidecar records. ``cache=False`` (or G2GSIM_NO_CACHE=1) imports into a temporary folder."""
    p = Path(trace)
    if not p.exists():
        raise TraceError(f"{p}: no such trace")
    if p.is_file() and p.suffix == ".parquet":
        return p
    kind = detect_format(p)
    if kind == "native":
        return p
    if cache is None:
        cache = os.environ.get("G2GSIM_NO_CACHE", "") in ("", "0")
    if not cache:
        out = _no_cache_dir() / f"{p.stem}.g2g.parquet"
        import_to_file(p, out, progress=progress)
        return out
    try:
        key = _cache_key(p, f"{kind}:v3", kind)
    except OSError as e:
        raise TraceError(f"{e.filename or p}: cannot read the trace ({e.strerror or e})") from None
    tag = _source_tag(p)
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    out = CACHE_DIR / f"{p.stem}-{tag}-{key}.g2g.parquet"
    meta = out.with_name(out.name + ".json")
    if out.exists() and _cache_valid(out, meta):
        return out
    # entries of this source with another key are stale: the archive changed since
    for old in CACHE_DIR.glob(f"{glob_escape(p.stem)}-{tag}-*.g2g.parquet*"):
        try:
            old.unlink()
        except OSError:
            pass
    import_to_file(p, out, progress=progress)  # a temporary file renamed into place
    from ._io import write_text_atomic
    write_text_atomic(meta, json.dumps({"source": str(p.resolve()), "kind": kind,
                                        "key": key, "trace": _fingerprint(out)}))
    return out


def import_trace(p: Path, progress: bool = False) -> Trace:
    """Reads an OTF2 or DUMPI trace as it was recorded (buffer spaces as traced; DUMPI records none:
    host, marked ``assumed-host``): ``Trace.read``, through the reader g2gsim/formats.py registers."""
    from .trace import Trace  # numpy and pyarrow: only where Python reads the trace itself
    return Trace.read(p, progress=progress)


def machine_info(machine: str | Path | machines.MachineSpec, explicit: bool = True) -> dict:
    """What the report says about the machine: name, preset or the user's file, calibrated or not,
    whether it was chosen by default, its key parameters and the ranges it gives for uncertain ones."""
    text, label = machines.resolve(machine)
    return machines.describe(text, label, default=not explicit)


def _beyond_calibration(info: dict, label: str, rep: dict) -> list[str]:
    """Notices where the trace goes beyond the machine file's calibration (``calibrated_max_bytes``,
    ``calibrated_ranks``, written by ``g2gsim calibrate fit``, in ``info`` from ``machines.describe``):
    a message larger than any measured (its rate is extrapolated), more ranks on a node than any
    measured series ran on (collective algorithms and sharing among more peers are extrapolated)."""
    def format_size(n: int) -> str:
        for unit, k in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
            if n >= k:
                return f"{n / k:.4g} {unit}"
        return f"{n} B"
    out = []
    limit = info.get("calibrated_max_bytes")
    biggest = int(rep.get("max_message_bytes") or 0)
    if limit is not None and biggest > limit:
        out.append(f"the trace's largest message ({format_size(biggest)}) is larger than any {label} was "
                   f"calibrated on (up to {format_size(limit)}): its rate there is extrapolated; measure up "
                   f"to that size (measure.py --max-bytes) to know it")
    ranks = info.get("calibrated_ranks")
    nranks, nodes = int(rep.get("nranks") or 0), max(int(rep.get("nodes") or 1), 1)
    per_node = -(-nranks // nodes)
    if ranks is not None and per_node > ranks:
        out.append(f"the trace runs {per_node} ranks on a node; {label} was calibrated on at most {ranks} "
                   f"ranks at once: collective algorithms (which {ranks} ranks may not tell apart) and the "
                   f"sharing among more peers are extrapolated; calibrate on as many GPUs as the trace uses")
    return out


def simulate(trace: str | Path, machine: str | Path | machines.MachineSpec = "lassen", mode: str = "as-traced",
             progress: Callable[[int, int], None] | None = None, buffers: str | None = None,
             window: str = "traced", machine_set: Mapping[str, Any] | Iterable[str] | None = None,
             machine_default: bool = False, assume_buffers: str | None = None,
             staged_as_device: bool | None = None, cache: bool | None = None, **options: Any) -> Report:
    """Simulates ``trace`` on ``machine`` (preset name, TOML path, or a ``machines.MachineSpec`` from
    ``machines.with_sets(name, {"node.nic.bw": "50GB/s"})``); returns the :class:`Report` (a dict).

    buffers: where MPI data buffers live: "traced" (as the trace records them; explicit staging
    copies are recognised), "device" or "host" (docs/semantics.md). window: "traced" (default:
    stretches the tracer did not record are skipped and reported) or "all" (simulated as host time).
    machine_set: {"gpu.copy_delay": "2us", ...} (or ["gpu.copy_delay=2us", ...]): machine-file keys set
    exactly as ``--set KEY=VALUE`` does (``machines.with_sets``; checked by the core's schema).
    options: gpus_per_node, mapping ("linear", "round-robin" or a list of node indices), coll_algos
    ("allreduce=ring,..."), gpudirect_min_bytes, gpudirect_collectives_only, network_scale, per_rank,
    timeline (a Perfetto JSON file; ``.json.gz`` is gzip-compressed), timeline_ranks (list of ranks),
    timeline_window_ns ((start, end) in simulated ns), timeline_max_events, call_times (a path: every
    call's simulated duration, the analysis' exact per-call times; format in analysis/attribution.py).
    progress(done_ops, total_ops) is called every 65,536 events (the simulation holds no Python lock
    meanwhile: other threads run); an exception it raises stops the run and is raised here.
    ``assume_buffers`` and ``staged_as_device`` are the old names of ``buffers`` (mapped, with a notice).
    ``cache=False``: import OTF2 / DUMPI afresh (no import cache).
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
    native = as_native(trace, cache=cache)
    if machine_set:
        machine = machines.with_sets(machine, machine_set)
    text, label = machines.resolve(machine)
    opts = {"mode": mode, "buffers": buffers, "window": window,
            **{k: v for k, v in options.items() if v is not None}}
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
        msg = e.args[0] if e.args else str(e)
        blocked = json.loads(e.args[1]) if len(e.args) > 1 and e.args[1] else []
        raise SimulationError(msg, blocked) from None
    rep = Report(json.loads(out))
    info = machines.describe(text, label, default=machine_default)
    if isinstance(machine, machines.MachineSpec):     # the report says what it assumed
        rep["machine_set"] = list(machine.sets)
        info["overrides"] = dict(machines.parse_set(item) for item in machine.sets)
        info["overrides"] = {k: str(v) for k, v in info["overrides"].items()}
    rep["machine_info"] = info
    notes += _beyond_calibration(info, label, rep)
    rep["notices"] = notes + list(rep.get("notices", []))
    rep["assumptions"] = [info["sentence"]] + list(rep.get("assumptions", []))
    return rep

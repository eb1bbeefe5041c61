"""Synthetic traces: ``g2gsim generate WORKLOAD --ranks N [options] -o TRACE``.

Registry API (the CLI is built from it)::

    GENERATORS: dict[str, Generator]           # name -> Generator(name, description, ...)
    params(name) -> list[Param]                # (name, type, default, help) tuples, + .choices
    generate(name, ranks, **params) -> Trace   # in memory, rows sorted by (rank, seq)
    generate_to_file(name, ranks, path, **params) -> Path   # streamed, bounded memory

Parameter values may be Python values or CLI strings (``"64KiB"``, ``"8,16,1MiB"``, ``"true"``;
sizes follow ``g2gsim.units``: ``64KiB`` = 65536, ``64KB`` = ``64K`` = 64000).
Types are ``int``, ``float``, ``bool``, ``str`` (``.choices`` lists the allowed values) and
``list[int]`` (comma-separated on a command line); a default of ``None`` means "derive it"
(``compute_ns``: from the workload's stated rate).

Every workload takes ``buffers`` (``device``/``host``: the ``mem_space`` of message rows),
``staged`` (host buffers, HostCopy style: ``Memcpy`` d2h of ``bytes`` right before each send and
h2d after each receive completes, ``stream`` -1), ``jitter`` and ``seed``.  Generation is
deterministic; the only randomness is the seeded jitter.  Any rank count works: grids come from
a most-square factorisation (like MPI_Dims_create; a prime N gives an N x 1 grid), and a workload
errors out, saying why, only where the request cannot be met (e.g. an explicit process grid that
does not hold N ranks, or a domain smaller than the process grid).
"""
from __future__ import annotations

import dataclasses
import inspect
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..trace import Trace
from . import matmul, micro, proxies, stencil, synthetic
from ._params import Param, coerce, fmt_value, param_list
from ._program import (
    DEFAULT_ROW_GROUP_ROWS,
    SMALL_TRACE_ROWS,
    SPILL_ROWS,
    Program,
    StreamWriter,
    auto_window_ops,
    file_metadata,
    trace_from_rows,
)

__all__ = ["GENERATORS", "Generator", "Param", "params", "choices", "describe", "generate",
           "generate_to_file", "source_text"]


@dataclass(frozen=True)
class Generator:
    name: str
    description: str                         # one line, for `g2gsim generate --help`
    params_cls: type                         # dataclass of the workload's parameters
    build: Callable[[Program, Any], None]    # build(program, params) emits every rank's program
    min_ranks: int = 1

    @property
    def doc(self) -> str:
        """Longer description: the build function's docstring."""
        return inspect.cleandoc(self.build.__doc__ or "")

    def params(self) -> list[Param]:
        return param_list(self.params_cls)


GENERATORS: dict[str, Generator] = {}


def _register(name: str, description: str, params_cls: type, build, min_ranks: int = 1) -> None:
    GENERATORS[name] = Generator(name, description, params_cls, build, min_ranks)


_register("pingpong", "ping-pong between rank pairs: blocking Send/Recv, a list of sizes (the CUDA-aware MPI blog's benchmark)",
          micro.PingPongParams, micro.build_pingpong, 2)
_register("pingping", "ping-ping: both ranks of a pair Isend+Irecv at once, then Waitall (the CUDA-aware MPI blog's benchmark)",
          micro.PingPingParams, micro.build_pingping, 2)
_register("jacobi2d", "2D Jacobi, 4-neighbour halo of doubles, optional compute/comm overlap, "
          "residual Allreduce (NVIDIA multi-GPU programming models)", stencil.JacobiParams, stencil.build_jacobi)
_register("diffusion2d", "2D diffusion stencil, 128 x 131072 in row slabs, Irecv/Isend halo (the CSCS diffusion exercise)",
          stencil.DiffusionParams, stencil.build_diffusion)
_register("matmul", "matrix multiply: Bcast A, Scatter B column blocks, kernel, Gather C (the Leonardo GPU-aware MPI study)",
          matmul.MatmulParams, matmul.build_matmul)
_register("amgx", "AmgX proxy: V-cycle halo exchanges with 4 neighbours, 650 B-650 KB, Allreduce-heavy, "
          "~5% communication (as Khetawat et al. traced it)", proxies.AmgxParams, proxies.build_amgx)
_register("lulesh", "LULESH proxy: 26-neighbour 3D halo, 24 B to 1 MB, dt Allreduce, ~30% "
          "communication (as Khetawat et al. traced it)", proxies.LuleshParams, proxies.build_lulesh)
_register("minisweep", "Minisweep proxy: KBA wavefront sweeps on a 2D grid, 4 and 8 MiB faces, "
          "communication-bound (as Khetawat et al. traced it)", proxies.MinisweepParams, proxies.build_minisweep)
_register("sw4lite", "SW4lite proxy: Sendrecv halo, half the messages ~64 KB, half ~12 MB, ~40% "
          "communication (as Khetawat et al. traced it)", proxies.Sw4liteParams, proxies.build_sw4lite)
_register("halo3d", "synthetic halo exchange on a periodic 3D (or --ndims 2) grid, vectorised for "
          "1M ranks", synthetic.Halo3dParams, synthetic.build_halo)
_register("halo2d", "synthetic halo exchange on a periodic 2D grid (halo3d with ndims=2)",
          synthetic.Halo2dParams, synthetic.build_halo)
_register("allreduce", "synthetic Compute + Allreduce loop", synthetic.AllreduceParams,
          synthetic.build_allreduce)
_register("alltoall", "synthetic Compute + Alltoall loop (world or groups)", synthetic.AlltoallParams,
          synthetic.build_alltoall)


# --------------------------------------------------------------------------------------- API
def _get(name: str) -> Generator:
    try:
        return GENERATORS[name]
    except KeyError:
        raise ValueError(f"unknown workload {name!r}; known: {', '.join(sorted(GENERATORS))}") from None


def params(name: str) -> list[Param]:
    """``[(name, type, default, help), ...]`` of a workload (each also has ``.choices``)."""
    return _get(name).params()


def choices(name: str) -> dict[str, tuple]:
    """Parameters of ``name`` that take one of a fixed set of values."""
    return {p.name: p.choices for p in params(name) if p.choices is not None}


def _resolve(name: str, ranks: Any, values: dict[str, Any]) -> tuple[Generator, int, Any]:
    gen = _get(name)
    try:
        nranks = int(ranks)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: --ranks must be an integer, got {ranks!r}") from None
    if nranks != ranks and not isinstance(ranks, str):
        raise ValueError(f"{name}: --ranks must be an integer, got {ranks!r}")
    if nranks < gen.min_ranks:
        raise ValueError(f"{name} needs at least {gen.min_ranks} ranks, got {nranks}")
    if nranks >= 1 << 32:
        raise ValueError(f"{name}: {nranks} ranks do not fit the trace's uint32 rank column")
    plist = {p.name: p for p in gen.params()}
    unknown = set(values) - set(plist)
    if unknown:
        raise ValueError(f"{name}: unknown parameter(s) {', '.join(sorted(unknown))}; "
                         f"known: {', '.join(plist)}")
    kw = {k: coerce(plist[k], v) for k, v in values.items()}
    prm = gen.params_cls(**kw)
    for k, p in plist.items():
        v = getattr(prm, k)
        # CUDA stream priorities are negative numbers (lower runs first)
        if p.type is int and isinstance(v, int) and v < 0 and k not in ("seed",) \
                and not k.endswith("priority"):
            raise ValueError(f"{name}: {k} must not be negative, got {v}")
        if p.type is float and isinstance(v, float) and v < 0:
            raise ValueError(f"{name}: {k} must not be negative, got {v}")
        if isinstance(v, float) and v != v or v in (float("inf"), float("-inf")):
            raise ValueError(f"{name}: {k} must be a finite number, got {v}")
        if isinstance(v, (list, tuple)) and any(isinstance(x, (int, float)) and x < 0 for x in v):
            raise ValueError(f"{name}: {k} must not hold negative values, got {list(v)}")
        # a rate of 0 would drop the work it times (compute = work / rate): never silently
        if k.endswith("_per_s") and isinstance(v, (int, float)) and not v > 0:
            raise ValueError(f"{name}: {k} is a rate and must be positive, got {v}")
    return gen, nranks, prm


def describe(name: str) -> str:
    """Markdown description of a workload: what it does, its compute model and its parameters."""
    g = _get(name)
    lines = [f"### `{name}`", "", g.description + ".", "", g.doc, "", "| parameter | type | default | meaning |",
             "|---|---|---|---|"]
    for p in g.params():
        t = getattr(p.type, "__name__", str(p.type))
        t = "list[int]" if str(p.type).startswith("list") else t
        d = "derived" if p.default is None else fmt_value(p.default)
        ch = f" ({' / '.join(map(str, p.choices))})" if p.choices else ""
        lines.append(f"| `{p.name}` | {t} | {d} | {p.help}{ch} |")
    return "\n".join(lines) + "\n"


def source_text(name: str, ranks: int, prm: Any) -> str:
    """The ``g2gsim.source`` metadata: the command that regenerates the trace."""
    args = " ".join(f"-p {f.name}={fmt_value(getattr(prm, f.name))}"
                    for f in dataclasses.fields(prm) if getattr(prm, f.name) is not None)
    return f"g2gsim generate {name} --ranks {ranks} {args}"


def _new_program(nranks: int, prm: Any) -> Program:
    return Program(nranks, buffers=prm.buffers, staged=prm.staged, jitter=prm.jitter, seed=prm.seed)


def _buffers_meta(prm: Any) -> str:
    return "assumed-device" if prm.buffers == "device" else "assumed-host"


def generate(name: str, ranks: int, **params: Any) -> Trace:
    """Build the trace of workload ``name`` on ``ranks`` ranks in memory."""
    gen, nranks, prm = _resolve(name, ranks, params)
    p = _new_program(nranks, prm)
    gen.build(p, prm)
    return trace_from_rows(p.take_rows(), nranks, p.comms, source_text(name, nranks, prm),
                           _buffers_meta(prm))


def generate_to_file(name: str, ranks: int, path: str | Path, *, window_ops: int | None = None,
                     row_group_rows: int = DEFAULT_ROW_GROUP_ROWS, spill_rows: int = SPILL_ROWS,
                     **params: Any) -> Path:
    """Generate straight to a Parquet trace with bounded memory.

    Rows are streamed a window at a time in the documented order (window, rank, seq), each row
    group holding whole windows.  ``window_ops`` defaults to ``auto_window_ops`` (as ``Trace.write``):
    4096 unless a window of all ranks would exceed ~16k rows, then the largest power of two that
    stays under (16 for 1,024 ranks, 1 from 16,384 ranks).  A trace that ends up at most ~1M rows without having streamed
    anything is written by ``Trace.write`` itself.  When ranks run different numbers of operations
    (non-periodic edges), rows of windows the slowest rank has not finished wait in memory; beyond
    ``spill_rows`` of them the furthest windows go to a temporary folder next to ``path``.
    """
    gen, nranks, prm = _resolve(name, ranks, params)
    path = Path(path)
    w = auto_window_ops(nranks) if window_ops is None else int(window_ops)
    if w < 1:
        raise ValueError("window_ops must be >= 1")
    p = _new_program(nranks, prm)
    source = source_text(name, nranks, prm)
    sink = StreamWriter(path, nranks, w, max(1, int(row_group_rows)))
    spill_dir = path.parent / f".{path.name}.spill"
    p.attach(sink, lambda: file_metadata(nranks, w, p.comms, source, _buffers_meta(prm)), spill_dir,
             int(spill_rows))
    ok = written = False
    try:
        gen.build(p, prm)
        written = True
        if not sink.opened and p.rows <= SMALL_TRACE_ROWS:
            trace = trace_from_rows(p.take_rows(), nranks, p.comms, source, _buffers_meta(prm))
            trace.write(path, window_ops=w)
        else:
            p.finish_stream()
        ok = True
    finally:
        written = written or sink.opened
        try:
            sink.close()
        finally:
            shutil.rmtree(spill_dir, ignore_errors=True)
            if not ok and written and path.exists():
                path.unlink()               # no half-written traces
    return path

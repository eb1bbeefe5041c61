"""WORKLOADS.md: the workload reference, rendered from the registry."""
from __future__ import annotations

from pathlib import Path

HEAD = """# Synthetic workloads (`g2gsim generate`)

Generated from the registry (`python/g2gsim/generate/__init__.py`, `describe(name)`); regenerate with
`python3 -m g2gsim.generate._docs`.

`g2gsim generate WORKLOAD --ranks N -p name=value ... -o TRACE` writes a trace in the native format
(docs/trace-format.md).  Common to every workload:

* **Any rank count.**  Process grids are the most square factorisation of N (like MPI_Dims_create;
  a prime N gives an N x 1 grid).  A workload fails, saying why, only when an explicit process grid
  does not hold N ranks or the domain has fewer points than the grid has ranks.
* **Buffers.**  `buffers=device` (GPU-aware MPI) or `host` sets `mem_space` of every message and
  collective row; `g2gsim.buffers` is `assumed-device` / `assumed-host`.
* **HostCopy staging.**  `staged=true` (with `buffers=host`) adds the explicit copies of a HostCopy
  application: a `Memcpy` d2h of the send size right before each send, a `Memcpy` h2d of the
  receive size right after each `Recv`/`Sendrecv`, or after the `Wait`/`Waitall` that completes an
  `Irecv` (in posting order), all with `stream` -1.  Collectives: data leaving the GPU is copied d2h
  before the call, data arriving h2d after (Bcast: root d2h, others h2d; Scatter: root d2h of the
  whole buffer, every rank h2d of its part; Gather: every rank d2h, root h2d of the whole;
  Allreduce/Alltoall: both ways on every rank).  No copies for MPI_PROC_NULL peers.
* **Compute gaps** come from a rate stated per workload (stencils: `bytes_per_s` of the kernel;
  matmul: `flops_per_s`; proxies: a target communication share at a nominal network; synthetic:
  `compute_ns`), or from `compute_ns` given per iteration.  `jitter`/`seed` perturb them
  reproducibly.
* **Deterministic**: the same arguments give the identical trace; `g2gsim.source` holds the command
  that regenerates it.  Every rank starts with `Init` and ends with `Finalize`.
* **Large traces**: `generate_to_file` streams whole windows in (window, rank, seq) order with
  bounded memory; `window_ops` is 4096 unless a window of all ranks would exceed ~16k rows (then a
  smaller power of two: 16 for 1,024 ranks, 1 from 16,384 ranks on), and row groups hold whole
  windows, at least ~16k rows each.  A window is written once every rank is past it;
  where ranks run different numbers of operations (non-periodic edges of the application
  workloads) the rows ahead of the slowest rank wait, in memory up to `spill_rows` (8M) and in a
  temporary folder next to the output beyond that.

"""

PATH = Path(__file__).with_name("WORKLOADS.md")


def render() -> str:
    from . import GENERATORS, describe
    return HEAD + "\n".join(describe(n) for n in GENERATORS)


def write(path: Path = PATH) -> Path:
    path.write_text(render())
    return path


if __name__ == "__main__":
    print(write())

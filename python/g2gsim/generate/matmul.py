"""Distributed matrix multiplication of seed 000 (Leonardo, GPU-aware vs GPU-unaware MPI)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._grid import split
from ._params import CommonParams, P
from ._program import Program

DOUBLE = 8


@dataclass
class MatmulParams(CommonParams):
    n: int = P(8192, "matrix order N (N x N doubles); the seed does not state it, 8192 makes A 512 MiB")
    iterations: int = P(5, "repetitions of Bcast/Scatter/kernel/Gather (the seed: 5 of each per process)")
    root: int = P(0, "rank that owns A, B and C")
    flops_per_s: float = P(5.3e12, "FP64 rate of the matmul kernel; 5.3e12 gives the seed's ~52 ms per "
                                   "kernel (258 ms / 5) for N=8192 on one 4-GPU node")
    compute_ns: int | None = P(None, "kernel time per repetition, ns (overrides the rate)")


def build_matmul(p: Program, prm: MatmulParams) -> None:
    """C = A x B.  Per repetition: MPI_Bcast of the whole A (N*N doubles) from the root, MPI_Scatter
    of B in column blocks (each rank gets N x N/P), the local kernel (2*N*N*N/P flops), MPI_Gather of
    the C column blocks to the root.  When P does not divide N the blocks differ by one column and
    the calls become Scatterv/Gatherv.  Kernel Compute = 2*N*N*(N/P) / flops_per_s (per rank, by
    its column count), or compute_ns."""
    P_ = p.nranks
    if not 0 <= prm.root < P_:
        raise ValueError(f"matmul: root {prm.root} is not a rank of {P_}")
    if prm.n < P_:
        raise ValueError(f"matmul: N={prm.n} has fewer columns than the {P_} ranks")
    cols = split(prm.n, P_)
    part = DOUBLE * prm.n * cols                      # bytes of a B or C column block
    whole = DOUBLE * prm.n * prm.n
    is_root = np.arange(P_) == prm.root
    if prm.compute_ns is not None:
        t = np.full(P_, float(prm.compute_ns))
    else:
        t = 2.0 * prm.n * prm.n * cols / prm.flops_per_s * 1e9
    even = bool(np.all(cols == cols[0]))
    root_total = np.where(is_root, whole, 0)
    lens = np.where(is_root, P_, -1)

    p.init()
    for _ in range(prm.iterations):
        p.collective("Bcast", nbytes=whole, root=prm.root, root_world=prm.root)
        if even:
            p.collective("Scatter", nbytes=root_total, recv_bytes=part, root=prm.root, root_world=prm.root)
        else:
            p.collective("Scatterv", nbytes=root_total, recv_bytes=part, root=prm.root,
                         root_world=prm.root, counts_bytes=(lens, part))
        p.compute(None, t)
        if even:
            p.collective("Gather", nbytes=part, recv_bytes=root_total, root=prm.root, root_world=prm.root)
        else:
            p.collective("Gatherv", nbytes=part, recv_bytes=root_total, root=prm.root,
                         root_world=prm.root, recv_counts_bytes=(lens, part))
    p.finalize()

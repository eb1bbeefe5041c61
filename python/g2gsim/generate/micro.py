"""Micro-benchmarks of seed 001 (CUDA-aware MPI blog): ping-pong and ping-ping."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._params import CommonParams, P
from ._program import Program

SIZES_8B_TO_1GB = [1 << k for k in range(3, 31)]   # 8 B .. 1 GiB, the blog's sweep


def _pairs(nranks: int, pairing: str) -> tuple[np.ndarray, np.ndarray]:
    """(first, second) rank of each pair; with an odd count the last rank only joins barriers."""
    half = nranks // 2
    if pairing == "adjacent":
        a = np.arange(half, dtype=np.int64) * 2
        return a, a + 1
    return np.arange(half, dtype=np.int64), np.arange(half, dtype=np.int64) + half


@dataclass
class PingPongParams(CommonParams):
    sizes: list[int] = P(SIZES_8B_TO_1GB, "message sizes in bytes, one block of iterations each "
                                          "(comma list; KiB, MiB, GiB: powers of 1024; K(B), M(B), G(B): of 1000)")
    iterations: int = P(100, "round trips per size (the paper's validation timed 100)")
    pairing: str = P("adjacent", "pairs of ranks: 'adjacent' (2i, 2i+1: same node) or 'half' "
                                 "(i, i+N/2: across nodes); 2 ranks = one pair",
                     choices=("adjacent", "half"))
    barrier: bool = P(True, "MPI_Barrier before each size (as OSU-style benchmarks do)")
    compute_ns: int = P(0, "Compute gap between round trips, ns (the benchmark has none)")


def build_pingpong(p: Program, prm: PingPongParams) -> None:
    """Blocking ping-pong: A: Send(tag 1), Recv(tag 2); B: Recv(tag 1), Send(tag 2).  With staged
    host buffers each Send is preceded by a d2h Memcpy and each Recv followed by an h2d one.  Any
    N: pairs per `pairing`, an odd last rank only joins the barriers.  No compute unless
    compute_ns (gap after each round trip)."""
    a, b = _pairs(p.nranks, prm.pairing)
    ab = np.concatenate([a, b])
    p.init()
    for size in prm.sizes:
        if prm.barrier:
            p.collective("Barrier")
        for _ in range(prm.iterations):
            p.send(a, b, 1, size)
            p.recv(b, a, 1, size)
            p.recv(a, b, 2, size)
            p.send(b, a, 2, size)
            p.compute(ab, prm.compute_ns)
    p.finalize()


@dataclass
class PingPingParams(CommonParams):
    sizes: list[int] = P(SIZES_8B_TO_1GB, "message sizes in bytes, one block of iterations each "
                                          "(comma list; KiB, MiB, GiB: powers of 1024; K(B), M(B), G(B): of 1000)")
    iterations: int = P(100, "bidirectional exchanges per size")
    pairing: str = P("adjacent", "pairs of ranks: 'adjacent' (2i, 2i+1) or 'half' (i, i+N/2)",
                     choices=("adjacent", "half"))
    barrier: bool = P(True, "MPI_Barrier before each size")
    compute_ns: int = P(0, "Compute gap between exchanges, ns")


def build_pingping(p: Program, prm: PingPingParams) -> None:
    """Seed 001's ping-ping: both ranks Isend (A tag 1, B tag 2), Irecv the other tag, Waitall."""
    a, b = _pairs(p.nranks, prm.pairing)
    me = np.concatenate([a, b])
    peer = np.concatenate([b, a])
    stag = np.concatenate([np.full(len(a), 1), np.full(len(b), 2)])
    rtag = 3 - stag
    order = np.argsort(me)
    me, peer, stag, rtag = me[order], peer[order], stag[order], rtag[order]
    reqs = np.array([[1, 2]], dtype=np.uint64)
    p.init()
    for size in prm.sizes:
        if prm.barrier:
            p.collective("Barrier")
        for _ in range(prm.iterations):
            p.send(me, peer, stag, size, op="Isend", req=1)
            p.recv(me, peer, rtag, size, op="Irecv", req=2)
            p.waitall(me, reqs)
            p.h2d(me, size)
            p.compute(me, prm.compute_ns)
    p.finalize()

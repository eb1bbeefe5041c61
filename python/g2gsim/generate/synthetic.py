"""Synthetic benchmark workloads (bench/speed: 64 to 1,048,576 ranks).

Every rank runs the same number of operations (missing neighbours of a non-periodic halo are
MPI_PROC_NULL, as MPI_Cart_shift returns them), so streaming to a file keeps memory at a few
windows of rows.  ``compute_ns`` is the Compute gap per iteration, given directly.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..trace import PROC_NULL
from ._grid import Cart, dims_create, face_offsets, neighbour_table, opposite_index
from ._params import CommonParams, P
from ._program import Program


@dataclass
class Halo3dParams(CommonParams):
    iterations: int = P(10, "iterations")
    ndims: int = P(3, "dimensions of the process grid (2: 4 neighbours, 3: 6)", choices=(1, 2, 3))
    msg_bytes: int = P(65536, "bytes per face message")
    compute_ns: int = P(20000, "Compute per iteration, ns")
    periodic: bool = P(True, "periodic grid; false: edge ranks post to MPI_PROC_NULL")


@dataclass
class Halo2dParams(Halo3dParams):
    ndims: int = P(2, "dimensions of the process grid (2: 4 neighbours, 3: 6)", choices=(1, 2, 3))


def build_halo(p: Program, prm: Halo3dParams) -> None:
    """Per iteration: Compute, Irecv from each face neighbour, Isend to each, Waitall (2*ndims+2
    rows per rank per iteration: 10 in 2D, 14 in 3D)."""
    cart = Cart(dims_create(p.nranks, prm.ndims), prm.periodic)
    offsets = face_offsets(prm.ndims)
    peers = neighbour_table(cart, offsets, missing=PROC_NULL)
    size = np.full(peers.shape, prm.msg_bytes, np.int64)
    tags = np.arange(len(offsets))
    rtags = tags[opposite_index(offsets)]
    p.init()
    for _ in range(prm.iterations):
        p.compute(None, prm.compute_ns)
        p.exchange(None, peers, size, size, tags, rtags)
    p.finalize()


@dataclass
class AllreduceParams(CommonParams):
    iterations: int = P(10, "iterations")
    msg_bytes: int = P(8, "Allreduce vector bytes")
    per_iteration: int = P(1, "Allreduces per iteration (each after a Compute)")
    compute_ns: int = P(20000, "Compute before each Allreduce, ns")


def build_allreduce(p: Program, prm: AllreduceParams) -> None:
    """Per iteration, per_iteration times: Compute (compute_ns), Allreduce of msg_bytes."""
    p.init()
    for _ in range(prm.iterations * prm.per_iteration):
        p.compute(None, prm.compute_ns)
        p.collective("Allreduce", nbytes=prm.msg_bytes, recv_bytes=prm.msg_bytes)
    p.finalize()


@dataclass
class AlltoallParams(CommonParams):
    iterations: int = P(10, "iterations")
    block_bytes: int = P(4096, "bytes sent to each peer (the send buffer is block_bytes * comm size)")
    group_size: int = P(0, "all-to-all within consecutive groups of this many ranks (own "
                           "communicators, like FFT pencils); 0 = MPI_COMM_WORLD")
    compute_ns: int = P(20000, "Compute per iteration, ns")


def build_alltoall(p: Program, prm: AlltoallParams) -> None:
    """Per iteration: Compute (compute_ns), Alltoall of block_bytes per peer (bytes = block_bytes *
    comm size) on MPI_COMM_WORLD or on communicators of group_size consecutive ranks (the last
    one smaller when group_size does not divide N)."""
    n = p.nranks
    if prm.group_size < 0:
        raise ValueError("alltoall: group_size must be >= 0")
    g = prm.group_size if 0 < prm.group_size < n else n
    groups = []
    if g == n:
        groups.append((0, p.all, n))
    else:
        for start in range(0, n, g):
            members = np.arange(start, min(start + g, n), dtype=np.int64)
            cid = p.add_comm(f"alltoall_group_{start // g}", members.tolist())
            groups.append((cid, members, len(members)))
    comm = np.zeros(n, np.int64)
    size = np.zeros(n, np.int64)
    for cid, members, m in groups:
        comm[members] = cid
        size[members] = prm.block_bytes * m
    p.init()
    for _ in range(prm.iterations):
        p.compute(None, prm.compute_ns)
        p.collective("Alltoall", comm=comm, nbytes=size, recv_bytes=size)
    p.finalize()

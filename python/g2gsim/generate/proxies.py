"""Proxies of the four applications traced in the paper (seed 002): AmgX, LULESH, Minisweep,
SW4lite.  Message patterns and sizes follow the paper's description (and, for LULESH, its
source); compute gaps are sized so that communication takes the paper's share of the run time
at a stated nominal network (``net_bytes_per_s``, ``net_latency_ns``; defaults: EDR InfiniBand
as on Lassen), unless ``compute_ns`` gives the compute per iteration directly.

Nominal communication time of one rank (the busiest) per iteration: each neighbour exchange
costs ``latency + max(bytes out, bytes in) / bandwidth`` (a full-duplex NIC, messages of one
exchange in flight together), each Sendrecv ``latency + max(send, recv) / bandwidth``, an
Allreduce of b bytes ``2 * ceil(log2 P) * (latency + b / bandwidth)``.  Compute per iteration
is then ``comm * (1 - comm_fraction) / comm_fraction``, split over the iteration's Compute rows by
fixed weights.  Waiting (imbalance, wavefront fill) comes on top in a simulation, so simulated
communication shares can exceed the target, most for Minisweep.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..trace import PROC_NULL
from ._grid import Cart, all_offsets, dims_create, face_offsets, neighbour_table, opposite_index, parse_grid
from ._params import CommonParams, P
from ._program import Program

DOUBLE = 8
EDR_BYTES_PER_S = 12.5e9
LATENCY_NS = 1500.0


def _xfer_ns(nbytes, lat: float, bw: float):
    return lat + np.asarray(nbytes, dtype=np.float64) / bw * 1e9


def _allreduce_ns(nbytes: int, nranks: int, lat: float, bw: float) -> float:
    if nranks <= 1:
        return 0.0
    return 2 * math.ceil(math.log2(nranks)) * float(_xfer_ns(nbytes, lat, bw))


def _compute_per_iteration(comm_ns: float, fraction: float, override: int | None) -> float:
    if override is not None:
        return float(override)
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"comm_fraction must be in (0, 1), got {fraction}")
    return comm_ns * (1.0 - fraction) / fraction


def _net_fields(fraction: float, paper: str):
    return (
        P(fraction, f"target share of communication in the run time at the nominal network ({paper})"),
        P(EDR_BYTES_PER_S, "nominal network bandwidth, B/s, used to size compute (EDR IB 100 Gb/s)"),
        P(LATENCY_NS, "nominal network latency, ns, used to size compute"),
        P(None, "Compute per iteration, ns (overrides comm_fraction)"),
    )


# ============================================================================================ AmgX
_f = _net_fields(0.05, "AmgX: 5.3-7.2% MPI")


@dataclass
class AmgxParams(CommonParams):
    iterations: int = P(25, "solver iterations, one V-cycle each")
    fine_halo_bytes: int = P(663552, "halo message of the finest level (8*288^2: a 288^3 block's face)")
    coarsening: int = P(4, "halo bytes shrink by this factor per level (2x per dimension)")
    exchanges_per_level: list[int] = P([2, 4, 6, 6, 6, 1],
                                       "halo exchanges per V-cycle at each level, fine to coarse; with "
                                       "the default sizes: 8% > 500 KB, 16% 100-500 KB, 72% 1-100 KB, "
                                       "4% < 1 KB (the paper: 8%, 17%, 71%)")
    allreduces: int = P(4, "8-byte Allreduces per iteration (PCG dot products, norm, coarse solve)")
    periodic: bool = P(True, "periodic 2D process grid so that every rank has 4 neighbours (the paper: "
                             "each rank talks to 4 others)")
    comm_fraction: float = _f[0]
    net_bytes_per_s: float = _f[1]
    net_latency_ns: float = _f[2]
    compute_ns: int | None = _f[3]


def build_amgx(p: Program, prm: AmgxParams) -> None:
    """One iteration = a V-cycle over len(exchanges_per_level) levels (down: half of each level's
    exchanges, the coarsest all; up: the rest), each exchange = Irecv x4, Isend x4, Waitall, then
    the level's smoother/SpMV Compute; then ``allreduces`` x (vector-op Compute, Allreduce 8 B)."""
    counts = list(prm.exchanges_per_level)
    L = len(counts)
    if prm.coarsening < 1:
        raise ValueError("amgx: coarsening must be >= 1")
    sizes = [max(1, prm.fine_halo_bytes // prm.coarsening ** l) for l in range(L)]
    down = [l for l in range(L - 1) for _ in range((counts[l] + 1) // 2)] + [L - 1] * counts[L - 1]
    up = [l for l in reversed(range(L - 1)) for _ in range(counts[l] // 2)]
    schedule = down + up
    cart = Cart(dims_create(p.nranks, 2), prm.periodic)
    offsets = face_offsets(2)
    peers = neighbour_table(cart, offsets)
    opp = opposite_index(offsets)
    nnb = (peers >= 0).sum(axis=1).max() if p.nranks > 1 else 0
    lat, bw = prm.net_latency_ns, prm.net_bytes_per_s
    comm = sum(float(_xfer_ns(nnb * sizes[l], lat, bw)) for l in schedule if nnb) \
        + prm.allreduces * _allreduce_ns(DOUBLE, p.nranks, lat, bw)
    total = _compute_per_iteration(comm, prm.comm_fraction, prm.compute_ns)
    # work per level: points shrink by coarsening^1.5 (faces by coarsening) per level
    w_level = [prm.coarsening ** (-1.5 * l) for l in range(L)]
    w_vec = 0.05
    wsum = sum(w_level[l] for l in schedule) + w_vec * prm.allreduces
    unit = total / wsum if wsum else 0.0
    send_b = {l: np.full(peers.shape, sizes[l], np.int64) for l in set(schedule)}

    p.init()
    for _ in range(prm.iterations):
        for l in schedule:
            tags = 4 * l + np.arange(4)
            p.exchange(None, peers, send_b[l], send_b[l], tags, tags[opp])
            p.compute(None, unit * w_level[l])
        for _ in range(prm.allreduces):
            p.compute(None, unit * w_vec)
            p.collective("Allreduce", nbytes=DOUBLE, recv_bytes=DOUBLE)
    p.finalize()


# ============================================================================================ LULESH
_f = _net_fields(0.30, "LULESH: 28-32% MPI")
MSG_COMM_SBN, MSG_SYNC_POS_VEL, MSG_MONOQ = 1024, 2048, 3072   # LULESH uses the message type as tag


@dataclass
class LuleshParams(CommonParams):
    iterations: int = P(100, "time steps (the paper traced 100)")
    s: int = P(144, "elements per rank edge (-s; the paper's 144^3): faces of 145^2 nodes")
    proc_grid: str = P("auto", "process grid 'PXxPYxPZ' or 'auto' (LULESH needs a cube; any N works here)")
    comm_fraction: float = _f[0]
    net_bytes_per_s: float = _f[1]
    net_latency_ns: float = _f[2]
    compute_ns: int | None = _f[3]


def _lulesh_phase(p: Program, peers: np.ndarray, recv_slots: list[int], send_slots: list[int],
                  size_of, tag: int, before_send) -> None:
    """LULESH's CommRecv (Irecv per slot), work, CommSend (Isend per slot + Waitall of the sends),
    then CommSBN/SyncPosVel/MonoQ: MPI_Wait on each receive in order (staged: h2d after each)."""
    n = p.nranks
    allr = p.all
    for k in recv_slots:
        m = peers[:, k] >= 0
        p.recv(allr[m], peers[m, k], tag, size_of[k], op="Irecv", req=k + 1)
    before_send()
    sreq = np.zeros((n, len(send_slots)), np.uint64)
    spost = np.zeros((n, len(send_slots)), bool)
    for j, k in enumerate(send_slots):
        m = peers[:, k] >= 0
        p.send(allr[m], peers[m, k], tag, size_of[k], op="Isend", req=100 + k + 1)
        sreq[m, j] = 100 + k + 1
        spost[m, j] = True
    has = spost.any(axis=1)
    p.waitall(allr[has], sreq[has], spost[has])
    for k in recv_slots:
        m = peers[:, k] >= 0
        p.emit("Wait", allr[m], req=k + 1)
        p.h2d(allr[m], size_of[k])


def build_lulesh(p: Program, prm: LuleshParams) -> None:
    """Per iteration, as LULESH 2.0 does it: Allreduce of dt (8 B, MIN); MSG_COMM_SBN: forces (3
    fields) with all 26 neighbours (faces (s+1)^2, edges s+1, corners 1 node: 504,600 B / 3,480 B
    / 24 B at s=144); MSG_SYNC_POS_VEL: positions+velocities (6 fields) sent to the 13 neighbours
    on the 'min' side and received from the 13 on the 'max' side (1 MB / 6,960 B / 48 B);
    MSG_MONOQ: 3 element fields over the 6 faces only (s^2: 497,664 B).  Non-periodic 3D grid:
    interior ranks have 26 neighbours."""
    dims = parse_grid(prm.proc_grid, p.nranks, 3, "lulesh")
    cart = Cart(dims, False)
    offsets = all_offsets(3)
    kinds = [sum(1 for x in o if x) for o in offsets]
    # LULESH posts faces, then edges, then corners
    order = sorted(range(len(offsets)), key=lambda k: kinds[k])
    offsets = [offsets[k] for k in order]
    kinds = [kinds[k] for k in order]
    peers = neighbour_table(cart, offsets)
    nodes = prm.s + 1
    span = {1: nodes * nodes, 2: nodes, 3: 1}
    sbn = [DOUBLE * 3 * span[c] for c in kinds]
    sync = [DOUBLE * 6 * span[c] for c in kinds]
    monoq = [DOUBLE * 3 * prm.s * prm.s if c == 1 else 0 for c in kinds]
    neg = [next(x for x in o if x) < 0 for o in offsets]        # 'min' side: first nonzero < 0
    all_k = list(range(len(offsets)))
    sync_send = [k for k in all_k if neg[k]]
    sync_recv = [k for k in all_k if not neg[k]]
    faces = [k for k in all_k if kinds[k] == 1]

    present = peers >= 0
    lat, bw = prm.net_latency_ns, prm.net_bytes_per_s

    def phase_ns(send_k, recv_k, size):
        out = present[:, send_k] @ np.array([size[k] for k in send_k], np.float64)
        inn = present[:, recv_k] @ np.array([size[k] for k in recv_k], np.float64)
        busy = present[:, send_k].any(axis=1) | present[:, recv_k].any(axis=1)
        return np.where(busy, _xfer_ns(np.maximum(out, inn), lat, bw), 0.0)

    comm = (phase_ns(all_k, all_k, sbn) + phase_ns(sync_send, sync_recv, sync)
            + phase_ns(faces, faces, monoq)).max() + _allreduce_ns(DOUBLE, p.nranks, lat, bw)
    total = _compute_per_iteration(float(comm), prm.comm_fraction, prm.compute_ns)
    w = {"force": 0.40, "posvel": 0.10, "kin": 0.15, "grad": 0.05, "eos": 0.30}

    p.init()
    for _ in range(prm.iterations):
        p.collective("Allreduce", nbytes=DOUBLE, recv_bytes=DOUBLE)
        _lulesh_phase(p, peers, all_k, all_k, sbn, MSG_COMM_SBN,
                      lambda: p.compute(None, total * w["force"]))
        _lulesh_phase(p, peers, sync_recv, sync_send, sync, MSG_SYNC_POS_VEL,
                      lambda: p.compute(None, total * w["posvel"]))
        p.compute(None, total * w["kin"])
        _lulesh_phase(p, peers, faces, faces, monoq, MSG_MONOQ,
                      lambda: p.compute(None, total * w["grad"]))
        p.compute(None, total * w["eos"])
    p.finalize()


# ============================================================================================ Minisweep
_f = _net_fields(0.80, "Minisweep: 76-82% MPI")


@dataclass
class MinisweepParams(CommonParams):
    iterations: int = P(10, "sweep iterations (the paper traced 10)")
    octants: int = P(8, "sweeps per iteration: 8 octants, or 4 (one per corner of the 2D process grid)",
                     choices=(4, 8))
    ncell_x: int = P(32, "cells per rank in x (a y-face message carries ncell_x cells)")
    ncell_y: int = P(16, "cells per rank in y (an x-face message carries ncell_y cells)")
    ncell_z: int = P(256, "cells in z (not decomposed)")
    nblock_z: int = P(4, "z blocks per sweep (KBA pipeline depth)")
    ne: int = P(16, "energy groups")
    na: int = P(32, "angles per octant")
    comm_fraction: float = _f[0]
    net_bytes_per_s: float = _f[1]
    net_latency_ns: float = _f[2]
    compute_ns: int | None = _f[3]


def build_minisweep(p: Program, prm: MinisweepParams) -> None:
    """KBA wavefront sweeps on a 2D process grid (z kept local, cut into nblock_z blocks).  For each
    octant (sx, sy) and block: Irecv the upstream x face and the upstream y face, Waitall, Compute
    the block, Isend the downstream faces, Waitall.  Face messages: ncell_{y,x} * ncell_z/nblock_z *
    ne * na doubles = 4 MiB (x faces) and 8 MiB (y faces) with the defaults."""
    if prm.ncell_z % prm.nblock_z:
        raise ValueError(f"minisweep: ncell_z={prm.ncell_z} is not a multiple of nblock_z={prm.nblock_z}")
    nzb = prm.ncell_z // prm.nblock_z
    xface = DOUBLE * prm.ncell_y * nzb * prm.ne * prm.na
    yface = DOUBLE * prm.ncell_x * nzb * prm.ne * prm.na
    cart = Cart(dims_create(p.nranks, 2), False)          # dims (PY, PX)
    lat, bw = prm.net_latency_ns, prm.net_bytes_per_s
    step_ns = 2 * float(_xfer_ns(xface + yface, lat, bw)) if p.nranks > 1 else 0.0
    steps = prm.octants * prm.nblock_z
    total = _compute_per_iteration(step_ns * steps, prm.comm_fraction, prm.compute_ns)
    t_block = total / steps
    allr = p.all
    dirs = []
    for o in range(prm.octants):
        sx = -1 if o & 1 else 1
        sy = -1 if o & 2 else 1
        up = np.stack([cart.shift((0, -sx)), cart.shift((-sy, 0))], axis=1)
        dn = np.stack([cart.shift((0, sx)), cart.shift((sy, 0))], axis=1)
        dirs.append((o, up, dn))
    size = np.array([xface, yface], np.int64)

    p.init()
    for _ in range(prm.iterations):
        for o, up, dn in dirs:
            tags = np.array([2 * o, 2 * o + 1])
            for _b in range(prm.nblock_z):
                have = up >= 0
                for k in range(2):
                    m = have[:, k]
                    p.recv(allr[m], up[m, k], tags[k], size[k], op="Irecv", req=k + 1)
                h = have.any(axis=1)
                p.waitall(allr[h], np.array([[1, 2]], np.uint64), have[h])
                for k in range(2):
                    p.h2d(allr[have[:, k]], size[k])
                p.compute(None, t_block)
                give = dn >= 0
                for k in range(2):
                    m = give[:, k]
                    p.send(allr[m], dn[m, k], tags[k], size[k], op="Isend", req=k + 3)
                g = give.any(axis=1)
                p.waitall(allr[g], np.array([[3, 4]], np.uint64), give[g])
    p.finalize()


# ============================================================================================ SW4lite
_f = _net_fields(0.40, "SW4lite: 34-43% MPI")


@dataclass
class Sw4liteParams(CommonParams):
    iterations: int = P(100, "time steps (the paper traced 100)")
    big_bytes: int = P(12_000_000, "message of the 3D solution-array exchange (the paper: ~12 MB)")
    small_bytes: int = P(65536, "message of the 2D-array exchange (the paper: ~64 KB)")
    comm_fraction: float = _f[0]
    net_bytes_per_s: float = _f[1]
    net_latency_ns: float = _f[2]
    compute_ns: int | None = _f[3]


def build_sw4lite(p: Program, prm: Sw4liteParams) -> None:
    """2D process grid (x, y; z not split), non-periodic, SW4's communicate_array style: per
    dimension two MPI_Sendrecv (send to the low side / receive from the high side, then the
    reverse), MPI_PROC_NULL at the domain edges.  Per step: Compute (predictor), exchange of the
    big array, Compute (corrector), exchange of a small 2D array: half the messages ~12 MB, half
    ~64 KB."""
    cart = Cart(dims_create(p.nranks, 2), False)          # dims (PY, PX)
    lo = {d: cart.shift(tuple(-1 if i == d else 0 for i in range(2)), PROC_NULL) for d in (1, 0)}
    hi = {d: cart.shift(tuple(1 if i == d else 0 for i in range(2)), PROC_NULL) for d in (1, 0)}
    lat, bw = prm.net_latency_ns, prm.net_bytes_per_s
    active = [d for d in (1, 0) if cart.dims[d] > 1]
    per_exchange = lambda b: 2 * len(active) * float(_xfer_ns(b, lat, bw))  # noqa: E731
    total = _compute_per_iteration(per_exchange(prm.big_bytes) + per_exchange(prm.small_bytes),
                                   prm.comm_fraction, prm.compute_ns)

    def exchange(nbytes: int, tag0: int) -> None:
        for j, d in enumerate((1, 0)):                     # x first, then y
            if cart.dims[d] == 1:
                continue
            t = tag0 + 2 * j
            p.sendrecv(None, lo[d], t, nbytes, hi[d], t, nbytes)
            p.sendrecv(None, hi[d], t + 1, nbytes, lo[d], t + 1, nbytes)

    p.init()
    for _ in range(prm.iterations):
        p.compute(None, 0.5 * total)
        exchange(prm.big_bytes, 10)
        p.compute(None, 0.5 * total)
        exchange(prm.small_bytes, 20)
    p.finalize()

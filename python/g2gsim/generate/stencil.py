"""2D stencil applications: Jacobi with optional overlap (seed 004) and the CSCS diffusion
exercise (seed 003)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._grid import Cart, neighbour_table, parse_grid, recv_sizes, split
from ._params import CommonParams, P
from ._program import Program

DOUBLE = 8
# directions in (y, x) order: top (-y), bottom (+y), left (-x), right (+x)
OFFSETS_2D = [(-1, 0), (1, 0), (0, -1), (0, 1)]
OPP_2D = [1, 0, 3, 2]


def _blocks(nx: int, ny: int, cart: Cart, what: str) -> tuple[np.ndarray, np.ndarray]:
    py, px = cart.dims
    if nx < px or ny < py:
        raise ValueError(f"{what}: a {nx}x{ny} grid cannot be split over a {px}x{py} process grid "
                         "(some rank would get no points); use a bigger grid or fewer ranks")
    iy, ix = cart.coords
    return split(nx, px)[ix], split(ny, py)[iy]


def _stencil_time_ns(points: np.ndarray, bytes_per_point: float, bytes_per_s: float) -> np.ndarray:
    return points.astype(np.float64) * bytes_per_point / bytes_per_s * 1e9


@dataclass
class JacobiParams(CommonParams):
    nx: int = P(17408, "global grid points in x (doubles); seed 004 ran 17408x17408")
    ny: int = P(17408, "global grid points in y")
    iterations: int = P(100, "Jacobi iterations")
    overlap: bool = P(False, "overlap: boundary Compute, Irecv/Isend, interior Compute, Waitall; "
                             "without: Compute of the whole block, then the exchange")
    norm_every: int = P(1, "Allreduce (8 B, the residual norm) every this many iterations; 0 = never "
                           "(the NVIDIA code's -nccheck, default 1)")
    periodic: bool = P(False, "periodic boundaries (the seed's 1D code wraps top/bottom)")
    proc_grid: str = P("auto", "process grid 'PXxPY' (e.g. '1x8' = the seed's row slabs) or 'auto' "
                               "(most square, like MPI_Dims_create)")
    pack_columns: bool = P(True, "left/right halos are packed into contiguous buffers (false: sent "
                                 "with a strided datatype, contiguous=false)")
    bytes_per_s: float = P(1.3e12, "memory bandwidth the stencil kernel achieves (A100 40GB: about "
                                   "1.3e12 of 1.555e12 B/s peak)")
    bytes_per_point: float = P(16.0, "DRAM bytes per grid point per iteration (read a, write a_new)")
    compute_ns: int | None = P(None, "Compute per iteration, ns (overrides the rate)")
    gpu_streams: bool = P(False, "the stencil runs as kernels on GPU streams (seed 004) instead of "
                                 "host Compute: boundary kernel on a high-priority stream, "
                                 "EventRecord, interior kernel on a low-priority stream; the host "
                                 "synchronises the boundary stream before the exchange and the "
                                 "interior stream after it (overlap) or before it (no overlap)")
    boundary_priority: int = P(-1, "gpu_streams: priority of the boundary stream (lower runs first; "
                                   "CUDA: 0 is the least, cudaDeviceGetStreamPriorityRange gives the "
                                   "greatest, e.g. -5)")
    interior_priority: int = P(0, "gpu_streams: priority of the interior stream")
    sync: str = P("stream", "gpu_streams: how the host waits for the boundary kernel before the "
                            "exchange: 'stream' (StreamSynchronize of the boundary stream, as the "
                            "seed) or 'event' (EventSynchronize of the event recorded after it)",
                  choices=("stream", "event"))
    launch_ns: int = P(0, "gpu_streams: host time of each kernel launch (a Compute before it)")


BOUNDARY_STREAM, INTERIOR_STREAM, BOUNDARY_EVENT = 1, 2, 1


def build_jacobi(p: Program, prm: JacobiParams) -> None:
    """2D Jacobi (seed 004, NVIDIA multi-gpu-programming-models on JUWELS Booster): NX x NY
    doubles on a 2D process grid, non-periodic by default (edge ranks skip missing neighbours).
    Halo per iteration: Irecv x4, Isend x4 (top/bottom: a row of nx_local doubles = 8*nx_local B;
    left/right: a column, 8*ny_local B), Waitall; tag = direction of travel.  Without overlap:
    Compute (whole block), then the exchange.  With overlap: Compute (boundary rows/columns),
    Irecv/Isend, Compute (interior), Waitall.  Every norm_every iterations an 8-byte Allreduce
    (the residual).  Compute = points * bytes_per_point / bytes_per_s, or compute_ns split
    boundary/interior by point count.

    gpu_streams=true (seed 004's CUDA version): per iteration Kernel (boundary, stream 1,
    boundary_priority), EventRecord (event 1 on stream 1), Kernel (interior, stream 2,
    interior_priority), then with overlap StreamSynchronize(1) (or EventSynchronize(1) with
    sync=event), the exchange, StreamSynchronize(2); without overlap both syncs come before the
    exchange.  Kernel durations are the Compute times above (jitter applies to them too);
    launch_ns adds a host Compute before each launch."""
    dims = parse_grid(prm.proc_grid, p.nranks, 2, "jacobi2d")
    cart = Cart(dims, prm.periodic)
    nxl, nyl = _blocks(prm.nx, prm.ny, cart, "jacobi2d")
    peers = neighbour_table(cart, OFFSETS_2D)
    send_b = np.stack([DOUBLE * nxl, DOUBLE * nxl, DOUBLE * nyl, DOUBLE * nyl], axis=1)
    recv_b = recv_sizes(peers, send_b, OFFSETS_2D)
    send_tags = np.arange(4)                 # tag = direction the message travels
    recv_tags = np.array(OPP_2D)
    points = nxl * nyl
    if prm.compute_ns is not None:
        total = np.full(p.nranks, float(prm.compute_ns))
    else:
        total = _stencil_time_ns(points, prm.bytes_per_point, prm.bytes_per_s)
    boundary = np.minimum(points, 2 * nxl + 2 * np.maximum(nyl - 2, 0))
    t_boundary = total * boundary / np.maximum(points, 1)
    t_interior = total - t_boundary
    contiguous = np.broadcast_to(np.array([True, True, prm.pack_columns, prm.pack_columns]), peers.shape)

    p.init()
    for it in range(prm.iterations):
        if prm.gpu_streams:
            _jacobi_streams_iteration(p, prm, t_boundary, t_interior,
                                      lambda: p.exchange(None, peers, send_b, recv_b, send_tags,
                                                         recv_tags, contiguous=contiguous))
        elif prm.overlap:
            p.compute(None, t_boundary)
            p.exchange(None, peers, send_b, recv_b, send_tags, recv_tags, contiguous=contiguous,
                       between=lambda: p.compute(None, t_interior))
        else:
            p.compute(None, total)
            p.exchange(None, peers, send_b, recv_b, send_tags, recv_tags, contiguous=contiguous)
        if prm.norm_every and it % prm.norm_every == 0:
            p.collective("Allreduce", nbytes=DOUBLE, recv_bytes=DOUBLE)
    p.finalize()


def _jacobi_streams_iteration(p: Program, prm: JacobiParams, t_boundary, t_interior,
                              exchange) -> None:
    """One Jacobi iteration with the kernels on streams (seed 004)."""
    p.compute(None, prm.launch_ns)
    p.kernel(None, BOUNDARY_STREAM, t_boundary, prm.boundary_priority)
    p.gpu("EventRecord", event=BOUNDARY_EVENT, stream=BOUNDARY_STREAM)
    p.compute(None, prm.launch_ns)
    p.kernel(None, INTERIOR_STREAM, t_interior, prm.interior_priority)
    if prm.sync == "event":
        p.gpu("EventSynchronize", event=BOUNDARY_EVENT)
    else:
        p.gpu("StreamSynchronize", stream=BOUNDARY_STREAM)
    if prm.overlap:
        exchange()
        p.gpu("StreamSynchronize", stream=INTERIOR_STREAM)
    else:
        p.gpu("StreamSynchronize", stream=INTERIOR_STREAM)
        exchange()


@dataclass
class DiffusionParams(CommonParams):
    nx: int = P(128, "global grid width (seed 003: fixed 128)")
    ny: int = P(131072, "global grid height (seed 003: 131,072 = 2^17)")
    iterations: int = P(10000, "time steps (seed 003 timed 10,000)")
    decomposition: str = P("1d", "'1d': horizontal slabs, south/north neighbours (the seed); '2d': "
                                 "most square process grid, 4 neighbours", choices=("1d", "2d"))
    periodic: bool = P(False, "periodic boundaries (the seed has fixed boundaries: no wrap)")
    final_gather: bool = P(True, "MPI_Gather of every block to rank 0 at the end (the seed's output)")
    bytes_per_s: float = P(4.8e11, "kernel memory bandwidth; 4.8e11 B/s reproduces the seed's 1-node "
                                   "P100 time (5.58 s for 10,000 steps of 128x131072)")
    bytes_per_point: float = P(16.0, "DRAM bytes per grid point per step (read x0, write x1)")
    compute_ns: int | None = P(None, "Compute per step, ns (overrides the rate)")


def build_diffusion(p: Program, prm: DiffusionParams) -> None:
    """Per step (seed 003): per neighbour Irecv + Isend (south: recv tag 1, send tag 2; north:
    recv tag 2, send tag 1), Waitall, then the diffusion kernel.  Rows carry nx_local+2 doubles
    (the halo columns too, as in the seed); 2D columns carry ny_local doubles.  Non-periodic: the
    first and last slab talk to one neighbour.  At the end an MPI_Gather of every block to rank 0
    (Gatherv when blocks differ).  Compute = nx_local*ny_local*bytes_per_point/bytes_per_s per
    step, or compute_ns."""
    dims = (p.nranks, 1) if prm.decomposition == "1d" else parse_grid("auto", p.nranks, 2, "diffusion2d")
    cart = Cart(dims, prm.periodic)
    nxl, nyl = _blocks(prm.nx, prm.ny, cart, "diffusion2d")
    offsets = OFFSETS_2D if prm.decomposition == "2d" else OFFSETS_2D[:2]
    peers = neighbour_table(cart, offsets)
    row_b = DOUBLE * (nxl + 2)
    cols = [row_b, row_b] + ([DOUBLE * nyl, DOUBLE * nyl] if prm.decomposition == "2d" else [])
    send_b = np.stack(cols, axis=1)
    recv_b = recv_sizes(peers, send_b, offsets)
    travel_tag = np.array([2, 1, 4, 3])[:len(offsets)]         # south-going 2, north-going 1
    opp = np.array(OPP_2D)[:len(offsets)]
    if prm.compute_ns is not None:
        t = np.full(p.nranks, float(prm.compute_ns))
    else:
        t = _stencil_time_ns(nxl * nyl, prm.bytes_per_point, prm.bytes_per_s)

    p.init()
    for _ in range(prm.iterations):
        p.exchange(None, peers, send_b, recv_b, travel_tag, travel_tag[opp], order="interleaved")
        p.compute(None, t)
    if prm.final_gather:
        block = DOUBLE * (nxl + 2) * nyl
        total = int(block.sum())
        recv = np.zeros(p.nranks, np.int64)
        recv[0] = total
        if np.all(block == block[0]):
            p.collective("Gather", nbytes=block, recv_bytes=recv, root=0, root_world=0)
        else:
            lens = np.full(p.nranks, -1)
            lens[0] = p.nranks
            p.collective("Gatherv", nbytes=block, recv_bytes=recv, root=0, root_world=0,
                         recv_counts_bytes=(lens, block))
    p.finalize()

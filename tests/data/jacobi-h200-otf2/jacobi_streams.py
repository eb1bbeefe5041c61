"""Multi-GPU 2D Jacobi with CUDA streams (seed 004), cupy + mpi4py, one GPU per rank.

Row slabs on a periodic ring (the seed's 1D decomposition: top/bottom neighbours).  Per iteration:
the boundary rows on a high-priority stream, cudaEventRecord on it, the interior rows on a
low-priority stream, then

    --overlap:    cudaStreamSynchronize(boundary), halo exchange (Irecv x2, Isend x2, Waitall on
                  device buffers: needs a CUDA-aware MPI), cudaStreamSynchronize(interior);
    --no-overlap: cudaStreamSynchronize(boundary), cudaStreamSynchronize(interior), exchange.

The measured time per iteration (rank 0, after a barrier, over --iterations after --warmup) goes to
--json.  Traced on the 4 x H200 machine with tracer/build/libg2gtrace.so (see README.md here).
"""
from __future__ import annotations

import argparse
import json
import time

from mpi4py import MPI  # noqa: I001  (MPI_Init first: the tracer starts there)
import cupy as cp

SRC = r"""
extern "C" __global__ void jacobi(const double* __restrict__ a, double* __restrict__ a_new,
                                  int iy_start, int iy_end, int nx)
{
    int iy = blockIdx.y * blockDim.y + threadIdx.y + iy_start;
    int ix = blockIdx.x * blockDim.x + threadIdx.x + 1;
    if (iy < iy_end && ix < nx - 1)
        a_new[iy * nx + ix] = 0.25 * (a[iy * nx + ix + 1] + a[iy * nx + ix - 1]
                                      + a[(iy + 1) * nx + ix] + a[(iy - 1) * nx + ix]);
}
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--overlap", dest="overlap", action="store_true", default=True)
    ap.add_argument("--no-overlap", dest="overlap", action="store_false")
    ap.add_argument("--nx", type=int, default=16384)
    ap.add_argument("--ny", type=int, default=16384, help="global rows")
    ap.add_argument("--iterations", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()

    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    cp.cuda.Device(rank % cp.cuda.runtime.getDeviceCount()).use()
    nx = args.nx
    rows = args.ny // size
    # a and a_new hold rows 0..rows+1: 0 and rows+1 are the halos
    a = cp.zeros((rows + 2, nx), dtype=cp.float64)
    a_new = cp.zeros_like(a)
    a[:, 0] = 1.0
    a_new[:, 0] = 1.0
    kern = cp.RawKernel(SRC, "jacobi")
    # cudaDeviceGetStreamPriorityRange is not in cupy's runtime module: (0, -5) on recent GPUs;
    # CUDA clamps a priority outside the range, and the tracer records the clamped one
    rng = getattr(cp.cuda.runtime, "deviceGetStreamPriorityRange", None)
    least, greatest = rng() if rng else (0, -5)
    interior = cp.cuda.Stream(non_blocking=True, priority=least)
    boundary = cp.cuda.Stream(non_blocking=True, priority=greatest)
    done = cp.cuda.Event(disable_timing=True)
    top, bottom = (rank - 1) % size, (rank + 1) % size
    block = (128, 4, 1)

    def launch(stream, y0, y1):
        grid = ((nx + block[0] - 1) // block[0], (y1 - y0 + block[1] - 1) // block[1], 1)
        with stream:
            kern(grid, block, (a, a_new, cp.int32(y0), cp.int32(y1), cp.int32(nx)))

    def exchange():
        reqs = [comm.Irecv(a_new[0], source=top, tag=0),
                comm.Irecv(a_new[rows + 1], source=bottom, tag=1),
                comm.Isend(a_new[rows], dest=bottom, tag=0),
                comm.Isend(a_new[1], dest=top, tag=1)]
        MPI.Request.Waitall(reqs)

    def iteration():
        nonlocal a, a_new
        launch(boundary, 1, 2)
        launch(boundary, rows, rows + 1)
        done.record(boundary)
        launch(interior, 2, rows)
        boundary.synchronize()
        if args.overlap:
            exchange()
            interior.synchronize()
        else:
            interior.synchronize()
            exchange()
        a, a_new = a_new, a

    cp.cuda.Device().synchronize()
    for _ in range(args.warmup):
        iteration()
    comm.Barrier()
    t0 = time.perf_counter()
    for _ in range(args.iterations):
        iteration()
    comm.Barrier()
    dt = (time.perf_counter() - t0) / args.iterations
    worst = comm.allreduce(dt, op=MPI.MAX)
    if rank == 0:
        res = {"variant": "overlap" if args.overlap else "no-overlap", "ranks": size, "nx": nx,
               "ny": args.ny, "iterations": args.iterations, "warmup": args.warmup,
               "iteration_s": worst, "stream_priorities": {"interior": least, "boundary": greatest}}
        print(json.dumps(res))
        if args.json:
            with open(args.json, "w") as f:
                json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()

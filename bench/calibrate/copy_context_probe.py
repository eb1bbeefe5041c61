#!/usr/bin/env python3
"""Are pinned cudaMemcpy calls slower inside a halo exchange than in a copy loop, and why?
(docs/validation/h200x4.md: 136 KiB copies take 13.0-13.5 us in the Jacobi HostCopy run, 9.4-9.6 us
in the calibration loop.)  Every rank times, per copy, with perf_counter like the calibration:

  alone       rank 0 copies D2H then H2D in a loop, the other ranks wait (the calibration's case)
  all         every rank copies at the same time (4 GPUs)
  all+mpi     every rank: D2H into its send buffer, MPI_Sendrecv with its ring neighbours, H2D
              from its receive buffer (the Jacobi HostCopy step without the kernel)

    mpirun -np 4 ... python3 bench/calibrate/copy_context_probe.py [bytes] > copy_context.json
"""
from __future__ import annotations

import json
import statistics
import sys
import time

import cupy as cp
import numpy as np
from mpi4py import MPI

D2H, H2D = 2, 1
ITERS = 400


def main() -> None:
    comm = MPI.COMM_WORLD
    me, n = comm.Get_rank(), comm.Get_size()
    nb = int(sys.argv[1]) if len(sys.argv) > 1 else 139264
    cp.cuda.Device(me % cp.cuda.runtime.getDeviceCount()).use()
    dev_s = cp.ones(nb, cp.uint8)
    dev_r = cp.zeros(nb, cp.uint8)
    hs = np.frombuffer(cp.cuda.alloc_pinned_memory(nb), np.uint8, nb)
    hr = np.frombuffer(cp.cuda.alloc_pinned_memory(nb), np.uint8, nb)
    cp.cuda.runtime.deviceSynchronize()
    memcpy, pc = cp.cuda.runtime.memcpy, time.perf_counter
    up, down = (me + 1) % n, (me - 1) % n
    out = {"bytes": nb, "ranks": n, "iters": ITERS}

    def run(name, active, with_mpi):
        d2h, h2d, mpi = [], [], []
        comm.Barrier()
        for _ in range(ITERS):
            if active:
                t = pc()
                memcpy(hs.ctypes.data, int(dev_s.data.ptr), nb, D2H)
                d2h.append(pc() - t)
            if with_mpi:
                t = pc()
                comm.Sendrecv([hs, MPI.BYTE], up, 0, [hr, MPI.BYTE], down, 0)
                mpi.append(pc() - t)
            if active:
                t = pc()
                memcpy(int(dev_r.data.ptr), hr.ctypes.data, nb, H2D)
                h2d.append(pc() - t)
        comm.Barrier()
        res = {}
        for k, v in (("d2h", d2h), ("h2d", h2d), ("sendrecv", mpi)):
            if v:
                res[k + "_median_us"] = round(statistics.median(v[20:]) * 1e6, 3)
                res[k + "_mean_us"] = round(statistics.mean(v[20:]) * 1e6, 3)
        allres = comm.gather(res, root=0)
        if me == 0:
            out[name] = allres

    run("alone", me == 0, False)
    run("all", True, False)
    run("all+mpi", True, True)
    if me == 0:
        print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()

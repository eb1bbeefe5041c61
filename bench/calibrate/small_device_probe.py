#!/usr/bin/env python3
"""Why do small device messages take 15 us one way in a blocking ping-pong but 9 us per ping-ping
exchange (docs/validation/h200x4.md)?  Times the same sizes four ways on two GPUs:

  pingpong-blocking   Send / Recv (the calibration's ping-pong), half round trip
  pingpong-nonblock   Isend + Wait / Irecv + Wait, half round trip
  pingping            Irecv + Isend + Waitall on both ranks, per exchange
  pingpong-sync-src   like pingpong-blocking, with a cudaDeviceSynchronize before each Send

Run under a CUDA-aware MPI (../shared/DEVICE.md, UCX cuda_copy/cuda_ipc), 2 ranks, one GPU each:
    mpirun -np 2 ... python3 bench/calibrate/small_device_probe.py [host|device] > probe.json

`host` uses numpy buffers (the same four patterns on the host path).
"""
from __future__ import annotations

import json
import time

import sys

import cupy as cp
import numpy as np
from mpi4py import MPI

SIZES = [8, 256, 1024, 2048, 4096, 8192, 32768, 65536, 131072, 262144, 1048576]
ITERS, WARM = 2000, 200


def main() -> None:
    comm = MPI.COMM_WORLD
    me = comm.Get_rank()
    peer = 1 - me
    cp.cuda.Device(me % cp.cuda.runtime.getDeviceCount()).use()
    mk = getattr(MPI, "buffer", None) or MPI.memory
    mem = sys.argv[1] if len(sys.argv) > 1 else "device"
    out = {"ranks": comm.Get_size(), "iters": ITERS, "mem": mem, "rows": []}
    for n in SIZES:
        if mem == "host":
            a = np.zeros(n, np.uint8)
            b = np.zeros(n, np.uint8)
            sa = [a, MPI.BYTE]
            rb = [b, MPI.BYTE]
        else:
            a = cp.zeros(n, cp.uint8)
            b = cp.zeros(n, cp.uint8)
            cp.cuda.runtime.deviceSynchronize()
            sa = [mk.fromaddress(int(a.data.ptr), n), MPI.BYTE]
            rb = [mk.fromaddress(int(b.data.ptr), n), MPI.BYTE]

        def pp_block():
            if me == 0:
                comm.Send(sa, peer, 1)
                comm.Recv(rb, peer, 2)
            else:
                comm.Recv(rb, peer, 1)
                comm.Send(sa, peer, 2)

        def pp_nonblock():
            if me == 0:
                comm.Isend(sa, peer, 1).Wait()
                comm.Irecv(rb, peer, 2).Wait()
            else:
                comm.Irecv(rb, peer, 1).Wait()
                comm.Isend(sa, peer, 2).Wait()

        def pingping():
            r = comm.Irecv(rb, peer, 3)
            s = comm.Isend(sa, peer, 3)
            MPI.Request.Waitall([r, s])

        def pp_sync():
            if me == 0:
                cp.cuda.runtime.deviceSynchronize()
                comm.Send(sa, peer, 1)
                comm.Recv(rb, peer, 2)
            else:
                comm.Recv(rb, peer, 1)
                cp.cuda.runtime.deviceSynchronize()
                comm.Send(sa, peer, 2)

        row = {"bytes": n}
        for name, fn, per in (("pingpong-blocking", pp_block, 2), ("pingpong-nonblock", pp_nonblock, 2),
                              ("pingping", pingping, 1), ("pingpong-sync-src", pp_sync, 2)):
            iters = ITERS if n <= 65536 else 300
            for _ in range(WARM):
                fn()
            comm.Barrier()
            t = time.perf_counter()
            for _ in range(iters):
                fn()
            dt = (time.perf_counter() - t) / iters / per
            row[name + "_us"] = round(comm.allreduce(dt, op=MPI.MAX) * 1e6, 3)
        out["rows"].append(row)
    if me == 0:
        print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()

"""Probe: does time between MPI calls (the workloads harness records ~1.5-3 us per call) cost more
than itself?  Two ranks, blocking ping-pong, device (cupy) and host buffers at 8 B, 4 KiB, 64 KiB:
a tight loop, the same with each call timed, and with a busy gap of 2, 5, 20 us after each call.
Prints the median round trip (us) per case.  Run on 2 GPUs (docs/validation/h100x2d.md):

    mpirun -np 2 --mca pml ucx python3 bench/calibrate/gap_probe.py
"""
import time, sys, json
import numpy as np
from mpi4py import MPI
import cupy as cp
c = MPI.COMM_WORLD; r = c.Get_rank(); peer = 1 - r
cp.cuda.Device(r % cp.cuda.runtime.getDeviceCount()).use()
ns = time.perf_counter_ns
mod = getattr(MPI, "buffer", None) or MPI.memory
def busy(us):
    if us <= 0: return
    t = ns() + int(us * 1000)
    while ns() < t: pass
res = {}
for mem in ("device", "host"):
    for n in (8, 4096, 65536):
        if mem == "device":
            a = cp.zeros(n, cp.uint8); b = cp.zeros(n, cp.uint8); cp.cuda.runtime.deviceSynchronize()
            sb = [mod.fromaddress(int(a.data.ptr), n), MPI.BYTE]; rb = [mod.fromaddress(int(b.data.ptr), n), MPI.BYTE]
        else:
            a = np.zeros(n, np.uint8); b = np.zeros(n, np.uint8); sb = [a, MPI.BYTE]; rb = [b, MPI.BYTE]
        for style, gap in (("tight", 0), ("percall", 0), ("gap2", 2), ("gap5", 5), ("gap20", 20)):
            it = 300; rts = []; ev = []
            c.Barrier()
            for i in range(it):
                t0 = ns()
                if r == 0:
                    if style == "tight" or style.startswith("gap"):
                        c.Send(sb, peer, 1); busy(gap); c.Recv(rb, peer, 2); busy(gap)
                    else:
                        a0 = ns(); c.Send(sb, peer, 1); a1 = ns(); ev.append(("Send", a0, a1, {"b": n}))
                        a0 = ns(); c.Recv(rb, peer, 2); a1 = ns(); ev.append(("Recv", a0, a1, {"b": n}))
                else:
                    if style == "tight" or style.startswith("gap"):
                        c.Recv(rb, peer, 1); busy(gap); c.Send(sb, peer, 2); busy(gap)
                    else:
                        a0 = ns(); c.Recv(rb, peer, 1); a1 = ns(); ev.append(("Recv", a0, a1, {"b": n}))
                        a0 = ns(); c.Send(sb, peer, 2); a1 = ns(); ev.append(("Send", a0, a1, {"b": n}))
                rts.append(ns() - t0)
            if r == 0:
                res[f"{mem} {n} {style}"] = round(float(np.median(rts[20:])) / 1000, 2)
if r == 0:
    for k, v in res.items(): print(k, v)

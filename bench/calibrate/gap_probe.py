"""Probe: does time between MPI calls (the workloads harness records ~1.5-3 us per call) cost more
than itself?  Two ranks, blocking ping-pong, device (cupy) and host buffers at 8 B, 4 KiB, 64 KiB:
a tight loop, the same with each call timed, and with a busy gap of 2, 5, 20 us after each call.
Prints the median round trip (us) per case.  Run on 2 GPUs (docs/validation/h100x2d.md):

    mpirun -np 2 --mca pml ucx python3 bench/calibrate/gap_probe.py
"""
import time

import cupy as cp
import numpy as np
from mpi4py import MPI

ITERATIONS = 300
WARMUP = 20                                   # round trips left out of the median
STYLES = (("tight", 0), ("percall", 0), ("gap2", 2), ("gap5", 5), ("gap20", 20))

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
peer = 1 - rank
cp.cuda.Device(rank % cp.cuda.runtime.getDeviceCount()).use()
ns = time.perf_counter_ns
mem_mod = getattr(MPI, "buffer", None) or MPI.memory


def busy(us: float) -> None:
    """Spin for ``us`` microseconds (the harness's time between calls)."""
    end = ns() + int(us * 1000)
    while ns() < end:
        pass


def buffers(mem: str, n: int):
    """(send, receive) message specs of n bytes in device or host memory."""
    if mem == "device":
        a, b = cp.zeros(n, cp.uint8), cp.zeros(n, cp.uint8)
        cp.cuda.runtime.deviceSynchronize()
        return ([mem_mod.fromaddress(int(a.data.ptr), n), MPI.BYTE],
                [mem_mod.fromaddress(int(b.data.ptr), n), MPI.BYTE], (a, b))
    a, b = np.zeros(n, np.uint8), np.zeros(n, np.uint8)
    return [a, MPI.BYTE], [b, MPI.BYTE], (a, b)


def round_trip(sb, rb, n: int, style: str, gap: float, events: list) -> None:
    """One round trip: rank 0 sends then receives, rank 1 receives then sends."""
    calls = ((comm.Send, sb, 1, "Send"), (comm.Recv, rb, 2, "Recv"))
    if rank == 1:
        calls = ((comm.Recv, rb, 1, "Recv"), (comm.Send, sb, 2, "Send"))
    for fn, buf, tag, name in calls:
        if style == "percall":
            t0 = ns()
            fn(buf, peer, tag)
            events.append((name, t0, ns(), {"b": n}))
        else:
            fn(buf, peer, tag)
            busy(gap)


results = {}
for mem in ("device", "host"):
    for n in (8, 4096, 65536):
        sb, rb, _keep = buffers(mem, n)
        for style, gap in STYLES:
            rts: list[int] = []
            events: list = []
            comm.Barrier()
            for _ in range(ITERATIONS):
                t0 = ns()
                round_trip(sb, rb, n, style, gap, events)
                rts.append(ns() - t0)
            results[f"{mem} {n} {style}"] = round(float(np.median(rts[WARMUP:])) / 1000, 2)
if rank == 0:
    for k, v in results.items():
        print(k, v)

#!/usr/bin/env python3
"""g2gsim validation workloads: small MPI+GPU programs that record their own timeline.

Self-contained (numpy, mpi4py; cupy for the GPU): ``g2gsim validate script -o workloads.py`` writes
this file for a machine without g2gsim.  Run once per mode on the machine the machine file
describes, one rank per GPU::

    mpirun -np 4 python3 workloads.py --mode hostcopy -o runs/   # staged through pinned host memory
    mpirun -np 4 python3 workloads.py --mode device   -o runs/   # device buffers to a CUDA-aware MPI

and compare here with ``g2gsim validate compare runs/*.json --machine FILE``.

Workloads (``--only`` picks some):

* ``pingpong``: ranks 0 and 1, blocking Send/Recv, 8 B to 64 MiB (seed 001).
* ``jacobi`` / ``jacobi-overlap``: the 2D Jacobi of seed 004 (NVIDIA multi-gpu-programming-models)
  on 17408 x 17408 doubles in row slabs, periodic top/bottom, two MPI_Sendrecv per iteration;
  without overlap the whole-block kernel runs first, with overlap the boundary rows run on two
  high-priority streams and the interior on a low-priority one while the halos move.
  ``jacobi-wide`` / ``jacobi-wide-overlap``: 262144 columns x 512 rows a rank (2 MiB halos).
* ``jacobi-nb`` / ``jacobi-nb-overlap``: the same Jacobi with both halos exchanged by Irecv, Irecv,
  Isend, Isend, Waitall instead of two MPI_Sendrecv (the other exchange style of seed 004).
* ``allpairs``: every rank exchanges a block with every other rank at once (Irecv from all, Isend
  to all, Waitall), 64 KiB, 1 MiB and 16 MiB blocks: several peers of one GPU at once.
* ``matmul`` / ``matmul-8192``: seed 000: Bcast A, Scatter B column blocks, local GEMM (cuBLAS),
  Gather C, N = 4096 / 8192 doubles; device buffers use MPI_IN_PLACE at the root.

Modes: ``hostcopy`` copies every message through pinned host buffers with cudaMemcpy (the
application stages); ``device`` passes device pointers to MPI.  ``--host-only`` runs the same
programs with numpy on the CPU (for tests; no GPU, no CUDA-aware MPI needed).

What is recorded, per rank, from the barrier that starts a workload: every MPI call (start, end,
peer, tag, bytes), every staging cudaMemcpy, every kernel launch with its duration on the GPU
(CUDA events around it) and stream, and every stream synchronisation.  ``g2gsim validate`` turns
that into a g2gsim trace: host time between those calls becomes Compute, kernels become Kernel rows
on their streams, synchronisations StreamSynchronize, so the simulator predicts communication only.
"""
from __future__ import annotations

import argparse
import ctypes
import datetime
import json
import os
import platform
import sys
import time
from typing import Any

import numpy as np

FORMAT = "g2gsim-validate-run"
VERSION = 1
KiB, MiB = 1 << 10, 1 << 20
D2H, H2D = 2, 1


# Open MPI's tuned Scatter/Gather pick binomial trees for some sizes; their intermediate ranks copy
# into a host temporary with memcpy, which crashes on device buffers when the MPI was built without
# CUDA support (seen with Open MPI 4.1.6 + UCX 1.22 on the H200 node).  Linear ones only send and
# receive.  Set before MPI_Init (the mpi4py import), unless the user chose something.
ROOTED_LINEAR = {"OMPI_MCA_coll_tuned_use_dynamic_rules": "1", "OMPI_MCA_coll_tuned_scatter_algorithm": "1",
                 "OMPI_MCA_coll_tuned_gather_algorithm": "1"}


def set_rooted_linear() -> dict:
    if any(k in os.environ for k in ROOTED_LINEAR):
        return {k: os.environ.get(k) for k in ROOTED_LINEAR}
    os.environ.update(ROOTED_LINEAR)
    return dict(ROOTED_LINEAR)

WORKLOADS = ["pingpong", "jacobi", "jacobi-overlap", "jacobi-wide", "jacobi-wide-overlap", "jacobi-nb",
             "jacobi-nb-overlap", "matmul", "matmul-8192", "allpairs"]

JACOBI_SRC = r"""
extern "C" __global__ void jacobi(const double* __restrict__ a, double* __restrict__ an,
                                  const long long nx, const long long y0, const long long y1) {
    long long ix = (long long)blockIdx.x * blockDim.x + threadIdx.x + 1;
    long long iy = (long long)blockIdx.y * blockDim.y + threadIdx.y + y0;
    if (iy < y1 && ix < nx - 1) {
        long long i = iy * nx + ix;
        an[i] = 0.25 * (a[i + 1] + a[i - 1] + a[i + nx] + a[i - nx]);
    }
}
"""


def ns() -> int:
    return time.perf_counter_ns()


# ------------------------------------------------------------------------------------------------
# GPU (cupy) or CPU (numpy) back end
# ------------------------------------------------------------------------------------------------
class Stream:
    def __init__(self, sid: int, priority: int, s):
        self.id, self.priority, self.s = sid, priority, s


class Backend:
    def __init__(self, gpu: int | None):
        self.gpu = gpu
        self.cp: Any = None                    # cupy, when a GPU is used
        self.keep: list = []
        if gpu is not None:
            import cupy as cp
            self.cp = cp
            cp.cuda.Device(gpu).use()
            self.jacobi_kernel = cp.RawKernel(JACOBI_SRC, "jacobi")
            # CUDA clamps a priority to its range: -100 is the greatest, 0 the least
            self.prio = (0, -100)
        else:
            self.prio = (0, -1)
        self._events: list = []

    @property
    def is_gpu(self) -> bool:
        return self.cp is not None

    def name(self) -> str:
        if not self.is_gpu:
            return platform.processor() or "cpu"
        n = self.cp.cuda.runtime.getDeviceProperties(self.gpu)["name"]
        return n.decode() if isinstance(n, bytes) else str(n)

    def stream(self, sid: int, high: bool) -> Stream:
        p = self.prio[1] if high else self.prio[0]
        if self.is_gpu:
            try:
                s = self.cp.cuda.Stream(non_blocking=True, priority=p)
                p = int(getattr(s, "priority", p))
            except TypeError:                          # a cupy without stream priorities
                s, p = self.cp.cuda.Stream(non_blocking=True), 0
            return Stream(sid, p, s)
        return Stream(sid, p, None)

    def zeros(self, shape, dtype=np.float64):
        return self.cp.zeros(shape, dtype) if self.is_gpu else np.zeros(shape, dtype)

    def random(self, shape, seed):
        if self.is_gpu:
            return self.cp.random.default_rng(seed).random(shape, dtype=np.float64)
        return np.random.default_rng(seed).random(shape)

    def ptr(self, a) -> int:
        return int(a.data.ptr) if self.is_gpu else a.ctypes.data

    def pinned(self, nbytes: int) -> np.ndarray:
        if self.is_gpu:
            mem = self.cp.cuda.alloc_pinned_memory(max(nbytes, 1))
            self.keep.append(mem)
            a = np.frombuffer(mem, np.uint8, nbytes)
        else:
            a = np.empty(nbytes, np.uint8)
        a[:] = 0
        return a

    def memcpy(self, dst: int, src: int, n: int, kind: int):
        if self.is_gpu:
            self.cp.cuda.runtime.memcpy(dst, src, n, kind)
        else:
            ctypes.memmove(dst, src, n)

    def sync(self, st: Stream):
        if self.is_gpu:
            st.s.synchronize()

    def device_sync(self):
        if self.is_gpu:
            self.cp.cuda.runtime.deviceSynchronize()

    # kernels: each returns after launching (GPU) or after running (CPU)
    def jacobi(self, st: Stream, a, an, y0: int, y1: int):
        if y1 <= y0:
            return
        if self.is_gpu:
            nx = a.shape[1]
            bx, by = 256, 4
            grid = ((nx - 2 + bx - 1) // bx, (y1 - y0 + by - 1) // by)
            with st.s:
                self.jacobi_kernel(grid, (bx, by), (a, an, np.int64(nx), np.int64(y0), np.int64(y1)))
        else:
            an[y0:y1, 1:-1] = 0.25 * (a[y0:y1, 2:] + a[y0:y1, :-2] + a[y0 + 1:y1 + 1, 1:-1] + a[y0 - 1:y1 - 1, 1:-1])

    def matmul(self, st: Stream, A, B, out):
        if self.is_gpu:
            with st.s:
                self.cp.matmul(A, B, out=out)
        else:
            np.matmul(A, B, out=out)

    def event_pair(self, st: Stream):
        if not self.is_gpu:
            return None
        if not self._events:
            self._events = [self.cp.cuda.Event() for _ in range(256)]
        e0, e1 = self._events.pop(), self._events.pop()
        return e0, e1


# ------------------------------------------------------------------------------------------------
# the recorder
# ------------------------------------------------------------------------------------------------
class Recorder:
    """Per-rank timeline: [op, t0_ns, t1_ns, {fields}] relative to the start barrier."""

    def __init__(self, be: Backend):
        self.be = be
        self.on = False
        self.events: list = []
        self.t0 = 0
        self.t0_mono = 0
        self._kernels: list = []        # (event index, (e0, e1) or None)
        self._req = 0                   # request ids of nonblocking calls, per rank

    def start(self, comm):
        """Barrier, then record from its exit."""
        comm.Barrier()
        comm.Barrier()
        self.events = []
        self._kernels = []
        self.t0 = ns()
        self.t0_mono = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        self.on = True

    def add(self, op: str, t0: int, t1: int, **kw):
        if self.on:
            self.events.append([op, t0 - self.t0, t1 - self.t0, kw] if kw else [op, t0 - self.t0, t1 - self.t0])

    def call(self, op: str, fn, *args, **kw):
        t0 = ns()
        r = fn(*args)
        t1 = ns()
        self.add(op, t0, t1, **kw)
        return r

    def post(self, op: str, fn, *args, **kw):
        """A nonblocking call (Isend, Irecv): returns (request, its id in the record)."""
        self._req += 1
        return self.call(op, fn, *args, req=self._req, **kw), self._req

    def waitall(self, MPI, posted: list):
        """Waitall on [(request, id), ...]."""
        self.call("Waitall", MPI.Request.Waitall, [r for r, _ in posted], reqs=[i for _, i in posted])

    def memcpy(self, kind: int, dst: int, src: int, n: int):
        t0 = ns()
        self.be.memcpy(dst, src, n, kind)
        t1 = ns()
        self.add("Memcpy", t0, t1, kind="d2h" if kind == D2H else "h2d", bytes=n)

    def kernel(self, st: Stream, fn, *args, name: str = ""):
        ev = self.be.event_pair(st) if self.on else None
        t0 = ns()
        if ev is not None:
            ev[0].record(st.s)
        fn(st, *args)
        if ev is not None:
            ev[1].record(st.s)
        t1 = ns()
        if self.on:
            self._kernels.append((len(self.events), ev))
            self.add("Kernel", t0, t1, stream=st.id, priority=st.priority, name=name)

    def sync(self, st: Stream):
        t0 = ns()
        self.be.sync(st)
        t1 = ns()
        self.add("StreamSynchronize", t0, t1, stream=st.id)

    def stop(self) -> dict:
        """End of the workload: kernel durations from the CUDA events (on the CPU: host time)."""
        t_end = ns() - self.t0
        self.on = False
        self.be.device_sync()
        cp = self.be.cp
        for idx, ev in self._kernels:
            e = self.events[idx]
            if ev is None:
                e[3]["dur_ns"] = int(e[2] - e[1])
            else:
                e[3]["dur_ns"] = int(round(cp.cuda.get_elapsed_time(ev[0], ev[1]) * 1e6))
        if cp is not None:
            self.be._events.extend(x for _, ev in self._kernels if ev for x in ev)
        return {"end_ns": int(t_end), "t0_perf_ns": int(self.t0), "t0_monotonic_ns": int(self.t0_mono),
                "events": self.events}


# ------------------------------------------------------------------------------------------------
# workloads
# ------------------------------------------------------------------------------------------------
class Ctx:
    def __init__(self, MPI, comm, be: Backend, mode: str, scale: str):
        self.MPI, self.comm, self.be, self.mode, self.scale = MPI, comm, be, mode, scale
        self.rank, self.size = comm.Get_rank(), comm.Get_size()
        self.rec = Recorder(be)

    def msg(self, arr_or_ptr, n: int):
        """An MPI message of n bytes: a device pointer (device mode) or a host array."""
        if isinstance(arr_or_ptr, int):
            mod = getattr(self.MPI, "buffer", None) or self.MPI.memory
            return [mod.fromaddress(arr_or_ptr, n), self.MPI.BYTE]
        return [arr_or_ptr[:n], self.MPI.BYTE]

    @property
    def staged(self) -> bool:
        return self.mode == "hostcopy"

    @property
    def mem(self) -> str:
        return "host" if self.staged else "device"

    def dev_msg(self, a, n: int):
        """Device mode: a device array's pointer as a message (CPU back end: the array)."""
        if self.be.is_gpu:
            return self.msg(self.be.ptr(a), n)
        return [a.reshape(-1).view(np.uint8)[:n], self.MPI.BYTE]


def _by_size(c: Ctx, sizes, iters, run) -> dict:
    """A size sweep: ``run(n, 2)`` at every size as warm-up (connections, IPC handles), then from
    the start barrier a Barrier and ``run(n, it)`` per size; the rank's record."""
    for n in sizes:
        run(n, 2)
    c.be.device_sync()
    c.rec.start(c.comm)
    for n, it in zip(sizes, iters):
        c.rec.call("Barrier", c.comm.Barrier)
        run(n, it)
    return c.rec.stop()


def pingpong(c: Ctx, params: dict):
    """Ranks 0 and 1: blocking Send/Recv round trips; the other ranks only join the barriers."""
    sizes = params["sizes"]
    iters = params["iterations"]
    be, comm, rec, me = c.be, c.comm, c.rec, c.rank
    maxb = max(sizes)
    ds = be.zeros(maxb, np.uint8)
    dr = be.zeros(maxb, np.uint8)
    hs, hr = be.pinned(maxb), be.pinned(maxb)
    peer = 1 - me if me < 2 else None

    def run(n, it):
        if peer is None:
            return
        if c.staged:
            smsg, rmsg = c.msg(hs, n), c.msg(hr, n)
        else:
            smsg, rmsg = c.dev_msg(ds, n), c.dev_msg(dr, n)
        kw = dict(bytes=n, mem=c.mem)
        for _ in range(it):
            if me == 0:
                if c.staged:
                    rec.memcpy(D2H, hs.ctypes.data, be.ptr(ds), n)
                rec.call("Send", comm.Send, smsg, peer, 1, peer=peer, tag=1, **kw)
                rec.call("Recv", comm.Recv, rmsg, peer, 2, peer=peer, tag=2, **kw)
                if c.staged:
                    rec.memcpy(H2D, be.ptr(dr), hr.ctypes.data, n)
            else:
                rec.call("Recv", comm.Recv, rmsg, peer, 1, peer=peer, tag=1, **kw)
                if c.staged:
                    rec.memcpy(H2D, be.ptr(dr), hr.ctypes.data, n)
                    rec.memcpy(D2H, hs.ctypes.data, be.ptr(ds), n)
                rec.call("Send", comm.Send, smsg, peer, 2, peer=peer, tag=2, **kw)

    return _by_size(c, sizes, iters, run)


def jacobi(c: Ctx, params: dict):
    """Seed 004's Jacobi: row slabs, periodic top/bottom neighbours, two Sendrecv per iteration."""
    nx, ny, iters, warm, overlap = params["nx"], params["ny_local"], params["iterations"], params["warmup"], params["overlap"]
    nonblocking = bool(params.get("nonblocking", False))
    be, comm, rec, me, P = c.be, c.comm, c.rec, c.rank, c.size
    top, bottom = (me - 1) % P, (me + 1) % P
    a = be.random((ny + 2, nx), seed=me)
    an = be.zeros((ny + 2, nx))
    an[...] = a
    row = nx * 8
    compute = be.stream(0, high=False)
    push_top = be.stream(1, high=True)
    push_bottom = be.stream(2, high=True)
    h = {k: be.pinned(row) for k in ("top_s", "bot_s", "top_r", "bot_r")}
    be.device_sync()

    def row_ptr(arr, i):
        return be.ptr(arr) + i * row

    def exchange(arr, first: bool):
        """first: send row 1 to top, receive row ny+1 from bottom; else row ny to bottom, row 0 from top."""
        src_row, dst_row, dest, source = (1, ny + 1, top, bottom) if first else (ny, 0, bottom, top)
        kw = dict(peer=dest, tag=0, bytes=row, recv_peer=source, recv_tag=0, recv_bytes=row, mem=c.mem)
        if c.staged:
            hs, hr = (h["top_s"], h["bot_r"]) if first else (h["bot_s"], h["top_r"])
            rec.memcpy(D2H, hs.ctypes.data, row_ptr(arr, src_row), row)
            rec.call("Sendrecv", comm.Sendrecv, c.msg(hs, row), dest, 0, c.msg(hr, row), source, 0, **kw)
            rec.memcpy(H2D, row_ptr(arr, dst_row), hr.ctypes.data, row)
        elif be.is_gpu:
            rec.call("Sendrecv", comm.Sendrecv, c.msg(row_ptr(arr, src_row), row), dest, 0,
                     c.msg(row_ptr(arr, dst_row), row), source, 0, **kw)
        else:
            rec.call("Sendrecv", comm.Sendrecv, [arr[src_row], c.MPI.DOUBLE], dest, 0,
                     [arr[dst_row], c.MPI.DOUBLE], source, 0, **kw)

    def host_row(arr, i):
        return [arr[i], c.MPI.DOUBLE]

    def exchange_nb(arr):
        """Both halos at once: Irecv row 0 from top and row ny+1 from bottom, Isend row 1 to top and
        row ny to bottom, Waitall (staged: both D2H before, both H2D after)."""
        # tag 1: a row sent up (to top), tag 2: a row sent down (to bottom)
        recvs = [(0, top, "top_r", 2), (ny + 1, bottom, "bot_r", 1)]
        sends = [(1, top, "top_s", 1), (ny, bottom, "bot_s", 2)]
        if c.staged:
            for i, _, k, _ in sends:
                rec.memcpy(D2H, h[k].ctypes.data, row_ptr(arr, i), row)

        def m(i, k):
            if c.staged:
                return c.msg(h[k], row)
            return c.msg(row_ptr(arr, i), row) if be.is_gpu else host_row(arr, i)
        posted = [rec.post("Irecv", comm.Irecv, m(i, k), p, t, peer=p, tag=t, bytes=row, mem=c.mem)
                  for i, p, k, t in recvs]
        posted += [rec.post("Isend", comm.Isend, m(i, k), p, t, peer=p, tag=t, bytes=row, mem=c.mem)
                   for i, p, k, t in sends]
        rec.waitall(c.MPI, posted)
        if c.staged:
            for i, _, k, _ in recvs:
                rec.memcpy(H2D, row_ptr(arr, i), h[k].ctypes.data, row)

    def halos(arr):
        if nonblocking:
            exchange_nb(arr)
        else:
            exchange(arr, True)
            exchange(arr, False)

    def iteration(a, an):
        if overlap and nonblocking:
            rec.kernel(push_top, be.jacobi, a, an, 1, 2, name="jacobi-top")
            rec.kernel(push_bottom, be.jacobi, a, an, ny, ny + 1, name="jacobi-bottom")
            rec.kernel(compute, be.jacobi, a, an, 2, ny, name="jacobi-interior")
            rec.sync(push_top)
            rec.sync(push_bottom)
            exchange_nb(an)
            rec.sync(compute)
        elif overlap:
            rec.kernel(push_top, be.jacobi, a, an, 1, 2, name="jacobi-top")
            rec.kernel(push_bottom, be.jacobi, a, an, ny, ny + 1, name="jacobi-bottom")
            rec.kernel(compute, be.jacobi, a, an, 2, ny, name="jacobi-interior")
            rec.sync(push_top)
            exchange(an, True)
            rec.sync(push_bottom)
            exchange(an, False)
            rec.sync(compute)
        else:
            rec.kernel(compute, be.jacobi, a, an, 1, ny + 1, name="jacobi")
            rec.sync(compute)
            halos(an)

    for _ in range(warm):
        iteration(a, an)
        a, an = an, a
    be.device_sync()
    rec.start(comm)
    for _ in range(iters):
        iteration(a, an)
        a, an = an, a
    return rec.stop()


def matmul(c: Ctx, params: dict):
    """Seed 000: C = A x B; per repetition Bcast A, Scatter B column blocks, GEMM, Gather C."""
    n, iters, warm = params["n"], params["iterations"], params["warmup"]
    be, comm, rec, me, P, MPI = c.be, c.comm, c.rec, c.rank, c.size, c.MPI
    root = 0
    cols = n // P
    whole, part = n * n * 8, n * cols * 8
    stream = be.stream(0, high=False)
    A = be.random((n, n), seed=1) if me == root else be.zeros((n, n))
    B: Any = be.random((P, n, cols), seed=2) if me == root else None        # column blocks, contiguous
    C: Any = be.zeros((P, n, cols)) if me == root else None
    Bblk = B[0] if me == root and not c.staged else be.zeros((n, cols))
    Cblk = C[0] if me == root and not c.staged else be.zeros((n, cols))
    if c.staged:
        hA = be.pinned(whole)
        hB = be.pinned(whole) if me == root else None
        hC = be.pinned(whole) if me == root else None
        hBblk, hCblk = be.pinned(part), be.pinned(part)
    be.device_sync()
    coll = dict(mem=c.mem, root=root)

    def repetition():
        if c.staged:
            if me == root:
                rec.memcpy(D2H, hA.ctypes.data, be.ptr(A), whole)
            rec.call("Bcast", comm.Bcast, c.msg(hA, whole), root, bytes=whole, recv_bytes=whole, **coll)
            if me != root:
                rec.memcpy(H2D, be.ptr(A), hA.ctypes.data, whole)
            if me == root:
                rec.memcpy(D2H, hB.ctypes.data, be.ptr(B), whole)
                rec.call("Scatter", comm.Scatter, c.msg(hB, whole), c.msg(hBblk, part), root,
                         bytes=whole, recv_bytes=part, **coll)
            else:
                rec.call("Scatter", comm.Scatter, None, c.msg(hBblk, part), root, bytes=0, recv_bytes=part, **coll)
            rec.memcpy(H2D, be.ptr(Bblk), hBblk.ctypes.data, part)
        else:
            rec.call("Bcast", comm.Bcast, c.dev_msg(A, whole), root, bytes=whole, recv_bytes=whole, **coll)
            if me == root:
                rec.call("Scatter", comm.Scatter, c.dev_msg(B, whole), MPI.IN_PLACE, root,
                         bytes=whole, recv_bytes=part, **coll)
            else:
                rec.call("Scatter", comm.Scatter, None, c.dev_msg(Bblk, part), root, bytes=0, recv_bytes=part, **coll)
        rec.kernel(stream, be.matmul, A, Bblk, Cblk, name="gemm")
        rec.sync(stream)
        if c.staged:
            rec.memcpy(D2H, hCblk.ctypes.data, be.ptr(Cblk), part)
            if me == root:
                rec.call("Gather", comm.Gather, c.msg(hCblk, part), c.msg(hC, whole), root,
                         bytes=part, recv_bytes=whole, **coll)
                rec.memcpy(H2D, be.ptr(C), hC.ctypes.data, whole)
            else:
                rec.call("Gather", comm.Gather, c.msg(hCblk, part), None, root, bytes=part, recv_bytes=0, **coll)
        else:
            if me == root:
                rec.call("Gather", comm.Gather, MPI.IN_PLACE, c.dev_msg(C, whole), root,
                         bytes=part, recv_bytes=whole, **coll)
            else:
                rec.call("Gather", comm.Gather, c.dev_msg(Cblk, part), None, root, bytes=part, recv_bytes=0, **coll)

    for _ in range(warm):
        repetition()
    be.device_sync()
    rec.start(comm)
    for _ in range(iters):
        repetition()
    return rec.stop()


def allpairs(c: Ctx, params: dict):
    """Every rank exchanges one block with every other rank at once: Irecv from all, Isend to all,
    Waitall (staged: a D2H per block before its Isend, an H2D per block after the Waitall)."""
    sizes, iters = params["sizes"], params["iterations"]
    be, comm, rec, me, P = c.be, c.comm, c.rec, c.rank, c.size
    peers = [p for p in range(P) if p != me]
    maxb = max(sizes)
    k = max(1, len(peers))
    ds, dr = be.zeros(maxb * k, np.uint8), be.zeros(maxb * k, np.uint8)
    hs, hr = be.pinned(maxb * k), be.pinned(maxb * k)

    def run(n, it):
        def blk(side, j):
            if c.staged:
                a = hs if side == "s" else hr
                return c.msg(a[j * n:(j + 1) * n], n)
            d = ds if side == "s" else dr
            if be.is_gpu:
                return c.msg(be.ptr(d) + j * n, n)
            return [d[j * n:(j + 1) * n], c.MPI.BYTE]
        for _ in range(it):
            if c.staged:
                for j in range(len(peers)):
                    rec.memcpy(D2H, hs.ctypes.data + j * n, be.ptr(ds) + j * n, n)
            posted = [rec.post("Irecv", comm.Irecv, blk("r", j), p, 3, peer=p, tag=3, bytes=n, mem=c.mem)
                      for j, p in enumerate(peers)]
            posted += [rec.post("Isend", comm.Isend, blk("s", j), p, 3, peer=p, tag=3, bytes=n, mem=c.mem)
                       for j, p in enumerate(peers)]
            rec.waitall(c.MPI, posted)
            if c.staged:
                for j in range(len(peers)):
                    rec.memcpy(H2D, be.ptr(dr) + j * n, hr.ctypes.data + j * n, n)

    return _by_size(c, sizes, iters, run)


def params_for(name: str, P: int, scale: str) -> dict:
    small = scale == "small"
    if name == "pingpong":
        if small:
            return {"sizes": [8, 4 * KiB, 64 * KiB], "iterations": [10, 10, 5]}
        return {"sizes": [8, 4 * KiB, 64 * KiB, MiB, 16 * MiB, 64 * MiB],
                "iterations": [100, 100, 50, 20, 10, 5]}
    if name == "allpairs":
        if small:
            return {"sizes": [8, 4 * KiB], "iterations": [5, 5]}
        return {"sizes": [64 * KiB, MiB, 16 * MiB], "iterations": [50, 20, 10]}
    if name.startswith("jacobi"):
        wide = name.startswith("jacobi-wide")
        overlap = name.endswith("overlap")
        nb = {"nonblocking": True} if name.startswith("jacobi-nb") else {}
        if small:
            nx, ny = (256, 16) if wide else (64, 32)
            return {"nx": nx, "ny_local": ny, "iterations": 5, "warmup": 1, "overlap": overlap, **nb}
        if wide:
            return {"nx": 262144, "ny_local": 512, "iterations": 100, "warmup": 10, "overlap": overlap}
        n = 17408
        return {"nx": n, "ny_local": n // P, "iterations": 100, "warmup": 10, "overlap": overlap, **nb}
    if name.startswith("matmul"):
        if small:
            return {"n": 16 * P, "iterations": 2, "warmup": 1}
        n = 8192 if name == "matmul-8192" else 4096
        return {"n": n - n % P, "iterations": 3 if n == 8192 else 5, "warmup": 1}
    raise ValueError(f"unknown workload {name!r}; known: {', '.join(WORKLOADS)}")


RUNNERS = {"pingpong": pingpong, "jacobi": jacobi, "matmul": matmul, "allpairs": allpairs}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mode", choices=["hostcopy", "device"], required=True)
    p.add_argument("-o", "--outdir", default="validate-runs")
    p.add_argument("--only", default=",".join(WORKLOADS), help="comma list of workloads")
    p.add_argument("--scale", choices=["full", "small"], default="full", help="small: tiny sizes (tests)")
    p.add_argument("--host-only", action="store_true", help="numpy on the CPU instead of cupy on the GPU")
    p.add_argument("--tag", default="", help="suffix of the output file names")
    p.add_argument("--no-rooted-linear", dest="rooted_linear", action="store_false",
                   help="keep the MPI's own Scatter/Gather algorithms (default: Open MPI's linear ones)")
    args = p.parse_args(argv)
    mca = set_rooted_linear() if args.rooted_linear else {}
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    me, P = comm.Get_rank(), comm.Get_size()
    local = comm.Split_type(MPI.COMM_TYPE_SHARED, me)
    lrank = local.Get_rank()
    local.Free()
    gpu = None
    if not args.host_only:
        import cupy as cp
        gpu = lrank % cp.cuda.runtime.getDeviceCount()
    be = Backend(gpu)
    hosts = comm.allgather(MPI.Get_processor_name())
    gpus = comm.allgather(gpu)
    names = [w.strip() for w in args.only.split(",") if w.strip()]
    os.makedirs(args.outdir, exist_ok=True)
    import mpi4py
    for name in names:
        prm = params_for(name, P, args.scale)
        base = name.split("-")[0]
        c = Ctx(MPI, comm, be, args.mode, args.scale)
        t0 = time.time()
        rec = RUNNERS[base](c, prm)
        allrec = comm.gather(rec, root=0)
        if me == 0:
            out = {
                "format": FORMAT, "version": VERSION, "workload": name, "mode": args.mode, "params": prm,
                "nranks": P, "hosts": hosts, "gpus": gpus, "backend": "cupy" if be.is_gpu else "numpy",
                "kernels_async": be.is_gpu, "gpu_name": be.name(),
                "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
                "mpi": MPI.Get_library_version().strip("\x00 \n").splitlines()[0],
                "mpi4py": mpi4py.__version__, "ucx_tls": os.environ.get("UCX_TLS"), "mca_set": mca,
                "command": " ".join([os.path.basename(sys.executable)] + sys.argv),
                "ranks": allrec,
            }
            fn = os.path.join(args.outdir, f"{name}-{args.mode}{args.tag}.json")
            with open(fn, "w") as f:
                json.dump(out, f, separators=(",", ":"))
            ends = [r["end_ns"] / 1e6 for r in allrec]
            print(f"{name} ({args.mode}): {time.time() - t0:.1f} s wall, recorded {max(ends):.2f} ms -> {fn}",
                  flush=True)
        comm.Barrier()


if __name__ == "__main__":
    main()

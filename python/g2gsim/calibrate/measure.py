#!/usr/bin/env python3
"""g2gsim calibration measurements: run under mpirun on the cluster to calibrate.

Self-contained (Python 3.8+, numpy, mpi4py; cupy for the GPU parts): copy this one file to a machine
without g2gsim (``g2gsim calibrate script -o measure.py``) and run, e.g. on one node of 4 GPUs::

    mpirun -np 4 python3 measure.py -o raw.json                  # CUDA-aware MPI: device buffers too
    mpirun -np 4 python3 measure.py -o raw.json --device off     # MPI without CUDA support
    mpirun -np 2 python3 measure.py -o raw.json --host-only      # no GPU at all (CI)

With ranks on two or more nodes (one rank per GPU), the point-to-point tests also run between
rank 0 and the first rank of another node.  What it measures (each in three modes: ``host``
buffers; ``staged`` through pinned host buffers with cudaMemcpy; ``device`` buffers passed to the
CUDA-aware MPI):

* ping-pong (blocking Send/Recv; round-trip time per iteration) and ping-ping (Irecv + Isend +
  Waitall on both ranks at once; time per exchange), 1 B to 256 MiB in powers of 2, fewer
  iterations for large sizes, between two GPUs of a node and, given two nodes, across nodes;
* cudaMemcpy D2H / H2D, pinned and pageable, 1 B to 256 MiB; and the same copy on every GPU at once;
* concurrency: ping-ping on two pairs at once, and one rank sending to all others at once;
* bursts (message rate): one rank posts a window of Isends back to back to another, whose Irecvs
  are posted; both Waitall, then a 1-byte reply; small sizes, host and device buffers (LogGP g);
* collectives on all ranks: Bcast, Scatter and Gather (MPI_IN_PLACE at the root for device
  buffers: the only ones an Open MPI + UCX without CUDA support in its collectives runs there).

Every time is a per-iteration sample; the JSON keeps, per size, the iteration count and the
min / p10 / median / p90 / mean / max.  Rank 0 writes the JSON after each section, so a run that
dies (a non-CUDA-aware MPI given device buffers segfaults) keeps what was measured before.
``g2gsim calibrate fit RAW.json -o machine.toml`` turns the file into a machine file.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import time
import traceback

import numpy as np

FORMAT = "g2gsim-calibrate-raw"
VERSION = 1
KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
D2H, H2D = 2, 1          # cudaMemcpyKind


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


def parse_size(s) -> int:
    """'64KiB' (1024-based), '64KB' or '64K' (1000-based), '4096' -> bytes: the rule of g2gsim.units
    (the core's parser), restated because this file runs without g2gsim; a test checks the two agree."""
    if isinstance(s, int):
        return s
    t = str(s).strip()
    num = t.rstrip("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ ")
    unit = t[len(num):].strip()
    prefix = unit[:-1] if unit.endswith("B") else unit
    mult = {"": 1, "K": 10**3, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "Ki": KiB, "Mi": MiB,
            "Gi": GiB, "Ti": 1 << 40}.get(prefix)
    try:
        v = float(num) * mult if mult is not None else None
    except ValueError:
        v = None
    if v is None or v < 0:
        raise ValueError(f"size {s!r}: expected e.g. 4096, 64KiB or 64KB")
    return int(round(v))


def sizes_pow2(lo: int, hi: int, step: int = 2) -> list:
    out, b = [], max(1, lo)
    while b <= hi:
        out.append(b)
        b *= step
    return out


def stats(samples) -> dict:
    a = np.asarray(samples, dtype=float)
    return {"min": float(a.min()), "p10": float(np.percentile(a, 10)), "median": float(np.median(a)),
            "p90": float(np.percentile(a, 90)), "mean": float(a.mean()), "max": float(a.max())}


# ------------------------------------------------------------------------------------------------
# buffers: host (pageable numpy), pinned (cudaHostAlloc), device (cudaMalloc through cupy)
# ------------------------------------------------------------------------------------------------
class Buffers:
    """Send and receive buffers of ``nbytes`` in each memory kind this run uses, and the MPI
    message specs for a size (built once, outside the timed loops)."""

    def __init__(self, MPI, cp, nbytes: int, kinds):
        self.MPI, self.cp, self.n = MPI, cp, nbytes
        self.keep = []
        self.addr = {}
        for k in kinds:
            for side in ("s", "r"):
                if k == "host":
                    a = np.empty(nbytes, np.uint8)
                    a[:] = 1                                  # fault the pages in
                    self.keep.append(a)
                    self.addr[(k, side)] = (a, a.ctypes.data)
                elif k == "pinned":
                    mem = cp.cuda.alloc_pinned_memory(nbytes)
                    a = np.frombuffer(mem, np.uint8, nbytes)
                    a[:] = 1
                    self.keep.append((mem, a))
                    self.addr[(k, side)] = (a, a.ctypes.data)
                elif k == "device":
                    d = cp.empty(nbytes, cp.uint8)
                    d.fill(1)
                    self.keep.append(d)
                    self.addr[(k, side)] = (d, int(d.data.ptr))
        if cp is not None:
            cp.cuda.runtime.deviceSynchronize()

    def msg(self, kind: str, side: str, n: int):
        """[buffer, MPI.BYTE] of the first n bytes of a buffer."""
        arr, addr = self.addr[(kind, side)]
        if kind == "device":
            return [_fromaddress(self.MPI, addr, n), self.MPI.BYTE]
        return [arr[:n], self.MPI.BYTE]

    def ptr(self, kind: str, side: str) -> int:
        return self.addr[(kind, side)][1]


def _fromaddress(MPI, addr: int, n: int):
    mod = getattr(MPI, "buffer", None) or MPI.memory
    return mod.fromaddress(addr, n)


# ------------------------------------------------------------------------------------------------
# the measurements
# ------------------------------------------------------------------------------------------------
class Runner:
    def __init__(self, args):
        from mpi4py import MPI
        self.MPI = MPI
        self.args = args
        self.comm = MPI.COMM_WORLD
        self.rank = self.comm.Get_rank()
        self.size = self.comm.Get_size()
        self.host = MPI.Get_processor_name()
        local = self.comm.Split_type(MPI.COMM_TYPE_SHARED, self.rank)
        self.local_rank = local.Get_rank()
        self.local_size = local.Get_size()
        local.Free()
        self.cp = None
        self.gpu = None
        if not args.host_only:
            try:
                import cupy as cp
                ndev = cp.cuda.runtime.getDeviceCount()
                if ndev > 0:
                    self.cp = cp
                    self.gpu = self.local_rank % ndev
                    cp.cuda.Device(self.gpu).use()
            except Exception as e:      # noqa: BLE001 - no cupy, no driver, no GPU: host only
                self.note(f"no GPU measurements: {type(e).__name__}: {e}")
        hosts = self.comm.allgather(self.host)
        self.hosts = hosts
        gpus = self.comm.allgather(self.gpu)
        self.gpus = gpus
        self.have_gpu = all(g is not None for g in gpus)
        self.device_ok = self.have_gpu and self.cuda_aware(args.device)
        self.modes = ["host"] + (["staged"] if self.have_gpu else []) + (["device"] if self.device_ok else [])
        self.max_bytes = parse_size(args.max_bytes)
        self.t_start = time.time()
        self.out = self.header()

    # -------------------------------------------------------------------- set-up and metadata
    notes: list = []

    def note(self, s: str):
        Runner.notes.append(s)

    def cuda_aware(self, flag: str) -> bool:
        if flag == "on":
            return True
        if flag == "off":
            return False
        q = getattr(self.MPI, "Query_cuda_support", None)
        try:
            if q is not None and q():
                return True
        except Exception:      # noqa: BLE001
            pass
        tls = os.environ.get("UCX_TLS", "")
        aware = "cuda_ipc" in tls or "cuda_copy" in tls
        if not aware:
            self.note("device buffers skipped: the MPI does not report CUDA support and UCX_TLS names no "
                      "cuda transport (use --device on to force)")
        return aware

    def header(self) -> dict:
        MPI = self.MPI
        gpu_meta = None
        if self.cp is not None:
            cp = self.cp
            props = cp.cuda.runtime.getDeviceProperties(self.gpu)
            name = props["name"]
            gpu_meta = {
                "name": name.decode() if isinstance(name, bytes) else str(name),
                "count_per_node": cp.cuda.runtime.getDeviceCount(),
                "memory_bytes": int(props.get("totalGlobalMem", 0)),
                "driver": cp.cuda.runtime.driverGetVersion(),
                "runtime": cp.cuda.runtime.runtimeGetVersion(),
                "cupy": cp.__version__,
            }
        per_rank = self.comm.gather({"rank": self.rank, "host": self.host, "local_rank": self.local_rank,
                                     "gpu": self.gpu, "pci_bus_id": self._bus_id()}, root=0)
        import mpi4py
        return {
            "format": FORMAT, "version": VERSION,
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "command": " ".join([os.path.basename(sys.executable)] + sys.argv),
            "nranks": self.size,
            "hosts": sorted(set(self.hosts)),
            "ranks": per_rank,
            "mpi": {"library": MPI.Get_library_version().strip("\x00 \n").splitlines()[0],
                    "library_full": MPI.Get_library_version().strip("\x00 \n"),
                    "standard": "%d.%d" % MPI.Get_version(), "mpi4py": mpi4py.__version__},
            "ucx": {"version": ucx_version(), "env": {k: v for k, v in os.environ.items() if k.startswith("UCX_")}},
            "env": {k: v for k, v in os.environ.items() if k.startswith(("OMPI_MCA_", "CUDA_VISIBLE", "NCCL_"))},
            "gpu": gpu_meta,
            "python": platform.python_version(), "numpy": np.__version__,
            "cuda_aware": self.device_ok,
            "modes": self.modes,
            "options": {"max_bytes": self.max_bytes, "budget_bytes": parse_size(self.args.budget),
                        "max_iters": self.args.max_iters, "min_iters": self.args.min_iters,
                        "mca_set": self.args.mca},
            "p2p": [], "memcpy": [], "memcpy_concurrent": [], "concurrency": [], "collectives": [],
            "errors": [], "notes": [],
        }

    def _bus_id(self):
        if self.cp is None:
            return None
        try:
            return self.cp.cuda.Device(self.gpu).pci_bus_id
        except Exception:      # noqa: BLE001
            return None

    def iters(self, b: int, scale: float = 1.0) -> tuple:
        a = self.args
        n = int(min(a.max_iters, max(a.min_iters, parse_size(a.budget) * scale / max(b, 1))))
        return n, max(1, n // 20)

    def save(self):
        if self.rank != 0:
            return
        self.out["notes"] = list(Runner.notes)
        self.out["elapsed_s"] = round(time.time() - self.t_start, 3)
        tmp = self.args.output + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.out, f, indent=1)
        os.replace(tmp, self.args.output)

    def log(self, s: str):
        if self.rank == 0 and not self.args.quiet:
            print(f"[{time.time() - self.t_start:7.1f}s] {s}", flush=True)

    def section(self, name: str, fn):
        """Runs a section on every rank.  An exception on any rank is printed and recorded (rank 0
        saves what was measured so far) and the job is aborted: the other ranks would otherwise
        wait forever for a message that never comes."""
        self.comm.Barrier()
        t0 = time.time()
        try:
            fn()
        except Exception as e:      # noqa: BLE001
            err = f"rank {self.rank}: {type(e).__name__}: {e}\n{traceback.format_exc()}"
            print(f"error in {name}: {err}", file=sys.stderr, flush=True)
            if self.rank == 0:
                self.out["errors"].append({"section": name, "error": err})
                self.save()
            self.comm.Abort(2)
        self.comm.Barrier()
        self.log(f"{name}: ok ({time.time() - t0:.1f} s)")
        self.save()

    # -------------------------------------------------------------------- point-to-point
    def pairs(self) -> list:
        """(scope, a, b): two GPUs of a node, and across nodes when there are two nodes."""
        h = self.hosts
        out = []
        same = [r for r in range(1, self.size) if h[r] == h[0]]
        if same:
            out.append(("intra", 0, same[0]))
        other = [r for r in range(1, self.size) if h[r] != h[0]]
        if other:
            out.append(("inter", 0, other[0]))
        return out

    def p2p_all(self):
        sizes = sizes_pow2(1, self.max_bytes)
        bufs = Buffers(self.MPI, self.cp, self.max_bytes, self.kinds())
        for scope, a, b in self.pairs():
            for mode in self.modes:
                # pingpong: blocking Send / Recv; pingpong-nb: Isend + Wait / Irecv + Wait (Open MPI's
                # pml ucx makes some blocking sends slower, docs/validation/h200x4/probe); pingping
                for pattern in ("pingpong", "pingpong-nb", "pingping"):
                    self.p2p(bufs, scope, a, b, mode, pattern, sizes)
                    self.save()
        del bufs

    def kinds(self):
        k = ["host"]
        if self.have_gpu:
            k += ["pinned", "device"]
        return k

    def p2p(self, bufs, scope, a, b, mode, pattern, sizes):
        comm, me = self.comm, self.rank
        entry = {"pattern": pattern, "mode": mode, "scope": scope, "ranks": [a, b],
                 "gpus": [self.gpus[a], self.gpus[b]], "hosts": [self.hosts[a], self.hosts[b]],
                 "sizes": [], "iterations": [], "stats": []}
        t_sec = time.time()
        if me in (a, b):
            peer = b if me == a else a
            first = me == a
            self._p2p_warm(bufs, mode, peer, first)
            for n in sizes:
                it, warm = self.iters(n)
                ts = self._p2p_one(bufs, mode, pattern, peer, first, n, it, warm)
                if me == a:
                    entry["sizes"].append(n)
                    entry["iterations"].append(it)
                    entry["stats"].append(stats(ts))
        comm.Barrier()
        if me == 0:
            self.out["p2p"].append(entry)
        self.log(f"  {scope} {mode} {pattern}: {time.time() - t_sec:.1f} s")

    def _p2p_warm(self, bufs, mode, peer, first):
        # connection set-up, IPC handle mapping, registration caches: a few of the largest size
        n = min(self.max_bytes, 4 * MiB)
        self._p2p_one(bufs, mode, "pingpong", peer, first, n, 3, 0)
        self._p2p_one(bufs, mode, "pingping", peer, first, n, 3, 0)

    def _p2p_one(self, bufs, mode, pattern, peer, first, n, iters, warm):
        MPI, comm, cp = self.MPI, self.comm, self.cp
        pc = time.perf_counter
        ts = np.empty(iters)
        if mode == "device":
            smsg, rmsg = bufs.msg("device", "s", n), bufs.msg("device", "r", n)
        elif mode == "staged":
            smsg, rmsg = bufs.msg("pinned", "s", n), bufs.msg("pinned", "r", n)
        else:
            smsg, rmsg = bufs.msg("host", "s", n), bufs.msg("host", "r", n)
        staged = mode == "staged"
        if staged:
            memcpy = cp.cuda.runtime.memcpy
            ds, dr = bufs.ptr("device", "s"), bufs.ptr("device", "r")
            hs, hr = bufs.ptr("pinned", "s"), bufs.ptr("pinned", "r")
        Send, Recv = comm.Send, comm.Recv
        if pattern == "pingpong":
            for i in range(warm + iters):
                t0 = pc()
                if first:
                    if staged:
                        memcpy(hs, ds, n, D2H)
                    Send(smsg, peer, 1)
                    Recv(rmsg, peer, 2)
                    if staged:
                        memcpy(dr, hr, n, H2D)
                else:
                    Recv(rmsg, peer, 1)
                    if staged:
                        memcpy(dr, hr, n, H2D)
                        memcpy(hs, ds, n, D2H)
                    Send(smsg, peer, 2)
                t1 = pc()
                if i >= warm:
                    ts[i - warm] = t1 - t0
        elif pattern == "pingpong-nb":
            Irecv, Isend = comm.Irecv, comm.Isend
            for i in range(warm + iters):
                t0 = pc()
                if first:
                    if staged:
                        memcpy(hs, ds, n, D2H)
                    Isend(smsg, peer, 1).Wait()
                    Irecv(rmsg, peer, 2).Wait()
                    if staged:
                        memcpy(dr, hr, n, H2D)
                else:
                    Irecv(rmsg, peer, 1).Wait()
                    if staged:
                        memcpy(dr, hr, n, H2D)
                        memcpy(hs, ds, n, D2H)
                    Isend(smsg, peer, 2).Wait()
                t1 = pc()
                if i >= warm:
                    ts[i - warm] = t1 - t0
        else:
            Irecv, Isend, Waitall = comm.Irecv, comm.Isend, MPI.Request.Waitall
            mytag, peertag = (1, 2) if first else (2, 1)
            for i in range(warm + iters):
                t0 = pc()
                rr = Irecv(rmsg, peer, peertag)
                if staged:
                    memcpy(hs, ds, n, D2H)
                sr = Isend(smsg, peer, mytag)
                Waitall([rr, sr])
                if staged:
                    memcpy(dr, hr, n, H2D)
                t1 = pc()
                if i >= warm:
                    ts[i - warm] = t1 - t0
        return ts

    # -------------------------------------------------------------------- cudaMemcpy
    def memcpy_all(self):
        cp = self.cp
        sizes = sizes_pow2(1, self.max_bytes)
        if self.rank == 0:
            dev = cp.empty(self.max_bytes, cp.uint8)
            dev.fill(1)
            pin_mem = cp.cuda.alloc_pinned_memory(self.max_bytes)
            pin = np.frombuffer(pin_mem, np.uint8, self.max_bytes)
            pin[:] = 1
            page = np.empty(self.max_bytes, np.uint8)
            page[:] = 1
            cp.cuda.runtime.deviceSynchronize()
            memcpy = cp.cuda.runtime.memcpy
            pc = time.perf_counter
            d = int(dev.data.ptr)
            for host, arr in (("pinned", pin), ("pageable", page)):
                h = arr.ctypes.data
                for kind, (dst, src, k) in (("d2h", (h, d, D2H)), ("h2d", (d, h, H2D))):
                    entry = {"kind": kind, "host": host, "gpu": self.gpu, "sizes": [], "iterations": [],
                             "stats": []}
                    for _ in range(3):
                        memcpy(dst, src, min(self.max_bytes, 4 * MiB), k)
                    for n in sizes:
                        it, warm = self.iters(n, 0.5)
                        ts = np.empty(it)
                        for i in range(warm + it):
                            t0 = pc()
                            memcpy(dst, src, n, k)
                            t1 = pc()
                            if i >= warm:
                                ts[i - warm] = t1 - t0
                        entry["sizes"].append(n)
                        entry["iterations"].append(it)
                        entry["stats"].append(stats(ts))
                    self.out["memcpy"].append(entry)
            del dev, pin, page, pin_mem
        self.comm.Barrier()

    def memcpy_concurrent(self):
        """The same pinned copy on every GPU of the node at once (PCIe / host-memory sharing)."""
        cp, comm = self.cp, self.comm
        n = min(self.max_bytes, 64 * MiB)
        dev = cp.empty(n, cp.uint8)
        dev.fill(1)
        pin_mem = cp.cuda.alloc_pinned_memory(n)
        pin = np.frombuffer(pin_mem, np.uint8, n)
        pin[:] = 1
        cp.cuda.runtime.deviceSynchronize()
        memcpy = cp.cuda.runtime.memcpy
        d, h = int(dev.data.ptr), pin.ctypes.data
        for kind, (dst, src, k) in (("d2h", (h, d, D2H)), ("h2d", (d, h, H2D))):
            for active in sorted({1, self.local_size}):
                ts = []
                for _i in range(12):
                    comm.Barrier()
                    t0 = time.perf_counter()
                    if self.local_rank < active:
                        memcpy(dst, src, n, k)
                    ts.append(time.perf_counter() - t0)
                all_ts = comm.gather(ts[2:] if self.local_rank < active else None, root=0)
                if self.rank == 0:
                    per = [stats(t) for t in all_ts if t is not None]
                    self.out["memcpy_concurrent"].append({"kind": kind, "host": "pinned", "bytes": n,
                                                          "gpus_at_once": active, "per_rank": per})

    # -------------------------------------------------------------------- concurrency
    def concurrency(self):
        """Two pairs exchanging at once (0-1 and 2-3), and rank 0 sending to every other rank at
        once: how links and shared memory are shared.  Ranks of node 0 only."""
        node0 = [r for r in range(self.size) if self.hosts[r] == self.hosts[0]]
        sizes = [s for s in (64 * KiB, MiB, 16 * MiB, 64 * MiB) if s <= self.max_bytes]
        bufs = Buffers(self.MPI, self.cp, max(sizes), self.kinds())
        comm, me = self.comm, self.rank
        for mode in self.modes:
            if len(node0) >= 4:
                pairs = [(node0[0], node0[1]), (node0[2], node0[3])]
                entry = {"pattern": "two-pairs-pingping", "mode": mode, "pairs": pairs, "sizes": [],
                         "iterations": [], "per_pair": []}
                res = []
                for n in sizes:
                    it, warm = self.iters(n, 0.25)
                    comm.Barrier()
                    ts = None
                    for a, b in pairs:
                        if me in (a, b):
                            ts = self._p2p_one(bufs, mode, "pingping", b if me == a else a, me == a, n, it, warm)
                    g = comm.gather(stats(ts) if ts is not None and me in (pairs[0][0], pairs[1][0]) else None, root=0)
                    res.append([x for x in (g or []) if x is not None])
                    entry["sizes"].append(n)
                    entry["iterations"].append(it)
                entry["per_pair"] = res
                if me == 0:
                    self.out["concurrency"].append(entry)
            if len(node0) >= 3 and mode != "staged":
                peers = node0[1:]
                entry = {"pattern": "fan-out", "mode": mode, "root": node0[0], "peers": peers, "sizes": [],
                         "iterations": [], "stats": []}
                for n in sizes:
                    it, warm = self.iters(n, 0.25)
                    comm.Barrier()
                    kind = "device" if mode == "device" else "host"
                    ts = np.empty(it)
                    for i in range(warm + it):
                        t0 = time.perf_counter()
                        if me == node0[0]:
                            reqs = [comm.Isend(bufs.msg(kind, "s", n), p, 7) for p in peers]
                            self.MPI.Request.Waitall(reqs)
                            for p in peers:
                                comm.Recv(bufs.msg(kind, "r", 1), p, 8)
                        elif me in peers:
                            comm.Recv(bufs.msg(kind, "r", n), node0[0], 7)
                            comm.Send(bufs.msg(kind, "s", 1), node0[0], 8)
                        if i >= warm:
                            ts[i - warm] = time.perf_counter() - t0
                    if me == node0[0]:
                        entry["sizes"].append(n)
                        entry["iterations"].append(it)
                        entry["stats"].append(stats(ts))
                if me == 0:
                    self.out["concurrency"].append(entry)
            if len(node0) >= 2:
                # with two ranks: MPI_Sendrecv with the one other rank (the per-call cost of
                # Sendrecv, and in staged mode the copies next to MPI on both GPUs); with more,
                # the same on the first two alone (P=2), then the ring of every GPU of the node
                # (copies next to MPI on every GPU)
                if len(node0) >= 3:
                    self.out_ring(bufs, mode, node0[:2])
                self.out_ring(bufs, mode, node0)
            self.save()

    def out_ring(self, bufs, mode, ranks):
        """Every rank of ``ranks`` at once: MPI_Sendrecv to its right neighbour from its left one
        (a 1D halo step); in staged mode a D2H copy into the pinned send buffer before and an H2D
        copy from the pinned receive buffer after, each timed on its own: the staged step as a
        whole, as an application does it, with all GPUs and MPI on the same pinned buffers."""
        comm, me, cp = self.comm, self.rank, self.cp
        sizes = [s for s in (16 * KiB, 64 * KiB, 128 * KiB, 136 * KiB, 256 * KiB, MiB, 4 * MiB, 16 * MiB)
                 if s <= self.max_bytes]
        n_r = len(ranks)
        entry = {"pattern": "ring-sendrecv", "mode": mode, "ranks": ranks, "sizes": [], "iterations": [],
                 "per_rank": []}
        kind = {"device": "device", "staged": "pinned"}.get(mode, "host")
        staged = mode == "staged"
        pc = time.perf_counter
        for n in sizes:
            it, warm = self.iters(n, 0.25)
            comm.Barrier()
            rec = None
            if me in ranks:
                i_me = ranks.index(me)
                right, left = ranks[(i_me + 1) % n_r], ranks[(i_me - 1) % n_r]
                smsg, rmsg = bufs.msg(kind, "s", n), bufs.msg(kind, "r", n)
                ts = {"step": np.empty(it), "sendrecv": np.empty(it)}
                if staged:
                    ts.update(d2h=np.empty(it), h2d=np.empty(it))
                    memcpy = cp.cuda.runtime.memcpy
                    ds, dr = bufs.ptr("device", "s"), bufs.ptr("device", "r")
                    hs, hr = bufs.ptr("pinned", "s"), bufs.ptr("pinned", "r")
                Sendrecv = comm.Sendrecv
                for i in range(warm + it):
                    t0 = pc()
                    if staged:
                        memcpy(hs, ds, n, D2H)
                    t1 = pc()
                    Sendrecv(smsg, right, 5, rmsg, left, 5)
                    t2 = pc()
                    if staged:
                        memcpy(dr, hr, n, H2D)
                    t3 = pc()
                    if i >= warm:
                        k = i - warm
                        ts["step"][k] = t3 - t0
                        ts["sendrecv"][k] = t2 - t1
                        if staged:
                            ts["d2h"][k] = t1 - t0
                            ts["h2d"][k] = t3 - t2
                rec = {k: stats(v) for k, v in ts.items()}
            g = comm.gather(rec, root=0)
            entry["sizes"].append(n)
            entry["iterations"].append(it)
            entry["per_rank"].append([x for x in (g or []) if x is not None])
        if me == 0:
            self.out["concurrency"].append(entry)

    # -------------------------------------------------------------------- multi-peer
    def multipeer(self):
        """Several peers at once, the series that fit copy engines and a GPU's aggregate link rate
        (issue 25): every rank of node 0 exchanging with every other at once (``all-pairs``:
        Irecv from all, Isend to all, Waitall), and every other rank sending to rank 0 at once
        (``fan-in``: the root's Irecvs, Waitall, then a 1-byte reply to each; the time is the
        root's).  Per size, per rank; device and host modes (staged: the copies would dominate)."""
        node0 = [r for r in range(self.size) if self.hosts[r] == self.hosts[0]]
        if len(node0) < 2:      # two ranks: one peer, the baseline the multi-peer curves are held against
            return
        sizes = [s for s in (8, 4 * KiB, 64 * KiB, MiB, 4 * MiB, 16 * MiB, 64 * MiB) if s <= self.max_bytes]
        comm, me, MPI = self.comm, self.rank, self.MPI
        n_r = len(node0)
        bufs = Buffers(MPI, self.cp, max(sizes) * n_r, self.kinds())
        pc = time.perf_counter
        for mode in self.modes:
            if mode == "staged":
                continue
            kind = "device" if mode == "device" else "host"
            sarr, saddr = bufs.addr[(kind, "s")]
            rarr, raddr = bufs.addr[(kind, "r")]

            def part(side, j, n, kind=kind, saddr=saddr, raddr=raddr, sarr=sarr, rarr=rarr):
                # the j-th n-byte block of a buffer (one per peer, no two messages on one block);
                # this mode's buffers bound as defaults
                if kind == "device":
                    return [_fromaddress(MPI, (saddr if side == "s" else raddr) + j * n, n), MPI.BYTE]
                a = sarr if side == "s" else rarr
                return [a[j * n:(j + 1) * n], MPI.BYTE]

            # all-pairs: on the first two ranks alone (P=2), then on every rank of the node
            for group in ([node0[:2], node0] if n_r >= 3 else [node0]):
                self._all_pairs(group, sizes, mode, part)
            if n_r >= 3:
                # the same with each rank's peers in rotated order (r+1, r+2, ...): no two ranks
                # start on one peer; if copies queue on a GPU's engines, this order is faster
                self._all_pairs(node0, sizes, mode, part, order="rotated")
            # fan-in
            entry = {"pattern": "fan-in", "mode": mode, "root": node0[0], "peers": node0[1:], "sizes": [],
                     "iterations": [], "stats": []}
            for n in sizes:
                it, warm = self.iters(n * (n_r - 1), 0.25)
                comm.Barrier()
                ts = np.empty(it)
                peers = node0[1:]
                for i in range(warm + it):
                    t0 = pc()
                    if me == node0[0]:
                        reqs = [comm.Irecv(part("r", j, n), p, 12) for j, p in enumerate(peers)]
                        MPI.Request.Waitall(reqs)
                        for p in peers:
                            comm.Send(part("s", 0, 1), p, 13)
                    elif me in peers:
                        comm.Send(part("s", 0, n), node0[0], 12)
                        comm.Recv(part("r", 0, 1), node0[0], 13)
                    if i >= warm:
                        ts[i - warm] = pc() - t0
                if me == node0[0]:
                    entry["sizes"].append(n)
                    entry["iterations"].append(it)
                    entry["stats"].append(stats(ts))
            if me == 0:
                self.out.setdefault("multipeer", []).append(entry)
            self.save()
            self.log(f"  {mode} multi-peer")

    def _all_pairs(self, group, sizes, mode, part, order="ascending"):
        """Every rank of ``group`` exchanging with every other at once (Irecv from all, Isend to
        all, Waitall), its peers in ascending rank order or rotated (the rank after it first);
        per size, every rank's own statistics."""
        comm, me, MPI = self.comm, self.rank, self.MPI
        pc = time.perf_counter
        n_r = len(group)
        entry = {"pattern": "all-pairs", "mode": mode, "ranks": group, "order": order, "sizes": [],
                 "iterations": [], "per_rank": []}
        for n in sizes:
            it, warm = self.iters(n * (n_r - 1), 0.25)
            comm.Barrier()
            rec = None
            if me in group:
                i_me = group.index(me)
                peers = ([p for p in group if p != me] if order == "ascending"
                         else [group[(i_me + k) % n_r] for k in range(1, n_r)])
                rmsgs = [part("r", j, n) for j in range(len(peers))]
                smsgs = [part("s", j, n) for j in range(len(peers))]
                ts = np.empty(it)
                for i in range(warm + it):
                    t0 = pc()
                    reqs = [comm.Irecv(rmsgs[j], p, 11) for j, p in enumerate(peers)]
                    reqs += [comm.Isend(smsgs[j], p, 11) for j, p in enumerate(peers)]
                    MPI.Request.Waitall(reqs)
                    if i >= warm:
                        ts[i - warm] = pc() - t0
                rec = stats(ts)
            g = comm.gather(rec, root=0)
            entry["sizes"].append(n)
            entry["iterations"].append(it)
            entry["per_rank"].append([x for x in (g or []) if x is not None])
        if me == 0:
            self.out.setdefault("multipeer", []).append(entry)

    # -------------------------------------------------------------------- message rate
    BURST_WINDOW = 64
    BURST_SIZES = (8, 64, 512, 4 * KiB, 32 * KiB)

    def burst(self):
        """Message rate (issue 25, LogGP g): rank a posts ``BURST_WINDOW`` Isends of n bytes to rank b
        back to back (each from its own block), b's Irecvs (each into its own block) posted at the
        start of the iteration; both Waitall; then b sends a 1-byte reply that a receives.  Time
        per iteration on a; host and device buffers (staged: the copies would dominate)."""
        W = self.BURST_WINDOW
        sizes = [n for n in self.BURST_SIZES if n <= self.max_bytes]
        MPI, comm, me = self.MPI, self.comm, self.rank
        bufs = Buffers(MPI, self.cp, max(sizes) * W, self.kinds())
        pc = time.perf_counter
        for scope, a, b in self.pairs():
            for mode in self.modes:
                if mode == "staged":
                    continue
                kind = "device" if mode == "device" else "host"
                entry = {"pattern": "burst", "mode": mode, "scope": scope, "ranks": [a, b], "window": W,
                         "sizes": [], "iterations": [], "stats": []}
                for n in sizes:
                    it, warm = self.iters(n * W, 0.1)
                    comm.Barrier()
                    if me not in (a, b):
                        continue
                    sarr, saddr = bufs.addr[(kind, "s")]
                    rarr, raddr = bufs.addr[(kind, "r")]
                    if kind == "device":
                        smsgs = [[_fromaddress(MPI, saddr + j * n, n), MPI.BYTE] for j in range(W)]
                        rmsgs = [[_fromaddress(MPI, raddr + j * n, n), MPI.BYTE] for j in range(W)]
                        one = [_fromaddress(MPI, raddr, 1), MPI.BYTE]
                    else:
                        smsgs = [[sarr[j * n:(j + 1) * n], MPI.BYTE] for j in range(W)]
                        rmsgs = [[rarr[j * n:(j + 1) * n], MPI.BYTE] for j in range(W)]
                        one = [rarr[:1], MPI.BYTE]
                    ts = np.empty(it)
                    Isend, Irecv, Waitall = comm.Isend, comm.Irecv, MPI.Request.Waitall
                    for i in range(warm + it):
                        t0 = pc()
                        if me == a:
                            Waitall([Isend(m, b, 21) for m in smsgs])
                            comm.Recv(one, b, 22)
                        else:
                            Waitall([Irecv(m, a, 21) for m in rmsgs])
                            comm.Send(one, a, 22)
                        if i >= warm:
                            ts[i - warm] = pc() - t0
                    if me == a:
                        entry["sizes"].append(n)
                        entry["iterations"].append(it)
                        entry["stats"].append(stats(ts))
                comm.Barrier()
                if me == 0:             # pairs() always starts at rank 0: a == 0 holds the entry
                    self.out.setdefault("burst", []).append(entry)
                self.save()
                self.log(f"  {scope} {mode} burst")

    # -------------------------------------------------------------------- collectives
    def collectives(self):
        MPI, comm, cp, me, P = self.MPI, self.comm, self.cp, self.rank, self.size
        if P < 2:
            return
        max_block = max(1, self.max_bytes // P)
        bsizes = sizes_pow2(1, self.max_bytes, 4)
        blocks = sizes_pow2(1, max_block, 4)
        bufs = Buffers(MPI, cp, self.max_bytes, self.kinds())
        root = 0
        pc = time.perf_counter
        memcpy = cp.cuda.runtime.memcpy if cp is not None else None
        for mode in self.modes:
            for op in ("Bcast", "Scatter", "Gather"):
                entry = {"op": op, "mode": mode, "root": root, "nranks": P, "in_place_root": mode == "device",
                         "sizes": [], "iterations": [], "per_rank_mean": [], "stats": [], "stats_max": []}
                for n in (bsizes if op == "Bcast" else blocks):
                    total = n if op == "Bcast" else n * P
                    it, warm = self.iters(total, 0.5)
                    it = min(it, 200)
                    kind = {"host": "host", "staged": "pinned", "device": "device"}[mode]
                    whole_s = bufs.msg(kind, "s", total)
                    part_s = bufs.msg(kind, "s", n)
                    part_r = bufs.msg(kind, "r", n)
                    whole_r = bufs.msg(kind, "r", total)
                    if mode == "staged":
                        ds, dr = bufs.ptr("device", "s"), bufs.ptr("device", "r")
                        hs, hr = bufs.ptr("pinned", "s"), bufs.ptr("pinned", "r")
                    ts = np.empty(it)
                    for i in range(warm + it):
                        comm.Barrier()
                        t0 = pc()
                        if op == "Bcast":
                            if mode == "staged" and me == root:
                                memcpy(hs, ds, n, D2H)
                            comm.Bcast(whole_s if me == root else whole_r, root)
                            if mode == "staged" and me != root:
                                memcpy(dr, hr, n, H2D)
                        elif op == "Scatter":
                            if mode == "staged" and me == root:
                                memcpy(hs, ds, total, D2H)
                            if me == root:
                                comm.Scatter(whole_s, MPI.IN_PLACE if mode == "device" else part_r, root)
                            else:
                                comm.Scatter(None, part_r, root)
                            if mode == "staged":
                                memcpy(dr, hr, n, H2D)
                        else:
                            if mode == "staged":
                                memcpy(hs, ds, n, D2H)
                            if me == root:
                                comm.Gather(MPI.IN_PLACE if mode == "device" else part_s, whole_r, root)
                            else:
                                comm.Gather(part_s, None, root)
                            if mode == "staged" and me == root:
                                memcpy(dr, hr, total, H2D)
                        t1 = pc()
                        if i >= warm:
                            ts[i - warm] = t1 - t0
                    allts = comm.gather(ts, root=0)
                    if me == 0:
                        m = np.array(allts)                      # ranks x iterations
                        entry["sizes"].append(n)
                        entry["iterations"].append(it)
                        entry["per_rank_mean"].append([float(x) for x in m.mean(axis=1)])
                        entry["stats"].append(stats(m.mean(axis=0)))      # mean over ranks, per iteration
                        entry["stats_max"].append(stats(m.max(axis=0)))   # slowest rank, per iteration
                if me == 0:
                    self.out["collectives"].append(entry)
                self.log(f"  {mode} {op}")
                self.save()

    # -------------------------------------------------------------------- driver
    def run(self):
        a = self.args
        self.log(f"{self.size} ranks on {len(set(self.hosts))} host(s); modes {', '.join(self.modes)}; "
                 f"sizes up to {self.max_bytes} B")
        if "memcpy" in a.sections and self.have_gpu:
            self.section("memcpy", self.memcpy_all)
            self.section("memcpy_concurrent", self.memcpy_concurrent)
        if "p2p" in a.sections and self.size >= 2:
            self.section("p2p", self.p2p_all)
        if "concurrency" in a.sections and self.size >= 2:
            self.section("concurrency", self.concurrency)
        if "multipeer" in a.sections and self.size >= 2:
            self.section("multipeer", self.multipeer)
        if "burst" in a.sections and self.size >= 2:
            self.section("burst", self.burst)
        if "collectives" in a.sections and self.size >= 2:
            self.section("collectives", self.collectives)
        self.save()
        self.log(f"wrote {a.output}")


def ucx_version():
    import ctypes
    for name in ("libucp.so.0", "libucp.so"):
        try:
            lib = ctypes.CDLL(name)
            f = lib.ucp_get_version_string
            f.restype = ctypes.c_char_p
            return f().decode()
        except (OSError, AttributeError):
            continue
    return None


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-o", "--output", default="calibrate-raw.json", help="raw measurements (JSON)")
    p.add_argument("--max-bytes", default="256MiB", help="largest message / copy (default 256MiB)")
    p.add_argument("--budget", default="512MiB",
                   help="bytes moved per size sets the iteration count (default 512MiB)")
    p.add_argument("--max-iters", type=int, default=1000, help="iterations for small sizes")
    p.add_argument("--min-iters", type=int, default=5, help="iterations for the largest sizes")
    p.add_argument("--host-only", action="store_true", help="no GPU: host buffers only (no cupy needed)")
    p.add_argument("--device", choices=["auto", "on", "off"], default="auto",
                   help="pass device buffers to MPI: auto = when the MPI reports CUDA support or UCX_TLS "
                        "names a cuda transport")
    p.add_argument("--sections", default="memcpy,p2p,concurrency,multipeer,burst,collectives",
                   help="comma list of memcpy, p2p, concurrency, multipeer, burst, collectives")
    p.add_argument("--no-rooted-linear", dest="rooted_linear", action="store_false",
                   help="keep the MPI's own Scatter/Gather algorithms (default: Open MPI's linear ones, "
                        "the only ones that run on device buffers without CUDA support in the MPI)")
    p.add_argument("--quiet", action="store_true")
    args = p.parse_args(argv)
    args.sections = set(s.strip() for s in args.sections.split(",") if s.strip())
    args.mca = set_rooted_linear() if args.rooted_linear else {}
    Runner(args).run()


if __name__ == "__main__":
    main()

"""Synthetic Score-P-like OTF2 archives (for tests and read-speed measurements).

``SynthArchive`` writes definitions the way Score-P does (MPI ``COMM_LOCATIONS`` group, ``COMM_GROUP``
sub-communicators with world ranks, an empty ``COMM_SELF`` group, CUDA stream locations in
``ACCELERATOR`` location groups or directly in the process group, a CUDA RMA window for copies) and
events through the raw ``_otf2`` writer calls, which are several times faster than the event objects
of ``otf2.writer``.  Location ids are deliberately not the ranks (``1000 * (rank + 1) + 7``).

``write_synthetic(path, nranks, iterations)`` writes a halo-exchange-like program that exercises every
record kind the reader converts and returns the expected conversion (counts per op and raw record
counts).  About ``57 * nranks * iterations`` events.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._extras import require

_otf2 = require("_otf2", "otf2", "writing OTF2 archives")
# the otf2 imports come after require, so that a missing otf2 is a one-line error
import otf2  # noqa: E402
from otf2.definitions import Location  # noqa: E402
from otf2.enums import (  # noqa: E402
    CollectiveOp,
    GroupType,
    LocationGroupType,
    LocationType,
    MeasurementMode,
    Paradigm,
    RegionRole,
    Type,
)

UNDEF_ROOT = 0xFFFFFFFF
MEM_CODES = {"host": 0, "device": 1, "managed": 2, "unknown": 3, "pinned": 4}


@dataclass
class _Loc:
    defn: Location
    handle: object
    n: int = 0
    t_min: int | None = None
    t_max: int | None = None


class SynthArchive:
    """Definitions + raw event writing.  Use as a context manager; events per location must be
    written in time order."""

    def __init__(self, path: str | Path, nranks: int, gpu: bool = False,
                 mem_attr: str | None = None, timer_resolution: int = 1_000_000_000,
                 tracer_attrs: bool = False,
                 creator: str = "g2gsim otf2_synth"):
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.w = otf2.writer.Writer(str(self.path), timer_resolution=timer_resolution)
        self.w.creator = creator
        d = self.d = self.w.definitions
        self.nranks = nranks
        node = d.system_tree_node("node0")
        self.lg = [d.location_group(f"MPI Rank {r}", system_tree_parent=node) for r in range(nranks)]
        self.cpu: list[_Loc] = []
        # define the locations in reverse rank order with ids unrelated to the ranks
        defs = {}
        for r in reversed(range(nranks)):
            loc = Location(d._locations, 1000 * (r + 1) + 7, "Master thread",
                           type=LocationType.CPU_THREAD, group=self.lg[r])
            d._locations._register(loc)
            defs[r] = loc
        self.gpu: list[_Loc] = []
        gdefs = {}
        if gpu:
            for r in range(nranks):
                if r % 2 == 0:   # OTF2 3 style: accelerator location group created by the process
                    glg = d.location_group(f"CUDA Context {r}",
                                           location_group_type=LocationGroupType.ACCELERATOR,
                                           system_tree_parent=node,
                                           creating_location_group=self.lg[r])
                else:            # older Score-P: stream location inside the process group
                    glg = self.lg[r]
                g = Location(d._locations, 900_000 + 11 * r, f"CUDA[{r}:7]", type=LocationType.GPU,
                             group=glg)
                d._locations._register(g)
                gdefs[r] = g
        # MPI groups and communicators
        self.comm_locs = d.group("", group_type=GroupType.COMM_LOCATIONS, paradigm=Paradigm.MPI,
                                 members=[defs[r] for r in range(nranks)])
        world_group = d.group("", group_type=GroupType.COMM_GROUP, paradigm=Paradigm.MPI,
                              members=[defs[r] for r in range(nranks)])
        self_group = d.group("", group_type=GroupType.COMM_SELF, paradigm=Paradigm.MPI, members=[])
        self.world = d.comm("MPI_COMM_WORLD", group=world_group)
        self.self_comm = d.comm("MPI_COMM_SELF", group=self_group)
        evens = [r for r in range(nranks) if r % 2 == 0]
        even_group = d.group("", group_type=GroupType.COMM_GROUP, paradigm=Paradigm.MPI,
                             members=[defs[r] for r in evens])
        self.even = d.comm("even ranks", group=even_group, parent=self.world)
        self.even_ranks = evens
        self.cuda_win = None
        if gpu:
            cl = [defs[r] for r in range(nranks)] + [gdefs[r] for r in range(nranks)]
            d.group("CUDA_GROUP_LOCATIONS", group_type=GroupType.COMM_LOCATIONS,
                    paradigm=Paradigm.CUDA, members=cl)     # the ranks of CUDA_GROUP index this
            cg = d.group("CUDA_GROUP", group_type=GroupType.COMM_GROUP, paradigm=Paradigm.CUDA,
                         members=cl)
            ccomm = d.comm("CUDA_COMM", group=cg)
            self.cuda_win = d.rma_win("CUDA_WINDOW", comm=ccomm)
        self.mpi_win = None
        self.mem_attr = None
        self.mem_mode = mem_attr
        if mem_attr == "string":
            self.mem_attr = d.attribute("g2g:mem_space", "buffer memory space", Type.STRING)
            self.mem_str = {k: d.strings.get_ref(k) for k in MEM_CODES}
        elif mem_attr == "uint8":
            self.mem_attr = d.attribute("g2g:mem_space", "buffer memory space", Type.UINT8)
        # the other attributes of g2gsim's tracer (tracer/README.md), defined when asked for
        self.extra_attrs: dict[str, Any] = {}
        if tracer_attrs:
            for name, typ in (("g2g:contiguous", Type.UINT8), ("g2g:bytes", Type.UINT64),
                              ("g2g:recv_bytes", Type.UINT64), ("g2g:copy_kind", Type.UINT8),
                              ("g2g:stream", Type.UINT32), ("g2g:async", Type.UINT8)):
                self.extra_attrs[name] = d.attribute(name, name, typ)
        self.regions: dict[str, Any] = {}
        for r in range(nranks):
            self.cpu.append(_Loc(defs[r], self.w.event_writer_from_location(defs[r]).handle))
            if gpu:
                self.gpu.append(_Loc(gdefs[r], self.w.event_writer_from_location(gdefs[r]).handle))
        self._al = _otf2.AttributeList_New()

    # -------------------------------------------------------------- definitions
    def region(self, name: str, paradigm=Paradigm.MPI, role=RegionRole.FUNCTION) -> int:
        reg = self.regions.get(name)
        if reg is None:
            reg = self.d.region(name, paradigm=paradigm, region_role=role)
            self.regions[name] = reg
        return reg._ref

    def mpi_window(self):
        if self.mpi_win is None:
            self.mpi_win = self.d.rma_win("MPI window", comm=self.world)
        return self.mpi_win._ref

    # -------------------------------------------------------------- events
    def _loc(self, rank: int, gpu: bool, t: int) -> _Loc:
        L = self.gpu[rank] if gpu else self.cpu[rank]
        L.n += 1
        if L.t_min is None:
            L.t_min = t
        L.t_max = t
        return L

    def _attrs(self, mem: str | None, extra: dict | None = None):
        """The attribute list of the next record (None when it has no attributes)."""
        add = False
        if mem is not None and self.mem_attr is not None:
            if self.mem_mode == "string":
                _otf2.AttributeList_AddStringRef(self._al, self.mem_attr._ref, self.mem_str[mem])
            else:
                _otf2.AttributeList_AddUint8(self._al, self.mem_attr._ref, MEM_CODES[mem])
            add = True
        for name, value in (extra or {}).items():
            a = self.extra_attrs.get(name)
            if a is None:
                continue
            fn = {Type.UINT8: _otf2.AttributeList_AddUint8, Type.UINT32: _otf2.AttributeList_AddUint32,
                  Type.UINT64: _otf2.AttributeList_AddUint64}[a.type]
            fn(self._al, a._ref, value)
            add = True
        return self._al if add else None

    def enter(self, r, t, name, gpu=False, paradigm=Paradigm.MPI, role=RegionRole.FUNCTION):
        _otf2.EvtWriter_Enter(self._loc(r, gpu, t).handle, None, t,
                              self.region(name, paradigm, role))

    def leave(self, r, t, name, gpu=False, paradigm=Paradigm.MPI, role=RegionRole.FUNCTION):
        _otf2.EvtWriter_Leave(self._loc(r, gpu, t).handle, None, t,
                              self.region(name, paradigm, role))

    def send(self, r, t, peer, comm, tag, n, mem=None, extra=None):
        _otf2.EvtWriter_MpiSend(self._loc(r, False, t).handle, self._attrs(mem, extra), t, peer,
                                comm._ref, tag, n)

    def isend(self, r, t, peer, comm, tag, n, req, mem=None):
        _otf2.EvtWriter_MpiIsend(self._loc(r, False, t).handle, self._attrs(mem), t, peer,
                                 comm._ref, tag, n, req)

    def isend_complete(self, r, t, req):
        _otf2.EvtWriter_MpiIsendComplete(self._loc(r, False, t).handle, None, t, req)

    def irecv_request(self, r, t, req):
        _otf2.EvtWriter_MpiIrecvRequest(self._loc(r, False, t).handle, None, t, req)

    def recv(self, r, t, peer, comm, tag, n, mem=None, extra=None):
        _otf2.EvtWriter_MpiRecv(self._loc(r, False, t).handle, self._attrs(mem, extra), t, peer,
                                comm._ref, tag, n)

    def irecv(self, r, t, peer, comm, tag, n, req, mem=None):
        _otf2.EvtWriter_MpiIrecv(self._loc(r, False, t).handle, self._attrs(mem), t, peer,
                                 comm._ref, tag, n, req)

    def request_test(self, r, t, req):
        _otf2.EvtWriter_MpiRequestTest(self._loc(r, False, t).handle, None, t, req)

    def request_cancelled(self, r, t, req):
        _otf2.EvtWriter_MpiRequestCancelled(self._loc(r, False, t).handle, None, t, req)

    def coll_begin(self, r, t):
        _otf2.EvtWriter_MpiCollectiveBegin(self._loc(r, False, t).handle, None, t)

    def coll_end(self, r, t, op, comm, root, sent, rcvd, mem=None, extra=None):
        _otf2.EvtWriter_MpiCollectiveEnd(self._loc(r, False, t).handle, self._attrs(mem, extra),
                                         t, op,
                                         comm._ref, root, sent, rcvd)

    def nbc_request(self, r, t, req):
        _otf2.EvtWriter_NonBlockingCollectiveRequest(self._loc(r, False, t).handle, None, t, req)

    def nbc_complete(self, r, t, op, comm, root, sent, rcvd, req, mem=None):
        _otf2.EvtWriter_NonBlockingCollectiveComplete(self._loc(r, False, t).handle,
                                                      self._attrs(mem), t, op, comm._ref, root,
                                                      sent, rcvd, req)

    def probe(self, r, t, peer, comm, tag, message_id):
        _otf2.EvtWriter_MpiProbe(self._loc(r, False, t).handle, None, t, peer, comm._ref, tag,
                                 message_id)

    def mrecv(self, r, t, message_id, n):
        _otf2.EvtWriter_MpiMrecv(self._loc(r, False, t).handle, None, t, message_id, n)

    def measurement(self, r, t, on: bool):
        _otf2.EvtWriter_MeasurementOnOff(self._loc(r, False, t).handle, None, t,
                                         MeasurementMode.ON if on else MeasurementMode.OFF)

    def program_begin(self, r, t):
        _otf2.EvtWriter_ProgramBegin(self._loc(r, False, t).handle, None, t,
                                     self.d.strings.get_ref("synthetic"), [])

    def program_end(self, r, t):
        _otf2.EvtWriter_ProgramEnd(self._loc(r, False, t).handle, None, t, 0)

    def rma_put(self, r, t, remote, n, gpu=True, win=None, mid=42, extra=None):
        w = win if win is not None else self.cuda_win._ref
        _otf2.EvtWriter_RmaPut(self._loc(r, gpu, t).handle, self._attrs(None, extra), t, w,
                               remote, n, mid)

    def rma_get(self, r, t, remote, n, gpu=True, win=None, mid=42, extra=None):
        w = win if win is not None else self.cuda_win._ref
        _otf2.EvtWriter_RmaGet(self._loc(r, gpu, t).handle, self._attrs(None, extra), t, w,
                               remote, n, mid)

    def rma_complete(self, r, t, gpu=True, win=None, mid=42):
        w = win if win is not None else self.cuda_win._ref
        _otf2.EvtWriter_RmaOpCompleteBlocking(self._loc(r, gpu, t).handle, None, t, w, mid)

    # -------------------------------------------------------------- close
    def close(self):
        if self.w is None:
            return
        for L in self.cpu + self.gpu:
            L.defn._number_of_events_written = L.n
            if L.t_min is not None:
                self.w._update_timestamps(L.t_min)
                self.w._update_timestamps(L.t_max)
        _otf2.AttributeList_Delete(self._al)
        self.w.close()
        self.w = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def anchor(self) -> Path:
        return self.path / "traces.otf2"


@dataclass
class SynthExpect:
    """What the conversion of ``write_synthetic`` must give."""
    anchor: Path
    nranks: int
    ops: dict = field(default_factory=dict)            # op -> rows
    records: dict = field(default_factory=dict)        # raw record kind -> count
    events: int = 0
    kernels: int = 0
    inferred_device: int = 0                            # rows marked device by "infer"
    traced_mem: dict = field(default_factory=dict)     # op -> mem_space in traced mode
    even_ranks: list = field(default_factory=list)


def write_synthetic(path: str | Path, nranks: int = 4, iterations: int = 3, gpu: bool = True,
                    mem_attr: str | None = "string", unmatched: bool = False,
                    seed: int = 1) -> SynthExpect:
    """A ring halo exchange with every converted record kind; see the module docstring."""
    assert nranks >= 2
    rnd = random.Random(seed)
    S, S2, S3 = 65536, 4096, 1024           # halo, sendrecv, self-message sizes
    ex = SynthExpect(anchor=Path(path) / "traces.otf2", nranks=nranks)
    ops: dict[str, int] = {}
    rec: dict[str, int] = {}
    untraced = 0

    def cnt(d, k, n=1):
        d[k] = d.get(k, 0) + n

    with SynthArchive(path, nranks, gpu=gpu, mem_attr=mem_attr) as A:
        ex.even_ranks = list(A.even_ranks)
        m = len(A.even_ranks)
        KER = dict(paradigm=Paradigm.CUDA, role=RegionRole.KERNEL)
        API = dict(paradigm=Paradigm.CUDA, role=RegionRole.WRAPPER)
        for r in range(nranks):
            left, right = (r - 1) % nranks, (r + 1) % nranks
            t = 1_000_000 + 10 * r
            req = 0
            host_cuda_rank = r                  # CUDA window rank of this process's host location
            gpu_cuda_rank = nranks + r

            def tick(lo=200, hi=2000):
                nonlocal t
                t += rnd.randint(lo, hi)
                return t

            A.program_begin(r, tick())
            A.enter(r, tick(), "MPI_Init")
            A.coll_begin(r, tick())
            A.coll_end(r, tick(), CollectiveOp.CREATE_HANDLE, A.world, UNDEF_ROOT, 0, 0)
            A.leave(r, tick(), "MPI_Init")
            cnt(ops, "Init")
            cnt(rec, "MpiCollectiveEnd")
            for it in range(iterations):
                tick(5000, 9000)
                if it == 1:                       # an off period inside a compute gap
                    A.measurement(r, tick(), False)
                    A.measurement(r, tick(50_000, 60_000), True)
                    cnt(rec, "MeasurementOnOff", 2)
                    untraced += 1                 # an Untraced row after that gap's Compute
                if gpu:                           # kernel, then synchronous D2H of the halo
                    k0 = tick(10, 20)
                    A.enter(r, k0, "stencil_kernel", gpu=True, **KER)
                    A.leave(r, tick(3000, 4000), "stencil_kernel", gpu=True, **KER)
                    ex.kernels += 1
                    A.enter(r, tick(), "cudaMemcpy", **API)
                    A.rma_put(r, tick(), host_cuda_rank, S)
                    A.rma_complete(r, tick())
                    A.leave(r, tick(), "cudaMemcpy", **API)
                    cnt(ops, "Memcpy")
                    cnt(rec, "RmaPut")
                # ring exchange: Irecv from left, Isend to right, Waitall
                req += 1
                rq_r = req
                A.enter(r, tick(), "MPI_Irecv")
                A.irecv_request(r, tick(), rq_r)
                A.leave(r, tick(), "MPI_Irecv")
                req += 1
                rq_s = req
                A.enter(r, tick(), "MPI_Isend")
                A.isend(r, tick(), right, A.world, 10 + it, S, rq_s, mem="device")
                A.leave(r, tick(), "MPI_Isend")
                A.enter(r, tick(), "MPI_Waitall")
                A.isend_complete(r, tick(), rq_s)
                A.irecv(r, tick(), left, A.world, 10 + it, S, rq_r, mem="device")
                A.leave(r, tick(), "MPI_Waitall")
                cnt(ops, "Irecv")
                cnt(ops, "Isend")
                cnt(ops, "Waitall")
                for k in ("MpiIrecvRequest", "MpiIsend", "MpiIsendComplete", "MpiIrecv"):
                    cnt(rec, k)
                if gpu:                           # synchronous H2D of the received halo
                    A.enter(r, tick(), "cudaMemcpy", **API)
                    A.rma_get(r, tick(), host_cuda_rank, S)
                    A.rma_complete(r, tick())
                    A.leave(r, tick(), "cudaMemcpy", **API)
                    cnt(ops, "Memcpy")
                    cnt(rec, "RmaGet")
                    ex.inferred_device += 2       # the Isend and the Irecv
                # Sendrecv: right, from left
                A.enter(r, tick(), "MPI_Sendrecv")
                A.send(r, tick(), right, A.world, 100, S2, mem="host")
                A.recv(r, tick(), left, A.world, 100, S2, mem="host")
                A.leave(r, tick(), "MPI_Sendrecv")
                cnt(ops, "Sendrecv")
                cnt(rec, "MpiSend")
                cnt(rec, "MpiRecv")
                # Allreduce of 8 doubles... Score-P counts N blocks each way
                A.enter(r, tick(), "MPI_Allreduce")
                A.coll_begin(r, tick())
                A.coll_end(r, tick(1000, 3000), CollectiveOp.ALLREDUCE, A.world, UNDEF_ROOT,
                           nranks * 64, nranks * 64, mem="managed")
                A.leave(r, tick(), "MPI_Allreduce")
                cnt(ops, "Allreduce")
                cnt(rec, "MpiCollectiveEnd")
                if r in A.even_ranks:             # Bcast on the even sub-communicator, root 0
                    me = A.even_ranks.index(r)
                    A.enter(r, tick(), "MPI_Bcast")
                    A.coll_begin(r, tick())
                    A.coll_end(r, tick(1000, 3000), CollectiveOp.BCAST, A.even, 0,
                               m * 2048 if me == 0 else 0, 2048)
                    A.leave(r, tick(), "MPI_Bcast")
                    cnt(ops, "Bcast")
                    cnt(rec, "MpiCollectiveEnd")
                # Iallreduce, an unsuccessful MPI_Test, then MPI_Wait
                req += 1
                rq_c = req
                A.enter(r, tick(), "MPI_Iallreduce")
                A.nbc_request(r, tick(), rq_c)
                A.leave(r, tick(), "MPI_Iallreduce")
                A.enter(r, tick(), "MPI_Test")
                A.request_test(r, tick(), rq_c)
                A.leave(r, tick(), "MPI_Test")
                A.enter(r, tick(), "MPI_Wait")
                A.nbc_complete(r, tick(), CollectiveOp.ALLREDUCE, A.world, UNDEF_ROOT,
                               nranks * 128, nranks * 128, rq_c)
                A.leave(r, tick(), "MPI_Wait")
                cnt(ops, "Iallreduce")
                cnt(ops, "Test")
                cnt(ops, "Wait")
                for k in ("NonBlockingCollectiveRequest", "MpiRequestTest",
                          "NonBlockingCollectiveComplete"):
                    cnt(rec, k)
                # message to self on MPI_COMM_SELF (its buffer staged by an async D2H)
                if gpu:
                    A.enter(r, tick(), "cudaMemcpyAsync", **API)
                    ta = tick(10, 20)
                    A.leave(r, ta, "cudaMemcpyAsync", **API)
                    A.rma_put(r, tick(), host_cuda_rank, S3)
                    A.rma_complete(r, tick())
                    cnt(ops, "Memcpy")
                    cnt(rec, "RmaPut")
                    ex.inferred_device += 1       # the Send
                req += 1
                rq_self = req
                A.enter(r, tick(), "MPI_Irecv")
                A.irecv_request(r, tick(), rq_self)
                A.leave(r, tick(), "MPI_Irecv")
                A.enter(r, tick(), "MPI_Send")
                A.send(r, tick(), 0, A.self_comm, 7, S3)
                A.leave(r, tick(), "MPI_Send")
                A.enter(r, tick(), "MPI_Wait")
                A.irecv(r, tick(), 0, A.self_comm, 7, S3, rq_self)
                A.leave(r, tick(), "MPI_Wait")
                cnt(ops, "Irecv")
                cnt(ops, "Send")
                cnt(ops, "Wait")
                for k in ("MpiIrecvRequest", "MpiSend", "MpiIrecv"):
                    cnt(rec, k)
                if gpu and it == 0:               # a device-to-device copy (remote: a GPU)
                    A.enter(r, tick(), "cudaMemcpy", **API)
                    A.rma_get(r, tick(), gpu_cuda_rank, 512)
                    A.rma_complete(r, tick())
                    A.leave(r, tick(), "cudaMemcpy", **API)
                    cnt(ops, "Memcpy")
                    cnt(rec, "RmaGet")
            # a cancelled receive
            req += 1
            A.enter(r, tick(), "MPI_Irecv")
            A.irecv_request(r, tick(), req)
            A.leave(r, tick(), "MPI_Irecv")
            A.enter(r, tick(), "MPI_Cancel")
            A.leave(r, tick(), "MPI_Cancel")
            A.enter(r, tick(), "MPI_Wait")
            A.request_cancelled(r, tick(), req)
            A.leave(r, tick(), "MPI_Wait")
            cnt(rec, "MpiIrecvRequest")
            cnt(rec, "MpiRequestCancelled")
            if unmatched and r == 0:              # a send nobody receives
                A.enter(r, tick(), "MPI_Send")
                A.send(r, tick(), 1, A.world, 999, 8)
                A.leave(r, tick(), "MPI_Send")
                cnt(ops, "Send")
                cnt(rec, "MpiSend")
            A.enter(r, tick(), "MPI_Finalize")
            A.leave(r, tick(), "MPI_Finalize")
            A.program_end(r, tick())
            cnt(ops, "Finalize")
        ex.events = sum(L.n for L in A.cpu + A.gpu)
    # one Compute between consecutive operations (all gaps are positive)
    nonc = sum(ops.values())
    ops["Compute"] = nonc - nranks
    if untraced:
        ops["Untraced"] = untraced
    ex.ops = ops
    ex.records = rec
    ex.traced_mem = {"Isend": "device", "Irecv": "device", "Sendrecv": "host",
                     "Allreduce": "managed", "Bcast": "host"}
    return ex

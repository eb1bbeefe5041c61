"""OTF2 event conversion for a set of ranks (runs in the worker processes of ``read_otf2``).

Each task opens the archive, selects the locations of its ranks (the MPI location of each rank and
its GPU stream locations) and reads them with the *local* event readers of OTF2: there is no
cross-location merge, every location is read in its own order, and the C library calls plain ctypes
callbacks declared here (the callbacks of the ``_otf2`` bindings add a generic wrapper per event that
costs 4x more than reading).

Per rank, MPI records are collected per outermost MPI region (Enter ... Leave) and turned into
operations when the region is left, which is where the region name is known: ``MPI_Sendrecv`` folds
its Send+Recv into one ``Sendrecv``, ``MPI_Waitall`` folds its completions into one ``Waitall``,
``MPI_Test*`` without completion gives a ``Test*`` row.  The time between leaving the region of one
operation and entering the region of the next is a ``Compute`` row (measurement-off periods are taken
out).  GPU copies found on the stream locations (Score-P writes them as RMA operations there) become
``Memcpy`` rows placed where the host issued them.  Host GPU API calls outside MPI calls (kernel
launches, stream/event/device synchronisation, event records, stream waits) become the native GPU
operations (``gpu_call``); after the stream locations are read, ``resolve_gpu`` gives each launch
its kernel (duration, stream, priority) and each sync the stream or event the trace left out.
"""
from __future__ import annotations

import bisect
import ctypes
import gc
import time
from collections import defaultdict, deque
from ctypes import c_int, c_int64, c_uint8, c_uint32, c_uint64, c_void_p

import numpy as np

from .._extras import require
from ..trace import ALL_OPS, COLLECTIVES, COPY_KINDS, MEM_SPACES, TraceError
from ..vocab import SEND_ONLY_OPS, TEST_OPS, WAIT_OPS
from .otf2_defs import (
    GPU_API_KINDS,
    R_CPY_ASYNC,
    R_CPY_SYNC,
    R_DEVICE_SYNC,
    R_EVENT_RECORD,
    R_EVENT_SYNC,
    R_KERNEL,
    R_LAUNCH,
    R_MPI,
    R_STREAM_CREATE,
    R_STREAM_SYNC,
    R_STREAM_WAIT,
    TYPE_STRING,
    UNDEF32,
    OTF2Plan,
)
from .rules import compute_gap

_otf2 = require("_otf2", "otf2", "reading OTF2 traces")
from _otf2.Config import conf  # noqa: E402  (after require: a missing otf2 is a one-line error)

# ------------------------------------------------------------------------------------ op codes
OP_NAMES = sorted(ALL_OPS)
OPC = {n: i for i, n in enumerate(OP_NAMES)}
DELETED = -1
C_COMPUTE, C_MEMCPY, C_INIT, C_FINALIZE = OPC["Compute"], OPC["Memcpy"], OPC["Init"], OPC["Finalize"]
C_UNTRACED = OPC["Untraced"]
C_SEND, C_ISEND, C_RECV, C_IRECV = OPC["Send"], OPC["Isend"], OPC["Recv"], OPC["Irecv"]
C_SENDRECV, C_WAIT, C_WAITALL = OPC["Sendrecv"], OPC["Wait"], OPC["Waitall"]
C_ISSEND = OPC["Issend"]
C_KERNEL, C_EVENT_RECORD, C_STREAM_WAIT = OPC["Kernel"], OPC["EventRecord"], OPC["StreamWaitEvent"]
C_STREAM_SYNC, C_DEVICE_SYNC, C_EVENT_SYNC = (OPC["StreamSynchronize"], OPC["DeviceSynchronize"],
                                              OPC["EventSynchronize"])
_GPU_OP = {R_LAUNCH: C_KERNEL, R_STREAM_SYNC: C_STREAM_SYNC, R_DEVICE_SYNC: C_DEVICE_SYNC,
           R_EVENT_SYNC: C_EVENT_SYNC, R_EVENT_RECORD: C_EVENT_RECORD, R_STREAM_WAIT: C_STREAM_WAIT}
_BLOCKING = {R_STREAM_SYNC, R_DEVICE_SYNC, R_EVENT_SYNC}
SEND_CODES = {OPC[o] for o in SEND_ONLY_OPS}
RECV_CODES = {C_RECV, C_IRECV}
COLL_CODES = {OPC[o] for o in COLLECTIVES}
BARRIER_CODES = {OPC["Barrier"], OPC["Ibarrier"]}
WAIT_CODES = {OPC[o] for o in WAIT_OPS}
CK_D2H, CK_H2D, CK_D2D = (COPY_KINDS.index(k) for k in ("d2h", "h2d", "d2d"))
MEM_HOST, MEM_DEVICE = 0, 1

# row layout (rules.ROW_LAYOUT: lists of ints, mutated while requests complete); F_REQS is the
# index of the row's request list in ``RankConverter.req_lists`` (-1: none), so that a row is all ints
(F_OP, F_T0, F_T1, F_DUR, F_PEER, F_TAG, F_COMM, F_BYTES, F_RBYTES, F_RPEER, F_RTAG, F_ROOT,
 F_REQ, F_MEM, F_CK, F_STREAM, F_CONTIG, F_REQS) = range(18)
NF = 18
NNUM = 17                                   # numeric fields (the columns of the trace)
F_PRIO = 18          # Kernel rows only: a 19th field, the stream priority (other rows have none)
NONCONTIG = 16                              # flag added to a record's memory-space code
N_MEM = len(MEM_SPACES)                     # memory-space codes are indices of MEM_SPACES
MEM_UNKNOWN = MEM_SPACES.index("unknown")   # the code of a value the trace does not name


def _s32(v: int) -> int:
    """A 32-bit attribute value (uint32 stream ids, int32 priorities) as a signed int32."""
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >= 1 << 31 else v


def _row(op, t0, t1, comm=0, peer=-1, tag=-1, nbytes=0, rbytes=0, req=0, mem=-1):
    return [op, t0, t1, 0, peer, tag, comm, nbytes, rbytes, -1, -1, -1, req, mem, -1, -1, 1, -1]


# OTF2 collective op enum -> our op name (None: not a data collective)
_COP = {}
for _n, _op in (("BARRIER", "Barrier"), ("BCAST", "Bcast"), ("GATHER", "Gather"),
                ("GATHERV", "Gatherv"), ("SCATTER", "Scatter"), ("SCATTERV", "Scatterv"),
                ("ALLGATHER", "Allgather"), ("ALLGATHERV", "Allgatherv"), ("ALLTOALL", "Alltoall"),
                ("ALLTOALLV", "Alltoallv"), ("ALLTOALLW", "Alltoallv"), ("ALLREDUCE", "Allreduce"),
                ("REDUCE", "Reduce"), ("REDUCE_SCATTER", "Reduce_scatter"), ("SCAN", "Scan"),
                ("EXSCAN", "Exscan"), ("REDUCE_SCATTER_BLOCK", "Reduce_scatter_block")):
    _COP[getattr(_otf2, "COLLECTIVE_OP_" + _n).value] = _op
_COP_NAMES = {getattr(_otf2, n).value: n[len("COLLECTIVE_OP_"):]
              for n in dir(_otf2) if n.startswith("COLLECTIVE_OP_")}
MEAS_ON, MEAS_OFF = _otf2.MEASUREMENT_ON.value, _otf2.MEASUREMENT_OFF.value

# MPI region families
FAM_OTHER, FAM_INIT, FAM_FINALIZE, FAM_SENDRECV, FAM_WAIT, FAM_TEST, FAM_COLL, FAM_P2P = range(8)
_SEND_FLAVOR = {"MPI_Ssend": "Ssend", "MPI_Bsend": "Bsend", "MPI_Rsend": "Rsend",
                "MPI_Issend": "Issend"}
_P2P_SEND = {"Ssend": OPC["Ssend"], "Bsend": OPC["Bsend"], "Rsend": OPC["Rsend"]}
_NOFAM = (FAM_OTHER, None)


def region_family(name: str) -> tuple[int, str | None]:
    """(family, op name) of an MPI region name."""
    if name in ("MPI_Init", "MPI_Init_thread"):
        return FAM_INIT, "Init"
    if name == "MPI_Finalize":
        return FAM_FINALIZE, "Finalize"
    if name in ("MPI_Sendrecv", "MPI_Sendrecv_replace", "MPI_Sendrecv_c",
                "MPI_Sendrecv_replace_c"):
        return FAM_SENDRECV, "Sendrecv"
    base = name[4:] if name.startswith("MPI_") else name
    if base.endswith("_c"):
        base = base[:-2]
    if base in WAIT_OPS:                # MPI's names are the trace's
        return FAM_WAIT, base
    if base in TEST_OPS:
        return FAM_TEST, base
    if base in ("Alltoallw", "Ialltoallw"):
        base = base[:-1] + "v"
    if base in COLLECTIVES:
        return FAM_COLL, base
    if name in _SEND_FLAVOR:
        return FAM_P2P, _SEND_FLAVOR[name]
    return FAM_OTHER, None


def coll_sizes(op: str, sent: int, recv: int, n: int, me: int, is_root: bool) -> tuple[int, int]:
    """Score-P's per-rank (sizeSent, sizeReceived) -> our (bytes, recv_bytes) for ``op``.

    Score-P (scorep_mpi_coll.c) counts what a rank moves, the root's own block included: Bcast root
    sends N*b; Gather root receives N*b; Allreduce/Allgather/Alltoall count N blocks each way; Scan
    sends (N-me)*b and receives (me+1)*b.  With MPI_IN_PLACE the rank's own block is left out; that is
    recognised where the numbers allow it (a count not divisible by N but by N-1).
    """
    base = op[1].upper() + op[2:] if op[0] == "I" and op != "Ibarrier" and op[1].islower() else op
    if op == "Ibarrier" or base == "Barrier":
        return 0, 0
    n = max(n, 1)

    def per(x):  # x = k*b with k = n (normal) or n-1 (in place) -> (b, in_place)
        if x % n == 0 or n == 1:
            return x // n, False
        if x % (n - 1) == 0:
            return x // (n - 1), True
        return x // n, False

    if base == "Bcast":              # one buffer, sent at the root, received elsewhere: the format
        b = recv if recv else sent // n    # (like the DUMPI reader and the tracer) gives bytes only
        return b, 0
    if base in ("Gather", "Gatherv"):
        if is_root:
            if sent == 0 and n > 1 and base == "Gather":
                b = recv // (n - 1)
                return b, recv + b
            return sent, recv
        return sent, 0
    if base == "Reduce":
        if is_root:
            if sent == 0 and n > 1:
                b = recv // (n - 1)
                return b, b
            return sent, sent
        return sent, 0
    if base in ("Scatter", "Scatterv"):
        if is_root:
            if recv == 0 and n > 1 and base == "Scatter":
                b = sent // (n - 1)
                return sent + b, b
            return sent, recv
        return 0, recv
    if base == "Allgather":
        b, inplace = per(sent)
        return b, (recv + b if inplace else recv)
    if base == "Allgatherv":
        b, inplace = per(sent)
        return b, (recv + b if inplace else recv)
    if base == "Allreduce":
        b, _ = per(sent)
        return b, b
    if base == "Alltoall":
        b, inplace = per(sent)
        rb, _ = per(recv)
        return b * n, rb * n
    if base == "Alltoallv":
        return sent, recv
    if base == "Reduce_scatter_block":
        b, _ = per(sent)
        return b * n, b
    if base == "Reduce_scatter":
        if recv % n == 0:
            return sent, recv // n
        mine = recv // (n - 1) if n > 1 else recv
        return sent + mine, mine
    if base == "Scan":
        if recv % (me + 1) == 0 and sent % max(n - me, 1) == 0 and \
                recv // (me + 1) == sent // max(n - me, 1):
            b = recv // (me + 1)
        else:
            b = (sent + recv) // (n - 1) if n > 1 else sent
        return b, b
    if base == "Exscan":
        b = (sent + recv) // (n - 1) if n > 1 else 0
        return b, b
    return sent, recv


# ------------------------------------------------------------------------------------ raw C API
_LIB = ctypes.CDLL(conf.lib._name)          # own handle: own function objects and argtypes
_BASE = (c_uint64, c_uint64, c_uint64, c_void_p, c_void_p)   # location, time, position, user, attrs


def _fp(*extra):
    return ctypes.CFUNCTYPE(c_int, *_BASE, *extra)


_U32, _U64 = c_uint32, c_uint64
FP = {
    "Enter": _fp(_U32), "Leave": _fp(_U32),
    "MpiSend": _fp(_U32, _U32, _U32, _U64), "MpiIsend": _fp(_U32, _U32, _U32, _U64, _U64),
    "MpiIsendComplete": _fp(_U64), "MpiIrecvRequest": _fp(_U64),
    "MpiRecv": _fp(_U32, _U32, _U32, _U64), "MpiIrecv": _fp(_U32, _U32, _U32, _U64, _U64),
    "MpiRequestTest": _fp(_U64), "MpiRequestCancelled": _fp(_U64),
    "MpiCollectiveEnd": _fp(c_uint8, _U32, _U32, _U64, _U64),
    "NonBlockingCollectiveRequest": _fp(_U64),
    "NonBlockingCollectiveComplete": _fp(c_uint8, _U32, _U32, _U64, _U64, _U64),
    "MpiProbe": _fp(_U32, _U32, _U32, _U64), "MpiMrecv": _fp(_U64, _U64),
    "MpiImrecvRequest": _fp(_U64, _U64), "MpiImrecv": _fp(_U64, _U64),
    "RmaPut": _fp(_U32, _U32, _U64, _U64), "RmaGet": _fp(_U32, _U32, _U64, _U64),
    "RmaAtomic": _fp(_U32, _U32, c_uint8, _U64, _U64, _U64),
    "RmaOpCompleteBlocking": _fp(_U32, _U64), "RmaOpCompleteNonBlocking": _fp(_U32, _U64),
    "MeasurementOnOff": _fp(c_uint8), "ProgramBegin": _fp(_U32, _U32, c_void_p),
    "ProgramEnd": _fp(c_int64), "Unknown": _fp(), "ParameterUnsignedInt": _fp(_U32, _U64),
}
_SETTERS = {}
for _name, _t in FP.items():
    _f = getattr(_LIB, f"OTF2_EvtReaderCallbacks_Set{_name}Callback")
    _f.argtypes = [c_void_p, _t]
    _f.restype = c_int
    _SETTERS[_name] = _f
_GET_ATTR = _LIB.OTF2_AttributeList_GetAttributeByID
_GET_ATTR.argtypes = [c_void_p, c_uint32, ctypes.POINTER(c_uint8), ctypes.POINTER(c_uint64)]
_GET_ATTR.restype = c_int
_NATTR = _LIB.OTF2_AttributeList_GetNumberOfElements
_NATTR.argtypes = [c_void_p]
_NATTR.restype = c_uint32
_ATTR_AT = _LIB.OTF2_AttributeList_GetAttributeByIndex
_ATTR_AT.argtypes = [c_void_p, c_uint32, ctypes.POINTER(c_uint32), ctypes.POINTER(c_uint8),
                     ctypes.POINTER(c_uint64)]
_ATTR_AT.restype = c_int
_TYPE_MASK = {_otf2.TYPE_UINT8.value: 0xFF, _otf2.TYPE_INT8.value: 0xFF,
              _otf2.TYPE_UINT16.value: 0xFFFF, _otf2.TYPE_INT16.value: 0xFFFF,
              _otf2.TYPE_UINT32.value: 0xFFFFFFFF, _otf2.TYPE_INT32.value: 0xFFFFFFFF,
              _otf2.TYPE_STRING.value: 0xFFFFFFFF}
# g2g:copy_kind of the tracer (0 h2d, 1 d2h, 2 d2d, 3 h2h, 4 peer) -> index in COPY_KINDS
_TRACER_CK = {0: 1, 1: 0, 2: 2, 3: 3, 4: 2}


class AttrReader:
    """Values of the g2g:* attributes of a record (an attribute list pointer), by name."""

    def __init__(self, plan: OTF2Plan):
        self.by_ref = {ref: name for name, ref in plan.g2g_attrs.items()}
        self.mem_str = plan.mem_string_code
        self.ref = c_uint32()
        self.typ = c_uint8()
        self.val = c_uint64()
        self.active = bool(self.by_ref)

    def read(self, attrs) -> dict:
        out: dict = {}
        if not attrs:
            return out
        ref, typ, val, by_ref = self.ref, self.typ, self.val, self.by_ref
        bref = ctypes.byref
        for i in range(_NATTR(attrs)):
            if _ATTR_AT(attrs, i, bref(ref), bref(typ), bref(val)) == 0:
                name = by_ref.get(ref.value)
                if name is not None:
                    # the value union is copied whole: bytes above a narrower type are garbage
                    out[name] = (typ.value, val.value & _TYPE_MASK.get(typ.value, 0xFFFFFFFFFFFFFFFF))
        return out

    def mem(self, a: dict) -> int:
        """Memory-space code (+ NONCONTIG for a non-contiguous datatype); -1 when not traced."""
        v = a.get("g2g:mem_space")
        if v is None:
            return -1
        if v[0] == TYPE_STRING:
            m = self.mem_str.get(v[1] & 0xFFFFFFFF, MEM_UNKNOWN)
        else:
            m = v[1] & 0xFF
            m = m if m < N_MEM else MEM_UNKNOWN
        c = a.get("g2g:contiguous")
        return m + NONCONTIG if c is not None and (c[1] & 0xFF) == 0 else m

    def exact_sizes(self, a: dict):
        """(bytes, recv_bytes) of a collective when the tracer wrote them, else None."""
        b, rb = a.get("g2g:bytes"), a.get("g2g:recv_bytes")
        return (b[1], rb[1]) if b is not None and rb is not None else None
INTERRUPT = _otf2.CALLBACK_INTERRUPT.value


class _Stop(Exception):
    """Raised inside a callback to stop reading with a TraceError."""


class _Callbacks:
    """An OTF2_EvtReaderCallbacks struct filled with ctypes thunks (kept alive by this object)."""

    def __init__(self, funcs: dict):
        self.handle = _otf2.EvtReaderCallbacks_New()
        self.ptr = ctypes.cast(self.handle, c_void_p)
        self.thunks = []
        for name, fn in funcs.items():
            th = FP[name](fn)
            self.thunks.append(th)
            if _SETTERS[name](self.ptr, th) != 0:
                raise TraceError(f"cannot set OTF2 callback {name}")

    def close(self):
        _otf2.EvtReaderCallbacks_Delete(self.handle)


# ------------------------------------------------------------------------------------ conversion
class RankConverter:
    """Converts the locations of one rank; ``rows`` is the result (program order)."""

    def __init__(self, plan: OTF2Plan, rank: int, stats: dict, fam: dict):
        self.plan = plan
        self.rank = rank
        self.stats = stats
        self.rows: list[list] = []
        self.req_lists: list[list] = []     # request lists of the rows (row[F_REQS] indexes)
        self.copies: list[tuple] = []       # (t0, t1, copy kind, bytes, stream, sync or None)
        self.api: list[tuple] = []          # host memcpy API calls (t0, t1, sync, corr)
        # GPU streams: host launch calls (t0, t1, corr, callsite, row), kernels read on the GPU
        # locations (start, end, stream, corr, callsite, priority), other GPU API rows (kind, row)
        self.launches: list[tuple] = []
        self.kern: list[tuple] = []
        self.gpu_rows: list[tuple] = []
        self.stream_prio: dict[int, int] = {}   # from cudaStreamCreateWithPriority records
        self.has_prio = False
        self.first_t = None
        self.last_t = None
        self.kernels = 0
        self.kernel_ticks = 0
        self.kernel_names: set[int] = set()
        self.mpi_records = 0
        # comm ref -> (our id, size, my comm rank)
        self.comm_cache: dict[int, tuple[int, int, int]] = {}
        for ref, (kind, cid, members, size) in plan.comm_map.items():
            if kind == "world":
                self.comm_cache[ref] = (0, plan.nranks, rank)
            elif kind == "self":
                self.comm_cache[ref] = (cid + rank, 1, 0)
            elif rank in members:
                self.comm_cache[ref] = (cid, size, members.index(rank))
        self.fam = fam

    # -------------------------------------------------------------- helpers
    def where(self, loc, pos, t):
        return f"{self.plan.anchor}: {self.plan.where(loc)}, event {pos}" + self.plan.when(t)

    def comm(self, ref, loc, pos, t):
        c = self.comm_cache.get(ref)
        if c is None:
            if ref in self.plan.intercomms:
                raise _Stop(f"{self.where(loc, pos, t)}: record on an MPI intercommunicator "
                            f"(OTF2 comm {ref}); intercommunicators are not supported")
            if ref in self.plan.comm_map:
                raise _Stop(f"{self.where(loc, pos, t)}: rank {self.rank} uses communicator "
                            f"{ref} it is not a member of")
            raise _Stop(f"{self.where(loc, pos, t)}: record names undefined MPI communicator {ref}")
        return c

    # -------------------------------------------------------------- CPU (MPI) location
    def read_cpu(self, h, loc):
        plan = self.plan
        rkind = plan.region_kind
        # state shared with finish(): end of the last operation's MPI call, measurement-off time
        # since then, the error to report, the time of the last Leave
        st = {"last_leave": None, "off": 0, "off_since": None, "err": None, "t": None}
        active: dict[int, list] = {}
        probes: dict[int, tuple] = {}
        rows = self.rows
        ar = AttrReader(plan)
        read_attrs = ar.read
        mem_of = ar.mem

        def mem(attrs):
            return mem_of(read_attrs(attrs)) if attrs else -1

        def fail(e, loc, pos, t):
            st["err"] = str(e) if isinstance(e, _Stop) else \
                f"{self.where(loc, pos, t)}: {type(e).__name__}: {e}"
            return INTERRUPT

        ccache = self.comm_cache
        comm_of = self.comm
        has_mem = ar.active
        in_k = 0          # kind of the open region of interest (0: none)
        nest = 0          # regions entered inside it
        reg = 0
        reg_t0 = 0
        recs = None       # records of the open MPI region
        first = None      # time of the first Enter
        g_attrs = None    # attributes at the Enter of the open GPU API / memcpy call
        g_site = None     # Score-P callsite id of the open launch call
        callsite_param = plan.callsite_param

        def add(rec, t):    # (finish counts the records into self.mpi_records)
            if recs is not None:
                recs.append(rec)
            else:           # MPI record outside any MPI region: a region of its own
                self.finish(None, t, t, [rec], st, active, probes, loc)

        def enter(l, t, pos, ud, attrs, region):
            nonlocal in_k, nest, reg, reg_t0, recs, first, g_attrs, g_site
            if in_k:
                if nest or in_k != R_MPI or rkind.get(region, 0) != R_MPI:
                    nest += 1
                    return 0
                # an MPI call entered inside an MPI call: Score-P records no nested MPI calls,
                # so the Leave of the open one is missing (measurement switched off): close it
                try:
                    r = recs
                    recs = None
                    in_k = 0
                    self._count("unclosed_mpi_regions")
                    self.finish(reg, reg_t0, t, r, st, active, probes, l, pos)
                except Exception as e:  # noqa: BLE001
                    return fail(e, l, pos, t)
            if first is None:
                first = t
                st["first"] = t
            k = rkind.get(region, 0)
            if k:
                if k == R_MPI:
                    recs = []
                    reg = region
                elif k in GPU_API_KINDS or k == R_CPY_SYNC or k == R_CPY_ASYNC:
                    g_attrs = read_attrs(attrs) if has_mem and attrs else None
                    g_site = None
                else:
                    return 0
                in_k = k
                nest = 0
                reg_t0 = t
            return 0

        def leave(l, t, pos, ud, attrs, region):
            nonlocal in_k, nest, recs, g_attrs
            if not in_k:
                st["t"] = t
                return 0
            st["t"] = t
            if nest:
                nest -= 1
                return 0
            try:
                if in_k == R_MPI:
                    r = recs
                    recs = None
                    in_k = 0
                    self.finish(reg, reg_t0, t, r, st, active, probes, l, pos)
                elif in_k == R_CPY_SYNC or in_k == R_CPY_ASYNC:
                    c = g_attrs.get("g2g:corr") if g_attrs else None
                    self.api.append((reg_t0, t, in_k == R_CPY_SYNC, None if c is None else c[1]))
                    in_k = 0
                else:
                    k = in_k
                    in_k = 0
                    a = g_attrs or {}
                    if attrs and has_mem:
                        a = dict(a, **read_attrs(attrs))
                    g_attrs = None
                    self.gpu_call(k, reg_t0, t, a, g_site, st)
            except Exception as e:  # noqa: BLE001 - reported as TraceError after reading
                return fail(e, l, pos, t)
            return 0

        def send(l, t, pos, ud, attrs, peer, comm, tag, ln):
            try:
                add(("S", t, peer, ccache.get(comm) or comm_of(comm, l, pos, t), tag, ln,
                     mem(attrs) if has_mem else -1, pos), t)
            except Exception as e:  # noqa: BLE001
                return fail(e, l, pos, t)
            return 0

        def isend(l, t, pos, ud, attrs, peer, comm, tag, ln, req):
            try:
                rec = ("IS", t, peer, ccache.get(comm) or comm_of(comm, l, pos, t), tag, ln,
                     mem(attrs) if has_mem else -1, req)
                if recs is not None:
                    recs.append(rec)
                else:
                    add(rec, t)
            except Exception as e:  # noqa: BLE001
                return fail(e, l, pos, t)
            return 0

        def isend_complete(l, t, pos, ud, attrs, req):
            try:
                rec = ("ISC", t, req)
                if recs is not None:
                    recs.append(rec)
                else:
                    add(rec, t)
            except Exception as e:  # noqa: BLE001
                return fail(e, l, pos, t)
            return 0

        def irecv_request(l, t, pos, ud, attrs, req):
            try:
                rec = ("IRQ", t, req, mem(attrs) if has_mem else -1)
                if recs is not None:
                    recs.append(rec)
                else:
                    add(rec, t)
            except Exception as e:  # noqa: BLE001
                return fail(e, l, pos, t)
            return 0

        def recv(l, t, pos, ud, attrs, peer, comm, tag, ln):
            try:
                add(("R", t, peer, ccache.get(comm) or comm_of(comm, l, pos, t), tag, ln,
                     mem(attrs) if has_mem else -1), t)
            except Exception as e:  # noqa: BLE001
                return fail(e, l, pos, t)
            return 0

        def irecv(l, t, pos, ud, attrs, peer, comm, tag, ln, req):
            try:
                rec = ("IR", t, peer, ccache.get(comm) or comm_of(comm, l, pos, t), tag, ln,
                     mem(attrs) if has_mem else -1, req)
                if recs is not None:
                    recs.append(rec)
                else:
                    add(rec, t)
            except Exception as e:  # noqa: BLE001
                return fail(e, l, pos, t)
            return 0

        def req_test(l, t, pos, ud, attrs, req):
            try:
                add(("T", t, req), t)
            except Exception as e:  # noqa: BLE001
                return fail(e, l, pos, t)
            return 0

        def req_cancelled(l, t, pos, ud, attrs, req):
            try:
                add(("X", t, req), t)
            except Exception as e:  # noqa: BLE001
                return fail(e, l, pos, t)
            return 0

        def coll_end(l, t, pos, ud, attrs, op, comm, root, sent, rcvd):
            try:
                if _COP.get(op) is None and op not in _COP_NAMES:
                    raise _Stop(f"{self.where(l, pos, t)}: unknown MPI collective operation {op}")
                if _COP.get(op) is not None:   # CREATE/DESTROY_HANDLE etc. carry no data
                    a = read_attrs(attrs) if has_mem and attrs else {}
                    add(("C", t, op, self.comm(comm, l, pos, t), root, sent, rcvd, mem_of(a),
                         ar.exact_sizes(a)), t)
            except Exception as e:  # noqa: BLE001
                return fail(e, l, pos, t)
            return 0

        def nbc_request(l, t, pos, ud, attrs, req):
            try:
                add(("NRQ", t, req), t)
            except Exception as e:  # noqa: BLE001
                return fail(e, l, pos, t)
            return 0

        def nbc_complete(l, t, pos, ud, attrs, op, comm, root, sent, rcvd, req):
            try:
                if _COP.get(op) is not None:
                    a = read_attrs(attrs) if has_mem and attrs else {}
                    add(("NC", t, op, self.comm(comm, l, pos, t), root, sent, rcvd, mem_of(a),
                         req, ar.exact_sizes(a)), t)
                else:
                    active.pop(req, None)
            except Exception as e:  # noqa: BLE001
                return fail(e, l, pos, t)
            return 0

        def probe(l, t, pos, ud, attrs, peer, comm, tag, mid):
            try:
                if mid != 0xFFFFFFFFFFFFFFFF:
                    probes[mid] = (peer, self.comm(comm, l, pos, t), tag)
            except Exception as e:  # noqa: BLE001
                return fail(e, l, pos, t)
            return 0

        def mrecv(l, t, pos, ud, attrs, mid, ln):
            try:
                p = probes.pop(mid, None)
                if p is None:
                    raise _Stop(f"{self.where(l, pos, t)}: MpiMrecv of message {mid} without "
                                f"a preceding MpiProbe")
                add(("R", t, p[0], p[1], p[2], ln, mem(attrs) if has_mem else -1), t)
            except Exception as e:  # noqa: BLE001
                return fail(e, l, pos, t)
            return 0

        def imrecv_request(l, t, pos, ud, attrs, mid, req):
            try:
                p = probes.pop(mid, None)
                if p is None:
                    raise _Stop(f"{self.where(l, pos, t)}: MpiImrecvRequest of message {mid} "
                                f"without a preceding MpiProbe")
                add(("IMRQ", t, req, p, mem(attrs) if has_mem else -1), t)
            except Exception as e:  # noqa: BLE001
                return fail(e, l, pos, t)
            return 0

        def imrecv(l, t, pos, ud, attrs, req, ln):
            try:
                add(("IMR", t, req, ln, mem(attrs) if has_mem else -1), t)
            except Exception as e:  # noqa: BLE001
                return fail(e, l, pos, t)
            return 0

        def rma(name):
            def cb(l, t, pos, ud, attrs, win, *rest):
                if win in plan.mpi_windows:
                    st["err"] = (f"{self.where(l, pos, t)}: {name} record (MPI one-sided "
                                 f"communication) is not supported by g2gsim")
                    return INTERRUPT
                return 0
            return cb

        def meas(l, t, pos, ud, attrs, mode):
            if mode == MEAS_OFF:
                st["off_since"] = t
                st.setdefault("off_t0", t)
            elif mode == MEAS_ON and st["off_since"] is not None:
                st["off"] += t - st["off_since"]
                st["off_since"] = None
            return 0

        def prog_begin(l, t, pos, ud, attrs, name, nargs, args):
            if self.first_t is None:
                self.first_t = t
            return 0

        def prog_end(l, t, pos, ud, attrs, status):
            self.last_t = t
            return 0

        def unknown(l, t, pos, ud, attrs):
            self.stats["unknown_records"] = self.stats.get("unknown_records", 0) + 1
            return 0

        def param_uint(l, t, pos, ud, attrs, param, value):
            nonlocal g_site
            if in_k == R_LAUNCH and not nest and param == callsite_param:
                g_site = value
            return 0

        funcs = {"Enter": enter, "Leave": leave, "MpiSend": send, "MpiIsend": isend,
                 "MpiIsendComplete": isend_complete, "MpiIrecvRequest": irecv_request,
                 "MpiRecv": recv, "MpiIrecv": irecv, "MpiRequestTest": req_test,
                 "MpiRequestCancelled": req_cancelled, "MpiCollectiveEnd": coll_end,
                 "NonBlockingCollectiveRequest": nbc_request,
                 "NonBlockingCollectiveComplete": nbc_complete, "MpiProbe": probe,
                 "MpiMrecv": mrecv, "MpiImrecvRequest": imrecv_request, "MpiImrecv": imrecv,
                 "RmaPut": rma("RmaPut"), "RmaGet": rma("RmaGet"), "RmaAtomic": rma("RmaAtomic"),
                 "MeasurementOnOff": meas, "ProgramBegin": prog_begin, "ProgramEnd": prog_end,
                 "Unknown": unknown, "ParameterUnsignedInt": param_uint}
        self._read(h, loc, funcs, st)
        if recs:            # an MPI region left open at the end: its records were read
            self.mpi_records += len(recs)
        if self.first_t is None:
            self.first_t = first
        if self.last_t is None:
            self.last_t = st["t"]
        # requests posted but never completed in the trace: an Irecv / nonblocking collective
        # without its completion record has no peer, tag or size and cannot be replayed
        for _req, row in active.items():
            if row[F_PEER] == -3:
                row[F_OP] = DELETED
                self.stats["incomplete_requests"] = self.stats.get("incomplete_requests", 0) + 1
        if not rows and self.first_t is not None and self.last_t is not None:
            rows.append([C_COMPUTE, self.first_t, self.last_t, self.last_t - self.first_t,
                         -1, -1, 0, 0, 0, -1, -1, -1, 0, -1, -1, -1, 1, -1])
        elif rows and not plan.has_mpi and self.last_t is not None:
            # a program without MPI whose GPU calls made rows: the host time after the last one
            last = st["last_leave"]
            if last is not None and self.last_t > last:
                rows.append([C_COMPUTE, last, self.last_t, self.last_t - last,
                             -1, -1, 0, 0, 0, -1, -1, -1, 0, -1, -1, -1, 1, -1])

    def finish(self, ref, t0, t1, recs, st, active, probes, loc, pos=None):
        """Turn the records of one MPI region into rows (appended to self.rows)."""
        self.mpi_records += len(recs)
        fam, opname = self.fam.get(ref, _NOFAM)
        out: list[list] = []
        done = None
        for rec in recs:
            k = rec[0]
            if k == "S":
                cid, n, me = rec[3]
                op = _P2P_SEND.get(opname, C_SEND) if fam == FAM_P2P else C_SEND
                out.append([op, t0, t1, 0, rec[2], rec[4], cid, rec[5], 0, -1, -1, -1, 0,
                            rec[6], -1, -1, 1, -1])
            elif k == "R":
                cid, n, me = rec[3]
                out.append([C_RECV, t0, t1, 0, rec[2], rec[4], cid, 0, rec[5], -1, -1, -1, 0,
                            rec[6], -1, -1, 1, -1])
            elif k == "IRQ":
                row = [C_IRECV, t0, t1, 0, -3, -1, 0, 0, 0, -1, -1, -1, rec[2], rec[3], -1, -1, 1,
                       -1]
                active[rec[2]] = row
                out.append(row)
            elif k == "IR":
                _, t, peer, c, tag, ln, m, req = rec
                row = active.pop(req, None)
                if row is None or row[F_OP] != C_IRECV:
                    # posted before the measurement started: post it here
                    row = [C_IRECV, t0, t1, 0, peer, tag, c[0], 0, ln, -1, -1, -1, req, m, -1,
                           -1, 1, -1]
                    out.append(row)
                    self._count("irecv_without_request")
                else:
                    row[F_PEER] = peer
                    row[F_COMM] = c[0]
                    row[F_TAG] = tag
                    row[F_RBYTES] = ln
                    if m >= 0:
                        row[F_MEM] = m
                if done is None:
                    done = [req]
                else:
                    done.append(req)
            elif k == "IS":
                _, t, peer, c, tag, ln, m, req = rec
                op = C_ISSEND if opname == "Issend" else C_ISEND
                row = [op, t0, t1, 0, peer, tag, c[0], ln, 0, -1, -1, -1, req, m, -1, -1, 1, -1]
                active[req] = row
                out.append(row)
            elif k == "ISC":
                req = rec[2]
                if active.pop(req, None) is None:
                    self._count("unknown_requests")
                    continue
                if done is None:
                    done = [req]
                else:
                    done.append(req)
            elif k == "C":
                _, t, cop, (cid, n, me), root, sent, rcvd, m, exact = rec
                name = opname if fam == FAM_COLL and opname[0] != "I" else _COP[cop]
                r = -1 if root == UNDEF32 else int(root)
                b, rb = exact or coll_sizes(name, sent, rcvd, n, me, r == me)
                out.append([OPC[name], t0, t1, 0, -1, -1, cid, b, rb, -1, -1, r, 0, m, -1, -1, 1,
                            -1])
            else:
                done = self._finish_rare(rec, k, fam, opname, t0, t1, out, done, active)
        if fam == FAM_SENDRECV:
            sends = [r for r in out if r[F_OP] == C_SEND]
            recvs = [r for r in out if r[F_OP] == C_RECV]
            if len(sends) == 1 and len(recvs) == 1:
                s, r = sends[0], recvs[0]
                s[F_OP] = C_SENDRECV
                s[F_RPEER], s[F_RTAG], s[F_RBYTES] = r[F_PEER], r[F_TAG], r[F_RBYTES]
                if s[F_MEM] < 0:
                    s[F_MEM] = r[F_MEM]
                out.remove(r)
        # rules.completion: one completed request -> Wait, several -> Waitall; a test that
        # completed nothing keeps its name with the requests it tested
        if done:
            rl = self.req_lists
            if len(done) == 1:
                out.append([C_WAIT, t0, t1, 0, -1, -1, 0, 0, 0, -1, -1, -1, done[0], -1, -1, -1,
                            1, len(rl)])
            else:
                out.append([C_WAITALL, t0, t1, 0, -1, -1, 0, 0, 0, -1, -1, -1, 0, -1, -1, -1,
                            1, len(rl)])
            rl.append(done)
        elif fam == FAM_TEST:
            tested = list(dict.fromkeys(rec[2] for rec in recs if rec[0] == "T"))
            if tested:
                rl = self.req_lists
                out.append([OPC[opname], t0, t1, 0, -1, -1, 0, 0, 0, -1, -1, -1,
                            tested[0] if len(tested) == 1 else 0, -1, -1, -1, 1, len(rl)])
                rl.append(tested)
        if fam == FAM_INIT or fam == FAM_FINALIZE:
            out.insert(0, _row(OPC[opname], t0, t1))
            if fam == FAM_FINALIZE:
                st["finalized"] = True
        if not out:
            return
        # self._append(out, t0, t1, st), inlined (once per MPI call): rules.compute_gap
        last = st["last_leave"]
        if last is not None and t0 > last:
            if st["off"] or st["off_since"] is not None:
                self._append(out, t0, t1, st)
                return
            self.rows.append([C_COMPUTE, last, t0, t0 - last, -1, -1, 0, 0, 0, -1, -1, -1, 0, -1,
                              -1, -1, 1, -1])
        else:
            st["off"] = 0
            st.pop("off_t0", None)
        self.rows.extend(out)
        st["last_leave"] = t1

    def _append(self, out, t0, t1, st, anchor=None):
        """Append the rows ``out`` of a host call that ran from ``t0`` to ``t1``: first a Compute
        row for the host time since the previous call (up to ``anchor``, default ``t0``;
        measurement-off time taken out), then ``out``; the next Compute starts at ``t1``."""
        rows = self.rows
        last = st["last_leave"]
        a = t0 if anchor is None else anchor
        if last is not None and a > last:
            off = st["off"]
            if off or st["off_since"] is not None:
                if st["off_since"] is not None:       # still off: count up to here
                    off += a - st["off_since"]
                    st["off_since"] = a
                st["off"] = 0
            d = compute_gap(last, a, off)
            rows.append([C_COMPUTE, last, a, d, -1, -1, 0, 0, 0, -1, -1, -1, 0, -1, -1, -1, 1, -1])
            if off > 0:
                # measurement was switched off: the stretch is reported, not simulated (--window)
                t_off = st.pop("off_t0", None)
                rows.append([C_UNTRACED, last if t_off is None or t_off < last else t_off, a, off, -1, -1, 0, 0, 0, -1, -1, -1,
                             0, -1, -1, -1, 1, -1])
                self._count("untraced_stretches")
                self.stats["untraced_ns"] = self.stats.get("untraced_ns", 0) + off
        else:
            st["off"] = 0
            st.pop("off_t0", None)
        rows.extend(out)
        st["last_leave"] = t1

    def _count(self, key, n=1):
        self.stats[key] = self.stats.get(key, 0) + n

    # -------------------------------------------------------------- host GPU API calls
    def gpu_call(self, k, t0, t1, a, callsite, st):
        """A host GPU API call (region kind ``k``, from ``t0`` to ``t1``, outside MPI calls) with
        its ``g2g:*`` attributes ``a`` -> a row of the native GPU operations.

        Launches, event records and stream waits return at once: their time is host work, the
        row goes where the call returns.  The synchronising calls block: the row goes where the
        call starts and the time inside it is not Compute (the model recomputes the wait).
        Streams / events the trace does not name are inferred in ``resolve_gpu``."""
        if self.plan.has_mpi and (st["last_leave"] is None or st.get("finalized")):
            self._count("gpu_calls_outside_mpi")     # before MPI_Init / after MPI_Finalize
            return
        if st["last_leave"] is None:                 # no MPI: host time from the program start
            st["last_leave"] = self.first_t if self.first_t is not None else st.get("first", t0)
        stream = a.get("g2g:stream")
        stream = None if stream is None else _s32(stream[1])
        event = a.get("g2g:event")
        event = None if event is None else event[1]
        if k == R_STREAM_CREATE:                     # no operation: the stream's priority
            p = a.get("g2g:priority")
            if stream is not None and p is not None:
                self.stream_prio[stream] = _s32(p[1])
            return
        row = [_GPU_OP[k], t0, t1, 0, -1, -1, 0, 0, 0, -1, -1, -1, 0, -1, -1, -1, 1, -1]
        if k == R_LAUNCH:
            row.append(0)                            # F_PRIO
            c = a.get("g2g:corr")
            self.launches.append((t0, t1, None if c is None else c[1], callsite, row))
            self._append([row], t0, t1, st, anchor=t1)
            return
        if k in (R_STREAM_SYNC, R_EVENT_RECORD, R_STREAM_WAIT):
            row[F_STREAM] = -1 if stream is None else stream
        if k in (R_EVENT_SYNC, R_EVENT_RECORD, R_STREAM_WAIT) and event is not None:
            row[F_REQ] = event
        self.gpu_rows.append((k, row, event is not None, stream is not None))
        self._append([row], t0, t1, st, anchor=t0 if k in _BLOCKING else t1)

    def resolve_gpu(self):
        """Give each launch row its kernel (duration, stream, priority) and each synchronising
        row the stream or event the trace did not name.

        Kernel <-> launch: by the tracer's ``g2g:corr`` (CUPTI correlation id) when the archive
        has them; else by Score-P's ``callsite id`` (the n-th launch from a call site ran the n-th
        kernel of that call site), then in order (each kernel, by start time, takes the earliest
        launch left that began before it).  A launch without a kernel is dropped, and so is a
        kernel without a launch (e.g. one the MPI library launched inside an MPI call).  Without
        any launch call in the trace, kernels stay counted only (their time is host Compute, as
        before GPU streams were imported)."""
        L, K = self.launches, self.kern
        if not L and not self.gpu_rows:
            return
        match = [None] * len(L)
        used = [False] * len(K)
        by_corr = {c: i for i, (_, _, c, _, _) in enumerate(L) if c is not None}
        if by_corr and any(k[3] is not None for k in K):
            for j, k in enumerate(K):
                i = by_corr.get(k[3]) if k[3] is not None else None
                if i is not None and match[i] is None:
                    match[i] = j
                    used[j] = True
        elif L and K:
            l_order = sorted(range(len(L)), key=lambda i: L[i][0])
            k_order = sorted(range(len(K)), key=lambda j: K[j][0])
            if any(L[i][3] is not None for i in l_order) and any(k[4] is not None for k in K):
                queues: dict = defaultdict(deque)
                for i in l_order:
                    if L[i][3] is not None:
                        queues[L[i][3]].append(i)
                for j in k_order:
                    q = queues.get(K[j][4])
                    if q:
                        i = q.popleft()
                        match[i] = j
                        used[j] = True
            left = [i for i in l_order if match[i] is None]
            p = 0
            for j in k_order:
                if used[j]:
                    continue
                if p < len(left) and L[left[p]][0] <= K[j][0]:
                    match[left[p]] = j
                    used[j] = True
                    p += 1
        launched: list[tuple] = []                # (launch time, stream) of the kernels placed
        per_stream: dict[int, list] = defaultdict(list)   # stream -> [(launch time, kernel end)]
        for i, (_t0, t1, _corr, _cs, row) in enumerate(L):
            j = match[i]
            if j is None:
                row[F_OP] = DELETED
                self._count("launches_without_kernel")
                continue
            k0, k1, stream, _, _, prio = K[j]
            row[F_DUR] = max(k1 - k0, 0)
            row[F_STREAM] = stream
            row[F_PRIO] = prio if prio is not None else self.stream_prio.get(stream, 0)
            if row[F_PRIO]:
                self.has_prio = True
            launched.append((t1, stream))
            per_stream[stream].append((t1, k1))
        if L and len(K) > len(launched):
            self._count("kernels_without_launch", len(K) - len(launched))
        self._count("kernel_rows", len(launched))
        launched.sort()
        l_times = [x[0] for x in launched]
        ps = {s: ([x[0] for x in sorted(v)], [x[1] for x in sorted(v)]) for s, v in per_stream.items()}

        def last_stream(t):
            i = bisect.bisect_right(l_times, t) - 1
            return launched[i][1] if i >= 0 else 0

        def infer(t0, t1):
            """The stream a sync from t0 to t1 waited for: of the streams with work launched
            before t0 and still running at t0, the one whose last such kernel ended closest to
            t1; with none running, the stream of the last launch."""
            self._count("inferred_sync_streams")
            best = None
            for s_, (lt, ends) in ps.items():
                i = bisect.bisect_right(lt, t0) - 1
                if i >= 0 and ends[i] > t0:
                    d = abs(ends[i] - t1)
                    if best is None or d < best[0]:
                        best = (d, s_)
            return best[1] if best is not None else last_stream(t0)

        for k, row, ev_known, st_known in self.gpu_rows:
            if k == R_STREAM_SYNC and not st_known:
                row[F_STREAM] = infer(row[F_T0], row[F_T1])
            elif k == R_EVENT_SYNC and not ev_known:
                row[F_OP] = C_STREAM_SYNC           # the event is unknown: its stream instead
                row[F_STREAM] = infer(row[F_T0], row[F_T1])
            elif k == R_EVENT_RECORD:
                if not ev_known:
                    row[F_OP] = DELETED
                    self._count("gpu_calls_without_ids")
                elif not st_known:
                    row[F_STREAM] = last_stream(row[F_T0])
            elif k == R_STREAM_WAIT and not (ev_known and st_known):
                row[F_OP] = DELETED
                self._count("gpu_calls_without_ids")

    def _finish_rare(self, rec, k, fam, opname, t0, t1, out, done, active):
        """Records of the less frequent kinds; returns the (possibly new) completion list."""
        if k == "T":
            return done
        if k == "X":
            row = active.pop(rec[2], None)
            if row is not None:
                row[F_OP] = DELETED
                self._count("cancelled")
            return done
        if k == "IMRQ":
            req = rec[2]
            peer, (cid, n, me), tag = rec[3]
            row = [C_IRECV, t0, t1, 0, peer, tag, cid, 0, 0, -1, -1, -1, req, rec[4], -1, -1, 1, -1]
            active[req] = row
            out.append(row)
            return done
        if k == "IMR":
            _, t, req, ln, m = rec
            row = active.pop(req, None)
            if row is None or row[F_OP] != C_IRECV:
                self._count("unknown_requests")
                return done
            row[F_RBYTES] = ln
            if m >= 0:
                row[F_MEM] = m
        elif k == "NRQ":
            req = rec[2]
            op = OPC[opname] if fam == FAM_COLL and opname[0] == "I" else -2
            row = [op, t0, t1, 0, -3, -1, 0, 0, 0, -1, -1, -1, req, -1, -1, -1, 1, -1]
            active[req] = row                       # peer -3: filled at completion
            out.append(row)
            return done
        elif k == "NC":
            _, t, cop, (cid, n, me), root, sent, rcvd, m, req, exact = rec
            row = active.pop(req, None)
            base = _COP[cop]
            iname = "I" + base[0].lower() + base[1:]
            if row is None:
                row = _row(OPC[iname], t0, t1, 0, -1, -1, 0, 0, req, m)
                out.append(row)
                self._count("nbc_without_request")
            if row[F_OP] == -2:
                row[F_OP] = OPC[iname]
            name = OP_NAMES[row[F_OP]]
            r = -1 if root == UNDEF32 else int(root)
            b, rb = exact or coll_sizes(name, sent, rcvd, n, me, r == me)
            row[F_PEER], row[F_COMM], row[F_ROOT] = -1, cid, r
            row[F_BYTES], row[F_RBYTES] = b, rb
            if m >= 0:
                row[F_MEM] = m
        else:
            raise _Stop(f"internal: unknown record kind {k!r}")
        req = rec[2] if k == "IMR" else rec[8]
        if done is None:
            return [req]
        done.append(req)
        return done

    # -------------------------------------------------------------- GPU stream location
    def read_gpu(self, h, loc):
        plan = self.plan
        rkind = plan.region_kind
        stream = plan.gpu_stream.get(loc, 0)
        wins = plan.win_remote_gpu
        kstack: list = []                   # open kernels: [start, corr, callsite, prio, stream]
        pending: dict[int, deque] = {}      # matching id -> copies started, in order
        st = {"err": None, "t": None}
        ar = AttrReader(plan)
        callsite_param = plan.callsite_param
        kern = self.kern

        def enter(l, t, pos, ud, attrs, region):
            if rkind.get(region, 0) == R_KERNEL:
                corr = prio = None
                s_id = stream
                if ar.active and attrs:         # g2gsim tracer: correlation, stream, priority
                    a = ar.read(attrs)
                    if "g2g:corr" in a:
                        corr = a["g2g:corr"][1]
                    if "g2g:stream" in a:
                        s_id = _s32(a["g2g:stream"][1])
                    if "g2g:priority" in a:
                        prio = _s32(a["g2g:priority"][1])
                kstack.append([t, corr, None, prio, s_id])
            return 0

        def leave(l, t, pos, ud, attrs, region):
            if kstack and rkind.get(region, 0) == R_KERNEL:
                t0, corr, cs, prio, s_id = kstack.pop()
                self.kernels += 1
                self.kernel_ticks += t - t0
                self.kernel_names.add(region)
                kern.append((t0, t, s_id, corr, cs, prio))
            return 0

        def param_uint(l, t, pos, ud, attrs, param, value):
            if kstack and param == callsite_param:
                kstack[-1][2] = value
            return 0

        def copy(kind_default):
            def cb(l, t, pos, ud, attrs, win, remote, nbytes, mid):
                if win in plan.mpi_windows:
                    st["err"] = (f"{self.where(l, pos, t)}: MPI one-sided record on a GPU "
                                 f"location is not supported")
                    return INTERRUPT
                g = wins.get(win)
                kind = CK_D2D if g and remote < len(g) and g[remote] else kind_default
                s_id, sync, corr = stream, None, None
                if ar.active and attrs:         # g2gsim tracer: exact kind, stream, sync
                    a = ar.read(attrs)
                    if "g2g:copy_kind" in a:
                        kind = _TRACER_CK.get(a["g2g:copy_kind"][1] & 0xFF, kind)
                    if "g2g:stream" in a:
                        s_id = _s32(a["g2g:stream"][1])
                    if "g2g:async" in a:
                        sync = not (a["g2g:async"][1] & 0xFF)
                    if "g2g:corr" in a:
                        corr = a["g2g:corr"][1]
                pending.setdefault(mid, deque()).append((t, kind, nbytes, s_id, sync, corr))
                return 0
            return cb

        def complete(l, t, pos, ud, attrs, win, mid):
            q = pending.get(mid)
            if q:
                t0, kind, nbytes, s_id, sync, corr = q.popleft()
                self.copies.append((t0, t, kind, nbytes, s_id, sync, corr))
            return 0

        def complete_nb(l, t, pos, ud, attrs, win, mid):
            return complete(l, t, pos, ud, attrs, win, mid)

        funcs = {"Enter": enter, "Leave": leave, "RmaGet": copy(CK_H2D), "RmaPut": copy(CK_D2H),
                 "RmaOpCompleteBlocking": complete, "RmaOpCompleteNonBlocking": complete_nb,
                 "ParameterUnsignedInt": param_uint}
        self._read(h, loc, funcs, st)
        for q in pending.values():        # copies without completion record: zero length
            for t0, kind, nbytes, s_id, sync, corr in q:
                self.copies.append((t0, t0, kind, nbytes, s_id, sync, corr))

    # -------------------------------------------------------------- reading
    def _read(self, h, loc, funcs, st):
        cbs = _Callbacks(funcs)
        er = None
        try:
            er = _otf2.Reader_GetEvtReader(h, loc)
            _otf2.Reader_RegisterEvtCallbacks(h, er, cbs.handle, None)
            try:
                n = _otf2.Reader_ReadAllLocalEvents(h, er)
            except Exception as e:  # noqa: BLE001 - _otf2.Error, or interrupted by a callback
                if st.get("err"):
                    raise TraceError(st["err"]) from None
                pos = _otf2.EvtReader_GetPos(er)
                raise TraceError(
                    f"{self.plan.anchor}: {self.plan.where(loc)}: cannot read events after event "
                    f"{pos}{self.plan.when(st.get('t'))}: {e} - the archive is truncated or "
                    f"corrupt") from None
            if st.get("err"):
                raise TraceError(st["err"])
            expected = self.plan.loc_nevents.get(loc, 0)
            if expected and n < expected:
                raise TraceError(f"{self.plan.anchor}: {self.plan.where(loc)}: only {n} of "
                                 f"{expected} events could be read (the last one is event {n}"
                                 f"{self.plan.when(st.get('t'))}) - the archive is truncated")
            self.stats["events"] = self.stats.get("events", 0) + n
        finally:
            if er is not None:
                try:
                    _otf2.Reader_CloseEvtReader(h, er)
                except Exception:  # noqa: BLE001
                    pass
            cbs.close()

    # -------------------------------------------------------------- GPU copies into the host order
    def place_copies(self):
        """Insert Memcpy rows where the host issued the copies, splitting Compute rows."""
        if not self.copies:
            return
        self.copies.sort(key=lambda c: (c[0], c[1]))
        api = sorted(self.api, key=lambda a: (a[0], a[1]))
        api_t0 = [a[0] for a in api]
        by_corr = {a[3]: i for i, a in enumerate(api) if a[3] is not None}
        placed = []                              # (h0, h1 host busy until, row)
        used = bytearray(len(api))
        call_row: dict[int, list] = {}           # synchronous call (index in api) -> its row
        for c0, c1, kind, nbytes, stream, sync, corr in self.copies:
            # the host call that issued it: the one with its correlation id (our tracer), else
            # the latest memcpy API call not yet matched that started before the copy (each
            # call issues one copy)
            i = by_corr.get(corr, -1) if corr is not None else -1
            by_id = i >= 0
            if by_id and used[i] and sync is not False and api[i][2]:
                prev = call_row.get(i)
                if prev is not None and prev[F_CK] == kind:
                    # another DMA of the same synchronous call (a pageable copy done in
                    # chunks): one blocking copy, whose host time is the call's
                    prev[F_BYTES] += nbytes
                    prev[F_T1] = max(prev[F_T1], c1)
                    continue
            if i < 0 or used[i]:
                by_id = False
                i = bisect.bisect_right(api_t0, c0) - 1
                while i >= 0 and used[i]:
                    i -= 1
            a = api[i] if i >= 0 else None
            keep = False
            if a is not None and a[2] and (c0 <= a[1] or by_id) and sync is not False:
                # synchronous copy: the host was blocked in the call (its whole region, which
                # is what leaves the gap around it; a call known by its correlation id also
                # when its DMA ran after it returned, as from pageable memory)
                h0, h1, s = a[0], a[1], -1
                used[i] = 1
            elif a is not None and not a[2] and sync is not True:
                h0, h1, s = a[0], a[0], stream
                used[i] = 1
            elif sync:                            # the tracer says: a synchronous API copied
                h0, h1, s = c0, c1, -1
                keep = True                       # the program's copy even inside an MPI call
            else:                                 # no host call recorded for it
                h0, h1, s = c0, c0, stream
            row = _row(C_MEMCPY, c0, c1, nbytes=nbytes)
            row[F_CK], row[F_STREAM] = kind, s
            if s == -1 and a is not None and used[i] and a[2]:
                call_row[i] = row
            placed.append((h0, h1, row, keep))
        placed.sort(key=lambda p: p[0])
        out = []
        k = 0
        n = len(placed)
        inside = 0
        rows = self.rows
        nxt = placed[0][0]
        for i, row in enumerate(rows):
            if k >= n:
                out.extend(rows[i:])
                break
            if row[F_OP] == C_COMPUTE:
                b = row[F_T1]
                if nxt >= b:
                    out.append(row)
                    continue
                a = row[F_T0]
                span = b - a
                cur = a
                while k < n and placed[k][0] < b:
                    h0, h1, mrow, _ = placed[k]
                    k += 1
                    if h0 > cur:
                        out.append(self._compute_part(row, cur, h0, span))
                        cur = h0
                    out.append(mrow)
                    cur = max(cur, min(h1, b))
                if cur < b or span == 0:
                    out.append(self._compute_part(row, cur, b, span) if cur > a else row)
            else:
                if nxt >= row[F_T1]:
                    out.append(row)
                    continue
                while k < n and placed[k][0] <= row[F_T0]:
                    out.append(placed[k][2])
                    k += 1
                while k < n and placed[k][0] < row[F_T1]:
                    if placed[k][3]:            # a synchronous copy of the program that started
                        out.append(placed[k][2])    # late (pageable memory): before the call
                    else:
                        inside += 1             # copy made by the MPI library inside the call
                    k += 1
                out.append(row)
            if k < n:
                nxt = placed[k][0]
        else:
            for p in placed[k:]:
                out.append(p[2])
        self.rows = out
        if inside:
            self.stats["memcpy_inside_mpi"] = self.stats.get("memcpy_inside_mpi", 0) + inside

    @staticmethod
    def _compute_part(row, a, b, span):
        c = list(row)
        c[F_T0], c[F_T1] = a, b
        c[F_DUR] = (row[F_DUR] * (b - a)) // span if span else 0
        return c

    # -------------------------------------------------------------- buffer space
    def apply_buffers(self, mode: str):
        rows = self.rows
        for row in rows:                      # split the datatype flag off the memory code
            if row[F_MEM] >= NONCONTIG:
                row[F_MEM] -= NONCONTIG
                row[F_CONTIG] = 0
        if mode == "traced":
            for row in rows:
                if row[F_MEM] < 0:
                    row[F_MEM] = MEM_HOST
            return
        if mode in ("host", "device"):
            v = MEM_DEVICE if mode == "device" else MEM_HOST
            for row in rows:
                op = row[F_OP]
                if op in SEND_CODES or op in RECV_CODES or op == C_SENDRECV or \
                        (op in COLL_CODES and op not in BARRIER_CODES):
                    row[F_MEM] = v
                else:
                    row[F_MEM] = MEM_HOST
            return
        # infer: staging copies next to the MPI calls
        pool: dict[int, int] = defaultdict(int)      # size -> unconsumed D2H copies
        waiting: dict[int, deque] = defaultdict(deque)   # size -> completed receives awaiting H2D
        open_recv: dict[int, list] = {}
        for row in rows:
            row[F_MEM] = MEM_HOST
        n_inferred = 0
        for row in rows:
            op = row[F_OP]
            if op == C_MEMCPY:
                if row[F_CK] == CK_D2H:
                    pool[row[F_BYTES]] += 1
                elif row[F_CK] == CK_H2D:
                    q = waiting.get(row[F_BYTES])
                    if q:
                        r = q.popleft()
                        if r[F_MEM] != MEM_DEVICE:
                            r[F_MEM] = MEM_DEVICE
                            n_inferred += 1
            elif op in SEND_CODES:
                b = row[F_BYTES]
                if pool.get(b):
                    pool[b] -= 1
                    row[F_MEM] = MEM_DEVICE
                    n_inferred += 1
                waiting.pop(b, None)
            elif op == C_RECV:
                pool.pop(row[F_RBYTES], None)
                waiting[row[F_RBYTES]].append(row)
            elif op == C_IRECV:
                open_recv[row[F_REQ]] = row
            elif op == C_SENDRECV:
                b = row[F_BYTES]
                if pool.get(b):
                    pool[b] -= 1
                    row[F_MEM] = MEM_DEVICE
                    n_inferred += 1
                waiting.pop(b, None)
                if row[F_RBYTES] != b:
                    pool.pop(row[F_RBYTES], None)
                waiting[row[F_RBYTES]].append(row)
            elif op in WAIT_CODES:
                for q in (self.req_lists[row[F_REQS]] if row[F_REQS] >= 0 else ()):
                    r = open_recv.pop(q, None)
                    if r is not None:
                        pool.pop(r[F_RBYTES], None)
                        waiting[r[F_RBYTES]].append(r)
            elif op in COLL_CODES and op not in BARRIER_CODES:
                b = row[F_BYTES]
                if pool.get(b):
                    pool[b] -= 1
                    row[F_MEM] = MEM_DEVICE
                    n_inferred += 1
                rb = row[F_RBYTES] or b
                waiting.pop(b, None)
                waiting[rb].append(row)
        self.stats["inferred_device"] = self.stats.get("inferred_device", 0) + n_inferred


# ------------------------------------------------------------------------------------ task
def convert_ranks(plan: OTF2Plan, ranks: list[int], mode: str) -> dict:
    """Convert ``ranks``; returns column arrays (rows of each rank in program order) and stats."""
    # the rows are hundreds of thousands of small lists that live until the end: the cyclic
    # garbage collector would rescan them over and over (they form no cycles)
    enabled = gc.isenabled()
    gc.disable()
    cpu0 = time.process_time()
    try:
        out = _convert_ranks(plan, ranks, mode)
        out["stats"]["cpu_s"] = time.process_time() - cpu0
        return out
    finally:
        if enabled:
            gc.enable()


def _convert_ranks(plan: OTF2Plan, ranks: list[int], mode: str) -> dict:
    stats: dict = {"ranks": len(ranks)}
    try:
        h = _otf2.Reader_Open(plan.anchor)
    except Exception as e:  # noqa: BLE001
        raise TraceError(f"{plan.anchor}: cannot open OTF2 archive ({e})") from None
    convs = []
    try:
        _otf2.Reader_SetSerialCollectiveCallbacks(h)
        locs = []
        for r in ranks:
            locs.append(plan.rank_cpu_loc[r])
            locs.extend(plan.rank_gpu_locs[r])
        for loc in locs:
            _otf2.Reader_SelectLocation(h, loc)
        try:
            _otf2.Reader_OpenDefFiles(h)
            defs_open = True
        except Exception:  # noqa: BLE001 - archives without local definition files
            defs_open = False
        if defs_open:
            for loc in locs:            # mapping tables and clock offsets of each location
                try:
                    dr = _otf2.Reader_GetDefReader(h, loc)
                except Exception:  # noqa: BLE001
                    dr = None
                if dr:
                    try:
                        _otf2.Reader_ReadAllLocalDefinitions(h, dr)
                    except Exception as e:  # noqa: BLE001
                        raise TraceError(f"{plan.anchor}: {plan.where(loc)}: cannot read the "
                                         f"local definitions ({e})") from None
                    finally:
                        _otf2.Reader_CloseDefReader(h, dr)
            _otf2.Reader_CloseDefFiles(h)
        try:
            _otf2.Reader_OpenEvtFiles(h)
        except Exception as e:  # noqa: BLE001
            raise TraceError(f"{plan.anchor}: cannot open the event files ({e})") from None
        fam = {ref: region_family(n) for ref, n in plan.region_name.items()}
        for r in ranks:
            conv = RankConverter(plan, r, stats, fam)
            conv.read_cpu(h, plan.rank_cpu_loc[r])
            for g in plan.rank_gpu_locs[r]:
                conv.read_gpu(h, g)
            conv.resolve_gpu()
            conv.place_copies()
            if mode == "infer":             # sequential; the other modes: in _columns
                conv.apply_buffers(mode)
            convs.append(conv)
        try:
            _otf2.Reader_CloseEvtFiles(h)
        except Exception:  # noqa: BLE001
            pass
    finally:
        _otf2.Reader_Close(h)
    return _columns(plan, convs, stats, mode)


_SEND_RECV_DATA = np.array(sorted(SEND_CODES | RECV_CODES | {C_SENDRECV}
                                   | (COLL_CODES - BARRIER_CODES)), dtype=np.int64)


def _buffers(m: np.ndarray, mode: str) -> None:
    """``apply_buffers`` on the matrix ``m`` (in place) for the modes other than ``infer``."""
    mem = m[:, F_MEM]
    nc = mem >= NONCONTIG                   # split the datatype flag off the memory code
    if nc.any():
        mem[nc] -= NONCONTIG
        m[nc, F_CONTIG] = 0
    if mode == "traced":
        mem[mem < 0] = MEM_HOST
    elif mode in ("host", "device"):
        data = np.isin(m[:, F_OP], _SEND_RECV_DATA)
        m[:, F_MEM] = np.where(data, MEM_DEVICE if mode == "device" else MEM_HOST, MEM_HOST)


def _merge_compute(m: np.ndarray) -> np.ndarray | None:
    """Adjacent Compute rows (left where a cancelled request's row was dropped) become one; the
    time of the dropped call counts as compute.  Returns the indices of the rows kept (the first
    of each run of Compute rows, which gets the run's end and duration) or None when no row
    merges."""
    isc = m[:, F_OP] == C_COMPUTE
    n = len(m)
    cont = np.zeros(n, dtype=bool)
    cont[1:] = isc[1:] & isc[:-1]           # row i merges into the row before it
    if not cont.any():
        return None
    gap = np.zeros(n, dtype=np.int64)
    gap[1:] = np.maximum(m[1:, F_T0] - m[:-1, F_T1], 0)
    contrib = m[:, F_DUR] + np.where(cont, gap, 0)
    heads = np.flatnonzero(~cont)
    ends = np.append(heads[1:], n) - 1
    dur = np.add.reduceat(contrib, heads)
    t1 = m[ends, F_T1]
    m[heads, F_DUR] = dur
    m[heads, F_T1] = t1
    return heads


def _columns(plan: OTF2Plan, convs: list[RankConverter], stats: dict,
             mode: str = "traced") -> dict:
    rank_l, seq_l = [], []
    mats = []
    prios = []
    kernels = []
    req_len, req_val = [], []
    for c in convs:
        rows = c.rows
        c.rows = []
        kernels.append((c.rank, c.kernels, c.kernel_ticks, len(c.kernel_names)))
        stats["mpi_records"] = stats.get("mpi_records", 0) + c.mpi_records
        stats["memcpys"] = stats.get("memcpys", 0) + len(c.copies)
        m, prio = _matrix(rows, c.has_prio)
        del rows
        keep = m[:, F_OP] >= 0
        if not keep.all():
            m = m[keep]
            prio = prio[keep]
        heads = _merge_compute(m)
        if heads is not None:
            m = m[heads]
            prio = prio[heads]
        n = len(m)
        if mode != "infer":
            _buffers(m, mode)
        rank_l.append(np.full(n, c.rank, dtype=np.uint32))
        seq_l.append(np.arange(n, dtype=np.uint32))
        prios.append(prio)
        ri = m[:, F_REQS]
        lens = np.full(n, -1, dtype=np.int32)
        sel = np.flatnonzero(ri >= 0)
        if len(sel):
            rl = c.req_lists
            lists = [rl[i] for i in ri[sel].tolist()]
            lens[sel] = [len(x) for x in lists]
            req_val.append(np.array([q for x in lists for q in x], dtype=np.uint64))
        req_len.append(lens)
        c.req_lists = []
        mats.append(m)
    mat = np.concatenate(mats) if mats else np.zeros((0, NF), dtype=np.int64)
    scale = 1e9 / plan.timer_resolution
    off = float(plan.global_offset)

    def ns(ticks):
        return np.rint((ticks.astype(np.float64) - off) * scale).astype(np.int64)

    return {
        "rank": np.concatenate(rank_l) if rank_l else np.zeros(0, np.uint32),
        "seq": np.concatenate(seq_l) if seq_l else np.zeros(0, np.uint32),
        "op": mat[:, F_OP].astype(np.int16),
        "t_start_ns": ns(mat[:, F_T0]),
        "t_end_ns": ns(mat[:, F_T1]),
        "dur_ns": np.rint(mat[:, F_DUR].astype(np.float64) * scale).astype(np.int64),
        "peer": mat[:, F_PEER].astype(np.int32),
        "tag": mat[:, F_TAG].astype(np.int32),
        "comm_id": mat[:, F_COMM].astype(np.uint32),
        "bytes": mat[:, F_BYTES].astype(np.uint64),
        "recv_bytes": mat[:, F_RBYTES].astype(np.uint64),
        "recv_peer": mat[:, F_RPEER].astype(np.int32),
        "recv_tag": mat[:, F_RTAG].astype(np.int32),
        "root": mat[:, F_ROOT].astype(np.int32),
        "req": mat[:, F_REQ].astype(np.uint64),
        # request lists: per row the list length (-1: null) and all values, row after row
        "reqs_len": np.concatenate(req_len) if req_len else np.zeros(0, np.int32),
        "reqs_val": np.concatenate(req_val) if req_val else np.zeros(0, np.uint64),
        "mem": mat[:, F_MEM].astype(np.int8),
        "copy_kind": mat[:, F_CK].astype(np.int8),
        "stream": mat[:, F_STREAM].astype(np.int32),
        "contiguous": mat[:, F_CONTIG] != 0,
        "priority": np.concatenate(prios) if prios else np.zeros(0, np.int32),
        "kernels": kernels,
        "stats": stats,
    }


def _matrix(rows: list[list], has_prio: bool) -> tuple[np.ndarray, np.ndarray]:
    """The fields of ``rows`` as an int64 matrix (values of 2**63 and more, possible for uint64
    sizes and request ids, wrap around and are restored by the uint64 casts) and the priority
    column (Kernel rows have it as a 19th field)."""
    n = len(rows)
    if n == 0:
        return np.zeros((0, NF), dtype=np.int64), np.zeros(0, np.int32)
    prio = None
    try:
        m = np.array(rows, dtype=np.int64)          # every row NF ints: the fast case
        if m.ndim != 2 or m.shape[1] != NF:
            raise ValueError("ragged")
    except (ValueError, OverflowError, TypeError):
        if has_prio:
            prio = np.array([r[F_PRIO] if len(r) > F_PRIO else 0 for r in rows], np.int32)
        part = [r[:NF] for r in rows]
        try:
            m = np.array(part, dtype=np.int64)
        except OverflowError:
            o = np.array(part, dtype=object)
            m = np.empty(o.shape, dtype=np.int64)
            for j in range(NF):
                col = o[:, j]
                big = np.array([v >= (1 << 63) for v in col])
                m[:, j] = np.where(big, 0, col).astype(np.int64)
                if big.any():
                    m[big, j] = np.array([v for v in col[big]], dtype=np.uint64).view(np.int64)
    if prio is None:
        if has_prio:
            prio = np.array([r[F_PRIO] if len(r) > F_PRIO else 0 for r in rows], np.int32)
        else:
            prio = np.zeros(n, np.int32)
    return m, prio

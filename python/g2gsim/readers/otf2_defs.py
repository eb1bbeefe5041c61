"""Global definitions of an OTF2 archive, reduced to what the converter needs (``OTF2Plan``).

Read with the raw ``_otf2`` bindings rather than ``otf2.reader``'s registry: the registry turns the
rank lists of COMM_GROUP groups into Location objects and builds an object per definition, while the
converter needs the raw numbers (world ranks, comm-relative ranks) and must stay fast for archives
with many thousands of locations.

Rank model: the world ranks are the positions of the locations in the MPI ``COMM_LOCATIONS`` group
(location ids are *not* ranks: Score-P numbers a process's locations ``thread << 32 | rank`` and GPU
streams have ids of their own).  ``COMM_GROUP`` members are positions in that group (world ranks);
``COMM_SELF`` groups have no members.  A GPU stream location belongs to the process of its location
group, or - for OTF2 3 ``ACCELERATOR`` location groups - to the group's creating process.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from .._extras import require
from ..trace import MEM_SPACES, Comm, TraceError

_otf2 = require("_otf2", "otf2", "reading OTF2 traces")

# numeric values of the OTF2 enums used by the converter
LT_CPU = _otf2.LOCATION_TYPE_CPU_THREAD.value
LT_GPU = _otf2.LOCATION_TYPE_ACCELERATOR_STREAM.value
LT_METRIC = _otf2.LOCATION_TYPE_METRIC.value
LGT_PROCESS = _otf2.LOCATION_GROUP_TYPE_PROCESS.value
LGT_ACCEL = _otf2.LOCATION_GROUP_TYPE_ACCELERATOR.value
GT_COMM_LOCATIONS = _otf2.GROUP_TYPE_COMM_LOCATIONS.value
GT_COMM_GROUP = _otf2.GROUP_TYPE_COMM_GROUP.value
GT_COMM_SELF = _otf2.GROUP_TYPE_COMM_SELF.value
P_MPI = _otf2.PARADIGM_MPI.value
P_ACCEL = {_otf2.PARADIGM_CUDA.value, _otf2.PARADIGM_HIP.value, _otf2.PARADIGM_OPENCL.value,
           _otf2.PARADIGM_OPENACC.value, _otf2.PARADIGM_OPENMP_TARGET.value,
           _otf2.PARADIGM_KOKKOS.value}
ROLE_KERNEL = _otf2.REGION_ROLE_KERNEL.value
ROLE_ARTIFICIAL = _otf2.REGION_ROLE_ARTIFICIAL.value
ROLE_DATA_TRANSFER = _otf2.REGION_ROLE_DATA_TRANSFER.value
TYPE_STRING = _otf2.TYPE_STRING.value
UNDEF32 = 0xFFFFFFFF
UNDEF64 = 0xFFFFFFFFFFFFFFFF

# region kinds (OTF2Plan.region_kind)
R_OTHER, R_MPI, R_CPY_SYNC, R_CPY_ASYNC, R_KERNEL = 0, 1, 2, 3, 4
# host-side GPU API calls (CUDA runtime/driver, HIP) that become native GPU operations
R_LAUNCH, R_STREAM_SYNC, R_DEVICE_SYNC, R_EVENT_SYNC, R_EVENT_RECORD, R_STREAM_WAIT, \
    R_STREAM_CREATE = 5, 6, 7, 8, 9, 10, 11
GPU_API_KINDS = frozenset((R_LAUNCH, R_STREAM_SYNC, R_DEVICE_SYNC, R_EVENT_SYNC, R_EVENT_RECORD,
                           R_STREAM_WAIT, R_STREAM_CREATE))
# base API name (version / per-thread-stream suffixes removed) -> region kind
GPU_API = {}
for _kind, _names in (
        (R_LAUNCH, ("cudaLaunchKernel", "cudaLaunchKernelExC", "cudaLaunchCooperativeKernel",
                    "cudaLaunch", "cuLaunchKernel", "cuLaunchKernelEx", "cuLaunchCooperativeKernel",
                    "cuLaunch", "cuLaunchGrid", "cuLaunchGridAsync", "hipLaunchKernel",
                    "hipLaunchKernelExC", "hipLaunchCooperativeKernel", "hipModuleLaunchKernel",
                    "hipExtLaunchKernel", "hipExtModuleLaunchKernel", "hipLaunchByPtr")),
        (R_STREAM_SYNC, ("cudaStreamSynchronize", "cuStreamSynchronize", "hipStreamSynchronize")),
        (R_DEVICE_SYNC, ("cudaDeviceSynchronize", "cudaThreadSynchronize", "cuCtxSynchronize",
                         "hipDeviceSynchronize")),
        (R_EVENT_SYNC, ("cudaEventSynchronize", "cuEventSynchronize", "hipEventSynchronize")),
        (R_EVENT_RECORD, ("cudaEventRecord", "cudaEventRecordWithFlags", "cuEventRecord",
                          "cuEventRecordWithFlags", "hipEventRecord", "hipEventRecordWithFlags")),
        (R_STREAM_WAIT, ("cudaStreamWaitEvent", "cuStreamWaitEvent", "hipStreamWaitEvent")),
        (R_STREAM_CREATE, ("cudaStreamCreateWithPriority", "cuStreamCreateWithPriority",
                           "hipStreamCreateWithPriority"))):
    for _n in _names:
        GPU_API[_n] = _kind
_API_SUFFIX = re.compile(r"(_v\d+|_ptsz|_ptds|_spt)+$")


def gpu_api_kind(name: str) -> int:
    """Region kind of a host GPU API call named ``name`` (``cudaLaunchKernel_v7000``,
    ``cuStreamSynchronize_ptsz``, ``hipEventRecord``...), 0 when it is not one of them."""
    return GPU_API.get(_API_SUFFIX.sub("", name.strip()), 0)


MEM_ATTR_NAME = "g2g:mem_space"
# attributes written by g2gsim's tracer (tracer/README.md); Score-P writes none of them
G2G_ATTRS = ("g2g:mem_space", "g2g:contiguous", "g2g:bytes", "g2g:recv_bytes", "g2g:copy_kind",
             "g2g:stream", "g2g:async", "g2g:event", "g2g:corr", "g2g:priority")
# Score-P's kernel_callsite feature: a ParameterUnsignedInt of this name in the launch call and at
# the kernel's Enter on the GPU location
CALLSITE_PARAM = "callsite id"
_MEMCPY_API = re.compile(r"^(cuda|hip|cu|cl)(Enqueue)?(Mem)?[Cc]opy|^(cuda|hip|cu)Memcpy", re.I)
_STREAM_RE = re.compile(r"\[\s*(\d+)\s*:\s*(\d+)")


@dataclass
class OTF2Plan:
    """What the event converter needs from the global definitions (picklable, sent to workers)."""
    anchor: str
    creator: str = ""
    version: str = ""
    timer_resolution: int = 1
    global_offset: int = 0
    nranks: int = 0
    rank_cpu_loc: list[int] = field(default_factory=list)        # MPI (master) location per rank
    rank_gpu_locs: list[list[int]] = field(default_factory=list)  # GPU stream locations per rank
    loc_name: dict[int, str] = field(default_factory=dict)
    loc_nevents: dict[int, int] = field(default_factory=dict)
    gpu_stream: dict[int, int] = field(default_factory=dict)      # GPU location -> stream id
    callsite_param: int | None = None  # ref of Score-P's "callsite id" parameter
    region_kind: dict[int, int] = field(default_factory=dict)     # only regions of interest
    region_name: dict[int, str] = field(default_factory=dict)     # names of MPI regions
    # OTF2 comm ref -> (kind, our id or self base, members (world ranks) or None, size)
    comm_map: dict[int, tuple] = field(default_factory=dict)
    comms: list[Comm] = field(default_factory=list)               # non-self communicators
    self_comms: dict[int, tuple[int, str]] = field(default_factory=dict)  # ref -> (base id, name)
    intercomms: set[int] = field(default_factory=set)
    mpi_windows: set[int] = field(default_factory=set)            # MPI one-sided windows
    win_remote_gpu: dict[int, list[bool]] = field(default_factory=dict)  # accel windows
    mem_attr: int | None = None
    mem_string_code: dict[int, int] = field(default_factory=dict)  # string ref -> MEM_SPACES idx
    g2g_attrs: dict[str, int] = field(default_factory=dict)        # "g2g:*" attribute -> ref
    has_mpi: bool = False          # any MPI region or MPI communicator defined
    unowned_gpu_locations: int = 0  # GPU locations whose process could not be determined
    total_events: int = 0
    properties: dict[str, str] = field(default_factory=dict)

    @property
    def read_events(self) -> int:
        """Events in the locations the converter reads (MPI and GPU stream locations)."""
        return sum(self.rank_events(r) for r in range(self.nranks))

    def rank_events(self, r: int) -> int:
        n = self.loc_nevents.get(self.rank_cpu_loc[r], 0)
        return n + sum(self.loc_nevents.get(g, 0) for g in self.rank_gpu_locs[r])

    def when(self, t: int | None) -> str:
        """' (time T ticks = N ns into the trace)' for messages; '' without a time."""
        if t is None:
            return ""
        ns = (t - self.global_offset) * 1e9 / self.timer_resolution
        return f" (time {t} ticks = {ns:.0f} ns into the trace)"

    def where(self, loc: int) -> str:
        """'location L (rank R)' for messages."""
        for r, c in enumerate(self.rank_cpu_loc):
            if c == loc:
                return f"location {loc} (rank {r})"
        for r, gl in enumerate(self.rank_gpu_locs):
            if loc in gl:
                return f"GPU location {loc} '{self.loc_name.get(loc, '')}' (rank {r})"
        return f"location {loc}"


def find_anchor(anchor: str | Path) -> Path:
    """The .otf2 anchor file: ``anchor`` itself or the single *.otf2 in the directory ``anchor``."""
    p = Path(anchor)
    if p.is_dir():
        cands = sorted(q for q in p.glob("*.otf2") if q.is_file())
        if not cands:
            raise TraceError(f"{p}: no OTF2 anchor file (*.otf2) in this directory")
        if len(cands) > 1:
            raise TraceError(f"{p}: several OTF2 anchor files ({', '.join(q.name for q in cands)}); "
                             f"name the one to read")
        return cands[0]
    if not p.exists():
        raise TraceError(f"{p}: no such OTF2 archive")
    if p.suffix != ".otf2":
        raise TraceError(f"{p}: not an OTF2 anchor file (expected a .otf2 file)")
    return p


def _val(x):
    return x.value if hasattr(x, "value") else x


def _str(x) -> str:
    if isinstance(x, bytes):
        return x.decode("utf-8", "replace")
    return str(x)


def read_plan(anchor: Path) -> OTF2Plan:
    """Read the global definitions of the archive at ``anchor`` (an .otf2 file)."""
    a = str(anchor)
    try:
        h = _otf2.Reader_Open(a)
    except Exception as e:  # noqa: BLE001 - _otf2 raises its own Error type
        raise TraceError(f"{anchor}: cannot open OTF2 archive ({e})") from None
    try:
        _otf2.Reader_SetSerialCollectiveCallbacks(h)
        strings: dict[int, str] = {}
        clock: list = []
        lgroups: dict[int, tuple] = {}
        locs: dict[int, tuple] = {}
        regions: dict[int, tuple] = {}
        groups: dict[int, tuple] = {}
        comms: dict[int, tuple] = {}
        intercomms: set[int] = set()
        wins: dict[int, tuple] = {}
        attrs: dict[int, tuple] = {}
        params: dict[int, int] = {}

        # one distinct function per callback: the bindings attach the C thunk to the function
        def cb_string(ud, ref, s):
            strings[ref] = _str(s)

        def cb_clock(ud, res, off, length, *rest):
            clock[:] = [res, off, length]

        def cb_lg(ud, ref, name, lgtype, parent, *rest):
            lgroups[ref] = (name, _val(lgtype), rest[0] if rest else UNDEF32)

        def cb_loc(ud, ref, name, ltype, nev, lg):
            locs[ref] = (name, _val(ltype), nev, lg)

        def cb_region(ud, ref, name, cname, desc, role, paradigm, flags, *rest):
            regions[ref] = (name, _val(role), _val(paradigm))

        def cb_group(ud, ref, name, gtype, paradigm, flags, members):
            groups[ref] = (name, _val(gtype), _val(paradigm), list(members))

        def cb_comm(ud, ref, name, group, parent, *rest):
            comms[ref] = (name, group, parent)

        def cb_intercomm(ud, ref, *rest):
            intercomms.add(ref)

        def cb_win(ud, ref, name, comm, *rest):
            wins[ref] = (name, comm)

        def cb_attr(ud, ref, name, desc, atype):
            attrs[ref] = (name, _val(atype))

        def cb_param(ud, ref, name, *rest):
            params[ref] = name

        cbs = _otf2.GlobalDefReaderCallbacks_New()
        for setter, fn in (("String", cb_string), ("ClockProperties", cb_clock),
                           ("LocationGroup", cb_lg), ("Location", cb_loc), ("Region", cb_region),
                           ("Group", cb_group), ("Comm", cb_comm), ("InterComm", cb_intercomm),
                           ("RmaWin", cb_win), ("Attribute", cb_attr), ("Parameter", cb_param)):
            getattr(_otf2, f"GlobalDefReaderCallbacks_Set{setter}Callback")(cbs, fn)
        gdr = _otf2.Reader_GetGlobalDefReader(h)
        _otf2.Reader_RegisterGlobalDefCallbacks(h, gdr, cbs, None)
        _otf2.Reader_ReadAllGlobalDefinitions(h, gdr)
        _otf2.Reader_CloseGlobalDefReader(h, gdr)
        _otf2.GlobalDefReaderCallbacks_Delete(cbs)
        plan = OTF2Plan(anchor=a)
        try:
            plan.creator = _str(_otf2.Reader_GetCreator(h))
            plan.version = ".".join(str(v) for v in _otf2.Reader_GetVersion(h))
            for name in _otf2.Reader_GetPropertyNames(h):
                plan.properties[_str(name)] = _str(_otf2.Reader_GetProperty(h, name))
        except Exception:  # noqa: BLE001 - informational only
            pass
    except TraceError:
        raise
    except Exception as e:  # noqa: BLE001
        raise TraceError(f"{anchor}: cannot read the global definitions ({e})") from None
    finally:
        _otf2.Reader_Close(h)

    if not clock:
        raise TraceError(f"{anchor}: archive has no ClockProperties definition")
    plan.timer_resolution, plan.global_offset = int(clock[0]), int(clock[1])
    if plan.timer_resolution <= 0:
        raise TraceError(f"{anchor}: invalid timer resolution {plan.timer_resolution}")
    S = lambda ref: strings.get(ref, "")  # noqa: E731

    # ---------------------------------------------------------------- ranks and locations
    for ref, (name, _ltype, nev, _lg) in locs.items():
        plan.loc_name[ref] = S(name)
        plan.loc_nevents[ref] = int(nev)
    plan.total_events = sum(plan.loc_nevents.values())
    mpi_locgroup = None
    for gref in sorted(groups):
        name, gtype, paradigm, members = groups[gref]
        if gtype == GT_COMM_LOCATIONS and paradigm == P_MPI:
            mpi_locgroup = members
            break
    if mpi_locgroup:
        for loc in mpi_locgroup:
            if loc not in locs:
                raise TraceError(f"{anchor}: MPI location group names undefined location {loc}")
        plan.rank_cpu_loc = list(mpi_locgroup)
    else:   # no MPI: one "rank" per process that has a CPU thread
        procs: dict = {}
        for ref in sorted(locs):
            name, ltype, nev, lg = locs[ref]
            if ltype == LT_CPU and lgroups.get(lg, (0, LGT_PROCESS))[1] == LGT_PROCESS:
                procs.setdefault(lg, ref)
        plan.rank_cpu_loc = [procs[lg] for lg in sorted(procs)]
    plan.nranks = len(plan.rank_cpu_loc)
    rank_of_lg = {locs[loc][3]: r for r, loc in enumerate(plan.rank_cpu_loc)}
    plan.rank_gpu_locs = [[] for _ in range(plan.nranks)]
    for ref in sorted(locs):
        name, ltype, nev, lg = locs[ref]
        if ltype != LT_GPU:
            continue
        r = rank_of_lg.get(lg)
        if r is None and lg in lgroups:
            r = rank_of_lg.get(lgroups[lg][2])            # creating location group (OTF2 3)
        if r is None and plan.nranks == 1:
            r = 0
        if r is None:                                      # GPU of an unknown process: ignored
            plan.unowned_gpu_locations += 1
            continue
        plan.rank_gpu_locs[r].append(ref)
    # stream ids: "CUDA[d:s]" / "HIP[d:s]" names (Score-P, our tracer) give s; where one rank's
    # locations span several devices with clashing stream numbers, d << 16 | s keeps them apart;
    # locations without such a name are numbered in definition order
    for _r, gl in enumerate(plan.rank_gpu_locs):
        parsed = {}
        for k, ref in enumerate(gl):
            m = _STREAM_RE.search(S(locs[ref][0]))
            parsed[ref] = (int(m.group(1)), int(m.group(2))) if m else (None, k)
        named = [v for v in parsed.values() if v[0] is not None]
        clash = len({s for _, s in named}) < len(named)
        for ref, (d, s_) in parsed.items():
            plan.gpu_stream[ref] = ((d << 16) | s_) if clash and d is not None else s_

    # ---------------------------------------------------------------- regions
    for ref, (name, role, paradigm) in regions.items():
        n = S(name)
        if paradigm == P_MPI or (n.startswith("MPI_") and paradigm not in P_ACCEL):
            plan.region_kind[ref] = R_MPI
            plan.region_name[ref] = n
            plan.has_mpi = True
        elif role != ROLE_KERNEL and gpu_api_kind(n):
            plan.region_kind[ref] = gpu_api_kind(n)
        elif _MEMCPY_API.match(n) and role != ROLE_KERNEL:
            plan.region_kind[ref] = R_CPY_ASYNC if "async" in n.lower() else R_CPY_SYNC
        elif role == ROLE_KERNEL or (paradigm in P_ACCEL and role not in (ROLE_ARTIFICIAL,
                                                                         ROLE_DATA_TRANSFER)
                                     and "idle" not in n.lower() and "flush" not in n.lower()):
            plan.region_kind[ref] = R_KERNEL

    # ---------------------------------------------------------------- communicators
    loc_rank = {loc: r for r, loc in enumerate(plan.rank_cpu_loc)}
    next_id = 1
    pending_self = []
    cands = []                       # (ref, name, members, parent) of MPI group communicators
    for ref in sorted(comms):
        name, gref, parent = comms[ref]
        if gref not in groups:
            continue
        gname, gtype, paradigm, members = groups[gref]
        if paradigm != P_MPI:
            continue
        cname = S(name) or f"Comm {ref}"
        plan.has_mpi = True
        if gtype == GT_COMM_SELF:
            pending_self.append((ref, cname))
            continue
        if gtype == GT_COMM_LOCATIONS:
            members = [loc_rank.get(m, -1) for m in members]
        elif gtype != GT_COMM_GROUP:
            continue
        bad = [m for m in members if not 0 <= m < plan.nranks]
        if bad:
            raise TraceError(f"{anchor}: communicator {cname!r} (OTF2 comm {ref}) names rank "
                             f"{bad[0]}, outside 0..{plan.nranks - 1}")
        cands.append((ref, cname, list(members), parent))
    full = list(range(plan.nranks))
    world_ref = next((c[0] for c in cands if c[1] == "MPI_COMM_WORLD" and c[2] == full), None)
    if world_ref is None:
        world_ref = next((c[0] for c in cands if c[3] == UNDEF32 and c[2] == full), None)
    for ref, cname, members, _parent in cands:
        if ref == world_ref:
            plan.comm_map[ref] = ("world", 0, None, plan.nranks)
        else:
            plan.comm_map[ref] = ("group", next_id, members, len(members))
            plan.comms.append(Comm(next_id, cname, members))
            next_id += 1
    for ref, cname in pending_self:
        plan.self_comms[ref] = (next_id, cname)
        plan.comm_map[ref] = ("self", next_id, None, 1)
        next_id += plan.nranks
    plan.comms.insert(0, Comm(0, S(comms[world_ref][0]) if world_ref is not None
                               else "MPI_COMM_WORLD", None))
    plan.intercomms = intercomms

    # ---------------------------------------------------------------- RMA windows
    for wref, (_name, cref) in wins.items():
        if cref in plan.comm_map:
            plan.mpi_windows.add(wref)
            continue
        if cref not in comms or comms[cref][1] not in groups:
            continue
        gname, gtype, paradigm, members = groups[comms[cref][1]]
        if paradigm == P_MPI:
            plan.mpi_windows.add(wref)
            continue
        # accelerator window: members are ranks of the COMM_LOCATIONS group of that paradigm
        base = None
        for g in sorted(groups):
            if groups[g][1] == GT_COMM_LOCATIONS and groups[g][2] == paradigm:
                base = groups[g][3]
                break
        if gtype == GT_COMM_GROUP and base is not None:
            rl = [base[m] if 0 <= m < len(base) else None for m in members]
        elif gtype == GT_COMM_LOCATIONS:
            rl = list(members)
        else:
            rl = []
        plan.win_remote_gpu[wref] = [l is not None and locs.get(l, (0, 0))[1] == LT_GPU
                                     for l in rl]

    # ---------------------------------------------------------------- our buffer attribute
    for aref, (name, _atype) in attrs.items():
        if S(name) == MEM_ATTR_NAME:
            plan.mem_attr = aref
        if S(name) in G2G_ATTRS:
            plan.g2g_attrs[S(name)] = aref
    for pref, name in params.items():
        if S(name) == CALLSITE_PARAM:
            plan.callsite_param = pref
    if plan.mem_attr is not None:
        for sref, s in strings.items():
            if s.lower() in MEM_SPACES:
                plan.mem_string_code[sref] = MEM_SPACES.index(s.lower())
    return plan


def archive_dir(plan: OTF2Plan) -> str:
    """Directory holding the per-location files (anchor 'x/traces.otf2' -> 'x/traces')."""
    return os.path.splitext(plan.anchor)[0]

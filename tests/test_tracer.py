"""Tests of the PMPI/OTF2 tracer (tracer/, python/g2gsim/record.py).

They build ``tracer/build/libg2gtrace.so`` with ``make -C tracer``, run small MPI programs
(tests/data/ping-tracer/: C, Fortran, mpi4py) on 4 Open MPI ranks under it through
``g2gsim.record.record`` and check the OTF2 archive read back with the PyPI ``otf2`` package: exact
record counts per rank, peers, sizes, communicators and the ``g2g:*`` attributes.  A fake libcuda
and a fake libcupti (tracer/test/) stand in for a GPU.

Needs: mpicc/mpirun (Debian: libopenmpi-dev openmpi-bin), the OTF2 library (libopen-trace-format2-dev),
the ``otf2`` and ``mpi4py`` Python packages.  Skipped only when mpicc is absent.
"""
from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
DATA = ROOT / "tests" / "data" / "ping-tracer"
TRACER = ROOT / "tracer"

pytestmark = pytest.mark.skipif(shutil.which("mpicc") is None,
                                reason="mpicc not found (install libopenmpi-dev and openmpi-bin)")

NP = 4
MPIRUN = ["mpirun", "--oversubscribe", "--allow-run-as-root", "--mca", "btl", "self,vader", "-np", str(NP)]
RUN_ENV = {
    "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
    # containers often forbid the cross-memory-attach single copy of the vader BTL
    "OMPI_MCA_btl_vader_single_copy_mechanism": "none",
    "OMPI_MCA_rmaps_base_oversubscribe": "1",
    # one-sided/UCX components probe devices; keep the run on loopback/shared memory
    "OMPI_MCA_pml": "ob1", "OMPI_MCA_osc": "^ucx", "OMPI_MCA_btl_tcp_if_include": "lo",
    "OMPI_MCA_oob_tcp_if_include": "lo",
}
MSG_RECORDS = ("MpiSend", "MpiIsend", "MpiRecv", "MpiIrecv", "MpiCollectiveEnd", "NonBlockingCollectiveComplete")


# ------------------------------------------------------------------------------------------------
# building
# ------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tracer_lib() -> Path:
    p = subprocess.run(["make", "-C", str(TRACER)], capture_output=True, text=True)
    assert p.returncode == 0, f"make -C tracer failed:\n{p.stdout}\n{p.stderr}"
    lib = TRACER / "build" / "libg2gtrace.so"
    assert lib.is_file()
    return lib


def _cc(out: Path, src: Path, *extra: str, compiler: str = "mpicc", env=None) -> Path:
    p = subprocess.run([compiler, "-O1", "-o", str(out), str(src), *extra], capture_output=True, text=True,
                       env=env)
    assert p.returncode == 0, f"{compiler} {src.name} failed:\n{p.stdout}\n{p.stderr}"
    return out


@pytest.fixture(scope="module")
def build_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("tracer-build")


@pytest.fixture(scope="module")
def ping_exe(build_dir) -> Path:
    return _cc(build_dir / "ping", DATA / "ping.c")


@pytest.fixture(scope="module")
def fakes(build_dir) -> dict:
    out = {}
    for name in ("fake_cuda", "fake_cupti"):
        so = build_dir / f"{name}.so"
        p = subprocess.run(["cc", "-shared", "-fPIC", "-O1", "-o", str(so), str(TRACER / "test" / f"{name}.c")],
                           capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        out[name] = so
    return out


def _fortran_env():
    """Environment for mpifort with a Fortran compiler that exists, or None."""
    if shutil.which("mpifort") is None:
        return None
    env = dict(os.environ)
    if shutil.which("gfortran") is None:
        versions = sorted(glob.glob("/usr/bin/gfortran-[0-9]*"))
        if not versions:
            return None
        env["OMPI_FC"] = versions[-1]
    return env


# ------------------------------------------------------------------------------------------------
# running and reading
# ------------------------------------------------------------------------------------------------
def run_traced(tracer_lib, out: Path, command: list[str], **extra_env) -> Path:
    from g2gsim.record import record
    env = dict(RUN_ENV, G2G_TRACER_LIB=str(tracer_lib), **extra_env)
    old = os.environ.get("G2G_TRACER_LIB")
    os.environ["G2G_TRACER_LIB"] = str(tracer_lib)
    try:
        anchor = record(out, command, env=env)
    finally:
        if old is None:
            os.environ.pop("G2G_TRACER_LIB", None)
        else:
            os.environ["G2G_TRACER_LIB"] = old
    assert anchor == out.resolve() / "traces.otf2" and anchor.is_file()
    return anchor


class Archive:
    """What the tests need from an OTF2 archive, read with the PyPI otf2 package."""

    def __init__(self, anchor: Path):
        import otf2
        self.path = anchor
        self.events = defaultdict(list)     # location name -> [event]
        with otf2.reader.open(str(anchor)) as tr:
            d = tr.definitions
            self.timer_resolution = d.clock_properties.timer_resolution
            self.locations = {loc.name: loc for loc in d.locations}
            self.comms = {c.name: c for c in d.comms}
            self.regions = [r.name for r in d.regions]
            self.attributes = {a.name: a for a in d.attributes}
            for loc, ev in tr.events:
                self.events[loc.name].append(ev)

    def rank(self, r: int) -> list:
        return self.events[f"MPI rank {r}"]

    def kinds(self, r: int) -> Counter:
        return Counter(type(e).__name__ for e in self.rank(r))

    def of(self, r: int, kind: str) -> list:
        return [e for e in self.rank(r) if type(e).__name__ == kind]

    def regions_entered(self, r: int) -> list[str]:
        return [e.region.name for e in self.of(r, "Enter")]


def attrs(ev) -> dict:
    return {a.name: v for a, v in (ev.attributes or {}).items()}


def op_name(ev) -> str:
    return str(ev.collective_op).split(".")[-1]


def comm_members(comm) -> list[int]:
    return [int(re.search(r"\d+$", m.name).group()) for m in comm.group.members]


def check_common(a: Archive, n_calls):
    """n_calls: MPI calls per rank (an int, or a dict rank -> int)."""
    assert a.timer_resolution == 1_000_000_000
    assert sorted(n for n in a.locations if n.startswith("MPI rank")) == [f"MPI rank {r}" for r in range(NP)]
    world = a.comms["MPI_COMM_WORLD"]
    assert comm_members(world) == list(range(NP))
    for r in range(NP):
        evs = a.rank(r)
        times = [e.time for e in evs]
        assert times == sorted(times), f"rank {r}: timestamps not monotonic"
        k = a.kinds(r)
        want = n_calls[r] if isinstance(n_calls, dict) else n_calls
        assert k["Enter"] == k["Leave"] == want, (r, k)
        # Enter/Leave nest properly and name the same region
        stack = []
        for e in evs:
            if type(e).__name__ == "Enter":
                stack.append(e.region.name)
            elif type(e).__name__ == "Leave":
                assert stack and stack.pop() == e.region.name
        assert not stack
        # every message-carrying record says where its buffer is and whether the type is contiguous
        for e in evs:
            if type(e).__name__ in MSG_RECORDS:
                at = attrs(e)
                assert "g2g:mem_space" in at and "g2g:contiguous" in at, (r, e)


def check_p2p_matching(a: Archive):
    """Every MpiSend/MpiIsend has its MpiRecv/MpiIrecv: same world ranks, comm, tag and length."""
    def world(comm, rank):
        return comm_members(comm)[rank]
    sends, recvs = Counter(), Counter()
    for r in range(NP):
        for e in a.of(r, "MpiSend") + a.of(r, "MpiIsend"):
            sends[(r, world(e.communicator, e.receiver), e.communicator.name, e.msg_tag, e.msg_length)] += 1
        for e in a.of(r, "MpiRecv") + a.of(r, "MpiIrecv"):
            recvs[(world(e.communicator, e.sender), r, e.communicator.name, e.msg_tag, e.msg_length)] += 1
    assert sends == recvs and sends


# ------------------------------------------------------------------------------------------------
# the C program
# ------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def c_trace(tracer_lib, ping_exe, tmp_path_factory) -> Archive:
    out = tmp_path_factory.mktemp("c-trace")
    return Archive(run_traced(tracer_lib, out, MPIRUN + [str(ping_exe)]))


C_REGIONS = Counter({"MPI_Init": 1, "MPI_Send": 1, "MPI_Recv": 1, "MPI_Irecv": 3, "MPI_Isend": 3, "MPI_Waitall": 1,
                     "MPI_Bcast": 1, "MPI_Allreduce": 2, "MPI_Comm_split": 1, "MPI_Comm_free": 1, "MPI_Ibcast": 1,
                     "MPI_Wait": 1, "MPI_Sendrecv": 1, "MPI_Finalize": 1})


def test_c_record_counts(c_trace):
    a = c_trace
    check_common(a, sum(C_REGIONS.values()))
    for r in range(NP):
        assert Counter(a.regions_entered(r)) == C_REGIONS, r
        k = a.kinds(r)
        expect = {"MpiSend": 2, "MpiRecv": 2, "MpiIsend": 3, "MpiIsendComplete": 3, "MpiIrecvRequest": 3,
                  "MpiIrecv": 3, "MpiCollectiveBegin": 5, "MpiCollectiveEnd": 5,
                  "NonBlockingCollectiveRequest": 1, "NonBlockingCollectiveComplete": 1}
        assert {x: k[x] for x in expect} == expect, (r, k)
        assert set(k) <= set(expect) | {"Enter", "Leave"}, (r, k)


def test_c_point_to_point(c_trace):
    a = c_trace
    check_p2p_matching(a)
    for r in range(NP):
        right, left = (r + 1) % NP, (r - 1) % NP
        send, sr_send = a.of(r, "MpiSend")
        assert (send.receiver, send.msg_tag, send.msg_length) == (right, 1, 32)
        assert send.communicator.name == "MPI_COMM_WORLD"
        # Sendrecv of one MPI_Type_vector(4, 1, 2, MPI_INT): 16 bytes, not contiguous
        assert (sr_send.receiver, sr_send.msg_tag, sr_send.msg_length) == (right, 3, 16)
        assert attrs(sr_send)["g2g:contiguous"] == 0 and attrs(send)["g2g:contiguous"] == 1
        recv, sr_recv = a.of(r, "MpiRecv")
        assert (recv.sender, recv.msg_tag, recv.msg_length) == (left, 1, 32)
        assert (sr_recv.sender, sr_recv.msg_length) == (left, 16)
        others = {p for p in range(NP) if p != r}
        isends = a.of(r, "MpiIsend")
        assert {e.receiver for e in isends} == others
        assert all(e.msg_length == 128 and e.msg_tag == 2 for e in isends)
        assert {e.request_id for e in a.of(r, "MpiIsendComplete")} == {e.request_id for e in isends}
        irecvs = a.of(r, "MpiIrecv")
        assert {e.sender for e in irecvs} == others and all(e.msg_length == 128 for e in irecvs)
        assert {e.request_id for e in a.of(r, "MpiIrecvRequest")} == {e.request_id for e in irecvs}
        ids = [e.request_id for e in isends + a.of(r, "MpiIrecvRequest")]
        assert len(set(ids)) == len(ids)
        for e in a.rank(r):
            if type(e).__name__ in MSG_RECORDS:
                assert attrs(e)["g2g:mem_space"] == 0, (r, e)      # host
    # same host, same clock: a message is never received before it was sent
    t_send = {r: a.of(r, "MpiSend")[0].time for r in range(NP)}
    for r in range(NP):
        assert a.of(r, "MpiRecv")[0].time > t_send[(r - 1) % NP]


def test_c_collectives_and_communicators(c_trace):
    a = c_trace
    subs = [c for name, c in a.comms.items() if "MPI_Comm_split" in name]
    assert sorted(comm_members(c) for c in subs) == [[0, 2], [1, 3]]
    assert all(c.parent.name == "MPI_COMM_WORLD" for c in subs)
    for r in range(NP):
        ends = a.of(r, "MpiCollectiveEnd")
        assert [op_name(e) for e in ends] == ["BCAST", "ALLREDUCE", "CREATE_HANDLE", "ALLREDUCE", "DESTROY_HANDLE"]
        bcast, allred, create, sub_allred, destroy = ends
        assert bcast.communicator.name == allred.communicator.name == create.communicator.name == "MPI_COMM_WORLD"
        assert comm_members(sub_allred.communicator) == [p for p in range(NP) if p % 2 == r % 2]
        assert destroy.communicator.name == sub_allred.communicator.name
        # Score-P byte counts: Bcast root sends N blocks, everybody receives one; Allreduce N each way
        assert (bcast.root, bcast.size_sent, bcast.size_received) == (0, 32 if r == 0 else 0, 8)
        assert (allred.size_sent, allred.size_received) == (32, 32)
        assert (sub_allred.size_sent, sub_allred.size_received) == (32, 32)
        # g2g attributes: the local buffer sizes
        assert (attrs(bcast)["g2g:bytes"], attrs(sub_allred)["g2g:bytes"], attrs(sub_allred)["g2g:recv_bytes"]) == (8, 16, 16)
        assert all(attrs(e)["g2g:mem_space"] == 0 and attrs(e)["g2g:recv_mem_space"] == 0 for e in ends)
        (req,), (done,) = a.of(r, "NonBlockingCollectiveRequest"), a.of(r, "NonBlockingCollectiveComplete")
        assert done.request_id == req.request_id and op_name(done) == "BCAST" and done.root == 1
        assert (done.size_sent, done.size_received) == (1024 if r == 1 else 0, 256)
        assert done.time > req.time


# ------------------------------------------------------------------------------------------------
# every intercepted call
# ------------------------------------------------------------------------------------------------
COLL_OPS = {"MPI_Barrier": "BARRIER", "MPI_Bcast": "BCAST", "MPI_Reduce": "REDUCE", "MPI_Allreduce": "ALLREDUCE",
            "MPI_Gather": "GATHER", "MPI_Gatherv": "GATHERV", "MPI_Scatter": "SCATTER", "MPI_Scatterv": "SCATTERV",
            "MPI_Allgather": "ALLGATHER", "MPI_Allgatherv": "ALLGATHERV", "MPI_Alltoall": "ALLTOALL",
            "MPI_Alltoallv": "ALLTOALLV", "MPI_Reduce_scatter": "REDUCE_SCATTER",
            "MPI_Reduce_scatter_block": "REDUCE_SCATTER_BLOCK", "MPI_Scan": "SCAN", "MPI_Exscan": "EXSCAN"}
CREATORS = ("MPI_Comm_split", "MPI_Comm_split_type", "MPI_Comm_dup", "MPI_Comm_dup_with_info", "MPI_Comm_create",
            "MPI_Comm_create_group", "MPI_Cart_create", "MPI_Cart_sub")


def expected_sizes(region: str, r: int) -> tuple:
    """(sizeSent, sizeReceived, g2g:bytes, g2g:recv_bytes) of all_calls.c's collectives on world."""
    b, n = 16, NP                                      # COUNT = 4 ints per block
    return {
        "Bcast": (n * b if r == 2 else 0, b, b, 0),
        "Reduce": (b, n * b if r == 1 else 0, b, b if r == 1 else 0),
        "Allreduce": (n * b, n * b, b, b),
        "Gather": (b, n * b if r == 0 else 0, b, n * b if r == 0 else 0),
        "Gatherv": (b, n * b if r == 0 else 0, b, n * b if r == 0 else 0),
        "Scatter": (n * b if r == 3 else 0, b, n * b if r == 3 else 0, b),
        "Scatterv": (n * b if r == 3 else 0, b, n * b if r == 3 else 0, b),
        "Allgather": (n * b, n * b, b, n * b), "Allgatherv": (n * b, n * b, b, n * b),
        "Alltoall": (n * b, n * b, n * b, n * b), "Alltoallv": (n * b, n * b, n * b, n * b),
        "Reduce_scatter": (n * b, n * b, n * b, b), "Reduce_scatter_block": (n * b, n * b, n * b, b),
        "Scan": ((n - r) * b, (r + 1) * b, b, b), "Exscan": ((n - r - 1) * b, r * b, b, b),
        "Barrier": (0, 0, 0, 0),
    }[region]


def test_all_calls(tracer_lib, build_dir, tmp_path):
    exe = _cc(build_dir / "all_calls", DATA / "all_calls.c")
    a = Archive(run_traced(tracer_lib, tmp_path / "trace", MPIRUN + [str(exe)]))
    check_common(a, {r: len(a.regions_entered(r)) for r in range(NP)})
    for r in range(NP):
        regions = Counter(a.regions_entered(r))
        even = r % 2 == 0
        fixed = {"MPI_Init_thread": 1, "MPI_Finalize": 1, "MPI_Send": 3, "MPI_Ssend": 1, "MPI_Bsend": 1,
                 "MPI_Rsend": 1, "MPI_Isend": 3, "MPI_Issend": 1, "MPI_Ibsend": 1, "MPI_Irsend": 1, "MPI_Recv": 2,
                 "MPI_Irecv": 11, "MPI_Wait": 5, "MPI_Waitall": 2, "MPI_Waitany": 1, "MPI_Waitsome": 1,
                 "MPI_Request_free": 1, "MPI_Cancel": 1, "MPI_Sendrecv": 1, "MPI_Sendrecv_replace": 1,
                 "MPI_Barrier": 6 + even, "MPI_Allreduce": 5 + even, "MPI_Comm_free": 6 + 2 * even,
                 "MPI_Comm_create_group": int(even)}
        fixed.update({reg: 1 for reg in COLL_OPS if reg not in fixed})
        fixed.update({"MPI_I" + reg[4].lower() + reg[5:]: 1 for reg in COLL_OPS})
        fixed.update({reg: 1 for reg in CREATORS if reg not in fixed})
        assert {k: regions[k] for k in fixed} == fixed, r
        assert regions["MPI_Test"] >= 1 and regions["MPI_Testall"] >= 1
        assert set(regions) <= set(fixed) | {"MPI_Test", "MPI_Testall", "MPI_Testany", "MPI_Testsome"}
        k = a.kinds(r)
        assert (k["MpiSend"], k["MpiRecv"], k["MpiIsend"], k["MpiIsendComplete"], k["MpiIrecvRequest"],
                k["MpiIrecv"], k["MpiRequestCancelled"]) == (7, 3, 5, 4, 10, 9, 1), (r, k)
        assert k["NonBlockingCollectiveRequest"] == k["NonBlockingCollectiveComplete"] == 16
        # each MpiCollectiveEnd sits in the region of its operation
        stack, coll = [], []
        for e in a.rank(r):
            kind = type(e).__name__
            if kind == "Enter":
                stack.append(e.region.name)
            elif kind == "Leave":
                stack.pop()
            elif kind == "MpiCollectiveEnd":
                coll.append((stack[-1], e))
        assert len(coll) == sum(regions[x] for x in list(COLL_OPS) + list(CREATORS) + ["MPI_Comm_free"])
        for region, e in coll:
            want = COLL_OPS.get(region) or ("DESTROY_HANDLE" if region == "MPI_Comm_free" else "CREATE_HANDLE")
            assert op_name(e) == want, (r, region, op_name(e))
            if e.communicator.name == "MPI_COMM_WORLD" and region in COLL_OPS:
                sizes = (e.size_sent, e.size_received, attrs(e)["g2g:bytes"], attrs(e)["g2g:recv_bytes"])
                if region == "MPI_Allreduce" and sizes[:2] == (48, 48):          # the MPI_IN_PLACE one
                    assert sizes == (48, 48, 16, 16)
                elif region == "MPI_Barrier" or (region == "MPI_Allreduce" and sizes[2] == 4):
                    continue                                                     # the int sums
                else:
                    assert sizes == expected_sizes(region[4:], r), (r, region, sizes)
        # nonblocking collectives carry the same sizes as their blocking twins
        started = {}
        cur = None
        for e in a.rank(r):
            kind = type(e).__name__
            if kind == "Enter":
                cur = e.region.name
            elif kind == "NonBlockingCollectiveRequest":
                started[e.request_id] = "MPI_" + cur[5].upper() + cur[6:]
            elif kind == "NonBlockingCollectiveComplete":
                region = started.pop(e.request_id)
                assert op_name(e) == COLL_OPS[region]
                sizes = (e.size_sent, e.size_received, attrs(e)["g2g:bytes"], attrs(e)["g2g:recv_bytes"])
                assert sizes == expected_sizes(region[4:], r), (r, region, sizes)
        assert not started
    check_p2p_matching(a)
    comms = {name: (comm_members(c), c.parent.name if c.parent else None) for name, c in a.comms.items()}
    assert len(comms) == 12, comms
    by_creator = defaultdict(list)
    for name, (members, parent) in comms.items():
        m = re.match(r"Comm \d+ \((\w+)\)", name)
        if m:
            by_creator[m.group(1)].append((members, parent))
    dup = next(n for n in comms if n.endswith("(MPI_Comm_dup)"))
    dupi = next(n for n in comms if n.endswith("(MPI_Comm_dup_with_info)"))
    assert by_creator["MPI_Comm_dup"] == [([0, 1, 2, 3], "MPI_COMM_WORLD")]
    assert by_creator["MPI_Comm_dup_with_info"] == [([0, 1, 2, 3], dup)]
    # MPI_Comm_split(dupi, rank < 3, size - rank): comm ranks follow the key
    assert sorted(by_creator["MPI_Comm_split"]) == [([2, 1, 0], dupi), ([3], dupi)]
    assert by_creator["MPI_Comm_split_type"] == [([0, 1, 2, 3], "MPI_COMM_WORLD")]
    assert by_creator["MPI_Comm_create"] == [([0, 2], "MPI_COMM_WORLD")]
    assert by_creator["MPI_Comm_create_group"] == [([0, 2], "MPI_COMM_WORLD")]
    assert by_creator["MPI_Cart_create"] == [([0, 1, 2, 3], "MPI_COMM_WORLD")]
    cart = [n for n in comms if "MPI_Cart_create" in n][0]
    assert sorted(by_creator["MPI_Cart_sub"]) == [([0, 2], cart), ([1, 3], cart)]


# ------------------------------------------------------------------------------------------------
# GPU stand-ins: buffer memory space from libcuda, memcpy activity from CUPTI
# ------------------------------------------------------------------------------------------------
def test_fake_gpu(tracer_lib, ping_exe, fakes, tmp_path):
    a = Archive(run_traced(tracer_lib, tmp_path / "trace", MPIRUN + [str(ping_exe)],
                           G2G_LIBCUDA=str(fakes["fake_cuda"]), G2G_LIBCUPTI=str(fakes["fake_cupti"])))
    check_common(a, sum(C_REGIONS.values()))
    for r in range(NP):
        for e in a.rank(r):
            if type(e).__name__ in MSG_RECORDS:
                # Isend buffers are "device" (1), Irecv buffers page-locked host memory ("pinned", 4)
                want = {"MpiIsend": 1, "MpiIrecv": 4}.get(type(e).__name__, 0)
                assert attrs(e)["g2g:mem_space"] == want, (r, e)
        gpu = a.events[f"CUDA memcpy (rank {r})"]
        assert Counter(type(e).__name__ for e in gpu) == {"RmaGet": r + 1, "RmaOpCompleteBlocking": r + 1}
        for e in gpu:
            assert e.win.name == f"CUDA memcpy (rank {r})"
            if type(e).__name__ == "RmaGet":
                assert e.bytes == 4096 and e.remote == 0
                assert attrs(e) == {"g2g:copy_kind": 0, "g2g:stream": 7, "g2g:async": 0}
        times = [e.time for e in gpu]
        assert times == sorted(times)
        # copies were issued between MPI_Init and the first send/recv: the clock conversion puts
        # their start there (the fake CUPTI's clock is 500 s ahead)
        starts = [e.time for e in gpu if type(e).__name__ == "RmaGet"]
        init_leave = a.of(r, "Leave")[0].time
        first_p2p = min(e.time for e in a.of(r, "MpiSend") + a.of(r, "MpiRecv"))
        assert init_leave <= min(starts) and max(starts) <= first_p2p
    import otf2
    assert a.locations["CUDA memcpy (rank 0)"].type == otf2.LocationType.GPU    # = ACCELERATOR_STREAM
    # the importer names the memory spaces: page-locked receive buffers are "pinned"
    from g2gsim.readers.otf2_reader import read_otf2
    df = read_otf2(a.path, processes=1).to_pandas()
    assert set(df[df.op == "Isend"].mem_space) == {"device"}
    assert set(df[df.op == "Irecv"].mem_space) == {"pinned"}
    assert set(df[df.op.isin(["Send", "Recv"])].mem_space) == {"host"}


def test_fake_gpu_streams(tracer_lib, fakes, build_dir, tmp_path):
    """CUDA API calls through the CUPTI callback API (fake): launches, event record/sync, stream
    sync/wait, device sync, stream creation with priorities and async copies are Enter/Leave regions
    on the rank's location with g2g:stream / g2g:event / g2g:corr / g2g:priority; the kernels the
    fake GPU ran are Enter/Leave of their own regions on one location per stream, joined to their
    launch by g2g:corr (the nested driver call's correlation id is mapped to the runtime call's)."""
    import otf2
    app = _cc(build_dir / "gpu_streams_app", TRACER / "test" / "gpu_streams_app.c")
    a = Archive(run_traced(tracer_lib, tmp_path / "trace", MPIRUN + [str(app), "overlap", "2"],
                           G2G_LIBCUDA=str(fakes["fake_cuda"]), G2G_LIBCUPTI=str(fakes["fake_cupti"])))
    api = Counter({"cudaStreamCreateWithPriority": 2, "cudaLaunchKernel": 5, "cudaEventRecord": 2,
                   "cudaEventSynchronize": 2, "cudaStreamSynchronize": 2, "cudaStreamWaitEvent": 1,
                   "cudaMemcpyAsync": 1, "cudaDeviceSynchronize": 1})
    mpi = Counter({"MPI_Init": 1, "MPI_Irecv": 4, "MPI_Isend": 4, "MPI_Waitall": 2, "MPI_Finalize": 1})
    check_common(a, sum(api.values()) + sum(mpi.values()))
    check_p2p_matching(a)
    for r in range(NP):
        assert Counter(a.regions_entered(r)) == api + mpi, r
        # no nested driver call (cuLaunchKernel, cuMemcpyDtoHAsync) and no unrecorded call
        corr = []
        for e in a.rank(r):
            kind = type(e).__name__
            at = attrs(e)
            name = e.region.name if kind in ("Enter", "Leave") else None
            if kind == "Enter" and name in ("cudaLaunchKernel", "cudaMemcpyAsync"):
                corr.append(at["g2g:corr"])
            elif kind == "Enter" and name == "cudaEventRecord":
                assert at == {"g2g:stream": 13, "g2g:event": 1}
            elif kind == "Enter" and name == "cudaEventSynchronize":
                assert at == {"g2g:event": 1}
            elif kind == "Enter" and name == "cudaStreamSynchronize":
                assert at == {"g2g:stream": 14}
            elif kind == "Enter" and name == "cudaStreamWaitEvent":
                assert at == {"g2g:stream": 14, "g2g:event": 1}
            elif kind == "Leave" and name == "cudaStreamCreateWithPriority":
                assert at in ({"g2g:stream": 13, "g2g:priority": -1}, {"g2g:stream": 14, "g2g:priority": 0})
        assert len(set(corr)) == 6
        b = a.events[f"CUDA[0:13] (rank {r})"]
        i = a.events[f"CUDA[0:14] (rank {r})"]
        assert [(type(e).__name__, e.region.name) for e in b] == [("Enter", "boundary"), ("Leave", "boundary")] * 2
        assert [e.region.name for e in i if type(e).__name__ == "Enter"] == ["interior", "interior", "final"]
        for loc, prio in ((b, -1), (i, 0)):
            assert a.locations[f"CUDA[0:{13 if prio else 14}] (rank {r})"].type == otf2.LocationType.GPU
            times = [e.time for e in loc]
            assert times == sorted(times)
            enters = [e for e in loc if type(e).__name__ == "Enter"]
            for e in enters:
                at = attrs(e)
                assert at["g2g:priority"] == prio and at["g2g:stream"] == (13 if prio else 14)
                assert at["g2g:corr"] in corr
            durs = [lv.time - en.time for en, lv in zip(enters, [e for e in loc if type(e).__name__ == "Leave"])]
            assert durs == ([100_000] * 2 if prio else [1_000_000, 1_000_000, 50_000])
        # the async copy on the boundary stream carries its call's correlation id
        (put,) = [e for e in a.events[f"CUDA memcpy (rank {r})"] if type(e).__name__ == "RmaPut"]
        assert attrs(put) == {"g2g:copy_kind": 1, "g2g:stream": 13, "g2g:async": 1, "g2g:corr": corr[-1]}
    kernel_regions = [n for n in a.regions if n in ("boundary", "interior", "final")]
    assert sorted(kernel_regions) == ["boundary", "final", "interior"]     # unified over the ranks


def test_no_cuda_means_host(tracer_lib, ping_exe, tmp_path):
    """A libcuda that cannot be loaded (and no CUPTI) leaves every buffer on the host, no GPU location."""
    a = Archive(run_traced(tracer_lib, tmp_path / "trace", MPIRUN + [str(ping_exe)],
                           G2G_LIBCUDA=str(tmp_path / "missing-libcuda.so"),
                           G2G_LIBCUPTI=str(tmp_path / "missing-libcupti.so")))
    assert not [n for n in a.locations if "CUDA" in n]
    assert all(attrs(e)["g2g:mem_space"] == 0 for r in range(NP) for e in a.rank(r)
               if type(e).__name__ in MSG_RECORDS)


def check_gpu_ping(a: "Archive") -> None:
    """What gpu_ping.c must record on a real NVIDIA GPU: real libcuda classification of the buffers
    and the CUPTI copies (3 per rank)."""
    for r in range(2):
        (bcast, allred) = a.of(r, "MpiCollectiveEnd")
        assert bcast.communicator.name == "MPI_COMM_SELF" and attrs(bcast)["g2g:mem_space"] == 1    # device
        assert op_name(allred) == "ALLREDUCE" and attrs(allred)["g2g:mem_space"] == 2              # managed
        p2p = a.of(r, "MpiSend") + a.of(r, "MpiRecv")
        assert len(p2p) == 1 and attrs(p2p[0])["g2g:mem_space"] == 0                               # host
        gpu = a.events[f"CUDA memcpy (rank {r})"]
        kinds = [attrs(e)["g2g:copy_kind"] for e in gpu if type(e).__name__ in ("RmaGet", "RmaPut")]
        assert kinds == ([0, 1, 2] if r == 0 else [0, 0, 2])      # h2d, d2h|h2d, d2d
        assert [attrs(e)["g2g:async"] for e in gpu if type(e).__name__ in ("RmaGet", "RmaPut")] == [0, 0, 1]
        done = [e.time for e in gpu if type(e).__name__ == "RmaOpCompleteBlocking"]
        if r == 0:   # the synchronous D2H ended before the send of its data
            assert done[1] <= a.of(0, "MpiSend")[0].time


@pytest.mark.parametrize("machine", ["h200", "h100"])
def test_recording_of_gpu_ping(tmp_path, machine):
    """Archives recorded on real GPUs (tests/data/gpu-ping-<machine>-otf2/run_device.sh: 2 ranks on
    2 GPUs of the 4 x H200 machine; 2 ranks sharing the one GPU of an H100 machine): device, managed
    and host buffers classified by the real libcuda, copies from the real CUPTI."""
    import tarfile
    with tarfile.open(ROOT / f"tests/data/gpu-ping-{machine}-otf2/gpu-ping-{machine}-otf2.tar.gz") as t:
        t.extractall(tmp_path, filter="data")
    check_gpu_ping(Archive(tmp_path / "trace" / "traces.otf2"))
    # and the importer turns it into native operations with those memory spaces
    from g2gsim.readers.otf2_reader import read_otf2
    df = read_otf2(tmp_path / "trace" / "traces.otf2", processes=1).to_pandas()
    assert set(df[df.op == "Bcast"].mem_space) == {"device"}
    assert set(df[df.op == "Allreduce"].mem_space) == {"managed"}
    assert set(df[df.op.isin(["Send", "Recv"])].mem_space) == {"host"}
    assert (df.op == "Memcpy").sum() >= 4


@pytest.mark.gpu
def test_real_gpu(tracer_lib, build_dir, tmp_path):
    """On a machine with an NVIDIA GPU (--rungpu): real libcuda classification and CUPTI copies.

    The MPI need not be CUDA-aware (device buffers only go to MPI_Bcast on MPI_COMM_SELF).  Put the
    directory of libcupti.so / libcudart.so on LD_LIBRARY_PATH or set G2G_LIBCUPTI / G2G_LIBCUDART.
    """
    exe = _cc(build_dir / "gpu_ping", DATA / "gpu_ping.c")
    extra = {k: os.environ[k] for k in ("LD_LIBRARY_PATH", "G2G_LIBCUPTI", "G2G_LIBCUDART") if k in os.environ}
    mpirun = [c if c != str(NP) else "2" for c in MPIRUN]
    if "LD_LIBRARY_PATH" in extra:
        mpirun = mpirun[:1] + ["-x", "LD_LIBRARY_PATH"] + mpirun[1:]
    check_gpu_ping(Archive(run_traced(tracer_lib, tmp_path / "trace", mpirun + [str(exe)], **extra)))


# ------------------------------------------------------------------------------------------------
# Fortran (mpif.h / use mpi bindings) and mpi4py
# ------------------------------------------------------------------------------------------------
def test_fortran(tracer_lib, build_dir, tmp_path):
    env = _fortran_env()
    if env is None:
        pytest.skip("no Fortran compiler for mpifort (Debian: gfortran)")
    exe = _cc(build_dir / "pingf", DATA / "ping.f90", compiler="mpifort", env=env)
    a = Archive(run_traced(tracer_lib, tmp_path / "trace", MPIRUN + [str(exe)]))
    regions = Counter({"MPI_Init": 1, "MPI_Send": 1, "MPI_Recv": 1, "MPI_Irecv": 1, "MPI_Isend": 1, "MPI_Waitall": 1,
                       "MPI_Bcast": 1, "MPI_Allreduce": 1, "MPI_Comm_split": 1, "MPI_Barrier": 1,
                       "MPI_Comm_free": 1, "MPI_Finalize": 1})
    check_common(a, sum(regions.values()))
    check_p2p_matching(a)
    for r in range(NP):
        assert Counter(a.regions_entered(r)) == regions, r
        k = a.kinds(r)
        assert (k["MpiSend"], k["MpiRecv"], k["MpiIsend"], k["MpiIrecv"], k["MpiIsendComplete"]) == (1, 1, 1, 1, 1)
        ends = a.of(r, "MpiCollectiveEnd")
        assert [op_name(e) for e in ends] == ["BCAST", "ALLREDUCE", "CREATE_HANDLE", "BARRIER", "DESTROY_HANDLE"]
        # MPI_ALLREDUCE(MPI_IN_PLACE, c, 4, MPI_DOUBLE_PRECISION): Score-P counts N-1 blocks of 32 bytes
        assert (ends[1].size_sent, ends[1].size_received) == (96, 96)
        assert comm_members(ends[3].communicator) == [p for p in range(NP) if p % 2 == r % 2]
        assert a.of(r, "MpiSend")[0].msg_length == 80


def test_mpi4py(tracer_lib, tmp_path):
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        pytest.fail("mpi4py is not installed: the Makefile must `pip install mpi4py` (against Open MPI)")
    a = Archive(run_traced(tracer_lib, tmp_path / "trace", MPIRUN + [sys.executable, str(DATA / "ping.py")]))
    regions = Counter({"MPI_Init_thread": 1, "MPI_Send": 1, "MPI_Recv": 1, "MPI_Irecv": 1, "MPI_Isend": 1,
                       "MPI_Waitall": 1, "MPI_Bcast": 1, "MPI_Allreduce": 2, "MPI_Comm_split": 1,
                       "MPI_Comm_free": 1, "MPI_Finalize": 1})
    check_common(a, sum(regions.values()))
    check_p2p_matching(a)
    for r in range(NP):
        assert Counter(a.regions_entered(r)) == regions, r
        k = a.kinds(r)
        assert (k["MpiSend"], k["MpiRecv"], k["MpiIsend"], k["MpiIrecv"], k["MpiIsendComplete"], k["MpiCollectiveEnd"]) == \
            (1, 1, 1, 1, 1, 5)
        assert a.of(r, "MpiSend")[0].msg_length == 128
        ends = a.of(r, "MpiCollectiveEnd")
        assert [op_name(e) for e in ends] == ["BCAST", "ALLREDUCE", "CREATE_HANDLE", "ALLREDUCE", "DESTROY_HANDLE"]
        assert all(attrs(e)["g2g:mem_space"] == 0 for e in a.rank(r) if type(e).__name__ in MSG_RECORDS)


# ------------------------------------------------------------------------------------------------
# record.py
# ------------------------------------------------------------------------------------------------
def test_record_errors(tracer_lib, tmp_path, monkeypatch):
    from g2gsim import record as rec
    monkeypatch.setenv("G2G_TRACER_LIB", str(tmp_path / "nope.so"))
    with pytest.raises(FileNotFoundError, match="G2G_TRACER_LIB=.*does not exist"):
        rec.find_library()
    monkeypatch.setenv("G2G_TRACER_LIB", str(tracer_lib))
    assert rec.find_library() == tracer_lib.resolve()
    with pytest.raises(ValueError):
        rec.record(tmp_path / "t", [])
    with pytest.raises(FileNotFoundError):
        rec.record(tmp_path / "t", ["no-such-launcher-g2g"])
    # a failing run
    with pytest.raises(RuntimeError, match="exit status"):
        rec.record(tmp_path / "t", MPIRUN + ["false"], env=RUN_ENV)
    # a run that never initialises MPI writes no trace
    with pytest.raises(RuntimeError, match="wrote no trace"):
        rec.record(tmp_path / "t2", ["true"])


def test_record_command_lines(tracer_lib, tmp_path):
    from g2gsim.record import launcher_kind, traced_command
    assert launcher_kind("mpirun") == "openmpi"
    cmd, env = traced_command(["mpirun", "-np", "2", "./app"], tracer_lib, tmp_path, {"G2G_LIBCUDA": "x"})
    assert cmd[:2] == ["mpirun", "-x"] and cmd[2] == f"LD_PRELOAD={tracer_lib}"
    assert "G2G_TRACE_DIR" in cmd and "G2G_LIBCUDA" in cmd and cmd[-3:] == ["-np", "2", "./app"]
    assert env["G2G_TRACE_DIR"] == str(tmp_path) and "LD_PRELOAD" not in env
    cmd, env = traced_command(["./app", "1"], tracer_lib, tmp_path, {"LD_PRELOAD": "/x.so"})
    assert cmd == ["./app", "1"] and env["LD_PRELOAD"] == f"{tracer_lib}:/x.so"

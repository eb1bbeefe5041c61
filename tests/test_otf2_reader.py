"""OTF2 (Score-P) import: every corpus archive, synthetic archives with every converted record kind,
errors, and the read speed of a ~1M-event archive (slow).

Expected counts come from two independent sources: the numbers stated in the corpus PROVENANCE
files, and a raw walk over the events with the ``otf2`` package's own reader (``_raw``), which shares
no code with the converter.
"""
from __future__ import annotations

import collections
import shutil
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

otf2 = pytest.importorskip("otf2")

from g2gsim.readers import otf2_reader  # noqa: E402
from g2gsim.readers.otf2_events import coll_sizes  # noqa: E402
from g2gsim.readers.otf2_reader import check_matching, read_otf2  # noqa: E402
from g2gsim.testing.otf2_synth import SynthArchive, write_synthetic  # noqa: E402
from g2gsim.trace import Trace, TraceBuilder, TraceError  # noqa: E402

TRACES = {
    "traces-32": "tracer/examples/stencil4d-otf/traces-32",
    "traces-64": "tracer/examples/stencil4d-otf/traces-64",
    "ping-pong": "pipit/pipit/tests/data/ping-pong-otf2",
    "ping-pong-papi": "pipit/pipit/tests/data/ping-pong-otf2-papi",
    "sst-bcast": "sst-elements/src/sst/elements/ember/tests/addFiles/test_emberotf2",
    "fastotf2-hip": "fastotf2/sample-traces/simple-mi300-example-run",
}
SEND_OPS = ("Send", "Ssend", "Bsend", "Rsend")
COLL_NAME = {"BARRIER": "Barrier", "BCAST": "Bcast", "GATHER": "Gather", "GATHERV": "Gatherv",
             "SCATTER": "Scatter", "SCATTERV": "Scatterv", "ALLGATHER": "Allgather",
             "ALLGATHERV": "Allgatherv", "ALLTOALL": "Alltoall", "ALLTOALLV": "Alltoallv",
             "ALLREDUCE": "Allreduce", "REDUCE": "Reduce", "REDUCE_SCATTER": "Reduce_scatter",
             "SCAN": "Scan", "EXSCAN": "Exscan", "REDUCE_SCATTER_BLOCK": "Reduce_scatter_block"}


# ------------------------------------------------------------------------------------ helpers
def _raw(anchor) -> dict:
    """Independent counts from the otf2 package's high-level reader."""
    kinds = collections.Counter()
    coll = collections.Counter()
    nbc = collections.Counter()
    enters = collections.Counter()
    send_bytes = recv_bytes = irecv_bytes = isend_bytes = 0
    kernels = 0
    with otf2.reader.open(str(anchor)) as tr:
        d = tr.definitions
        mpi_locs = [g for g in d.groups if g.group_type == otf2.GroupType.COMM_LOCATIONS
                    and g.paradigm == otf2.Paradigm.MPI]
        nranks = len(mpi_locs[0].members) if mpi_locs else sum(
            1 for lg in d.location_groups if lg.location_group_type == otf2.LocationGroupType.PROCESS)
        gpu_locs = {l for l in d.locations if l.type == otf2.LocationType.GPU}
        for loc, ev in tr.events:
            name = type(ev).__name__
            kinds[name] += 1
            if name == "MpiSend":
                send_bytes += ev.msg_length
            elif name == "MpiIsend":
                isend_bytes += ev.msg_length
            elif name == "MpiRecv":
                recv_bytes += ev.msg_length
            elif name == "MpiIrecv":
                irecv_bytes += ev.msg_length
            elif name == "MpiCollectiveEnd":
                coll[str(ev.collective_op).split(".")[-1]] += 1
            elif name == "NonBlockingCollectiveComplete":
                nbc[str(ev.collective_op).split(".")[-1]] += 1
            elif name == "Enter":
                enters[ev.region.name] += 1
            elif name == "Leave" and loc in gpu_locs and \
                    ev.region.region_role == otf2.RegionRole.KERNEL:
                kernels += 1
        comms = [(c.name, len(c.group.members)) for c in d.comms
                 if c.group.paradigm == otf2.Paradigm.MPI]
    return dict(kinds=kinds, coll=coll, nbc=nbc, enters=enters, send_bytes=send_bytes,
                recv_bytes=recv_bytes, irecv_bytes=irecv_bytes, isend_bytes=isend_bytes, kernels=kernels, nranks=nranks,
                comms=comms)


def _read(anchor, **kw) -> Trace:
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # no matching warnings expected
        return read_otf2(anchor, **kw)


def _ops(trace: Trace) -> collections.Counter:
    return collections.Counter(trace.op_counts())


def _df(trace: Trace):
    return trace.table.to_pandas()


def _assert_agrees_with_raw(trace: Trace, raw: dict) -> None:
    """Converted rows against the raw record counts."""
    k = raw["kinds"]
    ops = _ops(trace)
    df = _df(trace)
    assert trace.nranks == raw["nranks"]
    cancelled = k["MpiRequestCancelled"]
    assert sum(ops[o] for o in SEND_OPS) + ops["Sendrecv"] == k["MpiSend"]
    assert ops["Recv"] + ops["Sendrecv"] == k["MpiRecv"]
    assert ops["Isend"] + ops["Issend"] == k["MpiIsend"]
    assert ops["Irecv"] == k["MpiIrecvRequest"] - cancelled
    # every completion record is one request of a Wait/Waitall row
    waits = df[df.op.isin(["Wait", "Waitall", "Waitany", "Waitsome"])]
    nreq = int(waits.reqs.map(len).sum()) if len(waits) else 0
    assert nreq == k["MpiIsendComplete"] + k["MpiIrecv"] + k["NonBlockingCollectiveComplete"]
    for cop, n in raw["coll"].items():
        if cop in COLL_NAME:
            assert ops[COLL_NAME[cop]] == n, cop
    for cop, n in raw["nbc"].items():
        name = COLL_NAME[cop]
        assert ops["I" + name[0].lower() + name[1:]] == n, cop
    assert ops["Init"] == raw["enters"]["MPI_Init"] + raw["enters"]["MPI_Init_thread"]
    assert ops["Finalize"] == raw["enters"]["MPI_Finalize"]
    # bytes
    sends = df[df.op.isin(SEND_OPS + ("Sendrecv",))]
    assert int(sends.bytes.sum()) == raw["send_bytes"]
    assert int(df[df.op.isin(["Isend", "Issend"])].bytes.sum()) == raw["isend_bytes"]
    recvs = df[df.op.isin(["Recv", "Sendrecv"])]
    assert int(recvs.recv_bytes.sum()) == raw["recv_bytes"]
    assert int(df[df.op == "Irecv"].recv_bytes.sum()) == raw["irecv_bytes"]
    assert ops["Memcpy"] == k["RmaGet"] + k["RmaPut"]
    # communicators: every MPI communicator with members is one of ours, with as many ranks;
    # MPI_COMM_SELF (no members in OTF2) appears once per rank that uses it
    ours = {c.name: (trace.nranks if c.members is None else len(c.members)) for c in trace.comms}
    for name, size in raw["comms"]:
        if size:
            assert ours.get(name) == size, (name, ours)
    selfs = [n for n in ours if n.startswith("MPI_COMM_SELF (rank ")]
    implicit_world = not any(name == "MPI_COMM_WORLD" for name, _ in raw["comms"])  # no MPI
    assert len(ours) == len([1 for _, size in raw["comms"] if size]) + len(selfs) + implicit_world
    assert trace.import_stats["gpu_kernels"] == raw["kernels"]
    # every rank has contiguous seq and rows in time order where the host timeline is concerned
    for r, g in df.groupby("rank"):
        assert list(g.seq) == list(range(len(g)))
        # (an Untraced row spans the measurement-off period inside the host time before it)
        host = g[~g.op.isin(["Memcpy", "Untraced"])]
        assert np.all(np.diff(host.t_start_ns.to_numpy()) >= 0)
    assert (df[df.op == "Compute"].dur_ns >= 0).all()


def _roundtrip(trace: Trace, tmp_path: Path) -> Trace:
    trace.validate()
    p = trace.write(tmp_path / "t.g2g.parquet")
    back = Trace.read(p)
    back.validate()
    assert back.nranks == trace.nranks
    assert [c.to_json() for c in back.comms] == [c.to_json() for c in trace.comms]
    assert back.buffers == trace.buffers and back.source == trace.source
    a = trace.table.to_pandas().sort_values(["rank", "seq"]).reset_index(drop=True)
    b = back.table.to_pandas().sort_values(["rank", "seq"]).reset_index(drop=True)
    for col in a.columns:
        assert a[col].astype(str).tolist() == b[col].astype(str).tolist(), col
    return back


# ------------------------------------------------------------------------------------ corpus
@pytest.mark.parametrize("name", sorted(TRACES))
def test_corpus_trace_imports(corpus, name, tmp_path):
    anchor = corpus / TRACES[name] / "traces.otf2"
    raw = _raw(anchor)
    trace = _read(anchor.parent)                 # the directory works as anchor too
    _assert_agrees_with_raw(trace, raw)
    assert check_matching(trace) == []
    assert trace.import_stats["events"] <= sum(raw["kinds"].values())
    # Score-P and the other corpus tracers record no buffer space: host is an assumption (issue 23)
    assert trace.buffers == "assumed-host"
    assert trace.source.startswith("otf2_reader: ")
    # none of these programs uses a communicator other than MPI_COMM_WORLD
    assert [c.to_json() for c in trace.comms] == [
        {"id": 0, "name": "MPI_COMM_WORLD", "members": None}]
    _roundtrip(trace, tmp_path)


def test_every_corpus_archive_is_covered(corpus):
    full = corpus.require_full()
    found = {str(p.parent.relative_to(full)) for p in full.rglob("*.otf2")}
    assert found == set(TRACES.values())


def test_stencil_traces32_hard_numbers(corpus):
    anchor = corpus / TRACES["traces-32"] / "traces.otf2"
    raw = _raw(anchor)
    k = raw["kinds"]
    assert (k["MpiIrecvRequest"], k["MpiIrecv"], k["MpiSend"]) == (512, 512, 512)
    assert raw["coll"] == {"BARRIER": 96}
    t = _read(anchor)
    ops = _ops(t)
    assert t.nranks == 32
    assert (ops["Irecv"], ops["Send"], ops["Barrier"], ops["Init"]) == (512, 512, 96, 32)
    assert ops["Waitall"] == 64                  # 8 receives completed per MPI_Waitall
    df = _df(t)
    assert set(df[df.op == "Waitall"].reqs.map(len)) == {8}
    assert int(df[df.op == "Send"].bytes.sum()) == 67_108_864
    assert set(df[df.op == "Send"].bytes) == {131_072}
    assert set(df[df.op == "Irecv"].recv_bytes) == {131_072}
    assert [c.to_json() for c in t.comms] == [{"id": 0, "name": "MPI_COMM_WORLD", "members": None}]
    # MeasurementOnOff periods are not compute: rank 0's first gap is mostly "off"
    r0 = df[(df["rank"] == 0) & (df.op == "Compute")].iloc[0]
    assert r0.dur_ns < r0.t_end_ns - r0.t_start_ns
    # every Irecv is completed by exactly one Waitall of its rank
    for r, g in df.groupby("rank"):
        posted = sorted(g[g.op == "Irecv"].req)
        waited = sorted(q for qs in g[g.op == "Waitall"].reqs for q in qs)
        assert posted == waited


def test_stencil_traces64_counts_from_raw(corpus):
    anchor = corpus / TRACES["traces-64"] / "traces.otf2"
    raw = _raw(anchor)
    k = raw["kinds"]
    t = _read(anchor)
    ops = _ops(t)
    assert t.nranks == 64
    assert ops["Send"] == k["MpiSend"] == 1024
    assert ops["Irecv"] == k["MpiIrecvRequest"] == k["MpiIrecv"]
    assert ops["Barrier"] == raw["coll"]["BARRIER"]
    assert int(_df(t).query("op == 'Send'").bytes.sum()) == 268_435_456 == raw["send_bytes"]


def test_pingpong(corpus):
    t = _read(corpus / TRACES["ping-pong"])
    ops = _ops(t)
    assert t.nranks == 2
    assert (ops["Send"], ops["Recv"], ops["Init"], ops["Finalize"]) == (16, 16, 2, 2)
    df = _df(t)
    assert int(df[df.op == "Send"].bytes.sum()) == 8_355_840
    r0 = df[df["rank"] == 0]
    p2p = r0[r0.op.isin(["Send", "Recv"])]
    assert list(p2p.op[:4]) == ["Send", "Recv", "Send", "Recv"]
    assert list(p2p[p2p.op == "Send"].bytes) == [16384 << i for i in range(8)]
    assert set(p2p[p2p.op == "Send"].tag) == {10} and set(p2p[p2p.op == "Recv"].tag) == {20}
    # ping-pong's MPI_COMM_WORLD is OTF2 comm 1 (comm 0 is Score-P's thread communicator)
    assert [c.name for c in t.comms] == ["MPI_COMM_WORLD"]
    papi = _read(corpus / TRACES["ping-pong-papi"])
    assert _ops(papi) == ops                     # the metric records change nothing


def test_sst_bcast_and_comm_lifecycle(corpus):
    t = _read(corpus / TRACES["sst-bcast"])
    ops = _ops(t)
    assert t.nranks == 4
    assert (ops["Bcast"], ops["Init"], ops["Finalize"]) == (4, 4, 4)
    assert set(ops) == {"Bcast", "Init", "Finalize", "Compute"}   # CREATE/DESTROY_HANDLE: none
    b = _df(t).query("op == 'Bcast'")
    # Score-P: root sent 4 * 4096 and received 4096; the buffer is 4096 on every rank
    assert set(b.bytes) == {4096} and set(b.recv_bytes) == {0}
    assert set(b.root) == {0} and set(b.comm_id) == {0}
    assert [c.name for c in t.comms] == ["MPI_COMM_WORLD"]


def test_fastotf2_gpu_only_process(corpus):
    anchor = corpus / TRACES["fastotf2-hip"] / "traces.otf2"
    raw = _raw(anchor)
    t = _read(anchor)
    assert t.nranks == 1
    # no MPI: the host timeline from program begin to end; each hipLaunchKernel is a Kernel of the
    # traced GPU duration, each hipEventSynchronize (no event id in Score-P traces) a
    # StreamSynchronize of the stream it waited for; the hipEventRecords (no ids) are dropped
    assert _ops(t) == {"Compute": 5, "Kernel": 2, "StreamSynchronize": 2}
    assert raw["kernels"] == 2
    assert t.import_stats["gpu_kernels"] == 2
    assert '"count":2' in t.source and '"gpu_locations":2' in t.source
    df = _df(t)
    assert list(df.op) == ["Compute", "Kernel", "Compute", "StreamSynchronize"] * 2 + ["Compute"]
    k = df[df.op == "Kernel"]
    # the two GPUs' "HIP[d:0]" streams stay apart; the kernels ran 4.7 s and 1.6 s
    assert list(k.stream) == [0, 1 << 16] and list(df[df.op == "StreamSynchronize"].stream) == [0, 1 << 16]
    assert [round(d / 1e9, 1) for d in k.dur_ns] == [4.7, 1.6]
    # host rows tile the run: Compute, the launch returns, the sync's wait is not Compute
    host = df[df.op != "Kernel"]
    assert (host.t_start_ns.to_numpy()[1:] == host.t_end_ns.to_numpy()[:-1]).all()
    sync = df[df.op == "StreamSynchronize"]
    assert ((sync.t_end_ns - sync.t_start_ns) > 1_000_000_000).all() and (sync.dur_ns == 0).all()
    assert df.t_end_ns.max() - df.t_start_ns.min() > 7_000_000_000
    assert t.import_stats["gpu_calls_without_ids"] == 4


# ------------------------------------------------------------------------------------ synthetic
@pytest.fixture(scope="module")
def synth(tmp_path_factory):
    path = tmp_path_factory.mktemp("synth") / "archive"
    return write_synthetic(path, nranks=4, iterations=3)


def test_synthetic_raw_records(synth):
    raw = _raw(synth.anchor)
    for kind, n in synth.records.items():
        assert raw["kinds"][kind] == n, kind
    assert sum(raw["kinds"].values()) == synth.events


def test_synthetic_conversion(synth, tmp_path):
    t = _read(synth.anchor)
    assert dict(_ops(t)) == synth.ops
    _assert_agrees_with_raw(t, _raw(synth.anchor))
    assert t.import_stats["events"] == synth.events
    assert t.import_stats["cancelled"] == 4
    assert t.import_stats["gpu_kernels"] == synth.kernels
    _roundtrip(t, tmp_path)
    df = _df(t)
    n = t.nranks
    # communicators: world, the even sub-communicator (world ranks), each rank's MPI_COMM_SELF
    cm = {c.name: c for c in t.comms}
    assert cm["MPI_COMM_WORLD"].id == 0 and cm["MPI_COMM_WORLD"].members is None
    assert cm["even ranks"].members == [0, 2]
    for r in range(n):
        assert cm[f"MPI_COMM_SELF (rank {r})"].members == [r]
    # location ids are not ranks: peers are the ring neighbours of the world rank
    for r in range(n):
        g = df[df["rank"] == r]
        assert set(g[g.op == "Isend"].peer) == {(r + 1) % n}
        assert set(g[(g.op == "Irecv") & (g.comm_id == 0)].peer) == {(r - 1) % n}
        sr = g[g.op == "Sendrecv"]
        assert set(sr.peer) == {(r + 1) % n} and set(sr.recv_peer) == {(r - 1) % n}
        assert set(sr.bytes) == {4096} and set(sr.recv_bytes) == {4096}
        self_id = cm[f"MPI_COMM_SELF (rank {r})"].id
        assert set(g[g.op == "Send"].comm_id) == {self_id}
    # Waitall folds the ring Isend + Irecv; Test/Wait on the Iallreduce request
    w = df[df.op == "Waitall"]
    assert set(w.reqs.map(len)) == {2}
    for _, row in df[df.op == "Iallreduce"].iterrows():
        g = df[df["rank"] == row["rank"]]
        nxt = g[g.seq > row.seq]
        assert list(nxt[nxt.op == "Test"].reqs.iloc[0]) == [row.req]
        assert list(nxt[nxt.op == "Wait"].reqs.iloc[0]) == [row.req]
    assert set(df[df.op == "Allreduce"].bytes) == {64}        # Score-P counted 4 blocks of 64
    assert set(df[df.op == "Iallreduce"].bytes) == {128}
    bc = df[df.op == "Bcast"]
    assert set(bc.bytes) == {2048} and set(bc.comm_id) == {cm["even ranks"].id}
    assert set(bc["rank"]) == {0, 2} and set(bc.root) == {0}
    # copies: sync D2H/H2D (stream -1), async D2H on stream 7, one D2D per rank
    mc = df[df.op == "Memcpy"]
    kinds = collections.Counter(zip(mc.copy_kind, mc.stream))
    its = 3
    assert kinds == {("d2h", -1): n * its, ("h2d", -1): n * its, ("d2h", 7): n * its,
                     ("d2d", -1): n}
    assert set(mc[mc.copy_kind == "h2d"].bytes) == {65536}
    # a blocking copy sits between the computes around its cudaMemcpy call
    for r in range(n):
        g = df[df["rank"] == r].reset_index(drop=True)
        for i in g.index[g.op == "Memcpy"]:
            assert g.op[i - 1] == "Compute" and g.op[i + 1] in ("Compute", "Irecv")
    # measurement-off time (iteration 1) is not compute
    comp = df[df.op == "Compute"]
    assert (comp.dur_ns < comp.t_end_ns - comp.t_start_ns).sum() >= n
    assert "notes=" in t.source and '"cancelled":4' in t.source


def test_synthetic_buffers(synth):
    traced = _df(_read(synth.anchor))
    for op, space in synth.traced_mem.items():
        rows = traced[traced.op == op]
        if op == "Irecv":                        # ring receives carry "device", self ones nothing
            rows = rows[rows.comm_id == 0]
        assert set(rows.mem_space) == {space}, op
    assert set(traced[traced.op == "Send"].mem_space) == {"host"}   # no attribute -> host
    inf = _read(synth.anchor, assume_buffers="infer")
    assert inf.buffers == "inferred"
    df = _df(inf)
    dev = df[df.mem_space == "device"]
    assert len(dev) == synth.inferred_device == inf.import_stats["inferred_device"]
    assert collections.Counter(dev.op) == {"Isend": 12, "Irecv": 12, "Send": 12}
    assert set(df[df.op.isin(["Sendrecv", "Allreduce"])].mem_space) == {"host"}
    host = _df(_read(synth.anchor, assume_buffers="host"))
    assert set(host.mem_space) == {"host"}
    device = _read(synth.anchor, assume_buffers="device")
    assert device.buffers == "assumed-device"
    d = _df(device)
    msg = d.op.isin(["Send", "Isend", "Irecv", "Sendrecv", "Allreduce", "Bcast", "Iallreduce"])
    assert set(d[msg].mem_space) == {"device"} and set(d[~msg].mem_space) == {"host"}
    with pytest.raises(ValueError):
        read_otf2(synth.anchor, assume_buffers="gpu")


def test_synthetic_uint8_attribute(tmp_path):
    ex = write_synthetic(tmp_path / "a", nranks=2, iterations=2, mem_attr="uint8", gpu=False)
    df = _df(_read(ex.anchor))
    assert set(df[df.op == "Isend"].mem_space) == {"device"}
    assert set(df[df.op == "Allreduce"].mem_space) == {"managed"}
    assert set(df[df.op == "Sendrecv"].mem_space) == {"host"}
    assert _ops(_read(ex.anchor)) == ex.ops
    noattr = write_synthetic(tmp_path / "b", nranks=2, iterations=1, mem_attr=None, gpu=False)
    assert set(_df(_read(noattr.anchor)).mem_space) == {"host"}


def test_parallel_equals_serial(tmp_path, monkeypatch):
    ex = write_synthetic(tmp_path / "p", nranks=6, iterations=4)
    serial = _read(ex.anchor, processes=1)
    monkeypatch.setattr(otf2_reader, "SERIAL_BELOW_EVENTS", 0)
    par = _read(ex.anchor, processes=3)
    assert par.import_stats["tasks"] > 1
    a, b = _df(serial), _df(par)
    assert len(a) == len(b)
    for col in a.columns:
        assert a[col].astype(str).tolist() == b[col].astype(str).tolist(), col
    assert [c.to_json() for c in serial.comms] == [c.to_json() for c in par.comms]


def test_progress_output(tmp_path, monkeypatch, capsys):
    ex = write_synthetic(tmp_path / "p", nranks=2, iterations=1, gpu=False)
    _read(ex.anchor, progress=True)
    assert "otf2: 1/1 chunks" in capsys.readouterr().err


def test_collective_size_mapping():
    # Score-P's per-rank sizes (scorep_mpi_coll.c) -> the format's buffer sizes, N=4
    assert coll_sizes("Bcast", 4 * 100, 100, 4, 0, True) == (100, 0)
    assert coll_sizes("Bcast", 0, 100, 4, 2, False) == (100, 0)
    assert coll_sizes("Allreduce", 400, 400, 4, 1, False) == (100, 100)
    # MPI_IN_PLACE leaves the own block out; recognisable only when N does not divide the count
    assert coll_sizes("Allreduce", 303, 303, 4, 1, False) == (101, 101)
    assert coll_sizes("Reduce", 100, 400, 4, 0, True) == (100, 100)
    assert coll_sizes("Reduce", 100, 0, 4, 1, False) == (100, 0)
    assert coll_sizes("Gather", 100, 400, 4, 0, True) == (100, 400)
    assert coll_sizes("Gather", 0, 300, 4, 0, True) == (100, 400)         # in place root
    assert coll_sizes("Scatter", 400, 100, 4, 0, True) == (400, 100)
    assert coll_sizes("Scatter", 0, 100, 4, 3, False) == (0, 100)
    assert coll_sizes("Allgather", 400, 400, 4, 2, False) == (100, 400)
    assert coll_sizes("Alltoall", 400, 400, 4, 2, False) == (400, 400)
    assert coll_sizes("Reduce_scatter_block", 400, 400, 4, 2, False) == (400, 100)
    assert coll_sizes("Scan", 2 * 100, 3 * 100, 4, 2, False) == (100, 100)
    assert coll_sizes("Exscan", 100, 200, 4, 2, False) == (100, 100)
    assert coll_sizes("Iallreduce", 400, 400, 4, 0, False) == (100, 100)
    assert coll_sizes("Barrier", 0, 0, 4, 0, False) == (0, 0)


def test_call_flavours_and_odd_records(tmp_path):
    """Ssend/Issend, Waitany, Testall, Mprobe+Mrecv, a record outside any region, a completion
    whose request was posted before the trace, a missing Leave."""
    with SynthArchive(tmp_path / "a", nranks=2, mem_attr=None) as A:
        W = A.world
        for r in range(2):
            A.enter(r, 100, "MPI_Init")
            A.leave(r, 200, "MPI_Init")
        # rank 0: Ssend (tag 1), Issend (tag 2) + Waitany, Send (tag 3) outside any region,
        # Send tag 4 in an MPI_Send whose Leave is missing, then MPI_Finalize
        A.enter(0, 300, "MPI_Ssend")
        A.send(0, 310, 1, W, 1, 8)
        A.leave(0, 320, "MPI_Ssend")
        A.enter(0, 400, "MPI_Issend")
        A.isend(0, 410, 1, W, 2, 16, 5)
        A.leave(0, 420, "MPI_Issend")
        A.enter(0, 500, "MPI_Waitany")
        A.isend_complete(0, 510, 5)
        A.leave(0, 520, "MPI_Waitany")
        A.send(0, 600, 1, W, 3, 24)
        A.enter(0, 700, "MPI_Send")
        A.send(0, 710, 1, W, 4, 32)
        A.enter(0, 800, "MPI_Finalize")
        A.leave(0, 900, "MPI_Finalize")
        # rank 1: Recv tag 1, Testall on two requests (unsuccessful) - the first posted before
        # the trace - then Waitall completing both; Mprobe + Mrecv of tag 3; Recv tag 4
        A.enter(1, 300, "MPI_Recv")
        A.recv(1, 330, 0, W, 1, 8)
        A.leave(1, 340, "MPI_Recv")
        A.enter(1, 350, "MPI_Irecv")
        A.irecv_request(1, 355, 9)
        A.leave(1, 360, "MPI_Irecv")
        A.enter(1, 370, "MPI_Testall")
        A.request_test(1, 375, 8)
        A.request_test(1, 376, 9)
        A.leave(1, 380, "MPI_Testall")
        A.enter(1, 450, "MPI_Waitall")
        A.irecv(1, 460, 0, W, 2, 16, 8)          # request 8 was posted before the trace
        A.irecv(1, 470, 0, W, 5, 40, 9)          # nobody sends tag 5
        A.leave(1, 480, "MPI_Waitall")
        A.enter(1, 610, "MPI_Mprobe")
        A.probe(1, 620, 0, W, 3, 77)
        A.leave(1, 630, "MPI_Mprobe")
        A.enter(1, 640, "MPI_Mrecv")
        A.mrecv(1, 650, 77, 24)
        A.leave(1, 660, "MPI_Mrecv")
        A.enter(1, 720, "MPI_Recv")
        A.recv(1, 730, 0, W, 4, 32)
        A.leave(1, 740, "MPI_Recv")
        A.enter(1, 800, "MPI_Finalize")
        A.leave(1, 900, "MPI_Finalize")
    with pytest.warns(UserWarning, match="unmatched receive: rank 1 <- peer 0"):
        t = read_otf2(A.anchor)
    df = _df(t)
    r0 = df[(df["rank"] == 0) & (df.op != "Compute")]
    assert list(r0.op) == ["Init", "Ssend", "Issend", "Wait", "Send", "Send", "Finalize"]
    assert list(r0.tag[1:6]) == [1, 2, -1, 3, 4]
    out = r0[r0.tag == 3].iloc[0]
    assert out.t_start_ns == out.t_end_ns                 # record outside any MPI region
    unclosed = r0[r0.tag == 4].iloc[0]
    assert unclosed.t_end_ns == r0[r0.op == "Finalize"].iloc[0].t_start_ns
    r1 = df[(df["rank"] == 1) & (df.op != "Compute")]
    assert list(r1.op) == ["Init", "Recv", "Irecv", "Testall", "Irecv", "Waitall", "Recv",
                           "Recv", "Finalize"]
    assert list(r1[r1.op == "Testall"].reqs.iloc[0]) == [8, 9]
    assert list(r1[r1.op == "Waitall"].reqs.iloc[0]) == [8, 9]
    late = r1[(r1.op == "Irecv") & (r1.req == 8)].iloc[0]  # emitted where it completed
    assert (late.peer, late.tag, late.recv_bytes) == (0, 2, 16)
    m = r1[(r1.op == "Recv") & (r1.tag == 3)].iloc[0]
    assert (m.peer, m.recv_bytes) == (0, 24)
    assert t.import_stats["irecv_without_request"] == 1
    assert t.import_stats["unclosed_mpi_regions"] == 1
    probs = check_matching(t)
    assert len(probs) == 1 and "tag 5" in probs[0] and "rank 1 <- peer 0" in probs[0]


def test_tracer_attributes(tmp_path):
    """The g2g:* attributes of g2gsim's tracer: contiguity, exact collective sizes, copy kind,
    stream and synchrony of CUDA copies (copies matched to their completion by matching id)."""
    with SynthArchive(tmp_path / "a", nranks=2, gpu=True, mem_attr="uint8",
                      tracer_attrs=True) as A:
        W = A.world
        for r in range(2):
            A.enter(r, 100, "MPI_Init")
            A.leave(r, 200, "MPI_Init")
        A.enter(0, 300, "MPI_Send")
        A.send(0, 310, 1, W, 1, 100, mem="device", extra={"g2g:contiguous": 0})
        A.leave(0, 400, "MPI_Send")
        A.enter(1, 300, "MPI_Recv")
        A.recv(1, 390, 0, W, 1, 100, mem="host", extra={"g2g:contiguous": 1})
        A.leave(1, 400, "MPI_Recv")
        for r in range(2):   # an in-place Allreduce of 64 bytes on 2 ranks: Score-P says 1 * 64
            A.enter(r, 500, "MPI_Allreduce")
            A.coll_begin(r, 500)
            A.coll_end(r, 800, otf2.CollectiveOp.ALLREDUCE, W, 0xFFFFFFFF, 64, 64, mem="host",
                       extra={"g2g:bytes": 64, "g2g:recv_bytes": 64, "g2g:contiguous": 1})
            A.leave(r, 900, "MPI_Allreduce")
            A.enter(r, 1000, "MPI_Finalize")
            A.leave(r, 1100, "MPI_Finalize")
        # rank 0's copies: async H2D on stream 3 (issued in the compute gap), a synchronous D2D
        # that started late inside the Allreduce (kept, before it), an async D2H inside the
        # Allreduce (the MPI library's own: dropped); completions out of order
        A.rma_get(0, 420, 0, 4096, mid=1, extra={"g2g:copy_kind": 0, "g2g:stream": 3,
                                                 "g2g:async": 1})
        A.rma_put(0, 600, 1, 512, mid=2, extra={"g2g:copy_kind": 2, "g2g:stream": 0,
                                                "g2g:async": 0})
        A.rma_complete(0, 650, mid=2)
        A.rma_complete(0, 700, mid=1)
        A.rma_put(0, 850, 0, 256, mid=3, extra={"g2g:copy_kind": 1, "g2g:stream": 3,
                                                "g2g:async": 1})
        A.rma_complete(0, 860, mid=3)
    t = _read(A.anchor)
    df = _df(t)
    r0 = df[df["rank"] == 0].reset_index(drop=True)
    assert list(r0.op) == ["Init", "Compute", "Send", "Compute", "Memcpy", "Compute", "Memcpy",
                           "Allreduce", "Compute", "Finalize"]
    s = r0[r0.op == "Send"].iloc[0]
    assert (s.mem_space, bool(s.contiguous)) == ("device", False)
    assert bool(df[df.op == "Recv"].iloc[0].contiguous)
    assert set(df[df.op == "Allreduce"].bytes) == {64} == set(df[df.op == "Allreduce"].recv_bytes)
    m = r0[r0.op == "Memcpy"]
    assert list(zip(m.copy_kind, m.stream, m.bytes)) == [("h2d", 3, 4096), ("d2d", -1, 512)]
    assert list(m.t_end_ns - m.t_start_ns) == [280, 50]         # matched by matching id
    assert t.import_stats["memcpy_inside_mpi"] == 1
    c = r0[r0.op == "Compute"]
    assert list(c.dur_ns) == [100, 20, 80, 100]


def test_archive_of_g2gsim_tracer(tmp_path):
    """An archive written by tracer/libg2gtrace.so (every MPI call kind of all_calls.c on 4 ranks;
    ping.c with the fake libcuda/CUPTI for device buffers and copies) converts consistently with
    its raw records.  Skipped where MPI or the tracer cannot be built."""
    import os
    import subprocess
    root = Path(__file__).resolve().parents[1]
    if not (shutil.which("mpicc") and shutil.which("mpirun")):
        pytest.skip("mpicc/mpirun not found")
    if subprocess.run(["make", "-C", str(root / "tracer")], capture_output=True).returncode:
        pytest.skip("the tracer does not build here")
    from g2gsim.record import record
    lib = root / "tracer" / "build" / "libg2gtrace.so"
    data = root / "tests" / "data" / "ping-tracer"
    env = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_btl_vader_single_copy_mechanism": "none", "OMPI_MCA_pml": "ob1",
           "OMPI_MCA_osc": "^ucx", "OMPI_MCA_btl_tcp_if_include": "lo",
           "OMPI_MCA_oob_tcp_if_include": "lo", "G2G_TRACER_LIB": str(lib)}
    mpirun = ["mpirun", "--oversubscribe", "--allow-run-as-root", "--mca", "btl", "self,vader",
              "-np", "4"]
    for name in ("fake_cuda", "fake_cupti"):
        subprocess.run(["cc", "-shared", "-fPIC", "-O1", "-o", str(tmp_path / f"{name}.so"),
                        str(root / "tracer" / "test" / f"{name}.c")], check=True)
    runs = {"all_calls": {}, "ping": {"G2G_LIBCUDA": str(tmp_path / "fake_cuda.so"),
                                      "G2G_LIBCUPTI": str(tmp_path / "fake_cupti.so")}}
    old = os.environ.get("G2G_TRACER_LIB")
    os.environ["G2G_TRACER_LIB"] = str(lib)
    try:
        for name, extra in runs.items():
            exe = tmp_path / name
            subprocess.run(["mpicc", "-O1", "-o", str(exe), str(data / f"{name}.c")], check=True)
            anchor = record(tmp_path / f"trace-{name}", mpirun + [str(exe)], env={**env, **extra})
            t = _read(anchor)
            _assert_agrees_with_raw(t, _raw(anchor))
            _roundtrip(t, tmp_path)
            ops = _ops(t)
            assert t.nranks == 4 and t.source.split("(")[1].startswith("g2gtrace")
            if name == "all_calls":
                assert len(t.comms) == 11              # world + 10 made by the program
                assert ops["Issend"] == ops["Ssend"] == ops["Bsend"] == ops["Rsend"] == 4
                assert ops["Ialltoallv"] == ops["Iexscan"] == 4
            else:
                df = _df(t)
                assert set(df[df.op == "Isend"].mem_space) == {"device"}
                assert ops["Memcpy"] == 10 and set(df[df.op == "Memcpy"].copy_kind) == {"h2d"}
                assert set(df[df.op == "Memcpy"].stream) == {-1}      # synchronous copies
    finally:
        if old is None:
            os.environ.pop("G2G_TRACER_LIB", None)
        else:
            os.environ["G2G_TRACER_LIB"] = old


# ------------------------------------------------------------------------------------ errors
def test_missing_archive(tmp_path):
    with pytest.raises(TraceError, match="no such OTF2 archive"):
        read_otf2(tmp_path / "nope" / "traces.otf2")
    with pytest.raises(TraceError, match="no OTF2 anchor file"):
        read_otf2(tmp_path)
    (tmp_path / "a.otf2").write_text("x")
    (tmp_path / "b.otf2").write_text("x")
    with pytest.raises(TraceError, match="several OTF2 anchor files"):
        read_otf2(tmp_path)
    with pytest.raises(TraceError, match="cannot open OTF2 archive"):
        read_otf2(tmp_path / "a.otf2")


def test_truncated_event_file(corpus, tmp_path):
    dst = tmp_path / "t32"
    shutil.copytree(corpus / TRACES["traces-32"], dst)
    for p in dst.rglob("*"):
        p.chmod(0o644 if p.is_file() else 0o755)
    evt = dst / "traces" / "3.evt"
    evt.write_bytes(evt.read_bytes()[: evt.stat().st_size // 2])
    with pytest.raises(TraceError) as e:
        read_otf2(dst)
    msg = str(e.value)
    assert str(dst / "traces.otf2") in msg and "location 3 (rank 3)" in msg
    assert "event" in msg and "truncated" in msg
    (dst / "traces" / "5.evt").unlink()
    with pytest.raises(TraceError, match=r"location 5 \(rank 5\): event file 5.evt is missing"):
        read_otf2(dst)


def test_no_mpi_records(tmp_path):
    with SynthArchive(tmp_path / "a", nranks=1) as A:
        A.program_begin(0, 100)
        A.enter(0, 200, "main", paradigm=otf2.Paradigm.USER)
        A.leave(0, 900, "main", paradigm=otf2.Paradigm.USER)
        A.program_end(0, 1000)
    with pytest.raises(TraceError, match="no MPI records"):
        read_otf2(A.anchor)


def test_mpi_one_sided_is_an_error(tmp_path):
    with SynthArchive(tmp_path / "a", nranks=2) as A:
        win = A.mpi_window()
        for r in range(2):
            A.enter(r, 100, "MPI_Init")
            A.leave(r, 200, "MPI_Init")
        A.enter(0, 300, "MPI_Put")
        A.rma_put(0, 310, 1, 64, gpu=False, win=win)
        A.leave(0, 400, "MPI_Put")
    with pytest.raises(TraceError) as e:
        read_otf2(A.anchor)
    msg = str(e.value)
    assert "RmaPut" in msg and "not supported" in msg and "(rank 0)" in msg
    assert "event 4" in msg and "time 310 ticks = 210 ns" in msg   # 4th event of the location


def test_unmatched_send(tmp_path):
    ex = write_synthetic(tmp_path / "u", nranks=3, iterations=1, gpu=False, unmatched=True)
    with pytest.warns(UserWarning, match="unmatched send: rank 0 -> peer 1"):
        t = read_otf2(ex.anchor)
    probs = check_matching(t)
    assert len(probs) == 1 and "tag 999" in probs[0] and "8 bytes" in probs[0]
    assert "t=" in probs[0] and "seq" in probs[0]
    with pytest.raises(TraceError, match="unmatched send"):
        check_matching(t, strict=True)
    with pytest.raises(TraceError, match="unmatched send"):
        read_otf2(ex.anchor, strict=True)


def test_check_matching_wildcards_and_truncation():
    b = TraceBuilder(3)
    b.add(0, "Send", peer=2, tag=5, bytes=100)
    b.add(1, "Send", peer=2, tag=6, bytes=50)
    b.add(2, "Recv", peer=-1, tag=-1, recv_bytes=100)      # ANY_SOURCE / ANY_TAG
    b.add(2, "Recv", peer=1, tag=6, recv_bytes=10)         # truncates the 50-byte message
    b.add(0, "Isend", peer=1, tag=1, bytes=8, req=1)
    b.add(1, "Irecv", peer=0, tag=1, recv_bytes=8, req=1)
    b.add(1, "Recv", peer=0, tag=2, recv_bytes=8)          # nobody sends tag 2
    probs = check_matching(b.build())
    assert len(probs) == 2
    assert any("truncated message: rank 1 -> rank 2" in p for p in probs)
    assert any("unmatched receive: rank 1 <- peer 0" in p and "tag 2" in p for p in probs)


# ------------------------------------------------------------------------------------ speed
@pytest.mark.slow
def test_read_speed_million_events(tmp_path, corpus, record_property):
    t0 = time.perf_counter()
    ex = write_synthetic(tmp_path / "big", nranks=16, iterations=1150)
    t_write = time.perf_counter() - t0
    assert ex.events > 900_000
    t = read_otf2(ex.anchor)
    s = t.import_stats
    assert dict(_ops(t)) == ex.ops
    big = _read(corpus / TRACES["traces-64"])
    s64 = big.import_stats
    record_property("synthetic_events", ex.events)
    record_property("synthetic_events_per_s", round(s["events_per_s"]))
    record_property("synthetic_events_per_cpu_s", round(s["events_per_cpu_s"]))
    record_property("traces64_events_per_s", round(s64["events_per_s"]))
    print(f"\nsynthetic: {ex.events} events written in {t_write:.1f} s, read in "
          f"{s['seconds_read']:.2f} s ({s['events_per_s']:,.0f} events/s wall, "
          f"{s['events_per_cpu_s']:,.0f} events per CPU-second, {s['tasks']} tasks), total "
          f"{s['seconds_total']:.2f} s; traces-64: {s64['events']} events, "
          f"{s64['events_per_s']:,.0f} events/s")
    assert s["events_per_cpu_s"] > 100_000


# ------------------------------------------------------------------------------------ GPU streams
def _write_scorep_cuda(path: Path) -> Path:
    """A Score-P-like MPI + CUDA archive of 2 ranks with no g2g attributes: CUDA API regions on the
    rank's thread, kernels as Enter/Leave on "CUDA[0:13]" / "CUDA[0:14]" stream locations of an
    ACCELERATOR group.  Per iteration (2, at T = 100 + 2000 i ns): cudaLaunchKernel (boundary,
    stream 13), cudaEventRecord, cudaLaunchKernel (interior, stream 14), cudaStreamSynchronize
    (returns when the boundary kernel ends), Send/Recv, cudaEventSynchronize (returns when the
    interior kernel ends), cudaStreamWaitEvent.  Rank 0 has Score-P's "callsite id" parameters and
    its interior kernel starts before its boundary kernel; rank 1 has none, and its MPI_Send makes
    a launch of its own (a "pack" kernel) inside the MPI call."""
    from otf2.enums import GroupType, LocationGroupType, LocationType, ParameterType, Paradigm, RegionRole
    w = otf2.writer.Writer(str(path), timer_resolution=1_000_000_000)
    w.creator = "Score-P 9.0 (synthetic)"
    d = w.definitions
    node = d.system_tree_node("node0")
    lg = [d.location_group(f"MPI Rank {r}", system_tree_parent=node) for r in range(2)]
    cpu = [d.location("Master thread", type=LocationType.CPU_THREAD, group=lg[r]) for r in range(2)]
    acc = [d.location_group(f"CUDA Context {r}", location_group_type=LocationGroupType.ACCELERATOR,
                            system_tree_parent=node, creating_location_group=lg[r]) for r in range(2)]
    gpu = [{s: d.location(f"CUDA[0:{s}]", type=LocationType.GPU, group=acc[r]) for s in (13, 14)}
           for r in range(2)]
    d.group("", group_type=GroupType.COMM_LOCATIONS, paradigm=Paradigm.MPI, members=cpu)
    world = d.comm("MPI_COMM_WORLD", group=d.group("", group_type=GroupType.COMM_GROUP,
                                                      paradigm=Paradigm.MPI, members=cpu))
    site = d.parameter("callsite id", ParameterType.UINT64)
    R = {}
    for n in ("MPI_Init", "MPI_Finalize", "MPI_Send", "MPI_Recv"):
        R[n] = d.region(n, paradigm=Paradigm.MPI, region_role=RegionRole.POINT2POINT)
    for n in ("cudaLaunchKernel", "cudaEventRecord", "cudaStreamSynchronize", "cudaEventSynchronize",
              "cudaStreamWaitEvent"):
        R[n] = d.region(n, paradigm=Paradigm.CUDA, region_role=RegionRole.WRAPPER)
    for n in ("boundary", "interior", "pack"):
        R[n] = d.region(n, paradigm=Paradigm.CUDA, region_role=RegionRole.KERNEL)
    for r in range(2):
        h = w.event_writer_from_location(cpu[r])
        g = {s: w.event_writer_from_location(gpu[r][s]) for s in (13, 14)}

        def call(name, t0, t1, cs=None):
            h.enter(t0, R[name])
            if cs is not None:
                h.parameter_unsigned_int(t0 + 1, site, cs)
            h.leave(t1, R[name])

        def kernel(s, name, t0, t1, cs=None):
            g[s].enter(t0, R[name])
            if cs is not None:
                g[s].parameter_unsigned_int(t0, site, cs)
            g[s].leave(t1, R[name])

        h.enter(0, R["MPI_Init"])
        h.leave(10, R["MPI_Init"])
        for i in range(2):
            T = 100 + 2000 * i
            cs = (11, 22) if r == 0 else (None, None)
            call("cudaLaunchKernel", T, T + 4, cs[0])
            call("cudaEventRecord", T + 5, T + 6)
            call("cudaLaunchKernel", T + 7, T + 9, cs[1])
            if r == 0:        # the interior kernel gets the GPU first
                kernel(14, "interior", T + 10, T + 1015, cs[1])
                kernel(13, "boundary", T + 11, T + 120, cs[0])
            else:
                kernel(13, "boundary", T + 8, T + 120)
                kernel(14, "interior", T + 16, T + 1015)
            call("cudaStreamSynchronize", T + 20, T + 120)
            if r == 0:
                h.enter(T + 125, R["MPI_Send"])
                h.mpi_send(T + 126, 1, world, 5, 64)
                h.leave(T + 130, R["MPI_Send"])
                h.enter(T + 131, R["MPI_Recv"])
                h.mpi_recv(T + 139, 1, world, 6, 64)
                h.leave(T + 140, R["MPI_Recv"])
            else:
                h.enter(T + 125, R["MPI_Recv"])
                h.mpi_recv(T + 129, 0, world, 5, 64)
                h.leave(T + 130, R["MPI_Recv"])
                h.enter(T + 131, R["MPI_Send"])
                call("cudaLaunchKernel", T + 132, T + 133)      # the MPI library's own kernel
                kernel(13, "pack", T + 134, T + 136)
                h.mpi_send(T + 137, 0, world, 6, 64)
                h.leave(T + 140, R["MPI_Send"])
            call("cudaEventSynchronize", T + 150, T + 1015)
            call("cudaStreamWaitEvent", T + 1020, T + 1021)
        h.enter(5000, R["MPI_Finalize"])
        h.leave(5010, R["MPI_Finalize"])
    w.close()
    return path / "traces.otf2"


def test_scorep_cuda_streams(tmp_path):
    """Score-P CUDA records -> native GPU operations: kernels at their launch with the GPU's
    duration (matched by callsite id, else in order), syncs at their call with the host's wait left
    out of Compute, the stream a sync waited for inferred where Score-P does not say, calls without
    the event id they need dropped, the MPI library's own kernel dropped."""
    t = _read(_write_scorep_cuda(tmp_path / "scorep-cuda"))
    df = _df(t)
    st = t.import_stats
    assert st["gpu_kernels"] == 10                      # 2 ranks x 2 x (boundary + interior) + 2 pack
    assert st["kernels_without_launch"] == 2 and st["gpu_calls_without_ids"] == 8
    assert st["inferred_sync_streams"] == 8
    assert "launches_without_kernel" not in st
    durs = {0: (109, 1005), 1: (112, 999)}
    for r in range(2):
        g = df[df["rank"] == r]
        host = g[g.op != "Compute"]
        want = ["Init"] + ["Kernel", "Kernel", "StreamSynchronize"] + \
            (["Send", "Recv"] if r == 0 else ["Recv", "Send"]) + ["StreamSynchronize"]
        want = want[:1] + want[1:] * 2 + ["Finalize"]
        assert list(host.op) == want, r
        k = host[host.op == "Kernel"]
        assert list(k.stream) == [13, 14, 13, 14]
        assert list(k.dur_ns) == list(durs[r]) * 2
        assert list(host[host.op == "StreamSynchronize"].stream) == [13, 14, 13, 14]
        # the syncs' waits are not Compute: Compute adds up to the host time outside them
        comp = g[g.op == "Compute"]
        syncs = host[host.op == "StreamSynchronize"]
        for _, s in syncs.iterrows():
            assert comp[(comp.t_start_ns < s.t_end_ns) & (comp.t_end_ns > s.t_start_ns)].empty
        # a launch's host time is Compute; the Kernel row follows where the launch returned
        first = g[g.op == "Kernel"].index[0]
        assert g.loc[first - 1, "op"] == "Compute" and g.loc[first - 1, "t_end_ns"] == 104
    assert check_matching(t) == []
    _roundtrip(t, tmp_path)


def _blocking_copy_archive(path, async_: bool, call=None, dma=(122, 222), corr=False):
    """Rank 0: MPI_Init (leaves at 100 us), a 100 us D2H copy of 4096 bytes in the 150 us gap up to
    MPI_Send (250 us); ``call``: the (enter, leave) of its host cudaMemcpy(Async) region, which
    carries the copy's g2g:corr when ``corr``.  Times in us (ticks are ns)."""
    import _otf2
    from otf2.enums import Paradigm, RegionRole, Type
    us = 1000
    with SynthArchive(path, nranks=2, gpu=True, tracer_attrs=True) as A:
        W = A.world
        A.extra_attrs["g2g:corr"] = A.d.attribute("g2g:corr", "g2g:corr", Type.UINT32)
        for r in range(2):
            A.enter(r, 0, "MPI_Init")
            A.leave(r, 100 * us, "MPI_Init")
        if call is not None:
            name = "cudaMemcpyAsync" if async_ else "cudaMemcpy"
            reg = A.region(name, Paradigm.CUDA, RegionRole.WRAPPER)
            _otf2.EvtWriter_Enter(A._loc(0, False, call[0] * us).handle,
                                  A._attrs(None, {"g2g:corr": 7} if corr else None),
                                  call[0] * us, reg)
            A.leave(0, call[1] * us, name, paradigm=Paradigm.CUDA, role=RegionRole.WRAPPER)
        A.enter(0, 250 * us, "MPI_Send")
        A.send(0, 260 * us, 1, W, 1, 64)
        A.leave(0, 300 * us, "MPI_Send")
        A.enter(1, 250 * us, "MPI_Recv")
        A.recv(1, 290 * us, 0, W, 1, 64)
        A.leave(1, 300 * us, "MPI_Recv")
        for r in range(2):
            A.enter(r, 400 * us, "MPI_Finalize")
            A.leave(r, 500 * us, "MPI_Finalize")
        extra = {"g2g:copy_kind": 1, "g2g:stream": 7, "g2g:async": int(async_)}
        if corr:
            extra["g2g:corr"] = 7
        A.rma_put(0, dma[0] * us, 0, 4096, mid=1, extra=extra)
        A.rma_complete(0, dma[1] * us, mid=1)
    t = _read(A.anchor)
    df = _df(t)
    return df[df["rank"] == 0].reset_index(drop=True)


@pytest.mark.parametrize("call,corr,host_us", [
    (None, False, 100),              # no host call recorded: the copy's own interval
    ((115, 225), False, 110),        # the cudaMemcpy region around it (matched by time)
    ((115, 225), True, 110),         # ... by the tracer's correlation id
    ((110, 200), True, 90),          # pageable: the DMA ran after the call returned (same id)
])
def test_blocking_copy_not_in_compute(tmp_path, call, corr, host_us):
    """A synchronous copy between two MPI calls is a blocking Memcpy row and its host time is not
    also in the Compute rows around it (the simulator charges the Memcpy itself)."""
    dma = (205, 230) if call == (110, 200) else (122, 222)
    r0 = _blocking_copy_archive(tmp_path / "a", False, call, dma, corr)
    gap = r0.iloc[r0.index[r0.op == "Init"][0] + 1:r0.index[r0.op == "Send"][0]]
    assert list(gap.op) == ["Compute", "Memcpy", "Compute"]
    assert gap[gap.op == "Compute"].dur_ns.sum() == (150 - host_us) * 1000
    m = gap[gap.op == "Memcpy"].iloc[0]
    assert (m.copy_kind, m.stream, m.bytes) == ("d2h", -1, 4096)
    assert m.t_end_ns - m.t_start_ns == (dma[1] - dma[0]) * 1000


@pytest.mark.parametrize("call", [None, (120, 125)])
def test_async_copy_keeps_compute(tmp_path, call):
    """An asynchronous copy (stream >= 0): the host goes on, the whole gap stays compute (its
    call's launch cost included)."""
    r0 = _blocking_copy_archive(tmp_path / "a", True, call)
    gap = r0.iloc[r0.index[r0.op == "Init"][0] + 1:r0.index[r0.op == "Send"][0]]
    assert sorted(gap.op) == ["Compute", "Compute", "Memcpy"]
    assert gap[gap.op == "Compute"].dur_ns.sum() == 150 * 1000
    m = gap[gap.op == "Memcpy"].iloc[0]
    assert (m.copy_kind, m.stream, m.bytes) == ("d2h", 7, 4096)

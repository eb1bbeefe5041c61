"""Nsight Systems SQLite import: a synthetic 4-rank export built with the tables' documented column
names and types (NVIDIA's SQLite Schema Reference), and the corpus export that has MPI only as
NVTX ranges."""
from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

import g2gsim
from g2gsim.readers.nsys_reader import read_nsys
from g2gsim.trace import Trace, TraceError

ROOT = Path(__file__).resolve().parents[1]
CORPUS = Path(os.environ.get("G2GSIM_CORPUS", ROOT.parent / "shared" / "corpus"))
PIPIT_NSYS = CORPUS / "pipit/pipit/tests/data/saxpy-mpi-cuda_nsys_perlmutter0.sqlite"

SCHEMA = """
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE META_DATA_EXPORT (name TEXT NOT NULL, value TEXT);
CREATE TABLE ENUM_CUDA_MEMCPY_OPER (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);
CREATE TABLE ENUM_CUPTI_SYNC_TYPE (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);
CREATE TABLE MPI_RANKS (globalTid INTEGER NOT NULL, rank INTEGER NOT NULL);
CREATE TABLE MPI_P2P_EVENTS (start INTEGER NOT NULL, end INTEGER, globalTid INTEGER, textId INTEGER,
    commHandle INTEGER, tag INTEGER, remoteRank INTEGER, size INTEGER, requestHandle INTEGER);
CREATE TABLE MPI_COLLECTIVES_EVENTS (start INTEGER NOT NULL, end INTEGER, globalTid INTEGER,
    textId INTEGER, commHandle INTEGER, rootRank INTEGER, size INTEGER, recvSize INTEGER,
    requestHandle INTEGER);
CREATE TABLE MPI_START_WAIT_EVENTS (start INTEGER NOT NULL, end INTEGER, globalTid INTEGER,
    textId INTEGER, requestHandle INTEGER);
CREATE TABLE MPI_OTHER_EVENTS (start INTEGER NOT NULL, end INTEGER, globalTid INTEGER, textId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL,
    eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL,
    returnValue INTEGER NOT NULL, callchainId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL,
    deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL,
    correlationId INTEGER, globalPid INTEGER, demangledName INTEGER NOT NULL,
    shortName INTEGER NOT NULL, mangledName INTEGER, launchType INTEGER, cacheConfig INTEGER,
    registersPerThread INTEGER NOT NULL, gridX INTEGER NOT NULL, gridY INTEGER NOT NULL,
    gridZ INTEGER NOT NULL, blockX INTEGER NOT NULL, blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL,
    staticSharedMemory INTEGER NOT NULL, dynamicSharedMemory INTEGER NOT NULL,
    localMemoryPerThread INTEGER NOT NULL, localMemoryTotal INTEGER NOT NULL, gridId INTEGER NOT NULL,
    sharedMemoryExecuted INTEGER, graphNodeId INTEGER, sharedMemoryLimitConfig INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL,
    deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL,
    correlationId INTEGER, globalPid INTEGER, bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL,
    deprecatedSrcId INTEGER, srcKind INTEGER, dstKind INTEGER, srcDeviceId INTEGER,
    srcContextId INTEGER, dstDeviceId INTEGER, dstContextId INTEGER, migrationCause INTEGER,
    graphNodeId INTEGER, virtualAddress INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (start INTEGER NOT NULL, end INTEGER NOT NULL,
    deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL,
    correlationId INTEGER, globalPid INTEGER, syncType INTEGER NOT NULL, eventId INTEGER NOT NULL);
"""

STRINGS = ["MPI_Init", "MPI_Finalize", "MPI_Isend", "MPI_Irecv", "MPI_Send", "MPI_Recv",
           "MPI_Waitall", "MPI_Wait", "MPI_Allreduce", "MPI_Bcast", "MPI_Barrier", "MPI_Comm_rank",
           "cudaLaunchKernel", "cudaMemcpyAsync", "cudaMemcpy", "cudaStreamSynchronize", "stencil"]
SID = {s: i + 1 for i, s in enumerate(STRINGS)}
NRANKS, ITERS = 4, 3
MB = 1 << 20


def make_export(path: Path) -> Path:
    db = sqlite3.connect(path)
    db.executescript(SCHEMA)
    db.executemany("INSERT INTO StringIds VALUES (?, ?)", [(i, s) for s, i in SID.items()])
    db.executemany("INSERT INTO META_DATA_EXPORT VALUES (?, ?)",
                   [("EXPORT_PRODUCT_VERSION", "synthetic 2024.x schema")])
    db.executemany("INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES (?, ?, ?)",
                   [(1, "CUDA_MEMCPY_KIND_HTOD", "Host-to-Device"), (2, "CUDA_MEMCPY_KIND_DTOH", "Device-to-Host"),
                    (8, "CUDA_MEMCPY_KIND_DTOD", "Device-to-Device")])
    db.executemany("INSERT INTO ENUM_CUPTI_SYNC_TYPE VALUES (?, ?, ?)",
                   [(1, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE", "Event sync"),
                    (3, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE", "Stream sync"),
                    (4, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE", "Context sync")])
    WORLD = 0x44000000
    for r in range(NRANKS):
        pid = 4000 + r
        gpid = (1 << 56) | (pid << 24)
        gtid = gpid | pid
        db.execute("INSERT INTO MPI_RANKS VALUES (?, ?)", (gtid, r))
        t = 1_000_000 + 1000 * r
        corr = [0]

        def mpi(table, name, dur=2000, **cols):
            nonlocal t
            names = ["start", "end", "globalTid", "textId"] + list(cols)
            db.execute(f"INSERT INTO {table} ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",
                       [t, t + dur, gtid, SID[name]] + list(cols.values()))
            t += dur + 500

        def cuda_api(name, dur=800):
            nonlocal t
            corr[0] += 1
            db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, 0, ?, ?, ?, 0, NULL)",
                       (t, t + dur, gtid, corr[0], SID[name]))
            s = t
            t += dur + 300
            return s, corr[0]

        def kernel(stream, dur):
            s, c = cuda_api("cudaLaunchKernel")
            db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, 0, 1, ?, ?, ?, ?, ?, NULL, 0, 0, 32,"
                       " 64, 1, 1, 256, 1, 1, 0, 0, 0, 0, ?, 0, NULL, NULL)",
                       (s + 5000, s + 5000 + dur, stream, c, gpid, SID["stencil"], SID["stencil"], c))

        def memcpy(api, stream, kind, nbytes):
            s, c = cuda_api(api, dur=400_000 if api == "cudaMemcpy" else 800)
            db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start, end, deviceId, contextId, streamId,"
                       " correlationId, globalPid, bytes, copyKind, srcKind, dstKind) VALUES"
                       " (?, ?, 0, 1, ?, ?, ?, ?, ?, ?, ?)",
                       (s + 1000, s + 300_000, stream, c, gpid, nbytes, kind, 2 if kind == 2 else 0,
                        0 if kind == 2 else 2))

        def sync(stream):
            s, c = cuda_api("cudaStreamSynchronize", dur=200_000)
            db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION VALUES (?, ?, 0, 1, ?, ?, ?, 3, 0)",
                       (s + 10, s + 199_000, stream, c, gpid))

        nxt, prv = (r + 1) % NRANKS, (r - 1) % NRANKS
        mpi("MPI_OTHER_EVENTS", "MPI_Init", dur=50_000)
        mpi("MPI_OTHER_EVENTS", "MPI_Comm_rank", dur=100)
        for it in range(ITERS):
            kernel(13, 50_000)
            memcpy("cudaMemcpyAsync", 14, 2, MB)          # D2H on the copy stream
            sync(14)
            mpi("MPI_P2P_EVENTS", "MPI_Irecv", commHandle=WORLD, tag=it, remoteRank=prv, size=MB,
                requestHandle=0x100)
            mpi("MPI_P2P_EVENTS", "MPI_Isend", commHandle=WORLD, tag=it, remoteRank=nxt, size=MB,
                requestHandle=0x200)
            # one MPI_Waitall, one row per request (same start, end and name)
            for h in (0x100, 0x200):
                db.execute("INSERT INTO MPI_START_WAIT_EVENTS VALUES (?, ?, ?, ?, ?)",
                           (t, t + 90_000, gtid, SID["MPI_Waitall"], h))
            t += 90_500
            memcpy("cudaMemcpy", 14, 1, MB)               # blocking H2D
            mpi("MPI_COLLECTIVES_EVENTS", "MPI_Allreduce", commHandle=WORLD, rootRank=None, size=8,
                recvSize=8)
        mpi("MPI_COLLECTIVES_EVENTS", "MPI_Bcast", commHandle=WORLD, rootRank=0, size=4096,
            recvSize=4096)
        mpi("MPI_COLLECTIVES_EVENTS", "MPI_Barrier", commHandle=WORLD, size=0, recvSize=0)
        if r == 0:
            mpi("MPI_P2P_EVENTS", "MPI_Send", commHandle=WORLD, tag=77, remoteRank=1, size=256)
        if r == 1:
            mpi("MPI_P2P_EVENTS", "MPI_Recv", commHandle=WORLD, tag=77, remoteRank=0, size=256)
        if r == 2:
            mpi("MPI_P2P_EVENTS", "MPI_Isend", commHandle=WORLD, tag=5, remoteRank=3, size=64,
                requestHandle=0x300)
            mpi("MPI_START_WAIT_EVENTS", "MPI_Wait", requestHandle=0x300)
        if r == 3:
            mpi("MPI_P2P_EVENTS", "MPI_Irecv", commHandle=WORLD, tag=5, remoteRank=2, size=64,
                requestHandle=0x300)
            mpi("MPI_START_WAIT_EVENTS", "MPI_Wait", requestHandle=0x300)
        mpi("MPI_OTHER_EVENTS", "MPI_Finalize")
    db.commit()
    db.close()
    return path


EXPECTED = {"Init": 4, "Finalize": 4, "Kernel": 12, "Memcpy": 24, "StreamSynchronize": 12,
            "Irecv": 13, "Isend": 13, "Waitall": 12, "Wait": 2, "Allreduce": 12, "Bcast": 4,
            "Barrier": 4, "Send": 1, "Recv": 1}


@pytest.fixture
def export(tmp_path):
    return make_export(tmp_path / "run.sqlite")


def test_synthetic_export_exact_counts(export):
    tr = read_nsys(export)
    tr.validate()
    assert tr.nranks == 4
    counts = {k: v for k, v in tr.op_counts().items() if k != "Compute"}
    assert counts == EXPECTED
    df = tr.to_pandas()
    # two streams per rank, numbered in order of first use; blocking copies on -1
    mc = df[df.op == "Memcpy"]
    assert Counter(zip(mc.copy_kind, mc.stream)) == {("d2h", 1): 12, ("h2d", -1): 12}
    assert set(df[df.op == "Kernel"].stream) == {0}
    assert set(df[df.op == "Kernel"].dur_ns) == {50_000}
    assert set(df[df.op == "StreamSynchronize"].stream) == {1}
    # the Waitall merges its two rows and completes both requests of the iteration
    r0 = df[df["rank"] == 0]
    reqs = {int(x.req) for x in r0[r0.op.isin(["Isend", "Irecv"])].itertuples()}
    waited = {q for x in r0[r0.op == "Waitall"].reqs for q in x}
    assert reqs == waited and len(reqs) == 2 * ITERS
    isend = r0[r0.op == "Isend"].iloc[0]
    assert (isend.peer, isend.bytes, isend.mem_space) == (1, MB, "host")
    assert r0[r0.op == "Irecv"].iloc[0].peer == 3
    assert df[df.op == "Bcast"].root.tolist() == [0] * 4
    assert "Compute" in set(df.op) and tr.buffers == "assumed-host"


def test_synthetic_export_simulates_with_exact_counts(export):
    rep = g2gsim.simulate(export, "lassen", mode="as-traced")
    per_op = {k: v["count"] for k, v in rep["per_op"].items()}
    for op in ("Isend", "Irecv", "Waitall", "Wait", "Allreduce", "Bcast", "Barrier", "Send", "Recv",
               "Kernel", "Memcpy"):
        assert per_op.get(op) == EXPECTED[op], (op, per_op)
    assert rep["total_time_s"] > 0
    dev = g2gsim.simulate(export, "lassen", mode="gpudirect", assume_buffers="device")
    assert dev["total_time_s"] > 0


def test_import_cli_and_device_buffers(export, tmp_path):
    """The import keeps what the export records; where buffers live is decided at simulate time."""
    out = tmp_path / "n.g2g.parquet"
    p = subprocess.run([sys.executable, "-m", "g2gsim.cli", "import", str(export), "-o", str(out),
                        "--assume-buffers", "device"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 2 and "--buffers" in p.stdout + p.stderr
    p = subprocess.run([sys.executable, "-m", "g2gsim.cli", "import", str(export), "-o", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    import g2gsim
    host = g2gsim.simulate(out, "lassen", mode="gpudirect", buffers="host")
    dev = g2gsim.simulate(out, "lassen", mode="gpudirect", buffers="device")
    assert dev["buffers"] == "device" and host["buffers"] == "host"
    assert dev["total_time_s"] != host["total_time_s"]


def test_unknown_rank_and_subcommunicator_are_errors(tmp_path, export):
    db = sqlite3.connect(export)
    db.execute("CREATE TABLE MPI_COMMUNICATORS (rank INTEGER, timestamp INTEGER, commHandle INTEGER, "
               "parentHandle INTEGER, localRank INTEGER, size INTEGER, groupRoot INTEGER, "
               "groupRootUid INTEGER, members TEXT)")
    db.execute("INSERT INTO MPI_COMMUNICATORS VALUES (0, 0, 1140850688, 0, 0, 2, 0, 0, '0,1')")
    db.commit()
    db.close()
    with pytest.raises(TraceError, match=r"rank 0, MPI_P2P_EVENTS row \d+: MPI_Irecv on a communicator of 2"):
        read_nsys(export)


def test_nsys_rep_without_nsys_says_how(tmp_path, monkeypatch):
    rep = tmp_path / "run.nsys-rep"
    rep.write_bytes(b"not really")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(TraceError, match=r"nsys export --type sqlite --output .*run.sqlite .*run.nsys-rep"):
        read_nsys(rep)


@pytest.mark.skipif(not PIPIT_NSYS.is_file(), reason=f"corpus Nsight export not present ({PIPIT_NSYS})")
def test_corpus_export_without_mpi_arguments_is_a_clear_error():
    with pytest.raises(TraceError) as ei:
        read_nsys(PIPIT_NSYS)
    msg = str(ei.value)
    assert "2022.2.1.31" in msg and "NVTX ranges" in msg and "MPI_Send x10" in msg
    assert "--trace=mpi" in msg and "MPI_P2P_EVENTS" in msg and "\n" not in msg
    p = subprocess.run([sys.executable, "-m", "g2gsim.cli", "import", str(PIPIT_NSYS), "-o",
                        "/dev/null"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 1 and "NVTX ranges" in p.stderr and "Traceback" not in p.stderr

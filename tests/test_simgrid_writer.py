"""SimGrid export (python/g2gsim/writers/simgrid_writer.py): exact TI lines, platform XML, and, when
SimGrid is installed (Debian 12: ``apt-get install libsimgrid-dev``, which provides smpirun and
smpireplaymain), a replay whose predicted time agrees with g2gsim's."""
from __future__ import annotations

import re
import shutil
import subprocess
import xml.etree.ElementTree as ET

import pytest

from g2gsim.trace import ANY_SOURCE, PROC_NULL, TraceBuilder
from g2gsim.writers.simgrid_writer import (SimgridExportError, machine_params, platform_xml, smpi_cfg,
                                           to_simgrid)


def _lines(path):
    return path.read_text().splitlines()


def _two_rank_trace():
    b = TraceBuilder(2, source="test")
    for r in (0, 1):
        o = 1 - r
        b.add(r, "Init")
        b.add(r, "Compute", dur_ns=1500)
        b.add(r, "Irecv", peer=o, tag=8 + o, recv_bytes=100, req=1)
        b.add(r, "Isend", peer=o, tag=8 + r, bytes=100, req=2)
        b.add(r, "Waitall", reqs=[1, 2])
        b.add(r, "Allreduce", bytes=8, recv_bytes=8)
        b.add(r, "Barrier")
        b.add(r, "Bcast", bytes=64, root=1)
        b.add(r, "Alltoall", bytes=2048, recv_bytes=2048)
        b.add(r, "Finalize")
    return b.build()


def test_exact_lines_of_a_tiny_trace(tmp_path):
    tl, plat, hf = to_simgrid(_two_rank_trace(), tmp_path, "lassen")
    files = _lines(tl)
    assert [f.rsplit("/", 1)[-1] for f in files] == ["rank0.txt", "rank1.txt"]
    # Allreduce of 8 host bytes at lassen's cpu.reduce_bw 5 GB/s: 1.6 ns = 1.6 flops at 1 Gflop/s
    assert _lines(tmp_path / "rank0.txt") == [
        "0 init",
        "0 compute 1500",
        "0 irecv 1 9 100",
        "0 isend 1 8 100",
        "0 waitall",
        "0 allreduce 8 1.6",
        "0 barrier",
        "0 bcast 64 1",
        "0 alltoall 1024 1024",
        "0 finalize",
    ]
    assert _lines(tmp_path / "rank1.txt")[2:5] == ["1 irecv 0 8 100", "1 isend 0 9 100", "1 waitall"]
    assert _lines(hf) == ["node-0", "node-0"]


def test_waits_on_a_subset_sendrecv_proc_null_and_copies(tmp_path):
    b = TraceBuilder(2)
    b.add(0, "Isend", peer=1, tag=1, bytes=10, req=5)
    b.add(0, "Isend", peer=1, tag=2, bytes=20, req=6)
    b.add(0, "Wait", req=6)                         # only one of two outstanding: explicit wait
    b.add(0, "Waitall", reqs=[5])                   # now the last outstanding one: waitall
    b.add(0, "Sendrecv", peer=1, tag=3, bytes=30, recv_peer=1, recv_tag=4, recv_bytes=40)
    b.add(0, "Isend", peer=PROC_NULL, tag=0, bytes=8, req=7)
    b.add(0, "Wait", req=7)                          # PROC_NULL request: nothing to wait for
    b.add(0, "Memcpy", bytes=1_000_000, copy_kind="d2h", stream=-1)
    b.add(0, "Memcpy", bytes=1_000_000, copy_kind="h2d", stream=3)   # async: dropped
    b.add(0, "Test", req=0)
    b.add(1, "Recv", peer=0, tag=1, recv_bytes=10)
    b.add(1, "Recv", peer=0, tag=2, recv_bytes=20)
    b.add(1, "Sendrecv", peer=0, tag=4, bytes=40, recv_peer=0, recv_tag=3, recv_bytes=30)
    to_simgrid(b.build(), tmp_path, "lassen")
    # lassen: copy_delay 20000 ns + 1e6 B at 1 / 0.07 ns per byte = 70000 ns
    assert _lines(tmp_path / "rank0.txt") == [
        "0 init",
        "0 isend 1 1 10",
        "0 isend 1 2 20",
        "0 wait 0 1 2",
        "0 waitall",
        "0 isend 1 3 30",
        "0 irecv 1 4 40",
        "0 wait 0 1 3",
        "0 wait 1 0 4",
        "0 compute 90000",
        "0 finalize",
    ]
    assert _lines(tmp_path / "rank1.txt") == [
        "1 init", "1 recv 0 1 10", "1 recv 0 2 20", "1 isend 0 4 40", "1 irecv 0 3 30",
        "1 wait 1 0 4", "1 wait 0 1 3", "1 finalize",
    ]


def test_subcommunicator_peers_are_world_ranks(tmp_path):
    b = TraceBuilder(4)
    b.add_comm(3, "odd", [1, 3])
    b.add(1, "Send", peer=1, comm_id=3, tag=0, bytes=5)     # comm rank 1 of "odd" = world rank 3
    b.add(3, "Recv", peer=0, comm_id=3, tag=0, recv_bytes=5)
    to_simgrid(b.build(), tmp_path, "lassen")
    assert _lines(tmp_path / "rank1.txt")[1] == "1 send 3 0 5"
    assert _lines(tmp_path / "rank3.txt")[1] == "3 recv 1 0 5"
    assert _lines(tmp_path / "rank0.txt") == ["0 init", "0 finalize"]


@pytest.mark.parametrize("build,msg", [
    (lambda b: b.add(0, "Recv", peer=ANY_SOURCE, tag=0, recv_bytes=1), "ANY_SOURCE"),
    (lambda b: (b.add_comm(2, "swapped", [1, 0]), b.add(0, "Barrier", comm_id=2)), "MPI_COMM_WORLD only"),
    (lambda b: b.add(0, "Iallreduce", bytes=8, req=1), "nonblocking collectives"),
    (lambda b: b.add(0, "Scan", bytes=8), "Scan"),
    (lambda b: (b.add(0, "Irecv", peer=1, tag=0, req=1), b.add(0, "Irecv", peer=1, tag=0, req=2)),
     "two requests outstanding"),
])
def test_what_simgrid_cannot_replay_is_refused(tmp_path, build, msg):
    b = TraceBuilder(2)
    build(b)
    with pytest.raises(SimgridExportError, match=msg):
        to_simgrid(b.build(), tmp_path, "lassen")


def test_platform_xml_parses_and_mirrors_the_fat_tree(tmp_path):
    _, plat, _ = to_simgrid(_two_rank_trace(), tmp_path, "lassen")
    root = ET.parse(plat).getroot()
    assert root.tag == "platform" and root.get("version") == "4.1"
    (cl,) = root.findall("cluster")
    assert cl.get("topology") == "FAT_TREE"
    # lassen: 18 nodes per leaf, 9 leaves per pod, 12 uplinks per leaf (taper 1.5), one pod
    assert cl.get("topo_parameters") == "3;18,9,1;1,12,9;1,1,1"
    assert cl.get("radical") == "0-161"
    # EDR 12.5 GB/s x node.nic.efficiency 0.994; lat = (NIC 600 ns + hop 100 ns) / 2
    assert cl.get("bw") == "12425000000Bps" and cl.get("lat") == "350ns"
    assert cl.get("core") == "4" and cl.get("speed") == "1000000000f"
    assert cl.get("loopback_bw") == "25000000000Bps" and cl.get("loopback_lat") == "300ns"
    # 2,000 nodes: 112 leaves -> 13 pods of 9 leaves
    xml, hosts = platform_xml(machine_params("lassen"), 2000)
    assert hosts == 18 * 9 * 13
    assert 'topo_parameters="3;18,9,13;1,12,9;1,1,1"' in xml
    ET.fromstring(xml.split("\n", 2)[2])          # well-formed without the DOCTYPE too
    # 2-level tree with 4 rails (parallel links), crossbar with 4 rails (4 x the NIC bandwidth)
    xml2, h2 = platform_xml(machine_params("juwels-booster"), 100)
    assert 'topo_parameters="2;24,5;1,24;4,4"' in xml2 and h2 == 120
    ET.fromstring(xml2.split("\n", 2)[2])
    p4 = machine_params("h200x4")
    xml3, h3 = platform_xml(p4, 3)
    assert h3 == 3 and "FAT_TREE" not in xml3 and 'bb_sharing_policy="FATPIPE"' in xml3
    assert f'bw="{int(min(p4["nic_bw"], p4["link_bw"]) * 4)}Bps"' in xml3
    with pytest.raises(SimgridExportError, match="dragonfly"):
        platform_xml(machine_params("piz-daint"), 8)


def test_smpi_cfg_matches_the_preset():
    cfg = smpi_cfg("lassen")
    assert "--cfg=smpi/send-is-detached-thresh:65537" in cfg    # eager limit 64 KiB, inclusive
    assert "--cfg=smpi/async-small-thresh:65537" in cfg
    assert "--cfg=smpi/os:0:5e-07:0" in cfg and "--cfg=smpi/or:0:5e-07:0" in cfg
    assert "--cfg=network/crosstraffic:0" in cfg


SMPIRUN = shutil.which("smpirun")


@pytest.mark.skipif(SMPIRUN is None, reason="SimGrid not installed (apt-get install libsimgrid-dev)")
def test_tiny_replay_agrees_with_g2gsim(tmp_path):
    import g2gsim
    import g2gsim.generate as gen
    trace = tmp_path / "halo.g2g.parquet"
    gen.generate("halo3d", 16, iterations=3, buffers="host", msg_bytes=65536).write(trace)
    ours = g2gsim.simulate(trace, "lassen", mode="as-traced", per_rank=False)["total_time_s"]
    tl, plat, hf = to_simgrid(trace, tmp_path / "sg", "lassen")
    out = subprocess.run([SMPIRUN, "-no-privatize", "-np", "16", "-platform", str(plat), "-hostfile", str(hf),
                          "-replay", str(tl), *smpi_cfg("lassen"), "--log=smpi_replay.fmt:[%.9d]%e%m%n",
                          "--log=xbt_cfg.thresh:warning", "--log=smpi_coll.thresh:warning"],
                         capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    times = [float(x) for x in re.findall(r"\[(\d+\.\d+)\] Simulation time", out.stdout + out.stderr)]
    assert times, out.stderr[-2000:]
    theirs = max(times)
    assert 0.5 < ours / theirs < 2.0, (ours, theirs)

"""End-to-end: the CLI and Python API on generated and corpus traces, and clear errors on bad input."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

import g2gsim
from g2gsim.trace import Trace, TraceBuilder, TraceError


def cli(*args, check=True):
    import os
    env = {**os.environ, "COLUMNS": "200"}
    p = subprocess.run([sys.executable, "-m", "g2gsim.cli", *map(str, args)], capture_output=True, text=True,
                       timeout=300, env=env)
    if check and p.returncode != 0:
        raise AssertionError(f"g2gsim {' '.join(map(str, args))} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return p


@pytest.fixture
def pingpong(tmp_path):
    b = TraceBuilder(2, source="test")
    for _ in range(3):
        b.add(0, "Send", peer=1, tag=1, bytes=1 << 20, mem_space="device")
        b.add(1, "Recv", peer=0, tag=1, recv_bytes=1 << 20, mem_space="device")
        b.add(1, "Send", peer=0, tag=2, bytes=1 << 20, mem_space="device")
        b.add(0, "Recv", peer=1, tag=2, recv_bytes=1 << 20, mem_space="device")
    p = tmp_path / "pp.g2g.parquet"
    b.build().write(p)
    return p


def test_simulate_json_has_required_fields(pingpong, tmp_path):
    out = tmp_path / "r.json"
    cli("simulate", pingpong, "--machine", "lassen", "--mode", "gpudirect", "--json", out, "--no-progress")
    r = json.loads(out.read_text())
    assert r["total_time_s"] > 0
    assert {"rank", "end_s", "comm_s", "compute_s", "copy_s"} <= set(r["per_rank"][0])
    assert r["per_op"]["Send"]["count"] == 6
    assert {"count", "total_s", "min_s", "max_s"} <= set(r["per_op"]["Recv"])
    assert {"events", "wall_s"} <= set(r["engine"])


def test_modes_differ_and_repeat_exactly(pingpong):
    a = g2gsim.simulate(pingpong, "lassen", mode="hostcopy")
    b = g2gsim.simulate(pingpong, "lassen", mode="gpudirect")
    c = g2gsim.simulate(pingpong, "lassen", mode="hostcopy")
    assert a["total_time_s"] > b["total_time_s"]
    assert a["copy_time_s"] > 0 and b["copy_time_s"] == 0
    for k in ("total_time_s", "per_rank", "per_op", "paths"):
        assert a[k] == c[k]


def test_info_models_machine_commands(pingpong):
    out = cli("info", pingpong).stdout
    assert "Send" in out and "2 ranks" in out
    out = cli("models").stdout
    for m in ("host", "hostcopy", "gpudirect-p2p", "gpudirect-rdma", "pipelined"):
        assert m in out
    assert "lassen" in cli("machine", "list").stdout
    assert "fat-tree" in cli("machine", "show", "lassen").stdout


def test_every_command_has_help():
    for cmd in ("simulate", "info", "models", "import", "generate", "record", "demo", "machine", "compare"):
        assert "Usage" in cli(cmd, "--help").stdout


def test_bad_machine_file_names_key_and_line(tmp_path, pingpong):
    f = tmp_path / "bad.toml"
    f.write_text('schema_version = 1\n[node]\ngpus = 4\n[node.pcie]\nbw = "fast"\n[node.nic]\nbw = "1GB/s"\n')
    p = cli("machine", "validate", f, check=False)
    assert p.returncode == 1
    assert f"{f}:5: node.pcie.bw" in p.stderr.replace("\n", "")
    p = cli("simulate", pingpong, "--machine", f, check=False)
    assert p.returncode == 1 and "node.pcie.bw" in p.stderr
    assert "Traceback" not in p.stderr


def test_unknown_machine_lists_presets(pingpong):
    p = cli("simulate", pingpong, "--machine", "nosuch", check=False)
    assert p.returncode == 1 and "lassen" in p.stderr


def test_truncated_trace_is_a_clear_error(pingpong, tmp_path):
    data = pingpong.read_bytes()
    cut = tmp_path / "cut.g2g.parquet"
    cut.write_bytes(data[: len(data) // 2])
    p = cli("simulate", cut, "--no-progress", check=False)
    assert p.returncode == 1 and str(cut) in p.stderr and "Traceback" not in p.stderr
    with pytest.raises(TraceError):
        g2gsim.simulate(cut)


def test_deadlock_lists_blocked_ranks(tmp_path):
    b = TraceBuilder(2)
    b.add(0, "Recv", peer=1, tag=5, recv_bytes=8)
    b.add(1, "Recv", peer=0, tag=6, recv_bytes=8)
    p = tmp_path / "dl.g2g.parquet"
    b.build().write(p)
    r = cli("simulate", p, "--no-progress", check=False)
    assert r.returncode == 1
    err = r.stderr.replace("\n", " ")
    assert "deadlock" in err and "rank 0" in err and "tag 5" in err and "rank 1" in err


def test_unmatched_send_is_reported(tmp_path):
    # a rendezvous send with no receive blocks its rank: reported with peer and tag
    b = TraceBuilder(2)
    b.add(0, "Send", peer=1, tag=3, bytes=1 << 20)
    p = tmp_path / "um.g2g.parquet"
    b.build().write(p)
    with pytest.raises(g2gsim.SimulationError, match=r"rank 0.*Send.*peer 1 tag 3"):
        g2gsim.simulate(p)


def test_unknown_operation_names_rank_and_event(tmp_path):
    b = TraceBuilder(1)
    b.add(0, "Compute", dur_ns=5)
    t = b.build()
    import pyarrow as pa
    tab = t.table.set_column(t.table.schema.get_field_index("op"), "op", pa.array(["MPI_Frobnicate"]))
    t.table = tab
    p = tmp_path / "u.g2g.parquet"
    t.write(p)
    with pytest.raises(TraceError, match=r"rank 0, event 0: unknown operation"):
        g2gsim.simulate(p)


def test_generate_then_simulate_via_cli(tmp_path):
    out = tmp_path / "j.g2g.parquet"
    cli("generate", "jacobi2d", "--ranks", 8, "-p", "iterations=3", "-o", out)
    t = Trace.read(out)
    assert t.nranks == 8
    cli("simulate", out, "--machine", "leonardo", "--mode", "hostcopy", "--no-progress")


def test_text_summary_names_the_sharing_model(pingpong):
    # the printed report says which sharing model ran (issue 27), as the JSON's "sharing" does
    assert "max-min sharing" in cli("simulate", pingpong, "--machine", "lassen", "--no-progress").stdout
    out = cli("simulate", pingpong, "--machine", "lassen", "--sharing", "bottleneck", "--no-progress").stdout
    assert "bottleneck sharing" in out and "max-min sharing" not in out


def test_timeline_for_perfetto(pingpong, tmp_path):
    tl = tmp_path / "tl.json"
    g2gsim.simulate(pingpong, "lassen", mode="hostcopy", timeline=str(tl))
    ev = json.loads(tl.read_text())["traceEvents"]
    assert any(e.get("name") == "Send" for e in ev)
    assert any(e.get("cat") == "copy" for e in ev)


def test_dumpi_corpus_imports_and_simulates(corpus, tmp_path):
    # minife (52 MB of real application runs whose file prefix was renamed) is not a reader smoke test
    metas = [m for m in corpus.glob("**/*.meta") if "/minife/" not in str(m)]
    assert len(metas) >= (4 if corpus.full else 3)
    for m in metas:
        out = tmp_path / (m.stem + ".g2g.parquet")
        cli("import", m, "-o", out)
        r = g2gsim.simulate(out, "lassen")
        assert r["total_time_s"] > 0, m


def test_simulate_accepts_dumpi_directly_and_caches(corpus, tmp_path, monkeypatch):
    import g2gsim.sim as sim
    monkeypatch.setattr(sim, "CACHE_DIR", tmp_path / "cache")
    meta = corpus / "sst-macro/tests/test_traces/testbgp.meta"
    a = g2gsim.simulate(meta, "lassen")
    cached = list((tmp_path / "cache").glob("*.g2g.parquet"))
    assert len(cached) == 1
    b = g2gsim.simulate(meta, "lassen")
    assert a["total_time_s"] == b["total_time_s"]
    assert a["per_op"]["Alltoall"]["count"] == 49 and a["per_op"]["Isend"]["count"] == 588


def test_every_otf2_corpus_trace_imports_and_replays(corpus, tmp_path):
    """Every collective (and everything else) in the corpus's OTF2 traces replays without error."""
    anchors = corpus.glob("**/*.otf2")
    assert len(anchors) >= (5 if corpus.full else 3)
    seen_colls = set()
    for a in anchors:
        out = tmp_path / (a.parent.name + "-" + a.stem + ".g2g.parquet")
        cli("import", a, "-o", out)
        r = g2gsim.simulate(out, "lassen")
        assert r["total_time_s"] >= 0, a
        seen_colls |= {k for k in r["per_op"] if k in ("Barrier", "Bcast", "Allreduce", "Alltoall")}
    assert {"Barrier", "Bcast"} <= seen_colls


def test_info_shows_traced_time_per_operation(corpus):
    out = cli("info", corpus / "tracer/examples/stencil4d-otf/traces-32").stdout
    assert "Barrier" in out and "traced time" in out

"""A reduced run of bench/seeds/run.py (the seeds' published results): directions only, no exact
numbers.  The full benchmark and its table live in docs/validation/seeds.md."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SEED_PRESETS = ("piz-daint-cited", "leonardo-cited", "a100x8-nvswitch", "h100x4-nvlink",
                "a40x8-pcie", "juwels-booster-cited")


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("seeds_bench_run", ROOT / "bench" / "seeds" / "run.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture()
def ws(bench, tmp_path):
    return bench.Workspace(tmp_path)


def test_seed_presets_parse_and_are_sourced():
    from g2gsim.machines import check, presets
    ps = presets()
    for name in SEED_PRESETS:
        assert name in ps, name
        text = ps[name].read_text()
        assert "Sources" in text and "Assumptions" in text, name
        info = check(name, nodes=2)
        assert info, name


def test_diffusion_g2g_gain_grows_with_nodes(bench, ws):
    # 1 and 4 nodes, 1,000 of the seed's 10,000 steps
    r = bench.seed003_diffusion(ws, nodes=(1, 4), steps=1000, variants=False)
    times, gains = r.data["diffusion"]["times"], r.data["diffusion"]["gains"]
    assert abs(gains[1] - 1.0) < 0.01          # one node: no neighbour, G2G changes nothing
    assert gains[4] > gains[1] + 0.1           # published: 1.34x on 4 nodes
    assert times[4][0] < times[1][0] and times[4][1] < times[1][1]   # strong scaling
    assert all(c.ok for c in r.checks)


def test_matmul_speedup_shrinks_with_nodes(bench, ws):
    r = bench.seed000_matmul(ws, nodes=(1, 4), iterations=1, variants=False)
    s = r.data["matmul"]["speedup"]
    assert s[1] > s[4] > 1.0                   # published: ~2x on 1 node, shrinking with nodes
    # leonardo-cited stages Scatter/Gather through the host (mpi.device_collectives): the 1-node
    # speedup is near the published 2x (3.5x with every collective GPU-direct)
    assert 1.7 < s[1] < 2.6, s[1]
    paths = r.data["matmul_paths_1node"]
    assert paths.get("pipelined", 0) > 0 and paths.get("gpudirect-p2p", 0) > 0, paths
    ops = r.data["matmul_ops_1node"]          # (unaware, aware) ms per process
    for op in ("Scatter", "Gather"):
        assert 1.0 <= ops[op][1] / ops[op][0] < 2.0, (op, ops[op])   # published: slower, < 2x
    assert ops["Bcast"][0] > 5 * ops["Bcast"][1]                        # published: ~9x faster


def test_device_collectives_staged_vs_direct(ws):
    import g2gsim
    t = ws.trace("matmul", 4, iterations=1)
    rep = {}
    for dc in ("direct", "staged"):
        m = ws.machine("leonardo-cited", mpi={"device_collectives": dc})
        rep[dc] = g2gsim.simulate(t, m, mode="gpudirect", per_rank=False)
    assert "pipelined" not in rep["direct"]["paths"]
    assert set(rep["staged"]["paths"]) == {"pipelined"}
    assert rep["staged"]["total_time_s"] > 2 * rep["direct"]["total_time_s"]


def test_pingping_gpu_aware_beats_staged_inside_a_node(bench, ws):
    size = 64 * bench.MiB
    aware = bench.pingping_bw(ws, "a100x8-nvswitch", "gpudirect", size, inter=False)
    staged = bench.pingping_bw(ws, "a100x8-nvswitch", "as-traced", size, inter=False, buffers="host",
                               staged=True)
    assert aware > 10 * staged
    # NVLink peak: the theoretical 600 GB/s x the NVLink efficiency measured on the H200 node (0.818)
    assert abs(aware / (600 * 0.818) - 1) < 0.01, aware


def test_pingping_peaks_within_15_percent(bench, ws):
    # the link efficiencies of the seed presets (none fitted to these figures) bring the peaks of
    # seed 001 within 15 %, except the A40 pair (+15.5 %) and A100 inter-node CPU (+42 %): explained
    r = bench.seed001_pingping(ws, size=64 * bench.MiB, qualitative=False)
    err = {row.case: row.error for row in r.rows}
    assert len(err) == 5
    within = [c for c, e in err.items() if abs(e) <= bench.TOLERANCE]
    assert len(within) >= 3, err
    assert all(e < 0.45 for e in err.values()), err


def test_link_efficiency_key_scales_bandwidth(bench, ws):
    size = 64 * bench.MiB
    full = ws.machine("a100x8-nvswitch", **{"node.nvlink": {"efficiency": 1.0}})
    a = bench.pingping_bw(ws, full, "gpudirect", size, inter=False)
    b = bench.pingping_bw(ws, "a100x8-nvswitch", "gpudirect", size, inter=False)
    assert abs(b / a - 0.818) < 0.005, (a, b)


def test_juwels_latency_order(bench, ws):
    r = bench.seed004_latency(ws, variants=False)
    lat = r.data["latency"]
    assert lat["gdr_us"] * 3 < lat["nogdr_us"] <= lat["nocuda_us"] + 1e-6
    assert 1.0 < lat["gdr_us"] < 10.0


def test_table_and_summary(bench):
    rows = [bench.Row("x", "a", 10.0, 11.0, "s"), bench.Row("x", "b", 10.0, 20.0, "s"),
            bench.Row("x", "c", 10.0, 10.0, "s", "calibrated")]
    s = bench.summary(rows, [])
    assert s["figures_counted"] == 2 and s["within_15pct"] == 1
    assert s["excluded_calibrated"] == ["[x] c"]
    assert "(!)" in bench.table(rows)

"""Inter-node messages against the seeds' published figures (issue 25, item 5): ping-pong latency,
peak bandwidth and the curve between them, and the NIC shared by the GPUs of a node.

Figures (seed files in ../shared/seeds; their figures are images, so only numbers printed in the
text are used):
* seed 004 (Garcia de Gonzalo / Kraus, ISC 2024 slides), slide "Performance Results GPUDirect RDMA"
  (Open MPI 4.1.0RC1 + UCX 1.9.0 on JUWELS Booster): "Latency (1 byte) 4.27 us 24.56 us 25.64 us"
  = GPUDirect RDMA, CUDA-aware without GPUDirect RDMA, MPI without CUDA support (the last one set
  `gpu.copy_delay` of `juwels-booster-cited`: calibrated, not tested here).
* seed 001 (CUDA-aware MPI blog, part 1), the inter-node ping-ping paragraphs: A40 nodes "maximum
  effective bandwidth of 5.2 GB/s for CPU bidirectional communication" (2 x 25 GbE); A100 nodes
  35 GB/s CPU (2 x HDR200; calibrates `node.nic.rank_bw` of `a100x8-nvswitch`) and "with more MPI
  processes communicating simultaneously, the observed max effective bandwidth will increase";
  H100 nodes "only 1 HCA associated with 1 GPU, hence the theoretical limit of 1 HCA ~ 50 GB/s".
* seed 002 (Khetawat et al.), Sec. V-c / Observation 4: more ranks per node raise communication
  time through "contention on the node-local NIC" (Minisweep: +47.6-52.6 % at 32 ranks from one to
  six ranks per node).

Tolerance: 15 % on a published number. The seeds give one figure per case, without spread or
repetition count, so no statistical bound exists; 15 % is the project's criterion for the seeds
(docs/validation/seeds.md) and the accuracy the paper itself reports for its model on Lassen
(seed 002, Sec. III-e, Fig. 3: average error below 16 % for GPUDirect at >= 32 KB, below 13 % for
HostCopy). Statements without a number are checked for their direction only.
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

import g2gsim

ROOT = Path(__file__).resolve().parents[1]
TOL = 0.15
KiB, MiB = 1024, 1024 * 1024


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("seeds_bench_run_internode", ROOT / "bench" / "seeds" / "run.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def ws(bench, tmp_path_factory):
    return bench.Workspace(tmp_path_factory.mktemp("internode"))


def within(pred: float, pub: float, tol: float = TOL) -> bool:
    return abs(pred - pub) <= tol * pub


def test_seed004_one_byte_latency_across_nodes(bench, ws):
    m = "juwels-booster-cited"
    gdr = bench.pingpong_latency_us(ws, m, "gpudirect")
    nogdr = bench.pingpong_latency_us(ws, ws.machine(m, **{"node.nic": {"gpudirect_rdma": False}}), "gpudirect")
    assert within(gdr, 4.27), f"GPUDirect RDMA 1-byte latency {gdr:.2f} us, published 4.27 us"
    assert within(nogdr, 24.56), f"without GPUDirect RDMA {nogdr:.2f} us, published 24.56 us"
    assert gdr * 3 < nogdr                       # "GPUDirect can provide significant performance improvements"


def test_seed004_latency_bandwidth_curve(bench, ws):
    """The GPUDirect RDMA ping-pong from 1 byte to 64 MiB: its ends are the published latency (seed
    004) and HDR200's rate (25 GB/s per direction x 0.994, the IB headers; JSC booster overview);
    in between the half round trip stays within 15 % of latency + size / rate: no cost appears
    between the two ends that neither accounts for, and the half-bandwidth point n_1/2 = latency x
    rate (~106 KB) reaches half the link rate."""
    m = "juwels-booster-cited"
    lat = bench.pingpong_latency_us(ws, m, "gpudirect") * 1e-6
    rate = 25e9 * 0.994
    assert within(lat * 1e6, 4.27)
    prev = 0.0
    for size in (KiB, 16 * KiB, 64 * KiB, 256 * KiB, MiB, 16 * MiB, 64 * MiB):
        t = bench.pingpong_latency_us(ws, m, "gpudirect", size=size, iterations=(2, 4)) * 1e-6
        assert t > prev, f"not monotone at {size} B"
        prev = t
        ideal = lat + size / rate
        assert within(t, ideal), f"{size} B: {t * 1e6:.2f} us, latency + size / rate = {ideal * 1e6:.2f} us"
    big = 64 * MiB / (prev - lat)
    assert within(big, rate, 0.02), f"64 MiB moves at {big / 1e9:.2f} GB/s, HDR200 x 0.994 = {rate / 1e9:.2f}"
    n_half = int(lat * rate)
    t = bench.pingpong_latency_us(ws, m, "gpudirect", size=n_half, iterations=(2, 4)) * 1e-6
    assert 0.4 <= n_half / t / rate <= 0.6, f"at n_1/2 = {n_half} B: {n_half / t / 1e9:.2f} GB/s"


def test_seed001_internode_peaks(bench, ws):
    a40 = bench.pingping_bw(ws, "a40x8-pcie", "as-traced", 64 * MiB, True, buffers="host")
    assert within(a40, 5.2), f"A40 nodes, CPU buffers: {a40:.2f} GB/s, published 5.2"
    h100 = bench.pingping_bw(ws, "h100x4-nvlink", "gpudirect", 64 * MiB, True)
    # "the theoretical limit of 1 HCA ~ 50 GB/s": at most the HCA, and within 15 % of it
    assert h100 <= 50.0 * 1.001 and within(h100, 50.0), f"H100 GPU pair across nodes {h100:.1f} GB/s"


def test_seed001_more_processes_get_more_of_the_nic(bench, ws):
    """One process pair is held to its port (`node.nic.rank_bw`, set from the published 35 GB/s:
    not tested here); two pairs through the same HCA get more, at most the HCA's rate: the blog's
    statement, which the calibration did not use."""
    one = bench.pingping_bw(ws, "a100x8-nvswitch", "as-traced", 64 * MiB, True, buffers="host")
    two = bench.pingping_pairs_bw(ws, "a100x8-nvswitch", 64 * MiB, pairs=2)
    hca = 2 * 25.0 * 0.994
    assert one * 1.05 < two <= hca * 1.001, f"one pair {one:.1f}, two pairs {two:.1f} GB/s (HCA {hca:.1f})"
    # without the port, one pair already fills the HCA and a second one adds nothing
    m = ws.machine("a100x8-nvswitch", **{"node.nic": {"rank_bw": "1000GB/s"}})
    one_np = bench.pingping_bw(ws, m, "as-traced", 64 * MiB, True, buffers="host")
    two_np = bench.pingping_pairs_bw(ws, m, 64 * MiB, pairs=2)
    assert abs(two_np / one_np - 1) < 0.01, (one_np, two_np)


def _all_gpus_across(ws, machine: str, gpn: int, size: int, pairs: int) -> float:
    """`pairs` GPUs of node 0 each send `size` device bytes to the same GPU slot of node 1 at once
    (ping-ping pairs, gpudirect): the time of one exchange (difference of 2 and 4 exchanges)."""
    t = []
    for it in (2, 4):
        tr = ws.trace("pingping", 2 * pairs, sizes=[size], iterations=it, pairing="half")
        rep = g2gsim.simulate(tr, machine, mode="gpudirect", per_rank=False,
                              mapping=[0] * pairs + [1] * pairs, gpus_per_node=gpn)
        t.append(rep["total_time_s"])
    return (t[1] - t[0]) / 2


def test_lassen_gpus_share_the_node_nic(ws):
    """Lassen (seed 002, Sec. IV-a and Observation 4): the GPUs of a node share one EDR NIC, so four
    GPU pairs across two nodes take four times as long per exchange as one pair (16 MiB: the
    bandwidth term dominates; 5 %: the latencies and the rendezvous are paid once per pair, not
    shared). Summit (one EDR port per socket): three pairs of one socket share its port, one pair
    per socket does not."""
    one = _all_gpus_across(ws, "lassen", 4, 16 * MiB, 1)
    four = _all_gpus_across(ws, "lassen", 4, 16 * MiB, 4)
    assert within(four / one, 4.0, 0.05), f"lassen: one pair {one * 1e3:.3f} ms, four {four * 1e3:.3f} ms"
    one = _all_gpus_across(ws, "summit", 6, 16 * MiB, 1)
    three = _all_gpus_across(ws, "summit", 6, 16 * MiB, 3)
    assert within(three / one, 3.0, 0.05), f"summit: one pair {one * 1e3:.3f} ms, three {three * 1e3:.3f} ms"


def _minisweep_growth(ws) -> tuple[float, dict]:
    tr = ws.trace("minisweep", 32)
    c = {k: g2gsim.simulate(tr, "lassen", mode="gpudirect", per_rank=False, gpus_per_node=k)["comm_time_s"]
         for k in (1, 6)}
    return c[6] / c[1] - 1, c


def test_seed002_observation4_shared_nic(ws):
    """Minisweep, 32 ranks, one vs six ranks per node on lassen (GPUDirect): communication time
    grows when the node's ranks share its NIC (seed 002, Observation 4). Direction only here; the
    magnitude is the next test."""
    growth, c = _minisweep_growth(ws)
    assert growth > 0, f"comm time 1/node {c[1]:.4f} s, 6/node {c[6]:.4f} s: {growth * 100:+.1f} %"


@pytest.mark.xfail(strict=True, reason="known miss: +13 % predicted against the published +47.6 % at 32 "
                   "ranks; the generator's Minisweep proxy is not the traced application and the published "
                   "figure is TraceR's own simulation (docs/validation/seeds.md); strict: fails once it holds")
def test_seed002_observation4_magnitude(ws):
    growth, _ = _minisweep_growth(ws)
    assert within(1 + growth, 1.476)


def test_machine_check_reports_the_nic_ports():
    from g2gsim import machines
    assert machines.check("a100x8-nvswitch")["nic_rank_bw_bytes_per_s"] == 17.5e9
    d = machines.check("lassen")
    assert d["nic_rank_bw_bytes_per_s"] is None and d["nic_latency_ns"] == 600.0

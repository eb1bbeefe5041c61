"""Size bins ([[mpi.factors]]), per-rank shared-memory ports and the call overhead in the fitter
(issue 6), CPU only: the closed forms the fitter uses are the simulator's, the fitter recovers a
machine that has them, and its bins stay within tolerance."""
from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "tests"))

from g2gsim.calibrate import fit as fitmod  # noqa: E402
from g2gsim.calibrate.micro import KiB, MiB, Series, closed_form, simulate_series  # noqa: E402
from g2gsim.calibrate.verify import verify  # noqa: E402
from test_calibrate import KNOWN, _synthetic_raw  # noqa: E402

BINNED = KNOWN.replace('shm_bw = "12GB/s"', 'shm_bw = "40GB/s"\nshm_rank_bw = "12GB/s"').replace(
    'recv_overhead = "0.4us"', '''recv_overhead = "0.4us"
call_overhead = "0.5us"

[[mpi.factors]]
path = "host"
max_bytes = "4KiB"
bw_factor = 0.25
delay = "0.2us"

[[mpi.factors]]
path = "host"
max_bytes = "64KiB"
bw_factor = 0.5
blocking_send_overhead = "2us"

[[mpi.factors]]
path = "host"
max_bytes = "16MiB"
bw_factor = 1.5
send_overhead = "0.1us"

[[mpi.factors]]
path = "host"
bw_factor = 0.6

[[mpi.factors]]
path = "hostcopy"
max_bytes = "1MiB"
bw_factor = 0.4
delay = "1us"

[[mpi.factors]]
path = "gpudirect-p2p"
max_bytes = "2KiB"
delay = "1us"
blocking_send_overhead = "5us"
''')

EDGES = np.array([1, 4 * KiB, 4 * KiB + 1, 64 * KiB, 64 * KiB + 1, 16 * MiB, 16 * MiB + 1, 64 * MiB])


def test_closed_forms_with_factors_ports_and_call_overhead_are_the_simulator(tmp_path):
    m = tmp_path / "binned.toml"
    m.write_text(BINNED)
    p = fitmod.base_params(tomllib.loads(BINNED))
    assert p.shm_rank_bw == 12e9 and p.call_overhead == pytest.approx(0.5e-6)
    assert [b["max_bytes"] for b in p.factors["host"]][:3] == [4 * KiB, 64 * KiB, 16 * MiB]
    assert p.factors["host"][1]["blocking_send_overhead"] == pytest.approx(2e-6)
    for kind in ("pingpong", "pingpong-nb", "pingping"):
        for mode in ("host", "staged", "device"):
            s = Series(kind, mode, EDGES, np.ones(len(EDGES)), np.ones(len(EDGES)))
            sim = simulate_series(s, m)
            assert np.allclose(sim, closed_form(kind, mode, EDGES, p), rtol=2e-3), (kind, mode)
    # the blocking extra: ping-pong (blocking) pays it in its bins, the nonblocking one does not
    d = closed_form("pingpong", "device", EDGES, p) - closed_form("pingpong-nb", "device", EDGES, p)
    assert d[0] == pytest.approx(5e-6) and d[2] == pytest.approx(0.0, abs=1e-12)
    d = closed_form("pingpong", "host", EDGES, p) - closed_form("pingpong-nb", "host", EDGES, p)
    assert d[3] == pytest.approx(2e-6) and d[4] == pytest.approx(0.0, abs=1e-12)
    # the bins do act: without them the host curve is another one
    plain = tomllib.loads(BINNED)
    plain["mpi"].pop("factors")
    q = fitmod.base_params(plain)
    assert not np.allclose(closed_form("pingpong", "host", EDGES, q), closed_form("pingpong", "host", EDGES, p),
                           rtol=0.05)
    # per-rank ports: a ping-ping exchange of 64 MiB takes about one message, not two
    t1 = closed_form("pingpong", "host", [64 * MiB], p)[0]
    t2 = closed_form("pingping", "host", [64 * MiB], p)[0]
    assert t2 / t1 == pytest.approx(1.0, abs=0.02)


def test_split_call_overhead():
    # pp = c + X, pi = 2c + max(c, X)
    for c, X in ((0.4e-6, 0.1e-6), (0.2e-6, 1e-6), (0.0, 1e-6)):
        pp, pi = c + X, 2 * c + max(c, X)
        got = fitmod.split_call_overhead(pp, pi)
        assert got == pytest.approx((c, X), abs=1e-12)
    assert fitmod.split_call_overhead(1e-6, None) == (0.0, 1e-6)


def test_fit_bins_merge_within_tolerance_and_cut_at_the_eager_limit():
    p = fitmod.base_params(tomllib.loads(KNOWN))
    p.shm_rank_bw = 10e9
    x = np.array([2.0 ** i for i in range(6, 28)])
    # three regimes: slow below the 64 KiB eager limit, fast to 8 MiB, DRAM-bound above
    T = np.where(x <= 64 * KiB, 1e-6 + x / 4e9, np.where(x <= 8 * MiB, 2e-6 + x / 20e9, x / 8e9))
    bins, info = fitmod.fit_bins(x, T, "host", p, tol=0.03)
    assert 3 <= len(bins) <= 5
    assert any(b["max_bytes"] == 64 * KiB for b in bins)            # never across the eager limit
    assert not np.isfinite(bins[-1]["max_bytes"])                   # the last bin is open-ended
    assert all(seg["max_rel_err"] <= 0.03 for seg in info)
    assert bins[-1]["bw_factor"] == pytest.approx(0.8, rel=0.02)    # 8 GB/s over the 10 GB/s port
    p.factors = {"host": bins}
    pred = closed_form("pingpong", "host", x, p) - p.call_overhead
    assert np.max(np.abs(pred / T - 1)) < 0.03


def test_fit_recovers_a_machine_with_bins_ports_and_call_overhead(tmp_path):
    m = tmp_path / "binned.toml"
    m.write_text(BINNED)
    raw = _synthetic_raw(m)
    res = fitmod.fit(raw, base="h200x4", collectives=False, bins=True)
    p = res.params
    assert p.call_overhead == pytest.approx(0.5e-6, rel=0.05)
    assert p.shm_rank_bw is not None                                 # ping-ping ~ one ping-pong: ports
    assert {"host", "hostcopy", "gpudirect-p2p"} <= set(p.factors)
    # the blocking extras are recovered from the blocking ping-pong over the ping-ping line
    dev = [b for b in p.factors["gpudirect-p2p"] if b["max_bytes"] <= 2 * KiB]
    assert dev and all(b.get("blocking_send_overhead", 0) == pytest.approx(5e-6, rel=0.1) for b in dev)
    big = [b for b in p.factors["gpudirect-p2p"] if b["max_bytes"] > 2 * KiB]
    assert all(b.get("blocking_send_overhead", 0) < 0.2e-6 for b in big)
    out = tmp_path / "fitted.toml"
    fitmod.write_machine(res, out, raw_path="synthetic.json")
    text = out.read_text()
    assert "[[mpi.factors]]" in text and "shm_rank_bw" in text and "call_overhead" in text
    assert "blocking_send_overhead" in text
    rows = verify(raw, out, kinds=("pingpong", "pingping"))
    err = np.array([abs(r["error"]) for r in rows])
    assert np.median(err) < 0.01 and err.max() < 0.06, sorted(err)[-5:]


def test_committed_preset_has_the_fitted_model():
    from g2gsim import machines
    text, _ = machines.resolve("h200x4-calibrated")
    d = tomllib.loads(text)
    paths = {f["path"] for f in d["mpi"]["factors"]}
    assert paths == {"host", "hostcopy", "gpudirect-p2p"}
    assert "shm_rank_bw" in d["node"]["host"] and "call_overhead" in d["mpi"]
    assert d["collectives"]["algorithms"]["scatter"] == "linear_sequential"
    # per-collective bins for the three paths (docs/validation/h200x4.md, session 3)
    colls = {(f["collective"], f["path"]) for f in d["mpi"]["factors"] if "collective" in f}
    assert {("Scatter", "hostcopy"), ("Gather", "hostcopy"), ("Bcast", "gpudirect-p2p")} <= colls


def test_ring_bins_by_active_ranks_match_the_ring_and_leave_two_ranks_alone(tmp_path):
    """A ring series slower than the two-rank bins predict (every rank of the node at once): the
    fitter's active_ranks bins make the simulated ring step the measured one, and a two-rank
    ping-pong keeps its prediction (its node has 2 communicating ranks, the bins need 4)."""
    m = tmp_path / "known.toml"
    m.write_text(KNOWN)
    raw = _synthetic_raw(m)
    sizes = [16 * KiB, 256 * KiB, 4 * MiB]
    for mode, slow in (("staged", 1.4), ("device", 1.25)):
        s = Series("ring", mode, np.array(sizes), np.ones(3), np.array([5, 5, 5]), nranks=4)
        t = simulate_series(s, m) * slow

        def rec(x, mode=mode):
            st = {"min": x, "p10": x, "median": x, "p90": x, "mean": x, "max": x}
            return {k: st for k in (("step", "sendrecv", "d2h", "h2d") if mode == "staged" else ("step", "sendrecv"))}
        raw["concurrency"].append({"pattern": "ring-sendrecv", "mode": mode, "ranks": [0, 1, 2, 3], "sizes": sizes,
                                   "iterations": [5, 5, 5], "per_rank": [[rec(float(x))] * 4 for x in t]})
    plain = fitmod.fit(raw, base=m, collectives=False)
    res = fitmod.fit(raw, base=m, collectives=False, ring=True)
    assert res.params.load_ranks == 4 and set(res.params.load_factors) == {"hostcopy", "gpudirect-p2p"}
    out = tmp_path / "fitted.toml"
    fitmod.write_machine(res, out)
    doc = tomllib.loads(out.read_text())
    assert any(f.get("active_ranks") == 4 for f in doc["mpi"]["factors"])
    ring = [s for s in fitmod.series_from_raw(raw) if s.kind == "ring"]
    assert len(ring) == 2
    for s in ring:
        pred = simulate_series(s, out)
        np.testing.assert_allclose(pred, s.t, rtol=0.01)
    plain_out = tmp_path / "plain.toml"
    fitmod.write_machine(plain, plain_out)
    pp = Series("pingpong", "staged", np.array([16 * KiB, 4 * MiB]), np.ones(2), np.array([5, 5]))
    np.testing.assert_allclose(simulate_series(pp, out), simulate_series(pp, plain_out), rtol=1e-9)


def test_collective_bins_match_the_collective_series_and_leave_point_to_point_alone(tmp_path):
    """Collectives slower than their messages' ordinary bins predict (MPI on pinned buffers inside
    a collective): the fitter's per-collective bins make the simulated collective the measured one,
    extend the largest size's correction above it, and change no point-to-point prediction."""
    m = tmp_path / "known.toml"
    m.write_text(KNOWN.replace("[collectives]", "[collectives]") if "[collectives]" in KNOWN else KNOWN)
    raw = _synthetic_raw(m)
    sizes = [64 * KiB, 4 * MiB]
    for op in ("Scatter", "Gather"):
        s = Series("collective", "staged", np.array(sizes), np.ones(2), np.array([5, 5]), op=op, nranks=4,
                   meta={"root": 0})
        t = simulate_series(s, m) * 1.5
        st = [{"min": x, "p10": x, "median": x, "p90": x, "mean": x, "max": x} for x in map(float, t)]
        raw["collectives"].append({"op": op, "mode": "staged", "root": 0, "nranks": 4, "sizes": sizes,
                                   "iterations": [5, 5], "stats": st})
    plain = fitmod.fit(raw, base=m, collectives=False)
    res = fitmod.fit(raw, base=m, collectives=False, coll_bins=True)
    assert set(res.params.coll_factors) == {("Scatter", "hostcopy"), ("Gather", "hostcopy")}
    out, plain_out = tmp_path / "fitted.toml", tmp_path / "plain.toml"
    fitmod.write_machine(res, out)
    fitmod.write_machine(plain, plain_out)
    doc = tomllib.loads(out.read_text())
    assert {f.get("collective") for f in doc["mpi"]["factors"]} >= {"Scatter", "Gather"}
    for s in [x for x in fitmod.series_from_raw(raw) if x.kind == "collective" and x.mode == "staged"]:
        np.testing.assert_allclose(simulate_series(s, out), s.t, rtol=0.01)
        # twice the largest size: slower than the ordinary bins predict, like the largest point
        big = simulate_series(s, out, sizes=[8 * MiB])[0]
        assert big > 1.2 * simulate_series(s, plain_out, sizes=[8 * MiB])[0]
    pp = Series("pingping", "staged", np.array([64 * KiB, 4 * MiB]), np.ones(2), np.array([5, 5]))
    np.testing.assert_allclose(simulate_series(pp, out), simulate_series(pp, plain_out), rtol=1e-9)


def test_staged_collective_series_run_on_their_own_path(tmp_path):
    """measure.py's staged collectives send from page-locked buffers: their simulated messages take
    the staged (hostcopy) bins, never the pageable host path's collective bins (a machine with a
    Bcast factor for host buffers and ordinary hostcopy bins: the staged Bcast ignores the former)."""
    m = tmp_path / "m.toml"
    base = KNOWN + '''
[[mpi.factors]]
path = "hostcopy"
bw_factor = 0.25
'''
    m.write_text(base)
    m2 = tmp_path / "m2.toml"
    m2.write_text(base + '''
[[mpi.factors]]
path = "host"
collective = "Bcast"
bw_factor = 0.9
''')
    n = 64 * MiB
    staged = Series("collective", "staged", np.array([n]), np.ones(1), np.array([1]), op="Bcast", nranks=2)
    host = Series("collective", "host", np.array([n]), np.ones(1), np.array([1]), op="Bcast", nranks=2)
    t_staged = simulate_series(staged, m)[0]
    assert simulate_series(staged, m2)[0] == pytest.approx(t_staged, rel=1e-9)      # host Bcast bins not taken
    assert simulate_series(host, m2)[0] != pytest.approx(simulate_series(host, m)[0], rel=1e-3)
    # and the staged one moves its data at the hostcopy rate: slower than the host path by ~4x
    assert t_staged > 2 * simulate_series(host, m)[0]

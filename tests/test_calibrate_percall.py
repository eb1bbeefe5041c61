"""The joint fit of per-call costs and protocol switches (issue 25, items 3-4; calibrate/percall.py),
CPU only: the closed forms it uses are the simulator's (with the per-call keys), it recovers a
machine's per-call parameters from series simulated on that machine, each parameter is carried by
several series, and leaving one series out predicts it about as well as the fit that saw it."""
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
from g2gsim.calibrate.loo import leave_one_out  # noqa: E402
from g2gsim.calibrate.micro import KiB, MiB, Series, closed_form, simulate_series  # noqa: E402
from test_calibrate import KNOWN  # noqa: E402

# a machine with every per-call cost and the three host regimes, one staged rate and a device
# blocking switch: what the joint fit can express, so it must find it again
PERCALL = KNOWN.replace('shm_bw = "12GB/s"', 'shm_bw = "80GB/s"\nshm_rank_bw = "20GB/s"').replace(
    'shm_latency = "0.3us"', 'shm_latency = "0.1us"').replace(
    'send_overhead = "0.4us"\nrecv_overhead = "0.4us"', '''send_overhead = "50ns"
recv_overhead = "50ns"
call_overhead = "0.6us"
wait_overhead = "0.4us"
device_call_overhead = "0.8us"
blocking_send_overhead = "0.3us"

[[mpi.factors]]
path = "host"
max_bytes = "64KiB"
bw_factor = 0.5

[[mpi.factors]]
path = "host"
max_bytes = "4MiB"
bw_factor = 1.0

[[mpi.factors]]
path = "host"
bw_factor = 0.6

[[mpi.factors]]
path = "hostcopy"
bw_factor = 0.4

[[mpi.factors]]
path = "gpudirect-p2p"
max_bytes = "4KiB"
blocking_send_overhead = "6us"
''')
SIZES = sorted({2 ** i for i in range(0, 27, 2)} | {2 ** 11, 2 ** 13, 2 ** 15, 2 ** 16, 2 ** 17, 2 ** 21, 2 ** 23})


def _stats(t: float) -> dict:
    return {"min": t, "p10": t, "median": t, "p90": t, "mean": t, "max": t}


def synthetic_raw(machine: Path, kinds=("pingpong", "pingpong-nb", "pingping"), ring2: bool = False,
                  sizes: list[int] | None = None) -> dict:
    """Measurements as ``machine`` would give them, every curve simulated on it (two ranks)."""
    sizes = SIZES if sizes is None else sizes
    raw = {"format": "g2gsim-calibrate-raw", "version": 1, "date": "2026-01-01T00:00:00+00:00",
           "hosts": ["node0"], "nranks": 2, "mpi": {"library": "Test MPI 1.0", "mpi4py": "4"},
           "ucx": {"version": "1.0", "env": {}}, "gpu": {"name": "Test GPU", "count_per_node": 2},
           "cuda_aware": True, "p2p": [], "memcpy": [], "memcpy_concurrent": [], "concurrency": [],
           "collectives": [], "errors": [], "notes": []}
    it = [10] * len(sizes)
    for mode in ("host", "staged", "device"):
        for kind in kinds:
            s = Series(kind, mode, np.array(sizes), np.ones(len(sizes)), np.array(it))
            t = simulate_series(s, machine, iters=2)
            t = t * 2 if kind in ("pingpong", "pingpong-nb") else t          # the raw file holds round trips
            raw["p2p"].append({"pattern": kind, "mode": mode, "scope": "intra", "ranks": [0, 1], "gpus": [0, 1],
                               "sizes": sizes, "iterations": it, "stats": [_stats(float(x)) for x in t]})
        if ring2:
            s = Series("ring", mode, np.array(sizes), np.ones(len(sizes)), np.array(it), nranks=2)
            t = simulate_series(s, machine, iters=2)
            raw["concurrency"].append({"pattern": "ring-sendrecv", "mode": mode, "ranks": [0, 1], "sizes": sizes,
                                       "iterations": it,
                                       "per_rank": [[{"step": _stats(float(x))}, {"step": _stats(float(x))}]
                                                    for x in t]})
    for k in ("d2h", "h2d"):
        s = Series("memcpy", k, np.array(sizes), np.ones(len(sizes)), np.array(it), op="pinned", nranks=1)
        t = simulate_series(s, machine, iters=2)
        raw["memcpy"].append({"kind": k, "host": "pinned", "gpu": 0, "sizes": sizes, "iterations": it,
                              "stats": [_stats(float(x)) for x in t]})
    return raw


@pytest.fixture(scope="module")
def machine(tmp_path_factory) -> Path:
    m = tmp_path_factory.mktemp("percall") / "percall.toml"
    m.write_text(PERCALL)
    return m


def test_closed_forms_with_the_per_call_keys_are_the_simulator(machine):
    p = fitmod.base_params(tomllib.loads(PERCALL))
    assert (p.wait_call, p.device_call_overhead, p.blocking_send_overhead) == pytest.approx((0.4e-6, 0.8e-6, 0.3e-6))
    sizes = np.array([1, 2 * KiB, 4 * KiB, 4 * KiB + 1, 64 * KiB + 1, 4 * MiB + 1, 16 * MiB])
    for kind in ("pingpong", "pingpong-nb", "pingping", "ring"):
        for mode in ("host", "staged", "device"):
            s = Series(kind, mode, sizes, np.ones(len(sizes)), np.ones(len(sizes)), nranks=2)
            sim = simulate_series(s, machine)
            assert np.allclose(sim, closed_form(kind, mode, sizes, p, nranks=2), rtol=2e-3), (kind, mode)


def test_joint_fit_recovers_the_per_call_parameters(machine, tmp_path):
    raw = synthetic_raw(machine)
    res = fitmod.fit(raw, base="h200x4", collectives=False, engines=False)
    pc = res.details["per_call"]
    v = pc["values"]
    want = {"c": 0.6e-6, "w": 0.4e-6, "d": 0.8e-6, "o": 0.1e-6, "L": 0.1e-6, "b": 0.3e-6, "bd": 6e-6,
            "ie": 1 / 10e9, "ir": 1 / 20e9, "im": 1 / 12e9, "ihe": 1 / 8e9, "ih": 1 / 8e9, "inv": 1 / 300e9}
    # gpudirect_delay takes the difference of NVLink latencies between the base file and the node
    # (the series cannot tell them apart: docs/validation): delay + path latency is the node's
    want["G"] = 3e-6 + 2 * 0.5e-6 - res.params.nvlink_path_latency
    for k, x in want.items():
        assert v[k] == pytest.approx(x, rel=0.03, abs=5e-9), k
    assert (pc["eager_limit"], pc["device_switch"], pc["memory_switch"]) == (64 * KiB, 4 * KiB, 4 * MiB)
    assert not pc["fixed"], pc["fixed"]
    # the structural parameters are carried by several series each; the blocking extras by the
    # blocking series only (the only ones that send blocking)
    for k in ("c", "w", "d", "o", "ie", "ir", "ih", "G", "inv"):
        assert len(pc["support"][k]) >= 2, (k, pc["support"][k])
    assert set(pc["support"]["bd"]) == {"pingpong device"}
    # the written file: no per-size bins, the per-call keys with the series they came from
    out = tmp_path / "fitted.toml"
    fitmod.write_machine(res, out)
    text = out.read_text()
    d = tomllib.loads(text)
    assert d["mpi"]["wait_overhead"] and d["mpi"]["device_call_overhead"] and d["mpi"]["blocking_send_overhead"]
    # host: 3 regimes, hostcopy: 1 (its eager and rendezvous regimes at one rate are one bin),
    # gpudirect-p2p: 1 switch
    assert len(d["mpi"]["factors"]) == 5
    assert pc["staged_switch"] is None
    assert "fitted jointly on" in text and "pingping host" in text
    # the simulation of the written file reproduces every series
    from g2gsim.calibrate.verify import verify
    rows = verify(raw, out, kinds=("pingpong", "pingpong-nb", "pingping"))
    err = np.array([abs(r["error"]) for r in rows])
    assert err.max() < 0.02, sorted(err)[-3:]


STAGED_REGIMES = PERCALL.replace('''[[mpi.factors]]
path = "hostcopy"
bw_factor = 0.4
''', '''[[mpi.factors]]
path = "hostcopy"
max_bytes = "64KiB"
bw_factor = 0.25

[[mpi.factors]]
path = "hostcopy"
max_bytes = "16MiB"
bw_factor = 0.4

[[mpi.factors]]
path = "hostcopy"
bw_factor = 0.3
''')


def test_joint_fit_recovers_the_staged_regimes(tmp_path):
    """Staged (pinned) host messages have their own rate per protocol regime: eager up to the host
    eager limit, then up to their own memory switch, then streaming from memory (measured on the
    H100/H200 nodes: docs/validation/percall-fit.md).  A machine with three staged rates is
    recovered, and the written file has the three hostcopy bins."""
    assert STAGED_REGIMES != PERCALL
    m = tmp_path / "staged.toml"
    m.write_text(STAGED_REGIMES)
    raw = synthetic_raw(m, sizes=sorted(set(SIZES) | {2 ** 25}))
    res = fitmod.fit(raw, base="h200x4", collectives=False, engines=False)
    pc = res.details["per_call"]
    v = pc["values"]
    for k, x in {"ihe": 1 / 5e9, "ih": 1 / 8e9, "ihm": 1 / 6e9}.items():
        assert v[k] == pytest.approx(x, rel=0.03), k
    assert (pc["eager_limit"], pc["staged_switch"]) == (64 * KiB, 16 * MiB)
    out = tmp_path / "fitted.toml"
    fitmod.write_machine(res, out)
    hc = [f for f in tomllib.loads(out.read_text())["mpi"]["factors"] if f["path"] == "hostcopy"]
    assert [f.get("max_bytes") for f in hc] == ["64KiB", "16MiB", None]
    assert [f["bw_factor"] for f in hc] == pytest.approx([0.25, 0.4, 0.3], rel=0.03)


def test_joint_fit_without_the_nonblocking_series_says_what_it_cannot_tell(machine):
    """Without the nonblocking ping-pong the blocking extra b is not separable from c (ping-pong
    c + b + T, ping-ping 2c + max(w, T)): it keeps its base value and the fit says so."""
    raw = synthetic_raw(machine, kinds=("pingpong", "pingping"))
    res = fitmod.fit(raw, base="h200x4", collectives=False, engines=False)
    pc = res.details["per_call"]
    assert "b" in pc["fixed"]
    assert any("mpi.blocking_send_overhead: not fitted" in n for n in res.notes)


def test_two_rank_ring_joins_the_fit_and_carries_the_blocking_extras(machine):
    """measure.py's ring of MPI_Sendrecv on two ranks (a Sendrecv is Open MPI's irecv + a blocking
    send): a series of its own for the blocking extras next to the blocking ping-pong."""
    raw = synthetic_raw(machine, ring2=True)
    res = fitmod.fit(raw, base="h200x4", collectives=False, engines=False)
    pc = res.details["per_call"]
    assert "ring device" in pc["series"] and "ring host" in pc["series"]
    assert {"pingpong device", "ring device"} <= set(pc["support"]["bd"])
    assert pc["values"]["bd"] == pytest.approx(6e-6, rel=0.03)
    assert pc["values"]["b"] == pytest.approx(0.3e-6, rel=0.05)


def test_leave_one_out_on_synthetic_series_generalises(machine):
    """On data the model can express, a series left out is predicted about as well as by the fit
    that saw it (the point of fitting structure rather than bins): every held-out error within 2 %
    of the fit-set error, except where the series left out is the only one that determines a
    parameter: the device ping-ping is the only device series with two calls per message, the one
    that tells mpi.device_call_overhead from gpu.gpudirect_delay (without it the fit keeps d at its
    base value and the difference goes into the delay).  The device blocking extra is not such a
    case here: the two-rank ring's Sendrecv sends blocking too."""
    raw = synthetic_raw(machine, ring2=True, sizes=[1, 64, 2048, 4096, 8192, 65536, 131072, MiB, 4 * MiB,
                                                     8 * MiB, 64 * MiB])
    rows = leave_one_out(raw, base="h200x4")
    assert {r["series"] for r in rows} >= {"pingpong-nb host", "pingping device", "ring-sendrecv device"}
    for r in rows:
        if r.get("held_out") is None:
            assert r["series"] == "pingpong host"          # the fit starts from it
            continue
        for rng in ("small", "large"):
            f, h = r["fit_set"].get(rng), r["held_out"].get(rng)
            if not f:
                continue
            assert f["median_abs"] < 0.01, (r["series"], rng, f)
            if r["series"] == "pingping device":
                assert h["median_abs"] > 0.02 and "gpu.gpudirect_delay" in r["changed"]
            else:
                assert h["median_abs"] < f["median_abs"] + 0.02, (r["series"], rng, h, r.get("changed"))


def test_bins_stay_an_option():
    """``--bins`` (fit(bins=True)) still fits the per-curve size bins; the default does not."""
    from test_calibrate import SAMPLE
    binned = fitmod.fit(SAMPLE / "raw.json", base="h200x4", collectives=False, engines=False, bins=True)
    joint = fitmod.fit(SAMPLE / "raw.json", base="h200x4", collectives=False, engines=False)
    assert "per_call" not in binned.details and len(binned.params.factors["host"]) > 3
    assert "per_call" in joint.details
    assert all(len(b) <= 3 for b in joint.params.factors.values())


def test_collective_rate_factor_is_recovered_and_leaves_point_to_point_alone(machine, tmp_path):
    """A collective that moves its data at half the point-to-point rate (one bin per path for its
    messages): fit_collective_rates finds the factor from the collective series >= 1 MiB, and the
    point-to-point series keep their prediction."""
    slow = tmp_path / "slow.toml"
    slow.write_text(PERCALL + '''
[[mpi.factors]]
path = "host"
collective = "Scatter"
max_bytes = "64KiB"
bw_factor = 0.25

[[mpi.factors]]
path = "host"
collective = "Scatter"
max_bytes = "4MiB"
bw_factor = 0.5

[[mpi.factors]]
path = "host"
collective = "Scatter"
bw_factor = 0.3
''')
    raw = synthetic_raw(machine, sizes=[1, 4 * KiB, 64 * KiB, MiB, 4 * MiB, 16 * MiB])
    sizes = [MiB, 2 * MiB, 4 * MiB]
    s = Series("collective", "host", np.array(sizes), np.ones(3), np.ones(3), op="Scatter", nranks=2)
    t = simulate_series(s, slow)
    raw["collectives"].append({"op": "Scatter", "mode": "host", "nranks": 2, "root": 0, "sizes": sizes,
                               "iterations": [5, 5, 5], "stats": [_stats(float(x)) for x in t]})
    res = fitmod.fit(raw, base="h200x4", collectives=False, engines=False)
    assert not res.params.coll_factors
    fitmod.fit_collective_rates(fitmod.series_from_raw(raw), res)
    info = res.details["collective_rates"]["Scatter host"]
    assert info["factor"] == pytest.approx(0.5, rel=0.03)
    assert info["rms_log_error_after"] < 0.01 < info["rms_log_error_before"]
    out = tmp_path / "fitted.toml"
    fitmod.write_machine(res, out)
    assert simulate_series(s, out) == pytest.approx(t, rel=0.02)
    pp = Series("pingpong", "host", np.array(sizes), np.ones(3), np.ones(3))
    assert simulate_series(pp, out) == pytest.approx(simulate_series(pp, machine), rel=0.02)


def _add_bursts(raw: dict, machine: Path, modes=("host", "device"), window: int = 16) -> dict:
    sizes = [8, 512, 4 * KiB, 32 * KiB]
    it = [10] * len(sizes)
    for mode in modes:
        s = Series("burst", mode, np.array(sizes), np.ones(len(sizes)), np.array(it), meta={"window": window})
        t = simulate_series(s, machine, iters=2)
        raw.setdefault("burst", []).append({"pattern": "burst", "mode": mode, "scope": "intra", "ranks": [0, 1],
                                            "window": window, "sizes": sizes, "iterations": it,
                                            "stats": [_stats(float(x)) for x in t]})
    return raw


def test_gap_is_fitted_from_the_message_rate_series(tmp_path):
    """LogGP g (mpi.gap) from the burst series (windows of Isends back to back, then a reply): a
    machine whose injection is gap-bound (2 us between messages, more than the 0.6 us per call) is
    recovered to the grid's step, and the file says where it came from; the same machine without a
    gap gets none (injection is then bound by the per-call costs, which the other series fix)."""
    m = tmp_path / "gap.toml"
    m.write_text(PERCALL.replace('blocking_send_overhead = "0.3us"', 'blocking_send_overhead = "0.3us"\ngap = "2us"', 1))
    raw = _add_bursts(synthetic_raw(m, kinds=("pingpong", "pingpong-nb", "pingping")), m)
    res = fitmod.fit(raw, base="h200x4", collectives=False, engines=False)
    g = res.details["gap"]
    assert res.params.gap == pytest.approx(2e-6, rel=0.15)
    assert g["series"] == ["burst host"]
    assert max(abs(x) for x in g["errors"]["burst host"]) < 0.1
    assert max(abs(x) for x in g["errors_without_gap"]["burst host"]) > 0.3
    # the device bursts follow the host gap there (mpi.device_gap's default): no device gap of its own
    assert res.params.device_gap is None
    assert any(n.startswith("mpi.device_gap: none") for n in res.notes)
    out = tmp_path / "fitted.toml"
    fitmod.write_machine(res, out)
    text = out.read_text()
    assert tomllib.loads(text)["mpi"]["gap"] == fitmod.fmt_dur(res.params.gap)
    assert "burst host" in next(line for line in text.splitlines() if line.startswith("gap ="))
    # no gap in the machine: none fitted, and a note says why
    m0 = _write(tmp_path, PERCALL)
    raw0 = _add_bursts(synthetic_raw(m0, kinds=("pingpong", "pingpong-nb", "pingping")), m0)
    res0 = fitmod.fit(raw0, base="h200x4", collectives=False, engines=False)
    assert res0.params.gap == 0.0 and res0.params.device_gap is None
    assert any(n.startswith("mpi.gap: none") for n in res0.notes)


def test_device_gap_is_fitted_apart_from_the_host_gap(tmp_path):
    """GPU-aware MPIs issue their own GPU operations per device message (measured on 2 x H100:
    4.3 us per message in a window, whatever the size up to 32 KiB, against ~1 us on host buffers):
    a machine with mpi.device_gap = 4 us and no host gap is recovered as such, and the written
    file carries the key."""
    m = _write(tmp_path, PERCALL.replace('blocking_send_overhead = "0.3us"',
                                         'blocking_send_overhead = "0.3us"\ndevice_gap = "4us"', 1))
    raw = _add_bursts(synthetic_raw(m, kinds=("pingpong", "pingpong-nb", "pingping")), m)
    res = fitmod.fit(raw, base="h200x4", collectives=False, engines=False)
    assert res.params.gap == 0.0
    assert res.params.device_gap == pytest.approx(4e-6, rel=0.15)
    assert max(abs(x) for x in res.details["device_gap"]["errors"]["burst device"]) < 0.1
    out = tmp_path / "fitted.toml"
    fitmod.write_machine(res, out)
    assert tomllib.loads(out.read_text())["mpi"]["device_gap"] == fitmod.fmt_dur(res.params.device_gap)


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "pc.toml"
    p.write_text(text)
    return p


def test_without_burst_series_the_gap_keeps_its_base_value_and_says_so(machine):
    raw = synthetic_raw(machine, kinds=("pingpong", "pingping"))
    res = fitmod.fit(raw, base="h200x4", collectives=False, engines=False)
    assert "gap" not in res.details
    assert any("mpi.gap not fitted: no message-rate series" in n for n in res.notes)


def test_fit_writes_its_size_range_and_a_larger_message_is_a_notice(machine, tmp_path):
    """`calibrate fit` writes the largest message it measured (calibrated_max_bytes); a simulation
    whose trace has a larger message says its rate there is extrapolated, one within it says nothing."""
    raw = synthetic_raw(machine, kinds=("pingpong", "pingping"), sizes=[1, 4096, 65536, 1 << 20])
    res = fitmod.fit(raw, base="h200x4", collectives=False, engines=False)
    out = tmp_path / "fitted.toml"
    fitmod.write_machine(res, out)
    assert tomllib.loads(out.read_text())["calibrated_max_bytes"] == "1MiB"
    from g2gsim import simulate
    from g2gsim.trace import Trace

    def two_rank(n: int) -> Path:
        t = Trace.from_columns(2, {"rank": [0, 1], "op": ["Send", "Recv"], "peer": [1, 0], "tag": [1, 1],
                                   "bytes": [n, 0], "recv_bytes": [0, n]})
        p = tmp_path / f"t{n}.g2g.parquet"
        t.write(p)
        return p

    big = simulate(str(two_rank(4 << 20)), str(out))
    assert big["max_message_bytes"] == 4 << 20
    assert any("largest message (4 MiB) is larger than any" in n and "up to 1 MiB" in n for n in big["notices"])
    small = simulate(str(two_rank(1 << 20)), str(out))
    assert not any("largest message" in n for n in small["notices"])


def test_fit_writes_its_rank_count_and_a_trace_with_more_ranks_is_a_notice(machine, tmp_path):
    """`calibrate fit` writes the most ranks a series ran on (calibrated_ranks); a trace with more
    ranks on a node says collective algorithms and sharing are extrapolated (a 2-rank calibration
    cannot tell Open MPI's Bcast algorithms apart: issue 28), one within it says nothing."""
    raw = synthetic_raw(machine, kinds=("pingpong", "pingping"), sizes=[1, 4096, 65536])
    res = fitmod.fit(raw, base="h200x4", collectives=False, engines=False)
    out = tmp_path / "fitted.toml"
    fitmod.write_machine(res, out)
    assert tomllib.loads(out.read_text())["calibrated_ranks"] == 2
    from g2gsim import simulate
    from g2gsim.trace import Trace

    def ring(p: int) -> Path:
        cols: dict[str, list] = {"rank": [], "op": [], "peer": [], "tag": [], "bytes": [], "recv_bytes": []}
        for r in range(p):
            for op, peer, b, rb in (("Isend", (r + 1) % p, 64, 0), ("Recv", (r - 1) % p, 0, 64)):
                for k, v in zip(cols, (r, op, peer, 1, b, rb)):
                    cols[k].append(v)
        t = Trace.from_columns(p, {**cols, "req": [1 if o == "Isend" else 0 for o in cols["op"]]})
        f = tmp_path / f"ring{p}.g2g.parquet"
        t.write(f)
        return f

    # the what-if "4 GPUs per node" on a machine calibrated on two of them
    four = simulate(str(ring(4)), str(out), machine_set={"node.gpus": 4})
    assert four["nodes"] == 1
    assert any("runs 4 ranks on a node" in n and "at most 2" in n for n in four["notices"]), four["notices"]
    two = simulate(str(ring(2)), str(out), machine_set={"node.gpus": 4})
    assert not any("ranks on a node" in n for n in two["notices"])
    spread = simulate(str(ring(4)), str(out))        # 4 ranks over two 2-GPU nodes: 2 per node
    assert not any("ranks on a node" in n for n in spread["notices"])

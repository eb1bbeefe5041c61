"""Multi-peer series, copy engines in the fit, and leave-one-out error (issue 25), CPU only: a
machine with copy engines generates the measurements, the fitter finds the engine count from the
series where one GPU receives from several peers at once, and leave-one-out predicts a series the
fit never saw."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "tests"))

from g2gsim.calibrate import fit as fitmod  # noqa: E402
from g2gsim.calibrate import loo as loomod  # noqa: E402
from g2gsim.calibrate.micro import MiB, Series, series_from_raw, simulate_series  # noqa: E402
from test_calibrate import KNOWN, _synthetic_raw  # noqa: E402

# every pair its own NVLink (nothing shared between pairs), two copy engines per GPU at the link rate:
# three transfers into one GPU at once put two on one engine
ENGINES = KNOWN.replace('kind = "switch"', 'kind = "all-to-all"').replace(
    'gpudirect_delay = "3us"', 'gpudirect_delay = "3us"\ncopy_engines = 2\ncopy_engine_bw = "300GB/s"')
SIZES = [MiB, 16 * MiB, 64 * MiB]


def _stats(t):
    return {"min": t, "p10": t, "median": t, "p90": t, "mean": t, "max": t}


def _with_multipeer(machine: Path) -> dict:
    raw = _synthetic_raw(machine)
    raw["multipeer"] = []
    s = Series("all-pairs", "device", np.array(SIZES), np.ones(3), np.array([5] * 3), nranks=4)
    t = simulate_series(s, machine, iters=2)
    raw["multipeer"].append({"pattern": "all-pairs", "mode": "device", "ranks": [0, 1, 2, 3], "sizes": SIZES,
                             "iterations": [5] * 3, "per_rank": [[_stats(float(x))] * 4 for x in t]})
    s = Series("fan-in", "device", np.array(SIZES), np.ones(3), np.array([5] * 3), nranks=4)
    t = simulate_series(s, machine, iters=2)
    raw["multipeer"].append({"pattern": "fan-in", "mode": "device", "root": 0, "peers": [1, 2, 3], "sizes": SIZES,
                             "iterations": [5] * 3, "stats": [_stats(float(x)) for x in t]})
    return raw


def test_multipeer_series_are_read_and_simulated(tmp_path):
    m = tmp_path / "engines.toml"
    m.write_text(ENGINES)
    raw = _with_multipeer(m)
    mp = [s for s in series_from_raw(raw) if s.kind in ("all-pairs", "fan-in")]
    assert [s.kind for s in mp] == ["all-pairs", "fan-in"]
    # all-pairs with 2 engines: about twice one pair's exchange at 64 MiB (two of the three
    # incoming transfers share an engine)
    pair = Series("pingping", "device", np.array([64 * MiB]), np.ones(1), np.array([5]))
    one = simulate_series(pair, m)[0]
    assert 1.8 < mp[0].t[-1] / one < 2.2, (mp[0].t[-1], one)


def test_fit_finds_the_copy_engines_and_leaves_them_out_without_multipeer_data(tmp_path):
    m = tmp_path / "engines.toml"
    m.write_text(ENGINES)
    raw = _with_multipeer(m)
    res = fitmod.fit(raw, base="h200x4", collectives=False)
    assert res.params.copy_engines == 2, res.details.get("copy_engines")
    sc = res.details["copy_engines"]["median_abs_log_error"]
    assert sc["2"] < 0.02 and sc["None"] > 0.2, sc
    out = tmp_path / "fitted.toml"
    fitmod.write_machine(res, out)
    assert "copy_engines = 2" in out.read_text()
    # without the multi-peer section the count cannot be told: no engines, and a note says why
    raw.pop("multipeer")
    res = fitmod.fit(raw, base="h200x4", collectives=False)
    assert res.params.copy_engines is None
    assert any("copy engines not fitted" in n for n in res.notes)


def test_leave_one_out_predicts_the_held_out_series(tmp_path):
    m = tmp_path / "engines.toml"
    m.write_text(ENGINES)
    raw = _with_multipeer(m)
    rows = loomod.leave_one_out(raw, base="h200x4", only=["all-pairs device P=4", "pingpong host"])
    by = {r["series"]: r for r in rows}
    # the fit cannot start without the host ping-pong: said, not skipped
    assert by["pingpong host"]["held_out"] is None and "cannot do without" in by["pingpong host"]["why"]
    ap = by["all-pairs device P=4"]
    # fitted without all-pairs, the engines come from fan-in, and all-pairs is predicted
    assert ap["held_out"]["large"]["worst_abs"] < 0.05, ap["held_out"]
    assert ap["fit_set"]["large"]["worst_abs"] < 0.05
    md = loomod.markdown(rows)
    assert "| all-pairs device P=4 | >= 32 KiB | 3 |" in md


def test_rotated_all_pairs_is_its_own_series_with_each_rank_starting_on_the_next(tmp_path):
    """measure.py records the all-pairs of P ranks in ascending and in rotated peer order (issue 28):
    two series with their own names (loo labels alike), and the rotated one's trace posts each
    rank's Irecvs and Isends to r+1, r+2, ... first."""
    from g2gsim.calibrate.micro import build_trace
    entry = {"pattern": "all-pairs", "mode": "device", "ranks": [0, 1, 2, 3], "sizes": SIZES,
             "iterations": [5] * 3, "per_rank": [[_stats(1e-3)] * 4 for _ in SIZES]}
    raw: dict = {"format": "g2gsim-calibrate-raw"}
    raw["multipeer"] = [entry, {**entry, "order": "rotated"},
                        {**entry, "ranks": [0, 1], "per_rank": [[_stats(1e-3)] * 2 for _ in SIZES]}]
    names = [s.name for s in series_from_raw(raw)]
    assert names == ["all-pairs device P=4", "all-pairs device P=4 rotated", "all-pairs device"]
    assert [lab for lab, _, _ in loomod.entries(raw)] == names
    rot = series_from_raw(raw)[1]
    tr = build_trace(rot, 4096, iters=1)
    df = tr.to_pandas()
    irecv = df[df["op"] == "Irecv"]
    first = {int(r): int(g["peer"].iloc[0]) for r, g in irecv.groupby("rank")}
    assert first == {0: 1, 1: 2, 2: 3, 3: 0}, first

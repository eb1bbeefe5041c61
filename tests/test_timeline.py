"""Perfetto timelines: nested slices only on every track (Perfetto's rule), transfers and copies on
lanes, gzip output, rank and window filters, ``simulate --timeline``."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import g2gsim
from g2gsim.timeline import check_nesting, load_events


@pytest.fixture(scope="module")
def jacobi(tmp_path_factory):
    d = tmp_path_factory.mktemp("tl")
    p = d / "j16.g2g.parquet"
    subprocess.run([sys.executable, "-m", "g2gsim.cli", "generate", "jacobi2d", "--ranks", "16", "-p",
                    "iterations=20", "-o", str(p)], check=True, capture_output=True, timeout=300)
    return p


def test_checker_finds_partial_overlap():
    ev = [{"ph": "X", "name": "a", "pid": 0, "tid": 1, "ts": 0.0, "dur": 2.0},
          {"ph": "X", "name": "b", "pid": 0, "tid": 1, "ts": 1.0, "dur": 2.0},
          {"ph": "X", "name": "c", "pid": 0, "tid": 2, "ts": 0.0, "dur": 4.0},
          {"ph": "X", "name": "d", "pid": 0, "tid": 2, "ts": 1.0, "dur": 1.0},
          {"ph": "X", "name": "e", "pid": 0, "tid": 2, "ts": 4.0, "dur": 1.0}]
    bad = check_nesting(ev)
    assert len(bad) == 1 and "b [1000, 3000)" in bad[0] and "tid 1" in bad[0]


@pytest.mark.parametrize("mode", ["hostcopy", "gpudirect"])
def test_every_track_nests(jacobi, tmp_path, mode):
    p = tmp_path / "t.json"
    g2gsim.simulate(jacobi, "lassen", mode=mode, timeline=str(p))
    ev = load_events(p)
    assert check_nesting(ev) == []
    cats = {e.get("cat") for e in ev if e.get("ph") == "X"}
    assert {"mpi", "network"} <= cats
    lanes = {(e["pid"], e["tid"]) for e in ev if e.get("cat") in ("network", "copy")}
    ranks = {(e["pid"], e["tid"]) for e in ev if e.get("cat") in ("mpi", "compute", "collective")}
    assert lanes and not lanes & ranks
    # every flow end has its start
    starts = {e["id"] for e in ev if e.get("ph") == "s"}
    assert {e["id"] for e in ev if e.get("ph") == "f"} <= starts


def test_gzip_and_filters_shrink(jacobi, tmp_path):
    sizes = {}
    for name, kw in [("full", {}), ("ranks", {"timeline_ranks": [0, 1, 2, 3]}),
                     ("window", {"timeline_window_ns": (200_000, 600_000)})]:
        p = tmp_path / f"{name}.json.gz"
        g2gsim.simulate(jacobi, "lassen", mode="hostcopy", timeline=str(p), **kw)
        ev = load_events(p)
        assert check_nesting(ev) == []
        sizes[name] = (p.stat().st_size, len(ev))
        xs = [e for e in ev if e.get("ph") == "X"]
        if name == "ranks":
            assert {e["tid"] for e in xs if e.get("cat") in ("mpi", "compute", "collective")} <= {0, 1, 2, 3}
            assert all(e["args"]["from"] in range(4) or e["args"]["to"] in range(4)
                       for e in xs if e.get("cat") == "network")
        if name == "window":
            assert all(e["ts"] * 1000 < 600_000 and (e["ts"] + e["dur"]) * 1000 >= 200_000 - 1 for e in xs)
    assert sizes["ranks"][0] < sizes["full"][0] and sizes["window"][0] < sizes["full"][0]
    assert sizes["ranks"][1] < sizes["full"][1] and sizes["window"][1] < sizes["full"][1]
    plain = tmp_path / "plain.json"
    g2gsim.simulate(jacobi, "lassen", mode="hostcopy", timeline=str(plain))
    assert sizes["full"][0] < plain.stat().st_size / 4        # gzip


def test_simulate_cli_timeline(jacobi, tmp_path):
    p = tmp_path / "cli.json.gz"
    r = subprocess.run([sys.executable, "-m", "g2gsim.cli", "simulate", str(jacobi), "--no-progress",
                        "--timeline", str(p), "--timeline-ranks", "0-1,5", "--timeline-window", "0:1ms"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    ev = load_events(p)
    assert check_nesting(ev) == []
    assert {e["tid"] for e in ev if e.get("cat") == "mpi"} <= {0, 1, 5}
    r = subprocess.run([sys.executable, "-m", "g2gsim.cli", "simulate", str(jacobi), "--no-progress",
                        "--timeline-ranks", "0"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 1 and "--timeline PATH" in r.stderr
    r = subprocess.run([sys.executable, "-m", "g2gsim.cli", "simulate", str(jacobi), "--no-progress",
                        "--timeline", str(p), "--timeline-window", "2ms:1ms"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 1 and "end must be after the start" in r.stderr

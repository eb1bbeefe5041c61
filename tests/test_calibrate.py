"""Calibration and validation (issue 6; python/g2gsim/calibrate/), CPU only.

* the measurement script and the workload script run in host-only mode under Open MPI (2 ranks,
  oversubscribed; no cupy needed);
* the fitter recovers the parameters of a known machine file from measurements synthesised by
  simulating that file (round trip), and the written file reproduces them;
* validate's traces, comparison and tables work on the sample of the real H200 run
  (tests/data/h200x4-calibrate/).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

from g2gsim.calibrate import fit as fitmod  # noqa: E402
from g2gsim.calibrate.micro import (KiB, MiB, P2PParams, Series, build_trace, closed_form,  # noqa: E402
                                    series_from_raw, simulate_series)
from g2gsim.calibrate.validate import (compare, load_runs, staged_to_device, trace_from_run)  # noqa: E402
from g2gsim.calibrate.verify import summarize, verify  # noqa: E402

SAMPLE = ROOT / "tests" / "data" / "h200x4-calibrate"
CAL = ROOT / "python" / "g2gsim" / "calibrate"
MPI_ENV = {
    "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
    "OMPI_MCA_btl_vader_single_copy_mechanism": "none", "OMPI_MCA_rmaps_base_oversubscribe": "1",
    "OMPI_MCA_pml": "ob1", "OMPI_MCA_btl": "self,vader", "OMPI_MCA_osc": "^ucx",
    "OMPI_MCA_btl_tcp_if_include": "lo", "OMPI_MCA_oob_tcp_if_include": "lo",
}


def _have_mpi() -> bool:
    if shutil.which("mpirun") is None:
        return False
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return True


needs_mpi = pytest.mark.skipif(not _have_mpi(), reason="mpirun and mpi4py are needed")


def _mpirun(args: list[str], np_: int = 2, timeout: int = 240) -> subprocess.CompletedProcess:
    env = dict(os.environ, **MPI_ENV)
    env["PYTHONPATH"] = str(ROOT / "python") + os.pathsep + env.get("PYTHONPATH", "")
    cmd = ["mpirun", "--oversubscribe", "--allow-run-as-root", "-np", str(np_), sys.executable, *args]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    assert p.returncode == 0, f"{' '.join(cmd)} failed:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    return p


# ------------------------------------------------------------------------------------------------
# the scripts, host-only under Open MPI
# ------------------------------------------------------------------------------------------------
@needs_mpi
def test_measure_ring_host_only(tmp_path):
    """The ring series (every rank MPI_Sendrecv at once) on 3 oversubscribed ranks, and its curve."""
    out = tmp_path / "raw.json"
    _mpirun(["-m", "g2gsim.calibrate.measure", "--host-only", "--sections", "concurrency", "--max-bytes", "256KiB",
             "--budget", "1MiB", "--max-iters", "20", "-o", str(out), "--quiet"], np_=3)
    d = json.loads(out.read_text())
    ring = [e for e in d["concurrency"] if e["pattern"] == "ring-sendrecv"]
    # the first two ranks alone (P=2), then every rank (P=3)
    assert [(e["mode"], e["ranks"]) for e in ring] == [("host", [0, 1]), ("host", [0, 1, 2])]
    assert all(len(pr) == 2 for pr in ring[0]["per_rank"])
    e = ring[1]
    assert e["sizes"] == [16384, 65536, 131072, 139264, 262144]
    for per_rank in e["per_rank"]:
        assert len(per_rank) == 3
        for r in per_rank:
            assert set(r) == {"step", "sendrecv"}
            assert 0 < r["sendrecv"]["median"] <= r["step"]["median"]
    rs = [x for x in series_from_raw(d) if x.kind == "ring"]
    assert [(x.name, x.nranks) for x in rs] == [("ring host", 2), ("ring host P=3", 3)]
    assert len(rs[1].t) == 5 and np.all(rs[1].t > 0)


@needs_mpi
def test_measure_host_only(tmp_path):
    out = tmp_path / "raw.json"
    _mpirun(["-m", "g2gsim.calibrate.measure", "--host-only", "--max-bytes", "64KiB", "--budget", "256KiB",
             "--max-iters", "20", "-o", str(out), "--quiet"])
    d = json.loads(out.read_text())
    assert d["format"] == "g2gsim-calibrate-raw" and d["nranks"] == 2
    assert d["modes"] == ["host"] and d["cuda_aware"] is False and not d["errors"]
    assert d["mpi"]["library"] and d["date"] and d["hosts"]
    pats = {(e["pattern"], e["mode"], e["scope"]) for e in d["p2p"]}
    assert pats == {("pingpong", "host", "intra"), ("pingpong-nb", "host", "intra"), ("pingping", "host", "intra")}
    for e in d["p2p"]:
        assert e["sizes"] == [2 ** i for i in range(17)]                 # 1 B .. 64 KiB
        assert all(s["min"] <= s["median"] <= s["max"] and s["median"] > 0 for s in e["stats"])
        assert e["iterations"][0] == 20 and e["iterations"][-1] >= 4
    assert {c["op"] for c in d["collectives"]} == {"Bcast", "Scatter", "Gather"}
    assert d["memcpy"] == []                                              # no GPU
    # the loader turns it into curves in the model's units (one-way ping-pong = half the round trip)
    ss = series_from_raw(d)
    pp = [s for s in ss if s.kind == "pingpong"][0]
    assert np.allclose(pp.t * 2, [s["median"] for s in d["p2p"][0]["stats"]])
    nb = [s for s in ss if s.kind == "pingpong-nb"][0]                  # nonblocking: also half the round trip
    e_nb = next(e for e in d["p2p"] if e["pattern"] == "pingpong-nb")
    assert np.allclose(nb.t * 2, [s["median"] for s in e_nb["stats"]]) and len(nb.sizes) == 17


@needs_mpi
def test_workloads_host_only_and_compare(tmp_path):
    for mode in ("hostcopy", "device"):
        _mpirun([str(CAL / "workloads.py"), "--mode", mode, "--host-only", "--scale", "small",
                 "--only", "pingpong,jacobi,jacobi-overlap,jacobi-nb,allpairs,matmul", "-o", str(tmp_path)])
    runs = load_runs([tmp_path])
    names = ("pingpong", "jacobi", "jacobi-overlap", "jacobi-nb", "allpairs", "matmul")
    assert {(r.workload, r.mode) for r in runs} == {(w, m) for w in names for m in ("hostcopy", "device")}
    for r in runs:
        tr = trace_from_run(r)
        tr.validate()
        ops = tr.op_counts()
        assert ops.get("Compute", 0) > 0
        if r.mode == "hostcopy":
            assert ops.get("Memcpy", 0) > 0
        if r.workload.startswith("jacobi-nb"):      # both halos: Irecv, Irecv, Isend, Isend, Waitall
            assert ops["Isend"] == ops["Irecv"] == 2 * 2 * 5 and ops["Waitall"] == 2 * 5 and "Sendrecv" not in ops
        elif r.workload.startswith("jacobi"):
            assert ops["Sendrecv"] == 2 * 2 * 5 and ops["Kernel"] >= 2 * 5
        if r.workload == "allpairs":                # 2 ranks: one peer; 2 sizes x 5 iterations
            assert ops["Isend"] == ops["Irecv"] == ops["Waitall"] == 2 * 2 * 5
        if r.mode == "hostcopy" and r.workload in ("jacobi-nb", "allpairs"):
            # the GPU-aware twin: every staging copy of the nonblocking exchanges is removed
            assert "Memcpy" not in staged_to_device(tr).op_counts()
    rows = compare(runs, "h200x4")
    assert len(rows) == len(names) * 5              # own + cross, and the staged conversion
    for row in rows:
        assert row["predicted_total_s"] > 0 and row["measured_total_s"] > 0
        assert np.isfinite(row["error_total"])


# ------------------------------------------------------------------------------------------------
# the fitter: round trip through the simulator
# ------------------------------------------------------------------------------------------------
KNOWN = """
schema_version = 1
name = "known"
[node]
gpus = 4
[node.pcie]
bw = "50GB/s"
latency = "0.8us"
[node.nvlink]
kind = "switch"
bw = "300GB/s"
latency = "0.5us"
[node.host]
shm_bw = "12GB/s"
shm_latency = "0.3us"
[node.nic]
bw = "50GB/s"
[mpi]
eager_limit = "64KiB"
send_overhead = "0.4us"
recv_overhead = "0.4us"
[gpu]
copy_delay = "6us"
gpudirect_delay = "3us"
"""


def _synthetic_raw(machine: Path) -> dict:
    """Measurements as the known machine would give them: each curve simulated on it."""
    sizes = [2 ** i for i in range(0, 29, 2)] + [2 ** 16, 2 ** 17]   # the eager step must be visible
    sizes = sorted(set(sizes))

    def stats(t):
        return {"min": t, "p10": t, "median": t, "p90": t, "mean": t, "max": t}

    raw = {"format": "g2gsim-calibrate-raw", "version": 1, "date": "2026-01-01T00:00:00+00:00",
           "hosts": ["node0"], "nranks": 4, "mpi": {"library": "Test MPI 1.0", "mpi4py": "4"},
           "ucx": {"version": "1.0", "env": {}}, "gpu": {"name": "Test GPU", "count_per_node": 4},
           "cuda_aware": True, "p2p": [], "memcpy": [], "memcpy_concurrent": [], "concurrency": [],
           "collectives": [], "errors": [], "notes": []}
    it = [10] * len(sizes)
    for mode in ("host", "staged", "device"):
        for kind in ("pingpong", "pingping"):
            s = Series(kind, mode, np.array(sizes), np.ones(len(sizes)), np.array(it))
            t = simulate_series(s, machine, iters=2)
            t = t * 2 if kind == "pingpong" else t                      # the raw file holds round trips
            raw["p2p"].append({"pattern": kind, "mode": mode, "scope": "intra", "ranks": [0, 1], "gpus": [0, 1],
                               "sizes": sizes, "iterations": it, "stats": [stats(float(x)) for x in t]})
    for k in ("d2h", "h2d"):
        s = Series("memcpy", k, np.array(sizes), np.ones(len(sizes)), np.array(it), op="pinned", nranks=1)
        t = simulate_series(s, machine, iters=2)
        raw["memcpy"].append({"kind": k, "host": "pinned", "gpu": 0, "sizes": sizes, "iterations": it,
                              "stats": [stats(float(x)) for x in t]})
    fo = [MiB, 64 * MiB]
    s = Series("fan-out", "device", np.array(fo), np.ones(2), np.array([5, 5]), nranks=4, meta={"peers": [1, 2, 3]})
    t = simulate_series(s, machine, iters=2)
    raw["concurrency"].append({"pattern": "fan-out", "mode": "device", "root": 0, "peers": [1, 2, 3], "sizes": fo,
                               "iterations": [5, 5], "stats": [stats(float(x)) for x in t]})
    return raw


def test_closed_forms_are_the_simulator(tmp_path):
    m = tmp_path / "known.toml"
    m.write_text(KNOWN)
    p = fitmod.base_params(tomllib.loads(KNOWN))
    sizes = np.array([1, 4096, 64 * KiB, 64 * KiB + 1, MiB, 64 * MiB])
    for kind in ("pingpong", "pingping"):
        for mode in ("host", "staged", "device"):
            s = Series(kind, mode, sizes, np.ones(len(sizes)), np.ones(len(sizes)))
            sim = simulate_series(s, m)
            assert np.allclose(sim, closed_form(kind, mode, sizes, p), rtol=2e-3), (kind, mode)


def test_fit_recovers_a_known_machine(tmp_path):
    m = tmp_path / "known.toml"
    m.write_text(KNOWN)
    raw = _synthetic_raw(m)
    res = fitmod.fit(raw, base="h200x4", collectives=False)
    p = res.params
    want = P2PParams(send_overhead=0.4e-6, recv_overhead=0.4e-6, shm_latency=0.3e-6, shm_bw=12e9,
                     eager_limit=64 * KiB, pcie_latency=0.8e-6, copy_delay=6e-6, copy_bw=50e9,
                     gpudirect_delay=3e-6, nvlink_latency=0.5e-6, nvlink_bw=300e9, nvlink_kind="switch")
    assert p.eager_limit == want.eager_limit
    assert p.nvlink_kind == "switch"
    for f in ("send_overhead", "recv_overhead", "shm_latency", "shm_bw", "copy_delay", "copy_bw",
              "gpudirect_delay", "nvlink_bw"):
        assert getattr(p, f) == pytest.approx(getattr(want, f), rel=0.02), f
    # the written file reproduces the measurements by simulation
    out = tmp_path / "fitted.toml"
    fitmod.write_machine(res, out, raw_path="synthetic.json")
    text = out.read_text()
    assert "Test MPI 1.0" in text and "Test GPU" in text and "2026-01-01" in text
    rows = verify(raw, out, kinds=("pingpong", "pingping", "memcpy"))
    worst = max(abs(r["error"]) for r in rows)
    assert worst < 0.02, worst
    assert all(s["meets_target"] for s in summarize(rows))


def test_eager_break_and_units():
    x = np.array([2 ** i for i in range(8, 24)])
    t = 1e-6 + x / 10e9 + np.where(x > 128 * KiB, 2e-6, 0)
    s = Series("pingpong", "host", x, t, np.ones(len(x)))
    br = fitmod.eager_break(s)
    assert br["limit"] == 128 * KiB and br["step"] == pytest.approx(2e-6, rel=0.05)
    assert fitmod.fmt_bw(55.21e9) == "55.21GB/s" and fitmod.fmt_dur(6.28e-6) == "6.28us"
    assert fitmod.fmt_dur(56.94e-9) == "56.94ns" and fitmod.fmt_size(131072) == "128KiB"
    assert fitmod.parse_bw("100Gb/s") == 12.5e9 and fitmod.parse_dur("0.07ns") == pytest.approx(7e-11)


# ------------------------------------------------------------------------------------------------
# the real run's sample
# ------------------------------------------------------------------------------------------------
def test_fit_on_the_h200_sample(tmp_path):
    res = fitmod.fit(SAMPLE / "raw.json", base="h200x4", collectives=False, bins=True)
    p = res.params
    # what the node showed (docs/validation/h200x4.md): ~55 GB/s copies, ~380 GB/s NVLink, NVSwitch
    assert 50e9 < p.copy_bw < 60e9 and 5e-6 < p.copy_delay < 8e-6
    assert 330e9 < p.nvlink_bw < 420e9 and p.nvlink_kind == "switch"
    assert p.eager_limit == 128 * KiB
    assert res.raw_meta["gpu"] == "NVIDIA H200" and res.raw_meta["ucx"] == "1.22.0"
    # Open MPI's basic linear Scatter / Gather: blocking, one peer after another
    assert fitmod.forced_algorithms(json.loads((SAMPLE / "raw.json").read_text())) == {
        "Scatter": "linear_sequential", "Gather": "linear_sequential"}
    # per-rank shared-memory ports (ping-ping takes about one ping-pong), a call overhead, size bins
    assert p.shm_rank_bw is not None and 10e9 < p.shm_rank_bw < 30e9
    assert 0.2e-6 < p.call_overhead < 0.7e-6
    assert set(p.factors) == {"host", "hostcopy", "gpudirect-p2p"}
    out = tmp_path / "m.toml"
    fitmod.write_machine(res, out)
    rows = verify(SAMPLE / "raw.json", out, kinds=("pingpong", "pingping"))
    for mode in ("device", "staged"):                          # these paths meet the target
        e = [abs(r["error"]) for r in rows if r["mode"] == mode and r["bytes"] >= 32 * KiB]
        assert np.median(e) < 0.05 and max(e) < 0.10, mode
    e = [abs(r["error"]) for r in rows if r["mode"] == "host" and r["bytes"] >= 32 * KiB]
    assert np.median(e) < 0.05, "host"


def test_validate_on_the_h200_sample():
    runs = load_runs([SAMPLE / "runs"])
    assert {(r.workload, r.mode) for r in runs} == {("pingpong", "hostcopy"), ("pingpong", "device"),
                                                     ("matmul", "hostcopy"), ("matmul", "device")}
    mm = {r.mode: r for r in runs if r.workload == "matmul"}
    tr = trace_from_run(mm["hostcopy"])
    ops = tr.op_counts()
    # the harness stages through page-locked buffers: its MPI calls are on pinned memory
    mem_op = list(zip(tr.table.column("mem_space").to_pylist(), tr.table.column("op").to_pylist()))
    assert {m for m, o in mem_op if o in ("Bcast", "Scatter", "Gather")} == {"pinned"}
    assert {m for m, o in zip(trace_from_run(mm["device"]).table.column("mem_space").to_pylist(),
                              trace_from_run(mm["device"]).table.column("op").to_pylist())
            if o in ("Bcast", "Scatter", "Gather")} == {"device"}
    assert ops["Bcast"] == 4 * 5 and ops["Scatter"] == 4 * 5 and ops["Gather"] == 4 * 5 and ops["Kernel"] == 4 * 5
    # staging copies: root d2h A, B, C-block, h2d B-block, C; others h2d A, B-block, d2h C-block
    assert ops["Memcpy"] == 5 * (5 + 3 * 3)
    dev = staged_to_device(tr)
    assert "Memcpy" not in dev.op_counts()
    mem = dev.table.column("mem_space").to_pylist()
    op = dev.table.column("op").to_pylist()
    assert {m for m, o in zip(mem, op) if o in ("Bcast", "Scatter", "Gather")} == {"device"}
    rows = compare(runs, "h200x4-calibrated")
    got = {(r["workload"], r["trace"], r["predicted_mode"], r["how"]) for r in rows}
    assert ("matmul", "hostcopy", "device", "converted here") in got
    assert ("pingpong", "device", "hostcopy", "core") in got
    for r in rows:
        assert r["measured_total_s"] > 0 and np.isfinite(r["error_total"])
        if r["how"] == "core" and r["trace"] == r["predicted_mode"] == "device":
            assert abs(r["error_total"]) < 0.5
    from g2gsim.calibrate.report import VALID_HEADER, markdown_table, valid_rows
    md = markdown_table(VALID_HEADER, valid_rows(rows))
    assert md.count("\n") == len(rows) + 1 and "matmul" in md


def test_micro_traces_are_consistent():
    s = Series("collective", "staged", np.array([1024]), np.ones(1), np.ones(1), op="Scatter", nranks=4,
               meta={"root": 0})
    t = build_trace(s, 1024, iters=2)
    t.validate()
    ops = t.op_counts()
    assert ops["Scatter"] == 8 and ops["Barrier"] == 8 and ops["Memcpy"] == 2 * (1 + 4)


def test_cli_register(tmp_path):
    import click
    from click.testing import CliRunner

    from g2gsim.calibrate import cli

    @click.group()
    def main():
        pass

    cli.register(main)
    r = CliRunner()
    out = tmp_path / "m.toml"
    res = r.invoke(main, ["calibrate", "fit", str(SAMPLE / "raw.json"), "-o", str(out), "--no-verify",
                          "--no-collective-bins", "--json", str(tmp_path / "fit.json")])
    assert res.exit_code == 0, res.output
    assert out.is_file() and json.loads((tmp_path / "fit.json").read_text())["params"]["node.nvlink.kind"] == "switch"
    res = r.invoke(main, ["validate", "compare", str(SAMPLE / "runs"), "--machine", str(out), "--json",
                          str(tmp_path / "v.json"), "--markdown", str(tmp_path / "v.md")])
    assert res.exit_code == 0, res.output
    assert len(json.loads((tmp_path / "v.json").read_text())["rows"]) == 10
    res = r.invoke(main, ["calibrate", "script", "-o", str(tmp_path / "measure.py")])
    assert res.exit_code == 0 and (tmp_path / "measure.py").read_text().startswith("#!/usr/bin/env python3")


def test_measure_script_sizes_follow_the_core_rule():
    """measure.py runs without g2gsim, so it restates the size rule; it must agree with the core's."""
    from g2gsim import units
    from g2gsim.calibrate import measure
    for s in ["4096", "64KiB", "64KB", "64K", "1MiB", "1.5MiB", "512MB", "2GiB", "1e3", "8B", "0"]:
        assert measure.parse_size(s) == units.parse_size(s), s
    for bad in ["64 bogus", "KiB", "-1KiB"]:
        with pytest.raises(ValueError):
            measure.parse_size(bad)
        with pytest.raises(ValueError):
            units.parse_size(bad)


def test_h100x2_calibrated_preset_loads_and_validates():
    """The preset fitted on the 2 x H100 run (docs/validation/h100x2.md) is listed, valid, builds, and
    cites the run it was fitted on; its fitted figures are those of the run's own curves."""
    from g2gsim import machines
    assert "h100x2-calibrated" in machines.presets()
    assert machines.validate("h100x2-calibrated") == []
    d = machines.check("h100x2-calibrated")
    assert d["name"] == "h100x2-calibrated" and d["gpus_per_node"] == 2 and d["sockets"] == 1
    text, _ = machines.resolve("h100x2-calibrated")
    head = "\n".join(ln for ln in text.splitlines() if ln.startswith("#"))
    for cite in ("2026-11-25", "on vm", "Open MPI v4.1.6", "UCX: 1.22.0", "NVIDIA H100 80GB HBM3",
                 "docs/validation/h100x2/raw.json", "--base dgx-h100"):
        assert cite in head, cite
    # the large-message rates must be the run's: device ping-ping of 256 MiB (two opposite
    # transfers at once) and the pinned 256 MiB copies, measured in raw.json
    raw = json.loads((ROOT / "docs" / "validation" / "h100x2" / "raw.json").read_text())
    pp = next(e for e in raw["p2p"] if e["pattern"] == "pingping" and e["mode"] == "device")
    nvl = pp["sizes"][-1] / pp["stats"][-1]["median"]
    assert abs(d["nvlink_bw_bytes_per_s"] / nvl - 1) < 0.10, (d["nvlink_bw_bytes_per_s"], nvl)
    for e in raw["memcpy"]:
        if e["host"] == "pinned":
            bw = e["sizes"][-1] / e["stats"][-1]["median"]
            assert abs(d["copy_bw_bytes_per_s"] / bw - 1) < 0.10, (e["kind"], d["copy_bw_bytes_per_s"], bw)


def test_run_spread_between_two_runs(tmp_path):
    """bench/calibrate/run_spread.py: a run against itself has no spread; a copy whose medians are
    10 % slower shows 10 % between runs, and the within-run figure is the samples' (p90-p10)/median."""
    sys.path.insert(0, str(ROOT / "bench" / "calibrate"))
    import run_spread
    raw = json.loads((SAMPLE / "raw.json").read_text())
    rows = run_spread.spread_rows(raw, raw)
    assert rows and all(r["between_worst"] == 0.0 for r in rows if "why" not in r)
    slow = json.loads(json.dumps(raw))
    for e in slow["p2p"]:
        for s in e["stats"]:
            s["median"] *= 1.1
    rows = {(r["series"], r["sizes"]): r for r in run_spread.spread_rows(raw, slow) if "why" not in r}
    r = rows[("pingpong host", ">= 32 KiB")]
    assert abs(r["between_median"] - 0.1) < 1e-9 and abs(r["between_worst"] - 0.1) < 1e-9
    assert rows[("memcpy d2h pinned", ">= 32 KiB")]["between_worst"] == 0.0
    e = next(e for e in raw["p2p"] if e["pattern"] == "pingpong" and e["mode"] == "host")
    big = [s for n, s in zip(e["sizes"], e["stats"]) if n >= 32 * 1024]
    assert abs(r["within_a"] - float(np.median([(s["p90"] - s["p10"]) / s["median"] for s in big]))) < 1e-12
    md = run_spread.markdown(list(rows.values()))
    assert md.count("\n") == len(rows) + 2


def test_fit_report_names_the_host_series():
    from g2gsim.calibrate.report import _from_label
    assert _from_label("pingpong host") == "pingpong host"
    assert _from_label(["pingpong", "pingping"]) == "host pingpong + pingping"


def test_h100x4_calibrated_preset_cites_its_run_and_keeps_the_switch_rate():
    """The preset fitted on the 4 x H100 run (docs/validation/h100x4.md, issue 28) is listed, valid,
    cites the run, says it was calibrated on 4 ranks, and its NVLink port rate is the run's: sending
    to 3 peers at once (fan-out) moves at about one pair's 64 MiB rate in total (a switch port)."""
    from g2gsim import machines
    assert machines.validate("h100x4-calibrated") == []
    d = machines.check("h100x4-calibrated")
    assert d["gpus_per_node"] == 4
    text, _ = machines.resolve("h100x4-calibrated")
    head = "\n".join(ln for ln in text.splitlines() if ln.startswith("#"))
    for cite in ("2026-11-26", "Open MPI v4.1.6", "UCX: 1.22.0", "NVIDIA H100 80GB HBM3",
                 "docs/validation/h100x4/raw.json", "accuracy: docs/validation/h100x4.md"):
        assert cite in head, cite
    top = tomllib.loads(text)
    assert top["calibrated_ranks"] == 4 and top["node"]["nvlink"]["kind"] == "switch"
    raw = json.loads((ROOT / "docs" / "validation" / "h100x4" / "raw.json").read_text())
    fo = next(e for e in raw["concurrency"] if e["pattern"] == "fan-out" and e["mode"] == "device")
    agg = 3 * fo["sizes"][-1] / fo["stats"][-1]["median"]
    assert abs(d["nvlink_bw_bytes_per_s"] / agg - 1) < 0.10, (d["nvlink_bw_bytes_per_s"], agg)

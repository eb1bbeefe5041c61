"""`g2gsim calibrate calls`: per-call costs from the traced MPI_Irecv calls (calibrate/calls.py)."""
from __future__ import annotations

import tomllib

import numpy as np
import pytest
from click.testing import CliRunner

import g2gsim
from g2gsim.calibrate.calls import MIN_CALLS, CallCostError, call_costs, write_machine
from g2gsim.cli import main
from g2gsim.trace import Trace


def exchange_trace(iters: int, irecv_ns, isend_ns: float = 5000.0, space: str = "host", seed: int = 0,
                   gap_ns: float = 20_000.0) -> Trace:
    """Two ranks; per iteration: Compute, Irecv from the peer, Isend to it (64 KiB), Waitall.
    ``irecv_ns(rng)`` gives each Irecv's traced duration."""
    rng = np.random.default_rng(seed)
    cols: dict[str, list] = {k: [] for k in ("rank", "op", "t_start_ns", "t_end_ns", "peer", "tag", "bytes",
                                             "recv_bytes", "req", "reqs", "mem_space")}

    def row(rank, op, t0, t1, peer=-1, nbytes=0, rbytes=0, req=0, reqs=None, mem="host"):
        for k, v in (("rank", rank), ("op", op), ("t_start_ns", int(t0)), ("t_end_ns", int(t1)), ("peer", peer),
                     ("tag", 7 if peer >= 0 else 0), ("bytes", nbytes), ("recv_bytes", rbytes), ("req", req),
                     ("reqs", reqs), ("mem_space", mem)):
            cols[k].append(v)

    for r in (0, 1):
        t = 0.0
        for i in range(iters):
            row(r, "Compute", t, t + gap_ns)
            t += gap_ns
            d = irecv_ns(rng)
            row(r, "Irecv", t, t + d, peer=1 - r, rbytes=65536, req=2 * i + 1, mem=space)
            t += d
            row(r, "Isend", t, t + isend_ns, peer=1 - r, nbytes=65536, req=2 * i + 2, mem=space)
            t += isend_ns
            row(r, "Waitall", t, t + 30_000, reqs=[2 * i + 1, 2 * i + 2])
            t += 30_000
    return Trace.from_columns(2, cols)


def test_the_median_irecv_becomes_the_call_overhead_and_reaches_the_replay(tmp_path):
    tr = exchange_trace(40, lambda rng: 3000.0 + rng.normal(0, 100.0))
    costs = call_costs([tr])
    assert costs.host is not None and costs.host.n == 80
    assert costs.host.median_ns == pytest.approx(3000.0, abs=60)
    assert costs.device is None
    assert costs.isend_median_ns["host"] == pytest.approx(5000.0)     # reported, not used
    out = tmp_path / "m.toml"
    write_machine(costs, "dgx-h100", out)
    doc = tomllib.loads(out.read_text())
    assert doc["mpi"]["call_overhead"].endswith("us")
    assert float(doc["mpi"]["call_overhead"][:-2]) == pytest.approx(costs.host.median_ns / 1000, rel=1e-3)
    assert "mpi.device_call_overhead" not in doc.get("uncertainty", {})
    u = doc["uncertainty"]["mpi.call_overhead"]
    assert "80 traced MPI_Irecv" in u["source"]
    assert not g2gsim.machines.validate(out)
    # everything else is the base machine's
    base = tomllib.loads(g2gsim.machines.resolve("dgx-h100")[0])
    assert doc["node"]["nvlink"] == base["node"]["nvlink"]
    # the replay charges it to every MPI call; per iteration the Irecv and the Isend are on the critical
    # path (the Waitall's own cost overlaps the message it waits for)
    p = tmp_path / "t.g2g.parquet"
    tr.write(p)
    t_base = g2gsim.simulate(str(p), "dgx-h100")["total_time_s"]
    t_cal = g2gsim.simulate(str(p), str(out))["total_time_s"]
    assert t_cal - t_base == pytest.approx(40 * 2 * costs.host.median_ns * 1e-9, rel=0.05)


def test_device_calls_give_the_extra_over_host_calls():
    host = exchange_trace(30, lambda rng: 2000.0, space="host")
    dev = exchange_trace(30, lambda rng: 4500.0, space="device")
    costs = call_costs([host, dev])
    sets = costs.machine_sets()
    assert sets == {"mpi.call_overhead": "2us", "mpi.device_call_overhead": "2.5us"}
    # device posting no dearer than host posting: the device extra is not written (the base's stays)
    costs = call_costs([exchange_trace(30, lambda rng: 2000.0), exchange_trace(30, lambda rng: 1500.0, space="device")])
    assert costs.machine_sets() == {"mpi.call_overhead": "2us"}
    assert any("not slower" in n for n in costs.notes)


def test_too_few_or_untimed_calls_are_an_error_naming_why():
    few = exchange_trace(MIN_CALLS // 2 - 1, lambda rng: 3000.0)
    with pytest.raises(CallCostError, match=f"only {2 * (MIN_CALLS // 2 - 1)} timed MPI_Irecv.*need {MIN_CALLS}"):
        call_costs([few])
    untimed = exchange_trace(30, lambda rng: 0.0)
    with pytest.raises(CallCostError, match="all take 0 ns"):
        call_costs([untimed])


def test_cli_writes_the_machine_and_errors_cleanly(tmp_path):
    p = tmp_path / "t.g2g.parquet"
    exchange_trace(25, lambda rng: 3500.0).write(p)
    out = tmp_path / "calls.toml"
    r = CliRunner().invoke(main, ["calibrate", "calls", str(p), "--base", "lassen", "-o", str(out),
                                  "--json", str(tmp_path / "c.json")])
    assert r.exit_code == 0, r.output
    assert "mpi.call_overhead = 3.5us" in r.output
    text = out.read_text()
    assert text.startswith("# calls: lassen")
    assert tomllib.loads(text)["mpi"]["call_overhead"] == "3.5us"
    bad = tmp_path / "few.g2g.parquet"
    exchange_trace(3, lambda rng: 3500.0).write(bad)
    r = CliRunner().invoke(main, ["calibrate", "calls", str(bad), "--base", "lassen", "-o", str(tmp_path / "x.toml")])
    assert r.exit_code != 0
    assert "few.g2g.parquet" in r.output and "need 20" in r.output
    assert "Traceback" not in r.output
    assert not (tmp_path / "x.toml").exists()

"""bench/speed/ab.py says which trace it timed: run.py's workload (the one the speed targets name)
or another with the same generator (a trace with host buffers that simgrid_compare.py leaves in
the same cache was once quoted against a target by mistake)."""
from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _ab():
    sys.path.insert(0, str(ROOT / "bench" / "speed"))
    spec = importlib.util.spec_from_file_location("ab", ROOT / "bench" / "speed" / "ab.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _sidecar(tmp_path: Path, name: str, params: dict) -> Path:
    trace = tmp_path / f"{name}.g2g.parquet"
    trace.write_bytes(b"")
    (tmp_path / f"{name}.g2g.json").write_text(json.dumps(
        {"generator": "halo3d", "ranks": 1024, "params": params, "mpi_ops": 133120}))
    return trace


def test_ab_names_the_trace_and_whether_it_is_run_py_s_workload(tmp_path):
    ab = _ab()
    import run
    _, std = run.WORKLOADS["halo"]
    what, ops = ab.trace_info(_sidecar(tmp_path, "std", dict(std)))
    assert "halo3d, 1,024 ranks" in what and what.endswith("run.py's workload") and ops == 133120
    what, _ = ab.trace_info(_sidecar(tmp_path, "host", dict(std, buffers="host")))
    assert "NOT run.py's workload" in what
    what, ops = ab.trace_info(tmp_path / "none.g2g.parquet")
    assert what.startswith("no sidecar none.g2g.json") and ops is None


def _inputs(ab, tmp_path: Path, *args: str):
    import argparse
    ab.TRACE_DIR = tmp_path / "cache"
    core = tmp_path / "core"
    core.write_bytes(b"")
    ap = argparse.ArgumentParser()
    ab.add_inputs(ap)
    a = ap.parse_args([str(core), str(core), *args])
    return ab.inputs(ap, a)


def _sharing_of(machine: Path) -> str:
    """The sharing a machine file names (the core's default, max-min, when it names none)."""
    import tomllib
    return tomllib.loads(machine.read_text()).get("network", {}).get("sharing", "max-min (the default)")


def test_an_explicit_sharing_runs_with_a_given_trace_or_machine(tmp_path):
    """--sharing was once dropped when --trace was given (the preset's exact max-min ran where
    bottleneck was asked for, without a word); now it runs on a copy of the machine, and without
    it a given trace or machine keeps the machine's own sharing."""
    ab = _ab()
    trace = _sidecar(tmp_path, "t", {})
    t, m = _inputs(ab, tmp_path, "--trace", str(trace), "--sharing", "bottleneck")
    assert t == trace and _sharing_of(m) == "bottleneck" and m.parent == tmp_path / "cache"
    _, m = _inputs(ab, tmp_path, "--trace", str(trace))
    assert m.name == "lassen.toml" and _sharing_of(m).startswith("max-min")
    _, m = _inputs(ab, tmp_path, "--trace", str(trace), "--sharing", "")
    assert m.name == "lassen.toml"
    _, m = _inputs(ab, tmp_path, "--trace", str(trace), "--machine", "leonardo", "--sharing", "max-min-full")
    assert _sharing_of(m) == "max-min-full" and m.stem == "leonardo+sharing=max-min-full"
    _, m = _inputs(ab, tmp_path, "--trace", str(trace), "--machine", "leonardo")
    assert m.name == "leonardo.toml"

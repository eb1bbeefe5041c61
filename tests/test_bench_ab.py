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

"""The profile-guided build (``make pgo``, ``bench/speed/pgo.py``): its tool discovery and, behind
the ``slow`` marker, the whole build, which must simulate exactly what the plain build does."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench" / "speed"))

import pgo  # noqa: E402


def _fake_profdata(path: Path, llvm_major: int) -> Path:
    path.write_text(f"#!/bin/sh\necho 'LLVM (http://llvm.org/):'\necho '  LLVM version {llvm_major}.1.0'\n")
    path.chmod(0o755)
    return path


def test_profdata_must_match_rustc_llvm(tmp_path, monkeypatch):
    # a profile written by LLVM N cannot be read by another major version: only a matching tool is taken
    want = pgo.rustc_llvm_major()
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("LLVM_PROFDATA", raising=False)
    monkeypatch.setattr(pgo, "run", lambda argv, env=None: (
        "sysroot-nowhere\n" if "--print" in argv else f"host: x86_64-unknown-linux-gnu\nLLVM version: {want}.1.2\n"))
    wrong = _fake_profdata(tmp_path / "old-profdata", want - 8)
    with pytest.raises(pgo.PgoError) as e:
        pgo.find_profdata(str(wrong), install=False)
    msg = str(e.value)
    assert f"LLVM {want}" in msg and f"LLVM {want - 8}" in msg and "rustup component add llvm-tools" in msg
    right = _fake_profdata(tmp_path / "new-profdata", want)
    assert pgo.find_profdata(str(right), install=False) == right


def test_training_set_is_not_the_benchmarked_trace():
    # the 1,024-rank halo the speed figures time stays out of the profile
    assert all(ranks <= 256 for _, ranks, _ in pgo.TRAINING)
    assert {g for g, _, _ in pgo.TRAINING} >= {"halo3d", "allreduce", "alltoall"}


def test_report_says_how_the_core_was_built(tmp_path):
    import g2gsim
    from g2gsim import generate as g
    t = tmp_path / "h.g2g.parquet"
    g.generate_to_file("halo3d", 8, str(t), iterations=1)
    rep = g2gsim.simulate(t, "lassen")
    assert rep["engine"]["build"] in ("release", "pgo", "debug")


@pytest.mark.slow
def test_pgo_build_simulates_what_the_plain_build_does():
    p = subprocess.run([sys.executable, str(ROOT / "bench" / "speed" / "pgo.py")], cwd=ROOT, text=True, capture_output=True)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "72 of 72 runs identical" in p.stdout
    core = ROOT / "target" / "pgo" / "g2gsim-core"
    t = ROOT / "target" / "pgo" / "train" / "jacobi2d-16-.g2g.parquet"
    out = subprocess.run([str(core), str(t), str(ROOT / "python" / "g2gsim" / "presets" / "lassen.toml"), "--json"],
                         text=True, capture_output=True, check=True).stdout
    assert json.loads(out)["engine"]["build"] == "pgo"

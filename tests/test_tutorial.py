"""docs/tutorial.md runs: its sh and python blocks, in order, in a scratch directory on a CPU-only
machine (blocks after a `<!-- not run in CI: ... -->` line are skipped)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TUTORIAL = ROOT / "docs" / "tutorial.md"
BLOCK = re.compile(r"(?:(<!-- not run in CI[^>]*-->)\s*\n)?```(sh|python)\n(.*?)```", re.S)


def blocks():
    return [(lang, body) for skip, lang, body in BLOCK.findall(TUTORIAL.read_text()) if not skip]


def test_tutorial_has_runnable_blocks():
    langs = [lang for lang, _ in blocks()]
    assert langs.count("sh") >= 6 and "python" in langs
    text = " ".join(body for _, body in blocks())
    for cmd in ("g2gsim record", "g2gsim info", "g2gsim machine detect", "g2gsim compare", "g2gsim whatif",
                "g2gsim sweep"):
        assert cmd in text, cmd


@pytest.mark.skipif(not (shutil.which("mpicc") and shutil.which("mpirun")),
                    reason="the tutorial records an MPI program: needs mpicc and mpirun (libopenmpi-dev, openmpi-bin)")
def test_tutorial_runs(tmp_path):
    from g2gsim import record
    if record.build_requirements()[1]:
        pytest.skip("g2gsim record cannot build its tracer here: " + "; ".join(record.build_requirements()[1]))
    pytest.importorskip("otf2")
    pytest.importorskip("dask.distributed")
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    bin_dir = tmp_path / "_bin"
    bin_dir.mkdir()
    shim = bin_dir / "g2gsim"                     # the command as installed, on this interpreter
    shim.write_text(f"#!/bin/sh\nexec {sys.executable} -m g2gsim \"$@\"\n")
    shim.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "COLUMNS": "160",
           "G2GSIM_CACHE": str(tmp_path / "_cache"),
           "PYTHONPATH": os.pathsep.join([str(ROOT / "python"), os.environ.get("PYTHONPATH", "")]),
           "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_btl_vader_single_copy_mechanism": "none", "OMPI_MCA_rmaps_base_oversubscribe": "1",
           "OMPI_MCA_pml": "ob1", "OMPI_MCA_osc": "^ucx", "OMPI_MCA_btl_tcp_if_include": "lo",
           "OMPI_MCA_oob_tcp_if_include": "lo"}
    for i, (lang, body) in enumerate(blocks()):
        argv = ["bash", "-euo", "pipefail", "-c", body] if lang == "sh" else [sys.executable, "-c", body]
        p = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, f"tutorial block {i} ({lang}) failed:\n{body}\n--- stdout\n{p.stdout[-3000:]}\n--- stderr\n{p.stderr[-3000:]}"
    assert (tmp_path / "report.html").stat().st_size > 0
    assert (tmp_path / "results.parquet").is_file()
    assert list((tmp_path / "plots").glob("*.png"))

"""g2gsim record builds its tracer on first use into the user cache, from the C sources that ship
with the package; each missing build requirement is named in one line."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from g2gsim import record

HAVE_BUILD = shutil.which("mpicc") and shutil.which("make") and not record.build_requirements()[1]


def _run(env, *args):
    return subprocess.run([sys.executable, "-m", "g2gsim", *args], capture_output=True, text=True,
                          timeout=600, env={**os.environ, **env})


def _no_checkout_build(monkeypatch):
    """Pretend no library was built in the checkout or next to the module."""
    monkeypatch.setattr(record, "prebuilt_candidates", lambda: [])


def test_missing_compiler_wrapper_is_named(tmp_path, monkeypatch):
    monkeypatch.setenv("MPICC", "no-such-mpicc")
    monkeypatch.setenv("G2GSIM_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("G2G_TRACER_LIB", raising=False)
    _no_checkout_build(monkeypatch)
    with pytest.raises(FileNotFoundError) as ei:
        record.find_library()
    msg = str(ei.value)
    assert "no-such-mpicc not found" in msg and "MPI compiler wrapper" in msg and "\n" not in msg
    assert "OTF2" not in msg                  # not blamed on what could not be probed


def test_missing_otf2_headers_are_named(tmp_path, monkeypatch):
    fake = tmp_path / "fake-mpicc"
    fake.write_text("#!/bin/sh\necho 'fatal error: otf2/otf2.h: No such file or directory' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("MPICC", str(fake))
    monkeypatch.setenv("G2GSIM_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("G2G_TRACER_LIB", raising=False)
    _no_checkout_build(monkeypatch)
    with pytest.raises(FileNotFoundError) as ei:
        record.find_library()
    msg = str(ei.value)
    assert "OTF2 library headers" in msg and "libopen-trace-format2-dev" in msg
    assert "compiler wrapper" not in msg


def test_cli_record_error_is_one_line(tmp_path):
    p = _run({"MPICC": "no-such-mpicc", "G2GSIM_CACHE": str(tmp_path / "c"), "G2G_TRACER_LIB": ""},
             "record", "-o", tmp_path / "t", "--", "true")
    if any(p.is_file() for p in record.prebuilt_candidates()):
        pytest.skip("a built tracer (make -C tracer) is present, which record uses")
    assert p.returncode == 1 and "Traceback" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and "no-such-mpicc" in p.stderr


def test_sources_ship_with_the_package():
    src = record.tracer_sources()
    assert (src / "Makefile").is_file()
    assert {"core.c", "mpi_wrappers.c", "g2g.h"} <= {f.name for f in (src / "src").iterdir()}


@pytest.mark.skipif(not HAVE_BUILD, reason="needs mpicc, make and the OTF2 headers (libopenmpi-dev, libopen-trace-format2-dev)")
def test_first_use_builds_into_the_cache_once(tmp_path, monkeypatch):
    monkeypatch.setenv("G2GSIM_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("G2G_TRACER_LIB", raising=False)
    monkeypatch.delenv("MPICC", raising=False)
    _no_checkout_build(monkeypatch)
    lib = record.find_library()
    assert lib.is_file() and str(lib).startswith(str(tmp_path / "cache" / "tracer"))
    syms = subprocess.run(["nm", "-D", "--defined-only", str(lib)], capture_output=True, text=True).stdout
    assert " MPI_Init" in syms and " MPI_Send" in syms
    mtime = lib.stat().st_mtime_ns
    assert record.find_library() == lib and lib.stat().st_mtime_ns == mtime     # built once

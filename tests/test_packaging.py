"""Packaging: make's choice of Python environment, licence and version metadata, the wheel profile,
and what the sdist/wheel carry (the wheel itself is checked by .ci/wheel-check)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def make_n(*args, env=None):
    e = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PY", "VENV", "MAKEFLAGS", "MFLAGS")}
    e.update(env or {})
    p = subprocess.run(["make", "-n", "-C", str(ROOT), *args], capture_output=True, text=True, env=e, timeout=60)
    assert p.returncode == 0, p.stderr
    return p.stdout


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_uses_the_project_venv_unless_told_otherwise():
    assert ".venv/bin/python -m g2gsim demo" in make_n("demo")
    assert "-m venv --system-site-packages .venv" in make_n("demo")   # created when absent
    assert "/opt/env/bin/python -m g2gsim demo" in make_n("demo", env={"VIRTUAL_ENV": "/opt/env"})
    system = make_n("VENV=system", "demo")
    assert "python3 -m g2gsim demo" in system and ".venv" not in system
    assert "/usr/bin/python3.12 -m g2gsim demo" in make_n("PY=/usr/bin/python3.12", "demo")
    for target in ("test", "pgo", "bench", "wheel", "sdist", "api-docs"):
        make_n(target)                                             # every target still parses


def test_licence_and_version_metadata():
    text = (ROOT / "LICENSE").read_text()
    assert text.lstrip().startswith("Apache License") and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text
    proj = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert proj["license"] == "Apache-2.0" and proj["license-files"] == ["LICENSE"]
    assert proj["requires-python"] == ">=3.11"
    assert sys.version_info >= (3, 11)
    cargo = tomllib.loads((ROOT / "Cargo.toml").read_text())
    rv = cargo["workspace"]["package"]["rust-version"]
    assert tuple(map(int, rv.split("."))) >= (1, 85)
    for manifest in (ROOT / "crates").glob("*/Cargo.toml"):
        pkg = tomllib.loads(manifest.read_text())["package"]
        assert pkg.get("rust-version") == {"workspace": True}, manifest
        assert pkg.get("license") == {"workspace": True}, manifest


def test_wheel_profile_is_stripped_and_release_keeps_debug_info():
    prof = tomllib.loads((ROOT / "Cargo.toml").read_text())["profile"]
    assert prof["dist"] == {"inherits": "release", "debug": 0, "strip": True}
    assert prof["release"]["debug"] == 1          # profiling and PGO work rely on it


def test_package_data_and_sdist_includes():
    maturin = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["maturin"]
    paths = {i["path"]: i["format"] for i in maturin["include"]}
    assert set(paths["python/g2gsim/_tracer/**/*"]) == {"sdist", "wheel"}
    for p in ("tracer/src/*", "examples/**/*", "docs/**/*"):
        assert paths[p] == "sdist", p
    ignored = subprocess.run(["git", "-C", str(ROOT), "check-ignore", "-q", "python/g2gsim/_tracer/src/core.c"])
    assert ignored.returncode == 0           # the copy is made by make wheel/sdist, never committed

"""Shared pytest fixtures.  Slow and GPU tests are behind markers that are off by default."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

CORPUS = Path(os.environ.get("G2GSIM_CORPUS", ROOT.parent / "shared" / "corpus"))


def pytest_addoption(parser):
    parser.addoption("--runslow", action="store_true", default=False, help="run tests marked slow")
    parser.addoption("--rungpu", action="store_true", default=False, help="run tests marked gpu")


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: long-running test, run with --runslow")
    config.addinivalue_line("markers", "gpu: needs NVIDIA GPUs and a CUDA-aware MPI, run with --rungpu")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "slow" in item.keywords and not config.getoption("--runslow"):
            item.add_marker(pytest.mark.skip(reason="slow: use --runslow"))
        if "gpu" in item.keywords and not config.getoption("--rungpu"):
            item.add_marker(pytest.mark.skip(reason="gpu: use --rungpu on a GPU machine"))


@pytest.fixture(scope="session")
def corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.fail(f"trace corpus not found at {CORPUS} (set G2GSIM_CORPUS)")
    return CORPUS

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


# Corpus archives copied into tests/data (each folder has its PROVENANCE.md): corpus path -> local copy.
# Everything else in the corpus is only at ../shared/corpus (or $G2GSIM_CORPUS); tests that need it skip.
DATA = ROOT / "tests" / "data"
LOCAL_CORPUS = {
    "sst-macro/tests/test_traces": "sstmacro-dumpi",
    "dumpi_to_graph/test/data/multi_process_traces/synthetic/naive_all_to_all/procs4/run_0":
        "dumpi2graph-dumpi/run_0",
    "pipit/pipit/tests/data/ping-pong-otf2": "pipit-otf2/ping-pong-otf2",
    "sst-elements/src/sst/elements/ember/tests/addFiles/test_emberotf2": "ember-otf2/test_emberotf2",
    "tracer/examples/stencil4d-otf/traces-32": "stencil4d-otf2/traces-32",
}


class TraceCorpus:
    """The public trace corpus as the tests see it: the copies in tests/data first, then the full
    corpus when it is present.  ``corpus / "rel/path"`` skips the test (with the reason) when the file
    is in neither."""

    def __init__(self, full: Path):
        self.full = full if full.is_dir() else None

    def local(self, rel: str | Path) -> Path | None:
        rel = str(rel)
        for prefix, here in LOCAL_CORPUS.items():
            if rel == prefix or rel.startswith(prefix + "/"):
                p = DATA / here / rel[len(prefix):].lstrip("/")
                return p if p.exists() else None
        return None

    def __truediv__(self, rel: str | Path) -> Path:
        p = self.local(rel)
        if p is not None:
            return p
        if self.full is not None and (self.full / rel).exists():
            return self.full / rel
        pytest.skip(f"needs {rel} from the full trace corpus: not in tests/data, and "
                    + (f"not in {self.full}" if self.full else f"{CORPUS} is absent (set G2GSIM_CORPUS)"))

    def require_full(self) -> Path:
        if self.full is None:
            pytest.skip(f"needs the full trace corpus: {CORPUS} is absent (set G2GSIM_CORPUS)")
        return self.full

    def glob(self, pattern: str) -> list[Path]:
        """Files matching ``pattern`` (relative, e.g. ``**/*.meta``): the local copies, plus those of
        the full corpus that have no local copy."""
        found: dict[str, Path] = {}
        for prefix, here in LOCAL_CORPUS.items():
            for p in sorted((DATA / here).glob(pattern)):
                if p.is_file():
                    found[f"{prefix}/{p.relative_to(DATA / here)}"] = p
        if self.full is not None:
            for p in sorted(self.full.glob(pattern)):
                if p.is_file():
                    found.setdefault(str(p.relative_to(self.full)), p)
        return [found[k] for k in sorted(found)]


@pytest.fixture(scope="session")
def corpus() -> TraceCorpus:
    return TraceCorpus(CORPUS)

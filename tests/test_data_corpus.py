"""The corpus archives copied into tests/data: each has its PROVENANCE, the copies stay small, and
they are byte-identical to the shared corpus when that is present."""
from __future__ import annotations

from conftest import DATA, LOCAL_CORPUS

MAX_BYTES = 512 * 1024          # all copied archives together


def _files(here):
    """The copied files of one archive (not our PROVENANCE.md)."""
    prov = DATA / here.split("/")[0] / "PROVENANCE.md"
    return [p for p in (DATA / here).rglob("*") if p.is_file() and p != prov]


def test_every_copy_has_provenance_and_files():
    for here in LOCAL_CORPUS.values():
        top = DATA / here.split("/")[0]
        assert (top / "PROVENANCE.md").is_file(), top
        assert _files(here), here


def test_copies_stay_small():
    total = sum(p.stat().st_size for here in LOCAL_CORPUS.values() for p in _files(here))
    assert total <= MAX_BYTES, f"{total} B of corpus copies in tests/data"


def test_copies_equal_the_corpus(corpus):
    full = corpus.require_full()
    for rel, here in LOCAL_CORPUS.items():
        for p in _files(here):
            src = full / rel / p.relative_to(DATA / here)
            assert src.read_bytes() == p.read_bytes(), p

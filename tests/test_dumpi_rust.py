"""The Rust DUMPI converter (``import_dumpi``, ``read_dumpi(engine="rust")``) against the Python
reference (``read_dumpi(engine="python")``): identical rows, communicators and notes, on the
synthetic traces of test_dumpi_reader, a generated trace of the benchmark generator, the DUMPI
traces in tests/data, and every DUMPI trace of the full corpus when it is present (skipped with the
reason otherwise)."""
from __future__ import annotations

import importlib.util
import os
import warnings
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from g2gsim.readers.dumpi_reader import import_dumpi, read_dumpi
from g2gsim.trace import Trace, TraceError

import test_dumpi_reader as tdr

ROOT = Path(__file__).resolve().parents[1]
CORPUS = Path(os.environ.get("G2GSIM_CORPUS", ROOT.parent / "shared" / "corpus"))


def _sorted(t: pa.Table) -> pa.Table:
    idx = pc.sort_indices(t, sort_keys=[("rank", "ascending"), ("seq", "ascending")])
    return t.take(idx).combine_chunks()


def assert_same(meta: Path, **kw) -> tuple[Trace, Trace]:
    with warnings.catch_warnings(record=True) as wp:
        warnings.simplefilter("always")
        ref = read_dumpi(meta, engine="python", **kw)
    with warnings.catch_warnings(record=True) as wr:
        warnings.simplefilter("always")
        got = read_dumpi(meta, engine="rust", **kw)
    a, b = _sorted(ref.table), _sorted(got.table)
    assert a.schema.names == b.schema.names
    for name in a.schema.names:
        ca, cb = a.column(name), b.column(name)
        if not ca.equals(cb):
            la, lb = ca.to_pylist(), cb.to_pylist()
            k = next(i for i in range(min(len(la), len(lb))) if la[i] != lb[i]) if la != lb else None
            raise AssertionError(f"{meta}: column {name} differs at row {k}: python {la[k] if k is not None else len(la)} "
                                 f"rust {lb[k] if k is not None else len(lb)} "
                                 f"(rank {a.column('rank')[k] if k is not None else '-'})")
    assert a.num_rows == b.num_rows
    assert [c.to_json() for c in ref.comms] == [c.to_json() for c in got.comms]
    assert ref.source == got.source and ref.buffers == got.buffers and ref.nranks == got.nranks
    assert sorted(str(w.message) for w in wp) == sorted(str(w.message) for w in wr)
    return ref, got


def test_synthetic_program_same_rows(tmp_path):
    assert_same(tdr.write_trace(tmp_path, [tdr._synthetic_program(r) for r in range(4)]))


@pytest.mark.parametrize("mask", [0x0F, 0x4C, 0xCF, 0x08, 0x00])
def test_synthetic_masks_same_rows(tmp_path, mask):
    assert_same(tdr.write_trace(tmp_path, [tdr._synthetic_program(r, mask) for r in range(4)]),
                assume_buffers="device")


def test_time_wrap_and_unknown_types_same_rows(tmp_path):
    w = tdr.Writer()
    w.call("Init", tdr.i32(0))
    w.call("Barrier", tdr.h16(tdr.WORLD), gap=40_000 * 10**9)
    w.call("Send", tdr.i32(3) + tdr.h16(40) + tdr.i32(0, 1) + tdr.h16(tdr.WORLD))
    w.call("Barrier", tdr.h16(tdr.WORLD), gap=40_000 * 10**9)
    w.call("Finalize")
    assert_same(tdr.write_trace(tmp_path, [w]))


def test_cart_and_split_same_rows(tmp_path):
    tdr.test_cart_create_and_sub(tmp_path)          # builds and checks the trace with read_dumpi
    assert_same(tmp_path / "synth.meta")


def test_streaming_import_is_matching_checked(tmp_path):
    """import_dumpi (the file path behind the cache and `g2gsim import`) runs the same
    point-to-point matching check as read_dumpi: the same warning, and a TraceError with strict."""
    tdr.test_cart_create_and_sub(tmp_path)          # a trace with 4 unmatched sends
    meta = tmp_path / "synth.meta"
    with warnings.catch_warnings(record=True) as wp:
        warnings.simplefilter("always")
        read_dumpi(meta, engine="python")
    with warnings.catch_warnings(record=True) as wr:
        warnings.simplefilter("always")
        stats = import_dumpi(meta, tmp_path / "o.g2g.parquet")
    assert stats["unmatched"] == 4
    ref = [str(w.message) for w in wp if "matching problem" in str(w.message)]
    assert len(ref) == 1 and ref == [str(w.message) for w in wr if "matching problem" in str(w.message)]
    with pytest.raises(TraceError, match=r"synth\.meta: 4 point-to-point matching problem"):
        import_dumpi(meta, tmp_path / "s.g2g.parquet", strict=True)
    with pytest.raises(TraceError, match="4 point-to-point matching problem"):
        read_dumpi(meta, strict=True)


def test_generated_trace_same_rows_and_window_order(tmp_path):
    spec = importlib.util.spec_from_file_location("dumpi_gen", ROOT / "bench/speed/dumpi_gen.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    info = gen.generate_dumpi(tmp_path, nranks=6, records=30_000)
    ref, got = assert_same(Path(info["meta"]))
    out = tmp_path / "o.g2g.parquet"
    stats = import_dumpi(info["meta"], out)
    assert stats["records"] == info["records"]
    assert stats["rows"] == ref.table.num_rows == sum(stats["op_counts"].values())
    assert stats["op_counts"] == ref.op_counts()
    # the file is in the streaming order the core reads: (window, rank, seq)
    t = Trace.read(out).table
    w = int(Trace.read(out).table.schema.metadata.get(b"g2gsim.window_ops", b"4096")) \
        if t.schema.metadata else 4096
    keys = list(zip((s // w for s in t.column("seq").to_pylist()), t.column("rank").to_pylist(),
                    t.column("seq").to_pylist()))
    assert keys == sorted(keys)


def test_errors_name_file_rank_record(tmp_path):
    w0 = tdr.Writer()
    w0.call("Init", tdr.i32(0))
    w0.call("Send", tdr.i32(1) + tdr.h16(tdr.INT) + tdr.i32(0, 1) + tdr.h16(tdr.COMM_NULL))
    meta = tdr.write_trace(tmp_path, [w0])
    with pytest.raises(TraceError, match=r"synth-0000.bin: rank 0, record 1 .*MPI_COMM_NULL"):
        import_dumpi(meta, tmp_path / "o.g2g.parquet")


def _corpus_metas() -> list[Path]:
    if not CORPUS.is_dir():
        return []
    return sorted(CORPUS.rglob("*.meta"))


@pytest.mark.parametrize("meta", sorted((ROOT / "tests/data").rglob("*.meta")),
                         ids=lambda p: str(p.relative_to(ROOT / "tests/data")))
def test_local_copies_same_rows(meta):
    assert_same(meta)


@pytest.mark.skipif(not _corpus_metas(), reason=f"trace corpus not present at {CORPUS}")
@pytest.mark.parametrize("meta", _corpus_metas(), ids=lambda p: str(p.relative_to(CORPUS)))
def test_corpus_same_rows(meta):
    assert_same(meta)


def _problem_program(r: int) -> tdr.Writer:
    """Four ranks whose messages have every kind of matching problem the streaming check reports:
    a ring with one receive too few (rank 0) and one too many (rank 1), a truncated message, a
    wildcard receive that takes a left-over send and one that finds none, ANY_TAG, and a dozen
    unmatched sends (so that the warning cuts its list and the order of problems shows): 16
    problems, the truncation first, then the sends left over in time order, then the receives."""
    w = tdr.Writer()
    INT, WORLD = tdr.INT, tdr.WORLD
    nxt, prv = (r + 1) % 4, (r - 1) % 4

    def send(dest, tag, n=8):
        w.call("Send", tdr.i32(n) + tdr.h16(INT) + tdr.i32(dest, tag) + tdr.h16(WORLD))

    def recv(src, tag, n=8, st_src=None):
        w.call("Recv", tdr.i32(n) + tdr.h16(INT) + tdr.i32(src, tag) + tdr.h16(WORLD)
               + w.status((4 * n, src if st_src is None else st_src, tag)))

    w.call("Init", tdr.i32(0))
    for _ in range(3):
        send(nxt, 1)
    for _ in range({0: 2, 1: 4}.get(r, 3)):
        recv(prv, 1)
    if r == 0:
        send(2, 2, n=100)               # into a 10-int receive: truncated
        recv(3, -1)                     # ANY_TAG: takes rank 3's ring send left over
    if r == 2:
        recv(0, 2, n=10)
        recv(-1, 4, st_src=0)           # ANY_SOURCE, nothing left for it
    if r == 1:
        send(3, 3)
        for k in range(12):
            send(2, 9 + k % 2)
    if r == 3:
        recv(-1, 3, st_src=1)           # ANY_SOURCE: takes rank 1's tag-3 send
        send(0, 1)                      # a fourth ring send, for rank 0's ANY_TAG receive
    w.call("Finalize")
    return w


def test_matching_problems_same_as_reference(tmp_path):
    """The streaming matching check of the Rust converter reports what rules.check_matching
    reports on the reference reader's rows: same count, same first problems in the same order."""
    meta = tdr.write_trace(tmp_path, [_problem_program(r) for r in range(4)])
    assert_same(meta)                   # rows, and the warnings' text
    with warnings.catch_warnings(record=True) as wr:
        warnings.simplefilter("always")
        st = import_dumpi(meta, tmp_path / "o.g2g.parquet")
    msg = next(str(w.message) for w in wr if "matching problem" in str(w.message))
    assert st["unmatched"] == 16 and "16 point-to-point matching problem(s): truncated message" in msg
    assert "(and 11 more)" in msg
    with pytest.raises(TraceError, match="16 point-to-point matching problem"):
        import_dumpi(meta, tmp_path / "s.g2g.parquet", strict=True)
    assert not (tmp_path / "s.g2g.parquet").exists()


def test_ignored_calls_untraced_in_rust(tmp_path):
    """A trace whose footers count calls made while tracing was off converts in Rust (no fallback
    to the Python reader): the longest gap of each such rank is an Untraced row, as the reference
    gives it, and the note says so."""
    ws = [tdr._synthetic_program(r) for r in range(4)]
    for r, w in enumerate(ws):
        w.counts[tdr.F["Send"]] += 3
        w.ignored[tdr.F["Send"]] += 3 if r != 2 else 0     # rank 2 traced everything
        if r == 2:
            w.counts[tdr.F["Send"]] -= 3
    ref, got = assert_same(tdr.write_trace(tmp_path, ws))
    ops = got.table.column("op").to_pylist()
    assert ops.count("Untraced") == 3
    assert "9 MPI calls on 3 ranks were made while DUMPI tracing was off" in got.source
    assert "kept as an Untraced row" in got.source
    st = import_dumpi(tmp_path / "synth.meta", tmp_path / "o.g2g.parquet")
    assert st["op_counts"]["Untraced"] == 3 and "engine" not in st


def test_written_file_uses_encodings_the_core_decodes(tmp_path):
    """The streaming writer keeps to the encodings the core's page decoder reads (PLAIN,
    dictionary, RLE, DELTA_BINARY_PACKED integers: pages.rs): any other (DELTA_BYTE_ARRAY, ...)
    would make every replay decode through Arrow."""
    import pyarrow.parquet as pq
    out = tmp_path / "o.g2g.parquet"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import_dumpi(tdr.write_trace(tmp_path, [tdr._synthetic_program(r) for r in range(4)]), out)
    md = pq.ParquetFile(out).metadata
    encs = {(md.row_group(g).column(c).physical_type, e) for g in range(md.num_row_groups)
            for c in range(md.num_columns) for e in md.row_group(g).column(c).encodings}
    assert {e for _, e in encs} <= {"PLAIN", "PLAIN_DICTIONARY", "RLE_DICTIONARY", "RLE",
                                    "DELTA_BINARY_PACKED"}, encs
    assert {t for t, e in encs if e == "DELTA_BINARY_PACKED"} <= {"INT32", "INT64"}, encs
    assert ("INT64", "DELTA_BINARY_PACKED") in encs  # the times

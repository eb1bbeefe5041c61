"""The readers' shared rules (python/g2gsim/readers/rules.py), one by one."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

from g2gsim.readers import rules  # noqa: E402
from g2gsim.trace import ANY_SOURCE, DEFAULTS, PROC_NULL, TraceBuilder, TraceError  # noqa: E402


def test_row_fields_are_the_builder_columns():
    assert set(rules.Row._fields) == {"op"} | set(DEFAULTS)
    r = rules.Row("Isend", peer=3, bytes=8, req=1)
    b = TraceBuilder(4)
    b.add(0, **r._asdict())
    t = b.build().table.to_pylist()[0]
    assert (t["op"], t["peer"], t["bytes"], t["req"], t["tag"]) == ("Isend", 3, 8, 1, -1)


def test_otf2_row_layout_is_rules_layout():
    pytest.importorskip("otf2")
    from g2gsim.readers import otf2_events as ev
    names = ["op", "t_start_ns", "t_end_ns", "dur_ns", "peer", "tag", "comm_id", "bytes", "recv_bytes",
             "recv_peer", "recv_tag", "root", "req", "mem_space", "copy_kind", "stream", "contiguous",
             "reqs", "priority"]
    assert list(rules.ROW_LAYOUT) == names
    idx = [ev.F_OP, ev.F_T0, ev.F_T1, ev.F_DUR, ev.F_PEER, ev.F_TAG, ev.F_COMM, ev.F_BYTES, ev.F_RBYTES,
           ev.F_RPEER, ev.F_RTAG, ev.F_ROOT, ev.F_REQ, ev.F_MEM, ev.F_CK, ev.F_STREAM, ev.F_CONTIG,
           ev.F_REQS, ev.F_PRIO]
    assert idx == list(range(len(names)))


def test_compute_gap():
    assert rules.compute_gap(None, 100) is None            # first call
    assert rules.compute_gap(100, 100) is None             # back to back
    assert rules.compute_gap(100, 90) is None              # overlapping (threads)
    assert rules.compute_gap(100, 250) == 150
    assert rules.compute_gap(100, 250, off_ns=50) == 100   # measurement off
    assert rules.compute_gap(100, 250, off_ns=500) == 0


def test_completion_a_successful_test_is_a_wait():
    assert rules.completion([7], "Testany") == ("Wait", {"req": 7})
    assert rules.completion([7, 8], "Testsome") == ("Waitall", {"reqs": [7, 8]})
    assert rules.completion([], "Testall", [7, 8]) == ("Testall", {"reqs": [7, 8]})
    assert rules.completion([], "Waitany", []) == ("Waitany", {"reqs": []})


def test_peers():
    assert rules.dest_peer(-2, 4, "x") == PROC_NULL
    assert rules.dest_peer(3, 4, "x") == 3
    with pytest.raises(TraceError, match="f.bin: MPI_Send: destination 4 outside communicator of 4"):
        rules.dest_peer(4, 4, "f.bin: MPI_Send")
    assert rules.source_peer(-1, 4, "x", wildcard=-1) == ANY_SOURCE
    assert rules.source_peer(-1, 4, "x", wildcard=-1, status_source=-1) == PROC_NULL
    assert rules.source_peer(-2, 4, "x", wildcard=-1) == PROC_NULL
    with pytest.raises(TraceError, match="source 9"):
        rules.source_peer(9, 4, "x", wildcard=-1)


def test_requests_numbered_per_rank_in_creation_order():
    q = rules.Requests(null_handle=1)
    assert (q.new(5), q.new(6)) == (1, 2)
    assert q.peek([5, 6, 1]) == [1, 2]
    assert q.take(5) == 1
    assert q.new(5) == 3                      # MPI reuses the handle: a new request
    assert q.take(1) is None and q.orphans == 0   # the null handle
    assert q.take(42) is None and q.orphans == 1  # never created
    assert q.take(43, inert={43}) is None and q.orphans == 1   # a persistent request at rest

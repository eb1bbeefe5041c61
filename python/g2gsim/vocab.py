"""The names g2gsim's core defines once, read from it (``_core.vocabulary()``): operation names
and their classes, modes, sharing models, memory spaces, copy kinds, the report's size classes and
the native format's columns.  Python code takes these sets from here and never spells them again.

The definitions live in ``crates/g2g-trace/src/vocab.rs`` (operations, columns),
``crates/g2g-mpi/src/options.rs`` and ``report.rs`` (modes, size classes) and
``crates/g2g-net/src/lmm.rs`` (sharing).
"""
from __future__ import annotations

import json
from typing import Any, NamedTuple

from ._core import vocabulary

_V: dict[str, Any] = json.loads(vocabulary())

#: every operation name a trace may hold -> the classes it belongs to
OP_CLASSES: dict[str, frozenset[str]] = {name: frozenset(classes) for name, classes in _V["ops"]}
CLASS_NAMES: tuple[str, ...] = tuple(_V["op_classes"])


def ops_in(cls: str) -> frozenset[str]:
    """The operation names of class ``cls`` (one of ``CLASS_NAMES``)."""
    if cls not in CLASS_NAMES:
        raise ValueError(f"unknown operation class {cls!r}; known: {', '.join(CLASS_NAMES)}")
    return frozenset(n for n, c in OP_CLASSES.items() if cls in c)


ALL_OPS = frozenset(OP_CLASSES)
SEND_OPS = ops_in("send")                      # every op that sends a message, Sendrecv included
BLOCKING_SEND_OPS = ops_in("blocking_send")    # Send, Ssend, Bsend, Rsend
NONBLOCKING_SEND_OPS = ops_in("nonblocking_send")
BLOCKING_RECV_OPS = ops_in("blocking_recv")    # Recv
NONBLOCKING_RECV_OPS = ops_in("nonblocking_recv")
RECV_OPS = ops_in("recv")                      # Recv, Irecv, Sendrecv
SEND_ONLY_OPS = BLOCKING_SEND_OPS | NONBLOCKING_SEND_OPS   # the sends but Sendrecv
RECV_ONLY_OPS = BLOCKING_RECV_OPS | NONBLOCKING_RECV_OPS   # the receives but Sendrecv
P2P_OPS = ops_in("p2p")
WAIT_OPS = ops_in("wait")
TEST_OPS = ops_in("test")
COLLECTIVES = ops_in("collective")
GPU_OPS = ops_in("gpu")
COMPUTE_OPS = ops_in("compute")                # Compute, Kernel: a dur_ns
COPY_OPS = ops_in("copy")
MARKER_OPS = ops_in("marker")
UNTRACED_OPS = ops_in("untraced")             # Untraced: a stretch the tracer did not record
MPI_OPS = ops_in("mpi")                        # point-to-point, waits, tests, collectives
BLOCKING_COLLECTIVES: tuple[str, ...] = tuple(_V["collectives"])   # in the core's order
NONBLOCKING_COLLECTIVES: tuple[str, ...] = tuple(
    sorted(ops_in("nonblocking_collective"), key=lambda n: BLOCKING_COLLECTIVES.index(n[1].upper() + n[2:])))

MODES: tuple[str, ...] = tuple(_V["modes"])
SHARING: tuple[str, ...] = tuple(_V["sharing"])
MEM_SPACES: tuple[str, ...] = tuple(_V["mem_spaces"])
HOST_SPACES: tuple[str, ...] = ("host", "pinned")     # host memory: ordinary and page-locked
COPY_KINDS: tuple[str, ...] = tuple(_V["copy_kinds"])
ANY_SOURCE: int = _V["any_source"]
PROC_NULL: int = _V["proc_null"]
ANY_TAG: int = _V["any_tag"]


class SizeClass(NamedTuple):
    key: str               # the report's key, "b: 1KiB-64KiB"
    label: str             # without the sort prefix, "1KiB-64KiB"
    max_bytes: int | None  # largest message of the class; None for the last


SIZE_CLASSES: tuple[SizeClass, ...] = tuple(
    SizeClass(k, k.split(": ", 1)[1], m) for k, m in _V["size_classes"])


class Column(NamedTuple):
    name: str
    type: str              # Arrow type name: uint32, int64, string, bool, list<uint64>, ...
    required: bool         # never null
    default: Any           # what a null or missing value means (None: stays null)
    replayed: bool         # read by the replay (the rest is for reports)
    doc: str


COLUMNS: tuple[Column, ...] = tuple(
    Column(c["name"], c["type"], c["required"], c["default"], c["replayed"], c["doc"]) for c in _V["columns"])

"""Read SST DUMPI binary traces (``x.meta`` + ``x-NNNN.bin`` per rank) into a g2gsim :class:`Trace`.

The binary format is decoded here directly (no C library).  What a DUMPI ``.bin`` holds, as written
by sst-dumpi's ``libdumpi`` (all integers big-endian):

* ``[0, 8)``: the magic ``ff aa dd 44 55 4d 50 49`` ("..DUMPI").
* The record stream at ``body`` (8): two int32 time offsets (CPU seconds, wall seconds) then one
  record per traced call and a 16-bit ``END_OF_STREAM`` label (293).
* The header (version[3], start time, host name, user name, mesh coordinates), the footer (magic
  ``0xf007fee7``, then 291 per-function call counts and 291 "ignored" counts), a key/value record,
  the performance-counter labels, the datatype size table, the profiled-function address table.
* The index, the last 8 int64 words: magic, then the offsets of the size table, address table,
  perf labels, header, body, footer and key/value record (older files lack the first one to three).

A record is: uint16 function id, uint8 config mask, [uint16 thread id if mask & 0x40],
[CPU start/stop if mask & 0x04], [wall start/stop if mask & 0x08] (each time is uint16 seconds
relative to the stream's offset + uint32 nanoseconds), [PAPI counters if mask & 0x80], then the
call's arguments in the order ``dumpiio.c`` writes them.  Statuses are only present when
``mask & 0x03``.  Handles (datatype, communicator, group, info, window, file, keyval, errhandler)
are uint16 indices that are local to the rank; requests are int32 indices (reused by DUMPI once a
request completes, so this reader maps them to fresh ids); ranks in arguments are relative to the
call's communicator.

Conversion rules (see docs/trace-format.md):

* Point-to-point calls, waits/tests, all MPI-2 collectives (Alltoallw becomes Alltoallv with per-peer
  sizes) and Init/Finalize become rows; ``Ibsend``/``Irsend`` become ``Isend``, ``Sendrecv_replace``
  becomes ``Sendrecv``; persistent requests (``*_init`` + ``Start``) become ``Isend``/``Issend``/
  ``Irecv`` at each ``Start``.  Every other call is decoded and skipped.
* The time between the end of the previous emitted row's call and the start of the next one becomes
  a ``Compute`` row (so time spent in skipped calls, e.g. MPI-IO, counts as compute).  Wall-clock
  times are used, CPU times when a record has no wall time.  ``t_start_ns``/``t_end_ns`` are relative
  to the earliest traced call of all ranks.
* Message sizes are count x datatype size; sizes come from the datatype constructors in the trace,
  ``MPI_Type_size`` records and the trace's datatype size table.
* Communicators created by ``Comm_dup``, ``Comm_create``, ``Comm_split``, ``Cart_create``,
  ``Cart_sub`` and ``Graph_create`` get their own ``comm_id`` with world-rank member lists; calls on
  intercommunicators raise :class:`TraceError`.
* A successful ``Test``/``Testany`` becomes a ``Wait`` on the completed request, ``Testall`` a
  ``Waitall``; ``Waitany`` with a returned index a ``Wait``, ``Waitsome``/``Testsome`` with returned
  indices a ``Wait`` (one request) or ``Waitall`` (several).  Unsuccessful tests stay test rows.
* DUMPI stores ``MPI_ANY_SOURCE`` as -1, ``MPI_ANY_TAG`` as -1 and ``MPI_ROOT`` as -2 but leaves
  ``MPI_PROC_NULL`` as the MPI library's own value (-2 in Open MPI, -1 in MPICH).  Negative
  destinations therefore become ``PROC_NULL`` (-2); a source of -1 becomes ``ANY_SOURCE`` unless the
  call's recorded status shows a negative source (an MPICH ``PROC_NULL`` receive); any other
  negative source becomes ``PROC_NULL``.
"""
from __future__ import annotations

import json
import math
import mmap
import struct
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

# the streaming import (import_dumpi) needs neither numpy nor pyarrow: trace.py and the rules
# (which load them) are imported where the Python reference reader and read_dumpi need them
from .._trace_base import TraceError, auto_window_ops
from ..vocab import ANY_TAG, BLOCKING_SEND_OPS

if TYPE_CHECKING:
    from ..trace import Trace, TraceBuilder

__all__ = [
    "read_dumpi", "import_dumpi", "read_dumpi_meta", "read_dumpi_footer_counts", "DumpiMeta", "DumpiFile",
    "DUMPI_FUNCTIONS", "SUPPORTED_VERSIONS", "DumpiImportNotice",
]

# --------------------------------------------------------------------------------------------
# The function table (the dumpi_function enum of sst-dumpi, in order; ids are positions).
# --------------------------------------------------------------------------------------------
DUMPI_FUNCTIONS: tuple[str, ...] = tuple("""
Send Recv Get_count Bsend Ssend Rsend Buffer_attach Buffer_detach
Isend Ibsend Issend Irsend Irecv Wait Test Request_free
Waitany Testany Waitall Testall Waitsome Testsome Iprobe Probe
Cancel Test_cancelled Send_init Bsend_init Ssend_init Rsend_init Recv_init Start
Startall Sendrecv Sendrecv_replace Type_contiguous Type_vector Type_hvector Type_indexed Type_hindexed
Type_struct Address Type_extent Type_size Type_lb Type_ub Type_commit Type_free
Get_elements Pack Unpack Pack_size Barrier Bcast Gather Gatherv
Scatter Scatterv Allgather Allgatherv Alltoall Alltoallv Reduce Op_create
Op_free Allreduce Reduce_scatter Scan Group_size Group_rank Group_translate_ranks Group_compare
Comm_group Group_union Group_intersection Group_difference Group_incl Group_excl Group_range_incl
Group_range_excl Group_free Comm_size Comm_rank Comm_compare Comm_dup Comm_create Comm_split Comm_free
Comm_test_inter Comm_remote_size Comm_remote_group Intercomm_create Intercomm_merge Keyval_create
Keyval_free Attr_put Attr_get Attr_delete Topo_test Cart_create Dims_create Graph_create
Graphdims_get Graph_get Cartdim_get Cart_get Cart_rank Cart_coords Graph_neighbors_count
Graph_neighbors Cart_shift Cart_sub Cart_map Graph_map Get_processor_name Get_version
Errhandler_create Errhandler_set Errhandler_get Errhandler_free Error_string Error_class
Wtime Wtick Init Finalize Initialized Abort Pcontrol Close_port Comm_accept Comm_connect
Comm_disconnect Comm_get_parent Comm_join Comm_spawn Comm_spawn_multiple Lookup_name Open_port
Publish_name Unpublish_name Accumulate Get Put Win_complete Win_create Win_fence Win_free
Win_get_group Win_lock Win_post Win_start Win_test Win_unlock Win_wait Alltoallw Exscan
Add_error_class Add_error_code Add_error_string Comm_call_errhandler Comm_create_keyval
Comm_delete_attr Comm_free_keyval Comm_get_attr Comm_get_name Comm_set_attr Comm_set_name
File_call_errhandler Grequest_complete Grequest_start Init_thread Is_thread_main Query_thread
Status_set_cancelled Status_set_elements Type_create_keyval Type_delete_attr Type_dup
Type_free_keyval Type_get_attr Type_get_contents Type_get_envelope Type_get_name Type_set_attr
Type_set_name Type_match_size Win_call_errhandler Win_create_keyval Win_delete_attr
Win_free_keyval Win_get_attr Win_get_name Win_set_attr Win_set_name Alloc_mem
Comm_create_errhandler Comm_get_errhandler Comm_set_errhandler File_create_errhandler
File_get_errhandler File_set_errhandler Finalized Free_mem Get_address Info_create Info_delete
Info_dup Info_free Info_get Info_get_nkeys Info_get_nthkey Info_get_valuelen Info_set
Pack_external Pack_external_size Request_get_status Type_create_darray Type_create_hindexed
Type_create_hvector Type_create_indexed_block Type_create_resized Type_create_struct
Type_create_subarray Type_get_extent Type_get_true_extent Unpack_external Win_create_errhandler
Win_get_errhandler Win_set_errhandler File_open File_close File_delete File_set_size
File_preallocate File_get_size File_get_group File_get_amode File_set_info File_get_info
File_set_view File_get_view File_read_at File_read_at_all File_write_at File_write_at_all
File_iread_at File_iwrite_at File_read File_read_all File_write File_write_all File_iread
File_iwrite File_seek File_get_position File_get_byte_offset File_read_shared File_write_shared
File_iread_shared File_iwrite_shared File_read_ordered File_write_ordered File_seek_shared
File_get_position_shared File_read_at_all_begin File_read_at_all_end File_write_at_all_begin
File_write_at_all_end File_read_all_begin File_read_all_end File_write_all_begin
File_write_all_end File_read_ordered_begin File_read_ordered_end File_write_ordered_begin
File_write_ordered_end File_get_type_extent Register_datarep File_set_atomicity
File_get_atomicity File_sync MPIO_Test MPIO_Wait MPIO_Testall MPIO_Waitall MPIO_Testany
MPIO_Waitany MPIO_Waitsome MPIO_Testsome
""".split())
assert len(DUMPI_FUNCTIONS) == 290, len(DUMPI_FUNCTIONS)
FID = {name: i for i, name in enumerate(DUMPI_FUNCTIONS)}
ALL_FUNCTIONS = 290          # footer slot holding the total
FUNCTION_ENTER = 291         # profiled user-function entry (MPI_Pcontrol annotations, -finstrument)
FUNCTION_EXIT = 292
END_OF_STREAM = 293
N_FOOTER_SLOTS = ALL_FUNCTIONS + 1

HEAD_MAGIC = 0xFFAADD44554D5049
FOOT_MAGIC = 0xF007FEE7

# versions: (0,5,0) is the oldest layout handled (mesh sizes were added in 0.5); sst-dumpi's
# version follows SST's release numbers (1.x, then 6.x ... 15.x).  Others are refused.
SUPPORTED_VERSIONS = ((0, 5, 0), (15, 255, 255))

# DUMPI's predefined handles
DUMPI_COMM_NULL, DUMPI_COMM_WORLD, DUMPI_COMM_SELF = 1, 2, 3
DUMPI_GROUP_NULL, DUMPI_GROUP_EMPTY = 1, 2
DUMPI_REQUEST_NULL = 1
DUMPI_ANY_SOURCE = -1
DUMPI_FIRST_USER_DATATYPE = 28
MPI_UNDEFINED_MIN = -40000  # MPI_UNDEFINED is -32766 in MPICH and Open MPI; any negative color is

# sizes of the predefined datatypes when a file has no size table (LP64 defaults)
_DEFAULT_TYPE_SIZES = (0, 0, 1, 1, 1, 1, 4, 2, 2, 4, 4, 8, 8, 4, 8, 16, 8, 8, 8, 1, 0, 0,
                       8, 12, 12, 6, 8, 20)

# times are uint16 seconds; a step back of more than this many seconds is taken as a wrap
_WRAP_SLACK = 600

# config-mask bits
_STATUS_BITS = 0x03
_CPU_BIT = 0x04
_WALL_BIT = 0x08
_THREAD_BIT = 0x40
_PERF_BIT = 0x80

# --------------------------------------------------------------------------------------------
# Argument layouts.  Tokens: i int32, q int64, b uint8, h uint16 handle, r int32 request,
# A int32 array, D uint16 array, B uint8 array, C char array, C2 array of char arrays,
# C3 array of arrays of char arrays, A2 array of int32 arrays, S status(es) (only when the
# record's mask has status bits).  Layouts that depend on an argument or on the file version
# are decoded by hand (see _special_decoders).
# --------------------------------------------------------------------------------------------
_LAYOUTS: dict[str, str] = {}


def _lay(spec: str, *names: str) -> None:
    for n in names:
        assert n in FID, n
        _LAYOUTS[n] = spec


_lay("i h i i h", "Send", "Bsend", "Ssend", "Rsend")
_lay("i h i i h S", "Recv")
_lay("S h i", "Get_count", "Get_elements")
_lay("i", "Buffer_attach", "Buffer_detach", "Address", "Initialized", "Add_error_class",
     "Is_thread_main", "Finalized", "Get_address")
_lay("i h i i h r", "Isend", "Ibsend", "Issend", "Irsend", "Irecv", "Send_init", "Bsend_init",
     "Ssend_init", "Rsend_init", "Recv_init")
_lay("r S", "Wait", "MPIO_Wait")
_lay("r i S", "Test", "Request_get_status", "MPIO_Test")
_lay("r", "Request_free", "Cancel", "Start", "Grequest_complete", "Grequest_start")
_lay("i A i S", "Waitany", "Testall", "MPIO_Testall", "MPIO_Waitany")
_lay("i A i i S", "Testany", "MPIO_Testany")
_lay("i A S", "Waitall", "MPIO_Waitall")
_lay("i A i A S", "Waitsome", "Testsome", "MPIO_Waitsome", "MPIO_Testsome")
_lay("i i h i S", "Iprobe")
_lay("i i h S", "Probe")
_lay("S i", "Test_cancelled", "Status_set_cancelled")
_lay("i A", "Startall")
_lay("i h i i i h i i h S", "Sendrecv")
_lay("i h i i i i h S", "Sendrecv_replace")
_lay("i h h", "Type_contiguous")
_lay("i i i h h", "Type_vector", "Type_hvector", "Type_create_hvector")
_lay("i A A h h", "Type_indexed", "Type_hindexed", "Type_create_hindexed")
_lay("h i", "Type_extent", "Type_size", "Type_lb", "Type_ub", "Group_size", "Group_rank",
     "Comm_size", "Comm_rank", "Comm_test_inter", "Comm_remote_size", "Attr_put", "Attr_delete",
     "Cartdim_get", "Abort", "Comm_call_errhandler", "File_call_errhandler", "Win_call_errhandler",
     "Win_test", "File_set_atomicity", "File_get_atomicity")
_lay("h", "Type_commit", "Type_free", "Barrier", "Group_free", "Comm_free", "Keyval_create",
     "Keyval_free", "Errhandler_create", "Errhandler_free", "Comm_disconnect", "Comm_get_parent",
     "Win_complete", "Win_free", "Win_wait", "Comm_create_keyval", "Comm_free_keyval",
     "Type_create_keyval", "Type_free_keyval", "Win_create_keyval", "Win_free_keyval",
     "Comm_create_errhandler", "File_create_errhandler", "Info_create", "Info_free",
     "Win_create_errhandler", "File_close", "File_sync")
_lay("i h i i i h", "Pack")
_lay("i i i i h h", "Unpack")
_lay("i h h i", "Pack_size")
_lay("i h i h", "Bcast")
_lay("i h i h h", "Allgather", "Alltoall")
_lay("i i h A A h h", "Allgatherv")
_lay("i A A h A A h h", "Alltoallv")
_lay("i h b i h", "Reduce")
_lay("i b", "Op_create")
_lay("b", "Op_free", "Query_thread")
_lay("i h b h", "Allreduce", "Scan", "Exscan")
_lay("i A h b h", "Reduce_scatter")
_lay("h i A h A", "Group_translate_ranks")
_lay("h h b", "Group_compare", "Comm_compare")
_lay("h h", "Comm_group", "Comm_dup", "Comm_remote_group", "Errhandler_set", "Errhandler_get",
     "Win_get_group", "Comm_delete_attr", "Comm_set_attr", "Type_delete_attr", "Type_dup",
     "Type_set_attr", "Win_delete_attr", "Win_set_attr", "Comm_get_errhandler",
     "Comm_set_errhandler", "File_get_errhandler", "File_set_errhandler", "Info_dup",
     "Win_get_errhandler", "Win_set_errhandler", "File_get_group", "File_set_info",
     "File_get_info")
_lay("h h h", "Group_union", "Group_intersection", "Group_difference", "Comm_create")
_lay("h i A h", "Group_incl", "Group_excl")
_lay("h i A2 h", "Group_range_incl", "Group_range_excl")
_lay("h i i h", "Comm_split")
_lay("h i h i i h", "Intercomm_create")
_lay("h i h", "Intercomm_merge")
_lay("h i i", "Attr_get", "Graphdims_get", "Graph_neighbors_count")
_lay("h b", "Topo_test", "File_get_amode")
_lay("h i A A i h", "Cart_create")
_lay("i i A A", "Dims_create")
_lay("i h i A A i h", "Graph_create")
_lay("i i h i i A A", "Graph_get")
_lay("i h A i", "Cart_rank")
_lay("i h i i A", "Cart_coords", "Graph_neighbors")
_lay("h i i i i", "Cart_shift")
_lay("i h A h", "Cart_sub")
_lay("h i A A i", "Cart_map")
_lay("i h i A A i", "Graph_map")
_lay("C i", "Get_processor_name")
_lay("i i", "Get_version", "Error_class", "Add_error_code")
_lay("i C i", "Error_string")
_lay("", "Wtime", "Wtick", "Finalize", "Free_mem")
_lay("C", "Close_port", "Register_datarep")
_lay("C h i h h", "Comm_accept", "Comm_connect")
_lay("i h", "Comm_join", "Alloc_mem")
_lay("C h C", "Lookup_name", "Publish_name", "Unpublish_name")
_lay("h C", "Open_port", "Comm_set_name", "Type_set_name", "Win_set_name", "Info_delete")
_lay("i h i i i h b h", "Accumulate")
_lay("i h i i i h h", "Get", "Put")
_lay("i i h h h", "Win_create")
_lay("b h", "Win_fence")
_lay("b i b h", "Win_lock")
_lay("h b h", "Win_post", "Win_start")
_lay("i h", "Win_unlock")
_lay("i A A D A A D h", "Alltoallw")
_lay("i C", "Add_error_string")
_lay("h h i", "Comm_get_attr", "Type_get_attr", "Win_get_attr", "File_get_type_extent")
_lay("h C i", "Comm_get_name", "Type_get_name", "Win_get_name")
_lay("S h i", "Status_set_elements")
_lay("i i i h i i i A A D", "Type_get_contents")
_lay("h i i i b", "Type_get_envelope")
_lay("b i h", "Type_match_size")
_lay("h C i C i", "Info_get")
_lay("h i", "Info_get_nkeys")
_lay("h i C", "Info_get_nthkey")
_lay("h C i i", "Info_get_valuelen")
_lay("h C C", "Info_set")
_lay("C i h i i i", "Pack_external")
_lay("C i h i", "Pack_external_size")
_lay("i i i A B A A b h h", "Type_create_darray")
_lay("i i A h h", "Type_create_indexed_block")
_lay("h i i h", "Type_create_resized")
_lay("i A A D h", "Type_create_struct")
_lay("i A A A b h h", "Type_create_subarray")
_lay("h i i", "Type_get_extent", "Type_get_true_extent")
_lay("C i i i i h", "Unpack_external")
_lay("h C b h h", "File_open")
_lay("C h", "File_delete")
_lay("h q", "File_set_size", "File_preallocate", "File_get_size", "File_get_position",
     "File_get_position_shared")
_lay("h q h h C h", "File_set_view")
_lay("h q h h C", "File_get_view")
_lay("h q i h S", "File_read_at", "File_read_at_all", "File_write_at", "File_write_at_all")
_lay("h q i h r", "File_iread_at", "File_iwrite_at")
_lay("h i h S", "File_read", "File_read_all", "File_write", "File_write_all", "File_read_shared",
     "File_write_shared", "File_read_ordered", "File_write_ordered")
_lay("h i h r", "File_iread", "File_iwrite", "File_iread_shared", "File_iwrite_shared")
_lay("h q b", "File_seek", "File_seek_shared")
_lay("h q q", "File_get_byte_offset")
_lay("h q i h", "File_read_at_all_begin", "File_write_at_all_begin")
_lay("h i h", "File_read_all_begin", "File_write_all_begin", "File_read_ordered_begin",
     "File_write_ordered_begin")
_lay("h S", "File_read_at_all_end", "File_write_at_all_end", "File_read_all_end",
     "File_write_all_end", "File_read_ordered_end", "File_write_ordered_end")

# hand-decoded: Gather Gatherv Scatter Scatterv Type_struct Cart_get Init Init_thread Comm_spawn
# Comm_spawn_multiple.  MPI_Pcontrol has no record layout (libdumpi writes Function_enter/exit).
_SPECIAL = {"Gather", "Gatherv", "Scatter", "Scatterv", "Type_struct", "Cart_get", "Init",
            "Init_thread", "Comm_spawn", "Comm_spawn_multiple"}
_NO_LAYOUT = {"Pcontrol"}
assert set(_LAYOUTS) | _SPECIAL | _NO_LAYOUT == set(DUMPI_FUNCTIONS), \
    sorted(set(DUMPI_FUNCTIONS) - set(_LAYOUTS) - _SPECIAL - _NO_LAYOUT)


class _Short(Exception):
    """Raised by the decoders when a field would run past the end of the data."""


class _Bad(Exception):
    """Raised by the decoders for a value that cannot be right (negative array length, ...)."""


_I32 = struct.Struct(">i")
_U16 = struct.Struct(">H")
_FIXED = {"i": "i", "r": "i", "q": "q", "b": "B", "h": "H"}


class _Reader:
    """Decoding context of one file: the bytes, version-dependent sizes."""

    __slots__ = ("buf", "n", "status_size", "status_tag")

    def __init__(self, buf: bytes | mmap.mmap, version: tuple[int, int, int]):
        self.buf = buf
        self.n = len(buf)
        self.status_tag = version >= (0, 6, 3)   # status tag added in 0.6.3
        self.status_size = 14 if self.status_tag else 10


def _read_count(rd: _Reader, pos: int, elem: int) -> tuple[int, int]:
    if pos + 4 > rd.n:
        raise _Short
    (cnt,) = _I32.unpack_from(rd.buf, pos)
    pos += 4
    if cnt < 0:
        raise _Bad(f"negative array length {cnt}")
    if pos + cnt * elem > rd.n:
        raise _Short
    return cnt, pos


def _arr(rd: _Reader, pos: int, code: str, elem: int) -> tuple[tuple, int]:
    cnt, pos = _read_count(rd, pos, elem)
    if cnt == 0:
        return (), pos
    vals = struct.unpack_from(f">{cnt}{code}", rd.buf, pos)
    return vals, pos + cnt * elem


def _chars(rd: _Reader, pos: int) -> tuple[str, int]:
    cnt, pos = _read_count(rd, pos, 1)
    s = rd.buf[pos:pos + cnt].split(b"\0", 1)[0].decode("utf-8", "replace")
    return s, pos + cnt


def _chars2(rd: _Reader, pos: int) -> tuple[tuple, int]:
    cnt, pos = _read_count(rd, pos, 4)
    out = []
    for _ in range(cnt):
        s, pos = _chars(rd, pos)
        out.append(s)
    return tuple(out), pos


def _chars3(rd: _Reader, pos: int) -> tuple[tuple, int]:
    cnt, pos = _read_count(rd, pos, 4)
    out = []
    for _ in range(cnt):
        v, pos = _chars2(rd, pos)
        out.append(v)
    return tuple(out), pos


def _arr2(rd: _Reader, pos: int) -> tuple[tuple, int]:
    cnt, pos = _read_count(rd, pos, 4)
    out = []
    for _ in range(cnt):
        v, pos = _arr(rd, pos, "i", 4)
        out.append(v)
    return tuple(out), pos


def _status(rd: _Reader, pos: int, mask: int):
    """Statuses: None when the record has none; else a tuple of (bytes, source, tag)."""
    if not mask & _STATUS_BITS:
        return None, pos
    cnt, pos = _read_count(rd, pos, rd.status_size)
    out = []
    buf = rd.buf
    for _ in range(cnt):
        nbytes, src = struct.unpack_from(">ii", buf, pos)
        tag = _I32.unpack_from(buf, pos + 10)[0] if rd.status_tag else ANY_TAG
        out.append((nbytes, src, tag))
        pos += rd.status_size
    return tuple(out), pos


_VAR_STEPS: dict[str, Callable] = {
    "A": lambda rd, pos, mask: _arr(rd, pos, "i", 4),
    "D": lambda rd, pos, mask: _arr(rd, pos, "H", 2),
    "B": lambda rd, pos, mask: _arr(rd, pos, "B", 1),
    "C": lambda rd, pos, mask: _chars(rd, pos),
    "C2": lambda rd, pos, mask: _chars2(rd, pos),
    "C3": lambda rd, pos, mask: _chars3(rd, pos),
    "A2": lambda rd, pos, mask: _arr2(rd, pos),
    "S": _status,
}


def _compile(spec: str) -> Callable:
    """Turn a layout into ``decode(rd, pos, mask) -> (args tuple, new pos)``.

    Runs of fixed-size fields are merged into one ``struct.Struct``."""
    steps: list[tuple[str, Any]] = []
    fixed = ""
    for tok in spec.split():
        if tok in _FIXED:
            fixed += _FIXED[tok]
            continue
        if fixed:
            steps.append(("F", struct.Struct(">" + fixed)))
            fixed = ""
        steps.append(("V", _VAR_STEPS[tok]))
    if fixed:
        steps.append(("F", struct.Struct(">" + fixed)))

    if not steps:
        def dec0(rd, pos, mask):
            return (), pos
        return dec0
    if len(steps) == 1 and steps[0][0] == "F":
        st = steps[0][1]
        size = st.size
        unpack = st.unpack_from

        def dec1(rd, pos, mask):
            if pos + size > rd.n:
                raise _Short
            return unpack(rd.buf, pos), pos + size
        return dec1

    def decn(rd, pos, mask):
        out: list = []
        for kind, s in steps:
            if kind == "F":
                if pos + s.size > rd.n:
                    raise _Short
                out.extend(s.unpack_from(rd.buf, pos))
                pos += s.size
            else:
                v, pos = s(rd, pos, mask)
                out.append(v)
        return tuple(out), pos
    return decn


def _fixed(rd: _Reader, pos: int, fmt: str) -> tuple[tuple, int]:
    st = struct.Struct(">" + fmt)
    if pos + st.size > rd.n:
        raise _Short
    return st.unpack_from(rd.buf, pos), pos + st.size


def _dec_gather(rd, pos, mask):
    # commrank, sendcount, sendtype, root, comm [, recvcount, recvtype at the root]
    (commrank, scount, stype, root, comm), pos = _fixed(rd, pos, "iiHiH")
    rcount = rtype = None
    if commrank == root:
        (rcount, rtype), pos = _fixed(rd, pos, "iH")
    return (commrank, scount, stype, root, comm, rcount, rtype), pos


def _dec_gatherv(rd, pos, mask):
    # commrank, commsize, sendcount, sendtype, root, comm [, recvcounts, displs], recvtype
    (commrank, commsize, scount, stype, root, comm), pos = _fixed(rd, pos, "iiiHiH")
    rcounts = None
    if commrank == root:
        rcounts, pos = _arr(rd, pos, "i", 4)
        _, pos = _arr(rd, pos, "i", 4)
    (rtype,), pos = _fixed(rd, pos, "H")
    return (commrank, commsize, scount, stype, root, comm, rcounts, rtype), pos


def _dec_scatter(rd, pos, mask):
    # commrank, recvcount, recvtype, root, comm [, sendcount, sendtype at the root]
    (commrank, rcount, rtype, root, comm), pos = _fixed(rd, pos, "iiHiH")
    scount = stype = None
    if commrank == root:
        (scount, stype), pos = _fixed(rd, pos, "iH")
    return (commrank, rcount, rtype, root, comm, scount, stype), pos


def _dec_scatterv(rd, pos, mask):
    # commrank, commsize, sendtype, recvcount, recvtype, root, comm [, sendcounts, displs]
    (commrank, commsize, stype, rcount, rtype, root, comm), pos = _fixed(rd, pos, "iiHiHiH")
    scounts = None
    if commrank == root:
        scounts, pos = _arr(rd, pos, "i", 4)
        _, pos = _arr(rd, pos, "i", 4)
    return (commrank, commsize, stype, rcount, rtype, root, comm, scounts), pos


def _dec_comm_spawn(rd, pos, mask):
    (oldrank, root, oldcomm, newcomm), pos = _fixed(rd, pos, "iiHH")
    if oldrank == root:
        _, pos = _chars(rd, pos)
        _, pos = _chars2(rd, pos)
        _, pos = _fixed(rd, pos, "iH")
        _, pos = _arr(rd, pos, "i", 4)
    return (oldrank, root, oldcomm, newcomm), pos


def _dec_comm_spawn_multiple(rd, pos, mask):
    (totprocs, oldrank, root, oldcomm, newcomm), pos = _fixed(rd, pos, "iiiHH")
    if oldrank == root:
        _, pos = _fixed(rd, pos, "i")
        _, pos = _chars2(rd, pos)
        _, pos = _chars3(rd, pos)
        _, pos = _arr(rd, pos, "i", 4)
        _, pos = _arr(rd, pos, "H", 2)
        _, pos = _arr(rd, pos, "i", 4)
    return (totprocs, oldrank, root, oldcomm, newcomm), pos


def _make_special(version: tuple[int, int, int]) -> dict[str, Callable]:
    old_struct = version < (0, 6, 9)     # Type_struct stored one displacement before 0.6.9
    old_cart_get = version < (0, 6, 8)   # Cart_get stored one coordinate before 0.6.8
    double_argc = version < (0, 6, 2)    # Init stored argc twice before 0.6.2

    def dec_type_struct(rd, pos, mask):
        (count,), pos = _fixed(rd, pos, "i")
        lens, pos = _arr(rd, pos, "i", 4)
        if old_struct:
            _, pos = _fixed(rd, pos, "i")
            displs = None
        else:
            displs, pos = _arr(rd, pos, "i", 4)
        types, pos = _arr(rd, pos, "H", 2)
        (newtype,), pos = _fixed(rd, pos, "H")
        return (count, lens, displs, types, newtype), pos

    def dec_cart_get(rd, pos, mask):
        (ndim, comm, maxdims), pos = _fixed(rd, pos, "iHi")
        dims, pos = _arr(rd, pos, "i", 4)
        periods, pos = _arr(rd, pos, "i", 4)
        if old_cart_get:
            _, pos = _fixed(rd, pos, "i")
        else:
            _, pos = _arr(rd, pos, "i", 4)
        return (ndim, comm, maxdims, dims, periods), pos

    def dec_init(rd, pos, mask):
        (argc,), pos = _fixed(rd, pos, "i")
        if double_argc:
            _, pos = _fixed(rd, pos, "i")
        if argc < 0:
            raise _Bad(f"negative argc {argc}")
        argv = []
        for _ in range(argc):
            s, pos = _chars(rd, pos)
            argv.append(s)
        return (argc, tuple(argv)), pos

    def dec_init_thread(rd, pos, mask):
        (argc,), pos = _fixed(rd, pos, "i")
        if argc < 0:
            raise _Bad(f"negative argc {argc}")
        argv = []
        for _ in range(argc):
            s, pos = _chars(rd, pos)
            argv.append(s)
        (req, prov), pos = _fixed(rd, pos, "BB")
        return (argc, tuple(argv), req, prov), pos

    return {
        "Gather": _dec_gather, "Gatherv": _dec_gatherv, "Scatter": _dec_scatter,
        "Scatterv": _dec_scatterv, "Type_struct": dec_type_struct, "Cart_get": dec_cart_get,
        "Init": dec_init, "Init_thread": dec_init_thread, "Comm_spawn": _dec_comm_spawn,
        "Comm_spawn_multiple": _dec_comm_spawn_multiple,
    }


_COMPILED = {name: _compile(spec) for name, spec in _LAYOUTS.items()}
_DECODER_CACHE: dict[tuple[int, int, int], list] = {}


def _decoders(version: tuple[int, int, int]) -> list:
    """Per function id: the argument decoder (None: no layout).  Ids 291/292: Function_enter/exit."""
    d = _DECODER_CACHE.get(version)
    if d is None:
        special = _make_special(version)
        d = [special.get(n) or _COMPILED.get(n) for n in DUMPI_FUNCTIONS]
        d += [None, _compile("q"), _compile("q")]  # ALL_FUNCTIONS (not a record), enter, exit
        _DECODER_CACHE[version] = d
    return d


# record prefix after the mask, per mask value: (struct or None, has_thread, has_cpu, has_wall)
_PREFIX: dict[int, tuple] = {}


def _prefix(mask: int) -> tuple:
    p = _PREFIX.get(mask)
    if p is None:
        fmt = ""
        if mask & _THREAD_BIT:
            fmt += "H"
        if mask & _CPU_BIT:
            fmt += "HIHI"
        if mask & _WALL_BIT:
            fmt += "HIHI"
        st = struct.Struct(">" + fmt) if fmt else None
        p = (st, st.size if st else 0, bool(mask & _THREAD_BIT), bool(mask & _CPU_BIT),
             bool(mask & _WALL_BIT))
        _PREFIX[mask] = p
    return p


# --------------------------------------------------------------------------------------------
# Files
# --------------------------------------------------------------------------------------------
@dataclass
class DumpiMeta:
    path: Path
    hostname: str
    numprocs: int
    fileprefix: str
    username: str = ""
    starttime: int = 0
    version: tuple[int, int, int] | None = None
    fields: dict[str, str] = field(default_factory=dict)
    # the prefix the .bin files really have: ``fileprefix`` or, for renamed files, the .meta's stem
    bin_prefix: str = ""
    # one line saying the .bin files were found under another prefix than the .meta names ("" if not)
    prefix_note: str = ""

    def bin_path(self, rank: int) -> Path:
        return self.path.parent / f"{self.bin_prefix or self.fileprefix}-{rank:04d}.bin"


class DumpiImportNotice(UserWarning):
    """A one-line notice about how a DUMPI trace was read (e.g. renamed .bin files)."""


def _resolve_bin_prefix(meta: DumpiMeta) -> None:
    """Find the prefix of the .bin files.  libdumpi names them ``<fileprefix>-NNNN.bin``; traces
    whose files were renamed after the .meta's stem (``n16.meta`` + ``n16-0000.bin``, as in the
    MiniFE traces of the corpus) are found when the .meta's prefix finds no file at all."""
    d = meta.path.parent
    meta.bin_prefix = meta.fileprefix

    def any_bin(prefix: str) -> bool:
        return any((d / f"{prefix}-{r:04d}.bin").is_file() for r in range(min(meta.numprocs, 8))) \
            or any(d.glob(f"{_glob_escape(prefix)}-[0-9][0-9][0-9][0-9]*.bin"))

    stem = meta.path.stem
    if any_bin(meta.fileprefix) or stem == meta.fileprefix or not any_bin(stem):
        return
    meta.bin_prefix = stem
    meta.prefix_note = (f"{meta.path}: fileprefix={meta.fileprefix} matches no .bin file; "
                        f"reading the renamed files {stem}-NNNN.bin beside it")


def _glob_escape(s: str) -> str:
    return "".join(f"[{c}]" if c in "*?[" else c for c in s)


def read_dumpi_meta(meta_path: str | Path) -> DumpiMeta:
    """Parse a DUMPI ``.meta`` file (``key=value`` lines)."""
    path = Path(meta_path)
    if not path.is_file():
        raise TraceError(f"{path}: no such DUMPI meta file")
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise TraceError(f"{path}: cannot read DUMPI meta file ({e})") from None
    fields: dict[str, str] = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if "=" not in line:
            raise TraceError(f"{path}: line {lineno}: expected key=value, got {line!r}")
        k, v = line.split("=", 1)
        fields[k.strip()] = v.strip()
    for k in ("numprocs", "fileprefix"):
        if k not in fields:
            raise TraceError(f"{path}: DUMPI meta file has no {k}= line")
    try:
        numprocs = int(fields["numprocs"])
    except ValueError:
        raise TraceError(f"{path}: numprocs={fields['numprocs']!r} is not a number") from None
    if numprocs <= 0:
        raise TraceError(f"{path}: numprocs={numprocs} (must be > 0)")
    version = None
    try:
        version = (int(fields["version"]), int(fields.get("subversion", 0)),
                   int(fields.get("subsubversion", 0)))
    except (KeyError, ValueError):
        pass
    try:
        starttime = int(fields.get("startime", fields.get("starttime", "0")))
    except ValueError:
        starttime = 0
    meta = DumpiMeta(path=path, hostname=fields.get("hostname", ""), numprocs=numprocs,
                     fileprefix=fields["fileprefix"], username=fields.get("username", ""),
                     starttime=starttime, version=version, fields=fields)
    _resolve_bin_prefix(meta)
    return meta


@dataclass
class DumpiRecords:
    """The decoded record stream of one rank (parallel lists, one entry per record)."""
    fids: list[int]
    offsets: list[int]
    t0: list[int | None]      # call start, ns since the epoch (wall clock; CPU clock if no wall)
    t1: list[int | None]      # call end
    args: list[tuple]


class DumpiFile:
    """One rank's ``.bin``: index, header, footer, datatype sizes and the record stream."""

    buf: mmap.mmap | bytes          # mapped (read_bytes for files under 8 bytes; b"" once closed)
    rd: _Reader | None              # None once closed

    def __init__(self, path: str | Path, rank: int):
        self.path = Path(path)
        self.rank = rank
        if not self.path.is_file():
            raise TraceError(f"{self.path}: rank {rank}: DUMPI trace file is missing "
                             f"(before record 0)")
        try:
            # mapped, not read: the sections after the record stream are all most callers touch
            # (the Rust converter streams the records itself)
            if self.path.stat().st_size >= 8:
                with open(self.path, "rb") as fh:
                    self.buf = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
            else:
                self.buf = self.path.read_bytes()
        except OSError as e:
            raise TraceError(f"{self.path}: rank {rank}: cannot read ({e}) (before record 0)") from None
        buf = self.buf
        self.size = len(buf)
        if self.size < 8:
            raise TraceError(f"{self.where(0, 0)}: file truncated at {self.size} bytes (not even "
                             f"the 8-byte DUMPI magic)")
        if struct.unpack_from(">Q", buf, 0)[0] != HEAD_MAGIC:
            raise TraceError(f"{self.where()}: not a DUMPI trace (no DUMPI magic at byte offset 0)"
                             f" (before record 0)")
        self._read_index()
        self._read_header()
        self._check_version()
        self.rd = _Reader(buf, self.version)
        self._read_footer()
        self._read_tables()

    # ---------------------------------------------------------------- sections
    def where(self, record: int | None = None, offset: int | None = None) -> str:
        s = f"{self.path}: rank {self.rank}"
        if record is not None:
            s += f", record {record}"
        if offset is not None:
            s += f" (byte offset {offset})"
        return s

    def _read_index(self) -> None:
        buf, n = self.buf, self.size
        # newest layout: magic + 7 offsets; older files lack sizelbl, then addrlbl, then perflbl
        for nwords, names in ((8, ("sizelbl", "addrlbl", "perflbl")), (7, ("addrlbl", "perflbl")),
                              (6, ("perflbl",)), (5, ())):
            start = n - 8 * nwords
            if start < 8:
                continue
            if struct.unpack_from(">Q", buf, start)[0] != HEAD_MAGIC:
                continue
            words = struct.unpack_from(f">{nwords - 1}Q", buf, start + 8)
            idx = dict(zip(names, words[:len(names)]))
            hdr, body, foot, keyval = words[len(names):]
            # a file cut by a multiple of 8 bytes can look like an older, shorter index: the
            # stream always starts right after the magic, the header follows it, then the footer
            if not (body == 8 and body < hdr < start and (foot == 0 or hdr < foot < start)):
                continue
            self.sizelbl = idx.get("sizelbl", 0)
            self.addrlbl = idx.get("addrlbl", 0)
            self.perflbl = idx.get("perflbl", 0)
            self.header_off, self.body_off, self.footer_off, self.keyval_off = hdr, body, foot, keyval
            self.index_off = start
            for name in ("sizelbl", "addrlbl", "perflbl", "header_off", "body_off", "footer_off",
                         "keyval_off"):
                v = getattr(self, name)
                if v >= start:
                    raise TraceError(f"{self.where()}: index entry {name}={v} points past the "
                                     f"index at byte offset {start} (file corrupt or truncated) "
                                     f"(before record 0)")
            if self.body_off < 8:
                raise TraceError(f"{self.where()}: index has no record stream (body offset "
                                 f"{self.body_off}) (before record 0)")
            return
        # no index: the file was cut.  Walk the stream from its usual start to say where.
        self._diagnose_truncation()

    def _diagnose_truncation(self) -> None:
        n = self.size
        base = f"{self.path}: rank {self.rank}: file truncated at {n} bytes (no DUMPI index at its end)"
        if n < 16:
            raise TraceError(f"{base}; record stream cut before record 0 (byte offset 8)")
        version = self._guess_version()
        self.version = version
        self.rd = _Reader(self.buf, version)
        self.header_off = 0
        self.body_off = 8
        try:
            recs = self._decode_stream(stream_end=None)
        except TraceError as e:
            raise TraceError(f"{e} [no DUMPI index at the end of the {n}-byte file]") from None
        raise TraceError(f"{base}; the record stream is complete ({len(recs.fids)} records) but the "
                         f"header/footer/index after it are missing (record {len(recs.fids)}, byte "
                         f"offset {n})")

    def _guess_version(self) -> tuple[int, int, int]:
        # The header is after the stream, so a cut file has lost it; the meta file's version
        # (set by the caller) is the best guess, the current layout the fallback.
        return getattr(self, "meta_version", None) or (1, 1, 0)

    def _read_header(self) -> None:
        buf, p = self.buf, self.header_off
        if p == 0:
            raise TraceError(f"{self.where()}: trace has no header record (before record 0)")
        try:
            self.version = tuple(buf[p:p + 3])  # type: ignore[assignment]  # (length checked below)
            if len(self.version) != 3:
                raise _Short
            (self.starttime,) = struct.unpack_from(">Q", buf, p + 3)
            p += 11
            (ln,) = _U16.unpack_from(buf, p)
            self.hostname = buf[p + 2:p + 2 + ln].decode("utf-8", "replace")
            p += 2 + ln
            (ln,) = _U16.unpack_from(buf, p)
            self.username = buf[p + 2:p + 2 + ln].decode("utf-8", "replace")
            p += 2 + ln
            (meshdim,) = _I32.unpack_from(buf, p)
            if meshdim < 0 or meshdim > 64:
                raise _Bad
            self.meshcrd = struct.unpack_from(f">{meshdim}i", buf, p + 4)
        except (struct.error, _Short, _Bad):
            raise TraceError(f"{self.where(offset=self.header_off)}: header record is corrupt or "
                             f"truncated (before record 0)") from None

    def _check_version(self) -> None:
        lo, hi = SUPPORTED_VERSIONS
        v = self.version
        if not (lo <= v <= hi):
            raise TraceError(f"{self.where(offset=self.header_off)}: unsupported DUMPI version "
                             f"{v[0]}.{v[1]}.{v[2]} (this reader handles {lo[0]}.{lo[1]}.{lo[2]} to "
                             f"{hi[0]}.x) (before record 0)")

    def _read_footer(self) -> None:
        buf, p = self.buf, self.footer_off
        self.call_counts: list[int] = [0] * N_FOOTER_SLOTS
        self.ignored_counts: list[int] = [0] * N_FOOTER_SLOTS
        if p == 0:
            self.has_footer = False
            return
        self.has_footer = True
        end = p + 8 + 8 * N_FOOTER_SLOTS
        if end > self.index_off:
            raise TraceError(f"{self.where(offset=p)}: footer is cut short (needs {end - p} bytes "
                             f"for {N_FOOTER_SLOTS} function counts) (before record 0)")
        (magic,) = struct.unpack_from(">Q", buf, p)
        if magic != FOOT_MAGIC:
            raise TraceError(f"{self.where(offset=p)}: bad footer magic {magic:#x} (before record 0)")
        self.call_counts = list(struct.unpack_from(f">{N_FOOTER_SLOTS}I", buf, p + 8))
        self.ignored_counts = list(struct.unpack_from(f">{N_FOOTER_SLOTS}I", buf,
                                                      p + 8 + 4 * N_FOOTER_SLOTS))
        # other sections must not overlap the footer (they would if the function table differed)
        for name in ("sizelbl", "addrlbl", "perflbl"):
            off = getattr(self, name)
            if p < off < end:
                raise TraceError(f"{self.where(offset=p)}: footer overlaps the {name} section; the "
                                 f"file's function table is not the {ALL_FUNCTIONS}-function one "
                                 f"this reader knows (before record 0)")

    def _read_tables(self) -> None:
        buf, rd = self.buf, self._reader()
        self.type_sizes: tuple[int, ...] = _DEFAULT_TYPE_SIZES
        self.has_size_table = False
        self.perf_labels: tuple[str, ...] = ()
        self.function_addresses: dict[int, str] = {}
        self.keyvals: dict[str, str] = {}
        try:
            if self.sizelbl:
                self.type_sizes, _ = _arr(rd, self.sizelbl, "i", 4)
                self.has_size_table = True
            if self.perflbl:
                cnt, p = _read_count(rd, self.perflbl, 2)
                labels = []
                for _ in range(cnt):
                    (ln,) = _U16.unpack_from(buf, p)
                    labels.append(buf[p + 2:p + 2 + ln].decode("utf-8", "replace"))
                    p += 2 + ln
                self.perf_labels = tuple(labels)
            if self.addrlbl:
                cnt, p = _read_count(rd, self.addrlbl, 10)
                for _ in range(cnt):
                    (addr, ln) = struct.unpack_from(">QH", buf, p)
                    self.function_addresses[addr] = buf[p + 10:p + 10 + ln].decode("utf-8", "replace")
                    p += 10 + ln
            if self.keyval_off:
                cnt, p = _read_count(rd, self.keyval_off, 4)
                for _ in range(cnt):
                    (ln,) = _U16.unpack_from(buf, p)
                    k = buf[p + 2:p + 2 + ln].decode("utf-8", "replace")
                    p += 2 + ln
                    (ln,) = _U16.unpack_from(buf, p)
                    self.keyvals[k] = buf[p + 2:p + 2 + ln].decode("utf-8", "replace")
                    p += 2 + ln
        except (struct.error, _Short, _Bad):
            raise TraceError(f"{self.where()}: a trailing table (datatype sizes, perf labels, "
                             f"function addresses or key/values) is corrupt (before record 0)") from None

    def close(self) -> None:
        """Unmaps the file (the parsed sections stay; records() needs the file again)."""
        if isinstance(self.buf, mmap.mmap):
            self.buf.close()
        self.buf = b""
        self.rd = None

    def _reader(self) -> _Reader:
        if self.rd is None:
            raise TraceError(f"{self.path}: rank {self.rank}: the file is closed (records() needs it open)")
        return self.rd

    def stream_spec(self) -> tuple:
        """What the Rust decoder needs: (path, rank, body offset, END_OF_STREAM offset, version,
        datatype sizes)."""
        return (str(self.path), self.rank, self.body_off, self.header_off - 2, tuple(self.version),
                [int(x) for x in self.type_sizes])

    # ---------------------------------------------------------------- footer / records
    def footer_counts(self) -> dict[str, int]:
        """Per-function call counts from the footer (functions with a non-zero count)."""
        return {DUMPI_FUNCTIONS[i]: c for i, c in enumerate(self.call_counts[:ALL_FUNCTIONS]) if c}

    def records(self) -> DumpiRecords:
        end = self.header_off - 2 if self.header_off else None
        return self._decode_stream(stream_end=end)

    def _decode_stream(self, stream_end: int | None) -> DumpiRecords:
        """Decode every record from the body to END_OF_STREAM.

        ``stream_end``: where the END_OF_STREAM label must sit (the header follows it), or None
        when unknown (truncation diagnosis)."""
        rd = self._reader()
        buf, n = rd.buf, rd.n
        limit = stream_end + 2 if stream_end is not None else n
        decoders = _decoders(self.version)
        pos = self.body_off
        if pos + 8 > limit:
            raise TraceError(f"{self.where(0, pos)}: record stream cut before its time offsets")
        cpu_off, wall_off = struct.unpack_from(">ii", buf, pos)
        pos += 8
        fids: list[int] = []
        offsets: list[int] = []
        t0s: list = []
        t1s: list = []
        args_l: list = []
        # 16-bit seconds wrap every 65536 s: unwrap with a per-clock running base; a clock that
        # seems to step back by more than _WRAP_SLACK seconds has wrapped
        cpu_base = wall_base = 0
        cpu_last = wall_last = None
        u16 = _U16.unpack_from
        idx = 0
        while True:
            if pos + 2 > limit:
                raise TraceError(f"{self.where(idx, pos)}: file truncated: record stream ends "
                                 f"without its end-of-stream mark (file has {n} bytes)")
            (fid,) = u16(buf, pos)
            if fid == END_OF_STREAM:
                if stream_end is not None and pos != stream_end:
                    raise TraceError(f"{self.where(idx, pos)}: end-of-stream mark found at byte "
                                     f"offset {pos} but the header starts at {stream_end + 2}")
                break
            if pos + 3 > limit:
                raise TraceError(f"{self.where(idx, pos)}: file truncated inside record {idx}")
            dec = decoders[fid] if fid < END_OF_STREAM else None
            if dec is None:
                what = (f"{_call(fid)} has no DUMPI record layout"
                        if fid < ALL_FUNCTIONS else f"unknown DUMPI function id {fid}")
                raise TraceError(f"{self.where(idx, pos)}: {what}")
            mask = buf[pos + 2]
            st, psize, has_thread, has_cpu, has_wall = _prefix(mask)
            p = pos + 3
            t0 = t1 = None
            try:
                if st is not None:
                    if p + psize > limit:
                        raise _Short
                    vals = st.unpack_from(buf, p)
                    p += psize
                    k = 1 if has_thread else 0
                    if has_cpu:
                        s0, ns0, s1, ns1 = vals[k:k + 4]
                        k += 4
                        full = cpu_off + s0 + cpu_base
                        if cpu_last is not None and full < cpu_last - _WRAP_SLACK:
                            cpu_base += 65536
                            full += 65536
                        full1 = cpu_off + s1 + cpu_base
                        if full1 < full - _WRAP_SLACK:
                            cpu_base += 65536
                            full1 += 65536
                        cpu_last = full1
                        t0 = full * 1_000_000_000 + ns0
                        t1 = full1 * 1_000_000_000 + ns1
                    if has_wall:
                        s0, ns0, s1, ns1 = vals[k:k + 4]
                        full = wall_off + s0 + wall_base
                        if wall_last is not None and full < wall_last - _WRAP_SLACK:
                            wall_base += 65536
                            full += 65536
                        full1 = wall_off + s1 + wall_base
                        if full1 < full - _WRAP_SLACK:
                            wall_base += 65536
                            full1 += 65536
                        wall_last = full1
                        t0 = full * 1_000_000_000 + ns0
                        t1 = full1 * 1_000_000_000 + ns1
                if mask & _PERF_BIT:
                    if p + 1 > limit:
                        raise _Short
                    p += 1 + 16 * buf[p]
                args, p = dec(rd, p, mask)
            except _Short:
                raise TraceError(f"{self.where(idx, pos)}: file truncated inside record {idx} "
                                 f"({_call(fid)}; file has {n} bytes)") from None
            except (_Bad, struct.error) as e:
                raise TraceError(f"{self.where(idx, pos)}: corrupt {_call(fid)} record ({e})") \
                    from None
            if p > limit:
                raise TraceError(f"{self.where(idx, pos)}: {_call(fid)} record runs past the "
                                 f"end of the record stream (byte offset {limit})")
            fids.append(fid)
            offsets.append(pos)
            t0s.append(t0)
            t1s.append(t1)
            args_l.append(args)
            pos = p
            idx += 1
        return DumpiRecords(fids, offsets, t0s, t1s, args_l)


def _fname(fid: int) -> str:
    if fid < ALL_FUNCTIONS:
        return DUMPI_FUNCTIONS[fid]
    return {FUNCTION_ENTER: "Function_enter", FUNCTION_EXIT: "Function_exit"}.get(fid, str(fid))


def _call(fid: int) -> str:
    """Name of a call for messages: MPI_Send, MPIO_Wait, DUMPI Function_enter."""
    n = _fname(fid)
    if fid >= ALL_FUNCTIONS:
        return f"DUMPI {n}"
    return n if n.startswith("MPIO_") else f"MPI_{n}"


def _open_rank(meta: DumpiMeta, rank: int) -> DumpiFile:
    path = meta.bin_path(rank)
    if not path.is_file():
        also = ""
        if meta.bin_prefix == meta.fileprefix and meta.path.stem != meta.fileprefix:
            also = f"; no {meta.path.stem}-NNNN.bin either"
        raise TraceError(f"{path}: rank {rank}: DUMPI trace file is missing (meta file {meta.path} "
                         f"lists {meta.numprocs} ranks{also}) (before record 0)")
    f = DumpiFile.__new__(DumpiFile)
    f.meta_version = meta.version  # type: ignore[attr-defined]  # read only to diagnose truncated files
    f.__init__(path, rank)  # type: ignore[misc]
    return f


def read_dumpi_footer_counts(meta_path: str | Path) -> list[dict[str, int]]:
    """Per rank, the footer's per-function call counts (read from the footers only, no records)."""
    meta = read_dumpi_meta(meta_path)
    return [_open_rank(meta, r).footer_counts() for r in range(meta.numprocs)]


# --------------------------------------------------------------------------------------------
# Communicators and groups (resolved across ranks before conversion)
# --------------------------------------------------------------------------------------------
UNSUPPORTED = -1   # gid of an intercommunicator or a communicator whose members are unknown


class _Comms:
    """Global communicator table: gid -> world-rank members; creation matching across ranks."""

    def __init__(self, nranks: int):
        self.nranks = nranks
        self.members: dict[int, list[int]] = {0: list(range(nranks))}
        self.names: dict[int, str] = {0: "MPI_COMM_WORLD"}
        self.cart: dict[int, tuple[tuple[int, ...], tuple[int, ...]]] = {}
        self.next_gid = 1
        self.by_key: dict[tuple, int] = {}
        self.self_gid: dict[int, int] = {}
        # set once communicator creations are resolved: rank r's MPI_COMM_SELF, first used in the
        # conversion, is self_base + r (an id that does not depend on the order ranks convert in)
        self.self_base: int | None = None

    def new(self, key: tuple, members: list[int], name: str) -> int:
        gid = self.by_key.get(key)
        if gid is None:
            gid = self.next_gid
            self.next_gid += 1
            self.by_key[key] = gid
            self.members[gid] = list(members)
            self.names[gid] = name
        return gid

    def self_comm(self, rank: int) -> int:
        gid = self.self_gid.get(rank)
        if gid is None:
            if self.self_base is None:
                gid = self.new(("self", rank), [rank], f"MPI_COMM_SELF[{rank}]")
            else:
                gid = self.self_base + rank
                self.members[gid] = [rank]
                self.names[gid] = f"MPI_COMM_SELF[{rank}]"
            self.self_gid[rank] = gid
        return gid


_COMM_FIDS = {FID[n] for n in (
    "Comm_group", "Group_incl", "Group_excl", "Group_range_incl", "Group_range_excl",
    "Group_union", "Group_intersection", "Group_difference", "Group_free", "Comm_dup",
    "Comm_create", "Comm_split", "Comm_free", "Cart_create", "Cart_sub", "Graph_create",
    "Intercomm_create", "Intercomm_merge", "Comm_accept", "Comm_connect", "Comm_get_parent",
    "Comm_join", "Comm_spawn", "Comm_spawn_multiple", "Comm_remote_group", "Win_get_group",
    "File_get_group")}


def _expand_ranges(ranges: tuple, size: int) -> list[int]:
    out = []
    for tr in ranges:
        if len(tr) != 3 or tr[2] == 0:
            raise ValueError(f"bad range {tr}")
        first, last, stride = tr
        r = first
        while (stride > 0 and r <= last) or (stride < 0 and r >= last):
            out.append(r)
            r += stride
            if len(out) > size:
                raise ValueError("range selects more ranks than the group has")
    return out


class _CommEvents:
    """The communicator and group records of one rank, as the Rust scan returns them: what
    ``_resolve_comms`` reads (fids, args, offsets by record index)."""

    def __init__(self, events: list[tuple]):
        self.comm_idx = [e[0] for e in events]
        self.offsets = {e[0]: e[1] for e in events}
        self.fids = {e[0]: e[2] for e in events}
        self.args = {e[0]: e[3] for e in events}


class _RankCommState:
    def __init__(self, rank: int, comms: _Comms):
        self.rank = rank
        self.local: dict[int, int] = {DUMPI_COMM_WORLD: 0}
        self.groups: dict[int, list[int] | None] = {DUMPI_GROUP_NULL: [], DUMPI_GROUP_EMPTY: []}
        self.seq: dict[int, int] = {}
        self.pos = 0
        self.pending: tuple | None = None   # registered split waiting for its peers
        self.comms = comms

    def gid(self, handle: int) -> int | None:
        """Global id of a local handle; None for COMM_NULL/unknown."""
        if handle == DUMPI_COMM_SELF and handle not in self.local:
            return self.comms.self_comm(self.rank)
        return self.local.get(handle)

    def next_key(self, parent: int) -> tuple[int, int]:
        n = self.seq.get(parent, 0)
        self.seq[parent] = n + 1
        return (parent, n)


def _resolve_comms(files: list[DumpiFile], recs: list[DumpiRecords] | list[_CommEvents], comms: _Comms
                   ) -> dict[tuple[int, int], int | None]:
    """Replay the communicator/group calls of all ranks, matching collective creations.

    Returns (rank, record index) -> gid of the new communicator (None: COMM_NULL, UNSUPPORTED)."""
    nranks = len(recs)
    created: dict[tuple[int, int], int | None] = {}
    events = [r.comm_idx if isinstance(r, _CommEvents) else
              [i for i, f in enumerate(r.fids) if f in _COMM_FIDS] for r in recs]
    states = [_RankCommState(r, comms) for r in range(nranks)]
    splits: dict[tuple, dict[int, tuple]] = {}   # key -> {world rank: (color, key, rec idx)}
    F = FID

    def fail(r: int, i: int, msg: str) -> TraceError:
        return TraceError(f"{files[r].where(i, recs[r].offsets[i])}: {msg}")

    def members_of(st: _RankCommState, handle: int) -> list[int] | None:
        g = st.gid(handle)
        if g is None or g == UNSUPPORTED:
            return None
        return comms.members[g]

    def step(r: int) -> bool:
        """Process the next event of rank r; False if it must wait for other ranks."""
        st = states[r]
        i = events[r][st.pos]
        fid = recs[r].fids[i]
        a = recs[r].args[i]
        g = st.groups
        try:
            if fid == F["Comm_group"]:
                g[a[1]] = members_of(st, a[0])
            elif fid in (F["Group_incl"], F["Group_excl"]):
                base = g.get(a[0])
                if base is None:
                    g[a[3]] = None
                else:
                    sel = a[2]
                    if any(x < 0 or x >= len(base) for x in sel):
                        raise fail(r, i, f"{_call(fid)}: rank list {list(sel)} outside the "
                                         f"group of {len(base)}")
                    if fid == F["Group_incl"]:
                        g[a[3]] = [base[x] for x in sel]
                    else:
                        drop = set(sel)
                        g[a[3]] = [w for k, w in enumerate(base) if k not in drop]
            elif fid in (F["Group_range_incl"], F["Group_range_excl"]):
                base = g.get(a[0])
                if base is None:
                    g[a[3]] = None
                else:
                    try:
                        sel = _expand_ranges(a[2], len(base))
                    except ValueError as e:
                        raise fail(r, i, f"{_call(fid)}: {e}") from None
                    if any(x < 0 or x >= len(base) for x in sel):
                        raise fail(r, i, f"{_call(fid)}: ranges select ranks outside the group")
                    if fid == F["Group_range_incl"]:
                        g[a[3]] = [base[x] for x in sel]
                    else:
                        drop = set(sel)
                        g[a[3]] = [w for k, w in enumerate(base) if k not in drop]
            elif fid in (F["Group_union"], F["Group_intersection"], F["Group_difference"]):
                g1, g2 = g.get(a[0]), g.get(a[1])
                if g1 is None or g2 is None:
                    g[a[2]] = None
                elif fid == F["Group_union"]:
                    s1 = set(g1)
                    g[a[2]] = list(g1) + [w for w in g2 if w not in s1]
                elif fid == F["Group_intersection"]:
                    s2 = set(g2)
                    g[a[2]] = [w for w in g1 if w in s2]
                else:
                    s2 = set(g2)
                    g[a[2]] = [w for w in g1 if w not in s2]
            elif fid == F["Group_free"]:
                if a[0] > DUMPI_GROUP_EMPTY:
                    g.pop(a[0], None)
            elif fid in (F["Comm_remote_group"], F["Win_get_group"], F["File_get_group"]):
                g[a[1]] = None
            elif fid == F["Comm_free"]:
                if a[0] > DUMPI_COMM_SELF:
                    st.local.pop(a[0], None)
            elif fid == F["Comm_dup"]:
                pg = st.gid(a[0])
                if pg is None:
                    raise fail(r, i, f"MPI_Comm_dup of unknown communicator handle {a[0]}")
                new_dup: int
                if pg == UNSUPPORTED:
                    new_dup = UNSUPPORTED
                else:
                    key = st.next_key(pg)
                    new_dup = comms.new(("dup",) + key, comms.members[pg], f"dup{key[1]}({comms.names[pg]})")
                    if pg in comms.cart:
                        comms.cart[new_dup] = comms.cart[pg]
                st.local[a[1]] = new_dup
                created[(r, i)] = new_dup
            elif fid == F["Comm_create"]:
                pg = st.gid(a[0])
                if pg is None:
                    raise fail(r, i, f"MPI_Comm_create on unknown communicator handle {a[0]}")
                new: int | None
                if pg == UNSUPPORTED:
                    new = UNSUPPORTED
                else:
                    key = st.next_key(pg)
                    mem = g.get(a[1])
                    if a[2] == DUMPI_COMM_NULL or (mem is not None and r not in mem):
                        new = None
                    elif mem is None:
                        new = UNSUPPORTED
                    else:
                        new = comms.new(("create",) + key + (tuple(mem),), mem,
                                        f"create{key[1]}({comms.names[pg]})")
                if new is not None:
                    st.local[a[2]] = new
                else:
                    st.local.pop(a[2], None)
                created[(r, i)] = new
            elif fid == F["Comm_split"]:
                parent_h, color, skey, newh = a
                if st.pending is None:
                    pg = st.gid(parent_h)
                    if pg is None:
                        raise fail(r, i, f"MPI_Comm_split of unknown communicator handle {parent_h}")
                    if pg == UNSUPPORTED:
                        st.local[newh] = UNSUPPORTED
                        created[(r, i)] = UNSUPPORTED
                        return True
                    skey_ = ("split",) + st.next_key(pg)
                    splits.setdefault(skey_, {})[r] = (color, skey, i)
                    st.pending = (skey_, pg)
                key, pg = st.pending
                contrib = splits[key]
                parent_members = comms.members[pg]
                if len(contrib) < len(parent_members):
                    return False
                if set(contrib) != set(parent_members):
                    raise fail(r, i, f"MPI_Comm_split on {comms.names[pg]}: ranks "
                                     f"{sorted(set(contrib) - set(parent_members))} are not members")
                color_s, _, _ = contrib[r]
                if color_s < 0:
                    new = None
                else:
                    order = {w: k for k, w in enumerate(parent_members)}
                    mem = sorted((w for w, c in contrib.items() if c[0] == color_s),
                                 key=lambda w: (contrib[w][1], order[w]))
                    new = comms.new(key + (color_s,), mem,
                                    f"split{key[2]}({comms.names[pg]},color={color_s})")
                if new is not None:
                    st.local[newh] = new
                else:
                    st.local.pop(newh, None)
                created[(r, i)] = new
                st.pending = None
            elif fid == F["Cart_create"]:
                oldh, ndim, dims, periods, reorder, newh = a
                pg = st.gid(oldh)
                if pg is None:
                    raise fail(r, i, f"MPI_Cart_create on unknown communicator handle {oldh}")
                if pg == UNSUPPORTED:
                    new = UNSUPPORTED
                else:
                    key = st.next_key(pg)
                    n = math.prod(dims) if dims else 1
                    pm = comms.members[pg]
                    if n > len(pm):
                        raise fail(r, i, f"MPI_Cart_create: grid {list(dims)} larger than "
                                         f"{comms.names[pg]} ({len(pm)} ranks)")
                    mem = pm[:n]
                    if r not in mem:
                        new = None
                    else:
                        new = comms.new(("cart",) + key, mem, f"cart{key[1]}({comms.names[pg]})")
                        comms.cart[new] = (tuple(dims), tuple(periods))
                if new is not None:
                    st.local[newh] = new
                else:
                    st.local.pop(newh, None)
                created[(r, i)] = new
            elif fid == F["Graph_create"]:
                _, oldh, nnodes, _, _, _, newh = a
                pg = st.gid(oldh)
                if pg is None:
                    raise fail(r, i, f"MPI_Graph_create on unknown communicator handle {oldh}")
                if pg == UNSUPPORTED:
                    new = UNSUPPORTED
                else:
                    key = st.next_key(pg)
                    mem = comms.members[pg][:nnodes]
                    new = (comms.new(("graph",) + key, mem, f"graph{key[1]}({comms.names[pg]})")
                           if r in mem else None)
                if new is not None:
                    st.local[newh] = new
                else:
                    st.local.pop(newh, None)
                created[(r, i)] = new
            elif fid == F["Cart_sub"]:
                ndim, oldh, remain, newh = a
                pg = st.gid(oldh)
                if pg is None:
                    raise fail(r, i, f"MPI_Cart_sub of unknown communicator handle {oldh}")
                if pg == UNSUPPORTED or pg not in comms.cart:
                    new = UNSUPPORTED
                else:
                    key = st.next_key(pg)
                    dims = comms.cart[pg][0]
                    pm = comms.members[pg]

                    def coords(k: int) -> list[int]:
                        c = []
                        for d in reversed(dims):
                            c.append(k % d)
                            k //= d
                        return c[::-1]
                    mine = coords(pm.index(r))
                    keep = [bool(x) for x in remain]
                    mem = [w for k, w in enumerate(pm)
                           if all(keep[d] or coords(k)[d] == mine[d] for d in range(len(dims)))]
                    new = comms.new(("sub",) + key + (tuple(mem),), mem,
                                    f"sub{key[1]}({comms.names[pg]})")
                    comms.cart[new] = (tuple(d for d, k in zip(dims, keep) if k),
                                       tuple(p for p, k in zip(comms.cart[pg][1], keep) if k))
                st.local[newh] = new
                created[(r, i)] = new
            else:  # intercommunicators, spawn/connect: members unknown
                newh = {F["Intercomm_create"]: 5, F["Intercomm_merge"]: 2, F["Comm_accept"]: 4,
                        F["Comm_connect"]: 4, F["Comm_get_parent"]: 0, F["Comm_join"]: 1,
                        F["Comm_spawn"]: 3, F["Comm_spawn_multiple"]: 4}[fid]
                h = a[newh]
                if h > DUMPI_COMM_SELF:
                    st.local[h] = UNSUPPORTED
                created[(r, i)] = UNSUPPORTED
        except TraceError:
            raise
        except (IndexError, KeyError, TypeError, ValueError) as e:
            raise fail(r, i, f"inconsistent {_call(fid)} record ({e!r})") from None
        return True

    progress = True
    while progress:
        progress = False
        for r in range(nranks):
            st = states[r]
            while st.pos < len(events[r]):
                if not step(r):
                    break
                st.pos += 1
                progress = True
    for r in range(nranks):
        st = states[r]
        if st.pos < len(events[r]):
            i = events[r][st.pos]
            key, pg = st.pending if st.pending else (None, None)
            have = sorted(splits.get(key, {})) if key else []
            raise fail(r, i, f"MPI_Comm_split on {comms.names.get(pg, pg)} has no matching call on "
                             f"every member rank (matched by ranks {have})")
    return created


# --------------------------------------------------------------------------------------------
# Datatypes
# --------------------------------------------------------------------------------------------
class _Types:
    """Per-rank datatype sizes: handle -> (size in bytes or None, contiguous)."""

    __slots__ = ("table", "derived", "unknown_uses")

    def __init__(self, table: tuple[int, ...]):
        self.table = table
        self.derived: dict[int, tuple[int | None, bool]] = {}
        self.unknown_uses = 0

    def get(self, dt: int) -> tuple[int | None, bool]:
        d = self.derived.get(dt)
        if d is not None:
            return d
        if dt < len(self.table):
            return self.table[dt], True
        if dt < DUMPI_FIRST_USER_DATATYPE:
            return _DEFAULT_TYPE_SIZES[dt], True
        return None, True

    def size(self, dt: int) -> int:
        s = self.get(dt)[0]
        if s is None:
            self.unknown_uses += 1
            return 0
        return s

    def nbytes(self, count: int, dt: int) -> int:
        if count <= 0:
            return 0
        return count * self.size(dt)

    def contig(self, dt: int) -> bool:
        return self.get(dt)[1]

    def define(self, fid: int, a: tuple) -> None:
        F = FID
        g = self.get
        if fid == F["Type_contiguous"]:
            count, old, new = a
            s, c = g(old)
            self.derived[new] = (None if s is None else count * s, c)
        elif fid in (F["Type_vector"], F["Type_hvector"], F["Type_create_hvector"]):
            count, bl, stride, old, new = a
            s, c = g(old)
            if fid == F["Type_vector"]:
                gapless = stride == bl
            else:
                gapless = s is not None and stride == bl * s
            self.derived[new] = (None if s is None else count * bl * s, c and (count <= 1 or gapless))
        elif fid in (F["Type_indexed"], F["Type_hindexed"], F["Type_create_hindexed"]):
            count, lens, displs, old, new = a
            s, c = g(old)
            if fid == F["Type_indexed"]:
                adj = all(displs[k + 1] == displs[k] + lens[k] for k in range(len(lens) - 1))
            else:
                adj = s is not None and all(displs[k + 1] == displs[k] + lens[k] * s
                                            for k in range(len(lens) - 1))
            self.derived[new] = (None if s is None else sum(lens) * s, c and adj)
        elif fid == F["Type_create_indexed_block"]:
            count, bl, displs, old, new = a
            s, c = g(old)
            adj = all(displs[k + 1] == displs[k] + bl for k in range(len(displs) - 1))
            self.derived[new] = (None if s is None else count * bl * s, c and adj)
        elif fid in (F["Type_struct"], F["Type_create_struct"]):
            count, lens, displs, types, new = a
            parts = [g(t) for t in types]
            if any(p[0] is None for p in parts):
                self.derived[new] = (None, False)
            else:
                size = sum(n * p[0] for n, p in zip(lens, parts))
                adj = displs is not None and all(displs[k + 1] == displs[k] + lens[k] * parts[k][0]
                                                 for k in range(len(lens) - 1))
                self.derived[new] = (size, adj and all(p[1] for p in parts))
        elif fid == F["Type_create_subarray"]:
            ndims, sizes, subsizes, starts, order, old, new = a
            s, c = g(old)
            total = math.prod(subsizes) if subsizes else 1
            # contiguous when, walking from the fastest dimension, all dims after the first
            # partial one are 1 (C order: last dim fastest; order 2 = Fortran: first fastest)
            dims = list(zip(sizes, subsizes))
            if order != 2:
                dims.reverse()
            contiguous, partial = True, False
            for full, sub in dims:
                if partial and sub != 1:
                    contiguous = False
                    break
                if sub != full:
                    partial = True
            self.derived[new] = (None if s is None else total * s, c and contiguous)
        elif fid == F["Type_create_darray"]:
            size_, rank_, ndims, gsizes, distribs, dargs, psizes, order, old, new = a
            s, _ = g(old)
            local = 1
            for gs, ps in zip(gsizes, psizes):
                local *= -(-gs // max(ps, 1))
            self.derived[new] = (None if s is None else local * s, all(p == 1 for p in psizes))
        elif fid == F["Type_create_resized"]:
            old, lb, extent, new = a
            s, c = g(old)
            self.derived[new] = (s, c and s is not None and extent == s)
        elif fid == F["Type_dup"]:
            old, new = a
            self.derived[new] = g(old)
        elif fid == F["Type_size"]:
            dt, size = a
            if dt >= DUMPI_FIRST_USER_DATATYPE or dt >= len(self.table):
                self.derived[dt] = (size, g(dt)[1])
        elif fid == F["Type_free"]:
            self.derived.pop(a[0], None)


_TYPE_FIDS = {FID[n] for n in (
    "Type_contiguous", "Type_vector", "Type_hvector", "Type_create_hvector", "Type_indexed",
    "Type_hindexed", "Type_create_hindexed", "Type_create_indexed_block", "Type_struct",
    "Type_create_struct", "Type_create_subarray", "Type_create_darray", "Type_create_resized",
    "Type_dup", "Type_size", "Type_free")}


# --------------------------------------------------------------------------------------------
# Conversion
# --------------------------------------------------------------------------------------------
# communicator-creating calls: a trace whose footers count none needs no resolution pass
_CREATE_FIDS = [FID[n] for n in (
    "Comm_dup", "Comm_create", "Comm_split", "Cart_create", "Cart_sub", "Graph_create",
    "Intercomm_create", "Intercomm_merge", "Comm_accept", "Comm_connect", "Comm_get_parent",
    "Comm_join", "Comm_spawn", "Comm_spawn_multiple")]
_NEEDS_RESOLUTION = "communicator creation found but not resolved"


def import_dumpi(meta_path: str | Path, out_path: str | Path, assume_buffers: str = "host",
                 progress: bool = False, strict: bool = False) -> dict:
    """Convert a DUMPI trace to a native trace file, streaming (the Rust decoder and converter of
    ``g2gsim._core``; memory: a file chunk and the conversion tables per rank, one row group).

    Same rows as :func:`read_dumpi` with ``engine="python"`` (the reference), the untraced
    stretch of a rank whose footer counts ignored calls included.  The point-to-point messages are
    matching-checked as they are written (the rules of ``rules.check_matching``, streaming: memory
    is the messages in flight, not the trace): problems are a warning, or with ``strict`` a
    ``TraceError`` (and no file).  Returns the conversion's statistics: ``records``, ``rows``,
    ``op_counts``, ``nranks``, ``source``, ``unmatched`` (the number of matching problems),
    ``peak_held_messages``."""
    if assume_buffers not in ("host", "device"):
        raise ValueError(f"assume_buffers must be 'host' or 'device', not {assume_buffers!r}")
    from .. import _core
    t_begin = time.perf_counter()
    meta = read_dumpi_meta(meta_path)
    nranks = meta.numprocs
    files: list[DumpiFile] = []
    for r in range(nranks):
        f = _open_rank(meta, r)
        f.close()
        files.append(f)
    if meta.prefix_note:
        warnings.warn(meta.prefix_note, DumpiImportNotice, stacklevel=2)
    specs = [f.stream_spec() for f in files]
    resolve = any(not f.has_footer or any(f.call_counts[k] for k in _CREATE_FIDS) for f in files)
    while True:
        try:
            st = _import_dumpi(meta, files, specs, out_path, assume_buffers, progress, resolve,
                               t_begin)
        except _core.TraceError as e:
            if not resolve and _NEEDS_RESOLUTION in str(e):
                resolve = True      # a footer did not count a communicator creation
                continue
            raise TraceError(str(e)) from None
        try:
            st["unmatched"] = _report_problems(meta.path, st, strict)
        except TraceError:
            Path(out_path).unlink(missing_ok=True)   # strict: no file of a rejected trace
            raise
        return st


def _problem_text(p: tuple, float_times: bool) -> str:
    """The message ``rules.check_matching`` gives for a problem the Rust matcher found (a tuple of
    ``_core.dumpi_convert``'s ``problems_first``); ``float_times``: a message row had no time, so
    the reference's time column is a float one (NaN for the missing times)."""
    def t(v: int | None):
        return (float("nan") if v is None else float(v)) if float_times else v
    kind = p[0]
    if kind == "invalid":
        side, rank, seq, tt, peer, comm = p[1:]
        return (f"{side} at rank {rank} (seq {seq}, t={t(tt)} ns): peer {peer} is not a rank of "
                f"communicator {comm}")
    if kind == "truncated":
        srank, rrank, comm, tag, sb, sseq, rb, rseq = p[1:]
        return (f"truncated message: rank {srank} -> rank {rrank} (comm {comm}, tag {tag}): {sb} bytes "
                f"sent (seq {sseq}) into a {rb}-byte receive (seq {rseq})")
    if kind == "send":
        rank, peer, comm, tag, nbytes, seq, tt = p[1:]
        return (f"unmatched send: rank {rank} -> peer {peer} (comm {comm}, tag {tag}, {nbytes} "
                f"bytes) at seq {seq}, t={t(tt)} ns")
    rank, peer, comm, tag, seq, tt = p[1:]
    return (f"unmatched receive: rank {rank} <- peer {peer} (comm {comm}, tag {tag}) at seq {seq}, "
            f"t={t(tt)} ns")


def _report_problems(source: str | Path, st: dict, strict: bool) -> int:
    """``rules.report_matching`` of the problems the converter's streaming matching check found
    (same count, order and messages as ``check_matching`` of the written rows): a warning naming
    ``source``, or with ``strict`` a ``TraceError``.  Returns the number of problems."""
    n = st.pop("problems_total")
    float_times = st.pop("msg_time_missing")
    first = [_problem_text(p, float_times) for p in st.pop("problems_first")]
    if n and strict:
        raise TraceError(f"{source}: {n} point-to-point matching problem(s): " + "; ".join(first[:10]))
    if n:
        more = f" (and {n - 5} more)" if n > 5 else ""
        warnings.warn(f"{source}: {n} point-to-point matching problem(s): " + "; ".join(first[:5])
                      + more, stacklevel=3)
    return n


def _import_dumpi(meta: DumpiMeta, files: list[DumpiFile], specs: list[tuple], out_path,
                  assume_buffers: str, progress: bool, resolve: bool, t_begin: float) -> dict:
    from .. import _core
    nranks = meta.numprocs
    # ranks whose footers count calls made while tracing was off: the longest gap between calls
    # is where they were made (found by a full first pass over those ranks)
    ignored = [sum(f.ignored_counts[:ALL_FUNCTIONS]) if f.has_footer else 0 for f in files]
    gaps = [n > 0 for n in ignored]
    scans = _core.dumpi_scan(specs, resolve, gaps)
    untraced_at = [s[3][0] if g and s[3] is not None else None for s, g in zip(scans, gaps)]
    gap_ns = [s[3][1] for s, g in zip(scans, gaps) if g and s[3] is not None]
    known = [s[0] for s in scans if s[0] is not None]
    origin = min(known) if known else 0
    comms = _Comms(nranks)
    created_l: list[list[tuple[int, int | None]]] = [[] for _ in range(nranks)]
    if resolve:
        created = _resolve_comms(files, [_CommEvents(s[2]) for s in scans], comms)
        for (r, i), g in sorted(created.items()):
            created_l[r].append((i, g))
    comms.self_base = comms.next_gid
    window_ops = auto_window_ops(nranks)
    versions = sorted({f.version for f in files})
    vtxt = ", ".join(".".join(map(str, v)) for v in versions)
    host = files[0].hostname if files else meta.hostname
    source = f"dumpi_reader: {meta.path} (DUMPI {vtxt}, host {host}, {nranks} ranks)"
    buffers = "assumed-host" if assume_buffers == "host" else "assumed-device"
    result: dict[str, Any] = {}

    def finish(stats: dict) -> list[tuple[str, str]]:
        ignored_note, _ = _check_footers(files, stats["fid_counts"])
        if ignored_note and gap_ns:
            tot = sum(gap_ns) * 1e-9
            ignored_note += (f"; the longest gap of each such rank is kept as an Untraced row "
                             f"({tot / len(gap_ns):.3f} s per rank on average; simulate skips it "
                             f"unless --window all)")
        for r, g in stats["self_gids"].items():
            if g not in comms.members:
                comms.members[g] = [r]
                comms.names[g] = f"MPI_COMM_SELF[{r}]"
        used = set(stats["used_comms"])
        clist = [{"id": 0, "name": "MPI_COMM_WORLD", "members": None}]
        for gid in sorted(comms.members):
            if gid == 0:
                continue
            if gid in used or not comms.names[gid].startswith("MPI_COMM_SELF"):
                clist.append({"id": gid, "name": comms.names[gid],
                              "members": list(comms.members[gid])})
        src = source
        if meta.prefix_note:
            src += f" [.bin files {meta.bin_prefix}-NNNN.bin, not fileprefix={meta.fileprefix}]"
        notes = _notes(ignored_note, stats["unknown_type_uses"], stats["orphan_requests"])
        if notes:
            warnings.warn(f"{meta.path}: " + "; ".join(notes), stacklevel=4)
            src += " [" + "; ".join(notes) + "]"
        result["source"] = src
        return [("g2gsim.format_version", "1"), ("g2gsim.nranks", str(nranks)),
                ("g2gsim.window_ops", str(window_ops)), ("g2gsim.comms", json.dumps(clist)),
                ("g2gsim.source", src), ("g2gsim.buffers", buffers)]

    def tick(records: int) -> None:
        print(f"dumpi: {records:,} records converted", file=sys.stderr)

    stats = _core.dumpi_convert(
        specs, created_l, str(out_path), origin, assume_buffers, window_ops,
        {g: list(m) for g, m in comms.members.items()}, dict(comms.names), dict(comms.self_gid),
        comms.self_base, resolve, finish, tick if progress else None, untraced_at)
    dt = time.perf_counter() - t_begin
    if progress:
        print(f"dumpi: {stats['records']:,} records -> {stats['rows']:,} rows in {dt:.3f} s "
              f"({stats['records'] / dt if dt > 0 else float('inf'):,.0f} records/s)",
              file=sys.stderr)
    stats.update(result, nranks=nranks, seconds=dt, path=str(out_path))
    del stats["fid_counts"]
    return stats


def _notes(ignored_note: str, unknown_type_uses: int, orphan_requests: int) -> list[str]:
    notes = []
    if ignored_note:
        notes.append(ignored_note)
    if unknown_type_uses:
        notes.append(f"{unknown_type_uses} message sizes used a datatype of unknown size "
                     f"(counted as 0 bytes)")
    if orphan_requests:
        notes.append(f"{orphan_requests} waited/tested requests were not created by a "
                     f"traced call (dropped from reqs)")
    return notes


def read_dumpi(meta_path: str | Path, assume_buffers: str = "host", progress: bool = False,
               strict: bool = False, engine: str = "rust") -> Trace:
    """Convert a DUMPI trace (the ``.meta`` file and its per-rank ``.bin`` files) to a Trace.

    ``assume_buffers``: ``"host"`` or ``"device"``, the ``mem_space`` given to every
    message-carrying row (DUMPI does not record where buffers live).  ``engine``: ``"rust"``
    (:func:`import_dumpi` into a temporary file, read back) or ``"python"``, the reference
    implementation this module keeps (same rows; a test asserts it on the corpus).  The
    point-to-point messages are matching-checked as the OTF2 reader's are
    (``rules.report_matching``, both engines): problems are a warning, or with ``strict`` a
    ``TraceError``."""
    if assume_buffers not in ("host", "device"):
        raise ValueError(f"assume_buffers must be 'host' or 'device', not {assume_buffers!r}")
    from ..trace import Trace, TraceBuilder
    from .rules import report_matching
    if engine == "rust":
        import tempfile
        with tempfile.TemporaryDirectory(prefix="g2gsim-dumpi-") as d:
            out = Path(d) / "trace.g2g.parquet"
            import_dumpi(meta_path, out, assume_buffers=assume_buffers, progress=progress,
                         strict=strict)
            tr = Trace.read(out)
            tr.table = tr.table.combine_chunks()
            tr.path = None
            return tr
    if engine != "python":
        raise ValueError(f"engine must be 'rust' or 'python', not {engine!r}")
    t_begin = time.perf_counter()
    meta = read_dumpi_meta(meta_path)
    if meta.prefix_note:
        warnings.warn(meta.prefix_note, DumpiImportNotice, stacklevel=2)
    nranks = meta.numprocs
    files: list[DumpiFile] = []
    recs: list[DumpiRecords] = []
    for r in range(nranks):
        f = _open_rank(meta, r)
        files.append(f)
        recs.append(f.records())
        if progress:
            print(f"dumpi: rank {r + 1}/{nranks}: {len(recs[-1].fids)} records from {f.path.name}",
                  file=sys.stderr)
    ignored_note, ignored = _check_footers(files, [_fid_counts(rr.fids) for rr in recs])
    # where tracing was off, the calls it ignored were made in a gap between records: the longest
    untraced_at = {r: _untraced_gap(recs[r]) for r, n in enumerate(ignored) if n > 0}
    comms = _Comms(nranks)
    created = _resolve_comms(files, recs, comms)
    comms.self_base = comms.next_gid

    # time origin: the earliest traced call of all ranks
    starts = [next((t for t in rr.t0 if t is not None), None) for rr in recs]
    known = [t for t in starts if t is not None]
    origin = min(known) if known else 0

    versions = sorted({f.version for f in files})
    vtxt = ", ".join(".".join(map(str, v)) for v in versions)
    host = files[0].hostname if files else meta.hostname
    b = TraceBuilder(nranks, source=f"dumpi_reader: {meta.path} (DUMPI {vtxt}, host {host}, "
                                    f"{nranks} ranks)",
                     buffers="assumed-host" if assume_buffers == "host" else "assumed-device")
    stats: dict[str, Any] = {"unknown_type_uses": 0, "orphan_requests": 0, "used_comms": set()}
    for r in range(nranks):
        _convert_rank(b, files[r], recs[r], r, comms, created, origin, assume_buffers, stats,
                      untraced_at=untraced_at.get(r))
        if progress:
            print(f"dumpi: rank {r + 1}/{nranks} converted", file=sys.stderr)
    used = stats["used_comms"]
    for gid in sorted(comms.members):
        if gid == 0:
            continue
        if gid in used or not comms.names[gid].startswith("MPI_COMM_SELF"):
            b.add_comm(gid, comms.names[gid], comms.members[gid])
    if meta.prefix_note:
        b.source += f" [.bin files {meta.bin_prefix}-NNNN.bin, not fileprefix={meta.fileprefix}]"
    if ignored_note:
        gaps = {r: g for r, g in untraced_at.items() if g is not None}
        if gaps:
            # a gap is found only between timed records: its end has a start time
            tot = sum((recs[r].t0[g] or 0) - _prev_end(recs[r], g) for r, g in gaps.items()) * 1e-9
            ignored_note += (f"; the longest gap of each such rank is kept as an Untraced row "
                             f"({tot / len(gaps):.3f} s per rank on average; simulate skips it unless "
                             f"--window all)")
    notes = _notes(ignored_note, stats["unknown_type_uses"], stats["orphan_requests"])
    if notes:
        warnings.warn(f"{meta.path}: " + "; ".join(notes), stacklevel=2)
        b.source += " [" + "; ".join(notes) + "]"
    trace = b.build()
    report_matching(trace, meta.path, strict=strict)
    if progress:
        nrec = sum(len(rr.fids) for rr in recs)
        dt = time.perf_counter() - t_begin
        print(f"dumpi: {nrec} records -> {len(b)} rows in {dt:.3f} s "
              f"({nrec / dt if dt > 0 else float('inf'):,.0f} records/s)", file=sys.stderr)
    return trace


def _fid_counts(fids: list[int]) -> list[int]:
    counts = [0] * N_FOOTER_SLOTS
    for fid in fids:
        if fid < ALL_FUNCTIONS:
            counts[fid] += 1
    return counts


def _prev_end(rr: DumpiRecords, i: int) -> int:
    """Latest end time of the records before record ``i``."""
    return max(t for t in rr.t1[:i] if t is not None)


def _untraced_gap(rr: DumpiRecords) -> int | None:
    """Index of the record that ends the longest gap between calls (where the calls made while
    tracing was off happened), or None without timestamps."""
    best, best_i, end = 0, None, None
    for i, (t0, t1) in enumerate(zip(rr.t0, rr.t1)):
        if t0 is None:
            continue
        if end is not None and t0 - end > best:
            best, best_i = t0 - end, i
        if t1 is not None:
            end = t1 if end is None or t1 > end else end
    return best_i


def _check_footers(files: list[DumpiFile], rank_counts: list[list[int]]) -> tuple[str, list[int]]:
    """The footer's call counts minus its ignored counts (calls made while tracing was off, e.g.
    after ``MPI_Pcontrol(0)``) must match the records.  Returns a one-line note on the ignored
    calls ("" when there are none) and the ignored calls of each rank."""
    ignored_total = 0
    ignored_ranks = 0
    per_rank: list[int] = []
    for f, counts in zip(files, rank_counts):
        if not f.has_footer:
            per_rank.append(0)
            continue
        diff = {DUMPI_FUNCTIONS[i]: (f.call_counts[i] - f.ignored_counts[i], counts[i])
                for i in range(ALL_FUNCTIONS)
                if f.call_counts[i] - f.ignored_counts[i] != counts[i]}
        if diff:
            warnings.warn(f"{f.where()}: footer call counts (less ignored calls) differ from the "
                          f"records (function: footer, records): {diff}", stacklevel=3)
        ign = sum(f.ignored_counts[:ALL_FUNCTIONS])
        per_rank.append(ign)
        if ign:
            ignored_total += ign
            ignored_ranks += 1
    if not ignored_total:
        return "", per_rank
    return (f"{ignored_total} MPI calls on {ignored_ranks} ranks were made while DUMPI tracing was "
            f"off (footers' ignored counts) and are not in the trace", per_rank)


_REQ_CREATE = {FID[n]: op for n, op in (("Isend", "Isend"), ("Ibsend", "Isend"),
                                          ("Irsend", "Isend"), ("Issend", "Issend"),
                                          ("Irecv", "Irecv"))}
_PERSIST_CREATE = {FID[n]: op for n, op in (("Send_init", "Isend"), ("Bsend_init", "Isend"),
                                              ("Rsend_init", "Isend"), ("Ssend_init", "Issend"),
                                              ("Recv_init", "Irecv"))}
_BLOCKING_SEND = {FID[n]: n for n in sorted(BLOCKING_SEND_OPS)}   # MPI's names are the trace's


def _convert_rank(b: TraceBuilder, f: DumpiFile, rr: DumpiRecords, rank: int, comms: _Comms,
                  created: dict, origin: int, mem: str, stats: dict, untraced_at: int | None = None) -> None:
    from .rules import Requests, completion, compute_gap, dest_peer, source_peer
    F = FID
    types = _Types(f.type_sizes)
    local: dict[int, int] = {DUMPI_COMM_WORLD: 0}
    requests = Requests(DUMPI_REQUEST_NULL)   # DUMPI request handle -> our request id (in flight)
    persistent: dict[int, tuple] = {}    # DUMPI request -> (op, kw) of a *_init call
    prev_end: int | None = None
    add = b.add
    used_comms: set[int] = set()        # communicators this rank was checked to be in
    fids, args_l, t0s, t1s, offs = rr.fids, rr.args, rr.t0, rr.t1, rr.offsets

    def fail(i: int, msg: str) -> TraceError:
        return TraceError(f"{f.where(i, offs[i])}: {msg}")

    def comm_of(i: int, h: int) -> tuple[int, int]:
        """(gid, size) of a communicator handle used by record i."""
        g: int | None
        if h == DUMPI_COMM_SELF and h not in local:
            g = comms.self_comm(rank)
        else:
            g = local.get(h)
        if g is None:
            what = "MPI_COMM_NULL" if h == DUMPI_COMM_NULL else f"unknown communicator handle {h}"
            raise fail(i, f"{_call(fids[i])} on {what}")
        if g == UNSUPPORTED:
            raise fail(i, f"{_call(fids[i])} on an intercommunicator or a communicator "
                          f"whose members are not in the trace (handle {h}); not supported")
        if g not in used_comms:
            if rank not in comms.members[g]:
                raise fail(i, f"{_call(fids[i])} on {comms.names[g]} (handle {h}), which rank "
                              f"{rank} is not a member of")
            used_comms.add(g)
        return g, len(comms.members[g])

    def my_rank_in(g: int) -> int:
        return comms.members[g].index(rank)

    def check_root(i: int, root: int, size: int) -> int:
        if not 0 <= root < size:
            raise fail(i, f"{_call(fids[i])}: root {root} outside communicator of {size}")
        return root

    # the readers' shared rules (rules.py): peers, requests, compute gaps, completions
    def peer_dest(i: int, d: int, size: int) -> int:
        return dest_peer(d, size, f"{f.where(i, offs[i])}: {_call(fids[i])}")

    def peer_src(i: int, s: int, size: int, status) -> int:
        # MPICH's MPI_PROC_NULL is -1 like DUMPI's wildcard: the status tells them apart
        return source_peer(s, size, f"{f.where(i, offs[i])}: {_call(fids[i])}", DUMPI_ANY_SOURCE,
                           status[0][1] if status else None)

    new_req = requests.new

    def take(dreq: int) -> int | None:
        """Complete DUMPI request dreq: our id, or None when it is null/unknown."""
        return requests.take(dreq, persistent)

    def peek(dreqs) -> list[int]:
        return requests.peek(dreqs, persistent)

    untraced = [untraced_at]

    def emit(i: int, op: str, **kw) -> None:
        nonlocal prev_end
        t0, t1 = t0s[i], t1s[i]
        if t0 is not None:
            gap = compute_gap(prev_end, t0)
            if gap is not None and prev_end is not None:
                # the gap in which tracing was off (the first emitted record at or after the one
                # that ends it): an Untraced stretch, not Compute
                un = untraced[0] is not None and i >= untraced[0]
                if un:
                    untraced[0] = None
                add(rank, "Untraced" if un else "Compute", dur_ns=gap, t_start_ns=prev_end - origin,
                    t_end_ns=t0 - origin)
            assert t1 is not None                  # a record has both times or neither
            kw["t_start_ns"] = t0 - origin
            kw["t_end_ns"] = t1 - origin
            prev_end = t1 if prev_end is None or (t1 is not None and t1 > prev_end) else prev_end
        add(rank, op, **kw)

    def emit_completion(i: int, qs: list[int], call: str, looked_at=()) -> None:
        op, kw = completion(qs, call, looked_at)
        emit(i, op, **kw)

    kw: dict[str, Any]
    for i, fid in enumerate(fids):
        a = args_l[i]
        if fid in _REQ_CREATE:           # count, type, peer, tag, comm, request
            count, dt, peer, tag, ch, dreq = a
            g, size = comm_of(i, ch)
            op = _REQ_CREATE[fid]
            if op == "Irecv":
                emit(i, op, peer=peer_src(i, peer, size, None), tag=tag, comm_id=g,
                     recv_bytes=types.nbytes(count, dt), req=new_req(dreq), mem_space=mem,
                     contiguous=types.contig(dt))
            else:
                emit(i, op, peer=peer_dest(i, peer, size), tag=tag, comm_id=g,
                     bytes=types.nbytes(count, dt), req=new_req(dreq), mem_space=mem,
                     contiguous=types.contig(dt))
        elif fid == F["Wait"]:
            q = take(a[0])
            emit(i, "Wait", req=q or 0)
        elif fid == F["Waitall"]:
            qs = [q for q in (take(d) for d in a[1]) if q is not None]
            emit(i, "Waitall", reqs=qs)
        elif fid in _BLOCKING_SEND:
            count, dt, peer, tag, ch = a
            g, size = comm_of(i, ch)
            emit(i, _BLOCKING_SEND[fid], peer=peer_dest(i, peer, size), tag=tag, comm_id=g,
                 bytes=types.nbytes(count, dt), mem_space=mem, contiguous=types.contig(dt))
        elif fid == F["Recv"]:
            count, dt, src, tag, ch, status = a
            g, size = comm_of(i, ch)
            emit(i, "Recv", peer=peer_src(i, src, size, status), tag=tag, comm_id=g,
                 recv_bytes=types.nbytes(count, dt), mem_space=mem, contiguous=types.contig(dt))
        elif fid == F["Sendrecv"]:
            scount, stype, dest, stag, rcount, rtype, src, rtag, ch, status = a
            g, size = comm_of(i, ch)
            emit(i, "Sendrecv", peer=peer_dest(i, dest, size), tag=stag, comm_id=g,
                 bytes=types.nbytes(scount, stype), recv_bytes=types.nbytes(rcount, rtype),
                 recv_peer=peer_src(i, src, size, status), recv_tag=rtag, mem_space=mem,
                 contiguous=types.contig(stype) and types.contig(rtype))
        elif fid == F["Sendrecv_replace"]:
            count, dt, dest, stag, src, rtag, ch, status = a
            g, size = comm_of(i, ch)
            n = types.nbytes(count, dt)
            emit(i, "Sendrecv", peer=peer_dest(i, dest, size), tag=stag, comm_id=g, bytes=n,
                 recv_bytes=n, recv_peer=peer_src(i, src, size, status), recv_tag=rtag,
                 mem_space=mem, contiguous=types.contig(dt))
        # a call that completed one request is a Wait on it (0 when the handle was null or
        # unknown: the call still waited), several a Waitall; one that completed nothing keeps its
        # name with the requests it looked at (rules.completion)
        elif fid == F["Waitany"]:
            count, reqs, index, status = a
            if 0 <= index < len(reqs):
                emit(i, "Wait", req=take(reqs[index]) or 0)
            else:
                emit_completion(i, [], "Waitany", peek(reqs))
        elif fid == F["Waitsome"]:
            count, reqs, outcount, indices, status = a
            done = [reqs[k] for k in indices if 0 <= k < len(reqs)] if outcount > 0 else []
            if done:
                emit_completion(i, [q for q in (take(d) for d in done) if q is not None], "Waitall")
            else:
                emit_completion(i, [], "Waitsome", peek(reqs))
        elif fid == F["Test"]:
            dreq, flag, status = a
            if flag:
                emit(i, "Wait", req=take(dreq) or 0)
            else:
                emit_completion(i, [], "Test", peek([dreq]))
        elif fid == F["Testany"]:
            count, reqs, index, flag, status = a
            if flag and 0 <= index < len(reqs):
                emit(i, "Wait", req=take(reqs[index]) or 0)
            else:
                emit_completion(i, [], "Testany", peek(reqs))
        elif fid == F["Testall"]:
            count, reqs, flag, status = a
            if flag:
                emit(i, "Waitall", reqs=[q for q in (take(d) for d in reqs) if q is not None])
            else:
                emit_completion(i, [], "Testall", peek(reqs))
        elif fid == F["Testsome"]:
            count, reqs, outcount, indices, status = a
            done = [reqs[k] for k in indices if 0 <= k < len(reqs)] if outcount > 0 else []
            if done:
                emit_completion(i, [q for q in (take(d) for d in done) if q is not None], "Waitall")
            else:
                emit_completion(i, [], "Testsome", peek(reqs))
        elif fid in _PERSIST_CREATE:
            count, dt, peer, tag, ch, dreq = a
            g, size = comm_of(i, ch)
            op = _PERSIST_CREATE[fid]
            if op == "Irecv":
                kw = dict(peer=peer_src(i, peer, size, None), tag=tag, comm_id=g,
                          recv_bytes=types.nbytes(count, dt), mem_space=mem,
                          contiguous=types.contig(dt))
            else:
                kw = dict(peer=peer_dest(i, peer, size), tag=tag, comm_id=g,
                          bytes=types.nbytes(count, dt), mem_space=mem, contiguous=types.contig(dt))
            persistent[dreq] = (op, kw)
        elif fid in (F["Start"], F["Startall"]):
            dreqs = (a[0],) if fid == F["Start"] else a[1]
            for d in dreqs:
                if d not in persistent:
                    raise fail(i, f"{_call(fid)} of request {d} that no *_init call created")
            for d in dreqs:
                op, kw = persistent[d]
                emit(i, op, req=new_req(d), **kw)
        elif fid == F["Request_free"]:
            persistent.pop(a[0], None)
            requests.drop(a[0])
        elif fid == F["Barrier"]:
            g, _ = comm_of(i, a[0])
            emit(i, "Barrier", comm_id=g)
        elif fid == F["Bcast"]:
            count, dt, root, ch = a
            g, size = comm_of(i, ch)
            emit(i, "Bcast", comm_id=g, bytes=types.nbytes(count, dt),
                 root=check_root(i, root, size), mem_space=mem, contiguous=types.contig(dt))
        elif fid == F["Reduce"]:
            count, dt, op_, root, ch = a
            g, size = comm_of(i, ch)
            check_root(i, root, size)
            emit(i, "Reduce", comm_id=g, bytes=types.nbytes(count, dt), recv_bytes=(
                types.nbytes(count, dt) if my_rank_in(g) == root else 0), root=root,
                mem_space=mem, contiguous=types.contig(dt))
        elif fid in (F["Allreduce"], F["Scan"], F["Exscan"]):
            count, dt, op_, ch = a
            g, size = comm_of(i, ch)
            n = types.nbytes(count, dt)
            emit(i, _fname(fid), comm_id=g, bytes=n, recv_bytes=n, mem_space=mem,
                 contiguous=types.contig(dt))
        elif fid == F["Gather"]:
            commrank, scount, stype, root, ch, rcount, rtype = a
            g, size = comm_of(i, ch)
            check_root(i, root, size)
            rb = types.nbytes(rcount, rtype) * size if commrank == root else 0
            emit(i, "Gather", comm_id=g, bytes=types.nbytes(scount, stype), recv_bytes=rb,
                 root=root, mem_space=mem, contiguous=types.contig(stype) and (
                     commrank != root or types.contig(rtype)))
        elif fid == F["Gatherv"]:
            commrank, commsize, scount, stype, root, ch, rcounts, rtype = a
            g, size = comm_of(i, ch)
            check_root(i, root, size)
            kw = {}
            if commrank == root and rcounts is not None:
                per = [types.nbytes(c, rtype) for c in rcounts]
                kw = dict(recv_counts_bytes=per, recv_bytes=sum(per))
            emit(i, "Gatherv", comm_id=g, bytes=types.nbytes(scount, stype), root=root,
                 mem_space=mem, contiguous=types.contig(stype) and types.contig(rtype), **kw)
        elif fid == F["Scatter"]:
            commrank, rcount, rtype, root, ch, scount, stype = a
            g, size = comm_of(i, ch)
            check_root(i, root, size)
            sb = types.nbytes(scount, stype) * size if commrank == root else 0
            emit(i, "Scatter", comm_id=g, bytes=sb, recv_bytes=types.nbytes(rcount, rtype),
                 root=root, mem_space=mem, contiguous=types.contig(rtype) and (
                     commrank != root or types.contig(stype)))
        elif fid == F["Scatterv"]:
            commrank, commsize, stype, rcount, rtype, root, ch, scounts = a
            g, size = comm_of(i, ch)
            check_root(i, root, size)
            kw = {}
            if commrank == root and scounts is not None:
                per = [types.nbytes(c, stype) for c in scounts]
                kw = dict(counts_bytes=per, bytes=sum(per))
            emit(i, "Scatterv", comm_id=g, recv_bytes=types.nbytes(rcount, rtype), root=root,
                 mem_space=mem, contiguous=types.contig(stype) and types.contig(rtype), **kw)
        elif fid == F["Allgather"]:
            scount, stype, rcount, rtype, ch = a
            g, size = comm_of(i, ch)
            emit(i, "Allgather", comm_id=g, bytes=types.nbytes(scount, stype),
                 recv_bytes=types.nbytes(rcount, rtype) * size, mem_space=mem,
                 contiguous=types.contig(stype) and types.contig(rtype))
        elif fid == F["Allgatherv"]:
            commsize, scount, stype, rcounts, displs, rtype, ch = a
            g, size = comm_of(i, ch)
            per = [types.nbytes(c, rtype) for c in rcounts]
            emit(i, "Allgatherv", comm_id=g, bytes=types.nbytes(scount, stype),
                 recv_counts_bytes=per, recv_bytes=sum(per), mem_space=mem,
                 contiguous=types.contig(stype) and types.contig(rtype))
        elif fid == F["Alltoall"]:
            scount, stype, rcount, rtype, ch = a
            g, size = comm_of(i, ch)
            emit(i, "Alltoall", comm_id=g, bytes=types.nbytes(scount, stype) * size,
                 recv_bytes=types.nbytes(rcount, rtype) * size, mem_space=mem,
                 contiguous=types.contig(stype) and types.contig(rtype))
        elif fid == F["Alltoallv"]:
            commsize, scounts, sdispls, stype, rcounts, rdispls, rtype, ch = a
            g, size = comm_of(i, ch)
            sp = [types.nbytes(c, stype) for c in scounts]
            rp = [types.nbytes(c, rtype) for c in rcounts]
            emit(i, "Alltoallv", comm_id=g, counts_bytes=sp, recv_counts_bytes=rp, bytes=sum(sp),
                 recv_bytes=sum(rp), mem_space=mem,
                 contiguous=types.contig(stype) and types.contig(rtype))
        elif fid == F["Alltoallw"]:
            commsize, scounts, sdispls, stypes, rcounts, rdispls, rtypes, ch = a
            g, size = comm_of(i, ch)
            sp = [types.nbytes(c, t) for c, t in zip(scounts, stypes)]
            rp = [types.nbytes(c, t) for c, t in zip(rcounts, rtypes)]
            emit(i, "Alltoallv", comm_id=g, counts_bytes=sp, recv_counts_bytes=rp, bytes=sum(sp),
                 recv_bytes=sum(rp), mem_space=mem,
                 contiguous=all(types.contig(t) for t in stypes + rtypes))
        elif fid == F["Reduce_scatter"]:
            commsize, rcounts, dt, op_, ch = a
            g, size = comm_of(i, ch)
            per = [types.nbytes(c, dt) for c in rcounts]
            me = my_rank_in(g)
            emit(i, "Reduce_scatter", comm_id=g, bytes=sum(per), recv_counts_bytes=per,
                 recv_bytes=per[me] if me < len(per) else 0, mem_space=mem,
                 contiguous=types.contig(dt))
        elif fid in (F["Init"], F["Init_thread"]):
            emit(i, "Init")
        elif fid == F["Finalize"]:
            emit(i, "Finalize")
        elif fid in _TYPE_FIDS:
            try:
                types.define(fid, a)
            except (TypeError, ValueError, IndexError) as e:
                raise fail(i, f"inconsistent {_call(fid)} record ({e!r})") from None
        elif fid in _COMM_FIDS:
            key = (rank, i)
            if key in created:
                newh = _NEW_HANDLE_ARG[fid]
                h = a[newh]
                g = created[key]
                if h <= DUMPI_COMM_SELF:
                    pass
                elif g is None:
                    local.pop(h, None)
                else:
                    local[h] = g
            elif fid == F["Comm_free"] and a[0] > DUMPI_COMM_SELF:
                local.pop(a[0], None)
        # every other call (Comm_rank, Wtime, Probe, MPI-IO, RMA, ...) is skipped; its time
        # becomes part of the next Compute row
    stats["unknown_type_uses"] += types.unknown_uses
    stats["orphan_requests"] += requests.orphans
    stats["used_comms"] |= used_comms


# which argument of a communicator-creating call is the new handle
_NEW_HANDLE_ARG = {FID[n]: k for n, k in (
    ("Comm_dup", 1), ("Comm_create", 2), ("Comm_split", 3), ("Cart_create", 5), ("Cart_sub", 3),
    ("Graph_create", 6), ("Intercomm_create", 5), ("Intercomm_merge", 2), ("Comm_accept", 4),
    ("Comm_connect", 4), ("Comm_get_parent", 0), ("Comm_join", 1), ("Comm_spawn", 3),
    ("Comm_spawn_multiple", 4))}

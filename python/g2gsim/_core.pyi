"""Typed stubs of the compiled core (crates/g2g-py/src/lib.rs).  Private: use g2gsim.simulate, the
CLI, g2gsim.units (sizes, durations, bandwidths) and g2gsim.vocab (names the core defines)."""
from collections.abc import Callable
from typing import Any

class TraceError(ValueError): ...
class MachineError(ValueError): ...
class DeadlockError(RuntimeError): ...

def simulate(trace_path: str, machine_toml: str, machine_file: str, options: dict[str, Any] | None = None,
             progress: Callable[[int, int], None] | None = None) -> str:
    """The JSON report; raises TraceError, MachineError, DeadlockError, ValueError (options) or
    KeyboardInterrupt, or what ``progress`` raised (it is called every 65,536 events, with Python's
    lock taken; the simulation itself runs without it, so other threads run meanwhile)."""
def machine_check(machine_toml: str, machine_file: str, nodes: int = 2) -> str:
    """JSON summary of the parsed and built machine."""
def machine_validate(machine_toml: str, machine_file: str) -> list[str]:
    """Every error of the machine file (key and line each); empty when valid."""
def models() -> list[tuple[str, str, list[str]]]:
    """(name, summary, parameters) of each data-path model."""
def coll_algorithms() -> list[tuple[str, list[str]]]:
    """(collective, algorithm names) of each collective."""
def trace_meta(path: str) -> tuple[int, int, str, str]:
    """(ranks, rows, source, buffers) of a native trace."""
# (bin path, rank, body offset, END_OF_STREAM offset, version, datatype sizes) of one DUMPI rank file
_DumpiRank = tuple[str, int, int, int, tuple[int, int, int], list[int]]
def dumpi_scan(ranks: list[_DumpiRank], full: bool, gaps: list[bool] | None = None
               ) -> list[tuple[int | None, int, list[tuple[int, int, int, tuple]], tuple[int, int] | None]]:
    """Per rank: (first call time ns or None, records decoded, [(record index, byte offset,
    function id, args)] of its communicator/group calls, (record index, ns) of the longest gap
    between calls or None); without ``full`` only the first timed record is decoded, but for the
    ranks whose ``gaps`` entry is true."""
def dumpi_convert(ranks: list[_DumpiRank], created: list[list[tuple[int, int | None]]], out_path: str,
                  origin: int, mem_space: str, window_ops: int, members: dict[int, list[int]],
                  names: dict[int, str], self_gids: dict[int, int], self_base: int, resolved: bool,
                  finish: Callable[[dict[str, Any]], list[tuple[str, str]]],
                  progress: Callable[[int], None] | None = None,
                  untraced_at: list[int | None] | None = None) -> dict[str, Any]:
    """Converts every rank's records to native rows written to out_path a window at a time,
    matching-checking their point-to-point messages as they are written; ``finish(stats)``
    returns the file's [(key, value)] metadata, written before it is closed; ``untraced_at``: per
    rank, the record ending its untraced stretch.  The stats dict (``problems_total``,
    ``problems_first``, ``msg_time_missing``, ``peak_held_messages`` among its keys)."""
def parse_size(text: str) -> int:
    """Bytes: "64KiB" = 65536, "64KB" = "64K" = 64000, "4096"; ValueError naming the text."""
def parse_duration_ns(text: str) -> float:
    """Nanoseconds: "1.2us" = 1200.0; a unit (ns, us, ms, s) is required."""
def parse_bandwidth(text: str) -> float:
    """Bytes per second: "25GB/s", "100Gb/s" (bits), "1GiB/s"."""
def vocabulary() -> str:
    """JSON: ops [[name, [classes]]], op_classes, collectives, modes, sharing, mem_spaces,
    copy_kinds, size_classes [[key, max_bytes | null]], columns [{name, type, required, default,
    replayed, doc}], any_source, proc_null, any_tag (read by g2gsim/vocab.py)."""

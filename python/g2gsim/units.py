"""Sizes, durations and bandwidths written with units: one rule everywhere, the core's
(``crates/g2g-net/src/units.rs``, the parser of machine files), for command lines, generator
parameters, calibration and exports alike.

* sizes: ``K``/``KB``, ``M``/``MB``, ... are powers of 1000; ``KiB``, ``MiB``, ... powers of 1024;
  no unit: bytes (``"64KiB"`` = 65536, ``"64KB"`` = ``"64K"`` = 64000, ``"1e3"`` = 1000);
* durations: ``ns``, ``us`` (or ``µs``), ``ms``, ``s``; a unit is required;
* bandwidths: a size unit per second, ``B`` bytes or ``b`` bits (``"25GB/s"``, ``"100Gb/s"``).

Each parser takes a string (or, for sizes, an integer already in bytes) and raises ``ValueError``
with a message naming the text.
"""
from __future__ import annotations

from . import _core

__all__ = ["parse_size", "parse_duration_ns", "parse_duration_s", "parse_bandwidth"]


def parse_size(value: str | int) -> int:
    """Bytes of ``value``: an integer, or a string such as ``"64KiB"``, ``"1MB"``, ``"4096"``."""
    if isinstance(value, bool):
        raise ValueError(f"size {value!r} is not a number of bytes")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"size {value!r} must be zero or positive")
        return value
    return _core.parse_size(str(value))


def parse_duration_ns(value: str) -> float:
    """Nanoseconds of ``value`` (``"1.2us"`` -> 1200.0); may be fractional (``"0.07ns"``)."""
    return _core.parse_duration_ns(str(value))


def parse_duration_s(value: str) -> float:
    """Seconds of ``value`` (``"1.2us"`` -> 1.2e-6)."""
    return parse_duration_ns(value) / 1e9


def parse_bandwidth(value: str) -> float:
    """Bytes per second of ``value`` (``"100Gb/s"`` -> 12.5e9)."""
    return _core.parse_bandwidth(str(value))

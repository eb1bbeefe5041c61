"""Typed, introspectable generator parameters (one dataclass per workload)."""
from __future__ import annotations

import dataclasses
import re
import typing
from dataclasses import dataclass, field
from typing import Any

from ..units import parse_size


class Param(tuple):
    """``(name, type, default, help)``; also ``.name .type .default .help .choices``."""

    choices: tuple | None

    def __new__(cls, name: str, type_: Any, default: Any, help_: str, choices: tuple | None = None):
        self = tuple.__new__(cls, (name, type_, default, help_))
        self.choices = choices
        return self

    name = property(lambda self: self[0])
    type = property(lambda self: self[1])
    default = property(lambda self: self[2])
    help = property(lambda self: self[3])

    def __reduce__(self):
        return (Param, (self[0], self[1], self[2], self[3], self.choices))


def P(default: Any, help: str, choices: tuple | None = None):  # noqa: A002 - mirrors click
    """A parameter field with help text (and optional choices)."""
    md = {"help": help, "choices": choices}
    if isinstance(default, list):
        items = tuple(default)
        return field(default_factory=lambda: list(items), metadata=md)
    return field(default=default, metadata=md)


@dataclass
class CommonParams:
    """Parameters every workload has (listed after the workload's own)."""
    buffers: str = P("device", "mem_space of message buffers: 'device' (GPU-aware MPI) or 'host'",
                     choices=("device", "host"))
    staged: bool = P(False, "HostCopy style (needs buffers=host): explicit Memcpy d2h before each send "
                            "and h2d after each receive, stream -1")
    jitter: float = P(0.0, "relative random perturbation of every Compute duration, uniform in "
                           "[1-jitter, 1+jitter]")
    seed: int = P(0, "seed of the jitter random numbers (same seed and arguments: identical trace)")


def _base_type(t: Any) -> tuple[Any, bool]:
    """(type without Optional, optional?)"""
    if typing.get_origin(t) in (typing.Union, getattr(__import__("types"), "UnionType", typing.Union)):
        args = [a for a in typing.get_args(t) if a is not type(None)]
        if len(args) == 1:
            return args[0], True
    return t, False


def param_list(cls: type) -> list[Param]:
    """The workload's own fields first, then the common ones, in declaration order."""
    hints = typing.get_type_hints(cls)
    common_names = {f.name for f in dataclasses.fields(CommonParams)}
    mine = list(getattr(cls, "__annotations__", {}))
    out = []
    for f in dataclasses.fields(cls):
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[operator]  # (MISSING only when default is set)
        t, _ = _base_type(hints[f.name])
        p = Param(f.name, t, default, f.metadata.get("help", ""), f.metadata.get("choices"))
        rank = 2 if f.name in common_names else (0 if f.name in mine else 1)
        key = mine.index(f.name) if rank == 0 else 0
        out.append(((rank, key), p))
    out.sort(key=lambda kp: kp[0])  # stable: inherited fields keep their order
    return [p for _, p in out]


def parse_int(v: Any, name: str) -> int:
    if isinstance(v, bool):
        raise ValueError(f"{name}: expected an integer, got {v!r}")
    if isinstance(v, (int,)):
        return int(v)
    if isinstance(v, float):
        if v != int(v):
            raise ValueError(f"{name}: expected an integer, got {v!r}")
        return int(v)
    s = str(v).strip().replace("_", "")
    if re.fullmatch(r"[0-9]*\.?[0-9]+(?:e[0-9]+)?", s):
        x = float(s)
        if x != int(x):
            raise ValueError(f"{name}: {v!r} is not a whole number")
        return int(s) if s.isdigit() else int(x)
    try:
        return parse_size(s)          # with a unit: the rule of machine files (g2gsim.units)
    except ValueError as e:
        raise ValueError(f"{name}: expected an integer, or a size such as 64KiB (= 65536) or "
                         f"64KB (= 64000): {e}") from None


def parse_bool(v: Any, name: str) -> bool:
    if isinstance(v, bool):
        return v
    s = str(v).strip().lower()
    if s in ("1", "true", "yes", "y", "on"):
        return True
    if s in ("0", "false", "no", "n", "off"):
        return False
    raise ValueError(f"{name}: expected true/false, got {v!r}")


def coerce(p: Param, v: Any) -> Any:
    """Convert a CLI string (or a Python value) to the parameter's type, checking choices."""
    t = p.type
    name = p.name
    if v is None:
        if p.default is None:
            return None
        raise ValueError(f"{name}: a value is required")
    if t is bool:
        out: Any = parse_bool(v, name)
    elif t is int:
        out = parse_int(v, name)
    elif t is float:
        try:
            out = float(v)
        except (TypeError, ValueError):
            raise ValueError(f"{name}: expected a number, got {v!r}") from None
    elif t is str:
        out = str(v)
    elif typing.get_origin(t) in (list, tuple):
        items = v.split(",") if isinstance(v, str) else list(v)
        items = [i for i in items if not (isinstance(i, str) and not i.strip())]
        out = [parse_int(i, name) for i in items]
        if not out:
            raise ValueError(f"{name}: needs at least one value")
    else:  # pragma: no cover - all declared types are covered above
        out = v
    if p.choices is not None and out not in p.choices:
        raise ValueError(f"{name}: {out!r} is not one of {', '.join(map(str, p.choices))}")
    return out


def fmt_value(v: Any) -> str:
    if isinstance(v, (list, tuple)):
        return ",".join(str(x) for x in v)
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


OptInt = int | None

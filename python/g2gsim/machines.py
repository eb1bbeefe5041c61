"""Machine files: presets shipped with g2gsim, or the user's own TOML (docs/machine-files.md)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import tomli_w

from . import _core

PRESET_DIR = Path(__file__).parent / "presets"


class MachineError(ValueError):
    pass


def presets() -> dict[str, Path]:
    return {p.stem: p for p in sorted(PRESET_DIR.glob("*.toml"))}


def _read(p: Path) -> str:
    """The text of a machine file; every way reading it can fail is a MachineError naming it."""
    if p.is_dir():
        raise MachineError(f"{p}: is a directory, not a machine file")
    try:
        data = p.read_bytes()
    except OSError as e:
        raise MachineError(f"{p}: cannot read the machine file ({e.strerror or e})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise MachineError(f"{p}:{line}: not UTF-8 text (byte {e.start}); a machine file is TOML") from None


def resolve(name_or_file: str | Path) -> tuple[str, str]:
    """Returns (toml_text, file_label) for a preset name or a path."""
    p = Path(name_or_file)
    if p.suffix == ".toml" or p.exists():
        if not p.exists():
            raise MachineError(f"machine file {p} does not exist")
        return _read(p), str(p)
    ps = presets()
    if str(name_or_file) in ps:
        f = ps[str(name_or_file)]
        return _read(f), f"preset:{f.name}"
    raise MachineError(f"unknown machine {name_or_file!r}: not a file, and not a preset "
                       f"({', '.join(ps)})")


def toml_value(v: Any) -> str:
    """``v`` as one TOML value on one line, quoted and escaped by tomli-w: for the machine-file
    writers (``g2gsim machine detect``, ``g2gsim calibrate fit``) that put a comment after each
    value, which tomli-w itself cannot."""
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        raise TypeError(f"cannot write the table {v!r} as one TOML value")
    return tomli_w.dumps({"v": v}).removeprefix("v = ").rstrip("\n")


def check(name_or_file: str | Path, nodes: int = 2) -> dict:
    text, label = resolve(name_or_file)
    try:
        return json.loads(_core.machine_check(text, label, nodes))
    except _core.MachineError as e:
        raise MachineError(str(e)) from None


# the parameters a HostCopy-vs-GPUDirect answer is most sensitive to (docs/semantics.md)
KEY_PARAMS = ("gpu.copy_delay", "gpu.copy_per_byte", "gpu.gpudirect_delay", "node.pcie.bw", "node.nvlink.bw",
              "node.nic.bw", "network.link_bw", "mpi.eager_limit")


def _get(d: dict, key: str):
    cur = d
    for part in key.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return None
        cur = cur[part]
    return cur


def uncertainty(text: str, label: str = "machine") -> list[dict]:
    """The machine file's ``[uncertainty."table.key"]`` entries: [{"key", "low", "high", "source"}].
    Presets give ranges with their sources; ``g2gsim calibrate fit`` writes its fit's residual spread."""
    import tomllib
    try:
        d = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise MachineError(f"{label}: {e}") from None
    out = []
    for key, v in (d.get("uncertainty") or {}).items():
        if not isinstance(v, dict) or "low" not in v or "high" not in v:
            raise MachineError(f"{label}: uncertainty.{key!r}: needs low = ..., high = ... (and source = \"...\")")
        if _get(d, key) is None and key not in KEY_PARAMS:
            raise MachineError(f"{label}: uncertainty.{key!r}: the file sets no key {key}")
        out.append({"key": key, "low": v["low"], "high": v["high"], "source": str(v.get("source", ""))})
    return out


def with_overrides(text: str, label: str, sets: dict) -> str:
    """The machine file ``text`` with ``{"table.key": value}`` set (units as in the file, e.g. "2us").
    Comments are not kept; the result is checked by the core like any machine file."""
    import tomllib

    import tomli_w
    try:
        d = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise MachineError(f"{label}: {e}") from None
    for key, val in sets.items():
        parts = key.split(".")
        cur = d
        for part in parts[:-1]:
            nxt = cur.setdefault(part, {})
            if not isinstance(nxt, dict):
                raise MachineError(f"{label}: cannot set {key}: {part} is not a table")
            cur = nxt
        cur[parts[-1]] = val
    return tomli_w.dumps(d)


def describe(text: str, label: str, default: bool = False) -> dict:
    """What a result says about its machine: name, preset or file, calibrated, chosen by default,
    the key parameters' values and the uncertainty ranges the file gives."""
    import tomllib
    try:
        d = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise MachineError(f"{label}: {e}") from None
    preset = label.startswith("preset:")
    calibrated = "calibrate fit" in str(d.get("sources", "")) or "calibrated" in str(d.get("name", ""))
    name = str(d.get("name", label))
    params = {k: (str(_get(d, k)) if _get(d, k) is not None else "default") for k in KEY_PARAMS}
    ranges = uncertainty(text, label)
    kind = ("preset" if preset else "file") + (", calibrated" if calibrated else ", not calibrated")
    sentence = f"machine: {name} ({kind}"
    if default:
        sentence += "; used by default: no --machine given"
    sentence += ")"
    if not ranges:
        sentence += "; the file gives no ranges for its uncertain parameters"
    return {"name": name, "label": label, "preset": preset, "calibrated": calibrated, "default": default,
            "key_parameters": params, "ranges": ranges, "sentence": sentence}


def validate(name_or_file: str | Path) -> list[str]:
    """Every error of a machine file (each "file:line: key: message"); empty when it is valid. A file
    whose schema is valid is also built (2 nodes), so topology errors show too."""
    text, label = resolve(name_or_file)
    errs = list(_core.machine_validate(text, label))
    if not errs:
        try:
            _core.machine_check(text, label, 2)
        except _core.MachineError as e:
            errs.append(str(e))
    return errs

"""Machine files: presets shipped with g2gsim, or the user's own TOML (docs/machine-files.md)."""
from __future__ import annotations

import json
import re
import tomllib
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomli_w

from . import _core
from .units import parse_size

PRESET_DIR = Path(__file__).parent / "presets"


class MachineError(ValueError):
    """A machine that does not exist or is invalid; the message names the file and key (and line)."""


# Presets renamed by what they are (issue 29); the old names keep working with a notice.
RENAMED = {
    "seed-a100-8gpu": "a100x8-nvswitch",
    "seed-a40-8gpu": "a40x8-pcie",
    "seed-h100-4gpu": "h100x4-nvlink",
    "seed-juwels": "juwels-booster-cited",
    "seed-leonardo": "leonardo-cited",
    "seed-p100-daint": "piz-daint-cited",
}


class PresetRenamed(FutureWarning):
    """A machine preset was asked for by its old name."""


class SetOverridden(UserWarning):
    """A ``--set`` of a key that the machine's other settings override: it changes nothing."""


def presets() -> dict[str, Path]:
    """The shipped machine presets: name -> TOML file."""
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


def resolve(name_or_file: str | Path | MachineSpec) -> tuple[str, str]:
    """Returns (toml_text, file_label) for a preset name, a path, or a MachineSpec (its settings
    applied and checked)."""
    if isinstance(name_or_file, MachineSpec):
        return apply_sets(*resolve(name_or_file.base), name_or_file.sets)
    p = Path(name_or_file)
    if p.suffix == ".toml" or p.exists():
        if not p.exists():
            raise MachineError(f"machine file {p} does not exist")
        return _read(p), str(p)
    ps = presets()
    if str(name_or_file) in RENAMED and str(name_or_file) not in ps:
        new = RENAMED[str(name_or_file)]
        warnings.warn_explicit(f"machine preset {name_or_file!r} is now called {new!r}; the old name "
                               f"will be removed", PresetRenamed, "g2gsim", 0)
        name_or_file = new
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


def check(name_or_file: str | Path | MachineSpec, nodes: int = 2) -> dict:
    """Validates a machine and returns its parameters as the core understands them (what
    ``g2gsim machine show`` prints), with the network built for ``nodes`` nodes."""
    text, label = resolve(name_or_file)
    try:
        return json.loads(_core.machine_check(text, label, nodes))
    except _core.MachineError as e:
        raise MachineError(str(e)) from None


# ----------------------------------------------------------------------------------- --set KEY=VALUE
# Any machine-file key from the command line (or Python): the machine's TOML is loaded, each key set,
# and the result goes through the core's machine-file parser, so units, ranges and unknown keys are
# checked exactly as in a file and an error names the --set that caused it.

@dataclass(frozen=True)
class MachineSpec:
    """A preset name or machine file plus ``KEY=VALUE`` settings applied on top of it.

    Everything that takes a machine (``g2gsim.simulate``, compare, whatif, ...) accepts one;
    ``str(spec)`` says what was assumed, e.g. ``lassen --set node.nic.bw=50GB/s``."""
    base: str
    sets: tuple[str, ...] = ()

    def __str__(self) -> str:
        return " ".join([self.base, *(f"--set {s}" for s in self.sets)])


def with_sets(machine: str | Path | MachineSpec, sets: Iterable[str] | Mapping[str, Any] = ()) -> str | Path | MachineSpec:
    """``machine`` with ``sets`` applied (``["node.nic.bw=50GB/s"]`` or ``{"node.nic.bw": "50GB/s"}``);
    the machine itself when there are none.  Raises MachineError when a setting is invalid."""
    if isinstance(sets, Mapping):
        sets = [f"{k}={_format_value(v)}" for k, v in sets.items()]
    sets = tuple(str(s) for s in sets)
    if not sets:
        return machine
    if isinstance(machine, MachineSpec):
        spec = MachineSpec(machine.base, machine.sets + sets)
    else:
        spec = MachineSpec(str(machine), sets)
    resolve(spec)                      # fail now, with the --set named, not deep inside a command
    return spec


def parse_set(item: str) -> tuple[str, Any]:
    """``"node.nic.bw=50GB/s"`` -> ``("node.nic.bw", "50GB/s")``.  The value is read as a TOML value
    when it is one (``4``, ``true``, ``1.5``, ``"text"``, ``[1, 2]``), else taken as a string, so
    ``64KiB`` and ``max-min`` need no quotes."""
    key, eq, value = item.partition("=")
    key, value = key.strip(), value.strip()
    if not eq or not key:
        raise MachineError(f"--set {item!r}: expected KEY=VALUE, e.g. node.nic.bw=50GB/s")
    if not _KEY.fullmatch(key):
        raise MachineError(f"--set {item}: {key!r} is not a machine-file key (dotted names such as "
                           f"node.nic.bw or mpi.eager_limit)")
    if value == "":
        raise MachineError(f"--set {item}: no value")
    try:
        return key, tomllib.loads(f"v = {value}")["v"]
    except tomllib.TOMLDecodeError:
        return key, value


def _format_value(v: Any) -> str:
    if isinstance(v, str):
        return v
    return tomli_w.dumps({"v": v})[4:].strip()


_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*(\.([A-Za-z_][A-Za-z0-9_-]*|\d+))*")


def _assign(doc: dict, key: str, value: Any, item: str) -> None:
    parts = key.split(".")
    node: Any = doc
    for i, part in enumerate(parts[:-1]):
        where = ".".join(parts[:i + 1])
        if isinstance(node, list):
            if not part.isdigit() or int(part) >= len(node):
                raise MachineError(f"--set {item}: {'.'.join(parts[:i])} has {len(node)} entries "
                                   f"(index them 0..{len(node) - 1})")
            node = node[int(part)]
            continue
        nxt = node.setdefault(part, {})
        if not isinstance(nxt, (dict, list)):
            raise MachineError(f"--set {item}: {where} is a value ({_format_value(nxt)}), not a table")
        node = nxt
    last = parts[-1]
    if isinstance(node, list):
        if not last.isdigit() or int(last) >= len(node):
            raise MachineError(f"--set {item}: {'.'.join(parts[:-1])} has {len(node)} entries")
        node[int(last)] = value
    else:
        if isinstance(node.get(last), dict) and not isinstance(value, dict):
            raise MachineError(f"--set {item}: {key} is a table; set one of its keys "
                               f"({', '.join(f'{key}.{k}' for k in node[last])})")
        node[last] = value


_TOKEN = "\x00set\x00"
_CORE_ERR = re.compile(re.escape(_TOKEN) + r"(?::\d+)?: (?:(?P<key>[A-Za-z0-9_.\[\]-]+): )?(?P<msg>.*)", re.S)


def apply_sets(text: str, label: str, sets: Iterable[str]) -> tuple[str, str]:
    """The machine TOML ``text`` (from ``label``) with ``sets`` applied, checked by the core's parser.
    Returns (new text, new label)."""
    sets = tuple(sets)
    try:                                # the file's own errors name its own lines
        _core.machine_check(text, label, 1)
    except _core.MachineError as e:
        raise MachineError(str(e)) from None
    doc = tomllib.loads(text)
    keys = []
    for item in sets:
        key, value = parse_set(item)
        _assign(doc, key, value, item)
        keys.append((key, item))
    new = tomli_w.dumps(doc)
    new_label = " ".join([label, *(f"--set {s}" for s in sets)])
    try:
        _core.machine_check(new, _TOKEN, 1)
    except _core.MachineError as e:
        m = _CORE_ERR.search(str(e))
        if not m:
            raise MachineError(str(e).replace(_TOKEN, new_label)) from None
        bad = m["key"] or ""
        for key, item in reversed(keys):
            if bad == key or bad.startswith(key + ".") or key.startswith(bad + ".") and bad:
                raise MachineError(f"--set {item}: {m['msg']}") from None
        raise MachineError(f"{new_label}: {bad + ': ' if bad else ''}{m['msg']}") from None
    for key, item in keys:
        why = _overridden_by(doc, key)
        if why and (label, item) not in _NOTICED:        # once per process, not on every resolve
            _NOTICED.add((label, item))
            warnings.warn_explicit(f"--set {item} changes nothing on {label}: {why}", SetOverridden, "g2gsim", 0)
    return new, new_label


_NOTICED: set[tuple[str, str]] = set()


def _overridden_by(doc: dict, key: str) -> str | None:
    """Why setting ``key`` has no effect on the machine ``doc`` (after all settings), or None.
    node.nic.bw reaches the network only as the default of network.link_bw (fat-tree) or as a cap on
    it (crossbar); torus and dragonfly give the NIC its own link."""
    net = doc.get("network")
    if not isinstance(net, dict):
        net = {}
    if key == "node.nic.bw" and net.get("topology") == "fat-tree" and "link_bw" in net:
        return ("network.link_bw is set, and a fat-tree's links take their bandwidth from it "
                "(set network.link_bw instead)")
    return None



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


def with_overrides(text: str, label: str, sets: Mapping[str, Any]) -> str:
    """The machine file ``text`` with ``{"table.key": value}`` set (units as in the file, e.g. "2us"):
    the same settings as ``--set KEY=VALUE`` (``apply_sets``), checked by the core's schema."""
    return apply_sets(text, label, [f"{k}={_format_value(v)}" for k, v in sets.items()])[0]


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
    out = {"name": name, "label": label, "preset": preset, "calibrated": calibrated, "default": default,
           "key_parameters": params, "ranges": ranges, "sentence": sentence}
    if "calibrated_max_bytes" in d:           # written by `calibrate fit`; the core checked it is a size
        out["calibrated_max_bytes"] = parse_size(d["calibrated_max_bytes"])
    if "calibrated_ranks" in d:               # idem; the core checked it is a count >= 1
        out["calibrated_ranks"] = int(d["calibrated_ranks"])
    return out


def validate(name_or_file: str | Path | MachineSpec) -> list[str]:
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

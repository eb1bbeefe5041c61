#!/usr/bin/env python3
"""Writes docs/api.md, the Python API reference, from the docstrings of the public API.

    python3 docs/gen_api.py            # rewrite docs/api.md   (make api-docs)
    python3 docs/gen_api.py -o FILE    # elsewhere

The public API is the list below (PUBLIC): what a user imports.  tests/test_api_docs.py imports every
name of it, checks each has a docstring (and each public method of a public class), and runs this
script, so the reference builds on every test run without any documentation tool installed.
"""
from __future__ import annotations

import argparse
import importlib
import inspect
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# module -> public names, in the order the reference shows them
PUBLIC: dict[str, list[str]] = {
    "g2gsim": ["simulate", "Report", "Trace", "TraceBuilder", "Comm", "TraceError", "SimulationError"],
    "g2gsim.machines": ["presets", "check", "resolve", "with_sets", "MachineSpec", "parse_set", "MachineError"],
    "g2gsim.generate": ["generate", "generate_to_file", "GENERATORS", "params", "describe"],
    "g2gsim.analysis": ["compare", "whatif", "map_trace", "traffic_matrix", "optimise_mapping", "run_sweep"],
    "g2gsim.record": ["record", "find_library"],
}

INTRO = """# Python API reference

Generated from the docstrings by `docs/gen_api.py` (`make api-docs`); do not edit by hand.
The command line is the same functions (`g2gsim --help`); `docs/tutorial.md` walks through both.

```python
import g2gsim
r = g2gsim.simulate("run.g2g.parquet", "lassen", mode="gpudirect")   # a g2gsim.Report (a dict)
r.total_time_s, r.per_op_df()
t = g2gsim.Trace.read("trace/traces.otf2")                           # any format simulate takes
```
"""


def _sig(obj) -> str:
    try:
        return str(inspect.signature(obj))
    except (TypeError, ValueError):
        return ""


def _doc(obj) -> str:
    return inspect.cleandoc(inspect.getdoc(obj) or "")


def public_members(cls) -> list[tuple[str, object]]:
    """A class's documented members: public methods, classmethods and properties defined in g2gsim."""
    out = []
    for name, member in cls.__dict__.items():
        if name.startswith("_"):
            continue
        if isinstance(member, (classmethod, staticmethod)):
            out.append((name, member.__func__))
        elif isinstance(member, property) or inspect.isfunction(member):
            out.append((name, member))
    return out


def resolve(module: str, name: str):
    return getattr(importlib.import_module(module), name)


def render() -> str:
    parts = [INTRO]
    for module, names in PUBLIC.items():
        mod = importlib.import_module(module)
        parts.append(f"\n## `{module}`\n")
        first = _doc(mod).split("\n\n")[0]
        if first:
            parts.append(first + "\n")
        for name in names:
            obj = getattr(mod, name)
            if inspect.isclass(obj):
                kind = "exception" if issubclass(obj, BaseException) else "class"
                parts.append(f"\n### {kind} `{module}.{name}`\n\n{_doc(obj)}\n")
                if kind == "class":
                    for mname, member in public_members(obj):
                        if isinstance(member, property):
                            parts.append(f"\n- `{name}.{mname}` (property): {_doc(member)}")
                        else:
                            parts.append(f"\n- `{name}.{mname}{_sig(member)}`: {_doc(member)}")
                    parts.append("\n")
            elif callable(obj):
                parts.append(f"\n### `{module}.{name}{_sig(obj)}`\n\n{_doc(obj)}\n")
            else:
                parts.append(f"\n### `{module}.{name}`\n\n{type(obj).__name__} with "
                             f"{len(obj) if hasattr(obj, '__len__') else ''} entries"
                             + (f": {', '.join(sorted(map(str, obj)))}" if isinstance(obj, dict) else "") + "\n")
    return "".join(parts).rstrip() + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--output", type=Path, default=ROOT / "docs" / "api.md")
    a = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT / "python"))
    a.output.write_text(render())
    print(f"wrote {a.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

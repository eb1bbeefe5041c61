"""The Python package keeps its layers (issue 22: "no import circle").

Every ``import`` of every module of ``python/g2gsim`` is read from the source (those inside functions
too, where a circle hides best) and followed within the package; the graph must have no circle, and
trace.py, the lowest layer (the native trace type), must import neither sim.py, formats.py nor the
readers: it reaches the readers through ``trace.register_format`` (g2gsim/formats.py fills it).
Imports of a package's ``__init__`` (``from . import __version__``) are not edges: a package's face
imports its parts by design.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

import g2gsim

PKG = Path(g2gsim.__file__).parent


def _module_name(f: Path) -> str:
    parts = list(f.relative_to(PKG.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(f): f for f in sorted(PKG.rglob("*.py"))}


def _imports(name: str, f: Path, modules: dict[str, Path]) -> set[str]:
    """The modules of the package that module ``name`` (file ``f``) imports, anywhere in its body."""
    package = name if f.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(f.read_text(), str(f))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out.add(mod)
            out.update(f"{mod}.{a.name}" for a in node.names)  # ``from . import sim``: the module sim
    # only modules of the package; a package's __init__ is its face, not a layer
    return {m for m in out if m in modules and modules[m].name != "__init__.py" and m != name}


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, f, modules) for name, f in modules.items()}


def _circle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle of ``graph`` (its modules in order, the first repeated last), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        path.append(m)
        for n in sorted(graph.get(m, ())):
            if state.get(n) == 1:
                return path[path.index(n):] + [n]
            if n not in state:
                found = visit(n)
                if found:
                    return found
        path.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state:
            found = visit(m)
            if found:
                return found
    return None


def test_the_import_graph_is_read():
    g = _graph()
    # the checks below would pass on an empty graph: the edges it must see are there
    assert "g2gsim.trace" in g["g2gsim.readers.otf2_reader"]
    assert "g2gsim.trace" in g["g2gsim.formats"]
    assert "g2gsim.readers.otf2_reader" in g["g2gsim.formats"]  # imported inside a function
    assert "g2gsim.formats" in g["g2gsim.sim"]


def test_trace_imports_neither_sim_formats_nor_readers():
    above = {m for m in _graph()["g2gsim.trace"]
             if m in ("g2gsim.sim", "g2gsim.formats") or m.startswith("g2gsim.readers")}
    assert not above, f"trace.py (the lowest layer) imports {sorted(above)}: use trace.register_format"


def test_no_import_circle_in_the_package():
    circle = _circle(_graph())
    assert circle is None, "import circle: " + " -> ".join(circle or [])


def test_the_circle_finder_finds_one():
    assert _circle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _circle({"a": {"b"}, "b": set(), "c": {"b"}}) is None


@pytest.mark.parametrize("kind", ["otf2", "dumpi", "nsys"])
def test_every_imported_format_has_its_reader(kind):
    from g2gsim import trace
    assert kind in trace._READERS
    assert getattr(g2gsim.Trace, f"from_{kind}")


def test_an_unregistered_format_is_a_one_line_trace_error(tmp_path, monkeypatch):
    from g2gsim import trace
    p = tmp_path / "t.otf2"
    p.write_text("")
    monkeypatch.delitem(trace._READERS, "otf2")
    for call in (lambda: g2gsim.Trace.read(p), lambda: g2gsim.Trace.from_otf2(p)):
        with pytest.raises(g2gsim.TraceError, match=r"t\.otf2: no reader is registered for otf2 traces") as e:
            call()
        assert "\n" not in str(e.value)

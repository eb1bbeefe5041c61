"""python/g2gsim/_core.pyi describes the compiled core as it is: every function and class of
``g2gsim._core`` has a stub, no stub names what the core lacks, and each function's parameters
(names, order, which have defaults) are those of the core's signature (mypy reads the stubs, so a
stale one hides a wrong call from the gate)."""
from __future__ import annotations

import ast
import inspect
from pathlib import Path

import g2gsim
from g2gsim import _core

STUBS = Path(g2gsim.__file__).with_name("_core.pyi")


def _stubs() -> dict[str, ast.AST]:
    tree = ast.parse(STUBS.read_text())
    return {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)}


def _public() -> dict[str, object]:
    return {n: getattr(_core, n) for n in dir(_core)
            if not n.startswith("_") and (callable(getattr(_core, n)))}


def test_every_core_name_has_a_stub_and_no_more():
    stubs, core = _stubs(), _public()
    assert sorted(stubs) == sorted(core), (
        f"missing from _core.pyi: {sorted(set(core) - set(stubs))}; "
        f"in _core.pyi but not in the core: {sorted(set(stubs) - set(core))}")


def test_stub_parameters_are_the_core_signatures():
    stubs, core = _stubs(), _public()
    checked = 0
    for name, obj in core.items():
        stub = stubs.get(name)
        if not isinstance(stub, ast.FunctionDef):
            continue
        sig = inspect.signature(obj)   # from the core's __text_signature__
        want = [(p.name, p.default is not inspect.Parameter.empty) for p in sig.parameters.values()]
        args = stub.args
        n_plain = len(args.args) - len(args.defaults)
        got = [(a.arg, i >= n_plain) for i, a in enumerate(args.args)]
        assert got == want, f"_core.pyi {name}{got} differs from the core's {name}{sig}"
        checked += 1
    assert checked >= 10

"""The API reference (docs/api.md) is generated from docstrings by docs/gen_api.py: every public name
imports and is documented, and the generator runs."""
from __future__ import annotations

import importlib.util
import inspect
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("gen_api", ROOT / "docs" / "gen_api.py")
gen_api = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gen_api)


def _documented():
    for module, names in gen_api.PUBLIC.items():
        for name in names:
            yield module, name, gen_api.resolve(module, name)


def test_every_public_name_has_a_docstring():
    missing = []
    for module, name, obj in _documented():
        if (callable(obj) or inspect.isclass(obj)) and not (obj.__doc__ or "").strip():
            missing.append(f"{module}.{name}")
        if inspect.isclass(obj) and not issubclass(obj, BaseException):
            for mname, member in gen_api.public_members(obj):
                if not (member.__doc__ or "").strip():
                    missing.append(f"{module}.{name}.{mname}")
    assert not missing, f"public API without a docstring: {', '.join(missing)}"


def test_the_reference_builds_and_names_every_public_name(tmp_path):
    out = tmp_path / "api.md"
    assert gen_api.main(["-o", str(out)]) == 0
    text = out.read_text()
    for module, name, _ in _documented():
        assert f"`{module}.{name}" in text, name


def test_the_committed_reference_has_no_stale_names():
    text = (ROOT / "docs" / "api.md").read_text()
    for module, dotted in re.findall(r"^### (?:class |exception )?`(g2gsim[\w.]*)\.(\w+)", text, re.M):
        assert hasattr(importlib.import_module(module), dotted), f"{module}.{dotted}"
    for module, name, _ in _documented():
        assert f"`{module}.{name}" in text, f"docs/api.md lacks {module}.{name}: run make api-docs"

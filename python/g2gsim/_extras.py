"""Optional dependencies: each belongs to an extra of the package (pyproject.toml), and a missing one
fails with one line that names the extra to install.

``require("otf2", "otf2", "reading OTF2 traces")`` imports and returns the module, or raises
:class:`MissingExtra`.  MissingExtra is an ImportError (code that catches ImportError keeps working)
and a ``click.ClickException``, so the command line prints ``Error: <the line>`` and exits with 1,
without a traceback.
"""
from __future__ import annotations

import importlib
from types import ModuleType

import click

# extra -> (the distribution it installs, the top-level modules that come with it); keep in step with
# [project.optional-dependencies] in pyproject.toml (tests/test_extras.py checks)
EXTRAS = {
    "otf2": ("otf2", {"otf2", "_otf2"}),
    "plot": ("matplotlib", {"matplotlib"}),
    "sweep": ("dask[distributed]", {"dask", "distributed"}),
}


class MissingExtra(click.ClickException, ImportError):
    """An optional dependency is not installed; the message names the extra that brings it."""

    def __init__(self, module: str, extra: str, purpose: str):
        self.module, self.extra, self.purpose = module, extra, purpose
        super().__init__(f"{purpose} needs the Python package {EXTRAS[extra][0]!r}, which is not "
                         f"installed: pip install 'g2gsim[{extra}]'")


def require(module: str, extra: str, purpose: str) -> ModuleType:
    """Import ``module`` (from the extra ``extra``, needed for ``purpose``) or raise MissingExtra."""
    if extra not in EXTRAS:
        raise ValueError(f"unknown extra {extra!r} (known: {', '.join(EXTRAS)})")
    try:
        return importlib.import_module(module)
    except ImportError as e:
        # only the optional package itself missing is a missing extra; a broken install stays visible
        missing = (getattr(e, "name", None) or module).split(".")[0]
        if missing not in EXTRAS[extra][1]:
            raise
        raise MissingExtra(module, extra, purpose) from None

"""Analyses on top of the simulator: HostCopy vs GPUDirect comparisons, node-configuration what-ifs,
rank-mapping optimisation, reports (tables, POP metrics, plots, HTML) and Dask parameter sweeps.

    from g2gsim.analysis import compare, whatif, optimise_mapping, traffic_matrix, run_sweep

The command-line side is g2gsim.analysis.cli (compare, whatif, map, profile, sweep, sweep-plot).
See docs/analysis.md. Names are imported on first use, so that `g2gsim --help` stays fast.
"""
from __future__ import annotations

import importlib

_EXPORTS = {
    "compare": "compare", "sanitize": "compare",
    "whatif": "whatif",
    "traffic_matrix": "mapping", "optimise_mapping": "mapping", "map_trace": "mapping",
    "summary": "metrics", "pop_metrics": "metrics", "profile_tables": "metrics", "profile_text": "metrics",
    "run_sweep": "sweep", "load_sweep": "sweep",
    "compare_report": "report_html",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    mod = _EXPORTS.get(name)
    if mod is None:
        raise AttributeError(f"module 'g2gsim.analysis' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{mod}", __name__), name)
    globals()[name] = value
    return value

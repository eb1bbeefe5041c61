"""Analyses on top of the simulator: HostCopy vs GPUDirect comparisons, node-configuration what-ifs,
rank-mapping optimisation, reports (tables, POP metrics, plots, HTML) and Dask parameter sweeps.

    from g2gsim.analysis import compare, whatif, optimise_mapping, traffic_matrix, run_sweep

The command-line side is g2gsim.analysis.cli (compare, whatif, map, sweep, sweep-plot, profile).
See docs/analysis.md.
"""
from __future__ import annotations

from .compare import compare, sanitize  # noqa: F401
from .mapping import optimise_mapping, traffic_matrix  # noqa: F401
from .metrics import pop_metrics, profile_tables, summary  # noqa: F401
from .whatif import whatif  # noqa: F401


def run_sweep(*args, **kwargs):
    """See g2gsim.analysis.sweep.run_sweep (imports dask lazily)."""
    from .sweep import run_sweep as _run
    return _run(*args, **kwargs)

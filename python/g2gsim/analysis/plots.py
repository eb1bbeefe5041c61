"""matplotlib figures (Agg backend) in the style of the paper's Figs 4-7.

Every function returns a Figure; ``png_bytes`` / ``save`` turn it into a file or an inline image."""
from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .._extras import require

matplotlib = require("matplotlib", "plot", "drawing plots")
matplotlib.use("Agg", force=False)
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

COMM, COMPUTE, COPY = "#d62728", "#1f77b4", "#ff7f0e"
MODE_COLORS = {"hostcopy": "#7f7f7f", "gpudirect": "#2ca02c", "as-traced": "#9467bd"}
PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"]


def png_bytes(fig, dpi: int = 110) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()


def save(fig, path: str | Path, dpi: int = 120) -> Path:
    p = Path(path)
    fig.savefig(p, dpi=dpi, bbox_inches="tight")
    plt.close(fig)
    return p


def _ms(x):
    return np.asarray(x, dtype=float) * 1e3


def comm_compute_bars(labels: Sequence[str], comm_s: Sequence[float], compute_s: Sequence[float],
                      title: str = "Computation vs communication (avg per rank)", share: bool = False):
    """Fig. 4 style: stacked bars of compute and communication per configuration (ms, or shares)."""
    fig, ax = plt.subplots(figsize=(max(4.5, 1.1 * len(labels) + 2), 3.6))
    comm = np.asarray(comm_s, float)
    comp = np.asarray(compute_s, float)
    if share:
        tot = comm + comp
        tot[tot == 0] = 1
        comm, comp = comm / tot * 100, comp / tot * 100
        unit = "% of time"
    else:
        comm, comp = _ms(comm), _ms(comp)
        unit = "time (ms)"
    x = np.arange(len(labels))
    ax.bar(x, comp, color=COMPUTE, label="computation")
    ax.bar(x, comm, bottom=comp, color=COMM, label="communication (MPI + copies)")
    for i in range(len(labels)):
        if share:
            ax.text(x[i], comp[i] + comm[i] / 2, f"{comm[i]:.0f}%", ha="center", va="center", fontsize=8, color="white")
    rot = len(labels) > 3 or max((len(str(g)) for g in labels), default=0) * len(labels) > 40
    ax.set_xticks(x, labels, rotation=20 if rot else 0, ha="right" if rot else "center")
    ax.set_ylabel(unit)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.grid(axis="y", alpha=0.3)
    return fig


def speedup_bars(groups: Sequence[str], series: Mapping[str, Sequence[float]], title: str = "GPUDirect speedup over HostCopy",
                 xlabel: str = "", ylabel: str = "communication speedup (x)"):
    """Fig. 5/6 style: grouped bars of speedups; groups on x (e.g. rank counts), one series per
    configuration (e.g. GPUs per node). A dashed line marks 1x."""
    fig, ax = plt.subplots(figsize=(max(5, 0.9 * len(groups) * max(1, len(series)) * 0.5 + 3), 3.6))
    x = np.arange(len(groups))
    k = max(len(series), 1)
    w = 0.8 / k
    for i, (name, vals) in enumerate(series.items()):
        v = np.asarray([np.nan if a is None else a for a in vals], float)
        bars = ax.bar(x - 0.4 + w * (i + 0.5), np.nan_to_num(v, nan=0.0), w, label=str(name), color=PALETTE[i % len(PALETTE)])
        for b, val in zip(bars, v):
            if np.isfinite(val):
                ax.text(b.get_x() + b.get_width() / 2, b.get_height(), f"{val:.2f}", ha="center", va="bottom", fontsize=7)
    ax.axhline(1.0, color="k", ls="--", lw=0.8)
    rot = len(groups) > 4 or max((len(str(g)) for g in groups), default=0) * len(groups) > 40
    ax.set_xticks(x, [str(g) for g in groups], rotation=20 if rot else 0, ha="right" if rot else "center")
    ax.set_ylabel(ylabel)
    ax.set_xlabel(xlabel)
    ax.set_title(title, fontsize=10)
    if len(series) > 1:
        ax.legend(fontsize=8, title_fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.grid(axis="y", alpha=0.3)
    return fig


def paired_bars(labels: Sequence[str], a: Sequence[float], b: Sequence[float], a_name: str = "hostcopy",
                b_name: str = "gpudirect", title: str = "", ylabel: str = "time per rank (ms)"):
    """Two bars per label (HostCopy vs GPUDirect), milliseconds."""
    fig, ax = plt.subplots(figsize=(max(5, 1.0 * len(labels) + 2.5), 3.6))
    x = np.arange(len(labels))
    ax.bar(x - 0.2, _ms(a), 0.4, label=a_name, color=MODE_COLORS.get(a_name, PALETTE[0]))
    ax.bar(x + 0.2, _ms(b), 0.4, label=b_name, color=MODE_COLORS.get(b_name, PALETTE[2]))
    ax.set_xticks(x, labels, rotation=25 if len(labels) > 3 else 0, ha="right" if len(labels) > 3 else "center", fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    return fig


def gpn_time_bars(rows: Sequence[dict[str, Any]], modes: Sequence[str] = ("hostcopy", "gpudirect"),
                  title: str = "Time per GPUs-per-node configuration"):
    """Fig. 7 style: absolute compute + communication per GPUs-per-node value, one bar per mode."""
    gpns = sorted({int(r["gpus_per_node"]) for r in rows if "error" not in r})
    fig, ax = plt.subplots(figsize=(max(5, 1.3 * len(gpns) + 2.5), 3.8))
    x = np.arange(len(gpns))
    k = max(len(modes), 1)
    w = 0.8 / k
    for i, mode in enumerate(modes):
        comp, comm = [], []
        for g in gpns:
            r = next((r for r in rows if r["mode"] == mode and int(r["gpus_per_node"]) == g and "error" not in r), None)
            comp.append(r["compute_s"] if r else np.nan)
            comm.append(r["comm_s"] if r else np.nan)
        xs = x - 0.4 + w * (i + 0.5)
        ax.bar(xs, _ms(comp), w, color=COMPUTE, edgecolor="k", lw=0.4, label="computation" if i == 0 else None)
        ax.bar(xs, _ms(comm), w, bottom=_ms(comp), color=MODE_COLORS.get(mode, PALETTE[i]), edgecolor="k", lw=0.4,
               label=f"communication ({mode})")
    ax.set_xticks(x, [f"{g} GPU{'s' if g > 1 else ''}/node" for g in gpns])
    ax.set_ylabel("time per rank (ms)")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.grid(axis="y", alpha=0.3)
    return fig


def mapping_bars(rows: Sequence[dict[str, Any]], title: str = "Communication time by rank mapping"):
    labels = [r["mapping"] for r in rows]
    fig, ax = plt.subplots(figsize=(5.5, 3.4))
    x = np.arange(len(labels))
    ax.bar(x, _ms([r["comm_s"] for r in rows]), color=[PALETTE[i] for i in range(len(rows))])
    for i, r in enumerate(rows):
        ax.text(i, r["comm_s"] * 1e3, f"{r['inter_node_share']:.0%} off-node", ha="center", va="bottom", fontsize=8)
    ax.set_xticks(x, labels)
    ax.set_ylabel("communication per rank (ms)")
    ax.set_title(title, fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    return fig

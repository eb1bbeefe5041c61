"""Figures from a sweep's Parquet file: ``g2gsim sweep-plot results.parquet -o DIR``.

* speedup-<group>.png: GPUDirect speedup in communication time over HostCopy (Figs 5/6): x = rank
  count (or trace), one bar per GPUs-per-node value (and any other parameter that varies);
* comm-compute.png: computation vs communication share per trace (Fig 4), HostCopy (or the first mode);
* gpn-<trace>.png: absolute computation + communication per GPUs-per-node value, per mode (Fig 7).
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

ID_COLS = ["trace", "workload", "ranks", "machine", "gpus_per_node"]
NON_PARAM = {"key", "trace", "workload", "ranks", "machine", "mode", "gpus_per_node", "trace_hash", "machine_hash",
             "trace_path", "network_scale_effective", "computed_at", "worker_pid", "error", "total_time_s",
             "comm_time_s", "compute_time_s", "copy_time_s", "mpi_s", "memcpy_s", "comm_s", "compute_s", "runtime_s", "comm_share",
             "p2p_messages", "collective_messages", "nranks", "nodes", "gpus_per_node_effective", "paths", "events",
             "wall_s", "run_id"}


def _slug(s) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", str(s)).strip("_") or "x"


def load_results(path: str | Path) -> pd.DataFrame:
    df = pd.read_parquet(path)
    if "compute_s" not in df.columns and "compute_time_s" in df.columns:
        df["compute_s"] = df["compute_time_s"]
    if "error" in df.columns:
        df = df[df["error"].isna()]
    if "gpus_per_node_effective" in df.columns:
        df = df.assign(gpus_per_node=df["gpus_per_node_effective"])
    return df.reset_index(drop=True)


def param_columns(df: pd.DataFrame) -> list[str]:
    """Parameter columns that take more than one value in the sweep."""
    return [c for c in df.columns if c not in NON_PARAM and df[c].astype(str).nunique() > 1]


def _group_of(row) -> str:
    w = row.get("workload")
    return str(w) if isinstance(w, str) and w else re.sub(r"-\d+$", "", str(row["trace"]))


def speedup_table(df: pd.DataFrame) -> pd.DataFrame:
    """One row per point pair: comm_s(hostcopy) / comm_s(gpudirect) with the identifying columns."""
    if not {"hostcopy", "gpudirect"} <= set(df["mode"]):
        return pd.DataFrame()
    keys = ["trace", "machine", "gpus_per_node"] + param_columns(df)
    keys = list(dict.fromkeys(k for k in keys if k in df.columns and k != "mode"))
    extra = [c for c in ("workload", "ranks") if c in df.columns]
    hc = df[df["mode"] == "hostcopy"][keys + ["comm_s", "runtime_s"] + extra]
    gd = df[df["mode"] == "gpudirect"][keys + ["comm_s", "runtime_s"]]
    j = hc.merge(gd, on=keys, how="inner", suffixes=("_hc", "_gd"))
    j["speedup"] = j["comm_s_hc"] / j["comm_s_gd"]
    j["runtime_change"] = j["runtime_s_gd"] / j["runtime_s_hc"] - 1
    return j


DEFAULTS = {"network_scale": 1.0, "gpudirect_min_bytes": 0, "mapping": "linear", "gpudirect_collectives_only": False,
            "staged_as_device": False, "scale_nic_with_gpus": False, "coll_algos": ""}


def baseline(df: pd.DataFrame, params: list[str], keep: tuple[str, ...] = ()) -> tuple[pd.DataFrame, dict]:
    """Rows at one value of every varying parameter not in ``keep``: its default (network_scale 1,
    gpudirect_min_bytes 0, mapping linear, ...) when swept, else its smallest value."""
    fixed = {}
    for c in params:
        if c in keep or c in ("gpus_per_node",):
            continue
        vals = df[c].dropna().unique()
        d = DEFAULTS.get(c)
        pick = d if d is not None and any(str(v) == str(d) for v in vals) else sorted(vals, key=str)[0]
        df = df[df[c].astype(str) == str(pick)]
        fixed[c] = pick
    return df, fixed


def _fixed_text(fixed: dict) -> str:
    return ("; " + ", ".join(f"{k}={v}" for k, v in fixed.items())) if fixed else ""


def sweep_figures(df: pd.DataFrame):
    """Yields (file stem, Figure) for a results frame (one figure open at a time)."""
    from . import plots
    params = param_columns(df)
    sp_all = speedup_table(df)
    if len(sp_all):
        sp, fixed = baseline(sp_all, params)
        sp = sp.assign(group=[_group_of(r) for _, r in sp.iterrows()])
        for grp, g in sp.groupby("group", sort=True):
            xcol = "ranks" if "ranks" in g.columns and g["ranks"].notna().all() and g["ranks"].nunique() > 1 else "trace"
            xs = sorted(g[xcol].unique(), key=lambda v: (str(type(v)), v))
            serie_cols = ["machine", "gpus_per_node"] if g["machine"].nunique() > 1 else ["gpus_per_node"]
            series = {}
            for sk, sg in g.groupby(serie_cols, sort=True, dropna=False):
                sk = sk if isinstance(sk, tuple) else (sk,)
                label = ", ".join(f"{v} GPU/node" if c == "gpus_per_node" else str(v) for c, v in zip(serie_cols, sk))
                series[label] = [float(sg.loc[sg[xcol] == x, "speedup"].mean()) if (sg[xcol] == x).any() else np.nan
                                 for x in xs]
            yield f"speedup-{_slug(grp)}", plots.speedup_bars(
                xs, series, title=f"{grp}: GPUDirect speedup in communication{_fixed_text(fixed)}",
                xlabel="ranks" if xcol == "ranks" else "trace")
    # Fig 4: computation vs communication share per trace
    mode = "hostcopy" if "hostcopy" in set(df["mode"]) else df["mode"].iloc[0]
    sub, fixed = baseline(df[df["mode"] == mode], params)
    if len(sub):
        gpn_pick = sub["gpus_per_node"].mode().iloc[0]
        sub = sub[sub["gpus_per_node"] == gpn_pick]
        agg = sub.groupby("trace", sort=True)[["comm_s", "compute_s"]].mean()
        yield "comm-compute", plots.comm_compute_bars(
            list(agg.index), agg["comm_s"], agg["compute_s"], share=True,
            title=f"Computation vs communication ({mode}, {gpn_pick} GPUs/node{_fixed_text(fixed)})")
    # Fig 7: absolute time per GPUs-per-node value, per trace (and per network scale when swept)
    if df["gpus_per_node"].nunique() > 1:
        keep = tuple(c for c in ("network_scale", "scale_nic_with_gpus") if c in params)
        sub, fixed = baseline(df, params, keep=keep)
        keys = ["trace"] + list(keep)
        for key, g in sub.groupby(keys, sort=True, dropna=False):
            key = key if isinstance(key, tuple) else (key,)
            rows = g[["gpus_per_node", "mode", "comm_s", "compute_s"]].to_dict("records")
            modes = [m for m in ("hostcopy", "gpudirect", "as-traced") if m in set(g["mode"])]
            title = f"{key[0]}: time per GPUs/node" + "".join(f", {c}={v}" for c, v in zip(keys[1:], key[1:])) \
                + _fixed_text(fixed)
            yield "gpn-" + "-".join(_slug(k) for k in key), plots.gpn_time_bars(rows, modes, title=title)


def sweep_plot(results: str | Path, outdir: str | Path, html: bool = True) -> list[Path]:
    """Writes the figures (PNG) and, with html, index.html (self-contained) into outdir."""
    from . import plots
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    df = load_results(results)
    if not len(df):
        raise ValueError(f"{results}: no successful points to plot")
    written = []
    pngs = {}
    for name, fig in sweep_figures(df):
        pngs[name] = plots.png_bytes(fig, dpi=110)
        (out / f"{name}.png").write_bytes(pngs[name])
        written.append(out / f"{name}.png")
    if html:
        from .report_html import sweep_report
        written.append(sweep_report(df, pngs).write(out / "index.html"))
    return written

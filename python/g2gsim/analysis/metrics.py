"""Derived metrics of a simulation report: the paper's communication time, POP efficiencies, and the
profile table of seed 000 (Category, Operation, Avg_Total_Time, Avg_Min_Time, Avg_Max_Time,
Instances_per_Process; milliseconds). Definitions: docs/analysis.md."""
from __future__ import annotations

from typing import Any

import numpy as np

from ._common import category, ratio
from .attribution import Attribution

PROFILE_COLUMNS = ["Category", "Operation", "Avg_Total_Time", "Avg_Min_Time", "Avg_Max_Time", "Instances_per_Process"]


def summary(report: dict) -> dict[str, float]:
    """Averages per rank, seconds. ``comm_s`` is the paper's communication time: time in MPI calls plus
    explicit cudaMemcpy (HostCopy applications copy outside MPI; GPU-aware ones inside)."""
    n = max(int(report["nranks"]), 1)
    memcpy = report["per_op"].get("Memcpy", {}).get("total_s", 0.0) / n
    mpi = float(report["comm_time_s"])
    comm = mpi + memcpy
    compute = float(report["compute_time_s"])
    return {
        "runtime_s": float(report["total_time_s"]),
        "mpi_s": mpi,
        "memcpy_s": memcpy,
        "comm_s": comm,
        "compute_s": compute,
        "copy_s": float(report["copy_time_s"]),
        "comm_share": ratio(comm, comm + compute),
        "p2p_messages": int(report["p2p_messages"]),
        "collective_messages": int(report["collective_messages"]),
    }


def pop_metrics(report: dict) -> dict[str, float]:
    """POP efficiencies from the per-rank compute time (useful = Compute/Kernel, outside MPI and copies).

    parallel_efficiency = load_balance * communication_efficiency = avg(compute) / runtime
    load_balance = avg(compute) / max(compute); communication_efficiency = max(compute) / runtime
    device_communication_efficiency = max(compute) / max(compute + copies): the share of the busiest
    device's time not spent moving data between host and device (1.0 when nothing is staged).
    """
    pr = report.get("per_rank") or []
    runtime = float(report["total_time_s"])
    if not pr or runtime <= 0:
        nan = float("nan")
        return {"parallel_efficiency": nan, "load_balance": nan, "communication_efficiency": nan,
                "device_communication_efficiency": nan, "runtime_s": runtime}
    comp = np.array([r["compute_s"] for r in pr])
    copy = np.array([r["copy_s"] for r in pr])
    mx = float(comp.max())
    lb = ratio(float(comp.mean()), mx)
    ce = ratio(mx, runtime)
    dce = ratio(mx, float((comp + copy).max()))
    return {
        "parallel_efficiency": lb * ce if mx > 0 else float("nan"),
        "load_balance": lb,
        "communication_efficiency": ce,
        "device_communication_efficiency": dce,
        "runtime_s": runtime,
    }


def _category_of_label(label: str) -> tuple[str, str]:
    if label.startswith("Memcpy"):
        kind = label.split(" ", 1)[1] if " " in label else "?"
        return "MEMORY_OPER", kind
    c = category(label)
    if label == "Kernel":
        return "CUDA_KERNEL", "Kernel"
    if c == "compute":
        return "COMPUTE", label
    if c == "collective":
        return "collectives", f"MPI_{label}"
    if c in ("p2p", "wait"):
        return "point2point", f"MPI_{label}"
    return "other", label


def profile_tables(report: dict, att: Attribution) -> list[dict[str, Any]]:
    """Two tables in the layout of seed 000 (times in ms): device-side work (compute, kernels, explicit
    copies) and MPI; each ends with Total (sums of the columns, as the seed) and REGION Runtime."""
    n = max(int(report["nranks"]), 1)
    mat = att.rank_label_matrix() * 1e3  # ms per (rank, label)
    counts = att.counts_per_label()
    runtime_ms = float(report["total_time_s"]) * 1e3
    sections: dict[str, list[list]] = {"device": [], "mpi": []}
    for label in mat.columns:
        cat, opname = _category_of_label(str(label))
        if cat == "other":
            continue
        col = mat[label].to_numpy()
        row = [cat, opname, float(col.mean()), float(col.min()), float(col.max()), counts.get(label, 0) / n]
        sections["mpi" if cat in ("collectives", "point2point") else "device"].append(row)
    # HostCopy staging copies inside MPI calls: already part of the MPI rows, shown for information
    pr = report.get("per_rank") or []
    staging_rows = []
    if pr:
        explicit = mat[[c for c in mat.columns if str(c).startswith("Memcpy")]].sum(axis=1).to_numpy() \
            if any(str(c).startswith("Memcpy") for c in mat.columns) else np.zeros(n)
        copy_ms = np.array([r["copy_s"] for r in sorted(pr, key=lambda r: r["rank"])]) * 1e3
        staged = np.clip(copy_ms - explicit, 0.0, None)
        if staged.max() > 0:
            staging_rows.append(["MEMORY_OPER", "staging inside MPI (in MPI rows)", float(staged.mean()),
                                 float(staged.min()), float(staged.max()), float("nan")])
    out = []
    for key, title in (("device", "compute and device memory operations"), ("mpi", "MPI")):
        rows = sorted(sections[key], key=lambda r: (r[0], -r[2]))
        if not rows:
            continue
        tot = ["Total", "Total", sum(r[2] for r in rows), sum(r[3] for r in rows), sum(r[4] for r in rows),
               sum(r[5] for r in rows)]
        extra = staging_rows if key == "device" else []
        out.append({"title": title, "columns": PROFILE_COLUMNS,
                    "rows": rows + extra + [tot, ["REGION", "Runtime", runtime_ms, 0.0, 0.0, 1.0]]})
    return out


def profile_text(tables: list[dict[str, Any]]) -> str:
    """The tables as plain text, one space-separated line per row, as in seed 000."""
    lines = []
    for t in tables:
        lines.append(" ".join(t["columns"]))
        for r in t["rows"]:
            if r[0] == "REGION":
                lines.append(f"{r[0]} {r[1]} {r[2]:.6f} {r[3]:.4f} {r[4]:.4f} {r[5]:.6f}")
            else:
                inst = "nan" if r[5] != r[5] else repr(float(r[5]))
                lines.append(f"{r[0]} {r[1].replace(' ', '_')} {r[2]!r} {r[3]!r} {r[4]!r} {inst}")
        lines.append("")
    return "\n".join(lines)

"""Tables of the calibration and validation results: rich (terminal) and Markdown."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .fit import FitResult, size_label


def _ms(x) -> str:
    if x is None:
        return "-"
    return f"{x * 1e3:.3f}"


def _pct(x) -> str:
    if x is None:
        return "-"
    return f"{100 * x:+.1f}%"


def markdown_table(header: list[str], rows: Iterable[list[str]]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def _from_label(src) -> str:
    """The series a parameter was fitted on: one series name ("pingpong host") or several."""
    return src if isinstance(src, str) else "host " + " + ".join(src)


def params_rows(res: FitResult) -> list[list[str]]:
    d = res.details
    src = {
        "node.pcie.bw": "cudaMemcpy pinned D2H+H2D, slope",
        "node.pcie.latency": "base (not separable)",
        "node.nvlink.kind": "fan-out: {:.2f} x one message".format(d["nvlink_kind"]["fan_out_ratio"]) if "nvlink_kind" in d else "base",
        "node.nvlink.bw": "device ping-pong + ping-ping >= 32 KiB, slope" if "device" in d else "base",
        "node.nvlink.latency": "base (folded into gpudirect_delay)",
        "node.host.shm_bw": (_from_label(d["shm_bw"]["from"]) + f" >= {size_label(d['shm_bw']['sizes_from'])}") if "shm_bw" in d else "base",
        "node.host.shm_latency": ("1/10 of small-message latency (negative rendezvous step)"
                                  if d.get("eager", {}).get("step", 1) <= 0 else "rendezvous step / 2"),
        "mpi.eager_limit": "protocol switch of the host ping-pong curve",
        "mpi.send_overhead": "host ping-pong <= 1 KiB minus shm_latency, halved",
        "mpi.recv_overhead": "same",
        "gpu.copy_delay": "cudaMemcpy pinned intercept minus pcie.latency" if "copy" in d else "base",
        "gpu.gpudirect_delay": "device intercept minus overheads, 2 x shm_latency, NVLink latency" if "device" in d else "base",
    }
    pc = d.get("per_call")
    if pc:
        from .percall import support_text
        for key, pk in (("mpi.call_overhead", "c"), ("mpi.wait_overhead", "w"), ("mpi.device_call_overhead", "d"),
                        ("mpi.send_overhead", "o"), ("mpi.recv_overhead", "o"), ("node.host.shm_latency", "L"),
                        ("mpi.blocking_send_overhead", "b"), ("mpi.factors.gpudirect-p2p", "bd"),
                        ("mpi.factors.host", "ie"), ("mpi.factors.hostcopy", "ih"), ("node.host.shm_bw", "ir"), ("node.host.shm_rank_bw", "ir"),
                        ("gpu.gpudirect_delay", "G"), ("node.nvlink.bw", "inv")):
            src[key] = support_text(pc, pk)
        src["mpi.eager_limit"] = "host eager/rendezvous switch of least joint error"
    forced = (d.get("collectives") or {}).get("forced") or {}
    out = []
    for k, v in res.machine_params().items():
        if k.startswith("collectives.algorithms."):
            op = k.rsplit(".", 1)[1].capitalize()
            s = "forced in the run (Open MPI MCA)" if op in forced else "best-matching simulation"
        else:
            s = src.get(k, "")
        out.append([f"`{k}`", f"`{v}`", s])
    return out


def calib_rows(summary: list[dict]) -> list[list[str]]:
    return [[s["group"], s["range"], str(s["n"]), f"{100 * s['median_abs']:.1f}%", f"{100 * s['worst_abs']:.1f}%",
             f"{100 * s['median_signed']:+.1f}%", "yes" if s["meets_target"] else "**no**"] for s in summary]


CALIB_HEADER = ["benchmark (mode)", "sizes", "points", "median abs error", "worst abs error", "median signed", "meets target"]


def detail_rows(rows: list[dict], kinds=("pingpong", "pingping")) -> tuple[list[str], list[list[str]]]:
    """Per size: measured and predicted of each (kind, mode) series, side by side."""
    cols: dict[str, dict[int, dict]] = {}
    for r in rows:
        if r["kind"] not in kinds:
            continue
        cols.setdefault(f"{r['kind']} {r['mode']}", {})[r["bytes"]] = r
    sizes = sorted({b for c in cols.values() for b in c})
    header = ["size"] + [f"{k} meas / pred (us), err" for k in cols]
    out = []
    for b in sizes:
        line = [size_label(b)]
        for _k, c in cols.items():
            cell = c.get(b)
            line.append("-" if cell is None else f"{cell['measured_s'] * 1e6:.2f} / {cell['predicted_s'] * 1e6:.2f}, "
                                                 f"{100 * cell['error']:+.0f}%")
        out.append(line)
    return header, out


VALID_HEADER = ["workload", "trace", "predicted", "how", "measured comm (ms)", "predicted comm (ms)", "comm error",
                "measured total (ms)", "predicted total (ms)", "total error"]


def valid_rows(rows: list[dict]) -> list[list[str]]:
    out = []
    for r in rows:
        comm_err = r.get("error_comm")
        if r.get("measured_comm_s") is not None and r.get("measured_total_s") and \
                abs(r["measured_comm_s"]) < 0.02 * r["measured_total_s"]:
            comm_err = None                 # communication hidden: a relative error means nothing
        out.append([r["workload"], r["trace"], r["predicted_mode"], r["how"], _ms(r.get("measured_comm_s")),
                    _ms(r.get("predicted_comm_s")), _pct(comm_err), _ms(r.get("measured_total_s")),
                    _ms(r.get("predicted_total_s")), _pct(r.get("error_total"))])
    return out


def rich_table(title: str, header: list[str], rows: list[list[str]]):
    from rich.table import Table
    t = Table(title=title, show_lines=False)
    for h in header:
        t.add_column(h, overflow="fold")
    for r in rows:
        t.add_row(*[str(c).replace("**", "") for c in r])
    return t


def json_ready(x: Any) -> Any:
    """numpy scalars and arrays to plain JSON values."""
    import numpy as np
    if isinstance(x, dict):
        return {str(k): json_ready(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [json_ready(v) for v in x]
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    return x

"""Fit a machine file to calibration measurements (``g2gsim calibrate fit RAW.json -o machine.toml``).

The parameters come from least squares on the closed forms of the data-path models
(``micro.closed_form``; docs/models/host.md, hostcopy.md, gpudirect-p2p.md), each regime on the data
that determines it, errors taken relative to the measured time:

1. cudaMemcpy (pinned, D2H and H2D together, every size): ``copy_delay + pcie.latency`` is the
   intercept, the copy bandwidth the slope (``node.pcie.bw``; ``pcie.latency`` is kept from the base
   file: the two are not separable on one node).
2. host ping-pong below 1 KiB: the small-message latency ``send_overhead + recv_overhead +
   shm_latency`` (split evenly between the two overheads).
3. the eager limit: the size between 1 KiB and 4 MiB where the host ping-pong curve jumps most
   (``eager_break``: the same jump seen from the sizes below and from the sizes above); the jump
   is the rendezvous cost (2 control messages = 2 ``shm_latency``).  A jump down (the library switches to
   a faster single-copy protocol) cannot be expressed: then ``shm_latency`` is a tenth of the
   small-message latency.
4. ``node.host.shm_bw`` from the large-message regime (>= 1 MiB) of ping-ping (``--host-bw-from``),
   minimising the squared log error.  Mind that the model shares one shared-memory link between all
   intra-node host transfers of a node (two opposite flows each get half).
5. device buffers: ping-pong and ping-ping from 32 KiB up give ``gpudirect_delay`` (intercept minus
   the overheads, two control latencies and the NVLink latency) and ``node.nvlink.bw`` (slope);
   ``node.nvlink.kind`` is ``switch`` when one rank sending to three others at once takes about
   three times as long as to one (one port per GPU), else ``all-to-all``.
6. collectives: an algorithm the measurement forced through Open MPI MCA variables (the script's
   linear Scatter/Gather) is written to ``[collectives.algorithms]``; for the others (Bcast) the
   algorithm whose simulation matches the measured curves from 32 KiB to 64 MiB best (median
   absolute log error), on the buffer mode whose point-to-point curves the fit matches best (so a
   poorly fitted path does not pick the algorithm), kept only if it beats the default selection
   rules by 10%.  ``pipeline:1g`` is an unsegmented chain (Open MPI's choice from 1 MiB on 4-7 ranks).

Everything else (NIC, network, reductions, pipelining) comes from the base file.  The written file
cites the run (date, hosts, MPI, UCX, GPU) in comments; :func:`verify` simulates every measured
point with it.
"""
from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from .. import machines
from .micro import KiB, MiB, P2PParams, Series, closed_form, series_from_raw, simulate_series, load_raw

LARGE_FROM = 1 * MiB           # "large-message regime" of the host bandwidth fit
TARGET_FROM = 32 * KiB         # the accuracy target's size split
COLL_SEARCH_MAX = 64 * MiB     # the algorithm search skips larger collectives (slow to simulate)
COLL_CANDIDATES = {"Bcast": ["binomial", "pipeline", "pipeline:1g", "scatter_allgather", "pipelined_binomial", "linear"],
                   "Scatter": ["linear", "binomial"], "Gather": ["linear", "binomial"]}


# ------------------------------------------------------------------------------------------------
# units
# ------------------------------------------------------------------------------------------------
def _sig(x: float, digits: int = 4) -> str:
    s = f"{x:.{digits}g}"
    return s if "e" not in s else f"{x:.{digits}f}".rstrip("0").rstrip(".")


def fmt_bw(b: float) -> str:
    return f"{_sig(b / 1e9)}GB/s"


def fmt_dur(t: float) -> str:
    if t >= 1e-6:
        return f"{_sig(t * 1e6)}us"
    return f"{_sig(t * 1e9)}ns"


def fmt_size(n: int) -> str:
    for unit, k in (("GiB", 1 << 30), ("MiB", MiB), ("KiB", KiB)):
        if n >= k and n % k == 0:
            return f"{n // k}{unit}"
    return str(int(n))


def size_label(n: int) -> str:
    s = fmt_size(int(n))
    return s if not s.isdigit() else f"{s} B"


def parse_bw(v) -> float:
    s = str(v).strip()
    for u, k in (("GiB/s", 1 << 30), ("MiB/s", 1 << 20), ("KiB/s", 1 << 10), ("GB/s", 1e9), ("MB/s", 1e6),
                 ("KB/s", 1e3), ("Gb/s", 1e9 / 8), ("Mb/s", 1e6 / 8), ("B/s", 1)):
        if s.endswith(u):
            return float(s[: -len(u)]) * k
    raise ValueError(f"bandwidth {v!r} needs a unit per second")


def parse_dur(v) -> float:
    s = str(v).strip()
    for u, k in (("ns", 1e-9), ("us", 1e-6), ("ms", 1e-3), ("s", 1.0)):
        if s.endswith(u):
            return float(s[: -len(u)]) * k
    raise ValueError(f"duration {v!r} needs a unit")


def parse_size(v) -> int:
    if isinstance(v, int):
        return v
    s = str(v).strip()
    for u, k in (("GiB", 1 << 30), ("MiB", MiB), ("KiB", KiB), ("GB", 10**9), ("MB", 10**6), ("KB", 1000), ("B", 1)):
        if s.endswith(u):
            return int(float(s[: -len(u)]) * k)
    return int(s)


# ------------------------------------------------------------------------------------------------
# the fit
# ------------------------------------------------------------------------------------------------
@dataclass
class FitResult:
    params: P2PParams
    base_name: str
    base: dict
    gpus: int
    raw_meta: dict
    coll_algos: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)
    details: dict = field(default_factory=dict)     # per-parameter: value, source, data

    def machine_params(self) -> dict:
        p = self.params
        return {
            "node.pcie.bw": fmt_bw(p.copy_bw), "node.pcie.latency": fmt_dur(p.pcie_latency),
            "node.nvlink.kind": p.nvlink_kind, "node.nvlink.bw": fmt_bw(p.nvlink_bw),
            "node.nvlink.latency": fmt_dur(p.nvlink_latency),
            "node.host.shm_bw": fmt_bw(p.shm_bw), "node.host.shm_latency": fmt_dur(p.shm_latency),
            "mpi.eager_limit": fmt_size(p.eager_limit), "mpi.send_overhead": fmt_dur(p.send_overhead),
            "mpi.recv_overhead": fmt_dur(p.recv_overhead), "gpu.copy_delay": fmt_dur(p.copy_delay),
            "gpu.gpudirect_delay": fmt_dur(p.gpudirect_delay),
            **{f"collectives.algorithms.{k.lower()}": v for k, v in self.coll_algos.items()},
        }


def base_params(base: dict) -> P2PParams:
    """P2PParams of a parsed machine file (defaults of docs/machine-files.md where absent)."""
    node = base.get("node", {})
    pcie, nv, host = node.get("pcie", {}), node.get("nvlink", {}), node.get("host", {})
    mpi, gpu = base.get("mpi", {}), base.get("gpu", {})
    pcie_bw = parse_bw(pcie["bw"])
    cpb = gpu.get("copy_per_byte")
    copy_bw = min(pcie_bw, 1 / parse_dur(cpb)) if cpb else pcie_bw
    return P2PParams(
        send_overhead=parse_dur(mpi.get("send_overhead", "300ns")),
        recv_overhead=parse_dur(mpi.get("recv_overhead", "300ns")),
        shm_latency=parse_dur(host.get("shm_latency", "300ns")),
        shm_bw=parse_bw(host.get("shm_bw", "20GB/s")),
        eager_limit=parse_size(mpi.get("eager_limit", 64 * KiB)),
        pcie_latency=parse_dur(pcie.get("latency", "500ns")),
        copy_delay=parse_dur(gpu.get("copy_delay", "2us")),
        copy_bw=copy_bw,
        gpudirect_delay=parse_dur(gpu.get("gpudirect_delay", "4us")),
        nvlink_latency=parse_dur(nv.get("latency", "700ns")),
        nvlink_bw=parse_bw(nv["bw"]) if "bw" in nv else 0.0,
        nvlink_kind=nv.get("kind", "all-to-all" if nv else "none"),
        gpudirect_eager=bool(mpi.get("gpudirect_eager", False)),
    )


def _line_fit(x, t) -> tuple[float, float]:
    """(intercept, slope) minimising the squared relative error of a + s x against t; a, s >= 0."""
    x, t = np.asarray(x, float), np.asarray(t, float)
    A = np.stack([1 / t, x / t], axis=1)
    (a, s), *_ = np.linalg.lstsq(A, np.ones_like(t), rcond=None)
    if s < 0:
        s = 0.0
        a = float(np.sum(1 / t) / np.sum(1 / t**2))
    if a < 0:
        a = 0.0
        s = float(np.sum(x / t) / np.sum(x**2 / t**2))
    return float(a), float(s)


def _golden(f, lo: float, hi: float, iters: int = 80) -> float:
    g = (math.sqrt(5) - 1) / 2
    a, b = lo, hi
    c, d = b - g * (b - a), a + g * (b - a)
    fc, fd = f(c), f(d)
    for _ in range(iters):
        if fc < fd:
            b, d, fd = d, c, fc
            c = b - g * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + g * (b - a)
            fd = f(d)
    return (a + b) / 2


def _find(series: list[Series], kind: str, mode: str, scope: str = "intra", op: str | None = None):
    for s in series:
        if s.kind == kind and s.mode == mode and s.scope == scope and (op is None or s.op == op):
            return s
    return None


def eager_break(s: Series, lo: int = KiB, hi: int = 4 * MiB) -> dict | None:
    """The protocol switch of a ping-pong curve: {'limit': the last size below it, 'step': the jump
    (s)}.  For each pair of neighbouring sizes, the jump is measured twice: the time just above
    against the line through the two sizes below, and the line through the two sizes above, taken
    back to the size below, against the time there.  A switch shows the same sign both ways (a
    bend in the curve does not); the smaller of the two is the step, and the switch is where it is
    largest relative to the time."""
    x, t = s.sizes.astype(float), s.t
    best = None
    for i in range(1, len(x) - 2):
        if not (lo <= x[i] < hi):
            continue
        fwd = t[i + 1] - (t[i] + (t[i] - t[i - 1]) * (x[i + 1] - x[i]) / (x[i] - x[i - 1]))
        back = (t[i + 1] - (t[i + 2] - t[i + 1]) * (x[i + 1] - x[i]) / (x[i + 2] - x[i + 1])) - t[i]
        if fwd * back <= 0:
            continue
        step = float(fwd if abs(fwd) < abs(back) else back)
        rel = abs(step) / t[i + 1]
        if best is None or rel > best["rel"]:
            best = {"limit": int(x[i]), "step": step, "rel": rel}
    return best


def fit(raw, base: str | Path = "h200x4", host_bw_from: str = "pingping", large_from: int = LARGE_FROM,
        collectives: bool = True, workdir=None) -> FitResult:
    """Fits the machine parameters to the raw measurements; see the module docstring."""
    raw = load_raw(raw)
    series = series_from_raw(raw)
    text, label = machines.resolve(base)
    base_d = tomllib.loads(text)
    p = base_params(base_d)
    notes: list[str] = []
    det: dict[str, Any] = {}
    gpus = int((raw.get("gpu") or {}).get("count_per_node") or base_d["node"]["gpus"])

    # 1. cudaMemcpy
    cps = [s for s in series if s.kind == "memcpy" and s.op == "pinned"]
    if cps:
        x = np.concatenate([s.sizes for s in cps])
        t = np.concatenate([s.t for s in cps])
        a, sl = _line_fit(x, t)
        p.copy_bw = 1 / sl
        p.copy_delay = max(0.0, a - p.pcie_latency)
        if a < p.pcie_latency:
            p.pcie_latency = a
        det["copy"] = {"intercept_s": a, "bw": p.copy_bw, "series": [s.name for s in cps]}
    else:
        notes.append("no cudaMemcpy measurements: copy_delay and pcie.bw kept from the base file")

    # 2./3. host latency and eager limit
    hp = _find(series, "pingpong", "host")
    if hp is None:
        raise ValueError("the raw file has no host ping-pong: nothing to fit")
    small = hp.sizes <= KiB
    c, _ = _line_fit(hp.sizes[small], hp.t[small]) if small.sum() >= 2 else (float(hp.t.min()), 0.0)
    br = eager_break(hp)
    if br is not None:
        p.eager_limit = br["limit"]
        if br["step"] > 0:
            p.shm_latency = min(br["step"] / 2, 0.4 * c)
            why = f"half the rendezvous step of {br['step'] * 1e6:.2f} us"
        else:
            p.shm_latency = 0.1 * c
            why = (f"the step at the protocol switch is {br['step'] * 1e6:+.2f} us (faster above: a "
                   f"single-copy rendezvous), which the model cannot express; shm_latency is 1/10 of "
                   f"the small-message latency")
            notes.append(f"host eager limit {fmt_size(br['limit'])}: {why}")
        det["eager"] = {**br, "why": why}
    else:
        p.shm_latency = 0.1 * c
    o = max(0.0, c - p.shm_latency)
    p.send_overhead = p.recv_overhead = o / 2
    det["host_latency"] = {"small_message_s": c, "o_s": o / 2, "o_r": o / 2, "L": p.shm_latency}

    # 4. host bandwidth
    srcs = {"pingping": ["pingping"], "pingpong": ["pingpong"], "both": ["pingpong", "pingping"]}[host_bw_from]
    hb = [s for s in series if s.mode == "host" and s.kind in srcs and s.scope == "intra"]

    def host_err(logB: float) -> float:
        q = replace(p, shm_bw=math.exp(logB))
        e = 0.0
        for s in hb:
            m = s.sizes >= large_from
            if m.any():
                e += float(np.sum(np.log(closed_form(s.kind, "host", s.sizes[m], q) / s.t[m]) ** 2))
        return e

    if any((s.sizes >= large_from).any() for s in hb):
        p.shm_bw = math.exp(_golden(host_err, math.log(1e8), math.log(1e13)))
        det["shm_bw"] = {"bw": p.shm_bw, "from": [s.name for s in hb], "sizes_from": large_from}
    else:
        notes.append(f"no host measurement of {large_from} B or more: shm_bw kept from the base file")

    # 5. device buffers
    dv = [s for s in series if s.mode == "device" and s.kind in ("pingpong", "pingping") and s.scope == "intra"]
    if dv:
        x = np.concatenate([s.sizes[s.sizes >= TARGET_FROM] for s in dv])
        t = np.concatenate([s.t[s.sizes >= TARGET_FROM] for s in dv])
        if len(x) >= 2:
            a, sl = _line_fit(x, t)
            p.nvlink_bw = 1 / sl if sl > 0 else p.nvlink_bw
            fo = _find(series, "fan-out", "device")
            pp = _find(series, "pingpong", "device")
            kind = p.nvlink_kind
            if fo is not None and pp is not None and len(fo.sizes):
                n = int(fo.sizes.max())
                one = float(np.interp(n, pp.sizes, pp.t))
                ratio = float(fo.t[np.argmax(fo.sizes)] / one)
                npeer = len(fo.meta.get("peers", [])) or 3
                kind = "switch" if ratio > 0.6 * npeer else "all-to-all"
                det["nvlink_kind"] = {"fan_out_ratio": ratio, "peers": npeer, "size": n, "kind": kind}
            p.nvlink_kind = kind
            fixed = p.send_overhead + p.recv_overhead + 2 * p.shm_latency + p.nvlink_path_latency
            p.gpudirect_delay = max(0.0, a - fixed)
            if a < fixed:
                notes.append(f"device intercept {a * 1e6:.2f} us is below the overheads + control + NVLink "
                             f"latencies ({fixed * 1e6:.2f} us): gpudirect_delay = 0")
            det["device"] = {"intercept_s": a, "bw": p.nvlink_bw, "sizes_from": TARGET_FROM,
                             "series": [s.name for s in dv]}
    else:
        notes.append("no device-buffer measurements (MPI not CUDA-aware?): NVLink and gpudirect_delay kept "
                     "from the base file")

    res = FitResult(params=p, base_name=label, base=base_d, gpus=gpus, raw_meta=_meta(raw), notes=notes,
                    details=det)
    if collectives:
        res.coll_algos, res.details["collectives"] = choose_collectives(series, res, workdir=workdir,
                                                                         forced=forced_algorithms(raw))
    return res


OMPI_ALGOS = {"scatter": {"1": "linear", "2": "binomial"}, "gather": {"1": "linear", "2": "binomial"},
              "bcast": {"1": "linear", "3": "pipeline", "6": "binomial", "8": "scatter_allgather"}}


def forced_algorithms(raw: dict) -> dict:
    """Collective algorithms the run forced through Open MPI's coll/tuned MCA variables."""
    mca = (raw.get("options") or {}).get("mca_set") or {}
    env = {**(raw.get("env") or {}), **mca}
    if env.get("OMPI_MCA_coll_tuned_use_dynamic_rules") != "1":
        return {}
    out = {}
    for op, names in OMPI_ALGOS.items():
        v = env.get(f"OMPI_MCA_coll_tuned_{op}_algorithm")
        if v in names:
            out[op.capitalize()] = names[v]
    return out


def _meta(raw: dict) -> dict:
    mpi = raw.get("mpi", {})
    gpu = raw.get("gpu") or {}
    return {"date": raw.get("date"), "hosts": raw.get("hosts"), "nranks": raw.get("nranks"),
            "mpi": mpi.get("library"), "mpi4py": mpi.get("mpi4py"), "ucx": (raw.get("ucx") or {}).get("version"),
            "ucx_env": (raw.get("ucx") or {}).get("env"), "gpu": gpu.get("name"), "driver": gpu.get("driver"),
            "runtime": gpu.get("runtime"), "cupy": gpu.get("cupy"), "command": raw.get("command"),
            "cuda_aware": raw.get("cuda_aware"), "mca": (raw.get("options") or {}).get("mca_set")}


# ------------------------------------------------------------------------------------------------
# collectives: pick the algorithm whose simulation matches
# ------------------------------------------------------------------------------------------------
def _log_err(pred, meas) -> float:
    return float(np.median(np.abs(np.log(np.asarray(pred) / np.asarray(meas)))))


def reference_mode(series: list[Series], p: P2PParams) -> str:
    """The buffer mode whose point-to-point curves the fitted closed forms match best (median absolute
    relative error from 32 KiB): collective algorithms are chosen on that mode's collectives, so that
    the choice reflects the algorithm's structure rather than the errors of a poorly fitted path."""
    best, err = "host", float("inf")
    for mode in ("host", "staged", "device"):
        es = [np.abs(closed_form(s.kind, mode, s.sizes, p) / s.t - 1)[s.sizes >= TARGET_FROM]
              for s in series if s.mode == mode and s.kind in ("pingpong", "pingping") and s.scope == "intra"]
        es = [e for e in es if len(e)]
        if es:
            e = float(np.median(np.concatenate(es)))
            if e < err:
                best, err = mode, e
    return best


def choose_collectives(series: list[Series], res: FitResult, workdir=None,
                       forced: dict | None = None) -> tuple[dict, dict]:
    colls = [s for s in series if s.kind == "collective"]
    if not colls:
        return {}, {}
    chosen: dict[str, str] = dict(forced or {})
    ref = reference_mode(series, res.params)
    report: dict[str, Any] = {"forced": dict(forced or {}), "reference_mode": ref,
                              "sizes": f"{size_label(TARGET_FROM)} - {size_label(COLL_SEARCH_MAX)}"}
    with machine_file(res) as path:
        for op, cands in COLL_CANDIDATES.items():
            ss = [s for s in colls if s.op == op and s.mode == ref] or [s for s in colls if s.op == op]
            ss = [replace(s, sizes=s.sizes[m], t=s.t[m]) for s in ss
                  for m in [(s.sizes >= TARGET_FROM) & (s.sizes <= COLL_SEARCH_MAX)]]
            ss = [s for s in ss if len(s.sizes)]
            if not ss or op in chosen:
                continue
            scores = {"default": sum(_log_err(simulate_series(s, path, workdir=workdir), s.t) for s in ss)}
            for a in cands:
                try:
                    scores[a] = sum(_log_err(simulate_series(s, path, workdir=workdir,
                                                             coll_algos=f"{op.lower()}={a}"), s.t) for s in ss)
                except Exception as e:      # noqa: BLE001 - an algorithm that cannot run this case
                    scores[a] = float("inf")
                    report.setdefault("errors", []).append(f"{op}={a}: {e}")
            best = min(scores, key=scores.get)
            report[op] = {k: round(v / len(ss), 4) for k, v in scores.items()}
            if best != "default" and scores[best] < 0.9 * scores["default"]:
                chosen[op] = best
    return chosen, report


class machine_file:
    """Context manager: the fit result written to a temporary machine file."""

    def __init__(self, res: FitResult):
        self.res = res

    def __enter__(self) -> Path:
        import tempfile
        self.td = tempfile.TemporaryDirectory()
        path = Path(self.td.name) / "fitted.toml"
        path.write_text(to_toml(self.res))
        return path

    def __exit__(self, *a):
        self.td.cleanup()


# ------------------------------------------------------------------------------------------------
# the machine file
# ------------------------------------------------------------------------------------------------
def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    raise TypeError(f"cannot write {v!r} to TOML")


def to_toml(res: FitResult, name: str = "h200x4-calibrated", raw_path: str | None = None,
            command: str | None = None) -> str:
    """The fitted machine file, citing the run in comments."""
    p, m, d = res.params, res.raw_meta, res.details
    base = res.base
    hosts = ", ".join(m.get("hosts") or [])
    L = []
    c = L.append
    c(f"# {name}: fitted by `g2gsim calibrate fit` to measurements of {m.get('date')} on {hosts}")
    c(f"#   ({m.get('nranks')} ranks, one per GPU).")
    c(f"# MPI: {m.get('mpi')}; mpi4py {m.get('mpi4py')}")
    ucx_env = " ".join(f"{k}={v}" for k, v in sorted((m.get("ucx_env") or {}).items()))
    c(f"# UCX: {m.get('ucx')} {ucx_env}".rstrip())
    if m.get("mca"):
        c("# MCA: " + " ".join(f"{k}={v}" for k, v in sorted(m["mca"].items())))
    c(f"# GPU: {m.get('gpu')} (CUDA driver {m.get('driver')}, runtime {m.get('runtime')}, cupy {m.get('cupy')});"
      f" device buffers to MPI: {'yes' if m.get('cuda_aware') else 'no'}")
    if raw_path:
        c(f"# Raw measurements: {raw_path}")
    if command:
        c(f"# Reproduce: {command}")
    c(f"# Base file for what was not measured: {res.base_name}.  Method: python/g2gsim/calibrate/fit.py;")
    c("# accuracy: docs/validation/h200x4.md.")
    for n in res.notes:
        c("# Note: " + n)
    c("schema_version = 1")
    c(f"name = {_toml_value(name)}")
    gpu_name = m.get("gpu") or base.get("name", "")
    date = (m.get("date") or "?")[:10]
    c(f"description = {_toml_value(f'{gpu_name} x {res.gpus} node, calibrated {date}')}")
    c(f"sources = {_toml_value('g2gsim calibrate fit; measurements ' + (raw_path or 'raw JSON'))}")
    c("")
    c("[node]")
    c(f"gpus = {res.gpus}")
    c("")
    c("[node.pcie]")
    cp = d.get("copy")
    c(f"bw = {_toml_value(fmt_bw(p.copy_bw))}" + ("          # fitted: cudaMemcpy pinned D2H + H2D, 1 B-256 MiB, slope" if cp else "  # base"))
    c(f"latency = {_toml_value(fmt_dur(p.pcie_latency))}" + "       # base (one node: not separable from gpu.copy_delay)")
    c("")
    c("[node.nvlink]")
    nk = d.get("nvlink_kind")
    why = (f"  # fitted: sending to {nk['peers']} peers at once takes {nk['fan_out_ratio']:.2f} x one "
           f"({size_label(nk['size'])})" if nk else "  # base")
    c(f"kind = {_toml_value(p.nvlink_kind)}" + why)
    dv = d.get("device")
    c(f"bw = {_toml_value(fmt_bw(p.nvlink_bw))}" + ("           # fitted: device ping-pong + ping-ping >= 32 KiB, slope" if dv else "  # base"))
    c(f"latency = {_toml_value(fmt_dur(p.nvlink_latency))}" + "       # base (folded into gpu.gpudirect_delay)")
    c("")
    c("[node.host]")
    sb = d.get("shm_bw")
    c(f"shm_bw = {_toml_value(fmt_bw(p.shm_bw))}" + (f"        # fitted: {' + '.join(sb['from'])} >= {size_label(sb['sizes_from'])} (one link shared by all intra-node host transfers)" if sb else "  # base"))
    c(f"shm_latency = {_toml_value(fmt_dur(p.shm_latency))}" + "  # fitted: " + (d.get("eager", {}).get("why", "1/10 of the small-message latency")))
    c("")
    for sect in ("nic",):
        t = base.get("node", {}).get(sect)
        if t:
            c(f"[node.{sect}]                  # base: not measured (one node)")
            for k, v in t.items():
                c(f"{k} = {_toml_value(v)}")
            c("")
    if base.get("network"):
        c("[network]                   # base: not measured (one node)")
        for k, v in base["network"].items():
            if not isinstance(v, dict):
                c(f"{k} = {_toml_value(v)}")
        c("")
    c("[mpi]")
    hl = d.get("host_latency", {})
    c(f"eager_limit = {_toml_value(fmt_size(p.eager_limit))}" + "  # fitted: break of the host ping-pong curve")
    c(f"send_overhead = {_toml_value(fmt_dur(p.send_overhead))}" + (f"  # fitted: host ping-pong <= 1 KiB, {hl.get('small_message_s', 0) * 1e6:.3f} us one way, minus shm_latency, halved" if hl else ""))
    c(f"recv_overhead = {_toml_value(fmt_dur(p.recv_overhead))}")
    for k, v in base.get("mpi", {}).items():
        if k not in ("eager_limit", "send_overhead", "recv_overhead"):
            c(f"{k} = {_toml_value(v)}  # base")
    c("")
    c("[gpu]")
    c(f"copy_delay = {_toml_value(fmt_dur(p.copy_delay))}" + ("  # fitted: cudaMemcpy pinned intercept minus pcie.latency" if cp else "  # base"))
    c(f"gpudirect_delay = {_toml_value(fmt_dur(p.gpudirect_delay))}" + ("  # fitted: device intercept minus overheads, 2 x shm_latency, NVLink latency" if dv else "  # base"))
    for k, v in base.get("gpu", {}).items():
        if k not in ("copy_delay", "gpudirect_delay", "copy_per_byte"):
            c(f"{k} = {_toml_value(v)}  # base")
    if base.get("cpu"):
        c("")
        c("[cpu]")
        for k, v in base["cpu"].items():
            c(f"{k} = {_toml_value(v)}  # base")
    coll = dict(base.get("collectives", {}))
    algos = dict(coll.pop("algorithms", {}) or {})
    for op, a in res.coll_algos.items():
        algos[op.lower()] = a
    if coll:
        c("")
        c("[collectives]")
        for k, v in coll.items():
            c(f"{k} = {_toml_value(v)}")
    if algos:
        c("")
        forced = (d.get("collectives") or {}).get("forced") or {}
        c("[collectives.algorithms]     # " + ("; ".join(f"{k}: forced in the run (MCA)" for k in forced) +
                                              ("; " if forced else "") + "others: best-matching simulation"))
        for k, v in algos.items():
            c(f"{k} = {_toml_value(v)}")
    return "\n".join(L) + "\n"


def write_machine(res: FitResult, path: str | Path, name: str | None = None, raw_path: str | None = None,
                  command: str | None = None) -> Path:
    path = Path(path)
    nm = name or path.name.removesuffix(".toml")
    path.write_text(to_toml(res, name=nm, raw_path=raw_path, command=command))
    machines.check(path)
    return path

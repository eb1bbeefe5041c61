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
from ..units import parse_bandwidth, parse_duration_s, parse_size
from . import percall
from .micro import KiB, MiB, P2PParams, Series, closed_form, copy_time, load_raw, series_from_raw, simulate_series

LARGE_FROM = 1 * MiB           # "large-message regime" of the host bandwidth fit
BIN_TOL = 0.03                 # a size bin grows while one line fits all its points within this
TARGET_FROM = 32 * KiB         # the accuracy target's size split
COLL_SEARCH_MAX = 64 * MiB     # the algorithm search skips larger collectives (slow to simulate)
COLL_CANDIDATES = {"Bcast": ["binomial", "pipeline", "pipeline:1g", "scatter_allgather", "pipelined_binomial", "linear"],
                   "Scatter": ["linear", "linear_sequential", "binomial"],
                   "Gather": ["linear", "linear_sequential", "binomial"]}


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


# machine-file values: the core's parser (g2gsim.units), seconds where the fit works in seconds
parse_bw = parse_bandwidth
parse_dur = parse_duration_s


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
    # the largest message the MPI series measured (0: none): written as calibrated_max_bytes
    max_bytes: int = 0
    # the most ranks one MPI series ran on (0: none): written as calibrated_ranks
    max_ranks: int = 0
    notes: list = field(default_factory=list)
    details: dict = field(default_factory=dict)     # per-parameter: value, source, data

    def machine_params(self) -> dict:
        p = self.params
        return {
            "node.pcie.bw": fmt_bw(p.copy_bw), "node.pcie.latency": fmt_dur(p.pcie_latency),
            "node.nvlink.kind": p.nvlink_kind, "node.nvlink.bw": fmt_bw(p.nvlink_bw),
            "node.nvlink.latency": fmt_dur(p.nvlink_latency),
            "node.host.shm_bw": fmt_bw(p.shm_bw), "node.host.shm_latency": fmt_dur(p.shm_latency),
            **({"node.host.shm_rank_bw": fmt_bw(p.shm_rank_bw)} if p.shm_rank_bw else {}),
            **({"node.host.shm_rank_out_bw": fmt_bw(p.shm_rank_out_bw)} if p.shm_rank_out_bw else {}),
            "mpi.call_overhead": fmt_dur(p.call_overhead),
            **({"mpi.wait_overhead": fmt_dur(p.wait_overhead)} if p.wait_overhead is not None else {}),
            **({"mpi.device_call_overhead": fmt_dur(p.device_call_overhead)} if p.device_call_overhead else {}),
            **({"mpi.blocking_send_overhead": fmt_dur(p.blocking_send_overhead)} if p.blocking_send_overhead else {}),
            **({"mpi.gap": fmt_dur(p.gap)} if p.gap else {}),
            **({"mpi.device_gap": fmt_dur(p.device_gap)} if p.device_gap is not None else {}),
            "mpi.eager_limit": fmt_size(p.eager_limit), "mpi.send_overhead": fmt_dur(p.send_overhead),
            "mpi.recv_overhead": fmt_dur(p.recv_overhead), "gpu.copy_delay": fmt_dur(p.copy_delay),
            "gpu.gpudirect_delay": fmt_dur(p.gpudirect_delay),
            **({"gpu.copy_engines": p.copy_engines, "gpu.copy_engine_bw": fmt_bw(p.copy_engine_bw)}
               if p.copy_engines and p.copy_engine_bw is not None else {}),
            **{f"collectives.algorithms.{k.lower()}": v for k, v in self.coll_algos.items()},
            **{f"mpi.factors.{path}": [factor_text(b) for b in bins] for path, bins in p.factors.items()},
        }


def factor_text(b: dict) -> str:
    """One bin in a line: '<= 128KiB: bw x0.52, delay 1.2us, o_s 0.1us'."""
    parts = [("<= " + fmt_size(int(b["max_bytes"]))) if math.isfinite(b["max_bytes"]) else "rest",
             f"bw x{_sig(b['bw_factor'], 3)}"]
    if b.get("lat_factor", 1.0) != 1.0:
        parts.append(f"lat x{_sig(b['lat_factor'], 3)}")
    if b.get("delay"):
        parts.append(f"delay {fmt_dur(b['delay'])}")
    if b.get("send_overhead") is not None:
        parts.append(f"o_s {fmt_dur(b['send_overhead'])}")
    if b.get("recv_overhead") is not None:
        parts.append(f"o_r {fmt_dur(b['recv_overhead'])}")
    if b.get("blocking_send_overhead"):
        parts.append(f"blocking +{fmt_dur(b['blocking_send_overhead'])}")
    return ", ".join(parts)


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
        call_overhead=parse_dur(mpi.get("call_overhead", "0ns")),
        device_call_overhead=parse_dur(mpi.get("device_call_overhead", "0ns")),
        wait_overhead=parse_dur(mpi["wait_overhead"]) if "wait_overhead" in mpi else None,
        blocking_send_overhead=parse_dur(mpi.get("blocking_send_overhead", "0ns")),
        gap=parse_dur(mpi.get("gap", "0ns")),
        device_gap=parse_dur(mpi["device_gap"]) if "device_gap" in mpi else None,
        shm_rank_bw=parse_bw(host["shm_rank_bw"]) if "shm_rank_bw" in host else None,
        shm_rank_out_bw=parse_bw(host["shm_rank_out_bw"]) if "shm_rank_out_bw" in host else None,
        factors=_factors_from_toml([e for e in mpi.get("factors", [])
                                    if int(e.get("active_ranks", 1)) <= 1 and "collective" not in e]),
        load_factors=_factors_from_toml([e for e in mpi.get("factors", [])
                                         if int(e.get("active_ranks", 1)) > 1 and "collective" not in e]),
        coll_factors={(op, path): bins for op in {e["collective"] for e in mpi.get("factors", []) if "collective" in e}
                      for path, bins in _factors_from_toml([e for e in mpi.get("factors", [])
                                                            if e.get("collective") == op]).items()},
        load_ranks=max([int(e.get("active_ranks", 1)) for e in mpi.get("factors", [])] + [0]),
    )


def _factors_from_toml(entries: list) -> dict:
    out: dict[str, list] = {}
    for e in entries:
        out.setdefault(e["path"], []).append({
            "max_bytes": parse_size(e["max_bytes"]) if "max_bytes" in e else float("inf"),
            "bw_factor": float(e.get("bw_factor", 1.0)), "lat_factor": float(e.get("lat_factor", 1.0)),
            "delay": parse_dur(e["delay"]) if "delay" in e else 0.0,
            "send_overhead": parse_dur(e["send_overhead"]) if "send_overhead" in e else None,
            "recv_overhead": parse_dur(e["recv_overhead"]) if "recv_overhead" in e else None,
            "blocking_send_overhead": parse_dur(e["blocking_send_overhead"]) if "blocking_send_overhead" in e else 0.0})
    return out


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


def _small_latency(s: Series) -> float:
    small = s.sizes <= KiB
    if small.sum() >= 2:
        a, _ = _line_fit(s.sizes[small], s.t[small])
        return a
    return float(s.t.min())


def split_call_overhead(pp: float, pi: float | None) -> tuple[float, float]:
    """(call overhead c, one-way message time X) from the small-message ping-pong one-way time
    ``pp = c + X`` and ping-ping exchange ``pi = 2c + max(c, X)`` (Irecv, Isend, Waitall)."""
    if pi is None or pi <= pp:
        return 0.0, pp
    c = pi / 3
    if 0 < pp - c <= c:
        return c, pp - c
    c = pi - pp
    if 0 <= c <= 2 * pp - pi:
        return c, 2 * pp - pi
    return 0.0, pp


def _concurrency_ratio(series, kind: str, mode: str, ref: Series, large_from: int):
    """(peers, median ratio of a concurrency series' time to the reference curve's) over the sizes
    >= large_from they share; (peers, None) without data."""
    s = _find(series, kind, mode)
    if s is None or ref is None:
        return 3, None
    npeer = len(s.meta.get("peers", [])) or 3
    m = s.sizes >= large_from
    if not m.any():
        return npeer, None
    r = [float(t / np.interp(x, ref.sizes, ref.t)) for x, t in zip(s.sizes[m], s.t[m])]
    return npeer, float(np.median(r))


def one_way_targets(series, mode: str, p: P2PParams):
    """Sizes, the nonblocking one-way times T(b) of ``mode`` that the size bins' lines must
    reproduce, the blocking one-way times T_blk(b) (their difference is the bins'
    ``blocking_send_overhead``), and the series used.

    The calibration's ping-pong uses blocking MPI_Send / MPI_Recv; with Open MPI's pml ucx a
    blocking send of some sizes costs more than the same message sent with Isend
    (docs/validation/h200x4/probe).  So T comes from the nonblocking series: a nonblocking
    ping-pong (``pingpong-nb``: one way = max(c + T, 2c)) where measured, else ping-ping (one
    exchange = 2c + max(c, T)); T_blk from the blocking ping-pong (one way = c + T_blk), staging
    copies removed in mode staged.  Where the nonblocking series cannot determine T (its time is
    the call overheads' alone, or ping-ping's flows share one node link), T = T_blk; where the
    blocking ping-pong is faster than ping-ping's T, the split that errs equally on both."""
    pp = _find(series, "pingpong", mode)
    pnb = _find(series, "pingpong-nb", mode)
    pi = _find(series, "pingping", mode)
    if pp is None:
        return None, None, None, []
    c = p.call_overhead
    cp = 2 * copy_time(pp.sizes, p) if mode == "staged" else 0.0
    t_blk = np.maximum(pp.t - c - cp, 1e-9)
    used = [pp.name]
    T = t_blk.copy()
    # on one shared node link a ping-ping's T is not a single message's
    shared = mode != "device" and p.shm_rank_bw is None
    if pnb is not None and np.array_equal(pnb.sizes, pp.sizes):
        a = pnb.t - cp
        T = np.where(a > 2 * c, a - c, T)
        used.append(pnb.name)
    elif pi is not None and np.array_equal(pi.sizes, pp.sizes) and not shared:
        a = pi.t - cp - 2 * c
        # where the blocking ping-pong is not slower than ping-ping's T, ping-ping's two opposite
        # transfers cost more than one message each (both ranks copy in and out at once: host eager,
        # device rendezvous), which no per-message model expresses: there T errs equally and
        # oppositely on the two curves, (c + T) / pp - 1 = 1 - (2c + T) / pi, as before the split
        a_pp, a_pi = pp.t - cp, pi.t - cp
        T_eq = (2 - c / a_pp - 2 * c / a_pi) / (1 / a_pp + 1 / a_pi)
        T = np.where(a > c, np.where(t_blk > a, a, np.where(T_eq > c, T_eq, t_blk)), T)
        used.append(pi.name)
    return pp.sizes.astype(float), np.maximum(T, 1e-9), t_blk, used


def _fixed(mode: str, p: P2PParams, b: float) -> float:
    """The size-independent part of T(b) without factors."""
    L = p.shm_latency
    if mode == "device":
        return p.send_overhead + p.recv_overhead + 2 * L + p.gpudirect_delay + p.nvlink_path_latency
    return p.send_overhead + p.recv_overhead + L + (2 * L if b > p.eager_limit else 0.0)


def _blocking_extra(x, T_blk, a, sl) -> tuple[float, float]:
    """(blocking_send_overhead >= 0, worst relative error of line + it on T_blk): the median of the
    blocking times' residuals over the segment's nonblocking line."""
    line = a + sl * x
    e = float(np.median(T_blk - line))
    # below 2% of the bin's time (and 50 ns) the residual is noise, not a blocking cost
    e = e if e > max(50e-9, 0.02 * float(np.median(line))) else 0.0
    return e, float(np.max(np.abs((line + e) / T_blk - 1)))


def fit_bins(x, T, mode: str, p: P2PParams, tol: float = 0.03, T_blk=None) -> tuple[list, list]:
    """Size bins of [[mpi.factors]] for one path: the sweep's sizes are cut into segments, each
    grown from the smallest size while one line a + b/B' (intercept and bandwidth >= 0, least
    squares in relative error) stays within ``tol`` of every point of T (the nonblocking one-way
    times), the line plus one constant (the bin's ``blocking_send_overhead``, the median residual
    of the blocking times ``T_blk``, >= 0) within ``tol`` of every point of T_blk, and never across
    the eager limit.  A segment becomes a bin up to its largest size (the last is open-ended):
    bw_factor = B' / B (B the path's reference bandwidth) and the intercept minus the fixed costs
    as a delay (or, when negative, a smaller send / receive overhead)."""
    if T_blk is None:
        T_blk = T
    B = p.nvlink_bw if mode == "device" else p.host_flow_bw(1)
    n = len(x)
    segs = []
    i = 0
    while i < n:
        j = i + 1
        best: tuple | None = None
        while j <= n:
            if j > i + 1 and mode != "device" and (x[i] <= p.eager_limit) != (x[j - 1] <= p.eager_limit):
                break
            if j - i >= 2:
                a, sl = _line_fit(x[i:j], T[i:j])
            else:
                f0 = _fixed(mode, p, x[i])
                a, sl = (f0, (T[i] - f0) / x[i]) if T[i] > f0 else (T[i], 0.0)
            err = float(np.max(np.abs((a + sl * x[i:j]) / T[i:j] - 1)))
            xb, err_b = _blocking_extra(x[i:j], T_blk[i:j], a, sl)
            if j - i >= 2 and max(err, err_b) > tol:
                break
            best = (j, a, sl, err, xb, err_b)
            j += 1
        assert best is not None                # the first candidate always fits
        j, a, sl, err, xb, err_b = best
        segs.append((i, j, a, sl, err, xb, err_b))
        i = j
    bins, info = [], []
    for k, (i, j, a, sl, err, xb, err_b) in enumerate(segs):
        f = min(1e3, max(1e-3, 1 / (sl * B))) if sl > 0 else 1e3
        extra = a - _fixed(mode, p, x[j - 1])
        b_ = {"max_bytes": int(x[j - 1]) if k < len(segs) - 1 else float("inf"), "bw_factor": f,
              "lat_factor": 1.0, "delay": 0.0, "send_overhead": None, "recv_overhead": None}
        if extra >= 0 or mode == "device":
            b_["delay"] = extra
        else:
            so = p.send_overhead + extra
            b_["send_overhead"] = max(0.0, so)
            if so < 0:
                b_["recv_overhead"] = max(0.0, p.recv_overhead + so)
        bins.append(b_)
        if xb > 0:
            b_["blocking_send_overhead"] = xb
        info.append({"sizes": [int(v) for v in x[i:j]], "intercept_s": a,
                     "bw": (1 / sl) if sl > 0 else None, "max_rel_err": err,
                     "blocking_residual_s": [float(v) for v in T_blk[i:j] - (a + sl * x[i:j])],
                     "blocking_send_overhead_s": xb, "blocking_max_rel_err": err_b})
    return bins, info


def fit(raw, base: str | Path = "h200x4", host_bw_from: str = "pingpong", large_from: int = LARGE_FROM,
        collectives: bool = True, workdir=None, factors: bool = True, tol: float = BIN_TOL,
        ring: bool = False, coll_bins: bool = False, engines: bool = True, bins: bool = False,
        coll_rates: bool = True) -> FitResult:
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
        # the fit's residual spread of the latency: each small copy's time minus the fitted
        # per-byte part, less pcie.latency (the sizes where the latency is most of the time)
        small = x <= 64 * 1024
        lat = (t[small] - sl * x[small]) - p.pcie_latency if small.any() else np.array([p.copy_delay])
        det["copy"] = {"intercept_s": a, "bw": p.copy_bw, "series": [s.name for s in cps],
                       "copy_delay_spread_s": [max(0.0, float(lat.min())), max(0.0, float(lat.max()))]}
    else:
        notes.append("no cudaMemcpy measurements: copy_delay and pcie.bw kept from the base file")
    # pageable copies: their own line, reported only (a trace does not say whether a copy's host
    # buffer is pageable, so no machine key could be used by the replay: docs/calibration.md)
    pg = {s.mode: _line_fit(s.sizes, s.t) for s in series if s.kind == "memcpy" and s.op == "pageable"}
    if pg:
        det["pageable"] = {k: {"intercept_s": a, "bw": (1 / sl) if sl > 0 else None} for k, (a, sl) in pg.items()}
        notes.append("pageable cudaMemcpy (reported, not written: traces do not mark pageable buffers): "
                     + ", ".join(f"{k} {fmt_dur(a)} + size / {fmt_bw(1 / sl) if sl > 0 else 'inf'}"
                                 for k, (a, sl) in pg.items()))

    # 2./3. call overhead, host latency and eager limit
    hp = _find(series, "pingpong", "host")
    if hp is None:
        raise ValueError("the raw file has no host ping-pong: nothing to fit")
    hpi = _find(series, "pingping", "host")
    pp_s = _small_latency(hp)
    pi_s = _small_latency(hpi) if hpi is not None else None
    c, X = split_call_overhead(pp_s, pi_s)
    p.call_overhead = c
    br = eager_break(hp)
    if br is not None:
        p.eager_limit = br["limit"]
        if br["step"] > 0:
            p.shm_latency = min(br["step"] / 2, 0.4 * X)
            why = f"half the rendezvous step of {br['step'] * 1e6:.2f} us"
        else:
            p.shm_latency = 0.1 * X
            why = (f"the step at the protocol switch is {br['step'] * 1e6:+.2f} us (faster above: a "
                   f"single-copy rendezvous, expressed by the size bins); shm_latency is 1/10 of the "
                   f"small-message latency")
        det["eager"] = {**br, "why": why}
    else:
        p.shm_latency = 0.1 * X
    o = max(0.0, X - p.shm_latency)
    p.send_overhead = p.recv_overhead = o / 2
    det["host_latency"] = {"pingpong_small_s": pp_s, "pingping_small_s": pi_s, "call_overhead_s": c,
                           "small_message_s": X, "o_s": o / 2, "o_r": o / 2, "L": p.shm_latency}

    # 4. host bandwidth: per-rank ports (reference bandwidth), out port from fan-out, node cap
    #    from two pairs at once
    big = hp.sizes >= large_from
    if big.sum() >= 2:
        _, sl = _line_fit(hp.sizes[big], hp.t[big] - c)
        B = 1 / sl if sl > 0 else p.shm_bw
        # two opposite transfers: about twice one (one shared node link) or about one (per-rank ports)
        r_pi = None
        if hpi is not None and np.array_equal(hpi.sizes, hp.sizes):
            r_pi = float(np.median((hpi.t[big] - 2 * c) / (hp.t[big] - c)))
        if r_pi is not None and r_pi > 1.5:
            p.shm_rank_bw = p.shm_rank_out_bw = None
            p.shm_bw = B
            det["shm_bw"] = {"bw": B, "from": hp.name, "sizes_from": large_from, "pingping_ratio": r_pi,
                             "ports": False}
        else:
            p.shm_rank_bw = B
            npeer, rf = _concurrency_ratio(series, "fan-out", "host", hp, large_from)
            p.shm_rank_out_bw = npeer * B / max(rf, 1.0) if rf is not None else None
            _, r2 = _concurrency_ratio(series, "two-pairs", "host", hpi or hp, large_from)
            p.shm_bw = 4 * B / max(r2 or 1.0, 1.0)
            det["shm_bw"] = {"rank_bw": B, "from": hp.name, "sizes_from": large_from, "fan_out_ratio": rf,
                             "fan_out_peers": npeer, "rank_out_bw": p.shm_rank_out_bw, "two_pairs_ratio": r2,
                             "node_cap": p.shm_bw, "pingping_ratio": r_pi, "ports": True}
    else:
        notes.append(f"no host measurement of {large_from} B or more: shm_bw kept from the base file")

    # 5. device buffers: NVLink bandwidth (slope >= 32 KiB) and kind (fan-out)
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
            p.gpudirect_delay = max(0.0, a - c - fixed)
            det["device"] = {"intercept_s": a, "bw": p.nvlink_bw, "sizes_from": TARGET_FROM,
                             "series": [s.name for s in dv]}
    else:
        notes.append("no device-buffer measurements (MPI not CUDA-aware?): NVLink and gpudirect_delay kept "
                     "from the base file")

    # 6. per-call costs and protocol regimes, jointly over the series (default; percall.py), or
    #    size bins ([[mpi.factors]]) per path from each mode's curves (``bins``: opt-in)
    if factors and not bins:
        pc = percall.fit_per_call(series, p)
        if pc is None:
            notes.append("no two-rank point-to-point series: per-call costs kept from the base file")
        else:
            percall.apply(pc, p)
            det["per_call"] = percall.details(pc)
            names = {a: b for a, b, _ in percall.PARAMS}
            for k, why in pc.fixed.items():
                notes.append(f"{names[k]}: not fitted ({why})" + ("" if k == "w" else "; base value kept"))
            for k, sup in pc.support.items():
                if len(sup) == 1 and k not in pc.fixed:
                    notes.append(f"{names[k]}: supported by one series only "
                                 f"({next(iter(sup))})")
    if factors and bins:
        p.factors = {}
        det["factors"] = {}
        for mode, path in (("host", "host"), ("staged", "hostcopy"), ("device", "gpudirect-p2p")):
            xs, T, T_blk, used = one_way_targets(series, mode, p)
            if xs is None:
                continue
            path_bins, info = fit_bins(xs, T, mode, p, tol=tol, T_blk=T_blk)
            if path == "gpudirect-p2p" and path_bins:
                # the smallest bin intercept becomes gpudirect_delay: every bin's delay >= 0
                lift = min(b_["delay"] for b_ in path_bins)
                p.gpudirect_delay += lift
                for b_ in path_bins:
                    b_["delay"] -= lift
            p.factors[path] = path_bins
            det["factors"][path] = {"from": used, "tolerance": tol, "segments": info,
                                    "blocking_send_overhead": "median residual of the blocking ping-pong "
                                    f"({used[0]}) over each bin's nonblocking line ({', '.join(used[1:]) or 'none'})"}

    res = FitResult(params=p, base_name=label, base=base_d, gpus=gpus, raw_meta=_meta(raw), notes=notes,
                    details=det)
    res.max_bytes = int(max((s.sizes.max() for s in series if s.kind != "memcpy" and len(s.sizes)), default=0))
    res.max_ranks = int(max((s.nranks for s in series if s.kind != "memcpy" and len(s.sizes)), default=0))
    # 6b. copy engines: from the series where several transfers go into one GPU at once
    if engines:
        fit_copy_engines(series, res, workdir=workdir)
    # 6c. LogGP g: from the message-rate (burst) series, with every per-call cost already fitted
    if factors and not bins:
        fit_gap(series, res, workdir=workdir)
    # 7. every rank of the node communicating at once: bins by load from the ring series
    if factors and ring:
        fit_ring_bins(series, res, workdir=workdir)
    if collectives:
        res.coll_algos, res.details["collectives"] = choose_collectives(series, res, workdir=workdir,
                                                                         forced=forced_algorithms(raw))
    # 8. collectives' own bins (opt-in) or rate factors (default, with the algorithm choice), with the
    #    chosen algorithms
    if factors and coll_bins:
        fit_collective_bins(series, res, workdir=workdir)
    elif factors and collectives and coll_rates:
        fit_collective_rates(series, res, workdir=workdir)
    return res


MULTI_KINDS = ("fan-out", "fan-in", "two-pairs", "all-pairs")
ENGINE_CHOICES = (None, 1, 2, 3, 4, 6)
ENGINE_FROM = MiB     # copy engines matter where the data dominates


def fit_copy_engines(series: list[Series], res: FitResult, workdir=None) -> None:
    """``gpu.copy_engines`` from the device series with several transfers at once (fan-out,
    fan-in, two pairs, all-pairs; >= 1 MiB): every candidate count (none: engines not modelled,
    1, 2, 3, 4, 6) is simulated on them and the one with the least median |log error| kept (a
    candidate must beat the model without engines by 2 % of error, else none); one engine's rate
    is the one-pair rate (``node.nvlink.bw``: an engine drives one pair at that rate).  Only
    series where one GPU receives from several peers at once (fan-in, all-pairs) can tell the
    count: without them it is left out, with a note."""
    p = res.params
    # on two ranks a multi-peer series has one peer: nothing shares an engine
    multi = [s for s in series if s.mode == "device" and s.kind in MULTI_KINDS and s.scope == "intra"
             and s.nranks >= 3]
    if not any(s.kind in ("fan-in", "all-pairs") for s in multi):
        if any(s.kind in MULTI_KINDS and s.nranks == 2 for s in series):
            res.notes.append("copy engines not fitted: the multi-peer series ran on two ranks (one peer each: "
                             "nothing shares an engine); they join the per-call fit instead")
        elif multi:
            res.notes.append("copy engines not fitted: no series where one GPU receives from several peers at "
                             "once (measure.py's multipeer section: all-pairs, fan-in)")
        return
    pts = [(s, s.sizes[s.sizes >= ENGINE_FROM], s.t[s.sizes >= ENGINE_FROM]) for s in multi]
    pts = [x for x in pts if len(x[1])]
    scores = {}
    per: dict[str, dict[str, list[float]]] = {}
    for e in ENGINE_CHOICES:
        p.copy_engines, p.copy_engine_bw = e, (p.nvlink_bw if e else None)
        errs = []
        with machine_file(res) as m:
            for s, sz, t in pts:
                pred = simulate_series(s, m, sizes=sz, workdir=workdir)
                errs.extend(np.log(pred / t))
                per.setdefault(str(e), {})[s.name] = [float(x) for x in pred / t - 1]
        scores[e] = float(np.median(np.abs(errs)))
    best = min(ENGINE_CHOICES, key=lambda e: (scores[e], ENGINE_CHOICES.index(e)))
    if best is not None and scores[best] > scores[None] - 0.02:
        best = None
    p.copy_engines, p.copy_engine_bw = best, (p.nvlink_bw if best else None)
    res.details["copy_engines"] = {"chosen": best, "median_abs_log_error": {str(k): v for k, v in scores.items()},
                                   "errors": per, "series": [s.name for s, _, _ in pts], "sizes_from": ENGINE_FROM,
                                   "engine_bw": p.copy_engine_bw}


GAP_GRID_S = (0.0, *np.geomspace(50e-9, 20e-6, 28))      # candidates for a gap, ~25 % apart
GAP_GAIN = 0.02          # a gap must lower the median |log error| by this much, else none
GAPS = (("gap", "host", "mpi.gap"), ("device_gap", "device", "mpi.device_gap"))


def fit_gap(series: list[Series], res: FitResult, workdir=None) -> None:
    """LogGP g from the burst series (``measure.py``'s message-rate windows), with every other
    parameter as fitted: ``mpi.gap`` from the host-buffer bursts, then ``mpi.device_gap`` (messages on
    device buffers sent GPU-direct) from the device-buffer ones.  Each candidate (0, then 50 ns to
    20 us, ~25 % apart) is simulated on the series and the one of least median |log error| kept if
    it beats no gap by ``GAP_GAIN``; the device gap's "no gap" is the host gap (the key's default)."""
    p = res.params
    if not any(s.kind == "burst" for s in series):
        res.notes.append("mpi.gap not fitted: no message-rate series (measure.py's burst section)")
        return
    for attr, mode, key in GAPS:
        ss = [s for s in series if s.kind == "burst" and s.mode == mode and s.scope == "intra"]
        if not ss:
            res.notes.append(f"{key} not fitted: no {mode}-buffer burst series between two GPUs of a node")
            continue
        base_val = getattr(p, attr)

        def score(g: float | None, ss=ss, attr=attr) -> tuple[float, dict[str, list[float]]]:
            setattr(p, attr, g)
            errs: list[float] = []
            per = {}
            with machine_file(res) as m:
                for s in ss:
                    pred = simulate_series(s, m, workdir=workdir)
                    errs.extend(np.log(pred / s.t))
                    per[s.name] = [float(x) for x in pred / s.t - 1]
            return float(np.median(np.abs(errs))), per

        none = 0.0 if attr == "gap" else None       # the device gap's default is the host gap
        s0, per0 = score(none)
        scores, pers = {}, {}
        for g in GAP_GRID_S[1:]:
            scores[float(g)], pers[float(g)] = score(float(g))
        best = min(scores, key=lambda g: (scores[g], g))
        chosen = best if scores[best] <= s0 - GAP_GAIN else none
        setattr(p, attr, chosen)
        what = ", ".join(s.name for s in ss)

        def med(per: dict[str, list[float]]) -> float:
            return float(np.median(np.abs([x for v in per.values() for x in v]))) * 100
        res.details[attr] = {
            "chosen_s": chosen, "base_s": base_val, "series": [s.name for s in ss],
            "window": ss[0].meta.get("window"),
            "median_abs_log_error": {"none": s0, **{fmt_dur(g): v for g, v in scores.items()}},
            "errors": pers[best] if chosen == best else per0, "errors_without_gap": per0,
            "why": (f"fitted: least error on {what} (message rate, windows of {ss[0].meta.get('window')} "
                    f"Isends; median |error| {med(pers[best]):.1f} % vs {med(per0):.1f} % without)"
                    if chosen == best else "")}
        if chosen != best:
            res.notes.append(f"{key}: none (no candidate lowers the median |error| of {what} by "
                             f"{GAP_GAIN * 100:.0f} %: injection is bound by the per-call costs)")


RING_PATHS = (("host", "host"), ("staged", "hostcopy"), ("device", "gpudirect-p2p"))
RING_BW_FROM = MiB       # ring bins fit a bandwidth factor from here up, an extra delay below


def _base_bins(p: P2PParams, path: str, sizes) -> list[dict]:
    """Copies of the ordinary bin of each size, with max_bytes = the size (one bin per point)."""
    bins = []
    for n in sizes:
        base = p.factor_bin(path, float(n))
        b = dict(base) if base else {"bw_factor": 1.0, "lat_factor": 1.0, "delay": 0.0,
                                     "send_overhead": None, "recv_overhead": None,
                                     "blocking_send_overhead": 0.0}
        b["max_bytes"] = float(n)      # beyond the largest size: the ordinary bins
        bins.append(b)
    return bins


def _correct_bins(res: FitResult, s: Series, sizes, meas, bins: list[dict], workdir=None) -> list[dict]:
    """Solves, point by point, one correction of bin i (already in res's machine) so that the
    simulated series ``s`` at sizes[i] equals meas[i]: an extra ``delay`` below RING_BW_FROM, a
    ``bw_factor`` multiplier from there up when the simulation is too fast; less delay, then more
    bandwidth when it is too slow.  Returns what was done per point."""
    info = []
    for i, n in enumerate(sizes):
        b = bins[i]
        one = replace(s, sizes=np.array([n]), t=np.array([meas[i]]))

        def sim(one=one) -> float:
            with machine_file(res) as mf:
                return float(simulate_series(one, mf, workdir=workdir)[0])

        t0 = sim()
        how = "none"

        def solve(set_, lo, hi, target=meas[i]):
            """Bisection on a parameter the simulated time decreases with."""
            for _ in range(22):
                mid = (lo + hi) / 2
                set_(mid)
                lo, hi = (mid, hi) if sim() > target else (lo, mid)
            set_((lo + hi) / 2)
            return (lo + hi) / 2

        d0, k0 = b.get("delay", 0.0), b["bw_factor"]
        set_k = lambda x, b=b, k0=k0: b.__setitem__("bw_factor", k0 * math.exp(x))        # noqa: E731
        set_d = lambda x, b=b, d0=d0: b.__setitem__("delay", d0 - x)                       # noqa: E731
        if abs(t0 / meas[i] - 1) > 0.005:
            if t0 < meas[i] and n < RING_BW_FROM:          # slower: an extra delay
                x = -solve(set_d, -4 * meas[i], 0.0)
                how = f"delay +{fmt_dur(x)}"
            elif t0 < meas[i]:                              # slower: less bandwidth
                how = f"bw x{math.exp(solve(set_k, math.log(1e-3), 0.0)):.3f}"
            else:                                           # faster: less delay, then more bandwidth
                b["delay"] = 0.0
                if sim() < meas[i] and d0 > 0:
                    x = solve(set_d, 0.0, d0)
                    how = f"delay -{fmt_dur(x)}"
                else:
                    how = (f"delay -{fmt_dur(d0)}, " if d0 > 0 else "") + \
                        f"bw x{math.exp(solve(set_k, 0.0, math.log(100.0))):.3f}"
        t1 = sim()
        info.append({"bytes": int(n), "measured_s": float(meas[i]), "before_s": t0, "after_s": t1,
                     "correction": how})
    return info


def fit_ring_bins(series: list[Series], res: FitResult, workdir=None) -> None:
    """Bins with ``active_ranks`` = the ring's ranks, from the ring series (every rank of the node
    MPI_Sendrecv-ing at once; in mode staged with its two copies): one bin per measured size
    (upper edge at the size; sizes above the largest fall back to the ordinary bins, those below
    the smallest take the smallest's bin), each the node's ordinary bin at that size with one
    correction (:func:`_correct_bins`) so that the simulated ring step equals the measured one.
    Writes res.params.load_factors / load_ranks and res.details["ring"]."""
    p = res.params
    p.load_factors, p.load_ranks = {}, 0
    det: dict[str, Any] = {}
    for mode, path in RING_PATHS:
        s = _find(series, "ring", mode)
        if s is None or s.nranks < 3:
            continue
        p.load_ranks = s.nranks
        order = np.argsort(s.sizes)
        sizes, meas = s.sizes[order], s.t[order]
        p.load_factors[path] = bins = _base_bins(p, path, sizes)
        info = _correct_bins(res, s, sizes, meas, bins, workdir=workdir)
        det[path] = {"from": s.name, "active_ranks": s.nranks, "points": info}
    if det:
        res.details["ring"] = det


COLL_RATE_FROM = MiB     # a collective's rate factor is fitted where its data dominate


def fit_collective_rates(series: list[Series], res: FitResult, workdir=None,
                         ops=("Bcast", "Scatter", "Gather")) -> None:
    """One rate factor per collective and path (the default; ``--collective-bins`` fits a bin per
    size instead): Open MPI's collectives move their data slower than point-to-point messages of
    the same size (segmentation, temporary buffers).  For each collective series (mode -> path:
    host, hostcopy for staged, gpudirect-p2p for device), the factor f in [0.05, 1] minimising the
    squared log error of the simulated collective at every measured size >= 1 MiB (golden section); the
    messages of that collective on that path then take the path's ordinary bins with bw_factor x f.
    Kept where it changes the error by more than 1 %.  Writes res.params.coll_factors and
    res.details["collective_rates"]."""
    p = res.params
    p.coll_factors = {}
    det: dict[str, Any] = {}
    for mode, path in RING_PATHS:
        for op in ops:
            s = _find(series, "collective", mode, op=op)
            if s is None:
                continue
            m = s.sizes >= COLL_RATE_FROM
            if m.sum() < 1:
                continue
            one = replace(s, sizes=s.sizes[m], t=s.t[m])
            # the path's ordinary bins (hostcopy falls back to host), closed by an open-ended one
            ordinary = [dict(b) for b in (p.factors.get(path) or (p.factors.get("host", []) if path == "hostcopy"
                                                                 else []))]
            if not ordinary or math.isfinite(ordinary[-1]["max_bytes"]):
                ordinary.append({"max_bytes": float("inf"), "bw_factor": 1.0, "lat_factor": 1.0, "delay": 0.0,
                                 "send_overhead": None, "recv_overhead": None, "blocking_send_overhead": 0.0})

            def err(x: float, one=one, ordinary=ordinary, op=op, path=path) -> float:
                p.coll_factors[(op, path)] = [{**b, "bw_factor": b["bw_factor"] * math.exp(x)} for b in ordinary]
                with machine_file(res) as mf:
                    pred = simulate_series(one, mf, workdir=workdir)
                return float(np.sum(np.log(pred / one.t) ** 2))

            e1 = err(0.0)
            x = _golden(err, math.log(0.05), 0.0, iters=18)
            ex = err(x)
            if ex < e1 * 0.98 and abs(x) > 0.01:
                det[f"{op} {path}"] = {"from": s.name, "factor": math.exp(x), "sizes": [int(v) for v in one.sizes],
                                       "rms_log_error_before": math.sqrt(e1 / len(one.sizes)),
                                       "rms_log_error_after": math.sqrt(ex / len(one.sizes))}
            else:
                del p.coll_factors[(op, path)]
    if det:
        res.details["collective_rates"] = det


def fit_collective_bins(series: list[Series], res: FitResult, workdir=None, ops=("Bcast", "Scatter", "Gather")) -> None:
    """Bins with ``collective = <op>`` from the calibration's collective series, per mode's path
    (host, hostcopy for staged, gpudirect-p2p for device): one bin per measured size (the message
    size of the run's algorithms: the Bcast buffer, the Scatter / Gather block), each the ordinary
    bin at that size with one correction (:func:`_correct_bins`) so that the simulated collective
    (its staging copies included in mode staged) equals the measured one.  Uses the collective
    algorithms already chosen (res.coll_algos).  Writes res.params.coll_factors and
    res.details["collective_bins"]."""
    p = res.params
    p.coll_factors = {}
    det: dict[str, Any] = {}
    for mode, path in RING_PATHS:
        for op in ops:
            s = _find(series, "collective", mode, op=op)
            if s is None or not len(s.sizes):
                continue
            order = np.argsort(s.sizes)
            sizes, meas = s.sizes[order], s.t[order]
            p.coll_factors[(op, path)] = bins = _base_bins(p, path, sizes)
            info = _correct_bins(res, s, sizes, meas, bins, workdir=workdir)
            # above the largest measured size: the ordinary bins there with the largest point's
            # bandwidth correction (a collective's large messages keep their measured slowdown)
            base_last = p.factor_bin(path, float(sizes[-1]))
            if base_last and sizes[-1] >= RING_BW_FROM:
                k = bins[-1]["bw_factor"] / base_last["bw_factor"]
                for ob in p.factors.get(path, []):
                    if ob["max_bytes"] > sizes[-1]:
                        e = dict(ob)
                        e["bw_factor"] = ob["bw_factor"] * k
                        bins.append(e)
                        info.append({"bytes": None, "correction": f"ordinary bin x{k:.3f} (above the measured sizes)"})
            det[f"{op} {path}"] = {"from": s.name, "points": info}
    if det:
        res.details["collective_bins"] = det


# Open MPI 4.1 coll/tuned algorithm numbers: basic_linear Scatter / Gather are blocking sends /
# receives one peer after another (coll_base_scatter.c, coll_base_gather.c): linear_sequential;
# Scatter 3 (linear_nb) posts them all at once: linear.
OMPI_ALGOS = {"scatter": {"1": "linear_sequential", "2": "binomial", "3": "linear"},
              "gather": {"1": "linear_sequential", "2": "binomial"},
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
            best = min(scores, key=lambda k: scores[k])
            report[op] = {k: round(v / len(ss), 4) for k, v in scores.items()}
            if best != "default" and scores[best] < 0.9 * scores["default"]:
                chosen[op] = best
            else:
                ties = [a for a in cands if abs(scores[a] - scores["default"]) <= 0.01 * scores["default"] + 1e-12]
                nr = max(s.nranks for s in ss)
                if ties:
                    res.notes.append(f"{op}: the algorithm is not identified: on {nr} ranks {', '.join(ties)} and "
                                     f"Open MPI's default decision give the same times; the default is kept, "
                                     f"which with more ranks may not be what the library runs (a simulation with "
                                     f"more ranks per node says so)")
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
_toml_value = machines.toml_value


def to_toml(res: FitResult, name: str = "h200x4-calibrated", raw_path: str | None = None,
            command: str | None = None) -> str:
    """The fitted machine file, citing the run in comments."""
    p, m, d = res.params, res.raw_meta, res.details
    base = res.base
    hosts = ", ".join(m.get("hosts") or [])
    L: list[str] = []
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
    # the validation page of the run (docs/validation/<run>.md next to docs/validation/<run>/raw.json)
    run_dir = Path(raw_path).parent if raw_path else None
    page = (run_dir.with_suffix(".md").as_posix() if run_dir is not None and run_dir.name
            and run_dir.parent.name == "validation" else "docs/calibration.md")
    c(f"# accuracy: {page} (fit set and held-out errors).")
    for n in res.notes:
        c("# Note: " + n)
    c("schema_version = 1")
    c(f"name = {_toml_value(name)}")
    gpu_name = m.get("gpu") or base.get("name", "")
    date = (m.get("date") or "?")[:10]
    c(f"description = {_toml_value(f'{gpu_name} x {res.gpus} node, calibrated {date}')}")
    c(f"sources = {_toml_value('g2gsim calibrate fit; measurements ' + (raw_path or 'raw JSON'))}")
    if res.max_bytes:
        c(f"calibrated_max_bytes = {_toml_value(fmt_size(res.max_bytes))}  # the largest MPI message measured: "
          "beyond it every rate is extrapolated (a simulation says so)")
    if res.max_ranks:
        c(f"calibrated_ranks = {res.max_ranks}  # the most ranks a measured series ran on: with more ranks on a "
          "node, collective algorithms and sharing are extrapolated (a simulation says so)")
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
    if d.get("per_call") and "inv" in d["per_call"]["support"]:
        c(f"bw = {_toml_value(fmt_bw(p.nvlink_bw))}  # " + percall.support_text(d["per_call"], "inv"))
    else:
        c(f"bw = {_toml_value(fmt_bw(p.nvlink_bw))}"
          + ("           # fitted: device ping-pong + ping-ping >= 32 KiB, slope" if dv else "  # base"))
    c(f"latency = {_toml_value(fmt_dur(p.nvlink_latency))}" + "       # base (folded into gpu.gpudirect_delay)")
    c("")
    c("[node.host]")
    sb = d.get("shm_bw")
    if sb and p.shm_rank_bw:
        r2 = sb.get("two_pairs_ratio")
        rf = sb.get("fan_out_ratio")
        rate_why = (percall.support_text(d["per_call"], "ir") + ", the rendezvous regime's rate"
                    if d.get("per_call") else f"fitted: {sb['from']} >= {size_label(sb['sizes_from'])}, slope")
        c(f"shm_rank_bw = {_toml_value(fmt_bw(p.shm_rank_bw))}   # {rate_why}"
          + " (each rank's own copy: ping-ping takes one ping-pong)")
        if p.shm_rank_out_bw:
            c(f"shm_rank_out_bw = {_toml_value(fmt_bw(p.shm_rank_out_bw))}"
              + f"  # fitted: one rank to {sb['fan_out_peers']} at once takes {rf:.2f} x one message")
        c(f"shm_bw = {_toml_value(fmt_bw(p.shm_bw))}"
          + (f"        # fitted: node cap, two pairs at once take {r2:.2f} x one pair" if r2
             else "  # 4 x shm_rank_bw (no two-pairs data)"))
    elif sb:
        c(f"shm_bw = {_toml_value(fmt_bw(p.shm_bw))}"
          + (f"  # {percall.support_text(d['per_call'], 'ir')}" if d.get("per_call")
             else f"  # fitted: {sb['from']} >= {size_label(sb['sizes_from'])}, slope")
          + "; ping-ping takes "
          + f"{sb['pingping_ratio']:.2f} x: one link shared by the node")
    else:
        c(f"shm_bw = {_toml_value(fmt_bw(p.shm_bw))}" + "  # base")
    if d.get("per_call"):
        c(f"shm_latency = {_toml_value(fmt_dur(p.shm_latency))}  # "
          + percall.support_text(d["per_call"], "L") + " (a rendezvous adds two)")
    else:
        c(f"shm_latency = {_toml_value(fmt_dur(p.shm_latency))}" + "  # fitted: "
          + (d.get("eager", {}).get("why", "1/10 of the small-message latency")))
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
    pc = d.get("per_call")
    if pc:
        c("# per-call costs and protocol switches: one joint least-squares fit over "
          + ", ".join(pc["series"]) + " (calibrate/percall.py); each value says which series carry it")

        def sup(key: str) -> str:
            return "  # " + percall.support_text(pc, key)

        c(f"eager_limit = {_toml_value(fmt_size(p.eager_limit))}"
          + "  # fitted: the host eager/rendezvous switch of least joint error")
        c(f"send_overhead = {_toml_value(fmt_dur(p.send_overhead))}" + sup("o") + " (o_s + o_r, halved)")
        c(f"recv_overhead = {_toml_value(fmt_dur(p.recv_overhead))}")
        c(f"call_overhead = {_toml_value(fmt_dur(p.call_overhead))}" + sup("c"))
        c(f"wait_overhead = {_toml_value(fmt_dur(p.wait_call))}" + sup("w"))
        c(f"device_call_overhead = {_toml_value(fmt_dur(p.device_call_overhead))}" + sup("d"))
        c(f"blocking_send_overhead = {_toml_value(fmt_dur(p.blocking_send_overhead))}" + sup("b"))
        if p.gap:
            c(f"gap = {_toml_value(fmt_dur(p.gap))}  # " + (d.get("gap") or {}).get("why", "base"))
        if p.device_gap is not None:
            c(f"device_gap = {_toml_value(fmt_dur(p.device_gap))}  # "
              + (d.get("device_gap") or {}).get("why", "base"))
    else:
        c(f"eager_limit = {_toml_value(fmt_size(p.eager_limit))}" + "  # fitted: break of the host ping-pong curve")
        c(f"send_overhead = {_toml_value(fmt_dur(p.send_overhead))}"
          + (f"  # fitted: host ping-pong <= 1 KiB, {hl.get('small_message_s', 0) * 1e6:.3f} us one way, "
             "minus shm_latency, halved" if hl else ""))
        c(f"recv_overhead = {_toml_value(fmt_dur(p.recv_overhead))}")
        c(f"call_overhead = {_toml_value(fmt_dur(p.call_overhead))}"
          + (f"  # fitted: host ping-pong one way {hl.get('pingpong_small_s', 0) * 1e6:.3f} us = c + X, "
             f"ping-ping {(hl.get('pingping_small_s') or 0) * 1e6:.3f} us = 2c + max(c, X) (<= 1 KiB)" if hl else ""))
        for key, val in (("wait_overhead", p.wait_overhead), ("device_call_overhead", p.device_call_overhead),
                         ("blocking_send_overhead", p.blocking_send_overhead), ("gap", p.gap),
                         ("device_gap", p.device_gap)):
            if val:
                c(f"{key} = {_toml_value(fmt_dur(val))}  # base")
    for k, v in base.get("mpi", {}).items():
        if k not in ("eager_limit", "send_overhead", "recv_overhead", "call_overhead", "factors", "wait_overhead",
                     "device_call_overhead", "blocking_send_overhead", "gap", "device_gap"):
            c(f"{k} = {_toml_value(v)}  # base")
    fd = d.get("factors") or {}
    pcd: dict = pc or {}
    for path, bins in (p.factors.items() if pc else ()):
        c("")
        if path == "hostcopy":
            c("# staged host messages (their buffers written by the DMA copies): their own rate and delay, fitted "
              f"jointly (rate: {percall.support_text(pcd, 'ih')}; delay: {percall.support_text(pcd, 'hd')})")
        elif path == "host":
            c("# the host protocol regimes: eager (up to mpi.eager_limit) and rendezvous, each its own rate, fitted "
              f"jointly (eager: {percall.support_text(pcd, 'ie')}; rendezvous: {percall.support_text(pcd, 'ir')})")
        else:
            c(f"# device blocking sends up to the device protocol switch pay an extra ({percall.support_text(pcd, 'bd')})")
        for b in bins:
            c("[[mpi.factors]]")
            c(f"path = {_toml_value(path)}")
            if math.isfinite(b["max_bytes"]):
                c(f"max_bytes = {_toml_value(fmt_size(int(b['max_bytes'])))}")
            c(f"bw_factor = {float(_sig(b['bw_factor'], 4))!r}")
            if b.get("delay", 0.0) > 0:
                c(f"delay = {_toml_value(fmt_dur(b['delay']))}")
            if b.get("blocking_send_overhead", 0.0) > 0:
                c(f"blocking_send_overhead = {_toml_value(fmt_dur(b['blocking_send_overhead']))}")
    for path, bins in (() if pc else p.factors.items()):
        info = fd.get(path, {})
        c("")
        c(f"# size bins of path {path!r}: lines fitted on "
          f"{' + '.join(info.get('from', [])[1:]) or info.get('from', [''])[0]} (nonblocking), "
          f"blocking extra on {info.get('from', [''])[0]} (one-way time less call overhead"
          + (" and the two copies" if path == "hostcopy" else "") + f"), each bin one line within {100 * info.get('tolerance', BIN_TOL):.0f}%")
        for b, seg in zip(bins, info.get("segments", [None] * len(bins))):
            c("[[mpi.factors]]")
            if seg:
                c(f"# measured sizes {size_label(seg['sizes'][0])} - {size_label(seg['sizes'][-1])} ({len(seg['sizes'])}), "
                  f"line within {100 * seg['max_rel_err']:.1f}%")
            c(f"path = {_toml_value(path)}")
            if math.isfinite(b["max_bytes"]):
                c(f"max_bytes = {_toml_value(fmt_size(int(b['max_bytes'])))}")
            c(f"bw_factor = {float(_sig(b['bw_factor'], 4))!r}")
            if b.get("lat_factor", 1.0) != 1.0:
                c(f"lat_factor = {b['lat_factor']!r}")
            if b.get("delay", 0.0) > 0:
                c(f"delay = {_toml_value(fmt_dur(b['delay']))}")
            if b.get("send_overhead") is not None:
                c(f"send_overhead = {_toml_value(fmt_dur(b['send_overhead']))}")
            if b.get("recv_overhead") is not None:
                c(f"recv_overhead = {_toml_value(fmt_dur(b['recv_overhead']))}")
            if b.get("blocking_send_overhead", 0.0) > 0:
                c(f"blocking_send_overhead = {_toml_value(fmt_dur(b['blocking_send_overhead']))}"
                  + (f"  # median residual of the blocking ping-pong over the nonblocking line, "
                     f"worst {100 * seg['blocking_max_rel_err']:.1f}%" if seg else ""))
    rd = d.get("ring") or {}
    for path, bins in p.load_factors.items():
        info = rd.get(path, {})
        c("")
        c(f"# size bins of path {path!r} on nodes where at least {p.load_ranks} ranks communicate: fitted on the "
          f"{info.get('from', 'ring')} series (every rank MPI_Sendrecv at once), each the ordinary bin at that size "
          "with one correction solved by simulation")
        pts = info.get("points") or [None] * len(bins)
        for b, pt in zip(bins, pts):
            c("[[mpi.factors]]")
            if pt:
                c(f"# ring at {size_label(pt['bytes'])}: measured {pt['measured_s'] * 1e6:.2f} us, ordinary bins "
                  f"{pt['before_s'] * 1e6:.2f} us, this bin {pt['after_s'] * 1e6:.2f} us ({pt['correction']})")
            c(f"path = {_toml_value(path)}")
            c(f"active_ranks = {p.load_ranks}")
            if math.isfinite(b["max_bytes"]):
                c(f"max_bytes = {_toml_value(fmt_size(int(b['max_bytes'])))}")
            c(f"bw_factor = {float(_sig(b['bw_factor'], 4))!r}")
            if b.get("lat_factor", 1.0) != 1.0:
                c(f"lat_factor = {b['lat_factor']!r}")
            if b.get("delay", 0.0) > 0:
                c(f"delay = {_toml_value(fmt_dur(b['delay']))}")
            if b.get("send_overhead") is not None:
                c(f"send_overhead = {_toml_value(fmt_dur(b['send_overhead']))}")
            if b.get("recv_overhead") is not None:
                c(f"recv_overhead = {_toml_value(fmt_dur(b['recv_overhead']))}")
            if b.get("blocking_send_overhead", 0.0) > 0:
                c(f"blocking_send_overhead = {_toml_value(fmt_dur(b['blocking_send_overhead']))}")
    cd_ = d.get("collective_bins") or {}
    for (op, path), bins in p.coll_factors.items():
        info = cd_.get(f"{op} {path}", {})
        c("")
        cr = (d.get("collective_rates") or {}).get(f"{op} {path}")
        if cr:
            c(f"# the messages of {op} on path {path!r}: the path's bins at x{cr['factor']:.3g} the rate, one factor fitted "
              f"by simulation on the {cr['from']} series >= {size_label(COLL_RATE_FROM)} (rms log error "
              f"{cr['rms_log_error_before']:.3f} -> {cr['rms_log_error_after']:.3f})")
        else:
            c(f"# size bins of path {path!r} for the messages of {op}: fitted on the {info.get('from', op)} series, "
              "each the ordinary bin at that size with one correction solved by simulation")
        pts = info.get("points") or [None] * len(bins)
        for b, pt in zip(bins, pts):
            c("[[mpi.factors]]")
            if pt and pt.get("bytes") is None:
                c(f"# {pt['correction']}")
            elif pt:
                c(f"# {op} at {size_label(pt['bytes'])}: measured {pt['measured_s'] * 1e6:.2f} us, ordinary bins "
                  f"{pt['before_s'] * 1e6:.2f} us, this bin {pt['after_s'] * 1e6:.2f} us ({pt['correction']})")
            c(f"path = {_toml_value(path)}")
            c(f"collective = {_toml_value(op)}")
            if math.isfinite(b["max_bytes"]):
                c(f"max_bytes = {_toml_value(fmt_size(int(b['max_bytes'])))}")
            c(f"bw_factor = {float(_sig(b['bw_factor'], 4))!r}")
            if b.get("lat_factor", 1.0) != 1.0:
                c(f"lat_factor = {b['lat_factor']!r}")
            if b.get("delay", 0.0) > 0:
                c(f"delay = {_toml_value(fmt_dur(b['delay']))}")
            if b.get("send_overhead") is not None:
                c(f"send_overhead = {_toml_value(fmt_dur(b['send_overhead']))}")
            if b.get("recv_overhead") is not None:
                c(f"recv_overhead = {_toml_value(fmt_dur(b['recv_overhead']))}")
    c("")
    c("[gpu]")
    c(f"copy_delay = {_toml_value(fmt_dur(p.copy_delay))}" + ("  # fitted: cudaMemcpy pinned intercept minus pcie.latency" if cp else "  # base"))
    if d.get("per_call") and "G" in d["per_call"]["support"]:
        c(f"gpudirect_delay = {_toml_value(fmt_dur(p.gpudirect_delay))}  # "
          + percall.support_text(d["per_call"], "G"))
    else:
        c(f"gpudirect_delay = {_toml_value(fmt_dur(p.gpudirect_delay))}"
          + ("  # fitted: device intercept minus overheads, 2 x shm_latency, NVLink latency" if dv else "  # base"))
    ce = d.get("copy_engines")
    if p.copy_engines and p.copy_engine_bw is not None:     # set together (fit_copy_engines)
        c(f"copy_engines = {p.copy_engines}  # fitted: least error on "
          f"{', '.join(ce['series']) if ce else 'the multi-peer series'} >= {size_label(ENGINE_FROM)}")
        c(f"copy_engine_bw = {_toml_value(fmt_bw(p.copy_engine_bw))}  # one pair's rate (node.nvlink.bw)")
    for k, v in base.get("gpu", {}).items():
        if k not in ("copy_delay", "gpudirect_delay", "copy_per_byte") and not (ce and k in ("copy_engines", "copy_engine_bw")):
            c(f"{k} = {_toml_value(v)}  # base")
    spread = (d.get("copy") or {}).get("copy_delay_spread_s") if cp else None
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
    if spread and spread[1] > spread[0]:
        # read by `g2gsim compare` for its sensitivity band (docs/semantics.md)
        c("")
        c('[uncertainty."gpu.copy_delay"]')
        c(f"low = {_toml_value(fmt_dur(spread[0]))}")
        c(f"high = {_toml_value(fmt_dur(spread[1]))}")
        c(f"source = {_toml_value('calibrate fit: residual spread of the cudaMemcpy latency over the copies of at most 64 KiB')}")
    return "\n".join(L) + "\n"


def write_machine(res: FitResult, path: str | Path, name: str | None = None, raw_path: str | None = None,
                  command: str | None = None) -> Path:
    path = Path(path)
    nm = name or path.name.removesuffix(".toml")
    path.write_text(to_toml(res, name=nm, raw_path=raw_path, command=command))
    machines.check(path)
    return path

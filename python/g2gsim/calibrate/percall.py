"""Per-call costs and protocol regimes fitted jointly across series (issue 25, items 3 and 4).

The default of ``g2gsim calibrate fit``: instead of size bins tuned to each curve (``--bins``), one
set of structural parameters is fitted to every two-rank point-to-point series at once (ping-pong,
nonblocking ping-pong, ping-ping, the ring's ``MPI_Sendrecv`` where it ran on two ranks; host,
staged and device buffers), so that each parameter is supported by several series:

===============================  ===============================================================
``mpi.call_overhead`` c           CPU time of every MPI call (the rank is busy before it acts)
``mpi.device_call_overhead`` d    extra of a non-wait MPI call on a device buffer
``mpi.send_overhead`` +           LogP o of each message (o_s = o_r: two ranks cannot tell them
``mpi.recv_overhead``             apart)
``node.host.shm_latency`` L       one host control message; a rendezvous adds two (RTS, CTS)
``mpi.blocking_send_overhead`` b  extra sender time of every blocking send (MPI_Send, Sendrecv)
device blocking extra b_d         a blocking device send up to the device switch X (UCX's
                                  protocol for small blocking sends), one ``[[mpi.factors]]`` entry
``mpi.eager_limit`` E             the host eager/rendezvous switch, searched over the measured sizes
host rates                        per byte in the eager regime (``bw_factor`` of one
                                  ``[[mpi.factors]]`` entry up to E) and in the rendezvous regime
                                  (``node.host.shm_rank_bw``, or ``shm_bw`` on one shared link)
staged rates                      staged (pinned, DMA-written) host messages: per byte in the eager
                                  regime, up to the staged memory switch S and above it, and a
                                  delay (``[[mpi.factors]]`` bins of path ``hostcopy``)
``gpu.gpudirect_delay``,          the device path's fixed cost and rate
``node.nvlink.bw``
===============================  ===============================================================

Each series' time is linear in these parameters once E and X are chosen (the closed forms of
``micro.closed_form``, which are the simulator's for two ranks): non-negative least squares in
relative error, each series weighted equally, for every (E, X) candidate; the least error wins.
A parameter no series can tell apart from the others (a column of the design in the span of the
others: e.g. b without a nonblocking ping-pong, d without a device ping-ping) keeps its base value,
with a note. Which series support each parameter (their share of its column's weight) is in the
fit's details and the written file's comments.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .micro import KiB, MiB, P2PParams, Series, copy_time

# the unknowns, in column order: (key, what, unit)
PARAMS = (
    ("c", "mpi.call_overhead", "s"),
    ("w", "mpi.wait_overhead", "s"),
    ("d", "mpi.device_call_overhead", "s"),
    ("o", "mpi.send_overhead + mpi.recv_overhead", "s"),
    ("L", "node.host.shm_latency", "s"),
    ("b", "mpi.blocking_send_overhead", "s"),
    ("bd", "device blocking extra (gpudirect-p2p bin)", "s"),
    ("ie", "host eager regime, per byte", "s/B"),
    ("ir", "host rendezvous regime, per byte", "s/B"),
    ("im", "host messages above the memory switch, per byte", "s/B"),
    ("ihe", "staged host messages (hostcopy path) in the eager regime, per byte", "s/B"),
    ("ih", "staged host messages (hostcopy path), per byte", "s/B"),
    ("ihm", "staged host messages above the staged memory switch, per byte", "s/B"),
    ("hd", "staged host messages (hostcopy path), delay", "s"),
    ("G", "gpu.gpudirect_delay", "s"),
    ("inv", "node.nvlink.bw, per byte", "s/B"),
)
IDX = {k: i for i, (k, _, _) in enumerate(PARAMS)}
# which unknown gives way first when the data cannot tell some of them apart
DROP_ORDER = ("bd", "im", "ihm", "ihe", "hd", "ih", "b", "w", "d", "ie", "L", "c", "o", "G", "ir", "inv")
FIT_KINDS = ("pingpong", "pingpong-nb", "pingping", "ring", "all-pairs", "fan-in")
EAGER_RANGE = (KiB, 4 * MiB)       # the host eager limit is searched here (as eager_break)
DEVICE_SWITCH_MAX = MiB            # and the device blocking switch up to here
MEMORY_SWITCH_MAX = 64 * MiB       # and the host memory switch (larger messages stream from memory)
STAGED_SWITCH_MAX = 64 * MiB       # and the staged messages' own memory switch
SUPPORT_SHARE = 0.05               # a series supports a parameter above this share of its column
HUBER = 0.10                       # relative errors beyond this count linearly in the fit
SWITCH_GAIN = 0.03                 # a switch must lower the fit's error by this share


@dataclass
class PerCallFit:
    values: dict                    # key -> fitted (or fixed) value, SI
    eager_limit: int
    device_switch: int | None       # b_d applies to device blocking sends <= this; None: no switch
    memory_switch: int | None = None  # host messages above this take the memory regime's rate
    staged_switch: int | None = None  # staged host messages above this take their memory regime's rate
    fixed: dict = field(default_factory=dict)       # key -> why it kept its base value
    support: dict = field(default_factory=dict)     # key -> {series: share}
    series_error: dict = field(default_factory=dict)  # series -> median |relative error| of the fit
    cost: float = 0.0


def fit_series(series: list[Series]) -> list[Series]:
    """The series the joint fit uses: two-rank point-to-point inside a node (rings: two ranks only;
    the multi-peer series on two ranks: all-pairs is a ping-ping, fan-in two blocking one-ways; on
    more ranks they share links the closed forms do not model)."""
    return [s for s in series if s.kind in FIT_KINDS and s.scope == "intra" and len(s.sizes)
            and (s.kind in ("pingpong", "pingpong-nb", "pingping") or s.nranks == 2)]


def _parts(s: Series, p: P2PParams, E: int, X: int | None, M: int | None = None, S: int | None = None):
    if s.kind == "all-pairs":       # two ranks: a ping-ping
        return _parts(Series("pingping", s.mode, s.sizes, s.t, s.iterations), p, E, X, M, S)
    if s.kind == "fan-in":          # two ranks: a blocking one-way and the 1-byte blocking reply
        one = np.ones(len(s.sizes), dtype=s.sizes.dtype)
        a = _parts(Series("pingpong", s.mode, s.sizes, s.t, s.iterations), p, E, X, M, S)
        r = _parts(Series("pingpong", s.mode, one, s.t, s.iterations), p, E, X, M, S)
        return tuple(x + y for x, y in zip(a, r))
    return _parts1(s, p, E, X, M, S)


def _parts1(s: Series, p: P2PParams, E: int, X: int | None, M: int | None = None,
             S: int | None = None):
    """The design of series ``s``: (C, T, kc, kt) with C the calls' rows (len(sizes) x
    len(PARAMS)), T the one message's rows (blocking extras included), kc the known part of the
    calls (the staging copies) and kt of the message (the NVLink latency).  A point's time is
    (C + T) x + kc + kt, except where a rank's wait bounds it: max(T, w) (:func:`_rows`)."""
    n = s.sizes.astype(float)
    C = np.zeros((len(n), len(PARAMS)))
    T = np.zeros((len(n), len(PARAMS)))
    kc = np.zeros(len(n))
    kt = np.zeros(len(n))
    dev = s.mode == "device"
    calls = 2 if s.kind == "pingping" else 1
    C[:, IDX["c"]] = calls
    if dev:
        C[:, IDX["d"]] = calls
    if s.mode == "staged":
        kc += 2 * copy_time(n, p)
    T[:, IDX["o"]] = 1.0
    if dev:
        rts = (n > p.eager_limit) if p.gpudirect_eager else np.ones(len(n), bool)
        T[:, IDX["L"]] = 2.0 * rts
        T[:, IDX["G"]] = 1.0
        kt += p.nvlink_path_latency
        T[:, IDX["inv"]] = n
    else:
        flows = 2 if s.kind == "pingping" else (s.nranks if s.kind == "ring" else 1)
        kf = p.host_flow_bw(1) / p.host_flow_bw(flows)
        eager = n <= E
        T[:, IDX["L"]] = np.where(eager, 1.0, 3.0)
        if s.mode == "staged":
            # the staged messages' own rates and delay: their buffers come cold from the DMA copies;
            # the same protocol regimes as host messages (eager up to E), and their own memory
            # switch S (pinned buffers written by the copy engine: past S they stream from memory)
            smem = (n > S) if S is not None else np.zeros(len(n), bool)
            T[:, IDX["ihe"]] = np.where(eager, n * kf, 0.0)
            T[:, IDX["ih"]] = np.where(eager | smem, 0.0, n * kf)
            T[:, IDX["ihm"]] = np.where(smem & ~eager, n * kf, 0.0)
            T[:, IDX["hd"]] = 1.0
        else:
            mem = (n > M) if M is not None else np.zeros(len(n), bool)
            T[:, IDX["ie"]] = np.where(eager, n * kf, 0.0)
            T[:, IDX["ir"]] = np.where(eager | mem, 0.0, n * kf)
            T[:, IDX["im"]] = np.where(mem & ~eager, n * kf, 0.0)
    if s.kind in ("pingpong", "ring"):
        T[:, IDX["b"]] = 1.0
        if dev and X is not None:
            T[:, IDX["bd"]] = (n <= X).astype(float)
    return C, T, kc, kt


def _waits(s: Series) -> bool:
    """Does the series' time hold max(T, w) (the rank's own wait call bounds it)?"""
    return s.kind in ("pingping", "all-pairs") or (s.kind == "pingpong-nb" and s.mode != "staged")


def _rows(s: Series, parts, low: np.ndarray | None):
    """(rows, known part) of ``s``: where ``low`` (the one-message time below w, in the series that
    wait for max(T, w)) the message's rows are w's."""
    C, T, kc, kt = parts
    if _waits(s) and low is not None and low.any():
        T, kt = T.copy(), kt.copy()
        T[low] = 0.0
        T[low, IDX["w"]] = 1.0
        kt[low] = 0.0
    return C + T, kc + kt


def _nnls(A: np.ndarray, y: np.ndarray, iters: int = 60) -> np.ndarray:
    """Lawson-Hanson non-negative least squares (small problems)."""
    m, n = A.shape
    x = np.zeros(n)
    P = np.zeros(n, bool)
    w = A.T @ (y - A @ x)
    for _ in range(3 * n + iters):
        if P.all() or not (w[~P] > 1e-12 * max(1.0, np.abs(w).max())).any():
            break
        j = int(np.argmax(np.where(~P, w, -np.inf)))
        P[j] = True
        while True:
            z = np.zeros(n)
            z[P] = np.linalg.lstsq(A[:, P], y, rcond=None)[0]
            if (z[P] > 0).all():
                x = z
                break
            neg = P & (z <= 0)
            alpha = np.min(x[neg] / (x[neg] - z[neg]))
            x = x + alpha * (z - x)
            P &= x > 1e-15
            x[~P] = 0.0
        w = A.T @ (y - A @ x)
    return x


def _identifiable(A: np.ndarray, free: list[int]) -> tuple[list[int], dict]:
    """The free columns that the weighted design can tell apart; the others (in DROP_ORDER) with
    why: no data (a zero column) or in the span of the other columns."""
    why: dict[int, str] = {}
    free = list(free)
    for j in list(free):
        if not np.any(A[:, j]):
            free.remove(j)
            why[j] = "no measured series depends on it"

    def rank(cols):
        if not cols:
            return 0
        M = A[:, cols] / np.linalg.norm(A[:, cols], axis=0)
        sv = np.linalg.svd(M, compute_uv=False)
        return int((sv > 1e-6 * sv[0]).sum())

    while free and rank(free) < len(free):
        for key in DROP_ORDER:
            j = IDX[key]
            if j in free and rank([f for f in free if f != j]) == rank(free):
                free.remove(j)
                why[j] = "the series measured cannot tell it from the other parameters"
                break
        else:
            break
    return free, why


def _base_values(p: P2PParams) -> dict:
    B = p.host_flow_bw(1)
    ie = 1 / B
    for f in p.factors.get("host", []):
        if f["max_bytes"] >= p.eager_limit:
            ie = 1 / (B * f.get("bw_factor", 1.0))
            break
    return {"c": p.call_overhead, "w": p.wait_call, "d": p.device_call_overhead, "o": p.send_overhead + p.recv_overhead,
            "L": p.shm_latency, "b": p.blocking_send_overhead, "bd": 0.0, "ie": ie, "ir": 1 / B,
            "im": 1 / B, "ihe": 1 / B, "ih": 1 / B, "ihm": 1 / B, "hd": 0.0, "G": p.gpudirect_delay, "inv": 1 / p.nvlink_bw if p.nvlink_bw else 0.0}


def _off(X: int | None, M: int | None, S: int | None = None) -> set[int]:
    """The columns a candidate switches off: the device blocking extra without a device switch,
    the memory regimes without their memory switches."""
    return {IDX[k] for k, on in (("bd", X is not None), ("im", M is not None), ("ihm", S is not None)) if not on}


def _lsq(series, parts, low, t, w, xb, off):
    """One linear solve with the branches ``low``: (x, the free columns, why the others are not)."""
    blocks = [_rows(s, pt, lo) for s, pt, lo in zip(series, parts, low)]
    A = np.concatenate([b[0] for b in blocks])
    k0 = np.concatenate([b[1] for b in blocks])
    Aw = A * w[:, None]
    free = [j for j in range(len(PARAMS)) if j not in off]
    free_ok, why = _identifiable(Aw, free)
    fixed_cols = [j for j in range(len(PARAMS)) if j not in free_ok]
    x = xb.copy()
    x[list(off)] = 0.0
    y = (t - k0 - A[:, fixed_cols] @ x[fixed_cols]) * w
    if free_ok:
        x[free_ok] = _nnls(Aw[:, free_ok], y)
    if IDX["w"] not in free_ok:
        # no point waits for w: it is at most every such point's one-message time (and c)
        tm = [T @ x + kt for s, (_, T, _, kt) in zip(series, parts) if _waits(s)]
        x[IDX["w"]] = min([x[IDX["c"]]] + [float(v.min()) for v in tm if len(v)])
        why[IDX["w"]] = ("no measured point waits for it: the largest value the nonblocking series allow "
                         "(at most mpi.call_overhead)")
    return x, free_ok, why


def _true(series, parts, x):
    """The branches the closed forms take with ``x``: low where T < w."""
    return [(T @ x + kt < x[IDX["w"]]) if _waits(s) else None for s, (_, T, _, kt) in zip(series, parts)]


def _predict(series, parts, x):
    low = _true(series, parts, x)
    blocks = [_rows(s, pt, lo) for s, pt, lo in zip(series, parts, low)]
    return low, np.concatenate([b[0] for b in blocks]), np.concatenate([b[0] for b in blocks]) @ x + \
        np.concatenate([b[1] for b in blocks])


def _solve(series: list[Series], p: P2PParams, E: int, X: int | None, base: dict, M: int | None = None,
           robust: bool = True, S: int | None = None) -> PerCallFit:
    """The fit for one candidate (E, X, M): non-negative least squares in relative error, each
    series weighted equally, with Huber weights (errors beyond HUBER count linearly: one outlying
    point cannot bend a regime), over the branches of max(T, w) (two starts)."""
    parts = [_parts(s, p, E, X, M, S) for s in series]
    t = np.concatenate([s.t for s in series])
    w0 = np.concatenate([np.full(len(s.t), 1 / np.sqrt(len(s.t))) for s in series]) / t
    xb = np.array([base[k] for k, _, _ in PARAMS])
    off = _off(X, M, S)
    best = None
    for low0 in ([None] * len(series), [np.ones(len(s.sizes), bool) if _waits(s) else None for s in series]):
        low = low0
        hw = np.ones(len(t))
        for _ in range(8):
            x, free_ok, why = _lsq(series, parts, low, t, w0 * hw, xb, off)
            low_x, A, pred = _predict(series, parts, x)
            r = pred / t - 1
            if robust:
                hw_new = np.sqrt(np.minimum(1.0, HUBER / np.maximum(np.abs(r), 1e-12)))
            else:
                hw_new = hw
            rho = np.where(np.abs(r) <= HUBER, r ** 2, 2 * HUBER * np.abs(r) - HUBER ** 2) if robust else r ** 2
            cost = float(np.sum(rho * (w0 * t) ** 2))
            if best is None or cost < best[0] - 1e-15:
                best = (cost, x, free_ok, why, pred, A * w0[:, None])
            same = all((a is None and b is None) or (a is not None and b is not None and np.array_equal(a, b))
                       for a, b in zip(low, low_x)) and np.allclose(hw_new, hw, rtol=1e-3)
            low, hw = low_x, hw_new
            if same:
                break
    assert best is not None
    cost, x, free_ok, why, pred, Aw = best
    rel = pred / t - 1
    errs, i = {}, 0
    for s in series:
        errs[s.name] = float(np.median(np.abs(rel[i:i + len(s.t)])))
        i += len(s.t)
    support = {}
    for j in free_ok:
        col = Aw[:, j] ** 2
        tot = col.sum()
        sh, i = {}, 0
        for s in series:
            v = float(col[i:i + len(s.t)].sum() / tot) if tot > 0 else 0.0
            i += len(s.t)
            if v >= SUPPORT_SHARE:
                sh[s.name] = round(v, 3)
        support[PARAMS[j][0]] = sh
    fixed_cols = [j for j in range(len(PARAMS)) if j not in free_ok and j not in off]
    return PerCallFit(values={k: float(x[IDX[k]]) for k, _, _ in PARAMS}, eager_limit=E, device_switch=X,
                      memory_switch=M, staged_switch=S, fixed={PARAMS[j][0]: why.get(j, "held at its base value") for j in fixed_cols},
                      support=support, series_error=errs, cost=cost)


def fit_per_call(series: list[Series], p: P2PParams, robust: bool = True) -> PerCallFit | None:
    """The joint fit (module docstring) over the series of :func:`fit_series`; None without any.
    The switches are searched in turn: the host eager limit E with the memory switch M (no device
    switch), then the device switch X with them; a switch must earn its parameters (SWITCH_GAIN
    less error than without it)."""
    ss = fit_series(series)
    if not ss:
        return None
    base = _base_values(p)
    host_sizes = sorted({int(x) for s in ss if s.mode == "host" for x in s.sizes})
    E_cands = [x for x in host_sizes if EAGER_RANGE[0] <= x < EAGER_RANGE[1]] or [p.eager_limit]
    blk_dev = sorted({int(x) for s in ss if s.mode == "device" and s.kind in ("pingpong", "ring") for x in s.sizes})
    X_cands = [x for x in blk_dev if x <= DEVICE_SWITCH_MAX]

    def better(f: PerCallFit, than: PerCallFit | None, new_switch: bool) -> bool:
        return than is None or f.cost < than.cost * ((1 - SWITCH_GAIN) if new_switch else 1.0)

    best: PerCallFit | None = None
    for E in E_cands:
        f = _solve(ss, p, E, None, base, None, robust)
        if better(f, best, False):
            best = f
    assert best is not None
    E0 = best.eager_limit
    no_mem = best
    for E in E_cands:
        for M in [x for x in host_sizes if x > max(E, E0 // 4) and x <= MEMORY_SWITCH_MAX]:
            f = _solve(ss, p, E, None, base, M, robust)
            if better(f, best, best is no_mem):
                best = f
    no_dev = best
    for X in X_cands:
        f = _solve(ss, p, best.eager_limit, X, base, best.memory_switch, robust)
        if better(f, best, best is no_dev):
            best = f
    staged_sizes = sorted({int(x) for s in ss if s.mode == "staged" for x in s.sizes})
    no_staged = best
    for S in [x for x in staged_sizes if x > best.eager_limit and x <= STAGED_SWITCH_MAX]:
        f = _solve(ss, p, best.eager_limit, best.device_switch, base, best.memory_switch, robust, S)
        if better(f, best, best is no_staged):
            best = f
    return best


def apply(f: PerCallFit, p: P2PParams) -> None:
    """Writes the fitted values into ``p`` (overheads, latency, eager limit, host and NVLink rates,
    the protocol-regime bins)."""
    v = f.values
    p.call_overhead = v["c"]
    p.wait_overhead = v["w"]
    p.device_call_overhead = v["d"]
    p.send_overhead = p.recv_overhead = v["o"] / 2
    p.shm_latency = v["L"]
    p.blocking_send_overhead = v["b"]
    p.eager_limit = f.eager_limit
    # the host link runs at the faster regime's rate; the slower regime is a bin with bw_factor < 1
    # (a flow cannot go faster than its link)
    staged = (v["ihe"], v["ih"]) + ((v["ihm"],) if f.staged_switch else ())
    rates = [1 / x for x in (v["ie"], v["ir"]) + staged + ((v["im"],) if f.memory_switch else ()) if x > 0]
    if rates:
        scale = max(rates) / p.host_flow_bw(1)
        if p.shm_rank_bw is None:
            p.shm_bw *= scale
        else:
            p.shm_rank_bw *= scale
            p.shm_bw *= scale
            if p.shm_rank_out_bw:
                p.shm_rank_out_bw *= scale
    p.gpudirect_delay = v["G"]
    if v["inv"] > 0:
        p.nvlink_bw = 1 / v["inv"]
    p.factors = {}
    link = p.host_flow_bw(1)
    regimes = [(f.eager_limit, v["ie"]), (f.memory_switch or float("inf"), v["ir"])]
    if f.memory_switch is not None:
        regimes.append((float("inf"), v["im"]))
    host = [_bin(mb, bw_factor=min(1.0, max(1e-3, (1 / per) / link)) if per > 0 else 1.0) for mb, per in regimes]
    if any(abs(b_["bw_factor"] - 1.0) > 1e-3 for b_ in host):
        p.factors["host"] = host
    if any(x > 0 for x in staged) or v["hd"] > 0:
        # the staged regimes as hostcopy bins: eager up to E, then up to the staged memory switch
        sreg = [(f.eager_limit, v["ihe"]), (f.staged_switch or float("inf"), v["ih"])]
        if f.staged_switch is not None:
            sreg.append((float("inf"), v["ihm"]))
        hcs: list[dict] = []
        for mb, per in sreg:
            hc = _bin(mb, bw_factor=min(1.0, max(1e-3, (1 / per) / link)) if per > 0 else 1.0)
            hc["delay"] = v["hd"]
            if hcs and abs(hcs[-1]["bw_factor"] - hc["bw_factor"]) <= 1e-3 * hc["bw_factor"]:
                hcs[-1]["max_bytes"] = mb          # two regimes at one rate are one bin
            else:
                hcs.append(hc)
        p.factors["hostcopy"] = hcs
    if f.device_switch is not None and v["bd"] > 0:
        p.factors["gpudirect-p2p"] = [_bin(f.device_switch, blocking_send_overhead=v["bd"])]


def _bin(max_bytes: float, bw_factor: float = 1.0, blocking_send_overhead: float = 0.0) -> dict:
    return {"max_bytes": max_bytes if max_bytes == float("inf") else int(max_bytes), "bw_factor": float(bw_factor), "lat_factor": 1.0, "delay": 0.0,
            "send_overhead": None, "recv_overhead": None, "blocking_send_overhead": blocking_send_overhead}


def details(f: PerCallFit) -> dict[str, Any]:
    """The fit's record for ``FitResult.details['per_call']``."""
    return {"values": f.values, "eager_limit": f.eager_limit, "device_switch": f.device_switch,
            "memory_switch": f.memory_switch, "staged_switch": f.staged_switch,
            "fixed": f.fixed, "support": f.support, "series_error": f.series_error,
            "series": sorted(f.series_error), "cost": f.cost,
            "params": {k: what for k, what, _ in PARAMS}}


def support_text(f: PerCallFit | dict, key: str) -> str:
    """'fitted on pingpong host (41%), pingping host (30%), ...' or the reason it was not."""
    sup = f.support if isinstance(f, PerCallFit) else f.get("support", {})
    fixed = f.fixed if isinstance(f, PerCallFit) else f.get("fixed", {})
    if key in fixed:
        return ("derived: " if key == "w" else "base value: ") + fixed[key]
    sh = sup.get(key) or {}
    if not sh:
        return "fitted"
    items = sorted(sh.items(), key=lambda kv: -kv[1])
    return "fitted jointly on " + ", ".join(f"{k} ({100 * v:.0f}%)" for k, v in items)

"""The calibration micro-benchmarks as g2gsim traces, their simulation, and their closed forms.

A raw measurement file (``measure.py``'s JSON) becomes a list of :class:`Series`: one curve per
benchmark (ping-pong / ping-ping per mode, cudaMemcpy, collectives, concurrency), each a time per
size in seconds in the unit the model predicts:

* ``pingpong``: one-way time (half the round trip) of blocking Send / Recv, median over iterations;
* ``pingpong-nb``: the same with Isend + Wait / Irecv + Wait (nonblocking; Open MPI's pml ucx sends
  a blocking MPI_Send with UCX's fast-completion flag, which costs more at some sizes);
* ``pingping``: time of one exchange (both ranks Isend + Irecv + Waitall);
* ``memcpy``: one blocking cudaMemcpy;
* ``collective``: the call (with its staging copies in mode ``staged``), mean over ranks;
* ``two-pairs``: a ping-ping exchange while another pair exchanges too; ``fan-out``: one rank
  sending to all others at once (and a 1-byte reply each);
* ``ring``: every rank at once MPI_Sendrecv to its right neighbour from its left one, with the
  D2H / H2D staging copies around it in mode ``staged`` (the staged step of a halo exchange as a
  whole); time of one step, mean over ranks.

:func:`simulate_series` builds the same operations as a trace (:func:`build_trace`) and replays it
on a machine file; :func:`closed_form` gives the model's time without simulation for the
point-to-point and copy series (docs/models: host, hostcopy, gpudirect-p2p), which the fitter uses.
"""
from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..trace import TraceBuilder

KiB, MiB = 1 << 10, 1 << 20
MODES = ("host", "staged", "device")


@dataclass
class Series:
    kind: str                   # pingpong | pingpong-nb | pingping | memcpy | collective | two-pairs | fan-out
                                # | ring | all-pairs | fan-in | burst
    mode: str                   # host | staged | device (memcpy: d2h/h2d)
    sizes: np.ndarray           # bytes (collectives: Bcast buffer, Scatter/Gather per-rank block)
    t: np.ndarray               # seconds, the measured median
    iterations: np.ndarray
    scope: str = "intra"        # intra | inter
    op: str = ""                # collective name; memcpy host memory (pinned/pageable)
    nranks: int = 2
    spread: np.ndarray | None = None   # (p90 - p10) / median, a noise figure
    meta: dict = field(default_factory=dict)

    @property
    def name(self) -> str:
        if self.kind == "collective":
            return f"{self.op} {self.mode}"
        if self.kind == "memcpy":
            return f"memcpy {self.mode} {self.op}"
        p = variant_suffix(self.kind, self.nranks, self.meta.get("order", "ascending"))
        return f"{self.kind} {self.mode}{p}" + ("" if self.scope == "intra" else f" ({self.scope})")


def variant_suffix(kind: str, nranks: int, order: str = "ascending") -> str:
    """What tells apart series of one kind and mode in a raw file: ring and all-pairs are measured on
    two ranks and on every GPU of the node (" P=4"), all-pairs also in rotated peer order (" rotated")."""
    p = f" P={nranks}" if kind in ("ring", "all-pairs") and nranks > 2 else ""
    return p if order == "ascending" else f"{p} {order}"


def load_raw(path_or_dict) -> dict:
    d = path_or_dict if isinstance(path_or_dict, dict) else json.loads(Path(path_or_dict).read_text())
    if d.get("format") != "g2gsim-calibrate-raw":
        raise ValueError(f"{path_or_dict}: not a g2gsim calibration file (format {d.get('format')!r})")
    return d


def _arr(stats: list, key: str = "median") -> np.ndarray:
    return np.array([s[key] for s in stats], dtype=float)


def _spread(stats: list) -> np.ndarray:
    return np.array([(s["p90"] - s["p10"]) / s["median"] if s["median"] > 0 else 0.0 for s in stats])


def series_from_raw(raw: dict) -> list[Series]:
    """Every curve of a raw file, in the units described in the module docstring."""
    raw = load_raw(raw)
    out: list[Series] = []
    for e in raw.get("p2p", []):
        if not e["sizes"]:
            continue
        t = _arr(e["stats"])
        if e["pattern"] in ("pingpong", "pingpong-nb"):
            t = t / 2
        out.append(Series(e["pattern"], e["mode"], np.array(e["sizes"]), t, np.array(e["iterations"]),
                          scope=e.get("scope", "intra"), spread=_spread(e["stats"]),
                          meta={"ranks": e.get("ranks"), "gpus": e.get("gpus")}))
    for e in raw.get("memcpy", []):
        out.append(Series("memcpy", e["kind"], np.array(e["sizes"]), _arr(e["stats"]), np.array(e["iterations"]),
                          op=e["host"], nranks=1, spread=_spread(e["stats"])))
    for e in raw.get("collectives", []):
        if not e["sizes"]:
            continue
        out.append(Series("collective", e["mode"], np.array(e["sizes"]), _arr(e["stats"]),
                          np.array(e["iterations"]), op=e["op"], nranks=e["nranks"], spread=_spread(e["stats"]),
                          meta={"root": e.get("root", 0), "in_place_root": e.get("in_place_root", False)}))
    for e in raw.get("concurrency", []):
        if not e["sizes"]:
            continue
        if e["pattern"] == "two-pairs-pingping":
            t = np.array([np.mean([x["median"] for x in pp]) for pp in e["per_pair"]])
            out.append(Series("two-pairs", e["mode"], np.array(e["sizes"]), t, np.array(e["iterations"]),
                              nranks=4, meta={"pairs": e["pairs"]}))
        elif e["pattern"] == "ring-sendrecv":
            # the step (copies included in mode staged), mean over ranks of each rank's median
            t = np.array([np.mean([x["step"]["median"] for x in pr]) for pr in e["per_rank"]])
            parts = {k: np.array([np.mean([x[k]["median"] for x in pr]) for pr in e["per_rank"]])
                     for k in e["per_rank"][0][0]} if e["per_rank"] and e["per_rank"][0] else {}
            out.append(Series("ring", e["mode"], np.array(e["sizes"]), t, np.array(e["iterations"]),
                              nranks=len(e["ranks"]), meta={"ranks": e["ranks"], "parts": parts}))
        elif e["pattern"] == "fan-out":
            out.append(Series("fan-out", e["mode"], np.array(e["sizes"]), _arr(e["stats"]),
                              np.array(e["iterations"]), nranks=1 + len(e["peers"]),
                              meta={"root": e["root"], "peers": e["peers"]}))
    for e in raw.get("multipeer", []):
        if not e["sizes"]:
            continue
        if e["pattern"] == "all-pairs":
            # one exchange with every peer at once: mean over ranks of each rank's median
            t = np.array([np.mean([x["median"] for x in pr]) for pr in e["per_rank"]])
            sp = np.array([np.mean([(x["p90"] - x["p10"]) / x["median"] for x in pr]) for pr in e["per_rank"]])
            out.append(Series("all-pairs", e["mode"], np.array(e["sizes"]), t, np.array(e["iterations"]),
                              nranks=len(e["ranks"]), spread=sp,
                              meta={"ranks": e["ranks"], "order": e.get("order", "ascending")}))
        elif e["pattern"] == "fan-in":
            out.append(Series("fan-in", e["mode"], np.array(e["sizes"]), _arr(e["stats"]),
                              np.array(e["iterations"]), nranks=1 + len(e["peers"]), spread=_spread(e["stats"]),
                              meta={"root": e["root"], "peers": e["peers"]}))
    for e in raw.get("burst", []):
        if not e["sizes"]:
            continue
        # a window of Isends back to back and the 1-byte reply: time per window
        out.append(Series("burst", e["mode"], np.array(e["sizes"]), _arr(e["stats"]), np.array(e["iterations"]),
                          scope=e.get("scope", "intra"), spread=_spread(e["stats"]),
                          meta={"window": int(e["window"]), "ranks": e.get("ranks")}))
    return out


# ------------------------------------------------------------------------------------------------
# traces of the micro-benchmarks
# ------------------------------------------------------------------------------------------------
def _mem(mode: str) -> str:
    """The MPI buffers' memory space in a series' trace: measure.py's staged mode sends from and
    receives into page-locked buffers (``Buffers``: cupy's pinned allocations)."""
    return {"device": "device", "staged": "pinned"}.get(mode, "host")


def build_trace(s: Series, n: int, iters: int = 3):
    """The operations of series ``s`` at size ``n``, ``iters`` times, as a Trace."""
    k, mode = s.kind, s.mode
    staged = mode == "staged"
    mem = _mem(mode)
    if k == "memcpy":
        b = TraceBuilder(1, source=f"g2gsim calibrate: {s.name} {n} B")
        for _ in range(iters):
            b.add(0, "Memcpy", bytes=n, copy_kind=mode, stream=-1)
        return b.build()
    if k in ("pingpong", "pingpong-nb", "pingping", "two-pairs"):
        nr = 4 if k == "two-pairs" else 2
        b = TraceBuilder(nr, source=f"g2gsim calibrate: {s.name} {n} B")
        for a in range(0, nr, 2):
            for me, peer, first in ((a, a + 1, True), (a + 1, a, False)):
                for _ in range(iters):
                    if k == "pingpong":
                        if first:
                            if staged:
                                b.add(me, "Memcpy", bytes=n, copy_kind="d2h", stream=-1)
                            b.add(me, "Send", peer=peer, tag=1, bytes=n, mem_space=mem)
                            b.add(me, "Recv", peer=peer, tag=2, recv_bytes=n, mem_space=mem)
                            if staged:
                                b.add(me, "Memcpy", bytes=n, copy_kind="h2d", stream=-1)
                        else:
                            b.add(me, "Recv", peer=peer, tag=1, recv_bytes=n, mem_space=mem)
                            if staged:
                                b.add(me, "Memcpy", bytes=n, copy_kind="h2d", stream=-1)
                                b.add(me, "Memcpy", bytes=n, copy_kind="d2h", stream=-1)
                            b.add(me, "Send", peer=peer, tag=2, bytes=n, mem_space=mem)
                    elif k == "pingpong-nb":
                        if first:
                            if staged:
                                b.add(me, "Memcpy", bytes=n, copy_kind="d2h", stream=-1)
                            b.add(me, "Isend", peer=peer, tag=1, bytes=n, req=1, mem_space=mem)
                            b.add(me, "Wait", req=1)
                            b.add(me, "Irecv", peer=peer, tag=2, recv_bytes=n, req=2, mem_space=mem)
                            b.add(me, "Wait", req=2)
                            if staged:
                                b.add(me, "Memcpy", bytes=n, copy_kind="h2d", stream=-1)
                        else:
                            b.add(me, "Irecv", peer=peer, tag=1, recv_bytes=n, req=1, mem_space=mem)
                            b.add(me, "Wait", req=1)
                            if staged:
                                b.add(me, "Memcpy", bytes=n, copy_kind="h2d", stream=-1)
                                b.add(me, "Memcpy", bytes=n, copy_kind="d2h", stream=-1)
                            b.add(me, "Isend", peer=peer, tag=2, bytes=n, req=2, mem_space=mem)
                            b.add(me, "Wait", req=2)
                    else:
                        mytag, peertag = (1, 2) if first else (2, 1)
                        b.add(me, "Irecv", peer=peer, tag=peertag, recv_bytes=n, req=1, mem_space=mem)
                        if staged:
                            b.add(me, "Memcpy", bytes=n, copy_kind="d2h", stream=-1)
                        b.add(me, "Isend", peer=peer, tag=mytag, bytes=n, req=2, mem_space=mem)
                        b.add(me, "Waitall", reqs=[1, 2])
                        if staged:
                            b.add(me, "Memcpy", bytes=n, copy_kind="h2d", stream=-1)
        return b.build()
    if k == "ring":
        nr = s.nranks
        b = TraceBuilder(nr, source=f"g2gsim calibrate: {s.name} {n} B")
        for me in range(nr):
            right, left = (me + 1) % nr, (me - 1) % nr
            for _ in range(iters):
                if staged:
                    b.add(me, "Memcpy", bytes=n, copy_kind="d2h", stream=-1)
                b.add(me, "Sendrecv", peer=right, tag=5, bytes=n, recv_peer=left, recv_tag=5, recv_bytes=n,
                      mem_space=mem)
                if staged:
                    b.add(me, "Memcpy", bytes=n, copy_kind="h2d", stream=-1)
        return b.build()
    if k == "fan-out":
        nr = s.nranks
        b = TraceBuilder(nr, source=f"g2gsim calibrate: {s.name} {n} B")
        peers = list(range(1, nr))
        for _ in range(iters):
            for i, p in enumerate(peers):
                b.add(0, "Isend", peer=p, tag=7, bytes=n, req=i + 1, mem_space=mem)
            b.add(0, "Waitall", reqs=[i + 1 for i in range(len(peers))])
            for p in peers:
                b.add(0, "Recv", peer=p, tag=8, recv_bytes=1, mem_space=mem)
            for p in peers:
                b.add(p, "Recv", peer=0, tag=7, recv_bytes=n, mem_space=mem)
                b.add(p, "Send", peer=0, tag=8, bytes=1, mem_space=mem)
        return b.build()
    if k == "all-pairs":
        nr = s.nranks
        b = TraceBuilder(nr, source=f"g2gsim calibrate: {s.name} {n} B")
        rotated = s.meta.get("order", "ascending") == "rotated"
        for me in range(nr):
            peers = [(me + k) % nr for k in range(1, nr)] if rotated else [q for q in range(nr) if q != me]
            for _ in range(iters):
                for j, q in enumerate(peers):
                    b.add(me, "Irecv", peer=q, tag=11, recv_bytes=n, req=1 + j, mem_space=mem)
                for j, q in enumerate(peers):
                    b.add(me, "Isend", peer=q, tag=11, bytes=n, req=100 + j, mem_space=mem)
                b.add(me, "Waitall", reqs=[1 + j for j in range(len(peers))] + [100 + j for j in range(len(peers))])
        return b.build()
    if k == "burst":
        W = int(s.meta["window"])
        b = TraceBuilder(2, source=f"g2gsim calibrate: {s.name} {n} B x {W}")
        for _ in range(iters):
            for j in range(W):
                b.add(0, "Isend", peer=1, tag=21, bytes=n, req=1 + j, mem_space=mem)
            b.add(0, "Waitall", reqs=[1 + j for j in range(W)])
            b.add(0, "Recv", peer=1, tag=22, recv_bytes=1, mem_space=mem)
            for j in range(W):
                b.add(1, "Irecv", peer=0, tag=21, recv_bytes=n, req=1 + j, mem_space=mem)
            b.add(1, "Waitall", reqs=[1 + j for j in range(W)])
            b.add(1, "Send", peer=0, tag=22, bytes=1, mem_space=mem)
        return b.build()
    if k == "fan-in":
        nr = s.nranks
        b = TraceBuilder(nr, source=f"g2gsim calibrate: {s.name} {n} B")
        peers = list(range(1, nr))
        for _ in range(iters):
            for i, q in enumerate(peers):
                b.add(0, "Irecv", peer=q, tag=12, recv_bytes=n, req=i + 1, mem_space=mem)
            b.add(0, "Waitall", reqs=[i + 1 for i in range(len(peers))])
            for q in peers:
                b.add(0, "Send", peer=q, tag=13, bytes=1, mem_space=mem)
            for q in peers:
                b.add(q, "Send", peer=0, tag=12, bytes=n, mem_space=mem)
                b.add(q, "Recv", peer=0, tag=13, recv_bytes=1, mem_space=mem)
        return b.build()
    if k == "collective":
        P, root, op = s.nranks, int(s.meta.get("root", 0)), s.op
        b = TraceBuilder(P, source=f"g2gsim calibrate: {s.name} {n} B")
        total = n if op == "Bcast" else n * P
        for _ in range(iters):
            for r in range(P):
                b.add(r, "Barrier")
                is_root = r == root
                if op == "Bcast":
                    if staged and is_root:
                        b.add(r, "Memcpy", bytes=n, copy_kind="d2h", stream=-1)
                    b.add(r, "Bcast", bytes=n, recv_bytes=n, root=root, mem_space=mem)
                    if staged and not is_root:
                        b.add(r, "Memcpy", bytes=n, copy_kind="h2d", stream=-1)
                elif op == "Scatter":
                    if staged and is_root:
                        b.add(r, "Memcpy", bytes=total, copy_kind="d2h", stream=-1)
                    b.add(r, "Scatter", bytes=total if is_root else 0, recv_bytes=n, root=root, mem_space=mem)
                    if staged:
                        b.add(r, "Memcpy", bytes=n, copy_kind="h2d", stream=-1)
                elif op == "Gather":
                    if staged:
                        b.add(r, "Memcpy", bytes=n, copy_kind="d2h", stream=-1)
                    b.add(r, "Gather", bytes=n, recv_bytes=total if is_root else 0, root=root, mem_space=mem)
                    if staged and is_root:
                        b.add(r, "Memcpy", bytes=total, copy_kind="h2d", stream=-1)
                else:
                    raise ValueError(f"collective {op!r} is not one of the calibration's (Bcast, Scatter, Gather)")
        return b.build()
    raise ValueError(f"unknown series kind {k!r}")


def _predict_from_report(s: Series, rep: dict, iters: int) -> float:
    if s.kind in ("pingpong", "pingpong-nb"):
        return rep["total_time_s"] / (2 * iters)
    if s.kind in ("ring", "all-pairs"):
        return rep["total_time_s"] / iters
    if s.kind == "collective":
        po = rep["per_op"]
        tot = po.get(s.op, {}).get("total_s", 0.0) + po.get("Memcpy", {}).get("total_s", 0.0)
        return tot / (s.nranks * iters)
    return rep["total_time_s"] / iters


def simulate_series(s: Series, machine, sizes=None, iters: int = 3, workdir: str | Path | None = None,
                    coll_algos: str | None = None) -> np.ndarray:
    """The simulated time of each size of ``s`` (the same unit as ``s.t``) on ``machine``.

    Collectives run once per size (each starts at a barrier; the simulation is deterministic)."""
    from ..sim import simulate
    sizes = s.sizes if sizes is None else np.asarray(sizes)
    if s.kind == "collective":
        iters = 1
    out = np.empty(len(sizes))
    opts: dict[str, Any] = {}
    if s.scope == "inter":
        opts["mapping"] = [0, 1] if s.kind != "two-pairs" else [0, 1, 0, 1]
    if coll_algos:
        opts["coll_algos"] = coll_algos
    with tempfile.TemporaryDirectory(dir=workdir) as td:
        for i, n in enumerate(sizes):
            tr = build_trace(s, int(n), iters)
            p = Path(td) / f"t{i}.g2g.parquet"
            tr.write(p)
            rep = simulate(p, machine, mode="as-traced", per_rank=False, **opts)
            out[i] = _predict_from_report(s, rep, iters)
    return out


# ------------------------------------------------------------------------------------------------
# closed forms (docs/models) for one pair inside a node
# ------------------------------------------------------------------------------------------------
@dataclass
class P2PParams:
    """The machine-file parameters the point-to-point and copy series depend on (SI units)."""
    send_overhead: float
    recv_overhead: float
    shm_latency: float
    shm_bw: float
    eager_limit: int
    pcie_latency: float
    copy_delay: float
    copy_bw: float              # min(pcie.bw, 1 / copy_per_byte)
    gpudirect_delay: float
    nvlink_latency: float
    nvlink_bw: float
    nvlink_kind: str = "switch"
    gpudirect_eager: bool = False
    call_overhead: float = 0.0              # mpi.call_overhead
    device_call_overhead: float = 0.0       # mpi.device_call_overhead (non-wait MPI calls on device buffers)
    blocking_send_overhead: float = 0.0     # mpi.blocking_send_overhead (every blocking send; bins add theirs)
    gap: float = 0.0                        # mpi.gap (LogGP g; never in the closed forms: one message at a time)
    device_gap: float | None = None         # mpi.device_gap (GPU-direct messages; None: gap)
    wait_overhead: float | None = None      # mpi.wait_overhead (wait / test calls; None: call_overhead)

    @property
    def wait_call(self) -> float:
        return self.call_overhead if self.wait_overhead is None else self.wait_overhead
    shm_rank_bw: float | None = None        # node.host.shm_rank_bw (per-rank ports)
    shm_rank_out_bw: float | None = None    # node.host.shm_rank_out_bw
    # [[mpi.factors]]: path -> bins in increasing max_bytes, each {"max_bytes", "bw_factor",
    # "lat_factor", "delay" (s), "send_overhead" (s, optional), "recv_overhead" (s, optional),
    # "blocking_send_overhead" (s, optional: blocking sends only)}
    factors: dict = field(default_factory=dict)
    # bins for nodes where every rank communicates (``active_ranks = load_ranks``), fitted on the
    # ring series: path -> bins as above; the closed forms (two ranks) never use them
    load_factors: dict = field(default_factory=dict)
    load_ranks: int = 0
    # bins of one collective's messages: (op, path) -> bins as above; never in the closed forms
    coll_factors: dict = field(default_factory=dict)
    # gpu.copy_engines / gpu.copy_engine_bw (None: not modelled); never in the closed forms (one
    # transfer per GPU at a time)
    copy_engines: int | None = None
    copy_engine_bw: float | None = None

    @property
    def nvlink_path_latency(self) -> float:
        return self.nvlink_latency * (2 if self.nvlink_kind == "switch" else 1)

    def host_flow_bw(self, flows: int = 1) -> float:
        """Bandwidth of each of ``flows`` transfers between two ranks of a node in opposite
        directions (ping-ping: 2), before factors."""
        if self.shm_rank_bw is None:
            return self.shm_bw / flows
        out = self.shm_rank_out_bw or self.shm_rank_bw
        return min(self.shm_rank_bw, out, self.shm_bw / flows)

    def factor_bin(self, path: str, b: float) -> dict | None:
        """The machine's rule (config.rs ``factor``): hostcopy falls back to host, then to all."""
        for key in ([path, "host", "all"] if path == "hostcopy" else [path, "all"]):
            bins = self.factors.get(key)
            if bins:
                for f in bins:
                    if b <= f["max_bytes"]:
                        return f
                return None
        return None


def _fac(p: P2PParams, path: str, b: np.ndarray):
    """(bw_factor, lat_factor, delay, send_overhead, recv_overhead, blocking_send_overhead) per size."""
    out = np.empty((6, len(b)))
    for i, x in enumerate(b):
        f = p.factor_bin(path, x) or {}
        out[:, i] = (f.get("bw_factor", 1.0), f.get("lat_factor", 1.0), f.get("delay", 0.0),
                     p.send_overhead if f.get("send_overhead") is None else f["send_overhead"],
                     p.recv_overhead if f.get("recv_overhead") is None else f["recv_overhead"],
                     f.get("blocking_send_overhead") or 0.0)
    return out


def one_way(mode: str, n, p: P2PParams, flows: int = 1, blocking: bool = False) -> np.ndarray:
    """T(b): from the send call's action to the receive's completion, one message of ``mode``
    (host, staged = the hostcopy bins, device), without call overheads and staging copies; a
    ``blocking`` send (MPI_Send) adds its bin's ``blocking_send_overhead``."""
    b = np.atleast_1d(np.asarray(n, dtype=float))
    L = p.shm_latency
    if mode in ("host", "staged"):
        bw, lf, dl, os_, or_, bso = _fac(p, "hostcopy" if mode == "staged" else "host", b)
        if blocking:
            os_ = os_ + bso + p.blocking_send_overhead
        rndv = np.where(b > p.eager_limit, 2 * L, 0.0)
        return os_ + dl + rndv + L * lf + b / (p.host_flow_bw(flows) * bw) + or_
    if mode == "device":
        bw, lf, dl, os_, or_, bso = _fac(p, "gpudirect-p2p", b)
        if blocking:
            os_ = os_ + bso + p.blocking_send_overhead
        rts = np.where(b > p.eager_limit, 2 * L, 0.0) if p.gpudirect_eager else 2 * L
        return os_ + rts + p.gpudirect_delay + dl + p.nvlink_path_latency * lf + b / (p.nvlink_bw * bw) + or_
    raise ValueError(f"no closed form for mode {mode}")


def copy_time(n, p: P2PParams) -> np.ndarray:
    b = np.asarray(n, dtype=float)
    return p.copy_delay + p.pcie_latency + b / p.copy_bw


def closed_form(kind: str, mode: str, n, p: P2PParams, nranks: int = 2) -> np.ndarray:
    """The model's time of ``kind`` (pingpong one-way, pingping exchange, memcpy) at sizes ``n``.

    T = o_s + L + b / (B f) + o_r (+ 2L RTS/CTS above the eager limit; docs/models/host.md) with the
    size bin's factors f, delay and overheads (``[[mpi.factors]]``); device: o_s + 2L +
    gpudirect_delay + delay + NVLink latency + b / (B_nv f) + o_r (gpudirect-p2p.md); a copy is
    copy_delay + pcie.latency + b / copy_bw (hostcopy.md).  With c = mpi.call_overhead and
    c' = c + mpi.device_call_overhead on device buffers (c elsewhere): ping-pong one-way = c' +
    T_blocking (T plus ``mpi.blocking_send_overhead`` and the bin's; + a D2H and an H2D copy when
    staged); with w = mpi.wait_overhead (default c): nonblocking ping-pong (Isend + Wait / Irecv +
    Wait) one-way = c' + max(T, w) (staged: c' + T + copies); ping-ping exchange (Irecv, Isend,
    Waitall) = 2c' + max(w, T) (+ both copies), T with two
    opposite flows (on one node link without per-rank ports they share it); ring (every rank
    MPI_Sendrecv to its right neighbour, Open MPI's irecv + blocking send) = c' + T_blocking with
    one flow per rank (+ both copies when staged).  On two ranks the multi-peer series are the
    same calls: all-pairs is a ping-ping, fan-in a blocking one-way plus the root's 1-byte blocking
    reply.
    """
    b = np.asarray(n, dtype=float)
    copy = copy_time(b, p)
    if kind == "memcpy":
        return copy
    c = p.call_overhead
    cd = c + (p.device_call_overhead if mode == "device" else 0.0)
    staged = 2 * copy if mode == "staged" else 0.0
    if kind == "pingpong":
        return cd + one_way(mode, b, p, blocking=True) + staged
    w = p.wait_call
    if kind == "pingpong-nb":
        t = one_way(mode, b, p)
        return cd + (t + staged if mode == "staged" else np.maximum(t, w))
    if kind == "pingping":
        t = one_way(mode, b, p, flows=2 if mode != "device" else 1)
        return 2 * cd + np.maximum(w, t) + staged
    if kind == "all-pairs" and nranks == 2:        # Irecv, Isend, Waitall with the one peer: ping-ping
        return closed_form("pingping", mode, b, p)
    if kind == "fan-in" and nranks == 2:           # the peer's blocking send, the root's 1-byte reply
        return closed_form("pingpong", mode, b, p) + closed_form("pingpong", mode, np.ones(len(b)), p)
    if kind == "ring" and nranks >= 2:
        flows = nranks if mode != "device" else 1
        return cd + one_way(mode, b, p, flows=flows, blocking=True) + staged
    raise ValueError(f"no closed form for {kind} {mode}")

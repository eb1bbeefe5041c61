"""Rank-to-node mapping optimiser (paper Observation 5): put heavily communicating ranks on one node.

1. ``traffic_matrix``: bytes each rank sends to each other rank, from the trace: point-to-point sends
   exactly; collectives estimated by spreading each rank's buffer evenly over the other members of
   the communicator (the real pattern depends on the algorithm; this keeps their weight without
   favouring any placement).
2. ``optimise_mapping``: greedy heavy-edge grouping (seed a node with the unplaced rank of most
   traffic, then repeatedly add the unplaced rank with the most traffic to the node's members until
   it holds GPUs-per-node ranks), then Kernighan-Lin style refinement (swap the pair of ranks on
   different nodes whose swap cuts inter-node bytes most, while any swap helps).
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from ._common import SEND_OPS, TraceData, categories, world_members

MAX_DENSE_RANKS = 8192
KL_MAX_RANKS = 4096


def traffic_matrix(td: TraceData, collectives: bool = True) -> np.ndarray:
    """N x N matrix: bytes from rank i to rank j (float64)."""
    n = td.nranks
    if n > MAX_DENSE_RANKS:
        raise ValueError(f"{n} ranks: the mapping optimiser builds a dense traffic matrix and handles at "
                         f"most {MAX_DENSE_RANKS} ranks")
    W = np.zeros((n, n))
    df = td.df
    members = world_members(td.comms, n)
    s = df[df["op"].isin(SEND_OPS) & (df["peer"] >= 0)]
    for cid, g in s.groupby("comm_id"):
        mem = members.get(int(cid))
        if mem is None:
            continue
        peer = g["peer"].to_numpy(np.int64)
        ok = peer < len(mem)
        np.add.at(W, (g["rank"].to_numpy(np.int64)[ok], mem[peer[ok]]), g["bytes"].to_numpy(np.float64)[ok])
    if collectives:
        c = df[categories(df["op"]) == "collective"]
        for cid, g in c.groupby("comm_id"):
            mem = members.get(int(cid))
            if mem is None or len(mem) < 2:
                continue
            vol = np.maximum(g["bytes"].to_numpy(np.float64), g["recv_bytes"].to_numpy(np.float64))
            per_rank = np.bincount(g["rank"].to_numpy(np.int64), weights=vol, minlength=n)[mem]
            share = per_rank / (len(mem) - 1)
            W[np.ix_(mem, mem)] += share[:, None]
            W[mem, mem] -= share
    np.fill_diagonal(W, 0.0)
    return W


def inter_node_bytes(W: np.ndarray, node_of) -> float:
    node_of = np.asarray(node_of)
    return float(W[node_of[:, None] != node_of[None, :]].sum())


def linear_mapping(n: int, gpn: int) -> np.ndarray:
    return np.arange(n) // gpn


def round_robin_mapping(n: int, gpn: int) -> np.ndarray:
    nodes = -(-n // gpn)
    return np.arange(n) % nodes


def optimise_mapping(W: np.ndarray, gpus_per_node: int, refine: bool = True, time_budget_s: float = 20.0) -> np.ndarray:
    """Node index per rank (nodes 0..ceil(N/gpn)-1, at most gpn ranks each) that keeps traffic on-node."""
    n = W.shape[0]
    gpn = max(int(gpus_per_node), 1)
    S = W + W.T
    nodes = -(-n // gpn)
    node_of = np.full(n, -1, dtype=np.int64)
    unplaced = np.ones(n, dtype=bool)
    to_unplaced = S.sum(axis=1)  # traffic of each rank with the ranks not placed yet
    for k in range(nodes):
        if not unplaced.any():
            break
        # seed: the unplaced rank with the most traffic to other unplaced ranks (lowest id on ties)
        seed = int(np.argmax(np.where(unplaced, to_unplaced, -np.inf)))
        members = [seed]
        unplaced[seed] = False
        to_unplaced -= S[:, seed]
        conn = S[:, seed].copy()
        while len(members) < gpn and unplaced.any():
            r = int(np.argmax(np.where(unplaced, conn, -np.inf)))
            members.append(r)
            unplaced[r] = False
            to_unplaced -= S[:, r]
            conn += S[:, r]
        node_of[members] = k
    if refine and n <= KL_MAX_RANKS and nodes > 1:
        node_of = _refine(S, node_of, nodes, time_budget_s)
    return node_of


def _refine(S: np.ndarray, node_of: np.ndarray, nodes: int, budget_s: float) -> np.ndarray:
    """Pairwise swaps between nodes while the best swap reduces the cut (node sizes never change)."""
    t0 = time.monotonic()
    node_of = node_of.copy()
    n = len(node_of)
    onehot = np.zeros((n, nodes))
    onehot[np.arange(n), node_of] = 1.0
    conn = S @ onehot  # conn[r, k] = traffic between r and the ranks on node k
    eps = 1e-9 * max(float(S.sum()), 1.0)
    for _ in range(4 * n):
        own = conn[np.arange(n), node_of]
        M1 = conn[:, node_of] - own[:, None]   # M1[a, b] = conn[a, node(b)] - conn[a, node(a)]
        G = M1 + M1.T - 2 * S
        G[node_of[:, None] == node_of[None, :]] = -np.inf
        idx = int(np.argmax(G))
        a, b = divmod(idx, n)
        if not G[a, b] > eps:
            break
        ka, kb = node_of[a], node_of[b]
        node_of[a], node_of[b] = kb, ka
        conn[:, ka] += S[:, b] - S[:, a]
        conn[:, kb] += S[:, a] - S[:, b]
        if time.monotonic() - t0 > budget_s:
            break
    return node_of


def write_mapping(path: str | Path, node_of) -> Path:
    p = Path(path)
    p.write_text("\n".join(str(int(x)) for x in node_of) + "\n")
    return p


# largest node index a mapping file may name (the core refuses placements of more nodes up front)
MAX_MAPPING_NODE = (1 << 20) - 1


def read_mapping(path: str | Path) -> list[int]:
    """One node index per rank, whitespace separated; an error names the file, line and value."""
    p = Path(path)
    if p.is_dir():
        raise ValueError(f"{p}: is a directory, not a mapping file")
    try:
        text = p.read_bytes().decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{p}: not UTF-8 text (byte {e.start}); a mapping file holds one node index per rank") from None
    out: list[int] = []
    for ln, line in enumerate(text.splitlines(), 1):
        for x in line.split("#", 1)[0].split():
            try:
                v = int(x)
            except ValueError:
                raise ValueError(f"{p}:{ln}: {x[:40]!r} is not an integer node index "
                                 f"(a mapping file holds one node index per rank)") from None
            if not 0 <= v <= MAX_MAPPING_NODE:
                raise ValueError(f"{p}:{ln}: node index {v} (rank {len(out)}) is outside 0..={MAX_MAPPING_NODE}")
            out.append(v)
    if not out:
        raise ValueError(f"{p}: empty mapping file (one node index per rank)")
    return out


def map_trace(trace, machine="lassen", *, gpus_per_node: int | None = None, mode: str = "as-traced",
              collectives: bool = True, assume_buffers: str | None = None, progress=None, jobs: int | None = None,
              **sim_kw) -> dict:
    """Builds the traffic matrix of ``trace``, optimises the mapping and simulates linear, round-robin
    and the optimised mapping (side by side: ``jobs`` as in ``compare``, the same answer for any
    number); returns {"mapping": [...], "best": name, "rows": [...], ...}."""
    from ..sim import simulate
    from ._common import load_trace
    from ._parallel import check_jobs, pmap
    from .metrics import summary
    from .whatif import preset_gpus_per_node

    td = load_trace(trace)
    if assume_buffers is not None:
        sim_kw.setdefault("assume_buffers", assume_buffers)
    gpn = int(gpus_per_node or preset_gpus_per_node(machine))
    W = traffic_matrix(td, collectives=collectives)
    t0 = time.monotonic()
    opt = optimise_mapping(W, gpn)
    t_opt = time.monotonic() - t0
    cands = {"linear": linear_mapping(td.nranks, gpn), "round-robin": round_robin_mapping(td.nranks, gpn),
             "optimised": opt}
    total = float(W.sum())
    rows: list[dict[str, Any]] = []
    sim_kw = {k: v for k, v in sim_kw.items() if v is not None}
    sim_kw.pop("mapping", None)

    def run(name: str, stop) -> dict:
        return simulate(td.path, machine, mode=mode, gpus_per_node=gpn, mapping=[int(x) for x in cands[name]],
                        progress=stop, **sim_kw)

    for (name, m), rep in zip(cands.items(), pmap(run, list(cands), check_jobs(jobs, td.nranks), progress)):
        s = summary(rep)
        inter = inter_node_bytes(W, m)
        rows.append({"mapping": name, "inter_node_bytes": inter, "inter_node_share": inter / total if total else 0.0,
                     "nodes": int(rep["nodes"]), **s})
    by = {r["mapping"]: r for r in rows}
    best = min(rows, key=lambda r: (r["comm_s"], r["mapping"] != "optimised"))["mapping"]
    return {"trace": str(td.path), "machine": str(machine), "mode": mode, "nranks": td.nranks,
            "gpus_per_node": gpn, "total_bytes": total, "optimiser_s": t_opt, "rows": rows,
            "best": best, "mapping": [int(x) for x in cands[best]], "optimised": [int(x) for x in opt],
            "improvement": (by["linear"]["comm_s"] / by["optimised"]["comm_s"]) if by["optimised"]["comm_s"] else float("nan")}

"""Consistency checks of a trace's communication (used by the generator tests; cheap enough for
traces of a few million rows, except ``replay_check`` which walks rows in Python).

* ``check_p2p``: every message sent has a receive on the peer with the same communicator and
  tag, in order, and of the same size (MPI's non-overtaking order per source/tag/comm).
* ``check_collectives``: every member of a communicator calls the same sequence of collectives
  (op and root).
* ``replay_check``: a strict replay (every send completes only when its receive is posted, like
  rendezvous; nonblocking requests complete at their Wait) that must reach every rank's end:
  no deadlock, every request waited exactly once, no unknown request waited.
"""
from __future__ import annotations

from collections import defaultdict, deque

import numpy as np
import pandas as pd

from ..trace import ANY_SOURCE, ANY_TAG, COLLECTIVES, PROC_NULL, Trace, TraceError
from ..vocab import (
    BLOCKING_RECV_OPS,
    BLOCKING_SEND_OPS,
    NONBLOCKING_RECV_OPS,
    NONBLOCKING_SEND_OPS,
    RECV_ONLY_OPS,
    SEND_OPS,
)

NONBLOCKING_P2P = NONBLOCKING_SEND_OPS | NONBLOCKING_RECV_OPS
BLOCKING_P2P = BLOCKING_SEND_OPS | BLOCKING_RECV_OPS | {"Sendrecv"}


def _to_world(trace: Trace, comm: np.ndarray, peer: np.ndarray) -> np.ndarray:
    out = peer.astype(np.int64).copy()
    for c in trace.comms:
        if c.members is None:
            continue
        m = (comm == c.id) & (peer >= 0)
        out[m] = np.asarray(c.members, np.int64)[peer[m]]
    return out


def message_table(trace: Trace) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(sends, receives) with columns src, dst, comm, tag, size, seq (world ranks)."""
    df = trace.table.select(["rank", "seq", "op", "peer", "tag", "comm_id", "bytes", "recv_bytes",
                             "recv_peer", "recv_tag"]).to_pandas()
    df["op"] = df["op"].astype(str)
    s = df[df.op.isin(SEND_OPS) & (df.peer >= 0)]
    r = df[df.op.isin(RECV_ONLY_OPS) & (df.peer != PROC_NULL)]
    sr = df[(df.op == "Sendrecv") & (df.recv_peer != PROC_NULL)]
    sends = pd.DataFrame({"src": s["rank"].to_numpy(np.int64),
                          "dst": _to_world(trace, s.comm_id.to_numpy(), s.peer.to_numpy()),
                          "comm": s.comm_id.to_numpy(np.int64), "tag": s.tag.to_numpy(np.int64),
                          "size": s["bytes"].to_numpy(np.int64), "seq": s.seq.to_numpy(np.int64)})
    recvs = pd.concat([
        pd.DataFrame({"src": _to_world(trace, r.comm_id.to_numpy(), r.peer.to_numpy()),
                      "dst": r["rank"].to_numpy(np.int64), "comm": r.comm_id.to_numpy(np.int64),
                      "tag": r.tag.to_numpy(np.int64), "size": r.recv_bytes.to_numpy(np.int64),
                      "seq": r.seq.to_numpy(np.int64)}),
        pd.DataFrame({"src": _to_world(trace, sr.comm_id.to_numpy(), sr.recv_peer.to_numpy()),
                      "dst": sr["rank"].to_numpy(np.int64), "comm": sr.comm_id.to_numpy(np.int64),
                      "tag": sr.recv_tag.to_numpy(np.int64), "size": sr.recv_bytes.to_numpy(np.int64),
                      "seq": sr.seq.to_numpy(np.int64)}),
    ], ignore_index=True)
    return sends, recvs


def check_p2p(trace: Trace) -> int:
    """Raise TraceError on the first unmatched message; return the number of messages."""
    sends, recvs = message_table(trace)
    if (recvs.src == ANY_SOURCE).any() or (recvs.tag == ANY_TAG).any():
        raise TraceError("check_p2p does not handle wildcard receives")
    key = ["src", "dst", "comm", "tag", "seq"]
    s = sends.sort_values(key, kind="stable").reset_index(drop=True)
    r = recvs.sort_values(["src", "dst", "comm", "tag", "seq"], kind="stable").reset_index(drop=True)
    gs = s.groupby(["src", "dst", "comm", "tag"]).size()
    gr = r.groupby(["src", "dst", "comm", "tag"]).size()
    both = gs.to_frame("sends").join(gr.to_frame("recvs"), how="outer").fillna(0)
    bad = both[both.sends != both.recvs]
    if len(bad):
        (src, dst, comm, tag), row = next(iter(bad.iterrows()))
        raise TraceError(f"{int(row.sends)} sends but {int(row.recvs)} receives from rank {src} to "
                         f"rank {dst} (comm {comm}, tag {tag})")
    diff = s["size"].to_numpy() != r["size"].to_numpy()
    if diff.any():
        i = int(np.argmax(diff))
        raise TraceError(f"rank {s.src[i]} (seq {s.seq[i]}) sends {s['size'][i]} B to rank {s.dst[i]} "
                         f"tag {s.tag[i]}, whose receive (seq {r.seq[i]}) posts {r['size'][i]} B")
    return len(s)


def check_collectives(trace: Trace) -> int:
    """Every member of a communicator calls the same collectives in the same order."""
    df = trace.table.select(["rank", "seq", "op", "comm_id", "root"]).to_pandas()
    df["op"] = df["op"].astype(str)
    df = df[df.op.isin(COLLECTIVES)].sort_values(["rank", "seq"])
    n = 0
    for c in trace.comms:
        members = list(range(trace.nranks)) if c.members is None else c.members
        sub = df[df.comm_id == c.id]
        ref = None
        for m in members:
            seqs = sub[sub["rank"] == m][["op", "root"]].to_numpy().tolist()
            if ref is None:
                ref = seqs
            elif seqs != ref:
                raise TraceError(f"communicator {c.id}: rank {m} calls collectives {seqs[:4]}... but "
                                 f"rank {members[0]} calls {ref[:4]}...")
        n += len(ref or [])
    return n


def replay_check(trace: Trace, max_rows: int = 2_000_000) -> None:
    """Strict replay: raise TraceError on a deadlock or a bad request."""
    t = trace.table
    if len(t) > max_rows:
        raise TraceError(f"replay_check is for small traces ({len(t)} rows > {max_rows})")
    df = t.select(["rank", "seq", "op", "peer", "tag", "comm_id", "recv_peer", "recv_tag", "req",
                   "reqs"]).to_pandas().sort_values(["rank", "seq"])
    world = {c.id: (c.members if c.members is not None else None) for c in trace.comms}

    def w(comm, peer):
        mem = world[comm]
        return peer if mem is None else mem[peer]

    progs: list[list] = [[] for _ in range(trace.nranks)]
    for row in df.itertuples(index=False):
        progs[row.rank].append(row)
    pc = [0] * trace.nranks
    reqs: list[dict] = [dict() for _ in range(trace.nranks)]   # req -> record
    sendq: dict = defaultdict(deque)   # (src, dst, comm, tag) -> records of unmatched sends
    recvq: dict = defaultdict(deque)
    coll: dict = defaultdict(lambda: defaultdict(int))     # comm -> index -> arrivals
    coll_pos: list[defaultdict[int, int]] = [defaultdict(int) for _ in range(trace.nranks)]
    posted: list[set] = [set() for _ in range(trace.nranks)]   # rows already posted (blocking ops)

    def post(kind, key):
        rec = {"done": False}
        other = recvq if kind == "s" else sendq
        mine = sendq if kind == "s" else recvq
        if other[key]:
            o = other[key].popleft()
            o["done"] = rec["done"] = True
        else:
            mine[key].append(rec)
        return rec

    def members(comm):
        mem = world[comm]
        return range(trace.nranks) if mem is None else mem

    active = True
    while active:
        active = False
        for r in range(trace.nranks):
            while pc[r] < len(progs[r]):
                row = progs[r][pc[r]]
                op = row.op
                if op in NONBLOCKING_P2P:
                    if row.peer == PROC_NULL:
                        rec = {"done": True}
                    elif op == "Irecv":
                        rec = post("r", (w(row.comm_id, row.peer), r, row.comm_id, row.tag))
                    else:
                        rec = post("s", (r, w(row.comm_id, row.peer), row.comm_id, row.tag))
                    if row.req in reqs[r]:
                        raise TraceError(f"rank {r} seq {row.seq}: request {row.req} reused while alive")
                    reqs[r][row.req] = rec
                elif op in BLOCKING_P2P:
                    key = (r, row.seq)
                    if key not in posted[r]:
                        recs = []
                        if op == "Recv":
                            recs.append(post("r", (w(row.comm_id, row.peer), r, row.comm_id, row.tag)))
                        else:
                            if row.peer != PROC_NULL:
                                recs.append(post("s", (r, w(row.comm_id, row.peer), row.comm_id, row.tag)))
                            if op == "Sendrecv" and row.recv_peer != PROC_NULL:
                                recs.append(post("r", (w(row.comm_id, row.recv_peer), r, row.comm_id,
                                                       row.recv_tag)))
                        posted[r].add(key)
                        reqs[r][("blk", row.seq)] = recs
                    if not all(x["done"] for x in reqs[r][("blk", row.seq)]):
                        break
                    del reqs[r][("blk", row.seq)]
                elif op in ("Wait", "Waitall"):
                    names = [row.req] if op == "Wait" and row.reqs is None else list(row.reqs)
                    for q in names:
                        if q not in reqs[r]:
                            raise TraceError(f"rank {r} seq {row.seq}: {op} on unknown request {q}")
                    if not all(reqs[r][q]["done"] for q in names):
                        break
                    for q in names:
                        del reqs[r][q]
                elif op in COLLECTIVES:
                    c = row.comm_id
                    i = coll_pos[r][c]
                    key = (r, row.seq)
                    if key not in posted[r]:
                        coll[c][i] += 1
                        posted[r].add(key)
                    if coll[c][i] < len(members(c)):
                        break
                    coll_pos[r][c] += 1
                pc[r] += 1
                active = True
    stuck = [r for r in range(trace.nranks) if pc[r] < len(progs[r])]
    if stuck:
        r = stuck[0]
        row = progs[r][pc[r]]
        raise TraceError(f"deadlock: {len(stuck)} ranks cannot finish; rank {r} waits at seq {row.seq} "
                         f"({row.op})")
    left = [(r, q) for r in range(trace.nranks) for q in reqs[r]]
    if left:
        raise TraceError(f"rank {left[0][0]}: request {left[0][1]} never waited")

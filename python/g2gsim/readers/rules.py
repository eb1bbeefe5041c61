"""The rules every trace reader applies, in one place.

The OTF2 reader (``otf2_reader``/``otf2_events``) and the DUMPI reader (``dumpi_reader``) turn
different records into the same rows; where a rule is a choice (what a successful ``MPI_Test`` is,
what a negative peer means, how requests are numbered), it is made here and both follow it.  A new
reader (a Rust DUMPI reader, a detector of untraced windows) reuses these functions or restates
them with a test against them.

Rows
    ``Row`` names the fields of one row under construction; it is the ``TraceBuilder.add``
    keyword set (``trace.DEFAULTS``).  The OTF2 converter keeps its rows as plain int lists in the
    layout ``ROW_LAYOUT`` for speed (a list is ~7x cheaper to create than an object with slots).

Compute gaps (``compute_gap``)
    The host time between leaving one traced call and entering the next is a ``Compute`` row of
    that duration (``t_start_ns`` = the leave, ``t_end_ns`` = the enter), less the time the
    measurement was switched off in between; no row when the next call enters at or before the
    previous leave.  Calls a reader skips (``MPI_Comm_rank``, probes, MPI-IO, ...) are not leaves:
    their time is part of the next gap.

Completions (``completion``)
    A wait or test call that completes requests becomes ``Wait`` (one request, ``req``) or
    ``Waitall`` (several, ``reqs``): a successful test is a wait.  One that completes nothing keeps
    its own name (``Test``, ``Testany``, ``Testall``, ``Testsome``, ``Waitany``, ``Waitsome``) and
    lists the requests it looked at in ``reqs``.

Peers (``dest_peer``, ``source_peer``)
    Peers stay communicator ranks.  A negative destination is ``PROC_NULL``; a source equal to the
    format's wildcard is ``ANY_SOURCE`` (unless the status says the message came from
    ``MPI_PROC_NULL``), any other negative source is ``PROC_NULL``; a peer outside the
    communicator is an error naming the call.

Requests (``Requests``)
    Request ids are per rank, non-zero, unique while alive: created by the row of the call that
    starts the operation (``Isend``, ``Irecv``, ``Ibcast``, ...) and completed by a ``Wait*``.
    ``Requests`` numbers them 1, 2, ... in creation order from the format's handles (DUMPI's are
    reused by MPI); the OTF2 reader keeps the archive's request ids, which are unique per location.
    0 means "no request".  Completing a handle nobody created counts as an orphan (reported).

Matching (``check_matching``, ``report_matching``)
    After import, per (communicator, source, destination, tag) the k-th send must meet the k-th
    receive; wildcard receives take the earliest compatible send left over.  Unmatched and
    truncated messages are warnings naming rank, peer, tag and time (``strict``: an error).
"""
from __future__ import annotations

import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..trace import ANY_SOURCE, ANY_TAG, DEFAULTS, PROC_NULL, Trace, TraceError
from ..vocab import RECV_ONLY_OPS, SEND_ONLY_OPS

__all__ = ["Row", "ROW_LAYOUT", "compute_gap", "completion", "dest_peer", "source_peer", "Requests",
           "check_matching", "report_matching"]


# ------------------------------------------------------------------------------------ rows
class Row(NamedTuple):
    """One row of a rank as a reader builds it (the columns but rank and seq, which the builder
    assigns); ``row._asdict()`` is what ``TraceBuilder.add(rank, **row)`` takes."""
    op: str
    t_start_ns: int | None = DEFAULTS["t_start_ns"]
    t_end_ns: int | None = DEFAULTS["t_end_ns"]
    dur_ns: int = DEFAULTS["dur_ns"]
    peer: int = DEFAULTS["peer"]
    tag: int = DEFAULTS["tag"]
    comm_id: int = DEFAULTS["comm_id"]
    bytes: int = DEFAULTS["bytes"]
    recv_bytes: int = DEFAULTS["recv_bytes"]
    recv_peer: int = DEFAULTS["recv_peer"]
    recv_tag: int = DEFAULTS["recv_tag"]
    root: int = DEFAULTS["root"]
    req: int = DEFAULTS["req"]
    reqs: list[int] | None = DEFAULTS["reqs"]
    counts_bytes: list[int] | None = DEFAULTS["counts_bytes"]
    recv_counts_bytes: list[int] | None = DEFAULTS["recv_counts_bytes"]
    mem_space: str = DEFAULTS["mem_space"]
    copy_kind: str | None = DEFAULTS["copy_kind"]
    stream: int = DEFAULTS["stream"]
    contiguous: bool = DEFAULTS["contiguous"]
    callsite: str | None = DEFAULTS["callsite"]
    priority: int = DEFAULTS["priority"]


#: the OTF2 converter's int-list rows: field names in list order (codes for op, mem_space,
#: copy_kind; ``reqs`` an index into the converter's request lists; ``priority`` only on Kernel rows)
ROW_LAYOUT = ("op", "t_start_ns", "t_end_ns", "dur_ns", "peer", "tag", "comm_id", "bytes", "recv_bytes",
              "recv_peer", "recv_tag", "root", "req", "mem_space", "copy_kind", "stream", "contiguous",
              "reqs", "priority")


# ------------------------------------------------------------------------------------ compute gaps
def compute_gap(last_leave: int | None, enter: int, off_ns: int = 0) -> int | None:
    """Duration of the Compute row between a call left at ``last_leave`` and one entered at
    ``enter`` (``off_ns`` of measurement-off time in between taken out, never below 0), or None
    when there is no gap (first call, or an overlapping one)."""
    if last_leave is None or enter <= last_leave:
        return None
    d = enter - last_leave - off_ns
    return d if d > 0 else 0


# ------------------------------------------------------------------------------------ completions
def completion(done: list[int], call: str, looked_at: Iterable[int] = ()) -> tuple[str, dict[str, Any]]:
    """(op, fields) of a wait/test call ``call`` that completed the requests ``done`` (our ids),
    having looked at ``looked_at`` when it completed nothing."""
    if len(done) == 1:
        return "Wait", {"req": done[0]}
    if done:
        return "Waitall", {"reqs": list(done)}
    return call, {"reqs": list(looked_at)}


# ------------------------------------------------------------------------------------ peers
def dest_peer(d: int, size: int, where: str) -> int:
    """A destination rank of a communicator of ``size``: negative -> PROC_NULL."""
    if d < 0:
        return PROC_NULL
    if d >= size:
        raise TraceError(f"{where}: destination {d} outside communicator of {size}")
    return d


def source_peer(s: int, size: int, where: str, wildcard: int, status_source: int | None = None) -> int:
    """A source rank: the format's ``wildcard`` -> ANY_SOURCE (PROC_NULL when the status says the
    message came from MPI_PROC_NULL, a negative ``status_source``), other negatives -> PROC_NULL."""
    if s == wildcard:
        if status_source is not None and status_source < 0:
            return PROC_NULL
        return ANY_SOURCE
    if s < 0:
        return PROC_NULL
    if s >= size:
        raise TraceError(f"{where}: source {s} outside communicator of {size}")
    return s


# ------------------------------------------------------------------------------------ requests
class Requests:
    """A rank's requests: the format's handles (reused by MPI once completed) to our ids, numbered
    1, 2, ... in creation order.  ``null`` handles and those of persistent requests (``inert``) are
    not orphans when completed without being active."""

    def __init__(self, null_handle: int):
        self.null = null_handle
        self.active: dict[int, int] = {}
        self.next_id = 1
        self.orphans = 0

    def new(self, handle: int) -> int:
        q = self.next_id
        self.next_id += 1
        self.active[handle] = q
        return q

    def take(self, handle: int, inert: Any = ()) -> int | None:
        """Complete ``handle``: our id, or None (null, or unknown: counted as an orphan)."""
        q = self.active.pop(handle, None)
        if q is None and handle > self.null and handle not in inert:
            self.orphans += 1
        return q

    def peek(self, handles: Iterable[int], inert: Any = ()) -> list[int]:
        """Our ids of the active ``handles`` (a test that completed nothing)."""
        out = []
        for h in handles:
            q = self.active.get(h)
            if q is not None:
                out.append(q)
            elif h > self.null and h not in inert:
                self.orphans += 1
        return out

    def drop(self, handle: int) -> None:
        self.active.pop(handle, None)


# ------------------------------------------------------------------------------------ matching
_SENDS = tuple(sorted(SEND_ONLY_OPS))
_RECVS = tuple(sorted(RECV_ONLY_OPS))


def report_matching(trace: Trace, path: str | Path, strict: bool = False) -> list[str]:
    """``check_matching`` after an import: problems become one warning naming ``path`` (the first
    five of them), or a ``TraceError`` with ``strict``.  Returns the problems."""
    problems = check_matching(trace, strict=strict)
    if problems:
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        warnings.warn(f"{path}: {len(problems)} point-to-point matching problem(s): "
                      + "; ".join(problems[:5]) + more, stacklevel=3)
    return problems


def check_matching(trace: Trace, strict: bool = False) -> list[str]:
    """Point-to-point matching check: per (comm, source, destination, tag), the k-th send must
    meet the k-th receive (program order).  Returns one message per unmatched send or receive and
    per truncated message (send larger than the posted receive), naming rank, peer, tag and time;
    with ``strict`` a non-empty result raises ``TraceError``.  Wildcard receives (ANY_SOURCE /
    ANY_TAG) take the earliest compatible send left over by the exact matching."""
    t = trace.table
    where = str(trace.path) if trace.path else "<trace>"
    opcol = t.column("op")
    is_send, is_recv, is_sr = (_op_mask(opcol, names) for names in (_SENDS, _RECVS, ("Sendrecv",)))
    if not (is_send.any() or is_recv.any() or is_sr.any()):
        return []
    col = {k: t.column(k).to_numpy() for k in ("rank", "seq", "peer", "tag", "comm_id", "bytes",
                                                "recv_bytes", "recv_peer", "recv_tag")}
    tstart = t.column("t_start_ns").to_numpy(zero_copy_only=False)
    members = {c.id: (np.arange(trace.nranks) if c.members is None else np.asarray(c.members))
               for c in trace.comms}

    def to_world(comm, peer):
        out = np.full(len(peer), -100, dtype=np.int64)
        for cid in np.unique(comm):
            m = comm == cid
            mem = members.get(int(cid))
            p = peer[m]
            ok = (p >= 0) & (mem is not None) & (p < (len(mem) if mem is not None else 0))
            w = np.full(len(p), -100, dtype=np.int64)
            if mem is not None:
                w[ok] = mem[p[ok]]
            w[p == ANY_SOURCE] = ANY_SOURCE
            w[p == PROC_NULL] = PROC_NULL
            out[m] = w
        return out

    # sends: (comm, src, dst, tag, order, bytes, rank, seq, time)
    si = np.flatnonzero(is_send | is_sr)
    s_comm = col["comm_id"][si].astype(np.int64)
    s_dst = to_world(s_comm, col["peer"][si].astype(np.int64))
    sends = dict(comm=s_comm, src=col["rank"][si].astype(np.int64), dst=s_dst,
                 tag=col["tag"][si].astype(np.int64), nbytes=col["bytes"][si].astype(np.int64),
                 rank=col["rank"][si], seq=col["seq"][si], t=tstart[si],
                 peer=col["peer"][si])
    ri_plain = np.flatnonzero(is_recv)
    ri_sr = np.flatnonzero(is_sr)
    r_comm = np.concatenate([col["comm_id"][ri_plain], col["comm_id"][ri_sr]]).astype(np.int64)
    r_peer = np.concatenate([col["peer"][ri_plain], col["recv_peer"][ri_sr]]).astype(np.int64)
    r_tag = np.concatenate([col["tag"][ri_plain], col["recv_tag"][ri_sr]]).astype(np.int64)
    ri = np.concatenate([ri_plain, ri_sr])
    recvs = dict(comm=r_comm, src=to_world(r_comm, r_peer), dst=col["rank"][ri].astype(np.int64),
                 tag=r_tag, nbytes=col["recv_bytes"][ri].astype(np.int64), rank=col["rank"][ri],
                 seq=col["seq"][ri], t=tstart[ri], peer=r_peer)
    problems: list[str] = []
    # drop PROC_NULL and invalid peers (reported)
    for side, d, key in (("send", sends, "dst"), ("receive", recvs, "src")):
        bad = d[key] == -100
        for i in np.flatnonzero(bad)[:50]:
            problems.append(f"{side} at rank {d['rank'][i]} (seq {d['seq'][i]}, t={d['t'][i]} ns): "
                            f"peer {d['peer'][i]} is not a rank of communicator {d['comm'][i]}")
        keep = (d[key] != -100) & (d[key] != PROC_NULL)
        for k in d:
            d[k] = d[k][keep]

    wild = (recvs["src"] == ANY_SOURCE) | (recvs["tag"] == ANY_TAG)
    exact = {k: v[~wild] for k, v in recvs.items()}
    wildr = {k: v[wild] for k, v in recvs.items()}
    # program order within (comm, src, dst, tag): sort by key then by seq.  Fast path: the four
    # keys packed into one int64 group code (order-preserving), one stable sort per side and a
    # binary-search join; the general path (codes too wide) sorts and joins with lexsort.
    fast = _match_packed(sends, exact)
    if fast is not None:
        so, ro, s_matched, r_matched, si_m, ri_m = fast
        _truncated(problems, sends, exact, so, ro, si_m, ri_m)
    else:
        so, ro, s_matched, r_matched = _match_lexsort(problems, sends, exact)
    _wild_and_report(problems, sends, exact, wildr, so, ro, s_matched, r_matched)
    if strict and problems:
        raise TraceError(f"{where}: {len(problems)} point-to-point matching problem(s): "
                         + "; ".join(problems[:10]))
    return problems


def _op_mask(col, names) -> np.ndarray:
    """Rows of the string column ``col`` whose value is one of ``names`` (bool numpy array)."""
    m = pc.is_in(col, value_set=pa.array(list(names), type=pa.string()))
    return np.asarray(pc.fill_null(m, False).to_numpy(zero_copy_only=False), dtype=bool)


def _pack(cols: list[list[np.ndarray]]):
    """Order-preserving int64 codes of the tuples (primary key first) of several sides at once:
    ``cols[j]`` holds key j of each side.  None when the codes do not fit in 62 bits."""
    nsides = len(cols[0])
    codes = [np.zeros(len(cols[0][i]), dtype=np.int64) for i in range(nsides)]
    total = 1
    for key in cols:
        vals = [v for v in key if len(v)]
        if not vals:
            continue
        lo = min(int(v.min()) for v in vals)
        hi = max(int(v.max()) for v in vals)
        r = hi - lo + 1
        total *= r
        if total >= 1 << 62:
            return None
        for i in range(nsides):
            codes[i] = codes[i] * r + (key[i].astype(np.int64) - lo)
    return codes, total


def _match_packed(sends: dict, exact: dict):
    """The k-th send of each (comm, src, dst, tag) meets the k-th exact receive: returns (send
    order, receive order, matched flags of both in those orders, matched pairs as positions in
    those orders) or None when the keys are too wide to pack."""
    names = ("comm", "src", "dst", "tag")
    p = _pack([[sends[k], exact[k]] for k in names])
    if p is None:
        return None
    (gs, gr), ngroups = p
    out = []
    kmax = 0
    for g, d in ((gs, sends), (gr, exact)):
        n = len(g)
        seq = d["seq"].astype(np.int64)
        smax = int(seq.max()) + 1 if n else 1
        if ngroups * smax >= 1 << 62:
            return None
        o = np.argsort(g * smax + seq, kind="stable")
        gsorted = g[o]
        if n:
            new = np.ones(n, dtype=bool)
            new[1:] = gsorted[1:] != gsorted[:-1]
            grp = np.cumsum(new) - 1
            start = np.flatnonzero(new)
            k = np.arange(n) - start[grp]
            kmax = max(kmax, int(k.max()) + 1)
        else:
            k = np.zeros(0, dtype=np.int64)
        out.append((o, gsorted, k))
    (so, sg, sk), (ro, rg, rk) = out
    if ngroups * max(kmax, 1) >= 1 << 62:
        return None
    js = sg * kmax + sk                     # strictly increasing (group, k) codes
    jr = rg * kmax + rk
    ns_, nr_ = len(js), len(jr)
    s_matched = np.zeros(ns_, dtype=bool)
    r_matched = np.zeros(nr_, dtype=bool)
    if ns_ and nr_:
        pos = np.searchsorted(js, jr)
        posc = np.minimum(pos, ns_ - 1)
        hit = (pos < ns_) & (js[posc] == jr)
        ri_m = np.flatnonzero(hit)
        si_m = pos[hit]
    else:
        si_m = ri_m = np.zeros(0, dtype=np.int64)
    s_matched[si_m] = True
    r_matched[ri_m] = True
    return so, ro, s_matched, r_matched, si_m, ri_m


def _truncated(problems, sends, exact, so, ro, si_m, ri_m) -> None:
    sb = sends["nbytes"][so[si_m]]
    rb = exact["nbytes"][ro[ri_m]]
    for q in np.flatnonzero(sb > rb)[:100]:
        i, j = so[si_m[q]], ro[ri_m[q]]
        problems.append(
            f"truncated message: rank {sends['rank'][i]} -> rank {exact['rank'][j]} "
            f"(comm {sends['comm'][i]}, tag {sends['tag'][i]}): {sb[q]} bytes sent "
            f"(seq {sends['seq'][i]}) into a {rb[q]}-byte receive (seq {exact['seq'][j]})")


def _match_lexsort(problems, sends, exact):
    """The general (unpacked) matching of ``check_matching``."""
    def order_key(d):
        # program order within (comm, src, dst, tag): sort by key then by (rank, seq)
        o = np.lexsort((d["seq"], d["tag"], d["dst"], d["src"], d["comm"]))
        return o

    def ranked(d):
        o = order_key(d)
        keys = np.stack([d["comm"][o], d["src"][o], d["dst"][o], d["tag"][o]], axis=1)
        if len(o):
            new = np.ones(len(o), dtype=bool)
            new[1:] = np.any(keys[1:] != keys[:-1], axis=1)
            grp = np.cumsum(new) - 1
            start = np.flatnonzero(new)
            k = np.arange(len(o)) - start[grp]
        else:
            k = np.zeros(0, dtype=np.int64)
        return o, keys, k

    so, skeys, sk = ranked(sends)
    ro, rkeys, rk = ranked(exact)
    # join on (key, k): sort both sides together; a match is an adjacent (send, receive) pair
    ns_, nr_ = len(so), len(ro)
    allk = np.concatenate([np.column_stack([skeys, sk]) if ns_ else np.zeros((0, 5), np.int64),
                           np.column_stack([rkeys, rk]) if nr_ else np.zeros((0, 5), np.int64)])
    side = np.concatenate([np.zeros(ns_, np.int64), np.ones(nr_, np.int64)])
    idx = np.concatenate([np.arange(ns_), np.arange(nr_)])
    o = np.lexsort((side, allk[:, 4], allk[:, 3], allk[:, 2], allk[:, 1], allk[:, 0]))
    s_matched = np.zeros(ns_, dtype=bool)
    r_matched = np.zeros(nr_, dtype=bool)
    if len(o) > 1:
        ks = allk[o]
        pair = np.all(ks[1:] == ks[:-1], axis=1) & (side[o][:-1] == 0) & (side[o][1:] == 1)
        pi = np.flatnonzero(pair)
        si_m, ri_m = idx[o][pi], idx[o][pi + 1]
        s_matched[si_m] = True
        r_matched[ri_m] = True
        _truncated(problems, sends, exact, so, ro, si_m, ri_m)
    return so, ro, s_matched, r_matched


def _wild_and_report(problems, sends, exact, wildr, so, ro, s_matched, r_matched) -> None:
    # wildcard receives take the earliest compatible unmatched send (by send time)
    left = [so[i] for i in np.flatnonzero(~s_matched)]
    wo = np.lexsort((wildr["seq"], wildr["dst"]))
    w_matched = np.zeros(len(wo), dtype=bool)
    if len(wo):
        left.sort(key=lambda i: (sends["t"][i], sends["rank"][i], sends["seq"][i]))
        used = set()
        for jj, j in enumerate(wo):
            for i in left:
                if i in used:
                    continue
                if sends["comm"][i] == wildr["comm"][j] and sends["dst"][i] == wildr["dst"][j] \
                        and wildr["src"][j] in (ANY_SOURCE, sends["src"][i]) \
                        and wildr["tag"][j] in (ANY_TAG, sends["tag"][i]):
                    used.add(i)
                    w_matched[jj] = True
                    break
        left = [i for i in left if i not in used]
    for i in left:
        problems.append(f"unmatched send: rank {sends['rank'][i]} -> peer {sends['peer'][i]} "
                        f"(comm {sends['comm'][i]}, tag {sends['tag'][i]}, {sends['nbytes'][i]} "
                        f"bytes) at seq {sends['seq'][i]}, t={sends['t'][i]} ns")
    for j in np.flatnonzero(~r_matched):
        i = int(ro[j])
        problems.append(f"unmatched receive: rank {exact['rank'][i]} <- peer {exact['peer'][i]} "
                        f"(comm {exact['comm'][i]}, tag {exact['tag'][i]}) at seq "
                        f"{exact['seq'][i]}, t={exact['t'][i]} ns")
    for wj in np.flatnonzero(~w_matched):
        k = int(wo[wj])
        problems.append(f"unmatched receive: rank {wildr['rank'][k]} <- peer {wildr['peer'][k]} "
                        f"(comm {wildr['comm'][k]}, tag {wildr['tag'][k]}) at seq "
                        f"{wildr['seq'][k]}, t={wildr['t'][k]} ns")

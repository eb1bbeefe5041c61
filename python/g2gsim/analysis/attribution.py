"""Splitting simulated time by message-size class, call site and (rank, operation).

The core reports exact totals per operation name (``per_op``) and per rank (``per_rank``), but not per
call. Two ways to get the time of each call:

* **timeline** (exact; the name of the method since it first came from the timeline): simulate with
  ``call_times=PATH``; the core writes every call's duration, rank by rank in trace order (a binary
  file of little-endian u64: ``G2GCALLS``, version 1, the number of ranks, each rank's count, then the
  durations in ns), and we join them to the trace rows by (rank, ``seq``).  A core built before
  ``call_times`` existed is read through its Perfetto timeline instead (``timeline=PATH``: one trace
  event per call with the rank as ``tid`` and ``seq`` as ``args.event``): the same numbers, to the
  ns, at the cost of writing and parsing JSON (as long as the simulation itself on a 1,024-rank
  halo).
* **estimate**: each row gets a weight (Compute: its duration; MPI calls and copies:
  ``LAT + bytes / BW``), and the weights are scaled so that every (rank, operation) cell matches the
  core's exact marginals (iterative proportional fitting to ``per_rank`` comm/compute and ``per_op``).
  Totals per operation and per rank are exact, the split inside an operation is a model.

Time spent in a ``Wait``/``Waitall`` is split over the requests it completes (by the same weights) and
counted in the size class of the message that started each request; the call site is the one of the
``Wait`` itself (where a profiler sees the time).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ..vocab import WAIT_OPS
from ._common import COLL_CLASS, COPY_CLASS, SEND_OPS, TraceData, category, size_class

LAT_S = 2e-6          # estimate: fixed cost of a call
BW_BYTES_PER_S = 10e9  # estimate: bytes per second

UNKNOWN_SITE = "(unknown call site)"

CALL_TIMES_MAGIC = int.from_bytes(b"G2GCALLS", "little")  # the first word of a call-times file


@dataclass
class Attribution:
    method: str                 # "timeline" or "estimate"
    nranks: int
    rows: pd.DataFrame          # rank, seq, op, label, time_s: every row of the trace
    parts: pd.DataFrame         # rank, seq, op, callsite, cls, cat, size, time_s: communication pieces
    notes: list[str] = field(default_factory=list)

    def by_class(self) -> dict[str, float]:
        """Average time per rank by message-size class (plus collectives and explicit copies), seconds."""
        g = self.parts.groupby("cls", sort=False)["time_s"].sum() / self.nranks
        return {str(k): float(v) for k, v in g.items()}

    def by_callsite(self) -> dict[str, float]:
        g = self.parts.groupby("callsite", sort=False, dropna=False)["time_s"].sum() / self.nranks
        return {str(k) if k is not None else UNKNOWN_SITE: float(v) for k, v in g.items()}

    def rank_label_matrix(self) -> pd.DataFrame:
        """Seconds per (rank, label); label = op name, Memcpy split as 'Memcpy D2H' etc."""
        m = self.rows.groupby(["rank", "label"], sort=False)["time_s"].sum().unstack(fill_value=0.0)
        return m.reindex(range(self.nranks), fill_value=0.0)

    def counts_per_label(self) -> dict[str, int]:
        return {str(k): int(v) for k, v in self.rows.groupby("label", sort=False).size().items()}


class Attributor:
    """Precomputes the mode-independent structure of a trace (message parts, weights)."""

    def __init__(self, td: TraceData):
        self.td = td
        df = td.df
        self.nranks = td.nranks
        ops = df["op"].to_numpy()
        uniq, inv = np.unique(ops.astype(str), return_inverse=True)
        cat = np.array([category(o) for o in uniq], dtype=object)[inv]
        size = np.maximum(df["bytes"].to_numpy(np.int64), df["recv_bytes"].to_numpy(np.int64))
        label = ops.astype(object).copy()
        memcpy = ops == "Memcpy"
        if memcpy.any():
            kinds = df["copy_kind"].to_numpy(object)
            label[memcpy] = ["Memcpy " + (str(k).upper() if k is not None and k == k else "?") for k in kinds[memcpy]]
        base = pd.DataFrame({"rank": df["rank"].to_numpy(np.int64), "seq": df["seq"].to_numpy(np.int64),
                             "op": ops, "label": label, "cat": cat, "size": size,
                             "callsite": df["callsite"].to_numpy(object)})
        w = np.zeros(len(df))
        comp = cat == "compute"
        w[comp] = df["dur_ns"].to_numpy(np.float64)[comp] * 1e-9 + 1e-12
        w[cat == "copy"] = LAT_S + size[cat == "copy"] / BW_BYTES_PER_S
        msg = (cat == "p2p") | (cat == "collective")
        w[msg] = LAT_S + size[msg] / BW_BYTES_PER_S
        # --- communication parts: non-wait calls are one part; waits split over their requests
        cls = np.where(cat == "collective", COLL_CLASS, size_class(size))
        cls = np.where(cat == "copy", COPY_CLASS, cls)
        base["cls"] = cls
        parts_direct = base[msg | (cat == "copy")].copy()
        parts_direct["w"] = w[msg | (cat == "copy")]
        is_wait = np.isin(ops, list(WAIT_OPS))
        parts_wait = self._wait_parts(df, base, is_wait, cat)
        if len(parts_wait):
            wsum = parts_wait.groupby(["rank", "seq"], sort=False)["w"].sum()
            w_idx = pd.MultiIndex.from_arrays([base["rank"].to_numpy()[is_wait], base["seq"].to_numpy()[is_wait]])
            w[is_wait] = wsum.reindex(w_idx, fill_value=LAT_S).to_numpy()
        self.weights = w
        self.base = base
        self.parts = pd.concat([parts_direct, parts_wait], ignore_index=True) if len(parts_wait) else parts_direct
        self.parts = self.parts[["rank", "seq", "op", "callsite", "cls", "cat", "size", "w"]].reset_index(drop=True)
        # p2p messages by class, from the send side (MPI_PROC_NULL excluded)
        sends = df[df["op"].isin(SEND_OPS) & (df["peer"] >= 0)]
        sc = pd.DataFrame({"cls": size_class(sends["bytes"].to_numpy(np.int64)),
                           "bytes": sends["bytes"].to_numpy(np.int64)})
        agg = sc.groupby("cls").agg(messages=("bytes", "size"), bytes=("bytes", "sum"))
        self.class_messages = {str(k): {"messages": int(r.messages), "bytes": int(r.bytes)} for k, r in agg.iterrows()}

    @staticmethod
    def _wait_parts(df: pd.DataFrame, base: pd.DataFrame, is_wait: np.ndarray, cat: np.ndarray) -> pd.DataFrame:
        if not is_wait.any():
            return pd.DataFrame(columns=["rank", "seq", "op", "callsite", "cls", "cat", "size", "w"])
        reqs = df["reqs"].to_numpy(object)[is_wait]
        req1 = df["req"].to_numpy(np.uint64)[is_wait]
        lists = [list(r) if r is not None and len(r) else ([int(q)] if q else []) for r, q in zip(reqs, req1)]
        wb = base[is_wait].reset_index(drop=True)
        lens = np.array([len(x) for x in lists])
        flat = np.fromiter((int(v) for x in lists for v in x), dtype=np.int64, count=int(lens.sum()))
        ex = wb.loc[np.repeat(np.arange(len(wb)), lens), ["rank", "seq", "op", "callsite"]].reset_index(drop=True)
        ex["req"] = flat
        starts = (df["req"].to_numpy(np.uint64) != 0) & ~is_wait
        st = pd.DataFrame({"rank": base["rank"].to_numpy()[starts], "seq": base["seq"].to_numpy()[starts],
                           "req": df["req"].to_numpy(np.uint64)[starts].astype(np.int64),
                           "s_size": base["size"].to_numpy()[starts], "s_cat": cat[starts],
                           "s_cls": base["cls"].to_numpy()[starts]})
        ex = ex.sort_values("seq", kind="stable")
        st = st.sort_values("seq", kind="stable")
        m = pd.merge_asof(ex, st.rename(columns={"seq": "s_seq"}).assign(seq=lambda d: d["s_seq"]),
                          on="seq", by=["rank", "req"], direction="backward", allow_exact_matches=False)
        found = m["s_cat"].notna()
        m["cat"] = np.where(found, m["s_cat"], "p2p")
        m["cls"] = np.where(found, m["s_cls"], "unmatched waits")
        m["size"] = np.where(found, m["s_size"].fillna(0), 0).astype(np.int64)
        m["w"] = LAT_S + m["size"] / BW_BYTES_PER_S
        # waits with no request (e.g. on MPI_REQUEST_NULL) still own their time
        empty = wb[lens == 0]
        if len(empty):
            e = empty[["rank", "seq", "op", "callsite"]].copy()
            e["cat"], e["cls"], e["size"], e["w"] = "p2p", "unmatched waits", 0, LAT_S
            m = pd.concat([m, e], ignore_index=True)
        return m[["rank", "seq", "op", "callsite", "cls", "cat", "size", "w"]]

    # ------------------------------------------------------------------------------------------
    def attribute(self, report: dict, timeline: str | Path | None = None,
                  call_times: str | Path | None = None) -> Attribution:
        """Per-row and per-part times for one simulation ``report``: exact from the core's call-times
        file (``call_times``) or its timeline, else estimated."""
        notes: list[str] = []
        times = None
        method = "estimate"
        if call_times is not None:
            times = self._times_from_call_times(Path(call_times), report, notes)
            if times is not None:
                method = "timeline"
        if times is None and timeline is not None and Path(timeline).exists():
            times = self._times_from_timeline(Path(timeline), report, notes)
            if times is not None:
                method = "timeline"
        if times is None:
            times = self._times_estimated(report)
        rows = self.base[["rank", "seq", "op", "label"]].copy()
        rows["time_s"] = times
        parts = self.parts.copy()
        key_rows = pd.MultiIndex.from_arrays([self.base["rank"], self.base["seq"]])
        t_series = pd.Series(times, index=key_rows)
        w_series = pd.Series(self.weights, index=key_rows)
        pk = pd.MultiIndex.from_arrays([parts["rank"], parts["seq"]])
        rt = t_series.reindex(pk).to_numpy()
        rw = w_series.reindex(pk).to_numpy()
        with np.errstate(invalid="ignore", divide="ignore"):
            parts["time_s"] = np.where(rw > 0, rt * parts["w"].to_numpy() / rw, 0.0)
        return Attribution(method=method, nranks=self.nranks, rows=rows, parts=parts, notes=notes)

    def _times_from_call_times(self, path: Path, report: dict, notes: list[str]) -> np.ndarray | None:
        """Each row's time from the core's call-times file (module docs), or None with a note."""
        try:
            w = np.fromfile(path, dtype="<u8")
        except OSError as err:
            notes.append(f"call times {path} unreadable ({err}); using the estimate")
            return None
        n = self.nranks
        if len(w) < 3 or w[0] != CALL_TIMES_MAGIC or w[1] != 1 or w[2] != n or len(w) < 3 + n:
            notes.append(f"call times {path}: not a call-times file of {n} ranks; using the estimate")
            return None
        counts = w[3:3 + n].astype(np.int64)
        durs = w[3 + n:]
        if counts.sum() != len(durs):
            notes.append(f"call times {path}: {len(durs)} durations for {int(counts.sum())} calls "
                         "(a half-written file?); using the estimate")
            return None
        start = np.concatenate(([0], np.cumsum(counts)[:-1]))
        rank = self.base["rank"].to_numpy(np.int64)
        seq = self.base["seq"].to_numpy(np.int64)
        ok = (rank >= 0) & (rank < n)
        ok[ok] &= (seq[ok] >= 0) & (seq[ok] < counts[rank[ok]])
        times = np.zeros(len(rank))
        times[ok] = durs[start[rank[ok]] + seq[ok]].astype(np.float64) * 1e-9
        return self._covers_mpi_time(times, report, notes, "call times")

    def _covers_mpi_time(self, times: np.ndarray, report: dict, notes: list[str], what: str) -> np.ndarray | None:
        """``times`` if their MPI calls add up to the core's MPI total (within 1 %), else None with a note."""
        mpi_total = sum(v["total_s"] for k, v in report["per_op"].items() if category(k) in ("p2p", "collective", "wait"))
        cats = self.base["cat"].to_numpy()
        got = float(times[np.isin(cats, ["p2p", "collective", "wait"])].sum())
        if mpi_total > 0 and abs(got - mpi_total) > 0.01 * mpi_total + 1e-9:
            notes.append(f"{what} cover {got / mpi_total:.0%} of the MPI time (truncated?); using the estimate")
            return None
        return times

    def _times_from_timeline(self, path: Path, report: dict, notes: list[str]) -> np.ndarray | None:
        try:
            with open(path) as f:
                doc = json.load(f)
        except (OSError, ValueError) as err:
            notes.append(f"timeline {path} unreadable ({err}); using the estimate")
            return None
        ev = doc["traceEvents"] if isinstance(doc, dict) else doc
        rk, sq, du = [], [], []
        for e in ev:
            if e.get("ph") == "X" and e.get("cat") in ("compute", "mpi", "collective"):
                a = e.get("args") or {}
                if "event" in a:
                    rk.append(int(e["tid"]))
                    sq.append(int(a["event"]))
                    du.append(float(e.get("dur", 0.0)) * 1e-6)
        if not rk:
            notes.append("timeline has no per-call events; using the estimate")
            return None
        s = pd.DataFrame({"rank": rk, "seq": sq, "t": du}).groupby(["rank", "seq"])["t"].sum()
        idx = pd.MultiIndex.from_arrays([self.base["rank"], self.base["seq"]])
        times = s.reindex(idx, fill_value=0.0).to_numpy()
        # the timeline stops after timeline_max_events: check it covered the run
        return self._covers_mpi_time(times, report, notes, "the timeline's calls")

    def _times_estimated(self, report: dict) -> np.ndarray:
        base = self.base
        w = self.weights
        n = self.nranks
        per_op = report.get("per_op", {})
        per_rank = report.get("per_rank") or []
        rank_comm = np.zeros(n)
        rank_comp = np.zeros(n)
        for r in per_rank:
            rank_comm[r["rank"]] = r["comm_s"]
            rank_comp[r["rank"]] = r["compute_s"]
        ops = base["op"].to_numpy()
        ranks = base["rank"].to_numpy()
        op_codes, op_index = np.unique(ops, return_inverse=True)
        cell_w = np.zeros((n, len(op_codes)))
        np.add.at(cell_w, (ranks, op_index), w)
        col_target = np.array([per_op.get(o, {}).get("total_s", 0.0) for o in op_codes])
        cell = cell_w.copy()
        for group, rank_target in (("mpi", rank_comm), ("compute", rank_comp)):
            if group == "mpi":
                cols = np.array([category(o) in ("p2p", "collective", "wait") for o in op_codes])
            else:
                cols = np.array([category(o) == "compute" for o in op_codes])
            if not cols.any():
                continue
            sub = _ipf(cell_w[:, cols], rank_target if per_rank else None, col_target[cols])
            cell[:, cols] = sub
        other = np.array([category(o) not in ("p2p", "collective", "wait", "compute") for o in op_codes])
        if other.any():
            cs = cell_w[:, other].sum(axis=0)
            with np.errstate(invalid="ignore", divide="ignore"):
                cell[:, other] = np.where(cs > 0, cell_w[:, other] * (col_target[other] / cs), 0.0)
        with np.errstate(invalid="ignore", divide="ignore"):
            scale = np.where(cell_w > 0, cell / cell_w, 0.0)
        return w * scale[ranks, op_index]


def _ipf(m: np.ndarray, row_target: np.ndarray | None, col_target: np.ndarray, iters: int = 200) -> np.ndarray:
    """Scale matrix m (non-negative) so that its column sums match col_target and, when given, its row
    sums match row_target (iterative proportional fitting; zero cells stay zero)."""
    x = m.astype(np.float64).copy()
    for _ in range(iters):
        cs = x.sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            x *= np.where(cs > 0, col_target / cs, 0.0)[None, :]
        if row_target is None:
            break
        rs = x.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            f = np.where(rs > 0, row_target / rs, 1.0)
        x *= f[:, None]
        if np.max(np.abs(f - 1.0)) < 1e-9:
            break
    if row_target is not None:  # finish on the column constraint: per-op totals stay exact
        cs = x.sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            x *= np.where(cs > 0, col_target / cs, 0.0)[None, :]
    return x


def _core_writes(option: str) -> bool:
    """Whether the compiled core accepts the file-writing ``option`` and writes the file (older
    builds reject options they do not know): one probe run of a one-call trace, once per option."""
    if option not in _CORE_WRITES:
        import tempfile

        from .. import _core, machines
        from ..trace import TraceBuilder
        with tempfile.TemporaryDirectory() as d:
            b = TraceBuilder(1)
            b.add(0, "Compute", dur_ns=1)
            p = Path(d) / "probe.g2g.parquet"
            b.build().write(p)
            text, label = machines.resolve("lassen")
            out = Path(d) / "probe.out"
            try:
                _core.simulate(str(p), text, label, {option: str(out)}, None)
                _CORE_WRITES[option] = out.exists()
            except ValueError as e:
                if option not in str(e):
                    raise
                _CORE_WRITES[option] = False
    return _CORE_WRITES[option]


_CORE_WRITES: dict[str, bool] = {}


def core_supports_timeline() -> bool:
    """Whether the compiled core accepts the ``timeline`` option (older builds do not)."""
    return _core_writes("timeline")


def core_supports_call_times() -> bool:
    """Whether the compiled core accepts the ``call_times`` option (builds before it do not)."""
    return _core_writes("call_times")


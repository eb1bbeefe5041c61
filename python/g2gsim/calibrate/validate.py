"""``g2gsim validate``: predicted vs measured communication time of recorded workloads.

Input: the JSON files ``workloads.py`` writes (one per workload and mode: every MPI call, staging
cudaMemcpy, kernel and stream synchronisation of every rank, timed from the barrier that starts the
workload).  For each:

1. :func:`trace_from_run` turns it into a g2gsim trace: host time between the recorded calls is
   ``Compute``; kernels are ``Kernel`` rows on their stream with the duration the GPU measured
   (CUDA events), synchronisations ``StreamSynchronize``; MPI calls and copies keep their sizes,
   peers, tags and buffer space (``device`` for device buffers, ``host`` for the staged ones).
2. the trace is simulated in its own mode (as traced) and in the other one: a HostCopy trace under
   ``mode="gpudirect", staged_as_device=True`` (what GPU-aware MPI would give), a device-buffer
   trace under ``mode="hostcopy"``; the staged trace also after :func:`staged_to_device`, which
   removes its staging copies here and marks its buffers device (the what-if done outside the core,
   for comparison).
3. the measured run of the predicted mode gives the reference.  ``total`` is the run time (the
   slowest rank, from the start barrier); ``comm`` is the total minus the compute-only time (the
   same trace with every MPI call and copy removed, simulated: host gaps, kernels on their streams),
   i.e. the time communication adds to the run.  Predicted comm uses the compute-only time of the
   trace it was predicted from, measured comm that of the run measured in that mode.

``compare(runs, machine)`` returns rows of predicted vs measured with the error; ``tables`` renders
them.  ``traced_trace`` does the same from the OTF2 archive the PMPI tracer wrote during the run.
"""
from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..trace import Trace, TraceBuilder
from ..vocab import MPI_OPS

OTHER_MODE = {"hostcopy": "device", "device": "hostcopy"}


@dataclass
class Run:
    path: Path
    d: dict

    @property
    def workload(self) -> str:
        return self.d["workload"]

    @property
    def mode(self) -> str:
        return self.d["mode"]

    @property
    def nranks(self) -> int:
        return int(self.d["nranks"])

    def end_s(self) -> np.ndarray:
        return np.array([r["end_ns"] for r in self.d["ranks"]], dtype=float) * 1e-9


def load_runs(paths) -> list[Run]:
    out = []
    for p in paths:
        p = Path(p)
        files = sorted(p.glob("*.json")) if p.is_dir() else [p]
        for f in files:
            d = json.loads(f.read_text())
            if d.get("format") != "g2gsim-validate-run":
                continue
            out.append(Run(f, d))
    if not out:
        raise ValueError(f"no workload runs (g2gsim-validate-run JSON) in {', '.join(map(str, paths))}")
    return out


# ------------------------------------------------------------------------------------------------
# traces
# ------------------------------------------------------------------------------------------------
def trace_from_run(run: Run | dict, compute_only: bool = False) -> Trace:
    """The g2gsim trace of a recorded run (see the module docstring)."""
    d = run.d if isinstance(run, Run) else run
    P = int(d["nranks"])
    async_k = bool(d.get("kernels_async", True))
    staged = d.get("mode") == "hostcopy"
    b = TraceBuilder(P, source=f"g2gsim validate: {d['workload']} ({d['mode']}) recorded {d.get('date')} "
                               f"on {', '.join(sorted(set(d.get('hosts') or [])))}",
                     buffers="traced")
    for r, rk in enumerate(d["ranks"]):
        last = 0
        for ev in rk["events"]:
            op, t0, t1 = ev[0], int(ev[1]), int(ev[2])
            kw = ev[3] if len(ev) > 3 else {}
            if op == "Kernel":
                gap = (t1 if async_k else t0) - last
                if gap > 0:
                    b.add(r, "Compute", dur_ns=gap)
                b.add(r, "Kernel", dur_ns=int(kw.get("dur_ns", t1 - t0)), stream=int(kw.get("stream", 0)),
                      **({"priority": int(kw["priority"])} if "priority" in kw and _has_priority() else {}))
                last = t1
                continue
            gap = t0 - last
            if gap > 0:
                b.add(r, "Compute", dur_ns=gap)
            last = t1
            if op == "StreamSynchronize":
                b.add(r, op, stream=int(kw.get("stream", 0)))
                continue
            if compute_only:
                continue
            mem = kw.get("mem", "host")
            if mem == "host" and staged:
                mem = "pinned"          # workloads.py stages every message through pinned buffers
            if op == "Memcpy":
                b.add(r, "Memcpy", bytes=int(kw["bytes"]), copy_kind=kw["kind"], stream=-1)
            elif op == "Send":
                b.add(r, "Send", peer=kw["peer"], tag=kw["tag"], bytes=kw["bytes"], mem_space=mem)
            elif op == "Recv":
                b.add(r, "Recv", peer=kw["peer"], tag=kw["tag"], recv_bytes=kw["bytes"], mem_space=mem)
            elif op == "Sendrecv":
                b.add(r, "Sendrecv", peer=kw["peer"], tag=kw["tag"], bytes=kw["bytes"], recv_peer=kw["recv_peer"],
                      recv_tag=kw["recv_tag"], recv_bytes=kw["recv_bytes"], mem_space=mem)
            elif op == "Isend":
                b.add(r, "Isend", peer=kw["peer"], tag=kw["tag"], bytes=kw["bytes"], req=int(kw["req"]), mem_space=mem)
            elif op == "Irecv":
                b.add(r, "Irecv", peer=kw["peer"], tag=kw["tag"], recv_bytes=kw["bytes"], req=int(kw["req"]),
                      mem_space=mem)
            elif op == "Waitall":
                b.add(r, "Waitall", reqs=[int(x) for x in kw["reqs"]])
            elif op == "Barrier":
                b.add(r, "Barrier")
            elif op in ("Bcast", "Scatter", "Gather"):
                b.add(r, op, bytes=int(kw.get("bytes", 0)), recv_bytes=int(kw.get("recv_bytes", 0)),
                      root=int(kw.get("root", 0)), mem_space=mem)
            else:
                raise ValueError(f"{d['workload']}: rank {r}: recorded operation {op!r} has no trace row")
        tail = int(rk["end_ns"]) - last
        if tail > 0:
            b.add(r, "Compute", dur_ns=tail)
    return b.build()


def _has_priority() -> bool:
    from ..trace import DEFAULTS
    return "priority" in DEFAULTS


def _subset(trace: Trace, keep: np.ndarray, source: str, mem_device: np.ndarray | None = None,
            dur_ns: np.ndarray | None = None) -> Trace:
    """The rows of ``trace`` where ``keep``, renumbered per rank; optionally new mem_space / dur_ns."""
    import pyarrow as pa

    from ..trace import _seq_from_ranks
    t = trace.table
    if dur_ns is not None:
        t = t.set_column(t.schema.get_field_index("dur_ns"), "dur_ns", pa.array(dur_ns, pa.int64()))
    if mem_device is not None:
        ms = np.array(t.column("mem_space").to_pylist(), dtype=object)
        ms[mem_device] = "device"
        t = t.set_column(t.schema.get_field_index("mem_space"), "mem_space", pa.array(ms.tolist(), pa.string()))
    t = t.filter(pa.array(keep))
    seq = _seq_from_ranks(t.column("rank").to_numpy(), trace.nranks)
    t = t.set_column(t.schema.get_field_index("seq"), "seq", pa.array(seq, pa.uint32()))
    return Trace(table=t, nranks=trace.nranks, comms=trace.comms, source=source, buffers=trace.buffers)


def _order(trace: Trace) -> np.ndarray:
    """Row indices sorted by (rank, seq)."""
    rank = trace.table.column("rank").to_numpy()
    seq = trace.table.column("seq").to_numpy()
    return np.lexsort((seq, rank))


def staged_to_device(trace: Trace) -> Trace:
    """A HostCopy trace as its GPU-aware twin, done here: every D2H copy right before a send or a
    collective of the same size and every H2D copy right after a receive (Recv, Sendrecv, the Wait
    of an Irecv) or a collective that received that size is removed (several copies of one exchange
    in a row count as right before / after it), and MPI buffers become device buffers."""
    t = trace.table
    ops = np.array(t.column("op").to_pylist(), dtype=object)
    kind = np.array(t.column("copy_kind").to_pylist(), dtype=object)
    nb = t.column("bytes").to_numpy().astype(np.int64)
    rb = t.column("recv_bytes").to_numpy().astype(np.int64)
    rank = t.column("rank").to_numpy()
    order = _order(trace)
    keep = np.ones(len(ops), bool)
    same = {"d2h": ("Compute", "Memcpy", "Irecv"), "h2d": ("Compute", "Memcpy")}
    for pos, i in enumerate(order):
        if ops[i] != "Memcpy" or kind[i] not in same:
            continue
        # past the other staging copies of the same exchange (and, before sends, the receives
        # posted with them) to the MPI call the copy serves
        step = 1 if kind[i] == "d2h" else -1
        k = pos + step
        while 0 <= k < len(order) and rank[order[k]] == rank[i] and ops[order[k]] in same[kind[i]] and (
                ops[order[k]] != "Memcpy" or kind[order[k]] == kind[i]):
            k += step
        if not (0 <= k < len(order) and rank[order[k]] == rank[i] and ops[order[k]] in MPI_OPS):
            continue
        j = order[k]
        if kind[i] == "d2h":
            if nb[j] == nb[i]:
                keep[i] = False
        elif ops[j] in ("Wait", "Waitall"):
            # the receives this wait completes: the nonblocking calls right before it
            k -= 1
            while k >= 0 and rank[order[k]] == rank[i] and ops[order[k]] in ("Isend", "Irecv", "Compute"):
                if ops[order[k]] == "Irecv" and rb[order[k]] == nb[i]:
                    keep[i] = False
                    break
                k -= 1
        elif nb[i] in (rb[j], nb[j]):
            keep[i] = False
    mpi = np.isin(ops, list(MPI_OPS - {"Barrier"}))
    return _subset(trace, keep, trace.source + " | staging copies removed (g2gsim validate)", mem_device=mpi)


# ------------------------------------------------------------------------------------------------
# simulation and comparison
# ------------------------------------------------------------------------------------------------
def _sim(trace: Trace, machine, td: Path, name: str, **opts) -> np.ndarray:
    from ..sim import simulate
    p = td / f"{name}.g2g.parquet"
    trace.write(p)
    rep = simulate(p, machine, **opts)
    ends = np.zeros(trace.nranks)
    for pr in rep["per_rank"]:
        ends[pr["rank"]] = pr["end_s"]
    return ends


def _mode_opts(trace_mode: str, predict: str) -> dict:
    if predict == trace_mode:
        return {"mode": "as-traced"}
    if trace_mode == "hostcopy":          # staged trace -> what GPU-aware MPI would give
        return {"mode": "gpudirect", "staged_as_device": True}
    return {"mode": "hostcopy"}            # device trace -> staging through the host


def compare(runs: list[Run], machine, workdir=None, conversion: bool = True) -> list[dict]:
    """One row per (workload, trace mode, predicted mode)."""
    by = {(r.workload, r.mode): r for r in runs}
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(dir=workdir) as tds:
        td = Path(tds)
        for (wl, mode), run in sorted(by.items()):
            tr = trace_from_run(run)
            comp = trace_from_run(run, compute_only=True)
            c_own = _sim(comp, machine, td, f"{wl}-{mode}-compute", mode="as-traced")
            variants = [(mode, "core", tr)]
            other = OTHER_MODE[mode]
            variants.append((other, "core", tr))
            if conversion and mode == "hostcopy":
                variants.append((other, "converted here", staged_to_device(tr)))
            for predict, how, t in variants:
                opts = _mode_opts(mode, predict) if how == "core" else {"mode": "as-traced"}
                pred = _sim(t, machine, td, f"{wl}-{mode}-{predict}-{how.split()[0]}", **opts)
                ref = by.get((wl, predict))
                row: dict[str, Any] = {"workload": wl, "trace": mode, "predicted_mode": predict, "how": how,
                                       "sim_options": opts, "nranks": run.nranks}
                row["predicted_total_s"] = float(pred.max())
                row["predicted_comm_s"] = float(pred.max() - c_own.max())
                row["compute_only_s"] = float(c_own.max())
                if ref is not None:
                    meas = ref.end_s()
                    if ref is run:
                        c_ref = c_own
                    else:
                        c_ref = _sim(trace_from_run(ref, compute_only=True), machine, td, f"{wl}-{predict}-compute",
                                     mode="as-traced")
                    row["measured_total_s"] = float(meas.max())
                    row["measured_comm_s"] = float(meas.max() - c_ref.max())
                    row["measured_compute_only_s"] = float(c_ref.max())
                    row["error_total"] = row["predicted_total_s"] / row["measured_total_s"] - 1
                    row["error_comm"] = (row["predicted_comm_s"] / row["measured_comm_s"] - 1
                                         if row["measured_comm_s"] > 0 else None)
                rows.append(row)
    return rows


# ------------------------------------------------------------------------------------------------
# the tracer's archives
# ------------------------------------------------------------------------------------------------
def traced_trace(anchor, run: Run) -> Trace:
    """The part of a PMPI-tracer OTF2 archive recorded during ``run`` (a ``*-traced.json`` of the same
    job): rows whose start lies in the run's window on the tracer's clock (CLOCK_MONOTONIC); the
    Compute row that straddles the window's start is clipped to it."""
    from ..readers.otf2_defs import read_plan
    from ..readers.otf2_reader import read_otf2
    t = read_otf2(anchor, processes=1)
    off = int(read_plan(anchor).global_offset)
    tab = t.table
    rank = tab.column("rank").to_numpy()
    t0 = np.array([np.nan if v is None else v for v in tab.column("t_start_ns").to_pylist()], dtype=float)
    t1 = np.array([np.nan if v is None else v for v in tab.column("t_end_ns").to_pylist()], dtype=float)
    ops = np.array(tab.column("op").to_pylist(), dtype=object)
    dur = tab.column("dur_ns").to_numpy().astype(np.int64).copy()
    keep = np.zeros(len(rank), bool)
    for r, rk in enumerate(run.d["ranks"]):
        lo = int(rk["t0_monotonic_ns"]) - off
        hi = lo + int(rk["end_ns"])
        m = (rank == r) & (t0 >= lo) & (t0 < hi)
        # the Compute in progress at the window's start, clipped
        straddle = np.where((rank == r) & (ops == "Compute") & (t0 < lo) & (t1 > lo))[0]
        for i in straddle:
            dur[i] = int(t1[i] - lo)
            m[i] = True
        keep |= m
    return _subset(t, keep, f"{t.source} | window of {run.path.name}", dur_ns=dur)


def compare_traced(pairs: list[tuple[Path, Run]], machine, workdir=None) -> list[dict]:
    """Like :func:`compare` for traces imported from the tracer's archives: (anchor, the run recorded
    in the same job); the reference of each mode is the run recorded under the tracer."""
    by = {(r.workload, r.mode): r for _, r in pairs}
    rows = []
    with tempfile.TemporaryDirectory(dir=workdir) as tds:
        td = Path(tds)
        for anchor, run in pairs:
            wl, mode = run.workload, run.mode
            tr = traced_trace(anchor, run)
            ncomp = {"ops": tr.op_counts()}
            for predict in (mode, OTHER_MODE[mode]):
                opts = _mode_opts(mode, predict)
                pred = _sim(tr, machine, td, f"traced-{wl}-{mode}-{predict}", **opts)
                ref = by.get((wl, predict))
                row: dict[str, Any] = {"workload": wl, "trace": mode, "predicted_mode": predict,
                                       "how": "tracer (OTF2)",
                                       "sim_options": opts, "predicted_total_s": float(pred.max()), **ncomp}
                # the same run's self-recorded trace, for comparison
                own = _sim(trace_from_run(run), machine, td, f"self-{wl}-{mode}-{predict}", **opts)
                row["self_recorded_total_s"] = float(own.max())
                if ref is not None:
                    row["measured_total_s"] = float(ref.end_s().max())
                    row["error_total"] = row["predicted_total_s"] / row["measured_total_s"] - 1
                    row["self_recorded_error_total"] = row["self_recorded_total_s"] / row["measured_total_s"] - 1
                rows.append(row)
    return rows


def traced_pairs(folder) -> list[tuple[Path, Run]]:
    """(anchor, run) for a folder holding ``<mode>/traces.otf2`` and the ``*-traced.json`` runs of the
    same jobs (as ``run_node.sh`` leaves them)."""
    folder = Path(folder)
    out = []
    for run in load_runs([folder]):
        anchor = folder / run.mode / "traces.otf2"
        if anchor.is_file():
            out.append((anchor, run))
    return out

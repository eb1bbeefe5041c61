"""Per-call costs from the traces a user already has (``g2gsim calibrate calls``).

A trace records how long every MPI call took on the traced machine.  Most of those durations mix
the call's own CPU time with waiting for peers, but a call that only *posts* work waits on nothing:
``MPI_Irecv`` registers a receive and returns.  Its duration is the library's per-call cost on that
machine (the tracing tool's own cost included, which the traced run paid too).  The model has that
cost as ``mpi.call_overhead`` (every MPI call keeps its rank busy that long before it acts) and
``mpi.device_call_overhead`` (the extra of a call on a device buffer: memory-type query, IPC handle
cache).  This module takes them from the traces' ``MPI_Irecv`` calls -- the median over every rank
and call, the interquartile range as the uncertainty -- and writes a machine file: the base machine
with those two keys set, citing the traces.

Nothing else of a trace is used: no wait, no collective, no run time, so a trace calibrated from
can still be predicted as a check of everything else (docs/validation/lassen-minife.md fits on the
2-rank run and predicts the 4- to 16-rank ones).  ``MPI_Isend`` is not used: its duration may include
an eager copy of the data, which the model has as the send overhead and the path's rate.
"""
from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..vocab import HOST_SPACES
from .fit import fmt_dur

MIN_CALLS = 20          # fewer timed Irecv calls than this: no figure (a median of a handful is noise)
POSTING_OP = "Irecv"


class CallCostError(ValueError):
    """A trace gives no usable per-call cost (names the trace and why)."""


@dataclass
class SpaceCost:
    """The durations of the posting calls on one kind of buffer (host or device)."""
    n: int
    median_ns: float
    p25_ns: float
    p75_ns: float

    @classmethod
    def of(cls, d: np.ndarray) -> SpaceCost:
        q25, q50, q75 = np.percentile(d, [25, 50, 75])
        return cls(int(len(d)), float(q50), float(q25), float(q75))


@dataclass
class CallCosts:
    """What ``calls`` found: per buffer kind, over all traces and ranks."""
    traces: list[str]
    host: SpaceCost | None
    device: SpaceCost | None
    # medians of the other nonblocking posting call, reported only (not used: see the module doc)
    isend_median_ns: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def machine_sets(self) -> dict[str, str]:
        """The machine-file keys to set (durations as text, e.g. "2.9us")."""
        out: dict[str, str] = {}
        if self.host is not None:
            out["mpi.call_overhead"] = _dur(self.host.median_ns)
            if self.device is not None and self.device.median_ns > self.host.median_ns:
                out["mpi.device_call_overhead"] = _dur(self.device.median_ns - self.host.median_ns)
        elif self.device is not None:
            out["mpi.device_call_overhead"] = _dur(self.device.median_ns)
        return out

    def as_dict(self) -> dict[str, Any]:
        sp = {k: (None if v is None else v.__dict__) for k, v in (("host", self.host), ("device", self.device))}
        return {"traces": self.traces, "op": POSTING_OP, "min_calls": MIN_CALLS, **sp,
                "isend_median_ns": self.isend_median_ns, "sets": self.machine_sets(), "notes": self.notes}


def _dur(ns: float) -> str:
    """A duration in ns as the calibration writes it in machine files (``fit.fmt_dur``)."""
    return fmt_dur(ns * 1e-9)


def _posting_durations(trace, label: str) -> dict[str, dict[str, np.ndarray]]:
    """{op: {"host"|"device": durations in ns}} of the trace's Irecv and Isend calls."""
    t = trace.table.select(["op", "t_start_ns", "t_end_ns", "mem_space"]).to_pandas()
    out: dict[str, dict[str, np.ndarray]] = {}
    for op in (POSTING_OP, "Isend"):
        g = t[t.op == op]
        d = (g.t_end_ns - g.t_start_ns).to_numpy(dtype=np.float64)
        if (d < 0).any():
            bad = g[(g.t_end_ns - g.t_start_ns) < 0].index[0]
            raise CallCostError(f"{label}: an MPI_{op} ends before it starts (row {int(bad)}): corrupt timestamps")
        host = g.mem_space.isin(HOST_SPACES).to_numpy()
        out[op] = {"host": d[host], "device": d[~host & (g.mem_space == "device").to_numpy()]}
    return out


def call_costs(traces: list[Any]) -> CallCosts:
    """The per-call costs of the ``MPI_Irecv`` calls of ``traces`` (paths in any format
    ``Trace.read`` accepts, or ``Trace`` objects).  Raises :class:`CallCostError` when no buffer kind has ``MIN_CALLS`` timed calls."""
    from ..trace import Trace
    acc: dict[str, dict[str, list[np.ndarray]]] = {}
    names = []
    for i, p in enumerate(traces):
        tr: Trace = p if isinstance(p, Trace) else Trace.read(p)
        label = str(p) if not isinstance(p, Trace) else (str(p.path) if getattr(p, "path", None)
                                                          else f"in-memory trace {i + 1}")
        names.append(label)
        for op, by in _posting_durations(tr, label).items():
            for space, d in by.items():
                acc.setdefault(op, {}).setdefault(space, []).append(d)
    merged = {op: {s: np.concatenate(v) for s, v in by.items()} for op, by in acc.items()}
    rec = merged.get(POSTING_OP, {})
    notes: list[str] = []
    costs: dict[str, SpaceCost | None] = {}
    for space in ("host", "device"):
        d = rec.get(space, np.zeros(0))
        timed = d[d > 0]
        if len(d) and not len(timed):
            notes.append(f"{len(d)} MPI_{POSTING_OP} calls on {space} buffers all take 0 ns (a generated "
                         f"trace, or a tool that does not time calls): not used")
        costs[space] = SpaceCost.of(timed) if len(timed) >= MIN_CALLS else None
        if 0 < len(timed) < MIN_CALLS:
            notes.append(f"only {len(timed)} timed MPI_{POSTING_OP} calls on {space} buffers "
                         f"(need {MIN_CALLS}): not used")
    if costs["host"] is None and costs["device"] is None:
        n = sum(len(v) for v in rec.values())
        why = "; ".join(notes) if notes else f"{n} MPI_{POSTING_OP} calls in all"
        raise CallCostError(f"{', '.join(names)}: no per-call cost: needs at least {MIN_CALLS} timed "
                            f"MPI_{POSTING_OP} calls on host or device buffers ({why})")
    if costs["host"] is None and costs["device"] is not None:
        notes.append("no host-buffer MPI_Irecv: the device calls' whole cost is written as "
                     "mpi.device_call_overhead (mpi.call_overhead stays the base machine's)")
    if costs["host"] is not None and costs["device"] is not None \
            and costs["device"].median_ns <= costs["host"].median_ns:
        notes.append(f"MPI_{POSTING_OP} on device buffers is not slower than on host buffers (median "
                     f"{_dur(costs['device'].median_ns)} vs {_dur(costs['host'].median_ns)}): "
                     "mpi.device_call_overhead stays the base machine's")
    isend = {s: float(np.median(d[d > 0])) for s, d in merged.get("Isend", {}).items() if (d > 0).sum() >= MIN_CALLS}
    return CallCosts(names, costs["host"], costs["device"], isend, notes)


def write_machine(costs: CallCosts, base: str, output: str | Path, name: str | None = None,
                  command: str | None = None) -> str:
    """Writes the base machine with the per-call costs set (and their interquartile ranges as
    ``[uncertainty]``) to ``output``; returns the text."""
    import tomllib

    import tomli_w

    from ..machines import _get, resolve, with_overrides
    text, label = resolve(base)
    sets = costs.machine_sets()
    new = with_overrides(text, label, sets)
    doc = tomllib.loads(new)
    base_doc = tomllib.loads(text)
    doc["name"] = name or Path(output).name.split(".")[0]
    doc["description"] = (f"{base_doc.get('name', label)} with per-call costs from traced MPI_Irecv calls "
                          f"({', '.join(Path(t).name for t in costs.traces)})")
    doc["sources"] = (f"g2gsim calibrate calls (traced per-call costs) on {base_doc.get('name', label)}: "
                      + "; ".join(costs.traces))
    unc = doc.setdefault("uncertainty", {})
    for space, key in (("host", "mpi.call_overhead"), ("device", "mpi.device_call_overhead")):
        sc = getattr(costs, space)
        if key not in sets or sc is None:
            continue
        off = costs.host.median_ns if (space == "device" and costs.host is not None) else 0.0
        unc[key] = {"low": _dur(max(0.0, sc.p25_ns - off)), "high": _dur(max(0.0, sc.p75_ns - off)),
                    "source": f"interquartile range of {sc.n} traced MPI_{POSTING_OP} calls on {space} buffers"}
    head = [f"# {doc['name']}: {base_doc.get('name', label)} ({label}) with per-call costs taken from traces",
            f"#   by `g2gsim calibrate calls` on {_dt.date.today().isoformat()} (python/g2gsim/calibrate/calls.py).",
            f"# Traces: {'; '.join(costs.traces)}"]
    if command:
        head.append(f"# Reproduce: {command}")
    for space in ("host", "device"):
        sc = getattr(costs, space)
        if sc is not None:
            head.append(f"# MPI_{POSTING_OP} on {space} buffers: {sc.n} calls, median {_dur(sc.median_ns)} "
                        f"(25-75 %: {_dur(sc.p25_ns)} - {_dur(sc.p75_ns)})")
    for space, m in costs.isend_median_ns.items():
        head.append(f"# MPI_Isend on {space} buffers (reported, not used): median {_dur(m)}")
    head.append("# The traced durations include the tracing tool's own cost per call, as the traced run did.")
    for k, v in sets.items():
        head.append(f"# Set: {k} = {v} (base: {_get(base_doc, k) or 'default'})")
    for n in costs.notes:
        head.append(f"# Note: {n}")
    body = tomli_w.dumps(doc)
    out = "\n".join(" ".join(h.splitlines()) for h in head) + "\n" + body
    from ..machines import validate
    tmp = Path(output).with_name(Path(output).name + ".part.toml")
    tmp.write_text(out)
    problems = validate(tmp)
    if problems:
        tmp.unlink()
        raise CallCostError(f"{output}: the machine file to write does not check: {problems[0]}")
    tmp.replace(output)
    return out

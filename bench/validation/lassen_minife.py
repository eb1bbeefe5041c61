#!/usr/bin/env python3
"""Held-out check on Lassen: the corpus's MiniFE-CUDA DUMPI traces (../shared/corpus/minife, see its
PROVENANCE.md: LLNL Lassen, Spectrum MPI via jsrun, 4 ranks per node, 1 GPU per rank, halos staged
by the application through host buffers) simulated on a preset and compared with what the traces
recorded.  HOLD-OUT: no parameter of any preset is ever set from these figures; the page
docs/validation/lassen-minife.md reports them before and after structural changes only.

What is compared (traced vs simulated, the replay's calls joined to the trace's rows by rank and
event):
* per-call durations of the point-to-point calls (Isend, Irecv) by the peer's place: same socket,
  other socket of the node, other node (jsrun -K 2 -r 4: ranks 4n, 4n+1 on socket 0 of node n,
  4n+2, 4n+3 on socket 1);
* per halo exchange (one per CG iteration, Irecv x k, Isend x k, Waitall): the exchange window
  (first Irecv posted to the Waitall's end) and the Waitall alone, per run: n2 has only a
  same-socket peer, n4 only intra-node peers (both sockets), n8 and n16 add inter-node peers;
* per message, the time from the Isend's start to the end of the Waitall that completes it
  (traced) against the same on the replay, by peer class; the receive side likewise;
* the run's MPI time (sum of MPI calls, mean over ranks) and total time, traced stretches only.

    PYTHONPATH=python python3 bench/validation/lassen_minife.py [--machine lassen] [--runs n2 n4 n8 n16]
        [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import warnings
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
CORPUS = Path(os.environ.get("G2GSIM_CORPUS", ROOT.parent / "shared" / "corpus"))
LASSEN = CORPUS / "minife" / "cuda" / "src" / "dumpi" / "lassen"
P2P = ("Isend", "Irecv")
MPI_OPS = ("Isend", "Irecv", "Waitall", "Allreduce", "Init")
RANKS_PER_NODE = 4


def place(rank: int) -> tuple[int, int]:
    """(node, socket) of a rank under jsrun -n N -a 1 -g 1 -K 2 -r 4 (PROVENANCE.md)."""
    return rank // RANKS_PER_NODE, (rank % RANKS_PER_NODE) // 2


def peer_class(a: int, b: int) -> str:
    (na, sa), (nb, sb) = place(a), place(b)
    if na != nb:
        return "inter-node"
    return "same-socket" if sa == sb else "cross-socket"


def traced_table(meta: Path) -> pd.DataFrame:
    from g2gsim.trace import Trace
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = Trace.from_dumpi(meta)
    df = t.table.to_pandas()
    df = df[["rank", "seq", "op", "t_start_ns", "t_end_ns", "peer", "bytes", "req", "reqs"]].copy()
    df["dur_ns"] = df.t_end_ns - df.t_start_ns
    return df


def simulated_table(meta: Path, machine: str, sets: dict | None) -> tuple[pd.DataFrame, dict]:
    import g2gsim
    from g2gsim.timeline import load_events
    with tempfile.TemporaryDirectory() as d:
        tl = Path(d) / "tl.json.gz"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rep = g2gsim.simulate(str(meta), machine, timeline=str(tl), timeline_max_events=10**8,
                                  machine_set=sets or None)
        ev = load_events(tl)
    rows = [(e["tid"], e["args"]["event"], e["name"], round(e["ts"] * 1000), round(e.get("dur", 0) * 1000))
            for e in ev if e.get("ph") == "X" and e.get("cat") in ("mpi", "collective")]
    sim = pd.DataFrame(rows, columns=["rank", "seq", "op", "s_start_ns", "s_dur_ns"])
    return sim, rep


def exchanges(df: pd.DataFrame, start: str, dur: str) -> pd.DataFrame:
    """One row per Waitall: its rank, the exchange window (first request's call start to the
    Waitall's end) and the Waitall's own duration; and per request its op, peer, start."""
    out = []
    per_msg = []
    for rank, g in df.groupby("rank"):
        by_req = {}
        for r in g.itertuples():
            if r.op in P2P:
                by_req[r.req] = r
            elif r.op == "Waitall":
                reqs = [by_req.pop(q) for q in (list(r.reqs) if r.reqs is not None else []) if q in by_req]
                if not reqs:
                    continue
                end = getattr(r, start) + getattr(r, dur)
                first = min(getattr(q, start) for q in reqs)
                out.append((rank, end - first, getattr(r, dur)))
                for q in reqs:
                    per_msg.append((rank, q.op, peer_class(rank, q.peer), end - getattr(q, start)))
    return (pd.DataFrame(out, columns=["rank", "window_ns", "wait_ns"]),
            pd.DataFrame(per_msg, columns=["rank", "op", "cls", "done_ns"]))


def compare(run: str, machine: str, sets: dict | None = None) -> dict:
    meta = LASSEN / f"{run}.meta"
    tr = traced_table(meta)
    sim, rep = simulated_table(meta, machine, sets)
    j = tr.merge(sim, on=["rank", "seq"], how="inner", suffixes=("", "_sim"))
    bad = (j.op != j.op_sim).sum()
    if bad:
        raise SystemExit(f"{run}: {bad} rows joined by (rank, event) name different operations")
    j["cls"] = [peer_class(r, p) if o in P2P else "" for r, p, o in zip(j["rank"], j.peer, j.op)]
    res: dict = {"run": run, "ranks": int(tr["rank"].nunique()), "machine": machine}
    # per call, p2p by peer class
    calls = {}
    for (op, cls), g in j[j.op.isin(P2P)].groupby(["op", "cls"]):
        calls[f"{op} {cls}"] = {"n": int(len(g)), "traced_us": g.dur_ns.mean() / 1e3,
                                "sim_us": g.s_dur_ns.mean() / 1e3}
    res["calls"] = calls
    # per exchange and per message
    j_tr = j.rename(columns={"t_start_ns": "a", "dur_ns": "b"})
    ex_t, msg_t = exchanges(j_tr, "a", "b")
    ex_s, msg_s = exchanges(j, "s_start_ns", "s_dur_ns")
    res["exchange"] = {"n": int(len(ex_t)), "window_traced_us": ex_t.window_ns.mean() / 1e3,
                       "window_sim_us": ex_s.window_ns.mean() / 1e3,
                       "wait_traced_us": ex_t.wait_ns.mean() / 1e3, "wait_sim_us": ex_s.wait_ns.mean() / 1e3}
    per = {}
    for (op, cls), g in msg_t.groupby(["op", "cls"]):
        s = msg_s[(msg_s.op == op) & (msg_s.cls == cls)]
        per[f"{op} {cls}"] = {"n": int(len(g)), "traced_us": g.done_ns.mean() / 1e3,
                              "sim_us": s.done_ns.mean() / 1e3}
    res["per_message"] = per
    # MPI time and total time (traced stretches: the Untraced row is left out on both sides)
    mpi_t = j[j.op.isin(MPI_OPS)].groupby("rank").dur_ns.sum().mean()
    mpi_s = j[j.op.isin(MPI_OPS)].groupby("rank").s_dur_ns.sum().mean()
    # traced run time of the traced stretches: per rank, every row's duration but the Untraced one
    tot_t = tr[tr.op != "Untraced"].groupby("rank").dur_ns.sum().max()
    res["mpi"] = {"traced_s": mpi_t / 1e9, "sim_s": mpi_s / 1e9}
    res["total"] = {"traced_s": tot_t / 1e9, "sim_s": rep["total_time_s"]}
    res["allreduce"] = {"traced_us": j[j.op == "Allreduce"].dur_ns.mean() / 1e3,
                        "sim_us": j[j.op == "Allreduce"].s_dur_ns.mean() / 1e3}
    return res


def err(t: float, s: float) -> str:
    if not t:
        return "-"
    return f"{(s - t) / t * 100:+.0f} %"


def ratio(t: float, s: float) -> str:
    return f"{t / s:.2f}x" if s else "inf"


def print_run(r: dict) -> None:
    print(f"\n## {r['run']} ({r['ranks']} ranks, {r['machine']})")
    print("| quantity | traced | simulated | sim error | traced / sim |\n|---|---|---|---|---|")
    for k, v in r["calls"].items():
        print(f"| call {k} (mean of {v['n']}) | {v['traced_us']:.2f} us | {v['sim_us']:.2f} us | "
              f"{err(v['traced_us'], v['sim_us'])} | {ratio(v['traced_us'], v['sim_us'])} |")
    for k, v in r["per_message"].items():
        print(f"| message {k}: call start to its Waitall's end (mean of {v['n']}) | {v['traced_us']:.1f} us | "
              f"{v['sim_us']:.1f} us | {err(v['traced_us'], v['sim_us'])} | {ratio(v['traced_us'], v['sim_us'])} |")
    e = r["exchange"]
    print(f"| halo exchange window (mean of {e['n']}) | {e['window_traced_us']:.1f} us | {e['window_sim_us']:.1f} us | "
          f"{err(e['window_traced_us'], e['window_sim_us'])} | {ratio(e['window_traced_us'], e['window_sim_us'])} |")
    print(f"| Waitall | {e['wait_traced_us']:.1f} us | {e['wait_sim_us']:.1f} us | "
          f"{err(e['wait_traced_us'], e['wait_sim_us'])} | {ratio(e['wait_traced_us'], e['wait_sim_us'])} |")
    a = r["allreduce"]
    print(f"| Allreduce (8 B) | {a['traced_us']:.1f} us | {a['sim_us']:.1f} us | {err(a['traced_us'], a['sim_us'])} | "
          f"{ratio(a['traced_us'], a['sim_us'])} |")
    m, t = r["mpi"], r["total"]
    print(f"| MPI time per rank | {m['traced_s']:.4f} s | {m['sim_s']:.4f} s | {err(m['traced_s'], m['sim_s'])} | "
          f"{ratio(m['traced_s'], m['sim_s'])} |")
    print(f"| total time (traced stretches) | {t['traced_s']:.4f} s | {t['sim_s']:.4f} s | "
          f"{err(t['traced_s'], t['sim_s'])} | {ratio(t['traced_s'], t['sim_s'])} |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--machine", default="lassen")
    ap.add_argument("--runs", nargs="+", default=["n2", "n4", "n8", "n16"])
    ap.add_argument("--set", action="append", default=[], help="KEY=VALUE machine setting")
    ap.add_argument("--calls-from", metavar="RUN",
                    help="first write the machine with the per-call costs of RUN's trace (`g2gsim calibrate "
                         "calls`: its MPI_Irecv calls only) and simulate every run on it; RUN is then the fit "
                         "set, the other runs are held out")
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    if not LASSEN.is_dir():
        print(f"corpus not found: {LASSEN} (set G2GSIM_CORPUS)", file=sys.stderr)
        return 2
    sets = dict(s.split("=", 1) for s in a.set)
    machine = a.machine
    with tempfile.TemporaryDirectory() as d:
        if a.calls_from:
            from g2gsim.calibrate.calls import call_costs, write_machine
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                costs = call_costs([LASSEN / f"{a.calls_from}.meta"])
            machine = str(Path(d) / f"{a.machine}-calls-{a.calls_from}.toml")
            write_machine(costs, a.machine, machine)
            print(f"per-call costs from {a.calls_from} (fit set; the other runs are held out): "
                  + ", ".join(f"{k} = {v}" for k, v in costs.machine_sets().items()))
        out = [compare(run, machine, sets) for run in a.runs]
    for r in out:
        if a.calls_from:
            r["machine"] = f"{a.machine} + calls of {a.calls_from}"
            r["set"] = "fit" if r["run"] == a.calls_from else "held out"
        print_run(r)
    print("\n## Summary (traced / sim)\n| run | set | halo exchange window | Waitall | MPI time per rank | total time |"
          "\n|---|---|---|---|---|---|")
    for r in out:
        e, m, t = r["exchange"], r["mpi"], r["total"]
        print(f"| {r['run']} | {r.get('set', '-')} | {ratio(e['window_traced_us'], e['window_sim_us'])} | "
              f"{ratio(e['wait_traced_us'], e['wait_sim_us'])} | {ratio(m['traced_s'], m['sim_s'])} | "
              f"{err(t['traced_s'], t['sim_s'])} |")
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1, default=float))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

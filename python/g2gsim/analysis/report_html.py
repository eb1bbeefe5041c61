"""One self-contained HTML file: inline CSS, figures as base64 PNG, no scripts, no external URLs."""
from __future__ import annotations

import base64
import datetime as _dt
import html as _html
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .. import __version__
from ._common import fmt_bytes, fmt_pct, fmt_s, fmt_x

CSS = """
body{font-family:-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:24px auto;max-width:1100px;color:#222;
     line-height:1.4;padding:0 16px}
h1{font-size:1.5em;margin-bottom:4px} h2{font-size:1.2em;border-bottom:2px solid #ddd;padding-bottom:3px;margin-top:28px}
h3{font-size:1.02em;margin:16px 0 6px}
.meta{color:#555;font-size:.9em} .note{background:#fff8e1;border-left:4px solid #ffb300;padding:6px 10px;margin:6px 0;
     font-size:.9em}
.verdict{background:#e8f5e9;border-left:4px solid #2e7d32;padding:8px 12px;margin:12px 0}
.verdict b{font-size:1.05em}
.assume{background:#e3f2fd;border-left:4px solid #1565c0;padding:6px 12px;margin:8px 0;font-size:.9em}
.assume ul{margin:4px 0;padding-left:20px}
table{border-collapse:collapse;margin:6px 0 14px;font-size:.86em}
th,td{border:1px solid #ddd;padding:3px 8px} th{background:#f3f3f3;text-align:left}
td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr:nth-child(even) td{background:#fafafa} tr.total td{font-weight:bold;background:#eef3fb}
figure{display:inline-block;margin:6px 10px 12px 0;vertical-align:top}
figure img{max-width:100%;border:1px solid #eee} figcaption{font-size:.82em;color:#555;max-width:560px}
.good{color:#1b5e20} .bad{color:#b71c1c} footer{margin-top:30px;color:#888;font-size:.8em}
"""


def esc(x: Any) -> str:
    return _html.escape(str(x), quote=True)


class HtmlReport:
    def __init__(self, title: str):
        self.title = title
        self.parts: list[str] = []
        self.nfig = 0

    def h2(self, t: str):
        self.parts.append(f"<h2>{esc(t)}</h2>")

    def h3(self, t: str):
        self.parts.append(f"<h3>{esc(t)}</h3>")

    def p(self, t: str, cls: str | None = None, raw: bool = False):
        body = t if raw else esc(t)
        self.parts.append(f'<p class="{cls}">{body}</p>' if cls else f"<p>{body}</p>")

    def div(self, inner_html: str, cls: str):
        self.parts.append(f'<div class="{cls}">{inner_html}</div>')

    def table(self, columns: Sequence[str], rows: Sequence[Sequence[Any]], numeric_from: int = 1,
              total_rows: Sequence[int] = ()):
        h = ["<table><thead><tr>", *[f"<th>{esc(c)}</th>" for c in columns], "</tr></thead><tbody>"]
        for i, r in enumerate(rows):
            h.append('<tr class="total">' if i in total_rows else "<tr>")
            for j, v in enumerate(r):
                if j >= numeric_from:
                    h.append(f'<td class="n">{esc(v)}</td>')
                elif isinstance(v, str) and v.startswith("  "):
                    h.append(f'<td style="padding-left:22px">{esc(v.strip())}</td>')
                else:
                    h.append(f"<td>{esc(v)}</td>")
            h.append("</tr>")
        h.append("</tbody></table>")
        self.parts.append("".join(h))

    def figure(self, fig, caption: str = "", alt: str = ""):
        """fig: a matplotlib Figure (closed after rendering) or PNG bytes."""
        if isinstance(fig, (bytes, bytearray)):
            png = bytes(fig)
        else:
            from .plots import png_bytes
            png = png_bytes(fig, dpi=100)
        b64 = base64.b64encode(png).decode("ascii")
        self.nfig += 1
        self.parts.append(f'<figure><img alt="{esc(alt or caption or "figure")}" src="data:image/png;base64,{b64}">'
                          f"<figcaption>{esc(caption)}</figcaption></figure>")

    def render(self) -> str:
        now = _dt.datetime.now().strftime("%Y-%m-%d %H:%M")
        return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{esc(self.title)}</title>"
                f"<style>{CSS}</style></head><body><h1>{esc(self.title)}</h1>\n" + "\n".join(self.parts)
                + f"\n<footer>g2gsim {esc(__version__)}, {esc(now)}</footer></body></html>\n")

    def write(self, path: str | Path) -> Path:
        p = Path(path)
        p.write_text(self.render(), encoding="utf-8")
        return p


def _sp(x) -> str:
    return fmt_x(x) if x is not None else "-"


def assumptions_box(r: HtmlReport, res: dict):
    """What the result assumed (machine first), and options that changed nothing."""
    items = list(res.get("assumptions", []))
    notices = list(res.get("notices", []))
    if not items and not notices:
        return
    html = "<b>Assumptions</b><ul>" + "".join(f"<li>{esc(a)}</li>" for a in items) + "</ul>"
    if notices:
        html += "<b>Notices</b><ul>" + "".join(f"<li>{esc(n)}</li>" for n in notices) + "</ul>"
    r.div(html, "assume")


def sensitivity_section(r: HtmlReport, res: dict):
    """The machine's key parameters and the verdict at the ends of each uncertain one."""
    mi = res.get("machine_info") or {}
    sens = res.get("sensitivity")
    if not mi and not sens:
        return
    r.h2("Machine and sensitivity")
    if mi:
        r.p(mi.get("sentence", ""))
        r.table(["parameter", "value"], [[k, v] for k, v in (mi.get("key_parameters") or {}).items()])
    if sens and sens.get("note"):
        r.div(esc(sens["note"]), "note")
    if sens and sens.get("parameters"):
        r.table(["parameter", "value", "low", "change at low", "verdict at low", "high", "change at high",
                 "verdict at high", "source"],
                [[p["key"], p["value"], p["low"], fmt_pct(p["change_low"], True), p["verdict_low"], p["high"],
                  fmt_pct(p["change_high"], True), p["verdict_high"], p["source"]] for p in sens["parameters"]])


# ----------------------------------------------------------------------------------------- compare
def compare_report(res: dict, whatif_res: dict | None = None, mapping_res: dict | None = None) -> HtmlReport:
    from . import plots
    cols = res["columns"]
    r = HtmlReport(f"GPUDirect what-if: {Path(res['trace']).name} on {res['machine']}")
    r.p(f"{res['nranks']} ranks on {res['nodes']} nodes x {res['gpus_per_node']} GPUs; trace buffers: "
        f"{res.get('trace_buffers', '-')}; --buffers {res['buffers']}; per-call times: {res['attribution']}. "
        f"Source: {res['source'] or '-'}", cls="meta")
    assumptions_box(r, res)
    for n in res["notes"]:
        r.div(esc(n), "note")
    rt = res["runtime"]
    S = res["speedup"]["gpudirect"]
    v = (f"<b>{esc(rt['verdict'])}</b>: GPUDirect changes communication time by "
         f"{fmt_pct(1 / S - 1 if S else float('nan'), True)} (speedup {fmt_x(S)}) and the run time by "
         f"{fmt_pct(rt['simulated_change'], True)} (simulated; Amdahl estimate from a "
         f"{fmt_pct(rt['comm_share_hostcopy'])} communication share: {fmt_pct(rt['amdahl_change'], True)}).")
    if rt.get("verdict_statement"):
        v = f"<b>{esc(rt['verdict_statement'])}</b><br>" + v
    r.div(v, "verdict")
    sensitivity_section(r, res)

    r.h2("Summary (averages per rank)")
    rows = []
    for key, label in (("runtime_s", "run time"), ("comm_s", "communication (MPI + explicit copies)"),
                       ("mpi_s", "  in MPI calls"), ("memcpy_s", "  explicit cudaMemcpy"),
                       ("copy_s", "all host-device copies"), ("compute_s", "computation")):
        rows.append([label, *[fmt_s(res["summary"][c][key]) for c in cols]])
    rows.append(["communication share", *[fmt_pct(res["summary"][c]["comm_share"]) for c in cols]])
    rows.append(["comm. speedup vs hostcopy", *[_sp(res["speedup"][c]) for c in cols]])
    r.table(["", *cols], rows)
    r.figure(plots.comm_compute_bars(cols, [res["summary"][c]["comm_s"] for c in cols],
                                     [res["summary"][c]["compute_s"] for c in cols],
                                     title="Computation vs communication per configuration"),
             "Time per rank split into computation and communication.")
    others = [c for c in cols if c != "hostcopy"]
    r.figure(plots.speedup_bars(others, {"speedup": [res["speedup"][c] for c in others]},
                                title="Communication speedup over HostCopy"),
             "Communication speedup: HostCopy communication time / the configuration's.")

    r.h2("Run time")
    rows = [["HostCopy run time", fmt_s(rt["hostcopy_s"])], ["GPUDirect run time", fmt_s(rt["gpudirect_s"])],
            ["change (simulated)", fmt_pct(rt["simulated_change"], True)],
            ["communication share under HostCopy", fmt_pct(rt["comm_share_hostcopy"])],
            ["change (Amdahl: share x speedup)", fmt_pct(rt["amdahl_change"], True)]]
    if rt.get("traced_compute_share") is not None:
        rows.append(["compute share in the traced run", fmt_pct(rt["traced_compute_share"])])
        rows.append(["change (Amdahl, traced share)", fmt_pct(rt.get("amdahl_change_traced_share"), True)])
    r.table(["", "value"], rows)

    r.h2("By operation")
    rows = [[op, d["count"], *[fmt_s(d["time_s"][c]) for c in cols], _sp(d["speedup"])] for op, d in res["by_op"].items()]
    r.table(["operation", "calls", *cols, "speedup"], rows)
    if res["by_op"]:
        ops = list(res["by_op"])[:10]
        r.figure(plots.paired_bars(ops, [res["by_op"][o]["time_s"]["hostcopy"] for o in ops],
                                   [res["by_op"][o]["time_s"]["gpudirect"] for o in ops], title="Time per operation"),
                 "Average time per rank in each MPI operation (and explicit copies).")

    r.h2("By message size")
    bc = res["by_class"]
    rows = []
    for c, d in bc.items():
        cnt = d.get("messages", d.get("calls", ""))
        rows.append([c, cnt, fmt_bytes(d.get("bytes", 0)), *[fmt_s(d["time_s"][k]) for k in cols], _sp(d["speedup"])])
    r.table(["class", "messages / calls", "bytes", *cols, "speedup"], rows)
    if bc:
        labels = list(bc)
        r.figure(plots.paired_bars(labels, [bc[c]["time_s"]["hostcopy"] for c in labels],
                                   [bc[c]["time_s"]["gpudirect"] for c in labels], title="Time per message-size class"),
                 "Average time per rank in messages of each size class (waits included), collectives and copies.")
    if res["attribution"] == "estimate":
        r.div("Time per class is an estimate inside each operation (see docs/analysis.md); the saving per "
              "class below is measured by simulation.", "note")
    g = res.get("class_gains")
    if g:
        rows = [[c, f">= {d['threshold_bytes']:,} B", fmt_s(d["saving_s"]), fmt_pct(d["saving_share"])]
                for c, d in g["classes"].items()]
        r.h3("GPUDirect saving per size class (simulated, largest class first)")
        r.table(["class", "GPU-direct threshold", "communication saved / rank", "share of the saving"], rows)
        labels = list(g["classes"])
        r.figure(plots.speedup_bars(labels, {"saving (ms)": [d["saving_s"] * 1e3 for d in g["classes"].values()]},
                                    title="Communication saved by moving each class to GPUDirect",
                                    ylabel="ms per rank"),
                 "Marginal saving when messages of each class (and larger) go GPU-direct.")
    m = res["messages"]
    r.h3("Point-to-point vs collective")
    r.table(["", "messages", "share", "HostCopy time", "GPUDirect time", "speedup"],
            [["point-to-point", f"{m['p2p']:,}", fmt_pct(m["p2p_share"]), fmt_s(m["p2p_time_s"]["hostcopy"]),
              fmt_s(m["p2p_time_s"]["gpudirect"]), _sp(m["p2p_speedup"])],
             ["collective", f"{m['collective']:,}", fmt_pct(m["collective_share"]),
              fmt_s(m["collective_time_s"]["hostcopy"]), fmt_s(m["collective_time_s"]["gpudirect"]),
              _sp(m["collective_speedup"])]])
    if res.get("by_callsite"):
        r.h2("By call site")
        rows = [[s, *[fmt_s(d["time_s"][c]) for c in cols], _sp(d["speedup"])] for s, d in res["by_callsite"].items()]
        r.table(["call site", *cols, "speedup"], rows)

    r.h2("POP efficiencies")
    keys = [("parallel_efficiency", "parallel efficiency"), ("load_balance", "  load balance"),
            ("communication_efficiency", "  communication efficiency"),
            ("device_communication_efficiency", "device communication efficiency")]
    r.table(["metric", *cols], [[lab, *[fmt_pct(res["pop"][c][k]) for c in cols]] for k, lab in keys])
    r.p(f"GPUDirect / HostCopy communication efficiency: {fmt_x(res['pop_comm_efficiency_gain'])}", cls="meta")

    r.h2("Profiles (average time per process, ms)")
    for mode in ("hostcopy", "gpudirect"):
        for t in res["profiles"][mode]:
            r.h3(f"{mode}: {t['title']}")
            rows = []
            totals = []
            for i, row in enumerate(t["rows"]):
                if row[0] in ("Total", "REGION"):
                    totals.append(i)
                inst = "" if row[5] != row[5] else f"{row[5]:.3f}"
                rows.append([row[0], row[1], f"{row[2]:.4f}", f"{row[3]:.4f}", f"{row[4]:.4f}", inst])
            r.table(t["columns"], rows, numeric_from=2, total_rows=totals)
    if whatif_res:
        whatif_section(r, whatif_res)
    if mapping_res:
        mapping_section(r, mapping_res)
    if res.get("timelines"):
        r.h2("Timelines")
        r.p("Open in the Perfetto UI (ui.perfetto.dev) or chrome://tracing: " + ", ".join(res["timelines"].values()))
    return r


def whatif_section(r: HtmlReport, w: dict):
    from . import plots
    r.h2("GPUs per node")
    r.p(f"{w['nranks']} ranks; machine default {w['machine_gpus_per_node']} GPUs/node; NIC bandwidth "
        f"{'scaled with GPUs per node' if w['scale_nic_with_gpus'] else 'as the machine has it'}.", cls="meta")
    rows = []
    for x in w["rows"]:
        if "error" in x:
            rows.append([x["gpus_per_node"], x["mode"], "-", "-", "-", "-", x["error"]])
        else:
            rows.append([x["gpus_per_node"], x["mode"], x["nodes"], f"{x['network_scale']:.2f}", fmt_s(x["comm_s"]),
                         fmt_s(x["runtime_s"]), fmt_pct(x.get("comm_change_vs_first"), True)])
    r.table(["GPUs/node", "mode", "nodes", "network scale", "communication", "run time", "comm. vs first"], rows)
    r.figure(plots.gpn_time_bars(w["rows"], w["modes"]), "Computation + communication per rank for each GPUs-per-node configuration.")


def mapping_section(r: HtmlReport, m: dict):
    from . import plots
    r.h2("Rank mapping")
    rows = [[x["mapping"], fmt_bytes(x["inter_node_bytes"]), fmt_pct(x["inter_node_share"]), fmt_s(x["comm_s"]),
             fmt_s(x["runtime_s"])] for x in m["rows"]]
    r.table(["mapping", "inter-node bytes", "share", "communication", "run time"], rows)
    r.figure(plots.mapping_bars(m["rows"]), "Simulated communication time per mapping.")


def whatif_report(w: dict) -> HtmlReport:
    r = HtmlReport(f"Node configurations: {Path(w['trace']).name} on {w['machine']}")
    assumptions_box(r, w)
    whatif_section(r, w)
    return r


def mapping_report(m: dict) -> HtmlReport:
    r = HtmlReport(f"Rank mapping: {Path(m['trace']).name} on {m['machine']}")
    mapping_section(r, m)
    return r


def sweep_report(df, figures: dict[str, Any]) -> HtmlReport:
    """Sweep results: the figures from sweep_plots and the result table (first 500 rows)."""
    r = HtmlReport("g2gsim sweep results")
    r.p(f"{len(df)} points", cls="meta")
    for cap, fig in figures.items():
        r.figure(fig, cap)
    show = [c for c in ["trace", "machine", "mode", "gpus_per_node", "network_scale", "gpudirect_min_bytes",
                        "mapping", "comm_s", "runtime_s", "compute_s", "error"] if c in df.columns]
    rows = []
    for _, x in df[show].head(500).iterrows():
        rows.append([fmt_s(float(v)) if k.endswith("_s") and isinstance(v, (float, np.floating)) else v
                     for k, v in x.items()])
    r.table(show, rows, numeric_from=3)
    return r


__all__ = ["HtmlReport", "compare_report", "whatif_report", "mapping_report", "sweep_report"]

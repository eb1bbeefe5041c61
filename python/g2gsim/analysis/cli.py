"""Commands of the analysis package, added to the ``g2gsim`` group by ``register(main)``:
compare, whatif, map, profile, sweep, sweep-plot."""
from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from ..units import parse_size
from ..vocab import MODES
from ._fmt import fmt_bytes, fmt_pct, fmt_s, fmt_x

# wide tables when the output is a file or a pipe (rich would wrap them at 80 columns)
console = Console(width=None if sys.stdout.isatty() else 150)
err_console = Console(stderr=True)


def _fail(msg: str, code: int = 1):
    from .._errors import fail
    fail(msg, code)


def _mapping(m: str | None):
    if m is None or m in ("linear", "round-robin"):
        return m
    from .mapping import read_mapping
    if not Path(m).exists():
        _fail(f"--mapping {m!r}: use linear, round-robin or a file with one node index per rank")
    try:
        return read_mapping(m)
    except ValueError as e:
        _fail(str(e))


def _size(ctx, param, value):
    if value is None:
        return None
    try:
        return parse_size(value)
    except ValueError as e:
        raise click.BadParameter(f"{e} (a size in bytes: 65536, 64KiB = 65536, 64KB = 64000)") from None


def _gpn_list(ctx, param, value):
    try:
        out = [int(x) for x in str(value).split(",") if x.strip()]
    except ValueError:
        raise click.BadParameter("a comma-separated list of integers, e.g. 1,2,4,6") from None
    if not out or min(out) < 1:
        raise click.BadParameter("GPUs per node must be positive integers")
    return out


def common_sim_options(f):
    """simulate()'s options shared by the analysis commands."""
    opts = [
        click.option("--machine", "-m", default="lassen", show_default=True, help="preset name or machine TOML file"),
        click.option("--mapping", default=None, help="linear (default), round-robin, or a file of node indices per rank"),
        click.option("--coll-algo", "coll_algos", default=None, help="override algorithms: allreduce=ring,bcast=binomial"),
        click.option("--network-scale", type=float, default=1.0, show_default=True, help="multiply NIC and network bandwidth"),
        click.option("--assume-buffers", type=click.Choice(["traced", "host", "device", "infer"]), default=None,
                     hidden=True, help="replaced by --buffers"),
        click.option("--buffers", type=click.Choice(["traced", "device", "host"]), default=None,
                     help="where MPI data buffers live: traced (default: as recorded; explicit staging copies are "
                          "recognised), device or host (docs/semantics.md)"),
        click.option("--window", type=click.Choice(["traced", "all"]), default="traced", show_default=True,
                     help="traced: skip stretches the tracer did not record (reported per rank); all: simulate them as host time"),
        click.option("--no-progress", is_flag=True, help="no progress output"),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


class _Status:
    def __init__(self, enabled: bool, what: str):
        self.enabled = enabled and err_console.is_terminal
        self.what = what
        self.st = None

    def __enter__(self):
        if self.enabled:
            self.st = err_console.status(self.what)
            self.st.__enter__()
        return self

    def __call__(self, label: str):
        if self.st:
            self.st.update(f"{self.what}: {label}")

    def __exit__(self, *a):
        if self.st:
            self.st.__exit__(*a)


def _errors():
    from .. import machines
    from ..sim import SimulationError
    from ..trace import TraceError
    return (TraceError, machines.MachineError, SimulationError, ValueError, OSError)


def _write_json(path, obj):
    from .compare import sanitize
    Path(path).write_text(json.dumps(sanitize(obj), indent=2))
    console.print(f"JSON written to {path}")


# ----------------------------------------------------------------------------------------- printing
def _defaulted(param: str) -> bool:
    """True when the user did not give this option (its default was used)."""
    ctx = click.get_current_context(silent=True)
    try:
        return ctx is not None and ctx.get_parameter_source(param) == click.core.ParameterSource.DEFAULT
    except Exception:
        return False


def _print_head(res: dict):
    """The first lines of a result: what it assumed (machine first) and options that changed nothing."""
    from rich.markup import escape
    mi = res.get("machine_info")
    # the texts name options and machine-file tables ("[collectives]"): printed as written
    if mi:
        console.print(f"[bold]{escape(mi['sentence'])}[/]", highlight=False)
    for a in res.get("assumptions", []):
        if mi and a == mi["sentence"]:
            continue
        console.print(f"[dim]assumed:[/] {escape(a)}", highlight=False)
    for n in res.get("notices", []):
        console.print(f"[bold yellow]notice:[/] {escape(n)}", highlight=False)


def print_sensitivity(res: dict):
    sens = res.get("sensitivity")
    mi = res.get("machine_info") or {}
    kp = mi.get("key_parameters") or {}
    if kp:
        console.print("key parameters: " + ", ".join(f"{k} = {v}" for k, v in kp.items()), highlight=False)
    if not sens:
        return
    if sens.get("note"):
        console.print(f"[yellow]sensitivity:[/] {sens['note']}", highlight=False)
    if sens["parameters"]:
        t = Table(title="sensitivity: HostCopy vs GPUDirect at the ends of each uncertain parameter (most sensitive first)")
        for c in ("parameter", "value", "low", "change at low", "high", "change at high", "source"):
            t.add_column(c, justify="left" if c in ("parameter", "source") else "right")
        for p in sens["parameters"]:
            t.add_row(p["key"], str(p["value"]), str(p["low"]), f"{fmt_pct(p['change_low'], True)} ({p['verdict_low']})",
                      str(p["high"]), f"{fmt_pct(p['change_high'], True)} ({p['verdict_high']})", p["source"])
        console.print(t)


def print_compare(res: dict):
    _print_head(res)
    cols = res["columns"]
    t = Table(title=f"HostCopy vs GPUDirect: {Path(res['trace']).name} on {res['machine']} "
                    f"({res['nranks']} ranks, {res['nodes']} nodes x {res['gpus_per_node']} GPUs)")
    t.add_column("per rank")
    for c in cols:
        t.add_column(c, justify="right")
    for key, label in (("runtime_s", "run time"), ("comm_s", "communication"), ("mpi_s", "  in MPI"),
                       ("memcpy_s", "  explicit copies"), ("compute_s", "computation")):
        t.add_row(label, *[fmt_s(res["summary"][c][key]) for c in cols])
    t.add_row("communication share", *[fmt_pct(res["summary"][c]["comm_share"]) for c in cols])
    t.add_row("[bold]comm. speedup vs hostcopy", *[f"[bold]{fmt_x(res['speedup'][c])}" for c in cols])
    console.print(t)
    rt = res["runtime"]
    console.print(f"[bold]{rt.get('verdict_statement', rt['verdict'])}[/]", highlight=False)
    console.print(f"[bold]{rt['verdict']}[/]: run time {fmt_s(rt['hostcopy_s'])} -> {fmt_s(rt['gpudirect_s'])} "
                  f"({fmt_pct(rt['simulated_change'], True)} simulated; Amdahl with a "
                  f"{fmt_pct(rt['comm_share_hostcopy'])} communication share: {fmt_pct(rt['amdahl_change'], True)}"
                  + (f"; traced compute share {fmt_pct(rt['traced_compute_share'])}: "
                     f"{fmt_pct(rt.get('amdahl_change_traced_share'), True)}" if rt.get("traced_compute_share") is not None else "")
                  + ")", highlight=False)
    if res["by_op"]:
        t = Table(title="by operation (avg per rank)")
        t.add_column("operation")
        t.add_column("calls", justify="right")
        for c in cols:
            t.add_column(c, justify="right")
        t.add_column("speedup", justify="right")
        for op, d in res["by_op"].items():
            t.add_row(op, f"{d['count']:,}", *[fmt_s(d["time_s"][c]) for c in cols], fmt_x(d["speedup"]))
        console.print(t)
    t = Table(title=f"by message size class (avg per rank; per-call times: {res['attribution']})")
    t.add_column("class")
    t.add_column("messages", justify="right")
    t.add_column("bytes", justify="right")
    for c in cols:
        t.add_column(c, justify="right")
    t.add_column("speedup", justify="right")
    for k, d in res["by_class"].items():
        t.add_row(k, f"{d.get('messages', d.get('calls', 0)):,}", fmt_bytes(d.get("bytes", 0)),
                  *[fmt_s(d["time_s"][c]) for c in cols], fmt_x(d["speedup"]))
    console.print(t)
    g = res.get("class_gains")
    if g:
        t = Table(title="GPUDirect saving per size class (simulated: the class and larger go GPU-direct)")
        for c in ("class", "threshold", "saved per rank", "share of saving"):
            t.add_column(c, justify="left" if c == "class" else "right")
        for k, d in g["classes"].items():
            t.add_row(k, f">= {d['threshold_bytes']:,} B", fmt_s(d["saving_s"]), fmt_pct(d["saving_share"]))
        console.print(t)
    m = res["messages"]
    console.print(f"messages: {m['p2p']:,} point-to-point ({fmt_pct(m['p2p_share'])}), {m['collective']:,} collective "
                  f"({fmt_pct(m['collective_share'])}); speedup p2p {fmt_x(m['p2p_speedup'])}, "
                  f"collective {fmt_x(m['collective_speedup'])}", highlight=False)
    if res.get("by_callsite"):
        t = Table(title="by call site (avg per rank)")
        t.add_column("call site")
        for c in cols:
            t.add_column(c, justify="right")
        t.add_column("speedup", justify="right")
        for s, d in res["by_callsite"].items():
            t.add_row(s, *[fmt_s(d["time_s"][c]) for c in cols], fmt_x(d["speedup"]))
        console.print(t)
    t = Table(title="POP efficiencies")
    t.add_column("metric")
    for c in cols:
        t.add_column(c, justify="right")
    for k, lab in (("parallel_efficiency", "parallel efficiency"), ("load_balance", "  load balance"),
                   ("communication_efficiency", "  communication efficiency"),
                   ("device_communication_efficiency", "device communication efficiency")):
        t.add_row(lab, *[fmt_pct(res["pop"][c][k]) for c in cols])
    console.print(t)
    print_sensitivity(res)
    for n in res["notes"]:
        console.print(f"[yellow]note:[/] {n}", highlight=False)


def print_profile(tables: list[dict], title: str):
    for tb in tables:
        t = Table(title=f"{title}: {tb['title']} (ms)")
        for i, c in enumerate(tb["columns"]):
            t.add_column(c, justify="left" if i < 2 else "right")
        for r in tb["rows"]:
            inst = "" if r[5] != r[5] else f"{r[5]:.3f}"
            style = "bold" if r[0] in ("Total", "REGION") else None
            t.add_row(r[0], r[1], f"{r[2]:.4f}", f"{r[3]:.4f}", f"{r[4]:.4f}", inst, style=style)
        console.print(t)


def print_whatif(w: dict):
    t = Table(title=f"GPUs per node: {Path(w['trace']).name} on {w['machine']} ({w['nranks']} ranks"
                    + (", NIC scaled with GPUs" if w["scale_nic_with_gpus"] else "") + ")")
    for c in ("GPUs/node", "nodes", "net scale", *[f"comm {m}" for m in w["modes"]], *[f"run {m}" for m in w["modes"]],
              *[f"comm vs first ({m})" for m in w["modes"]]):
        t.add_column(c, justify="right")
    for gpn in dict.fromkeys(r["gpus_per_node"] for r in w["rows"]):
        rs = {r["mode"]: r for r in w["rows"] if r["gpus_per_node"] == gpn}
        any_ok = next((r for r in rs.values() if "error" not in r), None)
        if any_ok is None:
            t.add_row(str(gpn), "-", "-", *["error"] * (3 * len(w["modes"])))
            continue
        t.add_row(str(gpn), str(any_ok["nodes"]), f"{any_ok['network_scale']:.2f}",
                  *[fmt_s(rs[m].get("comm_s")) if m in rs and "error" not in rs[m] else "error" for m in w["modes"]],
                  *[fmt_s(rs[m].get("runtime_s")) if m in rs and "error" not in rs[m] else "error" for m in w["modes"]],
                  *[fmt_pct(rs[m].get("comm_change_vs_first"), True) if m in rs else "-" for m in w["modes"]])
    console.print(t)
    for r in w["rows"]:
        if "error" in r:
            console.print(f"[yellow]{r['gpus_per_node']} GPUs/node, {r['mode']}:[/] {r['error']}", highlight=False)


def print_mapping(m: dict):
    t = Table(title=f"rank mapping: {Path(m['trace']).name} on {m['machine']} ({m['nranks']} ranks, "
                    f"{m['gpus_per_node']} GPUs/node, mode {m['mode']})")
    for c in ("mapping", "inter-node bytes", "share", "communication", "run time"):
        t.add_column(c, justify="left" if c == "mapping" else "right")
    for r in m["rows"]:
        t.add_row(r["mapping"] + (" *" if r["mapping"] == m["best"] else ""), fmt_bytes(r["inter_node_bytes"]),
                  fmt_pct(r["inter_node_share"]), fmt_s(r["comm_s"]), fmt_s(r["runtime_s"]))
    console.print(t)
    console.print(f"optimised vs linear: communication {fmt_x(m['improvement'])} faster "
                  f"(optimiser {m['optimiser_s']:.2f} s); * = written", highlight=False)


# ----------------------------------------------------------------------------------------- commands
def _needs_plot(**options) -> None:
    """Fail with one line naming the [plot] extra, before any simulation, when one of ``options``
    (--report, --plot, ...) is set and matplotlib is missing."""
    used = [k for k, v in options.items() if v]
    if used:
        from .._extras import require
        require("matplotlib", "plot", " and ".join(k if k == "sweep-plot" else f"--{k}" for k in used))


def register(group: click.Group) -> None:
    """Adds the analysis commands to the ``g2gsim`` click group."""

    @group.command()
    @click.argument("trace", type=click.Path(exists=True))
    @common_sim_options
    @click.option("--gpus-per-node", type=click.IntRange(1), default=None, help="override GPUs (ranks) per node")
    @click.option("--mixed", is_flag=True, help="add the columns 'gpudirect >= 64KiB' and 'gpudirect collectives only'")
    @click.option("--gpudirect-min-bytes", callback=_size, default=None,
                  help="add a column: GPU-direct only for messages of at least this size (65536, 64KiB)")
    @click.option("--gpudirect-collectives-only", is_flag=True, help="add a column: GPU-direct for collectives only")
    @click.option("--staged-buffers-are-device/--no-staged-buffers-are-device", "staged", default=None, hidden=True,
                  help="replaced by --buffers device")
    @click.option("--no-sensitivity", is_flag=True, help="skip the re-simulations at the ends of the machine's uncertain parameters")
    @click.option("--attribution", type=click.Choice(["auto", "timeline", "estimate"]), default="auto", show_default=True,
                  help="per-call times for the size-class and call-site split: from the core's timeline (exact) or estimated")
    @click.option("--no-class-gains", is_flag=True, help="skip the extra simulations that measure the saving per size class")
    @click.option("--whatif", "whatif_gpn", default=None, help="also run the GPUs-per-node what-if (e.g. 1,2,4,6) for --report")
    @click.option("--json", "json_out", type=click.Path(dir_okay=False), default=None, help="write the comparison as JSON")
    @click.option("--report", type=click.Path(dir_okay=False), default=None, help="write a self-contained HTML report")
    @click.option("--timeline", type=click.Path(dir_okay=False), default=None,
                  help="write Perfetto timelines: NAME-<column>.json for each column")
    @click.option("--profile", "profile_out", type=click.Path(dir_okay=False), default=None,
                  help="write the profile tables (HostCopy and GPUDirect: time per category and operation, per process) as text")
    @click.option("-j", "--jobs", type=click.IntRange(1), default=None,
                  help="simulations run side by side (default: the processors available, at most 8, as many as the memory holds); "
                       "the answer is the same for any number")
    def compare(trace, machine, mapping, coll_algos, network_scale, assume_buffers, buffers, window, no_progress,
                gpus_per_node, mixed, gpudirect_min_bytes, gpudirect_collectives_only, staged, no_sensitivity,
                attribution, no_class_gains, whatif_gpn, json_out, report, timeline, profile_out, jobs):
        """HostCopy vs GPUDirect on TRACE: communication speedup, run-time change, split by operation,
        message size and call site, p2p vs collective share, POP metrics, profiles."""
        from .compare import compare as do_compare
        from .metrics import profile_text
        _needs_plot(report=report)
        try:
            with _Status(not no_progress, "simulating") as st:
                res = do_compare(trace, machine, mixed=mixed, gpudirect_min_bytes=gpudirect_min_bytes,
                                 gpudirect_collectives_only=gpudirect_collectives_only, class_gains=not no_class_gains,
                                 attribution=attribution, timeline=timeline,
                                 staged_as_device=staged or None, assume_buffers=assume_buffers,
                                 buffers=buffers, window=window, sensitivity=not no_sensitivity,
                                 machine_default=_defaulted("machine"), jobs=jobs,
                                 progress=st, gpus_per_node=gpus_per_node, mapping=_mapping(mapping),
                                 coll_algos=coll_algos, network_scale=network_scale)
                w = None
                if whatif_gpn:
                    from .whatif import whatif
                    w = whatif(trace, machine, _gpn_list(None, None, whatif_gpn), mapping=_mapping(mapping),
                               network_scale=network_scale, assume_buffers=assume_buffers, progress=st,
                               coll_algos=coll_algos, buffers=res["buffers"], window=window, jobs=jobs)
        except _errors() as e:
            _fail(str(e))
        print_compare(res)
        print_profile(res["profiles"]["gpudirect"], "GPUDirect profile")
        if w:
            print_whatif(w)
        if json_out:
            _write_json(json_out, dict(res, whatif=w) if w else res)
        if profile_out:
            Path(profile_out).write_text("".join(f"# {m}\n{profile_text(res['profiles'][m])}\n" for m in ("hostcopy", "gpudirect")))
            console.print(f"profile tables written to {profile_out}")
        if report:
            from .report_html import compare_report
            compare_report(res, whatif_res=w).write(report)
            console.print(f"HTML report written to {report}")
        for name, p in res["timelines"].items():
            console.print(f"timeline ({name}): {p}")

    @group.command()
    @click.argument("trace", type=click.Path(exists=True))
    @common_sim_options
    @click.option("--gpus-per-node", "gpn", default="1,2,4,6", show_default=True, callback=_gpn_list,
                  help="comma-separated GPUs (ranks) per node")
    @click.option("--scale-nic-with-gpus", is_flag=True, help="NIC/network bandwidth grows linearly with GPUs per node")
    @click.option("--modes", default="hostcopy,gpudirect", show_default=True, help="comma-separated modes")
    @click.option("--json", "json_out", type=click.Path(dir_okay=False), default=None)
    @click.option("--report", type=click.Path(dir_okay=False), default=None, help="self-contained HTML report")
    @click.option("--plot", type=click.Path(dir_okay=False), default=None,
                  help="plot computation + communication per GPUs-per-node configuration (PNG)")
    @click.option("-j", "--jobs", type=click.IntRange(1), default=None,
                  help="simulations run side by side (default: the processors available, at most 8, as many as the memory holds); "
                       "the answer is the same for any number")
    def whatif(trace, machine, mapping, coll_algos, network_scale, assume_buffers, buffers, window, no_progress, gpn,
               scale_nic_with_gpus, modes, json_out, report, plot, jobs):
        """Communication time of TRACE per GPUs-per-node configuration, HostCopy and GPUDirect."""
        from .whatif import whatif as do_whatif
        _needs_plot(report=report, plot=plot)
        ms = [m.strip() for m in modes.split(",") if m.strip()]
        for m in ms:
            if m not in MODES:
                _fail(f"--modes: {m!r} is not {', '.join(MODES[:-1])} or {MODES[-1]}")
        try:
            with _Status(not no_progress, "simulating") as st:
                w = do_whatif(trace, machine, gpn, scale_nic_with_gpus=scale_nic_with_gpus, mapping=_mapping(mapping),
                              modes=ms, network_scale=network_scale, assume_buffers=assume_buffers, progress=st,
                              coll_algos=coll_algos, buffers=buffers, window=window, jobs=jobs,
                              machine_default=_defaulted("machine"))
        except _errors() as e:
            _fail(str(e))
        _print_head(w)
        print_whatif(w)
        if json_out:
            _write_json(json_out, w)
        if plot:
            from . import plots
            plots.save(plots.gpn_time_bars(w["rows"], ms), plot)
            console.print(f"plot written to {plot}")
        if report:
            from .report_html import whatif_report
            whatif_report(w).write(report)
            console.print(f"HTML report written to {report}")

    @group.command("map")
    @click.argument("trace", type=click.Path(exists=True))
    @click.option("--machine", "-m", default="lassen", show_default=True, help="preset name or machine TOML file")
    @click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="mapping file to write (one node index per rank)")
    @click.option("--gpus-per-node", type=click.IntRange(1), default=None, help="GPUs (ranks) per node (default: the machine's)")
    @click.option("--mode", type=click.Choice(MODES), default="as-traced", show_default=True,
                  help="mode of the evaluating simulations")
    @click.option("--no-collectives", is_flag=True, help="traffic matrix from point-to-point messages only")
    @click.option("--coll-algo", "coll_algos", default=None)
    @click.option("--network-scale", type=float, default=1.0, show_default=True)
    @click.option("--assume-buffers", type=click.Choice(["traced", "host", "device", "infer"]), default=None, hidden=True)
    @click.option("--buffers", type=click.Choice(["traced", "device", "host"]), default=None,
                  help="where MPI data buffers live (docs/semantics.md)")
    @click.option("--json", "json_out", type=click.Path(dir_okay=False), default=None)
    @click.option("--report", type=click.Path(dir_okay=False), default=None, help="self-contained HTML report")
    @click.option("--no-progress", is_flag=True)
    @click.option("-j", "--jobs", type=click.IntRange(1), default=None,
                  help="simulations run side by side (default: the processors available, at most 8, as many as the memory holds); "
                       "the answer is the same for any number")
    def map_(trace, machine, output, gpus_per_node, mode, no_collectives, coll_algos, network_scale, assume_buffers,
             buffers, json_out, report, no_progress, jobs):
        """Optimise the rank-to-node mapping of TRACE: place heavily communicating ranks on one node,
        write the mapping, compare simulated communication time with linear and round-robin."""
        from .mapping import map_trace, write_mapping
        try:
            with _Status(not no_progress, "mapping") as st:
                m = map_trace(trace, machine, gpus_per_node=gpus_per_node, mode=mode, collectives=not no_collectives,
                              assume_buffers=assume_buffers, progress=st, coll_algos=coll_algos,
                              network_scale=network_scale, buffers=buffers, jobs=jobs)
        except _errors() as e:
            _fail(str(e))
        print_mapping(m)
        write_mapping(output, m["mapping"])
        console.print(f"mapping ({m['best']}) written to {output}: use --mapping {output}")
        if json_out:
            _write_json(json_out, m)
        if report:
            from .report_html import mapping_report
            mapping_report(m).write(report)
            console.print(f"HTML report written to {report}")

    @group.command()
    @click.argument("trace", type=click.Path(exists=True))
    @common_sim_options
    @click.option("--mode", type=click.Choice(MODES), default="as-traced", show_default=True)
    @click.option("--gpus-per-node", type=click.IntRange(1), default=None)
    @click.option("--timeline", type=click.Path(dir_okay=False), default=None, help="also write the Perfetto timeline")
    @click.option("-o", "--output", type=click.Path(dir_okay=False), default=None, help="write the tables as text (one space-separated line per row)")
    def profile(trace, machine, mapping, coll_algos, network_scale, assume_buffers, buffers, window, no_progress, mode,
                gpus_per_node, timeline, output):
        """Profile table (Category, Operation, Avg_Total_Time, Avg_Min_Time, Avg_Max_Time,
        Instances_per_Process, ms) and POP efficiencies of one simulated run of TRACE."""
        from ..sim import simulate
        from ._common import load_trace
        from .attribution import Attributor, core_supports_call_times, core_supports_timeline
        from .metrics import pop_metrics, profile_tables, profile_text
        calls_dir = tempfile.TemporaryDirectory(prefix="g2gsim-profile-")
        try:
            td = load_trace(trace)
            opts = dict(gpus_per_node=gpus_per_node, mapping=_mapping(mapping), coll_algos=coll_algos,
                        network_scale=network_scale, assume_buffers=assume_buffers, buffers=buffers, window=window,
                        machine_default=_defaulted("machine"))
            if timeline and not core_supports_timeline():
                err_console.print("[yellow]note:[/] the compiled core predates the timeline option: none written")
                timeline = None
            if timeline:
                opts.update(timeline=timeline, timeline_max_events=max(2_000_000, 20 * len(td.df) + 100_000))
            # exact per-call times whether or not a timeline is asked for (the same table either way)
            calls = Path(calls_dir.name) / "calls" if core_supports_call_times() else None
            if calls is not None:
                opts["call_times"] = str(calls)
            rep = simulate(td.path, machine, mode=mode, **opts)
            att = Attributor(td).attribute(rep, timeline, call_times=calls)
        except _errors() as e:
            _fail(str(e))
        finally:
            calls_dir.cleanup()
        _print_head(rep)
        tabs = profile_tables(rep, att)
        print_profile(tabs, f"{Path(trace).name} ({mode}, per-call times: {att.method})")
        pop = pop_metrics(rep)
        t = Table(title="POP efficiencies")
        t.add_column("metric")
        t.add_column("value", justify="right")
        for k, v in pop.items():
            t.add_row(k.replace("_", " "), fmt_s(v) if k == "runtime_s" else fmt_pct(v))
        console.print(t)
        if output:
            Path(output).write_text(profile_text(tabs))
            console.print(f"written to {output}")

    @group.command()
    @click.argument("sweep_file", type=click.Path(exists=True, dir_okay=False))
    @click.option("-o", "--output", default="results.parquet", show_default=True, type=click.Path(dir_okay=False),
                  help="results (Parquet); finished points also live in OUTPUT.points/")
    @click.option("--scheduler", default=None, help="address of a running Dask scheduler (tcp://host:8786); default: a LocalCluster")
    @click.option("--workers", type=click.IntRange(1), default=None, help="LocalCluster workers (default: CPUs, at most 8)")
    @click.option("--threads", is_flag=True, help="LocalCluster workers as threads of this process")
    @click.option("--retry-errors", is_flag=True, help="rerun points that failed before")
    @click.option("--plot", "plot_dir", type=click.Path(file_okay=False), default=None, help="then draw the plots into this directory")
    @click.option("--no-progress", is_flag=True)
    def sweep(sweep_file, output, scheduler, workers, threads, retry_errors, plot_dir, no_progress):
        """Run a parameter sweep (traces x machines x modes x GPUs/node x parameters) on Dask; resumable."""
        from .sweep import SweepError, run_sweep
        _needs_plot(plot=plot_dir)
        try:
            r = run_sweep(sweep_file, output, scheduler=scheduler, workers=workers, processes=not threads,
                          progress=not no_progress, retry_errors=retry_errors)
        except SweepError as e:
            _fail(str(e))
        except KeyboardInterrupt:
            _fail("interrupted: finished points are kept; rerun to resume", 130)
        console.print(f"{r.total} points: {r.computed} simulated now, {r.skipped} already done, {r.failed} failed"
                      + (" (interrupted)" if r.interrupted else "") + f"; results in {r.output}")
        if plot_dir:
            from .sweep_plot import sweep_plot
            files = sweep_plot(r.output, plot_dir)
            console.print(f"{len(files)} files written to {plot_dir}")

    @group.command("sweep-plot")
    @click.argument("results", type=click.Path(exists=True, dir_okay=False))
    @click.option("-o", "--output", "outdir", required=True, type=click.Path(file_okay=False), help="directory for the figures")
    @click.option("--no-html", is_flag=True, help="PNG files only (no index.html)")
    def sweep_plot_cmd(results, outdir, no_html):
        """Draw a sweep's figures: GPUDirect speedup per configuration, computation vs communication,
        time per GPUs-per-node; plus index.html with all of them."""
        from .sweep_plot import sweep_plot
        _needs_plot(**{"sweep-plot": True})
        try:
            files = sweep_plot(results, outdir, html=not no_html)
        except (ValueError, OSError) as e:
            _fail(str(e))
        for f in files:
            console.print(str(f))

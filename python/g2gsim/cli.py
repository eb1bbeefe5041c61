"""The `g2gsim` command line."""
from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import NoReturn

import click
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from . import __version__, machines
from ._errors import SafeGroup, error_line
from ._errors import fail as _fail_line
from ._errors import notice as _notice
from ._io import atomic_output, write_text_atomic

# numpy and pyarrow (sim.py, trace.py) load where a command needs them: `g2gsim import` of a
# DUMPI trace streams through the Rust converter without them
from ._trace_base import TraceError
from .vocab import BUFFERS, HOST_SPACES, MODES, SEND_OPS, SHARING, WINDOWS


def run_simulation(*args, **kw):
    """``g2gsim.simulate`` (sim.py, loaded on first use)."""
    from .sim import simulate
    return simulate(*args, **kw)

console = Console(soft_wrap=True, emoji=False)   # "m.toml:100:" must not print as an emoji
err_console = Console(stderr=True, emoji=False)



def _one_line_warning(message, category, filename, lineno, line=None):
    """Readers' warnings and notices on the command line: one line each, no source excerpt."""
    kind = "note" if category.__name__.endswith("Notice") else "warning"
    return f"{kind}: {message}\n"


def _fail(msg: str, code: int = 1) -> NoReturn:
    _fail_line(msg, code)


class _Bar:
    """A rich progress bar fed by the core's (done, total) callbacks; silent when not a terminal."""

    def __init__(self, label: str, enabled: bool):
        self.enabled = enabled and sys.stderr.isatty()
        self.p = None
        self.label = label

    def __enter__(self):
        if self.enabled:
            self.p = Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed:,}/{task.total:,} ops"),
                              TimeElapsedColumn(), TimeRemainingColumn(), console=err_console, transient=True)
            self.p.__enter__()
            self.task = self.p.add_task(self.label, total=1)
        return self

    def __call__(self, done: int, total: int):
        if self.p:
            self.p.update(self.task, completed=done, total=max(total, 1))

    def __exit__(self, *a):
        if self.p:
            self.p.__exit__(*a)


def _parse_mapping(m: str | None):
    if m is None or m in ("linear", "round-robin"):
        return m
    p = Path(m)
    if not p.exists():
        _fail(f"--mapping {m!r}: use linear, round-robin or a file with one node index per rank")
    from .analysis.mapping import read_mapping
    try:
        return read_mapping(p)
    except ValueError as e:
        _fail(str(e))


def _sim(trace, machine, mode, progress=True, json_out=None, **kw):
    from .sim import SimulationError
    try:
        with _Bar(f"simulating ({mode})", progress) as bar:
            return run_simulation(trace, machine, mode=mode, progress=bar, **kw)
    except SimulationError as e:
        if json_out and e.blocked:  # every blocked rank, for tools
            write_text_atomic(json_out, json.dumps({"error": "deadlock", "blocked": e.blocked}, indent=2))
        _fail(str(e))
    except (TraceError, machines.MachineError, ValueError) as e:
        _fail(str(e))
    except KeyboardInterrupt:
        _fail("interrupted", 130)


def _fmt_s(s: float) -> str:
    if s == 0:
        return "0"
    if s < 1e-3:
        return f"{s * 1e6:.2f} us"
    if s < 1:
        return f"{s * 1e3:.3f} ms"
    return f"{s:.4f} s"


def print_summary(rep: dict):
    t = Table(title=f"{rep['trace']} on {rep['machine']} ({rep['mode']}, {rep['sharing']} sharing): "
                    f"{rep['nranks']} ranks, {rep['nodes']} nodes x {rep['gpus_per_node']} GPUs")
    t.add_column("metric")
    t.add_column("value", justify="right")
    t.add_row("simulated run time", _fmt_s(rep["total_time_s"]))
    t.add_row("communication (avg per rank)", _fmt_s(rep["comm_time_s"]))
    t.add_row("compute (avg per rank)", _fmt_s(rep["compute_time_s"]))
    t.add_row("copies (avg per rank)", _fmt_s(rep["copy_time_s"]))
    if rep.get("untraced_s"):
        t.add_row("untraced (avg per rank)", _fmt_s(rep["untraced_s"] / max(rep["nranks"], 1))
                  + (" skipped" if rep.get("window") == "traced" else " simulated as host time"))
    bs = rep.get("buffer_stats")
    if bs:
        t.add_row("MPI data buffers: device / staged / host", f"{bs['device']:,} / {bs['staged']:,} / "
                  f"{bs['mpi_buffers'] - bs['device'] - bs['staged']:,} (--buffers {rep.get('buffers')})")
        t.add_row("staging copies recognised / removed", f"{bs['staging_copies']:,} / {bs['staging_copies_removed']:,}")
    t.add_row("point-to-point / collective messages", f"{rep['p2p_messages']:,} / {rep['collective_messages']:,}")
    for k, v in rep["paths"].items():
        t.add_row(f"  via {k}", f"{v['messages']:,} msgs, {v['bytes']:,} B")
    e = rep["engine"]
    t.add_row("engine", f"{e['events']:,} events in {e['wall_s']:.3f} s ({e['events_per_s']:,.0f}/s)")
    console.print(t)
    ops = Table(title="time per operation (all ranks)")
    for c in ("op", "count", "total", "min", "max"):
        ops.add_column(c, justify="right" if c != "op" else "left")
    for k, v in sorted(rep["per_op"].items(), key=lambda kv: -kv[1]["total_s"]):
        ops.add_row(k, f"{v['count']:,}", _fmt_s(v["total_s"]), _fmt_s(v["min_s"]), _fmt_s(v["max_s"]))
    console.print(ops)


class _MainGroup(SafeGroup):
    """The `g2gsim` group. `generate` is built on first use: its workload list comes from the
    generators, which load numpy and pyarrow, and the other commands (`import` of a DUMPI trace)
    start without them."""
    group_class = SafeGroup  # type: ignore[assignment]  # its subgroups are plain SafeGroups

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | {"generate"})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name == "generate" and cmd_name not in self.commands:
            _add_generate()
        return super().get_command(ctx, cmd_name)


@click.group(cls=_MainGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="g2gsim")
def main():
    """g2gsim: what would GPU-aware MPI save this MPI+GPU application?

    Replays a trace (native .g2g.parquet, Score-P OTF2 or DUMPI) on a simulated multi-GPU cluster
    under HostCopy or GPUDirect, any node configuration and rank mapping.
    """
    import warnings
    warnings.formatwarning = _one_line_warning


def sim_options(f):
    opts = [
        click.option("--machine", "-m", default="lassen", show_default=True, help="preset name or machine TOML file"),
        click.option("--gpus-per-node", type=click.IntRange(1), default=None, help="override GPUs (ranks) per node"),
        click.option("--mapping", default=None, help="linear (default), round-robin, or a file of node indices per rank"),
        click.option("--coll-algo", "coll_algos", default="", help="override algorithms: allreduce=ring,bcast=binomial"),
        click.option("--buffers", type=click.Choice(BUFFERS), default=None,
                     help="where MPI data buffers live: traced (default: as recorded; explicit staging copies are "
                          "recognised), device or host (docs/semantics.md)"),
        click.option("--window", type=click.Choice(WINDOWS), default="traced", show_default=True,
                     help="traced: skip stretches the tracer did not record (reported per rank); all: simulate them as host time"),
        click.option("--staged-buffers-are-device", is_flag=True, hidden=True, help="replaced by --buffers device"),
        click.option("--gpudirect-min-bytes", type=click.IntRange(0), default=0,
                     help="mixed what-if: GPU-direct only for messages of at least this size"),
        click.option("--gpudirect-collectives-only", is_flag=True, help="mixed what-if: GPU-direct for collectives only"),
        click.option("--network-scale", type=float, default=1.0, help="multiply NIC and network bandwidth"),
        click.option("--no-overlap", is_flag=True, help="what-if: GPU work waits for completion (no compute/communication overlap)"),
        click.option("--sharing", type=click.Choice(SHARING), default=None, help="link sharing model (default: the machine file's, max-min)"),
        click.option("--assume-buffers", type=click.Choice(["traced", "host", "device", "infer"]), default=None, hidden=True,
                     help="replaced by --buffers"),
        click.option("--no-progress", is_flag=True, help="no progress bar"),
        click.option("--no-cache", is_flag=True, help="import OTF2 / DUMPI afresh, not from the import cache"),
        click.option("--strict", is_flag=True, help="end-of-trace warnings (unreceived messages, requests never waited for) are errors"),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


def _kw(gpus_per_node, mapping, coll_algos, staged_buffers_are_device, gpudirect_min_bytes,
        gpudirect_collectives_only, network_scale, assume_buffers, buffers=None, window="traced", sharing=None,
        no_overlap=False, no_cache=False, strict=False):
    return dict(cache=False if no_cache else None, strict=strict or None, sharing=sharing,
                no_overlap=no_overlap or None, gpus_per_node=gpus_per_node, mapping=_parse_mapping(mapping),
                coll_algos=coll_algos,
                staged_as_device=staged_buffers_are_device or None, gpudirect_min_bytes=gpudirect_min_bytes,
                gpudirect_collectives_only=gpudirect_collectives_only, network_scale=network_scale,
                assume_buffers=assume_buffers, buffers=buffers, window=window)


def machine_defaulted(param: str = "machine") -> bool:
    """True when the user gave no --machine (the preset came from the default)."""
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return False
    try:
        return ctx.get_parameter_source(param) == click.core.ParameterSource.DEFAULT
    except Exception:
        return False


def print_assumptions(rep: dict, out: Console | None = None):
    """The first lines of every result: notices (options that changed nothing), then assumptions."""
    from rich.markup import escape
    out = out or console
    # the texts name options and machine-file tables ("[collectives]"): printed as written
    for n in rep.get("notices", []):
        out.print(f"[bold yellow]notice:[/] {escape(n)}", highlight=False)
    for a in rep.get("assumptions", []):
        out.print(f"[dim]assumed:[/] {escape(a)}", highlight=False)


def _parse_ranks(spec: str | None):
    if not spec:
        return None
    out: list[int] = []
    for part in spec.split(","):
        try:
            if "-" in part:
                a, b = part.split("-", 1)
                out.extend(range(int(a), int(b) + 1))
            else:
                out.append(int(part))
        except ValueError:
            _fail(f"--timeline-ranks {spec!r}: expected ranks and ranges like 0-3,8")
    return out


_TIME_UNITS = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000}


def _parse_time_ns(s: str, spec: str) -> int:
    s = s.strip()
    for unit in ("ns", "us", "ms", "s"):
        if s.endswith(unit):
            try:
                return int(round(float(s[:-len(unit)]) * _TIME_UNITS[unit]))
            except ValueError:
                break
    else:
        try:
            return int(s)
        except ValueError:
            pass
    _fail(f"--timeline-window {spec!r}: expected START:END with units ns, us, ms or s (e.g. 1ms:2.5ms)")


def _parse_window(spec: str | None):
    if not spec:
        return None
    if ":" not in spec:
        _fail(f"--timeline-window {spec!r}: expected START:END (e.g. 1ms:2.5ms)")
    a, b = spec.split(":", 1)
    t0, t1 = _parse_time_ns(a, spec), _parse_time_ns(b, spec)
    if t1 <= t0:
        _fail(f"--timeline-window {spec!r}: the end must be after the start")
    return (t0, t1)


@main.command()
@click.argument("trace", type=click.Path(exists=True))
@click.option("--mode", type=click.Choice(MODES), default="as-traced", show_default=True)
@click.option("--json", "json_out", type=click.Path(dir_okay=False), default=None, help="write the full report as JSON")
@click.option("--csv", "csv_dir", type=click.Path(file_okay=False), default=None,
              help="write the report's tables as CSV into this directory (summary, per_op, by_size, paths, per_rank)")
@click.option("--timeline", type=click.Path(dir_okay=False), default=None,
              help="write a Perfetto timeline of the simulated run (.json, or .json.gz compressed)")
@click.option("--timeline-ranks", default=None, help="timeline: only these ranks, e.g. 0-3,8")
@click.option("--timeline-window", default=None, help="timeline: only events overlapping START:END of simulated time, e.g. 1ms:2ms")
@sim_options
def simulate(trace, mode, json_out, csv_dir, timeline, timeline_ranks, timeline_window, machine, no_progress, **kw):
    """Simulate TRACE on a machine and print a summary."""
    if (timeline_ranks or timeline_window) and not timeline:
        _fail("--timeline-ranks / --timeline-window filter a timeline: add --timeline PATH")
    tl = {}
    if timeline:
        tl = dict(timeline=str(timeline), timeline_ranks=_parse_ranks(timeline_ranks),
                  timeline_window_ns=_parse_window(timeline_window))
    rep = _sim(trace, machine, mode, progress=not no_progress, json_out=json_out,
               machine_default=machine_defaulted(), **_kw(**kw), **tl)
    print_assumptions(rep)
    print_summary(rep)
    for w in rep.get("warnings", []):
        _notice(w)
    if timeline:
        console.print(f"timeline written to {timeline} (open in https://ui.perfetto.dev)")
    if json_out:
        write_text_atomic(json_out, json.dumps(rep, indent=2))
        console.print(f"report written to {json_out}")
    if csv_dir:
        files = rep.to_csv(csv_dir)
        console.print(f"tables written to {csv_dir}: {', '.join(f.name for f in files)}")


@main.command()
@click.argument("trace", type=click.Path(exists=True))
@click.option("--assume-buffers", type=click.Choice(["traced", "host", "device", "infer"]), default=None, hidden=True)
@click.option("--no-cache", is_flag=True, help="import OTF2 / DUMPI afresh, not from the import cache")
def info(trace, assume_buffers, no_cache):
    """Ranks, each rank's traced time span and untraced stretches, operation counts, bytes by operation
    and a message-size histogram of TRACE."""
    if assume_buffers is not None:
        _fail("--assume-buffers is gone: a trace is read as recorded and where buffers live is decided at "
              "simulate time (g2gsim simulate/compare --buffers traced|device|host)", 2)
    from .sim import as_native
    from .trace import Trace
    try:
        t = Trace.read(as_native(trace, cache=False if no_cache else None))
    except (TraceError, ValueError) as e:
        _fail(str(e))
    df = t.table.select(["rank", "op", "bytes", "recv_bytes", "mem_space", "t_start_ns", "t_end_ns",
                         "dur_ns"]).to_pandas()
    df["op"] = df["op"].astype(str)
    traced = df["t_end_ns"] - df["t_start_ns"]
    df["traced_s"] = traced.where(traced.notna(), df["dur_ns"].where(df["op"] == "Compute")) * 1e-9
    console.print(f"[bold]{trace}[/]: {t.nranks} ranks, {len(df):,} operations, "
                  f"{len(t.comms)} communicator(s); source: {t.source or '-'}; buffers: {t.buffers}")
    print_spans(df, t.nranks)
    tab = Table(title="operations")
    for c in ("op", "count", "bytes sent", "bytes received", "device-buffer share", "traced time (all ranks)"):
        tab.add_column(c, justify="left" if c == "op" else "right")
    g = df.groupby("op")
    for op, sub in sorted(g, key=lambda kv: -len(kv[1])):
        dev = (~sub["mem_space"].isin(HOST_SPACES)).mean() if op not in ("Compute",) else 0.0
        tt = sub["traced_s"].sum(min_count=1)
        tab.add_row(op, f"{len(sub):,}", f"{int(sub['bytes'].sum()):,}", f"{int(sub['recv_bytes'].sum()):,}",
                    f"{dev:.0%}", "-" if tt != tt else _fmt_s(float(tt)))
    console.print(tab)
    sends = df[df["op"].isin(list(SEND_OPS))]
    if len(sends):
        import numpy as np

        from .vocab import SIZE_CLASSES  # the report's classes
        edges = [c.max_bytes for c in SIZE_CLASSES if c.max_bytes is not None]
        labels = [c.label for c in SIZE_CLASSES]
        counts = np.bincount(np.searchsorted(edges, sends["bytes"].to_numpy(), side="left"), minlength=len(labels))
        h = Table(title="point-to-point message sizes")
        h.add_column("size")
        h.add_column("messages", justify="right")
        h.add_column("share", justify="right")
        for lab, c in zip(labels, counts):
            h.add_row(lab, f"{c:,}", f"{c / len(sends):.1%}")
        console.print(h)


def print_spans(df, nranks: int, max_rows: int = 16):
    """Each rank's traced time span and its untraced stretches (the rows `Untraced`)."""
    g = df.groupby("rank")
    t0, t1 = g["t_start_ns"].min(), g["t_end_ns"].max()
    un = df[df["op"] == "Untraced"]
    if t0.isna().all() and not len(un):
        console.print("time span: the trace has no timestamps")
        return
    tab = Table(title="time span per rank (traced window = span minus untraced stretches)")
    for c in ("rank", "first call (s)", "last call (s)", "span", "untraced stretches", "untraced", "traced window"):
        tab.add_column(c, justify="right")
    ranks = list(range(nranks))
    shown = ranks if nranks <= max_rows else ranks[: max_rows // 2] + ranks[-max_rows // 2:]
    for r in shown:
        a, b = t0.get(r), t1.get(r)
        u = un[un["rank"] == r]
        span = (b - a) * 1e-9 if a == a and b == b and a is not None else float("nan")
        ut = float(u["dur_ns"].sum()) * 1e-9
        stretches = ", ".join(f"{x * 1e-9:.3f}-{y * 1e-9:.3f} s" for x, y in zip(u["t_start_ns"], u["t_end_ns"])
                              if x == x and y == y) or ("-" if not len(u) else f"{len(u)}")
        tab.add_row(str(r), "-" if a != a else f"{a * 1e-9:.6f}", "-" if b != b else f"{b * 1e-9:.6f}",
                    "-" if span != span else _fmt_s(span), stretches, _fmt_s(ut),
                    "-" if span != span else _fmt_s(span - ut))
    console.print(tab)
    if nranks > max_rows:
        console.print(f"({nranks - len(shown)} ranks not shown)")
    if len(un):
        console.print(f"untraced: {un['rank'].nunique()} of {nranks} ranks have stretches the tracer did not record "
                      f"({float(un['dur_ns'].sum()) * 1e-9 / nranks:.3f} s per rank on average); simulate/compare skip "
                      f"them (--window traced) unless --window all", highlight=False)


@main.command()
def models():
    """List the data-path models and the collective algorithms."""
    from . import _core
    t = Table(title="data-path models (docs/models/<name>.md)")
    t.add_column("name")
    t.add_column("what it models")
    t.add_column("machine-file keys")
    for name, summary, params in _core.models():
        t.add_row(name, summary, ", ".join(params))
    console.print(t)
    c = Table(title="collective algorithms (--coll-algo KIND=NAME)")
    c.add_column("collective")
    c.add_column("algorithms")
    for kind, algos in _core.coll_algorithms():
        c.add_row(kind, ", ".join(algos))
    console.print(c)


@main.group()
def machine():
    """Machine presets and files."""


@machine.command("list")
def machine_list():
    """List the shipped presets."""
    t = Table(title="machine presets")
    t.add_column("name")
    t.add_column("description")
    for name in machines.presets():
        try:
            d = machines.check(name, nodes=1)["description"]
        except machines.MachineError as e:
            d = f"[red]invalid: {e}[/]"
        t.add_row(name, d)
    console.print(t)


@machine.command("show")
@click.argument("name_or_file")
@click.option("--nodes", type=click.IntRange(1), default=2, show_default=True, help="build the network for this many nodes")
def machine_show(name_or_file, nodes):
    """Show a machine's parameters as g2gsim understands them."""
    try:
        d = machines.check(name_or_file, nodes=nodes)
    except machines.MachineError as e:
        _fail(str(e))
    t = Table(title=f"machine {d['name']}" + (f" ({name_or_file})" if isinstance(name_or_file, machines.MachineSpec) else ""))
    t.add_column("parameter")
    t.add_column("value", justify="right")
    for k, v in d.items():
        t.add_row(k, str(v))
    console.print(t)


@machine.command("validate")
@click.argument("name_or_file")
def machine_validate(name_or_file):
    """Check a machine file; lists every error, each naming the key and line."""
    try:
        errs = machines.validate(name_or_file)
    except machines.MachineError as e:
        _fail(str(e))
    if errs:
        for err in errs[:-1]:
            error_line(err)
        _fail(errs[-1] + (f" ({len(errs)} errors)" if len(errs) > 1 else ""))
    console.print(f"{name_or_file}: valid")


@machine.command("detect")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None, help="write the node file here (else print it)")
@click.option("--capture", type=click.Path(file_okay=False, path_type=Path), default=None, help="also save every raw command output here")
def machine_detect(output, capture):
    """Describe this node (GPUs, NVLink, PCIe, NICs, GPUDirect RDMA) as a machine file (docs/machine-detect.md)."""
    from .detect import detect
    text = detect(output, capture=capture)
    if output is None:
        click.echo(text, nl=False)
    else:
        console.print(f"wrote {output}; values that could not be detected are marked NOT DETECTED")


@main.group()
def cache():
    """The import cache of OTF2 / DUMPI traces (~/.cache/g2gsim, or G2GSIM_CACHE)."""


@cache.command("list")
def cache_list():
    """List the cached imports."""
    from . import sim
    entries = sim.cache_entries()
    for f in entries:
        console.print(f"{f.name}  {f.stat().st_size:,} B")
    console.print(f"{len(entries)} cached import(s) in {sim.CACHE_DIR}")


@cache.command("clear")
def cache_clear():
    """Remove every cached import."""
    from . import sim
    n, b = sim.clear_cache()
    console.print(f"removed {n} file(s), {b:,} B from {sim.CACHE_DIR}")


@main.command("import")
@click.argument("trace", type=click.Path(exists=True))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="native trace to write (.g2g.parquet)")
@click.option("--assume-buffers", type=click.Choice(["traced", "host", "device", "infer"]), default=None, hidden=True,
              help="gone: use --buffers of simulate/compare")
def import_(trace, output, assume_buffers):
    """Convert an OTF2 (Score-P or g2gsim's tracer), DUMPI or Nsight Systems (.sqlite, .nsys-rep) trace to the
    native format, as recorded (where buffers live is decided at simulate time: --buffers)."""
    from .formats import import_to_file
    if assume_buffers is not None:
        _fail("import --assume-buffers is gone: the import keeps what the trace records and where buffers live "
              f"is decided at simulate time: g2gsim simulate/compare {output} --buffers "
              f"{'traced' if assume_buffers == 'infer' else assume_buffers}", 2)
    try:
        st = import_to_file(Path(trace), output, progress=sys.stderr.isatty())
    except (TraceError, ValueError) as e:
        _fail(str(e))
    counts = st["op_counts"]
    console.print(f"wrote {output}: {st['nranks']} ranks, {st['rows']:,} operations "
                  f"({', '.join(f'{k} {v}' for k, v in sorted(counts.items()))})")


@main.command("export")
@click.argument("trace", type=click.Path(exists=True))
@click.option("--simgrid", "simgrid_dir", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="write SimGrid time-independent traces, platform, hostfile and smpirun options into this directory")
@click.option("--machine", "-m", default="lassen", show_default=True, help="preset name or machine TOML file (the platform)")
@click.option("--gpus-per-node", type=click.IntRange(1), default=None, help="override GPUs (ranks) per node")
@click.option("--host-speed", type=float, default=1e9, show_default=True, help="SimGrid host speed, flop/s (compute time = flops / speed)")
@click.option("--latency", type=click.Choice(["same-leaf", "hop"]), default="same-leaf", show_default=True,
              help="per-link latency of the platform (writers/simgrid_writer.py)")
@click.option("--assume-buffers", type=click.Choice(["traced", "host", "device", "infer"]), default=None)
def export(trace, simgrid_dir, machine, gpus_per_node, host_speed, latency, assume_buffers):
    """Export TRACE for SimGrid/SMPI's time-independent replay (docs/importing.md)."""
    from .sim import as_native
    from .trace import Trace
    from .writers.simgrid_writer import SimgridExportError, to_simgrid
    try:
        t = Trace.read(as_native(trace, assume_buffers=assume_buffers))
        tl, plat, hf = to_simgrid(t, simgrid_dir, machine, gpus_per_node=gpus_per_node,
                                  host_speed=host_speed, latency=latency)
    except (SimgridExportError, TraceError, machines.MachineError, ValueError) as e:
        _fail(str(e))
    console.print(f"wrote {t.nranks} rank traces, {plat.name} and {hf.name} to {simgrid_dir}; replay with:")
    console.print((Path(simgrid_dir) / "README.txt").read_text().splitlines()[-1].strip(), highlight=False, markup=False)


@main.command(context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
@click.option("-o", "--output", required=True, type=click.Path(file_okay=False), help="directory for the OTF2 archive")
@click.argument("command", nargs=-1, type=click.UNPROCESSED, required=True)
def record(output, command):
    """Run an MPI program under the g2gsim tracer: g2gsim record -o DIR -- mpirun -np 4 ./app"""
    from .record import record as do_record
    try:
        anchor = do_record(output, list(command))
    except (RuntimeError, FileNotFoundError, ValueError) as e:
        _fail(str(e))
    console.print(f"trace written: {anchor}")


def _add_generate():
    try:
        from . import generate as gen
    except ImportError:  # the generators package is optional in a partial checkout
        return

    @main.command(context_settings={"ignore_unknown_options": False})
    @click.argument("workload", type=click.Choice(sorted(gen.GENERATORS)))
    @click.option("--ranks", "-n", type=click.IntRange(1), required=True)
    @click.option("-o", "--output", required=True, type=click.Path(dir_okay=False))
    @click.option("--param", "-p", multiple=True, help="workload parameter NAME=VALUE (see --list-params)")
    def generate(workload, ranks, output, param):
        """Generate a synthetic trace: g2gsim generate jacobi2d --ranks 16 -p iterations=10 -o j.g2g.parquet"""
        specs = {p[0]: p for p in gen.params(workload)}
        kw = {}
        for item in param:
            if "=" not in item:
                _fail(f"--param {item!r}: expected NAME=VALUE")
            k, v = item.split("=", 1)
            if k not in specs:
                _fail(f"{workload} has no parameter {k!r} (it has: {', '.join(specs)})")
            typ = specs[k][1]
            try:
                if typ is bool:
                    kw[k] = v.lower() in ("1", "true", "yes", "on")
                elif typ in (list, tuple) or str(typ).startswith(("list", "tuple")):
                    kw[k] = [int(x) for x in v.split(",")]
                else:
                    kw[k] = typ(v)
            except (TypeError, ValueError):
                _fail(f"--param {k}: cannot read {v!r} as {getattr(typ, '__name__', typ)}")
        try:
            if hasattr(gen, "generate_to_file"):
                with atomic_output(output) as tmp:  # killed mid-way: no corrupt file at OUTPUT
                    gen.generate_to_file(workload, ranks, tmp, **kw)
                n = None
            else:
                t = gen.generate(workload, ranks, **kw)
                t.write(output)
                n = len(t.table)
        except (ValueError, TraceError) as e:
            _fail(str(e))
        console.print(f"wrote {output}" + (f" ({n:,} operations)" if n else ""))

    generate.help = (generate.help or "") + "\n\nWorkloads:\n\n" + "\n\n".join(
        f"{k}: {g.description if hasattr(g, 'description') else ''}" for k, g in sorted(gen.GENERATORS.items()))


def compare_modes(trace, machine, **kw) -> dict:
    """HostCopy vs GPUDirect (vs as-traced) on one trace: the reports, keyed by mode."""
    return {m: run_simulation(trace, machine, mode=m, **kw) for m in MODES}


def print_comparison(reps: dict):
    hc, gd = reps["hostcopy"], reps["gpudirect"]
    t = Table(title=f"HostCopy vs GPUDirect: {hc['trace']} on {hc['machine']} "
                    f"({hc['nranks']} ranks, {hc['nodes']} nodes x {hc['gpus_per_node']} GPUs)")
    t.add_column("")
    for m in reps:
        t.add_column(m, justify="right")
    t.add_column("GPUDirect speedup", justify="right")
    rows = [("run time", "total_time_s"), ("communication / rank", "comm_time_s"), ("copies / rank", "copy_time_s"),
            ("compute / rank", "compute_time_s")]
    for label, key in rows:
        if hc[key] <= 0:
            sp = "-"
        elif gd[key] <= 0:
            sp = "all removed"
        else:
            sp = f"{hc[key] / gd[key]:.2f}x"
        t.add_row(label, *[_fmt_s(r[key]) for r in reps.values()], sp)
    console.print(t)
    console.print("communication includes the staging copies HostCopy makes inside MPI calls; "
                  "`g2gsim compare` splits it by operation, size and call site")


@main.command()
@click.option("--workload", default="jacobi2d", show_default=True)
@click.option("--ranks", type=click.IntRange(2), default=16, show_default=True)
@click.option("--machine", "-m", default="lassen", show_default=True)
def demo(workload, ranks, machine):
    """Generate a workload, simulate it under HostCopy and GPUDirect, print the comparison."""
    from . import generate as gen
    from .sim import SimulationError
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / f"{workload}.g2g.parquet"
        t = gen.generate(workload, ranks)
        t.write(path)
        console.print(f"generated {workload} on {ranks} ranks: {len(t.table):,} operations ({t.source})")
        try:
            reps = compare_modes(path, machine)
        except (TraceError, machines.MachineError, SimulationError, ValueError) as e:
            _fail(str(e))
        print_comparison(reps)



def _add_analysis():
    # compare / sweep / report commands live in g2gsim.analysis (see ARCHITECTURE.md)
    try:
        from .analysis import cli as analysis_cli
    except ImportError as e:  # only while the package is absent from a partial checkout
        if "g2gsim.analysis" not in str(e):
            raise
        return
    analysis_cli.register(main)


_add_analysis()


def _add_calibrate():
    # calibrate / validate live in g2gsim.calibrate (measure a real cluster, fit a machine file)
    try:
        from .calibrate import cli as calibrate_cli
    except ImportError as e:  # only while the package is absent from a partial checkout
        if "g2gsim.calibrate" not in str(e):
            raise
        return
    calibrate_cli.register(main)


_add_calibrate()


# --set KEY=VALUE on every command that takes a machine (after every command is registered)
from ._set_option import add_set_options  # noqa: E402

add_set_options(main)


if __name__ == "__main__":
    main()

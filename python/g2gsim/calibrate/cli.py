"""``g2gsim calibrate`` and ``g2gsim validate``, added to the ``g2gsim`` group by ``register(main)``.

    g2gsim calibrate script [-o measure.py]            the self-contained measurement script
    g2gsim calibrate run --np 4 -o raw.json [-- ARGS]  mpirun it here (one node or an allocation)
    g2gsim calibrate fit RAW.json -o machine.toml [--base h200x4]
    g2gsim calibrate check RAW.json MACHINE            simulate every measured point, report errors
    g2gsim calibrate calls TRACE... --base M -o m.toml per-call costs from the traces' MPI_Irecv calls
    g2gsim validate script [-o workloads.py]           the self-contained workload script
    g2gsim validate run --mode device --np 4 -o runs/  mpirun it here
    g2gsim validate compare runs/ --machine MACHINE    predicted vs measured, both modes
"""
from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import NoReturn

import click
from rich.console import Console

console = Console(width=None if sys.stdout.isatty() else 160)
err_console = Console(stderr=True)
HERE = Path(__file__).resolve().parent


def _fail(msg: str, code: int = 1) -> NoReturn:
    from .._errors import fail
    fail(msg, code)


def _write_json(path, obj):
    from .report import json_ready
    Path(path).write_text(json.dumps(json_ready(obj), indent=1) + "\n")


def _mpirun(np_: int, script: Path, args: list[str], mpirun: str, mpirun_args: str) -> int:
    exe = shutil.which(mpirun)
    if exe is None:
        _fail(f"{mpirun!r} not found: run the script under your MPI launcher yourself "
              f"(`g2gsim calibrate script -o measure.py`)")
    cmd = [exe, "-np", str(np_), *shlex.split(mpirun_args), sys.executable, str(script), *args]
    err_console.print("[dim]$ " + " ".join(shlex.quote(c) for c in cmd) + "[/]")
    return subprocess.call(cmd)


def register(group: click.Group) -> None:
    """Adds the ``calibrate`` and ``validate`` command groups to the ``g2gsim`` click group."""

    @group.group()
    def calibrate():
        """Measure a cluster (mpi4py + cupy under mpirun) and fit a machine file to it (docs/calibration.md)."""

    @calibrate.command("script")
    @click.option("-o", "--output", type=click.Path(dir_okay=False), default="measure.py", show_default=True)
    def calibrate_script(output):
        """Write the self-contained measurement script (numpy, mpi4py, cupy) to run on the cluster."""
        shutil.copyfile(HERE / "measure.py", output)
        console.print(f"wrote {output}: run it with e.g. `mpirun -np 4 python3 {output} -o raw.json` "
                      f"(`python3 {output} --help`)")

    @calibrate.command("run", context_settings={"ignore_unknown_options": True})
    @click.option("--np", "np_", type=click.IntRange(1), default=2, show_default=True, help="MPI ranks (one per GPU)")
    @click.option("-o", "--output", default="calibrate-raw.json", show_default=True)
    @click.option("--mpirun", default="mpirun", show_default=True, help="launcher")
    @click.option("--mpirun-args", default="", help="extra launcher arguments, one string")
    @click.argument("script_args", nargs=-1, type=click.UNPROCESSED)
    def calibrate_run(np_, output, mpirun, mpirun_args, script_args):
        """Run the measurement script under mpirun here; SCRIPT_ARGS go to it (--host-only, --max-bytes 1MiB,
        --device on|off, ...)."""
        rc = _mpirun(np_, HERE / "measure.py", ["-o", output, *script_args], mpirun, mpirun_args)
        if rc:
            _fail(f"the measurement job failed (exit {rc}); what was measured before is in {output}", rc)

    @calibrate.command("fit")
    @click.argument("raw", type=click.Path(exists=True, dir_okay=False))
    @click.option("-o", "--output", type=click.Path(dir_okay=False), required=True, help="machine TOML to write")
    @click.option("--base", default="h200x4", show_default=True,
                  help="preset or machine file for what the measurements do not determine (network, NICs)")
    @click.option("--name", default=None, help="machine name (default: the output file's stem)")
    @click.option("--host-bw-from", type=click.Choice(["pingping", "pingpong", "both"]), default="pingping",
                  show_default=True, help="host curves that fit node.host.shm_bw")
    @click.option("--no-collectives", is_flag=True, help="do not choose collective algorithms")
    @click.option("--ring-bins", is_flag=True,
                  help="also fit [[mpi.factors]] bins with active_ranks from the ring series (every rank "
                       "of the node communicating at once; docs/calibration.md)")
    @click.option("--bins", is_flag=True,
                  help="size bins per path ([[mpi.factors]] lines per size range, each tuned to one curve) instead "
                       "of the joint fit of per-call costs and protocol switches (the default; docs/calibration.md)")
    @click.option("--collective-rates/--no-collective-rates", default=True, show_default=True,
                  help="one rate factor per collective and path, fitted by simulation on the collective series "
                       ">= 1 MiB (docs/calibration.md)")
    @click.option("--collective-bins/--no-collective-bins", default=False, show_default=True,
                  help="fit [[mpi.factors]] bins per collective (collective = \"Bcast\", ...) from the "
                       "collective series (docs/calibration.md)")
    @click.option("--no-verify", is_flag=True, help="skip the simulation of every measured point")
    @click.option("--json", "json_out", type=click.Path(dir_okay=False), default=None,
                  help="write the fit (parameters, details) and the verification rows as JSON")
    def calibrate_fit(raw, output, base, name, host_bw_from, no_collectives, ring_bins, bins, collective_rates,
                      collective_bins, no_verify, json_out):
        """Fit machine-file parameters to RAW (measure.py's JSON) and write OUTPUT, citing the run."""
        from .fit import fit, write_machine
        from .report import CALIB_HEADER, calib_rows, params_rows, rich_table
        from .verify import summarize, verify
        try:
            res = fit(raw, base=base, host_bw_from=host_bw_from, collectives=not no_collectives, ring=ring_bins,
                      coll_bins=collective_bins, bins=bins, coll_rates=collective_rates)
        except (ValueError, KeyError) as e:
            _fail(f"{raw}: {e}")
        cmd = "g2gsim calibrate fit " + " ".join(shlex.quote(a) for a in sys.argv[3:]) if len(sys.argv) > 3 else None
        write_machine(res, output, name=name, raw_path=str(raw), command=cmd)
        console.print(rich_table(f"fitted parameters -> {output}", ["key", "value", "from"], params_rows(res)))
        for n in res.notes:
            console.print(f"[yellow]note:[/] {n}", soft_wrap=True)
        out = {"params": res.machine_params(), "details": res.details, "notes": res.notes, "raw": res.raw_meta}
        if not no_verify:
            rows = verify(raw, output)
            summ = summarize(rows)
            console.print(rich_table("simulated vs measured (relative error)", CALIB_HEADER, calib_rows(summ)))
            out.update(rows=rows, summary=summ)
        if json_out:
            _write_json(json_out, out)

    @calibrate.command("calls")
    @click.argument("traces", nargs=-1, required=True, type=click.Path(exists=True))
    @click.option("--base", required=True,
                  help="preset or machine file the per-call costs are written into (everything else is kept)")
    @click.option("-o", "--output", type=click.Path(dir_okay=False), required=True, help="machine TOML to write")
    @click.option("--name", default=None, help="machine name (default: the output file's stem)")
    @click.option("--json", "json_out", type=click.Path(dir_okay=False), default=None,
                  help="write what was found (counts, medians, quartiles, the keys set) as JSON")
    def calibrate_calls(traces, base, output, name, json_out):
        """Per-call costs (mpi.call_overhead, mpi.device_call_overhead) from the MPI_Irecv calls of
        TRACES (any format g2gsim reads), written into BASE as OUTPUT.

        For traces without microbenchmarks of their machine: a call that only posts a receive waits
        on nothing, so its traced duration is the library's cost per call there (docs/calibration.md).
        """
        from .._trace_base import TraceError
        from ..machines import MachineError
        from .calls import CallCostError, call_costs, write_machine
        try:
            costs = call_costs(list(traces))
            cmd = "g2gsim calibrate calls " + " ".join(shlex.quote(a) for a in sys.argv[3:]) if len(sys.argv) > 3 else None
            write_machine(costs, base, output, name=name, command=cmd)
        except (CallCostError, TraceError, MachineError) as e:
            _fail(str(e))
        rows = []
        for space in ("host", "device"):
            sc = getattr(costs, space)
            if sc is not None:
                rows.append([f"MPI_Irecv, {space} buffers", str(sc.n), f"{sc.median_ns / 1e3:.3g} us",
                             f"{sc.p25_ns / 1e3:.3g} - {sc.p75_ns / 1e3:.3g} us"])
        from .report import rich_table
        console.print(rich_table(f"traced per-call costs -> {output}", ["calls", "n", "median", "25-75 %"], rows))
        for k, v in costs.machine_sets().items():
            console.print(f"set {k} = {v}")
        for n in costs.notes:
            console.print(f"[yellow]note:[/] {n}", soft_wrap=True)
        if json_out:
            _write_json(json_out, costs.as_dict())

    @calibrate.command("check")
    @click.argument("raw", type=click.Path(exists=True, dir_okay=False))
    @click.argument("machine")
    @click.option("--detail", is_flag=True, help="also print every size of the point-to-point curves")
    @click.option("--json", "json_out", type=click.Path(dir_okay=False), default=None)
    def calibrate_check(raw, machine, detail, json_out):
        """Simulate every measured point of RAW on MACHINE (preset or file) and report the errors."""
        from .report import CALIB_HEADER, calib_rows, detail_rows, rich_table
        from .verify import summarize, verify
        rows = verify(raw, machine)
        summ = summarize(rows)
        console.print(rich_table(f"{machine}: simulated vs measured", CALIB_HEADER, calib_rows(summ)))
        if detail:
            h, r = detail_rows(rows)
            console.print(rich_table("point-to-point per size", h, r))
        if json_out:
            _write_json(json_out, {"machine": str(machine), "rows": rows, "summary": summ})

    @calibrate.command("loo")
    @click.argument("raw", type=click.Path(exists=True, dir_okay=False))
    @click.option("--base", default="h200x4", show_default=True, help="machine file or preset for what is not measured")
    @click.option("--collectives", is_flag=True,
                  help="also leave out each collective series (the fits then search algorithms and fit collective bins: slow)")
    @click.option("--only", multiple=True, help="leave out only this series (e.g. 'pingping device'); repeatable")
    @click.option("--bins", is_flag=True, help="fit size bins per path (calibrate fit --bins) instead of the joint fit")
    @click.option("--json", "json_out", type=click.Path(dir_okay=False), default=None)
    @click.option("--md", "md_out", type=click.Path(dir_okay=False), default=None, help="write the table as markdown")
    def calibrate_loo(raw, base, collectives, only, bins, json_out, md_out):
        """Leave-one-out error: fit on every series of RAW but one, predict that one; for each series."""
        from .loo import HEADER, leave_one_out, markdown, table
        from .report import rich_table
        try:
            rows = leave_one_out(raw, base=base, collectives=collectives, only=list(only) or None, bins=bins)
        except (ValueError, KeyError) as e:
            _fail(f"{raw}: {e}")
        console.print(rich_table(f"{raw}: leave-one-out (fit without the series, then predict it)", HEADER, table(rows)))
        if json_out:
            _write_json(json_out, {"raw": str(raw), "base": base, "rows": rows})
        if md_out:
            Path(md_out).write_text(markdown(rows))

    @group.group()
    def validate():
        """Record small MPI+GPU workloads in both modes and compare the simulator's predictions with them."""

    @validate.command("script")
    @click.option("-o", "--output", type=click.Path(dir_okay=False), default="workloads.py", show_default=True)
    def validate_script(output):
        """Write the self-contained workload script (numpy, mpi4py, cupy)."""
        shutil.copyfile(HERE / "workloads.py", output)
        console.print(f"wrote {output}: run it once per mode, e.g. `mpirun -np 4 python3 {output} --mode device -o runs/`")

    @validate.command("run", context_settings={"ignore_unknown_options": True})
    @click.option("--mode", type=click.Choice(["hostcopy", "device", "both"]), default="both", show_default=True)
    @click.option("--np", "np_", type=click.IntRange(1), default=2, show_default=True)
    @click.option("-o", "--outdir", default="validate-runs", show_default=True)
    @click.option("--mpirun", default="mpirun", show_default=True)
    @click.option("--mpirun-args", default="", help="extra launcher arguments, one string")
    @click.argument("script_args", nargs=-1, type=click.UNPROCESSED)
    def validate_run(mode, np_, outdir, mpirun, mpirun_args, script_args):
        """Run the workloads under mpirun here, one job per mode; SCRIPT_ARGS go to the script
        (--only jacobi,matmul, --host-only, --scale small)."""
        for m in (["hostcopy", "device"] if mode == "both" else [mode]):
            rc = _mpirun(np_, HERE / "workloads.py", ["--mode", m, "-o", outdir, *script_args], mpirun, mpirun_args)
            if rc:
                _fail(f"the {m} job failed (exit {rc})", rc)

    @validate.command("compare")
    @click.argument("runs", nargs=-1, required=True, type=click.Path(exists=True))
    @click.option("--machine", "-m", required=True, help="preset or machine file")
    @click.option("--traced", type=click.Path(exists=True, file_okay=False), default=None,
                  help="folder of the tracer's archives (<mode>/traces.otf2 + *-traced.json): compare those too")
    @click.option("--no-conversion", is_flag=True, help="skip the staged-to-device conversion done outside the core")
    @click.option("--json", "json_out", type=click.Path(dir_okay=False), default=None)
    @click.option("--markdown", "md_out", type=click.Path(dir_okay=False), default=None)
    def validate_compare(runs, machine, traced, no_conversion, json_out, md_out):
        """Predicted vs measured communication and run time of the recorded RUNS (files or folders),
        each trace in its own mode and in the other one."""
        from .report import VALID_HEADER, markdown_table, rich_table, valid_rows
        from .validate import compare, compare_traced, load_runs, traced_pairs
        try:
            rs = load_runs(runs)
        except ValueError as e:
            _fail(str(e))
        rows = compare(rs, machine, conversion=not no_conversion)
        console.print(rich_table(f"{machine}: predicted vs measured", VALID_HEADER, valid_rows(rows)))
        trows = []
        if traced:
            trows = compare_traced(traced_pairs(traced), machine)
            console.print(rich_table("from the tracer's OTF2 archives (run time)",
                                     ["workload", "trace", "predicted", "measured (ms)", "tracer trace (ms)", "error",
                                      "self-recorded (ms)", "error"],
                                     traced_rows(trows)))
        if json_out:
            _write_json(json_out, {"machine": str(machine), "rows": rows, "traced": trows})
        if md_out:
            Path(md_out).write_text(markdown_table(VALID_HEADER, valid_rows(rows)) + "\n")


def traced_rows(rows: list[dict]) -> list[list[str]]:
    from .report import _ms, _pct
    return [[r["workload"], r["trace"], r["predicted_mode"], _ms(r.get("measured_total_s")), _ms(r["predicted_total_s"]),
             _pct(r.get("error_total")), _ms(r.get("self_recorded_total_s")), _pct(r.get("self_recorded_error_total"))]
            for r in rows]

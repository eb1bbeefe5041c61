"""Every failure of a `g2gsim` command is one line on stderr, never a traceback.

``SafeGroup`` is the class of the `g2gsim` click group and of its subgroups; ``SafeCommand`` the
class of its commands. Before a command runs, its output paths are checked (``_io.check_output``:
folder exists, not an input, replacing an existing file is announced); while it runs, expected
failures (bad traces, machine files, options, unreadable or unwritable files) become
``error: <file>: <place>: <what>`` with exit code 1. Anything else is a bug: it is reported as one
``internal error`` line with exit code 70 (``G2GSIM_DEBUG=1`` shows the traceback), and
tests/test_bad_inputs.py fails on it.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import NoReturn

import click

EXIT_ERROR = 1
EXIT_INTERNAL = 70

# click.Path parameters with these names are files a command writes
OUTPUT_PARAMS = ("output", "json_out", "report", "plot", "profile_out", "timeline")


def _expected() -> tuple[type[BaseException], ...]:
    from ._io import OutputError
    from .machines import MachineError
    from .trace import TraceError
    out: list[type[BaseException]] = [TraceError, MachineError, OutputError, OSError, UnicodeError, ValueError,
                                      OverflowError, MemoryError, RecursionError]
    try:
        from .sim import SimulationError
        out.append(SimulationError)
    except ImportError:
        pass
    try:
        import pyarrow as pa
        out.append(pa.ArrowException)
    except ImportError:
        pass
    try:
        from .analysis.sweep import SweepError
        out.append(SweepError)
    except ImportError:
        pass
    return tuple(out)


def one_line(e: BaseException) -> str:
    """The message of an expected failure, on one line, naming the file where the error has one."""
    if isinstance(e, OSError) and not type(e).__module__.startswith("g2gsim"):
        what = e.strerror or str(e)
        f = e.filename
        return f"{f}: {what}" if f else what
    if isinstance(e, MemoryError):
        return "out of memory (the input needs more memory than this machine has)"
    if isinstance(e, RecursionError):
        return "input nested too deeply"
    msg = str(e) or type(e).__name__
    if isinstance(e, UnicodeDecodeError):
        msg = f"not UTF-8 text at byte {e.start}"
    lines = [x.strip() for x in msg.splitlines() if x.strip()]
    return " ".join(lines) if len(lines) <= 3 else " ".join(lines[:3]) + f" (+{len(lines) - 3} more lines)"


def error_line(msg: str):
    """Prints ``error: msg`` on stderr (the message is never read as markup)."""
    from rich.console import Console
    from rich.markup import escape
    Console(stderr=True, emoji=False).print(f"[bold red]error:[/] {escape(msg)}", highlight=False, markup=True, soft_wrap=True)


def fail(msg: str, code: int = EXIT_ERROR) -> NoReturn:
    error_line(msg)
    sys.exit(code)


def notice(msg: str):
    from rich.console import Console
    from rich.markup import escape
    Console(stderr=True, emoji=False).print(f"[yellow]notice:[/] {escape(msg)}", highlight=False, markup=True, soft_wrap=True)


def _guard(fn):
    try:
        return fn()
    except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort, SystemExit):
        raise
    except KeyboardInterrupt:
        fail("interrupted", 130)
    except _expected() as e:
        if os.environ.get("G2GSIM_DEBUG"):
            raise
        fail(one_line(e))
    except Exception as e:  # noqa: BLE001 - the last resort: a bug, said in one line
        if os.environ.get("G2GSIM_DEBUG"):
            raise
        fail(f"internal error: {type(e).__name__}: {one_line(e)} (a bug in g2gsim; G2GSIM_DEBUG=1 shows where)",
             EXIT_INTERNAL)


def check_outputs(cmd: click.Command, ctx: click.Context) -> None:
    """Checks every output file parameter of ``cmd`` against the inputs before the command runs."""
    from ._io import check_output
    outs, ins = [], []
    for p in cmd.params:
        v = ctx.params.get(p.name)
        if v is None or isinstance(v, bool):
            continue
        vals = v if isinstance(v, (list, tuple)) else [v]
        if isinstance(p.type, click.Path) and p.name in OUTPUT_PARAMS and p.type.file_okay:
            outs += [(p, x) for x in vals]
        else:
            for x in vals:
                if isinstance(x, (str, Path)) and str(x) and Path(x).exists():
                    ins.append(Path(x))
    seen: dict[Path, str] = {}
    for p, x in outs:
        opt = max(p.opts, key=len) if getattr(p, "opts", None) else p.name
        path = check_output(x, ins, what=opt, force=True, notice=notice)
        key = path.resolve()
        if key in seen:
            raise click.UsageError(f"{opt} and {seen[key]} name the same file {x}")
        seen[key] = opt


class SafeCommand(click.Command):
    def invoke(self, ctx: click.Context):
        def run():
            check_outputs(self, ctx)
            return click.Command.invoke(self, ctx)
        return _guard(run)


class SafeGroup(click.Group):
    command_class = SafeCommand
    group_class = type  # subgroups are SafeGroups too (click: type means "this class")

    def invoke(self, ctx: click.Context):
        return _guard(lambda: click.Group.invoke(self, ctx))

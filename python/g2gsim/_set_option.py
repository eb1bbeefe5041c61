"""``--set KEY=VALUE`` on every command that takes a machine, added in one place.

``add_set_options(main)`` walks the command tree once all commands are registered; each command with
a machine parameter (``--machine``, ``--base``, or the NAME_OR_FILE / MACHINE argument of
``machine show`` / ``validate`` / ``calibrate check``) gets a repeatable ``--set`` option, and its
callback receives ``machines.with_sets(machine, sets)`` (a MachineSpec, validated) instead of the
bare name.  New commands get ``--set`` without code of their own."""
from __future__ import annotations

import functools

import click

from . import machines

MACHINE_PARAMS = ("machine", "name_or_file", "base")
HELP = ("set a machine-file key, units as in machine files: --set node.nic.bw=50GB/s "
        "--set mpi.eager_limit=64KiB (repeatable; `g2gsim machine show NAME --set ...` shows the result)")


def _walk(cmd: click.Command):
    yield cmd
    if isinstance(cmd, click.Group):
        for sub in cmd.commands.values():
            yield from _walk(sub)


def add_set_options(group: click.Group) -> None:
    for cmd in _walk(group):
        names = [p.name for p in cmd.params]
        target = next((n for n in MACHINE_PARAMS if n in names), None)
        if target is None or "machine_sets" in names or cmd.callback is None:
            continue
        cmd.params.append(click.Option(["--set", "machine_sets"], multiple=True, metavar="KEY=VALUE",
                                       help=HELP))
        cmd.callback = _wrap(cmd.callback, target)


def _wrap(callback, target: str):
    @functools.wraps(callback)
    def run(*args, machine_sets=(), **kw):
        if machine_sets:
            if kw.get(target) is None:
                raise click.UsageError(f"--set needs a machine (--{target.replace('_', '-')})")
            try:
                kw[target] = machines.with_sets(kw[target], machine_sets)
            except machines.MachineError as e:
                raise click.ClickException(str(e)) from None
        return callback(*args, **kw)
    return run

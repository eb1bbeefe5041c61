"""Run an MPI program under g2gsim's PMPI tracer (``tracer/build/libg2gtrace.so``).

``record(out_dir, ["mpirun", "-np", "4", "./app"])`` preloads the tracer into the MPI processes,
which write an OTF2 archive (Score-P record kinds plus ``g2g:*`` attributes, see
``tracer/README.md``) to ``out_dir`` and returns its anchor file ``out_dir/traces.otf2``.

How the library reaches the ranks depends on the launcher (found with ``<launcher> --version``):

* Open MPI ``mpirun``/``mpiexec``: ``-x LD_PRELOAD=<lib> -x G2G_TRACE_DIR`` (and ``-x`` for every
  other ``G2G_*`` variable), so that ``mpirun`` itself is not preloaded;
* MPICH / Intel MPI (Hydra) ``mpiexec``/``mpirun``: ``-genv LD_PRELOAD <lib> -genv G2G_TRACE_DIR <dir>``;
* anything else (``srun``, a singleton ``./app``, a script): ``LD_PRELOAD`` in the environment.
"""
from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import time
from pathlib import Path

LIB_NAME = "libg2gtrace.so"
ANCHOR = "traces.otf2"
_LAUNCHERS = ("mpirun", "mpiexec", "orterun", "prterun")
_BUILD_HINT = ("build it with `make -C tracer` in the g2gsim checkout (needs mpicc from libopenmpi-dev "
               "or MPICH, and the OTF2 library: Debian/Ubuntu libopen-trace-format2-dev), or point "
               "G2G_TRACER_LIB at a built libg2gtrace.so")


def find_library() -> Path:
    """Path of the built tracer: ``$G2G_TRACER_LIB`` or ``<checkout>/tracer/build/libg2gtrace.so``.

    Raises ``FileNotFoundError`` saying how to build it when there is none.
    """
    env = os.environ.get("G2G_TRACER_LIB")
    if env:
        p = Path(env).expanduser().resolve()
        if p.is_file():
            return p
        raise FileNotFoundError(f"G2G_TRACER_LIB={env} does not exist; {_BUILD_HINT}")
    here = Path(__file__).resolve()
    candidates = [here.parents[2] / "tracer" / "build" / LIB_NAME,   # source checkout
                  here.parent / LIB_NAME]                            # installed next to this module
    for p in candidates:
        if p.is_file():
            return p
    raise FileNotFoundError(f"the g2gsim tracer ({LIB_NAME}) is not built (looked in "
                            f"{', '.join(str(c) for c in candidates)}); {_BUILD_HINT}")


def launcher_kind(launcher: str) -> str:
    """``"openmpi"``, ``"mpich"`` (Hydra, also Intel MPI) or ``"other"`` from ``launcher --version``."""
    exe = shutil.which(launcher) or launcher
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return "other"
    text = (out.stdout or "") + (out.stderr or "")
    if "Open MPI" in text or "OpenRTE" in text or "open-mpi.org" in text:
        return "openmpi"
    if "HYDRA" in text or "MPICH" in text or "Intel(R) MPI" in text:
        return "mpich"
    return "other"


def _is_launcher(arg: str) -> bool:
    name = os.path.basename(arg)
    return any(name == l or name.startswith(l + ".") or name.startswith(l + "-") for l in _LAUNCHERS)


def _preload(lib: Path, existing: str | None) -> str:
    return f"{lib}:{existing}" if existing else str(lib)


def traced_command(command: list[str], lib: Path, out_dir: Path, env: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """The command line and environment that run ``command`` under the tracer (no side effects)."""
    env = dict(env)
    env["G2G_TRACE_DIR"] = str(out_dir)
    preload = _preload(lib, env.get("LD_PRELOAD"))
    launcher = command[0]
    kind = launcher_kind(launcher) if _is_launcher(launcher) else "other"
    if kind == "openmpi":
        extra = ["-x", f"LD_PRELOAD={preload}"]
        for k in sorted(env):
            if k.startswith("G2G_"):
                extra += ["-x", k]
        return [launcher, *extra, *command[1:]], env
    if kind == "mpich":
        extra = ["-genv", "LD_PRELOAD", preload]
        for k in sorted(env):
            if k.startswith("G2G_"):
                extra += ["-genv", k, env[k]]
        return [launcher, *extra, *command[1:]], env
    env["LD_PRELOAD"] = preload
    return list(command), env


def record(out_dir, command: list[str], env=None) -> Path:
    """Run ``command`` (e.g. ``["mpirun", "-np", "4", "./app"]``) under the tracer.

    ``out_dir``: directory of the OTF2 archive (created; a previous g2gtrace archive there is
    replaced).  ``env``: extra environment variables for the run, on top of ``os.environ``
    (e.g. ``{"G2G_LIBCUDA": ...}``).  Returns the anchor file ``out_dir/traces.otf2``.

    Raises ``FileNotFoundError`` when the tracer is not built or the launcher does not exist,
    ``ValueError`` for an empty command and ``RuntimeError`` when the run fails or writes no trace.
    """
    command = [str(c) for c in command]
    if not command:
        raise ValueError("record: empty command (expected e.g. ['mpirun', '-np', '4', './app'])")
    lib = find_library()
    if not (shutil.which(command[0]) or Path(command[0]).is_file()):
        raise FileNotFoundError(f"record: command not found: {command[0]}")
    out = Path(out_dir).expanduser().resolve()
    out.mkdir(parents=True, exist_ok=True)
    base_env = dict(os.environ)
    if env:
        base_env.update({str(k): str(v) for k, v in env.items()})
    cmd, run_env = traced_command(command, lib, out, base_env)
    anchor = out / ANCHOR
    start = time.time()
    try:
        proc = subprocess.run(cmd, env=run_env)
    except OSError as e:
        raise RuntimeError(f"record: cannot run {shlex.join(cmd)}: {e}") from None
    if proc.returncode != 0:
        raise RuntimeError(f"record: the traced command failed with exit status {proc.returncode}: "
                           f"{shlex.join(cmd)}")
    if not anchor.is_file() or anchor.stat().st_mtime < start - 1:
        raise RuntimeError(f"record: {shlex.join(cmd)} ran but wrote no trace to {out}: the program "
                           f"must call MPI_Init and MPI_Finalize of a dynamically linked MPI, and the "
                           f"launcher must pass LD_PRELOAD to the ranks (G2G_TRACE=0 disables tracing)")
    return anchor

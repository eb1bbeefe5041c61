"""Run an MPI program under g2gsim's PMPI tracer (``libg2gtrace.so``, built on first use).

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

import hashlib
import os
import shlex
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

LIB_NAME = "libg2gtrace.so"
ANCHOR = "traces.otf2"
_LAUNCHERS = ("mpirun", "mpiexec", "orterun", "prterun")
_SET_LIB = "or point G2G_TRACER_LIB at a built libg2gtrace.so"


def find_library(build: bool = True) -> Path:
    """Path of the tracer library, in this order: ``$G2G_TRACER_LIB``; a source checkout's
    ``tracer/build/libg2gtrace.so`` (``make -C tracer``); one installed next to this module; the one
    built before into the user cache (``~/.cache/g2gsim/tracer/<sources hash>/``, ``$G2GSIM_CACHE``);
    else (``build=True``) it is built there now from the C sources that ship with g2gsim.

    Raises ``FileNotFoundError`` naming every missing build requirement (an MPI compiler wrapper,
    the OTF2 headers, make) when it cannot be built.
    """
    env = os.environ.get("G2G_TRACER_LIB")
    if env:
        p = Path(env).expanduser().resolve()
        if p.is_file():
            return p
        raise FileNotFoundError(f"G2G_TRACER_LIB={env} does not exist; unset it to build the tracer "
                                f"into the user cache")
    for p in prebuilt_candidates():
        if p.is_file():
            return p
    src = tracer_sources()
    cached = _cache_dir(src) / LIB_NAME
    if cached.is_file():
        return cached
    if not build:
        raise FileNotFoundError(f"the g2gsim tracer is not built ({cached} does not exist)")
    return build_tracer(src, cached.parent)


def prebuilt_candidates() -> list[Path]:
    """Where a tracer built outside the cache is looked for: a source checkout's
    ``tracer/build/`` (``make -C tracer``), then next to this module."""
    here = Path(__file__).resolve()
    return [here.parents[2] / "tracer" / "build" / LIB_NAME, here.parent / LIB_NAME]


def tracer_sources() -> Path:
    """The tracer's sources (a directory with ``Makefile`` and ``src/``): a checkout's ``tracer/``,
    else the copy installed in the package (``g2gsim/_tracer``)."""
    here = Path(__file__).resolve()
    for d in (here.parents[2] / "tracer", here.parent / "_tracer"):
        if (d / "Makefile").is_file() and (d / "src").is_dir():
            return d
    raise FileNotFoundError(f"the tracer's C sources are not installed (no {here.parent / '_tracer'}): "
                            f"reinstall g2gsim from a wheel or sdist made by `make wheel`, {_SET_LIB}")


def _cache_dir(src: Path) -> Path:
    h = hashlib.sha256()
    for f in sorted([src / "Makefile", *(src / "src").glob("*")]):
        if f.is_file():
            h.update(f.name.encode() + b"\0" + f.read_bytes())
    h.update(os.environ.get("MPICC", "mpicc").encode())
    root = Path(os.environ.get("G2GSIM_CACHE", Path.home() / ".cache" / "g2gsim"))
    return root / "tracer" / h.hexdigest()[:16]


def build_requirements() -> tuple[dict[str, str], list[str]]:
    """What building the tracer needs, found or not: (make variables, missing pieces, one line each)."""
    missing = []
    mpicc = os.environ.get("MPICC", "mpicc")
    have_cc = shutil.which(mpicc)
    if not have_cc:
        missing.append(f"an MPI compiler wrapper: {mpicc} not found (Debian/Ubuntu: apt install "
                       f"libopenmpi-dev openmpi-bin, or MPICH; or set MPICC)")
    if not shutil.which("make"):
        missing.append("make (Debian/Ubuntu: apt install make)")
    cflags = _run_out(["pkg-config", "--cflags", "otf2"]) or _run_out(["otf2-config", "--cflags"])
    libs = _run_out(["pkg-config", "--libs", "otf2"]) or _run_out(["otf2-config", "--ldflags", "--libs"])
    if cflags is None and libs is None:
        cflags, libs = "", ("-lopen-trace-format2" if Path("/usr/include/otf2/otf2.h").is_file() else "-lotf2")
    if have_cc:
        probe = subprocess.run([mpicc, *shlex.split(cflags or ""), "-E", "-x", "c", "-"], input="#include <otf2/otf2.h>\n",
                               capture_output=True, text=True)
        if probe.returncode != 0:
            missing.append("the OTF2 library headers (otf2/otf2.h) (Debian/Ubuntu: apt install "
                           "libopen-trace-format2-dev; elsewhere install OTF2 and put otf2-config on PATH)")
    return {"MPICC": mpicc, "OTF2_CFLAGS": cflags or "", "OTF2_LIBS": libs or ""}, missing


def _run_out(cmd: list[str]) -> str | None:
    if not shutil.which(cmd[0]):
        return None
    p = subprocess.run(cmd, capture_output=True, text=True)
    return p.stdout.strip() if p.returncode == 0 else None


def build_tracer(src: Path | None = None, dest: Path | None = None) -> Path:
    """Builds ``libg2gtrace.so`` from the tracer sources into ``dest`` (default: the user cache) and
    returns its path.  Raises ``FileNotFoundError`` naming each missing requirement, ``RuntimeError``
    with the compiler's last lines when the build fails."""
    src = src or tracer_sources()
    dest = dest or _cache_dir(src)
    make_vars, missing = build_requirements()
    if missing:
        raise FileNotFoundError("g2gsim record builds its tracer on first use and needs "
                                + "; ".join(missing) + f"; {_SET_LIB}")
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest.parent) as tmp:
        work = Path(tmp) / "tracer"
        shutil.copytree(src, work, ignore=shutil.ignore_patterns("build", "test", "bench"))
        p = subprocess.run(["make", "-C", str(work), *(f"{k}={v}" for k, v in make_vars.items())],
                           capture_output=True, text=True)
        lib = work / "build" / LIB_NAME
        if p.returncode != 0 or not lib.is_file():
            tail = " | ".join((p.stdout + p.stderr).strip().splitlines()[-3:])
            raise RuntimeError(f"building the g2gsim tracer failed (make -C {src}): {tail}")
        staged = Path(tmp) / "out"
        staged.mkdir()
        shutil.copy2(lib, staged / LIB_NAME)
        if dest.exists():            # built meanwhile by another process
            return dest / LIB_NAME
        staged.replace(dest)
    return dest / LIB_NAME


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

    Raises ``FileNotFoundError`` when the tracer cannot be built (naming what is missing) or the
    launcher does not exist,
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

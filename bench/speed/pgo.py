#!/usr/bin/env python3
"""Profile-guided build of the core (``make pgo``): the release build that speed figures quote.

The replay is branchy code whose hot paths (event dispatch, matching, the sharing solver, the page
decoder) the compiler cannot rank on its own; a profile of typical runs lets it lay them out and inline
them by use.  Measured on the 1,024-rank halo exchange: about 10 % less wall time (``docs/scaling.md``).
The same practice as CPython's ``--enable-optimizations`` or pydantic-core's release wheels.

Steps, all under ``target/pgo/`` (the ordinary ``target/release`` build is left alone):

1. build ``g2gsim-core`` instrumented (``-Cprofile-generate``) into ``target/pgo/gen``;
2. generate a training set (synthetic halo / allreduce / all-to-all traces, a few hundred ranks, plus
   the Jacobi and matmul proxies) and run it on three machines (exact max-min and bottleneck sharing,
   NVLink and PCIe nodes) in the three modes.  The 1,024-rank halo that the benchmark times is *not*
   in the training set;
3. merge the profiles with the ``llvm-profdata`` of the Rust toolchain (``rustup component add
   llvm-tools``: its LLVM must match rustc's);
4. build ``g2gsim-core`` with the profile into ``target/pgo/use`` (``engine.build`` in its reports
   says ``pgo``).  With ``--python`` the Python module too: it is a separate build (its dependency
   graph differs, and so do the symbol names a profile is matched by), so it gets its own
   instrumented build and training runs through ``g2gsim.simulate`` first, then the editable
   install with its profile;
5. check that the PGO build simulates exactly what the plain build (``target/release``, built if
   needed) does: ``same_results.py``, 72 runs.

    make pgo                                   # = python3 bench/speed/pgo.py --python
    python3 bench/speed/run.py --core target/pgo/g2gsim-core -w halo -s 1024 --reps 5 --sharing bottleneck
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python"))

OUT = REPO / "target" / "pgo"
# (generator, ranks, parameters): the shapes the replay meets, small enough to run in seconds
TRAINING = [
    ("halo3d", 256, {"iterations": 5}),
    ("halo3d", 64, {"iterations": 3, "msg_bytes": 4096}),
    ("allreduce", 256, {"iterations": 3}),
    ("alltoall", 64, {"iterations": 2}),
    ("jacobi2d", 16, {}),
    ("matmul", 8, {}),
]
MACHINES = ["lassen", "lassen+bottleneck", "dgx-h100"]
MODES = ["as-traced", "hostcopy", "gpudirect"]


class PgoError(RuntimeError):
    pass


def log(msg: str) -> None:
    print(f"[pgo] {msg}", flush=True)


def run(argv: list[str], env: dict | None = None) -> str:
    p = subprocess.run(argv, env=env, text=True, capture_output=True)
    if p.returncode != 0:
        tail = (p.stderr or p.stdout)[-3000:]
        raise PgoError(f"`{' '.join(map(str, argv))}` failed (exit {p.returncode}):\n{tail}")
    return p.stdout


def rustc_llvm_major() -> int:
    out = run(["rustc", "-vV"])
    for line in out.splitlines():
        if line.startswith("LLVM version:"):
            return int(line.split(":")[1].strip().split(".")[0])
    raise PgoError("`rustc -vV` does not say its LLVM version")


def find_profdata(explicit: str | None = None, install: bool = True) -> Path:
    """The llvm-profdata whose LLVM matches rustc's (a profile from LLVM N is unreadable by N-1)."""
    want = rustc_llvm_major()
    cands: list[Path] = []
    if explicit:
        cands.append(Path(explicit))
    if os.environ.get("LLVM_PROFDATA"):
        cands.append(Path(os.environ["LLVM_PROFDATA"]))
    sysroot = Path(run(["rustc", "--print", "sysroot"]).strip())
    host = next(l.split(":", 1)[1].strip() for l in run(["rustc", "-vV"]).splitlines() if l.startswith("host:"))
    tool = sysroot / "lib" / "rustlib" / host / "bin" / "llvm-profdata"
    if not tool.exists() and install and shutil.which("rustup"):
        log("llvm-profdata not in the toolchain: rustup component add llvm-tools")
        subprocess.run(["rustup", "component", "add", "llvm-tools"], check=False)
    cands.append(tool)
    for v in (want, None):
        w = shutil.which(f"llvm-profdata-{v}" if v else "llvm-profdata")
        if w:
            cands.append(Path(w))
    seen = []
    for c in cands:
        if not c.exists():
            continue
        out = subprocess.run([str(c), "--version"], text=True, capture_output=True).stdout
        major = next((int(t.split(".")[0]) for t in out.replace("version", " ").split() if t[:1].isdigit() and "." in t), None)
        seen.append(f"{c} (LLVM {major})")
        if major == want:
            return c
    raise PgoError(f"no llvm-profdata for LLVM {want} (rustc's); found: {', '.join(seen) or 'none'}. "
                   "Install it with `rustup component add llvm-tools`, or name one with --profdata / LLVM_PROFDATA.")


def cargo_core(target_dir: Path, rustflags: str, env_extra: dict | None = None) -> Path:
    env = dict(os.environ, CARGO_TARGET_DIR=str(target_dir), RUSTFLAGS=rustflags, **(env_extra or {}))
    run(["cargo", "build", "--release", "-p", "g2g-mpi", "--bin", "g2gsim-core"], env=env)
    return target_dir / "release" / "g2gsim-core"


def training_inputs(work: Path) -> tuple[list[Path], list[Path]]:
    from g2gsim import generate as g
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from same_results import machine_file  # the presets, and "<preset>+bottleneck"
    work.mkdir(parents=True, exist_ok=True)
    traces = []
    for gen, ranks, params in TRAINING:
        name = f"{gen}-{ranks}-" + "-".join(f"{k}{v}" for k, v in sorted(params.items()))
        path = work / f"{name}.g2g.parquet"
        if not path.exists():
            g.generate_to_file(gen, ranks, str(path), **params)
        traces.append(path)
    machines = [machine_file(work, m) for m in MACHINES]
    return traces, machines


def train(core: Path, traces: list[Path], machines: list[Path], profile_dir: Path) -> int:
    env = dict(os.environ, LLVM_PROFILE_FILE=str(profile_dir / "g2gsim-%p-%m.profraw"))
    n = 0
    for t in traces:
        for m in machines:
            for mode in MODES:
                p = subprocess.run([str(core), str(t), str(m), "--mode", mode], env=env, text=True, capture_output=True)
                if p.returncode != 0:
                    raise PgoError(f"training run failed: {t.name} on {m.name}, {mode}:\n{p.stderr[-2000:]}")
                n += 1
    return n


PY_TRAIN = r"""
import sys
sys.path.insert(0, sys.argv[1])
import g2gsim
for t in sys.argv[3].split(","):
    for m in sys.argv[4].split(","):
        for mode in sys.argv[5].split(","):
            g2gsim.simulate(t, m, mode=mode)
"""


def pip_install(flags: str, target_dir: Path, extra: dict | None = None) -> None:
    env = dict(os.environ, CARGO_TARGET_DIR=str(target_dir), RUSTFLAGS=flags, **(extra or {}))
    run([sys.executable, "-m", "pip", "install", "-q", "--no-build-isolation", "-e", str(REPO)], env=env)


def python_profile(profdata: Path, traces: list[Path], machines: list[Path], cpu: str) -> Path:
    """The Python module's own profile: an instrumented editable install, the training set through
    ``g2gsim.simulate``, merged."""
    raw = OUT / "profraw-py"
    shutil.rmtree(raw, ignore_errors=True)
    raw.mkdir(parents=True)
    pip_install(f"-Cprofile-generate={raw}{cpu}", OUT / "pygen")
    env = dict(os.environ, LLVM_PROFILE_FILE=str(raw / "g2gsim-py-%p-%m.profraw"))
    p = subprocess.run([sys.executable, "-c", PY_TRAIN, str(REPO / "python"), "-", ",".join(map(str, traces)),
                        ",".join(map(str, machines)), ",".join(MODES)], env=env, text=True, capture_output=True)
    if p.returncode != 0:
        raise PgoError(f"training through the Python module failed:\n{p.stderr[-2000:]}")
    profile = OUT / "g2gsim-py.profdata"
    run([str(profdata), "merge", "-o", str(profile), str(raw)])
    return profile


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--python", action="store_true", help="also build the Python module with the profile (pip install -e .)")
    ap.add_argument("--profdata", help="llvm-profdata to use (default: the Rust toolchain's)")
    ap.add_argument("--no-check", action="store_true", help="skip the same-results check against target/release")
    ap.add_argument("--target-cpu", default=None, metavar="CPU",
                    help="rustc -Ctarget-cpu for both builds, e.g. native (only for this machine: the binary may "
                         "not run on an older CPU) or x86-64-v3; default: the portable baseline")
    a = ap.parse_args(argv)
    t0 = time.time()
    try:
        profdata = find_profdata(a.profdata)
        log(f"llvm-profdata: {profdata}")
        raw = OUT / "profraw"
        shutil.rmtree(raw, ignore_errors=True)
        raw.mkdir(parents=True)
        log("1/4 instrumented build (target/pgo/gen)")
        cpu = f" -Ctarget-cpu={a.target_cpu}" if a.target_cpu else ""
        gen_core = cargo_core(OUT / "gen", f"-Cprofile-generate={raw}{cpu}")
        log("2/4 training runs")
        traces, machines = training_inputs(OUT / "train")
        n = train(gen_core, traces, machines, raw)
        log(f"    {n} runs: {len(traces)} traces x {len(machines)} machines x {len(MODES)} modes")
        profile = OUT / "g2gsim.profdata"
        run([str(profdata), "merge", "-o", str(profile), str(raw)])
        log(f"3/4 profile: {profile} ({profile.stat().st_size // 1024} KiB)")
        flags = f"-Cprofile-use={profile}{cpu}"
        extra = {"G2GSIM_PGO_PROFILE": str(profile)}
        log("4/4 optimised build (target/pgo/use)")
        core = cargo_core(OUT / "use", flags, extra)
        final = OUT / "g2gsim-core"
        shutil.copy2(core, final)
        log(f"    {final}")
        if a.python:
            log("python: instrumented module (target/pgo/pygen), training through g2gsim.simulate")
            py_profile = python_profile(profdata, traces, machines, cpu)
            pip_install(f"-Cprofile-use={py_profile}{cpu}", OUT / "pyuse", {"G2GSIM_PGO_PROFILE": str(py_profile)})
            log(f"    Python module g2gsim._core rebuilt with its profile ({py_profile.name})")
        if not a.no_check:
            log("check: plain build (target/release) against the PGO build")
            env = {k: v for k, v in os.environ.items() if k not in ("RUSTFLAGS", "CARGO_TARGET_DIR")}
            run(["cargo", "build", "--release", "-p", "g2g-mpi", "--bin", "g2gsim-core"], env=env)
            plain = REPO / "target" / "release" / "g2gsim-core"
            p = subprocess.run([sys.executable, str(Path(__file__).resolve().parent / "same_results.py"), str(plain), str(final)],
                               text=True, capture_output=True)
            last = (p.stdout.strip().splitlines() or ["?"])[-1]
            if p.returncode != 0:
                raise PgoError(f"the PGO build does not simulate what {plain} does:\n{p.stdout[-3000:]}{p.stderr[-1000:]}")
            log(f"    same results as {plain.relative_to(REPO)}: {last}")
    except PgoError as e:
        print(f"pgo: error: {e}", file=sys.stderr)
        return 1
    log(f"done in {time.time() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Golden results: every ``tests/golden/<case>/case.toml`` run through the user's entry point, its
report compared with ``expected.<mode>.json`` next to it (README.md in this folder).

    python3 tests/golden/golden.py              # check every case, print diffs (exit 1 on any)
    python3 tests/golden/golden.py --update     # rewrite the expected files (`make golden-update`)
    python3 tests/golden/golden.py CASE ...     # only these cases

``tests/test_golden.py`` runs the same checks under pytest; it never writes expected files.

A case (``case.toml``)::

    description = "what the case pins down"
    [trace]                    # one of: a generator call, or a trace file of tests/data
    generator = "halo3d"       #   g2gsim.generate.generate_to_file(generator, ranks, **params)
    ranks = 64
    params = { iterations = 3, msg_bytes = 65536 }
    # archive = "tests/data/x/x.tar.gz"   a .tar.gz unpacked once, then
    # path = "overlap/traces.otf2"         the trace inside it (or, without archive, a repo path)
    # assume_buffers = "traced"
    [machine]
    preset = "lassen"          # a preset of python/g2gsim/presets
    set = { "network.sharing" = "bottleneck" }   # optional: dotted keys replaced in the preset
                                                 # (a table value replaces the whole table)
    [run]
    entry = "api"              # "api": g2gsim.simulate(trace, machine, mode=..., **options)
                               # "cli": `g2gsim simulate TRACE --json F -m MACHINE --mode M *args`
    modes = ["as-traced", "hostcopy", "gpudirect"]     # one expected.<mode>.json each
    options = { gpus_per_node = 2 }                    # api: keyword arguments of simulate
    args = ["--mapping", "{case}/mapping.txt"]         # cli: extra arguments ({case}: this folder)

What is compared: the JSON report without the fields that depend on the computer or the paths
(``IGNORED``).  Integers and strings must be equal; floats too, exactly: every simulated time is an
integer number of nanoseconds in the engine, turned into seconds and summed in a fixed order, so a
build that simulates the same thing gives the same bits (IEEE arithmetic; Rust does not contract
to FMA).  A refactor that changes the order of a sum shows as a difference in the last digit: it is
reviewed and refreshed like any other change, never hidden by a tolerance.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import tarfile
import tempfile
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parent
if str(ROOT / "python") not in sys.path:
    sys.path.insert(0, str(ROOT / "python"))

# report fields that depend on the computer (engine speed, build) or on paths, not on the model;
# the engine's own counters (events, flow solves, peak flows) are implementation, not results
IGNORED = {
    "trace": None,
    "machine_info": {"label"},
    "engine": {"wall_s", "read_s", "events_per_s", "ops_per_s", "build", "events", "flow_solves",
               "flow_solves_component", "flow_solve_rounds", "flow_rerates", "flow_rerates_incremental",
               "flow_rerate_bottlenecks", "flow_bottleneck_moves", "max_min_solver", "solver_switches_ns",
               "handed_off_flows", "peak_flows"},
}
MODES = ("as-traced", "hostcopy", "gpudirect")


def cases() -> list[Path]:
    return sorted(p.parent for p in GOLDEN.glob("*/case.toml"))


def load(case: Path) -> dict:
    spec = tomllib.loads((case / "case.toml").read_text())
    run = spec.setdefault("run", {})
    modes = run.setdefault("modes", ["as-traced"])
    bad = [m for m in modes if m not in MODES]
    if bad:
        raise ValueError(f"{case / 'case.toml'}: unknown mode(s) {bad}")
    if run.setdefault("entry", "api") not in ("api", "cli"):
        raise ValueError(f"{case / 'case.toml'}: run.entry must be api or cli")
    return spec


def expected_file(case: Path, mode: str) -> Path:
    return case / f"expected.{mode}.json"


# ------------------------------------------------------------------------------- inputs
class Inputs:
    """Traces and machine files of the cases, built once per work folder."""

    def __init__(self, work: Path):
        self.work = work
        self.work.mkdir(parents=True, exist_ok=True)
        import g2gsim.sim
        g2gsim.sim.CACHE_DIR = work / "cache"     # OTF2 imports: not into the user's cache

    def trace(self, spec: dict) -> Path:
        t = spec["trace"]
        if "generator" in t:
            from g2gsim.generate import generate_to_file
            params = t.get("params", {})
            name = f"{t['generator']}-{t['ranks']}-" + "-".join(
                f"{k}{v}" for k, v in sorted(params.items()))
            out = self.work / "traces" / f"{name}.g2g.parquet"
            if not out.exists():
                out.parent.mkdir(parents=True, exist_ok=True)
                generate_to_file(t["generator"], t["ranks"], out, **params)
            return out
        if "archive" in t:
            arc = ROOT / t["archive"]
            dest = self.work / "archives" / arc.name.removesuffix(".tar.gz")
            if not dest.exists():
                tmp = dest.with_name(dest.name + ".tmp")
                tmp.mkdir(parents=True, exist_ok=True)
                with tarfile.open(arc) as tf:
                    tf.extractall(tmp, filter="data")
                tmp.rename(dest)
            return dest / t["path"]
        return ROOT / t["path"]

    def machine(self, spec: dict) -> str:
        m = spec["machine"]
        if not m.get("set"):
            return m["preset"]
        import tomli_w

        from g2gsim import machines
        doc = tomllib.loads(machines.presets()[m["preset"]].read_text())
        for key, value in sorted(m["set"].items()):
            *parents, leaf = key.split(".")
            d = doc
            for p in parents:
                d = d.setdefault(p, {})
            d[leaf] = value
        tag = "-".join(f"{k}={v}" for k, v in sorted(m["set"].items()))
        out = self.work / "machines" / f"{m['preset']}+{_safe(tag)}.toml"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(tomli_w.dumps(doc))
        return str(out)


def _safe(s: str) -> str:
    return "".join(c if c.isalnum() or c in "-_=." else "_" for c in s)


# ---------------------------------------------------------------------------------- run
def simulate(case: Path, spec: dict, mode: str, inputs: Inputs) -> dict:
    trace = inputs.trace(spec)
    machine = inputs.machine(spec)
    run = spec["run"]
    assume = spec["trace"].get("assume_buffers")
    if run["entry"] == "api":
        import g2gsim
        return g2gsim.simulate(trace, machine, mode=mode, assume_buffers=assume, **run.get("options", {}))
    from click.testing import CliRunner

    from g2gsim.cli import main
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "report.json"
        args = ["simulate", str(trace), "--json", str(out), "--machine", machine, "--mode", mode,
                "--no-progress", *(a.replace("{case}", str(case)) for a in run.get("args", []))]
        if assume:
            args += ["--assume-buffers", assume]
        r = CliRunner().invoke(main, args, catch_exceptions=False)
        if r.exit_code != 0:
            raise RuntimeError(f"g2gsim {' '.join(args)} exited {r.exit_code}: {r.output[-800:]}")
        return json.loads(out.read_text())


def normalise(report: dict) -> dict:
    out = {}
    for k, v in report.items():
        if k in IGNORED and IGNORED[k] is None:
            continue
        if k in IGNORED and isinstance(v, dict):
            v = {kk: vv for kk, vv in v.items() if kk not in IGNORED[k]}
        out[k] = v
    return out


def dumps(report: dict) -> str:
    """Diff-friendly JSON: keys sorted, one line per leaf, and an object of plain values (a rank, an
    operation, a data path) on one line of its own."""
    return _fmt(report, 0) + "\n"


def _flat(v: Any) -> bool:
    return isinstance(v, dict) and all(not isinstance(x, (dict, list)) for x in v.values())


def _fmt(v: Any, depth: int) -> str:
    pad, inner = " " * depth, " " * (depth + 1)
    if isinstance(v, dict) and v and not (_flat(v) and depth > 0):
        items = [f"{inner}{json.dumps(k)}: {_fmt(v[k], depth + 1)}" for k in sorted(v)]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(v, list) and v and any(isinstance(x, (dict, list)) for x in v):
        return "[\n" + ",\n".join(inner + _fmt(x, depth + 1) for x in v) + "\n" + pad + "]"
    return json.dumps(v, sort_keys=True)


def diff(exp: Any, got: Any, path: str = "") -> list[str]:
    """Differences between the expected and the simulated report, one readable line each."""
    if isinstance(exp, dict) and isinstance(got, dict):
        out: list[str] = []
        for k in sorted(set(exp) | set(got)):
            if k not in got:
                out.append(f"{path}.{k}: expected {exp[k]!r}, missing from the report")
            elif k not in exp:
                out.append(f"{path}.{k}: new in the report ({got[k]!r}), not in the expected file")
            else:
                out += diff(exp[k], got[k], f"{path}.{k}")
        return out
    if isinstance(exp, list) and isinstance(got, list):
        out = [f"{path}: expected {len(exp)} entries, got {len(got)}"] if len(exp) != len(got) else []
        for i, (a, b) in enumerate(zip(exp, got)):
            out += diff(a, b, f"{path}[{i}]")
        return out
    if isinstance(exp, float) and isinstance(got, float) and math.isnan(exp) and math.isnan(got):
        return []
    if type(exp) is not type(got) or exp != got:
        rel = ""
        if isinstance(exp, (int, float)) and isinstance(got, (int, float)) and exp:
            rel = f" ({(got - exp) / abs(exp):+.3g} relative)"
        return [f"{path}: expected {exp!r}, got {got!r}{rel}"]
    return []


def check(case: Path, inputs: Inputs, update: bool = False) -> list[str]:
    """Runs a case in each of its modes; returns the differences (or writes the expected files)."""
    spec = load(case)
    problems = []
    for mode in spec["run"]["modes"]:
        try:
            got = normalise(simulate(case, spec, mode, inputs))
        except Exception as e:      # a case that no longer runs is a difference, not a crash
            if update:
                raise
            problems.append(f"{case.name} [{mode}]: simulation failed: {type(e).__name__}: {e}")
            continue
        f = expected_file(case, mode)
        if update:
            f.write_text(dumps(got))
            continue
        if not f.exists():
            problems.append(f"{case.name} [{mode}]: no {f.name}; run `make golden-update` and review it")
            continue
        exp = json.loads(f.read_text())
        d = diff(exp, json.loads(dumps(got)))
        problems += [f"{case.name} [{mode}] {line}" for line in d]
    if update:
        for stale in case.glob("expected.*.json"):
            if stale.name.split(".")[1] not in spec["run"]["modes"]:
                stale.unlink()
    return problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cases", nargs="*", help="case folder names (default: all)")
    ap.add_argument("--update", action="store_true", help="rewrite the expected files")
    ap.add_argument("--work", type=Path, default=None, help="folder for generated traces (default: a temporary one)")
    a = ap.parse_args(argv)
    chosen = [c for c in cases() if not a.cases or c.name in a.cases]
    unknown = set(a.cases) - {c.name for c in chosen}
    if unknown:
        print(f"unknown case(s): {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as d:
        inputs = Inputs(a.work or Path(d))
        bad = 0
        for c in chosen:
            p = check(c, inputs, update=a.update)
            if p:
                bad += 1
                print(f"DIFF {c.name}:")
                for line in p[:40]:
                    print("   ", line)
                if len(p) > 40:
                    print(f"    ... and {len(p) - 40} more")
    what = "written" if a.update else "identical"
    print(f"{len(chosen) - bad} of {len(chosen)} cases {what}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

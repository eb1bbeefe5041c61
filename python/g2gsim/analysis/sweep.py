"""Parameter sweeps on Dask: ``g2gsim sweep SWEEP.toml -o results.parquet``.

A sweep file names traces (files, or workloads to generate), machines, modes, GPUs per node and lists
of simulate() options; the cross product is simulated, one Dask task per point. Each point is keyed by a
hash of its parameters and of the trace and machine file contents. A finished point is written at once
to ``<output>.points/<key>.json``; a rerun skips the points found there or in the output Parquet, so an
interrupted sweep resumes where it stopped. The output is one Parquet file, one row per point.
See docs/analysis.md for the file format.
"""
from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import os
import sys
import time
import tomllib
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import machines
from ..vocab import MODES

SPEC_KEYS = {"machines", "machine", "modes", "gpus_per_node", "traces", "generate", "parameters", "options", "name",
             "set"}
PARAM_KEYS = {"network_scale", "gpudirect_min_bytes", "gpudirect_collectives_only", "mapping", "coll_algos",
              "staged_as_device", "scale_nic_with_gpus", "assume_buffers", "buffers", "window"}
RESULT_COLUMNS = ["total_time_s", "comm_time_s", "compute_time_s", "copy_time_s", "mpi_s", "memcpy_s", "comm_s",
                  "compute_s", "runtime_s", "comm_share", "p2p_messages", "collective_messages"]

# number of points simulated in this process (tests count recomputation with it)
POINTS_RUN = 0


class SweepError(ValueError):
    pass


@dataclass
class TraceSpec:
    label: str
    path: Path | None = None                 # a trace file
    generate: dict[str, Any] | None = None   # {"workload": ..., "ranks": ..., params}


@dataclass
class Sweep:
    path: Path
    name: str
    traces: list[TraceSpec]
    machines: list[str]
    modes: list[str]
    gpus_per_node: list[int | None]
    parameters: dict[str, list]
    options: dict[str, Any] = field(default_factory=dict)
    # [sweep.set]: machine-file key -> values (as --set KEY=VALUE); every combination on every machine
    machine_sets: dict[str, list] = field(default_factory=dict)


def _as_list(v) -> list:
    return list(v) if isinstance(v, (list, tuple)) else [v]


def _flatten_keys(d: dict, prefix: str = "") -> dict[str, list]:
    """[sweep.set] with dotted (node.nic.bw = [...]) or quoted ("node.nic.bw" = [...]) keys."""
    out: dict[str, list] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flatten_keys(v, key + "."))
        else:
            out[key] = _as_list(v)
    return out


# the type each key of a sweep file takes: checked before anything is read from it
_KEY_TYPES = {
    "name": ((str,), "a string"),
    "traces": ((str, list), "a path or a list of paths"),
    "generate": ((dict, list), "a table {workload=..., ranks=...} or a list of them"),
    "machines": ((str, list), "a machine name or file, or a list of them"),
    "machine": ((str, list), "a machine name or file, or a list of them"),
    "modes": ((str, list), "a mode or a list of modes"),
    "gpus_per_node": ((int, str, list), "an integer, \"default\" or a list of them"),
    "parameters": ((dict,), "a table of parameter = [values]"),
    "options": ((dict,), "a table of parameter = value"),
    "set": ((dict,), "a table of machine-file key = [values]"),
}


def _check_types(p: Path, spec) -> None:
    if not isinstance(spec, dict):
        raise SweepError(f"{p}: [sweep] must be a table")
    for k, (types, what) in _KEY_TYPES.items():
        if k in spec and (not isinstance(spec[k], types) or isinstance(spec[k], bool)):
            raise SweepError(f"{p}: {k}: expected {what}, found {type(spec[k]).__name__} {spec[k]!r}"[:300])
    for k in ("traces", "machines", "machine", "modes"):
        for v in _as_list(spec.get(k, [])):
            if not isinstance(v, str):
                raise SweepError(f"{p}: {k}: expected strings, found {type(v).__name__} {v!r}"[:300])
    for g in _as_list(spec.get("gpus_per_node", [])):
        if not (g in (None, "default") or (isinstance(g, int) and not isinstance(g, bool) and 1 <= g <= 1024)):
            raise SweepError(f"{p}: gpus_per_node: {g!r} is not \"default\" or an integer in 1..=1024")
    for g in _as_list(spec.get("generate", [])) if spec.get("generate") else []:
        if not isinstance(g, dict):
            raise SweepError(f"{p}: generate: expected tables {{workload=..., ranks=...}}, found {g!r}"[:300])
        for r in _as_list(g.get("ranks", [])):
            if not (isinstance(r, int) and not isinstance(r, bool) and r >= 1):
                raise SweepError(f"{p}: generate: ranks must be positive integers, found {r!r}")


def load_sweep(path: str | Path) -> Sweep:
    """Reads and checks a sweep TOML file (errors name the key)."""
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SweepError(f"{p}: no such sweep file") from None
    except IsADirectoryError:
        raise SweepError(f"{p}: is a directory, not a sweep file") from None
    except UnicodeDecodeError as e:
        raise SweepError(f"{p}: not UTF-8 text (byte {e.start})") from None
    except tomllib.TOMLDecodeError as e:
        raise SweepError(f"{p}: {e}") from None
    spec = data.get("sweep", data)
    _check_types(p, spec)
    unknown = set(spec) - SPEC_KEYS
    if unknown:
        raise SweepError(f"{p}: unknown key(s) {', '.join(sorted(unknown))}; known: {', '.join(sorted(SPEC_KEYS))}")
    traces: list[TraceSpec] = []
    for t in _as_list(spec.get("traces", [])):
        tp = Path(t)
        if not tp.is_absolute():
            tp = (p.parent / tp).resolve()
        if not tp.exists():
            raise SweepError(f"{p}: traces: {t} does not exist")
        traces.append(TraceSpec(label=tp.name.removesuffix(".g2g.parquet"), path=tp))
    gens = spec.get("generate", [])
    for g in _as_list(gens) if gens else []:
        if not isinstance(g, dict) or "workload" not in g or "ranks" not in g:
            raise SweepError(f"{p}: generate entries need workload and ranks, got {g!r}")
        traces.extend(_expand_generate(p, g))
    if not traces:
        raise SweepError(f"{p}: no traces: give traces = [...] or generate = {{workload=..., ranks=...}}")
    ms = _as_list(spec.get("machines", spec.get("machine", ["lassen"])))
    for m in ms:
        try:
            machines.resolve(m if not str(m).endswith(".toml") or Path(m).is_absolute() else str(p.parent / m))
        except machines.MachineError as e:
            raise SweepError(f"{p}: machines: {e}") from None
    ms = [str((p.parent / m).resolve()) if str(m).endswith(".toml") and not Path(m).is_absolute() else str(m) for m in ms]
    modes = _as_list(spec.get("modes", ["hostcopy", "gpudirect"]))
    for m in modes:
        if m not in MODES:
            raise SweepError(f"{p}: modes: {m!r} is not one of {', '.join(MODES)}")
    gpn = [None if g in (None, "default") else int(g) for g in _as_list(spec.get("gpus_per_node", ["default"]))]
    params = {k: _as_list(v) for k, v in (spec.get("parameters") or {}).items()}
    opts = dict(spec.get("options") or {})
    rel = (lambda m: m if m in ("linear", "round-robin") or Path(m).is_absolute() else str((p.parent / m).resolve()))
    if "mapping" in params:
        params["mapping"] = [rel(m) if isinstance(m, str) else m for m in params["mapping"]]
    if isinstance(opts.get("mapping"), str):
        opts["mapping"] = rel(opts["mapping"])
    for k in list(params) + list(opts):
        if k not in PARAM_KEYS:
            raise SweepError(f"{p}: unknown simulation parameter {k!r}; known: {', '.join(sorted(PARAM_KEYS))}")
    msets = _flatten_keys(spec.get("set") or {})
    for k, vals in msets.items():
        if not vals:
            raise SweepError(f"{p}: set: {k} has no values")
        for m in ms:
            for v in vals:
                try:
                    machines.with_sets(m, {k: v})
                except machines.MachineError as e:
                    raise SweepError(f"{p}: set: machine {m}: {e}") from None
    return Sweep(path=p, name=str(spec.get("name", p.stem)), traces=traces, machines=ms, modes=modes,
                 gpus_per_node=gpn, parameters=params, options=opts, machine_sets=msets)


def machine_variants(sw: Sweep) -> list[tuple[str, tuple[str, ...], dict[str, Any]]]:
    """(machine, its --set settings, {key: value}) for every machine x [sweep.set] combination."""
    skeys = sorted(sw.machine_sets)
    out = []
    for m in sw.machines:
        for combo in itertools.product(*(sw.machine_sets[k] for k in skeys)):
            vals = dict(zip(skeys, combo))
            out.append((m, tuple(f"{k}={machines._format_value(v)}" for k, v in vals.items()), vals))
    return out


def point_machine(point: dict):
    """The machine of a point: its name or file, with the point's [sweep.set] settings."""
    return machines.with_sets(point["machine"], point.get("machine_set") or ())


def _expand_generate(p: Path, g: dict) -> list[TraceSpec]:
    from ..generate import GENERATORS
    from ..generate import params as gen_params
    w = g["workload"]
    if w not in GENERATORS:
        raise SweepError(f"{p}: generate: unknown workload {w!r}; known: {', '.join(sorted(GENERATORS))}")
    list_typed = {q.name for q in gen_params(w) if str(q.type).startswith(("list", "tuple")) or q.type in (list, tuple)}
    axes = {"ranks": _as_list(g["ranks"])}
    fixed = {}
    for k, v in g.items():
        if k in ("workload", "ranks", "label"):
            continue
        if isinstance(v, list) and k not in list_typed:
            axes[k] = v
        else:
            fixed[k] = v
    out = []
    keys = list(axes)
    for combo in itertools.product(*(axes[k] for k in keys)):
        d = {"workload": w, **dict(zip(keys, combo)), **fixed}
        extra = "".join(f"-{k}{v}" for k, v in zip(keys[1:], combo[1:]))
        out.append(TraceSpec(label=g.get("label", w) + f"-{d['ranks']}" + extra, generate=d))
    return out


def _sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def file_hash(path: Path, cache: dict | None = None) -> str:
    st = path.stat()
    ck = f"{path}:{st.st_size}:{st.st_mtime_ns}"
    if cache is not None and ck in cache:
        return cache[ck]
    h = hashlib.sha256()
    files = [path] if path.is_file() else sorted(q for q in path.rglob("*") if q.is_file())
    for f in files:
        with open(f, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    d = h.hexdigest()
    if cache is not None:
        cache[ck] = d
    return d


def point_key(point: dict) -> str:
    ident = {k: point[k] for k in ("trace_hash", "machine_hash", "mode", "gpus_per_node")}
    params = dict(point["params"])
    mp = params.get("mapping")
    if isinstance(mp, str) and mp not in ("linear", "round-robin") and Path(mp).is_file():
        params["mapping"] = "file:" + _sha(Path(mp).read_bytes())  # the contents, not the path
    ident["params"] = params
    return _sha(json.dumps(ident, sort_keys=True, default=str).encode())[:24]


def _materialise_traces(sw: Sweep, work: Path, hash_cache: dict) -> list[tuple[TraceSpec, Path, str]]:
    """Generated traces are written once under work/_traces/<workload>-<spec hash>.g2g.parquet."""
    from ..sim import as_native
    out = []
    for t in sw.traces:
        if t.generate is not None:
            spec_h = _sha(json.dumps(t.generate, sort_keys=True, default=str).encode())[:20]
            f = work / "_traces" / f"{t.generate['workload']}-{spec_h}.g2g.parquet"
            if not f.exists():
                from ..generate import generate
                f.parent.mkdir(parents=True, exist_ok=True)
                kw = {k: v for k, v in t.generate.items() if k not in ("workload", "ranks")}
                tmp = f.with_name(f.name + f".{os.getpid()}.tmp")
                try:
                    generate(t.generate["workload"], int(t.generate["ranks"]), **kw).write(tmp)
                except (TypeError, ValueError) as e:
                    raise SweepError(f"{sw.path}: generate {t.label}: {e}") from None
                tmp.replace(f)
            path = f
        else:
            assert t.path is not None              # a trace point without a generator names a file
            path = as_native(t.path)
        out.append((t, path, file_hash(path, hash_cache)))
    return out


def expand_points(sw: Sweep, work: Path) -> list[dict]:
    """Every point of the sweep (dicts that run_point takes), in a stable order."""
    hc_file = work / "_hashes.json"
    try:
        hash_cache = json.loads(hc_file.read_text())
    except (OSError, ValueError):
        hash_cache = {}
    traces = _materialise_traces(sw, work, hash_cache)
    hc_file.write_text(json.dumps(hash_cache))
    variants = machine_variants(sw)
    mhash, mgpn = {}, {}
    for m, sets, _ in variants:
        try:
            spec = machines.with_sets(m, sets)
            mhash[m, sets] = _sha(machines.resolve(spec)[0].encode())
            mgpn[m, sets] = int(machines.check(spec, nodes=1)["gpus_per_node"])
        except machines.MachineError as e:
            raise SweepError(f"{sw.path}: machine {m}: {e}") from None
    pkeys = sorted(sw.parameters)
    pts = []
    for (t, path, th), (m, sets, svals), mode, gpn in itertools.product(traces, variants, sw.modes,
                                                                        sw.gpus_per_node):
        for combo in itertools.product(*(sw.parameters[k] for k in pkeys)):
            params = {**sw.options, **dict(zip(pkeys, combo))}
            gen = t.generate or {}
            pt = {"trace": t.label, "trace_path": str(path), "trace_hash": th, "workload": gen.get("workload"),
                  "ranks": gen.get("ranks"), "machine": m, "machine_hash": mhash[m, sets],
                  "machine_gpus_per_node": mgpn[m, sets], "mode": mode, "gpus_per_node": gpn, "params": params}
            if sets:
                pt["machine_set"] = list(sets)
                pt["machine_set_values"] = svals
            pt["key"] = point_key(pt)
            pts.append(pt)
    seen = set()
    uniq = []
    for pt in pts:
        if pt["key"] not in seen:
            seen.add(pt["key"])
            uniq.append(pt)
    return uniq


def run_point(point: dict) -> dict:
    """Simulates one point (runs on a Dask worker); never raises: failures become an ``error`` row."""
    global POINTS_RUN
    POINTS_RUN += 1
    from ..sim import simulate
    from .metrics import summary
    params = dict(point["params"])
    scale_nic = bool(params.pop("scale_nic_with_gpus", False))
    assume = params.pop("assume_buffers", None)
    gpn = point["gpus_per_node"]
    eff_gpn = gpn if gpn is not None else point["machine_gpus_per_node"]
    scale = float(params.get("network_scale", 1.0))
    if scale_nic:
        scale *= eff_gpn / point["machine_gpus_per_node"]
    params["network_scale"] = scale
    mp = params.get("mapping")
    if isinstance(mp, str) and mp not in ("linear", "round-robin"):
        from .mapping import read_mapping
        params["mapping"] = read_mapping(mp)
    row = {"key": point["key"], "network_scale_effective": scale, "computed_at": time.time(),
           "worker_pid": os.getpid(), "error": None}
    t0 = time.perf_counter()
    try:
        rep = simulate(point["trace_path"], point_machine(point), mode=point["mode"], gpus_per_node=gpn,
                       assume_buffers=assume, per_rank=True, **params)
        s = summary(rep)
        row.update({k: rep[k] for k in ("total_time_s", "comm_time_s", "compute_time_s", "copy_time_s")})
        row.update({k: s[k] for k in ("mpi_s", "memcpy_s", "comm_s", "compute_s", "runtime_s", "comm_share")})
        row.update(p2p_messages=int(rep["p2p_messages"]), collective_messages=int(rep["collective_messages"]),
                   nranks=int(rep["nranks"]), nodes=int(rep["nodes"]), gpus_per_node_effective=int(rep["gpus_per_node"]),
                   paths=json.dumps(rep["paths"]), events=int(rep["engine"]["events"]))
    except Exception as e:  # noqa: BLE001 - a failing point is a result, not a crash of the sweep
        row["error"] = f"{type(e).__name__}: {e}"
    row["wall_s"] = time.perf_counter() - t0
    return row


def _row(point: dict, res: dict, run_id: str) -> dict:
    r = {k: point[k] for k in ("key", "trace", "workload", "ranks", "machine", "mode", "gpus_per_node",
                               "trace_hash", "machine_hash", "trace_path")}
    for k, v in point["params"].items():
        r[k] = v if not isinstance(v, (list, dict)) else json.dumps(v)
    for k, v in (point.get("machine_set_values") or {}).items():     # one column per [sweep.set] key
        r[k] = v if not isinstance(v, (list, dict)) else json.dumps(v)
    r.update(res)
    r.setdefault("run_id", run_id)
    return r


def _points_dir(output: Path) -> Path:
    return output.with_name(output.name + ".points")


def _load_done(output: Path) -> dict[str, dict]:
    done: dict[str, dict] = {}
    if output.exists():
        import pandas as pd
        try:
            df = pd.read_parquet(output)
            for rec in df.to_dict("records"):
                if rec.get("key") and not rec.get("error"):
                    done[rec["key"]] = rec
        except Exception:  # noqa: BLE001 - a damaged output is rebuilt from the points directory
            pass
    pdir = _points_dir(output)
    if pdir.is_dir():
        for f in pdir.glob("*.json"):
            if f.name.startswith("_"):
                continue
            try:
                rec = unseal_point(f.read_text(), str(f))
            except OSError:
                continue
            if rec and rec.get("key") and not rec.get("error"):
                done[rec["key"]] = rec
    return done


# a point file carries the SHA-256 of its record: a file edited by hand or damaged is not trusted on
# resume (the point is computed again, with a notice)
_SEAL = "_sha256"


def seal_point(rec: dict) -> str:
    body = json.dumps(rec, sort_keys=True, default=str)
    return json.dumps({**json.loads(body), _SEAL: _sha(body.encode())})


def unseal_point(text: str, name: str = "") -> dict | None:
    """The record of a point file whose checksum matches; None (with a notice) otherwise."""
    try:
        rec = json.loads(text)
        if not isinstance(rec, dict):
            raise ValueError("not an object")
    except ValueError:
        _notice(f"sweep point file {name} is not valid JSON: computing the point again")
        return None
    h = rec.pop(_SEAL, None)
    if h is None or h != _sha(json.dumps(rec, sort_keys=True, default=str).encode()):
        _notice(f"sweep point file {name} does not match its checksum (edited or damaged): computing the point again")
        return None
    return rec


def _notice(msg: str):
    import sys
    print(f"notice: {msg}", file=sys.stderr)


def _write_atomic(path: Path, text: str):
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    tmp.write_text(text)
    tmp.replace(path)


def write_parquet(rows: Iterable[dict], output: Path):
    import pandas as pd
    df = pd.DataFrame(list(rows))
    if "gpus_per_node" in df.columns:
        df["gpus_per_node"] = df["gpus_per_node"].astype("Int64")
    if "ranks" in df.columns:
        df["ranks"] = df["ranks"].astype("Int64")
    for c in df.columns:  # parameter columns may mix types (e.g. mapping): store those as text
        if df[c].dtype == object and df[c].map(lambda v: type(v).__name__ if v is not None else None).nunique() > 1:
            df[c] = df[c].map(lambda v: None if v is None else str(v))
    tmp = output.with_name(output.name + f".{os.getpid()}.tmp")
    df.to_parquet(tmp, index=False)
    tmp.replace(output)
    return df


@dataclass
class SweepResult:
    output: Path
    total: int
    computed: int
    skipped: int
    failed: int
    interrupted: bool
    run_id: str


@contextlib.contextmanager
def _client(scheduler: str | None, workers: int | None, processes: bool):
    from .._extras import require
    require("dask.distributed", "sweep", "running a parameter sweep")
    from dask.distributed import Client, LocalCluster
    if scheduler:
        c = Client(scheduler)
        try:
            yield c
        finally:
            c.close()
        return
    n = workers or max(1, min(os.cpu_count() or 1, 8))
    cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=processes, dashboard_address=None,
                           silence_logs=40)
    c = Client(cluster)
    try:
        yield c
    finally:
        c.close()
        cluster.close()


def run_sweep(sweep: str | Path | Sweep, output: str | Path = "results.parquet", *, scheduler: str | None = None,
              workers: int | None = None, processes: bool = True, progress: bool = True,
              stop_after: int | None = None, retry_errors: bool = False, client=None,
              on_point: Callable[[dict], None] | None = None) -> SweepResult:
    """Runs every point not already finished; writes ``output`` (Parquet, one row per point).

    scheduler: address of a running Dask scheduler (else a LocalCluster of ``workers`` workers;
    processes=False runs them as threads). client: an existing dask Client (overrides both).
    stop_after: stop after this many points were computed in this run (tests of resumption); the
    Parquet then holds the finished points and a rerun computes the rest.
    """
    sw = sweep if isinstance(sweep, Sweep) else load_sweep(sweep)
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    pdir = _points_dir(output.resolve())
    pdir.mkdir(exist_ok=True)
    points = expand_points(sw, pdir)
    done = _load_done(output)
    run_id = uuid.uuid4().hex[:12]
    results: dict[str, dict] = {}
    todo = []
    for pt in points:
        if pt["key"] in done:
            results[pt["key"]] = done[pt["key"]]
        else:
            todo.append(pt)
    if not retry_errors:  # deterministic failures are results too: keep them unless asked to retry
        for pt in list(todo):
            f = pdir / f"{pt['key']}.json"
            if f.exists():
                try:
                    rec = unseal_point(f.read_text(), str(f))
                except OSError:
                    continue
                if rec is None:
                    continue
                results[pt["key"]] = rec
                todo.remove(pt)
    skipped = len(points) - len(todo)
    computed = failed = 0
    interrupted = False
    by_key = {pt["key"]: pt for pt in todo}
    if todo:
        ctx = contextlib.nullcontext(client) if client is not None else _client(scheduler, workers, processes)
        with ctx as cl, _progress(progress, len(points), skipped) as bar:
            from dask.distributed import as_completed
            futs = cl.map(run_point, todo, key=[f"g2gsim-point-{pt['key']}-{run_id}" for pt in todo], pure=False)
            ac = as_completed(futs)
            try:
                for fut in ac:
                    res = fut.result()
                    pt = by_key[res["key"]]
                    rec = _row(pt, res, run_id)
                    _write_atomic(pdir / f"{rec['key']}.json", seal_point(rec))
                    results[rec["key"]] = rec
                    computed += 1
                    failed += rec.get("error") is not None
                    bar(1)
                    if on_point:
                        on_point(rec)
                    if stop_after is not None and computed >= stop_after:
                        interrupted = True
                        break
            except KeyboardInterrupt:
                interrupted = True
            if interrupted:
                for f in futs:
                    f.cancel()
    order = [pt["key"] for pt in points if pt["key"] in results]
    write_parquet((results[k] for k in order), output)
    return SweepResult(output=output, total=len(points), computed=computed, skipped=skipped, failed=failed,
                       interrupted=interrupted, run_id=run_id)


@contextlib.contextmanager
def _progress(enabled: bool, total: int, done: int):
    if not enabled:
        yield lambda k: None
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )
    con = Console(stderr=True)
    with Progress(TextColumn("sweep"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TimeRemainingColumn(),
                  console=con, transient=not con.is_terminal, disable=not con.is_terminal and not sys.stderr.isatty()) as p:
        task = p.add_task("sweep", total=total, completed=done)
        yield lambda k: p.advance(task, k)


__all__ = ["load_sweep", "expand_points", "run_sweep", "run_point", "Sweep", "SweepError", "SweepResult",
           "write_parquet", "RESULT_COLUMNS"]

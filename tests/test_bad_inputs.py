"""Issue 24: bad input never yields a wrong number. Every example of the issue is a regression test
that now gets a clear one-line error or a notice, and every CLI command is run on a set of bad inputs
with no traceback allowed (tests/test_bad_inputs.py::test_no_command_tracebacks)."""
from __future__ import annotations

import json
import os
import shutil
import struct

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import g2gsim
from g2gsim import machines
from g2gsim.cli import main

PRESET = machines.presets()["lassen"]


def run(*args, env=None):
    """Runs the CLI in-process; returns (exit code, stdout, stderr)."""
    r = CliRunner(env=env).invoke(main, [str(a) for a in args], catch_exceptions=True)
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise AssertionError(f"g2gsim {' '.join(map(str, args))}: uncaught {type(r.exception).__name__}: {r.exception}")
    return r.exit_code, r.stdout, r.stderr


def one_error(args, *needles, env=None):
    """The command fails with one `error:` line holding every needle, and no traceback."""
    code, out, err = run(*args, env=env)
    assert code == 1, (args, code, out, err)
    lines = [x for x in err.splitlines() if x.strip()]
    assert lines and lines[-1].startswith("error:"), err
    assert "Traceback" not in err + out and "internal error" not in err, err
    for n in needles:
        assert n in err, (n, err)
    return err


@pytest.fixture
def trace(tmp_path):
    t = g2gsim.generate.generate("jacobi2d", 4, iterations=2)
    p = tmp_path / "j.g2g.parquet"
    t.write(p)
    return p


def set_key(text: str, table: str, key: str, value: str) -> str:
    """``text`` with ``key`` of ``[table]`` set to ``value`` (replaced where set, else added)."""
    lines = text.splitlines()
    cur, head = None, None
    for i, line in enumerate(lines):
        t = line.strip()
        if t.startswith("["):
            cur = t.strip("[]").split("]")[0].strip()
            if cur == table and head is None:
                head = i
            continue
        if cur == table and t.split("=")[0].strip() == key:
            lines[i] = f"{key} = {value}"
            return "\n".join(lines) + "\n"
    if head is None:
        lines += [f"[{table}]", f"{key} = {value}"]
    else:
        lines.insert(head + 1, f"{key} = {value}")
    return "\n".join(lines) + "\n"


def machine_with(tmp_path, table, key, value, name="m.toml", text=None):
    p = tmp_path / name
    p.write_text(set_key(text if text is not None else PRESET.read_text(), table, key, value))
    return p


# ------------------------------------------------------------------ machine files (items 2, 3)

@pytest.mark.parametrize("table,key,value,msg", [
    ("network", "hop_latency", '"1.9e10s"', "1e6 s"),
    ("network", "hop_latency", '"1e30s"', "1e6 s"),
    ("mpi", "send_overhead", '"1e30s"', "1e6 s"),
    ("node.nic", "bw", '"1e-300GB/s"', "1 B/s"),
    ("node", "gpus", "4294967297", "1..=1024"),
    ("node.nic", "count", "4294967297", "1..=64"),
])
def test_machine_values_out_of_range(tmp_path, trace, table, key, value, msg):
    m = machine_with(tmp_path, table, key, value)
    full = f"{table}.{key}"
    err = one_error(["machine", "validate", m], f"{m}:", full, msg)
    line = int(err.split(f"{m}:")[1].split(":")[0])
    assert m.read_text().splitlines()[line - 1].startswith(f"{key} = {value}")
    # the simulation refuses it too, before running
    one_error(["simulate", trace, "-m", m, "--no-progress"], full, msg)


def test_factor_lat_factor_huge(tmp_path):
    m = tmp_path / "m.toml"
    m.write_text(PRESET.read_text() + '\n[[mpi.factors]]\npath = "host"\nlat_factor = 1e300\n')
    one_error(["machine", "validate", m], "mpi.factors[", "lat_factor", "[0, 1000000]")


def test_fat_tree_levels_truncation(tmp_path):
    m = machine_with(tmp_path, "network", "topology", '"fat-tree"')
    m = machine_with(tmp_path, "network", "levels", "4294967298", text=m.read_text())
    one_error(["machine", "validate", m], "network.levels", "2..=3")


@pytest.mark.parametrize("table", ["node.nvlinks", "node.hots", "gpu.copy", "network.fat"])
def test_misspelt_tables(tmp_path, table):
    m = tmp_path / "m.toml"
    m.write_text(PRESET.read_text() + f"\n[{table}]\nbw = \"1GB/s\"\n")
    one_error(["machine", "validate", m], f"{table}: unknown table [{table}]", "node.nvlink", "network")


def test_validate_reports_every_error(tmp_path):
    m = tmp_path / "m.toml"
    m.write_text(PRESET.read_text() + '\n[gpu.copy]\nx = 1\n[node.hots]\ny = 2\n')
    code, out, err = run("machine", "validate", m)
    assert code == 1
    assert err.count("error:") == 2 and "gpu.copy" in err and "node.hots" in err and "(2 errors)" in err, err


def test_machine_file_not_text_or_a_directory(tmp_path):
    bad = tmp_path / "bin.toml"
    bad.write_bytes(b"schema_version = 1\n\xff\xfe\n")
    one_error(["machine", "validate", bad], "not UTF-8", f"{bad}:2")
    one_error(["machine", "show", tmp_path], "is a directory")


def test_network_scale_out_of_range(trace):
    one_error(["simulate", trace, "--network-scale", "1e-300", "--no-progress"], "network")
    one_error(["simulate", trace, "--network-scale", "nan", "--no-progress"], "network")


# ------------------------------------------------------------------------ placement (items 5, 6)

def test_mapping_entries(tmp_path, trace):
    for text, needle in [("0 1 2 4294967295\n", "4294967295"), ("0 -1 0 0\n", "-1"), ("0 x 0 0\n", "'x'"),
                         ("", "empty")]:
        m = tmp_path / "map.txt"
        m.write_text(text)
        one_error(["simulate", trace, "--mapping", m, "--no-progress"], needle, str(m))
    m = tmp_path / "map.bin"
    m.write_bytes(b"\xff\xfe0 1")
    one_error(["simulate", trace, "--mapping", m, "--no-progress"], "not UTF-8")


def test_huge_placements_refused_up_front(tmp_path, trace):
    one_error(["simulate", trace, "--gpus-per-node", "100000", "--no-progress"], "GPUs per node")
    m = tmp_path / "map.txt"
    m.write_text("0 0 0 1048575\n")
    one_error(["simulate", trace, "--mapping", m, "--gpus-per-node", "64", "--no-progress"], "links", "GiB")


def test_trace_claiming_too_many_ranks(tmp_path):
    p = tmp_path / "big.g2g.parquet"
    t = pq.read_table(g2gsim.generate.generate("pingpong", 2, iterations=1).write(tmp_path / "s.g2g.parquet"))
    md = dict(t.schema.metadata)
    md[b"g2gsim.nranks"] = b"10000000"
    pq.write_table(t.replace_schema_metadata(md), p)
    one_error(["simulate", p, "--no-progress"], "10000000 ranks", "GiB")


# ---------------------------------------------------------------------------- outputs (item 7)

def test_output_equal_to_input_is_refused(trace):
    before = trace.read_bytes()
    one_error(["simulate", trace, "--json", trace, "--no-progress"], "is the input")
    one_error(["map", trace, "-o", trace], "is the input")
    assert trace.read_bytes() == before


def test_import_onto_its_own_meta_is_refused(corpus, tmp_path):
    src = corpus / "sst-macro/tests/test_traces"
    d = tmp_path / "dumpi"
    shutil.copytree(src, d)
    meta = d / "testbgp.meta"
    before = meta.read_bytes()
    one_error(["import", meta, "-o", meta], "is the input")
    assert meta.read_bytes() == before


def test_output_in_missing_folder_fails_before_work(trace, tmp_path):
    one_error(["simulate", trace, "--json", tmp_path / "nope" / "r.json", "--no-progress"], "does not exist")


def test_existing_output_replaced_with_notice(trace, tmp_path):
    out = tmp_path / "r.json"
    out.write_text("old")
    code, _, err = run("simulate", trace, "--json", out, "--no-progress")
    assert code == 0 and "notice: replacing the existing" in err
    assert json.loads(out.read_text())["nranks"] == 4
    assert not list(tmp_path.glob(".r.json.part-*"))


def test_killed_writer_leaves_no_file(tmp_path):
    from g2gsim._io import atomic_output
    out = tmp_path / "t.g2g.parquet"
    with pytest.raises(RuntimeError):
        with atomic_output(out) as tmp:
            tmp.write_bytes(b"PAR1 half")
            raise RuntimeError("killed")
    assert not out.exists() and not list(tmp_path.iterdir())


def test_sweep_point_file_edited_by_hand(tmp_path):
    from g2gsim.analysis.sweep import seal_point, unseal_point
    rec = {"key": "abc", "total_time_s": 1.5, "error": None}
    text = seal_point(rec)
    assert unseal_point(text, "p.json") == rec
    edited = text.replace("1.5", "0.5")
    assert unseal_point(edited, "p.json") is None
    assert unseal_point(json.dumps(rec), "p.json") is None  # no checksum: not trusted


# ------------------------------------------------------------------------ import cache (item 1)

def test_stale_otf2_cache_is_not_used(corpus, tmp_path, monkeypatch):
    import g2gsim.sim as sim
    monkeypatch.setattr(sim, "CACHE_DIR", tmp_path / "cache")
    src = corpus / "tracer/examples/stencil4d-otf/traces-32"
    d = tmp_path / "arch"
    shutil.copytree(src, d)
    anchor = d / "traces.otf2"
    a = g2gsim.simulate(anchor, "lassen")
    assert a["nranks"] == 32
    evts = sorted((d / "traces").glob("*.evt"))
    assert len(evts) == 32
    for e in evts[1:]:
        e.unlink()
    with pytest.raises(g2gsim.TraceError, match="evt"):
        g2gsim.simulate(anchor, "lassen")
    one_error(["simulate", anchor, "--no-progress"], "evt")


def test_stale_dumpi_cache_is_not_used(corpus, tmp_path, monkeypatch):
    import g2gsim.sim as sim
    monkeypatch.setattr(sim, "CACHE_DIR", tmp_path / "cache")
    d = tmp_path / "dumpi"
    shutil.copytree(corpus / "sst-macro/tests/test_traces", d)
    meta = d / "testbgp.meta"
    g2gsim.simulate(meta, "lassen")
    for b in d.glob("testbgp-*.bin"):
        with open(b, "r+b") as f:
            f.truncate(100)
    with pytest.raises(g2gsim.TraceError):
        g2gsim.simulate(meta, "lassen")


def test_damaged_cache_entry_is_reimported(corpus, tmp_path, monkeypatch):
    import g2gsim.sim as sim
    monkeypatch.setattr(sim, "CACHE_DIR", tmp_path / "cache")
    meta = corpus / "sst-macro/tests/test_traces/testbgp.meta"
    a = g2gsim.simulate(meta, "lassen")
    (entry,) = sim.cache_entries()
    entry.write_bytes(entry.read_bytes()[:200])  # damaged in the cache
    b = g2gsim.simulate(meta, "lassen")
    assert a["total_time_s"] == b["total_time_s"]


def test_no_cache_and_cache_clear(corpus, tmp_path):
    env = {"G2GSIM_CACHE": str(tmp_path / "cache")}
    meta = corpus / "sst-macro/tests/test_traces/testbgp.meta"
    code, out, err = run("simulate", meta, "--no-cache", "--no-progress", env=env)
    assert code == 0, err
    # G2GSIM_CACHE is read at import: use the module's directory
    import g2gsim.sim as sim
    n_before = len(sim.cache_entries())
    code, out, _ = run("cache", "list")
    assert code == 0 and "cached import" in out
    code, out, _ = run("cache", "clear")
    assert code == 0 and "removed" in out
    assert len(sim.cache_entries()) == 0 or n_before == 0


# --------------------------------------------------------------------- generators and traces

def test_generator_rate_zero(tmp_path):
    one_error(["generate", "jacobi2d", "-n", "4", "-p", "bytes_per_s=0", "-o", tmp_path / "j.g2g.parquet"], "bytes_per_s", "positive")
    assert not (tmp_path / "j.g2g.parquet").exists()


def test_info_on_corrupt_page(trace, tmp_path):
    data = bytearray(trace.read_bytes())
    mid = len(data) // 2
    data[mid:mid + 64] = bytes(64)
    bad = tmp_path / "bad.g2g.parquet"
    bad.write_bytes(bytes(data))
    code, out, err = run("info", bad)
    assert code in (0, 1) and "Traceback" not in err and "internal error" not in err, err
    code, out, err = run("simulate", bad, "--no-progress")
    assert code in (0, 1) and "Traceback" not in err and "internal error" not in err, err


def test_flipped_otf2_anchor_byte(corpus, tmp_path):
    d = tmp_path / "arch"
    shutil.copytree(corpus / "pipit/pipit/tests/data/ping-pong-otf2", d)
    anchor = d / "traces.otf2"
    for off in (0, 8, 24, 64):
        data = bytearray(anchor.read_bytes())
        if off < len(data):
            data[off] ^= 0xFF
            anchor.write_bytes(bytes(data))
            code, out, err = run("import", anchor, "-o", tmp_path / f"o{off}.g2g.parquet")
            assert "Traceback" not in err and "internal error" not in err, err


def test_sweep_config_wrong_types(tmp_path):
    for body, needle in [("traces = 5\n", "traces"), ("gpus_per_node = [\"x\"]\n", "gpus_per_node"),
                         ("parameters = 5\n", "parameters"),
                         ("generate = {workload = \"jacobi2d\", ranks = 4, bytes_per_s = 0}\n", "bytes_per_s")]:
        f = tmp_path / "s.toml"
        f.write_text(body)
        one_error(["sweep", f, "-o", tmp_path / "r.parquet"], needle)


# ------------------------------------------------------------- no command ends in a traceback

def _bad_inputs(tmp_path, trace):
    empty = tmp_path / "empty.g2g.parquet"
    empty.write_bytes(b"")
    junk = tmp_path / "junk.g2g.parquet"
    junk.write_bytes(os.urandom(3000))
    trunc = tmp_path / "trunc.g2g.parquet"
    trunc.write_bytes(trace.read_bytes()[:-300])
    notutf = tmp_path / "x.toml"
    notutf.write_bytes(b"\xff\xff\xff")
    badtoml = tmp_path / "bad.toml"
    badtoml.write_text("[node\n")
    meta = tmp_path / "x.meta"
    meta.write_bytes(b"hostname=x\nnumprocs=99999999999\nfileprefix=../../etc\n")
    otf = tmp_path / "a.otf2"
    otf.write_bytes(struct.pack("<Q", 0xDEADBEEF) * 8)
    return dict(trace=trace, empty=empty, junk=junk, trunc=trunc, notutf=notutf, badtoml=badtoml, meta=meta,
                otf=otf, dir=tmp_path, missing=tmp_path / "missing.g2g.parquet")


def test_no_command_tracebacks(tmp_path, trace):
    b = _bad_inputs(tmp_path, trace)
    out = tmp_path / "out"
    cases = []
    for t in ("empty", "junk", "trunc", "meta", "otf", "dir", "missing"):
        cases += [["simulate", b[t], "--no-progress"], ["info", b[t]], ["import", b[t], "-o", out / "x.g2g.parquet"],
                  ["compare", b[t]], ["whatif", b[t], "--gpus-per-node", "1,2"], ["profile", b[t]],
                  ["map", b[t], "-o", tmp_path / "m.txt"]]
    for m in ("notutf", "badtoml", "dir", "missing"):
        cases += [["simulate", b["trace"], "-m", b[m], "--no-progress"], ["machine", "show", b[m]],
                  ["machine", "validate", b[m]], ["compare", b["trace"], "-m", b[m]]]
    cases += [
        ["simulate", b["trace"], "--mapping", b["notutf"], "--no-progress"],
        ["simulate", b["trace"], "--coll-algo", "allreduce=nonsense", "--no-progress"],
        ["simulate", b["trace"], "--coll-algo", "===", "--no-progress"],
        ["simulate", b["trace"], "--gpus-per-node", "4294967297", "--no-progress"],
        ["simulate", b["trace"], "--json", tmp_path / "no" / "dir" / "r.json", "--no-progress"],
        ["simulate", b["trace"], "--json", tmp_path, "--no-progress"],
        ["generate", "jacobi2d", "-n", "4", "-p", "iterations=-1", "-o", tmp_path / "g.g2g.parquet"],
        ["generate", "jacobi2d", "-n", "4", "-p", "proc_grid=0,0", "-o", tmp_path / "g.g2g.parquet"],
        ["generate", "jacobi2d", "-n", "4", "-p", "nx=1e400", "-o", tmp_path / "g.g2g.parquet"],
        ["generate", "matmul", "-n", "3", "-p", "root=7", "-o", tmp_path / "g.g2g.parquet"],
        ["generate", "pingpong", "-n", "2", "-p", "sizes=-5", "-o", tmp_path / "g.g2g.parquet"],
        ["generate", "jacobi2d", "-n", "4", "-o", tmp_path / "nodir" / "g.g2g.parquet"],
        ["sweep", b["badtoml"], "-o", tmp_path / "r.parquet"],
        ["sweep", b["notutf"], "-o", tmp_path / "r.parquet"],
        ["sweep-plot", b["junk"], "-o", tmp_path / "plots"],
        ["cache", "list"],
    ]
    failures = []
    for args in cases:
        try:
            code, o, e = run(*args)
        except AssertionError as x:
            failures.append(str(x))
            continue
        if "Traceback" in o + e or "internal error" in e or code not in (0, 1, 2):
            failures.append(f"{args}: exit {code}: {e.strip()[-300:]}")
        elif code == 1:
            lines = [x for x in e.splitlines() if x.strip()]
            if not lines or not lines[-1].startswith("error:"):
                failures.append(f"{args}: no one-line error: {e!r}")
    assert not failures, "\n".join(failures)
    assert len(cases) > 70


# ------------------------------------------------------------------- replay semantics (item 4)

def _built(tmp_path, nranks, rows, name="t.g2g.parquet"):
    from g2gsim.trace import TraceBuilder
    b = TraceBuilder(nranks)
    for r, op, kw in rows:
        b.add(r, op, **kw)
    p = tmp_path / name
    b.build().write(p)
    return p


def test_bcast_against_reduce_is_a_named_error(tmp_path):
    rows = [(r, "Bcast" if r < 2 else "Reduce", dict(root=0, bytes=64)) for r in range(4)]
    p = _built(tmp_path, 4, rows)
    one_error(["simulate", p, "--no-progress"], "rank 2, event 0", "collective mismatch", "Reduce", "Bcast")


def test_allreduce_sizes_differ(tmp_path):
    rows = [(r, "Allreduce", dict(bytes=8 if r < 3 else 16)) for r in range(4)]
    p = _built(tmp_path, 4, rows)
    one_error(["simulate", p, "--no-progress"], "rank 3", "Allreduce of 16 B", "Allreduce of 8 B")


def test_unreceived_send_and_truncation_are_notices(tmp_path):
    p = _built(tmp_path, 2, [(0, "Send", dict(peer=1, tag=1, bytes=8)), (1, "Compute", dict(dur_ns=10))])
    code, out, err = run("simulate", p, "--no-progress")
    assert code == 0 and "notice:" in err and "never received" in err, err
    one_error(["simulate", p, "--no-progress", "--strict"], "strict mode", "never received")
    p = _built(tmp_path, 2, [(0, "Send", dict(peer=1, tag=1, bytes=1 << 20)), (1, "Recv", dict(peer=0, tag=1, recv_bytes=8))],
               name="trunc.g2g.parquet")
    code, out, err = run("simulate", p, "--no-progress")
    assert code == 0 and "larger than their buffer" in err, err


def test_zero_row_trace_is_a_notice(tmp_path):
    p = _built(tmp_path, 2, [])
    code, out, err = run("simulate", p, "--no-progress")
    assert code == 0 and "no operations" in err, err


def test_deadlock_json_lists_every_rank(tmp_path):
    n = 256
    p = _built(tmp_path, n, [(r, "Recv", dict(peer=(r + 1) % n, tag=1, recv_bytes=8)) for r in range(n)])
    out = tmp_path / "d.json"
    code, _, err = run("simulate", p, "--no-progress", "--json", out)
    assert code == 1 and "256 rank(s) blocked" in err and "and 191 more" not in err, err
    d = json.loads(out.read_text())
    assert d["error"] == "deadlock" and len(d["blocked"]) == 256

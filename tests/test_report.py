"""The report: a typed g2gsim.Report that stays a dict, its pandas views and CSV files, and the JSON
schema (docs/report.schema.json) checked against real reports of every mode."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import g2gsim
from g2gsim import machines
from g2gsim.trace import TraceBuilder

jsonschema = pytest.importorskip("jsonschema", reason="jsonschema checks the report schema (make test installs it)")

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = json.loads((ROOT / "docs" / "report.schema.json").read_text())


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    d = tmp_path_factory.mktemp("rep")
    from g2gsim.generate import generate
    j = d / "jacobi.g2g.parquet"
    generate("jacobi2d", 8).write(j)
    b = TraceBuilder(8, source="test")
    for size in (512, 2 << 20, 32 << 20):
        b.add(0, "Send", peer=4, tag=1, bytes=size, mem_space="device")
        b.add(4, "Recv", peer=0, tag=1, recv_bytes=size, mem_space="device")
    x = d / "x.g2g.parquet"
    b.build().write(x)
    return {"jacobi": j, "internode": x, "dumpi": ROOT / "tests/data/sstmacro-dumpi/testbgp.meta"}


@pytest.mark.parametrize("mode", ["as-traced", "hostcopy", "gpudirect"])
@pytest.mark.parametrize("name", ["jacobi", "internode", "dumpi"])
def test_reports_match_the_schema(traces, name, mode):
    rep = g2gsim.simulate(traces[name], "lassen", mode=mode)
    jsonschema.validate(json.loads(json.dumps(rep)), SCHEMA)


def test_schema_rejects_an_undocumented_key(traces):
    rep = g2gsim.simulate(traces["internode"], "lassen").to_dict()
    rep["new_key"] = 1
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(rep, SCHEMA)


def test_set_and_no_per_rank_match_the_schema(traces):
    rep = g2gsim.simulate(traces["internode"], machines.with_sets("lassen", ["mpi.eager_limit=1KiB"]), per_rank=False)
    jsonschema.validate(rep.to_dict(), SCHEMA)
    assert rep["per_rank"] == [] and rep["machine_set"] == ["mpi.eager_limit=1KiB"]


def test_warnings_match_the_schema(tmp_path):
    """A trace with a message never received: the report carries `warnings`, which the schema describes."""
    b = TraceBuilder(2, source="test")
    b.add(0, "Send", peer=1, tag=1, bytes=8)
    b.add(1, "Compute", dur_ns=10)
    t = tmp_path / "unreceived.g2g.parquet"
    b.build().write(t)
    rep = g2gsim.simulate(t, "lassen")
    assert rep.get("warnings"), rep.get("warnings")
    jsonschema.validate(dict(rep), SCHEMA)


def test_every_schema_key_is_described_in_the_docs():
    doc = (ROOT / "docs" / "report-schema.md").read_text()
    keys = set(SCHEMA["properties"])
    for sub in ("per_rank", "per_op", "engine"):
        s = SCHEMA["properties"][sub]
        keys |= set((s.get("items") or s.get("additionalProperties") or s).get("properties", {}))
    keys |= set(SCHEMA["properties"]["p2p_size_classes"]["propertyNames"]["enum"])
    for k in sorted(keys):
        assert f"`{k}`" in doc, k


def test_report_is_a_dict_with_typed_values(traces):
    rep = g2gsim.simulate(traces["jacobi"], "lassen", mode="gpudirect")
    assert isinstance(rep, g2gsim.Report) and isinstance(rep, dict)
    assert rep.total_time_s == rep["total_time_s"] and isinstance(rep.total_time_s, float)
    assert (rep.nranks, rep.mode, rep.machine) == (8, "gpudirect", "lassen")
    d = rep.to_dict()
    assert type(d) is dict and d == rep and d is not rep
    d["per_op"].clear()
    assert rep["per_op"]                               # a deep copy
    assert json.loads(rep.to_json()) == json.loads(json.dumps(rep))


def test_pandas_views_agree_with_the_report(traces):
    rep = g2gsim.simulate(traces["internode"], "lassen", mode="hostcopy")
    ops = rep.per_op_df()
    assert set(ops.index) == set(rep["per_op"]) and ops.loc["Send", "count"] == 3
    assert ops.loc["Send", "bytes"] == 512 + (2 << 20) + (32 << 20)
    sizes = rep.by_size_df()
    assert sizes["messages"].sum() == rep["p2p_messages"] == 3
    assert list(sizes.index) == ["a: <=1KiB", "d: 1MiB-16MiB", "e: >16MiB"]
    ranks = rep.per_rank_df()
    assert list(ranks.index) == list(range(8))
    assert ranks["end_s"].max() == pytest.approx(rep.total_time_s)
    assert ranks["comm_s"].mean() == pytest.approx(rep.comm_time_s)
    assert rep.paths_df()["messages"].sum() == 3
    no_ranks = g2gsim.simulate(traces["internode"], "lassen", per_rank=False)
    with pytest.raises(ValueError, match="per_rank=True"):
        no_ranks.per_rank_df()


def test_csv_from_python_and_cli(traces, tmp_path):
    rep = g2gsim.simulate(traces["internode"], "lassen", mode="gpudirect")
    files = rep.to_csv(tmp_path / "py")
    assert sorted(f.name for f in files) == ["by_size.csv", "paths.csv", "per_op.csv", "per_rank.csv", "summary.csv"]
    ops = pd.read_csv(tmp_path / "py" / "per_op.csv", index_col="op")
    assert ops.loc["Send", "count"] == 3
    summ = pd.read_csv(tmp_path / "py" / "summary.csv")
    assert summ.loc[0, "total_time_s"] == pytest.approx(rep.total_time_s)
    p = subprocess.run([sys.executable, "-m", "g2gsim", "simulate", traces["internode"], "--mode", "gpudirect",
                        "--no-progress", "--csv", tmp_path / "cli"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    for f in files:
        assert (tmp_path / "cli" / f.name).read_text() == f.read_text() or f.name == "summary.csv"
    cli_summ = pd.read_csv(tmp_path / "cli" / "summary.csv")
    assert cli_summ.loc[0, "total_time_s"] == pytest.approx(rep.total_time_s)


@pytest.mark.parametrize("path", ["tests/data/pipit-otf2/ping-pong-otf2/traces.otf2", "tests/data/pipit-otf2/ping-pong-otf2",
                                  "tests/data/sstmacro-dumpi/testtrace.meta"])
def test_trace_read_takes_every_format_simulate_takes(path, tmp_path):
    if "otf2" in path:
        pytest.importorskip("otf2")
    from g2gsim.sim import import_trace
    t = g2gsim.Trace.read(ROOT / path)
    ref = import_trace(ROOT / path)
    assert t.nranks == ref.nranks and t.table.equals(ref.table)
    native = t.write(tmp_path / "t.g2g.parquet")
    assert g2gsim.Trace.read(native).table.equals(t.table)
    a = g2gsim.simulate(ROOT / path, "lassen")
    b = g2gsim.simulate(native, "lassen")
    assert a["total_time_s"] == b["total_time_s"]

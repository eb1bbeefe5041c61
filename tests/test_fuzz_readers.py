"""Issue 24, item 8: hypothesis-driven fuzzing of the Python readers. Every input, however mangled,
ends in a result or in the reader's own error (TraceError, MachineError, SweepError, ValueError
with the file named): never another exception. Bounded: a few dozen examples per reader, no
deadline (CI is a 2-core machine)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st

from g2gsim import machines  # noqa: E402
from g2gsim.trace import Trace, TraceError  # noqa: E402

SETTINGS = dict(max_examples=40, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

ROOT = Path(__file__).resolve().parents[1]
SEEDS = sorted((ROOT / "tests/data/fuzz/parquet-seeds").glob("*.g2g.parquet"))

# a mutation: (offset fraction, new bytes) pairs, or a truncation
mutations = st.lists(st.tuples(st.floats(0, 1), st.binary(min_size=1, max_size=8)), min_size=1, max_size=4)


def mutate(data: bytes, muts, cut: float | None) -> bytes:
    b = bytearray(data)
    for frac, new in muts:
        i = min(int(frac * len(b)), max(len(b) - 1, 0))
        b[i:i + len(new)] = new
    if cut is not None:
        b = b[:int(cut * len(b))]
    return bytes(b)


@settings(**SETTINGS)
@given(seed=st.sampled_from(SEEDS), muts=mutations, cut=st.none() | st.floats(0, 1))
def test_native_reader(tmp_path, seed, muts, cut):
    p = tmp_path / "t.g2g.parquet"
    p.write_bytes(mutate(seed.read_bytes(), muts, cut))
    try:
        Trace.read(p)
    except TraceError as e:
        assert str(p) in str(e)


@settings(**SETTINGS)
@given(data=st.binary(max_size=300) | st.text(max_size=300).map(str.encode))
def test_machine_files(tmp_path, data):
    p = tmp_path / "m.toml"
    p.write_bytes(data)
    try:
        machines.validate(p)
        machines.check(p)
    except machines.MachineError as e:
        assert str(p) in str(e)


KEYS = ["gpus", "bw", "latency", "count", "hop_latency", "levels", "send_overhead", "eager_limit", "pipeline_depth",
        "topology", "kind", "efficiency", "taper", "lat_factor"]
VALUES = st.one_of(st.integers(-2**63, 2**63 - 1).map(str), st.floats(allow_nan=True, allow_infinity=True).map(
    lambda f: repr(f).replace("inf", "inf").replace("nan", "nan")),
    st.sampled_from(['"1e30s"', '"1e-300GB/s"', '"64KiB"', '"fat-tree"', '"pairs"', '"0ns"', '""', "[1, 2]", "{}"]))


@settings(**SETTINGS)
@given(edits=st.lists(st.tuples(st.sampled_from(["node", "node.pcie", "node.nic", "network", "mpi", "gpu",
                                                 "node.nvlinks", "mpi.factors"]),
                                st.sampled_from(KEYS), VALUES), min_size=1, max_size=3))
def test_machine_values(tmp_path, edits):
    text = machines.presets()["lassen"].read_text()
    for table, key, value in edits:
        header = f"[[{table}]]" if table == "mpi.factors" else f"[{table}]"
        text += f"\n{header}\n{key} = {value}\n"
    p = tmp_path / "m.toml"
    p.write_text(text)
    try:
        machines.validate(p)
        machines.check(p)
    except machines.MachineError as e:
        assert str(p) in str(e)


@settings(**SETTINGS)
@given(text=st.text(max_size=200))
def test_mapping_files(tmp_path, text):
    from g2gsim.analysis.mapping import read_mapping
    p = tmp_path / "map.txt"
    p.write_text(text)
    try:
        v = read_mapping(p)
        assert all(0 <= x < 1 << 20 for x in v)
    except ValueError as e:
        assert str(p) in str(e)


@settings(**SETTINGS)
@given(text=st.text(max_size=300))
def test_sweep_files(tmp_path, text):
    from g2gsim.analysis.sweep import SweepError, load_sweep
    p = tmp_path / "s.toml"
    p.write_text(text)
    try:
        load_sweep(p)
    except SweepError as e:
        assert str(p) in str(e)


@pytest.fixture(scope="module")
def dumpi_dir(tmp_path_factory, corpus):
    d = tmp_path_factory.mktemp("dumpi")
    shutil.copytree(corpus / "sst-macro/tests/test_traces", d / "t")
    return d / "t"


@settings(**{**SETTINGS, "max_examples": 25})
@given(rank=st.integers(0, 6), muts=mutations, cut=st.none() | st.floats(0, 1))
def test_dumpi_reader(tmp_path, dumpi_dir, rank, muts, cut):
    from g2gsim.readers.dumpi_reader import read_dumpi
    d = tmp_path / "d"
    if d.exists():
        shutil.rmtree(d)
    shutil.copytree(dumpi_dir, d)
    b = d / f"testbgp-{rank:04d}.bin"
    b.write_bytes(mutate(b.read_bytes(), muts, cut))
    try:
        read_dumpi(d / "testbgp.meta")
    except (TraceError, ValueError) as e:
        assert "testbgp" in str(e)

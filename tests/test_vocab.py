"""One vocabulary (issue 22): operation classes, modes, size classes, the trace's columns and the
unit rule are defined once in the core and read by Python through ``g2gsim.vocab`` / ``g2gsim.units``."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

from g2gsim import _core, machines, units, vocab  # noqa: E402
from g2gsim.analysis._common import size_class  # noqa: E402
from g2gsim.trace import DEFAULTS, SCHEMA, TraceBuilder  # noqa: E402

PKG = ROOT / "python" / "g2gsim"


def test_classes_partition_the_operations():
    assert vocab.SEND_OPS == {"Send", "Ssend", "Bsend", "Rsend", "Isend", "Issend", "Sendrecv"}
    assert vocab.SEND_ONLY_OPS == vocab.SEND_OPS - {"Sendrecv"}
    assert vocab.RECV_OPS == {"Recv", "Irecv", "Sendrecv"}
    assert vocab.BLOCKING_SEND_OPS == {"Send", "Ssend", "Bsend", "Rsend"}
    assert vocab.P2P_OPS == vocab.SEND_OPS | vocab.RECV_OPS
    assert vocab.TEST_OPS == {"Test", "Testall", "Testany", "Testsome"}
    assert vocab.MPI_OPS == vocab.P2P_OPS | vocab.WAIT_OPS | vocab.TEST_OPS | vocab.COLLECTIVES
    assert len(vocab.BLOCKING_COLLECTIVES) == len(vocab.NONBLOCKING_COLLECTIVES) == 16
    assert vocab.NONBLOCKING_COLLECTIVES[1] == "Ibcast"
    groups = [vocab.P2P_OPS, vocab.WAIT_OPS, vocab.TEST_OPS, vocab.COLLECTIVES, vocab.COPY_OPS,
              vocab.MARKER_OPS, vocab.GPU_OPS | vocab.COMPUTE_OPS, vocab.UNTRACED_OPS]
    assert set().union(*groups) == vocab.ALL_OPS
    assert sum(len(g) for g in groups) == len(vocab.ALL_OPS)       # disjoint
    with pytest.raises(ValueError, match="unknown operation class"):
        vocab.ops_in("sends")


def test_every_name_is_one_the_core_replays(tmp_path):
    """A trace holding every operation name of the vocabulary opens in the core (no unknown op)."""
    b = TraceBuilder(1)
    for op in sorted(vocab.ALL_OPS):
        b.add(0, op)
    path = b.build().write(tmp_path / "all.g2g.parquet")
    assert _core.trace_meta(str(path))[1] == len(vocab.ALL_OPS)


def test_schema_and_defaults_come_from_the_core():
    assert [f.name for f in SCHEMA] == [c.name for c in vocab.COLUMNS]
    assert str(SCHEMA.field("reqs").type) == "list<item: uint64>"
    assert DEFAULTS["peer"] == -1 and DEFAULTS["mem_space"] == "host" and DEFAULTS["contiguous"] is True
    assert DEFAULTS["priority"] == 0 and DEFAULTS["t_start_ns"] is None
    assert {"rank", "seq", "op"} == {c.name for c in vocab.COLUMNS if c.required}


def test_modes_and_sharing_are_the_cores():
    assert vocab.MODES == ("as-traced", "hostcopy", "gpudirect")
    assert vocab.SHARING[0] == "max-min" and "bottleneck" in vocab.SHARING


def test_analysis_size_classes_are_the_reports(tmp_path):
    """The analysis tables and the core's report put the same message in the same class."""
    from g2gsim import simulate
    from g2gsim.generate import generate
    sizes = [8, 1024, 1025, 65536, 65537, 1 << 20, (1 << 20) + 1, 1 << 24, (1 << 24) + 1]
    p = generate("pingpong", 2, sizes=sizes, iterations=1, barrier=False).write(tmp_path / "pp.g2g.parquet")
    rep = simulate(p, "lassen", per_rank=False)
    mine: dict[str, int] = {}
    for s in sizes:                                           # one send each way per size
        lab = str(size_class([s])[0])
        mine[lab] = mine.get(lab, 0) + 2
    theirs = {vocab.SizeClass(k, k.split(": ", 1)[1], None).label: v["messages"]
              for k, v in rep["p2p_size_classes"].items()}
    assert mine == theirs
    assert set(rep["p2p_size_classes"]) <= {c.key for c in vocab.SIZE_CLASSES}


@pytest.mark.parametrize("text,bytes_", [("64KiB", 65536), ("64KB", 64000), ("64K", 64000), ("4096", 4096),
                                          ("1MiB", 1 << 20), ("1MB", 10**6), ("1.5KiB", 1536), ("1e3", 1000)])
def test_one_size_rule(text, bytes_):
    assert units.parse_size(text) == bytes_


def test_machine_files_and_python_read_sizes_alike(tmp_path):
    text, _ = machines.resolve("lassen")
    f = tmp_path / "m.toml"
    f.write_text(text.replace('eager_limit = "64KiB"', 'eager_limit = "64KB"'))
    assert machines.check(f)["eager_limit_bytes"] == units.parse_size("64KB") == 64000


def test_units_errors_name_the_text():
    with pytest.raises(ValueError, match="bogus"):
        units.parse_size("3 bogus")
    with pytest.raises(ValueError, match="needs a unit"):
        units.parse_duration_ns("5")
    with pytest.raises(ValueError):
        units.parse_bandwidth("25GB")
    with pytest.raises(ValueError):
        units.parse_size(-1)
    assert units.parse_duration_s("1.2us") == 1.2e-6
    assert units.parse_bandwidth("100Gb/s") == 12.5e9


def test_toml_values_are_written_by_tomli_w():
    import tomllib
    for v in ['a "quoted" \\ path\n', "µs", 1.5, 10, True, ["x", 2]]:
        assert tomllib.loads(f"k = {machines.toml_value(v)}")["k"] == (list(v) if isinstance(v, list) else v)


# the names the core owns, as Python literals: none may come back outside vocab.py
_SPELLED = [
    (re.compile(r'"Send",\s*"Ssend"|"Isend",\s*"Issend"|"Ssend",\s*"Bsend"'), "a list of send operations"),
    (re.compile(r'"Wait",\s*"Waitall",\s*"Waitany"'), "a list of wait operations"),
    (re.compile(r'"as-traced",\s*"hostcopy",\s*"gpudirect"'), "the list of modes"),
    (re.compile(r'"max-min",\s*"max-min-full"'), "the list of sharing models"),
    (re.compile(r"1024,\s*64\s*\*\s*KiB,\s*MiB,\s*16\s*\*\s*MiB|1024,\s*65536,\s*1048576"), "the size-class edges"),
    (re.compile(r'"kib":\s*|"KiB":\s*\(?1\s*<<'), "a size-unit table"),
]


def test_no_module_spells_the_vocabulary_again():
    bad = []
    for f in sorted(PKG.rglob("*.py")):
        if f.name == "vocab.py" or "testing" in f.parts:
            continue
        text = f.read_text()
        for pat, what in _SPELLED:
            for m in pat.finditer(text):
                line = text.count("\n", 0, m.start()) + 1
                bad.append(f"{f.relative_to(ROOT)}:{line}: {what} (use g2gsim.vocab / g2gsim.units)")
    assert not bad, "\n".join(bad)

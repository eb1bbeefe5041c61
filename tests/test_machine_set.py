"""--set KEY=VALUE: any machine-file key from the command line, validated like the file, on every
command that takes a machine, and as a sweep axis ([sweep.set])."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

import g2gsim
from g2gsim import machines
from g2gsim.analysis.sweep import expand_points, load_sweep, run_sweep
from g2gsim.trace import TraceBuilder


def cli(*args, check=True):
    p = subprocess.run([sys.executable, "-m", "g2gsim", *map(str, args)], capture_output=True, text=True,
                       timeout=300, env={**__import__("os").environ, "COLUMNS": "200"})
    if check:
        assert p.returncode == 0, p.stderr
    return p


@pytest.fixture
def internode(tmp_path):
    """Ranks 0 and 4 on different nodes of a 4-GPU machine exchange 8 MiB device messages."""
    b = TraceBuilder(8, source="test")
    for _ in range(3):
        b.add(0, "Send", peer=4, tag=1, bytes=8 << 20, mem_space="device")
        b.add(4, "Recv", peer=0, tag=1, recv_bytes=8 << 20, mem_space="device")
    p = tmp_path / "x.g2g.parquet"
    b.build().write(p)
    return p


def test_values_use_machine_file_units():
    spec = machines.with_sets("lassen", ["node.nic.bw=50GB/s", "mpi.eager_limit=16KiB"])
    d = machines.check(spec)
    # lassen's node.nic.efficiency (0.994, InfiniBand headers) applies to the set rate
    assert d["nic_bw_bytes_per_s"] == 50e9 * 0.994 and d["eager_limit_bytes"] == 16 * 1024
    assert str(spec) == "lassen --set node.nic.bw=50GB/s --set mpi.eager_limit=16KiB"
    assert machines.check(machines.with_sets("lassen", {"mpi.eager_limit": "16KB"}))["eager_limit_bytes"] == 16000


@pytest.mark.parametrize("item, words", [
    ("node.nic.bw=50 furlongs", ["--set node.nic.bw=50 furlongs", "unit"]),
    ("node.nic.bogus=3", ["--set node.nic.bogus=3", "unknown key", "bw"]),
    ("node.nic.bw=3", ["--set node.nic.bw=3", "expected a bandwidth"]),
    ("node.nic.bw=1e30GB/s", ["--set node.nic.bw=1e30GB/s", "above the largest allowed"]),
    ("node.gpus=0", ["--set node.gpus=0", "1..=1024"]),
    ("node.nic=3", ["--set node.nic=3", "table", "node.nic.bw"]),
    ("node.nic.bw", ["KEY=VALUE"]),
    ("name.x=1", ["name is a value"]),
])
def test_invalid_settings_name_the_setting(item, words):
    with pytest.raises(machines.MachineError) as ei:
        machines.with_sets("lassen", [item])
    assert "\n" not in str(ei.value)
    for w in words:
        assert w in str(ei.value), str(ei.value)


def test_a_broken_file_is_reported_with_its_own_line(tmp_path):
    f = tmp_path / "m.toml"
    f.write_text((machines.PRESET_DIR / "lassen.toml").read_text().replace('bw = "12.5GB/s"', 'bw = "12.5 GB"'))
    with pytest.raises(machines.MachineError, match=r"m\.toml:\d+: node\.nic\.bw"):
        machines.with_sets(str(f), ["mpi.eager_limit=1KiB"])


def test_set_changes_the_simulation_and_the_report_says_so(internode):
    base = g2gsim.simulate(internode, "lassen", mode="gpudirect")
    fast = g2gsim.simulate(internode, machines.with_sets("lassen", {"network.link_bw": "50GB/s"}),
                           mode="gpudirect")
    assert fast["total_time_s"] < base["total_time_s"]
    assert fast["machine_set"] == ["network.link_bw=50GB/s"]
    assert "machine_set" not in base


def test_cli_set_equals_a_machine_file_with_the_key(internode, tmp_path):
    text = (machines.PRESET_DIR / "lassen.toml").read_text().replace('link_bw = "12.5GB/s"', 'link_bw = "40GB/s"')
    f = tmp_path / "l40.toml"
    f.write_text(text)
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    cli("simulate", internode, "--machine", "lassen", "--set", "network.link_bw=40GB/s", "--mode", "gpudirect",
        "--no-progress", "--json", a)
    cli("simulate", internode, "--machine", f, "--mode", "gpudirect", "--no-progress", "--json", b)
    ra, rb = json.loads(a.read_text()), json.loads(b.read_text())
    assert ra["total_time_s"] == rb["total_time_s"]
    assert ra["machine_set"] == ["network.link_bw=40GB/s"]
    base = json.loads(cli("simulate", internode, "--mode", "gpudirect", "--no-progress", "--json", tmp_path / "c.json")
                      and (tmp_path / "c.json").read_text())
    assert base["total_time_s"] > ra["total_time_s"]            # the setting mattered


def test_every_machine_command_takes_set():
    for cmd in (["simulate"], ["compare"], ["whatif"], ["map"], ["demo"], ["machine", "show"],
                ["machine", "validate"]):
        assert "--set KEY=VALUE" in cli(*cmd, "--help").stdout, cmd


def test_machine_show_with_set():
    out = cli("machine", "show", "lassen", "--set", "node.nic.bw=50GB/s", "--set", "mpi.eager_limit=64KiB").stdout
    assert str(50e9 * 0.994) in out and "--set node.nic.bw=50GB/s" in out   # x node.nic.efficiency


def test_cli_bad_set_is_one_line():
    p = cli("machine", "show", "lassen", "--set", "node.nic.bw=fast", check=False)
    assert p.returncode != 0 and "Traceback" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and "--set node.nic.bw=fast" in p.stderr


def test_sweep_over_machine_file_keys(tmp_path, internode):
    f = tmp_path / "s.toml"
    f.write_text(f'[sweep]\nname = "s"\nmachines = ["lassen"]\nmodes = ["gpudirect"]\ntraces = ["{internode}"]\n'
                 '[sweep.set]\nnetwork.link_bw = ["12.5GB/s", "50GB/s"]\n"mpi.eager_limit" = ["64KiB"]\n')
    sw = load_sweep(f)
    assert sw.machine_sets == {"network.link_bw": ["12.5GB/s", "50GB/s"], "mpi.eager_limit": ["64KiB"]}
    pts = expand_points(sw, tmp_path)
    assert len(pts) == 2 and len({p["key"] for p in pts}) == 2
    out = tmp_path / "r.parquet"
    r = run_sweep(f, out, workers=1, processes=False, progress=False)
    assert r.failed == 0
    import pandas as pd
    df = pd.read_parquet(out).set_index("network.link_bw")
    assert df.loc["50GB/s", "total_time_s"] < df.loc["12.5GB/s", "total_time_s"]


def test_sweep_bad_set_names_file_and_key(tmp_path, internode):
    f = tmp_path / "s.toml"
    f.write_text(f'[sweep]\ntraces = ["{internode}"]\n[sweep.set]\nnode.nic.bw = ["fast"]\n')
    from g2gsim.analysis.sweep import SweepError
    with pytest.raises(SweepError, match=r"s\.toml: set: machine lassen: --set node\.nic\.bw=fast"):
        load_sweep(f)


def test_presets_are_named_by_what_they_are_and_old_names_still_work():
    for name, path in machines.presets().items():
        assert not name.startswith("seed-"), name
        assert "seed" not in machines.check(name, nodes=1)["description"].lower(), name
    for old, new in machines.RENAMED.items():
        assert new in machines.presets()
        with pytest.warns(machines.PresetRenamed, match=f"'{old}' is now called '{new}'"):
            text, label = machines.resolve(old)
        assert label == f"preset:{new}.toml" and text == machines.presets()[new].read_text()
    p = cli("machine", "show", "seed-juwels")
    assert "juwels-booster-cited" in p.stdout
    assert p.stderr.count("\n") == 1 and "now called 'juwels-booster-cited'" in p.stderr


def test_set_of_an_overridden_key_is_a_notice():
    """node.nic.bw on a fat-tree with network.link_bw reaches no link: a one-line notice, not silence."""
    p = cli("machine", "show", "lassen", "--set", "node.nic.bw=51GB/s")
    assert p.returncode == 0
    lines = [x for x in p.stderr.splitlines() if "changes nothing" in x]
    assert len(lines) == 1 and "--set node.nic.bw=51GB/s" in lines[0] and "network.link_bw" in lines[0]
    q = cli("machine", "show", "lassen", "--set", "network.link_bw=51GB/s")
    assert "changes nothing" not in q.stderr

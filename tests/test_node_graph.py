"""The node as a graph in the presets (issue 25): what `g2gsim machine show` reports for Lassen and
Summit, as built."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from g2gsim import machines

ROOT = Path(__file__).resolve().parents[1]


def test_lassen_and_summit_are_built_as_the_nodes_are():
    for name in ("lassen", "lassen-table1"):
        d = machines.check(name)
        assert d["sockets"] == 2 and d["gpu_socket"] == [0, 0, 1, 1], d
        assert d["inter_socket"] == {"kind": "x-bus", "bw_bytes_per_s": 32e9, "latency_ns": 50.0}
        assert d["cpu_link"] == "nvlink" and d["nic_socket"] == [0]
        assert d["nvlink"] == "Pairs([(0, 1, 75000000000.0), (2, 3, 75000000000.0)])"
    d = machines.check("summit")
    assert d["sockets"] == 2 and d["gpu_socket"] == [0, 0, 0, 1, 1, 1] and d["nic_socket"] == [0, 1]
    assert "(0, 3," not in d["nvlink"] and "(0, 1, 50000000000.0)" in d["nvlink"]
    # a one-socket preset keeps the default
    d = machines.check("h200x4-calibrated")
    assert d["sockets"] == 1 and d["inter_socket"] is None and d["copy_engines"] is None


def test_machine_show_prints_the_graph():
    p = subprocess.run([sys.executable, "-m", "g2gsim.cli", "machine", "show", "lassen"], capture_output=True,
                       text=True, cwd=ROOT, timeout=120)
    assert p.returncode == 0, p.stderr
    for s in ("sockets", "gpu_socket", "inter_socket", "x-bus", "nic_socket"):
        assert s in p.stdout, p.stdout

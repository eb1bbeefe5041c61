"""`g2gsim export --simgrid`: the SimGrid time-independent writer from the command line."""
from __future__ import annotations

import subprocess
import sys

from g2gsim.trace import TraceBuilder


def test_export_simgrid_cli(tmp_path):
    b = TraceBuilder(2, source="test")
    for _ in range(2):
        b.add(0, "Compute", dur_ns=1000)
        b.add(0, "Send", peer=1, tag=1, bytes=4096)
        b.add(1, "Recv", peer=0, tag=1, recv_bytes=4096)
    b.add(0, "Allreduce", bytes=8, recv_bytes=8)
    b.add(1, "Allreduce", bytes=8, recv_bytes=8)
    tr = tmp_path / "pp.g2g.parquet"
    b.build().write(tr)
    out = tmp_path / "sg"
    p = subprocess.run([sys.executable, "-m", "g2gsim.cli", "export", str(tr), "--simgrid", str(out),
                        "--machine", "lassen"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "smpirun" in p.stdout
    r0 = (out / "rank0.txt").read_text().splitlines()
    assert r0[0] == "0 init" and r0[-1] == "0 finalize"
    assert r0.count("0 send 1 1 4096") == 2 and any(l.startswith("0 allreduce 8") for l in r0)
    assert (out / "platform.xml").is_file() and (out / "hostfile.txt").read_text().split() == ["node-0", "node-0"]
    assert len((out / "traces.txt").read_text().split()) == 2


def test_export_simgrid_refuses_what_simgrid_cannot_replay(tmp_path):
    b = TraceBuilder(2, source="test")
    b.add(0, "Send", peer=1, tag=1, bytes=8)
    b.add(1, "Recv", peer=-1, tag=1, recv_bytes=8)      # MPI_ANY_SOURCE
    tr = tmp_path / "any.g2g.parquet"
    b.build().write(tr)
    p = subprocess.run([sys.executable, "-m", "g2gsim.cli", "export", str(tr), "--simgrid",
                        str(tmp_path / "sg")], capture_output=True, text=True, timeout=300)
    assert p.returncode == 1 and "ANY_SOURCE" in p.stderr and "Traceback" not in p.stderr

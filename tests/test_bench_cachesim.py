"""bench/speed/cachesim.py: the counts it reads from cachegrind's summary, the sizes it takes, and
(where valgrind and the core are built) a run of two builds on a small trace."""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "target" / "release" / "g2gsim-core"

SUMMARY = """==8173== I   refs:      14,787,207,207
==8173== I1  misses:            9,641
==8173== D   refs:       5,421,337,102  (3,914,611,245 rd   + 1,506,725,857 wr)
==8173== D1  misses:       159,232,879  (  121,404,565 rd   +    37,828,314 wr)
==8173== LLd misses:        26,716,164  (   20,716,621 rd   +     5,999,543 wr)
==8173== LL misses:         26,866,920  (   20,867,377 rd   +     5,999,543 wr)
"""


def _cachesim():
    sys.path.insert(0, str(ROOT / "bench" / "speed"))
    import cachesim
    return cachesim


def test_counts_are_read_from_the_summary_and_a_missing_one_is_none():
    cs = _cachesim()
    assert cs.parse_counts(SUMMARY) == {"instructions": 14_787_207_207, "D1 misses": 159_232_879,
                                        "LL misses": 26_866_920}
    # LLd is not LL, and a summary without the LL line is no summary
    assert cs.parse_counts(SUMMARY.replace("LL misses:  ", "LLi misses: ")) is None
    assert cs.parse_counts("") is None


def test_sizes_take_units_and_refuse_others():
    cs = _cachesim()
    assert cs.size_bytes("2MiB") == 2 << 20 and cs.size_bytes("512KiB") == 512 << 10
    assert cs.size_bytes("33554432") == 33_554_432
    with pytest.raises(argparse.ArgumentTypeError):
        cs.size_bytes("2MB")


@pytest.mark.skipif(not shutil.which("valgrind") or not CORE.exists(),
                    reason="needs valgrind and target/release/g2gsim-core")
def test_two_runs_of_one_build_count_the_same_instructions_and_report_the_same(tmp_path):
    import g2gsim.generate as g
    trace = tmp_path / "pingpong.g2g.parquet"
    g.generate_to_file("pingpong", 2, trace, iterations=3)
    p = subprocess.run([sys.executable, str(ROOT / "bench" / "speed" / "cachesim.py"), str(CORE), str(CORE),
                        "--trace", str(trace), "--ll", "256KiB"], text=True, capture_output=True, timeout=300)
    assert p.returncode == 0, p.stderr
    # the raw counts of A and B (columns 2 and 3), not the rounded percentage: a difference of
    # 0.005 % prints as "+0.01 %"
    rows = {r.split("|")[1].strip(): [int(r.split("|")[i].strip().replace(",", "")) for i in (2, 3)]
            for r in p.stdout.splitlines() if r.count("|") == 5 and r.split("|")[2].strip()[:1].isdigit()}
    assert set(rows) == {"instructions", "D1 misses", "LL misses"}, p.stdout

    def rel(k):
        a, b = rows[k]
        return abs(b / a - 1)
    # the same instructions to 0.05 % and misses to 1 %: they move a little with where the
    # process's memory lands (its environment, the stack), not with the build; on this 3.5 M
    # instruction ping-pong two runs differ by 30 to 200 instructions (0.001 to 0.006 %)
    assert rel("instructions") < 5e-4, rows
    assert all(rel(k) < 1e-2 for k in ("D1 misses", "LL misses")), rows
    assert "reports (without engine): identical" in p.stdout

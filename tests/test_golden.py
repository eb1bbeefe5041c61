"""Golden results (issue 22): every case of ``tests/golden/`` simulated through the user's entry
point and compared with its expected reports.  The test never writes an expected file: a deliberate
change of results is refreshed with ``make golden-update`` and the diff reviewed
(``tests/golden/README.md``)."""
from __future__ import annotations

import copy
import importlib.util
import json
import math
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "golden"))

import golden  # noqa: E402

CASES = golden.cases()
HAVE_OTF2 = importlib.util.find_spec("otf2") is not None


@pytest.fixture(scope="session")
def inputs(tmp_path_factory) -> golden.Inputs:
    return golden.Inputs(tmp_path_factory.mktemp("golden"))


def _needs_otf2(case: Path) -> bool:
    t = golden.load(case)["trace"]
    return ".otf2" in t.get("path", "")


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_golden(case: Path, inputs: golden.Inputs):
    if _needs_otf2(case) and not HAVE_OTF2:
        pytest.skip("the otf2 package is needed to import this case's OTF2 trace")
    problems = golden.check(case, inputs)
    if problems:
        shown = "\n".join(problems[:60]) + (f"\n... and {len(problems) - 60} more" if len(problems) > 60 else "")
        pytest.fail(f"{case.name}: the simulation no longer gives the expected report "
                    f"({len(problems)} difference(s)):\n{shown}\n"
                    f"If the change is intended: `make golden-update`, then review `git diff tests/golden` "
                    f"(tests/golden/README.md).", pytrace=False)


def test_golden_set_covers_the_modes_and_entry_points():
    specs = [golden.load(c) for c in CASES]
    modes = {m for s in specs for m in s["run"]["modes"]}
    assert modes == set(golden.MODES)
    assert {s["run"]["entry"] for s in specs} == {"api", "cli"}
    for c, s in zip(CASES, specs):
        for m in s["run"]["modes"]:
            assert golden.expected_file(c, m).exists(), f"{c.name}: no expected file for {m}"


def test_comparison_catches_a_change_in_the_last_digit(inputs):
    """The check is exact: one ulp of one rank's time, a count or a missing key is a difference."""
    case = golden.GOLDEN / "halo3d-64-lassen"
    exp = json.loads(golden.expected_file(case, "hostcopy").read_text())
    got = copy.deepcopy(exp)
    assert golden.diff(exp, got) == []
    got["per_rank"][5]["end_s"] = math.nextafter(got["per_rank"][5]["end_s"], math.inf)
    got["p2p_messages"] += 1
    del got["paths"]["hostcopy"]
    d = golden.diff(exp, got)
    assert len(d) == 3, d
    assert any(line.startswith(".per_rank[5].end_s: expected") for line in d)
    assert any(line.startswith(".p2p_messages: expected 1152, got 1153") for line in d)
    assert any(".paths.hostcopy: expected" in line and "missing" in line for line in d)


def test_normalise_drops_only_machine_dependent_fields():
    rep = {"trace": "/tmp/x.parquet", "total_time_s": 1.0,
           "engine": {"wall_s": 0.1, "events_per_s": 1e6, "ops": 5, "links": 3, "build": "pgo"}}
    assert golden.normalise(rep) == {"total_time_s": 1.0, "engine": {"ops": 5, "links": 3}}


def test_expected_files_are_in_the_canonical_format():
    """What `make golden-update` writes, byte for byte: hand edits that reorder keys show here."""
    for c in CASES:
        for f in c.glob("expected.*.json"):
            text = f.read_text()
            assert golden.dumps(json.loads(text)) == text, f"{f}: not in the format golden.dumps writes"

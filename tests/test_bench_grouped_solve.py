"""bench/speed/grouped_solve.py: the grouped exact max-min solve (issue 27's design) gives the
per-flow water-filling's rates after every change, keeps its own invariants, and moves every
flow's bytes to its end; a solve without its check does not."""
from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench" / "speed"))
import grouped_solve as gs  # noqa: E402


def test_water_filling_oracle_on_a_known_case():
    # link 0 (cap 1) carries flows a, b; link 1 (cap 3) carries b, c: a = b = 0.5, c = 2.5
    r = gs.water_fill([1.0, 3.0], {0: (0,), 1: (0, 1), 2: (1,)})
    assert r == pytest.approx({0: 0.5, 1: 0.5, 2: 2.5})


def _random_run(seed: int, net_cls=gs.GroupNet, steps: int = 60, most_links: int = 9, per_step: int = 3,
                rings: int = 0):
    """Random links and paths; each step starts or ends a few flows, then one solve, checked."""
    rng = random.Random(seed)
    nlinks = rng.randint(3, most_links)
    caps = [rng.choice([1.0, 2.0, 3.0, 5.0, 8.0]) for _ in range(nlinks)]
    net = net_cls(caps, rings=rings)
    live: list[int] = []
    nxt = 0
    for step in range(steps):
        now = float(step)
        for _ in range(rng.randint(1, per_step)):
            if live and rng.random() < 0.45:
                f = live.pop(rng.randrange(len(live)))
                net.finish(f, now)
            else:
                path = tuple(sorted(rng.sample(range(nlinks), rng.randint(1, min(4, nlinks)))))
                net.start(nxt, path, 1e6, now)
                live.append(nxt)
                nxt += 1
        net.resolve(now)
        if live:
            net.assert_valid()
            want = gs.water_fill(caps, {f: net.paths[f] for f in live})
            got = net.rates()
            for f in live:
                assert got[f] == pytest.approx(want[f], rel=1e-9), (seed, step, f)
    return net


@pytest.mark.parametrize("rings", [0, 2])
@pytest.mark.parametrize("seed", range(40))
def test_grouped_solve_equals_water_filling_after_every_change(seed, rings):
    # with the check alone finding what U lacks, and with two rings of groups pulled in ahead
    _random_run(seed, rings=rings)


@pytest.mark.parametrize("seed", range(100, 110))
def test_grouped_solve_equals_water_filling_on_larger_networks(seed):
    # more links and more changes per solve: larger U, more rounds, more splits
    _random_run(seed, steps=80, most_links=16, per_step=8)


class NoCheck(gs.GroupNet):
    """The solve with its check switched off: the fixed groups are never revisited."""

    def _check(self, u, staged, dirty):
        return set()


def test_without_the_check_the_rates_are_wrong():
    # the check is what pulls fixed groups into U: without it some run must go wrong
    failures = 0
    for seed in range(40):
        try:
            _random_run(seed, NoCheck)
        except AssertionError:
            failures += 1
    assert failures > 0


def test_alltoall_every_flow_ends_and_every_solve_is_max_min():
    # 8 nodes of 4 GPUs, 4 sends in flight: every solve against the oracle, and every flow's
    # bytes move to its end (the run ends with no flow left)
    net = gs.run_alltoall(8, window=4, max_solves=10**9, check=True, rings=2)
    assert not net.group_of and not net.groups
    assert net.c.solves > 100
    assert net.c.split_moves > 0          # the groups do split (the case the design must handle)
    assert net.c.group_places < net.c.flow_places


def _dump_of_random_changes(path, seed: int, steps: int = 50) -> None:
    """A flow dump in the core's format (crates/g2g-net/src/flow_dump.rs) of random starts, ends
    and slack changes: links that no flow can saturate alone may be declared slack (`K`), and
    bind again (`B`), as the core's slack bits do."""
    rng = random.Random(seed)
    nlinks = rng.randint(4, 10)
    caps = [rng.choice([1.0, 2.0, 3.0, 5.0]) for _ in range(nlinks)]
    # a link of capacity 1e3 never binds: the ones the dump may call slack
    roomy = {l for l in range(1, nlinks) if rng.random() < 0.3}
    for l in roomy:
        caps[l] = 1e3
    lines = [f"L {l} {c:e}" for l, c in enumerate(caps)]
    live: list[int] = []
    slack: set[int] = set()
    nxt = 0
    for step in range(steps):
        t = 1000 * (step + 1)
        for _ in range(rng.randint(1, 3)):
            if live and rng.random() < 0.4:
                lines.append(f"E {live.pop(rng.randrange(len(live)))}")
            else:
                # every path crosses a link that can bind (else its rate is unbounded)
                path_ = set(rng.sample(range(nlinks), rng.randint(1, min(4, nlinks))))
                path_.add(rng.choice([l for l in range(nlinks) if l not in roomy]))
                path_ = sorted(path_)
                lines.append(f"S {t} {nxt} 1e6 " + " ".join(map(str, path_)))
                live.append(nxt)
                nxt += 1
        for l in roomy:
            if rng.random() < 0.3:
                kind = "B" if l in slack else "K"
                slack.symmetric_difference_update({l})
                lines.append(f"{kind} {l}")
        lines.append(f"R {t}")
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("seed", range(10))
def test_replay_of_a_flow_dump_is_max_min_at_every_solve(tmp_path, seed):
    dump = tmp_path / "flows.txt"
    _dump_of_random_changes(dump, seed)
    net = gs.replay(str(dump), rings=2, check_every=1)
    assert net.c.solves > 10
    # the slack links are out of every group's counts
    assert all(not (set(g.cnt) & net.slack) for g in net.groups.values())
    net.assert_valid()


def test_replay_refuses_links_out_of_order(tmp_path):
    dump = tmp_path / "flows.txt"
    dump.write_text("L 1 1e0\nR 0\n")
    with pytest.raises(AssertionError, match="links out of order"):
        gs.replay(str(dump))


# ----------------------------------------------------------------------------- the Rust port
def _flow_replay() -> Path | None:
    """crates/g2g-net/examples/flow_replay, built (quick profile), or None without cargo."""
    import shutil
    import subprocess
    if shutil.which("cargo") is None:
        return None
    subprocess.run(["cargo", "build", "-q", "--profile", "quick", "-p", "g2g-net", "--example", "flow_replay"],
                   cwd=ROOT, check=True)
    return ROOT / "target" / "quick" / "examples" / "flow_replay"


@pytest.fixture(scope="module")
def flow_replay():
    exe = _flow_replay()
    if exe is None:
        pytest.skip("no cargo on PATH")
    return exe


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("rings", [0, 2])
def test_the_rust_port_is_max_min_at_every_solve_and_does_the_specifications_work(tmp_path, flow_replay, seed, rings):
    """crates/g2g-net/src/grouped.rs replays the same dump: its rates equal the per-flow solve's
    (FlowNet, exact max-min) at every solve (`--check-every 1`: the example exits non-zero on a
    difference), and it does this file's work: the same solves, and groups, flows and moves in U
    within a tenth (ties between equal groups are broken in another order, so which group is kept
    may differ)."""
    import json
    import subprocess
    dump = tmp_path / "flows.txt"
    _dump_of_random_changes(dump, seed, steps=80)
    out = subprocess.run([str(flow_replay), str(dump), "--net", "grouped", "--rings", str(rings),
                          "--check-every", "1", "--json"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.splitlines()[-1])
    assert got["checked"] == got["solves"] > 10
    net = gs.replay(str(dump), rings=rings)
    c = got["counts"]
    assert c["solves"] == net.c.solves
    for k in ("groups_in_u", "flows_in_u", "rerated_flows"):
        assert abs(c[k] - getattr(net.c, k)) <= 0.1 * getattr(net.c, k) + 2, (k, c[k], getattr(net.c, k))


def test_the_rust_replay_names_the_line_it_cannot_read(tmp_path, flow_replay):
    import subprocess
    dump = tmp_path / "flows.txt"
    dump.write_text("L 0 1e0\nS 0 0 1e3 0 7\nR 0\n")
    out = subprocess.run([str(flow_replay), str(dump)], capture_output=True, text=True)
    assert out.returncode == 2
    assert "flows.txt:2" in out.stderr and "not written before" in out.stderr

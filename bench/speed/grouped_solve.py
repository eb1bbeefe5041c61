#!/usr/bin/env python3
"""An executable specification of the grouped exact max-min solve (issue 27), and what it visits.

The core's incremental solve (`crates/g2g-net/src/lmm.rs`) re-rates flow by flow.  On the
1,024-rank all-to-all about 215 flows change rate per solve, and they do so in two or three
groups: every flow rated at one bottleneck link gets the same rate (docs/scaling.md, fifth and
twenty-eighth steps).  The design sketched there keeps those groups between solves and solves
over groups.  This file is that design written out in plain Python, small enough to read and
checked against a per-flow water-filling after every solve, so that the Rust port has its rules
and an oracle.  It is not the simulator: it replays no trace and is slow.

State (`GroupNet`):

* every live flow is in one group; every flow of a group has the group's rate;
* a group is keyed by a link, its flows' common bottleneck; it keeps its members, the count of
  its members on each link that can bind (`cnt`), its rate, and a service clock: the bytes each
  member has moved since it joined are `S - s0`, the same for all members, so a member's end is
  a target on `S` and the group has one next completion, its least target;
* each link keeps, for each group crossing it, how many of the group's flows cross it (`lg`);
  its load is the sum of count times rate.

A valid state (the max-min condition, per group): every link's load is at most its capacity, and
each group's key link is saturated with no faster group on it.  Then the key is a bottleneck of
every member at once.

A solve, after flows started and ended (`resolve`), in rounds over a set U of groups:

1. U: the new flows' groups of one; the groups keyed at a link of an ended flow (that link lost
   load); the groups on a saturated link of a new flow (it takes capacity there).
2. The filling runs over U's groups on R (the links U's groups cross, and the ended flows'
   links), with the capacity the fixed groups leave.  At each level the link of least fair share
   fixes every U flow crossing it: a U group whose members all cross it is rated whole; one whose
   members cross it only in part is *split* (the members crossing it leave, flow by flow: the
   per-flow work that is left).  The parts fixed at one level and link merge into one group
   keyed at that link (the smaller's members move: flow by flow too).
3. The check: each U group's key has no faster fixed group; each fixed group keyed at an R link
   still has a saturated key with no faster group.  Groups that fail, and the faster fixed
   groups on a failing U group's saturated links, join U; then the next round (U only grows, so
   the rounds end: at worst U is every group and the check has nothing left to fail).
4. The commit: a group whose rate changed moves its clock to now, updates its links' loads by
   count times the change, and gets one completion event at its least target.

Work is counted in the units both designs share: a *place* is a (flow, link) or (group, link)
entry a solve reads; a *move* is a flow leaving one group for another (splits, merges).  The
per-flow figures beside them are what the flow-by-flow solve would read for the same change: the
flows of U's groups times their links that can bind.

    python3 bench/speed/grouped_solve.py                      # all-to-all, 256 nodes of 4 GPUs
    python3 bench/speed/grouped_solve.py --nodes 32 --check   # small, each solve against the oracle

Tests: tests/test_bench_grouped_solve.py (random networks, starts and ends, against the oracle).
"""
from __future__ import annotations

import argparse
import heapq
import itertools
import sys
from dataclasses import dataclass, field

EPS = 1e-9


# ----------------------------------------------------------------------------- the oracle
def water_fill(caps: list[float], paths: dict[int, tuple[int, ...]]) -> dict[int, float]:
    """Per-flow max-min rates by progressive filling over every flow: the oracle."""
    rem = list(caps)
    n = [0] * len(caps)
    on: list[list[int]] = [[] for _ in caps]
    for f, p in paths.items():
        for l in p:
            n[l] += 1
            on[l].append(f)
    rate: dict[int, float] = {}
    live = {l for l in range(len(caps)) if n[l]}
    while live:
        l = min(live, key=lambda k: (rem[k] / n[k], k))
        lam = max(rem[l] / n[l], 0.0)
        for f in on[l]:
            if f in rate:
                continue
            rate[f] = lam
            for k in paths[f]:
                rem[k] -= lam
                n[k] -= 1
                if n[k] == 0:
                    live.discard(k)
    return rate


# ----------------------------------------------------------------------------- the grouped net
@dataclass
class Group:
    gid: int
    rate: float = 0.0
    key: int | None = None
    members: set[int] = field(default_factory=set)
    cnt: dict[int, int] = field(default_factory=dict)
    S: float = 0.0      # bytes each member has moved since the clock began
    t: float = 0.0      # time (ns) the clock was last moved to
    version: int = 0


@dataclass
class Counts:
    solves: int = 0
    rounds: int = 0
    groups_in_u: int = 0
    flows_in_u: int = 0
    u_places: int = 0          # U's groups times their links that can bind (as flow_places, per group)
    group_places: int = 0      # (group, link) entries read by the filling, the check and the commit
    link_scans: int = 0        # groups read on links' group lists (the check, the pulls)
    moves: int = 0             # flows moved between groups (splits, merges)
    split_moves: int = 0       # of which a group's members crossing a level's link (or the rest) leaving it
    merge_moves: int = 0       # of which a whole group's members merging into the level's group
    join_moves: int = 0        # of which a new flow (a group of one) merging into a group
    moves_in_failed_rounds: int = 0   # of all moves, those of rounds whose check failed
    key_changes: int = 0       # flows of U whose key link changed (measured: the least moves any
                               # grouping by bottleneck link must make)
    rerated_groups: int = 0
    rerated_flows: int = 0
    flow_places: int = 0       # what the flow-by-flow solve reads: U's flows times their links

    def per_solve(self) -> dict[str, float]:
        s = max(self.solves, 1)
        return {k: v / s for k, v in self.__dict__.items() if k != "solves"}


class GroupNet:
    """Flows over links of given capacities (bytes per ns), rated by exact max-min over groups.

    ``slack`` names links that can never bind (as the core's slack links): they are in no
    group's counts, and the oracle is run without them."""

    def __init__(self, caps: list[float], slack: set[int] | frozenset[int] = frozenset(), rings: int = 0):
        self.cap = list(caps)
        self.rings = rings
        self.slack = set(slack)
        self.lg: list[dict[int, int]] = [dict() for _ in caps]
        self.load = [0.0] * len(caps)
        self.groups: dict[int, Group] = {}
        self.paths: dict[int, tuple[int, ...]] = {}
        self.group_of: dict[int, int] = {}
        self.target: dict[int, float] = {}       # flow -> its group's S at which it ends
        self.new: list[int] = []                 # groups of flows started since the last solve
        self.dirty: set[int] = set()             # links that lost load since the last solve
        self.gids = itertools.count()
        self.now = 0.0
        self.on: list[set[int]] = [set() for _ in caps]     # per link, its flows
        self.pull: set[int] = set()                         # groups to re-rate (slack changes)
        self.last_key: dict[int, int | None] = {}
        self.c = Counts()

    # -- bookkeeping -------------------------------------------------------------------------
    def _binding(self, path) -> list[int]:
        return [l for l in path if l not in self.slack]

    def _advance(self, g: Group, now: float) -> None:
        g.S += g.rate * (now - g.t)
        g.t = now

    def add_link(self, cap: float) -> None:
        self.cap.append(cap)
        self.lg.append({})
        self.load.append(0.0)
        self.on.append(set())

    def set_slack(self, l: int, slack: bool) -> None:
        """Link l becomes slack (it cannot bind: out of every group's counts) or stops being
        slack (into the counts of its flows' groups).  A group keyed at a link that turns slack,
        and the groups on a saturated link that stops being slack, are re-rated at the next solve."""
        if slack == (l in self.slack):
            return
        if slack:
            self.pull.update(h for h in self.lg[l] if self.groups[h].key == l)
            for gid, n in list(self.lg[l].items()):
                g = self.groups[gid]
                g.cnt[l] -= n
                if g.cnt[l] == 0:
                    del g.cnt[l]
            self.lg[l].clear()
            self.load[l] = 0.0
            self.slack.add(l)
        else:
            self.slack.discard(l)
            for f in self.on[l]:
                g = self.groups[self.group_of[f]]
                g.cnt[l] = g.cnt.get(l, 0) + 1
                self.lg[l][g.gid] = self.lg[l].get(g.gid, 0) + 1
                self.load[l] += g.rate
            if self._saturated(l):
                self.pull.update(self.lg[l])
            self.dirty.add(l)

    def _attach(self, g: Group, f: int) -> None:
        g.members.add(f)
        self.group_of[f] = g.gid
        for l in self._binding(self.paths[f]):
            g.cnt[l] = g.cnt.get(l, 0) + 1
            self.lg[l][g.gid] = self.lg[l].get(g.gid, 0) + 1
            self.load[l] += g.rate

    def _detach(self, g: Group, f: int) -> None:
        g.members.discard(f)
        for l in self._binding(self.paths[f]):
            g.cnt[l] -= 1
            if g.cnt[l] == 0:
                del g.cnt[l]
            self.lg[l][g.gid] -= 1
            if self.lg[l][g.gid] == 0:
                del self.lg[l][g.gid]
            self.load[l] -= g.rate

    def _move(self, f: int, src: Group, dst: Group) -> None:
        """f leaves src for dst, with its bytes left (both clocks are moved to the solve's now)."""
        self._advance(src, self.now)
        self._advance(dst, self.now)
        left = self.target[f] - src.S
        self._detach(src, f)
        self._attach(dst, f)
        self.target[f] = dst.S + left
        self.c.moves += 1

    def rates(self) -> dict[int, float]:
        return {f: self.groups[g].rate for f, g in self.group_of.items()}

    # -- changes -----------------------------------------------------------------------------
    def start(self, f: int, path: tuple[int, ...], nbytes: float, now: float) -> None:
        g = Group(next(self.gids), t=now)
        self.groups[g.gid] = g
        self.paths[f] = tuple(path)
        for l in self.paths[f]:
            self.on[l].add(f)
        self.target[f] = nbytes
        self._attach(g, f)
        self.new.append(g.gid)

    def finish(self, f: int, now: float) -> None:
        g = self.groups[self.group_of.pop(f)]
        self._advance(g, now)
        for l in self._binding(self.paths[f]):
            self.dirty.add(l)
        self._detach(g, f)
        for l in self.paths[f]:
            self.on[l].discard(f)
        del self.target[f], self.paths[f]
        self.last_key.pop(f, None)
        if not g.members:
            del self.groups[g.gid]

    def bytes_left(self, f: int, now: float) -> float:
        g = self.groups[self.group_of[f]]
        return self.target[f] - (g.S + g.rate * (now - g.t))

    def next_finish(self, g: Group) -> tuple[float, int] | None:
        """The group's next completion: (time, flow) of its least target."""
        if not g.members or g.rate <= 0:
            return None
        f = min(g.members, key=lambda m: (self.target[m], m))
        return g.t + max(self.target[f] - g.S, 0.0) / g.rate, f

    # -- the solve ---------------------------------------------------------------------------
    def _saturated(self, l: int, load: float | None = None) -> bool:
        return (self.load[l] if load is None else load) >= self.cap[l] * (1 - EPS)

    def resolve(self, now: float) -> list[Group]:
        """Re-rates what the changes since the last solve affect; returns U's groups (each needs
        a new completion event: its rate or its members changed)."""
        c = self.c
        u: set[int] = set()
        for gid in self.new:
            if gid in self.groups:
                u.add(gid)
                g = self.groups[gid]
                for l in g.cnt:
                    if self._saturated(l):
                        c.link_scans += len(self.lg[l])
                        u.update(self.lg[l])
        for l in self.dirty:
            c.link_scans += len(self.lg[l])
            u.update(h for h in self.lg[l] if self.groups[h].key == l)
        u.update(h for h in self.pull if h in self.groups)
        self.pull.clear()
        for _ in range(self.rings):
            # a ring ahead: the groups keyed at a saturated link of U's groups join U now (U's
            # rates will change there), where the check would pull them a round later
            ring = set()
            for gid in u:
                for l in self.groups[gid].cnt:
                    if self._saturated(l):
                        c.link_scans += len(self.lg[l])
                        ring.update(h for h in self.lg[l] if self.groups[h].key == l)
            u |= ring
        dirty = set(self.dirty)
        self.new.clear()
        self.dirty.clear()
        if not u:
            return []
        c.solves += 1
        self.now = now
        while True:
            c.rounds += 1
            moved = c.moves
            staged = self._fill(u, dirty)
            more = self._check(u, staged, dirty)
            if not more:
                break
            c.moves_in_failed_rounds += c.moves - moved
            u |= more
        # the commit: every U group gets a new event (a group that changed members may have a new
        # least target even at the same rate); loads move only where the rate did
        changed = []
        c.groups_in_u += len(u)
        for gid in sorted(u):
            g = self.groups[gid]
            for f in g.members:
                if self.last_key.get(f, g.key) != g.key:
                    c.key_changes += 1
                self.last_key[f] = g.key
            c.flows_in_u += len(g.members)
            c.flow_places += sum(g.cnt.values())
            c.u_places += len(g.cnt)
            r = staged[gid]
            self._advance(g, now)
            if r != g.rate:
                c.group_places += len(g.cnt)
                for l, n in g.cnt.items():
                    self.load[l] += n * (r - g.rate)
                g.rate = r
                c.rerated_groups += 1
                c.rerated_flows += len(g.members)
            g.version += 1
            changed.append(g)
        return changed

    def _fill(self, u: set[int], dirty: set[int]) -> dict[int, float]:
        """The filling over U's groups (splitting and merging them): their new rates, staged."""
        c = self.c
        groups, lg = self.groups, self.lg
        r_links = set(dirty)
        for gid in u:
            r_links.update(groups[gid].cnt)
            c.group_places += len(groups[gid].cnt)
        rem, n = {}, {}
        for l in r_links:
            fixed = sum(k * groups[h].rate for h, k in lg[l].items() if h not in u)
            c.link_scans += len(lg[l])
            rem[l] = self.cap[l] - fixed
            n[l] = sum(k for h, k in lg[l].items() if h in u)
        live = {l for l in r_links if n[l] > 0}
        unfixed = set(u)
        staged: dict[int, float] = {}
        while unfixed:
            assert live, "a flow without a link that can bind"
            l = min(live, key=lambda k: (rem[k] / n[k], k))
            lam = max(rem[l] / n[l], 0.0)
            # one group per (link, level): the whole groups merge into the largest of them, a
            # group crossing l mostly leaves its other members behind, one crossing it little
            # sends its crossing members straight to that group
            cands = [groups[h] for h in lg[l] if h in unfixed]
            c.link_scans += len(lg[l])
            whole, minority = [], []
            for g in cands:
                k = lg[l][g.gid]
                if k == len(g.members):
                    whole.append(g)
                elif 2 * k > len(g.members):
                    rest = self._split_off(g, l)
                    u.add(rest.gid)
                    unfixed.add(rest.gid)
                    whole.append(g)
                else:
                    minority.append(g)
            if whole:
                top = max(whole, key=lambda g: (len(g.members), -g.gid))
            else:
                top = Group(next(self.gids), rate=minority[0].rate, t=self.now)
                groups[top.gid] = top
                u.add(top.gid)
            for g in minority:
                for f in sorted(g.members):
                    if l in self.paths[f]:
                        self._move(f, g, top)
                        c.split_moves += 1
            for g in whole:
                if g is top:
                    continue
                if len(g.members) == 1 and g.key is None:
                    c.join_moves += 1
                else:
                    c.merge_moves += len(g.members)
                for f in sorted(g.members):
                    self._move(f, g, top)
                u.discard(g.gid)
                unfixed.discard(g.gid)
                del groups[g.gid]
            unfixed.discard(top.gid)
            for k, m in top.cnt.items():
                rem[k] -= m * lam
                n[k] -= m
                if n[k] == 0:
                    live.discard(k)
            c.group_places += len(top.cnt)
            top.key = l
            staged[top.gid] = lam
        return staged

    def _split_off(self, g: Group, l: int) -> Group:
        """g's members that do not cross l leave it for a new group (same rate and clock)."""
        h = Group(next(self.gids), rate=g.rate, S=g.S, t=g.t, key=g.key)
        self.groups[h.gid] = h
        for f in sorted(g.members):
            if l not in self.paths[f]:
                self._move(f, g, h)
                self.c.split_moves += 1
        return h

    def _check(self, u: set[int], staged: dict[int, float], dirty: set[int]) -> set[int]:
        """The groups that must join U, or none: the staged rates are then max-min."""
        c = self.c
        groups, lg = self.groups, self.lg

        def rate(h: int) -> float:
            return staged[h] if h in u else groups[h].rate

        new_load: dict[int, float] = {}

        def load(l: int) -> float:
            if l not in new_load:
                new_load[l] = sum(k * rate(h) for h, k in lg[l].items())
                c.link_scans += len(lg[l])
            return new_load[l]

        more: set[int] = set()
        for gid in u:
            g = groups[gid]
            r = staged[gid]
            key = g.key
            faster = [h for h in lg[key] if h not in u and groups[h].rate > r * (1 + EPS)]
            c.link_scans += len(lg[key])
            if not faster and self._saturated(key, load(key)):
                continue
            # a faster fixed group shares one of its saturated links: it joins U
            for l in g.cnt:
                if self._saturated(l, load(l)):
                    more.update(h for h in lg[l] if h not in u and groups[h].rate > r * (1 + EPS))
                    c.link_scans += len(lg[l])
            c.group_places += len(g.cnt)
        r_links = set(dirty)
        for gid in u:
            r_links.update(groups[gid].cnt)
        for l in r_links:
            keyed = [h for h in lg[l] if h not in u and groups[h].key == l]
            c.link_scans += len(lg[l])
            if not keyed:
                continue
            top = max(rate(h) for h in lg[l])
            for h in keyed:
                if not self._saturated(l, load(l)) or top > groups[h].rate * (1 + EPS):
                    more.add(h)
        return more - u

    def assert_valid(self) -> None:
        """The state's own invariants (counts, loads, the max-min condition per group)."""
        for l in range(len(self.cap)):
            want: dict[int, int] = {}
            for f, gid in self.group_of.items():
                if l in self.paths[f] and l not in self.slack:
                    want[gid] = want.get(gid, 0) + 1
            assert self.lg[l] == want, (l, self.lg[l], want)
            ld = sum(k * self.groups[h].rate for h, k in want.items())
            assert abs(ld - self.load[l]) <= 1e-9 * max(self.cap[l], 1.0), (l, ld, self.load[l])
            assert ld <= self.cap[l] * (1 + 1e-7), (l, ld, self.cap[l])
        for g in self.groups.values():
            assert g.members, g.gid
            assert g.key is not None and all(g.key in self.paths[f] for f in g.members), g.gid
            assert self._saturated(g.key), (g.gid, g.key)
            top = max(self.groups[h].rate for h in self.lg[g.key])
            assert top <= g.rate * (1 + 1e-7), (g.gid, top, g.rate)


# ----------------------------------------------------------------------------- an all-to-all
def alltoall_network(nodes: int, gpus: int = 4, nic_gb_s: float = 12.5, gpu_gb_s: float = 16.0,
                     nvlink_gb_s: float = 50.0):
    """Links (bytes per ns = GB/s) of a machine of `nodes` nodes of `gpus` GPUs: per node a NIC
    up and down, per GPU a link up and down to the NIC (slack: only that GPU's flows cross it,
    and they all cross the slower NIC too), per ordered GPU pair of a node an NVLink; a
    non-blocking switch between the NICs.  Returns (caps, slack, path_of(src, dst))."""
    caps: list[float] = []
    slack: set[int] = set()

    def link(bw: float, is_slack: bool = False) -> int:
        caps.append(bw)
        if is_slack:
            slack.add(len(caps) - 1)
        return len(caps) - 1
    nic_up = [link(nic_gb_s) for _ in range(nodes)]
    nic_dn = [link(nic_gb_s) for _ in range(nodes)]
    g_up = [link(gpu_gb_s, True) for _ in range(nodes * gpus)]
    g_dn = [link(gpu_gb_s, True) for _ in range(nodes * gpus)]
    nv = {(a, b): link(nvlink_gb_s) for n in range(nodes) for a in range(n * gpus, (n + 1) * gpus)
          for b in range(n * gpus, (n + 1) * gpus) if a != b}

    def path(a: int, b: int) -> tuple[int, ...]:
        if a // gpus == b // gpus:
            return (nv[(a, b)],)
        return (g_up[a], nic_up[a // gpus], nic_dn[b // gpus], g_dn[b])
    return caps, slack, path


def run_alltoall(nodes: int, gpus: int = 4, window: int = 32, block_bytes: float = 65536.0,
                 post_ns: float = 300.0, max_solves: int = 3000, check: bool = False,
                 rings: int = 0) -> GroupNet:
    """Every rank sends one block to each other rank, `window` in flight, peers in MPICH's order
    (r+1, r+2, ...); a rank posts one send every `post_ns` (its call overhead: the first window
    at 0, `post_ns`, ..., after a skew of up to 1 us per rank; then one `post_ns` after each of
    its sends ends), so that ends are staggered as in a traced run.  Runs until `max_solves` solves, and counts the work of the
    solves after the first `warmup`."""
    caps, slack, path = alltoall_network(nodes, gpus)
    p = nodes * gpus
    net = GroupNet(caps, slack, rings)
    nxt = [1] * p                      # next peer offset of each rank
    fid = itertools.count()
    owner: dict[int, int] = {}
    ev: list[tuple[float, int, int, int]] = []   # (time, seq, gid or -1 - rank, version)
    seq = itertools.count()

    def schedule(changed: list[Group]) -> None:
        for g in changed:
            nf = net.next_finish(g)
            if nf is not None:
                heapq.heappush(ev, (nf[0], next(seq), g.gid, g.version))

    def post(r: int, at: float) -> None:
        heapq.heappush(ev, (at, next(seq), -1 - r, 0))

    for r in range(p):
        skew = (r * 2654435761) % 1000      # ranks enter the call at different times (ns)
        for k in range(min(window, p - 1)):
            post(r, skew + k * post_ns)
    warm = 1000 + window * post_ns
    while ev and (warm is not None or net.c.solves < max_solves):
        now = ev[0][0]
        if warm is not None and now > warm:
            net.c = Counts()
            warm = None
        while ev and ev[0][0] == now:        # every event of this instant, then one solve
            _, _, who, version = heapq.heappop(ev)
            if who < 0:
                r = -1 - who
                if nxt[r] < p:
                    f = next(fid)
                    owner[f] = r
                    net.start(f, path(r, (r + nxt[r]) % p), block_bytes, now)
                    nxt[r] += 1
                continue
            g = net.groups.get(who)
            if g is None or g.version != version:
                continue
            net._advance(g, now)
            done = [f for f in g.members if net.target[f] - g.S <= 1e-6 * block_bytes]
            for f in sorted(done):
                net.finish(f, now)
                post(owner.pop(f), now + post_ns)
            if not done:
                schedule([g])             # its least target left it (a member moved)
        schedule(net.resolve(now))
        if check:
            net.assert_valid()
            want = water_fill(caps, {f: net.paths[f] for f in net.group_of})
            got = net.rates()
            assert all(abs(got[f] - want[f]) <= 1e-9 * want[f] for f in want), "rates differ"
    return net


def replay(path: str, rings: int = 0, skip: int = 0, max_solves: int | None = None,
           check_every: int = 0) -> GroupNet:
    """Replays a flow dump of the core (`crates/g2g-net/src/flow_dump.rs`: its links, and its
    flows' starts and ends between solves) through the grouped solve.  The ends are the core's
    (its rates are max-min, as these are), so the grouped solve sees the traced run's own changes.
    The core's slack links (`K`, `B` lines) are out of the groups' counts, as out of its solves.
    Counts the solves after the first `skip`."""
    caps: list[float] = []
    net: GroupNet | None = None
    changes: list[tuple[int, tuple[int, ...] | None, float, float]] = []   # starts, and ends (None)
    slack_changes: list[tuple[int, bool]] = []
    seen = 0
    with open(path) as fh:
        for line in fh:
            kind = line[0]
            if kind == "L":
                _, l, cap = line.split()
                assert int(l) == len(caps), f"{path}: links out of order at {line.strip()!r}"
                caps.append(float(cap))
                if net is not None:
                    net.add_link(float(cap))
            elif kind == "S":
                parts = line.split()
                changes.append((int(parts[2]), tuple(int(x) for x in parts[4:]), float(parts[3]), float(parts[1])))
            elif kind == "E":
                changes.append((int(line.split()[1]), None, 0.0, 0.0))
            elif kind in "KB":
                slack_changes.append((int(line.split()[1]), kind == "K"))
            elif kind == "R":
                now = float(line.split()[1])
                if net is None:
                    net = GroupNet(caps, rings=rings)
                # starts and ends in the file's order (a slot's id is reused after its end)
                for f, links, nbytes, t in changes:
                    if links is None:
                        net.finish(f, now)
                    else:
                        net.start(f, links, nbytes, t)
                for l, slack in slack_changes:
                    net.set_slack(l, slack)
                changes.clear()
                slack_changes.clear()
                before = net.c.solves
                net.resolve(now)
                if net.c.solves > before:
                    seen += 1
                    if seen == skip:
                        net.c = Counts()
                    if check_every and seen % check_every == 0 and net.group_of:
                        want = water_fill(net.cap, {f: net.paths[f] for f in net.group_of})
                        got = net.rates()
                        bad = [f for f in want if abs(got[f] - want[f]) > 1e-9 * want[f]]
                        assert not bad, f"{path}: solve {seen} at t={now:.0f} ns: rates differ for flows {bad[:5]}"
                if max_solves is not None and net.c.solves >= max_solves and seen > skip:
                    break
    assert net is not None, f"{path}: no solve in the dump"
    return net


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nodes", type=int, default=256)
    ap.add_argument("--window", type=int, default=32)
    ap.add_argument("--solves", type=int, default=2000)
    ap.add_argument("--rings", type=int, default=0,
                    help="rings of groups pulled into U ahead of the first round (0: the check finds them)")
    ap.add_argument("--check", action="store_true", help="check every solve against the oracle (slow)")
    ap.add_argument("--replay", metavar="DUMP", help="replay a flow dump of the core (G2G_FLOW_DUMP) instead")
    ap.add_argument("--skip", type=int, default=0, help="with --replay: solves not counted at the start")
    ap.add_argument("--check-every", type=int, default=0, help="with --replay: every Nth solve against the oracle")
    a = ap.parse_args(argv)
    if a.replay:
        net = replay(a.replay, a.rings, a.skip, a.solves, a.check_every)
        print(f"{a.replay}: {a.rings} rings ahead; {net.c.solves} solves counted after {a.skip}, "
              f"{len(net.groups)} groups over {len(net.group_of)} flows at the end")
    else:
        net = run_alltoall(a.nodes, window=a.window, max_solves=a.solves, check=a.check, rings=a.rings)
        print(f"all-to-all, {a.nodes} nodes of 4 GPUs, {a.window} sends in flight per rank: "
              f"{a.rings} rings ahead; {net.c.solves} solves counted, {len(net.groups)} groups over "
              f"{len(net.group_of)} flows at the end")
    print("| per solve | value |")
    print("|---|---|")
    for k, v in net.c.per_solve().items():
        print(f"| {k} | {v:,.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

//! The grouped exact max-min solve (issue 27): `bench/speed/grouped_solve.py`'s specification in
//! Rust, beside the per-flow solve of `lmm.rs` (`examples/flow_replay.rs` replays a flow dump of
//! the core through both).  In the replay it runs behind `completion.rs`'s calls where
//! `solver.rs` hands it the flows (exact max-min's default, `Solver::Auto`, does where changes
//! move many flows at one rate), or throughout (`g2gsim-core --solver grouped`, or `--sharing
//! max-min-grouped` for study).  A finish is rounded up to the ns as the per-flow net rounds it
//! (`ceil_tol`), so the two give the same finish times, not only the same rates.
//!
//! Every live flow is in one group; every flow of a group has the group's rate.  A group is keyed
//! by a link, its members' common bottleneck; it keeps how many of its members cross each link
//! that can bind (`cnt`), and a service clock: the bytes each member has moved since it joined are
//! `s - s0`, the same for all of them, so that a member's end is a target on `s` and the group
//! has one next completion, its least target (a heap per group).  Each link keeps, per group
//! crossing it, how many of the group's flows cross it (`lg`), and its load.
//!
//! A solve (`resolve`) gathers a set U of groups (new flows' groups; groups keyed at a link of an
//! ended flow; groups on a saturated link of a new flow; `rings` rings of groups keyed at a
//! saturated link of U's groups), then runs rounds of a progressive filling over U's groups, with
//! splits and merges, and a check; groups that fail the check join U for another round.  The
//! rules and their reasons are in the Python file's docstring; this file follows it step by step,
//! with the same names.  The rates are f64 with the same tolerance as the specification's
//! (`EPS`): tests compare them with `max-min-full` to 1e-9, and the ends of flows driven through
//! the completion calls to the ns (`completion.rs`, `solver.rs`).
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use smallvec::SmallVec;

/// The specification's tolerance on saturation and on "faster"
const EPS: f64 = 1e-9;
const NONE: u32 = u32::MAX;
/// The links of a path whose places in their flow lists `GroupNet::lpos` keeps
const LPOS: usize = 8;

/// (group -> count), for the invariants' check
type Map = HashMap<u32, u32>;

/// A flow: its group, its path, its end as a target on its group's clock
#[derive(Default, Clone)]
struct GFlow {
    /// NONE when the slot is free
    group: u32,
    /// its place in the group's members
    mpos: u32,
    /// counts its joins, so that its group's heap can tell a stale entry
    epoch: u32,
    /// the group's clock value at which it ends
    target: f64,
    links: SmallVec<[u32; 8]>,
    /// its place in the flow list (`on`) of each of its links past the first `LPOS` (theirs are
    /// in `GroupNet::lpos`)
    lpos_more: SmallVec<[u32; 2]>,
}

#[derive(Default)]
struct Group {
    live: bool,
    /// bytes per ns
    rate: f64,
    key: u32,
    members: Vec<u32>,
    /// (binding link, members crossing it, the group's place in the link's `lg`); the link's
    /// entry for the group names this one's place back
    cnt: Vec<(u32, u32, u32)>,
    /// the clock: bytes each member has moved, as of time `t` (ns)
    s: f64,
    t: f64,
    /// its completion event's generation: an event of another is stale
    version: u32,
    /// the finish (ns) its pending completion event is set for, or infinity: a solve that leaves
    /// its finish at or after it sets none (the event re-arms when it fires: `due`)
    pend: f64,
    /// (target, flow, epoch), least first; entries of flows that left are dropped when met
    ends: BinaryHeap<Reverse<(u64, u32, u32)>>,
}

/// What the solves did, summed (the specification's `Counts`, the ones a port can keep cheaply)
#[derive(Default, Clone, Debug)]
pub struct GroupCounts {
    pub solves: u64,
    pub rounds: u64,
    pub groups_in_u: u64,
    pub flows_in_u: u64,
    pub moves: u64,
    pub rerated_groups: u64,
    pub rerated_flows: u64,
}

/// One group's next completion after a solve: its least target, at `finish_ns`
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GroupEnd {
    pub group: u32,
    pub flow: u32,
    pub finish_ns: f64,
    pub version: u32,
}

/// What a group's completion event finds (`GroupNet::due`)
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum GroupDue {
    Stale,
    /// its least-target member is not done: its finish, ns
    Later(f64),
    /// this member is done: `finish` it
    Done(u32),
}

/// Flows over links, rated by exact max-min over groups (module docs).
#[derive(Default)]
pub struct GroupNet {
    cap: Vec<f64>,
    slack: Vec<bool>,
    /// per link: (group, its members crossing the link, the link's place in the group's `cnt`)
    lg: Vec<SmallVec<[(u32, u32, u32); 4]>>,
    load: Vec<f64>,
    /// per link, its flows: (flow, the link's place in the flow's path)
    on: Vec<Vec<(u32, u32)>>,
    /// per flow, its place in `on` of each of its first `LPOS` links: a table of its own, so that
    /// the flow that takes an ended one's place is told without reading its record
    lpos: Vec<[u32; LPOS]>,
    flows: Vec<GFlow>,
    free_flows: Vec<u32>,
    groups: Vec<Group>,
    free_groups: Vec<u32>,
    /// groups freed in a solve, reused only after it
    freed_in_solve: Vec<u32>,
    /// groups of flows started since the last solve
    new: Vec<u32>,
    /// links that lost load since the last solve
    dirty: Vec<u32>,
    is_dirty: Vec<bool>,
    /// groups to re-rate at the next solve (slack changes)
    pull: Vec<u32>,
    pub rings: usize,
    now: f64,
    // the solve's scratch
    u: Vec<u32>,
    in_u: Vec<u32>,
    ustamp: u32,
    fixed_at: Vec<u32>,
    round: u32,
    staged: Vec<f64>,
    rl: Vec<u32>,
    rmark: Vec<u32>,
    rstamp: u32,
    rem: Vec<f64>,
    nn: Vec<u32>,
    /// the filling's links by fair share
    heap: LinkHeap,
    ld: Vec<f64>,
    ldmark: Vec<u32>,
    ldstamp: u32,
    more: Vec<u32>,
    pub counts: GroupCounts,
    /// ns spent in the solves' parts, when `time_phases`: gathering U, the fillings, the checks,
    /// the commits
    pub phase_ns: [u64; 4],
    pub time_phases: bool,
}

/// The filling's links by (fair share's bits, link), least first, with each link's place kept so
/// that a link's share is updated in place: one entry per link, none stale (a fixing moves the
/// shares of all the links of its group, and a heap of pushed copies grew by as many).
#[derive(Default)]
struct LinkHeap {
    h: Vec<(u64, u32)>,
    /// per link, its place in `h`, or NONE
    pos: Vec<u32>,
}

impl LinkHeap {
    fn clear(&mut self) {
        for &(_, l) in &self.h {
            self.pos[l as usize] = NONE;
        }
        self.h.clear();
    }

    fn peek(&self) -> Option<(u64, u32)> {
        self.h.first().copied()
    }

    fn place(&mut self, i: usize) {
        let l = self.h[i].1;
        self.pos[l as usize] = i as u32;
    }

    fn up(&mut self, mut i: usize) {
        while i > 0 {
            let p = (i - 1) / 2;
            if self.h[p] <= self.h[i] {
                break;
            }
            self.h.swap(p, i);
            self.place(i);
            i = p;
        }
        self.place(i);
    }

    fn down(&mut self, mut i: usize) {
        let n = self.h.len();
        loop {
            let (a, b) = (2 * i + 1, 2 * i + 2);
            let mut m = i;
            if a < n && self.h[a] < self.h[m] {
                m = a;
            }
            if b < n && self.h[b] < self.h[m] {
                m = b;
            }
            if m == i {
                break;
            }
            self.h.swap(m, i);
            self.place(i);
            i = m;
        }
        self.place(i);
    }

    /// Link l's key is `key` now (l joins if it was not in).
    fn set(&mut self, l: u32, key: u64) {
        match self.pos[l as usize] {
            NONE => {
                self.h.push((key, l));
                self.up(self.h.len() - 1);
            }
            i => {
                let i = i as usize;
                let old = self.h[i].0;
                self.h[i].0 = key;
                if key < old {
                    self.up(i);
                } else {
                    self.down(i);
                }
            }
        }
    }

    /// Link l leaves (if in).
    fn remove(&mut self, l: u32) {
        let i = self.pos[l as usize];
        if i == NONE {
            return;
        }
        let i = i as usize;
        self.pos[l as usize] = NONE;
        let last = self.h.pop().expect("an entry");
        if i < self.h.len() {
            let old = self.h[i];
            self.h[i] = last;
            if last < old {
                self.up(i);
            } else {
                self.down(i);
            }
        }
    }
}

/// A span `x` (ns) to its whole ns as the per-flow net rounds a finish (`lmm.rs`'s `finish_ns`):
/// up, less a tolerance of 1e-10 of the span for last-bit noise; 1e18 and beyond stay as they are
fn ceil_tol(x: f64) -> f64 {
    if x >= 1e18 {
        x
    } else {
        (x - x * 1e-10).ceil().max(0.0)
    }
}

/// An f64's bits as a u64 in the f64's order (negatives below positives), for the heap of ends
fn ordered_bits(x: f64) -> u64 {
    let b = x.to_bits();
    if b >> 63 == 1 {
        !b
    } else {
        b | 1 << 63
    }
}

fn lg_find(v: &[(u32, u32, u32)], g: u32) -> Option<usize> {
    v.iter().position(|e| e.0 == g)
}

impl GroupNet {
    pub fn new(rings: usize) -> GroupNet {
        GroupNet { rings, ..Default::default() }
    }

    /// Adds a link of `bytes_per_ns`; ids are dense from 0.
    pub fn add_link(&mut self, bytes_per_ns: f64) -> u32 {
        self.cap.push(bytes_per_ns);
        self.slack.push(false);
        self.lg.push(SmallVec::new());
        self.load.push(0.0);
        self.on.push(Vec::new());
        self.is_dirty.push(false);
        self.rmark.push(0);
        self.rem.push(0.0);
        self.nn.push(0);
        self.ld.push(0.0);
        self.ldmark.push(0);
        self.heap.pos.push(NONE);
        (self.cap.len() - 1) as u32
    }

    pub fn num_links(&self) -> usize {
        self.cap.len()
    }

    fn saturated(&self, l: u32, load: f64) -> bool {
        load >= self.cap[l as usize] * (1.0 - EPS)
    }

    fn new_group(&mut self, rate: f64, s: f64, t: f64, key: u32) -> u32 {
        let gid = match self.free_groups.pop() {
            Some(g) => g,
            None => {
                self.groups.push(Group::default());
                self.in_u.push(0);
                self.fixed_at.push(0);
                self.staged.push(0.0);
                (self.groups.len() - 1) as u32
            }
        };
        let g = &mut self.groups[gid as usize];
        debug_assert!(!g.live && g.members.is_empty() && g.cnt.is_empty());
        g.live = true;
        g.rate = rate;
        g.s = s;
        g.t = t;
        g.key = key;
        g.ends.clear();
        g.pend = f64::INFINITY;
        gid
    }

    fn free_group(&mut self, gid: u32, in_solve: bool) {
        let g = &mut self.groups[gid as usize];
        debug_assert!(g.members.is_empty());
        g.live = false;
        g.version = g.version.wrapping_add(1);
        g.ends.clear();
        if in_solve {
            self.freed_in_solve.push(gid);
        } else {
            self.free_groups.push(gid);
        }
    }

    fn advance(&mut self, gid: u32, now: f64) {
        let g = &mut self.groups[gid as usize];
        g.s += g.rate * (now - g.t);
        g.t = now;
    }

    /// f becomes a member of gid (its target already on gid's clock); its links are not counted.
    #[inline]
    fn enlist(&mut self, gid: u32, f: u32) {
        let fl = &mut self.flows[f as usize];
        fl.group = gid;
        fl.epoch = fl.epoch.wrapping_add(1);
        let g = &mut self.groups[gid as usize];
        fl.mpos = g.members.len() as u32;
        g.members.push(f);
        g.ends.push(Reverse((ordered_bits(fl.target), f, fl.epoch)));
    }

    fn attach(&mut self, gid: u32, f: u32) {
        self.enlist(gid, f);
        let rate = self.groups[gid as usize].rate;
        for i in 0..self.flows[f as usize].links.len() {
            let l = self.flows[f as usize].links[i];
            if self.slack[l as usize] {
                continue;
            }
            self.bump(gid, l, 1);
            self.load[l as usize] += rate;
        }
        let g = &mut self.groups[gid as usize];
        let n = g.members.len();
        if g.ends.len() > 2 * n + 16 {
            self.compact_ends(gid);
        }
    }

    fn detach(&mut self, gid: u32, f: u32) {
        let fl = &self.flows[f as usize];
        let g = &mut self.groups[gid as usize];
        let at = fl.mpos as usize;
        g.members.swap_remove(at);
        if at < g.members.len() {
            self.flows[g.members[at] as usize].mpos = at as u32;
        }
        let rate = g.rate;
        for i in 0..self.flows[f as usize].links.len() {
            let l = self.flows[f as usize].links[i];
            if self.slack[l as usize] {
                continue;
            }
            self.load[l as usize] -= rate;
            self.unbump(gid, l, 1);
        }
    }

    /// Group gid's entry for link l: (its place in `lg[l]`, its place in the group's `cnt`), found
    /// in the shorter of the two lists (a NIC's link carries many groups; a group keyed at a NIC
    /// counts many links).
    #[inline]
    fn entry(&self, gid: u32, l: u32) -> Option<(usize, usize)> {
        let v = &self.lg[l as usize];
        let c = &self.groups[gid as usize].cnt;
        if c.len() <= v.len() {
            c.iter().position(|e| e.0 == l).map(|p| (c[p].2 as usize, p))
        } else {
            lg_find(v, gid).map(|i| (i, v[i].2 as usize))
        }
    }

    /// `by` more of group gid's members cross link l.
    fn bump(&mut self, gid: u32, l: u32, by: u32) {
        match self.entry(gid, l) {
            Some((i, p)) => {
                self.lg[l as usize][i].1 += by;
                self.groups[gid as usize].cnt[p].1 += by;
            }
            None => {
                let v = &mut self.lg[l as usize];
                let g = &mut self.groups[gid as usize];
                v.push((gid, by, g.cnt.len() as u32));
                g.cnt.push((l, by, (v.len() - 1) as u32));
            }
        }
    }

    /// `by` fewer of group gid's members cross link l.
    fn unbump(&mut self, gid: u32, l: u32, by: u32) {
        let (i, pos) = self.entry(gid, l).expect("a group on its members' links");
        let v = &mut self.lg[l as usize];
        v[i].1 -= by;
        self.groups[gid as usize].cnt[pos].1 -= by;
        if v[i].1 == 0 {
            self.drop_lg(l, i);
            if self.lg[l as usize].is_empty() {
                // no flow left on it: its load is zero, not what the sums' rounding left
                self.load[l as usize] = 0.0;
            }
            self.drop_cnt(gid, pos);
        }
    }

    /// Link l's entry `i` of `lg` leaves it (the last one takes its place, and its group's `cnt`
    /// is told).
    fn drop_lg(&mut self, l: u32, i: usize) {
        let v = &mut self.lg[l as usize];
        v.swap_remove(i);
        if let Some(&(h, _, hp)) = v.get(i) {
            self.groups[h as usize].cnt[hp as usize].2 = i as u32;
        }
    }

    /// Group gid's entry `pos` of `cnt` leaves it (the last one takes its place).
    fn drop_cnt(&mut self, gid: u32, pos: usize) {
        let g = &mut self.groups[gid as usize];
        g.cnt.swap_remove(pos);
        if pos < g.cnt.len() {
            let (moved, _, at) = g.cnt[pos];
            self.lg[moved as usize][at as usize].2 = pos as u32;
        }
    }

    /// Drops the stale entries of a group's heap of ends.
    fn compact_ends(&mut self, gid: u32) {
        let g = &mut self.groups[gid as usize];
        let flows = &self.flows;
        let kept: Vec<_> = g
            .ends
            .drain()
            .filter(|Reverse((_, f, e))| {
                let fl = &flows[*f as usize];
                fl.group == gid && fl.epoch == *e
            })
            .collect();
        g.ends = BinaryHeap::from(kept);
    }

    /// f leaves src for dst with its bytes left (both clocks moved to the solve's now).
    fn move_flow(&mut self, f: u32, src: u32, dst: u32) {
        let now = self.now;
        self.advance(src, now);
        self.advance(dst, now);
        let left = self.flows[f as usize].target - self.groups[src as usize].s;
        self.detach(src, f);
        self.flows[f as usize].target = self.groups[dst as usize].s + left;
        self.attach(dst, f);
        self.counts.moves += 1;
    }

    /// All of g's members join `dst` (as `move_flow` each, in flow order), its counts added to
    /// dst's link by link: a group's entry per link moves once, not once per member crossing it.
    fn merge_into(&mut self, g: u32, dst: u32, movers: &mut Vec<u32>) {
        let now = self.now;
        self.advance(g, now);
        self.advance(dst, now);
        movers.clear();
        movers.extend_from_slice(&self.groups[g as usize].members);
        movers.sort_unstable();
        let (gs, ds) = (self.groups[g as usize].s, self.groups[dst as usize].s);
        for i in 0..movers.len() {
            let f = movers[i];
            let fl = &mut self.flows[f as usize];
            fl.target = ds + (fl.target - gs);
            self.enlist(dst, f);
        }
        self.counts.moves += movers.len() as u64;
        let cnt = std::mem::take(&mut self.groups[g as usize].cnt);
        let dr = self.groups[dst as usize].rate - self.groups[g as usize].rate;
        for &(l, k, at) in &cnt {
            self.drop_lg(l, at as usize);
            self.bump(dst, l, k);
            self.load[l as usize] += k as f64 * dr;
        }
        let gg = &mut self.groups[g as usize];
        gg.cnt = cnt;
        gg.cnt.clear();
        gg.members.clear();
        let n = self.groups[dst as usize].members.len();
        if self.groups[dst as usize].ends.len() > 2 * n + 16 {
            self.compact_ends(dst);
        }
    }

    /// The group's next completion: its least target's (flow, time), or none at rate 0.
    fn next_end(&mut self, gid: u32) -> Option<(u32, f64)> {
        loop {
            let g = &self.groups[gid as usize];
            let &Reverse((_, f, e)) = g.ends.peek()?;
            let fl = &self.flows[f as usize];
            if fl.group == gid && fl.epoch == e {
                if g.rate <= 0.0 {
                    return None;
                }
                return Some((f, g.t + ceil_tol((fl.target - g.s).max(0.0) / g.rate)));
            }
            self.groups[gid as usize].ends.pop();
        }
    }

    /// Starts a flow of `bytes` over `links` at `now` (ns); returns its id.
    pub fn start(&mut self, now: f64, links: &[u32], bytes: f64) -> u32 {
        let f = match self.free_flows.pop() {
            Some(f) => f,
            None => {
                self.flows.push(GFlow { group: NONE, ..Default::default() });
                self.lpos.push([0; LPOS]);
                (self.flows.len() - 1) as u32
            }
        };
        let gid = self.new_group(0.0, 0.0, now, NONE);
        {
            let fl = &mut self.flows[f as usize];
            fl.links.clear();
            fl.links.extend_from_slice(links);
            fl.lpos_more.clear();
            fl.target = bytes;
            let lp = &mut self.lpos[f as usize];
            for (j, &l) in links.iter().enumerate() {
                let on = &mut self.on[l as usize];
                if j < LPOS {
                    lp[j] = on.len() as u32;
                } else {
                    fl.lpos_more.push(on.len() as u32);
                }
                on.push((f, j as u32));
            }
        }
        self.attach(gid, f);
        self.new.push(gid);
        f
    }

    /// Removes flow `f` at `now` (ns).
    pub fn finish(&mut self, f: u32, now: f64) {
        let gid = self.flows[f as usize].group;
        debug_assert_ne!(gid, NONE);
        self.advance(gid, now);
        for i in 0..self.flows[f as usize].links.len() {
            let l = self.flows[f as usize].links[i] as usize;
            if !self.slack[l] && !self.is_dirty[l] {
                self.is_dirty[l] = true;
                self.dirty.push(l as u32);
            }
        }
        self.detach(gid, f);
        for i in 0..self.flows[f as usize].links.len() {
            let l = self.flows[f as usize].links[i];
            let p = if i < LPOS { self.lpos[f as usize][i] } else { self.flows[f as usize].lpos_more[i - LPOS] };
            let on = &mut self.on[l as usize];
            on.swap_remove(p as usize);
            if let Some(&(moved, j)) = on.get(p as usize) {
                let (moved, j) = (moved as usize, j as usize);
                if j < LPOS {
                    self.lpos[moved][j] = p;
                } else {
                    self.flows[moved].lpos_more[j - LPOS] = p;
                }
            }
        }
        let fl = &mut self.flows[f as usize];
        fl.group = NONE;
        self.free_flows.push(f);
        if self.groups[gid as usize].members.is_empty() {
            self.free_group(gid, false);
        }
    }

    /// Link l becomes slack (it cannot bind: out of every group's counts) or stops being slack.
    pub fn set_slack(&mut self, l: u32, slack: bool) {
        let li = l as usize;
        if slack == self.slack[li] {
            return;
        }
        if slack {
            let entries = std::mem::take(&mut self.lg[li]);
            for &(gid, _, pos) in &entries {
                if self.groups[gid as usize].key == l {
                    self.pull.push(gid);
                }
                self.drop_cnt(gid, pos as usize);
            }
            self.lg[li] = entries;
            self.lg[li].clear();
            self.load[li] = 0.0;
            self.slack[li] = true;
        } else {
            self.slack[li] = false;
            for i in 0..self.on[li].len() {
                let f = self.on[li][i].0;
                let gid = self.flows[f as usize].group;
                self.bump(gid, l, 1);
                self.load[li] += self.groups[gid as usize].rate;
            }
            if self.saturated(l, self.load[li]) {
                let gs: SmallVec<[u32; 8]> = self.lg[li].iter().map(|e| e.0).collect();
                self.pull.extend(gs);
            }
            if !self.is_dirty[li] {
                self.is_dirty[li] = true;
                self.dirty.push(l);
            }
        }
    }

    /// What group `gid`'s completion event of `version` finds at `now` (ns): its least-target
    /// member has moved its bytes (to a thousandth of a ns at its rate), or the group will end
    /// one later (the event re-arms there), or the event is stale (an earlier one was set since,
    /// or the group was freed).
    pub fn due(&mut self, gid: u32, version: u32, now: f64) -> GroupDue {
        let g = &self.groups[gid as usize];
        if !g.live || g.version != version {
            return GroupDue::Stale;
        }
        let Some((f, finish_ns)) = self.next_end(gid) else {
            self.groups[gid as usize].pend = f64::INFINITY;
            return GroupDue::Stale;
        };
        if self.is_done(gid, f, now) {
            self.groups[gid as usize].pend = f64::INFINITY;
            GroupDue::Done(f)
        } else {
            // the group was slowed down (or its least member left): the event re-arms
            self.groups[gid as usize].pend = finish_ns;
            GroupDue::Later(finish_ns)
        }
    }

    /// Member `f` of group `gid` has moved its bytes by `now`: its finish, rounded as `next_end`
    /// rounds it (`ceil_tol`, from the group's clock), is not after `now`.  The same rule as the
    /// event's time, so an event at a member's finish finds it done, as a per-flow event does.
    fn is_done(&self, gid: u32, f: u32, now: f64) -> bool {
        let g = &self.groups[gid as usize];
        g.rate > 0.0 && g.t + ceil_tol((self.flows[f as usize].target - g.s).max(0.0) / g.rate) <= now
    }

    /// After a `Done` of group `gid` and the member's `finish`: another member of the group that
    /// is done at `now` too (its next least target), to finish before the next solve; none when
    /// the group has gone or its next member ends later.  Members that end at the same instant
    /// then end in one solve, as the per-flow net's do (each has its own event there, all due
    /// before the solve).
    pub fn also_done(&mut self, gid: u32, now: f64) -> Option<u32> {
        if !self.groups[gid as usize].live {
            return None;
        }
        let (f, _) = self.next_end(gid)?;
        self.is_done(gid, f, now).then_some(f)
    }

    /// The live flows in id order, each with its bytes left at `now` (ns): a hand-off to the
    /// per-flow net (`solver.rs`).
    pub fn live_flows(&self, now: f64, out: &mut Vec<(u32, f64)>) {
        out.clear();
        for (f, fl) in self.flows.iter().enumerate() {
            if fl.group != NONE {
                let g = &self.groups[fl.group as usize];
                out.push((f as u32, (fl.target - (g.s + g.rate * (now - g.t))).max(0.0)));
            }
        }
    }

    /// Drops what starts, ends and slack changes marked for the next solve: every flow has left
    /// (a hand-off to the per-flow net).
    pub fn drop_pending(&mut self) {
        debug_assert_eq!(self.flows.len(), self.free_flows.len());
        for &l in &self.dirty {
            self.is_dirty[l as usize] = false;
        }
        self.dirty.clear();
        self.new.clear();
        self.pull.clear();
    }

    /// Is link l slack (out of every group's counts)?
    pub fn is_slack(&self, l: u32) -> bool {
        self.slack[l as usize]
    }

    /// Flow f's links.
    pub fn flow_links(&self, f: u32) -> &[u32] {
        &self.flows[f as usize].links
    }

    /// How many flows cross link l.
    pub fn flows_on(&self, l: u32) -> usize {
        self.on[l as usize].len()
    }

    /// A flow's rate, bytes per ns.
    pub fn rate(&self, f: u32) -> f64 {
        self.groups[self.flows[f as usize].group as usize].rate
    }

    /// Live groups and flows.
    pub fn sizes(&self) -> (usize, usize) {
        let g = self.groups.iter().filter(|g| g.live).count();
        (g, self.flows.len() - self.free_flows.len())
    }

    fn add_u(&mut self, gid: u32) {
        if self.in_u[gid as usize] != self.ustamp {
            self.in_u[gid as usize] = self.ustamp;
            self.u.push(gid);
        }
    }

    fn in_u(&self, gid: u32) -> bool {
        self.in_u[gid as usize] == self.ustamp
    }

    /// Re-rates what changed since the last solve; appends every U group's next completion to
    /// `out` (its rate or its members changed), by group.
    pub fn resolve(&mut self, now: f64, out: &mut Vec<GroupEnd>) {
        let t0 = self.time_phases.then(std::time::Instant::now);
        self.ustamp = self.ustamp.wrapping_add(1).max(1);
        self.u.clear();
        let mut buf: Vec<u32> = Vec::new();
        let new = std::mem::take(&mut self.new);
        for &gid in &new {
            if !self.groups[gid as usize].live {
                continue;
            }
            self.add_u(gid);
            buf.clear();
            for &(l, _, _) in &self.groups[gid as usize].cnt {
                if self.saturated(l, self.load[l as usize]) {
                    buf.extend(self.lg[l as usize].iter().map(|e| e.0));
                }
            }
            for &h in &buf {
                self.add_u(h);
            }
        }
        self.new = new;
        self.new.clear();
        let dirty = std::mem::take(&mut self.dirty);
        for &l in &dirty {
            self.is_dirty[l as usize] = false;
            buf.clear();
            buf.extend(self.lg[l as usize].iter().map(|e| e.0).filter(|&h| self.groups[h as usize].key == l));
            for &h in &buf {
                self.add_u(h);
            }
        }
        let pull = std::mem::take(&mut self.pull);
        for &h in &pull {
            if self.groups[h as usize].live {
                self.add_u(h);
            }
        }
        self.pull = pull;
        self.pull.clear();
        for _ in 0..self.rings {
            buf.clear();
            for &gid in &self.u {
                for &(l, _, _) in &self.groups[gid as usize].cnt {
                    if self.saturated(l, self.load[l as usize]) {
                        buf.extend(
                            self.lg[l as usize].iter().map(|e| e.0).filter(|&h| self.groups[h as usize].key == l),
                        );
                    }
                }
            }
            for &h in &buf {
                self.add_u(h);
            }
        }
        if self.u.is_empty() {
            self.dirty = dirty;
            self.dirty.clear();
            return;
        }
        self.counts.solves += 1;
        self.now = now;
        self.add_phase(0, t0);
        loop {
            self.counts.rounds += 1;
            let t1 = self.time_phases.then(std::time::Instant::now);
            self.fill(&dirty);
            self.add_phase(1, t1);
            let t2 = self.time_phases.then(std::time::Instant::now);
            self.check();
            self.add_phase(2, t2);
            if self.more.is_empty() {
                break;
            }
            let more = std::mem::take(&mut self.more);
            for &h in &more {
                self.add_u(h);
            }
            self.more = more;
        }
        self.dirty = dirty;
        self.dirty.clear();
        // the commit
        let t3 = self.time_phases.then(std::time::Instant::now);
        let mut u = std::mem::take(&mut self.u);
        u.sort_unstable();
        self.counts.groups_in_u += u.len() as u64;
        for &gid in &u {
            let r = self.staged[gid as usize];
            self.advance(gid, now);
            let g = &mut self.groups[gid as usize];
            self.counts.flows_in_u += g.members.len() as u64;
            // a rate within the tolerance of the one it has is kept: the filling's remainders
            // (a link's load less U's part) round differently from one solve to the next, and a
            // group re-rated by a rounding would move its loads and its events for nothing
            if (r - g.rate).abs() > EPS * r.abs().max(g.rate.abs()) {
                let d = r - g.rate;
                for &(l, n, _) in &g.cnt {
                    self.load[l as usize] += n as f64 * d;
                }
                g.rate = r;
                self.counts.rerated_groups += 1;
                self.counts.rerated_flows += g.members.len() as u64;
            }
            // a new event only where the finish moved before the pending one
            if let Some((flow, finish_ns)) = self.next_end(gid) {
                let g = &mut self.groups[gid as usize];
                if finish_ns < g.pend {
                    g.version = g.version.wrapping_add(1);
                    g.pend = finish_ns;
                    out.push(GroupEnd { group: gid, flow, finish_ns, version: g.version });
                }
            }
        }
        self.u = u;
        self.free_groups.append(&mut self.freed_in_solve);
        self.add_phase(3, t3);
    }

    fn add_phase(&mut self, i: usize, since: Option<std::time::Instant>) {
        if let Some(t) = since {
            self.phase_ns[i] += t.elapsed().as_nanos() as u64;
        }
    }

    /// The filling over U's groups (splitting and merging them): their new rates, in `staged`.
    fn fill(&mut self, dirty: &[u32]) {
        self.rstamp = self.rstamp.wrapping_add(1).max(1);
        self.rl.clear();
        let rs = self.rstamp;
        for &l in dirty {
            if self.rmark[l as usize] != rs {
                self.rmark[l as usize] = rs;
                self.rl.push(l);
            }
        }
        for &gid in &self.u {
            for &(l, _, _) in &self.groups[gid as usize].cnt {
                if self.rmark[l as usize] != rs {
                    self.rmark[l as usize] = rs;
                    self.rl.push(l);
                }
            }
        }
        self.heap.clear();
        // what U's groups leave of each link: its capacity less the load of the groups outside U,
        // that is less its whole load plus U's part of it (U's counts walked once, not every
        // group on every link: a NIC's link carries many groups keyed elsewhere)
        for i in 0..self.rl.len() {
            let l = self.rl[i] as usize;
            self.rem[l] = self.cap[l] - self.load[l];
            self.nn[l] = 0;
        }
        for &gid in &self.u {
            let g = &self.groups[gid as usize];
            for &(l, k, _) in &g.cnt {
                self.rem[l as usize] += k as f64 * g.rate;
                self.nn[l as usize] += k;
            }
        }
        for i in 0..self.rl.len() {
            let l = self.rl[i] as usize;
            let n = self.nn[l];
            if n > 0 {
                self.heap.set(l as u32, ordered_bits(self.rem[l] / n as f64));
            }
        }
        self.round = self.round.wrapping_add(1).max(1);
        let round = self.round;
        let mut unfixed = self.u.len();
        let mut whole: SmallVec<[u32; 8]> = SmallVec::new();
        let mut minority: SmallVec<[u32; 8]> = SmallVec::new();
        let mut movers: Vec<u32> = Vec::new();
        while unfixed > 0 {
            // the link of least fair share, ties to the lower id (it leaves the heap below, with
            // its U flows all fixed)
            let (_, l) = self.heap.peek().expect("a U flow without a link that can bind");
            let share = self.rem[l as usize] / self.nn[l as usize] as f64;
            let lam = share.max(0.0);
            whole.clear();
            minority.clear();
            let cands: SmallVec<[(u32, u32); 8]> = self.lg[l as usize]
                .iter()
                .map(|e| (e.0, e.1))
                .filter(|&(h, _)| self.in_u[h as usize] == self.ustamp && self.fixed_at[h as usize] != round)
                .collect();
            for &(h, k) in &cands {
                let m = self.groups[h as usize].members.len() as u32;
                if k == m {
                    whole.push(h);
                } else if 2 * k > m {
                    let rest = self.split_off(h, l, &mut movers);
                    self.add_u(rest);
                    unfixed += 1;
                    whole.push(h);
                } else {
                    minority.push(h);
                }
            }
            let top = if whole.is_empty() {
                let r = self.groups[minority[0] as usize].rate;
                let t = self.new_group(r, 0.0, self.now, NONE);
                self.add_u(t);
                unfixed += 1;
                t
            } else {
                *whole.iter().max_by_key(|&&h| (self.groups[h as usize].members.len(), Reverse(h))).expect("whole")
            };
            for &g in &minority {
                movers.clear();
                movers.extend(
                    self.groups[g as usize]
                        .members
                        .iter()
                        .copied()
                        .filter(|&f| self.flows[f as usize].links.contains(&l)),
                );
                movers.sort_unstable();
                for &f in &movers {
                    self.move_flow(f, g, top);
                }
            }
            for &g in &whole {
                if g == top {
                    continue;
                }
                self.merge_into(g, top, &mut movers);
                self.in_u[g as usize] = 0;
                unfixed -= 1;
                self.free_group(g, true);
            }
            self.fixed_at[top as usize] = round;
            unfixed -= 1;
            let g = &mut self.groups[top as usize];
            for &(k, m, _) in &g.cnt {
                let k = k as usize;
                self.rem[k] -= m as f64 * lam;
                self.nn[k] -= m;
                if self.nn[k] > 0 {
                    self.heap.set(k as u32, ordered_bits(self.rem[k] / self.nn[k] as f64));
                } else {
                    self.heap.remove(k as u32);
                }
            }
            g.key = l;
            self.staged[top as usize] = lam;
        }
        let in_u = &self.in_u;
        let us = self.ustamp;
        self.u.retain(|&g| in_u[g as usize] == us);
    }

    /// g's members that do not cross l leave it for a new group (same rate and clock).
    fn split_off(&mut self, g: u32, l: u32, movers: &mut Vec<u32>) -> u32 {
        let (r, s, t, key) = {
            let gg = &self.groups[g as usize];
            (gg.rate, gg.s, gg.t, gg.key)
        };
        let h = self.new_group(r, s, t, key);
        movers.clear();
        movers.extend(
            self.groups[g as usize].members.iter().copied().filter(|&f| !self.flows[f as usize].links.contains(&l)),
        );
        movers.sort_unstable();
        for i in 0..movers.len() {
            self.move_flow(movers[i], g, h);
        }
        h
    }

    fn rate_now(&self, h: u32) -> f64 {
        if self.in_u(h) {
            self.staged[h as usize]
        } else {
            self.groups[h as usize].rate
        }
    }

    fn load_of(&mut self, l: u32) -> f64 {
        let li = l as usize;
        if self.ldmark[li] != self.ldstamp {
            self.ldmark[li] = self.ldstamp;
            self.ld[li] = self.lg[li].iter().map(|&(h, k, _)| k as f64 * self.rate_now(h)).sum();
        }
        self.ld[li]
    }

    /// The groups that must join U (`more`), or none: the staged rates are then max-min.
    fn check(&mut self) {
        self.ldstamp = self.ldstamp.wrapping_add(1).max(1);
        self.more.clear();
        let mut links: SmallVec<[u32; 16]> = SmallVec::new();
        for i in 0..self.u.len() {
            let gid = self.u[i];
            let r = self.staged[gid as usize];
            let key = self.groups[gid as usize].key;
            let faster = self.lg[key as usize]
                .iter()
                .any(|&(h, _, _)| !self.in_u(h) && self.groups[h as usize].rate > r * (1.0 + EPS));
            let kl = self.load_of(key);
            if !faster && self.saturated(key, kl) {
                continue;
            }
            links.clear();
            links.extend(self.groups[gid as usize].cnt.iter().map(|e| e.0));
            for &l in &links {
                let ll = self.load_of(l);
                if self.saturated(l, ll) {
                    for j in 0..self.lg[l as usize].len() {
                        let h = self.lg[l as usize][j].0;
                        if !self.in_u(h) && self.groups[h as usize].rate > r * (1.0 + EPS) {
                            self.more.push(h);
                        }
                    }
                }
            }
        }
        for i in 0..self.rl.len() {
            let l = self.rl[i];
            let li = l as usize;
            if !self.lg[li].iter().any(|&(h, _, _)| !self.in_u(h) && self.groups[h as usize].key == l) {
                continue;
            }
            let top = self.lg[li].iter().map(|&(h, _, _)| self.rate_now(h)).fold(f64::NEG_INFINITY, f64::max);
            let ll = self.load_of(l);
            let sat = self.saturated(l, ll);
            for j in 0..self.lg[li].len() {
                let h = self.lg[li][j].0;
                if !self.in_u(h) && self.groups[h as usize].key == l {
                    let hr = self.groups[h as usize].rate;
                    if !sat || top > hr * (1.0 + EPS) {
                        self.more.push(h);
                    }
                }
            }
        }
        self.more.sort_unstable();
        self.more.dedup();
    }

    /// The state's own invariants (counts, loads, the max-min condition per group); for tests.
    pub fn assert_valid(&self) {
        for (l, on) in self.on.iter().enumerate() {
            for (p, &(f, j)) in on.iter().enumerate() {
                let (fl, j) = (&self.flows[f as usize], j as usize);
                assert!(fl.group != NONE && fl.links[j] == l as u32, "link {l}: flow {f} at its place {j}");
                let at = if j < LPOS { self.lpos[f as usize][j] } else { fl.lpos_more[j - LPOS] };
                assert_eq!(at as usize, p, "flow {f}: its place on link {l}");
            }
        }
        let mut want: Vec<Map> = vec![Map::default(); self.cap.len()];
        for (f, fl) in self.flows.iter().enumerate() {
            if fl.group == NONE {
                continue;
            }
            let g = &self.groups[fl.group as usize];
            assert!(g.live && g.members[fl.mpos as usize] == f as u32, "flow {f}: its group's members");
            for &l in &fl.links {
                if !self.slack[l as usize] {
                    *want[l as usize].entry(fl.group).or_insert(0) += 1;
                }
            }
        }
        for (l, w) in want.iter().enumerate() {
            let have: Map = self.lg[l].iter().map(|e| (e.0, e.1)).collect();
            for &(h, k, pos) in &self.lg[l] {
                let c = self.groups[h as usize].cnt[pos as usize];
                assert_eq!((c.0, c.1), (l as u32, k), "link {l}: group {h}'s place");
                assert_eq!(self.lg[l][c.2 as usize].0, h, "group {h}: link {l}'s place");
            }
            assert_eq!(&have, w, "link {l}: group counts");
            let ld: f64 = w.iter().map(|(&h, &k)| k as f64 * self.groups[h as usize].rate).sum();
            assert!((ld - self.load[l]).abs() <= 1e-9 * self.cap[l].max(1.0), "link {l}: load");
            assert!(ld <= self.cap[l] * (1.0 + 1e-7), "link {l}: over capacity");
        }
        for (gid, g) in self.groups.iter().enumerate() {
            if !g.live {
                continue;
            }
            assert!(!g.members.is_empty(), "group {gid}: empty");
            assert!(g.key != NONE, "group {gid}: no key");
            assert!(g.members.iter().all(|&f| self.flows[f as usize].links.contains(&g.key)), "group {gid}: key");
            assert!(self.saturated(g.key, self.load[g.key as usize]), "group {gid}: key not saturated");
            let top = self.lg[g.key as usize].iter().map(|&(h, _, _)| self.groups[h as usize].rate).fold(0.0, f64::max);
            assert!(top <= g.rate * (1.0 + 1e-7), "group {gid}: a faster group on its key");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lmm::tests::{distinct_links, random_path, Xs};
    use crate::lmm::{FlowNet, Reschedule, Sharing};

    fn compare(g: &GroupNet, f: &FlowNet, ids: &[(u32, u32)], what: &str) {
        for &(gi, fi) in ids {
            let a = g.rate(gi);
            let b = f.rate_bytes_per_s(fi) * 1e-9;
            assert!((a - b).abs() <= 1e-9 * b.max(1e-12), "{what}: flow {gi}: grouped {a} against max-min-full {b}");
        }
    }

    /// Random networks, random starts and ends: after every solve the grouped rates are the
    /// per-flow full solve's (`max-min-full`), and the grouped state is valid.
    /// `long`: a third of the paths cross 9 to 14 links (past the `LPOS` kept places)
    fn random_against_full(rings: usize, seeds: std::ops::Range<u64>, long: bool) {
        for seed in seeds {
            let mut rng = Xs(0x9e37_79b9_7f4a_7c15 ^ (seed * 7919 + 1));
            let nlinks = if long { 14 + rng.below(6) as u32 } else { 3 + rng.below(12) as u32 };
            let mut g = GroupNet::new(rings);
            let mut f = FlowNet::new();
            f.sharing = Sharing::MaxMinFull;
            for _ in 0..nlinks {
                // few distinct capacities: ties and shared bottlenecks
                let cap = [10.0, 12.5, 25.0, 50.0][rng.below(4) as usize];
                g.add_link(cap);
                f.add_link(cap * 1e9);
            }
            let mut live: Vec<(u32, u32)> = Vec::new();
            let mut out = Vec::new();
            let mut rs: Vec<Reschedule> = Vec::new();
            let mut now = 0u64;
            for step in 0..120 {
                now += 1 + rng.below(100);
                let nstart = rng.below(4);
                let nend = if live.is_empty() { 0 } else { rng.below(3) };
                for _ in 0..nend {
                    if live.is_empty() {
                        break;
                    }
                    let i = rng.below(live.len() as u64) as usize;
                    let (gi, fi) = live.swap_remove(i);
                    g.finish(gi, now as f64);
                    f.finish(fi);
                }
                for _ in 0..nstart {
                    let p = if long && rng.below(3) == 0 {
                        let len = 9 + rng.below(6) as usize;
                        distinct_links(&mut rng, nlinks as usize, len)
                    } else {
                        random_path(&mut rng, nlinks as usize)
                    };
                    let bytes = 1e6;
                    let gi = g.start(now as f64, &p, bytes);
                    let fi = f.start(now, &p, bytes, 0);
                    live.push((gi, fi));
                }
                out.clear();
                rs.clear();
                g.resolve(now as f64, &mut out);
                f.resolve(now, &mut rs);
                g.assert_valid();
                compare(&g, &f, &live, &format!("seed {seed} step {step} rings {rings}"));
            }
        }
    }

    /// The filling's heap keeps one entry per link, least (key, link) first, through random
    /// sets (keys up and down), removals and clears, as a sorted list of the same entries does.
    #[test]
    fn the_link_heap_gives_the_least_key_through_updates() {
        let mut rng = Xs(0x9e37_79b9_7f4a_7c15);
        let mut h = LinkHeap { h: vec![], pos: vec![NONE; 64] };
        let mut want: Vec<Option<u64>> = vec![None; 64];
        for step in 0..20_000 {
            let l = rng.below(64) as u32;
            match rng.below(10) {
                0..=5 => {
                    let k = rng.below(50);
                    h.set(l, k);
                    want[l as usize] = Some(k);
                }
                6..=8 => {
                    h.remove(l);
                    want[l as usize] = None;
                }
                _ if step % 97 == 0 => {
                    h.clear();
                    want.iter_mut().for_each(|w| *w = None);
                }
                _ => {}
            }
            let least = want.iter().enumerate().filter_map(|(l, k)| k.map(|k| (k, l as u32))).min();
            assert_eq!(h.peek(), least, "step {step}");
            assert_eq!(h.h.len(), want.iter().filter(|k| k.is_some()).count());
        }
    }

    #[test]
    fn grouped_rates_equal_the_full_solve() {
        random_against_full(0, 0..60, false);
    }

    #[test]
    fn grouped_rates_equal_the_full_solve_with_rings() {
        random_against_full(2, 100..160, false);
    }

    /// Paths longer than the places `lpos` keeps (a flow's place on its ninth link and on are in
    /// its own record): the flow lists stay right (`assert_valid`) and the rates max-min.
    #[test]
    fn grouped_rates_equal_the_full_solve_on_long_paths() {
        random_against_full(2, 200..240, true);
    }

    #[test]
    fn a_group_ends_at_its_least_target_and_moves_keep_bytes() {
        // two flows on one link: one group at half the link each; the smaller ends first
        let mut g = GroupNet::new(0);
        let l = g.add_link(10.0);
        let a = g.start(0.0, &[l], 1000.0);
        let b = g.start(0.0, &[l], 3000.0);
        let mut out = Vec::new();
        g.resolve(0.0, &mut out);
        g.assert_valid();
        assert_eq!(g.rate(a), 5.0);
        assert_eq!(g.rate(b), 5.0);
        let (first, t) =
            out.iter().map(|e| (e.flow, e.finish_ns)).fold((NONE, f64::INFINITY), |x, y| if y.1 < x.1 { y } else { x });
        assert_eq!((first, t), (a, 200.0));
        // a's event fires: done; b's is stale-free (its finish is later: no new event for it)
        let ea = out.iter().find(|e| e.flow == a).copied().expect("a's group's event");
        assert_eq!(g.due(ea.group, ea.version, 200.0), GroupDue::Done(a));
        g.finish(a, 200.0);
        out.clear();
        g.resolve(200.0, &mut out);
        // b moved 1000 bytes at 5, has 2000 left at 10: ends at 400
        assert_eq!(out.len(), 1);
        assert_eq!((out[0].flow, out[0].finish_ns), (b, 400.0));
        // an early look finds it not done, and re-arms at its finish
        assert_eq!(g.due(out[0].group, out[0].version, 300.0), GroupDue::Later(400.0));
        assert_eq!(g.due(out[0].group, out[0].version.wrapping_sub(1), 400.0), GroupDue::Stale);
        assert_eq!(g.due(out[0].group, out[0].version, 400.0), GroupDue::Done(b));
        assert_eq!(g.rate(b), 10.0);
    }

    #[test]
    fn slack_links_are_out_of_the_counts_and_rates_hold() {
        // a flow over a slow link and a fast one, another over the fast one only
        let mut g = GroupNet::new(0);
        let slow = g.add_link(10.0);
        let fast = g.add_link(40.0);
        let a = g.start(0.0, &[slow, fast], 1e6);
        let b = g.start(0.0, &[fast], 1e6);
        let mut out = Vec::new();
        g.resolve(0.0, &mut out);
        assert_eq!((g.rate(a), g.rate(b)), (10.0, 30.0));
        // b ends: every flow on the fast link crosses the slow one, so it turns slack
        g.finish(b, 1.0);
        g.set_slack(fast, true);
        g.resolve(1.0, &mut out);
        g.assert_valid();
        assert_eq!(g.rate(a), 10.0);
        // c starts on the fast link alone: it binds again
        let c = g.start(2.0, &[fast], 1e6);
        g.set_slack(fast, false);
        g.resolve(2.0, &mut out);
        g.assert_valid();
        assert_eq!((g.rate(a), g.rate(c)), (10.0, 30.0));
    }
}

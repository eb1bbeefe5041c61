//! Max-min fair sharing of links among flows (the "linear max-min" solver, after SimGrid's lmm).
//!
//! A flow crosses a list of links and has bytes left to move.  Concurrent flows share every link
//! max-min fairly: progressive filling raises all rates together, freezes the flows of the first
//! saturated link, and repeats.  When a flow starts or ends, only the connected component of flows
//! and links that it touches is re-solved (`resolve`), and only flows whose rate changed get a new
//! finish time: the caller schedules their completion with the returned version and ignores stale
//! versions (lazy invalidation).  Starts and ends at one instant are batched into one solve.
//!
//! Exact max-min is solved incrementally (`Sharing::MaxMin`).  The allocation before a change is
//! max-min; after it, only the flows of the changed links are re-rated (the set U), by progressive
//! filling over the capacity the other flows leave; then the max-min condition is checked around
//! them: every flow must have a *bottleneck link*, saturated and carrying no faster flow
//! (Bertsekas & Gallager, Data Networks, 6.5.2).  A flow that fails, or a flow faster than a U flow
//! on the U flow's saturated link, joins U and the filling is repeated.  Flows away from the changed
//! links keep their rates and their bottleneck links, so the check only visits the links of U.
//! When U stops growing the allocation is the max-min one (each fixed flow has its bottleneck link,
//! each U flow its saturated link in the residual problem, on which no flow is faster); when U grows
//! past a quarter of the flows, the whole component is solved instead.  `Sharing::MaxMinFull`
//! always solves the whole component (the reference the incremental solve is tested against).

use crate::topology::LinkId;

pub type FlowId = u32;
type Time = u64;

/// A link's flows: inline up to 6 (most links carry a handful; a starting or finishing flow then
/// touches one cache line per link instead of the link and a separate list).
type LinkFlows = smallvec::SmallVec<[FlowId; 6]>;
/// A flow's links: inline up to 8 (a 3-level fat-tree route plus two PCIe links).
type FlowLinks = smallvec::SmallVec<[LinkId; 8]>;

#[derive(Clone, Debug)]
struct Link {
    /// bytes per ns
    cap: f64,
    flows: LinkFlows,
    mark: u32,
}

/// Field order fixed (`repr(C)`, 64-byte aligned): what a scan of a link's flows reads (`rate`,
/// `mark`) and what a re-rating reads next (`links`) share the first cache line.
#[derive(Clone, Debug)]
#[repr(C, align(64))]
struct Flow {
    /// bytes per ns
    rate: f64,
    mark: u32,
    version: u32,
    links: FlowLinks,
    active: bool,
    /// visit mark of the incremental solve (`FlowNet::tick`)
    seen: u32,
    remaining: f64,
    last: Time,
    token: u64,
    /// rate staged by the incremental solve, valid while `mark` is the current epoch's
    staged: f64,
    /// the caller's completion bookkeeping, in the flow's second cache line (which re-rating,
    /// starting and finishing the flow touch anyway)
    done: Completion,
}

/// What an event-driven caller keeps about a flow's completion event (the replay: `g2g-mpi`),
/// stored with the flow so that a completion and a re-rating read one record, not two.  The
/// network itself never reads it.  It outlives the flow: a slot reused by a new flow keeps it
/// (the generation tells a stale event from the live one), and `FlowNet::start` leaves it as it
/// was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
pub struct Completion {
    /// time of the live pending completion event, or `Completion::NO_EVENT`
    pub pend: Time,
    /// the flow's latest finish time (from `Reschedule`)
    pub finish: Time,
    /// latency paid after the flow's data has moved (its stage's)
    pub lat: Time,
    /// generation of the live event
    pub gen: u32,
    /// the version `finish` belongs to
    pub version: u32,
}

impl Completion {
    pub const NO_EVENT: Time = Time::MAX;
    /// The record of a slot never used before.
    pub const NEW: Completion = Completion { pend: Completion::NO_EVENT, finish: 0, lat: 0, gen: 0, version: 0 };
}

impl Flow {
    /// Sets the rate `r` at `now` (bytes moved so far at the old rate are counted first) and, if
    /// it changed, a new version and finish time in `out`.
    #[inline]
    fn rerate(&mut self, id: FlowId, now: Time, r: f64, out: &mut Vec<Reschedule>) {
        if (self.rate - r).abs() > r * 1e-12 || self.rate == 0.0 {
            let dt = (now - self.last) as f64;
            self.remaining = (self.remaining - self.rate * dt).max(0.0);
            self.last = now;
            self.rate = r;
            self.version = self.version.wrapping_add(1);
            let d = if r > 0.0 { (self.remaining / r).ceil() } else { f64::MAX };
            let finish = if d >= 1e18 { u64::MAX / 2 } else { now + d as u64 };
            out.push(Reschedule { flow: id, finish, version: self.version });
        }
    }
}

/// One flow whose finish time changed: schedule its completion at `finish` with `version`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reschedule {
    pub flow: FlowId,
    pub finish: Time,
    pub version: u32,
}

#[derive(Default)]
pub struct FlowNet {
    links: Vec<Link>,
    flows: Vec<Flow>,
    free: Vec<FlowId>,
    dirty: Vec<LinkId>,
    epoch: u32,
    // scratch
    comp_links: Vec<LinkId>,
    comp_flows: Vec<FlowId>,
    stack: Vec<LinkId>,
    link_rem: Vec<f64>,
    link_n: Vec<u32>,
    live: Vec<LinkId>,
    new_rates: Vec<(FlowId, f64)>,
    /// how concurrent flows share links
    pub sharing: Sharing,
    pub solves: u64,
    pub active_flows: usize,
    /// exact max-min: changes settled incrementally / by a whole-component solve
    pub incremental_solves: u64,
    pub component_solves: u64,
    u_flows: Vec<FlowId>,
    r_links: Vec<LinkId>,
    /// per link: (tick, sum of rates, largest rate) cached during one check
    link_stat: Vec<(u32, f64, f64)>,
    tick: u32,
    /// bottleneck sharing: each link's fair share (capacity / flows) as of the last re-rating;
    /// up to date for every link once a resolve has run (a link's flow count only changes by a
    /// start or finish, which makes it dirty)
    last_share: Vec<f64>,
    /// bottleneck sharing: the dirty links of one resolve with their previous share
    changed: Vec<(LinkId, f64)>,
}

impl FlowNet {
    pub fn new() -> FlowNet {
        FlowNet::default()
    }

    /// Reserves room for `n` concurrent flows (address space only: pages are touched as flows
    /// come).  A table that grows by doubling instead copies itself into fresh pages each time,
    /// and the kernel zeroes every fresh page: a few % of a replay's time.
    pub fn reserve_flows(&mut self, n: usize) {
        self.flows.reserve(n.saturating_sub(self.flows.len()));
    }

    /// Reserves room for `n` more links (the machine knows its count before it adds them: the
    /// tables then do not grow by doubling, copying themselves each time).
    pub fn reserve_links(&mut self, n: usize) {
        self.links.reserve(n);
        self.link_rem.reserve(n);
        self.link_n.reserve(n);
        self.link_stat.reserve(n);
        self.last_share.reserve(n);
    }

    /// Adds a link of `bw_bytes_per_s`; returns its id (ids are dense from 0).
    pub fn add_link(&mut self, bw_bytes_per_s: f64) -> LinkId {
        self.links.push(Link { cap: bw_bytes_per_s * 1e-9, flows: LinkFlows::new(), mark: 0 });
        self.link_rem.push(0.0);
        self.link_n.push(0);
        self.link_stat.push((0, 0.0, 0.0));
        self.last_share.push(f64::INFINITY);

        (self.links.len() - 1) as LinkId
    }

    pub fn num_links(&self) -> usize {
        self.links.len()
    }

    pub fn link_bw(&self, l: LinkId) -> f64 {
        self.links[l as usize].cap * 1e9
    }

    /// Multiplies one link's capacity (what-ifs such as NIC bandwidth scaling).
    pub fn scale_link(&mut self, l: LinkId, factor: f64) {
        self.links[l as usize].cap *= factor;
    }

    /// Starts a flow of `bytes` over `links` at `now`.  Call `resolve(now, ..)` before time moves on.
    pub fn start(&mut self, now: Time, links: &[LinkId], bytes: f64, token: u64) -> FlowId {
        debug_assert!(!links.is_empty());
        let id = if let Some(id) = self.free.pop() {
            // reuse the slot and its link buffer
            let f = &mut self.flows[id as usize];
            f.links.clear();
            // element by element: SmallVec's extend_from_slice is a generic insert (a memmove call)
            for &l in links {
                f.links.push(l);
            }
            f.remaining = bytes.max(0.0);
            f.rate = 0.0;
            f.last = now;
            f.version = f.version.wrapping_add(1);
            f.active = true;
            f.mark = 0;
            f.token = token;
            id
        } else {
            self.flows.push(Flow {
                links: FlowLinks::from_slice(links),
                remaining: bytes.max(0.0),
                rate: 0.0,
                last: now,
                version: 0,
                active: true,
                mark: 0,
                token,
                staged: 0.0,
                seen: 0,
                done: Completion::NEW,
            });
            (self.flows.len() - 1) as FlowId
        };
        for &l in links {
            self.links[l as usize].flows.push(id);
        }
        self.dirty.extend_from_slice(links);
        self.active_flows += 1;
        id
    }

    /// Removes a finished flow at `now`.
    pub fn finish(&mut self, id: FlowId) -> u64 {
        let f = &mut self.flows[id as usize];
        debug_assert!(f.active);
        f.active = false;
        f.version = f.version.wrapping_add(1);
        let token = f.token;
        let links = std::mem::take(&mut f.links);
        for &l in &links {
            let v = &mut self.links[l as usize].flows;
            if let Some(p) = v.iter().position(|&x| x == id) {
                v.swap_remove(p);
            }
        }
        self.dirty.extend_from_slice(&links);
        self.flows[id as usize].links = links; // keep the allocation for reuse
        self.free.push(id);
        self.active_flows -= 1;
        token
    }

    /// Flow `id`'s completion record (see [`Completion`]).
    #[inline]
    pub(crate) fn completion(&mut self, id: FlowId) -> &mut Completion {
        &mut self.flows[id as usize].done
    }

    pub fn is_current(&self, id: FlowId, version: u32) -> bool {
        let f = &self.flows[id as usize];
        f.active && f.version == version
    }

    pub fn token(&self, id: FlowId) -> u64 {
        self.flows[id as usize].token
    }

    pub fn rate_bytes_per_s(&self, id: FlowId) -> f64 {
        self.flows[id as usize].rate * 1e9
    }

    pub fn has_dirty(&self) -> bool {
        !self.dirty.is_empty()
    }

    /// Re-solves every component touched since the last call; appends new finish times.
    pub fn resolve(&mut self, now: Time, out: &mut Vec<Reschedule>) {
        if self.sharing == Sharing::Bottleneck {
            self.resolve_bottleneck(now, out);
            return;
        }
        if self.dirty.is_empty() {
            return;
        }
        if self.sharing == Sharing::MaxMin {
            if self.resolve_incremental(now, out) {
                return;
            }
            // links and flows were marked with this epoch: the solves below need a fresh one
            self.epoch = self.epoch.wrapping_add(1);
        }
        self.component_solves += 1;
        while let Some(seed) = self.dirty.pop() {
            if self.links[seed as usize].mark == self.epoch.wrapping_add(1) {
                continue; // already solved in this call
            }
            self.solve_component(seed, now, out);
        }
        self.epoch = self.epoch.wrapping_add(1);
    }

    #[inline]
    fn next_tick(&mut self) -> u32 {
        self.tick = self.tick.wrapping_add(1);
        if self.tick == 0 {
            self.tick = 1;
        }
        self.tick
    }

    /// Rate of flow `f`, the staged one if it is in U (marked `mark`).
    #[inline]
    fn rate_in(&self, f: FlowId, mark: u32) -> f64 {
        let fl = &self.flows[f as usize];
        if fl.mark == mark {
            fl.staged
        } else {
            fl.rate
        }
    }

    /// (sum of rates, largest rate) of link `l`, cached for check round `tick`.
    fn stat(&mut self, l: LinkId, mark: u32, tick: u32) -> (f64, f64) {
        let c = self.link_stat[l as usize];
        if c.0 == tick {
            return (c.1, c.2);
        }
        let (mut sum, mut max) = (0.0f64, 0.0f64);
        for &g in &self.links[l as usize].flows {
            let r = self.rate_in(g, mark);
            sum += r;
            if r > max {
                max = r;
            }
        }
        self.link_stat[l as usize] = (tick, sum, max);
        (sum, max)
    }

    /// Does flow `f` at rate `r` have a bottleneck link: saturated, and no flow on it faster?
    fn has_bottleneck(&mut self, f: FlowId, r: f64, mark: u32, tick: u32) -> bool {
        for j in 0..self.flows[f as usize].links.len() {
            let l = self.flows[f as usize].links[j];
            let (sum, max) = self.stat(l, mark, tick);
            let cap = self.links[l as usize].cap;
            if sum >= cap * (1.0 - 1e-9) && r >= max * (1.0 - 1e-9) {
                return true;
            }
        }
        false
    }

    /// Progressive filling's next level: drops the links with no unfrozen flow left from `live` and
    /// returns the smallest fair share of the capacity left among the others (infinite if none).
    fn smallest_share(&self, live: &mut Vec<LinkId>) -> f64 {
        live.retain(|&l| self.link_n[l as usize] > 0);
        let mut share = f64::INFINITY;
        for &l in live.iter() {
            let sh = self.link_rem[l as usize] / self.link_n[l as usize] as f64;
            if sh < share {
                share = sh;
            }
        }
        share
    }

    /// Progressive filling over the links in `live` (`link_rem` / `link_n`: the capacity left and
    /// the count of flows still to rate): raises the rates of all unrated flows together and, at
    /// each level, rates the flows of every link whose fair share is the smallest (within 1e-9).
    /// `take(f, flow, share)` says whether a flow of such a link is one to rate now (and records
    /// its rate); `left` is how many flows are to be rated.
    fn progressive_fill(&mut self, live: &mut Vec<LinkId>, mut left: usize, mut take: impl FnMut(FlowId, &mut Flow, f64) -> bool) {
        while left > 0 {
            let share = self.smallest_share(live);
            if !share.is_finite() {
                break;
            }
            let tol = share * 1e-9;
            let mut froze = false;
            for li in 0..live.len() {
                let l = live[li];
                let n = self.link_n[l as usize];
                if n == 0 || self.link_rem[l as usize] / n as f64 > share + tol {
                    continue;
                }
                for k in 0..self.links[l as usize].flows.len() {
                    let f = self.links[l as usize].flows[k];
                    if !take(f, &mut self.flows[f as usize], share) {
                        continue;
                    }
                    left -= 1;
                    froze = true;
                    for j in 0..self.flows[f as usize].links.len() {
                        let l2 = self.flows[f as usize].links[j] as usize;
                        self.link_rem[l2] = (self.link_rem[l2] - share).max(0.0);
                        self.link_n[l2] -= 1;
                    }
                }
            }
            if !froze {
                break;
            }
        }
    }

    /// Progressive filling of the U flows (marked `mark`) over the links `r_links`, whose
    /// `link_rem` / `link_n` hold the capacity left by the other flows and the count of U flows.
    fn fill_u(&mut self, mark: u32) {
        let tick = self.next_tick();
        let mut live = std::mem::take(&mut self.live);
        live.clear();
        live.extend(self.r_links.iter().copied().filter(|&l| self.link_n[l as usize] > 0));
        self.progressive_fill(&mut live, self.u_flows.len(), |_, fl, share| {
            if fl.mark != mark || fl.seen == tick {
                return false;
            }
            fl.seen = tick;
            fl.staged = share;
            true
        });
        self.live = live;
    }

    /// The incremental exact max-min solve (module docs).  Commits and returns true when the
    /// check holds with U at most a quarter of the flows (at least 64); otherwise changes no rate
    /// and returns false.
    fn resolve_incremental(&mut self, now: Time, out: &mut Vec<Reschedule>) -> bool {
        let mark = self.epoch.wrapping_add(1);
        let mut u = std::mem::take(&mut self.u_flows);
        let mut rl = std::mem::take(&mut self.r_links);
        u.clear();
        rl.clear();
        for i in 0..self.dirty.len() {
            // a link is dirty once per flow started or ended on it: visit it once
            let l = self.dirty[i];
            if self.links[l as usize].mark == mark {
                continue;
            }
            self.links[l as usize].mark = mark;
            rl.push(l);
            for k in 0..self.links[l as usize].flows.len() {
                let f = self.links[l as usize].flows[k];
                if self.flows[f as usize].mark != mark {
                    self.flows[f as usize].mark = mark;
                    u.push(f);
                }
            }
        }
        // a change that touches more than an eighth of the flows directly (all-to-all traffic on
        // shared links) is left to the whole-component solve at once; U may grow to a quarter
        let limit = (self.active_flows / 4).max(64);
        let first = (self.active_flows / 8).max(64);
        let mut linked = 0;
        let ok = loop {
            if u.len() > limit || (linked == 0 && u.len() > first) {
                break false;
            }
            // the links of U's new flows join R
            for i in linked..u.len() {
                let f = u[i];
                for j in 0..self.flows[f as usize].links.len() {
                    let l = self.flows[f as usize].links[j];
                    if self.links[l as usize].mark != mark {
                        self.links[l as usize].mark = mark;
                        rl.push(l);
                    }
                }
            }
            linked = u.len();
            // capacity the fixed flows leave on R, and U's flows there
            for &l in &rl {
                let mut rem = self.links[l as usize].cap;
                let mut n = 0u32;
                for &g in &self.links[l as usize].flows {
                    let fl = &self.flows[g as usize];
                    if fl.mark == mark {
                        n += 1;
                    } else {
                        rem -= fl.rate;
                    }
                }
                self.link_rem[l as usize] = rem.max(0.0);
                self.link_n[l as usize] = n;
            }
            self.u_flows = u;
            self.r_links = rl;
            self.fill_u(mark);
            u = std::mem::take(&mut self.u_flows);
            rl = std::mem::take(&mut self.r_links);
            // check: U flows, then the fixed flows that share a link with U
            let tick = self.next_tick();
            let before = u.len();
            for i in 0..before {
                let f = u[i];
                let r = self.flows[f as usize].staged;
                if self.has_bottleneck(f, r, mark, tick) {
                    continue;
                }
                // a faster fixed flow shares f's saturated link: it joins U
                for j in 0..self.flows[f as usize].links.len() {
                    let l = self.flows[f as usize].links[j];
                    for k in 0..self.links[l as usize].flows.len() {
                        let g = self.links[l as usize].flows[k];
                        let fl = &mut self.flows[g as usize];
                        if fl.mark != mark && fl.rate > r * (1.0 + 1e-9) {
                            fl.mark = mark;
                            u.push(g);
                        }
                    }
                }
            }
            let seen = self.next_tick();
            for li in 0..rl.len() {
                let l = rl[li];
                for k in 0..self.links[l as usize].flows.len() {
                    let g = self.links[l as usize].flows[k];
                    if self.flows[g as usize].mark == mark || self.flows[g as usize].seen == seen {
                        continue;
                    }
                    self.flows[g as usize].seen = seen;
                    let r = self.flows[g as usize].rate;
                    if !self.has_bottleneck(g, r, mark, tick) {
                        self.flows[g as usize].mark = mark;
                        u.push(g);
                    }
                }
            }
            if u.len() == before {
                break true;
            }
        };
        if ok {
            self.solves += 1;
            self.incremental_solves += 1;
            for &f in &u {
                let fl = &mut self.flows[f as usize];
                let r = fl.staged;
                fl.rerate(f, now, r, out);
            }
            self.dirty.clear();
            self.epoch = mark;
        }
        self.u_flows = u;
        self.r_links = rl;
        ok
    }

    fn resolve_bottleneck(&mut self, now: Time, out: &mut Vec<Reschedule>) {
        let mark = self.epoch.wrapping_add(1);
        self.solves += 1;
        // first the new share of every dirty link (once each, in the order they are visited), so
        // that a re-rated flow reads its links' shares instead of dividing for each
        let mut changed = std::mem::take(&mut self.changed);
        changed.clear();
        while let Some(l) = self.dirty.pop() {
            let lk = &mut self.links[l as usize];
            if lk.mark == mark {
                continue;
            }
            lk.mark = mark;
            let n = lk.flows.len();
            let share = if n == 0 { f64::INFINITY } else { lk.cap / n as f64 };
            let old = std::mem::replace(&mut self.last_share[l as usize], share);
            if n > 0 {
                changed.push((l, old));
            }
        }
        // split borrows: the scan walks each link's flow list as one slice
        let (links, flows, last_share) = (&self.links, &mut self.flows, &self.last_share);
        for &(l, old_share) in &changed {
            let share = last_share[l as usize];
            for &f in links[l as usize].flows.iter() {
                let fl = &mut flows[f as usize];
                if fl.mark == mark {
                    continue;
                }
                // a flow whose rate came from another link and stays below this link's new share
                // keeps it (its other links are unchanged, or dirty and visited on their own)
                if fl.rate > 0.0 && fl.rate <= share && fl.rate != old_share {
                    continue;
                }
                fl.mark = mark;
                // its smallest fair share (capacity / flows) among its links
                let mut r = f64::INFINITY;
                for &l2 in fl.links.iter() {
                    let sh = last_share[l2 as usize];
                    if sh < r {
                        r = sh;
                    }
                }
                fl.rerate(f, now, r, out);
            }
        }
        self.changed = changed;
        self.epoch = mark;
    }

    fn solve_component(&mut self, seed: LinkId, now: Time, out: &mut Vec<Reschedule>) {
        let mark = self.epoch.wrapping_add(1);
        self.comp_links.clear();
        self.comp_flows.clear();
        self.stack.clear();
        self.stack.push(seed);
        self.links[seed as usize].mark = mark;
        while let Some(l) = self.stack.pop() {
            self.comp_links.push(l);
            for i in 0..self.links[l as usize].flows.len() {
                let f = self.links[l as usize].flows[i];
                if self.flows[f as usize].mark == mark {
                    continue;
                }
                self.flows[f as usize].mark = mark;
                self.comp_flows.push(f);
                for j in 0..self.flows[f as usize].links.len() {
                    let l2 = self.flows[f as usize].links[j];
                    if self.links[l2 as usize].mark != mark {
                        self.links[l2 as usize].mark = mark;
                        self.stack.push(l2);
                    }
                }
            }
        }
        if self.comp_flows.is_empty() {
            return;
        }
        self.solves += 1;
        // bring remaining bytes up to `now` at the old rates
        for &f in &self.comp_flows {
            let fl = &mut self.flows[f as usize];
            let dt = (now - fl.last) as f64;
            fl.remaining = (fl.remaining - fl.rate * dt).max(0.0);
            fl.last = now;
        }
        // progressive filling: raise every unfrozen flow's rate together; at each step freeze the
        // flows of every link whose fair share is the smallest (within 1e-9): symmetric loads freeze
        // many links per scan, so a solve is (distinct bottleneck levels) x (links of the component).
        for &l in &self.comp_links {
            self.link_rem[l as usize] = self.links[l as usize].cap;
            self.link_n[l as usize] = self.links[l as usize].flows.len() as u32;
        }
        let unfixed_mark = mark;
        let fixed_mark = mark.wrapping_add(0x8000_0000);
        let mut new_rates = std::mem::take(&mut self.new_rates);
        new_rates.clear();
        // links that still carry unfrozen flows
        let mut live = std::mem::take(&mut self.live);
        live.clear();
        live.extend_from_slice(&self.comp_links);
        self.progressive_fill(&mut live, self.comp_flows.len(), |f, fl, share| {
            if fl.mark != unfixed_mark {
                return false;
            }
            fl.mark = fixed_mark;
            new_rates.push((f, share));
            true
        });
        self.live = live;
        for &(f, r) in &new_rates {
            let fl = &mut self.flows[f as usize];
            fl.mark = mark; // so the component is not revisited in this resolve
            if fl.rate != r || fl.version == 0 || fl.last == now {
                let changed = (fl.rate - r).abs() > r * 1e-12 || fl.rate == 0.0;
                fl.rate = r;
                if changed {
                    fl.version = fl.version.wrapping_add(1);
                    let dt = if r > 0.0 { (fl.remaining / r).ceil() } else { f64::MAX };
                    let finish = if dt >= 1e18 { u64::MAX / 2 } else { now + dt as u64 };
                    out.push(Reschedule { flow: f, finish, version: fl.version });
                }
            }
        }
        self.new_rates = new_rates;
    }
}

/// How flows share a link.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Sharing {
    /// exact max-min fairness, re-solved incrementally around what changed (module docs), or
    /// over its connected component when the change spreads
    #[default]
    MaxMin,
    /// exact max-min fairness, always re-solved over the whole connected component by progressive
    /// filling (the reference for the incremental solve; same rates, slower)
    MaxMinFull,
    /// each flow gets the smallest fair share (capacity / flows) among its links, without giving
    /// capacity left by flows limited elsewhere to the others: never oversubscribes a link, may
    /// under-use it; a change only touches the flows on the changed flow's links
    Bottleneck,
}

impl Sharing {
    /// Every sharing model, the default first.
    pub const ALL: [Sharing; 3] = [Sharing::MaxMin, Sharing::MaxMinFull, Sharing::Bottleneck];

    pub fn parse(s: &str) -> Option<Sharing> {
        Sharing::ALL.into_iter().find(|m| m.name() == s)
    }
    pub fn name(self) -> &'static str {
        match self {
            Sharing::MaxMin => "max-min",
            Sharing::MaxMinFull => "max-min-full",
            Sharing::Bottleneck => "bottleneck",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(net: &mut FlowNet, now: Time) -> Vec<Reschedule> {
        let mut v = vec![];
        net.resolve(now, &mut v);
        v
    }

    #[test]
    fn single_flow_gets_full_link() {
        let mut n = FlowNet::new();
        let l = n.add_link(10e9); // 10 B/ns
        let f = n.start(0, &[l], 1000.0, 7);
        let r = run(&mut n, 0);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].finish, 100);
        assert_eq!(n.token(f), 7);
    }

    #[test]
    fn two_flows_share_half_each_then_speed_up() {
        let mut n = FlowNet::new();
        let l = n.add_link(10e9);
        let a = n.start(0, &[l], 1000.0, 0);
        let b = n.start(0, &[l], 500.0, 1);
        let r = run(&mut n, 0);
        let fa = r.iter().find(|x| x.flow == a).unwrap();
        let fb = r.iter().find(|x| x.flow == b).unwrap();
        assert_eq!(fb.finish, 100); // 500 B at 5 B/ns
        assert_eq!(fa.finish, 200);
        // b ends at 100: a has 500 left and now gets 10 B/ns -> ends at 150
        n.finish(b);
        let r = run(&mut n, 100);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].flow, a);
        assert_eq!(r[0].finish, 150);
        assert!(!n.is_current(a, fa.version));
        assert!(n.is_current(a, r[0].version));
    }

    #[test]
    fn max_min_not_proportional() {
        // flow x over links A(10) and B(2); flow y over A only. Max-min: x=2 (bottleneck B), y=8.
        let mut n = FlowNet::new();
        let a = n.add_link(10e9);
        let b = n.add_link(2e9);
        let x = n.start(0, &[a, b], 2000.0, 0);
        let y = n.start(0, &[a], 8000.0, 0);
        let _ = run(&mut n, 0);
        assert!((n.rate_bytes_per_s(x) - 2e9).abs() < 1.0);
        assert!((n.rate_bytes_per_s(y) - 8e9).abs() < 1.0);
    }

    #[test]
    fn bottleneck_sharing_does_not_redistribute() {
        // same case as max_min_not_proportional: x is limited to 2 by B; y gets A's fair share 5
        let mut n = FlowNet::new();
        n.sharing = Sharing::Bottleneck;
        let a = n.add_link(10e9);
        let b = n.add_link(2e9);
        let x = n.start(0, &[a, b], 2000.0, 0);
        let y = n.start(0, &[a], 8000.0, 0);
        let _ = run(&mut n, 0);
        assert!((n.rate_bytes_per_s(x) - 2e9).abs() < 1.0);
        assert!((n.rate_bytes_per_s(y) - 5e9).abs() < 1.0);
        // two flows on one link still get half each, and the survivor speeds up
        n.finish(x);
        let r = run(&mut n, 500);
        assert_eq!(r.len(), 1);
        assert!((n.rate_bytes_per_s(y) - 10e9).abs() < 1.0);
    }

    #[test]
    fn untouched_component_is_not_rescheduled() {
        let mut n = FlowNet::new();
        let a = n.add_link(1e9);
        let b = n.add_link(1e9);
        n.start(0, &[a], 100.0, 0);
        let _ = run(&mut n, 0);
        n.start(10, &[b], 100.0, 0);
        let r = run(&mut n, 10);
        assert_eq!(r.len(), 1, "only the new flow on the other link gets a time");
    }

    /// A tiny deterministic generator (xorshift) so the test needs no crate.
    struct Xs(u64);
    impl Xs {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    /// 1 to 4 distinct links out of `nlinks`, in random order (a flow's path).
    fn random_path(rng: &mut Xs, nlinks: usize) -> Vec<LinkId> {
        let len = 1 + rng.below(4) as usize;
        let mut links: Vec<LinkId> = vec![];
        while links.len() < len {
            let l = rng.below(nlinks as u64) as LinkId;
            if !links.contains(&l) {
                links.push(l);
            }
        }
        links
    }

    /// The incremental max-min solve gives the rates of the whole-component solve after every
    /// change, over random networks (shared "NIC" links, a few "spine" links, uneven capacities)
    /// and random sequences of flow starts and ends, several per instant.
    #[test]
    fn incremental_max_min_equals_full_solve() {
        let mut total_incremental = 0;
        for seed in 1..=60u64 {
            let mut rng = Xs(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
            let nlinks = 4 + rng.below(40) as usize;
            let mut inc = FlowNet::new();
            let mut full = FlowNet::new();
            full.sharing = Sharing::MaxMinFull;
            for _ in 0..nlinks {
                // a few capacity classes, so that ties (equal shares) are common
                let bw = [1e9, 2e9, 2.5e9, 5e9, 12.5e9][rng.below(5) as usize];
                inc.add_link(bw);
                full.add_link(bw);
            }
            let mut live: Vec<(FlowId, FlowId)> = vec![];
            let mut now = 0;
            for _step in 0..400 {
                now += rng.below(3);
                let starts = rng.below(4);
                for _ in 0..starts {
                    let links = random_path(&mut rng, nlinks);
                    let bytes = 1000.0 + rng.below(100_000) as f64;
                    let a = inc.start(now, &links, bytes, 0);
                    let b = full.start(now, &links, bytes, 0);
                    live.push((a, b));
                }
                let ends = if live.is_empty() { 0 } else { rng.below(3) };
                for _ in 0..ends {
                    if live.is_empty() {
                        break;
                    }
                    let i = rng.below(live.len() as u64) as usize;
                    let (a, b) = live.swap_remove(i);
                    inc.finish(a);
                    full.finish(b);
                }
                let (mut ra, mut rb) = (vec![], vec![]);
                inc.resolve(now, &mut ra);
                full.resolve(now, &mut rb);
                for &(a, b) in &live {
                    let (x, y) = (inc.rate_bytes_per_s(a), full.rate_bytes_per_s(b));
                    assert!((x - y).abs() <= 1e-6 * y.max(1.0), "seed {seed}: flow rates {x} (incremental) vs {y} (full)");
                }
                // the finish times scheduled now agree too
                let mut fa: Vec<(usize, Time)> = ra.iter().map(|r| (live.iter().position(|p| p.0 == r.flow).unwrap(), r.finish)).collect();
                let mut fb: Vec<(usize, Time)> = rb.iter().map(|r| (live.iter().position(|p| p.1 == r.flow).unwrap(), r.finish)).collect();
                fa.sort();
                fb.sort();
                for (x, y) in fa.iter().zip(&fb) {
                    if x.0 == y.0 {
                        assert!(x.1.abs_diff(y.1) <= 1, "seed {seed}: finish {} vs {}", x.1, y.1);
                    }
                }
            }
            assert_eq!(full.incremental_solves, 0);
            total_incremental += inc.incremental_solves;
        }
        // the incremental solve really ran (it is not the fallback every time)
        assert!(total_incremental > 1000, "only {total_incremental} incremental solves");
    }

    /// Bottleneck sharing re-rates only the flows a change can affect; after every change each
    /// flow's rate is still the smallest `capacity / flows` of its links (computed here from
    /// scratch), over random networks and random starts and ends.
    #[test]
    fn bottleneck_rerating_equals_recomputing_every_flow() {
        for seed in 1..=60u64 {
            let mut rng = Xs(seed.wrapping_mul(0x2545_f491_4f6c_dd1d) | 1);
            let nlinks = 4 + rng.below(30) as usize;
            let mut n = FlowNet::new();
            n.sharing = Sharing::Bottleneck;
            for _ in 0..nlinks {
                n.add_link([1e9, 2e9, 2.5e9, 5e9, 12.5e9][rng.below(5) as usize]);
            }
            let mut live: Vec<FlowId> = vec![];
            let mut now = 0;
            for _ in 0..400 {
                now += rng.below(3);
                for _ in 0..rng.below(4) {
                    let links = random_path(&mut rng, nlinks);
                    live.push(n.start(now, &links, 1000.0 + rng.below(100_000) as f64, 0));
                }
                for _ in 0..rng.below(3) {
                    if !live.is_empty() {
                        let i = rng.below(live.len() as u64) as usize;
                        n.finish(live.swap_remove(i));
                    }
                }
                let _ = run(&mut n, now);
                for &f in &live {
                    let want = n.flows[f as usize]
                        .links
                        .iter()
                        .map(|&l| n.links[l as usize].cap / n.links[l as usize].flows.len() as f64)
                        .fold(f64::INFINITY, f64::min);
                    let got = n.flows[f as usize].rate;
                    assert!((got - want).abs() <= 1e-12 * want, "seed {seed}: rate {got} want {want}");
                }
            }
        }
    }
}

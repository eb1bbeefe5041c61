//! Max-min fair sharing of links among flows (the "linear max-min" solver, after SimGrid's lmm).
//!
//! A flow crosses a list of links and has bytes left to move.  Concurrent flows share every link
//! max-min fairly: progressive filling raises all rates together, freezes the flows of the first
//! saturated link, and repeats.  When a flow starts or ends, only the connected component of flows
//! and links that it touches is re-solved (`resolve`), and only flows whose rate changed get a new
//! finish time: the caller schedules their completion with the returned version and ignores stale
//! versions (lazy invalidation).  Starts and ends at one instant are batched into one solve.

use crate::topology::LinkId;

pub type FlowId = u32;
type Time = u64;

#[derive(Clone, Debug)]
struct Link {
    /// bytes per ns
    cap: f64,
    flows: Vec<FlowId>,
    mark: u32,
}

#[derive(Clone, Debug)]
struct Flow {
    links: Vec<LinkId>,
    remaining: f64,
    /// bytes per ns
    rate: f64,
    last: Time,
    version: u32,
    active: bool,
    mark: u32,
    token: u64,
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
}

impl FlowNet {
    pub fn new() -> FlowNet {
        FlowNet::default()
    }

    /// Adds a link of `bw_bytes_per_s`; returns its id (ids are dense from 0).
    pub fn add_link(&mut self, bw_bytes_per_s: f64) -> LinkId {
        self.links.push(Link { cap: bw_bytes_per_s * 1e-9, flows: Vec::new(), mark: 0 });
        self.link_rem.push(0.0);
        self.link_n.push(0);

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
            f.links.extend_from_slice(links);
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
                links: links.to_vec(),
                remaining: bytes.max(0.0),
                rate: 0.0,
                last: now,
                version: 0,
                active: true,
                mark: 0,
                token,
            });
            (self.flows.len() - 1) as FlowId
        };
        for &l in links {
            self.links[l as usize].flows.push(id);
            self.dirty.push(l);
        }
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
            self.dirty.push(l);
        }
        self.flows[id as usize].links = links; // keep the allocation for reuse
        self.free.push(id);
        self.active_flows -= 1;
        token
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
        while let Some(seed) = self.dirty.pop() {
            if self.links[seed as usize].mark == self.epoch.wrapping_add(1) {
                continue; // already solved in this call
            }
            self.solve_component(seed, now, out);
        }
        self.epoch = self.epoch.wrapping_add(1);
    }

    fn resolve_bottleneck(&mut self, now: Time, out: &mut Vec<Reschedule>) {
        let mark = self.epoch.wrapping_add(1);
        self.solves += 1;
        while let Some(l) = self.dirty.pop() {
            if self.links[l as usize].mark == mark {
                continue;
            }
            self.links[l as usize].mark = mark;
            for k in 0..self.links[l as usize].flows.len() {
                let f = self.links[l as usize].flows[k];
                if self.flows[f as usize].mark == mark {
                    continue;
                }
                self.flows[f as usize].mark = mark;
                let mut r = f64::INFINITY;
                for &l2 in &self.flows[f as usize].links {
                    let lk = &self.links[l2 as usize];
                    let sh = lk.cap / lk.flows.len() as f64;
                    if sh < r {
                        r = sh;
                    }
                }
                let fl = &mut self.flows[f as usize];
                if (fl.rate - r).abs() > r * 1e-12 || fl.rate == 0.0 {
                    let dt = (now - fl.last) as f64;
                    fl.remaining = (fl.remaining - fl.rate * dt).max(0.0);
                    fl.last = now;
                    fl.rate = r;
                    fl.version = fl.version.wrapping_add(1);
                    let d = (fl.remaining / r).ceil();
                    let finish = if d >= 1e18 { u64::MAX / 2 } else { now + d as u64 };
                    out.push(Reschedule { flow: f, finish, version: fl.version });
                }
            }
        }
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
        let mut left = self.comp_flows.len();
        let mut new_rates = std::mem::take(&mut self.new_rates);
        new_rates.clear();
        // links that still carry unfrozen flows
        let mut live = std::mem::take(&mut self.live);
        live.clear();
        live.extend_from_slice(&self.comp_links);
        while left > 0 {
            let mut share = f64::INFINITY;
            live.retain(|&l| self.link_n[l as usize] > 0);
            for &l in &live {
                let sh = self.link_rem[l as usize] / self.link_n[l as usize] as f64;
                if sh < share {
                    share = sh;
                }
            }
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
                    if self.flows[f as usize].mark != unfixed_mark {
                        continue;
                    }
                    self.flows[f as usize].mark = fixed_mark;
                    new_rates.push((f, share));
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
    /// exact max-min fairness, re-solved over the connected component of what changed
    #[default]
    MaxMin,
    /// each flow gets the smallest fair share (capacity / flows) among its links, without giving
    /// capacity left by flows limited elsewhere to the others: never oversubscribes a link, may
    /// under-use it; a change only touches the flows on the changed flow's links
    Bottleneck,
}

impl Sharing {
    pub fn parse(s: &str) -> Option<Sharing> {
        match s {
            "max-min" => Some(Sharing::MaxMin),
            "bottleneck" => Some(Sharing::Bottleneck),
            _ => None,
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
}

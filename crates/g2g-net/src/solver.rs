//! Which solve holds exact max-min's flows (`Sharing::MaxMin`): the per-flow incremental solve
//! (`lmm.rs`) or the grouped solve (`grouped.rs`), and the hand-off between them.
//!
//! The two solve the same model and give the same rates (to the 1e-9 tolerance both use) and the
//! same finish times (both round a finish up to the ns alike: `grouped.rs`'s `ceil_tol`, `lmm.rs`'s
//! `finish_ns`), at costs that differ with the traffic.  The per-flow solve re-rates flow by flow:
//! cheap when a change moves a few flows of a few rates (a halo exchange: about 4 re-rated flows
//! per bottleneck link a change moves), dear when it moves many flows at one link's rate (an
//! all-to-all: about 75), where the grouped solve re-rates the group once.  Under `Solver::Auto`
//! (the default) the net counts, over windows of `WINDOW` solves, how many flows each change
//! moves per rate it gives (the per-flow solve's `incremental_rerates / rerate_bottlenecks`,
//! the grouped solve's `rerated_flows / rerated_groups`) and hands its flows to the other solve at
//! the next change when the window says it would be cheaper: to the grouped one at
//! `TO_GROUPED` flows per rate or more, back at `TO_PER_FLOW` or fewer (apart, so that a window
//! near one threshold does not hand the flows back and forth).  The choice reads only simulated
//! counts, so a trace and machine always take the same hand-offs.
//!
//! A hand-off moves every live flow, with its bytes left at that instant, its links, its token and
//! its latency, out of one solve and into the other, then solves them all afresh there (the rates
//! a fresh max-min solve gives are the ones the incremental solve kept).  The pending completion
//! events of the solve given up become stale: a grouped event's id carries `GROUP_EVENT`, a
//! per-flow event's never does, and each moved per-flow flow's generation moves on.
use crate::lmm::{Completion, FlowNet, Sharing};
use crate::topology::LinkId;

type Time = u64;

/// A grouped completion event's id is its group's with this bit set (per-flow ids never reach it).
pub const GROUP_EVENT: u32 = 1 << 31;
/// Solves per window of the choice
pub const WINDOW: u64 = 1024;
/// Flows per rate a window's changes moved at or above which the flows go to the grouped solve
pub const TO_GROUPED: u64 = 16;
/// ... and at or below which they come back to the per-flow solve
pub const TO_PER_FLOW: u64 = 6;

/// How exact max-min (`Sharing::MaxMin`) is solved.  Not a model: every choice gives the same
/// rates and finish times (module docs); it changes only the simulator's speed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Solver {
    /// by the traffic, window by window (module docs)
    #[default]
    Auto,
    /// always the per-flow incremental solve
    PerFlow,
    /// always the grouped solve
    Grouped,
}

impl Solver {
    pub const ALL: [Solver; 3] = [Solver::Auto, Solver::PerFlow, Solver::Grouped];

    pub fn parse(s: &str) -> Option<Solver> {
        Solver::ALL.into_iter().find(|m| m.name() == s)
    }

    pub fn name(self) -> &'static str {
        match self {
            Solver::Auto => "auto",
            Solver::PerFlow => "per-flow",
            Solver::Grouped => "grouped",
        }
    }
}

/// The counts a window of the choice started from (`FlowNet::watch`)
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Window {
    solves: u64,
    flows: u64,
    rates: u64,
    /// the hand-off the last full window asked for, made at the next change
    switch: bool,
    /// the per-flow solve's whole-component solves, summed: the flows they re-rated and an
    /// estimate of the rates they gave (`count_component`)
    comp_flows: u64,
    comp_rates: u64,
    /// tests: solves per window in place of `WINDOW` (0: `WINDOW`), and a hand-off every this
    /// many solves whatever the counts (0: none)
    #[cfg(test)]
    pub(crate) size: u64,
    #[cfg(test)]
    pub(crate) every: u64,
}

/// A live flow on its way from one solve to the other
struct Moving {
    links: Vec<LinkId>,
    bytes_left: f64,
    token: u64,
    latency_ns: Time,
}

impl FlowNet {
    /// Does the grouped solve take a flow started now?  Only while it holds the flows, or at the
    /// first flow when it is the solve asked for.
    pub(crate) fn starts_grouped(&mut self) -> bool {
        if !self.grouped_on
            && self.active_flows == 0
            && (self.sharing == Sharing::MaxMinGrouped
                || (self.sharing == Sharing::MaxMin && self.solver == Solver::Grouped))
        {
            self.grouped_on = true;
            self.solver_switches_ns.clear();
        }
        self.grouped_on
    }

    /// Which solve holds the flows now: `per-flow`, `grouped`, or `both` once a hand-off was
    /// made (the instants are in `solver_switches_ns`); `none` where the sharing is not exact
    /// max-min.
    pub fn solver_used(&self) -> &'static str {
        match self.sharing {
            Sharing::MaxMinGrouped => "grouped",
            Sharing::MaxMin if !self.solver_switches_ns.is_empty() => "both",
            Sharing::MaxMin if self.grouped_on || self.solver == Solver::Grouped => "grouped",
            Sharing::MaxMin => "per-flow",
            Sharing::MaxMinFull => "per-flow",
            Sharing::Bottleneck => "none",
        }
    }

    /// After a solve (`Solver::Auto`): closes the window when it is full, and asks for a hand-off
    /// at the next change when the window's flows per rate say the other solve is cheaper.
    pub(crate) fn watch(&mut self) {
        if self.sharing != Sharing::MaxMin || self.solver != Solver::Auto {
            return;
        }
        #[cfg(test)]
        if self.win.every > 0 {
            self.win.switch = self.solves.is_multiple_of(self.win.every);
            return;
        }
        let (solves, flows, rates) = self.window_counts();
        let w = &mut self.win;
        #[cfg(test)]
        let window = if w.size > 0 { w.size } else { WINDOW };
        #[cfg(not(test))]
        let window = WINDOW;
        if solves < w.solves + window {
            return;
        }
        let (df, dr) = (flows - w.flows, rates - w.rates);
        w.switch = if self.grouped_on { df <= TO_PER_FLOW * dr } else { dr > 0 && df >= TO_GROUPED * dr };
        (w.solves, w.flows, w.rates) = (solves, flows, rates);
    }

    /// What the window reads of the solve that holds the flows: its solves, the flows its solves
    /// re-rated and the rates they gave (bottleneck links, groups)
    fn window_counts(&self) -> (u64, u64, u64) {
        match self.grouped.as_ref().filter(|_| self.grouped_on) {
            Some(g) => (g.net.counts.solves, g.net.counts.rerated_flows, g.net.counts.rerated_groups),
            None => (
                self.incremental_solves + self.component_solves,
                self.incremental_rerates + self.win.comp_flows,
                self.rerate_bottlenecks + self.win.comp_rates,
            ),
        }
    }

    /// After a whole-component solve of the per-flow net (`Solver::Auto`), which re-rated the
    /// flows of `rerated`: their number, and the rates they took, estimated from up to `SAMPLE`
    /// of them spread over the list (the filling gives no count of its levels; an all-to-all's
    /// component solves re-rate thousands of flows at a few rates, a halo's small ones a few
    /// flows at a few rates).
    pub(crate) fn count_component(&mut self, rerated: &[crate::lmm::Reschedule]) {
        const SAMPLE: usize = 64;
        let n = rerated.len();
        if n == 0 || self.sharing != Sharing::MaxMin || self.solver != Solver::Auto {
            return;
        }
        let step = n.div_ceil(SAMPLE);
        let mut rates: Vec<u64> = rerated.iter().step_by(step).map(|r| self.rate_of(r.flow).to_bits()).collect();
        let taken = rates.len();
        rates.sort_unstable();
        rates.dedup();
        self.win.comp_flows += n as u64;
        self.win.comp_rates += (n * rates.len()).div_ceil(taken) as u64;
    }

    /// Before a solve: the hand-off the last window asked for.
    pub(crate) fn hand_off_if_asked(&mut self, now: Time) {
        if !self.win.switch {
            return;
        }
        self.win.switch = false;
        let mut moving = Vec::with_capacity(self.active_flows);
        if self.grouped_on {
            let mut g = self.grouped.take().expect("the grouped net holds the flows");
            let mut live = Vec::with_capacity(self.active_flows);
            g.net.live_flows(now as f64, &mut live);
            for (f, bytes_left) in live {
                let links = g.net.flow_links(f).to_vec();
                let (token, latency_ns) = self.grouped_end(&mut g, f, now);
                moving.push(Moving { links, bytes_left, token, latency_ns });
            }
            // kept, empty: its groups' event versions go on from where they are, so that its
            // events still queued stay stale if it takes the flows again
            g.net.drop_pending();
            self.grouped = Some(g);
            self.grouped_on = false;
            for m in &moving {
                let f = self.start(now, &m.links, m.bytes_left, m.token);
                self.completion(f).lat = m.latency_ns;
            }
        } else {
            for f in 0..self.flow_slots() {
                let Some((links, bytes_left)) = self.live_at(f, now) else { continue };
                let latency_ns = self.completion(f).lat;
                // its queued event, if any, goes stale (and the slot's next flow starts without one)
                self.completion(f).pend = Completion::NO_EVENT;
                let gen = &mut self.gens[f as usize];
                *gen = gen.wrapping_add(1);
                let token = self.finish(f);
                moving.push(Moving { links, bytes_left, token, latency_ns });
            }
            // nothing is left for the per-flow solve: what its changes marked is dropped
            self.drop_pending_changes();
            // (made here if this is the first hand-off: no flow may be live to make it)
            let g = self.grouped_box();
            self.grouped = Some(g);
            self.grouped_on = true;
            for m in &moving {
                self.grouped_start(now, &m.links, m.bytes_left, m.token, m.latency_ns);
            }
        }
        self.solver_switches_ns.push(now);
        self.handed_off_flows += moving.len() as u64;
        // the next window counts the solve that holds the flows now
        let (solves, flows, rates) = self.window_counts();
        (self.win.solves, self.win.flows, self.win.rates) = (solves, flows, rates);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::completion::tests::{drive_net, random_starts, Starts};

    fn run(solver: Solver, win: Window, caps: &[f64], starts: &[(Time, Vec<LinkId>, f64)]) -> (Vec<Time>, FlowNet) {
        let mut net = FlowNet::new();
        net.solver = solver;
        net.win = win;
        let (ends, _, _) = drive_net(&mut net, caps, starts);
        assert!(ends.iter().all(|&t| t != Time::MAX), "a flow never ended");
        (ends, net)
    }

    /// The two solves end every flow at the same ns, and so does a run whose flows change hands
    /// every few solves, both ways, with events of the solve given up still queued.
    #[test]
    fn hand_offs_back_and_forth_change_no_end() {
        for seed in [0x2545_f491_4f6c_dd1d, 7, 99] {
            let (caps, starts) = random_starts(seed);
            let (want, _) = run(Solver::PerFlow, Window::default(), &caps, &starts);
            let (grouped, _) = run(Solver::Grouped, Window::default(), &caps, &starts);
            assert_eq!(grouped, want, "seed {seed}: the grouped solve");
            for every in [3, 7, 50] {
                let (got, net) = run(Solver::Auto, Window { every, ..Default::default() }, &caps, &starts);
                assert!(net.solver_switches_ns.len() >= 4, "seed {seed}: {} hand-offs", net.solver_switches_ns.len());
                assert!(net.handed_off_flows > 0);
                assert_eq!(net.solver_used(), "both");
                assert_eq!(got, want, "seed {seed}: a hand-off every {every} solves");
            }
        }
    }

    /// A hand-off asked for after a solve that left no flow live: the grouped net is made for
    /// the flows that come later (it was once made only by a flow's start, and the next solve
    /// found none).
    #[test]
    fn a_hand_off_with_no_flow_live_leaves_a_net_for_the_next() {
        let caps = vec![10e9, 25e9];
        let starts: Starts = vec![(0, vec![0], 1e4), (1_000_000, vec![0, 1], 1e4), (1_000_100, vec![1], 1e4)];
        let (want, _) = run(Solver::PerFlow, Window::default(), &caps, &starts);
        let (got, net) = run(Solver::Auto, Window { every: 1, ..Default::default() }, &caps, &starts);
        assert!(net.solver_switches_ns.len() >= 3, "{:?}", net.solver_switches_ns);
        assert_eq!(got, want);
    }

    /// An all-to-all's waves over 8 nodes: each wave, `per_node` equal flows out of each node's
    /// NIC (links 0-7) into the other nodes' (links 8-15), started one ns apart; a wave every 5 us
    fn waves(per_node: usize) -> (Vec<f64>, Starts) {
        let caps = vec![12.5e9; 16];
        let mut starts = vec![];
        for wave in 0..40u64 {
            for n in 0..8 {
                for k in 0..per_node {
                    let to = (n + 1 + k % 7) % 8;
                    starts.push((wave * 5000 + k as u64, vec![n as LinkId, 8 + to as LinkId], 4096.0));
                }
            }
        }
        (caps, starts)
    }

    /// `Solver::Auto` hands the flows to the grouped solve where a change moves many flows at one
    /// rate (flows that start one after the other on a shared link take one rate each until the
    /// last has started, then end together), and keeps them per flow where it moves few; the
    /// ends are the per-flow solve's either way.
    #[test]
    fn auto_takes_the_grouped_solve_where_changes_move_many_flows_at_one_rate() {
        let small = Window { size: 16, ..Default::default() };
        let (caps, starts) = waves(48);
        let (want, _) = run(Solver::PerFlow, Window::default(), &caps, &starts);
        let (got, net) = run(Solver::Auto, small, &caps, &starts);
        assert_eq!(net.solver_used(), "both", "48 flows a NIC: {:?}", net.solver_switches_ns);
        assert!(net.grouped_on, "still grouped at the end");
        assert_eq!(got, want);
        let (caps, starts) = waves(2);
        let (got, net) = run(Solver::Auto, small, &caps, &starts);
        assert_eq!(net.solver_used(), "per-flow", "2 flows a NIC: {:?}", net.solver_switches_ns);
        assert_eq!(got, run(Solver::PerFlow, Window::default(), &caps, &starts).0);
    }
}

//! Completion events for an event-driven caller of the flow network (the replay, `g2g-mpi`): the
//! bookkeeping of each flow's pending completion event (`lmm::Completion`, kept with the flow)
//! behind three calls, so that the caller only schedules and delivers events.
//!
//! A flow's completion event is set lazily: a flow slowed down keeps its pending event, which
//! re-arms itself at the new finish when it fires; a flow sped up gets a new event (a generation,
//! in a dense table of its own, tells the live one).  A flow sped up by a little (its new finish
//! before its pending event by less than `1 / EARLY` of the time it has left) gets its new event
//! that much early, so that the next small speed-ups find it still early enough and need none: it
//! re-arms at the finish when it fires.  An all-to-all's flow is sped up by about 1 % each time
//! one of the ~128 flows of its NIC ends, dozens of times; each speed-up set an event, and the
//! one it replaced was delivered stale (1,024 ranks: 38 M of 51 M events).  Fewer events than one
//! per re-rating, same completion times.
use crate::grouped::{GroupDue, GroupEnd, GroupNet};
use crate::lmm::{Completion, FlowId, FlowNet, Reschedule};
use crate::solver::GROUP_EVENT;
use crate::topology::LinkId;
/// Simulated time, ns (as `g2g_engine::Time`).
type Time = u64;

/// A flow whose new finish is before its pending event by less than `1 / EARLY` of the time it
/// has left gets its new event that much before its finish (a hint: the finish, and when the flow
/// ends, do not depend on it)
pub const EARLY: u64 = 4;

/// When the event of a flow re-rated at `now` to finish at `finish` fires, given its pending one
/// (`pend`, or `Completion::NO_EVENT`); `None`: the pending one is early enough.  A flow without
/// an event, or whose finish is now before its event by `1 / EARLY` of its time left or more,
/// fires at its finish; one before it by less, `1 / EARLY` of its time left before its finish.
#[inline(always)]
pub fn event_at(now: Time, finish: Time, pend: Time) -> Option<Time> {
    if pend == Completion::NO_EVENT {
        return Some(finish);
    }
    if finish >= pend {
        return None; // slowed down, or not by enough: the pending event re-arms when it fires
    }
    let left = finish.saturating_sub(now);
    Some(if pend - finish < left / EARLY { finish - left / EARLY } else { finish })
}

/// What a flow's completion event found when it fired.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Due {
    /// superseded (an earlier event of the flow was set since, or the flow has finished)
    Stale,
    /// the flow was slowed down since the event was set: schedule `(at, flow, gen)` again
    Later { at: Time, gen: u32 },
    /// the flow has finished and is removed: its token, and the latency its data still pays
    Finished { token: u64, latency_ns: Time },
}

/// Sharing `max-min-grouped`: the grouped net in place of the per-flow one.  Its completion
/// events name groups (`(group, version)` where the others name `(flow, generation)`): a group's
/// event is at its least-target member's finish; when it fires and that member is done, the
/// member ends, and so do the group's other members done by then (`also_finished`), before the
/// next solve.  The slack links are this net's (`bounds_join`, `bounds_leave`).
#[derive(Default)]
pub(crate) struct Grouped {
    pub(crate) net: GroupNet,
    token: Vec<u64>,
    lat: Vec<Time>,
    ends: Vec<GroupEnd>,
    /// per flow, its slack bounds' record (`FlowNet::bounds_join`)
    doms: Vec<(u64, u64)>,
    /// links whose slackness a start or an end changed (scratch)
    turned: Vec<(LinkId, bool)>,
    /// the group whose event finished a member at this instant, until `also_finished` has
    /// ended the group's other members done by then
    draining: Option<u32>,
}

/// A finish in f64 ns as an event time: the next whole ns, not before `now`
fn event_ns(finish_ns: f64, now: Time) -> Time {
    (finish_ns.ceil() as Time).max(now)
}

impl FlowNet {
    /// The grouped net, taken out of `self` (made on first use), with all of this net's links
    pub(crate) fn grouped_box(&mut self) -> Box<Grouped> {
        let mut g =
            self.grouped.take().unwrap_or_else(|| Box::new(Grouped { net: GroupNet::new(2), ..Default::default() }));
        while g.net.num_links() < self.num_links() {
            let l = g.net.num_links();
            g.net.add_link(self.link_cap(l));
            // the bounds that make a link slack are this net's (`Pot`, `Dom`): an empty link is
            g.net.set_slack(l as u32, self.slack(l));
        }
        g
    }

    pub(crate) fn grouped_start(
        &mut self,
        now: Time,
        links: &[LinkId],
        bytes: f64,
        token: u64,
        latency_ns: Time,
    ) -> FlowId {
        let mut g = self.grouped_box();
        // the slack links, as max-min's start finds them: out of the grouped counts
        g.turned.clear();
        let doms = self.bounds_join(links, &mut g.turned);
        for &(l, slack) in &g.turned {
            g.net.set_slack(l, slack);
        }
        let f = g.net.start(now as f64, links, bytes);
        let i = f as usize;
        if g.token.len() <= i {
            g.token.resize(i + 1, 0);
            g.lat.resize(i + 1, 0);
            g.doms.resize(i + 1, (0, 0));
        }
        g.token[i] = token;
        g.lat[i] = latency_ns;
        g.doms[i] = doms;
        self.grouped = Some(g);
        self.active_flows += 1;
        f
    }

    /// Ends grouped flow `flow` at `now` (`g` is `self.grouped`, taken out): its links' slack
    /// bounds as max-min's `finish` leaves them, then the flow out of the grouped net.  Returns
    /// its token and latency.
    pub(crate) fn grouped_end(&mut self, g: &mut Grouped, flow: u32, now: Time) -> (u64, Time) {
        g.turned.clear();
        // (`g` is out of `self`: its links are read in place while the bounds change)
        let net = &g.net;
        self.bounds_leave(net.flow_links(flow), g.doms[flow as usize], |l| net.flows_on(l) - 1, &mut g.turned);
        g.net.finish(flow, now as f64);
        for &(l, slack) in &g.turned {
            g.net.set_slack(l, slack);
        }
        self.active_flows -= 1;
        (g.token[flow as usize], g.lat[flow as usize])
    }

    /// Starts a flow (as `start`) whose data pays `latency_ns` after it has moved (its stage's
    /// link latency, given back by `completion_due`).
    #[inline]
    pub fn start_with_latency(
        &mut self,
        now: Time,
        links: &[LinkId],
        bytes: f64,
        token: u64,
        latency_ns: Time,
    ) -> FlowId {
        if self.starts_grouped() {
            return self.grouped_start(now, links, bytes, token, latency_ns);
        }
        let f = self.start(now, links, bytes, token);
        self.completion(f).lat = latency_ns;
        f
    }

    /// Re-solves the rates (as `resolve`) and calls `schedule(at, flow, gen)` for each completion
    /// event to set: a flow whose finish moved before its pending event, or that has none
    /// (`event_at`: at the finish, or a little before it for a small speed-up).  A later finish
    /// keeps the pending event (it re-arms itself when it fires).  `scratch` is the caller's
    /// buffer (kept for its allocation).
    #[inline]
    pub fn resolve_completions(
        &mut self,
        now: Time,
        scratch: &mut Vec<Reschedule>,
        mut schedule: impl FnMut(Time, FlowId, u32),
    ) {
        self.hand_off_if_asked(now);
        if self.grouped_on {
            let g = self.grouped.as_mut().expect("the grouped net holds the flows");
            g.ends.clear();
            let before = g.net.counts.solves;
            g.net.resolve(now as f64, &mut g.ends);
            self.solves += g.net.counts.solves - before;
            for e in &g.ends {
                schedule(event_ns(e.finish_ns, now), e.group | GROUP_EVENT, e.version);
            }
            self.watch();
            return;
        }
        scratch.clear();
        let components = self.component_solves;
        self.resolve_any(now, scratch);
        if self.component_solves != components {
            self.count_component(scratch);
        }
        self.watch();
        // every re-rated flow takes its new finish; the ones that need an event stay in
        // `scratch[..keep]`, with the event's time in place of the finish (a flow is re-rated at
        // most once by a solve, and whether it needs one depends on its own record only, so the
        // order of this pass changes nothing)
        let mut keep = 0;
        for i in 0..scratch.len() {
            let r = scratch[i];
            // every flow has its record from `start`
            let e = self.completion(r.flow);
            e.finish = r.finish;
            e.version = r.version;
            if let Some(at) = event_at(now, r.finish, e.pend) {
                scratch[keep] = Reschedule { finish: at, ..r };
                keep += 1;
            }
        }
        scratch.truncate(keep);
        // events are set in flow order, as `resolve` returns them (the sequence numbers of
        // simultaneous events then do not depend on which solve ran): only these are sorted, not
        // every re-rated flow (an all-to-all's flows are mostly slowed down, and keep their event)
        self.order_reschedules(scratch);
        for r in scratch.iter() {
            self.completion(r.flow).pend = r.finish;
            let g = &mut self.gens[r.flow as usize];
            *g = g.wrapping_add(1);
            schedule(r.finish, r.flow, *g);
        }
    }

    /// Under `max-min-grouped`, what the grouped solves did (for the report's engine block).
    pub fn grouped_counts(&self) -> Option<&crate::grouped::GroupCounts> {
        self.grouped.as_ref().map(|g| &g.net.counts)
    }

    /// After a `Due::Finished`: another flow that the same event finishes at `now` (its token and
    /// latency, as `Due::Finished`'s), until none.  Only under `max-min-grouped`, where one event
    /// stands for a group: its members done at the same instant all end before the next solve,
    /// as the per-flow models' flows do (one event each).  Call it until it gives none.
    #[inline]
    pub fn also_finished(&mut self, now: Time) -> Option<(u64, Time)> {
        let gid = self.grouped.as_ref()?.draining?;
        let mut g = self.grouped.take()?;
        let out = match g.net.also_done(gid, now as f64) {
            Some(flow) => Some(self.grouped_end(&mut g, flow, now)),
            None => {
                g.draining = None;
                None
            }
        };
        self.grouped = Some(g);
        out
    }

    /// The completion event `(flow, gen)` fires at `now`: stale, due later, or the flow finished
    /// (removed from the network; call `resolve_completions` before time moves on).
    #[inline]
    pub fn completion_due(&mut self, f: FlowId, gen: u32, now: Time) -> Due {
        if self.grouped_on {
            // an event of the per-flow solve that held the flows before a hand-off
            if f & GROUP_EVENT == 0 {
                return Due::Stale;
            }
            let f = f & !GROUP_EVENT;
            let mut g = self.grouped.take().expect("the grouped net holds the flows");
            let due = match g.net.due(f, gen, now as f64) {
                GroupDue::Stale => Due::Stale,
                GroupDue::Later(finish_ns) => Due::Later { at: event_ns(finish_ns, now + 1), gen },
                GroupDue::Done(flow) => {
                    g.draining = Some(f);
                    let (token, latency_ns) = self.grouped_end(&mut g, flow, now);
                    Due::Finished { token, latency_ns }
                }
            };
            self.grouped = Some(g);
            return due;
        }
        // superseded by an earlier one: told by the dense table, without the flow's record (or
        // an event of the grouped solve that held the flows before a hand-off)
        if f & GROUP_EVENT != 0 || gen != self.gens[f as usize] {
            return Due::Stale;
        }
        let e = self.completion(f);
        if e.pend == Completion::NO_EVENT {
            return Due::Stale;
        }
        e.pend = Completion::NO_EVENT;
        let (version, finish, latency_ns) = (e.version, e.finish, e.lat);
        if !self.is_current(f, version) {
            return Due::Stale;
        }
        if finish > now {
            // the flow was slowed down since this event was set: one event at its new finish
            self.completion(f).pend = finish;
            let g = &mut self.gens[f as usize];
            *g = g.wrapping_add(1);
            return Due::Later { at: finish, gen: *g };
        }
        let token = self.finish(f);
        Due::Finished { token, latency_ns }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::lmm::Sharing;

    /// Delivers events in time order (ties: first scheduled first) until none is left; returns
    /// the finished flows' (time, token).
    fn run(net: &mut FlowNet, mut events: Vec<(Time, FlowId, u32)>) -> Vec<(Time, u64)> {
        let mut scratch = Vec::new();
        let mut done = vec![];
        let mut stale = 0;
        while !events.is_empty() {
            let i = (0..events.len()).min_by_key(|&i| (events[i].0, i)).unwrap();
            let (now, f, g) = events.remove(i);
            match net.completion_due(f, g, now) {
                Due::Stale => stale += 1,
                Due::Later { at, gen } => events.push((at, f, gen)),
                Due::Finished { token, latency_ns } => {
                    done.push((now + latency_ns, token));
                    net.resolve_completions(now, &mut scratch, |at, f, g| events.push((at, f, g)));
                }
            }
        }
        assert!(stale <= 4);
        done
    }

    #[test]
    fn flows_sharing_a_link_finish_when_their_bytes_have_moved() {
        for sharing in [Sharing::MaxMin, Sharing::Bottleneck] {
            let mut net = FlowNet::new();
            net.sharing = sharing;
            let l = net.add_link(1e9); // 1 byte per ns
            let mut events = vec![];
            let mut scratch = Vec::new();
            net.start_with_latency(0, &[l], 1000.0, 1, 7);
            net.start_with_latency(0, &[l], 3000.0, 2, 0);
            net.resolve_completions(0, &mut scratch, |at, f, g| events.push((at, f, g)));
            assert_eq!(events.len(), 2);
            // both at half speed: the first done at 2000 (+7 latency); the second then runs alone
            // and moves its last 2000 bytes by 4000
            assert_eq!(run(&mut net, events), vec![(2007, 1), (4000, 2)]);
            assert_eq!(net.active_flows, 0);
        }
    }

    /// The events a change sets come in flow order, the same from the incremental and the
    /// whole-component solve (their solves find the flows in different orders), and they are the
    /// flows `resolve` returns that sped up or had no event.  Flows on a few shared links start
    /// and finish in batches, so that each change re-rates many flows, some faster, some slower.
    #[test]
    fn events_are_set_in_flow_order_whichever_solve_ran() {
        let mut next = 0x9e37_79b9_7f4a_7c15u64;
        let mut below = |n: u64| {
            next ^= next << 13;
            next ^= next >> 7;
            next ^= next << 17;
            next % n
        };
        let mut nets: Vec<FlowNet> = [Sharing::MaxMin, Sharing::MaxMinFull, Sharing::MaxMin]
            .into_iter()
            .map(|s| {
                let mut n = FlowNet::new();
                n.sharing = s;
                n
            })
            .collect();
        for i in 0..96 {
            for n in nets.iter_mut() {
                n.add_link([10e9, 12.5e9, 25e9][i % 3]);
            }
        }
        let mut live: Vec<FlowId> = vec![];
        let mut scratch = Vec::new();
        let (mut checked, mut kept_fewer, mut early) = (0, 0, 0);
        for step in 0..800u64 {
            let now = step * 1000;
            if live.len() > 300 && below(3) != 0 {
                for _ in 0..1 + below(3) {
                    let k = below(live.len() as u64) as usize;
                    let f = live.swap_remove(k);
                    for n in nets.iter_mut() {
                        n.finish(f);
                    }
                }
            } else {
                for _ in 0..1 + below(3) {
                    let len = 2 + below(4) as usize;
                    let mut links: Vec<LinkId> = (0..len).map(|_| below(96) as LinkId).collect();
                    links.sort_unstable();
                    links.dedup();
                    let bytes = 1e5 * (1 + below(50)) as f64;
                    let ids: Vec<FlowId> =
                        nets.iter_mut().map(|n| n.start_with_latency(now, &links, bytes, 0, 0)).collect();
                    assert!(ids.iter().all(|&f| f == ids[0]));
                    live.push(ids[0]);
                }
            }
            let mut sets: Vec<Vec<(Time, FlowId, u32)>> = vec![];
            for n in nets.iter_mut().take(2) {
                let mut ev = vec![];
                n.resolve_completions(now, &mut scratch, |at, f, g| ev.push((at, f, g)));
                sets.push(ev);
            }
            // the third net: `resolve`'s list, and which of it needs an event
            let mut all = vec![];
            let pend: std::collections::HashMap<FlowId, Time> =
                live.iter().map(|&f| (f, nets[2].completion(f).pend)).collect();
            nets[2].resolve(now, &mut all);
            let want: Vec<FlowId> = all
                .iter()
                .filter(|r| pend[&r.flow] == Completion::NO_EVENT || r.finish < pend[&r.flow])
                .map(|r| r.flow)
                .collect();
            for r in &all {
                let e = nets[2].completion(r.flow);
                (e.finish, e.version) = (r.finish, r.version);
                if e.pend == Completion::NO_EVENT || r.finish < e.pend {
                    let left = r.finish - now;
                    let small = e.pend != Completion::NO_EVENT && e.pend - r.finish < left / EARLY;
                    let at = if small { r.finish - left / EARLY } else { r.finish };
                    early += usize::from(small);
                    assert!(at >= now && at <= r.finish);
                    e.pend = at;
                    nets[2].gens[r.flow as usize] = nets[2].gens[r.flow as usize].wrapping_add(1);
                }
            }
            // each event at the time the replica sets (the early ones included)
            let times: Vec<Time> = want.iter().map(|&f| nets[2].completion(f).pend).collect();
            assert_eq!(sets[0].iter().map(|e| e.0).collect::<Vec<_>>(), times, "step {step}: event times");
            assert_eq!(sets[0], sets[1], "step {step}: incremental and whole-component events differ");
            assert!(sets[0].windows(2).all(|w| w[0].1 < w[1].1), "step {step}: not in flow order");
            assert_eq!(sets[0].iter().map(|e| e.1).collect::<Vec<_>>(), want, "step {step}");
            checked += sets[0].len();
            kept_fewer += usize::from(want.len() < all.len());
        }
        let inc = nets[0].incremental_solves;
        assert!(inc > 50, "the incremental solve ran {inc} times");
        assert!(checked > 500 && kept_fewer > 30, "events {checked}, changes that kept some events {kept_fewer}");
        assert!(early > 20, "early events {early}");
    }

    /// A flow sped up a little, many times (one long flow among 100 short ones on a link: each
    /// end gives it ~1 % more), needs a few events, not one per speed-up, and every flow ends
    /// when it does with an event at every finish (each re-rating's, delivered if still current).
    #[test]
    fn small_speed_ups_share_an_early_event() {
        let setup = || {
            let mut net = FlowNet::new();
            let l = net.add_link(1e9); // 1 byte per ns
            let long = net.start_with_latency(0, &[l], 1e6, 0, 0);
            for i in 1..=100u64 {
                net.start_with_latency(0, &[l], 1000.0 * i as f64, i, 0);
            }
            (net, long)
        };
        // events as `resolve_completions` sets them (lazy, early for small speed-ups)
        let (mut net, long) = setup();
        let mut scratch = Vec::new();
        let mut events = vec![];
        net.resolve_completions(0, &mut scratch, |at, f, g| events.push((at, f, g)));
        let (mut done, mut long_events) = (vec![], 1);
        while !events.is_empty() {
            let i = (0..events.len()).min_by_key(|&i| (events[i].0, i)).unwrap();
            let (now, f, g) = events.remove(i);
            match net.completion_due(f, g, now) {
                Due::Stale => {}
                Due::Later { at, gen } => {
                    long_events += usize::from(f == long);
                    events.push((at, f, gen));
                }
                Due::Finished { token, .. } => {
                    done.push((now, token));
                    net.resolve_completions(now, &mut scratch, |at, f, g| {
                        long_events += usize::from(f == long);
                        events.push((at, f, g));
                    });
                }
            }
        }
        // every re-rating's finish as an event of its own (eager: one per re-rating)
        let (mut net2, _) = setup();
        let mut out = Vec::new();
        net2.resolve(0, &mut out);
        let mut eager: Vec<(Time, FlowId, u32)> = out.iter().map(|r| (r.finish, r.flow, r.version)).collect();
        let (mut done2, mut long_eager) = (vec![], 0);
        while !eager.is_empty() {
            let i = (0..eager.len()).min_by_key(|&i| (eager[i].0, i)).unwrap();
            let (now, f, v) = eager.remove(i);
            if !net2.is_current(f, v) {
                continue;
            }
            done2.push((now, net2.finish(f)));
            out.clear();
            net2.resolve(now, &mut out);
            long_eager += out.iter().filter(|r| r.flow == long).count();
            eager.extend(out.iter().map(|r| (r.finish, r.flow, r.version)));
        }
        assert_eq!(done.len(), 101);
        assert_eq!(done, done2, "the same ends, at the same times");
        assert!(long_eager >= 100, "the long flow was re-rated {long_eager} times");
        assert!(long_events <= 20, "the long flow took {long_events} events");
    }

    #[test]
    fn an_event_is_set_early_only_for_a_small_speed_up() {
        let none = Completion::NO_EVENT;
        assert_eq!(event_at(0, 100, none), Some(100), "a first event: at the finish");
        assert_eq!(event_at(0, 100, 100), None, "the same finish");
        assert_eq!(event_at(0, 120, 100), None, "slowed down: the pending event re-arms");
        assert_eq!(event_at(0, 99, 100), Some(99 - 99 / EARLY), "a small speed-up: early");
        assert_eq!(event_at(40, 99, 100), Some(99 - 59 / EARLY), "by a part of the time left");
        assert_eq!(event_at(0, 50, 100), Some(50), "a large one: at the finish");
        assert_eq!(event_at(10, 12, 13), Some(12), "under EARLY ns left: at the finish");
        assert_eq!(event_at(7, 7, 9), Some(7), "due now");
    }

    #[test]
    fn a_slowed_flow_rearms_its_event() {
        let mut net = FlowNet::new();
        let l = net.add_link(1e9);
        let mut events = vec![];
        let mut scratch = Vec::new();
        let a = net.start_with_latency(0, &[l], 1000.0, 1, 0);
        net.resolve_completions(0, &mut scratch, |at, f, g| events.push((at, f, g)));
        assert_eq!(events, vec![(1000, a, 1)]);
        // a second flow at 500 halves the first's rate: its pending event (1000) stays and re-arms
        net.start_with_latency(500, &[l], 250.0, 2, 0);
        let mut more = vec![];
        net.resolve_completions(500, &mut scratch, |at, f, g| more.push((at, f, g)));
        assert_eq!(more.len(), 1, "only the new flow gets an event");
        assert_eq!(
            net.completion_due(a, 1, 1000),
            Due::Later { at: 1500, gen: 2 },
            "500 bytes left at half speed from 500"
        );
        assert_eq!(net.completion_due(a, 1, 1000), Due::Stale);
    }

    /// Flows started at given times: (start ns, links, bytes)
    pub(crate) type Starts = Vec<(Time, Vec<LinkId>, f64)>;

    /// 24 links of three capacities and 600 flows over 1-4 of them, started every 200 ns or so
    pub(crate) fn random_starts(seed: u64) -> (Vec<f64>, Starts) {
        let mut rng = crate::lmm::tests::Xs(seed);
        let mut below = |n: u64| rng.below(n);
        let caps: Vec<f64> = (0..24).map(|i| [10e9, 12.5e9, 25e9][i % 3]).collect();
        let starts = (0..600)
            .map(|i| {
                let mut links: Vec<LinkId> = (0..1 + below(4)).map(|_| below(24) as LinkId).collect();
                links.sort_unstable();
                links.dedup();
                (i as Time * 200 + below(150), links, 4096.0 * (1 + below(64)) as f64)
            })
            .collect();
        (caps, starts)
    }

    /// An event-driven run: flows started at given times (`(t, links, bytes)`, token = index),
    /// every completion delivered; returns each token's end time.
    fn drive(sharing: Sharing, caps: &[f64], starts: &[(Time, Vec<LinkId>, f64)]) -> (Vec<Time>, u64, u64) {
        let mut net = FlowNet::new();
        net.sharing = sharing;
        drive_net(&mut net, caps, starts)
    }

    /// `drive` on a net set up by the caller (its sharing and solver).
    pub(crate) fn drive_net(
        net: &mut FlowNet,
        caps: &[f64],
        starts: &[(Time, Vec<LinkId>, f64)],
    ) -> (Vec<Time>, u64, u64) {
        use std::cmp::Reverse;
        use std::collections::BinaryHeap;
        for &c in caps {
            net.add_link(c);
        }
        // (time, seq, flow or u32::MAX for a start, gen or start index)
        let mut q: BinaryHeap<Reverse<(Time, u64, u32, u32)>> = BinaryHeap::new();
        let mut seq = 0u64;
        for (i, s) in starts.iter().enumerate() {
            q.push(Reverse((s.0, seq, u32::MAX, i as u32)));
            seq += 1;
        }
        let mut end = vec![Time::MAX; starts.len()];
        let mut scratch = Vec::new();
        let mut events = 0u64;
        while let Some(Reverse((now, _, f, g))) = q.pop() {
            events += 1;
            if f == u32::MAX {
                let (_, links, bytes) = &starts[g as usize];
                net.start_with_latency(now, links, *bytes, g as u64, 0);
            } else {
                // (a stale or re-armed event may be an instant's last: the solve below still
                // runs after it)
                match net.completion_due(f, g, now) {
                    Due::Stale => {}
                    Due::Later { at, gen } => {
                        q.push(Reverse((at, seq, f, gen)));
                        seq += 1;
                    }
                    Due::Finished { token, .. } => {
                        end[token as usize] = now;
                        while let Some((token, _)) = net.also_finished(now) {
                            end[token as usize] = now;
                        }
                    }
                }
            }
            // one solve per instant, after its last event
            if q.peek().is_none_or(|Reverse(e)| e.0 > now) {
                let mut new = vec![];
                net.resolve_completions(now, &mut scratch, |at, f, g| new.push((at, f, g)));
                for (at, f, g) in new {
                    q.push(Reverse((at, seq, f, g)));
                    seq += 1;
                }
            }
        }
        assert_eq!(net.active_flows, 0);
        (end, events, net.solves)
    }

    /// `max-min-grouped` (the grouped solve behind the completion calls) ends every flow at the
    /// ns `max-min` does, with fewer events.  (Both round a finish up alike, `ceil_tol`; before
    /// that, and before this driver solved after an instant's stale events too, the ends were a
    /// few ns apart and the test only bounded how far.)
    #[test]
    fn the_grouped_solve_ends_flows_when_max_min_does() {
        let (caps, starts) = random_starts(0x2545_f491_4f6c_dd1d);
        let (want, ev_flow, _) = drive(Sharing::MaxMin, &caps, &starts);
        let (got, ev_group, _) = drive(Sharing::MaxMinGrouped, &caps, &starts);
        let (full, _, _) = drive(Sharing::MaxMinFull, &caps, &starts);
        assert!(got.iter().all(|&t| t != Time::MAX), "a flow never ended");
        assert_eq!(want, full);
        assert_eq!(got, want);
        assert!(ev_group < ev_flow, "events: grouped {ev_group}, per flow {ev_flow}");
    }

    /// Flows of one group that end at the same ns all end before the next solve, as the per-flow
    /// net's do: an all-to-all's equal messages on one bottleneck end together, and one solve
    /// per member instead would solve as many times as the group has members.
    #[test]
    fn a_groups_members_ending_together_take_one_solve() {
        // 8 equal flows on link 0, starting together; 8 more at another instant on link 1
        let caps = [10e9, 10e9];
        let mut starts: Vec<(Time, Vec<LinkId>, f64)> = (0..8).map(|_| (0, vec![0], 65536.0)).collect();
        starts.extend((0..8).map(|_| (1000, vec![1], 32768.0)));
        let (want, _, solves_flow) = drive(Sharing::MaxMin, &caps, &starts);
        let (got, _, solves_group) = drive(Sharing::MaxMinGrouped, &caps, &starts);
        assert_eq!(got, want);
        assert!(want[..8].iter().all(|&t| t == want[0]) && want[8..].iter().all(|&t| t == want[8]));
        // one solve per instant with a change (max-min counts those with flows to rate)
        assert!(solves_flow <= 4, "{solves_flow} solves");
        assert_eq!(solves_group, solves_flow);
    }

    /// Under `max-min-grouped` the links that max-min's bounds make slack are slack in the
    /// grouped net too (out of its groups' counts: a fat-tree's upper links behind the NICs
    /// would otherwise be counted and filled in every solve), and back when they can bind.
    #[test]
    fn grouped_flows_leave_slack_links_out_of_their_counts() {
        let mut net = FlowNet::new();
        net.sharing = Sharing::MaxMinGrouped;
        // a slow link 0 in front of a fast link 1; link 2 as fast as 1, by itself
        for c in [10e9, 25e9, 25e9] {
            net.add_link(c);
        }
        let mut scratch = Vec::new();
        let a = net.start_with_latency(0, &[0, 1], 1e6, 0, 0);
        net.resolve_completions(0, &mut scratch, |_, _, _| {});
        let g = &net.grouped.as_ref().expect("the grouped net").net;
        assert!(g.is_slack(1) && !g.is_slack(0), "link 1 is behind the slower link 0");
        // flows on link 1 alone can saturate it: it binds again
        let _b = net.start_with_latency(0, &[1, 2], 1e6, 1, 0);
        let _c = net.start_with_latency(0, &[1, 2], 1e6, 2, 0);
        net.resolve_completions(0, &mut scratch, |_, _, _| {});
        let g = &net.grouped.as_ref().expect("the grouped net").net;
        assert!(!g.is_slack(1), "link 1 can bind with three flows");
        // 25 GB/s shared by three flows (link 0's 10 does not hold the first back)
        for f in [a, 1, 2] {
            assert!((g.rate(f) - 25.0 / 3.0).abs() < 1e-9, "flow {f}: rate {}", g.rate(f));
        }
        g.assert_valid();
    }
}

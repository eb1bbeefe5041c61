//! Transfers: a plan's chunks moving through its stages (each a delay, then a flow in the shared
//! network, then the stage's latency), with at most `depth` chunks in flight.  A transfer reports
//! its end to the caller (`stage_done` returns it); it never acts on its owner.
use g2g_engine::Time;
use g2g_net::paths::Plan;
use g2g_net::FlowNet;

use crate::event::{Ev, MsgId, Queue, ReqId, XferId};

/// Who a transfer works for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum XferOwner {
    /// a message's data
    Msg(MsgId),
    /// a blocking copy the rank waits for
    RankCopy(u32),
    /// a copy queued on a GPU stream of a rank
    Stream(u32, i32),
}

/// Stages per plan at most (copy, network, copy: `paths::Stages`).
const MAX_STAGES: usize = 3;

/// One transfer in one cache line (`repr(C)`, 64 bytes, aligned).
#[repr(C, align(64))]
struct Xfer {
    /// boxed (from `Transfers::plan_pool`): a rendezvous hands its plan over without copying it
    plan: Box<Plan>,
    t0: Time,
    started: [u32; MAX_STAGES],
    done: [u32; MAX_STAGES],
    owner: XferOwner,
    /// the plan's stage and chunk counts, kept here: a stage's completion then tells whether the
    /// transfer is complete without reaching into the (by then cold) plan
    chunks: u32,
    busy: [bool; MAX_STAGES],
    nstages: u8,
}

/// A transfer that has ended: for its owner, and the timeline.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ended {
    pub owner: XferOwner,
    /// when it counted as started
    pub t0: Time,
    pub model: &'static str,
    pub chunk_bytes: u64,
}

/// The transfers in flight, the pooled boxes of finished plans, and whether a re-solve of the
/// flow network is already scheduled.
#[derive(Default)]
pub(crate) struct Transfers {
    xfers: Vec<Option<Xfer>>,
    free: Vec<XferId>,
    /// boxes of finished transfers' plans, for reuse
    plan_pool: Vec<Box<Plan>>,
    resolve_pending: bool,
}

impl Transfers {
    /// An empty plan in a box from the pool (to be filled in place).
    #[inline]
    pub fn pooled_plan(&mut self) -> Box<Plan> {
        self.plan_pool.pop().unwrap_or_else(|| Box::new(Plan::empty()))
    }

    /// A plan in a box from the pool (no allocation once the pool has warmed up).
    fn boxed(&mut self, plan: Plan) -> Box<Plan> {
        match self.plan_pool.pop() {
            Some(mut b) => {
                *b = plan;
                b
            }
            None => Box::new(plan),
        }
    }

    /// Schedules a re-solve of the flow network now, unless one is pending.
    #[inline]
    pub fn need_resolve(&mut self, q: &mut Queue) {
        if !self.resolve_pending {
            self.resolve_pending = true;
            q.push_in(0, Ev::Resolve);
        }
    }

    /// The scheduled re-solve runs.
    #[inline]
    pub fn resolving(&mut self) {
        self.resolve_pending = false;
    }

    pub fn start(&mut self, q: &mut Queue, net: &mut FlowNet, plan: Plan, owner: XferOwner, extra_delay: u64) {
        let now = q.now();
        let plan = self.boxed(plan);
        self.start_at(q, net, plan, owner, extra_delay, now)
    }

    /// `t0`: when the transfer counts as started (timeline), at most `extra_delay` after now.
    pub fn start_at(
        &mut self,
        q: &mut Queue,
        net: &mut FlowNet,
        plan: Box<Plan>,
        owner: XferOwner,
        extra_delay: u64,
        t0: Time,
    ) {
        let ns = plan.stages.len();
        let setup = plan.setup_ns + extra_delay;
        let id = self.insert(plan, owner, t0);
        if ns == 0 {
            q.push_in(setup, Ev::StageDone(id, u8::MAX));
            return;
        }
        // stage 0 of chunk 0 starts after the setup cost and its own delay
        self.try_start(q, net, id, 0, setup);
    }

    /// `start` for an eager message whose send request `req` completes `extra_delay` from now
    /// (its send overhead), which is also when its first chunk leaves if the plan has no setup
    /// or stage delay of its own: one event (`Ev::SendOut`) then does both, in the order of the
    /// two it stands for (the stage's flow, then the request), which would have been next to
    /// each other in the queue.  Otherwise the request's completion is an event of its own.
    pub fn start_eager(
        &mut self,
        q: &mut Queue,
        net: &mut FlowNet,
        plan: Box<Plan>,
        owner: XferOwner,
        extra_delay: u64,
        req: ReqId,
    ) {
        // it counts as started now (timeline)
        let t0 = q.now();
        let setup = plan.setup_ns;
        if plan.stages.is_empty() {
            self.start_at(q, net, plan, owner, extra_delay, t0);
            q.push_in(extra_delay, Ev::ReqDone(req));
            return;
        }
        let id = self.insert(plan, owner, t0);
        // stage 0 of chunk 0, as `start_at` starts it, but for a flow due as the overhead ends
        match self.claim(id, 0) {
            Some(0) if setup == 0 && extra_delay > 0 => q.push_in(extra_delay, Ev::SendOut(id, req)),
            claimed => {
                if let Some(delay_ns) = claimed {
                    self.launch(q, net, id, 0, delay_ns + setup + extra_delay);
                }
                q.push_in(extra_delay, Ev::ReqDone(req));
            }
        }
    }

    /// A new transfer of `plan` (none of its chunks started); its id.
    fn insert(&mut self, plan: Box<Plan>, owner: XferOwner, t0: Time) -> XferId {
        let ns = plan.stages.len();
        assert!(ns <= MAX_STAGES, "a plan of {ns} stages (at most {MAX_STAGES})");
        let chunks = plan.chunks;
        let x = Xfer {
            t0,
            plan,
            owner,
            busy: [false; MAX_STAGES],
            started: [0; MAX_STAGES],
            done: [0; MAX_STAGES],
            nstages: ns as u8,
            chunks,
        };
        if let Some(id) = self.free.pop() {
            self.xfers[id as usize] = Some(x);
            id
        } else {
            self.xfers.push(Some(x));
            (self.xfers.len() - 1) as XferId
        }
    }

    /// Starts the next chunk on stage s if allowed.
    fn try_start(&mut self, q: &mut Queue, net: &mut FlowNet, x: XferId, s: usize, extra: u64) {
        if let Some(delay_ns) = self.claim(x, s) {
            self.launch(q, net, x, s, delay_ns + extra);
        }
    }

    /// Takes the next chunk of stage s if the stage is free and the chunk may go (the pipeline's
    /// depth, the previous stage); returns the stage's own delay before its flow.
    #[inline(always)]
    fn claim(&mut self, x: XferId, s: usize) -> Option<u64> {
        let t = self.xfers[x as usize].as_mut().unwrap();
        if t.busy[s] || t.started[s] >= t.plan.chunks {
            return None;
        }
        let c = t.started[s];
        let ok = if s == 0 { c < t.done[t.plan.stages.len() - 1] + t.plan.depth } else { c < t.done[s - 1] };
        if !ok {
            return None;
        }
        t.busy[s] = true;
        t.started[s] += 1;
        Some(t.plan.stages[s].delay_ns)
    }

    /// The claimed chunk of stage s moves after `delay` ns: its flow now, or an event then.
    #[inline(always)]
    fn launch(&mut self, q: &mut Queue, net: &mut FlowNet, x: XferId, s: usize, delay: u64) {
        if delay > 0 {
            q.push_in(delay, Ev::StageFlow(x, s as u8));
        } else {
            self.stage_flow(q, net, x, s);
        }
    }

    /// Stage `s` of transfer `x` moves its chunk: a flow over the stage's links.
    pub fn stage_flow(&mut self, q: &mut Queue, net: &mut FlowNet, x: XferId, s: usize) {
        let now = q.now();
        let t = self.xfers[x as usize].as_ref().unwrap();
        let c = t.started[s] - 1;
        let bytes = t.plan.chunk_len(c);
        let flow_bytes = t.plan.flow_bytes(c);
        let st = &t.plan.stages[s];
        if bytes == 0 || st.links.is_empty() {
            let lat = st.latency_ns;
            q.push_in(lat, Ev::StageDone(x, s as u8));
            return;
        }
        let token = ((x as u64) << 8) | s as u64;
        net.start_with_latency(now, &st.links, flow_bytes, token, st.latency_ns);
        self.need_resolve(q);
    }

    /// The (transfer, stage) a flow's token names.
    #[inline]
    pub fn of_token(token: u64) -> (XferId, u8) {
        ((token >> 8) as XferId, (token & 0xff) as u8)
    }

    /// Stage `s` of transfer `x` has finished a chunk (`s == u8::MAX`: a plan without stages):
    /// the next chunks start; the ended transfer is returned once its last chunk is through.
    pub fn stage_done(&mut self, q: &mut Queue, net: &mut FlowNet, x: XferId, s: usize) -> Option<Ended> {
        let complete = if s == u8::MAX as usize {
            true
        } else {
            let t = self.xfers[x as usize].as_mut().unwrap();
            t.busy[s] = false;
            t.done[s] += 1;
            let last = t.nstages as usize - 1;
            let nchunks = t.chunks;
            let complete = t.done[last] == nchunks;
            if !complete {
                self.try_start(q, net, x, s, 0);
                if s < last {
                    self.try_start(q, net, x, s + 1, 0);
                }
                if s == last {
                    self.try_start(q, net, x, 0, 0);
                }
            }
            complete
        };
        if !complete {
            return None;
        }
        let t = self.xfers[x as usize].take().unwrap();
        self.free.push(x);
        let ended = Ended { owner: t.owner, t0: t.t0, model: t.plan.model, chunk_bytes: t.plan.chunk_bytes };
        self.plan_pool.push(t.plan);
        Some(ended)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use g2g_net::completion::Due;
    use g2g_net::paths::{Links, Stage};

    /// Runs transfers alone (the driver's handling of their events); returns each end (time, owner).
    fn run(x: &mut Transfers, q: &mut Queue, net: &mut FlowNet) -> Vec<(Time, XferOwner)> {
        let mut scratch = vec![];
        let mut ended = vec![];
        while let Some((now, ev)) = q.pop() {
            match ev {
                Ev::StageFlow(t, s) => x.stage_flow(q, net, t, s as usize),
                Ev::StageDone(t, s) => {
                    if let Some(e) = x.stage_done(q, net, t, s as usize) {
                        ended.push((now, e.owner));
                    }
                }
                Ev::FlowDone(f, g) => match net.completion_due(f, g, now) {
                    Due::Stale => {}
                    Due::Later { at, gen } => q.push(at, Ev::FlowDone(f, gen)),
                    Due::Finished { token, latency_ns } => {
                        x.need_resolve(q);
                        let (t, s) = Transfers::of_token(token);
                        q.push_in(latency_ns, Ev::StageDone(t, s));
                        while let Some((token, latency_ns)) = net.also_finished(now) {
                            let (t, s) = Transfers::of_token(token);
                            q.push_in(latency_ns, Ev::StageDone(t, s));
                        }
                    }
                },
                Ev::Resolve => {
                    x.resolving();
                    net.resolve_completions(now, &mut scratch, |at, f, g| q.push(at, Ev::FlowDone(f, g)));
                }
                e => panic!("{e:?}"),
            }
        }
        ended
    }

    fn stage(link: u32, delay_ns: u64, latency_ns: u64) -> Stage {
        let mut links = Links::new();
        links.push(link);
        Stage { delay_ns, links, latency_ns }
    }

    #[test]
    fn chunks_pipeline_through_the_stages() {
        let mut net = FlowNet::new();
        let (a, b) = (net.add_link(1e9), net.add_link(1e9)); // 1 byte per ns each
        let mut plan = Plan::empty();
        let st = plan.reset_stages("test", 100, 3000);
        st.push(stage(a, 0, 10));
        st.push(stage(b, 5, 0));
        plan.chunks = 3;
        plan.chunk_bytes = 1000;
        plan.last_chunk_bytes = 1000;
        plan.depth = 3;
        let (mut x, mut q) = (Transfers::default(), Queue::new());
        x.start(&mut q, &mut net, plan, XferOwner::RankCopy(4), 0);
        // setup 100; stage 0 moves a chunk per 1000 ns and pays 10 ns of latency before the next
        // chunk may use it: chunks leave stage 0 at 1110, 2120, 3130; stage 1 takes each after its
        // 5 ns delay, the last from 3135 to 4135
        assert_eq!(run(&mut x, &mut q, &mut net), vec![(4135, XferOwner::RankCopy(4))]);
    }

    /// An eager message's send overhead: one `SendOut` event when the first chunk leaves as the
    /// overhead ends (no setup, no stage delay), which then moves the chunk as `StageFlow` would;
    /// else the stage's own event and the request's, as `start_at` and a `ReqDone` would be.
    #[test]
    fn an_eager_send_takes_one_event_when_its_chunk_leaves_as_the_overhead_ends() {
        let one = |delay_ns: u64, setup_ns: u64| {
            let mut net = FlowNet::new();
            let a = net.add_link(1e9);
            let mut plan = Plan::empty();
            let st = plan.reset_stages("test", setup_ns, 1000);
            st.push(stage(a, delay_ns, 10));
            (net, Box::new(plan))
        };
        // together: one event at the overhead's end, and the chunk then flows as `StageFlow` makes it
        let (mut net, plan) = one(0, 0);
        let (mut x, mut q) = (Transfers::default(), Queue::new());
        x.start_eager(&mut q, &mut net, plan, XferOwner::Msg(1), 300, 7);
        let (t, e) = q.pop().unwrap();
        assert!(matches!(e, Ev::SendOut(0, 7)) && t == 300, "{t} {e:?}");
        assert!(q.pop().is_none());
        x.stage_flow(&mut q, &mut net, 0, 0);
        // 1000 bytes at 1 byte per ns from 300, then the stage's 10 ns
        assert_eq!(run(&mut x, &mut q, &mut net), vec![(1310, XferOwner::Msg(1))]);
        // a stage delay or a setup of the plan's own: the stage's event, then the request's
        for (delay, setup) in [(5, 0), (0, 5)] {
            let (mut net, plan) = one(delay, setup);
            let (mut x, mut q) = (Transfers::default(), Queue::new());
            x.start_eager(&mut q, &mut net, plan, XferOwner::Msg(1), 300, 7);
            let (t1, e1) = q.pop().unwrap();
            let (t2, e2) = q.pop().unwrap();
            assert!(matches!(e1, Ev::ReqDone(7)) && t1 == 300, "{t1} {e1:?}");
            assert!(matches!(e2, Ev::StageFlow(0, 0)) && t2 == 305, "{t2} {e2:?}");
        }
        // no overhead: the chunk leaves now (no event), the request completes now
        let (mut net, plan) = one(0, 0);
        let (mut x, mut q) = (Transfers::default(), Queue::new());
        x.start_eager(&mut q, &mut net, plan, XferOwner::Msg(1), 0, 7);
        let kinds: Vec<String> = std::iter::from_fn(|| q.pop()).map(|(t, e)| format!("{t} {e:?}")).collect();
        assert_eq!(kinds, vec!["0 Resolve".to_string(), "0 ReqDone(7)".to_string()]);
    }

    #[test]
    fn an_empty_plan_ends_after_its_setup() {
        let mut net = FlowNet::new();
        let mut plan = Plan::empty();
        plan.setup_ns = 42;
        let (mut x, mut q) = (Transfers::default(), Queue::new());
        x.start(&mut q, &mut net, plan, XferOwner::Msg(3), 8);
        assert_eq!(run(&mut x, &mut q, &mut net), vec![(50, XferOwner::Msg(3))]);
    }
}

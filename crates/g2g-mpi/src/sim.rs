//! The driver: the event loop, and the rank executor (`step`, `exec`).
//!
//! Each rank runs its operations in order.  An operation either finishes at once, makes the rank
//! busy for a while (compute, o_send, a blocking copy), or blocks it on requests (a receive, a wait,
//! a collective).  The operations (`ops/`) start what an operation does; the models (`model/`)
//! carry it out.  When something completes, the layer below returns what follows (`Next`): only
//! this file runs a rank on (`step`), so a completion never re-enters the executor.
use g2g_trace::{Op, OpKind, ANY_SOURCE, ANY_TAG, PROC_NULL};

use crate::event::{Ev, Next};
use crate::model::transfer::{Ended, Transfers, XferOwner};
use crate::options::{Progress, SimError};
use crate::state::{Block, State};
use g2g_net::completion::Due;

/// Operations that are MPI calls (charged `mpi.call_overhead`).
fn is_mpi_call(k: OpKind) -> bool {
    !matches!(
        k,
        OpKind::Compute
            | OpKind::Kernel
            | OpKind::Memcpy
            | OpKind::EventRecord
            | OpKind::StreamWaitEvent
            | OpKind::StreamSync
            | OpKind::DeviceSync
            | OpKind::EventSync
            | OpKind::Init
            | OpKind::Finalize
            | OpKind::Untraced
    )
}

fn is_wait(k: OpKind) -> bool {
    matches!(k, OpKind::Wait | OpKind::Waitall | OpKind::Waitany | OpKind::Waitsome | OpKind::Test)
}

impl State<'_> {
    /// Runs the replay to its end: every rank done, or a deadlock reported.
    pub(crate) fn run(&mut self, mut progress: Option<Progress>) -> Result<(), SimError> {
        for r in 0..self.world.nranks {
            self.q.push(0, Ev::Wake(r));
        }
        let mut next_report = 1u64 << 16;
        while let Some((_, ev)) = self.q.pop() {
            self.handle(ev)?;
            if let Some(t) = self.q.overflow() {
                // found outside a rank's step (a transfer, a completion): the last rank that ran
                let r = match ev {
                    Ev::Wake(r) | Ev::KernelDone(r, _) => r,
                    _ => self.checks.last_rank,
                };
                return Err(self.time_overflow(r, t));
            }
            if self.q.processed() >= next_report {
                next_report += 1 << 16;
                if let Some(p) = progress.as_mut() {
                    if !p(self.stats.ops_done, self.stats.ops_total) {
                        return Err(SimError::Interrupted);
                    }
                }
            }
        }
        if let Some(p) = progress.as_mut() {
            p(self.stats.ops_done, self.stats.ops_total.max(self.stats.ops_done));
        }
        let mut blocked = vec![];
        for r in 0..self.world.nranks {
            if self.ranks[r as usize].block != Block::Done {
                blocked.push(self.describe_blocked(r));
            }
        }
        if !blocked.is_empty() {
            return Err(SimError::Deadlock(blocked));
        }
        Ok(())
    }

    fn describe_blocked(&self, r: u32) -> String {
        let rk = &self.ranks[r as usize];
        let what = match rk.cur.as_deref() {
            Some(op) => {
                let mut s = format!("in {} (event {})", op.kind.name(), rk.ops_done);
                match op.kind {
                    OpKind::Recv
                    | OpKind::Irecv
                    | OpKind::Send
                    | OpKind::Ssend
                    | OpKind::Isend
                    | OpKind::Issend
                    | OpKind::Bsend
                    | OpKind::Rsend => {
                        let peer = if op.peer == ANY_SOURCE { "ANY_SOURCE".to_string() } else { op.peer.to_string() };
                        let tag = if op.tag == ANY_TAG { "ANY_TAG".to_string() } else { op.tag.to_string() };
                        s += &format!(" peer {peer} tag {tag} comm {}", op.comm);
                    }
                    OpKind::Sendrecv => {
                        s += &format!(
                            " send to {} tag {}, receive from {} tag {}, comm {}",
                            op.peer,
                            op.tag,
                            op.recv_peer(),
                            op.recv_tag(),
                            op.comm
                        )
                    }
                    OpKind::Wait | OpKind::Waitall | OpKind::Waitany | OpKind::Waitsome => {
                        s += &format!(
                            " on request(s) {:?}",
                            if op.reqs().is_empty() { vec![op.req] } else { op.reqs().to_vec() }
                        );
                    }
                    _ if op.kind.is_collective() => s += &format!(" on comm {} root {}", op.comm, op.root()),
                    _ => {}
                }
                s
            }
            None => "between operations".to_string(),
        };
        let pending: Vec<String> = rk
            .matching
            .posted
            .iter()
            .take(4)
            .map(|p| {
                let src = if p.src == ANY_SOURCE { "ANY_SOURCE".into() } else { p.src.to_string() };
                format!("recv from world rank {src} tag {}", p.tag)
            })
            .collect();
        if pending.is_empty() {
            format!("rank {r}: {what}")
        } else {
            format!("rank {r}: {what}; unmatched: {}", pending.join(", "))
        }
    }

    fn handle(&mut self, ev: Ev) -> Result<(), SimError> {
        match ev {
            Ev::Wake(r) => {
                let rk = &mut self.ranks[r as usize];
                if rk.block == Block::Busy || rk.block == Block::None {
                    rk.block = Block::None;
                    self.step(r)?;
                }
            }
            Ev::Envelope(m) => self.envelope(m),
            Ev::StageFlow(x, s) => self.xfers.stage_flow(&mut self.q, &mut self.m.net, x, s as usize),
            Ev::SendOut(x, q) => {
                self.xfers.stage_flow(&mut self.q, &mut self.m.net, x, 0);
                let next = self.complete_req(q);
                self.resume(next)?;
            }
            Ev::StageDone(x, s) => {
                if let Some(ended) = self.xfers.stage_done(&mut self.q, &mut self.m.net, x, s as usize) {
                    let next = self.transfer_ended(ended);
                    self.resume(next)?;
                }
            }
            Ev::FlowDone(f, g) => match self.m.net.completion_due(f, g, self.q.now()) {
                Due::Stale => {}
                Due::Later { at, gen } => self.q.push(at, Ev::FlowDone(f, gen)),
                Due::Finished { token, latency_ns } => {
                    self.xfers.need_resolve(&mut self.q);
                    let (x, s) = Transfers::of_token(token);
                    self.q.push_in(latency_ns, Ev::StageDone(x, s));
                    let now = self.q.now();
                    while let Some((token, latency_ns)) = self.m.net.also_finished(now) {
                        let (x, s) = Transfers::of_token(token);
                        self.q.push_in(latency_ns, Ev::StageDone(x, s));
                    }
                }
            },
            Ev::Resolve => {
                self.xfers.resolving();
                let now = self.q.now();
                let q = &mut self.q;
                self.m.net.resolve_completions(now, &mut self.resched, |at, f, g| q.push(at, Ev::FlowDone(f, g)));
                self.stats.peak_flows = self.stats.peak_flows.max(self.m.net.active_flows as u64);
            }
            Ev::ReqDone(q) => {
                let next = self.complete_req(q);
                self.resume(next)?;
            }
            Ev::CollNext(c) => {
                let next = self.coll_round(c);
                self.resume(next)?;
            }
            Ev::KernelDone(r, st) => {
                let next = self.kernel_done(r, st);
                self.resume(next)?;
            }
        }
        Ok(())
    }

    /// Acts on what a completion returned.
    #[inline]
    fn resume(&mut self, next: Next) -> Result<(), SimError> {
        match next {
            Next::Idle => Ok(()),
            Next::Step(r) => self.step(r),
        }
    }

    /// A transfer has ended: its owner goes on.
    fn transfer_ended(&mut self, t: Ended) -> Next {
        if let Some(tl) = self.tl.as_mut() {
            let now = self.q.now();
            match t.owner {
                XferOwner::Msg(m) => {
                    let msg = self.msgs.get(m);
                    tl.transfer(msg.src, msg.dst, t.model, msg.bytes, t.t0, now, self.msgs.uid[m as usize]);
                }
                XferOwner::RankCopy(r) | XferOwner::Stream(r, _) => tl.copy(r, t.model, t.chunk_bytes, t.t0, now),
            }
        }
        match t.owner {
            XferOwner::Msg(m) => self.data_arrived(m),
            XferOwner::Stream(r, st) => self.stream_item_done(r, st),
            XferOwner::RankCopy(r) => self.rank_copy_done(r),
        }
    }

    // ------------------------------------------------------------------ trace feeding
    /// The rank's next operation, in a box from the pool.
    fn next_op(&mut self, r: u32) -> Result<Option<Box<Op>>, SimError> {
        loop {
            // the staging rule looks at the rank's next LOOKAHEAD operations: keep that many
            // queued whatever the file's row groups (a result must not depend on the layout)
            let n = self.queues[r as usize].len();
            if n > 0 && (n > crate::model::hostcopy::LOOKAHEAD || self.exhausted) {
                let mut b = self.op_pool.pop().unwrap_or_else(|| Box::new(Op::new(OpKind::Compute)));
                // swapped with the queue's front, then the spent op popped and dropped: moving
                // the op out through an `Option<Op>` copies it in odd-offset pieces around the
                // niche byte, which stall store-to-load forwarding (the hottest spot of `step`)
                let q = &mut self.queues[r as usize];
                std::mem::swap(&mut *b, q.front_mut().unwrap());
                q.pop_front();
                return Ok(Some(b));
            }
            if self.exhausted {
                return Ok(None);
            }
            let t0 = std::time::Instant::now();
            let more = self.src.fill(&mut self.queues)?;
            self.read_s += t0.elapsed().as_secs_f64();
            if !more {
                self.exhausted = true;
            }
        }
    }

    // ------------------------------------------------------------------ rank execution
    /// Runs rank `r` until it blocks or finishes.
    fn step(&mut self, r: u32) -> Result<(), SimError> {
        self.checks.last_rank = r;
        loop {
            if let Some(t) = self.q.overflow() {
                return Err(self.time_overflow(r, t));
            }
            if self.ranks[r as usize].block != Block::None {
                return Ok(());
            }
            // staging copies owed after a completed wait
            if let Some(bytes) = self.ranks[r as usize].pending_copies.pop() {
                self.start_rank_copy(r, bytes, false);
                return Ok(());
            }
            if self.ranks[r as usize].cur.is_none() {
                match self.next_op(r)? {
                    Some(op) => {
                        self.check_op(r, &op)?;
                        // a wait or test call: mpi.wait_overhead (default mpi.call_overhead)
                        let mut c =
                            if is_wait(op.kind) { self.m.cfg.wait_overhead_ns } else { self.m.cfg.call_overhead_ns };
                        if self.m.cfg.device_call_overhead_ns > 0.0
                            && is_mpi_call(op.kind)
                            && !is_wait(op.kind)
                            && self.policy.device_pointer_call(op.mem, op.bytes.max(op.recv_bytes()))
                        {
                            // a call on a device buffer: the library's memory-type query and IPC
                            // handle cache (mpi.device_call_overhead)
                            c += self.m.cfg.device_call_overhead_ns;
                        }
                        let mpi_call = c > 0.0
                            && is_mpi_call(op.kind)
                            && !(op.peer == PROC_NULL && !op.kind.is_collective() && !is_wait(op.kind));
                        let rk = &mut self.ranks[r as usize];
                        rk.cur = Some(op);
                        rk.phase = 0;
                        rk.call_start = self.q.now();
                        if mpi_call {
                            // the call's CPU time (mpi.call_overhead) before it acts
                            self.busy(r, c.round() as u64);
                            return Ok(());
                        }
                    }
                    None => {
                        let now = self.q.now();
                        let rk = &mut self.ranks[r as usize];
                        rk.block = Block::Done;
                        rk.end = now;
                        return Ok(());
                    }
                }
            }
            if self.exec(r)? {
                self.finish_op(r);
            }
        }
    }

    fn finish_op(&mut self, r: u32) {
        let now = self.q.now();
        let rk = &mut self.ranks[r as usize];
        let op = rk.cur.take().expect("op");
        let dt = now - rk.call_start;
        match op.kind {
            // waiting for the GPU is compute time from the host's point of view
            OpKind::Compute
            | OpKind::Kernel
            | OpKind::StreamSync
            | OpKind::DeviceSync
            | OpKind::EventSync
            | OpKind::EventRecord
            | OpKind::StreamWaitEvent
            | OpKind::Untraced => rk.compute += dt,
            OpKind::Memcpy => rk.copy += dt,
            OpKind::Init | OpKind::Finalize => {}
            _ => rk.comm += dt,
        }
        rk.ops_done += 1;
        self.stats.ops_done += 1;
        let start = rk.call_start;
        let seq = rk.ops_done - 1;
        if let Some(tl) = self.tl.as_mut() {
            tl.op(r, &op, seq, start, now);
        }
        if let Some(c) = self.call_ns.as_mut() {
            c[r as usize].push(dt); // at place `seq`: every call of the rank ends here, in order
        }
        let bytes = op.bytes.max(op.recv_bytes());
        self.stats.op(op.kind, dt, bytes);
        let mut op = op;
        op.lists = None; // request lists are freed now, not when the box is reused
        self.op_pool.push(op);
    }

    /// Executes (or resumes) the current op; true when it is complete.
    fn exec(&mut self, r: u32) -> Result<bool, SimError> {
        let phase = self.ranks[r as usize].phase;
        // the op is moved out while it runs (no clone per step) and put back afterwards
        let op = self.ranks[r as usize].cur.take().expect("current op");
        let res = self.exec_op(r, &op, phase);
        self.ranks[r as usize].cur = Some(op);
        res
    }

    fn exec_op(&mut self, r: u32, op: &Op, phase: u8) -> Result<bool, SimError> {
        match op.kind {
            OpKind::Init | OpKind::Finalize | OpKind::Test => Ok(true),
            OpKind::Kernel
            | OpKind::EventRecord
            | OpKind::StreamWaitEvent
            | OpKind::StreamSync
            | OpKind::DeviceSync
            | OpKind::EventSync => Ok(self.exec_gpu(r, op, phase)),
            OpKind::Compute => {
                if phase == 0 && op.dur_ns() > 0 {
                    self.ranks[r as usize].phase = 1;
                    self.busy(r, op.dur_ns());
                    Ok(false)
                } else {
                    Ok(true)
                }
            }
            OpKind::Untraced => {
                // a stretch the tracer did not record: skipped (reported) unless --window all
                if phase == 0 {
                    self.untraced_ops += 1;
                    self.ranks[r as usize].untraced += op.dur_ns();
                    if self.policy.window == crate::options::Window::All && op.dur_ns() > 0 {
                        self.ranks[r as usize].phase = 1;
                        self.busy(r, op.dur_ns());
                        return Ok(false);
                    }
                }
                Ok(true)
            }
            OpKind::Memcpy => Ok(self.exec_memcpy(r, op, phase)),
            OpKind::Send | OpKind::Ssend | OpKind::Bsend | OpKind::Rsend | OpKind::Isend | OpKind::Issend => {
                self.exec_send(r, op, phase)
            }
            OpKind::Recv | OpKind::Irecv => self.exec_recv(r, op, phase),
            OpKind::Sendrecv => self.exec_sendrecv(r, op, phase),
            OpKind::Wait | OpKind::Waitall | OpKind::Waitany | OpKind::Waitsome => self.exec_wait(r, op, phase),
            OpKind::Coll(_) | OpKind::ICol(_) => self.exec_coll(r, op, phase),
        }
    }
}

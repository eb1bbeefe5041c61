//! Copies: explicit cudaMemcpy operations (blocking, or queued on a stream) and the blocking
//! staging copies HostCopy adds around messages.
use g2g_net::paths::{Plan, Stage, StagedPath};
use g2g_trace::{CopyKind, Op, OpKind};

use crate::event::Next;
use crate::model::gpu_streams::{GpuWait, GpuWork};
use crate::model::hostcopy;
use crate::model::transfer::XferOwner;
use crate::model::world::endpoint;
use crate::state::{Block, State};

impl State<'_> {
    /// An explicit copy; true when complete.
    pub(crate) fn exec_memcpy(&mut self, r: u32, op: &Op, phase: u8) -> bool {
        if phase > 0 {
            return true;
        }
        // the staging rule: a copy that only stages an MPI buffer is counted; gpudirect removes it
        let rk = &mut self.ranks[r as usize];
        if hostcopy::staging_copy(
            &self.policy,
            op,
            &self.queues[r as usize],
            &mut rk.recent_recvs,
            &mut rk.staged_sends,
        ) {
            self.bufstat.staging_copies += 1;
            if self.policy.drops_staging_copies() {
                self.bufstat.staging_copies_removed += 1;
                return true;
            }
        }
        let at = endpoint(&self.m, r);
        if matches!(op.copy, CopyKind::D2H | CopyKind::H2D) {
            self.ranks[r as usize].stages = true;
        }
        let plan = match op.copy {
            CopyKind::D2H | CopyKind::H2D => {
                let st = StagedPath::copy_stage(&self.m, at, op.copy == CopyKind::D2H);
                Plan::one("memcpy", st, op.bytes)
            }
            CopyKind::D2D => {
                let st = Stage {
                    delay_ns: self.m.cfg.copy_delay_ns as u64,
                    links: smallvec::smallvec![self.m.ce_d2h(at.node, at.gpu)],
                    latency_ns: 0,
                };
                Plan::one("memcpy", st, op.bytes)
            }
            CopyKind::H2H | CopyKind::None => {
                let st = Stage { delay_ns: 0, links: smallvec::smallvec![self.m.shm(at.node)], latency_ns: 0 };
                Plan::one("memcpy", st, op.bytes)
            }
        };
        if op.stream() >= 0 {
            // asynchronous copy queued on a stream: in order with that stream's kernels; the host goes on
            self.gpu_enqueue(r, op.stream(), None, GpuWork::Copy(Box::new(plan)));
            if self.policy.serialises_gpu() {
                self.ranks[r as usize].phase = 1;
                self.ranks[r as usize].block = Block::GpuSync(GpuWait::Stream(op.stream()));
                return self.gpu_check_host(r);
            }
            return true;
        }
        self.ranks[r as usize].phase = 1;
        self.ranks[r as usize].block = Block::Copy;
        self.xfers.start(&mut self.q, &mut self.m.net, plan, XferOwner::RankCopy(r), 0);
        false
    }

    /// A blocking staging copy done by the rank (HostCopy): D2H before a send, H2D after a receive.
    pub(crate) fn start_rank_copy(&mut self, r: u32, bytes: u64, d2h: bool) {
        let plan = hostcopy::copy_plan(&self.m, endpoint(&self.m, r), bytes, d2h);
        let rk = &mut self.ranks[r as usize];
        rk.stages = true;
        rk.block = Block::Copy;
        rk.copy_start = self.q.now();
        self.xfers.start(&mut self.q, &mut self.m.net, plan, XferOwner::RankCopy(r), 0);
    }

    /// The rank's blocking copy has finished: the rank goes on, or its collective (whose send
    /// buffer was being staged) starts its rounds.
    pub(crate) fn rank_copy_done(&mut self, r: u32) -> Next {
        let now = self.q.now();
        let rk = &mut self.ranks[r as usize];
        if rk.block == Block::Copy {
            rk.block = Block::None;
            // staging copies count as copy time, not inside the op they serve
            if rk.cur.as_ref().map(|o| o.kind != OpKind::Memcpy).unwrap_or(true) {
                rk.copy += now - rk.copy_start;
            }
            Next::Step(r)
        } else if let Block::Coll(c) = rk.block {
            rk.copy += now - rk.copy_start;
            self.coll_round(c)
        } else {
            Next::Idle
        }
    }
}

//! The replay's state: the machine, the ranks, the pools of the models, the statistics.  Data
//! only; the driver (`sim.rs`) and the operations (`ops/`) act on it, the models (`model/`) own
//! their parts of it.
use std::collections::VecDeque;

use g2g_engine::FxHashMap as HashMap;
use g2g_engine::Time;
use g2g_net::lmm::Reschedule;
use g2g_net::machine::Machine;
use g2g_trace::{Op, TraceError, TraceSource};

use crate::event::{CollId, Queue, ReqId};
use crate::model::collective::Colls;
use crate::model::factors::Load;
use crate::model::gpu_streams::{Gpu, GpuWait};
use crate::model::matching::MatchQueues;
use crate::model::protocol::Messages;
use crate::model::requests::{ReqMap, Requests};
use crate::model::transfer::Transfers;
use crate::model::world::World;
use crate::options::{ModePolicy, SimError};
use crate::stats::Stats;
use crate::timeline::Timeline;

/// What a rank is doing.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Block {
    /// running (or ready to run) its current or next operation
    None,
    /// busy until its `Ev::Wake` (compute, an overhead)
    Busy,
    /// waiting for all (or any) of these requests
    Wait { reqs: Vec<ReqId>, any: bool },
    /// waiting for its blocking copy
    Copy,
    /// inside a blocking collective (or its staging copy)
    Coll(CollId),
    /// the host waits for GPU work
    GpuSync(GpuWait),
    /// no operation left
    Done,
}

/// Field order fixed (`repr(C)`, 64-byte aligned) by use: the first cache line holds what every
/// step and every request completion reads (state, current op, the wait's counter), the second the
/// matching queues, the third the request map; the rest is touched rarely.  The default layout
/// spread the hot fields over more lines, each a miss for ranks whose state fell out of the cache.
#[repr(C, align(64))]
pub(crate) struct Rank {
    pub block: Block,
    /// the operation running, in a box from `State::op_pool`: it moves in and out of the rank for
    /// every step of the op, and moving a pointer is cheaper than moving a 64-byte `Op`
    pub cur: Option<Box<Op>>,
    pub call_start: Time,
    /// requests of the current wait for all (`Block::Wait { any: false }`) not done yet
    pub wait_pending: u32,
    /// how far the current operation has got (each operation numbers its own phases)
    pub phase: u8,
    /// the rank has staged MPI buffers through host memory (a D2H or H2D copy ran): its host
    /// messages are `hostcopy` ones for `[[mpi.factors]]`
    pub stages: bool,
    pub comm: Time,
    // line 2
    pub matching: MatchQueues,
    pub ops_done: u64,
    pub compute: Time,
    // line 3
    pub reqmap: ReqMap,
    pub end: Time,
    // the rest
    /// staging copies (H2D bytes) owed after a completed wait
    pub pending_copies: Vec<u64>,
    /// sizes of host receive buffers filled recently (an H2D copy of such a size only staged a
    /// received message: the staging rule)
    pub recent_recvs: Vec<u64>,
    pub copy: Time,
    pub copy_start: Time,
    /// collectives called so far per communicator (a call's instance in its context)
    pub coll_seq: HashMap<u32, u32>,
    pub gpu: Option<Box<Gpu>>,
    /// H2D staging copy owed at the end of the current blocking collective (HostCopy)
    pub coll_h2d: u64,
    /// sizes of send buffers a recognised D2H copy staged, not sent yet (the staging rule)
    pub staged_sends: Vec<u64>,
    /// untraced time (`Untraced` rows)
    pub untraced: Time,
    /// the current send's buffer class (`hostcopy::send_on_gpu`), kept across its phases
    pub send_gpu: bool,
    /// when the rank's last message left (`mpi.gap`, LogGP g; 0: none yet)
    pub last_inject: Time,
}

impl Rank {
    pub fn new() -> Rank {
        Rank {
            cur: None,
            phase: 0,
            block: Block::None,
            call_start: 0,
            reqmap: ReqMap::default(),
            coll_seq: HashMap::default(),
            matching: MatchQueues::default(),
            pending_copies: Vec::new(),
            recent_recvs: Vec::new(),
            end: 0,
            comm: 0,
            compute: 0,
            copy: 0,
            copy_start: 0,
            stages: false,
            wait_pending: 0,
            ops_done: 0,
            gpu: None,
            coll_h2d: 0,
            staged_sends: Vec::new(),
            untraced: 0,
            send_gpu: false,
            last_inject: 0,
        }
    }

    /// The rank's GPU (made on first use).
    #[inline]
    pub fn gpu(&mut self) -> &mut Gpu {
        self.gpu.get_or_insert_with(Default::default)
    }
}

pub(crate) struct State<'a> {
    pub m: Machine,
    pub policy: ModePolicy,
    pub q: Queue,
    pub world: World,
    pub ranks: Vec<Rank>,
    /// each rank's queued trace operations, filled a row group at a time by the trace source
    pub queues: Vec<VecDeque<Op>>,
    pub src: &'a mut dyn TraceSource,
    pub exhausted: bool,
    /// where MPI buffers were found to live and what the staging rule recognised (the report's)
    pub bufstat: crate::model::hostcopy::BufferCounts,
    /// MPI data buffers the trace itself records as device memory
    pub traced_device: u64,
    /// `Untraced` rows met
    pub untraced_ops: u64,
    /// seconds spent inside the trace source (decoding), part of the wall time
    pub read_s: f64,
    pub reqs: Requests,
    pub msgs: Messages,
    pub xfers: Transfers,
    pub colls: Colls,
    pub load: Load,
    /// the flow network's re-rated flows (a buffer kept for its allocation)
    pub resched: Vec<Reschedule>,
    /// emptied wait lists, kept for their allocations
    pub wait_lists: Vec<Vec<ReqId>>,
    /// boxes of finished operations, for reuse (see `Rank::cur`)
    pub op_pool: Vec<Box<Op>>,
    pub stats: Stats,
    pub tl: Option<Timeline>,
    /// per rank, each finished call's duration in ns, in trace order (`SimOptions::call_times`)
    pub call_ns: Option<Vec<Vec<u64>>>,
    /// bounds, collective agreement, end-of-trace warnings (`checks.rs`)
    pub checks: crate::model::checks::Checks,
}

impl State<'_> {
    /// An error in rank `r`'s current operation, named by its event number: the operations the
    /// rank has finished (ops are not numbered in memory; every trace source delivers a rank's
    /// events in order from 0).
    pub fn terr(&self, r: u32, msg: String) -> SimError {
        let seq = self.ranks[r as usize].ops_done as u32;
        SimError::Trace(TraceError { file: self.src.name().to_string(), rank: Some(r), seq: Some(seq), msg })
    }

    /// World rank of `peer` of communicator `comm`, for rank `r`'s current operation.
    #[inline]
    pub fn world_of(&self, r: u32, comm: u32, peer: i32) -> Result<u32, SimError> {
        self.world.world_of(comm, peer).map_err(|e| self.terr(r, e))
    }
}

impl State<'_> {
    /// Rank `r` is busy for `dt` (compute, an overhead): it goes on at its `Ev::Wake`.
    #[inline]
    pub fn busy(&mut self, r: u32, dt: Time) {
        self.ranks[r as usize].block = Block::Busy;
        self.q.push_in(dt, crate::event::Ev::Wake(r));
    }
}

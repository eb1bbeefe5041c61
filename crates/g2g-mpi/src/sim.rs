//! The replay engine.
//!
//! Each rank runs its operations in order.  An operation either finishes at once, makes the rank
//! busy for a while (compute, o_send, a blocking copy), or blocks it on requests (a receive, a wait,
//! a collective).  Messages are matched at the receiver by (context, source, tag) in posting order,
//! with MPI_ANY_SOURCE / MPI_ANY_TAG and an unexpected queue.  Eager messages complete at the sender
//! after the send overhead; rendezvous messages exchange RTS / CTS before the data moves.  Data moves
//! as a [`Plan`] from the data-path models of g2g-net: stages of flows that share links max-min fairly.
use std::collections::VecDeque;

use g2g_engine::FxHashMap as HashMap;
use std::time::Instant;

use g2g_coll::{AlgoOverrides, CollArgs, CollKind, Round, Thresholds};
use g2g_engine::{EventQueue, Time};
use g2g_net::lmm::{Completion, Reschedule};
use g2g_net::machine::{Machine, Placement};
use g2g_net::paths::{self, DataPath, Endpoint, Plan, StagedPath};
use g2g_net::MachineConfig;
use g2g_trace::{CommDef, CopyKind, MemSpace, Op, OpKind, TraceError, TraceSource, ANY_SOURCE, ANY_TAG, PROC_NULL};

use crate::buffers::{self, Buffers, Window};
use crate::report::{size_class_index, BufferStat, EngineStat, OpStat, PathStat, RankStat, Report};

/// How device-buffer messages travel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// each call takes the path its recorded buffer space implies
    AsTraced,
    /// device-buffer messages are staged through host memory by the application
    HostCopy,
    /// device-buffer messages go GPU to GPU (GPUDirect P2P / RDMA, or pipelined without RDMA)
    GpuDirect,
}

impl Mode {
    pub fn parse(s: &str) -> Option<Mode> {
        match s {
            "as-traced" => Some(Mode::AsTraced),
            "hostcopy" => Some(Mode::HostCopy),
            "gpudirect" => Some(Mode::GpuDirect),
            _ => None,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Mode::AsTraced => "as-traced",
            Mode::HostCopy => "hostcopy",
            Mode::GpuDirect => "gpudirect",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Mapping {
    Linear,
    RoundRobin,
    /// node index per rank
    Nodes(Vec<u32>),
}

pub type Progress<'a> = &'a mut dyn FnMut(u64, u64) -> bool;

#[derive(Clone, Debug)]
pub struct SimOptions {
    pub mode: Mode,
    /// where MPI data buffers live (`--buffers`, crate::buffers): as traced, all device, all host
    pub buffers: Buffers,
    /// untraced stretches: skipped (`traced`) or simulated as host time (`all`)
    pub window: Window,
    pub gpus_per_node: Option<u32>,
    pub mapping: Mapping,
    /// "allreduce=ring,bcast=binomial"
    pub coll_algos: String,
    /// mixed what-if: under gpudirect, only messages of at least this size go GPU-direct
    pub gpudirect_min_bytes: u64,
    /// mixed what-if: GPU-direct for collectives only (point-to-point staged)
    pub gpudirect_collectives_only: bool,
    /// multiplies NIC and network link bandwidth
    pub network_scale: f64,
    /// what-if: serialise GPU work with the host (every kernel and stream copy waits to finish), to
    /// show what compute/communication overlap buys
    pub no_overlap: bool,
    /// overrides the machine file's `network.sharing`
    pub sharing: Option<g2g_net::lmm::Sharing>,
    /// keep per-rank rows in the report (off for huge runs)
    pub per_rank: bool,
    /// write a Chrome/Perfetto trace of the simulated run here
    pub timeline: Option<String>,
    /// stop writing timeline events after this many (the run goes on)
    pub timeline_max_events: u64,
}

impl Default for SimOptions {
    fn default() -> Self {
        SimOptions {
            mode: Mode::AsTraced,
            buffers: Buffers::Traced,
            window: Window::Traced,
            gpus_per_node: None,
            mapping: Mapping::Linear,
            coll_algos: String::new(),
            gpudirect_min_bytes: 0,
            gpudirect_collectives_only: false,
            network_scale: 1.0,
            per_rank: true,
            sharing: None,
            no_overlap: false,
            timeline: None,
            timeline_max_events: 2_000_000,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum SimError {
    Trace(TraceError),
    Machine(String),
    Options(String),
    /// the replay cannot go on: each line names a blocked rank and what it waits for
    Deadlock(Vec<String>),
    Interrupted,
}

impl std::fmt::Display for SimError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SimError::Trace(e) => write!(f, "{e}"),
            SimError::Machine(e) => write!(f, "machine: {e}"),
            SimError::Options(e) => write!(f, "options: {e}"),
            SimError::Deadlock(v) => {
                write!(f, "deadlock: {} rank(s) blocked forever:", v.len())?;
                for l in v.iter().take(64) {
                    write!(f, "\n  {l}")?;
                }
                if v.len() > 64 {
                    write!(f, "\n  ... and {} more", v.len() - 64)?;
                }
                Ok(())
            }
            SimError::Interrupted => write!(f, "interrupted"),
        }
    }
}
impl std::error::Error for SimError {}

impl From<TraceError> for SimError {
    fn from(e: TraceError) -> Self {
        SimError::Trace(e)
    }
}

type ReqId = u32;
type MsgId = u32;
type XferId = u32;
type CollId = u32;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Owner {
    Rank(u32),
    Coll(CollId),
}

#[derive(Clone, Debug)]
/// 16 bytes (`repr(C)`): four requests to a cache line (a replay has a dozen per rank in flight).
#[repr(C)]
struct Req {
    /// H2D copy the rank performs after waiting on this receive (HostCopy staging)
    post_copy: u64,
    /// the owner, packed (`Req::owner`): a rank, or a collective with `COLL_OWNER` set
    owner: u32,
    done: bool,
    live: bool,
    /// counted in its rank's `wait_pending` (a Wait/Waitall on it is under way)
    waited: bool,
}
const _: () = assert!(std::mem::size_of::<Req>() == 16);

/// The bit of `Req::owner` that marks a collective (ranks and collective ids stay below it).
const COLL_OWNER: u32 = 1 << 31;

impl Req {
    fn new(owner: Owner) -> Req {
        let owner = match owner {
            Owner::Rank(r) => {
                debug_assert!(r < COLL_OWNER);
                r
            }
            Owner::Coll(c) => {
                assert!(c < COLL_OWNER, "more than 2^31 collectives in flight");
                c | COLL_OWNER
            }
        };
        Req { post_copy: 0, owner, done: false, live: true, waited: false }
    }
    #[inline]
    fn owner(&self) -> Owner {
        if self.owner & COLL_OWNER != 0 {
            Owner::Coll(self.owner & !COLL_OWNER)
        } else {
            Owner::Rank(self.owner)
        }
    }
}

/// One message, in one cache line (`repr(C)`, 64 bytes, aligned): its envelope, protocol state,
/// pending plan and the latencies its later events need.  (Its timeline id, when a timeline is
/// recorded, is kept apart in `Sim::msg_uid`.)
#[derive(Clone, Debug)]
#[repr(C, align(64))]
struct Msg {
    src: u32,
    dst: u32,
    tag: i32,
    send_req: ReqId,
    /// the matched receive, `NO_REQ` until matched
    recv_req: ReqId,
    eager: bool,
    data_arrived: bool,
    ctx: u64,
    bytes: u64,
    plan: Option<Box<Plan>>,
    ctl_latency: u64,
    /// the receiver's time after the data has arrived: receive overhead (mpi.recv_overhead, or
    /// the message's `[[mpi.factors]]` bin) plus the unpack kernel of non-contiguous device data
    recv_o_ns: u64,
}
const NO_REQ: ReqId = ReqId::MAX;

#[derive(Clone, Debug)]
struct Posted {
    ctx: u64,
    src: i32,
    tag: i32,
    req: ReqId,
}

#[derive(Clone, Copy, Debug)]
enum XferOwner {
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
    /// boxed (from `Sim::plan_pool`): a rendezvous hands its plan over without copying it
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

/// A rank's trace request ids -> live requests.  A rank has few requests outstanding at once
/// (a halo's dozen): a short list scanned in place beats hashing; past `SMALL` it moves to a map.
#[derive(Default)]
struct ReqMap {
    small: Vec<(u64, ReqId)>,
    big: HashMap<u64, ReqId>,
}
impl ReqMap {
    const SMALL: usize = 32;
    fn insert(&mut self, k: u64, v: ReqId) -> Option<ReqId> {
        if !self.big.is_empty() {
            return self.big.insert(k, v);
        }
        if let Some(e) = self.small.iter_mut().find(|e| e.0 == k) {
            return Some(std::mem::replace(&mut e.1, v));
        }
        if self.small.len() < Self::SMALL {
            self.small.push((k, v));
        } else {
            self.big.extend(self.small.drain(..));
            self.big.insert(k, v);
        }
        None
    }
    fn remove(&mut self, k: &u64) -> Option<ReqId> {
        if !self.big.is_empty() {
            let v = self.big.remove(k);
            if self.big.is_empty() {
                self.big = HashMap::default(); // back to the list (frees the table)
            }
            return v;
        }
        let p = self.small.iter().position(|e| e.0 == *k)?;
        Some(self.small.swap_remove(p).1)
    }
}

/// A flow's completion event is set lazily (its record, `lmm::Completion`, lives with the flow):
/// a flow slowed down keeps its pending event, which re-arms itself at the new finish when it
/// fires; a flow sped up gets a new event (`gen` tells the live one).  Fewer events than one per
/// re-rating, same completion times.
const NO_EVENT: Time = Completion::NO_EVENT;

/// A message's data path and whether the sender / the receiver stage through the host.
type Route = (&'static dyn DataPath, bool, bool);

#[derive(Clone, Copy, Debug)]
enum Ev {
    Wake(u32),
    Envelope(MsgId),
    StageFlow(XferId, u8),
    StageDone(XferId, u8),
    FlowDone(u32, u32),
    Resolve,
    ReqDone(ReqId),
    CollNext(CollId),
    /// a kernel of (rank, stream) finished
    KernelDone(u32, i32),
}

#[derive(Clone, Debug, PartialEq)]
enum Block {
    None,
    Busy,
    Wait { reqs: Vec<ReqId>, any: bool },
    Copy,
    Coll(CollId),
    /// the host waits for GPU work: (stream or -1 for the device, or event id)
    GpuSync(GpuWait),
    Done,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum GpuWait {
    Stream(i32),
    Device,
    Event(u64, u64),
}

#[derive(Clone, Debug)]
enum GpuWork {
    Kernel { dur: Time, seq: u64 },
    Copy(Box<Plan>),
    Record { event: u64, gen: u64 },
    WaitEvent { event: u64, gen: u64 },
}

#[derive(Default)]
struct Stream {
    q: VecDeque<GpuWork>,
    running: bool,
    priority: i32,
}

/// A rank's GPU: in-order streams, one SM resource for kernels (highest-priority ready kernel
/// first, then launch order), copy engines as links of the flow network.
#[derive(Default)]
struct Gpu {
    streams: std::collections::BTreeMap<i32, Stream>,
    sm_busy: bool,
    /// event id -> (generation recorded so far, generation completed)
    events: HashMap<u64, (u64, u64)>,
    launches: u64,
    busy_ns: Time,
}

/// Field order fixed (`repr(C)`, 64-byte aligned) by use: the first cache line holds what every
/// step and every request completion reads (state, current op, the wait's counter), the second the
/// matching queues, the third the request map; the rest is touched rarely.  The default layout
/// spread the hot fields over more lines, each a miss for ranks whose state fell out of the cache.
#[repr(C, align(64))]
struct Rank {
    block: Block,
    /// the operation running, in a box from `Sim::op_pool`: it moves in and out of the rank for
    /// every step of the op, and moving a pointer is cheaper than moving an 88-byte `Op`
    cur: Option<Box<Op>>,
    call_start: Time,
    /// requests of the current wait for all (`Block::Wait { any: false }`) not done yet
    wait_pending: u32,
    phase: u8,
    /// the rank has staged MPI buffers through host memory (a D2H or H2D copy ran): its host
    /// messages are `hostcopy` ones for `[[mpi.factors]]`
    stages: bool,
    comm: Time,
    // line 2
    posted: Vec<Posted>,
    unexpected: Vec<MsgId>,
    ops_done: u64,
    compute: Time,
    // line 3
    reqmap: ReqMap,
    end: Time,
    // the rest
    pending_copies: Vec<u64>,
    /// sizes of host receive buffers filled recently (the --staged-buffers-are-device what-if drops
    /// an H2D copy of such a size: it only staged a received message)
    recent_recvs: Vec<u64>,
    copy: Time,
    copy_start: Time,
    coll_seq: HashMap<u32, u32>,
    gpu: Option<Box<Gpu>>,
    /// H2D staging copy owed at the end of the current blocking collective (HostCopy)
    coll_h2d: u64,
    /// sizes of send buffers a recognised D2H copy staged, not sent yet (crate::buffers)
    staged_sends: Vec<u64>,
    /// untraced time (`Untraced` rows)
    untraced: Time,
    /// the current send's buffer class (`send_buf_gpu`), kept across its phases
    send_gpu: bool,
}

impl Rank {
    fn new() -> Rank {
        Rank {
            cur: None,
            phase: 0,
            block: Block::None,
            call_start: 0,
            reqmap: ReqMap::default(),
            coll_seq: HashMap::default(),
            posted: Vec::new(),
            unexpected: Vec::new(),
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
        }
    }
}

struct CollRun {
    rank: u32,
    comm: u32,
    ctx: u64,
    rounds: Vec<Round>,
    idx: usize,
    pending: u32,
    gpu_path: bool,
    /// device messages staged through the host by the library (`mpi.device_collectives`)
    staged: bool,
    req: Option<ReqId>,
    live: bool,
    /// the collective's host buffers are staging buffers (`hostcopy` factors)
    hostcopy: bool,
    /// which collective (its `[[mpi.factors]]` bins by collective)
    coll_kind: g2g_coll::CollKind,
}

/// Pre-resolved communicator: world rank of each comm rank.
struct Comm {
    def: CommDef,
    size: u32,
}

struct Sim<'a> {
    m: Machine,
    opt: SimOptions,
    q: EventQueue<Ev>,
    ranks: Vec<Rank>,
    /// each rank's queued trace operations, filled a row group at a time by the trace source
    queues: Vec<VecDeque<Op>>,
    reqs: Vec<Req>,
    free_reqs: Vec<ReqId>,
    msgs: Vec<Msg>,
    free_msgs: Vec<MsgId>,
    xfers: Vec<Option<Xfer>>,
    free_xfers: Vec<XferId>,
    colls: Vec<CollRun>,
    free_colls: Vec<CollId>,
    comms: HashMap<u32, Comm>,
    nranks: u32,
    src: &'a mut dyn TraceSource,
    exhausted: bool,
    /// where MPI buffers were found to live and what the staging rule recognised
    bufstat: BufferStat,
    /// MPI data buffers the trace itself records as device memory
    traced_device: u64,
    /// `Untraced` rows met
    untraced_ops: u64,
    /// seconds spent inside the trace source (decoding), part of the wall time
    read_s: f64,
    resolve_pending: bool,
    resched: Vec<Reschedule>,
    /// emptied wait lists, kept for their allocations
    wait_lists: Vec<Vec<ReqId>>,
    /// boxes of finished transfers' plans, for reuse
    plan_pool: Vec<Box<Plan>>,
    /// boxes of finished operations, for reuse (see `Rank::cur`)
    op_pool: Vec<Box<Op>>,
    th: Thresholds,
    ov: AlgoOverrides,
    stats: Vec<OpStat>,
    /// bytes and messages per data path (a handful of entries: a short list beats hashing a name)
    paths: Vec<(&'static str, PathStat)>,
    /// point-to-point bytes and messages per size class (`report::SIZE_CLASSES`)
    sizes: [PathStat; crate::report::SIZE_CLASSES.len()],
    p2p_msgs: u64,
    coll_msgs: u64,
    ops_total: u64,
    ops_done: u64,
    peak_flows: u64,
    tl: Option<crate::timeline::Timeline>,
    next_uid: u64,
    /// timeline ids of the messages (by `MsgId`), kept only when a timeline is recorded
    msg_uid: Vec<u64>,
    /// the rank whose operation `exec` is running: completions for it return to `exec` instead of
    /// re-entering `step` (no recursion, whatever the trace)
    executing: Option<u32>,
    /// communicator 0 is MPI_COMM_WORLD with the identity rank map (the fast path of `world_of`)
    world_is_identity: bool,
    /// set while a staged collective posts its messages
    staged_hint: bool,
    /// `[[mpi.factors]]` with `active_ranks`: ranks seen passing messages (empty until the first
    /// message when the machine has such bins) and, per node, how many
    load_seen: Vec<bool>,
    node_active: Vec<u32>,
    by_load: bool,
    /// set around post_send_routed by a blocking point-to-point send (Send, Ssend, Bsend, Rsend, the
    /// send half of Sendrecv): the message's bin adds its `blocking_send_overhead`
    blocking_hint: bool,
}

/// HostCopy staging of a collective: (bytes copied device-to-host before, host-to-device after) on
/// one rank.  Only the buffers the rank actually sends or receives move: a broadcast is copied out
/// at the root and back in everywhere else.
fn staging_bytes(kind: CollKind, is_root: bool, op: &Op) -> (u64, u64) {
    let recv = if op.recv_bytes() > 0 { op.recv_bytes() } else { op.bytes };
    match kind {
        CollKind::Barrier => (0, 0),
        CollKind::Bcast => {
            if is_root {
                (op.bytes, 0)
            } else {
                (0, op.bytes.max(op.recv_bytes()))
            }
        }
        CollKind::Reduce => (op.bytes, if is_root { op.bytes } else { 0 }),
        CollKind::Gather | CollKind::Gatherv => (op.bytes, if is_root { op.recv_bytes() } else { 0 }),
        CollKind::Scatter | CollKind::Scatterv => (if is_root { op.bytes } else { 0 }, op.recv_bytes()),
        _ => (op.bytes, recv),
    }
}

/// Operations that are MPI calls (charged `mpi.call_overhead`).
fn is_mpi_call(k: OpKind) -> bool {
    !matches!(
        k,
        OpKind::Compute | OpKind::Kernel | OpKind::Memcpy | OpKind::EventRecord | OpKind::StreamWaitEvent | OpKind::StreamSync
            | OpKind::DeviceSync | OpKind::EventSync | OpKind::Init | OpKind::Finalize | OpKind::Untraced
    )
}

fn is_wait(k: OpKind) -> bool {
    matches!(k, OpKind::Wait | OpKind::Waitall | OpKind::Waitany | OpKind::Waitsome | OpKind::Test)
}

fn coll_kind(k: OpKind) -> Option<(CollKind, bool)> {
    match k {
        OpKind::Coll(i) => Some((CollKind::ALL[i as usize], false)),
        OpKind::ICol(i) => Some((CollKind::ALL[i as usize], true)),
        _ => None,
    }
}

fn thresholds_from(cfg: &MachineConfig) -> Result<Thresholds, String> {
    let mut th = Thresholds::default();
    for (k, v) in &cfg.coll.entries {
        th.set(k, *v).map_err(|e| format!("collectives.{k}: {e}"))?;
    }
    Ok(th)
}

/// Runs a trace on a machine.  `progress(done_ops, total_ops)` is called now and then; returning
/// false interrupts the run.
pub fn simulate(
    src: &mut dyn TraceSource,
    cfg: MachineConfig,
    opt: SimOptions,
    total_ops_hint: u64,
    progress: Option<Progress>,
) -> Result<Report, SimError> {
    let wall = Instant::now();
    let nranks = src.nranks();
    if nranks == 0 {
        return Err(SimError::Trace(TraceError { file: src.name().into(), rank: None, seq: None, msg: "trace has no ranks".into() }));
    }
    let gpn = opt.gpus_per_node.unwrap_or(cfg.gpus_per_node).max(1);
    let place = match &opt.mapping {
        Mapping::Linear => Placement::linear(nranks, gpn),
        Mapping::RoundRobin => Placement::round_robin(nranks, gpn),
        Mapping::Nodes(v) => {
            if v.len() != nranks as usize {
                return Err(SimError::Options(format!("mapping has {} entries but the trace has {nranks} ranks", v.len())));
            }
            Placement::from_nodes(v.clone(), gpn).map_err(SimError::Options)?
        }
    };
    let th = thresholds_from(&cfg).map_err(SimError::Machine)?;
    let mut ov_spec = cfg.coll.algos.join(",");
    if !opt.coll_algos.is_empty() {
        if !ov_spec.is_empty() {
            ov_spec.push(',');
        }
        ov_spec.push_str(&opt.coll_algos);
    }
    let ov = if ov_spec.is_empty() { AlgoOverrides::default() } else { AlgoOverrides::parse(&ov_spec).map_err(|e| SimError::Options(e.to_string()))? };
    let machine_name = cfg.name.clone();
    let mut cfg = cfg;
    if let Some(sh) = opt.sharing {
        cfg.sharing = sh;
    }
    let mut m = Machine::build(cfg, place).map_err(SimError::Machine)?;
    if opt.network_scale != 1.0 {
        if !(opt.network_scale > 0.0) {
            return Err(SimError::Options("network scale must be positive".into()));
        }
        m.scale_network(opt.network_scale);
    }
    let mut comms: HashMap<u32, Comm> = HashMap::default();
    for c in src.comms() {
        let size = c.size(nranks);
        if let Some(mem) = &c.members {
            if let Some(bad) = mem.iter().find(|&&w| w >= nranks) {
                return Err(SimError::Trace(TraceError { file: src.name().into(), rank: Some(*bad), seq: None, msg: format!("communicator {} names rank {bad} outside the trace", c.id) }));
            }
        }
        comms.insert(c.id, Comm { def: c.clone(), size });
    }
    if !comms.contains_key(&0) {
        comms.insert(0, Comm { def: CommDef { id: 0, name: "MPI_COMM_WORLD".into(), members: None }, size: nranks });
    }
    let trace_name = src.name().to_string();
    let mut sim = Sim {
        m,
        opt,
        q: EventQueue::new(),
        ranks: (0..nranks).map(|_| Rank::new()).collect(),
        queues: (0..nranks).map(|_| VecDeque::new()).collect(),
        reqs: Vec::new(),
        free_reqs: Vec::new(),
        msgs: Vec::new(),
        free_msgs: Vec::new(),
        xfers: Vec::new(),
        free_xfers: Vec::new(),
        colls: Vec::new(),
        free_colls: Vec::new(),
        comms,
        nranks,
        src,
        exhausted: false,
        bufstat: BufferStat::default(),
        traced_device: 0,
        untraced_ops: 0,
        read_s: 0.0,
        resolve_pending: false,
        staged_hint: false,
        load_seen: Vec::new(),
        node_active: Vec::new(),
        by_load: false,
        blocking_hint: false,
        resched: Vec::new(),
        wait_lists: Vec::new(),
        plan_pool: Vec::new(),
        op_pool: Vec::new(),
        th,
        ov,
        stats: vec![OpStat::default(); OpKind::COUNT],
        paths: Vec::new(),
        sizes: Default::default(),
        p2p_msgs: 0,
        coll_msgs: 0,
        ops_total: total_ops_hint,
        ops_done: 0,
        peak_flows: 0,
        tl: None,
        next_uid: 0,
        msg_uid: Vec::new(),
        executing: None,
        world_is_identity: false,
    };
    // room for the flows in flight at once (16 per rank; more grow the tables as needed)
    let flows_hint = (nranks as usize).saturating_mul(16).min(1 << 26);
    sim.m.net.reserve_flows(flows_hint);
    sim.world_is_identity = sim.comms.get(&0).map(|c| c.def.members.is_none() && c.size == nranks).unwrap_or(false);
    sim.by_load = sim.m.cfg.factors_by_load();
    if let Some(p) = sim.opt.timeline.clone() {
        let nodes = sim.m.place.nodes;
        sim.tl = Some(crate::timeline::Timeline::create(&p, sim.opt.timeline_max_events, nodes, &sim.m.place.node_of, &sim.m.place.gpu_of).map_err(|e| SimError::Options(format!("timeline {p}: {e}")))?);
    }
    sim.run(progress)?;
    if let Some(tl) = sim.tl.take() {
        tl.finish().map_err(|e| SimError::Options(format!("timeline: {e}")))?;
    }
    Ok(sim.report(trace_name, machine_name, wall.elapsed().as_secs_f64()))
}

impl<'a> Sim<'a> {
    // ------------------------------------------------------------------ driver
    fn run(&mut self, mut progress: Option<Progress>) -> Result<(), SimError> {
        for r in 0..self.nranks {
            self.q.push(0, Ev::Wake(r));
        }
        let mut next_report = 1u64 << 16;
        while let Some((_, ev)) = self.q.pop() {
            self.handle(ev)?;
            if self.q.processed() >= next_report {
                next_report += 1 << 16;
                if let Some(p) = progress.as_mut() {
                    if !p(self.ops_done, self.ops_total) {
                        return Err(SimError::Interrupted);
                    }
                }
            }
        }
        if let Some(p) = progress.as_mut() {
            p(self.ops_done, self.ops_total.max(self.ops_done));
        }
        let mut blocked = vec![];
        for r in 0..self.nranks {
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
                    OpKind::Recv | OpKind::Irecv | OpKind::Send | OpKind::Ssend | OpKind::Isend | OpKind::Issend | OpKind::Bsend | OpKind::Rsend => {
                        let peer = if op.peer == ANY_SOURCE { "ANY_SOURCE".to_string() } else { op.peer.to_string() };
                        let tag = if op.tag == ANY_TAG { "ANY_TAG".to_string() } else { op.tag.to_string() };
                        s += &format!(" peer {peer} tag {tag} comm {}", op.comm);
                    }
                    OpKind::Sendrecv => s += &format!(" send to {} tag {}, receive from {} tag {}, comm {}", op.peer, op.tag, op.recv_peer(), op.recv_tag(), op.comm),
                    OpKind::Wait | OpKind::Waitall | OpKind::Waitany | OpKind::Waitsome => {
                        s += &format!(" on request(s) {:?}", if op.reqs().is_empty() { vec![op.req] } else { op.reqs().to_vec() });
                    }
                    _ if op.kind.is_collective() => s += &format!(" on comm {} root {}", op.comm, op.root()),
                    _ => {}
                }
                s
            }
            None => "between operations".to_string(),
        };
        let pending: Vec<String> = rk.posted.iter().take(4).map(|p| {
            let src = if p.src == ANY_SOURCE { "ANY_SOURCE".into() } else { p.src.to_string() };
            format!("recv from world rank {src} tag {}", p.tag)
        }).collect();
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
            Ev::StageFlow(x, s) => self.stage_flow(x, s as usize),
            Ev::StageDone(x, s) => self.stage_done(x, s as usize)?,
            Ev::FlowDone(f, g) => {
                let now = self.q.now();
                let e = self.m.net.completion(f);
                if g != e.gen || e.pend == NO_EVENT {
                    return Ok(()); // superseded by an earlier one
                }
                e.pend = NO_EVENT;
                let (version, finish, lat) = (e.version, e.finish, e.lat);
                if !self.m.net.is_current(f, version) {
                    return Ok(());
                }
                if finish > now {
                    // the flow was slowed down since this event was set: one event at its new finish
                    let e = self.m.net.completion(f);
                    e.gen = e.gen.wrapping_add(1);
                    e.pend = finish;
                    let g = e.gen;
                    self.q.push(finish, Ev::FlowDone(f, g));
                    return Ok(());
                }
                let token = self.m.net.finish(f);
                self.need_resolve();
                let x = (token >> 8) as XferId;
                let s = (token & 0xff) as usize;
                self.q.push_in(lat, Ev::StageDone(x, s as u8));
            }
            Ev::Resolve => {
                self.resolve_pending = false;
                let now = self.q.now();
                self.resched.clear();
                let mut out = std::mem::take(&mut self.resched);
                self.m.net.resolve(now, &mut out);
                for r in &out {
                    // every flow has its record from `stage_flow`
                    let e = self.m.net.completion(r.flow);
                    e.finish = r.finish;
                    e.version = r.version;
                    // a later finish keeps the pending event (it re-arms itself when it fires); an
                    // earlier one (or none pending) needs a new event, the old one goes stale
                    if e.pend == NO_EVENT || r.finish < e.pend {
                        e.gen = e.gen.wrapping_add(1);
                        e.pend = r.finish;
                        let g = e.gen;
                        self.q.push(r.finish, Ev::FlowDone(r.flow, g));
                    }
                }
                self.resched = out;
                self.peak_flows = self.peak_flows.max(self.m.net.active_flows as u64);
            }
            Ev::ReqDone(q) => self.complete_req(q)?,
            Ev::CollNext(c) => self.coll_round(c)?,
            Ev::KernelDone(r, st) => self.kernel_done(r, st)?,
        }
        Ok(())
    }

    fn need_resolve(&mut self) {
        if !self.resolve_pending {
            self.resolve_pending = true;
            self.q.push_in(0, Ev::Resolve);
        }
    }

    // ------------------------------------------------------------------ trace feeding
    /// The rank's next operation, in a box from the pool.
    fn next_op(&mut self, r: u32) -> Result<Option<Box<Op>>, SimError> {
        loop {
            // the staging rule looks at the rank's next LOOKAHEAD operations: keep that many
            // queued whatever the file's row groups (a result must not depend on the layout)
            let n = self.queues[r as usize].len();
            if n > 0 && (n > buffers::LOOKAHEAD || self.exhausted) {
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

    /// The staging rule, send side (crate::buffers::d2h_stages_send).
    fn staged_send_follows(&self, r: u32, bytes: u64) -> bool {
        buffers::d2h_stages_send(&self.queues[r as usize], bytes)
    }

    /// Does rank `r` stage its MPI buffers through host memory (HostCopy)?  True once it has run a
    /// D2H or H2D copy, or when one follows among its next queued operations (a receiver that only
    /// copies back after its first receive).
    fn rank_stages(&self, r: u32) -> bool {
        self.ranks[r as usize].stages || buffers::copies_ahead(&self.queues[r as usize])
    }

    /// Remembers a host receive buffer's size (at most 64): an H2D copy of that size afterwards
    /// only stages the received message (the staging rule, receive side).
    fn note_recv(&mut self, r: u32, mem: MemSpace, bytes: u64) {
        if self.opt.buffers != Buffers::Host && !mem.on_gpu() && bytes > 0 {
            let rr = &mut self.ranks[r as usize].recent_recvs;
            if rr.len() >= 64 {
                rr.remove(0);
            }
            rr.push(bytes);
        }
    }

    /// Is the send buffer of this MPI call (`bytes` of it, space `mem`) on the GPU for the mode?
    /// Counts it in the report's buffer statistics.  Device buffers: yes; staged ones (a recognised
    /// D2H copy filled them): only under gpudirect, which removed that copy; host ones: no.
    fn send_buf_gpu(&mut self, r: u32, mem: MemSpace, bytes: u64, data: bool) -> bool {
        if !data {
            self.bufstat.sync_calls += 1;
            return false;
        }
        self.bufstat.mpi_buffers += 1;
        if mem.on_gpu() {
            self.traced_device += 1;
        }
        if self.opt.buffers == Buffers::Host {
            return false;
        }
        if mem.on_gpu() {
            self.bufstat.device += 1;
            return true;
        }
        let ss = &mut self.ranks[r as usize].staged_sends;
        if let Some(i) = ss.iter().position(|&b| b == bytes) {
            ss.swap_remove(i);
            self.bufstat.staged += 1;
            return self.opt.mode == Mode::GpuDirect;
        }
        if self.opt.buffers == Buffers::Device {
            self.bufstat.device += 1;
            return true;
        }
        false
    }

    /// Is a receive buffer on the GPU for the mode (decides whether a host-path arrival is staged
    /// back with an added H2D copy)?  A host buffer under `--buffers device` is, unless the trace
    /// copies it to the GPU itself right after (then that copy is the staging).
    fn recv_buf_gpu(&self, r: u32, mem: MemSpace, bytes: u64) -> bool {
        if bytes == 0 {
            return false;
        }
        match self.opt.buffers {
            Buffers::Host => false,
            Buffers::Traced => mem.on_gpu(),
            Buffers::Device => mem.on_gpu() || !buffers::h2d_follows(&self.queues[r as usize], bytes),
        }
    }

    // ------------------------------------------------------------------ helpers
    fn ep(&self, world: u32) -> Endpoint {
        Endpoint { node: self.m.place.node_of[world as usize], gpu: self.m.place.gpu_of[world as usize] }
    }

    #[inline]
    fn world_of(&self, r: u32, comm: u32, peer: i32) -> Result<u32, SimError> {
        if comm == 0 && peer >= 0 && (peer as u32) < self.nranks && self.world_is_identity {
            return Ok(peer as u32);
        }
        let c = self.comms.get(&comm).ok_or_else(|| self.terr(r, format!("communicator {comm} is not defined in the trace")))?;
        if peer < 0 || peer as u32 >= c.size {
            return Err(self.terr(r, format!("peer {peer} is outside communicator {comm} (size {})", c.size)));
        }
        Ok(c.def.world(peer as u32).unwrap())
    }

    /// An error in rank `r`'s current operation, named by its event number: the operations the
    /// rank has finished (ops are not numbered in memory; every trace source delivers a rank's
    /// events in order from 0).
    fn terr(&self, r: u32, msg: String) -> SimError {
        let seq = self.ranks[r as usize].ops_done as u32;
        SimError::Trace(TraceError { file: self.src.name().to_string(), rank: Some(r), seq: Some(seq), msg })
    }

    fn new_req(&mut self, owner: Owner) -> ReqId {
        let rq = Req::new(owner);
        if let Some(id) = self.free_reqs.pop() {
            self.reqs[id as usize] = rq;
            id
        } else {
            self.reqs.push(rq);
            (self.reqs.len() - 1) as ReqId
        }
    }
    fn free_req(&mut self, id: ReqId) {
        self.reqs[id as usize].live = false;
        self.free_reqs.push(id);
    }

    /// Chooses the data path of a message and whether each side stages through the host.
    /// Returns (model, sender staging copy, receiver staging copy).
    fn choose_path(&self, src: u32, dst: u32, src_gpu: bool, dst_gpu: bool, bytes: u64, collective: bool) -> Route {
        if bytes == 0 {
            // synchronisation, not data: the host path in every mode
            return (&paths::HOST, false, false);
        }
        let (a, b) = (self.ep(src), self.ep(dst));
        let gpu_aware = match self.opt.mode {
            Mode::HostCopy => false,
            Mode::AsTraced => true,
            Mode::GpuDirect => {
                bytes >= self.opt.gpudirect_min_bytes && (!self.opt.gpudirect_collectives_only || collective)
            }
        };
        if src_gpu && dst_gpu && gpu_aware {
            if a.node == b.node {
                return (&paths::P2P, false, false);
            }
            if self.m.cfg.gpudirect_rdma && bytes <= self.m.cfg.rdma_max_bytes {
                return (&paths::RDMA, false, false);
            }
            if bytes > self.m.cfg.pipeline_threshold {
                return (&paths::PIPELINED, false, false);
            }
            return (&paths::HOST, true, true);
        }
        // host path; a GPU side stages (the application's cudaMemcpy, or the MPI's own for a
        // CUDA-aware call with one host side)
        (&paths::HOST, src_gpu, dst_gpu)
    }

    fn op_stat(&mut self, kind: OpKind, dt: Time, bytes: u64) {
        let s = &mut self.stats[kind.index()];
        let d = dt as f64 * 1e-9;
        if s.count == 0 || d < s.min_s {
            s.min_s = d;
        }
        if d > s.max_s {
            s.max_s = d;
        }
        s.count += 1;
        s.total_s += d;
        s.bytes += bytes;
    }

    // ------------------------------------------------------------------ rank execution
    /// Runs rank `r` until it blocks or finishes.
    fn step(&mut self, r: u32) -> Result<(), SimError> {
        loop {
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
                        let c = self.m.cfg.call_overhead_ns;
                        let mpi_call = c > 0.0 && is_mpi_call(op.kind) && !(op.peer == PROC_NULL && !op.kind.is_collective() && !is_wait(op.kind));
                        let rk = &mut self.ranks[r as usize];
                        rk.cur = Some(op);
                        rk.phase = 0;
                        rk.call_start = self.q.now();
                        if mpi_call {
                            // the call's CPU time (mpi.call_overhead) before it acts
                            self.busy(r, c.round() as Time);
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
            let prev = self.executing.replace(r);
            let finished = self.exec(r);
            self.executing = prev;
            if finished? {
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
            OpKind::Compute | OpKind::Kernel | OpKind::StreamSync | OpKind::DeviceSync | OpKind::EventSync
            | OpKind::EventRecord | OpKind::StreamWaitEvent | OpKind::Untraced => rk.compute += dt,
            OpKind::Memcpy => rk.copy += dt,
            OpKind::Init | OpKind::Finalize => {}
            _ => rk.comm += dt,
        }
        rk.ops_done += 1;
        self.ops_done += 1;
        let start = rk.call_start;
        let seq = rk.ops_done - 1;
        if let Some(tl) = self.tl.as_mut() {
            tl.op(r, &op, seq, start, now);
        }
        let bytes = op.bytes.max(op.recv_bytes());
        self.op_stat(op.kind, dt, bytes);
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
        let kind = op.kind;
        match kind {
            OpKind::Init | OpKind::Finalize | OpKind::Test => Ok(true),
            OpKind::Kernel | OpKind::EventRecord | OpKind::StreamWaitEvent | OpKind::StreamSync | OpKind::DeviceSync | OpKind::EventSync => {
                self.exec_gpu(r, op, phase)
            }
            OpKind::Untraced => {
                // a stretch the tracer did not record: skipped (reported) unless --window all
                if phase == 0 {
                    self.untraced_ops += 1;
                    self.ranks[r as usize].untraced += op.dur_ns();
                    if self.opt.window == Window::All && op.dur_ns() > 0 {
                        self.ranks[r as usize].phase = 1;
                        self.busy(r, op.dur_ns());
                        return Ok(false);
                    }
                }
                Ok(true)
            }
            OpKind::Compute => {
                if phase == 0 && op.dur_ns() > 0 {
                    self.ranks[r as usize].phase = 1;
                    self.busy(r, op.dur_ns());
                    Ok(false)
                } else {
                    Ok(true)
                }
            }
            OpKind::Memcpy => self.exec_memcpy(r, op, phase),
            OpKind::Send | OpKind::Ssend | OpKind::Bsend | OpKind::Rsend | OpKind::Isend | OpKind::Issend => {
                self.exec_send(r, op, phase)
            }
            OpKind::Recv | OpKind::Irecv => self.exec_recv(r, op, phase),
            OpKind::Sendrecv => self.exec_sendrecv(r, op, phase),
            OpKind::Wait | OpKind::Waitall | OpKind::Waitany | OpKind::Waitsome => self.exec_wait(r, op, phase),
            OpKind::Coll(_) | OpKind::ICol(_) => self.exec_coll(r, op, phase),
        }
    }

    fn busy(&mut self, r: u32, dt: Time) {
        self.ranks[r as usize].block = Block::Busy;
        self.q.push_in(dt, Ev::Wake(r));
    }

    fn exec_memcpy(&mut self, r: u32, op: &Op, phase: u8) -> Result<bool, SimError> {
        if phase > 0 {
            return Ok(true);
        }
        // the staging rule (crate::buffers): a D2H copy before a host send of its size, an H2D
        // copy after a host receive of its size only stage an MPI buffer; gpudirect removes them
        if self.opt.buffers != Buffers::Host {
            let staging = match op.copy {
                CopyKind::D2H => {
                    let st = self.staged_send_follows(r, op.bytes);
                    if st {
                        let ss = &mut self.ranks[r as usize].staged_sends;
                        if ss.len() >= 64 {
                            ss.remove(0);
                        }
                        ss.push(op.bytes);
                    }
                    st
                }
                CopyKind::H2D => {
                    let rr = &mut self.ranks[r as usize].recent_recvs;
                    if let Some(i) = rr.iter().position(|&b| b == op.bytes) {
                        rr.swap_remove(i);
                        true
                    } else {
                        false
                    }
                }
                _ => false,
            };
            if staging {
                self.bufstat.staging_copies += 1;
                if self.opt.mode == Mode::GpuDirect {
                    self.bufstat.staging_copies_removed += 1;
                    return Ok(true);
                }
            }
        }
        let at = self.ep(r);
        if matches!(op.copy, CopyKind::D2H | CopyKind::H2D) {
            self.ranks[r as usize].stages = true;
        }
        let plan = match op.copy {
            CopyKind::D2H | CopyKind::H2D => {
                let st = StagedPath::copy_stage(&self.m, at, op.copy == CopyKind::D2H);
                Plan::one("memcpy", st, op.bytes)
            }
            CopyKind::D2D => {
                let st = g2g_net::paths::Stage { delay_ns: self.m.cfg.copy_delay_ns as u64, links: smallvec::smallvec![self.m.ce_d2h(at.node, at.gpu)], latency_ns: 0 };
                Plan::one("memcpy", st, op.bytes)
            }
            CopyKind::H2H | CopyKind::None => {
                let st = g2g_net::paths::Stage { delay_ns: 0, links: smallvec::smallvec![self.m.shm(at.node)], latency_ns: 0 };
                Plan::one("memcpy", st, op.bytes)
            }
        };
        if op.stream() >= 0 {
            // asynchronous copy queued on a stream: in order with that stream's kernels; the host goes on
            self.gpu_enqueue(r, op.stream(), None, GpuWork::Copy(Box::new(plan)));
            if self.opt.no_overlap {
                self.ranks[r as usize].phase = 1;
                self.ranks[r as usize].block = Block::GpuSync(GpuWait::Stream(op.stream()));
                return Ok(self.gpu_check_host(r));
            }
            return Ok(true);
        }
        self.ranks[r as usize].phase = 1;
        self.ranks[r as usize].block = Block::Copy;
        self.start_xfer(plan, XferOwner::RankCopy(r), 0);
        Ok(false)
    }

    /// A blocking staging copy done by the rank (HostCopy): D2H before a send, H2D after a receive.
    fn start_rank_copy(&mut self, r: u32, bytes: u64, d2h: bool) {
        let at = self.ep(r);
        let st = StagedPath::copy_stage(&self.m, at, d2h);
        let plan = Plan::one("hostcopy", st, bytes);
        let rk = &mut self.ranks[r as usize];
        rk.stages = true;
        rk.block = Block::Copy;
        rk.copy_start = self.q.now();
        self.start_xfer(plan, XferOwner::RankCopy(r), 0);
    }

    fn exec_send(&mut self, r: u32, op: &Op, phase: u8) -> Result<bool, SimError> {
        let blocking = matches!(op.kind, OpKind::Send | OpKind::Ssend | OpKind::Bsend | OpKind::Rsend);
        if op.peer == PROC_NULL {
            return Ok(true);
        }
        match phase {
            0 | 1 => {
                let Some((dst, route)) = self.send_route(r, op, phase)? else {
                    return Ok(false);
                };
                let sync = matches!(op.kind, OpKind::Ssend | OpKind::Issend);
                self.blocking_hint = blocking;
                let req = self.post_send_routed(r, dst, op.comm as u64, op.tag, op.bytes, sync, false, Owner::Rank(r), op.contiguous, route);
                self.blocking_hint = false;
                if blocking {
                    self.ranks[r as usize].phase = 2;
                    self.wait_on(r, vec![req], false);
                    Ok(false)
                } else {
                    self.map_req(r, op, req);
                    Ok(true)
                }
            }
            _ => Ok(true),
        }
    }

    /// The destination and data path of a point-to-point send (chosen once: for the staging
    /// decision and for the message).  HostCopy: a GPU send buffer that travels over the host path
    /// is first copied to the host by the rank (blocking); in phase 0 this starts that copy, moves
    /// the op to phase 1 and returns `None`.
    fn send_route(&mut self, r: u32, op: &Op, phase: u8) -> Result<Option<(u32, Route)>, SimError> {
        let dst = self.world_of(r, op.comm, op.peer)?;
        // classified once per call (phase 1 follows the HostCopy staging copy of phase 0)
        let gpu = if phase == 0 {
            let g = self.send_buf_gpu(r, op.mem, op.bytes, op.bytes > 0);
            self.ranks[r as usize].send_gpu = g;
            g
        } else {
            self.ranks[r as usize].send_gpu
        };
        // the receiver's buffer space is not known at the sender: assume it matches ours
        let route = self.choose_path(r, dst, gpu, gpu, op.bytes, false);
        if phase == 0 && route.1 && op.bytes > 0 {
            self.ranks[r as usize].phase = 1;
            self.start_rank_copy(r, op.bytes, true);
            return Ok(None);
        }
        Ok(Some((dst, route)))
    }

    fn map_req(&mut self, r: u32, op: &Op, req: ReqId) {
        if op.req != 0 {
            if let Some(old) = self.ranks[r as usize].reqmap.insert(op.req, req) {
                // a request id reused before being waited: the old one is simply forgotten
                if self.reqs[old as usize].done {
                    self.free_req(old);
                }
            }
        }
    }

    fn exec_recv(&mut self, r: u32, op: &Op, phase: u8) -> Result<bool, SimError> {
        if op.peer == PROC_NULL {
            return Ok(true);
        }
        match phase {
            0 => {
                let src = if op.peer == ANY_SOURCE { -1 } else { self.world_of(r, op.comm, op.peer)? as i32 };
                let gpu = self.recv_buf_gpu(r, op.mem, op.recv_bytes().max(op.bytes));
                let req = self.post_recv(r, src, op.comm as u64, op.tag, Owner::Rank(r));
                // a receive into a GPU buffer that arrives over the host path is staged H2D after
                let staged = gpu && self.recv_is_staged(r, src, op.recv_bytes().max(op.bytes));
                if staged {
                    self.reqs[req as usize].post_copy = op.recv_bytes().max(op.bytes);
                }
                self.note_recv(r, op.mem, op.recv_bytes().max(op.bytes));
                if op.kind == OpKind::Recv {
                    self.ranks[r as usize].phase = 1;
                    self.wait_on(r, vec![req], false);
                    Ok(false)
                } else {
                    self.map_req(r, op, req);
                    Ok(true)
                }
            }
            _ => Ok(true),
        }
    }

    fn recv_is_staged(&self, r: u32, src: i32, bytes: u64) -> bool {
        let s = if src < 0 { r } else { src as u32 };
        let (_, _, stage_dst) = self.choose_path(s, r, true, true, bytes, false);
        stage_dst
    }

    fn exec_sendrecv(&mut self, r: u32, op: &Op, phase: u8) -> Result<bool, SimError> {
        match phase {
            0 | 1 => {
                let send = if op.peer == PROC_NULL {
                    None
                } else {
                    match self.send_route(r, op, phase)? {
                        Some(s) => Some(s),
                        None => return Ok(false),
                    }
                };
                let gpu = self.recv_buf_gpu(r, op.mem, op.recv_bytes());
                let mut reqs = vec![];
                if op.recv_peer() != PROC_NULL {
                    let src = if op.recv_peer() == ANY_SOURCE { -1 } else { self.world_of(r, op.comm, op.recv_peer())? as i32 };
                    let rq = self.post_recv(r, src, op.comm as u64, op.recv_tag(), Owner::Rank(r));
                    if gpu && self.recv_is_staged(r, src, op.recv_bytes()) {
                        self.reqs[rq as usize].post_copy = op.recv_bytes();
                    }
                    self.note_recv(r, op.mem, op.recv_bytes());
                    reqs.push(rq);
                }
                if let Some((dst, route)) = send {
                    // Open MPI's MPI_Sendrecv is irecv + a blocking pml send (ompi/mpi/c/sendrecv.c)
                    self.blocking_hint = true;
                    reqs.push(self.post_send_routed(r, dst, op.comm as u64, op.tag, op.bytes, false, false, Owner::Rank(r), op.contiguous, route));
                    self.blocking_hint = false;
                }
                self.ranks[r as usize].phase = 2;
                self.wait_on(r, reqs, false);
                Ok(false)
            }
            _ => Ok(true),
        }
    }

    fn exec_wait(&mut self, r: u32, op: &Op, phase: u8) -> Result<bool, SimError> {
        if phase > 0 {
            return Ok(true);
        }
        let single = [op.req];
        let ids: &[u64] = if op.reqs().is_empty() { &single } else { op.reqs() };
        let mut reqs = self.wait_lists.pop().unwrap_or_default();
        reqs.clear();
        for &id in ids {
            if id == 0 {
                continue; // MPI_REQUEST_NULL
            }
            match self.ranks[r as usize].reqmap.remove(&id) {
                Some(q) => reqs.push(q),
                None => {
                    return Err(self.terr(r, format!("{} on request {id} that was never posted (or was already completed)", op.kind.name())));
                }
            }
        }
        let any = matches!(op.kind, OpKind::Waitany | OpKind::Waitsome);
        self.ranks[r as usize].phase = 1;
        self.wait_on(r, reqs, any);
        Ok(self.ranks[r as usize].block == Block::None)
    }

    /// Blocks rank r until all (or any) of `reqs` are done; retires them when satisfied.
    fn wait_on(&mut self, r: u32, reqs: Vec<ReqId>, any: bool) {
        if !any {
            // a wait for all: count the distinct requests not done yet, so that each completion
            // checks a counter instead of rescanning the list (a Waitall of n: n, not n^2, loads)
            let mut pending = 0;
            for &q in &reqs {
                let rq = &mut self.reqs[q as usize];
                if !rq.done && !rq.waited {
                    rq.waited = true;
                    pending += 1;
                }
            }
            self.ranks[r as usize].wait_pending = pending;
        }
        self.ranks[r as usize].block = Block::Wait { reqs, any };
        self.check_wait(r);
    }

    /// If the rank's wait is satisfied, retires the requests and unblocks it (the caller or an event
    /// continues it).  Returns true if it unblocked.
    fn check_wait(&mut self, r: u32) -> bool {
        let sat = match &self.ranks[r as usize].block {
            Block::Wait { reqs, any: true } => reqs.is_empty() || reqs.iter().any(|&q| self.reqs[q as usize].done),
            Block::Wait { any: false, .. } => self.ranks[r as usize].wait_pending == 0,
            _ => return false,
        };
        if !sat {
            return false;
        }
        // satisfied: take the wait list out (no copy) and retire its requests
        let Block::Wait { reqs, any } = std::mem::replace(&mut self.ranks[r as usize].block, Block::None) else {
            return false;
        };
        let mut retired_one = false;
        for &q in &reqs {
            let rq = &self.reqs[q as usize];
            if rq.done && !(any && retired_one) {
                if rq.post_copy > 0 {
                    let b = rq.post_copy;
                    self.ranks[r as usize].pending_copies.push(b);
                }
                self.free_req(q);
                retired_one = true;
            } else if any {
                // not retired: put it back under a synthetic id so a later wait can find it
                let key = u64::MAX - q as u64;
                self.ranks[r as usize].reqmap.insert(key, q);
            }
        }
        self.wait_lists.push(reqs); // its allocation serves the next wait
        true
    }

    fn complete_req(&mut self, q: ReqId) -> Result<(), SimError> {
        let rq = &mut self.reqs[q as usize];
        if rq.done {
            return Ok(());
        }
        rq.done = true;
        let waited = std::mem::replace(&mut rq.waited, false);
        match rq.owner() {
            Owner::Rank(r) => {
                if waited {
                    self.ranks[r as usize].wait_pending -= 1;
                }
                if matches!(self.ranks[r as usize].block, Block::Wait { .. }) && self.check_wait(r) {
                    self.step(r)?;
                }
            }
            Owner::Coll(c) => {
                self.free_req(q);
                let cr = &mut self.colls[c as usize];
                cr.pending -= 1;
                if cr.pending == 0 {
                    self.coll_round_done(c)?;
                }
            }
        }
        Ok(())
    }

    // ------------------------------------------------------------------ messages
    #[allow(clippy::too_many_arguments)]
    fn post_send(&mut self, src: u32, dst: u32, ctx: u64, tag: i32, bytes: u64, src_gpu: bool, sync: bool, collective: bool, owner: Owner) -> ReqId {
        let route = self.choose_path(src, dst, src_gpu, src_gpu, bytes, collective);
        self.post_send_routed(src, dst, ctx, tag, bytes, sync, collective, owner, true, route)
    }

    /// Posts a message on the path already chosen (`choose_path`: model, sender and receiver
    /// staging).  `contiguous = false`: a GPU-aware MPI packs the strided device data with a
    /// kernel before it moves and unpacks it at the receiver (seeds 001, 003).
    #[allow(clippy::too_many_arguments)]
    fn post_send_routed(&mut self, src: u32, dst: u32, ctx: u64, tag: i32, bytes: u64, sync: bool, collective: bool, owner: Owner, contiguous: bool, route: Route) -> ReqId {
        let req = self.new_req(owner);
        // a library that stages this collective's device messages through the host, in chunks
        let coll_staged = matches!(owner, Owner::Coll(c) if self.colls[c as usize].staged);
        let (model, stage_src, stage_dst) = if coll_staged { (&paths::PIPELINED as &dyn DataPath, false, false) } else { route };
        // a staged side has its data in host memory by the time MPI moves it
        let path: &dyn DataPath = if stage_src || stage_dst { &paths::HOST } else { model };
        // the plan is built in a pooled box (no allocation, no plan moved once the pool is warm)
        let mut plan = self.plan_pool.pop().unwrap_or_else(|| Box::new(Plan::empty()));
        if coll_staged {
            let c = &self.m.cfg;
            paths::Pipelined::plan_chunked_into(&self.m, self.ep(src), self.ep(dst), bytes, c.collective_chunk, c.collective_depth, &mut plan);
        } else {
            path.plan_into(&self.m, self.ep(src), self.ep(dst), bytes, &mut plan);
        }
        let gpu_direct = path.name() != "host";
        // size-dependent factors of the path (host messages of staged buffers: `hostcopy`)
        let staged_msg = stage_src || stage_dst || (!gpu_direct && (self.staged_hint || (!collective && self.rank_stages(src))));
        let fkey = if !gpu_direct && staged_msg { "hostcopy" } else { path.name() };
        let (mut o_s_cfg, mut o_r_cfg) = (self.m.cfg.send_overhead_ns, self.m.cfg.recv_overhead_ns);
        let active = if self.by_load {
            self.mark_active(src);
            self.mark_active(dst);
            self.node_active[self.m.place.node_of[src as usize] as usize]
        } else {
            1
        };
        let coll_name = match owner {
            Owner::Coll(c) if self.m.cfg.factors_by_collective() => Some(self.colls[c as usize].coll_kind.name()),
            _ => None,
        };
        if let Some(f) = self.m.cfg.factor_for(fkey, bytes, active, coll_name) {
            plan.apply_factor(f);
            o_s_cfg = f.send_overhead_ns.unwrap_or(o_s_cfg);
            o_r_cfg = f.recv_overhead_ns.unwrap_or(o_r_cfg);
            // a blocking send's extra sender time (UCX's fast-completion protocols), before the data leaves
            if self.blocking_hint && !collective {
                o_s_cfg += f.blocking_send_overhead_ns;
            }
        }
        let pack_ns = if !contiguous && gpu_direct && bytes > 0 {
            self.m.cfg.pack_kernel_latency_ns as u64 + (bytes as f64 / self.m.cfg.gpu_pack_bw * 1e9).ceil() as u64
        } else {
            0
        };
        let eager = !sync && bytes <= self.m.cfg.eager_limit && (!gpu_direct || self.m.cfg.gpudirect_eager);
        // envelopes, RTS and CTS are small CPU-to-CPU control messages: host-path latency
        let ctl_latency = self.ctl_latency(src, dst);
        {
            let name = if stage_src || stage_dst { "hostcopy" } else { path.name() };
            let ps = match self.paths.iter().position(|(k, _)| std::ptr::eq(k.as_ptr(), name.as_ptr()) || *k == name) {
                Some(i) => &mut self.paths[i].1,
                None => {
                    self.paths.push((name, PathStat::default()));
                    &mut self.paths.last_mut().unwrap().1
                }
            };
            ps.messages += 1;
            ps.bytes += bytes;
        }
        if collective {
            self.coll_msgs += 1;
        } else {
            self.p2p_msgs += 1;
            let s = &mut self.sizes[size_class_index(bytes)];
            s.messages += 1;
            s.bytes += bytes;
        }
        self.next_uid += 1;
        let uid = self.next_uid;
        let msg = Msg { src, dst, ctx, tag, bytes, eager, send_req: req, recv_req: NO_REQ, data_arrived: false, plan: None, ctl_latency, recv_o_ns: o_r_cfg as u64 + pack_ns };
        let id = if let Some(id) = self.free_msgs.pop() {
            self.msgs[id as usize] = msg;
            id
        } else {
            self.msgs.push(msg);
            (self.msgs.len() - 1) as MsgId
        };
        // packing happens on the sender before anything moves
        let o_send = o_s_cfg as u64 + pack_ns;
        if let Some(tl) = self.tl.as_mut() {
            if self.msg_uid.len() <= id as usize {
                self.msg_uid.resize(id as usize + 1, 0);
            }
            self.msg_uid[id as usize] = uid;
            tl.msg_start(uid, src, self.q.now());
        }
        if eager {
            // data leaves after the send overhead; the envelope travels with it (header first)
            self.q.push_in(o_send + ctl_latency, Ev::Envelope(id));
            let now = self.q.now();
            self.start_xfer_at(plan, XferOwner::Msg(id), o_send, now);
            self.q.push_in(o_send, Ev::ReqDone(req));
        } else {
            self.msgs[id as usize].plan = Some(plan);
            self.q.push_in(o_send + ctl_latency, Ev::Envelope(id));
        }
        req
    }

    /// Latency of a control message (envelope, RTS, CTS) between two ranks: the host path's, from
    /// the machine's route cache (a separate table by endpoints cost a cache miss per message).
    fn ctl_latency(&self, src: u32, dst: u32) -> u64 {
        paths::HostPath::latency(&self.m, self.ep(src), self.ep(dst))
    }

    /// Counts rank `r` as passing messages on its node (for `[[mpi.factors]]` bins by
    /// `active_ranks`).  The first time, every rank whose queued operations (its first window of
    /// the trace) pass messages is counted too, so that all ranks of a job that communicate from
    /// its start count from its first message on.
    fn mark_active(&mut self, r: u32) {
        if self.load_seen.is_empty() {
            self.load_seen = vec![false; self.nranks as usize];
            self.node_active = vec![0; self.m.place.nodes as usize];
            for q in 0..self.nranks {
                let passes = self.queues[q as usize].iter().any(|o| {
                    o.kind.is_collective()
                        || matches!(o.kind, OpKind::Send | OpKind::Ssend | OpKind::Bsend | OpKind::Rsend | OpKind::Isend
                            | OpKind::Issend | OpKind::Recv | OpKind::Irecv | OpKind::Sendrecv)
                });
                if passes {
                    self.load_seen[q as usize] = true;
                    self.node_active[self.m.place.node_of[q as usize] as usize] += 1;
                }
            }
        }
        if !self.load_seen[r as usize] {
            self.load_seen[r as usize] = true;
            self.node_active[self.m.place.node_of[r as usize] as usize] += 1;
        }
    }

    fn post_recv(&mut self, r: u32, src: i32, ctx: u64, tag: i32, owner: Owner) -> ReqId {
        if self.by_load {
            self.mark_active(r);
        }
        let req = self.new_req(owner);
        // search the unexpected queue in arrival order
        let pos = self.ranks[r as usize].unexpected.iter().position(|&m| {
            let msg = &self.msgs[m as usize];
            msg.ctx == ctx && (src == ANY_SOURCE || msg.src as i32 == src) && (tag == ANY_TAG || msg.tag == tag)
        });
        match pos {
            Some(p) => {
                let m = self.ranks[r as usize].unexpected.remove(p);
                self.matched(m, req);
            }
            None => self.ranks[r as usize].posted.push(Posted { ctx, src, tag, req }),
        }
        req
    }

    fn envelope(&mut self, m: MsgId) {
        let (dst, src, ctx, tag) = {
            let msg = &self.msgs[m as usize];
            (msg.dst, msg.src as i32, msg.ctx, msg.tag)
        };
        let pos = self.ranks[dst as usize].posted.iter().position(|p| {
            p.ctx == ctx && (p.src == ANY_SOURCE || p.src == src) && (p.tag == ANY_TAG || p.tag == tag)
        });
        match pos {
            Some(p) => {
                let posted = self.ranks[dst as usize].posted.remove(p);
                self.matched(m, posted.req);
            }
            None => self.ranks[dst as usize].unexpected.push(m),
        }
    }

    fn matched(&mut self, m: MsgId, recv_req: ReqId) {
        let now = self.q.now();
        let msg = &mut self.msgs[m as usize];
        msg.recv_req = recv_req;
        if msg.eager {
            if msg.data_arrived {
                let o = msg.recv_o_ns;
                self.q.push(now + o, Ev::ReqDone(recv_req));
                self.free_msg(m);
            }
        } else {
            // the CTS reaches the sender after the control latency and the data leaves then: the
            // transfer is set up now, its first chunk due after that latency (one event less)
            let lat = msg.ctl_latency;
            let plan = msg.plan.take().expect("rendezvous plan");
            self.start_xfer_at(plan, XferOwner::Msg(m), lat, now + lat);
        }
    }

    fn data_arrived(&mut self, m: MsgId) -> Result<(), SimError> {
        let msg = &mut self.msgs[m as usize];
        let o = msg.recv_o_ns;
        msg.data_arrived = true;
        if msg.eager {
            if msg.recv_req != NO_REQ {
                let rq = msg.recv_req;
                self.q.push_in(o, Ev::ReqDone(rq));
                self.free_msg(m);
            }
        } else {
            debug_assert!(msg.recv_req != NO_REQ, "rendezvous data before match");
            let (sq, rq) = (msg.send_req, msg.recv_req);
            self.free_msg(m);
            self.q.push_in(o, Ev::ReqDone(rq));
            // the send completes now (no event: only event handlers get here, no rank is executing)
            debug_assert!(self.executing.is_none());
            return self.complete_req(sq);
        }
        Ok(())
    }

    fn free_msg(&mut self, m: MsgId) {
        self.free_msgs.push(m);
    }

    // ------------------------------------------------------------------ transfers (pipelines)
    fn start_xfer(&mut self, plan: Plan, owner: XferOwner, extra_delay: u64) {
        let now = self.q.now();
        let plan = self.boxed(plan);
        self.start_xfer_at(plan, owner, extra_delay, now)
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

    /// `t0`: when the transfer counts as started (timeline), at most `extra_delay` after now.
    fn start_xfer_at(&mut self, plan: Box<Plan>, owner: XferOwner, extra_delay: u64, t0: Time) {
        let ns = plan.stages.len();
        let setup = plan.setup_ns + extra_delay;
        assert!(ns <= MAX_STAGES, "a plan of {ns} stages (at most {MAX_STAGES})");
        let chunks = plan.chunks;
        let x = Xfer { t0, plan, owner, busy: [false; MAX_STAGES], started: [0; MAX_STAGES], done: [0; MAX_STAGES], nstages: ns as u8, chunks };
        let id = if let Some(id) = self.free_xfers.pop() {
            self.xfers[id as usize] = Some(x);
            id
        } else {
            self.xfers.push(Some(x));
            (self.xfers.len() - 1) as XferId
        };
        if ns == 0 {
            self.q.push_in(setup, Ev::StageDone(id, u8::MAX));
            return;
        }
        // stage 0 of chunk 0 starts after the setup cost and its own delay
        self.try_start(id, 0, setup);
    }

    /// Starts the next chunk on stage s if allowed.
    fn try_start(&mut self, x: XferId, s: usize, extra: u64) {
        let t = self.xfers[x as usize].as_mut().unwrap();
        if t.busy[s] || t.started[s] >= t.plan.chunks {
            return;
        }
        let c = t.started[s];
        let ok = if s == 0 { c < t.done[t.plan.stages.len() - 1] + t.plan.depth } else { c < t.done[s - 1] };
        if !ok {
            return;
        }
        t.busy[s] = true;
        t.started[s] += 1;
        let delay = t.plan.stages[s].delay_ns + extra;
        if delay > 0 {
            self.q.push_in(delay, Ev::StageFlow(x, s as u8));
        } else {
            self.stage_flow(x, s);
        }
    }

    fn stage_flow(&mut self, x: XferId, s: usize) {
        let now = self.q.now();
        let t = self.xfers[x as usize].as_ref().unwrap();
        let c = t.started[s] - 1;
        let bytes = t.plan.chunk_len(c);
        let flow_bytes = t.plan.flow_bytes(c);
        let st = &t.plan.stages[s];
        if bytes == 0 || st.links.is_empty() {
            let lat = st.latency_ns;
            self.q.push_in(lat, Ev::StageDone(x, s as u8));
            return;
        }
        let token = ((x as u64) << 8) | s as u64;
        let lat = st.latency_ns;
        // the transfers and the network are separate fields: the links go straight from the plan
        let f = self.m.net.start(now, &st.links, flow_bytes, token) as usize;
        self.m.net.completion(f as u32).lat = lat;
        self.need_resolve();
    }

    fn stage_done(&mut self, x: XferId, s: usize) -> Result<(), SimError> {
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
                self.try_start(x, s, 0);
                if s < last {
                    self.try_start(x, s + 1, 0);
                }
                if s == last {
                    self.try_start(x, 0, 0);
                }
            }
            complete
        };
        if complete {
            let t = self.xfers[x as usize].take().unwrap();
            self.free_xfers.push(x);
            if let Some(tl) = self.tl.as_mut() {
                let now = self.q.now();
                match t.owner {
                    XferOwner::Msg(m) => {
                        let msg = &self.msgs[m as usize];
                        tl.transfer(msg.src, msg.dst, t.plan.model, msg.bytes, t.t0, now, self.msg_uid[m as usize]);
                    }
                    XferOwner::RankCopy(r) | XferOwner::Stream(r, _) => tl.copy(r, t.plan.model, t.plan.chunk_bytes, t.t0, now),
                }
            }
            let owner = t.owner;
            self.plan_pool.push(t.plan);
            match owner {
                XferOwner::Msg(m) => self.data_arrived(m)?,
                XferOwner::Stream(r, st) => self.stream_item_done(r, st)?,
                XferOwner::RankCopy(r) => {
                    let now = self.q.now();
                    let rk = &mut self.ranks[r as usize];
                    if rk.block == Block::Copy {
                        rk.block = Block::None;
                        // staging copies count as copy time, not inside the op they serve
                        if rk.cur.as_ref().map(|o| o.kind != OpKind::Memcpy).unwrap_or(true) {
                            rk.copy += now - rk.copy_start;
                        }
                        self.step(r)?;
                    } else if let Block::Coll(c) = rk.block {
                        rk.copy += now - rk.copy_start;
                        self.coll_round(c)?;
                    }
                }
            }
        }
        Ok(())
    }

    // ------------------------------------------------------------------ GPU streams
    fn gpu(&mut self, r: u32) -> &mut Gpu {
        self.ranks[r as usize].gpu.get_or_insert_with(Default::default)
    }

    /// Queues work on a stream; a kernel launch also sets the stream's priority.
    fn gpu_enqueue(&mut self, r: u32, stream: i32, priority: Option<i32>, w: GpuWork) {
        let g = self.gpu(r);
        let st = g.streams.entry(stream).or_default();
        if let Some(p) = priority {
            st.priority = p;
        }
        st.q.push_back(w);
        self.gpu_pump(r);
    }

    fn exec_gpu(&mut self, r: u32, op: &Op, phase: u8) -> Result<bool, SimError> {
        if phase > 0 {
            return Ok(self.ranks[r as usize].block == Block::None);
        }
        let st = op.stream().max(0);
        let wait = match op.kind {
            OpKind::Kernel => {
                let g = self.gpu(r);
                g.launches += 1;
                let seq = g.launches;
                self.gpu_enqueue(r, st, Some(op.priority()), GpuWork::Kernel { dur: op.dur_ns(), seq });
                if self.opt.no_overlap {
                    Some(GpuWait::Stream(st))
                } else {
                    None
                }
            }
            OpKind::EventRecord => {
                let g = self.gpu(r);
                let e = g.events.entry(op.req).or_insert((0, 0));
                e.0 += 1;
                let gen = e.0;
                self.gpu_enqueue(r, st, None, GpuWork::Record { event: op.req, gen });
                None
            }
            OpKind::StreamWaitEvent => {
                let gen = self.gpu(r).events.get(&op.req).map(|e| e.0).unwrap_or(0);
                self.gpu_enqueue(r, st, None, GpuWork::WaitEvent { event: op.req, gen });
                None
            }
            OpKind::StreamSync => Some(GpuWait::Stream(st)),
            OpKind::DeviceSync => Some(GpuWait::Device),
            OpKind::EventSync => {
                let gen = self.gpu(r).events.get(&op.req).map(|e| e.0).unwrap_or(0);
                Some(GpuWait::Event(op.req, gen))
            }
            _ => None,
        };
        match wait {
            None => Ok(true),
            Some(w) => {
                self.ranks[r as usize].phase = 1;
                self.ranks[r as usize].block = Block::GpuSync(w);
                Ok(self.gpu_check_host(r))
            }
        }
    }

    /// Is the host's GPU wait satisfied?  Unblocks the rank if so (returns true).
    fn gpu_check_host(&mut self, r: u32) -> bool {
        let Block::GpuSync(w) = self.ranks[r as usize].block else { return false };
        let done = match self.ranks[r as usize].gpu.as_ref() {
            None => true,
            Some(g) => match w {
                GpuWait::Stream(s) => g.streams.get(&s).map(|st| st.q.is_empty() && !st.running).unwrap_or(true),
                GpuWait::Device => g.streams.values().all(|st| st.q.is_empty() && !st.running),
                GpuWait::Event(e, gen) => g.events.get(&e).map(|x| x.1 >= gen).unwrap_or(true),
            },
        };
        if done {
            self.ranks[r as usize].block = Block::None;
        }
        done
    }

    /// Starts whatever GPU work can start: markers at once, copies on their links, and the
    /// highest-priority ready kernel on the SMs.
    fn gpu_pump(&mut self, r: u32) {
        loop {
            let mut progressed = false;
            let mut to_copy: Vec<(i32, Plan)> = vec![];
            {
                let g = self.ranks[r as usize].gpu.as_mut().unwrap();
                let mut completed: Vec<(u64, u64)> = vec![];
                for (&sid, st) in g.streams.iter_mut() {
                    while !st.running {
                        match st.q.front() {
                            Some(GpuWork::Record { event, gen }) => {
                                completed.push((*event, *gen));
                                st.q.pop_front();
                                progressed = true;
                            }
                            Some(GpuWork::WaitEvent { event, gen }) => {
                                let ok = g.events.get(event).map(|x| x.1 >= *gen).unwrap_or(true)
                                    || completed.iter().any(|(e, gg)| e == event && gg >= gen);
                                if ok {
                                    st.q.pop_front();
                                    progressed = true;
                                } else {
                                    break;
                                }
                            }
                            Some(GpuWork::Copy(_)) => {
                                if let Some(GpuWork::Copy(p)) = st.q.front().cloned() {
                                    st.running = true;
                                    to_copy.push((sid, *p));
                                }
                                break;
                            }
                            _ => break,
                        }
                    }
                }
                for (e, gen) in completed {
                    let ev = g.events.entry(e).or_insert((gen, 0));
                    ev.1 = ev.1.max(gen);
                }
            }
            for (sid, plan) in to_copy {
                self.start_xfer(plan, XferOwner::Stream(r, sid), 0);
            }
            // the SMs: one kernel at a time, best priority (lowest value) first, then launch order
            let start = {
                let g = self.ranks[r as usize].gpu.as_mut().unwrap();
                if g.sm_busy {
                    None
                } else {
                    let mut best: Option<(i32, u64, i32)> = None;
                    for (&sid, st) in g.streams.iter() {
                        if st.running {
                            continue;
                        }
                        if let Some(GpuWork::Kernel { seq, .. }) = st.q.front() {
                            let key = (st.priority, *seq, sid);
                            if best.map(|b| (key.0, key.1) < (b.0, b.1)).unwrap_or(true) {
                                best = Some(key);
                            }
                        }
                    }
                    best.map(|(_, _, sid)| {
                        let st = g.streams.get_mut(&sid).unwrap();
                        st.running = true;
                        g.sm_busy = true;
                        let dur = match st.q.front() {
                            Some(GpuWork::Kernel { dur, .. }) => *dur,
                            _ => 0,
                        };
                        g.busy_ns += dur;
                        (sid, dur)
                    })
                }
            };
            if let Some((sid, dur)) = start {
                self.q.push_in(dur, Ev::KernelDone(r, sid));
            }
            if !progressed {
                break;
            }
        }
    }

    fn kernel_done(&mut self, r: u32, st: i32) -> Result<(), SimError> {
        self.gpu(r).sm_busy = false;
        self.stream_item_done(r, st)
    }

    fn stream_item_done(&mut self, r: u32, st: i32) -> Result<(), SimError> {
        {
            let g = self.gpu(r);
            let s = g.streams.get_mut(&st).expect("stream");
            s.running = false;
            s.q.pop_front();
        }
        self.gpu_pump(r);
        if matches!(self.ranks[r as usize].block, Block::GpuSync(_)) && self.gpu_check_host(r) {
            self.step(r)?;
        }
        Ok(())
    }

    // ------------------------------------------------------------------ collectives
    fn exec_coll(&mut self, r: u32, op: &Op, phase: u8) -> Result<bool, SimError> {
        let (kind, nonblocking) = coll_kind(op.kind).unwrap();
        match phase {
            0 => {
                let comm = self.comms.get(&op.comm).ok_or_else(|| self.terr(r, format!("communicator {} is not defined in the trace", op.comm)))?;
                let size = comm.size;
                let me = match &comm.def.members {
                    None => r,
                    Some(m) => m.iter().position(|&w| w == r).ok_or_else(|| self.terr(r, format!("rank is not a member of communicator {}", op.comm)))? as u32,
                };
                if kind.is_rooted() && (op.root() < 0 || op.root() as u32 >= size) {
                    return Err(self.terr(r, format!("root {} is outside communicator {} (size {size})", op.root(), op.comm)));
                }
                let root = if kind.is_rooted() { op.root().max(0) as u32 } else { 0 };
                let lists = op.lists.as_deref();
                let args = CollArgs {
                    kind,
                    size,
                    rank: me,
                    root,
                    bytes: op.bytes,
                    recv_bytes: op.recv_bytes(),
                    counts: lists.and_then(|l| (!l.counts.is_empty()).then_some(l.counts.as_slice())),
                    recv_counts: lists.and_then(|l| (!l.recv_counts.is_empty()).then_some(l.recv_counts.as_slice())),
                };
                // chosen from quantities every rank of the call agrees on, so all pick the same
                let algo = g2g_coll::select_for(&args, &self.th, &self.ov);
                let rounds = g2g_coll::schedule(algo, &args).map_err(|e| self.terr(r, format!("{}: {e}", kind.name())))?;
                let inst = {
                    let c = self.ranks[r as usize].coll_seq.entry(op.comm).or_insert(0);
                    let v = *c;
                    *c += 1;
                    v
                };
                let ctx = (1u64 << 63) | ((op.comm as u64) << 32) | inst as u64;
                // synchronisation (Barrier, no bytes) never takes a GPU path
                let on_gpu = self.send_buf_gpu(r, op.mem, op.bytes, buffers::carries_data(op));
                let gpu_path = on_gpu && match self.opt.mode {
                    Mode::HostCopy => false,
                    Mode::AsTraced => true,
                    Mode::GpuDirect => op.bytes.max(op.recv_bytes()) >= self.opt.gpudirect_min_bytes,
                };
                let req = if nonblocking { Some(self.new_req(Owner::Rank(r))) } else { None };
                let staged = gpu_path && self.m.cfg.device_collectives.staged(kind.name());
                let hostcopy = (on_gpu && !gpu_path) || (!on_gpu && self.rank_stages(r));
                let coll_kind = kind;
                let cr = CollRun { rank: r, comm: op.comm, ctx, rounds, idx: 0, pending: 0, gpu_path, staged, req, live: true, hostcopy, coll_kind };
                let c = if let Some(c) = self.free_colls.pop() {
                    self.colls[c as usize] = cr;
                    c
                } else {
                    self.colls.push(cr);
                    (self.colls.len() - 1) as CollId
                };
                // HostCopy staging: which buffers each rank copies out before and back after
                let staged = on_gpu && !gpu_path;
                let (d2h, h2d) = if staged { staging_bytes(kind, me == root, op) } else { (0, 0) };
                // a HostCopy trace stages the collective's receive buffer back afterwards
                let recv_side = staging_bytes(kind, me == root, op).1;
                self.note_recv(r, op.mem, recv_side);
                self.ranks[r as usize].coll_h2d = if nonblocking { 0 } else { h2d };
                if let Some(q) = req {
                    self.map_req(r, op, q);
                    self.reqs[q as usize].post_copy = h2d;
                }
                if d2h > 0 {
                    // the rank copies its send buffer to the host, then runs the collective
                    self.ranks[r as usize].phase = if nonblocking { 3 } else { 1 };
                    self.ranks[r as usize].block = Block::Coll(c);
                    let at = self.ep(r);
                    let st = StagedPath::copy_stage(&self.m, at, true);
                    let plan = Plan::one("hostcopy", st, d2h);
                    self.ranks[r as usize].copy_start = self.q.now();
                    self.colls[c as usize].idx = usize::MAX; // start rounds after the copy
                    self.start_xfer(plan, XferOwner::RankCopy(r), 0);
                    return Ok(false);
                }
                if nonblocking {
                    self.coll_start(c)?;
                    Ok(true)
                } else {
                    self.ranks[r as usize].phase = 1;
                    self.ranks[r as usize].block = Block::Coll(c);
                    self.coll_start(c)?;
                    if self.ranks[r as usize].block == Block::None && self.ranks[r as usize].phase == 2 {
                        // finished at once (a one-rank communicator): run the completion phase now
                        return self.exec_coll(r, op, 2);
                    }
                    Ok(false)
                }
            }
            1 => Ok(false),
            2 => {
                // finished; a staged receive buffer is copied back to the GPU
                let h2d = std::mem::take(&mut self.ranks[r as usize].coll_h2d);
                if h2d > 0 && !nonblocking {
                    self.ranks[r as usize].phase = 4;
                    self.start_rank_copy(r, h2d, false);
                    return Ok(false);
                }
                Ok(true)
            }
            _ => Ok(true),
        }
    }

    fn coll_start(&mut self, c: CollId) -> Result<(), SimError> {
        self.colls[c as usize].idx = 0;
        self.coll_round(c)
    }

    /// Posts the messages of the current round (or finishes the collective).
    fn coll_round(&mut self, c: CollId) -> Result<(), SimError> {
        if self.colls[c as usize].idx == usize::MAX {
            // called back after the staging copy
            let r = self.colls[c as usize].rank;
            let nonblocking = self.colls[c as usize].req.is_some();
            if nonblocking {
                self.ranks[r as usize].block = Block::None;
                self.ranks[r as usize].phase = 5;
                self.coll_start(c)?;
                if self.ranks[r as usize].block == Block::None {
                    self.step(r)?;
                }
                return Ok(());
            }
            self.ranks[r as usize].phase = 1;
            return self.coll_start(c);
        }
        loop {
            let cr = &self.colls[c as usize];
            if cr.idx >= cr.rounds.len() {
                return self.coll_finish(c);
            }
            let round = cr.rounds[cr.idx].clone();
            let (r, comm, ctx, gpu, staged) = (cr.rank, cr.comm, cr.ctx, cr.gpu_path, cr.hostcopy);
            let mut n = 0;
            for s in &round.recvs {
                let w = self.comms[&comm].def.world(s.peer).unwrap();
                self.post_recv(r, w as i32, ctx, 0, Owner::Coll(c));
                n += 1;
            }
            for s in &round.sends {
                let w = self.comms[&comm].def.world(s.peer).unwrap();
                self.staged_hint = staged;
                self.post_send(r, w, ctx, 0, s.bytes, gpu, false, true, Owner::Coll(c));
                self.staged_hint = false;
                n += 1;
            }
            self.colls[c as usize].pending += n;
            if n > 0 {
                return Ok(());
            }
            // an empty round: just its reduction
            if round.reduce_bytes > 0 {
                let dt = self.reduce_time(c, round.reduce_bytes);
                self.colls[c as usize].idx += 1;
                self.q.push_in(dt, Ev::CollNext(c));
                return Ok(());
            }
            self.colls[c as usize].idx += 1;
        }
    }

    fn reduce_time(&self, c: CollId, bytes: u64) -> Time {
        // a collective the library stages through the host reduces on the CPU
        let on_gpu = self.colls[c as usize].gpu_path && !self.colls[c as usize].staged;
        let bw = if on_gpu { self.m.cfg.gpu_reduce_bw } else { self.m.cfg.cpu_reduce_bw };
        (bytes as f64 / bw * 1e9).ceil() as Time
    }

    fn coll_round_done(&mut self, c: CollId) -> Result<(), SimError> {
        let cr = &self.colls[c as usize];
        let red = cr.rounds[cr.idx].reduce_bytes;
        self.colls[c as usize].idx += 1;
        if red > 0 {
            let dt = self.reduce_time(c, red);
            self.q.push_in(dt, Ev::CollNext(c));
            Ok(())
        } else {
            self.coll_round(c)
        }
    }

    fn coll_finish(&mut self, c: CollId) -> Result<(), SimError> {
        let cr = &mut self.colls[c as usize];
        if !cr.live {
            return Ok(());
        }
        cr.live = false;
        let r = cr.rank;
        let req = cr.req;
        cr.rounds = Vec::new();
        self.free_colls.push(c);
        match req {
            Some(q) => {
                self.q.push_in(0, Ev::ReqDone(q));
            }
            None => {
                let rk = &mut self.ranks[r as usize];
                if rk.block == Block::Coll(c) {
                    rk.block = Block::None;
                    rk.phase = 2;
                    if self.executing != Some(r) {
                        self.step(r)?;
                    }
                }
            }
        }
        Ok(())
    }

    // ------------------------------------------------------------------ report
    fn report(&self, trace: String, machine: String, wall_s: f64) -> Report {
        let mut rep = Report {
            trace,
            machine,
            mode: self.opt.mode.name().to_string(),
            buffers: self.opt.buffers.name().to_string(),
            trace_buffers: self.src.buffers().to_string(),
            window: self.opt.window.name().to_string(),
            buffer_stats: self.bufstat.clone(),
            nranks: self.nranks,
            nodes: self.m.place.nodes,
            gpus_per_node: self.m.place.gpus_per_node,
            ..Default::default()
        };
        let mut end: Time = 0;
        let (mut comm, mut comp, mut copy, mut untraced) = (0u128, 0u128, 0u128, 0u128);
        for (i, rk) in self.ranks.iter().enumerate() {
            end = end.max(rk.end);
            untraced += rk.untraced as u128;
            comm += rk.comm as u128;
            comp += rk.compute as u128;
            copy += rk.copy as u128;
            if self.opt.per_rank {
                rep.per_rank.push(RankStat {
                    rank: i as u32,
                    node: self.m.place.node_of[i],
                    gpu: self.m.place.gpu_of[i],
                    end_s: rk.end as f64 * 1e-9,
                    comm_s: rk.comm as f64 * 1e-9,
                    compute_s: rk.compute as f64 * 1e-9,
                    copy_s: rk.copy as f64 * 1e-9,
                    untraced_s: rk.untraced as f64 * 1e-9,
                });
            }
        }
        let n = self.nranks as f64;
        rep.total_time_s = end as f64 * 1e-9;
        rep.comm_time_s = comm as f64 * 1e-9 / n;
        rep.compute_time_s = comp as f64 * 1e-9 / n;
        rep.copy_time_s = copy as f64 * 1e-9 / n;
        rep.untraced_s = untraced as f64 * 1e-9;
        self.explain(&mut rep);
        for (i, s) in self.stats.iter().enumerate() {
            if s.count > 0 {
                rep.per_op.insert(OpKind::from_index(i).name().to_string(), s.clone());
            }
        }
        for (k, v) in &self.paths {
            rep.paths.insert(k.to_string(), v.clone());
        }
        for (i, v) in self.sizes.iter().enumerate() {
            if v.messages > 0 {
                rep.p2p_size_classes.insert(crate::report::SIZE_CLASSES[i].to_string(), v.clone());
            }
        }
        rep.p2p_messages = self.p2p_msgs;
        rep.collective_messages = self.coll_msgs;
        let events = self.q.processed();
        rep.engine = EngineStat {
            events,
            wall_s,
            read_s: self.read_s,
            events_per_s: events as f64 / wall_s.max(1e-9),
            ops: self.ops_done,
            ops_per_s: self.ops_done as f64 / wall_s.max(1e-9),
            messages: self.p2p_msgs + self.coll_msgs,
            flow_solves: self.m.net.solves,
            flow_solves_component: self.m.net.component_solves,
            peak_flows: self.peak_flows,
            links: self.m.num_links() as u64,
            build: build_kind(),
        };
        rep
    }
}

impl Sim<'_> {
    /// The report's `assumptions` (what the run took for granted, one sentence each) and `notices`
    /// (options that changed nothing, and what to use instead).  docs/semantics.md.
    fn explain(&self, rep: &mut Report) {
        let b = &self.bufstat;
        let (mode, bufs) = (self.opt.mode, self.opt.buffers);
        let traced = match rep.trace_buffers.as_str() {
            "traced" => "recorded by the tracer".to_string(),
            "" => "not said by the trace".to_string(),
            "assumed-host" => "not recorded by the trace (host assumed at import)".to_string(),
            "assumed-device" => "not recorded by the trace (device assumed at import)".to_string(),
            t => format!("{t} at import"),
        };
        let host = b.mpi_buffers - b.device - b.staged;
        rep.assumptions.push(format!(
            "buffers {}: of {} MPI data buffers, {} device, {} host buffers staged by the application's own copies, {} host (buffer spaces {traced})",
            bufs.name(), b.mpi_buffers, b.device, b.staged, host
        ));
        rep.assumptions.push(format!(
            "staging rule: a D2H copy followed within {} operations of the same rank by a host send of its size, and an H2D copy after a host receive of its size, only stage an MPI buffer ({} recognised{})",
            buffers::LOOKAHEAD,
            b.staging_copies,
            if mode == Mode::GpuDirect { format!(", {} removed by gpudirect", b.staging_copies_removed) } else { String::new() }
        ));
        rep.assumptions.push(match mode {
            Mode::AsTraced => "mode as-traced: each call moves its data as recorded (a GPU-aware MPI moves device buffers itself)".to_string(),
            Mode::HostCopy => "mode hostcopy: device buffers are staged through host memory by the application (a D2H copy before the send, an H2D copy after the receive; added where the trace has none)".to_string(),
            Mode::GpuDirect => "mode gpudirect: device and staged buffers move GPU to GPU (P2P within a node, RDMA or pipelined across nodes); recognised staging copies are removed".to_string(),
        });
        if b.sync_calls > 0 {
            rep.assumptions.push(format!("synchronisation: {} Barrier and zero-byte calls take the host path in every mode", b.sync_calls));
        }
        let untraced_ranks = self.ranks.iter().filter(|rk| rk.untraced > 0).count();
        if self.untraced_ops > 0 {
            let per = rep.untraced_s / self.nranks.max(1) as f64;
            rep.assumptions.push(match self.opt.window {
                Window::Traced => format!(
                    "window traced: {untraced_ranks} of {} ranks have stretches the tracer did not record ({per:.6} s per rank on average): skipped, not simulated (--window all simulates them as host time)",
                    self.nranks
                ),
                Window::All => format!(
                    "window all: {untraced_ranks} of {} ranks have stretches the tracer did not record ({per:.6} s per rank on average): simulated as host time",
                    self.nranks
                ),
            });
        } else if self.opt.window == Window::All {
            rep.notices.push("--window all changes nothing: the trace has no untraced stretches".into());
        }
        // options that could not change this run
        let gpu_data = b.device + b.staged;
        if mode != Mode::AsTraced && gpu_data == 0 {
            let why = if b.mpi_buffers == 0 {
                "the trace moves no MPI data".to_string()
            } else if bufs == Buffers::Host {
                "--buffers host keeps every MPI buffer in host memory".to_string()
            } else {
                format!("none of the {} MPI data buffers is on the GPU or staged through explicit copies (buffer spaces {traced})", b.mpi_buffers)
            };
            let hint = if bufs == Buffers::Device || b.mpi_buffers == 0 { "" } else { "; --buffers device asks what GPU-resident buffers would give" };
            rep.notices.push(format!("--mode {} changes nothing: {why}{hint}", mode.name()));
        }
        if bufs == Buffers::Device && b.mpi_buffers > 0 && self.traced_device + b.staged == b.mpi_buffers {
            rep.notices.push("--buffers device changes nothing: every MPI data buffer is device memory or staged in the trace already".into());
        }
        if bufs == Buffers::Host && self.traced_device == 0 && b.staging_copies == 0 && b.mpi_buffers > 0 {
            rep.notices.push("--buffers host changes nothing: the trace's MPI buffers are host memory and it stages none".into());
        }
        if mode != Mode::GpuDirect && (self.opt.gpudirect_min_bytes > 0 || self.opt.gpudirect_collectives_only) {
            rep.notices.push(format!(
                "--gpudirect-min-bytes / --gpudirect-collectives-only change nothing under --mode {}: they choose which messages gpudirect moves directly",
                mode.name()
            ));
        }
    }
}

/// How this core was compiled, for the report's `engine.build`: `pgo` when built with a profile by
/// `bench/speed/pgo.py` (which sets `G2GSIM_PGO_PROFILE`; cargo rebuilds when it changes).
pub fn build_kind() -> &'static str {
    if option_env!("G2GSIM_PGO_PROFILE").is_some() {
        "pgo"
    } else if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    }
}

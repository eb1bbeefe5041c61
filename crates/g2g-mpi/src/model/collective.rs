//! A collective call in progress on one rank: its rounds of point-to-point messages (the schedule
//! g2g-coll chose), how far it has got, and how its data travels.  The collective operation
//! (`ops::collective`) posts the rounds' messages and acts on their completion.
use g2g_coll::{AlgoOverrides, CollKind, Round, Thresholds};
use g2g_engine::Time;
use g2g_net::MachineConfig;

use crate::event::{CollId, ReqId};

/// The phases of a collective operation on its rank (`Rank::phase`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum CollPhase {
    /// not started
    Start = 0,
    /// blocking: its rounds (or its send buffer's staging copy first) are under way
    Running = 1,
    /// blocking: its rounds are done; a staged receive buffer is copied back next
    Finished = 2,
    /// nonblocking: its send buffer's staging copy is under way, the rounds start after it
    StagingCopy = 3,
    /// blocking: the staged receive buffer is being copied back to the GPU
    CopyingBack = 4,
    /// nonblocking: its rounds have started (after a staging copy); the call returns
    Started = 5,
}

impl CollPhase {
    #[inline]
    pub fn of(phase: u8) -> CollPhase {
        match phase {
            0 => CollPhase::Start,
            1 => CollPhase::Running,
            2 => CollPhase::Finished,
            3 => CollPhase::StagingCopy,
            4 => CollPhase::CopyingBack,
            _ => CollPhase::Started,
        }
    }
}

pub(crate) struct CollRun {
    pub rank: u32,
    pub comm: u32,
    /// the communicator numbers its ranks as the world does (no member list): a step's peer is
    /// its world rank, without looking the communicator up
    pub world_ranks: bool,
    pub ctx: u64,
    pub rounds: Vec<Round>,
    /// the current round (`AFTER_COPY`: none yet, the send buffer's staging copy runs first)
    pub idx: usize,
    /// messages of the current round not complete yet
    pub pending: u32,
    pub gpu_path: bool,
    /// device messages staged through the host by the library (`mpi.device_collectives`)
    pub staged: bool,
    /// a nonblocking collective's request
    pub req: Option<ReqId>,
    pub live: bool,
    /// the collective's host buffers are staging buffers (`hostcopy` factors)
    pub hostcopy: bool,
    /// which collective (its `[[mpi.factors]]` bins by collective)
    pub coll_kind: CollKind,
}

/// `CollRun::idx` while the send buffer's staging copy runs.
pub(crate) const AFTER_COPY: usize = usize::MAX;

impl CollRun {
    /// Time to reduce `bytes` between rounds: on the GPU, or on the CPU for a collective the
    /// library stages through the host (or one on host buffers).
    pub fn reduce_ns(&self, cfg: &MachineConfig, bytes: u64) -> Time {
        let on_gpu = self.gpu_path && !self.staged;
        let bw = if on_gpu { cfg.gpu_reduce_bw } else { cfg.cpu_reduce_bw };
        (bytes as f64 / bw * 1e9).ceil() as Time
    }
}

/// The collectives in progress (ids reused once finished) and the selection rules.
pub(crate) struct Colls {
    runs: Vec<CollRun>,
    free: Vec<CollId>,
    pub th: Thresholds,
    pub ov: AlgoOverrides,
    /// calls per (collective, algorithm as chosen), counted once per call (at the communicator's
    /// rank 0): the report's assumption
    pub chosen: std::collections::BTreeMap<(&'static str, String), u64>,
}

impl Colls {
    pub fn new(th: Thresholds, ov: AlgoOverrides) -> Colls {
        Colls { runs: Vec::new(), free: Vec::new(), th, ov, chosen: Default::default() }
    }

    pub fn add(&mut self, cr: CollRun) -> CollId {
        if let Some(c) = self.free.pop() {
            self.runs[c as usize] = cr;
            c
        } else {
            self.runs.push(cr);
            (self.runs.len() - 1) as CollId
        }
    }

    /// Ends collective `c` (its slot is reused); false if it had already ended.
    pub fn finish(&mut self, c: CollId) -> bool {
        let cr = &mut self.runs[c as usize];
        if !cr.live {
            return false;
        }
        cr.live = false;
        cr.rounds = Vec::new();
        self.free.push(c);
        true
    }
}

impl std::ops::Index<CollId> for Colls {
    type Output = CollRun;
    #[inline]
    fn index(&self, c: CollId) -> &CollRun {
        &self.runs[c as usize]
    }
}
impl std::ops::IndexMut<CollId> for Colls {
    #[inline]
    fn index_mut(&mut self, c: CollId) -> &mut CollRun {
        &mut self.runs[c as usize]
    }
}

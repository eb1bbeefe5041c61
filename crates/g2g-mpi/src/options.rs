//! What a run is asked to do (`SimOptions`, `Mode`), how it can fail (`SimError`), and the mode
//! and what-if policy read from the options in one place (`ModePolicy`).
//!
//! A leaf: every layer may read these.
use g2g_trace::{MemSpace, TraceError};

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
    /// Every mode, in the order documentation and command lines list them (`_core.vocabulary()`).
    pub const ALL: [Mode; 3] = [Mode::AsTraced, Mode::HostCopy, Mode::GpuDirect];

    pub fn parse(s: &str) -> Option<Mode> {
        Mode::ALL.into_iter().find(|m| m.name() == s)
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
    /// gpudirect what-if for HostCopy traces: host-buffer messages are treated as device data and the
    /// explicit D2H/H2D copies that only stage an MPI buffer are dropped
    pub staged_as_device: bool,
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
    /// end-of-trace warnings (unreceived messages, never-waited requests) are errors
    pub strict: bool,
}

impl Default for SimOptions {
    fn default() -> Self {
        SimOptions {
            mode: Mode::AsTraced,
            staged_as_device: false,
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
            strict: false,
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
                // a summary grouped by the call the ranks are in (every rank counted), then the
                // first ranks' own lines; the whole list is in the error's JSON (g2gsim --json)
                let groups = crate::report::group_blocked(v);
                write!(f, "deadlock: {} rank(s) blocked forever, {} distinct call(s):", v.len(), groups.len())?;
                for g in groups.iter().take(32) {
                    write!(f, "\n  {g}")?;
                }
                if groups.len() > 32 {
                    write!(f, "\n  ... and {} more call(s)", groups.len() - 32)?;
                }
                write!(f, "\nfirst blocked ranks:")?;
                for l in v.iter().take(16) {
                    write!(f, "\n  {l}")?;
                }
                if v.len() > 16 {
                    write!(f, "\n  ... {} more in the JSON list", v.len() - 16)?;
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

/// The mode and the what-ifs that decide how device data travels, read from the options once:
/// every question the replay asks of them is a method here.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ModePolicy {
    pub mode: Mode,
    /// `SimOptions::staged_as_device`
    pub staged_as_device: bool,
    pub gpudirect_min_bytes: u64,
    pub gpudirect_collectives_only: bool,
    /// `SimOptions::no_overlap`
    pub no_overlap: bool,
}

impl ModePolicy {
    pub fn new(opt: &SimOptions) -> ModePolicy {
        ModePolicy {
            mode: opt.mode,
            staged_as_device: opt.staged_as_device,
            gpudirect_min_bytes: opt.gpudirect_min_bytes,
            gpudirect_collectives_only: opt.gpudirect_collectives_only,
            no_overlap: opt.no_overlap,
        }
    }

    /// The what-if that treats a HostCopy trace's host buffers as device data (gpudirect only).
    #[inline]
    fn staged_are_device(&self) -> bool {
        self.staged_as_device && self.mode == Mode::GpuDirect
    }

    /// Is data in this buffer on the GPU for the purpose of the simulated mode?
    #[inline]
    pub fn on_gpu(&self, mem: MemSpace) -> bool {
        mem.on_gpu() || self.staged_are_device()
    }

    /// Does an MPI call on this buffer hand the library a device pointer (and pay
    /// `mpi.device_call_overhead`)?  Not under HostCopy: the application stages, MPI sees host
    /// pointers.
    #[inline]
    pub fn device_pointer_call(&self, mem: MemSpace) -> bool {
        self.mode != Mode::HostCopy && self.on_gpu(mem)
    }

    /// Does the MPI library move device data itself (GPU-aware) for a message of `bytes`?
    /// HostCopy: never; as traced: always; gpudirect: from `gpudirect_min_bytes` on, and for
    /// collectives only under `gpudirect_collectives_only`.
    #[inline]
    pub fn gpu_aware(&self, bytes: u64, collective: bool) -> bool {
        match self.mode {
            Mode::HostCopy => false,
            Mode::AsTraced => true,
            Mode::GpuDirect => bytes >= self.gpudirect_min_bytes && (!self.gpudirect_collectives_only || collective),
        }
    }

    /// Are the explicit D2H / H2D copies that only stage an MPI buffer dropped?
    #[inline]
    pub fn drops_staging_copies(&self) -> bool {
        self.staged_are_device()
    }

    /// Are host receive buffers' sizes remembered (to recognise the H2D copy that stages one)?
    #[inline]
    pub fn remembers_recv_buffers(&self) -> bool {
        self.staged_as_device
    }

    /// Does the host wait for every kernel and stream copy (no compute/communication overlap)?
    #[inline]
    pub fn serialises_gpu(&self) -> bool {
        self.no_overlap
    }

    /// The mode as the report names it.
    pub fn name(&self) -> String {
        self.mode.name().to_string() + if self.staged_as_device { "+staged-as-device" } else { "" }
    }
}

#[cfg(test)]
mod mode_tests {
    use super::*;

    #[test]
    fn every_mode_round_trips_through_its_name() {
        for m in Mode::ALL {
            assert_eq!(Mode::parse(m.name()), Some(m));
        }
        assert_eq!(Mode::parse("GPUDirect"), None);
    }
}

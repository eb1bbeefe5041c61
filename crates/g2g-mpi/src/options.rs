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
    /// where MPI data buffers live (`--buffers`, [`Buffers`]): as traced, all device, all host
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
    /// how exact max-min is solved (`g2g_net::solver`: the same answer either way, at different
    /// speeds); `Auto` by default
    pub max_min_solver: g2g_net::solver::Solver,
    /// keep per-rank rows in the report (off for huge runs)
    pub per_rank: bool,
    /// write a Chrome/Perfetto trace of the simulated run here
    pub timeline: Option<String>,
    /// stop writing timeline events after this many (the run goes on)
    pub timeline_max_events: u64,
    /// the timeline keeps only these ranks' events (None: all)
    pub timeline_ranks: Option<Vec<u32>>,
    /// the timeline keeps only events overlapping [start, end) of simulated ns (None: all)
    pub timeline_window_ns: Option<(u64, u64)>,
    /// write every call's simulated duration here (`call_times`: per rank, in trace order; the
    /// per-call split of the analysis, without writing and parsing a timeline)
    pub call_times: Option<String>,
    /// end-of-trace warnings (unreceived messages, never-waited requests) are errors
    pub strict: bool,
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
            max_min_solver: g2g_net::solver::Solver::Auto,
            no_overlap: false,
            timeline: None,
            timeline_max_events: 2_000_000,
            timeline_ranks: None,
            timeline_window_ns: None,
            call_times: None,
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
    /// `SimOptions::buffers`
    pub buffers: Buffers,
    /// `SimOptions::window`
    pub window: Window,
    pub gpudirect_min_bytes: u64,
    pub gpudirect_collectives_only: bool,
    /// `SimOptions::no_overlap`
    pub no_overlap: bool,
}

impl ModePolicy {
    pub fn new(opt: &SimOptions) -> ModePolicy {
        ModePolicy {
            mode: opt.mode,
            buffers: opt.buffers,
            window: opt.window,
            gpudirect_min_bytes: opt.gpudirect_min_bytes,
            gpudirect_collectives_only: opt.gpudirect_collectives_only,
            no_overlap: opt.no_overlap,
        }
    }

    /// Is the staging rule on (the trace's own D2H/H2D copies around host MPI buffers are
    /// recognised as HostCopy staging)?  Everywhere but under `--buffers host`.
    #[inline]
    pub fn recognises_staging(&self) -> bool {
        self.buffers != Buffers::Host
    }

    /// Does an MPI call on this buffer hand the library a device pointer (and pay
    /// `mpi.device_call_overhead`)?  Not under HostCopy: the application stages, MPI sees host
    /// pointers.
    #[inline]
    /// A data buffer (`bytes` > 0; Barrier and zero-byte calls are synchronisation, host path)
    /// is a device pointer when it is device memory after `--buffers`: traced device buffers, every
    /// host data buffer under `--buffers device`, none under `--buffers host`.
    pub fn device_pointer_call(&self, mem: MemSpace, bytes: u64) -> bool {
        self.mode != Mode::HostCopy
            && bytes > 0
            && match self.buffers {
                Buffers::Host => false,
                Buffers::Device => true,
                Buffers::Traced => mem.on_gpu(),
            }
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

    /// Are the recognised staging copies removed (and their buffers sent from the device)?
    #[inline]
    pub fn drops_staging_copies(&self) -> bool {
        self.recognises_staging() && self.mode == Mode::GpuDirect
    }

    /// Are host receive buffers' sizes remembered (to recognise the H2D copy that stages one)?
    #[inline]
    pub fn remembers_recv_buffers(&self) -> bool {
        self.recognises_staging()
    }

    /// Does the host wait for every kernel and stream copy (no compute/communication overlap)?
    #[inline]
    pub fn serialises_gpu(&self) -> bool {
        self.no_overlap
    }

    /// The mode as the report names it.
    pub fn name(&self) -> String {
        self.mode.name().to_string()
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

    #[test]
    fn device_call_overhead_follows_the_buffer_classes() {
        let pol = |mode, buffers| ModePolicy::new(&SimOptions { mode, buffers, ..SimOptions::default() });
        let gd = pol(Mode::GpuDirect, Buffers::Traced);
        assert!(gd.device_pointer_call(MemSpace::Device, 8));
        assert!(!gd.device_pointer_call(MemSpace::Host, 8));
        assert!(!gd.device_pointer_call(MemSpace::Device, 0), "synchronisation: host path");
        assert!(pol(Mode::AsTraced, Buffers::Device).device_pointer_call(MemSpace::Host, 8));
        assert!(!pol(Mode::GpuDirect, Buffers::Host).device_pointer_call(MemSpace::Device, 8));
        assert!(!pol(Mode::HostCopy, Buffers::Device).device_pointer_call(MemSpace::Device, 8), "HostCopy stages");
    }
}

// ---------------------------------------------------------------- where buffers live
// Where an MPI buffer lives, decided once at simulate time (`--buffers`), the one rule that
// recognises the application's own staging copies (HostCopy, seed 002), and the traced window
// (`--window`).  docs/semantics.md describes the same in the paper's terms.
//
// Every MPI data buffer of a run ends up in one of three classes:
// * **device**: GPU memory.  `hostcopy` stages it through the host (the copies are added),
//   `gpudirect` moves it GPU to GPU, `as-traced` lets the GPU-aware MPI move it.
// * **staged**: host memory that the trace itself filled from, or emptied to, the GPU with an
//   explicit copy (a HostCopy application).  `as-traced` and `hostcopy` replay the copy and the host
//   message as recorded; `gpudirect` removes the copy and sends from the device.
// * **host**: host memory with no staging copy: the same in every mode.
//
// `--buffers traced` takes the trace's `mem_space`; `device` makes every host data buffer device
// (staged ones stay staged: their copy is the HostCopy staging); `host` makes every buffer host and
// recognises no staging.  Calls that carry no data (Barrier, zero-byte messages) are
// synchronisation: host path, whatever the mode or buffers.
/// `--buffers`: where MPI data buffers live.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Buffers {
    /// as the trace records them (`mem_space`); explicit staging copies are recognised
    #[default]
    Traced,
    /// every MPI data buffer is GPU memory (the what-if for traces of host buffers)
    Device,
    /// every MPI buffer is host memory; copies are the application's own
    Host,
}

impl Buffers {
    pub fn parse(s: &str) -> Option<Buffers> {
        match s {
            "traced" => Some(Buffers::Traced),
            "device" => Some(Buffers::Device),
            "host" => Some(Buffers::Host),
            _ => None,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Buffers::Traced => "traced",
            Buffers::Device => "device",
            Buffers::Host => "host",
        }
    }
}

/// `--window`: what the replay does with stretches the tracer did not record (`Untraced` rows).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Window {
    /// skipped: the simulation covers the traced region only; the stretches are reported
    #[default]
    Traced,
    /// simulated as host time, like `Compute`
    All,
}

impl Window {
    pub fn parse(s: &str) -> Option<Window> {
        match s {
            "traced" => Some(Window::Traced),
            "all" => Some(Window::All),
            _ => None,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Window::Traced => "traced",
            Window::All => "all",
        }
    }
}

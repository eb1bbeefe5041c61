//! GPU data paths, one model per way a message can travel, behind one trait and registered by name
//! (`g2gsim models` lists them).  A model turns (source, destination, bytes) into a [`Plan`]: stages
//! that every chunk crosses in order, each a fixed delay then a flow over links (shared max-min with
//! everything else in flight), then the links' latency.  Docs: docs/models/<name>.md, one file
//! per model here (`host.rs`, `hostcopy.rs`, `gpudirect_p2p.rs`, `gpudirect_rdma.rs`, `pipelined.rs`).
//!
//! A message's path is chosen through the registry ([`choose`]): the models are asked in order of
//! preference ([`preference`]) whether they carry it ([`DataPath::carries`]); the first that does
//! takes it.  A new model is a file here, an entry in [`registry`] and in [`preference`].
use crate::machine::Machine;
use smallvec::{smallvec, SmallVec};

mod gpudirect_p2p;
mod gpudirect_rdma;
mod host;
mod hostcopy;
mod pipelined;

/// The links of one stage (defined with the link ids: the machine fills them too).
pub use crate::topology::Links;
pub use gpudirect_p2p::GpuP2P;
pub use gpudirect_rdma::GpuRdma;
pub use host::HostPath;
pub use hostcopy::StagedPath;
pub use pipelined::Pipelined;
/// The stages of a plan: at most 3 today (copy, network, copy).  One inline: most messages
/// (GPUDirect P2P and RDMA, host to host) have one stage, and a plan then fills two cache lines
/// instead of four (a replay keeps one per message in flight); a plan of three keeps its heap
/// buffer when its pooled box is reused (`Plan::reset_stages`).
pub type Stages = SmallVec<[Stage; 1]>;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Endpoint {
    pub node: u32,
    pub gpu: u32,
}

#[derive(Clone, Debug, PartialEq)]
#[repr(C)]
pub struct Stage {
    /// fixed cost per chunk before the data moves (copy launch, ...)
    pub delay_ns: u64,
    /// sum of the links' latencies, paid once per chunk after its data has moved
    pub latency_ns: u64,
    pub links: Links,
}

/// Field order fixed (`repr(C)`, 64-byte aligned): what starting and completing chunks reads
/// (the counts, sizes and the first stage) comes first; the model's name, read only for reports
/// and timelines, last.
#[derive(Clone, Debug, PartialEq)]
#[repr(C, align(64))]
pub struct Plan {
    /// once, before the first chunk (memory registration / pinning)
    pub setup_ns: u64,
    pub chunk_bytes: u64,
    pub last_chunk_bytes: u64,
    /// effective bandwidth over the links' (`[[mpi.factors]]` bw_factor): every chunk counts
    /// bytes / bw_factor against every link of every stage
    pub bw_factor: f64,
    pub chunks: u32,
    /// chunks allowed in flight at once
    pub depth: u32,
    pub stages: Stages,
    pub model: &'static str,
}

impl Plan {
    fn single(model: &'static str, setup_ns: u64, stages: Stages, bytes: u64) -> Plan {
        Plan {
            model,
            setup_ns,
            stages,
            chunks: 1,
            chunk_bytes: bytes,
            last_chunk_bytes: bytes,
            depth: 1,
            bw_factor: 1.0,
        }
    }
    /// A plan with no stage (filled in place by `DataPath::plan_into`).
    pub fn empty() -> Plan {
        Plan::single("", 0, Stages::new(), 0)
    }

    /// The scalars of a one-chunk plan of `model` (stages untouched).
    #[inline(always)]
    fn reset_one_chunk(&mut self, model: &'static str, setup_ns: u64, bytes: u64) {
        self.model = model;
        self.setup_ns = setup_ns;
        self.chunks = 1;
        self.chunk_bytes = bytes;
        self.last_chunk_bytes = bytes;
        self.depth = 1;
        self.bw_factor = 1.0;
    }

    /// Makes this plan a one-chunk plan of one stage with no delay and no links yet (its link
    /// buffer is kept); returns that stage for the caller to fill in.
    pub fn reset_single(&mut self, model: &'static str, setup_ns: u64, bytes: u64) -> &mut Stage {
        self.reset_one_chunk(model, setup_ns, bytes);
        self.stages.truncate(1);
        if self.stages.is_empty() {
            self.stages.push(Stage { delay_ns: 0, links: Links::new(), latency_ns: 0 });
        }
        let s = &mut self.stages[0];
        s.delay_ns = 0;
        s.links.clear();
        s.latency_ns = 0;
        s
    }

    /// Makes this plan a one-chunk plan of `model` with no stage yet, keeping its stage buffer
    /// (a pooled plan that once held three stages takes three again without allocating).
    pub fn reset_stages(&mut self, model: &'static str, setup_ns: u64, bytes: u64) -> &mut Stages {
        self.reset_one_chunk(model, setup_ns, bytes);
        self.stages.clear();
        &mut self.stages
    }

    /// One stage, one chunk (a copy, a local transfer).
    pub fn one(model: &'static str, stage: Stage, bytes: u64) -> Plan {
        Plan::single(model, 0, smallvec![stage], bytes)
    }

    /// Applies a `[[mpi.factors]]` bin: bandwidth factor, latency factor on every stage, and the
    /// bin's delay before the first chunk.
    pub fn apply_factor(&mut self, f: &crate::config::SizeFactor) {
        self.bw_factor = f.bw_factor;
        for s in self.stages.iter_mut() {
            s.latency_ns = (s.latency_ns as f64 * f.lat_factor).round() as u64;
        }
        self.setup_ns += f.delay_ns.round() as u64;
    }

    /// Bytes a chunk counts against the links (its size over the bandwidth factor).
    pub fn flow_bytes(&self, c: u32) -> f64 {
        let b = self.chunk_len(c) as f64;
        if self.bw_factor == 1.0 {
            b
        } else {
            b / self.bw_factor
        }
    }

    pub fn chunk_len(&self, c: u32) -> u64 {
        if c + 1 == self.chunks {
            self.last_chunk_bytes
        } else {
            self.chunk_bytes
        }
    }
}

pub trait DataPath: Sync {
    fn name(&self) -> &'static str;
    fn summary(&self) -> &'static str;
    /// machine-file keys the model reads
    fn params(&self) -> &'static [&'static str];
    /// Writes the plan into `out` (the replay's pooled plans: no 200-byte plan moved per message).
    fn plan_into(&self, m: &Machine, src: Endpoint, dst: Endpoint, bytes: u64, out: &mut Plan);
    /// Does this model carry a message that needs `q`?  Asked in [`preference`] order, after the
    /// models before it declined.
    fn carries(&self, m: &Machine, q: &PathQuery) -> bool;
    /// Does each device side of a message on this path copy its buffer through host memory
    /// (blocking copies of the ranks, around the message)?
    fn stages(&self) -> bool {
        false
    }
    /// The model whose plan moves the MPI message itself (a staged path's message moves host to
    /// host; the staging copies are the ranks').
    fn message_path(&self) -> &'static dyn DataPath;
    fn plan(&self, m: &Machine, src: Endpoint, dst: Endpoint, bytes: u64) -> Plan {
        let mut p = Plan::empty();
        self.plan_into(m, src, dst, bytes, &mut p);
        p
    }
}

pub fn stage(m: &Machine, delay_ns: u64, links: Links) -> Stage {
    let latency_ns = m.path_latency(&links);
    Stage { delay_ns, links, latency_ns }
}

pub static HOST: HostPath = HostPath;
pub static STAGED: StagedPath = StagedPath;
pub static P2P: GpuP2P = GpuP2P;
pub static RDMA: GpuRdma = GpuRdma;
pub static PIPELINED: Pipelined = Pipelined;

/// Every data-path model, in the order `g2gsim models` lists them.
pub fn registry() -> [&'static dyn DataPath; 5] {
    [&HOST, &STAGED, &P2P, &RDMA, &PIPELINED]
}

pub fn by_name(name: &str) -> Option<&'static dyn DataPath> {
    registry().into_iter().find(|p| p.name() == name)
}

/// The models in the order [`choose`] asks them: GPU-direct first, then staging, then host.
pub fn preference() -> [&'static dyn DataPath; 5] {
    [&P2P, &RDMA, &PIPELINED, &STAGED, &HOST]
}

/// What a message needs of its data path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PathQuery {
    pub src: Endpoint,
    pub dst: Endpoint,
    /// the send / receive buffer is in device memory
    pub src_gpu: bool,
    pub dst_gpu: bool,
    pub bytes: u64,
    /// the MPI library moves device buffers itself (GPU-aware; the replay's mode decides)
    pub gpu_aware: bool,
}

impl PathQuery {
    /// Device buffers on both sides and a GPU-aware MPI: a GPU-direct path may carry it.
    #[inline]
    pub fn gpu_to_gpu(&self) -> bool {
        self.src_gpu && self.dst_gpu && self.gpu_aware
    }
}

/// A message's data path and whether the sender / the receiver stage through the host.
#[derive(Clone, Copy)]
pub struct Route {
    pub model: &'static dyn DataPath,
    /// the sender copies its device buffer to the host before MPI moves it
    pub stage_src: bool,
    /// the receiver copies the received data to its device buffer after
    pub stage_dst: bool,
}

impl Route {
    /// A route on `model` with no staging.
    pub fn direct(model: &'static dyn DataPath) -> Route {
        Route { model, stage_src: false, stage_dst: false }
    }
    /// Does either side stage through the host?
    #[inline]
    pub fn staged(&self) -> bool {
        self.stage_src || self.stage_dst
    }
}

impl std::fmt::Debug for Route {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Route({}, stage_src {}, stage_dst {})", self.model.name(), self.stage_src, self.stage_dst)
    }
}

/// The path of a message: the first model of [`preference`] that carries it.  Host buffers on
/// both sides take the host path without asking the others: every other model moves device
/// memory (`only_the_host_path_carries_host_buffers`).
#[inline]
pub fn choose(m: &Machine, q: &PathQuery) -> Route {
    if !q.src_gpu && !q.dst_gpu {
        return Route { model: &HOST, stage_src: false, stage_dst: false };
    }
    for model in preference() {
        if model.carries(m, q) {
            let st = model.stages();
            return Route { model, stage_src: st && q.src_gpu, stage_dst: st && q.dst_gpu };
        }
    }
    unreachable!("the host path carries every message")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::Placement;
    use crate::MachineConfig;

    const MACHINE: &str = r#"
schema_version = 1
name = "paths"
[node]
gpus = 2
[node.pcie]
bw = "10GB/s"
latency = "50ns"
[node.host]
shm_bw = "5GB/s"
shm_latency = "10ns"
[node.nic]
bw = "1GB/s"
latency = "1000ns"
gpudirect_rdma = true
[network]
topology = "crossbar"
hop_latency = "100ns"
[gpu]
pipeline_chunk = "1000B"
pipeline_threshold = "1000B"
rdma_max_bytes = "4000B"
"#;

    /// `choose` sends host-to-host messages by the host path without asking the other models:
    /// none of them carries one, whatever the nodes, size, GPU-awareness or machine.
    #[test]
    fn only_the_host_path_carries_host_buffers() {
        for rdma in [false, true] {
            let m = machine(rdma);
            for (a, b) in [(0, 1), (0, 2), (1, 3), (2, 2)] {
                for bytes in [1, 999, 1000, 1001, 4000, 4001, 1 << 30] {
                    for gpu_aware in [false, true] {
                        let q = PathQuery {
                            src: Endpoint { node: a / 2, gpu: a % 2 },
                            dst: Endpoint { node: b / 2, gpu: b % 2 },
                            src_gpu: false,
                            dst_gpu: false,
                            bytes,
                            gpu_aware,
                        };
                        for model in preference() {
                            assert_eq!(model.carries(&m, &q), model.name() == "host", "{} {q:?}", model.name());
                        }
                        assert_eq!(choose(&m, &q).model.name(), "host");
                    }
                }
            }
        }
    }

    fn machine(rdma: bool) -> Machine {
        let mut cfg = MachineConfig::from_toml(MACHINE, "paths.toml").unwrap();
        cfg.gpudirect_rdma = rdma;
        Machine::build(cfg, Placement::linear(4, 2)).unwrap()
    }

    fn route(
        m: &Machine,
        same_node: bool,
        src_gpu: bool,
        dst_gpu: bool,
        bytes: u64,
        gpu_aware: bool,
    ) -> (&'static str, bool, bool) {
        let src = Endpoint { node: 0, gpu: 0 };
        let dst = Endpoint { node: if same_node { 0 } else { 1 }, gpu: 1 };
        let r = choose(m, &PathQuery { src, dst, src_gpu, dst_gpu, bytes, gpu_aware });
        (r.model.name(), r.stage_src, r.stage_dst)
    }

    #[test]
    fn each_model_carries_its_messages() {
        let m = machine(true);
        assert_eq!(route(&m, true, true, true, 10, true), ("gpudirect-p2p", false, false));
        assert_eq!(route(&m, false, true, true, 4000, true), ("gpudirect-rdma", false, false));
        assert_eq!(route(&m, false, true, true, 4001, true), ("pipelined", false, false), "above rdma_max_bytes");
        assert_eq!(route(&m, false, false, false, 10, true), ("host", false, false));
        // staging: a device side the GPU-direct paths leave
        assert_eq!(route(&m, true, true, true, 10, false), ("hostcopy", true, true), "not GPU-aware (HostCopy)");
        assert_eq!(route(&m, false, true, false, 10, true), ("hostcopy", true, false), "one device side");
        assert_eq!(route(&m, false, false, true, 10, false), ("hostcopy", false, true));
        let m = machine(false);
        assert_eq!(
            route(&m, false, true, true, 1001, true),
            ("pipelined", false, false),
            "no RDMA: pipelined above the threshold"
        );
        assert_eq!(
            route(&m, false, true, true, 1000, true),
            ("hostcopy", true, true),
            "no RDMA, small: the library stages"
        );
    }

    #[test]
    fn every_registered_model_is_chosen_for_some_message() {
        let mut chosen = std::collections::BTreeSet::new();
        for rdma in [false, true] {
            let m = machine(rdma);
            for same in [false, true] {
                for (sg, dg) in [(false, false), (true, false), (false, true), (true, true)] {
                    for bytes in [0, 10, 1000, 1001, 4000, 4001, 1 << 20] {
                        for aware in [false, true] {
                            chosen.insert(route(&m, same, sg, dg, bytes, aware).0);
                        }
                    }
                }
            }
        }
        let all: std::collections::BTreeSet<&str> = registry().iter().map(|p| p.name()).collect();
        assert_eq!(chosen, all);
        let pref: std::collections::BTreeSet<&str> = preference().iter().map(|p| p.name()).collect();
        assert_eq!(pref, all, "every registered model is asked");
    }

    #[test]
    fn a_staged_message_moves_host_to_host() {
        for p in registry() {
            let carrier = p.message_path();
            if p.stages() {
                assert_eq!(carrier.name(), "host");
            } else {
                assert_eq!(carrier.name(), p.name());
            }
        }
    }
}

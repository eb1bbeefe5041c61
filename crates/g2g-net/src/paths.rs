//! GPU data paths, one model per way a message can travel, behind one trait and registered by name
//! (`g2gsim models` lists them).  A model turns (source, destination, bytes) into a [`Plan`]: stages
//! that every chunk crosses in order, each a fixed delay then a flow over links (shared max-min with
//! everything else in flight), then the links' latency.  Docs: docs/models/<name>.md.
use crate::machine::Machine;
use crate::topology::LinkId;
use smallvec::{smallvec, SmallVec};

/// The links of one stage: inline up to 8 (a 3-level fat-tree route plus two PCIe links).
pub type Links = SmallVec<[LinkId; 8]>;
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
        Plan { model, setup_ns, stages, chunks: 1, chunk_bytes: bytes, last_chunk_bytes: bytes, depth: 1, bw_factor: 1.0 }
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

/// Host memory to host memory: shared memory inside a node, the NIC and network across nodes.
pub struct HostPath;
impl HostPath {
    /// The latency of the host path (that of `links_latency`): control messages (envelope, RTS,
    /// CTS) between two ranks.  Across nodes, from the route cache (the message's own plan has
    /// usually just looked up the same route).
    pub fn latency(m: &Machine, src: Endpoint, dst: Endpoint) -> u64 {
        if src.node == dst.node || m.cfg.inter_socket.is_some() {
            let mut links = Links::new();
            HostPath::links_latency(m, src, dst, &mut links)
        } else {
            m.net_latency(src.node, dst.node, m.cfg.nic_of_gpu(src.gpu)) + m.cfg.nic_latency_ns as u64
        }
    }

    /// The host path as one stage (no delay).
    pub fn stage(m: &Machine, src: Endpoint, dst: Endpoint) -> Stage {
        let mut links = Links::new();
        let latency_ns = HostPath::links_latency(m, src, dst, &mut links);
        Stage { delay_ns: 0, links, latency_ns }
    }

    /// Appends the links of the host path to `links`; returns the latency they add: the links'
    /// latencies (computed as `Machine::path_latency` would) and the NIC's, across nodes.
    pub fn links_latency(m: &Machine, src: Endpoint, dst: Endpoint, links: &mut Links) -> u64 {
        if src.node == dst.node {
            let at = links.len();
            if m.cfg.shm_rank_bw.is_some() {
                // per-rank ports: the sender's out port, the receiver's in port (its copy), then the
                // node's memory-bandwidth cap
                links.push(m.shm_out(src.node, src.gpu));
                links.push(m.shm_in(dst.node, dst.gpu));
            }
            links.push(m.shm(src.node));
            // ranks on different sockets: the copy crosses the link between them (X-Bus, UPI)
            m.cross_sockets(src.node, m.socket_of(src.gpu), m.socket_of(dst.gpu), links);
            m.path_latency(&links[at..])
        } else {
            let rail = m.cfg.nic_of_gpu(src.gpu);
            let at = links.len();
            // from the sender's socket to its NIC's, and from the receiving NIC's socket to the
            // receiver's (the same rail on both nodes)
            m.cross_sockets(src.node, m.socket_of(src.gpu), m.nic_socket_of(src.gpu), links);
            let sock_in = m.cfg.socket_of_nic(rail).min(m.cfg.sockets.saturating_sub(1));
            let mut lat = m.path_latency(&links[at..]);
            lat += m.net_route_latency(src.node, dst.node, rail, links) + m.cfg.nic_latency_ns as u64;
            let at2 = links.len();
            m.cross_sockets(dst.node, sock_in, m.socket_of(dst.gpu), links);
            lat + m.path_latency(&links[at2..])
        }
    }
}
impl DataPath for HostPath {
    fn name(&self) -> &'static str {
        "host"
    }
    fn summary(&self) -> &'static str {
        "host buffer to host buffer: shared memory inside a node, NIC + network across nodes"
    }
    fn params(&self) -> &'static [&'static str] {
        &["node.host.shm_bw", "node.host.shm_latency", "node.host.shm_rank_bw", "node.host.shm_rank_out_bw", "node.sockets", "node.gpu_socket", "node.inter_socket.*", "node.nic.*", "network.*", "mpi.factors (path host / hostcopy)"]
    }
    fn plan_into(&self, m: &Machine, src: Endpoint, dst: Endpoint, bytes: u64, out: &mut Plan) {
        let s = out.reset_single("host", 0, bytes);
        s.latency_ns = HostPath::links_latency(m, src, dst, &mut s.links);
    }
}

/// The application stages through host memory (HostCopy): cudaMemcpy D2H, host MPI, cudaMemcpy H2D.
pub struct StagedPath;
impl StagedPath {
    /// One blocking cudaMemcpy between a GPU and host memory over its copy engine and PCIe link.
    pub fn copy_stage(m: &Machine, at: Endpoint, d2h: bool) -> Stage {
        let ce = m.copy_engine(at.node, at.gpu, d2h);
        let links: Links = if d2h { smallvec![ce, m.pcie_up(at.node, at.gpu)] } else { smallvec![ce, m.pcie_down(at.node, at.gpu)] };
        stage(m, m.cfg.copy_delay_ns as u64, links)
    }
}
impl DataPath for StagedPath {
    fn name(&self) -> &'static str {
        "hostcopy"
    }
    fn summary(&self) -> &'static str {
        "HostCopy: D2H copy over the sender's PCIe, host-to-host MPI, H2D copy on the receiver (the copies block the ranks)"
    }
    fn params(&self) -> &'static [&'static str] {
        &["gpu.copy_delay", "gpu.copy_per_byte", "node.pcie.*", "+ host path", "mpi.factors (path hostcopy)"]
    }
    fn plan_into(&self, m: &Machine, src: Endpoint, dst: Endpoint, bytes: u64, out: &mut Plan) {
        let stages = out.reset_stages("hostcopy", 0, bytes);
        stages.reserve(3);
        stages.push(StagedPath::copy_stage(m, src, true));
        stages.push(HostPath::stage(m, src, dst));
        stages.push(StagedPath::copy_stage(m, dst, false));
    }
}

/// GPUDirect P2P inside a node: CUDA IPC over NVLink, or PCIe peer-to-peer where no NVLink joins them.
pub struct GpuP2P;
impl DataPath for GpuP2P {
    fn name(&self) -> &'static str {
        "gpudirect-p2p"
    }
    fn summary(&self) -> &'static str {
        "GPUDirect P2P inside a node: NVLink between the two GPUs, else PCIe peer-to-peer; pinning cost once"
    }
    fn params(&self) -> &'static [&'static str] {
        &["node.nvlink.*", "node.pcie.*", "node.sockets", "node.gpu_socket", "node.inter_socket.*", "gpu.copy_engines", "gpu.copy_engine_bw", "gpu.gpudirect_delay", "mpi.factors (path gpudirect-p2p)"]
    }
    fn plan_into(&self, m: &Machine, src: Endpoint, dst: Endpoint, bytes: u64, out: &mut Plan) {
        let s = out.reset_single("gpudirect-p2p", m.cfg.gpudirect_delay_ns as u64, bytes);
        let links = &mut s.links;
        if src.gpu == dst.gpu {
            // two ranks on one GPU: a device-local copy
            links.push(m.copy_engine(src.node, src.gpu, true));
        } else {
            if !m.nvlink(src.node, src.gpu, dst.gpu, links) {
                // no NVLink between them: up the sender's CPU link, across the sockets if they
                // differ (X-Bus, UPI), down the receiver's
                links.push(m.pcie_up(src.node, src.gpu));
                m.cross_sockets(src.node, m.socket_of(src.gpu), m.socket_of(dst.gpu), links);
                links.push(m.pcie_down(dst.node, dst.gpu));
            }
            // the receiving GPU's copy engine pulls the data (CUDA IPC), when engines are modelled
            if let Some(ce) = m.p2p_engine(dst.node, dst.gpu) {
                links.push(ce);
            }
        }
        s.latency_ns = m.path_latency(&s.links);
    }
}

/// GPUDirect RDMA across nodes: GPU, PCIe, NIC, network, NIC, PCIe, GPU in one flow.
pub struct GpuRdma;
impl DataPath for GpuRdma {
    fn name(&self) -> &'static str {
        "gpudirect-rdma"
    }
    fn summary(&self) -> &'static str {
        "GPUDirect RDMA across nodes: the NIC reads and writes GPU memory over PCIe; pinning cost once"
    }
    fn params(&self) -> &'static [&'static str] {
        &["node.nic.gpudirect_rdma", "node.pcie.*", "node.nic.*", "network.*", "gpu.gpudirect_delay", "mpi.factors (path gpudirect-rdma)"]
    }
    fn plan_into(&self, m: &Machine, src: Endpoint, dst: Endpoint, bytes: u64, out: &mut Plan) {
        let s = out.reset_single("gpudirect-rdma", m.cfg.gpudirect_delay_ns as u64, bytes);
        let (up, down) = (m.pcie_up(src.node, src.gpu), m.pcie_down(dst.node, dst.gpu));
        s.links.push(up);
        let host = HostPath::links_latency(m, src, dst, &mut s.links);
        s.links.push(down);
        s.latency_ns = m.latency[up as usize] + host + m.latency[down as usize];
    }
}

/// CUDA-aware MPI without GPUDirect RDMA: the library pipelines chunks D2H, network, H2D.
pub struct Pipelined;
impl DataPath for Pipelined {
    fn name(&self) -> &'static str {
        "pipelined"
    }
    fn summary(&self) -> &'static str {
        "CUDA-aware MPI without GPUDirect RDMA: chunks staged D2H / network / H2D, several in flight (e.g. MPICH_G2G_PIPELINE 16 x 512 KiB)"
    }
    fn params(&self) -> &'static [&'static str] {
        &["gpu.pipeline_chunk", "gpu.pipeline_depth", "gpu.pipeline_threshold", "gpu.copy_delay", "node.pcie.*", "+ host path",
          "mpi.factors (path pipelined)", "mpi.device_collectives, mpi.collective_chunk, mpi.collective_depth (library-staged collectives)"]
    }
    fn plan_into(&self, m: &Machine, src: Endpoint, dst: Endpoint, bytes: u64, out: &mut Plan) {
        Pipelined::plan_chunked_into(m, src, dst, bytes, m.cfg.pipeline_chunk, m.cfg.pipeline_depth, out);
    }
}
impl Pipelined {
    /// The pipelined plan with a given chunk size and depth (`mpi.collective_chunk` /
    /// `mpi.collective_depth` for collectives a library stages through the host).
    pub fn plan_chunked(m: &Machine, src: Endpoint, dst: Endpoint, bytes: u64, chunk: u64, depth: u32) -> Plan {
        let mut p = Plan::empty();
        Pipelined::plan_chunked_into(m, src, dst, bytes, chunk, depth, &mut p);
        p
    }

    /// [`Pipelined::plan_chunked`] into `out` (a pooled plan: its stage buffer is kept).
    pub fn plan_chunked_into(m: &Machine, src: Endpoint, dst: Endpoint, bytes: u64, chunk: u64, depth: u32, out: &mut Plan) {
        let chunk = chunk.max(1);
        let chunks = bytes.div_ceil(chunk).max(1) as u32;
        let last = bytes - chunk * (chunks as u64 - 1);
        let stages = out.reset_stages("pipelined", 0, bytes);
        stages.reserve(3);
        stages.push(StagedPath::copy_stage(m, src, true));
        stages.push(HostPath::stage(m, src, dst));
        stages.push(StagedPath::copy_stage(m, dst, false));
        out.chunks = chunks;
        out.chunk_bytes = chunk.min(bytes.max(1));
        out.last_chunk_bytes = last;
        out.depth = depth.max(1);
    }
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

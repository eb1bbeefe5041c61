//! Model `pipelined` (docs/models/pipelined.md): a CUDA-aware MPI without GPUDirect RDMA pipelines chunks through the host.
use super::{DataPath, Endpoint, HostPath, PathQuery, Plan, StagedPath};
use crate::machine::Machine;

/// CUDA-aware MPI without GPUDirect RDMA: the library pipelines chunks D2H, network, H2D.
pub struct Pipelined;
impl DataPath for Pipelined {
    /// Device buffers on both sides, across nodes, a GPU-aware MPI, no RDMA for it (asked after
    /// `gpudirect-rdma`), and a message above `gpu.pipeline_threshold`.
    fn carries(&self, m: &Machine, q: &PathQuery) -> bool {
        q.gpu_to_gpu() && q.src.node != q.dst.node && q.bytes > m.cfg.pipeline_threshold
    }
    fn message_path(&self) -> &'static dyn DataPath {
        &super::PIPELINED
    }
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


//! Model `gpudirect-rdma` (docs/models/gpudirect-rdma.md): GPU to GPU across nodes through the NICs.
use super::{DataPath, Endpoint, HostPath, PathQuery, Plan};
use crate::machine::Machine;

/// GPUDirect RDMA across nodes: GPU, PCIe, NIC, network, NIC, PCIe, GPU in one flow.
pub struct GpuRdma;
impl DataPath for GpuRdma {
    /// Device buffers on both sides, across nodes, a GPU-aware MPI, a NIC with GPUDirect RDMA
    /// (`node.nic.gpudirect_rdma`) and a message up to `node.nic.rdma_max_bytes`.
    fn carries(&self, m: &Machine, q: &PathQuery) -> bool {
        q.gpu_to_gpu() && q.src.node != q.dst.node && m.cfg.gpudirect_rdma && q.bytes <= m.cfg.rdma_max_bytes
    }
    fn message_path(&self) -> &'static dyn DataPath {
        &super::RDMA
    }
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


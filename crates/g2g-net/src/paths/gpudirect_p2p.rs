//! Model `gpudirect-p2p` (docs/models/gpudirect-p2p.md): GPU to GPU inside a node.
use super::{DataPath, Endpoint, PathQuery, Plan};
use crate::machine::Machine;

/// GPUDirect P2P inside a node: CUDA IPC over NVLink, or PCIe peer-to-peer where no NVLink joins them.
pub struct GpuP2P;
impl DataPath for GpuP2P {
    /// Device buffers on both sides, in one node, and a GPU-aware MPI.
    fn carries(&self, _m: &Machine, q: &PathQuery) -> bool {
        q.gpu_to_gpu() && q.src.node == q.dst.node
    }
    fn message_path(&self) -> &'static dyn DataPath {
        &super::P2P
    }
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


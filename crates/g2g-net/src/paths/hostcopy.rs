//! Model `hostcopy` (docs/models/hostcopy.md): the application stages GPU data through host memory.
use smallvec::smallvec;

use super::{stage, DataPath, HostPath, Links, PathQuery, Plan, Stage};
use crate::machine::Machine;
use super::Endpoint;

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
    /// A message with a device buffer on either side that no GPU-direct path carries (HostCopy
    /// mode, a mode's size or collective limits, a one-sided device message, or a GPU-aware MPI's
    /// small inter-node device message without RDMA): each device side is staged.
    fn carries(&self, _m: &Machine, q: &PathQuery) -> bool {
        q.src_gpu || q.dst_gpu
    }
    fn stages(&self) -> bool {
        true
    }
    /// The copies are the ranks' (blocking); MPI moves the message host to host.
    fn message_path(&self) -> &'static dyn DataPath {
        &super::HOST
    }
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


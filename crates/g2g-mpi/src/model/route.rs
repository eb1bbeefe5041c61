//! Which data path a message takes, and whether each side stages its data through the host.
use g2g_net::machine::Machine;
use g2g_net::paths::{self, DataPath, Endpoint};

use crate::options::ModePolicy;

/// A message's data path and whether the sender / the receiver stage through the host.
#[derive(Clone, Copy)]
pub(crate) struct Route {
    pub model: &'static dyn DataPath,
    /// the sender copies its device buffer to the host before MPI moves it
    pub stage_src: bool,
    /// the receiver copies the received data to its device buffer after
    pub stage_dst: bool,
}

impl Route {
    /// Does either side stage through the host?
    #[inline]
    pub fn staged(&self) -> bool {
        self.stage_src || self.stage_dst
    }
}

/// Chooses the data path of a message of `bytes` between endpoints `a` and `b` whose buffers are
/// on the GPU or not, under the mode policy.
#[allow(clippy::too_many_arguments)]
pub(crate) fn choose(
    m: &Machine,
    policy: &ModePolicy,
    a: Endpoint,
    b: Endpoint,
    src_gpu: bool,
    dst_gpu: bool,
    bytes: u64,
    collective: bool,
) -> Route {
    if bytes == 0 {
        // synchronisation, not data: the host path in every mode
        return Route { model: &paths::HOST, stage_src: false, stage_dst: false };
    }
    let gpu_aware = policy.gpu_aware(bytes, collective);
    let direct = |model: &'static dyn DataPath| Route {
        model,
        stage_src: false,
        stage_dst: false,
    };
    if src_gpu && dst_gpu && gpu_aware {
        if a.node == b.node {
            return direct(&paths::P2P);
        }
        if m.cfg.gpudirect_rdma && bytes <= m.cfg.rdma_max_bytes {
            return direct(&paths::RDMA);
        }
        if bytes > m.cfg.pipeline_threshold {
            return direct(&paths::PIPELINED);
        }
        return Route {
            model: &paths::HOST,
            stage_src: true,
            stage_dst: true,
        };
    }
    // host path; a GPU side stages (the application's cudaMemcpy, or the MPI's own for a
    // CUDA-aware call with one host side)
    Route {
        model: &paths::HOST,
        stage_src: src_gpu,
        stage_dst: dst_gpu,
    }
}

//! Which data path a message takes: the mode policy says whether the MPI library moves device
//! buffers itself; the data-path registry of g2g-net (`paths::choose`) picks the model and whether
//! each side stages through the host.
use g2g_net::machine::Machine;
use g2g_net::paths::{self, Endpoint, PathQuery};

pub(crate) use g2g_net::paths::Route;

use crate::options::ModePolicy;

/// The route of a message of `bytes` from `src` to `dst` whose buffers are on the GPU or not.
#[allow(clippy::too_many_arguments)]
#[inline]
pub(crate) fn choose(
    m: &Machine,
    policy: &ModePolicy,
    src: Endpoint,
    dst: Endpoint,
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
    paths::choose(m, &PathQuery { src, dst, src_gpu, dst_gpu, bytes, gpu_aware })
}

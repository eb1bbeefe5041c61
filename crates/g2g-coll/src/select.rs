//! Algorithm selection by message size and communicator size (helper fills in).
use crate::{Algo, CollKind};

/// Thresholds kept in the machine file under `[collectives]`; defaults follow Open MPI "tuned".
#[derive(Clone, Debug, PartialEq)]
pub struct Thresholds {
    pub bcast_small_bytes: u64,
    pub bcast_segment_bytes: u64,
    pub allreduce_small_bytes: u64,
    pub allgather_small_bytes: u64,
    pub alltoall_small_bytes: u64,
    pub reduce_segment_bytes: u64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            bcast_small_bytes: 12288,
            bcast_segment_bytes: 128 * 1024,
            allreduce_small_bytes: 10000,
            allgather_small_bytes: 81920,
            alltoall_small_bytes: 256,
            reduce_segment_bytes: 32 * 1024,
        }
    }
}

/// User overrides: `--coll-algo allreduce=ring,bcast=binomial`.
#[derive(Clone, Debug, Default)]
pub struct AlgoOverrides(pub Vec<(CollKind, Algo)>);

pub fn select(kind: CollKind, size: u32, bytes: u64, th: &Thresholds, ov: &AlgoOverrides) -> Algo {
    let _ = (kind, size, bytes, th, ov);
    unimplemented!("helper: selection rules")
}

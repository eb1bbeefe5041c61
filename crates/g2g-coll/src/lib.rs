//! Collectives as point-to-point schedules.
//!
//! A collective call on one rank becomes a list of [`Round`]s.  Within a round every send and every
//! receive is posted at once; the round ends when all of them have completed, then the rank spends
//! `reduce_bytes` of local reduction work (costed by the replay model), then the next round starts.
//!
//! **Matching contract**: the replay engine matches collective messages between a pair of ranks in
//! FIFO order (per collective instance, per source).  So for every pair (a, b), the sequence of sends
//! a→b in a's schedule must equal, in order and size, the sequence of receives from a in b's schedule.
//! `check_consistency` verifies this and every algorithm is tested with it.
//!
//! Sizes follow the trace format (docs/trace-format.md): `bytes` is per the MPI call's buffers.

mod algos;
mod select;

pub use algos::schedule;
pub use select::{select, AlgoOverrides, Thresholds};

/// One message of a round: to/from `peer` (rank in the communicator), `bytes` long.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Step {
    pub peer: u32,
    pub bytes: u64,
}

/// Messages posted together; then `reduce_bytes` of reduction work once they are all done.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Round {
    pub sends: Vec<Step>,
    pub recvs: Vec<Step>,
    pub reduce_bytes: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CollKind {
    Barrier,
    Bcast,
    Reduce,
    Allreduce,
    Gather,
    Gatherv,
    Scatter,
    Scatterv,
    Allgather,
    Allgatherv,
    Alltoall,
    Alltoallv,
    ReduceScatter,
    ReduceScatterBlock,
    Scan,
    Exscan,
}

impl CollKind {
    pub const ALL: [CollKind; 16] = [
        CollKind::Barrier, CollKind::Bcast, CollKind::Reduce, CollKind::Allreduce,
        CollKind::Gather, CollKind::Gatherv, CollKind::Scatter, CollKind::Scatterv,
        CollKind::Allgather, CollKind::Allgatherv, CollKind::Alltoall, CollKind::Alltoallv,
        CollKind::ReduceScatter, CollKind::ReduceScatterBlock, CollKind::Scan, CollKind::Exscan,
    ];

    /// The MPI name without the `MPI_` prefix, as used in traces ("Reduce_scatter_block").
    pub fn name(self) -> &'static str {
        match self {
            CollKind::Barrier => "Barrier",
            CollKind::Bcast => "Bcast",
            CollKind::Reduce => "Reduce",
            CollKind::Allreduce => "Allreduce",
            CollKind::Gather => "Gather",
            CollKind::Gatherv => "Gatherv",
            CollKind::Scatter => "Scatter",
            CollKind::Scatterv => "Scatterv",
            CollKind::Allgather => "Allgather",
            CollKind::Allgatherv => "Allgatherv",
            CollKind::Alltoall => "Alltoall",
            CollKind::Alltoallv => "Alltoallv",
            CollKind::ReduceScatter => "Reduce_scatter",
            CollKind::ReduceScatterBlock => "Reduce_scatter_block",
            CollKind::Scan => "Scan",
            CollKind::Exscan => "Exscan",
        }
    }

    pub fn from_name(s: &str) -> Option<CollKind> {
        let s = s.strip_prefix("MPI_").unwrap_or(s);
        CollKind::ALL.iter().copied().find(|k| k.name().eq_ignore_ascii_case(s))
    }

    pub fn is_rooted(self) -> bool {
        matches!(
            self,
            CollKind::Bcast | CollKind::Reduce | CollKind::Gather | CollKind::Gatherv
                | CollKind::Scatter | CollKind::Scatterv
        )
    }
}

/// The algorithms MPI libraries run.  `name()` is what `--coll-algo kind=name` and machine files use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Algo {
    // barrier
    Dissemination,
    // bcast / reduce / gather / scatter trees
    Linear,
    Binomial,
    /// pipelined/segmented chain or binary tree: segment size in bytes
    PipelinedBinomial { segment: u64 },
    PipelinedChain { segment: u64 },
    ScatterAllgather,
    // allreduce
    RecursiveDoubling,
    Rabenseifner,
    Ring,
    ReduceBcast,
    // allgather
    Bruck,
    // alltoall
    Pairwise,
}

impl Algo {
    pub fn name(self) -> &'static str {
        match self {
            Algo::Dissemination => "dissemination",
            Algo::Linear => "linear",
            Algo::Binomial => "binomial",
            Algo::PipelinedBinomial { .. } => "pipelined_binomial",
            Algo::PipelinedChain { .. } => "pipeline",
            Algo::ScatterAllgather => "scatter_allgather",
            Algo::RecursiveDoubling => "recursive_doubling",
            Algo::Rabenseifner => "rabenseifner",
            Algo::Ring => "ring",
            Algo::ReduceBcast => "reduce_bcast",
            Algo::Bruck => "bruck",
            Algo::Pairwise => "pairwise",
        }
    }
}

/// One rank's view of a collective call.
#[derive(Clone, Copy, Debug)]
pub struct CollArgs<'a> {
    pub kind: CollKind,
    /// communicator size
    pub size: u32,
    /// this rank's rank in the communicator
    pub rank: u32,
    /// root (comm rank) for rooted collectives, 0 otherwise
    pub root: u32,
    /// see docs/trace-format.md for what `bytes`/`recv_bytes` mean per kind
    pub bytes: u64,
    pub recv_bytes: u64,
    /// v-collectives: bytes to each comm rank
    pub counts: Option<&'a [u64]>,
    /// v-collectives: bytes from each comm rank
    pub recv_counts: Option<&'a [u64]>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CollError(pub String);

impl std::fmt::Display for CollError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for CollError {}

/// Checks the matching contract over all ranks of one collective call.
/// `args_of(r)` gives rank r's arguments.
pub fn check_consistency(
    algo_of: &dyn Fn(u32) -> Algo,
    args_of: &dyn Fn(u32) -> CollArgs<'static>,
    size: u32,
) -> Result<(), CollError> {
    use std::collections::HashMap;
    let mut sent: HashMap<(u32, u32), Vec<u64>> = HashMap::new();
    let mut recvd: HashMap<(u32, u32), Vec<u64>> = HashMap::new();
    for r in 0..size {
        let rounds = schedule(algo_of(r), &args_of(r))?;
        for round in &rounds {
            for s in &round.sends {
                sent.entry((r, s.peer)).or_default().push(s.bytes);
            }
            for s in &round.recvs {
                recvd.entry((s.peer, r)).or_default().push(s.bytes);
            }
        }
    }
    for (k, v) in &sent {
        if recvd.get(k) != Some(v) {
            return Err(CollError(format!(
                "pair {}->{}: sends {:?} but receives {:?}",
                k.0, k.1, v, recvd.get(k)
            )));
        }
    }
    for (k, v) in &recvd {
        if !sent.contains_key(k) {
            return Err(CollError(format!("pair {}->{}: receives {:?} never sent", k.0, k.1, v)));
        }
    }
    Ok(())
}

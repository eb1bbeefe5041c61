//! Collectives as point-to-point schedules.
//!
//! A collective call on one rank becomes a list of [`Round`]s.  Within a round every send and every
//! receive is posted at once; the round ends when all of them have completed, then the rank spends
//! `reduce_bytes` of local reduction work (costed by the replay model), then the next round starts.
//!
//! **Matching contract**: the replay engine matches collective messages between a pair of ranks in
//! FIFO order (per collective instance, per source).  So for every pair (a, b), the sequence of sends
//! a→b in a's schedule must equal, in order and size, the sequence of receives from a in b's schedule.
//! [`check_consistency`] / [`check_schedules`] verify this (and that the schedules cannot deadlock
//! under rendezvous semantics); every algorithm is tested with them.
//!
//! Sizes follow the trace format (docs/trace-format.md): `bytes` is per the MPI call's buffers.
//! Where a rank's field is 0 the other one stands in (e.g. a Scatter non-root only knows
//! `recv_bytes`, a root with MPI_IN_PLACE may record an empty send buffer).
//!
//! Typical use, per rank and call: `let algo = select_for(&args, &thresholds, &overrides);` then
//! `schedule(algo, &args)`.  [`select_for`] derives the selection size from quantities every rank
//! of the call agrees on, so all ranks pick the same algorithm.
//!
//! Algorithms per collective ([`algorithms_for`]; details on each in the `algos` module):
//!
//! | collective | algorithms |
//! |---|---|
//! | Barrier | dissemination, linear |
//! | Bcast | binomial, scatter_allgather, scatter_rd_allgather (2^k ranks), pipeline, pipelined_binomial, linear |
//! | Reduce | binomial, pipeline, pipelined_binomial, linear |
//! | Allreduce | recursive_doubling, rabenseifner, ring, reduce_bcast |
//! | Gather(v), Scatter(v) | linear, binomial (v: counts needed at every rank) |
//! | Allgather(v) | recursive_doubling (2^k ranks), bruck, ring, linear |
//! | Alltoall | bruck, scattered, linear, pairwise |
//! | Alltoallv | pairwise, linear, scattered |
//! | Reduce_scatter(_block) | recursive_halving, ring, pairwise, reduce_scatterv |
//! | Scan, Exscan | recursive_doubling, linear |

mod algos;
mod check;
mod select;
mod util;

pub use algos::{schedule, MAX_SEGMENTS};
pub use check::{check_consistency, check_schedules};
pub use select::{select, select_for, selection_bytes, AlgoOverrides, Thresholds};

/// One message of a round: to/from `peer` (rank in the communicator), `bytes` long.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Step {
    pub peer: u32,
    pub bytes: u64,
}

/// A round's sends or receives: inline up to one (most rounds of most algorithms send one message
/// and receive one; a `Vec` each was two allocations per round of every rank's schedule).
pub type Steps = smallvec::SmallVec<[Step; 1]>;

/// Messages posted together; then `reduce_bytes` of reduction work once they are all done.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Round {
    pub sends: Steps,
    pub recvs: Steps,
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
        CollKind::Barrier,
        CollKind::Bcast,
        CollKind::Reduce,
        CollKind::Allreduce,
        CollKind::Gather,
        CollKind::Gatherv,
        CollKind::Scatter,
        CollKind::Scatterv,
        CollKind::Allgather,
        CollKind::Allgatherv,
        CollKind::Alltoall,
        CollKind::Alltoallv,
        CollKind::ReduceScatter,
        CollKind::ReduceScatterBlock,
        CollKind::Scan,
        CollKind::Exscan,
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
            CollKind::Bcast
                | CollKind::Reduce
                | CollKind::Gather
                | CollKind::Gatherv
                | CollKind::Scatter
                | CollKind::Scatterv
        )
    }
}

/// The algorithms MPI libraries run.  `name()` is what `--coll-algo kind=name` and machine files use;
/// [`algorithms_for`] lists which are valid for each collective.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Algo {
    /// Barrier: round k exchanges 0-byte messages with (r ± 2^k) mod p.
    Dissemination,
    /// Everything through/with one rank at once (root, or rank 0), or all pairs in one round.
    Linear,
    /// Gather / Scatter as Open MPI's basic linear (`coll_tuned_*_algorithm = 1`): the root's
    /// blocking sends (Scatter) or receives (Gather), one peer after another in rank order.
    LinearSequential,
    /// Binomial tree (rooted collectives).  Gatherv/Scatterv: needs the counts at every rank, which
    /// traces carry only at the root; a non-root rank without them makes `schedule` fail.
    Binomial,
    /// Segmented binomial tree: segment size in bytes (0 = from [`Thresholds`] in `select`, one
    /// segment in `schedule`).
    PipelinedBinomial { segment: u64 },
    /// Segmented chain (Open MPI "pipeline"): segment size in bytes (0 as for `PipelinedBinomial`).
    PipelinedChain { segment: u64 },
    /// Bcast: binomial scatter + ring allgather (van de Geijn; MPICH long messages).
    ScatterAllgather,
    /// Bcast: binomial scatter + recursive-doubling allgather (MPICH medium messages; power-of-two
    /// communicators only).
    ScatterRdAllgather,
    /// Allreduce, Allgather(v) (power of two only), Scan/Exscan.
    RecursiveDoubling,
    /// Allreduce: recursive-halving reduce-scatter + recursive-doubling allgather.
    Rabenseifner,
    /// Allreduce, Allgather(v), Reduce_scatter(_block).
    Ring,
    /// Allreduce: binomial reduce to rank 0 + binomial bcast (Open MPI "nonoverlapping").
    ReduceBcast,
    /// Allgather(v), Alltoall.
    Bruck,
    /// Alltoall(v), Reduce_scatter(_block).
    Pairwise,
    /// Alltoall(v): MPICH's "scattered" medium-message algorithm.  The exchanges with the peers at
    /// offsets 0..p (the rank itself at 0, which sends nothing) go in blocks of `block` offsets:
    /// each block's receives and sends are posted at once and all waited for before the next
    /// (`MPIR_CVAR_ALLTOALL_THROTTLE`).  `block` 0: from [`Thresholds`] in `select`
    /// (`alltoall_throttle_procs`), everything at once in `schedule` (as `Linear`).
    Scattered { block: u64 },
    /// Reduce_scatter(_block): recursive halving (any communicator size).
    RecursiveHalving,
    /// Reduce_scatter(_block): binomial reduce to rank 0 + linear scatterv (Open MPI "nonoverlapping").
    ReduceScatterv,
}

impl Algo {
    pub fn name(self) -> &'static str {
        match self {
            Algo::Dissemination => "dissemination",
            Algo::Linear => "linear",
            Algo::LinearSequential => "linear_sequential",
            Algo::Binomial => "binomial",
            Algo::PipelinedBinomial { .. } => "pipelined_binomial",
            Algo::PipelinedChain { .. } => "pipeline",
            Algo::ScatterAllgather => "scatter_allgather",
            Algo::ScatterRdAllgather => "scatter_rd_allgather",
            Algo::RecursiveDoubling => "recursive_doubling",
            Algo::Rabenseifner => "rabenseifner",
            Algo::Ring => "ring",
            Algo::ReduceBcast => "reduce_bcast",
            Algo::Bruck => "bruck",
            Algo::Pairwise => "pairwise",
            Algo::Scattered { .. } => "scattered",
            Algo::RecursiveHalving => "recursive_halving",
            Algo::ReduceScatterv => "reduce_scatterv",
        }
    }

    /// The algorithm called `name` for `kind`, or None when there is none (see [`algorithms_for`]).
    /// Case-insensitive; `-` and ` ` may stand for `_`.  The pipelined algorithms take an optional
    /// segment size after a colon: `pipeline:64k`, `pipelined_binomial:8192` (suffixes k, m, g are
    /// binary); without one the segment is 0 (`select` fills in the threshold's segment size).
    /// `scattered` takes its block (peers at once) the same way: `scattered:16`.
    /// A few aliases from the MPI libraries are accepted: `chain` (pipeline), `basic_linear`
    /// (linear), `scatter_ring_allgather` (scatter_allgather), `nonoverlapping` (reduce_bcast for
    /// Allreduce, reduce_scatterv for Reduce_scatter(_block)), `bruck` for Barrier (dissemination).
    pub fn from_name(kind: CollKind, name: &str) -> Option<Algo> {
        parse_algo(kind, name).ok()
    }

    /// Segment size of the pipelined algorithms (None for the others).
    pub fn segment(self) -> Option<u64> {
        match self {
            Algo::PipelinedBinomial { segment } | Algo::PipelinedChain { segment } => Some(segment),
            _ => None,
        }
    }

    /// The number after the name's colon: the pipelined algorithms' segment size, the scattered
    /// algorithm's block (None for the others).
    pub fn param(self) -> Option<u64> {
        match self {
            Algo::Scattered { block } => Some(block),
            a => a.segment(),
        }
    }
}

impl std::fmt::Display for Algo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.param() {
            Some(s) if s > 0 => write!(f, "{}:{}", self.name(), s),
            _ => f.write_str(self.name()),
        }
    }
}

/// The algorithm names valid for `kind`, the default-selection favourites first.
pub fn algorithms_for(kind: CollKind) -> &'static [&'static str] {
    match kind {
        CollKind::Barrier => &["dissemination", "linear"],
        CollKind::Bcast => {
            &["binomial", "scatter_allgather", "scatter_rd_allgather", "pipeline", "pipelined_binomial", "linear"]
        }
        CollKind::Reduce => &["binomial", "pipeline", "pipelined_binomial", "linear"],
        CollKind::Allreduce => &["recursive_doubling", "rabenseifner", "ring", "reduce_bcast"],
        CollKind::Gather | CollKind::Gatherv | CollKind::Scatter | CollKind::Scatterv => {
            &["linear", "binomial", "linear_sequential"]
        }
        CollKind::Allgather | CollKind::Allgatherv => &["recursive_doubling", "bruck", "ring", "linear"],
        CollKind::Alltoall => &["bruck", "scattered", "linear", "pairwise"],
        CollKind::Alltoallv => &["pairwise", "linear", "scattered"],
        CollKind::ReduceScatter | CollKind::ReduceScatterBlock => {
            &["recursive_halving", "ring", "pairwise", "reduce_scatterv"]
        }
        CollKind::Scan | CollKind::Exscan => &["recursive_doubling", "linear"],
    }
}

/// Parses `64k`, `1m`, `8192` (binary suffixes k/m/g, optional `b`/`ib`).
fn parse_size(s: &str) -> Option<u64> {
    let s: String = s.chars().filter(|c| *c != '_' && !c.is_whitespace()).map(|c| c.to_ascii_lowercase()).collect();
    let s = s.strip_suffix("ib").or_else(|| s.strip_suffix('b')).unwrap_or(&s);
    let (num, mult) = match s.chars().last()? {
        'k' => (&s[..s.len() - 1], 1u64 << 10),
        'm' => (&s[..s.len() - 1], 1 << 20),
        'g' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.trim().parse::<u64>().ok()?.checked_mul(mult)
}

pub(crate) fn parse_algo(kind: CollKind, name: &str) -> Result<Algo, CollError> {
    let norm: String =
        name.trim().chars().map(|c| if c == '-' || c == ' ' { '_' } else { c.to_ascii_lowercase() }).collect();
    let (base, seg) = match norm.split_once(':') {
        Some((b, s)) => (b.trim_end_matches('_'), Some(s.trim_start_matches('_'))),
        None => (norm.as_str(), None),
    };
    let base = match (kind, base) {
        (_, "chain" | "pipelined_chain") => "pipeline",
        (_, "basic_linear") => "linear",
        (_, "scatter_ring_allgather") => "scatter_allgather",
        (CollKind::Allreduce, "nonoverlapping") => "reduce_bcast",
        (CollKind::ReduceScatter | CollKind::ReduceScatterBlock, "nonoverlapping") => "reduce_scatterv",
        (CollKind::Barrier, "bruck") => "dissemination",
        (_, b) => b,
    };
    let valid = algorithms_for(kind);
    if !valid.contains(&base) {
        return Err(CollError(format!(
            "unknown algorithm '{}' for {}; valid: {}",
            name.trim(),
            kind.name(),
            valid.join(", ")
        )));
    }
    let segment = match seg {
        None => 0,
        Some(s) if base == "scattered" => s.trim().parse::<u64>().map_err(|_| {
            CollError(format!("bad block '{s}' in '{}' (expected a number of peers like 32)", name.trim()))
        })?,
        Some(s) => parse_size(s).ok_or_else(|| {
            CollError(format!("bad segment size '{s}' in '{}' (expected bytes like 65536, 64k, 1m)", name.trim()))
        })?,
    };
    let algo = match base {
        "dissemination" => Algo::Dissemination,
        "linear" => Algo::Linear,
        "linear_sequential" => Algo::LinearSequential,
        "binomial" => Algo::Binomial,
        "pipelined_binomial" => Algo::PipelinedBinomial { segment },
        "pipeline" => Algo::PipelinedChain { segment },
        "scatter_allgather" => Algo::ScatterAllgather,
        "scatter_rd_allgather" => Algo::ScatterRdAllgather,
        "recursive_doubling" => Algo::RecursiveDoubling,
        "rabenseifner" => Algo::Rabenseifner,
        "ring" => Algo::Ring,
        "reduce_bcast" => Algo::ReduceBcast,
        "bruck" => Algo::Bruck,
        "pairwise" => Algo::Pairwise,
        "scattered" => Algo::Scattered { block: segment },
        "recursive_halving" => Algo::RecursiveHalving,
        _ => Algo::ReduceScatterv,
    };
    if seg.is_some() && algo.param().is_none() {
        return Err(CollError(format!("algorithm '{}' takes no segment size ('{}')", algo.name(), name.trim())));
    }
    Ok(algo)
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

//! The algorithms: one rank's schedule for one collective call.
//!
//! Conventions shared by every algorithm (see the submodules for each one):
//! * Rooted collectives work on *virtual ranks* `v = (rank - root) mod p`, so the root is virtual 0,
//!   exactly as MPICH and Open MPI build their trees.
//! * Binomial trees are MPICH's: the parent of `v` is `v` minus its lowest set bit; a node sends to its
//!   children largest subtree first (root of p=8 sends to 4, 2, 1, one child per round) and receives
//!   from them smallest subtree first (1, 2, 4).
//! * A communicator of one rank, or a call that moves no data (every size is 0), gives an empty
//!   schedule, as MPI libraries return at once in both cases.  Exceptions: Barrier always
//!   synchronises, and Gatherv, Scatterv and Alltoallv keep their (0-byte) messages, because a rank
//!   cannot know that the others move nothing.
//! * Pipelined algorithms split the message into segments of `segment` bytes (0 = one segment).  To
//!   keep schedules bounded, the segment is enlarged so that there are at most [`MAX_SEGMENTS`].
//! * Messages of v-collectives are structural: each pair that the algorithm connects exchanges its
//!   message even when the size is 0, so that a trace whose counts disagree between ranks still gives
//!   matching message *counts*.

mod exchange;
mod reduction;
mod rooted;

use crate::{algorithms_for, Algo, CollArgs, CollError, CollKind, Round};

/// Upper bound on the number of segments of a pipelined algorithm; larger messages use larger
/// segments.
pub const MAX_SEGMENTS: u64 = 1 << 16;

/// One rank's schedule for one collective call: the rounds it runs, in order.
///
/// Errors (never panics): a communicator of size 0, `rank >= size`, `root >= size` for rooted
/// collectives, a `counts`/`recv_counts` whose length is not `size` (v-collectives), an algorithm that
/// is not one of [`algorithms_for`]`(kind)`, an algorithm that needs a power-of-two communicator on
/// another size (`recursive_doubling` for Allgather(v), `scatter_rd_allgather` for Bcast), and
/// `binomial` Gatherv/Scatterv on a non-root rank that does not know every rank's count (see
/// [`crate::Algo::Binomial`]).
pub fn schedule(algo: Algo, args: &CollArgs) -> Result<Vec<Round>, CollError> {
    validate(args)?;
    let kind = args.kind;
    if !algorithms_for(kind).contains(&algo.name()) {
        return Err(CollError(format!(
            "algorithm '{}' is not valid for {}; valid: {}",
            algo.name(),
            kind.name(),
            algorithms_for(kind).join(", ")
        )));
    }
    let p = args.size as u64;
    if needs_pow2(kind, algo) && !crate::util::is_pow2(p) {
        return Err(CollError(format!(
            "algorithm '{}' for {} needs a power-of-two communicator, not {}",
            algo.name(),
            kind.name(),
            p
        )));
    }
    if p == 1 {
        return Ok(Vec::new());
    }
    let c = Ctx { p, r: args.rank as u64, root: if kind.is_rooted() { args.root as u64 } else { 0 } };
    match kind {
        CollKind::Barrier => Ok(rooted::barrier(algo, &c)),
        CollKind::Bcast => Ok(rooted::bcast(algo, &c, vector_bytes(args))),
        CollKind::Reduce => Ok(rooted::reduce(algo, &c, vector_bytes(args))),
        CollKind::Gather | CollKind::Gatherv => rooted::gather(algo, &c, args),
        CollKind::Scatter | CollKind::Scatterv => rooted::scatter(algo, &c, args),
        CollKind::Allreduce => Ok(reduction::allreduce(algo, &c, vector_bytes(args))),
        CollKind::ReduceScatter | CollKind::ReduceScatterBlock => Ok(reduction::reduce_scatter(algo, &c, args)),
        CollKind::Scan | CollKind::Exscan => {
            Ok(reduction::scan(algo, &c, vector_bytes(args), kind == CollKind::Exscan))
        }
        CollKind::Allgather | CollKind::Allgatherv => Ok(exchange::allgather(algo, &c, args)),
        CollKind::Alltoall | CollKind::Alltoallv => Ok(exchange::alltoall(algo, &c, args)),
    }
}

/// Whether `algo` only works on power-of-two communicators when used for `kind`.
pub(crate) fn needs_pow2(kind: CollKind, algo: Algo) -> bool {
    matches!(
        (kind, algo),
        (CollKind::Allgather | CollKind::Allgatherv, Algo::RecursiveDoubling)
            | (CollKind::Bcast, Algo::ScatterRdAllgather)
    )
}

/// This rank's place in the communicator.
pub(crate) struct Ctx {
    pub p: u64,
    pub r: u64,
    /// root for rooted collectives, 0 otherwise
    pub root: u64,
}

fn validate(args: &CollArgs) -> Result<(), CollError> {
    let kind = args.kind.name();
    if args.size == 0 {
        return Err(CollError(format!("{kind}: communicator size is 0")));
    }
    if args.rank >= args.size {
        return Err(CollError(format!(
            "{kind}: rank {} is out of range for a communicator of size {}",
            args.rank, args.size
        )));
    }
    if args.kind.is_rooted() && args.root >= args.size {
        return Err(CollError(format!(
            "{kind}: root {} is out of range for a communicator of size {}",
            args.root, args.size
        )));
    }
    let (uses_counts, uses_recv_counts) = match args.kind {
        CollKind::Scatterv => (true, false),
        CollKind::Gatherv | CollKind::Allgatherv | CollKind::ReduceScatter => (false, true),
        CollKind::Alltoallv => (true, true),
        _ => (false, false),
    };
    for (used, name, c) in [(uses_counts, "counts", args.counts), (uses_recv_counts, "recv_counts", args.recv_counts)] {
        if let (true, Some(c)) = (used, c) {
            if c.len() != args.size as usize {
                return Err(CollError(format!(
                    "{kind}: {name} has {} entries but the communicator has {} ranks",
                    c.len(),
                    args.size
                )));
            }
        }
    }
    Ok(())
}

/// The vector/buffer size of Bcast, Reduce, Allreduce, Scan and Exscan: `bytes`, or `recv_bytes`
/// where `bytes` is 0 (e.g. MPI_IN_PLACE recorded as an empty send buffer).
pub(crate) fn vector_bytes(args: &CollArgs) -> u64 {
    if args.bytes > 0 {
        args.bytes
    } else {
        args.recv_bytes
    }
}

/// Segment size actually used for `n` bytes: 0 (or more than `n`) means one segment; never more
/// than [`MAX_SEGMENTS`] segments.
pub(crate) fn effective_segment(n: u64, segment: u64) -> u64 {
    let seg = if segment == 0 || segment > n { n } else { segment };
    seg.max(n.div_ceil(MAX_SEGMENTS)).max(1)
}

//! Algorithm selection by message size and communicator size.
//!
//! The default rules follow the fixed decision functions of Open MPI's `tuned` component (the
//! classic ones, measured at UTK) and MPICH's defaults, in words, not code.  Where the two differ the
//! rule says which one it follows.  Every number is a field of [`Thresholds`] so that machine files
//! (`[collectives]`) can retune them.
//!
//! **All ranks must select the same algorithm.**  The `bytes` given to [`select`] must therefore be
//! a size every rank of the call agrees on; [`selection_bytes`] computes it from one rank's
//! arguments and [`select_for`] does both steps.

use crate::algos::needs_pow2;
use crate::util::is_pow2;
use crate::{parse_algo, Algo, CollArgs, CollError, CollKind};

macro_rules! thresholds {
    ($( $(#[$doc:meta])* $name:ident = $default:expr; )*) => {
        /// Thresholds kept in the machine file under `[collectives]`; the defaults (see each field)
        /// follow Open MPI "tuned" and MPICH.  All values are bytes, except `*_procs` (ranks).
        #[derive(Clone, Debug, PartialEq)]
        pub struct Thresholds {
            $( $(#[$doc])* pub $name: u64, )*
        }

        impl Default for Thresholds {
            fn default() -> Self {
                Thresholds { $( $name: $default, )* }
            }
        }

        impl Thresholds {
            /// Every field as (name, value), in declaration order.
            pub fn entries(&self) -> Vec<(&'static str, u64)> {
                vec![$( (stringify!($name), self.$name), )*]
            }

            /// The value of field `key`, if there is one.
            pub fn get(&self, key: &str) -> Option<u64> {
                match key {
                    $( stringify!($name) => Some(self.$name), )*
                    _ => None,
                }
            }

            /// Sets field `key` (e.g. from a machine file); an unknown key is an error that lists
            /// the valid ones.
            pub fn set(&mut self, key: &str, value: u64) -> Result<(), CollError> {
                match key {
                    $( stringify!($name) => { self.$name = value; Ok(()) } )*
                    _ => Err(CollError(format!(
                        "unknown collective threshold '{key}'; valid: {}",
                        [$( stringify!($name), )*].join(", ")
                    ))),
                }
            }
        }
    };
}

thresholds! {
    /// Bcast below this many bytes uses binomial (MPICH's short-message size for bcast, 12288).
    bcast_small_bytes = 12288;
    /// Bcast on fewer ranks than this uses binomial up to `bcast_long_bytes` (MPICH's minimum
    /// communicator size for scatter + allgather, 8).
    bcast_min_procs = 8;
    /// Bcast from here on is a "long" message: pipeline when the message has at least as many
    /// segments as there are ranks, else scatter + ring allgather (MPICH's long-message size, 512 KiB;
    /// below it MPICH uses scatter + recursive-doubling allgather on powers of two and scatter + ring
    /// allgather otherwise).
    bcast_long_bytes = 524288;
    /// Segment size of the pipelined bcast (Open MPI tuned's pipeline for large messages, 128 KiB).
    bcast_segment_bytes = 131072;
    /// Reduce on fewer than `reduce_small_comm_procs` ranks below this many bytes is linear (Open MPI
    /// tuned, 512).
    reduce_linear_bytes = 512;
    /// The "small communicator" of the reduce rules (Open MPI tuned, 8 ranks).
    reduce_small_comm_procs = 8;
    /// Reduce below this many bytes is binomial, unsegmented (Open MPI tuned and MPICH's short
    /// message size for reduce, 2048).
    reduce_small_bytes = 2048;
    /// Reduce on a small communicator below this many bytes is binomial too (Open MPI tuned, 20480).
    reduce_small_comm_bytes = 20480;
    /// Segment size of the pipelined reduce (Open MPI tuned's 32 KiB pipeline); larger messages use
    /// the segmented chain when it has at least as many segments as ranks, else a segmented binomial
    /// tree (Open MPI switches to segmented trees when the communicator is large for the message).
    reduce_segment_bytes = 32768;
    /// Allreduce below this many bytes uses recursive doubling (Open MPI tuned's 10000-byte
    /// "intermediate message"; MPICH uses 2048); so does a vector with fewer bytes than the
    /// power-of-two part of the communicator (MPICH's count < pof2 rule).
    allreduce_small_bytes = 10000;
    /// Larger allreduces use ring when each rank's block (bytes / ranks) is at least this big (Open
    /// MPI tuned picks ring for large commutative allreduces), else Rabenseifner (MPICH's long
    /// message algorithm), whose 2 log2(p) steps beat ring's 2(p - 1) when blocks are small.  The
    /// 64 KiB is g2gsim's: where a block's transfer time is comparable to a message latency.
    allreduce_ring_min_block_bytes = 65536;
    /// Allgather(v) totals (all ranks' data together) below this use Bruck on non-powers of two
    /// (MPICH's short-message size for allgather, 81920).
    allgather_small_bytes = 81920;
    /// Allgather(v) totals below this use recursive doubling on powers of two; everything else uses
    /// ring (MPICH's long-message size for allgather, 512 KiB).
    allgather_long_bytes = 524288;
    /// Alltoall blocks (bytes per peer) up to this use Bruck on at least `alltoall_bruck_min_procs`
    /// ranks (MPICH's short-message size for alltoall, 256).
    alltoall_small_bytes = 256;
    /// Minimum communicator for Bruck alltoall (MPICH, 8 ranks).
    alltoall_bruck_min_procs = 8;
    /// Alltoall blocks up to this use MPICH's medium-message algorithm, scattered (MPICH's
    /// medium-message size, 32 KiB); larger ones use pairwise exchange.
    alltoall_medium_bytes = 32768;
    /// The scattered Alltoall's block: it exchanges with this many peers at a time (counting
    /// itself in the first block) and waits for them all before the next block (MPICH's
    /// `MPIR_CVAR_ALLTOALL_THROTTLE`, 32).  0 posts everything at once: the rules then choose
    /// linear (Open MPI's basic linear algorithm does the same).
    alltoall_throttle_procs = 32;
    /// Gather blocks (bytes per rank) above this use linear (Open MPI tuned's 6000-byte intermediate
    /// block size, where it switches to its linear-with-synchronisation gather).
    gather_linear_block_bytes = 6000;
    /// Gather blocks below this use binomial on more than `gather_small_comm_procs` ranks (Open MPI
    /// tuned, 1024).
    gather_small_block_bytes = 1024;
    /// Gather on more than this many ranks uses binomial up to `gather_linear_block_bytes` (Open MPI
    /// tuned, 60).
    gather_large_comm_procs = 60;
    /// See `gather_small_block_bytes` (Open MPI tuned, 10).
    gather_small_comm_procs = 10;
    /// Scatter blocks below this use binomial on more than `scatter_small_comm_procs` ranks, else
    /// linear (Open MPI tuned, 300).
    scatter_small_block_bytes = 300;
    /// See `scatter_small_block_bytes` (Open MPI tuned, 10).
    scatter_small_comm_procs = 10;
    /// Reduce_scatter totals up to this use recursive halving (Open MPI tuned, 12 KiB).
    reduce_scatter_small_bytes = 12288;
    /// ... and up to this on powers of two (Open MPI tuned, 256 KiB); larger ones use ring.
    reduce_scatter_large_bytes = 262144;
    /// ... and also while total <= (p - 8) * this, i.e. on communicators that are large for the
    /// message (Open MPI tuned's linear rule p >= 0.0012 * total + 8).
    reduce_scatter_halving_bytes_per_rank = 833;
}

/// User overrides: `--coll-algo allreduce=ring,bcast=binomial`.  For a kind listed more than once
/// the last entry wins.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AlgoOverrides(pub Vec<(CollKind, Algo)>);

impl AlgoOverrides {
    /// Parses `kind=algo[,kind=algo...]` (`;` separates too; blanks are ignored).  Kinds are MPI
    /// names, case-insensitive, with or without `MPI_` (`allreduce`, `Reduce_scatter_block`, `-` for
    /// `_`); algorithms as in [`Algo::from_name`], e.g. `bcast=pipeline:64k`.  Errors name the bad
    /// part and list the valid names.
    pub fn parse(s: &str) -> Result<AlgoOverrides, CollError> {
        let mut out = Vec::new();
        for item in s.split([',', ';']).map(str::trim).filter(|x| !x.is_empty()) {
            let (k, a) = item.split_once('=').ok_or_else(|| {
                CollError(format!(
                    "collective algorithm override '{item}' is not of the form kind=algorithm \
                     (e.g. allreduce=ring)"
                ))
            })?;
            let kind = parse_kind(k)?;
            let algo = parse_algo(kind, a)?;
            out.push((kind, algo));
        }
        Ok(AlgoOverrides(out))
    }

    /// The override for `kind`, if any (the last one given).
    pub fn get(&self, kind: CollKind) -> Option<Algo> {
        self.0.iter().rev().find(|(k, _)| *k == kind).map(|&(_, a)| a)
    }

    /// Adds (or replaces) the override for `kind`.
    pub fn set(&mut self, kind: CollKind, algo: Algo) {
        self.0.retain(|(k, _)| *k != kind);
        self.0.push((kind, algo));
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl std::fmt::Display for AlgoOverrides {
    /// The form `parse` reads: `allreduce=ring,bcast=pipeline:65536`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, (k, a)) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{}={}", k.name().to_ascii_lowercase(), a)?;
        }
        Ok(())
    }
}

impl std::str::FromStr for AlgoOverrides {
    type Err = CollError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        AlgoOverrides::parse(s)
    }
}

fn parse_kind(s: &str) -> Result<CollKind, CollError> {
    let norm: String = s.trim().chars().map(|c| if c == '-' { '_' } else { c }).collect();
    CollKind::from_name(&norm)
        .or_else(|| {
            // Nonblocking names (Iallreduce) select the blocking kind's algorithm.
            let stripped = norm.strip_prefix("MPI_").unwrap_or(&norm);
            stripped.strip_prefix(['I', 'i']).and_then(CollKind::from_name)
        })
        .ok_or_else(|| {
            CollError(format!(
                "unknown collective '{}'; valid: {}",
                s.trim(),
                CollKind::ALL.iter().map(|k| k.name().to_ascii_lowercase()).collect::<Vec<_>>().join(", ")
            ))
        })
}

/// The `bytes` argument of [`select`] for this call, computed from one rank's arguments so that
/// every rank of a (consistent) call gets the same value.  It is the trace's `bytes` where that is
/// the same on all ranks, else the closest such size:
/// * Bcast, Reduce, Allreduce, Scan, Exscan: the vector (`bytes`, or `recv_bytes` when 0);
/// * Gather: each rank's contribution (`bytes`, or the root's `recv_bytes / p`);
///   Scatter: each rank's part (`recv_bytes`, or the root's `bytes / p`);
/// * Allgather: each rank's contribution (`bytes`, or `recv_bytes / p`); [`select`] multiplies by p;
///   Allgatherv: all ranks' data together (sum of `recv_counts`, else `recv_bytes`, else p × `bytes`);
/// * Alltoall: the whole send buffer (`bytes`, or `recv_bytes`); [`select`] divides by p;
/// * Reduce_scatter: the whole vector (sum of `recv_counts`, else `bytes`); Reduce_scatter_block:
///   `bytes` (else p × `recv_bytes`);
/// * Barrier, Gatherv, Scatterv, Alltoallv: 0 (no size all ranks know; their rules ignore it).
pub fn selection_bytes(args: &CollArgs) -> u64 {
    let p = args.size.max(1) as u64;
    let either = |a: u64, b: u64| if a > 0 { a } else { b };
    match args.kind {
        CollKind::Bcast | CollKind::Reduce | CollKind::Allreduce | CollKind::Scan | CollKind::Exscan => {
            either(args.bytes, args.recv_bytes)
        }
        CollKind::Gather => either(args.bytes, args.recv_bytes / p),
        CollKind::Scatter => either(args.recv_bytes, args.bytes / p),
        CollKind::Allgather => either(args.bytes, args.recv_bytes / p),
        CollKind::Allgatherv => match args.recv_counts {
            Some(c) => c.iter().fold(0u64, |a, &x| a.saturating_add(x)),
            None => either(args.recv_bytes, args.bytes.saturating_mul(p)),
        },
        CollKind::Alltoall => either(args.bytes, args.recv_bytes),
        CollKind::ReduceScatter => match args.recv_counts {
            Some(c) => c.iter().fold(0u64, |a, &x| a.saturating_add(x)),
            None => either(args.bytes, args.recv_bytes.saturating_mul(p)),
        },
        CollKind::ReduceScatterBlock => either(args.bytes, args.recv_bytes.saturating_mul(p)),
        CollKind::Barrier | CollKind::Gatherv | CollKind::Scatterv | CollKind::Alltoallv => 0,
    }
}

/// `select(args.kind, args.size, selection_bytes(args), th, ov)`.
pub fn select_for(args: &CollArgs, th: &Thresholds, ov: &AlgoOverrides) -> Algo {
    select(args.kind, args.size, selection_bytes(args), th, ov)
}

/// The algorithm for a call of `kind` on `size` ranks moving `bytes` (as [`selection_bytes`]
/// defines them per kind).
///
/// An override wins, with three adjustments: a pipelined algorithm with segment 0 gets the
/// threshold's segment size (`bcast_segment_bytes` / `reduce_segment_bytes`); an algorithm that
/// needs a power-of-two communicator falls back on other sizes (Allgather(v) `recursive_doubling` →
/// `bruck`, which has the same ceil(log2 p) steps and is what MPICH uses there; Bcast
/// `scatter_rd_allgather` → `scatter_allgather`, MPICH's choice there); an override that is not
/// valid for the kind at all (only possible by building [`AlgoOverrides`] by hand) is ignored.
/// `binomial` for Gatherv/Scatterv is kept, but only works when every rank knows the counts.
///
/// Default rules (thresholds in [`Thresholds`]):
/// * Barrier: dissemination.
/// * Bcast: binomial for p <= 2, below `bcast_small_bytes`, or on fewer than `bcast_min_procs`
///   ranks below `bcast_long_bytes`; below `bcast_long_bytes`: scatter_rd_allgather on powers of
///   two, else scatter_allgather; from `bcast_long_bytes`: pipeline (`bcast_segment_bytes`) when
///   there are at least p segments, else scatter_allgather.
/// * Reduce: linear for p < `reduce_small_comm_procs` and bytes < `reduce_linear_bytes`; binomial
///   below `reduce_small_bytes` (or `reduce_small_comm_bytes` on small communicators); else
///   pipeline (`reduce_segment_bytes`) when there are at least p segments, else
///   pipelined_binomial.
/// * Allreduce: recursive_doubling below `allreduce_small_bytes` or below the power-of-two part of
///   p; ring when bytes / p >= `allreduce_ring_min_block_bytes`; else rabenseifner.
/// * Gather: linear above `gather_linear_block_bytes`; binomial on more than
///   `gather_large_comm_procs` ranks, or more than `gather_small_comm_procs` below
///   `gather_small_block_bytes`; else linear.  Gatherv, Scatterv: linear (both libraries).
/// * Scatter: binomial on more than `scatter_small_comm_procs` ranks below
///   `scatter_small_block_bytes`, else linear.
/// * Allgather(v) (on the total: p × bytes for Allgather, bytes for Allgatherv): recursive_doubling
///   on powers of two below
///   `allgather_long_bytes`; bruck below `allgather_small_bytes`; else ring.
/// * Alltoall (on the block, bytes / p): bruck up to `alltoall_small_bytes` on at least
///   `alltoall_bruck_min_procs` ranks; scattered (blocks of `alltoall_throttle_procs` peers) up to
///   `alltoall_medium_bytes`; else pairwise (MPICH).
///   Alltoallv: pairwise (Open MPI tuned).
/// * Reduce_scatter(_block) (on the total): recursive_halving up to `reduce_scatter_small_bytes`,
///   up to `reduce_scatter_large_bytes` on powers of two, or while total <= (p - 8) ×
///   `reduce_scatter_halving_bytes_per_rank`; else ring.
/// * Scan, Exscan: recursive_doubling (MPICH).
pub fn select(kind: CollKind, size: u32, bytes: u64, th: &Thresholds, ov: &AlgoOverrides) -> Algo {
    let p = size.max(1) as u64;
    if let Some(a) = ov.get(kind) {
        if crate::algorithms_for(kind).contains(&a.name()) {
            return adjust(kind, p, with_segment(kind, a, th));
        }
    }
    let seg_count = |seg: u64| if seg == 0 { 1 } else { bytes.div_ceil(seg) };
    let n = bytes;
    match kind {
        CollKind::Barrier => Algo::Dissemination,
        CollKind::Bcast => {
            if p <= 2 || n < th.bcast_small_bytes || (p < th.bcast_min_procs && n < th.bcast_long_bytes) {
                Algo::Binomial
            } else if n < th.bcast_long_bytes {
                if is_pow2(p) {
                    Algo::ScatterRdAllgather
                } else {
                    Algo::ScatterAllgather
                }
            } else if seg_count(th.bcast_segment_bytes) >= p {
                Algo::PipelinedChain { segment: th.bcast_segment_bytes }
            } else {
                Algo::ScatterAllgather
            }
        }
        CollKind::Reduce => {
            let small_comm = p < th.reduce_small_comm_procs;
            if small_comm && n < th.reduce_linear_bytes {
                Algo::Linear
            } else if n < th.reduce_small_bytes || (small_comm && n < th.reduce_small_comm_bytes) {
                Algo::Binomial
            } else if seg_count(th.reduce_segment_bytes) >= p {
                Algo::PipelinedChain { segment: th.reduce_segment_bytes }
            } else {
                Algo::PipelinedBinomial { segment: th.reduce_segment_bytes }
            }
        }
        CollKind::Allreduce => {
            if n < th.allreduce_small_bytes || n < crate::util::prev_pow2(p) {
                Algo::RecursiveDoubling
            } else if n / p >= th.allreduce_ring_min_block_bytes {
                Algo::Ring
            } else {
                Algo::Rabenseifner
            }
        }
        CollKind::Gather => {
            if n > th.gather_linear_block_bytes {
                Algo::Linear
            } else if p > th.gather_large_comm_procs
                || (p > th.gather_small_comm_procs && n < th.gather_small_block_bytes)
            {
                Algo::Binomial
            } else {
                Algo::Linear
            }
        }
        CollKind::Scatter => {
            if p > th.scatter_small_comm_procs && n < th.scatter_small_block_bytes {
                Algo::Binomial
            } else {
                Algo::Linear
            }
        }
        CollKind::Gatherv | CollKind::Scatterv => Algo::Linear,
        CollKind::Allgather | CollKind::Allgatherv => {
            // The rules are on the total gathered.
            let total = if kind == CollKind::Allgather { n.saturating_mul(p) } else { n };
            if is_pow2(p) && total < th.allgather_long_bytes {
                Algo::RecursiveDoubling
            } else if total < th.allgather_small_bytes {
                Algo::Bruck
            } else {
                Algo::Ring
            }
        }
        CollKind::Alltoall => {
            // The rules are on one block (bytes per peer).
            let block = n / p;
            if block <= th.alltoall_small_bytes && p >= th.alltoall_bruck_min_procs {
                Algo::Bruck
            } else if block <= th.alltoall_medium_bytes {
                scattered(th)
            } else {
                Algo::Pairwise
            }
        }
        CollKind::Alltoallv => Algo::Pairwise,
        CollKind::ReduceScatter | CollKind::ReduceScatterBlock => {
            let large_comm = p > 8 && n <= (p - 8).saturating_mul(th.reduce_scatter_halving_bytes_per_rank);
            if n <= th.reduce_scatter_small_bytes || (is_pow2(p) && n <= th.reduce_scatter_large_bytes) || large_comm {
                Algo::RecursiveHalving
            } else {
                Algo::Ring
            }
        }
        CollKind::Scan | CollKind::Exscan => Algo::RecursiveDoubling,
    }
}

/// Gives a pipelined algorithm without a segment size the threshold's.
fn with_segment(kind: CollKind, a: Algo, th: &Thresholds) -> Algo {
    let seg = if kind == CollKind::Reduce { th.reduce_segment_bytes } else { th.bcast_segment_bytes };
    match a {
        Algo::Scattered { block: 0 } => scattered(th),
        Algo::PipelinedChain { segment: 0 } => Algo::PipelinedChain { segment: seg },
        Algo::PipelinedBinomial { segment: 0 } => Algo::PipelinedBinomial { segment: seg },
        a => a,
    }
}

/// The scattered Alltoall with the thresholds' block; linear (everything at once) for a block of 0.
fn scattered(th: &Thresholds) -> Algo {
    match th.alltoall_throttle_procs {
        0 => Algo::Linear,
        block => Algo::Scattered { block },
    }
}

/// Replaces an algorithm that cannot run on `p` ranks by the closest one that can.
fn adjust(kind: CollKind, p: u64, a: Algo) -> Algo {
    if !needs_pow2(kind, a) || is_pow2(p) {
        return a;
    }
    match a {
        Algo::ScatterRdAllgather => Algo::ScatterAllgather,
        _ => Algo::Bruck,
    }
}

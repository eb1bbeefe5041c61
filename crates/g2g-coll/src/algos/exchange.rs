//! Allgather(v) and Alltoall(v).

use super::Ctx;
use crate::util::{sendrecv_round, step, sub_mod, Blocks};
use crate::{Algo, CollArgs, CollKind, Round};

/// Allgather (`bytes` = each rank's contribution) and Allgatherv (`recv_counts` = every rank's
/// contribution; `bytes` for everyone when missing).
/// * ring: p - 1 steps; step k sends block r - k to r + 1 and receives block r - k - 1 from r - 1.
/// * bruck (MPICH/Open MPI, any p): ceil(log2 p) steps; step with distance d sends the
///   min(d, p - d) blocks starting at its own to r - d and receives as many from r + d.
/// * recursive_doubling (power-of-two p): step with distance d exchanges the aligned group of d
///   blocks with r ^ d.
/// * linear: everyone sends its block to everyone in one round.
pub(crate) fn allgather(algo: Algo, c: &Ctx, args: &CollArgs) -> Vec<Round> {
    let (p, r) = (c.p, c.r);
    let blocks = match (args.kind, args.recv_counts) {
        (CollKind::Allgatherv, Some(cs)) => Blocks::Counts(cs),
        _ => Blocks::Uniform { size: if args.bytes > 0 { args.bytes } else { args.recv_bytes / p } },
    };
    if blocks.total(p) == 0 {
        return Vec::new();
    }
    match algo {
        Algo::Bruck => {
            let mut rounds = Vec::with_capacity(crate::util::ceil_log2(p) as usize);
            let mut d = 1u64;
            while d < p {
                let cnt = d.min(p - d);
                let to = sub_mod(r, d, p) as u32;
                let from = ((r + d) % p) as u32;
                rounds.push(sendrecv_round(to, blocks.sum_circ(r, cnt, p), from, blocks.sum_circ(r + d, cnt, p), 0));
                d <<= 1;
            }
            rounds
        }
        Algo::RecursiveDoubling => {
            let mut rounds = Vec::with_capacity(crate::util::ceil_log2(p) as usize);
            let mut d = 1u64;
            while d < p {
                let partner = r ^ d;
                let (mine, theirs) = (r & !(d - 1), partner & !(d - 1));
                rounds.push(sendrecv_round(
                    partner as u32,
                    blocks.sum(mine, mine + d),
                    partner as u32,
                    blocks.sum(theirs, theirs + d),
                    0,
                ));
                d <<= 1;
            }
            rounds
        }
        Algo::Linear => {
            let own = blocks.get(r);
            let others = (1..p).map(|i| (r + i) % p);
            vec![Round {
                sends: others.clone().map(|j| step(j as u32, own)).collect(),
                recvs: others.map(|j| step(j as u32, blocks.get(j))).collect(),
                reduce_bytes: 0,
            }]
        }
        // Ring (and the default).
        _ => {
            let (right, left) = (((r + 1) % p) as u32, ((r + p - 1) % p) as u32);
            (0..p - 1)
                .map(|k| {
                    let s = blocks.get(sub_mod(r, k, p));
                    let g = blocks.get(sub_mod(r, k + 1, p));
                    sendrecv_round(right, s, left, g, 0)
                })
                .collect()
        }
    }
}

/// Number of j in 0..p whose bit `d` (a power of two) is set: the blocks Bruck's alltoall moves in
/// the step of distance d.
fn blocks_with_bit(p: u64, d: u64) -> u64 {
    (p / (2 * d)) * d + (p % (2 * d)).saturating_sub(d)
}

/// Alltoall (`bytes` = whole send buffer, p equal blocks) and Alltoallv (`counts` = bytes to each
/// rank, `recv_counts` = bytes from each rank).
/// * pairwise (Open MPI/MPICH long): step i = 1..p-1 sends to (r + i) mod p and receives from
///   (r - i) mod p.
/// * bruck (MPICH short on >= 8 ranks, Open MPI tiny; Alltoall only): ceil(log2 p) steps; the step
///   of distance d sends every block whose (rotated) index has bit d set to r + d and receives as
///   many from r - d.
/// * scattered (MPICH medium): the peers at offsets k = 1..p-1 (send to r + k, receive from
///   r - k; MPICH's own order is the mirror image, k -> -k) in blocks of `block` offsets counted
///   from 0, the rank itself (so the first block holds one peer fewer); one round per block.  A
///   block of 0 or of at least p is one round: linear.
/// * linear: all sends and receives posted at once.
pub(crate) fn alltoall(algo: Algo, c: &Ctx, args: &CollArgs) -> Vec<Round> {
    let (p, r) = (c.p, c.r);
    let (sends, recvs) = if args.kind == CollKind::Alltoallv {
        let send_default = args.bytes / p;
        let recv_default = if args.recv_bytes > 0 { args.recv_bytes / p } else { send_default };
        (
            args.counts.map_or(Blocks::Uniform { size: send_default }, Blocks::Counts),
            args.recv_counts.map_or(Blocks::Uniform { size: recv_default }, Blocks::Counts),
        )
    } else {
        let block = if args.bytes > 0 { args.bytes / p } else { args.recv_bytes / p };
        if block == 0 {
            return Vec::new();
        }
        (Blocks::Uniform { size: block }, Blocks::Uniform { size: block })
    };
    match algo {
        Algo::Bruck => {
            let block = sends.get(0);
            let mut rounds = Vec::with_capacity(crate::util::ceil_log2(p) as usize);
            let mut d = 1u64;
            while d < p {
                let sz = blocks_with_bit(p, d).saturating_mul(block);
                rounds.push(sendrecv_round(((r + d) % p) as u32, sz, sub_mod(r, d, p) as u32, sz, 0));
                d <<= 1;
            }
            rounds
        }
        Algo::Linear | Algo::Scattered { .. } => {
            let block = match algo {
                Algo::Scattered { block } if block > 0 && block < p => block,
                _ => p,
            };
            let round = |offsets: std::ops::Range<u64>| {
                let others = offsets.map(|i| ((r + i) % p, sub_mod(r, i, p)));
                Round {
                    sends: others.clone().map(|(to, _)| step(to as u32, sends.get(to))).collect(),
                    recvs: others.map(|(_, from)| step(from as u32, recvs.get(from))).collect(),
                    reduce_bytes: 0,
                }
            };
            if block == p {
                return vec![round(1..p)]; // linear: one round (empty on one rank)
            }
            // a block holding only the rank itself (block 1, offset 0) has no round
            (0..p)
                .step_by(block as usize)
                .map(|first| first.max(1)..(first + block).min(p))
                .filter(|offsets| !offsets.is_empty())
                .map(round)
                .collect()
        }
        // Pairwise (and the default).
        _ => (1..p)
            .map(|i| {
                let (to, from) = ((r + i) % p, sub_mod(r, i, p));
                sendrecv_round(to as u32, sends.get(to), from as u32, recvs.get(from), 0)
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::blocks_with_bit;

    #[test]
    fn bit_counts() {
        for p in 1..70u64 {
            let mut d = 1;
            while d < 128 {
                let direct = (0..p).filter(|j| j & d != 0).count() as u64;
                assert_eq!(blocks_with_bit(p, d), direct, "p={p} d={d}");
                d <<= 1;
            }
        }
    }
}

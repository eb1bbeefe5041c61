//! Allreduce, Reduce_scatter(_block), Scan and Exscan.

use super::rooted::{binomial_bcast, binomial_reduce};
use super::Ctx;
use crate::util::{prev_pow2, recv_round, send_round, sendrecv_round, step, sub_mod, Blocks};
use crate::{Algo, CollArgs, CollKind, Round};

/// The standard non-power-of-two fold (MPICH, Open MPI, Rabenseifner): with pof2 the largest power
/// of two <= p and rem = p - pof2, each even rank below 2*rem hands its data to the odd rank above it
/// and sits out; the pof2 remaining ranks get new ranks 0..pof2.
struct Fold {
    pof2: u64,
    rem: u64,
}

impl Fold {
    fn new(p: u64) -> Fold {
        let pof2 = prev_pow2(p);
        Fold { pof2, rem: p - pof2 }
    }
    /// New rank of real rank `r`, or None for the even ranks that sit out.
    fn newrank(&self, r: u64) -> Option<u64> {
        if r < 2 * self.rem {
            (r % 2 == 1).then_some(r / 2)
        } else {
            Some(r - self.rem)
        }
    }
    /// Real rank of new rank `nr`.
    fn real(&self, nr: u64) -> u32 {
        (if nr < self.rem { 2 * nr + 1 } else { nr + self.rem }) as u32
    }
    /// First real block index of new rank `nr` (new rank i < rem owns real blocks 2i and 2i+1).
    fn first_block(&self, nr: u64) -> u64 {
        if nr <= self.rem {
            2 * nr
        } else {
            nr + self.rem
        }
    }
    /// Pre-step: the even ranks below 2*rem send `n` bytes to r + 1, which combines them.
    fn pre(&self, r: u64, n: u64, rounds: &mut Vec<Round>) {
        if r < 2 * self.rem {
            if r.is_multiple_of(2) {
                rounds.push(send_round((r + 1) as u32, n));
            } else {
                rounds.push(recv_round((r - 1) as u32, n, n));
            }
        }
    }
}

/// Recursive halving reduce-scatter among the pof2 folded ranks, distance pof2/2 first: at each step
/// a rank keeps the half of its current block range that its side of the pair owns, sends the other
/// half to its partner and combines the half it receives.  Afterwards new rank i holds block i
/// (`sum(a, b)` is the size of new-rank blocks a..b).
fn halving(fold: &Fold, nr: u64, sum: &dyn Fn(u64, u64) -> u64, rounds: &mut Vec<Round>) {
    let (mut lo, mut hi) = (0u64, fold.pof2);
    let mut d = fold.pof2 / 2;
    while d >= 1 {
        let partner = fold.real(nr ^ d);
        let mid = lo + d;
        let (keep, give) = if nr & d == 0 { ((lo, mid), (mid, hi)) } else { ((mid, hi), (lo, mid)) };
        let k = sum(keep.0, keep.1);
        rounds.push(sendrecv_round(partner, sum(give.0, give.1), partner, k, k));
        (lo, hi) = keep;
        d /= 2;
    }
}

/// Allreduce of an `n`-byte vector.
/// * recursive_doubling (MPICH short, Open MPI small): fold, then log2(pof2) exchanges of the whole
///   vector with partner newrank ^ 2^k (combining n bytes each), then the odd ranks send the result
///   back to the even ranks that sat out.
/// * rabenseifner (MPICH long): fold, recursive-halving reduce-scatter of pof2 blocks (n/pof2 bytes,
///   remainder on the first blocks), recursive-doubling allgather, unfold.
/// * ring (Open MPI large): p blocks (n/p, remainder on the first); p - 1 reduce-scatter steps to the
///   right neighbour (step k sends block r - k, receives and combines block r - k - 1), then p - 1
///   allgather steps (step k sends block r + 1 - k, receives block r - k).
/// * reduce_bcast (Open MPI "nonoverlapping"): binomial reduce to rank 0, then binomial bcast.
pub(crate) fn allreduce(algo: Algo, c: &Ctx, n: u64) -> Vec<Round> {
    if n == 0 {
        return Vec::new();
    }
    let (p, r) = (c.p, c.r);
    match algo {
        Algo::Ring => {
            let blocks = Blocks::Even { total: n, n: p };
            let (right, left) = (((r + 1) % p) as u32, ((r + p - 1) % p) as u32);
            let mut rounds = Vec::with_capacity(2 * (p as usize - 1));
            for k in 0..p - 1 {
                let s = blocks.get(sub_mod(r, k, p));
                let g = blocks.get(sub_mod(r, k + 1, p));
                rounds.push(sendrecv_round(right, s, left, g, g));
            }
            for k in 0..p - 1 {
                let s = blocks.get(sub_mod((r + 1) % p, k, p));
                let g = blocks.get(sub_mod(r, k, p));
                rounds.push(sendrecv_round(right, s, left, g, 0));
            }
            rounds
        }
        Algo::ReduceBcast => {
            let c0 = Ctx { p, r, root: 0 };
            let mut rounds = binomial_reduce(&c0, n);
            rounds.extend(binomial_bcast(&c0, n));
            rounds
        }
        Algo::Rabenseifner => {
            let fold = Fold::new(p);
            let mut rounds = Vec::new();
            fold.pre(r, n, &mut rounds);
            if let Some(nr) = fold.newrank(r) {
                let blocks = Blocks::Even { total: n, n: fold.pof2 };
                halving(&fold, nr, &|a, b| blocks.sum(a, b), &mut rounds);
                let mut d = 1u64;
                while d < fold.pof2 {
                    let pn = nr ^ d;
                    let partner = fold.real(pn);
                    let (mine, theirs) = (nr & !(d - 1), pn & !(d - 1));
                    rounds.push(sendrecv_round(
                        partner,
                        blocks.sum(mine, mine + d),
                        partner,
                        blocks.sum(theirs, theirs + d),
                        0,
                    ));
                    d <<= 1;
                }
            }
            unfold(&fold, r, n, &mut rounds);
            rounds
        }
        // RecursiveDoubling (and the default).
        _ => {
            let fold = Fold::new(p);
            let mut rounds = Vec::new();
            fold.pre(r, n, &mut rounds);
            if let Some(nr) = fold.newrank(r) {
                let mut d = 1u64;
                while d < fold.pof2 {
                    let partner = fold.real(nr ^ d);
                    rounds.push(sendrecv_round(partner, n, partner, n, n));
                    d <<= 1;
                }
            }
            unfold(&fold, r, n, &mut rounds);
            rounds
        }
    }
}

/// Post-step of allreduce: the odd ranks below 2*rem send the result to the even rank below them.
fn unfold(fold: &Fold, r: u64, n: u64, rounds: &mut Vec<Round>) {
    if r < 2 * fold.rem {
        if r % 2 == 1 {
            rounds.push(send_round((r - 1) as u32, n));
        } else {
            rounds.push(recv_round((r + 1) as u32, n, 0));
        }
    }
}

/// Reduce_scatter (rank i gets `recv_counts[i]` bytes; equal blocks of the `bytes` vector when the
/// counts are missing) and Reduce_scatter_block (`bytes` = whole vector, p equal blocks).
/// * recursive_halving (MPICH short, Open MPI small; any p): fold (the even rank sends the whole
///   vector), recursive halving where new rank i < rem owns the blocks of real ranks 2i and 2i+1,
///   then each odd rank below 2*rem sends the even rank below it its block.
/// * ring (Open MPI large): p - 1 steps to the right neighbour; step k sends block r - k - 1 and
///   receives/combines block r - k - 2, so rank r ends with block r.
/// * pairwise (MPICH long): step i = 1..p-1 sends block (r + i) to rank r + i and receives/combines
///   rank (r - i)'s contribution to block r.
/// * reduce_scatterv (Open MPI "nonoverlapping"): binomial reduce to rank 0, linear scatterv.
pub(crate) fn reduce_scatter(algo: Algo, c: &Ctx, args: &CollArgs) -> Vec<Round> {
    let (p, r) = (c.p, c.r);
    let blocks = match (args.kind, args.recv_counts) {
        (CollKind::ReduceScatter, Some(cs)) => Blocks::Counts(cs),
        _ => {
            let total = if args.bytes > 0 { args.bytes } else { args.recv_bytes.saturating_mul(p) };
            Blocks::Even { total, n: p }
        }
    };
    let total = blocks.total(p);
    if total == 0 {
        return Vec::new();
    }
    match algo {
        Algo::Ring => {
            let (right, left) = (((r + 1) % p) as u32, ((r + p - 1) % p) as u32);
            (0..p - 1)
                .map(|k| {
                    let s = blocks.get(sub_mod(r, k + 1, p));
                    let g = blocks.get(sub_mod(r, k + 2, p));
                    sendrecv_round(right, s, left, g, g)
                })
                .collect()
        }
        Algo::Pairwise => {
            let own = blocks.get(r);
            (1..p)
                .map(|i| {
                    let dst = (r + i) % p;
                    let src = sub_mod(r, i, p);
                    sendrecv_round(dst as u32, blocks.get(dst), src as u32, own, own)
                })
                .collect()
        }
        Algo::ReduceScatterv => {
            let mut rounds = binomial_reduce(&Ctx { p, r, root: 0 }, total);
            if r == 0 {
                rounds
                    .push(Round { sends: (1..p).map(|i| step(i as u32, blocks.get(i))).collect(), ..Round::default() });
            } else {
                rounds.push(recv_round(0, blocks.get(r), 0));
            }
            rounds
        }
        // RecursiveHalving (and the default).
        _ => {
            let fold = Fold::new(p);
            let mut rounds = Vec::new();
            fold.pre(r, total, &mut rounds);
            if let Some(nr) = fold.newrank(r) {
                let sum = |a: u64, b: u64| blocks.sum(fold.first_block(a), fold.first_block(b));
                halving(&fold, nr, &sum, &mut rounds);
            }
            if r < 2 * fold.rem {
                if r % 2 == 1 {
                    rounds.push(send_round((r - 1) as u32, blocks.get(r - 1)));
                } else {
                    rounds.push(recv_round((r + 1) as u32, blocks.get(r), 0));
                }
            }
            rounds
        }
    }
}

/// Scan / Exscan of an `n`-byte vector.
/// * linear (Open MPI basic): a chain; rank r > 0 receives the prefix from r - 1, combines, and
///   sends the new prefix to r + 1.  Exscan: the last rank need not combine.
/// * recursive_doubling (MPICH): for each mask, exchange the partial scan with r ^ mask (when it
///   exists).  Scan: a rank above its partner combines twice (partial and result), else once.
///   Exscan: as Scan, except that the first contribution from below is copied, not combined.
pub(crate) fn scan(algo: Algo, c: &Ctx, n: u64, exclusive: bool) -> Vec<Round> {
    if n == 0 {
        return Vec::new();
    }
    let (p, r) = (c.p, c.r);
    match algo {
        Algo::Linear => {
            let mut rounds = Vec::with_capacity(2);
            if r > 0 {
                let red = if exclusive && r == p - 1 { 0 } else { n };
                rounds.push(recv_round((r - 1) as u32, n, red));
            }
            if r + 1 < p {
                rounds.push(send_round((r + 1) as u32, n));
            }
            rounds
        }
        _ => {
            let mut rounds = Vec::new();
            let mut mask = 1u64;
            while mask < p {
                let dst = r ^ mask;
                if dst < p {
                    let red = if r > dst {
                        if exclusive && mask == crate::util::lowbit(r) {
                            n
                        } else {
                            n.saturating_mul(2)
                        }
                    } else {
                        n
                    };
                    rounds.push(sendrecv_round(dst as u32, n, dst as u32, n, red));
                }
                mask <<= 1;
            }
            rounds
        }
    }
}

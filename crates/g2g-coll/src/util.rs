//! Small helpers shared by the algorithms: power-of-two arithmetic, binomial trees, block sizes and
//! round builders.  Everything index-like is computed in `u64` so that communicators close to
//! `u32::MAX` ranks cannot overflow.

use crate::{Round, Step, Steps};
use smallvec::smallvec;

/// Largest power of two `<= p` (`p >= 1`).
pub(crate) fn prev_pow2(p: u64) -> u64 {
    debug_assert!(p >= 1);
    1u64 << (63 - p.leading_zeros())
}

/// `ceil(log2 p)` for `p >= 1`.
pub(crate) fn ceil_log2(p: u64) -> u32 {
    if p <= 1 {
        0
    } else {
        64 - (p - 1).leading_zeros()
    }
}

pub(crate) fn is_pow2(p: u64) -> bool {
    p != 0 && p & (p - 1) == 0
}

/// Lowest set bit of `v` (`v > 0`).
pub(crate) fn lowbit(v: u64) -> u64 {
    v & v.wrapping_neg()
}

/// Rank in the communicator of virtual rank `v` (virtual ranks are relative to `root`).
pub(crate) fn real(v: u64, root: u64, p: u64) -> u32 {
    ((v + root) % p) as u32
}

/// Virtual rank (relative to `root`) of real rank `r`.
pub(crate) fn virt(r: u64, root: u64, p: u64) -> u64 {
    (r + p - root) % p
}

/// `(a - b) mod p` for `a, b < p`.
pub(crate) fn sub_mod(a: u64, b: u64, p: u64) -> u64 {
    (a + p - (b % p)) % p
}

// ---------------------------------------------------------------------------------------------
// Binomial tree over virtual ranks 0..p (root = 0), as in MPICH: the parent of v is v minus its
// lowest set bit; children are v + m for the powers of two m below lowbit(v) (below p for the root).
// ---------------------------------------------------------------------------------------------

pub(crate) fn bino_parent(v: u64) -> Option<u64> {
    if v == 0 {
        None
    } else {
        Some(v - lowbit(v))
    }
}

/// The largest child offset of `v`: children are `v + m` for `m = top, top/2, ..., 1` with `v + m < p`.
fn bino_top_mask(v: u64, p: u64) -> u64 {
    if v == 0 {
        if p <= 1 {
            0
        } else {
            prev_pow2(p - 1)
        }
    } else {
        lowbit(v) >> 1
    }
}

/// Children of `v`, largest subtree first (the order MPICH's binomial bcast/scatter sends in).
pub(crate) fn bino_children_desc(v: u64, p: u64) -> impl Iterator<Item = u64> {
    let top = bino_top_mask(v, p);
    let mut m = top;
    std::iter::from_fn(move || {
        while m > 0 {
            let c = v + m;
            m >>= 1;
            if c < p {
                return Some(c);
            }
        }
        None
    })
}

/// Children of `v`, smallest subtree first (the order MPICH's binomial reduce/gather receive in).
pub(crate) fn bino_children_asc(v: u64, p: u64) -> impl Iterator<Item = u64> {
    let top = bino_top_mask(v, p);
    let mut m = 1u64;
    std::iter::from_fn(move || {
        while m <= top && top > 0 {
            let c = v + m;
            m <<= 1;
            if c < p {
                return Some(c);
            }
        }
        None
    })
}

/// Number of virtual ranks in the subtree rooted at `v` (`v` itself included).
pub(crate) fn bino_subtree(v: u64, p: u64) -> u64 {
    if v == 0 {
        p
    } else {
        lowbit(v).min(p - v)
    }
}

// ---------------------------------------------------------------------------------------------
// Block sizes.
// ---------------------------------------------------------------------------------------------

/// Sizes of `n` indexed blocks, with range sums (O(1) except for explicit counts).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Blocks<'a> {
    /// `total` split over `n` blocks: block i is `total / n`, plus one byte for `i < total % n`.
    Even { total: u64, n: u64 },
    /// Every block is `size` bytes.
    Uniform { size: u64 },
    /// Chunks of `chunk` bytes covering `total` (the last one short, trailing ones empty): MPICH's
    /// split of a broadcast buffer for scatter + allgather.
    Chunked { total: u64, chunk: u64 },
    /// Explicit per-index sizes.
    Counts(&'a [u64]),
}

impl Blocks<'_> {
    /// Sum of blocks `lo..hi` (`lo <= hi`, both within the index space).
    pub(crate) fn sum(&self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            return 0;
        }
        match *self {
            Blocks::Even { total, n } => {
                if n == 0 {
                    return 0;
                }
                let (q, r) = (total / n, total % n);
                (hi - lo) * q + hi.min(r).saturating_sub(lo.min(r))
            }
            Blocks::Uniform { size } => (hi - lo).saturating_mul(size),
            Blocks::Chunked { total, chunk } => {
                let end = hi.saturating_mul(chunk).min(total);
                let start = lo.saturating_mul(chunk).min(total);
                end - start
            }
            Blocks::Counts(c) => {
                let hi = (hi as usize).min(c.len());
                let lo = (lo as usize).min(hi);
                c[lo..hi].iter().fold(0u64, |a, &x| a.saturating_add(x))
            }
        }
    }

    pub(crate) fn get(&self, i: u64) -> u64 {
        self.sum(i, i + 1)
    }

    /// Sum of the `len` blocks starting at `start` and wrapping around `n` (`len <= n`).
    pub(crate) fn sum_circ(&self, start: u64, len: u64, n: u64) -> u64 {
        if len == 0 || n == 0 {
            return 0;
        }
        let start = start % n;
        let len = len.min(n);
        if start + len <= n {
            self.sum(start, start + len)
        } else {
            self.sum(start, n).saturating_add(self.sum(0, start + len - n))
        }
    }

    /// Sum over the virtual-rank range `lo..hi` of a rooted collective whose blocks are indexed by
    /// real rank (virtual v is real (v + root) % p).
    pub(crate) fn sum_virt(&self, lo: u64, hi: u64, root: u64, p: u64) -> u64 {
        if hi <= lo {
            return 0;
        }
        self.sum_circ((lo + root) % p, hi - lo, p)
    }

    pub(crate) fn total(&self, n: u64) -> u64 {
        self.sum(0, n)
    }
}

// ---------------------------------------------------------------------------------------------
// Round builders.
// ---------------------------------------------------------------------------------------------

pub(crate) fn step(peer: u32, bytes: u64) -> Step {
    Step { peer, bytes }
}

pub(crate) fn send_round(peer: u32, bytes: u64) -> Round {
    Round { sends: smallvec![step(peer, bytes)], recvs: Steps::new(), reduce_bytes: 0 }
}

pub(crate) fn recv_round(peer: u32, bytes: u64, reduce_bytes: u64) -> Round {
    Round { sends: Steps::new(), recvs: smallvec![step(peer, bytes)], reduce_bytes }
}

pub(crate) fn sendrecv_round(to: u32, sbytes: u64, from: u32, rbytes: u64, reduce_bytes: u64) -> Round {
    Round { sends: smallvec![step(to, sbytes)], recvs: smallvec![step(from, rbytes)], reduce_bytes }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pow2_helpers() {
        assert_eq!(prev_pow2(1), 1);
        assert_eq!(prev_pow2(5), 4);
        assert_eq!(prev_pow2(8), 8);
        assert_eq!(prev_pow2(u32::MAX as u64), 1 << 31);
        assert_eq!(ceil_log2(1), 0);
        assert_eq!(ceil_log2(2), 1);
        assert_eq!(ceil_log2(5), 3);
        assert_eq!(ceil_log2(8), 3);
        assert_eq!(ceil_log2(9), 4);
        assert!(is_pow2(1) && is_pow2(16) && !is_pow2(12) && !is_pow2(0));
    }

    #[test]
    fn binomial_tree_shape() {
        let c: Vec<u64> = bino_children_desc(0, 8).collect();
        assert_eq!(c, vec![4, 2, 1]);
        let c: Vec<u64> = bino_children_asc(0, 8).collect();
        assert_eq!(c, vec![1, 2, 4]);
        let c: Vec<u64> = bino_children_desc(4, 8).collect();
        assert_eq!(c, vec![6, 5]);
        let c: Vec<u64> = bino_children_desc(4, 6).collect();
        assert_eq!(c, vec![5]);
        let c: Vec<u64> = bino_children_desc(0, 5).collect();
        assert_eq!(c, vec![4, 2, 1]);
        assert_eq!(bino_children_desc(0, 1).count(), 0);
        assert_eq!(bino_parent(6), Some(4));
        assert_eq!(bino_parent(5), Some(4));
        assert_eq!(bino_subtree(4, 6), 2);
        assert_eq!(bino_subtree(4, 8), 4);
        assert_eq!(bino_subtree(0, 7), 7);
        // Every virtual rank is in exactly one subtree of the root's children, and subtree sizes add up.
        for p in 1..40u64 {
            for v in 0..p {
                let kids: u64 = bino_children_desc(v, p).map(|c| bino_subtree(c, p)).sum();
                assert_eq!(kids + 1, bino_subtree(v, p), "p={p} v={v}");
                for c in bino_children_desc(v, p) {
                    assert_eq!(bino_parent(c), Some(v));
                }
            }
        }
    }

    #[test]
    fn block_sums() {
        let b = Blocks::Even { total: 10, n: 4 }; // 3 3 2 2
        assert_eq!((0..4).map(|i| b.get(i)).collect::<Vec<_>>(), vec![3, 3, 2, 2]);
        assert_eq!(b.sum(1, 3), 5);
        assert_eq!(b.total(4), 10);
        assert_eq!(b.sum_circ(3, 2, 4), 5);
        let c = Blocks::Chunked { total: 10, chunk: 3 }; // 3 3 3 1 0
        assert_eq!((0..5).map(|i| c.get(i)).collect::<Vec<_>>(), vec![3, 3, 3, 1, 0]);
        assert_eq!(c.sum(2, 5), 4);
        let counts = [1u64, 2, 3, 4];
        let k = Blocks::Counts(&counts);
        assert_eq!(k.sum_circ(2, 3, 4), 3 + 4 + 1);
        assert_eq!(k.sum_virt(0, 2, 3, 4), 4 + 1);
    }
}

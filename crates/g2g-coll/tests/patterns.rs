//! Exact message patterns on small communicators, and error handling.

mod common;

use common::Call;
use g2g_coll::{check_schedules, schedule, Algo, CollArgs, CollKind, Round, Step};

fn st(peer: u32, bytes: u64) -> Step {
    Step { peer, bytes }
}

fn round(sends: &[(u32, u64)], recvs: &[(u32, u64)], reduce_bytes: u64) -> Round {
    Round {
        sends: sends.iter().map(|&(p, b)| st(p, b)).collect(),
        recvs: recvs.iter().map(|&(p, b)| st(p, b)).collect(),
        reduce_bytes,
    }
}

fn sched(kind: CollKind, algo: Algo, p: u32, root: u32, n: u64, rank: u32) -> Vec<Round> {
    let call = Call::new(kind, p, root, n);
    schedule(algo, &call.args(rank)).unwrap()
}

/// Sends of each round as (peer, bytes) lists.
fn sends(rounds: &[Round]) -> Vec<Vec<(u32, u64)>> {
    rounds.iter().map(|r| r.sends.iter().map(|s| (s.peer, s.bytes)).collect()).collect()
}

fn recvs(rounds: &[Round]) -> Vec<Vec<(u32, u64)>> {
    rounds.iter().map(|r| r.recvs.iter().map(|s| (s.peer, s.bytes)).collect()).collect()
}

/// Binomial bcast, p = 8: the root sends to 4, 2, 1 (largest subtree first), one per round.
#[test]
fn binomial_bcast_p8() {
    let s = |r| sched(CollKind::Bcast, Algo::Binomial, 8, 0, 100, r);
    assert_eq!(s(0), vec![round(&[(4, 100)], &[], 0), round(&[(2, 100)], &[], 0), round(&[(1, 100)], &[], 0)]);
    assert_eq!(s(4), vec![round(&[], &[(0, 100)], 0), round(&[(6, 100)], &[], 0), round(&[(5, 100)], &[], 0)]);
    assert_eq!(s(6), vec![round(&[], &[(4, 100)], 0), round(&[(7, 100)], &[], 0)]);
    assert_eq!(s(7), vec![round(&[], &[(6, 100)], 0)]);
    // Root 3: virtual ranks are shifted by the root: 3 sends to 7, 5, 4.
    let s3 = sched(CollKind::Bcast, Algo::Binomial, 8, 3, 100, 3);
    assert_eq!(sends(&s3), vec![vec![(7, 100)], vec![(5, 100)], vec![(4, 100)]]);
    // Non-power of two: p = 5, rank 4 hangs off the root.
    let s5 = sched(CollKind::Bcast, Algo::Binomial, 5, 0, 1, 0);
    assert_eq!(sends(&s5), vec![vec![(4, 1)], vec![(2, 1)], vec![(1, 1)]]);
}

/// Binomial reduce, p = 8: receives from 1, 2, 4 (smallest subtree first), combining each.
#[test]
fn binomial_reduce_p8() {
    let s = |r| sched(CollKind::Reduce, Algo::Binomial, 8, 0, 64, r);
    assert_eq!(s(0), vec![round(&[], &[(1, 64)], 64), round(&[], &[(2, 64)], 64), round(&[], &[(4, 64)], 64)]);
    assert_eq!(s(6), vec![round(&[], &[(7, 64)], 64), round(&[(4, 64)], &[], 0)]);
    assert_eq!(s(7), vec![round(&[(6, 64)], &[], 0)]);
}

/// Dissemination barrier, p = 5: round k sends to (r + 2^k) % 5 and receives from (r - 2^k) % 5.
#[test]
fn dissemination_barrier_p5() {
    for r in 0..5u32 {
        let s = sched(CollKind::Barrier, Algo::Dissemination, 5, 0, 0, r);
        assert_eq!(s.len(), 3);
        for (k, rd) in s.iter().enumerate() {
            let d = 1u32 << k;
            assert_eq!(rd.sends.to_vec(), vec![st((r + d) % 5, 0)], "rank {r} round {k}");
            assert_eq!(rd.recvs.to_vec(), vec![st((r + 5 - d) % 5, 0)], "rank {r} round {k}");
        }
    }
}

/// Recursive-doubling allreduce, p = 4: partners r^1 then r^2, whole vector, combining each time.
#[test]
fn recursive_doubling_allreduce_p4_and_p6() {
    for r in 0..4u32 {
        let s = sched(CollKind::Allreduce, Algo::RecursiveDoubling, 4, 0, 80, r);
        assert_eq!(s, vec![round(&[(r ^ 1, 80)], &[(r ^ 1, 80)], 80), round(&[(r ^ 2, 80)], &[(r ^ 2, 80)], 80)]);
    }
    // p = 6: pof2 = 4, rem = 2.  Ranks 0 and 2 fold into 1 and 3; new ranks 0..3 are 1, 3, 4, 5.
    let s = |r| sched(CollKind::Allreduce, Algo::RecursiveDoubling, 6, 0, 80, r);
    assert_eq!(s(0), vec![round(&[(1, 80)], &[], 0), round(&[], &[(1, 80)], 0)]);
    assert_eq!(
        s(1),
        vec![
            round(&[], &[(0, 80)], 80),
            round(&[(3, 80)], &[(3, 80)], 80),
            round(&[(4, 80)], &[(4, 80)], 80),
            round(&[(0, 80)], &[], 0)
        ]
    );
    assert_eq!(s(5), vec![round(&[(4, 80)], &[(4, 80)], 80), round(&[(3, 80)], &[(3, 80)], 80)]);
}

/// Rabenseifner, p = 4, 400 bytes: halving (200, then 100) and doubling (100, then 200).
#[test]
fn rabenseifner_p4() {
    let s = sched(CollKind::Allreduce, Algo::Rabenseifner, 4, 0, 400, 0);
    assert_eq!(
        s,
        vec![
            round(&[(2, 200)], &[(2, 200)], 200),
            round(&[(1, 100)], &[(1, 100)], 100),
            round(&[(1, 100)], &[(1, 100)], 0),
            round(&[(2, 200)], &[(2, 200)], 0),
        ]
    );
}

/// Ring allreduce, p = 4: 2(p - 1) rounds of n/p to the right neighbour.
#[test]
fn ring_allreduce_p4() {
    let s = sched(CollKind::Allreduce, Algo::Ring, 4, 0, 400, 2);
    assert_eq!(s.len(), 6);
    for (k, rd) in s.iter().enumerate() {
        assert_eq!(rd.sends.to_vec(), vec![st(3, 100)]);
        assert_eq!(rd.recvs.to_vec(), vec![st(1, 100)]);
        assert_eq!(rd.reduce_bytes, if k < 3 { 100 } else { 0 });
    }
    // Remainder blocks: 10 bytes over 4 ranks are blocks 3, 3, 2, 2.
    let s = sched(CollKind::Allreduce, Algo::Ring, 4, 0, 10, 0);
    let sent: Vec<u64> = s.iter().map(|r| r.sends[0].bytes).collect();
    // reduce-scatter sends blocks 0, 3, 2; allgather sends blocks 1, 0, 3
    assert_eq!(sent, vec![3, 2, 2, 3, 3, 2]);
}

/// Ring allgather, p = 4: round k sends block (r - k) to r + 1 (blocks told apart by size).
#[test]
fn ring_allgather_p4() {
    let counts = [10u64, 20, 30, 40];
    let args = |r: u32| CollArgs {
        kind: CollKind::Allgatherv,
        size: 4,
        rank: r,
        root: 0,
        bytes: counts[r as usize],
        recv_bytes: 100,
        counts: None,
        recv_counts: Some(&counts),
    };
    let s = schedule(Algo::Ring, &args(0)).unwrap();
    assert_eq!(sends(&s), vec![vec![(1, 10)], vec![(1, 40)], vec![(1, 30)]]);
    assert_eq!(recvs(&s), vec![vec![(3, 40)], vec![(3, 30)], vec![(3, 20)]]);
    let s = schedule(Algo::Ring, &args(2)).unwrap();
    assert_eq!(sends(&s), vec![vec![(3, 30)], vec![(3, 20)], vec![(3, 10)]]);
    // Uniform Allgather: each round one block to the right.
    let s = sched(CollKind::Allgather, Algo::Ring, 4, 0, 8, 1);
    assert_eq!(sends(&s), vec![vec![(2, 8)]; 3]);
    assert_eq!(recvs(&s), vec![vec![(0, 8)]; 3]);
}

/// Bruck allgather, p = 5, rank 0: distances 1, 2, 4; the last step moves p - 4 = 1 block.
#[test]
fn bruck_allgather_p5() {
    let s = sched(CollKind::Allgather, Algo::Bruck, 5, 0, 10, 0);
    assert_eq!(sends(&s), vec![vec![(4, 10)], vec![(3, 20)], vec![(1, 10)]]);
    assert_eq!(recvs(&s), vec![vec![(1, 10)], vec![(2, 20)], vec![(4, 10)]]);
}

/// Recursive-doubling allgather, p = 8, rank 5: partners 4, 7, 1 with 1, 2, 4 blocks.
#[test]
fn recursive_doubling_allgather_p8() {
    let s = sched(CollKind::Allgather, Algo::RecursiveDoubling, 8, 0, 3, 5);
    assert_eq!(sends(&s), vec![vec![(4, 3)], vec![(7, 6)], vec![(1, 12)]]);
}

/// Pairwise alltoall, p = 4: round i sends to (r + i) % 4 and receives from (r - i) % 4.
#[test]
fn pairwise_alltoall_p4() {
    for r in 0..4u32 {
        let s = sched(CollKind::Alltoall, Algo::Pairwise, 4, 0, 25, r);
        assert_eq!(s.len(), 3);
        for (k, rd) in s.iter().enumerate() {
            let i = k as u32 + 1;
            assert_eq!(rd.sends.to_vec(), vec![st((r + i) % 4, 25)]);
            assert_eq!(rd.recvs.to_vec(), vec![st((r + 4 - i) % 4, 25)]);
        }
    }
    // bytes is the whole send buffer: 4 blocks of 25.
    let call = Call::new(CollKind::Alltoall, 4, 0, 25);
    assert_eq!(call.args(0).bytes, 100);
}

/// Bruck alltoall, p = 5, block 10: distance 1 moves the 2 blocks with bit 0 set (1, 3), distance 2
/// the 2 with bit 1 (2, 3), distance 4 the one with bit 2 (4).
#[test]
fn bruck_alltoall_p5() {
    let s = sched(CollKind::Alltoall, Algo::Bruck, 5, 0, 10, 0);
    assert_eq!(sends(&s), vec![vec![(1, 20)], vec![(2, 20)], vec![(4, 10)]]);
    assert_eq!(recvs(&s), vec![vec![(4, 20)], vec![(3, 20)], vec![(1, 10)]]);
}

/// Linear alltoall posts everything in one round.
#[test]
fn linear_alltoall_one_round() {
    let s = sched(CollKind::Alltoall, Algo::Linear, 5, 0, 10, 2);
    assert_eq!(s.len(), 1);
    assert_eq!(s[0].sends.len(), 4);
    assert_eq!(s[0].recvs.len(), 4);
}

/// Scattered alltoall (MPICH's medium algorithm), p = 8, blocks of 3 offsets counted from the rank
/// itself: offsets 1-2, 3-5, 6-7, one round each; rank 2 sends to 2 + k, receives from 2 - k.
#[test]
fn scattered_alltoall_blocks() {
    let s = sched(CollKind::Alltoall, Algo::Scattered { block: 3 }, 8, 0, 10, 2);
    assert_eq!(sends(&s), vec![vec![(3, 10), (4, 10)], vec![(5, 10), (6, 10), (7, 10)], vec![(0, 10), (1, 10)]]);
    assert_eq!(recvs(&s), vec![vec![(1, 10), (0, 10)], vec![(7, 10), (6, 10), (5, 10)], vec![(4, 10), (3, 10)]]);
    // a block of 0, or of at least p, is linear: one round, the same messages in the same order
    let linear = sched(CollKind::Alltoall, Algo::Linear, 8, 0, 10, 2);
    assert_eq!(linear.len(), 1);
    for block in [0, 8, 100] {
        assert_eq!(sched(CollKind::Alltoall, Algo::Scattered { block }, 8, 0, 10, 2), linear, "block {block}");
    }
    // a block of 1 has one peer per round (the first block holds only the rank itself: no round)
    assert_eq!(sched(CollKind::Alltoall, Algo::Scattered { block: 1 }, 8, 0, 10, 2).len(), 7);
}

/// Binomial gather, p = 8, 10 bytes each: subtree-aggregated messages.
#[test]
fn binomial_gather_p8() {
    let s = |r| sched(CollKind::Gather, Algo::Binomial, 8, 0, 10, r);
    assert_eq!(recvs(&s(0)), vec![vec![(1, 10)], vec![(2, 20)], vec![(4, 40)]]);
    assert_eq!(recvs(&s(4)), vec![vec![(5, 10)], vec![(6, 20)], vec![]]);
    assert_eq!(sends(&s(4)), vec![vec![], vec![], vec![(0, 40)]]);
    // p = 6: rank 4's subtree is {4, 5}.
    let s6 = sched(CollKind::Gather, Algo::Binomial, 6, 0, 10, 4);
    assert_eq!(sends(&s6).concat(), vec![(0, 20)]);
}

/// Binomial scatterv with counts: the root sends each child its subtree's counts.
#[test]
fn binomial_scatterv_counts() {
    let counts = [1u64, 2, 3, 4, 5];
    let args = |r: u32| CollArgs {
        kind: CollKind::Scatterv,
        size: 5,
        rank: r,
        root: 1,
        bytes: if r == 1 { 15 } else { 0 },
        recv_bytes: counts[r as usize],
        counts: Some(&counts),
        recv_counts: None,
    };
    // Root 1: virtual 4 = real 0, virtual 2 = real 3 (subtree {3, 4}), virtual 1 = real 2.
    let s = schedule(Algo::Binomial, &args(1)).unwrap();
    assert_eq!(sends(&s), vec![vec![(0, 1)], vec![(3, 4 + 5)], vec![(2, 3)]]);
    let all: Vec<_> = (0..5).map(|r| schedule(Algo::Binomial, &args(r)).unwrap()).collect();
    check_schedules(&all).unwrap();
    // Without the counts, a non-root cannot take part in binomial Scatterv ...
    let mut a = args(2);
    a.counts = None;
    let e = schedule(Algo::Binomial, &a).unwrap_err();
    assert!(e.0.contains("counts") && e.0.contains("linear"), "{e}");
    // ... but can in linear.
    assert_eq!(recvs(&schedule(Algo::Linear, &a).unwrap()), vec![vec![(1, 3)]]);
}

/// Pipelined chain bcast, p = 3, 3000 bytes in 1000-byte segments: receive and forward overlap.
#[test]
fn pipeline_bcast_p3() {
    let algo = Algo::PipelinedChain { segment: 1000 };
    let s = |r| sched(CollKind::Bcast, algo, 3, 0, 3000, r);
    assert_eq!(sends(&s(0)), vec![vec![(1, 1000)]; 3]);
    assert_eq!(
        s(1),
        vec![
            round(&[], &[(0, 1000)], 0),
            round(&[(2, 1000)], &[(0, 1000)], 0),
            round(&[(2, 1000)], &[(0, 1000)], 0),
            round(&[(2, 1000)], &[], 0),
        ]
    );
    assert_eq!(recvs(&s(2)), vec![vec![(1, 1000)]; 3]);
    let all: Vec<_> = (0..3).map(s).collect();
    assert_eq!(check_schedules(&all).unwrap(), 4); // nseg + p - 2
                                                   // The last segment is short.
    let s = sched(CollKind::Bcast, algo, 2, 0, 2500, 1);
    assert_eq!(recvs(&s).concat(), vec![(0, 1000), (0, 1000), (0, 500)]);
}

/// Pipelined chain reduce, p = 3: segments flow from rank 2 to the root, combined on the way.
#[test]
fn pipeline_reduce_p3() {
    let algo = Algo::PipelinedChain { segment: 100 };
    let s = |r| sched(CollKind::Reduce, algo, 3, 0, 200, r);
    assert_eq!(s(2), vec![round(&[(1, 100)], &[], 0), round(&[(1, 100)], &[], 0)]);
    assert_eq!(
        s(1),
        vec![round(&[], &[(2, 100)], 100), round(&[(0, 100)], &[(2, 100)], 100), round(&[(0, 100)], &[], 0),]
    );
    assert_eq!(s(0), vec![round(&[], &[(1, 100)], 100), round(&[], &[(1, 100)], 100)]);
}

/// Scatter + allgather bcast, p = 4, 100 bytes: binomial scatter of 25-byte chunks, then ring.
#[test]
fn scatter_allgather_bcast_p4() {
    let s0 = sched(CollKind::Bcast, Algo::ScatterAllgather, 4, 0, 100, 0);
    assert_eq!(sends(&s0), vec![vec![(2, 50)], vec![(1, 25)], vec![(1, 25)], vec![(1, 25)], vec![(1, 25)]]);
    let s3 = sched(CollKind::Bcast, Algo::ScatterAllgather, 4, 0, 100, 3);
    assert_eq!(recvs(&s3), vec![vec![(2, 25)], vec![(2, 25)], vec![(2, 25)], vec![(2, 25)]]);
    // Recursive-doubling allgather instead of the ring: 2 steps after the scatter.
    let s0 = sched(CollKind::Bcast, Algo::ScatterRdAllgather, 4, 0, 100, 0);
    assert_eq!(sends(&s0), vec![vec![(2, 50)], vec![(1, 25)], vec![(1, 25)], vec![(2, 50)]]);
    // Fewer bytes than ranks: empty chunks are not scattered (as MPICH), ring messages still go.
    let s = sched(CollKind::Bcast, Algo::ScatterAllgather, 4, 0, 2, 3);
    assert_eq!(s.len(), 3);
}

/// Recursive-halving reduce_scatter, p = 3, counts 10/20/30: rank 0 folds into rank 1.
#[test]
fn recursive_halving_reduce_scatter_p3() {
    let counts = [10u64, 20, 30];
    let args = |r: u32| CollArgs {
        kind: CollKind::ReduceScatter,
        size: 3,
        rank: r,
        root: 0,
        bytes: 60,
        recv_bytes: counts[r as usize],
        counts: None,
        recv_counts: Some(&counts),
    };
    let s = |r| schedule(Algo::RecursiveHalving, &args(r)).unwrap();
    assert_eq!(s(0), vec![round(&[(1, 60)], &[], 0), round(&[], &[(1, 10)], 0)]);
    assert_eq!(s(1), vec![round(&[], &[(0, 60)], 60), round(&[(2, 30)], &[(2, 30)], 30), round(&[(0, 10)], &[], 0)]);
    assert_eq!(s(2), vec![round(&[(1, 30)], &[(1, 30)], 30)]);
}

/// Recursive-doubling scan/exscan, p = 5.
#[test]
fn recursive_doubling_scan_p5() {
    let s = |k, r| sched(k, Algo::RecursiveDoubling, 5, 0, 8, r);
    assert_eq!(
        s(CollKind::Scan, 0),
        vec![round(&[(1, 8)], &[(1, 8)], 8), round(&[(2, 8)], &[(2, 8)], 8), round(&[(4, 8)], &[(4, 8)], 8)]
    );
    assert_eq!(s(CollKind::Scan, 4), vec![round(&[(0, 8)], &[(0, 8)], 16)]);
    assert_eq!(s(CollKind::Scan, 3), vec![round(&[(2, 8)], &[(2, 8)], 16), round(&[(1, 8)], &[(1, 8)], 16)]);
    // Exscan: the first contribution from below is copied, not combined.
    assert_eq!(s(CollKind::Exscan, 3), vec![round(&[(2, 8)], &[(2, 8)], 8), round(&[(1, 8)], &[(1, 8)], 16)]);
    assert_eq!(s(CollKind::Exscan, 4), vec![round(&[(0, 8)], &[(0, 8)], 8)]);
}

#[test]
fn linear_scan_chain() {
    let s = |k, r| sched(k, Algo::Linear, 3, 0, 8, r);
    assert_eq!(s(CollKind::Scan, 0), vec![round(&[(1, 8)], &[], 0)]);
    assert_eq!(s(CollKind::Scan, 1), vec![round(&[], &[(0, 8)], 8), round(&[(2, 8)], &[], 0)]);
    assert_eq!(s(CollKind::Scan, 2), vec![round(&[], &[(1, 8)], 8)]);
    assert_eq!(s(CollKind::Exscan, 2), vec![round(&[], &[(1, 8)], 0)]);
}

#[test]
fn linear_barrier() {
    let s = |r| sched(CollKind::Barrier, Algo::Linear, 3, 0, 0, r);
    assert_eq!(s(0), vec![round(&[], &[(1, 0), (2, 0)], 0), round(&[(1, 0), (2, 0)], &[], 0)]);
    assert_eq!(s(2), vec![round(&[(0, 0)], &[], 0), round(&[], &[(0, 0)], 0)]);
}

#[test]
fn size_fields_are_derived_when_zero() {
    // Scatter: a non-root knows only recv_bytes; the root only bytes (MPI_IN_PLACE).
    let mut call = Call::new(CollKind::Scatter, 4, 0, 10);
    let root = CollArgs { recv_bytes: 0, ..call.args(0) };
    assert_eq!(sends(&schedule(Algo::Linear, &root).unwrap()).concat(), vec![(1, 10), (2, 10), (3, 10)]);
    // Gather root with MPI_IN_PLACE: recv_bytes / p.
    call.kind = CollKind::Gather;
    let root = CollArgs { bytes: 0, ..call.args(0) };
    assert_eq!(recvs(&schedule(Algo::Linear, &root).unwrap()).concat(), vec![(1, 10), (2, 10), (3, 10)]);
    // Allreduce with the vector only in recv_bytes.
    let a = CollArgs {
        kind: CollKind::Allreduce,
        size: 2,
        rank: 0,
        root: 0,
        bytes: 0,
        recv_bytes: 64,
        counts: None,
        recv_counts: None,
    };
    assert_eq!(schedule(Algo::RecursiveDoubling, &a).unwrap(), vec![round(&[(1, 64)], &[(1, 64)], 64)]);
}

fn base(kind: CollKind) -> CollArgs<'static> {
    CollArgs { kind, size: 4, rank: 0, root: 0, bytes: 64, recv_bytes: 64, counts: None, recv_counts: None }
}

#[test]
fn invalid_inputs_are_errors() {
    let e = |a: CollArgs, algo| schedule(algo, &a).unwrap_err().0;
    assert!(e(CollArgs { size: 0, ..base(CollKind::Bcast) }, Algo::Binomial).contains("size is 0"));
    assert!(e(CollArgs { rank: 4, ..base(CollKind::Bcast) }, Algo::Binomial).contains("rank 4"));
    assert!(e(CollArgs { root: 4, ..base(CollKind::Bcast) }, Algo::Binomial).contains("root 4"));
    // root is ignored by unrooted collectives
    assert!(schedule(Algo::Ring, &CollArgs { root: 9, ..base(CollKind::Allreduce) }).is_ok());
    let three = [1u64, 2, 3];
    let msg = e(CollArgs { recv_counts: Some(&three), ..base(CollKind::Allgatherv) }, Algo::Ring);
    assert!(msg.contains("recv_counts has 3 entries"), "{msg}");
    let msg = e(CollArgs { counts: Some(&three), ..base(CollKind::Alltoallv) }, Algo::Pairwise);
    assert!(msg.contains("counts has 3 entries"), "{msg}");
    let msg = e(base(CollKind::Bcast), Algo::Bruck);
    assert!(msg.contains("not valid for Bcast") && msg.contains("binomial"), "{msg}");
    let msg = e(CollArgs { size: 6, ..base(CollKind::Allgather) }, Algo::RecursiveDoubling);
    assert!(msg.contains("power-of-two"), "{msg}");
}

/// Nothing panics, whatever the sizes: huge byte counts, huge communicators (O(log p) algorithms).
#[test]
fn no_panics_on_extreme_inputs() {
    for kind in CollKind::ALL {
        for name in g2g_coll::algorithms_for(kind) {
            let algo = Algo::from_name(kind, name).unwrap();
            for p in [1u32, 2, 5, 8] {
                for bytes in [u64::MAX, 1 << 40] {
                    for r in 0..p {
                        let a = CollArgs {
                            kind,
                            size: p,
                            rank: r,
                            root: p - 1,
                            bytes,
                            recv_bytes: bytes,
                            counts: None,
                            recv_counts: None,
                        };
                        let _ = schedule(algo, &a);
                        let v = vec![u64::MAX; p as usize];
                        let a = CollArgs { counts: Some(&v), recv_counts: Some(&v), ..a };
                        let _ = schedule(algo, &a);
                    }
                }
            }
        }
    }
    // A communicator of 2^31 + 3 ranks with an O(log p) algorithm.
    let p = (1u32 << 31) + 3;
    for (kind, algo) in [
        (CollKind::Bcast, Algo::Binomial),
        (CollKind::Reduce, Algo::Binomial),
        (CollKind::Barrier, Algo::Dissemination),
        (CollKind::Allreduce, Algo::RecursiveDoubling),
        (CollKind::Allgather, Algo::Bruck),
        (CollKind::Scan, Algo::RecursiveDoubling),
        (CollKind::Gather, Algo::Binomial),
    ] {
        for r in [0, 1, p / 2, p - 2, p - 1] {
            let a = CollArgs {
                kind,
                size: p,
                rank: r,
                root: p - 1,
                bytes: 1 << 20,
                recv_bytes: 1 << 20,
                counts: None,
                recv_counts: None,
            };
            let s = schedule(algo, &a).unwrap();
            assert!(s.len() <= 34, "{} {}: {} rounds", kind.name(), algo.name(), s.len());
            assert!(s.iter().flat_map(|x| x.sends.iter().chain(&x.recvs)).all(|x| x.peer < p));
        }
    }
    // u32::MAX ranks, last rank.
    let a = CollArgs {
        kind: CollKind::Bcast,
        size: u32::MAX,
        rank: u32::MAX - 1,
        root: 7,
        bytes: 1,
        recv_bytes: 0,
        counts: None,
        recv_counts: None,
    };
    assert!(schedule(Algo::Binomial, &a).is_ok());
    assert!(schedule(Algo::PipelinedBinomial { segment: 1 }, &a).is_ok());
}

/// Tiny segments on a big message are enlarged so that there are at most MAX_SEGMENTS.
#[test]
fn segment_count_is_bounded() {
    let a = CollArgs {
        kind: CollKind::Bcast,
        size: 4,
        rank: 0,
        root: 0,
        bytes: 1 << 30,
        recv_bytes: 0,
        counts: None,
        recv_counts: None,
    };
    let s = schedule(Algo::PipelinedChain { segment: 1 }, &a).unwrap();
    assert_eq!(s.len() as u64, g2g_coll::MAX_SEGMENTS);
    let total: u64 = s.iter().map(|r| r.sends[0].bytes).sum();
    assert_eq!(total, 1 << 30);
}

/// check_schedules catches mismatches and deadlocks.
#[test]
fn checker_catches_errors() {
    // size mismatch
    let bad = vec![vec![round(&[(1, 8)], &[], 0)], vec![round(&[], &[(0, 9)], 0)]];
    assert!(check_schedules(&bad).unwrap_err().0.contains("0->1"));
    // unmatched receive
    let bad = vec![vec![], vec![round(&[], &[(0, 9)], 0)]];
    assert!(check_schedules(&bad).is_err());
    // deadlock: both receive first, then send
    let dead = vec![
        vec![round(&[], &[(1, 8)], 0), round(&[(1, 8)], &[], 0)],
        vec![round(&[], &[(0, 8)], 0), round(&[(0, 8)], &[], 0)],
    ];
    assert!(check_schedules(&dead).unwrap_err().0.contains("deadlock"));
    // self message
    let selfmsg = vec![vec![round(&[(0, 8)], &[(0, 8)], 0)]];
    assert!(check_schedules(&selfmsg).is_err());
    // ok: sendrecv
    let ok = vec![vec![round(&[(1, 8)], &[(1, 8)], 0)], vec![round(&[(0, 8)], &[(0, 8)], 0)]];
    assert_eq!(check_schedules(&ok).unwrap(), 1);
}

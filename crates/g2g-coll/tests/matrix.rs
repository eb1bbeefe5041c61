//! Every kind × every valid algorithm × communicator sizes × roots × sizes: the schedules match and
//! make progress, every rank hears from whom it must, and the data volumes are right.

mod common;

use common::{all_ranks, ceil_log2, knowledge, totals, Call};
use g2g_coll::{algorithms_for, check_consistency, check_schedules, schedule, Algo, CollKind};

const SIZES: [u32; 9] = [1, 2, 3, 4, 5, 7, 8, 13, 16];
const BYTES: [u64; 5] = [0, 1, 7, 1000, 4099];

/// All algorithms of `kind`, the pipelined ones with and without segmentation.
fn algos(kind: CollKind) -> Vec<Algo> {
    let mut out = Vec::new();
    for name in algorithms_for(kind) {
        let a = Algo::from_name(kind, name).unwrap();
        if let Algo::Scattered { .. } = a {
            for block in [1, 2, 3, 5] {
                out.push(Algo::from_name(kind, &format!("{name}:{block}")).unwrap());
            }
        } else if a.segment().is_some() {
            out.push(Algo::from_name(kind, &format!("{name}:1000")).unwrap());
            out.push(Algo::from_name(kind, &format!("{name}:64")).unwrap());
        }
        out.push(a);
    }
    out
}

fn needs_pow2(kind: CollKind, a: Algo) -> bool {
    matches!(
        (kind, a),
        (CollKind::Allgather | CollKind::Allgatherv, Algo::RecursiveDoubling)
            | (CollKind::Bcast, Algo::ScatterRdAllgather)
    )
}

/// Kinds whose schedule is empty when no data moves (all the others keep structural messages).
fn empty_without_data(kind: CollKind) -> bool {
    !matches!(kind, CollKind::Barrier | CollKind::Gatherv | CollKind::Scatterv | CollKind::Alltoallv)
}

fn check_case(kind: CollKind, algo: Algo, p: u32, root: u32, n: u64) -> usize {
    let mut call = Call::new(kind, p, root, n);
    if matches!(kind, CollKind::Gatherv | CollKind::Scatterv) && algo == Algo::Binomial {
        call.counts_everywhere = true;
    }
    let what = format!("{} {} p={p} root={root} n={n}", kind.name(), algo);
    let pp = p as u64;
    if needs_pow2(kind, algo) && !pp.is_power_of_two() {
        assert!(schedule(algo, &call.args(0)).is_err(), "{what}: should need a power of two");
        return 0;
    }
    let scheds = call.schedules(algo);
    let depth = check_schedules(&scheds).unwrap_or_else(|e| panic!("{what}: {e}"));
    check_consistency(&|_| algo, &|r| call.args(r), p).unwrap_or_else(|e| panic!("{what}: {e}"));
    let t: Vec<_> = scheds.iter().map(|s| totals(s)).collect();
    if p == 1 || (n == 0 && empty_without_data(kind)) {
        assert!(scheds.iter().all(|s| s.is_empty()), "{what}: expected no communication");
        return 1;
    }
    let know = knowledge(&scheds);
    let all = all_ranks(p as usize);
    let rootbit = 1u128 << root;
    let lg = ceil_log2(pp);
    let segmented = algo.segment().is_some_and(|s| s > 0 && s < n);
    match kind {
        CollKind::Barrier => {
            assert!(know.iter().all(|&k| k == all), "{what}: barrier does not synchronise");
            assert!(t.iter().all(|x| x.sent == 0 && x.recvd == 0), "{what}");
            if algo == Algo::Dissemination {
                assert!(t.iter().all(|x| x.rounds == lg), "{what}: rounds");
                assert_eq!(depth as usize, lg, "{what}: depth");
            }
        }
        CollKind::Bcast => {
            assert!(know.iter().all(|&k| k & rootbit != 0), "{what}: a rank missed the root");
            // The root takes part in the allgather phase of scatter + allgather (as in MPICH).
            if matches!(algo, Algo::ScatterAllgather | Algo::ScatterRdAllgather) {
                assert!(t[root as usize].recvd < n, "{what}");
            } else {
                assert_eq!(t[root as usize].recvd, 0, "{what}");
            }
            for r in (0..p).filter(|&r| r != root) {
                let got = t[r as usize].recvd;
                match algo {
                    Algo::ScatterAllgather | Algo::ScatterRdAllgather => {
                        assert!(got >= n && got <= 2 * n, "{what}: rank {r} got {got}")
                    }
                    _ => assert_eq!(got, n, "{what}: rank {r}"),
                }
            }
            if algo == Algo::Binomial {
                assert_eq!(t[root as usize].rounds, lg, "{what}: root rounds");
                assert_eq!(depth as usize, lg, "{what}: depth");
            }
            if algo == Algo::Linear {
                assert_eq!(t[root as usize].nsends, p as usize - 1, "{what}");
            }
            if let (Algo::PipelinedChain { segment }, true) = (algo, segmented) {
                let nseg = n.div_ceil(segment) as usize;
                assert_eq!(depth as usize, nseg + p as usize - 2, "{what}: pipeline depth");
            }
        }
        CollKind::Reduce => {
            assert_eq!(know[root as usize], all, "{what}: root missed a contribution");
            let red: u64 = t.iter().map(|x| x.reduce).sum();
            assert_eq!(red, (pp - 1) * n, "{what}: combined bytes");
            for r in 0..p {
                let want = if r == root { 0 } else { n };
                assert_eq!(t[r as usize].sent, want, "{what}: rank {r} sent");
            }
            if algo == Algo::Binomial {
                assert_eq!(depth as usize, lg, "{what}: depth");
            }
        }
        CollKind::Allreduce => {
            assert!(know.iter().all(|&k| k == all), "{what}: a rank missed a contribution");
            assert!(t.iter().all(|x| x.recvd >= n), "{what}: a rank received less than n");
            let red: u64 = t.iter().map(|x| x.reduce).sum();
            if matches!(algo, Algo::Ring | Algo::Rabenseifner | Algo::ReduceBcast) {
                assert_eq!(red, (pp - 1) * n, "{what}: combined bytes");
            } else {
                assert!(red >= (pp - 1) * n, "{what}: combined bytes");
            }
            match algo {
                Algo::Ring => {
                    let blk = |i: u64| n / pp + u64::from(i % pp < n % pp);
                    for r in 0..pp {
                        let x = &t[r as usize];
                        assert_eq!(x.rounds, 2 * (p as usize - 1), "{what}");
                        assert_eq!(x.sent, 2 * n - blk(r + 1) - blk(r + 2), "{what}: rank {r}");
                    }
                    assert_eq!(depth as usize, 2 * (p as usize - 1), "{what}: depth");
                }
                Algo::RecursiveDoubling => {
                    let pof2 = 1u64 << (63 - pp.leading_zeros());
                    let folds = if pof2 == pp { 0 } else { 2 };
                    assert_eq!(depth as usize, pof2.trailing_zeros() as usize + folds, "{what}");
                    if pof2 == pp {
                        assert!(t.iter().all(|x| x.sent == n * lg as u64), "{what}");
                    }
                }
                _ => {}
            }
        }
        CollKind::Gather | CollKind::Gatherv => {
            assert_eq!(know[root as usize], all, "{what}: root missed a rank");
            let total = call.total();
            let own = |r: u32| call.blocks[r as usize];
            assert_eq!(t[root as usize].recvd, total - own(root), "{what}: root received");
            assert_eq!(t[root as usize].sent, 0, "{what}");
            for r in (0..p).filter(|&r| r != root) {
                let x = &t[r as usize];
                assert_eq!(x.sent - x.recvd, own(r), "{what}: rank {r} net contribution");
            }
        }
        CollKind::Scatter | CollKind::Scatterv => {
            assert!(know.iter().all(|&k| k & rootbit != 0), "{what}");
            let total = call.total();
            let own = |r: u32| call.blocks[r as usize];
            assert_eq!(t[root as usize].sent, total - own(root), "{what}: root sent");
            for r in (0..p).filter(|&r| r != root) {
                let x = &t[r as usize];
                assert_eq!(x.recvd - x.sent, own(r), "{what}: rank {r} net part");
            }
        }
        CollKind::Allgather | CollKind::Allgatherv => {
            assert!(know.iter().all(|&k| k == all), "{what}: a rank missed a block");
            let total = call.total();
            for r in 0..p {
                let x = &t[r as usize];
                assert_eq!(x.recvd, total - call.blocks[r as usize], "{what}: rank {r}");
                let want_rounds = match algo {
                    Algo::Ring => p as usize - 1,
                    Algo::Bruck | Algo::RecursiveDoubling => lg,
                    _ => 1,
                };
                assert_eq!(x.rounds, want_rounds, "{what}: rounds");
            }
            if algo == Algo::Ring {
                assert_eq!(depth as usize, p as usize - 1, "{what}: depth");
            }
        }
        CollKind::Alltoall => {
            assert!(know.iter().all(|&k| k == all), "{what}");
            for x in &t {
                match algo {
                    Algo::Bruck => {
                        assert_eq!(x.rounds, lg, "{what}");
                        let mut want = 0;
                        let mut d = 1;
                        while d < pp {
                            want += (0..pp).filter(|j| j & d != 0).count() as u64 * n;
                            d <<= 1;
                        }
                        assert_eq!(x.sent, want, "{what}");
                    }
                    _ => {
                        // bytes * (p - 1) / p with bytes = n * p
                        assert_eq!(x.sent, (n * pp) * (pp - 1) / pp, "{what}");
                        assert_eq!(x.recvd, n * (pp - 1), "{what}");
                        if algo == Algo::Pairwise {
                            assert_eq!(x.rounds, p as usize - 1, "{what}");
                        }
                        if let Algo::Scattered { block } = algo {
                            // one round per block of offsets 0..p (none for a block of the rank alone)
                            let b = if block == 0 || block >= pp { pp } else { block };
                            let want = if b == pp { 1 } else { pp.div_ceil(b) - u64::from(b == 1) };
                            assert_eq!(x.rounds as u64, want, "{what}");
                        }
                    }
                }
            }
        }
        CollKind::Alltoallv => {
            assert!(know.iter().all(|&k| k == all), "{what}");
            for (r, x) in t.iter().enumerate() {
                let s: u64 = (0..p as usize).filter(|&j| j != r).map(|j| call.a2av_send[r][j]).sum();
                let g: u64 = (0..p as usize).filter(|&j| j != r).map(|j| call.a2av_recv[r][j]).sum();
                assert_eq!((x.sent, x.recvd), (s, g), "{what}: rank {r}");
            }
        }
        CollKind::ReduceScatter | CollKind::ReduceScatterBlock => {
            assert!(know.iter().all(|&k| k == all), "{what}: a rank missed a contribution");
            let total = call.total(); // the whole input vector
            let red: u64 = t.iter().map(|x| x.reduce).sum();
            assert_eq!(red, (pp - 1) * total, "{what}: combined bytes");
            if matches!(algo, Algo::Ring | Algo::Pairwise) {
                assert!(t.iter().all(|x| x.rounds == p as usize - 1), "{what}");
            }
        }
        CollKind::Scan | CollKind::Exscan => {
            for r in 0..p {
                let below = (1u128 << r) - 1;
                assert_eq!(know[r as usize] & below, below, "{what}: rank {r} misses a lower rank");
            }
            if algo == Algo::Linear {
                let red: u64 = t.iter().map(|x| x.reduce).sum();
                let want = if kind == CollKind::Scan { pp - 1 } else { pp - 2 };
                assert_eq!(red, want * n, "{what}: combined bytes");
            }
        }
    }
    1
}

#[test]
fn every_kind_every_algorithm() {
    let mut cases = 0;
    for kind in CollKind::ALL {
        for algo in algos(kind) {
            for p in SIZES {
                let roots = if kind.is_rooted() { vec![0, p - 1] } else { vec![0] };
                for root in roots {
                    for n in BYTES {
                        cases += check_case(kind, algo, p, root, n);
                    }
                }
            }
        }
    }
    assert!(cases > 2000, "only {cases} cases ran");
}

/// Middle roots and a few larger, odd communicators.
#[test]
fn other_roots_and_sizes() {
    for kind in CollKind::ALL.into_iter().filter(|k| k.is_rooted()) {
        for algo in algos(kind) {
            for (p, root) in [(6, 3), (13, 5), (16, 9), (31, 17)] {
                check_case(kind, algo, p, root, 1000);
            }
        }
    }
    for kind in CollKind::ALL {
        for algo in algos(kind) {
            for p in [24, 32, 33, 63] {
                check_case(kind, algo, p, 0, 513);
            }
        }
    }
}

use g2g_coll::*;
use std::time::Instant;
#[test]
fn bench() {
    let p = 1u32 << 20;
    for (kind, algo) in [(CollKind::Bcast, Algo::Binomial), (CollKind::Allreduce, Algo::RecursiveDoubling),
        (CollKind::Allreduce, Algo::Rabenseifner), (CollKind::Barrier, Algo::Dissemination),
        (CollKind::Allgather, Algo::Bruck), (CollKind::Bcast, Algo::PipelinedBinomial{segment: 1<<17}),
        (CollKind::Reduce, Algo::Binomial), (CollKind::Gather, Algo::Binomial), (CollKind::Alltoall, Algo::Bruck)] {
        let t = Instant::now();
        let mut nr = 0usize;
        for r in 0..p {
            let a = CollArgs { kind, size: p, rank: r, root: 3, bytes: 1 << 22, recv_bytes: 1 << 22, counts: None, recv_counts: None };
            nr += schedule(algo, &a).unwrap().len();
        }
        eprintln!("{} {}: {:?} for {} ranks, {} rounds", kind.name(), algo.name(), t.elapsed(), p, nr);
    }
    let t = Instant::now();
    let a = CollArgs { kind: CollKind::Allreduce, size: p, rank: 5, root: 0, bytes: 1 << 30, recv_bytes: 0, counts: None, recv_counts: None };
    let n = schedule(Algo::Ring, &a).unwrap().len();
    eprintln!("ring one rank: {:?} {} rounds", t.elapsed(), n);
}

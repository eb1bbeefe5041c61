//! Selection rules at their boundaries, overrides, name parsing.

mod common;

use common::Call;
use g2g_coll::{
    algorithms_for, check_consistency, select, select_for, selection_bytes, Algo, AlgoOverrides, CollKind, Thresholds,
};

fn sel(kind: CollKind, p: u32, bytes: u64) -> Algo {
    select(kind, p, bytes, &Thresholds::default(), &AlgoOverrides::default())
}

#[test]
fn default_thresholds_are_documented_values() {
    let t = Thresholds::default();
    assert_eq!(t.bcast_small_bytes, 12288);
    assert_eq!(t.bcast_segment_bytes, 128 * 1024);
    assert_eq!(t.allreduce_small_bytes, 10000);
    assert_eq!(t.allgather_small_bytes, 81920);
    assert_eq!(t.alltoall_small_bytes, 256);
    assert_eq!(t.reduce_segment_bytes, 32 * 1024);
}

#[test]
fn barrier_scan() {
    for p in [1, 2, 3, 64, 1 << 20] {
        assert_eq!(sel(CollKind::Barrier, p, 0), Algo::Dissemination);
        assert_eq!(sel(CollKind::Scan, p, 8), Algo::RecursiveDoubling);
        assert_eq!(sel(CollKind::Exscan, p, 1 << 30), Algo::RecursiveDoubling);
    }
}

#[test]
fn bcast_rules() {
    use CollKind::Bcast;
    assert_eq!(sel(Bcast, 16, 12287), Algo::Binomial);
    assert_eq!(sel(Bcast, 16, 12288), Algo::ScatterRdAllgather);
    assert_eq!(sel(Bcast, 12, 12288), Algo::ScatterAllgather);
    assert_eq!(sel(Bcast, 16, 524287), Algo::ScatterRdAllgather);
    // small communicators: binomial up to the long-message size
    assert_eq!(sel(Bcast, 7, 524287), Algo::Binomial);
    assert_eq!(sel(Bcast, 8, 524287), Algo::ScatterRdAllgather);
    assert_eq!(sel(Bcast, 2, 1 << 30), Algo::Binomial);
    // long: a 512 KiB message has 4 segments of 128 KiB -> pipeline on up to 4 ranks
    assert_eq!(sel(Bcast, 4, 524288), Algo::PipelinedChain { segment: 131072 });
    assert_eq!(sel(Bcast, 5, 524288), Algo::ScatterAllgather);
    assert_eq!(sel(Bcast, 16, 524288), Algo::ScatterAllgather);
    assert_eq!(sel(Bcast, 16, 16 * 131072), Algo::PipelinedChain { segment: 131072 });
}

#[test]
fn reduce_rules() {
    use CollKind::Reduce;
    assert_eq!(sel(Reduce, 7, 511), Algo::Linear);
    assert_eq!(sel(Reduce, 7, 512), Algo::Binomial);
    assert_eq!(sel(Reduce, 8, 511), Algo::Binomial);
    assert_eq!(sel(Reduce, 7, 20479), Algo::Binomial);
    assert_eq!(sel(Reduce, 64, 2047), Algo::Binomial);
    assert_eq!(sel(Reduce, 64, 2048), Algo::PipelinedBinomial { segment: 32768 });
    assert_eq!(sel(Reduce, 7, 20480), Algo::PipelinedBinomial { segment: 32768 });
    assert_eq!(sel(Reduce, 7, 7 * 32768), Algo::PipelinedChain { segment: 32768 });
    assert_eq!(sel(Reduce, 64, 64 * 32768), Algo::PipelinedChain { segment: 32768 });
}

#[test]
fn allreduce_rules() {
    use CollKind::Allreduce;
    assert_eq!(sel(Allreduce, 8, 9999), Algo::RecursiveDoubling);
    assert_eq!(sel(Allreduce, 8, 10000), Algo::Rabenseifner);
    assert_eq!(sel(Allreduce, 8, 8 * 65536 - 1), Algo::Rabenseifner);
    assert_eq!(sel(Allreduce, 8, 8 * 65536), Algo::Ring);
    assert_eq!(sel(Allreduce, 13, 13 * 65536), Algo::Ring);
    // fewer bytes than the power-of-two part of the communicator
    assert_eq!(sel(Allreduce, 1 << 15, 20000), Algo::RecursiveDoubling);
    assert_eq!(sel(Allreduce, 1, 1 << 30), Algo::Ring);
}

#[test]
fn gather_scatter_rules() {
    use CollKind::{Gather, Gatherv, Scatter, Scatterv};
    assert_eq!(sel(Gather, 100, 6000), Algo::Binomial);
    assert_eq!(sel(Gather, 100, 6001), Algo::Linear);
    assert_eq!(sel(Gather, 61, 5000), Algo::Binomial);
    assert_eq!(sel(Gather, 60, 5000), Algo::Linear);
    assert_eq!(sel(Gather, 60, 1023), Algo::Binomial);
    assert_eq!(sel(Gather, 60, 1024), Algo::Linear);
    assert_eq!(sel(Gather, 10, 8), Algo::Linear);
    assert_eq!(sel(Gather, 11, 8), Algo::Binomial);
    assert_eq!(sel(Scatter, 11, 299), Algo::Binomial);
    assert_eq!(sel(Scatter, 11, 300), Algo::Linear);
    assert_eq!(sel(Scatter, 10, 1), Algo::Linear);
    assert_eq!(sel(Gatherv, 1000, 1), Algo::Linear);
    assert_eq!(sel(Scatterv, 1000, 1), Algo::Linear);
}

#[test]
fn allgather_rules() {
    use CollKind::{Allgather, Allgatherv};
    // Allgather: bytes is each rank's contribution; the rules are on the total p * bytes.
    assert_eq!(sel(Allgather, 8, 65535), Algo::RecursiveDoubling); // 524280
    assert_eq!(sel(Allgather, 8, 65536), Algo::Ring); // 524288
    assert_eq!(sel(Allgather, 6, 13653), Algo::Bruck); // 81918
    assert_eq!(sel(Allgather, 6, 13654), Algo::Ring); // 81924
    assert_eq!(sel(Allgather, 6, 0), Algo::Bruck);
    // Allgatherv: bytes is the total.
    assert_eq!(sel(Allgatherv, 8, 524287), Algo::RecursiveDoubling);
    assert_eq!(sel(Allgatherv, 8, 524288), Algo::Ring);
    assert_eq!(sel(Allgatherv, 6, 81919), Algo::Bruck);
    assert_eq!(sel(Allgatherv, 6, 81920), Algo::Ring);
}

#[test]
fn alltoall_rules() {
    use CollKind::{Alltoall, Alltoallv};
    // bytes is the whole send buffer; the rules are on one block, bytes / p
    assert_eq!(sel(Alltoall, 8, 8 * 256), Algo::Bruck);
    // medium blocks: MPICH's scattered, 32 peers at a time (MPIR_CVAR_ALLTOALL_THROTTLE)
    let scattered = Algo::Scattered { block: 32 };
    assert_eq!(sel(Alltoall, 8, 8 * 257), scattered);
    assert_eq!(sel(Alltoall, 7, 7 * 256), scattered);
    assert_eq!(sel(Alltoall, 64, 64 * 32768), scattered);
    assert_eq!(sel(Alltoall, 64, 64 * 32769), Algo::Pairwise);
    assert_eq!(sel(Alltoallv, 64, 1), Algo::Pairwise);
}

#[test]
fn reduce_scatter_rules() {
    for kind in [CollKind::ReduceScatter, CollKind::ReduceScatterBlock] {
        assert_eq!(sel(kind, 6, 12288), Algo::RecursiveHalving);
        assert_eq!(sel(kind, 6, 12289), Algo::Ring);
        assert_eq!(sel(kind, 8, 262144), Algo::RecursiveHalving);
        assert_eq!(sel(kind, 8, 262145), Algo::Ring);
        // large communicator for the message: p >= 0.0012 * total + 8
        assert_eq!(sel(kind, 108, 100 * 833), Algo::RecursiveHalving);
        assert_eq!(sel(kind, 108, 100 * 833 + 1), Algo::Ring);
    }
}

#[test]
fn overrides_parse_and_win() {
    let ov = AlgoOverrides::parse("allreduce=ring, bcast=binomial;Reduce_Scatter_Block=pairwise").unwrap();
    let th = Thresholds::default();
    assert_eq!(select(CollKind::Allreduce, 8, 1, &th, &ov), Algo::Ring);
    assert_eq!(select(CollKind::Bcast, 64, 1 << 30, &th, &ov), Algo::Binomial);
    assert_eq!(select(CollKind::ReduceScatterBlock, 5, 1, &th, &ov), Algo::Pairwise);
    // other kinds keep their defaults
    assert_eq!(select(CollKind::Barrier, 8, 0, &th, &ov), Algo::Dissemination);
    // later entries win; display round-trips
    let ov = AlgoOverrides::parse("MPI_Allreduce=ring,allreduce=rabenseifner").unwrap();
    assert_eq!(ov.get(CollKind::Allreduce), Some(Algo::Rabenseifner));
    let ov = AlgoOverrides::parse("bcast=pipeline:64k,reduce=Pipelined-Binomial").unwrap();
    assert_eq!(ov.to_string(), "bcast=pipeline:65536,reduce=pipelined_binomial");
    assert_eq!(AlgoOverrides::parse(&ov.to_string()).unwrap(), ov);
    assert!(AlgoOverrides::parse("").unwrap().is_empty());
    // nonblocking names map to the blocking kind
    let ov = AlgoOverrides::parse("iallreduce=ring").unwrap();
    assert_eq!(ov.get(CollKind::Allreduce), Some(Algo::Ring));
}

#[test]
fn override_segments_come_from_thresholds() {
    let th = Thresholds { bcast_segment_bytes: 4096, reduce_segment_bytes: 2048, ..Thresholds::default() };
    let ov = AlgoOverrides::parse("bcast=pipeline,reduce=pipelined_binomial,allreduce=ring").unwrap();
    assert_eq!(select(CollKind::Bcast, 8, 1, &th, &ov), Algo::PipelinedChain { segment: 4096 });
    assert_eq!(select(CollKind::Reduce, 8, 1, &th, &ov), Algo::PipelinedBinomial { segment: 2048 });
    let ov = AlgoOverrides::parse("bcast=pipeline:1m").unwrap();
    assert_eq!(select(CollKind::Bcast, 8, 1, &th, &ov), Algo::PipelinedChain { segment: 1 << 20 });
    // the scattered Alltoall's block likewise: the threshold's, unless the name gives one
    let th = Thresholds { alltoall_throttle_procs: 8, ..Thresholds::default() };
    let ov = AlgoOverrides::parse("alltoall=scattered").unwrap();
    assert_eq!(select(CollKind::Alltoall, 64, 1, &th, &ov), Algo::Scattered { block: 8 });
    let ov = AlgoOverrides::parse("alltoall=scattered:4").unwrap();
    assert_eq!(select(CollKind::Alltoall, 64, 1, &th, &ov), Algo::Scattered { block: 4 });
    assert_eq!(ov.to_string(), "alltoall=scattered:4");
    // a threshold of 0: everything at once (linear), chosen by the rules or asked for
    let th = Thresholds { alltoall_throttle_procs: 0, ..Thresholds::default() };
    assert_eq!(select(CollKind::Alltoall, 64, 64 * 4096, &th, &AlgoOverrides::default()), Algo::Linear);
    let ov = AlgoOverrides::parse("alltoall=scattered").unwrap();
    assert_eq!(select(CollKind::Alltoall, 64, 1, &th, &ov), Algo::Linear);
    let e = AlgoOverrides::parse("alltoall=scattered:4k").unwrap_err().0;
    assert!(e.contains("bad block") && e.contains("number of peers"), "{e}");
    assert!(AlgoOverrides::parse("allreduce=ring:4").is_err());
}

#[test]
fn overrides_fall_back_where_invalid_for_the_size() {
    let th = Thresholds::default();
    let ov = AlgoOverrides::parse("allgather=recursive_doubling,allgatherv=recursive_doubling").unwrap();
    assert_eq!(select(CollKind::Allgather, 8, 1, &th, &ov), Algo::RecursiveDoubling);
    assert_eq!(select(CollKind::Allgather, 6, 1, &th, &ov), Algo::Bruck);
    assert_eq!(select(CollKind::Allgatherv, 6, 1 << 30, &th, &ov), Algo::Bruck);
    let ov = AlgoOverrides::parse("bcast=scatter_rd_allgather").unwrap();
    assert_eq!(select(CollKind::Bcast, 16, 1, &th, &ov), Algo::ScatterRdAllgather);
    assert_eq!(select(CollKind::Bcast, 12, 1, &th, &ov), Algo::ScatterAllgather);
    // a hand-built override that does not apply to the kind is ignored
    let ov = AlgoOverrides(vec![(CollKind::Bcast, Algo::Bruck)]);
    assert_eq!(select(CollKind::Bcast, 16, 1, &th, &ov), Algo::Binomial);
}

#[test]
fn bad_names_give_errors_listing_valid_names() {
    let e = AlgoOverrides::parse("allreduce=foo").unwrap_err().0;
    assert!(e.contains("'foo'") && e.contains("Allreduce"), "{e}");
    assert!(e.contains("valid: recursive_doubling, rabenseifner, ring, reduce_bcast"), "{e}");
    let e = AlgoOverrides::parse("allgatherx=ring").unwrap_err().0;
    assert!(e.contains("unknown collective 'allgatherx'") && e.contains("reduce_scatter_block"), "{e}");
    let e = AlgoOverrides::parse("allreduce").unwrap_err().0;
    assert!(e.contains("kind=algorithm"), "{e}");
    let e = AlgoOverrides::parse("bcast=pipeline:lots").unwrap_err().0;
    assert!(e.contains("segment size 'lots'"), "{e}");
    let e = AlgoOverrides::parse("bcast=binomial:64k").unwrap_err().0;
    assert!(e.contains("takes no segment"), "{e}");
    // valid name, wrong kind
    let e = AlgoOverrides::parse("bcast=ring").unwrap_err().0;
    assert!(e.contains("valid: binomial"), "{e}");
    assert_eq!(Algo::from_name(CollKind::Bcast, "ring"), None);
}

#[test]
fn names_round_trip() {
    for kind in CollKind::ALL {
        for name in algorithms_for(kind) {
            let a = Algo::from_name(kind, name).unwrap();
            assert_eq!(a.name(), *name);
            assert_eq!(Algo::from_name(kind, &name.to_uppercase().replace('_', "-")), Some(a));
        }
        // every default is a valid algorithm of its kind
        for p in [1, 2, 3, 8, 12, 100] {
            for b in [0, 1, 1000, 100_000, 10_000_000] {
                let a = sel(kind, p, b);
                assert!(algorithms_for(kind).contains(&a.name()), "{} {}", kind.name(), a.name());
            }
        }
    }
    assert_eq!(Algo::from_name(CollKind::Bcast, "chain"), Some(Algo::PipelinedChain { segment: 0 }));
    assert_eq!(Algo::from_name(CollKind::Allreduce, "nonoverlapping"), Some(Algo::ReduceBcast));
    assert_eq!(Algo::from_name(CollKind::Barrier, "bruck"), Some(Algo::Dissemination));
    assert_eq!(Algo::from_name(CollKind::Reduce, "pipeline: 32 KiB"), Some(Algo::PipelinedChain { segment: 32768 }));
}

#[test]
fn thresholds_by_name() {
    let mut t = Thresholds::default();
    assert_eq!(t.get("bcast_small_bytes"), Some(12288));
    t.set("alltoall_small_bytes", 512).unwrap();
    assert_eq!(t.alltoall_small_bytes, 512);
    let e = t.set("nope", 1).unwrap_err().0;
    assert!(e.contains("valid:") && e.contains("allreduce_small_bytes"), "{e}");
    assert_eq!(t.entries().len(), t.entries().iter().filter(|(k, _)| t.get(k).is_some()).count());
}

/// Every rank of a consistent call computes the same selection size, so all pick the same algorithm,
/// and the picked algorithm's schedules match.
#[test]
fn selection_is_rank_invariant() {
    let th = Thresholds::default();
    let ov = AlgoOverrides::default();
    for kind in CollKind::ALL {
        for p in [1u32, 3, 8, 13] {
            for n in [1u64, 300, 5000, 100_000] {
                let call = Call::new(kind, p, p / 2, n);
                let b0 = selection_bytes(&call.args(0));
                for r in 1..p {
                    assert_eq!(selection_bytes(&call.args(r)), b0, "{} p={p} n={n}", kind.name());
                }
                let algo = select_for(&call.args(0), &th, &ov);
                check_consistency(&|r| select_for(&call.args(r), &th, &ov), &|r| call.args(r), p)
                    .unwrap_or_else(|e| panic!("{} {}: {e}", kind.name(), algo.name()));
            }
        }
    }
    // Scatter: the root knows the total, the others their part: same size.
    let call = Call::new(CollKind::Scatter, 4, 0, 100);
    assert_eq!(selection_bytes(&call.args(0)), 100);
    assert_eq!(selection_bytes(&call.args(1)), 100);
    // Allgather: the contribution; Alltoall: the whole send buffer (as in the trace).
    assert_eq!(selection_bytes(&Call::new(CollKind::Allgather, 4, 0, 100).args(2)), 100);
    assert_eq!(selection_bytes(&Call::new(CollKind::Alltoall, 4, 0, 100).args(2)), 400);
    // Allgatherv: the total.
    let call = Call::new(CollKind::Allgatherv, 4, 0, 100);
    assert_eq!(selection_bytes(&call.args(1)), call.total());
}

//! Issue 24's replay examples: each now gets a named error or a warning, never a plausible number.
mod common;
use common::*;
use g2g_mpi::{SimError, SimOptions};
use g2g_trace::{MemSpace, Op, OpKind, COLL_NAMES};

fn coll(name: &str, root: i32, bytes: u64) -> Op {
    let k = COLL_NAMES.iter().position(|n| *n == name).unwrap() as u8;
    let mut o = Op::new(OpKind::Coll(k));
    o.set_root(root);
    o.bytes = bytes;
    o.set_recv_bytes(bytes);
    o.mem = MemSpace::Host;
    o
}

fn trace_err(e: SimError) -> g2g_trace::TraceError {
    match e {
        SimError::Trace(t) => t,
        e => panic!("expected a trace error, got {e}"),
    }
}

#[test]
fn bcast_against_reduce_is_a_named_mismatch() {
    let ranks = vec![
        vec![coll("Bcast", 0, 64)],
        vec![coll("Bcast", 0, 64)],
        vec![coll("Reduce", 0, 64)],
        vec![coll("Reduce", 0, 64)],
    ];
    let e = trace_err(run(ranks, SIMPLE, SimOptions::default()).unwrap_err());
    assert_eq!((e.rank, e.seq), (Some(2), Some(0)), "{e}");
    assert!(
        e.msg.contains("collective mismatch")
            && e.msg.contains("calls Reduce root 0 of 64 B")
            && e.msg.contains("rank 0 called Bcast root 0 of 64 B"),
        "{e}"
    );
}

#[test]
fn allreduce_of_different_sizes_is_a_named_mismatch() {
    let mut ranks: Vec<Vec<Op>> = (0..3).map(|_| vec![coll("Allreduce", -1, 8)]).collect();
    ranks.push(vec![coll("Allreduce", -1, 16)]);
    let e = trace_err(run(ranks, SIMPLE, SimOptions::default()).unwrap_err());
    assert_eq!(e.rank, Some(3));
    assert!(e.msg.contains("Allreduce of 16 B") && e.msg.contains("Allreduce of 8 B"), "{e}");
    // a different root
    let ranks = vec![vec![coll("Bcast", 0, 8)], vec![coll("Bcast", 1, 8)]];
    let e = trace_err(run(ranks, SIMPLE, SimOptions::default()).unwrap_err());
    assert!(e.msg.contains("root 1") && e.msg.contains("root 0"), "{e}");
}

#[test]
fn deadlock_lists_every_rank_and_groups_by_call() {
    // 256 ranks each receive from the next: nobody sends
    let n = 256;
    let ranks: Vec<Vec<Op>> = (0..n).map(|r| vec![recv(((r + 1) % n) as i32, 1, 8)]).collect();
    match run(ranks, SIMPLE, SimOptions::default()).unwrap_err() {
        SimError::Deadlock(v) => {
            assert_eq!(v.len(), 256);
            let msg = SimError::Deadlock(v).to_string();
            assert!(msg.starts_with("deadlock: 256 rank(s) blocked forever"), "{msg}");
            assert!(!msg.contains("and 191 more"), "{msg}");
        }
        e => panic!("{e}"),
    }
    // one call for every rank: one group naming all of them
    let ranks: Vec<Vec<Op>> = (0..n).map(|_| vec![recv(0, 1, 8)]).collect();
    let e = run(ranks, SIMPLE, SimOptions::default()).unwrap_err().to_string();
    assert!(e.contains("256 rank(s) 0-255: in Recv peer 0 tag 1 comm 0"), "{e}");
}

#[test]
fn unreceived_eager_send_and_unwaited_request_are_warnings() {
    let ranks = vec![vec![send(1, 5, 8)], vec![compute(10)]];
    let rep = run(ranks.clone(), SIMPLE, SimOptions::default()).unwrap();
    assert_eq!(rep.warnings.len(), 1, "{:?}", rep.warnings);
    assert!(
        rep.warnings[0].contains("rank 1: 1 message(s) (8 B)") && rep.warnings[0].contains("never received"),
        "{:?}",
        rep.warnings
    );
    let e = run(ranks, SIMPLE, SimOptions { strict: true, ..Default::default() }).unwrap_err();
    assert!(e.to_string().contains("strict mode"), "{e}");
    // an Irecv never waited for (its message arrives)
    let ranks = vec![vec![send(1, 5, 8)], vec![irecv(0, 5, 8, 1), compute(100_000)]];
    let rep = run(ranks, SIMPLE, SimOptions::default()).unwrap();
    assert!(rep.warnings.iter().any(|w| w.contains("never waited for") && w.contains("ranks 1")), "{:?}", rep.warnings);
    // a clean exchange has none
    let ranks = vec![vec![send(1, 5, 8)], vec![recv(0, 5, 8)]];
    assert!(run(ranks, SIMPLE, SimOptions::default()).unwrap().warnings.is_empty());
}

#[test]
fn huge_values_are_errors_naming_rank_and_event() {
    // a Memcpy of 2^64 - 1 bytes
    let mut m = Op::new(OpKind::Memcpy);
    m.bytes = u64::MAX;
    m.copy = g2g_trace::CopyKind::D2H;
    let e = trace_err(run(vec![vec![compute(5), m]], SIMPLE, SimOptions::default()).unwrap_err());
    assert_eq!((e.rank, e.seq), (Some(0), Some(1)), "{e}");
    assert!(e.msg.contains("2^60"), "{e}");
    // computes that add up past the simulator's range: an overflow error, not a wrapped time
    let big = 1_000_000_000_000_000u64; // 1e6 s each, the largest allowed
    let ranks = vec![(0..5000).map(|_| compute(big)).collect::<Vec<_>>()];
    let e = trace_err(run(ranks, SIMPLE, SimOptions::default()).unwrap_err());
    assert_eq!(e.rank, Some(0));
    assert!(e.msg.contains("simulated time overflow"), "{e}");
}

#[test]
fn huge_latency_factor_is_an_overflow_error_not_a_smaller_time() {
    // the largest latency and factor the machine file allows: a message's time is past 2^62 ns
    let t = SIMPLE.replace("latency = \"1000ns\"", "latency = \"1000000s\"")
        + "[[mpi.factors]]\npath = \"all\"\nlat_factor = 1000000\n";
    let ranks = vec![vec![send(1, 1, 8)], vec![recv(0, 1, 8)]];
    let e = trace_err(run(ranks, &t, SimOptions::default()).unwrap_err());
    assert!(e.msg.contains("simulated time overflow"), "{e}");
}

#[test]
fn a_large_send_into_a_small_receive_is_a_truncation_warning() {
    let ranks = vec![vec![send(1, 1, 1 << 20)], vec![recv(0, 1, 8)]];
    let rep = run(ranks.clone(), SIMPLE, SimOptions::default()).unwrap();
    assert_eq!(rep.warnings.len(), 1, "{:?}", rep.warnings);
    assert!(
        rep.warnings[0].contains("1 receive(s) got a message larger")
            && rep.warnings[0].contains("receive of 8 B got a 1048576 B message from rank 0"),
        "{:?}",
        rep.warnings
    );
    assert!(run(ranks, SIMPLE, SimOptions { strict: true, ..Default::default() }).is_err());
    // the message arriving first (unexpected) is seen too
    let ranks = vec![vec![send(1, 1, 100)], vec![compute(1_000_000), recv(0, 1, 8)]];
    assert_eq!(run(ranks, SIMPLE, SimOptions::default()).unwrap().warnings.len(), 1);
}

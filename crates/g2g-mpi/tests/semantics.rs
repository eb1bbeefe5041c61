//! Analytic timing of the MPI semantics on tiny traces (issue: core).
mod common;
use common::*;
use g2g_mpi::{Mode, SimError, SimOptions};
use g2g_trace::ANY_SOURCE;

// Inter-node host path on SIMPLE: o_send 200, control/data latency = hop 100 + NIC 1000 = 1100,
// NIC 1 B/ns, o_recv 300.
const LAT: u64 = 1100;

#[test]
fn eager_message_exact() {
    let r = run(vec![vec![send(1, 7, 1000)], vec![recv(0, 7, 1000)]], SIMPLE, SimOptions::default()).unwrap();
    // sender: done after o_send
    assert_eq!(end_ns(&r, 0), 200);
    // data leaves at 200, 1000 B at 1 B/ns, + latency, + o_recv
    assert_eq!(end_ns(&r, 1), 200 + 1000 + LAT + 300);
    assert_eq!(r.paths["host"].messages, 1);
}

#[test]
fn rendezvous_message_exact() {
    let b = 100_000; // above the 64 KiB eager limit
    let r = run(vec![vec![send(1, 0, b)], vec![recv(0, 0, b)]], SIMPLE, SimOptions::default()).unwrap();
    // RTS arrives at 200+LAT, CTS back after LAT, data b ns + LAT
    let data_done = 200 + LAT + LAT + b + LAT;
    assert_eq!(end_ns(&r, 0), data_done);
    assert_eq!(end_ns(&r, 1), data_done + 300);
}

#[test]
fn late_receiver_rendezvous_waits_for_post() {
    let b = 100_000;
    let r =
        run(vec![vec![send(1, 0, b)], vec![compute(50_000), recv(0, 0, b)]], SIMPLE, SimOptions::default()).unwrap();
    // RTS waits in the unexpected queue until the receive is posted at 50000
    let data_done = 50_000 + LAT + b + LAT;
    assert_eq!(end_ns(&r, 0), data_done);
    assert_eq!(end_ns(&r, 1), data_done + 300);
}

#[test]
fn ping_pong() {
    let n = 1000;
    let r = run(
        vec![vec![send(1, 0, n), recv(1, 0, n)], vec![recv(0, 0, n), send(0, 0, n)]],
        SIMPLE,
        SimOptions::default(),
    )
    .unwrap();
    let one_way = 200 + n + LAT + 300; // o_send + data + latency + o_recv
    assert_eq!(end_ns(&r, 0), 2 * one_way);
    assert_eq!(end_ns(&r, 1), one_way + 200);
}

#[test]
fn two_nonblocking_messages_share_the_nic() {
    // rank 0 sends two 10000 B eager... use rendezvous-free eager sizes: both flows share the NIC
    let n = 10_000;
    let r = run(
        vec![
            vec![isend(1, 0, n, 1), isend(1, 1, n, 2), waitall(&[1, 2])],
            vec![irecv(0, 0, n, 1), irecv(0, 1, n, 2), waitall(&[1, 2])],
        ],
        SIMPLE,
        SimOptions::default(),
    )
    .unwrap();
    // both flows start at 200 and share 1 B/ns: each gets 0.5 -> both end at 200 + 2n, + LAT + o_recv
    assert_eq!(end_ns(&r, 1), 200 + 2 * n + LAT + 300);
    // the sender's Isends complete locally after o_send each
    assert_eq!(end_ns(&r, 0), 200);
}

#[test]
fn nonblocking_overlap_hides_communication() {
    let n = 10_000;
    let r = run(
        vec![
            vec![isend(1, 0, n, 1), compute(50_000), waitall(&[1])],
            vec![irecv(0, 0, n, 1), compute(50_000), waitall(&[1])],
        ],
        SIMPLE,
        SimOptions::default(),
    )
    .unwrap();
    // the message (done at 200+n+LAT+300 = 11600) is hidden behind 50 us of compute
    assert_eq!(end_ns(&r, 1), 50_000);
    assert!(r.per_rank[1].comm_s < 1e-9);
}

#[test]
fn any_source_matches_in_arrival_order() {
    // ranks 1 and 2 send to 0; rank 2 sends first (rank 1 computes first). ANY_SOURCE receives
    // match rank 2's message first: the second receive (tag-specific to rank 1's tag) then works.
    let mut r0 = vec![recv(ANY_SOURCE, 5, 100), recv(ANY_SOURCE, 5, 100)];
    r0.push(compute(1));
    let r = run(vec![r0, vec![compute(10_000), send(0, 5, 100)], vec![send(0, 5, 100)]], SIMPLE, SimOptions::default())
        .unwrap();
    let first = 200 + 100 + LAT + 300;
    let second = 10_000 + 200 + 100 + LAT + 300;
    assert_eq!(end_ns(&r, 0), second + 1);
    assert!(end_ns(&r, 0) > first);
    assert_eq!(r.per_op["Recv"].count, 2);
    // the first receive completed at `first`, the second at `second`
    assert_eq!((r.per_op["Recv"].min_s * 1e9).round() as u64, first);
}

#[test]
fn deadlock_is_reported_with_each_blocked_rank() {
    let e = run(vec![vec![recv(1, 3, 8)], vec![recv(0, 4, 8)]], SIMPLE, SimOptions::default()).unwrap_err();
    match &e {
        SimError::Deadlock(lines) => {
            assert_eq!(lines.len(), 2);
            assert!(
                lines[0].contains("rank 0")
                    && lines[0].contains("Recv")
                    && lines[0].contains("peer 1")
                    && lines[0].contains("tag 3"),
                "{}",
                lines[0]
            );
            assert!(lines[1].contains("rank 1") && lines[1].contains("tag 4"), "{}", lines[1]);
        }
        other => panic!("expected deadlock, got {other:?}"),
    }
    assert!(e.to_string().starts_with("deadlock: 2 rank(s) blocked forever"));
}

#[test]
fn wait_on_unknown_request_is_an_error() {
    let e = run(vec![vec![waitall(&[42])]], SIMPLE, SimOptions::default()).unwrap_err();
    match e {
        SimError::Trace(t) => {
            assert_eq!(t.rank, Some(0));
            assert_eq!(t.seq, Some(0));
            assert!(t.msg.contains("request 42"), "{}", t.msg);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn bad_peer_is_an_error_naming_rank_and_event() {
    let e = run(vec![vec![compute(5), send(9, 0, 8)], vec![]], SIMPLE, SimOptions::default()).unwrap_err();
    match e {
        SimError::Trace(t) => {
            assert_eq!((t.rank, t.seq), (Some(0), Some(1)));
            assert!(t.msg.contains("peer 9"));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn same_inputs_give_identical_reports() {
    let mk = || {
        let mut ranks = vec![];
        for r in 0..8i32 {
            let mut v = vec![];
            for it in 0..5 {
                v.push(irecv((r + 7) % 8, it, 5000 + it as u64, 1));
                v.push(isend((r + 1) % 8, it, 5000 + it as u64, 2));
                v.push(compute(1000 * (r as u64 + 1)));
                v.push(waitall(&[1, 2]));
            }
            ranks.push(v);
        }
        ranks
    };
    let a = run(mk(), SIMPLE, SimOptions::default()).unwrap();
    let b = run(mk(), SIMPLE, SimOptions::default()).unwrap();
    let strip = |r: &g2g_mpi::Report| {
        let mut r = r.clone();
        r.engine.wall_s = 0.0;
        r.engine.read_s = 0.0;
        r.engine.events_per_s = 0.0;
        r.engine.ops_per_s = 0.0;
        r.to_json()
    };
    assert_eq!(strip(&a), strip(&b));
    assert!(a.total_time_s > 0.0);
}

#[test]
fn modes_change_device_messages_only() {
    let b = 1_000_000;
    let t = || vec![vec![dev(send(1, 0, b))], vec![dev(recv(0, 0, b))]];
    let host = run(
        vec![vec![send(1, 0, b)], vec![recv(0, 0, b)]],
        SIMPLE,
        SimOptions { mode: Mode::HostCopy, ..Default::default() },
    )
    .unwrap();
    let hc = run(t(), SIMPLE, SimOptions { mode: Mode::HostCopy, ..Default::default() }).unwrap();
    let gd = run(t(), SIMPLE, SimOptions { mode: Mode::GpuDirect, ..Default::default() }).unwrap();
    // HostCopy adds a D2H and an H2D copy (copy_delay 2000 + PCIe latency 50 + b / 10 B/ns each)
    let copy = 2000 + 50 + b / 10;
    assert_eq!(end_ns(&hc, 1), end_ns(&host, 1) + 2 * copy);
    // GPUDirect RDMA: RTS/CTS between the CPUs (LAT each), pinning 4000, one flow PCIe-NIC-PCIe (NIC-bound)
    let lat_rdma = 50 + 100 + 1000 + 50;
    assert_eq!(end_ns(&gd, 1), 200 + LAT * 2 + 4000 + b + lat_rdma + 300);
    assert_eq!(gd.paths["gpudirect-rdma"].messages, 1);
    assert_eq!(hc.paths["hostcopy"].messages, 1);
}

/// Runs `ranks` with a timeline; returns its events.
fn timeline_events(name: &str, ranks: Vec<Vec<g2g_trace::Op>>, mode: Mode) -> Vec<serde_json::Value> {
    let dir = std::env::temp_dir().join(format!("g2g-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("t.json");
    let opt = SimOptions { timeline: Some(path.display().to_string()), mode, ..Default::default() };
    run(ranks, SIMPLE, opt).unwrap();
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    std::fs::remove_dir_all(&dir).ok();
    v["traceEvents"].as_array().unwrap().clone()
}

#[test]
fn timeline_is_valid_chrome_trace_json() {
    let ev = timeline_events(
        "tl",
        vec![vec![dev(send(1, 0, 100_000)), compute(10)], vec![dev(recv(0, 0, 100_000))]],
        Mode::HostCopy,
    );
    let names: Vec<&str> = ev.iter().filter_map(|e| e["name"].as_str()).collect();
    assert!(names.contains(&"Send") && names.contains(&"Recv") && names.contains(&"Compute"));
    assert!(ev.iter().any(|e| e["cat"] == "copy"), "HostCopy staging copies appear on the GPU track");
    assert_eq!(ev.iter().filter(|e| e["ph"] == "s").count(), 1);
    assert_eq!(ev.iter().filter(|e| e["ph"] == "f").count(), 1);
}

#[test]
fn timeline_flow_arrows_pair_each_message() {
    // two messages in flight at once (their ids are kept apart from the message records): each
    // arrow's start and end carry the same id, and the two messages' ids differ
    let r0 = vec![dev(isend(1, 0, 100_000, 1)), dev(isend(1, 1, 50_000, 2)), waitall(&[1, 2])];
    let r1 = vec![dev(irecv(0, 1, 50_000, 1)), dev(irecv(0, 0, 100_000, 2)), waitall(&[1, 2])];
    let ev = timeline_events("tl2", vec![r0, r1], Mode::GpuDirect);
    let ids = |ph: &str| -> Vec<u64> {
        let mut v: Vec<u64> = ev.iter().filter(|e| e["ph"] == ph).map(|e| e["id"].as_u64().unwrap()).collect();
        v.sort();
        v
    };
    let (s, f) = (ids("s"), ids("f"));
    assert_eq!(s.len(), 2);
    assert_eq!(s, f, "every arrow ends with its own id");
    assert_ne!(s[0], s[1]);
}

/// The call-times file (`SimOptions::call_times`) holds every call's duration, rank by rank in
/// trace order: the same numbers as the timeline's call slices (to its ns), and a rank's calls
/// add up to its end time.
#[test]
fn call_times_are_the_timelines_call_durations() {
    let dir = std::env::temp_dir().join(format!("g2g-calls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (tl, ct) = (dir.join("t.json"), dir.join("t.calls"));
    let r0 =
        vec![compute(700), dev(isend(1, 0, 100_000, 1)), dev(isend(1, 1, 50_000, 2)), waitall(&[1, 2]), compute(0)];
    let r1 = vec![dev(irecv(0, 1, 50_000, 1)), dev(irecv(0, 0, 100_000, 2)), compute(300), waitall(&[1, 2])];
    let opt = SimOptions {
        timeline: Some(tl.display().to_string()),
        call_times: Some(ct.display().to_string()),
        mode: Mode::HostCopy,
        ..Default::default()
    };
    let rep = run(vec![r0, r1], SIMPLE, opt).unwrap();
    let bytes = std::fs::read(&ct).unwrap();
    let w: Vec<u64> = bytes.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())).collect();
    assert_eq!(bytes.len() % 8, 0);
    assert_eq!(&w[..3], &[u64::from_le_bytes(*b"G2GCALLS"), 1, 2]);
    let (n0, n1) = (w[3] as usize, w[4] as usize);
    assert_eq!((n0, n1), (5, 4), "every call of each rank");
    assert_eq!(w.len(), 5 + n0 + n1);
    let per_rank = [&w[5..5 + n0], &w[5 + n0..]];
    for (r, d) in per_rank.iter().enumerate() {
        assert_eq!(d.iter().sum::<u64>(), end_ns(&rep, r), "rank {r}: its calls add up to its end");
    }
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&tl).unwrap()).unwrap();
    let mut seen = 0;
    for e in v["traceEvents"].as_array().unwrap() {
        if e["ph"] == "X" && e["args"]["event"].is_u64() {
            let (r, k) = (e["tid"].as_u64().unwrap() as usize, e["args"]["event"].as_u64().unwrap() as usize);
            let dur_ns = (e["dur"].as_f64().unwrap() * 1000.0).round() as u64;
            assert_eq!(per_rank[r][k], dur_ns, "rank {r} call {k}");
            seen += 1;
        }
    }
    assert_eq!(seen, n0 + n1 - 1, "the timeline leaves out only the empty compute");
    std::fs::remove_dir_all(&dir).ok();
}

//! Inter-node messages (issue 25, item 5): the NIC shared by the GPUs of a node, and each rank's
//! own ports to it (`node.nic.rank_bw`: one process's injection and ejection rate).
mod common;
use common::*;
use g2g_mpi::SimOptions;
use g2g_trace::Op;

/// SIMPLE with two GPUs per node sharing one NIC of 1 GB/s; `rank_bw` sets `node.nic.rank_bw`.
fn two_per_node(rank_bw: Option<&str>) -> String {
    let mut t = SIMPLE.replace("gpus = 1", "gpus = 2");
    if let Some(bw) = rank_bw {
        t = t.replace("[node.nic]\n", &format!("[node.nic]\nrank_bw = \"{bw}\"\n"));
    }
    t
}

/// Host messages of `b` bytes from rank `s` to rank `d` for each (s, d), all at once (4 ranks:
/// 0, 1 on node 0; 2, 3 on node 1).
fn messages(pairs: &[(usize, usize)], b: u64) -> Vec<Vec<Op>> {
    let mut v: Vec<Vec<Op>> = (0..4).map(|_| vec![]).collect();
    for &(s, d) in pairs {
        v[s].push(send(d as i32, 0, b));
        v[d].push(recv(s as i32, 0, b));
    }
    v
}

#[test]
fn one_rank_is_held_to_its_port_and_two_ranks_share_the_nic() {
    let b: u64 = 4_000_000;
    let end = |pairs: &[(usize, usize)], rank_bw: Option<&str>| {
        let r = run(messages(pairs, b), &two_per_node(rank_bw), SimOptions::default()).unwrap();
        pairs.iter().map(|&(_, d)| end_ns(&r, d)).max().unwrap() as f64
    };
    // without ports: one pair moves at the NIC's 1 GB/s, two pairs share it (0.5 GB/s each)
    let one = end(&[(0, 2)], None);
    let two = end(&[(0, 2), (1, 3)], None);
    assert!((two - one - b as f64).abs() < 10.0, "one {one} two {two}");
    // with 0.4 GB/s ports: one pair is held to 0.4 GB/s (4 MB: 10 ms instead of 4 ms) ...
    let one_p = end(&[(0, 2)], Some("0.4GB/s"));
    assert!((one_p - one - (b as f64 / 0.4 - b as f64)).abs() < 10.0, "one {one} with ports {one_p}");
    // ... and a second pair through the same NIC adds its own 0.4 GB/s (0.8 < 1 GB/s): the node's
    // bandwidth grows with the ranks that use the NIC (seed 001: "with more MPI processes
    // communicating simultaneously, the observed max effective bandwidth will increase")
    let two_p = end(&[(0, 2), (1, 3)], Some("0.4GB/s"));
    assert!((two_p - one_p).abs() < 10.0, "one pair {one_p} two pairs {two_p}");
    // three ranks' ports would exceed the NIC: ports of 0.8 GB/s, two pairs get 0.5 GB/s each
    let two_fast = end(&[(0, 2), (1, 3)], Some("0.8GB/s"));
    assert!((two_fast - two).abs() < 10.0, "the NIC binds again: {two_fast} vs {two}");
}

#[test]
fn ports_apply_across_nodes_only() {
    let b: u64 = 4_000_000;
    let same = |rank_bw| {
        let r = run(messages(&[(0, 1)], b), &two_per_node(rank_bw), SimOptions::default()).unwrap();
        end_ns(&r, 1)
    };
    assert_eq!(same(None), same(Some("0.1GB/s")), "an intra-node message does not use the NIC ports");
}

#[test]
fn a_bad_rank_bw_names_the_key_and_line() {
    let text = two_per_node(Some("4GB"));
    let e = g2g_net::MachineConfig::from_toml(&text, "m.toml").unwrap_err();
    assert_eq!(e.key, "node.nic.rank_bw", "{e}");
    assert!(e.to_string().contains("m.toml:"), "{e}");
}

#[test]
fn network_scale_says_the_rank_ports_stay() {
    let b: u64 = 4_000_000;
    let opt = SimOptions { network_scale: 2.0, ..Default::default() };
    let r = run(messages(&[(0, 2)], b), &two_per_node(Some("0.4GB/s")), opt).unwrap();
    assert!(r.assumptions.iter().any(|a| a.contains("node.nic.rank_bw") && a.contains("not")), "{:?}", r.assumptions);
    // the port binds: doubling the NIC changes nothing for one pair
    let base = run(messages(&[(0, 2)], b), &two_per_node(Some("0.4GB/s")), SimOptions::default()).unwrap();
    assert_eq!(end_ns(&r, 2), end_ns(&base, 2));
    let r = run(messages(&[(0, 2)], b), &two_per_node(None), SimOptions { network_scale: 2.0, ..Default::default() })
        .unwrap();
    assert!(!r.assumptions.iter().any(|a| a.contains("node.nic.rank_bw")));
}

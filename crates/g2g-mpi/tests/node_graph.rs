//! The node as built (issue 25): sockets and the link between them, GPU-CPU links, NVLink bricks
//! per pair, NICs per socket, and copy engines shared by concurrent transfers.
mod common;
use common::*;
use g2g_mpi::{Mode, SimOptions};
use g2g_trace::Op;

fn gd() -> SimOptions {
    SimOptions { mode: Mode::GpuDirect, ..Default::default() }
}

fn preset(name: &str) -> String {
    std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../python/g2gsim/presets/{name}.toml")),
    )
    .unwrap()
}

/// Rank 0 sends `b` device bytes to rank `dst` of a one-node job of `n` ranks; the others idle.
fn one_message(n: usize, dst: usize, b: u64) -> Vec<Vec<Op>> {
    let mut v: Vec<Vec<Op>> = (0..n).map(|_| vec![]).collect();
    v[0].push(dev(send(dst as i32, 0, b)));
    v[dst].push(dev(recv(0, 0, b)));
    v
}

#[test]
fn lassen_cross_socket_pair_is_slower_than_a_same_socket_pair_by_the_x_bus() {
    // lassen: GPUs 0, 1 on socket 0 (3 NVLink bricks, 75 GB/s), 2, 3 on socket 1; a pair across
    // sockets goes GPU -> CPU (NVLink 75 GB/s, 1 us) -> X-Bus (32 GB/s) -> CPU -> GPU (75 GB/s, 1 us)
    let text = preset("lassen");
    let b: u64 = 64 << 20;
    let same = run(one_message(4, 1, b), &text, gd()).unwrap();
    let cross = run(one_message(4, 2, b), &text, gd()).unwrap();
    assert_eq!(same.paths["gpudirect-p2p"].messages, 1);
    assert_eq!(cross.paths["gpudirect-p2p"].messages, 1);
    let t_same = end_ns(&same, 1) as f64;
    let t_cross = end_ns(&cross, 2) as f64;
    // the data moves at the X-Bus rate instead of the bricks', and pays two CPU-link latencies and
    // the X-Bus's (50 ns) instead of one NVLink latency; the rendezvous's control messages (RTS,
    // CTS: shared memory, 0.3 us) cross the X-Bus too, 50 ns each
    let xbus = 50.0;
    let want = b as f64 / 32.0 - b as f64 / 75.0 + (1000.0 + 1000.0 + xbus - 700.0) + 2.0 * xbus;
    assert!(
        (t_cross - t_same - want).abs() < 10.0,
        "cross {t_cross} same {t_same}: difference {} want {want}",
        t_cross - t_same
    );
    assert!(t_cross > 2.0 * t_same);
}

#[test]
fn two_cross_socket_transfers_share_the_x_bus() {
    let text = preset("lassen");
    let b: u64 = 64 << 20;
    let one = run(one_message(4, 2, b), &text, gd()).unwrap();
    // 0 -> 2 and 1 -> 3 at once: both cross the X-Bus from socket 0 to socket 1 (32 GB/s shared)
    let ranks =
        vec![vec![dev(send(2, 0, b))], vec![dev(send(3, 0, b))], vec![dev(recv(0, 0, b))], vec![dev(recv(1, 0, b))]];
    let two = run(ranks, &text, gd()).unwrap();
    let t1 = end_ns(&one, 2) as f64;
    let t2 = end_ns(&two, 2).max(end_ns(&two, 3)) as f64;
    let data = b as f64 / 32.0;
    assert!((t2 - t1 - data).abs() < 10.0, "one {t1} two {t2}: the second transfer should add {data} ns");
    // the same-socket pairs 0 -> 1 and 2 -> 3 have their own bricks: no sharing
    let ranks =
        vec![vec![dev(send(1, 0, b))], vec![dev(recv(0, 0, b))], vec![dev(send(3, 0, b))], vec![dev(recv(2, 0, b))]];
    let own = run(ranks, &text, gd()).unwrap();
    let same = run(one_message(4, 1, b), &text, gd()).unwrap();
    assert_eq!(end_ns(&own, 1), end_ns(&same, 1));
}

#[test]
fn lassen_host_messages_across_sockets_cross_the_x_bus() {
    // host buffers of ranks on different sockets: shared memory, then the X-Bus; two such
    // messages at once in opposite directions use the two directions of the X-Bus
    let text = preset("lassen").replace("shm_bw = \"25GB/s\"", "shm_bw = \"100GB/s\"");
    let b: u64 = 64 << 20;
    let same =
        run(vec![vec![send(1, 0, b)], vec![recv(0, 0, b)], vec![], vec![]], &text, SimOptions::default()).unwrap();
    let cross =
        run(vec![vec![send(2, 0, b)], vec![], vec![recv(0, 0, b)], vec![]], &text, SimOptions::default()).unwrap();
    let d = end_ns(&cross, 2) as f64 - end_ns(&same, 1) as f64;
    // the X-Bus's rate, and its latency (50 ns) on the data and on the RTS and CTS
    let want = b as f64 / 32.0 - b as f64 / 100.0 + 3.0 * 50.0;
    assert!((d - want).abs() < 10.0, "difference {d} want {want}");
}

#[test]
fn summit_nic_per_socket_and_lassen_shared_nic_across_the_x_bus() {
    // Summit: GPUs 0-2 use the port of socket 0, 3-5 that of socket 1; two nodes, ranks 0 -> 6
    // and 3 -> 9 at once do not share a NIC
    let text = preset("summit");
    let b: u64 = 16 << 20;
    let mut ranks: Vec<Vec<Op>> = (0..12).map(|_| vec![]).collect();
    ranks[0].push(dev(send(6, 0, b)));
    ranks[6].push(dev(recv(0, 0, b)));
    let one = run(ranks.clone(), &text, gd()).unwrap();
    ranks[3].push(dev(send(9, 0, b)));
    ranks[9].push(dev(recv(3, 0, b)));
    let two = run(ranks, &text, gd()).unwrap();
    assert_eq!(one.paths["gpudirect-rdma"].messages, 1);
    assert_eq!(end_ns(&two, 6), end_ns(&one, 6));
    assert_eq!(end_ns(&two, 9), end_ns(&one, 6));
}

/// Four GPUs, a direct NVLink of 100 GB/s per pair (nothing shared between pairs), and `engines`
/// copy engines of 100 GB/s per GPU (None: engines not modelled).
fn four_gpus(engines: Option<u32>) -> String {
    let mut t = SIMPLE.replace("gpus = 1", "gpus = 4");
    if let Some(e) = engines {
        t = t.replace("[gpu]\n", &format!("[gpu]\ncopy_engines = {e}\ncopy_engine_bw = \"100GB/s\"\n"));
    }
    t
}

/// Every rank exchanges `b` device bytes with every other at once (Irecv all, Isend all, Waitall).
fn all_pairs(n: i32, b: u64) -> Vec<Vec<Op>> {
    (0..n)
        .map(|r| {
            let peers: Vec<i32> = (0..n).filter(|&p| p != r).collect();
            let mut v: Vec<Op> = peers.iter().enumerate().map(|(j, &p)| dev(irecv(p, 0, b, 1 + j as u64))).collect();
            v.extend(peers.iter().enumerate().map(|(j, &p)| dev(isend(p, 0, b, 10 + j as u64))));
            let reqs: Vec<u64> = (0..peers.len() as u64).flat_map(|j| [1 + j, 10 + j]).collect();
            v.push(waitall(&reqs));
            v
        })
        .collect()
}

fn exchange_time_ns(ranks: Vec<Vec<Op>>, text: &str) -> f64 {
    let r = run(ranks, text, gd()).unwrap();
    (0..r.per_rank.len()).map(|i| end_ns(&r, i)).max().unwrap() as f64
}

#[test]
fn all_pairs_among_four_gpus_is_slower_per_peer_than_one_pair_by_the_copy_engines() {
    let b: u64 = 100_000_000; // 1 ms at 100 GB/s
    let data_ns = b as f64 / 100.0;
    for (engines, want_factor) in [(None, 1.0), (Some(3), 1.0), (Some(2), 2.0), (Some(1), 3.0)] {
        let t = four_gpus(engines);
        let pair = exchange_time_ns(all_pairs(2, b), &t);
        let all = exchange_time_ns(all_pairs(4, b), &t);
        // the receiving GPU pulls each peer's data on one of its engines, round robin: three
        // incoming transfers on E engines, the busiest engine carries ceil(3 / E) of them
        let extra = all - pair;
        let want = (want_factor - 1.0) * data_ns;
        assert!(
            (extra - want).abs() < 0.001 * data_ns + 50.0,
            "engines {engines:?}: pair {pair} all-pairs {all}: extra {extra} want {want}"
        );
    }
}

#[test]
fn a_copy_next_to_a_p2p_pull_shares_the_copy_engine() {
    // one engine of 100 GB/s per GPU, CPU links of 100 GB/s, no copy latency: a 1 ms D2H copy of
    // GPU 1 while GPU 1 pulls a 1 ms P2P message: both on its one engine, each at half the rate
    let t = four_gpus(Some(1))
        .replace("copy_delay = \"2000ns\"", "copy_delay = \"0ns\"")
        .replace("bw = \"10GB/s\"", "bw = \"100GB/s\"");
    let b: u64 = 100_000_000;
    let data_ns = b as f64 / 100.0;
    let mut copy = Op::new(g2g_trace::OpKind::Memcpy);
    copy.copy = g2g_trace::CopyKind::D2H;
    copy.bytes = b;
    let alone = run(vec![vec![], vec![copy.clone()], vec![], vec![]], &t, gd()).unwrap();
    assert!((end_ns(&alone, 1) as f64 - data_ns).abs() < 0.01 * data_ns, "copy alone {}", end_ns(&alone, 1));
    let ranks = vec![vec![dev(send(1, 0, b))], vec![dev(irecv(0, 0, b, 1)), copy, waitall(&[1])], vec![], vec![]];
    let both = run(ranks, &t, gd()).unwrap();
    let t_both = end_ns(&both, 1) as f64;
    assert!(
        (t_both - 2.0 * data_ns).abs() < 0.01 * data_ns,
        "copy and pull on one engine: {t_both}, want about {}",
        2.0 * data_ns
    );
    // with two engines they do not share
    let t2 = four_gpus(Some(2))
        .replace("copy_delay = \"2000ns\"", "copy_delay = \"0ns\"")
        .replace("bw = \"10GB/s\"", "bw = \"100GB/s\"");
    let mut copy = Op::new(g2g_trace::OpKind::Memcpy);
    copy.copy = g2g_trace::CopyKind::D2H;
    copy.bytes = b;
    let ranks = vec![vec![dev(send(1, 0, b))], vec![dev(irecv(0, 0, b, 1)), copy, waitall(&[1])], vec![], vec![]];
    let both2 = run(ranks, &t2, gd()).unwrap();
    assert!((end_ns(&both2, 1) as f64 - data_ns).abs() < 0.02 * data_ns, "two engines: {}", end_ns(&both2, 1));
}

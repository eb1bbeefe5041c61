//! Collectives replayed as point-to-point schedules: closed forms on an uncontended network.
mod common;
use common::*;
use g2g_mpi::SimOptions;
use g2g_trace::{Op, OpKind};

// SIMPLE: inter-node host path, o_send 200, latency 1100, 1 B/ns, o_recv 300, cpu reduce 5 B/ns.
const T0: u64 = 200 + 1100 + 300; // a 0-byte eager hop

fn coll(kind: &str, bytes: u64, root: i32) -> Op {
    let mut o = Op::new(OpKind::parse(kind).unwrap());
    o.bytes = bytes;
    o.set_recv_bytes(bytes);
    o.set_root(root);
    o
}

fn opts(algos: &str) -> SimOptions {
    SimOptions { coll_algos: algos.into(), ..Default::default() }
}

#[test]
fn binomial_bcast_is_log_p_hops() {
    let p = 8;
    // a 1-byte broadcast (a 0-byte one moves nothing, as in MPI libraries)
    let ranks = (0..p).map(|_| vec![coll("Bcast", 1, 0)]).collect();
    let r = run(ranks, SIMPLE, opts("bcast=binomial")).unwrap();
    let hop = T0 + 1;
    let o = 200; // each forwarding send costs its sender o_send before the next round
                 // root sends to 4, 2, 1 in rounds 0, 1, 2; rank 4 forwards to 6 then 5; 2 to 3; 6 to 7
    let recv_at = |k: usize| match k {
        4 => hop,
        2 => o + hop,
        1 => 2 * o + hop,
        6 => hop + hop,
        5 => hop + o + hop,
        3 => o + hop + hop,
        7 => 3 * hop,
        _ => 0,
    };
    let children = [3u64, 0, 1, 0, 2, 0, 1, 0];
    for k in 1..p {
        // a rank ends after receiving and then posting one eager send per child
        assert_eq!(end_ns(&r, k), recv_at(k) + children[k] * o, "rank {k}");
    }
    assert_eq!(end_ns(&r, 7), 3 * hop, "the deepest leaf is log2(p) hops away");
    assert_eq!(end_ns(&r, 0), 3 * o);
    assert_eq!(r.collective_messages, 7);
    assert_eq!(r.per_op["Bcast"].count, 8);
}

#[test]
fn ring_allreduce_matches_closed_form() {
    let p = 4u64;
    let b = 4000u64; // chunk 1000 B
    let ranks = (0..p).map(|_| vec![coll("Allreduce", b, -1)]).collect();
    let r = run(ranks, SIMPLE, opts("allreduce=ring")).unwrap();
    let round = 200 + b / p + 1100 + 300; // send and receive a chunk at once (full duplex NIC)
    let reduce = (b / p) / 5; // 1000 B at 5 B/ns on the CPU
    let expect = 2 * (p - 1) * round + (p - 1) * reduce;
    for k in 0..p as usize {
        assert_eq!(end_ns(&r, k), expect, "rank {k}");
    }
    assert_eq!(r.collective_messages, p * 2 * (p - 1));
}

#[test]
fn dissemination_barrier_on_sub_communicator() {
    use g2g_trace::{CommDef, MemTrace};
    // ranks 1, 3, 5 form communicator 7; the others do nothing
    let mut ranks: Vec<Vec<Op>> = (0..6).map(|_| vec![]).collect();
    for w in [1usize, 3, 5] {
        let mut o = coll("Barrier", 0, -1);
        o.comm = 7;
        ranks[w].push(o);
    }
    let mut t = MemTrace::new(ranks).with_comms(vec![
        CommDef { id: 0, name: "world".into(), members: None },
        CommDef { id: 7, name: "odd".into(), members: Some(vec![1, 3, 5]) },
    ]);
    let r = g2g_mpi::simulate(&mut t, cfg(SIMPLE), opts("barrier=dissemination"), 0, None).unwrap();
    // ceil(log2 3) = 2 rounds, each a 0-byte exchange
    for w in [1usize, 3, 5] {
        assert_eq!(end_ns(&r, w), 2 * T0);
    }
    assert_eq!(r.collective_messages, 6);
}

#[test]
fn nonblocking_collective_overlaps_compute() {
    let p = 4;
    let ranks = (0..p)
        .map(|_| {
            let mut ib = coll("Iallreduce", 8, -1);
            ib.req = 9;
            let mut w = Op::new(OpKind::Wait);
            w.req = 9;
            vec![ib, compute(100_000), w]
        })
        .collect();
    let r = run(ranks, SIMPLE, SimOptions::default()).unwrap();
    for k in 0..p {
        assert_eq!(end_ns(&r, k), 100_000, "the 8-byte allreduce hides behind 100 us of compute");
    }
}

#[test]
fn collective_on_device_buffers_hostcopy_stages_both_buffers() {
    let p = 2;
    let b = 1_000_000u64;
    let mk = || (0..p).map(|_| vec![dev(coll("Allreduce", b, -1))]).collect::<Vec<_>>();
    let hc = run(
        mk(),
        SIMPLE,
        SimOptions {
            mode: g2g_mpi::Mode::HostCopy,
            coll_algos: "allreduce=recursive_doubling".into(),
            ..Default::default()
        },
    )
    .unwrap();
    let gd = run(
        mk(),
        SIMPLE,
        SimOptions {
            mode: g2g_mpi::Mode::GpuDirect,
            coll_algos: "allreduce=recursive_doubling".into(),
            ..Default::default()
        },
    )
    .unwrap();
    let copy = 2000 + 50 + b / 10;
    // HostCopy: D2H, host exchange (rendezvous), CPU reduction, H2D
    let host_x = 200 + 1100 + 1100 + b + 1100 + 300;
    assert_eq!(end_ns(&hc, 0), copy + host_x + b / 5 + copy);
    // GPUDirect: RDMA exchange with pinning, GPU reduction at 500 B/ns
    let rdma_lat = 50 + 100 + 1000 + 50;
    assert_eq!(end_ns(&gd, 0), 200 + 1100 + 1100 + 4000 + b + rdma_lat + 300 + b / 500);
}

#[test]
fn collectives_on_single_rank_communicators_finish_in_place() {
    use g2g_trace::{CommDef, MemTrace};
    // each rank runs collectives on its own COMM_SELF-like communicator between computes
    let mut ranks: Vec<Vec<Op>> = vec![];
    for r in 0..2u32 {
        let mut v = vec![compute(1000)];
        for kind in ["Barrier", "Allreduce", "Bcast", "Alltoall"] {
            let mut o = coll(kind, 64, if kind == "Bcast" { 0 } else { -1 });
            o.comm = 10 + r;
            v.push(o);
            v.push(compute(500));
        }
        ranks.push(v);
    }
    let mut t = MemTrace::new(ranks).with_comms(vec![
        CommDef { id: 0, name: "world".into(), members: None },
        CommDef { id: 10, name: "self0".into(), members: Some(vec![0]) },
        CommDef { id: 11, name: "self1".into(), members: Some(vec![1]) },
    ]);
    let r = g2g_mpi::simulate(&mut t, cfg(SIMPLE), SimOptions::default(), 0, None).unwrap();
    for k in 0..2 {
        assert_eq!(end_ns(&r, k), 1000 + 4 * 500, "rank {k}");
    }
    assert_eq!(r.per_op["Compute"].count, 10);
    assert_eq!(r.per_op["Barrier"].count, 2);
}

#[test]
fn a_long_run_of_one_rank_collectives_does_not_recurse() {
    use g2g_trace::{CommDef, MemTrace};
    let mut v = vec![];
    for _ in 0..100_000 {
        let mut o = coll("Barrier", 0, -1);
        o.comm = 5;
        v.push(o);
    }
    let mut t = MemTrace::new(vec![v]).with_comms(vec![
        CommDef { id: 0, name: "world".into(), members: None },
        CommDef { id: 5, name: "self".into(), members: Some(vec![0]) },
    ]);
    let r = g2g_mpi::simulate(&mut t, cfg(SIMPLE), SimOptions::default(), 0, None).unwrap();
    assert_eq!(r.per_op["Barrier"].count, 100_000);
}

#[test]
fn hostcopy_bcast_copies_out_at_the_root_and_in_elsewhere() {
    let b = 1_000_000u64;
    let mk = || (0..2).map(|_| vec![dev(coll("Bcast", b, 0))]).collect::<Vec<_>>();
    let hc = run(mk(), SIMPLE, SimOptions { mode: g2g_mpi::Mode::HostCopy, ..Default::default() }).unwrap();
    let copy = 2000 + 50 + b / 10;
    // one copy per rank: D2H at the root before sending, H2D at the receiver after
    assert_eq!(hc.per_rank[0].copy_s, copy as f64 * 1e-9);
    assert_eq!(hc.per_rank[1].copy_s, copy as f64 * 1e-9);
    let host_x = 200 + 1100 + 1100 + b + 1100 + 300;
    assert_eq!(end_ns(&hc, 1), copy + host_x + copy);
}

#[test]
fn staged_device_collectives_go_through_the_host_in_chunks() {
    // mpi.device_collectives = "staged": a CUDA-aware MPI stages collective messages on device
    // buffers through host memory itself (seed 000's profile), in chunks of mpi.collective_chunk,
    // even inside a node; point-to-point messages keep GPUDirect P2P.
    let two = SIMPLE.replace("gpus = 1", "gpus = 2");
    let staged = two.replace("recv_overhead = \"300ns\"", "recv_overhead = \"300ns\"\ndevice_collectives = \"staged\"\ncollective_chunk = \"2000B\"\ncollective_depth = 2");
    let b = 10_000u64; // 5 chunks of 2000 B
    let o = SimOptions { mode: g2g_mpi::Mode::GpuDirect, coll_algos: "bcast=binomial".into(), ..Default::default() };
    let bcast = || vec![vec![dev(coll("Bcast", b, 0))], vec![dev(coll("Bcast", b, 0))]];
    let r = run(bcast(), &staged, o.clone()).unwrap();
    assert_eq!(r.paths["pipelined"].messages, 1, "the Bcast message is staged");
    // per chunk: D2H copy 2000 + 2000/10 + PCIe 50; shared memory 2000/5 + 10; H2D as D2H
    let ctl = 10; // RTS and CTS over shared memory
                  // rendezvous (GPU buffers): o_send, RTS, CTS, the staged chunks, o_recv
    assert_eq!(end_ns(&r, 1), 200 + ctl + ctl + pipeline_ns(5, [2250, 410, 2250], 2) + 300);
    // "direct" (the default): the same Bcast GPU to GPU over NVLink (pinning 4000, 10_000/100 + 20)
    let d = run(bcast(), &two, o.clone()).unwrap();
    assert!(!d.paths.contains_key("pipelined"));
    assert_eq!(end_ns(&d, 1), 200 + ctl + ctl + 4000 + b / 100 + 20 + 300);
    // a list stages only the collectives named: here the Bcast stays GPU to GPU
    let only_scatter = staged.replace("device_collectives = \"staged\"", "device_collectives = [\"Scatter\"]");
    let l = run(bcast(), &only_scatter, o.clone()).unwrap();
    assert!(!l.paths.contains_key("pipelined"));
    assert_eq!(end_ns(&l, 1), end_ns(&d, 1));
    // point-to-point messages on device buffers are not staged
    let mixed =
        vec![vec![dev(coll("Bcast", b, 0)), dev(send(1, 7, b))], vec![dev(coll("Bcast", b, 0)), dev(recv(0, 7, b))]];
    let r = run(mixed, &staged, o.clone()).unwrap();
    assert_eq!((r.paths["pipelined"].messages, r.paths["gpudirect-p2p"].messages), (1, 1));
    // across nodes (1 GPU per node) the staged collective takes the NIC instead of GPUDirect RDMA
    let staged1 = staged.replace("gpus = 2", "gpus = 1");
    let r = run(bcast(), &staged1, o).unwrap();
    assert_eq!(r.paths["pipelined"].messages, 1);
    // per chunk: D2H 2250; network 2000/1 + hop 100 + NIC 1000; H2D 2250; RTS/CTS 1100 each
    assert_eq!(end_ns(&r, 1), 200 + 1100 + 1100 + pipeline_ns(5, [2250, 3100, 2250], 2) + 300);
}

#[test]
fn collectives_on_page_locked_buffers_take_the_staged_factors() {
    // a hostcopy bin at half the rate: a 1000-byte Bcast between two nodes moves at 0.5 B/ns when
    // its buffers are page-locked (`pinned`), at 1 B/ns on ordinary host memory
    let m = SIMPLE.replace("[gpu]", "[[mpi.factors]]\npath = \"hostcopy\"\nbw_factor = 0.5\n\n[gpu]");
    assert_ne!(m, SIMPLE);
    let b = 1000;
    let bcast = |mem| {
        let ranks = (0..2)
            .map(|_| {
                let mut o = coll("Bcast", b, 0);
                o.mem = mem;
                vec![o]
            })
            .collect();
        end_ns(&run(ranks, &m, opts("bcast=binomial")).unwrap(), 1)
    };
    assert_eq!(bcast(g2g_trace::MemSpace::Host), T0 + b);
    assert_eq!(bcast(g2g_trace::MemSpace::Pinned), T0 + 2 * b);
}

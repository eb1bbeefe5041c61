//! Analytic tests of the machine model and data paths (issue: machine and GPU data paths).
mod common;
use common::*;
use g2g_mpi::{Mode, SimOptions};
use g2g_net::machine::{Machine, Placement};
use g2g_net::paths::{self, DataPath, Endpoint};

// SIMPLE (common.rs): PCIe 10 B/ns lat 50, NVLink 100 B/ns lat 20, shm 5 B/ns lat 10, NIC 1 B/ns,
// NIC latency 1000, hop 100, o_send 200, o_recv 300, copy_delay 2000, gpudirect_delay 4000,
// eager 64 KiB, pipeline 1000 B chunks, depth 2.

fn two_gpu_node() -> String {
    SIMPLE.replace("gpus = 1", "gpus = 2")
}

fn gd() -> SimOptions {
    SimOptions { mode: Mode::GpuDirect, ..Default::default() }
}

#[test]
fn host_intra_node_via_shared_memory() {
    let t = two_gpu_node();
    let b = 50_000; // eager
    let r = run(vec![vec![send(1, 0, b)], vec![recv(0, 0, b)]], &t, SimOptions::default()).unwrap();
    assert_eq!(end_ns(&r, 1), 200 + b / 5 + 10 + 300);
}

#[test]
fn gpudirect_p2p_over_nvlink() {
    let t = two_gpu_node();
    let b = 1_000_000;
    let r = run(vec![vec![dev(send(1, 0, b))], vec![dev(recv(0, 0, b))]], &t, gd()).unwrap();
    // rendezvous: RTS + CTS as host control messages (shm latency 10), pinning 4000, data b/100, NVLink latency 20
    assert_eq!(end_ns(&r, 1), 200 + 10 + 10 + 4000 + b / 100 + 20 + 300);
    assert_eq!(r.paths["gpudirect-p2p"].messages, 1);
}

#[test]
fn gpudirect_p2p_over_pcie_without_nvlink() {
    let t = two_gpu_node().replace("kind = \"all-to-all\"\nbw = \"100GB/s\"", "kind = \"none\"");
    let b = 1_000_000;
    let r = run(vec![vec![dev(send(1, 0, b))], vec![dev(recv(0, 0, b))]], &t, gd()).unwrap();
    // PCIe up + PCIe down: latency 100, 10 B/ns; control messages over shared memory (10)
    assert_eq!(end_ns(&r, 1), 200 + 10 + 10 + 4000 + b / 10 + 100 + 300);
}

#[test]
fn hostcopy_intra_node_adds_both_copies() {
    let t = two_gpu_node();
    let b = 1_000_000;
    let hc = run(
        vec![vec![dev(send(1, 0, b))], vec![dev(recv(0, 0, b))]],
        &t,
        SimOptions { mode: Mode::HostCopy, ..Default::default() },
    )
    .unwrap();
    let copy = 2000 + 50 + b / 10;
    // D2H, then a host rendezvous over shared memory (lat 10, 5 B/ns), then H2D
    assert_eq!(end_ns(&hc, 1), copy + 200 + 10 + 10 + b / 5 + 10 + 300 + copy);
}

#[test]
fn pipelined_staging_matches_closed_form() {
    // no GPUDirect RDMA: a CUDA-aware MPI pipelines chunks D2H -> network -> H2D
    let t = SIMPLE.replace("affinity = \"shared\"", "affinity = \"shared\"\ngpudirect_rdma = false");
    let b = 10_000; // 10 chunks of 1000 B
    let r = run(vec![vec![dev(send(1, 0, b))], vec![dev(recv(0, 0, b))]], &t, gd()).unwrap();
    assert_eq!(r.paths["pipelined"].messages, 1);
    // per chunk: D2H 2000 + 1000/10 + 50 = 2150; net 1000/1 + 1100 = 2100; H2D 2150
    let (s1, s2, s3) = (2150u64, 2100u64, 2150u64);
    // each stage handles one chunk at a time, in order; with depth d, chunk c enters D2H only once
    // chunk c-d has left H2D.  The closed form is the recurrence below (it reduces to
    // s1+s2+s3 + (n-1)*max(s) when the depth does not bind):
    let closed = pipeline_ns(10, [s1, s2, s3], 2);
    let rts = 1100; // host-path control latency (hop 100 + NIC 1000): RTS and CTS
    assert_eq!(end_ns(&r, 1), 200 + rts + rts + closed + 300);
}

#[test]
fn two_gpus_sharing_one_nic_each_get_half() {
    // 2 GPUs per node, one shared NIC: ranks 0,1 (node 0) send to ranks 2,3 (node 1) at once
    let t = two_gpu_node();
    let b = 1_000_000;
    let alone = run(vec![vec![dev(send(2, 0, b))], vec![], vec![dev(recv(0, 0, b))], vec![]], &t, gd()).unwrap();
    let both = run(
        vec![vec![dev(send(2, 0, b))], vec![dev(send(3, 0, b))], vec![dev(recv(0, 0, b))], vec![dev(recv(1, 0, b))]],
        &t,
        gd(),
    )
    .unwrap();
    let t_alone = end_ns(&alone, 2);
    let t_both = end_ns(&both, 2);
    // the data phase (b ns alone at 1 B/ns) doubles; everything else is unchanged
    assert_eq!(t_both - t_alone, b);
    assert_eq!(end_ns(&both, 3), t_both);
}

#[test]
fn flow_slowed_then_sped_up_finishes_on_time() {
    // one shared NIC (1 B/ns): a long transfer A (rank 0 -> 2) meets a short one B (rank 1 -> 3).
    // While both move each gets 1/2 B/ns, so B's c bytes take 2c and A loses c ns in all.  The
    // finish events are set lazily (a slowed flow keeps its event, which re-arms itself; a sped-up
    // flow gets a new one): both orders of events must give these exact times.
    let t = two_gpu_node();
    let (b, c) = (1_000_000u64, 200_000u64);
    let pair = |d: u64, bytes_b: u64| {
        let r1 = if d > 0 { vec![compute(d), dev(send(3, 0, bytes_b))] } else { vec![dev(send(3, 0, bytes_b))] };
        run(vec![vec![dev(send(2, 0, b))], r1, vec![dev(recv(0, 0, b))], vec![dev(recv(1, 0, bytes_b))]], &t, gd())
            .unwrap()
    };
    let alone = |bytes: u64| {
        end_ns(
            &run(vec![vec![dev(send(2, 0, bytes))], vec![], vec![dev(recv(0, 0, bytes))], vec![]], &t, gd()).unwrap(),
            2,
        )
    };
    let (ta, tc) = (alone(b), alone(c));
    // B starts 100 us after A (A is slowed, then sped up past its first finish time)
    let d = 100_000;
    let r = pair(d, c);
    assert_eq!(end_ns(&r, 2), ta + c);
    assert_eq!(end_ns(&r, 3), d + tc + c);
    // both start together (A's first finish is at half rate, then it speeds up: an earlier finish)
    let r = pair(0, c);
    assert_eq!(end_ns(&r, 2), ta + c);
    assert_eq!(end_ns(&r, 3), tc + c);
    // B longer than what is left of A: A finishes first, at the shared rate throughout
    let r = pair(d, 2 * b);
    assert_eq!(end_ns(&r, 2), ta + (b - d));
}

#[test]
fn nic_per_gpu_removes_the_contention() {
    let t = two_gpu_node().replace("affinity = \"shared\"", "count = 2\naffinity = \"per-gpu\"");
    let b = 1_000_000;
    let alone = run(vec![vec![dev(send(2, 0, b))], vec![], vec![dev(recv(0, 0, b))], vec![]], &t, gd()).unwrap();
    let both = run(
        vec![vec![dev(send(2, 0, b))], vec![dev(send(3, 0, b))], vec![dev(recv(0, 0, b))], vec![dev(recv(1, 0, b))]],
        &t,
        gd(),
    )
    .unwrap();
    assert_eq!(end_ns(&both, 2), end_ns(&alone, 2));
}

#[test]
fn nic_contention_grows_with_gpus_per_node() {
    // 12 ranks; rank r exchanges 1 MB with rank (r + 6) % 12 (always on another node for gpn <= 6)
    let b = 1_000_000u64;
    let mk = || {
        (0..12)
            .map(|r: i32| {
                let p = (r + 6) % 12;
                vec![dev(irecv(p, 0, b, 1)), dev(isend(p, 0, b, 2)), waitall(&[1, 2])]
            })
            .collect::<Vec<_>>()
    };
    let t = SIMPLE.replace("gpus = 1", "gpus = 6");
    let mut last = 0.0;
    let mut times = vec![];
    for gpn in [1u32, 2, 3, 6] {
        let r = run(mk(), &t, SimOptions { mode: Mode::GpuDirect, gpus_per_node: Some(gpn), ..Default::default() })
            .unwrap();
        times.push(r.comm_time_s);
        assert!(r.comm_time_s >= last, "comm time must not fall as GPUs per node grow: {times:?}");
        last = r.comm_time_s;
    }
    assert!(times[3] > 4.0 * times[0], "{times:?}");
}

#[test]
fn tapered_fat_tree_leaf_gives_the_tapered_share() {
    // 36 nodes, 18 per leaf, taper 1.5 -> 12 uplinks; every node of leaf 0 sends to a node of leaf 1
    let text = SIMPLE.replace(
        "[network]\ntopology = \"crossbar\"",
        "[network]\ntopology = \"fat-tree\"\nlevels = 2\nnodes_per_leaf = 18\ntaper = 1.5",
    );
    let build = |taper: &str| {
        let t = text.replace("taper = 1.5", taper);
        Machine::build(cfg(&t), Placement::linear(36, 1)).unwrap()
    };
    for (taper, uplinks) in [("taper = 1.5", 12.0), ("taper = 1.0", 18.0)] {
        let mut m = build(taper);
        for i in 0..18u32 {
            let p = paths::HOST.plan(&m, Endpoint { node: i, gpu: 0 }, Endpoint { node: 18 + i, gpu: 0 }, 1000);
            let links = p.stages[0].links.clone();
            m.net.start(0, &links, 1e9, i as u64);
        }
        let mut out = vec![];
        m.net.resolve(0, &mut out);
        let total: f64 = out.iter().map(|r| m.net.rate_bytes_per_s(r.flow)).sum();
        // the leaf's uplinks carry at most uplinks x link bandwidth (1 GB/s)
        assert!((total - uplinks * 1e9).abs() < 1e3, "{taper}: aggregate {total}");
    }
}

#[test]
fn every_model_is_registered_and_documented() {
    let names: Vec<&str> = paths::registry().iter().map(|p| p.name()).collect();
    assert_eq!(names, ["host", "hostcopy", "gpudirect-p2p", "gpudirect-rdma", "pipelined"]);
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/models");
    for n in names {
        let page = root.join(format!("{n}.md"));
        let text = std::fs::read_to_string(&page).unwrap_or_else(|_| panic!("missing doc page {}", page.display()));
        for section in [
            "## Description",
            "## Scope and limits",
            "## Parameters",
            "## Calibration",
            "## Validation",
            "## References",
        ] {
            assert!(text.contains(section), "{} lacks {section}", page.display());
        }
        assert!(paths::by_name(n).is_some());
    }
}

#[test]
fn lassen_hostcopy_and_gpudirect_differ() {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../python/g2gsim/presets/lassen.toml"),
    )
    .unwrap();
    // 8 ranks on 2 nodes: a ring of 4 MB device messages
    let mk = || {
        (0..8)
            .map(|r: i32| {
                vec![dev(irecv((r + 7) % 8, 0, 4 << 20, 1)), dev(isend((r + 1) % 8, 0, 4 << 20, 2)), waitall(&[1, 2])]
            })
            .collect::<Vec<_>>()
    };
    let hc = run(mk(), &text, SimOptions { mode: Mode::HostCopy, ..Default::default() }).unwrap();
    let g = run(mk(), &text, gd()).unwrap();
    assert!(hc.total_time_s > 1.5 * g.total_time_s, "hostcopy {} vs gpudirect {}", hc.total_time_s, g.total_time_s);
    assert!(hc.copy_time_s > 0.0 && g.copy_time_s == 0.0);
    assert_eq!(g.paths["gpudirect-p2p"].messages + g.paths["gpudirect-rdma"].messages, 8);
    assert_eq!(g.paths["gpudirect-rdma"].messages, 2, "two ring edges cross the node boundary");
}

#[test]
fn strided_device_send_pays_pack_and_unpack_kernels() {
    // pack_kernel_latency defaults to 5 us and pack_bw to 300 GB/s (SIMPLE sets neither)
    let t = two_gpu_node();
    let b = 3_000_000u64;
    let mut strided = dev(send(1, 0, b));
    strided.contiguous = false;
    let c = run(vec![vec![dev(send(1, 0, b))], vec![dev(recv(0, 0, b))]], &t, gd()).unwrap();
    let s = run(vec![vec![strided], vec![dev(recv(0, 0, b))]], &t, gd()).unwrap();
    let pack = 5000 + b / 300; // ns: latency + 3 MB at 300 B/ns
    assert_eq!(end_ns(&s, 1) - end_ns(&c, 1), 2 * pack);
    // staged through the host (HostCopy) there is no MPI packing kernel
    let hc = SimOptions { mode: Mode::HostCopy, ..Default::default() };
    let mut strided = dev(send(1, 0, b));
    strided.contiguous = false;
    let c = run(vec![vec![dev(send(1, 0, b))], vec![dev(recv(0, 0, b))]], &t, hc.clone()).unwrap();
    let s = run(vec![vec![strided], vec![dev(recv(0, 0, b))]], &t, hc).unwrap();
    assert_eq!(end_ns(&s, 1), end_ns(&c, 1));
}

#[test]
fn rdma_up_to_a_size_then_pipelined() {
    // Cray MPICH G2G style: RDMA for small device messages, pipelined staging above the limit
    let t =
        SIMPLE.replace("pipeline_threshold = \"1000B\"", "pipeline_threshold = \"8KiB\"\nrdma_max_bytes = \"8KiB\"");
    let small = run(vec![vec![dev(send(1, 0, 4096))], vec![dev(recv(0, 0, 4096))]], &t, gd()).unwrap();
    let big = run(vec![vec![dev(send(1, 0, 100_000))], vec![dev(recv(0, 0, 100_000))]], &t, gd()).unwrap();
    assert_eq!(small.paths["gpudirect-rdma"].messages, 1);
    assert_eq!(big.paths["pipelined"].messages, 1);
}

#[test]
fn gpudirect_removes_every_recognised_staging_copy() {
    use g2g_trace::CopyKind;
    let cp = |kind: CopyKind, b: u64| {
        let mut o = op(g2g_trace::OpKind::Memcpy);
        o.copy = kind;
        o.bytes = b;
        o
    };
    let mut ar = op(g2g_trace::OpKind::parse("Allreduce").unwrap());
    ar.bytes = 4096;
    ar.set_recv_bytes(4096);
    // a HostCopy application: copies out, two sends and two receives of different sizes, copies in,
    // then a staged Allreduce
    let rank = |p: i32| {
        vec![
            cp(CopyKind::D2H, 1000),
            cp(CopyKind::D2H, 3000),
            irecv(p, 0, 3000, 1),
            irecv(p, 1, 1000, 2),
            isend(p, 0, 1000, 3),
            isend(p, 1, 3000, 4),
            waitall(&[1, 2, 3, 4]),
            cp(CopyKind::H2D, 3000),
            cp(CopyKind::H2D, 1000),
            cp(CopyKind::D2H, 4096),
            ar.clone(),
            cp(CopyKind::H2D, 4096),
        ]
    };
    let traced = run(vec![rank(1), rank(0)], SIMPLE, SimOptions::default()).unwrap();
    assert_eq!(traced.per_op["Memcpy"].count, 12);
    assert!(traced.copy_time_s > 0.0);
    assert_eq!(traced.buffer_stats.staging_copies, 12, "the rule recognises every copy, in every mode");
    assert_eq!(traced.buffer_stats.staging_copies_removed, 0);
    // buffers as traced: the staged host buffers move from the device under gpudirect
    let whatif =
        run(vec![rank(1), rank(0)], SIMPLE, SimOptions { mode: Mode::GpuDirect, ..Default::default() }).unwrap();
    assert_eq!(whatif.copy_time_s, 0.0, "every copy only staged an MPI buffer");
    assert_eq!(whatif.paths["gpudirect-rdma"].messages, 4 + 2);
    assert_eq!(whatif.buffer_stats.staged, 6);
    assert_eq!(whatif.buffer_stats.staging_copies_removed, 12);
    assert!(whatif.notices.is_empty(), "{:?}", whatif.notices);
    // --buffers device asks the same question here: the same run
    let dev = run(
        vec![rank(1), rank(0)],
        SIMPLE,
        SimOptions { mode: Mode::GpuDirect, buffers: g2g_mpi::Buffers::Device, ..Default::default() },
    )
    .unwrap();
    assert_eq!(dev.total_time_s, whatif.total_time_s);
    // --buffers host: the copies are the application's own, nothing moves from the device
    let host = run(
        vec![rank(1), rank(0)],
        SIMPLE,
        SimOptions { mode: Mode::GpuDirect, buffers: g2g_mpi::Buffers::Host, ..Default::default() },
    )
    .unwrap();
    assert_eq!(host.total_time_s, traced.total_time_s);
    assert!(host.notices.iter().any(|n| n.starts_with("--mode gpudirect changes nothing")), "{:?}", host.notices);
}

#[test]
fn barrier_and_zero_byte_messages_take_the_host_path_in_every_mode() {
    let bar = |mem: g2g_trace::MemSpace| {
        let mut o = op(g2g_trace::OpKind::parse("Barrier").unwrap());
        o.mem = mem;
        o
    };
    let ranks = |mem: g2g_trace::MemSpace| {
        let mut z0 = send(1, 5, 0);
        z0.mem = mem;
        let mut z1 = recv(0, 5, 0);
        z1.mem = mem;
        vec![vec![bar(mem), z0, bar(mem)], vec![bar(mem), z1, bar(mem)]]
    };
    let reference = run(ranks(g2g_trace::MemSpace::Host), SIMPLE, SimOptions::default()).unwrap();
    for mem in [g2g_trace::MemSpace::Host, g2g_trace::MemSpace::Device] {
        for mode in [Mode::AsTraced, Mode::HostCopy, Mode::GpuDirect] {
            for buffers in [g2g_mpi::Buffers::Traced, g2g_mpi::Buffers::Device, g2g_mpi::Buffers::Host] {
                let r = run(ranks(mem), SIMPLE, SimOptions { mode, buffers, ..Default::default() }).unwrap();
                assert_eq!(r.paths.keys().collect::<Vec<_>>(), vec!["host"], "{mem:?} {mode:?} {buffers:?}");
                assert_eq!(r.total_time_s, reference.total_time_s, "{mem:?} {mode:?} {buffers:?}");
                assert_eq!(r.buffer_stats.sync_calls, 5, "4 Barrier calls and 1 zero-byte send");
                assert_eq!(r.buffer_stats.mpi_buffers, 0);
            }
        }
    }
}

#[test]
fn untraced_stretches_are_skipped_unless_window_all() {
    let mut un = op(g2g_trace::OpKind::Untraced);
    un.set_dur_ns(1_000_000);
    let t = vec![vec![un.clone(), send(1, 0, 1000)], vec![recv(0, 0, 1000)]];
    let skipped = run(t.clone(), SIMPLE, SimOptions::default()).unwrap();
    let all = run(t, SIMPLE, SimOptions { window: g2g_mpi::Window::All, ..Default::default() }).unwrap();
    assert_eq!(skipped.per_rank[0].untraced_s, 1e-3);
    assert_eq!(all.per_rank[0].untraced_s, 1e-3);
    assert_eq!(end_ns(&all, 1), end_ns(&skipped, 1) + 1_000_000);
    assert!(
        skipped.assumptions.iter().any(|a| a.starts_with("window traced: 1 of 2 ranks")),
        "{:?}",
        skipped.assumptions
    );
}

// ---------------------------------------------------------------- per-rank shared-memory ports
fn pingping(b: u64) -> Vec<Vec<g2g_trace::Op>> {
    vec![
        vec![irecv(1, 2, b, 1), isend(1, 1, b, 2), waitall(&[1, 2])],
        vec![irecv(0, 1, b, 1), isend(0, 2, b, 2), waitall(&[1, 2])],
    ]
}

#[test]
fn shm_one_node_link_halves_opposite_flows() {
    let t = two_gpu_node();
    let b = 100_000; // rendezvous
    let r = run(pingping(b), &t, SimOptions::default()).unwrap();
    // both flows share the node's 5 B/ns link: 2.5 B/ns each
    assert_eq!(end_ns(&r, 0), 200 + 10 + 10 + b * 2 / 5 + 10 + 300);
    assert_eq!(end_ns(&r, 1), end_ns(&r, 0));
}

#[test]
fn shm_per_rank_ports_carry_opposite_flows_at_full_speed() {
    let t = two_gpu_node().replace("shm_bw = \"5GB/s\"", "shm_bw = \"100GB/s\"\nshm_rank_bw = \"5GB/s\"");
    let b = 100_000;
    let r = run(pingping(b), &t, SimOptions::default()).unwrap();
    // A->B: out(A), in(B), node; B->A: out(B), in(A), node: no port shared, 5 B/ns each
    assert_eq!(end_ns(&r, 0), 200 + 10 + 10 + b / 5 + 10 + 300);
    assert_eq!(end_ns(&r, 1), end_ns(&r, 0));
}

#[test]
fn shm_node_cap_binds_two_pairs() {
    let t = SIMPLE
        .replace("gpus = 1", "gpus = 4")
        .replace("shm_bw = \"5GB/s\"", "shm_bw = \"10GB/s\"\nshm_rank_bw = \"5GB/s\"");
    let b = 100_000;
    let mut ranks = pingping(b);
    ranks.push(vec![irecv(3, 2, b, 1), isend(3, 1, b, 2), waitall(&[1, 2])]);
    ranks.push(vec![irecv(2, 1, b, 1), isend(2, 2, b, 2), waitall(&[1, 2])]);
    let r = run(ranks, &t, SimOptions::default()).unwrap();
    // four flows under the node's 10 B/ns memory-bandwidth cap: 2.5 B/ns each
    for k in 0..4 {
        assert_eq!(end_ns(&r, k), 200 + 10 + 10 + b * 2 / 5 + 10 + 300, "rank {k}");
    }
}

#[test]
fn shm_out_port_shared_by_fan_out() {
    // one sender to three receivers: the out port (10 B/ns) is shared, each in port is 5 B/ns
    let t = SIMPLE
        .replace("gpus = 1", "gpus = 4")
        .replace("shm_bw = \"5GB/s\"", "shm_bw = \"100GB/s\"\nshm_rank_bw = \"5GB/s\"\nshm_rank_out_bw = \"9GB/s\"");
    let b = 90_000;
    let mut ranks = vec![vec![isend(1, 1, b, 1), isend(2, 1, b, 2), isend(3, 1, b, 3), waitall(&[1, 2, 3])]];
    for _ in 1..4 {
        ranks.push(vec![recv(0, 1, b)]);
    }
    let r = run(ranks, &t, SimOptions::default()).unwrap();
    // 9 B/ns out port / 3 flows = 3 B/ns each (below the 5 B/ns in ports)
    for k in 1..4 {
        assert_eq!(end_ns(&r, k), 200 + 10 + 10 + b / 3 + 10 + 300, "rank {k}");
    }
    let bad = SIMPLE.replace("shm_latency", "shm_rank_out_bw = \"1GB/s\"\nshm_latency");
    let e = g2g_net::MachineConfig::from_toml(&bad, "m.toml").unwrap_err();
    assert_eq!(e.key, "node.host.shm_rank_out_bw");
}

// ---------------------------------------------------------------- piecewise factors by size
const FACTORS: &str = r#"
[[mpi.factors]]
path = "host"
max_bytes = 1000
bw_factor = 0.5
delay = "100ns"
send_overhead = "50ns"

[[mpi.factors]]
path = "host"
max_bytes = "64KiB"
bw_factor = 2.0
lat_factor = 3.0
"#;

fn with_factors(extra: &str) -> String {
    two_gpu_node().replace("[gpu]", &format!("{extra}\n[gpu]"))
}

#[test]
fn factors_apply_by_size_bin_edges_included() {
    let t = with_factors(FACTORS);
    let one = |b: u64| {
        let r = run(vec![vec![send(1, 0, b)], vec![recv(0, 0, b)]], &t, SimOptions::default()).unwrap();
        end_ns(&r, 1)
    };
    // 1000 B: first bin (edge included): o_s 50, delay 100, 1000 / (5 x 0.5), latency 10, o_r 300
    assert_eq!(one(1000), 50 + 100 + 400 + 10 + 300);
    // 1010 B: second bin: o_s 200, 1010 / (5 x 2), latency 3 x 10
    assert_eq!(one(1010), 200 + 101 + 30 + 300);
    // 64 KiB, last byte of the second bin (eager)
    assert_eq!(one(65_530), 200 + 6553 + 30 + 300);
    // above every bin: no factor (rendezvous: RTS + CTS)
    assert_eq!(one(100_000), 200 + 10 + 10 + 20_000 + 10 + 300);
}

#[test]
fn factors_scale_contention_consistently() {
    // ping-ping on one shared node link, both flows in a 0.5 bin: each counts 2x its bytes
    let t = with_factors("[[mpi.factors]]\npath = \"host\"\nmax_bytes = \"1MiB\"\nbw_factor = 0.5\n");
    let b = 100_000;
    let r = run(pingping(b), &t, SimOptions::default()).unwrap();
    assert_eq!(end_ns(&r, 0), 200 + 10 + 10 + 2 * b * 2 / 5 + 10 + 300);
}

#[test]
fn factors_of_gpudirect_and_hostcopy_paths() {
    let t = with_factors(
        "[[mpi.factors]]\npath = \"gpudirect-p2p\"\nmax_bytes = \"2KiB\"\ndelay = \"6us\"\n\
         [[mpi.factors]]\npath = \"hostcopy\"\nbw_factor = 0.25\n[[mpi.factors]]\npath = \"host\"\nbw_factor = 4.0\n",
    );
    let b = 1000;
    // device: small bin adds 6 us to the setup (rendezvous: RTS + CTS, gpudirect_delay, NVLink)
    let r = run(vec![vec![dev(send(1, 0, b))], vec![dev(recv(0, 0, b))]], &t, gd()).unwrap();
    assert_eq!(end_ns(&r, 1), 200 + 10 + 10 + 4000 + 6000 + b / 100 + 20 + 300);
    let r = run(vec![vec![dev(send(1, 0, 4096))], vec![dev(recv(0, 0, 4096))]], &t, gd()).unwrap();
    assert_eq!(end_ns(&r, 1), 200 + 10 + 10 + 4000 + 41 + 20 + 300);
    // HostCopy what-if: the staged host transfer uses the hostcopy bins (1.25 B/ns)
    let hc = run(
        vec![vec![dev(send(1, 0, b))], vec![dev(recv(0, 0, b))]],
        &t,
        SimOptions { mode: Mode::HostCopy, ..Default::default() },
    )
    .unwrap();
    let copy = 2000 + 50 + b / 10;
    assert_eq!(end_ns(&hc, 1), copy + 200 + 800 + 10 + 300 + copy);
    // as traced: a host send right after a D2H copy of its buffer is a staged one too ...
    let mut d2h = op(g2g_trace::OpKind::Memcpy);
    d2h.bytes = b;
    d2h.copy = g2g_trace::CopyKind::D2H;
    d2h.set_stream(-1);
    let r = run(vec![vec![d2h, send(1, 0, b)], vec![recv(0, 0, b)]], &t, SimOptions::default()).unwrap();
    assert_eq!(end_ns(&r, 1), copy + 200 + 800 + 10 + 300);
    // ... and a plain host send uses the host bins (20 B/ns)
    let r = run(vec![vec![send(1, 0, b)], vec![recv(0, 0, b)]], &t, SimOptions::default()).unwrap();
    assert_eq!(end_ns(&r, 1), 200 + 50 + 10 + 300);
    // a send from page-locked host memory (the trace says `pinned`) takes the staged bins with
    // no copy next to it, blocking or not; a pinned receive buffer alone changes nothing (the
    // sender's buffer decides, as for every other class)
    let pinned = |mut o: g2g_trace::Op| {
        o.mem = g2g_trace::MemSpace::Pinned;
        o
    };
    for s in [send(1, 0, b), isend(1, 0, b, 1)] {
        let mut ops0 = vec![pinned(s)];
        if ops0[0].kind == g2g_trace::OpKind::Isend {
            ops0.push(waitall(&[1]));
        }
        let r = run(vec![ops0, vec![recv(0, 0, b)]], &t, SimOptions::default()).unwrap();
        assert_eq!(end_ns(&r, 1), 200 + 800 + 10 + 300);
    }
    let r = run(vec![vec![send(1, 0, b)], vec![pinned(recv(0, 0, b))]], &t, SimOptions::default()).unwrap();
    assert_eq!(end_ns(&r, 1), 200 + 50 + 10 + 300);
}

#[test]
fn factors_by_active_ranks_apply_when_enough_ranks_of_the_node_communicate() {
    let one = |extra: &str, b: u64| {
        let t = with_factors(extra);
        let r = run(vec![vec![send(1, 0, b)], vec![recv(0, 0, b)]], &t, SimOptions::default()).unwrap();
        end_ns(&r, 1)
    };
    let plain = one("", 1000);
    assert_eq!(plain, 200 + 200 + 10 + 300);
    // both ranks of the node pass messages: the active_ranks = 2 bin (delay 1 us) wins over the
    // ordinary one (delay 100 ns)
    let bins = "[[mpi.factors]]\npath = \"host\"\nmax_bytes = \"1MiB\"\ndelay = \"100ns\"\n\
                [[mpi.factors]]\npath = \"host\"\nactive_ranks = 2\nmax_bytes = \"4KiB\"\ndelay = \"1us\"\n";
    assert_eq!(one(bins, 1000), plain + 1000);
    // above the load group's last bin: the ordinary bins
    assert_eq!(one(bins, 8000), 200 + 100 + 1600 + 10 + 300);
    // a group for 3 ranks does not apply on a node where 2 communicate
    assert_eq!(one(&bins.replace("active_ranks = 2", "active_ranks = 3"), 1000), plain + 100);
    // a rank that passes no message does not count: ranks 0 and 2 talk across nodes (2 GPUs a
    // node), 1 and 3 stay idle: one active rank per node, the ordinary bins
    let four = |extra: &str| {
        let t = with_factors(extra);
        let r = run(vec![vec![send(2, 0, 1000)], vec![], vec![recv(0, 0, 1000)], vec![]], &t, SimOptions::default())
            .unwrap();
        end_ns(&r, 2)
    };
    let ordinary = "[[mpi.factors]]\npath = \"host\"\nmax_bytes = \"1MiB\"\ndelay = \"100ns\"\n";
    assert_eq!(four(bins), four(ordinary));
    assert_eq!(four(&ordinary.replace("100ns", "1us")), four(ordinary) + 900);
    let e = g2g_net::MachineConfig::from_toml(
        &with_factors("[[mpi.factors]]\npath = \"host\"\nactive_ranks = 0\n"),
        "m.toml",
    )
    .unwrap_err();
    assert_eq!(e.key, "mpi.factors[0].active_ranks");
}

#[test]
fn factors_by_collective_apply_to_that_collectives_messages_only() {
    let bcast = |b: u64| {
        let mut o = op(g2g_trace::OpKind::Coll(1)); // Bcast
        o.bytes = b;
        o.set_recv_bytes(b);
        o.set_root(0);
        o
    };
    let b = 1000;
    let runs = |extra: &str| {
        let t = with_factors(extra);
        let c = run(vec![vec![bcast(b)], vec![bcast(b)]], &t, SimOptions::default()).unwrap();
        let p = run(vec![vec![send(1, 0, b)], vec![recv(0, 0, b)]], &t, SimOptions::default()).unwrap();
        (end_ns(&c, 1), end_ns(&p, 1))
    };
    let (c0, p0) = runs("");
    // a Bcast bin: its message pays 2 us more, the point-to-point one does not
    let (c1, p1) =
        runs("[[mpi.factors]]\npath = \"host\"\ncollective = \"Bcast\"\nmax_bytes = \"4KiB\"\ndelay = \"2us\"\n");
    assert_eq!((c1, p1), (c0 + 2000, p0));
    // a Gather bin does nothing here; above the Bcast bins' last size: the ordinary bins
    assert_eq!(runs("[[mpi.factors]]\npath = \"host\"\ncollective = \"Gather\"\ndelay = \"2us\"\n"), (c0, p0));
    assert_eq!(
        runs("[[mpi.factors]]\npath = \"host\"\ncollective = \"Bcast\"\nmax_bytes = 100\ndelay = \"2us\"\n"),
        (c0, p0)
    );
    let e = g2g_net::MachineConfig::from_toml(
        &with_factors("[[mpi.factors]]\npath = \"host\"\ncollective = \"Ibcast\"\n"),
        "m.toml",
    )
    .unwrap_err();
    assert_eq!(e.key, "mpi.factors[0].collective");
}

#[test]
fn messages_alike_but_for_their_factor_bin_each_take_their_own() {
    // a Bcast message and a point-to-point one between the same ranks, of the same size, in one
    // run, interleaved: each takes its own bin (a replay that reused one message's plan, or its
    // factor, for the other would fail this)
    let b = 100_000; // rendezvous: each message's own delay is on the receiver's critical path
    let bcast = || {
        let mut o = op(g2g_trace::OpKind::Coll(1)); // Bcast
        o.bytes = b;
        o.set_recv_bytes(b);
        o.set_root(0);
        o
    };
    let end = |extra: &str, bcast_first: bool| {
        let t = with_factors(extra);
        let (mut r0, mut r1) = (vec![], vec![]);
        for _ in 0..2 {
            let (s0, s1) = ((bcast(), send(1, 0, b)), (bcast(), recv(0, 0, b)));
            if bcast_first {
                r0.extend([s0.0, s0.1]);
                r1.extend([s1.0, s1.1]);
            } else {
                r0.extend([s0.1, s0.0]);
                r1.extend([s1.1, s1.0]);
            }
        }
        end_ns(&run(vec![r0, r1], &t, SimOptions::default()).unwrap(), 1)
    };
    let coll = "[[mpi.factors]]\npath = \"host\"\ncollective = \"Bcast\"\ndelay = \"2us\"\n";
    let p2p = "[[mpi.factors]]\npath = \"host\"\ndelay = \"1us\"\n";
    for first in [true, false] {
        let e0 = end("", first);
        // two Bcast messages pay 2 us each, the point-to-point ones nothing ...
        assert_eq!(end(coll, first), e0 + 2 * 2000, "Bcast first: {first}");
        // ... or 1 us each from the ordinary bin
        assert_eq!(end(&format!("{coll}{p2p}"), first), e0 + 2 * 2000 + 2 * 1000, "Bcast first: {first}");
    }
}

#[test]
fn factor_errors_name_key_and_line() {
    let t = with_factors("[[mpi.factors]]\npath = \"host\"\nmax_bytes = \"1MiB\"\n\n[[mpi.factors]]\npath = \"host\"\nmax_bytes = \"1KiB\"\n");
    let e = g2g_net::MachineConfig::from_toml(&t, "m.toml").unwrap_err();
    assert_eq!(e.key, "mpi.factors[1].max_bytes");
    let line = t.lines().enumerate().filter(|(_, l)| l.starts_with("[[mpi.factors]]")).nth(1).unwrap().0 + 1;
    assert_eq!(e.line, Some(line));
    let e =
        g2g_net::MachineConfig::from_toml(&with_factors("[[mpi.factors]]\npath = \"nvlink\"\n"), "m.toml").unwrap_err();
    assert_eq!(e.key, "mpi.factors[0].path");
    let e =
        g2g_net::MachineConfig::from_toml(&with_factors("[[mpi.factors]]\npath = \"host\"\nbw_factor = 0\n"), "m.toml")
            .unwrap_err();
    assert_eq!(e.key, "mpi.factors[0].bw_factor");
    let e = g2g_net::MachineConfig::from_toml(&with_factors("[[mpi.factors]]\npath = \"host\"\nbw = 2\n"), "m.toml")
        .unwrap_err();
    assert!(e.msg.contains("unknown key"), "{e}");
}

// ---------------------------------------------------------------- per-call CPU overhead
#[test]
fn call_overhead_makes_each_mpi_call_busy() {
    let t = two_gpu_node().replace("recv_overhead = \"300ns\"", "recv_overhead = \"300ns\"\ncall_overhead = \"100ns\"");
    let b = 1000;
    let r = run(vec![vec![send(1, 0, b)], vec![recv(0, 0, b)]], &t, SimOptions::default()).unwrap();
    // the Send's call (100), o_s, 1000 / 5, latency, o_r
    assert_eq!(end_ns(&r, 1), 100 + 200 + 200 + 10 + 300);
    // ping-ping: Irecv, Isend (data leaves at 2 x 100 + o_s), Waitall
    let r = run(pingping(b), &t, SimOptions::default()).unwrap();
    assert_eq!(end_ns(&r, 0), 100 + 100 + 200 + 2 * b / 5 + 10 + 300);
}

// ---------------------------------------------------------------- blocking sends' extra time
const BLOCKING: &str = "[[mpi.factors]]\npath = \"host\"\nmax_bytes = \"64KiB\"\nblocking_send_overhead = \"3us\"\n";

fn pingpong_blocking(b: u64) -> Vec<Vec<g2g_trace::Op>> {
    vec![vec![send(1, 1, b), recv(1, 2, b)], vec![recv(0, 1, b), send(0, 2, b)]]
}

fn pingpong_nonblocking(b: u64) -> Vec<Vec<g2g_trace::Op>> {
    vec![
        vec![isend(1, 1, b, 1), waitall(&[1]), irecv(1, 2, b, 2), waitall(&[2])],
        vec![irecv(0, 1, b, 1), waitall(&[1]), isend(0, 2, b, 2), waitall(&[2])],
    ]
}

#[test]
fn blocking_send_overhead_only_for_blocking_sends_in_the_bin() {
    let t = with_factors(BLOCKING);
    let b = 1000;
    // blocking ping-pong in the bin: each one way o_s 200 + 3000 extra, 1000 / 5, latency 10, o_r 300
    let r = run(pingpong_blocking(b), &t, SimOptions::default()).unwrap();
    assert_eq!(end_ns(&r, 0), 2 * (200 + 3000 + 200 + 10 + 300));
    // the same with Isend / Irecv + Wait: no extra
    let r = run(pingpong_nonblocking(b), &t, SimOptions::default()).unwrap();
    assert_eq!(end_ns(&r, 0), 2 * (200 + 200 + 10 + 300));
    // ping-ping (Isend): no extra either
    let r = run(pingping(b), &t, SimOptions::default()).unwrap();
    assert_eq!(end_ns(&r, 0), 200 + 2 * b / 5 + 10 + 300);
    // blocking, above the bin (rendezvous, no factor): no extra
    let b = 100_000;
    let r = run(pingpong_blocking(b), &t, SimOptions::default()).unwrap();
    assert_eq!(end_ns(&r, 0), 2 * (200 + 10 + 10 + b / 5 + 10 + 300));
}

#[test]
fn blocking_send_overhead_applies_to_sendrecv() {
    let t = with_factors(BLOCKING);
    let b = 1000;
    let sr = |peer: i32| {
        let mut o = op(g2g_trace::OpKind::Sendrecv);
        o.peer = peer;
        o.tag = 1;
        o.bytes = b;
        o.set_recv_peer(peer);
        o.set_recv_tag(1);
        o.set_recv_bytes(b);
        o
    };
    // both send halves are blocking pml sends in Open MPI: o_s 200 + 3000, two flows share 5 B/ns
    let r = run(vec![vec![sr(1)], vec![sr(0)]], &t, SimOptions::default()).unwrap();
    assert_eq!(end_ns(&r, 0), 200 + 3000 + 2 * b / 5 + 10 + 300);
}

#[test]
fn blocking_send_overhead_parse_errors_name_key_and_line() {
    let t = with_factors("[[mpi.factors]]\npath = \"host\"\nblocking_send_overhead = \"3 parsecs\"\n");
    let e = g2g_net::MachineConfig::from_toml(&t, "m.toml").unwrap_err();
    assert_eq!(e.key, "mpi.factors[0].blocking_send_overhead");
    // the key's own line (the schema check, issue 24; it was the [[mpi.factors]] header's)
    let line = t.lines().enumerate().find(|(_, l)| l.starts_with("blocking_send_overhead")).unwrap().0 + 1;
    assert_eq!(e.line, Some(line));
    let t = with_factors("[[mpi.factors]]\npath = \"host\"\nblocking_send_overhead = 3\n");
    let e = g2g_net::MachineConfig::from_toml(&t, "m.toml").unwrap_err();
    assert_eq!(e.key, "mpi.factors[0].blocking_send_overhead");
}

/// The route cache and plans built in place (`DataPath::plan_into` into a reused plan) give the
/// same links and latencies as routing afresh: random endpoint pairs, asked many times (cache
/// hits, set conflicts and evictions: the caches hold at least 1,024 routes), on a 3-level
/// fat-tree with two rails and on a torus whose long routes bypass the cache.
#[test]
fn cached_routes_and_in_place_plans_equal_fresh_ones() {
    let fat = SIMPLE.replace(
        "[network]\ntopology = \"crossbar\"",
        "[network]\ntopology = \"fat-tree\"\nlevels = 3\nnodes_per_leaf = 4\nleaves_per_pod = 4\ntaper = 2\nrails = 2",
    ).replace("gpus = 1", "gpus = 4");
    let torus = SIMPLE
        .replace("[network]\ntopology = \"crossbar\"", "[network]\ntopology = \"torus\"\ndims = [8, 8, 8]")
        .replace("gpus = 1", "gpus = 2");
    for (text, nodes) in [(fat, 1024u32), (torus, 512u32)] {
        let c = cfg(&text);
        let gpn = c.gpus_per_node;
        let m = Machine::build(c, Placement::linear(nodes * gpn, gpn)).unwrap();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut rnd = |n: u32| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % n as u64) as u32
        };
        let mut pooled = paths::PIPELINED.plan(&m, Endpoint { node: 0, gpu: 0 }, Endpoint { node: 1, gpu: 1 }, 1 << 20);
        let mut long = 0;
        for i in 0..30_000 {
            // a few thousand distinct node pairs, each asked several times
            let (s, d) = (rnd(nodes.min(64)) * (nodes / 64).max(1), rnd(nodes));
            for rail in 0..3 {
                let (mut got, mut want) = (paths::Links::new(), paths::Links::new());
                let lat = m.net_route_latency(s, d, rail, &mut got);
                let lat_fresh = m.net_route_fresh(s, d, rail, &mut want);
                assert_eq!((&got, lat), (&want, lat_fresh), "route {s} -> {d} rail {rail}");
                assert_eq!(lat, m.path_latency(&want));
                long += (want.len() > 8) as u32;
            }
            if i % 10 == 0 {
                let a = Endpoint { node: s, gpu: rnd(gpn) };
                let b = Endpoint { node: if i % 30 == 0 { s } else { d }, gpu: rnd(gpn) };
                for p in paths::registry() {
                    let want = p.plan(&m, a, b, 5000);
                    p.plan_into(&m, a, b, 5000, &mut pooled);
                    assert_eq!(pooled, want, "{} {a:?} -> {b:?} (in place)", p.name());
                    // every stage's latency is that of its links (plus the NIC's across nodes)
                    for st in &want.stages {
                        let nic =
                            if a.node != b.node && st.links.iter().any(|&l| l >= m.topo_base()) { 1000 } else { 0 };
                        assert_eq!(st.latency_ns, m.path_latency(&st.links) + nic, "{} {a:?} -> {b:?}", p.name());
                    }
                }
            }
        }
        if text.contains("torus") {
            assert!(long > 0, "the torus test should have routes too long for the cache");
        }
    }
}

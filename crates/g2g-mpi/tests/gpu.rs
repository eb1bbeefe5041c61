//! GPU streams: kernels, events, synchronisation, overlap, priorities (issue: GPU streams).
mod common;
use common::*;
use g2g_mpi::{Mode, SimOptions};
use g2g_trace::{CopyKind, Op, OpKind};

fn kernel(stream: i32, ns: u64, prio: i32) -> Op {
    let mut o = Op::new(OpKind::Kernel);
    o.set_stream(stream);
    o.set_dur_ns(ns);
    o.set_priority(prio);
    o
}
fn sync(stream: i32) -> Op {
    let mut o = Op::new(OpKind::StreamSync);
    o.set_stream(stream);
    o
}
fn record(ev: u64, stream: i32) -> Op {
    let mut o = Op::new(OpKind::EventRecord);
    o.req = ev;
    o.set_stream(stream);
    o
}
fn ev_sync(ev: u64) -> Op {
    let mut o = Op::new(OpKind::EventSync);
    o.req = ev;
    o
}
fn wait_event(stream: i32, ev: u64) -> Op {
    let mut o = Op::new(OpKind::StreamWaitEvent);
    o.req = ev;
    o.set_stream(stream);
    o
}

const B: u64 = 40_000; // host buffers, eager on SIMPLE: exchange = 200 + B + 1100 + 300 = 41_600 ns
const X: u64 = 200 + B + 1100 + 300;

fn exchange_overlapped(k: u64) -> Vec<Vec<Op>> {
    (0..2)
        .map(|r: i32| {
            let p = 1 - r;
            vec![kernel(0, k, 0), irecv(p, 0, B, 1), isend(p, 0, B, 2), waitall(&[1, 2]), sync(0)]
        })
        .collect()
}

#[test]
fn kernel_hides_the_exchange() {
    let r = run(exchange_overlapped(100_000), SIMPLE, SimOptions::default()).unwrap();
    assert_eq!(end_ns(&r, 0), 100_000);
    assert_eq!(end_ns(&r, 1), 100_000);
}

#[test]
fn sync_before_the_exchange_exposes_it() {
    let t: Vec<Vec<Op>> = (0..2)
        .map(|r: i32| {
            let p = 1 - r;
            vec![kernel(0, 100_000, 0), sync(0), irecv(p, 0, B, 1), isend(p, 0, B, 2), waitall(&[1, 2])]
        })
        .collect();
    let r = run(t, SIMPLE, SimOptions::default()).unwrap();
    assert_eq!(end_ns(&r, 0), 100_000 + X);
}

#[test]
fn no_overlap_what_if_serialises() {
    let r = run(exchange_overlapped(100_000), SIMPLE, SimOptions { no_overlap: true, ..Default::default() }).unwrap();
    assert_eq!(end_ns(&r, 0), 100_000 + X);
}

#[test]
fn overlap_is_kept_under_both_modes() {
    // a large message: HostCopy makes the exchange longer than the kernel, GPUDirect hides it
    // 200 KB: ~7 us over NVLink (GPUDirect) vs ~105 us staged (two 22 us copies + 40 us shared memory)
    let k = 60_000;
    let big = 200_000u64;
    let t = || -> Vec<Vec<Op>> {
        (0..2)
            .map(|r: i32| {
                let p = 1 - r;
                vec![kernel(0, k, 0), dev(irecv(p, 0, big, 1)), dev(isend(p, 0, big, 2)), waitall(&[1, 2]), sync(0)]
            })
            .collect()
    };
    let two = SIMPLE.replace("gpus = 1", "gpus = 2"); // one node: NVLink for GPUDirect
    let gd = run(t(), &two, SimOptions { mode: Mode::GpuDirect, ..Default::default() }).unwrap();
    let hc = run(t(), &two, SimOptions { mode: Mode::HostCopy, ..Default::default() }).unwrap();
    assert_eq!(end_ns(&gd, 0), k, "the GPU-direct exchange hides behind the kernel");
    assert!(end_ns(&hc, 0) > k, "staged copies make the exchange outlast the kernel");
}

#[test]
fn higher_priority_stream_runs_first() {
    // stream 3 occupies the SMs; then A (stream 1, priority 0) and B (stream 2, priority -1) wait
    let mk = |prio_b: i32| {
        vec![vec![
            kernel(3, 10_000, 0),
            kernel(1, 10_000, 0),
            record(1, 1),
            kernel(2, 10_000, prio_b),
            record(2, 2),
            ev_sync(2),
            ev_sync(1),
        ]]
    };
    let r = run(mk(-1), SIMPLE, SimOptions::default()).unwrap();
    let es = &r.per_op["EventSynchronize"];
    // B runs second (10-20 us): the first sync waits 20 us; A third (20-30 us): the second 10 us
    assert_eq!((es.max_s * 1e9).round() as u64, 20_000);
    assert_eq!((es.min_s * 1e9).round() as u64, 10_000);
    assert_eq!(end_ns(&r, 0), 30_000);
    // equal priorities: launch order, so B runs last and the first sync waits 30 us
    let r = run(mk(0), SIMPLE, SimOptions::default()).unwrap();
    assert_eq!(end_ns(&r, 0), 30_000);
    assert_eq!((r.per_op["EventSynchronize"].max_s * 1e9).round() as u64, 30_000);
}

#[test]
fn stream_wait_event_orders_streams() {
    // stream 1 waits for an event recorded after a kernel on stream 0
    let t = vec![vec![kernel(0, 50_000, 0), record(7, 0), wait_event(1, 7), kernel(1, 10_000, 0), sync(1)]];
    let r = run(t, SIMPLE, SimOptions::default()).unwrap();
    assert_eq!(end_ns(&r, 0), 60_000);
}

#[test]
fn stream_copy_shares_pcie_with_gpudirect_rdma() {
    // an async D2H of 1 MB on a stream and a 1 MB RDMA send both use the sender GPU's PCIe link up
    let pcie_bound = SIMPLE.replace("bw = \"1GB/s\"\nlatency = \"1000ns\"", "bw = \"100GB/s\"\nlatency = \"1000ns\"");
    let mb = 1_000_000u64;
    let copy = |stream: i32| {
        let mut o = Op::new(OpKind::Memcpy);
        o.copy = CopyKind::D2H;
        o.bytes = mb;
        o.set_stream(stream);
        o
    };
    let alone = run(
        vec![vec![dev(send(1, 0, mb))], vec![dev(recv(0, 0, mb))]],
        &pcie_bound,
        SimOptions { mode: Mode::GpuDirect, ..Default::default() },
    )
    .unwrap();
    let shared = run(
        vec![vec![copy(0), dev(send(1, 0, mb)), sync(0)], vec![dev(recv(0, 0, mb))]],
        &pcie_bound,
        SimOptions { mode: Mode::GpuDirect, ..Default::default() },
    )
    .unwrap();
    assert!(end_ns(&shared, 1) > end_ns(&alone, 1) + 10_000, "{} vs {}", end_ns(&shared, 1), end_ns(&alone, 1));
}

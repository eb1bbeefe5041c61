//! Per-call costs as parameters of their own (issue 25): the extra of an MPI call on a device
//! buffer, a blocking send's extra, and the LogGP gap between a rank's messages.
mod common;
use common::*;
use g2g_mpi::{Mode, SimOptions};

fn two_gpu_node() -> String {
    SIMPLE.replace("gpus = 1", "gpus = 2")
}

fn with_mpi(t: &str, keys: &str) -> String {
    t.replace("[mpi]\n", &format!("[mpi]\n{keys}\n"))
}

#[test]
fn device_call_overhead_is_paid_by_calls_on_device_buffers_only() {
    let t = two_gpu_node();
    let d = with_mpi(&t, "device_call_overhead = \"2us\"");
    let b = 1_000_000;
    let gd = SimOptions { mode: Mode::GpuDirect, ..Default::default() };
    let dev_msg = || vec![vec![dev(send(1, 0, b))], vec![dev(recv(0, 0, b))]];
    let base = run(dev_msg(), &t, gd.clone()).unwrap();
    let extra = run(dev_msg(), &d, gd.clone()).unwrap();
    // the send call starts 2 us later; the receive call's own 2 us overlap its wait
    assert_eq!(end_ns(&extra, 1) - end_ns(&base, 1), 2000);
    // host buffers, and device buffers staged by HostCopy (MPI sees host pointers): no extra
    let host_msg = || vec![vec![send(1, 0, b)], vec![recv(0, 0, b)]];
    assert_eq!(
        end_ns(&run(host_msg(), &d, SimOptions::default()).unwrap(), 1),
        end_ns(&run(host_msg(), &t, SimOptions::default()).unwrap(), 1)
    );
    let hc = SimOptions { mode: Mode::HostCopy, ..Default::default() };
    assert_eq!(end_ns(&run(dev_msg(), &d, hc.clone()).unwrap(), 1), end_ns(&run(dev_msg(), &t, hc).unwrap(), 1));
}

#[test]
fn blocking_send_overhead_is_paid_by_blocking_sends_only() {
    let t = two_gpu_node();
    let d = with_mpi(&t, "blocking_send_overhead = \"3us\"");
    let b = 1000; // eager
    let blocking = || vec![vec![send(1, 0, b)], vec![recv(0, 0, b)]];
    let nonblocking = || vec![vec![isend(1, 0, b, 1), waitall(&[1])], vec![recv(0, 0, b)]];
    let o = SimOptions::default();
    assert_eq!(
        end_ns(&run(blocking(), &d, o.clone()).unwrap(), 1) - end_ns(&run(blocking(), &t, o.clone()).unwrap(), 1),
        3000
    );
    assert_eq!(end_ns(&run(nonblocking(), &d, o.clone()).unwrap(), 1), end_ns(&run(nonblocking(), &t, o).unwrap(), 1));
}

#[test]
fn gap_spaces_a_ranks_messages() {
    let t = two_gpu_node();
    let d = with_mpi(&t, "gap = \"1us\"");
    let b = 8;
    let ranks = || {
        vec![
            (0..4).map(|i| isend(1, i, b, 1 + i as u64)).chain([waitall(&[1, 2, 3, 4])]).collect(),
            (0..4).map(|i| irecv(0, i, b, 1 + i as u64)).chain([waitall(&[1, 2, 3, 4])]).collect(),
        ]
    };
    let o = SimOptions::default();
    let base = end_ns(&run(ranks(), &t, o.clone()).unwrap(), 1) as i64;
    let gapped = end_ns(&run(ranks(), &d, o).unwrap(), 1) as i64;
    // four messages: the last leaves three gaps after the first (the first is not held)
    let extra = gapped - base;
    assert!((2950..=3050).contains(&extra), "extra {extra} ns");
}

#[test]
fn device_gap_spaces_gpu_direct_messages_and_defaults_to_the_gap() {
    let t = two_gpu_node();
    let b = 8;
    let burst = |device: bool| {
        let s = |i: i32| if device { dev(isend(1, i, b, 1 + i as u64)) } else { isend(1, i, b, 1 + i as u64) };
        let r = |i: i32| if device { dev(irecv(0, i, b, 1 + i as u64)) } else { irecv(0, i, b, 1 + i as u64) };
        vec![
            (0..4).map(s).chain([waitall(&[1, 2, 3, 4])]).collect::<Vec<_>>(),
            (0..4).map(r).chain([waitall(&[1, 2, 3, 4])]).collect::<Vec<_>>(),
        ]
    };
    let gd = SimOptions { mode: Mode::GpuDirect, ..Default::default() };
    let end = |m: &str, device: bool| end_ns(&run(burst(device), m, gd.clone()).unwrap(), 1) as i64;
    let dg = with_mpi(&t, "device_gap = \"2us\"");
    // device messages: the last of four leaves three device gaps after the first
    let extra = end(&dg, true) - end(&t, true);
    assert!((5950..=6050).contains(&extra), "device extra {extra} ns");
    // host messages keep mpi.gap (0 here)
    assert_eq!(end(&dg, false), end(&t, false));
    // without mpi.device_gap, device messages take mpi.gap
    let g = with_mpi(&t, "gap = \"1us\"");
    let extra = end(&g, true) - end(&t, true);
    assert!((2950..=3050).contains(&extra), "device extra with mpi.gap {extra} ns");
    let e = g2g_net::MachineConfig::from_toml(&with_mpi(&t, "device_gap = \"-1us\""), "m.toml").unwrap_err();
    assert_eq!(e.key, "mpi.device_gap");
}

#[test]
fn per_call_keys_are_checked() {
    let e = g2g_net::MachineConfig::from_toml(&with_mpi(&two_gpu_node(), "gap = \"1GB/s\""), "m.toml").unwrap_err();
    assert_eq!(e.key, "mpi.gap");
    assert!(e.line.is_some());
}

#[test]
fn wait_overhead_replaces_call_overhead_for_waits_only() {
    let t = with_mpi(&two_gpu_node(), "call_overhead = \"1us\"");
    let w = with_mpi(&t, "wait_overhead = \"200ns\"");
    let b = 1000; // eager
                  // rank 0: Isend, Waitall; rank 1: Irecv, Waitall
    let ranks = || vec![vec![isend(1, 0, b, 1), waitall(&[1])], vec![irecv(0, 0, b, 1), waitall(&[1])]];
    let o = SimOptions::default();
    let base = run(ranks(), &t, o.clone()).unwrap();
    let less = run(ranks(), &w, o.clone()).unwrap();
    // the sender's wait is the last thing it does: 800 ns earlier
    assert_eq!(end_ns(&base, 0) - end_ns(&less, 0), 800);
    // without the key, a wait costs mpi.call_overhead (unchanged runs)
    let same = with_mpi(&t, "wait_overhead = \"1us\"");
    assert_eq!(end_ns(&run(ranks(), &same, o.clone()).unwrap(), 0), end_ns(&base, 0));
    // sends and receives keep mpi.call_overhead: a blocking pair is unchanged
    let blocking = || vec![vec![send(1, 0, b)], vec![recv(0, 0, b)]];
    assert_eq!(end_ns(&run(blocking(), &w, o.clone()).unwrap(), 1), end_ns(&run(blocking(), &t, o).unwrap(), 1));
}

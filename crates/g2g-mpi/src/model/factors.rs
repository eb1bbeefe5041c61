//! `[[mpi.factors]]`: the size-dependent corrections of a message (bandwidth, latency, delay and
//! overheads by data path, size, collective and node load).  Which bins a message takes
//! (`factor_key`), how many ranks of its node pass messages (`Load`), and what a bin changes
//! (`apply`).
use std::collections::VecDeque;

use g2g_net::machine::Placement;
use g2g_net::paths::Plan;
use g2g_net::MachineConfig;
use g2g_trace::{Op, OpKind};

/// The bins a message on `path` takes: a host message whose buffers stage device data (the
/// application's copies, or a collective's staging buffers) takes the `hostcopy` bins; every other
/// message its path's.
#[inline]
pub(crate) fn factor_key(path: &'static str, gpu_direct: bool, staged: bool) -> &'static str {
    if !gpu_direct && staged {
        "hostcopy"
    } else {
        path
    }
}

/// A message's CPU overheads (ns): send (before its data leaves) and receive (after it arrives).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Overheads {
    pub send_ns: f64,
    pub recv_ns: f64,
}

/// Applies the bin of a message (bins `key`, `bytes`, `active` ranks on the sender's node, the
/// collective `coll` it belongs to) to its plan, and gives its overheads: the bin's, else the
/// machine's `mpi.send_overhead` / `mpi.recv_overhead`; a blocking point-to-point send adds the
/// bin's `blocking_send_overhead` (UCX's fast-completion protocols), before the data leaves.
#[inline]
pub(crate) fn apply(
    cfg: &MachineConfig,
    plan: &mut Plan,
    key: &str,
    bytes: u64,
    active: u32,
    coll: Option<&str>,
    blocking_send: bool,
) -> Overheads {
    let mut o = Overheads { send_ns: cfg.send_overhead_ns, recv_ns: cfg.recv_overhead_ns };
    // a blocking send's extra sender time (mpi.blocking_send_overhead); a bin adds its own
    let blk = if blocking_send { cfg.blocking_send_overhead_ns } else { 0.0 };
    if let Some(f) = cfg.factor_for(key, bytes, active, coll) {
        plan.apply_factor(f);
        o.send_ns = f.send_overhead_ns.unwrap_or(o.send_ns);
        o.recv_ns = f.recv_overhead_ns.unwrap_or(o.recv_ns);
        if blocking_send {
            o.send_ns += f.blocking_send_overhead_ns;
        }
    }
    o.send_ns += blk;
    o
}

/// Does this operation pass messages (point-to-point or collective)?
fn passes_messages(o: &Op) -> bool {
    o.kind.is_collective()
        || matches!(
            o.kind,
            OpKind::Send
                | OpKind::Ssend
                | OpKind::Bsend
                | OpKind::Rsend
                | OpKind::Isend
                | OpKind::Issend
                | OpKind::Recv
                | OpKind::Irecv
                | OpKind::Sendrecv
        )
}

/// For bins by `active_ranks`: the ranks seen passing messages and, per node, how many.
#[derive(Default)]
pub(crate) struct Load {
    /// the machine has bins by load (else nothing is counted: every node counts 1)
    pub by_load: bool,
    /// empty until the first message
    seen: Vec<bool>,
    node_active: Vec<u32>,
}

impl Load {
    pub fn new(by_load: bool) -> Load {
        Load { by_load, ..Default::default() }
    }

    /// Counts rank `r` as passing messages on its node.  The first time, every rank whose queued
    /// operations (its first window of the trace) pass messages is counted too, so that all ranks
    /// of a job that communicate from its start count from its first message on.
    pub fn mark(&mut self, r: u32, place: &Placement, queues: &[VecDeque<Op>]) {
        if self.seen.is_empty() {
            let nranks = queues.len();
            self.seen = vec![false; nranks];
            self.node_active = vec![0; place.nodes as usize];
            for q in 0..nranks {
                if queues[q].iter().any(passes_messages) {
                    self.seen[q] = true;
                    self.node_active[place.node_of[q] as usize] += 1;
                }
            }
        }
        if !self.seen[r as usize] {
            self.seen[r as usize] = true;
            self.node_active[place.node_of[r as usize] as usize] += 1;
        }
    }

    /// Ranks of `node` counted as passing messages.
    pub fn active(&self, node: u32) -> u32 {
        self.node_active[node as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MACHINE: &str = r#"
schema_version = 1
name = "factors"
[node]
gpus = 2
[node.pcie]
bw = "10GB/s"
latency = "50ns"
[node.host]
shm_bw = "5GB/s"
shm_latency = "10ns"
[node.nic]
bw = "1GB/s"
latency = "1000ns"
[network]
topology = "crossbar"
hop_latency = "100ns"
[mpi]
send_overhead = "100ns"
recv_overhead = "50ns"
[[mpi.factors]]
path = "host"
max_bytes = "1KiB"
bw_factor = 0.5
send_overhead = "30ns"
blocking_send_overhead = "7ns"
[[mpi.factors]]
path = "host"
max_bytes = "1KiB"
active_ranks = 2
bw_factor = 0.25
[[mpi.factors]]
path = "hostcopy"
max_bytes = "1MiB"
bw_factor = 0.75
delay = "10ns"
lat_factor = 2.0
[[mpi.factors]]
path = "host"
max_bytes = "1KiB"
collective = "Bcast"
recv_overhead = "9ns"
"#;

    fn cfg() -> MachineConfig {
        MachineConfig::from_toml(MACHINE, "factors.toml").unwrap()
    }

    fn plan() -> Plan {
        let mut p = Plan::empty();
        p.reset_single("host", 0, 512).latency_ns = 100;
        p
    }

    #[test]
    fn keys_by_path_and_staging() {
        assert_eq!(factor_key("host", false, true), "hostcopy");
        assert_eq!(factor_key("host", false, false), "host");
        assert_eq!(factor_key("gpudirect-rdma", true, true), "gpudirect-rdma", "a GPU-direct message stages nothing");
    }

    #[test]
    fn a_bin_changes_the_plan_and_the_overheads() {
        let c = cfg();
        let mut p = plan();
        let o = apply(&c, &mut p, "host", 512, 1, None, false);
        assert_eq!(o, Overheads { send_ns: 30.0, recv_ns: 50.0 });
        assert_eq!(p.bw_factor, 0.5);
        let o = apply(&c, &mut plan(), "host", 512, 1, None, true);
        assert_eq!(o.send_ns, 37.0, "a blocking send adds its bin's blocking_send_overhead");
        // beyond the last bin: the machine's overheads, the plan untouched
        let mut p = plan();
        assert_eq!(apply(&c, &mut p, "host", 4096, 1, None, true), Overheads { send_ns: 100.0, recv_ns: 50.0 });
        assert_eq!(p, plan());
    }

    #[test]
    fn bins_by_staging_load_and_collective() {
        let c = cfg();
        let mut p = plan();
        apply(&c, &mut p, "hostcopy", 512, 1, None, false);
        assert_eq!((p.bw_factor, p.setup_ns, p.stages[0].latency_ns), (0.75, 10, 200));
        let mut p = plan();
        apply(&c, &mut p, "host", 512, 2, None, false);
        assert_eq!(p.bw_factor, 0.25, "two active ranks on the node take the active_ranks = 2 bin");
        let o = apply(&c, &mut plan(), "host", 512, 1, Some("Bcast"), false);
        assert_eq!(o.recv_ns, 9.0, "a broadcast's message takes its collective's bin");
        let o = apply(&c, &mut plan(), "host", 512, 1, Some("Reduce"), false);
        assert_eq!(o.send_ns, 30.0, "other collectives take the ordinary bins");
    }

    #[test]
    fn load_counts_ranks_that_pass_messages() {
        let place = Placement::linear(4, 2);
        let mut send = Op::new(OpKind::Isend);
        send.peer = 1;
        let queues: Vec<VecDeque<Op>> = vec![
            VecDeque::from(vec![send]),
            VecDeque::new(),
            VecDeque::from(vec![Op::new(OpKind::Compute)]),
            VecDeque::new(),
        ];
        let mut l = Load::new(true);
        l.mark(3, &place, &queues);
        // rank 0 counted from its queued send, rank 3 by its message; ranks 1 and 2 not yet
        assert_eq!((l.active(0), l.active(1)), (1, 1));
        l.mark(3, &place, &queues);
        l.mark(1, &place, &queues);
        assert_eq!((l.active(0), l.active(1)), (2, 1));
    }
}

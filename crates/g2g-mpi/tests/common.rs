#![allow(dead_code)]
use g2g_mpi::{simulate, Report, SimError, SimOptions};
use g2g_net::MachineConfig;
use g2g_trace::{MemSpace, MemTrace, Op, OpKind};

/// A machine with round numbers: 1 GPU per node, NIC 1 B/ns, PCIe 10 B/ns, NVLink 100 B/ns.
pub const SIMPLE: &str = r#"
schema_version = 1
name = "simple"
[node]
gpus = 1
[node.pcie]
bw = "10GB/s"
latency = "50ns"
[node.nvlink]
kind = "all-to-all"
bw = "100GB/s"
latency = "20ns"
[node.host]
shm_bw = "5GB/s"
shm_latency = "10ns"
[node.nic]
bw = "1GB/s"
latency = "1000ns"
affinity = "shared"
[network]
topology = "crossbar"
hop_latency = "100ns"
[mpi]
eager_limit = "64KiB"
send_overhead = "200ns"
recv_overhead = "300ns"
[gpu]
copy_delay = "2000ns"
gpudirect_delay = "4000ns"
pipeline_chunk = "1000B"
pipeline_depth = 2
pipeline_threshold = "1000B"
"#;

pub fn cfg(text: &str) -> MachineConfig {
    MachineConfig::from_toml(text, "test.toml").unwrap()
}

pub fn run(ranks: Vec<Vec<Op>>, text: &str, opt: SimOptions) -> Result<Report, SimError> {
    let mut t = MemTrace::new(ranks);
    simulate(&mut t, cfg(text), opt, 0, None)
}

pub fn op(kind: OpKind) -> Op {
    Op::new(kind)
}
pub fn send(peer: i32, tag: i32, bytes: u64) -> Op {
    let mut o = Op::new(OpKind::Send);
    o.peer = peer;
    o.tag = tag;
    o.bytes = bytes;
    o
}
pub fn isend(peer: i32, tag: i32, bytes: u64, req: u64) -> Op {
    let mut o = send(peer, tag, bytes);
    o.kind = OpKind::Isend;
    o.req = req;
    o
}
pub fn recv(peer: i32, tag: i32, bytes: u64) -> Op {
    let mut o = Op::new(OpKind::Recv);
    o.peer = peer;
    o.tag = tag;
    o.set_recv_bytes(bytes);
    o
}
pub fn irecv(peer: i32, tag: i32, bytes: u64, req: u64) -> Op {
    let mut o = recv(peer, tag, bytes);
    o.kind = OpKind::Irecv;
    o.req = req;
    o
}
pub fn waitall(reqs: &[u64]) -> Op {
    let mut o = Op::new(OpKind::Waitall);
    o.lists = Some(Box::new(g2g_trace::OpLists { reqs: reqs.to_vec(), ..Default::default() }));
    o
}
pub fn compute(ns: u64) -> Op {
    let mut o = Op::new(OpKind::Compute);
    o.set_dur_ns(ns);
    o
}
pub fn dev(mut o: Op) -> Op {
    o.mem = MemSpace::Device;
    o
}
pub fn end_ns(r: &Report, rank: usize) -> u64 {
    (r.per_rank[rank].end_s * 1e9).round() as u64
}

/// Completion time of `n` chunks through three stages of `st` ns each, one chunk per stage at a
/// time, in order, with at most `depth` chunks in flight (chunk c enters stage 0 only once chunk
/// c - depth has left stage 2).  Reduces to sum(st) + (n - 1) * max(st) when the depth does not bind.
#[allow(dead_code)]
pub fn pipeline_ns(n: usize, st: [u64; 3], depth: usize) -> u64 {
    let mut done = vec![[0u64; 3]; n];
    let mut free = [0u64; 3];
    for c in 0..n {
        for s in 0..3 {
            let mut start = free[s];
            if s > 0 {
                start = start.max(done[c][s - 1]);
            } else if c >= depth {
                start = start.max(done[c - depth][2]);
            }
            done[c][s] = start + st[s];
            free[s] = done[c][s];
        }
    }
    done[n - 1][2]
}

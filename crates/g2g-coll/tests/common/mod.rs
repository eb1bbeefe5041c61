//! Helpers shared by the integration tests: consistent per-rank arguments for every kind, per-rank
//! totals, and a dependency (who-heard-from-whom) analysis of a whole call.
#![allow(dead_code)]

use g2g_coll::{schedule, Algo, CollArgs, CollKind, Round};

/// Per-rank count used for v-collectives: varied, with some zeros (never all zero for p > 1).
pub fn vcount(i: u64, unit: u64) -> u64 {
    ((i * 37 + 5) % 7) * unit
}

/// Alltoallv: bytes rank `a` sends to rank `b`.
pub fn pair_count(a: u64, b: u64, unit: u64) -> u64 {
    ((a * 7 + b * 3 + 1) % 5) * unit
}

/// The data of one call, owning the counts so that `args(r)` can borrow them.
pub struct Call {
    pub kind: CollKind,
    pub p: u32,
    pub root: u32,
    /// the size unit (vector bytes, per-rank block, ...)
    pub n: u64,
    /// per-rank block sizes (v-collectives; uniform kinds fill in n)
    pub blocks: Vec<u64>,
    /// Alltoallv send counts per rank
    pub a2av_send: Vec<Vec<u64>>,
    pub a2av_recv: Vec<Vec<u64>>,
    /// give the counts of rooted v-collectives to every rank (binomial Gatherv/Scatterv)
    pub counts_everywhere: bool,
}

impl Call {
    pub fn new(kind: CollKind, p: u32, root: u32, n: u64) -> Call {
        let pp = p as u64;
        let v = matches!(kind, CollKind::Gatherv | CollKind::Scatterv | CollKind::Allgatherv | CollKind::ReduceScatter);
        let blocks = (0..pp).map(|i| if v { vcount(i, n) } else { n }).collect();
        let a2av_send = (0..pp).map(|a| (0..pp).map(|b| pair_count(a, b, n)).collect()).collect();
        let a2av_recv = (0..pp).map(|b| (0..pp).map(|a| pair_count(a, b, n)).collect()).collect();
        Call { kind, p, root, n, blocks, a2av_send, a2av_recv, counts_everywhere: false }
    }

    pub fn total(&self) -> u64 {
        self.blocks.iter().sum()
    }

    /// Rank r's arguments, as a tracer would record them.
    pub fn args(&self, r: u32) -> CollArgs<'_> {
        let (p, n) = (self.p as u64, self.n);
        let is_root = r == self.root;
        let own = self.blocks[r as usize];
        let mut a = CollArgs {
            kind: self.kind,
            size: self.p,
            rank: r,
            root: if self.kind.is_rooted() { self.root } else { 0 },
            bytes: 0,
            recv_bytes: 0,
            counts: None,
            recv_counts: None,
        };
        match self.kind {
            CollKind::Barrier => {}
            CollKind::Bcast => a.bytes = n,
            CollKind::Reduce | CollKind::Allreduce | CollKind::Scan | CollKind::Exscan => {
                a.bytes = n;
                a.recv_bytes = n;
            }
            CollKind::Gather => {
                a.bytes = n;
                a.recv_bytes = if is_root { n * p } else { 0 };
            }
            CollKind::Gatherv => {
                a.bytes = own;
                if is_root || self.counts_everywhere {
                    a.recv_counts = Some(&self.blocks);
                }
                a.recv_bytes = if is_root { self.total() } else { 0 };
            }
            CollKind::Scatter => {
                a.recv_bytes = n;
                a.bytes = if is_root { n * p } else { 0 };
            }
            CollKind::Scatterv => {
                a.recv_bytes = own;
                if is_root || self.counts_everywhere {
                    a.counts = Some(&self.blocks);
                }
                a.bytes = if is_root { self.total() } else { 0 };
            }
            CollKind::Allgather => {
                a.bytes = n;
                a.recv_bytes = n * p;
            }
            CollKind::Allgatherv => {
                a.bytes = own;
                a.recv_bytes = self.total();
                a.recv_counts = Some(&self.blocks);
            }
            CollKind::Alltoall => {
                a.bytes = n * p;
                a.recv_bytes = n * p;
            }
            CollKind::Alltoallv => {
                a.counts = Some(&self.a2av_send[r as usize]);
                a.recv_counts = Some(&self.a2av_recv[r as usize]);
                a.bytes = self.a2av_send[r as usize].iter().sum();
                a.recv_bytes = self.a2av_recv[r as usize].iter().sum();
            }
            CollKind::ReduceScatter => {
                a.bytes = self.total();
                a.recv_bytes = own;
                a.recv_counts = Some(&self.blocks);
            }
            CollKind::ReduceScatterBlock => {
                a.bytes = n * p;
                a.recv_bytes = n;
            }
        }
        a
    }

    pub fn schedules(&self, algo: Algo) -> Vec<Vec<Round>> {
        (0..self.p)
            .map(|r| {
                schedule(algo, &self.args(r))
                    .unwrap_or_else(|e| panic!("{} {} p={} rank {r}: {e}", self.kind.name(), algo.name(), self.p))
            })
            .collect()
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    pub sent: u64,
    pub recvd: u64,
    pub reduce: u64,
    pub rounds: usize,
    pub nsends: usize,
    pub nrecvs: usize,
}

pub fn totals(rounds: &[Round]) -> Totals {
    let mut t = Totals { rounds: rounds.len(), ..Totals::default() };
    for r in rounds {
        t.sent += r.sends.iter().map(|s| s.bytes).sum::<u64>();
        t.recvd += r.recvs.iter().map(|s| s.bytes).sum::<u64>();
        t.reduce += r.reduce_bytes;
        t.nsends += r.sends.len();
        t.nrecvs += r.recvs.len();
    }
    t
}

/// For every rank, the set (bit mask) of ranks whose start of the call it has (transitively) heard
/// from by the end of its schedule.  A message posted in round i carries what the sender knew when
/// round i began.  Requires consistent, deadlock-free schedules.
pub fn knowledge(scheds: &[Vec<Round>]) -> Vec<u128> {
    let p = scheds.len();
    assert!(p <= 128);
    // For every receive (rank b, round j, k-th from a): the sender's round.
    use std::collections::HashMap;
    let mut send_rounds: HashMap<(usize, usize), Vec<usize>> = HashMap::new();
    for (a, rounds) in scheds.iter().enumerate() {
        for (i, round) in rounds.iter().enumerate() {
            for s in &round.sends {
                send_rounds.entry((a, s.peer as usize)).or_default().push(i);
            }
        }
    }
    // incoming[b][j] = list of (a, sender round)
    let mut incoming: Vec<Vec<Vec<(usize, usize)>>> = scheds.iter().map(|r| vec![Vec::new(); r.len()]).collect();
    let mut seen: HashMap<(usize, usize), usize> = HashMap::new();
    for (b, rounds) in scheds.iter().enumerate() {
        for (j, round) in rounds.iter().enumerate() {
            for s in &round.recvs {
                let a = s.peer as usize;
                let k = seen.entry((a, b)).or_insert(0);
                let i = send_rounds[&(a, b)][*k];
                *k += 1;
                incoming[b][j].push((a, i));
            }
        }
    }
    // know[r][i] = knowledge at the start of round i (i = len: at the end).
    let mut know: Vec<Vec<u128>> = scheds.iter().enumerate().map(|(r, x)| vec![1u128 << r; x.len() + 1]).collect();
    loop {
        let mut changed = false;
        for b in 0..p {
            for j in 0..scheds[b].len() {
                let mut k = know[b][j];
                for &(a, i) in &incoming[b][j] {
                    k |= know[a][i];
                }
                if k != know[b][j + 1] {
                    know[b][j + 1] |= k;
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    know.iter().map(|k| *k.last().unwrap()).collect()
}

pub fn all_ranks(p: usize) -> u128 {
    if p == 128 {
        u128::MAX
    } else {
        (1u128 << p) - 1
    }
}

pub fn ceil_log2(p: u64) -> usize {
    if p <= 1 {
        0
    } else {
        (64 - (p - 1).leading_zeros()) as usize
    }
}

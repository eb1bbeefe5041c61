//! A Chrome trace-event file (opens in Perfetto / chrome://tracing) of the simulated run: one
//! process per node, a track per rank (its MPI calls and compute), data movement (network
//! transfers, copies) on per-node *lanes*, and an arrow from each send to the arrival of its data.
//!
//! Perfetto draws the complete ("X") slices of one track only when they nest: two slices of a
//! track either are disjoint or one contains the other.  A rank's calls are sequential, so its
//! track is disjoint by construction; transfers and copies overlap freely, so each goes to the
//! first lane of its node whose previous slice ended by its start (a new lane when none has):
//! every lane holds disjoint slices.  `check_nesting` (tests) verifies the rule on a written file.
//!
//! Filters: only events of the given ranks (a transfer when its source or destination is one),
//! only events that overlap a time window; a cap on the number of events.
use std::collections::HashSet;
use std::fs::File;
use std::io::{BufWriter, Write};

use g2g_engine::Time;
use g2g_trace::Op;

/// What the timeline keeps.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TimelineFilter {
    /// ranks whose events are written (None: all)
    pub ranks: Option<Vec<u32>>,
    /// [start, end) in simulated ns: events that overlap it are written (None: the whole run)
    pub window_ns: Option<(u64, u64)>,
}

pub struct Timeline {
    w: BufWriter<File>,
    n: u64,
    max: u64,
    node_of: Vec<u32>,
    first: bool,
    ranks: Option<HashSet<u32>>,
    window: Option<(Time, Time)>,
    /// per node: end time of each data-movement lane
    lanes: Vec<Vec<Time>>,
    /// flows whose start was written (their end is written only then)
    flows: HashSet<u64>,
}

/// tid of lane k of a node (rank tracks use the rank number, below this)
const LANE_TID: u64 = 1 << 30;

fn us(t: Time) -> f64 {
    t as f64 / 1000.0
}

impl Timeline {
    pub fn create_filtered(
        path: &str,
        max: u64,
        nodes: u32,
        node_of: &[u32],
        filter: &TimelineFilter,
    ) -> std::io::Result<Timeline> {
        let mut w = BufWriter::with_capacity(1 << 20, File::create(path)?);
        w.write_all(b"{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n")?;
        let ranks = filter.ranks.as_ref().map(|v| v.iter().copied().collect::<HashSet<u32>>());
        let mut t = Timeline {
            w,
            n: 0,
            max,
            node_of: node_of.to_vec(),
            first: true,
            ranks,
            window: filter.window_ns,
            lanes: vec![Vec::new(); nodes as usize],
            flows: HashSet::new(),
        };
        let mut named_nodes = HashSet::new();
        for r in 0..node_of.len().min(1_000_000) {
            if !t.keep_rank(r as u32) {
                continue;
            }
            let p = node_of[r];
            if named_nodes.insert(p) {
                t.raw(&format!(
                    "{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{p},\"args\":{{\"name\":\"node {p}\"}}}}"
                ));
            }
            t.raw(&format!(
                "{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{p},\"tid\":{r},\"args\":{{\"name\":\"rank {r}\"}}}}"
            ));
        }
        Ok(t)
    }

    fn raw(&mut self, s: &str) {
        if !self.first {
            let _ = self.w.write_all(b",\n");
        }
        self.first = false;
        let _ = self.w.write_all(s.as_bytes());
    }

    fn keep_rank(&self, r: u32) -> bool {
        self.ranks.as_ref().map(|s| s.contains(&r)).unwrap_or(true)
    }

    fn in_window(&self, t0: Time, t1: Time) -> bool {
        match self.window {
            None => true,
            Some((a, b)) => t1 >= a && t0 < b,
        }
    }

    fn ok(&mut self) -> bool {
        self.n += 1;
        self.n <= self.max
    }

    /// The first lane of `node` free at `t0` (a new one when none is); marks it busy until `t1`.
    fn lane(&mut self, node: u32, t0: Time, t1: Time) -> u64 {
        let lanes = &mut self.lanes[node as usize];
        let k = match lanes.iter().position(|&end| end <= t0) {
            Some(k) => k,
            None => {
                lanes.push(0);
                let k = lanes.len() - 1;
                let s = format!(
                    "{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{node},\"tid\":{},\"args\":{{\"name\":\"data movement {k}\"}}}}",
                    LANE_TID + k as u64
                );
                self.raw(&s);
                k
            }
        };
        self.lanes[node as usize][k] = t1;
        LANE_TID + k as u64
    }

    pub fn op(&mut self, r: u32, op: &Op, seq: u64, t0: Time, t1: Time) {
        if t1 == t0 && op.kind.name() == "Compute" || !self.keep_rank(r) || !self.in_window(t0, t1) || !self.ok() {
            return;
        }
        let cat = if op.kind.name() == "Compute" {
            "compute"
        } else if op.kind.is_collective() {
            "collective"
        } else {
            "mpi"
        };
        let s = format!(
            "{{\"ph\":\"X\",\"name\":\"{}\",\"cat\":\"{cat}\",\"pid\":{},\"tid\":{r},\"ts\":{:.3},\"dur\":{:.3},\"args\":{{\"event\":{},\"peer\":{},\"tag\":{},\"bytes\":{},\"mem\":\"{}\"}}}}",
            op.kind.name(), self.node_of[r as usize], us(t0), us(t1 - t0), seq, op.peer, op.tag, op.bytes.max(op.recv_bytes()), op.mem.name()
        );
        self.raw(&s);
    }

    pub fn msg_start(&mut self, uid: u64, src: u32, t: Time) {
        if !self.keep_rank(src) || !self.in_window(t, t) || !self.ok() {
            return;
        }
        self.flows.insert(uid);
        let s = format!(
            "{{\"ph\":\"s\",\"name\":\"msg\",\"cat\":\"msg\",\"id\":{uid},\"pid\":{},\"tid\":{src},\"ts\":{:.3}}}",
            self.node_of[src as usize],
            us(t)
        );
        self.raw(&s);
    }

    #[allow(clippy::too_many_arguments)]
    pub fn transfer(&mut self, src: u32, dst: u32, model: &str, bytes: u64, t0: Time, t1: Time, uid: u64) {
        if !(self.keep_rank(src) || self.keep_rank(dst)) || !self.in_window(t0, t1) || !self.ok() {
            return;
        }
        let node = self.node_of[src as usize];
        let tid = self.lane(node, t0, t1);
        let s = format!(
            "{{\"ph\":\"X\",\"name\":\"{model} {src} -> {dst}\",\"cat\":\"network\",\"pid\":{node},\"tid\":{tid},\"ts\":{:.3},\"dur\":{:.3},\"args\":{{\"bytes\":{bytes},\"from\":{src},\"to\":{dst}}}}}",
            us(t0), us(t1 - t0)
        );
        self.raw(&s);
        if self.flows.remove(&uid) && self.keep_rank(dst) {
            let f = format!("{{\"ph\":\"f\",\"bp\":\"e\",\"name\":\"msg\",\"cat\":\"msg\",\"id\":{uid},\"pid\":{},\"tid\":{dst},\"ts\":{:.3}}}", self.node_of[dst as usize], us(t1));
            self.raw(&f);
        }
    }

    pub fn copy(&mut self, r: u32, model: &str, bytes: u64, t0: Time, t1: Time) {
        if !self.keep_rank(r) || !self.in_window(t0, t1) || !self.ok() {
            return;
        }
        let node = self.node_of[r as usize];
        let tid = self.lane(node, t0, t1);
        let s = format!(
            "{{\"ph\":\"X\",\"name\":\"copy ({model}) rank {r}\",\"cat\":\"copy\",\"pid\":{node},\"tid\":{tid},\"ts\":{:.3},\"dur\":{:.3},\"args\":{{\"bytes\":{bytes},\"rank\":{r}}}}}",
            us(t0), us(t1 - t0)
        );
        self.raw(&s);
    }

    pub fn finish(mut self) -> std::io::Result<()> {
        self.w.write_all(b"\n]}\n")?;
        self.w.flush()
    }
}

/// The first word of a call-times file (`write_call_times`): "G2GCALLS" in ASCII, little-endian
pub const CALL_TIMES_MAGIC: u64 = u64::from_le_bytes(*b"G2GCALLS");
/// The format's version (the second word)
pub const CALL_TIMES_VERSION: u64 = 1;

/// Writes each call's simulated duration (the per-call split of the analysis, exact, without a
/// timeline to write and parse).  Little-endian u64 words: the magic, the version, the number of
/// ranks n, then n counts (calls finished per rank), then each rank's durations in ns, rank by
/// rank, in trace order (a rank's k-th duration is its call at event number k).
pub fn write_call_times(path: &str, per_rank: &[Vec<u64>]) -> std::io::Result<()> {
    let mut w = BufWriter::new(File::create(path)?);
    let word = |w: &mut BufWriter<File>, v: u64| w.write_all(&v.to_le_bytes());
    word(&mut w, CALL_TIMES_MAGIC)?;
    word(&mut w, CALL_TIMES_VERSION)?;
    word(&mut w, per_rank.len() as u64)?;
    for d in per_rank {
        word(&mut w, d.len() as u64)?;
    }
    for d in per_rank {
        for &ns in d {
            word(&mut w, ns)?;
        }
    }
    w.flush()
}

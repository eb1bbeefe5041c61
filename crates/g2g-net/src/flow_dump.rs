//! The flow network's changes written to a file, for study outside the simulator (feature
//! `flow-dump`, off by default: without it `FlowNet` carries no dump and calls none of this; the
//! writer itself is always compiled, so that its test runs).
//!
//! With the feature built in and `G2G_FLOW_DUMP=PATH` set, every `FlowNet` of the process writes
//! one line per change to PATH (the last net created wins the file: the replay has one):
//!
//! * `L <link> <bytes per ns>`: a link's capacity, before the first flow or slack line that names it;
//! * `S <t ns> <flow> <bytes> <link> <link> ...`: a flow starts;
//! * `E <flow>`: a flow ends (at the time of the next `R`);
//! * `K <link>` / `B <link>`: since the last solve the link has become slack (it cannot bind: the
//!   solves skip it) / has stopped being slack;
//! * `R <t ns>`: the rates are solved.
//!
//! `bench/speed/grouped_solve.py --replay PATH` replays such a file through the grouped solve's
//! specification, so that its work is counted on a traced run's own flows and paths.
//!
//! ```text
//! cargo build --release -p g2g-mpi --bin g2gsim-core --features g2g-net/flow-dump
//! G2G_FLOW_DUMP=/tmp/a2a.flows target/release/g2gsim-core TRACE MACHINE --mode gpudirect
//! ```
use std::fs::File;
use std::io::{BufWriter, Write};

use crate::topology::LinkId;

/// Simulated time, ns.
type Time = u64;

#[derive(Default)]
#[cfg_attr(not(feature = "flow-dump"), allow(dead_code))]
pub(crate) struct FlowDump {
    out: Option<BufWriter<File>>,
    /// links whose capacity is written
    written: usize,
    /// the slack bits as of the last solve
    slack: Vec<u64>,
}

#[cfg_attr(not(feature = "flow-dump"), allow(dead_code))]
impl FlowDump {
    /// A dump to `G2G_FLOW_DUMP`'s file, or none.
    pub(crate) fn from_env() -> FlowDump {
        match std::env::var_os("G2G_FLOW_DUMP") {
            Some(p) => FlowDump::to(std::path::Path::new(&p)),
            None => FlowDump::default(),
        }
    }

    /// A dump to `path`.
    pub(crate) fn to(path: &std::path::Path) -> FlowDump {
        let f = File::create(path).unwrap_or_else(|e| panic!("G2G_FLOW_DUMP={path:?}: {e}"));
        FlowDump { out: Some(BufWriter::with_capacity(1 << 20, f)), written: 0, slack: Vec::new() }
    }

    /// A flow starts (`cap(l)`: link l's capacity, read only for links not written yet).
    pub(crate) fn start(&mut self, cap: impl Fn(usize) -> f64, now: Time, id: u32, links: &[LinkId], bytes: f64) {
        let Some(out) = self.out.as_mut() else { return };
        let top = links.iter().map(|&l| l as usize + 1).max().unwrap_or(0);
        while self.written < top {
            writeln!(out, "L {} {:e}", self.written, cap(self.written)).expect("flow dump");
            self.written += 1;
        }
        write!(out, "S {now} {id} {bytes:e}").expect("flow dump");
        for l in links {
            write!(out, " {l}").expect("flow dump");
        }
        writeln!(out).expect("flow dump");
    }

    pub(crate) fn finish(&mut self, id: u32) {
        if let Some(out) = self.out.as_mut() {
            writeln!(out, "E {id}").expect("flow dump");
        }
    }

    pub(crate) fn resolve(&mut self, now: Time, slack_bits: &[u64], caps: impl Fn(usize) -> Option<f64>) {
        let Some(out) = self.out.as_mut() else { return };
        // every link before its slack bit
        while let Some(cap) = caps(self.written) {
            writeln!(out, "L {} {:e}", self.written, cap).expect("flow dump");
            self.written += 1;
        }
        self.slack.resize(slack_bits.len(), 0);
        for (w, (old, &new)) in self.slack.iter_mut().zip(slack_bits).enumerate() {
            let mut diff = *old ^ new;
            while diff != 0 {
                let b = diff.trailing_zeros() as usize;
                diff &= diff - 1;
                let l = w * 64 + b;
                if l >= self.written {
                    continue; // past the last link: the word's unused bits
                }
                let kind = if (new >> b) & 1 != 0 { 'K' } else { 'B' };
                writeln!(out, "{kind} {l}").expect("flow dump");
            }
            *old = new;
        }
        writeln!(out, "R {now}").expect("flow dump");
    }
}

impl Drop for FlowDump {
    fn drop(&mut self) {
        if let Some(out) = self.out.as_mut() {
            out.flush().expect("flow dump");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_links_before_use_and_slack_changes_before_each_solve() {
        let path = std::env::temp_dir().join(format!("g2g-flow-dump-{}.txt", std::process::id()));
        let caps = [12.5, 25.0, 50.0];
        {
            let mut d = FlowDump::to(&path);
            d.start(|l| caps[l], 100, 7, &[1], 4096.0);
            // links 0 and 2 slack, 1 not: word 0b101; then link 0 binds (0b100)
            d.resolve(100, &[0b101], |l| caps.get(l).copied());
            d.finish(7);
            d.resolve(250, &[0b100], |l| caps.get(l).copied());
        }
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).ok();
        let want = "L 0 1.25e1\nL 1 2.5e1\nS 100 7 4.096e3 1\nL 2 5e1\nK 0\nK 2\nR 100\nE 7\nB 0\nR 250\n";
        assert_eq!(text, want);
    }
}

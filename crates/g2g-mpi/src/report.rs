//! What a simulation returns; serialised as the JSON report (`--json`).
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct RankStat {
    pub rank: u32,
    pub node: u32,
    pub gpu: u32,
    pub end_s: f64,
    /// time inside MPI calls (including staging copies the mode adds to them)
    pub comm_s: f64,
    pub compute_s: f64,
    /// explicit Memcpy operations and HostCopy staging copies
    pub copy_s: f64,
    /// stretches the tracer did not record (`Untraced` rows): skipped under `--window traced`,
    /// host time (inside `compute_s`) under `--window all`
    pub untraced_s: f64,
}

/// What the replay found about where MPI buffers live and how the trace staged them
/// (docs/semantics.md).
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct BufferStat {
    /// MPI data buffers (point-to-point sends and collective calls with bytes) seen by the replay
    pub mpi_buffers: u64,
    /// of those, device-resident after `--buffers` (GPU data the mode moves)
    pub device: u64,
    /// of those, host buffers the trace staged with an explicit copy (HostCopy style)
    pub staged: u64,
    /// explicit copies recognised as staging an MPI buffer: D2H before a send, H2D after a receive
    pub staging_copies: u64,
    /// of those, removed by the mode (`gpudirect`)
    pub staging_copies_removed: u64,
    /// data-less calls (Barrier, zero-byte messages) kept on the host path
    pub sync_calls: u64,
}

#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct OpStat {
    pub count: u64,
    pub total_s: f64,
    pub min_s: f64,
    pub max_s: f64,
    pub bytes: u64,
}

#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct PathStat {
    pub messages: u64,
    pub bytes: u64,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct EngineStat {
    pub events: u64,
    pub wall_s: f64,
    /// part of wall_s spent reading and decoding the trace
    pub read_s: f64,
    pub events_per_s: f64,
    pub ops: u64,
    pub ops_per_s: f64,
    pub messages: u64,
    pub flow_solves: u64,
    /// exact max-min: changes settled by whole-component solves: those in components of 16 flows
    /// or fewer, and those that spread (the rest were incremental)
    pub flow_solves_component: u64,
    /// exact max-min: rounds (filling and check) of the incremental solves, those that held and
    /// those that gave way to a whole-component solve (how far the changes cascaded: one round
    /// is a change settled at once)
    pub flow_solve_rounds: u64,
    /// flows given a new rate (and finish time) by the solves (max-min-grouped: the members of
    /// the groups its solves re-rated; its rounds are in `flow_solve_rounds`, and the flows its
    /// solves moved between groups in `flow_bottleneck_moves`)
    pub flow_rerates: u64,
    /// exact max-min: of those, the ones re-rated by incremental solves, and the distinct
    /// bottleneck links of each such solve's re-rated flows, summed (their ratio: how many flows
    /// at one link's rate a change moves together)
    pub flow_rerates_incremental: u64,
    pub flow_rerate_bottlenecks: u64,
    /// exact max-min: flows whose bottleneck link moved to another (found by the incremental check)
    pub flow_bottleneck_moves: u64,
    /// exact max-min: which solve held the flows (`per-flow`, `grouped`, or `both`: handed from
    /// one to the other at `solver_switches_ns`, each hand-off moving the live flows, summed in
    /// `handed_off_flows`); the two give the same rates and finish times, at different costs
    /// (`g2g_net::solver`); `none` under bottleneck sharing
    pub max_min_solver: &'static str,
    pub solver_switches_ns: Vec<u64>,
    pub handed_off_flows: u64,
    pub peak_flows: u64,
    pub links: u64,
    /// how the core was compiled: `pgo` (profile-guided, `make pgo`), `release` or `debug`
    pub build: &'static str,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Report {
    pub trace: String,
    pub machine: String,
    pub mode: String,
    /// where MPI buffers are taken to live: `traced`, `device` or `host` (`--buffers`)
    pub buffers: String,
    /// how the trace recorded buffer spaces (`g2gsim.buffers` metadata)
    pub trace_buffers: String,
    /// `traced` (untraced stretches skipped) or `all` (simulated as host time)
    pub window: String,
    /// every assumption the run made, one sentence each
    pub assumptions: Vec<String>,
    /// options that changed nothing, and why (one line each)
    pub notices: Vec<String>,
    pub buffer_stats: BufferStat,
    /// untraced time summed over ranks
    pub untraced_s: f64,
    /// how flows shared links in this run: `max-min` (exact, incremental), `max-min-full`
    /// (exact, whole-component solves) or `bottleneck` (the approximation)
    pub sharing: String,
    pub nranks: u32,
    pub nodes: u32,
    pub gpus_per_node: u32,
    pub total_time_s: f64,
    pub comm_time_s: f64,
    pub compute_time_s: f64,
    pub copy_time_s: f64,
    pub per_rank: Vec<RankStat>,
    pub per_op: std::collections::BTreeMap<String, OpStat>,
    /// messages and bytes per data-path model (host, hostcopy, gpudirect-p2p, ...)
    pub paths: std::collections::BTreeMap<String, PathStat>,
    /// point-to-point messages by size class (bytes upper bound label)
    pub p2p_size_classes: std::collections::BTreeMap<String, PathStat>,
    pub collective_messages: u64,
    pub p2p_messages: u64,
    /// the largest message (point-to-point or inside a collective), bytes
    pub max_message_bytes: u64,
    pub engine: EngineStat,
    /// what the replay noticed and could not hold against the trace (unreceived messages, requests
    /// never waited for); `strict` makes the first an error
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

impl Report {
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }
}

/// Size class label of a message: "<=1KiB", "<=64KiB", "<=1MiB", ">1MiB" and finer.
#[allow(dead_code)]
pub fn size_class(bytes: u64) -> &'static str {
    SIZE_CLASSES[size_class_index(bytes)]
}

/// The point-to-point size classes of the report, in order (`_core.size_classes()`).
pub const SIZE_CLASSES: [&str; 5] = ["a: <=1KiB", "b: 1KiB-64KiB", "c: 64KiB-1MiB", "d: 1MiB-16MiB", "e: >16MiB"];
/// The largest message of each class but the last (which has no bound).
pub const SIZE_CLASS_MAX_BYTES: [u64; 4] = [1 << 10, 1 << 16, 1 << 20, 1 << 24];

/// Index of `bytes`' class in [`SIZE_CLASSES`].
pub fn size_class_index(bytes: u64) -> usize {
    SIZE_CLASS_MAX_BYTES.iter().position(|&m| bytes <= m).unwrap_or(SIZE_CLASS_MAX_BYTES.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_classes_cut_at_their_bounds() {
        assert_eq!(SIZE_CLASSES.len(), SIZE_CLASS_MAX_BYTES.len() + 1);
        for (i, &m) in SIZE_CLASS_MAX_BYTES.iter().enumerate() {
            assert_eq!(size_class_index(m), i);
            assert_eq!(size_class_index(m + 1), i + 1);
        }
        assert_eq!(size_class(0), "a: <=1KiB");
        assert_eq!(size_class(u64::MAX), "e: >16MiB");
    }
}

/// "0-3, 7, 9-12": a sorted rank list, compressed into ranges.
pub fn list_ranks(v: &[u32]) -> String {
    let mut out: Vec<String> = vec![];
    let mut i = 0;
    while i < v.len() {
        let mut j = i;
        while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
            j += 1;
        }
        out.push(if j > i { format!("{}-{}", v[i], v[j]) } else { v[i].to_string() });
        i = j + 1;
    }
    if out.len() > 24 {
        let n = out.len();
        out.truncate(24);
        out.push(format!("... ({n} ranges)"));
    }
    out.join(", ")
}

/// A deadlock's summary: the blocked ranks grouped by the call they are in (the rank's own line
/// without its rank), largest group first.
pub fn group_blocked(lines: &[String]) -> Vec<String> {
    let mut groups: BTreeMap<String, Vec<u32>> = BTreeMap::new();
    for l in lines {
        let (rank, rest) = match l.strip_prefix("rank ").and_then(|x| x.split_once(": ")) {
            Some((r, rest)) => (r.parse::<u32>().unwrap_or(u32::MAX), rest),
            None => (u32::MAX, l.as_str()),
        };
        // the call without its event number, so that ranks in the same call group together
        let call = match (rest.find(" (event "), rest.find(')')) {
            (Some(a), Some(b)) if b > a => format!("{}{}", &rest[..a], &rest[b + 1..]),
            _ => rest.to_string(),
        };
        groups.entry(call).or_default().push(rank);
    }
    let mut v: Vec<(String, Vec<u32>)> = groups.into_iter().collect();
    v.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(a.0.cmp(&b.0)));
    v.into_iter().map(|(call, ranks)| format!("{} rank(s) {}: {call}", ranks.len(), list_ranks(&ranks))).collect()
}

#[cfg(test)]
mod checks_tests {
    use super::*;

    #[test]
    fn ranks_compress_into_ranges() {
        assert_eq!(list_ranks(&[0, 1, 2, 3, 7, 9, 10]), "0-3, 7, 9-10");
        assert_eq!(list_ranks(&[]), "");
    }

    #[test]
    fn blocked_ranks_group_by_call() {
        let lines: Vec<String> = (0..256)
            .map(|r| {
                if r < 192 {
                    format!("rank {r}: in Recv (event {}) peer 5 tag 1 comm 0", r % 7)
                } else {
                    format!("rank {r}: in Barrier (event 3) on comm 0 root -1")
                }
            })
            .collect();
        let g = group_blocked(&lines);
        assert_eq!(
            g,
            ["192 rank(s) 0-191: in Recv peer 5 tag 1 comm 0", "64 rank(s) 192-255: in Barrier on comm 0 root -1"]
        );
    }
}

//! What the replay counts (per-operation times, bytes per data path and size class, messages) and
//! the report built from it at the end.
use g2g_engine::Time;
use g2g_trace::OpKind;

use crate::report::{size_class_index, EngineStat, OpStat, PathStat, RankStat, Report, SIZE_CLASSES};

pub(crate) struct Stats {
    /// per operation kind (`OpKind::index`); `total_s` is set from `ops_ns` when the report is filled
    pub ops: Vec<OpStat>,
    /// per operation kind: the sum of its calls' times, ns (exact, so the same whatever the order
    /// in which calls of one instant end)
    ops_ns: Vec<u128>,
    /// bytes and messages per data path (a handful of entries: a short list beats hashing a name)
    pub paths: Vec<(&'static str, PathStat)>,
    /// point-to-point bytes and messages per size class (`report::SIZE_CLASSES`)
    pub sizes: [PathStat; SIZE_CLASSES.len()],
    pub p2p_msgs: u64,
    pub coll_msgs: u64,
    /// the largest message seen, bytes
    pub max_msg: u64,
    /// operations in the trace (a hint, for progress) and done so far
    pub ops_total: u64,
    pub ops_done: u64,
    pub peak_flows: u64,
}

impl Stats {
    pub fn new(ops_total: u64) -> Stats {
        Stats {
            ops: vec![OpStat::default(); OpKind::COUNT],
            ops_ns: vec![0; OpKind::COUNT],
            paths: Vec::new(),
            sizes: Default::default(),
            p2p_msgs: 0,
            coll_msgs: 0,
            max_msg: 0,
            ops_total,
            ops_done: 0,
            peak_flows: 0,
        }
    }

    /// An operation of `kind` took `dt` and moved `bytes`.
    pub fn op(&mut self, kind: OpKind, dt: Time, bytes: u64) {
        let s = &mut self.ops[kind.index()];
        let d = dt as f64 * 1e-9;
        if s.count == 0 || d < s.min_s {
            s.min_s = d;
        }
        if d > s.max_s {
            s.max_s = d;
        }
        s.count += 1;
        s.bytes += bytes;
        self.ops_ns[kind.index()] += dt as u128;
    }

    /// A message of `bytes` on data path `path` (by its report name).
    pub fn message(&mut self, path: &'static str, bytes: u64, collective: bool) {
        let ps = match self.paths.iter().position(|(k, _)| std::ptr::eq(k.as_ptr(), path.as_ptr()) || *k == path) {
            Some(i) => &mut self.paths[i].1,
            None => {
                self.paths.push((path, PathStat::default()));
                &mut self.paths.last_mut().unwrap().1
            }
        };
        ps.messages += 1;
        ps.bytes += bytes;
        self.max_msg = self.max_msg.max(bytes);
        if collective {
            self.coll_msgs += 1;
        } else {
            self.p2p_msgs += 1;
            let s = &mut self.sizes[size_class_index(bytes)];
            s.messages += 1;
            s.bytes += bytes;
        }
    }

    /// Fills the report: totals and (if `per_rank`) per-rank rows from `ranks`, then the counts.
    /// The report comes with its heading (trace, machine, mode, sizes) and leaves with its
    /// figures but the engine's.
    pub fn fill(&self, rep: &mut Report, ranks: impl Iterator<Item = RankTimes>, per_rank: bool) {
        let mut end: Time = 0;
        let (mut comm, mut comp, mut copy, mut untraced) = (0u128, 0u128, 0u128, 0u128);
        for (i, rk) in ranks.enumerate() {
            end = end.max(rk.end);
            untraced += rk.untraced as u128;
            comm += rk.comm as u128;
            comp += rk.compute as u128;
            copy += rk.copy as u128;
            if per_rank {
                rep.per_rank.push(RankStat {
                    rank: i as u32,
                    node: rk.node,
                    gpu: rk.gpu,
                    end_s: rk.end as f64 * 1e-9,
                    comm_s: rk.comm as f64 * 1e-9,
                    compute_s: rk.compute as f64 * 1e-9,
                    copy_s: rk.copy as f64 * 1e-9,
                    untraced_s: rk.untraced as f64 * 1e-9,
                });
            }
        }
        let n = rep.nranks as f64;
        rep.total_time_s = end as f64 * 1e-9;
        rep.comm_time_s = comm as f64 * 1e-9 / n;
        rep.compute_time_s = comp as f64 * 1e-9 / n;
        rep.copy_time_s = copy as f64 * 1e-9 / n;
        rep.untraced_s = untraced as f64 * 1e-9;
        for (i, s) in self.ops.iter().enumerate() {
            if s.count > 0 {
                let mut s = s.clone();
                s.total_s = self.ops_ns[i] as f64 * 1e-9;
                rep.per_op.insert(OpKind::from_index(i).name().to_string(), s);
            }
        }
        for (k, v) in &self.paths {
            rep.paths.insert(k.to_string(), v.clone());
        }
        for (i, v) in self.sizes.iter().enumerate() {
            if v.messages > 0 {
                rep.p2p_size_classes.insert(SIZE_CLASSES[i].to_string(), v.clone());
            }
        }
        rep.p2p_messages = self.p2p_msgs;
        rep.collective_messages = self.coll_msgs;
        rep.max_message_bytes = self.max_msg;
    }
}

/// One rank's times (ns) and place, for the report.
pub(crate) struct RankTimes {
    pub node: u32,
    pub gpu: u32,
    pub end: Time,
    pub comm: Time,
    pub compute: Time,
    pub copy: Time,
    pub untraced: Time,
}

/// The report's `engine` block.
pub(crate) fn engine_stat(
    stats: &Stats,
    events: u64,
    wall_s: f64,
    read_s: f64,
    net: &g2g_net::FlowNet,
    links: u64,
) -> EngineStat {
    EngineStat {
        events,
        wall_s,
        read_s,
        events_per_s: events as f64 / wall_s.max(1e-9),
        ops: stats.ops_done,
        ops_per_s: stats.ops_done as f64 / wall_s.max(1e-9),
        messages: stats.p2p_msgs + stats.coll_msgs,
        flow_solves: net.solves,
        flow_solves_component: net.component_solves,
        // the grouped solve's (where it held the flows): its rounds, the members of the groups
        // its solves re-rated, and the flows they moved between groups, added to the per-flow
        // solve's
        flow_solve_rounds: net.incremental_rounds + net.grouped_counts().map_or(0, |c| c.rounds),
        flow_rerates: net.rerates + net.grouped_counts().map_or(0, |c| c.rerated_flows),
        flow_rerates_incremental: net.incremental_rerates,
        flow_rerate_bottlenecks: net.rerate_bottlenecks,
        flow_bottleneck_moves: net.bottleneck_moves + net.grouped_counts().map_or(0, |c| c.moves),
        max_min_solver: net.solver_used(),
        solver_switches_ns: net.solver_switches_ns.clone(),
        handed_off_flows: net.handed_off_flows,
        peak_flows: stats.peak_flows,
        links,
        build: build_kind(),
    }
}

/// How this core was compiled, for the report's `engine.build`: `pgo` when built with a profile by
/// `bench/speed/pgo.py` (which sets `G2GSIM_PGO_PROFILE`; cargo rebuilds when it changes).
pub fn build_kind() -> &'static str {
    if option_env!("G2GSIM_PGO_PROFILE").is_some() {
        "pgo"
    } else if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The report's total of an operation kind: the exact sum of its calls' ns, in seconds, the
    /// same whatever the order in which the calls ended (calls that end at one instant end in
    /// the event queue's order, which a change of flow ids may permute).  Summed as seconds, call
    /// by call, these five give 124.456792796 in the second order and 124.45679279600002 in the
    /// others.
    #[test]
    fn an_operations_total_is_the_exact_sum_in_any_order() {
        let dts = [3840u64, 1, 999_999_937, 7, 123_456_789_011];
        let mut totals = std::collections::BTreeSet::new();
        for order in [[0, 1, 2, 3, 4], [0, 1, 4, 2, 3], [4, 3, 2, 1, 0], [2, 0, 4, 1, 3]] {
            let mut st = Stats::new(5);
            for i in order {
                st.op(OpKind::Waitall, dts[i], 0);
            }
            let mut rep = Report { nranks: 1, ..Default::default() };
            st.fill(&mut rep, std::iter::empty(), false);
            let s = &rep.per_op["Waitall"];
            assert_eq!((s.count, s.min_s, s.max_s), (5, 1e-9, 123_456_789_011.0 * 1e-9));
            totals.insert(s.total_s.to_bits());
        }
        assert_eq!(totals.len(), 1);
        assert_eq!(f64::from_bits(*totals.first().unwrap()), dts.iter().sum::<u64>() as f64 * 1e-9);
    }
}

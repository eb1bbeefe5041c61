//! Setting a run up: the machine built from its file and the options (placement, sharing, network
//! scale), the trace's communicators, the collective selection rules, the timeline; then the run
//! and its report.
use std::collections::VecDeque;
use std::time::Instant;

use g2g_coll::{AlgoOverrides, Thresholds};
use g2g_engine::EventQueue;
use g2g_net::machine::{Machine, Placement};
use g2g_net::MachineConfig;
use g2g_trace::{TraceError, TraceSource};

use crate::model::collective::Colls;
use crate::model::factors::Load;
use crate::model::protocol::Messages;
use crate::model::requests::Requests;
use crate::model::transfer::Transfers;
use crate::model::world::World;
use crate::options::{Mapping, ModePolicy, Progress, SimError, SimOptions};
use crate::report::Report;
use crate::state::{Rank, State};
use crate::stats::{engine_stat, RankTimes, Stats};

fn thresholds_from(cfg: &MachineConfig) -> Result<Thresholds, String> {
    let mut th = Thresholds::default();
    for (k, v) in &cfg.coll.entries {
        th.set(k, *v).map_err(|e| format!("collectives.{k}: {e}"))?;
    }
    Ok(th)
}

/// Runs a trace on a machine.  `progress(done_ops, total_ops)` is called now and then; returning
/// false interrupts the run.
pub fn simulate(
    src: &mut dyn TraceSource,
    cfg: MachineConfig,
    opt: SimOptions,
    total_ops_hint: u64,
    progress: Option<Progress>,
) -> Result<Report, SimError> {
    let wall = Instant::now();
    let nranks = src.nranks();
    if nranks > g2g_trace::MAX_RANKS {
        return Err(SimError::Trace(TraceError {
            file: src.name().into(),
            rank: None,
            seq: None,
            msg: format!("the trace has {nranks} ranks; g2gsim simulates at most {}", g2g_trace::MAX_RANKS),
        }));
    }
    if nranks == 0 {
        return Err(SimError::Trace(TraceError {
            file: src.name().into(),
            rank: None,
            seq: None,
            msg: "trace has no ranks".into(),
        }));
    }
    let gpn = opt.gpus_per_node.unwrap_or(cfg.gpus_per_node).max(1);
    let place = match &opt.mapping {
        Mapping::Linear => Placement::linear(nranks, gpn),
        Mapping::RoundRobin => Placement::round_robin(nranks, gpn),
        Mapping::Nodes(v) => {
            if v.len() != nranks as usize {
                return Err(SimError::Options(format!(
                    "mapping has {} entries but the trace has {nranks} ranks",
                    v.len()
                )));
            }
            Placement::from_nodes(v.clone(), gpn).map_err(SimError::Options)?
        }
    };
    let th = thresholds_from(&cfg).map_err(SimError::Machine)?;
    let mut ov_spec = cfg.coll.algos.join(",");
    if !opt.coll_algos.is_empty() {
        if !ov_spec.is_empty() {
            ov_spec.push(',');
        }
        ov_spec.push_str(&opt.coll_algos);
    }
    let ov = if ov_spec.is_empty() {
        AlgoOverrides::default()
    } else {
        AlgoOverrides::parse(&ov_spec).map_err(|e| SimError::Options(e.to_string()))?
    };
    let machine_name = cfg.name.clone();
    let mut cfg = cfg;
    if let Some(sh) = opt.sharing {
        cfg.sharing = sh;
    }
    // a scale outside this range would make bandwidths wrap or vanish (issue 24)
    if !(opt.network_scale.is_finite() && (1e-6..=1e6).contains(&opt.network_scale)) {
        return Err(SimError::Options(format!("network scale {} is outside [1e-6, 1e6]", opt.network_scale)));
    }
    let mut m = Machine::build(cfg, place).map_err(SimError::Machine)?;
    if opt.network_scale != 1.0 {
        m.scale_network(opt.network_scale);
    }
    let world = World::new(nranks, src.comms()).map_err(|(bad, msg)| {
        SimError::Trace(TraceError { file: src.name().into(), rank: Some(bad), seq: None, msg })
    })?;
    let trace_name = src.name().to_string();
    // room for the flows in flight at once (16 per rank; more grow the tables as needed)
    let flows_hint = (nranks as usize).saturating_mul(16).min(1 << 26);
    m.net.reserve_flows(flows_hint);
    let load = Load::new(m.cfg.factors_by_load());
    let tl = match &opt.timeline {
        Some(p) => Some(
            crate::timeline::Timeline::create(
                p,
                opt.timeline_max_events,
                m.place.nodes,
                &m.place.node_of,
                &m.place.gpu_of,
            )
            .map_err(|e| SimError::Options(format!("timeline {p}: {e}")))?,
        ),
        None => None,
    };
    let mut st = State {
        m,
        policy: ModePolicy::new(&opt),
        q: EventQueue::new(),
        world,
        ranks: (0..nranks).map(|_| Rank::new()).collect(),
        queues: (0..nranks).map(|_| VecDeque::new()).collect(),
        src,
        exhausted: false,
        read_s: 0.0,
        reqs: Requests::default(),
        msgs: Messages::default(),
        xfers: Transfers::default(),
        colls: Colls::new(th, ov),
        load,
        resched: Vec::new(),
        wait_lists: Vec::new(),
        op_pool: Vec::new(),
        stats: Stats::new(total_ops_hint),
        tl,
        checks: Default::default(),
    };
    st.run(progress)?;
    st.end_of_trace_warnings();
    if opt.strict {
        if let Some(w) = st.checks.warnings.first() {
            return Err(SimError::Trace(TraceError { file: st.src.name().into(), rank: None, seq: None, msg: format!("strict mode: {w}") }));
        }
    }
    if let Some(tl) = st.tl.take() {
        tl.finish().map_err(|e| SimError::Options(format!("timeline: {e}")))?;
    }
    Ok(report(&st, &opt, trace_name, machine_name, wall.elapsed().as_secs_f64()))
}

fn report(st: &State, opt: &SimOptions, trace: String, machine: String, wall_s: f64) -> Report {
    let place = &st.m.place;
    let mut rep = Report {
        trace,
        machine,
        mode: st.policy.name(),
        sharing: st.m.net.sharing.name().to_string(),
        nranks: st.world.nranks,
        nodes: place.nodes,
        gpus_per_node: place.gpus_per_node,
        ..Default::default()
    };
    let ranks = st.ranks.iter().enumerate().map(|(i, rk)| RankTimes {
        node: place.node_of[i],
        gpu: place.gpu_of[i],
        end: rk.end,
        comm: rk.comm,
        compute: rk.compute,
        copy: rk.copy,
    });
    st.stats.fill(&mut rep, ranks, opt.per_rank);
    rep.warnings = st.checks.warnings.clone();
    rep.engine = engine_stat(
        &st.stats,
        st.q.processed(),
        wall_s,
        st.read_s,
        st.m.net.solves,
        st.m.net.component_solves,
        st.m.num_links() as u64,
    );
    rep
}

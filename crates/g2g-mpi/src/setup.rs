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
    m.net.solver = opt.max_min_solver;
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
            crate::timeline::Timeline::create_filtered(
                p,
                opt.timeline_max_events,
                m.place.nodes,
                &m.place.node_of,
                &crate::timeline::TimelineFilter {
                    ranks: opt.timeline_ranks.clone(),
                    window_ns: opt.timeline_window_ns,
                },
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
        bufstat: Default::default(),
        traced_device: 0,
        untraced_ops: 0,
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
        call_ns: opt.call_times.as_ref().map(|_| vec![Vec::new(); nranks as usize]),
        checks: Default::default(),
    };
    st.run(progress)?;
    st.end_of_trace_warnings();
    if opt.strict {
        if let Some(w) = st.checks.warnings.first() {
            return Err(SimError::Trace(TraceError {
                file: st.src.name().into(),
                rank: None,
                seq: None,
                msg: format!("strict mode: {w}"),
            }));
        }
    }
    if let Some(tl) = st.tl.take() {
        tl.finish().map_err(|e| SimError::Options(format!("timeline: {e}")))?;
    }
    if let (Some(p), Some(c)) = (&opt.call_times, &st.call_ns) {
        crate::timeline::write_call_times(p, c).map_err(|e| SimError::Options(format!("call_times {p}: {e}")))?;
    }
    Ok(report(&st, &opt, trace_name, machine_name, wall.elapsed().as_secs_f64()))
}

fn report(st: &State, opt: &SimOptions, trace: String, machine: String, wall_s: f64) -> Report {
    let place = &st.m.place;
    let mut rep = Report {
        trace,
        machine,
        mode: st.policy.name(),
        buffers: st.policy.buffers.name().to_string(),
        trace_buffers: st.src.buffers().to_string(),
        window: st.policy.window.name().to_string(),
        buffer_stats: {
            let b = &st.bufstat;
            crate::report::BufferStat {
                mpi_buffers: b.mpi_buffers,
                device: b.device,
                staged: b.staged,
                staging_copies: b.staging_copies,
                staging_copies_removed: b.staging_copies_removed,
                sync_calls: b.sync_calls,
            }
        },
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
        untraced: rk.untraced,
    });
    st.stats.fill(&mut rep, ranks, opt.per_rank);
    explain(st, &mut rep);
    if opt.max_min_solver != g2g_net::solver::Solver::Auto && st.m.net.sharing != g2g_net::lmm::Sharing::MaxMin {
        rep.notices.push(format!(
            "--solver {} changes nothing: it picks how exact max-min sharing is solved, and this run's sharing is {}",
            opt.max_min_solver.name(),
            st.m.net.sharing.name()
        ));
    }
    if opt.network_scale != 1.0 {
        if let Some(bw) = st.m.cfg.nic_rank_bw {
            rep.assumptions.push(format!(
                "network scale {}: the NICs and network links are scaled, each rank's NIC ports (node.nic.rank_bw, {:.3} GB/s) are not: one process's rate stays",
                opt.network_scale,
                bw / 1e9
            ));
        }
    }
    rep.warnings = st.checks.warnings.clone();
    rep.engine = engine_stat(&st.stats, st.q.processed(), wall_s, st.read_s, &st.m.net, st.m.num_links() as u64);
    rep
}

/// The report's `assumptions` (what the run took for granted, one sentence each) and `notices`
/// (options that changed nothing, and what to use instead).  docs/semantics.md.
fn explain(st: &State, rep: &mut Report) {
    use crate::model::hostcopy::LOOKAHEAD;
    use crate::options::{Buffers, Mode, Window};
    let b = &st.bufstat;
    let (mode, bufs) = (st.policy.mode, st.policy.buffers);
    let nranks = st.world.nranks;
    let traced = match rep.trace_buffers.as_str() {
        "traced" => "recorded by the tracer".to_string(),
        "" => "not said by the trace".to_string(),
        "assumed-host" => "not recorded by the trace (host assumed at import)".to_string(),
        "assumed-device" => "not recorded by the trace (device assumed at import)".to_string(),
        t => format!("{t} at import"),
    };
    let host = b.mpi_buffers - b.device - b.staged;
    rep.assumptions.push(format!(
        "buffers {}: of {} MPI data buffers, {} device, {} host buffers staged by the application's own copies, {} host (buffer spaces {traced})",
        bufs.name(),
        b.mpi_buffers,
        b.device,
        b.staged,
        host
    ));
    rep.assumptions.push(format!(
        "staging rule: a D2H copy followed within {LOOKAHEAD} operations of the same rank by a host send of its size, and an H2D copy after a host receive of its size, only stage an MPI buffer ({} recognised{})",
        b.staging_copies,
        if mode == Mode::GpuDirect { format!(", {} removed by gpudirect", b.staging_copies_removed) } else { String::new() }
    ));
    rep.assumptions.push(match mode {
        Mode::AsTraced => "mode as-traced: each call moves its data as recorded (a GPU-aware MPI moves device buffers itself)".to_string(),
        Mode::HostCopy => "mode hostcopy: device buffers are staged through host memory by the application (a D2H copy before the send, an H2D copy after the receive; added where the trace has none)".to_string(),
        Mode::GpuDirect => "mode gpudirect: device and staged buffers move GPU to GPU (P2P within a node, RDMA or pipelined across nodes); recognised staging copies are removed".to_string(),
    });
    if !st.colls.chosen.is_empty() {
        let each: Vec<String> = st
            .colls
            .chosen
            .iter()
            .map(|((kind, algo), n)| format!("{kind} {algo} ({n} call{})", if *n == 1 { "" } else { "s" }))
            .collect();
        rep.assumptions.push(format!(
            "collective algorithms (by message and communicator size, MPICH's and Open MPI's default rules, or as set by --coll-algo and [collectives]): {}",
            each.join(", ")
        ));
    }
    if b.sync_calls > 0 {
        rep.assumptions.push(format!(
            "synchronisation: {} Barrier and zero-byte calls take the host path in every mode",
            b.sync_calls
        ));
    }
    let untraced_ranks = st.ranks.iter().filter(|rk| rk.untraced > 0).count();
    if st.untraced_ops > 0 {
        let per = rep.untraced_s / nranks.max(1) as f64;
        rep.assumptions.push(match st.policy.window {
            Window::Traced => format!(
                "window traced: {untraced_ranks} of {nranks} ranks have stretches the tracer did not record ({per:.6} s per rank on average): skipped, not simulated (--window all simulates them as host time)"
            ),
            Window::All => format!(
                "window all: {untraced_ranks} of {nranks} ranks have stretches the tracer did not record ({per:.6} s per rank on average): simulated as host time"
            ),
        });
    } else if st.policy.window == Window::All {
        rep.notices.push("--window all changes nothing: the trace has no untraced stretches".into());
    }
    // options that could not change this run
    if mode != Mode::AsTraced && b.device + b.staged == 0 {
        let why = if b.mpi_buffers == 0 {
            "the trace moves no MPI data".to_string()
        } else if bufs == Buffers::Host {
            "--buffers host keeps every MPI buffer in host memory".to_string()
        } else {
            format!("none of the {} MPI data buffers is on the GPU or staged through explicit copies (buffer spaces {traced})", b.mpi_buffers)
        };
        let hint = if bufs == Buffers::Device || b.mpi_buffers == 0 {
            ""
        } else {
            "; --buffers device asks what GPU-resident buffers would give"
        };
        rep.notices.push(format!("--mode {} changes nothing: {why}{hint}", mode.name()));
    }
    if bufs == Buffers::Device && b.mpi_buffers > 0 && st.traced_device + b.staged == b.mpi_buffers {
        rep.notices.push(
            "--buffers device changes nothing: every MPI data buffer is device memory or staged in the trace already"
                .into(),
        );
    }
    if bufs == Buffers::Host && st.traced_device == 0 && b.mpi_buffers > 0 && !rep.per_op.contains_key("Memcpy") {
        rep.notices.push(
            "--buffers host changes nothing: the trace's MPI buffers are host memory and it has no copies".into(),
        );
    }
    if mode != Mode::GpuDirect && (st.policy.gpudirect_min_bytes > 0 || st.policy.gpudirect_collectives_only) {
        rep.notices.push(format!(
            "--gpudirect-min-bytes / --gpudirect-collectives-only change nothing under --mode {}: they choose which messages gpudirect moves directly",
            mode.name()
        ));
    }
}

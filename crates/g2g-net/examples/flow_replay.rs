//! Replays a flow dump of the core (`G2G_FLOW_DUMP`, `src/flow_dump.rs`) through the per-flow
//! solve (`FlowNet`, exact max-min as the presets run it) and through the grouped solve
//! (`grouped::GroupNet`), and times each on the same starts, ends and solves (issue 27).
//!
//! ```text
//! cargo run --release -p g2g-net --example flow_replay -- DUMP [--net both|flownet|grouped]
//!     [--rings N] [--reps N] [--check-every N] [--json] [--phases]
//! ```
//!
//! The dump is read into memory first: the times are the replays' own.  The ends are the core's,
//! so both nets see the traced run's own changes; neither schedules its completions on an event
//! queue (the per-flow net's `Reschedule`s and the grouped net's `GroupEnd`s are counted, then
//! dropped).  With `--check-every N` (and both nets) every Nth solve's rates are compared, flow
//! by flow, to 1e-9 (a difference panics: exit status 101).  `--phases` times the grouped
//! solve's parts (gathering U, fillings, checks, commits); `--json` prints one line per run.
use std::time::Instant;

use g2g_net::grouped::{GroupEnd, GroupNet};
use g2g_net::lmm::{FlowNet, Reschedule, Sharing};

enum Op {
    Link(f64),
    Start {
        t: u64,
        id: u32,
        bytes: f64,
        links: Vec<u32>,
    },
    /// a flow ends, at the time of the next solve
    End(u32, u64),
    Slack(u32, bool),
    Solve(u64),
}

fn read(path: &str) -> Result<Vec<Op>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let mut ops = Vec::new();
    let mut nlinks = 0u32;
    for (i, line) in text.lines().enumerate() {
        let bad = |what: &str| format!("{path}:{}: {what}: {line:?}", i + 1);
        let mut w = line.split_ascii_whitespace();
        let kind = w.next().ok_or_else(|| bad("an empty line"))?;
        let mut num = |what: &str| -> Result<&str, String> { w.next().ok_or_else(|| bad(what)) };
        match kind {
            "L" => {
                let l: u32 = num("a link")?.parse().map_err(|_| bad("a link id"))?;
                if l != nlinks {
                    return Err(bad("links out of order"));
                }
                nlinks += 1;
                ops.push(Op::Link(num("a capacity")?.parse().map_err(|_| bad("a capacity"))?));
            }
            "S" => {
                let t = num("a time")?.parse().map_err(|_| bad("a time"))?;
                let id = num("a flow")?.parse().map_err(|_| bad("a flow id"))?;
                let bytes = num("bytes")?.parse().map_err(|_| bad("bytes"))?;
                let links: Vec<u32> = w.map(|x| x.parse().map_err(|_| bad("a link id"))).collect::<Result<_, _>>()?;
                if links.is_empty() || links.iter().any(|&l| l >= nlinks) {
                    return Err(bad("a path of links not written before"));
                }
                ops.push(Op::Start { t, id, bytes, links });
            }
            "E" => ops.push(Op::End(num("a flow")?.parse().map_err(|_| bad("a flow id"))?, u64::MAX)),
            "K" | "B" => {
                let l: u32 = num("a link")?.parse().map_err(|_| bad("a link id"))?;
                if l >= nlinks {
                    return Err(bad("a link not written before"));
                }
                ops.push(Op::Slack(l, kind == "K"))
            }
            "R" => ops.push(Op::Solve(num("a time")?.parse().map_err(|_| bad("a time"))?)),
            _ => return Err(bad("an unknown line")),
        }
    }
    // each end at the time of the solve after it
    let mut next = None;
    for op in ops.iter_mut().rev() {
        match op {
            Op::Solve(t) => next = Some(*t),
            Op::End(id, t) => match next {
                Some(n) => *t = n,
                None => return Err(format!("{path}: flow {id} ends after the last solve")),
            },
            _ => {}
        }
    }
    Ok(ops)
}

#[derive(Default, Debug)]
struct Timing {
    total_s: f64,
    solve_s: f64,
    solves: u64,
    events: u64,
}

fn replay_flownet(ops: &[Op], keep: &mut Option<(Vec<u32>, FlowNet)>) -> Timing {
    let t0 = Instant::now();
    let mut net = FlowNet::new();
    net.sharing = Sharing::MaxMin;
    let mut map: Vec<u32> = Vec::new();
    let mut out: Vec<Reschedule> = Vec::new();
    let mut tm = Timing::default();
    for op in ops {
        match op {
            Op::Link(cap) => {
                net.add_link(cap * 1e9);
            }
            Op::Start { t, id, bytes, links } => {
                let f = net.start(*t, links, *bytes, 0);
                if map.len() <= *id as usize {
                    map.resize(*id as usize + 1, u32::MAX);
                }
                map[*id as usize] = f;
            }
            Op::End(id, _) => {
                net.finish(map[*id as usize]);
            }
            Op::Slack(..) => {}
            Op::Solve(t) => {
                let s = Instant::now();
                net.resolve(*t, &mut out);
                tm.solve_s += s.elapsed().as_secs_f64();
                tm.solves += 1;
                tm.events += out.len() as u64;
                out.clear();
            }
        }
    }
    tm.total_s = t0.elapsed().as_secs_f64();
    *keep = Some((map, net));
    tm
}

/// The grouped replay; with `check`, a per-flow net beside it, compared every `every` solves.
fn replay_grouped(ops: &[Op], rings: usize, every: u64, phases: bool) -> (Timing, GroupNet, u64) {
    let t0 = Instant::now();
    let mut net = GroupNet::new(rings);
    net.time_phases = phases;
    let mut twin = (every > 0).then(|| {
        let mut f = FlowNet::new();
        f.sharing = Sharing::MaxMin;
        f
    });
    let mut map: Vec<(u32, u32)> = Vec::new();
    let mut out: Vec<GroupEnd> = Vec::new();
    let mut rs: Vec<Reschedule> = Vec::new();
    let mut tm = Timing::default();
    let mut checked = 0u64;
    for op in ops {
        match op {
            Op::Link(cap) => {
                net.add_link(*cap);
                if let Some(f) = twin.as_mut() {
                    f.add_link(cap * 1e9);
                }
            }
            Op::Start { t, id, bytes, links } => {
                let g = net.start(*t as f64, links, *bytes);
                let fi = twin.as_mut().map_or(u32::MAX, |f| f.start(*t, links, *bytes, 0));
                if map.len() <= *id as usize {
                    map.resize(*id as usize + 1, (u32::MAX, u32::MAX));
                }
                map[*id as usize] = (g, fi);
            }
            Op::End(id, t) => {
                let (g, fi) = std::mem::replace(&mut map[*id as usize], (u32::MAX, u32::MAX));
                net.finish(g, *t as f64);
                if let Some(f) = twin.as_mut() {
                    f.finish(fi);
                }
            }
            Op::Slack(l, s) => net.set_slack(*l, *s),
            Op::Solve(t) => {
                let s = Instant::now();
                net.resolve(*t as f64, &mut out);
                tm.solve_s += s.elapsed().as_secs_f64();
                tm.solves += 1;
                tm.events += out.len() as u64;
                out.clear();
                if let Some(f) = twin.as_mut() {
                    f.resolve(*t, &mut rs);
                    rs.clear();
                    if tm.solves % every == 0 {
                        checked += 1;
                        for &(g, fi) in &map {
                            if g == u32::MAX {
                                continue;
                            }
                            let a = net.rate(g);
                            let b = f.rate_bytes_per_s(fi) * 1e-9;
                            assert!(
                                (a - b).abs() <= 1e-9 * b,
                                "solve {} at t={t} ns: grouped {a} against per-flow {b}",
                                tm.solves
                            );
                        }
                    }
                }
            }
        }
    }
    tm.total_s = t0.elapsed().as_secs_f64();
    (tm, net, checked)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut path = None;
    let (mut which, mut rings, mut reps, mut every) = ("both".to_string(), 2usize, 1usize, 0u64);
    let (mut json, mut phases) = (false, false);
    let mut i = 0;
    while i < args.len() {
        let val = |i: usize| args.get(i + 1).cloned().unwrap_or_default();
        match args[i].as_str() {
            "--net" => which = val(i),
            "--rings" => rings = val(i).parse().unwrap_or(2),
            "--reps" => reps = val(i).parse().unwrap_or(1),
            "--check-every" => every = val(i).parse().unwrap_or(0),
            "--json" | "--phases" => {
                json |= args[i] == "--json";
                phases |= args[i] == "--phases";
                i += 1;
                continue;
            }
            a if path.is_none() && !a.starts_with('-') => {
                path = Some(a.to_string());
                i += 1;
                continue;
            }
            a => {
                eprintln!("flow_replay: unknown argument {a:?}");
                std::process::exit(2);
            }
        }
        i += 2;
    }
    let Some(path) = path else {
        eprintln!("usage: flow_replay DUMP [--net both|flownet|grouped] [--rings N] [--reps N] [--check-every N] [--json] [--phases]");
        std::process::exit(2);
    };
    let ops = match read(&path) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("flow_replay: {e}");
            std::process::exit(2);
        }
    };
    if !json {
        println!("{path}: {} lines read", ops.len());
    }
    for rep in 0..reps {
        if which != "grouped" {
            let mut keep = None;
            let t = replay_flownet(&ops, &mut keep);
            if json {
                println!(
                    "{{\"net\": \"per-flow\", \"rep\": {rep}, \"total_s\": {}, \"solve_s\": {}, \"solves\": {}, \"events\": {}}}",
                    t.total_s, t.solve_s, t.solves, t.events
                );
                continue;
            }
            println!(
                "rep {rep} per-flow: {:.3} s in all, {:.3} s in {} solves ({:.2} us each), {} reschedules",
                t.total_s,
                t.solve_s,
                t.solves,
                1e6 * t.solve_s / t.solves.max(1) as f64,
                t.events
            );
        }
        if which != "flownet" {
            let (t, net, checked) = replay_grouped(&ops, rings, every, phases);
            let c = &net.counts;
            let s = c.solves.max(1) as f64;
            if json {
                println!(
                    "{{\"net\": \"grouped\", \"rep\": {rep}, \"rings\": {rings}, \"total_s\": {}, \"solve_s\": {}, \"solves\": {}, \"events\": {}, \
                     \"checked\": {checked}, \"phase_ns\": {:?}, \"counts\": {{\"solves\": {}, \"rounds\": {}, \"groups_in_u\": {}, \"flows_in_u\": {}, \
                     \"moves\": {}, \"rerated_groups\": {}, \"rerated_flows\": {}}}}}",
                    t.total_s, t.solve_s, t.solves, t.events, net.phase_ns, c.solves, c.rounds, c.groups_in_u, c.flows_in_u,
                    c.moves, c.rerated_groups, c.rerated_flows
                );
                continue;
            }
            println!(
                "rep {rep} grouped ({rings} rings): {:.3} s in all, {:.3} s in {} solves ({:.2} us each), {} group ends; \
                 per solve: {:.2} rounds, {:.1} groups / {:.1} flows in U, {:.1} re-rated groups / {:.1} flows, {:.1} moves; {checked} solves checked",
                t.total_s,
                t.solve_s,
                t.solves,
                1e6 * t.solve_s / t.solves.max(1) as f64,
                t.events,
                c.rounds as f64 / s,
                c.groups_in_u as f64 / s,
                c.flows_in_u as f64 / s,
                c.rerated_groups as f64 / s,
                c.rerated_flows as f64 / s,
                c.moves as f64 / s,
            );
            if phases {
                let p = net.phase_ns.map(|n| n as f64 * 1e-9);
                println!(
                    "rep {rep} grouped, parts: gathering U {:.3} s, fillings {:.3} s, checks {:.3} s, commits {:.3} s",
                    p[0], p[1], p[2], p[3]
                );
            }
        }
    }
}

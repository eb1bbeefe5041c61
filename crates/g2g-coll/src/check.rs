//! Verification of whole-communicator schedules: the matching contract and progress.

use std::collections::HashMap;

use crate::{schedule, Algo, CollArgs, CollError, Round};

/// Checks the matching contract over all ranks of one collective call, and that the schedules
/// cannot deadlock (see [`check_schedules`]).  `algo_of(r)` / `args_of(r)` give rank r's algorithm
/// and arguments.
pub fn check_consistency<'a>(
    algo_of: &dyn Fn(u32) -> Algo,
    args_of: &dyn Fn(u32) -> CollArgs<'a>,
    size: u32,
) -> Result<(), CollError> {
    let scheds = (0..size).map(|r| schedule(algo_of(r), &args_of(r))).collect::<Result<Vec<_>, _>>()?;
    check_schedules(&scheds).map(|_| ())
}

/// Checks the schedules of all ranks of one call (`schedules[r]` is rank r's):
/// * every peer is a rank of the communicator other than the rank itself;
/// * for every ordered pair (a, b) the sends a→b in a's schedule equal, in order and size, the
///   receives from a in b's schedule;
/// * the schedules make progress under rendezvous semantics (a message completes only when the
///   sender and the receiver are both in the rounds that post it; a rank leaves a round when all of
///   its messages have completed).
///
/// Returns the number of lock-step steps the call takes in that model (every message and every round
/// boundary costs one step; ranks move in lock step): the latency depth, e.g. ceil(log2 p) for a
/// binomial bcast, p - 1 for a ring allgather.
pub fn check_schedules(schedules: &[Vec<Round>]) -> Result<u32, CollError> {
    let size = schedules.len();
    // Per ordered pair: the (round index) of each send in the sender and each receive in the receiver.
    let mut sent: HashMap<(u32, u32), Vec<(usize, u64)>> = HashMap::new();
    let mut recvd: HashMap<(u32, u32), Vec<(usize, u64)>> = HashMap::new();
    for (r, rounds) in schedules.iter().enumerate() {
        let r = r as u32;
        for (i, round) in rounds.iter().enumerate() {
            for s in round.sends.iter().chain(&round.recvs) {
                if s.peer as usize >= size || s.peer == r {
                    return Err(CollError(format!(
                        "rank {r} round {i}: bad peer {} (communicator size {size})",
                        s.peer
                    )));
                }
            }
            for s in &round.sends {
                sent.entry((r, s.peer)).or_default().push((i, s.bytes));
            }
            for s in &round.recvs {
                recvd.entry((s.peer, r)).or_default().push((i, s.bytes));
            }
        }
    }
    let sizes = |v: Option<&Vec<(usize, u64)>>| v.map(|v| v.iter().map(|x| x.1).collect::<Vec<_>>());
    for (k, v) in &sent {
        if sizes(recvd.get(k)) != sizes(Some(v)) {
            return Err(CollError(format!(
                "pair {}->{}: sends {:?} but receives {:?}",
                k.0,
                k.1,
                sizes(Some(v)).unwrap_or_default(),
                sizes(recvd.get(k))
            )));
        }
    }
    for (k, v) in &recvd {
        if !sent.contains_key(k) {
            return Err(CollError(format!(
                "pair {}->{}: receives {:?} never sent",
                k.0,
                k.1,
                sizes(Some(v)).unwrap_or_default()
            )));
        }
    }

    // Progress: pending[r][i] = messages of rank r's round i not yet completed.  Each message is
    // identified by (sender, receiver, k) and knows the round it sits in on both sides.
    let mut pending: Vec<Vec<usize>> =
        schedules.iter().map(|rounds| rounds.iter().map(|x| x.sends.len() + x.recvs.len()).collect()).collect();
    // Messages indexed by the round of each side: (a, ra, b, rb).
    let mut msgs: Vec<(usize, usize, usize, usize)> = Vec::new();
    for (&(a, b), v) in &sent {
        let w = &recvd[&(a, b)];
        for (x, y) in v.iter().zip(w) {
            msgs.push((a as usize, x.0, b as usize, y.0));
        }
    }
    // Messages waiting on each (rank, round).
    let mut by_round: HashMap<(usize, usize), Vec<usize>> = HashMap::new();
    for (id, m) in msgs.iter().enumerate() {
        by_round.entry((m.0, m.1)).or_default().push(id);
    }
    let mut done = vec![false; msgs.len()];
    let mut cur = vec![0usize; size];
    let mut steps = 0u32;
    loop {
        if (0..size).all(|r| cur[r] >= schedules[r].len()) {
            return Ok(steps);
        }
        steps += 1;
        // Complete every message whose two sides are both posted now.
        for r in 0..size {
            if cur[r] >= schedules[r].len() {
                continue;
            }
            if let Some(ids) = by_round.get(&(r, cur[r])) {
                for &id in ids {
                    let (a, ra, b, rb) = msgs[id];
                    if !done[id] && cur[a] == ra && cur[b] == rb {
                        done[id] = true;
                        pending[a][ra] -= 1;
                        pending[b][rb] -= 1;
                    }
                }
            }
        }
        let mut moved = false;
        for r in 0..size {
            if cur[r] < schedules[r].len() && pending[r][cur[r]] == 0 {
                cur[r] += 1;
                moved = true;
            }
        }
        if !moved {
            let stuck: Vec<String> = (0..size)
                .filter(|&r| cur[r] < schedules[r].len())
                .take(8)
                .map(|r| format!("rank {r} in round {}", cur[r]))
                .collect();
            return Err(CollError(format!("deadlock: {}", stuck.join(", "))));
        }
    }
}

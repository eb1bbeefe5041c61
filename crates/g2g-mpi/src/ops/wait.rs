//! Requests and waits: Wait/Waitall/Waitany/Waitsome (Test completes at once), the blocking calls'
//! own waits, and what a request's completion does (a waiting rank goes on, a collective's round
//! advances).
use g2g_trace::{Op, OpKind};

use crate::event::{Next, ReqId};
use crate::model::requests::Owner;
use crate::options::SimError;
use crate::state::{Block, State};

impl State<'_> {
    /// Maps the operation's trace request id to its live request.
    pub(crate) fn map_req(&mut self, r: u32, op: &Op, req: ReqId) {
        if op.req != 0 {
            if let Some(old) = self.ranks[r as usize].reqmap.insert(op.req, req) {
                // a request id reused before being waited: the old one is simply forgotten
                if self.reqs[old].done {
                    self.reqs.free(old);
                }
            }
        }
    }

    pub(crate) fn exec_wait(&mut self, r: u32, op: &Op, phase: u8) -> Result<bool, SimError> {
        if phase > 0 {
            return Ok(true);
        }
        let single = [op.req];
        let ids: &[u64] = if op.reqs().is_empty() { &single } else { op.reqs() };
        let mut reqs = self.wait_lists.pop().unwrap_or_default();
        reqs.clear();
        for &id in ids {
            if id == 0 {
                continue; // MPI_REQUEST_NULL
            }
            match self.ranks[r as usize].reqmap.remove(&id) {
                Some(q) => reqs.push(q),
                None => {
                    return Err(self.terr(
                        r,
                        format!("{} on request {id} that was never posted (or was already completed)", op.kind.name()),
                    ));
                }
            }
        }
        let any = matches!(op.kind, OpKind::Waitany | OpKind::Waitsome);
        self.ranks[r as usize].phase = 1;
        self.wait_on(r, reqs, any);
        Ok(self.ranks[r as usize].block == Block::None)
    }

    /// Blocks rank r until all (or any) of `reqs` are done; retires them when satisfied.
    pub(crate) fn wait_on(&mut self, r: u32, reqs: Vec<ReqId>, any: bool) {
        if !any {
            // a wait for all: count the distinct requests not done yet, so that each completion
            // checks a counter instead of rescanning the list (a Waitall of n: n, not n^2, loads)
            let mut pending = 0;
            for &q in &reqs {
                let rq = &mut self.reqs[q];
                if !rq.done && !rq.waited {
                    rq.waited = true;
                    pending += 1;
                }
            }
            self.ranks[r as usize].wait_pending = pending;
        }
        self.ranks[r as usize].block = Block::Wait { reqs, any };
        self.check_wait(r);
    }

    /// If the rank's wait is satisfied, retires the requests and unblocks it (the caller or the
    /// driver continues it).  Returns true if it unblocked.
    fn check_wait(&mut self, r: u32) -> bool {
        let sat = match &self.ranks[r as usize].block {
            Block::Wait { reqs, any: true } => reqs.is_empty() || reqs.iter().any(|&q| self.reqs[q].done),
            Block::Wait { any: false, .. } => self.ranks[r as usize].wait_pending == 0,
            _ => return false,
        };
        if !sat {
            return false;
        }
        // satisfied: take the wait list out (no copy) and retire its requests
        let Block::Wait { reqs, any } = std::mem::replace(&mut self.ranks[r as usize].block, Block::None) else {
            return false;
        };
        let mut retired_one = false;
        for &q in &reqs {
            let rq = &self.reqs[q];
            if rq.done && !(any && retired_one) {
                if rq.post_copy > 0 {
                    let b = rq.post_copy;
                    self.ranks[r as usize].pending_copies.push(b);
                }
                self.reqs.free(q);
                retired_one = true;
            } else if any {
                // not retired: put it back under a synthetic id so a later wait can find it
                let key = u64::MAX - q as u64;
                self.ranks[r as usize].reqmap.insert(key, q);
            }
        }
        self.wait_lists.push(reqs); // its allocation serves the next wait
        true
    }

    /// Request `q` completes: a rank whose wait it satisfies goes on; a collective's round
    /// advances when its last message completes.
    pub(crate) fn complete_req(&mut self, q: ReqId) -> Next {
        let Some(done) = self.reqs.complete(q) else {
            return Next::Idle;
        };
        match done.owner {
            Owner::Rank(r) => {
                if done.waited {
                    self.ranks[r as usize].wait_pending -= 1;
                }
                if matches!(self.ranks[r as usize].block, Block::Wait { .. }) && self.check_wait(r) {
                    return Next::Step(r);
                }
                Next::Idle
            }
            Owner::Coll(c) => {
                let cr = &mut self.colls[c];
                cr.pending -= 1;
                if cr.pending == 0 {
                    return self.coll_round_done(c);
                }
                Next::Idle
            }
        }
    }
}

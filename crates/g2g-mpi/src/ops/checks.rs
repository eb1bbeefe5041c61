//! What the replay refuses or reports rather than compute a wrong number (issue 24): operation
//! values beyond the trace bounds, simulated time past the engine's range (an error naming rank and
//! event, never a wrapped or saturated time), collective calls that do not match across ranks (kind,
//! root, size), and at the end of the trace the messages sent but never received and the requests
//! never waited for (warnings in the report; errors in strict mode). A deadlock's summary groups the
//! blocked ranks by the call they are in.
use std::collections::BTreeMap;

use g2g_coll::CollKind;
use g2g_engine::MAX_TIME;
use g2g_trace::{Op, MAX_BYTES, MAX_DUR_NS};

use crate::model::checks::CollSig;
use crate::options::SimError;
use crate::report::list_ranks;
use crate::state::State;

/// Collectives whose every rank passes the same size (the others: per-rank or root-only sizes).
fn same_size(kind: CollKind) -> bool {
    matches!(
        kind,
        CollKind::Bcast
            | CollKind::Reduce
            | CollKind::Allreduce
            | CollKind::Allgather
            | CollKind::Alltoall
            | CollKind::ReduceScatterBlock
            | CollKind::Scan
            | CollKind::Exscan
    )
}

impl State<'_> {
    /// Rank `r`'s next operation is within the bounds a trace may state (a source other than the
    /// Parquet reader, which checks them too, may hand anything).
    pub(crate) fn check_op(&self, r: u32, op: &Op) -> Result<(), SimError> {
        for (name, v) in [("bytes", op.bytes), ("recv_bytes", op.recv_bytes())] {
            if v > MAX_BYTES {
                return Err(self.terr(r, format!("{} {name} {v} is over the largest allowed, 2^60 B", op.kind.name())));
            }
        }
        if op.dur_ns() > MAX_DUR_NS as u64 {
            return Err(self.terr(
                r,
                format!("{} dur_ns {} is over the longest allowed, 1e15 ns (1e6 s)", op.kind.name(), op.dur_ns()),
            ));
        }
        if let Some(l) = op.lists.as_deref() {
            for (name, v) in [("counts_bytes", &l.counts), ("recv_counts_bytes", &l.recv_counts)] {
                let sum = v.iter().try_fold(0u64, |a, &b| a.checked_add(b));
                if sum.map_or(true, |s| s > MAX_BYTES) {
                    return Err(self.terr(r, format!("{} {name} add up to more than 2^60 B", op.kind.name())));
                }
            }
        }
        Ok(())
    }

    /// The error of a simulated time past the engine's range, found while rank `r` ran.
    pub(crate) fn time_overflow(&self, r: u32, t: u64) -> SimError {
        let rk = &self.ranks[r as usize];
        let what = rk.cur.as_deref().map(|o| o.kind.name()).unwrap_or("its last operation");
        let at = if t > MAX_TIME { format!("{t} ns") } else { "a time before now (a wrapped sum)".into() };
        self.terr(
            r,
            format!(
                "simulated time overflow in {what}: an event would fall at {at}, past the simulator's range of 2^62 ns \
                 (146 years); a duration, size or machine factor is too large for this run"
            ),
        )
    }

    /// Rank `r` enters collective `inst` of communicator `comm`: its kind, root and size must match
    /// the other ranks' call of the same instance.
    pub(crate) fn check_coll(&mut self, r: u32, op: &Op, kind: CollKind, inst: u32, size: u32) -> Result<(), SimError> {
        let event = self.ranks[r as usize].ops_done;
        let root = if kind.is_rooted() { op.root() } else { -1 };
        let key = (op.comm, inst);
        let Some(first) = self.checks.colls.get_mut(&key) else {
            if size > 1 {
                self.checks.colls.insert(key, CollSig { kind, root, bytes: op.bytes, rank: r, event, joined: 1 });
            }
            return Ok(());
        };
        let what = |k: CollKind, root: i32, bytes: u64| {
            let mut s = k.name().to_string();
            if k.is_rooted() {
                s += &format!(" root {root}");
            }
            if same_size(k) {
                s += &format!(" of {bytes} B");
            }
            s
        };
        let mismatch = first.kind != kind
            || (kind.is_rooted() && first.root != root)
            || (same_size(kind) && first.bytes != op.bytes);
        if mismatch {
            let msg = format!(
                "collective mismatch on communicator {} (its collective call #{inst}): this rank calls {}, rank {} called {} (its event {}); \
                 every rank of a communicator must make the same collective calls in the same order",
                op.comm,
                what(kind, root, op.bytes),
                first.rank,
                what(first.kind, first.root, first.bytes),
                first.event
            );
            return Err(self.terr(r, msg));
        }
        first.joined += 1;
        if first.joined >= size {
            self.checks.colls.remove(&key);
        }
        Ok(())
    }

    /// Records the stated size of the receive request `req` being posted (0: none stated).
    #[inline]
    pub(crate) fn note_recv_cap(&mut self, req: crate::event::ReqId) {
        let cap = std::mem::take(&mut self.checks.pending_cap);
        let v = &mut self.checks.recv_cap;
        if v.len() <= req as usize {
            v.resize(req as usize + 1, 0);
        }
        v[req as usize] = cap;
    }

    /// A message matched a receive that states a smaller buffer: MPI truncation (a warning).
    #[inline]
    pub(crate) fn check_truncation(&mut self, m: crate::event::MsgId, req: crate::event::ReqId) {
        let cap = self.checks.recv_cap.get(req as usize).copied().unwrap_or(0);
        let msg = self.msgs.get(m);
        if cap > 0 && msg.bytes > cap {
            self.checks.truncations += 1;
            if self.checks.first_truncation.is_none() {
                self.checks.first_truncation = Some(format!(
                    "rank {}'s receive of {cap} B got a {} B message from rank {} (tag {})",
                    msg.dst, msg.bytes, msg.src, msg.tag
                ));
            }
        }
    }

    /// End of the trace: messages sent but never received, requests never completed by a wait.
    pub(crate) fn end_of_trace_warnings(&mut self) {
        if self.stats.ops_done == 0 {
            self.checks.warnings.push("the trace has no operations: every time in this report is 0".into());
        }
        if self.checks.truncations > 0 {
            let first = self.checks.first_truncation.clone().unwrap_or_default();
            self.checks.warnings.push(format!(
                "{} receive(s) got a message larger than their buffer (MPI would report truncation); first: {first}; \
                 the time counts the whole message",
                self.checks.truncations
            ));
        }
        let mut unreceived: BTreeMap<u32, (u64, u64, u32)> = BTreeMap::new();
        for (r, rk) in self.ranks.iter().enumerate() {
            for &m in &rk.matching.unexpected {
                let msg = self.msgs.get(m);
                let e = unreceived.entry(r as u32).or_insert((0, 0, msg.src));
                e.0 += 1;
                e.1 += msg.bytes;
            }
        }
        for (dst, (n, bytes, src)) in &unreceived {
            self.checks.warnings.push(format!(
                "rank {dst}: {n} message(s) ({bytes} B) sent to it were never received (first from rank {src}); \
                 the trace may be truncated or a receive is missing"
            ));
        }
        let open: Vec<u32> =
            self.ranks.iter().enumerate().filter(|(_, rk)| rk.open_requests() > 0).map(|(r, _)| r as u32).collect();
        if !open.is_empty() {
            let n: usize = open.iter().map(|&r| self.ranks[r as usize].open_requests()).sum();
            self.checks.warnings.push(format!(
                "{n} request(s) were never waited for (ranks {}); their completion is not in any rank's time",
                list_ranks(&open)
            ));
        }
    }
}

impl crate::state::Rank {
    /// Requests of this rank that no wait has completed (nonblocking operations never waited for).
    pub(crate) fn open_requests(&self) -> usize {
        self.reqmap.len()
    }
}

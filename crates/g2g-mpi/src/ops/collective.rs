//! Collective operations (blocking and nonblocking): the schedule g2g-coll selects, run as rounds
//! of point-to-point messages with reductions between them, HostCopy staging of the buffers, and
//! what each round's completion does.
use g2g_coll::{CollArgs, CollKind};
use g2g_trace::{MemSpace, Op, OpKind};

use crate::event::{CollId, Ev, Next};
use crate::model::collective::{CollPhase, CollRun, AFTER_COPY};
use crate::model::hostcopy;
use crate::model::requests::Owner;
use crate::model::transfer::XferOwner;
use crate::model::world::endpoint;
use crate::ops::p2p::SendSpec;
use crate::options::SimError;
use crate::state::{Block, State};

fn coll_kind(k: OpKind) -> Option<(CollKind, bool)> {
    match k {
        OpKind::Coll(i) => Some((CollKind::ALL[i as usize], false)),
        OpKind::ICol(i) => Some((CollKind::ALL[i as usize], true)),
        _ => None,
    }
}

impl State<'_> {
    pub(crate) fn exec_coll(&mut self, r: u32, op: &Op, phase: u8) -> Result<bool, SimError> {
        let (kind, nonblocking) = coll_kind(op.kind).unwrap();
        match CollPhase::of(phase) {
            CollPhase::Start => self.start_coll(r, op, kind, nonblocking),
            CollPhase::Running => Ok(false),
            CollPhase::Finished => {
                // finished; a staged receive buffer is copied back to the GPU
                let h2d = std::mem::take(&mut self.ranks[r as usize].coll_h2d);
                if h2d > 0 && !nonblocking {
                    self.ranks[r as usize].phase = CollPhase::CopyingBack as u8;
                    self.start_rank_copy(r, h2d, false);
                    return Ok(false);
                }
                Ok(true)
            }
            CollPhase::StagingCopy | CollPhase::CopyingBack | CollPhase::Started => Ok(true),
        }
    }

    fn start_coll(&mut self, r: u32, op: &Op, kind: CollKind, nonblocking: bool) -> Result<bool, SimError> {
        let comm = self.world.comm(op.comm).map_err(|e| self.terr(r, e))?;
        let size = comm.size;
        let world_ranks = comm.def.members.is_none();
        let me = match &comm.def.members {
            None => r,
            Some(m) => m
                .iter()
                .position(|&w| w == r)
                .ok_or_else(|| self.terr(r, format!("rank is not a member of communicator {}", op.comm)))?
                as u32,
        };
        if kind.is_rooted() && (op.root() < 0 || op.root() as u32 >= size) {
            return Err(self.terr(r, format!("root {} is outside communicator {} (size {size})", op.root(), op.comm)));
        }
        let root = if kind.is_rooted() { op.root().max(0) as u32 } else { 0 };
        let lists = op.lists.as_deref();
        let args = CollArgs {
            kind,
            size,
            rank: me,
            root,
            bytes: op.bytes,
            recv_bytes: op.recv_bytes(),
            counts: lists.and_then(|l| (!l.counts.is_empty()).then_some(l.counts.as_slice())),
            recv_counts: lists.and_then(|l| (!l.recv_counts.is_empty()).then_some(l.recv_counts.as_slice())),
        };
        // chosen from quantities every rank of the call agrees on, so all pick the same
        let algo = g2g_coll::select_for(&args, &self.colls.th, &self.colls.ov);
        let rounds = g2g_coll::schedule(algo, &args).map_err(|e| self.terr(r, format!("{}: {e}", kind.name())))?;
        if me == 0 {
            *self.colls.chosen.entry((kind.name(), algo.to_string())).or_insert(0) += 1;
        }
        let inst = {
            let c = self.ranks[r as usize].coll_seq.entry(op.comm).or_insert(0);
            let v = *c;
            *c += 1;
            v
        };
        self.check_coll(r, op, kind, inst, size)?;
        let ctx = (1u64 << 63) | ((op.comm as u64) << 32) | inst as u64;
        // synchronisation (Barrier, no bytes) never takes a GPU path
        let rk = &mut self.ranks[r as usize];
        let on_gpu = hostcopy::send_on_gpu(
            &self.policy,
            op.mem,
            op.bytes,
            hostcopy::carries_data(op),
            &mut rk.staged_sends,
            &mut self.bufstat,
            &mut self.traced_device,
        );
        let gpu_path = on_gpu && self.policy.gpu_aware(op.bytes.max(op.recv_bytes()), true);
        let req = if nonblocking { Some(self.reqs.new_req(Owner::Rank(r))) } else { None };
        let staged = gpu_path && self.m.cfg.device_collectives.staged(kind.name());
        // host buffers that stage (a recognised copy next to the call) or are page-locked take the
        // staged (`hostcopy`) factors, as point-to-point sends do
        let hostcopy = (on_gpu && !gpu_path)
            || (!on_gpu
                && (op.mem == MemSpace::Pinned
                    || hostcopy::rank_stages(self.ranks[r as usize].stages, &self.queues[r as usize])));
        let cr = CollRun {
            rank: r,
            comm: op.comm,
            world_ranks,
            ctx,
            rounds,
            idx: 0,
            pending: 0,
            gpu_path,
            staged,
            req,
            live: true,
            hostcopy,
            coll_kind: kind,
        };
        let c = self.colls.add(cr);
        // HostCopy staging: which buffers each rank copies out before and back after
        let staged = on_gpu && !gpu_path;
        let (d2h, h2d) = if staged { hostcopy::staging_bytes(kind, me == root, op) } else { (0, 0) };
        // a HostCopy trace stages the collective's receive buffer back afterwards
        let recv_side = hostcopy::staging_bytes(kind, me == root, op).1;
        hostcopy::note_recv(&self.policy, &mut self.ranks[r as usize].recent_recvs, op.mem, recv_side);
        self.ranks[r as usize].coll_h2d = if nonblocking { 0 } else { h2d };
        if let Some(q) = req {
            self.map_req(r, op, q);
            self.reqs[q].post_copy = h2d;
        }
        if d2h > 0 {
            // the rank copies its send buffer to the host, then runs the collective
            self.ranks[r as usize].phase = if nonblocking { CollPhase::StagingCopy } else { CollPhase::Running } as u8;
            self.ranks[r as usize].block = Block::Coll(c);
            // (unlike `start_rank_copy`, this copy does not mark the rank as one that stages)
            let plan = hostcopy::copy_plan(&self.m, endpoint(&self.m, r), d2h, true);
            self.ranks[r as usize].copy_start = self.q.now();
            self.colls[c].idx = AFTER_COPY; // start rounds after the copy
            self.xfers.start(&mut self.q, &mut self.m.net, plan, XferOwner::RankCopy(r), 0);
            return Ok(false);
        }
        if nonblocking {
            let next = self.coll_start(c);
            debug_assert_eq!(next, Next::Idle, "a nonblocking collective completes through its request");
            Ok(true)
        } else {
            self.ranks[r as usize].phase = CollPhase::Running as u8;
            self.ranks[r as usize].block = Block::Coll(c);
            // a one-rank communicator finishes at once: its completion phase runs now, here
            let _at_once = self.coll_start(c);
            if self.ranks[r as usize].block == Block::None && self.ranks[r as usize].phase == CollPhase::Finished as u8
            {
                return self.exec_coll(r, op, CollPhase::Finished as u8);
            }
            Ok(false)
        }
    }

    fn coll_start(&mut self, c: CollId) -> Next {
        self.colls[c].idx = 0;
        self.coll_round(c)
    }

    /// Posts the messages of the current round (or finishes the collective).
    pub(crate) fn coll_round(&mut self, c: CollId) -> Next {
        if self.colls[c].idx == AFTER_COPY {
            // the send buffer's staging copy is done
            let r = self.colls[c].rank;
            let nonblocking = self.colls[c].req.is_some();
            if nonblocking {
                self.ranks[r as usize].block = Block::None;
                self.ranks[r as usize].phase = CollPhase::Started as u8;
                let next = self.coll_start(c);
                debug_assert_eq!(next, Next::Idle, "a nonblocking collective completes through its request");
                if self.ranks[r as usize].block == Block::None {
                    return Next::Step(r);
                }
                return Next::Idle;
            }
            self.ranks[r as usize].phase = CollPhase::Running as u8;
            return self.coll_start(c);
        }
        loop {
            let cr = &self.colls[c];
            if cr.idx >= cr.rounds.len() {
                return self.coll_finish(c);
            }
            // the round's steps are read one by one where they lie (a clone of the round was two
            // allocations per round)
            let idx = cr.idx;
            let (nrecv, nsend) = (cr.rounds[idx].recvs.len(), cr.rounds[idx].sends.len());
            let (r, comm, ctx, gpu, staged) = (cr.rank, cr.comm, cr.ctx, cr.gpu_path, cr.hostcopy);
            let world_ranks = cr.world_ranks;
            let world = |st: &Self, peer: u32| {
                if world_ranks {
                    peer
                } else {
                    st.world.comms[&comm].def.world(peer).unwrap()
                }
            };
            let mut n = 0;
            for k in 0..nrecv {
                let s = self.colls[c].rounds[idx].recvs[k];
                let w = world(self, s.peer);
                self.post_recv(r, w as i32, ctx, 0, Owner::Coll(c));
                n += 1;
            }
            for k in 0..nsend {
                let s = self.colls[c].rounds[idx].sends[k];
                let w = world(self, s.peer);
                let route = self.route(r, w, gpu, gpu, s.bytes, true);
                let spec = SendSpec {
                    src: r,
                    dst: w,
                    ctx,
                    tag: 0,
                    bytes: s.bytes,
                    sync: false,
                    contiguous: true,
                    owner: Owner::Coll(c),
                    blocking: false,
                    staged_buffers: staged,
                };
                self.post_send(&spec, route);
                n += 1;
            }
            self.colls[c].pending += n;
            if n > 0 {
                return Next::Idle;
            }
            // an empty round: just its reduction
            let reduce_bytes = self.colls[c].rounds[idx].reduce_bytes;
            if reduce_bytes > 0 {
                let dt = self.colls[c].reduce_ns(&self.m.cfg, reduce_bytes);
                self.colls[c].idx += 1;
                self.q.push_in(dt, Ev::CollNext(c));
                return Next::Idle;
            }
            self.colls[c].idx += 1;
        }
    }

    /// The current round's messages are all complete: its reduction, then the next round.
    pub(crate) fn coll_round_done(&mut self, c: CollId) -> Next {
        let cr = &self.colls[c];
        let red = cr.rounds[cr.idx].reduce_bytes;
        self.colls[c].idx += 1;
        if red > 0 {
            let dt = self.colls[c].reduce_ns(&self.m.cfg, red);
            self.q.push_in(dt, Ev::CollNext(c));
            Next::Idle
        } else {
            self.coll_round(c)
        }
    }

    fn coll_finish(&mut self, c: CollId) -> Next {
        let (r, req) = (self.colls[c].rank, self.colls[c].req);
        if !self.colls.finish(c) {
            return Next::Idle;
        }
        match req {
            Some(q) => {
                self.q.push_in(0, Ev::ReqDone(q));
                Next::Idle
            }
            None => {
                let rk = &mut self.ranks[r as usize];
                if rk.block == Block::Coll(c) {
                    rk.block = Block::None;
                    rk.phase = CollPhase::Finished as u8;
                    return Next::Step(r);
                }
                Next::Idle
            }
        }
    }
}

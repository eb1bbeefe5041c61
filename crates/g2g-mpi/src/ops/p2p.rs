//! Point-to-point operations (Send/Isend and their modes, Recv/Irecv, Sendrecv), and the posting
//! of every message (collectives' too): data path, plan, `[[mpi.factors]]`, protocol, matching.
use g2g_net::paths::{self, HostPath, Pipelined};
use g2g_trace::{MemSpace, Op, OpKind, ANY_SOURCE, PROC_NULL};

use crate::event::{Ev, MsgId, Next, ReqId};
use crate::model::matching::Posted;
use crate::model::protocol::{self, Msg, OnMatch};
use crate::model::requests::{Owner, NO_REQ};
use crate::model::route::{self, Route};
use crate::model::transfer::XferOwner;
use crate::model::world::endpoint;
use crate::model::{factors, hostcopy};
use crate::options::SimError;
use crate::state::State;

/// The phases of a point-to-point operation (`Rank::phase`).
mod phase {
    /// not started
    pub const START: u8 = 0;
    /// the send buffer's staging copy (HostCopy) is done: the message is posted next
    pub const STAGED: u8 = 1;
    /// a blocking call waits for its requests
    pub const WAITING: u8 = 2;
}

/// A message to post.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SendSpec {
    /// world ranks
    pub src: u32,
    pub dst: u32,
    pub ctx: u64,
    pub tag: i32,
    pub bytes: u64,
    /// synchronous (Ssend, Issend): rendezvous whatever the size
    pub sync: bool,
    /// `false`: a GPU-aware MPI packs the strided device data with a kernel before it moves and
    /// unpacks it at the receiver (seeds 001, 003)
    pub contiguous: bool,
    /// a rank's own send (`Owner::Rank`), or one of a collective's messages (`Owner::Coll`)
    pub owner: Owner,
    /// a blocking point-to-point send (Send, Ssend, Bsend, Rsend, the send half of Sendrecv): its
    /// bin adds its `blocking_send_overhead`
    pub blocking: bool,
    /// the collective's host buffers are staging buffers (`hostcopy` factors)
    pub staged_buffers: bool,
}

impl State<'_> {
    /// The data path of a message between world ranks `src` and `dst`.
    #[inline]
    pub(crate) fn route(
        &self,
        src: u32,
        dst: u32,
        src_gpu: bool,
        dst_gpu: bool,
        bytes: u64,
        collective: bool,
    ) -> Route {
        route::choose(
            &self.m,
            &self.policy,
            endpoint(&self.m, src),
            endpoint(&self.m, dst),
            src_gpu,
            dst_gpu,
            bytes,
            collective,
        )
    }

    pub(crate) fn exec_send(&mut self, r: u32, op: &Op, phase: u8) -> Result<bool, SimError> {
        let blocking = matches!(op.kind, OpKind::Send | OpKind::Ssend | OpKind::Bsend | OpKind::Rsend);
        if op.peer == PROC_NULL {
            return Ok(true);
        }
        match phase {
            phase::START | phase::STAGED => {
                let Some((dst, route)) = self.send_route(r, op, phase)? else {
                    return Ok(false);
                };
                let sync = matches!(op.kind, OpKind::Ssend | OpKind::Issend);
                let spec = SendSpec {
                    src: r,
                    dst,
                    ctx: op.comm as u64,
                    tag: op.tag,
                    bytes: op.bytes,
                    sync,
                    contiguous: op.contiguous,
                    owner: Owner::Rank(r),
                    blocking,
                    // a page-locked send buffer: the staged rates (pinned messages are slower)
                    staged_buffers: op.mem == MemSpace::Pinned,
                };
                let req = self.post_send(&spec, route);
                if blocking {
                    self.ranks[r as usize].phase = phase::WAITING;
                    self.wait_on(r, vec![req], false);
                    Ok(false)
                } else {
                    self.map_req(r, op, req);
                    Ok(true)
                }
            }
            _ => Ok(true),
        }
    }

    /// The destination and data path of a point-to-point send (chosen once: for the staging
    /// decision and for the message).  HostCopy: a GPU send buffer that travels over the host path
    /// is first copied to the host by the rank (blocking); in `phase::START` this starts that copy, moves
    /// the op to `phase::STAGED` and returns `None`.
    fn send_route(&mut self, r: u32, op: &Op, phase: u8) -> Result<Option<(u32, Route)>, SimError> {
        let dst = self.world_of(r, op.comm, op.peer)?;
        // the buffer's class, decided once per call (phase 1 follows the staging copy of phase 0)
        let gpu = if phase == 0 {
            let rk = &mut self.ranks[r as usize];
            let g = hostcopy::send_on_gpu(
                &self.policy,
                op.mem,
                op.bytes,
                op.bytes > 0,
                &mut rk.staged_sends,
                &mut self.bufstat,
                &mut self.traced_device,
            );
            self.ranks[r as usize].send_gpu = g;
            g
        } else {
            self.ranks[r as usize].send_gpu
        };
        // the receiver's buffer space is not known at the sender: assume it matches ours
        let route = self.route(r, dst, gpu, gpu, op.bytes, false);
        if phase == phase::START && route.stage_src && op.bytes > 0 {
            self.ranks[r as usize].phase = phase::STAGED;
            self.start_rank_copy(r, op.bytes, true);
            return Ok(None);
        }
        Ok(Some((dst, route)))
    }

    pub(crate) fn exec_recv(&mut self, r: u32, op: &Op, phase: u8) -> Result<bool, SimError> {
        if op.peer == PROC_NULL {
            return Ok(true);
        }
        match phase {
            phase::START => {
                let src = if op.peer == ANY_SOURCE { -1 } else { self.world_of(r, op.comm, op.peer)? as i32 };
                let gpu = hostcopy::recv_on_gpu(
                    &self.policy,
                    op.mem,
                    op.recv_bytes().max(op.bytes),
                    &self.queues[r as usize],
                );
                self.checks.pending_cap = op.recv_bytes().max(op.bytes);
                let req = self.post_recv(r, src, op.comm as u64, op.tag, Owner::Rank(r));
                // a receive into a GPU buffer that arrives over the host path is staged H2D after
                let staged = gpu && self.recv_is_staged(r, src, op.recv_bytes().max(op.bytes));
                if staged {
                    self.reqs[req].post_copy = op.recv_bytes().max(op.bytes);
                }
                hostcopy::note_recv(
                    &self.policy,
                    &mut self.ranks[r as usize].recent_recvs,
                    op.mem,
                    op.recv_bytes().max(op.bytes),
                );
                if op.kind == OpKind::Recv {
                    self.ranks[r as usize].phase = phase::WAITING;
                    self.wait_on(r, vec![req], false);
                    Ok(false)
                } else {
                    self.map_req(r, op, req);
                    Ok(true)
                }
            }
            _ => Ok(true),
        }
    }

    fn recv_is_staged(&self, r: u32, src: i32, bytes: u64) -> bool {
        let s = if src < 0 { r } else { src as u32 };
        self.route(s, r, true, true, bytes, false).stage_dst
    }

    pub(crate) fn exec_sendrecv(&mut self, r: u32, op: &Op, phase: u8) -> Result<bool, SimError> {
        match phase {
            phase::START | phase::STAGED => {
                let send = if op.peer == PROC_NULL {
                    None
                } else {
                    match self.send_route(r, op, phase)? {
                        Some(s) => Some(s),
                        None => return Ok(false),
                    }
                };
                let gpu = hostcopy::recv_on_gpu(&self.policy, op.mem, op.recv_bytes(), &self.queues[r as usize]);
                let mut reqs = vec![];
                if op.recv_peer() != PROC_NULL {
                    let src = if op.recv_peer() == ANY_SOURCE {
                        -1
                    } else {
                        self.world_of(r, op.comm, op.recv_peer())? as i32
                    };
                    self.checks.pending_cap = op.recv_bytes();
                    let rq = self.post_recv(r, src, op.comm as u64, op.recv_tag(), Owner::Rank(r));
                    if gpu && self.recv_is_staged(r, src, op.recv_bytes()) {
                        self.reqs[rq].post_copy = op.recv_bytes();
                    }
                    hostcopy::note_recv(
                        &self.policy,
                        &mut self.ranks[r as usize].recent_recvs,
                        op.mem,
                        op.recv_bytes(),
                    );
                    reqs.push(rq);
                }
                if let Some((dst, route)) = send {
                    // Open MPI's MPI_Sendrecv is irecv + a blocking pml send (ompi/mpi/c/sendrecv.c)
                    let spec = SendSpec {
                        src: r,
                        dst,
                        ctx: op.comm as u64,
                        tag: op.tag,
                        bytes: op.bytes,
                        sync: false,
                        contiguous: op.contiguous,
                        owner: Owner::Rank(r),
                        blocking: true,
                        staged_buffers: op.mem == MemSpace::Pinned,
                    };
                    reqs.push(self.post_send(&spec, route));
                }
                self.ranks[r as usize].phase = phase::WAITING;
                self.wait_on(r, reqs, false);
                Ok(false)
            }
            _ => Ok(true),
        }
    }

    // ------------------------------------------------------------------ messages
    /// Posts a message on the path already chosen (`route`); returns its send request.
    pub(crate) fn post_send(&mut self, s: &SendSpec, route: Route) -> ReqId {
        let (src, dst, bytes) = (s.src, s.dst, s.bytes);
        let collective = matches!(s.owner, Owner::Coll(_));
        let req = self.reqs.new_req(s.owner);
        // a library that stages this collective's device messages through the host, in chunks
        let coll_staged = matches!(s.owner, Owner::Coll(c) if self.colls[c].staged);
        let route = if coll_staged { Route::direct(&paths::PIPELINED) } else { route };
        // the model that moves the message (a staged side has its data in host memory by then)
        let path = route.model.message_path();
        let (a, b) = (endpoint(&self.m, src), endpoint(&self.m, dst));
        // the plan is built in a pooled box (no allocation, no plan moved once the pool is warm)
        let mut plan = self.xfers.pooled_plan();
        if coll_staged {
            let c = &self.m.cfg;
            Pipelined::plan_chunked_into(&self.m, a, b, bytes, c.collective_chunk, c.collective_depth, &mut plan);
        } else {
            path.plan_into(&self.m, a, b, bytes, &mut plan);
        }
        let gpu_direct = path.name() != "host";
        // envelopes, RTS and CTS are small CPU-to-CPU control messages: host-path latency.  A
        // host-path message's own plan has it already (`HostPath::latency` is `links_latency`'s),
        // before the factors below change the plan; another asks the machine's route cache
        let ctl_latency =
            if !coll_staged && !gpu_direct { plan.stages[0].latency_ns } else { HostPath::latency(&self.m, a, b) };
        debug_assert_eq!(ctl_latency, HostPath::latency(&self.m, a, b));
        // size-dependent factors of the path (host messages of staged buffers: `hostcopy`)
        let staged_msg = route.staged()
            || (!gpu_direct
                && (s.staged_buffers
                    || (!collective
                        && hostcopy::rank_stages(self.ranks[src as usize].stages, &self.queues[src as usize]))));
        let fkey = factors::factor_key(path.name(), gpu_direct, staged_msg);
        let active = if self.load.by_load {
            self.load.mark(src, &self.m.place, &self.queues);
            self.load.mark(dst, &self.m.place, &self.queues);
            self.load.active(self.m.place.node_of[src as usize])
        } else {
            1
        };
        let coll_name = match s.owner {
            Owner::Coll(c) if self.m.cfg.factors_by_collective() => Some(self.colls[c].coll_kind.name()),
            _ => None,
        };
        let o = factors::apply(&self.m.cfg, &mut plan, fkey, bytes, active, coll_name, s.blocking && !collective);
        let pack_ns = if !s.contiguous && gpu_direct && bytes > 0 {
            self.m.cfg.pack_kernel_latency_ns as u64 + (bytes as f64 / self.m.cfg.gpu_pack_bw * 1e9).ceil() as u64
        } else {
            0
        };
        let eager = protocol::is_eager(&self.m.cfg, s.sync, bytes, gpu_direct);
        // by the route's model: `hostcopy` for a staged message
        self.stats.message(route.model.name(), bytes, collective);
        self.msgs.next_uid += 1;
        let uid = self.msgs.next_uid;
        let (msg_plan, data_plan) = if eager { (None, Some(plan)) } else { (Some(plan), None) };
        let msg = Msg {
            src,
            dst,
            ctx: s.ctx,
            tag: s.tag,
            bytes,
            eager,
            send_req: req,
            recv_req: NO_REQ,
            data_arrived: false,
            plan: msg_plan,
            ctl_latency,
            recv_o_ns: o.recv_ns as u64 + pack_ns,
        };
        let id = self.msgs.add(msg);
        // packing happens on the sender before anything moves
        let mut o_send = o.send_ns as u64 + pack_ns;
        let gap_ns = if gpu_direct { self.m.cfg.device_gap_ns } else { self.m.cfg.gap_ns };
        // `round() as u64`, without the library call for the usual gap of 0 (or below)
        let gap = if gap_ns > 0.0 { gap_ns.round() as u64 } else { 0 };
        if gap > 0 {
            // LogGP g (mpi.gap; mpi.device_gap for GPU-direct messages): a message leaves at least
            // `gap` after the rank's previous one
            let now = self.q.now();
            let last = &mut self.ranks[src as usize].last_inject;
            let depart = (now + o_send).max(if *last == 0 { 0 } else { *last + gap });
            *last = depart.max(1);
            o_send = depart - now;
        }
        if let Some(tl) = self.tl.as_mut() {
            let uids = &mut self.msgs.uid;
            if uids.len() <= id as usize {
                uids.resize(id as usize + 1, 0);
            }
            uids[id as usize] = uid;
            tl.msg_start(uid, src, self.q.now());
        }
        self.q.push_in(o_send + ctl_latency, Ev::Envelope(id));
        if let Some(plan) = data_plan {
            // eager: the data leaves after the send overhead; the envelope travels with it (header first)
            self.xfers.start_eager(&mut self.q, &mut self.m.net, plan, XferOwner::Msg(id), o_send, req);
        }
        req
    }

    /// Posts a receive from world rank `src` (or `ANY_SOURCE`); returns its request.
    pub(crate) fn post_recv(&mut self, r: u32, src: i32, ctx: u64, tag: i32, owner: Owner) -> ReqId {
        if self.load.by_load {
            self.load.mark(r, &self.m.place, &self.queues);
        }
        let req = self.reqs.new_req(owner);
        self.note_recv_cap(req);
        let msgs = &self.msgs;
        if let Some(m) = self.ranks[r as usize].matching.post(Posted { ctx, src, tag, req }, |m| msgs.get(m).envelope())
        {
            self.matched(m, req);
        }
        req
    }

    /// A message's envelope reaches its receiver.
    pub(crate) fn envelope(&mut self, m: MsgId) {
        let msg = self.msgs.get(m);
        let (dst, e) = (msg.dst, msg.envelope());
        if let Some(req) = self.ranks[dst as usize].matching.arrive(m, e) {
            self.matched(m, req);
        }
    }

    fn matched(&mut self, m: MsgId, recv_req: ReqId) {
        self.check_truncation(m, recv_req);
        let now = self.q.now();
        match self.msgs.matched(m, recv_req) {
            OnMatch::Nothing => {}
            OnMatch::RecvDone { req, after_ns } => self.q.push(now + after_ns, Ev::ReqDone(req)),
            // the transfer is set up now, its first chunk due after the CTS's latency (one event less)
            OnMatch::SendData { plan, after_ns } => {
                self.xfers.start_at(&mut self.q, &mut self.m.net, plan, XferOwner::Msg(m), after_ns, now + after_ns)
            }
        }
    }

    /// A message's data has arrived: its receive completes after the receiver's overhead; a
    /// rendezvous send completes now.
    pub(crate) fn data_arrived(&mut self, m: MsgId) -> Next {
        let a = self.msgs.data_arrived(m);
        if let Some((rq, after_ns)) = a.recv_done {
            self.q.push_in(after_ns, Ev::ReqDone(rq));
        }
        match a.send_done {
            Some(sq) => self.complete_req(sq),
            None => Next::Idle,
        }
    }
}

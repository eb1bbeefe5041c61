//! The point-to-point protocols: eager (the data leaves with the envelope after the send overhead;
//! the send completes then) and rendezvous (RTS with the envelope, CTS once matched, then the data;
//! the send completes when the data has arrived).  Messages live in a pool (`Messages`); the
//! protocol's steps return what follows for the caller to schedule.
use g2g_net::paths::Plan;
use g2g_net::MachineConfig;

use crate::event::{MsgId, ReqId};
use crate::model::matching::Envelope;
use crate::model::requests::NO_REQ;

/// Eager or rendezvous?  Synchronous sends and messages above `mpi.eager_limit` go rendezvous;
/// so do GPU-direct ones unless `mpi.gpudirect_eager`.
#[inline]
pub(crate) fn is_eager(cfg: &MachineConfig, sync: bool, bytes: u64, gpu_direct: bool) -> bool {
    !sync && bytes <= cfg.eager_limit && (!gpu_direct || cfg.gpudirect_eager)
}

/// One message, in one cache line (`repr(C)`, 64 bytes, aligned): its envelope, protocol state,
/// pending plan and the latencies its later events need.  (Its timeline id, when a timeline is
/// recorded, is kept apart in `Messages::uid`.)
#[derive(Clone, Debug)]
#[repr(C, align(64))]
pub(crate) struct Msg {
    pub src: u32,
    pub dst: u32,
    pub tag: i32,
    pub send_req: ReqId,
    /// the matched receive, `NO_REQ` until matched
    pub recv_req: ReqId,
    pub eager: bool,
    pub data_arrived: bool,
    pub ctx: u64,
    pub bytes: u64,
    /// a rendezvous message's plan, until the CTS lets the data go
    pub plan: Option<Box<Plan>>,
    /// latency of a control message (envelope, RTS, CTS) between the two ranks
    pub ctl_latency: u64,
    /// the receiver's time after the data has arrived: receive overhead (mpi.recv_overhead, or
    /// the message's `[[mpi.factors]]` bin) plus the unpack kernel of non-contiguous device data
    pub recv_o_ns: u64,
}

impl Msg {
    #[inline]
    pub fn envelope(&self) -> Envelope {
        Envelope { ctx: self.ctx, src: self.src as i32, tag: self.tag }
    }
}

/// What follows a match.
#[derive(Debug)]
pub(crate) enum OnMatch {
    /// an eager message not arrived yet: its arrival completes the receive
    Nothing,
    /// an eager message already arrived: the receive completes after `after_ns`
    RecvDone { req: ReqId, after_ns: u64 },
    /// rendezvous: the CTS reaches the sender after `after_ns`, and the data leaves then
    SendData { plan: Box<Plan>, after_ns: u64 },
}

/// What follows the arrival of a message's data.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct OnArrival {
    /// the receive completes after the receiver's overhead (None: not matched yet)
    pub recv_done: Option<(ReqId, u64)>,
    /// the send completes now (rendezvous)
    pub send_done: Option<ReqId>,
}

/// The messages in flight (ids are reused once freed) and their timeline ids.
#[derive(Default)]
pub(crate) struct Messages {
    msgs: Vec<Msg>,
    free: Vec<MsgId>,
    /// timeline ids of the messages (by `MsgId`), kept only when a timeline is recorded
    pub uid: Vec<u64>,
    /// the last timeline id handed out
    pub next_uid: u64,
}

impl Messages {
    pub fn add(&mut self, msg: Msg) -> MsgId {
        if let Some(id) = self.free.pop() {
            self.msgs[id as usize] = msg;
            id
        } else {
            self.msgs.push(msg);
            (self.msgs.len() - 1) as MsgId
        }
    }

    fn free(&mut self, m: MsgId) {
        self.free.push(m);
    }

    #[inline]
    pub fn get(&self, m: MsgId) -> &Msg {
        &self.msgs[m as usize]
    }

    /// Message `m` is matched by receive `recv_req`.
    pub fn matched(&mut self, m: MsgId, recv_req: ReqId) -> OnMatch {
        let msg = &mut self.msgs[m as usize];
        msg.recv_req = recv_req;
        if msg.eager {
            if msg.data_arrived {
                let after_ns = msg.recv_o_ns;
                self.free(m);
                return OnMatch::RecvDone { req: recv_req, after_ns };
            }
            OnMatch::Nothing
        } else {
            // the CTS reaches the sender after the control latency and the data leaves then
            let after_ns = msg.ctl_latency;
            let plan = msg.plan.take().expect("rendezvous plan");
            OnMatch::SendData { plan, after_ns }
        }
    }

    /// Message `m`'s data has arrived at its receiver.
    pub fn data_arrived(&mut self, m: MsgId) -> OnArrival {
        let msg = &mut self.msgs[m as usize];
        let o = msg.recv_o_ns;
        msg.data_arrived = true;
        if msg.eager {
            if msg.recv_req != NO_REQ {
                let rq = msg.recv_req;
                self.free(m);
                return OnArrival { recv_done: Some((rq, o)), send_done: None };
            }
            OnArrival { recv_done: None, send_done: None }
        } else {
            debug_assert!(msg.recv_req != NO_REQ, "rendezvous data before match");
            let (sq, rq) = (msg.send_req, msg.recv_req);
            self.free(m);
            OnArrival { recv_done: Some((rq, o)), send_done: Some(sq) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(eager: bool) -> Msg {
        Msg {
            src: 0,
            dst: 1,
            tag: 3,
            send_req: 7,
            recv_req: NO_REQ,
            eager,
            data_arrived: false,
            ctx: 0,
            bytes: 64,
            plan: (!eager).then(|| Box::new(Plan::empty())),
            ctl_latency: 500,
            recv_o_ns: 40,
        }
    }

    #[test]
    fn eager_receive_completes_at_the_later_of_match_and_arrival() {
        let mut ms = Messages::default();
        // matched first: the arrival completes the receive
        let a = ms.add(msg(true));
        assert!(matches!(ms.matched(a, 11), OnMatch::Nothing));
        assert_eq!(ms.data_arrived(a), OnArrival { recv_done: Some((11, 40)), send_done: None });
        // arrived first (unexpected): the match completes it
        let b = ms.add(msg(true));
        assert_eq!(b, a, "the freed message's slot is reused");
        assert_eq!(ms.data_arrived(b), OnArrival { recv_done: None, send_done: None });
        assert!(matches!(ms.matched(b, 12), OnMatch::RecvDone { req: 12, after_ns: 40 }));
    }

    #[test]
    fn rendezvous_sends_data_after_the_cts_and_completes_both_sides() {
        let mut ms = Messages::default();
        let m = ms.add(msg(false));
        match ms.matched(m, 21) {
            OnMatch::SendData { after_ns, .. } => assert_eq!(after_ns, 500),
            o => panic!("{o:?}"),
        }
        assert_eq!(ms.data_arrived(m), OnArrival { recv_done: Some((21, 40)), send_done: Some(7) });
    }

    #[test]
    fn eager_or_rendezvous() {
        let mut cfg =
            MachineConfig::from_toml(include_str!("../../../../python/g2gsim/presets/lassen.toml"), "lassen.toml")
                .unwrap();
        cfg.eager_limit = 1000;
        cfg.gpudirect_eager = false;
        assert!(is_eager(&cfg, false, 1000, false));
        assert!(!is_eager(&cfg, false, 1001, false), "above the eager limit");
        assert!(!is_eager(&cfg, true, 8, false), "synchronous sends wait for the receiver");
        assert!(!is_eager(&cfg, false, 8, true), "GPU-direct without gpudirect_eager");
        cfg.gpudirect_eager = true;
        assert!(is_eager(&cfg, false, 8, true));
    }
}

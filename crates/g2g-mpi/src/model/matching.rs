//! MPI matching at one receiver, in both directions: a receive posted now searches the messages
//! that arrived unmatched (the unexpected queue, in arrival order); an envelope arriving searches
//! the receives posted (in posting order).  A match needs the same context (communicator and, for
//! collectives, call instance) and source and tag, each of which a receive may leave open
//! (MPI_ANY_SOURCE, MPI_ANY_TAG).  Whatever matches is removed from its queue and returned: the
//! protocol (`model::protocol`) decides what follows.
use g2g_trace::{ANY_SOURCE, ANY_TAG};

use crate::event::{MsgId, ReqId};

/// A message's envelope as matching sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Envelope {
    pub ctx: u64,
    /// world rank of the sender
    pub src: i32,
    pub tag: i32,
}

/// A receive posted and not matched yet.
#[derive(Clone, Debug)]
pub(crate) struct Posted {
    pub ctx: u64,
    /// world rank, or `ANY_SOURCE`
    pub src: i32,
    /// or `ANY_TAG`
    pub tag: i32,
    pub req: ReqId,
}

impl Posted {
    #[inline]
    fn accepts(&self, e: &Envelope) -> bool {
        self.ctx == e.ctx && (self.src == ANY_SOURCE || self.src == e.src) && (self.tag == ANY_TAG || self.tag == e.tag)
    }
}

/// One rank's matching queues.
#[derive(Default)]
pub(crate) struct MatchQueues {
    /// receives posted, not matched yet, in posting order
    pub posted: Vec<Posted>,
    /// messages arrived, not matched yet, in arrival order
    pub unexpected: Vec<MsgId>,
}

impl MatchQueues {
    /// A receive is posted: the first unexpected message it accepts (`envelope` gives a
    /// message's) is taken out of the queue and returned; else the receive is queued.
    #[inline]
    pub fn post(&mut self, recv: Posted, envelope: impl Fn(MsgId) -> Envelope) -> Option<MsgId> {
        let pos = self.unexpected.iter().position(|&m| recv.accepts(&envelope(m)));
        match pos {
            Some(p) => Some(self.unexpected.remove(p)),
            None => {
                self.posted.push(recv);
                None
            }
        }
    }

    /// Message `m` arrives: the first posted receive that accepts it is taken out of the queue and
    /// its request returned; else the message waits in the unexpected queue.
    #[inline]
    pub fn arrive(&mut self, m: MsgId, e: Envelope) -> Option<ReqId> {
        match self.posted.iter().position(|p| p.accepts(&e)) {
            Some(p) => Some(self.posted.remove(p).req),
            None => {
                self.unexpected.push(m);
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recv(ctx: u64, src: i32, tag: i32, req: ReqId) -> Posted {
        Posted { ctx, src, tag, req }
    }
    fn env(ctx: u64, src: i32, tag: i32) -> Envelope {
        Envelope { ctx, src, tag }
    }

    #[test]
    fn arrivals_match_posted_receives_in_posting_order() {
        let mut q = MatchQueues::default();
        let none = |_| unreachable!("no unexpected message yet");
        assert_eq!(q.post(recv(0, 1, 5, 10), none), None);
        assert_eq!(q.post(recv(0, ANY_SOURCE, 5, 11), none), None);
        assert_eq!(q.post(recv(0, 1, ANY_TAG, 12), none), None);
        // from 1, tag 5: the first posted (exact) receive, then the ANY_SOURCE one, then ANY_TAG
        assert_eq!(q.arrive(100, env(0, 1, 5)), Some(10));
        assert_eq!(q.arrive(101, env(0, 1, 5)), Some(11));
        assert_eq!(q.arrive(102, env(0, 1, 5)), Some(12));
        assert!(q.posted.is_empty());
    }

    #[test]
    fn context_source_and_tag_must_agree() {
        let mut q = MatchQueues::default();
        let none = |_| unreachable!();
        assert_eq!(q.post(recv(0, 2, 7, 1), none), None);
        assert_eq!(q.arrive(50, env(1, 2, 7)), None, "another communicator");
        assert_eq!(q.arrive(51, env(0, 3, 7)), None, "another source");
        assert_eq!(q.arrive(52, env(0, 2, 8)), None, "another tag");
        assert_eq!(q.unexpected, vec![50, 51, 52]);
        assert_eq!(q.posted.len(), 1);
    }

    #[test]
    fn a_receive_takes_the_earliest_unexpected_message_it_accepts() {
        let mut q = MatchQueues::default();
        let envs = [env(0, 4, 1), env(0, 3, 2), env(0, 3, 1), env(0, 3, 1)];
        for (i, e) in envs.iter().enumerate() {
            assert_eq!(q.arrive(i as MsgId, *e), None);
        }
        let look = |m: MsgId| envs[m as usize];
        assert_eq!(q.post(recv(0, 3, 1, 9), look), Some(2));
        assert_eq!(q.post(recv(0, ANY_SOURCE, ANY_TAG, 9), look), Some(0));
        assert_eq!(q.post(recv(0, 3, ANY_TAG, 9), look), Some(1));
        assert_eq!(q.post(recv(0, 3, 2, 9), look), None, "no message left from 3 with tag 2");
        assert_eq!(q.unexpected, vec![3]);
        assert_eq!(q.posted.len(), 1);
    }
}

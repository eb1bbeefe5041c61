//! Streaming point-to-point matching check: the rules of `check_matching` in
//! `python/g2gsim/readers/rules.py` (the reference; a test compares the two), applied to rows as
//! the converter writes them, in (window, rank, seq) order.
//!
//! Per (communicator, source, destination, tag) the k-th send meets the k-th receive.  The sends
//! of one such key all come from one rank in program order, its receives from one rank, so a key
//! needs only a queue of the side that is ahead: a message is dropped as soon as its partner
//! arrives, and a key is dropped when both queues are empty.  Memory is the messages in flight
//! (sent but not yet received in the file's order, or the reverse), which a windowed file bounds
//! per rank whatever the trace's length.  Wildcard receives (ANY_SOURCE / ANY_TAG) take, after
//! the exact matching, the earliest compatible send left over: those receives, and the sends
//! left over, are kept to the end (a trace full of wildcards keeps them all).

use std::collections::hash_map::Entry;
use std::collections::{BinaryHeap, HashMap, VecDeque};

use g2g_trace::writer::Row;

use crate::fxhash::FxBuild;

const ANY_SOURCE: i64 = -1;
const ANY_TAG: i64 = -1;
const PROC_NULL: i64 = -2;
const INVALID: i64 = -100;
/// at most this many invalid-peer problems per side and truncated messages, as the reference
const MAX_INVALID: usize = 50;
const MAX_TRUNCATED: usize = 100;

/// Which side of the check a row takes part in.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Send,
    Recv,
    Sendrecv,
    Other,
}

fn kind(op: &str) -> Kind {
    match op {
        "Send" | "Ssend" | "Bsend" | "Rsend" | "Isend" | "Issend" => Kind::Send,
        "Recv" | "Irecv" => Kind::Recv,
        "Sendrecv" => Kind::Sendrecv,
        _ => Kind::Other,
    }
}

/// One side of a message: the row's rank and seq, the peer as written, bytes, start time.
#[derive(Clone, Copy, Debug)]
pub struct Msg {
    pub rank: u32,
    pub seq: u32,
    pub peer: i64,
    pub nbytes: i64,
    pub t: Option<i64>,
}

/// A message with its key (comm, source, destination, tag; world ranks).
#[derive(Clone, Copy, Debug)]
pub struct Keyed {
    pub comm: i64,
    pub src: i64,
    pub dst: i64,
    pub tag: i64,
    pub m: Msg,
}

#[derive(Default)]
struct Queues {
    sends: VecDeque<Msg>,
    recvs: VecDeque<Msg>,
}

/// A problem, in the order and with the fields of the reference's messages.
#[derive(Clone, Debug)]
pub enum Problem {
    /// (send side?, rank, seq, t, peer, comm)
    InvalidPeer {
        send: bool,
        rank: u32,
        seq: u32,
        t: Option<i64>,
        peer: i64,
        comm: i64,
    },
    Truncated {
        s: Keyed,
        r: Msg,
    },
    UnmatchedSend(Keyed),
    UnmatchedRecv(Keyed),
}

/// Truncations ordered as the reference reports them: by key, then by the send's seq.
#[derive(Clone, Debug)]
struct TruncKey {
    key: (i64, i64, i64, i64, u32),
    s: Keyed,
    r: Msg,
}
impl PartialEq for TruncKey {
    fn eq(&self, o: &Self) -> bool {
        self.key == o.key
    }
}
impl Eq for TruncKey {}
impl PartialOrd for TruncKey {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for TruncKey {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.key.cmp(&o.key)
    }
}

/// The streaming matcher.  Feed it every written row ([`Matcher::row`]), then [`Matcher::finish`].
pub struct Matcher {
    /// communicator id -> world ranks of its members (None: not a known communicator)
    members: HashMap<i64, Vec<u32>, FxBuild>,
    queues: HashMap<(i64, i64, i64, i64), Queues, FxBuild>,
    invalid_send: Vec<Problem>,
    invalid_recv_plain: Vec<Problem>,
    invalid_recv_sr: Vec<Problem>,
    /// the first MAX_TRUNCATED truncations in the reference's order (a max-heap of them)
    truncated: BinaryHeap<TruncKey>,
    truncated_n: u64,
    wild: Vec<Keyed>,
    /// a message time was missing (the reference then prints times as floats)
    pub any_null_time: bool,
    /// largest number of messages held at once (sends and receives waiting for their partner)
    pub peak_held: u64,
    held: u64,
}

impl Matcher {
    pub fn new(members: impl IntoIterator<Item = (i64, Vec<u32>)>) -> Matcher {
        Matcher {
            members: members.into_iter().collect(),
            queues: HashMap::default(),
            invalid_send: Vec::new(),
            invalid_recv_plain: Vec::new(),
            invalid_recv_sr: Vec::new(),
            truncated: BinaryHeap::new(),
            truncated_n: 0,
            wild: Vec::new(),
            any_null_time: false,
            peak_held: 0,
            held: 0,
        }
    }

    /// A communicator the conversion defined after the matcher was made (MPI_COMM_SELF).
    pub fn add_comm(&mut self, id: i64, members: Vec<u32>) {
        self.members.entry(id).or_insert(members);
    }

    #[inline]
    fn to_world(&self, comm: i64, peer: i64) -> i64 {
        if peer == ANY_SOURCE || peer == PROC_NULL {
            return peer;
        }
        match self.members.get(&comm) {
            Some(m) if peer >= 0 && (peer as usize) < m.len() => m[peer as usize] as i64,
            _ => INVALID,
        }
    }

    #[inline]
    pub fn row(&mut self, rank: u32, seq: u32, r: &Row) {
        let k = kind(r.op);
        if k == Kind::Other {
            return;
        }
        if r.t_start_ns.is_none() {
            self.any_null_time = true;
        }
        let comm = r.comm_id as i64;
        if k != Kind::Recv {
            let m = Msg { rank, seq, peer: r.peer as i64, nbytes: r.bytes as i64, t: r.t_start_ns };
            let dst = self.to_world(comm, m.peer);
            if dst == INVALID {
                if self.invalid_send.len() < MAX_INVALID {
                    self.invalid_send.push(Problem::InvalidPeer { send: true, rank, seq, t: m.t, peer: m.peer, comm });
                }
            } else if dst != PROC_NULL {
                self.send(Keyed { comm, src: rank as i64, dst, tag: r.tag as i64, m });
            }
        }
        if k != Kind::Send {
            let (peer, tag) = if k == Kind::Sendrecv {
                (r.recv_peer as i64, r.recv_tag as i64)
            } else {
                (r.peer as i64, r.tag as i64)
            };
            let m = Msg { rank, seq, peer, nbytes: r.recv_bytes as i64, t: r.t_start_ns };
            let src = self.to_world(comm, peer);
            if src == INVALID {
                let v = if k == Kind::Sendrecv { &mut self.invalid_recv_sr } else { &mut self.invalid_recv_plain };
                if v.len() < MAX_INVALID {
                    v.push(Problem::InvalidPeer { send: false, rank, seq, t: m.t, peer, comm });
                }
            } else if src != PROC_NULL {
                let kd = Keyed { comm, src, dst: rank as i64, tag, m };
                if src == ANY_SOURCE || tag == ANY_TAG {
                    self.wild.push(kd);
                } else {
                    self.recv(kd);
                }
            }
        }
    }

    fn truncation(&mut self, s: Keyed, r: Msg) {
        if s.m.nbytes <= r.nbytes {
            return;
        }
        self.truncated_n += 1;
        let t = TruncKey { key: (s.comm, s.src, s.dst, s.tag, s.m.seq), s, r };
        if self.truncated.len() < MAX_TRUNCATED {
            self.truncated.push(t);
        } else if let Some(top) = self.truncated.peek() {
            if t < *top {
                self.truncated.pop();
                self.truncated.push(t);
            }
        }
    }

    fn send(&mut self, s: Keyed) {
        match self.queues.entry((s.comm, s.src, s.dst, s.tag)) {
            Entry::Occupied(mut e) => {
                let q = e.get_mut();
                if let Some(r) = q.recvs.pop_front() {
                    if q.recvs.is_empty() && q.sends.is_empty() {
                        e.remove();
                    }
                    self.held -= 1;
                    self.truncation(s, r);
                } else {
                    q.sends.push_back(s.m);
                    self.hold();
                }
            }
            Entry::Vacant(e) => {
                e.insert(Queues::default()).sends.push_back(s.m);
                self.hold();
            }
        }
    }

    fn recv(&mut self, r: Keyed) {
        match self.queues.entry((r.comm, r.src, r.dst, r.tag)) {
            Entry::Occupied(mut e) => {
                let q = e.get_mut();
                if let Some(sm) = q.sends.pop_front() {
                    if q.recvs.is_empty() && q.sends.is_empty() {
                        e.remove();
                    }
                    self.held -= 1;
                    let s = Keyed { m: sm, ..r };
                    self.truncation(s, r.m);
                } else {
                    q.recvs.push_back(r.m);
                    self.hold();
                }
            }
            Entry::Vacant(e) => {
                e.insert(Queues::default()).recvs.push_back(r.m);
                self.hold();
            }
        }
    }

    #[inline]
    fn hold(&mut self) {
        self.held += 1;
        if self.held > self.peak_held {
            self.peak_held = self.held;
        }
    }

    /// Messages held now (sends and receives waiting for their partner, wildcard receives).
    pub fn held(&self) -> u64 {
        self.held + self.wild.len() as u64
    }

    /// All problems' count and the first `first` of them, in the reference's order: invalid
    /// peers (sends, then receives), truncated messages, unmatched sends, unmatched exact
    /// receives, unmatched wildcard receives.
    pub fn finish(mut self, first: usize) -> (u64, Vec<Problem>) {
        let mut out: Vec<Problem> = Vec::new();
        let mut total = 0u64;
        let take = |out: &mut Vec<Problem>, p: Problem| {
            if out.len() < first {
                out.push(p);
            }
        };
        let ninv_s = self.invalid_send.len();
        total += ninv_s as u64;
        for p in std::mem::take(&mut self.invalid_send) {
            take(&mut out, p);
        }
        let recv_inv: Vec<Problem> = std::mem::take(&mut self.invalid_recv_plain)
            .into_iter()
            .chain(std::mem::take(&mut self.invalid_recv_sr))
            .take(MAX_INVALID)
            .collect();
        total += recv_inv.len() as u64;
        for p in recv_inv {
            take(&mut out, p);
        }
        total += self.truncated_n.min(MAX_TRUNCATED as u64);
        for t in std::mem::take(&mut self.truncated).into_sorted_vec() {
            take(&mut out, Problem::Truncated { s: t.s, r: t.r });
        }
        // what the exact matching left
        let mut sends: Vec<Keyed> = Vec::new();
        let mut recvs: Vec<Keyed> = Vec::new();
        for ((comm, src, dst, tag), q) in std::mem::take(&mut self.queues) {
            sends.extend(q.sends.into_iter().map(|m| Keyed { comm, src, dst, tag, m }));
            recvs.extend(q.recvs.into_iter().map(|m| Keyed { comm, src, dst, tag, m }));
        }
        let key = |k: &Keyed| (k.comm, k.src, k.dst, k.tag, k.m.seq);
        sends.sort_unstable_by_key(key);
        recvs.sort_unstable_by_key(key);
        let mut wild_left: Vec<Keyed> = Vec::new();
        if !self.wild.is_empty() {
            // wildcard receives (by destination rank, then seq) take the earliest compatible send
            // left over (by time, rank, seq)
            let mut wild = std::mem::take(&mut self.wild);
            wild.sort_by_key(|k| (k.dst, k.m.seq));
            sends.sort_by(|a, b| cmp_time(a.m.t, b.m.t).then(a.m.rank.cmp(&b.m.rank)).then(a.m.seq.cmp(&b.m.seq)));
            // per (comm, destination): the sends in that order, and how many at the front are used
            let mut by_dest: HashMap<(i64, i64), (usize, Vec<usize>), FxBuild> = HashMap::default();
            for (i, s) in sends.iter().enumerate() {
                by_dest.entry((s.comm, s.dst)).or_default().1.push(i);
            }
            let mut used = vec![false; sends.len()];
            for w in wild {
                let mut hit = false;
                if let Some((start, list)) = by_dest.get_mut(&(w.comm, w.dst)) {
                    while *start < list.len() && used[list[*start]] {
                        *start += 1;
                    }
                    for &i in &list[*start..] {
                        let s = &sends[i];
                        if !used[i] && (w.src == ANY_SOURCE || w.src == s.src) && (w.tag == ANY_TAG || w.tag == s.tag) {
                            used[i] = true;
                            hit = true;
                            break;
                        }
                    }
                }
                if !hit {
                    wild_left.push(w);
                }
            }
            sends = sends.into_iter().zip(used).filter(|(_, u)| !u).map(|(s, _)| s).collect();
        }
        total += (sends.len() + recvs.len() + wild_left.len()) as u64;
        for s in sends {
            if out.len() >= first {
                break;
            }
            take(&mut out, Problem::UnmatchedSend(s));
        }
        for r in recvs.into_iter().chain(wild_left) {
            if out.len() >= first {
                break;
            }
            take(&mut out, Problem::UnmatchedRecv(r));
        }
        (total, out)
    }
}

/// numpy's order of float times where a missing one is NaN: NaN compares false both ways, which
/// Python's sort treats as equal; here a missing time sorts after every time.
fn cmp_time(a: Option<i64>, b: Option<i64>) -> std::cmp::Ordering {
    match (a, b) {
        (Some(x), Some(y)) => x.cmp(&y),
        (None, None) => std::cmp::Ordering::Equal,
        (None, _) => std::cmp::Ordering::Greater,
        (_, None) => std::cmp::Ordering::Less,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(op: &'static str, peer: i32, tag: i32, bytes: u64) -> Row {
        let mut r = Row::new(op);
        r.peer = peer;
        r.tag = tag;
        r.bytes = bytes;
        r.recv_bytes = bytes;
        r.t_start_ns = Some(0);
        r
    }

    #[test]
    fn steady_exchange_holds_messages_in_flight_only() {
        // two ranks exchange 1000 rounds with a new tag each round: the queue of every key is
        // dropped once matched, so what is held is one round, not the trace
        let mut m = Matcher::new([(0i64, vec![0u32, 1])]);
        let mut seq = [0u32; 2];
        for round in 0..1000 {
            for r in 0..2u32 {
                m.row(r, seq[r as usize], &row("Isend", 1 - r as i32, round, 8));
                m.row(r, seq[r as usize] + 1, &row("Irecv", 1 - r as i32, round, 8));
                seq[r as usize] += 2;
            }
            assert_eq!(m.held(), 0);
            assert!(m.queues.is_empty());
        }
        assert!(m.peak_held <= 2);
        let (n, first) = m.finish(10);
        assert_eq!((n, first.len()), (0, 0));
    }

    #[test]
    fn problems_in_reference_order() {
        let mut m = Matcher::new([(0i64, vec![0u32, 1])]);
        m.row(0, 0, &row("Send", 1, 5, 100)); // into a 10-byte receive
        m.row(0, 1, &row("Send", 1, 7, 8)); // never received
        m.row(0, 2, &row("Send", 3, 7, 8)); // peer 3 is not in the communicator
        m.row(1, 0, &row("Recv", 0, 5, 10));
        m.row(1, 1, &row("Recv", 0, 9, 8)); // nothing sent
        let (n, p) = m.finish(10);
        assert_eq!(n, 4);
        assert!(matches!(p[0], Problem::InvalidPeer { send: true, peer: 3, .. }));
        assert!(matches!(p[1], Problem::Truncated { .. }));
        assert!(matches!(p[2], Problem::UnmatchedSend(k) if k.tag == 7));
        assert!(matches!(p[3], Problem::UnmatchedRecv(k) if k.tag == 9));
    }
}

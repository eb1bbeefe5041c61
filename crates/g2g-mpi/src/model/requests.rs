//! Requests: who owns one (a rank, or a collective posting its messages), whether it is done, and
//! the pool they live in; a rank's trace request ids mapped to live requests (`ReqMap`).
use g2g_engine::FxHashMap as HashMap;

use crate::event::{CollId, ReqId};

/// The request no message has yet (a message's receive before it is matched).
pub(crate) const NO_REQ: ReqId = ReqId::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Owner {
    Rank(u32),
    Coll(CollId),
}

#[derive(Clone, Debug)]
/// 16 bytes (`repr(C)`): four requests to a cache line (a replay has a dozen per rank in flight).
#[repr(C)]
pub(crate) struct Req {
    /// H2D copy the rank performs after waiting on this receive (HostCopy staging)
    pub post_copy: u64,
    /// the owner, packed (`Req::owner`): a rank, or a collective with `COLL_OWNER` set
    owner: u32,
    pub done: bool,
    pub live: bool,
    /// counted in its rank's `wait_pending` (a Wait/Waitall on it is under way)
    pub waited: bool,
}
const _: () = assert!(std::mem::size_of::<Req>() == 16);

/// The bit of `Req::owner` that marks a collective (ranks and collective ids stay below it).
const COLL_OWNER: u32 = 1 << 31;

impl Req {
    fn new(owner: Owner) -> Req {
        let owner = match owner {
            Owner::Rank(r) => {
                debug_assert!(r < COLL_OWNER);
                r
            }
            Owner::Coll(c) => {
                assert!(c < COLL_OWNER, "more than 2^31 collectives in flight");
                c | COLL_OWNER
            }
        };
        Req { post_copy: 0, owner, done: false, live: true, waited: false }
    }
    #[inline]
    pub fn owner(&self) -> Owner {
        if self.owner & COLL_OWNER != 0 {
            Owner::Coll(self.owner & !COLL_OWNER)
        } else {
            Owner::Rank(self.owner)
        }
    }
}

/// A request that has just completed: its owner, and whether a wait for all counted it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Completed {
    pub owner: Owner,
    pub waited: bool,
}

/// The live requests (ids are reused once freed).
#[derive(Default)]
pub(crate) struct Requests {
    reqs: Vec<Req>,
    free: Vec<ReqId>,
}

impl Requests {
    pub fn new_req(&mut self, owner: Owner) -> ReqId {
        let rq = Req::new(owner);
        if let Some(id) = self.free.pop() {
            self.reqs[id as usize] = rq;
            id
        } else {
            self.reqs.push(rq);
            (self.reqs.len() - 1) as ReqId
        }
    }

    pub fn free(&mut self, id: ReqId) {
        self.reqs[id as usize].live = false;
        self.free.push(id);
    }

    /// Marks `q` done; None if it already was.  A collective's request is freed at once (its
    /// collective only counts it); a rank's stays until its wait retires it.
    pub fn complete(&mut self, q: ReqId) -> Option<Completed> {
        let rq = &mut self.reqs[q as usize];
        if rq.done {
            return None;
        }
        rq.done = true;
        let waited = std::mem::replace(&mut rq.waited, false);
        let owner = rq.owner();
        if let Owner::Coll(_) = owner {
            self.free(q);
        }
        Some(Completed { owner, waited })
    }
}

impl std::ops::Index<ReqId> for Requests {
    type Output = Req;
    #[inline]
    fn index(&self, q: ReqId) -> &Req {
        &self.reqs[q as usize]
    }
}
impl std::ops::IndexMut<ReqId> for Requests {
    #[inline]
    fn index_mut(&mut self, q: ReqId) -> &mut Req {
        &mut self.reqs[q as usize]
    }
}

/// A rank's trace request ids -> live requests.  A rank has few requests outstanding at once
/// (a halo's dozen): a short list scanned in place beats hashing; past `SMALL` it moves to a map.
#[derive(Default)]
pub(crate) struct ReqMap {
    small: Vec<(u64, ReqId)>,
    big: HashMap<u64, ReqId>,
}
impl ReqMap {
    const SMALL: usize = 32;
    pub fn insert(&mut self, k: u64, v: ReqId) -> Option<ReqId> {
        if !self.big.is_empty() {
            return self.big.insert(k, v);
        }
        if let Some(e) = self.small.iter_mut().find(|e| e.0 == k) {
            return Some(std::mem::replace(&mut e.1, v));
        }
        if self.small.len() < Self::SMALL {
            self.small.push((k, v));
        } else {
            self.big.extend(self.small.drain(..));
            self.big.insert(k, v);
        }
        None
    }
    /// Requests in the map (started, not yet completed by a wait).
    pub fn len(&self) -> usize {
        self.small.len() + self.big.len()
    }
    pub fn remove(&mut self, k: &u64) -> Option<ReqId> {
        if !self.big.is_empty() {
            let v = self.big.remove(k);
            if self.big.is_empty() {
                self.big = HashMap::default(); // back to the list (frees the table)
            }
            return v;
        }
        let p = self.small.iter().position(|e| e.0 == *k)?;
        Some(self.small.swap_remove(p).1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_pack_and_requests_complete_once() {
        let mut rq = Requests::default();
        let a = rq.new_req(Owner::Rank(7));
        let b = rq.new_req(Owner::Coll(5));
        assert_eq!(rq[a].owner(), Owner::Rank(7));
        assert_eq!(rq[b].owner(), Owner::Coll(5));
        rq[a].waited = true;
        assert_eq!(rq.complete(a), Some(Completed { owner: Owner::Rank(7), waited: true }));
        assert!(!rq[a].waited && rq[a].live);
        assert_eq!(rq.complete(a), None, "a request completes once");
        // a collective's request is freed at completion; its id is the next one handed out
        assert_eq!(rq.complete(b), Some(Completed { owner: Owner::Coll(5), waited: false }));
        assert!(!rq[b].live);
        assert_eq!(rq.new_req(Owner::Rank(1)), b);
    }

    #[test]
    fn reqmap_moves_to_a_table_and_back() {
        let mut m = ReqMap::default();
        for k in 1..=40u64 {
            assert_eq!(m.insert(k, k as ReqId * 10), None);
        }
        assert!(!m.big.is_empty(), "past SMALL entries the map is a table");
        assert_eq!(m.insert(3, 99), Some(30));
        for k in 1..=40u64 {
            assert_eq!(m.remove(&k), Some(if k == 3 { 99 } else { k as ReqId * 10 }));
        }
        assert!(m.big.capacity() == 0 && m.small.is_empty());
        assert_eq!(m.remove(&1), None);
        m.insert(5, 1);
        assert_eq!(m.insert(5, 2), Some(1));
        assert_eq!(m.remove(&5), Some(2));
    }
}

//! The flow network's free flow ids, kept by *key* so that a new flow reuses an id that a flow of
//! the same key freed (`lmm::FlowNet` keys a flow by its first link: the sending GPU's or rank's
//! own link).
//!
//! Why: a flow's id indexes the solver's per-flow tables (its record, rate, witness, marks).  One
//! free list for all (last freed, first reused) scatters the flows of one rank over the tables
//! as the replay goes on, so a solve, which touches the flows of a few neighbouring ranks, reads
//! one cache line per flow and table.  Kept by key, the flows of a rank stay where its first
//! flows were put (next to its neighbours', in the order ranks first sent), and a line holds
//! several of them.  Measured on the GPU halo (`lassen`, exact max-min, interleaved with the
//! single list): engine time -3 % at 16,384 ranks and -7 % at 65,536, where the tables are far
//! larger than the caches; +2 % on a 256-rank Allreduce of a few flows at a time, which pays
//! the bookkeeping and gains nothing (docs/scaling.md, twelfth step).
//!
//! A key with no free id of its own gets a fresh id (the flows of a rank that sends more at once
//! than before stay together too), unless more ids are free than flows are live: then it takes
//! one of another key's (the key that freed ids most recently of those that have some).  So the
//! network never holds more than twice (plus one) the largest number of flows it had at once.
//! Which id comes depends only on the order of starts and finishes: deterministic.
/// A flow id (as `lmm::FlowId`; this module is below `lmm`, which uses it)
type FlowId = u32;

const NONE: FlowId = FlowId::MAX;

#[derive(Clone, Debug, Default)]
pub(crate) struct FreeIds {
    /// per key: the first id of its list (`NONE`: none)
    head: Vec<FlowId>,
    /// keys that have free ids (each at most once: `listed`); may name keys emptied since
    with_free: Vec<u32>,
    /// per key: on `with_free`
    listed: Vec<bool>,
    count: usize,
}

impl FreeIds {
    /// How many ids are free.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.count
    }

    /// Frees `id`, of a flow of `key`; returns the id that follows it on the key's list, which
    /// the caller keeps with `id` (in the flow's record, which freeing touches anyway) and gives
    /// back through `pop`'s `next`.
    #[inline]
    #[must_use]
    pub(crate) fn push(&mut self, key: u32, id: FlowId) -> FlowId {
        let k = key as usize;
        if self.head.len() <= k {
            self.head.resize(k + 1, NONE);
            self.listed.resize(k + 1, false);
        }
        let next = self.head[k];
        self.head[k] = id;
        if !self.listed[k] {
            self.listed[k] = true;
            self.with_free.push(key);
        }
        self.count += 1;
        next
    }

    /// An id for a flow of `key` while `live` flows are live: the one a flow of `key` freed last;
    /// else, if more ids are free than `live`, one of the key that freed ids most recently among
    /// those that have some; else `None` (take a fresh id).  `next(id)`: what `push` returned
    /// when it freed `id`.
    #[inline]
    pub(crate) fn pop(&mut self, key: u32, live: usize, next: impl Fn(FlowId) -> FlowId) -> Option<FlowId> {
        if self.count == 0 {
            return None;
        }
        if let Some(id) = self.take(key as usize, &next) {
            return Some(id);
        }
        if self.count <= live {
            return None;
        }
        while let Some(k) = self.with_free.pop() {
            self.listed[k as usize] = false;
            if let Some(id) = self.take(k as usize, &next) {
                if self.head[k as usize] != NONE {
                    self.listed[k as usize] = true;
                    self.with_free.push(k);
                }
                return Some(id);
            }
        }
        unreachable!("{} free ids on no list", self.count)
    }

    #[inline]
    fn take(&mut self, k: usize, next: &impl Fn(FlowId) -> FlowId) -> Option<FlowId> {
        let id = *self.head.get(k)?;
        if id == NONE {
            return None;
        }
        self.head[k] = next(id);
        self.count -= 1;
        Some(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `FreeIds` with the ids' links kept beside it (as `FlowNet` keeps them in the flows' records)
    #[derive(Default)]
    struct Ids {
        f: FreeIds,
        next: std::collections::HashMap<FlowId, FlowId>,
    }
    impl Ids {
        fn push(&mut self, key: u32, id: FlowId) {
            let n = self.f.push(key, id);
            self.next.insert(id, n);
        }
        fn pop(&mut self, key: u32, live: usize) -> Option<FlowId> {
            let next = &self.next;
            self.f.pop(key, live, |id| next[&id])
        }
        fn len(&self) -> usize {
            self.f.len()
        }
    }

    #[test]
    fn a_key_reuses_its_own_ids_last_freed_first() {
        let mut f = Ids::default();
        assert_eq!(f.pop(0, 0), None);
        f.push(3, 10);
        f.push(7, 11);
        f.push(3, 12);
        assert_eq!(f.len(), 3);
        assert_eq!(f.pop(3, 0), Some(12));
        assert_eq!(f.pop(3, 1), Some(10));
        assert_eq!(f.pop(7, 2), Some(11));
        assert_eq!(f.len(), 0);
        assert_eq!(f.pop(7, 3), None);
    }

    #[test]
    fn a_key_without_ids_takes_another_keys_only_when_more_are_free_than_live() {
        let mut f = Ids::default();
        f.push(1, 4);
        f.push(2, 5);
        f.push(2, 6);
        // key 9 has none: with 3 live flows and 3 free ids, a fresh id
        assert_eq!(f.pop(9, 3), None);
        // with 2 live, another key's: the key listed last with some (2), its last freed id first
        assert_eq!(f.pop(9, 2), Some(6));
        assert_eq!(f.pop(9, 1), Some(5));
        assert_eq!(f.pop(9, 0), Some(4));
        assert_eq!(f.pop(9, 0), None);
        // lists emptied and filled again are found again, once each
        f.push(2, 5);
        f.push(1, 4);
        f.push(2, 6);
        let mut got = vec![f.pop(0, 0).unwrap(), f.pop(0, 0).unwrap(), f.pop(0, 0).unwrap()];
        got.sort_unstable();
        assert_eq!(got, vec![4, 5, 6]);
        assert_eq!(f.pop(0, 0), None);
        assert!(f.f.with_free.len() <= 2);
    }

    #[test]
    fn random_starts_and_finishes_give_each_id_once_and_at_most_twice_the_peak() {
        // a simple LCG: deterministic
        let mut s = 12345u64;
        let mut rnd = |n: u64| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (s >> 33) % n
        };
        let mut f = Ids::default();
        let mut live: Vec<(u32, FlowId)> = vec![];
        let (mut next_id, mut peak) = (0u32, 0usize);
        let mut free: std::collections::BTreeSet<FlowId> = Default::default();
        for step in 0..40_000 {
            // phases of growth and of shrinking, so that keys run out of their own ids
            let grow = (step / 2_000) % 2 == 0;
            if live.is_empty() || rnd(4) < if grow { 3 } else { 1 } {
                let key = rnd(50) as u32;
                let id = match f.pop(key, live.len()) {
                    Some(id) => id,
                    None => {
                        // a fresh id only when the key has none and no more are free than live
                        assert!(free.len() <= live.len());
                        next_id += 1;
                        next_id - 1
                    }
                };
                assert!(free.remove(&id) || id == next_id - 1, "id {id} was not free");
                assert!(!live.iter().any(|&(_, i)| i == id), "id {id} given twice");
                live.push((key, id));
                peak = peak.max(live.len());
            } else {
                let (key, id) = live.swap_remove(rnd(live.len() as u64) as usize);
                f.push(key, id);
                free.insert(id);
            }
            assert_eq!(f.len(), free.len());
            assert!(next_id as usize <= 2 * peak + 1);
        }
        assert!(f.f.with_free.len() <= 50);
    }
}

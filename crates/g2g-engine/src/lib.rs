//! Deterministic discrete-event core.
//!
//! Time is an integer number of nanoseconds ([`Time`]).  Events are ordered by `(time, seq)` where
//! `seq` is the order in which they were scheduled, so simultaneous events run in a fixed order and
//! the same inputs give the same run, byte for byte (the ns-3 rule).
//!
//! Events whose time changes (a network flow that speeds up or slows down when another flow starts or
//! ends) are not removed from the heap: the payload carries a version number and the model ignores an
//! event whose version is stale (lazy invalidation), which keeps the queue a plain binary heap.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// Simulated time in nanoseconds.
pub type Time = u64;

struct Entry<E> {
    t: Time,
    seq: u64,
    ev: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, o: &Self) -> bool {
        self.t == o.t && self.seq == o.seq
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<E> Ord for Entry<E> {
    fn cmp(&self, o: &Self) -> Ordering {
        // BinaryHeap is a max-heap: reverse so the earliest (time, seq) pops first.
        (o.t, o.seq).cmp(&(self.t, self.seq))
    }
}

/// A priority queue of events ordered by (time, insertion sequence).
pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
    seq: u64,
    now: Time,
    popped: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue { heap: BinaryHeap::new(), seq: 0, now: 0, popped: 0 }
    }

    /// Schedules `ev` at absolute time `t`.  Scheduling in the past is a model bug: it is clamped to
    /// `now` in release builds and asserted in debug builds.
    #[inline]
    pub fn push(&mut self, t: Time, ev: E) {
        debug_assert!(t >= self.now, "event scheduled in the past: {t} < {}", self.now);
        let t = t.max(self.now);
        self.heap.push(Entry { t, seq: self.seq, ev });
        self.seq += 1;
    }

    /// Schedules `ev` `dt` ns from now.
    #[inline]
    pub fn push_in(&mut self, dt: Time, ev: E) {
        let t = self.now.saturating_add(dt);
        self.push(t, ev);
    }

    /// Removes the next event and advances `now` to its time.
    #[inline]
    pub fn pop(&mut self) -> Option<(Time, E)> {
        let e = self.heap.pop()?;
        self.now = e.t;
        self.popped += 1;
        Some((e.t, e.ev))
    }

    #[inline]
    pub fn now(&self) -> Time {
        self.now
    }
    pub fn len(&self) -> usize {
        self.heap.len()
    }
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
    /// Events popped so far.
    pub fn processed(&self) -> u64 {
        self.popped
    }
    pub fn peek_time(&self) -> Option<Time> {
        self.heap.peek().map(|e| e.t)
    }
}

/// Converts seconds (f64) to ns, rounding to nearest.
pub fn secs_to_ns(s: f64) -> Time {
    (s * 1e9).round().max(0.0) as Time
}

/// Converts ns to seconds.
pub fn ns_to_secs(t: Time) -> f64 {
    t as f64 * 1e-9
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_by_time_then_insertion() {
        let mut q = EventQueue::new();
        q.push(10, "b");
        q.push(5, "a");
        q.push(10, "c");
        q.push(7, "x");
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(order, vec![(5, "a"), (7, "x"), (10, "b"), (10, "c")]);
        assert_eq!(q.now(), 10);
        assert_eq!(q.processed(), 4);
    }

    #[test]
    fn simultaneous_events_keep_schedule_order_across_pushes_during_run() {
        let mut q = EventQueue::new();
        for i in 0..100u32 {
            q.push(1, i);
        }
        let mut seen = vec![];
        while let Some((_, v)) = q.pop() {
            if v == 50 {
                q.push_in(0, 1000); // scheduled at the same time, after all earlier ones
            }
            seen.push(v);
        }
        let mut expect: Vec<u32> = (0..100).collect();
        expect.push(1000);
        assert_eq!(seen, expect);
    }

    #[test]
    fn matches_a_sorted_order_under_random_interleaving() {
        // pseudo-random pushes at or after `now`, interleaved with pops: the pop order must be
        // the (time, insertion) order a stable sort gives
        let mut q = EventQueue::new();
        let mut x: u64 = 0x9e3779b97f4a7c15;
        let mut rnd = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut pending: Vec<(u64, u64, u32)> = vec![]; // (time, seq, id)
        let mut seq = 0u64;
        let mut out = vec![];
        let mut expect = vec![];
        for id in 0..20_000u32 {
            let t = q.now() + rnd() % 1000;
            q.push(t, id);
            pending.push((t, seq, id));
            seq += 1;
            if rnd() % 3 == 0 {
                let (tp, v) = q.pop().unwrap();
                out.push((tp, v));
                pending.sort();
                let (te, _, ve) = pending.remove(0);
                expect.push((te, ve));
            }
        }
        while let Some(p) = q.pop() {
            out.push(p);
        }
        pending.sort();
        expect.extend(pending.into_iter().map(|(t, _, v)| (t, v)));
        assert_eq!(out, expect);
        assert!(q.is_empty());
    }

    #[test]
    fn peek_time_sees_the_next_event() {
        let mut q = EventQueue::new();
        assert_eq!(q.peek_time(), None);
        q.push(40, 1);
        q.push(7, 2);
        assert_eq!(q.peek_time(), Some(7));
        q.pop();
        assert_eq!(q.peek_time(), Some(40));
    }

    #[test]
    fn unit_conversions() {
        assert_eq!(secs_to_ns(1.5e-6), 1500);
        assert!((ns_to_secs(2_500) - 2.5e-6).abs() < 1e-15);
    }
}

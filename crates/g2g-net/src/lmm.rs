//! Max-min fair sharing of links among flows (the "linear max-min" solver, after SimGrid's lmm).
//!
//! A flow crosses a list of links and has bytes left to move.  Concurrent flows share every link
//! max-min fairly: progressive filling raises all rates together, freezes the flows of the first
//! saturated link, and repeats.  When a flow starts or ends, only the connected component of flows
//! and links that it touches is re-solved (`resolve`), and only flows whose rate changed get a new
//! finish time: the caller schedules their completion with the returned version and ignores stale
//! versions (lazy invalidation).  Starts and ends at one instant are batched into one solve.
//!
//! Exact max-min is solved incrementally (`Sharing::MaxMin`).  The allocation before a change is
//! max-min; after it, only a set U of flows is re-rated -- at first the flows started since the
//! last solve -- by progressive filling over the capacity the other flows leave on U's links
//! and the links where flows started or ended (R); then the max-min condition is checked: every
//! flow must have a *bottleneck link*, saturated and carrying no faster flow (Bertsekas &
//! Gallager, Data Networks, 6.5.2).  A U flow that fails pulls in the faster fixed flows of its
//! saturated links; a fixed flow can only have lost its bottleneck on an R link that was
//! saturated before, and is no longer or now carries a U flow faster than every flow before:
//! only there are the fastest fixed flows (the ones the link can have been the bottleneck of)
//! checked, and a failing one joins U.  The filling and the check are repeated until U stops
//! growing; then every flow has a bottleneck link and the allocation is the max-min one.  No
//! link's flows are summed for this: each link keeps the sum of its flows' rates (in exact fixed
//! point, so it never drifts from a fresh sum) and its largest rate with how many flows have it;
//! when re-ratings have left that rate unknown, a scan finds it only where the check reads it
//! (a dirty link, one saturated before the change, or one a checked flow must be fastest on).
//! When U grows past a quarter of the flows, the whole component is solved instead (and an
//! attempt stops as soon as U is past that limit).  Flows that join U in a check change rate, so
//! the flows bottlenecked on their saturated links (at the link's largest rate) join U with them,
//! a round before the check would find them, and the flows bottlenecked on those flows'
//! saturated links too (`pull_from_saturated`, two rings: a cascade over the saturated NICs of a
//! halo exchange took 5-7 rounds, each re-filling and re-checking all of U).  A change
//! where flows only ended starts U with the flows the ended flows' links were the bottleneck of
//! (`pull_from_ended`), not empty: a first round would only find them.  A change
//! whose components hold few flows (`SMALL_COMPONENT`; up to `MID_COMPONENT` while the last
//! change tried at that size found them so, as an Allreduce's rounds do) is solved over the whole
//! components at once: cheaper than the incremental solve's set-up for a few tens of flows.  The walk that
//! gathers them stops as soon as they are larger, and the components it found are then solved
//! from its lists (one walk, not a search and then the solve's own).  Neither changes a rate: any
//! U gives the max-min rates once the check holds, and both solves are exact.
//!
//! *Slack links.*  No flow moves faster than its slowest link, `m_f` (the smallest capacity on
//! its path).  Each link keeps `P = sum of m_f over its flows` (`Pot`, in integer units with every
//! term rounded up, so it is exact under starts and ends and never below the true sum), and is
//! *slack* while `P < (1 - 1e-6) cap` (so never a link of no capacity): then its load, the sum
//! of rates at most `m_f`, stays below its capacity whatever the rates, so it is nobody's
//! bottleneck.  Nor does it ever fix a level of progressive filling: at a level `s`, its
//! unrated flows get at least `s` and at most `m_f`, so a share `(cap - rated) / n <=
//! s (1 + 1e-9)` would give `cap <= (1 + 1e-9) P`, which slack rules out.  Leaving such links out of the filling's live links and of the incremental solve's
//! R therefore changes no level, no frozen set and no rate (bit for bit: the smallest share over
//! the other links is the same number), only the work: on a GPU halo over a fat-tree, the GPUs'
//! PCIe and NVLink links and the fat-tree links that carry a few flows are slack (58 % of the
//! links the whole-component solve visited, 1,024 ranks).  Nor are their load and largest rate
//! kept: a re-rating updates only the links of the flow that are not slack (on a 4,096-rank GPU
//! halo 45 % of the incremental solve's link updates were on slack links, read for nothing else),
//! and a link that stops being slack (a start raised its bound) sums its flows' rates again
//! (`refresh_link`: the fixed-point sum is the number the updates would have kept).  Whether a
//! link is slack is one bit per link (`slack_bits`), set by every change of `P`: the solves
//! test it for every link of every flow they visit, and a million-rank network's bits fit in
//! the cache where its links' 16-byte bounds (the test read them before) do not.  Each live flow
//! also keeps a bind mask (`Flow::bind`: a clear bit is one of its links that is slack), so that
//! the incremental solve's loops over its links skip the slack ones without testing them (an
//! all-to-all flow crosses ten links, half of them slack).  A link that a finish made slack is kept in R:
//! the flows it was the bottleneck of must be checked (it is no longer saturated, so they join
//! U), and its load was kept up to that finish.  A dirty link that was slack before the change
//! too is left out of R (it was no flow's bottleneck).  Components are still walked through
//! slack links (splitting them there was tried: no faster on the cases measured, and it would
//! couple the filling's 1e-9 tolerance differently).
//!
//! *Dominated links.*  A second bound makes more links slack (`Dom`): each flow names, for each
//! link of its path, the nearest of the path's slowest links (the link itself if it is one), and
//! the flows that name one link move no faster than it, together.  A link's load is then at most
//! the sum of the capacities of the distinct links its flows name, kept as counts per named link
//! (up to `DOM_KEEP` of them; past that the bound is unknown until the link is empty).  A GPU's
//! NVLink or PCIe link in an all-to-all carries hundreds of flows that all cross the GPU's NIC:
//! `Pot` is far above its capacity, this bound is the NIC's capacity, below it.  The same proof
//! holds: at a level `s` of the filling each named link `k` has `rated_k + n_k s <= cap_k`, and
//! summing over the named links bounds the link's own `rated + n s` by their sum.  A slowest link
//! names itself, so it is never slack by this bound.  A flow's term and named links are found
//! once, at its start, and kept (`Ends::doms`) for its end, which removes exactly what the
//! start added (a capacity scaled while flows are live finds them again for every flow).
//!
//! What the scans read of a flow -- its rate and the solves' marks -- is in a dense table of its
//! own (`Hot`, 16 bytes a flow), not in the flow's record: links of thousands of flows are scanned
//! for their fastest flows, and 1 M flows' `Hot` fit in the last-level cache where their records
//! do not.  Each flow also keeps a *witness*, the link last found to be its bottleneck (or the
//! link the filling rated it at); the check tries it first (it mostly still is one) and reads the
//! flow's record only if not.  The witness is a hint: the answer is the same as trying every link.
//! The whole-component solve brings a flow's bytes up to `now` and gives it its new rate in the
//! filling's visit (one pass over the records, not two), and prefetches the records a few places
//! ahead in a link's list; the incremental solve's scans of a link's list prefetch the `Hot`
//! entries ahead in the same way.
//! The incremental solve reads R's links by place (`RWork`): what a round reads of a link and the
//! solve does not change (its capacity, whether the check looks at its fixed flows, its largest
//! committed rate and their count) is taken from its record once, when it first joins a round,
//! and the check of a U flow reads its links' round values from there, through the places of its
//! links that can bind (`upath`), not from each link's record and stat: at scale R's links are
//! scattered over tables far larger than the cache (the tests compare both ways at every check).
//! A link's two bounds (`Pot`, `Dom`), which every start and end updates on each link of the
//! path, share one cache line (`Bounds`), as do what a flow's end reads of its start (`Ends`:
//! its dominators and its places in its links' lists).
//! The whole-component solve's progressive filling finds each level by a pass over the
//! component's links, or, over more than `FILL_HEAP_MIN` links, from a heap of their fair shares
//! (the same levels, the same links in the same order, so the same rates to the bit: a 65,536-rank
//! halo's whole-component solves have up to 12,000 levels over 85,000-142,000 links, and the
//! passes took over a quarter of its replay).
//! `Sharing::MaxMinFull` always solves the whole component (the reference the incremental solve
//! is tested against).  New finish times are returned in flow order and rounded up to the ns
//! with a tolerance for last-bit noise (`finish_ns`), so both solves schedule the same.

use std::cell::Cell;

use crate::free_ids::FreeIds;
use crate::topology::LinkId;

pub type FlowId = u32;
type Time = u64;

/// A link's flows: inline up to 4 (most links carry a handful; a starting or finishing flow then
/// touches one cache line per link instead of the link and a separate list).  4, not more: with
/// them the record is one 64-byte line (`Link`); with 6 it was 80 bytes, two lines for every
/// link a solve visits (Cachegrind, 1,024-rank halo: D1 misses -5.6 % with 4).
type LinkFlows = smallvec::SmallVec<[FlowId; 4]>;
/// A flow's links: inline up to 12 (a 3-level fat-tree route, two PCIe links and two
/// inter-socket links: 10; with 8, a third of the 1,024-rank all-to-all's flows on `lassen` kept
/// their links on the heap, one more cache miss each time a scan read them).
type FlowLinks = smallvec::SmallVec<[LinkId; 12]>;

/// One cache line (`repr(align(64))`, 64 bytes: checked below), so that a solve's visit of a
/// link misses once.
#[derive(Clone, Debug)]
#[repr(align(64))]
struct Link {
    /// bytes per ns
    cap: f64,
    flows: LinkFlows,
    /// the solves' mark (a `Cell`: the component walk marks links while it reads another link's
    /// flows, through one shared borrow of the table)
    mark: Cell<u32>,
    /// exact max-min: the sum of its flows' rates, kept up to date by every re-rating, start and
    /// finish, so that the incremental solve never sums a link's flows.  In fixed point (`fx`):
    /// exact and independent of the order of updates, so it does not drift from a fresh sum
    load: i128,
    /// exact max-min: the largest rate of its flows and how many flows have exactly that rate
    /// (`nmax == 0` with flows on the link: not known, a scan finds it)
    lmax: f64,
    nmax: u32,
}

impl Link {
    /// One of its flows goes from rate `old` to `new` (keeps `lmax`/`nmax`).
    #[inline]
    fn rate_moved(&mut self, old: f64, new: f64) {
        if self.nmax == 0 {
            return; // not known: found by a scan when needed
        }
        if old == self.lmax {
            self.nmax -= 1;
            if self.nmax == 0 {
                return;
            }
        }
        if new > self.lmax {
            self.lmax = new;
            self.nmax = 1;
        } else if new == self.lmax {
            self.nmax += 1;
        }
    }
}

/// A rate (bytes per ns) in the fixed point of `Link::load`: units of 2^-64 byte per ns.
/// The same value as `(r * 2^64) as i128` (truncation, saturating), without the generic
/// conversion routine: a product below 2^63 converts through `i64`, a larger one is its
/// mantissa shifted by its exponent (exact: a float that large is a whole number).
#[inline]
fn fx(r: f64) -> i128 {
    let v = r * 18_446_744_073_709_551_616.0;
    if v.abs() < 9_223_372_036_854_775_808.0 {
        return v as i64 as i128;
    }
    fx_wide(v)
}

#[cold]
fn fx_wide(v: f64) -> i128 {
    let bits = v.to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i32 - 1075;
    if !(0..=74).contains(&exp) {
        return v as i128; // NaN, infinities and 2^127 or more: the language's saturating rule
    }
    let m = ((bits & ((1u64 << 52) - 1)) | (1u64 << 52)) as i128;
    let x = m << exp;
    if v < 0.0 {
        -x
    } else {
        x
    }
}

/// A fixed-point rate as a float: the same value as `x as f64 * 2^-64` (round to nearest even),
/// without the generic conversion routine.  Below 2^63 in magnitude `i64`'s conversion is exact
/// rounding; a larger value is shifted right to 63 bits, the bits shifted out kept as one sticky
/// bit (enough for correct rounding: 63 bits hold the 53 kept, the rounding bit and more), then
/// scaled back by a power of two (exact).
#[inline]
fn from_fx(x: i128) -> f64 {
    const INV: f64 = 1.0 / 18_446_744_073_709_551_616.0;
    if x == x as i64 as i128 {
        return x as i64 as f64 * INV;
    }
    from_fx_wide(x) * INV
}

#[inline]
fn from_fx_wide(x: i128) -> f64 {
    let neg = x < 0;
    let a = x.unsigned_abs();
    let lz = a.leading_zeros(); // below 65: `a` needs more than 63 bits
    let s = 65 - lz; // shift that leaves 63 significant bits
    let lost = a & ((1u128 << s) - 1);
    let y = ((a >> s) as u64) | (lost != 0) as u64;
    // 2^s, s in 1..=65
    let scale = f64::from_bits(((1023 + s) as u64) << 52);
    let f = y as i64 as f64 * scale;
    if neg {
        -f
    } else {
        f
    }
}

/// A link's working values in the whole-component solve (`FlowNet::lw`; the incremental solve's
/// are `RWork`).
#[derive(Clone, Copy, Debug, Default)]
#[repr(C, align(64))]
struct LinkWork {
    /// the fixed-point sum of the rates the solve gave the link's flows
    fixed: i128,
    /// progressive filling: the capacity left, and how many flows are still to rate
    rem: f64,
    n: u32,
    /// the whole-component filling from a heap: its place in the live links
    off: u32,
}

/// What the incremental max-min solve keeps of an R link, at the link's place in R
/// (`FlowNet::rw`, `FlowNet::rpos`): R is a few hundred links scattered over a table of
/// millions, and the filling visits each once per U flow on it; by place, these visits read a
/// few dense cache lines instead of a line of `lw` and one of `link_stat` each.
#[derive(Clone, Copy, Debug, Default)]
#[repr(C)]
struct RWork {
    /// the fixed-point sum of the rates of its flows not in U
    fixed: i128,
    /// the filling: the capacity left, and how many U flows are still to rate
    rem: f64,
    /// the check's stat of the round (`LinkStat`): sum of rates with U's staged rates, their
    /// largest, and the U flows whose committed rate was the link's `lmax`
    sum: f64,
    umax: f64,
    /// its largest committed rate as the round began (read only where `u_at_max` counts, or
    /// with `nmax`)
    lmax: f64,
    /// its capacity, and how many of its flows had `lmax` as the round began (the link's
    /// `Link::nmax`, 0 if not known): what the check of a U flow reads of the link
    /// (`u_has_bottleneck`)
    cap: f64,
    nmax: u32,
    n: u32,
    /// how many U flows it carries
    u: u32,
    /// where its U flows start in `ulist` and where the next one goes (then ends)
    off: u32,
    pos: u32,
    u_at_max: u32,
}

/// What the incremental max-min check knows of a link in one check round (`FlowNet::tick`).
#[derive(Clone, Copy, Debug, Default)]
struct LinkStat {
    tick: u32,
    /// sum of rates with U's staged rates
    sum: f64,
    /// largest staged rate of a U flow on it (0 if none)
    umax: f64,
    /// largest rate of a flow not in U, or NaN until needed
    fmax: f64,
    /// U flows whose committed rate is the link's `lmax` (`u32::MAX`: not counted, `lmax` was
    /// not known when the round began)
    u_at_max: u32,
    /// the smallest staged rate of a U flow without a bottleneck on this saturated link
    /// (infinite if none): the fixed flows faster than it join U
    pull: f64,
}

/// A bound on a link's load that no rates can pass (`FlowNet::pot`): the sum over its flows of
/// each flow's smallest link capacity (no flow moves faster than its slowest link), in units of
/// 2^-20 byte per ns, each flow's term rounded up.  A link whose bound is below its capacity
/// (`thr`: 1 - 1e-6 of it, rounded down) is *slack*: it can never be saturated, never be a
/// flow's bottleneck, and never fix a level of progressive filling, whatever the rates (the
/// proof is in the module docs), so the solves leave it out.
#[derive(Clone, Copy, Debug, Default)]
struct Pot {
    sum: u64,
    /// `sum` below this: slack (0: never; a link of 2^12 bytes per ns or more, or of less than
    /// about 2^-20)
    thr: u64,
}

/// Scale of `Pot` (2^20 per byte per ns)
const POT_SCALE: f64 = 1_048_576.0;

impl Pot {
    fn thr_of(cap: f64) -> u64 {
        // only links below 2^12 bytes per ns (4 TB/s) can be slack: a flow on one has a term
        // below 2^32, and a link fewer than 2^32 flows, so their sum never wraps
        if cap < 4096.0 {
            (cap * (1.0 - 1e-6) * POT_SCALE).floor().max(0.0) as u64
        } else {
            0
        }
    }
    /// A flow's term: its smallest link capacity `m`, rounded up (a flow whose links are all
    /// faster than 2^20 bytes per ns only crosses links that are never slack: any term does)
    fn term(m: f64) -> u64 {
        if m < POT_SCALE {
            // below 2^40: `ceil_ns` is `ceil` there
            ceil_ns(m * POT_SCALE)
        } else {
            1 << 40
        }
    }
}

/// What a scan of a link's flows reads of each flow, in a dense table of its own (`FlowNet::hot`,
/// 16 bytes a flow): links of thousands of flows are scanned for their fastest flows, flows not
/// in U, flows not yet checked; a 1 M-flow table of these stays in the last-level cache where
/// the flows' 128-byte records do not.
#[derive(Clone, Copy, Debug, Default)]
#[repr(C)]
struct Hot {
    /// bytes per ns
    rate: f64,
    /// epoch mark (in U of the incremental solve; re-rated by the bottleneck solve)
    mark: u32,
    /// visit mark of the incremental solve (`FlowNet::tick`)
    seen: u32,
}

/// Field order fixed (`repr(C)`, 64-byte aligned, two cache lines): the version and the links in
/// the first, the bytes and the completion record in the second.  A flow is live while it has
/// links (`finish` empties them, keeping their allocation for the slot's next flow).
#[derive(Clone, Debug)]
#[repr(C, align(64))]
struct Flow {
    version: u32,
    /// while the flow is free: the next free id of its key's list (`FreeIds`; in what would be
    /// padding).  While it is live: which of its first 32 links may not be slack (`bind`)
    free_next: FlowId,
    links: FlowLinks,
    remaining: f64,
    last: Time,
    token: u64,
    /// the caller's completion bookkeeping, in the flow's second cache line (which re-rating,
    /// starting and finishing the flow touch anyway)
    done: Completion,
}

/// What an event-driven caller keeps about a flow's completion event (the replay: `g2g-mpi`),
/// stored with the flow so that a completion and a re-rating read one record, not two.  The
/// network itself never reads it.  It outlives the flow: a slot reused by a new flow keeps it
/// (the generation, kept apart in `FlowNet::gens`, tells a stale event from the live one), and
/// `FlowNet::start` leaves it as it was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
pub struct Completion {
    /// time of the live pending completion event, or `Completion::NO_EVENT`
    pub pend: Time,
    /// the flow's latest finish time (from `Reschedule`)
    pub finish: Time,
    /// latency paid after the flow's data has moved (its stage's)
    pub lat: Time,
    /// the version `finish` belongs to
    pub version: u32,
}

impl Completion {
    pub const NO_EVENT: Time = Time::MAX;
    /// The record of a slot never used before.
    pub const NEW: Completion = Completion { pend: Completion::NO_EVENT, finish: 0, lat: 0, version: 0 };
}

const _: () = assert!(std::mem::size_of::<Flow>() == 128);
const _: () = assert!(std::mem::size_of::<Link>() == 64);

impl Flow {
    /// Is the flow live (started, not finished)?
    #[inline]
    fn active(&self) -> bool {
        !self.links.is_empty()
    }

    /// A live flow's *bind mask* (kept in `free_next`): bit `j` clear means that link `j` of its
    /// path is slack (bits for its first 32 links; a path's later links are always tested).
    /// A start sets every bit; the linking and the commit clear the bit of a link they find
    /// slack (visiting the places `binding_places` gives); and a link that stops being slack sets
    /// its bit in every flow it carries (`FlowNet::refresh_link`, which every such link goes
    /// through).  So a clear bit is always right, and the solves skip those links without
    /// reading their slack bits (an all-to-all flow on `lassen` crosses ten links, half of them
    /// slack).
    #[inline(always)]
    fn bind(&self) -> u32 {
        self.free_next
    }

    /// Sets the rate `r` (in `rate`, the flow's `Hot::rate`) at `now` (bytes moved so far at the
    /// old rate are counted first) and, if it changed, a new version and finish time in `out`.
    #[inline]
    fn rerate(&mut self, rate: &mut f64, id: FlowId, now: Time, r: f64, out: &mut Vec<Reschedule>) {
        if (*rate - r).abs() > r * 1e-12 || *rate == 0.0 {
            let dt = span_f64(now - self.last);
            self.remaining = (self.remaining - *rate * dt).max(0.0);
            self.last = now;
            *rate = r;
            self.version = self.version.wrapping_add(1);
            let finish = finish_ns(now, self.remaining, r);
            out.push(Reschedule { flow: id, finish, version: self.version });
        }
    }
}

/// The places in a path of `n` links whose bind mask (`Flow::bind`) is set, in path order, and
/// every place from 32 on.
#[inline(always)]
fn binding_places(n: usize, bind: u32) -> Places {
    Places { bits: if n >= 32 { bind } else { bind & ((1u32 << n) - 1) }, next: 32, n }
}

/// `binding_places`' iterator: the set bits, then the places from 32 on
struct Places {
    bits: u32,
    next: usize,
    n: usize,
}

impl Iterator for Places {
    type Item = usize;
    #[inline(always)]
    fn next(&mut self) -> Option<usize> {
        if self.bits != 0 {
            let j = self.bits.trailing_zeros() as usize;
            self.bits &= self.bits - 1;
            return Some(j);
        }
        if self.next < self.n {
            self.next += 1;
            return Some(self.next - 1);
        }
        None
    }
}

/// How far ahead in a link's flow list the scans of the whole-component solve prefetch the flow
/// records they will read (a link of thousands of flows is walked in list order, the records are
/// scattered over a table far larger than the cache)
const AHEAD: usize = 12;

/// How far ahead in a link's flow list the incremental solve's scans (largest rates, the check of
/// fixed flows, pulls) prefetch the flows' `Hot` entries: a scan reads 16 bytes per flow at random
/// in a table of 16 MiB per 1 M flows, and does little else per flow
const HOT_AHEAD: usize = 16;

/// How many U flows ahead the incremental solve's walks over U prefetch a flow's links
/// (`FlowNet::prefetch_ahead`)
const LINK_AHEAD: usize = 2;

/// Prefetches the entry of `table` of the flow at place `at` of `ids` (a link's list, U), if
/// there is one (a hint: changes nothing the solve computes).
#[inline(always)]
fn prefetch_entry<T>(ids: &[FlowId], table: &[T], at: usize) {
    if let Some(&g) = ids.get(at) {
        prefetch(table.as_ptr().wrapping_add(g as usize));
    }
}

/// A heap of links by fair share (`rem / n` of their working values), smallest first, ties by
/// link id, for the fillings: entries are (share, link, index of its working values: `LinkWork`
/// by link id for the whole-component filling, `RWork` by place in R for the incremental one)
type ShareHeap = std::collections::BinaryHeap<std::cmp::Reverse<(u64, LinkId, u32)>>;

/// A link's working values as the fillings' heap reads them: its count of flows to rate and the
/// capacity left to them
trait Share {
    fn n_rem(&self) -> (u32, f64);
}

impl Share for LinkWork {
    #[inline(always)]
    fn n_rem(&self) -> (u32, f64) {
        (self.n, self.rem)
    }
}

impl Share for RWork {
    #[inline(always)]
    fn n_rem(&self) -> (u32, f64) {
        (self.n, self.rem)
    }
}

/// The link of smallest share in `heap` (its share and the index of its working values in
/// `work`), if its share is at most `below` (as bits), left in the heap.  A link's share only
/// grows as flows are rated (a flow is rated at the smallest share, at most the link's), so a key
/// is a lower bound: an entry whose link's share has grown since is re-keyed with it, and one
/// whose link has no flow left to rate is dropped, until the top's key is its link's share.
#[inline]
fn least_share<W: Share>(heap: &mut ShareHeap, work: &[W], below: u64) -> Option<(u64, u32)> {
    while let Some(&std::cmp::Reverse((key, l, k))) = heap.peek() {
        if key > below {
            return None;
        }
        let (n, rem) = work[k as usize].n_rem();
        if n == 0 {
            heap.pop();
            continue;
        }
        let cur = (rem / n as f64).to_bits();
        if cur == key {
            return Some((key, k));
        }
        heap.peek_mut().unwrap().0 = (cur, l, k); // re-sifts on drop
    }
    None
}

/// `least_share`, taken out of the heap.
#[inline]
fn pop_least<W: Share>(heap: &mut ShareHeap, work: &[W], below: u64) -> Option<(u64, u32)> {
    let top = least_share(heap, work, below)?;
    heap.pop();
    Some(top)
}

/// Is link `l` slack (`FlowNet::slack`; for code that has the table borrowed apart from the
/// rest): its bit in `FlowNet::slack_bits`
#[inline(always)]
fn slack_in(slack_bits: &[u64], l: usize) -> bool {
    (slack_bits[l >> 6] >> (l & 63)) & 1 != 0
}

/// Sets link `l`'s bit in `slack_bits` to whether either of its bounds, `p` or the dominators'
/// `d` (`Dom`), is below its threshold.
#[inline(always)]
fn set_slack(slack_bits: &mut [u64], l: usize, p: Pot, d: &Dom, use_dom: bool) {
    let (w, b) = (l >> 6, l & 63);
    let below = p.sum.min(if use_dom { d.bound() } else { u64::MAX }) < p.thr;
    slack_bits[w] = (slack_bits[w] & !(1u64 << b)) | ((below as u64) << b);
}

/// A flow of term `term` naming dominator `dom` joins link `l`'s bounds `b`; its slack bit is
/// set again.  Returns whether it was slack before.
#[inline(always)]
fn bounds_add(b: &mut Bounds, slack_bits: &mut [u64], l: usize, dom: LinkId, term: u64, use_dom: bool) -> bool {
    b.pot.sum = b.pot.sum.wrapping_add(term);
    b.dom.add(dom, term);
    let was_slack = slack_in(slack_bits, l);
    set_slack(slack_bits, l, b.pot, &b.dom, use_dom);
    was_slack
}

/// The flow of `bounds_add` leaves link `l`, which keeps `left` flows.  Returns whether the
/// link was slack before.
#[inline(always)]
fn bounds_sub(
    b: &mut Bounds,
    slack_bits: &mut [u64],
    l: usize,
    dom: LinkId,
    term: u64,
    left: usize,
    use_dom: bool,
) -> bool {
    b.pot.sum = b.pot.sum.wrapping_sub(term);
    b.dom.remove(dom, term, left);
    let was_slack = slack_in(slack_bits, l);
    set_slack(slack_bits, l, b.pot, &b.dom, use_dom);
    was_slack
}

/// How many distinct dominators a link's `Dom` keeps count of; past that its bound is not known
/// (until the link is empty again) and only `Pot` can make it slack
const DOM_KEEP: usize = 4;

/// A second bound on a link's load (`FlowNet::dom`), tighter where a link's flows all cross one
/// slower link: each flow on link `l` names a *dominator* on its path -- the nearest of its
/// slowest links (`FlowNet::dominators`; `l` itself if `l` is one of them) -- and the flows that
/// name the same dominator `k` together move no faster than `k`'s capacity.  So `l`'s load is at
/// most the sum of its distinct dominators' capacities (in `Pot`'s units, each rounded up), and
/// `l` is slack when that sum is below its threshold, whatever the rates.  A GPU's NVLink or
/// PCIe link carrying the flows of an all-to-all (hundreds of flows, each no faster than its
/// NIC: `Pot` far above the capacity) is dominated by the NIC link they all cross.  The proof
/// that a slack link changes no level of the filling holds for this bound as for `Pot` (module
/// docs): at a level `s`, every link `k` has `rated_k + n_k s <= cap_k`, and summing over `l`'s
/// dominators gives `rated_l + n_l s <= sum of cap_k`.
#[derive(Clone, Copy, Debug, Default)]
struct Dom {
    /// sum of the terms of the dominators in `by` (valid while `n <= DOM_KEEP`)
    sum: u64,
    /// how many entries of `by` are used; `u32::MAX`: more than `DOM_KEEP` dominators were seen
    /// since the link was last empty (the bound is not known)
    n: u32,
    /// (dominator, how many of the link's flows name it)
    by: [(LinkId, u32); DOM_KEEP],
}

impl Dom {
    const OVER: u32 = u32::MAX;

    /// The bound, `u64::MAX` if not known
    #[inline(always)]
    fn bound(&self) -> u64 {
        if self.n == Dom::OVER {
            u64::MAX
        } else {
            self.sum
        }
    }

    /// A flow naming dominator `d` (of term `t`) joins the link.
    #[inline]
    fn add(&mut self, d: LinkId, t: u64) {
        if self.n == Dom::OVER {
            return;
        }
        let n = self.n as usize;
        for e in self.by[..n].iter_mut() {
            if e.0 == d {
                e.1 += 1;
                return;
            }
        }
        if n == DOM_KEEP {
            self.n = Dom::OVER;
            return;
        }
        self.by[n] = (d, 1);
        self.n += 1;
        self.sum += t;
    }

    /// A flow naming dominator `d` (of term `t`) leaves the link, which keeps `left` flows.
    #[inline]
    fn remove(&mut self, d: LinkId, t: u64, left: usize) {
        if left == 0 {
            *self = Dom::default();
            return;
        }
        if self.n == Dom::OVER {
            return;
        }
        let n = self.n as usize;
        if let Some(i) = self.by[..n].iter().position(|e| e.0 == d) {
            self.by[i].1 -= 1;
            if self.by[i].1 == 0 {
                self.by[i] = self.by[n - 1];
                self.n -= 1;
                self.sum -= t;
            }
        } else {
            debug_assert!(false, "a flow left a link with a dominator it never named");
        }
    }
}

/// The places of a flow's path that have its smallest capacity (`FlowNet::dominators`): a bit
/// per place for paths of up to 64 links (any real machine's), else a list.  `at` gives the
/// flow's dominator (`Dom`) for each link of the path.
enum Doms {
    Mask(u64),
    List(Vec<bool>),
}

/// A link's two bounds on its load, `Pot` and `Dom`, in one cache line: a flow's start and end
/// update both for every link of its path (a path's links are scattered over a table of
/// millions, and apart they were two misses a link).
#[derive(Clone, Copy, Debug, Default)]
#[repr(C, align(64))]
struct Bounds {
    pot: Pot,
    dom: Dom,
}
const _: () = assert!(std::mem::size_of::<Bounds>() == 64);

/// What a flow's end reads of its start, in one cache line (`FlowNet::ends`): its dominators as
/// `start` found them (`dominators`: the term and the places' mask; term `NO_DOMS` for a path
/// past the mask's 64 places), which `finish` takes back instead of reading its links'
/// capacities again (`scale_link` keeps them), and its place in the flow list of each of its
/// first `SLOTS` links, so that it leaves a link of thousands of flows without a search.  Start
/// and end update both (apart, they were two misses each in a table past the cache at scale).
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
struct Ends {
    doms: (u64, u64),
    slot: [u32; SLOTS],
}
const _: () = assert!(std::mem::size_of::<Ends>() == 64);

/// `Ends::doms` of a flow whose path is past the mask's 64 places (found again at its end)
const NO_DOMS: u64 = u64::MAX;

impl Doms {
    /// What `Ends::doms` keeps of these, found with term `t` (a term is at most 2^40, never
    /// `NO_DOMS`)
    #[inline]
    fn stored(&self, t: u64) -> (u64, u64) {
        match self {
            Doms::Mask(mask) => (t, *mask),
            Doms::List(_) => (NO_DOMS, 0),
        }
    }

    /// The dominator of the link at place `j` of the path `links` these were found for: the
    /// nearest place of the smallest capacity, the earlier one of two as near.
    #[inline(always)]
    fn at(&self, links: &[LinkId], j: usize) -> LinkId {
        let k = match self {
            Doms::Mask(mask) => {
                let before = mask & (u64::MAX >> (63 - j)); // places 0..=j
                let after = mask >> j; // places j.., from bit 0
                let next = j + after.trailing_zeros() as usize;
                if before == 0 {
                    next
                } else {
                    let b = 63 - before.leading_zeros() as usize;
                    if after != 0 && next - j < j - b {
                        next
                    } else {
                        b
                    }
                }
            }
            Doms::List(slow) => {
                let b = (0..=j).rev().find(|&k| slow[k]);
                let next = (j..slow.len()).find(|&k| slow[k]);
                match (b, next) {
                    (Some(b), Some(x)) if x - j < j - b => x,
                    (Some(b), _) => b,
                    (None, x) => x.expect("a path has a slowest link"),
                }
            }
        };
        links[k]
    }
}

/// Asks the processor to bring the cache line at `p` in (a hint: no effect on what the code
/// computes, none at all off x86-64).
#[inline(always)]
fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch reads nothing the program sees and faults on no address
    unsafe {
        core::arch::x86_64::_mm_prefetch(p as *const i8, core::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// When a flow with `remaining` bytes at rate `r` (bytes per ns) from `now` finishes: the next
/// whole ns, where a quotient above a whole number by rounding noise only (1e-10 of it) counts as
/// that number.  Incremental and whole-component solves reach the same rate through different
/// sums, equal to the last bits or so; with round sizes and bandwidths the quotient is often a
/// whole number, and a plain `ceil` would then put one solve a ns after the other.
#[inline]
fn finish_ns(now: Time, remaining: f64, r: f64) -> Time {
    let x = if r > 0.0 { remaining / r } else { f64::MAX };
    if x >= 1e18 {
        return u64::MAX / 2;
    }
    now + ceil_ns(x - x * 1e-10)
}

/// `y.ceil().max(0.0) as u64` for `y` below 1e18 (or NaN: 0), without the library call that
/// `ceil` is on the baseline x86-64 target: below 2^53 the truncation and its conversion back are
/// exact, from 2^53 up `y` is a whole number already.  Through `i64` (one instruction each way
/// on that target, where `u64` takes a branch and several): the same numbers below 2^63.
#[inline]
fn ceil_ns(y: f64) -> u64 {
    if y > 0.0 {
        let t = y as i64;
        (if (t as f64) < y { t + 1 } else { t }) as u64
    } else {
        0
    }
}

/// A span of simulated time as a float: `dt as f64`, through `i64` (one instruction on the
/// baseline x86-64 target, where `u64` takes several); the same number, times being below 2^62
/// (`g2g_engine::MAX_TIME`).
#[inline(always)]
fn span_f64(dt: Time) -> f64 {
    debug_assert!(dt < 1 << 63);
    dt as i64 as f64
}

/// One flow whose finish time changed: schedule its completion at `finish` with `version`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reschedule {
    pub flow: FlowId,
    pub finish: Time,
    pub version: u32,
}

/// Which flows of a saturated link join U (`FlowNet::pull_from_saturated`)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pull {
    /// every flow not in U yet
    All,
    /// the flows at the link's largest rate (the ones it can be the bottleneck of)
    Bottlenecked,
}

/// Which of the incremental solve's pull-aheads are off: none in a build (`FlowNet::shortcuts`);
/// tests switch them off one at a time to show that each saves rounds and changes no rate
#[derive(Clone, Copy, Debug, Default)]
struct Shortcuts {
    /// `pull_from_saturated` after a check
    pull_ahead: bool,
    /// its second ring
    second_ring: bool,
    /// `pull_from_ended`
    pull_ended: bool,
}

/// Exact max-min: `pull_from_saturated` skips links of more flows (an all-to-all's NIC carries
/// thousands, nearly all at its largest rate: scanning them ahead cost more than the rounds it
/// saved; the check still finds the ones that need it)
const PULL_AHEAD_MAX_FLOWS: usize = 256;

/// Exact max-min: changes whose components hold this many flows or fewer in all are settled by
/// the whole-component solve (`FlowNet::small_components`)
const SMALL_COMPONENT: usize = 16;

/// Exact max-min: ... and those of this many or fewer while the last attempt at this size found
/// them so
/// (an Allreduce's inter-node rounds: components of 20-60 flows, settled whole at less cost than
/// incrementally; a halo's components hold thousands, and its attempts stop at `SMALL_COMPONENT`)
const MID_COMPONENT: usize = 64;

/// After a change whose components were larger than `MID_COMPONENT`, that size is tried again
/// every this many changes (the rest stop at `SMALL_COMPONENT`)
const MID_PROBE_EVERY: u32 = 64;

/// Progressive filling over more live links than this finds its levels from a heap
/// (`FlowNet::progressive_fill_heap`), over fewer by passes over the links (the same rates)
const FILL_HEAP_MIN: usize = 256;

/// Places in its links' flow lists kept per flow: for the first `SLOTS` links of its path.
const SLOTS: usize = 12;

/// Above how many links a flow's start and end ask for their links' records ahead
/// (`FlowNet::prefetch_path`): 32,768 links' records and bounds are 4 MiB, a server core's L2.
/// The 16,384-rank halo on `lassen` has 146,256 links, the 1,024-rank all-to-all 9,240.
const PREFETCH_PATH_MIN_LINKS: usize = 32_768;

#[derive(Default)]
pub struct FlowNet {
    links: Vec<Link>,
    /// per link, its two bounds (`Bounds`: the one that tells a slack link, `Pot`, and the
    /// dominators' `Dom`), one cache line a link
    bounds: Vec<Bounds>,
    /// per link, one bit: slack (its `Pot` sum below its threshold), kept with every change of
    /// the bound.  What the solves test for every link of every flow they visit: 1 bit a link
    /// stays in the cache where the bounds of millions of links do not
    slack_bits: Vec<u64>,
    flows: Vec<Flow>,
    /// per flow: its rate and the solves' marks (`Hot`)
    hot: Vec<Hot>,
    /// per flow: its witness, one of its links, the last found to be its bottleneck (by the
    /// incremental check, or the link the filling rated it at); a hint only, always re-checked
    wit: Vec<LinkId>,
    /// per flow: the generation of its live completion event (`completion_due`), in a dense
    /// table of its own: most of an all-to-all's completion events are stale (a flow sped up
    /// got a new one), and telling one from the live event then reads 4 bytes a flow, in the
    /// cache, not the flow's record
    pub(crate) gens: Vec<u32>,
    /// checks answered by the witness (tests: it is used)
    #[cfg(test)]
    witness_hits: u64,
    /// flows read by the scans for a link's largest rate (`lmax`, `fmax`; tests: which are not
    /// made)
    #[cfg(test)]
    max_scanned: u64,
    /// per flow, what its end reads of its start (`Ends`: its dominators and its places in its
    /// links' lists), one cache line a flow
    ends: Vec<Ends>,
    /// free flow ids, kept by the flow's first link (`FreeIds`: the flows of a rank stay close
    /// together in the per-flow tables)
    free: FreeIds,
    /// per flow: the whole-component solve's mark (found, then rated), in a dense table of its
    /// own: the search and the filling meet each flow once per link it crosses, and a test there
    /// then reads 4 bytes instead of the flow's record
    cmark: Vec<u32>,
    dirty: Vec<LinkId>,
    epoch: u32,
    // scratch
    comp_links: Vec<LinkId>,
    comp_flows: Vec<FlowId>,
    /// where each component gathered by `gather_small` begins in `comp_links` and `comp_flows`
    comp_starts: Vec<(u32, u32)>,
    /// `gather_small`: did the last attempt at `MID_COMPONENT` find the components that small,
    /// and in how many changes is that size tried again if not
    mid_ok: bool,
    mid_probe: u32,
    stack: Vec<LinkId>,
    /// per link: the solves' working values (`LinkWork`), one record so that a solve's visit of
    /// a link reads one cache line, not six tables
    lw: Vec<LinkWork>,
    live: Vec<LinkId>,
    /// `progressive_fill_heap`: the links a level visits
    visit: Vec<LinkId>,
    /// incremental max-min filling: the U flows of each R link (their places in U, at
    /// `RWork::off..pos`), and the R links by fair share (lower bounds)
    ulist: Vec<u32>,
    heap: ShareHeap,
    /// incremental max-min, by place in R: each R link's working values (`RWork`)
    rw: Vec<RWork>,
    /// per link: its place in R (valid while its mark is the solve's)
    rpos: Vec<u32>,
    /// by place in R, for the round: can the link have been a fixed flow's bottleneck (dirty, or
    /// saturated before the change), i.e. does the check look at its fixed flows
    rcheck: Vec<bool>,
    /// by place in R: the count of U flows at its largest committed rate that a round starts
    /// from (`RWork::u_at_max`: 0, or `u32::MAX` where that rate is not known)
    ruam: Vec<u32>,
    /// incremental max-min, by place in U: each U flow's committed rate, staged rate, the tick
    /// of the filling that rated it, and where its R links' places are in `upath`
    uold: Vec<f64>,
    ustaged: Vec<f64>,
    urated: Vec<u32>,
    upath_at: Vec<u32>,
    upath: Vec<u32>,
    /// how concurrent flows share links
    pub sharing: Sharing,
    pub solves: u64,
    pub active_flows: usize,
    /// exact max-min: changes settled incrementally / by a whole-component solve
    pub incremental_solves: u64,
    pub component_solves: u64,
    /// exact max-min: rounds (filling and check) of the incremental solves, held or not
    pub incremental_rounds: u64,
    /// flows given a new rate (and finish) by the solves, all of them
    pub rerates: u64,
    /// exact max-min: ... by the incremental solves that held, and the distinct bottleneck links
    /// (witnesses) of each one's re-rated flows, summed over them: how many groups of flows at
    /// one link's rate a change moves (the case for solving per group, docs/scaling.md)
    pub incremental_rerates: u64,
    pub rerate_bottlenecks: u64,
    /// exact max-min: flows whose bottleneck moved to another link (the check found the witness
    /// no longer one and took another)
    pub bottleneck_moves: u64,
    /// tests: links are slack by `Pot` alone, not the dominators' bound (`uses_dom`)
    #[cfg(test)]
    pot_only: bool,
    /// tests: starts and ends never ask for their links' records ahead (`prefetches_paths`)
    #[cfg(test)]
    no_prefetch: bool,
    /// tests: the incremental solve's pull-aheads switched off (`shortcuts`)
    #[cfg(test)]
    off: Shortcuts,
    /// tests: progressive filling always by passes over the links (the same rates), and how
    /// many fillings took the heap
    #[cfg(test)]
    fill_by_passes: bool,
    #[cfg(test)]
    heap_fills: u64,
    /// tests: whole-component fillings never take the one-level path (the same rates), and how
    /// many took it
    #[cfg(test)]
    no_one_level: bool,
    #[cfg(test)]
    one_level_fills: u64,
    u_flows: Vec<FlowId>,
    r_links: Vec<LinkId>,
    /// the check's saturated links with a U flow that has no bottleneck (`LinkStat::pull`)
    pulls: Vec<LinkId>,
    /// per link: what one check round knows of it
    link_stat: Vec<LinkStat>,
    /// exact max-min: flows started since the last resolve (the incremental solve's first U)
    started: Vec<FlowId>,
    tick: u32,
    /// bottleneck sharing: each link's fair share (capacity / flows) as of the last re-rating;
    /// up to date for every link once a resolve has run (a link's flow count only changes by a
    /// start or finish, which makes it dirty)
    last_share: Vec<f64>,
    /// bottleneck sharing: the dirty links of one resolve with their previous share
    changed: Vec<(LinkId, f64)>,
    /// links that a start or finish has just made not slack (`refresh_unslacked`)
    unslacked: Vec<LinkId>,
    /// links that a finish has made slack since the last solve: they were not before, so their
    /// flows are checked as a dirty link's are (the solve's R keeps no other slack link)
    turned_slack: Vec<LinkId>,
    #[cfg(feature = "flow-dump")]
    dump: crate::flow_dump::FlowDump,
    /// sharing `max-min-grouped` (for study): the grouped solve's net and the flows' tokens and
    /// latencies, behind the completion calls (`completion.rs`)
    pub(crate) grouped: Option<Box<crate::completion::Grouped>>,
    /// exact max-min: how it is solved (`solver.rs`), whether the grouped solve holds the flows
    /// now, the window of the choice, the instants the flows changed hands, and how many flows
    /// the hand-offs moved
    pub solver: crate::solver::Solver,
    pub(crate) grouped_on: bool,
    pub(crate) win: crate::solver::Window,
    pub solver_switches_ns: Vec<Time>,
    pub handed_off_flows: u64,
}

impl FlowNet {
    pub fn new() -> FlowNet {
        #[cfg(feature = "flow-dump")]
        return FlowNet { dump: crate::flow_dump::FlowDump::from_env(), ..FlowNet::default() };
        #[cfg(not(feature = "flow-dump"))]
        FlowNet::default()
    }

    /// Reserves room for `n` concurrent flows (address space only: pages are touched as flows
    /// come).  A table that grows by doubling instead copies itself into fresh pages each time,
    /// and the kernel zeroes every fresh page: a few % of a replay's time.
    pub fn reserve_flows(&mut self, n: usize) {
        self.flows.reserve(n.saturating_sub(self.flows.len()));
        self.hot.reserve(n.saturating_sub(self.hot.len()));
        self.wit.reserve(n.saturating_sub(self.wit.len()));
        self.gens.reserve(n.saturating_sub(self.gens.len()));
        self.ends.reserve(n.saturating_sub(self.ends.len()));
        self.cmark.reserve(n.saturating_sub(self.cmark.len()));
    }

    /// Reserves room for `n` more links (the machine knows its count before it adds them: the
    /// tables then do not grow by doubling, copying themselves each time).
    pub fn reserve_links(&mut self, n: usize) {
        self.links.reserve(n);
        self.lw.reserve(n);
        self.rpos.reserve(n);
        self.link_stat.reserve(n);
        self.last_share.reserve(n);
        self.bounds.reserve(n);
    }

    /// Adds a link of `bw_bytes_per_s`; returns its id (ids are dense from 0).
    pub fn add_link(&mut self, bw_bytes_per_s: f64) -> LinkId {
        self.links.push(Link {
            cap: bw_bytes_per_s * 1e-9,
            flows: LinkFlows::new(),
            mark: Cell::new(0),
            load: 0,
            lmax: 0.0,
            nmax: 0,
        });
        self.lw.push(LinkWork::default());
        self.rpos.push(0);
        let p = Pot { sum: 0, thr: Pot::thr_of(bw_bytes_per_s * 1e-9) };
        self.bounds.push(Bounds { pot: p, dom: Dom::default() });
        let l = self.bounds.len() - 1;
        if l >> 6 >= self.slack_bits.len() {
            self.slack_bits.push(0);
        }
        let use_dom = self.uses_dom();
        set_slack(&mut self.slack_bits, l, p, &self.bounds[l].dom, use_dom);
        self.link_stat.push(LinkStat::default());
        self.last_share.push(f64::INFINITY);

        (self.links.len() - 1) as LinkId
    }

    pub fn num_links(&self) -> usize {
        self.links.len()
    }

    pub fn link_bw(&self, l: LinkId) -> f64 {
        self.links[l as usize].cap * 1e9
    }

    /// A link's capacity, bytes per ns (as the solves see it).
    pub(crate) fn link_cap(&self, l: usize) -> f64 {
        self.links[l].cap
    }

    /// Multiplies one link's capacity (what-ifs such as NIC bandwidth scaling).
    pub fn scale_link(&mut self, l: LinkId, factor: f64) {
        // max-min-grouped copies the capacities at its first flow (`completion.rs`); the
        // what-ifs scale before the run (`Machine::scale_network`)
        debug_assert!(self.grouped.is_none(), "scale_link after a max-min-grouped flow started");
        self.links[l as usize].cap *= factor;
        self.bounds[l as usize].pot.thr = Pot::thr_of(self.links[l as usize].cap);
        if self.active_flows > 0 {
            // the live flows' terms may have changed: every bound again
            // (and the flows' dominators: the slowest links of their paths may have moved)
            for b in self.bounds.iter_mut() {
                b.pot.sum = 0;
                b.dom = Dom::default();
            }
            for f in 0..self.flows.len() {
                let (t, doms) = self.dominators(&self.flows[f].links);
                self.ends[f].doms = doms.stored(t);
                for (j, &l) in self.flows[f].links.iter().enumerate() {
                    let b = &mut self.bounds[l as usize];
                    b.pot.sum = b.pot.sum.wrapping_add(t);
                    b.dom.add(doms.at(&self.flows[f].links, j), t);
                }
            }
            let use_dom = self.uses_dom();
            for l2 in 0..self.bounds.len() {
                set_slack(&mut self.slack_bits, l2, self.bounds[l2].pot, &self.bounds[l2].dom, use_dom);
                // a link slack before may not be now: its load again (the others' are the same)
                if self.slack(l2) {
                    self.links[l2].nmax = 0;
                } else {
                    self.refresh_link(l2);
                }
            }
        } else {
            // only this link's threshold moved (a what-if scales every network link before the
            // replay: one bit each, not every link's each time)
            let use_dom = self.uses_dom();
            let b = &self.bounds[l as usize];
            set_slack(&mut self.slack_bits, l as usize, b.pot, &b.dom, use_dom);
        }
    }

    /// Link `l`'s load and largest rate from its flows' rates (a fixed-point sum: the number
    /// the re-ratings would have kept, whatever their order).  A slack link's are not kept
    /// (no re-rating touches it: on a 4,096-rank GPU halo 45 % of the link updates of the
    /// incremental solve's commit were on slack links, most of them cache misses); they are
    /// found again here when it stops being slack.
    fn refresh_link(&mut self, l: usize) {
        let (mut load, mut max, mut n) = (0i128, 0.0f64, 0u32);
        let FlowNet { links, flows, hot, .. } = self;
        for &g in links[l].flows.iter() {
            // it may bind again: its bit in each of its flows' bind masks (`Flow::bind`)
            // (every place it has on the path: a path may cross a link twice)
            let fl = &mut flows[g as usize];
            for (j, &x) in fl.links.iter().take(32).enumerate() {
                if x as usize == l {
                    fl.free_next |= 1 << j;
                }
            }
            let r = hot[g as usize].rate;
            load += fx(r);
            if r > max {
                max = r;
                n = 1;
            } else if r == max {
                n += 1;
            }
        }
        let lk = &mut links[l];
        lk.load = load;
        lk.lmax = max;
        lk.nmax = n;
    }

    /// `refresh_link` of the links a start or finish has just made not slack.
    #[inline]
    fn refresh_unslacked(&mut self) {
        while let Some(l) = self.unslacked.pop() {
            self.refresh_link(l as usize);
        }
    }

    /// A flow's term in its links' `Pot` (its smallest link capacity, rounded up; outside the
    /// tests, `dominators` gives it with the flow's dominators)
    #[cfg(test)]
    fn pot_term(&self, links: &[LinkId]) -> u64 {
        let mut m = f64::INFINITY;
        for &l in links {
            m = m.min(self.links[l as usize].cap);
        }
        Pot::term(m)
    }

    /// A flow's term (`pot_term`: its smallest link capacity, rounded up), which is also its
    /// dominators' term, and its dominator for each link of its path `links` (`Dom`): the
    /// nearest link of that smallest capacity (the earlier one of two as near), the link itself
    /// if it is one (`Doms::at`).  One pass for the smallest capacity, one for the places that
    /// have it.
    #[inline]
    fn dominators(&self, links: &[LinkId]) -> (u64, Doms) {
        let ltab = &self.links[..];
        let m = links.iter().fold(f64::INFINITY, |m, &l| m.min(ltab[l as usize].cap));
        let doms = if links.len() <= 64 {
            let mut mask = 0u64;
            for (j, &l) in links.iter().enumerate() {
                mask |= ((ltab[l as usize].cap <= m) as u64) << j;
            }
            Doms::Mask(mask)
        } else {
            Doms::List(links.iter().map(|&l| ltab[l as usize].cap <= m).collect())
        };
        (Pot::term(m), doms)
    }

    /// Does the slack test take the dominators' bound (`Dom`)?  Always, but in tests that
    /// compare with `Pot` alone (`FlowNet::pot_only`)
    #[inline(always)]
    fn uses_dom(&self) -> bool {
        #[cfg(test)]
        return !self.pot_only;
        #[cfg(not(test))]
        true
    }

    /// Can link `l` never be saturated with the flows it has (`Pot`)?  (Strictly below `thr`: a
    /// link of no capacity, or one below the bound's unit, has `thr` 0 and is never slack.)
    #[inline(always)]
    pub(crate) fn slack(&self, l: usize) -> bool {
        slack_in(&self.slack_bits, l)
    }

    /// Starts a flow of `bytes` over `links` at `now`.  Call `resolve(now, ..)` before time moves on.
    pub fn start(&mut self, now: Time, links: &[LinkId], bytes: f64, token: u64) -> FlowId {
        debug_assert!(!links.is_empty());
        #[cfg(feature = "flow-dump")]
        let dump_at = (now, bytes);
        if self.prefetches_paths() {
            self.prefetch_path(links);
        }
        let flows = &self.flows;
        let id = if let Some(id) = self.free.pop(links[0], self.active_flows, |g| flows[g as usize].free_next) {
            // reuse the slot and its link buffer
            let f = &mut self.flows[id as usize];
            f.links.clear();
            // element by element: SmallVec's extend_from_slice is a generic insert (a memmove call)
            for &l in links {
                f.links.push(l);
            }
            f.remaining = bytes.max(0.0);
            f.last = now;
            f.version = f.version.wrapping_add(1);
            f.token = token;
            f.free_next = u32::MAX; // live: every link may bind (`Flow::bind`)
            let h = &mut self.hot[id as usize];
            h.rate = 0.0;
            h.mark = 0;
            self.wit[id as usize] = links[0];
            id
        } else {
            self.flows.push(Flow {
                links: FlowLinks::from_slice(links),
                remaining: bytes.max(0.0),
                last: now,
                version: 0,
                free_next: u32::MAX, // (`Flow::bind`)
                token,
                done: Completion::NEW,
            });
            self.hot.push(Hot::default());
            self.wit.push(links[0]);
            self.ends.push(Ends { doms: (NO_DOMS, 0), slot: [0; SLOTS] });
            self.gens.push(0);
            (self.flows.len() - 1) as FlowId
        };
        if self.cmark.len() <= id as usize {
            self.cmark.resize(id as usize + 1, 0);
        }
        let (term, doms) = self.dominators(links);
        self.ends[id as usize].doms = doms.stored(term);
        let use_dom = self.uses_dom();
        let FlowNet { links: ltab, bounds, slack_bits, ends, unslacked, .. } = self;
        let my_slots = &mut ends[id as usize].slot;
        for (j, &l) in links.iter().enumerate() {
            let was_slack =
                bounds_add(&mut bounds[l as usize], slack_bits, l as usize, doms.at(links, j), term, use_dom);
            let lk = &mut ltab[l as usize];
            if j < SLOTS {
                my_slots[j] = lk.flows.len() as u32;
            }
            lk.flows.push(id);
            if slack_in(slack_bits, l as usize) {
                lk.nmax = 0; // a slack link's largest rate is not kept
            } else if lk.flows.len() == 1 {
                // the new flow alone, at rate 0 (a link that was slack has its load again)
                lk.load = 0;
                lk.lmax = 0.0;
                lk.nmax = 1;
            } else if was_slack {
                unslacked.push(l); // its load and largest rate are not known: summed below
            } else if lk.nmax > 0 && lk.lmax == 0.0 {
                lk.nmax += 1;
            }
        }
        self.refresh_unslacked();
        self.dirty.extend_from_slice(links);
        if self.sharing != Sharing::Bottleneck {
            self.started.push(id);
        }
        self.active_flows += 1;
        #[cfg(feature = "flow-dump")]
        {
            let all = &self.links;
            self.dump.start(|l| all[l].cap, dump_at.0, id, links, dump_at.1);
        }
        id
    }

    /// `max-min-grouped` (whose flows are not in this net's tables): a flow on `links` joins the
    /// links' slack bounds, as `start`'s do.  Returns what its end gives back to
    /// `bounds_leave` (`Ends::doms`); the links whose slackness changed are appended to `turned`
    /// with their new state.
    pub(crate) fn bounds_join(&mut self, links: &[LinkId], turned: &mut Vec<(LinkId, bool)>) -> (u64, u64) {
        let (term, doms) = self.dominators(links);
        let use_dom = self.uses_dom();
        let FlowNet { bounds, slack_bits, .. } = self;
        for (j, &l) in links.iter().enumerate() {
            let was = bounds_add(&mut bounds[l as usize], slack_bits, l as usize, doms.at(links, j), term, use_dom);
            let now = slack_in(slack_bits, l as usize);
            if now != was {
                turned.push((l, now));
            }
        }
        doms.stored(term)
    }

    /// `max-min-grouped`: the flow of `bounds_join` leaves its links' bounds; `left(l)` is how
    /// many flows link `l` keeps without it.  The links whose slackness changed are appended
    /// to `turned`.
    pub(crate) fn bounds_leave(
        &mut self,
        links: &[LinkId],
        stored: (u64, u64),
        left: impl Fn(LinkId) -> usize,
        turned: &mut Vec<(LinkId, bool)>,
    ) {
        let (term, doms) = match stored {
            (NO_DOMS, _) => self.dominators(links),
            (t, mask) => (t, Doms::Mask(mask)),
        };
        let use_dom = self.uses_dom();
        let FlowNet { bounds, slack_bits, .. } = self;
        for (j, &l) in links.iter().enumerate() {
            let was =
                bounds_sub(&mut bounds[l as usize], slack_bits, l as usize, doms.at(links, j), term, left(l), use_dom);
            let now = slack_in(slack_bits, l as usize);
            if now != was {
                turned.push((l, now));
            }
        }
    }

    /// Removes a finished flow at `now`.
    pub fn finish(&mut self, id: FlowId) -> u64 {
        #[cfg(feature = "flow-dump")]
        self.dump.finish(id);
        if self.prefetches_paths() {
            self.prefetch_end(id);
        }
        let f = &mut self.flows[id as usize];
        debug_assert!(f.active());
        f.version = f.version.wrapping_add(1);
        let token = f.token;
        let rate = self.hot[id as usize].rate;
        let links = std::mem::take(&mut f.links);
        let (term, doms) = match self.ends[id as usize].doms {
            (NO_DOMS, _) => self.dominators(&links),
            (t, mask) => (t, Doms::Mask(mask)),
        };
        let use_dom = self.uses_dom();
        // the tables a flow's end updates, borrowed apart
        let FlowNet { links: ltab, bounds, slack_bits, ends, flows, unslacked, turned_slack, .. } = self;
        let my_slots = ends[id as usize].slot;
        for (j, &l) in links.iter().enumerate() {
            let lk = &mut ltab[l as usize];
            let left = lk.flows.len() - 1;
            let was_slack =
                bounds_sub(&mut bounds[l as usize], slack_bits, l as usize, doms.at(&links, j), term, left, use_dom);
            let v = &mut lk.flows;
            // its place in the link's list, as `start` or a later removal left it (a search
            // past the first `SLOTS` links of a path)
            let p = match my_slots.get(j) {
                Some(&p) if v.get(p as usize) == Some(&id) => Some(p as usize),
                _ => v.iter().position(|&x| x == id),
            };
            if let Some(p) = p {
                v.swap_remove(p);
                if let Some(&m) = v.get(p) {
                    // the link's last flow moved to `p`
                    if let Some(jm) = flows[m as usize].links.iter().position(|&x| x == l) {
                        if jm < SLOTS {
                            ends[m as usize].slot[jm] = p as u32;
                        }
                    }
                }
            }
            if lk.flows.is_empty() {
                lk.load = 0;
                lk.nmax = 0;
            } else if !was_slack {
                // kept through the change (the check reads the load a link had before it, and
                // a link that turns slack now keeps it exact until the solve)
                lk.load -= fx(rate);
                if lk.nmax > 0 && rate == lk.lmax {
                    lk.nmax -= 1;
                }
                if slack_in(slack_bits, l as usize) {
                    lk.nmax = 0;
                    turned_slack.push(l);
                }
            } else if !slack_in(slack_bits, l as usize) {
                unslacked.push(l);
            }
        }
        self.refresh_unslacked();
        self.dirty.extend_from_slice(&links);
        self.flows[id as usize].free_next = self.free.push(links[0], id);
        let mut links = links;
        links.clear(); // not live; the allocation is kept for the slot's next flow
        self.flows[id as usize].links = links;
        self.active_flows -= 1;
        token
    }

    /// Asks for the records a start or an end of a flow on `links` updates, link by link (the
    /// link and its bounds), before the updates begin: past the cache they are two misses a link,
    /// and asked for together they are outstanding at once rather than one after the other.  A
    /// hint only, and made only on a network of more than `PREFETCH_PATH_MIN_LINKS` links
    /// (`prefetches_paths`): on a smaller one the records stay in the cache and the asking is
    /// only instructions.
    #[inline(always)]
    fn prefetch_path(&self, links: &[LinkId]) {
        for &l in links {
            prefetch(self.links.as_ptr().wrapping_add(l as usize));
            prefetch(self.bounds.as_ptr().wrapping_add(l as usize));
        }
    }

    /// `prefetch_path` for the end of live flow `id`, with its `Ends` record first; then, from
    /// its links' records, its place in each link's list (its first `SLOTS` links) and the list's
    /// last entry, which moves into that place.
    #[inline(always)]
    fn prefetch_end(&self, id: FlowId) {
        prefetch(self.ends.as_ptr().wrapping_add(id as usize));
        let links = &self.flows[id as usize].links;
        self.prefetch_path(links);
        let slots = &self.ends[id as usize].slot;
        for (&l, &p) in links.iter().zip(slots) {
            let v = &self.links[l as usize].flows;
            prefetch(v.as_ptr().wrapping_add(p as usize));
            prefetch(v.as_ptr().wrapping_add(v.len().saturating_sub(1)));
        }
    }

    /// Do starts and ends ask for their links' records ahead (`prefetch_path`, `prefetch_end`)?
    #[inline(always)]
    fn prefetches_paths(&self) -> bool {
        #[cfg(test)]
        if self.no_prefetch {
            return false;
        }
        self.links.len() > PREFETCH_PATH_MIN_LINKS
    }

    /// Flow `id`'s completion record (see [`Completion`]).
    #[inline]
    pub(crate) fn completion(&mut self, id: FlowId) -> &mut Completion {
        &mut self.flows[id as usize].done
    }

    /// Flow `id`'s rate, bytes per ns.
    pub(crate) fn rate_of(&self, id: FlowId) -> f64 {
        self.hot[id as usize].rate
    }

    /// Flow slots (live or free): ids are below this.
    pub(crate) fn flow_slots(&self) -> FlowId {
        self.flows.len() as FlowId
    }

    /// Flow `id`'s links and bytes left at `now`, if it is live (a hand-off, `solver.rs`).
    pub(crate) fn live_at(&self, id: FlowId, now: Time) -> Option<(Vec<LinkId>, f64)> {
        let f = &self.flows[id as usize];
        if !f.active() {
            return None;
        }
        let left = (f.remaining - self.hot[id as usize].rate * span_f64(now - f.last)).max(0.0);
        Some((f.links.to_vec(), left))
    }

    /// Drops what starts and ends marked for the next solve (a hand-off has taken every flow).
    pub(crate) fn drop_pending_changes(&mut self) {
        debug_assert_eq!(self.active_flows, 0);
        self.dirty.clear();
        self.started.clear();
        self.turned_slack.clear();
        self.unslacked.clear();
    }

    pub fn is_current(&self, id: FlowId, version: u32) -> bool {
        let f = &self.flows[id as usize];
        f.active() && f.version == version
    }

    pub fn token(&self, id: FlowId) -> u64 {
        self.flows[id as usize].token
    }

    pub fn rate_bytes_per_s(&self, id: FlowId) -> f64 {
        self.hot[id as usize].rate * 1e9
    }

    pub fn has_dirty(&self) -> bool {
        !self.dirty.is_empty()
    }

    /// Re-solves every component touched since the last call; appends new finish times.
    /// They come in flow order, whichever way the solve went (so that a caller that schedules
    /// them as they come does the same for the incremental and the whole-component solve).
    pub fn resolve(&mut self, now: Time, out: &mut Vec<Reschedule>) {
        let from = out.len();
        self.resolve_any(now, out);
        self.order_reschedules(&mut out[from..]);
    }

    /// Puts one solve's new finish times (or some of them) in `resolve`'s order: by flow under
    /// exact max-min, as found under bottleneck sharing (whose one pass is the same either way)
    pub(crate) fn order_reschedules(&self, out: &mut [Reschedule]) {
        if self.sharing != Sharing::Bottleneck && out.len() > 1 {
            out.sort_unstable_by_key(|r| r.flow);
        }
    }

    /// The pull-aheads switched off: none, but in tests that ask (`FlowNet::off`)
    #[inline(always)]
    fn shortcuts(&self) -> Shortcuts {
        #[cfg(test)]
        return self.off;
        #[cfg(not(test))]
        Shortcuts::default()
    }

    /// As `resolve`, in the order the solve found them (`order_reschedules` then puts them, or
    /// the ones kept of them, in `resolve`'s order)
    #[inline(always)]
    pub(crate) fn resolve_any(&mut self, now: Time, out: &mut Vec<Reschedule>) {
        #[cfg(feature = "flow-dump")]
        {
            let links = &self.links;
            self.dump.resolve(now, &self.slack_bits, |l| links.get(l).map(|k| k.cap));
        }
        let before = out.len();
        self.resolve_with(now, out);
        self.turned_slack.clear();
        self.rerates += (out.len() - before) as u64;
    }

    /// `resolve_any`, but for the count of re-ratings
    #[inline(always)]
    fn resolve_with(&mut self, now: Time, out: &mut Vec<Reschedule>) {
        if self.sharing == Sharing::Bottleneck {
            self.resolve_bottleneck(now, out);
            return;
        }
        if self.dirty.is_empty() {
            self.started.clear();
            return;
        }
        if self.sharing == Sharing::MaxMin {
            if self.gather_small(self.epoch.wrapping_add(1)) {
                // small components: solved whole, from what the gathering found (no second walk)
                self.component_solves += 1;
                let starts = std::mem::take(&mut self.comp_starts);
                for k in 0..starts.len() {
                    let (l0, f0) = (starts[k].0 as usize, starts[k].1 as usize);
                    let (l1, f1) = match starts.get(k + 1) {
                        Some(&(l1, f1)) => (l1 as usize, f1 as usize),
                        None => (self.comp_links.len(), self.comp_flows.len()),
                    };
                    self.fill_component(l0..l1, f0..f1, now, out);
                }
                self.comp_starts = starts;
                self.dirty.clear();
                self.started.clear();
                self.epoch = self.epoch.wrapping_add(1);
                return;
            }
            if self.resolve_incremental(now, out) {
                return;
            }
            // links and flows were marked with this epoch: the solves below need a fresh one
            self.epoch = self.epoch.wrapping_add(1);
        }
        self.component_solves += 1;
        while let Some(seed) = self.dirty.pop() {
            if self.links[seed as usize].mark.get() == self.epoch.wrapping_add(1) {
                continue; // already solved in this call
            }
            self.solve_component(seed, now, out);
        }
        self.started.clear();
        self.epoch = self.epoch.wrapping_add(1);
    }

    #[inline]
    fn next_tick(&mut self) -> u32 {
        self.tick = self.tick.wrapping_add(1);
        if self.tick == 0 {
            self.tick = 1;
        }
        self.tick
    }

    /// Walking the flows `u` at place `i`: prefetches the record of the flow `2 * LINK_AHEAD`
    /// places on, and the records and `per_link` entries of the links of the one `LINK_AHEAD`
    /// places on (whose record was prefetched before).  A hint: changes nothing.
    #[inline(always)]
    fn prefetch_ahead<T>(&self, u: &[FlowId], i: usize, per_link: &[T]) {
        prefetch_entry(u, &self.flows, i + 2 * LINK_AHEAD);
        if let Some(&g) = u.get(i + LINK_AHEAD) {
            for &l in self.flows[g as usize].links.iter() {
                prefetch(self.links.as_ptr().wrapping_add(l as usize));
                prefetch(per_link.as_ptr().wrapping_add(l as usize));
            }
        }
    }

    /// Is link `l` saturated as committed (its `load`, before the solve under way)?  Only such a
    /// link can be a fixed flow's bottleneck.
    #[inline]
    fn saturated_before(&self, l: usize) -> bool {
        from_fx(self.links[l].load) >= self.links[l].cap * (1.0 - 1e-9)
    }

    /// Largest rate of link `l`'s flows as committed (before the solve under way), by a scan if
    /// not known.
    #[inline]
    fn lmax(&mut self, l: LinkId) -> f64 {
        let lk = &self.links[l as usize];
        if lk.nmax > 0 || lk.flows.is_empty() {
            return lk.lmax;
        }
        let (mut max, mut n) = (0.0f64, 0u32);
        let (flows, hot) = (&lk.flows[..], &self.hot[..]);
        for (k, &g) in flows.iter().enumerate() {
            prefetch_entry(flows, hot, k + HOT_AHEAD);
            let r = hot[g as usize].rate;
            if r > max {
                max = r;
                n = 1;
            } else if r == max {
                n += 1;
            }
        }
        if !self.slack(l as usize) {
            // (a slack link's is not kept: no re-rating would keep it up to date)
            let lk = &mut self.links[l as usize];
            lk.lmax = max;
            lk.nmax = n;
        }
        #[cfg(test)]
        {
            self.max_scanned += self.links[l as usize].flows.len() as u64;
        }
        max
    }

    /// Largest rate among link `l`'s flows not in U (not marked `mark`), cached in the round's
    /// stat of the link.
    #[inline]
    fn fmax(&mut self, l: LinkId, mark: u32) -> f64 {
        let st = self.link_stat[l as usize];
        if !st.fmax.is_nan() {
            return st.fmax;
        }
        // a fixed flow has the link's largest committed rate: that is the answer (if that rate is
        // not known, one scan for the fixed flows' largest finds it, not a scan for each)
        let lk = &self.links[l as usize];
        if lk.nmax > st.u_at_max {
            let lmax = lk.lmax;
            self.link_stat[l as usize].fmax = lmax;
            return lmax;
        }
        let mut max = 0.0f64;
        #[cfg(test)]
        {
            self.max_scanned += self.links[l as usize].flows.len() as u64;
        }
        let (flows, hot) = (&self.links[l as usize].flows[..], &self.hot[..]);
        for (k, &g) in flows.iter().enumerate() {
            prefetch_entry(flows, hot, k + HOT_AHEAD);
            let fl = &hot[g as usize];
            if fl.mark != mark && fl.rate > max {
                max = fl.rate;
            }
        }
        self.link_stat[l as usize].fmax = max;
        max
    }

    /// Does flow `f` at rate `r` have a bottleneck link: saturated, and no flow on it faster?
    /// Links of R have their stat for round `tick` (sum and U's largest rate with U's staged
    /// rates); any other link is as committed (its `load`).
    ///
    /// The flow's witness (`wit`: one of its links, the last found to be its bottleneck) is
    /// tried first: mostly it still is, and the answer then comes without reading the flow's
    /// record.  Otherwise every link is tried (the witness again among them: the same answer as
    /// trying them in order), and the one found becomes the witness.
    #[inline(always)]
    fn has_bottleneck(&mut self, f: FlowId, r: f64, mark: u32, tick: u32) -> bool {
        if self.is_bottleneck(self.wit[f as usize], r, mark, tick) {
            #[cfg(test)]
            {
                self.witness_hits += 1;
            }
            return true;
        }
        for j in 0..self.flows[f as usize].links.len() {
            let l = self.flows[f as usize].links[j];
            if self.is_bottleneck(l, r, mark, tick) {
                self.wit[f as usize] = l;
                self.bottleneck_moves += 1;
                return true;
            }
        }
        false
    }

    /// `has_bottleneck` for the flow `f` at place `i` in U, at its staged rate `r`, read from the
    /// round's values by place in R.  Every link of a U flow that can bind (not slack) is in R,
    /// at the places `upath` lists in path order, and its `RWork` holds what `is_bottleneck` reads
    /// of it in the check: the round's sum and U's largest rate (the stat the filling wrote), the
    /// capacity, and the largest committed rate with its count as the round began (nothing
    /// changes them before the check).  So the test reads dense tables, not the record and the
    /// stat of each link, scattered over tables of millions at scale; a link's fixed flows are
    /// still scanned by `fmax`, with its cache, where the same test needs them.  The same answer,
    /// witness and counts as `has_bottleneck`: the witness first (if it is one of those links;
    /// a slack one is no bottleneck), then the links in path order.
    #[inline(always)]
    fn u_has_bottleneck(&mut self, i: usize, f: FlowId, r: f64, mark: u32, tick: u32, rl: &[LinkId]) -> bool {
        #[cfg(test)]
        let before = self.wit[f as usize];
        #[cfg(not(test))]
        let _ = tick; // (the tests compare with the check by link of round `tick`)
        let found = self.u_has_bottleneck_by_place(i, f, r, mark, rl);
        #[cfg(test)]
        {
            // the test `has_bottleneck` would make, from each link's record and stat: the same
            // answer, and the same witness
            let l = self.wit[f as usize];
            let expect = [before]
                .into_iter()
                .chain(self.flows[f as usize].links.iter().copied())
                .find(|&l| self.bottleneck_by_record(l, r, mark, tick));
            assert_eq!(found, expect.is_some(), "flow {f}: the check by place differs from the one by link");
            if let Some(e) = expect {
                assert_eq!(l, e, "flow {f}: another witness than by link");
            }
        }
        found
    }

    /// Tests: the values a round reads of each R link by place are those its record gives now
    /// (as a round's set-up read them before they were kept by place).
    #[cfg(test)]
    fn assert_r_static(&mut self, rl: &[LinkId], ndirty: usize) {
        let scanned = self.max_scanned; // (not counted: the solve does not make these scans)
        for (i, &l) in rl.iter().enumerate() {
            let li = l as usize;
            let checked = i < ndirty || self.saturated_before(li);
            let lmax = if checked { self.lmax(l) } else { self.links[li].lmax };
            let lk = &self.links[li];
            let uam = if lk.nmax > 0 || lk.flows.is_empty() { 0 } else { u32::MAX };
            let w = &self.rw[i];
            assert_eq!((self.rcheck[i], self.ruam[i], w.nmax), (checked, uam, lk.nmax), "R link {l}");
            assert_eq!((w.lmax.to_bits(), w.cap.to_bits()), (lmax.to_bits(), lk.cap.to_bits()), "R link {l}");
        }
        self.max_scanned = scanned;
    }

    /// `is_bottleneck` without its side effects, for the tests' comparison above.
    #[cfg(test)]
    fn bottleneck_by_record(&self, l: LinkId, r: f64, mark: u32, tick: u32) -> bool {
        let li = l as usize;
        if self.slack(li) {
            return false;
        }
        let (lk, st) = (&self.links[li], &self.link_stat[li]);
        assert_eq!(st.tick, tick, "a U flow's link that can bind is in R");
        if st.sum < lk.cap * (1.0 - 1e-9) || r < st.umax * (1.0 - 1e-9) {
            return false;
        }
        if lk.nmax > 0 && r >= lk.lmax * (1.0 - 1e-9) {
            return true;
        }
        let fmax = lk.flows.iter().filter(|&&g| self.hot[g as usize].mark != mark).map(|&g| self.hot[g as usize].rate);
        r >= fmax.fold(0.0, f64::max) * (1.0 - 1e-9)
    }

    #[inline(always)]
    fn u_has_bottleneck_by_place(&mut self, i: usize, f: FlowId, r: f64, mark: u32, rl: &[LinkId]) -> bool {
        let (a, b) = (self.upath_at[i] as usize, self.upath_at[i + 1] as usize);
        let w = self.wit[f as usize];
        if let Some(j) = (a..b).find(|&j| rl[self.upath[j] as usize] == w) {
            if self.r_is_bottleneck(self.upath[j], r, mark, rl) {
                #[cfg(test)]
                {
                    self.witness_hits += 1;
                }
                return true;
            }
        }
        for j in a..b {
            let k = self.upath[j];
            if self.r_is_bottleneck(k, r, mark, rl) {
                self.wit[f as usize] = rl[k as usize];
                self.bottleneck_moves += 1;
                return true;
            }
        }
        false
    }

    /// `is_bottleneck` of the R link at place `k`, from its `RWork` (`u_has_bottleneck`).
    #[inline(always)]
    fn r_is_bottleneck(&mut self, k: u32, r: f64, mark: u32, rl: &[LinkId]) -> bool {
        let w = &self.rw[k as usize];
        if w.sum < w.cap * (1.0 - 1e-9) || r < w.umax * (1.0 - 1e-9) {
            return false;
        }
        if w.nmax > 0 && r >= w.lmax * (1.0 - 1e-9) {
            return true;
        }
        r >= self.fmax(rl[k as usize], mark) * (1.0 - 1e-9)
    }

    /// Is link `l` a bottleneck of a flow at rate `r` on it (saturated, no flow on it faster)?
    /// (`has_bottleneck`'s test of one link)
    #[inline(always)]
    fn is_bottleneck(&mut self, l: LinkId, r: f64, mark: u32, tick: u32) -> bool {
        if self.slack(l as usize) {
            return false;
        }
        let cap = self.links[l as usize].cap;
        let st = &mut self.link_stat[l as usize];
        if st.tick != tick {
            *st = LinkStat {
                tick,
                sum: from_fx(self.links[l as usize].load),
                umax: 0.0,
                fmax: f64::NAN,
                u_at_max: 0,
                pull: f64::INFINITY,
            };
        }
        if st.sum < cap * (1.0 - 1e-9) || r < st.umax * (1.0 - 1e-9) {
            return false;
        }
        // no flow was faster than `r` before the solve: no fixed flow is
        let lk = &self.links[l as usize];
        if lk.nmax > 0 && r >= lk.lmax * (1.0 - 1e-9) {
            return true;
        }
        r >= self.fmax(l, mark) * (1.0 - 1e-9)
    }

    /// Progressive filling's next level: drops the links with no unfrozen flow left from `live` and
    /// returns the smallest fair share of the capacity left among the others (infinite if none).
    fn smallest_share(&self, live: &mut Vec<LinkId>) -> f64 {
        live.retain(|&l| self.lw[l as usize].n > 0);
        let mut share = f64::INFINITY;
        for &l in live.iter() {
            let sh = self.lw[l as usize].rem / self.lw[l as usize].n as f64;
            if sh < share {
                share = sh;
            }
        }
        share
    }

    /// Progressive filling over the links in `live` (`lw`: `rem` and `n`, the capacity left and
    /// the count of flows still to rate): raises the rates of all unrated flows together and, at
    /// each level, rates the flows of every link whose fair share is the smallest (within 1e-9).
    /// A flow of such a link is one to rate now if its `cmark` is `unrated` (then `rated`, and the
    /// link becomes its witness), and `take(f, flow, hot, share)` records its rate; `left` is how
    /// many flows are to be rated.  Each link's `lw.fixed` gains the fixed-point rate of every
    /// flow rated on it.
    ///
    /// Each level is a pass over the live links for the smallest share and one more that visits
    /// them in `live`'s order; with more than `FILL_HEAP_MIN` links the levels come from a heap
    /// instead (`progressive_fill_heap`: the same levels, links and order, so the same rates to
    /// the bit).
    fn progressive_fill(
        &mut self,
        live: &mut Vec<LinkId>,
        mut left: usize,
        unrated: u32,
        rated: u32,
        mut take: impl FnMut(FlowId, &mut Flow, &mut Hot, f64),
    ) {
        #[cfg(test)]
        let by_passes = self.fill_by_passes;
        #[cfg(not(test))]
        let by_passes = false;
        if live.len() > FILL_HEAP_MIN && !by_passes {
            #[cfg(test)]
            {
                self.heap_fills += 1;
            }
            self.progressive_fill_heap(live, left, unrated, rated, take);
            return;
        }
        while left > 0 {
            let share = self.smallest_share(live);
            if !share.is_finite() {
                break;
            }
            let n = self.fill_level(live, share, unrated, rated, &mut take);
            if n == 0 {
                break;
            }
            left -= n;
        }
    }

    /// `progressive_fill` over many links: the smallest share comes from a heap of the links'
    /// shares (keys are lower bounds: a link's share only grows as flows are rated, since a flow
    /// is rated at the level, the smallest share; an entry found stale is re-keyed), and a level
    /// visits the links whose share was within 1e-9 of it when it began, in `live`'s order.
    ///
    /// The same as the passes, to the bit: the smallest share is the same number; a link whose
    /// share is above the level's bound when it begins stays above it through the level (its
    /// share can only grow: rating one of its `n` flows at the level `s` below its share `c`
    /// moves it to `c + (c - s) / (n - 1)`), so the passes' visit skips it as the heap does; and
    /// the links that can be rated are visited in the same order and tested as they are then.
    /// Where the passes cost (levels) x (live links) -- a whole-component solve of a halo's first
    /// exchange: 2,061 levels over 35,548 links at 16,384 ranks, 11,686 over 142,024 at 65,536 --
    /// this costs a heap operation per link per change of its share.
    fn progressive_fill_heap(
        &mut self,
        live: &[LinkId],
        mut left: usize,
        unrated: u32,
        rated: u32,
        mut take: impl FnMut(FlowId, &mut Flow, &mut Hot, f64),
    ) {
        let mut heap = std::mem::take(&mut self.heap).into_vec();
        heap.clear();
        for (i, &l) in live.iter().enumerate() {
            let w = &mut self.lw[l as usize];
            // its place in `live`: a level visits its links in that order
            w.off = i as u32;
            if w.n > 0 {
                heap.push(std::cmp::Reverse(((w.rem / w.n as f64).to_bits(), l, l)));
            }
        }
        let mut heap = std::collections::BinaryHeap::from(heap);
        let mut visit = std::mem::take(&mut self.visit);
        while left > 0 {
            let Some((key, _)) = least_share(&mut heap, &self.lw, u64::MAX) else {
                break;
            };
            let share = f64::from_bits(key);
            if !share.is_finite() {
                break;
            }
            // the links within the level's bound as it begins (the passes' test, on the same
            // numbers), in `live`'s order
            let below = (share + share * 1e-9).to_bits();
            visit.clear();
            while let Some((_, l)) = pop_least(&mut heap, &self.lw, below) {
                visit.push(l);
            }
            let lw = &self.lw;
            visit.sort_unstable_by_key(|&l| lw[l as usize].off);
            let n = self.fill_level(&visit, share, unrated, rated, &mut take);
            // links of the level left with flows to rate (their share grew past the bound before
            // their visit) go back
            for &l in &visit {
                let w = &self.lw[l as usize];
                if w.n > 0 {
                    heap.push(std::cmp::Reverse(((w.rem / w.n as f64).to_bits(), l, l)));
                }
            }
            if n == 0 {
                break;
            }
            left -= n;
        }
        self.visit = visit;
        self.heap = heap;
    }

    /// One level of progressive filling at `share`: visits the links `visit` in order and, at
    /// each whose fair share (as it is at its visit) is within `share * 1e-9` of `share`, rates
    /// its unrated flows (`progressive_fill`).  Returns how many flows it rated.
    fn fill_level(
        &mut self,
        visit: &[LinkId],
        share: f64,
        unrated: u32,
        rated: u32,
        take: &mut impl FnMut(FlowId, &mut Flow, &mut Hot, f64),
    ) -> usize {
        let tol = share * 1e-9;
        let mut count = 0usize;
        // the tables the level reads and writes, borrowed apart: a link's flow list is read as
        // one slice while its flows are rated
        let FlowNet { links, flows, hot, wit, cmark, lw, slack_bits, .. } = self;
        for &l in visit {
            let n = lw[l as usize].n;
            if n == 0 || lw[l as usize].rem / n as f64 > share + tol {
                continue;
            }
            let sfx = fx(share);
            let lf: &[FlowId] = &links[l as usize].flows;
            let nf = lf.len();
            for k in 0..nf {
                if lw[l as usize].n == 0 {
                    break; // every flow of the link is rated: the rest of its list was before
                }
                // (a list too short to look ahead in, the usual one, costs one test per flow)
                if k + AHEAD < nf {
                    // the mark of a flow twice as far on, which the test below reads
                    prefetch_entry(lf, cmark, k + 2 * AHEAD);
                    // a flow to rate a few places on: its record (both lines) and its rate
                    let g = lf[k + AHEAD] as usize;
                    if cmark[g] == unrated {
                        let p: *const Flow = &flows[g];
                        prefetch(p);
                        prefetch((p as *const u8).wrapping_add(64));
                        prefetch(&hot[g]);
                    }
                }
                let f = lf[k];
                if cmark[f as usize] != unrated {
                    continue;
                }
                cmark[f as usize] = rated;
                wit[f as usize] = l;
                let fl = &mut flows[f as usize];
                take(f, fl, &mut hot[f as usize], share);
                count += 1;
                for &l2 in fl.links.iter() {
                    let l2 = l2 as usize;
                    if slack_in(slack_bits, l2) {
                        continue;
                    }
                    let w = &mut lw[l2];
                    w.rem = (w.rem - share).max(0.0);
                    w.n -= 1;
                    w.fixed += sfx;
                }
            }
        }
        count
    }

    /// Progressive filling of the U flows over the R links (`rw`, by place in R: `rem` / `n`
    /// hold the capacity left by the other flows and the count of U flows), all by place: a U
    /// flow is its place in U, its links the places in R of its links that are not slack
    /// (`upath`).
    ///
    /// The same levels as `progressive_fill`, without scanning: each R link gets the list of its
    /// U flows (a link of a spine carries thousands of flows, a handful of them in U), and the
    /// next level comes from a heap of the links' fair shares (updated as flows are rated)
    /// instead of a pass over every live link.  At a level (the smallest share `s`), every link
    /// whose share is within `s * 1e-9` of it rates its unrated U flows at `s` (`ustaged`).
    /// Rating a flow also adds its staged rate to its links' check stats (`RWork::sum`, `umax`,
    /// `u_at_max`, set for the round), in the same visit of its links; they are then written to
    /// the R links' `link_stat` for round `tick`.
    fn fill_u(&mut self, total: u32, tick: u32, rl: &[LinkId]) {
        let fill = self.next_tick();
        let mut ulist = std::mem::take(&mut self.ulist);
        ulist.clear();
        ulist.resize(total as usize, 0);
        let nu = self.upath_at.len() - 1;
        {
            let FlowNet { rw, upath, upath_at, .. } = &mut *self;
            for i in 0..nu {
                for &k in &upath[upath_at[i] as usize..upath_at[i + 1] as usize] {
                    let p = &mut rw[k as usize].pos;
                    ulist[*p as usize] = i as u32;
                    *p += 1;
                }
            }
        }
        let mut heap = std::mem::take(&mut self.heap);
        let mut left = nu;
        while left > 0 {
            let Some((key, first)) = pop_least(&mut heap, &self.rw, u64::MAX) else {
                break;
            };
            let share = f64::from_bits(key);
            let below = (share + share * 1e-9).to_bits();
            let mut k = first;
            let FlowNet { rw, uold, ustaged, urated, upath, upath_at, .. } = &mut *self;
            loop {
                let off = rw[k as usize].off as usize;
                let end = rw[k as usize].pos as usize;
                for &i in &ulist[off..end] {
                    let i = i as usize;
                    if urated[i] == fill {
                        continue;
                    }
                    urated[i] = fill;
                    ustaged[i] = share;
                    left -= 1;
                    let old = uold[i];
                    // its links: the filling's values, and the check's stat with its staged rate
                    for &k2 in &upath[upath_at[i] as usize..upath_at[i + 1] as usize] {
                        let w = &mut rw[k2 as usize];
                        w.rem = (w.rem - share).max(0.0);
                        w.n -= 1;
                        w.sum += share;
                        if share > w.umax {
                            w.umax = share;
                        }
                        if old == w.lmax && w.u_at_max != u32::MAX {
                            w.u_at_max += 1;
                        }
                    }
                }
                match pop_least(&mut heap, rw, below) {
                    Some((_, k2)) => k = k2,
                    None => break,
                }
            }
        }
        // every U flow is rated: each is on an R link with U flows, which leaves the heap only
        // once its U flows are rated
        debug_assert_eq!(left, 0);
        self.ulist = ulist;
        self.heap = heap;
        // the check reads the R links' stats by link
        let FlowNet { rw, link_stat, .. } = &mut *self;
        for (k, &l) in rl.iter().enumerate() {
            let w = &rw[k];
            link_stat[l as usize] =
                LinkStat { tick, sum: w.sum, umax: w.umax, fmax: f64::NAN, u_at_max: w.u_at_max, pull: f64::INFINITY };
        }
    }

    /// The incremental exact max-min solve (module docs).  Commits and returns true when the
    /// check holds with U at most a quarter of the flows (at least 64); otherwise changes no rate
    /// and returns false.
    ///
    /// U starts as the flows started since the last solve; R is the dirty links (a flow started
    /// or ended there) and the links of U.  Each round: the capacity the fixed flows leave on R
    /// (`load` less U's committed rates: no link is summed), progressive filling of U over it,
    /// then the check.  A U flow without a bottleneck pulls in the faster fixed flows of its
    /// saturated links.  A fixed flow can only lose its bottleneck on an R link that is no longer
    /// saturated or now carries a U flow faster than every fixed flow: only then are that link's
    /// fastest fixed flows (the ones it can have been the bottleneck of) checked.
    fn resolve_incremental(&mut self, now: Time, out: &mut Vec<Reschedule>) -> bool {
        let mark = self.epoch.wrapping_add(1);
        let mut u = std::mem::take(&mut self.u_flows);
        let mut rl = std::mem::take(&mut self.r_links);
        let mut pulls = std::mem::take(&mut self.pulls);
        u.clear();
        rl.clear();
        self.rw.clear();
        self.uold.clear();
        self.ustaged.clear();
        self.urated.clear();
        self.upath.clear();
        self.upath_at.clear();
        self.upath_at.push(0);
        for i in 0..self.started.len() {
            let f = self.started[i];
            let h = &mut self.hot[f as usize];
            if self.flows[f as usize].active() && h.mark != mark {
                h.mark = mark;
                u.push(f);
            }
        }
        // a dirty link that is slack now, and was before the change, was no flow's bottleneck and
        // can be none now: not in R (nor is its load kept, `refresh_link`).  One that a finish
        // made slack is, with the load it had until then
        for i in 0..self.dirty.len() + self.turned_slack.len() {
            // a link is dirty once per flow started or ended on it: visit it once
            let l = match self.dirty.get(i) {
                Some(&l) if self.slack(l as usize) => continue,
                Some(&l) => l,
                None => self.turned_slack[i - self.dirty.len()],
            };
            let lk = &self.links[l as usize];
            if lk.mark.get() != mark {
                lk.mark.set(mark);
                self.rpos[l as usize] = rl.len() as u32;
                rl.push(l);
                self.rw.push(RWork { fixed: lk.load, ..RWork::default() });
            }
        }
        // R's first links are the dirty ones: on the others, `load` is still the sum before the
        // solve, and a link that was not saturated then was nobody's bottleneck
        let ndirty = rl.len();
        let limit = (self.active_flows / 4).max(64);
        // A flow started on a saturated link finds no capacity left there: the check would fail
        // it and pull in every faster flow of the link, i.e. all of them, one round later.  They
        // join U now (any U gives the max-min rates once the check holds; this one saves a round)
        self.pull_from_saturated(&mut u, 0, mark, Pull::All, limit);
        if u.is_empty() && !self.shortcuts().pull_ended {
            // no flow started: flows ended (most changes of an all-to-all).  The flows their
            // links were the bottleneck of join U now, not after a first round that would only
            // check them (`pull_from_ended`)
            self.pull_from_ended(&mut u, &rl[..ndirty], mark);
        }
        let mut linked = 0;
        // R's links whose round values (`rw`, `rcheck`, `ruam`) are set
        let mut rinit = 0;
        self.rcheck.clear();
        self.ruam.clear();
        let ok = loop {
            self.incremental_rounds += 1;
            if u.len() > limit {
                break false;
            }
            // U's new flows: their links join R, their committed rates leave the capacity the
            // fixed flows take there (`RWork::fixed`: `load` less U's rates, exact in fixed point,
            // so the same whatever the order), and they count among the link's U flows
            for i in linked..u.len() {
                self.prefetch_ahead(&u, i, &self.rpos);
                let FlowNet { links, flows, hot, rw, rpos, slack_bits, uold, ustaged, urated, upath, upath_at, .. } =
                    &mut *self;
                let f = u[i];
                let rate = hot[f as usize].rate;
                uold.push(rate);
                ustaged.push(0.0);
                urated.push(0);
                let r = fx(rate);
                let fl = &flows[f as usize];
                let mut clear = 0u32;
                for j in binding_places(fl.links.len(), fl.bind()) {
                    let l = fl.links[j] as usize;
                    if slack_in(slack_bits, l) {
                        if j < 32 {
                            clear |= 1 << j; // (`Flow::bind`)
                        }
                        continue; // never binds: not in R (a dirty one is, without U's rates)
                    }
                    let lk = &links[l];
                    if lk.mark.get() != mark {
                        lk.mark.set(mark);
                        rpos[l] = rl.len() as u32;
                        rl.push(l as LinkId);
                        rw.push(RWork { fixed: lk.load, ..RWork::default() });
                    }
                    let k = rpos[l];
                    let w = &mut rw[k as usize];
                    w.fixed -= r;
                    w.u += 1;
                    upath.push(k);
                }
                if clear != 0 {
                    flows[f as usize].free_next &= !clear;
                }
                upath_at.push(upath.len() as u32);
            }
            linked = u.len();
            // per R link: the capacity left to U, where its U flows go in the filling's lists,
            // its fair share in the filling's heap, and its check stat (sum of the fixed rates
            // so far; U's staged rates are added after the filling)
            let tick = self.next_tick();
            let mut total = 0u32;
            // R's links new since the last round: what the rounds read of a link that the solve
            // does not change, from its record, once (the capacity; whether the check looks at
            // its fixed flows; the largest committed rate and its count, as `lmax` finds them:
            // committed rates do not move before the commit, and nothing else finds a largest
            // rate for an R link after its first round)
            for i in rinit..rl.len() {
                let l = rl[i];
                let li = l as usize;
                // the largest committed rate, where the check of fixed flows reads it: on a dirty
                // link or one saturated before the change.  On another (a PCIe or a fat-tree
                // link of a U flow, mostly) it is found only if a check needs it, by `fmax`'s
                // one scan, and its U flows at that rate are not counted (`u32::MAX`)
                // (a dirty link that a finish made slack: its largest rate is found by a scan and
                // not kept)
                let checked = i < ndirty || self.saturated_before(li);
                let lmax = if checked { self.lmax(l) } else { self.links[li].lmax };
                let lk = &self.links[li];
                self.rcheck.push(checked);
                self.ruam.push(if lk.nmax > 0 || lk.flows.is_empty() { 0 } else { u32::MAX });
                let w = &mut self.rw[i];
                w.lmax = lmax;
                w.cap = lk.cap;
                w.nmax = lk.nmax;
            }
            rinit = rl.len();
            #[cfg(test)]
            self.assert_r_static(&rl, ndirty);
            // the filling's heap of fair shares, built at once from R's entries (linear, where a
            // push each is R log R; the entries are distinct, so the heap pops them in one order
            // however it was built); by place, without reading a link's record
            let mut shares = std::mem::take(&mut self.heap).into_vec();
            shares.clear();
            for i in 0..rl.len() {
                let w = &mut self.rw[i];
                let n = w.u;
                let fixed = from_fx(w.fixed);
                let rem = (w.cap - fixed).max(0.0);
                w.n = n;
                w.rem = rem;
                w.off = total;
                w.pos = total;
                w.sum = fixed;
                w.umax = 0.0;
                w.u_at_max = self.ruam[i];
                total += n;
                if n > 0 {
                    shares.push(std::cmp::Reverse(((rem / n as f64).to_bits(), rl[i], i as u32)));
                }
            }
            self.heap = std::collections::BinaryHeap::from(shares);
            self.fill_u(total, tick, &rl);
            // check: U flows, then the fixed flows that can have lost their bottleneck
            let before = u.len();
            pulls.clear();
            for i in 0..before {
                let f = u[i];
                let r = self.ustaged[i];
                if self.u_has_bottleneck(i, f, r, mark, tick, &rl) {
                    continue;
                }
                // a faster fixed flow shares f's saturated link: it joins U (each such link is
                // scanned once, below, for the flows faster than its slowest failing U flow)
                let (n, bind) = (self.flows[f as usize].links.len(), self.flows[f as usize].bind());
                for j in binding_places(n, bind) {
                    let l = self.flows[f as usize].links[j] as usize;
                    if self.slack(l) || self.link_stat[l].sum < self.links[l].cap * (1.0 - 1e-9) {
                        continue;
                    }
                    let st = &mut self.link_stat[l];
                    if st.pull == f64::INFINITY {
                        pulls.push(l as LinkId);
                    }
                    st.pull = st.pull.min(r);
                }
            }
            for &l in &pulls {
                if u.len() > limit {
                    break; // fails at the next round's start (U only grows): no need to go on
                }
                let top = self.link_stat[l as usize].pull * (1.0 + 1e-9);
                let (flows, hot) = (&self.links[l as usize].flows[..], &mut self.hot[..]);
                for (k, &g) in flows.iter().enumerate() {
                    prefetch_entry(flows, hot, k + HOT_AHEAD);
                    let fl = &mut hot[g as usize];
                    if fl.mark != mark && fl.rate > top {
                        fl.mark = mark;
                        u.push(g);
                    }
                }
            }
            let seen = self.next_tick();
            for li in 0..rl.len() {
                if u.len() > limit {
                    break; // as above: U has grown (so the round does not end the loop) past the limit
                }
                let l = rl[li];
                #[cfg(test)]
                {
                    // the values by place are those of the link's record and stat
                    let (st, lk, w) = (self.link_stat[l as usize], &self.links[l as usize], &self.rw[li]);
                    assert_eq!(self.rcheck[li], li < ndirty || self.saturated_before(l as usize));
                    assert_eq!(st.tick, tick);
                    assert_eq!(
                        (st.sum.to_bits(), st.umax.to_bits(), st.u_at_max),
                        (w.sum.to_bits(), w.umax.to_bits(), w.u_at_max)
                    );
                    assert_eq!((lk.cap.to_bits(), lk.nmax), (w.cap.to_bits(), w.nmax));
                }
                if !self.rcheck[li] {
                    continue; // not saturated before the change: no fixed flow's bottleneck
                }
                // a fixed flow it was the bottleneck of had the link's largest rate (`lmax`, as
                // committed): it keeps it if the link is still saturated and no U flow is faster.
                // (The link's round values by place: its stat's sum, U's largest rate and count
                // at `lmax` are its `RWork`'s, as are its capacity and `nmax`, unchanged since
                // the round began)
                let w = self.rw[li];
                let lmax = w.lmax;
                if w.sum >= w.cap * (1.0 - 1e-9) && w.umax <= lmax {
                    continue;
                }
                if w.u_at_max >= w.nmax && self.fmax(l, mark) < lmax * (1.0 - 1e-9) {
                    continue; // every flow at the top is in U: no fixed flow had it as bottleneck
                }
                let top = lmax * (1.0 - 1e-9);
                for k in 0..self.links[l as usize].flows.len() {
                    if let Some(&g) = self.links[l as usize].flows.get(k + HOT_AHEAD) {
                        // its rate and marks, and its witness (the check's first read)
                        prefetch(self.hot.as_ptr().wrapping_add(g as usize));
                        prefetch(self.wit.as_ptr().wrapping_add(g as usize));
                    }
                    let g = self.links[l as usize].flows[k];
                    let fl = &mut self.hot[g as usize];
                    if fl.mark == mark || fl.seen == seen || fl.rate < top {
                        continue;
                    }
                    fl.seen = seen;
                    let r = fl.rate;
                    if !self.has_bottleneck(g, r, mark, tick) {
                        self.hot[g as usize].mark = mark;
                        u.push(g);
                    }
                }
            }
            // (past `limit`, the function pulls nothing and the next round fails)
            if !self.shortcuts().pull_ahead && u.len() > before {
                // two rings: the flows the check found pull theirs, and those pull theirs once
                let ring = u.len();
                self.pull_from_saturated(&mut u, before, mark, Pull::Bottlenecked, limit);
                if !self.shortcuts().second_ring && u.len() > ring {
                    self.pull_from_saturated(&mut u, ring, mark, Pull::Bottlenecked, limit);
                }
            }
            if u.len() == before {
                break true;
            }
        };
        if ok {
            self.solves += 1;
            self.incremental_solves += 1;
            let before = out.len();
            // a fresh tick marks the bottleneck links counted (the round's stats are not read
            // after the check)
            let seen = self.next_tick();
            let mut groups = 0;
            let FlowNet { links, flows, hot, wit, link_stat, ustaged, slack_bits, .. } = &mut *self;
            for (i, &f) in u.iter().enumerate() {
                let fl = &mut flows[f as usize];
                let rate = &mut hot[f as usize].rate;
                let old = *rate;
                let r = ustaged[i];
                fl.rerate(rate, f, now, r, out);
                let new = *rate;
                if new != old {
                    let st = &mut link_stat[wit[f as usize] as usize];
                    if st.tick != seen {
                        st.tick = seen;
                        groups += 1;
                    }
                    let d = fx(new) - fx(old);
                    let mut clear = 0u32;
                    for j in binding_places(fl.links.len(), fl.bind()) {
                        let l = fl.links[j];
                        if slack_in(slack_bits, l as usize) {
                            if j < 32 {
                                clear |= 1 << j; // (`Flow::bind`)
                            }
                            continue; // a slack link's load is not kept (`refresh_link`)
                        }
                        let lk = &mut links[l as usize];
                        lk.load += d;
                        lk.rate_moved(old, new);
                    }
                    if clear != 0 {
                        fl.free_next &= !clear;
                    }
                }
            }
            self.incremental_rerates += (out.len() - before) as u64;
            self.rerate_bottlenecks += groups;
            self.dirty.clear();
            self.started.clear();
            self.epoch = mark;
        }
        self.u_flows = u;
        self.r_links = rl;
        self.pulls = pulls;
        ok
    }

    /// The flows `u[from..]` have just joined U: the flows of their saturated links that `which`
    /// names join it too (each link once), until U is past `limit` (the attempt then fails).
    ///
    /// * `Pull::All`, for the flows started since the last solve: a started flow finds no
    ///   capacity left on a saturated link, so the check would pull in every faster flow of the
    ///   link, i.e. all of them, a round later.
    /// * `Pull::Bottlenecked`, after each round's check, for the flows that joined U in it:
    ///   each will change its rate, so the flows that one of their saturated links is the
    ///   bottleneck of (as committed: the link's fastest flows, at its `lmax`) will too.  The
    ///   check would find them a round later, and a round re-fills and re-checks all of U (a
    ///   cascade across the saturated NICs of a large halo took 5-7 rounds).  The check's flows
    ///   pull one ring, and that ring pulls one more; the flows of the second pull no others (a
    ///   closure could take in the whole component: three or more rings pulled more flows than
    ///   they saved rounds on the 16,384-rank halo); links of more than `PULL_AHEAD_MAX_FLOWS`
    ///   are left to the check.
    ///
    /// Any U gives the max-min rates once the check holds: this changes no rate, only how many
    /// rounds it takes.  A fresh tick marks the links seen here: the round's stats are not read
    /// after the check (the next round sets its R links' stats, and a link's other stat is reset
    /// by its tick).
    fn pull_from_saturated(&mut self, u: &mut Vec<FlowId>, from: usize, mark: u32, which: Pull, limit: usize) {
        let seen = self.next_tick();
        let end = u.len();
        for i in from..end {
            if u.len() > limit {
                break;
            }
            self.prefetch_ahead(&u[..end], i, &self.link_stat);
            let f = u[i];
            let (n, bind) = (self.flows[f as usize].links.len(), self.flows[f as usize].bind());
            for j in binding_places(n, bind) {
                let l = self.flows[f as usize].links[j] as usize;
                if self.slack(l) || self.link_stat[l].tick == seen {
                    continue; // (a slack link is not saturated)
                }
                self.link_stat[l].tick = seen;
                if !self.saturated_before(l) {
                    continue;
                }
                let top = match which {
                    Pull::All => f64::NEG_INFINITY,
                    Pull::Bottlenecked if self.links[l].flows.len() > PULL_AHEAD_MAX_FLOWS => continue,
                    Pull::Bottlenecked => self.lmax(l as LinkId) * (1.0 - 1e-9),
                };
                let (flows, hot) = (&self.links[l].flows[..], &mut self.hot[..]);
                for (k, &g) in flows.iter().enumerate() {
                    prefetch_entry(flows, hot, k + HOT_AHEAD);
                    let fl = &mut hot[g as usize];
                    if fl.mark != mark && fl.rate >= top {
                        fl.mark = mark;
                        u.push(g);
                    }
                }
            }
        }
    }

    /// A change where flows only ended: on each of `dirty` (the links where they ended), the
    /// flows it was the bottleneck of -- at its largest rate, with the link as their witness --
    /// join U.  The link has lost a flow, so it is no longer saturated and they will change rate
    /// (unless a tie gives one another bottleneck: then it is re-rated at the rate it had).
    /// Without this, U starts empty and the first round only finds them, by checking each of
    /// the link's fastest flows for another bottleneck (1,024-rank all-to-all: 85 % of the
    /// changes, and 92 % of them took a second round).  Links of more than
    /// `PULL_AHEAD_MAX_FLOWS` are left to the check, as in `pull_from_saturated`.  Any U gives
    /// the max-min rates once the check holds: this changes no rate, only the rounds.
    fn pull_from_ended(&mut self, u: &mut Vec<FlowId>, dirty: &[LinkId], mark: u32) {
        for &l in dirty {
            let li = l as usize;
            let n = self.links[li].flows.len();
            if n == 0 || n > PULL_AHEAD_MAX_FLOWS || self.slack(li) {
                continue;
            }
            let top = self.lmax(l) * (1.0 - 1e-9);
            let (flows, hot, wit) = (&self.links[li].flows[..], &mut self.hot[..], &self.wit[..]);
            for (k, &g) in flows.iter().enumerate() {
                prefetch_entry(flows, hot, k + HOT_AHEAD);
                let fl = &mut hot[g as usize];
                if fl.mark != mark && fl.rate >= top && wit[g as usize] == l {
                    fl.mark = mark;
                    u.push(g);
                }
            }
        }
    }

    fn resolve_bottleneck(&mut self, now: Time, out: &mut Vec<Reschedule>) {
        let mark = self.epoch.wrapping_add(1);
        self.solves += 1;
        // first the new share of every dirty link (once each, in the order they are visited), so
        // that a re-rated flow reads its links' shares instead of dividing for each
        let mut changed = std::mem::take(&mut self.changed);
        changed.clear();
        while let Some(l) = self.dirty.pop() {
            let lk = &mut self.links[l as usize];
            if lk.mark.get() == mark {
                continue;
            }
            lk.mark.set(mark);
            let n = lk.flows.len();
            let share = if n == 0 { f64::INFINITY } else { lk.cap / n as f64 };
            let old = std::mem::replace(&mut self.last_share[l as usize], share);
            if n > 0 {
                changed.push((l, old));
            }
        }
        // split borrows: the scan walks each link's flow list as one slice
        let (links, flows, hot, last_share) = (&self.links, &mut self.flows, &mut self.hot, &self.last_share);
        for &(l, old_share) in &changed {
            let share = last_share[l as usize];
            for &f in links[l as usize].flows.iter() {
                let h = &mut hot[f as usize];
                if h.mark == mark {
                    continue;
                }
                // a flow whose rate came from another link and stays below this link's new share
                // keeps it (its other links are unchanged, or dirty and visited on their own)
                if h.rate > 0.0 && h.rate <= share && h.rate != old_share {
                    continue;
                }
                h.mark = mark;
                let fl = &mut flows[f as usize];
                // its smallest fair share (capacity / flows) among its links
                let mut r = f64::INFINITY;
                for &l2 in fl.links.iter() {
                    let sh = last_share[l2 as usize];
                    if sh < r {
                        r = sh;
                    }
                }
                fl.rerate(&mut h.rate, f, now, r, out);
            }
        }
        self.changed = changed;
        self.epoch = mark;
    }

    fn solve_component(&mut self, seed: LinkId, now: Time, out: &mut Vec<Reschedule>) {
        let mark = self.epoch.wrapping_add(1);
        self.comp_links.clear();
        self.comp_flows.clear();
        self.gather_component(seed, mark, usize::MAX);
        self.fill_component(0..self.comp_links.len(), 0..self.comp_flows.len(), now, out);
    }

    /// Appends the links and flows of `seed`'s component (not yet marked `mark`) to `comp_links`
    /// and `comp_flows`, marking them `mark` (links' `mark`, flows' `cmark`), by a depth-first
    /// walk from `seed`.  Stops and returns false as soon as `comp_flows` holds more than `limit`
    /// flows or a link of more than `limit` flows is reached (the walk is then incomplete).
    fn gather_component(&mut self, seed: LinkId, mark: u32, limit: usize) -> bool {
        // the tables the walk reads and writes, borrowed apart: a link's flow list is read as one
        // slice while flows and other links are marked
        let FlowNet { links, flows, cmark, comp_links, comp_flows, stack, .. } = self;
        let links: &[Link] = links;
        stack.clear();
        stack.push(seed);
        links[seed as usize].mark.set(mark);
        while let Some(l) = stack.pop() {
            comp_links.push(l);
            let lf: &[FlowId] = &links[l as usize].flows;
            let nf = lf.len();
            for i in 0..nf {
                if i + AHEAD < nf {
                    // the mark of a flow twice as far on, which the test below reads
                    prefetch_entry(lf, cmark, i + 2 * AHEAD);
                    // a flow not yet found a few places on: its record's links
                    let g = lf[i + AHEAD] as usize;
                    if cmark[g] != mark {
                        prefetch(&flows[g]);
                    }
                }
                let f = lf[i];
                if cmark[f as usize] == mark {
                    continue;
                }
                cmark[f as usize] = mark;
                comp_flows.push(f);
                if comp_flows.len() > limit {
                    return false;
                }
                for &l2 in flows[f as usize].links.iter() {
                    let lk = &links[l2 as usize];
                    if lk.mark.get() != mark {
                        if lk.flows.len() > limit {
                            return false;
                        }
                        lk.mark.set(mark);
                        stack.push(l2);
                    }
                }
            }
        }
        true
    }

    /// Gathers the components of the dirty links while they hold at most `MID_COMPONENT` flows
    /// in all and no link of more (`SMALL_COMPONENT` after an attempt found them larger, but for
    /// one attempt in `MID_PROBE_EVERY`), in the order the whole-component loop of `resolve_any`
    /// solves them: the dirty list from its end, each seed not yet reached.  True: the
    /// components are in `comp_links` / `comp_flows`, where each begins in `comp_starts`.
    /// False: a component is larger; the links it marked are unmarked again (the incremental
    /// solve reads links' marks), the flows' `cmark` is read by no other solve.
    fn gather_small(&mut self, mark: u32) -> bool {
        self.comp_links.clear();
        self.comp_flows.clear();
        self.comp_starts.clear();
        let mid = self.mid_ok || self.mid_probe == 0;
        let ok = self.gather_within(mark, if mid { MID_COMPONENT } else { SMALL_COMPONENT });
        if mid {
            self.mid_ok = ok;
            if !ok {
                self.mid_probe = MID_PROBE_EVERY;
            }
        } else {
            self.mid_probe -= 1;
        }
        ok
    }

    /// `gather_small`'s walk, for components of at most `limit` flows in all.
    fn gather_within(&mut self, mark: u32, limit: usize) -> bool {
        // (the walk's stack, unmarked on a failure, holds only what this call marked)
        self.stack.clear();
        for i in (0..self.dirty.len()).rev() {
            let seed = self.dirty[i];
            // a link left with no flow is its own component, with nothing to rate (`finish` set
            // its load), and a link already reached is in one found before
            let lk = &self.links[seed as usize];
            if lk.mark.get() == mark {
                continue;
            }
            let n = lk.flows.len();
            if n == 0 {
                continue;
            }
            self.comp_starts.push((self.comp_links.len() as u32, self.comp_flows.len() as u32));
            // a seed of more flows answers at once (a halo's NIC and fat-tree links), as a link
            // of more does in the walk
            if n > limit || !self.gather_component(seed, mark, limit) {
                let old = mark.wrapping_sub(1);
                for k in 0..self.comp_links.len() {
                    let l = self.comp_links[k];
                    self.links[l as usize].mark.set(old);
                }
                for &l in &self.stack {
                    self.links[l as usize].mark.set(old);
                }
                return false;
            }
        }
        true
    }

    /// The whole-component solve of the component gathered at `comp_links[links]` and
    /// `comp_flows[flows]`: progressive filling of all its flows.
    fn fill_component(
        &mut self,
        links: std::ops::Range<usize>,
        flows: std::ops::Range<usize>,
        now: Time,
        out: &mut Vec<Reschedule>,
    ) {
        let mark = self.epoch.wrapping_add(1);
        let comp_links = std::mem::take(&mut self.comp_links);
        let comp_flows = std::mem::take(&mut self.comp_flows);
        self.fill_gathered(&comp_links[links], &comp_flows[flows], mark, now, out);
        self.comp_links = comp_links;
        self.comp_flows = comp_flows;
    }

    /// A component whose every link that can bind (`live`, with `lw` set as the filling begins)
    /// carries all its `nflows` flows is filled in one level: every flow gets the smallest share
    /// `cap / nflows` of those links.  The link that rates them, and the share, as the filling
    /// would find them (the first of `live` within the level's tolerance; the smallest of the
    /// links' shares, each `rem / n` as the passes divide), or `None` for the general filling.
    /// An Allreduce's rounds are mostly such components: the 4 flows from one node to another
    /// over the two NICs, the flows of a node's shared memory.
    #[inline]
    fn one_level(&self, live: &[LinkId], nflows: usize) -> Option<(LinkId, f64)> {
        #[cfg(test)]
        if self.no_one_level {
            return None;
        }
        if live.is_empty() {
            return None;
        }
        let mut share = f64::INFINITY;
        for &l in live {
            let w = &self.lw[l as usize];
            if w.n as usize != nflows {
                return None;
            }
            let sh = w.rem / w.n as f64;
            if sh < share {
                share = sh;
            }
        }
        if !share.is_finite() {
            return None;
        }
        let tol = share * 1e-9;
        let l0 = *live.iter().find(|&&l| self.lw[l as usize].rem / self.lw[l as usize].n as f64 <= share + tol)?;
        Some((l0, share))
    }

    /// The filling of `one_level`'s component: what `fill_level` does at its one level, where
    /// the link `l0` rates every flow (in its list's order) and each live link's `lw.fixed`
    /// gains every flow's rate.  The other `lw` values are not read after the filling.
    fn fill_one_level(
        &mut self,
        l0: LinkId,
        share: f64,
        live: &[LinkId],
        unrated: u32,
        rated: u32,
        mut take: impl FnMut(FlowId, &mut Flow, &mut Hot, f64),
    ) {
        #[cfg(test)]
        {
            self.one_level_fills += 1;
        }
        let FlowNet { links, flows, hot, wit, cmark, lw, .. } = self;
        let lf: &[FlowId] = &links[l0 as usize].flows;
        for &f in lf {
            debug_assert_eq!(cmark[f as usize], unrated);
            cmark[f as usize] = rated;
            wit[f as usize] = l0;
            take(f, &mut flows[f as usize], &mut hot[f as usize], share);
        }
        let fixed = fx(share) * lf.len() as i128;
        for &l in live {
            lw[l as usize].fixed = fixed;
        }
    }

    fn fill_gathered(
        &mut self,
        comp_links: &[LinkId],
        comp_flows: &[FlowId],
        mark: u32,
        now: Time,
        out: &mut Vec<Reschedule>,
    ) {
        if comp_flows.is_empty() {
            return;
        }
        self.solves += 1;
        // progressive filling: raise every unfrozen flow's rate together; at each step freeze the
        // flows of every link whose fair share is the smallest (within 1e-9): symmetric loads freeze
        // many links per scan, so a solve is (distinct bottleneck levels) x (links of the component).
        // slack links never fix a level: the filling leaves them out
        let mut live = std::mem::take(&mut self.live);
        live.clear();
        {
            let FlowNet { links, lw, slack_bits, .. } = self;
            for &l in comp_links {
                if slack_in(slack_bits, l as usize) {
                    continue;
                }
                live.push(l);
                let lk = &links[l as usize];
                let w = &mut lw[l as usize];
                w.rem = lk.cap;
                w.n = lk.flows.len() as u32;
                w.fixed = 0;
            }
        }
        let unfixed_mark = mark;
        let fixed_mark = mark.wrapping_add(0x8000_0000);
        let one_level = self.one_level(&live, comp_flows.len());
        // each flow as it is rated: its bytes moved at the old rate up to `now`, then its new
        // rate, in the visit where the filling reads its links (its record is in the cache then;
        // the filling itself reads no flow's rate or bytes)
        let mut rated = 0usize;
        let take = |f: FlowId, fl: &mut Flow, h: &mut Hot, r: f64| {
            rated += 1;
            h.mark = mark; // so the component is not revisited in this resolve
            let dt = span_f64(now - fl.last);
            fl.remaining = (fl.remaining - h.rate * dt).max(0.0);
            fl.last = now;
            let changed = (h.rate - r).abs() > r * 1e-12 || h.rate == 0.0;
            h.rate = r;
            if changed {
                fl.version = fl.version.wrapping_add(1);
                let finish = finish_ns(now, fl.remaining, r);
                out.push(Reschedule { flow: f, finish, version: fl.version });
            }
        };
        match one_level {
            Some((l0, share)) => self.fill_one_level(l0, share, &live, unfixed_mark, fixed_mark, take),
            None => self.progressive_fill(&mut live, comp_flows.len(), unfixed_mark, fixed_mark, take),
        }
        self.live = live;
        if rated != comp_flows.len() {
            // flows left unrated keep their rate: their bytes too are brought up to `now` (a
            // second update of a rated flow at the same `now` changes nothing)
            for &f in comp_flows {
                let fl = &mut self.flows[f as usize];
                let dt = span_f64(now - fl.last);
                fl.remaining = (fl.remaining - self.hot[f as usize].rate * dt).max(0.0);
                fl.last = now;
            }
        }
        // the component's links: their load at the new rates.  Every flow rated (the usual
        // case): each flow's rate is the level it was rated at, which the filling added to its
        // links' `lw.fixed`; otherwise a sum over each link's flows
        let all_rated = rated == comp_flows.len();
        let FlowNet { links, lw, slack_bits, hot, .. } = self;
        for &l in comp_links {
            let lk = &mut links[l as usize];
            lk.nmax = 0; // found by a scan when needed
            if slack_in(slack_bits, l as usize) {
                continue; // a slack link's load is not kept (`refresh_link`)
            }
            lk.load = if all_rated {
                lw[l as usize].fixed
            } else {
                let mut load = 0i128;
                for &f in lk.flows.iter() {
                    load += fx(hot[f as usize].rate);
                }
                load
            };
        }
    }
}

/// How flows share a link.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Sharing {
    /// exact max-min fairness, re-solved incrementally around what changed (module docs), or
    /// over its connected component when the change spreads
    #[default]
    MaxMin,
    /// exact max-min fairness, always re-solved over the whole connected component by progressive
    /// filling (the reference for the incremental solve; same rates, slower)
    MaxMinFull,
    /// each flow gets the smallest fair share (capacity / flows) among its links, without giving
    /// capacity left by flows limited elsewhere to the others: never oversubscribes a link, may
    /// under-use it; a change only touches the flows on the changed flow's links
    Bottleneck,
    /// for study (issue 27), not a model users choose (no machine file or Python call takes it,
    /// only `g2gsim-core --sharing`): exact max-min by the grouped solve (`grouped.rs`) from the
    /// first flow to the last, one completion event per group; the same finish times as
    /// `max-min` (which hands its flows to that solve where it is cheaper: `solver.rs`)
    MaxMinGrouped,
}

impl Sharing {
    /// Every sharing model, the default first.
    pub const ALL: [Sharing; 3] = [Sharing::MaxMin, Sharing::MaxMinFull, Sharing::Bottleneck];

    pub fn parse(s: &str) -> Option<Sharing> {
        Sharing::ALL.into_iter().find(|m| m.name() == s)
    }
    /// `parse`, and the models for study (`MaxMinGrouped`): the benchmark binary's `--sharing`.
    pub fn parse_study(s: &str) -> Option<Sharing> {
        Sharing::parse(s).or((s == Sharing::MaxMinGrouped.name()).then_some(Sharing::MaxMinGrouped))
    }
    /// The name `parse` reads (also the reports' `sharing`).
    pub fn name(self) -> &'static str {
        match self {
            Sharing::MaxMin => "max-min",
            Sharing::MaxMinFull => "max-min-full",
            Sharing::Bottleneck => "bottleneck",
            Sharing::MaxMinGrouped => "max-min-grouped",
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn run(net: &mut FlowNet, now: Time) -> Vec<Reschedule> {
        let mut v = vec![];
        net.resolve(now, &mut v);
        v
    }

    #[test]
    fn single_flow_gets_full_link() {
        let mut n = FlowNet::new();
        let l = n.add_link(10e9); // 10 B/ns
        let f = n.start(0, &[l], 1000.0, 7);
        let r = run(&mut n, 0);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].finish, 100);
        assert_eq!(n.token(f), 7);
    }

    #[test]
    fn two_flows_share_half_each_then_speed_up() {
        let mut n = FlowNet::new();
        let l = n.add_link(10e9);
        let a = n.start(0, &[l], 1000.0, 0);
        let b = n.start(0, &[l], 500.0, 1);
        let r = run(&mut n, 0);
        let fa = r.iter().find(|x| x.flow == a).unwrap();
        let fb = r.iter().find(|x| x.flow == b).unwrap();
        assert_eq!(fb.finish, 100); // 500 B at 5 B/ns
        assert_eq!(fa.finish, 200);
        // b ends at 100: a has 500 left and now gets 10 B/ns -> ends at 150
        n.finish(b);
        let r = run(&mut n, 100);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].flow, a);
        assert_eq!(r[0].finish, 150);
        assert!(!n.is_current(a, fa.version));
        assert!(n.is_current(a, r[0].version));
    }

    #[test]
    fn max_min_not_proportional() {
        // flow x over links A(10) and B(2); flow y over A only. Max-min: x=2 (bottleneck B), y=8.
        let mut n = FlowNet::new();
        let a = n.add_link(10e9);
        let b = n.add_link(2e9);
        let x = n.start(0, &[a, b], 2000.0, 0);
        let y = n.start(0, &[a], 8000.0, 0);
        let _ = run(&mut n, 0);
        assert!((n.rate_bytes_per_s(x) - 2e9).abs() < 1.0);
        assert!((n.rate_bytes_per_s(y) - 8e9).abs() < 1.0);
    }

    #[test]
    fn bottleneck_sharing_does_not_redistribute() {
        // same case as max_min_not_proportional: x is limited to 2 by B; y gets A's fair share 5
        let mut n = FlowNet::new();
        n.sharing = Sharing::Bottleneck;
        let a = n.add_link(10e9);
        let b = n.add_link(2e9);
        let x = n.start(0, &[a, b], 2000.0, 0);
        let y = n.start(0, &[a], 8000.0, 0);
        let _ = run(&mut n, 0);
        assert!((n.rate_bytes_per_s(x) - 2e9).abs() < 1.0);
        assert!((n.rate_bytes_per_s(y) - 5e9).abs() < 1.0);
        // two flows on one link still get half each, and the survivor speeds up
        n.finish(x);
        let r = run(&mut n, 500);
        assert_eq!(r.len(), 1);
        assert!((n.rate_bytes_per_s(y) - 10e9).abs() < 1.0);
    }

    #[test]
    fn untouched_component_is_not_rescheduled() {
        let mut n = FlowNet::new();
        let a = n.add_link(1e9);
        let b = n.add_link(1e9);
        n.start(0, &[a], 100.0, 0);
        let _ = run(&mut n, 0);
        n.start(10, &[b], 100.0, 0);
        let r = run(&mut n, 10);
        assert_eq!(r.len(), 1, "only the new flow on the other link gets a time");
    }

    /// A tiny deterministic generator (xorshift) so the test needs no crate.
    /// An incremental and a whole-component (`max-min-full`) net with the same `nlinks` links, of
    /// a few capacity classes so that ties (equal shares) are common.
    fn twin_nets(rng: &mut Xs, nlinks: usize) -> (FlowNet, FlowNet) {
        let mut inc = FlowNet::new();
        let mut full = FlowNet::new();
        full.sharing = Sharing::MaxMinFull;
        for _ in 0..nlinks {
            let bw = [1e9, 2e9, 2.5e9, 5e9, 12.5e9][rng.below(5) as usize];
            inc.add_link(bw);
            full.add_link(bw);
        }
        (inc, full)
    }

    /// Resolves both nets at `now`, records their finish times, and checks that every live pair
    /// of flows has the same rate (to 1e-6) and the same latest finish time (to the ns).
    fn resolve_both_and_compare(
        inc: &mut FlowNet,
        full: &mut FlowNet,
        now: Time,
        live: &[(FlowId, FlowId)],
        fin_a: &mut std::collections::HashMap<FlowId, Time>,
        fin_b: &mut std::collections::HashMap<FlowId, Time>,
        seed: u64,
    ) {
        let (mut ra, mut rb) = (vec![], vec![]);
        inc.resolve(now, &mut ra);
        full.resolve(now, &mut rb);
        for r in &ra {
            fin_a.insert(r.flow, r.finish);
        }
        for r in &rb {
            fin_b.insert(r.flow, r.finish);
        }
        for &(a, b) in live {
            let (x, y) = (inc.rate_bytes_per_s(a), full.rate_bytes_per_s(b));
            assert!((x - y).abs() <= 1e-6 * y.max(1.0), "seed {seed}: rates {x} vs {y}");
            assert_eq!(fin_a[&a], fin_b[&b], "seed {seed}: finish times differ at {now}");
        }
    }

    /// Checks every link's slack bound (`Pot`) against one computed afresh from its flows, its
    /// largest rate and count where known (`nmax > 0`) against its flows' rates, and on every
    /// slack link that its load (kept exactly, in fixed point, though no solve sums it) is
    /// the sum of its flows' rates and below its capacity.  Returns how many links were slack
    /// with flows on them.
    fn check_pots(net: &FlowNet, seed: u64) -> usize {
        let mut slack = 0;
        // each live flow keeps the dominators its path has now (`finish` takes them back)
        for (f, fl) in net.flows.iter().enumerate() {
            if fl.active() {
                let (t, doms) = net.dominators(&fl.links);
                assert_eq!(net.ends[f].doms, doms.stored(t), "seed {seed}: flow {f}'s dominators are stale");
                // a clear bit of its bind mask is a slack link (`Flow::bind`)
                for (j, &l) in fl.links.iter().enumerate().take(32) {
                    assert!(fl.bind() & (1 << j) != 0 || net.slack(l as usize), "seed {seed}: flow {f} skips link {l}");
                }
            }
        }
        for l in 0..net.links.len() {
            let want: u64 = net.links[l].flows.iter().map(|&f| net.pot_term(&net.flows[f as usize].links)).sum();
            assert_eq!(net.bounds[l].pot.sum, want, "seed {seed}: link {l}'s bound drifted");
            // the dominators' bound: a fresh count of the link's flows' dominators (one past
            // `DOM_KEEP` since the link was last empty leaves it unknown: at most as many now)
            let mut by: std::collections::BTreeMap<LinkId, u64> = Default::default();
            for &f in net.links[l].flows.iter() {
                let fl = &net.flows[f as usize];
                let (t, doms) = net.dominators(&fl.links);
                assert_eq!(t, net.pot_term(&fl.links));
                for j in 0..fl.links.len() {
                    if fl.links[j] as usize == l {
                        by.insert(doms.at(&fl.links, j), t);
                    }
                }
            }
            let dsum: u64 = by.values().sum();
            let dom = &net.bounds[l].dom;
            if dom.n == Dom::OVER {
                assert!(!net.links[l].flows.is_empty(), "seed {seed}: empty link {l} keeps no dominators");
            } else {
                assert_eq!((dom.n as usize, dom.sum), (by.len(), dsum), "seed {seed}: link {l}'s dominators drifted");
            }
            let bound = if net.pot_only { u64::MAX } else { dom.bound() };
            let want_slack = net.bounds[l].pot.sum.min(bound) < net.bounds[l].pot.thr;
            assert_eq!(net.slack(l), want_slack, "seed {seed}: link {l}'s slack bit is stale");
            let lk = &net.links[l];
            if lk.nmax > 0 && !lk.flows.is_empty() {
                // a known largest rate is the largest of the link's flows, with its count
                let rates = lk.flows.iter().map(|&f| net.hot[f as usize].rate);
                let max = rates.clone().fold(0.0f64, f64::max);
                let n = rates.filter(|&r| r == max).count() as u32;
                assert_eq!((lk.lmax, lk.nmax), (max, n), "seed {seed}: link {l}'s largest rate is stale");
            }
            let load: i128 = net.links[l].flows.iter().map(|&f| fx(net.hot[f as usize].rate)).sum();
            if net.slack(l) {
                // not kept (`refresh_link`): no largest rate known, and no saturation possible
                assert_eq!(lk.nmax, 0, "seed {seed}: slack link {l} has a largest rate");
                if !lk.flows.is_empty() {
                    slack += 1;
                    assert!(from_fx(load) < lk.cap * (1.0 - 1e-9), "seed {seed}: slack link {l} is saturated");
                }
            } else {
                assert_eq!(lk.load, load, "seed {seed}: link {l}'s load is not its flows' sum");
            }
        }
        slack
    }

    /// xorshift64: the random cases of this crate's tests
    pub(crate) struct Xs(pub(crate) u64);
    impl Xs {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        pub(crate) fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    /// 1 to 4 distinct links out of `nlinks`, in random order (a flow's path).
    pub(crate) fn random_path(rng: &mut Xs, nlinks: usize) -> Vec<LinkId> {
        let len = (1 + rng.below(4) as usize).min(nlinks);
        distinct_links(rng, nlinks, len)
    }

    /// `len` distinct links drawn from `0..nlinks`
    pub(crate) fn distinct_links(rng: &mut Xs, nlinks: usize, len: usize) -> Vec<LinkId> {
        let mut links: Vec<LinkId> = vec![];
        while links.len() < len {
            let l = rng.below(nlinks as u64) as LinkId;
            if !links.contains(&l) {
                links.push(l);
            }
        }
        links
    }

    /// Gives both networks `sharing` and the same `n` links, each of a capacity drawn from `caps`.
    fn same_links(nets: &mut [FlowNet; 2], sharing: Sharing, caps: &[f64], n: usize, rng: &mut Xs) {
        for net in nets.iter_mut() {
            net.sharing = sharing;
        }
        for _ in 0..n {
            let bw = caps[rng.below(caps.len() as u64) as usize];
            for net in nets.iter_mut() {
                net.add_link(bw);
            }
        }
    }

    /// Two networks that must solve alike, one step: up to `max_ends - 1` random live flows end in
    /// both, both resolve at `now`, and the finish times, versions and rates must be the same to
    /// the bit (`seed` and `step` name the step in the messages).
    fn end_resolve_and_compare(
        nets: &mut [FlowNet; 2],
        live: &mut Vec<(FlowId, FlowId)>,
        rng: &mut Xs,
        max_ends: u64,
        now: Time,
        (seed, step): (u64, usize),
    ) {
        for _ in 0..rng.below(max_ends) {
            if live.is_empty() {
                break;
            }
            let (a, b) = live.swap_remove(rng.below(live.len() as u64) as usize);
            nets[0].finish(a);
            nets[1].finish(b);
        }
        let (mut ra, mut rb) = (vec![], vec![]);
        nets[0].resolve(now, &mut ra);
        nets[1].resolve(now, &mut rb);
        let key = |v: &[Reschedule], net: &FlowNet| -> Vec<(u64, u32, u64)> {
            v.iter().map(|r| (r.finish, r.version, net.rate_bytes_per_s(r.flow).to_bits())).collect()
        };
        assert_eq!(key(&ra, &nets[0]), key(&rb, &nets[1]), "seed {seed} step {step}: finish times differ");
        for &(a, b) in live.iter() {
            assert_eq!(
                nets[0].rate_bytes_per_s(a).to_bits(),
                nets[1].rate_bytes_per_s(b).to_bits(),
                "seed {seed} step {step}: rates differ"
            );
        }
    }

    /// Progressive filling from a heap (components of more than `FILL_HEAP_MIN` live links)
    /// gives the passes' rates to the bit and the same finish times in the same order, after
    /// every change: many links of a few capacities (ties between links' shares at every
    /// level), flows of 1 to 8 links, starts and ends at the same instants, whole-component
    /// solves (`max-min-full`) and the incremental solve's.
    #[test]
    fn filling_from_a_heap_equals_the_passes_bit_for_bit() {
        for (seed, sharing) in [(1u64, Sharing::MaxMinFull), (2, Sharing::MaxMinFull), (3, Sharing::MaxMin)] {
            let mut rng = Xs(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
            let nlinks = 700;
            let mut nets = [FlowNet::new(), FlowNet::new()];
            nets[1].fill_by_passes = true;
            // capacities a few 1e-10 apart: links whose shares are within the levels' tolerance
            // of each other without being equal, where the order of the visits decides which of
            // them rates a flow they share
            let caps = [1e9, 1e9 * (1.0 + 3e-10), 2e9, 2e9 * (1.0 + 7e-10), 2.5e9, 5e9];
            same_links(&mut nets, sharing, &caps, nlinks, &mut rng);
            let mut live: Vec<(FlowId, FlowId)> = vec![];
            let mut now = 0;
            for step in 0..160 {
                now += rng.below(2) * 1000;
                let starts = if step < 20 { 60 } else { rng.below(12) };
                for _ in 0..starts {
                    let len = 1 + rng.below(8) as usize;
                    let links = distinct_links(&mut rng, nlinks, len);
                    let bytes = 1e5 + rng.below(4) as f64 * 1e5;
                    let a = nets[0].start(now, &links, bytes, 0);
                    let b = nets[1].start(now, &links, bytes, 0);
                    live.push((a, b));
                }
                end_resolve_and_compare(&mut nets, &mut live, &mut rng, 10, now, (seed, step));
            }
            // the heap really filled, and the reference never did
            assert!(nets[0].heap_fills > 0, "seed {seed}: no filling took the heap");
            assert_eq!(nets[1].heap_fills, 0);
        }
    }

    /// A component whose links that can bind all carry all its flows is filled in one level
    /// (`one_level`): the same finish times, versions, rates and loads, to the bit, as the
    /// general filling, over groups of flows that share a few links (with capacities a few
    /// 1e-10 apart, so that which link rates them is decided by the level's tolerance), each
    /// flow with a private link of its own (slack or binding), and random other flows that
    /// join groups into general components.
    #[test]
    fn one_level_components_fill_as_the_general_filling() {
        for (seed, sharing) in [(1u64, Sharing::MaxMinFull), (2, Sharing::MaxMin), (3, Sharing::MaxMin)] {
            let mut rng = Xs(seed.wrapping_mul(0x2545_f491_4f6c_dd1d) | 1);
            let nshared = 300;
            let mut nets = [FlowNet::new(), FlowNet::new()];
            nets[1].no_one_level = true;
            let caps = [1e9, 1e9 * (1.0 + 3e-10), 2e9, 2e9 * (1.0 + 7e-10), 4e9];
            same_links(&mut nets, sharing, &caps, nshared, &mut rng);
            let mut live: Vec<(FlowId, FlowId)> = vec![];
            let mut now = 0;
            for step in 0..300 {
                now += 1000 * (1 + rng.below(3));
                // a group: 1 to 6 flows over the same 1 to 3 shared links, each also over a
                // private link (a fast one: slack; now and then a slow one: it binds)
                for _ in 0..rng.below(3) {
                    let len = 1 + rng.below(3) as usize;
                    let shared = distinct_links(&mut rng, nshared, len);
                    for _ in 0..1 + rng.below(6) {
                        let bw = if rng.below(8) == 0 { 1e8 } else { 1e12 };
                        let mut links = shared.clone();
                        let l = nets[0].add_link(bw);
                        assert_eq!(nets[1].add_link(bw), l);
                        links.push(l);
                        let at = rng.below(links.len() as u64) as usize;
                        let last = links.len() - 1;
                        links.swap(at, last);
                        let bytes = 1e5 * (1 + rng.below(4)) as f64;
                        let a = nets[0].start(now, &links, bytes, 0);
                        let b = nets[1].start(now, &links, bytes, 0);
                        live.push((a, b));
                    }
                }
                // now and then a flow over random shared links: general components
                if rng.below(8) == 0 {
                    let len = 1 + rng.below(3) as usize;
                    let links = distinct_links(&mut rng, nshared, len);
                    let a = nets[0].start(now, &links, 2e5, 0);
                    let b = nets[1].start(now, &links, 2e5, 0);
                    live.push((a, b));
                }
                end_resolve_and_compare(&mut nets, &mut live, &mut rng, 5, now, (seed, step));
                for l in 0..nshared {
                    assert_eq!(
                        nets[0].links[l].load, nets[1].links[l].load,
                        "seed {seed} step {step}: link {l}'s load"
                    );
                }
                check_pots(&nets[0], seed);
            }
            assert!(nets[0].one_level_fills > 100, "seed {seed}: {} one-level fillings", nets[0].one_level_fills);
            assert_eq!(nets[1].one_level_fills, 0);
        }
    }

    /// The incremental max-min solve gives the rates of the whole-component solve after every
    /// change, and the same finish times to the ns for the same flows in the same order, over
    /// random networks (shared "NIC" links, a few "spine" links, uneven capacities)
    /// and random sequences of flow starts and ends, several per instant.
    #[test]
    fn incremental_max_min_equals_full_solve() {
        let mut total_incremental = 0;
        let mut slack = 0;
        for seed in 1..=90u64 {
            let mut rng = Xs(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
            // seeds above 60: few links, many flows each (spine-like links carrying hundreds)
            let nlinks = if seed > 60 { 3 + rng.below(6) as usize } else { 4 + rng.below(40) as usize };
            let (mut inc, mut full) = twin_nets(&mut rng, nlinks);
            let mut live: Vec<(FlowId, FlowId)> = vec![];
            let (mut fin_a, mut fin_b) = (std::collections::HashMap::new(), std::collections::HashMap::new());
            let mut now = 0;
            for _step in 0..400 {
                now += rng.below(3);
                let starts = if seed > 60 { rng.below(8) } else { rng.below(4) };
                for _ in 0..starts {
                    let links = random_path(&mut rng, nlinks);
                    let bytes = 1000.0 + rng.below(100_000) as f64;
                    let a = inc.start(now, &links, bytes, 0);
                    let b = full.start(now, &links, bytes, 0);
                    live.push((a, b));
                }
                let ends = if live.is_empty() { 0 } else { rng.below(3) };
                for _ in 0..ends {
                    if live.is_empty() {
                        break;
                    }
                    let i = rng.below(live.len() as u64) as usize;
                    let (a, b) = live.swap_remove(i);
                    inc.finish(a);
                    full.finish(b);
                }
                let (mut ra, mut rb) = (vec![], vec![]);
                inc.resolve(now, &mut ra);
                full.resolve(now, &mut rb);
                for &(a, b) in &live {
                    let (x, y) = (inc.rate_bytes_per_s(a), full.rate_bytes_per_s(b));
                    assert!(
                        (x - y).abs() <= 1e-6 * y.max(1.0),
                        "seed {seed}: flow rates {x} (incremental) vs {y} (full)"
                    );
                }
                // every live flow's latest finish time agrees to the ns (a solve may re-rate a
                // flow by a last-bit difference that the other leaves as it was: same finish)
                for r in &ra {
                    fin_a.insert(r.flow, r.finish);
                }
                for r in &rb {
                    fin_b.insert(r.flow, r.finish);
                }
                for &(a, b) in &live {
                    assert_eq!(fin_a[&a], fin_b[&b], "seed {seed}: finish times differ");
                }
                slack += check_pots(&inc, seed) + check_pots(&full, seed);
            }
            assert_eq!(full.incremental_solves, 0);
            total_incremental += inc.incremental_solves;
        }
        // the incremental solve really ran (it is not the fallback every time)
        assert!(total_incremental > 1000, "only {total_incremental} incremental solves");
        // and slack links were left out of the solves many times
        assert!(slack > 10_000, "only {slack} slack links with flows seen");
    }

    /// As `incremental_max_min_equals_full_solve`, but flows end when their bytes have moved (at
    /// the finish time both solves gave, so equal sizes started together end together), links
    /// carry tens to hundreds of flows, and capacities are tiered (a few narrow "NIC" links, wider
    /// "leaf" and "spine" links), so that flows move between bottlenecks as others come and go.
    #[test]
    fn incremental_max_min_equals_full_solve_with_completions() {
        let mut total_incremental = 0;
        let mut witness_hits = 0;
        let mut simultaneous = 0;
        let mut slack = 0;
        for seed in 1..=40u64 {
            let mut rng = Xs(seed.wrapping_mul(0xd134_2543_de82_ef95) | 1);
            let (nnic, nleaf, nspine) =
                (4 + rng.below(8) as usize, 2 + rng.below(4) as usize, 1 + rng.below(3) as usize);
            let mut inc = FlowNet::new();
            let mut full = FlowNet::new();
            full.sharing = Sharing::MaxMinFull;
            let mut caps = vec![];
            for i in 0..nnic + nleaf + nspine {
                let bw = if i < nnic {
                    [10e9, 12.5e9][rng.below(2) as usize]
                } else if i < nnic + nleaf {
                    [12.5e9, 25e9, 40e9][rng.below(3) as usize]
                } else {
                    [20e9, 50e9][rng.below(2) as usize]
                };
                caps.push(bw);
                inc.add_link(bw);
                full.add_link(bw);
            }
            // a path: source NIC, then its leaf and maybe a spine and another leaf, destination NIC
            let path = |rng: &mut Xs| -> Vec<LinkId> {
                let (a, b) = (rng.below(nnic as u64) as usize, rng.below(nnic as u64) as usize);
                let (la, lb) = (nnic + a % nleaf, nnic + b % nleaf);
                let mut p = vec![a as LinkId];
                if a != b {
                    p.push(la as LinkId);
                    if la != lb {
                        p.push((nnic + nleaf + (a + b) % nspine) as LinkId);
                        p.push(lb as LinkId);
                    }
                    p.push(b as LinkId);
                }
                p
            };
            let mut live: Vec<(FlowId, FlowId)> = vec![];
            let (mut fin_a, mut fin_b) = (std::collections::HashMap::new(), std::collections::HashMap::new());
            let mut now: Time = 0;
            for _step in 0..300 {
                // next instant: a batch of starts soon, or the next finish
                let next_finish = live.iter().map(|&(a, _)| fin_a[&a]).min();
                let next_start = now + 1 + rng.below(2_000);
                now = match next_finish {
                    Some(t) if t <= next_start => t,
                    _ => next_start,
                };
                let mut ended = 0;
                live.retain(|&(a, b)| {
                    if fin_a[&a] <= now {
                        assert_eq!(fin_a[&a], now);
                        inc.finish(a);
                        full.finish(b);
                        ended += 1;
                        false
                    } else {
                        true
                    }
                });
                if ended > 1 {
                    simultaneous += 1;
                }
                if now == next_start || live.is_empty() {
                    // bursts of equal flows (one path, one size: they finish together) and
                    // single ones
                    for _ in 0..rng.below(4) {
                        let links = path(&mut rng);
                        let bytes = [4096.0, 65536.0, 1e6][rng.below(3) as usize] + rng.below(3) as f64;
                        for _ in 0..1 + rng.below(12) {
                            let a = inc.start(now, &links, bytes, 0);
                            let b = full.start(now, &links, bytes, 0);
                            live.push((a, b));
                        }
                    }
                }
                resolve_both_and_compare(&mut inc, &mut full, now, &live, &mut fin_a, &mut fin_b, seed);
                slack += check_pots(&inc, seed) + check_pots(&full, seed);
                // no link is over its capacity
                for (l, &cap) in caps.iter().enumerate() {
                    let sum: f64 = inc.links[l].flows.iter().map(|&f| inc.hot[f as usize].rate).sum();
                    assert!(sum <= cap * 1e-9 * (1.0 + 1e-9), "seed {seed}: link {l} over capacity");
                }
                // every live flow's witness (the bottleneck check's hint) is one of its links
                for &(a, b) in &live {
                    for (net, f) in [(&inc, a), (&full, b)] {
                        let fl = &net.flows[f as usize];
                        assert!(fl.links.contains(&net.wit[f as usize]), "seed {seed}: witness off the path");
                    }
                }
            }
            total_incremental += inc.incremental_solves;
            witness_hits += inc.witness_hits;
        }
        assert!(total_incremental > 1000, "only {total_incremental} incremental solves");
        assert!(witness_hits > 1000, "only {witness_hits} checks answered by the witness");
        assert!(simultaneous > 100, "only {simultaneous} instants with simultaneous finishes");
        assert!(slack > 100, "only {slack} slack links with flows seen");
    }

    /// A link shared by many slow flows and two fast ones binds the fast ones; when one of them
    /// ends the link turns slack (its bound, 3.5 + 6 B/ns, is below its 10 B/ns) and leaves the
    /// solves, but the other fast flow, whose bottleneck it was, must still speed up to its own
    /// link's 6 B/ns.  Both solves: the incremental one (72 flows: past `MID_COMPONENT`) and the
    /// whole-component one.
    #[test]
    fn a_link_that_turns_slack_frees_the_flows_it_bound() {
        for sharing in [Sharing::MaxMin, Sharing::MaxMinFull] {
            let mut n = FlowNet::new();
            n.sharing = sharing;
            let l = n.add_link(10e9);
            let (pa, pb) = (n.add_link(6e9), n.add_link(6e9));
            for i in 0..70 {
                let p = n.add_link(0.05e9);
                n.start(0, &[p, l], 1e6, 10 + i);
            }
            let a = n.start(0, &[pa, l], 6000.0, 0);
            let b = n.start(0, &[pb, l], 6000.0, 1);
            run(&mut n, 0);
            assert!(!n.slack(l as usize), "70 x 0.05 + 6 + 6 B/ns is over 10");
            assert!((n.rate_bytes_per_s(a) - 3.25e9).abs() < 1.0, "{:?}: a at {}", sharing, n.rate_bytes_per_s(a));
            let before = n.incremental_solves;
            n.finish(b);
            assert!(n.slack(l as usize), "70 x 0.05 + 6 B/ns is below 10");
            let r = run(&mut n, 100);
            assert!((n.rate_bytes_per_s(a) - 6e9).abs() < 1.0, "{:?}: a at {}", sharing, n.rate_bytes_per_s(a));
            // 6000 - 100 ns x 3.25 B/ns = 5675 B left at 6 B/ns: 945.8 ns more
            let fa = r.iter().find(|x| x.flow == a).expect("a re-rated");
            assert_eq!(fa.finish, 100 + 946);
            if sharing == Sharing::MaxMin {
                assert_eq!(n.incremental_solves, before + 1, "the incremental solve settled it");
            }
            assert_eq!(check_pots(&n, 0), 1);
        }
    }

    /// A GPU's links carry flows that all cross its NIC, slower: no flow sum can saturate them,
    /// though their flows' slowest links add up to far more than their capacity (`Pot`).  The
    /// dominators' bound (`Dom`) makes them slack, and that changes no rate or finish time, to
    /// the bit, whichever max-min solve runs: nets of GPUs (75 and 32 B/ns links) behind NICs
    /// and a fabric (12.5 and 25 B/ns), flows between random GPUs started and finished at
    /// random, replayed with and without the bound.
    #[test]
    fn links_behind_a_slower_link_are_slack_and_change_no_rate() {
        for seed in 1..=6u64 {
            let mut nets: Vec<FlowNet> = vec![];
            for (sharing, pot_only) in [
                (Sharing::MaxMin, false),
                (Sharing::MaxMin, true),
                (Sharing::MaxMinFull, false),
                (Sharing::MaxMinFull, true),
            ] {
                let mut n = FlowNet::new();
                n.sharing = sharing;
                n.pot_only = pot_only;
                nets.push(n);
            }
            // 8 nodes of 4 GPUs: per GPU an NVLink (75) and a bus (32), per node 2 NICs (12.5
            // up and down), per node an uplink and a downlink of the fabric (25)
            let (nodes, gpus) = (8usize, 4usize);
            let mut gl = vec![];
            let mut nic = vec![];
            let mut fab = vec![];
            for n in nets.iter_mut() {
                gl = (0..nodes * gpus).map(|_| [n.add_link(75e9), n.add_link(32e9)]).collect();
                nic = (0..nodes * 2).map(|_| [n.add_link(12.5e9), n.add_link(12.5e9)]).collect();
                fab = (0..nodes).map(|_| [n.add_link(25e9), n.add_link(25e9)]).collect();
            }
            let mut rng = Xs(0x9e37_79b9_7f4a_7c15 ^ (seed * 0x1234_5678_9abc));
            let mut live: Vec<FlowId> = vec![];
            let (mut dom_slack, mut compared, mut skipped) = (0usize, 0usize, 0usize);
            for step in 0..400u64 {
                let now = step * 500;
                if live.len() > 60 && rng.below(2) == 0 {
                    for _ in 0..1 + rng.below(3) {
                        let k = rng.below(live.len() as u64) as usize;
                        let f = live.swap_remove(k);
                        for n in nets.iter_mut() {
                            n.finish(f);
                        }
                    }
                } else {
                    for _ in 0..1 + rng.below(6) {
                        let (s, d) =
                            (rng.below((nodes * gpus) as u64) as usize, rng.below((nodes * gpus) as u64) as usize);
                        let (sn, dn) = (s / gpus, d / gpus);
                        let path: Vec<LinkId> = if sn == dn {
                            vec![gl[s][0], gl[s][1], gl[d][1], gl[d][0]]
                        } else {
                            let (ns, nd) = (nic[sn * 2 + (s % gpus) / 2][0], nic[dn * 2 + (d % gpus) / 2][1]);
                            vec![gl[s][0], gl[s][1], ns, fab[sn][0], fab[dn][1], nd, gl[d][1], gl[d][0]]
                        };
                        let bytes = 4096.0 * (1 + rng.below(64)) as f64;
                        let ids: Vec<FlowId> = nets.iter_mut().map(|n| n.start(now, &path, bytes, 0)).collect();
                        assert!(ids.iter().all(|&f| f == ids[0]));
                        live.push(ids[0]);
                    }
                }
                let outs: Vec<Vec<Reschedule>> = nets.iter_mut().map(|n| run(n, now)).collect();
                // with and without the bound: the same re-ratings, rates and finish times, to the bit
                assert_eq!(outs[0], outs[1], "seed {seed} step {step}: incremental");
                assert_eq!(outs[2], outs[3], "seed {seed} step {step}: whole-component");
                for &f in &live {
                    let r: Vec<u64> = nets.iter().map(|n| n.hot[f as usize].rate.to_bits()).collect();
                    assert!(r[0] == r[1] && r[2] == r[3], "seed {seed} step {step}: flow {f} at {r:?}");
                    compared += 1;
                }
                for l in 0..nets[0].num_links() {
                    if nets[0].slack(l) && !nets[1].slack(l) {
                        dom_slack += 1;
                    }
                    assert!(!nets[1].slack(l) || nets[0].slack(l), "a link slack by Pot is slack with both bounds");
                }
                if step % 50 == 0 {
                    for n in &nets {
                        check_pots(n, seed);
                    }
                }
                // the incremental solves skip slack links by the flows' bind masks (`Flow::bind`):
                // more of them with both bounds
                for &f in &live {
                    let fl = &nets[0].flows[f as usize];
                    skipped += (0..fl.links.len().min(32)).filter(|&j| fl.bind() & (1 << j) == 0).count();
                }
            }
            assert!(
                compared > 10_000 && dom_slack > 1000 && skipped > 10_000,
                "seed {seed}: {compared} rates, {dom_slack} links slack by Dom alone, {skipped} links skipped"
            );
        }
    }

    /// A flow's dominators are the nearest slowest links found by searching outwards from each
    /// place (the earlier of two as near), on random paths of 1 to 14 links of three
    /// capacities, and of 60 to 80 links (either side of the bit mask's 64 places).
    #[test]
    fn dominators_are_the_nearest_slowest_links() {
        let mut n = FlowNet::new();
        let links: Vec<LinkId> = (0..30).map(|i| n.add_link([10e9, 25e9, 75e9][i % 3])).collect();
        let mut rng = Xs(0x5eed_1234_abcd_9876);
        for i in 0..4000 {
            let len = if i % 2 == 0 { 1 + rng.below(14) } else { 60 + rng.below(21) } as usize;
            let path: Vec<LinkId> = (0..len).map(|_| links[rng.below(30) as usize]).collect();
            let cap = |j: usize| n.links[path[j] as usize].cap;
            let m = (0..len).map(cap).fold(f64::INFINITY, f64::min);
            let want: Vec<LinkId> = (0..len)
                .map(|j| {
                    let k = (0..len).filter(|&k| cap(k) <= m).min_by_key(|&k| (k.abs_diff(j), k)).unwrap();
                    path[k]
                })
                .collect();
            let (t, doms) = n.dominators(&path);
            assert_eq!(matches!(doms, Doms::Mask(_)), len <= 64);
            let got: Vec<LinkId> = (0..len).map(|j| doms.at(&path, j)).collect();
            assert_eq!(got, want, "{path:?}");
            assert_eq!(t, n.pot_term(&path));
        }
    }

    /// A link's dominators are counted while it has at most `DOM_KEEP` of them; past that its
    /// bound is not known (never slack by it) until the link is empty again.
    #[test]
    fn a_link_of_too_many_dominators_waits_until_empty() {
        let mut n = FlowNet::new();
        let l = n.add_link(100e9);
        let slow: Vec<LinkId> = (0..DOM_KEEP + 1).map(|_| n.add_link(10e9)).collect();
        // three flows behind each: `Pot` 150 B/ns, over 100
        let ids: Vec<FlowId> = slow.iter().flat_map(|&s| [s, s, s]).map(|s| n.start(0, &[l, s], 1e6, 0)).collect();
        // 5 dominators of 10 B/ns: 50 < 100, slack by their sum; but only 4 are counted
        assert_eq!(n.bounds[l as usize].dom.n, Dom::OVER);
        assert!(!n.slack(l as usize));
        for &f in &ids[..3] {
            n.finish(f);
        }
        assert!(!n.slack(l as usize), "4 dominators left, but they are not counted until the link empties");
        check_pots(&n, 0);
        for &f in &ids[3..] {
            n.finish(f);
        }
        assert_eq!(n.bounds[l as usize].dom.n, 0);
        let a = n.start(0, &[l, slow[0]], 1e6, 0);
        let b = n.start(0, &[slow[1], l], 1e6, 0);
        assert!(n.slack(l as usize), "two dominators of 10 B/ns: 20 < 100");
        assert_eq!(n.bounds[l as usize].dom.sum, 2 * Pot::term(10.0));
        for _ in 0..9 {
            n.start(0, &[l, slow[0]], 1e6, 0);
        }
        assert!(n.slack(l as usize), "11 flows, still two dominators (Pot: 110 > 100)");
        assert!(n.bounds[l as usize].pot.sum >= n.bounds[l as usize].pot.thr);
        n.finish(a);
        n.finish(b);
        check_pots(&n, 0);
    }

    /// A link of no capacity (or one too narrow for the bound's units) is never slack: its flows
    /// stand still in both solves, and the solve keeps them there.
    #[test]
    fn a_link_of_no_capacity_is_never_slack() {
        for sharing in [Sharing::MaxMin, Sharing::MaxMinFull] {
            let mut n = FlowNet::new();
            n.sharing = sharing;
            let (z, tiny, o) = (n.add_link(0.0), n.add_link(1e-3), n.add_link(10e9));
            let a = n.start(0, &[o, z], 1e6, 0);
            let b = n.start(0, &[tiny, o], 1e6, 1);
            run(&mut n, 0);
            assert!(!n.slack(z as usize) && !n.slack(tiny as usize));
            assert_eq!(n.rate_bytes_per_s(a), 0.0, "{sharing:?}");
            assert!((n.rate_bytes_per_s(b) - 1e-3).abs() < 1e-9, "{sharing:?}");
            assert!(n.slack(o as usize), "o: two flows of at most 1e-12 B/ns each");
        }
    }

    /// Scaling a link's capacity while flows are live moves the slack bounds with it: a link
    /// slack at 10 B/ns (two flows of at most 2 B/ns each) binds once it is cut to 1 B/ns, and
    /// the solve then shares it.
    #[test]
    fn scaling_a_link_with_live_flows_moves_its_slack_bound() {
        let mut n = FlowNet::new();
        let l = n.add_link(10e9);
        let (pa, pb) = (n.add_link(2e9), n.add_link(2e9));
        let a = n.start(0, &[pa, l], 1e6, 0);
        let b = n.start(0, &[pb, l], 1e6, 1);
        run(&mut n, 0);
        assert!(n.slack(l as usize));
        assert!((n.rate_bytes_per_s(a) - 2e9).abs() < 1.0);
        n.scale_link(l, 0.1);
        assert!(!n.slack(l as usize));
        // (what-ifs scale links before any flow starts; here the caller asks for a new solve)
        n.dirty.push(l);
        run(&mut n, 10);
        assert!((n.rate_bytes_per_s(a) - 0.5e9).abs() < 1.0);
        assert!((n.rate_bytes_per_s(b) - 0.5e9).abs() < 1.0);
        // each flow's own 2 B/ns link is slack now (a term of 1 B/ns), the shared one is not
        assert_eq!(check_pots(&n, 0), 2);
        // a flow's end takes back the dominators it had since the scaling (its slowest link is
        // the shared one now): the bounds stay exact
        n.finish(a);
        run(&mut n, 20);
        check_pots(&n, 0);
        assert!((n.rate_bytes_per_s(b) - 1e9).abs() < 1.0);
    }

    /// Scaling links before any flow starts (what-ifs do it for every network link) sets the
    /// scaled link's slack bit and leaves the others': a link cut below the bound's unit is never
    /// slack, and a flow over it then binds there.
    #[test]
    fn scaling_a_link_before_any_flow_sets_its_slack_bit() {
        let mut n = FlowNet::new();
        let (l, o) = (n.add_link(10e9), n.add_link(10e9));
        assert!(n.slack(l as usize) && n.slack(o as usize), "no flows: both slack");
        n.scale_link(l, 1e-12);
        assert!(!n.slack(l as usize), "a link of 0.01 B/s has no slack threshold");
        assert!(n.slack(o as usize));
        check_pots(&n, 0);
        let f = n.start(0, &[o, l], 1e6, 0);
        run(&mut n, 0);
        assert!((n.rate_bytes_per_s(f) - 0.01).abs() < 1e-9, "the flow binds at the scaled link");
    }

    /// Long paths (up to 16 links: inline up to 12, on the heap past that; places in the link
    /// lists kept for the first `SLOTS` links, searched past them): the incremental solve still
    /// gives the whole-component solve's rates and finish times, and after every change each live
    /// flow is exactly once in the list of each of its links, at the place its slot says.
    #[test]
    fn long_paths_keep_link_lists_and_equal_the_full_solve() {
        let mut spilled = 0;
        for seed in 1..=30u64 {
            let mut rng = Xs(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x5555 | 1);
            let nlinks = 16 + rng.below(24) as usize;
            let (mut inc, mut full) = twin_nets(&mut rng, nlinks);
            let mut live: Vec<(FlowId, FlowId)> = vec![];
            let (mut fin_a, mut fin_b) = (std::collections::HashMap::new(), std::collections::HashMap::new());
            let mut now = 0;
            for _step in 0..200 {
                now += rng.below(3);
                for _ in 0..rng.below(6) {
                    let len = 1 + rng.below(16) as usize;
                    let links = distinct_links(&mut rng, nlinks, len);
                    spilled += (len > 12) as u32;
                    let bytes = 1000.0 + rng.below(100_000) as f64;
                    live.push((inc.start(now, &links, bytes, 0), full.start(now, &links, bytes, 0)));
                }
                for _ in 0..rng.below(4) {
                    if !live.is_empty() {
                        let (a, b) = live.swap_remove(rng.below(live.len() as u64) as usize);
                        inc.finish(a);
                        full.finish(b);
                    }
                }
                resolve_both_and_compare(&mut inc, &mut full, now, &live, &mut fin_a, &mut fin_b, seed);
                for net in [&inc, &full] {
                    let mut on_links = 0;
                    for (l, lk) in net.links.iter().enumerate() {
                        for (p, &f) in lk.flows.iter().enumerate() {
                            let fl = &net.flows[f as usize];
                            assert!(fl.active(), "seed {seed}: a finished flow on link {l}");
                            let j = fl.links.iter().position(|&x| x == l as LinkId).expect("flow off its link");
                            if j < SLOTS {
                                assert_eq!(net.ends[f as usize].slot[j] as usize, p, "seed {seed}: slot of flow {f}");
                            }
                        }
                        on_links += lk.flows.len();
                    }
                    let want: usize = live.iter().map(|&(a, _)| inc.flows[a as usize].links.len()).sum();
                    assert_eq!(on_links, want, "seed {seed}: link lists hold each live flow once per link");
                }
            }
        }
        assert!(spilled > 500, "only {spilled} flows with links on the heap");
    }

    /// A link that the incremental solve meets only as a link of its U flows, not saturated
    /// before the change nor dirty, is no fixed flow's bottleneck: its largest rate, unknown after
    /// a re-rating, is not searched for (no scan of its list), and the rates are max-min.
    #[test]
    fn unsaturated_links_of_u_flows_are_not_scanned_for_their_largest_rate() {
        let mut inc = FlowNet::new();
        let mut full = FlowNet::new();
        full.sharing = Sharing::MaxMinFull;
        let mut own = vec![];
        for net in [&mut inc, &mut full] {
            // 100 flows, each over its own 1 GB/s link and a shared 1 PB/s link: too many for the
            // incremental solve (a quarter of the flows, at least 64), so a whole-component one,
            // which leaves the links' largest rates unknown
            let wide = net.add_link(1e15);
            own = (0..100).map(|_| net.add_link(1e9)).collect::<Vec<_>>();
            for &o in &own {
                net.start(0, &[o, wide], 1e9, 0);
            }
            let _ = run(net, 0);
        }
        assert_eq!((inc.component_solves, inc.incremental_solves), (1, 0));
        assert_eq!(inc.links[0].nmax, 0, "the wide link's largest rate is known after the start");
        for (k, &o) in own.iter().enumerate().take(10) {
            let t = 10 + k as Time;
            let scanned = inc.max_scanned;
            let solves = inc.incremental_solves;
            // a second flow on one own link: that link is dirty, the wide one is in R only as a
            // link of the flow already there (which joins U and halves its rate)
            inc.start(t, &[o], 1e9, 0);
            full.start(t, &[o], 1e9, 0);
            let got = run(&mut inc, t);
            let want = run(&mut full, t);
            assert_eq!(inc.incremental_solves, solves + 1, "change {k}: incremental");
            assert_eq!(got, want, "change {k}: rates and finish times");
            assert!(
                inc.max_scanned - scanned < 100,
                "change {k}: the wide link's 100 flows were scanned ({} flows read)",
                inc.max_scanned - scanned
            );
        }
        for f in 0..inc.flows.len() as FlowId {
            assert_eq!(inc.rate_bytes_per_s(f), full.rate_bytes_per_s(f), "flow {f}");
        }
    }

    /// A change whose components hold at most `SMALL_COMPONENT` flows is settled by the
    /// whole-component solve; one of at most `MID_COMPONENT` too, while the last attempt at that
    /// size found its components so small; a larger one by the incremental solve, after which
    /// mid-sized ones go incremental too until that size is tried again (`MID_PROBE_EVERY`).
    /// The rates are max-min either way.
    #[test]
    fn small_components_take_the_whole_solve_and_large_ones_the_incremental() {
        let mut net = FlowNet::new();
        let (a, c) = (net.add_link(10e9), net.add_link(4e9));
        // a small component: two flows over a, one of them also over c
        net.start(0, &[a], 1e6, 0);
        let x = net.start(0, &[a, c], 1e6, 0);
        let _ = run(&mut net, 0);
        assert_eq!((net.component_solves, net.incremental_solves), (1, 0));
        assert!((net.rate_bytes_per_s(x) - 4e9).abs() < 1.0);
        // components of `n` flows, each over its own 1 GB/s link and a shared link of far more
        // capacity (never saturated; not slack either: faster than `Pot` tracks)
        let component = |net: &mut FlowNet, n: usize, t: Time| {
            let shared = net.add_link(1e15);
            for _ in 0..n {
                let own = net.add_link(1e9);
                net.start(t, &[own, shared], 1e6, 0);
            }
            shared
        };
        let mid = component(&mut net, SMALL_COMPONENT + 1, 1);
        let _ = run(&mut net, 1);
        assert_eq!((net.component_solves, net.incremental_solves), (2, 0), "mid-sized: whole");
        // a large component, started at once (U past its limit: the whole solve after all)
        let big = component(&mut net, MID_COMPONENT + 1, 2);
        let _ = run(&mut net, 2);
        assert_eq!((net.component_solves, net.incremental_solves), (3, 0));
        // mid-sized changes (a flow of the mid-sized component ends, another starts: it stays at
        // 18 flows) now go incremental, but for a probe at the mid size
        let own = net.add_link(1e9);
        let mut prev = net.start(3, &[own, mid], 1e6, 0);
        let _ = run(&mut net, 3);
        assert_eq!((net.component_solves, net.incremental_solves), (3, 1));
        for k in 1..MID_PROBE_EVERY {
            net.finish(prev);
            prev = net.start(3 + k as Time, &[own, mid], 1e6, 0);
            let _ = run(&mut net, 3 + k as Time);
            assert_eq!((net.component_solves, net.incremental_solves), (3, 1 + k as u64));
            assert!((net.rate_bytes_per_s(prev) - 1e9).abs() < 1.0);
        }
        let t = 3 + MID_PROBE_EVERY as Time;
        net.finish(prev);
        net.start(t, &[own, mid], 1e6, 0);
        let _ = run(&mut net, t);
        let inc = MID_PROBE_EVERY as u64;
        assert_eq!((net.component_solves, net.incremental_solves), (4, inc), "the probe: whole");
        // a change in the large component: incremental; in the small one: whole
        let own = net.add_link(1e9);
        let y = net.start(t + 1, &[own, big], 1e6, 0);
        let _ = run(&mut net, t + 1);
        assert_eq!((net.component_solves, net.incremental_solves), (4, inc + 1), "large: incremental");
        assert!((net.rate_bytes_per_s(y) - 1e9).abs() < 1.0);
        net.start(t + 2, &[c], 1e6, 0);
        let _ = run(&mut net, t + 2);
        assert_eq!((net.component_solves, net.incremental_solves), (5, inc + 1));
        assert!((net.rate_bytes_per_s(x) - 2e9).abs() < 1.0);
    }

    /// `n` nets of `nics` links of 10 and 12.5 GB/s, each net `setup` as it asks; the net at
    /// `full` solves the whole component (the reference of `rates_equal_the_full_solve`).
    fn nic_nets(n: usize, nics: u32, full: usize, setup: impl Fn(usize, &mut FlowNet)) -> Vec<FlowNet> {
        (0..n)
            .map(|i| {
                let mut net = FlowNet::new();
                if i == full {
                    net.sharing = Sharing::MaxMinFull;
                }
                setup(i, &mut net);
                for l in 0..nics {
                    net.add_link([10e9, 12.5e9][(l % 2) as usize]);
                }
                net
            })
            .collect()
    }

    /// Every live flow (`k[i]`: its id in net `i`) has the rate (to 1e-6) and the latest finish
    /// time (to the ns) of its twin in the net at `full`.
    fn rates_equal_the_full_solve<const N: usize>(
        nets: &[FlowNet],
        fins: &[std::collections::HashMap<FlowId, Time>],
        live: &[[FlowId; N]],
        full: usize,
        now: Time,
    ) {
        for k in live {
            for i in (0..N).filter(|&i| i != full) {
                let (x, y) = (nets[i].rate_bytes_per_s(k[i]), nets[full].rate_bytes_per_s(k[full]));
                assert!((x - y).abs() <= 1e-6 * y, "net {i}: rate {x} vs {y} at {now}");
                assert_eq!(fins[i][&k[i]], fins[full][&k[full]], "net {i}: finish times differ at {now}");
            }
        }
    }

    /// A change spreads over a ring of saturated links (like the NICs of a halo exchange: every
    /// flow crosses two neighbouring NICs): pulling in ahead the flows bottlenecked on the
    /// saturated links of flows that join U (`pull_from_saturated`) settles the incremental solves
    /// in fewer rounds, two rings of it fewer than one, and every way gives the whole-component
    /// solve's rates and finish times.
    #[test]
    fn pulling_bottlenecked_flows_ahead_saves_rounds_and_changes_no_rate() {
        let nics = 64u32;
        let mut rng = Xs(0x2545_f491_4f6c_dd1d);
        let mut nets = nic_nets(4, nics, 2, |i, n| {
            n.off.pull_ahead = i == 1;
            n.off.second_ring = i == 3;
        });
        let mut live: Vec<[FlowId; 4]> = vec![];
        let mut fins: Vec<std::collections::HashMap<FlowId, Time>> = vec![Default::default(); 4];
        let mut now = 0;
        for _step in 0..400 {
            now += 1 + rng.below(50);
            for _ in 0..rng.below(4) {
                let a = rng.below(nics as u64) as LinkId;
                let b = (a + 1 + rng.below(2) as u32) % nics;
                let bytes = 10_000.0 + rng.below(200_000) as f64;
                let ids: Vec<FlowId> = nets.iter_mut().map(|n| n.start(now, &[a, b], bytes, 0)).collect();
                live.push([ids[0], ids[1], ids[2], ids[3]]);
            }
            if !live.is_empty() && (live.len() > 240 || rng.below(3) == 0) {
                let k = live.swap_remove(rng.below(live.len() as u64) as usize);
                for (n, &f) in nets.iter_mut().zip(k.iter()) {
                    n.finish(f);
                }
            }
            for (n, fin) in nets.iter_mut().zip(fins.iter_mut()) {
                let mut out = vec![];
                n.resolve(now, &mut out);
                for r in out {
                    fin.insert(r.flow, r.finish);
                }
            }
            rates_equal_the_full_solve(&nets, &fins, &live, 2, now);
        }
        let (ahead, plain, one) = (&nets[0], &nets[1], &nets[3]);
        assert!(ahead.incremental_solves > 200, "{} incremental solves", ahead.incremental_solves);
        let per = |n: &FlowNet| n.incremental_rounds as f64 / n.incremental_solves as f64;
        assert!(
            per(ahead) < 0.85 * per(plain),
            "rounds per incremental solve: {:.2} pulling ahead, {:.2} without",
            per(ahead),
            per(plain)
        );
        assert!(
            per(ahead) < 0.97 * per(one),
            "rounds per incremental solve: {:.3} with two rings, {:.3} with one",
            per(ahead),
            per(one)
        );
    }

    /// Changes where flows only end: the flows bottlenecked on their links join U at once
    /// (`pull_from_ended`), which saves the first round that only found them, and no rate or
    /// finish time changes (against the whole-component solve and against the incremental
    /// solve without it).  Flows cross two of 64 "NIC" links; after a build-up, most steps only
    /// end flows.
    #[test]
    fn pulling_the_flows_of_ended_flows_links_saves_rounds_and_changes_no_rate() {
        let nics = 64u32;
        let mut rng = Xs(0x6a09_e667_f3bc_c909);
        let mut nets = nic_nets(3, nics, 2, |i, n| n.off.pull_ended = i == 1);
        let mut live: Vec<[FlowId; 3]> = vec![];
        let mut fins: Vec<std::collections::HashMap<FlowId, Time>> = vec![Default::default(); 3];
        let mut now = 0;
        let mut ended_only = [(0u64, 0u64); 2];
        for step in 0..600 {
            now += 1 + rng.below(50);
            let starts = if step < 100 || rng.below(5) == 0 { 1 + rng.below(6) } else { 0 };
            for _ in 0..starts {
                let a = rng.below(nics as u64) as LinkId;
                let b = (a + 1 + rng.below(3) as u32) % nics;
                let bytes = 10_000.0 + rng.below(200_000) as f64;
                let ids: Vec<FlowId> = nets.iter_mut().map(|n| n.start(now, &[a, b], bytes, 0)).collect();
                live.push([ids[0], ids[1], ids[2]]);
            }
            if starts == 0 && !live.is_empty() {
                let k = live.swap_remove(rng.below(live.len() as u64) as usize);
                for (n, &f) in nets.iter_mut().zip(k.iter()) {
                    n.finish(f);
                }
            }
            for (i, (n, fin)) in nets.iter_mut().zip(fins.iter_mut()).enumerate() {
                let (s0, r0) = (n.incremental_solves, n.incremental_rounds);
                let mut out = vec![];
                n.resolve(now, &mut out);
                if i < 2 && starts == 0 && n.incremental_solves > s0 {
                    ended_only[i].0 += 1;
                    ended_only[i].1 += n.incremental_rounds - r0;
                }
                for r in out {
                    fin.insert(r.flow, r.finish);
                }
            }
            rates_equal_the_full_solve(&nets, &fins, &live, 2, now);
        }
        let [(s_pull, r_pull), (s_plain, r_plain)] = ended_only;
        assert!(s_pull > 150 && s_plain > 150, "{s_pull} and {s_plain} incremental solves of ended flows");
        let (per_pull, per_plain) = (r_pull as f64 / s_pull as f64, r_plain as f64 / s_plain as f64);
        assert!(
            per_pull < 0.9 * per_plain,
            "rounds per incremental solve of ended flows: {per_pull:.2} pulling them, {per_plain:.2} without"
        );
    }

    /// Bottleneck sharing re-rates only the flows a change can affect; after every change each
    /// flow's rate is still the smallest `capacity / flows` of its links (computed here from
    /// scratch), over random networks and random starts and ends.
    /// The fixed-point conversions give exactly what the language's `as` conversions give, over
    /// every magnitude (the solves' sums and checks depend on their last bit).
    #[test]
    fn finish_rounding_equals_the_library_ceil() {
        let mut rng = Xs(0x9e37_79b9_7f4a_7c15);
        let mut ys = vec![0.0, -0.0, -0.5, -1.0, -3.7, 0.5, 1.0, 1.0 + f64::EPSILON, 2.0 - f64::EPSILON, f64::NAN];
        for e in 0..60 {
            let p = (1u64 << e) as f64;
            ys.extend([p, p.next_up(), p.next_down(), p + 0.5, p * 1.5]);
        }
        ys.extend([9.007_199_254_740_993e15, 4.5e15 + 0.5, 1e18f64.next_down()]);
        for _ in 0..200_000 {
            // random bit patterns over the whole positive range below 1e18, and small quotients
            let y = f64::from_bits(rng.next() >> 1);
            if y < 1e18 {
                ys.push(y);
            }
            ys.push((rng.next() % 10_000_000) as f64 / (1 + rng.next() % 1000) as f64);
        }
        for y in ys {
            assert_eq!(ceil_ns(y), y.ceil().max(0.0) as u64, "{y:e}");
        }
        // a flow's `Pot` term (capacities below 2^20 bytes per ns) and spans of time (below
        // 2^62 ns) converted through `i64`: the library's numbers
        for _ in 0..200_000 {
            let m = f64::from_bits(rng.next() >> 1);
            if m < POT_SCALE {
                assert_eq!(Pot::term(m), (m * POT_SCALE).ceil() as u64, "{m:e}");
            }
            let dt = rng.next() >> (2 + rng.below(62));
            assert_eq!(span_f64(dt).to_bits(), (dt as f64).to_bits(), "{dt}");
        }
    }

    #[test]
    fn fixed_point_conversions_equal_the_generic_ones() {
        let mut rng = Xs(0x9e37_79b9_7f4a_7c15);
        let mut xs: Vec<i128> = vec![0, 1, -1, i128::MAX, i128::MIN, i128::MIN + 1, 1 << 63, -(1 << 63), (1 << 63) - 1];
        for s in 0..127 {
            xs.push(1i128 << s);
            xs.push((1i128 << s) - 1);
            xs.push(-(1i128 << s) + 1);
        }
        for _ in 0..200_000 {
            let hi = rng.next() as i128;
            let lo = rng.next() as i128;
            let shift = rng.below(128) as u32;
            // half-way cases too: a run of 0s or 1s below the 54th bit
            let x = ((hi << 64) | (lo & 0xffff_ffff_ffff_ffff)) >> shift;
            let x = match rng.below(4) {
                0 => x & !((1i128 << (rng.below(70) as u32)) - 1),
                1 => x | ((1i128 << (rng.below(70) as u32)) - 1),
                _ => x,
            };
            xs.push(x);
        }
        for &x in &xs {
            let want = x as f64 * (1.0 / 18_446_744_073_709_551_616.0);
            assert_eq!(from_fx(x).to_bits(), want.to_bits(), "from_fx({x})");
        }
        let mut rs: Vec<f64> =
            vec![0.0, -0.0, 1.0, -1.0, 0.5, 1e-300, 12.5, 1e19, 1e20, -1e20, 1e30, 1e300, f64::MAX, f64::MIN];
        rs.extend([
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            2f64.powi(63 - 64),
            2f64.powi(126 - 64),
            2f64.powi(127 - 64),
        ]);
        for _ in 0..200_000 {
            let e = rng.below(160) as i32 - 100;
            let m = 1.0 + (rng.next() >> 11) as f64 / (1u64 << 53) as f64;
            rs.push(if rng.below(2) == 0 { m * 2f64.powi(e) } else { -m * 2f64.powi(e) });
        }
        for &r in &rs {
            let want = (r * 18_446_744_073_709_551_616.0) as i128;
            assert_eq!(fx(r), want, "fx({r:e})");
        }
    }

    #[test]
    fn bottleneck_rerating_equals_recomputing_every_flow() {
        for seed in 1..=60u64 {
            let mut rng = Xs(seed.wrapping_mul(0x2545_f491_4f6c_dd1d) | 1);
            let nlinks = 4 + rng.below(30) as usize;
            let mut n = FlowNet::new();
            n.sharing = Sharing::Bottleneck;
            for _ in 0..nlinks {
                n.add_link([1e9, 2e9, 2.5e9, 5e9, 12.5e9][rng.below(5) as usize]);
            }
            let mut live: Vec<FlowId> = vec![];
            let mut now = 0;
            for _ in 0..400 {
                now += rng.below(3);
                for _ in 0..rng.below(4) {
                    let links = random_path(&mut rng, nlinks);
                    live.push(n.start(now, &links, 1000.0 + rng.below(100_000) as f64, 0));
                }
                for _ in 0..rng.below(3) {
                    if !live.is_empty() {
                        let i = rng.below(live.len() as u64) as usize;
                        n.finish(live.swap_remove(i));
                    }
                }
                let _ = run(&mut n, now);
                for &f in &live {
                    let want = n.flows[f as usize]
                        .links
                        .iter()
                        .map(|&l| n.links[l as usize].cap / n.links[l as usize].flows.len() as f64)
                        .fold(f64::INFINITY, f64::min);
                    let got = n.hot[f as usize].rate;
                    assert!((got - want).abs() <= 1e-12 * want, "seed {seed}: rate {got} want {want}");
                }
            }
        }
    }

    /// On a network past `PREFETCH_PATH_MIN_LINKS` links, starts and ends ask for their links'
    /// records ahead (`prefetch_path`, and an end's places in its links' lists): the same finish
    /// times, versions and rates to the bit as a twin network that does not, after every change,
    /// under each sharing; flows of up to 14 links (past the kept places), over a few shared
    /// links and links anywhere in the table, start and end in batches.
    #[test]
    fn asking_for_records_ahead_changes_nothing() {
        for sharing in Sharing::ALL {
            let seed = 0x5851_f42d_4c95_7f2d ^ sharing as u64;
            let mut rng = Xs(seed | 1);
            let mut nets = [FlowNet::new(), FlowNet::new()];
            same_links(&mut nets, sharing, &[1e9, 2.5e9, 12.5e9, 25e9], PREFETCH_PATH_MIN_LINKS + 1_000, &mut rng);
            nets[1].no_prefetch = true;
            assert!(nets[0].prefetches_paths() && !nets[1].prefetches_paths());
            let mut live: Vec<(FlowId, FlowId)> = vec![];
            let mut now: Time = 0;
            for step in 0..300 {
                now += 1 + rng.below(5_000);
                for _ in 0..rng.below(12) {
                    let len = 1 + rng.below(14) as usize;
                    let mut path = distinct_links(&mut rng, 64, len.min(8));
                    for _ in path.len()..len {
                        let l = 64 + rng.below((nets[0].num_links() - 64) as u64) as LinkId;
                        if !path.contains(&l) {
                            path.push(l);
                        }
                    }
                    let bytes = 1e4 + rng.below(1 << 22) as f64;
                    let a = nets[0].start(now, &path, bytes, 0);
                    let b = nets[1].start(now, &path, bytes, 0);
                    live.push((a, b));
                }
                end_resolve_and_compare(&mut nets, &mut live, &mut rng, 10, now, (seed, step));
            }
            assert!(live.len() > 20, "{sharing:?}: {} live", live.len());
        }
    }
}

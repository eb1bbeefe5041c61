//! DUMPI records -> native rows: the rules of `_convert_rank` in
//! `python/g2gsim/readers/dumpi_reader.py` (the reference; a test asserts identical rows), one rank
//! at a time, streaming: a rank's state is its datatype, communicator and request tables, never
//! its records.

use std::collections::{HashMap, HashSet, VecDeque};

use g2g_trace::writer::Row;

use crate::decode::{call, fid_of, fname, Args, Record, ALL_FUNCTIONS};
use crate::fxhash::{FxHashMap, FxHashSet};

pub const DUMPI_COMM_NULL: i64 = 1;
pub const DUMPI_COMM_WORLD: i64 = 2;
pub const DUMPI_COMM_SELF: i64 = 3;
pub const DUMPI_REQUEST_NULL: i64 = 1;
const DUMPI_ANY_SOURCE: i64 = -1;
const DUMPI_FIRST_USER_DATATYPE: i64 = 28;
pub const UNSUPPORTED: i64 = -1;
/// The error a conversion without communicator resolution returns at a communicator creation
/// (the footers said there was none): the caller resolves and converts again.
pub const NEEDS_RESOLUTION: &str = "communicator creation found but not resolved";
const ANY_SOURCE: i32 = -1;
const PROC_NULL: i32 = -2;
const DEFAULT_TYPE_SIZES: [i64; 28] =
    [0, 0, 1, 1, 1, 1, 4, 2, 2, 4, 4, 8, 8, 4, 8, 16, 8, 8, 8, 1, 0, 0, 8, 12, 12, 6, 8, 20];

/// Function ids the conversion dispatches on (resolved once from the layout table).
pub struct Fids {
    pub send: u16,
    pub bsend: u16,
    pub ssend: u16,
    pub rsend: u16,
    pub recv: u16,
    pub isend: u16,
    pub ibsend: u16,
    pub issend: u16,
    pub irsend: u16,
    pub irecv: u16,
    pub wait: u16,
    pub test: u16,
    pub request_free: u16,
    pub waitany: u16,
    pub testany: u16,
    pub waitall: u16,
    pub testall: u16,
    pub waitsome: u16,
    pub testsome: u16,
    pub send_init: u16,
    pub bsend_init: u16,
    pub ssend_init: u16,
    pub rsend_init: u16,
    pub recv_init: u16,
    pub start: u16,
    pub startall: u16,
    pub sendrecv: u16,
    pub sendrecv_replace: u16,
    pub barrier: u16,
    pub bcast: u16,
    pub gather: u16,
    pub gatherv: u16,
    pub scatter: u16,
    pub scatterv: u16,
    pub allgather: u16,
    pub allgatherv: u16,
    pub alltoall: u16,
    pub alltoallv: u16,
    pub alltoallw: u16,
    pub reduce: u16,
    pub allreduce: u16,
    pub reduce_scatter: u16,
    pub scan: u16,
    pub exscan: u16,
    pub init: u16,
    pub init_thread: u16,
    pub finalize: u16,
    pub comm_free: u16,
    // datatypes
    pub type_contiguous: u16,
    pub type_vector: u16,
    pub type_hvector: u16,
    pub type_create_hvector: u16,
    pub type_indexed: u16,
    pub type_hindexed: u16,
    pub type_create_hindexed: u16,
    pub type_create_indexed_block: u16,
    pub type_struct: u16,
    pub type_create_struct: u16,
    pub type_create_subarray: u16,
    pub type_create_darray: u16,
    pub type_create_resized: u16,
    pub type_dup: u16,
    pub type_size: u16,
    pub type_free: u16,
    /// per fid: 0 other, 1 datatype call, 2 communicator/group call; the new-handle argument of
    /// communicator-creating calls
    pub class: Vec<u8>,
    pub new_handle_arg: Vec<i8>,
}

pub const COMM_FUNCTIONS: [&str; 27] = [
    "Comm_group",
    "Group_incl",
    "Group_excl",
    "Group_range_incl",
    "Group_range_excl",
    "Group_union",
    "Group_intersection",
    "Group_difference",
    "Group_free",
    "Comm_dup",
    "Comm_create",
    "Comm_split",
    "Comm_free",
    "Cart_create",
    "Cart_sub",
    "Graph_create",
    "Intercomm_create",
    "Intercomm_merge",
    "Comm_accept",
    "Comm_connect",
    "Comm_get_parent",
    "Comm_join",
    "Comm_spawn",
    "Comm_spawn_multiple",
    "Comm_remote_group",
    "Win_get_group",
    "File_get_group",
];

impl Fids {
    pub fn new() -> Fids {
        let f = fid_of;
        let mut class = vec![0u8; 294];
        for n in [
            "Type_contiguous",
            "Type_vector",
            "Type_hvector",
            "Type_create_hvector",
            "Type_indexed",
            "Type_hindexed",
            "Type_create_hindexed",
            "Type_create_indexed_block",
            "Type_struct",
            "Type_create_struct",
            "Type_create_subarray",
            "Type_create_darray",
            "Type_create_resized",
            "Type_dup",
            "Type_size",
            "Type_free",
        ] {
            class[f(n) as usize] = 1;
        }
        for n in COMM_FUNCTIONS {
            class[f(n) as usize] = 2;
        }
        let mut new_handle_arg = vec![-1i8; 294];
        for (n, k) in [
            ("Comm_dup", 1),
            ("Comm_create", 2),
            ("Comm_split", 3),
            ("Cart_create", 5),
            ("Cart_sub", 3),
            ("Graph_create", 6),
            ("Intercomm_create", 5),
            ("Intercomm_merge", 2),
            ("Comm_accept", 4),
            ("Comm_connect", 4),
            ("Comm_get_parent", 0),
            ("Comm_join", 1),
            ("Comm_spawn", 3),
            ("Comm_spawn_multiple", 4),
        ] {
            new_handle_arg[f(n) as usize] = k;
        }
        Fids {
            send: f("Send"),
            bsend: f("Bsend"),
            ssend: f("Ssend"),
            rsend: f("Rsend"),
            recv: f("Recv"),
            isend: f("Isend"),
            ibsend: f("Ibsend"),
            issend: f("Issend"),
            irsend: f("Irsend"),
            irecv: f("Irecv"),
            wait: f("Wait"),
            test: f("Test"),
            request_free: f("Request_free"),
            waitany: f("Waitany"),
            testany: f("Testany"),
            waitall: f("Waitall"),
            testall: f("Testall"),
            waitsome: f("Waitsome"),
            testsome: f("Testsome"),
            send_init: f("Send_init"),
            bsend_init: f("Bsend_init"),
            ssend_init: f("Ssend_init"),
            rsend_init: f("Rsend_init"),
            recv_init: f("Recv_init"),
            start: f("Start"),
            startall: f("Startall"),
            sendrecv: f("Sendrecv"),
            sendrecv_replace: f("Sendrecv_replace"),
            barrier: f("Barrier"),
            bcast: f("Bcast"),
            gather: f("Gather"),
            gatherv: f("Gatherv"),
            scatter: f("Scatter"),
            scatterv: f("Scatterv"),
            allgather: f("Allgather"),
            allgatherv: f("Allgatherv"),
            alltoall: f("Alltoall"),
            alltoallv: f("Alltoallv"),
            alltoallw: f("Alltoallw"),
            reduce: f("Reduce"),
            allreduce: f("Allreduce"),
            reduce_scatter: f("Reduce_scatter"),
            scan: f("Scan"),
            exscan: f("Exscan"),
            init: f("Init"),
            init_thread: f("Init_thread"),
            finalize: f("Finalize"),
            comm_free: f("Comm_free"),
            type_contiguous: f("Type_contiguous"),
            type_vector: f("Type_vector"),
            type_hvector: f("Type_hvector"),
            type_create_hvector: f("Type_create_hvector"),
            type_indexed: f("Type_indexed"),
            type_hindexed: f("Type_hindexed"),
            type_create_hindexed: f("Type_create_hindexed"),
            type_create_indexed_block: f("Type_create_indexed_block"),
            type_struct: f("Type_struct"),
            type_create_struct: f("Type_create_struct"),
            type_create_subarray: f("Type_create_subarray"),
            type_create_darray: f("Type_create_darray"),
            type_create_resized: f("Type_create_resized"),
            type_dup: f("Type_dup"),
            type_size: f("Type_size"),
            type_free: f("Type_free"),
            class,
            new_handle_arg,
        }
    }
}

impl Default for Fids {
    fn default() -> Self {
        Fids::new()
    }
}

/// Communicators as the Python side resolved them (`_Comms` after `_resolve_comms`).
pub struct Comms {
    /// gid -> world-rank members
    pub members: HashMap<i64, Vec<u32>>,
    /// ranks whose MPI_COMM_SELF got a gid during the resolution
    pub self_gid: HashMap<u32, i64>,
    /// the gid of rank r's MPI_COMM_SELF otherwise: `self_base + r`
    pub self_base: i64,
    pub names: HashMap<i64, String>,
    /// false when no rank creates communicators (the resolution was skipped)
    pub resolved: bool,
}

impl Comms {
    pub fn self_comm(&mut self, rank: u32) -> i64 {
        if let Some(g) = self.self_gid.get(&rank) {
            return *g;
        }
        let g = self.self_base + rank as i64;
        self.self_gid.insert(rank, g);
        self.members.insert(g, vec![rank]);
        self.names.insert(g, format!("MPI_COMM_SELF[{rank}]"));
        g
    }
}

/// Per-rank datatype sizes (`_Types`).
struct Types {
    table: Vec<i64>,
    derived: FxHashMap<i64, (Option<i64>, bool)>,
    unknown_uses: u64,
}

impl Types {
    #[inline]
    fn get(&self, dt: i64) -> (Option<i64>, bool) {
        if !self.derived.is_empty() {
            if let Some(d) = self.derived.get(&dt) {
                return *d;
            }
        }
        if dt >= 0 && (dt as usize) < self.table.len() {
            return (Some(self.table[dt as usize]), true);
        }
        if (0..DUMPI_FIRST_USER_DATATYPE).contains(&dt) {
            return (Some(DEFAULT_TYPE_SIZES[dt as usize]), true);
        }
        (None, true)
    }
    #[inline]
    fn size(&mut self, dt: i64) -> i64 {
        match self.get(dt).0 {
            Some(s) => s,
            None => {
                self.unknown_uses += 1;
                0
            }
        }
    }
    #[inline]
    fn nbytes(&mut self, count: i64, dt: i64) -> i64 {
        if count <= 0 {
            return 0;
        }
        count.wrapping_mul(self.size(dt))
    }
    #[inline]
    fn contig(&self, dt: i64) -> bool {
        self.get(dt).1
    }

    fn define(&mut self, fx: &Fids, fid: u16, a: &Args) -> Result<(), String> {
        let oob = || "index out of range".to_string();
        let mul = |s: Option<i64>, n: i64| s.map(|s| n.wrapping_mul(s));
        if fid == fx.type_contiguous {
            let (s, c) = self.get(a.i(1));
            self.derived.insert(a.i(2), (mul(s, a.i(0)), c));
        } else if fid == fx.type_vector || fid == fx.type_hvector || fid == fx.type_create_hvector {
            let (count, bl, stride, old, new) = (a.i(0), a.i(1), a.i(2), a.i(3), a.i(4));
            let (s, c) = self.get(old);
            let gapless = if fid == fx.type_vector {
                stride == bl
            } else {
                s.is_some() && Some(stride) == s.map(|s| bl.wrapping_mul(s))
            };
            self.derived.insert(new, (mul(s, count.wrapping_mul(bl)), c && (count <= 1 || gapless)));
        } else if fid == fx.type_indexed || fid == fx.type_hindexed || fid == fx.type_create_hindexed {
            let (lens, displs, old, new) = (a.a(1), a.a(2), a.i(3), a.i(4));
            let (s, c) = self.get(old);
            let adj = if fid == fx.type_indexed {
                all_adjacent(lens.len(), displs, |k| lens[k])?
            } else {
                match s {
                    None => false,
                    Some(s) => all_adjacent(lens.len(), displs, |k| lens[k].wrapping_mul(s))?,
                }
            };
            let total: i64 = lens.iter().sum();
            self.derived.insert(new, (mul(s, total), c && adj));
        } else if fid == fx.type_create_indexed_block {
            let (count, bl, displs, old, new) = (a.i(0), a.i(1), a.a(2), a.i(3), a.i(4));
            let (s, c) = self.get(old);
            let adj = all_adjacent(displs.len(), displs, |_| bl)?;
            self.derived.insert(new, (mul(s, count.wrapping_mul(bl)), c && adj));
        } else if fid == fx.type_struct || fid == fx.type_create_struct {
            let lens = a.a(1);
            let displs = a.arr(2);
            let types = a.a(3);
            let new = a.i(4);
            let parts: Vec<(Option<i64>, bool)> = types.iter().map(|t| self.get(*t)).collect();
            if parts.iter().any(|p| p.0.is_none()) {
                self.derived.insert(new, (None, false));
            } else {
                let size: i64 = lens.iter().zip(parts.iter()).map(|(n, p)| n.wrapping_mul(p.0.unwrap())).sum();
                let adj = match displs {
                    None => false,
                    Some(d) => {
                        let mut ok = true;
                        for k in 0..lens.len().saturating_sub(1) {
                            let p = parts.get(k).ok_or_else(oob)?;
                            let (d1, d0) = (*d.get(k + 1).ok_or_else(oob)?, d[k]);
                            if d1 != d0 + lens[k].wrapping_mul(p.0.unwrap()) {
                                ok = false;
                                break;
                            }
                        }
                        ok
                    }
                };
                self.derived.insert(new, (Some(size), adj && parts.iter().all(|p| p.1)));
            }
        } else if fid == fx.type_create_subarray {
            let (sizes, subsizes, order, old, new) = (a.a(1), a.a(2), a.i(4), a.i(5), a.i(6));
            let (s, c) = self.get(old);
            let total: i64 =
                if subsizes.is_empty() { 1 } else { subsizes.iter().fold(1i64, |x, y| x.wrapping_mul(*y)) };
            let mut dims: Vec<(i64, i64)> = sizes.iter().copied().zip(subsizes.iter().copied()).collect();
            if order != 2 {
                dims.reverse();
            }
            let (mut contiguous, mut partial) = (true, false);
            for (full, sub) in dims {
                if partial && sub != 1 {
                    contiguous = false;
                    break;
                }
                if sub != full {
                    partial = true;
                }
            }
            self.derived.insert(new, (mul(s, total), c && contiguous));
        } else if fid == fx.type_create_darray {
            let (gsizes, psizes, old, new) = (a.a(3), a.a(6), a.i(8), a.i(9));
            let (s, _) = self.get(old);
            let mut local = 1i64;
            for (gs, ps) in gsizes.iter().zip(psizes.iter()) {
                let d = (*ps).max(1);
                local = local.wrapping_mul(-((-gs).div_euclid(d)));
            }
            self.derived.insert(new, (mul(s, local), psizes.iter().all(|p| *p == 1)));
        } else if fid == fx.type_create_resized {
            let (old, extent, new) = (a.i(0), a.i(2), a.i(3));
            let (s, c) = self.get(old);
            self.derived.insert(new, (s, c && s.is_some() && Some(extent) == s));
        } else if fid == fx.type_dup {
            let g = self.get(a.i(0));
            self.derived.insert(a.i(1), g);
        } else if fid == fx.type_size {
            let (dt, size) = (a.i(0), a.i(1));
            if dt >= DUMPI_FIRST_USER_DATATYPE || dt >= self.table.len() as i64 {
                let c = self.get(dt).1;
                self.derived.insert(dt, (Some(size), c));
            }
        } else if fid == fx.type_free {
            self.derived.remove(&a.i(0));
        }
        Ok(())
    }
}

/// `all(displs[k + 1] == displs[k] + step(k) for k in range(n - 1))`, short-circuiting as Python
/// does; an index past `displs` is an inconsistent record.
fn all_adjacent(n: usize, displs: &[i64], step: impl Fn(usize) -> i64) -> Result<bool, String> {
    for k in 0..n.saturating_sub(1) {
        let d1 = *displs.get(k + 1).ok_or_else(|| "index out of range".to_string())?;
        let d0 = *displs.get(k).ok_or_else(|| "index out of range".to_string())?;
        if d1 != d0 + step(k) {
            return Ok(false);
        }
    }
    Ok(true)
}

#[derive(Clone)]
struct Persistent {
    row: Row,
}

/// Statistics of a conversion, summed over ranks.
#[derive(Default, Debug)]
pub struct Stats {
    pub unknown_type_uses: u64,
    pub orphan_requests: u64,
    pub used_comms: HashSet<i64>,
}

/// The conversion state of one rank.
pub struct RankConv {
    pub rank: u32,
    path: String,
    types: Types,
    local: FxHashMap<i64, i64>,
    active: FxHashMap<i64, u64>,
    persistent: FxHashMap<i64, Persistent>,
    next_req: u64,
    prev_end: Option<i64>,
    used: FxHashSet<i64>,
    my_rank: FxHashMap<i64, usize>,
    /// (record index, new gid or None for COMM_NULL) of this rank's communicator creations
    created: VecDeque<(u64, Option<i64>)>,
    /// the record ending the untraced stretch (see [`crate::RankInput::untraced_at`])
    untraced_at: Option<u64>,
    origin: i64,
    mem: &'static str,
    pub orphans: u64,
    /// rows converted but not yet written (the window ends inside a record's rows)
    pub pending: VecDeque<Row>,
    pub seq: u32,
    /// records decoded, per function id
    pub fid_counts: Vec<u64>,
}

impl RankConv {
    pub fn new(
        rank: u32,
        path: String,
        type_sizes: Vec<i64>,
        created: Vec<(u64, Option<i64>)>,
        untraced_at: Option<u64>,
        origin: i64,
        mem: &'static str,
    ) -> RankConv {
        let mut local = FxHashMap::default();
        local.insert(DUMPI_COMM_WORLD, 0);
        RankConv {
            rank,
            path,
            types: Types { table: type_sizes, derived: FxHashMap::default(), unknown_uses: 0 },
            local,
            active: FxHashMap::default(),
            persistent: FxHashMap::default(),
            next_req: 1,
            prev_end: None,
            used: FxHashSet::default(),
            my_rank: FxHashMap::default(),
            created: created.into(),
            untraced_at,
            origin,
            mem,
            orphans: 0,
            pending: VecDeque::new(),
            seq: 0,
            fid_counts: vec![0; ALL_FUNCTIONS as usize + 4],
        }
    }

    pub fn finish_stats(&self, s: &mut Stats) {
        s.unknown_type_uses += self.types.unknown_uses;
        s.orphan_requests += self.orphans;
        s.used_comms.extend(self.used.iter().copied());
    }

    fn fail(&self, rec: &Record, msg: String) -> String {
        format!("{}: rank {}, record {} (byte offset {}): {msg}", self.path, self.rank, rec.idx, rec.offset)
    }

    fn comm_of(&mut self, comms: &mut Comms, rec: &Record, h: i64) -> Result<(i64, usize), String> {
        let g = if h == DUMPI_COMM_SELF && !self.local.contains_key(&h) {
            Some(comms.self_comm(self.rank))
        } else {
            self.local.get(&h).copied()
        };
        let Some(g) = g else {
            let what = if h == DUMPI_COMM_NULL {
                "MPI_COMM_NULL".to_string()
            } else {
                format!("unknown communicator handle {h}")
            };
            return Err(self.fail(rec, format!("{} on {what}", call(rec.fid))));
        };
        if g == UNSUPPORTED {
            return Err(self.fail(rec, format!("{} on an intercommunicator or a communicator whose members are not in the trace (handle {h}); not supported", call(rec.fid))));
        }
        let members = comms.members.get(&g).ok_or_else(|| {
            self.fail(rec, format!("{} on communicator {g}, which the resolution did not define", call(rec.fid)))
        })?;
        if !self.used.contains(&g) {
            if !members.contains(&self.rank) {
                let name = comms.names.get(&g).cloned().unwrap_or_else(|| format!("communicator {g}"));
                return Err(self.fail(
                    rec,
                    format!("{} on {name} (handle {h}), which rank {} is not a member of", call(rec.fid), self.rank),
                ));
            }
            self.used.insert(g);
        }
        Ok((g, members.len()))
    }

    fn my_rank_in(&mut self, comms: &Comms, g: i64) -> usize {
        if let Some(k) = self.my_rank.get(&g) {
            return *k;
        }
        let k = comms.members.get(&g).and_then(|m| m.iter().position(|&w| w == self.rank)).unwrap_or(0);
        self.my_rank.insert(g, k);
        k
    }

    fn check_root(&self, rec: &Record, root: i64, size: usize) -> Result<i32, String> {
        if root < 0 || root >= size as i64 {
            return Err(self.fail(rec, format!("{}: root {root} outside communicator of {size}", call(rec.fid))));
        }
        Ok(root as i32)
    }

    fn peer_dest(&self, rec: &Record, d: i64, size: usize) -> Result<i32, String> {
        if d < 0 {
            return Ok(PROC_NULL);
        }
        if d >= size as i64 {
            return Err(self.fail(rec, format!("{}: destination {d} outside communicator of {size}", call(rec.fid))));
        }
        Ok(d as i32)
    }

    fn peer_src(&self, rec: &Record, s: i64, size: usize, status: Option<&[[i32; 3]]>) -> Result<i32, String> {
        if s == DUMPI_ANY_SOURCE {
            if let Some(st) = status {
                if let Some(first) = st.first() {
                    if first[1] < 0 {
                        return Ok(PROC_NULL);
                    }
                }
            }
            return Ok(ANY_SOURCE);
        }
        if s < 0 {
            return Ok(PROC_NULL);
        }
        if s >= size as i64 {
            return Err(self.fail(rec, format!("{}: source {s} outside communicator of {size}", call(rec.fid))));
        }
        Ok(s as i32)
    }

    fn new_req(&mut self, dreq: i64) -> u64 {
        let q = self.next_req;
        self.next_req += 1;
        self.active.insert(dreq, q);
        q
    }

    fn take(&mut self, dreq: i64) -> Option<u64> {
        let q = self.active.remove(&dreq);
        if q.is_none() && dreq > DUMPI_REQUEST_NULL && !self.persistent.contains_key(&dreq) {
            self.orphans += 1;
        }
        q
    }

    fn take_all(&mut self, dreqs: &[i64]) -> Vec<u64> {
        dreqs.iter().filter_map(|d| self.take(*d)).collect()
    }

    fn peek(&mut self, dreqs: &[i64]) -> Vec<u64> {
        let mut out = Vec::new();
        for d in dreqs {
            match self.active.get(d) {
                Some(q) => out.push(*q),
                None => {
                    if *d > DUMPI_REQUEST_NULL && !self.persistent.contains_key(d) {
                        self.orphans += 1;
                    }
                }
            }
        }
        out
    }

    #[inline(always)]
    fn emit(&mut self, rec: &Record, mut row: Row) {
        if let (Some(t0), Some(t1)) = (rec.t0, rec.t1) {
            if let Some(pe) = self.prev_end {
                if t0 > pe {
                    // the gap in which tracing was off (before the first row at or after the
                    // record that ends it) is an Untraced stretch, not Compute
                    let un = matches!(self.untraced_at, Some(u) if rec.idx >= u);
                    if un {
                        self.untraced_at = None;
                    }
                    let mut c = Row::new(if un { "Untraced" } else { "Compute" });
                    c.dur_ns = t0 - pe;
                    c.t_start_ns = Some(pe - self.origin);
                    c.t_end_ns = Some(t0 - self.origin);
                    self.pending.push_back(c);
                }
            }
            row.t_start_ns = Some(t0 - self.origin);
            row.t_end_ns = Some(t1 - self.origin);
            self.prev_end = Some(match self.prev_end {
                Some(pe) if t1 <= pe => pe,
                _ => t1,
            });
        }
        self.pending.push_back(row);
    }

    fn emit_completion(&mut self, rec: &Record, qs: Vec<u64>, none_op: &'static str) {
        if qs.len() == 1 {
            let mut r = Row::new("Wait");
            r.req = qs[0];
            self.emit(rec, r);
        } else if !qs.is_empty() {
            let mut r = Row::new("Waitall");
            r.reqs = Some(qs);
            self.emit(rec, r);
        } else {
            let mut r = Row::new(none_op);
            r.reqs = Some(Vec::new());
            self.emit(rec, r);
        }
    }

    fn p2p(&self, op: &'static str, g: i64, peer: i32, tag: i64) -> Row {
        let mut r = Row::new(op);
        r.peer = peer;
        r.tag = tag as i32;
        r.comm_id = g as u32;
        r.mem_space = self.mem;
        r
    }

    fn coll(&self, op: &'static str, g: i64) -> Row {
        let mut r = Row::new(op);
        r.comm_id = g as u32;
        r.mem_space = self.mem;
        r
    }

    /// Converts one record (decoded into `a`), appending its rows to `pending`.
    pub fn record(&mut self, fx: &Fids, comms: &mut Comms, rec: &Record, a: &Args) -> Result<(), String> {
        let fid = rec.fid;
        self.fid_counts[fid as usize] += 1;
        // point-to-point first: the bulk of most traces
        if fid == fx.isend || fid == fx.irecv || fid == fx.ibsend || fid == fx.irsend || fid == fx.issend {
            let (count, dt, peer, tag, ch, dreq) = (a.i(0), a.i(1), a.i(2), a.i(3), a.i(4), a.i(5));
            let (g, size) = self.comm_of(comms, rec, ch)?;
            let mut r;
            if fid == fx.irecv {
                let p = self.peer_src(rec, peer, size, None)?;
                r = self.p2p("Irecv", g, p, tag);
                r.recv_bytes = self.types.nbytes(count, dt) as u64;
            } else {
                let p = self.peer_dest(rec, peer, size)?;
                r = self.p2p(if fid == fx.issend { "Issend" } else { "Isend" }, g, p, tag);
                r.bytes = self.types.nbytes(count, dt) as u64;
            }
            r.req = self.new_req(dreq);
            r.contiguous = self.types.contig(dt);
            self.emit(rec, r);
        } else if fid == fx.wait {
            let q = self.take(a.i(0));
            let mut r = Row::new("Wait");
            r.req = q.unwrap_or(0);
            self.emit(rec, r);
        } else if fid == fx.waitall {
            let qs = self.take_all(a.a(1));
            let mut r = Row::new("Waitall");
            r.reqs = Some(qs);
            self.emit(rec, r);
        } else if fid == fx.send || fid == fx.bsend || fid == fx.ssend || fid == fx.rsend {
            let (count, dt, peer, tag, ch) = (a.i(0), a.i(1), a.i(2), a.i(3), a.i(4));
            let (g, size) = self.comm_of(comms, rec, ch)?;
            let p = self.peer_dest(rec, peer, size)?;
            let op = if fid == fx.send {
                "Send"
            } else if fid == fx.bsend {
                "Bsend"
            } else if fid == fx.ssend {
                "Ssend"
            } else {
                "Rsend"
            };
            let mut r = self.p2p(op, g, p, tag);
            r.bytes = self.types.nbytes(count, dt) as u64;
            r.contiguous = self.types.contig(dt);
            self.emit(rec, r);
        } else if fid == fx.recv {
            let (count, dt, src, tag, ch) = (a.i(0), a.i(1), a.i(2), a.i(3), a.i(4));
            let (g, size) = self.comm_of(comms, rec, ch)?;
            let p = self.peer_src(rec, src, size, a.statuses(5))?;
            let mut r = self.p2p("Recv", g, p, tag);
            r.recv_bytes = self.types.nbytes(count, dt) as u64;
            r.contiguous = self.types.contig(dt);
            self.emit(rec, r);
        } else if fid == fx.sendrecv {
            let (scount, stype, dest, stag, rcount, rtype, src, rtag, ch) =
                (a.i(0), a.i(1), a.i(2), a.i(3), a.i(4), a.i(5), a.i(6), a.i(7), a.i(8));
            let (g, size) = self.comm_of(comms, rec, ch)?;
            let p = self.peer_dest(rec, dest, size)?;
            let mut r = self.p2p("Sendrecv", g, p, stag);
            r.bytes = self.types.nbytes(scount, stype) as u64;
            r.recv_bytes = self.types.nbytes(rcount, rtype) as u64;
            r.recv_peer = self.peer_src(rec, src, size, a.statuses(9))?;
            r.recv_tag = rtag as i32;
            r.contiguous = self.types.contig(stype) && self.types.contig(rtype);
            self.emit(rec, r);
        } else if fid == fx.sendrecv_replace {
            let (count, dt, dest, stag, src, rtag, ch) = (a.i(0), a.i(1), a.i(2), a.i(3), a.i(4), a.i(5), a.i(6));
            let (g, size) = self.comm_of(comms, rec, ch)?;
            let n = self.types.nbytes(count, dt) as u64;
            let p = self.peer_dest(rec, dest, size)?;
            let mut r = self.p2p("Sendrecv", g, p, stag);
            r.bytes = n;
            r.recv_bytes = n;
            r.recv_peer = self.peer_src(rec, src, size, a.statuses(7))?;
            r.recv_tag = rtag as i32;
            r.contiguous = self.types.contig(dt);
            self.emit(rec, r);
        } else if fid == fx.waitany {
            let (reqs, index) = (a.a(1), a.i(2));
            if index >= 0 && (index as usize) < reqs.len() {
                let q = self.take(reqs[index as usize]);
                let mut r = Row::new("Wait");
                r.req = q.unwrap_or(0);
                self.emit(rec, r);
            } else {
                let qs = self.peek(reqs);
                let mut r = Row::new("Waitany");
                r.reqs = Some(qs);
                self.emit(rec, r);
            }
        } else if fid == fx.waitsome || fid == fx.testsome {
            let (reqs, outcount, indices) = (a.a(1), a.i(2), a.a(3));
            let done: Vec<i64> = if outcount > 0 {
                indices.iter().filter(|k| **k >= 0 && (**k as usize) < reqs.len()).map(|k| reqs[*k as usize]).collect()
            } else {
                Vec::new()
            };
            if !done.is_empty() {
                let qs = self.take_all(&done);
                self.emit_completion(rec, qs, "Waitall");
            } else {
                let qs = self.peek(reqs);
                let mut r = Row::new(if fid == fx.waitsome { "Waitsome" } else { "Testsome" });
                r.reqs = Some(qs);
                self.emit(rec, r);
            }
        } else if fid == fx.test {
            let (dreq, flag) = (a.i(0), a.i(1));
            if flag != 0 {
                let q = self.take(dreq);
                let mut r = Row::new("Wait");
                r.req = q.unwrap_or(0);
                self.emit(rec, r);
            } else {
                let qs = self.peek(&[dreq]);
                let mut r = Row::new("Test");
                r.reqs = Some(qs);
                self.emit(rec, r);
            }
        } else if fid == fx.testany {
            let (reqs, index, flag) = (a.a(1), a.i(2), a.i(3));
            if flag != 0 && index >= 0 && (index as usize) < reqs.len() {
                let q = self.take(reqs[index as usize]);
                let mut r = Row::new("Wait");
                r.req = q.unwrap_or(0);
                self.emit(rec, r);
            } else {
                let qs = self.peek(reqs);
                let mut r = Row::new("Testany");
                r.reqs = Some(qs);
                self.emit(rec, r);
            }
        } else if fid == fx.testall {
            let (reqs, flag) = (a.a(1), a.i(2));
            if flag != 0 {
                let qs = self.take_all(reqs);
                let mut r = Row::new("Waitall");
                r.reqs = Some(qs);
                self.emit(rec, r);
            } else {
                let qs = self.peek(reqs);
                let mut r = Row::new("Testall");
                r.reqs = Some(qs);
                self.emit(rec, r);
            }
        } else if fid == fx.send_init
            || fid == fx.bsend_init
            || fid == fx.rsend_init
            || fid == fx.ssend_init
            || fid == fx.recv_init
        {
            let (count, dt, peer, tag, ch, dreq) = (a.i(0), a.i(1), a.i(2), a.i(3), a.i(4), a.i(5));
            let (g, size) = self.comm_of(comms, rec, ch)?;
            let mut r;
            if fid == fx.recv_init {
                let p = self.peer_src(rec, peer, size, None)?;
                r = self.p2p("Irecv", g, p, tag);
                r.recv_bytes = self.types.nbytes(count, dt) as u64;
            } else {
                let p = self.peer_dest(rec, peer, size)?;
                r = self.p2p(if fid == fx.ssend_init { "Issend" } else { "Isend" }, g, p, tag);
                r.bytes = self.types.nbytes(count, dt) as u64;
            }
            r.contiguous = self.types.contig(dt);
            self.persistent.insert(dreq, Persistent { row: r });
        } else if fid == fx.start || fid == fx.startall {
            let one = [a.i(0)];
            let dreqs: &[i64] = if fid == fx.start { &one } else { a.a(1) };
            for d in dreqs {
                if !self.persistent.contains_key(d) {
                    return Err(self.fail(rec, format!("{} of request {d} that no *_init call created", call(fid))));
                }
            }
            for d in dreqs {
                let mut r = self.persistent[d].row.clone();
                r.req = self.new_req(*d);
                self.emit(rec, r);
            }
        } else if fid == fx.request_free {
            self.persistent.remove(&a.i(0));
            self.active.remove(&a.i(0));
        } else if fid == fx.barrier {
            let (g, _) = self.comm_of(comms, rec, a.i(0))?;
            let r = Row { comm_id: g as u32, ..Row::new("Barrier") };
            self.emit(rec, r);
        } else if fid == fx.bcast {
            let (count, dt, root, ch) = (a.i(0), a.i(1), a.i(2), a.i(3));
            let (g, size) = self.comm_of(comms, rec, ch)?;
            let mut r = self.coll("Bcast", g);
            r.bytes = self.types.nbytes(count, dt) as u64;
            r.root = self.check_root(rec, root, size)?;
            r.contiguous = self.types.contig(dt);
            self.emit(rec, r);
        } else if fid == fx.reduce {
            let (count, dt, root, ch) = (a.i(0), a.i(1), a.i(3), a.i(4));
            let (g, size) = self.comm_of(comms, rec, ch)?;
            self.check_root(rec, root, size)?;
            let mut r = self.coll("Reduce", g);
            r.bytes = self.types.nbytes(count, dt) as u64;
            r.recv_bytes =
                if self.my_rank_in(comms, g) as i64 == root { self.types.nbytes(count, dt) as u64 } else { 0 };
            r.root = root as i32;
            r.contiguous = self.types.contig(dt);
            self.emit(rec, r);
        } else if fid == fx.allreduce || fid == fx.scan || fid == fx.exscan {
            let (count, dt, ch) = (a.i(0), a.i(1), a.i(3));
            let (g, _) = self.comm_of(comms, rec, ch)?;
            let n = self.types.nbytes(count, dt) as u64;
            let op = if fid == fx.allreduce {
                "Allreduce"
            } else if fid == fx.scan {
                "Scan"
            } else {
                "Exscan"
            };
            let mut r = self.coll(op, g);
            r.bytes = n;
            r.recv_bytes = n;
            r.contiguous = self.types.contig(dt);
            self.emit(rec, r);
        } else if fid == fx.gather {
            let (commrank, scount, stype, root, ch) = (a.i(0), a.i(1), a.i(2), a.i(3), a.i(4));
            let (g, size) = self.comm_of(comms, rec, ch)?;
            self.check_root(rec, root, size)?;
            let at_root = commrank == root;
            let rtype = a.opt(6).unwrap_or(0);
            let rb =
                if at_root { self.types.nbytes(a.opt(5).unwrap_or(0), rtype).wrapping_mul(size as i64) } else { 0 };
            let mut r = self.coll("Gather", g);
            r.bytes = self.types.nbytes(scount, stype) as u64;
            r.recv_bytes = rb as u64;
            r.root = root as i32;
            r.contiguous = self.types.contig(stype) && (!at_root || self.types.contig(rtype));
            self.emit(rec, r);
        } else if fid == fx.gatherv {
            let (commrank, scount, stype, root, ch, rtype) = (a.i(0), a.i(2), a.i(3), a.i(4), a.i(5), a.i(7));
            let (g, size) = self.comm_of(comms, rec, ch)?;
            self.check_root(rec, root, size)?;
            let mut r = self.coll("Gatherv", g);
            if commrank == root {
                if let Some(rc) = a.arr(6) {
                    let per: Vec<u64> = rc.iter().map(|c| self.types.nbytes(*c, rtype) as u64).collect();
                    r.recv_bytes = per.iter().sum();
                    r.recv_counts_bytes = Some(per);
                }
            }
            r.bytes = self.types.nbytes(scount, stype) as u64;
            r.root = root as i32;
            r.contiguous = self.types.contig(stype) && self.types.contig(rtype);
            self.emit(rec, r);
        } else if fid == fx.scatter {
            let (commrank, rcount, rtype, root, ch) = (a.i(0), a.i(1), a.i(2), a.i(3), a.i(4));
            let (g, size) = self.comm_of(comms, rec, ch)?;
            self.check_root(rec, root, size)?;
            let at_root = commrank == root;
            let stype = a.opt(6).unwrap_or(0);
            let sb =
                if at_root { self.types.nbytes(a.opt(5).unwrap_or(0), stype).wrapping_mul(size as i64) } else { 0 };
            let mut r = self.coll("Scatter", g);
            r.bytes = sb as u64;
            r.recv_bytes = self.types.nbytes(rcount, rtype) as u64;
            r.root = root as i32;
            r.contiguous = self.types.contig(rtype) && (!at_root || self.types.contig(stype));
            self.emit(rec, r);
        } else if fid == fx.scatterv {
            let (commrank, stype, rcount, rtype, root, ch) = (a.i(0), a.i(2), a.i(3), a.i(4), a.i(5), a.i(6));
            let (g, size) = self.comm_of(comms, rec, ch)?;
            self.check_root(rec, root, size)?;
            let mut r = self.coll("Scatterv", g);
            if commrank == root {
                if let Some(sc) = a.arr(7) {
                    let per: Vec<u64> = sc.iter().map(|c| self.types.nbytes(*c, stype) as u64).collect();
                    r.bytes = per.iter().sum();
                    r.counts_bytes = Some(per);
                }
            }
            r.recv_bytes = self.types.nbytes(rcount, rtype) as u64;
            r.root = root as i32;
            r.contiguous = self.types.contig(stype) && self.types.contig(rtype);
            self.emit(rec, r);
        } else if fid == fx.allgather || fid == fx.alltoall {
            let (scount, stype, rcount, rtype, ch) = (a.i(0), a.i(1), a.i(2), a.i(3), a.i(4));
            let (g, size) = self.comm_of(comms, rec, ch)?;
            let mut r = self.coll(if fid == fx.allgather { "Allgather" } else { "Alltoall" }, g);
            let sb = self.types.nbytes(scount, stype);
            r.bytes = if fid == fx.allgather { sb as u64 } else { sb.wrapping_mul(size as i64) as u64 };
            r.recv_bytes = self.types.nbytes(rcount, rtype).wrapping_mul(size as i64) as u64;
            r.contiguous = self.types.contig(stype) && self.types.contig(rtype);
            self.emit(rec, r);
        } else if fid == fx.allgatherv {
            let (scount, stype, rcounts, rtype, ch) = (a.i(1), a.i(2), a.a(3), a.i(5), a.i(6));
            let (g, _) = self.comm_of(comms, rec, ch)?;
            let per: Vec<u64> = rcounts.iter().map(|c| self.types.nbytes(*c, rtype) as u64).collect();
            let mut r = self.coll("Allgatherv", g);
            r.bytes = self.types.nbytes(scount, stype) as u64;
            r.recv_bytes = per.iter().sum();
            r.recv_counts_bytes = Some(per);
            r.contiguous = self.types.contig(stype) && self.types.contig(rtype);
            self.emit(rec, r);
        } else if fid == fx.alltoallv {
            let (scounts, stype, rcounts, rtype, ch) = (a.a(1), a.i(3), a.a(4), a.i(6), a.i(7));
            let (g, _) = self.comm_of(comms, rec, ch)?;
            let sp: Vec<u64> = scounts.iter().map(|c| self.types.nbytes(*c, stype) as u64).collect();
            let rp: Vec<u64> = rcounts.iter().map(|c| self.types.nbytes(*c, rtype) as u64).collect();
            let mut r = self.coll("Alltoallv", g);
            r.bytes = sp.iter().sum();
            r.recv_bytes = rp.iter().sum();
            r.counts_bytes = Some(sp);
            r.recv_counts_bytes = Some(rp);
            r.contiguous = self.types.contig(stype) && self.types.contig(rtype);
            self.emit(rec, r);
        } else if fid == fx.alltoallw {
            let (scounts, stypes, rcounts, rtypes, ch) = (a.a(1), a.a(3), a.a(4), a.a(6), a.i(7));
            let (g, _) = self.comm_of(comms, rec, ch)?;
            let sp: Vec<u64> =
                scounts.iter().zip(stypes.iter()).map(|(c, t)| self.types.nbytes(*c, *t) as u64).collect();
            let rp: Vec<u64> =
                rcounts.iter().zip(rtypes.iter()).map(|(c, t)| self.types.nbytes(*c, *t) as u64).collect();
            let mut r = self.coll("Alltoallv", g);
            r.bytes = sp.iter().sum();
            r.recv_bytes = rp.iter().sum();
            r.counts_bytes = Some(sp);
            r.recv_counts_bytes = Some(rp);
            r.contiguous = stypes.iter().chain(rtypes.iter()).all(|t| self.types.contig(*t));
            self.emit(rec, r);
        } else if fid == fx.reduce_scatter {
            let (rcounts, dt, ch) = (a.a(1), a.i(2), a.i(4));
            let (g, _) = self.comm_of(comms, rec, ch)?;
            let per: Vec<u64> = rcounts.iter().map(|c| self.types.nbytes(*c, dt) as u64).collect();
            let me = self.my_rank_in(comms, g);
            let mut r = self.coll("Reduce_scatter", g);
            r.bytes = per.iter().sum();
            r.recv_bytes = per.get(me).copied().unwrap_or(0);
            r.recv_counts_bytes = Some(per);
            r.contiguous = self.types.contig(dt);
            self.emit(rec, r);
        } else if fid == fx.init || fid == fx.init_thread {
            self.emit(rec, Row::new("Init"));
        } else if fid == fx.finalize {
            self.emit(rec, Row::new("Finalize"));
        } else if (fid as usize) < fx.class.len() && fx.class[fid as usize] == 1 {
            if let Err(e) = self.types.define(fx, fid, a) {
                return Err(self.fail(rec, format!("inconsistent {} record ({e})", call(fid))));
            }
        } else if (fid as usize) < fx.class.len() && fx.class[fid as usize] == 2 {
            let nh = fx.new_handle_arg[fid as usize];
            if self.created.front().map(|c| c.0) == Some(rec.idx) {
                let (_, g) = self.created.pop_front().unwrap();
                let h = if nh >= 0 { a.i(nh as usize) } else { 0 };
                if h <= DUMPI_COMM_SELF {
                } else if let Some(g) = g {
                    self.local.insert(h, g);
                } else {
                    self.local.remove(&h);
                }
            } else if nh >= 0 && !comms.resolved {
                return Err(format!("{NEEDS_RESOLUTION}: {}", self.fail(rec, call(fid))));
            } else if fid == fx.comm_free && a.i(0) > DUMPI_COMM_SELF {
                self.local.remove(&a.i(0));
            }
        }
        // every other call (Comm_rank, Wtime, Probe, MPI-IO, RMA, ...) is skipped; its time
        // becomes part of the next Compute row
        let _ = fname;
        Ok(())
    }
}

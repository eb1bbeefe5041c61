//! Streaming reader of the native Parquet trace: one row group at a time.
//!
//! Row groups are decoded page by page by [`crate::pages`] (no Arrow arrays), a few thousand rows
//! at a time into reused buffers; a row group with an encoding that module does not handle, or a
//! file whose columns do not have the expected types, is decoded through Arrow instead (which
//! also words the type errors).
use std::collections::VecDeque;
use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use arrow_array::{
    Array, ArrayRef, BooleanArray, DictionaryArray, Int32Array, Int64Array, ListArray,
    RecordBatch, StringArray, UInt32Array, UInt64Array,
};
use arrow_array::types::Int32Type;
use arrow_schema::DataType;
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder};
use parquet::arrow::ProjectionMask;
use parquet::basic::Type as Phys;

use crate::pages::{supported_codec, supported_encodings, Column, Decomp, ListBuf};
use crate::vocab::ColType;
use crate::{CommDef, CopyKind, MemSpace, Op, OpKind, OpLists, TraceError, TraceSource};

/// The flat columns the replay reads, in the order of the decode buffers.
const FLAT: [&str; 18] = [
    "rank", "seq", "op", "dur_ns", "peer", "tag", "comm_id", "bytes", "recv_bytes", "recv_peer",
    "recv_tag", "root", "req", "mem_space", "copy_kind", "stream", "contiguous", "priority",
];
const RANK: usize = 0;
const SEQ: usize = 1;
const OP: usize = 2;
const DUR: usize = 3;
const PEER: usize = 4;
const TAG: usize = 5;
const COMM: usize = 6;
const BYTES: usize = 7;
const RECV_BYTES: usize = 8;
const RECV_PEER: usize = 9;
const RECV_TAG: usize = 10;
const ROOT: usize = 11;
const REQ: usize = 12;
const MEM: usize = 13;
const COPY: usize = 14;
const STREAM: usize = 15;
const CONTIG: usize = 16;
const PRIO: usize = 17;
/// String columns decode to symbol indices; -1 is a null.
const NULL_SYM: i64 = -1;
/// What a null decodes to (`None`: nulls are an error): the format's defaults, as the writer
/// fills them in (docs/trace-format.md); op/mem_space/copy_kind nulls read as in the Arrow path.
const NULLS: [Option<i64>; 18] = [
    None, None, Some(NULL_SYM), Some(0), Some(-1), Some(-1), Some(0), Some(0), Some(0), Some(-1),
    Some(-1), Some(-1), Some(0), Some(NULL_SYM), Some(NULL_SYM), Some(-1), Some(1), Some(0),
];
const LISTS: [&str; 3] = ["reqs", "counts_bytes", "recv_counts_bytes"];
/// Rows decoded at a time by the page decoder (its buffers stay in the cache).
const CHUNK: usize = 2048;

/// One decoded column of `CHUNK` rows, padded by a cache line: the columns lie one after another,
/// and with a power-of-two stride (16 KiB) row i of every column falls in the same L1 cache set,
/// so assembling a row (18 loads) thrashed an 8-way L1 (cachegrind: one miss per column per row,
/// 2.6 M on the 1,024-rank halo); the pad puts each column one set further.
#[derive(Clone, Copy)]
#[repr(C)]
struct ColBuf {
    v: [i64; CHUNK],
    _pad: [i64; 8],
}

/// Where the page decoder finds each column: leaf index, physical type, max definition level.
#[derive(Clone, Debug)]
struct Layout {
    flat: [Option<(usize, Phys, i16)>; 18],
    lists: [(usize, i16); 3],
}

/// Reused decoders and buffers (kept between row groups).
#[derive(Default)]
struct Bufs {
    /// decoders of the flat columns (`None`: absent) and of the list columns
    flat: Vec<Option<Column>>,
    lcols: Vec<Column>,
    z: Decomp,
    ranks: Vec<u32>,
    /// the decoded flat columns, in one buffer: `assemble` reaches every column from one
    /// pointer (not 18 of them, spilled), and rows `< CHUNK` need no bounds check
    cols: Vec<ColBuf>,
    lists: [ListBuf; 3],
    op: Vec<Option<OpKind>>,
    mem: Vec<Option<MemSpace>>,
    copy: Vec<Option<CopyKind>>,
    /// each row's resolved symbols, from the checking pass of [`ParquetTrace::assemble`]
    kinds: Vec<(OpKind, MemSpace, CopyKind)>,
}

pub struct ParquetTrace {
    path: String,
    file: Arc<File>,
    meta: ArrowReaderMetadata,
    /// `None`: the columns are not as expected; every row group goes through Arrow
    layout: Option<Layout>,
    /// decode every row group through Arrow (tests compare the two decoders)
    pub force_arrow: bool,
    /// row groups the page decoder read (the others went through Arrow)
    pub page_decoded_row_groups: usize,
    bufs: Bufs,
    nranks: u32,
    comms: Vec<CommDef>,
    pub source: String,
    pub buffers: String,
    row_groups: usize,
    next_rg: usize,
    next_seq: Vec<u32>,
    pub total_rows: u64,
}

impl ParquetTrace {
    pub fn open(path: impl AsRef<Path>) -> Result<ParquetTrace, TraceError> {
        let p = path.as_ref().display().to_string();
        let err = |msg: String| TraceError { file: p.clone(), rank: None, seq: None, msg };
        let file = File::open(path.as_ref()).map_err(|e| err(format!("cannot open: {e}")))?;
        // the parquet crate panics on some corrupt footers: such a file is an error, not a crash
        let meta = crate::catch_decoder(|| ArrowReaderMetadata::load(&file, ArrowReaderOptions::new()))
            .map_err(|m| err(format!("corrupt Parquet metadata (the Parquet decoder failed: {m})")))?
            .map_err(|e| err(format!("not a readable Parquet trace ({e})")))?;
        let md = meta.metadata().clone();
        let kv = md.file_metadata().key_value_metadata().cloned().unwrap_or_default();
        let get = |k: &str| kv.iter().find(|e| e.key == k).and_then(|e| e.value.clone());
        let version = get("g2gsim.format_version")
            .ok_or_else(|| err("Parquet file has no g2gsim metadata (not a g2gsim trace)".into()))?;
        if version.trim() != "1" {
            return Err(err(format!("trace format version {version} is not supported (this build reads 1)")));
        }
        let nranks: u32 = get("g2gsim.nranks")
            .and_then(|s| s.trim().parse().ok())
            .ok_or_else(|| err("metadata g2gsim.nranks missing or not a number".into()))?;
        if nranks == 0 {
            return Err(err("metadata g2gsim.nranks is 0: a trace needs at least one rank".into()));
        }
        if nranks > crate::MAX_RANKS {
            // refused before any per-rank allocation (issue 24: no allocation abort)
            return Err(err(format!(
                "the trace claims {nranks} ranks; g2gsim simulates at most {} (the replay keeps about {} KiB per rank: \
                 {nranks} ranks would need about {:.0} GiB)",
                crate::MAX_RANKS,
                crate::BYTES_PER_RANK / 1024,
                nranks as f64 * crate::BYTES_PER_RANK as f64 / (1u64 << 30) as f64
            )));
        }
        let comms: Vec<CommDef> = match get("g2gsim.comms") {
            Some(s) => serde_json::from_str(&s).map_err(|e| err(format!("metadata g2gsim.comms is not valid JSON: {e}")))?,
            None => vec![CommDef { id: 0, name: "MPI_COMM_WORLD".into(), members: None }],
        };
        for c in &comms {
            if let Some(m) = &c.members {
                if let Some(bad) = m.iter().find(|&&w| w >= nranks) {
                    return Err(err(format!("communicator {} lists world rank {bad}, but the trace has {nranks} ranks", c.id)));
                }
            }
        }
        let total_rows = md.file_metadata().num_rows() as u64;
        let layout = layout(&meta);
        Ok(ParquetTrace {
            path: p,
            row_groups: md.num_row_groups(),
            file: Arc::new(file),
            meta,
            layout,
            force_arrow: false,
            page_decoded_row_groups: 0,
            bufs: Bufs::default(),
            nranks,
            comms,
            source: get("g2gsim.source").unwrap_or_default(),
            buffers: get("g2gsim.buffers").unwrap_or_default(),
            next_rg: 0,
            next_seq: vec![0; nranks as usize],
            total_rows,
        })
    }

    fn err(&self, rank: Option<u32>, seq: Option<u32>, msg: impl Into<String>) -> TraceError {
        TraceError { file: self.path.clone(), rank, seq, msg: msg.into() }
    }

    fn decode_arrow(&mut self, batch: &RecordBatch, queues: &mut [VecDeque<Op>]) -> Result<(), TraceError> {
        let col = |name: &str| -> Result<&ArrayRef, TraceError> {
            batch.column_by_name(name).ok_or_else(|| TraceError {
                file: self.path.clone(), rank: None, seq: None, msg: format!("column `{name}` missing"),
            })
        };
        macro_rules! typed {
            ($name:expr, $t:ty) => {
                col($name)?.as_any().downcast_ref::<$t>().ok_or_else(|| TraceError {
                    file: self.path.clone(), rank: None, seq: None,
                    msg: format!("column `{}` has type {:?}, expected {}", $name, col($name).map(|c| c.data_type().clone()), stringify!($t)),
                })?
            };
        }
        let rank = typed!("rank", UInt32Array);
        let seq = typed!("seq", UInt32Array);
        let op = Strings::new(col("op")?).ok_or_else(|| self.err(None, None, "column `op` is not a string column"))?;
        let mem = Strings::new(col("mem_space")?).ok_or_else(|| self.err(None, None, "column `mem_space` is not a string column"))?;
        let copy = Strings::new(col("copy_kind")?).ok_or_else(|| self.err(None, None, "column `copy_kind` is not a string column"))?;
        let dur = typed!("dur_ns", Int64Array);
        let peer = typed!("peer", Int32Array);
        let tag = typed!("tag", Int32Array);
        let comm = typed!("comm_id", UInt32Array);
        let bytes = typed!("bytes", UInt64Array);
        let recv_bytes = typed!("recv_bytes", UInt64Array);
        let recv_peer = typed!("recv_peer", Int32Array);
        let recv_tag = typed!("recv_tag", Int32Array);
        let root = typed!("root", Int32Array);
        let req = typed!("req", UInt64Array);
        let stream = typed!("stream", Int32Array);
        let contiguous = typed!("contiguous", BooleanArray);
        // optional column (added after format 1 was first written): absent means 0
        let priority = batch.column_by_name("priority").and_then(|c| c.as_any().downcast_ref::<Int32Array>());
        let reqs = typed!("reqs", ListArray);
        let counts = typed!("counts_bytes", ListArray);
        let rcounts = typed!("recv_counts_bytes", ListArray);
        // reserve each rank's queue once per run of its rows (rows come in (window, rank, seq)
        // order): growing the queues op by op reallocates and copies each several times
        {
            let ranks = rank.values();
            let mut i = 0;
            while i < ranks.len() {
                let r = ranks[i];
                let mut j = i + 1;
                while j < ranks.len() && ranks[j] == r {
                    j += 1;
                }
                if let Some(q) = queues.get_mut(r as usize) {
                    q.reserve(j - i);
                }
                i = j;
            }
        }
        let list_of = |l: &ListArray, i: usize| -> Vec<u64> {
            if l.is_null(i) {
                return Vec::new();
            }
            let v = l.value(i);
            v.as_any().downcast_ref::<UInt64Array>().map(|a| a.values().to_vec()).unwrap_or_default()
        };
        // cache op-string -> kind per dictionary/batch value to avoid re-parsing
        let mut last_op: (&str, Option<OpKind>) = ("", None);
        for i in 0..batch.num_rows() {
            let r = rank.value(i);
            let s = seq.value(i);
            if r >= self.nranks {
                return Err(self.err(Some(r), Some(s), format!("rank is outside 0..{}", self.nranks)));
            }
            let expect = self.next_seq[r as usize];
            if s != expect {
                return Err(self.err(Some(r), Some(s), format!(
                    "events out of order or missing: expected event {expect} (is the file truncated or not in streaming order?)")));
            }
            self.next_seq[r as usize] = s + 1;
            let os = op.get(i).unwrap_or("");
            let kind = if os == last_op.0 && last_op.1.is_some() {
                last_op.1.unwrap()
            } else {
                let k = OpKind::parse(os)
                    .ok_or_else(|| self.err(Some(r), Some(s), format!("unknown operation {os:?}")))?;
                last_op = (os, Some(k));
                k
            };
            let ms = mem.get(i).unwrap_or("host");
            let m = MemSpace::parse(ms)
                .ok_or_else(|| self.err(Some(r), Some(s), format!("unknown mem_space {ms:?}")))?;
            let ck = match copy.get(i) {
                None => CopyKind::None,
                Some(c) => CopyKind::parse(c)
                    .ok_or_else(|| self.err(Some(r), Some(s), format!("unknown copy_kind {c:?}")))?,
            };
            let d = dur.value(i);
            if d < 0 {
                return Err(self.err(Some(r), Some(s), format!("negative dur_ns {d}")));
            }
            if d > crate::MAX_DUR_NS {
                return Err(self.err(Some(r), Some(s), format!("dur_ns {d} is over the longest allowed, 1e15 ns (1e6 s)")));
            }
            for (name, v) in [("bytes", bytes.value(i)), ("recv_bytes", recv_bytes.value(i))] {
                if v > crate::MAX_BYTES {
                    return Err(self.err(Some(r), Some(s), format!("{name} {v} is over the largest allowed, 2^60 B")));
                }
            }
            let mut o = Op::from_row(
                kind, m, ck, contiguous.is_null(i) || contiguous.value(i), peer.value(i), tag.value(i), comm.value(i),
                recv_peer.value(i), recv_tag.value(i), root.value(i), stream.value(i), priority.map(|p| p.value(i)).unwrap_or(0),
                bytes.value(i), recv_bytes.value(i), d as u64, req.value(i),
            );
            let needs_lists = !reqs.is_null(i) || !counts.is_null(i) || !rcounts.is_null(i);
            if needs_lists {
                o.lists = Some(Box::new(OpLists {
                    reqs: list_of(reqs, i),
                    counts: list_of(counts, i),
                    recv_counts: list_of(rcounts, i),
                }));
            }
            queues[r as usize].push_back(o);
        }
        Ok(())
    }
}

/// A string column, plain or dictionary-encoded.
enum Strings<'a> {
    Plain(&'a StringArray),
    Dict(&'a DictionaryArray<Int32Type>, &'a StringArray),
}

impl<'a> Strings<'a> {
    fn new(a: &'a ArrayRef) -> Option<Strings<'a>> {
        if let Some(s) = a.as_any().downcast_ref::<StringArray>() {
            return Some(Strings::Plain(s));
        }
        let d = a.as_any().downcast_ref::<DictionaryArray<Int32Type>>()?;
        let v = d.values().as_any().downcast_ref::<StringArray>()?;
        Some(Strings::Dict(d, v))
    }
    fn get(&self, i: usize) -> Option<&'a str> {
        match self {
            Strings::Plain(s) => (!s.is_null(i)).then(|| s.value(i)),
            Strings::Dict(d, v) => {
                if d.is_null(i) {
                    None
                } else {
                    Some(v.value(d.keys().value(i) as usize))
                }
            }
        }
    }
}

/// The page decoder's view of the file's columns, or `None` when a column is missing or has
/// another type than the format's (the Arrow path then reports it).
fn layout(meta: &ArrowReaderMetadata) -> Option<Layout> {
    let schema = meta.schema();
    let pq = meta.parquet_schema();
    let leaf_of = |root: usize| -> Vec<usize> {
        (0..pq.num_columns()).filter(|&l| pq.get_column_root_idx(l) == root).collect()
    };
    // the format's type of each column (vocab::COLUMNS)
    let want = |name: &str| -> Option<(DataType, Phys)> {
        Some(match crate::vocab::column(name)?.ty {
            ColType::U32 => (DataType::UInt32, Phys::INT32),
            ColType::I32 => (DataType::Int32, Phys::INT32),
            ColType::I64 => (DataType::Int64, Phys::INT64),
            ColType::U64 => (DataType::UInt64, Phys::INT64),
            ColType::Str => (DataType::Utf8, Phys::BYTE_ARRAY),
            ColType::Bool => (DataType::Boolean, Phys::BOOLEAN),
            ColType::ListU64 => return None,
        })
    };
    let mut flat = [None; 18];
    for (k, name) in FLAT.iter().enumerate() {
        let Some((root, field)) = schema.fields().iter().enumerate().find(|(_, f)| f.name() == name) else {
            if k == PRIO {
                continue; // optional column
            }
            return None;
        };
        let (dt, phys) = want(name)?;
        let dt_ok = match field.data_type() {
            DataType::Dictionary(kt, vt) => dt == DataType::Utf8 && **kt == DataType::Int32 && **vt == DataType::Utf8,
            t => *t == dt,
        };
        let leaves = leaf_of(root);
        let ok = dt_ok && leaves.len() == 1 && {
            let c = pq.column(leaves[0]);
            c.physical_type() == phys && c.max_rep_level() == 0 && c.max_def_level() <= 1
        };
        if !ok {
            if k == PRIO {
                continue; // the Arrow path ignores a priority column of another type too
            }
            return None;
        }
        flat[k] = Some((leaves[0], phys, pq.column(leaves[0]).max_def_level()));
    }
    let mut lists = [(0, 0); 3];
    for (j, name) in LISTS.iter().enumerate() {
        let (root, field) = schema.fields().iter().enumerate().find(|(_, f)| f.name() == name)?;
        let DataType::List(item) = field.data_type() else { return None };
        let leaves = leaf_of(root);
        if *item.data_type() != DataType::UInt64 || leaves.len() != 1 {
            return None;
        }
        let c = pq.column(leaves[0]);
        // optional list of optional elements, as pyarrow writes it
        if c.physical_type() != Phys::INT64 || c.max_rep_level() != 1 || c.max_def_level() != 3 {
            return None;
        }
        lists[j] = (leaves[0], 3);
    }
    Some(Layout { flat, lists })
}

impl ParquetTrace {
    /// Can the page decoder read row group `rg`?
    fn fast_ok(&self, rg: usize) -> bool {
        let Some(l) = &self.layout else { return false };
        if self.force_arrow {
            return false;
        }
        let g = self.meta.metadata().row_group(rg);
        l.flat.iter().flatten().map(|f| f.0).chain(l.lists.iter().map(|f| f.0))
            .all(|leaf| supported_encodings(g.column(leaf).encodings()) && supported_codec(g.column(leaf).compression()))
    }

    /// Decodes row group `rg` with the page decoder.
    fn fill_fast(&mut self, rg: usize, queues: &mut [VecDeque<Op>]) -> Result<(), TraceError> {
        let layout = self.layout.clone().expect("fast_ok checked the layout");
        let md = self.meta.metadata().clone();
        let g = md.row_group(rg);
        let nrows = g.num_rows() as usize;
        let col_err = |this: &Self, name: &str, e: String| this.err(None, None, format!("row group {rg}, column `{name}`: {e}"));
        let mut bufs = std::mem::take(&mut self.bufs);
        if bufs.flat.is_empty() {
            bufs.flat = layout.flat.iter().map(|f| f.map(|(_, phys, def)| Column::new(phys, def, 0))).collect();
            bufs.lcols = layout.lists.iter().map(|&(_, def)| Column::new(Phys::INT64, def, 1)).collect();
            bufs.cols = vec![ColBuf { v: [0; CHUNK], _pad: [0; 8] }; FLAT.len()];
        }
        let r = (|| -> Result<(), TraceError> {
            for (k, (c, f)) in bufs.flat.iter_mut().zip(&layout.flat).enumerate() {
                if let (Some(c), Some((leaf, ..))) = (c, f) {
                    c.start(&self.file, g.column(*leaf)).map_err(|e| col_err(self, FLAT[k], e))?;
                }
            }
            for (j, (c, (leaf, _))) in bufs.lcols.iter_mut().zip(&layout.lists).enumerate() {
                c.start(&self.file, g.column(*leaf)).map_err(|e| col_err(self, LISTS[j], e))?;
            }
            // the ranks first, to reserve each rank's queue once per run of its rows (rows come in
            // (window, rank, seq) order): growing the queues op by op reallocates and copies
            bufs.ranks.clear();
            let mut at = 0;
            while at < nrows {
                let n = CHUNK.min(nrows - at);
                let b = &mut bufs.cols[RANK].v[..n];
                bufs.flat[RANK].as_mut().unwrap().read(&mut bufs.z, b, NULLS[RANK]).map_err(|e| col_err(self, FLAT[RANK], e))?;
                bufs.ranks.extend(b.iter().map(|&r| r as u32));
                at += n;
            }
            {
                let ranks = &bufs.ranks;
                let mut i = 0;
                while i < ranks.len() {
                    let r = ranks[i];
                    let mut j = i + 1;
                    while j < ranks.len() && ranks[j] == r {
                        j += 1;
                    }
                    if let Some(q) = queues.get_mut(r as usize) {
                        // room for two runs: a rank that has not used up this row group's ops
                        // when the next one is read then needs no regrowth (each regrowth copies
                        // the queue into fresh memory)
                        let n = j - i;
                        if q.len() + n > q.capacity() {
                            q.reserve((q.len() + n).max(2 * n) - q.len());
                        }
                    }
                    i = j;
                }
            }
            let mut at = 0;
            while at < nrows {
                let n = CHUNK.min(nrows - at);
                for (k, c) in bufs.flat.iter_mut().enumerate() {
                    match c {
                        Some(_) if k == RANK => {}
                        Some(c) => c.read(&mut bufs.z, &mut bufs.cols[k].v[..n], NULLS[k]).map_err(|e| col_err(self, FLAT[k], e))?,
                        None => bufs.cols[k].v[..n].fill(NULLS[k].unwrap_or(0)),
                    }
                }
                for (j, c) in bufs.lcols.iter_mut().enumerate() {
                    c.read_lists(&mut bufs.z, n, &mut bufs.lists[j]).map_err(|e| col_err(self, LISTS[j], e))?;
                }
                // symbol tables of the string columns
                if let Some(c) = &bufs.flat[OP] {
                    let names = &c.syms.names;
                    let t = &mut bufs.op;
                    while t.len() < names.len() {
                        t.push(std::str::from_utf8(&names[t.len()]).ok().and_then(OpKind::parse));
                    }
                }
                if let Some(c) = &bufs.flat[MEM] {
                    let names = &c.syms.names;
                    let t = &mut bufs.mem;
                    while t.len() < names.len() {
                        t.push(std::str::from_utf8(&names[t.len()]).ok().and_then(MemSpace::parse));
                    }
                }
                if let Some(c) = &bufs.flat[COPY] {
                    let names = &c.syms.names;
                    let t = &mut bufs.copy;
                    while t.len() < names.len() {
                        t.push(std::str::from_utf8(&names[t.len()]).ok().and_then(CopyKind::parse));
                    }
                }
                self.assemble(&mut bufs, at, n, queues)?;
                at += n;
            }
            Ok(())
        })();
        // the symbol tables belong to this row group's dictionaries
        bufs.op.clear();
        bufs.mem.clear();
        bufs.copy.clear();
        self.bufs = bufs;
        r
    }

    /// Builds the operations of rows `at..at + n` (decoded into `b`) and queues them.
    ///
    /// Two passes: the first checks the rows in order and resolves their symbols; the second
    /// queues the rows before the first bad one (if any) a rank's run of rows at a time, with
    /// one `extend` (no capacity check per row, and each `Op` written straight into its queue),
    /// and then gives the lists to the rows that have them; then the error is returned.  The
    /// queues end as if the rows had been taken one by one.
    fn assemble(&mut self, b: &mut Bufs, at: usize, n: usize, queues: &mut [VecDeque<Op>]) -> Result<(), TraceError> {
        let mut kinds = std::mem::take(&mut b.kinds);
        let ranks = &b.ranks[at..at + n];
        let bad = self.check_rows(b, &mut kinds, ranks, n).err();
        let end = bad.as_ref().map_or(n, |(i, _)| *i);
        // the list columns hold their non-null rows only: a cursor into each, and the next row
        // that has any list
        let lists = &b.lists;
        let next_of = |j: usize, c: usize| lists[j].rows.get(c).map_or(usize::MAX, |&r| r as usize);
        let mut cur = [0usize; 3];
        let mut next = (0..3).map(|j| next_of(j, 0)).min().unwrap();
        // arrays of CHUNK rows, indexed by rows below `j.min(CHUNK)`: no bounds check per row
        let col = |k: usize| &b.cols[k].v;
        let (dur, peer, tag, comm, bytes) = (col(DUR), col(PEER), col(TAG), col(COMM), col(BYTES));
        let (recv_bytes, recv_peer, recv_tag, root, req) = (col(RECV_BYTES), col(RECV_PEER), col(RECV_TAG), col(ROOT), col(REQ));
        let (stream, contig, prio) = (col(STREAM), col(CONTIG), col(PRIO));
        let syms: &[_; CHUNK] = kinds[..CHUNK].try_into().unwrap();
        let mut i = 0;
        while i < end {
            let r = ranks[i];
            let mut j = i + 1;
            while j < end && ranks[j] == r {
                j += 1;
            }
            let q = &mut queues[r as usize];
            q.extend((i..j.min(CHUNK)).map(#[inline(always)] |i| {
                let (kind, mem, copy) = syms[i];
                Op::from_row(
                    kind, mem, copy, contig[i] != 0, peer[i] as i32, tag[i] as i32, comm[i] as u32,
                    recv_peer[i] as i32, recv_tag[i] as i32, root[i] as i32, stream[i] as i32, prio[i] as i32,
                    bytes[i] as u64, recv_bytes[i] as u64, dur[i] as u64, req[i] as u64,
                )
            }));
            // the lists of this run's rows that have any
            while next < j {
                let mut list = |l: usize| -> Vec<u64> {
                    if next_of(l, cur[l]) != next {
                        return Vec::new(); // null
                    }
                    let (lb, c) = (&lists[l], cur[l]);
                    cur[l] += 1;
                    lb.vals[lb.off[c] as usize..lb.off[c + 1] as usize].to_vec()
                };
                let l = OpLists { reqs: list(0), counts: list(1), recv_counts: list(2) };
                let back = q.len() - (j - next);
                q[back].lists = Some(Box::new(l));
                next = (0..3).map(|l| next_of(l, cur[l])).min().unwrap();
            }
            i = j;
        }
        b.kinds = kinds;
        match bad {
            Some((_, e)) => Err(e),
            None => Ok(()),
        }
    }

    /// The checking pass of [`ParquetTrace::assemble`]: ranks, event order, symbols and
    /// durations of `n` rows, in order; their symbols into `kinds`.  Fails with the first bad
    /// row's index and error.
    fn check_rows(&mut self, b: &Bufs, kinds: &mut Vec<(OpKind, MemSpace, CopyKind)>, ranks: &[u32], n: usize) -> Result<(), (usize, TraceError)> {
        let sym = |k: usize, i: i64| -> String {
            b.flat[k].as_ref().map(|c| String::from_utf8_lossy(&c.syms.names[i as usize]).into_owned()).unwrap_or_default()
        };
        let n = n.min(CHUNK); // (it is): no bounds checks on the CHUNK-row arrays
        let col = |k: usize| &b.cols[k].v;
        let (seq, op, dur, mems, copies) = (col(SEQ), col(OP), col(DUR), col(MEM), col(COPY));
        let (bytes, rbytes) = (col(BYTES), col(RECV_BYTES));
        // CHUNK long, as `assemble` reads it
        kinds.resize(CHUNK, (OpKind::Compute, MemSpace::Host, CopyKind::None));
        let kinds = &mut kinds[..n];
        for i in 0..n {
            let r = ranks[i];
            let s = seq[i] as u32;
            let fail = |this: &Self, msg: String| (i, this.err(Some(r), Some(s), msg));
            if r >= self.nranks {
                return Err(fail(self, format!("rank is outside 0..{}", self.nranks)));
            }
            let expect = self.next_seq[r as usize];
            if s != expect {
                return Err(fail(self, format!(
                    "events out of order or missing: expected event {expect} (is the file truncated or not in streaming order?)")));
            }
            self.next_seq[r as usize] = s + 1;
            let os = op[i];
            let kind = match b.op.get(os as usize) {
                Some(Some(k)) if os >= 0 => *k,
                _ => {
                    let name = if os < 0 { String::new() } else { sym(OP, os) };
                    return Err(fail(self, format!("unknown operation {name:?}")));
                }
            };
            let ms = mems[i];
            let mem = if ms < 0 {
                MemSpace::Host
            } else {
                match b.mem.get(ms as usize) {
                    Some(Some(m)) => *m,
                    _ => return Err(fail(self, format!("unknown mem_space {:?}", sym(MEM, ms)))),
                }
            };
            let cs = copies[i];
            let copy = if cs < 0 {
                CopyKind::None
            } else {
                match b.copy.get(cs as usize) {
                    Some(Some(k)) => *k,
                    _ => return Err(fail(self, format!("unknown copy_kind {:?}", sym(COPY, cs)))),
                }
            };
            let d = dur[i];
            if d < 0 {
                return Err(fail(self, format!("negative dur_ns {d}")));
            }
            if d > crate::MAX_DUR_NS {
                return Err(fail(self, format!("dur_ns {d} is over the longest allowed, 1e15 ns (1e6 s)")));
            }
            for (name, v) in [("bytes", bytes[i] as u64), ("recv_bytes", rbytes[i] as u64)] {
                if v > crate::MAX_BYTES {
                    return Err(fail(self, format!("{name} {v} is over the largest allowed, 2^60 B")));
                }
            }
            kinds[i] = (kind, mem, copy);
        }
        Ok(())
    }

    /// Decodes row group `rg` through Arrow.
    fn fill_arrow(&mut self, rg: usize, queues: &mut [VecDeque<Op>]) -> Result<(), TraceError> {
        let f = self.file.try_clone().map_err(|e| self.err(None, None, e.to_string()))?;
        let b = ParquetRecordBatchReaderBuilder::new_with_metadata(f, self.meta.clone());
        // only the columns the replay reads: timestamps and call sites are for reports
        let roots: Vec<usize> = b.schema().fields().iter().enumerate()
            .filter(|(_, f)| crate::vocab::column(f.name()).is_none_or(|c| c.replayed))
            .map(|(i, _)| i)
            .collect();
        let mask = ProjectionMask::roots(b.parquet_schema(), roots);
        let reader = b.with_row_groups(vec![rg]).with_projection(mask).with_batch_size(8192).build()
            .map_err(|e| self.err(None, None, format!("row group {rg}: {e}")))?;
        for batch in reader {
            let batch = batch.map_err(|e| self.err(None, None, format!("row group {rg} unreadable (truncated file?): {e}")))?;
            self.decode_arrow(&batch, queues)?;
        }
        Ok(())
    }
}

impl TraceSource for ParquetTrace {
    fn name(&self) -> &str {
        &self.path
    }
    fn nranks(&self) -> u32 {
        self.nranks
    }
    fn comms(&self) -> &[CommDef] {
        &self.comms
    }
    fn buffers(&self) -> &str {
        &self.buffers
    }
    fn fill(&mut self, queues: &mut [VecDeque<Op>]) -> Result<bool, TraceError> {
        if self.next_rg >= self.row_groups {
            return Ok(false);
        }
        let rg = self.next_rg;
        // a corrupt page can make the parquet crate (or a decoder) panic: an error naming the row group
        crate::catch_decoder(|| -> Result<(), TraceError> {
            if self.fast_ok(rg) {
                self.fill_fast(rg, queues)?;
                self.page_decoded_row_groups += 1;
            } else {
                self.fill_arrow(rg, queues)?;
            }
            Ok(())
        })
        .map_err(|m| self.err(None, None, format!("row group {rg}: corrupt data (the Parquet decoder failed: {m})")))??;
        self.next_rg += 1;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocab::{column, ColDefault};

    #[test]
    fn decode_buffers_follow_the_format_columns() {
        // what a null reads as in the page decoder is the format's default (vocab::COLUMNS)
        for (k, name) in FLAT.iter().enumerate() {
            let c = column(name).unwrap_or_else(|| panic!("{name} is not a format column"));
            assert!(c.replayed, "{name}");
            let expect = match c.default {
                ColDefault::Required => None,
                ColDefault::Int(v) => Some(v),
                ColDefault::Bool(b) => Some(b as i64),
                // strings decode to symbols: a null is NULL_SYM, mapped to the default after
                ColDefault::Null | ColDefault::Str(_) => Some(NULL_SYM),
            };
            let expect = if *name == "op" { Some(NULL_SYM) } else { expect };
            assert_eq!(NULLS[k], expect, "{name}");
        }
        for name in LISTS {
            assert!(column(name).is_some_and(|c| c.replayed), "{name}");
        }
    }
}

//! Streaming reader of the native Parquet trace: one row group at a time.
use std::collections::VecDeque;
use std::fs::File;
use std::path::Path;

use arrow_array::{
    Array, ArrayRef, BooleanArray, DictionaryArray, Int32Array, Int64Array, ListArray,
    RecordBatch, StringArray, UInt32Array, UInt64Array,
};
use arrow_array::types::Int32Type;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ProjectionMask;

use crate::{CommDef, CopyKind, MemSpace, Op, OpKind, OpLists, TraceError, TraceSource};

pub struct ParquetTrace {
    path: String,
    file: File,
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
        let b = ParquetRecordBatchReaderBuilder::try_new(file.try_clone().map_err(|e| err(e.to_string()))?)
            .map_err(|e| err(format!("not a readable Parquet trace ({e})")))?;
        let md = b.metadata();
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
        Ok(ParquetTrace {
            path: p,
            row_groups: md.num_row_groups(),
            file,
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

    fn decode(&mut self, batch: &RecordBatch, queues: &mut [VecDeque<Op>]) -> Result<(), TraceError> {
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
            let mut o = Op::new(kind);
            o.seq = s;
            o.mem = m;
            o.copy = ck;
            o.dur_ns = d as u64;
            o.peer = peer.value(i);
            o.tag = tag.value(i);
            o.comm = comm.value(i);
            o.bytes = bytes.value(i);
            o.recv_bytes = recv_bytes.value(i);
            o.recv_peer = recv_peer.value(i);
            o.recv_tag = recv_tag.value(i);
            o.root = root.value(i);
            o.req = req.value(i);
            o.stream = stream.value(i);
            o.contiguous = contiguous.is_null(i) || contiguous.value(i);
            o.priority = priority.map(|p| p.value(i)).unwrap_or(0);
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
    fn fill(&mut self, queues: &mut [VecDeque<Op>]) -> Result<bool, TraceError> {
        if self.next_rg >= self.row_groups {
            return Ok(false);
        }
        let f = self.file.try_clone().map_err(|e| self.err(None, None, e.to_string()))?;
        let reader = ParquetRecordBatchReaderBuilder::try_new(f)
            .and_then(|b| {
                // only the columns the replay reads: timestamps and call sites are for reports
                let skip = ["t_start_ns", "t_end_ns", "callsite"];
                let roots: Vec<usize> = b.schema().fields().iter().enumerate()
                    .filter(|(_, f)| !skip.contains(&f.name().as_str()))
                    .map(|(i, _)| i)
                    .collect();
                let mask = ProjectionMask::roots(b.parquet_schema(), roots);
                b.with_row_groups(vec![self.next_rg]).with_projection(mask).with_batch_size(65536).build()
            })
            .map_err(|e| self.err(None, None, format!("row group {}: {e}", self.next_rg)))?;
        for batch in reader {
            let batch = batch.map_err(|e| self.err(None, None, format!("row group {} unreadable (truncated file?): {e}", self.next_rg)))?;
            self.decode(&batch, queues)?;
        }
        self.next_rg += 1;
        Ok(true)
    }
}

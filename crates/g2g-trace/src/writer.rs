//! Streaming writer of the native format (docs/trace-format.md): rows are pushed in the file's
//! order, (window, rank, seq), and written a row group of whole windows at a time, so a converter
//! holds one row group's columns, never the whole trace.  The columns, their Arrow types and the
//! file metadata are those of `python/g2gsim/trace.py` (`SCHEMA`, `Trace.write`).

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use arrow_array::types::{Int32Type, Int64Type, UInt32Type, UInt64Type};
use arrow_array::{
    ArrayRef, ArrowPrimitiveType, BooleanArray, Int64Array, ListArray, PrimitiveArray, RecordBatch, StringArray,
    UInt64Array,
};
use arrow_buffer::{NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::arrow_writer::ArrowWriterOptions;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::schema::types::ColumnPath;

use crate::TraceError;

/// Rows per window and per row group, as `trace.py` (`WINDOW_ROWS`, `ROW_GROUP_ROWS`).
pub const WINDOW_ROWS: u64 = 1 << 14;
pub const ROW_GROUP_ROWS: usize = 1 << 14;
pub const DEFAULT_WINDOW_OPS: u64 = 4096;

/// `trace.auto_window_ops`: 4096 unless a window of all ranks would exceed `WINDOW_ROWS` rows.
pub fn auto_window_ops(nranks: u64) -> u64 {
    if nranks * DEFAULT_WINDOW_OPS <= WINDOW_ROWS {
        return DEFAULT_WINDOW_OPS;
    }
    let w = (WINDOW_ROWS / nranks.max(1)).max(1);
    1u64 << (63 - w.leading_zeros())
}

/// One row of the native format; fields at their defaults are those `trace.DEFAULTS` gives.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub op: &'static str,
    pub t_start_ns: Option<i64>,
    pub t_end_ns: Option<i64>,
    pub dur_ns: i64,
    pub peer: i32,
    pub tag: i32,
    pub comm_id: u32,
    pub bytes: u64,
    pub recv_bytes: u64,
    pub recv_peer: i32,
    pub recv_tag: i32,
    pub root: i32,
    pub req: u64,
    pub reqs: Option<Vec<u64>>,
    pub counts_bytes: Option<Vec<u64>>,
    pub recv_counts_bytes: Option<Vec<u64>>,
    pub mem_space: &'static str,
    pub copy_kind: Option<&'static str>,
    pub stream: i32,
    pub contiguous: bool,
    pub callsite: Option<String>,
    pub priority: i32,
}

impl Row {
    pub fn new(op: &'static str) -> Row {
        Row {
            op,
            t_start_ns: None,
            t_end_ns: None,
            dur_ns: 0,
            peer: -1,
            tag: -1,
            comm_id: 0,
            bytes: 0,
            recv_bytes: 0,
            recv_peer: -1,
            recv_tag: -1,
            root: -1,
            req: 0,
            reqs: None,
            counts_bytes: None,
            recv_counts_bytes: None,
            mem_space: "host",
            copy_kind: None,
            stream: -1,
            contiguous: true,
            callsite: None,
            priority: 0,
        }
    }
}

/// The Arrow schema of `trace.SCHEMA` (every field nullable, as pyarrow makes them).
pub fn schema() -> Arc<Schema> {
    let l = || DataType::List(Arc::new(Field::new("item", DataType::UInt64, true)));
    Arc::new(Schema::new(vec![
        Field::new("rank", DataType::UInt32, true),
        Field::new("seq", DataType::UInt32, true),
        Field::new("op", DataType::Utf8, true),
        Field::new("t_start_ns", DataType::Int64, true),
        Field::new("t_end_ns", DataType::Int64, true),
        Field::new("dur_ns", DataType::Int64, true),
        Field::new("peer", DataType::Int32, true),
        Field::new("tag", DataType::Int32, true),
        Field::new("comm_id", DataType::UInt32, true),
        Field::new("bytes", DataType::UInt64, true),
        Field::new("recv_bytes", DataType::UInt64, true),
        Field::new("recv_peer", DataType::Int32, true),
        Field::new("recv_tag", DataType::Int32, true),
        Field::new("root", DataType::Int32, true),
        Field::new("req", DataType::UInt64, true),
        Field::new("reqs", l(), true),
        Field::new("counts_bytes", l(), true),
        Field::new("recv_counts_bytes", l(), true),
        Field::new("mem_space", DataType::Utf8, true),
        Field::new("copy_kind", DataType::Utf8, true),
        Field::new("stream", DataType::Int32, true),
        Field::new("contiguous", DataType::Boolean, true),
        Field::new("callsite", DataType::Utf8, true),
        Field::new("priority", DataType::Int32, true),
    ]))
}

/// The columns of one row group, as plain vectors (appending is a push; the arrays are built
/// from them without copying at the flush).
struct Cols {
    n: usize,
    rank: Vec<u32>,
    seq: Vec<u32>,
    op: Vec<&'static str>,
    t_start: Vec<i64>,
    t_end: Vec<i64>,
    t_start_valid: Vec<bool>,
    t_end_valid: Vec<bool>,
    /// a row of this group has no t_start_ns or t_end_ns
    t_nulls: bool,
    dur: Vec<i64>,
    peer: Vec<i32>,
    tag: Vec<i32>,
    comm: Vec<u32>,
    bytes: Vec<u64>,
    recv_bytes: Vec<u64>,
    recv_peer: Vec<i32>,
    recv_tag: Vec<i32>,
    root: Vec<i32>,
    req: Vec<u64>,
    reqs: ListCol,
    counts: ListCol,
    recv_counts: ListCol,
    mem: Vec<&'static str>,
    /// (row, value) of the rows that have a copy kind / call site (few: sparse)
    copy: Vec<(usize, &'static str)>,
    stream: Vec<i32>,
    contig: Vec<bool>,
    callsite: Vec<(usize, String)>,
    priority: Vec<i32>,
}

/// A list<uint64> column: offsets, values and validity.
struct ListCol {
    offsets: Vec<i32>,
    values: Vec<u64>,
    valid: Vec<bool>,
    nulls: usize,
}

impl ListCol {
    fn new(n: usize) -> ListCol {
        let mut offsets = Vec::with_capacity(n + 1);
        offsets.push(0);
        ListCol { offsets, values: Vec::new(), valid: Vec::with_capacity(n), nulls: 0 }
    }

    #[inline]
    fn push(&mut self, v: &Option<Vec<u64>>) {
        match v {
            None => {
                self.valid.push(false);
                self.nulls += 1;
            }
            Some(v) => {
                self.values.extend_from_slice(v);
                self.valid.push(true);
            }
        }
        self.offsets.push(self.values.len() as i32);
    }

    fn finish(&mut self, n: usize) -> ArrayRef {
        let c = std::mem::replace(self, ListCol::new(n));
        let field = Arc::new(Field::new("item", DataType::UInt64, true));
        let nulls = if c.nulls > 0 { Some(NullBuffer::from(c.valid)) } else { None };
        Arc::new(ListArray::new(
            field,
            OffsetBuffer::new(ScalarBuffer::from(c.offsets)),
            Arc::new(UInt64Array::new(ScalarBuffer::from(c.values), None)),
            nulls,
        ))
    }
}

fn prim<T: ArrowPrimitiveType>(v: &mut Vec<T::Native>, n: usize) -> ArrayRef {
    let v = std::mem::replace(v, Vec::with_capacity(n));
    Arc::new(PrimitiveArray::<T>::new(ScalarBuffer::from(v), None))
}

fn times(v: &mut Vec<i64>, valid: &mut Vec<bool>, nulls: bool, n: usize) -> ArrayRef {
    let v = std::mem::replace(v, Vec::with_capacity(n));
    let valid = std::mem::replace(valid, Vec::with_capacity(n));
    let nb = if nulls { Some(NullBuffer::from(valid)) } else { None };
    Arc::new(Int64Array::new(ScalarBuffer::from(v), nb))
}

/// A string column of `rows` rows, null but at the given (row, value) pairs (in row order).
fn sparse_strings<S: AsRef<str>>(v: &[(usize, S)], rows: usize) -> ArrayRef {
    if v.is_empty() {
        return Arc::new(StringArray::new_null(rows));
    }
    let mut out: Vec<Option<&str>> = vec![None; rows];
    for (i, s) in v {
        out[*i] = Some(s.as_ref());
    }
    Arc::new(out.into_iter().collect::<StringArray>())
}

impl Cols {
    fn new() -> Cols {
        let n = ROW_GROUP_ROWS + 4096;
        Cols {
            n,
            rank: Vec::with_capacity(n),
            seq: Vec::with_capacity(n),
            op: Vec::with_capacity(n),
            t_start: Vec::with_capacity(n),
            t_end: Vec::with_capacity(n),
            t_start_valid: Vec::with_capacity(n),
            t_end_valid: Vec::with_capacity(n),
            t_nulls: false,
            dur: Vec::with_capacity(n),
            peer: Vec::with_capacity(n),
            tag: Vec::with_capacity(n),
            comm: Vec::with_capacity(n),
            bytes: Vec::with_capacity(n),
            recv_bytes: Vec::with_capacity(n),
            recv_peer: Vec::with_capacity(n),
            recv_tag: Vec::with_capacity(n),
            root: Vec::with_capacity(n),
            req: Vec::with_capacity(n),
            reqs: ListCol::new(n),
            counts: ListCol::new(n),
            recv_counts: ListCol::new(n),
            mem: Vec::with_capacity(n),
            copy: Vec::new(),
            stream: Vec::with_capacity(n),
            contig: Vec::with_capacity(n),
            callsite: Vec::new(),
            priority: Vec::with_capacity(n),
        }
    }

    fn finish(&mut self) -> Vec<ArrayRef> {
        let n = self.n;
        let t_nulls = std::mem::replace(&mut self.t_nulls, false);
        let rows = self.rank.len();
        let out: Vec<ArrayRef> = vec![
            prim::<UInt32Type>(&mut self.rank, n),
            prim::<UInt32Type>(&mut self.seq, n),
            Arc::new(StringArray::from_iter_values(self.op.iter())),
            times(&mut self.t_start, &mut self.t_start_valid, t_nulls, n),
            times(&mut self.t_end, &mut self.t_end_valid, t_nulls, n),
            prim::<Int64Type>(&mut self.dur, n),
            prim::<Int32Type>(&mut self.peer, n),
            prim::<Int32Type>(&mut self.tag, n),
            prim::<UInt32Type>(&mut self.comm, n),
            prim::<UInt64Type>(&mut self.bytes, n),
            prim::<UInt64Type>(&mut self.recv_bytes, n),
            prim::<Int32Type>(&mut self.recv_peer, n),
            prim::<Int32Type>(&mut self.recv_tag, n),
            prim::<Int32Type>(&mut self.root, n),
            prim::<UInt64Type>(&mut self.req, n),
            self.reqs.finish(n),
            self.counts.finish(n),
            self.recv_counts.finish(n),
            Arc::new(StringArray::from_iter_values(self.mem.iter())),
            sparse_strings(&self.copy, rows),
            prim::<Int32Type>(&mut self.stream, n),
            Arc::new(BooleanArray::from(std::mem::replace(&mut self.contig, Vec::with_capacity(n)))),
            sparse_strings(&self.callsite, rows),
            prim::<Int32Type>(&mut self.priority, n),
        ];
        self.op.clear();
        self.mem.clear();
        self.copy.clear();
        self.callsite.clear();
        out
    }
}

/// Writes a native trace a row group at a time.  Call [`NativeWriter::push`] in (window, rank,
/// seq) order, [`NativeWriter::end_window`] after each window, then [`NativeWriter::finish`].
pub struct NativeWriter {
    path: String,
    w: Option<ArrowWriter<File>>,
    schema: Arc<Schema>,
    cols: Cols,
    rows_in_group: usize,
    pub rows: u64,
}

impl NativeWriter {
    pub fn create(path: impl AsRef<Path>) -> Result<NativeWriter, TraceError> {
        let p = path.as_ref().display().to_string();
        let err = |msg: String| TraceError { file: p.clone(), rank: None, seq: None, msg };
        let f = File::create(path.as_ref()).map_err(|e| err(format!("cannot create: {e}")))?;
        // dictionaries where values repeat (op, memory space, peers, sizes, ...), plain encoding
        // for the columns that are nearly unique per row (times, sequence numbers, requests):
        // hashing those costs time and their dictionary would be dropped anyway; no statistics
        // (the readers do not use them).  Only encodings the core's page decoder reads
        // (`pages.rs`: PLAIN, dictionary, RLE): DELTA_BINARY_PACKED would write ~10 % faster and
        // 8x smaller files, but the replay would then decode every row group through Arrow.
        let mut b = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::try_new(1).unwrap()))
            .set_dictionary_enabled(true)
            .set_statistics_enabled(EnabledStatistics::None)
            .set_max_row_group_size(usize::MAX);
        for c in ["seq", "t_start_ns", "t_end_ns", "dur_ns", "req"] {
            b = b.set_column_dictionary_enabled(ColumnPath::from(c), false);
        }
        let props = b.build();
        let schema = schema();
        // no embedded Arrow schema: its metadata would be fixed before the conversion knows the
        // communicators; readers (pyarrow included) take the g2gsim.* keys from the file's
        // key/value metadata written at the end, and the types from the Parquet schema
        let opts = ArrowWriterOptions::new().with_properties(props).with_skip_arrow_metadata(true);
        let w = ArrowWriter::try_new_with_options(f, schema.clone(), opts)
            .map_err(|e| err(format!("cannot write Parquet: {e}")))?;
        Ok(NativeWriter { path: p, w: Some(w), schema, cols: Cols::new(), rows_in_group: 0, rows: 0 })
    }

    fn err(&self, msg: String) -> TraceError {
        TraceError { file: self.path.clone(), rank: None, seq: None, msg }
    }

    #[inline]
    pub fn push(&mut self, rank: u32, seq: u32, r: &Row) {
        let c = &mut self.cols;
        c.rank.push(rank);
        c.seq.push(seq);
        c.op.push(r.op);
        c.t_start.push(r.t_start_ns.unwrap_or(0));
        c.t_end.push(r.t_end_ns.unwrap_or(0));
        c.t_start_valid.push(r.t_start_ns.is_some());
        c.t_end_valid.push(r.t_end_ns.is_some());
        c.t_nulls |= r.t_start_ns.is_none() || r.t_end_ns.is_none();
        c.dur.push(r.dur_ns);
        c.peer.push(r.peer);
        c.tag.push(r.tag);
        c.comm.push(r.comm_id);
        c.bytes.push(r.bytes);
        c.recv_bytes.push(r.recv_bytes);
        c.recv_peer.push(r.recv_peer);
        c.recv_tag.push(r.recv_tag);
        c.root.push(r.root);
        c.req.push(r.req);
        c.reqs.push(&r.reqs);
        c.counts.push(&r.counts_bytes);
        c.recv_counts.push(&r.recv_counts_bytes);
        c.mem.push(r.mem_space);
        if let Some(k) = r.copy_kind {
            c.copy.push((self.rows_in_group, k));
        }
        c.stream.push(r.stream);
        c.contig.push(r.contiguous);
        if let Some(cs) = &r.callsite {
            c.callsite.push((self.rows_in_group, cs.clone()));
        }
        c.priority.push(r.priority);
        self.rows_in_group += 1;
        self.rows += 1;
    }

    /// A window ends here: flush a row group once it holds at least `ROW_GROUP_ROWS` rows.
    pub fn end_window(&mut self) -> Result<(), TraceError> {
        if self.rows_in_group >= ROW_GROUP_ROWS {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), TraceError> {
        if self.rows_in_group == 0 {
            return Ok(());
        }
        let cols = self.cols.finish();
        let batch = RecordBatch::try_new(self.schema.clone(), cols)
            .map_err(|e| self.err(format!("cannot build a row group: {e}")))?;
        let w = self.w.as_mut().expect("writer open");
        w.write(&batch).map_err(|e| TraceError {
            file: self.path.clone(),
            rank: None,
            seq: None,
            msg: format!("write failed: {e}"),
        })?;
        w.flush().map_err(|e| TraceError {
            file: self.path.clone(),
            rank: None,
            seq: None,
            msg: format!("write failed: {e}"),
        })?;
        self.rows_in_group = 0;
        Ok(())
    }

    /// Writes the last row group and the file metadata (`g2gsim.*` keys) and closes the file.
    pub fn finish(mut self, metadata: &[(String, String)]) -> Result<u64, TraceError> {
        self.flush()?;
        let mut w = self.w.take().expect("writer open");
        for (k, v) in metadata {
            w.append_key_value_metadata(KeyValue::new(k.clone(), v.clone()));
        }
        w.close().map_err(|e| self.err(format!("write failed: {e}")))?;
        Ok(self.rows)
    }
}

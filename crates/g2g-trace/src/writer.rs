//! Streaming writer of the native format (docs/trace-format.md): rows are pushed in the file's
//! order, (window, rank, seq), and written a row group of whole windows at a time, so a converter
//! holds one row group's columns, never the whole trace.  The columns, their Arrow types and the
//! file metadata are those of `python/g2gsim/trace.py` (`SCHEMA`, `Trace.write`).

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use arrow_array::builder::{BooleanBuilder, Int32Builder, Int64Builder, ListBuilder, StringBuilder, UInt32Builder, UInt64Builder};
use arrow_array::{ArrayRef, RecordBatch};
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

struct Cols {
    rank: UInt32Builder,
    seq: UInt32Builder,
    op: StringBuilder,
    t_start: Int64Builder,
    t_end: Int64Builder,
    dur: Int64Builder,
    peer: Int32Builder,
    tag: Int32Builder,
    comm: UInt32Builder,
    bytes: UInt64Builder,
    recv_bytes: UInt64Builder,
    recv_peer: Int32Builder,
    recv_tag: Int32Builder,
    root: Int32Builder,
    req: UInt64Builder,
    reqs: ListBuilder<UInt64Builder>,
    counts: ListBuilder<UInt64Builder>,
    recv_counts: ListBuilder<UInt64Builder>,
    mem: StringBuilder,
    copy: StringBuilder,
    stream: Int32Builder,
    contig: BooleanBuilder,
    callsite: StringBuilder,
    priority: Int32Builder,
}

impl Cols {
    fn new() -> Cols {
        let n = ROW_GROUP_ROWS + 4096;
        Cols {
            rank: UInt32Builder::with_capacity(n),
            seq: UInt32Builder::with_capacity(n),
            op: StringBuilder::with_capacity(n, n * 6),
            t_start: Int64Builder::with_capacity(n),
            t_end: Int64Builder::with_capacity(n),
            dur: Int64Builder::with_capacity(n),
            peer: Int32Builder::with_capacity(n),
            tag: Int32Builder::with_capacity(n),
            comm: UInt32Builder::with_capacity(n),
            bytes: UInt64Builder::with_capacity(n),
            recv_bytes: UInt64Builder::with_capacity(n),
            recv_peer: Int32Builder::with_capacity(n),
            recv_tag: Int32Builder::with_capacity(n),
            root: Int32Builder::with_capacity(n),
            req: UInt64Builder::with_capacity(n),
            reqs: ListBuilder::new(UInt64Builder::new()),
            counts: ListBuilder::new(UInt64Builder::new()),
            recv_counts: ListBuilder::new(UInt64Builder::new()),
            mem: StringBuilder::with_capacity(n, n * 4),
            copy: StringBuilder::new(),
            stream: Int32Builder::with_capacity(n),
            contig: BooleanBuilder::with_capacity(n),
            callsite: StringBuilder::new(),
            priority: Int32Builder::with_capacity(n),
        }
    }

    fn finish(&mut self) -> Vec<ArrayRef> {
        vec![
            Arc::new(self.rank.finish()),
            Arc::new(self.seq.finish()),
            Arc::new(self.op.finish()),
            Arc::new(self.t_start.finish()),
            Arc::new(self.t_end.finish()),
            Arc::new(self.dur.finish()),
            Arc::new(self.peer.finish()),
            Arc::new(self.tag.finish()),
            Arc::new(self.comm.finish()),
            Arc::new(self.bytes.finish()),
            Arc::new(self.recv_bytes.finish()),
            Arc::new(self.recv_peer.finish()),
            Arc::new(self.recv_tag.finish()),
            Arc::new(self.root.finish()),
            Arc::new(self.req.finish()),
            Arc::new(self.reqs.finish()),
            Arc::new(self.counts.finish()),
            Arc::new(self.recv_counts.finish()),
            Arc::new(self.mem.finish()),
            Arc::new(self.copy.finish()),
            Arc::new(self.stream.finish()),
            Arc::new(self.contig.finish()),
            Arc::new(self.callsite.finish()),
            Arc::new(self.priority.finish()),
        ]
    }
}

fn push_list(b: &mut ListBuilder<UInt64Builder>, v: &Option<Vec<u64>>) {
    match v {
        None => b.append_null(),
        Some(v) => {
            b.values().append_slice(v);
            b.append(true);
        }
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
        // (the readers do not use them)
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
        let w = ArrowWriter::try_new_with_options(f, schema.clone(), opts).map_err(|e| err(format!("cannot write Parquet: {e}")))?;
        Ok(NativeWriter { path: p, w: Some(w), schema, cols: Cols::new(), rows_in_group: 0, rows: 0 })
    }

    fn err(&self, msg: String) -> TraceError {
        TraceError { file: self.path.clone(), rank: None, seq: None, msg }
    }

    #[inline]
    pub fn push(&mut self, rank: u32, seq: u32, r: &Row) {
        let c = &mut self.cols;
        c.rank.append_value(rank);
        c.seq.append_value(seq);
        c.op.append_value(r.op);
        c.t_start.append_option(r.t_start_ns);
        c.t_end.append_option(r.t_end_ns);
        c.dur.append_value(r.dur_ns);
        c.peer.append_value(r.peer);
        c.tag.append_value(r.tag);
        c.comm.append_value(r.comm_id);
        c.bytes.append_value(r.bytes);
        c.recv_bytes.append_value(r.recv_bytes);
        c.recv_peer.append_value(r.recv_peer);
        c.recv_tag.append_value(r.recv_tag);
        c.root.append_value(r.root);
        c.req.append_value(r.req);
        push_list(&mut c.reqs, &r.reqs);
        push_list(&mut c.counts, &r.counts_bytes);
        push_list(&mut c.recv_counts, &r.recv_counts_bytes);
        c.mem.append_value(r.mem_space);
        c.copy.append_option(r.copy_kind);
        c.stream.append_value(r.stream);
        c.contig.append_value(r.contiguous);
        c.callsite.append_option(r.callsite.as_deref());
        c.priority.append_value(r.priority);
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
        let batch = RecordBatch::try_new(self.schema.clone(), cols).map_err(|e| self.err(format!("cannot build a row group: {e}")))?;
        let w = self.w.as_mut().expect("writer open");
        w.write(&batch).map_err(|e| TraceError { file: self.path.clone(), rank: None, seq: None, msg: format!("write failed: {e}") })?;
        w.flush().map_err(|e| TraceError { file: self.path.clone(), rank: None, seq: None, msg: format!("write failed: {e}") })?;
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

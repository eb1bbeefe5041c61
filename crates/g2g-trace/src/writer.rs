//! Streaming writer of the native format (docs/trace-format.md): rows are pushed in the file's
//! order, (window, rank, seq), and written a row group of whole windows at a time, so a converter
//! holds one row group's columns, never the whole trace.  The columns, their Arrow types and the
//! file metadata are those of `python/g2gsim/trace.py` (`SCHEMA`, `Trace.write`).

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use arrow_schema::{DataType, Field, Schema};
use bytes::Bytes;
use parquet::arrow::arrow_to_parquet_schema;
use parquet::basic::{Compression, ZstdLevel};
use parquet::column::writer::ColumnCloseResult;
use parquet::file::metadata::{ColumnChunkMetaData, KeyValue};
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::SchemaDescPtr;

use crate::pq_encode::{Chunk, ChunkEncoder, How, Phys};
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

/// The columns of one row group, as plain vectors (numbers as i64: an unsigned 32-bit value's
/// low 32 bits are its INT32 bits, a u64's bits its INT64 bits).
struct Cols {
    rank: Vec<i64>,
    seq: Vec<i64>,
    op: Vec<&'static str>,
    t_start: Vec<i64>,
    t_end: Vec<i64>,
    t_start_valid: Vec<bool>,
    t_end_valid: Vec<bool>,
    /// a row of this group has no t_start_ns or t_end_ns
    t_nulls: bool,
    dur: Vec<i64>,
    peer: Vec<i64>,
    tag: Vec<i64>,
    comm: Vec<i64>,
    bytes: Vec<i64>,
    recv_bytes: Vec<i64>,
    recv_peer: Vec<i64>,
    recv_tag: Vec<i64>,
    root: Vec<i64>,
    req: Vec<i64>,
    reqs: ListCol,
    counts: ListCol,
    recv_counts: ListCol,
    mem: Vec<&'static str>,
    /// (row, value) of the rows that have a copy kind / call site (few: sparse)
    copy: Vec<(usize, &'static str)>,
    stream: Vec<i64>,
    contig: Vec<bool>,
    callsite: Vec<(usize, String)>,
    priority: Vec<i64>,
}

/// A list<uint64> column: offsets, values and validity.
struct ListCol {
    offsets: Vec<i32>,
    /// the u64 values' bits
    values: Vec<i64>,
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
                self.values.extend(v.iter().map(|&x| x as i64));
                self.valid.push(true);
            }
        }
        self.offsets.push(self.values.len() as i32);
    }

    fn encode(&mut self, e: &mut ChunkEncoder) -> Chunk {
        let valid = if self.nulls > 0 { Some(&self.valid[..]) } else { None };
        let c = e.lists(&self.offsets, &self.values, valid);
        self.offsets.truncate(1);
        self.values.clear();
        self.valid.clear();
        self.nulls = 0;
        c
    }
}

impl Cols {
    fn new() -> Cols {
        let n = ROW_GROUP_ROWS + 4096;
        let v = || Vec::with_capacity(n);
        Cols {
            rank: v(),
            seq: v(),
            op: Vec::with_capacity(n),
            t_start: v(),
            t_end: v(),
            t_start_valid: Vec::with_capacity(n),
            t_end_valid: Vec::with_capacity(n),
            t_nulls: false,
            dur: v(),
            peer: v(),
            tag: v(),
            comm: v(),
            bytes: v(),
            recv_bytes: v(),
            recv_peer: v(),
            recv_tag: v(),
            root: v(),
            req: v(),
            reqs: ListCol::new(n),
            counts: ListCol::new(n),
            recv_counts: ListCol::new(n),
            mem: Vec::with_capacity(n),
            copy: Vec::new(),
            stream: v(),
            contig: Vec::with_capacity(n),
            callsite: Vec::new(),
            priority: v(),
        }
    }

    /// Encodes the row group's column chunks in the schema's order and empties the columns.
    /// Dictionaries where values repeat (op, memory space, peers, sizes, ...), PLAIN for the
    /// columns that are nearly unique per row (sequence numbers, times, requests).
    fn encode(&mut self, e: &mut ChunkEncoder) -> Vec<Chunk> {
        let rows = self.rank.len();
        let t_nulls = std::mem::replace(&mut self.t_nulls, false);
        let times = |e: &mut ChunkEncoder, v: &[i64], valid: &[bool]| {
            if t_nulls {
                e.nullable_i64(v, valid)
            } else {
                e.numbers(Phys::I64, v, How::Delta)
            }
        };
        let out = vec![
            e.numbers(Phys::I32, &self.rank, How::Dict),
            e.numbers(Phys::I32, &self.seq, How::Delta),
            e.strings(&self.op),
            times(e, &self.t_start, &self.t_start_valid),
            times(e, &self.t_end, &self.t_end_valid),
            e.numbers(Phys::I64, &self.dur, How::Delta),
            e.numbers(Phys::I32, &self.peer, How::Dict),
            e.numbers(Phys::I32, &self.tag, How::Dict),
            e.numbers(Phys::I32, &self.comm, How::Dict),
            e.numbers(Phys::I64, &self.bytes, How::Dict),
            e.numbers(Phys::I64, &self.recv_bytes, How::Dict),
            e.numbers(Phys::I32, &self.recv_peer, How::Dict),
            e.numbers(Phys::I32, &self.recv_tag, How::Dict),
            e.numbers(Phys::I32, &self.root, How::Dict),
            e.numbers(Phys::I64, &self.req, How::Delta),
            self.reqs.encode(e),
            self.counts.encode(e),
            self.recv_counts.encode(e),
            e.strings(&self.mem),
            e.sparse_strings(&self.copy, rows),
            e.numbers(Phys::I32, &self.stream, How::Dict),
            e.booleans(&self.contig),
            e.sparse_strings(&self.callsite, rows),
            e.numbers(Phys::I32, &self.priority, How::Dict),
        ];
        for v in [
            &mut self.rank,
            &mut self.seq,
            &mut self.t_start,
            &mut self.t_end,
            &mut self.dur,
            &mut self.peer,
            &mut self.tag,
            &mut self.comm,
            &mut self.bytes,
            &mut self.recv_bytes,
            &mut self.recv_peer,
            &mut self.recv_tag,
            &mut self.root,
            &mut self.req,
            &mut self.stream,
            &mut self.priority,
        ] {
            v.clear();
        }
        self.t_start_valid.clear();
        self.t_end_valid.clear();
        self.op.clear();
        self.mem.clear();
        self.copy.clear();
        self.contig.clear();
        self.callsite.clear();
        out
    }
}

/// Writes a native trace a row group at a time.  Call [`NativeWriter::push`] in (window, rank,
/// seq) order, [`NativeWriter::end_window`] after each window, then [`NativeWriter::finish`].
///
/// The column chunks are encoded by `pq_encode` (no Arrow arrays; only encodings the core's
/// page decoder, `pages.rs`, reads), the file and its footer written by parquet-rs's
/// `SerializedFileWriter`.
pub struct NativeWriter {
    path: String,
    w: Option<SerializedFileWriter<File>>,
    descr: SchemaDescPtr,
    enc: ChunkEncoder,
    cols: Cols,
    rows_in_group: usize,
    pub rows: u64,
}

/// zstd level of the pages (1: the fastest of the usual levels; the page decoder reads any).
const ZSTD_LEVEL: i32 = 1;

impl NativeWriter {
    pub fn create(path: impl AsRef<Path>) -> Result<NativeWriter, TraceError> {
        let p = path.as_ref().display().to_string();
        let err = |msg: String| TraceError { file: p.clone(), rank: None, seq: None, msg };
        let f = File::create(path.as_ref()).map_err(|e| err(format!("cannot create: {e}")))?;
        // the Parquet schema the Arrow writer would give `schema()`; no embedded Arrow schema:
        // its metadata would be fixed before the conversion knows the communicators; readers
        // (pyarrow included) take the g2gsim.* keys from the file's key/value metadata written
        // at the end, and the types from the Parquet schema
        let descr = arrow_to_parquet_schema(&schema()).map_err(|e| err(format!("cannot write Parquet: {e}")))?;
        let props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::try_new(ZSTD_LEVEL).unwrap()))
            .set_statistics_enabled(EnabledStatistics::None)
            .build();
        let w = SerializedFileWriter::new(f, descr.root_schema_ptr(), Arc::new(props))
            .map_err(|e| err(format!("cannot write Parquet: {e}")))?;
        Ok(NativeWriter {
            path: p,
            w: Some(w),
            descr: Arc::new(descr),
            enc: ChunkEncoder::new(ZSTD_LEVEL),
            cols: Cols::new(),
            rows_in_group: 0,
            rows: 0,
        })
    }

    fn err(&self, msg: String) -> TraceError {
        TraceError { file: self.path.clone(), rank: None, seq: None, msg }
    }

    #[inline]
    pub fn push(&mut self, rank: u32, seq: u32, r: &Row) {
        let c = &mut self.cols;
        c.rank.push(rank as i64);
        c.seq.push(seq as i64);
        c.op.push(r.op);
        c.t_start.push(r.t_start_ns.unwrap_or(0));
        c.t_end.push(r.t_end_ns.unwrap_or(0));
        c.t_start_valid.push(r.t_start_ns.is_some());
        c.t_end_valid.push(r.t_end_ns.is_some());
        c.t_nulls |= r.t_start_ns.is_none() || r.t_end_ns.is_none();
        c.dur.push(r.dur_ns);
        c.peer.push(r.peer as i64);
        c.tag.push(r.tag as i64);
        c.comm.push(r.comm_id as i64);
        c.bytes.push(r.bytes as i64);
        c.recv_bytes.push(r.recv_bytes as i64);
        c.recv_peer.push(r.recv_peer as i64);
        c.recv_tag.push(r.recv_tag as i64);
        c.root.push(r.root as i64);
        c.req.push(r.req as i64);
        c.reqs.push(&r.reqs);
        c.counts.push(&r.counts_bytes);
        c.recv_counts.push(&r.recv_counts_bytes);
        c.mem.push(r.mem_space);
        if let Some(k) = r.copy_kind {
            c.copy.push((self.rows_in_group, k));
        }
        c.stream.push(r.stream as i64);
        c.contig.push(r.contiguous);
        if let Some(cs) = &r.callsite {
            c.callsite.push((self.rows_in_group, cs.clone()));
        }
        c.priority.push(r.priority as i64);
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
        let rows = self.rows_in_group as u64;
        let chunks = self.cols.encode(&mut self.enc);
        self.rows_in_group = 0;
        let w = self.w.as_mut().expect("writer open");
        let r = (|| -> parquet::errors::Result<()> {
            let mut rg = w.next_row_group()?;
            for (i, c) in chunks.into_iter().enumerate() {
                let len = c.bytes.len() as i64;
                let codec = if c.compressed {
                    Compression::ZSTD(ZstdLevel::try_new(ZSTD_LEVEL).unwrap())
                } else {
                    Compression::UNCOMPRESSED
                };
                let mut b = ColumnChunkMetaData::builder(self.descr.column(i))
                    .set_compression(codec)
                    .set_encodings(c.encodings)
                    .set_total_compressed_size(len)
                    .set_total_uncompressed_size(c.uncompressed)
                    .set_num_values(c.num_values)
                    .set_data_page_offset(c.data_offset);
                if c.has_dict {
                    b = b.set_dictionary_page_offset(Some(0));
                }
                let close = ColumnCloseResult {
                    bytes_written: len as u64,
                    rows_written: rows,
                    metadata: b.build()?,
                    bloom_filter: None,
                    column_index: None,
                    offset_index: None,
                };
                rg.append_column(&Bytes::from(c.bytes), close)?;
            }
            rg.close()?;
            Ok(())
        })();
        r.map_err(|e| self.err(format!("write failed: {e}")))
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

//! The page decoder (fast path) must give exactly what the Arrow path gives, for every way a
//! Parquet writer may lay the trace out; bad rows must give errors naming file, rank and event.
use std::collections::VecDeque;
use std::sync::Arc;

use arrow_array::builder::{ListBuilder, UInt64Builder};
use arrow_array::{ArrayRef, BooleanArray, Int32Array, Int64Array, RecordBatch, StringArray, UInt32Array, UInt64Array};
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::{WriterProperties, WriterVersion};
use parquet::format::KeyValue;

use g2g_trace::{Op, ParquetTrace, TraceSource};

struct Rows {
    rank: Vec<u32>,
    seq: Vec<u32>,
    op: Vec<Option<&'static str>>,
    dur: Vec<i64>,
    peer: Vec<Option<i32>>,
    bytes: Vec<u64>,
    mem: Vec<Option<&'static str>>,
    copy: Vec<Option<&'static str>>,
    contig: Vec<Option<bool>>,
    reqs: Vec<Option<Vec<u64>>>,
}

/// `nranks` ranks of `per_rank` ops each, in (window, rank, seq) order with windows of `window`.
fn rows(nranks: u32, per_rank: u32, window: u32) -> Rows {
    let mut r = Rows {
        rank: vec![],
        seq: vec![],
        op: vec![],
        dur: vec![],
        peer: vec![],
        bytes: vec![],
        mem: vec![],
        copy: vec![],
        contig: vec![],
        reqs: vec![],
    };
    let mut w = 0;
    while w * window < per_rank {
        for rank in 0..nranks {
            for s in w * window..((w + 1) * window).min(per_rank) {
                let k = (rank * 7 + s * 3) % 11;
                r.rank.push(rank);
                r.seq.push(s);
                r.op.push(Some(
                    [
                        "Compute",
                        "Isend",
                        "Irecv",
                        "Waitall",
                        "Memcpy",
                        "Allreduce",
                        "Kernel",
                        "Send",
                        "Recv",
                        "Ibcast",
                        "Barrier",
                    ][k as usize],
                ));
                r.dur.push(if k == 0 { 1000 + s as i64 } else { 0 });
                r.peer.push(if k == 1 || k == 2 {
                    Some(((rank + s) % nranks) as i32)
                } else if k == 7 {
                    None
                } else {
                    Some(-1)
                });
                r.bytes.push(if k == 1 { 1u64 << (s % 40) } else { 0 });
                r.mem.push(if k % 3 == 0 {
                    None
                } else if k % 3 == 1 {
                    Some("device")
                } else {
                    Some("host")
                });
                r.copy.push(if k == 4 { Some(["d2h", "h2d", "d2d", "h2h"][(s % 4) as usize]) } else { None });
                r.contig.push(if s % 5 == 0 { None } else { Some(s % 13 != 0) });
                r.reqs.push(if k == 3 { Some((0..(s % 6) as u64).collect()) } else { None });
            }
        }
        w += 1;
    }
    r
}

/// A list element written as null (reads as 0).
const NULL_ELEM: u64 = u64::MAX;

fn write(
    path: &std::path::Path,
    nranks: u32,
    r: &Rows,
    props: WriterProperties,
    with_priority: bool,
    batch_rows: usize,
) {
    // an element `NULL_ELEM` is written as a null element
    let list_u64 = |v: &Vec<Option<Vec<u64>>>| -> ArrayRef {
        let mut b = ListBuilder::new(UInt64Builder::new());
        for x in v {
            match x {
                Some(x) => {
                    for e in x {
                        if *e == NULL_ELEM {
                            b.values().append_null();
                        } else {
                            b.values().append_value(*e);
                        }
                    }
                    b.append(true);
                }
                None => b.append(false),
            }
        }
        Arc::new(b.finish())
    };
    let n = r.rank.len();
    let nulls: Vec<Option<Vec<u64>>> = vec![None; n];
    let mut fields = vec![
        Field::new("rank", DataType::UInt32, true),
        Field::new("seq", DataType::UInt32, true),
        Field::new("op", DataType::Utf8, true),
        Field::new("t_start_ns", DataType::Int64, true),
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
        Field::new("reqs", DataType::List(Arc::new(Field::new("item", DataType::UInt64, true))), true),
        Field::new("counts_bytes", DataType::List(Arc::new(Field::new("item", DataType::UInt64, true))), true),
        Field::new("recv_counts_bytes", DataType::List(Arc::new(Field::new("item", DataType::UInt64, true))), true),
        Field::new("mem_space", DataType::Utf8, true),
        Field::new("copy_kind", DataType::Utf8, true),
        Field::new("stream", DataType::Int32, true),
        Field::new("contiguous", DataType::Boolean, true),
    ];
    let mut cols: Vec<ArrayRef> = vec![
        Arc::new(UInt32Array::from(r.rank.clone())),
        Arc::new(UInt32Array::from(r.seq.clone())),
        Arc::new(StringArray::from(r.op.clone())),
        Arc::new(Int64Array::from(vec![None::<i64>; n])),
        Arc::new(Int64Array::from(r.dur.clone())),
        Arc::new(Int32Array::from(r.peer.clone())),
        Arc::new(Int32Array::from((0..n).map(|i| (i % 9) as i32 - 1).collect::<Vec<_>>())),
        Arc::new(UInt32Array::from(vec![0u32; n])),
        Arc::new(UInt64Array::from(r.bytes.clone())),
        Arc::new(UInt64Array::from(r.bytes.iter().map(|b| b / 2).collect::<Vec<_>>())),
        Arc::new(Int32Array::from(vec![-1; n])),
        Arc::new(Int32Array::from(vec![-1; n])),
        Arc::new(Int32Array::from((0..n).map(|i| if i % 17 == 0 { 3 } else { -1 }).collect::<Vec<_>>())),
        Arc::new(UInt64Array::from((0..n as u64).map(|i| i % 13).collect::<Vec<_>>())),
        list_u64(&r.reqs),
        list_u64(&nulls),
        list_u64(&r.reqs.iter().map(|x| x.as_ref().filter(|v| v.len() == 2).cloned()).collect()),
        Arc::new(StringArray::from(r.mem.clone())),
        Arc::new(StringArray::from(r.copy.clone())),
        Arc::new(Int32Array::from((0..n).map(|i| (i % 3) as i32 - 1).collect::<Vec<_>>())),
        Arc::new(BooleanArray::from(r.contig.clone())),
    ];
    if with_priority {
        fields.push(Field::new("priority", DataType::Int32, true));
        cols.push(Arc::new(Int32Array::from((0..n).map(|i| (i % 4) as i32).collect::<Vec<_>>())));
    }
    let schema = Arc::new(Schema::new(fields));
    let batch = RecordBatch::try_new(schema.clone(), cols).unwrap();
    let f = std::fs::File::create(path).unwrap();
    let mut w = ArrowWriter::try_new(f, schema, Some(props)).unwrap();
    for (k, v) in [("g2gsim.format_version", "1".to_string()), ("g2gsim.nranks", nranks.to_string())] {
        w.append_key_value_metadata(KeyValue::new(k.into(), v));
    }
    let mut at = 0;
    while at < n {
        let m = batch_rows.min(n - at);
        w.write(&batch.slice(at, m)).unwrap();
        w.flush().unwrap(); // one row group per write
        at += m;
    }
    w.close().unwrap();
}

fn read_all(path: &std::path::Path, arrow: bool) -> Result<Vec<VecDeque<Op>>, String> {
    read_counting(path, arrow).map(|x| x.0)
}

/// The queues, and how many row groups the page decoder read.
fn read_counting(path: &std::path::Path, arrow: bool) -> Result<(Vec<VecDeque<Op>>, usize), String> {
    let mut tr = ParquetTrace::open(path).map_err(|e| e.to_string())?;
    tr.force_arrow = arrow;
    let mut qs: Vec<VecDeque<Op>> = (0..tr.nranks()).map(|_| VecDeque::new()).collect();
    while tr.fill(&mut qs).map_err(|e| e.to_string())? {}
    Ok((qs, tr.page_decoded_row_groups))
}

fn tmp(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("g2g-trace-test-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

#[test]
fn page_decoder_matches_arrow_for_every_layout() {
    let nranks = 37;
    let per_rank = 300;
    let window = 128;
    let r = rows(nranks, per_rank, window);
    let rows_per_window = (nranks * window) as usize;
    let mut case = 0;
    for version in [WriterVersion::PARQUET_1_0, WriterVersion::PARQUET_2_0] {
        for dict in [true, false] {
            for comp in [Compression::ZSTD(ZstdLevel::default()), Compression::SNAPPY, Compression::UNCOMPRESSED] {
                for (page_rows, dict_limit) in [(1 << 20, 1 << 20), (100, 64)] {
                    let props = WriterProperties::builder()
                        .set_writer_version(version)
                        .set_dictionary_enabled(dict)
                        .set_compression(comp)
                        .set_data_page_row_count_limit(page_rows)
                        .set_write_batch_size(page_rows.min(1024))
                        .set_dictionary_page_size_limit(dict_limit)
                        .build();
                    case += 1;
                    let p = tmp(&format!("case{case}.g2g.parquet"));
                    let batch_rows = if case % 2 == 0 { rows_per_window } else { usize::MAX };
                    write(&p, nranks, &r, props, case % 3 != 0, batch_rows);
                    let (fast, by_pages) = read_counting(&p, false).unwrap();
                    // parquet-rs writes DELTA_* encodings in v2 files without a dictionary (or
                    // once the dictionary is full): those row groups go through Arrow
                    if version == WriterVersion::PARQUET_1_0 || (dict && dict_limit > 64) {
                        assert!(by_pages > 0, "case {case}: the page decoder was not used");
                    }
                    let slow = read_all(&p, true).unwrap();
                    let total: usize = fast.iter().map(|q| q.len()).sum();
                    assert_eq!(total, r.rank.len(), "case {case}");
                    for (rank, (a, b)) in fast.iter().zip(&slow).enumerate() {
                        assert_eq!(a.len(), b.len(), "case {case} rank {rank}");
                        // a rank's ops come in event order from 0: the queue index is the event
                        for (seq, (x, y)) in a.iter().zip(b).enumerate() {
                            let seq = seq as u32;
                            // the Arrow path leaves a null peer undefined; the page decoder gives -1
                            let mut y = y.clone();
                            if r.rank
                                .iter()
                                .zip(&r.seq)
                                .zip(&r.peer)
                                .any(|((&rr, &s), p)| rr == rank as u32 && s == seq && p.is_none())
                                && by_pages > 0
                            {
                                assert_eq!(x.peer, -1, "case {case} rank {rank} seq {seq}");
                                y.peer = -1;
                            }
                            assert_eq!(*x, y, "case {case} rank {rank} seq {seq}");
                        }
                    }
                    // spot checks against the rows written
                    let q = &fast[5];
                    for (seq, op) in q.iter().enumerate() {
                        let i = r.rank.iter().zip(&r.seq).position(|(&rr, &s)| rr == 5 && s == seq as u32).unwrap();
                        assert_eq!(op.kind.name(), r.op[i].unwrap());
                        assert_eq!(op.contiguous, r.contig[i].unwrap_or(true));
                        assert_eq!(op.reqs(), r.reqs[i].as_deref().unwrap_or(&[]));
                        assert_eq!(op.lists.is_some(), r.reqs[i].is_some());
                        assert_eq!(op.bytes, r.bytes[i]);
                        assert_eq!(op.dur_ns(), if op.kind.has_duration() { r.dur[i] as u64 } else { 0 });
                    }
                    std::fs::remove_file(&p).ok();
                }
            }
        }
    }
}

fn expect_error(mut r: Rows, edit: impl Fn(&mut Rows), want: &str) {
    edit(&mut r);
    let p = tmp(&format!("bad-{}.g2g.parquet", want.len()));
    write(&p, 4, &r, WriterProperties::builder().build(), true, usize::MAX);
    for arrow in [false, true] {
        let e = read_all(&p, arrow).err().unwrap_or_else(|| panic!("no error for {want}"));
        assert!(e.contains(want) && e.contains(&p.display().to_string()), "arrow={arrow}: {e}");
    }
    std::fs::remove_file(&p).ok();
}

#[test]
fn bad_rows_name_file_rank_and_event() {
    let base = || rows(4, 20, 8);
    expect_error(base(), |r| r.op[10] = Some("MPI_Frobnicate"), "unknown operation \"MPI_Frobnicate\"");
    expect_error(base(), |r| r.op[3] = None, "rank 0, event 3: unknown operation \"\"");
    expect_error(base(), |r| r.seq[9] = 7, "rank 1, event 7: events out of order");
    expect_error(base(), |r| r.dur[2] = -5, "rank 0, event 2: negative dur_ns -5");
    expect_error(base(), |r| r.mem[4] = Some("gpu"), "unknown mem_space \"gpu\"");
    expect_error(base(), |r| r.copy[4] = Some("x2y"), "unknown copy_kind \"x2y\"");
    expect_error(base(), |r| r.rank[0] = 9, "rank 9, event 0: rank is outside 0..4");
}

/// List columns whose levels come in long runs (null lists across pages, blocks and decode
/// chunks; single-element, empty and null-element lists) and in bit-packed stretches: the page
/// decoder takes the runs whole, and must still give what Arrow gives.
#[test]
fn list_runs_match_arrow() {
    let nranks = 3;
    let per_rank = 4000;
    let mut r = rows(nranks, per_rank, per_rank);
    let n = r.rank.len();
    for (g, l) in r.reqs.iter_mut().enumerate() {
        *l = match g {
            0..=4999 => None,
            5000..=5299 => Some(vec![g as u64]),
            5300..=5349 => Some(vec![]),
            5350..=5399 => Some(vec![NULL_ELEM, 5, NULL_ELEM]),
            5400..=5999 => (g % 3 != 0).then(|| {
                (0..(g % 5) as u64)
                    .map(|e| if (g + e as usize).is_multiple_of(7) { NULL_ELEM } else { e * 3 })
                    .collect()
            }),
            6000..=6099 => Some(vec![7; 70]),
            _ if g % 1500 == 0 => Some(vec![1, 2, 3]),
            _ => None,
        };
    }
    assert_eq!(n, 12000);
    let mut case = 0;
    for version in [WriterVersion::PARQUET_1_0, WriterVersion::PARQUET_2_0] {
        for dict in [true, false] {
            for page_rows in [1 << 20, 100, 7] {
                let props = WriterProperties::builder()
                    .set_writer_version(version)
                    .set_dictionary_enabled(dict)
                    .set_data_page_row_count_limit(page_rows)
                    .set_write_batch_size(page_rows.min(1024))
                    .build();
                case += 1;
                let p = tmp(&format!("lists{case}.g2g.parquet"));
                write(&p, nranks, &r, props, true, usize::MAX);
                let (fast, by_pages) = read_counting(&p, false).unwrap();
                if version == WriterVersion::PARQUET_1_0 || dict {
                    assert!(by_pages > 0, "case {case}: the page decoder was not used");
                }
                let slow = read_all(&p, true).unwrap();
                for (rank, (a, b)) in fast.iter().zip(&slow).enumerate() {
                    assert_eq!(a.len(), b.len(), "case {case} rank {rank}");
                    for (seq, (x, y)) in a.iter().zip(b).enumerate() {
                        let seq = seq as u32;
                        // the Arrow path leaves a null element undefined; the page decoder gives 0
                        let g = r.rank.iter().zip(&r.seq).position(|(&rr, &s)| rr == rank as u32 && s == seq).unwrap();
                        if !r.reqs[g].as_ref().is_some_and(|v| v.contains(&NULL_ELEM)) {
                            assert_eq!(x.lists, y.lists, "case {case} rank {rank} seq {seq}");
                        }
                    }
                }
                // and against the rows written (null elements: 0), where the page decoder read them
                for (g, want) in r.reqs.iter().enumerate().filter(|_| by_pages > 0) {
                    let op = &fast[r.rank[g] as usize][r.seq[g] as usize];
                    let want: Option<Vec<u64>> =
                        want.as_ref().map(|v| v.iter().map(|&e| if e == NULL_ELEM { 0 } else { e }).collect());
                    assert_eq!(op.lists.as_ref().map(|l| l.reqs.clone()), want, "case {case} row {g}");
                }
                std::fs::remove_file(&p).ok();
            }
        }
    }
}

/// A bad row stops the read there: the rows before it are queued, as by the Arrow path.
#[test]
fn rows_before_a_bad_row_are_queued() {
    for bad in [0, 1, 37, 79] {
        let mut r = rows(4, 20, 8);
        r.dur[bad] = -5;
        let p = tmp(&format!("bad-queued-{bad}.g2g.parquet"));
        write(&p, 4, &r, WriterProperties::builder().build(), true, usize::MAX);
        let queued = |arrow: bool| {
            let mut tr = ParquetTrace::open(&p).unwrap();
            tr.force_arrow = arrow;
            let mut qs: Vec<VecDeque<Op>> = (0..4).map(|_| VecDeque::new()).collect();
            let e = tr.fill(&mut qs).unwrap_err();
            assert_eq!((e.rank, e.seq), (Some(r.rank[bad]), Some(r.seq[bad])));
            // the Arrow path leaves a null peer undefined: compare the rest
            qs.into_iter()
                .map(|q| {
                    q.into_iter()
                        .enumerate()
                        .map(|(seq, o)| (seq, o.kind, o.bytes, o.dur_ns(), o.lists))
                        .collect::<Vec<_>>()
                })
                .collect::<Vec<_>>()
        };
        let (fast, slow) = (queued(false), queued(true));
        assert_eq!(fast.iter().map(|q| q.len()).sum::<usize>(), bad);
        assert_eq!(fast, slow, "bad row {bad}");
        std::fs::remove_file(&p).ok();
    }
}

/// Compares the page decoder's queues with the Arrow path's (a null peer: -1 from the page
/// decoder, undefined from Arrow).
fn assert_same_queues(fast: &[VecDeque<Op>], slow: &[VecDeque<Op>], what: &str) {
    assert_eq!(fast.len(), slow.len(), "{what}");
    for (rank, (a, b)) in fast.iter().zip(slow).enumerate() {
        assert_eq!(a.len(), b.len(), "{what} rank {rank}");
        for (seq, (x, y)) in a.iter().zip(b).enumerate() {
            let mut y = y.clone();
            if x.peer == -1 {
                y.peer = -1;
            }
            assert_eq!(*x, y, "{what} rank {rank} seq {seq}");
        }
    }
}

/// Integer columns in DELTA_BINARY_PACKED, as parquet-rs writes them (the reference encoder),
/// are read by the page decoder, with what the Arrow path gives.
#[test]
fn delta_binary_packed_columns_are_page_decoded() {
    use parquet::basic::Encoding;
    use parquet::schema::types::ColumnPath;
    let (nranks, per_rank, window) = (37, 300, 128);
    let r = rows(nranks, per_rank, window);
    for version in [WriterVersion::PARQUET_1_0, WriterVersion::PARQUET_2_0] {
        for page_rows in [1 << 20, 100] {
            let mut b = WriterProperties::builder()
                .set_writer_version(version)
                .set_dictionary_enabled(false)
                .set_data_page_row_count_limit(page_rows)
                .set_write_batch_size(page_rows.min(1024));
            for c in ["rank", "seq", "t_start_ns", "dur_ns", "peer", "tag", "bytes", "req", "reqs.list.item", "stream"]
            {
                b = b.set_column_encoding(ColumnPath::from(c), Encoding::DELTA_BINARY_PACKED);
            }
            // strings stay PLAIN (the page decoder does not read DELTA_BYTE_ARRAY)
            for c in ["op", "mem_space", "copy_kind"] {
                b = b.set_column_encoding(ColumnPath::from(c), Encoding::PLAIN);
            }
            let p = tmp(&format!("delta-{version:?}-{page_rows}.g2g.parquet"));
            write(&p, nranks, &r, b.build(), true, usize::MAX);
            let (fast, by_pages) = read_counting(&p, false).unwrap();
            assert!(by_pages > 0, "{version:?} {page_rows}: the page decoder was not used");
            let slow = read_all(&p, true).unwrap();
            assert_same_queues(&fast, &slow, &format!("{version:?} {page_rows}"));
            std::fs::remove_file(&p).ok();
        }
    }
}

/// The native writer's own encoding (`pq_encode`: one-run levels, constant and small
/// dictionaries, DELTA_BINARY_PACKED times, uncompressed tiny chunks) reads back exactly through
/// parquet-rs's Arrow reader (the reference decoder), and the page decoder gives what the Arrow
/// path gives.
#[test]
fn native_writer_rows_read_back_exactly() {
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Int32Type, Int64Type, UInt32Type, UInt64Type};
    use arrow_array::Array;
    use g2g_trace::writer::{NativeWriter, Row};
    let ops = ["Compute", "Isend", "Irecv", "Waitall", "Allreduce", "Memcpy", "Send"];
    let (nranks, per_rank) = (4u32, 9000u32);
    let window = 4096u32;
    let mut want: Vec<(u32, u32, Row)> = Vec::new();
    let mut w0 = 0;
    while w0 < per_rank {
        for rank in 0..nranks {
            for seq in w0..(w0 + window).min(per_rank) {
                let k = ((rank * 5 + seq * 3) % 7) as usize;
                let mut row = Row::new(ops[k]);
                let t = (rank as i64) << 40 | (seq as i64 * 1000 + (seq % 13) as i64);
                // a stretch without times (nullable pages), in the second row group
                if !(20_000..20_100).contains(&(want.len())) {
                    row.t_start_ns = Some(t);
                    row.t_end_ns = Some(t + 500 + (seq % 5) as i64);
                }
                row.dur_ns = if k == 0 { (seq as i64 * 7919) % 100_000 } else { 0 };
                if k == 1 || k == 2 || k == 6 {
                    row.peer = ((rank + 1 + seq % 3) % nranks) as i32;
                    row.tag = (seq % 9) as i32 - 1;
                    row.bytes = if seq % 101 == 0 { 1 << 59 } else { 8 << (seq % 20) };
                    row.mem_space = if seq % 2 == 0 { "device" } else { "host" };
                }
                if k == 1 || k == 2 {
                    row.req = (rank as u64) << 56 | seq as u64;
                }
                if k == 3 {
                    row.reqs = Some((0..(seq % 4) as u64).map(|j| seq as u64 * 4 + j).collect());
                }
                if k == 4 {
                    row.comm_id = 1;
                    row.root = (seq % 4) as i32;
                }
                if k == 5 {
                    row.copy_kind = Some("d2h");
                    row.stream = 3;
                    row.contiguous = seq % 3 != 0;
                    row.mem_space = "device";
                }
                if seq % 997 == 0 {
                    row.callsite = Some(format!("app.c:{seq}"));
                }
                want.push((rank, seq, row));
            }
        }
        w0 += window;
    }
    let p = tmp("native-writer.g2g.parquet");
    let mut w = NativeWriter::create(&p).unwrap();
    let mut at = 0;
    let mut w0 = 0;
    while w0 < per_rank {
        let rows_in_window = (nranks * (window.min(per_rank - w0))) as usize;
        for (rank, seq, row) in &want[at..at + rows_in_window] {
            w.push(*rank, *seq, row);
        }
        at += rows_in_window;
        w.end_window().unwrap();
        w0 += window;
    }
    let meta =
        [("g2gsim.format_version".to_string(), "1".to_string()), ("g2gsim.nranks".to_string(), nranks.to_string())];
    assert_eq!(w.finish(&meta).unwrap(), want.len() as u64);

    // every column, as parquet-rs's Arrow reader decodes it
    let f = std::fs::File::open(&p).unwrap();
    let rd = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(f).unwrap();
    let row_groups = rd.metadata().num_row_groups();
    assert!(row_groups >= 2);
    let mut i = 0;
    for b in rd.build().unwrap() {
        let b = b.unwrap();
        let col = |name: &str| b.column_by_name(name).unwrap().clone();
        let (rank, seq) = (col("rank"), col("seq"));
        let (rank, seq) = (rank.as_primitive::<UInt32Type>(), seq.as_primitive::<UInt32Type>());
        let (op, mem, copy, cs) = (col("op"), col("mem_space"), col("copy_kind"), col("callsite"));
        let (ts, te, dur, req) = (col("t_start_ns"), col("t_end_ns"), col("dur_ns"), col("req"));
        let (peer, tag, bytes, comm, root, stream) =
            (col("peer"), col("tag"), col("bytes"), col("comm_id"), col("root"), col("stream"));
        let (reqs, contig, prio, rb) = (col("reqs"), col("contiguous"), col("priority"), col("recv_bytes"));
        let reqs = reqs.as_list::<i32>();
        for j in 0..b.num_rows() {
            let (r0, s0, row) = &want[i];
            let what = format!("row {i}");
            assert_eq!((rank.value(j), seq.value(j)), (*r0, *s0), "{what}");
            assert_eq!(op.as_string::<i32>().value(j), row.op, "{what}");
            assert_eq!(mem.as_string::<i32>().value(j), row.mem_space, "{what}");
            let opt_str = |a: &arrow_array::ArrayRef| a.is_valid(j).then(|| a.as_string::<i32>().value(j).to_string());
            assert_eq!(opt_str(&copy).as_deref(), row.copy_kind, "{what}");
            assert_eq!(opt_str(&cs), row.callsite, "{what}");
            let opt_i64 = |a: &arrow_array::ArrayRef| a.is_valid(j).then(|| a.as_primitive::<Int64Type>().value(j));
            assert_eq!(opt_i64(&ts), row.t_start_ns, "{what}");
            assert_eq!(opt_i64(&te), row.t_end_ns, "{what}");
            assert_eq!(dur.as_primitive::<Int64Type>().value(j), row.dur_ns, "{what}");
            assert_eq!(req.as_primitive::<UInt64Type>().value(j), row.req, "{what}");
            assert_eq!(peer.as_primitive::<Int32Type>().value(j), row.peer, "{what}");
            assert_eq!(tag.as_primitive::<Int32Type>().value(j), row.tag, "{what}");
            assert_eq!(bytes.as_primitive::<UInt64Type>().value(j), row.bytes, "{what}");
            assert_eq!(rb.as_primitive::<UInt64Type>().value(j), row.recv_bytes, "{what}");
            assert_eq!(comm.as_primitive::<UInt32Type>().value(j), row.comm_id, "{what}");
            assert_eq!(root.as_primitive::<Int32Type>().value(j), row.root, "{what}");
            assert_eq!(stream.as_primitive::<Int32Type>().value(j), row.stream, "{what}");
            assert_eq!(prio.as_primitive::<Int32Type>().value(j), row.priority, "{what}");
            assert_eq!(contig.as_boolean().value(j), row.contiguous, "{what}");
            let got_reqs = reqs.is_valid(j).then(|| reqs.value(j).as_primitive::<UInt64Type>().values().to_vec());
            assert_eq!(got_reqs, row.reqs, "{what}");
            for c in ["counts_bytes", "recv_counts_bytes"] {
                assert!(col(c).is_null(j), "{what} {c}");
            }
            i += 1;
        }
    }
    assert_eq!(i, want.len());

    // and the replay's readers
    let (fast, by_pages) = read_counting(&p, false).unwrap();
    assert_eq!(by_pages, row_groups, "every row group page-decoded");
    let slow = read_all(&p, true).unwrap();
    assert_same_queues(&fast, &slow, "native writer");
    std::fs::remove_file(&p).ok();
}

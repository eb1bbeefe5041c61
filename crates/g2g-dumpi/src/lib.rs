//! Streaming SST DUMPI reader.  `python/g2gsim/readers/dumpi_reader.py` parses each file's
//! sections (index, header, footer, datatype sizes) and resolves communicators across ranks; this
//! crate decodes the record streams ([`decode`]) and converts records to native rows
//! ([`convert`]) with the same rules, writing the native Parquet a window at a time.  Memory is
//! one file chunk and the conversion tables per rank plus one row group, whatever the trace's
//! length.

pub mod convert;
pub mod decode;
pub mod layouts;

use std::collections::HashMap;

use convert::{Comms, Fids, RankConv, Stats};
use decode::{Args, RankFile, RankStream};
use g2g_trace::writer::NativeWriter;

/// Bytes read at a time per rank: 32 MiB over all ranks, 8 KiB to 256 KiB each.
pub fn chunk_for(nranks: usize) -> usize {
    ((32usize << 20) / nranks.max(1)).clamp(8 << 10, 256 << 10)
}

/// What a first pass over one rank finds.
pub struct Scan {
    /// start of the first record with a time (ns since the epoch)
    pub first_t0: Option<i64>,
    /// records decoded (all of them when `full`)
    pub records: u64,
    /// communicator and group calls: (record index, byte offset, function id, arguments)
    pub comm_events: Vec<(u64, u64, u16, Args)>,
}

/// First pass over one rank: its first time, and with `full` every communicator/group call.
pub fn scan(f: RankFile, full: bool, chunk: usize) -> Result<Scan, String> {
    let fx = Fids::new();
    let mut s = RankStream::open(f, chunk)?;
    let mut out = Scan { first_t0: None, records: 0, comm_events: Vec::new() };
    while let Some(rec) = s.next()? {
        out.records += 1;
        if out.first_t0.is_none() {
            out.first_t0 = rec.t0;
        }
        if !full {
            if out.first_t0.is_some() {
                break;
            }
            continue;
        }
        if fx.class[rec.fid as usize] == 2 {
            out.comm_events.push((rec.idx, rec.offset, rec.fid, s.args.clone()));
        }
    }
    Ok(out)
}

pub struct RankInput {
    pub file: RankFile,
    /// (record index, gid of the communicator it creates; None: MPI_COMM_NULL), in order
    pub created: Vec<(u64, Option<i64>)>,
}

pub struct Converted {
    pub rows: u64,
    pub records: u64,
    pub stats: Stats,
    /// per rank, records per function id (0..=292)
    pub fid_counts: Vec<Vec<u64>>,
    /// rows per operation name
    pub op_counts: HashMap<&'static str, u64>,
}

/// Converts every rank, writing rows in (window, rank, seq) order.
pub fn convert(
    inputs: Vec<RankInput>,
    comms: &mut Comms,
    origin: i64,
    mem: &'static str,
    window_ops: u64,
    out: &mut NativeWriter,
    mut progress: Option<&mut dyn FnMut(u64) -> bool>,
) -> Result<Converted, String> {
    let fx = Fids::new();
    let n = inputs.len();
    let chunk = chunk_for(n);
    let mut streams = Vec::with_capacity(n);
    let mut convs = Vec::with_capacity(n);
    for (r, inp) in inputs.into_iter().enumerate() {
        convs.push(RankConv::new(r as u32, inp.file.path.clone(), inp.file.type_sizes.clone(), inp.created, origin, mem));
        streams.push(RankStream::open(inp.file, chunk)?);
    }
    let w = window_ops as usize;
    // rows per operation: op names are static strings, a handful of them: compare pointers
    let mut counts: Vec<(&'static str, u64)> = Vec::new();
    let mut records = 0u64;
    loop {
        let mut any = false;
        for r in 0..n {
            let (s, c) = (&mut streams[r], &mut convs[r]);
            while c.pending.len() < w && !s.done {
                if let Some(rec) = s.next()? {
                    records += 1;
                    c.record(&fx, comms, &rec, &s.args)?;
                }
            }
            let k = w.min(c.pending.len());
            for row in c.pending.drain(..k) {
                out.push(r as u32, c.seq, &row);
                match counts.iter_mut().find(|(k, _)| std::ptr::eq(*k, row.op)) {
                    Some(c) => c.1 += 1,
                    None => counts.push((row.op, 1)),
                }
                c.seq += 1;
            }
            any |= k > 0;
        }
        if !any {
            break;
        }
        out.end_window().map_err(|e| e.to_string())?;
        if let Some(p) = progress.as_mut() {
            if !p(records) {
                return Err("interrupted".into());
            }
        }
    }
    let mut stats = Stats::default();
    for c in &convs {
        c.finish_stats(&mut stats);
    }
    let mut op_counts: HashMap<&'static str, u64> = HashMap::new();
    for (k, v) in counts {
        *op_counts.entry(k).or_insert(0) += v;
    }
    Ok(Converted { rows: out.rows, records, stats, fid_counts: convs.into_iter().map(|c| c.fid_counts).collect(), op_counts })
}

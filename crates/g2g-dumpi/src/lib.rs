//! Streaming SST DUMPI reader.  `python/g2gsim/readers/dumpi_reader.py` parses each file's
//! sections (index, header, footer, datatype sizes) and resolves communicators across ranks; this
//! crate decodes the record streams ([`decode`]) and converts records to native rows
//! ([`convert`]) with the same rules, writing the native Parquet a window at a time.  Memory is
//! one file chunk and the conversion tables per rank plus one row group, whatever the trace's
//! length.

pub mod convert;
pub mod decode;
pub mod fxhash;
pub mod layouts;
pub mod matching;

use std::collections::HashMap;

use convert::{Comms, Fids, RankConv, Stats};
use decode::{Args, RankFile, RankStream};
use g2g_trace::writer::NativeWriter;
use matching::Matcher;

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
    /// with `gap`: the record that ends the longest gap between calls (where calls made while
    /// tracing was off happened) and that gap's length in ns; None without timestamps
    pub gap: Option<(u64, i64)>,
}

/// First pass over one rank: its first time; with `full` every communicator/group call; with
/// `gap` the longest gap between calls (`_untraced_gap` of the Python reader: the gap from the
/// latest end of the records before to a record's start, the first of the longest).
pub fn scan(f: RankFile, full: bool, gap: bool, chunk: usize) -> Result<Scan, String> {
    let fx = Fids::new();
    let mut s = RankStream::open(f, chunk)?;
    let mut out = Scan { first_t0: None, records: 0, comm_events: Vec::new(), gap: None };
    let (mut best, mut end): (i64, Option<i64>) = (0, None);
    while let Some(rec) = s.next()? {
        out.records += 1;
        if out.first_t0.is_none() {
            out.first_t0 = rec.t0;
        }
        if gap {
            if let Some(t0) = rec.t0 {
                if let Some(e) = end {
                    if t0 - e > best {
                        best = t0 - e;
                        out.gap = Some((rec.idx, best));
                    }
                }
                if let Some(t1) = rec.t1 {
                    end = Some(match end {
                        Some(e) if e >= t1 => e,
                        _ => t1,
                    });
                }
            }
        }
        if !full && !gap {
            if out.first_t0.is_some() {
                break;
            }
            continue;
        }
        if full && fx.class[rec.fid as usize] == 2 {
            out.comm_events.push((rec.idx, rec.offset, rec.fid, s.args.clone()));
        }
    }
    Ok(out)
}

pub struct RankInput {
    pub file: RankFile,
    /// (record index, gid of the communicator it creates; None: MPI_COMM_NULL), in order
    pub created: Vec<(u64, Option<i64>)>,
    /// the record that ends this rank's untraced stretch ([`Scan::gap`] of a rank whose footer
    /// counts ignored calls): the gap before the first row at or after it is an Untraced row
    pub untraced_at: Option<u64>,
}

pub struct Converted {
    pub rows: u64,
    pub records: u64,
    pub stats: Stats,
    /// per rank, records per function id (0..=292)
    pub fid_counts: Vec<Vec<u64>>,
    /// rows per operation name
    pub op_counts: HashMap<&'static str, u64>,
    /// point-to-point matching problems: how many, and the first [`FIRST_PROBLEMS`]
    pub problems: (u64, Vec<matching::Problem>),
    /// a message row had no time (the reference prints message times as floats then)
    pub msg_time_missing: bool,
    /// most messages the matching check held at once
    pub peak_held_messages: u64,
}

/// Matching problems returned in full (the others are counted).
pub const FIRST_PROBLEMS: usize = 10;

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
        convs.push(RankConv::new(
            r as u32,
            inp.file.path.clone(),
            inp.file.type_sizes.clone(),
            inp.created,
            inp.untraced_at,
            origin,
            mem,
        ));
        streams.push(RankStream::open(inp.file, chunk)?);
    }
    let w = window_ops as usize;
    // rows per operation: op names are static strings, a handful of them: compare pointers
    let mut counts: Vec<(&'static str, u64)> = Vec::new();
    let mut records = 0u64;
    let mut matcher = Matcher::new(comms.members.iter().map(|(k, v)| (*k, v.clone())));
    let mut ncomms = comms.members.len();
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
            if comms.members.len() != ncomms {
                // communicators defined while converting (MPI_COMM_SELF of a rank)
                for (g, m) in &comms.members {
                    matcher.add_comm(*g, m.clone());
                }
                ncomms = comms.members.len();
            }
            // rows are written from where they wait and dropped there (no move out)
            for row in c.pending.iter().take(k) {
                out.push(r as u32, c.seq, row);
                matcher.row(r as u32, c.seq, row);
                match counts.iter_mut().find(|(k, _)| std::ptr::eq(*k, row.op)) {
                    Some(c) => c.1 += 1,
                    None => counts.push((row.op, 1)),
                }
                c.seq += 1;
            }
            c.pending.drain(..k);
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
    let msg_time_missing = matcher.any_null_time;
    let peak_held_messages = matcher.peak_held;
    let problems = matcher.finish(FIRST_PROBLEMS);
    Ok(Converted {
        problems,
        msg_time_missing,
        peak_held_messages,
        rows: out.rows,
        records,
        stats,
        fid_counts: convs.into_iter().map(|c| c.fid_counts).collect(),
        op_counts,
    })
}

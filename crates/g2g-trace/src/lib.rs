//! Trace model and streaming Parquet I/O (format: docs/trace-format.md).
pub mod model;
mod pages;
pub mod parquet_reader;
mod pq_encode;
pub mod vocab;
pub mod writer;

pub use model::*;
pub use parquet_reader::ParquetTrace;
pub use vocab::OpClass;

use std::collections::VecDeque;

/// Most ranks a trace may have: larger ones are refused when the trace is opened, with the memory
/// they would need, before anything per rank is allocated (docs/scaling.md: a 1,048,576-rank
/// halo replay peaks at 8.3-10.8 GiB).
pub const MAX_RANKS: u32 = 1 << 22;
/// Largest message or copy size a trace may state (`bytes`, `recv_bytes`, list counts): 2^60 B.
pub const MAX_BYTES: u64 = 1 << 60;
/// Longest duration a trace may state (`dur_ns`): 10^6 s.
pub const MAX_DUR_NS: i64 = 1_000_000_000_000_000;

/// Replay memory per rank used in that figure (~10 KiB, the 1,048,576-rank halo's peak per rank).
pub const BYTES_PER_RANK: u64 = 10 * 1024;

thread_local! {
    static IN_DECODER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}
static QUIET_HOOK: std::sync::Once = std::sync::Once::new();

/// Runs `f` (a call into the Parquet decoder) and turns a panic into an error message: the parquet
/// crate panics on some corrupt inputs (issue 24: found by the fuzzing in g2g-mpi/tests/fuzz.rs,
/// kept under tests/data/fuzz/parquet/). Such panics are not printed.
pub fn catch_decoder<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    QUIET_HOOK.call_once(|| {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !IN_DECODER.with(|q| q.get()) {
                prev(info)
            }
        }));
    });
    let was = IN_DECODER.with(|q| q.replace(true));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    IN_DECODER.with(|q| q.set(was));
    r.map_err(|p| {
        p.downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "panic".into())
    })
}

/// A trace error that names the file, the rank and the event (seq) where known.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceError {
    pub file: String,
    pub rank: Option<u32>,
    pub seq: Option<u32>,
    pub msg: String,
}

impl std::fmt::Display for TraceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(r) = self.rank {
            write!(f, ": rank {r}")?;
        }
        if let Some(s) = self.seq {
            write!(f, ", event {s}")?;
        }
        write!(f, ": {}", self.msg)
    }
}
impl std::error::Error for TraceError {}

/// Where the replay gets operations from, a window at a time.
pub trait TraceSource {
    fn name(&self) -> &str;
    fn nranks(&self) -> u32;
    fn comms(&self) -> &[CommDef];
    /// How the trace's `mem_space` values were decided (`g2gsim.buffers`: `traced`,
    /// `assumed-host`, `assumed-device`, `inferred`; empty when not said).
    fn buffers(&self) -> &str {
        ""
    }
    /// Appends the next chunk of operations to the per-rank queues; `Ok(false)` once exhausted.
    fn fill(&mut self, queues: &mut [VecDeque<Op>]) -> Result<bool, TraceError>;
}

/// An in-memory trace (tests, generators in Rust).
pub struct MemTrace {
    pub name: String,
    pub ranks: Vec<Vec<Op>>,
    pub comms: Vec<CommDef>,
    done: bool,
}

impl MemTrace {
    pub fn new(ranks: Vec<Vec<Op>>) -> MemTrace {
        MemTrace {
            name: "<memory>".into(),
            ranks,
            comms: vec![CommDef { id: 0, name: "MPI_COMM_WORLD".into(), members: None }],
            done: false,
        }
    }
    pub fn with_comms(mut self, comms: Vec<CommDef>) -> MemTrace {
        self.comms = comms;
        self
    }
}

impl TraceSource for MemTrace {
    fn name(&self) -> &str {
        &self.name
    }
    fn nranks(&self) -> u32 {
        self.ranks.len() as u32
    }
    fn comms(&self) -> &[CommDef] {
        &self.comms
    }
    fn fill(&mut self, queues: &mut [VecDeque<Op>]) -> Result<bool, TraceError> {
        if self.done {
            return Ok(false);
        }
        for (r, ops) in self.ranks.iter_mut().enumerate() {
            queues[r].extend(std::mem::take(ops));
        }
        self.done = true;
        Ok(true)
    }
}

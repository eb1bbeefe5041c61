//! Trace model and streaming Parquet I/O (format: docs/trace-format.md).
pub mod model;
pub mod parquet_reader;
mod pages;

pub use model::*;
pub use parquet_reader::ParquetTrace;

use std::collections::VecDeque;

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

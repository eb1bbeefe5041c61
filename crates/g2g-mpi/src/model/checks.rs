//! The replay checks' data (issue 24): collective instances some ranks have entered (what the first
//! rank called), the last rank that ran, and the report's warnings. The checks themselves are in
//! `ops/checks.rs`.
use g2g_coll::CollKind;
use g2g_engine::FxHashMap;

/// One collective call as the first rank of the instance made it.
#[derive(Clone, Debug)]
pub(crate) struct CollSig {
    pub kind: CollKind,
    pub root: i32,
    pub bytes: u64,
    pub rank: u32,
    pub event: u64,
    pub joined: u32,
}

#[derive(Default)]
pub(crate) struct Checks {
    /// collective instances some but not all ranks have entered: (comm, instance) -> first call
    pub colls: FxHashMap<(u32, u32), CollSig>,
    /// the last rank that ran (names the rank of an overflow found outside its step)
    pub last_rank: u32,
    /// warnings for the report (strict mode: the first one is an error)
    pub warnings: Vec<String>,
    /// the stated size of each receive request's buffer (0: not stated), by request id
    pub recv_cap: Vec<u64>,
    /// the size of the receive being posted (set just before posting it)
    pub pending_cap: u64,
    /// receives that got a larger message than they state (MPI: truncation), the first described
    pub truncations: u64,
    pub first_truncation: Option<String>,
}

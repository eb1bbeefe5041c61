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
}

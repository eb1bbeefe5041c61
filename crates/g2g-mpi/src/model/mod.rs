//! The models of the replay, each owning its state and returning outcomes: none of them calls the
//! operations (`ops/`) or the driver (`sim.rs`), nor names the replay's state (`state.rs`); a test
//! (`tests/layering.rs`) keeps it so.
pub(crate) mod checks;
pub(crate) mod collective;
pub(crate) mod factors;
pub(crate) mod gpu_streams;
pub(crate) mod hostcopy;
pub(crate) mod matching;
pub(crate) mod protocol;
pub(crate) mod requests;
pub(crate) mod route;
pub(crate) mod transfer;
pub(crate) mod world;

//! MPI replay: matching, eager/rendezvous protocols, collectives as point-to-point schedules, GPU
//! data paths per mode, and the report.  The entry point is [`simulate`].
//!
//! Layers, each using only those below it: `setup.rs` (a run's set-up and report) and `sim.rs`
//! (the driver: event loop and rank executor) over `ops/` (what each trace operation does) over
//! `model/` (matching, protocols, requests, transfers, GPU streams, routes, factors, HostCopy
//! staging, communicators), with `state.rs` (the replay's data) and the leaves `event.rs`,
//! `options.rs`, `stats.rs`, `report.rs`, `timeline.rs`.  See ARCHITECTURE.md.
mod event;
mod model;
mod ops;
mod options;
mod report;
mod setup;
mod sim;
mod state;
mod stats;
mod timeline;

pub use options::{Buffers, Mapping, Mode, Progress, SimError, SimOptions, Window};
pub use report::{BufferStat, OpStat, PathStat, RankStat, Report, SIZE_CLASSES, SIZE_CLASS_MAX_BYTES};
pub use setup::simulate;

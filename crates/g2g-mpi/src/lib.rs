//! MPI replay: matching, eager/rendezvous protocols, collectives as point-to-point schedules, GPU
//! data paths per mode, and the report.  The driver is [`simulate`].
mod report;
mod sim;
mod timeline;
mod vocab;

pub use report::{OpStat, PathStat, RankStat, Report, SIZE_CLASSES, SIZE_CLASS_MAX_BYTES};
pub use sim::{simulate, Mapping, Mode, Progress, SimError, SimOptions};

//! MPI replay: matching, eager/rendezvous protocols, collectives as point-to-point schedules, GPU
//! data paths per mode, and the report.  The driver is [`simulate`].
mod report;
mod sim;
pub mod timeline;

pub use report::{OpStat, PathStat, RankStat, Report};
pub use sim::{simulate, Mapping, Mode, Progress, SimError, SimOptions};
pub use timeline::TimelineFilter;

//! MPI replay: matching, eager/rendezvous protocols, collectives as point-to-point schedules, GPU
//! data paths per mode, and the report.  The driver is [`simulate`].
mod buffers;
mod report;
mod sim;
mod timeline;

pub use buffers::{Buffers, Window};
pub use report::{BufferStat, OpStat, PathStat, RankStat, Report};
pub use sim::{simulate, Mapping, Mode, Progress, SimError, SimOptions};

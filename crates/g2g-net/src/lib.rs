//! The machine model: links as shared resources, max-min fair sharing, inter-node topologies,
//! the GPU data paths, and machine files.
pub mod completion;
pub mod config;
mod flow_dump;
mod free_ids;
pub mod grouped;
pub mod lmm;
pub mod machine;
pub mod paths;
pub mod schema;
pub mod solver;
pub mod topology;
pub mod units;

pub use config::{ConfigError, MachineConfig};
pub use lmm::FlowNet;
pub use machine::{Machine, Placement};

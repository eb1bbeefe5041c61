//! The machine model: links as shared resources, max-min fair sharing, inter-node topologies,
//! the GPU data paths, and machine files.
pub mod topology;

//! The operations of a trace, as the rank executor (`sim.rs`) runs them: each `exec_*` starts or
//! resumes one operation (true: it is complete) using the models; the completion handlers here
//! return what follows (`Next`) and never run a rank themselves.
//!
//! `p2p`: sends, receives, messages and their matching; `wait`: requests and waits; `copy`:
//! explicit and staging copies; `gpu`: kernels, streams, events, synchronisation; `collective`:
//! collectives as rounds of messages.
pub(crate) mod checks;
pub(crate) mod collective;
pub(crate) mod copy;
pub(crate) mod gpu;
pub(crate) mod p2p;
pub(crate) mod wait;

//! The replay's events and ids, and what a completion asks of the driver.
//!
//! A leaf: every layer may name these (models schedule events; only the driver, `sim.rs`, handles
//! them).
use g2g_engine::EventQueue;

/// A request (`model::requests`).
pub(crate) type ReqId = u32;
/// A message (`model::protocol`).
pub(crate) type MsgId = u32;
/// A transfer: a plan's chunks moving through its stages (`model::transfer`).
pub(crate) type XferId = u32;
/// A collective in progress on one rank (`ops::collective`).
pub(crate) type CollId = u32;

/// The replay's event queue.
pub(crate) type Queue = EventQueue<Ev>;

#[derive(Clone, Copy, Debug)]
pub(crate) enum Ev {
    /// the rank's busy time is over: it goes on
    Wake(u32),
    /// a message's envelope reaches its receiver (matching)
    Envelope(MsgId),
    /// a transfer's stage starts its flow for the next chunk (after the stage's delay)
    StageFlow(XferId, u8),
    /// an eager message's first chunk leaves and its send request completes: the two events
    /// (`StageFlow` of stage 0, then `ReqDone`) that its send overhead would end at one instant
    /// (`Transfers::start_eager`)
    SendOut(XferId, ReqId),
    /// a transfer's stage finished a chunk (`u8::MAX`: a plan without stages)
    StageDone(XferId, u8),
    /// a flow's completion event: (flow, generation), see `g2g_net::FlowNet::completion_due`
    FlowDone(u32, u32),
    /// re-solve the flow network's rates (once per instant with changes)
    Resolve,
    /// a request completes
    ReqDone(ReqId),
    /// a collective's reduction is over: its next round
    CollNext(CollId),
    /// a kernel of (rank, stream) finished
    KernelDone(u32, i32),
}

/// What a completion asks of the driver: nothing, or to run a rank that can go on (`step`, which
/// only the driver calls).  Lower layers return it instead of calling back up.
#[must_use]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Next {
    Idle,
    Step(u32),
}

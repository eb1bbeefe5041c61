//! Where an MPI buffer lives, decided once at simulate time (`--buffers`), the one rule that
//! recognises the application's own staging copies (HostCopy, seed 002), and the traced window
//! (`--window`).  docs/semantics.md describes the same in the paper's terms.
//!
//! Every MPI data buffer of a run ends up in one of three classes:
//! * **device**: GPU memory.  `hostcopy` stages it through the host (the copies are added),
//!   `gpudirect` moves it GPU to GPU, `as-traced` lets the GPU-aware MPI move it.
//! * **staged**: host memory that the trace itself filled from, or emptied to, the GPU with an
//!   explicit copy (a HostCopy application).  `as-traced` and `hostcopy` replay the copy and the host
//!   message as recorded; `gpudirect` removes the copy and sends from the device.
//! * **host**: host memory with no staging copy: the same in every mode.
//!
//! `--buffers traced` takes the trace's `mem_space`; `device` makes every host data buffer device
//! (staged ones stay staged: their copy is the HostCopy staging); `host` makes every buffer host and
//! recognises no staging.  Calls that carry no data (Barrier, zero-byte messages) are
//! synchronisation: host path, whatever the mode or buffers.
use std::collections::VecDeque;

use g2g_trace::{CopyKind, Op, OpKind};

/// `--buffers`: where MPI data buffers live.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Buffers {
    /// as the trace records them (`mem_space`); explicit staging copies are recognised
    #[default]
    Traced,
    /// every MPI data buffer is GPU memory (the what-if for traces of host buffers)
    Device,
    /// every MPI buffer is host memory; copies are the application's own
    Host,
}

impl Buffers {
    pub fn parse(s: &str) -> Option<Buffers> {
        match s {
            "traced" => Some(Buffers::Traced),
            "device" => Some(Buffers::Device),
            "host" => Some(Buffers::Host),
            _ => None,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Buffers::Traced => "traced",
            Buffers::Device => "device",
            Buffers::Host => "host",
        }
    }
}

/// `--window`: what the replay does with stretches the tracer did not record (`Untraced` rows).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Window {
    /// skipped: the simulation covers the traced region only; the stretches are reported
    #[default]
    Traced,
    /// simulated as host time, like `Compute`
    All,
}

impl Window {
    pub fn parse(s: &str) -> Option<Window> {
        match s {
            "traced" => Some(Window::Traced),
            "all" => Some(Window::All),
            _ => None,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Window::Traced => "traced",
            Window::All => "all",
        }
    }
}

/// How many of a rank's next operations the staging rule looks at.  The replay keeps at least
/// this many queued (or the rank's rest of the trace), so that no file layout (row groups, decode
/// windows) can change what the rule sees.
pub const LOOKAHEAD: usize = 32;

/// Does this MPI call move data?  Barrier (blocking or not) and calls of zero bytes both ways are
/// synchronisation: they never take a GPU data path.
#[inline]
pub fn carries_data(op: &Op) -> bool {
    let barrier = matches!(op.kind, OpKind::Coll(0) | OpKind::ICol(0));
    !barrier && op.bytes.max(op.recv_bytes()) > 0
}

fn is_send(k: OpKind) -> bool {
    matches!(k, OpKind::Send | OpKind::Ssend | OpKind::Isend | OpKind::Issend | OpKind::Bsend | OpKind::Rsend | OpKind::Sendrecv)
}

/// The staging rule, send side: a device-to-host copy of `bytes` stages an MPI send buffer when the
/// same rank's next operations (at most [`LOOKAHEAD`]) send `bytes` from a host buffer (a
/// point-to-point send, or a collective's send buffer) before the rank receives or waits.
pub fn d2h_stages_send(next: &VecDeque<Op>, bytes: u64) -> bool {
    for n in next.iter().take(LOOKAHEAD) {
        match n.kind {
            k if is_send(k) => {
                if n.bytes == bytes && !n.mem.on_gpu() {
                    return true;
                }
            }
            k if k.is_collective() => return n.bytes == bytes && !n.mem.on_gpu(),
            OpKind::Wait | OpKind::Waitall | OpKind::Waitany | OpKind::Waitsome | OpKind::Recv => return false,
            _ => {}
        }
    }
    false
}

/// The staging rule, receive side, looking ahead from a host receive of `bytes`: a host-to-device
/// copy of `bytes` among the rank's next operations (at most [`LOOKAHEAD`]) stages it.  (The copy
/// itself is recognised looking back: it matches a host receive of its size since the last such copy.)
pub fn h2d_follows(next: &VecDeque<Op>, bytes: u64) -> bool {
    next.iter().take(LOOKAHEAD).any(|n| n.kind == OpKind::Memcpy && n.copy == CopyKind::H2D && n.bytes == bytes)
}

/// Does the rank stage through the host soon (a D2H or H2D copy among its next few operations)?
/// For `[[mpi.factors]]`: such a rank's host messages are `hostcopy` ones.
pub fn copies_ahead(next: &VecDeque<Op>) -> bool {
    next.iter().take(4).any(|n| n.kind == OpKind::Memcpy && matches!(n.copy, CopyKind::D2H | CopyKind::H2D))
}

//! HostCopy staging: the application (or the MPI library for a CUDA-aware call with one host side)
//! copies device buffers to the host before MPI moves them and back after.  Which bytes a
//! collective stages, whether a rank stages at all, the one rule that recognises the trace's own
//! staging copies (docs/semantics.md), and the class of each MPI buffer under
//! `--buffers`.  The copies themselves are blocking transfers of the rank (`copy_plan`); the rank
//! executor runs them.
use std::collections::VecDeque;

use g2g_coll::CollKind;
use g2g_net::machine::Machine;
use g2g_net::paths::{Endpoint, Plan, StagedPath};
use g2g_trace::{CopyKind, MemSpace, Op, OpKind};

use crate::options::{Buffers, Mode, ModePolicy};

/// How many of a rank's next operations the staging rule looks at.  The replay keeps at least
/// this many queued (or the rank's rest of the trace), so that no file layout (row groups, decode
/// windows) can change what the rule sees.
pub(crate) const LOOKAHEAD: usize = 32;

/// Does this MPI call move data?  Barrier (blocking or not) and calls of zero bytes both ways are
/// synchronisation: they never take a GPU data path.
#[inline]
pub(crate) fn carries_data(op: &Op) -> bool {
    let barrier = matches!(op.kind, OpKind::Coll(0) | OpKind::ICol(0));
    !barrier && op.bytes.max(op.recv_bytes()) > 0
}

/// The staging rule, receive side, looking ahead from a host receive of `bytes`: a host-to-device
/// copy of `bytes` among the rank's next operations (at most [`LOOKAHEAD`]) stages it.  (The copy
/// itself is recognised looking back: it matches a host receive of its size since the last such copy.)
pub(crate) fn h2d_follows(next: &VecDeque<Op>, bytes: u64) -> bool {
    next.iter().take(LOOKAHEAD).any(|n| n.kind == OpKind::Memcpy && n.copy == CopyKind::H2D && n.bytes == bytes)
}

/// What the replay found about MPI buffers (the report's `buffer_stats`, docs/semantics.md).
#[derive(Clone, Debug, Default)]
pub(crate) struct BufferCounts {
    /// MPI data buffers (point-to-point sends and collective calls with bytes)
    pub mpi_buffers: u64,
    /// of those, device-resident after `--buffers`
    pub device: u64,
    /// of those, host buffers the trace staged with an explicit copy (HostCopy style)
    pub staged: u64,
    /// explicit copies recognised as staging an MPI buffer
    pub staging_copies: u64,
    /// of those, removed by the mode (`gpudirect`)
    pub staging_copies_removed: u64,
    /// data-less calls (Barrier, zero-byte messages) kept on the host path
    pub sync_calls: u64,
}

/// A blocking staging copy of `bytes` at `at` (D2H before a send, H2D after a receive).
pub(crate) fn copy_plan(m: &Machine, at: Endpoint, bytes: u64, d2h: bool) -> Plan {
    Plan::one("hostcopy", StagedPath::copy_stage(m, at, d2h), bytes)
}

/// HostCopy staging of a collective: (bytes copied device-to-host before, host-to-device after) on
/// one rank.  Only the buffers the rank actually sends or receives move: a broadcast is copied out
/// at the root and back in everywhere else.
pub(crate) fn staging_bytes(kind: CollKind, is_root: bool, op: &Op) -> (u64, u64) {
    let recv = if op.recv_bytes() > 0 { op.recv_bytes() } else { op.bytes };
    match kind {
        CollKind::Barrier => (0, 0),
        CollKind::Bcast => {
            if is_root {
                (op.bytes, 0)
            } else {
                (0, op.bytes.max(op.recv_bytes()))
            }
        }
        CollKind::Reduce => (op.bytes, if is_root { op.bytes } else { 0 }),
        CollKind::Gather | CollKind::Gatherv => (op.bytes, if is_root { op.recv_bytes() } else { 0 }),
        CollKind::Scatter | CollKind::Scatterv => (if is_root { op.bytes } else { 0 }, op.recv_bytes()),
        _ => (op.bytes, recv),
    }
}

/// The staging rule, send side: does a send of `bytes` from a host buffer (point-to-point or a
/// collective's send buffer) follow among the rank's next `LOOKAHEAD` operations, before it waits or
/// receives?  Then a D2H copy of that size only stages it.  (The replay keeps that many queued, so
/// the file's layout cannot change the answer.)
pub(crate) fn staged_send_follows(queue: &VecDeque<Op>, bytes: u64) -> bool {
    for n in queue.iter().take(LOOKAHEAD) {
        match n.kind {
            OpKind::Send
            | OpKind::Ssend
            | OpKind::Isend
            | OpKind::Issend
            | OpKind::Bsend
            | OpKind::Rsend
            | OpKind::Sendrecv => {
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

/// Does a rank stage its MPI buffers through host memory?  True once it has run a D2H or H2D copy
/// (`stages`), or when one follows among its next queued operations (a receiver that only copies
/// back after its first receive).
pub(crate) fn rank_stages(stages: bool, queue: &VecDeque<Op>) -> bool {
    stages || queue.iter().take(4).any(|n| n.kind == OpKind::Memcpy && matches!(n.copy, CopyKind::D2H | CopyKind::H2D))
}

/// Remembers a host receive buffer's size (at most 64): an H2D copy of that size afterwards only
/// stages the received message (the staging rule, receive side).
pub(crate) fn note_recv(policy: &ModePolicy, recent: &mut Vec<u64>, mem: MemSpace, bytes: u64) {
    if policy.remembers_recv_buffers() && !mem.on_gpu() && bytes > 0 {
        if recent.len() >= 64 {
            recent.remove(0);
        }
        recent.push(bytes);
    }
}

/// The staging rule: is this explicit copy one that only stages an MPI buffer (a D2H before a
/// host send of that size, an H2D of a host buffer just received)?  A recognised H2D consumes its
/// remembered receive; a recognised D2H marks the send it stages (`staged_sends`, at most 64).
pub(crate) fn staging_copy(
    policy: &ModePolicy,
    op: &Op,
    queue: &VecDeque<Op>,
    recent: &mut Vec<u64>,
    staged_sends: &mut Vec<u64>,
) -> bool {
    if !policy.recognises_staging() {
        return false;
    }
    match op.copy {
        CopyKind::D2H => {
            let st = staged_send_follows(queue, op.bytes);
            if st {
                if staged_sends.len() >= 64 {
                    staged_sends.remove(0);
                }
                staged_sends.push(op.bytes);
            }
            st
        }
        CopyKind::H2D => match recent.iter().position(|&b| b == op.bytes) {
            Some(i) => {
                recent.swap_remove(i);
                true
            }
            None => false,
        },
        _ => false,
    }
}

/// Is the send buffer of an MPI call (`bytes` of space `mem`; `data` false for synchronisation:
/// Barrier, no bytes) on the GPU for the mode?  Device buffers: yes.  Staged ones (a recognised
/// D2H copy filled them, `staged_sends`): only under gpudirect, which removed that copy; under
/// hostcopy and as traced that copy is the staging and the buffer goes as host.  Host ones: under
/// `--buffers device` yes, else no.  Counts the buffer in `stat` (`traced_device`: the trace's
/// own device buffers).
pub(crate) fn send_on_gpu(
    policy: &ModePolicy,
    mem: MemSpace,
    bytes: u64,
    data: bool,
    staged_sends: &mut Vec<u64>,
    stat: &mut BufferCounts,
    traced_device: &mut u64,
) -> bool {
    if !data {
        stat.sync_calls += 1;
        return false;
    }
    stat.mpi_buffers += 1;
    if mem.on_gpu() {
        *traced_device += 1;
    }
    if policy.buffers == Buffers::Host {
        return false;
    }
    if mem.on_gpu() {
        stat.device += 1;
        return true;
    }
    if let Some(i) = staged_sends.iter().position(|&b| b == bytes) {
        staged_sends.swap_remove(i);
        stat.staged += 1;
        return policy.mode == Mode::GpuDirect;
    }
    if policy.buffers == Buffers::Device {
        stat.device += 1;
        return true;
    }
    false
}

/// Is a receive buffer of `bytes` on the GPU for the mode (whether a host-path arrival is copied
/// back with an added H2D)?  A host buffer under `--buffers device` is, unless the trace copies it
/// to the GPU itself soon after (that copy is then the staging).
pub(crate) fn recv_on_gpu(policy: &ModePolicy, mem: MemSpace, bytes: u64, queue: &VecDeque<Op>) -> bool {
    if bytes == 0 {
        return false;
    }
    match policy.buffers {
        Buffers::Host => false,
        Buffers::Traced => mem.on_gpu(),
        Buffers::Device => mem.on_gpu() || !h2d_follows(queue, bytes),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(kind: OpKind, bytes: u64) -> Op {
        let mut o = Op::new(kind);
        o.bytes = bytes;
        o
    }

    #[test]
    fn a_broadcast_stages_out_at_the_root_and_back_elsewhere() {
        let b = op(OpKind::Coll(CollKind::Bcast as u8), 100);
        assert_eq!(staging_bytes(CollKind::Bcast, true, &b), (100, 0));
        assert_eq!(staging_bytes(CollKind::Bcast, false, &b), (0, 100));
        assert_eq!(staging_bytes(CollKind::Barrier, true, &b), (0, 0));
        assert_eq!(staging_bytes(CollKind::Allreduce, false, &b), (100, 100));
    }

    #[test]
    fn a_copy_stages_a_send_only_when_the_send_follows() {
        let q: VecDeque<Op> = vec![op(OpKind::Compute, 0), op(OpKind::Isend, 64)].into();
        assert!(staged_send_follows(&q, 64));
        assert!(!staged_send_follows(&q, 65));
        let q: VecDeque<Op> = vec![op(OpKind::Recv, 64), op(OpKind::Isend, 64)].into();
        assert!(!staged_send_follows(&q, 64), "a receive comes first");
        let mut d2h = op(OpKind::Memcpy, 8);
        d2h.copy = CopyKind::D2H;
        assert!(rank_stages(false, &vec![op(OpKind::Compute, 0), d2h].into()));
        assert!(!rank_stages(false, &VecDeque::new()));
        assert!(rank_stages(true, &VecDeque::new()));
    }
}

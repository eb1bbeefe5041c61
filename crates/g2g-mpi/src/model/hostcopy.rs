//! HostCopy staging: the application (or the MPI library for a CUDA-aware call with one host side)
//! copies device buffers to the host before MPI moves them and back after.  Which bytes a
//! collective stages, whether a rank stages at all, and the what-if that drops the copies that
//! only stage MPI buffers (`--staged-buffers-are-device`).  The copies themselves are blocking
//! transfers of the rank (`copy_plan`); the rank executor runs them.
use std::collections::VecDeque;

use g2g_coll::CollKind;
use g2g_net::machine::Machine;
use g2g_net::paths::{Endpoint, Plan, StagedPath};
use g2g_trace::{CopyKind, MemSpace, Op, OpKind};

use crate::options::ModePolicy;

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

/// Does a send of `bytes` from a host buffer (point-to-point or a collective's send buffer) follow
/// soon in the rank's queued operations, before it waits or receives?  Then a D2H copy of that
/// size only stages it.
pub(crate) fn staged_send_follows(queue: &VecDeque<Op>, bytes: u64) -> bool {
    for n in queue.iter().take(32) {
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

/// Remembers a host receive buffer's size for the staged-as-device what-if (at most 64).
pub(crate) fn note_recv(policy: &ModePolicy, recent: &mut Vec<u64>, mem: MemSpace, bytes: u64) {
    if policy.remembers_recv_buffers() && !mem.on_gpu() && bytes > 0 {
        if recent.len() >= 64 {
            recent.remove(0);
        }
        recent.push(bytes);
    }
}

/// Under the staged-as-device what-if, is this explicit copy one that only stages an MPI buffer
/// (a D2H before a host send of that size, an H2D of a host buffer just received), to be dropped?
/// A dropped H2D consumes its remembered receive.
pub(crate) fn drops_copy(policy: &ModePolicy, op: &Op, queue: &VecDeque<Op>, recent: &mut Vec<u64>) -> bool {
    if !policy.drops_staging_copies() {
        return false;
    }
    match op.copy {
        CopyKind::D2H => staged_send_follows(queue, op.bytes),
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

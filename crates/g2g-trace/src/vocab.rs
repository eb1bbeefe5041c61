//! The trace's vocabulary, defined once: every operation name a trace may hold and the classes
//! it belongs to (send, blocking send, receive, point-to-point, wait, test, collective, GPU, ...),
//! the memory spaces and copy kinds, and the columns of the native format (name, type, default).
//!
//! The Python side reads all of it through `g2gsim._core` (`g2gsim/vocab.py`); nothing there
//! spells an operation class or a column again.
use crate::{CopyKind, MemSpace, OpKind, COLL_NAMES};

/// A class of operations.  An operation belongs to several (an `Isend` is a send, a nonblocking
/// send, a point-to-point operation and an MPI call).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OpClass {
    /// sends one point-to-point message (`peer`, `bytes`): the sends, and `Sendrecv`
    Send,
    /// returns once the send buffer may be reused: `Send`, `Ssend`, `Bsend`, `Rsend`
    BlockingSend,
    /// starts a send and returns a request: `Isend`, `Issend`
    NonblockingSend,
    /// synchronous send (completes once matched): `Ssend`, `Issend`
    SyncSend,
    /// receives one point-to-point message: `Recv`, `Irecv`, and `Sendrecv`
    Recv,
    /// `Recv`
    BlockingRecv,
    /// starts a receive and returns a request: `Irecv`
    NonblockingRecv,
    /// a point-to-point operation: a send or a receive
    P2p,
    /// waits for requests: `Wait`, `Waitall`, `Waitany`, `Waitsome`
    Wait,
    /// tests requests: `Test`, `Testall`, `Testany`, `Testsome` (the replay treats them as waits)
    Test,
    /// a collective, blocking or not
    Collective,
    BlockingCollective,
    /// `Ibcast`, ... (complete through a wait on their `req`)
    NonblockingCollective,
    /// an MPI call the replay times: point-to-point, wait, test, collective
    Mpi,
    /// work of a given duration (`dur_ns`): `Compute` (host) and `Kernel` (GPU stream)
    Compute,
    /// an explicit memory copy (`Memcpy`)
    Copy,
    /// GPU stream, event and synchronisation operations
    Gpu,
    /// `Init`, `Finalize`: mark the MPI lifetime, take no time
    Marker,
    /// `Untraced`: a stretch the tracer did not record (skipped unless `--window all`)
    Untraced,
}

impl OpClass {
    pub const ALL: [OpClass; 19] = [
        OpClass::Send,
        OpClass::BlockingSend,
        OpClass::NonblockingSend,
        OpClass::SyncSend,
        OpClass::Recv,
        OpClass::BlockingRecv,
        OpClass::NonblockingRecv,
        OpClass::P2p,
        OpClass::Wait,
        OpClass::Test,
        OpClass::Collective,
        OpClass::BlockingCollective,
        OpClass::NonblockingCollective,
        OpClass::Mpi,
        OpClass::Compute,
        OpClass::Copy,
        OpClass::Gpu,
        OpClass::Marker,
        OpClass::Untraced,
    ];

    pub fn name(self) -> &'static str {
        match self {
            OpClass::Send => "send",
            OpClass::BlockingSend => "blocking_send",
            OpClass::NonblockingSend => "nonblocking_send",
            OpClass::SyncSend => "sync_send",
            OpClass::Recv => "recv",
            OpClass::BlockingRecv => "blocking_recv",
            OpClass::NonblockingRecv => "nonblocking_recv",
            OpClass::P2p => "p2p",
            OpClass::Wait => "wait",
            OpClass::Test => "test",
            OpClass::Collective => "collective",
            OpClass::BlockingCollective => "blocking_collective",
            OpClass::NonblockingCollective => "nonblocking_collective",
            OpClass::Mpi => "mpi",
            OpClass::Compute => "compute",
            OpClass::Copy => "copy",
            OpClass::Gpu => "gpu",
            OpClass::Marker => "marker",
            OpClass::Untraced => "untraced",
        }
    }
}

impl OpKind {
    /// Does this kind belong to class `c`?
    pub fn is(self, c: OpClass) -> bool {
        use OpKind::*;
        match c {
            OpClass::Send => matches!(self, Send | Ssend | Bsend | Rsend | Isend | Issend | Sendrecv),
            OpClass::BlockingSend => matches!(self, Send | Ssend | Bsend | Rsend),
            OpClass::NonblockingSend => matches!(self, Isend | Issend),
            OpClass::SyncSend => matches!(self, Ssend | Issend),
            OpClass::Recv => matches!(self, Recv | Irecv | Sendrecv),
            OpClass::BlockingRecv => matches!(self, Recv),
            OpClass::NonblockingRecv => matches!(self, Irecv),
            OpClass::P2p => self.is(OpClass::Send) || self.is(OpClass::Recv),
            OpClass::Wait => matches!(self, Wait | Waitall | Waitany | Waitsome),
            OpClass::Test => matches!(self, Test),
            OpClass::Collective => self.is_collective(),
            OpClass::BlockingCollective => matches!(self, Coll(_)),
            OpClass::NonblockingCollective => matches!(self, ICol(_)),
            OpClass::Mpi => {
                self.is(OpClass::P2p) || self.is(OpClass::Wait) || self.is(OpClass::Test) || self.is_collective()
            }
            OpClass::Compute => self.has_duration() && self != Untraced,
            OpClass::Copy => matches!(self, Memcpy),
            OpClass::Gpu => self.is_gpu(),
            OpClass::Marker => matches!(self, Init | Finalize),
            OpClass::Untraced => self == Untraced,
        }
    }
}

/// Names the format accepts besides [`OpKind::name`]: the test variants, read as `Test`.
pub const OP_ALIASES: [&str; 3] = ["Testall", "Testany", "Testsome"];

/// Every operation name a trace may hold, each with its kind, in the kinds' order (aliases after
/// their kind).
pub fn op_names() -> Vec<(&'static str, OpKind)> {
    let mut out = Vec::with_capacity(OpKind::COUNT + OP_ALIASES.len());
    for i in 0..OpKind::COUNT {
        let k = OpKind::from_index(i);
        out.push((k.name(), k));
        if k == OpKind::Test {
            out.extend(OP_ALIASES.iter().map(|a| (*a, k)));
        }
    }
    out
}

/// The blocking collectives' names (`Coll(i)` is `COLL_NAMES[i]`).
pub fn collective_names() -> &'static [&'static str] {
    &COLL_NAMES
}

impl MemSpace {
    /// In the order of their codes (the tracer's `g2g:mem_space` attribute: 0 host, 1 device,
    /// 2 managed, 3 unknown, 4 pinned).
    pub const ALL: [MemSpace; 5] =
        [MemSpace::Host, MemSpace::Device, MemSpace::Managed, MemSpace::Unknown, MemSpace::Pinned];
}

impl CopyKind {
    /// The copy kinds a `Memcpy` may carry (`None`: not a copy, a null in the trace).
    pub const ALL: [CopyKind; 4] = [CopyKind::D2H, CopyKind::H2D, CopyKind::D2D, CopyKind::H2H];

    pub fn name(self) -> Option<&'static str> {
        Some(match self {
            CopyKind::None => return None,
            CopyKind::D2H => "d2h",
            CopyKind::H2D => "h2d",
            CopyKind::D2D => "d2d",
            CopyKind::H2H => "h2h",
        })
    }
}

/// Types of the native format's columns (Arrow names).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColType {
    U32,
    I32,
    I64,
    U64,
    Bool,
    Str,
    ListU64,
}

impl ColType {
    /// The Arrow type name (`pyarrow.type_for_alias` understands the scalar ones).
    pub fn name(self) -> &'static str {
        match self {
            ColType::U32 => "uint32",
            ColType::I32 => "int32",
            ColType::I64 => "int64",
            ColType::U64 => "uint64",
            ColType::Bool => "bool",
            ColType::Str => "string",
            ColType::ListU64 => "list<uint64>",
        }
    }
}

/// A column's value where the writer left it null (or where an optional column is missing).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ColDefault {
    /// no default: the column must be present and never null
    Required,
    /// null stays null (timestamps, call sites, lists, the copy kind of a non-copy)
    Null,
    Int(i64),
    Bool(bool),
    Str(&'static str),
}

/// One column of the native format.
#[derive(Clone, Copy, Debug)]
pub struct Column {
    pub name: &'static str,
    pub ty: ColType,
    pub default: ColDefault,
    /// read by the replay (the others are for reports: timestamps, call sites)
    pub replayed: bool,
    pub doc: &'static str,
}

const fn col(name: &'static str, ty: ColType, default: ColDefault, replayed: bool, doc: &'static str) -> Column {
    Column { name, ty, default, replayed, doc }
}

/// The columns of the native format, in file order (docs/trace-format.md).
pub const COLUMNS: [Column; 24] = {
    use ColDefault as D;
    use ColType as T;
    [
        col("rank", T::U32, D::Required, true, "world rank"),
        col("seq", T::U32, D::Required, true, "event number within the rank, from 0"),
        col("op", T::Str, D::Required, true, "operation name (op_names)"),
        col("t_start_ns", T::I64, D::Null, false, "traced start time"),
        col("t_end_ns", T::I64, D::Null, false, "traced end time"),
        col("dur_ns", T::I64, D::Int(0), true, "duration of Compute, Kernel and Untraced"),
        col("peer", T::I32, D::Int(-1), true, "destination or source (communicator rank); -1 ANY_SOURCE, -2 PROC_NULL"),
        col("tag", T::I32, D::Int(-1), true, "tag; -1 ANY_TAG"),
        col("comm_id", T::U32, D::Int(0), true, "communicator (0: MPI_COMM_WORLD)"),
        col("bytes", T::U64, D::Int(0), true, "bytes sent (or contributed to a collective)"),
        col("recv_bytes", T::U64, D::Int(0), true, "bytes received"),
        col("recv_peer", T::I32, D::Int(-1), true, "Sendrecv's source"),
        col("recv_tag", T::I32, D::Int(-1), true, "Sendrecv's receive tag"),
        col("root", T::I32, D::Int(-1), true, "a rooted collective's root"),
        col("req", T::U64, D::Int(0), true, "request a nonblocking call creates"),
        col("reqs", T::ListU64, D::Null, true, "requests a wait or test completes"),
        col("counts_bytes", T::ListU64, D::Null, true, "per-rank send sizes of v-collectives"),
        col("recv_counts_bytes", T::ListU64, D::Null, true, "per-rank receive sizes of v-collectives"),
        col("mem_space", T::Str, D::Str("host"), true, "memory space of the buffer (host, device, managed, unknown)"),
        col("copy_kind", T::Str, D::Null, true, "Memcpy direction (d2h, h2d, d2d, h2h)"),
        col("stream", T::I32, D::Int(-1), true, "GPU stream of a GPU operation or Memcpy; -1 none"),
        col("contiguous", T::Bool, D::Bool(true), true, "contiguous buffer (false: a derived datatype packs it)"),
        col("callsite", T::Str, D::Null, false, "source location or call path"),
        col("priority", T::I32, D::Int(0), true, "stream priority of a GPU operation (optional column)"),
    ]
};

/// The column named `name`.
pub fn column(name: &str) -> Option<&'static Column> {
    COLUMNS.iter().find(|c| c.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_parses_to_its_kind_and_back() {
        let names = op_names();
        assert_eq!(names.len(), OpKind::COUNT + OP_ALIASES.len());
        for (n, k) in &names {
            assert_eq!(OpKind::parse(n), Some(*k), "{n}");
            if !OP_ALIASES.contains(n) {
                assert_eq!(k.name(), *n);
            }
        }
        assert_eq!(OpKind::parse("Bogus"), None);
    }

    #[test]
    fn classes_nest() {
        for (n, k) in op_names() {
            let is = |c| k.is(c);
            assert_eq!(is(OpClass::P2p), is(OpClass::Send) || is(OpClass::Recv), "{n}");
            if is(OpClass::BlockingSend) || is(OpClass::NonblockingSend) || is(OpClass::SyncSend) {
                assert!(is(OpClass::Send), "{n}");
            }
            if is(OpClass::BlockingRecv) || is(OpClass::NonblockingRecv) {
                assert!(is(OpClass::Recv), "{n}");
            }
            // Sendrecv is the one operation that both sends and receives
            assert_eq!(is(OpClass::Send) && is(OpClass::Recv), k == OpKind::Sendrecv, "{n}");
            assert_eq!(is(OpClass::Collective), is(OpClass::BlockingCollective) || is(OpClass::NonblockingCollective));
            // every kind is in exactly one of the top-level groups
            let top = [
                OpClass::P2p,
                OpClass::Wait,
                OpClass::Test,
                OpClass::Collective,
                OpClass::Compute,
                OpClass::Copy,
                OpClass::Marker,
                OpClass::Gpu,
                OpClass::Untraced,
            ];
            let n_top = top.iter().filter(|c| is(**c) && !(**c == OpClass::Gpu && is(OpClass::Compute))).count();
            assert_eq!(n_top, 1, "{n}");
        }
        assert!(OpKind::Sendrecv.is(OpClass::Send) && OpKind::Sendrecv.is(OpClass::Recv));
        assert!(!OpKind::Sendrecv.is(OpClass::BlockingSend));
        assert!(OpKind::Kernel.is(OpClass::Gpu) && OpKind::Kernel.is(OpClass::Compute));
        let names: std::collections::HashSet<_> = OpClass::ALL.iter().map(|c| c.name()).collect();
        assert_eq!(names.len(), OpClass::ALL.len());
    }

    #[test]
    fn spaces_and_copies_round_trip() {
        for m in MemSpace::ALL {
            assert_eq!(MemSpace::parse(m.name()), Some(m));
        }
        for c in CopyKind::ALL {
            assert_eq!(CopyKind::parse(c.name().unwrap()), Some(c));
        }
        assert_eq!(CopyKind::None.name(), None);
    }

    #[test]
    fn columns_are_unique_and_defaults_fit_their_type() {
        let mut seen = std::collections::HashSet::new();
        for c in COLUMNS {
            assert!(seen.insert(c.name), "{} twice", c.name);
            match c.default {
                ColDefault::Int(_) => {
                    assert!(matches!(c.ty, ColType::U32 | ColType::I32 | ColType::I64 | ColType::U64))
                }
                ColDefault::Bool(_) => assert_eq!(c.ty, ColType::Bool),
                ColDefault::Str(s) => {
                    assert_eq!(c.ty, ColType::Str);
                    assert!(MemSpace::parse(s).is_some());
                }
                _ => {}
            }
        }
        assert_eq!(column("priority").unwrap().default, ColDefault::Int(0));
    }
}

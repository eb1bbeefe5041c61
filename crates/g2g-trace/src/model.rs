//! The in-memory operation model the replay consumes.

/// What an operation does.  Collective kinds carry the `g2g_coll`-style name in [`OpKind::name`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum OpKind {
    Compute,
    Send,
    Ssend,
    Bsend,
    Rsend,
    Isend,
    Issend,
    Recv,
    Irecv,
    Sendrecv,
    Wait,
    Waitall,
    Waitany,
    Waitsome,
    Test,
    Memcpy,
    Init,
    Finalize,
    Kernel,
    EventRecord,
    StreamWaitEvent,
    StreamSync,
    DeviceSync,
    EventSync,
    /// A stretch the tracer did not record (measurement or profiling switched off) lasting
    /// `dur_ns`: skipped by default (`--window traced`), host time with `--window all`.
    Untraced,
    /// Blocking collective; the kind index is into `COLL_NAMES`.
    Coll(u8),
    /// Nonblocking collective (Ibcast, ...).
    ICol(u8),
}

/// The unit variants, in a fixed order (statistics index).
const UNIT: [OpKind; 25] = [
    OpKind::Compute,
    OpKind::Send,
    OpKind::Ssend,
    OpKind::Bsend,
    OpKind::Rsend,
    OpKind::Isend,
    OpKind::Issend,
    OpKind::Recv,
    OpKind::Irecv,
    OpKind::Sendrecv,
    OpKind::Wait,
    OpKind::Waitall,
    OpKind::Waitany,
    OpKind::Waitsome,
    OpKind::Test,
    OpKind::Memcpy,
    OpKind::Init,
    OpKind::Finalize,
    OpKind::Kernel,
    OpKind::EventRecord,
    OpKind::StreamWaitEvent,
    OpKind::StreamSync,
    OpKind::DeviceSync,
    OpKind::EventSync,
    OpKind::Untraced,
];

/// Collective names in the order used by `OpKind::Coll(i)`; equal to g2g-coll's `CollKind::ALL`.
pub const COLL_NAMES: [&str; 16] = [
    "Barrier",
    "Bcast",
    "Reduce",
    "Allreduce",
    "Gather",
    "Gatherv",
    "Scatter",
    "Scatterv",
    "Allgather",
    "Allgatherv",
    "Alltoall",
    "Alltoallv",
    "Reduce_scatter",
    "Reduce_scatter_block",
    "Scan",
    "Exscan",
];
const ICOLL_NAMES: [&str; 16] = [
    "Ibarrier",
    "Ibcast",
    "Ireduce",
    "Iallreduce",
    "Igather",
    "Igatherv",
    "Iscatter",
    "Iscatterv",
    "Iallgather",
    "Iallgatherv",
    "Ialltoall",
    "Ialltoallv",
    "Ireduce_scatter",
    "Ireduce_scatter_block",
    "Iscan",
    "Iexscan",
];

impl OpKind {
    pub fn parse(s: &str) -> Option<OpKind> {
        use OpKind::*;
        Some(match s {
            "Compute" => Compute,
            "Send" => Send,
            "Ssend" => Ssend,
            "Bsend" => Bsend,
            "Rsend" => Rsend,
            "Isend" => Isend,
            "Issend" => Issend,
            "Recv" => Recv,
            "Irecv" => Irecv,
            "Sendrecv" => Sendrecv,
            "Wait" => Wait,
            "Waitall" => Waitall,
            "Waitany" => Waitany,
            "Waitsome" => Waitsome,
            "Test" | "Testall" | "Testany" | "Testsome" => Test,
            "Memcpy" => Memcpy,
            "Init" => Init,
            "Finalize" => Finalize,
            "Kernel" => Kernel,
            "EventRecord" => EventRecord,
            "StreamWaitEvent" => StreamWaitEvent,
            "StreamSynchronize" => StreamSync,
            "DeviceSynchronize" => DeviceSync,
            "EventSynchronize" => EventSync,
            "Untraced" => Untraced,
            _ => {
                if let Some(i) = COLL_NAMES.iter().position(|n| *n == s) {
                    Coll(i as u8)
                } else if let Some(i) = ICOLL_NAMES.iter().position(|n| *n == s) {
                    ICol(i as u8)
                } else {
                    return None;
                }
            }
        })
    }

    pub fn name(self) -> &'static str {
        use OpKind::*;
        match self {
            Compute => "Compute",
            Send => "Send",
            Ssend => "Ssend",
            Bsend => "Bsend",
            Rsend => "Rsend",
            Isend => "Isend",
            Issend => "Issend",
            Recv => "Recv",
            Irecv => "Irecv",
            Sendrecv => "Sendrecv",
            Wait => "Wait",
            Waitall => "Waitall",
            Waitany => "Waitany",
            Waitsome => "Waitsome",
            Test => "Test",
            Memcpy => "Memcpy",
            Init => "Init",
            Finalize => "Finalize",
            Kernel => "Kernel",
            EventRecord => "EventRecord",
            StreamWaitEvent => "StreamWaitEvent",
            StreamSync => "StreamSynchronize",
            DeviceSync => "DeviceSynchronize",
            EventSync => "EventSynchronize",
            Untraced => "Untraced",
            Coll(i) => COLL_NAMES[i as usize],
            ICol(i) => ICOLL_NAMES[i as usize],
        }
    }

    /// Dense index for per-op statistics tables.
    #[inline]
    pub fn index(self) -> usize {
        use OpKind::*;
        // the position in `UNIT` (a test checks the two agree), without a search per op
        match self {
            Compute => 0,
            Send => 1,
            Ssend => 2,
            Bsend => 3,
            Rsend => 4,
            Isend => 5,
            Issend => 6,
            Recv => 7,
            Irecv => 8,
            Sendrecv => 9,
            Wait => 10,
            Waitall => 11,
            Waitany => 12,
            Waitsome => 13,
            Test => 14,
            Memcpy => 15,
            Init => 16,
            Finalize => 17,
            Kernel => 18,
            EventRecord => 19,
            StreamWaitEvent => 20,
            StreamSync => 21,
            DeviceSync => 22,
            EventSync => 23,
            Untraced => 24,
            Coll(i) => UNIT.len() + i as usize,
            ICol(i) => UNIT.len() + 16 + i as usize,
        }
    }
    pub const COUNT: usize = UNIT.len() + 32;

    pub fn from_index(i: usize) -> OpKind {
        if i < UNIT.len() {
            UNIT[i]
        } else if i < UNIT.len() + 16 {
            OpKind::Coll((i - UNIT.len()) as u8)
        } else {
            OpKind::ICol((i - UNIT.len() - 16) as u8)
        }
    }

    /// GPU-side operations (streams, events, synchronisation).
    pub fn is_gpu(self) -> bool {
        matches!(
            self,
            OpKind::Kernel
                | OpKind::EventRecord
                | OpKind::StreamWaitEvent
                | OpKind::StreamSync
                | OpKind::DeviceSync
                | OpKind::EventSync
        )
    }

    pub fn is_collective(self) -> bool {
        matches!(self, OpKind::Coll(_) | OpKind::ICol(_))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[repr(u8)]
pub enum MemSpace {
    #[default]
    Host,
    Device,
    Managed,
    Unknown,
    /// page-locked host memory (cudaMallocHost, cudaHostRegister): a host buffer; the replay gives
    /// MPI messages from it the staged rates (`[[mpi.factors]]` of path `hostcopy`)
    Pinned,
}

impl MemSpace {
    pub fn parse(s: &str) -> Option<MemSpace> {
        Some(match s {
            "host" => MemSpace::Host,
            "device" => MemSpace::Device,
            "managed" => MemSpace::Managed,
            "unknown" => MemSpace::Unknown,
            "pinned" => MemSpace::Pinned,
            _ => return None,
        })
    }
    pub fn name(self) -> &'static str {
        match self {
            MemSpace::Host => "host",
            MemSpace::Device => "device",
            MemSpace::Managed => "managed",
            MemSpace::Unknown => "unknown",
            MemSpace::Pinned => "pinned",
        }
    }
    /// Device or managed memory: data that lives on the GPU when the call is made.
    pub fn on_gpu(self) -> bool {
        matches!(self, MemSpace::Device | MemSpace::Managed)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[repr(u8)]
pub enum CopyKind {
    #[default]
    None,
    D2H,
    H2D,
    D2D,
    H2H,
}

impl CopyKind {
    pub fn parse(s: &str) -> Option<CopyKind> {
        Some(match s {
            "d2h" => CopyKind::D2H,
            "h2d" => CopyKind::H2D,
            "d2d" => CopyKind::D2D,
            "h2h" => CopyKind::H2H,
            _ => return None,
        })
    }
}

/// Lists some operations carry (Waitall's requests, v-collective counts).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OpLists {
    pub reqs: Vec<u64>,
    pub counts: Vec<u64>,
    pub recv_counts: Vec<u64>,
}

/// One operation of one rank: one 64-byte cache line.
///
/// A replay holds every operation of its current trace window in memory and reads each once,
/// so the record is kept to a line.  Two fields serve only some kinds of operation and share
/// their slots with fields of other kinds; they are read and written through methods that know
/// the kind (set `kind` first, as [`Op::new`] does):
/// * `dur_ns` (Compute, Kernel) shares a slot with `recv_bytes` (every other kind);
/// * `recv_peer` and `recv_tag` (Sendrecv) share theirs with `stream` and `priority` (the GPU
///   operations and Memcpy); `root` (collectives) has its own.
///
/// A field that does not apply to the kind reads as its default (`-1`, or `0` for `priority`,
/// `dur_ns` and `recv_bytes`) and is not stored: the replay never uses it.
///
/// Its event number is not stored either: a rank's operations come in event order from 0
/// (every source checks or assigns it), so the replay counts them.
#[derive(Clone, Debug, PartialEq)]
#[repr(C, align(64))]
pub struct Op {
    pub bytes: u64,
    pub req: u64,
    /// `dur_ns` or `recv_bytes` (`Op::dur_ns`)
    x: u64,
    pub lists: Option<Box<OpLists>>,
    pub peer: i32,
    pub tag: i32,
    pub comm: u32,
    /// `recv_peer` (Sendrecv) or `stream` (GPU operations, Memcpy)
    a: i32,
    /// `recv_tag` (Sendrecv) or `priority` (GPU operations, Memcpy)
    b: i32,
    /// `root` (collectives)
    c: i32,
    pub kind: OpKind,
    pub mem: MemSpace,
    pub copy: CopyKind,
    pub contiguous: bool,
}

const _: () = assert!(std::mem::size_of::<Op>() == 64);

/// Which fields a kind of operation keeps in the shared slots of [`Op`].
#[derive(Clone, Copy, PartialEq, Eq)]
enum Slots {
    Other,
    Sendrecv,
    Gpu,
    Coll,
}

impl OpKind {
    /// Does this kind take a duration from the trace (Compute, Kernel)?  Its `dur_ns` then
    /// takes the slot of `recv_bytes`.
    #[inline]
    pub fn has_duration(self) -> bool {
        matches!(self, OpKind::Compute | OpKind::Kernel | OpKind::Untraced)
    }
    #[inline]
    fn slots(self) -> Slots {
        match self {
            OpKind::Sendrecv => Slots::Sendrecv,
            OpKind::Memcpy => Slots::Gpu,
            k if k.is_gpu() => Slots::Gpu,
            k if k.is_collective() => Slots::Coll,
            _ => Slots::Other,
        }
    }
}

/// The getter and setter of a field kept in a shared slot of [`Op`]: the getter reads the slot
/// when the op's kind uses the field (else the field's default), the setter writes it only then.
macro_rules! shared_field {
    ($(#[doc = $doc:expr])* $get:ident, $set:ident: $t:ty = $slot:ident if |$k:ident| $uses:expr, else $default:expr) => {
        $(#[doc = $doc])*
        #[inline]
        pub fn $get(&self) -> $t {
            let $k = self.kind;
            if $uses { self.$slot } else { $default }
        }
        #[doc = concat!("Sets `", stringify!($get), "` (ignored for a kind that does not use it).")]
        #[inline]
        pub fn $set(&mut self, v: $t) {
            let $k = self.kind;
            if $uses {
                self.$slot = v;
            }
        }
    };
}

impl Op {
    pub fn new(kind: OpKind) -> Op {
        let b = if kind.slots() == Slots::Gpu { 0 } else { -1 };
        Op {
            kind,
            mem: MemSpace::Host,
            copy: CopyKind::None,
            contiguous: true,
            peer: -1,
            tag: -1,
            comm: 0,
            a: -1,
            b,
            c: -1,
            bytes: 0,
            x: 0,
            req: 0,
            lists: None,
        }
    }

    /// An operation from the columns of a trace row (the fields its kind does not use are
    /// dropped; see [`Op`]).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub fn from_row(
        kind: OpKind,
        mem: MemSpace,
        copy: CopyKind,
        contiguous: bool,
        peer: i32,
        tag: i32,
        comm: u32,
        recv_peer: i32,
        recv_tag: i32,
        root: i32,
        stream: i32,
        priority: i32,
        bytes: u64,
        recv_bytes: u64,
        dur_ns: u64,
        req: u64,
    ) -> Op {
        let (a, b) = match kind.slots() {
            Slots::Sendrecv => (recv_peer, recv_tag),
            Slots::Gpu => (stream, priority),
            _ => (-1, -1),
        };
        let c = if kind.slots() == Slots::Coll { root } else { -1 };
        let x = if kind.has_duration() { dur_ns } else { recv_bytes };
        Op { kind, mem, copy, contiguous, peer, tag, comm, a, b, c, bytes, x, req, lists: None }
    }

    pub fn reqs(&self) -> &[u64] {
        self.lists.as_ref().map(|l| l.reqs.as_slice()).unwrap_or(&[])
    }

    shared_field! {
        /// Duration from the trace (Compute, Kernel; 0 for other kinds).
        dur_ns, set_dur_ns: u64 = x if |k| k.has_duration(), else 0
    }
    shared_field! {
        /// Receive size (every kind but Compute and Kernel, which have none: 0).
        recv_bytes, set_recv_bytes: u64 = x if |k| !k.has_duration(), else 0
    }
    shared_field! {
        /// Sendrecv's source (-1 for other kinds).
        recv_peer, set_recv_peer: i32 = a if |k| k.slots() == Slots::Sendrecv, else -1
    }
    shared_field! {
        /// Sendrecv's receive tag (-1 for other kinds).
        recv_tag, set_recv_tag: i32 = b if |k| k.slots() == Slots::Sendrecv, else -1
    }
    shared_field! {
        /// A collective's root (-1 for other kinds).
        root, set_root: i32 = c if |k| k.slots() == Slots::Coll, else -1
    }
    shared_field! {
        /// The stream of a GPU operation or Memcpy (-1 for other kinds).
        stream, set_stream: i32 = a if |k| k.slots() == Slots::Gpu, else -1
    }
    shared_field! {
        /// A kernel's stream priority (GPU operations, Memcpy; 0 for other kinds).
        priority, set_priority: i32 = b if |k| k.slots() == Slots::Gpu, else 0
    }
}

pub const ANY_SOURCE: i32 = -1;
pub const PROC_NULL: i32 = -2;
pub const ANY_TAG: i32 = -1;

/// A communicator: world ranks in communicator-rank order (`None` = all world ranks).
#[derive(Clone, Debug, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
pub struct CommDef {
    pub id: u32,
    #[serde(default)]
    pub name: String,
    pub members: Option<Vec<u32>>,
}

impl CommDef {
    pub fn size(&self, nranks: u32) -> u32 {
        self.members.as_ref().map(|m| m.len() as u32).unwrap_or(nranks)
    }
    /// World rank of communicator rank `r`.
    pub fn world(&self, r: u32) -> Option<u32> {
        match &self.members {
            None => Some(r),
            Some(m) => m.get(r as usize).copied(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(kind: OpKind) -> Op {
        // recv_peer 3, recv_tag 4, root 5, stream 6, priority 7, recv_bytes 800, dur_ns 900
        Op::from_row(kind, MemSpace::Device, CopyKind::None, true, 1, 2, 0, 3, 4, 5, 6, 7, 100, 800, 900, 11)
    }

    #[test]
    fn each_kind_keeps_its_own_fields_in_the_shared_slots() {
        let s = row(OpKind::Sendrecv);
        assert_eq!((s.recv_peer(), s.recv_tag(), s.root(), s.stream(), s.priority()), (3, 4, -1, -1, 0));
        assert_eq!((s.recv_bytes(), s.dur_ns()), (800, 0));
        let k = row(OpKind::Kernel);
        assert_eq!((k.recv_peer(), k.recv_tag(), k.root(), k.stream(), k.priority()), (-1, -1, -1, 6, 7));
        assert_eq!((k.recv_bytes(), k.dur_ns()), (0, 900));
        let m = row(OpKind::Memcpy);
        assert_eq!((m.stream(), m.priority(), m.recv_bytes(), m.dur_ns()), (6, 7, 800, 0));
        let c = row(OpKind::parse("Bcast").unwrap());
        assert_eq!((c.root(), c.recv_peer(), c.stream(), c.recv_bytes()), (5, -1, -1, 800));
        let ic = row(OpKind::parse("Igather").unwrap());
        assert_eq!(ic.root(), 5);
        let w = row(OpKind::Compute);
        assert_eq!((w.dur_ns(), w.recv_bytes(), w.root(), w.stream()), (900, 0, -1, -1));
        let r = row(OpKind::Irecv);
        assert_eq!((r.recv_bytes(), r.dur_ns(), r.recv_peer(), r.root()), (800, 0, -1, -1));
        // the shared fields every kind has
        for o in [&s, &k, &m, &c, &w, &r] {
            assert_eq!((o.peer, o.tag, o.bytes, o.req, o.mem), (1, 2, 100, 11, MemSpace::Device));
        }
    }

    #[test]
    fn index_is_the_position_in_unit_and_round_trips() {
        for (i, k) in UNIT.iter().enumerate() {
            assert_eq!(k.index(), i);
        }
        for i in 0..OpKind::COUNT {
            assert_eq!(OpKind::from_index(i).index(), i);
        }
    }

    #[test]
    fn setters_and_new_match_from_row() {
        let mut s = Op::new(OpKind::Sendrecv);
        assert_eq!((s.recv_peer(), s.recv_tag()), (-1, -1));
        s.set_recv_peer(3);
        s.set_recv_tag(4);
        s.set_recv_bytes(800);
        s.set_stream(9); // not a Sendrecv field: ignored
        assert_eq!((s.recv_peer(), s.recv_tag(), s.recv_bytes(), s.stream()), (3, 4, 800, -1));
        let mut k = Op::new(OpKind::Kernel);
        assert_eq!((k.stream(), k.priority()), (-1, 0));
        k.set_stream(6);
        k.set_priority(7);
        k.set_dur_ns(900);
        k.set_recv_bytes(5); // a kernel receives nothing: ignored
        assert_eq!((k.stream(), k.priority(), k.dur_ns(), k.recv_bytes()), (6, 7, 900, 0));
        assert_eq!(std::mem::size_of::<Op>(), 64);
        assert_eq!(std::mem::align_of::<Op>(), 64);
    }
}

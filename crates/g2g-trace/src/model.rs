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
    /// Blocking collective; the kind index is into `COLL_NAMES`.
    Coll(u8),
    /// Nonblocking collective (Ibcast, ...).
    ICol(u8),
}

/// The unit variants, in a fixed order (statistics index).
const UNIT: [OpKind; 24] = [
    OpKind::Compute, OpKind::Send, OpKind::Ssend, OpKind::Bsend, OpKind::Rsend, OpKind::Isend,
    OpKind::Issend, OpKind::Recv, OpKind::Irecv, OpKind::Sendrecv, OpKind::Wait, OpKind::Waitall,
    OpKind::Waitany, OpKind::Waitsome, OpKind::Test, OpKind::Memcpy, OpKind::Init, OpKind::Finalize,
    OpKind::Kernel, OpKind::EventRecord, OpKind::StreamWaitEvent, OpKind::StreamSync,
    OpKind::DeviceSync, OpKind::EventSync,
];

/// Collective names in the order used by `OpKind::Coll(i)`; equal to g2g-coll's `CollKind::ALL`.
pub const COLL_NAMES: [&str; 16] = [
    "Barrier", "Bcast", "Reduce", "Allreduce", "Gather", "Gatherv", "Scatter", "Scatterv",
    "Allgather", "Allgatherv", "Alltoall", "Alltoallv", "Reduce_scatter", "Reduce_scatter_block",
    "Scan", "Exscan",
];
const ICOLL_NAMES: [&str; 16] = [
    "Ibarrier", "Ibcast", "Ireduce", "Iallreduce", "Igather", "Igatherv", "Iscatter", "Iscatterv",
    "Iallgather", "Iallgatherv", "Ialltoall", "Ialltoallv", "Ireduce_scatter",
    "Ireduce_scatter_block", "Iscan", "Iexscan",
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
            Coll(i) => COLL_NAMES[i as usize],
            ICol(i) => ICOLL_NAMES[i as usize],
        }
    }

    /// Dense index for per-op statistics tables.
    pub fn index(self) -> usize {
        match self {
            OpKind::Coll(i) => UNIT.len() + i as usize,
            OpKind::ICol(i) => UNIT.len() + 16 + i as usize,
            k => UNIT.iter().position(|x| *x == k).unwrap_or(0),
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
        matches!(self, OpKind::Kernel | OpKind::EventRecord | OpKind::StreamWaitEvent | OpKind::StreamSync | OpKind::DeviceSync | OpKind::EventSync)
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
}

impl MemSpace {
    pub fn parse(s: &str) -> Option<MemSpace> {
        Some(match s {
            "host" => MemSpace::Host,
            "device" => MemSpace::Device,
            "managed" => MemSpace::Managed,
            "unknown" => MemSpace::Unknown,
            _ => return None,
        })
    }
    pub fn name(self) -> &'static str {
        match self {
            MemSpace::Host => "host",
            MemSpace::Device => "device",
            MemSpace::Managed => "managed",
            MemSpace::Unknown => "unknown",
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

/// One operation of one rank (80 bytes).  Its event number (`seq`) is not stored: a rank's
/// operations come in event order from 0 (every source checks or assigns it), so the replay
/// counts them.
#[derive(Clone, Debug, PartialEq)]
pub struct Op {
    pub kind: OpKind,
    pub mem: MemSpace,
    pub copy: CopyKind,
    pub contiguous: bool,
    pub peer: i32,
    pub tag: i32,
    pub recv_peer: i32,
    pub recv_tag: i32,
    pub comm: u32,
    pub root: i32,
    pub stream: i32,
    /// Kernel: its stream's priority (lower runs first)
    pub priority: i32,
    pub bytes: u64,
    pub recv_bytes: u64,
    pub dur_ns: u64,
    pub req: u64,
    pub lists: Option<Box<OpLists>>,
}

impl Op {
    pub fn new(kind: OpKind) -> Op {
        Op {
            kind,
            mem: MemSpace::Host,
            copy: CopyKind::None,
            contiguous: true,
            peer: -1,
            tag: -1,
            recv_peer: -1,
            recv_tag: -1,
            comm: 0,
            root: -1,
            stream: -1,
            priority: 0,
            bytes: 0,
            recv_bytes: 0,
            dur_ns: 0,
            req: 0,
            lists: None,
        }
    }
    pub fn reqs(&self) -> &[u64] {
        self.lists.as_ref().map(|l| l.reqs.as_slice()).unwrap_or(&[])
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

//! GPU operations: kernel launches, event record / stream-wait-event, and the host's waits
//! (stream, device, event synchronisation).  The streams themselves: `model::gpu_streams`.
use g2g_trace::{Op, OpKind};

use crate::event::Next;
use crate::model::gpu_streams::{self, GpuWait, GpuWork};
use crate::state::{Block, State};

impl State<'_> {
    /// Queues work on a stream of rank `r`'s GPU and starts what can start.
    pub(crate) fn gpu_enqueue(&mut self, r: u32, stream: i32, priority: Option<i32>, w: GpuWork) {
        self.ranks[r as usize].gpu().enqueue(stream, priority, w);
        self.gpu_pump(r);
    }

    fn gpu_pump(&mut self, r: u32) {
        let g = self.ranks[r as usize].gpu.as_deref_mut().unwrap();
        gpu_streams::pump(g, r, &mut self.xfers, &mut self.q, &mut self.m.net);
    }

    /// A GPU operation; true when complete (the host goes on).
    pub(crate) fn exec_gpu(&mut self, r: u32, op: &Op, phase: u8) -> bool {
        if phase > 0 {
            return self.ranks[r as usize].block == Block::None;
        }
        let st = op.stream().max(0);
        let wait = match op.kind {
            OpKind::Kernel => {
                let seq = self.ranks[r as usize].gpu().next_launch();
                self.gpu_enqueue(r, st, Some(op.priority()), GpuWork::Kernel { dur: op.dur_ns(), seq });
                if self.policy.serialises_gpu() {
                    Some(GpuWait::Stream(st))
                } else {
                    None
                }
            }
            OpKind::EventRecord => {
                let gen = self.ranks[r as usize].gpu().record(op.req);
                self.gpu_enqueue(r, st, None, GpuWork::Record { event: op.req, gen });
                None
            }
            OpKind::StreamWaitEvent => {
                let gen = self.ranks[r as usize].gpu().recorded(op.req);
                self.gpu_enqueue(r, st, None, GpuWork::WaitEvent { event: op.req, gen });
                None
            }
            OpKind::StreamSync => Some(GpuWait::Stream(st)),
            OpKind::DeviceSync => Some(GpuWait::Device),
            OpKind::EventSync => {
                let gen = self.ranks[r as usize].gpu().recorded(op.req);
                Some(GpuWait::Event(op.req, gen))
            }
            _ => None,
        };
        match wait {
            None => true,
            Some(w) => {
                self.ranks[r as usize].phase = 1;
                self.ranks[r as usize].block = Block::GpuSync(w);
                self.gpu_check_host(r)
            }
        }
    }

    /// Is the host's GPU wait satisfied?  Unblocks the rank if so (returns true).
    pub(crate) fn gpu_check_host(&mut self, r: u32) -> bool {
        let rk = &mut self.ranks[r as usize];
        let Block::GpuSync(w) = rk.block else {
            return false;
        };
        let done = match rk.gpu.as_ref() {
            None => true,
            Some(g) => g.satisfies(w),
        };
        if done {
            rk.block = Block::None;
        }
        done
    }

    /// A kernel of (rank, stream) finished.
    pub(crate) fn kernel_done(&mut self, r: u32, st: i32) -> Next {
        self.ranks[r as usize].gpu().kernel_done();
        self.stream_item_done(r, st)
    }

    /// The work at the head of a stream finished: the stream goes on; a host waiting for it too.
    pub(crate) fn stream_item_done(&mut self, r: u32, st: i32) -> Next {
        self.ranks[r as usize].gpu().item_done(st);
        self.gpu_pump(r);
        if matches!(self.ranks[r as usize].block, Block::GpuSync(_)) && self.gpu_check_host(r) {
            return Next::Step(r);
        }
        Next::Idle
    }
}

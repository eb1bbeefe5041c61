//! A rank's GPU: in-order streams, one SM resource for kernels (highest-priority ready kernel
//! first, then launch order), copies on the copy engines as transfers in the flow network, and
//! events recorded on and waited for by streams.  The host's waits (`GpuWait`) are questions the
//! rank executor asks (`Gpu::satisfies`).
use std::collections::{BTreeMap, VecDeque};

use g2g_engine::FxHashMap as HashMap;
use g2g_engine::Time;
use g2g_net::paths::Plan;
use g2g_net::FlowNet;

use crate::event::{Ev, Queue};
use crate::model::transfer::{Transfers, XferOwner};

/// What the host waits for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum GpuWait {
    /// a stream's work so far
    Stream(i32),
    /// all streams' work so far
    Device,
    /// (event id, generation): the event's recording of that generation
    Event(u64, u64),
}

#[derive(Clone, Debug)]
pub(crate) enum GpuWork {
    Kernel { dur: Time, seq: u64 },
    Copy(Box<Plan>),
    Record { event: u64, gen: u64 },
    WaitEvent { event: u64, gen: u64 },
}

#[derive(Default)]
struct Stream {
    q: VecDeque<GpuWork>,
    running: bool,
    priority: i32,
}

#[derive(Default)]
pub(crate) struct Gpu {
    streams: BTreeMap<i32, Stream>,
    sm_busy: bool,
    /// event id -> (generation recorded so far, generation completed)
    events: HashMap<u64, (u64, u64)>,
    launches: u64,
    pub busy_ns: Time,
}

impl Gpu {
    /// A kernel launch's sequence number (launch order breaks priority ties).
    pub fn next_launch(&mut self) -> u64 {
        self.launches += 1;
        self.launches
    }

    /// An event recorded once more: its new generation.
    pub fn record(&mut self, event: u64) -> u64 {
        let e = self.events.entry(event).or_insert((0, 0));
        e.0 += 1;
        e.0
    }

    /// The generation an event has been recorded up to (0: never).
    pub fn recorded(&self, event: u64) -> u64 {
        self.events.get(&event).map(|e| e.0).unwrap_or(0)
    }

    /// Queues work on a stream; a kernel launch also sets the stream's priority.  (Then `pump`.)
    pub fn enqueue(&mut self, stream: i32, priority: Option<i32>, w: GpuWork) {
        let st = self.streams.entry(stream).or_default();
        if let Some(p) = priority {
            st.priority = p;
        }
        st.q.push_back(w);
    }

    /// Is the host's wait satisfied?
    pub fn satisfies(&self, w: GpuWait) -> bool {
        match w {
            GpuWait::Stream(s) => self.streams.get(&s).map(|st| st.q.is_empty() && !st.running).unwrap_or(true),
            GpuWait::Device => self.streams.values().all(|st| st.q.is_empty() && !st.running),
            GpuWait::Event(e, gen) => self.events.get(&e).map(|x| x.1 >= gen).unwrap_or(true),
        }
    }

    /// The running kernel has finished (then `item_done`).
    pub fn kernel_done(&mut self) {
        self.sm_busy = false;
    }

    /// The work at the head of `stream` has finished (then `pump`).
    pub fn item_done(&mut self, stream: i32) {
        let s = self.streams.get_mut(&stream).expect("stream");
        s.running = false;
        s.q.pop_front();
    }
}

/// Starts whatever GPU work of rank `r` can start: markers at once, copies on their links (as
/// transfers), and the highest-priority ready kernel on the SMs (its end: `Ev::KernelDone`).
pub(crate) fn pump(g: &mut Gpu, r: u32, xfers: &mut Transfers, q: &mut Queue, net: &mut FlowNet) {
    loop {
        let mut progressed = false;
        let mut to_copy: Vec<(i32, Plan)> = vec![];
        {
            let mut completed: Vec<(u64, u64)> = vec![];
            for (&sid, st) in g.streams.iter_mut() {
                while !st.running {
                    match st.q.front() {
                        Some(GpuWork::Record { event, gen }) => {
                            completed.push((*event, *gen));
                            st.q.pop_front();
                            progressed = true;
                        }
                        Some(GpuWork::WaitEvent { event, gen }) => {
                            let ok = g.events.get(event).map(|x| x.1 >= *gen).unwrap_or(true)
                                || completed.iter().any(|(e, gg)| e == event && gg >= gen);
                            if ok {
                                st.q.pop_front();
                                progressed = true;
                            } else {
                                break;
                            }
                        }
                        Some(GpuWork::Copy(_)) => {
                            if let Some(GpuWork::Copy(p)) = st.q.front().cloned() {
                                st.running = true;
                                to_copy.push((sid, *p));
                            }
                            break;
                        }
                        _ => break,
                    }
                }
            }
            for (e, gen) in completed {
                let ev = g.events.entry(e).or_insert((gen, 0));
                ev.1 = ev.1.max(gen);
            }
        }
        for (sid, plan) in to_copy {
            xfers.start(q, net, plan, XferOwner::Stream(r, sid), 0);
        }
        // the SMs: one kernel at a time, best priority (lowest value) first, then launch order
        let start = if g.sm_busy {
            None
        } else {
            let mut best: Option<(i32, u64, i32)> = None;
            for (&sid, st) in g.streams.iter() {
                if st.running {
                    continue;
                }
                if let Some(GpuWork::Kernel { seq, .. }) = st.q.front() {
                    let key = (st.priority, *seq, sid);
                    if best.map(|b| (key.0, key.1) < (b.0, b.1)).unwrap_or(true) {
                        best = Some(key);
                    }
                }
            }
            best.map(|(_, _, sid)| {
                let st = g.streams.get_mut(&sid).unwrap();
                st.running = true;
                g.sm_busy = true;
                let dur = match st.q.front() {
                    Some(GpuWork::Kernel { dur, .. }) => *dur,
                    _ => 0,
                };
                g.busy_ns += dur;
                (sid, dur)
            })
        };
        if let Some((sid, dur)) = start {
            q.push_in(dur, Ev::KernelDone(r, sid));
        }
        if !progressed {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the GPU alone (kernels only): returns (end time, stream) of each kernel in order.
    fn run(g: &mut Gpu) -> Vec<(Time, i32)> {
        let (mut xfers, mut q, mut net) = (Transfers::default(), Queue::new(), FlowNet::new());
        pump(g, 0, &mut xfers, &mut q, &mut net);
        let mut done = vec![];
        while let Some((t, ev)) = q.pop() {
            let Ev::KernelDone(0, st) = ev else { panic!("{ev:?}") };
            done.push((t, st));
            g.kernel_done();
            g.item_done(st);
            pump(g, 0, &mut xfers, &mut q, &mut net);
        }
        done
    }

    fn kernel(g: &mut Gpu, stream: i32, priority: i32, dur: Time) {
        let seq = g.next_launch();
        g.enqueue(stream, Some(priority), GpuWork::Kernel { dur, seq });
    }

    #[test]
    fn kernels_run_one_at_a_time_best_priority_first() {
        let mut g = Gpu::default();
        kernel(&mut g, 1, 0, 10);
        kernel(&mut g, 1, 0, 10);
        kernel(&mut g, 2, -1, 5); // launched last, higher priority (lower value)
                                  // queued together: stream 2's kernel (better priority) first, then stream 1's in order
        assert_eq!(run(&mut g), vec![(5, 2), (15, 1), (25, 1)]);
        assert_eq!(g.busy_ns, 25);
        assert!(g.satisfies(GpuWait::Device));
    }

    #[test]
    fn a_stream_waits_for_an_event_recorded_on_another() {
        let mut g = Gpu::default();
        kernel(&mut g, 1, 0, 10);
        let gen = g.record(7);
        g.enqueue(1, None, GpuWork::Record { event: 7, gen });
        g.enqueue(2, None, GpuWork::WaitEvent { event: 7, gen: g.recorded(7) });
        kernel(&mut g, 2, -5, 3); // better priority, but behind the event wait
        assert!(!g.satisfies(GpuWait::Event(7, gen)));
        assert_eq!(run(&mut g), vec![(10, 1), (13, 2)]);
        assert!(g.satisfies(GpuWait::Event(7, gen)) && g.satisfies(GpuWait::Stream(2)));
    }
}

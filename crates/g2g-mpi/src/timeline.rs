//! A Chrome trace-event file (opens in Perfetto / chrome://tracing) of the simulated run:
//! one process per node, a track per rank (its MPI calls and compute), a track per GPU (copies and
//! GPU-side data movement), and an arrow from each send to the arrival of its data.
use std::fs::File;
use std::io::{BufWriter, Write};

use g2g_engine::Time;
use g2g_trace::Op;

pub struct Timeline {
    w: BufWriter<File>,
    n: u64,
    max: u64,
    node_of: Vec<u32>,
    gpu_of: Vec<u32>,
    first: bool,
}

const GPU_TID: u64 = 1 << 30;

fn us(t: Time) -> f64 {
    t as f64 / 1000.0
}

impl Timeline {
    pub fn create(path: &str, max: u64, nodes: u32, node_of: &[u32], gpu_of: &[u32]) -> std::io::Result<Timeline> {
        let mut w = BufWriter::with_capacity(1 << 20, File::create(path)?);
        w.write_all(b"{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n")?;
        let mut t = Timeline { w, n: 0, max, node_of: node_of.to_vec(), gpu_of: gpu_of.to_vec(), first: true };
        for n in 0..nodes.min(100_000) {
            t.raw(&format!("{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{n},\"args\":{{\"name\":\"node {n}\"}}}}"));
        }
        let ranks = node_of.len().min(100_000);
        for r in 0..ranks {
            let (p, g) = (node_of[r], gpu_of[r]);
            t.raw(&format!("{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{p},\"tid\":{r},\"args\":{{\"name\":\"rank {r}\"}}}}"));
            t.raw(&format!("{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{p},\"tid\":{},\"args\":{{\"name\":\"GPU {g} (rank {r})\"}}}}", GPU_TID + r as u64));
        }
        t.n = 0;
        Ok(t)
    }

    fn raw(&mut self, s: &str) {
        if !self.first {
            let _ = self.w.write_all(b",\n");
        }
        self.first = false;
        let _ = self.w.write_all(s.as_bytes());
    }

    fn ok(&mut self) -> bool {
        self.n += 1;
        self.n <= self.max
    }

    pub fn op(&mut self, r: u32, op: &Op, seq: u64, t0: Time, t1: Time) {
        if t1 == t0 && op.kind.name() == "Compute" || !self.ok() {
            return;
        }
        let cat = if op.kind.name() == "Compute" { "compute" } else if op.kind.is_collective() { "collective" } else { "mpi" };
        let s = format!(
            "{{\"ph\":\"X\",\"name\":\"{}\",\"cat\":\"{cat}\",\"pid\":{},\"tid\":{r},\"ts\":{:.3},\"dur\":{:.3},\"args\":{{\"event\":{},\"peer\":{},\"tag\":{},\"bytes\":{},\"mem\":\"{}\"}}}}",
            op.kind.name(), self.node_of[r as usize], us(t0), us(t1 - t0), seq, op.peer, op.tag, op.bytes.max(op.recv_bytes()), op.mem.name()
        );
        self.raw(&s);
    }

    pub fn msg_start(&mut self, uid: u64, src: u32, t: Time) {
        if !self.ok() {
            return;
        }
        let s = format!("{{\"ph\":\"s\",\"name\":\"msg\",\"cat\":\"msg\",\"id\":{uid},\"pid\":{},\"tid\":{src},\"ts\":{:.3}}}", self.node_of[src as usize], us(t));
        self.raw(&s);
    }

    #[allow(clippy::too_many_arguments)]
    pub fn transfer(&mut self, src: u32, dst: u32, model: &str, bytes: u64, t0: Time, t1: Time, uid: u64) {
        if !self.ok() {
            return;
        }
        let s = format!(
            "{{\"ph\":\"X\",\"name\":\"{model} -> {dst}\",\"cat\":\"network\",\"pid\":{},\"tid\":{},\"ts\":{:.3},\"dur\":{:.3},\"args\":{{\"bytes\":{bytes},\"from\":{src},\"to\":{dst}}}}}",
            self.node_of[src as usize], GPU_TID + src as u64, us(t0), us(t1 - t0)
        );
        self.raw(&s);
        let f = format!("{{\"ph\":\"f\",\"bp\":\"e\",\"name\":\"msg\",\"cat\":\"msg\",\"id\":{uid},\"pid\":{},\"tid\":{dst},\"ts\":{:.3}}}", self.node_of[dst as usize], us(t1));
        self.raw(&f);
    }

    pub fn copy(&mut self, r: u32, model: &str, bytes: u64, t0: Time, t1: Time) {
        if !self.ok() {
            return;
        }
        let _ = self.gpu_of.len();
        let s = format!(
            "{{\"ph\":\"X\",\"name\":\"copy ({model})\",\"cat\":\"copy\",\"pid\":{},\"tid\":{},\"ts\":{:.3},\"dur\":{:.3},\"args\":{{\"bytes\":{bytes}}}}}",
            self.node_of[r as usize], GPU_TID + r as u64, us(t0), us(t1 - t0)
        );
        self.raw(&s);
    }

    pub fn finish(mut self) -> std::io::Result<()> {
        self.w.write_all(b"\n]}\n")?;
        self.w.flush()
    }
}

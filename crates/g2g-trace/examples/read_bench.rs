//! Times reading a whole trace into per-rank queues: `read_bench FILE [REPEATS] [arrow]`.
use std::collections::VecDeque;
use std::time::Instant;

use g2g_trace::{Op, ParquetTrace, TraceSource};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let reps: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(5);
    let arrow = args.get(3).map(|s| s == "arrow").unwrap_or(false);
    if args.get(3).map(|s| s == "compare").unwrap_or(false) {
        let all = |force: bool| {
            let mut tr = ParquetTrace::open(&args[1]).unwrap();
            tr.force_arrow = force;
            let mut qs: Vec<VecDeque<Op>> = (0..tr.nranks()).map(|_| VecDeque::new()).collect();
            while tr.fill(&mut qs).unwrap() {}
            qs
        };
        let (a, b) = (all(false), all(true));
        for (r, (x, y)) in a.iter().zip(&b).enumerate() {
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                if p != q {
                    println!("rank {r} op {i}: fast {p:?}\n arrow {q:?}");
                    return;
                }
            }
            assert_eq!(x.len(), y.len());
        }
        println!("same");
        return;
    }
    for rep in 0..reps {
        let t0 = Instant::now();
        let mut tr = ParquetTrace::open(&args[1]).unwrap();
        tr.force_arrow = arrow;
        let t1 = Instant::now();
        let mut qs: Vec<VecDeque<Op>> = (0..tr.nranks()).map(|_| VecDeque::new()).collect();
        let mut ops = 0usize;
        while tr.fill(&mut qs).unwrap() {
            for q in qs.iter_mut() {
                ops += q.len();
                q.clear();
            }
        }
        let t2 = Instant::now();
        eprintln!(
            "rep {rep}: open {:.3} ms, fill {:.3} ms, {ops} ops",
            (t1 - t0).as_secs_f64() * 1e3,
            (t2 - t1).as_secs_f64() * 1e3
        );
    }
}

//! Pure-Rust command line for benchmarks and debugging without Python:
//! `g2gsim-core TRACE.g2g.parquet MACHINE.toml [--mode M] [--gpus-per-node N] [--sharing S] [--json]`.
use g2g_mpi::{simulate, Mode, SimOptions};
use g2g_net::MachineConfig;
use g2g_trace::ParquetTrace;
use std::io::Write;

// mimalloc: the replay allocates and frees many small objects (messages, plans, request lists)
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 || args.iter().any(|a| a == "--help" || a == "-h") {
        eprintln!("usage: g2gsim-core TRACE.g2g.parquet MACHINE.toml [--mode as-traced|hostcopy|gpudirect] [--gpus-per-node N] [--buffers traced|device|host] [--window traced|all] [--sharing max-min|max-min-full|bottleneck|max-min-grouped] [--solver auto|per-flow|grouped] [--json]");
        std::process::exit(2);
    }
    let mut opt = SimOptions::default();
    let mut json = false;
    let mut i = 3;
    while i < args.len() {
        match args[i].as_str() {
            "--mode" => {
                i += 1;
                opt.mode = Mode::parse(args.get(i).map(|s| s.as_str()).unwrap_or("")).unwrap_or_else(|| {
                    eprintln!("--mode must be as-traced, hostcopy or gpudirect");
                    std::process::exit(2)
                });
            }
            "--gpus-per-node" => {
                i += 1;
                let n = args.get(i).and_then(|s| s.parse::<u32>().ok()).filter(|&n| n > 0);
                if n.is_none() {
                    eprintln!("--gpus-per-node takes a whole number of GPUs, 1 or more");
                    std::process::exit(2);
                }
                opt.gpus_per_node = n;
            }
            "--staged-buffers-are-device" => {
                eprintln!("note: --staged-buffers-are-device is replaced by --buffers device");
                opt.buffers = g2g_mpi::Buffers::Device;
            }
            "--buffers" => {
                i += 1;
                opt.buffers =
                    g2g_mpi::Buffers::parse(args.get(i).map(|s| s.as_str()).unwrap_or("")).unwrap_or_else(|| {
                        eprintln!("--buffers: traced, device or host");
                        std::process::exit(2)
                    });
            }
            "--window" => {
                i += 1;
                opt.window =
                    g2g_mpi::Window::parse(args.get(i).map(|s| s.as_str()).unwrap_or("")).unwrap_or_else(|| {
                        eprintln!("--window: traced or all");
                        std::process::exit(2)
                    });
            }
            "--sharing" => {
                i += 1;
                let s = g2g_net::lmm::Sharing::parse_study(args.get(i).map(|s| s.as_str()).unwrap_or(""));
                if s.is_none() {
                    // (max-min-grouped: the grouped solve of issue 27, for study; no machine file takes it)
                    eprintln!("--sharing must be max-min, max-min-full, bottleneck or max-min-grouped");
                    std::process::exit(2);
                }
                opt.sharing = s;
            }
            "--solver" => {
                i += 1;
                opt.max_min_solver = g2g_net::solver::Solver::parse(args.get(i).map(|s| s.as_str()).unwrap_or(""))
                    .unwrap_or_else(|| {
                        eprintln!("--solver must be auto, per-flow or grouped");
                        std::process::exit(2)
                    });
            }
            "--json" => json = true,
            a => {
                eprintln!("unknown argument {a}");
                std::process::exit(2);
            }
        }
        i += 1;
    }
    let text = std::fs::read_to_string(&args[2]).unwrap_or_else(|e| {
        eprintln!("{}: {e}", args[2]);
        std::process::exit(1)
    });
    let cfg = MachineConfig::from_toml(&text, &args[2]).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(1)
    });
    let mut tr = ParquetTrace::open(&args[1]).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(1)
    });
    let rows = tr.total_rows;
    opt.per_rank = tr_nranks_small(&tr);
    match simulate(&mut tr, cfg, opt, rows, None) {
        Ok(rep) => {
            let out = if json {
                rep.to_json()
            } else {
                format!(
                    "total {:.6} s  comm {:.6} s  events {}  {:.0} events/s  {:.0} ops/s  wall {:.3} s",
                    rep.total_time_s,
                    rep.comm_time_s,
                    rep.engine.events,
                    rep.engine.events_per_s,
                    rep.engine.ops_per_s,
                    rep.engine.wall_s
                )
            };
            // a closed pipe (`| head`) or a full disk: say so and fail, no panic
            let mut stdout = std::io::stdout().lock();
            if let Err(e) = writeln!(stdout, "{out}").and_then(|_| stdout.flush()) {
                eprintln!("g2gsim-core: writing the report to standard output: {e}");
                std::process::exit(1);
            }
        }
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
}

fn tr_nranks_small(t: &ParquetTrace) -> bool {
    use g2g_trace::TraceSource;
    t.nranks() <= 100_000
}

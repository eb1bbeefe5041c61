//! Bounded fuzzing (issue 24): the machine-file parser, the Parquet trace decoder and the replay on
//! random small traces, each for a fixed number of deterministic cases (a seeded xorshift; no
//! nightly toolchain needed). Every case must end in a result or an error: a panic, a hang, an
//! inconsistent verdict or a wrapped value fails the test, and the input is saved under
//! `tests/data/fuzz/<target>/` so that the regression tests below replay it from then on.
//!
//! `G2G_FUZZ_SCALE` multiplies the case counts (CI: 1; a long local run: 100). Each target prints
//! its outcome classes (`cargo test --release -p g2g-mpi --test fuzz -- --nocapture`).
mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use g2g_mpi::{simulate, Mapping, Mode, SimError, SimOptions};
use g2g_net::{Machine, MachineConfig, Placement};
use g2g_trace::{CommDef, MemSpace, MemTrace, Op, OpKind, OpLists, ParquetTrace, TraceSource, COLL_NAMES};

// ---------------------------------------------------------------------------------------- tools

struct Rng(u64);
impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }
    fn chance(&mut self, pct: u64) -> bool {
        self.below(100) < pct
    }
    fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.below(v.len() as u64) as usize]
    }
}

fn scale() -> usize {
    std::env::var("G2G_FUZZ_SCALE").ok().and_then(|s| s.parse().ok()).unwrap_or(1).max(1)
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn fuzz_dir(target: &str) -> PathBuf {
    root().join("tests/data/fuzz").join(target)
}

fn fnv(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &x| (h ^ x as u64).wrapping_mul(0x100_0000_01b3))
}

/// Saves a failing input as a regression case; returns its path.
fn keep(target: &str, ext: &str, data: &[u8]) -> PathBuf {
    let d = fuzz_dir(target);
    let _ = std::fs::create_dir_all(&d);
    let p = d.join(format!("crash-{:016x}.{ext}", fnv(data)));
    let _ = std::fs::write(&p, data);
    p
}

#[derive(Default)]
struct Outcomes {
    classes: BTreeMap<String, usize>,
    failures: Vec<String>,
}
impl Outcomes {
    fn add(&mut self, class: impl Into<String>) {
        *self.classes.entry(class.into()).or_default() += 1;
    }
    fn total(&self) -> usize {
        self.classes.values().sum()
    }
    fn report(&self, target: &str, t0: Instant) {
        let parts: Vec<String> = self.classes.iter().map(|(k, v)| format!("{k}: {v}")).collect();
        println!("fuzz {target}: {} cases in {:.1} s; {}", self.total(), t0.elapsed().as_secs_f64(), parts.join(", "));
        assert!(
            self.failures.is_empty(),
            "fuzz {target}: {} failing input(s) kept:\n{}",
            self.failures.len(),
            self.failures.join("\n")
        );
    }
}

/// Runs `f` on its own thread: Ok(value), Err("panic: ...") or Err("hang") after `limit`.
fn guarded<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> Result<T, String> {
    let (tx, rx) = mpsc::channel();
    let h = std::thread::Builder::new()
        .name("fuzz-case".into())
        .stack_size(64 << 20)
        .spawn(move || {
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
            let _ = tx.send(r);
        })
        .expect("thread");
    match rx.recv_timeout(limit) {
        Ok(Ok(v)) => {
            let _ = h.join();
            Ok(v)
        }
        Ok(Err(p)) => {
            let _ = h.join();
            let m = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            Err(format!("panic: {m}"))
        }
        Err(_) => Err("hang".into()), // the thread is left behind; the test fails
    }
}

/// Panics of fuzz cases are counted, not printed; the test's own assertions still print.
fn quiet_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if std::thread::current().name() != Some("fuzz-case") || std::env::var_os("G2G_FUZZ_VERBOSE").is_some() {
            default(info);
        }
    }));
}

// ------------------------------------------------------------------------------ machine files

fn machine_seeds() -> Vec<String> {
    let mut v = vec![common::SIMPLE.to_string()];
    if let Ok(rd) = std::fs::read_dir(root().join("python/g2gsim/presets")) {
        let mut files: Vec<PathBuf> =
            rd.flatten().map(|e| e.path()).filter(|p| p.extension().map_or(false, |x| x == "toml")).collect();
        files.sort();
        v.extend(files.iter().filter_map(|p| std::fs::read_to_string(p).ok()));
    }
    v
}

const EXTREME_NUMBERS: [&str; 14] = [
    "0",
    "-1",
    "1",
    "4294967297",
    "4294967298",
    "9223372036854775807",
    "-9223372036854775808",
    "1e300",
    "-1e300",
    "1e-300",
    "nan",
    "inf",
    "0.5",
    "65536",
];
const EXTREME_STRINGS: [&str; 16] = [
    "\"1e30s\"",
    "\"1.9e10s\"",
    "\"1e-300GB/s\"",
    "\"0B/s\"",
    "\"1e300GB/s\"",
    "\"-1us\"",
    "\"1e30B\"",
    "\"18446744073709551615\"",
    "\"\"",
    "\"GB/s\"",
    "\"1e6s\"",
    "\"1000001s\"",
    "\"0.5B/s\"",
    "\"nanGB/s\"",
    "\"1e19\"",
    "\"5 weeks\"",
];
const TABLE_TYPOS: [&str; 8] = [
    "[node.nvlinks]",
    "[node.hots]",
    "[gpu.copy]",
    "[network.fat]",
    "[nodes]",
    "[mpi.factor]",
    "[[mpi.factor]]",
    "[collectives.algos]",
];

fn mutate_machine(rng: &mut Rng, text: &str) -> String {
    let mut lines: Vec<String> = text.lines().map(|s| s.to_string()).collect();
    let n = 1 + rng.below(3);
    for _ in 0..n {
        if lines.is_empty() {
            lines.push("[node]".into());
        }
        let i = rng.below(lines.len() as u64) as usize;
        match rng.below(9) {
            // replace a value with an extreme number or unit string
            0 | 1 | 2 => {
                if let Some(eq) = lines[i].find('=') {
                    let v = if rng.chance(50) { *rng.pick(&EXTREME_NUMBERS) } else { *rng.pick(&EXTREME_STRINGS) };
                    let key = lines[i][..eq].to_string();
                    lines[i] = format!("{key}= {v}");
                }
            }
            3 => {
                lines.remove(i);
            }
            4 => {
                let l = lines[i].clone();
                lines.insert(i, l);
            }
            5 => lines.insert(i, rng.pick(&TABLE_TYPOS).to_string()),
            6 => {
                // a key from another table
                let keys = [
                    "gpus = 4294967297",
                    "count = 4294967297",
                    "levels = 4294967298",
                    "bw = \"1e-300GB/s\"",
                    "hop_latency = \"1e30s\"",
                    "lat_factor = 1e300",
                    "topology = \"torus\"",
                    "dims = [4294967297, 2, 2]",
                    "topology = \"dragonfly\"",
                    "groups = 1048576",
                    "routers_per_group = 1048576",
                    "global_links_per_router = 1048576",
                    "pipeline_chunk = 1",
                    "kind = \"pairs\"",
                    "pairs = [[0, 4294967295, \"1GB/s\"]]",
                    "affinity = [4294967295]",
                    "taper = 0",
                    "nodes_per_leaf = 1",
                    "leaves_per_pod = 1048576",
                    "rails = 64",
                    "efficiency = 1e-300",
                ];
                lines.insert(i, rng.pick(&keys).to_string());
            }
            7 => {
                // flip a byte
                let mut b = lines[i].clone().into_bytes();
                if !b.is_empty() {
                    let j = rng.below(b.len() as u64) as usize;
                    b[j] = (rng.below(95) + 32) as u8;
                }
                lines[i] = String::from_utf8_lossy(&b).into_owned();
            }
            _ => {
                lines.truncate(i);
            }
        }
    }
    lines.join("\n") + "\n"
}

/// The class of one machine-file case, or Err(failure).
fn machine_case(text: String) -> Result<String, String> {
    let r = MachineConfig::from_toml(&text, "fuzz.toml");
    let all = MachineConfig::validate_all(&text, "fuzz.toml");
    match r {
        Err(e) => {
            if all.is_empty() {
                return Err(format!("inconsistent: from_toml refuses ({e}) but validate_all finds nothing"));
            }
            if e.line.is_none() && e.key != "<syntax>" {
                if std::env::var_os("G2G_FUZZ_VERBOSE").is_some() {
                    eprintln!("no line: {e}");
                }
                return Ok("rejected, no line".into());
            }
            Ok(if e.msg.contains("unknown table") {
                "rejected: unknown table".into()
            } else if e.msg.contains("unknown") {
                "rejected: unknown key/value".into()
            } else if e.key == "<syntax>" {
                "rejected: TOML syntax".into()
            } else {
                "rejected: value".into()
            })
        }
        Ok(cfg) => {
            if !all.is_empty() {
                return Err(format!("inconsistent: from_toml accepts but validate_all says {}", all[0]));
            }
            // every number the parser kept is in its documented bounds (nothing wrapped or saturated)
            let bws = [cfg.pcie_bw, cfg.shm_bw, cfg.nic_bw, cfg.gpu_reduce_bw, cfg.cpu_reduce_bw, cfg.gpu_pack_bw];
            let durs = [
                cfg.pcie_latency_ns,
                cfg.nvlink_latency_ns,
                cfg.shm_latency_ns,
                cfg.nic_latency_ns,
                cfg.send_overhead_ns,
                cfg.recv_overhead_ns,
                cfg.call_overhead_ns,
                cfg.copy_delay_ns,
                cfg.gpudirect_delay_ns,
                cfg.pack_kernel_latency_ns,
            ];
            if bws.iter().any(|b| !(b.is_finite() && *b > 0.0 && *b <= 1e15))
                || durs.iter().any(|d| !(d.is_finite() && *d >= 0.0 && *d <= 1e15))
            {
                return Err(format!("wrapped or unbounded value accepted: bw {bws:?} durations {durs:?}"));
            }
            let gpn = cfg.gpus_per_node;
            let nranks = (gpn * 3).min(64);
            Ok(match Machine::build(cfg, Placement::linear(nranks, gpn)) {
                Ok(_) => "accepted, built".into(),
                Err(_) => "accepted, build refused".into(),
            })
        }
    }
}

#[test]
fn fuzz_machine_files() {
    quiet_panics();
    let t0 = Instant::now();
    let seeds = machine_seeds();
    let mut rng = Rng::new(24);
    let mut out = Outcomes::default();
    for _ in 0..3000 * scale() {
        let seed = rng.pick(&seeds).clone();
        let text = mutate_machine(&mut rng, &seed);
        let t = text.clone();
        match guarded(Duration::from_secs(20), move || machine_case(t)) {
            Ok(Ok(class)) => out.add(class),
            Ok(Err(f)) | Err(f) => {
                out.add(if f.starts_with("panic") {
                    "PANIC"
                } else if f == "hang" {
                    "HANG"
                } else {
                    "WRONG"
                });
                let p = keep("machine", "toml", text.as_bytes());
                out.failures.push(format!("{}: {f}", p.display()));
            }
        }
    }
    out.report("machine files", t0);
}

#[test]
fn machine_regressions() {
    quiet_panics();
    let mut n = 0;
    for d in ["machine"] {
        let Ok(rd) = std::fs::read_dir(fuzz_dir(d)) else { continue };
        for e in rd.flatten() {
            let text = String::from_utf8_lossy(&std::fs::read(e.path()).unwrap()).into_owned();
            let r = guarded(Duration::from_secs(20), move || machine_case(text));
            assert!(matches!(r, Ok(Ok(_))), "{}: {r:?}", e.path().display());
            n += 1;
        }
    }
    println!("machine regressions: {n}");
}

// --------------------------------------------------------------------------- Parquet traces

fn parquet_seeds() -> Vec<(String, Vec<u8>)> {
    let mut v = vec![];
    if let Ok(rd) = std::fs::read_dir(fuzz_dir("parquet-seeds")) {
        let mut files: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
        files.sort();
        for p in files {
            if let Ok(b) = std::fs::read(&p) {
                v.push((p.file_name().unwrap().to_string_lossy().into_owned(), b));
            }
        }
    }
    v
}

fn mutate_bytes(rng: &mut Rng, b: &[u8]) -> Vec<u8> {
    let mut v = b.to_vec();
    for _ in 0..1 + rng.below(4) {
        if v.is_empty() {
            break;
        }
        let i = rng.below(v.len() as u64) as usize;
        match rng.below(7) {
            0 | 1 => v[i] ^= 1 << rng.below(8),
            2 => v[i] = *rng.pick(&[0u8, 0xff, 0x7f, 0x80, 1]),
            3 => {
                // overwrite a few bytes with an extreme little-endian integer (sizes, counts, offsets)
                let x = *rng.pick(&[u64::MAX, 1 << 60, 1 << 63, u32::MAX as u64, 0, 1 << 31]);
                for (k, byte) in x.to_le_bytes().iter().enumerate().take(v.len() - i) {
                    v[i + k] = *byte;
                }
            }
            4 => v.truncate(i),
            5 => {
                let n = (rng.below(64) as usize).min(v.len() - i);
                let chunk: Vec<u8> = v[i..i + n].to_vec();
                v.splice(i..i, chunk);
            }
            _ => {
                let n = (rng.below(32) as usize).min(v.len() - i);
                v.drain(i..i + n);
            }
        }
    }
    v
}

fn read_all(path: &Path, arrow: bool) -> Result<u64, String> {
    let mut t = ParquetTrace::open(path).map_err(|e| format!("open: {e}"))?;
    t.force_arrow = arrow;
    let mut q: Vec<std::collections::VecDeque<Op>> = (0..t.nranks()).map(|_| Default::default()).collect();
    let mut rows = 0u64;
    for _ in 0..100_000 {
        let more = t.fill(&mut q).map_err(|e| format!("read: {e}"))?;
        for x in q.iter_mut() {
            rows += x.len() as u64;
            x.clear();
        }
        if !more {
            return Ok(rows);
        }
    }
    Err("hang".into())
}

fn parquet_case(path: PathBuf) -> Result<String, String> {
    let pages = read_all(&path, false);
    // the Arrow path (used only for files whose layout the page decoder does not take) can spend
    // unbounded memory on a corrupt page header inside the parquet crate (kept case
    // crash-45fb40df496f5c4e): it is compared with the page decoder only where that one reads
    let arrow = if pages.is_ok() { read_all(&path, true) } else { Err("open: skipped".into()) };
    match (&pages, &arrow) {
        (Ok(a), Ok(b)) if a != b => Err(format!("decoders disagree: {a} vs {b} rows")),
        (Err(e), _) | (_, Err(e)) if e == "hang" => Err("hang".into()),
        (Ok(_), Ok(_)) => Ok("read".into()),
        (Err(e), _) if e.starts_with("open") => Ok("refused at open".into()),
        _ => Ok("refused while reading".into()),
    }
}

#[test]
fn fuzz_parquet_decoder() {
    quiet_panics();
    let t0 = Instant::now();
    let seeds = parquet_seeds();
    assert!(!seeds.is_empty(), "no seed traces in tests/data/fuzz/parquet-seeds");
    let dir = std::env::temp_dir().join(format!("g2g-fuzz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut rng = Rng::new(2024);
    let mut out = Outcomes::default();
    for i in 0..1500 * scale() {
        let (_, seed) = rng.pick(&seeds);
        let data = mutate_bytes(&mut rng, seed);
        let p = dir.join(format!("case-{i}.g2g.parquet"));
        std::fs::write(&p, &data).unwrap();
        let pp = p.clone();
        match guarded(Duration::from_secs(20), move || parquet_case(pp)) {
            Ok(Ok(class)) => out.add(class),
            Ok(Err(f)) | Err(f) => {
                out.add(if f.starts_with("panic") {
                    "PANIC"
                } else if f == "hang" {
                    "HANG"
                } else {
                    "WRONG"
                });
                let k = keep("parquet", "g2g.parquet", &data);
                out.failures.push(format!("{}: {f}", k.display()));
            }
        }
        let _ = std::fs::remove_file(&p);
    }
    let _ = std::fs::remove_dir_all(&dir);
    out.report("parquet decoder", t0);
}

#[test]
fn parquet_regressions() {
    quiet_panics();
    let Ok(rd) = std::fs::read_dir(fuzz_dir("parquet")) else { return };
    let mut bad = vec![];
    for e in rd.flatten() {
        let p = e.path();
        let r = guarded(Duration::from_secs(20), move || parquet_case(p));
        if !matches!(r, Ok(Ok(_))) {
            bad.push(format!("{}: {r:?}", e.path().display()));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

// ------------------------------------------------------------------------- replay of random traces

/// A random small trace: mostly matched sends/receives and collectives, with perturbations
/// (wrong sizes, peers, kinds, roots, missing waits, huge values) so that every outcome occurs.
fn random_trace(rng: &mut Rng) -> Vec<Vec<Op>> {
    let n = 2 + rng.below(5) as usize;
    let mut ranks: Vec<Vec<Op>> = vec![vec![]; n];
    let mut next_req = vec![1u64; n];
    let mut pending: Vec<Vec<u64>> = vec![vec![]; n];
    let sizes = [0u64, 1, 8, 1000, 65536, 1 << 20, 1 << 24];
    let mem = |rng: &mut Rng| *rng.pick(&[MemSpace::Host, MemSpace::Device, MemSpace::Host]);
    for _step in 0..1 + rng.below(8) {
        match rng.below(6) {
            0 => {
                for r in ranks.iter_mut() {
                    let mut o = Op::new(OpKind::Compute);
                    o.set_dur_ns(rng.below(1_000_000));
                    r.push(o);
                }
            }
            1 | 2 => {
                // a message a -> b, blocking or not
                let a = rng.below(n as u64) as usize;
                let b = (a + 1 + rng.below(n as u64 - 1) as usize) % n;
                let bytes = *rng.pick(&sizes);
                let tag = rng.below(3) as i32;
                let space = mem(rng);
                let nb = rng.chance(50);
                let mut s = Op::new(if nb { OpKind::Isend } else { OpKind::Send });
                s.peer = b as i32;
                s.tag = tag;
                s.bytes = bytes;
                s.mem = space;
                if nb {
                    s.req = next_req[a];
                    pending[a].push(next_req[a]);
                    next_req[a] += 1;
                }
                let mut r = Op::new(if nb { OpKind::Irecv } else { OpKind::Recv });
                r.peer = if rng.chance(15) { -1 } else { a as i32 };
                r.tag = tag;
                r.set_recv_bytes(if rng.chance(10) { bytes / 2 } else { bytes });
                r.mem = space;
                if nb {
                    r.req = next_req[b];
                    pending[b].push(next_req[b]);
                    next_req[b] += 1;
                }
                ranks[a].push(s);
                ranks[b].push(r);
            }
            3 | 4 => {
                let k = rng.below(COLL_NAMES.len() as u64) as u8;
                let root = rng.below(n as u64) as i32;
                let bytes = *rng.pick(&sizes);
                for (i, r) in ranks.iter_mut().enumerate() {
                    let mut o = Op::new(OpKind::Coll(k));
                    o.set_root(root);
                    o.bytes = bytes;
                    o.set_recv_bytes(bytes);
                    o.mem = MemSpace::Device;
                    if COLL_NAMES[k as usize].ends_with('v') {
                        o.lists = Some(Box::new(OpLists {
                            reqs: vec![],
                            counts: vec![bytes / n as u64; n],
                            recv_counts: vec![bytes / n as u64; n],
                        }));
                    }
                    let _ = i;
                    r.push(o);
                }
            }
            _ => {
                for (i, r) in ranks.iter_mut().enumerate() {
                    let mut o = Op::new(OpKind::Memcpy);
                    o.bytes = *rng.pick(&sizes);
                    o.copy = *rng.pick(&[g2g_trace::CopyKind::D2H, g2g_trace::CopyKind::H2D, g2g_trace::CopyKind::D2D]);
                    let _ = i;
                    r.push(o);
                }
            }
        }
    }
    for (i, r) in ranks.iter_mut().enumerate() {
        if !pending[i].is_empty() && !rng.chance(10) {
            let mut o = Op::new(OpKind::Waitall);
            o.lists = Some(Box::new(OpLists { reqs: std::mem::take(&mut pending[i]), ..Default::default() }));
            r.push(o);
        }
    }
    // perturbations: one field of one op made wrong or extreme
    for _ in 0..rng.below(3) {
        let r = rng.below(n as u64) as usize;
        if ranks[r].is_empty() {
            continue;
        }
        let i = rng.below(ranks[r].len() as u64) as usize;
        let o = &mut ranks[r][i];
        match rng.below(8) {
            0 => o.bytes = *rng.pick(&[u64::MAX, 1 << 60, (1 << 60) + 1, 1 << 40]),
            1 => o.peer = *rng.pick(&[-5, n as i32, i32::MAX, -2]),
            2 => {
                if o.kind.is_collective() {
                    o.set_root(*rng.pick(&[-3, n as i32, 0]));
                }
            }
            3 => {
                if let OpKind::Coll(_) = o.kind {
                    o.kind = OpKind::Coll(rng.below(COLL_NAMES.len() as u64) as u8);
                }
            }
            4 => o.comm = *rng.pick(&[1, 7, u32::MAX]),
            5 => {
                if o.kind == OpKind::Compute {
                    o.set_dur_ns(*rng.pick(&[u64::MAX, 1 << 62, 1_000_000_000_000_000]));
                }
            }
            6 => o.tag = *rng.pick(&[-7, i32::MAX]),
            _ => ranks[r].truncate(i),
        }
    }
    ranks
}

fn trace_json(ranks: &[Vec<Op>]) -> String {
    let v: Vec<Vec<serde_json::Value>> = ranks
        .iter()
        .map(|r| {
            r.iter()
                .map(|o| {
                    serde_json::json!({"op": o.kind.name(), "peer": o.peer, "tag": o.tag, "comm": o.comm, "bytes": o.bytes,
                        "recv_bytes": o.recv_bytes(), "dur_ns": o.dur_ns(), "root": o.root(), "mem": o.mem.name(), "req": o.req,
                        "copy": format!("{:?}", o.copy), "reqs": o.reqs(),
                        "counts": o.lists.as_ref().map(|l| l.counts.clone()).unwrap_or_default()})
                })
                .collect()
        })
        .collect();
    serde_json::to_string(&v).unwrap()
}

fn trace_from_json(s: &str) -> Vec<Vec<Op>> {
    let v: Vec<Vec<serde_json::Value>> = serde_json::from_str(s).unwrap();
    v.iter()
        .map(|r| {
            r.iter()
                .map(|x| {
                    let kind = OpKind::parse(x["op"].as_str().unwrap()).unwrap();
                    let mut o = Op::new(kind);
                    o.peer = x["peer"].as_i64().unwrap() as i32;
                    o.tag = x["tag"].as_i64().unwrap() as i32;
                    o.comm = x["comm"].as_u64().unwrap() as u32;
                    o.bytes = x["bytes"].as_u64().unwrap();
                    o.set_recv_bytes(x["recv_bytes"].as_u64().unwrap());
                    o.set_dur_ns(x["dur_ns"].as_u64().unwrap());
                    o.set_root(x["root"].as_i64().unwrap() as i32);
                    o.mem = MemSpace::parse(x["mem"].as_str().unwrap()).unwrap();
                    o.req = x["req"].as_u64().unwrap();
                    o.copy = match x["copy"].as_str().unwrap() {
                        "D2H" => g2g_trace::CopyKind::D2H,
                        "H2D" => g2g_trace::CopyKind::H2D,
                        "D2D" => g2g_trace::CopyKind::D2D,
                        "H2H" => g2g_trace::CopyKind::H2H,
                        _ => g2g_trace::CopyKind::None,
                    };
                    let reqs: Vec<u64> = x["reqs"].as_array().unwrap().iter().map(|y| y.as_u64().unwrap()).collect();
                    let counts: Vec<u64> =
                        x["counts"].as_array().unwrap().iter().map(|y| y.as_u64().unwrap()).collect();
                    if !reqs.is_empty() || !counts.is_empty() {
                        o.lists = Some(Box::new(OpLists { reqs, recv_counts: counts.clone(), counts }));
                    }
                    o
                })
                .collect()
        })
        .collect()
}

fn replay_case(ranks: Vec<Vec<Op>>, mode: Mode) -> Result<String, String> {
    let compute: Vec<u64> = ranks
        .iter()
        .map(|r| {
            r.iter().filter(|o| o.kind == OpKind::Compute).map(|o| o.dur_ns()).fold(0u64, |a, b| a.saturating_add(b))
        })
        .collect();
    let mut t = MemTrace::new(ranks).with_comms(vec![CommDef { id: 0, name: "MPI_COMM_WORLD".into(), members: None }]);
    let opt = SimOptions { mode, mapping: Mapping::Linear, ..Default::default() };
    match simulate(&mut t, common::cfg(common::SIMPLE), opt, 0, None) {
        Ok(rep) => {
            if !(rep.total_time_s.is_finite() && rep.total_time_s >= 0.0) {
                return Err(format!("total time {}", rep.total_time_s));
            }
            for (i, r) in rep.per_rank.iter().enumerate() {
                // a rank cannot end before its own compute: a smaller end is a wrapped or saturated time
                if (r.end_s * 1e9) + 1.0 < compute[i] as f64 {
                    return Err(format!("rank {i} ends at {} s, before its {} ns of compute", r.end_s, compute[i]));
                }
            }
            Ok(if rep.warnings.is_empty() { "completed".into() } else { "completed with warnings".into() })
        }
        Err(SimError::Deadlock(_)) => Ok("deadlock reported".into()),
        Err(SimError::Trace(e)) => {
            if e.rank.is_none() {
                return Err(format!("trace error without a rank: {e}"));
            }
            Ok("trace error (rank, event)".into())
        }
        Err(SimError::Options(_)) | Err(SimError::Machine(_)) => Ok("options/machine error".into()),
        Err(SimError::Interrupted) => Err("interrupted".into()),
    }
}

#[test]
fn fuzz_replay() {
    quiet_panics();
    let t0 = Instant::now();
    let mut rng = Rng::new(7);
    let mut out = Outcomes::default();
    for _ in 0..1500 * scale() {
        let ranks = random_trace(&mut rng);
        let mode = *rng.pick(&[Mode::AsTraced, Mode::HostCopy, Mode::GpuDirect]);
        let json = trace_json(&ranks);
        match guarded(Duration::from_secs(20), move || replay_case(ranks, mode)) {
            Ok(Ok(class)) => out.add(class),
            Ok(Err(f)) | Err(f) => {
                out.add(if f.starts_with("panic") {
                    "PANIC"
                } else if f == "hang" {
                    "HANG"
                } else {
                    "WRONG"
                });
                let k = keep("replay", &format!("{}.json", mode.name()), json.as_bytes());
                out.failures.push(format!("{}: {f}", k.display()));
            }
        }
    }
    out.report("replay", t0);
}

#[test]
fn replay_regressions() {
    quiet_panics();
    let Ok(rd) = std::fs::read_dir(fuzz_dir("replay")) else { return };
    for e in rd.flatten() {
        let p = e.path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        let mode = ["as-traced", "hostcopy", "gpudirect"]
            .iter()
            .find(|m| name.contains(&format!(".{m}.")))
            .and_then(|m| Mode::parse(m))
            .unwrap_or(Mode::AsTraced);
        let ranks = trace_from_json(&std::fs::read_to_string(&p).unwrap());
        let r = guarded(Duration::from_secs(20), move || replay_case(ranks, mode));
        assert!(matches!(r, Ok(Ok(_))), "{name}: {r:?}");
    }
}

/// Reads one file with the Arrow path (debugging a kept case): G2G_FUZZ_FILE=path.
#[test]
#[ignore]
fn debug_arrow_read() {
    if let Some(p) = std::env::var_os("G2G_FUZZ_FILE") {
        let t0 = Instant::now();
        let r = read_all(Path::new(&p), true);
        println!("{r:?} in {:.1} s", t0.elapsed().as_secs_f64());
    }
}

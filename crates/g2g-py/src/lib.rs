//! The only crate that knows Python: the private module `g2gsim._core`.
// pyo3 0.22's #[pyfunction] expansion converts every PyResult error into itself
#![allow(clippy::useless_conversion)]
use pyo3::exceptions::{PyKeyboardInterrupt, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use g2g_mpi::{simulate as run_sim, Buffers, Mapping, Mode, SimError, SimOptions, Window};
use g2g_net::MachineConfig;
use g2g_trace::{ParquetTrace, TraceSource};

// the same allocator as the g2gsim-core binary (many small short-lived allocations in the replay)
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

pyo3::create_exception!(_core, TraceError, PyValueError);
pyo3::create_exception!(_core, MachineError, PyValueError);
pyo3::create_exception!(_core, DeadlockError, PyRuntimeError);

fn opts_from(d: Option<&Bound<'_, PyDict>>) -> PyResult<SimOptions> {
    let mut o = SimOptions::default();
    let Some(d) = d else { return Ok(o) };
    for (k, v) in d.iter() {
        let k: String = k.extract()?;
        // a value of the wrong type or range is an error naming the option (not an OverflowError)
        let bad = |e: PyErr| PyValueError::new_err(format!("option {k}: {}", e.value_bound(d.py())));
        match k.as_str() {
            "mode" => {
                let s: String = v.extract().map_err(bad)?;
                o.mode = Mode::parse(&s).ok_or_else(|| {
                    PyValueError::new_err(format!("mode must be as-traced, hostcopy or gpudirect, not {s:?}"))
                })?;
            }
            "buffers" => {
                let s: String = v.extract()?;
                o.buffers = Buffers::parse(&s).ok_or_else(|| {
                    PyValueError::new_err(format!("buffers must be traced, device or host, not {s:?}"))
                })?;
            }
            "window" => {
                let s: String = v.extract()?;
                o.window = Window::parse(&s)
                    .ok_or_else(|| PyValueError::new_err(format!("window must be traced or all, not {s:?}")))?;
            }
            "staged_as_device" => {
                // the option --buffers replaced: the same question
                if v.extract::<bool>()? {
                    o.buffers = Buffers::Device;
                }
            }
            "gpus_per_node" => {
                let g: Option<i64> = v.extract().map_err(bad)?;
                o.gpus_per_node = match g {
                    None => None,
                    Some(g) if (1..=g2g_net::machine::MAX_GPUS_PER_NODE as i64).contains(&g) => Some(g as u32),
                    Some(g) => {
                        return Err(PyValueError::new_err(format!(
                            "{g} GPUs per node (--gpus-per-node) is outside 1..={}",
                            g2g_net::machine::MAX_GPUS_PER_NODE
                        )))
                    }
                };
            }
            "mapping" => {
                if let Ok(s) = v.extract::<String>() {
                    o.mapping = match s.as_str() {
                        "linear" => Mapping::Linear,
                        "round-robin" => Mapping::RoundRobin,
                        _ => {
                            return Err(PyValueError::new_err(format!(
                                "mapping must be linear, round-robin or a list of node indices, not {s:?}"
                            )))
                        }
                    };
                } else {
                    let v: Vec<i64> = v.extract().map_err(bad)?;
                    let max = g2g_net::machine::MAX_NODES as i64;
                    if let Some((r, n)) = v.iter().enumerate().find(|(_, &n)| !(0..max).contains(&n)) {
                        return Err(PyValueError::new_err(format!(
                            "mapping: rank {r} on node {n}; node indices must be in 0..{max}"
                        )));
                    }
                    o.mapping = Mapping::Nodes(v.into_iter().map(|n| n as u32).collect());
                }
            }
            "coll_algos" => o.coll_algos = v.extract().map_err(bad)?,
            "gpudirect_min_bytes" => o.gpudirect_min_bytes = v.extract().map_err(bad)?,
            "gpudirect_collectives_only" => o.gpudirect_collectives_only = v.extract().map_err(bad)?,
            "network_scale" => o.network_scale = v.extract().map_err(bad)?,
            "per_rank" => o.per_rank = v.extract().map_err(bad)?,
            "timeline" => o.timeline = v.extract().map_err(bad)?,
            "call_times" => o.call_times = v.extract().map_err(bad)?,
            "no_overlap" => o.no_overlap = v.extract().map_err(bad)?,
            "sharing" => {
                let s: String = v.extract().map_err(bad)?;
                o.sharing = Some(g2g_net::lmm::Sharing::parse(&s).ok_or_else(|| {
                    PyValueError::new_err(format!("sharing must be max-min, max-min-full or bottleneck, not {s:?}"))
                })?);
            }
            "timeline_max_events" => o.timeline_max_events = v.extract().map_err(bad)?,
            "timeline_ranks" => o.timeline_ranks = v.extract().map_err(bad)?,
            "timeline_window_ns" => o.timeline_window_ns = v.extract().map_err(bad)?,
            "strict" => o.strict = v.extract().map_err(bad)?,
            _ => return Err(PyValueError::new_err(format!("unknown simulation option {k:?}"))),
        }
    }
    Ok(o)
}

fn sim_err(e: SimError) -> PyErr {
    match e {
        SimError::Trace(t) => TraceError::new_err(t.to_string()),
        SimError::Machine(m) => MachineError::new_err(m),
        SimError::Options(m) => PyValueError::new_err(m),
        // (message, JSON list of every blocked rank)
        SimError::Deadlock(ref v) => {
            DeadlockError::new_err((e.to_string(), serde_json::to_string(v).unwrap_or_default()))
        }
        SimError::Interrupted => PyKeyboardInterrupt::new_err("simulation interrupted"),
    }
}

/// simulate(trace_path, machine_toml, machine_file, options=None, progress=None) -> JSON report
#[pyfunction]
#[pyo3(signature = (trace_path, machine_toml, machine_file, options=None, progress=None))]
fn simulate(
    py: Python<'_>,
    trace_path: &str,
    machine_toml: &str,
    machine_file: &str,
    options: Option<&Bound<'_, PyDict>>,
    progress: Option<PyObject>,
) -> PyResult<String> {
    let cfg = MachineConfig::from_toml(machine_toml, machine_file).map_err(|e| MachineError::new_err(e.to_string()))?;
    let opt = opts_from(options)?;
    let mut tr = ParquetTrace::open(trace_path).map_err(|e| TraceError::new_err(e.to_string()))?;
    let rows = tr.total_rows;
    let mut failure: Option<PyErr> = None;
    // the run holds no GIL (other Python threads run meanwhile: `compare` simulates its columns
    // and re-simulations side by side); the progress call takes it, every 65,536 events
    let res = py.allow_threads(|| {
        let mut cb = |done: u64, total: u64| -> bool {
            Python::with_gil(|py| {
                if let Err(e) = py.check_signals() {
                    failure = Some(e);
                    return false;
                }
                if let Some(p) = &progress {
                    if let Err(e) = p.call1(py, (done, total)) {
                        failure = Some(e);
                        return false;
                    }
                }
                true
            })
        };
        run_sim(&mut tr, cfg, opt, rows, Some(&mut cb))
    });
    if let Some(e) = failure {
        return Err(e);
    }
    res.map(|r| r.to_json()).map_err(sim_err)
}

/// machine_check(toml, file, nodes) -> JSON summary of the parsed and built machine
#[pyfunction]
#[pyo3(signature = (machine_toml, machine_file, nodes=2))]
fn machine_check(machine_toml: &str, machine_file: &str, nodes: u32) -> PyResult<String> {
    let cfg = MachineConfig::from_toml(machine_toml, machine_file).map_err(|e| MachineError::new_err(e.to_string()))?;
    let gpn = cfg.gpus_per_node;
    let place = g2g_net::Placement::linear(nodes.max(1) * gpn, gpn);
    let m = g2g_net::Machine::build(cfg.clone(), place)
        .map_err(|e| MachineError::new_err(format!("{machine_file}: {e}")))?;
    let v = serde_json::json!({
        "name": cfg.name,
        "description": cfg.description,
        "gpus_per_node": gpn,
        "sockets": cfg.sockets,
        "gpu_socket": (0..gpn).map(|g| cfg.socket_of_gpu(g, gpn)).collect::<Vec<_>>(),
        "inter_socket": cfg.inter_socket.as_ref().map(|x| serde_json::json!({"kind": x.kind, "bw_bytes_per_s": x.bw_bytes_per_s, "latency_ns": x.latency_ns})),
        "cpu_link": cfg.cpu_link_kind,
        "nic_socket": (0..cfg.nic_count).map(|n| cfg.socket_of_nic(n)).collect::<Vec<_>>(),
        "copy_engines": cfg.copy_engines,
        "copy_engine_bw_bytes_per_s": cfg.copy_engines.map(|_| cfg.copy_engine_bw.unwrap_or(cfg.copy_bw())),
        "pcie_bw_bytes_per_s": cfg.pcie_bw,
        "pcie_latency_ns": cfg.pcie_latency_ns,
        "nvlink": format!("{:?}", cfg.nvlink),
        "nvlink_bw_bytes_per_s": cfg.nvlink_bw,
        "nic_count": cfg.nic_count,
        "nic_bw_bytes_per_s": cfg.nic_bw,
        "nic_latency_ns": cfg.nic_latency_ns,
        "nic_rank_bw_bytes_per_s": cfg.nic_rank_bw,
        "nic_affinity": format!("{:?}", cfg.nic_affinity),
        "gpudirect_rdma": cfg.gpudirect_rdma,
        "network": m.topo.describe(),
        "eager_limit_bytes": cfg.eager_limit,
        "copy_delay_ns": cfg.copy_delay_ns,
        "copy_bw_bytes_per_s": cfg.copy_bw(),
        "gpudirect_delay_ns": cfg.gpudirect_delay_ns,
        "pipeline_chunk_bytes": cfg.pipeline_chunk,
        "pipeline_depth": cfg.pipeline_depth,
        "links_for_nodes": m.num_links(),
        "nodes_built": nodes,
    });
    Ok(v.to_string())
}

/// machine_validate(toml, file) -> every error of the machine file (each "file:line: key: message"),
/// empty when valid
#[pyfunction]
fn machine_validate(machine_toml: &str, machine_file: &str) -> Vec<String> {
    MachineConfig::validate_all(machine_toml, machine_file).iter().map(|e| e.to_string()).collect()
}

/// models() -> [(name, summary, [params])] of the data-path models
#[pyfunction]
fn models() -> Vec<(String, String, Vec<String>)> {
    g2g_net::paths::registry()
        .iter()
        .map(|p| (p.name().to_string(), p.summary().to_string(), p.params().iter().map(|s| s.to_string()).collect()))
        .collect()
}

/// coll_algorithms() -> {kind: [algorithm names]}
#[pyfunction]
fn coll_algorithms() -> Vec<(String, Vec<String>)> {
    g2g_coll::CollKind::ALL
        .iter()
        .map(|k| (k.name().to_string(), g2g_coll::algorithms_for(*k).iter().map(|s| s.to_string()).collect()))
        .collect()
}

/// parse_size(text) -> bytes: "64KiB" (1024-based), "64KB" or "64K" (1000-based), "4096"; the
/// rule of machine files (g2g-net units.rs), for every size g2gsim reads
#[pyfunction]
fn parse_size(text: &str) -> PyResult<u64> {
    g2g_net::units::parse_size(text).map_err(PyValueError::new_err)
}

/// parse_duration_ns(text) -> nanoseconds (may be fractional): "1.2us", "20000ns", "0.5ms", "2s"
#[pyfunction]
fn parse_duration_ns(text: &str) -> PyResult<f64> {
    g2g_net::units::parse_duration_ns(text).map_err(PyValueError::new_err)
}

/// parse_bandwidth(text) -> bytes per second: "25GB/s", "100Gb/s" (bits), "1GiB/s"
#[pyfunction]
fn parse_bandwidth(text: &str) -> PyResult<f64> {
    g2g_net::units::parse_bandwidth(text).map_err(PyValueError::new_err)
}

/// vocabulary() -> JSON: the names the core defines once and Python derives from
/// (`g2gsim/vocab.py`): operation names and their classes, modes, sharing models, memory spaces,
/// copy kinds, the report's size classes and the native format's columns
#[pyfunction]
fn vocabulary() -> String {
    use g2g_trace::vocab::{op_names, ColDefault, OpClass, COLUMNS};
    use serde_json::{json, Value};
    let ops: Vec<Value> = op_names()
        .into_iter()
        .map(|(n, k)| json!([n, OpClass::ALL.iter().filter(|c| k.is(**c)).map(|c| c.name()).collect::<Vec<_>>()]))
        .collect();
    let columns: Vec<Value> = COLUMNS
        .iter()
        .map(|c| {
            let default = match c.default {
                ColDefault::Required | ColDefault::Null => Value::Null,
                ColDefault::Int(v) => json!(v),
                ColDefault::Bool(b) => json!(b),
                ColDefault::Str(s) => json!(s),
            };
            json!({"name": c.name, "type": c.ty.name(), "required": c.default == ColDefault::Required,
                   "default": default, "replayed": c.replayed, "doc": c.doc})
        })
        .collect();
    let sizes: Vec<Value> = g2g_mpi::SIZE_CLASSES
        .iter()
        .enumerate()
        .map(|(i, k)| json!([k, g2g_mpi::SIZE_CLASS_MAX_BYTES.get(i)]))
        .collect();
    json!({
        "ops": ops,
        "op_classes": OpClass::ALL.iter().map(|c| c.name()).collect::<Vec<_>>(),
        "collectives": g2g_trace::COLL_NAMES,
        "modes": Mode::ALL.iter().map(|m| m.name()).collect::<Vec<_>>(),
        "sharing": g2g_net::lmm::Sharing::ALL.iter().map(|m| m.name()).collect::<Vec<_>>(),
        "mem_spaces": g2g_trace::MemSpace::ALL.iter().map(|m| m.name()).collect::<Vec<_>>(),
        "copy_kinds": g2g_trace::CopyKind::ALL.iter().filter_map(|c| c.name()).collect::<Vec<_>>(),
        "size_classes": sizes,
        "columns": columns,
        "any_source": g2g_trace::ANY_SOURCE,
        "proc_null": g2g_trace::PROC_NULL,
        "any_tag": g2g_trace::ANY_TAG,
    })
    .to_string()
}

/// trace_meta(path) -> (nranks, rows, source, buffers); checks the file opens as a g2gsim trace
#[pyfunction]
fn trace_meta(path: &str) -> PyResult<(u32, u64, String, String)> {
    let t = ParquetTrace::open(path).map_err(|e| TraceError::new_err(e.to_string()))?;
    Ok((t.nranks(), t.total_rows, t.source.clone(), t.buffers.clone()))
}

type DumpiRank = (String, u32, u64, u64, (u8, u8, u8), Vec<i64>);

fn dumpi_files(ranks: Vec<DumpiRank>) -> Vec<g2g_dumpi::decode::RankFile> {
    ranks
        .into_iter()
        .map(|(path, rank, body_off, stream_end, version, type_sizes)| g2g_dumpi::decode::RankFile {
            path,
            rank,
            body_off,
            stream_end,
            version,
            type_sizes,
        })
        .collect()
}

/// DUMPI arguments as the Python reader's decoders give them (ints, tuples, str, statuses).
fn dumpi_args_py(py: Python<'_>, a: &g2g_dumpi::decode::Args) -> PyObject {
    use g2g_dumpi::decode::Val;
    use pyo3::types::PyTuple;
    let mut out: Vec<PyObject> = Vec::with_capacity(a.v.len());
    for (k, v) in a.v.iter().enumerate() {
        out.push(match v {
            Val::Int(x) => x.into_py(py),
            Val::None | Val::NoSts => py.None(),
            Val::Arr(..) => PyTuple::new_bound(py, a.a(k).iter()).into_py(py),
            Val::Arr2(..) => {
                PyTuple::new_bound(py, a.sub_arrays(k).into_iter().map(|s| PyTuple::new_bound(py, s.iter())))
                    .into_py(py)
            }
            Val::Strs(_, _, kind) => {
                let s = a.strings(k);
                if *kind == 1 {
                    s.into_iter().next().unwrap_or_default().into_py(py)
                } else {
                    PyTuple::new_bound(py, s).into_py(py)
                }
            }
            Val::Sts(..) => {
                PyTuple::new_bound(py, a.statuses(k).unwrap_or(&[]).iter().map(|s| PyTuple::new_bound(py, s.iter())))
                    .into_py(py)
            }
        });
    }
    PyTuple::new_bound(py, out).into_py(py)
}

type ScanOut = (Option<i64>, u64, Vec<(u64, u64, u16, PyObject)>, Option<(u64, i64)>);

/// dumpi_scan(ranks, full, gaps=None) -> per rank (first call time ns or None, records decoded,
/// [(record index, byte offset, function id, args)] of its communicator/group calls, (record
/// index, ns) of the longest gap between calls or None).
/// ranks: [(bin path, rank, body offset, END_OF_STREAM offset, version, datatype sizes)];
/// without `full` only the first timed record is decoded, but for the ranks whose `gaps` entry is
/// true (the longest gap needs every record).
#[pyfunction]
#[pyo3(signature = (ranks, full, gaps=None))]
fn dumpi_scan(py: Python<'_>, ranks: Vec<DumpiRank>, full: bool, gaps: Option<Vec<bool>>) -> PyResult<Vec<ScanOut>> {
    let files = dumpi_files(ranks);
    let chunk = g2g_dumpi::chunk_for(files.len());
    let mut out = Vec::with_capacity(files.len());
    for (r, f) in files.into_iter().enumerate() {
        let gap = gaps.as_ref().is_some_and(|g| g.get(r).copied().unwrap_or(false));
        let s = py.allow_threads(|| g2g_dumpi::scan(f, full, gap, chunk)).map_err(TraceError::new_err)?;
        let ev = s.comm_events.iter().map(|(i, off, fid, a)| (*i, *off, *fid, dumpi_args_py(py, a))).collect();
        out.push((s.first_t0, s.records, ev, s.gap));
        py.check_signals()?;
    }
    Ok(out)
}

/// A matching problem as a tuple the Python side formats (`dumpi_reader._problem_text`).
fn dumpi_problem_py(py: Python<'_>, p: &g2g_dumpi::matching::Problem) -> PyObject {
    use g2g_dumpi::matching::Problem;
    match p {
        Problem::InvalidPeer { send, rank, seq, t, peer, comm } => {
            ("invalid", if *send { "send" } else { "receive" }, *rank, *seq, *t, *peer, *comm).into_py(py)
        }
        Problem::Truncated { s, r } => {
            ("truncated", s.m.rank, r.rank, s.comm, s.tag, s.m.nbytes, s.m.seq, r.nbytes, r.seq).into_py(py)
        }
        Problem::UnmatchedSend(k) => {
            ("send", k.m.rank, k.m.peer, k.comm, k.tag, k.m.nbytes, k.m.seq, k.m.t).into_py(py)
        }
        Problem::UnmatchedRecv(k) => ("receive", k.m.rank, k.m.peer, k.comm, k.tag, k.m.seq, k.m.t).into_py(py),
    }
}

/// dumpi_convert(ranks, created, out_path, origin_ns, mem_space, window_ops, members, names,
/// self_gids, self_base, resolved, finish, progress=None, untraced_at=None) -> stats dict.
/// Converts every rank's records to native rows written to out_path a window at a time and
/// matching-checks their point-to-point messages as they are written; `finish(stats)` returns
/// the file's [(key, value)] metadata, written before the file is closed.  `untraced_at`: per
/// rank, the record ending its untraced stretch or None.
#[pyfunction]
#[pyo3(signature = (ranks, created, out_path, origin, mem_space, window_ops, members, names, self_gids, self_base, resolved, finish, progress=None, untraced_at=None))]
#[allow(clippy::too_many_arguments)]
fn dumpi_convert(
    py: Python<'_>,
    ranks: Vec<DumpiRank>,
    created: Vec<Vec<(u64, Option<i64>)>>,
    out_path: &str,
    origin: i64,
    mem_space: &str,
    window_ops: u64,
    members: std::collections::HashMap<i64, Vec<u32>>,
    names: std::collections::HashMap<i64, String>,
    self_gids: std::collections::HashMap<u32, i64>,
    self_base: i64,
    resolved: bool,
    finish: PyObject,
    progress: Option<PyObject>,
    untraced_at: Option<Vec<Option<u64>>>,
) -> PyResult<PyObject> {
    let mem: &'static str = match mem_space {
        "host" => "host",
        "device" => "device",
        _ => return Err(PyValueError::new_err(format!("mem_space must be host or device, not {mem_space:?}"))),
    };
    let files = dumpi_files(ranks);
    if created.len() != files.len() {
        return Err(PyValueError::new_err("created: one list per rank"));
    }
    let untraced_at = untraced_at.unwrap_or_else(|| vec![None; files.len()]);
    if untraced_at.len() != files.len() {
        return Err(PyValueError::new_err("untraced_at: one entry per rank"));
    }
    let inputs: Vec<g2g_dumpi::RankInput> = files
        .into_iter()
        .zip(created)
        .zip(untraced_at)
        .map(|((file, created), untraced_at)| g2g_dumpi::RankInput { file, created, untraced_at })
        .collect();
    let mut comms = g2g_dumpi::convert::Comms { members, self_gid: self_gids, self_base, names, resolved };
    let mut w = g2g_trace::writer::NativeWriter::create(out_path).map_err(|e| TraceError::new_err(e.to_string()))?;
    let mut failure: Option<PyErr> = None;
    let mut windows = 0u64;
    let mut cb = |records: u64| -> bool {
        windows += 1;
        if !windows.is_multiple_of(64) {
            return true;
        }
        if let Err(e) = py.check_signals() {
            failure = Some(e);
            return false;
        }
        if let Some(p) = &progress {
            if let Err(e) = p.call1(py, (records,)) {
                failure = Some(e);
                return false;
            }
        }
        true
    };
    let res = g2g_dumpi::convert(inputs, &mut comms, origin, mem, window_ops, &mut w, Some(&mut cb));
    if let Some(e) = failure {
        return Err(e);
    }
    let c = res.map_err(TraceError::new_err)?;
    let d = PyDict::new_bound(py);
    d.set_item("rows", c.rows)?;
    d.set_item("records", c.records)?;
    d.set_item("unknown_type_uses", c.stats.unknown_type_uses)?;
    d.set_item("orphan_requests", c.stats.orphan_requests)?;
    let mut used: Vec<i64> = c.stats.used_comms.into_iter().collect();
    used.sort();
    d.set_item("used_comms", used)?;
    d.set_item("self_gids", comms.self_gid.clone())?;
    d.set_item("fid_counts", c.fid_counts)?;
    d.set_item("problems_total", c.problems.0)?;
    let first: Vec<PyObject> = c.problems.1.iter().map(|p| dumpi_problem_py(py, p)).collect();
    d.set_item("problems_first", first)?;
    d.set_item("msg_time_missing", c.msg_time_missing)?;
    d.set_item("peak_held_messages", c.peak_held_messages)?;
    d.set_item(
        "op_counts",
        c.op_counts.into_iter().map(|(k, v)| (k.to_string(), v)).collect::<std::collections::HashMap<String, u64>>(),
    )?;
    let md: Vec<(String, String)> = finish.call1(py, (d.clone(),))?.extract(py)?;
    w.finish(&md).map_err(|e| TraceError::new_err(e.to_string()))?;
    Ok(d.into_py(py))
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(simulate, m)?)?;
    m.add_function(wrap_pyfunction!(machine_check, m)?)?;
    m.add_function(wrap_pyfunction!(machine_validate, m)?)?;
    m.add_function(wrap_pyfunction!(models, m)?)?;
    m.add_function(wrap_pyfunction!(coll_algorithms, m)?)?;
    m.add_function(wrap_pyfunction!(trace_meta, m)?)?;
    m.add_function(wrap_pyfunction!(dumpi_scan, m)?)?;
    m.add_function(wrap_pyfunction!(dumpi_convert, m)?)?;
    m.add_function(wrap_pyfunction!(parse_size, m)?)?;
    m.add_function(wrap_pyfunction!(parse_duration_ns, m)?)?;
    m.add_function(wrap_pyfunction!(parse_bandwidth, m)?)?;
    m.add_function(wrap_pyfunction!(vocabulary, m)?)?;
    m.add("TraceError", m.py().get_type_bound::<TraceError>())?;
    m.add("MachineError", m.py().get_type_bound::<MachineError>())?;
    m.add("DeadlockError", m.py().get_type_bound::<DeadlockError>())?;
    Ok(())
}

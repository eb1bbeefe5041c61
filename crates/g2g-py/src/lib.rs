//! The only crate that knows Python: the private module `g2gsim._core`.
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
        match k.as_str() {
            "mode" => {
                let s: String = v.extract()?;
                o.mode = Mode::parse(&s).ok_or_else(|| PyValueError::new_err(format!("mode must be as-traced, hostcopy or gpudirect, not {s:?}")))?;
            }
            "buffers" => {
                let s: String = v.extract()?;
                o.buffers = Buffers::parse(&s).ok_or_else(|| PyValueError::new_err(format!("buffers must be traced, device or host, not {s:?}")))?;
            }
            "window" => {
                let s: String = v.extract()?;
                o.window = Window::parse(&s).ok_or_else(|| PyValueError::new_err(format!("window must be traced or all, not {s:?}")))?;
            }
            "staged_as_device" => {
                // the option --buffers replaced: the same question
                if v.extract::<bool>()? {
                    o.buffers = Buffers::Device;
                }
            }
            "gpus_per_node" => o.gpus_per_node = v.extract()?,
            "mapping" => {
                if let Ok(s) = v.extract::<String>() {
                    o.mapping = match s.as_str() {
                        "linear" => Mapping::Linear,
                        "round-robin" => Mapping::RoundRobin,
                        _ => return Err(PyValueError::new_err(format!("mapping must be linear, round-robin or a list of node indices, not {s:?}"))),
                    };
                } else {
                    o.mapping = Mapping::Nodes(v.extract()?);
                }
            }
            "coll_algos" => o.coll_algos = v.extract()?,
            "gpudirect_min_bytes" => o.gpudirect_min_bytes = v.extract()?,
            "gpudirect_collectives_only" => o.gpudirect_collectives_only = v.extract()?,
            "network_scale" => o.network_scale = v.extract()?,
            "per_rank" => o.per_rank = v.extract()?,
            "timeline" => o.timeline = v.extract()?,
            "no_overlap" => o.no_overlap = v.extract()?,
            "sharing" => {
                let s: String = v.extract()?;
                o.sharing = Some(g2g_net::lmm::Sharing::parse(&s).ok_or_else(|| PyValueError::new_err(format!("sharing must be max-min, max-min-full or bottleneck, not {s:?}")))?);
            }
            "timeline_max_events" => o.timeline_max_events = v.extract()?,
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
        SimError::Deadlock(_) => DeadlockError::new_err(e.to_string()),
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
    let mut cb = |done: u64, total: u64| -> bool {
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
    };
    let res = run_sim(&mut tr, cfg, opt, rows, Some(&mut cb));
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
    let m = g2g_net::Machine::build(cfg.clone(), place).map_err(|e| MachineError::new_err(format!("{machine_file}: {e}")))?;
    let v = serde_json::json!({
        "name": cfg.name,
        "description": cfg.description,
        "gpus_per_node": gpn,
        "pcie_bw_bytes_per_s": cfg.pcie_bw,
        "pcie_latency_ns": cfg.pcie_latency_ns,
        "nvlink": format!("{:?}", cfg.nvlink),
        "nvlink_bw_bytes_per_s": cfg.nvlink_bw,
        "nic_count": cfg.nic_count,
        "nic_bw_bytes_per_s": cfg.nic_bw,
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

/// trace_meta(path) -> (nranks, rows, source, buffers); checks the file opens as a g2gsim trace
#[pyfunction]
fn trace_meta(path: &str) -> PyResult<(u32, u64, String, String)> {
    let t = ParquetTrace::open(path).map_err(|e| TraceError::new_err(e.to_string()))?;
    Ok((t.nranks(), t.total_rows, t.source.clone(), t.buffers.clone()))
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(simulate, m)?)?;
    m.add_function(wrap_pyfunction!(machine_check, m)?)?;
    m.add_function(wrap_pyfunction!(models, m)?)?;
    m.add_function(wrap_pyfunction!(coll_algorithms, m)?)?;
    m.add_function(wrap_pyfunction!(trace_meta, m)?)?;
    m.add("TraceError", m.py().get_type_bound::<TraceError>())?;
    m.add("MachineError", m.py().get_type_bound::<MachineError>())?;
    m.add("DeadlockError", m.py().get_type_bound::<DeadlockError>())?;
    Ok(())
}

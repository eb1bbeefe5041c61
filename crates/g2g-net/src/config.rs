//! Machine files: TOML with a schema version and unit strings, validated with errors that name the
//! key and its line.  See docs/machine-files.md.
pub use crate::schema::{ConfigError, COLLECTIVE_NAMES, FACTOR_PATHS};
use crate::topology::TopologySpec;
use crate::units::{parse_bandwidth, parse_duration_ns, parse_size};

pub const SCHEMA_VERSION: i64 = 1;

#[derive(Clone, Debug, PartialEq)]
pub enum NvlinkKind {
    None,
    /// a direct link between every pair of GPUs, `bw` per pair per direction
    AllToAll,
    /// every GPU has one port of `bw` per direction into a non-blocking switch (NVSwitch)
    Switch,
    /// only the listed pairs, each with its own bandwidth
    Pairs(Vec<(u32, u32, f64)>),
}

#[derive(Clone, Debug, PartialEq)]
pub enum NicAffinity {
    /// GPU g uses NIC g % count
    PerGpu,
    /// every GPU (and the host) shares NIC 0.. round robin is not applied: all use NIC 0
    Shared,
    /// explicit NIC index per GPU
    List(Vec<u32>),
}

/// How a CUDA-aware MPI moves the messages of collectives on device buffers (`mpi.device_collectives`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeviceCollectives {
    /// like point-to-point: GPUDirect P2P / RDMA (or pipelined without RDMA)
    Direct,
    /// the library stages every collective message through host memory itself, in chunks of
    /// `mpi.collective_chunk` (the `pipelined` data path, also inside a node); point-to-point
    /// messages are not affected
    Staged,
    /// only the listed collective kinds are staged (MPI names without `MPI_`, e.g. "Scatter")
    Kinds(Vec<String>),
}

/// The collective kinds `mpi.device_collectives` may list (g2g-coll's CollKind names: the same
/// names, in the same order, as the `[[mpi.factors]]` collectives).
pub const COLLECTIVE_KINDS: [&str; 16] = COLLECTIVE_NAMES;

impl DeviceCollectives {
    /// Does the library stage collectives of this kind (a CollKind name) on device buffers?
    pub fn staged(&self, kind: &str) -> bool {
        match self {
            DeviceCollectives::Direct => false,
            DeviceCollectives::Staged => true,
            DeviceCollectives::Kinds(v) => v.iter().any(|k| k.eq_ignore_ascii_case(kind)),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct MachineConfig {
    pub name: String,
    pub description: String,
    pub gpus_per_node: u32,
    /// CPU sockets (NUMA domains with their own memory) per node, `node.sockets`
    pub sockets: u32,
    /// socket each GPU attaches to (`node.gpu_socket`); None: GPUs split evenly in order
    pub gpu_socket: Option<Vec<u32>>,
    /// the link between sockets (`[node.inter_socket]`: IBM X-Bus, Intel UPI, AMD xGMI)
    pub inter_socket: Option<InterSocket>,
    /// what joins a GPU to its CPU (`node.pcie.kind`): "pcie" or "nvlink" (POWER9); the model
    /// is the same link, the name is reported
    pub cpu_link_kind: String,
    pub pcie_bw: f64,
    pub pcie_latency_ns: f64,
    pub nvlink: NvlinkKind,
    pub nvlink_bw: f64,
    pub nvlink_latency_ns: f64,
    /// each GPU's aggregate NVLink rate per direction (`node.nvlink.gpu_bw`): every NVLink
    /// transfer also crosses its GPU's out and the peer's in port of this rate
    pub nvlink_gpu_bw: Option<f64>,
    pub shm_bw: f64,
    pub shm_latency_ns: f64,
    /// per-rank shared-memory ports (receive side; `node.host.shm_rank_bw`): when set, an intra-node
    /// host transfer crosses the sender's out port, the receiver's in port and the node link
    /// (`shm_bw`, then the node's memory-bandwidth cap)
    pub shm_rank_bw: Option<f64>,
    /// the out (send-side) port of each rank; defaults to `shm_rank_bw`
    pub shm_rank_out_bw: Option<f64>,
    pub nic_count: u32,
    pub nic_bw: f64,
    pub nic_latency_ns: f64,
    /// per-rank NIC ports (`node.nic.rank_bw`): when set, every inter-node message crosses its
    /// sender's injection port and its receiver's ejection port of this rate, besides the NIC: one
    /// process reaches at most this rate however fast the NIC is, several ranks sharing a NIC more
    pub nic_rank_bw: Option<f64>,
    pub nic_affinity: NicAffinity,
    /// socket each NIC attaches to (`node.nic.socket`); None: NIC i on socket i x sockets / count
    pub nic_socket: Option<Vec<u32>>,
    pub gpudirect_rdma: bool,
    /// GPUDirect RDMA only up to this size; larger device messages across nodes are pipelined
    pub rdma_max_bytes: u64,
    pub network: TopologySpec,
    pub sharing: crate::lmm::Sharing,
    pub eager_limit: u64,
    pub send_overhead_ns: f64,
    pub recv_overhead_ns: f64,
    /// CPU time of every MPI call (the rank is busy before the call acts), `mpi.call_overhead`
    pub call_overhead_ns: f64,
    /// extra CPU time of an MPI call on a device buffer (`mpi.device_call_overhead`: the
    /// library's memory-type query, IPC handle cache), on top of `call_overhead`
    pub device_call_overhead_ns: f64,
    /// CPU time of a wait or test call (Wait, Waitall, Waitany, Waitsome, Test) instead of
    /// `call_overhead` (`mpi.wait_overhead`; default: `mpi.call_overhead`): completing a request
    /// that is already done costs less than posting one
    pub wait_overhead_ns: f64,
    /// LogGP g (`mpi.gap`): the least time between two messages one rank injects; a message
    /// leaves no earlier than the previous one of the rank plus this
    pub gap_ns: f64,
    /// the same for messages on device buffers sent GPU-direct (`mpi.device_gap`; default
    /// `mpi.gap`): each needs the library's own GPU operations (IPC copy, event), which a GPU-aware
    /// MPI issues one message at a time
    pub device_gap_ns: f64,
    /// extra sender time of every blocking send (MPI_Send / Ssend / Bsend / Rsend and the send
    /// half of MPI_Sendrecv) before its data leaves (`mpi.blocking_send_overhead`); size bins add
    /// their own on top
    pub blocking_send_overhead_ns: f64,
    /// piecewise factors by message size and data path (`[[mpi.factors]]`)
    pub factors: Vec<SizeFactor>,
    pub gpudirect_eager: bool,
    /// collectives on device buffers: direct (like point-to-point) or staged through the host
    pub device_collectives: DeviceCollectives,
    /// chunk and depth of the host staging of collective messages (`Staged` only)
    pub collective_chunk: u64,
    pub collective_depth: u32,
    pub copy_delay_ns: f64,
    /// if set, cudaMemcpy moves at most 1/copy_per_byte bytes per ns
    pub copy_per_byte_ns: Option<f64>,
    /// copy engines per GPU (`gpu.copy_engines`): when set, every copy (cudaMemcpy, the staging
    /// copies of pipelined messages) and every GPUDirect P2P transfer (pulled by the receiving
    /// GPU, as CUDA IPC does) takes one of them, round robin per GPU; None: one engine per
    /// direction for cudaMemcpy and none for P2P (the model before issue 25)
    pub copy_engines: Option<u32>,
    /// rate of one copy engine (`gpu.copy_engine_bw`), default the copy rate (`copy_bw`)
    pub copy_engine_bw: Option<f64>,
    pub gpudirect_delay_ns: f64,
    pub pipeline_chunk: u64,
    pub pipeline_depth: u32,
    pub pipeline_threshold: u64,
    pub gpu_reduce_bw: f64,
    pub cpu_reduce_bw: f64,
    pub gpu_pack_bw: f64,
    pub pack_kernel_latency_ns: f64,
    pub coll: CollConfig,
}

/// The link between two CPU sockets of a node, per direction.
#[derive(Clone, Debug, PartialEq)]
pub struct InterSocket {
    /// "x-bus", "upi", "xgmi", ... (reported only)
    pub kind: String,
    pub bw_bytes_per_s: f64,
    pub latency_ns: f64,
}

/// One size bin of `[[mpi.factors]]` (SimGrid SMPI's bw-factor / lat-factor / os / or, per data
/// path): messages of `path` up to `max_bytes` (and above the previous bin of that path) move at
/// `bw_factor` times the links' bandwidth (their bytes count 1 / bw_factor times against every
/// link, so contention stays consistent), pay `lat_factor` times the links' latency, `delay` once
/// before the data moves, and the bin's send / receive overheads when given.
#[derive(Clone, Debug, PartialEq)]
pub struct SizeFactor {
    pub path: String,
    pub max_bytes: u64,
    pub bw_factor: f64,
    pub lat_factor: f64,
    pub delay_ns: f64,
    pub send_overhead_ns: Option<f64>,
    pub recv_overhead_ns: Option<f64>,
    /// extra sender-side time of a blocking send (MPI_Send / Ssend / Bsend / Rsend and the send
    /// half of MPI_Sendrecv) before its data leaves; nonblocking sends and collectives do not pay it
    pub blocking_send_overhead_ns: f64,
    /// the bin applies on nodes where at least this many ranks pass messages (default 1): an MPI
    /// whose messages slow down when every rank of the node communicates at once (calibrated by
    /// the calibration's ring series); bins of a path with a larger `active_ranks` take precedence
    pub active_ranks: u32,
    /// only the messages of this collective (a name of COLL_NAMES: "Bcast", "Scatter", ...; its
    /// nonblocking form too), which take these bins before the ordinary ones; None: every message
    pub collective: Option<String>,
}

/// `[collectives]` thresholds (see g2g-coll's Thresholds for what each selects).
#[derive(Clone, Debug, PartialEq, Default)]
pub struct CollConfig {
    pub entries: Vec<(String, u64)>,
    /// "kind=algo" overrides
    pub algos: Vec<String>,
}

/// A list of socket indices, one per GPU or NIC (`node.gpu_socket`, `node.nic.socket`): each entry
/// in `0..sockets`, `count` entries (`has`: "the node has ..." in the error), or absent.
fn socket_list(
    ctx: &Ctx,
    key: &str,
    value: Option<&toml::Value>,
    sockets: u32,
    count: u32,
    each: &str,
    has: &str,
) -> Result<Option<Vec<u32>>, ConfigError> {
    let a = match value {
        None => return Ok(None),
        Some(toml::Value::Array(a)) => a,
        Some(v) => {
            return Err(
                ctx.err(key, format!("expected a list of socket indices, one per {each}, found {}", v.type_str()))
            )
        }
    };
    let mut v = vec![];
    for x in a {
        match x.as_integer() {
            Some(i) if i >= 0 && (i as u32) < sockets => v.push(i as u32),
            _ => {
                return Err(ctx.err(
                    key,
                    format!(
                        "each entry must be a socket index in 0..{} (node.sockets = {sockets}), found {x}",
                        sockets - 1
                    ),
                ))
            }
        }
    }
    if v.len() != count as usize {
        return Err(ctx.err(key, format!("lists {} sockets but the node has {has}", v.len())));
    }
    Ok(Some(v))
}

struct Ctx<'a> {
    file: &'a str,
    text: &'a str,
}

impl<'a> Ctx<'a> {
    /// Line (1-based) where `key` of `table` is set (else the table's header), found by scanning the text.
    fn line_of(&self, path: &str) -> Option<usize> {
        let (table, key) = match path.rfind('.') {
            Some(i) => (&path[..i], &path[i + 1..]),
            None => ("", path),
        };
        // the key's line, else its table's header (a required key that is missing), else the table it names
        crate::schema::line_of(self.text, table, Some(key), None)
            .or_else(|| crate::schema::line_of(self.text, path, None, None))
            .or_else(|| if table.is_empty() { None } else { crate::schema::line_of(self.text, table, None, None) })
    }
    fn err(&self, key: &str, msg: impl Into<String>) -> ConfigError {
        ConfigError { file: self.file.into(), key: key.into(), line: self.line_of(key), msg: msg.into() }
    }
}

struct T<'a, 'b> {
    ctx: &'b Ctx<'a>,
    path: String,
    t: Option<&'b toml::Table>,
    used: Vec<&'static str>,
}

impl<'a, 'b> T<'a, 'b> {
    fn key(&self, k: &str) -> String {
        if self.path.is_empty() {
            k.to_string()
        } else {
            format!("{}.{}", self.path, k)
        }
    }
    fn get(&mut self, k: &'static str) -> Option<&'b toml::Value> {
        self.used.push(k);
        self.t.and_then(|t| t.get(k))
    }
    fn str_(&mut self, k: &'static str) -> Result<Option<String>, ConfigError> {
        match self.get(k) {
            None => Ok(None),
            Some(toml::Value::String(s)) => Ok(Some(s.clone())),
            Some(v) => Err(self.ctx.err(&self.key(k), format!("expected a string, found {}", v.type_str()))),
        }
    }
    fn bw(&mut self, k: &'static str, default: Option<f64>) -> Result<f64, ConfigError> {
        match self.str_(k)? {
            Some(s) => parse_bandwidth(&s).map_err(|e| self.ctx.err(&self.key(k), e)),
            None => default.ok_or_else(|| self.ctx.err(&self.key(k), "required (a bandwidth such as \"25GB/s\")")),
        }
    }
    fn dur(&mut self, k: &'static str, default: Option<f64>) -> Result<f64, ConfigError> {
        match self.str_(k)? {
            Some(s) => parse_duration_ns(&s).map_err(|e| self.ctx.err(&self.key(k), e)),
            None => default.ok_or_else(|| self.ctx.err(&self.key(k), "required (a duration such as \"1.2us\")")),
        }
    }
    fn size(&mut self, k: &'static str, default: Option<u64>) -> Result<u64, ConfigError> {
        match self.get(k) {
            Some(toml::Value::Integer(i)) if *i >= 0 => Ok(*i as u64),
            Some(toml::Value::String(s)) => parse_size(s).map_err(|e| self.ctx.err(&self.key(k), e)),
            Some(v) => {
                Err(self.ctx.err(&self.key(k), format!("expected a size such as \"64KiB\", found {}", v.type_str())))
            }
            None => default.ok_or_else(|| self.ctx.err(&self.key(k), "required (a size such as \"64KiB\")")),
        }
    }
    fn int(&mut self, k: &'static str, default: Option<i64>, min: i64) -> Result<i64, ConfigError> {
        match self.get(k) {
            Some(toml::Value::Integer(i)) if *i >= min => Ok(*i),
            Some(toml::Value::Integer(i)) => {
                Err(self.ctx.err(&self.key(k), format!("must be at least {min}, found {i}")))
            }
            Some(v) => Err(self.ctx.err(&self.key(k), format!("expected an integer, found {}", v.type_str()))),
            None => default.ok_or_else(|| self.ctx.err(&self.key(k), "required (an integer)")),
        }
    }
    /// An integer key as u32, within the bounds the schema declares for it (never truncated).
    fn u32_(&mut self, k: &'static str, default: Option<u32>) -> Result<u32, ConfigError> {
        let (min, max) = crate::schema::int_bounds(&self.path, k).unwrap_or((0, u32::MAX as i64));
        match self.get(k) {
            Some(toml::Value::Integer(i)) if *i >= min && *i <= max => u32::try_from(*i)
                .map_err(|_| self.ctx.err(&self.key(k), format!("must be an integer in {min}..={max}, found {i}"))),
            Some(toml::Value::Integer(i)) => {
                Err(self.ctx.err(&self.key(k), format!("must be an integer in {min}..={max}, found {i}")))
            }
            Some(v) => Err(self.ctx.err(&self.key(k), format!("expected an integer, found {}", v.type_str()))),
            None => default.ok_or_else(|| self.ctx.err(&self.key(k), "required (an integer)")),
        }
    }
    fn float(&mut self, k: &'static str, default: Option<f64>) -> Result<f64, ConfigError> {
        match self.get(k) {
            Some(toml::Value::Float(f)) => Ok(*f),
            Some(toml::Value::Integer(i)) => Ok(*i as f64),
            Some(v) => Err(self.ctx.err(&self.key(k), format!("expected a number, found {}", v.type_str()))),
            None => default.ok_or_else(|| self.ctx.err(&self.key(k), "required (a number)")),
        }
    }
    fn boolean(&mut self, k: &'static str, default: bool) -> Result<bool, ConfigError> {
        match self.get(k) {
            Some(toml::Value::Boolean(b)) => Ok(*b),
            Some(v) => Err(self.ctx.err(&self.key(k), format!("expected true or false, found {}", v.type_str()))),
            None => Ok(default),
        }
    }
    /// `efficiency`: the fraction of a link's rated bandwidth that data achieves (protocol headers,
    /// flow control), a number in (0, 1]; 1 when absent.
    fn efficiency(&mut self) -> Result<f64, ConfigError> {
        let e = self.float("efficiency", Some(1.0))?;
        if !(e > 0.0 && e <= 1.0) {
            return Err(self.ctx.err(&self.key("efficiency"), format!("expected a fraction in (0, 1], found {e}")));
        }
        Ok(e)
    }
    /// Unknown keys are errors: a misspelt key must not be silently ignored.
    fn finish(self) -> Result<(), ConfigError> {
        if let Some(t) = self.t {
            for (k, v) in t.iter() {
                if v.is_table() {
                    continue;
                }
                if !self.used.contains(&k.as_str()) {
                    let mut valid: Vec<&str> = self.used.clone();
                    valid.sort();
                    return Err(self.ctx.err(&self.key(k), format!("unknown key (valid here: {})", valid.join(", "))));
                }
            }
        }
        Ok(())
    }
}

fn sub<'a, 'b>(ctx: &'b Ctx<'a>, root: &'b toml::Table, path: &str) -> Result<T<'a, 'b>, ConfigError> {
    let mut t = Some(root);
    for part in path.split('.') {
        t = match t.and_then(|x| x.get(part)) {
            None => None,
            Some(toml::Value::Table(tt)) => Some(tt),
            Some(_) => return Err(ctx.err(path, "expected a table")),
        };
    }
    Ok(T { ctx, path: path.into(), t, used: vec![] })
}

/// `[uncertainty."table.key"]`: the range of an uncertain parameter (`low`, `high`, `source`), read
/// by `g2gsim compare` for its sensitivity band (docs/semantics.md); the replay does not use it.
/// The key must name a parameter of the machine's tables, and `low` / `high` must be given.
fn check_uncertainty(ctx: &Ctx, root: &toml::Table) -> Result<(), ConfigError> {
    let Some(u) = root.get("uncertainty") else { return Ok(()) };
    let Some(u) = u.as_table() else {
        return Err(ctx.err("uncertainty", "expected a table of [uncertainty.\"table.key\"] entries"));
    };
    for (k, v) in u {
        let key = format!("uncertainty.\"{k}\"");
        let (table, _) = k.rsplit_once('.').unwrap_or(("", k));
        const TABLES: &[&str] = &[
            "node",
            "node.pcie",
            "node.nvlink",
            "node.host",
            "node.nic",
            "node.inter_socket",
            "network",
            "mpi",
            "gpu",
            "cpu",
        ];
        if !TABLES.contains(&table) {
            return Err(ctx.err(&key, "names no machine parameter: use \"table.key\", e.g. \"gpu.copy_delay\""));
        }
        let Some(t) = v.as_table() else { return Err(ctx.err(&key, "expected a table with low, high and source")) };
        for f in t.keys() {
            if !["low", "high", "source"].contains(&f.as_str()) {
                return Err(ctx.err(&format!("{key}.{f}"), "unknown key (valid here: high, low, source)"));
            }
        }
        for f in ["low", "high"] {
            match t.get(f) {
                Some(toml::Value::String(_)) | Some(toml::Value::Integer(_)) | Some(toml::Value::Float(_)) => {}
                _ => {
                    return Err(
                        ctx.err(&format!("{key}.{f}"), "required: the parameter's value at that end, with its unit")
                    )
                }
            }
        }
    }
    Ok(())
}

/// Line of the `i`-th (0-based) `[[mpi.factors]]` header.
fn factor_line(text: &str, i: usize) -> Option<usize> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| {
            l.trim().trim_start_matches('[').trim_end_matches(']').trim() == "mpi.factors" && l.trim().starts_with("[[")
        })
        .nth(i)
        .map(|(n, _)| n + 1)
}

fn parse_factors(ctx: &Ctx, a: &[toml::Value]) -> Result<Vec<SizeFactor>, ConfigError> {
    let mut out: Vec<SizeFactor> = vec![];
    for (i, v) in a.iter().enumerate() {
        let line = factor_line(ctx.text, i);
        let err = |k: &str, msg: String| ConfigError {
            file: ctx.file.into(),
            key: format!("mpi.factors[{i}].{k}"),
            line,
            msg,
        };
        let t = v.as_table().ok_or_else(|| err("", "expected a table".into()))?;
        for k in t.keys() {
            const KEYS: [&str; 10] = [
                "path",
                "max_bytes",
                "bw_factor",
                "lat_factor",
                "delay",
                "send_overhead",
                "recv_overhead",
                "blocking_send_overhead",
                "active_ranks",
                "collective",
            ];
            if !KEYS.contains(&k.as_str()) {
                return Err(err(k, format!("unknown key (valid here: {})", KEYS.join(", "))));
            }
        }
        let path = match t.get("path") {
            Some(toml::Value::String(s)) if FACTOR_PATHS.contains(&s.as_str()) => s.clone(),
            Some(toml::Value::String(s)) => {
                return Err(err("path", format!("unknown data path {s:?} (valid: {})", FACTOR_PATHS.join(", "))))
            }
            Some(_) => return Err(err("path", "expected a string".into())),
            None => return Err(err("path", format!("required (one of {})", FACTOR_PATHS.join(", ")))),
        };
        let max_bytes = match t.get("max_bytes") {
            None => u64::MAX,
            Some(toml::Value::Integer(n)) if *n >= 0 => *n as u64,
            Some(toml::Value::String(s)) => parse_size(s).map_err(|e| err("max_bytes", e))?,
            Some(v) => {
                return Err(err("max_bytes", format!("expected a size such as \"64KiB\", found {}", v.type_str())))
            }
        };
        let num = |k: &str, d: f64| -> Result<f64, ConfigError> {
            let x = match t.get(k) {
                None => return Ok(d),
                Some(toml::Value::Float(f)) => *f,
                Some(toml::Value::Integer(n)) => *n as f64,
                Some(v) => return Err(err(k, format!("expected a number, found {}", v.type_str()))),
            };
            let ok = x.is_finite() && if k == "bw_factor" { x > 0.0 } else { x >= 0.0 };
            if !ok {
                return Err(err(
                    k,
                    format!("must be {}, found {x}", if k == "bw_factor" { "positive" } else { "at least 0" }),
                ));
            }
            Ok(x)
        };
        let dur = |k: &str| -> Result<Option<f64>, ConfigError> {
            match t.get(k) {
                None => Ok(None),
                Some(toml::Value::String(s)) => match parse_duration_ns(s) {
                    Ok(x) if x >= 0.0 => Ok(Some(x)),
                    Ok(x) => Err(err(k, format!("must be at least 0, found {x} ns"))),
                    Err(e) => Err(err(k, e)),
                },
                Some(v) => Err(err(k, format!("expected a duration such as \"1.2us\", found {}", v.type_str()))),
            }
        };
        let f = SizeFactor {
            bw_factor: num("bw_factor", 1.0)?,
            lat_factor: num("lat_factor", 1.0)?,
            delay_ns: dur("delay")?.unwrap_or(0.0),
            send_overhead_ns: dur("send_overhead")?,
            recv_overhead_ns: dur("recv_overhead")?,
            blocking_send_overhead_ns: dur("blocking_send_overhead")?.unwrap_or(0.0),
            active_ranks: match t.get("active_ranks") {
                None => 1,
                Some(toml::Value::Integer(n)) if *n >= 1 && *n <= u32::MAX as i64 => *n as u32,
                Some(v) => return Err(err("active_ranks", format!("expected an integer of at least 1, found {v}"))),
            },
            collective: match t.get("collective") {
                None => None,
                Some(toml::Value::String(c)) if COLLECTIVE_NAMES.contains(&c.as_str()) => Some(c.clone()),
                Some(v) => {
                    return Err(err(
                        "collective",
                        format!("expected one of {}, found {v}", COLLECTIVE_NAMES.join(", ")),
                    ))
                }
            },
            path,
            max_bytes,
        };
        if let Some(prev) = out
            .iter()
            .rev()
            .find(|p| p.path == f.path && p.active_ranks == f.active_ranks && p.collective == f.collective)
        {
            if f.max_bytes <= prev.max_bytes {
                return Err(err(
                    "max_bytes",
                    format!(
                        "bins of path {:?} must be listed by increasing max_bytes ({} after {})",
                        f.path, f.max_bytes, prev.max_bytes
                    ),
                ));
            }
        }
        out.push(f);
    }
    Ok(out)
}

impl MachineConfig {
    /// Every error of a machine file's text, not only the first (`g2gsim machine validate`): all
    /// schema errors (unknown tables and keys, types, bounds), or else the parser's first error.
    pub fn validate_all(text: &str, file: &str) -> Vec<ConfigError> {
        let root: toml::Table = match text.parse() {
            Ok(r) => r,
            Err(_) => return MachineConfig::from_toml(text, file).err().into_iter().collect(),
        };
        let errs = crate::schema::check(&root, text, file);
        if !errs.is_empty() {
            return errs;
        }
        MachineConfig::from_toml(text, file).err().into_iter().collect()
    }

    /// Parses a machine file's text; `file` names it in errors.
    pub fn from_toml(text: &str, file: &str) -> Result<MachineConfig, ConfigError> {
        let ctx = Ctx { file, text };
        let root: toml::Table = text.parse().map_err(|e: toml::de::Error| {
            let line = e.span().map(|s| text[..s.start.min(text.len())].lines().count().max(1));
            // one line: the TOML parser's message may span several
            let msg = e.message().lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join("; ");
            ConfigError { file: file.into(), key: "<syntax>".into(), line, msg }
        })?;
        // every table, key, type and bound first (crate::schema): nothing below can wrap or truncate
        if let Some(e) = crate::schema::check(&root, text, file).into_iter().next() {
            return Err(e);
        }
        let mut top = T { ctx: &ctx, path: String::new(), t: Some(&root), used: vec![] };
        let ver = top.int("schema_version", None, 1)?;
        if ver != SCHEMA_VERSION {
            return Err(ctx.err(
                "schema_version",
                format!("version {ver} is not supported (this g2gsim reads {SCHEMA_VERSION})"),
            ));
        }
        let name = top.str_("name")?.unwrap_or_else(|| file.to_string());
        let description = top.str_("description")?.unwrap_or_default();
        let _ = top.get("sources");
        // checked as a size; the replay does not use it (the user side compares the trace's
        // largest message with it)
        if top.get("calibrated_max_bytes").is_some() {
            top.size("calibrated_max_bytes", None)?;
        }
        if top.get("calibrated_ranks").is_some() {
            top.int("calibrated_ranks", None, 1)?;
        }
        check_uncertainty(&ctx, &root)?;
        top.finish()?;

        let mut node = sub(&ctx, &root, "node")?;
        if node.t.is_none() {
            return Err(ctx.err("node", "the [node] table is required"));
        }
        let gpus = node.u32_("gpus", None)?;
        let _ = node.get("cpu");
        let sockets = node.int("sockets", Some(1), 1)?;
        if sockets > 64 {
            return Err(ctx.err("node.sockets", format!("must be at most 64, found {sockets}")));
        }
        let sockets = sockets as u32;
        let gpu_socket = socket_list(
            &ctx,
            "node.gpu_socket",
            node.get("gpu_socket"),
            sockets,
            gpus,
            "GPU",
            &format!("{gpus} GPUs"),
        )?;
        node.finish()?;

        let mut xs = sub(&ctx, &root, "node.inter_socket")?;
        let inter_socket = if xs.t.is_some() {
            if sockets < 2 {
                return Err(ctx.err("node.inter_socket", "needs node.sockets >= 2 (a link between sockets)"));
            }
            let kind = xs.str_("kind")?.unwrap_or_else(|| "inter-socket".into());
            let eff = xs.efficiency()?;
            let bw = xs.bw("bw", None)? * eff;
            let latency_ns = xs.dur("latency", Some(0.0))?;
            Some(InterSocket { kind, bw_bytes_per_s: bw, latency_ns })
        } else {
            if sockets > 1 {
                return Err(ctx.err(
                    "node.sockets",
                    format!(
                        "{sockets} sockets need a [node.inter_socket] table (bw, latency of the link between them)"
                    ),
                ));
            }
            None
        };
        xs.finish()?;

        let mut pcie = sub(&ctx, &root, "node.pcie")?;
        let cpu_link_kind = match pcie.str_("kind")? {
            None => "pcie".to_string(),
            Some(k) if k == "pcie" || k == "nvlink" => k,
            Some(k) => return Err(ctx.err("node.pcie.kind", format!("unknown GPU-CPU link {k:?} (pcie, nvlink)"))),
        };
        let pcie_bw = pcie.bw("bw", None)? * pcie.efficiency()?;
        let pcie_latency_ns = pcie.dur("latency", Some(500.0))?;
        let _ = pcie.get("generation");
        let _ = pcie.get("width");
        pcie.finish()?;

        let mut nv = sub(&ctx, &root, "node.nvlink")?;
        let kind = nv.str_("kind")?.unwrap_or_else(|| if nv.t.is_some() { "all-to-all".into() } else { "none".into() });
        let nvlink_bw = if kind == "none" {
            0.0
        } else if kind == "pairs" {
            nv.bw("bw", Some(0.0))?
        } else {
            nv.bw("bw", None)?
        };
        let nvlink_latency_ns = nv.dur("latency", Some(700.0))?;
        let nv_eff = nv.efficiency()?;
        let nvlink_bw = nvlink_bw * nv_eff;
        let _ = nv.get("links_per_pair");
        let brick_bw = match nv.str_("brick_bw")? {
            Some(_) => Some(nv.bw("brick_bw", None)?),
            None => None,
        };
        let nvlink_gpu_bw = match nv.str_("gpu_bw")? {
            Some(_) => Some(nv.bw("gpu_bw", None)? * nv_eff),
            None => None,
        };
        let nvlink = match kind.as_str() {
            "none" => NvlinkKind::None,
            "all-to-all" => NvlinkKind::AllToAll,
            "switch" => NvlinkKind::Switch,
            "pairs" => {
                let mut v = vec![];
                match nv.get("pairs") {
                    Some(toml::Value::Array(a)) => {
                        for p in a {
                            let bad = || {
                                ctx.err("node.nvlink.pairs", "each pair is [gpu_a, gpu_b, \"bandwidth\"] or [gpu_a, gpu_b, bricks] (with node.nvlink.brick_bw)")
                            };
                            let arr = p.as_array().ok_or_else(bad)?;
                            if arr.len() != 3 {
                                return Err(bad());
                            }
                            let a = arr[0].as_integer().ok_or_else(bad)?;
                            let b = arr[1].as_integer().ok_or_else(bad)?;
                            let bw = match &arr[2] {
                                toml::Value::String(s) => parse_bandwidth(s).map_err(|e| ctx.err("node.nvlink.pairs", e))?,
                                toml::Value::Integer(n) if *n >= 1 && *n <= 64 => match brick_bw {
                                    Some(bb) => bb * *n as f64,
                                    None => return Err(ctx.err("node.nvlink.pairs", format!("pair [{a}, {b}, {n}] counts bricks: set node.nvlink.brick_bw (the rate of one brick per direction)"))),
                                },
                                _ => return Err(bad()),
                            };
                            if a < 0 || b < 0 || a >= gpus as i64 || b >= gpus as i64 || a == b {
                                return Err(ctx.err(
                                    "node.nvlink.pairs",
                                    format!("pair [{a}, {b}] names a GPU outside 0..{}", gpus - 1),
                                ));
                            }
                            v.push((a as u32, b as u32, bw * nv_eff));
                        }
                    }
                    _ => return Err(ctx.err("node.nvlink.pairs", "required when kind = \"pairs\"")),
                }
                NvlinkKind::Pairs(v)
            }
            k => {
                return Err(
                    ctx.err("node.nvlink.kind", format!("unknown NVLink kind {k:?} (none, all-to-all, switch, pairs)"))
                )
            }
        };
        if !matches!(nvlink, NvlinkKind::Pairs(_)) {
            let _ = nv.get("pairs");
        }
        nv.finish()?;

        let mut host = sub(&ctx, &root, "node.host")?;
        let shm_bw = host.bw("shm_bw", Some(20e9))?;
        let shm_latency_ns = host.dur("shm_latency", Some(300.0))?;
        let shm_rank_bw = match host.str_("shm_rank_bw")? {
            Some(_) => Some(host.bw("shm_rank_bw", None)?),
            None => None,
        };
        let shm_rank_out_bw = match host.str_("shm_rank_out_bw")? {
            Some(_) if shm_rank_bw.is_none() => {
                return Err(ctx.err("node.host.shm_rank_out_bw", "needs node.host.shm_rank_bw (the per-rank ports)"))
            }
            Some(_) => Some(host.bw("shm_rank_out_bw", None)?),
            None => None,
        };
        host.finish()?;

        let mut nic = sub(&ctx, &root, "node.nic")?;
        let nic_count = nic.u32_("count", Some(1))?;
        let nic_eff = nic.efficiency()?;
        let nic_bw = nic.bw("bw", None)? * nic_eff;
        let nic_latency_ns = nic.dur("latency", Some(1000.0))?;
        // an achieved per-process rate: not scaled by node.nic.efficiency
        let nic_rank_bw = match nic.str_("rank_bw")? {
            Some(_) => Some(nic.bw("rank_bw", None)?),
            None => None,
        };
        let gpudirect_rdma = nic.boolean("gpudirect_rdma", true)?;
        let nic_affinity = match nic.get("affinity") {
            None => NicAffinity::PerGpu,
            Some(toml::Value::String(s)) if s == "per-gpu" => NicAffinity::PerGpu,
            Some(toml::Value::String(s)) if s == "shared" => NicAffinity::Shared,
            Some(toml::Value::Array(a)) => {
                let mut v = vec![];
                for x in a {
                    match x.as_integer() {
                        Some(i) if i >= 0 && i < nic_count as i64 => v.push(i as u32),
                        _ => {
                            return Err(ctx.err(
                                "node.nic.affinity",
                                format!("each entry must be a NIC index in 0..{}", nic_count - 1),
                            ))
                        }
                    }
                }
                if v.len() != gpus as usize {
                    return Err(
                        ctx.err("node.nic.affinity", format!("lists {} NICs but the node has {gpus} GPUs", v.len()))
                    );
                }
                NicAffinity::List(v)
            }
            Some(v) => {
                return Err(ctx.err(
                    "node.nic.affinity",
                    format!("expected \"per-gpu\", \"shared\" or a list of NIC indices, found {v}"),
                ))
            }
        };
        let nic_socket = socket_list(
            &ctx,
            "node.nic.socket",
            nic.get("socket"),
            sockets,
            nic_count,
            "NIC",
            &format!("{nic_count} NICs (node.nic.count)"),
        )?;
        nic.finish()?;

        let mut net = sub(&ctx, &root, "network")?;
        let topo = net.str_("topology")?.unwrap_or_else(|| "crossbar".into());
        let hop_latency_ns = net.dur("hop_latency", Some(100.0))? as u64;
        // the network's links carry the NICs' protocol: node.nic.efficiency applies to them too
        let link_bw = net.bw("link_bw", Some(nic_bw / nic_eff))? * nic_eff;
        let rails = net.u32_("rails", Some(nic_count))?;
        let _ = net.get("nodes");
        let sharing = match net.str_("sharing")? {
            None => crate::lmm::Sharing::MaxMin,
            Some(v) => crate::lmm::Sharing::parse(&v).ok_or_else(|| {
                ctx.err("network.sharing", format!("unknown sharing {v:?} (max-min, max-min-full, bottleneck)"))
            })?,
        };
        let network = match topo.as_str() {
            "crossbar" => TopologySpec::Crossbar { link_bw_bytes_per_s: nic_bw.min(link_bw), hop_latency_ns, rails },
            "fat-tree" => TopologySpec::FatTree {
                levels: net.u32_("levels", Some(2))?,
                nodes_per_leaf: net.u32_("nodes_per_leaf", Some(16))?,
                leaves_per_pod: net.u32_("leaves_per_pod", Some(16))?,
                taper: net.float("taper", Some(1.0))?,
                link_bw_bytes_per_s: link_bw,
                hop_latency_ns,
                rails,
            },
            "dragonfly" => TopologySpec::Dragonfly {
                groups: net.u32_("groups", None)?,
                routers_per_group: net.u32_("routers_per_group", None)?,
                nodes_per_router: net.u32_("nodes_per_router", None)?,
                global_links_per_router: net.u32_("global_links_per_router", None)?,
                local_bw_bytes_per_s: net.bw("local_bw", Some(link_bw / nic_eff))? * nic_eff,
                global_bw_bytes_per_s: net.bw("global_bw", Some(link_bw / nic_eff))? * nic_eff,
                nic_bw_bytes_per_s: nic_bw,
                hop_latency_ns,
                rails,
            },
            "torus" => {
                let dims = match net.get("dims") {
                    Some(toml::Value::Array(a))
                        if a.len() == 3
                            && a.iter().all(|x| {
                                x.as_integer().is_some_and(|i| (1..=crate::schema::MAX_TOPO_DIM).contains(&i))
                            }) =>
                    {
                        let d = |i: usize| a[i].as_integer().and_then(|x| u32::try_from(x).ok()).unwrap_or(1);
                        [d(0), d(1), d(2)]
                    }
                    _ => {
                        return Err(ctx.err(
                            "network.dims",
                            format!("required for a torus: [x, y, z], integers in 1..={}", crate::schema::MAX_TOPO_DIM),
                        ))
                    }
                };
                TopologySpec::Torus {
                    dims,
                    nodes_per_router: net.u32_("nodes_per_router", Some(1))?,
                    link_bw_bytes_per_s: link_bw,
                    nic_bw_bytes_per_s: nic_bw,
                    hop_latency_ns,
                    rails,
                }
            }
            t => {
                return Err(ctx
                    .err("network.topology", format!("unknown topology {t:?} (crossbar, fat-tree, dragonfly, torus)")))
            }
        };
        net.finish()?;

        let mut mpi = sub(&ctx, &root, "mpi")?;
        let eager_limit = mpi.size("eager_limit", Some(64 * 1024))?;
        let send_overhead_ns = mpi.dur("send_overhead", Some(300.0))?;
        let recv_overhead_ns = mpi.dur("recv_overhead", Some(300.0))?;
        let gpudirect_eager = mpi.boolean("gpudirect_eager", false)?;
        let device_collectives = match mpi.get("device_collectives") {
            None => DeviceCollectives::Direct,
            Some(toml::Value::String(v)) if v == "direct" => DeviceCollectives::Direct,
            Some(toml::Value::String(v)) if v == "staged" => DeviceCollectives::Staged,
            Some(toml::Value::Array(a)) => {
                let mut v = vec![];
                for x in a {
                    match x.as_str().and_then(|s| COLLECTIVE_KINDS.iter().find(|k| k.eq_ignore_ascii_case(s))) {
                        Some(k) => v.push(k.to_string()),
                        None => {
                            return Err(ctx.err(
                                "mpi.device_collectives",
                                format!("unknown collective {x} (one of {})", COLLECTIVE_KINDS.join(", ")),
                            ))
                        }
                    }
                }
                DeviceCollectives::Kinds(v)
            }
            Some(v) => {
                return Err(ctx.err(
                    "mpi.device_collectives",
                    format!(
                    "unknown value {v} (direct, staged, or a list of collectives such as [\"Scatter\", \"Gather\"])"
                ),
                ))
            }
        };
        let collective_chunk = match mpi.get("collective_chunk") {
            None => None,
            Some(_) => Some(mpi.size("collective_chunk", None)?),
        };
        if collective_chunk == Some(0) {
            return Err(ctx.err("mpi.collective_chunk", "must be at least 1 byte"));
        }
        let collective_depth = match mpi.get("collective_depth") {
            None => None,
            Some(_) => Some(mpi.u32_("collective_depth", None)?),
        };
        let call_overhead_ns = mpi.dur("call_overhead", Some(0.0))?;
        let device_call_overhead_ns = mpi.dur("device_call_overhead", Some(0.0))?;
        let wait_overhead_ns = mpi.dur("wait_overhead", Some(call_overhead_ns))?;
        let gap_ns = mpi.dur("gap", Some(0.0))?;
        let device_gap_ns = mpi.dur("device_gap", Some(gap_ns))?;
        let blocking_send_overhead_ns = mpi.dur("blocking_send_overhead", Some(0.0))?;
        for (k, v) in [
            ("mpi.device_call_overhead", device_call_overhead_ns),
            ("mpi.wait_overhead", wait_overhead_ns),
            ("mpi.gap", gap_ns),
            ("mpi.device_gap", device_gap_ns),
            ("mpi.blocking_send_overhead", blocking_send_overhead_ns),
        ] {
            if !(v >= 0.0 && v.is_finite()) {
                return Err(ctx.err(k, format!("must be a duration of at least 0, found {v} ns")));
            }
        }
        let _ = mpi.get("library");
        let factors = match mpi.get("factors") {
            None => vec![],
            Some(toml::Value::Array(a)) => parse_factors(&ctx, a)?,
            Some(_) => return Err(ctx.err("mpi.factors", "expected an array of tables ([[mpi.factors]])")),
        };
        mpi.finish()?;

        let mut gpu = sub(&ctx, &root, "gpu")?;
        let copy_delay_ns = gpu.dur("copy_delay", Some(2000.0))?;
        let copy_per_byte_ns = match gpu.str_("copy_per_byte")? {
            Some(s) => Some(parse_duration_ns(&s).map_err(|e| ctx.err("gpu.copy_per_byte", e))?),
            None => None,
        };
        let gpudirect_delay_ns = gpu.dur("gpudirect_delay", Some(4000.0))?;
        let copy_engines = match gpu.get("copy_engines") {
            None => None,
            Some(_) => {
                let n = gpu.int("copy_engines", None, 1)?;
                if n > 64 {
                    return Err(ctx.err("gpu.copy_engines", format!("must be at most 64, found {n}")));
                }
                Some(n as u32)
            }
        };
        let copy_engine_bw = match gpu.str_("copy_engine_bw")? {
            Some(_) if copy_engines.is_none() => {
                return Err(ctx.err("gpu.copy_engine_bw", "needs gpu.copy_engines (how many engines of this rate)"))
            }
            Some(_) => Some(gpu.bw("copy_engine_bw", None)?),
            None => None,
        };
        let pipeline_chunk = gpu.size("pipeline_chunk", Some(512 * 1024))?.max(1);
        let pipeline_depth = gpu.u32_("pipeline_depth", Some(16))?;
        let pipeline_threshold = gpu.size("pipeline_threshold", Some(pipeline_chunk))?;
        let collective_chunk = collective_chunk.unwrap_or(pipeline_chunk);
        let collective_depth = collective_depth.unwrap_or(pipeline_depth);
        let rdma_max_bytes = gpu.size("rdma_max_bytes", Some(u64::MAX))?;
        let gpu_reduce_bw = gpu.bw("reduce_bw", Some(500e9))?;
        let gpu_pack_bw = gpu.bw("pack_bw", Some(300e9))?;
        let pack_kernel_latency_ns = gpu.dur("pack_kernel_latency", Some(5000.0))?;
        let _ = gpu.get("model");
        gpu.finish()?;

        let mut cpu = sub(&ctx, &root, "cpu")?;
        let cpu_reduce_bw = cpu.bw("reduce_bw", Some(5e9))?;
        let _ = cpu.get("model");
        cpu.finish()?;

        let mut coll = CollConfig::default();
        if let Some(toml::Value::Table(t)) = root.get("collectives") {
            for (k, v) in t {
                if k == "algorithms" {
                    match v {
                        toml::Value::Table(a) => {
                            for (kind, algo) in a {
                                let s = algo.as_str().ok_or_else(|| {
                                    ctx.err(&format!("collectives.algorithms.{kind}"), "expected an algorithm name")
                                })?;
                                coll.algos.push(format!("{kind}={s}"));
                            }
                        }
                        _ => return Err(ctx.err("collectives.algorithms", "expected a table kind = \"algorithm\"")),
                    }
                    continue;
                }
                let val = match v {
                    toml::Value::Integer(i) if *i >= 0 => *i as u64,
                    toml::Value::String(s) => parse_size(s).map_err(|e| ctx.err(&format!("collectives.{k}"), e))?,
                    _ => return Err(ctx.err(&format!("collectives.{k}"), "expected a size")),
                };
                coll.entries.push((k.clone(), val));
            }
        }

        Ok(MachineConfig {
            name,
            description,
            gpus_per_node: gpus,
            sockets,
            gpu_socket,
            inter_socket,
            cpu_link_kind,
            pcie_bw,
            pcie_latency_ns,
            nvlink,
            nvlink_bw,
            nvlink_latency_ns,
            nvlink_gpu_bw,
            shm_bw,
            shm_latency_ns,
            shm_rank_bw,
            shm_rank_out_bw,
            nic_count,
            nic_bw,
            nic_latency_ns,
            nic_rank_bw,
            nic_affinity,
            nic_socket,
            gpudirect_rdma,
            rdma_max_bytes,
            network,
            sharing,
            eager_limit,
            send_overhead_ns,
            recv_overhead_ns,
            call_overhead_ns,
            device_call_overhead_ns,
            wait_overhead_ns,
            gap_ns,
            device_gap_ns,
            blocking_send_overhead_ns,
            factors,
            gpudirect_eager,
            device_collectives,
            collective_chunk,
            collective_depth,
            copy_delay_ns,
            copy_per_byte_ns,
            copy_engines,
            copy_engine_bw,
            gpudirect_delay_ns,
            pipeline_chunk,
            pipeline_depth,
            pipeline_threshold,
            gpu_reduce_bw,
            cpu_reduce_bw,
            gpu_pack_bw,
            pack_kernel_latency_ns,
            coll,
        })
    }

    /// The `[[mpi.factors]]` bin of a message of `bytes` on data path `path` (`hostcopy` falls back
    /// to `host` when it has no bins of its own, every path to `all`); None: no factor applies.
    pub fn factor(&self, path: &str, bytes: u64) -> Option<&SizeFactor> {
        self.factor_at(path, bytes, 1)
    }

    /// Whether some bin names a collective.
    pub fn factors_by_collective(&self) -> bool {
        self.factors.iter().any(|f| f.collective.is_some())
    }

    /// Whether some bin has `active_ranks` > 1 (the replay then counts communicating ranks).
    pub fn factors_by_load(&self) -> bool {
        self.factors.iter().any(|f| f.active_ranks > 1)
    }

    /// [`factor`](Self::factor) on a node where `active` ranks pass messages: among the path's
    /// bins with `active_ranks <= active`, the group with the largest `active_ranks` whose bins
    /// cover `bytes` (a size beyond a group's last bin falls back to the next smaller group).
    pub fn factor_at(&self, path: &str, bytes: u64, active: u32) -> Option<&SizeFactor> {
        self.factor_for(path, bytes, active, None)
    }

    /// [`factor_at`](Self::factor_at) for a message of collective `coll` (its COLL_NAMES name):
    /// the path's bins naming that collective (or a collective bin for `all` paths), then the
    /// path's ordinary bins; then, for a staged (`hostcopy`) message on a machine without
    /// `hostcopy` bins, the `host` path's (collective first); then the `all` path's.  A staged
    /// message never takes the pageable host path's collective bins while its own path has bins.
    pub fn factor_for(&self, path: &str, bytes: u64, active: u32, coll: Option<&str>) -> Option<&SizeFactor> {
        if self.factors.is_empty() {
            return None;
        }
        let coll = coll.filter(|c| self.factors.iter().any(|f| f.collective.as_deref() == Some(*c)));
        let by_coll = |p: &str| coll.and_then(|c| self.pick(p, bytes, active, Some(c)).flatten());
        if let Some(f) = by_coll(path).or_else(|| by_coll("all")) {
            return Some(f);
        }
        if let Some(r) = self.pick(path, bytes, active, None) {
            return r;
        }
        if path == "hostcopy" {
            if let Some(f) = by_coll("host") {
                return Some(f);
            }
            if let Some(r) = self.pick("host", bytes, active, None) {
                return r;
            }
        }
        self.pick("all", bytes, active, None).flatten()
    }

    /// The bin of path `p` (bins naming collective `coll`, or the ordinary ones for None) for a
    /// message of `bytes` on a node with `active` communicating ranks: None when the path has no
    /// such bins, Some(None) when it has some but none covers the message.
    fn pick(&self, p: &str, bytes: u64, active: u32, coll: Option<&str>) -> Option<Option<&SizeFactor>> {
        let mut any = false;
        let mut best: Option<&SizeFactor> = None;
        for f in self.factors.iter().filter(|f| f.path == p && f.collective.as_deref() == coll) {
            any = true;
            if f.active_ranks > active || bytes > f.max_bytes {
                continue;
            }
            // bins of a group come by increasing max_bytes: the first covering one of a group
            // is met first, later ones of the same group do not replace it
            if best.is_none_or(|b| f.active_ranks > b.active_ranks) {
                best = Some(f);
            }
        }
        if any {
            Some(best)
        } else {
            None
        }
    }

    /// NIC (rail) used by GPU `g` of a node.
    pub fn nic_of_gpu(&self, g: u32) -> u32 {
        match &self.nic_affinity {
            NicAffinity::PerGpu => g % self.nic_count,
            NicAffinity::Shared => 0,
            NicAffinity::List(v) => v.get(g as usize).copied().unwrap_or(0),
        }
    }

    /// Socket of GPU `g` on a node of `gpn` GPUs: the listed one (`node.gpu_socket`) when the
    /// node has at most the file's GPU count (a what-if with fewer GPUs per node keeps GPUs
    /// 0..gpn with their sockets and NVLink pairs), else GPUs split evenly over the sockets in
    /// order (more GPUs than the file lists).
    pub fn socket_of_gpu(&self, g: u32, gpn: u32) -> u32 {
        match &self.gpu_socket {
            Some(v) if v.len() >= gpn as usize => v[g as usize],
            _ => ((g as u64 * self.sockets as u64) / gpn.max(1) as u64) as u32,
        }
    }

    /// Socket NIC `n` attaches to (`node.nic.socket`, else spread evenly).
    pub fn socket_of_nic(&self, n: u32) -> u32 {
        match &self.nic_socket {
            Some(v) => v.get(n as usize).copied().unwrap_or(0),
            None => ((n as u64 * self.sockets as u64) / self.nic_count.max(1) as u64) as u32,
        }
    }

    /// Copy bandwidth of cudaMemcpy over PCIe: the PCIe link, capped by copy_per_byte when given.
    pub fn copy_bw(&self) -> f64 {
        match self.copy_per_byte_ns {
            Some(p) if p > 0.0 => self.pcie_bw.min(1e9 / p),
            _ => self.pcie_bw,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: &str = r#"
schema_version = 1
name = "t"
[node]
gpus = 4
[node.pcie]
bw = "16GB/s"
[node.nvlink]
kind = "all-to-all"
bw = "75GB/s"
[node.nic]
bw = "12.5GB/s"
"#;

    #[test]
    fn staged_collective_messages_take_their_own_path_before_the_host_collective_bins() {
        // host Bcast bins and ordinary hostcopy bins: a staged Bcast message takes the hostcopy
        // bin (its own path), not the pageable host path's Bcast bin
        let f = |extra: &str| {
            MachineConfig::from_toml(
                &format!(
                    "{MIN}[mpi]\n[[mpi.factors]]\npath = \"host\"\ncollective = \"Bcast\"\nbw_factor = 0.5\n\
                     [[mpi.factors]]\npath = \"host\"\nbw_factor = 0.9\n{extra}"
                ),
                "t.toml",
            )
            .unwrap()
        };
        let m = f("[[mpi.factors]]\npath = \"hostcopy\"\nbw_factor = 0.3\n");
        let bw =
            |m: &MachineConfig, path: &str, coll: Option<&str>| m.factor_for(path, 1 << 26, 1, coll).unwrap().bw_factor;
        assert_eq!(bw(&m, "hostcopy", Some("Bcast")), 0.3);
        assert_eq!(bw(&m, "host", Some("Bcast")), 0.5);
        assert_eq!(bw(&m, "hostcopy", Some("Gather")), 0.3);
        assert_eq!(bw(&m, "hostcopy", None), 0.3);
        // a Bcast bin of the staged path itself wins over its ordinary bins
        let m2 = f("[[mpi.factors]]\npath = \"hostcopy\"\nbw_factor = 0.3\n\
                    [[mpi.factors]]\npath = \"hostcopy\"\ncollective = \"Bcast\"\nbw_factor = 0.2\n");
        assert_eq!(bw(&m2, "hostcopy", Some("Bcast")), 0.2);
        // no hostcopy bins at all: staged messages fall back to the host path's, collective first
        let m3 = f("");
        assert_eq!(bw(&m3, "hostcopy", Some("Bcast")), 0.5);
        assert_eq!(bw(&m3, "hostcopy", None), 0.9);
        // a collective's bin for every path comes before a path's ordinary bins
        let m4 = f("[[mpi.factors]]\npath = \"all\"\ncollective = \"Gather\"\nbw_factor = 0.4\n");
        assert_eq!(bw(&m4, "host", Some("Gather")), 0.4);
    }

    #[test]
    fn calibrated_ranks_is_a_count() {
        assert!(MachineConfig::from_toml(&format!("calibrated_ranks = 4\n{MIN}"), "t.toml").is_ok());
        let e = MachineConfig::from_toml(&format!("calibrated_ranks = 0\n{MIN}"), "t.toml").unwrap_err();
        assert_eq!(e.key, "calibrated_ranks");
    }

    #[test]
    fn calibrated_max_bytes_is_a_size() {
        assert!(MachineConfig::from_toml(&format!("calibrated_max_bytes = \"256MiB\"\n{MIN}"), "t.toml").is_ok());
        let e = MachineConfig::from_toml(&format!("calibrated_max_bytes = \"fast\"\n{MIN}"), "t.toml").unwrap_err();
        assert_eq!(e.key, "calibrated_max_bytes");
    }

    #[test]
    fn minimal_file_parses_with_defaults() {
        let m = MachineConfig::from_toml(MIN, "t.toml").unwrap();
        assert_eq!(m.gpus_per_node, 4);
        assert_eq!(m.pcie_bw, 16e9);
        assert_eq!(m.nvlink, NvlinkKind::AllToAll);
        assert_eq!(m.eager_limit, 65536);
        assert!(matches!(m.network, TopologySpec::Crossbar { .. }));
    }

    #[test]
    fn errors_name_key_and_line() {
        let bad = MIN.replace("bw = \"16GB/s\"", "bw = \"16GB\"");
        let e = MachineConfig::from_toml(&bad, "m.toml").unwrap_err();
        assert_eq!(e.key, "node.pcie.bw");
        assert_eq!(e.line, Some(7));
        assert!(e.to_string().starts_with("m.toml:7: node.pcie.bw:"), "{e}");

        let typo = MIN.replace("[node.nic]\n", "[node.nic]\nbandwith = \"1GB/s\"\n");
        let e = MachineConfig::from_toml(&typo, "m.toml").unwrap_err();
        assert_eq!(e.key, "node.nic.bandwith");
        assert!(e.msg.contains("unknown key"));

        let e = MachineConfig::from_toml("schema_version = 1\n[node\n", "x.toml").unwrap_err();
        assert_eq!(e.key, "<syntax>");
        assert_eq!(e.line, Some(2));

        let e =
            MachineConfig::from_toml(&MIN.replace("schema_version = 1", "schema_version = 9"), "m.toml").unwrap_err();
        assert_eq!(e.key, "schema_version");
    }

    #[test]
    fn device_collectives_and_chunk() {
        let m = MachineConfig::from_toml(MIN, "t.toml").unwrap();
        assert_eq!(m.device_collectives, DeviceCollectives::Direct);
        assert_eq!((m.collective_chunk, m.collective_depth), (m.pipeline_chunk, m.pipeline_depth));
        let t =
            format!("{MIN}[mpi]\ndevice_collectives = \"staged\"\ncollective_chunk = \"1MiB\"\ncollective_depth = 4\n");
        let m = MachineConfig::from_toml(&t, "t.toml").unwrap();
        assert_eq!(m.device_collectives, DeviceCollectives::Staged);
        assert_eq!((m.collective_chunk, m.collective_depth), (1 << 20, 4));
        let bad = format!("{MIN}[mpi]\ndevice_collectives = \"host\"\n");
        let e = MachineConfig::from_toml(&bad, "m.toml").unwrap_err();
        assert_eq!((e.key.as_str(), e.line), ("mpi.device_collectives", Some(14)));
        assert!(e.msg.contains("direct, staged"), "{e}");
        let t = format!("{MIN}[mpi]\ndevice_collectives = [\"scatter\", \"Gather\"]\n");
        let m = MachineConfig::from_toml(&t, "t.toml").unwrap();
        assert!(m.device_collectives.staged("Scatter") && m.device_collectives.staged("Gather"));
        assert!(!m.device_collectives.staged("Bcast"));
        let e = MachineConfig::from_toml(&format!("{MIN}[mpi]\ndevice_collectives = [\"Scater\"]\n"), "m.toml")
            .unwrap_err();
        assert_eq!((e.key.as_str(), e.line), ("mpi.device_collectives", Some(14)));
        let e = MachineConfig::from_toml(&format!("{MIN}[mpi]\ncollective_chunk = \"0B\"\n"), "m.toml").unwrap_err();
        assert_eq!((e.key.as_str(), e.line), ("mpi.collective_chunk", Some(14)));
        let e = MachineConfig::from_toml(&format!("{MIN}[mpi]\ncollective_depth = 0\n"), "m.toml").unwrap_err();
        assert_eq!(e.key, "mpi.collective_depth");
    }

    #[test]
    fn link_efficiency_scales_rated_bandwidth() {
        let t = MIN
            .replace("bw = \"16GB/s\"", "bw = \"16GB/s\"\nefficiency = 0.5")
            .replace("bw = \"75GB/s\"", "bw = \"75GB/s\"\nefficiency = 0.8")
            .replace("bw = \"12.5GB/s\"", "bw = \"12.5GB/s\"\nefficiency = 0.96");
        let m = MachineConfig::from_toml(&t, "t.toml").unwrap();
        assert_eq!(m.pcie_bw, 8e9);
        assert_eq!(m.nvlink_bw, 60e9);
        assert_eq!(m.nic_bw, 12e9);
        match m.network {
            TopologySpec::Crossbar { link_bw_bytes_per_s, .. } => assert_eq!(link_bw_bytes_per_s, 12e9),
            _ => unreachable!(),
        }
        let e =
            MachineConfig::from_toml(&MIN.replace("bw = \"16GB/s\"", "bw = \"16GB/s\"\nefficiency = 1.2"), "m.toml")
                .unwrap_err();
        assert_eq!((e.key.as_str(), e.line), ("node.pcie.efficiency", Some(8)));
        assert!(e.msg.contains("(0, 1]"), "{e}");
    }

    const TWO_SOCKETS: &str = r#"
schema_version = 1
name = "t"
[node]
gpus = 4
sockets = 2
gpu_socket = [0, 0, 1, 1]
[node.inter_socket]
kind = "x-bus"
bw = "32GB/s"
latency = "100ns"
[node.pcie]
kind = "nvlink"
bw = "75GB/s"
[node.nvlink]
kind = "pairs"
brick_bw = "25GB/s"
pairs = [[0, 1, 3], [2, 3, "50GB/s"]]
[node.nic]
count = 2
bw = "12.5GB/s"
socket = [0, 1]
affinity = [0, 0, 1, 1]
[gpu]
copy_engines = 3
copy_engine_bw = "20GB/s"
"#;

    #[test]
    fn node_graph_parses() {
        let m = MachineConfig::from_toml(TWO_SOCKETS, "t.toml").unwrap();
        assert_eq!(m.sockets, 2);
        assert_eq!(m.gpu_socket, Some(vec![0, 0, 1, 1]));
        assert_eq!(m.inter_socket, Some(InterSocket { kind: "x-bus".into(), bw_bytes_per_s: 32e9, latency_ns: 100.0 }));
        assert_eq!(m.cpu_link_kind, "nvlink");
        assert_eq!(m.nvlink, NvlinkKind::Pairs(vec![(0, 1, 75e9), (2, 3, 50e9)]));
        assert_eq!(m.nic_socket, Some(vec![0, 1]));
        assert_eq!((m.copy_engines, m.copy_engine_bw), (Some(3), Some(20e9)));
        assert_eq!((m.socket_of_gpu(2, 4), m.socket_of_nic(1)), (1, 1));
        // a what-if with 8 GPUs per node spreads them over the sockets in order; with 2 it keeps
        // GPUs 0 and 1 where the file puts them
        assert_eq!((0..8).map(|g| m.socket_of_gpu(g, 8)).collect::<Vec<_>>(), vec![0, 0, 0, 0, 1, 1, 1, 1]);
        assert_eq!((0..2).map(|g| m.socket_of_gpu(g, 2)).collect::<Vec<_>>(), vec![0, 0]);
        // without the keys: one socket, no inter-socket link, engines not modelled
        let m = MachineConfig::from_toml(MIN, "t.toml").unwrap();
        assert_eq!((m.sockets, m.inter_socket.is_none(), m.copy_engines), (1, true, None));
    }

    #[test]
    fn node_graph_errors_name_key_and_line() {
        let cases: [(&str, &str, &str, usize, &str); 8] = [
            ("gpu_socket = [0, 0, 1, 1]", "gpu_socket = [0, 0, 1, 2]", "node.gpu_socket", 7, "socket index in 0..1"),
            ("gpu_socket = [0, 0, 1, 1]", "gpu_socket = [0, 1]", "node.gpu_socket", 7, "lists 2 sockets"),
            ("sockets = 2", "sockets = 0", "node.sockets", 6, "1..=64"),
            (
                "[node.inter_socket]\nkind = \"x-bus\"\nbw = \"32GB/s\"",
                "[node.inter_socket]\nkind = \"x-bus\"\nbw = \"32GB\"",
                "node.inter_socket.bw",
                10,
                "per second",
            ),
            ("socket = [0, 1]", "socket = [0]", "node.nic.socket", 22, "2 NICs"),
            ("brick_bw = \"25GB/s\"\n", "", "node.nvlink.pairs", 17, "brick_bw"),
            ("copy_engines = 3", "copy_engines = 0", "gpu.copy_engines", 25, "1..=64"),
            ("kind = \"nvlink\"", "kind = \"nvlnk\"", "node.pcie.kind", 13, "pcie, nvlink"),
        ];
        for (from, to, key, line, msg) in cases {
            let t = TWO_SOCKETS.replacen(from, to, 1);
            assert_ne!(t, TWO_SOCKETS, "{from}");
            let e = MachineConfig::from_toml(&t, "m.toml").unwrap_err();
            assert_eq!((e.key.as_str(), e.line), (key, Some(line)), "{e}");
            assert!(e.msg.contains(msg), "{e}");
            assert!(e.to_string().starts_with(&format!("m.toml:{line}: {key}:")), "{e}");
        }
        // two sockets need the link between them; one socket cannot have one
        let t =
            TWO_SOCKETS.replace("[node.inter_socket]\nkind = \"x-bus\"\nbw = \"32GB/s\"\nlatency = \"100ns\"\n", "");
        let e = MachineConfig::from_toml(&t, "m.toml").unwrap_err();
        assert_eq!((e.key.as_str(), e.line), ("node.sockets", Some(6)), "{e}");
        let t = format!("{MIN}[node.inter_socket]\nbw = \"32GB/s\"\n");
        let e = MachineConfig::from_toml(&t, "m.toml").unwrap_err();
        assert_eq!(e.key, "node.inter_socket");
    }

    /// Issue 24: values that wrapped, saturated or were truncated are errors naming key and line.
    #[test]
    fn out_of_range_values_are_errors() {
        let cases: [(&str, &str, &str); 9] = [
            ("[network]\nhop_latency = \"1.9e10s\"\n", "network.hop_latency", "1e6 s"),
            ("[network]\nhop_latency = \"1e30s\"\n", "network.hop_latency", "1e6 s"),
            ("[mpi]\nsend_overhead = \"1e30s\"\n", "mpi.send_overhead", "1e6 s"),
            ("[[mpi.factors]]\npath = \"host\"\nlat_factor = 1e300\n", "mpi.factors[0].lat_factor", "[0, 1000000]"),
            ("[network]\nlink_bw = \"1e-300GB/s\"\n", "network.link_bw", "1 B/s"),
            ("[network]\ntopology = \"fat-tree\"\nlevels = 4294967298\n", "network.levels", "2..=3"),
            ("[network]\ntopology = \"torus\"\ndims = [4294967297, 1, 1]\n", "network.dims", "1..="),
            ("[gpu]\npipeline_depth = 4294967297\n", "gpu.pipeline_depth", "1..=4096"),
            ("[mpi]\neager_limit = \"1e30B\"\n", "mpi.eager_limit", "2^60"),
        ];
        for (extra, key, msg) in cases {
            let text = format!("{MIN}{extra}");
            let e = MachineConfig::from_toml(&text, "m.toml").unwrap_err();
            assert_eq!(e.key, key, "{extra}: {e}");
            assert!(e.msg.contains(msg), "{extra}: {e}");
            let want = text.lines().position(|l| l.starts_with(key.rsplit('.').next().unwrap())).map(|i| i + 1);
            assert_eq!(e.line, want, "{e}");
        }
        let e = MachineConfig::from_toml(&MIN.replace("gpus = 4", "gpus = 4294967297"), "m.toml").unwrap_err();
        assert_eq!((e.key.as_str(), e.line), ("node.gpus", Some(5)));
        assert!(e.msg.contains("1..=1024"), "{e}");
        let e = MachineConfig::from_toml(&MIN.replace("[node.nic]\n", "[node.nic]\ncount = 4294967297\n"), "m.toml")
            .unwrap_err();
        assert_eq!(e.key, "node.nic.count");
        let e = MachineConfig::from_toml(&MIN.replace("bw = \"16GB/s\"", "bw = \"1e-300GB/s\""), "m.toml").unwrap_err();
        assert_eq!((e.key.as_str(), e.line), ("node.pcie.bw", Some(7)));
    }

    /// Issue 24: misspelt tables were ignored (defaults used); now errors listing the valid tables.
    #[test]
    fn unknown_tables_are_errors() {
        for (table, line) in [("node.nvlinks", 13), ("node.hots", 13), ("gpu.copy", 13), ("network.fat", 13)] {
            let text = format!("{MIN}[{table}]\nbw = \"1GB/s\"\n");
            let e = MachineConfig::from_toml(&text, "m.toml").unwrap_err();
            assert_eq!((e.key.as_str(), e.line), (table, Some(line)), "{e}");
            assert!(
                e.msg.contains("unknown table") && e.msg.contains("node.nvlink,") && e.msg.contains("network"),
                "{e}"
            );
        }
    }

    #[test]
    fn validate_all_reports_every_error() {
        let text = format!(
            "{MIN}[network]\nhop_latency = \"1e30s\"\nrails = 0\n[gpu.copy]\nx = 1\n[mpi]\nsend_overhead = 5\n"
        );
        let errs = MachineConfig::validate_all(&text, "m.toml");
        let keys: Vec<&str> = errs.iter().map(|e| e.key.as_str()).collect();
        assert_eq!(keys, ["network.hop_latency", "network.rails", "gpu.copy", "mpi.send_overhead"], "{errs:?}");
        assert!(MachineConfig::validate_all(MIN, "m.toml").is_empty());
        // a parser error (no schema error) still comes back
        let errs = MachineConfig::validate_all(&MIN.replace("kind = \"all-to-all\"", "kind = \"pairs\""), "m.toml");
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].key, "node.nvlink.pairs");
    }
}

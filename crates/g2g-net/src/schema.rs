//! The machine file's schema: every table and key it may hold, with the kind and bounds of each value.
//!
//! [`check`] walks a parsed file against it and returns *every* error (unknown table or key, wrong
//! type, value out of bounds), each naming key and line; `MachineConfig::from_toml` runs it before
//! reading values, so no value the parser reads can wrap, truncate or saturate. A new table plugs in
//! by adding its path to [`TABLES`] and its keys to [`KEYS`] (docs/machine-files.md, "Bounds", lists
//! them; a test checks that the docs name every key).
use crate::units::{parse_bandwidth, parse_duration_ns, parse_size, MAX_SIZE};

/// An error of a machine file: the file, the key and (where found) its line.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigError {
    pub file: String,
    pub key: String,
    pub line: Option<usize>,
    pub msg: String,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(l) => write!(f, "{}:{}: {}: {}", self.file, l, self.key, self.msg),
            None => write!(f, "{}: {}: {}", self.file, self.key, self.msg),
        }
    }
}
impl std::error::Error for ConfigError {}

/// Collectives a `[[mpi.factors]]` entry may name (g2g-trace's COLL_NAMES).
pub const COLLECTIVE_NAMES: [&str; 16] = [
    "Barrier",
    "Bcast",
    "Reduce",
    "Allreduce",
    "Gather",
    "Gatherv",
    "Scatter",
    "Scatterv",
    "Allgather",
    "Allgatherv",
    "Alltoall",
    "Alltoallv",
    "Reduce_scatter",
    "Reduce_scatter_block",
    "Scan",
    "Exscan",
];

/// Data paths a `[[mpi.factors]]` entry may name (`hostcopy`: host transfers of staged buffers).
pub const FACTOR_PATHS: [&str; 6] = ["host", "hostcopy", "gpudirect-p2p", "gpudirect-rdma", "pipelined", "all"];

/// What a key holds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Kind {
    /// a bandwidth string, 1 B/s ..= 1 PB/s
    Bandwidth,
    /// a duration string, 0 ..= 10^6 s
    Duration,
    /// an integer number of bytes or a size string, 0 ..= 2^60 B
    Size,
    /// an integer in min..=max
    Int {
        min: i64,
        max: i64,
    },
    /// a finite number in (min or [min) ..= max
    Float {
        min: f64,
        max: f64,
        min_open: bool,
    },
    Bool,
    Str,
    /// one of these strings
    Choice(&'static [&'static str]),
    /// a value of its own shape (lists, pairs), checked by the parser; the text says what it is
    Other(&'static str),
}

/// One table of the file: `open` tables take any key of that kind (`[collectives]`), `array` tables
/// are arrays of tables (`[[mpi.factors]]`).
#[derive(Clone, Copy, Debug)]
pub struct TableSpec {
    pub path: &'static str,
    pub open: Option<Kind>,
    pub array: bool,
}

#[derive(Clone, Copy, Debug)]
pub struct KeySpec {
    pub table: &'static str,
    pub key: &'static str,
    pub kind: Kind,
}

const fn t(path: &'static str) -> TableSpec {
    TableSpec { path, open: None, array: false }
}
const fn k(table: &'static str, key: &'static str, kind: Kind) -> KeySpec {
    KeySpec { table, key, kind }
}
const fn int(min: i64, max: i64) -> Kind {
    Kind::Int { min, max }
}

/// Bounds shared by several keys.
pub const MAX_GPUS_PER_NODE: i64 = 1024;
pub const MAX_NICS: i64 = 64;
pub const MAX_DEPTH: i64 = 4096;
/// CPU sockets (NUMA domains) of a node, copy engines of a GPU.
pub const MAX_SOCKETS: i64 = 64;
pub const MAX_COPY_ENGINES: i64 = 64;
/// Nodes, routers, groups of a topology dimension.
pub const MAX_TOPO_DIM: i64 = 1 << 20;

const BW: Kind = Kind::Bandwidth;
const DUR: Kind = Kind::Duration;
const SIZE: Kind = Kind::Size;
const FRACTION: Kind = Kind::Float { min: 0.0, max: 1.0, min_open: true };
const FACTOR: Kind = Kind::Float { min: 1e-6, max: 1e6, min_open: false };

/// Every table of a machine file ("" is the top level).
pub const TABLES: &[TableSpec] = &[
    t(""),
    t("node"),
    t("node.inter_socket"),
    t("node.pcie"),
    t("node.nvlink"),
    t("node.host"),
    t("node.nic"),
    t("network"),
    t("mpi"),
    TableSpec { path: "mpi.factors", open: None, array: true },
    t("gpu"),
    t("cpu"),
    TableSpec { path: "collectives", open: Some(SIZE), array: false },
    TableSpec { path: "collectives.algorithms", open: Some(Kind::Str), array: false },
    // `[uncertainty."table.key"]`: ranges for compare's sensitivity band, checked in config.rs
    TableSpec { path: "uncertainty", open: Some(Kind::Other("a table with low, high and source")), array: false },
];

/// Every key, its kind and bounds.
pub const KEYS: &[KeySpec] = &[
    k("", "schema_version", int(1, 1)),
    k("", "name", Kind::Str),
    k("", "description", Kind::Str),
    k("", "sources", Kind::Other("free text")),
    // the largest message size the calibration measured (written by `calibrate fit`); the
    // replay does not use it, the user side says when a trace's messages go beyond it
    k("", "calibrated_max_bytes", SIZE),
    // the most ranks a calibration series ran on at once (written by `calibrate fit`); the
    // replay does not use it, the user side says when a trace has more ranks on a node
    k("", "calibrated_ranks", int(1, 1 << 20)),
    k("node", "gpus", int(1, MAX_GPUS_PER_NODE)),
    k("node", "cpu", Kind::Other("free text")),
    k("node", "sockets", int(1, MAX_SOCKETS)),
    k("node", "gpu_socket", Kind::Other("a list of socket indices, one per GPU")),
    k("node.inter_socket", "kind", Kind::Str),
    k("node.inter_socket", "bw", BW),
    k("node.inter_socket", "latency", DUR),
    k("node.inter_socket", "efficiency", FRACTION),
    k("node.pcie", "kind", Kind::Choice(&["pcie", "nvlink"])),
    k("node.pcie", "bw", BW),
    k("node.pcie", "latency", DUR),
    k("node.pcie", "efficiency", FRACTION),
    k("node.pcie", "generation", Kind::Other("free text")),
    k("node.pcie", "width", Kind::Other("free text")),
    k("node.nvlink", "kind", Kind::Choice(&["none", "all-to-all", "switch", "pairs"])),
    k("node.nvlink", "bw", BW),
    k("node.nvlink", "latency", DUR),
    k("node.nvlink", "efficiency", FRACTION),
    k("node.nvlink", "links_per_pair", Kind::Other("free text")),
    k("node.nvlink", "pairs", Kind::Other("a list of [gpu_a, gpu_b, \"bandwidth\"] or [gpu_a, gpu_b, bricks]")),
    k("node.nvlink", "brick_bw", BW),
    k("node.nvlink", "gpu_bw", BW),
    k("node.host", "shm_bw", BW),
    k("node.host", "shm_latency", DUR),
    k("node.host", "shm_rank_bw", BW),
    k("node.host", "shm_rank_out_bw", BW),
    k("node.nic", "count", int(1, MAX_NICS)),
    k("node.nic", "bw", BW),
    k("node.nic", "latency", DUR),
    k("node.nic", "efficiency", FRACTION),
    k("node.nic", "rank_bw", BW),
    k("node.nic", "gpudirect_rdma", Kind::Bool),
    k("node.nic", "affinity", Kind::Other("\"per-gpu\", \"shared\" or a list of NIC indices")),
    k("node.nic", "socket", Kind::Other("a list of socket indices, one per NIC")),
    k("network", "topology", Kind::Choice(&["crossbar", "fat-tree", "dragonfly", "torus"])),
    k("network", "hop_latency", DUR),
    k("network", "link_bw", BW),
    k("network", "rails", int(1, MAX_NICS)),
    k("network", "nodes", Kind::Other("free text")),
    k("network", "sharing", Kind::Choice(&["max-min", "max-min-full", "bottleneck"])),
    k("network", "levels", int(2, 3)),
    k("network", "nodes_per_leaf", int(1, MAX_TOPO_DIM)),
    k("network", "leaves_per_pod", int(1, MAX_TOPO_DIM)),
    k("network", "taper", Kind::Float { min: 1.0, max: 1024.0, min_open: false }),
    k("network", "groups", int(1, MAX_TOPO_DIM)),
    k("network", "routers_per_group", int(1, MAX_TOPO_DIM)),
    k("network", "nodes_per_router", int(1, MAX_TOPO_DIM)),
    k("network", "global_links_per_router", int(1, MAX_TOPO_DIM)),
    k("network", "local_bw", BW),
    k("network", "global_bw", BW),
    k("network", "dims", Kind::Other("[x, y, z], each 1..=1048576")),
    k("mpi", "eager_limit", SIZE),
    k("mpi", "send_overhead", DUR),
    k("mpi", "recv_overhead", DUR),
    k("mpi", "call_overhead", DUR),
    k("mpi", "device_call_overhead", DUR),
    k("mpi", "wait_overhead", DUR),
    k("mpi", "blocking_send_overhead", DUR),
    k("mpi", "gap", DUR),
    k("mpi", "device_gap", DUR),
    k("mpi", "gpudirect_eager", Kind::Bool),
    k("mpi", "device_collectives", Kind::Other("\"direct\", \"staged\" or a list of collectives")),
    k("mpi", "collective_chunk", SIZE),
    k("mpi", "collective_depth", int(1, MAX_DEPTH)),
    k("mpi", "library", Kind::Other("free text")),
    k("mpi.factors", "path", Kind::Choice(&FACTOR_PATHS)),
    k("mpi.factors", "max_bytes", SIZE),
    k("mpi.factors", "bw_factor", FACTOR),
    k("mpi.factors", "lat_factor", Kind::Float { min: 0.0, max: 1e6, min_open: false }),
    k("mpi.factors", "delay", DUR),
    k("mpi.factors", "send_overhead", DUR),
    k("mpi.factors", "recv_overhead", DUR),
    k("mpi.factors", "blocking_send_overhead", DUR),
    k("mpi.factors", "active_ranks", int(1, 1 << 20)),
    k("mpi.factors", "collective", Kind::Choice(&COLLECTIVE_NAMES)),
    k("gpu", "copy_delay", DUR),
    k("gpu", "copy_per_byte", DUR),
    k("gpu", "gpudirect_delay", DUR),
    k("gpu", "copy_engines", int(1, MAX_COPY_ENGINES)),
    k("gpu", "copy_engine_bw", BW),
    k("gpu", "pipeline_chunk", SIZE),
    k("gpu", "pipeline_depth", int(1, MAX_DEPTH)),
    k("gpu", "pipeline_threshold", SIZE),
    k("gpu", "rdma_max_bytes", SIZE),
    k("gpu", "reduce_bw", BW),
    k("gpu", "pack_bw", BW),
    k("gpu", "pack_kernel_latency", DUR),
    k("gpu", "model", Kind::Other("free text")),
    k("cpu", "reduce_bw", BW),
    k("cpu", "model", Kind::Other("free text")),
];

/// The spec of `key` in `table`, if declared.
pub fn key_spec(table: &str, key: &str) -> Option<&'static KeySpec> {
    KEYS.iter().find(|s| s.table == table && s.key == key)
}

fn table_spec(path: &str) -> Option<&'static TableSpec> {
    TABLES.iter().find(|s| s.path == path)
}

/// The bounds of an integer key (for the parser's checked conversions).
pub fn int_bounds(table: &str, key: &str) -> Option<(i64, i64)> {
    match key_spec(table, key)?.kind {
        Kind::Int { min, max } => Some((min, max)),
        _ => None,
    }
}

/// A one-line description of a kind with its bounds (docs and messages).
pub fn describe(kind: &Kind) -> String {
    match kind {
        Kind::Bandwidth => "a bandwidth, 1B/s to 1PB/s".into(),
        Kind::Duration => "a duration, 0 to 1e6 s".into(),
        Kind::Size => "a size, 0 to 2^60 B".into(),
        Kind::Int { min, max } => format!("an integer in {min}..={max}"),
        Kind::Float { min, max, min_open } => format!("a number in {}{min}, {max}]", if *min_open { "(" } else { "[" }),
        Kind::Bool => "true or false".into(),
        Kind::Str => "a string".into(),
        Kind::Choice(c) => format!("one of {}", c.join(", ")),
        Kind::Other(s) => (*s).to_string(),
    }
}

/// Checks one value against its kind; Err: the message.
pub fn check_value(kind: &Kind, v: &toml::Value) -> Result<(), String> {
    let found = || format!("found {} {}", v.type_str(), short(v));
    match kind {
        Kind::Bandwidth => match v {
            toml::Value::String(s) => parse_bandwidth(s).map(|_| ()),
            _ => Err(format!("expected a bandwidth such as \"25GB/s\", {}", found())),
        },
        Kind::Duration => match v {
            toml::Value::String(s) => parse_duration_ns(s).map(|_| ()),
            _ => Err(format!("expected a duration such as \"1.2us\", {}", found())),
        },
        Kind::Size => match v {
            toml::Value::Integer(i) if *i >= 0 && (*i as u64) <= MAX_SIZE => Ok(()),
            toml::Value::Integer(i) => Err(format!("a size must be in 0..=2^60 B, found {i}")),
            toml::Value::String(s) => parse_size(s).map(|_| ()),
            _ => Err(format!("expected a size such as \"64KiB\", {}", found())),
        },
        Kind::Int { min, max } => match v {
            toml::Value::Integer(i) if i >= min && i <= max => Ok(()),
            toml::Value::Integer(i) => Err(format!("must be an integer in {min}..={max}, found {i}")),
            _ => Err(format!("expected an integer in {min}..={max}, {}", found())),
        },
        Kind::Float { min, max, min_open } => {
            let x = match v {
                toml::Value::Float(f) => *f,
                toml::Value::Integer(i) => *i as f64,
                _ => return Err(format!("expected a number, {}", found())),
            };
            let lo_ok = if *min_open { x > *min } else { x >= *min };
            if x.is_finite() && lo_ok && x <= *max {
                Ok(())
            } else {
                Err(format!("must be {}, found {x}", describe(kind)))
            }
        }
        Kind::Bool => match v {
            toml::Value::Boolean(_) => Ok(()),
            _ => Err(format!("expected true or false, {}", found())),
        },
        Kind::Str => match v {
            toml::Value::String(_) => Ok(()),
            _ => Err(format!("expected a string, {}", found())),
        },
        Kind::Choice(c) => match v {
            toml::Value::String(s) if c.contains(&s.as_str()) => Ok(()),
            _ => Err(format!("expected one of {}, {}", c.join(", "), found())),
        },
        Kind::Other(_) => Ok(()),
    }
}

fn short(v: &toml::Value) -> String {
    let s = v.to_string();
    if s.len() > 40 {
        format!("{}...", &s[..s.char_indices().nth(37).map(|(i, _)| i).unwrap_or(s.len())])
    } else {
        s
    }
}

/// Name of a header line (`[a.b]  # note` -> `a.b`, `[[a.b]]` -> `a.b`), if it is one.
pub(crate) fn header_name(line: &str) -> Option<(&str, bool)> {
    let t = line.trim();
    if !t.starts_with('[') {
        return None;
    }
    let array = t.starts_with("[[");
    let inner = t.trim_start_matches('[');
    let end = inner.find(']')?;
    Some((inner[..end].trim(), array))
}

/// Line (1-based) of `key` (a path "a.b.c"; `idx`: which `[[a.b]]` element) in `text`: the key's own
/// line, else its table's header line.
pub(crate) fn line_of(text: &str, table: &str, key: Option<&str>, idx: Option<usize>) -> Option<usize> {
    let mut cur = String::new();
    let mut seen = 0usize;
    let mut header: Option<usize> = None;
    for (i, line) in text.lines().enumerate() {
        if let Some((name, array)) = header_name(line) {
            cur = name.to_string();
            if cur == table {
                let this = if array {
                    seen += 1;
                    idx.is_none_or(|j| j + 1 == seen)
                } else {
                    true
                };
                if this {
                    if key.is_none() {
                        return Some(i + 1);
                    }
                    header = Some(i + 1);
                } else if header.is_some() {
                    return header;
                }
            } else if header.is_some() {
                // the table's block ended without the key
                return header;
            }
            continue;
        }
        if let (Some(k), true) = (key, cur == table && (header.is_some() || table.is_empty())) {
            let t = line.trim();
            if let Some(eq) = t.find('=') {
                if t[..eq].trim().trim_matches('"') == k {
                    return Some(i + 1);
                }
            }
        }
    }
    header
}

/// Line of the first header of a table under `prefix` (`[a.b.c]` for `a.b`: a table only implied).
fn first_header_under(text: &str, prefix: &str) -> Option<usize> {
    let p = format!("{prefix}.");
    text.lines().position(|l| header_name(l).is_some_and(|(n, _)| n.starts_with(&p))).map(|i| i + 1)
}

fn join(a: &str, b: &str) -> String {
    if a.is_empty() {
        b.to_string()
    } else {
        format!("{a}.{b}")
    }
}

/// Every schema error of a parsed file, in file order of discovery.
pub fn check(root: &toml::Table, text: &str, file: &str) -> Vec<ConfigError> {
    let mut errs = vec![];
    walk(root, "", None, text, file, &mut errs);
    errs.sort_by_key(|e| e.line.unwrap_or(usize::MAX));
    errs
}

fn walk(tbl: &toml::Table, path: &str, idx: Option<usize>, text: &str, file: &str, errs: &mut Vec<ConfigError>) {
    let shown = |k: &str| match idx {
        Some(i) => format!("{path}[{i}].{k}"),
        None => join(path, k),
    };
    let err = |k: &str, line: Option<usize>, msg: String| ConfigError { file: file.into(), key: shown(k), line, msg };
    let this = table_spec(path);
    for (k, v) in tbl {
        let full = join(path, k);
        if let Some(spec) = key_spec(path, k) {
            if let Err(m) = check_value(&spec.kind, v) {
                errs.push(err(k, line_of(text, path, Some(k), idx), m));
            }
            continue;
        }
        match (v, table_spec(&full)) {
            (toml::Value::Table(sub), Some(ts)) if !ts.array => {
                walk(sub, &full, None, text, file, errs);
                continue;
            }
            (toml::Value::Array(a), Some(ts)) if ts.array => {
                for (i, e) in a.iter().enumerate() {
                    match e {
                        toml::Value::Table(sub) => walk(sub, &full, Some(i), text, file, errs),
                        _ => errs.push(err(k, line_of(text, path, Some(k), idx), "expected an array of tables".into())),
                    }
                }
                continue;
            }
            (_, Some(_)) => {
                errs.push(err(
                    k,
                    line_of(text, &full, None, None).or_else(|| line_of(text, path, Some(k), idx)),
                    "expected a table".into(),
                ));
                continue;
            }
            _ => {}
        }
        // an open table's entries are values, not tables; `[uncertainty."key"]` entries are tables
        // (Kind::Other, checked by config.rs)
        if let Some(kind) = this.and_then(|s| s.open).filter(|k| !v.is_table() || matches!(k, Kind::Other(_))) {
            if let Err(m) = check_value(&kind, v) {
                errs.push(err(k, line_of(text, path, Some(k), idx), m));
            }
            continue;
        }
        if v.is_table()
            || (v.is_array() && v.as_array().is_some_and(|a| !a.is_empty() && a.iter().all(|x| x.is_table())))
        {
            let mut valid: Vec<&str> = TABLES.iter().map(|t| t.path).filter(|p| !p.is_empty()).collect();
            valid.sort();
            let line = line_of(text, &full, None, None)
                .or_else(|| first_header_under(text, &full))
                .or_else(|| line_of(text, path, Some(k), idx));
            errs.push(err(k, line, format!("unknown table [{full}] (valid tables: {})", valid.join(", "))));
        } else {
            let mut valid: Vec<&str> = KEYS.iter().filter(|s| s.table == path).map(|s| s.key).collect();
            valid.sort();
            let what = if path.is_empty() { "unknown top-level key" } else { "unknown key" };
            errs.push(err(k, line_of(text, path, Some(k), idx), format!("{what} (valid here: {})", valid.join(", "))));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_is_documented_with_bounds() {
        let doc = include_str!("../../../docs/machine-files.md");
        let bounds = doc.split("## Bounds").nth(1).expect("docs/machine-files.md has a Bounds section");
        for s in KEYS {
            let name = if s.table.is_empty() { s.key.to_string() } else { format!("{}.{}", s.table, s.key) };
            assert!(bounds.contains(&format!("`{name}`")), "docs/machine-files.md Bounds lacks `{name}`");
        }
    }

    #[test]
    fn line_of_finds_keys_tables_and_array_elements() {
        let text = "a = 1\n[node]  # n\ngpus = 4\n[[mpi.factors]]\npath = \"host\"\n[[mpi.factors]]\npath = \"x\"\n";
        assert_eq!(line_of(text, "", Some("a"), None), Some(1));
        assert_eq!(line_of(text, "node", Some("gpus"), None), Some(3));
        assert_eq!(line_of(text, "node", None, None), Some(2));
        assert_eq!(line_of(text, "mpi.factors", Some("path"), Some(1)), Some(7));
        assert_eq!(line_of(text, "mpi.factors", Some("bw_factor"), Some(0)), Some(4));
    }
}

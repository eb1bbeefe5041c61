//! Inter-node networks.  Each topology builds its links and answers routes between node NICs.
//!
//! Conventions
//! * A node has `rails` NICs.  NIC (node, rail) has an **injection** link (NIC → first switch) and an
//!   **ejection** link (last switch → NIC); both belong to the topology and appear in routes.
//! * Links are unidirectional: a full-duplex cable is two links (one per direction), each with its own
//!   bandwidth and latency.
//! * `route` is static and deterministic (d-mod-k style for fat-trees, minimal for dragonfly,
//!   dimension-order for torus): the same (src, dst, rail) always gives the same links.
//! * `route(n, n, r)` (same node) returns an empty path; the caller never sends a node to itself.

mod crossbar;
mod dragonfly;
mod fat_tree;
mod torus;

pub use crossbar::Crossbar;
pub use dragonfly::Dragonfly;
pub use fat_tree::FatTree;
pub use torus::Torus;

pub type LinkId = u32;

#[derive(Clone, Debug, PartialEq)]
pub struct LinkSpec {
    pub bw_bytes_per_s: f64,
    pub latency_ns: u64,
    /// human-readable, e.g. "inj n3 r0", "leaf2->spine5", "global g1->g4"
    pub name: String,
}

pub trait Topology: Send + Sync {
    /// Short name: "fat-tree", "dragonfly", "torus", "crossbar".
    fn kind(&self) -> &'static str;
    fn num_nodes(&self) -> u32;
    fn rails(&self) -> u32;
    /// Every link, indexed by LinkId.
    fn links(&self) -> &[LinkSpec];
    /// Appends the links from NIC (src, rail) to NIC (dst, rail), injection and ejection included.
    fn route(&self, src: u32, dst: u32, rail: u32, out: &mut Vec<LinkId>);
    /// One line describing the built network (switch counts, link counts, taper).
    fn describe(&self) -> String;
}

/// What the machine file's `[network]` table says, already converted to numbers.
#[derive(Clone, Debug, PartialEq)]
pub enum TopologySpec {
    /// One ideal switch: injection + ejection links only.
    Crossbar {
        link_bw_bytes_per_s: f64,
        hop_latency_ns: u64,
        rails: u32,
    },
    /// k-ary fat-tree, 2 or 3 levels.  `nodes_per_leaf` hosts under each leaf switch; leaf uplinks are
    /// `nodes_per_leaf / taper` (rounded up, at least 1) so a taper of 1.5 gives a 1.5:1 oversubscribed
    /// leaf level; the upper levels are non-blocking.  Switch count grows with the node count asked for.
    FatTree {
        levels: u32,
        nodes_per_leaf: u32,
        /// leaves per pod (3 levels only; 2 levels: one pod of all leaves)
        leaves_per_pod: u32,
        taper: f64,
        link_bw_bytes_per_s: f64,
        hop_latency_ns: u64,
        rails: u32,
    },
    /// Dragonfly: `groups` groups of `routers_per_group` routers (all-to-all local links),
    /// `nodes_per_router` nodes each, `global_links_per_router` global links per router spread over
    /// the other groups; minimal routing (local, global, local).
    Dragonfly {
        groups: u32,
        routers_per_group: u32,
        nodes_per_router: u32,
        global_links_per_router: u32,
        local_bw_bytes_per_s: f64,
        global_bw_bytes_per_s: f64,
        nic_bw_bytes_per_s: f64,
        hop_latency_ns: u64,
        rails: u32,
    },
    /// 3D torus of routers (wrap-around links), `nodes_per_router` nodes each, dimension-order routing
    /// taking the shorter way round each ring.
    Torus {
        dims: [u32; 3],
        nodes_per_router: u32,
        link_bw_bytes_per_s: f64,
        nic_bw_bytes_per_s: f64,
        hop_latency_ns: u64,
        rails: u32,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct TopologyError(pub String);

impl std::fmt::Display for TopologyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for TopologyError {}

/// Builds the network for `num_nodes` nodes (at least; a topology may round up to whole switches).
pub fn build(spec: &TopologySpec, num_nodes: u32) -> Result<Box<dyn Topology>, TopologyError> {
    if num_nodes == 0 {
        return Err(TopologyError("a network needs at least one node".into()));
    }
    Ok(match spec {
        TopologySpec::Crossbar { .. } => Box::new(Crossbar::new(spec, num_nodes)?),
        TopologySpec::FatTree { .. } => Box::new(FatTree::new(spec, num_nodes)?),
        TopologySpec::Dragonfly { .. } => Box::new(Dragonfly::new(spec, num_nodes)?),
        TopologySpec::Torus { .. } => Box::new(Torus::new(spec, num_nodes)?),
    })
}

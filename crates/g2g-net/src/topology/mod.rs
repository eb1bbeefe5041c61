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
//! * Latency: a route's latency is (switches traversed) × `hop_latency_ns`.  Every link that *enters a
//!   switch* (injection and switch-to-switch links) carries one `hop_latency_ns`; ejection links carry
//!   0 (the last switch was already paid for by the link entering it).  Same as [`Crossbar`].
//! * Rails: the fat-tree builds one independent plane (a full copy of the tree) per rail.  The dragonfly
//!   and the torus attach all `rails` NICs of a node to the node's router and share the router fabric;
//!   the rail only selects the NIC links (and, on a dragonfly, helps pick among parallel global cables).
//! * Link names are not stored (a 262,144-node fat-tree has millions of links); ask
//!   [`Topology::link_name`] for one.

mod crossbar;
mod dragonfly;
mod fat_tree;
mod torus;

pub use crossbar::Crossbar;
pub use dragonfly::Dragonfly;
pub use fat_tree::FatTree;
pub use torus::Torus;

pub type LinkId = u32;
/// The links of a route or of a plan's stage: inline up to 8 (a 3-level fat-tree route plus two
/// PCIe links).
pub type Links = smallvec::SmallVec<[LinkId; 8]>;

/// One unidirectional link.  16 bytes: names are produced on demand by [`Topology::link_name`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkSpec {
    pub bw_bytes_per_s: f64,
    pub latency_ns: u64,
}

pub trait Topology: Send + Sync {
    /// Short name: "fat-tree", "dragonfly", "torus", "crossbar".
    fn kind(&self) -> &'static str;
    fn num_nodes(&self) -> u32;
    fn rails(&self) -> u32;
    /// Every link, indexed by LinkId.
    fn links(&self) -> &[LinkSpec];
    /// Human-readable name of link `id` (computed, not stored), e.g. "inj n3 r0", "ej n3 r0",
    /// "leaf2->spine5 r0", "global g1.r0->g4.r2", "(1,0,3)->(2,0,3) x+".  Panics if `id` is out of range.
    fn link_name(&self, id: LinkId) -> String;
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
        /// leaves per pod (3 levels only, >= 1; ignored for 2 levels: one pod of all leaves).  A pod has
        /// one spine per leaf uplink; each spine has `leaves_per_pod` uplinks (non-blocking), to
        /// `uplinks * leaves_per_pod` core switches.
        leaves_per_pod: u32,
        /// >= 1.0 (1.0 = full bisection).  Leaf uplinks = ceil(nodes_per_leaf / taper).
        taper: f64,
        link_bw_bytes_per_s: f64,
        hop_latency_ns: u64,
        rails: u32,
    },
    /// Dragonfly: `groups` groups of `routers_per_group` routers (all-to-all local links),
    /// `nodes_per_router` nodes each, `global_links_per_router` global links per router spread over
    /// the other groups; minimal routing (local, global, local).
    /// The machine is built with exactly `groups` groups; it is an error if they hold fewer than the
    /// nodes asked for, or if `routers_per_group * global_links_per_router < groups - 1` (some pair of
    /// groups would have no direct global link).  `global_links_per_router` is ignored when `groups == 1`.
    /// Local and global links carry `hop_latency_ns` each; NIC links use `nic_bw_bytes_per_s`.
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
    /// (x, then y, then z) taking the shorter way round each ring (ties: positive direction).
    /// `dims` are the ring sizes, each >= 1; the router count `dims[0]*dims[1]*dims[2]` is fixed by the
    /// spec and it is an error if it holds fewer than the nodes asked for.  A ring of size 1 has no
    /// links, a ring of size 2 one link per direction (the `+` links), larger rings a `+` and a `-` link
    /// per router.
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

/// `Err` naming `kind`'s `field` unless `v` is a positive, finite bandwidth.
fn check_bw(kind: &str, field: &str, v: f64) -> Result<(), TopologyError> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err(TopologyError(format!("{kind}: {field} must be a positive, finite bandwidth in bytes/s (got {v})")))
    }
}

/// `Err` naming `kind`'s `field` if `v` is zero.
fn check_nonzero(kind: &str, field: &str, v: u32) -> Result<(), TopologyError> {
    if v == 0 {
        Err(TopologyError(format!("{kind}: {field} must be at least 1 (got 0)")))
    } else {
        Ok(())
    }
}

/// Most links of a machine (network and nodes together): 2^26, about 6 GiB of link state; a
/// larger machine is refused before it is built, with the figure.
pub const MAX_LINKS: u64 = 1 << 26;
/// Memory per link (link record, its latency, the sharing solver's state), used in the refusal's figure.
pub const BYTES_PER_LINK: u64 = 96;

/// The refusal of a machine of `count` links.
pub fn too_many_links(what: &str, count: u64) -> String {
    format!(
        "{what}: {count} links would need about {:.1} GiB; g2gsim builds at most {MAX_LINKS} links (fewer nodes, GPUs per node or switches)",
        count as f64 * BYTES_PER_LINK as f64 / (1u64 << 30) as f64
    )
}

/// Converts a link count to `LinkId` range, or an error saying the network is too large.
fn check_link_count(kind: &str, count: u64) -> Result<u32, TopologyError> {
    if count > MAX_LINKS {
        return Err(TopologyError(too_many_links(kind, count)));
    }
    u32::try_from(count).map_err(|_| TopologyError(format!("{kind}: {count} links do not fit 32-bit link ids")))
}

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

/// Test helpers shared by the topology tests.
#[cfg(test)]
pub(crate) mod testutil {
    use super::LinkId;
    use std::collections::HashSet;

    /// Checks that `path` is a walk from vertex `src_nic` to vertex `dst_nic` through switches only:
    /// it starts on `src_nic`'s injection link, ends on `dst_nic`'s ejection link, each link's head is
    /// the next link's tail, no intermediate vertex is a NIC (vertex ids below `num_nic_vertices`), and
    /// no link appears twice.  `ends(id)` gives the (from, to) vertices recorded when the link was built.
    pub fn check_walk(
        path: &[LinkId],
        src_nic: u32,
        dst_nic: u32,
        num_nic_vertices: u32,
        ends: &dyn Fn(LinkId) -> (u32, u32),
    ) -> Result<(), String> {
        let (Some(&first), Some(&last)) = (path.first(), path.last()) else {
            return Err("empty path".into());
        };
        if ends(first).0 != src_nic {
            return Err(format!("first link {first} starts at vertex {} not at source NIC {src_nic}", ends(first).0));
        }
        if ends(last).1 != dst_nic {
            return Err(format!("last link {last} ends at vertex {} not at destination NIC {dst_nic}", ends(last).1));
        }
        let mut seen = HashSet::new();
        for (i, &l) in path.iter().enumerate() {
            if !seen.insert(l) {
                return Err(format!("link {l} repeated in {path:?}"));
            }
            if i + 1 < path.len() {
                let head = ends(l).1;
                if head < num_nic_vertices {
                    return Err(format!("link {l} (position {i}) ends at NIC vertex {head} mid-path"));
                }
                let next_tail = ends(path[i + 1]).0;
                if head != next_tail {
                    return Err(format!("link {l} ends at {head} but next link {} starts at {next_tail}", path[i + 1]));
                }
            }
        }
        Ok(())
    }

    /// Small deterministic generator for random pairs (no external crates).
    pub struct Rng(pub u64);
    impl Rng {
        pub fn next(&mut self) -> u64 {
            // splitmix64
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }
        pub fn below(&mut self, n: u32) -> u32 {
            (self.next() % n as u64) as u32
        }
    }
}

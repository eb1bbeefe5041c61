//! 3D torus of routers with wrap-around links and dimension-order routing.
//!
//! * Router `(x, y, z)` has index `x + X (y + Y z)`; node `n` is on router `n / nodes_per_router`, and
//!   all `rails` NICs of a node attach to that router (shared fabric).
//! * In a dimension of size 1 there is no link; of size 2, one `+` link per router (the two `+` links of
//!   the pair are the two directions of the one cable); of size >= 3, a `+` and a `-` link per router.
//! * Routing: x, then y, then z; in each ring the shorter way round, the positive direction on a tie.
//!
//! Link layout: `2 (n * rails + rail)` injection, `+ 1` ejection; then router `R`'s links at
//! `router_base + R * links_per_router + dim_offset[d] + (0 for +, 1 for -)`.
//! Vertex ids: NIC `(n, rail)` is `n * rails + rail`, router `R` is `nodes * rails + R`.
use super::{check_bw, check_link_count, check_nonzero, LinkId, LinkSpec, Topology, TopologyError, TopologySpec};

pub struct Torus {
    nodes: u32,
    rails: u32,
    dims: [u32; 3],
    nodes_per_router: u32,
    router_base: u32,
    links_per_router: u32,
    /// offset of dimension d's links within a router's block
    dim_offset: [u32; 3],
    links: Vec<LinkSpec>,
    ends: Vec<(u32, u32)>,
}

const KIND: &str = "torus";
const AXES: [char; 3] = ['x', 'y', 'z'];

/// Links per router in a ring of `size`.
fn ring_links(size: u32) -> u32 {
    match size {
        0 | 1 => 0,
        2 => 1,
        _ => 2,
    }
}

impl Torus {
    pub fn new(spec: &TopologySpec, nodes: u32) -> Result<Self, TopologyError> {
        let TopologySpec::Torus {
            dims,
            nodes_per_router,
            link_bw_bytes_per_s: link_bw,
            nic_bw_bytes_per_s: nic_bw,
            hop_latency_ns: lat,
            rails,
        } = *spec
        else {
            return Err(TopologyError("not a torus spec".into()));
        };
        for (d, &size) in dims.iter().enumerate() {
            if size == 0 {
                return Err(TopologyError(format!("{KIND}: dims[{d}] ({}) must be at least 1 (got 0)", AXES[d])));
            }
        }
        check_nonzero(KIND, "nodes_per_router", nodes_per_router)?;
        check_nonzero(KIND, "rails", rails)?;
        check_nonzero(KIND, "node count", nodes)?;
        check_bw(KIND, "link_bw_bytes_per_s", link_bw)?;
        check_bw(KIND, "nic_bw_bytes_per_s", nic_bw)?;
        let routers = dims.iter().map(|&s| s as u64).product::<u64>();
        let capacity = routers.saturating_mul(nodes_per_router as u64);
        if capacity < nodes as u64 {
            return Err(TopologyError(format!(
                "{KIND}: dims {}x{}x{} = {routers} routers x {nodes_per_router} nodes_per_router = {capacity} nodes, \
                 {nodes} asked: too few routers (grow dims or nodes_per_router)",
                dims[0], dims[1], dims[2]
            )));
        }
        let per_dim = dims.map(ring_links);
        let links_per_router = per_dim.iter().sum::<u32>();
        let dim_offset = [0, per_dim[0], per_dim[0] + per_dim[1]];
        let nic_links = 2 * nodes as u64 * rails as u64;
        let total = check_link_count(KIND, nic_links.saturating_add(routers.saturating_mul(links_per_router as u64)))?;
        check_link_count(KIND, nodes as u64 * rails as u64 + routers)
            .map_err(|_| TopologyError(format!("{KIND}: too many routers for 32-bit vertex ids")))?;
        let routers = routers as u32;
        let router_base = nic_links as u32;

        let router_v = |r: u32| nodes * rails + r;
        let mut links = Vec::with_capacity(total as usize);
        let mut ends = Vec::with_capacity(total as usize);
        for n in 0..nodes {
            let router = router_v(n / nodes_per_router);
            for rail in 0..rails {
                links.push(LinkSpec { bw_bytes_per_s: nic_bw, latency_ns: lat });
                ends.push((n * rails + rail, router));
                links.push(LinkSpec { bw_bytes_per_s: nic_bw, latency_ns: 0 });
                ends.push((router, n * rails + rail));
            }
        }
        let hop = LinkSpec { bw_bytes_per_s: link_bw, latency_ns: lat };
        for r in 0..routers {
            let c = Self::coords_of(dims, r);
            for d in 0..3 {
                let size = dims[d];
                if per_dim[d] >= 1 {
                    let mut next = c;
                    next[d] = (c[d] + 1) % size;
                    links.push(hop);
                    ends.push((router_v(r), router_v(Self::index_of(dims, next))));
                }
                if per_dim[d] == 2 {
                    let mut prev = c;
                    prev[d] = (c[d] + size - 1) % size;
                    links.push(hop);
                    ends.push((router_v(r), router_v(Self::index_of(dims, prev))));
                }
            }
        }
        debug_assert_eq!(links.len() as u32, total);
        Ok(Torus { nodes, rails, dims, nodes_per_router, router_base, links_per_router, dim_offset, links, ends })
    }

    fn coords_of(dims: [u32; 3], r: u32) -> [u32; 3] {
        [r % dims[0], (r / dims[0]) % dims[1], r / (dims[0] * dims[1])]
    }

    fn index_of(dims: [u32; 3], c: [u32; 3]) -> u32 {
        c[0] + dims[0] * (c[1] + dims[1] * c[2])
    }

    fn vertex_name(&self, v: u32) -> String {
        let nics = self.nodes * self.rails;
        if v < nics {
            format!("n{} r{}", v / self.rails, v % self.rails)
        } else {
            let c = Self::coords_of(self.dims, v - nics);
            format!("({},{},{})", c[0], c[1], c[2])
        }
    }

    #[cfg(test)]
    fn ends(&self, id: LinkId) -> (u32, u32) {
        self.ends[id as usize]
    }
}

impl Topology for Torus {
    fn kind(&self) -> &'static str {
        KIND
    }
    fn num_nodes(&self) -> u32 {
        self.nodes
    }
    fn rails(&self) -> u32 {
        self.rails
    }
    fn links(&self) -> &[LinkSpec] {
        &self.links
    }
    fn link_name(&self, id: LinkId) -> String {
        let (a, b) = self.ends[id as usize];
        if id < self.router_base {
            if id & 1 == 0 {
                format!("inj {}", self.vertex_name(a))
            } else {
                format!("ej {}", self.vertex_name(b))
            }
        } else {
            let k = (id - self.router_base) % self.links_per_router;
            let d = (0..3).rev().find(|&d| k >= self.dim_offset[d]).unwrap_or(0);
            let sign = if k == self.dim_offset[d] { '+' } else { '-' };
            format!("{}->{} {}{}", self.vertex_name(a), self.vertex_name(b), AXES[d], sign)
        }
    }
    fn route(&self, src: u32, dst: u32, rail: u32, out: &mut Vec<LinkId>) {
        debug_assert!(src < self.nodes && dst < self.nodes && rail < self.rails);
        if src == dst {
            return;
        }
        out.push(2 * (src * self.rails + rail));
        let mut cur = Self::coords_of(self.dims, src / self.nodes_per_router);
        let tgt = Self::coords_of(self.dims, dst / self.nodes_per_router);
        for d in 0..3 {
            let size = self.dims[d];
            let delta = (tgt[d] + size - cur[d]) % size;
            if delta == 0 {
                continue;
            }
            let (steps, minus) = if delta <= size - delta { (delta, 0) } else { (size - delta, 1) };
            for _ in 0..steps {
                let r = Self::index_of(self.dims, cur);
                out.push(self.router_base + r * self.links_per_router + self.dim_offset[d] + minus);
                cur[d] = if minus == 0 { (cur[d] + 1) % size } else { (cur[d] + size - 1) % size };
            }
        }
        out.push(2 * (dst * self.rails + rail) + 1);
    }
    fn describe(&self) -> String {
        let [x, y, z] = self.dims;
        let routers = x * y * z;
        format!(
            "torus: {x}x{y}x{z} = {routers} routers ({} nodes each), {} nodes x {} rails (shared fabric); \
             {} router links ({} per router), {} links in all",
            self.nodes_per_router,
            self.nodes,
            self.rails,
            routers * self.links_per_router,
            self.links_per_router,
            self.links.len()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{check_walk, Rng};
    use super::*;
    use std::collections::HashMap;

    fn spec(dims: [u32; 3], npr: u32, rails: u32) -> TopologySpec {
        TopologySpec::Torus { dims, nodes_per_router: npr, link_bw_bytes_per_s: 10e9, nic_bw_bytes_per_s: 25e9, hop_latency_ns: 50, rails }
    }

    fn route(t: &Torus, s: u32, d: u32, r: u32) -> Vec<LinkId> {
        let mut v = Vec::new();
        t.route(s, d, r, &mut v);
        v
    }

    /// Minimal ring distance, computed independently of the route code.
    fn ring(a: u32, b: u32, size: u32) -> u32 {
        let d = a.abs_diff(b);
        d.min(size - d)
    }

    fn check_pairs(t: &Torus, pairs: impl Iterator<Item = (u32, u32)>) {
        let nics = t.nodes * t.rails;
        let [x, y, _] = t.dims;
        let xyz = |n: u32| {
            let r = n / t.nodes_per_router;
            (r % x, (r / x) % y, r / (x * y))
        };
        for (s, d) in pairs {
            for r in 0..t.rails {
                let p = route(t, s, d, r);
                if s == d {
                    assert!(p.is_empty());
                    continue;
                }
                check_walk(&p, s * t.rails + r, d * t.rails + r, nics, &|l| t.ends(l))
                    .unwrap_or_else(|e| panic!("{s}->{d} rail {r}: {e}"));
                let (a, b) = (xyz(s), xyz(d));
                let hops = ring(a.0, b.0, t.dims[0]) + ring(a.1, b.1, t.dims[1]) + ring(a.2, b.2, t.dims[2]);
                assert_eq!(p.len() as u32, hops + 2, "{s}->{d}: {a:?} -> {b:?}");
                // dimension order: the axis letters in the names never go back (x before y before z)
                let axes: Vec<char> =
                    p[1..p.len() - 1].iter().map(|&l| t.link_name(l).chars().rev().nth(1).unwrap()).collect();
                assert!(axes.windows(2).all(|w| w[0] <= w[1]), "{axes:?}");
                let lat: u64 = p.iter().map(|&l| t.links()[l as usize].latency_ns).sum();
                assert_eq!(lat, (p.len() as u64 - 1) * 50);
            }
        }
    }

    #[test]
    fn all_pairs_are_minimal_walks() {
        // odd and even rings, one ring of size 2, one of size 1, 2 nodes per router, 2 rails
        for dims in [[4, 3, 5], [2, 3, 1], [1, 1, 6], [5, 2, 2]] {
            let routers = dims.iter().product::<u32>();
            let n = routers * 2 - 1;
            let t = Torus::new(&spec(dims, 2, 2), n).unwrap();
            check_pairs(&t, (0..n).flat_map(|s| (0..n).map(move |d| (s, d))));
        }
    }

    #[test]
    fn link_counts_and_symmetry() {
        let t = Torus::new(&spec([4, 2, 1], 1, 1), 8).unwrap();
        // x ring of 4: 2 links per router, y ring of 2: 1, z: 0
        assert_eq!(t.links_per_router, 3);
        assert_eq!(t.links().len(), 16 + 8 * 3);
        // every router link has its reverse
        let mut set: HashMap<(u32, u32), u32> = HashMap::new();
        for l in t.router_base..t.links().len() as u32 {
            *set.entry(t.ends(l)).or_default() += 1;
        }
        assert!(set.iter().all(|(&(a, b), &n)| n == 1 && set.get(&(b, a)) == Some(&1)));
    }

    #[test]
    fn ties_go_positive_and_wrap() {
        let t = Torus::new(&spec([4, 4, 4], 1, 1), 64).unwrap();
        // (0,0,0) -> (2,0,0): tie, positive
        let names: Vec<_> = route(&t, 0, 2, 0).iter().map(|&l| t.link_name(l)).collect();
        assert_eq!(names, ["inj n0 r0", "(0,0,0)->(1,0,0) x+", "(1,0,0)->(2,0,0) x+", "ej n2 r0"]);
        // (0,0,0) -> (3,3,1): wraps negative in x and y, then z+
        let names: Vec<_> = route(&t, 0, 3 + 4 * 3 + 16, 0).iter().map(|&l| t.link_name(l)).collect();
        assert_eq!(names, ["inj n0 r0", "(0,0,0)->(3,0,0) x-", "(3,0,0)->(3,3,0) y-", "(3,3,0)->(3,3,1) z+", "ej n31 r0"]);
        assert!(t.describe().contains("64 routers"));
    }

    #[test]
    fn random_pairs_and_determinism() {
        let t = Torus::new(&spec([8, 6, 7], 3, 2), 1000).unwrap();
        let mut rng = Rng(9);
        let pairs: Vec<_> = (0..5000).map(|_| (rng.below(1000), rng.below(1000))).collect();
        check_pairs(&t, pairs.iter().copied());
        for &(s, d) in &pairs[..500] {
            assert_eq!(route(&t, s, d, 1), route(&t, s, d, 1));
        }
    }

    #[test]
    fn errors_name_the_field() {
        let err = |s: TopologySpec, n: u32| Torus::new(&s, n).err().expect("should fail").0;
        let e = err(spec([2, 2, 2], 2, 1), 17);
        assert!(e.contains("too few routers") && e.contains("dims"), "{e}");
        assert!(err(spec([2, 0, 2], 2, 1), 4).contains("dims[1]"));
        assert!(err(spec([2, 2, 2], 0, 1), 4).contains("nodes_per_router"));
        assert!(err(spec([2, 2, 2], 1, 0), 4).contains("rails"));
        let mut s = spec([2, 2, 2], 1, 1);
        if let TopologySpec::Torus { nic_bw_bytes_per_s, .. } = &mut s {
            *nic_bw_bytes_per_s = f64::INFINITY;
        }
        assert!(err(s, 4).contains("nic_bw_bytes_per_s"));
    }
}

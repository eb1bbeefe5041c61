//! Dragonfly: groups of routers, all-to-all local links inside a group, global links between groups.
//!
//! * `groups` (G) groups of `routers_per_group` (a) routers; router `R = g * a + r`; node `n` is on router
//!   `n / nodes_per_router`.  All `rails` NICs of a node attach to the node's router (shared fabric).
//! * Local links: one per ordered pair of distinct routers of a group.
//! * Global links (consecutive arrangement): group `g` has `a * h` global ports, port `q` on router
//!   `q / h`.  Port `q` is cable `c = q / (G-1)` to the group at offset `o = 1 + q mod (G-1)`, i.e. group
//!   `(g + o) mod G`, where it lands on that group's port `c * (G-1) + (G-1-o)` (the same cable seen
//!   from the other side, offset `G - o`).  Every pair of groups gets `floor(a h / (G-1))` cables, plus one
//!   more for the pairs whose two ports both exist in the last, partial round; ports left without a
//!   partner are not built.  Each cable is two unidirectional links.
//! * Minimal routing: injection; local hop to the router holding the chosen global cable (if not
//!   already there); the global hop; local hop to the destination router (if not already there);
//!   ejection.  At most 5 links.  Among parallel cables between two groups the cable is
//!   `(src + dst + rail) mod cables`.
//!
//! Link layout: `2 (n * rails + rail)` injection, `+ 1` ejection; then `a (a-1)` local links per group
//! (`local_base + g a (a-1) + r (a-1) + (r2 < r ? r2 : r2 - 1)`); then the global links, one per
//! connected port and group (`global_base + g * connected_ports + index of the port`).
//! Vertex ids: NIC `(n, rail)` is `n * rails + rail`, router `R` is `nodes * rails + R`.
use super::{check_bw, check_link_count, check_nonzero, LinkId, LinkSpec, Topology, TopologyError, TopologySpec};

pub struct Dragonfly {
    nodes: u32,
    rails: u32,
    groups: u32,
    /// routers per group
    a: u32,
    /// nodes per router
    p: u32,
    /// global ports per router
    h: u32,
    /// cables per pair of groups in the full rounds
    full_rounds: u32,
    /// ports used in the last, partial round (0 if none)
    rem: u32,
    local_base: u32,
    global_base: u32,
    /// connected global ports per group
    connected: u32,
    /// per global port q of a group: its index among the connected ports, u32::MAX if unconnected
    port_index: Vec<u32>,
    links: Vec<LinkSpec>,
    ends: Vec<(u32, u32)>,
}

const KIND: &str = "dragonfly";

impl Dragonfly {
    pub fn new(spec: &TopologySpec, nodes: u32) -> Result<Self, TopologyError> {
        let TopologySpec::Dragonfly {
            groups,
            routers_per_group: a,
            nodes_per_router: p,
            global_links_per_router: h,
            local_bw_bytes_per_s: local_bw,
            global_bw_bytes_per_s: global_bw,
            nic_bw_bytes_per_s: nic_bw,
            hop_latency_ns: lat,
            rails,
        } = *spec
        else {
            return Err(TopologyError("not a dragonfly spec".into()));
        };
        check_nonzero(KIND, "groups", groups)?;
        check_nonzero(KIND, "routers_per_group", a)?;
        check_nonzero(KIND, "nodes_per_router", p)?;
        check_nonzero(KIND, "rails", rails)?;
        check_nonzero(KIND, "node count", nodes)?;
        if groups > 1 {
            check_nonzero(KIND, "global_links_per_router", h)?;
        }
        check_bw(KIND, "local_bw_bytes_per_s", local_bw)?;
        check_bw(KIND, "global_bw_bytes_per_s", global_bw)?;
        check_bw(KIND, "nic_bw_bytes_per_s", nic_bw)?;
        let capacity = groups as u64 * a as u64 * p as u64;
        if capacity < nodes as u64 {
            let per_group = a as u64 * p as u64;
            return Err(TopologyError(format!(
                "{KIND}: groups = {groups} is too few: {groups} groups x {a} routers x {p} nodes = {capacity} nodes, \
                 {nodes} asked (need groups >= {})",
                (nodes as u64).div_ceil(per_group)
            )));
        }
        let ports = a as u64 * h as u64;
        // global ports are listed per group before the link count is known: bound them first
        check_link_count(KIND, ports.saturating_mul(groups as u64))?;
        let (full_rounds, rem) = if groups > 1 {
            if ports < groups as u64 - 1 {
                return Err(TopologyError(format!(
                    "{KIND}: global_links_per_router = {h} is too few: {a} routers x {h} = {ports} global links per \
                     group cannot reach the other {} groups (need routers_per_group * global_links_per_router >= groups - 1)",
                    groups - 1
                )));
            }
            ((ports / (groups as u64 - 1)) as u32, (ports % (groups as u64 - 1)) as u32)
        } else {
            (0, 0)
        };

        // which global ports have a partner
        let mut port_index = Vec::new();
        let mut connected = 0u32;
        if groups > 1 {
            port_index.reserve(ports as usize);
            for q in 0..ports as u32 {
                let (c, o) = (q / (groups - 1), q % (groups - 1) + 1);
                if c < full_rounds || Self::partial_round_pair(rem, groups, o) {
                    port_index.push(connected);
                    connected += 1;
                } else {
                    port_index.push(u32::MAX);
                }
            }
        }

        let nic_links = 2 * nodes as u64 * rails as u64;
        let local_links = groups as u64 * a as u64 * (a as u64 - 1);
        let global_links = groups as u64 * connected as u64;
        let total = check_link_count(KIND, nic_links + local_links + global_links)?;
        check_link_count(KIND, nodes as u64 * rails as u64 + groups as u64 * a as u64)
            .map_err(|_| TopologyError(format!("{KIND}: too many routers for 32-bit vertex ids")))?;
        let (local_base, global_base) = (nic_links as u32, (nic_links + local_links) as u32);

        let router_v = |g: u32, r: u32| nodes * rails + g * a + r;
        let mut links = Vec::with_capacity(total as usize);
        let mut ends = Vec::with_capacity(total as usize);
        for n in 0..nodes {
            let router = nodes * rails + n / p;
            for rail in 0..rails {
                links.push(LinkSpec { bw_bytes_per_s: nic_bw, latency_ns: lat });
                ends.push((n * rails + rail, router));
                links.push(LinkSpec { bw_bytes_per_s: nic_bw, latency_ns: 0 });
                ends.push((router, n * rails + rail));
            }
        }
        for g in 0..groups {
            for r in 0..a {
                for r2 in (0..a).filter(|&r2| r2 != r) {
                    links.push(LinkSpec { bw_bytes_per_s: local_bw, latency_ns: lat });
                    ends.push((router_v(g, r), router_v(g, r2)));
                }
            }
        }
        debug_assert_eq!(links.len() as u32, global_base);
        for g in 0..groups {
            // one group has no global links (port_index is empty: found by fuzzing, issue 24)
            for q in (0..port_index.len() as u32).filter(|&q| port_index[q as usize] != u32::MAX) {
                let (c, o) = (q / (groups - 1), q % (groups - 1) + 1);
                let g2 = (g + o) % groups;
                let q2 = c * (groups - 1) + (groups - 1 - o);
                debug_assert!(port_index[q2 as usize] != u32::MAX);
                links.push(LinkSpec { bw_bytes_per_s: global_bw, latency_ns: lat });
                ends.push((router_v(g, q / h), router_v(g2, q2 / h)));
            }
        }
        debug_assert_eq!(links.len() as u32, total);
        Ok(Dragonfly {
            nodes,
            rails,
            groups,
            a,
            p,
            h,
            full_rounds,
            rem,
            local_base,
            global_base,
            connected,
            port_index,
            links,
            ends,
        })
    }

    /// Whether the pair of groups at offset `o` gets a cable in the last, partial round: both its ports
    /// (offset `o` on one side, `G - o` on the other) must exist.
    fn partial_round_pair(rem: u32, groups: u32, o: u32) -> bool {
        o - 1 < rem && groups - 1 - o < rem
    }

    /// Cables between two groups at offset `o` (1..G-1).
    fn cables(&self, o: u32) -> u32 {
        self.full_rounds + u32::from(Self::partial_round_pair(self.rem, self.groups, o))
    }

    fn local(&self, g: u32, r: u32, r2: u32) -> LinkId {
        debug_assert!(r != r2);
        self.local_base + g * self.a * (self.a - 1) + r * (self.a - 1) + if r2 < r { r2 } else { r2 - 1 }
    }

    fn vertex_name(&self, v: u32) -> String {
        let nics = self.nodes * self.rails;
        if v < nics {
            format!("n{} r{}", v / self.rails, v % self.rails)
        } else {
            let router = v - nics;
            format!("g{}.r{}", router / self.a, router % self.a)
        }
    }

    #[cfg(test)]
    fn ends(&self, id: LinkId) -> (u32, u32) {
        self.ends[id as usize]
    }
}

impl Topology for Dragonfly {
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
        if id < self.local_base {
            let which = if id & 1 == 0 { "inj" } else { "ej" };
            let nic = if id & 1 == 0 { a } else { b };
            format!("{which} {}", self.vertex_name(nic))
        } else if id < self.global_base {
            format!("local {}->{}", self.vertex_name(a), self.vertex_name(b))
        } else {
            format!("global {}->{}", self.vertex_name(a), self.vertex_name(b))
        }
    }
    fn route(&self, src: u32, dst: u32, rail: u32, out: &mut Vec<LinkId>) {
        debug_assert!(src < self.nodes && dst < self.nodes && rail < self.rails);
        if src == dst {
            return;
        }
        out.push(2 * (src * self.rails + rail));
        let (rs, rd) = (src / self.p, dst / self.p);
        let (gs, gd) = (rs / self.a, rd / self.a);
        let (rs, rd) = (rs % self.a, rd % self.a);
        if gs == gd {
            if rs != rd {
                out.push(self.local(gs, rs, rd));
            }
        } else {
            let g1 = self.groups - 1;
            let o = (gd + self.groups - gs) % self.groups;
            let c = ((src as u64 + dst as u64 + rail as u64) % self.cables(o) as u64) as u32;
            let q = c * g1 + o - 1;
            let q2 = c * g1 + (g1 - o);
            let (r_out, r_in) = (q / self.h, q2 / self.h);
            if rs != r_out {
                out.push(self.local(gs, rs, r_out));
            }
            out.push(self.global_base + gs * self.connected + self.port_index[q as usize]);
            if r_in != rd {
                out.push(self.local(gd, r_in, rd));
            }
        }
        out.push(2 * (dst * self.rails + rail) + 1);
    }
    fn describe(&self) -> String {
        let cables = if self.groups < 2 {
            "no global links".to_string()
        } else if self.rem == 0 || self.full_rounds == 0 {
            format!("{} global cables per group pair", self.full_rounds.max(1))
        } else {
            format!("{}-{} global cables per group pair", self.full_rounds, self.full_rounds + 1)
        };
        format!(
            "dragonfly: {} groups x {} routers ({} nodes, {} global ports each), {} nodes x {} rails (shared fabric); \
             {} local + {} global links ({}), {} links in all",
            self.groups,
            self.a,
            self.p,
            self.h,
            self.nodes,
            self.rails,
            self.global_base - self.local_base,
            self.links.len() as u32 - self.global_base,
            cables,
            self.links.len()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{check_walk, Rng};
    use super::*;
    use std::collections::{HashMap, HashSet};

    fn spec(groups: u32, a: u32, p: u32, h: u32, rails: u32) -> TopologySpec {
        TopologySpec::Dragonfly {
            groups,
            routers_per_group: a,
            nodes_per_router: p,
            global_links_per_router: h,
            local_bw_bytes_per_s: 20e9,
            global_bw_bytes_per_s: 10e9,
            nic_bw_bytes_per_s: 25e9,
            hop_latency_ns: 100,
            rails,
        }
    }

    fn route(t: &Dragonfly, s: u32, d: u32, r: u32) -> Vec<LinkId> {
        let mut v = Vec::new();
        t.route(s, d, r, &mut v);
        v
    }

    fn check_pairs(t: &Dragonfly, pairs: impl Iterator<Item = (u32, u32)>) {
        let nics = t.nodes * t.rails;
        for (s, d) in pairs {
            for r in 0..t.rails {
                let p = route(t, s, d, r);
                if s == d {
                    assert!(p.is_empty());
                    continue;
                }
                check_walk(&p, s * t.rails + r, d * t.rails + r, nics, &|l| t.ends(l))
                    .unwrap_or_else(|e| panic!("{s}->{d} rail {r}: {e}"));
                let (rs, rd) = (s / t.p, d / t.p);
                let (gs, gd) = (rs / t.a, rd / t.a);
                let globals = p.iter().filter(|&&l| l >= t.global_base).count();
                let locals = p.iter().filter(|&&l| l >= t.local_base && l < t.global_base).count();
                if rs == rd {
                    assert_eq!(p.len(), 2);
                } else if gs == gd {
                    assert_eq!((p.len(), locals, globals), (3, 1, 0));
                } else {
                    assert!(p.len() <= 5 && p.len() >= 3, "{p:?}");
                    assert_eq!(globals, 1, "exactly one global hop {s}->{d}");
                    assert!(locals <= 2);
                }
                assert_eq!(t.links()[p[0] as usize].bw_bytes_per_s, 25e9);
                let lat: u64 = p.iter().map(|&l| t.links()[l as usize].latency_ns).sum();
                assert_eq!(lat, (p.len() as u64 - 1) * 100);
            }
        }
    }

    #[test]
    fn balanced_dragonfly_all_pairs_are_walks() {
        // canonical a = 2h: 4 routers x 2 global ports, 9 groups, 2 nodes per router -> 72 nodes
        let t = Dragonfly::new(&spec(9, 4, 2, 2, 2), 72).unwrap();
        assert_eq!((t.full_rounds, t.rem, t.connected), (1, 0, 8));
        assert_eq!(t.links().len(), 2 * 72 * 2 + 9 * 12 + 9 * 8);
        check_pairs(&t, (0..72).flat_map(|s| (0..72).map(move |d| (s, d))));
    }

    #[test]
    fn partial_round_and_two_groups_are_walks() {
        // 3 routers x 3 ports = 9 ports, 5 groups: 2 full rounds + 1 partial (rem 1)
        let t = Dragonfly::new(&spec(5, 3, 2, 3, 1), 27).unwrap();
        assert_eq!((t.full_rounds, t.rem), (2, 1));
        check_pairs(&t, (0..27).flat_map(|s| (0..27).map(move |d| (s, d))));
        // 2 groups, 6 cables between them
        let t = Dragonfly::new(&spec(2, 3, 1, 2, 1), 6).unwrap();
        assert_eq!(t.cables(1), 6);
        check_pairs(&t, (0..6).flat_map(|s| (0..6).map(move |d| (s, d))));
        // one group: local links only
        let t = Dragonfly::new(&spec(1, 4, 2, 0, 1), 8).unwrap();
        assert_eq!(t.links().len(), 16 + 12);
        check_pairs(&t, (0..8).flat_map(|s| (0..8).map(move |d| (s, d))));
    }

    #[test]
    fn global_wiring_is_cables_between_every_pair() {
        for (g, a, h) in [(9u32, 4u32, 2u32), (5, 3, 3), (7, 4, 4), (2, 3, 2), (12, 3, 5)] {
            let t = Dragonfly::new(&spec(g, a, 1, h, 1), 3).unwrap();
            let nics = t.nodes * t.rails;
            let group_of = |v: u32| (v - nics) / a;
            // count directed global links per (from group, to group); every link has a reverse twin
            let mut per_pair: HashMap<(u32, u32), u32> = HashMap::new();
            let mut set: HashMap<(u32, u32), u32> = HashMap::new();
            let mut per_router: HashMap<u32, u32> = HashMap::new();
            for l in t.global_base..t.links().len() as u32 {
                let (x, y) = t.ends(l);
                assert_ne!(group_of(x), group_of(y));
                *per_pair.entry((group_of(x), group_of(y))).or_default() += 1;
                *set.entry((x, y)).or_default() += 1;
                *per_router.entry(x).or_default() += 1;
            }
            for ((x, y), n) in &set {
                assert_eq!(set.get(&(*y, *x)), Some(n), "cable {x}-{y} not symmetric (g={g} a={a} h={h})");
            }
            for x in 0..g {
                for y in (0..g).filter(|&y| y != x) {
                    let n = per_pair.get(&(x, y)).copied().unwrap_or(0);
                    assert!(n >= 1, "groups {x} and {y} not connected (g={g} a={a} h={h})");
                    assert_eq!(n, t.cables((y + g - x) % g));
                }
            }
            assert!(per_router.values().all(|&n| n <= h));
        }
    }

    #[test]
    fn random_pairs_larger_instance() {
        // 17 groups x 8 routers x 4 global ports (32 ports, 16 other groups: 2 cables per pair), 4 nodes
        // per router, 2 rails; 500 of the 544 node slots used
        let t = Dragonfly::new(&spec(17, 8, 4, 4, 2), 500).unwrap();
        assert_eq!(t.cables(3), 2);
        let mut rng = Rng(11);
        check_pairs(&t, (0..20000).map(|_| (rng.below(500), rng.below(500))));
        // the parallel cables are both used between two groups
        let used: HashSet<_> = (0..32).flat_map(|s| (192..224).map(move |d| (s, d))).map(|(s, d)| {
            route(&t, s, d, 0).into_iter().find(|&l| l >= t.global_base).unwrap()
        }).collect();
        assert_eq!(used.len(), 2);
        assert!(t.describe().contains("17 groups"), "{}", t.describe());
    }

    #[test]
    fn deterministic_and_names() {
        let t = Dragonfly::new(&spec(9, 4, 2, 2, 2), 72).unwrap();
        let mut rng = Rng(5);
        for _ in 0..1000 {
            let (s, d, r) = (rng.below(72), rng.below(72), rng.below(2));
            assert_eq!(route(&t, s, d, r), route(&t, s, d, r));
        }
        // node 0 (g0.r0) -> node 71 (g8.r3): offset 8 -> port 7 on g0.r3, lands on g8 port 0 (g8.r0)
        let names: Vec<_> = route(&t, 0, 71, 1).iter().map(|&l| t.link_name(l)).collect();
        assert_eq!(names, ["inj n0 r1", "local g0.r0->g0.r3", "global g0.r3->g8.r0", "local g8.r0->g8.r3", "ej n71 r1"]);
    }

    #[test]
    fn errors_name_the_field() {
        let err = |s: TopologySpec, n: u32| Dragonfly::new(&s, n).err().expect("should fail").0;
        let e = err(spec(4, 4, 2, 2, 1), 33);
        assert!(e.contains("groups") && e.contains("need groups >= 5"), "{e}");
        assert!(err(spec(10, 4, 2, 2, 1), 20).contains("global_links_per_router"));
        assert!(err(spec(0, 4, 2, 2, 1), 20).contains("groups"));
        assert!(err(spec(9, 0, 2, 2, 1), 20).contains("routers_per_group"));
        assert!(err(spec(9, 4, 0, 2, 1), 20).contains("nodes_per_router"));
        assert!(err(spec(9, 4, 2, 0, 1), 20).contains("global_links_per_router"));
        assert!(err(spec(9, 4, 2, 2, 0), 20).contains("rails"));
        let mut s = spec(9, 4, 2, 2, 1);
        if let TopologySpec::Dragonfly { global_bw_bytes_per_s, .. } = &mut s {
            *global_bw_bytes_per_s = -1.0;
        }
        assert!(err(s, 20).contains("global_bw_bytes_per_s"));
    }
}

//! Folded-Clos fat-trees with 2 or 3 levels and a tapered leaf level.
//!
//! Structure (one plane; `rails` planes are independent copies):
//! * `leaves = ceil(nodes / nodes_per_leaf)` leaf switches; node `n` hangs off leaf `n / nodes_per_leaf`.
//! * each leaf has `up = ceil(nodes_per_leaf / taper)` uplinks.
//! * 2 levels: `up` spines; leaf uplink `j` goes to spine `j` (one cable from every leaf to every spine).
//! * 3 levels: leaves form pods of `leaves_per_pod` (the last pod may be partial); pod `p` has `up`
//!   spines, leaf uplink `j` goes to spine `(p, j)`; each spine has `leaves_per_pod` uplinks (as many as
//!   its down ports: the upper levels are non-blocking); uplink `m` of spine `(p, j)` goes to core
//!   `(j, m)`, so there are `up * leaves_per_pod` cores, each with one cable to spine `j` of every pod.
//!
//! Routing is d-mod-k up/down, going up only to the nearest common ancestor of source and destination:
//! at a leaf the uplink is `dst mod up` (dst = destination node index); at a spine the uplink is
//! `dst_leaf mod leaves_per_pod` (the destination's leaf index within its pod).  Both depend only on
//! the destination, so every destination has a single down path, and consecutive destinations spread
//! over all uplinks.
//!
//! Link layout inside plane `r` (plane base `r * plane_links`):
//! * `2n` injection of node `n`, `2n + 1` its ejection;
//! * `leaf_base + 2 * (leaf * up + j)` leaf → spine up, `+ 1` spine → leaf down;
//! * `spine_base + 2 * (spine * leaves_per_pod + m)` spine → core up, `+ 1` core → spine down, with
//!   `spine = pod * up + j`.
//!
//! Vertex ids (endpoints kept for link names and tests): NIC `(n, r)` is `n * rails + r`; switches of
//! plane `r` follow at `nodes * rails + r * switches_per_plane`: leaves, then spines, then cores.
use super::{check_bw, check_link_count, check_nonzero, LinkId, LinkSpec, Topology, TopologyError, TopologySpec};

pub struct FatTree {
    nodes: u32,
    rails: u32,
    levels: u32,
    nodes_per_leaf: u32,
    /// uplinks per leaf = spines per pod
    up: u32,
    taper_asked: f64,
    leaves: u32,
    /// leaves per pod; for 2 levels, all leaves (one pod)
    lpp: u32,
    pods: u32,
    spines: u32,
    cores: u32,
    plane_links: u32,
    leaf_base: u32,
    spine_base: u32,
    switches_per_plane: u32,
    links: Vec<LinkSpec>,
    /// (from, to) vertex of every link
    ends: Vec<(u32, u32)>,
}

const KIND: &str = "fat-tree";

impl FatTree {
    pub fn new(spec: &TopologySpec, nodes: u32) -> Result<Self, TopologyError> {
        let TopologySpec::FatTree {
            levels,
            nodes_per_leaf,
            leaves_per_pod,
            taper,
            link_bw_bytes_per_s: bw,
            hop_latency_ns: lat,
            rails,
        } = *spec
        else {
            return Err(TopologyError("not a fat-tree spec".into()));
        };
        if levels != 2 && levels != 3 {
            return Err(TopologyError(format!("{KIND}: levels must be 2 or 3 (got {levels})")));
        }
        check_nonzero(KIND, "nodes_per_leaf", nodes_per_leaf)?;
        check_nonzero(KIND, "rails", rails)?;
        check_nonzero(KIND, "node count", nodes)?;
        if levels == 3 {
            check_nonzero(KIND, "leaves_per_pod", leaves_per_pod)?;
        }
        if !(taper.is_finite() && taper >= 1.0) {
            return Err(TopologyError(format!("{KIND}: taper must be a finite number >= 1 (got {taper})")));
        }
        check_bw(KIND, "link_bw_bytes_per_s", bw)?;

        // ceil(nodes_per_leaf / taper) without being fooled by 18/1.5 = 12.000000000000002
        let ratio = nodes_per_leaf as f64 / taper;
        let up = if (ratio - ratio.round()).abs() < 1e-9 { ratio.round() } else { ratio.ceil() };
        let up = (up as u32).clamp(1, nodes_per_leaf);
        let leaves = nodes.div_ceil(nodes_per_leaf);
        let (lpp, pods) = if levels == 2 { (leaves, 1) } else { (leaves_per_pod, leaves.div_ceil(leaves_per_pod)) };
        // u64: pods x up and up x lpp may exceed u32 before the link count is checked
        let spines64 = if levels == 2 { up as u64 } else { pods as u64 * up as u64 };
        let cores64 = if levels == 2 { 0 } else { up as u64 * lpp as u64 };
        check_link_count(KIND, spines64.max(cores64))?;
        let (spines, cores) = (spines64 as u32, cores64 as u32);

        let nic_links = 2 * nodes as u64;
        let leaf_links = 2 * leaves as u64 * up as u64;
        let spine_links = if levels == 3 { 2 * spines as u64 * lpp as u64 } else { 0 };
        let plane_links = nic_links + leaf_links + spine_links;
        let total = check_link_count(KIND, plane_links * rails as u64)?;
        let switches_per_plane = leaves as u64 + spines as u64 + cores as u64;
        check_link_count(KIND, nodes as u64 * rails as u64 + switches_per_plane * rails as u64)
            .map_err(|_| TopologyError(format!("{KIND}: too many switches for 32-bit vertex ids")))?;
        let (plane_links, leaf_base, spine_base) = (plane_links as u32, nic_links as u32, (nic_links + leaf_links) as u32);
        let switches_per_plane = switches_per_plane as u32;

        let mut links = Vec::with_capacity(total as usize);
        let mut ends = Vec::with_capacity(total as usize);
        let hop = LinkSpec { bw_bytes_per_s: bw, latency_ns: lat };
        let last = LinkSpec { bw_bytes_per_s: bw, latency_ns: 0 };
        for r in 0..rails {
            let sw0 = nodes * rails + r * switches_per_plane;
            let leaf_v = |l: u32| sw0 + l;
            let spine_v = |s: u32| sw0 + leaves + s;
            let core_v = |c: u32| sw0 + leaves + spines + c;
            for n in 0..nodes {
                let (nic, leaf) = (n * rails + r, leaf_v(n / nodes_per_leaf));
                links.push(hop);
                ends.push((nic, leaf));
                links.push(last);
                ends.push((leaf, nic));
            }
            debug_assert_eq!(links.len() as u32, r * plane_links + leaf_base);
            for l in 0..leaves {
                let pod = l / lpp;
                for j in 0..up {
                    let s = spine_v(pod * up + j);
                    links.push(hop);
                    ends.push((leaf_v(l), s));
                    links.push(hop);
                    ends.push((s, leaf_v(l)));
                }
            }
            debug_assert_eq!(links.len() as u32, r * plane_links + spine_base);
            if levels == 3 {
                for s in 0..spines {
                    let j = s % up;
                    for m in 0..lpp {
                        let c = core_v(j * lpp + m);
                        links.push(hop);
                        ends.push((spine_v(s), c));
                        links.push(hop);
                        ends.push((c, spine_v(s)));
                    }
                }
            }
            debug_assert_eq!(links.len() as u32, (r + 1) * plane_links);
        }
        Ok(FatTree {
            nodes,
            rails,
            levels,
            nodes_per_leaf,
            up,
            taper_asked: taper,
            leaves,
            lpp,
            pods,
            spines,
            cores,
            plane_links,
            leaf_base,
            spine_base,
            switches_per_plane,
            links,
            ends,
        })
    }

    /// Uplinks per leaf switch (= `ceil(nodes_per_leaf / taper)`).
    pub fn uplinks_per_leaf(&self) -> u32 {
        self.up
    }

    pub fn num_leaves(&self) -> u32 {
        self.leaves
    }

    fn vertex_name(&self, v: u32) -> String {
        let nics = self.nodes * self.rails;
        if v < nics {
            return format!("n{} r{}", v / self.rails, v % self.rails);
        }
        let local = (v - nics) % self.switches_per_plane;
        if local < self.leaves {
            format!("leaf{local}")
        } else if local < self.leaves + self.spines {
            format!("spine{}", local - self.leaves)
        } else {
            format!("core{}", local - self.leaves - self.spines)
        }
    }

    #[cfg(test)]
    fn ends(&self, id: LinkId) -> (u32, u32) {
        self.ends[id as usize]
    }
}

impl Topology for FatTree {
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
        let nics = self.nodes * self.rails;
        if a < nics {
            format!("inj {}", self.vertex_name(a))
        } else if b < nics {
            format!("ej {}", self.vertex_name(b))
        } else {
            format!("{}->{} r{}", self.vertex_name(a), self.vertex_name(b), id / self.plane_links)
        }
    }
    fn route(&self, src: u32, dst: u32, rail: u32, out: &mut Vec<LinkId>) {
        debug_assert!(src < self.nodes && dst < self.nodes && rail < self.rails);
        if src == dst {
            return;
        }
        let pb = rail * self.plane_links;
        out.push(pb + 2 * src);
        let (ls, ld) = (src / self.nodes_per_leaf, dst / self.nodes_per_leaf);
        if ls != ld {
            let j = dst % self.up;
            let leaf_up = |l: u32| pb + self.leaf_base + 2 * (l * self.up + j);
            let (ps, pd) = (ls / self.lpp, ld / self.lpp);
            out.push(leaf_up(ls));
            if ps != pd {
                let m = ld % self.lpp;
                let spine_up = |p: u32| pb + self.spine_base + 2 * ((p * self.up + j) * self.lpp + m);
                out.push(spine_up(ps));
                out.push(spine_up(pd) + 1);
            }
            out.push(leaf_up(ld) + 1);
        }
        out.push(pb + 2 * dst + 1);
    }
    fn describe(&self) -> String {
        let taper = self.nodes_per_leaf as f64 / self.up as f64;
        let upper = if self.levels == 2 {
            format!("{} spines", self.spines)
        } else {
            format!(
                "{} pods x {} leaves, {} spines ({} uplinks each), {} cores",
                self.pods, self.lpp, self.spines, self.lpp, self.cores
            )
        };
        format!(
            "fat-tree: {} levels, {} nodes x {} rails (one plane per rail); per plane {} leaves ({} nodes, {} uplinks each, \
             taper {:.3}:1 asked {}:1), {}; {} links per plane, {} in all",
            self.levels,
            self.nodes,
            self.rails,
            self.leaves,
            self.nodes_per_leaf,
            self.up,
            taper,
            self.taper_asked,
            upper,
            self.plane_links,
            self.links.len()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{check_walk, Rng};
    use super::*;
    use std::collections::HashSet;

    fn spec(levels: u32, npl: u32, lpp: u32, taper: f64, rails: u32) -> TopologySpec {
        TopologySpec::FatTree {
            levels,
            nodes_per_leaf: npl,
            leaves_per_pod: lpp,
            taper,
            link_bw_bytes_per_s: 12.5e9,
            hop_latency_ns: 100,
            rails,
        }
    }

    fn route(t: &FatTree, s: u32, d: u32, r: u32) -> Vec<LinkId> {
        let mut p = Vec::new();
        t.route(s, d, r, &mut p);
        p
    }

    /// Expected hop count from the tree shape alone (independent of the route code).
    fn expected_len(npl: u32, lpp: u32, levels: u32, s: u32, d: u32) -> usize {
        let (ls, ld) = (s / npl, d / npl);
        if s == d {
            0
        } else if ls == ld {
            2
        } else if levels == 2 || ls / lpp == ld / lpp {
            4
        } else {
            6
        }
    }

    fn check_all_walks(t: &FatTree, npl: u32, lpp: u32, levels: u32, pairs: &[(u32, u32)]) {
        let nics = t.nodes * t.rails;
        for r in 0..t.rails {
            for &(s, d) in pairs {
                let p = route(t, s, d, r);
                assert_eq!(p.len(), expected_len(npl, lpp, levels, s, d), "length {s}->{d} rail {r}: {p:?}");
                if s == d {
                    continue;
                }
                check_walk(&p, s * t.rails + r, d * t.rails + r, nics, &|l| t.ends(l))
                    .unwrap_or_else(|e| panic!("{s}->{d} rail {r}: {e}"));
                // latency = switches traversed x hop latency
                let lat: u64 = p.iter().map(|&l| t.links()[l as usize].latency_ns).sum();
                assert_eq!(lat, (p.len() as u64 - 1) * 100);
            }
        }
    }

    #[test]
    fn two_level_all_pairs_are_walks() {
        // 4 nodes per leaf, 2 uplinks, 23 nodes -> 6 leaves (last one partial), 2 rails
        let t = FatTree::new(&spec(2, 4, 0, 2.0, 2), 23).unwrap();
        assert_eq!((t.leaves, t.up, t.spines, t.cores), (6, 2, 2, 0));
        assert_eq!(t.links().len(), 2 * (2 * 23 + 2 * 6 * 2));
        let pairs: Vec<_> = (0..23).flat_map(|s| (0..23).map(move |d| (s, d))).collect();
        check_all_walks(&t, 4, 6, 2, &pairs);
    }

    #[test]
    fn three_level_all_pairs_are_walks() {
        // 3 nodes per leaf, taper 1.5 -> 2 uplinks, 3 leaves per pod, 40 nodes -> 14 leaves, 5 pods
        let t = FatTree::new(&spec(3, 3, 3, 1.5, 2), 40).unwrap();
        assert_eq!((t.leaves, t.up, t.pods, t.spines, t.cores), (14, 2, 5, 10, 6));
        let pairs: Vec<_> = (0..40).flat_map(|s| (0..40).map(move |d| (s, d))).collect();
        check_all_walks(&t, 3, 3, 3, &pairs);
        // some pair crosses pods with 6 links
        assert_eq!(route(&t, 0, 39, 1).len(), 6);
    }

    #[test]
    fn random_pairs_lassen_are_walks() {
        let t = FatTree::new(&spec(3, 18, 9, 1.5, 2), 810).unwrap();
        let mut rng = Rng(7);
        let pairs: Vec<_> = (0..5000).map(|_| (rng.below(810), rng.below(810))).collect();
        check_all_walks(&t, 18, 9, 3, &pairs);
    }

    #[test]
    fn lassen_builds_and_describes() {
        let t = FatTree::new(&spec(3, 18, 9, 1.5, 1), 810).unwrap();
        let d = t.describe();
        assert!(d.contains("45 leaves"), "{d}");
        assert!(d.contains("12 uplinks"), "{d}");
        assert!(d.contains("taper 1.500:1"), "{d}");
        assert_eq!((t.pods, t.spines, t.cores), (5, 60, 108));
        // 810 NICs x 2 + 45 leaves x 12 x 2 + 60 spines x 9 x 2
        assert_eq!(t.links().len(), 1620 + 1080 + 1080);
        assert!(t.links().iter().all(|l| l.bw_bytes_per_s == 12.5e9));
        // also through the generic builder
        let b = super::super::build(&spec(3, 18, 9, 1.5, 1), 810).unwrap();
        assert_eq!(b.kind(), "fat-tree");
        assert_eq!(b.num_nodes(), 810);
    }

    #[test]
    fn taper_gives_twelve_uplinks_all_used() {
        let t = FatTree::new(&spec(2, 18, 0, 1.5, 1), 810).unwrap();
        assert_eq!(t.uplinks_per_leaf(), 12);
        // count leaf 0's uplinks from the wiring itself
        let leaf0 = t.nodes * t.rails; // vertex of leaf 0, plane 0
        let wired_up: HashSet<LinkId> = (0..t.links().len() as u32)
            .filter(|&l| t.ends(l).0 == leaf0 && t.ends(l).1 >= leaf0 + t.leaves)
            .collect();
        assert_eq!(wired_up.len(), 12);
        // the 18 nodes of leaf 0 each send to a node on another leaf (shift by one leaf)
        let mut used = HashSet::new();
        for s in 0..18 {
            let p = route(&t, s, s + 18, 0);
            assert!(wired_up.contains(&p[1]), "{}", t.link_name(p[1]));
            used.insert(p[1]);
        }
        assert_eq!(used.len(), 12, "18 flows should spread over all 12 uplinks");
        // and with a scattered pattern (node i -> leaf i+1, position (5 i) mod 18)
        used.clear();
        for s in 0..18 {
            used.insert(route(&t, s, (s + 1) * 18 + (5 * s) % 18, 0)[1]);
        }
        assert!(used.len() >= 9, "only {} uplinks used", used.len());
        // 18 flows over 12 uplinks: no uplink carries more than ceil(18/12) = 2 of the shift flows
        let mut load = std::collections::HashMap::new();
        for s in 0..18 {
            *load.entry(route(&t, s, s + 18, 0)[1]).or_insert(0) += 1;
        }
        assert!(load.values().all(|&c| c <= 2), "{load:?}");
    }

    #[test]
    fn dmodk_spreads_destinations_over_uplinks() {
        let t = FatTree::new(&spec(3, 18, 9, 1.5, 1), 810).unwrap();
        // from node 0, consecutive destinations on leaves 1 and 2 (crossing a leaf boundary)
        let ups: HashSet<_> = (30..42).map(|d| route(&t, 0, d, 0)[1]).collect();
        assert_eq!(ups.len(), 12);
        // all destinations outside leaf 0: each of the 12 uplinks serves 792/12 = 66 of them
        let mut count = std::collections::HashMap::new();
        for d in 18..810 {
            *count.entry(route(&t, 0, d, 0)[1]).or_insert(0u32) += 1;
        }
        assert_eq!(count.len(), 12);
        assert!(count.values().all(|&c| c == 66), "{count:?}");
        // at the spine level, destinations in another pod spread over the 9 spine uplinks by leaf
        let spine_ups: HashSet<_> = (1..5).flat_map(|pod| (0..9).map(move |l| (pod * 9 + l) * 18)).map(|d| route(&t, 0, d, 0)[2]).collect();
        assert!(spine_ups.len() >= 9, "{}", spine_ups.len());
        // the uplink depends on the destination only: every node of leaf 3 reaches node d via spine d mod 12
        for s in 54..72 {
            let p = route(&t, s, 100, 0);
            assert_eq!(t.link_name(p[1]), format!("leaf3->spine{} r0", 100 % 12));
        }
    }

    #[test]
    fn routes_are_deterministic_and_planes_independent() {
        let t = FatTree::new(&spec(3, 18, 9, 1.5, 2), 810).unwrap();
        let mut rng = Rng(3);
        for _ in 0..1000 {
            let (s, d) = (rng.below(810), rng.below(810));
            assert_eq!(route(&t, s, d, 0), route(&t, s, d, 0));
            assert_eq!(route(&t, s, d, 1), route(&t, s, d, 1));
            let (a, b) = (route(&t, s, d, 0), route(&t, s, d, 1));
            let a: HashSet<_> = a.into_iter().collect();
            assert!(b.iter().all(|l| !a.contains(l)), "rails share a link");
        }
        assert!(route(&t, 5, 5, 1).is_empty());
    }

    #[test]
    fn link_names() {
        let t = FatTree::new(&spec(3, 18, 9, 1.5, 2), 810).unwrap();
        let p = route(&t, 0, 809, 1);
        let names: Vec<_> = p.iter().map(|&l| t.link_name(l)).collect();
        // 809 = leaf 44 (pod 4, leaf 8 in pod); 809 mod 12 = 5
        assert_eq!(
            names,
            ["inj n0 r1", "leaf0->spine5 r1", "spine5->core53 r1", "core53->spine53 r1", "spine53->leaf44 r1", "ej n809 r1"]
        );
    }

    #[test]
    fn errors_name_the_field() {
        let err = |s: TopologySpec, n: u32| FatTree::new(&s, n).err().expect("should fail").0;
        assert!(err(spec(4, 18, 9, 1.5, 1), 10).contains("levels"));
        assert!(err(spec(3, 0, 9, 1.5, 1), 10).contains("nodes_per_leaf"));
        assert!(err(spec(3, 18, 0, 1.5, 1), 10).contains("leaves_per_pod"));
        assert!(err(spec(3, 18, 9, 0.5, 1), 10).contains("taper"));
        assert!(err(spec(3, 18, 9, f64::NAN, 1), 10).contains("taper"));
        assert!(err(spec(3, 18, 9, 1.5, 0), 10).contains("rails"));
        assert!(err(spec(3, 18, 9, 1.5, 1), 0).contains("node count"));
        let mut s = spec(2, 18, 0, 1.0, 1);
        if let TopologySpec::FatTree { link_bw_bytes_per_s, .. } = &mut s {
            *link_bw_bytes_per_s = 0.0;
        }
        assert!(err(s, 10).contains("link_bw_bytes_per_s"));
        // 2 levels ignore leaves_per_pod
        assert!(FatTree::new(&spec(2, 18, 0, 1.0, 1), 100).is_ok());
        // huge taper still leaves one uplink
        assert_eq!(FatTree::new(&spec(2, 18, 0, 100.0, 1), 100).unwrap().up, 1);
    }

    fn peak_rss_kib() -> u64 {
        std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| s.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| l.split_whitespace().nth(1)?.parse().ok()))
            .unwrap_or(0)
    }

    /// `cargo test --release -p g2g-net fat_tree_262144 -- --ignored --nocapture`
    #[test]
    #[ignore]
    fn fat_tree_262144_nodes_builds_fast() {
        for (levels, npl, lpp, taper, rails) in [(3, 18, 18, 1.5, 1), (3, 18, 18, 1.5, 2), (3, 32, 32, 1.0, 2), (2, 32, 0, 1.0, 1)] {
            let rss0 = peak_rss_kib();
            let t0 = std::time::Instant::now();
            let t = FatTree::new(&spec(levels, npl, lpp, taper, rails), 262_144).unwrap();
            let built = t0.elapsed();
            let mut rng = Rng(1);
            let mut p = Vec::with_capacity(8);
            let t1 = std::time::Instant::now();
            let mut total = 0usize;
            for i in 0..1_000_000u32 {
                p.clear();
                t.route(rng.below(262_144), rng.below(262_144), i % rails, &mut p);
                total += p.len();
            }
            let routed = t1.elapsed();
            let bytes = t.links.capacity() * std::mem::size_of::<LinkSpec>() + t.ends.capacity() * 8;
            println!(
                "{}\n  build {:.3} s, {:.1} MiB of link tables, peak RSS {} -> {} MiB; 1e6 routes {:.3} s (mean {:.2} links)",
                t.describe(),
                built.as_secs_f64(),
                bytes as f64 / 1048576.0,
                rss0 / 1024,
                peak_rss_kib() / 1024,
                routed.as_secs_f64(),
                total as f64 / 1e6
            );
            assert!(built.as_secs_f64() < 10.0);
        }
    }
}

//! One ideal switch.
use super::{check_bw, check_link_count, check_nonzero, LinkId, LinkSpec, Topology, TopologyError, TopologySpec};

pub struct Crossbar {
    nodes: u32,
    rails: u32,
    links: Vec<LinkSpec>,
}

impl Crossbar {
    pub fn new(spec: &TopologySpec, nodes: u32) -> Result<Self, TopologyError> {
        let TopologySpec::Crossbar { link_bw_bytes_per_s, hop_latency_ns, rails } = *spec else {
            return Err(TopologyError("not a crossbar spec".into()));
        };
        check_nonzero("crossbar", "rails", rails)?;
        check_nonzero("crossbar", "node count", nodes)?;
        check_bw("crossbar", "link_bw_bytes_per_s", link_bw_bytes_per_s)?;
        let count = check_link_count("crossbar", nodes as u64 * rails as u64 * 2)?;
        let mut links = Vec::with_capacity(count as usize);
        for _ in 0..nodes as u64 * rails as u64 {
            links.push(LinkSpec { bw_bytes_per_s: link_bw_bytes_per_s, latency_ns: hop_latency_ns });
            links.push(LinkSpec { bw_bytes_per_s: link_bw_bytes_per_s, latency_ns: 0 });
        }
        Ok(Crossbar { nodes, rails, links })
    }
}

impl Topology for Crossbar {
    fn kind(&self) -> &'static str {
        "crossbar"
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
        assert!((id as usize) < self.links.len(), "crossbar: link {id} out of range");
        let nic = id / 2;
        let (n, r) = (nic / self.rails, nic % self.rails);
        if id & 1 == 0 {
            format!("inj n{n} r{r}")
        } else {
            format!("ej n{n} r{r}")
        }
    }
    fn route(&self, src: u32, dst: u32, rail: u32, out: &mut Vec<LinkId>) {
        debug_assert!(src < self.nodes && dst < self.nodes && rail < self.rails);
        if src == dst {
            return;
        }
        out.push((src * self.rails + rail) * 2);
        out.push((dst * self.rails + rail) * 2 + 1);
    }
    fn describe(&self) -> String {
        format!("crossbar: {} nodes x {} rails, one ideal switch", self.nodes, self.rails)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crossbar_routes_and_names() {
        let spec = TopologySpec::Crossbar { link_bw_bytes_per_s: 1e9, hop_latency_ns: 100, rails: 2 };
        let t = Crossbar::new(&spec, 5).unwrap();
        assert_eq!(t.links().len(), 20);
        let mut p = Vec::new();
        t.route(1, 3, 1, &mut p);
        assert_eq!(p.len(), 2);
        assert_eq!(t.link_name(p[0]), "inj n1 r1");
        assert_eq!(t.link_name(p[1]), "ej n3 r1");
        assert_eq!(t.links()[p[0] as usize].latency_ns + t.links()[p[1] as usize].latency_ns, 100);
        p.clear();
        t.route(2, 2, 0, &mut p);
        assert!(p.is_empty());
        let bad = TopologySpec::Crossbar { link_bw_bytes_per_s: 1e9, hop_latency_ns: 100, rails: 0 };
        assert!(Crossbar::new(&bad, 5).err().unwrap().0.contains("rails"));
    }
}

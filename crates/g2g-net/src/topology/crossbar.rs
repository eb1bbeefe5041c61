//! One ideal switch.
use super::{LinkId, LinkSpec, Topology, TopologyError, TopologySpec};

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
        if rails == 0 || !(link_bw_bytes_per_s > 0.0) {
            return Err(TopologyError("crossbar needs rails >= 1 and a positive link bandwidth".into()));
        }
        let mut links = Vec::with_capacity((nodes * rails * 2) as usize);
        for n in 0..nodes {
            for r in 0..rails {
                links.push(LinkSpec { bw_bytes_per_s: link_bw_bytes_per_s, latency_ns: hop_latency_ns, name: format!("inj n{n} r{r}") });
                links.push(LinkSpec { bw_bytes_per_s: link_bw_bytes_per_s, latency_ns: 0, name: format!("ej n{n} r{r}") });
            }
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
    fn route(&self, src: u32, dst: u32, rail: u32, out: &mut Vec<LinkId>) {
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

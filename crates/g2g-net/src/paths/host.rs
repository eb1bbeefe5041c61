//! Model `host` (docs/models/host.md): host memory to host memory.
use super::{DataPath, Endpoint, Links, PathQuery, Plan, Stage};
use crate::machine::Machine;

/// Host memory to host memory: shared memory inside a node, the NIC and network across nodes.
pub struct HostPath;
impl HostPath {
    /// The latency of the host path (that of `links_latency`): control messages (envelope, RTS,
    /// CTS) between two ranks.  Across nodes, from the route cache (the message's own plan has
    /// usually just looked up the same route).
    pub fn latency(m: &Machine, src: Endpoint, dst: Endpoint) -> u64 {
        if src.node == dst.node || m.cfg.inter_socket.is_some() {
            let mut links = Links::new();
            HostPath::links_latency(m, src, dst, &mut links)
        } else {
            m.net_latency(src.node, dst.node, m.cfg.nic_of_gpu(src.gpu)) + m.cfg.nic_latency_ns as u64
        }
    }

    /// The host path as one stage (no delay).
    pub fn stage(m: &Machine, src: Endpoint, dst: Endpoint) -> Stage {
        let mut links = Links::new();
        let latency_ns = HostPath::links_latency(m, src, dst, &mut links);
        Stage { delay_ns: 0, links, latency_ns }
    }

    /// Appends the links of the host path to `links`; returns the latency they add: the links'
    /// latencies (computed as `Machine::path_latency` would) and the NIC's, across nodes.
    pub fn links_latency(m: &Machine, src: Endpoint, dst: Endpoint, links: &mut Links) -> u64 {
        if src.node == dst.node {
            let at = links.len();
            if m.cfg.shm_rank_bw.is_some() {
                // per-rank ports: the sender's out port, the receiver's in port (its copy), then the
                // node's memory-bandwidth cap
                links.push(m.shm_out(src.node, src.gpu));
                links.push(m.shm_in(dst.node, dst.gpu));
            }
            links.push(m.shm(src.node));
            // ranks on different sockets: the copy crosses the link between them (X-Bus, UPI)
            m.cross_sockets(src.node, m.socket_of(src.gpu), m.socket_of(dst.gpu), links);
            m.path_latency(&links[at..])
        } else {
            let rail = m.cfg.nic_of_gpu(src.gpu);
            let at = links.len();
            // the sender's own port to its NIC (node.nic.rank_bw: one process's injection rate)
            m.nic_rank_port(src.node, src.gpu, true, links);
            // from the sender's socket to its NIC's, and from the receiving NIC's socket to the
            // receiver's (the same rail on both nodes)
            m.cross_sockets(src.node, m.socket_of(src.gpu), m.nic_socket_of(src.gpu), links);
            let sock_in = m.cfg.socket_of_nic(rail).min(m.cfg.sockets.saturating_sub(1));
            let mut lat = m.path_latency(&links[at..]);
            lat += m.net_route_latency(src.node, dst.node, rail, links) + m.cfg.nic_latency_ns as u64;
            let at2 = links.len();
            m.cross_sockets(dst.node, sock_in, m.socket_of(dst.gpu), links);
            m.nic_rank_port(dst.node, dst.gpu, false, links);
            lat + m.path_latency(&links[at2..])
        }
    }
}
impl DataPath for HostPath {
    /// Every message the others leave: host buffers on both sides.
    fn carries(&self, _m: &Machine, _q: &PathQuery) -> bool {
        true
    }
    fn message_path(&self) -> &'static dyn DataPath {
        &super::HOST
    }
    fn name(&self) -> &'static str {
        "host"
    }
    fn summary(&self) -> &'static str {
        "host buffer to host buffer: shared memory inside a node, NIC + network across nodes"
    }
    fn params(&self) -> &'static [&'static str] {
        &[
            "node.host.shm_bw",
            "node.host.shm_latency",
            "node.host.shm_rank_bw",
            "node.host.shm_rank_out_bw",
            "node.sockets",
            "node.gpu_socket",
            "node.inter_socket.*",
            "node.nic.* (rank_bw: each rank's ports to its NIC)",
            "network.*",
            "mpi.factors (path host / hostcopy)",
        ]
    }
    fn plan_into(&self, m: &Machine, src: Endpoint, dst: Endpoint, bytes: u64, out: &mut Plan) {
        let s = out.reset_single("host", 0, bytes);
        s.latency_ns = HostPath::links_latency(m, src, dst, &mut s.links);
    }
}

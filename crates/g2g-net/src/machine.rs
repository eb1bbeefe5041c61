//! A built machine: ranks placed on nodes and GPUs, and every link of every node and of the network
//! registered in one [`FlowNet`].
//!
//! Per node, links are laid out as (G = GPUs per node):
//! `pcie_up[G] pcie_down[G] ce_d2h[G] ce_h2d[G] nvlink[..] shm[1] shm_out[G] shm_in[G]
//! xsock[S(S-1)] nv_out[G] nv_in[G] ce[G x E] nic_out[G] nic_in[G]`, where
//! `pcie_up` carries GPU→host traffic (the GPU's link to its socket: PCIe or NVLink to the CPU),
//! `ce_*` are the copy engines that cap cudaMemcpy speed when `gpu.copy_engines` is not set, the
//! NVLink block depends on the NVLink kind (ordered pairs, switch ports, or listed pairs), `shm` is
//! the node's shared-memory link (`node.host.shm_bw`) and `shm_out` / `shm_in` the per-rank
//! shared-memory ports (`node.host.shm_rank_bw`, used only when it is set), `xsock` the links
//! between sockets per ordered pair (`[node.inter_socket]`, S sockets), `nv_out` / `nv_in` each
//! GPU's aggregate NVLink ports (`node.nvlink.gpu_bw`, only when set) and `ce` the E copy engines
//! of each GPU (`gpu.copy_engines`, only when set), `nic_out` / `nic_in` each rank's ports to its
//! NIC (`node.nic.rank_bw`, only when set).  Network links follow all nodes.
use crate::config::{MachineConfig, NvlinkKind};
use crate::lmm::FlowNet;
use crate::topology::{self, LinkId, Links, Topology};

/// Where each rank runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Placement {
    pub node_of: Vec<u32>,
    pub gpu_of: Vec<u32>,
    pub nodes: u32,
    pub gpus_per_node: u32,
}

impl Placement {
    /// Ranks fill node 0's GPUs, then node 1's, ... (the default of most launchers).
    pub fn linear(nranks: u32, gpn: u32) -> Placement {
        let gpn = gpn.max(1);
        Placement {
            node_of: (0..nranks).map(|r| r / gpn).collect(),
            gpu_of: (0..nranks).map(|r| r % gpn).collect(),
            nodes: nranks.div_ceil(gpn).max(1),
            gpus_per_node: gpn,
        }
    }
    /// Rank r on node r % nodes (cyclic, as `--map-by node`).
    pub fn round_robin(nranks: u32, gpn: u32) -> Placement {
        let gpn = gpn.max(1);
        let nodes = nranks.div_ceil(gpn).max(1);
        Placement {
            node_of: (0..nranks).map(|r| r % nodes).collect(),
            gpu_of: (0..nranks).map(|r| r / nodes).collect(),
            nodes,
            gpus_per_node: gpn,
        }
    }
    /// Explicit node per rank; GPUs assigned in rank order within each node.
    pub fn from_nodes(node_of: Vec<u32>, gpn: u32) -> Result<Placement, String> {
        if let Some((r, &n)) = node_of.iter().enumerate().find(|(_, &n)| n >= MAX_NODES) {
            return Err(format!("mapping puts rank {r} on node {n}; node indices must be below {MAX_NODES}"));
        }
        let nodes = node_of.iter().copied().max().map(|m| m + 1).unwrap_or(1);
        let mut used = vec![0u32; nodes as usize];
        let mut gpu_of = Vec::with_capacity(node_of.len());
        for (r, &n) in node_of.iter().enumerate() {
            let g = used[n as usize];
            if g >= gpn {
                return Err(format!("mapping puts more than {gpn} ranks on node {n} (rank {r})"));
            }
            used[n as usize] += 1;
            gpu_of.push(g);
        }
        Ok(Placement { node_of, gpu_of, nodes, gpus_per_node: gpn })
    }
}

/// Most nodes a placement may use (a mapping's node indices stay below it).
pub const MAX_NODES: u32 = 1 << 20;
/// Most GPUs (ranks) per node, from the machine file or `--gpus-per-node`.
pub const MAX_GPUS_PER_NODE: u32 = crate::schema::MAX_GPUS_PER_NODE as u32;
/// Most links a built machine may have (nodes' links and the network's): a larger one is refused
/// before anything is allocated, with the memory it would need.
pub const MAX_LINKS: u64 = crate::topology::MAX_LINKS;

pub struct Machine {
    pub cfg: MachineConfig,
    pub place: Placement,
    pub net: FlowNet,
    /// latency of each link in ns
    pub latency: Vec<u64>,
    pub topo: Box<dyn Topology>,
    stride: u32,
    nv_off: u32,
    shm_off: u32,
    /// first inter-socket link of a node (S(S-1) of them)
    xs_off: u32,
    /// first aggregate NVLink port (2G of them when `node.nvlink.gpu_bw` is set)
    nvg_off: u32,
    /// first copy engine (G x E when `gpu.copy_engines` is set)
    ce_off: u32,
    /// copy engines per GPU (0: the model without engines, `ce_d2h` / `ce_h2d`)
    ce_n: u32,
    /// first per-rank NIC port (2G of them when `node.nic.rank_bw` is set, else `stride`)
    nr_off: u32,
    /// next copy engine of each GPU (round robin), by node x G + gpu
    ce_next: Vec<std::cell::Cell<u32>>,
    topo_base: LinkId,
    /// network routes with their latency by (source node, destination node, rail)
    routes: std::cell::RefCell<RouteCache>,
    /// the network's rails (planes)
    rails: u32,
}

/// Longest route the route cache keeps (fat-tree: 6 links; longer torus routes are recomputed).
const ROUTE_MAX: usize = 8;
/// Most slots of the route cache (a power of two).
const ROUTE_SLOTS: usize = 1 << 16;

/// One cached route: its key, length, links (as `Machine` link ids) and summed link latency.
#[derive(Clone, Copy)]
struct RouteEntry {
    key: u64,
    latency_ns: u64,
    len: u32,
    links: [LinkId; ROUTE_MAX],
}

/// Routes between NICs, cached: a trace sends many messages between the same nodes, and a route
/// costs divisions, a virtual call and the latency sum.  Two-way sets indexed by a multiplicative
/// hash of the key (the newest entry first); sized by nodes, at most `ROUTE_SLOTS`.
#[derive(Default)]
struct RouteCache {
    slots: Vec<RouteEntry>,
    scratch: Vec<LinkId>,
}

const NO_KEY: u64 = u64::MAX;

impl Machine {
    pub fn build(cfg: MachineConfig, place: Placement) -> Result<Machine, String> {
        if place.gpus_per_node > cfg.gpus_per_node && place.gpus_per_node != cfg.gpus_per_node {
            // a what-if may ask for more GPUs per node than the preset has: the node grows
        }
        let g = place.gpus_per_node;
        if g == 0 || g > MAX_GPUS_PER_NODE {
            return Err(format!("{g} GPUs per node is outside 1..={MAX_GPUS_PER_NODE}"));
        }
        if place.nodes > MAX_NODES {
            return Err(format!("the placement uses {} nodes; at most {MAX_NODES} can be simulated", place.nodes));
        }
        let mut cfg = cfg;
        cfg.gpus_per_node = g;
        let nv_links = match &cfg.nvlink {
            NvlinkKind::None => 0,
            NvlinkKind::AllToAll => g * g.saturating_sub(1),
            NvlinkKind::Switch => 2 * g,
            NvlinkKind::Pairs(p) => 2 * p.len() as u32,
        };
        let nv_off = 4 * g;
        let shm_off = nv_off + nv_links;
        let s_n = cfg.sockets.max(1);
        let xs_off = shm_off + 1 + 2 * g;
        let xs_links = if cfg.inter_socket.is_some() { s_n * (s_n - 1) } else { 0 };
        let nvg_off = xs_off + xs_links;
        let nvg_links = if cfg.nvlink_gpu_bw.is_some() && !matches!(cfg.nvlink, NvlinkKind::None) { 2 * g } else { 0 };
        let ce_off = nvg_off + nvg_links;
        let ce_n = cfg.copy_engines.unwrap_or(0);
        let nr_off = ce_off + g * ce_n;
        let nr_links = if cfg.nic_rank_bw.is_some() { 2 * g } else { 0 };
        let stride = nr_off + nr_links;
        let node_links = stride as u64 * place.nodes as u64;
        if node_links > MAX_LINKS {
            return Err(crate::topology::too_many_links("the nodes", node_links));
        }
        let topo = topology::build(&cfg.network, place.nodes).map_err(|e| format!("network: {e}"))?;
        if topo.rails() < cfg.nic_count.min(topo.rails()) {
            return Err("network has fewer rails than NICs".into());
        }
        let mut net = FlowNet::new();
        net.sharing = cfg.sharing;
        let total = stride as usize * place.nodes as usize + topo.links().len();
        if total as u64 > MAX_LINKS {
            return Err(crate::topology::too_many_links("the machine", total as u64));
        }
        let mut latency = Vec::with_capacity(total);
        net.reserve_links(total);
        let copy_bw = cfg.copy_bw();
        for _n in 0..place.nodes {
            for _ in 0..2 * g {
                net.add_link(cfg.pcie_bw);
                latency.push(cfg.pcie_latency_ns as u64);
            }
            for _ in 0..2 * g {
                net.add_link(copy_bw);
                latency.push(0);
            }
            match &cfg.nvlink {
                NvlinkKind::None => {}
                NvlinkKind::AllToAll | NvlinkKind::Switch => {
                    for _ in 0..nv_links {
                        net.add_link(cfg.nvlink_bw);
                        latency.push(cfg.nvlink_latency_ns as u64);
                    }
                }
                NvlinkKind::Pairs(p) => {
                    for &(_, _, bw) in p {
                        for _ in 0..2 {
                            net.add_link(bw);
                            latency.push(cfg.nvlink_latency_ns as u64);
                        }
                    }
                }
            }
            net.add_link(cfg.shm_bw);
            latency.push(cfg.shm_latency_ns as u64);
            let rank_in = cfg.shm_rank_bw.unwrap_or(cfg.shm_bw);
            let rank_out = cfg.shm_rank_out_bw.unwrap_or(rank_in);
            for _ in 0..g {
                net.add_link(rank_out);
                latency.push(0);
            }
            for _ in 0..g {
                net.add_link(rank_in);
                latency.push(0);
            }
            if let Some(x) = &cfg.inter_socket {
                for _ in 0..xs_links {
                    net.add_link(x.bw_bytes_per_s);
                    latency.push(x.latency_ns.round() as u64);
                }
            }
            for _ in 0..nvg_links {
                net.add_link(cfg.nvlink_gpu_bw.unwrap_or(cfg.nvlink_bw));
                latency.push(0);
            }
            let ce_bw = cfg.copy_engine_bw.unwrap_or(copy_bw);
            for _ in 0..g * ce_n {
                net.add_link(ce_bw);
                latency.push(0);
            }
            if let Some(bw) = cfg.nic_rank_bw {
                for _ in 0..nr_links {
                    net.add_link(bw);
                    latency.push(0);
                }
            }
        }
        let topo_base = net.num_links() as LinkId;
        for l in topo.links() {
            net.add_link(l.bw_bytes_per_s);
            latency.push(l.latency_ns);
        }
        let rails = topo.rails();
        let ce_next = if ce_n > 0 {
            (0..place.nodes as usize * g as usize).map(|_| std::cell::Cell::new(0)).collect()
        } else {
            Vec::new()
        };
        Ok(Machine {
            cfg,
            place,
            net,
            latency,
            topo,
            stride,
            nv_off,
            shm_off,
            xs_off,
            nvg_off,
            ce_off,
            ce_n,
            nr_off,
            ce_next,
            topo_base,
            routes: Default::default(),
            rails,
        })
    }

    #[inline]
    fn base(&self, node: u32) -> LinkId {
        node * self.stride
    }
    pub fn pcie_up(&self, node: u32, gpu: u32) -> LinkId {
        self.base(node) + gpu
    }
    pub fn pcie_down(&self, node: u32, gpu: u32) -> LinkId {
        self.base(node) + self.place.gpus_per_node + gpu
    }
    pub fn ce_d2h(&self, node: u32, gpu: u32) -> LinkId {
        self.base(node) + 2 * self.place.gpus_per_node + gpu
    }
    pub fn ce_h2d(&self, node: u32, gpu: u32) -> LinkId {
        self.base(node) + 3 * self.place.gpus_per_node + gpu
    }
    pub fn shm(&self, node: u32) -> LinkId {
        self.base(node) + self.shm_off
    }
    /// Shared-memory out port of the rank on GPU slot `gpu` (send side).
    pub fn shm_out(&self, node: u32, gpu: u32) -> LinkId {
        self.base(node) + self.shm_off + 1 + gpu
    }
    /// Shared-memory in port of the rank on GPU slot `gpu` (receive side: its copy).
    pub fn shm_in(&self, node: u32, gpu: u32) -> LinkId {
        self.base(node) + self.shm_off + 1 + self.place.gpus_per_node + gpu
    }
    /// Socket of GPU slot `gpu` (its host memory, its CPU link).
    #[inline]
    pub fn socket_of(&self, gpu: u32) -> u32 {
        if self.cfg.sockets <= 1 {
            0
        } else {
            self.cfg.socket_of_gpu(gpu, self.place.gpus_per_node)
        }
    }

    /// Socket of the NIC that GPU slot `gpu` uses.
    #[inline]
    pub fn nic_socket_of(&self, gpu: u32) -> u32 {
        if self.cfg.sockets <= 1 {
            0
        } else {
            self.cfg.socket_of_nic(self.cfg.nic_of_gpu(gpu))
        }
    }

    /// The inter-socket link from socket `a` to socket `b` of a node, appended to `out` when the
    /// sockets differ (and the node has the link).
    pub fn cross_sockets(&self, node: u32, a: u32, b: u32, out: &mut Links) {
        if a == b || self.cfg.inter_socket.is_none() {
            return;
        }
        let s = self.cfg.sockets.max(1);
        let j = if b < a { b } else { b - 1 };
        out.push(self.base(node) + self.xs_off + a * (s - 1) + j);
    }

    /// The copy engine a copy of GPU slot `gpu` takes: one of `gpu.copy_engines` round robin, or
    /// without engines the direction's `ce_d2h` / `ce_h2d` link.
    pub fn copy_engine(&self, node: u32, gpu: u32, d2h: bool) -> LinkId {
        if self.ce_n == 0 {
            return if d2h { self.ce_d2h(node, gpu) } else { self.ce_h2d(node, gpu) };
        }
        self.next_engine(node, gpu)
    }

    /// The copy engine of GPU slot `gpu` that a GPUDirect P2P transfer into it takes (the
    /// receiving GPU pulls the data, as CUDA IPC copies do); None without `gpu.copy_engines`.
    pub fn p2p_engine(&self, node: u32, gpu: u32) -> Option<LinkId> {
        if self.ce_n == 0 {
            None
        } else {
            Some(self.next_engine(node, gpu))
        }
    }

    fn next_engine(&self, node: u32, gpu: u32) -> LinkId {
        let g = self.place.gpus_per_node;
        let c = &self.ce_next[(node * g + gpu) as usize];
        let e = c.get();
        c.set(if e + 1 >= self.ce_n { 0 } else { e + 1 });
        self.base(node) + self.ce_off + gpu * self.ce_n + e
    }

    /// The injection (`out`) or ejection port of the rank on GPU slot `gpu` to its NIC
    /// (`node.nic.rank_bw`), appended to `out_links` when the machine has them.
    pub fn nic_rank_port(&self, node: u32, gpu: u32, out: bool, out_links: &mut Links) {
        if self.nr_off == self.stride {
            return;
        }
        let g = self.place.gpus_per_node;
        out_links.push(self.base(node) + self.nr_off + if out { gpu } else { g + gpu });
    }

    /// Copy engines per GPU (0: not modelled).
    pub fn copy_engines(&self) -> u32 {
        self.ce_n
    }

    /// NVLink links from GPU a to GPU b of one node (with both GPUs' aggregate ports when
    /// `node.nvlink.gpu_bw` is set); false if they have none.
    pub fn nvlink(&self, node: u32, a: u32, b: u32, out: &mut Links) -> bool {
        let at = out.len();
        let ok = self.nvlink_direct(node, a, b, out);
        if ok && self.nvg_off < self.ce_off && at < out.len() {
            let g = self.place.gpus_per_node;
            out.push(self.base(node) + self.nvg_off + a);
            out.push(self.base(node) + self.nvg_off + g + b);
        }
        ok
    }

    fn nvlink_direct(&self, node: u32, a: u32, b: u32, out: &mut Links) -> bool {
        let g = self.place.gpus_per_node;
        let base = self.base(node) + self.nv_off;
        match &self.cfg.nvlink {
            NvlinkKind::None => false,
            NvlinkKind::AllToAll => {
                // ordered pair index: a*(g-1) + (b if b<a else b-1)
                let j = if b < a { b } else { b - 1 };
                out.push(base + a * (g - 1) + j);
                true
            }
            NvlinkKind::Switch => {
                out.push(base + a); // a's port up
                out.push(base + g + b); // b's port down
                true
            }
            NvlinkKind::Pairs(p) => {
                for (i, &(x, y, _)) in p.iter().enumerate() {
                    if x == a && y == b {
                        out.push(base + 2 * i as u32);
                        return true;
                    }
                    if x == b && y == a {
                        out.push(base + 2 * i as u32 + 1);
                        return true;
                    }
                }
                false
            }
        }
    }
    /// Appends the network links between two nodes' NICs on `rail` to `out` and returns the sum
    /// of their latencies (the same as `path_latency` of those links).  Cached by node pair.
    pub fn net_route_latency(&self, src: u32, dst: u32, rail: u32, out: &mut Links) -> u64 {
        self.route_cached(src, dst, rail, Some(out))
    }

    /// The summed latency of the network links between two nodes' NICs on `rail` (the route of
    /// `net_route_latency`, from the same cache).
    pub fn net_latency(&self, src: u32, dst: u32, rail: u32) -> u64 {
        self.route_cached(src, dst, rail, None)
    }

    fn route_cached(&self, src: u32, dst: u32, rail: u32, out: Option<&mut Links>) -> u64 {
        let rails = self.rails;
        let rail = if rail < rails { rail } else { rail % rails };
        let mut rc = self.routes.borrow_mut();
        let rc = &mut *rc;
        // the key: 28 bits per node, 8 of rail; a machine past that is routed without the cache
        let cacheable = src < 1 << 28 && dst < 1 << 28 && rail < 1 << 8;
        let key = ((src as u64) << 36) | ((dst as u64) << 8) | rail as u64;
        let mut set = usize::MAX;
        if cacheable {
            if rc.slots.is_empty() {
                let n = (self.place.nodes as usize * 16).next_power_of_two().clamp(1 << 10, ROUTE_SLOTS);
                rc.slots = vec![RouteEntry { key: NO_KEY, latency_ns: 0, len: 0, links: [0; ROUTE_MAX] }; n];
            }
            let bits = rc.slots.len().trailing_zeros();
            set = ((key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - bits)) as usize) & !1;
            for e in &rc.slots[set..set + 2] {
                if e.key == key {
                    if let Some(out) = out {
                        // element by element: SmallVec's extend_from_slice is a generic insert
                        for &l in &e.links[..e.len as usize] {
                            out.push(l);
                        }
                    }
                    return e.latency_ns;
                }
            }
        }
        let v = &mut rc.scratch;
        self.route_into(src, dst, rail, v);
        let lat = self.path_latency(v);
        if let Some(out) = out {
            out.extend_from_slice(v);
        }
        if cacheable && v.len() <= ROUTE_MAX {
            let mut e = RouteEntry { key, latency_ns: lat, len: v.len() as u32, links: [0; ROUTE_MAX] };
            e.links[..v.len()].copy_from_slice(v);
            rc.slots[set + 1] = rc.slots[set];
            rc.slots[set] = e;
        }
        lat
    }

    /// The route of `net_route_latency` computed without the cache (the reference the cache is
    /// tested against).
    pub fn net_route_fresh(&self, src: u32, dst: u32, rail: u32, out: &mut Links) -> u64 {
        let mut v = Vec::new();
        self.route_into(src, dst, rail % self.rails, &mut v);
        out.extend_from_slice(&v);
        self.path_latency(&v)
    }

    /// The network route between two nodes' NICs on `rail` (< `rails`) into `v`, as `Machine`
    /// link ids.
    fn route_into(&self, src: u32, dst: u32, rail: u32, v: &mut Vec<LinkId>) {
        v.clear();
        self.topo.route(src, dst, rail, v);
        for l in v.iter_mut() {
            *l += self.topo_base;
        }
    }

    /// The first link id of the network (links below it are inside nodes).
    pub fn topo_base(&self) -> LinkId {
        self.topo_base
    }

    pub fn path_latency(&self, links: &[LinkId]) -> u64 {
        links.iter().map(|&l| self.latency[l as usize]).sum()
    }
    pub fn num_links(&self) -> usize {
        self.net.num_links()
    }
    /// Multiplies the bandwidth of every NIC-attached and network link (NIC bandwidth what-ifs).
    pub fn scale_network(&mut self, factor: f64) {
        for l in self.topo_base..self.net.num_links() as LinkId {
            self.net.scale_link(l, factor);
        }
    }
}

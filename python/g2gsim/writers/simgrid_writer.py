"""Export a g2gsim trace and machine to SimGrid/SMPI, for side-by-side replays (bench/speed).

``to_simgrid(trace, out_dir, machine)`` writes

* one **time-independent (TI) trace** file per rank (``rank<R>.txt``) in the action syntax of SimGrid
  3.32's ``smpi_replay`` (the Debian 12 version; the syntax has been stable since 3.20), and a list file
  (``traces.txt``) naming them in rank order, which is what ``smpirun -replay`` expects;
* a **platform** (``platform.xml``, DTD 4.1): one host per node of the simulated machine, with as many
  cores as GPUs per node, joined by a SimGrid ``<cluster>`` that mirrors the preset's network;
* a **hostfile** (``hostfile.txt``) placing ranks on nodes the way g2gsim's default linear mapping
  does (ranks 0..G-1 on node 0, ...);
* ``smpi_cfg.txt``: the ``--cfg`` options (``smpi_cfg(machine)``) that switch off SMPI's own
  calibration so both simulators apply the same model, and ``README.txt`` with the command line.

Replay with::

    smpirun -no-privatize -np N -platform platform.xml -hostfile hostfile.txt -replay traces.txt \\
        $(cat smpi_cfg.txt)

Only **host-memory runs** are equivalent: SimGrid has no GPUs, so the export is meant for traces whose
message buffers are in host memory (``mem_space`` host, e.g. ``g2gsim generate ... -p buffers=host``),
simulated by g2gsim in ``as-traced`` or ``hostcopy`` mode, where a message crosses the node's shared
memory (same node) or NIC + network (other node).  Device-buffer rows are exported the same way, as
if their buffers were in host memory.

Mapping of operations (``rank`` first on every line, as SimGrid requires; sizes in bytes since the
``init`` line has no datatype argument, which makes SMPI's default datatype MPI_BYTE):

=====================================  ======================================================
g2gsim row                             TI lines
=====================================  ======================================================
(start / end of every rank)            ``R init`` / ``R finalize`` (trace Init/Finalize rows are dropped)
Compute, Kernel (``dur_ns``)           ``R compute F`` with F = dur_ns * 1e-9 * host_speed flops
Memcpy, blocking (stream -1)           ``R compute F``: the copy's uncontended time under g2gsim's
                                       model (copy_delay + bytes / copy bandwidth; H2H: shm bandwidth)
Memcpy on a stream                     dropped (the host does not wait for it)
Send/Ssend/Bsend/Rsend                 ``R send DST TAG BYTES``
Isend/Issend                           ``R isend DST TAG BYTES``
Recv                                   ``R recv SRC TAG BYTES``
Irecv                                  ``R irecv SRC TAG BYTES``
Sendrecv                               ``R isend``, ``R irecv``, then a ``R wait`` on each
Wait, Waitany, Waitsome                ``R wait SRC DST TAG`` (Waitany/Waitsome: the first listed live
                                       request -- SimGrid has no "any")
Waitall                                ``R waitall`` when it names every outstanding request of the rank
                                       (SimGrid's waitall waits on all of them), else one ``wait`` each
Test*                                  dropped (an unsuccessful poll)
Barrier                                ``R barrier``
Bcast                                  ``R bcast BYTES ROOT``
Reduce / Allreduce                     ``R reduce BYTES FLOPS ROOT`` / ``R allreduce BYTES FLOPS``,
                                       FLOPS = one pass over the vector at the CPU/GPU reduce bandwidth
Alltoall                               ``R alltoall B B`` with B = bytes / comm size (per peer)
Alltoallv                              ``R alltoallv SENDBUF c_0..c_{n-1} RECVBUF r_0..r_{n-1}``
Gather / Allgather / Scatter           ``R gather S R ROOT`` / ``R allgather S R`` / ``R scatter S R ROOT``
                                       (per-rank block sizes)
Gatherv / Allgatherv / Scatterv        ``R gatherv S r_0..r_{n-1} ROOT`` / ``R allgatherv S r_0..`` /
                                       ``R scatterv s_0..s_{n-1} R ROOT``
Reduce_scatter(_block)                 ``R reducescatter r_0..r_{n-1} FLOPS``
=====================================  ======================================================

Not expressible in SimGrid's TI replay (``ValueError`` naming rank and event): MPI_ANY_SOURCE
receives, collectives on communicators other than MPI_COMM_WORLD (the replay runs every collective
on MPI_COMM_WORLD), nonblocking collectives, Scan/Exscan, and two requests of one rank outstanding at
once with the same (source, destination, tag) (SimGrid keys requests by that triple).  MPI_PROC_NULL
peers are dropped, as MPI does.

Platform assumptions (also written as comments into platform.xml):

* hosts run at ``host_speed`` flop/s (default 1 Gflop/s, so F flops = F ns) with ``gpus_per_node``
  cores, so a node's ranks compute in parallel as they do on their GPUs;
* fat-tree (2 or 3 levels) -> ``topology="FAT_TREE"`` with the same structure: SimGrid's parameters
  ``levels; down ports; up ports; parallel links`` are ``3; npl,lpp,pods; 1,up,lpp; 1,1,1`` (up =
  ceil(npl / taper)), which builds the same leaves, spines and cores with the same wiring as
  g2gsim's fat-tree (up/down d-mod-k routing in both).  SimGrid needs every leaf full, so the platform
  has ``npl * lpp * pods`` hosts; the ones past the last node stay idle;
* crossbar -> a flat ``<cluster>``: each host a private full-duplex link at the NIC bandwidth to a
  non-blocking backbone; torus (one node per router) -> ``topology="TORUS"``; dragonfly is refused
  (SimGrid's model differs too much).  Multi-rail networks (``rails`` > 1: g2gsim builds one
  independent plane per rail) are approximated: a fat-tree gets ``rails`` parallel links at every
  level of one plane, a crossbar host link ``rails`` x the NIC bandwidth;
* every network link has the preset's link bandwidth and ``SPLITDUPLEX`` sharing (one resource per
  direction, like g2gsim's up/down link pairs).  SimGrid gives all links of a cluster one latency,
  while g2gsim has a NIC latency once per message plus ``hop_latency`` per switch hop (0 on the
  ejection link); the export uses lat = (nic_latency + hop_latency) / 2 per link (``latency=
  "same-leaf"``, the default), which reproduces g2gsim's latency exactly for nodes on one leaf switch
  (two links) and overestimates it by (links - 2) * (nic_latency - hop_latency) / 2 farther away
  (lassen: +0.9 us across spines, +1.8 us across cores); ``latency="hop"`` uses hop_latency and
  drops the NIC latency instead;
* messages between ranks of one node use the host's loopback at the shared-memory bandwidth and
  latency (``node.host.shm_*``); SimGrid's loopback is a FATPIPE (not shared), g2gsim's shm link is
  shared max-min by the node's flows;
* MPI: ``smpi_cfg`` sets SimGrid's eager/rendezvous switch (``smpi/send-is-detached-thresh``) and
  the size below which data moves before the receive is posted (``smpi/async-small-thresh``) to the
  preset's eager limit (inclusive, as g2gsim), its send/receive overheads (``smpi/os``, ``smpi/ois``,
  ``smpi/or``) to ``mpi.send_overhead`` / ``mpi.recv_overhead``, switches off SMPI's piecewise
  bandwidth/latency correction factors, TCP window limit, RTT-weighted sharing and cross-traffic
  (so both sides share links by plain max-min), and selects MPICH's collective algorithms, which
  g2gsim's selection follows, except Allreduce: recursive doubling (``smpi/allreduce:rdb``), because
  SimGrid 3.32's MPICH allreduce aborts in replay mode (g2gsim uses recursive doubling below 10 kB,
  Rabenseifner or ring above).  Remaining differences: g2gsim's rendezvous pays RTS and CTS control
  latencies, SimGrid matches the receive without them; collective reductions are charged once by
  SimGrid and per round by g2gsim.
"""
from __future__ import annotations

import math
import tomllib
from pathlib import Path
from typing import Any
from xml.sax.saxutils import quoteattr

import numpy as np

from .. import units
from ..trace import ANY_SOURCE, PROC_NULL, Trace
from ..vocab import (
    COMPUTE_OPS,
    MARKER_OPS,
    NONBLOCKING_COLLECTIVES,
    NONBLOCKING_RECV_OPS,
    NONBLOCKING_SEND_OPS,
    RECV_ONLY_OPS,
    SEND_ONLY_OPS,
    TEST_OPS,
    WAIT_OPS,
)

__all__ = ["to_simgrid", "machine_params", "smpi_cfg", "platform_xml", "SimgridExportError"]


class SimgridExportError(ValueError):
    """The trace or machine cannot be expressed for SimGrid's time-independent replay."""


# ------------------------------------------------------------------------------------------ units
def _unit(parse, s: Any):
    """A machine-file value through the core's parser (g2gsim.units)."""
    try:
        return parse(s if isinstance(s, int) and not isinstance(s, bool) else str(s))
    except ValueError as e:
        raise SimgridExportError(str(e)) from None


def _bw(s: str) -> float:
    return _unit(units.parse_bandwidth, s)


def _ns(s: str) -> float:
    return _unit(units.parse_duration_ns, s)


def _size(s: Any) -> int:
    return int(s) if isinstance(s, float) else _unit(units.parse_size, s)


# ----------------------------------------------------------------------------------- machine
def machine_params(machine: str | Path | dict, gpus_per_node: int | None = None) -> dict:
    """The parts of a machine file (preset name, TOML path or parsed dict) that the export uses, with
    g2gsim's defaults (crates/g2g-net/src/config.rs) for missing keys; bandwidths in bytes/s,
    times in ns."""
    if isinstance(machine, dict):
        doc = machine
    else:
        from ..machines import resolve
        text, _ = resolve(machine)
        doc = tomllib.loads(text)
    node = doc.get("node", {})
    host = node.get("host", {})
    nic = node.get("nic", {})
    net = doc.get("network", {})
    mpi = doc.get("mpi", {})
    gpu = doc.get("gpu", {})
    cpu = doc.get("cpu", {})
    pcie = node.get("pcie", {})
    nic_bw = _bw(nic["bw"]) if "bw" in nic else None
    if nic_bw is None:
        raise SimgridExportError("machine has no node.nic.bw")
    # node.nic.efficiency scales the NIC and the network's links, as the core does (config.rs)
    nic_eff = float(nic.get("efficiency", 1.0))
    nic_bw *= nic_eff
    copy_per_byte = gpu.get("copy_per_byte")
    pcie_bw = _bw(pcie["bw"]) if "bw" in pcie else 16e9
    copy_bw = 1e9 / _ns(copy_per_byte) if copy_per_byte else pcie_bw
    p = {
        "name": doc.get("name", "machine"),
        "gpus_per_node": int(gpus_per_node or node.get("gpus", 1)),
        "shm_bw": _bw(host.get("shm_bw", "20GB/s")),
        "shm_latency_ns": _ns(host.get("shm_latency", "300ns")),
        "nic_count": int(nic.get("count", 1)),
        "nic_bw": nic_bw,
        "nic_latency_ns": _ns(nic.get("latency", "1us")),
        "topology": net.get("topology", "crossbar"),
        "hop_latency_ns": _ns(net.get("hop_latency", "100ns")),
        "link_bw": _bw(net["link_bw"]) * nic_eff if "link_bw" in net else nic_bw,
        "rails": int(net.get("rails", nic.get("count", 1))),
        "levels": int(net.get("levels", 2)),
        "nodes_per_leaf": int(net.get("nodes_per_leaf", 16)),
        "leaves_per_pod": int(net.get("leaves_per_pod", 16)),
        "taper": float(net.get("taper", 1.0)),
        "dims": net.get("dims"),
        "nodes_per_router": int(net.get("nodes_per_router", 1)),
        "eager_limit": _size(mpi.get("eager_limit", 65536)),
        "send_overhead_ns": _ns(mpi.get("send_overhead", "300ns")),
        "recv_overhead_ns": _ns(mpi.get("recv_overhead", "300ns")),
        "copy_delay_ns": _ns(gpu.get("copy_delay", "2000ns")),
        "copy_bw": min(copy_bw, pcie_bw),
        "gpu_reduce_bw": _bw(gpu.get("reduce_bw", "500GB/s")),
        "cpu_reduce_bw": _bw(cpu.get("reduce_bw", "5GB/s")),
    }
    return p


def _fat_tree_shape(p: dict, nodes: int, rails: int = 1) -> tuple[str, int, dict]:
    """SimGrid FAT_TREE topo_parameters for g2gsim's fat-tree of ``nodes`` nodes, the number of hosts
    SimGrid needs, and the shape."""
    npl, lpp, levels = p["nodes_per_leaf"], p["leaves_per_pod"], p["levels"]
    ratio = npl / p["taper"]
    up = round(ratio) if abs(ratio - round(ratio)) < 1e-9 else math.ceil(ratio)
    up = max(1, min(int(up), npl))
    leaves = max(1, math.ceil(nodes / npl))
    if levels == 2:
        params = f"2;{npl},{leaves};1,{up};{rails},{rails}"
        hosts = npl * leaves
        shape = {"levels": 2, "leaves": leaves, "uplinks_per_leaf": up, "spines": up}
    elif levels == 3:
        pods = max(1, math.ceil(leaves / lpp))
        params = f"3;{npl},{lpp},{pods};1,{up},{lpp};{rails},{rails},{rails}"
        hosts = npl * lpp * pods
        shape = {"levels": 3, "leaves": lpp * pods, "uplinks_per_leaf": up, "pods": pods,
                 "spines": pods * up, "cores": up * lpp}
    else:
        raise SimgridExportError(f"fat-tree with {levels} levels (g2gsim supports 2 or 3)")
    return params, hosts, shape


def _num(x: float) -> str:
    """Compact number for TI lines and XML: integers without a fraction."""
    if float(x).is_integer() and abs(x) < 1e18:
        return str(int(x))
    return repr(float(x))


def platform_xml(p: dict, nodes: int, host_speed: float = 1e9, latency: str = "same-leaf") -> tuple[str, int]:
    """Platform XML for ``nodes`` nodes of machine params ``p``; returns (xml text, hosts in it)."""
    if latency not in ("same-leaf", "hop"):
        raise SimgridExportError("latency must be 'same-leaf' or 'hop'")
    gpn = p["gpus_per_node"]
    lat_ns = ((p["nic_latency_ns"] + p["hop_latency_ns"]) / 2 if latency == "same-leaf"
              else p["hop_latency_ns"])
    common = {
        "speed": f"{_num(host_speed)}f", "core": str(gpn),
        "bw": f"{_num(p['link_bw'])}Bps", "lat": f"{_num(lat_ns)}ns",
        "loopback_bw": f"{_num(p['shm_bw'])}Bps", "loopback_lat": f"{_num(p['shm_latency_ns'])}ns",
        "sharing_policy": "SPLITDUPLEX",
    }
    topo = p["topology"]
    rails = p["rails"]
    notes = [
        f"g2gsim machine {p['name']!r}: {nodes} node(s) x {gpn} rank slot(s) (cores), host speed "
        f"{host_speed:g} flop/s (compute F flops = F / speed s).",
        f"network links: {p['link_bw'] / 1e9:g} GB/s each, SPLITDUPLEX; latency {lat_ns:g} ns per link "
        f"({latency}: g2gsim has NIC {p['nic_latency_ns']:g} ns once + {p['hop_latency_ns']:g} ns per hop).",
        f"same-node messages: loopback {p['shm_bw'] / 1e9:g} GB/s, {p['shm_latency_ns']:g} ns (g2gsim shm link).",
    ]
    if topo == "fat-tree":
        params, hosts, shape = _fat_tree_shape(p, nodes, rails)
        attrs = dict(common, topology="FAT_TREE", topo_parameters=params)
        notes.append(f"fat-tree {shape}; SimGrid needs full leaves: {hosts} hosts, the last "
                     f"{hosts - nodes} idle.")
        if rails > 1:
            notes.append(f"{rails} rails: g2gsim has {rails} independent planes; here {rails} parallel "
                         "links join every pair of connected switches/hosts of one plane (approximation).")
    elif topo == "crossbar":
        hosts = nodes
        attrs = dict(common, bw=f"{_num(min(p['nic_bw'], p['link_bw']) * rails)}Bps", bb_bw=f"{_num(1e15)}Bps",
                     bb_lat="0ns", bb_sharing_policy="FATPIPE")
        notes.append("crossbar: private link per host to a non-blocking backbone"
                     + (f", at {rails} x the NIC bandwidth for {rails} rails (approximation)." if rails > 1
                        else "."))
    elif topo == "torus":
        dims = p["dims"]
        if p["nodes_per_router"] != 1 or not dims or len(dims) != 3:
            raise SimgridExportError("torus export needs nodes_per_router = 1 and dims = [x, y, z]")
        hosts = int(dims[0]) * int(dims[1]) * int(dims[2])
        if hosts < nodes:
            raise SimgridExportError(f"torus {dims} has {hosts} nodes, the trace needs {nodes}")
        attrs = dict(common, topology="TORUS", topo_parameters=",".join(str(int(d)) for d in dims))
        notes.append(f"torus {dims}: {hosts} hosts, the last {hosts - nodes} idle.")
    else:
        raise SimgridExportError(f"{p['name']}: network topology {topo!r} has no SimGrid equivalent in "
                                 "this export (fat-tree, crossbar, torus)")
    attr_s = " ".join(f"{k}={quoteattr(v)}" for k, v in
                      dict(id="g2g", prefix="node-", suffix="", radical=f"0-{hosts - 1}", **attrs).items())
    comment = "\n".join("  " + n.replace("--", "-") for n in notes)
    xml = ("<?xml version='1.0'?>\n"
           "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
           "<platform version=\"4.1\">\n"
           f"<!--\n{comment}\n-->\n"
           f"  <cluster {attr_s}/>\n"
           "</platform>\n")
    return xml, hosts


def smpi_cfg(p: dict | str | Path) -> list[str]:
    """``--cfg`` options that make SMPI apply the same first-order model as g2gsim."""
    if not isinstance(p, dict) or "eager_limit" not in p:
        p = machine_params(p)
    o_s = p["send_overhead_ns"] * 1e-9
    o_r = p["recv_overhead_ns"] * 1e-9
    return [
        "--cfg=smpi/host-speed:1Gf",
        "--cfg=smpi/simulate-computation:yes",
        f"--cfg=smpi/send-is-detached-thresh:{int(p['eager_limit']) + 1}",
        # eager data moves before the receive is posted (SimGrid's default 0 waits for the match)
        f"--cfg=smpi/async-small-thresh:{int(p['eager_limit']) + 1}",
        f"--cfg=smpi/os:0:{o_s:.9g}:0",
        f"--cfg=smpi/ois:0:{o_s:.9g}:0",
        f"--cfg=smpi/or:0:{o_r:.9g}:0",
        "--cfg=smpi/bw-factor:0:1",
        "--cfg=smpi/lat-factor:0:1",
        "--cfg=network/TCP-gamma:0",
        "--cfg=network/weight-S:0",
        "--cfg=network/crosstraffic:0",
        "--cfg=smpi/coll-selector:mpich",
        # SimGrid 3.32's MPICH allreduce selection aborts in replay (free(): invalid pointer);
        # recursive doubling is what g2gsim selects below 10 kB (and MPICH for short vectors)
        "--cfg=smpi/allreduce:rdb",
    ]


# -------------------------------------------------------------------------------------- trace
# SimGrid's TI action of each send and receive (Sendrecv apart)
_SEND = {o: "isend" if o in NONBLOCKING_SEND_OPS else "send" for o in SEND_ONLY_OPS}
_RECV = {o: "irecv" if o in NONBLOCKING_RECV_OPS else "recv" for o in RECV_ONLY_OPS}
_WAIT = WAIT_OPS
_SKIP = MARKER_OPS | TEST_OPS
_UNSUPPORTED = {"Scan", "Exscan"}


class _RankState:
    __slots__ = ("lines", "reqs", "outstanding")

    def __init__(self, r: int):
        self.lines = [f"{r} init"]
        self.reqs: dict[int, tuple[int, int, int] | None] = {}   # request id -> (src, dst, tag) | None (null)
        self.outstanding: dict[tuple[int, int, int], int] = {}   # key -> request id


def _comm_tables(trace: Trace) -> dict[int, np.ndarray | None]:
    out: dict[int, np.ndarray | None] = {}
    for c in trace.comms:
        if c.members is None:
            out[c.id] = None
        else:
            m = np.asarray(c.members, dtype=np.int64)
            out[c.id] = None if (len(m) == trace.nranks and np.array_equal(m, np.arange(trace.nranks))) else m
    return out


def _to_lines(trace: Trace, p: dict, host_speed: float) -> list[list[str]]:
    """TI lines of every rank."""
    n = trace.nranks
    t = trace.table
    cols = {name: t.column(name) for name in t.column_names}

    def np_col(name):
        return cols[name].to_numpy(zero_copy_only=False)

    rank = np_col("rank").astype(np.int64)
    seq = np_col("seq").astype(np.int64)
    order = np.lexsort((seq, rank))
    ops = cols["op"].to_pylist()
    dur = np_col("dur_ns")
    peer = np_col("peer")
    tag = np_col("tag")
    comm = np_col("comm_id")
    nbytes = np_col("bytes")
    rbytes = np_col("recv_bytes")
    rpeer = np_col("recv_peer")
    rtag = np_col("recv_tag")
    root = np_col("root")
    req = np_col("req")
    stream = np_col("stream")
    mem = cols["mem_space"].to_pylist()
    copy = cols["copy_kind"].to_pylist()
    reqs = cols["reqs"].to_pylist()
    counts = cols["counts_bytes"].to_pylist()
    rcounts = cols["recv_counts_bytes"].to_pylist()
    comms = _comm_tables(trace)
    speed_per_ns = host_speed * 1e-9
    states = [_RankState(r) for r in range(n)]

    def err(i, msg):
        raise SimgridExportError(f"{trace.path or '<trace>'}: rank {rank[i]}, event {seq[i]} ({ops[i]}): "
                                 f"{msg}")

    def world(i, c, x):
        if c not in comms:
            err(i, f"communicator {c} is not defined")
        m = comms[c]
        if x < 0:
            return int(x)
        if m is None:
            if x >= n:
                err(i, f"peer {x} outside MPI_COMM_WORLD")
            return int(x)
        if x >= len(m):
            err(i, f"peer {x} outside communicator {c} (size {len(m)})")
        return int(m[x])

    def flops_of_ns(ns: float) -> str:
        return _num(round(ns * speed_per_ns, 3))

    def reduce_flops(i, b) -> str:
        bw = p["gpu_reduce_bw"] if mem[i] in ("device", "managed") else p["cpu_reduce_bw"]
        return flops_of_ns(b / bw * 1e9)

    def post(st: _RankState, i, rid: int, key: tuple[int, int, int]):
        if key in st.outstanding:
            err(i, f"two requests outstanding with (src, dst, tag) = {key}; SimGrid's replay keys "
                   "requests by that triple and would lose one")
        st.outstanding[key] = rid
        if rid:
            st.reqs[rid] = key

    def wait_lines(st: _RankState, r: int, keys: list[tuple[int, int, int]], whole: bool) -> None:
        if whole and keys and len(keys) == len(st.outstanding):
            st.lines.append(f"{r} waitall")
        else:
            for (s, d, tg) in keys:
                st.lines.append(f"{r} wait {s} {d} {tg}")
        for k in keys:
            st.outstanding.pop(k, None)

    for i in order:
        r = int(rank[i])
        st = states[r]
        op = ops[i]
        lines = st.lines
        if op in _SKIP:
            continue
        if op in COMPUTE_OPS:
            if dur[i] > 0:
                lines.append(f"{r} compute {flops_of_ns(float(dur[i]))}")
            continue
        if op == "Memcpy":
            if stream[i] >= 0 or nbytes[i] == 0:
                continue
            ck = copy[i]
            if ck in ("h2h", None):
                ns = nbytes[i] / p["shm_bw"] * 1e9
            else:
                ns = p["copy_delay_ns"] + nbytes[i] / p["copy_bw"] * 1e9
            lines.append(f"{r} compute {flops_of_ns(ns)}")
            continue
        c = int(comm[i])
        if op in _SEND:
            if peer[i] == PROC_NULL:
                if req[i]:
                    st.reqs[int(req[i])] = None
                continue
            d = world(i, c, int(peer[i]))
            a = _SEND[op]
            lines.append(f"{r} {a} {d} {int(tag[i])} {int(nbytes[i])}")
            if a == "isend":
                post(st, i, int(req[i]), (r, d, int(tag[i])))
            continue
        if op in _RECV:
            if peer[i] == PROC_NULL:
                if req[i]:
                    st.reqs[int(req[i])] = None
                continue
            if peer[i] == ANY_SOURCE:
                err(i, "MPI_ANY_SOURCE receive: SimGrid's TI replay needs the source rank")
            s = world(i, c, int(peer[i]))
            a = _RECV[op]
            size = int(max(nbytes[i], rbytes[i]))
            lines.append(f"{r} {a} {s} {int(tag[i])} {size}")
            if a == "irecv":
                post(st, i, int(req[i]), (s, r, int(tag[i])))
            continue
        if op == "Sendrecv":
            keys = []
            if peer[i] != PROC_NULL:
                d = world(i, c, int(peer[i]))
                lines.append(f"{r} isend {d} {int(tag[i])} {int(nbytes[i])}")
                keys.append((r, d, int(tag[i])))
                post(st, i, 0, keys[-1])
            if rpeer[i] != PROC_NULL:
                if rpeer[i] == ANY_SOURCE:
                    err(i, "MPI_ANY_SOURCE receive: SimGrid's TI replay needs the source rank")
                s = world(i, c, int(rpeer[i]))
                lines.append(f"{r} irecv {s} {int(rtag[i])} {int(rbytes[i])}")
                keys.append((s, r, int(rtag[i])))
                post(st, i, 0, keys[-1])
            wait_lines(st, r, keys, whole=False)
            continue
        if op in _WAIT:
            ids = list(reqs[i]) if reqs[i] else ([int(req[i])] if req[i] else [])
            keys = []
            for rid in ids:
                if rid == 0:
                    continue
                if rid not in st.reqs:
                    err(i, f"request {rid} was never posted")
                k = st.reqs.pop(rid)
                if k is None or k not in st.outstanding:
                    continue   # MPI_PROC_NULL request or already retired
                keys.append(k)
                if op in ("Waitany", "Waitsome"):
                    # SimGrid has no "any": wait for the first live request; the later ones stay
                    # posted (still in st.reqs) for a later wait
                    break
            if keys:
                wait_lines(st, r, keys, whole=(op == "Waitall"))
            continue
        # ---- collectives
        if op in _UNSUPPORTED:
            err(i, f"{op} has no SimGrid TI replay action")
        if op in NONBLOCKING_COLLECTIVES:
            err(i, "nonblocking collectives have no SimGrid TI replay action")
        if c not in comms or comms[c] is not None:
            err(i, f"collective on communicator {c}: SimGrid's TI replay runs collectives on "
                   "MPI_COMM_WORLD only")
        rt = int(root[i]) if root[i] >= 0 else 0
        b, rb = int(nbytes[i]), int(rbytes[i])
        if op == "Barrier":
            lines.append(f"{r} barrier")
        elif op == "Bcast":
            lines.append(f"{r} bcast {b} {rt}")
        elif op == "Reduce":
            lines.append(f"{r} reduce {b} {reduce_flops(i, b)} {rt}")
        elif op == "Allreduce":
            lines.append(f"{r} allreduce {b} {reduce_flops(i, b)}")
        elif op == "Alltoall":
            lines.append(f"{r} alltoall {b // n} {(rb or b) // n}")
        elif op == "Alltoallv":
            sc = counts[i] or [b // n] * n
            rc = rcounts[i] or [rb // n] * n
            lines.append(f"{r} alltoallv {sum(sc)} {' '.join(map(str, sc))} {sum(rc)} {' '.join(map(str, rc))}")
        elif op == "Gather":
            per = rb // n if r == rt and rb else b
            lines.append(f"{r} gather {b} {per} {rt}")
        elif op == "Allgather":
            lines.append(f"{r} allgather {b} {(rb // n) if rb else b}")
        elif op == "Scatter":
            per = (b // n) if r == rt and b else rb
            lines.append(f"{r} scatter {per} {rb or per} {rt}")
        elif op == "Gatherv":
            rc = rcounts[i] or [b] * n
            lines.append(f"{r} gatherv {b} {' '.join(map(str, rc))} {rt}")
        elif op == "Allgatherv":
            rc = rcounts[i] or [b] * n
            lines.append(f"{r} allgatherv {b} {' '.join(map(str, rc))}")
        elif op == "Scatterv":
            sc = counts[i] or [rb] * n
            lines.append(f"{r} scatterv {' '.join(map(str, sc))} {rb} {rt}")
        elif op in ("Reduce_scatter", "Reduce_scatter_block"):
            rc = rcounts[i] or [b // n] * n
            lines.append(f"{r} reducescatter {' '.join(map(str, rc))} {reduce_flops(i, b)}")
        else:
            err(i, f"operation {op} has no SimGrid TI replay action")
    for r, st in enumerate(states):
        st.lines.append(f"{r} finalize")
    return [st.lines for st in states]


def to_simgrid(trace: Trace | str | Path, out_dir: str | Path, machine: str | Path | dict = "lassen", *,
               gpus_per_node: int | None = None, host_speed: float = 1e9,
               latency: str = "same-leaf") -> tuple[Path, Path, Path]:
    """Writes SimGrid TI traces, platform and hostfile for ``trace`` on ``machine`` into ``out_dir``.

    Returns ``(tracefile_list_path, platform_xml_path, hostfile_path)``; see the module docstring for
    the mapping and its assumptions.  Raises ``SimgridExportError`` for what SimGrid cannot replay.
    """
    if not isinstance(trace, Trace):
        from ..sim import as_native
        trace = Trace.read(as_native(trace))
    if host_speed <= 0:
        raise SimgridExportError("host_speed must be positive")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    p = machine_params(machine, gpus_per_node)
    gpn = p["gpus_per_node"]
    n = trace.nranks
    nodes = max(1, math.ceil(n / gpn))
    xml, hosts = platform_xml(p, nodes, host_speed, latency)
    per_rank = _to_lines(trace, p, host_speed)
    width = len(str(max(n - 1, 0)))
    names = []
    for r, lines in enumerate(per_rank):
        f = out / f"rank{r:0{width}d}.txt"
        f.write_text("\n".join(lines) + "\n")
        names.append(f.name)
    tl = out / "traces.txt"
    # smpirun resolves the per-rank names against its working directory: absolute paths are safe
    tl.write_text("\n".join(str((out / nm).resolve()) for nm in names) + "\n")
    plat = out / "platform.xml"
    plat.write_text(xml)
    hf = out / "hostfile.txt"
    hf.write_text("".join(f"node-{r // gpn}\n" for r in range(n)))
    cfg = smpi_cfg(p)
    (out / "smpi_cfg.txt").write_text(" ".join(cfg) + "\n")
    (out / "README.txt").write_text(
        f"SimGrid export of {trace.path or 'a g2gsim trace'} ({n} ranks) for machine {p['name']} "
        f"({nodes} nodes x {gpn}; platform has {hosts} hosts).\nReplay:\n  smpirun -no-privatize -np {n} "
        f"-platform {plat.name} -hostfile {hf.name} -replay {tl.name} {' '.join(cfg)}\n")
    return tl, plat, hf

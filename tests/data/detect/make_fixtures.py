"""Writes the synthetic detect fixtures (see README.md): captured-output layouts of nvidia-smi, lsmod,
hwloc and sysfs, filled with the topology of each machine described there.

    python tests/data/detect/make_fixtures.py dgx-h100 ...     # only the machines named
    python tests/data/detect/make_fixtures.py --all            # every synthetic machine

A directory holding a real capture (a file REAL_CAPTURE in it, written by hand when a capture from
`python -m g2gsim.detect --capture DIR` replaces a synthetic one) is never overwritten.
"""
from __future__ import annotations

import hashlib
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

LEGEND_NEW = """
Legend:

  X    = Self
  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)
  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node
  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)
  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)
  PIX  = Connection traversing at most a single PCIe bridge
  NV#  = Connection traversing a bonded set of # NVLinks
"""


def uuid(seed: str) -> str:
    h = hashlib.sha256(seed.encode()).hexdigest()
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def serial(seed: str) -> str:
    return str(int(hashlib.sha256(seed.encode()).hexdigest()[:12], 16))[:13]


# =================================================================================== topo -m
def topo_m(gpus: list[dict], nics: list[dict], rel, style: str, nic_names: str = "legend") -> str:
    """gpus: [{cpus, numa}], nics: [{name, numa}], rel(a, b) -> cell for devices a, b (labels).
    style: 'new' (CPU Affinity, NUMA Affinity, GPU NUMA ID; R525+), 'mid' (CPU, NUMA; R450-R515),
    'old' (CPU Affinity only).  nic_names: 'legend' (NIC0.. + NIC Legend) or 'mlx' (mlx5_N columns)."""
    glab = [f"GPU{i}" for i in range(len(gpus))]
    nlab = [f"NIC{i}" for i in range(len(nics))] if nic_names == "legend" else [n["name"] for n in nics]
    devs = glab + nlab
    extra = {"new": ["CPU Affinity", "NUMA Affinity", "GPU NUMA ID"], "mid": ["CPU Affinity", "NUMA Affinity"],
             "old": ["CPU Affinity"]}[style]
    out = ["\t" + "\t".join(devs + extra)]
    for i, a in enumerate(devs):
        cells = [" X " if a == b else rel(a, b) for b in devs]
        line = a + "\t" + "\t".join(cells)
        if i < len(gpus):
            g = gpus[i]
            line += {"new": f"\t{g['cpus']}\t{g.get('numa')}\t\tN/A", "mid": f"\t{g['cpus']}\t{g.get('numa')}",
                     "old": f"\t{g['cpus']}"}[style]
        else:
            line += {"new": "\t\t\t\t", "mid": "\t\t", "old": "\t"}[style]
        out.append(line)
    text = "\n".join(out) + "\n" + LEGEND_NEW
    if nics and nic_names == "legend":
        text += "\nNIC Legend:\n\n" + "".join(f"  NIC{i}: {n['name']}\n" for i, n in enumerate(nics))
    return text


# =============================================================================== nvlink -s
def nvlink_s(gpus: list[dict], links: int, rate: str | None, inactive=()) -> str:
    out = []
    for i, g in enumerate(gpus):
        out.append(f"GPU {i}: {g['name']} (UUID: {g['uuid']})")
        if rate is None:
            continue
        for k in range(links):
            v = "<inactive>" if (i, k) in inactive else rate
            out.append(f"\t Link {k}: {v}")
    return "\n".join(out) + "\n"


def nvlink_r(gpus: list[dict], links: int, far) -> str:
    """nvidia-smi nvlink -R; far(gpu, link) -> (remote PCI bus id, remote link number)."""
    out = []
    for i, g in enumerate(gpus):
        out.append(f"GPU {i}: {g['name']} (UUID: {g['uuid']})")
        for k in range(links):
            bus, rl = far(i, k)
            out.append(f"\t Link {k}: Remote Device {bus}: Link {rl}")
    return "\n".join(out) + "\n"


# ==================================================================================== -q
def smi_q(gpus: list[dict], arch: str, driver: str, cuda: str, stamp: str) -> str:
    """nvidia-smi -q, sections and key widths as printed by the R555/R565 drivers."""
    def kv(ind, k, v):
        return f"{' ' * ind}{k:<{38 - ind}}: {v}"

    out = ["", "==============NVSMI LOG==============", "",
           kv(0, "Timestamp", stamp), kv(0, "Driver Version", driver), kv(0, "CUDA Version", cuda), "",
           kv(0, "Attached GPUs", len(gpus))]
    for i, g in enumerate(gpus):
        hopper = arch == "Hopper"
        geforce = g.get("brand") == "GeForce"
        bus = g["bus"]
        L = [f"GPU {bus}",
             kv(4, "Product Name", g["name"]), kv(4, "Product Brand", g.get("brand", "NVIDIA")),
             kv(4, "Product Architecture", arch), kv(4, "Display Mode", "Disabled" if geforce else "Enabled"),
             kv(4, "Display Active", "Disabled"), kv(4, "Persistence Mode", "Enabled"),
             kv(4, "Addressing Mode", "None"), "    MIG Mode", kv(8, "Current", "N/A" if geforce else "Disabled"),
             kv(8, "Pending", "N/A" if geforce else "Disabled"), kv(4, "Accounting Mode", "Disabled"),
             kv(4, "Accounting Mode Buffer Size", 4000), "    Driver Model", kv(8, "Current", "N/A"),
             kv(8, "Pending", "N/A"), kv(4, "Serial Number", "N/A" if geforce else serial(g["uuid"])),
             kv(4, "GPU UUID", g["uuid"]), kv(4, "Minor Number", i), kv(4, "VBIOS Version", g["vbios"]),
             kv(4, "MultiGPU Board", "No"), kv(4, "Board ID", f"0x{int(bus.split(':')[1], 16):x}00"),
             kv(4, "Board Part Number", g.get("board_pn", "N/A")), kv(4, "GPU Part Number", g.get("gpu_pn", "N/A")),
             kv(4, "FRU Part Number", "N/A")]
        if hopper:
            L += ["    Platform Info", kv(8, "RACK Serial Number", "N/A"), kv(8, "Chassis Physical Slot Number", "N/A"),
                  kv(8, "Compute Slot Index", "N/A"), kv(8, "Node Index", "N/A"), kv(8, "Peer Type", "N/A"),
                  kv(8, "Module Id", g.get("module", i + 1))]
        else:
            L += [kv(4, "Module ID", g.get("module", i + 1))]
        L += ["    Inforom Version", kv(8, "Image Version", g.get("inforom", "N/A")), kv(8, "OEM Object", "2.1"),
              kv(8, "ECC Object", "N/A" if geforce else "7.16"), kv(8, "Power Management Object", "N/A"),
              "    Inforom BBX Object Flush", kv(8, "Latest Timestamp", "N/A"), kv(8, "Latest Duration", "N/A"),
              "    GPU Operation Mode", kv(8, "Current", "N/A"), kv(8, "Pending", "N/A"),
              kv(4, "GPU C2C Mode", "Disabled" if hopper else "N/A"), "    GPU Virtualization Mode",
              kv(8, "Virtualization Mode", "None"), kv(8, "Host VGPU Mode", "N/A"),
              kv(8, "vGPU Heterogeneous Mode", "N/A"), "    GPU Reset Status", kv(8, "Reset Required", "No"),
              kv(8, "Drain and Reset Recommended", "No")]
        if hopper:
            L += [kv(4, "GPU Recovery Action", "None")]
        L += [kv(4, "GSP Firmware Version", g.get("gsp", "N/A")), "    IBMNPU", kv(8, "Relaxed Ordering Mode", "N/A"),
              "    PCI", kv(8, "Bus", f"0x{bus.split(':')[1]}"), kv(8, "Device", "0x00"), kv(8, "Domain", "0x0000"),
              kv(8, "Base Classcode", "0x3"), kv(8, "Sub Classcode", "0x0" if geforce else "0x2"),
              kv(8, "Device Id", g["devid"]), kv(8, "Bus Id", bus), kv(8, "Sub System Id", g["subsys"]),
              "        GPU Link Info", "            PCIe Generation",
              kv(16, "Max", g["gen_max"]), kv(16, "Current", g["gen_cur"]), kv(16, "Device Current", g["gen_cur"]),
              kv(16, "Device Max", g["gen_dev"]), kv(16, "Host Max", g["gen_host"]),
              "            Link Width", kv(16, "Max", f"{g['width']}x"), kv(16, "Current", f"{g['width']}x"),
              "        Bridge Chip", kv(12, "Type", "N/A"), kv(12, "Firmware", "N/A"),
              kv(8, "Replays Since Reset", 0), kv(8, "Replay Number Rollovers", 0),
              kv(8, "Tx Throughput", "0 KB/s"), kv(8, "Rx Throughput", "0 KB/s"),
              kv(8, "Atomic Caps Outbound", "N/A"), kv(8, "Atomic Caps Inbound", "N/A"),
              kv(4, "Fan Speed", "30 %" if geforce else "N/A"), kv(4, "Performance State", "P8" if geforce else "P0"),
              "    Clocks Event Reasons", kv(8, "Idle", "Active"), kv(8, "Applications Clocks Setting", "Not Active"),
              kv(8, "SW Power Cap", "Not Active"), kv(8, "HW Slowdown", "Not Active"),
              kv(12, "HW Thermal Slowdown", "Not Active"), kv(12, "HW Power Brake Slowdown", "Not Active"),
              kv(8, "Sync Boost", "Not Active"), kv(8, "SW Thermal Slowdown", "Not Active"),
              kv(8, "Display Clock Setting", "Not Active"), kv(4, "Sparse Operation Mode", "N/A"),
              "    FB Memory Usage", kv(8, "Total", f"{g['mem']} MiB"), kv(8, "Reserved", f"{g.get('reserved', 454)} MiB"),
              kv(8, "Used", "1 MiB"), kv(8, "Free", f"{g['mem'] - g.get('reserved', 454) - 1} MiB"),
              "    BAR1 Memory Usage", kv(8, "Total", f"{g.get('bar1', 131072)} MiB"), kv(8, "Used", "1 MiB"),
              kv(8, "Free", f"{g.get('bar1', 131072) - 1} MiB"),
              "    Conf Compute Protected Memory Usage", kv(8, "Total", "0 MiB"), kv(8, "Used", "0 MiB"),
              kv(8, "Free", "0 MiB"), kv(4, "Compute Mode", "Default"),
              "    Utilization", kv(8, "Gpu", "0 %"), kv(8, "Memory", "0 %"), kv(8, "Encoder", "0 %"),
              kv(8, "Decoder", "0 %"), kv(8, "JPEG", "0 %"), kv(8, "OFA", "0 %"),
              "    ECC Mode", kv(8, "Current", "N/A" if geforce else "Enabled"),
              kv(8, "Pending", "N/A" if geforce else "Enabled"),
              "    Temperature", kv(8, "GPU Current Temp", "31 C"), kv(8, "GPU T.Limit Temp", "N/A"),
              "    GPU Power Readings", kv(8, "Power Draw", g.get("power", "72.02 W")),
              kv(8, "Current Power Limit", g["tdp"]), kv(8, "Requested Power Limit", g["tdp"]),
              kv(8, "Default Power Limit", g["tdp"]), kv(8, "Min Power Limit", g.get("min_power", "200.00 W")),
              kv(8, "Max Power Limit", g["tdp"]),
              "    Clocks", kv(8, "Graphics", "345 MHz"), kv(8, "SM", "345 MHz"), kv(8, "Memory", g["memclk"]),
              kv(8, "Video", "765 MHz"), "    Max Clocks", kv(8, "Graphics", g["maxclk"]), kv(8, "SM", g["maxclk"]),
              kv(8, "Memory", g["memclk"]), kv(8, "Video", "1545 MHz"),
              "    Fabric", kv(8, "State", g["fabric"]), kv(8, "Status", "Success" if g["fabric"] == "Completed" else "N/A"),
              kv(8, "CliqueId", "0" if g["fabric"] == "Completed" else "N/A"),
              kv(8, "ClusterUUID", "00000000-0000-0000-0000-000000000000" if g["fabric"] == "Completed" else "N/A"),
              "        Health", kv(12, "Bandwidth", "N/A"),
              kv(4, "Processes", "None"), "    Capabilities", kv(8, "EGM", "disabled"), ""]
        out += L
    return "\n".join(out) + "\n"


def query_csv(gpus: list[dict]) -> str:
    return "".join(f"{i}, {g['name']}, {g['bus']}, {g['gen_cur']}, {g['gen_max']}, {g['width']}, {g['width']}\n"
                   for i, g in enumerate(gpus))


# =============================================================================== lsmod
LSMOD_BASE = [("nvidia_uvm", 1523712, "0", ""), ("nvidia_drm", 73728, "0", ""),
              ("nvidia_modeset", 1306624, "1", "nvidia_drm")]


def lsmod(peer: str | None, gdrdrv: bool, ib: bool) -> str:
    rows = list(LSMOD_BASE)
    users = ["nvidia_uvm", "nvidia_modeset"]
    if peer:
        rows.append((peer, 16384, "0", ""))
        users.insert(1, peer)
    if gdrdrv:
        rows.append(("gdrdrv", 24576, "0", ""))
        users.insert(-1, "gdrdrv")
    rows.append(("nvidia", 56598528, str(20 * len(users)), ",".join(users)))
    if ib:
        ibu = ["rdma_cm", "ib_ipoib", "iw_cm", "ib_umad", "rdma_ucm", "ib_uverbs", "mlx5_ib", "ib_cm"]
        if peer:
            ibu.insert(2, peer)
        rows += [("mlx5_ib", 458752, "0", ""), ("ib_uverbs", 163840, "2", "rdma_ucm,mlx5_ib"),
                 ("ib_core", 442368, str(len(ibu)), ",".join(ibu)), ("mlx5_core", 2191360, "1", "mlx5_ib")]
    out = ["Module                  Size  Used by"]
    for name, size, cnt, by in rows:
        out.append(f"{name:<16}{size:>14}  {cnt} {by}".rstrip())
    return "\n".join(out) + "\n"


def proc_modules(peer: str | None) -> str:
    rows = [("nvidia_uvm", 1523712, 0, "-"), ("nvidia_drm", 73728, 0, "-"), ("nvidia_modeset", 1306624, 1, "nvidia_drm,")]
    if peer:
        rows.append((peer, 16384, 0, "-"))
    rows.append(("nvidia", 56598528, 60, "nvidia_uvm," + (peer + "," if peer else "") + "nvidia_modeset,"))
    rows.append(("ib_core", 442368, 9, "rdma_cm,ib_ipoib," + (peer + "," if peer else "") + "mlx5_ib,ib_uverbs,"))
    def addr(n):
        return int(hashlib.sha256(n.encode()).hexdigest()[:7], 16)
    return "".join(f"{n} {s} {c} {d} Live 0xffffffffc{addr(n):07x} (OE)\n" for n, s, c, d in rows)


# =============================================================================== sysfs trees
class Tree:
    def __init__(self, root: Path):
        self.root = root

    def w(self, path: str, text: str) -> None:
        p = self.root / path.lstrip("/")
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)

    def d(self, path: str) -> None:
        (self.root / path.lstrip("/")).mkdir(parents=True, exist_ok=True)

    def ib(self, name: str, rate: str, state: str, ll: str, numa: int, bus: str, devid: str = "1021") -> None:
        b = f"/sys/class/infiniband/{name}"
        self.w(f"{b}/ports/1/rate", rate + "\n")
        self.w(f"{b}/ports/1/state", state + "\n")
        self.w(f"{b}/ports/1/phys_state", ("5: LinkUp" if "ACTIVE" in state else "3: Disabled") + "\n")
        self.w(f"{b}/ports/1/link_layer", ll + "\n")
        self.w(f"{b}/device/numa_node", f"{numa}\n")
        self.w(f"{b}/device/uevent", f"DRIVER=mlx5_core\nPCI_CLASS=20700\nPCI_ID=15B3:{devid.upper()}\n"
                                    f"PCI_SUBSYS_ID=15B3:0023\nPCI_SLOT_NAME={bus}\n"
                                    f"MODALIAS=pci:v000015B3d0000{devid.upper()}sv000015B3sd00000023bc02sc07i00\n")

    def net(self, name: str, speed: int | None, physical: bool, typ: int = 1) -> None:
        b = f"/sys/class/net/{name}"
        self.w(f"{b}/type", f"{typ}\n")
        self.w(f"{b}/operstate", "up\n")
        if speed is not None:
            self.w(f"{b}/speed", f"{speed}\n")
        if physical:
            self.w(f"{b}/device/uevent", "DRIVER=ixgbe\nPCI_SLOT_NAME=0000:05:00.0\n")

    def common(self, host: str, cpu: str | None, numa_nodes: int) -> None:
        self.w("/proc/sys/kernel/hostname", host + "\n")
        if cpu:
            self.w("/proc/cpuinfo", "".join(f"processor\t: {i}\nvendor_id\t: GenuineIntel\ncpu family\t: 6\n"
                                            f"model\t\t: 143\nmodel name\t: {cpu}\nstepping\t: 8\n\n" for i in range(2)))
        for n in range(numa_nodes):
            self.w(f"/sys/devices/system/node/node{n}/cpulist", "0-1\n")
        self.net("lo", None, False, 772)


def cmd(d: Path, key: str, text: str, rc: int = 0) -> None:
    (d / "cmd").mkdir(parents=True, exist_ok=True)
    (d / "cmd" / f"{key}.txt").write_text(text)
    (d / "cmd" / f"{key}.rc").write_text(f"{rc}\n")


MPIRUN_OMPI = "mpirun (Open MPI) 4.1.6\n\nReport bugs to http://www.open-mpi.org/community/help/\n"


def rel_factory(gnuma: dict[str, int], nnuma: dict[str, int], nv: dict[tuple[str, str], str],
                near: dict[tuple[str, str], str], socket_of=None):
    """Cell for devices a, b: NV# from nv, else an explicit 'near' code (PIX/PXB), else NODE on the same
    NUMA node, SYS across."""
    numa = {**gnuma, **nnuma}

    def rel(a, b):
        if (a, b) in nv or (b, a) in nv:
            return nv.get((a, b)) or nv[(b, a)]
        if (a, b) in near or (b, a) in near:
            return near.get((a, b)) or near[(b, a)]
        return "NODE" if numa[a] == numa[b] else "SYS"
    return rel


# =============================================================================== machines
def hopper_gpu(name, bus, i, seed, **kw):
    g = dict(name=name, bus=bus, uuid=uuid(f"{seed}{i}"), vbios="96.00.74.00.01", devid="0x233010DE",
             subsys="0x16C110DE", gen_max=5, gen_cur=5, gen_dev=5, gen_host=5, width=16, mem=81559,
             tdp="700.00 W", memclk="2619 MHz", maxclk="1980 MHz", fabric="Completed", gsp="565.57.01",
             board_pn="692-2G520-0200-000", gpu_pn="2330-885-A1", inforom="G520.0200.00.05")
    g.update(kw)
    return g


def ampere_gpu(name, bus, i, seed, **kw):
    g = dict(name=name, bus=bus, uuid=uuid(f"{seed}{i}"), vbios="92.00.9E.00.02", devid="0x20B210DE",
             subsys="0x147F10DE", gen_max=4, gen_cur=4, gen_dev=4, gen_host=4, width=16, mem=81920, reserved=763,
             tdp="400.00 W", min_power="100.00 W", memclk="1593 MHz", maxclk="1410 MHz", fabric="N/A",
             gsp="555.42.02", board_pn="692-2G506-0212-005", gpu_pn="20B2-896-A1", inforom="G506.0212.00.01")
    g.update(kw)
    return g


def h200x4_devicemd(d: Path):
    """The lent 4 x H200 node as ../../../../shared/DEVICE.md describes it (NV18 between every pair,
    PCIe Gen5 x16, one NUMA node), written before the real capture (h200x4/) existed."""
    buses = ["00000000:18:00.0", "00000000:2A:00.0", "00000000:3A:00.0", "00000000:5D:00.0"]
    gpus = [hopper_gpu("NVIDIA H200", b, i, "h200x4", devid="0x233510DE", subsys="0x18A410DE", mem=143771,
                       reserved=551, bar1=262144, vbios="96.00.AF.00.01", gpu_pn="2335-885-A1",
                       board_pn="692-2G520-0280-000", inforom="G520.0280.00.01", gsp="580.95.05")
            for i, b in enumerate(buses)]
    gl = [f"GPU{i}" for i in range(4)]
    nv = {(a, b): "NV18" for a in gl for b in gl if a != b}
    rel = rel_factory({g: 0 for g in gl}, {}, nv, {})
    cmd(d, "nvidia-smi_topo_-m", topo_m([{"cpus": "0-15", "numa": 0}] * 4, [], rel, "new"))
    cmd(d, "nvidia-smi_nvlink_-s", nvlink_s(gpus, 18, "26.562 GB/s"))
    cmd(d, "nvidia-smi_nvlink_-R", nvlink_r(gpus, 18, lambda g, k: ("FFFFFFFF:FF:FF.0", 0)))
    cmd(d, "nvidia-smi_-q", smi_q(gpus, "Hopper", "580.95.05", "13.0", "Mon Jun  1 10:00:00 2026"))
    cmd(d, "nvidia-smi_--query-gpu", query_csv(gpus))
    cmd(d, "mpirun_--version", MPIRUN_OMPI)
    t = Tree(d / "root")
    t.common("h200-node", None, 1)
    t.net("eth0", 10000, False)
    t.w("/proc/modules", proc_modules(None))


def dgx_h100(d: Path):
    buses = ["00000000:18:00.0", "00000000:2A:00.0", "00000000:3A:00.0", "00000000:5D:00.0",
             "00000000:9A:00.0", "00000000:AB:00.0", "00000000:BA:00.0", "00000000:DB:00.0"]
    gpus = [hopper_gpu("NVIDIA H100 80GB HBM3", b, i, "dgx-h100") for i, b in enumerate(buses)]
    gl = [f"GPU{i}" for i in range(8)]
    nl = [f"NIC{i}" for i in range(10)]
    gnuma = {g: (0 if i < 4 else 1) for i, g in enumerate(gl)}
    nnuma = {n: (0 if i < 5 else 1) for i, n in enumerate(nl)}
    nv = {(a, b): "NV18" for a in gl for b in gl if a != b}
    pix = {0: 0, 1: 1, 2: 2, 3: 5, 4: 6, 5: 7, 6: 8, 7: 9}          # GPU -> NIC on its PCIe switch
    near = {(f"GPU{g}", f"NIC{n}"): "PIX" for g, n in pix.items()}
    near[("NIC3", "NIC4")] = "PIX"                                   # the dual-port storage/host NIC
    rel = rel_factory(gnuma, nnuma, nv, near)
    gi = [{"cpus": "0-55,112-167" if i < 4 else "56-111,168-223", "numa": 0 if i < 4 else 1} for i in range(8)]
    nics = [{"name": f"mlx5_{i}"} for i in range(10)]
    cmd(d, "nvidia-smi_topo_-m", topo_m(gi, nics, rel, "new"))
    cmd(d, "nvidia-smi_nvlink_-s", nvlink_s(gpus, 18, "26.562 GB/s"))
    cmd(d, "nvidia-smi_-q", smi_q(gpus, "Hopper", "565.57.01", "12.7", "Thu Nov 14 07:00:14 2024"))
    cmd(d, "nvidia-smi_--query-gpu", query_csv(gpus))
    cmd(d, "lsmod", lsmod("nvidia_peermem", False, True))
    t = Tree(d / "root")
    t.common("dgx-h100-01", "Intel(R) Xeon(R) Platinum 8480CL", 2)
    nic_bus = ["0000:1a:00.0", "0000:3c:00.0", "0000:4d:00.0", "0000:5e:00.0", "0000:5e:00.1",
               "0000:9c:00.0", "0000:bc:00.0", "0000:cc:00.0", "0000:dc:00.0", "0000:e4:00.0"]
    for i in range(10):
        storage = i in (3, 4)
        t.ib(f"mlx5_{i}", "200 Gb/sec (4X HDR)" if storage else "400 Gb/sec (4X NDR)", "4: ACTIVE",
             "Ethernet" if storage else "InfiniBand", 0 if i < 5 else 1, nic_bus[i])
        if not storage:
            t.net(f"ibp{int(nic_bus[i][5:7], 16)}s0", 400000, True, 32)
    t.net("enp170s0f0", 100000, True)


def dgx_a100(d: Path):
    buses = ["00000000:07:00.0", "00000000:0F:00.0", "00000000:47:00.0", "00000000:4E:00.0",
             "00000000:87:00.0", "00000000:90:00.0", "00000000:B7:00.0", "00000000:BD:00.0"]
    gpus = [ampere_gpu("NVIDIA A100-SXM4-80GB", b, i, "dgx-a100", tdp="400.00 W") for i, b in enumerate(buses)]
    gl = [f"GPU{i}" for i in range(8)]
    nl = [f"mlx5_{i}" for i in range(10)]
    gnuma_l = [3, 3, 1, 1, 7, 7, 5, 5]
    cpus = {3: "48-63,176-191", 1: "16-31,144-159", 7: "112-127,240-255", 5: "80-95,208-223"}
    gnuma = dict(zip(gl, gnuma_l))
    nnuma = dict(zip(nl, [3, 3, 1, 1, 2, 2, 7, 7, 5, 5]))
    nv = {(a, b): "NV12" for a in gl for b in gl if a != b}
    near = {}
    for gpair, npair in [((0, 1), (0, 1)), ((2, 3), (2, 3)), ((4, 5), (6, 7)), ((6, 7), (8, 9))]:
        for g in gpair:
            for n in npair:
                near[(f"GPU{g}", f"mlx5_{n}")] = "PXB"
        near[(f"mlx5_{npair[0]}", f"mlx5_{npair[1]}")] = "PXB"
    near[("mlx5_4", "mlx5_5")] = "PIX"
    rel = rel_factory(gnuma, nnuma, nv, near)
    gi = [{"cpus": cpus[n], "numa": n} for n in gnuma_l]
    # pasted from a terminal: tabs expanded to 8 columns, as in most issue reports
    text = topo_m(gi, [{"name": n} for n in nl], rel, "mid", nic_names="mlx")
    cmd(d, "nvidia-smi_topo_-m", "\n".join(ln.expandtabs(8) for ln in text.split("\n")))
    cmd(d, "nvidia-smi_nvlink_-s", nvlink_s(gpus, 12, "25 GB/s"))
    sw = ["00000000:C4:00.0", "00000000:C5:00.0", "00000000:C6:00.0", "00000000:C7:00.0", "00000000:C8:00.0",
          "00000000:C9:00.0"]
    cmd(d, "nvidia-smi_nvlink_-R", nvlink_r(gpus, 12, lambda g, k: (sw[k // 2], 8 + 4 * (g % 4) + k % 2)))
    cmd(d, "nvidia-smi_-q", smi_q(gpus, "Ampere", "555.42.02", "12.5", "Thu Nov 14 10:45:47 2024"))
    # an older nvidia-smi that rejects one of the query fields: detection falls back to -q
    cmd(d, "nvidia-smi_--query-gpu", 'Field "pcie.link.gen.max" is not a valid field to query.\n\n', rc=2)
    cmd(d, "lsmod", lsmod("nv_peer_mem", False, True))
    cmd(d, "lstopo-no-graphics_--of_xml", hwloc_dgx_a100(buses, gnuma_l, nnuma))
    t = Tree(d / "root")
    t.common("dgx-a100-07", None, 8)
    nic_bus = ["0000:0c:00.0", "0000:12:00.0", "0000:4b:00.0", "0000:54:00.0", "0000:61:00.0", "0000:61:00.1",
               "0000:8d:00.0", "0000:94:00.0", "0000:ba:00.0", "0000:cc:00.0"]
    for i in range(10):
        t.ib(f"mlx5_{i}", "200 Gb/sec (4X HDR)", "4: ACTIVE", "InfiniBand", nnuma[f"mlx5_{i}"], nic_bus[i], "101b")


def hwloc_dgx_a100(buses, gnuma_l, nnuma) -> str:
    """hwloc 2.x XML (lstopo-no-graphics --of xml): per NUMA node a Group holding the PCI tree; GPUs
    with their NVML OS devices, ConnectX-6 HCAs with their OpenFabrics OS devices, six NVSwitches."""
    gp = iter(range(100, 10000))
    lines = ['<?xml version="1.0" encoding="UTF-8"?>', '<!DOCTYPE topology SYSTEM "hwloc2.dtd">',
             '<topology version="2.0">',
             '  <object type="Machine" os_index="0" cpuset="0xffffffff,0xffffffff,0xffffffff,0xffffffff,0xffffffff,'
             '0xffffffff,0xffffffff,0xffffffff" complete_cpuset="0xffffffff,0xffffffff,0xffffffff,0xffffffff,'
             '0xffffffff,0xffffffff,0xffffffff,0xffffffff" nodeset="0x000000ff" complete_nodeset="0x000000ff" '
             'gp_index="1">',
             '    <info name="DMIProductName" value="DGXA100 920-23687-2530-000"/>',
             '    <info name="DMIBoardVendor" value="NVIDIA"/>']
    nic_bus = {0: "0000:0c:00.0", 1: "0000:12:00.0", 2: "0000:4b:00.0", 3: "0000:54:00.0", 4: "0000:61:00.0",
               5: "0000:61:00.1", 6: "0000:8d:00.0", 7: "0000:94:00.0", 8: "0000:ba:00.0", 9: "0000:cc:00.0"}
    switches = ["0000:c4:00.0", "0000:c5:00.0", "0000:c6:00.0", "0000:c7:00.0", "0000:c8:00.0", "0000:c9:00.0"]
    for pkg in (0, 1):
        pnodes = range(pkg * 4, pkg * 4 + 4)
        mask = sum(1 << n for n in pnodes)
        lines.append(f'    <object type="Package" os_index="{pkg}" nodeset="0x{mask:08x}" complete_nodeset="0x{mask:08x}" '
                     f'gp_index="{next(gp)}">')
        lines.append('      <info name="CPUVendor" value="AuthenticAMD"/>')
        lines.append('      <info name="CPUModel" value="AMD EPYC 7742 64-Core Processor"/>')
        for nn in pnodes:
            lines.append(f'      <object type="Group" nodeset="0x{1 << nn:08x}" complete_nodeset="0x{1 << nn:08x}" '
                         f'gp_index="{next(gp)}" kind="1000" subkind="0">')
            lines.append(f'        <object type="NUMANode" os_index="{nn}" nodeset="0x{1 << nn:08x}" '
                         f'complete_nodeset="0x{1 << nn:08x}" gp_index="{next(gp)}" local_memory="135017373696"/>')
            devs = []
            for gi_, n in enumerate(gnuma_l):
                if n == nn:
                    devs.append(("gpu", gi_))
            for ni, n in enumerate([nnuma[f"mlx5_{i}"] for i in range(10)]):
                if n == nn:
                    devs.append(("nic", ni))
            if nn == 1 and pkg == 0:
                devs += [("nvs", i) for i in range(6)]
            if not devs:
                lines.append("      </object>")
                continue
            lines.append(f'        <object type="Bridge" gp_index="{next(gp)}" bridge_type="0-1" depth="0" '
                         f'bridge_pci="0000:[00-ff]">')
            for kind, idx in devs:
                if kind == "gpu":
                    b = buses[idx].lower()[4:]
                    lines.append(f'          <object type="PCIDev" gp_index="{next(gp)}" pci_busid="{b}" '
                                 f'pci_type="0302 [10de:20b2] [10de:147f] a1 00" pci_link_speed="31.507692">')
                    lines.append('            <info name="PCIVendor" value="NVIDIA Corporation"/>')
                    lines.append('            <info name="PCIDevice" value="GA100 [A100 SXM4 80GB]"/>')
                    lines.append(f'            <object type="OSDev" gp_index="{next(gp)}" name="nvml{idx}" '
                                 f'subtype="NVML" osdev_type="12">')
                    lines.append('              <info name="Backend" value="NVML"/>')
                    lines.append('              <info name="GPUVendor" value="NVIDIA Corporation"/>')
                    lines.append('              <info name="GPUModel" value="NVIDIA A100-SXM4-80GB"/>')
                    lines.append(f'              <info name="NVIDIAUUID" value="{uuid("dgx-a100" + str(idx))}"/>')
                    lines.append("            </object>")
                    lines.append("          </object>")
                elif kind == "nic":
                    lines.append(f'          <object type="PCIDev" gp_index="{next(gp)}" pci_busid="{nic_bus[idx]}" '
                                 f'pci_type="0207 [15b3:101b] [15b3:0007] 00 00" pci_link_speed="31.507692">')
                    lines.append('            <info name="PCIVendor" value="Mellanox Technologies"/>')
                    lines.append('            <info name="PCIDevice" value="MT28908 Family [ConnectX-6]"/>')
                    lines.append(f'            <object type="OSDev" gp_index="{next(gp)}" name="ib{idx}" '
                                 f'subtype="Network" osdev_type="2"/>')
                    lines.append(f'            <object type="OSDev" gp_index="{next(gp)}" name="mlx5_{idx}" '
                                 f'subtype="OpenFabrics" osdev_type="3">')
                    lines.append('              <info name="Port1State" value="4"/>')
                    lines.append("            </object>")
                    lines.append("          </object>")
                else:
                    lines.append(f'          <object type="PCIDev" gp_index="{next(gp)}" subtype="NVSwitch" '
                                 f'pci_busid="{switches[idx]}" pci_type="0680 [10de:1af1] [10de:0000] a1 00" '
                                 f'pci_link_speed="0.250000"/>')
            lines.append("        </object>")
            lines.append("      </object>")
        lines.append("    </object>")
    lines += ["  </object>", '  <info name="hwlocVersion" value="2.9.3"/>',
              '  <info name="ProcessName" value="lstopo-no-graphics"/>', "</topology>"]
    return "\n".join(lines) + "\n"


def hgx_a100_4gpu(d: Path):
    """4 x A100-SXM4-40GB on the 4-GPU HGX board: NV4 between every pair, one HDR200 HCA per GPU."""
    buses = ["00000000:03:00.0", "00000000:44:00.0", "00000000:84:00.0", "00000000:C4:00.0"]
    gpus = [ampere_gpu("NVIDIA A100-SXM4-40GB", b, i, "hgx-a100-4gpu", devid="0x20B010DE", subsys="0x134F10DE",
                       mem=40960, reserved=571, bar1=65536, gsp="N/A") for i, b in enumerate(buses)]
    gl = [f"GPU{i}" for i in range(4)]
    nl = [f"mlx5_{i}" for i in range(4)]
    gnuma_l = [3, 1, 7, 5]
    cpus = {3: "18-23,66-71", 1: "6-11,54-59", 7: "42-47,90-95", 5: "30-35,78-83"}
    nv = {(a, b): "NV4" for a in gl for b in gl if a != b}
    near = {(f"GPU{i}", f"mlx5_{i}"): "PIX" for i in range(4)}
    rel = rel_factory(dict(zip(gl, gnuma_l)), dict(zip(nl, gnuma_l)), nv, near)
    gi = [{"cpus": cpus[n], "numa": n} for n in gnuma_l]
    cmd(d, "nvidia-smi_topo_-m", topo_m(gi, [{"name": n} for n in nl], rel, "mid", nic_names="mlx"))
    cmd(d, "nvidia-smi_nvlink_-s", nvlink_s(gpus, 12, "25 GB/s"))

    def peer(g, k):
        p = [x for x in range(4) if x != g][k // 4]
        return buses[p], 4 * [x for x in range(4) if x != p].index(g) + k % 4
    cmd(d, "nvidia-smi_nvlink_-R", nvlink_r(gpus, 12, peer))
    cmd(d, "nvidia-smi_-q", smi_q(gpus, "Ampere", "535.154.05", "12.2", "Tue Feb  6 09:12:44 2024"))
    cmd(d, "nvidia-smi_--query-gpu", query_csv(gpus))
    t = Tree(d / "root")
    t.common("jwb0001", "AMD EPYC 7402 24-Core Processor", 8)
    t.w("/proc/modules", proc_modules("nvidia_peermem"))
    for i, n in enumerate(gnuma_l):
        t.ib(f"mlx5_{i}", "200 Gb/sec (4X HDR)", "4: ACTIVE", "InfiniBand", n, f"0000:{[0x01, 0x41, 0x81, 0xc1][i]:02x}:00.0",
             "101b")


def hgx_h100_4gpu(d: Path):
    """4 x H100 SXM5 on the 4-GPU HGX board: NV6 between every pair (18 links / 3 peers), NDR per GPU."""
    buses = ["00000000:19:00.0", "00000000:3B:00.0", "00000000:9B:00.0", "00000000:BB:00.0"]
    gpus = [hopper_gpu("NVIDIA H100 80GB HBM3", b, i, "hgx-h100-4gpu", fabric="N/A") for i, b in enumerate(buses)]
    gl = [f"GPU{i}" for i in range(4)]
    nl = [f"NIC{i}" for i in range(4)]
    gnuma_l = [3, 1, 7, 5]
    cpus = {3: "24-31,96-103", 1: "8-15,80-87", 7: "56-63,128-135", 5: "40-47,112-119"}
    nv = {(a, b): "NV6" for a in gl for b in gl if a != b}
    near = {(f"GPU{i}", f"NIC{i}"): "PIX" for i in range(4)}
    rel = rel_factory(dict(zip(gl, gnuma_l)), dict(zip(nl, gnuma_l)), nv, near)
    gi = [{"cpus": cpus[n], "numa": n} for n in gnuma_l]
    cmd(d, "nvidia-smi_topo_-m", topo_m(gi, [{"name": f"mlx5_{i}"} for i in range(4)], rel, "new"))
    cmd(d, "nvidia-smi_nvlink_-s", nvlink_s(gpus, 18, "26.562 GB/s"))
    cmd(d, "nvidia-smi_-q", smi_q(gpus, "Hopper", "570.86.15", "12.8", "Wed Feb 26 15:20:31 2025"))
    cmd(d, "nvidia-smi_--query-gpu", query_csv(gpus))
    cmd(d, "lsmod", lsmod(None, True, True))
    cmd(d, "mpirun_--version", "HYDRA build details:\n    Version:                                 4.1.2\n"
                              "    Release Date:                            Wed Jun  7 15:22:45 CDT 2023\n")
    t = Tree(d / "root")
    t.common("hgx4-h100", "Intel(R) Xeon(R) Platinum 8462Y+", 8)
    t.w("/dev/gdrdrv", "")
    for i, n in enumerate(gnuma_l):
        t.ib(f"mlx5_{i}", "400 Gb/sec (4X NDR)", "4: ACTIVE", "InfiniBand", n, f"0000:{[0x1a, 0x3c, 0x9c, 0xbc][i]:02x}:00.0")


def pcie_nvbridge(d: Path):
    """4 x A100 80GB PCIe in two sockets, NVLink bridges joining 0-1 and 2-3 (NV12), one dual-port
    EDR HCA per socket with one port cabled."""
    buses = ["00000000:17:00.0", "00000000:31:00.0", "00000000:B1:00.0", "00000000:CA:00.0"]
    gpus = [ampere_gpu("NVIDIA A100 80GB PCIe", b, i, "pcie-nvbridge", devid="0x20B510DE", subsys="0x153310DE",
                       tdp="300.00 W", mem=81920) for i, b in enumerate(buses)]
    gl = [f"GPU{i}" for i in range(4)]
    nl = [f"mlx5_{i}" for i in range(4)]
    sock = [0, 0, 1, 1]
    nv = {("GPU0", "GPU1"): "NV12", ("GPU2", "GPU3"): "NV12"}
    near = {("mlx5_0", "mlx5_1"): "PIX", ("mlx5_2", "mlx5_3"): "PIX"}
    rel = rel_factory(dict(zip(gl, sock)), dict(zip(nl, sock)), nv, near)
    gi = [{"cpus": "0-31" if s == 0 else "32-63"} for s in sock]
    cmd(d, "nvidia-smi_topo_-m", topo_m(gi, [{"name": n} for n in nl], rel, "old", nic_names="mlx"))
    cmd(d, "nvidia-smi_nvlink_-s", nvlink_s(gpus, 12, "25 GB/s"))
    cmd(d, "nvidia-smi_-q", smi_q(gpus, "Ampere", "550.54.15", "12.4", "Fri Mar 15 11:02:09 2024"))
    cmd(d, "nvidia-smi_--query-gpu", query_csv(gpus))
    cmd(d, "lsmod", lsmod(None, False, True))
    cmd(d, "mpirun_--version", MPIRUN_OMPI)
    t = Tree(d / "root")
    t.common("gpu-bridge-02", "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz", 2)
    for i, s in enumerate(sock):
        up = i in (0, 2)
        t.ib(f"mlx5_{i}", "100 Gb/sec (4X EDR)" if up else "10 Gb/sec (4X SDR)", "4: ACTIVE" if up else "1: DOWN",
             "InfiniBand", s, ["0000:4b:00.0", "0000:4b:00.1", "0000:98:00.0", "0000:98:00.1"][i], "101b")


def pcie_only(d: Path):
    """A workstation: 2 x GeForce RTX 4090 under one host bridge (PHB), no NVLink, 10 GbE only."""
    buses = ["00000000:01:00.0", "00000000:41:00.0"]
    gpus = [dict(name="NVIDIA GeForce RTX 4090", brand="GeForce", bus=b, uuid=uuid(f"pcie-only{i}"),
                 vbios="95.02.3C.00.8E", devid="0x268410DE", subsys="0x88EB1043", gen_max=4, gen_cur=1, gen_dev=1,
                 gen_host=4, width=16, mem=24564, reserved=349, bar1=256, tdp="450.00 W", min_power="150.00 W",
                 memclk="405 MHz", maxclk="3120 MHz", fabric="N/A", power="21.37 W")
            for i, b in enumerate(buses)]
    rel = rel_factory({"GPU0": 0, "GPU1": 0}, {}, {}, {("GPU0", "GPU1"): "PHB"})
    cmd(d, "nvidia-smi_topo_-m", topo_m([{"cpus": "0-63", "numa": 0}] * 2, [], rel, "new"))
    cmd(d, "nvidia-smi_nvlink_-s", nvlink_s(gpus, 0, None))
    cmd(d, "nvidia-smi_-q", smi_q(gpus, "Ada Lovelace", "580.126.20", "13.0", "Sun May  3 22:41:03 2026"))
    cmd(d, "nvidia-smi_--query-gpu", query_csv(gpus))
    cmd(d, "lsmod", lsmod(None, False, False))
    t = Tree(d / "root")
    t.common("ws-4090", "AMD Ryzen Threadripper 3975WX 32-Cores", 1)
    t.net("enp5s0", 10000, True)
    t.net("docker0", None, False)


def no_gpu(d: Path):
    """A login node: no nvidia-smi, no GPU, no RDMA NIC, a virtual Ethernet interface."""
    cmd(d, "lsmod", "Module                  Size  Used by\nxt_conntrack           12288  1\nnf_nat                 61440  1 "
                    "xt_MASQUERADE\noverlay               212992  0\n")
    t = Tree(d / "root")
    t.common("login01", "Intel(R) Xeon(R) Gold 6248 CPU @ 2.50GHz", 2)
    t.net("eth0", 10000, False)


MACHINES = {"h200x4-devicemd": h200x4_devicemd, "dgx-h100": dgx_h100, "dgx-a100": dgx_a100, "hgx-a100-4gpu": hgx_a100_4gpu,
            "hgx-h100-4gpu": hgx_h100_4gpu, "pcie-nvbridge": pcie_nvbridge, "pcie-only": pcie_only, "no-gpu": no_gpu}


def main(argv: list[str]) -> int:
    names = list(MACHINES) if argv == ["--all"] else argv
    if not names or any(n not in MACHINES for n in names):
        print(f"usage: make_fixtures.py --all | {' '.join(MACHINES)}", file=sys.stderr)
        return 2
    for name in names:
        d = HERE / name
        if (d / "REAL_CAPTURE").exists():
            print(f"{name}: holds a real capture, left alone")
            continue
        if d.exists():
            shutil.rmtree(d)
        d.mkdir()
        MACHINES[name](d)
        print(f"wrote {d}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

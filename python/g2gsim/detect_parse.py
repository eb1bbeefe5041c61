"""Parsers for what `g2gsim machine detect` reads (see detect.py and docs/machine-detect.md).

Pure functions from text to plain data: ``nvidia-smi topo -m``, ``nvidia-smi nvlink -s``,
``nvidia-smi -q``, ``nvidia-smi --query-gpu`` CSV, ``lsmod`` / ``/proc/modules``, hwloc XML and a few
sysfs value formats.  Nothing here runs a command or opens a file, so every parser can be fed
captured outputs.
"""
from __future__ import annotations

import csv
import io
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

# ----------------------------------------------------------------------------------------- PCIe
# Theoretical bandwidth of one lane, per direction, in GB/s, after line encoding: Gen1/2 use
# 8b/10b, Gen3-5 128b/130b, Gen6 PAM4 FLIT mode (242 payload bytes of every 256).
PCIE_GTS = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0}
PCIE_ENCODING = {1: (8, 10), 2: (8, 10), 3: (128, 130), 4: (128, 130), 5: (128, 130), 6: (242, 256)}


def pcie_lane_gbs(gen: int) -> float:
    num, den = PCIE_ENCODING[gen]
    return PCIE_GTS[gen] * num / den / 8.0


def pcie_bw(gen: int, width: int) -> float:
    """Bytes/s per direction of a PCIe link, theoretical."""
    return pcie_lane_gbs(gen) * width * 1e9


def encoding_name(gen: int) -> str:
    num, den = PCIE_ENCODING[gen]
    return "FLIT 242B/256B" if gen == 6 else f"{num}b/{den}b"


def gen_from_gts(text: str) -> int | None:
    """'32.0 GT/s PCIe' (sysfs max_link_speed) -> 5."""
    m = re.search(r"([\d.]+)\s*GT/s", text or "")
    if not m:
        return None
    v = float(m.group(1))
    for g, gts in PCIE_GTS.items():
        if abs(gts - v) < 0.01:
            return g
    return None


def gen_from_link_gbs(gbs: float, width_guess: int = 16) -> int | None:
    """hwloc's pci_link_speed (GB/s for the whole link, after encoding) -> generation, assuming x16."""
    for g in PCIE_GTS:
        if abs(pcie_lane_gbs(g) * width_guess - gbs) / (pcie_lane_gbs(g) * width_guess) < 0.01:
            return g
    return None


def norm_bus_id(bus: str) -> str:
    """'00000000:18:00.0' (nvidia-smi) and '0000:18:00.0' (sysfs) -> '0000:18:00.0'."""
    bus = bus.strip().lower()
    m = re.match(r"^([0-9a-f]+):([0-9a-f]{2}):([0-9a-f]{2})\.([0-9a-f])$", bus)
    if not m:
        return bus
    return f"{int(m.group(1), 16):04x}:{m.group(2)}:{m.group(3)}.{m.group(4)}"


def _int(s) -> int | None:
    if s is None:
        return None
    m = re.match(r"^\s*(\d+)", str(s))
    return int(m.group(1)) if m else None


_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")

# ------------------------------------------------------------------------- nvidia-smi topo -m
# Ranks of the PCIe path codes, nearest first ("SOC" is the pre-2017 name of SYS).
PATH_RANK = {"X": 0, "PIX": 1, "PXB": 2, "PHB": 3, "NODE": 4, "SYS": 5, "SOC": 5}


@dataclass
class Topo:
    gpus: list[str]                        # column labels GPU0.. in order
    nics: list[str]                        # NIC names (mlx5_0, ...), legend applied
    cell: dict[tuple[str, str], str]       # (row label, column label) -> "NV18", "PIX", ...
    cpu_affinity: dict[int, str] = field(default_factory=dict)
    numa: dict[int, int | None] = field(default_factory=dict)
    nic_labels: list[str] = field(default_factory=list)   # column labels as printed (NIC0 or mlx5_0)
    has_numa_column: bool = False

    def nv(self, a: int, b: int) -> int:
        """NVLink count between GPU a and GPU b (0 if they are joined by PCIe only)."""
        m = re.match(r"^NV(\d+)$", self.cell.get((f"GPU{a}", f"GPU{b}"), ""))
        return int(m.group(1)) if m else 0

    def nv_matrix(self) -> list[list[int]]:
        n = len(self.gpus)
        return [[0 if a == b else self.nv(a, b) for b in range(n)] for a in range(n)]

    def path(self, gpu: int, nic_index: int) -> str:
        """PCIe path code between GPU `gpu` and NIC number `nic_index` (as ordered in self.nics)."""
        return self.cell.get((f"GPU{gpu}", self.nic_labels[nic_index]), "")

    def gpu_path(self, a: int, b: int) -> str:
        return self.cell.get((f"GPU{a}", f"GPU{b}"), "")


def parse_topo(text: str) -> Topo | None:
    """Parses the matrix of ``nvidia-smi topo -m`` (tab-separated as printed, or re-spaced as in a
    paste).  Returns None when there is no matrix."""
    lines = [_ANSI.sub("", ln.rstrip("\r\n")) for ln in text.splitlines()]
    hi = None
    for i, ln in enumerate(lines):
        toks = ln.split()
        if "GPU0" in toks and ln[:1] in (" ", "\t"):     # the header row starts with blank space
            hi = i
            break
    if hi is None:
        return None
    toks = lines[hi].split()
    stop = len(toks)
    for j, t in enumerate(toks):
        if t in ("CPU", "NUMA"):
            stop = j
            break
    devs = toks[:stop]
    extra = " ".join(toks[stop:])
    has_cpu = "CPU Affinity" in extra
    has_numa = "NUMA Affinity" in extra
    nd = len(devs)
    gpus = [d for d in devs if re.match(r"^GPU\d+$", d)]
    nic_labels = [d for d in devs if not re.match(r"^GPU\d+$", d)]
    cell: dict[tuple[str, str], str] = {}
    topo = Topo(gpus=gpus, nics=list(nic_labels), cell=cell, nic_labels=nic_labels, has_numa_column=has_numa)
    legend: dict[str, str] = {}
    in_legend = False
    for ln in lines[hi + 1:]:
        s = ln.strip()
        if not s:
            continue
        if s.startswith("Legend:"):
            in_legend = False
            continue
        if s.startswith("NIC Legend:"):
            in_legend = True
            continue
        if in_legend:
            m = re.match(r"^(NIC\d+):\s*(\S+)$", s)
            if m:
                legend[m.group(1)] = m.group(2)
            continue
        if "=" in s:          # legend lines "X    = Self"
            continue
        if "\t" in ln:
            parts = ln.split("\t")
            label = parts[0].strip()
            cells = [p.strip() for p in parts[1:1 + nd]]
            rest = [p.strip() for p in parts[1 + nd:]]
        else:
            parts = ln.split()
            label = parts[0]
            cells = parts[1:1 + nd]
            rest = parts[1 + nd:]
        if label not in devs or len(cells) < nd:
            continue
        for d, c in zip(devs, cells):
            cell[(label, d)] = c
        m = re.match(r"^GPU(\d+)$", label)
        if m:
            g = int(m.group(1))
            k = 0
            if has_cpu and len(rest) > k:
                topo.cpu_affinity[g] = rest[k]
                k += 1
            if has_numa and len(rest) > k:
                topo.numa[g] = _int(rest[k]) if rest[k] not in ("", "N/A") else None
    topo.nics = [legend.get(n, n) for n in nic_labels]
    return topo


# ----------------------------------------------------------------------- nvidia-smi nvlink -s
@dataclass
class NvlinkStatus:
    names: dict[int, str]                       # GPU index -> product name
    links: dict[int, dict[int, float | None]]   # GPU index -> link -> GB/s (None: inactive)

    def active(self, gpu: int) -> int:
        return sum(1 for v in self.links.get(gpu, {}).values() if v)

    def rates(self) -> list[float]:
        return [v for d in self.links.values() for v in d.values() if v]


def parse_nvlink_status(text: str) -> NvlinkStatus:
    names: dict[int, str] = {}
    links: dict[int, dict[int, float | None]] = {}
    cur = None
    for ln in text.splitlines():
        m = re.match(r"^GPU (\d+): (.*?)(?: \(UUID: [^)]*\))?\s*$", ln)
        if m:
            cur = int(m.group(1))
            names[cur] = m.group(2).strip()
            links.setdefault(cur, {})
            continue
        m = re.match(r"^\s+Link (\d+): (.*)$", ln)
        if m and cur is not None:
            v = m.group(2).strip()
            r = re.match(r"^([\d.]+)\s*GB/s", v)
            links[cur][int(m.group(1))] = float(r.group(1)) if r else None
    return NvlinkStatus(names, links)


def parse_nvlink_remote(text: str) -> dict[int, dict[int, str]]:
    """``nvidia-smi nvlink -R``: GPU index -> link -> PCI bus id at the far end (normalised).  A link to
    a switch the VM or container does not show ends at FFFFFFFF:FF:FF.0."""
    out: dict[int, dict[int, str]] = {}
    cur = None
    for ln in text.splitlines():
        m = re.match(r"^GPU (\d+): ", ln)
        if m:
            cur = int(m.group(1))
            out.setdefault(cur, {})
            continue
        m = re.match(r"^\s+Link (\d+): Remote Device ([0-9A-Fa-f]+:[0-9A-Fa-f]+:[0-9A-Fa-f]+\.[0-9A-Fa-f])", ln)
        if m and cur is not None:
            out[cur][int(m.group(1))] = norm_bus_id(m.group(2))
    return out


# ----------------------------------------------------------------------------- nvidia-smi -q
def parse_smi_q(text: str) -> list[dict[str, str]]:
    """One dict per GPU block of ``nvidia-smi -q``, keyed by indentation path:
    ``'bus_id'``, ``'Product Name'``, ``'PCI/GPU Link Info/PCIe Generation/Max'``, ``'Fabric/State'``..."""
    gpus: list[dict[str, str]] = []
    cur: dict[str, str] | None = None
    stack: list[tuple[int, str]] = []
    for raw in text.splitlines():
        if not raw.strip():
            continue
        indent = len(raw) - len(raw.lstrip(" "))
        line = raw.strip()
        m = re.match(r"^GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])$", line)
        if indent == 0 and m:
            cur = {"bus_id": m.group(1)}
            gpus.append(cur)
            stack = []
            continue
        if cur is None or indent == 0:
            continue
        while stack and stack[-1][0] >= indent:
            stack.pop()
        kv = re.match(r"^(\S.*?)\s*:\s(.*)$", line) or re.match(r"^(\S.*?)\s*:$", line)
        if kv and kv.lastindex == 2:
            cur["/".join([s for _, s in stack] + [kv.group(1).strip()])] = kv.group(2).strip()
        elif kv:
            cur["/".join([s for _, s in stack] + [kv.group(1).strip()])] = ""
        else:
            stack.append((indent, line))
    return gpus


def smi_q_attached(text: str) -> int | None:
    m = re.search(r"^Attached GPUs\s*:\s*(\d+)", text, re.M)
    return int(m.group(1)) if m else None


# --------------------------------------------------------------------- nvidia-smi --query-gpu
QUERY_FIELDS = ["index", "name", "pci.bus_id", "pcie.link.gen.current", "pcie.link.gen.max",
                "pcie.link.width.current", "pcie.link.width.max"]


def parse_query_csv(text: str) -> list[dict[str, str | None]]:
    rows = []
    for rec in csv.reader(io.StringIO(text), skipinitialspace=True):
        if len(rec) != len(QUERY_FIELDS):
            continue
        vals = [None if v.strip() in ("[N/A]", "N/A", "[Not Supported]", "") else v.strip() for v in rec]
        if vals[0] is None or not vals[0].isdigit():
            continue
        rows.append(dict(zip(QUERY_FIELDS, vals)))
    return rows


# ------------------------------------------------------------------------ kernel modules
def parse_modules(text: str) -> set[str]:
    """Module names from ``lsmod`` or ``/proc/modules`` (first column; lsmod's header dropped)."""
    out = set()
    for ln in text.splitlines():
        t = ln.split()
        if t and t[0] != "Module":
            out.add(t[0])
    return out


# ---------------------------------------------------------------------------- sysfs values
def parse_ib_rate(text: str) -> float | None:
    """'400 Gb/sec (4X NDR)' -> bytes/s (5e10)."""
    m = re.match(r"^\s*([\d.]+)\s*Gb/sec", text or "")
    return float(m.group(1)) * 1e9 / 8 if m else None


def parse_cpuinfo_model(text: str) -> str | None:
    for key in ("model name", "Model Name", "cpu model", "Processor"):
        m = re.search(rf"^{key}\s*:\s*(.+)$", text or "", re.M)
        if m and m.group(1).strip():
            return re.sub(r"\s+", " ", m.group(1).strip())
    return None


def parse_mpi_version(text: str) -> str | None:
    """First line of ``mpirun --version`` -> 'Open MPI 4.1.6', 'MPICH 4.1.2', ..."""
    m = re.search(r"\(Open MPI\)\s*(\S+)", text)
    if m:
        return f"Open MPI {m.group(1)}"
    m = re.search(r"Intel\(R\) MPI Library.*?Version\s+(\S+)", text)
    if m:
        return f"Intel MPI {m.group(1).rstrip(',')}"
    m = re.search(r"HYDRA build details:.*?Version:\s*(\S+)", text, re.S)
    if m:
        return f"MPICH (Hydra) {m.group(1)}"
    first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return first[:80] or None


# ------------------------------------------------------------------------------------ hwloc
@dataclass
class Hwloc:
    gpus: list[dict] = field(default_factory=list)       # {bus, link_gbs, numa, model}
    nics: list[dict] = field(default_factory=list)       # {name, bus, link_gbs, numa}
    nvswitches: list[str] = field(default_factory=list)  # PCI bus ids
    version: str | None = None


def _single_node(nodeset: str | None) -> int | None:
    if not nodeset:
        return None
    try:
        v = int(nodeset.replace(",", "").replace("0x", ""), 16)
    except ValueError:
        return None
    if v and v & (v - 1) == 0:
        return v.bit_length() - 1
    return None


def parse_hwloc(xml_text: str) -> Hwloc | None:
    """GPUs, OpenFabrics NICs and NVSwitches of an hwloc 2.x XML topology (lstopo --of xml)."""
    try:
        root = ET.fromstring(xml_text)
    except ET.ParseError:
        return None
    if root.tag != "topology":
        return None
    out = Hwloc()
    for info in root.findall("info"):
        if info.get("name") == "hwlocVersion":
            out.version = info.get("value")
    io_types = {"Bridge", "PCIDev", "OSDev", "Misc"}

    def walk(el, numa, pci):
        t = el.get("type")
        if t and t not in io_types and el.get("nodeset"):
            numa = _single_node(el.get("nodeset"))
        if t == "PCIDev":
            ptype = el.get("pci_type", "")
            m = re.match(r"^([0-9a-fA-F]{4}) \[([0-9a-fA-F]{4}):([0-9a-fA-F]{4})\]", ptype)
            cls, vendor = (m.group(1).lower(), m.group(2).lower()) if m else ("", "")
            pci = {"bus": norm_bus_id(el.get("pci_busid", "")), "numa": numa,
                   "link_gbs": float(el.get("pci_link_speed")) if el.get("pci_link_speed") else None}
            if vendor == "10de" and (el.get("subtype") == "NVSwitch" or cls == "0680"):
                out.nvswitches.append(pci["bus"])
            elif vendor == "10de" and cls in ("0300", "0302"):
                model = None
                for inf in el.iter("info"):
                    if inf.get("name") == "GPUModel":
                        model = inf.get("value")
                        break
                out.gpus.append({**pci, "model": model})
        if t == "OSDev" and (el.get("osdev_type") == "3" or el.get("subtype") == "OpenFabrics"):
            out.nics.append({"name": el.get("name"), "bus": pci["bus"] if pci else None,
                             "link_gbs": pci["link_gbs"] if pci else None, "numa": numa})
        for ch in el.findall("object"):
            walk(ch, numa, pci)

    for ch in root.findall("object"):
        walk(ch, None, None)
    return out

"""``g2gsim machine detect``: write the node part of a machine file from what this node shows.

    from g2gsim.detect import detect
    text = detect(Path("node.toml"))          # inspects this node, writes node.toml, returns the TOML

Reads ``nvidia-smi topo -m`` (GPU count, NVLink counts per pair, PCIe paths GPU-NIC, CPU/NUMA
affinity), ``nvidia-smi --query-gpu`` and ``nvidia-smi -q`` (product name, PCIe generation and
width, NVSwitch fabric state), ``nvidia-smi nvlink -s`` (links per GPU and their rate), hwloc's
``lstopo-no-graphics --of xml`` when installed, sysfs (``/sys/class/infiniband``, ``/sys/class/net``,
``/sys/bus/pci/devices``), ``lsmod`` or ``/proc/modules`` (nvidia_peermem / nv_peer_mem),
``/dev/gdrdrv`` and ``mpirun --version``.  Every value written carries its source in a TOML comment;
what cannot be seen from one node (the inter-node network, latencies, MPI protocol costs) is written
as a schema default marked ``# NOT DETECTED``, so the file validates and ``g2gsim calibrate`` or the
user can replace it.  Works, saying what it could not find, with no GPU, no NIC or no nvidia-smi.

Commands go through ``runner(cmd) -> (returncode, stdout)`` and files are read under ``root``, so
tests replay captured outputs (tests/data/detect/).  ``python -m g2gsim.detect --capture DIR``
saves everything it runs and reads, in the layout the tests replay.  See docs/machine-detect.md.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import __version__
from .detect_parse import (
    PATH_RANK,
    QUERY_FIELDS,
    encoding_name,
    gen_from_gts,
    gen_from_link_gbs,
    norm_bus_id,
    parse_cpuinfo_model,
    parse_hwloc,
    parse_ib_rate,
    parse_modules,
    parse_mpi_version,
    parse_nvlink_remote,
    parse_nvlink_status,
    parse_query_csv,
    parse_smi_q,
    parse_topo,
    pcie_bw,
    smi_q_attached,
)
from .machines import toml_value as _toml_value

Runner = Callable[[list[str]], tuple[int, str]]

CMD_TOPO = ["nvidia-smi", "topo", "-m"]
CMD_QUERY = ["nvidia-smi", "--query-gpu=" + ",".join(QUERY_FIELDS), "--format=csv,noheader,nounits"]
CMD_Q = ["nvidia-smi", "-q"]
CMD_NVLINK = ["nvidia-smi", "nvlink", "-s"]
CMD_NVLINK2 = ["nvidia-smi", "nvlink", "--status"]
CMD_NVREMOTE = ["nvidia-smi", "nvlink", "-R"]
CMD_HWLOC = ["lstopo-no-graphics", "--of", "xml"]
CMD_LSMOD = ["lsmod"]
CMD_MPI = ["mpirun", "--version"]

# file names of captured outputs (tests/data/detect/<machine>/cmd/<key>.txt and <key>.rc)
CMD_KEYS = {
    tuple(CMD_TOPO): "nvidia-smi_topo_-m",
    tuple(CMD_QUERY): "nvidia-smi_--query-gpu",
    tuple(CMD_Q): "nvidia-smi_-q",
    tuple(CMD_NVLINK): "nvidia-smi_nvlink_-s",
    tuple(CMD_NVLINK2): "nvidia-smi_nvlink_--status",
    tuple(CMD_NVREMOTE): "nvidia-smi_nvlink_-R",
    tuple(CMD_HWLOC): "lstopo-no-graphics_--of_xml",
    tuple(CMD_LSMOD): "lsmod",
    tuple(CMD_MPI): "mpirun_--version",
}

# Per-link NVLink rate (GB/s per direction) by product, used only when `nvidia-smi nvlink -s` gives none.
NVLINK_RATE_BY_PRODUCT = [
    (r"B200|B100|GB200|GB300|B300", 53.125, "NVLink 5"),
    (r"H100|H200|H800|H20|GH200", 26.562, "NVLink 4"),
    (r"A100|A800|A30", 25.0, "NVLink 3"),
    (r"RTX A6000|A40|RTX 3090", 14.0625, "NVLink 3 (bridge)"),
    (r"V100", 25.781, "NVLink 2"),
    (r"P100", 20.0, "NVLink 1"),
]
# The most NVLinks any NVIDIA GPU has had (H100/H200/B200: 18); a GPU whose NV# counts to its peers add
# up to more than that must reach them through a switch.
MAX_LINKS_PER_GPU = 18

# Schema defaults (crates/g2g-net/src/config.rs) written for what cannot be seen; placeholders where a
# value is required.
PLACEHOLDER_PCIE = ("15.75GB/s", "PCIe Gen3 x16, the lowest current datacenter link")
PLACEHOLDER_NIC_BW = "100Gb/s"
NOT = "NOT DETECTED"


def cmd_key(cmd: list[str]) -> str:
    return CMD_KEYS.get(tuple(cmd)) or re.sub(r"[^A-Za-z0-9.=,+-]+", "_", " ".join(cmd))[:100]


# ================================================================================ I/O seams
def system_runner(cmd: list[str], timeout: float = 120.0) -> tuple[int, str]:
    """Runs ``cmd``; (127, '') when it is not installed.  On failure stderr is appended to stdout so
    the notes can quote the error."""
    env = dict(os.environ, LC_ALL="C", LANG="C")
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, errors="replace")
    except FileNotFoundError:
        return 127, ""
    except PermissionError:
        return 126, ""
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        return 124, out
    except OSError as e:
        return 126, str(e)
    return p.returncode, p.stdout if p.returncode == 0 else p.stdout + p.stderr


def replay_runner(capture_dir: str | Path) -> Runner:
    """A runner answering from a capture directory (``cmd/<key>.txt``, ``cmd/<key>.rc``).  A command
    with no file there is 'not installed' (127) when nothing of its program was captured, else it
    fails (exit status 1, 'not in the capture')."""
    d = Path(capture_dir) / "cmd"

    def run(cmd: list[str]) -> tuple[int, str]:
        key = cmd_key(cmd)
        out_f, rc_f = d / f"{key}.txt", d / f"{key}.rc"
        if not out_f.exists() and not rc_f.exists():
            prog = cmd_key(cmd[:1])
            if d.is_dir() and any(f.name.startswith(prog + "_") for f in d.iterdir()):
                return 1, f"{' '.join(cmd)}: not in the capture {capture_dir}\n"
            return 127, ""
        out = out_f.read_text() if out_f.exists() else ""
        rc = int(rc_f.read_text().strip() or 0) if rc_f.exists() else 0
        return rc, out
    return run


def recording_runner(inner: Runner, capture_dir: str | Path) -> Runner:
    d = Path(capture_dir) / "cmd"
    d.mkdir(parents=True, exist_ok=True)

    def run(cmd: list[str]) -> tuple[int, str]:
        rc, out = inner(cmd)
        key = cmd_key(cmd)
        (d / f"{key}.txt").write_text(out)
        (d / f"{key}.rc").write_text(f"{rc}\n")
        return rc, out
    return run


class Files:
    """Reads under ``root`` (``/`` on a live node, a fixture tree in tests).  With ``record_to``, every
    file read and directory listed is copied to ``record_to`` so the capture can be replayed."""

    def __init__(self, root: str | Path = "/", record_to: str | Path | None = None):
        self.root = Path(root)
        self.record_to = Path(record_to) if record_to else None
        self.read_paths: list[str] = []

    def _p(self, path: str) -> Path:
        return self.root / path.lstrip("/")

    def read(self, path: str, record: bool = True) -> str | None:
        try:
            text = self._p(path).read_text(errors="replace")
        except (OSError, ValueError):
            return None
        if record:
            self._save(path, text)
        return text

    def exists(self, path: str) -> bool:
        p = self._p(path)
        ok = os.path.exists(p)
        if ok and self.record_to is not None:
            if p.is_dir():
                (self.record_to / path.lstrip("/")).mkdir(parents=True, exist_ok=True)
            else:
                self._save(path, "" if not p.is_file() else None)
        return ok

    def listdir(self, path: str, record_entries: bool = True) -> list[str]:
        """Sorted names in a directory ([] if missing).  Recording keeps the directory and, with
        ``record_entries``, an empty directory for each entry that is one, so the listing replays."""
        try:
            names = sorted(os.listdir(self._p(path)))
        except OSError:
            return []
        if self.record_to is not None:
            dst = self.record_to / path.lstrip("/")
            dst.mkdir(parents=True, exist_ok=True)
            if record_entries:
                for n in names:
                    if (self._p(path) / n).is_dir():
                        (dst / n).mkdir(exist_ok=True)
        return names

    def record(self, path: str) -> None:
        text = self.read(path, record=False)
        if text is not None:
            self._save(path, text)

    def save(self, path: str, text: str) -> None:
        """Records ``text`` as the content of ``path`` (for a file read whole but needed only in part)."""
        self._save(path, text)

    def _save(self, path: str, text: str | None) -> None:
        self.read_paths.append(path)
        if self.record_to is None:
            return
        dst = self.record_to / path.lstrip("/")
        dst.parent.mkdir(parents=True, exist_ok=True)
        if text is None:
            try:
                text = self._p(path).read_text(errors="replace")
            except OSError:
                text = ""
        dst.write_text(text)


# ================================================================================ the result
@dataclass
class V:
    """A machine-file value with the comment that says where it came from."""
    value: Any
    source: str
    detected: bool = True


@dataclass
class Gpu:
    index: int
    name: str | None = None
    bus: str | None = None
    gen_max: int | None = None
    gen_cur: int | None = None
    width_max: int | None = None
    width_cur: int | None = None
    numa: int | None = None
    cpus: str | None = None
    link_src: str | None = None


@dataclass
class Nic:
    name: str
    rate: float | None = None          # bytes/s of the active port
    rate_text: str | None = None
    link_layer: str | None = None
    state: str | None = None
    active: bool | None = None
    numa: int | None = None
    bus: str | None = None


@dataclass
class Detection:
    host: str
    gpus: list[Gpu]
    gpu_source: str
    nics: list[Nic]                                 # every RDMA NIC seen
    tables: dict[str, dict[str, V]]                  # machine-file tables, in output order
    notes: list[str] = field(default_factory=list)   # what was not found, warnings
    sources: list[str] = field(default_factory=list)  # commands and files that answered
    comments: dict[str, list[str]] = field(default_factory=dict)  # extra comment lines per table
    nv_matrix: list[list[int]] | None = None
    description: str = ""
    gpu_socket: list[int] = field(default_factory=list)      # socket (NUMA domain) index of each GPU
    socket_of_numa: dict[int, int] = field(default_factory=dict)

    # ---- convenience accessors (bytes/s for bandwidths)
    def _v(self, table: str, key: str):
        v = self.tables.get(table, {}).get(key)
        return v.value if v else None

    @property
    def gpu_count(self) -> int:
        return self._v("node", "gpus")

    @property
    def nvlink_kind(self) -> str:
        return self._v("node.nvlink", "kind")

    @property
    def nvlink_bw(self) -> float:
        v = self._v("node.nvlink", "bw")
        return _bw_value(v) if v else 0.0

    @property
    def nvlink_pairs(self) -> list[tuple[int, int, float]]:
        return [(a, b, _bw_value(s)) for a, b, s in (self._v("node.nvlink", "pairs") or [])]

    @property
    def pcie_gen(self) -> int | None:
        return self._v("node.pcie", "generation")

    @property
    def pcie_width(self) -> int | None:
        return self._v("node.pcie", "width")

    @property
    def pcie_bw(self) -> float:
        return _bw_value(self._v("node.pcie", "bw"))

    @property
    def nic_count(self) -> int:
        return self._v("node.nic", "count")

    @property
    def nic_bw(self) -> float:
        return _bw_value(self._v("node.nic", "bw"))

    @property
    def nic_affinity(self):
        return self._v("node.nic", "affinity")

    @property
    def gpudirect_rdma(self) -> bool:
        return self._v("node.nic", "gpudirect_rdma")

    def not_detected(self) -> list[str]:
        return [f"{t}.{k}" for t, kv in self.tables.items() for k, v in kv.items() if not v.detected]


def _bw_value(s: str) -> float:
    m = re.match(r"^([\d.]+)\s*([KMGT]?)([Bb])/s$", s)
    if not m:
        raise ValueError(f"not a bandwidth: {s!r}")
    mult = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}[m.group(2)]
    return float(m.group(1)) * mult / (8 if m.group(3) == "b" else 1)


def fmt_gbs(bps: float) -> str:
    """Bytes/s -> a machine-file bandwidth string with 4 significant digits: '478.1GB/s'."""
    g = bps / 1e9
    if g >= 1000:
        return f"{g:.0f}GB/s"
    s = f"{g:.4g}"
    return f"{s}GB/s"


# ================================================================================ inspection
class _Ctx:
    def __init__(self, runner: Runner, files: Files):
        self.runner = runner
        self.files = files
        self.notes: list[str] = []
        self.sources: list[str] = []
        self._cache: dict[tuple, tuple[int, str]] = {}
        self._failed: dict[str, set[str]] = {}

    def run(self, cmd: list[str]) -> str | None:
        """stdout of a successful command, else None (and a note saying why)."""
        key = tuple(cmd)
        if key not in self._cache:
            try:
                self._cache[key] = self.runner(list(cmd))
            except Exception as e:  # noqa: BLE001 - a broken runner must not stop detection
                self._cache[key] = (126, f"{type(e).__name__}: {e}")
        rc, out = self._cache[key]
        shown = " ".join(cmd) if len(" ".join(cmd)) < 60 else " ".join(cmd[:2]) + " ..."
        if rc == 0:
            if shown not in self.sources:
                self.sources.append(shown)
            return out
        if rc == 127:
            self.note(f"`{cmd[0]}`: not installed")
            return None
        first = next((ln.strip() for ln in (out or "").splitlines() if ln.strip()), "")
        seen = self._failed.setdefault(cmd[0], set())
        if first and first in seen:         # e.g. every nvidia-smi call: "couldn't communicate with the driver"
            return None
        seen.add(first)
        self.note(f"`{shown}`: exit status {rc}" + (f": {first[:120]}" if first else ""))
        return None

    def note(self, s: str) -> None:
        if s not in self.notes:
            self.notes.append(s)

    def read(self, path: str, record: bool = True) -> str | None:
        return self.files.read(path, record=record)


def _hostname(ctx: _Ctx) -> str:
    for p in ("/proc/sys/kernel/hostname", "/etc/hostname"):
        t = ctx.read(p)
        if t and t.strip():
            return t.strip().split(".")[0]
    return "node"


def _gpus(ctx: _Ctx, topo, q_gpus, query_rows, hw, sysfs_gpus) -> tuple[list[Gpu], str]:
    if query_rows:
        gpus = [Gpu(index=int(r["index"]), name=r["name"], bus=norm_bus_id(r["pci.bus_id"] or ""),
                    gen_cur=_i(r["pcie.link.gen.current"]), gen_max=_i(r["pcie.link.gen.max"]),
                    width_cur=_i(r["pcie.link.width.current"]), width_max=_i(r["pcie.link.width.max"]),
                    link_src="nvidia-smi --query-gpu pcie.link.gen.max, pcie.link.width.max")
                for r in query_rows]
        src = "nvidia-smi --query-gpu"
    elif q_gpus:
        gpus = [Gpu(index=i, name=g.get("Product Name"), bus=norm_bus_id(g["bus_id"])) for i, g in enumerate(q_gpus)]
        src = "nvidia-smi -q"
    elif topo is not None and topo.gpus:
        gpus = [Gpu(index=i) for i in range(len(topo.gpus))]
        src = "nvidia-smi topo -m"
    elif hw is not None and hw.gpus:
        gpus = [Gpu(index=i, name=g["model"], bus=g["bus"], numa=g["numa"]) for i, g in enumerate(hw.gpus)]
        src = "hwloc (lstopo-no-graphics --of xml), NVIDIA display-class PCI devices"
    elif sysfs_gpus:
        gpus = [Gpu(index=i, bus=b) for i, b in enumerate(sorted(sysfs_gpus))]
        src = "/sys/bus/pci/devices (vendor 0x10de, display class); no nvidia-smi, so no names or NVLink"
    else:
        return [], ""
    # PCIe generation/width: -q, then hwloc, then sysfs
    by_bus_q = {norm_bus_id(g["bus_id"]): g for g in q_gpus}
    for g in gpus:
        qg = by_bus_q.get(g.bus or "") or (q_gpus[g.index] if g.index < len(q_gpus) and not g.bus else None)
        if qg:
            g.name = g.name or qg.get("Product Name")
            if g.gen_max is None:
                g.gen_max = _i(qg.get("PCI/GPU Link Info/PCIe Generation/Max"))
                g.gen_cur = _i(qg.get("PCI/GPU Link Info/PCIe Generation/Current"))
                g.width_max = _i(qg.get("PCI/GPU Link Info/Link Width/Max"))
                g.width_cur = _i(qg.get("PCI/GPU Link Info/Link Width/Current"))
                if g.gen_max is not None:
                    g.link_src = 'nvidia-smi -q "PCIe Generation Max", "Link Width Max"'
    if topo is not None:
        if len(topo.gpus) != len(gpus):
            ctx.note(f"nvidia-smi topo -m lists {len(topo.gpus)} GPUs but {src} lists {len(gpus)}")
        for g in gpus:
            g.numa = topo.numa.get(g.index, g.numa)
            g.cpus = topo.cpu_affinity.get(g.index) or None
    hw_by_bus = {g["bus"]: g for g in (hw.gpus if hw else [])}
    for g in gpus:
        h = hw_by_bus.get(g.bus or "")
        if h:
            if g.numa is None:
                g.numa = h["numa"]
            if g.gen_max is None and h["link_gbs"]:
                gen = gen_from_link_gbs(h["link_gbs"])
                if gen:
                    g.gen_max, g.width_max = gen, 16
                    g.link_src = f"hwloc pci_link_speed {h['link_gbs']:.2f} GB/s (read as x16)"
        if g.bus and (g.gen_max is None or g.numa is None):
            base = f"/sys/bus/pci/devices/{g.bus}"
            if g.gen_max is None:
                gen = gen_from_gts(ctx.read(f"{base}/max_link_speed") or "")
                width = _i(ctx.read(f"{base}/max_link_width"))
                if gen and width:
                    g.gen_max, g.width_max = gen, width
                    g.link_src = f"{base}/max_link_speed, max_link_width"
            if g.numa is None:
                n = _i(ctx.read(f"{base}/numa_node"))
                g.numa = n
    return gpus, src


def _i(s) -> int | None:
    if s is None:
        return None
    m = re.match(r"^\s*(\d+)", str(s))
    return int(m.group(1)) if m else None


def _sysfs_pci(ctx: _Ctx) -> tuple[list[str], list[str]]:
    """(NVIDIA GPU bus ids, NVSwitch bus ids) from /sys/bus/pci/devices."""
    gpus, switches = [], []
    base = "/sys/bus/pci/devices"
    for d in ctx.files.listdir(base, record_entries=False):
        vendor = (ctx.read(f"{base}/{d}/vendor", record=False) or "").strip().lower()
        if vendor != "0x10de":
            continue
        ctx.files.record(f"{base}/{d}/vendor")
        cls = (ctx.read(f"{base}/{d}/class") or "").strip().lower()
        if cls.startswith("0x0300") or cls.startswith("0x0302"):
            gpus.append(norm_bus_id(d))
        elif cls.startswith("0x0680"):
            switches.append(norm_bus_id(d))
    return gpus, switches


def _sysfs_ib(ctx: _Ctx) -> dict[str, Nic]:
    out: dict[str, Nic] = {}
    base = "/sys/class/infiniband"
    for dev in ctx.files.listdir(base):
        nic = Nic(name=dev)
        ports = ctx.files.listdir(f"{base}/{dev}/ports")
        states = []
        for p in ports:
            pb = f"{base}/{dev}/ports/{p}"
            rate_t = (ctx.read(f"{pb}/rate") or "").strip()
            state = (ctx.read(f"{pb}/state") or "").strip()
            ll = (ctx.read(f"{pb}/link_layer") or "").strip()
            active = "ACTIVE" in state.upper()
            states.append(active)
            if nic.rate is None or (active and not nic.active):
                nic.rate, nic.rate_text = parse_ib_rate(rate_t), rate_t or None
                nic.state, nic.link_layer = state or None, ll or None
                nic.active = active if state else None
        if ports and not any(states):
            nic.active = False
        nic.numa = _i(ctx.read(f"{base}/{dev}/device/numa_node"))
        ue = ctx.read(f"{base}/{dev}/device/uevent") or ""
        m = re.search(r"^PCI_SLOT_NAME=(\S+)", ue, re.M)
        if m:
            nic.bus = norm_bus_id(m.group(1))
        out[dev] = nic
    return out


def _sysfs_ethernet(ctx: _Ctx) -> tuple[str, float] | None:
    """Fastest physical Ethernet interface with a link: (name, bytes/s)."""
    best = None
    base = "/sys/class/net"
    for d in ctx.files.listdir(base):
        if d == "lo":
            continue
        if (ctx.read(f"{base}/{d}/type") or "1").strip() != "1":   # 32 = IPoIB, 772 = loopback
            continue
        if not ctx.files.exists(f"{base}/{d}/device"):            # virtual: veth, bridge, bond
            continue
        raw = (ctx.read(f"{base}/{d}/speed") or "").strip()          # Mb/s; -1 when the link is down
        speed = int(raw) if raw.isdigit() else None
        if speed:
            bw = speed * 1e6 / 8
            if best is None or bw > best[1]:
                best = (d, bw)
    return best


def inspect(runner: Runner | None = None, root: str | Path = "/", files: Files | None = None) -> Detection:
    """Inspects the node (through ``runner`` and files under ``root``) and returns what it found."""
    ctx = _Ctx(runner or system_runner, files or Files(root))
    host = _hostname(ctx)

    topo_t = ctx.run(CMD_TOPO)
    topo = parse_topo(topo_t) if topo_t else None
    if topo_t is not None and topo is None:
        ctx.note("nvidia-smi topo -m printed no GPU matrix")
    query_t = ctx.run(CMD_QUERY)
    query_rows = parse_query_csv(query_t) if query_t else []
    q_t = ctx.run(CMD_Q)
    q_gpus = parse_smi_q(q_t) if q_t else []
    nvl_t = ctx.run(CMD_NVLINK)
    if nvl_t is None or not nvl_t.strip():
        alt = ctx.run(CMD_NVLINK2)
        nvl_t = alt if alt is not None else nvl_t
    nvl = parse_nvlink_status(nvl_t) if nvl_t else None
    remote = {}
    if nvl is not None and nvl.rates():
        rem_t = ctx.run(CMD_NVREMOTE)
        remote = parse_nvlink_remote(rem_t) if rem_t else {}
    hw_t = ctx.run(CMD_HWLOC)
    hw = parse_hwloc(hw_t) if hw_t else None
    if hw_t is not None and hw is None:
        ctx.note("lstopo-no-graphics --of xml printed no readable hwloc XML")
    sysfs_gpus, sysfs_switches = _sysfs_pci(ctx)
    if sysfs_gpus or sysfs_switches:
        ctx.sources.append("/sys/bus/pci/devices")

    gpus, gpu_src = _gpus(ctx, topo, q_gpus, query_rows, hw, sysfs_gpus)
    if q_t is not None and q_gpus and smi_q_attached(q_t) not in (None, len(q_gpus)):
        ctx.note(f"nvidia-smi -q says {smi_q_attached(q_t)} GPUs attached but shows {len(q_gpus)}")

    tables: dict[str, dict[str, V]] = {"node": {}, "node.inter_socket": {}, "node.pcie": {}, "node.nvlink": {},
                                       "node.host": {}, "node.nic": {}, "network": {}, "mpi": {}, "gpu": {},
                                       "cpu": {}}
    comments: dict[str, list[str]] = {k: [] for k in tables}
    det = Detection(host=host, gpus=gpus, gpu_source=gpu_src, nics=[], tables=tables, comments=comments)

    # ------------------------------------------------------------------ [node]
    n = len(gpus)
    names = [g.name for g in gpus if g.name]
    model = names[0] if names and len(set(names)) == 1 else (", ".join(sorted(set(names))) if names else None)
    if n:
        tables["node"]["gpus"] = V(n, f"{gpu_src}: {n} x {model or 'NVIDIA GPU'}")
        numas = sorted({g.numa for g in gpus if g.numa is not None})
        comments["node"].append("GPU  PCI bus        NUMA  CPU affinity")
        for g in gpus:
            comments["node"].append(f"{g.index:<4} {g.bus or '?':<14} {('-' if g.numa is None else g.numa)!s:<5} "
                                    f"{g.cpus or '-'}")
        if numas:
            comments["node"].append(f"GPUs sit on NUMA node(s) {', '.join(map(str, numas))} "
                                    f"(nvidia-smi topo -m NUMA Affinity, hwloc or sysfs numa_node)")
    else:
        tables["node"]["gpus"] = V(1, f"{NOT}: no NVIDIA GPU found (no nvidia-smi, no NVIDIA GPU in hwloc "
                                      f"or /sys/bus/pci); placeholder of one GPU", detected=False)
        ctx.note("no NVIDIA GPU found: the [node] values are placeholders")

    cpuinfo = ctx.read("/proc/cpuinfo", record=False) or ""
    _sockets(ctx, det, topo, gpus, parse_cpuinfo_model(cpuinfo))

    # ------------------------------------------------------------------ [node.pcie]
    _pcie(ctx, det, gpus)

    # ------------------------------------------------------------------ [node.nvlink]
    switch_evidence = []
    fabric = sorted({str(g.get("Fabric/State")) for g in q_gpus if g.get("Fabric/State") not in (None, "", "N/A")})
    if any(s in ("Completed", "In Progress") for s in fabric):
        switch_evidence.append(f'nvidia-smi -q Fabric State "{fabric[0]}" (NVSwitch fabric manager)')
    if hw is not None and hw.nvswitches:
        switch_evidence.append(f"hwloc shows {len(hw.nvswitches)} NVSwitch PCI device(s)")
    elif sysfs_switches:
        switch_evidence.append(f"/sys/bus/pci/devices holds {len(sysfs_switches)} NVSwitch device(s) "
                               f"(vendor 0x10de, class 0x0680)")
    gpu_buses = {g.bus for g in gpus if g.bus}
    far = sorted({b for d in remote.values() for b in d.values()} - gpu_buses)
    if far and gpu_buses:
        hidden = " (a switch this VM or container does not show)" if all(b.startswith("ffff") for b in far) else ""
        switch_evidence.append(f"nvidia-smi nvlink -R: links end at {', '.join(far[:3])}"
                               f"{' ...' if len(far) > 3 else ''}, not at a GPU{hidden}")
    _nvlink(ctx, det, topo, nvl, gpus, switch_evidence)

    # ------------------------------------------------------------------ [node.host]
    tables["node.host"]["shm_bw"] = V("20GB/s", f"{NOT}: schema default; host shared-memory copy rate, "
                                                f"measure with g2gsim calibrate", False)
    tables["node.host"]["shm_latency"] = V("0.3us", f"{NOT}: schema default", False)

    # ------------------------------------------------------------------ [node.nic]
    ib = _sysfs_ib(ctx)
    if ib:
        ctx.sources.append("/sys/class/infiniband")
    _nics(ctx, det, topo, hw, ib, gpus)

    # ------------------------------------------------------------------ [network]
    tables["network"]["topology"] = V("crossbar", f"{NOT}: the inter-node network cannot be seen from one node; "
                                                  f"an ideal switch joining the NICs (set fat-tree, dragonfly or "
                                                  f"torus and their sizes for your system)", False)
    tables["network"]["hop_latency"] = V("100ns", f"{NOT}: schema default per switch hop", False)

    # ------------------------------------------------------------------ [mpi]
    mpi_t = ctx.run(CMD_MPI)
    lib = parse_mpi_version(mpi_t) if mpi_t else None
    if lib:
        tables["mpi"]["library"] = V(lib, "mpirun --version (informational; CUDA-awareness is not checked)")
    tables["mpi"]["eager_limit"] = V("64KiB", f"{NOT}: schema default; the MPI's eager/rendezvous switch", False)
    tables["mpi"]["send_overhead"] = V("0.3us", f"{NOT}: schema default", False)
    tables["mpi"]["recv_overhead"] = V("0.3us", f"{NOT}: schema default", False)

    # ------------------------------------------------------------------ [gpu] / [cpu]
    if model:
        tables["gpu"]["model"] = V(model, f"GPU product name from {gpu_src if names else '?'}")
    tables["gpu"]["copy_delay"] = V("2us", f"{NOT}: schema default; cudaMemcpy start-up, measure with g2gsim "
                                          f"calibrate", False)
    tables["gpu"]["gpudirect_delay"] = V("4us", f"{NOT}: schema default", False)
    tables["gpu"]["reduce_bw"] = V("500GB/s", f"{NOT}: schema default; GPU reduction kernel rate", False)
    cpuinfo = ctx.read("/proc/cpuinfo", record=False) or ""
    if cpuinfo:
        ctx.files.save("/proc/cpuinfo", cpuinfo.split("\n\n")[0] + "\n")   # one processor is enough
    cpu_model = parse_cpuinfo_model(cpuinfo)
    if cpu_model:
        tables["cpu"]["model"] = V(cpu_model, "/proc/cpuinfo model name")
        ctx.sources.append("/proc/cpuinfo")
    nodes = [d for d in ctx.files.listdir("/sys/devices/system/node") if re.match(r"^node\d+$", d)]
    if nodes:
        comments["cpu"].append(f"{len(nodes)} NUMA node(s) in /sys/devices/system/node")
    tables["cpu"]["reduce_bw"] = V("5GB/s", f"{NOT}: schema default; host reduction rate", False)

    det.notes, det.sources = ctx.notes, ctx.sources
    det.description = _description(det, model)
    return det


def _sockets(ctx: _Ctx, det: Detection, topo, gpus: list[Gpu], cpu_model: str | None) -> None:
    """`node.sockets` and `node.gpu_socket`: the NUMA domains the GPUs attach to (the CPU sockets,
    or a socket's NUMA partitions where the BIOS splits it), from each GPU's NUMA affinity
    (nvidia-smi topo -m, hwloc or sysfs), else from the topology matrix (GPUs joined by a ``SYS``
    path are on different domains).  With more than one, ``[node.inter_socket]`` gets a
    placeholder: its rate cannot be seen from here."""
    t = det.tables["node"]
    n = len(gpus)
    det.socket_of_numa = {}
    det.gpu_socket = [0] * n
    if not n:
        return
    how = ""
    numas = [g.numa for g in gpus if g.numa is not None]
    if len(numas) == n:             # every GPU's NUMA node known
        doms = sorted(set(numas))
        det.socket_of_numa = {d: i for i, d in enumerate(doms)}
        det.gpu_socket = [det.socket_of_numa[d] for d in numas]
        how = "the GPUs' NUMA nodes (nvidia-smi topo -m NUMA Affinity, hwloc or sysfs numa_node)"
    elif topo is not None and len(topo.gpus) == n and n > 1:
        group = list(range(n))
        for a in range(n):
            for b in range(a + 1, n):
                p = topo.gpu_path(a, b)
                if p and p not in ("SYS", "SOC"):
                    ga, gb = group[a], group[b]
                    group = [ga if x == gb else x for x in group]
        order = sorted(set(group))
        det.gpu_socket = [order.index(x) for x in group]
        how = "nvidia-smi topo -m (GPUs joined by a SYS path are on different NUMA nodes)"
    else:
        t["sockets"] = V(1, f"{NOT}: no NUMA affinity and no topology matrix; one socket assumed", False)
        return
    k = max(det.gpu_socket) + 1
    t["sockets"] = V(k, f"NUMA domains holding GPUs, from {how}")
    if k > 1:
        t["gpu_socket"] = V(det.gpu_socket, f"domain of each GPU, from {how}")
        vendor = (cpu_model or "").lower()
        kind = ("x-bus" if "power" in vendor else "upi" if "intel" in vendor or "xeon" in vendor
                else "xgmi" if "amd" in vendor or "epyc" in vendor else "inter-socket")
        xs = det.tables["node.inter_socket"]
        xs["kind"] = V(kind, f"from the CPU model ({cpu_model or 'unknown'}), /proc/cpuinfo")
        xs["bw"] = V("32GB/s", f"{NOT}: placeholder; the link between sockets (UPI, xGMI, X-Bus) per direction: "
                               f"take the CPU vendor's figure or measure host copies across sockets", False)


def _pcie(ctx: _Ctx, det: Detection, gpus: list[Gpu]) -> None:
    t = det.tables["node.pcie"]
    known = [g for g in gpus if g.gen_max and g.width_max]
    if known:
        gen = min(g.gen_max or 0 for g in known)         # (known: both set)
        width = min(g.width_max or 0 for g in known)
        srcs = sorted({g.link_src for g in known if g.link_src})
        spread = sorted({(g.gen_max, g.width_max) for g in known})
        extra = ""
        if len(spread) > 1:
            extra = "; GPUs differ (" + ", ".join(f"Gen{a} x{b}" for a, b in spread) + "), the slowest is used"
        if len(known) < len(gpus):
            extra += f"; {len(gpus) - len(known)} GPU(s) did not report their link"
        t["bw"] = V(fmt_gbs(pcie_bw(gen, width)),
                    f"PCIe Gen{gen} x{width} from {srcs[0] if srcs else '?'} (theoretical, per direction, "
                    f"{encoding_name(gen)} encoding; measure the real copy rate with g2gsim calibrate){extra}")
        t["generation"] = V(gen, "maximum link generation (the current one drops when the GPU idles)")
        t["width"] = V(width, "maximum link width")
        for g in known:
            if g.width_cur and g.width_cur < (g.width_max or 0):
                ctx.note(f"GPU {g.index} runs its PCIe link at x{g.width_cur} of x{g.width_max} (degraded link?)")
    else:
        bw, why = PLACEHOLDER_PCIE
        t["bw"] = V(bw, f"{NOT}: no GPU PCIe link seen; placeholder {why}", False)
    t["latency"] = V("0.5us", f"{NOT}: schema default; measure with g2gsim calibrate", False)


def _link_rate(nvl, names: list[str]) -> tuple[float | None, str]:
    if nvl is not None:
        rates = [round(r, 3) for r in nvl.rates()]
        if rates:
            r, cnt = Counter(rates).most_common(1)[0]
            other = sorted(set(rates) - {r})
            extra = f"; some links report {', '.join(f'{x:g}' for x in other)} GB/s" if other else ""
            return r, f"{r:g} GB/s per link per direction from nvidia-smi nvlink -s{extra}"
    for pat, rate, gen in NVLINK_RATE_BY_PRODUCT:
        if any(re.search(pat, nm or "") for nm in names):
            return rate, (f"{rate:g} GB/s per link per direction: {gen} rate for {names[0]} "
                          f"(nvidia-smi nvlink -s gave no rate)")
    return None, ""


def _nvlink(ctx: _Ctx, det: Detection, topo, nvl, gpus: list[Gpu], switch_evidence: list[str]) -> None:
    t = det.tables["node.nvlink"]
    n = len(gpus)
    names = [g.name for g in gpus if g.name]
    matrix = topo.nv_matrix() if topo is not None and len(topo.gpus) == n and n else None
    det.nv_matrix = matrix
    active = [nvl.active(g) for g in range(n)] if nvl is not None and nvl.links else None
    if active is not None and not any(active):
        active = None
    if matrix is None:
        if active and switch_evidence and n > 1:
            rate, rsrc = _link_rate(nvl, names)
            links = min(active)
            t["kind"] = V("switch", "; ".join(switch_evidence) + "; topology matrix unavailable")
            t["bw"] = V(fmt_gbs(links * rate * 1e9), f"{links} links x {rsrc}, per GPU per direction")
        else:
            why = ("NVLink links are active (nvidia-smi nvlink -s) but nvidia-smi topo -m is missing, so which "
                   "GPUs they join is unknown; set kind and bw by hand" if active else
                   "no nvidia-smi topo -m matrix" if n else "no GPU")
            t["kind"] = V("none", f"{NOT}: {why}" if (active or n) else f"{NOT}: no GPU", False)
        t["latency"] = V("0.7us", f"{NOT}: schema default", False)
        return

    pairs = [(a, b, matrix[a][b]) for a in range(n) for b in range(a + 1, n)]
    linked = [(a, b, k) for a, b, k in pairs if k > 0]
    desc = ", ".join(sorted({f"NV{k}" for _, _, k in linked})) or "none"
    if not linked:
        paths = sorted({topo.gpu_path(a, b) for a, b, _ in pairs})
        t["kind"] = V("none", f"nvidia-smi topo -m: no NV# entry between GPUs (paths: {', '.join(paths) or '-'}); "
                              f"GPU pairs talk over PCIe")
        t["latency"] = V("0.7us", f"{NOT}: schema default (unused: no NVLink)", False)
        return
    rate, rsrc = _link_rate(nvl, names)
    rate_detected = rate is not None
    if rate is None:
        rate, rsrc = 20.0, f"{NOT}: no per-link rate (no nvidia-smi nvlink -s, unknown product); 20 GB/s placeholder"
    sums = [sum(matrix[a]) for a in range(n)]
    shared = []
    if active is not None:
        shared = [a for a in range(n) if sums[a] > active[a]]
    elif max(sums) > MAX_LINKS_PER_GPU:
        shared = [a for a in range(n) if sums[a] > MAX_LINKS_PER_GPU]
    evidence = list(switch_evidence)
    if shared:
        a = shared[0]
        have = f"only {active[a]} active links (nvidia-smi nvlink -s)" if active is not None else \
            f"no GPU has more than {MAX_LINKS_PER_GPU} links"
        evidence.append(f"GPU{a} shows {sum(1 for x in matrix[a] if x)} peers with NV# adding up to {sums[a]} but "
                        f"{have}, so the links go through a switch")
    all_pairs = len(linked) == len(pairs)
    if evidence and all_pairs:
        k_max = max(k for _, _, k in linked)
        links = min(active) if active is not None else k_max
        lsrc = "active links per GPU from nvidia-smi nvlink -s" if active is not None else \
            f"NV{k_max} from topo -m (through a switch NV# counts the GPU's own links)"
        t["kind"] = V("switch", f"NVSwitch: {'; '.join(evidence)}; topo -m shows {desc} between every pair")
        t["bw"] = V(fmt_gbs(links * rate * 1e9), f"{links} links ({lsrc}) x {rsrc}; per GPU port per direction",
                    rate_detected)
    elif all_pairs and len({k for _, _, k in linked}) == 1:
        k = linked[0][2]
        t["kind"] = V("all-to-all", f"nvidia-smi topo -m: NV{k} between every GPU pair, direct links "
                                    f"(NV# per GPU add up to {sums[0]}"
                                    + (f", its {active[0]} active links" if active is not None else "") + ")")
        t["bw"] = V(fmt_gbs(k * rate * 1e9), f"{k} links x {rsrc}; per pair per direction", rate_detected)
        t["links_per_pair"] = V(k, f"NV{k} from nvidia-smi topo -m")
    else:
        if evidence:
            ctx.note("NVSwitch signs (" + "; ".join(evidence) + ") but not every GPU pair shows NV#: written as pairs")
        t["kind"] = V("pairs", f"nvidia-smi topo -m: NVLink joins {len(linked)} of {len(pairs)} GPU pairs ({desc})")
        t["pairs"] = V([[a, b, fmt_gbs(k * rate * 1e9)] for a, b, k in linked],
                       f"[gpu_a, gpu_b, NV# x {rsrc}]", rate_detected)
        unlinked = [(a, b) for a, b, k in pairs if k == 0]
        if unlinked:
            det.comments["node.nvlink"].append(
                "PCIe only: " + ", ".join(f"{a}-{b} ({topo.gpu_path(a, b)})" for a, b in unlinked))
    if active is not None and not shared and t["kind"].value != "switch":
        for a in range(n):
            if sums[a] != active[a]:
                ctx.note(f"GPU{a}: NV# to its peers add up to {sums[a]} but nvidia-smi nvlink -s shows "
                         f"{active[a]} active links")
    if nvl is not None:
        for g, d in nvl.links.items():
            down = [k for k, v in d.items() if v is None]
            if down and any(v for v in d.values()):
                ctx.note(f"GPU{g}: NVLink link(s) {', '.join(map(str, down))} inactive")
    t["latency"] = V("0.7us", f"{NOT}: schema default; measure with g2gsim calibrate", False)


def _nics(ctx: _Ctx, det: Detection, topo, hw, ib: dict[str, Nic], gpus: list[Gpu]) -> None:
    t = det.tables["node.nic"]
    n = len(gpus)
    if topo is not None and topo.nics:
        names = list(topo.nics)
        src = "nvidia-smi topo -m"
    elif ib:
        names = sorted(ib)
        src = "/sys/class/infiniband"
    elif hw is not None and hw.nics:
        names = [x["name"] for x in hw.nics]
        src = "hwloc OpenFabrics devices"
    else:
        names, src = [], ""
    hw_nics = {x["name"]: x for x in (hw.nics if hw else [])}
    nics = []
    for nm in names:
        nic = ib.get(nm) or Nic(name=nm)
        h = hw_nics.get(nm)
        if h:
            nic.numa = nic.numa if nic.numa is not None else h["numa"]
            nic.bus = nic.bus or h["bus"]
        nics.append(nic)
    det.nics = nics
    usable = [i for i, x in enumerate(nics) if x.active is not False]
    for _i, x in enumerate(nics):
        if x.active is False:
            det.comments["node.nic"].append(f"{x.name}: no port ACTIVE ({x.state or '?'}), ignored")
    gdr_mods = _gdr(ctx)

    if not usable:
        eth = _sysfs_ethernet(ctx)
        if eth:
            t["count"] = V(1, f"no RDMA NIC ({'all ports down' if nics else 'none in /sys/class/infiniband'}); "
                              f"Ethernet {eth[0]} from /sys/class/net (MPI over TCP)")
            t["bw"] = V(f"{eth[1] * 8 / 1e9:g}Gb/s", f"/sys/class/net/{eth[0]}/speed")
            t["affinity"] = V("shared", "one interface for every GPU")
        else:
            t["count"] = V(1, f"{NOT}: no RDMA NIC and no physical Ethernet link with a speed; placeholder", False)
            t["bw"] = V(PLACEHOLDER_NIC_BW, f"{NOT}: placeholder (100 Gb/s); set your NIC's rate", False)
            t["affinity"] = V("shared", f"{NOT}: placeholder", False)
            ctx.note("no network interface found: the [node.nic] values are placeholders")
        t["latency"] = V("1us", f"{NOT}: schema default", False)
        t["gpudirect_rdma"] = V(False, "no RDMA NIC: GPU data to another node is staged through the host")
        return

    # GPU -> NIC: the nearest PCIe path (PIX < PXB < PHB < NODE < SYS), least-used on ties
    assign: list[int] = []
    how = ""
    if n and topo is not None and topo.nics and len(topo.gpus) == n:
        uses: Counter[int] = Counter()
        best = {}
        for g in range(n):
            ranks = {i: PATH_RANK.get(topo.path(g, i), 9) for i in usable}
            best[g] = min(ranks.values())
        order = sorted(range(n), key=lambda g: (best[g], g))
        pick = {}
        for g in order:
            cands = [i for i in usable if PATH_RANK.get(topo.path(g, i), 9) == best[g]]
            pick[g] = min(cands, key=lambda i: (uses[i], i))
            uses[pick[g]] += 1
        assign = [pick[g] for g in range(n)]
        how = "nearest NIC by nvidia-smi topo -m PCIe path (PIX < PXB < PHB < NODE < SYS), least used on ties"
        for g in range(n):
            p = topo.path(g, assign[g])
            det.comments["node.nic"].append(f"GPU{g} -> {nics[assign[g]].name} ({p})")
            if p in ("SYS", "SOC"):
                ctx.note(f"GPU{g}'s nearest NIC {nics[assign[g]].name} is across the CPU interconnect (SYS)")
    elif n and all(g.numa is not None for g in gpus) and any(nics[i].numa is not None for i in usable):
        uses = Counter()
        for gpu in gpus:
            same = [i for i in usable if nics[i].numa == gpu.numa] or usable
            i = min(same, key=lambda i: (uses[i], i))
            uses[i] += 1
            assign.append(i)
        how = "NIC on the GPU's NUMA node (no nvidia-smi topo -m), least used on ties"
    else:
        assign = [usable[g % len(usable)] for g in range(max(n, 1))]
        how = f"{NOT}: no GPU-NIC topology; GPUs take the NICs round robin"
    used = sorted(set(assign))
    renum = {old: new for new, old in enumerate(used)}
    aff = [renum[i] for i in assign]
    count = len(used)
    unused = [nics[i].name for i in usable if i not in used]
    t["count"] = V(count, f"RDMA NICs used by the GPUs, from {src}: " +
                   ", ".join(f"NIC{renum[i]} = {nics[i].name}" for i in used) +
                   (f" (not nearest to any GPU: {', '.join(unused)})" if unused else ""))
    rates = [(float(nics[i].rate or 0), nics[i]) for i in used if nics[i].rate]
    if rates:
        r, nic = min(rates, key=lambda x: x[0])
        differ = sorted({x.rate_text or "" for _, x in rates})
        t["bw"] = V(f"{r * 8 / 1e9:g}Gb/s",
                    f'{nic.name}: "{nic.rate_text}"{" " + nic.link_layer if nic.link_layer else ""} from '
                    f"/sys/class/infiniband/{nic.name}/ports/*/rate" +
                    (f"; NICs differ ({'; '.join(differ)}), the slowest is used" if len(differ) > 1 else ""))
    else:
        t["bw"] = V(PLACEHOLDER_NIC_BW, f"{NOT}: no port rate in /sys/class/infiniband; placeholder 100 Gb/s", False)
    if count == 1:
        t["affinity"] = V("shared", f"every GPU uses {nics[used[0]].name}; {how}", NOT not in how)
    elif all(aff[g] == g % count for g in range(len(aff))):
        t["affinity"] = V("per-gpu", f"GPU g uses NIC g % {count}; {how}", NOT not in how)
    else:
        t["affinity"] = V(aff, how, NOT not in how)
    socks = max(det.gpu_socket or [0]) + 1
    if socks > 1:
        # the NIC's domain: that of a GPU it reaches without crossing sockets (topo -m path not
        # SYS), else its NUMA node
        nsock = []
        for i in used:
            s_i, src_i = None, ""
            if topo is not None and topo.nics and len(topo.gpus) == n:
                near = [g for g in range(n) if topo.path(g, i) not in ("", "SYS", "SOC")]
                if near:
                    s_i, src_i = det.gpu_socket[near[0]], f"nvidia-smi topo -m (reaches GPU{near[0]} without SYS)"
            nic_numa = nics[i].numa
            if s_i is None and nic_numa is not None:
                s_i, src_i = det.socket_of_numa.get(nic_numa), "its NUMA node"
            if s_i is None:
                s_i, src_i = 0, "unknown, socket 0 assumed"
            nsock.append(s_i)
            det.comments["node.nic"].append(f"NIC{renum[i]} ({nics[i].name}) on socket {s_i}: {src_i}")
        t["socket"] = V(nsock, "socket (NUMA domain) of each NIC, see the lines above")
    t["latency"] = V("1us", f"{NOT}: schema default; measure between two nodes", False)
    t["gpudirect_rdma"] = gdr_mods


def _gdr(ctx: _Ctx) -> V:
    lsmod = ctx.run(CMD_LSMOD)
    mods: set[str] | None
    if lsmod is not None and lsmod.strip():
        mods, msrc = parse_modules(lsmod), "lsmod"
    else:
        pm = ctx.read("/proc/modules")
        mods, msrc = (parse_modules(pm), "/proc/modules") if pm is not None else (None, "")
    gdrcopy = ctx.files.exists("/dev/gdrdrv")
    caveat = "GPUDirect RDMA through DMA-BUF (open kernel modules) cannot be seen here"
    if mods is not None:
        for m in ("nvidia_peermem", "nv_peer_mem"):
            if m in mods:
                return V(True, f"{m} is loaded ({msrc})")
    if gdrcopy:
        return V(True, "GDRCopy driver /dev/gdrdrv present; nvidia_peermem / nv_peer_mem not loaded "
                       f"({caveat}: check with NCCL_DEBUG=INFO or UCX)")
    if mods is None:
        return V(False, f"{NOT}: could not list kernel modules (no lsmod, no /proc/modules); {caveat}", False)
    return V(False, f"neither nvidia_peermem nor nv_peer_mem loaded ({msrc}), no /dev/gdrdrv; {caveat}")


def _description(det: Detection, model: str | None) -> str:
    t = det.tables
    if not det.gpus:
        return "no NVIDIA GPU detected: placeholder node; detected by g2gsim machine detect, uncalibrated"
    parts = [f"{len(det.gpus)} x {model or 'NVIDIA GPU'}"]
    kind = t["node.nvlink"]["kind"].value
    if kind == "switch":
        parts.append(f"NVSwitch ({t['node.nvlink']['bw'].value}/GPU/dir)")
    elif kind == "all-to-all":
        parts.append(f"NVLink all-to-all ({t['node.nvlink']['bw'].value}/pair/dir)")
    elif kind == "pairs":
        parts.append(f"NVLink pairs ({len(t['node.nvlink']['pairs'].value)})")
    else:
        parts.append("no NVLink")
    if "generation" in t["node.pcie"]:
        parts.append(f"PCIe Gen{t['node.pcie']['generation'].value} x{t['node.pcie']['width'].value}")
    nic = t["node.nic"]
    if nic["count"].detected:
        parts.append(f"{nic['count'].value} x {nic['bw'].value} NIC" + (" + GPUDirect RDMA"
                                                                        if nic["gpudirect_rdma"].value else ""))
    return ", ".join(parts) + "; detected by g2gsim machine detect, uncalibrated"


# ================================================================================ rendering
def _comment(s: str) -> str:
    return re.sub(r"\s+", " ", s).strip()


def render(det: Detection) -> str:
    """The machine file's text."""
    out = []
    out.append(f"# Machine file written by `g2gsim machine detect` (g2gsim {__version__}) on {det.host}.")
    out.append("# Each value's comment says where it came from.  Lines marked '# NOT DETECTED' hold schema defaults")
    out.append("# or placeholders for what this node does not show (the inter-node network, latencies, MPI")
    out.append("# costs): edit them, or run `g2gsim calibrate` to measure them.  See docs/machine-detect.md.")
    if det.sources:
        out.append("# Read: " + "; ".join(det.sources))
    for nt in det.notes:
        out.append("# Note: " + _comment(nt))
    out.append("schema_version = 1")
    out.append(f"name = {_toml_value('detected-' + re.sub(r'[^A-Za-z0-9_.-]', '-', det.host))}"
               f"  # host name (/proc/sys/kernel/hostname)")
    out.append(f"description = {_toml_value(det.description)}")
    out.append(f"sources = {_toml_value(det.sources)}")
    for table, kv in det.tables.items():
        if not kv and not det.comments.get(table):
            continue
        out.append("")
        out.append(f"[{table}]")
        for c in det.comments.get(table, []):
            out.append("# " + c.replace("\n", " ").rstrip())
        for k, v in kv.items():
            out.append(f"{k} = {_toml_value(v.value)}  # {_comment(v.source)}")
    return "\n".join(out) + "\n"


def detect(output: str | Path | None = None, runner: Runner | None = None, *, root: str | Path = "/",
           capture: str | Path | None = None) -> str:
    """Inspects this node and returns the node part of a machine file (TOML); writes it to ``output``
    when given.  ``runner(cmd) -> (returncode, stdout)`` runs commands (default: subprocess), files
    are read under ``root``.  ``capture``: a directory where every command output and file read is
    saved (``cmd/``, ``root/``, ``detected.toml``), replayable with ``replay_runner`` and
    ``root=capture/'root'``."""
    runner = runner or system_runner
    files = Files(root)
    if capture is not None:
        cap = Path(capture)
        cap.mkdir(parents=True, exist_ok=True)
        runner = recording_runner(runner, cap)
        files = Files(root, record_to=cap / "root")
    det = inspect(runner, root, files=files)
    text = render(det)
    if capture is not None:
        (Path(capture) / "detected.toml").write_text(text)
        (Path(capture) / "REAL_CAPTURE").write_text(
            f"Captured on {det.host} by `python -m g2gsim.detect --capture` (g2gsim {__version__}).\n"
            f"cmd/<command>.txt and .rc: each command's stdout and exit status; root/: every file read;\n"
            f"detected.toml: what detect wrote from them.  Replay: python -m g2gsim.detect --replay DIR\n")
    if output is not None:
        Path(output).write_text(text)
    return text


# ================================================================================ command line
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m g2gsim.detect",
                                 description="Write the node part of a g2gsim machine file from this node.")
    ap.add_argument("-o", "--output", type=Path, help="write the machine file here (default: print it)")
    ap.add_argument("--capture", type=Path, metavar="DIR",
                    help="also save the raw output of every command run and every file read to DIR "
                         "(the layout of tests/data/detect/<machine>/)")
    ap.add_argument("--replay", type=Path, metavar="DIR", help="detect from a capture directory instead of this node")
    ap.add_argument("--check", action="store_true", help="validate the result with g2gsim.machines.check")
    a = ap.parse_args(argv)
    if a.replay is not None and a.capture is not None:
        ap.error("--replay and --capture do not go together")
    if a.replay is not None:
        text = detect(a.output, replay_runner(a.replay), root=a.replay / "root")
    else:
        text = detect(a.output, capture=a.capture)
    if a.output is None:
        sys.stdout.write(text)
    else:
        print(f"wrote {a.output}", file=sys.stderr)
    if a.capture is not None:
        print(f"saved the raw outputs to {a.capture}/ (cmd/, root/, detected.toml)", file=sys.stderr)
    if a.check:
        import tempfile

        from . import machines
        with tempfile.TemporaryDirectory() as d:
            p = Path(d) / "detected.toml"
            p.write_text(text)
            try:
                machines.check(p)
            except machines.MachineError as e:
                print(f"INVALID: {e}", file=sys.stderr)
                return 1
        print("valid machine file", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

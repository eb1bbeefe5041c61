"""`g2gsim machine detect` (python/g2gsim/detect.py): captured outputs in tests/data/detect/<machine>/
are parsed into machine descriptions, the written files validate in the core and simulate, and the
no-GPU path works on this machine for real."""
from __future__ import annotations

import math
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import g2gsim
from g2gsim import machines
from g2gsim.detect import Files, detect, inspect, render, replay_runner
from g2gsim.detect_parse import (parse_hwloc, parse_ib_rate, parse_modules, parse_nvlink_status, parse_query_csv,
                                 parse_smi_q, parse_topo, pcie_bw)
from g2gsim.trace import TraceBuilder

FIX = Path(__file__).parent / "data" / "detect"
ROOT = Path(__file__).resolve().parents[1]

H100_LINK = 26.562e9   # bytes/s per NVLink-4 link per direction, as nvidia-smi nvlink -s reports it
A100_LINK = 25e9


def fixture(name: str):
    d = FIX / name
    return inspect(replay_runner(d), root=d / "root")


def core_check(text: str, tmp_path: Path, nodes: int = 2) -> dict:
    p = tmp_path / "detected.toml"
    p.write_text(text)
    return machines.check(p, nodes=nodes)


def close(a: float, b: float, rel: float = 2e-3) -> bool:
    return math.isclose(a, b, rel_tol=rel)


# ================================================================ each machine: what the file says
# (gpus, nvlink kind, nvlink bw [per pair for all-to-all, per GPU port for switch], pairs,
#  PCIe gen, width, PCIe bytes/s, NIC count, NIC bytes/s, affinity, GPUDirect RDMA)
EXPECTED = {
    "dgx-h100": (8, "switch", 18 * H100_LINK, None, 5, 16, 63.02e9, 8, 50e9, "per-gpu", True),
    "dgx-a100": (8, "switch", 12 * A100_LINK, None, 4, 16, 31.51e9, 8, 25e9, "per-gpu", True),
    "hgx-a100-4gpu": (4, "all-to-all", 4 * A100_LINK, None, 4, 16, 31.51e9, 4, 25e9, "per-gpu", True),
    "hgx-h100-4gpu": (4, "all-to-all", 6 * H100_LINK, None, 5, 16, 63.02e9, 4, 50e9, "per-gpu", True),
    "pcie-nvbridge": (4, "pairs", None, [(0, 1, 12 * A100_LINK), (2, 3, 12 * A100_LINK)], 4, 16, 31.51e9,
                      2, 12.5e9, [0, 0, 1, 1], False),
    "pcie-only": (2, "none", None, None, 4, 16, 31.51e9, 1, 1.25e9, "shared", False),
}
CORE_KIND = {"switch": "Switch", "all-to-all": "AllToAll", "none": "None"}
CORE_AFF = {"per-gpu": "PerGpu", "shared": "Shared"}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixture_detection(name, tmp_path):
    gpus, kind, nvbw, pairs, gen, width, pbw, nics, nicbw, aff, gdr = EXPECTED[name]
    det = fixture(name)
    assert det.gpu_count == gpus
    assert det.nvlink_kind == kind
    if nvbw is not None:
        assert close(det.nvlink_bw, nvbw), (det.nvlink_bw, nvbw)
    if pairs is not None:
        got = det.nvlink_pairs
        assert [(a, b) for a, b, _ in got] == [(a, b) for a, b, _ in pairs]
        assert all(close(x[2], y[2]) for x, y in zip(got, pairs))
    assert (det.pcie_gen, det.pcie_width) == (gen, width)
    assert close(det.pcie_bw, pbw)
    assert det.nic_count == nics
    assert close(det.nic_bw, nicbw)
    assert det.nic_affinity == aff
    assert det.gpudirect_rdma is gdr

    # the core reads the written file the same way
    c = core_check(render(det), tmp_path)
    assert c["gpus_per_node"] == gpus
    assert c["nic_count"] == nics and close(c["nic_bw_bytes_per_s"], nicbw)
    assert close(c["pcie_bw_bytes_per_s"], pbw)
    assert c["gpudirect_rdma"] is gdr
    if kind == "pairs":
        assert c["nvlink"].startswith("Pairs(")
        nums = [float(x) for x in re.findall(r"(\d+(?:\.\d+)?)\)", c["nvlink"])]
        assert all(close(x, p[2]) for x, p in zip(nums, pairs))
    else:
        assert c["nvlink"] == CORE_KIND[kind]
        if nvbw is not None:
            assert close(c["nvlink_bw_bytes_per_s"], nvbw)
    assert c["nic_affinity"] == (CORE_AFF[aff] if isinstance(aff, str) else f"List({aff})")


def test_dgx_nics_skip_storage_and_management_ports():
    """DGX H100: the two storage ports (mlx5_3/4, HDR Ethernet) are nearest to no GPU and are left
    out, so the NIC rate is the compute NICs' NDR 400 and not the slower storage rate."""
    det = fixture("dgx-h100")
    text = render(det)
    assert "NIC3 = mlx5_5" in text and "not nearest to any GPU: mlx5_3, mlx5_4" in text
    assert 'bw = "400Gb/s"' in text
    assert "GPU3 -> mlx5_5 (PIX)" in text


def test_real_h200_capture_quirks():
    """R580 underlines the topo -m header with ANSI escapes even into a pipe; the VM shows the GPUs
    at 00:06.0-00:09.0 and no PCIe Host Max."""
    topo = (FIX / "h200x4" / "cmd" / "nvidia-smi_topo_-m.txt").read_text()
    assert "\x1b[4m" in topo
    assert parse_topo(topo).gpus == ["GPU0", "GPU1", "GPU2", "GPU3"]
    assert (FIX / "h200x4" / "REAL_CAPTURE").exists()
    det = fixture("h200x4")
    assert [g.bus for g in det.gpus] == ["0000:00:06.0", "0000:00:07.0", "0000:00:08.0", "0000:00:09.0"]
    assert det.gpus[0].name == "NVIDIA H200"


def test_nvlink_remote_ends():
    """nvidia-smi nvlink -R: links ending at NVSwitches (dgx-a100) are switch evidence; links ending at
    the peer GPUs (hgx-a100-4gpu) are not."""
    assert "nvlink -R: links end at 0000:c4:00.0" in fixture("dgx-a100").tables["node.nvlink"]["kind"].source
    det = fixture("hgx-a100-4gpu")
    assert det.nvlink_kind == "all-to-all" and "nvlink -R" not in det.tables["node.nvlink"]["kind"].source


def test_dgx_a100_falls_back_to_smi_q_and_uses_hwloc():
    det = fixture("dgx-a100")
    assert det.gpu_source == "nvidia-smi -q"                      # --query-gpu failed (rc 2)
    assert any("not a valid field" in n for n in det.notes)
    kind = det.tables["node.nvlink"]["kind"].source
    assert "hwloc shows 6 NVSwitch" in kind and "only 12 active links" in kind
    assert [g.numa for g in det.gpus] == [3, 3, 1, 1, 7, 7, 5, 5]   # from the re-spaced topo -m paste


def test_pcie_link_uses_max_not_idle_current():
    """The 4090s idle at Gen1 (Current) on a Gen4 link (Max): the link is Gen4."""
    q = parse_smi_q((FIX / "pcie-only" / "cmd" / "nvidia-smi_-q.txt").read_text())
    assert q[0]["PCI/GPU Link Info/PCIe Generation/Current"] == "1"
    assert q[0]["PCI/GPU Link Info/PCIe Generation/Max"] == "4"
    assert fixture("pcie-only").pcie_gen == 4


def test_gdr_sources():
    assert "nvidia_peermem is loaded (lsmod)" in fixture("dgx-h100").tables["node.nic"]["gpudirect_rdma"].source
    assert "nv_peer_mem is loaded" in fixture("dgx-a100").tables["node.nic"]["gpudirect_rdma"].source
    assert "(/proc/modules)" in fixture("hgx-a100-4gpu").tables["node.nic"]["gpudirect_rdma"].source
    assert "/dev/gdrdrv" in fixture("hgx-h100-4gpu").tables["node.nic"]["gpudirect_rdma"].source


# ================================================================ the 4 x H200 node
@pytest.mark.parametrize("name", ["h200x4", "h200x4-devicemd"])
def test_h200x4_node_validates_and_simulates(name, tmp_path):
    """h200x4: the real capture from the lent node; h200x4-devicemd: written from DEVICE.md before it."""
    d = FIX / name
    det = fixture(name)
    assert det.gpu_count == 4
    assert det.nv_matrix == [[0 if a == b else 18 for b in range(4)] for a in range(4)]   # NV18 every pair
    assert (det.pcie_gen, det.pcie_width) == (5, 16)
    assert close(det.pcie_bw, pcie_bw(5, 16))
    # every GPU has only as many links as NV# to ONE peer: the NV18s go through an NVSwitch
    nvl = parse_nvlink_status((d / "cmd" / "nvidia-smi_nvlink_-s.txt").read_text())
    links = min(nvl.active(g) for g in range(4))
    rate = max(nvl.rates()) * 1e9
    assert links == 18
    assert det.nvlink_kind == "switch"
    assert close(det.nvlink_bw, links * rate)
    assert "nvlink -R: links end at ffffffff:ff:ff.0, not at a GPU" in det.tables["node.nvlink"]["kind"].source
    assert det.tables["node.nic"]["count"].detected is False      # the lent node has no RDMA NIC

    text = detect(tmp_path / "node.toml", replay_runner(d), root=d / "root")
    assert (tmp_path / "node.toml").read_text() == text
    c = machines.check(tmp_path / "node.toml")
    assert c["gpus_per_node"] == 4 and c["nvlink"] == "Switch"

    # a 2-rank device Send/Recv of 64 MiB inside the node: moves over NVLink, so far faster than on
    # the PCIe-only node detected from its capture
    b = TraceBuilder(2)
    b.add(0, "Send", peer=1, tag=0, bytes=64 << 20, mem_space="device")
    b.add(1, "Recv", peer=0, tag=0, recv_bytes=64 << 20, mem_space="device")
    trace = b.build().write(tmp_path / "t.g2g.parquet")
    rep = g2gsim.simulate(trace, tmp_path / "node.toml", mode="gpudirect", gpus_per_node=4)
    assert rep["nodes"] == 1 and rep["p2p_messages"] == 1
    t_nvlink = rep["comm_time_s"]
    assert 0 < t_nvlink < (64 << 20) / 100e9          # faster than 100 GB/s: not PCIe
    pcie = tmp_path / "pcie.toml"
    detect(pcie, replay_runner(FIX / "pcie-only"), root=FIX / "pcie-only" / "root")
    t_pcie = g2gsim.simulate(trace, pcie, mode="gpudirect", gpus_per_node=2)["comm_time_s"]
    assert t_pcie > 5 * t_nvlink


# ================================================================ no GPU, no NIC, no nvidia-smi
def test_no_gpu_fixture(tmp_path):
    det = fixture("no-gpu")
    text = render(det)
    assert det.gpu_count == 1 and det.tables["node"]["gpus"].detected is False
    assert "gpus = 1  # NOT DETECTED" in text
    assert det.nvlink_kind == "none"
    assert "node.nic.bw" in det.not_detected() and "node.pcie.bw" in det.not_detected()
    assert any("`nvidia-smi`: not installed" in n for n in det.notes)
    c = core_check(text, tmp_path)
    assert c["gpus_per_node"] == 1 and c["nvlink"] == "None"


def test_fake_runner_with_nothing(tmp_path):
    calls = []

    def runner(cmd):
        calls.append(cmd)
        return 127, ""
    text = detect(runner=runner, root=tmp_path)       # an empty root: no sysfs, no /proc
    assert any(c[0] == "nvidia-smi" for c in calls) and ["lsmod"] in calls
    assert "# NOT DETECTED" in text and "gpus = 1" in text
    core_check(text, tmp_path)


def test_this_machine_for_real(tmp_path):
    """detect() on the machine the tests run on.  Without nvidia-smi (the CI and development
    machines): a valid file that says what it did not find."""
    text = detect(tmp_path / "node.toml")
    c = machines.check(tmp_path / "node.toml")
    if shutil.which("nvidia-smi") is None:
        assert "gpus = 1  # NOT DETECTED" in text
        assert "# Note: `nvidia-smi`: not installed" in text
        assert c["gpus_per_node"] == 1
    else:
        assert c["gpus_per_node"] >= 1


def test_broken_driver_falls_back_to_sysfs(tmp_path):
    """nvidia-smi installed but the driver not loaded; the GPUs still show in /sys/bus/pci."""
    root = tmp_path / "root"
    for i, bus in enumerate(["0000:18:00.0", "0000:2a:00.0"]):
        dev = root / "sys/bus/pci/devices" / bus
        dev.mkdir(parents=True)
        (dev / "vendor").write_text("0x10de\n")
        (dev / "class").write_text("0x030200\n")
        (dev / "max_link_speed").write_text("32.0 GT/s PCIe\n")
        (dev / "max_link_width").write_text("16\n")
        (dev / "numa_node").write_text(f"{i}\n")
    other = root / "sys/bus/pci/devices/0000:00:00.0"
    other.mkdir(parents=True)
    (other / "vendor").write_text("0x8086\n")
    msg = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."

    def runner(cmd):
        return (9, msg + "\n") if cmd[0] == "nvidia-smi" else (127, "")
    det = inspect(runner, root=root)
    assert det.gpu_count == 2 and "/sys/bus/pci/devices" in det.gpu_source
    assert (det.pcie_gen, det.pcie_width) == (5, 16)
    assert [g.numa for g in det.gpus] == [0, 1]
    assert det.nvlink_kind == "none" and not det.tables["node.nvlink"]["kind"].detected
    assert sum(msg in n for n in det.notes) == 1                  # said once, not per nvidia-smi call
    core_check(render(det), tmp_path)


def test_runner_that_raises(tmp_path):
    def runner(cmd):
        raise OSError("exec format error")
    text = detect(runner=runner, root=tmp_path)
    assert "OSError" in text
    core_check(text, tmp_path)


# ================================================================ every value says where it came from
@pytest.mark.parametrize("name", sorted(p.name for p in FIX.iterdir() if (p / "cmd").is_dir() or (p / "root").is_dir()))
def test_every_value_is_sourced(name, tmp_path):
    det = fixture(name)
    text = render(det)
    nd = set(det.not_detected())
    table = ""
    for ln in text.splitlines():
        if ln.startswith("["):
            table = ln.strip("[]")
            continue
        m = re.match(r"^(\w+) = (.*?)  # (.+)$", ln)
        if ln and not ln.startswith("#") and table:
            assert m, f"{name}: value without a source comment: {ln!r}"
            marked = m.group(3).startswith("NOT DETECTED")
            assert marked == (f"{table}.{m.group(1)}" in nd), ln
    core_check(text, tmp_path)


# ================================================================ the capture script
@pytest.mark.parametrize("name", ["dgx-a100", "hgx-a100-4gpu", "pcie-nvbridge"])
def test_capture_replays_to_the_same_file(name, tmp_path):
    d = FIX / name
    cap = tmp_path / "cap"
    text = detect(runner=replay_runner(d), root=d / "root", capture=cap)
    assert (cap / "detected.toml").read_text() == text
    assert (cap / "cmd" / "nvidia-smi_topo_-m.txt").read_text() == (d / "cmd" / "nvidia-smi_topo_-m.txt").read_text()
    assert (cap / "REAL_CAPTURE").exists()
    again = detect(runner=replay_runner(cap), root=cap / "root")
    assert again == text


def test_capture_command_line_on_this_machine(tmp_path):
    cap = tmp_path / "cap"
    out = tmp_path / "node.toml"
    p = subprocess.run([sys.executable, "-m", "g2gsim.detect", "--capture", str(cap), "-o", str(out), "--check"],
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "valid machine file" in p.stderr
    assert (cap / "cmd" / "nvidia-smi_topo_-m.rc").exists() and (cap / "detected.toml").read_text() == out.read_text()
    p2 = subprocess.run([sys.executable, "-m", "g2gsim.detect", "--replay", str(cap)], capture_output=True, text=True,
                        cwd=ROOT, timeout=300)
    assert p2.returncode == 0 and p2.stdout == out.read_text()


# ================================================================ the tests can fail: mutated captures
def mutate(tmp_path: Path, name: str, rel: str, old: str, new: str, count: int = 1) -> Path:
    d = tmp_path / name
    shutil.copytree(FIX / name, d)
    f = d / rel
    s = f.read_text()
    assert old in s
    f.write_text(s.replace(old, new, count))
    return d


def test_one_missing_nvlink_pair_is_no_longer_all_to_all(tmp_path):
    d = mutate(tmp_path, "hgx-a100-4gpu", "cmd/nvidia-smi_topo_-m.txt", "GPU2\tNV4\tNV4", "GPU2\tSYS\tNV4")
    d2 = d / "cmd" / "nvidia-smi_topo_-m.txt"
    d2.write_text(d2.read_text().replace("GPU0\t X \tNV4\tNV4", "GPU0\t X \tNV4\tSYS"))
    det = inspect(replay_runner(d), root=d / "root")
    assert det.nvlink_kind == "pairs"
    assert [(a, b) for a, b, _ in det.nvlink_pairs] == [(0, 1), (0, 3), (1, 2), (1, 3), (2, 3)]


def test_link_rate_and_inactive_links_change_bandwidth(tmp_path):
    d = mutate(tmp_path, "dgx-h100", "cmd/nvidia-smi_nvlink_-s.txt", "26.562 GB/s", "<inactive>", count=2)
    det = inspect(replay_runner(d), root=d / "root")
    assert close(det.nvlink_bw, 16 * H100_LINK)                    # GPU0 lost two links: the weakest port
    assert any("inactive" in n for n in det.notes)


def test_unloaded_peermem_turns_gdr_off(tmp_path):
    d = mutate(tmp_path, "dgx-h100", "cmd/lsmod.txt", "nvidia_peermem", "nvidia_foo", count=99)
    assert inspect(replay_runner(d), root=d / "root").gpudirect_rdma is False


def test_without_topo_nics_pair_by_numa(tmp_path):
    d = tmp_path / "x"
    shutil.copytree(FIX / "hgx-a100-4gpu", d)
    (d / "cmd" / "nvidia-smi_topo_-m.txt").unlink()
    (d / "cmd" / "nvidia-smi_topo_-m.rc").unlink()
    det = inspect(replay_runner(d), root=d / "root")
    assert det.nvlink_kind == "none" and not det.tables["node.nvlink"]["kind"].detected
    assert det.nic_count == 4    # from /sys/class/infiniband; no GPU NUMA node known: round robin
    assert "round robin" in det.tables["node.nic"]["affinity"].source
    # with the GPUs' NUMA nodes in sysfs (mlx5_0..3 sit on nodes 3, 1, 7, 5) each GPU takes its node's NIC
    for bus, numa in zip(["03", "44", "84", "c4"], [1, 3, 5, 7]):
        f = d / "root" / "sys/bus/pci/devices" / f"0000:{bus}:00.0" / "numa_node"
        f.parent.mkdir(parents=True)
        f.write_text(f"{numa}\n")
    det = inspect(replay_runner(d), root=d / "root")
    assert [g.numa for g in det.gpus] == [1, 3, 5, 7]
    assert det.nic_affinity == [1, 0, 3, 2]


def test_without_nvlink_status_or_hwloc(tmp_path):
    """No nvidia-smi nvlink -s and no hwloc: NV12 to 7 peers cannot be direct links (no GPU has more
    than 18), and the link rate comes from the product name."""
    d = tmp_path / "x"
    shutil.copytree(FIX / "dgx-a100", d)
    for f in ("nvidia-smi_nvlink_-s", "nvidia-smi_nvlink_-R", "lstopo-no-graphics_--of_xml"):
        (d / "cmd" / f"{f}.txt").unlink()
        (d / "cmd" / f"{f}.rc").unlink()
    det = inspect(replay_runner(d), root=d / "root")
    assert det.nvlink_kind == "switch"
    assert close(det.nvlink_bw, 12 * A100_LINK)
    assert "no GPU has more than 18 links" in det.tables["node.nvlink"]["kind"].source
    assert "NVLink 3 rate for NVIDIA A100-SXM4-80GB" in det.tables["node.nvlink"]["bw"].source


# ================================================================ parsers on their own
def test_topo_parser_handles_blank_cpu_affinity_and_nic_legend():
    text = ("\tGPU0\tGPU1\tNIC0\tNIC1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
            "GPU0\t X \tNV18\tPIX\tNODE\t\t0\t\tN/A\n"
            "GPU1\tNV18\t X \tNODE\tPIX\t12-23\t1\t\tN/A\n"
            "NIC0\tPIX\tNODE\t X \tNODE\t\t\t\t\n"
            "NIC1\tNODE\tPIX\tNODE\t X \t\t\t\t\n\nLegend:\n\n  X    = Self\n\nNIC Legend:\n\n"
            "  NIC0: mlx5_0\n  NIC1: mlx5_3\n")
    t = parse_topo(text)
    assert t.gpus == ["GPU0", "GPU1"] and t.nics == ["mlx5_0", "mlx5_3"]
    assert t.nv(0, 1) == 18 and t.path(1, 1) == "PIX" and t.path(0, 1) == "NODE"
    assert t.cpu_affinity == {0: "", 1: "12-23"} and t.numa == {0: 0, 1: 1}
    assert parse_topo("No devices were found\n") is None


def test_small_parsers():
    nvl = parse_nvlink_status("GPU 0: NVIDIA H200 (UUID: GPU-x)\n\t Link 0: 26.562 GB/s\n\t Link 1: <inactive>\n"
                              "GPU 1: NVIDIA H200 (UUID: GPU-y)\n         Link 0: 26.562 GB/s\n")
    assert nvl.names[0] == "NVIDIA H200" and nvl.active(0) == 1 and nvl.links[0][1] is None and nvl.active(1) == 1
    assert parse_ib_rate("400 Gb/sec (4X NDR)\n") == 50e9 and parse_ib_rate("") is None
    assert parse_modules("Module  Size  Used by\nnvidia_peermem 16384 0\n") == {"nvidia_peermem"}
    rows = parse_query_csv("0, NVIDIA H100 80GB HBM3, 00000000:18:00.0, 5, 5, 16, 16\n1, X, 00000000:2A:00.0, "
                           "[N/A], [N/A], 16, 16\n")
    assert rows[0]["pcie.link.gen.max"] == "5" and rows[1]["pcie.link.gen.max"] is None
    assert close(pcie_bw(5, 16), 63.015e9) and close(pcie_bw(3, 16), 15.754e9) and pcie_bw(1, 16) == 4e9
    hw = parse_hwloc((FIX / "dgx-a100" / "cmd" / "lstopo-no-graphics_--of_xml.txt").read_text())
    assert len(hw.gpus) == 8 and len(hw.nvswitches) == 6 and len(hw.nics) == 10
    assert {n["name"]: n["numa"] for n in hw.nics}["mlx5_6"] == 7
    assert parse_hwloc("not xml") is None


def test_files_record_only_what_was_read(tmp_path):
    src = tmp_path / "src"
    (src / "a").mkdir(parents=True)
    (src / "a" / "x").write_text("1\n")
    (src / "a" / "y").write_text("2\n")
    f = Files(src, record_to=tmp_path / "rec")
    assert f.read("/a/x") == "1\n" and f.read("/a/missing") is None
    assert (tmp_path / "rec" / "a" / "x").read_text() == "1\n"
    assert not (tmp_path / "rec" / "a" / "y").exists()


def test_smi_q_fallback_reads_max_generation(tmp_path):
    """Without --query-gpu the link comes from nvidia-smi -q, whose 'Current' is Gen1 at idle."""
    d = tmp_path / "x"
    shutil.copytree(FIX / "pcie-only", d)
    (d / "cmd" / "nvidia-smi_--query-gpu.txt").write_text("")
    (d / "cmd" / "nvidia-smi_--query-gpu.rc").write_text("2\n")
    det = inspect(replay_runner(d), root=d / "root")
    assert det.gpu_source == "nvidia-smi -q"
    assert (det.pcie_gen, det.pcie_width) == (4, 16)


def test_nearest_nic_wins_over_a_farther_one(tmp_path):
    """GPU0 sees NIC0 through one bridge (PIX) and NIC1 through several (PXB): it takes NIC0."""
    d = mutate(tmp_path, "hgx-h100-4gpu", "cmd/nvidia-smi_topo_-m.txt", "GPU0\t X \tNV6\tNV6\tNV6\tPIX\tSYS",
               "GPU0\t X \tNV6\tNV6\tNV6\tPIX\tPXB")
    det = inspect(replay_runner(d), root=d / "root")
    assert det.nic_count == 4 and det.nic_affinity == "per-gpu"


def _runner(outputs: dict[str, str]):
    def run(cmd):
        key = " ".join(cmd[:3]) if cmd[0] == "nvidia-smi" else cmd[0]
        for k, v in outputs.items():
            if key.startswith(k):
                return 0, v
        return 127, ""
    return run


@pytest.mark.parametrize("fabric,kind", [("Completed", "switch"), ("N/A", "all-to-all")])
def test_two_gpu_slice_of_an_nvswitch_node(fabric, kind, tmp_path):
    """Two GPUs of an NVSwitch system (a VM or a job's share): NV18 to the one peer equals the GPU's
    18 links, so only the fabric state tells a switch from a direct bridge."""
    topo = ("\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\nGPU0\t X \tNV18\t0-15\t0\t\tN/A\n"
            "GPU1\tNV18\t X \t0-15\t0\t\tN/A\n")
    nvl = "".join(f"GPU {g}: NVIDIA H100 80GB HBM3 (UUID: GPU-{g})\n" + "".join(
        f"\t Link {k}: 26.562 GB/s\n" for k in range(18)) for g in range(2))
    q = "".join(f"GPU 00000000:{b}:00.0\n    Product Name                          : NVIDIA H100 80GB HBM3\n"
                f"    Fabric\n        State                             : {fabric}\n" for b in ("18", "2A"))
    det = inspect(_runner({"nvidia-smi topo -m": topo, "nvidia-smi nvlink -s": nvl, "nvidia-smi -q": q}),
                  root=tmp_path)
    assert det.gpu_count == 2 and det.nvlink_kind == kind
    assert close(det.nvlink_bw, 18 * H100_LINK)
    assert det.pcie_gen is None and not det.tables["node.pcie"]["bw"].detected
    core_check(render(det), tmp_path)


# ================================================================ sockets (issue 25: the node as a graph)
@pytest.mark.parametrize("name,sockets,gpu_socket,nic_socket", [
    ("dgx-h100", 2, [0, 0, 0, 0, 1, 1, 1, 1], [0, 0, 0, 0, 1, 1, 1, 1]),
    ("pcie-nvbridge", 2, [0, 0, 1, 1], [0, 1]),
    ("h200x4", 1, None, None),
    ("pcie-only", 1, None, None),
])
def test_detect_writes_the_sockets_it_sees(name, sockets, gpu_socket, nic_socket, tmp_path):
    det = fixture(name)
    assert det.tables["node"]["sockets"].value == sockets
    got = det.tables["node"].get("gpu_socket")
    assert (got.value if got else None) == gpu_socket
    got = det.tables["node.nic"].get("socket")
    assert (got.value if got else None) == nic_socket
    text = render(det)
    if sockets > 1:
        # the link between sockets cannot be seen from the node: a placeholder, marked
        assert "[node.inter_socket]" in text and "NOT DETECTED: placeholder; the link between sockets" in text
    c = core_check(text, tmp_path)
    assert c["gpus_per_node"] == len(det.gpus)

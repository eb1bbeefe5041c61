"""Helpers shared by the speed benchmarks: run a command under ``/usr/bin/time -v`` with a wall-clock
limit and a resident-memory limit, and describe the host.

Not a test module; imported by ``run.py``, ``simgrid_compare.py`` and ``import_bench.py``.
"""
from __future__ import annotations

import json
import os
import platform
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CORE = REPO / "target" / "release" / "g2gsim-core"
PRESETS = REPO / "python" / "g2gsim" / "presets"
GNU_TIME = "/usr/bin/time"


@dataclass
class Measured:
    """What one measured command did."""
    argv: list[str]
    rc: int | None = None
    status: str = "ok"               # ok | error | timeout | memory-limit
    wall_s: float = 0.0              # wall time of the whole process (start-up included)
    user_s: float = 0.0
    sys_s: float = 0.0
    max_rss_bytes: int = 0           # from /usr/bin/time -v (kernel's peak RSS of the process)
    watch_peak_rss_bytes: int = 0    # what the watchdog saw (sampled, process tree)
    stdout: str = ""
    stderr: str = ""
    time_v: dict = field(default_factory=dict)

    @property
    def cpu_s(self) -> float:
        return self.user_s + self.sys_s


def _tree_pids(root: int) -> list[int]:
    """``root`` and its descendants (Linux /proc)."""
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for t in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{t}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
        except (FileNotFoundError, ProcessLookupError, PermissionError, NotADirectoryError):
            pass
    return out


def _rss_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
        return 0


_TIME_KEYS = {
    "User time (seconds)": "user_s",
    "System time (seconds)": "sys_s",
    "Maximum resident set size (kbytes)": "max_rss_kb",
    "Elapsed (wall clock) time (h:mm:ss or m:ss)": "elapsed",
    "Exit status": "exit_status",
    "Major (requiring I/O) page faults": "major_faults",
    "Voluntary context switches": "vol_cs",
    "Involuntary context switches": "invol_cs",
    "Percent of CPU this job got": "cpu_percent",
}


def parse_time_v(text: str) -> tuple[dict, str]:
    """Splits GNU time's ``-v`` report (at the end of stderr) from the program's own stderr."""
    info: dict = {}
    keep = []
    in_report = False
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("Command being timed:"):
            in_report = True
            continue
        if in_report and ":" in s:
            k, _, v = s.rpartition(": ") if ": " in s else (s, "", "")
            k = k.strip()
            if k in _TIME_KEYS:
                info[_TIME_KEYS[k]] = v.strip()
            continue
        if not in_report:
            keep.append(line)
    return info, "\n".join(keep)


def measure(argv: list[str], timeout_s: float | None = None, mem_limit_bytes: int | None = None,
            env: dict | None = None, cwd: str | Path | None = None, poll_s: float = 0.25) -> Measured:
    """Runs ``argv`` under ``/usr/bin/time -v``; kills its process group when it runs past
    ``timeout_s`` or its resident memory (summed over the process tree) passes ``mem_limit_bytes``."""
    use_time = os.path.exists(GNU_TIME)
    full = [GNU_TIME, "-v"] + argv if use_time else list(argv)
    m = Measured(argv=list(argv))
    t0 = time.perf_counter()
    proc = subprocess.Popen(full, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, cwd=cwd, start_new_session=True)
    out_chunks: list[str] = []
    err_chunks: list[str] = []
    # drain the pipes in threads so a chatty child cannot block on a full pipe
    import threading

    def pump(stream, sink):
        for chunk in iter(lambda: stream.read(65536), ""):
            sink.append(chunk)

    th = [threading.Thread(target=pump, args=(proc.stdout, out_chunks), daemon=True),
          threading.Thread(target=pump, args=(proc.stderr, err_chunks), daemon=True)]
    for t in th:
        t.start()
    killed = None
    while True:
        try:
            proc.wait(timeout=poll_s)
            break
        except subprocess.TimeoutExpired:
            pass
        rss = sum(_rss_bytes(p) for p in _tree_pids(proc.pid))
        m.watch_peak_rss_bytes = max(m.watch_peak_rss_bytes, rss)
        if mem_limit_bytes and rss > mem_limit_bytes:
            killed = "memory-limit"
        elif timeout_s and time.perf_counter() - t0 > timeout_s:
            killed = "timeout"
        if killed:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
            break
    for t in th:
        t.join()
    m.wall_s = time.perf_counter() - t0
    m.rc = proc.returncode
    m.stdout = "".join(out_chunks)
    info, m.stderr = parse_time_v("".join(err_chunks)) if use_time else ({}, "".join(err_chunks))
    m.time_v = info
    m.user_s = float(info.get("user_s", 0) or 0)
    m.sys_s = float(info.get("sys_s", 0) or 0)
    m.max_rss_bytes = int(info.get("max_rss_kb", 0) or 0) * 1024 or m.watch_peak_rss_bytes
    if killed:
        m.status = killed
        m.max_rss_bytes = max(m.max_rss_bytes, m.watch_peak_rss_bytes)
    elif m.rc != 0:
        m.status = "error"
    return m


def host_info() -> dict:
    cpu = ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = 0
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemTotal:"):
                mem = int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        rev = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, timeout=10).stdout.strip()
        dirty = bool(subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
                                    capture_output=True, text=True, timeout=20).stdout.strip())
    except (OSError, subprocess.SubprocessError):
        rev, dirty = "", False
    try:
        load = os.getloadavg()
    except OSError:
        load = (0.0, 0.0, 0.0)
    return {"cpu": cpu, "cores": os.cpu_count(), "mem_bytes": mem, "python": sys.version.split()[0],
            "platform": platform.platform(), "git": rev + ("+dirty" if dirty else ""),
            "loadavg_at_start": [round(x, 2) for x in load],
            "date": time.strftime("%Y-%m-%dT%H:%M:%S%z")}


def fmt_bytes(n: float | int | None) -> str:
    if n is None:
        return "-"
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def fmt_rate(x: float | None) -> str:
    if x is None or x != x:
        return "-"
    if x >= 1e6:
        return f"{x / 1e6:.2f} M"
    if x >= 1e3:
        return f"{x / 1e3:.1f} k"
    return f"{x:.0f}"


def fmt_int(x) -> str:
    return "-" if x is None else f"{int(x):,}"


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def load_json(path: Path) -> dict:
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return {}


def save_json(path: Path, data: dict) -> None:
    path = Path(path)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=False) + "\n")
    tmp.replace(path)


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmMgG]?)\s*$")


def parse_count(s: str) -> int:
    """``"64"``, ``"16k"``, ``"1M"`` (powers of two: 1k = 1024) -> int."""
    m = _SIZE.match(s)
    if not m:
        raise ValueError(f"not a count: {s!r}")
    mult = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[m.group(2).lower()]
    return int(float(m.group(1)) * mult)

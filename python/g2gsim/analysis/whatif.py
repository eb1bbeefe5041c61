"""Node-configuration what-ifs (paper Sec. V-c, Fig. 7): the same trace with 1, 2, 4, 6 ... GPUs (ranks)
per node, under HostCopy and GPUDirect, optionally with the NIC bandwidth scaled with the GPU count."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .. import machines
from ..sim import SimulationError, simulate
from ._parallel import check_jobs, pmap
from .metrics import summary


def preset_gpus_per_node(machine: str | Path) -> int:
    return int(machines.check(machine, nodes=1)["gpus_per_node"])


def whatif(trace: str | Path, machine: str | Path = "lassen", gpus_per_node: Sequence[int] = (1, 2, 4, 6), *,
           scale_nic_with_gpus: bool = False, mapping: str | list[int] | None = None,
           modes: Sequence[str] = ("hostcopy", "gpudirect"), network_scale: float = 1.0,
           assume_buffers: str | None = None, progress: Callable[[str], None] | None = None,
           jobs: int | None = None, **sim_kw: Any) -> dict:
    """Simulates ``trace`` for each GPUs-per-node value and mode; returns {"rows": [...], ...}.

    With scale_nic_with_gpus the network bandwidth is multiplied by gpn / (the machine's GPUs per node),
    i.e. the NIC grows linearly with the GPUs it serves (paper Fig. 7); network_scale multiplies on top.
    A mapping that does not fit a configuration gives a row with an ``error``.
    jobs: simulations side by side, as in ``compare`` (the same answer for any number).
    """
    from ..sim import as_native
    path = as_native(trace)
    if assume_buffers is not None:
        sim_kw.setdefault("assume_buffers", assume_buffers)
    nranks = _nranks(path)
    base_gpn = preset_gpus_per_node(machine)
    sim_kw = {k: v for k, v in sim_kw.items() if v is not None}
    rows = []
    assumptions: dict[str, None] = {}
    minfo = None
    runs = [(int(gpn), mode) for gpn in gpus_per_node for mode in modes]

    def run(r: tuple[int, str], stop: Callable[[int, int], None]) -> tuple[dict[str, Any], dict | None]:
        gpn, mode = r
        scale = network_scale * (gpn / base_gpn if scale_nic_with_gpus else 1.0)
        row: dict[str, Any] = {"gpus_per_node": gpn, "mode": mode, "network_scale": scale}
        try:
            rep = simulate(path, machine, mode=mode, gpus_per_node=gpn, mapping=mapping,
                           network_scale=scale, progress=stop, **sim_kw)
        except (ValueError, SimulationError) as e:
            row["error"] = str(e)
            return row, None
        return row, rep

    for row, rep in pmap(run, runs, check_jobs(jobs, nranks), progress, label=lambda r: f"{r[0]} GPUs/node, {r[1]}"):
        if rep is not None:
            row.update(nodes=int(rep["nodes"]), **summary(rep))
            row["notices"] = rep.get("notices", [])
            minfo = minfo or rep.get("machine_info")
            assumptions.update(dict.fromkeys(rep.get("assumptions", [])))
        rows.append(row)
    for mode in modes:
        ok = [r for r in rows if r["mode"] == mode and "error" not in r]
        if ok:
            ref = ok[0]["comm_s"]
            for r in ok:
                r["comm_change_vs_first"] = (r["comm_s"] / ref - 1) if ref else float("nan")
    return {"trace": str(path), "machine": str(machine), "nranks": nranks, "machine_gpus_per_node": base_gpn,
            "scale_nic_with_gpus": scale_nic_with_gpus, "mapping": mapping if isinstance(mapping, str) or mapping is None
            else "file", "modes": list(modes), "rows": rows, "assumptions": list(assumptions), "machine_info": minfo,
            "notices": list(dict.fromkeys(n for r in rows for n in r.get("notices", [])))}


def _nranks(path: Path) -> int:
    import pyarrow.parquet as pq
    md = pq.read_schema(path).metadata or {}
    return int(md.get(b"g2gsim.nranks", b"0"))

#!/usr/bin/env python3
"""How do one GPU's copy engines share concurrent copies?  (issue 28, one-GPU part; the model's
copy-engine parameters, docs/models/hostcopy.md and docs/machine-files.md.)

Runs on one GPU, one process.  For each per-copy size, times a set of cudaMemcpyAsync calls issued
at the same instant on separate streams and waited together, and the same copies one at a time:

  D2H, H2D, D2D                 one copy alone (pinned host memory unless the name says pageable)
  D2H||H2D                      one copy each way at once: separate engines per direction?
  D2H||D2H, H2D||H2D            two copies the same way: do they share one engine?
  D2Hx4, H2Dx4                  four the same way
  D2H||H2D||D2D                 both directions and an on-device copy
  D2H-pageable, H2D-pageable    pageable host memory (staged by the driver)
  D2H-pageable||H2D             a pageable copy next to a pinned one
  sync-small                    cudaMemcpy (synchronous) of small sizes: the per-call cost

Every figure is the median of REPS timed repetitions (CUDA events around the whole group on the
null stream after all streams joined, so the group's makespan), with min and max beside it.  The
JSON it prints is what docs/validation/h100x1/ keeps.

    python3 bench/calibrate/copy_engine_probe.py > copy_engine.json
"""
from __future__ import annotations

import json
import statistics
import sys
import time

import cupy as cp
import numpy as np

D2H, H2D, D2D = 2, 1, 3
SIZES = [65536, 1 << 20, 16 << 20, 256 << 20]
REPS = 15


def main() -> None:
    rt = cp.cuda.runtime
    dev = cp.cuda.Device(0)
    dev.use()
    props = rt.getDeviceProperties(0)
    out = {
        "gpu": props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"]),
        "async_engine_count": int(props.get("asyncEngineCount", -1)),
        "reps": REPS,
        "sizes": SIZES,
        "cases": [],
    }
    maxn = max(SIZES)
    # four device sources, four device destinations, four pinned and two pageable host buffers
    dsrc = [cp.ones(maxn, cp.uint8) for _ in range(4)]
    ddst = [cp.zeros(maxn, cp.uint8) for _ in range(4)]
    pinned = [np.frombuffer(cp.cuda.alloc_pinned_memory(maxn), np.uint8, maxn) for _ in range(4)]
    for p in pinned:
        p[:] = 1
    pageable = [np.ones(maxn, np.uint8) for _ in range(2)]
    streams = [cp.cuda.Stream(non_blocking=True) for _ in range(6)]
    rt.deviceSynchronize()

    def copy(kind: str, i: int, n: int, stream) -> None:
        if kind == "D2H":
            rt.memcpyAsync(pinned[i].ctypes.data, int(dsrc[i].data.ptr), n, D2H, stream.ptr)
        elif kind == "H2D":
            rt.memcpyAsync(int(ddst[i].data.ptr), pinned[i].ctypes.data, n, H2D, stream.ptr)
        elif kind == "D2D":
            rt.memcpyAsync(int(ddst[3 - i].data.ptr), int(dsrc[3 - i].data.ptr), n, D2D, stream.ptr)
        elif kind == "D2H-pageable":
            rt.memcpyAsync(pageable[i % 2].ctypes.data, int(dsrc[i].data.ptr), n, D2H, stream.ptr)
        elif kind == "H2D-pageable":
            rt.memcpyAsync(int(ddst[i].data.ptr), pageable[i % 2].ctypes.data, n, H2D, stream.ptr)
        else:
            raise ValueError(kind)

    def group(kinds: list[str], n: int) -> float:
        """Makespan in seconds of the copies issued together, one stream each."""
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        null = cp.cuda.Stream.null
        start.record(null)
        for s in streams[: len(kinds)]:
            s.wait_event(start)
        for j, k in enumerate(kinds):
            copy(k, j, n, streams[j])
        for s in streams[: len(kinds)]:
            ev = cp.cuda.Event()
            ev.record(s)
            null.wait_event(ev)
        stop.record(null)
        stop.synchronize()
        return cp.cuda.get_elapsed_time(start, stop) / 1e3

    cases = {
        "D2H": ["D2H"], "H2D": ["H2D"], "D2D": ["D2D"],
        "D2H||H2D": ["D2H", "H2D"], "D2H||D2H": ["D2H", "D2H"], "H2D||H2D": ["H2D", "H2D"],
        "D2Hx4": ["D2H"] * 4, "H2Dx4": ["H2D"] * 4,
        "D2H||H2D||D2D": ["D2H", "H2D", "D2D"],
        "D2H-pageable": ["D2H-pageable"], "H2D-pageable": ["H2D-pageable"],
        "D2H-pageable||H2D": ["D2H-pageable", "H2D"],
    }
    for n in SIZES:
        for name, kinds in cases.items():
            group(kinds, n)  # warm-up
            t = [group(kinds, n) for _ in range(REPS)]
            # the same copies one after another (sum of singles) for the sharing ratio
            singles = sum(statistics.median(group([k], n) for _ in range(5)) for k in kinds)
            med = statistics.median(t)
            out["cases"].append({
                "case": name, "bytes_per_copy": n, "copies": len(kinds),
                "makespan_s_median": med, "makespan_s_min": min(t), "makespan_s_max": max(t),
                "sum_of_singles_s": singles,
                "aggregate_bw_bytes_per_s": n * len(kinds) / med,
                "overlap_ratio": singles / med,  # 1 = serialised, len(kinds) = fully concurrent
            })
            print(f"{name:22s} {n:>10d} B x{len(kinds)}  {med * 1e6:10.1f} us  "
                  f"{n * len(kinds) / med / 1e9:7.2f} GB/s  overlap {singles / med:4.2f}", file=sys.stderr)

    # synchronous small copies: the per-call cost of cudaMemcpy
    pc = time.perf_counter
    for n in [8, 1024, 8192, 65536]:
        for kind, d in (("D2H", D2H), ("H2D", H2D)):
            samples = []
            for i in range(2000):
                t0 = pc()
                if d == D2H:
                    rt.memcpy(pinned[0].ctypes.data, int(dsrc[0].data.ptr), n, D2H)
                else:
                    rt.memcpy(int(ddst[0].data.ptr), pinned[0].ctypes.data, n, H2D)
                if i >= 200:
                    samples.append(pc() - t0)
            out["cases"].append({"case": f"sync-small-{kind}", "bytes_per_copy": n, "copies": 1,
                                 "makespan_s_median": statistics.median(samples),
                                 "makespan_s_min": min(samples), "makespan_s_max": max(samples)})
            print(f"sync {kind} {n:>8d} B  {statistics.median(samples) * 1e6:8.2f} us", file=sys.stderr)
    json.dump(out, sys.stdout, indent=1)


if __name__ == "__main__":
    main()

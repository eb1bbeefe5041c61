#!/usr/bin/env python3
"""PCIe efficiency of one GPU, one-way and both ways at once (seed 001's A40 pair moves data both ways).

Run on a GPU machine (cupy): pinned host <-> device copies of 256 MiB, H2D alone, D2H alone, and H2D
and D2H at the same time on two streams; prints GB/s and the fraction of the link's rated rate
(PCIe generation and width from nvidia-smi) as JSON.

    python3 bench/seeds/pcie_bidir.py [--bytes 268435456] [--reps 20] > docs/validation/pcie_bidir.json
"""
from __future__ import annotations

import argparse
import json
import subprocess
import time

RATED_GBPS = {3: 0.985, 4: 1.969, 5: 3.938}  # GB/s per lane per direction after 128b/130b encoding


def link() -> tuple[int, int]:
    q = "pcie.link.gen.current,pcie.link.width.current,name"
    out = subprocess.run(["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader,nounits", "-i", "0"],
                         capture_output=True, text=True, check=True).stdout.strip().split(",")
    return int(out[0]), int(out[1])


def main() -> None:
    import cupy as cp

    ap = argparse.ArgumentParser()
    ap.add_argument("--bytes", type=int, default=256 << 20)
    ap.add_argument("--reps", type=int, default=20)
    a = ap.parse_args()
    n = a.bytes
    dev = [cp.empty(n, dtype=cp.uint8) for _ in range(2)]
    host = [cp.cuda.alloc_pinned_memory(n) for _ in range(2)]
    s1, s2 = cp.cuda.Stream(non_blocking=True), cp.cuda.Stream(non_blocking=True)

    def h2d(i, s):
        cp.cuda.runtime.memcpyAsync(dev[i].data.ptr, host[i].ptr, n, cp.cuda.runtime.memcpyHostToDevice, s.ptr)

    def d2h(i, s):
        cp.cuda.runtime.memcpyAsync(host[i].ptr, dev[i].data.ptr, n, cp.cuda.runtime.memcpyDeviceToHost, s.ptr)

    def timed(fn) -> float:
        fn()
        cp.cuda.runtime.deviceSynchronize()
        best = float("inf")
        for _ in range(a.reps):
            t = time.perf_counter()
            fn()
            cp.cuda.runtime.deviceSynchronize()
            best = min(best, time.perf_counter() - t)
        return best

    t_h2d = timed(lambda: h2d(0, s1))
    t_d2h = timed(lambda: d2h(1, s2))
    t_both = timed(lambda: (h2d(0, s1), d2h(1, s2)))
    gen, width = link()
    rated = RATED_GBPS.get(gen, 0.0) * width
    res = {
        "gpu": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
        "pcie_gen": gen, "pcie_width": width, "rated_GBps_per_direction": round(rated, 2),
        "bytes": n, "reps": a.reps, "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "h2d_GBps": round(n / t_h2d / 1e9, 2), "d2h_GBps": round(n / t_d2h / 1e9, 2),
        "both_ways_total_GBps": round(2 * n / t_both / 1e9, 2),
    }
    if rated:
        res["h2d_efficiency"] = round(res["h2d_GBps"] / rated, 3)
        res["d2h_efficiency"] = round(res["d2h_GBps"] / rated, 3)
        res["both_ways_efficiency"] = round(res["both_ways_total_GBps"] / (2 * rated), 3)
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()

"""Copy-engine probe (issue 28): how a GPU runs several peer copies at once, without MPI.

One process, every GPU of the node (peer access on).  For one size (default 64 MiB), the median of
``--reps`` repetitions of:

* ``pair``: one copy GPU 1 -> GPU 0 (the one-pair time T);
* ``fan-in``: GPUs 1..P-1 -> GPU 0 at once, each copy on its own stream of GPU 0 (the receiver
  pulls, as CUDA IPC copies in UCX's cuda_ipc do);
* ``all-to-all <order> <streams>``: every GPU pulls one block from every other at once; each
  receiver issues its P-1 copies in ``asc`` order (peers 0, 1, ..., as an MPI code posting
  Irecvs in rank order) or ``rot`` order (peers r+1, r+2, ...), on 1 stream, 2 streams (round
  robin) or one stream per copy.

Prints one JSON line per case with the time in units of T and the device's asyncEngineCount.
Copies on one stream run one after another; on several streams the hardware decides: if a
receiver's copies queue on fewer engines than streams, the ``asc`` order puts several receivers
on one source at once and takes longer than ``rot``, which a fair bandwidth share would not.

    python3 bench/calibrate/ce_probe.py [--bytes 64MiB] [--reps 10]
"""
import argparse
import json
import time

import cupy as cp


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bytes", default="64MiB")
    ap.add_argument("--reps", type=int, default=10)
    a = ap.parse_args()
    s = a.bytes.upper().replace("IB", "")
    n = int(float(s[:-1]) * {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[s[-1]]) if s[-1] in "KMG" else int(s)
    P = cp.cuda.runtime.getDeviceCount()
    props = cp.cuda.runtime.getDeviceProperties(0)
    bufs, streams = {}, {}
    for d in range(P):
        with cp.cuda.Device(d):
            for e in range(P):
                if e != d and cp.cuda.runtime.deviceCanAccessPeer(d, e):
                    try:
                        cp.cuda.runtime.deviceEnablePeerAccess(e)
                    except cp.cuda.runtime.CUDARuntimeError:
                        pass
            bufs[d] = (cp.ones(n * P, cp.uint8), cp.zeros(n * P, cp.uint8))   # src blocks, dst blocks
            streams[d] = [cp.cuda.Stream(non_blocking=True) for _ in range(P)]

    def copy(dst, src, stream):
        sb, db = bufs[src][0], bufs[dst][1]
        cp.cuda.runtime.memcpyPeerAsync(db.data.ptr + src * n, dst, sb.data.ptr + dst * n, src, n, stream.ptr)

    def run(jobs):
        """jobs: per receiver, a list of (src, stream index); returns seconds (median)."""
        ts = []
        for _ in range(a.reps + 2):
            for d in range(P):
                with cp.cuda.Device(d):
                    cp.cuda.Device(d).synchronize()
            t0 = time.perf_counter()
            for dst, lst in jobs.items():
                with cp.cuda.Device(dst):
                    for src, k in lst:
                        copy(dst, src, streams[dst][k])
            for d in range(P):
                with cp.cuda.Device(d):
                    for st in streams[d]:
                        st.synchronize()
            ts.append(time.perf_counter() - t0)
        ts = sorted(ts[2:])
        return ts[len(ts) // 2], ts[0]

    T, _ = run({0: [(1, 0)]})
    out = [("pair", {0: [(1, 0)]}), ("fan-in", {0: [(s, i) for i, s in enumerate(range(1, P))]})]
    for order in ("asc", "rot"):
        for ns in (1, 2, P - 1):
            jobs = {}
            for r in range(P):
                peers = [q for q in range(P) if q != r] if order == "asc" else [(r + k) % P for k in range(1, P)]
                jobs[r] = [(q, i % ns) for i, q in enumerate(peers)]
            out.append((f"all-to-all {order} {ns} stream(s)", jobs))
    # concurrent patterns, every copy on its own stream of its receiver (dst <- src pulls)
    def pattern(pairs):
        jobs: dict = {}
        for dst, src in pairs:
            jobs.setdefault(dst, []).append((src, len(jobs.get(dst, []))))
        return jobs
    if P >= 4:
        for name, pairs in (
                ("two pairs 0-1 2-3 both ways", [(0, 1), (1, 0), (2, 3), (3, 2)]),
                ("two pairs 0-2 1-3 both ways", [(0, 2), (2, 0), (1, 3), (3, 1)]),
                ("two pairs 0-3 1-2 both ways", [(0, 3), (3, 0), (1, 2), (2, 1)]),
                ("4-cycle one way", [(0, 1), (1, 2), (2, 3), (3, 0)]),
                ("4-cycle both ways", [(0, 1), (1, 2), (2, 3), (3, 0), (1, 0), (2, 1), (3, 2), (0, 3)]),
                ("all-to-all of 3 GPUs", [(a, b) for a in range(3) for b in range(3) if a != b]),
                ("one GPU 3 in 3 out", [(0, 1), (0, 2), (0, 3), (1, 0), (2, 0), (3, 0)]),
                ("pair 0-1 both ways", [(0, 1), (1, 0)])):
            out.append((name, pattern(pairs)))
    for name, jobs in out:
        med, best = run(jobs)
        print(json.dumps({"case": name, "bytes": n, "gpus": P, "median_us": round(med * 1e6, 1),
                          "fastest_us": round(best * 1e6, 1), "median_in_T": round(med / T, 2),
                          "asyncEngineCount": props.get("asyncEngineCount")}), flush=True)


if __name__ == "__main__":
    main()

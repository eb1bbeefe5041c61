#!/usr/bin/env python3
"""A DUMPI trace generator for import benchmarks: writes ``<dir>/<prefix>.meta`` and one
``<prefix>-NNNN.bin`` per rank laid out as libdumpi writes them (the layout
``python/g2gsim/readers/dumpi_reader.py`` documents: magic, record stream, header, footer with
call counts, datatype size table, index).

Per rank and iteration, what MiniFE's CG loop records (the corpus's MiniFE traces): ``MPI_Irecv``
x4 and ``MPI_Isend`` x4 to the neighbours on a periodic 2D grid, ``MPI_Waitall`` on the 8 requests
(with statuses), ``MPI_Allreduce`` of 8 bytes, ``MPI_Wtime``: 11 records, every record with
thread id, CPU and wall clocks (mask 0x4f).  Files are written as a stream (bounded memory).

    python3 bench/speed/dumpi_gen.py /tmp/dumpi-5M --ranks 64 --records 5e6
"""
from __future__ import annotations

import argparse
import json
import math
import struct
import sys
import time
from pathlib import Path

MAGIC = 0xFFAADD44554D5049
FOOT_MAGIC = 0xF007FEE7
END_OF_STREAM = 293
F = {"Isend": 8, "Irecv": 12, "Waitall": 18, "Allreduce": 65, "Wtime": 122, "Init": 124,
     "Finalize": 125, "Comm_rank": 82, "Comm_size": 81}
SIZES = [0, 0, 1, 1, 1, 1, 4, 2, 2, 4, 4, 8, 8, 4, 8, 16, 8, 8, 8, 1, 0, 0, 8, 12, 12, 6, 8, 20]
DOUBLE, WORLD = 14, 2
RECORDS_PER_ITER = 11
MASK = 0x4F


def _grid(n: int) -> tuple[int, int]:
    px = int(math.isqrt(n))
    while n % px:
        px -= 1
    return px, n // px


def _write_rank(path: Path, r: int, nranks: int, iterations: int, msg_doubles: int,
                compute_ns: int, wall_offset: int) -> int:
    px, py = _grid(nranks)
    x, y = r % px, r // px
    nbrs = [((x + 1) % px) + y * px, ((x - 1) % px) + y * px, x + ((y + 1) % py) * px,
            x + ((y - 1) % py) * px]
    counts = [0] * 291
    head = struct.Struct(">HBHHIHIHIHI")    # fid, mask, thread, cpu s0 ns0 s1 ns1, wall s0 ns0 s1 ns1
    p2p = struct.Struct(">iHiiHi")
    allred = struct.Struct(">iHBH")
    t = [wall_offset * 10**9 + 500_000_000 + r * 1000]
    out = open(path, "wb")
    out.write(struct.pack(">Q", MAGIC))
    out.write(struct.pack(">ii", 0, wall_offset))
    buf = bytearray()

    def rec(fid: int, payload: bytes, dur: int = 200, gap: int = 300) -> None:
        t0 = t[0]
        t1 = t0 + dur
        s0, ns0 = divmod(t0, 10**9)
        s1, ns1 = divmod(t1, 10**9)
        buf.extend(head.pack(fid, MASK, 0, 0, ns0, 0, ns1, (s0 - wall_offset) & 0xFFFF, ns0,
                             (s1 - wall_offset) & 0xFFFF, ns1))
        buf.extend(payload)
        counts[fid] += 1
        counts[290] += 1
        t[0] = t1 + gap

    rec(F["Init"], struct.pack(">i", 0))
    rec(F["Comm_rank"], struct.pack(">Hi", WORLD, r))
    rec(F["Comm_size"], struct.pack(">Hi", WORLD, nranks))
    status = b"".join(struct.pack(">iiBBi", msg_doubles * 8, nbrs[k ^ 1], 0, 0, k) for k in range(4))
    status += b"".join(struct.pack(">iiBBi", 0, 0, 0, 0, 0) for _ in range(4))
    waitall = struct.pack(">ii", 8, 8) + struct.pack(">8i", *range(2, 10)) + struct.pack(">i", 8) + status
    nb = msg_doubles
    for it in range(iterations):
        t[0] += compute_ns
        for k in range(4):
            rec(F["Irecv"], p2p.pack(nb, DOUBLE, nbrs[k ^ 1], k, WORLD, 2 + k))
        for k in range(4):
            rec(F["Isend"], p2p.pack(nb, DOUBLE, nbrs[k], k, WORLD, 6 + k))
        rec(F["Waitall"], waitall, dur=5000)
        rec(F["Allreduce"], allred.pack(1, DOUBLE, 3, WORLD), dur=3000)
        rec(F["Wtime"], b"", dur=50)
        if len(buf) > 1 << 20:
            out.write(buf)
            buf.clear()
    rec(F["Finalize"], b"")
    buf.extend(struct.pack(">H", END_OF_STREAM))
    out.write(buf)
    pos = out.tell()
    header = pos
    hdr = bytes([1, 1, 0]) + struct.pack(">Q", wall_offset)
    hdr += struct.pack(">H", 4) + b"node" + struct.pack(">H", 4) + b"user" + struct.pack(">ii", 0, 0)
    footer = header + len(hdr)
    foot = struct.pack(">Q", FOOT_MAGIC) + struct.pack(">291I", *counts) + struct.pack(">291I", *([0] * 291))
    tail = struct.pack(">i", 0)                     # key/value record
    perflbl = footer + len(foot) + len(tail)
    tail += struct.pack(">i", 0)
    sizelbl = footer + len(foot) + len(tail)
    tail += struct.pack(f">i{len(SIZES)}i", len(SIZES), *SIZES)
    addrlbl = footer + len(foot) + len(tail)
    tail += struct.pack(">i", 0)
    tail += struct.pack(">8Q", MAGIC, sizelbl, addrlbl, perflbl, header, 8, footer, 0)
    out.write(hdr + foot + tail)
    out.close()
    return counts[290]


def generate_dumpi(directory: str | Path, nranks: int = 64, records: int = 5_000_000,
                   prefix: str = "halo", msg_doubles: int = 8192, compute_ns: int = 20_000) -> dict:
    """Writes a DUMPI trace of about ``records`` records; returns {"meta", "records", ...}."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    iterations = max(1, round((records / nranks - 4) / RECORDS_PER_ITER))
    t0 = time.perf_counter()
    total = 0
    wall_offset = 1_700_000_000
    for r in range(nranks):
        total += _write_rank(d / f"{prefix}-{r:04d}.bin", r, nranks, iterations, msg_doubles,
                             compute_ns, wall_offset)
    meta = d / f"{prefix}.meta"
    meta.write_text(f"hostname=node\nnumprocs={nranks}\nusername=user\nstartime={wall_offset}\n"
                    f"fileprefix={prefix}\nversion=1\nsubversion=1\nsubsubversion=0\n")
    return {"meta": str(meta), "records": total, "nranks": nranks, "iterations": iterations,
            "write_s": time.perf_counter() - t0,
            "bytes": sum(p.stat().st_size for p in d.glob(f"{prefix}-*.bin"))}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("directory", type=Path)
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--records", type=float, default=5e6)
    a = ap.parse_args(argv)
    info = generate_dumpi(a.directory, a.ranks, int(a.records))
    print(json.dumps(info))
    return 0


if __name__ == "__main__":
    sys.exit(main())

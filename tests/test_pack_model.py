"""Non-contiguous device data: a traced strided send (g2g:contiguous = 0 from the tracer) is
modelled with the pack kernel before a GPU-aware send and the unpack after it (issue 12)."""
from __future__ import annotations

import pytest

otf2 = pytest.importorskip("otf2")

import g2gsim  # noqa: E402
from g2gsim.readers.otf2_reader import read_otf2  # noqa: E402
from g2gsim.testing.otf2_synth import SynthArchive  # noqa: E402


def _archive(path, contiguous: int, nbytes: int):
    with SynthArchive(path, nranks=2, gpu=True, mem_attr="uint8", tracer_attrs=True) as A:
        W = A.world
        for r in range(2):
            A.enter(r, 100, "MPI_Init")
            A.leave(r, 200, "MPI_Init")
        A.enter(0, 300, "MPI_Send")
        A.send(0, 310, 1, W, 1, nbytes, mem="device", extra={"g2g:contiguous": contiguous})
        A.leave(0, 400, "MPI_Send")
        A.enter(1, 300, "MPI_Recv")
        A.recv(1, 390, 0, W, 1, nbytes, mem="device", extra={"g2g:contiguous": contiguous})
        A.leave(1, 400, "MPI_Recv")
        for r in range(2):
            A.enter(r, 1000, "MPI_Finalize")
            A.leave(r, 1100, "MPI_Finalize")
    return A.anchor


def test_traced_strided_device_send_pays_pack_and_unpack(tmp_path):
    nbytes = 3_000_000
    times = {}
    for c in (1, 0):
        t = read_otf2(_archive(tmp_path / f"a{c}", c, nbytes))
        p = tmp_path / f"t{c}.g2g.parquet"
        t.write(p)
        r = g2gsim.simulate(p, "h200x4", mode="gpudirect")
        times[c] = r["per_rank"][1]["end_s"]
        # staged through the host, MPI packs nothing on the GPU
        times[f"hc{c}"] = g2gsim.simulate(p, "h200x4", mode="hostcopy")["per_rank"][1]["end_s"]
    # defaults: pack kernel latency 5 us, pack bandwidth 300 GB/s; once at the sender, once at the receiver
    pack = 5e-6 + nbytes / 300e9
    assert times[0] - times[1] == pytest.approx(2 * pack, rel=1e-6)
    assert times["hc0"] == pytest.approx(times["hc1"], rel=1e-9)

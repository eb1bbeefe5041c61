"""Tests of the synthetic trace generators (python/g2gsim/generate)."""
from __future__ import annotations

import math
import time

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from g2gsim.generate import GENERATORS, choices, generate, generate_to_file, params
from g2gsim.generate._grid import dims_create
from g2gsim.generate.verify import check_collectives, check_p2p, message_table, replay_check
from g2gsim.trace import PROC_NULL, Trace, TraceBuilder, TraceError

KiB, MiB = 1 << 10, 1 << 20
SEND = {"Send", "Isend", "Sendrecv"}

# small but structurally complete settings per workload
SMALL = {
    "pingpong": dict(sizes="8,1K,64K", iterations=3),
    "pingping": dict(sizes="8,1K,64K", iterations=3),
    "jacobi2d": dict(iterations=3, nx=64, ny=48, norm_every=2),
    "diffusion2d": dict(iterations=3, ny=1024),
    "matmul": dict(iterations=2, n=512),
    "amgx": dict(iterations=2),
    "lulesh": dict(iterations=2),
    "minisweep": dict(iterations=1),
    "sw4lite": dict(iterations=2),
    "halo3d": dict(iterations=2),
    "halo2d": dict(iterations=2),
    "allreduce": dict(iterations=3),
    "alltoall": dict(iterations=2, group_size=4),
}


def gen(name, ranks, **kw):
    return generate(name, ranks, **{**SMALL[name], **kw})


def frame(t: Trace) -> pd.DataFrame:
    df = t.table.to_pandas()
    df["op"] = df["op"].astype(str)
    return df.sort_values(["rank", "seq"]).reset_index(drop=True)


def ops_of(df, rank):
    return df[df["rank"] == rank]["op"].tolist()


# ============================================================================ registry
def test_registry_lists_every_workload_with_params():
    expected = {"pingpong", "pingping", "jacobi2d", "diffusion2d", "matmul", "amgx", "lulesh",
                "minisweep", "sw4lite", "halo3d", "halo2d", "allreduce", "alltoall"}
    assert expected <= set(GENERATORS)
    for name, g in GENERATORS.items():
        assert g.name == name and g.description and "\n" not in g.description
        ps = params(name)
        names = [p[0] for p in ps]
        assert len(names) == len(set(names))
        assert {"buffers", "staged", "jitter", "seed"} <= set(names)
        for pname, typ, default, help_ in ps:          # plain 4-tuples
            assert help_, (name, pname)
            assert typ in (int, float, bool, str) or str(typ).startswith("list"), (name, pname, typ)
            assert default is None or typ is float and isinstance(default, (int, float)) or \
                str(typ).startswith("list") and isinstance(default, list) or isinstance(default, typ)
        assert choices(name)["buffers"] == ("device", "host")


def test_unknown_workload_and_parameter_errors():
    with pytest.raises(ValueError, match="unknown workload"):
        generate("nope", 4)
    with pytest.raises(ValueError, match="unknown parameter"):
        generate("jacobi2d", 4, nxx=3)
    with pytest.raises(ValueError, match="not one of"):
        generate("jacobi2d", 4, buffers="gpu")
    with pytest.raises(ValueError, match="needs buffers='host'"):
        generate("jacobi2d", 4, staged=True)
    with pytest.raises(ValueError, match="at least 2 ranks"):
        generate("pingpong", 1)


def test_cli_strings_are_coerced():
    a = generate("pingpong", 2, sizes="8,1KiB,1MiB", iterations="2", barrier="false")
    b = generate("pingpong", 2, sizes=[8, 1024, 1 << 20], iterations=2, barrier=False)
    assert a.table.equals(b.table)
    df = frame(a)
    assert sorted(set(df[df.op == "Send"]["bytes"])) == [8, 1024, 1 << 20]
    assert "Barrier" not in set(df.op)
    # one rule for units everywhere (g2gsim.units, the core's): K/KB = 1000, KiB = 1024
    c = frame(generate("pingpong", 2, sizes="1K,2KB,1KiB,1.5MiB", iterations=1))
    assert sorted(set(c[c.op == "Send"]["bytes"])) == [1000, 1024, 2000, 1572864]
    with pytest.raises(ValueError, match="sizes"):
        generate("pingpong", 2, sizes="8,1Kb0")


def test_dims_create_is_most_square():
    assert dims_create(12, 2) == (4, 3)
    assert dims_create(7, 2) == (7, 1)
    assert dims_create(6, 2) == (3, 2)
    assert dims_create(1 << 20, 2) == (1024, 1024)
    assert dims_create(27, 3) == (3, 3, 3)
    assert dims_create(12, 3) == (3, 2, 2)
    assert dims_create(64, 3) == (4, 4, 4)


# ============================================================================ the checkers can fail
def test_checkers_catch_broken_traces():
    b = TraceBuilder(2)
    b.add(0, "Send", peer=1, tag=0, bytes=8)
    b.add(1, "Recv", peer=0, tag=0, recv_bytes=16)
    with pytest.raises(TraceError, match="posts 16 B"):
        check_p2p(b.build())
    b = TraceBuilder(2)
    b.add(0, "Send", peer=1, tag=0, bytes=8)
    b.add(1, "Recv", peer=0, tag=1, recv_bytes=8)
    with pytest.raises(TraceError, match="1 sends but 0 receives"):
        check_p2p(b.build())
    b = TraceBuilder(2)                          # both receive first: deadlock
    for r in (0, 1):
        b.add(r, "Recv", peer=1 - r, tag=0, recv_bytes=8)
        b.add(r, "Send", peer=1 - r, tag=0, bytes=8)
    t = b.build()
    check_p2p(t)
    with pytest.raises(TraceError, match="deadlock"):
        replay_check(t)
    b = TraceBuilder(2)
    b.add(0, "Isend", peer=1, tag=0, bytes=8, req=1)
    b.add(1, "Recv", peer=0, tag=0, recv_bytes=8)
    with pytest.raises(TraceError, match="never waited"):
        replay_check(b.build())
    b = TraceBuilder(2)
    b.add(0, "Bcast", bytes=8, root=0)
    b.add(1, "Bcast", bytes=8, root=1)
    with pytest.raises(TraceError, match="communicator 0"):
        check_collectives(b.build())


# ============================================================================ every generator
@pytest.mark.parametrize("ranks", [6, 7, 12])
@pytest.mark.parametrize("name", sorted(SMALL))
def test_pattern_is_consistent_and_deadlock_free(name, ranks):
    t = gen(name, ranks)
    t.validate()
    assert set(np.unique(t.table.column("rank").to_numpy())) == set(range(ranks))
    check_p2p(t)
    check_collectives(t)
    replay_check(t)
    df = frame(t)
    # seq contiguous per rank, starts with Init, ends with Finalize
    for r, g in df.groupby("rank"):
        assert g.seq.tolist() == list(range(len(g)))
        assert g.op.iloc[0] == "Init" and g.op.iloc[-1] == "Finalize"


@pytest.mark.parametrize("name", sorted(SMALL))
def test_deterministic_and_source_recorded(name, tmp_path):
    a, b = gen(name, 6), gen(name, 6)
    assert a.table.equals(b.table)
    assert a.source == b.source
    assert a.source.startswith(f"g2gsim generate {name} --ranks 6 ")
    assert "-p iterations=" in a.source and "-p buffers=device" in a.source
    path = a.write(tmp_path / "t.g2g.parquet")
    back = Trace.read(path)
    assert back.source == a.source and back.nranks == 6
    assert back.buffers == "assumed-device"
    assert len(back.table) == len(a.table)


def test_jitter_is_seeded():
    a = gen("jacobi2d", 4, jitter=0.2, seed=1, compute_ns=10**6)
    b = gen("jacobi2d", 4, jitter=0.2, seed=1, compute_ns=10**6)
    c = gen("jacobi2d", 4, jitter=0.2, seed=2, compute_ns=10**6)
    plain = gen("jacobi2d", 4, compute_ns=10**6)
    assert a.table.equals(b.table)
    assert not a.table.equals(c.table)
    da, dp = frame(a), frame(plain)
    ca, cp = da[da.op == "Compute"].dur_ns.to_numpy(), dp[dp.op == "Compute"].dur_ns.to_numpy()
    assert len(ca) == len(cp) and not np.array_equal(ca, cp)
    assert np.all(np.abs(ca / cp - 1) <= 0.2 + 1e-6)


# ============================================================================ staging (HostCopy)
def _check_staged(df: pd.DataFrame) -> tuple[int, int]:
    """Each send is right after a d2h Memcpy of its size; each receive's h2d copy follows it
    (Recv/Sendrecv: next row; Irecv: in the copies right after the Wait/Waitall that completes it).
    Returns (#d2h checked, #h2d checked)."""
    nd = nh = 0
    for _, g in df.groupby("rank"):
        rows = g.to_dict("records")
        irecv = {}
        for i, row in enumerate(rows):
            op = row["op"]
            if op == "Memcpy":
                assert row["stream"] == -1 and row["copy_kind"] in ("d2h", "h2d")
                continue
            if op in SEND and row["peer"] != PROC_NULL:
                prev = rows[i - 1]
                assert prev["op"] == "Memcpy" and prev["copy_kind"] == "d2h", (row, prev)
                assert prev["bytes"] == row["bytes"]
                nd += 1
            if op == "Irecv":
                irecv[row["req"]] = row
            expect = []
            if op in ("Recv", "Sendrecv") and (row["peer"] if op == "Recv" else row["recv_peer"]) != PROC_NULL:
                expect = [row["recv_bytes"]]
            if op in ("Wait", "Waitall"):
                names = [row["req"]] if op == "Wait" else list(row["reqs"])
                expect = [irecv.pop(q)["recv_bytes"] for q in names if q in irecv
                          and irecv[q]["peer"] != PROC_NULL]
            if expect:
                after = []
                j = i + 1
                while j < len(rows) and rows[j]["op"] == "Memcpy" and rows[j]["copy_kind"] == "h2d":
                    after.append(rows[j]["bytes"])
                    j += 1
                assert after[:len(expect)] == expect, (row, after, expect)
                nh += len(expect)
    return nd, nh


@pytest.mark.parametrize("name", ["pingpong", "pingping", "jacobi2d", "diffusion2d", "amgx", "lulesh",
                                  "minisweep", "sw4lite", "halo2d"])
def test_staged_copies_surround_messages(name):
    staged = frame(gen(name, 6, buffers="host", staged=True))
    plain = frame(gen(name, 6, buffers="host"))
    device = frame(gen(name, 6))
    assert "Memcpy" not in set(plain.op) and "Memcpy" not in set(device.op)
    msgs = staged[staged.op.isin(SEND | {"Irecv", "Recv"})]
    assert set(msgs.mem_space) == {"host"}
    dm = device[device.op.isin(SEND | {"Irecv", "Recv"})]
    assert set(dm.mem_space) == {"device"}
    nd, nh = _check_staged(staged)
    sends, recvs = message_table(gen(name, 6))
    assert nd == len(sends) and nh == len(recvs) and nd > 0
    # the staged trace is the plain one plus the copies
    assert (staged.op != "Memcpy").sum() == len(plain)
    cp = staged[staged.op == "Memcpy"]
    assert cp[cp.copy_kind == "d2h"]["bytes"].sum() >= sends["size"].sum()


def test_staged_collectives_copy_around_the_call():
    df = frame(gen("matmul", 4, buffers="host", staged=True, n=512))
    r0, r1 = df[df["rank"] == 0], df[df["rank"] == 1]
    whole, part = 512 * 512 * 8, 512 * 128 * 8
    assert r0.op.tolist()[1:9] == ["Memcpy", "Bcast", "Memcpy", "Scatter", "Memcpy", "Compute",
                                   "Memcpy", "Gather"]
    assert r0.copy_kind.tolist()[1] == "d2h" and r0["bytes"].tolist()[1] == whole   # root sends A
    assert r0.copy_kind.tolist()[3] == "d2h" and r0["bytes"].tolist()[3] == whole   # and all of B
    assert r0.copy_kind.tolist()[5] == "h2d" and r0["bytes"].tolist()[5] == part    # its B block
    assert r0.copy_kind.tolist()[7] == "d2h" and r0["bytes"].tolist()[7] == part    # its C block
    assert r0.copy_kind.tolist()[9] == "h2d" and r0["bytes"].tolist()[9] == whole   # all of C
    assert r1.op.tolist()[1:8] == ["Bcast", "Memcpy", "Scatter", "Memcpy", "Compute", "Memcpy", "Gather"]
    assert r1.copy_kind.tolist()[2] == "h2d" and r1["bytes"].tolist()[2] == whole
    ar = frame(gen("allreduce", 3, buffers="host", staged=True))
    seq = ops_of(ar, 2)
    i = seq.index("Allreduce")
    assert seq[i - 1] == "Memcpy" and seq[i + 1] == "Memcpy"


# ============================================================================ ping-pong / ping-ping
def test_pingpong_pattern():
    df = frame(generate("pingpong", 2, sizes="8,4KiB", iterations=5))
    a, b = df[df["rank"] == 0], df[df["rank"] == 1]
    assert ops_of(df, 0) == ["Init"] + (["Barrier"] + ["Send", "Recv"] * 5) * 2 + ["Finalize"]
    assert ops_of(df, 1) == ["Init"] + (["Barrier"] + ["Recv", "Send"] * 5) * 2 + ["Finalize"]
    assert a[a.op == "Send"]["bytes"].tolist() == [8] * 5 + [4096] * 5
    assert set(a[a.op != "Init"].peer) - {-1} == {1} and set(b.peer) - {-1} == {0}
    assert set(a[a.op == "Send"].tag) == {1} and set(b[b.op == "Send"].tag) == {2}


def test_pingpong_pairs_and_odd_ranks():
    df = frame(generate("pingpong", 7, sizes="64", iterations=1, pairing="half"))
    sends = df[df.op == "Send"]
    assert set(zip(sends["rank"], sends.peer)) == {(0, 3), (1, 4), (2, 5), (3, 0), (4, 1), (5, 2)}
    assert ops_of(df, 6) == ["Init", "Barrier", "Finalize"]


def test_pingping_pattern():
    df = frame(generate("pingping", 2, sizes="1MiB", iterations=2))
    for r, stag, rtag in ((0, 1, 2), (1, 2, 1)):
        g = df[df["rank"] == r]
        assert ops_of(df, r) == ["Init", "Barrier"] + ["Isend", "Irecv", "Waitall"] * 2 + ["Finalize"]
        assert set(g[g.op == "Isend"].tag) == {stag} and set(g[g.op == "Irecv"].tag) == {rtag}
        assert set(g[g.op == "Isend"]["bytes"]) == {MiB} and set(g[g.op == "Irecv"].recv_bytes) == {MiB}
        w = g[g.op == "Waitall"].iloc[0]
        assert sorted(w.reqs) == sorted(g[g.op.isin(["Isend", "Irecv"])].req.iloc[:2])


# ============================================================================ jacobi2d
def test_jacobi_halo_sizes_and_neighbours():
    # 6 ranks: 3 (y) x 2 (x); NX=101 over 2 -> 51/50, NY=70 over 3 -> 24/23/23
    t = generate("jacobi2d", 6, nx=101, ny=70, iterations=1)
    df = frame(t)
    s = df[df.op == "Isend"]
    nxl = {0: 51, 1: 50}
    nyl = {0: 24, 1: 23, 2: 23}
    for _, row in s.iterrows():
        r, p = int(row["rank"]), int(row.peer)
        iy, ix = divmod(r, 2)
        if abs(p - r) == 2:       # top / bottom: a row of nx_local doubles
            assert row["bytes"] == 8 * nxl[ix]
        else:                     # left / right: a column of ny_local doubles
            assert abs(p - r) == 1 and row["bytes"] == 8 * nyl[iy]
    deg = s.groupby("rank").size().to_dict()
    assert deg == {0: 2, 1: 2, 2: 3, 3: 3, 4: 2, 5: 2}          # non-periodic


def test_jacobi_default_is_seed_size():
    df = frame(generate("jacobi2d", 4, iterations=1))
    assert set(df[df.op == "Isend"]["bytes"]) == {8 * 17408 // 2}


def test_jacobi_overlap_puts_compute_between_isend_and_waitall():
    ov = frame(gen("jacobi2d", 9, overlap=True))
    seq = ops_of(ov, 4)                                  # the interior rank of 3x3
    it = seq[1:seq.index("Allreduce") + 1]
    assert it == ["Compute"] + ["Irecv"] * 4 + ["Isend"] * 4 + ["Compute", "Waitall", "Allreduce"]
    plain = frame(gen("jacobi2d", 9, overlap=False))
    seq = ops_of(plain, 4)
    it = seq[1:seq.index("Allreduce") + 1]
    assert it == ["Compute"] + ["Irecv"] * 4 + ["Isend"] * 4 + ["Waitall", "Allreduce"]
    # the same compute in total, split boundary / interior with overlap
    c_ov = ov[(ov["rank"] == 4) & (ov.op == "Compute")].dur_ns.sum()
    c_pl = plain[(plain["rank"] == 4) & (plain.op == "Compute")].dur_ns.sum()
    assert abs(c_ov - c_pl) <= 6


def test_jacobi_compute_from_rate_and_norm_every():
    df = frame(generate("jacobi2d", 4, nx=1000, ny=2000, iterations=10, norm_every=3, bytes_per_s=1e12))
    c = df[(df["rank"] == 0) & (df.op == "Compute")].dur_ns
    assert set(c) == {round(500 * 1000 * 16 / 1e12 * 1e9)}
    assert (df[df["rank"] == 0].op == "Allreduce").sum() == math.ceil(10 / 3)
    df = frame(generate("jacobi2d", 4, nx=100, ny=100, iterations=2, compute_ns=777, norm_every=0))
    assert set(df[df.op == "Compute"].dur_ns) == {777} and "Allreduce" not in set(df.op)


def test_jacobi_grid_errors():
    with pytest.raises(ValueError, match="holds 6 ranks, not 8"):
        generate("jacobi2d", 8, proc_grid="3x2")
    with pytest.raises(ValueError, match="cannot be split"):
        generate("jacobi2d", 64, nx=4, ny=4)
    df = frame(generate("jacobi2d", 8, proc_grid="1x8", periodic=True, nx=64, ny=64, iterations=1))
    s = df[df.op == "Isend"]
    assert set(s["bytes"]) == {8 * 64} and (s.groupby("rank").size() == 2).all()   # seed's slabs


# ============================================================================ diffusion2d
def test_diffusion_follows_seed():
    df = frame(generate("diffusion2d", 4, iterations=2))
    # rank 0 (south boundary) only talks north, rank 3 only south, tags as in the seed
    assert ops_of(df, 0)[1:5] == ["Irecv", "Isend", "Waitall", "Compute"]
    assert ops_of(df, 1)[1:7] == ["Irecv", "Isend", "Irecv", "Isend", "Waitall", "Compute"]
    r1 = df[df["rank"] == 1]
    south_recv = r1[(r1.op == "Irecv") & (r1.peer == 0)].iloc[0]
    south_send = r1[(r1.op == "Isend") & (r1.peer == 0)].iloc[0]
    assert (south_recv.tag, south_send.tag) == (1, 2)
    assert set(df[df.op == "Isend"]["bytes"]) == {8 * (128 + 2)}
    g = df[df.op == "Gather"]
    assert len(g) == 4 and set(g["bytes"]) == {8 * 130 * (131072 // 4)}
    assert g[g["rank"] == 0].recv_bytes.iloc[0] == 4 * 8 * 130 * (131072 // 4)


def test_diffusion_calibrated_to_seed_single_node_time():
    df = frame(generate("diffusion2d", 1, iterations=10000, final_gather=False))
    total_s = df[df.op == "Compute"].dur_ns.sum() / 1e9
    assert abs(total_s - 5.579) / 5.579 < 0.01


def test_diffusion_2d_decomposition():
    df = frame(generate("diffusion2d", 6, iterations=1, decomposition="2d", ny=600))
    assert df[df.op == "Isend"].groupby("rank").size().max() == 3


# ============================================================================ matmul
def test_matmul_collectives_follow_seed():
    df = frame(generate("matmul", 4, n=1024, iterations=5))
    assert ops_of(df, 2) == ["Init"] + ["Bcast", "Scatter", "Compute", "Gather"] * 5 + ["Finalize"]
    whole, part = 1024 * 1024 * 8, 1024 * 256 * 8
    b = df[df.op == "Bcast"]
    assert set(b["bytes"]) == {whole} and set(b.root) == {0}
    sc = df[df.op == "Scatter"]
    assert set(sc[sc["rank"] == 0]["bytes"]) == {whole} and set(sc[sc["rank"] != 0]["bytes"]) == {0}
    assert set(sc.recv_bytes) == {part}
    ga = df[df.op == "Gather"]
    assert set(ga["bytes"]) == {part} and set(ga[ga["rank"] == 0].recv_bytes) == {whole}
    c = df[df.op == "Compute"].dur_ns
    assert set(c) == {round(2 * 1024 * 1024 * 256 / 5.3e12 * 1e9)}


def test_matmul_uneven_uses_v_collectives():
    df = frame(generate("matmul", 3, n=1000, iterations=1))
    sv = df[(df.op == "Scatterv") & (df["rank"] == 0)].iloc[0]
    assert list(sv.counts_bytes) == [8 * 1000 * 334, 8 * 1000 * 333, 8 * 1000 * 333]
    gv = df[(df.op == "Gatherv") & (df["rank"] == 0)].iloc[0]
    assert sum(gv.recv_counts_bytes) == 8 * 1000 * 1000
    assert df[(df.op == "Scatterv") & (df["rank"] == 1)].counts_bytes.iloc[0] is None


# ============================================================================ proxies
def _share(sizes, lo, hi):
    sizes = np.asarray(sizes)
    return np.mean((sizes >= lo) & (sizes < hi))


def test_amgx_sizes_neighbours_allreduce():
    t = generate("amgx", 16, iterations=3)
    df = frame(t)
    s = df[df.op == "Isend"]
    sizes = s["bytes"].to_numpy()
    assert abs(_share(sizes, 500_000, 10 * MiB) - 0.08) < 0.02
    assert abs(_share(sizes, 100_000, 500_000) - 0.17) < 0.02
    assert abs(_share(sizes, 1000, 100_000) - 0.71) < 0.02
    assert sizes.min() >= 500 and sizes.max() <= 1 * MiB
    assert (s.groupby("rank").peer.nunique() == 4).all()        # 4x4 periodic: 4 neighbours each
    per_rank = df[df["rank"] == 5].op.value_counts()
    assert per_rank["Allreduce"] == 3 * 4
    assert per_rank["Waitall"] == 3 * 25


def _nominal_exchange_ns(out_bytes, lat=1500.0, bw=12.5e9):
    return lat + out_bytes / bw * 1e9


def test_amgx_compute_share():
    df = frame(generate("amgx", 16, iterations=1))
    r = df[df["rank"] == 0]
    comm = sum(_nominal_exchange_ns(4 * b) for b in r[r.op == "Isend"]["bytes"].to_numpy()[::4])
    comm += 4 * 2 * math.ceil(math.log2(16)) * _nominal_exchange_ns(8)
    compute = r[r.op == "Compute"].dur_ns.sum()
    assert abs(comm / (comm + compute) - 0.05) < 0.002
    df2 = frame(generate("amgx", 16, iterations=1, compute_ns=1_000_000))
    assert abs(df2[(df2["rank"] == 0) & (df2.op == "Compute")].dur_ns.sum() - 1_000_000) < 100


def test_lulesh_26_neighbours_and_sizes():
    df = frame(generate("lulesh", 27, iterations=1))
    centre = df[df["rank"] == 13]
    s = centre[centre.op == "Isend"]
    sbn = s[s.tag == 1024]
    assert sbn.peer.nunique() == 26 and len(sbn) == 26
    assert sorted(sbn["bytes"].value_counts().items()) == [(24, 8), (3480, 12), (504600, 6)]
    sync = s[s.tag == 2048]
    assert len(sync) == 13
    assert sorted(sync["bytes"].value_counts().items()) == [(48, 4), (6960, 6), (1009200, 3)]
    assert all(p < 13 for p in sync.peer)                      # to the 'min' side
    mono = s[s.tag == 3072]
    assert len(mono) == 6 and set(mono["bytes"]) == {497664}
    assert (centre.op == "Allreduce").sum() == 1
    corner = df[(df["rank"] == 0) & (df.op == "Isend") & (df.tag == 1024)]
    assert corner.peer.nunique() == 7
    sizes = df[df.op == "Isend"]["bytes"].to_numpy()
    assert sizes.min() == 24 and sizes.max() == 1009200
    small, mid, big = (_share(sizes, 24, 7 * KiB), _share(sizes, 7 * KiB, 512 * KiB),
                       _share(sizes, 512 * KiB, 2 * MiB))
    assert small > 0.44 and 0.3 < mid < 0.44 and 0.07 < big < 0.12


def test_minisweep_wavefront_sizes():
    df = frame(generate("minisweep", 12, iterations=1))
    s = df[df.op == "Isend"]
    assert set(s["bytes"]) == {4 * MiB, 8 * MiB}
    assert s["bytes"].between(4 * MiB, 8 * MiB).all()
    # octant 0 sweeps +x,+y: rank 0 (corner) starts without receiving
    r0 = ops_of(df, 0)
    assert r0[1:4] == ["Compute", "Isend", "Isend"]
    # an interior rank of the 4x3 grid receives 2 faces and sends 2 per block and octant
    interior = df[(df["rank"] == 4) & (df.op == "Isend")]
    assert len(interior) == 8 * 4 * 2
    # communication-bound at the nominal network: compute is 1/4 of the estimated comm time
    c = df[(df["rank"] == 4) & (df.op == "Compute")].dur_ns.iloc[0]
    step = 2 * _nominal_exchange_ns(12 * MiB)
    assert abs(c / step - 0.25) < 0.01


def test_sw4lite_half_and_half():
    df = frame(generate("sw4lite", 12, iterations=2))
    sr = df[df.op == "Sendrecv"]
    real = sr[sr.peer != PROC_NULL]
    counts = real["bytes"].value_counts().to_dict()
    assert set(counts) == {12_000_000, 65536} and counts[12_000_000] == counts[65536]
    assert (sr.peer == PROC_NULL).any()                          # edges use MPI_PROC_NULL
    r = df[df["rank"] == 0]
    assert set(r.op) == {"Init", "Compute", "Sendrecv", "Finalize"}


def test_proxy_comm_fraction_scales_compute():
    a = frame(generate("sw4lite", 4, iterations=1, comm_fraction=0.4))
    b = frame(generate("sw4lite", 4, iterations=1, comm_fraction=0.2))
    ca = a[a.op == "Compute"].dur_ns.sum()
    cb = b[b.op == "Compute"].dur_ns.sum()
    assert abs(cb / ca - (0.8 / 0.2) / (0.6 / 0.4)) < 1e-3


# ============================================================================ synthetic
def test_synthetic_shapes():
    h = frame(generate("halo2d", 12, iterations=3))
    assert (h.groupby("rank").size() == 2 + 3 * 10).all()
    h3 = frame(generate("halo3d", 12, iterations=3, periodic=False))
    assert (h3.groupby("rank").size() == 2 + 3 * 14).all()
    assert (h3.peer == PROC_NULL).any()
    ar = frame(generate("allreduce", 5, iterations=4, per_iteration=2, msg_bytes=1024))
    a = ar[ar.op == "Allreduce"]
    assert len(a) == 5 * 8 and set(a["bytes"]) == {1024}
    t = generate("alltoall", 10, iterations=1, group_size=4, block_bytes=100)
    df = frame(t)
    aa = df[df.op == "Alltoall"]
    assert [c.members for c in t.comms[1:]] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert aa.set_index("rank")["bytes"].to_dict() == {r: 100 * (2 if r >= 8 else 4) for r in range(10)}
    assert aa.set_index("rank").comm_id.to_dict()[9] == 3


# ============================================================================ files, streaming
def test_small_file_goes_through_trace_write(tmp_path):
    t = gen("lulesh", 8)
    a = t.write(tmp_path / "a.parquet")
    b = generate_to_file("lulesh", 8, tmp_path / "b.parquet", **SMALL["lulesh"])
    ta, tb = pq.read_table(a), pq.read_table(b)
    assert ta.equals(tb) and ta.schema.metadata == tb.schema.metadata


@pytest.mark.parametrize("name", ["jacobi2d", "minisweep", "alltoall", "halo3d"])
def test_streamed_file_equals_trace_write(tmp_path, name):
    """Force streaming (tiny windows and row groups): same rows, order and metadata as
    Trace.write, and every window lies in exactly one row group."""
    t = gen(name, 12)
    a = t.write(tmp_path / "a.parquet", window_ops=4)
    b = generate_to_file(name, 12, tmp_path / "b.parquet", window_ops=4, row_group_rows=40,
                         **SMALL[name])
    ta, tb = pq.read_table(a), pq.read_table(b)
    assert ta.equals(tb)
    assert ta.schema.metadata == tb.schema.metadata
    pf = pq.ParquetFile(b)
    assert pf.num_row_groups > 1
    seen = set()
    for i in range(pf.num_row_groups):
        wins = set((pf.read_row_group(i, columns=["seq"]).column("seq").to_numpy() // 4).tolist())
        assert not wins & seen
        seen |= wins


def test_imbalanced_program_spills_and_still_matches(tmp_path, monkeypatch):
    """Edge ranks of a non-periodic Jacobi run fewer operations; rows ahead of them spill to disk
    and come back in the right windows."""
    from g2gsim.generate import _program
    spills = []
    orig = _program._WindowBuffer._spill
    monkeypatch.setattr(_program._WindowBuffer, "_spill", lambda self: (spills.append(1), orig(self)))
    kw = dict(iterations=12, nx=64, ny=64)
    a = generate("jacobi2d", 16, **kw).write(tmp_path / "a.parquet", window_ops=8)
    b = generate_to_file("jacobi2d", 16, tmp_path / "b.parquet", window_ops=8, row_group_rows=30,
                         spill_rows=60, **kw)
    assert spills
    assert pq.read_table(a).equals(pq.read_table(b))
    assert not any(p.name.endswith(".spill") for p in tmp_path.iterdir())


def test_large_vectorised_halo_streams_quickly(tmp_path):
    n = 65536
    t0 = time.perf_counter()
    path = generate_to_file("halo2d", n, tmp_path / "h.g2g.parquet", iterations=2)
    elapsed = time.perf_counter() - t0
    assert elapsed < 60, elapsed
    pf = pq.ParquetFile(path)
    assert pf.metadata.num_rows == n * (2 + 2 * 10)
    md = pf.schema_arrow.metadata
    w = int(md[b"g2gsim.window_ops"])
    assert int(md[b"g2gsim.nranks"]) == n and md[b"g2gsim.source"].startswith(b"g2gsim generate halo2d")
    tab = pq.read_table(path, columns=["rank", "seq", "op", "peer", "bytes"])
    rank = tab.column("rank").to_numpy().astype(np.int64)
    seq = tab.column("seq").to_numpy().astype(np.int64)
    key = (seq // w) * n * w + rank * w + seq % w
    assert np.all(np.diff(key) > 0)                              # (window, rank, seq) order
    assert np.array_equal(np.bincount(rank, minlength=n), np.full(n, 22))
    ops = tab.column("op").to_numpy(zero_copy_only=False)
    assert (ops == "Isend").sum() == n * 2 * 4 and (ops == "Waitall").sum() == n * 2
    b = tab.column("bytes").to_numpy()
    assert set(np.unique(b[ops == "Isend"])) == {65536}


def test_workloads_reference_is_current():
    from g2gsim.generate import _docs
    assert _docs.PATH.read_text() == _docs.render(), "regenerate: python3 -m g2gsim.generate._docs"


def test_default_windows_and_row_groups_are_small(tmp_path):
    """Windows and row groups of about 16k rows (the core replays a row group at a time: small
    ones keep its queues in cache and its memory bounded), from Trace.write and the streamed
    writer alike; each row group holds whole windows."""
    from g2gsim.trace import ROW_GROUP_ROWS, WINDOW_ROWS, auto_window_ops
    assert auto_window_ops(4) == 4096 and auto_window_ops(1024) == 16 and auto_window_ops(1 << 20) == 1
    assert all(n * auto_window_ops(n) <= max(WINDOW_ROWS, n) for n in (1, 3, 100, 1024, 5000, 1 << 16))
    kw = dict(iterations=20, msg_bytes=4096, compute_ns=1000)
    paths = [generate("halo3d", 1024, **kw).write(tmp_path / "a.parquet"),
             generate_to_file("halo3d", 1024, tmp_path / "b.parquet", **kw)]
    for p in paths:
        pf = pq.ParquetFile(p)
        assert int(pf.schema_arrow.metadata[b"g2gsim.window_ops"]) == 16
        sizes = [pf.metadata.row_group(i).num_rows for i in range(pf.num_row_groups)]
        assert pf.num_row_groups > 10 and all(ROW_GROUP_ROWS <= s < 2 * ROW_GROUP_ROWS for s in sizes[:-1]), sizes
        seen = set()
        for i in range(pf.num_row_groups):
            wins = set((pf.read_row_group(i, columns=["seq"]).column("seq").to_numpy() // 16).tolist())
            assert not wins & seen
            seen |= wins
    assert pq.read_table(paths[0]).equals(pq.read_table(paths[1]))

"""Sweeps on Dask (g2gsim.analysis.sweep): 200+ points on a LocalCluster, interruption and resumption,
the Parquet output and the plots drawn from it."""
from __future__ import annotations

import json
import textwrap

import pandas as pd
import pytest

pytest.importorskip("dask.distributed")

from g2gsim.analysis import sweep as sw  # noqa: E402
from g2gsim.analysis.sweep_plot import speedup_table, sweep_plot  # noqa: E402

SWEEP = """
[sweep]
name = "test"
machines = ["lassen"]
modes = ["hostcopy", "gpudirect"]
gpus_per_node = [1, 2, 4]

[[sweep.generate]]
workload = "halo3d"
ranks = [8, 16]
iterations = 1
msg_bytes = 131072

[[sweep.generate]]
workload = "allreduce"
ranks = 8
iterations = 2

[sweep.parameters]
network_scale = [0.5, 1.0, 2.0]
gpudirect_min_bytes = [0, 65536]
mapping = ["linear", "round-robin"]
"""
# 3 traces x 2 modes x 3 GPUs/node x 3 x 2 x 2 = 216 points


@pytest.fixture(scope="module")
def client():
    from dask.distributed import Client, LocalCluster
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None, silence_logs=40)
    c = Client(cluster)
    yield c
    c.close()
    cluster.close()


@pytest.fixture()
def sweep_file(tmp_path):
    p = tmp_path / "sweep.toml"
    p.write_text(SWEEP)
    return p


def test_sweep_runs_on_dask_and_resumes(sweep_file, tmp_path, client):
    out = tmp_path / "results.parquet"
    spec = sw.load_sweep(sweep_file)
    n0 = sw.POINTS_RUN
    # first run: stopped after 50 points, as if killed
    r1 = sw.run_sweep(spec, out, client=client, progress=False, stop_after=50)
    assert r1.interrupted and r1.computed == 50 and r1.total == 216
    df1 = pd.read_parquet(out)
    assert len(df1) == 50 and df1["key"].is_unique and df1["error"].isna().all()
    first_keys = set(df1["key"])
    assert len(list((tmp_path / "results.parquet.points").glob("*.json"))) - 1 == 50  # + _hashes.json
    # rerun: only the 166 missing points are simulated
    n1 = sw.POINTS_RUN
    r2 = sw.run_sweep(spec, out, client=client, progress=False)
    assert not r2.interrupted and r2.skipped == 50 and r2.computed == 166
    assert sw.POINTS_RUN - n1 == 166
    df = pd.read_parquet(out)
    assert len(df) == 216 and df["key"].is_unique and df["error"].isna().all()
    expected = {p["key"] for p in sw.expand_points(spec, tmp_path / "results.parquet.points")}
    assert set(df["key"]) == expected
    old = df[df["key"].isin(first_keys)]
    assert (old["run_id"] == r1.run_id).all()
    assert (df[~df["key"].isin(first_keys)]["run_id"] == r2.run_id).all()
    pd.testing.assert_series_equal(old.set_index("key")["computed_at"].sort_index(),
                                   df1.set_index("key")["computed_at"].sort_index())
    # a third run has nothing to do, also when only the Parquet file is left
    for f in (tmp_path / "results.parquet.points").glob("[!_]*.json"):
        f.unlink()
    n2 = sw.POINTS_RUN
    r3 = sw.run_sweep(spec, out, client=client, progress=False)
    assert r3.computed == 0 and r3.skipped == 216 and sw.POINTS_RUN == n2
    assert len(pd.read_parquet(out)) == 216
    assert sw.POINTS_RUN - n0 >= 216

    # the results look right: parameters are columns, GPUDirect beats HostCopy on 128 KiB halos
    assert {"network_scale", "gpudirect_min_bytes", "mapping", "comm_s", "compute_s", "p2p_messages",
            "collective_messages", "total_time_s", "comm_time_s", "copy_time_s"} <= set(df.columns)
    assert set(df["gpus_per_node"]) == {1, 2, 4}
    sp = speedup_table(df)
    halo = sp[(sp["workload"] == "halo3d") & (sp["gpudirect_min_bytes"] == 0) & (sp["network_scale"] == 1.0)]
    assert len(halo) == 12 and (halo["speedup"] > 1).all()
    slow = df[(df["network_scale"] == 0.5) & (df["gpus_per_node"] == 1)].set_index(["key"])
    assert len(slow)
    files = sweep_plot(out, tmp_path / "plots")
    names = {f.name for f in files}
    assert {"speedup-halo3d.png", "speedup-allreduce.png", "comm-compute.png", "index.html"} <= names
    assert any(n.startswith("gpn-halo3d-16") for n in names)
    html = (tmp_path / "plots" / "index.html").read_text()
    assert html.count("data:image/png;base64,") == len(files) - 1


def test_point_key_depends_on_contents(sweep_file, tmp_path):
    spec = sw.load_sweep(sweep_file)
    pts = sw.expand_points(spec, tmp_path / "w")
    assert len(pts) == 216 and len({p["key"] for p in pts}) == 216
    again = sw.expand_points(spec, tmp_path / "w")
    assert [p["key"] for p in again] == [p["key"] for p in pts]
    # another machine file content gives other keys
    mfile = tmp_path / "m.toml"
    from g2gsim import machines
    text = machines.resolve("lassen")[0]
    mfile.write_text(text)
    spec.machines = [str(mfile)]
    same_text = {p["key"] for p in sw.expand_points(spec, tmp_path / "w")}
    assert same_text == {p["key"] for p in pts}  # same contents, other path: same points
    mfile.write_text(text.replace('bw = "12.5GB/s"      # EDR 100 Gb/s', 'bw = "25GB/s"'))
    assert not ({p["key"] for p in sw.expand_points(spec, tmp_path / "w")} & same_text)


def test_sweep_file_errors(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[sweep]\nmachines = ['lassen']\nfrobnicate = 1\n")
    with pytest.raises(sw.SweepError, match="frobnicate"):
        sw.load_sweep(bad)
    bad.write_text("[sweep]\nmodes = ['fast']\ngenerate = {workload='halo3d', ranks=8}\n")
    with pytest.raises(sw.SweepError, match="modes"):
        sw.load_sweep(bad)
    bad.write_text("[sweep]\ngenerate = {workload='halo3d', ranks=8}\n[sweep.parameters]\nwarp = [1]\n")
    with pytest.raises(sw.SweepError, match="warp"):
        sw.load_sweep(bad)
    bad.write_text("[sweep]\nmachines = ['lassen']\n")
    with pytest.raises(sw.SweepError, match="no traces"):
        sw.load_sweep(bad)


def test_failed_points_are_rows(tmp_path, client):
    p = tmp_path / "s.toml"
    p.write_text(textwrap.dedent("""
        generate = {workload = "halo3d", ranks = 8, iterations = 1}
        modes = ["gpudirect"]
        gpus_per_node = [2]
        [parameters]
        network_scale = [1.0, -1.0]
    """))
    out = tmp_path / "r.parquet"
    r = sw.run_sweep(p, out, client=client, progress=False)
    assert r.total == 2 and r.failed == 1
    df = pd.read_parquet(out)
    bad = df[df["network_scale"] < 0]
    assert len(bad) == 1 and "scale" in bad["error"].iloc[0]
    r = sw.run_sweep(p, out, client=client, progress=False)
    assert r.computed == 0
    r = sw.run_sweep(p, out, client=client, progress=False, retry_errors=True)
    assert r.computed == 1
    rec = json.loads(next((tmp_path / "r.parquet.points").glob("[!_]*.json")).read_text())
    assert "key" in rec

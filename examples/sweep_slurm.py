"""Run a g2gsim sweep on a SLURM cluster with dask-jobqueue (pip install dask-jobqueue).

    python examples/sweep_slurm.py examples/sweep_paper.toml /shared/results/paper.parquet --jobs 4

Each SLURM job is one node of single-threaded Dask workers; every sweep point is one task. Finished
points are stored next to the output (OUTPUT.points/), so running the script again after a job was
killed (or the allocation ended) resumes where it stopped. The output and the traces must be on a file
system the compute nodes see. Adjust queue, account, prologue and sizes to your site.
"""
from __future__ import annotations

import argparse

from dask.distributed import Client
from dask_jobqueue import SLURMCluster

from g2gsim.analysis.sweep import run_sweep


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sweep", help="sweep TOML file")
    ap.add_argument("output", help="results Parquet file (on a shared file system)")
    ap.add_argument("--jobs", type=int, default=4, help="SLURM jobs (nodes) to start")
    ap.add_argument("--cores", type=int, default=32, help="workers per job (one core each)")
    ap.add_argument("--queue", default="pbatch")
    ap.add_argument("--account", default=None)
    ap.add_argument("--walltime", default="02:00:00")
    ap.add_argument("--memory", default="120GB")
    ap.add_argument("--venv", default=None, help="virtual environment with g2gsim, activated in each job")
    a = ap.parse_args()

    prologue = [f"source {a.venv}/bin/activate"] if a.venv else []
    cluster = SLURMCluster(queue=a.queue, account=a.account, cores=a.cores, processes=a.cores, memory=a.memory,
                           walltime=a.walltime, job_extra_directives=["--nodes=1", "--exclusive"],
                           job_script_prologue=prologue, log_directory="dask-logs")
    cluster.scale(jobs=a.jobs)           # or: cluster.adapt(minimum_jobs=1, maximum_jobs=a.jobs)
    print(cluster.job_script())
    with Client(cluster) as client:
        client.wait_for_workers(1, timeout=3600)
        r = run_sweep(a.sweep, a.output, client=client, progress=True)
    print(f"{r.total} points: {r.computed} simulated, {r.skipped} already done, {r.failed} failed -> {r.output}")
    cluster.close()


if __name__ == "__main__":
    main()

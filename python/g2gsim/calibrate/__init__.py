"""Calibration and validation of machine files (issue 6; docs/calibration.md).

* ``measure.py`` — self-contained measurement script (numpy, mpi4py, cupy) run under mpirun on the
  cluster; writes the raw JSON (``python3 -m g2gsim.calibrate.measure`` or the copied file).
* ``workloads.py`` — self-contained validation workloads (ping-pong, seed-004 Jacobi with and without
  overlap, seed-000 matmul) that record their own timeline, in HostCopy and device-buffer modes.
* ``fit.fit(raw, base=...)`` / ``fit.write_machine(res, path)`` — the fitted machine file;
  ``verify.verify(raw, machine)`` / ``verify.summarize(rows)`` — every measured point simulated.
* ``validate.compare(load_runs(paths), machine)`` — predicted vs measured, own and other mode.
* ``cli.register(group)`` — the ``g2gsim calibrate`` and ``g2gsim validate`` commands.
* ``run_node.sh`` — everything on one GPU node in one job (as done for docs/validation/h200x4.md).
"""

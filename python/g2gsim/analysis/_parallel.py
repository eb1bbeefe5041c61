"""Independent simulations side by side (``compare``'s columns, size-class and sensitivity runs,
``whatif``'s configurations, ``map``'s mappings).

The core releases the GIL while it simulates, so threads run simulations in parallel; each one is
the same deterministic run as alone, and the results come back in the order of the inputs, so
the answer does not depend on the number of jobs.  An interrupt (Ctrl-C) stops the running ones at
their next progress call (every 65,536 events) and is raised; so does a failure, which is raised
(of several, the first in input order among those that ran to their failure).
"""
from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")

MAX_DEFAULT_JOBS = 8
# what one simulation may hold at most, for the default number of jobs: measured peaks of the core
# were 16 KiB a rank (a 16,384-rank halo, 254 MiB) and less at larger scale; twice that, and the
# report's Python objects, with room for a fixed part
SIM_BYTES_PER_RANK = 32 << 10
SIM_BYTES_FIXED = 64 << 20


def _mem_available() -> int | None:
    """Bytes of memory available now (Linux's MemAvailable), or None where not known."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def default_jobs(nranks: int | None = None) -> int:
    """The processors this process may use, at most ``MAX_DEFAULT_JOBS``, and no more simulations
    of ``nranks`` ranks than the available memory holds (each counted at ``SIM_BYTES_FIXED +
    nranks * SIM_BYTES_PER_RANK``)."""
    try:
        n = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        n = os.cpu_count() or 1
    n = min(n, MAX_DEFAULT_JOBS)
    avail = _mem_available() if nranks else None
    if avail is not None and nranks:
        n = min(n, avail // (SIM_BYTES_FIXED + nranks * SIM_BYTES_PER_RANK))
    return max(1, n)


def check_jobs(jobs: int | None, nranks: int | None = None) -> int:
    """``jobs`` as given (a positive number), or the default when None (``default_jobs``)."""
    if jobs is None:
        return default_jobs(nranks)
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs must be a whole number of at least 1, not {jobs!r}")
    return jobs


class Cancelled(Exception):
    """A simulation stopped because another one failed or the run was interrupted."""


def pmap(fn: Callable[[T, Callable[[int, int], None]], R], items: Iterable[T], jobs: int,
         progress: Callable[[str], None] | None = None, label: Callable[[T], str] = str) -> list[R]:
    """``[fn(item, stop) for item in items]``, up to ``jobs`` at a time.  ``fn`` passes ``stop`` to
    ``simulate`` as its ``progress`` (it raises ``Cancelled`` once the others are to stop)."""
    items = list(items)
    cancel = threading.Event()

    def stop(done: int, total: int) -> None:
        if cancel.is_set():
            raise Cancelled("stopped")

    if jobs <= 1 or len(items) <= 1:
        out = []
        for it in items:
            if progress:
                progress(label(it))
            out.append(fn(it, stop))
        return out
    k = min(jobs, len(items))
    if progress:
        progress(f"{len(items)} simulations, {k} at a time")
    ex = ThreadPoolExecutor(max_workers=k, thread_name_prefix="g2gsim-sim")
    try:
        futs = [ex.submit(fn, it, stop) for it in items]
        for n, f in enumerate(as_completed(futs), 1):
            if f.cancelled():
                continue
            if f.exception() is not None:
                # the runs not started are dropped, the running ones stop at their next progress call
                cancel.set()
                for g in futs:
                    g.cancel()
            elif progress:
                progress(f"{n} of {len(items)} simulations done, {k} at a time")
    except BaseException:
        cancel.set()
        raise
    finally:
        ex.shutdown(wait=True, cancel_futures=True)
    # the first failure in input order; runs stopped for it (Cancelled) are not failures
    errors = [e for f in futs if not f.cancelled() and (e := f.exception()) is not None]
    if errors:
        raise next((e for e in errors if not isinstance(e, Cancelled)), errors[0])
    return [f.result() for f in futs]


def run_all(calls: list[tuple[str, Callable[[Callable[[int, int], None]], Any]]], jobs: int,
            progress: Callable[[str], None] | None = None) -> list[Any]:
    """Runs ``(label, fn(stop))`` pairs as ``pmap`` does; the results in order."""
    return pmap(lambda c, stop: c[1](stop), calls, jobs, progress, label=lambda c: c[0])

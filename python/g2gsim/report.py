"""The result of one simulation: :class:`Report`.

``g2gsim.simulate(...)`` returns a Report.  It is a ``dict`` (the JSON the core writes, documented in
docs/report-schema.md and docs/report.schema.json), so ``report["total_time_s"]`` and
``json.dump(report, f)`` work as they always did, plus typed attributes for the headline numbers and
pandas views of its tables::

    r = g2gsim.simulate("run.g2g.parquet", "lassen", mode="gpudirect", per_rank=True)
    r.total_time_s                 # float, seconds
    r.per_op_df()                  # one row per MPI operation name
    r.by_size_df()                 # point-to-point messages per size class
    r.per_rank_df()                # one row per rank (needs per_rank=True)
    r.to_csv("out/")               # those tables as CSV files
"""
from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any


class Report(dict):
    """A simulation report: the core's JSON report as a ``dict`` with typed accessors.

    Every key of docs/report-schema.md is an item (``r["per_op"]``); the scalar headline values are
    also attributes (``r.total_time_s``).  ``to_dict()`` gives a plain, independent ``dict``."""

    # ---------------------------------------------------------------- headline values (typed)
    @property
    def trace(self) -> str:
        """Path of the simulated (native) trace."""
        return str(self["trace"])

    @property
    def machine(self) -> str:
        """Name of the machine (the ``name`` of its machine file)."""
        return str(self["machine"])

    @property
    def mode(self) -> str:
        """``as-traced``, ``hostcopy`` or ``gpudirect``."""
        return str(self["mode"])

    @property
    def nranks(self) -> int:
        """Number of MPI ranks."""
        return int(self["nranks"])

    @property
    def nodes(self) -> int:
        """Number of nodes the ranks were placed on."""
        return int(self["nodes"])

    @property
    def gpus_per_node(self) -> int:
        """GPUs (ranks) per node of this run."""
        return int(self["gpus_per_node"])

    @property
    def total_time_s(self) -> float:
        """Simulated run time: the end of the last rank, in seconds."""
        return float(self["total_time_s"])

    @property
    def comm_time_s(self) -> float:
        """Mean time per rank in MPI calls (communication, including staging copies), seconds."""
        return float(self["comm_time_s"])

    @property
    def compute_time_s(self) -> float:
        """Mean time per rank in traced computation, seconds."""
        return float(self["compute_time_s"])

    @property
    def copy_time_s(self) -> float:
        """Mean time per rank in copies outside MPI calls (traced memcpys), seconds."""
        return float(self["copy_time_s"])

    # ---------------------------------------------------------------- conversions
    def to_dict(self) -> dict[str, Any]:
        """A plain ``dict`` (deep copy) of the report, as written by ``--json``."""
        return copy.deepcopy(dict(self))

    def to_json(self, indent: int | None = 2) -> str:
        """The report as JSON text (the ``--json`` file)."""
        return json.dumps(self, indent=indent)

    def per_op_df(self):
        """pandas DataFrame, one row per MPI operation name (index ``op``): ``count``, ``total_s``,
        ``min_s``, ``max_s``, ``bytes`` (summed over all ranks)."""
        import pandas as pd
        rows = [{"op": op, **v} for op, v in self.get("per_op", {}).items()]
        return pd.DataFrame(rows, columns=_cols(rows, "op")).set_index("op")

    def by_size_df(self):
        """pandas DataFrame, point-to-point messages per size class (index ``size_class``):
        ``messages``, ``bytes``."""
        import pandas as pd
        rows = [{"size_class": k, **v} for k, v in self.get("p2p_size_classes", {}).items()]
        return pd.DataFrame(rows, columns=_cols(rows, "size_class")).set_index("size_class")

    def paths_df(self):
        """pandas DataFrame, messages per data path (index ``path``, e.g. ``gpudirect-rdma``,
        ``hostcopy-network``): ``messages``, ``bytes``."""
        import pandas as pd
        rows = [{"path": k, **v} for k, v in self.get("paths", {}).items()]
        return pd.DataFrame(rows, columns=_cols(rows, "path")).set_index("path")

    def per_rank_df(self):
        """pandas DataFrame, one row per rank (index ``rank``): ``node``, ``gpu``, ``end_s``,
        ``comm_s``, ``compute_s``, ``copy_s``.  Needs a report made with ``per_rank=True`` (the default)."""
        import pandas as pd
        rows = self.get("per_rank")
        if not rows:
            raise ValueError("this report has no per-rank table: simulate with per_rank=True")
        return pd.DataFrame(rows, columns=_cols(rows, "rank")).set_index("rank")

    def summary_df(self):
        """pandas DataFrame with one row: the scalar values of the report."""
        import pandas as pd
        return pd.DataFrame([{k: v for k, v in self.items() if not isinstance(v, (dict, list))}])

    def to_csv(self, directory: str | Path) -> list[Path]:
        """Writes summary.csv, per_op.csv, by_size.csv, paths.csv and (when present) per_rank.csv into
        ``directory`` (created); returns the files."""
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        tables = {"summary": (self.summary_df(), False), "per_op": (self.per_op_df(), True),
                  "by_size": (self.by_size_df(), True), "paths": (self.paths_df(), True)}
        if self.get("per_rank"):
            tables["per_rank"] = (self.per_rank_df(), True)
        out = []
        for name, (df, index) in tables.items():
            p = d / f"{name}.csv"
            df.to_csv(p, index=index)
            out.append(p)
        return out


def _cols(rows: list[dict], first: str) -> list[str]:
    cols = [first]
    for r in rows:
        for k in r:
            if k not in cols:
                cols.append(k)
    return cols

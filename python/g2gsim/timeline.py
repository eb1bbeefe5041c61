"""Reading and checking the Perfetto timelines ``simulate --timeline`` writes (Chrome trace-event
JSON, optionally gzip-compressed).

Perfetto draws the complete slices ("ph": "X") of one track -- one (pid, tid) -- only when they
nest: any two are disjoint (touching allowed) or one contains the other.  ``check_nesting`` lists
every violation, so a test can assert there is none.
"""
from __future__ import annotations

import gzip
import json
from collections import defaultdict
from pathlib import Path

__all__ = ["load_events", "check_nesting"]


def load_events(path: str | Path) -> list[dict]:
    """The trace events of a timeline file (``.json`` or ``.json.gz``)."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        doc = json.load(f)
    return doc["traceEvents"] if isinstance(doc, dict) else doc


def check_nesting(events: list[dict], limit: int = 20) -> list[str]:
    """Violations of the nesting rule, per track (at most ``limit`` messages)."""
    tracks: dict[tuple, list[tuple[int, int, str]]] = defaultdict(list)
    for e in events:
        if e.get("ph") != "X":
            continue
        # integer ns: the file writes microseconds with 3 decimals
        ts = round(float(e["ts"]) * 1000)
        dur = round(float(e.get("dur", 0)) * 1000)
        if dur < 0:
            return [f"track {e.get('pid')}/{e.get('tid')}: slice {e.get('name')} has negative duration"]
        tracks[(e.get("pid"), e.get("tid"))].append((ts, ts + dur, str(e.get("name"))))
    bad: list[str] = []
    for key, sl in tracks.items():
        sl.sort(key=lambda x: (x[0], -(x[1] - x[0])))
        stack: list[tuple[int, int, str]] = []
        for s in sl:
            while stack and stack[-1][1] <= s[0]:
                stack.pop()
            if stack and s[1] > stack[-1][1]:
                bad.append(f"track pid {key[0]} tid {key[1]}: {s[2]} [{s[0]}, {s[1]}) ns partially "
                           f"overlaps {stack[-1][2]} [{stack[-1][0]}, {stack[-1][1]}) ns")
                if len(bad) >= limit:
                    return bad
                continue
            stack.append(s)
    return bad

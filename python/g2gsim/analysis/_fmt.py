"""Number formatting of the analysis tables (no numpy: the CLI loads this at start-up)."""
from __future__ import annotations

import math

KiB, MiB = 1 << 10, 1 << 20


def fmt_s(s: float | None) -> str:
    if s is None or (isinstance(s, float) and not math.isfinite(s)):
        return "-"
    if s == 0:
        return "0"
    a = abs(s)
    if a < 1e-3:
        return f"{s * 1e6:.2f} us"
    if a < 1:
        return f"{s * 1e3:.3f} ms"
    return f"{s:.4f} s"


def fmt_x(x: float | None) -> str:
    if x is None or not math.isfinite(x):
        return "-"
    return f"{x:.2f}x"


def fmt_pct(x: float | None, signed: bool = False) -> str:
    if x is None or not math.isfinite(x):
        return "-"
    return f"{x:+.1%}" if signed else f"{x:.1%}"


def fmt_bytes(b: float) -> str:
    b = float(b)
    for unit, k in (("GiB", 1 << 30), ("MiB", MiB), ("KiB", KiB)):
        if b >= k:
            return f"{b / k:.1f} {unit}"
    return f"{int(b)} B"

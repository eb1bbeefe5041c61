"""Process grids: MPI_Dims_create-like factorisation, block splits, Cartesian neighbours."""
from __future__ import annotations

import itertools
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

NONE = -1  # no neighbour (non-periodic boundary); PROC_NULL (-2) is chosen by callers


def _divisors(n: int) -> list[int]:
    small, large = [], []
    d = 1
    while d * d <= n:
        if n % d == 0:
            small.append(d)
            if d * d != n:
                large.append(n // d)
        d += 1
    return small + large[::-1]


@lru_cache(maxsize=256)
def dims_create(n: int, ndims: int) -> tuple[int, ...]:
    """The most balanced factorisation of ``n`` into ``ndims`` factors, largest first (what
    MPI_Dims_create aims for): minimises the largest factor, then the spread.  Any ``n`` works;
    a prime ``n`` gives ``(n, 1, ...)``."""
    if n < 1 or ndims < 1:
        raise ValueError(f"cannot decompose {n} ranks into {ndims} dimensions")
    if ndims == 1:
        return (n,)
    best: tuple[tuple[int, int], tuple[int, ...]] | None = None
    divs = _divisors(n)
    for combo in itertools.combinations_with_replacement(divs, ndims - 1):
        p = 1
        for c in combo:
            p *= c
        if n % p:
            continue
        dims = tuple(sorted(combo + (n // p,), reverse=True))
        score = (dims[0], dims[0] - dims[-1])
        if best is None or score < best[0]:
            best = (score, dims)
    assert best is not None                 # n itself is a divisor: one combination fits
    return best[1]


def parse_grid(spec: str, n: int, ndims: int, what: str) -> tuple[int, ...]:
    """``"auto"`` -> dims_create; ``"AxB[xC]"`` (x first) -> that grid, which must hold n ranks.
    Returns dims in C order (slowest first), i.e. the reverse of the spec."""
    spec = str(spec).strip().lower()
    if spec in ("", "auto"):
        return dims_create(n, ndims)
    try:
        parts = tuple(int(p) for p in spec.split("x"))
    except ValueError:
        raise ValueError(f"{what}: process grid {spec!r} is not 'auto' or like '4x2'") from None
    if len(parts) != ndims or any(p < 1 for p in parts):
        raise ValueError(f"{what}: process grid {spec!r} must have {ndims} positive extents")
    prod = int(np.prod(parts))
    if prod != n:
        raise ValueError(f"{what}: process grid {spec} holds {prod} ranks, not {n}")
    return parts[::-1]


def split(total: int, parts: int) -> np.ndarray:
    """Block sizes of ``total`` points over ``parts`` ranks (the first ``total % parts`` get one more)."""
    base, extra = divmod(int(total), int(parts))
    sizes = np.full(parts, base, dtype=np.int64)
    sizes[:extra] += 1
    return sizes


class Cart:
    """A Cartesian process grid in C order (last dimension fastest, like MPI_Cart_create)."""

    def __init__(self, dims: tuple[int, ...], periodic: bool | tuple[bool, ...] = False):
        self.dims = tuple(int(d) for d in dims)
        self.ndims = len(self.dims)
        self.periodic = (tuple(periodic) if isinstance(periodic, (tuple, list))
                         else (bool(periodic),) * self.ndims)
        self.size = int(np.prod(self.dims))
        self.coords = np.unravel_index(np.arange(self.size, dtype=np.int64), self.dims)

    def shift(self, offset: tuple[int, ...], missing: int = NONE) -> np.ndarray:
        """World rank of the neighbour at ``offset`` for every rank; ``missing`` where there is
        none (off a non-periodic edge, or a periodic dimension of extent 1: no self messages)."""
        ok = np.ones(self.size, bool)
        nc = []
        for d, off in enumerate(offset):
            c = self.coords[d] + off
            if off:
                if self.periodic[d]:
                    if self.dims[d] == 1:
                        ok[:] = False
                    c = c % self.dims[d]
                else:
                    ok &= (c >= 0) & (c < self.dims[d])
                    c = np.clip(c, 0, self.dims[d] - 1)
            nc.append(c)
        peer = np.ravel_multi_index(tuple(nc), self.dims).astype(np.int64)
        peer[~ok] = missing
        return peer


def face_offsets(ndims: int) -> list[tuple[int, ...]]:
    """(-1 in dim 0), (+1 in dim 0), (-1 in dim 1), ... : 2*ndims face directions."""
    out = []
    for d in range(ndims):
        for s in (-1, 1):
            o = [0] * ndims
            o[d] = s
            out.append(tuple(o))
    return out


def all_offsets(ndims: int) -> list[tuple[int, ...]]:
    """All 3**ndims - 1 neighbour offsets (faces, edges, corners), lexicographic order."""
    return [o for o in itertools.product((-1, 0, 1), repeat=ndims) if any(o)]


def opposite_index(offsets: list[tuple[int, ...]]) -> np.ndarray:
    pos = {o: i for i, o in enumerate(offsets)}
    return np.array([pos[tuple(-x for x in o)] for o in offsets], dtype=np.int64)


def neighbour_table(cart: Cart, offsets: Sequence[tuple[int, ...]], missing: int = NONE) -> np.ndarray:
    """``peers[rank, k]``: neighbour of every rank at ``offsets[k]``."""
    return np.stack([cart.shift(o, missing) for o in offsets], axis=1)


def recv_sizes(peers: np.ndarray, send_bytes: np.ndarray, offsets) -> np.ndarray:
    """What each rank receives from its neighbour in slot k: that neighbour's send in the opposite
    slot (so uneven block sizes always match)."""
    opp = opposite_index(offsets)
    rb = np.zeros_like(send_bytes)
    for k in range(peers.shape[1]):
        p = peers[:, k]
        ok = p >= 0
        rb[ok, k] = send_bytes[p[ok], opp[k]]
    return rb

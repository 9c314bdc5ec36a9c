"""Budget search over [C, 2C-1] (paper Eq. 11 and Appendix A.2)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class SearchResult:
    budget: int  # B*
    count: int  # n(B*)
    flat_count: int  # N = T_flat(x, C)
    evaluated: dict[int, int] = field(default_factory=dict)  # B -> n(B), cached


def kappa(budget: int, n: int, flat_count: int) -> tuple[int, int, int]:
    """kappa(B) = (|n(B) - N|, [n(B) < N], B) of Eq. A.2."""
    return abs(n - flat_count), int(n < flat_count), budget


def search(count: Callable[[int], int], base_budget: int, flat_count: int,
           top: int | None = None) -> SearchResult:
    """B*(x, C) per A.2: keep C if n(C) <= N; else binary-search the transition to
    n(B) <= max(N, n(2C-1)) and compare it with its predecessor by kappa.

    ``top`` replaces 2C-1 as the range's top (the splitters' ``chunk_size``, a hard
    maximum; docs/library.md); the benchmark keeps [C, 2C-1].

    The predecessor comparison is taken to the first budget holding the predecessor's
    count, so that for a non-increasing n(B) the result is exactly the kappa-argmin
    over every B in [C, 2C-1] (equal counts prefer the smaller budget, Eq. A.2).
    """
    cache: dict[int, int] = {}

    def n(b: int) -> int:
        if b not in cache:
            cache[b] = count(b)
        return cache[b]

    c, big = base_budget, 2 * base_budget - 1 if top is None else max(top, base_budget)
    if n(c) <= flat_count or big == c:
        return SearchResult(c, n(c), flat_count, cache)
    target = max(flat_count, n(big))
    # n(big) <= target holds; n(c) may equal it (all counts above N)
    chosen = _first_at_most(n, c, big, target)
    if n(big) <= flat_count:
        prev = chosen - 1
        if kappa(prev, n(prev), flat_count) < kappa(chosen, n(chosen), flat_count):
            # first budget with the predecessor's count (n non-increasing)
            chosen = _first_at_most(n, c, prev, n(prev))
    return SearchResult(chosen, n(chosen), flat_count, cache)


def _first_at_most(n: Callable[[int], int], lo: int, hi: int, value: int) -> int:
    """Smallest B in [lo, hi] with n(B) <= value, by bisection; n(hi) <= value."""
    while lo < hi:
        mid = (lo + hi) // 2
        if n(mid) <= value:
            hi = mid
        else:
            lo = mid + 1
    return lo

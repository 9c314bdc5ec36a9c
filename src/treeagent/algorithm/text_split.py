"""A plain recursive text split by exact token counts (no structure).

Used where the structure cannot be: a document that does not parse when the caller
asked for ``on_error="fallback"``, and a section that no structural cut brings under a
splitter's ``chunk_size`` (an atomic value). Like LangChain's recursive splitter it
tries paragraph, line, sentence and word boundaries in turn and cuts between
characters only where no boundary fits; unlike it, every piece is counted exactly with
the tokenizer and offsets into the text are kept.
"""

from __future__ import annotations

import re
from collections.abc import Callable

#: boundaries tried in turn: blank line, line break, sentence end, whitespace run
SEPARATORS = (re.compile(r"\n[ \t]*\n\s*"), re.compile(r"\n"), re.compile(r"[.!?;:]\s+"),
              re.compile(r"\s+"))


def recursive_spans(text: str, max_tokens: int, count: Callable[[str], int],
                    start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """Consecutive ``(start, end)`` spans covering ``text[start:end]``, each of at most
    ``max_tokens`` tokens by ``count`` (a single character over it stays alone).

    Greedy: each span is the longest run of whole pieces at the coarsest boundary that
    fits, found by bisection over the boundaries (O(log n) counts a span).
    """
    end = len(text) if end is None else end
    if max_tokens < 1:
        raise ValueError("max_tokens must be a positive number of tokens")
    out: list[tuple[int, int]] = []
    _split(text, start, end, max_tokens, count, 0, out)
    return out


def _split(text: str, a: int, b: int, limit: int, count: Callable[[str], int], level: int,
           out: list[tuple[int, int]]) -> None:
    if a >= b:
        return
    if count(text[a:b]) <= limit:
        out.append((a, b))
        return
    if level == len(SEPARATORS):
        _split_chars(text, a, b, limit, count, out)
        return
    cuts = [m.end() for m in SEPARATORS[level].finditer(text, a, b) if a < m.end() < b]
    if not cuts:
        _split(text, a, b, limit, count, level + 1, out)
        return
    bounds = [a, *cuts, b]
    i = 0
    while i < len(bounds) - 1:
        # the furthest boundary j > i with text[bounds[i]:bounds[j]] within the limit
        lo, hi, best = i + 1, len(bounds) - 1, i
        while lo <= hi:
            mid = (lo + hi) // 2
            if count(text[bounds[i]:bounds[mid]]) <= limit:
                best, lo = mid, mid + 1
            else:
                hi = mid - 1
        if best == i:  # one piece over the limit: split it at finer boundaries
            _split(text, bounds[i], bounds[i + 1], limit, count, level + 1, out)
            i += 1
        else:
            out.append((bounds[i], bounds[best]))
            i = best


def _split_chars(text: str, a: int, b: int, limit: int, count: Callable[[str], int],
                 out: list[tuple[int, int]]) -> None:
    """Cut between characters: each span the longest prefix within the limit."""
    while a < b:
        lo, hi, best = a + 1, b, a + 1
        while lo <= hi:
            mid = (lo + hi) // 2
            if count(text[a:mid]) <= limit:
                best, lo = mid, mid + 1
            else:
                hi = mid - 1
        out.append((a, best))
        a = best

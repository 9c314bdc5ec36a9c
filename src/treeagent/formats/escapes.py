"""Backslash-escape helpers shared by the formats' ``safe_cut`` rules (A.1)."""

from __future__ import annotations


def backslash_run(text: str, i: int) -> int:
    """Number of consecutive backslashes just before ``i``."""
    j = i
    while j > 0 and text[j - 1] == "\\":
        j -= 1
    return i - j


def escape_starts_at(text: str, i: int) -> bool:
    """True when the backslash at ``i`` begins an escape (an even run precedes it)."""
    return backslash_run(text, i) % 2 == 0

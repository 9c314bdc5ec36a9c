"""Backslash-escape helpers shared by the formats' ``safe_cut`` rules (A.1)."""

from __future__ import annotations

import re

from treeagent.algorithm.tree import key_step


def backslash_run(text: str, i: int) -> int:
    """Number of consecutive backslashes just before ``i``."""
    j = i
    while j > 0 and text[j - 1] == "\\":
        j -= 1
    return i - j


def escape_starts_at(text: str, i: int) -> bool:
    """True when the backslash at ``i`` begins an escape (an even run precedes it)."""
    return backslash_run(text, i) % 2 == 0


_SURROGATE = re.compile("[\ud800-\udfff]")


def printable(text: str) -> str:
    """``text`` with each lone surrogate (from a ``\\udc00`` escape; no UTF-8 encoder
    takes it) written as its ``\\uXXXX`` escape, so paths print and serialize."""
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def key_step_printable(key: str) -> str:
    """``tree.key_step`` with lone surrogates escaped (a backslash in the key is already
    doubled by ``key_step``, so ``\\udc00`` in the step can only mean the surrogate)."""
    step = key_step(key)
    return printable(step) if _SURROGATE.search(step) else step

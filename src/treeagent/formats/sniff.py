"""Content tests for :func:`treeagent.formats.detect` when the extension says nothing.

Each test reads the head of a text (its first :data:`HEAD_CHARS` characters, whole
lines only) and answers whether it is plainly that format; a text no format claims is
refused ("cannot tell the format of FILE; pass --format"), never guessed.

YAML: the first significant line (blank and ``#`` comment lines skipped) opens a
document (``---``), is a directive (``%YAML``) or a block entry (``key:``, ``"key":``,
``- item``, ``? key``), and every further significant line of the head is a block entry,
an indented continuation, a document marker or a flow bracket. Prose fails the rule at
its first unindented line without ``key:`` form; a one-line ``note: text`` is YAML.

Markdown: the first significant line is an ATX heading (``# Title``) or a code fence and
the head is not YAML (``# comment`` then ``key: value`` lines stay YAML).
"""

from __future__ import annotations

import re

HEAD_CHARS = 4096

_KEY = r"""(?:"(?:[^"\\]|\\.)*"|'(?:[^']|'')*'|[^\s#&*!|>'"%@`\-?:,\[\]{}][^#]*?|[-?:][^\s#][^#]*?)"""
_BLOCK_ENTRY = re.compile(rf"(?:[-?:](?:[ \t]|\Z))|{_KEY}[ \t]*:(?:[ \t]|\Z)")
_DOCUMENT = re.compile(r"(?:---|\.\.\.)(?:[ \t]|\Z)|%(?:YAML|TAG)[ \t]")
_FLOW_CLOSE = re.compile(r"[\]}]")
_ATX = re.compile(r"#{1,6}(?:[ \t]|\Z)")
_FENCE = re.compile(r"(?:```|~~~)")


def _head_lines(text: str) -> list[str]:
    head = text[:HEAD_CHARS]
    lines = head.splitlines()
    if len(text) > HEAD_CHARS and lines:
        lines.pop()  # a line cut by the head's end
    return [line.lstrip("\ufeff") if i == 0 else line for i, line in enumerate(lines)]


def _significant(lines: list[str]) -> list[str]:
    return [ln for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]


def looks_like_yaml(text: str) -> bool:
    """Is the head of ``text`` plainly YAML (module docstring)?"""
    lines = _significant(_head_lines(text))
    if not lines:
        return False
    first = lines[0]
    if first[:1] in " \t" or not (_DOCUMENT.match(first) or _BLOCK_ENTRY.match(first)):
        return False
    for line in lines[1:]:
        if line[:1] in " \t":
            continue  # nested entries, block scalars, multi-line flow collections
        if not (_BLOCK_ENTRY.match(line) or _DOCUMENT.match(line) or _FLOW_CLOSE.match(line)):
            return False
    return True


def looks_like_markdown(text: str) -> bool:
    """Does ``text`` open with a Markdown heading or code fence (and is not YAML)?"""
    first = next((ln for ln in _head_lines(text) if ln.strip()), "")
    return bool(_ATX.match(first) or _FENCE.match(first)) and not looks_like_yaml(text)

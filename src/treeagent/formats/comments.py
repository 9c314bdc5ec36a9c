"""Comments stay with their neighbour: a node starts at the whole-line
comments directly above it and a node ends after a comment on its own line, so no
section boundary strands a comment. Used by the YAML (``#``) and JavaScript (``//``,
``/* */``) parsers; containers widen to their children."""

from __future__ import annotations

import bisect
from collections.abc import Callable

from treeagent.algorithm.tree import Node

Leading = Callable[[str, int, int], int]  # (text, lower bound, node start) -> new start
Trailing = Callable[[str, int], int]  # (text, leaf end) -> new end


def keep_comments(text: str, root: Node, lo: int, leading: Leading, trailing: Trailing,
                  fixed_root: bool = False, marks: list[int] | None = None) -> None:
    """Widen the nodes under ``root`` (nothing before ``lo``) over their comments;
    ``fixed_root``: ``root`` keeps its span and its descendants stay inside it.

    ``marks``: the sorted offsets of every character that may open a comment, if
    known. A subtree with none from the line above its first line to the end of its
    last line keeps its spans (a comment moves only into a node on the line below it or
    on its own last line), so it is not visited."""
    order: list[tuple[Node, int]] = []
    stack = [(root, lo)]
    while stack:  # preorder with each node's lower bound; processed children first
        node, bound = stack.pop()
        order.append((node, bound))
        prev = max(bound, node.start) if node is not root or fixed_root else bound
        for child in node.children:
            if marks is None or _marked(text, marks, child.start, child.end):
                stack.append((child, prev))
            prev = child.end
    if fixed_root:
        order = order[1:]
    top = root.end if fixed_root else len(text)
    for node, bound in reversed(order):
        if node.children:
            node.start = min(node.start, node.children[0].start)
            node.end = max(node.end, node.children[-1].end)
        if not node.atomic:  # a container too: `items: [...], /* after the bracket */`
            node.end = min(trailing(text, node.end), max(top, node.end))
        node.start = leading(text, bound, node.start)


def _marked(text: str, marks: list[int], start: int, end: int) -> bool:
    """Whether a mark lies between the start of the line above ``start``'s line and the
    end of ``end``'s line."""
    line = text.rfind("\n", 0, start)
    above = text.rfind("\n", 0, line) + 1 if line > 0 else 0
    eol = text.find("\n", end)
    i = bisect.bisect_left(marks, above)
    return i < len(marks) and (eol < 0 or marks[i] < eol)


def _line_start(text: str, at: int) -> int:
    return text.rfind("\n", 0, at) + 1


Above = Callable[[str, int, int, int], int | None]  # (text, lo, line above, line) -> start


def hash_lines_before(text: str, lo: int, at: int) -> int:
    """Start of the ``#`` comment lines directly above a node starting its line at ``at``."""
    return _lines_before(text, lo, at, _hash_line)


def js_lines_before(text: str, lo: int, at: int) -> int:
    """Start of the ``//`` lines and whole-line ``/* */`` blocks directly above ``at``."""
    return _lines_before(text, lo, at, _js_comment)


def _hash_line(text: str, lo: int, prev: int, line: int) -> int | None:
    body = text[prev:line]
    if prev < lo or not body.strip(" \t\r\n").startswith("#"):
        return None
    return prev + len(body) - len(body.lstrip(" \t"))


def _js_comment(text: str, lo: int, prev: int, line: int) -> int | None:
    """Start of a ``//`` line or of a whole-line ``/* */`` block ending at ``line``."""
    body = text[prev:line].strip(" \t\r\n")
    if body.startswith("//"):
        return prev + text[prev:line].index("/") if prev >= lo else None
    if body.endswith("*/"):
        close = prev + len(text[prev:line].rstrip(" \t\r\n")) - 2
        opening = text.rfind("/*", lo, close)
        if opening >= 0 and text.find("*/", opening + 2) == close:
            head = _line_start(text, opening)
            if head >= lo and not text[head:opening].strip(" \t"):
                return opening
    return None


def _lines_before(text: str, lo: int, at: int, above: Above) -> int:
    """Start of the comment run directly above the line where a node starts at ``at``
    (only indentation before it), not before ``lo``; ``at`` if none."""
    line = _line_start(text, at)
    if text[line:at].strip(" \t") or line <= lo:
        return at
    start = at
    while line > lo:
        found = above(text, lo, _line_start(text, line - 1), line)
        if found is None:
            break
        start, line = found, _line_start(text, found)
    return start


def hash_after(text: str, end: int) -> int:
    """After a ``# comment`` that follows ``end`` on its line (else ``end``)."""
    return _comment_after(text, end, ("#",))


def js_after(text: str, end: int) -> int:
    """After a ``// comment`` (or a one-line ``/* */``), past a comma, on ``end``'s line."""
    return _comment_after(text, end, ("//", "/*"), comma=True)


def _comment_after(text: str, end: int, openers: tuple[str, ...], comma: bool = False) -> int:
    n = len(text)
    i = end
    while i < n and text[i] in " \t":
        i += 1
    if comma and i < n and text[i] == ",":
        i += 1
        while i < n and text[i] in " \t":
            i += 1
    if i == end or not text.startswith(openers, i):
        return end
    eol = text.find("\n", i)
    eol = n if eol < 0 else eol
    if text.startswith("/*", i):
        close = text.find("*/", i + 2, eol)
        return end if close < 0 else close + 2
    return eol - 1 if eol > 0 and text[eol - 1] == "\r" else eol

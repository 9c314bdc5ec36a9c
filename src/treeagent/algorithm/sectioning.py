"""Algorithm 1 (structural sectioning), Flat sectioning (Eq. 2) and SplitText (A.1).

Token counts come from one tokenization (``TokenIndex``): O(log n) per query. Where an
estimate lies within ``SLACK`` tokens of the budget the exact count of the span alone
is used instead, so every fit decision is the exact one; final sections are then
re-tokenized exactly and any that still exceed B are repaired.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from treeagent.algorithm.tree import Node, Tree
from treeagent.formats import safe_cut as format_safe_cut
from treeagent.tokenizers.tokens import TokenIndex

SLACK = 8
#: budgets from which SplitText places cuts by the estimates alone, SLACK tokens short of
#: the budget (one exact count per piece at most instead of ~7: pieces stay within the
#: budget and lose < 4% of it: the cost stays linear in the input size)
FAST_SPLIT = 32 * SLACK
_NATURAL = (re.compile(r"[.!?;:][\"')\]]*\s+"), re.compile(r"\n"), re.compile(r"[\s,]+"))
_FILL = 0.75  # a natural boundary is taken when it keeps >= 75% of the fragment (A.1)

Tok = Callable[[int, int], int]
_START_TAG = re.compile(r"""<[^\t\n\f\r />]++((?:[^>"']++|"[^"]*+"|'[^']*+')*+)""")
_ATTRIBUTE = re.compile(
    r"""([^\t\n\f\r /=>"']++)(?:[\t\n\f\r ]*+=[\t\n\f\r ]*+"""
    r"""(?:"([^"]*+)"|'([^']*+)'|([^\t\n\f\r >]++)))?""")
_ATTR_VALUE = 60
_ATTR_STEP = 160


@dataclass(slots=True)
class Section:
    """One observation unit (Eq. 13 for ``path``).

    ``kind`` is ``subtree`` (``node``), ``siblings`` (children ``first..last`` of
    ``node``, inclusive) or ``span`` (characters ``start..end`` of the leaf ``node``).
    Flat sections have ``kind == "flat"`` and no node or path.
    """

    kind: str
    start: int
    end: int
    node: Node | None = None
    first: int = -1
    last: int = -1
    atomic: bool = False
    index: int = -1
    tokens: int = -1
    path: str | None = None
    prefix: str = field(default="", repr=False)
    suffix: str = field(default="", repr=False)

    def text(self, source: str) -> str:
        """Native text of the section; split-leaf fragments restore their quotes (A.1)."""
        return self.prefix + source[self.start : self.end] + self.suffix


class Sectioner:
    """Shared state for sectioning one tree: token index and an exact-count cache."""

    def __init__(self, tree: Tree, index: TokenIndex) -> None:
        self.tree = tree
        self.text = tree.text
        self.index = index
        self._exact: dict[tuple[int, int, str, str], int] = {}
        self._safe = format_safe_cut(tree.format)
        self._attrs: dict[int, str] = {}

    # -- token counts -------------------------------------------------------------
    def exact(self, start: int, end: int, prefix: str = "", suffix: str = "") -> int:
        key = (start, end, prefix, suffix)
        hit = self._exact.get(key)
        if hit is None:
            hit = self.index.exact(start, end, prefix, suffix)
            self._exact[key] = hit
        return hit

    def estimator(self, budget: int) -> Tok:
        """tok(span) for Algorithm 1 at ``budget``: the estimate, exact near the budget."""
        count = self.index.count
        exact = self.exact

        def tok(start: int, end: int) -> int:
            est = count(start, end)
            if abs(est - budget) <= SLACK:
                return exact(start, end)
            return est

        return tok

    # -- Algorithm 1 ----------------------------------------------------------------
    def partition(self, v: Node, budget: int, tok: Tok | None = None) -> list[Section]:
        """Partition(v, B) of Algorithm 1, iteratively (deep trees are fine)."""
        estimated = tok is None
        tok = tok or self.estimator(budget)
        out: list[Section] = []
        work: list[Node | Section] = [v]
        while work:
            item = work.pop()
            if isinstance(item, Section):
                out.append(item)
                continue
            node = item
            if node.indivisible or tok(node.start, node.end) <= budget:
                out.append(self._subtree(node))  # line 3
                continue
            if not node.children:
                out.extend(self.split_text(node, budget, tok, estimated))  # line 4
                continue
            out_items = self._group_children(node, 0, len(node.children) - 1, budget, tok)
            work.extend(reversed(out_items))
        return out

    def _group_children(
        self, parent: Node, first: int, last: int, budget: int, tok: Tok
    ) -> list[Node | Section]:
        """Lines 5-14: greedy sibling grouping, flushing around oversized children."""
        items: list[Node | Section] = []
        kids = parent.children
        group_start = -1
        for i in range(first, last + 1):
            u = kids[i]
            if tok(u.start, u.end) > budget:
                if group_start >= 0:
                    items.append(self._group(parent, group_start, i - 1))
                    group_start = -1
                items.append(u)  # Partition(u, B), expanded by the caller's stack
                continue
            if group_start >= 0 and tok(kids[group_start].start, u.end) > budget:
                items.append(self._group(parent, group_start, i - 1))
                group_start = -1
            if group_start < 0:
                group_start = i
        if group_start >= 0:
            items.append(self._group(parent, group_start, last))
        return items

    def _subtree(self, node: Node) -> Section:
        return Section("subtree", node.start, node.end, node, atomic=node.indivisible)

    def _group(self, parent: Node, first: int, last: int) -> Section:
        if first == last:
            return self._subtree(parent.children[first])
        kids = parent.children
        return Section("siblings", kids[first].start, kids[last].end, parent, first, last)

    # -- SplitText (A.1) ------------------------------------------------------------
    def _fragment(self, leaf: Node, start: int, end: int) -> Section:
        prefix = leaf.quote if start > leaf.start else ""
        suffix = leaf.quote if end < leaf.end else ""
        return Section("span", start, end, leaf, prefix=prefix, suffix=suffix)

    def split_text(self, leaf: Node, budget: int, tok: Tok,
                   estimated: bool = False) -> list[Section]:
        """Consecutive spans of a divisible leaf, each within ``budget`` where a safe cut
        allows it; cuts never break an escape or a surrogate pair. ``estimated``: ``tok``
        is :meth:`estimator`'s, so cuts may be placed by the estimates (``FAST_SPLIT``)."""
        count = self.index.count
        quote = bool(leaf.quote)

        def with_quotes(a: int, b: int) -> int:  # re-quoting adds at most a token a side
            return tok(a, b) + (a > leaf.start) + (b < leaf.end)

        def estimate(a: int, b: int) -> int:
            return count(a, b) + quote * ((a > leaf.start) + (b < leaf.end))

        return self._split_range(leaf, leaf.start, leaf.end, budget,
                                 with_quotes if quote else tok,
                                 estimate if estimated and budget >= FAST_SPLIT else None)

    def _split_range(self, leaf: Node, start: int, end: int, budget: int, tok: Tok,
                     estimate: Tok | None = None) -> list[Section]:
        text = self.text
        lo_cut = max(leaf.cut_start, leaf.start)
        hi_cut = min(leaf.cut_end, leaf.end)
        out: list[Section] = []
        a = start
        while True:
            rest = tok(a, end)
            # candidate cut positions, inclusive: each side keeps a character of content
            lo, hi = max(a, lo_cut) + 1, hi_cut - 1
            if rest <= budget or lo > hi:
                last = self._fragment(leaf, a, end)
                last.atomic = rest > budget  # nothing left that may be cut
                out.append(last)
                return out
            # largest p with tok(a, p) <= budget (binary search over characters), or
            # with estimate(a, p) < budget - SLACK: exact counts are not needed there
            probe, limit = (tok, budget) if estimate is None else (estimate, budget - SLACK - 1)
            best = lo
            while lo <= hi:
                mid = (lo + hi) // 2
                if probe(a, mid) <= limit:
                    best, lo = mid, mid + 1
                else:
                    hi = mid - 1
            floor = max(a, lo_cut) + 1
            p = self._natural_cut(a, best, floor)
            while p > floor and not self._safe(text, p):
                p -= 1
            if not self._safe(text, p):  # no safe cut before: go forward
                p = best
                while p < hi_cut and not self._safe(text, p):
                    p += 1
                if p >= hi_cut:  # no safe cut leaves content after it: one last piece
                    last = self._fragment(leaf, a, end)
                    last.atomic = True
                    out.append(last)
                    return out
            piece = self._fragment(leaf, a, p)
            piece.atomic = tok(a, p) > budget  # no safe cut makes it fit
            out.append(piece)
            a = p

    def _natural_cut(self, a: int, best: int, floor: int) -> int:
        """Prefer a sentence, line or word boundary that keeps >= 75% of the fragment."""
        window_start = max(floor, a + int((best - a) * _FILL))
        window = self.text[window_start:best]
        for pattern in _NATURAL:
            last = None
            for m in pattern.finditer(window):
                last = m
            if last is not None and window_start + last.end() > a:
                return window_start + last.end()
        return best

    # -- final exact pass -----------------------------------------------------------
    def finalize(self, sections: list[Section], budget: int) -> list[Section]:
        """Count every section exactly; repair non-atomic ones still above ``budget``."""
        out: list[Section] = []
        for s in sections:
            n = self.exact(s.start, s.end, s.prefix, s.suffix)
            if n <= budget or s.atomic:
                s.tokens = n
                out.append(s)
                continue
            for piece in self._repair(s, budget):
                piece.tokens = self.exact(piece.start, piece.end, piece.prefix, piece.suffix)
                out.append(piece)
        for i, s in enumerate(out):
            s.index = i
            s.path = self.section_path(s)
        return out

    def _repair(self, s: Section, budget: int) -> list[Section]:
        """Re-section an over-budget unit with exact counts everywhere."""
        exact = self.exact
        assert s.node is not None
        if s.kind == "span":
            leaf = s.node

            def tok_span(a: int, b: int) -> int:
                prefix = leaf.quote if a > leaf.start else ""
                suffix = leaf.quote if b < leaf.end else ""
                return exact(a, b, prefix, suffix)

            return self._split_range(leaf, s.start, s.end, budget, tok_span)
        if s.kind == "subtree":
            return self.partition(s.node, budget, exact)
        out: list[Section] = []
        for item in self._group_children(s.node, s.first, s.last, budget, exact):
            # groups formed with exact counts fit; oversized children are partitioned
            out.extend([item] if isinstance(item, Section) else self.partition(item, budget, exact))
        return out

    def section_path(self, s: Section) -> str | None:
        """a_t of Eq. 13. HTML: every ancestor of a section was split, so its start tag
        is in no section; its attributes are kept in its path step instead."""
        if s.node is None:
            return None
        if s.kind == "siblings":
            return f"({self._path(s.node, True)}, [{s.first}, {s.last}])"
        return self._path(s.node, False)

    def _path(self, node: Node, split: bool) -> str:
        if self.tree.format != "html":
            return self.tree.path(node)
        steps: list[str] = []
        cur: Node | None = node
        while cur is not None and cur.parent is not None:
            steps.append(cur.step + (self._attributes(cur) if split or cur is not node else ""))
            cur = cur.parent
        return (self.tree.root_path + "".join(reversed(steps))) or "/"

    def _attributes(self, node: Node) -> str:
        """``[@name='value']`` predicates of an element's start tag (values over
        ``_ATTR_VALUE`` characters shortened, at most ``_ATTR_STEP`` characters a step)."""
        if node.kind != "element":
            return ""
        hit = self._attrs.get(node.id)
        if hit is None:
            stop = node.children[0].start if node.children else node.end
            m = _START_TAG.match(self.text, node.start, stop)
            parts: list[str] = []
            size = 0
            for a in _ATTRIBUTE.finditer(m.group(1) if m else ""):
                name, value = a.group(1), a.group(2) or a.group(3) or a.group(4)
                if value is None:
                    part = f"[@{name}]"
                else:
                    if len(value) > _ATTR_VALUE:
                        value = value[: _ATTR_VALUE - 1] + "\u2026"
                    part = "[@{}={}]".format(name, "'" + value + "'" if "'" not in value
                                             else '"' + value.replace('"', "&quot;") + '"')
                if size + len(part) > _ATTR_STEP:
                    parts.append("[\u2026]")
                    break
                parts.append(part)
                size += len(part)
            hit = self._attrs[node.id] = "".join(parts)
        return hit


def count(sectioner: Sectioner, budget: int) -> int:
    """n(B) = |S_B(x)| from the estimates (used by the budget search)."""
    return len(sectioner.partition(sectioner.tree.root, budget))


def flat_count(total_tokens: int, base_budget: int) -> int:
    """T_flat(x, C) of Eq. 2."""
    return math.ceil(total_tokens / base_budget) if total_tokens else 0


def flat(index: TokenIndex, base_budget: int) -> list[Section]:
    """Fixed-length sections of ``base_budget`` tokens in input order (Flat, Eq. 2)."""
    out: list[Section] = []
    for i, t in enumerate(range(0, index.total, base_budget)):
        start = index.char_at_token(t)
        end = index.char_at_token(min(t + base_budget, index.total))
        out.append(Section("flat", start, end, index=i, tokens=min(base_budget, index.total - t)))
    return out

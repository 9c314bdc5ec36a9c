"""l(v), residual memory links E_res and the accessible indices L_t (Eq. 14-15, A.3)."""

from __future__ import annotations

import bisect
from collections import defaultdict

from treeagent.algorithm.sectioning import Section
from treeagent.algorithm.tree import Node, Tree


class SectionLocator:
    """Finds the sections holding content of a node from their (sorted) boundaries."""

    def __init__(self, sections: list[Section]) -> None:
        self.sections = sections
        self.starts = [s.start for s in sections]

    def last(self, node: Node) -> int:
        """l(v): index of the final section containing content from v's subtree."""
        return bisect.bisect_left(self.starts, node.end) - 1

    def holds_whole(self, node: Node) -> bool:
        """True when a single section contains all of v (so no links start inside v)."""
        i = bisect.bisect_right(self.starts, node.start) - 1
        return i >= 0 and self.sections[i].end >= node.end


def residual_links(tree: Tree, sections: list[Section]) -> list[tuple[int, int]]:
    """E_res = {(l(v), l(p)) | v in children(p), l(v) < l(p)} (Eq. 14), root included,
    deduplicated, sorted by (target, source)."""
    if not sections:
        return []
    loc = SectionLocator(sections)
    links: set[tuple[int, int]] = set()
    stack = [tree.root]
    while stack:
        p = stack.pop()
        if not p.children or loc.holds_whole(p):
            continue
        target = loc.last(p)
        for v in p.children:
            source = loc.last(v)
            if source < target:
                links.add((source, target))
            stack.append(v)
    return sorted(links, key=lambda e: (e[1], e[0]))


def accessible(links: list[tuple[int, int]]) -> dict[int, list[int]]:
    """L_t = {i | (i, t) in E_res} (Eq. 15): each source index once, ascending."""
    by_target: dict[int, set[int]] = defaultdict(set)
    for i, t in links:
        by_target[t].add(i)
    return {t: sorted(s) for t, s in sorted(by_target.items())}

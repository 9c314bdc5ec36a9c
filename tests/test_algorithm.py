"""Algorithm 1, Eq. 4-6, Proposition 3.1, Corollary 3.2 and the A.2 search, checked on
generated trees under the additive length model (one token per character)."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import CharTokenizer
from treeagent.algorithm import budget
from treeagent.algorithm.preprocess import section_tree
from treeagent.algorithm.sectioning import Sectioner, count
from treeagent.algorithm.tree import Node, Tree
from treeagent.tokenizers.tokens import TokenIndex

# A shape is a leaf length (int) or a list of child shapes.
shapes = st.recursive(
    st.integers(1, 9),
    lambda kids: st.lists(kids, min_size=1, max_size=4),
    max_leaves=12,
)


def build(shape) -> Tree:
    """Text of letter runs with no separators, so w(v) is the sum of leaf lengths."""
    parts: list[str] = []
    pos = 0

    def make(s, label) -> Node:
        nonlocal pos
        if isinstance(s, int):
            parts.append("x" * s)
            node = Node("leaf", pos, pos + s, f"[{label}]", label)
            pos += s
            return node
        start = pos
        kids = [make(c, i) for i, c in enumerate(s)]
        return Node("node", start, pos, f"[{label}]", label, kids)

    root = make(shape if isinstance(shape, list) else [shape], 0)
    return Tree("".join(parts), root, "json", "$")


def sectioner(tree: Tree) -> Sectioner:
    return Sectioner(tree, TokenIndex(tree.text, CharTokenizer()))


def min_feasible(tree: Tree, b: int) -> int:
    """Brute force over every feasible partition (subtree or sibling-range units <= B
    covering the leaves in order): shortest path over character positions."""
    units: set[tuple[int, int]] = set()
    for node in tree.nodes:
        if node.end - node.start <= b:
            units.add((node.start, node.end))
        kids = node.children
        for i in range(len(kids)):
            for j in range(i + 1, len(kids)):
                if kids[j].end - kids[i].start <= b:
                    units.add((kids[i].start, kids[j].end))
    n = len(tree.text)
    best = [math.inf] * (n + 1)
    best[0] = 0
    for pos in range(n + 1):
        if best[pos] == math.inf:
            continue
        for a, e in units:
            if a == pos:
                best[e] = min(best[e], best[pos] + 1)
    return int(best[n])


@settings(max_examples=150, deadline=None)
@given(shapes, st.integers(9, 30))
def test_count_is_minimum_over_feasible_partitions(shape, b):
    """Eq. 6: N_B = min over feasible partitions."""
    tree = build(shape)
    assert count(sectioner(tree), b) == min_feasible(tree, b)


@settings(max_examples=150, deadline=None)
@given(shapes, st.integers(9, 30))
def test_structure_preservation_and_cover(shape, b):
    """Eq. 4 and document order: fitting subtrees lie in exactly one section; sections
    are disjoint, ordered and cover every leaf once; each section <= B."""
    tree = build(shape)
    sections = sectioner(tree).partition(tree.root, b)
    for prev, cur in zip(sections, sections[1:]):
        assert prev.end <= cur.start
    covered = sorted((s.start, s.end) for s in sections)
    for leaf in tree.leaves():
        inside = [r for r in covered if r[0] <= leaf.start and leaf.end <= r[1]]
        assert len(inside) == 1
    for node in tree.nodes:
        if node.end - node.start <= b:
            touching = [s for s in sections if s.start < node.end and node.start < s.end]
            assert len(touching) == 1
    assert all(s.end - s.start <= b for s in sections)


def greedy_sequence(weights: list[int], b: int) -> int:
    tree = build(list(weights))
    return count(sectioner(tree), b)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 12), st.data())
def test_proposition_3_1(c, data):
    """N(2C-1) <= ceil(W / C) for siblings with w_i <= 2C-1."""
    weights = data.draw(st.lists(st.integers(1, 2 * c - 1), min_size=1, max_size=25))
    root_fits = sum(weights) <= 2 * c - 1
    n = greedy_sequence(weights, 2 * c - 1)
    assert n <= math.ceil(sum(weights) / c) or root_fits


@given(st.integers(2, 9), st.data())
@settings(max_examples=60, deadline=None)
def test_proposition_3_1_is_tight(c, data):
    """C repetitions of (C-1, C): every B in [C, 2C-2] needs 2C sections > ceil(W/C)."""
    b = data.draw(st.integers(c, 2 * c - 2))
    weights = [c - 1, c] * c
    assert greedy_sequence(weights, b) == 2 * c > math.ceil(sum(weights) / c)
    assert greedy_sequence(weights, 2 * c - 1) <= math.ceil(sum(weights) / c)


def separate_groups(tree: Tree, b: int) -> int:
    """G_B: maximal runs of fitting children of oversized nodes (A.4), 1 if root fits."""
    if tree.root.end - tree.root.start <= b:
        return 1
    groups = 0
    stack = [tree.root]
    while stack:
        node = stack.pop()
        run = False
        for kid in node.children:
            if kid.end - kid.start > b:
                run = False
                stack.append(kid)
            elif not run:
                groups += 1
                run = True
    return groups


@settings(max_examples=200, deadline=None)
@given(shapes, st.integers(5, 16))
def test_corollary_3_2(shape, c):
    tree = build(shape)
    big = 2 * c - 1
    if any(leaf.end - leaf.start > big for leaf in tree.leaves()):
        return  # the corollary's model has leaf units <= B
    f = separate_groups(tree, big) - 1
    assert count(sectioner(tree), big) <= math.ceil(len(tree.text) / c) + f


@settings(max_examples=150, deadline=None)
@given(shapes, st.integers(3, 14))
def test_budget_search_is_kappa_argmin(shape, c):
    """A.2 search equals the kappa-argmin over every B in [C, 2C-1]."""
    tree = build(shape)
    sec = sectioner(tree)
    n_flat = math.ceil(len(tree.text) / c)
    found = budget.search(lambda b: count(sec, b), c, n_flat)
    every = {b: count(sec, b) for b in range(c, 2 * c)}
    best = min(every, key=lambda b: budget.kappa(b, every[b], n_flat))
    assert found.budget == best
    assert found.count == every[best]


def test_search_keeps_c_when_it_already_matches():
    tree = build([3, 3, 3, 3])
    sec = sectioner(tree)
    result = budget.search(lambda b: count(sec, b), 6, 2)
    assert result.budget == 6 and result.evaluated == {6: 2}


@settings(max_examples=100, deadline=None)
@given(shapes, st.integers(3, 20))
def test_residual_links_match_definition(shape, b):
    """Eq. 14 computed by brute force from l(v) of every node; i < t; root included."""
    tree = build(shape)
    result = section_tree(tree, CharTokenizer(), b, search=False)
    secs = result.sections

    def last(node):
        return max(s.index for s in secs if s.start < node.end and node.start < s.end)

    expected = {
        (last(v), last(p)) for p in tree.nodes for v in p.children if last(v) < last(p)
    }
    assert set(result.links) == expected
    assert len(result.links) == len(expected)
    targets = {last(p) for p in tree.nodes if p.children}
    assert all(i < t and t in targets for i, t in result.links)


def test_links_on_a_known_tree():
    # root [ [2,2] , [9, 1] ] at B=5: sections [0]=(a) [1]=9 [2]=1 ... hand-checked
    tree = build([[2, 2], [5, 1]])
    result = section_tree(tree, CharTokenizer(), 5, search=False)
    assert [(s.kind, s.start, s.end) for s in result.sections] == [
        ("subtree", 0, 4), ("subtree", 4, 9), ("subtree", 9, 10),
    ]
    # child [1] ends in section 2, its child 5 ends in 1 -> (1, 2); root ends in 2: (0, 2)
    assert result.links == [(0, 2), (1, 2)]
    assert result.accessible() == {2: [0, 1]}


def test_search_keeps_c_when_every_budget_gives_the_same_excess():
    """n(B) = 4 > N = 3 for all B in [4, 7]: the smallest budget, C, is the argmin."""
    tree = build([1, [1, 1, 6], 1])
    sec = sectioner(tree)
    result = budget.search(lambda b: count(sec, b), 4, 3)
    assert result.budget == 4 and result.count == 4

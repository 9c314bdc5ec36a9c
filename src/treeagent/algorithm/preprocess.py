"""TreeAgent preprocessing of one document: parse, tokenize once, search the budget,
section, attach paths and residual links (paper Section 3, A.1-A.3)."""

from __future__ import annotations

import ctypes
import functools
from dataclasses import dataclass

from treeagent import formats
from treeagent.algorithm import budget as budget_search
from treeagent.algorithm import links
from treeagent.algorithm.sectioning import Section, Sectioner, count, flat, flat_count
from treeagent.algorithm.tree import Tree, collector_paused
from treeagent.tokenizers.tokens import TokenIndex, Tokenizer


@dataclass
class Sectioned:
    """Everything a TreeAgent observation needs for one input."""

    tree: Tree
    index: TokenIndex
    base_budget: int  # C
    flat_count: int  # T_flat(x, C)
    budget: int  # B*
    sections: list[Section]
    links: list[tuple[int, int]]
    evaluated: dict[int, int]  # candidate budget -> estimated n(B)

    @property
    def tokens(self) -> int:
        return self.index.total

    def section_text(self, section: Section) -> str:
        return section.text(self.tree.text)

    def accessible(self) -> dict[int, list[int]]:
        """L_t for every target section t (Eq. 15)."""
        return links.accessible(self.links)

    def flat_sections(self) -> list[Section]:
        return flat(self.index, self.base_budget)


def section_tree(
    tree: Tree, tokenizer: Tokenizer, base_budget: int, search: bool = True,
    top: int | None = None, index: TokenIndex | None = None,
) -> Sectioned:
    """Sections of ``tree`` at B* (or at C when ``search`` is off); ``top`` replaces
    2C-1 as the top of the search range (:func:`treeagent.algorithm.budget.search`);
    ``index``: the tokenization of ``tree.text`` with ``tokenizer``, if already made."""
    if base_budget < 1:
        raise ValueError("the base budget C must be a positive number of tokens")
    with collector_paused():
        return _section_tree(tree, tokenizer, base_budget, search, top, index)


def _section_tree(
    tree: Tree, tokenizer: Tokenizer, base_budget: int, search: bool, top: int | None,
    index: TokenIndex | None,
) -> Sectioned:
    if index is None:
        index = TokenIndex(tree.text, tokenizer)
    elif index.text is not tree.text or index.tokenizer is not tokenizer:
        raise ValueError("index is not the tokenization of this tree's text")
    sectioner = Sectioner(tree, index)
    n_flat = flat_count(index.total, base_budget)
    evaluated: dict[int, int] = {}
    chosen = base_budget
    if search:
        result = budget_search.search(lambda b: count(sectioner, b), base_budget, n_flat, top)
        chosen, evaluated = result.budget, result.evaluated
    sections = sectioner.finalize(sectioner.partition(tree.root, chosen), chosen)
    return Sectioned(
        tree, index, base_budget, n_flat, chosen, sections,
        links.residual_links(tree, sections), evaluated,
    )


def section_text(
    text: str, fmt: str, tokenizer: Tokenizer, base_budget: int, search: bool = True
) -> Sectioned:
    """Parse ``text`` as ``fmt`` and section it (raises ``ParseError`` on bad input).

    The text is tokenized before it is parsed, and the heap the tokenization freed is
    handed back to the system in between: the tokenizer's transients (~5 MB per MB of
    input) and the tree (~6 MB per MB) then never coexist, and the tree's objects, which
    Python allocates in arenas of their own, are not stacked on top of freed heap that
    they could not reuse. A malformed input costs one tokenization before its error.
    """
    index = TokenIndex(text, tokenizer)
    release_free_heap()
    return section_tree(formats.parse(text, fmt), tokenizer, base_budget, search, index=index)


@functools.cache
def _malloc_trim() -> ctypes._CFuncPtr | None:  # type: ignore[name-defined]
    try:
        return ctypes.CDLL(None).malloc_trim  # the C library the interpreter runs on
    except (OSError, AttributeError):  # not glibc
        return None


def release_free_heap() -> None:
    """Return the C heap's free pages to the system (glibc's ``malloc_trim``; nothing
    elsewhere). Freed heap stays resident otherwise, and Python's small objects are
    not served from it."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)

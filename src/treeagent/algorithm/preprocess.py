"""TreeAgent preprocessing of one document: parse, tokenize once, search the budget,
section, attach paths and residual links (paper Section 3, A.1-A.3)."""

from __future__ import annotations

from dataclasses import dataclass

from treeagent import formats
from treeagent.algorithm import budget as budget_search
from treeagent.algorithm import links
from treeagent.algorithm.sectioning import Section, Sectioner, count, flat, flat_count
from treeagent.algorithm.tree import Tree
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
    top: int | None = None,
) -> Sectioned:
    """Sections of ``tree`` at B* (or at C when ``search`` is off); ``top`` replaces
    2C-1 as the top of the search range (:func:`treeagent.algorithm.budget.search`)."""
    if base_budget < 1:
        raise ValueError("the base budget C must be a positive number of tokens")
    index = TokenIndex(tree.text, tokenizer)
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
    """Parse ``text`` as ``fmt`` and section it (raises ``ParseError`` on bad input)."""
    return section_tree(formats.parse(text, fmt), tokenizer, base_budget, search)

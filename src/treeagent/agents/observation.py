"""Observations o_t for the four modes (paper Sections 2-3, Eq. 3 and 16, A.3, C.2).

* ``flat``: fixed-length sections of C tokens (Eq. 2); o_t = (s_t, c_t[A]);
* ``tree``: structural sections at the searched budget B* (Algorithm 1, A.2);
* ``tree+path``: + the section's structural path a_t (Eq. 13);
* ``treeagent``: + r_t = R(q, L_t, H_{t-1}) (Eq. 16): at most 4 spans of at most 96
  tokens retrieved from the memories saved, before step t, at the indices L_t that the
  residual links give (Eq. 14-15).

The agent's own context c_t[A] (InfMem's retrieved chunks, ReMemR1's recalled memory)
is kept in the workflow's prompt; :meth:`Observation.render` gives the text for the
agent's section slot. Its layout, with blocks separated by one blank line and absent
blocks left out::

    <the section's native text>

    Path: <a_t>                          (tree+path, treeagent)

    Retrieved from earlier memory:       (treeagent, when r_t is not empty)
    - <span 1>
    - <span 2>

A :class:`Reader` is one reading pass: it saves m_t under t after each update (H_t) and
retrieves only from states saved before the current step.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from treeagent import formats
from treeagent.algorithm.preprocess import section_tree
from treeagent.algorithm.retrieval import MAX_SPANS, SPAN_TOKENS, Retrieved, retrieve
from treeagent.algorithm.sectioning import Section, flat
from treeagent.algorithm.tree import Tree
from treeagent.registry import Named
from treeagent.tokenizers.tokens import TokenIndex, Tokenizer

METHOD_RECORDS = (
    Named("flat", "Flat"),  # fixed-size chunks, the baseline
    Named("tree", "Tree"),  # structural sections
    Named("tree+path", "Tree+Path"),  # + the root-to-section path
    Named("treeagent", "TreeAgent"),  # + residual links (paper 3)
)
"""The reading modes, Table 1's rows in order (:data:`treeagent.registry.METHODS`)."""
METHODS = tuple(m.name for m in METHOD_RECORDS)
PATH_LABEL = "Path: "
RETRIEVED_HEADER = "Retrieved from earlier memory:"


@dataclass
class Document:
    """The sections one mode reads for one input, prepared once per example."""

    method: str
    source: str
    sections: list[Section]
    base_budget: int  # C
    budget: int  # B* (C for flat)
    flat_count: int  # T_flat(x, C)
    accessible: dict[int, list[int]] = field(default_factory=dict)  # L_t (treeagent)
    links: int = 0  # |E_res| (treeagent)

    def __len__(self) -> int:
        return len(self.sections)

    def text(self, t: int) -> str:
        return self.sections[t].text(self.source)

    def path(self, t: int) -> str | None:
        """a_t in tree+path and treeagent; None otherwise (Flat and Tree show no path)."""
        if self.method in ("tree+path", "treeagent"):
            return self.sections[t].path
        return None

    def sources(self, t: int) -> list[int]:
        """L_t in treeagent mode; empty in the other modes (no links)."""
        return self.accessible.get(t, [])


def check_method(method: str) -> str:
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r} (choose from {', '.join(METHODS)})")
    return method


def prepare(
    document: str | Tree,
    fmt: str | None,
    tokenizer: Tokenizer,
    method: str,
    base_budget: int = 5000,
) -> Document:
    """Section ``document`` for ``method`` with the evaluated model's ``tokenizer``.

    Flat needs no parse (sections of C tokens over the whole text); the tree modes parse
    ``document`` as ``fmt`` (raising ``treeagent.algorithm.tree.ParseError`` on bad input) unless
    it is already a :class:`~treeagent.algorithm.tree.Tree`, and search the budget (A.2, C.2).
    """
    check_method(method)
    if base_budget < 1:
        raise ValueError("the base budget C must be a positive number of tokens")
    if method == "flat":
        text = document.text if isinstance(document, Tree) else document
        sections = flat(TokenIndex(text, tokenizer), base_budget)
        return Document(method, text, sections, base_budget, base_budget, len(sections))
    if isinstance(document, Tree):
        tree = document
    else:
        if fmt is None:
            raise ValueError(f"method {method!r} needs the input format")
        tree = formats.parse(document, fmt)
    result = section_tree(tree, tokenizer, base_budget, search=True)
    doc = Document(method, tree.text, result.sections, base_budget, result.budget,
                   result.flat_count)
    if method == "treeagent":
        doc.accessible, doc.links = result.accessible(), len(result.links)
    return doc


@dataclass(frozen=True)
class Observation:
    """o_t = (s_t, a_t, r_t) for one reading step; c_t[A] stays with the workflow."""

    t: int
    section: str
    path: str | None = None
    links: tuple[int, ...] = ()  # L_t
    retrieved: tuple[Retrieved, ...] = ()  # r_t

    def render(self, section: str | None = None) -> str:
        """The text of the agent's section slot (layout in the module docstring);
        ``section`` replaces s_t's text (a cut to fit the request limit keeps a_t, r_t)."""
        blocks = [self.section if section is None else section]
        if self.path is not None:
            blocks.append(PATH_LABEL + self.path)
        if self.retrieved:
            blocks.append(RETRIEVED_HEADER + "".join(f"\n- {r.text}" for r in self.retrieved))
        return "\n\n".join(blocks)

    def summary(self) -> dict:
        """What a trace records about o_t: index, path, L_t and each span with its
        source state and order (an auditor can rebuild the slot from these and s_t)."""
        return {
            "t": self.t,
            "path": self.path,
            "links": list(self.links),
            "spans": [{"source": r.source, "order": r.order, "text": r.text}
                      for r in self.retrieved],
        }


class Reader:
    """One reading pass over a :class:`Document`: H_t and o_t (Eq. 16).

    ``query`` guides span retrieval (the pass's question). :meth:`observe` retrieves
    from H_{t-1} only; :meth:`save` adds (t, m_t) after the update.
    """

    def __init__(self, doc: Document, query: str, tokenizer: Tokenizer,
                 k: int = MAX_SPANS, span_tokens: int = SPAN_TOKENS) -> None:
        self.doc = doc
        self.query = query
        self.tokenizer = tokenizer
        self.k = k
        self.span_tokens = span_tokens
        self._history: dict[int, str] = {}
        self._step = 0  # the next step to observe

    @property
    def history(self) -> Mapping[int, str]:
        """H: every saved state, by section index (read-only view)."""
        return dict(self._history)

    def observe(self, t: int) -> Observation:
        if t != self._step:
            raise ValueError(f"step {t} observed out of order (expected {self._step})")
        doc = self.doc
        sources = doc.sources(t)
        retrieved: tuple[Retrieved, ...] = ()
        if sources:
            earlier = {i: m for i, m in self._history.items() if i < t}  # H_{t-1}
            retrieved = tuple(
                retrieve(self.query, sources, earlier, self.tokenizer, self.k, self.span_tokens)
            )
        return Observation(t, doc.text(t), doc.path(t), tuple(sources), retrieved)

    def save(self, t: int, memory: str) -> None:
        """Save m_t under t after the update of step t (H_t = H_{t-1} + {(t, m_t)})."""
        if t != self._step:
            raise ValueError(f"memory of step {t} saved out of order (expected {self._step})")
        self._history[t] = memory
        self._step = t + 1

"""The one tree model every format produces (paper Section 3.1).

A node's native serialization is always ``tree.text[node.start:node.end]``.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class ParseError(ValueError):
    """Malformed input at a known place; ``line`` and ``col`` are 1-based."""

    def __init__(self, message: str, line: int, col: int) -> None:
        super().__init__(f"{line}:{col}: {message}")
        self.message = message
        self.line = line
        self.col = col

    @classmethod
    def at(cls, text: str, offset: int, message: str) -> ParseError:
        """Build the error from a character offset into ``text``."""
        line, col = line_col(text, offset)
        return cls(message, line, col)


def line_col(text: str, offset: int) -> tuple[int, int]:
    """1-based (line, column) of a character offset."""
    offset = max(0, min(offset, len(text)))
    line = text.count("\n", 0, offset) + 1
    last_nl = text.rfind("\n", 0, offset)
    return line, offset - last_nl


@dataclass(slots=True, eq=False)
class Node:
    """One node of a hierarchical document.

    ``step`` is the path step appended to the parent's path (Eq. 12): ``.key``,
    ``['odd key']``, ``[3]``, ``/div[2]``. ``atomic`` nodes are never split (A.1);
    ``divisible`` leaves may be cut by SplitText inside ``[cut_start, cut_end)`` and
    fragments are re-wrapped in ``quote`` (empty when no re-quoting is needed).
    """

    kind: str
    start: int
    end: int
    step: str = ""
    label: str | int | None = None
    children: list[Node] = field(default_factory=list)
    atomic: bool = False
    divisible: bool = False
    cut_start: int = -1
    cut_end: int = -1
    quote: str = ""
    id: int = -1
    parent: Node | None = field(default=None, repr=False)

    @property
    def is_leaf(self) -> bool:
        return not self.children

    @property
    def indivisible(self) -> bool:
        """True when Algorithm 1 must keep this node whole even above the budget."""
        return self.atomic or (not self.children and not self.divisible)


@dataclass(slots=True, eq=False)
class Tree:
    """A parsed document: source text, root node and format name.

    ``root_path`` is the rendering of pi(r) (``$`` for JSON-like formats, ``""`` for
    HTML, whose steps start with ``/``).
    """

    text: str
    root: Node
    format: str
    root_path: str = "$"
    nodes: list[Node] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.index()

    def index(self) -> None:
        """Assign preorder ids and parent pointers (iteratively: deep trees are fine);
        every leaf's children become the one shared ``NO_CHILDREN`` (memory)."""
        nodes: list[Node] = []
        stack = [self.root]
        self.root.parent = None
        while stack:
            node = stack.pop()
            node.id = len(nodes)
            nodes.append(node)
            if not node.children:
                node.children = NO_CHILDREN
                continue
            for child in reversed(node.children):
                child.parent = node
                stack.append(child)
        self.nodes = nodes

    def path(self, node: Node) -> str:
        """pi(v) of Eq. 12, rendered in the format's path syntax."""
        steps: list[str] = []
        cur: Node | None = node
        while cur is not None and cur.parent is not None:
            steps.append(cur.step)
            cur = cur.parent
        rendered = self.root_path + "".join(reversed(steps))
        return rendered or "/"

    def source(self, node: Node) -> str:
        return self.text[node.start : node.end]

    def leaves(self) -> Iterator[Node]:
        return (n for n in self.nodes if not n.children)


#: the children of a leaf: one shared empty tuple rather than an empty list per leaf
#: (~56 bytes each); parsers give it to scalars, and ``Tree.index`` to every other leaf.
#: A leaf is never grown after parsing.
NO_CHILDREN: list[Node] = ()  # type: ignore[assignment]


def key_step(key: str) -> str:
    """Path step of an object key (A.3): ``.key`` for identifiers, ``['key']`` else."""
    if _IDENT.match(key):
        return "." + key
    escaped = key.replace("\\", "\\\\").replace("'", "\\'")
    return f"['{escaped}']"


def index_step(i: int) -> str:
    return f"[{i}]"


class LineIndex:
    """Character offset -> (line, col) in O(log n), for formats reporting many places."""

    def __init__(self, text: str) -> None:
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def line_col(self, offset: int) -> tuple[int, int]:
        i = bisect.bisect_right(self.starts, offset) - 1
        return i + 1, offset - self.starts[i] + 1

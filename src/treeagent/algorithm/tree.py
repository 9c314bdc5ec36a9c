"""The one tree model every format produces (paper Section 3.1).

A node's native serialization is always ``tree.text[node.start:node.end]``.
"""

from __future__ import annotations

import bisect
import contextlib
import gc
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


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while a tree is built or sectioned: it
    would rescan the growing tree (every node is a container object) over and over, and
    nothing made there is cyclic garbage; it runs again afterwards as before."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def line_col(text: str, offset: int) -> tuple[int, int]:
    """1-based (line, column) of a character offset."""
    offset = max(0, min(offset, len(text)))
    line = text.count("\n", 0, offset) + 1
    last_nl = text.rfind("\n", 0, offset)
    return line, offset - last_nl


class Node:
    """One node of a hierarchical document.

    ``step`` is the path step appended to the parent's path (Eq. 12): ``.key``,
    ``['odd key']``, ``[3]``, ``/div[2]``. ``atomic`` nodes are never split (A.1);
    ``divisible`` leaves may be cut by SplitText inside ``[cut_start, cut_end)`` and
    fragments are re-wrapped in ``quote`` (empty when no re-quoting is needed).

    Memory (a document has ~30,000 nodes per MB): ten slots; ``atomic``, ``divisible``
    and ``quote`` are read from one shared tuple per combination, and the two cut
    offsets are packed into one int (``_cut``, None when both are -1). Equality is
    identity.
    """

    __slots__ = ("kind", "start", "end", "step", "label", "children", "id", "parent",
                 "_leaf", "_cut")

    def __init__(
        self, kind: str, start: int, end: int, step: str = "",
        label: str | int | None = None, children: list[Node] | None = None,
        atomic: bool = False, divisible: bool = False, cut_start: int = -1,
        cut_end: int = -1, quote: str = "", id: int = -1, parent: Node | None = None,
    ) -> None:
        self.kind = kind
        self.start = start
        self.end = end
        self.step = step
        self.label = label
        self.children = [] if children is None else children
        self.id = id
        self.parent = parent
        if atomic or divisible or quote:  # (the common cases inline: parsing speed)
            leaf = _LEAF_FLAGS.get((atomic, divisible, quote))
            self._leaf = _leaf_flags(atomic, divisible, quote) if leaf is None else leaf
        else:
            self._leaf = _PLAIN
        if cut_start == -1 and cut_end == -1:
            self._cut = None
        elif 0 <= cut_start and 0 <= cut_end < 0xFFFFFFFF:
            self._cut = ((cut_start + 1) << 32) | (cut_end + 1)  # = _pack_cut
        else:
            self._cut = _pack_cut(cut_start, cut_end)

    def __repr__(self) -> str:
        return (f"Node(kind={self.kind!r}, start={self.start}, end={self.end}, "
                f"step={self.step!r}, label={self.label!r}, children={self.children!r}, "
                f"atomic={self.atomic}, divisible={self.divisible}, "
                f"cut_start={self.cut_start}, cut_end={self.cut_end}, quote={self.quote!r}, "
                f"id={self.id})")

    @property
    def atomic(self) -> bool:
        return self._leaf[0]

    @atomic.setter
    def atomic(self, value: bool) -> None:
        self._leaf = _leaf_flags(value, self._leaf[1], self._leaf[2])

    @property
    def divisible(self) -> bool:
        return self._leaf[1]

    @divisible.setter
    def divisible(self, value: bool) -> None:
        self._leaf = _leaf_flags(self._leaf[0], value, self._leaf[2])

    @property
    def quote(self) -> str:
        return self._leaf[2]

    @quote.setter
    def quote(self, value: str) -> None:
        self._leaf = _leaf_flags(self._leaf[0], self._leaf[1], value)

    @property
    def cut_start(self) -> int:
        return -1 if self._cut is None else _unpack_cut(self._cut)[0]

    @cut_start.setter
    def cut_start(self, value: int) -> None:
        self._set_cut(value, self.cut_end)

    @property
    def cut_end(self) -> int:
        return -1 if self._cut is None else _unpack_cut(self._cut)[1]

    @cut_end.setter
    def cut_end(self, value: int) -> None:
        self._set_cut(self.cut_start, value)

    def _set_cut(self, start: int, end: int) -> None:
        self._cut = None if start == -1 and end == -1 else _pack_cut(start, end)

    @property
    def is_leaf(self) -> bool:
        return not self.children

    @property
    def indivisible(self) -> bool:
        """True when Algorithm 1 must keep this node whole even above the budget."""
        return self._leaf[0] or (not self.children and not self._leaf[1])


#: one (atomic, divisible, quote) tuple per combination, shared by every node
_LEAF_FLAGS: dict[tuple[bool, bool, str], tuple[bool, bool, str]] = {}
_PLAIN = (False, False, "")
_LEAF_FLAGS[_PLAIN] = _PLAIN
_CUT_BITS = 32  # Node.__init__ writes these out
_CUT_MASK = (1 << _CUT_BITS) - 1


def _leaf_flags(atomic: bool, divisible: bool, quote: str) -> tuple[bool, bool, str]:
    key = (bool(atomic), bool(divisible), quote)
    hit = _LEAF_FLAGS.get(key)
    if hit is None:
        hit = _LEAF_FLAGS[key] = key
    return hit


def _pack_cut(start: int, end: int) -> int | tuple[int, int]:
    """Both cut offsets (each >= -1) in one int: one object of 32 bytes for texts below
    2**28 characters instead of two; a pair where an offset does not fit 32 bits."""
    if -1 <= end < _CUT_MASK and start >= -1:
        return ((start + 1) << _CUT_BITS) | (end + 1)
    return (start, end)


def _unpack_cut(packed: int | tuple[int, int]) -> tuple[int, int]:
    if isinstance(packed, tuple):
        return packed
    return (packed >> _CUT_BITS) - 1, (packed & _CUT_MASK) - 1


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
        every leaf's children become the one shared ``NO_CHILDREN``, every other node's
        a tuple (memory: no list header and no spare capacity)."""
        nodes: list[Node] = []
        stack = [self.root]
        self.root.parent = None
        while stack:
            node = stack.pop()
            node.id = len(nodes)
            nodes.append(node)
            kids = node.children
            if not kids:
                node.children = NO_CHILDREN
                continue
            if type(kids) is not tuple:
                node.children = kids = tuple(kids)
            for child in reversed(kids):
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

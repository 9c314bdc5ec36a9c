"""One JavaScript literal's subtree as the builder reads it (B.1), shared by the builder
(:mod:`treeagent.formats.js_values`) and the json5 cross-check it runs
(:mod:`treeagent.formats.js_crosscheck`), so that neither imports the other's module for it.
"""

from __future__ import annotations

from treeagent.algorithm.tree import Node


class _Literal:
    """One literal's subtree: nodes in preorder with values, JSON-ness and splices."""

    __slots__ = ("nodes", "values", "plain", "vstart", "splices", "depth", "base",
                 "converted")

    def __init__(self, base: str) -> None:
        self.base = base  # rendered path of the literal's node, for messages
        self.nodes: list[Node] = []
        self.values: list[object] = []
        self.plain: list[bool] = []
        self.vstart: list[int] = []
        self.splices: list[tuple[int, int, str]] = []
        self.converted: dict[int, str] = {}  # single-quoted strings as JSON string text
        self.depth = 0

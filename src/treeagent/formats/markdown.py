"""Markdown (CommonMark + GFM tables) as a hierarchical format (paper 3.1, A.1).

Parsed with ``markdown-it-py``, whose block tokens carry their source lines; nothing is
rendered. The tree:

* the root (kind ``document``) spans the text; its children are the blocks before the
  first heading and the top-level heading sections;
* a heading's ``section`` holds everything up to the next heading of the same or a higher
  level (ATX ``##`` and setext headings alike): first its ``heading`` line, then its
  blocks, then its subsections;
* blocks are leaves: ``paragraph``, ``list``, ``table``, ``blockquote``, ``html`` and
  ``text`` (lines no block claims, e.g. link reference definitions) are divisible
  (SplitText prefers line and sentence boundaries); ``code`` (fenced or indented) is
  atomic; ``rule`` (a thematic break) and a leading YAML ``front_matter`` block are
  leaves.

Paths are readable breadcrumbs: ``# Install > ## Linux`` for a section (setext headings
shown with ``#`` marks of their level, a repeated title numbered ``## Linux (2)``) and
``# Install > ## Linux > code 2`` for its second code block. A heading line has the path
of its section. Every non-blank character belongs to exactly one leaf, so sections
cover the document. Any text is valid Markdown: only an empty document has no blocks
(its root is then one divisible leaf).
"""

from __future__ import annotations

import re

from markdown_it import MarkdownIt

from treeagent.algorithm.tree import Node, Tree
from treeagent.formats import Format
from treeagent.formats.sniff import looks_like_markdown

__all__ = ["FORMAT", "parse", "safe_cut"]

_LINE_BREAK = re.compile(r"\r\n?|\n")  # markdown-it's own line splitting
_FRONT_MATTER_END = re.compile(r"(?:---|\.\.\.)[ \t]*\Z")
_LEAF_KINDS = {
    "paragraph_open": "paragraph", "bullet_list_open": "list", "ordered_list_open": "list",
    "table_open": "table", "blockquote_open": "blockquote", "html_block": "html",
    "fence": "code", "code_block": "code", "hr": "rule",
}
_PARSER = MarkdownIt("commonmark").enable("table")


def _line_starts(text: str) -> list[int]:
    return [0] + [m.end() for m in _LINE_BREAK.finditer(text)]


def _front_matter_lines(lines: list[str]) -> int:
    """Number of lines of a leading ``---`` ... ``---``/``...`` YAML block (0 if none)."""
    if not lines or lines[0].rstrip(" \t") != "---":
        return 0
    for i in range(1, len(lines)):
        if _FRONT_MATTER_END.match(lines[i]):
            return i + 1
    return 0


def _trimmed(text: str, start: int, end: int, lead: str = " \t\r\n") -> tuple[int, int]:
    """``[start, end)`` without trailing blank space and leading ``lead`` characters."""
    while end > start and text[end - 1] in " \t\r\n":
        end -= 1
    while start < end and text[start] in lead:
        start += 1
    return start, end


def _leaf(kind: str, start: int, end: int) -> Node:
    if kind == "code":
        return Node(kind, start, end, atomic=True)
    if kind == "rule":
        return Node(kind, start, end)
    return Node(kind, start, end, divisible=True, cut_start=start, cut_end=end)


def _blocks(text: str) -> list[tuple[Node, int, str]]:
    """Top-level blocks in order as (node, heading level or 0, heading title)."""
    starts = _line_starts(text)
    lines = [text[a:b] for a, b in zip(starts, starts[1:] + [len(text)], strict=True)]
    fm = _front_matter_lines([line.rstrip("\r\n") for line in lines])
    source = "\n" * fm + "".join(lines[fm:]) if fm else text  # same line numbers
    out: list[tuple[Node, int, str]] = []
    if fm:
        out.append((_leaf("front_matter", *_trimmed(text, 0, starts[fm] if fm < len(starts)
                                                  else len(text))), 0, ""))
    tokens = _PARSER.parse(source)
    for i, tok in enumerate(tokens):
        if tok.level != 0 or tok.nesting < 0 or tok.map is None:
            continue
        a, b = tok.map
        start, end = _trimmed(text, starts[a], starts[b] if b < len(starts) else len(text),
                              "\r\n")  # a block keeps its indentation
        if start >= end:
            continue
        if tok.type == "heading_open":
            title = tokens[i + 1].content.strip() if i + 1 < len(tokens) else ""
            out.append((Node("heading", start, end, divisible=True, cut_start=start,
                             cut_end=end), int(tok.tag[1:]), title))
        else:
            out.append((_leaf(_LEAF_KINDS.get(tok.type, "text"), start, end), 0, ""))
    return _with_unclaimed(text, out)


def _with_unclaimed(text: str, blocks: list[tuple[Node, int, str]]
                    ) -> list[tuple[Node, int, str]]:
    """Blocks plus a ``text`` leaf for each run of non-blank characters no block covers."""
    out: list[tuple[Node, int, str]] = []
    pos = 0
    for block in [*blocks, (None, 0, "")]:
        node = block[0]
        stop = len(text) if node is None else node.start
        if pos < stop:
            a, b = _trimmed(text, pos, stop)
            if a < b:
                out.append((_leaf("text", a, b), 0, ""))
        if node is not None:
            out.append(block)  # type: ignore[arg-type]
            pos = max(pos, node.end)
    return out


def _step(parent: Node, name: str) -> str:
    return name if parent.kind == "document" else " > " + name


def _add(parent: Node, child: Node, name: str, counts: dict[int, dict[str, int]]) -> None:
    """Append ``child`` to ``parent`` with a step unique among its siblings."""
    seen = counts.setdefault(id(parent), {})
    key = name if child.kind == "section" else child.kind
    seen[key] = seen.get(key, 0) + 1
    n = seen[key]
    if child.kind == "section":
        shown = name if n == 1 else f"{name} ({n})"
    else:
        shown = f"{child.kind.replace('_', ' ')} {n}"
    child.step = _step(parent, shown)
    child.parent = parent
    parent.children.append(child)


def parse(text: str) -> Tree:
    """Markdown ``text`` as a heading tree (module docstring); never raises on content."""
    root = Node("document", 0, len(text))
    counts: dict[int, dict[str, int]] = {}
    stack: list[tuple[int, Node]] = [(0, root)]  # (heading level, node); root level 0
    for node, level, title in _blocks(text):
        if level:
            while stack[-1][0] >= level:
                stack.pop()
            section = Node("section", node.start, node.end, label=title)
            _add(stack[-1][1], section, f"{'#' * level} {title}".rstrip(), counts)
            node.label = title
            section.children.append(node)  # the heading line: the section's own path
            node.parent = section
            stack.append((level, section))
        else:
            _add(stack[-1][1], node, "", counts)
    _close_sections(root)
    if not root.children:
        root.divisible, root.cut_start, root.cut_end = True, 0, len(text)
    return Tree(text, root, "markdown", "")


def _close_sections(root: Node) -> None:
    """A section ends where its last descendant ends (postorder, iteratively)."""
    order: list[Node] = []
    stack = [root]
    while stack:
        node = stack.pop()
        order.append(node)
        stack.extend(node.children)
    for node in reversed(order):
        if node.kind == "section" and node.children:
            node.end = max(node.end, node.children[-1].end)


def safe_cut(text: str, pos: int) -> bool:
    """May SplitText cut at ``pos``? Anywhere but inside a CR LF line break."""
    return not (0 < pos < len(text) and text[pos - 1] == "\r" and text[pos] == "\n")


FORMAT = Format("markdown", "Markdown", (".md", ".markdown", ".mdown", ".mkd"), parse,
                safe_cut, sniff=looks_like_markdown)

"""Tree-sitter JavaScript syntax for :mod:`treeagent.formats.javascript` (B.1).

The one place that loads the tree-sitter JavaScript grammar (:func:`syntax_root`, used by
every module that needs a JavaScript syntax tree), plus the syntax-level helpers: byte ->
character offsets, the first syntax error and its message, the bindings of a top-level
statement, and tree-sitter's view of a text (:func:`_ts_bytes`, :func:`_syntax_tree`).
"""

from __future__ import annotations

import bisect
import copy
import re
from collections.abc import Callable, Iterable, Iterator

import tree_sitter_javascript
from tree_sitter import Language, Parser
from tree_sitter import Node as TSNode

from treeagent.algorithm.tree import ParseError

__all__ = ["LANGUAGE", "syntax_root"]

LANGUAGE = Language(tree_sitter_javascript.language())
_UNICODE_SPACE = re.compile(r"[\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000\ufeff]")
_NON_ASCII = re.compile(r"[^\x00-\x7f]")


def syntax_root(data: bytes) -> TSNode:
    """The root node of tree-sitter's JavaScript syntax tree for ``data`` (UTF-8 bytes)."""
    return Parser(LANGUAGE).parse(data).root_node


class _Offsets:
    """Tree-sitter byte offsets -> str character offsets (exact; identity for ASCII)."""

    def __init__(self, text: str, shift: int) -> None:
        self.shift = shift
        self.ascii = text.isascii()
        self.ends: list[int] = []  # byte end of each multi-byte character
        self.extra: list[int] = []  # extra bytes up to and including that character
        if not self.ascii:
            extra = 0
            for m in _NON_ASCII.finditer(text):
                o = ord(m.group())
                width = 2 if o < 0x800 else 3 if o < 0x10000 else 4
                extra += width - 1
                self.ends.append(m.start() + extra + 1)
                self.extra.append(extra)

        self.char: Callable[[int], int] = self._ascii if self.ascii else self._general

    def moved(self, by: int) -> _Offsets:
        """The same map for a syntax tree of the text's part starting at byte ``by``."""
        out = copy.copy(self)
        out.shift = self.shift - by
        out.char = out._ascii if out.ascii else out._general
        return out

    def _ascii(self, byte: int) -> int:
        b = byte - self.shift
        return b if b > 0 else 0

    def _general(self, byte: int) -> int:
        b = byte - self.shift
        if b <= 0:
            return 0
        k = bisect.bisect_right(self.ends, b)
        return b - self.extra[k - 1] if k else b


class _Reject(Exception):
    """Internal: a rejection at a character offset, turned into ParseError by callers."""

    def __init__(self, offset: int, message: str) -> None:
        super().__init__(message)
        self.offset = offset
        self.message = message


def first_syntax_error(root: TSNode) -> TSNode | None:
    """The first ERROR or MISSING node in document order, or None."""
    if not root.has_error:
        return None
    stack = [root]
    while stack:
        n = stack.pop()
        if n.is_error or n.is_missing:
            return n
        stack.extend(ch for ch in reversed(n.children) if ch.has_error or ch.is_missing)
    return root


def _syntax_error(n: TSNode, data_end: int) -> tuple[int, str]:
    """(byte offset, message) for the syntax error node ``n``: a MISSING token names
    what is missing; an ERROR running to the end of input with an unclosed bracket
    points at that bracket."""
    if n.is_missing:
        return n.start_byte, f"syntax error (missing {n.type!r})"
    if n.end_byte >= data_end:
        open_stack: list[TSNode] = []
        for ch in n.children:
            t = ch.type
            if t in ("{", "[", "("):
                open_stack.append(ch)
            elif t in ("}", "]", ")") and open_stack:
                open_stack.pop()
        if open_stack:
            return open_stack[-1].start_byte, f"syntax error (unclosed {open_stack[-1].type!r})"
    return n.start_byte, "syntax error"


def _unparen(ts: TSNode) -> TSNode:
    while ts.type == "parenthesized_expression":
        inner = [ch for ch in ts.named_children if ch.type != "comment"]
        if len(inner) != 1:
            break
        ts = inner[0]
    return ts


def _bindings(stmt: TSNode, strict: bool = True) -> list[tuple[str, TSNode, TSNode]] | None:
    """(label, value, span node) of each binding of a top-level statement; None when the
    statement is no binding. Patterns and missing initializers raise _Reject (at a BYTE
    offset: callers convert it) when ``strict``, else they are skipped."""
    t = stmt.type
    decl = stmt
    if t == "export_statement":
        value = stmt.child_by_field_name("value")
        if value is not None:
            if any(ch.type == "default" for ch in stmt.children):
                return [("default", value, stmt)]
            return None
        decl = stmt.child_by_field_name("declaration")
        if decl is None:
            return None
        t = decl.type
    if t in ("lexical_declaration", "variable_declaration"):
        out = []
        for d in decl.named_children:
            if d.type != "variable_declarator":
                continue
            name = d.child_by_field_name("name")
            value = d.child_by_field_name("value")
            if name.type != "identifier":
                if not strict:
                    continue
                raise _Reject(name.start_byte, "destructuring pattern is not a static initializer")
            if value is None:
                if not strict:
                    continue
                raise _Reject(d.start_byte,
                              f"declaration of {name.text.decode()!r} has no initializer")
            out.append((name.text.decode(), value, d))
        return out
    if t == "expression_statement":
        expr = stmt.named_children[0] if stmt.named_child_count else None
        if expr is None or expr.type != "assignment_expression":
            return None
        left = expr.child_by_field_name("left")
        right = expr.child_by_field_name("right")
        if left.type != "member_expression":
            return None
        obj = left.child_by_field_name("object")
        prop = left.child_by_field_name("property")
        if obj.type != "identifier" or prop is None or prop.type != "property_identifier":
            return None
        if any(ch.type == "optional_chain" for ch in left.children):
            return None
        if obj.text == b"module" and prop.text == b"exports":
            return [("module.exports", right, stmt)]
        if obj.text == b"exports":
            return [(prop.text.decode(), right, stmt)]
    return None


def _statement_kind(stmt: TSNode) -> str:
    return stmt.type.replace("_", " ")


def _ts_bytes(text: str) -> bytes:
    """The bytes tree-sitter reads: UTF-8 with Unicode spaces (and the BOM) as ASCII
    spaces of the same byte length (tree-sitter's ASI scanner does not take them for
    white space) and NUL (which tree-sitter takes for end of input) as U+0001. Both are
    equally valid or invalid wherever they stand in JS, and byte offsets are unchanged;
    values are always read from the text itself."""
    if not text.isascii():
        text = _UNICODE_SPACE.sub(lambda m: " " * len(m.group().encode()), text)
    data = text.encode("utf-8", "surrogatepass")
    return data.replace(b"\0", b"\x01") if "\0" in text else data


def _syntax_tree(text: str, prefix: str = "") -> tuple[TSNode, _Offsets]:
    """Tree-sitter's root for ``prefix + text`` and its offsets into ``text``;
    ParseError at the first syntax error."""
    data = _ts_bytes(prefix + text)
    offsets = _Offsets(text, len(prefix))
    root_ts = syntax_root(data)
    err = first_syntax_error(root_ts)
    if err is not None:
        at, message = _syntax_error(err, len(data.rstrip()))
        raise ParseError.at(text, offsets.char(at), message)
    return root_ts, offsets


def _significant(root_ts: TSNode) -> list[TSNode]:
    return [s for s in root_ts.children
            if s.type not in ("comment", "hash_bang_line", "empty_statement")]


def _iter_significant(root_ts: TSNode) -> Iterator[TSNode]:
    """``_significant`` one statement at a time, each a fresh node object: tree-sitter
    caches a node's ``children`` on the object, so a statement's subtree of node objects
    is freed once the caller is done with it (memory: ~10 MB per MB of code otherwise)."""
    for i in range(root_ts.child_count):
        stmt = root_ts.child(i)
        if stmt is not None and stmt.type not in ("comment", "hash_bang_line", "empty_statement"):
            yield stmt



def _program_bindings(root_ts: TSNode, c: Callable[[int], int]
                      ) -> Iterator[tuple[str, TSNode, int, int]]:
    """Each top-level binding of a program of initializers as (label, value, start, end)
    (a declaration of several bindings is split between them); _Reject for a statement
    that is not a binding and for a duplicate name."""
    return _parts_bindings([(root_ts, c)])


def _parts_bindings(parts: Iterable[tuple[TSNode, Callable[[int], int]]]
                    ) -> Iterator[tuple[str, TSNode, int, int]]:
    """:func:`_program_bindings` over the syntax trees of consecutive parts of one
    program (each with its byte -> character map), one part's tree at a time."""
    labels: set[str] = set()
    prologue = True
    for root_ts, c in parts:
        for found in _statement_bindings(root_ts, c, labels, prologue):
            if found is None:
                prologue = False
                continue
            yield found


def _statement_bindings(root_ts: TSNode, c: Callable[[int], int], labels: set[str],
                        prologue: bool) -> Iterator[tuple[str, TSNode, int, int] | None]:
    """The bindings of one syntax tree's statements; None once the prologue is over."""
    for stmt in _iter_significant(root_ts):
        if prologue and stmt.type == "expression_statement" and stmt.named_child_count == 1 \
                and stmt.named_children[0].type == "string":
            continue  # directive prologue ("use strict")
        if prologue:
            prologue = False
            yield None
        try:
            found = _bindings(stmt)
        except _Reject as rej:
            raise _Reject(c(rej.offset), rej.message) from None
        if found is None:
            raise _Reject(c(stmt.start_byte),
                          f"statement is not a static initializer ({_statement_kind(stmt)})")
        s_start, s_end = c(stmt.start_byte), c(stmt.end_byte)
        for i, (label, value_ts, span_ts) in enumerate(found):
            start = s_start if i == 0 else c(span_ts.start_byte)
            end = s_end if i == len(found) - 1 else c(span_ts.end_byte)
            if label in labels:
                raise _Reject(c(span_ts.start_byte), f"duplicate binding {label!r}")
            labels.add(label)
            yield label, _unparen(value_ts), start, end

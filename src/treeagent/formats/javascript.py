"""Static JavaScript initializers (paper B.1 "JavaScript dataset"; 3.1, A.1, A.3).

Object and array initializers written in JavaScript syntax are parsed with tree-sitter
(``tree-sitter-javascript``) and never executed. Every accepted literal is interpreted
twice -- once from the tree-sitter CST by this module, once by an independent JSON5
reader -- and both must give the same static value (B.1), else ``ParseError``.

Accepted inputs:

* one bare object/array literal (JSON5 style, optionally in parentheses, optional
  ``;``): that literal is the tree root;
* a program of static bindings: ``const|let|var NAME = <literal>`` (several declarators
  allowed), ``export const|let|var ...``, ``export default <literal>``,
  ``module.exports = <literal>`` and ``exports.NAME = <literal>``. The root (kind
  ``program``) spans the text with one child per binding: label ``NAME``, ``"default"``
  or ``"module.exports"``; step ``key_step(label)`` (``.config``, ``.default``,
  ``['module.exports']`` -- a dotted label is bracket-quoted, so it cannot be confused
  with a binding ``module`` holding a key ``exports``). A binding node takes its
  literal's kind and children and spans its whole statement (``const config = {...};``);
  of a statement with several declarators the first binding starts at the keyword, the
  last ends at the statement end and each spans its own declarator in between, so
  sibling ranges stay disjoint. Comments, a hashbang line, empty statements and a
  leading directive prologue (``"use strict";``) are skipped; any other statement is a
  ``ParseError`` ("statement is not a static initializer"). Duplicate binding names
  are rejected.

Inside literals objects and arrays are internal nodes; a member node spans ``key: value``
(label = the key as JavaScript reads it, numeric keys in their JS string form:
``1.50`` -> ``"1.5"``, ``0x10`` -> ``"16"``); strings are divisible leaves cut inside
their quotes; numbers (also ``NaN``, ``Infinity``, signed) and ``true``/``false``/``null``
are leaves; a template literal without substitutions is an atomic ``template`` leaf.
Everything else is rejected with line:col and a message naming it. With
``dynamic="atomic"`` such expressions are kept as atomic ``expression`` leaves instead
(A.1); an object with a spread, a computed key or an accessor, or an array with a spread
or a hole, then becomes one atomic ``expression`` as its members cannot be known.

Cross-check (B.1). The reference reading of a literal is ``json5.loads`` of its source
text, with these splices the JSON5 grammar needs: a numeric key becomes its quoted JS
string form (json5 reads the key's number on its own), a template literal the JSON
string of its cooked value (so a template is checked only by tree-sitter's parse and
our cooking), an ``\\u{...}`` escape the equivalent ``\\uXXXX`` escape(s), an atomic
expression ``null`` (not compared). With the default ``crosscheck="mixed"`` each maximal
subtree whose source is strict JSON (and each single-quoted string with JSON-only
escapes, its quotes swapped) is read by the C ``json`` decoder in one batch instead:
JSON5 is a superset of JSON with the same meaning, and pure-Python json5 costs ~100 us
per value; ``crosscheck="json5"`` sends everything to json5. ``crosscheck="twin"`` (what
``formats.parse`` and so sectioning use) first rewrites the whole literal into its JSON
twin (bare keys quoted, single quotes swapped, comments and trailing commas dropped) for
the C decoder, and falls back to ``mixed`` where the literal has syntax the rewrite does
not cover: same acceptances, values and errors (``js_crosscheck``). JavaScript that json5 cannot
read (``0o17``, ``1_000``, ``- 1``, legacy octal escapes) is rejected as a disagreement.
Comparison: same types (json5's int ``0`` for the integer literal ``-0`` matches our
``-0.0``: Python ints have no negative zero), zeros by sign, NaN equal to NaN, same key
order; json5's surrogate-pair code units are joined first. Deep literals run json5 in a
thread with a large stack and recursion limit; past that, a clear ``ParseError``.

``safe_cut`` (A.1) keeps escapes (``\\n``, ``\\xHH``, ``\\uXXXX``, ``\\u{...}``, legacy
octal, backslash-newline) and surrogate pairs (raw or escaped) whole.

Whole files -- statements, functions and classes around static initializers -- are read
by :mod:`treeagent.formats.js_module` (:func:`parse_file`, what ``FORMAT`` and so
``treeagent sections`` use); the benchmark reads static initializers only.

Modules by job: ``js_syntax`` (the tree-sitter grammar, loaded once, and syntax-level
helpers), ``js_values`` (scalar decoding and the literal builder), ``js_crosscheck``
(the json5 cross-check); this module: the public API, the safe cuts and ``FORMAT``.
"""


from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from tree_sitter import Node as TSNode

from treeagent.algorithm.tree import LineIndex, Node, ParseError, Tree
from treeagent.formats import Format
from treeagent.formats.comments import js_after, js_lines_before, keep_comments
from treeagent.formats.escapes import backslash_run, key_step_printable
from treeagent.formats.js_syntax import (
    _bindings,
    _Offsets,
    _parts_bindings,
    _program_bindings,
    _Reject,
    _significant,
    _statement_kind,
    _syntax_error,
    _syntax_tree,
    _ts_bytes,
    _unparen,
    first_syntax_error,
    syntax_root,
)
from treeagent.formats.js_values import Crosscheck, Dynamic, Expression, _Builder

__all__ = [
    "Expression", "Initializer", "Rejection", "find_initializers", "parse", "safe_cut",
    "static_value",
]

_BARE_PREFIX = "_="  # a bare `{...}` would parse as a block statement: parse `_={...}`
_LEAD = re.compile(r"(?:\ufeff|\s+|//[^\n\r\u2028\u2029]*|/\*.*?\*/|#![^\n]*)*", re.S)
_OCTAL_DIGITS = frozenset("01234567")


@dataclass(frozen=True, slots=True)
class Initializer:
    """A static top-level initializer found by :func:`find_initializers`.

    ``start``/``end``: the binding's span (as in :func:`parse`: its whole statement);
    ``value_start``/``value_end``: the literal's; ``line``: 1-based line of ``start``;
    ``value``: the checked static value; ``tree``: the literal as a Tree over the file
    text (root = the literal, so paths read ``$.a[0]``).
    """

    name: str
    kind: str
    start: int
    end: int
    value_start: int
    value_end: int
    line: int
    value: Any
    tree: Tree


@dataclass(frozen=True, slots=True)
class Rejection:
    """A top-level object/array initializer that is not static, and why."""

    name: str
    start: int
    end: int
    line: int
    col: int
    reason: str


def _parse(text: str, dynamic: Dynamic, crosscheck: Crosscheck,
           values: bool = True) -> tuple[Tree, object]:
    """(tree, static value); the value is None unless ``values`` (a program's bindings'
    values are then not kept: memory)."""
    lead = _LEAD.match(text)
    first = text[lead.end() : lead.end() + 1] if lead else ""
    bare = first in ("{", "[", "(")
    if not bare and len(text) > _PART_CHARS:
        try:
            return _parse_program_parts(text, _Builder(text, _Offsets(text, 0), dynamic,
                                                       crosscheck), values)
        except _NoParts:
            pass  # the whole text at once: same tree, or the same error
    root_ts, offsets = _syntax_tree(text, _BARE_PREFIX if bare else "")
    builder = _Builder(text, offsets, dynamic, crosscheck)
    try:
        if bare:
            return _parse_bare(text, root_ts, builder)
        return _parse_program(text, [(root_ts, offsets.char)], builder, values)
    except _Reject as rej:
        raise ParseError.at(text, rej.offset, rej.message) from None


#: a program longer than this many characters is parsed in parts of about this size
_PART_CHARS = 1 << 16


class _NoParts(Exception):
    """The text cannot be read part by part as one program: read it whole."""


def _program_parts(text: str, builder: _Builder
                   ) -> Iterator[tuple[TSNode, Callable[[int], int]]]:
    """Tree-sitter's syntax tree of each part of a program, one at a time (memory: the
    whole text's tree takes ~9 MB per MB), with its byte -> character map.

    A part ends at the first ``;`` followed by a line break ``_PART_CHARS`` characters
    or more into it. It is accepted only where its own parse has no error, no hashbang
    line past the first part, and its last statement ends at that ``;``: the next part
    then starts where a program starts (no token, comment, string or template spans
    the cut, and a statement ended by ``;`` takes nothing after it; ``else`` or
    ``while`` after it would fail the next part's own parse). Else ``_NoParts``.
    """
    offsets = builder.off
    a = 0
    byte = 0
    n = len(text)
    while a < n:
        b = text.find(";\n", a + _PART_CHARS)
        b = n if b < 0 else b + 1
        data = _ts_bytes(text[a:b])
        root_ts = syntax_root(data)
        last = root_ts.child(root_ts.child_count - 1) if root_ts.child_count else None
        if root_ts.has_error or (b < n and (last is None or last.end_byte != len(data))) or (
                a > 0 and any(ch.type == "hash_bang_line" for ch in root_ts.children)):
            raise _NoParts
        builder.use_offsets(offsets.moved(byte))  # the builder reads this part's nodes
        yield root_ts, builder.off.char
        byte += len(data)
        a = b


def _parse_program_parts(text: str, builder: _Builder, values: bool) -> tuple[Tree, object]:
    """:func:`_parse_program` over the program's parts; ``_NoParts`` for any error (the
    whole text's parse then reports the first one, a syntax error first)."""
    try:
        return _parse_program(text, _program_parts(text, builder), builder, values)
    except (_Reject, ParseError):
        raise _NoParts from None



def _parse_bare(text: str, root_ts: TSNode, builder: _Builder) -> tuple[Tree, object]:
    c = builder.off.char
    stmts = _significant(root_ts)
    expr = stmts[0].named_children[0]  # `_=<text>`: an assignment, or a sequence
    if expr.type != "assignment_expression":  # `_={...}, x`
        culprit = expr.named_children[1] if expr.named_child_count > 1 else expr
        raise _Reject(c(culprit.start_byte),
                      "sequence expression is not a static value (a comma after the literal)")
    value = _unparen(expr.child_by_field_name("right"))
    for extra in stmts[1:]:
        raise _Reject(c(extra.start_byte),
                      f"statement is not a static initializer ({_statement_kind(extra)} after "
                      "the literal)")
    if value.type not in ("object", "array") and not builder.atomic_mode:
        raise _Reject(c(value.start_byte), "a bare literal must be an object or an array")
    lit = builder.build(value, c(value.start_byte), "", None)
    builder.check(lit)
    return Tree(text, lit.nodes[0], "javascript", "$"), lit.values[0]



def _parse_program(text: str, parts: Iterable[tuple[TSNode, Callable[[int], int]]],
                   builder: _Builder, values: bool = True) -> tuple[Tree, object]:
    """The program of initializers whose consecutive parts' syntax trees ``parts`` gives
    (each with its byte -> character map); its bindings' values when ``values``."""
    root = Node("program", 0, len(text))
    result: dict[str, object] | None = {} if values else None
    for label, value_ts, start, end in _parts_bindings(parts):
        lit = builder.build(value_ts, start, key_step_printable(label), label)
        builder.check(lit)
        node = lit.nodes[0]
        node.end = end
        root.children.append(node)
        if result is not None:
            result[label] = lit.values[0]
        del lit
    if not root.children:
        raise ParseError.at(text, 0, "no static initializer found")
    return Tree(text, root, "javascript", "$"), result


def binding_spans(text: str) -> list[tuple[int, int]]:
    """The character span of each top-level binding of a program of initializers, as
    :func:`parse` would cut it, without building or cross-checking the values: a syntax
    check of the whole text and the statement structure only (for re-reading long
    compositions whose values are checked unit by unit). ParseError as :func:`parse`."""
    root_ts, offsets = _syntax_tree(text)
    try:
        spans = [(start, end) for _, _, start, end in _program_bindings(root_ts, offsets.char)]
    except _Reject as rej:
        raise ParseError.at(text, rej.offset, rej.message) from None
    if not spans:
        raise ParseError.at(text, 0, "no static initializer found")
    return spans


def parse(text: str, *, dynamic: Dynamic = "reject", crosscheck: Crosscheck = "mixed") -> Tree:
    """Parse static JS initializers into a Tree (B.1); ParseError at line:col otherwise.

    ``dynamic="atomic"`` keeps non-static expressions as atomic ``expression`` leaves
    instead of rejecting them (A.1); ``crosscheck`` chooses the reference reader (module
    docstring).
    """
    tree = _parse(text, dynamic, crosscheck, values=False)[0]
    if "/" in text:  # comments stay with their neighbour (after the checks: spans only),
        # inside each binding: bindings keep the spans binding_spans gives
        program = tree.root.kind == "program"
        for top in tree.root.children if program else [tree.root]:
            if text.find("//", top.start, top.end) >= 0 or \
                    text.find("/*", top.start, top.end) >= 0:  # else no comment to keep
                keep_comments(text, top, top.start, js_lines_before, js_after, fixed_root=True)
    return tree


def static_value(text: str, *, dynamic: Dynamic = "reject",
                 crosscheck: Crosscheck = "mixed") -> object:
    """The checked static value: the literal, or for a program a dict name -> value."""
    return _parse(text, dynamic, crosscheck)[1]


def find_initializers(text: str, *, crosscheck: Crosscheck = "mixed"
                      ) -> tuple[list[Initializer], list[Rejection]]:
    """Scan any JS source for top-level object/array initializers (B.1 record sources).

    Looks at top-level (and exported) declarations, ``export default``,
    ``module.exports =`` and ``exports.NAME =``; other statements are ignored. Each
    object/array initializer is either accepted (static and cross-checked) or listed as
    a rejection with its reason; syntax errors reject only the initializers they touch.
    """
    data = _ts_bytes(text)
    offsets = _Offsets(text, 0)
    c = offsets.char
    lines = LineIndex(text)
    root_ts = syntax_root(data)
    accepted: list[Initializer] = []
    rejected: list[Rejection] = []
    for stmt in root_ts.children:
        found = _bindings(stmt, strict=False) or []
        s_start, s_end = c(stmt.start_byte), c(stmt.end_byte)
        for i, (label, value_ts, span_ts) in enumerate(found):
            value_ts = _unparen(value_ts)
            if value_ts.type not in ("object", "array"):
                continue
            start = s_start if i == 0 else c(span_ts.start_byte)
            end = s_end if i == len(found) - 1 else c(span_ts.end_byte)
            line, _ = lines.line_col(start)
            err = first_syntax_error(value_ts) if value_ts.has_error else None
            try:
                if err is not None:
                    at, message = _syntax_error(err, len(data.rstrip()))
                    raise _Reject(c(at), message)
                builder = _Builder(text, offsets, "reject", crosscheck)
                lit = builder.build(value_ts, c(value_ts.start_byte),
                                    key_step_printable(label), label)
                builder.check(lit)
            except _Reject as rej:
                rl, rc = lines.line_col(rej.offset)
                rejected.append(Rejection(label, start, end, rl, rc, rej.message))
                continue
            accepted.append(Initializer(
                label, value_ts.type, start, end, c(value_ts.start_byte), c(value_ts.end_byte),
                line, lit.values[0], Tree(text, lit.nodes[0], "javascript", "$")))
    return accepted, rejected


# ---------------------------------------------------------------- SplitText rule


def _escape_length(text: str, s: int) -> int:
    """Length of the escape sequence whose backslash is at ``s``."""
    nxt = text[s + 1 : s + 2]
    if nxt == "u":
        if text[s + 2 : s + 3] == "{":
            close = text.find("}", s + 3, s + 40)
            return close - s + 1 if close >= 0 else 3
        n = 2
        while n < 6 and s + n < len(text) and text[s + n] in "0123456789abcdefABCDEF":
            n += 1
        return n
    if nxt == "x":
        return 4
    if nxt == "\r":
        return 3 if text[s + 2 : s + 3] == "\n" else 2
    if "0" <= nxt <= "7":
        n = 2
        limit = 4 if nxt <= "3" else 3
        while n < limit and text[s + n : s + n + 1] in _OCTAL_DIGITS:
            n += 1
        return n
    return 2


def _unit_before(text: str, pos: int) -> int:
    """The UTF-16 unit (raw char or escape) ending at ``pos``; -1 when none is known."""
    ch = text[pos - 1]
    if ch == "}":
        k = text.rfind("\\u{", max(0, pos - 40), pos)
        if k >= 0 and backslash_run(text, k) % 2 == 0:
            digits = text[k + 3 : pos - 1]
            if digits and all(x in "0123456789abcdefABCDEF" for x in digits):
                return int(digits, 16)
        return -1
    if pos >= 6 and text[pos - 6 : pos - 4] == "\\u" and backslash_run(text, pos - 6) % 2 == 0:
        digits = text[pos - 4 : pos]
        if all(x in "0123456789abcdefABCDEF" for x in digits):
            return int(digits, 16)
    return ord(ch)


def _unit_after(text: str, pos: int) -> int:
    """The UTF-16 unit starting at ``pos`` (whose backslash, if any, starts an escape)."""
    if text[pos : pos + 2] == "\\u":
        if text[pos + 2 : pos + 3] == "{":
            close = text.find("}", pos + 3, pos + 40)
            digits = text[pos + 3 : close] if close >= 0 else ""
        else:
            digits = text[pos + 2 : pos + 6]
        if digits and all(x in "0123456789abcdefABCDEF" for x in digits):
            return int(digits, 16)
        return -1
    return ord(text[pos])


def safe_cut(text: str, pos: int) -> bool:
    """May SplitText cut a JS string at ``pos``? Never inside an escape (``\\n``,
    ``\\xHH``, ``\\uXXXX``, ``\\u{...}``, legacy octal, backslash-newline) nor between
    the halves of a surrogate pair, raw or escaped (A.1)."""
    if pos <= 0 or pos >= len(text):
        return True
    j = text.rfind("\\", max(0, pos - 48), pos)
    if j >= 0:
        run = backslash_run(text, j)  # backslashes before j
        s = j if run % 2 == 0 else j - 1
        if s < pos < s + _escape_length(text, s):
            return False
    return not (0xD800 <= _unit_before(text, pos) <= 0xDBFF
                and 0xDC00 <= _unit_after(text, pos) <= 0xDFFF)


def parse_file(text: str, *, crosscheck: Crosscheck = "mixed") -> Tree:
    """A whole JavaScript file: :func:`parse`'s tree where it accepts the text, else the
    module's statements, functions and classes (:mod:`treeagent.formats.js_module`)."""
    from treeagent.formats import js_module  # it builds on this module

    return js_module.parse(text, crosscheck=crosscheck)


FORMAT = Format("javascript", "JavaScript", (".js", ".mjs", ".cjs", ".json5"),
                functools.partial(parse_file, crosscheck="twin"), safe_cut,
                starts=("const ", "let ", "var ", "export ", "module.exports", "import ",
                        "function ", "class ", "async function ", "'use strict'",
                        '"use strict"', "#!/usr/bin/env node"))

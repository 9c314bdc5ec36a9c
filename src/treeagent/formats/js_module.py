"""Whole JavaScript files as trees (paper 3.1, A.1): what ``treeagent sections`` reads.

A file that :func:`treeagent.formats.javascript.parse` accepts (a bare literal or a
program of static initializers) gets exactly that tree. Any other file that tree-sitter
parses without a syntax error is read as a module:

* the root (kind ``module``) has one child per top-level statement, a comment run
  directly above a statement included;
* a statement binding static literals (``const x = {...}``, ``module.exports = [...]``,
  ``export default {...}``) stays a value tree, as in a program of initializers, so its
  records keep their paths (``$.config.rules[0]``);
* code nodes: functions, classes, methods, object members, declarations and other
  statements. A code node's children are the units inside it -- the statements of its
  blocks, the members of its class or object literal, the elements of an array -- found
  through any expression in between (a callback's statements are units of the call's
  statement); the code between units (a function's signature, ``} else {``, closing
  brackets) is an atomic ``code`` leaf with its parent's path, so every non-blank
  character lies in a leaf. A static literal met inside code is a value tree. A code
  node with no units is an atomic leaf: it cannot be split further.

Steps: a named unit takes ``.name`` (functions, classes, methods, fields, single-binding
declarations, object keys; ``.default``, ``['module.exports']``); others ``[i]``, their
index among the parent's units (a repeated name too). Paths read
``$.DefaultStatsPresetPlugin.apply`` or ``$['module.exports'].create[2]``.

The benchmark reads static initializers only (:func:`javascript.find_initializers`);
this module is for sectioning.
"""

from __future__ import annotations

import re

from tree_sitter import Node as TSNode

from treeagent.algorithm.tree import Node, ParseError, Tree, index_step
from treeagent.formats import javascript as js
from treeagent.formats.comments import js_after, js_lines_before, keep_comments
from treeagent.formats.escapes import key_step_printable
from treeagent.formats.js_syntax import _bindings, _Reject, _syntax_tree, _unparen
from treeagent.formats.js_values import Crosscheck, _Builder

__all__ = ["parse"]

_BARE = re.compile(r"(?:\ufeff|\s+|//[^\n\r\u2028\u2029]*|/\*.*?\*/|#![^\n]*)*[\[{(]", re.S)
_BLANK_LINE = re.compile(r"\n[ \t]*\r?\n")
_BLOCKS = frozenset({"statement_block", "class_body", "switch_body", "program"})
_NOT_UNITS = frozenset({"comment", "empty_statement", "hash_bang_line"})
_KINDS = {
    "function_declaration": "function", "generator_function_declaration": "function",
    "function_expression": "function", "function": "function", "arrow_function": "function",
    "generator_function": "function", "class_declaration": "class", "class": "class",
    "method_definition": "method", "field_definition": "field", "pair": "member",
    "import_statement": "import", "export_statement": "export",
    "lexical_declaration": "declaration", "variable_declaration": "declaration",
    "object": "object", "array": "array", "spread_element": "member",
    "shorthand_property_identifier": "member",
}
_LITERALS = frozenset({"object", "array", "string", "number", "template_string", "true",
                       "false", "null", "unary_expression"})


def parse(text: str, *, crosscheck: Crosscheck = "mixed") -> Tree:
    """The tree of a whole JavaScript file (module docstring); ParseError only for a
    syntax error (or nesting too deep to walk). ``crosscheck`` as in
    :func:`javascript.parse`, for every static literal."""
    try:
        return js.parse(text, crosscheck=crosscheck)
    except ParseError as static_error:
        if _BARE.match(text):  # a JSON5-style literal keeps its own reading's error
            try:
                module = _Module(text, crosscheck)
            except ParseError:
                raise static_error from None
            if module.one_literal():
                raise static_error from None
            return module.tree()
        return _Module(text, crosscheck).tree()


class _Module:
    def __init__(self, text: str, crosscheck: Crosscheck) -> None:
        self.text = text
        self.crosscheck = crosscheck
        self.root_ts, self.off = _syntax_tree(text)
        self.c = self.off.char

    def one_literal(self) -> bool:
        """Is the text one object/array literal (a JSON5-style document)?"""
        stmts = [ts for ts in self.root_ts.named_children if ts.type not in _NOT_UNITS]
        return len(stmts) == 1 and stmts[0].type == "expression_statement" and \
            stmts[0].named_child_count == 1 and \
            _unparen(stmts[0].named_children[0]).type in ("object", "array")

    def tree(self) -> Tree:
        root = Node("module", 0, len(self.text))
        try:
            root.children = self._statements()
        except RecursionError:
            raise ParseError.at(self.text, 0, "code nested too deeply to section") from None
        return Tree(self.text, root, "javascript", "$")

    # ------------------------------------------------------------------ top level

    def _statements(self) -> list[Node]:
        out: list[Node] = []
        names: set[str] = set()
        for ts, start in self._members(self.root_ts):
            nodes = self._bindings(ts, start, names)
            if nodes is None:
                nodes = [self._unit(ts, start, self._step(ts, len(out), names))]
            out.extend(nodes)
        return out

    def _bindings(self, stmt: TSNode, start: int, names: set[str]) -> list[Node] | None:
        """Value trees of a statement binding only static values; None otherwise."""
        found = _bindings(stmt, strict=False)
        if not found or len(found) != self._declarators(stmt):
            return None
        c = self.c
        nodes: list[Node] = []
        for i, (label, value_ts, span_ts) in enumerate(found):
            value_ts = _unparen(value_ts)
            if value_ts.type not in _LITERALS or label in names:
                return None
            s = start if i == 0 else c(span_ts.start_byte)
            node = self._static(value_ts, s, key_step_printable(label), label)
            if node is None:
                return None
            node.end = c(stmt.end_byte) if i == len(found) - 1 else c(span_ts.end_byte)
            nodes.append(node)
        names.update(n.label for n in nodes if isinstance(n.label, str))
        return nodes

    @staticmethod
    def _declarators(stmt: TSNode) -> int:
        decl = stmt.child_by_field_name("declaration") if stmt.type == "export_statement" \
            else stmt
        if decl is not None and decl.type in ("lexical_declaration", "variable_declaration"):
            return sum(1 for d in decl.named_children if d.type == "variable_declarator")
        return 1

    def _static(self, value_ts: TSNode, start: int, step: str, label: str | int | None
                ) -> Node | None:
        """The value tree of a static literal (comments kept with their neighbours), or
        None when it is not static."""
        builder = _Builder(self.text, self.off, "reject", self.crosscheck)
        try:
            lit = builder.build(value_ts, start, step, label)
            builder.check(lit)
        except _Reject:
            return None
        node = lit.nodes[0]
        node.parent = None
        if node.children and "/" in self.text[node.start:node.end]:
            keep_comments(self.text, node, node.start, js_lines_before, js_after,
                          fixed_root=True)
        return node

    # ------------------------------------------------------------------ code units

    def _name(self, ts: TSNode) -> str | None:
        """The name a unit declares, if any."""
        t = ts.type
        if t == "export_statement":
            if any(ch.type == "default" for ch in ts.children):
                return "default"
            decl = ts.child_by_field_name("declaration")
            return self._name(decl) if decl is not None else None
        if t in ("lexical_declaration", "variable_declaration"):
            decls = [d for d in ts.named_children if d.type == "variable_declarator"]
            name = decls[0].child_by_field_name("name") if len(decls) == 1 else None
            return name.text.decode() if name is not None and name.type == "identifier" \
                else None
        if t == "expression_statement":
            found = _bindings(ts, strict=False)
            return found[0][0] if found else None
        if t == "shorthand_property_identifier":
            return ts.text.decode()
        field = "key" if t == "pair" else "property" if t == "field_definition" else "name"
        name = ts.child_by_field_name(field)
        if name is None:
            return None
        if name.type in ("identifier", "property_identifier", "type_identifier",
                         "private_property_identifier"):
            return name.text.decode()
        if name.type == "string":
            return name.text.decode()[1:-1]
        return None

    def _step(self, ts: TSNode, index: int, names: set[str]) -> tuple[str, str | int]:
        name = self._name(ts)
        if name is None or name in names:
            return index_step(index), index
        names.add(name)
        return key_step_printable(name), name

    def _members(self, container: TSNode) -> list[tuple[TSNode, int]]:
        """The units directly inside ``container`` with their start (a comment run on the
        lines just above a unit included)."""
        out: list[tuple[TSNode, int]] = []
        pending = -1
        c = self.c
        kids = container.named_children
        if container.type in ("switch_case", "switch_default"):
            value = container.child_by_field_name("value")
            kids = [k for k in kids if value is None or k.id != value.id]
        for ts in kids:
            if ts.type in _NOT_UNITS:
                if ts.type == "comment" and pending < 0 and self._line_opens(c(ts.start_byte)):
                    pending = c(ts.start_byte)
                continue
            start = c(ts.start_byte)
            above = pending >= 0 and not _BLANK_LINE.search(self.text, pending, start)
            out.append((ts, pending if above else start))
            pending = -1
        return out

    def _line_opens(self, at: int) -> bool:
        """Is only indentation before ``at`` on its line?"""
        return not self.text[self.text.rfind("\n", 0, at) + 1:at].strip(" \t")

    def _units(self, ts: TSNode) -> list[tuple[TSNode, int, Node | None]]:
        """The units inside a code node ``ts`` (with a prebuilt value tree for a static
        literal), found through expressions; a non-static object or array met on the way
        gives its members."""
        if ts.type in _BLOCKS or ts.type in ("object", "array", "switch_case",
                                             "switch_default"):
            return [(u, a, None) for u, a in self._members(ts)]
        out: list[tuple[TSNode, int, Node | None]] = []
        stack = list(reversed(ts.named_children))
        while stack:
            n = stack.pop()
            t = n.type
            if t in ("object", "array"):
                static = self._static(n, self.c(n.start_byte), "", None)
                if static is not None:
                    out.append((n, static.start, static))
                    continue
            if t in _BLOCKS or t in ("object", "array", "switch_case", "switch_default"):
                out.extend((u, a, None) for u, a in self._members(n))
            else:
                stack.extend(reversed(n.named_children))
        return out

    def _unit(self, ts: TSNode, start: int, step: tuple[str, str | int],
              prebuilt: Node | None = None) -> Node:
        """The node of one unit: a value tree if static, else a code node."""
        c = self.c
        if prebuilt is not None:
            prebuilt.step, prebuilt.label = step
            return prebuilt
        value = ts.child_by_field_name("value") if ts.type == "pair" else ts
        if value is not None and _unparen(value).type in _LITERALS:
            node = self._static(_unparen(value), start, step[0], step[1])
            if node is not None:
                node.end = max(node.end, c(ts.end_byte))
                return node
        end = c(ts.end_byte)
        node = Node(_KINDS.get(ts.type, "statement"), start, end, step[0], step[1])
        units = self._units(ts)
        if not units:
            node.atomic = True
            return node
        names: set[str] = set()
        pos = start
        for i, (u, u_start, built) in enumerate(units):
            child = self._unit(u, u_start, self._step(u, i, names), built)
            self._gap(node, pos, child.start)
            node.children.append(child)
            pos = child.end
        self._gap(node, pos, end)
        return node

    def _gap(self, node: Node, a: int, b: int) -> None:
        """An atomic ``code`` leaf (the parent's path) for the text in ``[a, b)`` beyond
        blank space and separators (``,`` ``;``)."""
        text = self.text
        while a < b and text[a] in " \t\r\n":
            a += 1
        while b > a and text[b - 1] in " \t\r\n":
            b -= 1
        if text[a:b].strip(" \t\r\n,;"):
            node.children.append(Node("code", a, b, "", None, atomic=True))

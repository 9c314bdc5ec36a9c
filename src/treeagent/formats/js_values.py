"""Static-value building for :mod:`treeagent.formats.javascript` (B.1).

Scalar decoding (string escapes, numeric literals, numeric keys' string form) and the
literal builder: :class:`_Builder` turns a tree-sitter value into nodes and static values
(:class:`~treeagent.formats.js_literal._Literal`), with the splices the json5 cross-check
(:mod:`treeagent.formats.js_crosscheck`) needs.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Literal

from tree_sitter import Node as TSNode

from treeagent.algorithm.tree import Node, index_step
from treeagent.formats.escapes import backslash_run, key_step_printable
from treeagent.formats.js_crosscheck import (
    _CrossCheck,
    _join_surrogates,
    _json5_loads,
    _same,
    _short,
)
from treeagent.formats.js_literal import _Literal
from treeagent.formats.js_syntax import _Offsets, _Reject

_JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?\Z")
_JSON_STRING = re.compile(r'"(?:[^"\\\x00-\x1f]++|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*+"\Z')
_CONTROL = re.compile(r"[\x00-\x1f]")
_SINGLE_JSONABLE = re.compile(r"'(?:[^'\\\x00-\x1f]++|\\[\"\\/bfnrt']|\\u[0-9a-fA-F]{4})*+'\Z")
_SWAP = re.compile(r'\\[\s\S]|"')
_LEGACY_OCTAL = re.compile(r"0[0-7]+\Z")
_ESCAPE = re.compile(
    r"\\(u\{[0-9a-fA-F]*\}?|u[0-9a-fA-F]{0,4}|x[0-9a-fA-F]{0,2}|[0-3][0-7]{0,2}|[4-7][0-7]?"
    r"|\r\n|[\s\S])"
)
_TEMPLATE_PART = re.compile(_ESCAPE.pattern + r"|\r\n?")
_CODE_POINT_ESCAPE = re.compile(r"\\u\{([0-9a-fA-F]+)\}")
_SIMPLE_ESCAPES = {
    "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v",
    "\n": "", "\r": "", "\r\n": "", "\u2028": "", "\u2029": "",
}
_NAMES = {
    "identifier": "identifier reference", "ternary_expression": "conditional expression",
    "regex": "regular expression literal", "class": "class expression",
    "function_expression": "function expression", "function": "function expression",
    "generator_function": "generator function", "arrow_function": "arrow function",
    "template_substitution": "template substitution", "this": "'this'", "super": "'super'",
    "meta_property": "meta property", "undefined": "undefined",
}
_JSON_SCALARS = frozenset({"true", "false", "null"})

Dynamic = Literal["reject", "atomic"]
Crosscheck = Literal["twin", "mixed", "json5"]


@dataclass(frozen=True, slots=True)
class Expression:
    """An undecomposed expression kept as an atomic leaf by ``dynamic="atomic"`` (A.1)."""

    source: str


# ---------------------------------------------------------------- scalar decoding


def _swap(m: re.Match[str]) -> str:
    """Single- to double-quoted string body: ``\\'`` -> ``'`` and ``"`` -> ``\\"``."""
    g = m.group()
    return "'" if g == "\\'" else '\\"' if g == '"' else g


def _decode_escapes(raw: str, base: int, template: bool = False) -> str:
    """Cook a string/template body (JS escapes, line continuations; templates: CR LF -> LF).

    ``base`` is the character offset of ``raw`` in the text, for error positions.
    """

    def one(m: re.Match[str]) -> str:
        g = m.group(1)
        if g is None:  # a raw CR / CR LF in a template
            return "\n"
        c = g[0]
        if c == "u":
            if g.startswith("u{"):
                if len(g) < 4 or not g.endswith("}"):
                    raise _Reject(base + m.start(), "syntax error: bad \\u{...} escape")
                cp = int(g[2:-1], 16)
                if cp > 0x10FFFF:
                    raise _Reject(base + m.start(), "syntax error: code point out of range")
                return chr(cp)
            if len(g) != 5:
                raise _Reject(base + m.start(), "syntax error: bad \\u escape")
            return chr(int(g[1:], 16))
        if c == "x":
            if len(g) != 3:
                raise _Reject(base + m.start(), "syntax error: bad \\x escape")
            return chr(int(g[1:], 16))
        if "0" <= c <= "7":
            if g == "0" and not (template and raw[m.end() : m.end() + 1].isdigit()):
                return "\0"
            if template:
                raise _Reject(base + m.start(), "syntax error: octal escape in template")
            return chr(int(g, 8))  # legacy octal (sloppy mode); json5 will disagree
        if template and c in "89":
            raise _Reject(base + m.start(), "syntax error: \\8 or \\9 in template")
        return _SIMPLE_ESCAPES.get(g, g)

    pattern = _TEMPLATE_PART if template else _ESCAPE
    return _join_surrogates(pattern.sub(one, raw))


def _number(txt: str) -> int | float:
    """Value of a JS numeric literal token (no sign); ints stay int as json5 reads them."""
    t = txt.replace("_", "")
    head = t[:2].lower()
    if head == "0x":
        return int(t[2:], 16)
    if head == "0o":
        return int(t[2:], 8)
    if head == "0b":
        return int(t[2:], 2)
    if _LEGACY_OCTAL.match(t):
        return int(t, 8)
    if "." in t or "e" in t or "E" in t:
        return float(t)
    return int(t)


def _js_number_string(x: float) -> str:
    """Number::toString (ECMA-262 6.1.6.1.20): the property key of a numeric literal."""
    if x != x:
        return "NaN"
    if x == 0:
        return "0"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    sign = "-" if x < 0 else ""
    mantissa, _, exp = repr(abs(x)).partition("e")
    whole, _, frac = mantissa.partition(".")
    digits = whole + frac
    n = len(whole) + (int(exp) if exp else 0)  # x = 0.digits * 10**n
    stripped = digits.lstrip("0")
    n -= len(digits) - len(stripped)
    s = stripped.rstrip("0")
    k = len(s)
    if k <= n <= 21:
        return sign + s + "0" * (n - k)
    if 0 < n <= 21:
        return sign + s[:n] + "." + s[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * -n + s
    e = n - 1
    e_str = ("+" if e >= 0 else "-") + str(abs(e))
    return sign + (s if k == 1 else s[0] + "." + s[1:]) + "e" + e_str


def _describe(ts: TSNode) -> str:
    return _NAMES.get(ts.type, ts.type.replace("_", " "))


# ---------------------------------------------------------------- literal builder


class _Builder(_CrossCheck):
    """Builds nodes and static values from the CST iteratively (deep input is fine)."""

    def __init__(self, text: str, offsets: _Offsets, dynamic: Dynamic,
                 crosscheck: Crosscheck) -> None:
        if dynamic not in ("reject", "atomic"):
            raise ValueError(f"dynamic must be 'reject' or 'atomic', not {dynamic!r}")
        if crosscheck not in ("twin", "mixed", "json5"):
            raise ValueError(f"crosscheck must be 'twin', 'mixed' or 'json5', not "
                             f"{crosscheck!r}")
        self.text = text
        self.off = offsets
        self.atomic_mode = dynamic == "atomic"
        self.crosscheck = crosscheck
        self._c = offsets.char

    def use_offsets(self, offsets: _Offsets) -> None:
        """Read the nodes of another syntax tree of the text (a part of a program)."""
        self.off = offsets
        self._c = offsets.char

    def _dynamic(self, lit: _Literal, ts: TSNode, start: int, step: str,
                 label: str | int | None, culprit: TSNode, message: str
                 ) -> tuple[Node, object, bool]:
        if not self.atomic_mode:
            raise _Reject(self._c(culprit.start_byte), message)
        vs, ve = self._c(ts.start_byte), self._c(ts.end_byte)
        if ts.type in ("shorthand_property_identifier", "method_definition"):
            lit.splices.append((vs, ve, json.dumps(label) + ":null"))  # a whole member
        else:
            lit.splices.append((vs, ve, "null"))
        node = Node("expression", start, ve, step, label, atomic=True)
        return node, Expression(self.text[vs:ve]), False

    def _key(self, key: TSNode) -> tuple[str, bool, str | None]:
        """(label, key is a JSON string, json5 replacement for the key or None)."""
        t = key.type
        ks, ke = self._c(key.start_byte), self._c(key.end_byte)
        raw = self.text[ks:ke]
        if t == "property_identifier":
            if "\\" not in raw:
                return raw, False, None
            label = _decode_escapes(raw, ks)
            return label, False, self._code_point_splice(raw) if "\\u{" in raw else None
        if t == "string":
            label = _decode_escapes(raw[1:-1], ks + 1) if "\\" in raw else raw[1:-1]
            plain = raw[0] == '"' and ("\\" not in raw or _JSON_STRING.match(raw) is not None)
            return label, plain, self._code_point_splice(raw) if "\\u{" in raw else None
        if t == "number":
            if raw.endswith("n"):
                raise _Reject(ks, "BigInt literal is not a static key")
            try:
                value = _number(raw)
            except ValueError:  # past Python's digit limit: the double JS reads
                value = ref = float(raw.replace("_", ""))
            else:
                try:  # json5 has no numeric keys: it checks the key's number, we its string
                    ref = _json5_loads(raw)
                except Exception as exc:
                    raise _Reject(ks, f"tree-sitter and json5 disagree at key {raw}: json5 "
                                      f"cannot read it ({exc})") from None
            if not _same(value, ref):
                raise _Reject(ks, f"tree-sitter and json5 disagree at key {raw}: "
                                  f"{_short(value)} vs json5 {_short(ref)}")
            try:
                as_float = float(value)
            except OverflowError:
                as_float = math.inf
            label = _js_number_string(as_float)
            return label, False, json.dumps(label)
        if t == "computed_property_name":
            raise _Reject(ks, "computed key is not a static key")
        raise _Reject(ks, f"{t.replace('_', ' ')} is not a static key")

    @staticmethod
    def _code_point_splice(raw: str) -> str:
        """Rewrite ``\\u{...}`` escapes as ``\\uXXXX`` (pairs above U+FFFF) for json5."""

        def sub(m: re.Match[str]) -> str:
            if m.start() > 0 and backslash_run(raw, m.start()) % 2:
                return m.group()  # an escaped backslash followed by "u{"
            cp = int(m.group(1), 16)
            if cp > 0xFFFF:
                cp -= 0x10000
                return f"\\u{0xD800 + (cp >> 10):04x}\\u{0xDC00 + (cp & 0x3FF):04x}"
            return f"\\u{cp:04x}"

        return _CODE_POINT_ESCAPE.sub(sub, raw)

    def _object_is_dynamic(self, ts: TSNode) -> TSNode | None:
        """In atomic mode: the member that makes an object's key set unknowable."""
        for ch in ts.named_children:
            t = ch.type
            if t == "spread_element":
                return ch
            if t == "pair" and ch.child_by_field_name("key").type == "computed_property_name":
                return ch
            if t == "method_definition":
                name = ch.child_by_field_name("name")
                if name is None or name.type == "computed_property_name" or any(
                    c.type in ("get", "set") for c in ch.children
                ):
                    return ch
        return None

    def build(self, ts_root: TSNode, start: int, step: str, label: str | int | None
              ) -> _Literal:
        """Build the subtree of the value ``ts_root``; its node starts at ``start``."""
        lit = _Literal("$" + step)
        text = self.text
        c = self._c
        # (cst value, node start, step, label, parent, depth)
        stack: list[tuple[TSNode, int, str, str | int | None, Node | None, int]] = [
            (ts_root, start, step, label, None, 0)
        ]
        while stack:
            ts, st, stp, lab, parent, depth = stack.pop()
            if depth > lit.depth:
                lit.depth = depth
            t = ts.type
            vs = c(ts.start_byte)
            pushes: list[tuple[TSNode, int, str, str | int | None]] = []
            plain = True
            value: object = None
            if t == "object":
                culprit = self._object_is_dynamic(ts) if self.atomic_mode else None
                if culprit is not None:
                    node, value, plain = self._dynamic(lit, ts, st, stp, lab, culprit, "")
                else:
                    node = Node("object", st, c(ts.end_byte), stp, lab)
                    plain = self._object_members(lit, ts, pushes)
            elif t == "array":
                node_or_none, plain = self._array_elements(lit, ts, st, stp, lab, pushes)
                if isinstance(node_or_none, tuple):
                    node, value, plain = node_or_none
                else:
                    node = node_or_none
            elif t == "string":
                ve = c(ts.end_byte)
                raw = text[vs:ve]
                if "\\" in raw:
                    value = _decode_escapes(raw[1:-1], vs + 1)
                    plain = raw[0] == '"' and _JSON_STRING.match(raw) is not None
                    if "\\u{" in raw:
                        lit.splices.append((vs, ve, self._code_point_splice(raw)))
                else:
                    value = raw[1:-1]
                    plain = raw[0] == '"' and _CONTROL.search(value) is None
                node = Node("string", st, ve, stp, lab, divisible=True, cut_start=vs + 1,
                            cut_end=ve - 1, quote=raw[0])
                if raw[0] == "'" and _SINGLE_JSONABLE.match(raw):
                    lit.converted[len(lit.nodes)] = '"' + _SWAP.sub(_swap, raw[1:-1]) + '"'
            elif t == "template_string":
                sub = next((ch for ch in ts.named_children
                            if ch.type == "template_substitution"), None)
                if sub is not None:
                    node, value, plain = self._dynamic(
                        lit, ts, st, stp, lab, sub, "template substitution is not a static value")
                else:
                    ve = c(ts.end_byte)
                    value = _decode_escapes(text[vs + 1 : ve - 1], vs + 1, template=True)
                    lit.splices.append((vs, ve, json.dumps(value)))
                    node = Node("template", st, ve, stp, lab, atomic=True)
                    plain = False
            elif t == "number" or t == "unary_expression" or t == "identifier":
                node, value, plain = self._numeric(lit, ts, st, stp, lab)
            elif t in _JSON_SCALARS:
                node = Node("literal", st, c(ts.end_byte), stp, lab)
                value = {"true": True, "false": False, "null": None}[t]
            else:
                node, value, plain = self._dynamic(
                    lit, ts, st, stp, lab, ts, f"{_describe(ts)} is not a static value")
            node.id = len(lit.nodes)
            lit.nodes.append(node)
            lit.values.append(value)
            lit.plain.append(plain)
            lit.vstart.append(vs)
            if parent is not None:
                node.parent = parent
                parent.children.append(node)
            for item in reversed(pushes):
                stack.append((*item, node, depth + 1))
        self._assemble(lit)
        return lit

    def _object_members(self, lit: _Literal, ts: TSNode,
                        pushes: list[tuple[TSNode, int, str, str | int | None]]) -> bool:
        """Queue an object's members; True when the object's own syntax is strict JSON."""
        c = self._c
        plain = True
        seen: set[str] = set()
        prev = "{"
        for ch in ts.children:
            t = ch.type
            if t == "comment":
                plain = False
                continue
            if t == "," and prev in ("{", ","):
                raise _Reject(c(ch.start_byte), "syntax error (unexpected ',')")
            if t == "pair":
                key = ch.child_by_field_name("key")
                value = ch.child_by_field_name("value")
                label, key_plain, replacement = self._key(key)
                ks = c(key.start_byte)
                if label in seen:
                    raise _Reject(ks, f"duplicate key {label!r} in object (ambiguous record)")
                if label == "__proto__":
                    raise _Reject(ks, "'__proto__' key sets the prototype (ambiguous record)")
                seen.add(label)
                if replacement is not None:
                    lit.splices.append((ks, c(key.end_byte), replacement))
                plain = plain and key_plain and ch.child_count == 3
                pushes.append((value, ks, key_step_printable(label), label))
            elif t == "shorthand_property_identifier":
                raw = self.text[self._c(ch.start_byte) : self._c(ch.end_byte)]
                label = _decode_escapes(raw, self._c(ch.start_byte)) if "\\" in raw else raw
                self._member_atom(lit, ch, label, "shorthand property", pushes, seen)
                plain = False
            elif t == "method_definition":
                name = ch.child_by_field_name("name")
                kinds = {x.type for x in ch.children}
                what = "getter" if "get" in kinds else "setter" if "set" in kinds else "method"
                if not self.atomic_mode:
                    raise _Reject(c(ch.start_byte), f"{what} is not a static value")
                label = self._key(name)[0]
                self._member_atom(lit, ch, label, what, pushes, seen)
                plain = False
            elif t == "spread_element":
                raise _Reject(c(ch.start_byte), "spread element is not a static value")
            elif t not in ("{", "}", ","):
                raise _Reject(c(ch.start_byte), f"{_describe(ch)} is not a static member")
            if t == "}" and prev == ",":
                plain = False  # trailing comma
            prev = t
        return plain

    def _member_atom(self, lit: _Literal, ch: TSNode, label: str, what: str,
                     pushes: list[tuple[TSNode, int, str, str | int | None]],
                     seen: set[str]) -> None:
        """A shorthand property / method kept whole: its member is an atomic expression."""
        s = self._c(ch.start_byte)
        if not self.atomic_mode:
            raise _Reject(s, f"{what} is not a static value")
        if label in seen:
            raise _Reject(s, f"duplicate key {label!r} in object (ambiguous record)")
        seen.add(label)
        pushes.append((ch, s, key_step_printable(label), label))

    def _array_elements(self, lit: _Literal, ts: TSNode, st: int, stp: str,
                        lab: str | int | None,
                        pushes: list[tuple[TSNode, int, str, str | int | None]]
                        ) -> tuple[Node | tuple[Node, object, bool], bool]:
        c = self._c
        plain = True
        prev = "["
        elements: list[TSNode] = []
        for ch in ts.children:
            t = ch.type
            if t == "comment":
                plain = False
                continue
            if t == "," and prev in ("[", ","):
                if self.atomic_mode:
                    return self._dynamic(lit, ts, st, stp, lab, ch, ""), False
                raise _Reject(c(ch.start_byte), "array hole is not a static value")
            if t == "]" and prev == ",":
                plain = False  # trailing comma
            if t == "spread_element":
                if self.atomic_mode:
                    return self._dynamic(lit, ts, st, stp, lab, ch, ""), False
                raise _Reject(c(ch.start_byte), "spread element is not a static value")
            if t not in ("[", "]", ","):
                elements.append(ch)
            prev = t
        for i, el in enumerate(elements):
            pushes.append((el, c(el.start_byte), index_step(i), i))
        return Node("array", st, c(ts.end_byte), stp, lab), plain

    def _numeric(self, lit: _Literal, ts: TSNode, st: int, stp: str, lab: str | int | None
                 ) -> tuple[Node, object, bool]:
        t = ts.type
        sign = ""
        arg = ts
        if t == "unary_expression":
            op = ts.child_by_field_name("operator").type
            arg = ts.child_by_field_name("argument")
            if op not in ("+", "-"):
                return self._dynamic(lit, ts, st, stp, lab, ts,
                                     f"unary {op!r} expression is not a static value")
            if arg.type not in ("number", "identifier") or (
                arg.type == "identifier" and arg.text not in (b"NaN", b"Infinity")
            ):
                return self._dynamic(lit, ts, st, stp, lab, ts,
                                     f"unary {op!r} on a non-number is not a static value")
            sign = op
        raw = arg.text.decode()
        spliced = False
        if arg.type == "identifier":
            if raw == "NaN":
                value: int | float = math.nan
            elif raw == "Infinity":
                value = math.inf
            else:
                return self._dynamic(lit, ts, st, stp, lab, ts,
                                     f"identifier reference {raw!r} is not a static value")
        elif raw.endswith("n"):
            return self._dynamic(lit, ts, st, stp, lab, ts, "BigInt literal is not a static value")
        else:
            try:
                value = _number(raw)
            except ValueError:  # past Python's digit limit: the double JS reads (no int)
                value = float(raw.replace("_", ""))
                lit.splices.append((self._c(arg.start_byte), self._c(arg.end_byte),
                                    "Infinity" if math.isinf(value) else repr(value)))
                spliced = True  # json5 reads the splice, not the digits: not plain JSON
        if sign == "-":
            value = -value if value != 0 else -0.0
        ve = self._c(ts.end_byte)
        plain = arg.type == "number" and sign != "+" and not spliced and (
            _JSON_NUMBER.match(self.text[self._c(ts.start_byte) : ve]) is not None)
        return Node("number", st, ve, stp, lab), value, plain

    def _assemble(self, lit: _Literal) -> None:
        """Containers' values bottom-up (reverse preorder); JSON-ness of whole subtrees."""
        nodes, values, plain = lit.nodes, lit.values, lit.plain
        for i in range(len(nodes) - 1, -1, -1):
            node = nodes[i]
            kids = node.children
            if node.kind == "object":
                values[i] = {k.label: values[k.id] for k in kids}
            elif node.kind == "array":
                values[i] = [values[k.id] for k in kids]
            else:
                continue
            if plain[i]:
                plain[i] = all(plain[k.id] for k in kids)

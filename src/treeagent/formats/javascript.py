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
per value; ``crosscheck="json5"`` sends everything to json5. JavaScript that json5 cannot
read (``0o17``, ``1_000``, ``- 1``, legacy octal escapes) is rejected as a disagreement.
Comparison: same types (json5's int ``0`` for the integer literal ``-0`` matches our
``-0.0``: Python ints have no negative zero), zeros by sign, NaN equal to NaN, same key
order; json5's surrogate-pair code units are joined first. Deep literals run json5 in a
thread with a large stack and recursion limit; past that, a clear ``ParseError``.

``safe_cut`` (A.1) keeps escapes (``\\n``, ``\\xHH``, ``\\uXXXX``, ``\\u{...}``, legacy
octal, backslash-newline) and surrogate pairs (raw or escaped) whole.
"""

from __future__ import annotations

import bisect
import functools
import json
import math
import re
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

import json5
import tree_sitter_javascript
from tree_sitter import Language, Parser
from tree_sitter import Node as TSNode

from treeagent.formats import Format
from treeagent.formats.comments import js_after, js_lines_before, keep_comments
from treeagent.formats.escapes import backslash_run, key_step_printable
from treeagent.tree import LineIndex, Node, ParseError, Tree, index_step

__all__ = [
    "Expression", "Initializer", "Rejection", "find_initializers", "parse", "safe_cut",
    "static_value",
]

_LANGUAGE = Language(tree_sitter_javascript.language())
_BARE_PREFIX = "_="  # a bare `{...}` would parse as a block statement: parse `_={...}`
_LEAD = re.compile(r"(?:\ufeff|\s+|//[^\n\r\u2028\u2029]*|/\*.*?\*/|#![^\n]*)*", re.S)
_UNICODE_SPACE = re.compile(r"[\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000\ufeff]")
_NON_ASCII = re.compile(r"[^\x00-\x7f]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")
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
_OCTAL_DIGITS = frozenset("01234567")
_JSON5_ERROR = re.compile(r"<string>:(\d+) (.*) at column (\d+)")
_NAMES = {
    "identifier": "identifier reference", "ternary_expression": "conditional expression",
    "regex": "regular expression literal", "class": "class expression",
    "function_expression": "function expression", "function": "function expression",
    "generator_function": "generator function", "arrow_function": "arrow function",
    "template_substitution": "template substitution", "this": "'this'", "super": "'super'",
    "meta_property": "meta property", "undefined": "undefined",
}
_JSON_SCALARS = frozenset({"true", "false", "null"})
_FRAMES_PER_LEVEL = 32  # json5 recurses ~17 (arrays) to ~23 (objects) Python frames a level

Dynamic = Literal["reject", "atomic"]
Crosscheck = Literal["mixed", "json5"]


@dataclass(frozen=True, slots=True)
class Expression:
    """An undecomposed expression kept as an atomic leaf by ``dynamic="atomic"`` (A.1)."""

    source: str


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


# ---------------------------------------------------------------- scalar decoding


def _swap(m: re.Match[str]) -> str:
    """Single- to double-quoted string body: ``\\'`` -> ``'`` and ``"`` -> ``\\"``."""
    g = m.group()
    return "'" if g == "\\'" else '\\"' if g == '"' else g


def _join_surrogates(s: str) -> str:
    """Join UTF-16 surrogate pairs into one code point; lone surrogates stay."""
    if _SURROGATE.search(s) is None:
        return s
    return s.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


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


def _same(mine: object, ref: object) -> bool:
    """Scalar agreement of our reading and json5's (see the module docstring)."""
    if isinstance(mine, str):
        return isinstance(ref, str) and _join_surrogates(ref) == mine
    if mine is None or isinstance(mine, bool):
        return ref is mine
    if isinstance(mine, int):
        return type(ref) is int and ref == mine
    if isinstance(mine, float):
        if mine != mine:
            return isinstance(ref, float) and ref != ref
        if mine == 0 and math.copysign(1.0, mine) < 0 and type(ref) is int and ref == 0:
            return True  # integer literal -0: json5 gives int 0
        return (type(ref) is float and ref == mine
                and math.copysign(1.0, ref) == math.copysign(1.0, mine))
    return False


@functools.lru_cache(maxsize=512)
def _json5_cached(source: str) -> object:
    return json5.loads(source)


def _json5_loads(source: str) -> object:
    """json5.loads, memoized for literals up to 64 KB (benchmark contexts repeat their
    units); the result is only compared, never handed out, so sharing it is safe."""
    return _json5_cached(source) if len(source) <= 65536 else json5.loads(source)


def _describe(ts: TSNode) -> str:
    return _NAMES.get(ts.type, ts.type.replace("_", " "))


def _run_deep(fn: Callable[[], Any], depth: int) -> Any:
    """Run ``fn`` with room for ``depth`` nesting levels of recursive decoders.

    json5 recurses ~23 frames an object level (the C json decoder counts against the same
    limit): for deep inputs run it in a thread with a large stack and a raised limit.
    """
    need = depth * _FRAMES_PER_LEVEL + 300
    if need < sys.getrecursionlimit():
        return fn()
    box: dict[str, Any] = {}

    def target() -> None:
        old = sys.getrecursionlimit()
        sys.setrecursionlimit(max(old, need + 1000))
        try:
            box["value"] = fn()
        except BaseException as exc:  # re-raised in the caller's thread
            box["error"] = exc
        finally:
            sys.setrecursionlimit(old)

    old_size = threading.stack_size()
    threading.stack_size(min(max(64 << 20, depth << 14), 1 << 30))
    try:
        worker = threading.Thread(target=target, name="treeagent-json5-check")
        worker.start()
    finally:
        threading.stack_size(old_size)
    worker.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


# ---------------------------------------------------------------- literal builder


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


class _Builder:
    """Builds nodes and static values from the CST iteratively (deep input is fine)."""

    def __init__(self, text: str, offsets: _Offsets, dynamic: Dynamic,
                 crosscheck: Crosscheck) -> None:
        if dynamic not in ("reject", "atomic"):
            raise ValueError(f"dynamic must be 'reject' or 'atomic', not {dynamic!r}")
        if crosscheck not in ("mixed", "json5"):
            raise ValueError(f"crosscheck must be 'mixed' or 'json5', not {crosscheck!r}")
        self.text = text
        self.off = offsets
        self.atomic_mode = dynamic == "atomic"
        self.crosscheck = crosscheck
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

    # -- cross-check
    def check(self, lit: _Literal) -> None:
        """Compare our reading of ``lit`` with json5's (and json's) reading (B.1)."""
        try:
            _run_deep(lambda: self._check(lit), lit.depth)
        except RecursionError:
            raise _Reject(lit.vstart[0], "nesting too deep for the json5 cross-check") from None

    def _check(self, lit: _Literal) -> None:
        nodes, text = lit.nodes, self.text
        refs = self._json_refs(lit) if self.crosscheck == "mixed" else {}
        root = nodes[0]
        ref: object = None
        if 0 not in refs:
            splices = sorted(lit.splices + [(lit.vstart[i], nodes[i].end, "0") for i in refs])
            r_start, r_end = lit.vstart[0], root.end
            pieces: list[str] = []
            pos = r_start
            for s, e, rep in splices:
                if s < pos:
                    continue  # inside an earlier splice (e.g. an atomic object)
                pieces.append(text[pos:s])
                pieces.append(rep)
                pos = e
            pieces.append(text[pos:r_end])
            source = "".join(pieces)
            try:
                ref = _json5_loads(source)
            except RecursionError:
                raise
            except Exception as exc:  # json5 raises ValueError with "<string>:L ... column C"
                off = self._json5_offset(str(exc), source, splices, r_start, r_end)
                node = self._deepest(lit, off)
                raise _Reject(off, f"tree-sitter and json5 disagree at {_path(lit, node)}: "
                                   f"json5 cannot read it ({exc})") from None
        stack: list[tuple[Node, object]] = [(root, ref)]
        while stack:
            node, ref = stack.pop()
            i = node.id
            if i in refs:
                ref = refs[i]
            kind = node.kind
            if kind == "expression":
                continue
            mine = lit.values[i]
            if kind == "object":
                if not isinstance(ref, dict) or len(ref) != len(node.children):
                    self._disagree(lit, node, mine, ref)
                for child, key in zip(node.children, ref):  # type: ignore[call-overload]
                    if not isinstance(key, str) or _join_surrogates(key) != child.label:
                        self._disagree(lit, child, child.label, key, "key")
                    stack.append((child, ref[key]))  # type: ignore[index]
            elif kind == "array":
                if not isinstance(ref, list) or len(ref) != len(node.children):
                    self._disagree(lit, node, mine, ref)
                stack.extend(zip(node.children, ref))  # type: ignore[arg-type]
            elif not _same(mine, ref):
                self._disagree(lit, node, mine, ref)

    def _json_refs(self, lit: _Literal) -> dict[int, object]:
        """Mixed mode: read every maximal strict-JSON subtree (and JSON-convertible string)
        with the C ``json`` decoder, in one batch; json5 then reads the rest."""
        nodes, plain, converted, text = lit.nodes, lit.plain, lit.converted, self.text
        ids: list[int] = []
        sources: list[str] = []
        stack = [nodes[0]]
        while stack:
            node = stack.pop()
            i = node.id
            kind = node.kind
            if plain[i] and (kind != "number" or node.end - lit.vstart[i] > 2) \
                    and kind != "literal":
                ids.append(i)
                sources.append(text[lit.vstart[i] : node.end])
            elif i in converted:
                ids.append(i)
                sources.append(converted[i])
            elif kind == "object" or kind == "array":
                stack.extend(node.children)
        if not ids:
            return {}
        try:
            values = json.loads("[" + ",".join(sources) + "]")
        except RecursionError:
            raise
        except ValueError:  # e.g. JS-only whitespace inside: read one by one, json5 last
            values = [self._json_one(lit, i, src) for i, src in zip(ids, sources)]
        return dict(zip(ids, values))

    def _json_one(self, lit: _Literal, i: int, src: str) -> object:
        try:
            return json.loads(src)
        except RecursionError:
            raise
        except ValueError:
            try:
                return _json5_loads(self.text[lit.vstart[i] : lit.nodes[i].end])
            except RecursionError:
                raise
            except Exception as exc:
                raise _Reject(lit.vstart[i],
                              f"tree-sitter and json5 disagree at {_path(lit, lit.nodes[i])}: "
                              f"json5 cannot read it ({exc})") from None

    def _json5_offset(self, message: str, source: str, splices: list[tuple[int, int, str]],
                      r_start: int, r_end: int) -> int:
        m = _JSON5_ERROR.search(message)
        if m is None:
            return r_start
        line, col = int(m.group(1)), int(m.group(3))
        lines = source.split("\n")
        o = sum(len(x) + 1 for x in lines[: line - 1]) + col - 1  # offset in `source`
        pos, out = r_start, 0  # walk the splices to map `o` back into the text
        for s, e, rep in splices:
            if s < pos:
                continue
            if o < out + (s - pos):
                return min(pos + (o - out), r_end)
            out += s - pos
            if o < out + len(rep):
                return s
            out += len(rep)
            pos = e
        return min(pos + (o - out), r_end)

    @staticmethod
    def _deepest(lit: _Literal, off: int) -> Node:
        best = lit.nodes[0]
        for node in lit.nodes:
            if node.start <= off < node.end:
                best = node
        return best

    def _disagree(self, lit: _Literal, node: Node, mine: object, ref: object,
                  what: str = "value") -> None:
        raise _Reject(lit.vstart[node.id],
                      f"tree-sitter and json5 disagree at {_path(lit, node)}: {what} "
                      f"{_short(mine)} vs json5 {_short(ref)}")


def _path(lit: _Literal, node: Node) -> str:
    """pi(node) (A.3) while the tree is still being built."""
    steps: list[str] = []
    cur: Node | None = node
    while cur is not None and cur.id != 0:
        steps.append(cur.step)
        cur = cur.parent
    return lit.base + "".join(reversed(steps))


def _short(v: object) -> str:
    r = repr(v)
    return r if len(r) <= 60 else r[:57] + "..."


# ---------------------------------------------------------------- documents


def _first_syntax_error(root: TSNode) -> TSNode | None:
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
    root_ts = Parser(_LANGUAGE).parse(data).root_node
    err = _first_syntax_error(root_ts)
    if err is not None:
        at, message = _syntax_error(err, len(data.rstrip()))
        raise ParseError.at(text, offsets.char(at), message)
    return root_ts, offsets


def _parse(text: str, dynamic: Dynamic, crosscheck: Crosscheck) -> tuple[Tree, object]:
    lead = _LEAD.match(text)
    first = text[lead.end() : lead.end() + 1] if lead else ""
    bare = first in ("{", "[", "(")
    root_ts, offsets = _syntax_tree(text, _BARE_PREFIX if bare else "")
    builder = _Builder(text, offsets, dynamic, crosscheck)
    try:
        if bare:
            return _parse_bare(text, root_ts, builder)
        return _parse_program(text, root_ts, builder)
    except _Reject as rej:
        raise ParseError.at(text, rej.offset, rej.message) from None


def _significant(root_ts: TSNode) -> list[TSNode]:
    return [s for s in root_ts.children
            if s.type not in ("comment", "hash_bang_line", "empty_statement")]


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


def _program_bindings(root_ts: TSNode, c: Callable[[int], int]
                      ) -> Iterator[tuple[str, TSNode, int, int]]:
    """Each top-level binding of a program of initializers as (label, value, start, end)
    (a declaration of several bindings is split between them); _Reject for a statement
    that is not a binding and for a duplicate name."""
    labels: set[str] = set()
    prologue = True
    for stmt in _significant(root_ts):
        if prologue and stmt.type == "expression_statement" and stmt.named_child_count == 1 \
                and stmt.named_children[0].type == "string":
            continue  # directive prologue ("use strict")
        prologue = False
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


def _parse_program(text: str, root_ts: TSNode, builder: _Builder) -> tuple[Tree, object]:
    root = Node("program", 0, len(text))
    result: dict[str, object] = {}
    for label, value_ts, start, end in _program_bindings(root_ts, builder.off.char):
        lit = builder.build(value_ts, start, key_step_printable(label), label)
        builder.check(lit)
        node = lit.nodes[0]
        node.end = end
        root.children.append(node)
        result[label] = lit.values[0]
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
    tree = _parse(text, dynamic, crosscheck)[0]
    if "/" in text:  # comments stay with their neighbour (after the checks: spans only),
        # inside each binding: bindings keep the spans binding_spans gives
        program = tree.root.kind == "program"
        for top in tree.root.children if program else [tree.root]:
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
    root_ts = Parser(_LANGUAGE).parse(data).root_node
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
            err = _first_syntax_error(value_ts) if value_ts.has_error else None
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


FORMAT = Format("javascript", "JavaScript", (".js", ".mjs", ".cjs", ".json5"), parse, safe_cut)

"""JSON: objects and arrays are internal nodes, scalars leaves (paper 3.1, A.1, A.3).

Validity is checked first by the C decoder (precise ``line:col`` errors); the tree is
then built by one regex scan of the text with exact character offsets. An object
member's node spans ``"key": value`` so its native text keeps the key.
"""

from __future__ import annotations

import json
import re

from treeagent.algorithm.tree import NO_CHILDREN, Node, ParseError, Tree, index_step, key_step
from treeagent.formats import Format
from treeagent.formats.escapes import escape_starts_at, key_step_printable

# possessive runs: no backtracking state per character (a 5 MB string once took 600 MB)
_TOKEN = re.compile(r'"[^"\\]*+(?:\\.[^"\\]*+)*+"|[{}\[\]:,]|[^\s{}\[\]:,"]++', re.S)
_HEX4 = re.compile(r"[0-9a-fA-F]{4}")


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not valid JSON")


def _unconverted(digits: str) -> None:
    """Numbers are checked by the scanner's grammar only: no value is needed, so no
    integer conversion (and no 4,300-digit limit) runs."""


def _dropped_object(pairs: list[tuple[str, object]]) -> None:
    """An object's members are checked by the scanner only: nothing of the document is
    kept (memory: the decoded document took ~1 MB per MB of input beside the tree)."""


def _validate(text: str) -> None:
    decoder = json.JSONDecoder(parse_constant=_reject_constant, parse_int=_unconverted,
                               parse_float=_unconverted, object_pairs_hook=_dropped_object)
    start = len(text) - len(text.lstrip(" \t\r\n\ufeff"))
    if start == len(text):
        raise ParseError.at(text, start, "empty JSON document")
    try:
        _, end = decoder.raw_decode(text, start)
    except json.JSONDecodeError as exc:
        raise ParseError(exc.msg, exc.lineno, exc.colno) from None
    except ValueError as exc:  # NaN / Infinity
        raise ParseError.at(text, start, str(exc)) from None
    except RecursionError:  # deeper than the C decoder recurses: check iteratively
        end = _validate_deep(text, start)
    rest = len(text) - len(text[end:].lstrip(" \t\r\n"))
    if rest < len(text):
        raise ParseError.at(text, rest, "extra data after the JSON value")


_DEEP_TOKEN = re.compile(r'[ \t\r\n]*+(?:(")|([{}\[\]:,])|(-?(?:0|[1-9][0-9]*+)(?:\.[0-9]++)?'
                         r'(?:[eE][+-]?[0-9]++)?|true|false|null)|)')


def _validate_deep(text: str, start: int) -> int:
    """The end of the JSON value at ``start``, checked with an explicit stack (any
    depth); raises ParseError at the first place that is not JSON."""
    decode_string = json.decoder.scanstring
    stack: list[str] = []  # open containers: "{" or "["
    expect = "value"  # value | key | colon | next (a comma or a close)
    pos = start
    while True:
        m = _DEEP_TOKEN.match(text, pos)
        at = m.end(0) - len(m.group(0).lstrip(" \t\r\n"))
        quote, punct, scalar = m.group(1), m.group(2), m.group(3)
        if expect in ("value", "key") and quote:
            try:
                _, pos = decode_string(text, at + 1, True)
            except json.JSONDecodeError as exc:
                raise ParseError(exc.msg, exc.lineno, exc.colno) from None
            expect = "colon" if expect == "key" else "next"
        elif expect == "value" and scalar:
            pos, expect = m.end(0), "next"
        elif expect == "value" and punct in ("{", "["):
            stack.append(punct)
            pos, expect = m.end(0), "key" if punct == "{" else "value"
            if text.startswith("}" if punct == "{" else "]", _skip_ws(text, pos)):
                stack.pop()
                pos, expect = _skip_ws(text, pos) + 1, "next"
        elif expect == "colon" and punct == ":":
            pos, expect = m.end(0), "value"
        elif expect == "next" and stack and punct == ",":
            pos, expect = m.end(0), "key" if stack[-1] == "{" else "value"
        elif expect == "next" and stack and punct == ("}" if stack[-1] == "{" else "]"):
            stack.pop()
            pos = m.end(0)
        else:
            what = {"value": "Expecting value", "key": "Expecting property name enclosed "
                    "in double quotes", "colon": "Expecting ':' delimiter",
                    "next": "Expecting ',' delimiter"}[expect]
            raise ParseError.at(text, at, what)
        if expect == "next" and not stack:
            return pos


def _skip_ws(text: str, pos: int) -> int:
    return len(text) - len(text[pos:].lstrip(" \t\r\n")) if text[pos:pos + 1].isspace() \
        else pos


def _key(token: str) -> tuple[str, str]:
    """(key, path step); a lone surrogate (``"\\udc00"``) is escaped in the step."""
    inner = token[1:-1]
    if "\\" in inner or not inner.isascii():
        key = json.loads(token) if "\\" in inner else inner
        return key, key_step_printable(key)
    return inner, key_step(inner)


def _index_step(steps: list[str], i: int) -> str:
    while len(steps) <= i:
        steps.append(index_step(len(steps)))
    return steps[i]


def parse(text: str) -> Tree:
    """Parse JSON text into a Tree; raises ParseError with the line:col of bad input."""
    _validate(text)
    root: Node | None = None
    stack: list[Node] = []  # open containers
    counts: list[int] = []  # children seen per open container
    pending: list[tuple[int, str, str] | None] = []  # (key start, key, step) to come
    keys: dict[str, tuple[str, str]] = {}  # key token -> (key, step), shared by nodes
    steps: list[str] = []  # "[i]" for array index i, shared by nodes
    expect_key = False
    for m in _TOKEN.finditer(text):
        tok = m.group()
        c = tok[0]
        if c in ",:":
            if c == "," and stack and stack[-1].kind == "object":
                expect_key = True
            continue
        if c in "}]":
            node = stack.pop()
            counts.pop()
            pending.pop()
            node.end = m.end()
            kids = node.children  # closed: a tuple now, the list's memory serves the next
            node.children = tuple(kids) if kids else NO_CHILDREN
            expect_key = False
            continue
        if expect_key and c == '"':
            hit = keys.get(tok)  # a record's keys recur: one (key, step) pair each
            if hit is None:
                hit = keys[tok] = _key(tok)
            pending[-1] = (m.start(), *hit)
            expect_key = False
            continue
        # a value: container opener or scalar
        start = m.start()
        step = ""
        label: str | int | None = None
        if stack:
            parent = stack[-1]
            if parent.kind == "object":
                start, label, step = pending[-1]  # type: ignore[misc]
            else:
                label = counts[-1]
                step = steps[label] if label < len(steps) else _index_step(steps, label)
            counts[-1] += 1
        if c == "{" or c == "[":
            node = Node("object" if c == "{" else "array", start, -1, step, label)
        elif c == '"':
            node = Node("string", start, m.end(), step, label, NO_CHILDREN, divisible=True,
                        cut_start=m.start() + 1, cut_end=m.end() - 1, quote='"')
        else:
            node = Node("number" if c not in "tfn" else "literal", start, m.end(), step, label,
                        NO_CHILDREN)
        if stack:
            stack[-1].children.append(node)
        else:
            root = node
        if c == "{" or c == "[":
            stack.append(node)
            counts.append(0)
            pending.append(None)
            expect_key = c == "{"
    assert root is not None
    return Tree(text, root, "json", "$")


def safe_cut(text: str, pos: int) -> bool:
    """A cut at ``pos`` inside a JSON string keeps escapes and surrogate pairs whole (A.1)."""
    for back in range(1, 6):
        i = pos - back
        if i < 0:
            break
        if text[i] == "\\" and escape_starts_at(text, i):
            length = 6 if text[i + 1 : i + 2] == "u" else 2
            if back < length:
                return False
            break
    if 0 < pos < len(text) and "\ud800" <= text[pos - 1] <= "\udbff":
        return False  # a raw high surrogate (text decoded with surrogatepass)
    if pos >= 6 and text[pos - 6 : pos - 4] == "\\u" and escape_starts_at(text, pos - 6):
        high = text[pos - 4 : pos]
        if _HEX4.fullmatch(high) and 0xD800 <= int(high, 16) <= 0xDBFF:
            return False  # between the two halves of an escaped surrogate pair
    return True


FORMAT = Format("json", "JSON", (".json", ".geojson", ".jsonl"), parse, safe_cut,
                starts=("{", "["))

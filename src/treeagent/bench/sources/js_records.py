"""JavaScript units and records (B.1 "JavaScript dataset"): one static object/array
initializer per unit, found with ``treeagent.formats.javascript`` (tree-sitter parse and
an independent json5 reading must agree; JS is parsed, never executed). Records are the
objects of an array, or the members of an object; an initializer holding a
sensitive-looking string is rejected, and so is any record without a unique visible
description ("ambiguous records")."""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from treeagent.algorithm.tree import ParseError, index_step, key_step
from treeagent.bench.model import BenchFormat, Frame, Record, Unit, UnitFile
from treeagent.bench.sources.common import (
    flatten,
    humanize,
    key,
    make_records,
    name_fields,
    pattern,
    scalar,
    sensitive,
    visible,
)
from treeagent.formats import javascript as js
from treeagent.formats.js_syntax import first_syntax_error, syntax_root
from treeagent.formats.js_values import Crosscheck

_NAME_KEYS = ("name", "id", "title", "key", "label", "type", "code", "message", "value",
              "description", "filename")
MIN_RECORDS = 2
LITERAL = "@literal"  # selector head of a bare literal (composed as ``const entry_NNNN``)
MIN_NESTED_CHARS = 64  # nested literals shorter than this are too small to be units
#: the cross-check's reference reader: json5's reading through each literal's JSON twin
#: (same acceptances, values and errors as "mixed", several times faster; see
#: :mod:`treeagent.formats.js_crosscheck`), as sectioning reads JavaScript too
CROSSCHECK: Crosscheck = "twin"


@dataclass(frozen=True, slots=True)
class Candidate:
    """An accepted initializer cut out of a file as a unit text."""

    name: str
    text: str
    line: int
    value: Any
    col: int = 0  # 1-based column of a nested literal (0: a top-level binding)

    @property
    def local_id(self) -> str:
        return f"{self.name}@L{self.line}" if not self.col else f"literal@L{self.line}C{self.col}"


def _container(name: str, value: Any) -> tuple[str, str, Any]:
    """Descend through single-member objects to the record container: (label, path, v)."""
    label, path = name, "$"
    while isinstance(value, dict) and len(value) == 1:
        (k, v), = value.items()
        if not isinstance(v, dict | list):
            break
        label, path, value = k, path + key_step(k), v
    return label, path, value


def _singular(label: str) -> str:
    if label in ("module.exports", "default"):
        return "exported"
    if not label:
        return ""
    words = humanize(label)
    return words[:-1] if words.endswith("s") and not words.endswith("ss") else words


def value_records(name: str, value: Any, text: str, unit_id: str = "",
                  on_drop: Callable[[str, str], None] | None = None) -> list[Record]:
    """The described records of an initializer (:func:`named_records`) and one
    undescribed ``object`` record per object literal at any depth (its own scalar
    properties): "how many objects have an ecma version below 8" counts every object
    literal a reader sees. Items of a bare literal are looked up, never aggregated: no
    question can say which unnamed lists it means."""
    recs = named_records(name, value, text, unit_id, on_drop)
    if not name:
        for r in recs:
            r.counted = False
    return recs + object_records(value, unit_id)


def object_records(value: Any, unit_id: str = "") -> list[Record]:
    """One record per object literal in ``value`` (document order), fields its direct
    scalar properties; selector ``["*", "**"]`` (any binding, any depth)."""
    out: list[Record] = []
    stack: list[tuple[Any, str]] = [(value, "$")]
    while stack:
        v, path = stack.pop()
        if isinstance(v, dict):
            keys: dict[str, tuple[Any, ...]] = {}
            fields = name_fields([([str(k)], x) for k, x in v.items()
                                  if not isinstance(x, dict | list) and scalar(x) is not None],
                                 keys_out=keys)
            if fields:
                out.append(Record(id=f"{unit_id}#obj{path}", unit_id=unit_id, kind="object",
                                  description="", fields=fields, path=path,
                                  select=("*", "**"), keys=keys))
            stack.extend((x, path + key_step(str(k))) for k, x in reversed(list(v.items())))
        elif isinstance(v, list):
            stack.extend((x, path + index_step(i)) for i, x in reversed(list(enumerate(v))))
    return out


def named_records(name: str, value: Any, text: str, unit_id: str = "",
                  on_drop: Callable[[str, str], None] | None = None) -> list[Record]:
    """Records of one initializer's static value (B.1): objects of an array (described by
    a unique visible name-like value), members of an object whose values are objects
    (described by their key), or the whole object of scalars (described by its name).

    Each record's ``select`` starts with the binding name (``"@literal"`` for a bare
    literal), so a question's scope is the entries of initializers of that name."""
    label, path, v = _container(name, value)
    head = (name or LITERAL,)
    if isinstance(v, list):
        objs = [(path + index_step(i), e) for i, e in enumerate(v) if isinstance(e, dict)]
        if not objs:
            return []
        keyed = []
        for p, e in objs:
            k: dict[str, tuple[Any, ...]] = {}
            f = flatten(e, keys_out=k)
            keyed.append((p, e, f, k))
        first = objs[0][1]
        cands = [key(k) for k in _NAME_KEYS] + [key(k) for k, x in first.items()
                                                if not isinstance(x, dict | list)]
        return make_records(unit_id, f"{_singular(label)} entry".strip(),
                            [(p, e, f) for p, e, f, _ in keyed], text, cands, on_drop,
                            lambda p: pattern(p, head), [k for *_, k in keyed])
    if isinstance(v, dict):
        members = [(path + key_step(str(k)), str(k), x) for k, x in v.items()
                   if isinstance(x, dict)]
        if len(members) >= MIN_RECORDS:
            keyed = []
            for p, k_, x in members:
                k = {}
                keyed.append((p, k_, flatten(x, keys_out=k), k))
            where = (*pattern(path, head), "~")
            recs = make_records(unit_id, f"{_singular(label)} member".strip(),
                                [(p, k_, f) for p, k_, f, _ in keyed], text, [lambda k: k],
                                on_drop, lambda p: where, [k for *_, k in keyed])
            for r in recs:
                if r.description:
                    r.anchor = ((("@key:-1",), r.description),)
            return recs
        keys: dict[str, tuple[Any, ...]] = {}
        fields = flatten(v, keys_out=keys)
        if len(fields) < MIN_RECORDS:
            return []
        where = pattern(path, head)
        if visible(text, label):  # a named object of scalars: described by its name
            return [Record(id=f"{unit_id}#{path}", unit_id=unit_id, kind="settings object",
                           description=label, fields=fields, path=path, select=where,
                           keys=keys)]
        desc = next((d for k in _NAME_KEYS if (d := visible(text, key(k)(v))) is not None),
                    None)  # an anonymous object: described by its name-like value
        if desc is not None:
            return [Record(id=f"{unit_id}#{path}", unit_id=unit_id, kind="object literal",
                           description=desc, fields=fields, path=path, select=where,
                           keys=keys)]
    return []


def _standalone(text: str, init: js.Initializer) -> str:
    """The unit text: the binding statement when it parses on its own, else the literal."""
    stmt = text[init.start:init.end]
    try:
        js.parse(stmt, crosscheck=CROSSCHECK)
        return stmt
    except ParseError:
        return text[init.value_start:init.value_end]


def file_candidates(text: str, reject: Callable[[str, int, str], None], *,
                    nested: bool = False) -> Iterator[Candidate]:
    """Accepted initializers of one JS file; every rejected one is reported through
    ``reject(name, line, reason)``.

    Top-level bindings (``const x = {...}``, ``module.exports = [...]``, ...) come first,
    their unit text the binding statement. With ``nested``, every other maximal static
    object/array literal of at least ``MIN_NESTED_CHARS`` characters anywhere in the file
    (an "object initializer" in ECMAScript's sense, e.g. a test-case table passed to a
    call) is a candidate too, named ``<literal>`` and cut out as a bare literal; a
    rejected nested literal is searched for static literals inside it.
    """
    accepted, rejected = js.find_initializers(text, crosscheck=CROSSCHECK)
    spans: list[tuple[int, int]] = []
    for r in rejected:
        reject(r.name, r.line, f"{r.line}:{r.col}: {r.reason}")
    for init in accepted:
        spans.append((init.value_start, init.value_end))  # sensitive ones are not rescanned
        why = sensitive(init.value)
        if why:
            reject(init.name, init.line, f"sensitive string at {why}")
            continue
        yield Candidate(init.name, _standalone(text, init), init.line, init.value)
    if nested:
        yield from _nested(text, sorted(spans), reject)


def _char_offsets(text: str) -> Callable[[int], int]:
    """Byte offset (UTF-8) -> character offset."""
    if text.isascii():
        return lambda b: b
    ends: list[int] = []
    extra: list[int] = []
    total = 0
    for i, ch in enumerate(text):
        w = len(ch.encode("utf-8", "surrogatepass"))
        if w > 1:
            total += w - 1
            ends.append(i + total + 1)
            extra.append(total)

    def char(b: int) -> int:
        k = bisect.bisect_right(ends, b)
        return b - extra[k - 1] if k else b
    return char


def _nested(text: str, taken: list[tuple[int, int]],
            reject: Callable[[str, int, str], None]) -> Iterator[Candidate]:
    data = text.encode("utf-8", "surrogatepass")
    char = _char_offsets(text)
    root = syntax_root(data)
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type in ("object", "array"):
            start, end = char(node.start_byte), char(node.end_byte)
            k = bisect.bisect_right(taken, (start, 10**12)) - 1
            if k >= 0 and taken[k][0] <= start and end <= taken[k][1]:
                continue  # inside an accepted top-level initializer
            if end - start < MIN_NESTED_CHARS:
                continue
            literal = text[start:end]
            line = node.start_point[0] + 1
            try:
                value = js.static_value(literal, crosscheck=CROSSCHECK)
            except ParseError as exc:
                if node.parent is not None and node.parent.type not in ("object", "array",
                                                                        "pair"):
                    reject("<literal>", line, f"{line + exc.line - 1}:{exc.col}: {exc.message}")
                stack.extend(reversed(node.named_children))
                continue
            why = sensitive(value)
            if why:
                reject("<literal>", line, f"sensitive string at {why}")
                continue
            yield Candidate("<literal>", literal, line, value, node.start_point[1] + 1)
            continue
        stack.extend(reversed(node.named_children))


def unit_value(text: str) -> tuple[str, Any]:
    """(binding name, static value) of a unit text parsed on its own."""
    v = js.static_value(text, crosscheck=CROSSCHECK)
    tree = js.parse(text, crosscheck=CROSSCHECK)
    if tree.root.kind == "program":
        (name, value), = v.items()  # type: ignore[union-attr]
        return name, value
    return "", v


def records(text: str, unit_id: str = "",
            on_drop: Callable[[str, str], None] | None = None) -> list[Record]:
    """Records of a unit text (one initializer) read again on its own."""
    name, value = unit_value(text)
    return value_records(name, value, text, unit_id, on_drop)


# ------------------------------------------------------------------ bench hooks (4.1, B.1)

# an IdentifierName: Unicode letters, $, _ and \uXXXX / \u{X...} escapes (`var \u0061`)
_ESC = r"\\u(?:[0-9a-fA-F]{4}|\{[0-9a-fA-F]+\})"
_IDENT = rf"(?:[^\W\d]|\$|{_ESC})(?:[\w$\u200c\u200d]|{_ESC})*"
_NAME = re.compile(rf"(?:export\s+)?(?:const|let|var)\s+({_IDENT})|"
                   rf"(module\.exports)\b|export\s+(default)\b|exports\.({_IDENT})")
_WRAP = re.compile(r"\Aconst entry_\d{4} = ")


def binding(piece_text: str) -> str:
    """The binding name a JS statement piece declares ("" for a bare literal)."""
    m = _NAME.match(piece_text)
    return next((g for g in m.groups() if g), "") if m else ""


def piece(text: str) -> str:
    """A unit as a composed context holds it: its own statement, or the bare literal
    without a trailing semicolon (the frame binds it to ``entry_NNNN``)."""
    body = text.strip()
    return body if binding(body) else body.rstrip(";").rstrip()


def unit_pieces(context: str) -> list[str]:
    """The units of a composed script, one per binding (the frame's wrapper removed)."""
    out = []
    for start, end in js.binding_spans(context):
        src = context[start:end]  # a wrapped bare literal, or the unit's own statement
        m = _WRAP.match(src)
        out.append(src[m.end():-1] if m and src.endswith(";") else src)
    return out


def check_raw(text: str) -> str | None:
    """'line:col: syntax error' of the first tree-sitter ERROR/MISSING node, or None
    (JavaScript is parsed, never run; NUL bytes are valid in its strings)."""
    n = first_syntax_error(syntax_root(text.encode("utf-8", "surrogatepass")))
    if n is None:
        return None
    row, col = n.start_point
    what = f"missing {n.type!r}" if n.is_missing else "syntax error"
    return f"{row + 1}:{col + 1}: {what}"


def _shown_name(cand: Candidate) -> tuple[str, Any]:
    """The binding name as the unit text shows it ("" when the unit is the bare literal)."""
    return (cand.name if not cand.text.lstrip().startswith(("{", "[", "(")) else "", cand.value)


def file_units(text: str, f: UnitFile) -> Iterator[Unit]:
    """The units of one script: each static initializer (top-level bindings; nested
    literals too when ``f.nested``), a rejected one noted with its line."""

    def reject(name: str, line: int, reason: str) -> None:
        f.note(reason, unit=f"{f.id}#{name}@L{line}", line=line)

    for cand in file_candidates(text, reject, nested=f.nested):
        u = f"{f.id}#{cand.local_id}"
        recs = value_records(*_shown_name(cand), cand.text, u, f.drop_for(u))
        yield Unit(id=u, format=f.format, source=f.source, text=cand.text, records=recs,
                   provenance={**f.base, "path": f.base.get("path", f.rel), "line": cand.line,
                               "binding": cand.name if not cand.col else None},
                   flags=f.flags)


BENCH = BenchFormat(
    "javascript", lambda source, text, unit_id="", on_drop=None: records(text, unit_id, on_drop),
    piece, Frame("", "\n", "\n", "const entry_{i} = ", ";", keep=lambda p: bool(binding(p))),
    "{}", unit_pieces, check_raw, binding, file_units, build_cost=5.0)

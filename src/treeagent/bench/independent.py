"""A second reader of every example (paper B.1 "independent validation").

Shares nothing with construction's record extraction (``bench/sources/*_records.py``,
``bench/tasks.py``): it re-reads each stored context with standard parsers -- ``json``,
a YAML 1.2 reader (ruamel.yaml), lxml for HTML (never construction's own tokenizer),
tree-sitter to find the JavaScript statements and ``json5`` to read their values -- finds
every record the stored specification's scope covers as a reader of the context would,
and recomputes the reference from the specification alone:

* a scope is ``sources`` (unit provenance) x ``select`` patterns: key steps from each
  unit's value (``"*"`` any list item, ``"~"`` any mapping member, ``["@any", k1, ...]``
  one of these keys; guards ``["@if", key, value]``, ``["@has", key]``, ``["@lacks",
  key]`` keep a mapping that says what it is; JS patterns start with the binding name,
  ``"@literal"`` for a bare literal, ``"*"`` for any; ``"**"``: every mapping at any
  depth), or what an HTML page shows (``"@table-row"``: rows under a header row;
  ``"@label-table"``: a two-column label/value table; ``"@definition"``; ``"@list-item"``),
  tables laid out as a browser lays them out and values as the page shows them
  (:func:`layout`, :func:`value_of`; docs/fidelity.md "HTML values");
* a field is a key path inside a record (``"@key:-n"``: a key on the way to it,
  ``"@up"``: the enclosing container, ``"[1]"``: the only item of a one-item list;
  HTML ``["@column", header]``, ``["@label", label]``); a value that is a list of
  several items or a mapping has no single answer and the example is not confirmed;
* an absent field takes the scope's ``default`` (documented by the format, e.g. OpenAPI
  ``required: false``); without one, the question must say it counts only the records
  that state the field (``stated_only``); a ``$ref`` record hides its fields;
* most frequent: the k-th count must beat the next one; extremum: attained once and
  further than the scorer's tolerance (C.4) from the runner-up.

:func:`confirm` returns "" when the stored answer is what the specification gives, else
the reason. :func:`read_context` parses a context once for all of its questions.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from collections import Counter, OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import json5

from treeagent import signed_pickle

_MISSING = object()
_WRAPPED = re.compile(r"entry_\d{4}\Z")
_NUM = re.compile(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?\Z")


class Unconfirmed(ValueError):
    """The specification does not give one answer over the context as a reader sees it."""


# ------------------------------------------------------------------ values


def text_form(value: Any) -> str:
    """Case-folded, white-space-collapsed text of a value (1.0 reads as 1)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return " ".join(str(value).split()).casefold()


def as_number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, str) and re.fullmatch(r"\s*-?\d+(?:\.\d+)?\s*", value):
        return float(value)
    return None


def same(a: Any, b: Any) -> bool:
    x, y = as_number(a), as_number(b)
    if x is not None and y is not None:
        return math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-9)
    return text_form(a) == text_form(b)


# ------------------------------------------------------------------ HTML as a reader sees it
#
# Read with lxml (libxml2's HTML parser), never with construction's tokenizer. What a
# value is (docs/fidelity.md, "HTML values"): the text a browser shows -- hidden
# elements, capture-relative text and footnote marks are not part of it; a cell whose
# visible text runs over several lines (``<br>``, list items, blocks) holds a list;
# a table is read as a browser lays it out (rowspan/colspan cells cover every slot
# they span).

_UNSEEN_TAGS = frozenset({"script", "style", "noscript", "template", "head", "title"})
_HIDDEN_CLASSES = frozenset({"sortkey", "visualhide", "visually-hidden", "sr-only",
                             "screen-reader-text", "hidden"})
_HIDDEN_STYLE = re.compile(r"(?:^|;)\s*(?:display\s*:\s*none|visibility\s*:\s*hidden)\b", re.I)
_LINE_TAGS = frozenset(
    "address article aside blockquote br dd div dl dt fieldset figcaption figure footer form "
    "h1 h2 h3 h4 h5 h6 header hr li main nav ol p pre section table tr ul".split())
_CELL_TAGS = frozenset({"td", "th"})
_AGO = re.compile(r"(?:;|\()\s*\d+\s+(?:year|month|week|day)s?"
                  r"(?:(?:,|\s+and)?\s+\d+\s+(?:month|week|day)s?)*\s+ago\)?", re.I)
_AGE_NOW = re.compile(r"\s*\(age\s+\d+\)", re.I)


def parse_html(text: str) -> Any:
    """The document element of ``text`` as lxml reads it."""
    import lxml.html

    parser = lxml.html.HTMLParser(encoding="utf-8", huge_tree=True, remove_comments=True,
                                  remove_pis=True)
    return lxml.html.document_fromstring(text.encode("utf-8", "surrogatepass"), parser=parser)


def unseen(el: Any) -> bool:
    """An element a reader of the rendered page does not see: script/style and the like,
    the ``hidden`` attribute, an inline ``display:none``/``visibility:hidden``, a hidden
    form input, or a class that hides it (Wikipedia's ``sortkey``, ``visually-hidden``,
    ``sr-only``, ``hidden``)."""
    tag = el.tag
    if not isinstance(tag, str) or tag in _UNSEEN_TAGS:
        return True
    if el.get("hidden") is not None or _HIDDEN_STYLE.search(el.get("style") or ""):
        return True
    if tag == "input" and (el.get("type") or "").strip().lower() == "hidden":
        return True
    return bool(_HIDDEN_CLASSES.intersection((el.get("class") or "").split()))


def _hidden_within(el: Any, top: Any) -> bool:
    """Whether ``el`` or an element above it, up to ``top``, is :func:`unseen`."""
    while el is not None:
        if unseen(el):
            return True
        if el is top:
            return False
        el = el.getparent()
    return False


def kids(el: Any, *tags: str) -> list[Any]:
    return [c for c in el if isinstance(c.tag, str) and (not tags or c.tag in tags)]


def lines(el: Any) -> list[str]:
    """The visible text of ``el`` as the lines a browser breaks it into (white space
    collapsed, empty lines left out)."""
    parts: list[str] = []

    def visit(e: Any) -> None:
        if e.text:
            parts.append(e.text)
        for c in e:
            if not unseen(c):
                tag = c.tag
                brk = "\n" if tag in _LINE_TAGS else " " if tag in _CELL_TAGS else ""
                parts.append(brk)
                visit(c)
                parts.append(brk)
            if c.tail:
                parts.append(c.tail)

    if not unseen(el):
        visit(el)
    return [t for t in (" ".join(x.split()) for x in "".join(parts).split("\n")) if t]


def shown(el: Any) -> str:
    """The text a reader sees in an element, on one line."""
    return " ".join(lines(el))


def _is_mark(inside: str) -> bool:
    """What a footnote mark holds between its brackets: a number, one letter, "note 2",
    "nb 1", "n 3", or "citation needed"."""
    word, _, num = inside.rpartition(" ") if " " in inside else ("", "", inside)
    if inside == "citation needed":
        return True
    if not word:
        for pre in ("note", "nb", "n"):  # "note2"
            if inside.startswith(pre) and inside[len(pre):].isdigit():
                num = inside[len(pre):]
                break
        else:
            return (inside.isascii() and inside.isdigit() and len(inside) <= 3) or (
                len(inside) == 1 and inside.isascii() and inside.isalpha())
    elif word not in ("note", "nb", "n"):
        return False
    return num.isascii() and num.isdigit() and 1 <= len(num) <= 3


def unmark(text: str) -> str:
    """Shown text without footnote marks ("Thathanda Cup [6]" -> "Thathanda Cup")."""
    out, i = [], 0
    while i < len(text):
        j = text.find("[", i)
        k = text.find("]", j + 1) if j >= 0 else -1
        if j < 0 or k < 0:
            out.append(text[i:])
            break
        if _is_mark(text[j + 1:k]):
            out.append(text[i:j].rstrip())
        else:
            out.append(text[i:k + 1])
        i = k + 1
    return "".join(out).strip()


def unrelative(text: str) -> str:
    """Text without what depends on when the page was saved: "; 18 years ago",
    "(3 years, 2 months ago)", "(age 45)" ("(aged 28)" at a fixed event stays)."""
    return _AGE_NOW.sub("", _AGO.sub("", text)).strip()


def heading(el: Any) -> str:
    """A column header, row label or term as a reader names it."""
    return unmark(shown(el)).rstrip(":\uff1a").strip()


def cell(text: str) -> Any:
    """A one-line value as a reader states it: no footnote mark, no capture-relative
    text, no leading label separator; plain numbers as numbers (a label's own trailing
    colon, ``Weight:`` or full-width ``：``, is not part of it)."""
    t = unrelative(unmark(text)).lstrip(":\u2013\u2014- \t").strip()
    if _NUM.match(t):
        t2 = t.replace(",", "")
        return float(t2) if "." in t2 else int(t2)
    return t


def value_of(el: Any) -> Any:
    """An element's value: one line as :func:`cell` reads it, several as a list."""
    vals = [v for v in map(cell, lines(el)) if v != ""]
    if len(vals) > 1:
        return vals
    return vals[0] if vals else ""


def _span(raw: str | None, most: int) -> int:
    """A ``colspan``/``rowspan`` as HTML parses it: leading digits, else 1; 0 is kept
    (a ``rowspan`` of 0 runs to the end of its row group)."""
    m = re.match(r"[\t\n\f\r ]*\+?(\d+)", raw or "")
    return min(int(m.group(1)), most) if m else 1


def layout(table: Any) -> list[tuple[list[Any], list[Any]]]:
    """The rows of ``table`` as a browser lays them out: (the cell covering each slot,
    None for an empty one; the cells that start in this row). A ``rowspan`` runs to the
    end of its row group at most; where cells overlap the slot keeps the cell placed
    first."""
    groups: list[list[Any]] = []
    last = None
    for tr in table.iter("tr"):
        parent = tr.getparent()
        if _hidden_within(tr, table):
            continue
        if parent is not table and not (parent.tag in ("thead", "tbody", "tfoot")
                                        and parent.getparent() is table):
            continue
        if parent is not last:
            groups.append([])
            last = parent
        groups[-1].append(tr)
    out: list[tuple[list[Any], list[Any]]] = []
    for group in groups:
        taken: dict[tuple[int, int], Any] = {}
        for r, tr in enumerate(group):
            own = [c for c in kids(tr, "td", "th") if not unseen(c)]
            col = 0
            for td in own:
                while (r, col) in taken:
                    col += 1
                cs = max(1, _span(td.get("colspan"), 1000))
                rs = _span(td.get("rowspan"), 65534) or len(group) - r
                for dr in range(min(rs, len(group) - r)):
                    for dc in range(cs):
                        taken.setdefault((r + dr, col + dc), td)
                col += cs
            width = 1 + max((c for (rr, c) in taken if rr == r), default=-1)
            out.append(([taken.get((r, c)) for c in range(width)], own))
    return out


def _table_rows(table: Any) -> list[dict]:
    """Records of a table whose first row holds unique column headers (``th`` only):
    every later row with a ``td`` of its own that no single cell spans across, each
    column's value being that of the cell covering it."""
    grid = [g for g in layout(table) if g[1]]
    if len(grid) < 2:
        return []
    head, head_own = grid[0]
    names = [heading(c) if c is not None else "" for c in head]
    if (len(names) < 2 or not head_own or any(c.tag != "th" for c in head_own)
            or not all(names) or len(set(names)) != len(names)):
        return []
    out = []
    for slots, own in grid[1:]:
        if not any(c.tag == "td" for c in own):
            continue
        covering = slots[:len(names)]
        if len(names) > 1 and len(covering) == len(names) and len({id(c) for c in covering}) == 1:
            continue  # one cell across the whole row: a caption or separator row
        rec = {}
        for n, c in zip(names, covering):
            if c is not None and (v := value_of(c)) != "":
                rec[("@column", n)] = v
        if rec:
            out.append(rec)
    return out


def _label_table(table: Any) -> dict | None:
    rows = [own for _, own in layout(table) if own]
    if len(rows) < 2:
        return None
    body = rows[1:] if len(rows[0]) == 1 and len(rows) >= 3 else rows
    if len(body) >= 2 and all(len(p) == 2 for p in body):
        return {("@label", heading(a)): value_of(b) for a, b in body}
    return None


def _html_records(unit: Any, select: Sequence[Any]) -> list[tuple[dict, list, list]]:
    """HTML records of one unit as (fields by reader key, [], []) triples."""
    what = select[0] if select else ""
    out: list[tuple[dict, list, list]] = []
    if what in ("@table-row", "@label-table"):
        for table in unit.iter("table"):
            if _hidden_within(table, unit) or any(t is not table for t in table.iter("table")):
                continue
            if what == "@table-row":
                out += [(rec, [], []) for rec in _table_rows(table)]
            elif (rec := _label_table(table)) is not None:
                out.append((rec, [], []))
    elif what == "@definition":
        for dl in unit.iter("dl"):
            if _hidden_within(dl, unit):
                continue
            ks = [k for k in kids(dl) if not unseen(k)]
            for a, b in zip(ks, ks[1:]):
                if a.tag == "dt" and b.tag == "dd":
                    out.append(({("@term",): heading(a), ("@definition",): value_of(b)}, [], []))
    elif what == "@list-item":
        for lst in unit.iter("ul", "ol"):
            if _hidden_within(lst, unit):
                continue
            out += [({("@text",): t}, [], []) for li in kids(lst, "li")
                    if (t := unrelative(unmark(shown(li))))]
    else:
        raise Unconfirmed(f"no reader-level address for HTML records {list(select)!r}")
    return out


# ------------------------------------------------------------------ reading a context


@dataclass(slots=True)
class Reading:
    """A context as a second reader parsed it: one value per unit, in document order
    (JS: ``(binding name, value)``; HTML: the unit's element)."""

    format: str
    units: list[Any]
    errors: dict[int, str] = field(default_factory=dict)  # unit -> why it is unreadable
    found: dict[tuple[int, str], list[Any]] = field(default_factory=dict)  # the records
    # of a unit by address, found once for all the questions over the context


def _yaml_reader() -> Any:
    from ruamel.yaml import YAML
    from ruamel.yaml.constructor import SafeConstructor

    class _Keep(SafeConstructor):  # timestamps as written, like every other scalar text
        pass

    _Keep.add_constructor("tag:yaml.org,2002:timestamp", SafeConstructor.construct_yaml_str)
    y = YAML(typ="safe", pure=True)
    y.Constructor = _Keep
    return y


_DOC_START = re.compile(r"^---[ \t]*$\n?", re.M)
_CACHE: OrderedDict[str, tuple[int, Any]] = OrderedDict()  # key -> (characters, reading)
_CACHE_CHARS = [0]
CACHE_LIMIT = 20_000_000  # characters of unit text whose reading is kept


_SHARED: list[tuple[str, str] | None] = [None]


def share_readings(folder: str | os.PathLike[str] | None, key: str = "") -> None:
    """Keep each unit's reading in ``folder`` as well, signed with ``key``
    (:mod:`treeagent.signed_pickle`; a folder the processes of one build all see, the key
    handed to them with their task; None: stop): a process that finds a unit's reading
    there under that key loads it instead of parsing the unit again. A reading is this
    reader's own, of the same text."""
    _SHARED[0] = (os.fspath(folder), key) if folder and key else None


def _shared_file(key: str) -> str | None:
    shared = _SHARED[0]
    if shared is None:
        return None
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()
    return os.path.join(shared[0], f"reading-{digest}.pickle")


def _load_shared(path: str) -> Any:
    shared = _SHARED[0]
    boxed = None if shared is None else signed_pickle.load(path, shared[1])
    return boxed[0] if isinstance(boxed, tuple) and len(boxed) == 1 else _MISSING


def _save_shared(path: str, value: Any) -> None:
    shared = _SHARED[0]
    if shared is not None:  # a failed write only loses the saving: the reading stands
        signed_pickle.dump((value,), path, shared[1])


def _cached(kind: str, text: str, read: Any) -> Any:
    """A unit's reading, kept while the texts kept stay under :data:`CACHE_LIMIT`
    characters (least recently used first out): contexts of one grid share most of
    their units; and in the folder of :func:`share_readings`, when there is one."""
    key = f"{kind}\0{text}"
    hit = _CACHE.get(key)
    if hit is not None:
        _CACHE.move_to_end(key)
        return hit[1]
    path = _shared_file(key)
    value = _MISSING if path is None else _load_shared(path)
    if value is _MISSING:
        value = read(text)
        if path is not None:
            _save_shared(path, value)
    while _CACHE and _CACHE_CHARS[0] + len(text) > CACHE_LIMIT:
        _CACHE_CHARS[0] -= _CACHE.popitem(last=False)[1][0]
    _CACHE[key] = (len(text), value)
    _CACHE_CHARS[0] += len(text)
    return value


def _read_yaml(text: str) -> list[Any]:
    """The documents of a YAML stream, each read on its own (a ``---`` line starts one);
    the whole stream is read at once when a document does not parse alone."""
    starts = [m.start() for m in _DOC_START.finditer(text)]
    if not starts or text[:starts[0]].strip():
        return list(_yaml_reader().load_all(text))
    bounds = [*starts, len(text)]
    docs = []
    for a, b in zip(bounds, bounds[1:]):
        try:
            docs.append(_cached("yaml", text[a:b], lambda t: _yaml_reader().load(t)))
        except Exception:  # noqa: BLE001 - e.g. a '---' line inside a block scalar
            return list(_yaml_reader().load_all(text))
    return docs


def read_context(fmt: str, text: str) -> Reading:
    """Parse ``text`` (a composed context) with standard parsers; raises
    :class:`Unconfirmed` when it is not a document of ``fmt`` made of units."""
    try:
        if fmt == "json":
            value = json.loads(text)
            if not isinstance(value, list):
                raise Unconfirmed("a JSON context must be a list of responses")
            return Reading(fmt, value)
        if fmt == "yaml":
            return Reading(fmt, _read_yaml(text))
        if fmt == "html":
            body = parse_html(text).find("body")
            if body is None:
                raise Unconfirmed("no <body>")
            return Reading(fmt, kids(body, "section"))
        if fmt == "javascript":
            return _read_js(text)
        from treeagent.bench.second_readers import plugin_units  # a plug-in format's own
        units = plugin_units(fmt, text)
        if units is not None:
            return Reading(fmt, units)
    except Unconfirmed:
        raise
    except Exception as exc:  # noqa: BLE001 - any parser's error is a reason
        raise Unconfirmed(f"{fmt} context does not parse: {exc}") from exc
    raise Unconfirmed(f"unknown format {fmt!r}")


def _read_js(text: str) -> Reading:
    """Top-level statements found by tree-sitter; each bound value read from its syntax
    tree (json5 for what the walk leaves, :func:`_js_value`)."""
    import tree_sitter_javascript
    from tree_sitter import Language, Parser

    data = text.encode("utf-8", "surrogatepass")
    root = Parser(Language(tree_sitter_javascript.language())).parse(data).root_node
    if root.has_error:
        raise Unconfirmed("JavaScript context has a syntax error")
    units: list[Any] = []
    errors: dict[int, str] = {}

    def src(n: Any) -> str:
        return data[n.start_byte:n.end_byte].decode("utf-8", "surrogatepass")

    for stmt in root.named_children:
        if stmt.type == "comment":
            continue
        node = stmt
        if node.type == "export_statement":
            decl = node.child_by_field_name("declaration")
            val = node.child_by_field_name("value")
            if decl is None and val is not None:
                name, value = "default", val
                node = None
            else:
                node = decl
        if node is not None and node.type in ("lexical_declaration", "variable_declaration"):
            decls = [c for c in node.named_children if c.type == "variable_declarator"]
            if len(decls) != 1:
                raise Unconfirmed("a statement declares several bindings")
            name = src(decls[0].child_by_field_name("name"))
            value = decls[0].child_by_field_name("value")
        elif node is not None and node.type == "expression_statement":
            expr = node.named_children[0]
            if expr.type != "assignment_expression":
                raise Unconfirmed(f"unexpected statement {expr.type}")
            left = src(expr.child_by_field_name("left"))
            name = left if left == "module.exports" else left.removeprefix("exports.")
            value = expr.child_by_field_name("right")
        elif node is not None:
            raise Unconfirmed(f"unexpected statement {node.type}")
        if _WRAPPED.match(name):
            name = "@literal"
        try:
            units.append((name, _cached("js", src(value), lambda t, v=value: _js_value(t, v, src))))
        except Unconfirmed as exc:
            errors[len(units)] = f"cannot read {name!r}: {exc}"
            units.append((name, _MISSING))
    return Reading("javascript", units, errors)


def _js_value(text: str, node: Any, src: Any) -> Any:
    """A bound value from its syntax tree (:func:`_literal`), or by json5 where the tree
    holds what the walk does not state (``NaN``, ``Infinity``)."""
    try:
        return _literal(node, src)
    except Unconfirmed as exc:
        try:
            return json5.loads(text)
        except Exception:  # noqa: BLE001 - the walk's reason is the clearer one
            raise exc from None


_PLAIN_INT = re.compile(r"(?:0|[1-9][0-9]*)\Z")
_PLAIN_FLOAT = re.compile(r"(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?\Z")


# a \u{X...} code point escape (ES2015; not JSON5), not itself escaped
_CODE_POINT = re.compile(r"(?<!\\)((?:\\\\)*)\\u\{([0-9a-fA-F]+)\}")


def _code_point(m: re.Match) -> str:
    cp = int(m.group(2), 16)
    if cp > 0x10FFFF:
        raise Unconfirmed(f"code point escape {m.group(0)[len(m.group(1)):]} out of range")
    if cp > 0xFFFF:  # as the character itself: json5 would leave a pair of surrogates
        return m.group(1) + chr(cp)
    return f"{m.group(1)}\\u{cp:04x}"


def _js_string(quoted: str, template: bool = False) -> Any:
    """A quoted JS string literal's value (a template's as ``"..."``): its text where it
    has no escape (a template's line ends as ``\\n``), by the C ``json`` decoder where
    its escapes are JSON's, else by json5 after its code point escapes are written as
    the character or a ``\\uXXXX`` escape; Unconfirmed where json5 refuses."""
    body = quoted[1:-1]
    if "\\" not in body:
        return body.replace("\r\n", "\n").replace("\r", "\n") if template else body
    if quoted[0] == '"' and not template:
        try:
            return json.loads(quoted)
        except ValueError:
            pass
    if template:
        quoted = '"' + body.replace('"', '\\"').replace("\n", "\\n") + '"'
    try:
        return json5.loads(_CODE_POINT.sub(_code_point, quoted))
    except Unconfirmed:
        raise
    except Exception as exc:  # noqa: BLE001 - json5's error is the reason
        raise Unconfirmed(f"string {quoted[:40]!r}: {exc}") from None


def _named(node: Any) -> list[Any]:
    """A node's named children without comments (``/** @type {T} */ (x)`` is x)."""
    return [c for c in node.named_children if c.type != "comment"]


def _literal(node: Any, src: Any) -> Any:
    """A static JS literal from its tree-sitter node (objects, arrays, strings, template
    literals without substitutions, numbers, signs, true/false/null); anything else
    is not a value a reader can state."""
    t = node.type
    if t == "parenthesized_expression":
        return _literal(_named(node)[0], src)
    if t == "object":
        out = {}
        for pair in _named(node):
            if pair.type != "pair":
                raise Unconfirmed(f"{pair.type} in an object")
            k = pair.child_by_field_name("key")
            if k.type == "computed_property_name":
                raise Unconfirmed(f"computed key {src(k)}")
            if k.type in ("string", "number"):
                key = str(_literal(k, src))
            else:
                key = src(k)
                if "\\" in key:  # an identifier with escapes: `\u0061` is `a`
                    key = _js_string(f'"{key}"')
            out[key] = _literal(pair.child_by_field_name("value"), src)
        return out
    if t == "array":
        after_comma = True  # an elision (`[1, , 2]`) is a hole, not a value
        for c in node.children[1:-1]:
            if c.type == ",":
                if after_comma:
                    raise Unconfirmed("an array with a hole")
                after_comma = True
            elif c.type != "comment":
                after_comma = False
        return [_literal(c, src) for c in _named(node)]
    if t in ("string", "template_string"):
        if any(c.type == "template_substitution" for c in node.named_children):
            raise Unconfirmed("a template literal with substitutions")
        return _js_string(src(node), t == "template_string")
    if t == "number":
        text = src(node)
        if _PLAIN_INT.match(text):
            return int(text)
        if _PLAIN_FLOAT.match(text):
            return float(text)
        try:
            return json5.loads(src(node))
        except Exception as exc:  # noqa: BLE001 - e.g. 0o17, 1_000: not JSON5
            raise Unconfirmed(f"number {src(node)!r}: {exc}") from None
    if t in ("true", "false", "null"):
        return {"true": True, "false": False, "null": None}[t]
    if t == "unary_expression" and src(node)[:1] in "-+":
        v = _literal(_named(node)[0], src)
        if isinstance(v, int | float) and not isinstance(v, bool):
            return -v if src(node)[0] == "-" else v
    raise Unconfirmed(f"{t} is not a static value")


# ------------------------------------------------------------------ scope


Found = tuple[Any, list[Any], list[Any]]  # (record, keys on the way, containers above)


def _select(value: Any, pattern: Sequence[Any]) -> list[Found]:
    """Mappings reached from ``value`` by ``pattern`` (with their keys and ancestors)."""
    frontier: list[Found] = [(value, [], [])]
    for step in pattern:
        nxt: list[Found] = []
        for v, ks, up in frontier:
            if step == "**":  # every mapping at any depth, this one included
                todo: list[Found] = [(v, ks, up)]
                while todo:
                    x, xk, xu = todo.pop()
                    if isinstance(x, dict):
                        nxt.append((x, xk, xu))
                        todo += [(y, [*xk, k], [*xu, x]) for k, y in x.items()]
                    elif isinstance(x, list):
                        todo += [(y, [*xk, i], [*xu, x]) for i, y in enumerate(x)]
            elif step == "*" and isinstance(v, list):
                nxt += [(x, [*ks, i], [*up, v]) for i, x in enumerate(v)]
            elif step == "~" and isinstance(v, dict):
                nxt += [(x, [*ks, k], [*up, v]) for k, x in v.items()]
            elif isinstance(step, list | tuple) and step[:1] == ["@any"] or (
                    isinstance(step, tuple) and step[:1] == ("@any",)):
                if isinstance(v, dict):
                    nxt += [(v[k], [*ks, k], [*up, v]) for k in step[1:] if k in v]
            elif isinstance(step, list | tuple) and step[:1] in (["@if"], ("@if",)):
                if isinstance(v, dict) and v.get(step[1]) == step[2]:
                    nxt.append((v, ks, up))  # a guard: this mapping says what it is
            elif isinstance(step, list | tuple) and step[:1] in (["@has"], ("@has",)):
                if isinstance(v, dict) and step[1] in v:
                    nxt.append((v, ks, up))
            elif isinstance(step, list | tuple) and step[:1] in (["@lacks"], ("@lacks",)):
                if isinstance(v, dict) and step[1] not in v:
                    nxt.append((v, ks, up))
            elif isinstance(step, str) and step not in ("*", "~") and isinstance(v, dict):
                if step in v:
                    nxt.append((v[step], [*ks, step], [*up, v]))
        frontier = nxt
    return [f for f in frontier if isinstance(f[0], dict)]


def records_in(reading: Reading, unit_sources: Sequence[str], sources: Sequence[str],
               selects: Sequence[Sequence[Any]]) -> list[Found]:
    """Every record a reader finds in the units of ``sources`` by any of ``selects``."""
    out: list[Found] = []
    for i, (unit, src) in enumerate(zip(reading.units, unit_sources)):
        if src not in sources:
            continue
        for sel in selects:
            if reading.format == "html":
                key = (i, repr(sel[0] if sel else ""))  # all _html_records looks at
                if key not in reading.found:
                    reading.found[key] = _html_records(unit, sel)
                out += reading.found[key]
            elif reading.format == "javascript":
                name, value = unit
                if sel and sel[0] in (name, "*"):
                    if i in reading.errors:  # a unit in scope the reader cannot read
                        raise Unconfirmed(reading.errors[i])
                    out += _found(reading, i, value, sel[1:])
            else:
                out += _found(reading, i, unit, sel)
    return out


def _found(reading: Reading, i: int, value: Any, pattern: Sequence[Any]) -> list[Found]:
    """:func:`_select` of unit ``i``, once per context for each pattern asked."""
    key = (i, repr(pattern))
    hit = reading.found.get(key)
    if hit is None:
        hit = reading.found[key] = _select(value, pattern)
    return hit


def value_at(found: Found, path: Sequence[Any]) -> Any:
    """The scalar at ``path`` in a found record; ``_MISSING`` when absent or null.
    Raises :class:`Unconfirmed` for a list of several items or a mapping."""
    rec, ks, up = found
    if path and isinstance(path[0], str) and path[0].startswith("@") and isinstance(rec, dict):
        head = path[0]
        if tuple(path) in rec:  # HTML reader keys
            v = rec[tuple(path)]
            if isinstance(v, list):  # a cell of several lines: a list, not one value
                raise Unconfirmed(f"a list of {len(v)} items where one value is asked")
            return v
        if head.startswith("@key:"):
            n = int(head[5:])
            return ks[n] if -n <= len(ks) else _MISSING
        if head in ("@column", "@label", "@term", "@definition", "@text"):
            return _MISSING
    cur, stack = rec, list(up)
    for step in path:
        if step == "@up":
            if not stack:
                return _MISSING
            cur = stack.pop()
            continue
        if step == "[1]":
            if not isinstance(cur, list):
                return _MISSING
            if len(cur) != 1:
                raise Unconfirmed(f"{len(cur)} items where one value is asked")
            cur = cur[0]
            continue
        if isinstance(cur, list) and isinstance(step, int):
            cur = cur[step] if -len(cur) <= step < len(cur) else _MISSING
        elif isinstance(cur, dict):
            cur = cur.get(step, _MISSING)
        else:
            return _MISSING
        if cur is _MISSING:
            return _MISSING
    if cur is None:
        return _MISSING
    if isinstance(cur, list):
        if len(cur) == 1 and not isinstance(cur[0], dict | list):
            raise Unconfirmed("a one-item list where a value is asked")
        raise Unconfirmed(f"a list of {len(cur)} items where one value is asked")
    if isinstance(cur, dict):
        raise Unconfirmed("an object where one value is asked")
    return cur


def _scoped_values(spec: Mapping[str, Any], reading: Reading,
                   unit_sources: Sequence[str]) -> list[Any]:
    scope = spec["scope"]
    if scope.get("over") != "context" or scope.get("kind") != spec["kind"]:
        raise Unconfirmed(f"unsupported scope {scope!r}")
    found = records_in(reading, unit_sources, scope["sources"], scope["select"])
    if not found:
        raise Unconfirmed(f"no {spec['kind']} in the context")
    path = scope["field"]
    values, missing = [], 0
    for f in found:
        if (reading.format == "yaml" and isinstance(f[0], dict) and "$ref" in f[0]
                and not str(path[0]).startswith("@key")):  # an OpenAPI reference
            raise Unconfirmed("a $ref record in scope hides the field")
        v = value_at(f, path)
        if v is _MISSING:
            if "default" in scope:
                v = scope["default"]
            else:
                missing += 1
                continue
        values.append(v)
    if missing and not scope.get("stated_only"):
        raise Unconfirmed(f"{missing} of {len(found)} records state no {spec['kind']} "
                          "field, but the question counts all")
    if not missing and scope.get("stated_only"):
        raise Unconfirmed("the question says 'that state it' but every record does")
    if not values:
        raise Unconfirmed("no record states the field")
    return values


def _one(where: Mapping[str, Any], path: Sequence[Any], reading: Reading,
         unit_sources: Sequence[str]) -> Any:
    found = records_in(reading, unit_sources, [where["source"]], [where["select"]])
    hits = []
    for f in found:
        try:
            if all(same(value_at(f, p), v) for p, v in where["anchor"]):
                hits.append(f)
        except Unconfirmed:
            continue
    if len(hits) != 1:
        raise Unconfirmed(f"{len(hits)} records match {where['anchor']!r}")
    v = value_at(hits[0], path)
    if v is _MISSING:
        raise Unconfirmed(f"the record has nothing at {path!r}")
    return v


def execute(spec: Mapping[str, Any], reading: Reading, unit_sources: Sequence[str]) -> Any:
    """The answer the specification gives over ``reading`` (module docstring)."""
    op = spec["op"]
    if op == "lookup":
        vals = [_one(spec["at"], p, reading, unit_sources) for p in spec["keys"]]
        return vals[0] if spec.get("shape") == "value" else vals
    if op == "lookup_records":
        return [_one(w, p, reading, unit_sources) for w, p in zip(spec["at"], spec["keys"])]
    values = _scoped_values(spec, reading, unit_sources)
    if op == "count":
        w = spec["where"]
        if w["cmp"] == "eq":
            return sum(1 for v in values if same(v, w["value"]))
        bound = float(w["value"])
        nums = [as_number(v) if not isinstance(v, str) else None for v in values]
        if any(x is None for x in nums):
            raise Unconfirmed("a non-numeric value in a numeric comparison")
        return sum(1 for x in nums if (x > bound if w["cmp"] == "gt" else x < bound))
    if op == "most_frequent":
        k = int(spec["k"])
        ranked = Counter(text_form(v) for v in values).most_common()
        if len(ranked) <= k or ranked[k - 1][1] < 2 or ranked[k - 1][1] == ranked[k][1]:
            raise Unconfirmed(f"most frequent {k}: tie or too few ({ranked[:k + 1]})")
        return [v for v, _ in ranked[:k]]
    if op == "extremum":
        nums = [as_number(v) if not isinstance(v, str) else None for v in values]
        if any(x is None for x in nums):
            raise Unconfirmed("a value that is not a number")
        best = max(nums) if spec["fn"] == "max" else min(nums)  # type: ignore[type-var]
        if nums.count(best) != 1:
            raise Unconfirmed(f"{spec['fn']} {best} attained {nums.count(best)} times")
        rest = [x for x in nums if x != best]
        near = min(rest, key=lambda x: abs(x - best)) if rest else None
        if near is not None and abs(near - best) <= max(0.01, 0.001 * abs(best)):
            raise Unconfirmed(f"{spec['fn']} {best} is a near-tie with {near} (C.4 tolerance)")
        return best
    raise Unconfirmed(f"unknown op {op!r}")


def agrees(task: str, got: Any, stored: Any) -> bool:
    if isinstance(got, list) != isinstance(stored, list):
        return False
    if not isinstance(got, list):
        return same(got, stored)
    if len(got) != len(stored):
        return False
    if task == "most_frequent":
        return sorted(map(text_form, got)) == sorted(map(text_form, stored))
    return all(same(a, b) for a, b in zip(got, stored))


def confirm(task: str, spec: Mapping[str, Any], answer: Any, reading: Reading,
            unit_sources: Sequence[str]) -> str:
    """"" when the specification, executed over the context as read here, gives exactly
    the stored ``answer``; else the reason."""
    try:
        got = execute(spec, reading, unit_sources)
    except Unconfirmed as exc:
        return str(exc)
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        return f"malformed specification: {type(exc).__name__}: {exc}"
    if not agrees(task, got, answer):
        return f"second reader gives {json.dumps(got, default=str)[:120]}"
    return ""

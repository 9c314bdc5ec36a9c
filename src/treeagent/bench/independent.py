"""A second reader of every example (paper B.1 "independent validation").

Shares nothing with construction's record extraction (``bench/sources/*_records.py``,
``bench/tasks.py``): it re-reads each stored context with standard parsers -- ``json``,
a YAML 1.2 reader (ruamel.yaml), the standard library's HTML tokenizer, tree-sitter to
find the JavaScript statements and ``json5`` to read their values -- finds every record
the stored specification's scope covers as a reader of the context would, and recomputes
the reference from the specification alone:

* a scope is ``sources`` (unit provenance) x ``select`` patterns: key steps from each
  unit's value (``"*"`` any list item, ``"~"`` any mapping member, ``["@any", k1, ...]``
  one of these keys; guards ``["@if", key, value]``, ``["@has", key]``, ``["@lacks",
  key]`` keep a mapping that says what it is; JS patterns start with the binding name,
  ``"@literal"`` for a bare literal, ``"*"`` for any; ``"**"``: every mapping at any
  depth), or what an HTML page shows (``"@table-row"``: rows under a header row;
  ``"@label-table"``: a two-column label/value table; ``"@definition"``; ``"@list-item"``);
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

import json
import math
import re
from collections import Counter, OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

import json5

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

_VOID = frozenset("area base br col embed hr img input link meta param source track wbr".split())
_CLOSES = {"td": {"td", "th"}, "th": {"td", "th"}, "tr": {"tr", "td", "th"},
           "li": {"li"}, "dt": {"dt", "dd"}, "dd": {"dt", "dd"}, "p": {"p"},
           "tbody": {"tbody", "thead", "tr", "td", "th"}, "tfoot": {"tbody", "thead", "tr", "td", "th"}}
_BOUNDARY = frozenset({"br", "td", "th", "li", "p", "div"})


@dataclass(slots=True)
class El:
    tag: str
    children: list[Any] = field(default_factory=list)  # El or str


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = El("#root")
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        closes = _CLOSES.get(tag, set())
        while len(self.stack) > 1 and self.stack[-1].tag in closes:
            self.stack.pop()
        el = El(tag)
        self.stack[-1].children.append(el)
        if tag not in _VOID:
            self.stack.append(el)

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.stack) - 1, 0, -1):
            if self.stack[i].tag == tag:
                del self.stack[i:]
                return

    def handle_data(self, data: str) -> None:
        if self.stack[-1].tag not in ("script", "style"):
            self.stack[-1].children.append(data)


def parse_html(text: str) -> El:
    b = _Builder()
    b.feed(text)
    b.close()
    return b.root


def kids(el: El, *tags: str) -> list[El]:
    return [c for c in el.children if isinstance(c, El) and (not tags or c.tag in tags)]


def walk(el: El) -> Iterator[El]:
    stack = [el]
    while stack:
        e = stack.pop()
        yield e
        stack.extend(reversed(kids(e)))


def shown(el: El) -> str:
    """The text a reader sees in an element (white space collapsed)."""
    parts: list[str] = []
    stack: list[Any] = [el]
    while stack:
        n = stack.pop()
        if isinstance(n, str):
            parts.append(n)
            continue
        if n.tag in _BOUNDARY:
            parts.append(" ")
        stack.extend(reversed(n.children))
    return " ".join("".join(parts).split())


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


def heading(el: El) -> str:
    """A column header, row label or term as a reader names it."""
    return unmark(shown(el)).rstrip(":\uff1a").strip()


def cell(text: str) -> Any:
    """A cell as a reader states it: no footnote mark, no leading label separator; plain
    numbers as numbers (a label's own trailing colon, ``Weight:`` or full-width ``：``,
    is not part of it)."""
    t = unmark(text).lstrip(":\u2013\u2014- \t").strip()
    if _NUM.match(t):
        t2 = t.replace(",", "")
        return float(t2) if "." in t2 else int(t2)
    return t


def _html_records(unit: El, select: Sequence[Any]) -> list[tuple[dict, list, list]]:
    """HTML records of one unit as (fields by reader key, [], []) triples."""
    what = select[0] if select else ""
    out: list[tuple[dict, list, list]] = []
    if what in ("@table-row", "@label-table"):
        for table in (e for e in walk(unit) if e.tag == "table"):
            if any(e.tag == "table" for e in walk(table) if e is not table):
                continue
            rows = [r for r in kids(table, "tr")]
            for sec in kids(table, "thead", "tbody", "tfoot"):
                rows += kids(sec, "tr")
            rows = [r for r in rows if kids(r, "td", "th")]
            order = {id(e): i for i, e in enumerate(walk(table))}
            rows.sort(key=lambda r: order[id(r)])
            if len(rows) < 2:
                continue
            head = kids(rows[0], "td", "th")
            if what == "@table-row":
                names = [heading(c) for c in head]
                if (len(head) < 2 or any(c.tag != "th" for c in head) or not all(names)
                        or len(set(names)) != len(names)):
                    continue
                for r in rows[1:]:
                    cs = kids(r, "td", "th")
                    if len(cs) == len(names):
                        out.append(({("@column", n): cell(shown(c)) for n, c in zip(names, cs)},
                                    [], []))
            else:
                body = rows[1:] if len(head) == 1 and len(rows) >= 3 else rows
                pairs = [kids(r, "td", "th") for r in body]
                if len(body) >= 2 and all(len(p) == 2 for p in pairs):
                    out.append(({("@label", heading(a)): cell(shown(b))
                                 for a, b in pairs}, [], []))
    elif what == "@definition":
        for dl in (e for e in walk(unit) if e.tag == "dl"):
            ks = kids(dl)
            for a, b in zip(ks, ks[1:]):
                if a.tag == "dt" and b.tag == "dd":
                    out.append(({("@term",): heading(a),
                                 ("@definition",): cell(shown(b))}, [], []))
    elif what == "@list-item":
        for lst in (e for e in walk(unit) if e.tag in ("ul", "ol")):
            out += [({("@text",): shown(li)}, [], []) for li in kids(lst, "li") if shown(li)]
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


def _cached(kind: str, text: str, read: Any) -> Any:
    """A unit's reading, kept while the texts kept stay under :data:`CACHE_LIMIT`
    characters (least recently used first out): contexts of one grid share most of
    their units."""
    key = f"{kind}\0{text}"
    hit = _CACHE.get(key)
    if hit is not None:
        _CACHE.move_to_end(key)
        return hit[1]
    value = read(text)
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
            root = parse_html(text)
            body = next((e for e in walk(root) if e.tag == "body"), None)
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
    """Top-level statements found by tree-sitter; each bound value read by json5 (or,
    for JavaScript beyond JSON5 such as template literals, from its syntax tree)."""
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
    try:
        return json5.loads(text)
    except Exception:  # noqa: BLE001 - JS beyond JSON5: template literals ...
        return _literal(node, src)


def _literal(node: Any, src: Any) -> Any:
    """A static JS literal from its tree-sitter node (objects, arrays, strings, template
    literals without substitutions, numbers, signs, true/false/null); anything else
    is not a value a reader can state."""
    t = node.type
    if t == "parenthesized_expression":
        return _literal(node.named_children[0], src)
    if t == "object":
        out = {}
        for pair in node.named_children:
            if pair.type == "comment":
                continue
            if pair.type != "pair":
                raise Unconfirmed(f"{pair.type} in an object")
            k = pair.child_by_field_name("key")
            key = _literal(k, src) if k.type in ("string", "number") else src(k)
            out[str(key)] = _literal(pair.child_by_field_name("value"), src)
        return out
    if t == "array":
        return [_literal(c, src) for c in node.named_children if c.type != "comment"]
    if t in ("string", "template_string"):
        if any(c.type == "template_substitution" for c in node.named_children):
            raise Unconfirmed("a template literal with substitutions")
        body = src(node)[1:-1]
        return json5.loads('"' + body.replace('"', '\\"').replace("\n", "\\n") + '"') \
            if t == "template_string" else json5.loads(src(node))
    if t == "number":
        return json5.loads(src(node))
    if t in ("true", "false", "null"):
        return {"true": True, "false": False, "null": None}[t]
    if t == "unary_expression" and src(node)[:1] in "-+":
        v = _literal(node.named_children[0], src)
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
                out += _html_records(unit, sel)
            elif reading.format == "javascript":
                name, value = unit
                if sel and sel[0] in (name, "*"):
                    if i in reading.errors:  # a unit in scope the reader cannot read
                        raise Unconfirmed(reading.errors[i])
                    out += _select(value, sel[1:])
            else:
                out += _select(unit, sel)
    return out


def value_at(found: Found, path: Sequence[Any]) -> Any:
    """The scalar at ``path`` in a found record; ``_MISSING`` when absent or null.
    Raises :class:`Unconfirmed` for a list of several items or a mapping."""
    rec, ks, up = found
    if path and isinstance(path[0], str) and path[0].startswith("@") and isinstance(rec, dict):
        head = path[0]
        if tuple(path) in rec:  # HTML reader keys
            return rec[tuple(path)]
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

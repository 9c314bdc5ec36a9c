"""HTML units and records (B.1 "HTML dataset"): tables (records: rows, or the label/value
pairs of a two-column table), lists (records: items) and repeated DOM blocks (records:
the repeated blocks) cut out of a page as units; the page parser tolerates broken HTML.
"""

from __future__ import annotations

import html as htmllib
import re
from collections import Counter
from collections.abc import Callable, Iterator

from treeagent.algorithm.tree import Node, Tree
from treeagent.bench.accepted import parenthetical_forms
from treeagent.bench.model import BenchFormat, Frame, Record, Scalar, Unit, UnitFile
from treeagent.bench.sources.common import (
    MAX_VALUE_CHARS,
    humanize,
    name_fields,
    namelike,
    parsed_or_reason,
    visible,
)
from treeagent.formats import html as html_format

_START_TAG = re.compile(r"""<[^\s/>]+((?:[^>"']|"[^"]*"|'[^']*')*)>""")
_CLASS = re.compile(r"""\sclass\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))""", re.I)
_WS = re.compile(r"\s+")
_NUMBER = re.compile(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?\Z")
_SECTIONS = ("thead", "tbody", "tfoot")
_SEMANTIC = re.compile(r"[A-Za-z][A-Za-z_-]{2,}\Z")
_GENERIC = frozenset("flex col row clearfix container wrapper inner outer left right clear "
                     "hidden visible active first last odd even item items".split())
MIN_ITEMS = 2


def elements(node: Node, tag: str | None = None) -> list[Node]:
    return [c for c in node.children if c.kind == "element" and (tag is None or c.label == tag)]


_ATTRIBUTE = re.compile(r"""([^\s"'>/=]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+)))?""")
_NOT_RENDERED = frozenset(("script", "style", "noscript", "template", "head", "title"))
_HIDING_CLASSES = frozenset(("sortkey", "visualhide", "visually-hidden", "sr-only",
                             "screen-reader-text", "hidden"))
_HIDING_HINT = re.compile(r"hidden|none|sortkey|visualhide|sr-only|screen-reader", re.I)
_NONE_STYLE = re.compile(r"(?:^|;)\s*(?:display\s*:\s*none|visibility\s*:\s*hidden)\b", re.I)
_BREAKS = frozenset(
    "address article aside blockquote br dd div dl dt fieldset figcaption figure footer form "
    "h1 h2 h3 h4 h5 h6 header hr li main nav ol p pre section table tr ul".split())


def attributes(tree: Tree, node: Node) -> dict[str, str]:
    """The attributes of an element's start tag (names lower-cased, values decoded; the
    first of a repeated name wins, as in HTML)."""
    m = _START_TAG.match(tree.text, node.start)
    out: dict[str, str] = {}
    if m:
        for a in _ATTRIBUTE.finditer(m.group(1)):
            raw = next((g for g in a.groups()[1:] if g is not None), "")
            out.setdefault(a.group(1).lower(), htmllib.unescape(raw))
    return out


def hidden(tree: Tree, node: Node) -> bool:
    """An element the rendered page does not show (docs/fidelity.md "HTML values"):
    script, style, noscript, template, head; the ``hidden`` attribute; an inline
    ``display:none`` or ``visibility:hidden``; ``<input type=hidden>``; a hiding class
    (``sortkey``, ``visually-hidden``, ``sr-only``, ``hidden``, ...)."""
    if node.kind != "element":
        return node.kind != "text"
    if node.label in _NOT_RENDERED:
        return True
    if tree.text.startswith(">", node.start + 1 + len(node.label)):  # type: ignore[arg-type]
        return False  # no attributes
    tag = _START_TAG.match(tree.text, node.start)
    if tag is None or _HIDING_HINT.search(tree.text, tag.start(1), tag.end(1)) is None:
        return False
    attrs = attributes(tree, node)
    if "hidden" in attrs or _NONE_STYLE.search(attrs.get("style", "")):
        return True
    if node.label == "input" and attrs.get("type", "").strip().lower() == "hidden":
        return True
    return not _HIDING_CLASSES.isdisjoint(attrs.get("class", "").split())


def text_lines(tree: Tree, node: Node) -> list[str]:
    """The visible text of a subtree as the lines a browser breaks it into (``<br>``,
    list items and other blocks end a line); entities decoded, white space collapsed
    (white space between two elements, ``<b>a</b> <i>b</i>``, is one space), hidden
    elements left out."""
    out: list[str] = []
    stack: list[Node | str] = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, str):
            out.append(n)
        elif n.kind == "text":
            out.append(_WS.sub(" ", htmllib.unescape(tree.text[n.start:n.end])))
        elif not hidden(tree, n):
            mark = "\n" if n.label in _BREAKS else " " if n.label in ("td", "th") else ""
            if mark:
                stack.append(mark)
            kids = n.children
            for k in range(len(kids) - 1, 0, -1):
                stack.append(kids[k])
                if kids[k - 1].end < kids[k].start:
                    stack.append(" ")  # white space between siblings (no text node)
            if kids:
                stack.append(kids[0])
            if mark:
                stack.append(mark)
    return [t for t in (_WS.sub(" ", x).strip() for x in "".join(out).split("\n")) if t]


def text_of(tree: Tree, node: Node) -> str:
    """Visible text of a subtree on one line (:func:`text_lines` joined by spaces)."""
    return " ".join(text_lines(tree, node))


def css_class(tree: Tree, node: Node) -> str:
    m = _START_TAG.match(tree.text, node.start)
    if not m:
        return ""
    c = _CLASS.search(" " + m.group(1))
    return " ".join((c.group(1) or c.group(2) or c.group(3) or "").split()) if c else ""


def semantic(cls: str) -> str:
    """The first class token when it reads as a name (not a utility or hashed class)."""
    tok = cls.split()[0] if cls else ""
    ok = _SEMANTIC.match(tok) and tok.lower() not in _GENERIC and not tok.startswith("css-")
    return tok if ok else ""


def cell_value(s: str) -> Scalar | None:
    """A cell's text as a field value: plain numbers become numbers (B.1)."""
    if not s or len(s) > MAX_VALUE_CHARS:
        return None
    if _NUMBER.match(s):
        t = s.replace(",", "")
        return float(t) if "." in t else int(t)
    return s


def _rows(table: Node) -> list[Node]:
    rows = elements(table, "tr")
    for sec in (c for c in elements(table) if c.label in _SECTIONS):
        rows += elements(sec, "tr")
    return sorted(rows, key=lambda r: r.start)


def _cells(row: Node) -> list[Node]:
    return [c for c in elements(row) if c.label in ("td", "th")]


def _descendants(node: Node, tag: str) -> bool:
    stack = list(node.children)
    while stack:
        n = stack.pop()
        if n.kind == "element" and n.label == tag:
            return True
        stack.extend(n.children)
    return False


Items = list[tuple[Node, dict[str, Scalar], list[str]]]  # (node, fields, description cands)
SELECT: dict[str, tuple[str, ...]] = {
    "table row": ("@table-row",), "specification table": ("@label-table",),
    "term": ("@definition",), "list item": ("@list-item",),
}
"""Record kinds a reader finds by what the page shows (rows under column headers, label /
value tables, terms and definitions, list items) and their selectors; repeated blocks
named by a CSS class have none and are never asked about."""


def field_keys(kind: str, fields: dict[str, Scalar], labels: dict[str, str]) -> dict[str, tuple]:
    """Reader-level key of each field: the column header or row label as shown."""
    if kind == "table row":
        return {name: ("@column", labels[name]) for name in fields if name in labels}
    if kind == "specification table":
        return {name: ("@label", labels[name]) for name in fields if name in labels}
    if kind == "term":
        return {"term": ("@term",), "definition": ("@definition",)}
    if kind == "list item":
        return {"text": ("@text",)}
    return {}


_FOOTNOTE = re.compile(r"\s*\[(?:\d{1,3}|[A-Za-z]|(?:note|nb|n) ?\d{1,3}|citation needed)\]")


def unmarked(text: str) -> str:
    """Text without footnote marks (Wikipedia's ``[6]``, ``[a]``, ``[note 2]``,
    ``[citation needed]``): a reader states "Thathanda Cup", not "Thathanda Cup [6]"."""
    return _FOOTNOTE.sub("", text).strip()


_YEARS_AGO = re.compile(
    r"[;(]\s*\d+ (?:years?|months?|weeks?|days?)(?:,? (?:and )?\d+ (?:months?|weeks?|days?))* ago\)?",
    re.I)
_AGE_TODAY = re.compile(r" ?\(age \d+\)", re.I)


def without_relative(text: str) -> str:
    """Text without what was relative to the day the page was saved: Wikipedia's "; 18
    years ago" after a date and "(age 45)" after a birth date ("(aged 28)" at a dated
    event is a fixed fact and stays)."""
    return _AGE_TODAY.sub("", _YEARS_AGO.sub("", text)).strip()


def reader_value(text: str) -> str:
    """A value as a reader states it: no footnote mark, no capture-relative text, and no
    label separator or markup quote left at its start (``": June 2010"`` ->
    ``"June 2010"``)."""
    return without_relative(unmarked(text)).lstrip(":\u2013\u2014- \t").strip()


def cell_reading(tree: Tree, node: Node) -> str | list[str]:
    """A cell's value as the page shows it: one line as :func:`reader_value` reads it;
    several lines (``<br>``, list items, blocks) as a list of them."""
    got = [v for v in map(reader_value, text_lines(tree, node)) if v]
    if len(got) > 1:
        return got
    return got[0] if got else ""


def label_text(tree: Tree, node: Node) -> str:
    """A header or label as a reader names it: no footnote mark, no trailing colon."""
    return unmarked(text_of(tree, node)).rstrip(":\uff1a").strip()


_DIGITS = re.compile(r"[\t\n\f\r ]*\+?([0-9]+)")


def _span_attr(tree: Tree, cell: Node, name: str, cap: int) -> int:
    """``colspan``/``rowspan`` by HTML's rules for non-negative integers: the leading
    digits, else 1, at most ``cap``."""
    tag = _START_TAG.match(tree.text, cell.start)
    if tag is None or "span" not in tag.group(1).lower():
        return 1
    m = _DIGITS.match(attributes(tree, cell).get(name, ""))
    return 1 if m is None else min(int(m.group(1)), cap)


Slots = list[Node | None]


def table_layout(tree: Tree, table: Node) -> list[tuple[Node, Slots, list[Node]]]:
    """(row, the cell covering each of its slots, the cells it starts) for each shown row
    of ``table``, as a browser lays the table out: a cell covers ``colspan`` slots in
    ``rowspan`` rows (0: to the end of its row group), rows of one group (the table's own
    rows, a ``thead``, ``tbody`` or ``tfoot``) hold the spans of the rows above them,
    and a slot two cells claim stays with the cell placed first."""
    out: list[tuple[Node, Slots, list[Node]]] = []
    groups: dict[int, list[Node]] = {}
    for r in _rows(table):
        if not hidden(tree, r) and (r.parent is table or not hidden(tree, r.parent)):
            groups.setdefault(id(r.parent), []).append(r)
    for rows in sorted(groups.values(), key=lambda g: g[0].start):
        grid: list[Slots] = [[] for _ in rows]
        for i, r in enumerate(rows):
            own = [c for c in _cells(r) if not hidden(tree, c)]
            line, col = grid[i], 0
            for c in own:
                while col < len(line) and line[col] is not None:
                    col += 1
                wide = max(1, _span_attr(tree, c, "colspan", 1000))
                tall = _span_attr(tree, c, "rowspan", 65534)
                last = len(rows) if tall == 0 else min(len(rows), i + tall)
                for below in grid[i:last]:
                    if len(below) < col + wide:
                        below.extend([None] * (col + wide - len(below)))
                    for k in range(col, col + wide):
                        if below[k] is None:
                            below[k] = c
                col += wide
            while line and line[-1] is None:
                line.pop()
            out.append((r, line, own))
    return out


def _table_items(tree: Tree, table: Node) -> tuple[str, Items]:
    if _descendants(table, "table"):
        return "", []
    grid = [g for g in table_layout(tree, table) if g[2]]
    if len(grid) < 2:
        return "", []
    _, head_slots, head_cells = grid[0]
    names = [label_text(tree, c) if c is not None else "" for c in head_slots]
    if (all(c.label == "th" for c in head_cells) and len(names) >= 2 and all(names)
            and len(set(names)) == len(names)):
        rows: list[tuple[Node, list[str | list[str]]]] = []
        for r, slots, own in grid[1:]:
            if all(c.label == "th" for c in own):
                continue  # a row of headers only
            under = slots[:len(names)]
            if len(under) == len(names) and all(c is under[0] for c in under):
                continue  # one cell across every column: a caption or separator row
            rows.append((r, [cell_reading(tree, c) if c is not None else "" for c in under]))
        listed = {k for _, vals in rows for k, v in enumerate(vals) if isinstance(v, list)}
        items: Items = []
        for r, vals in rows:
            texts = [v for k, v in enumerate(vals) if k not in listed and isinstance(v, str)]
            fields = {humanize(n): cv for k, (n, v) in enumerate(zip(names, vals))
                      if k not in listed and isinstance(v, str)
                      and (cv := cell_value(v)) is not None}
            if fields:
                items.append((r, fields, texts))
        return "table row", items
    rows_cells = [own for _, _, own in grid]
    title = ""
    if len(head_cells) == 1 and len(rows_cells) >= 3:  # a title row above label/value rows
        title = unmarked(text_of(tree, head_cells[0]))
        rows_cells = rows_cells[1:]
    if all(len(cs) == 2 for cs in rows_cells) and len(rows_cells) >= 2:
        pairs = [(label_text(tree, cs[0]), cell_reading(tree, cs[1])) for cs in rows_cells]
        labels = [lbl for lbl, _ in pairs]
        if all(labels) and len(set(labels)) == len(labels) and all(len(x) <= 60 for x in labels):
            found = [([lbl], v) for lbl, t in pairs
                     if isinstance(t, str) and (v := cell_value(t)) is not None]
            fields = name_fields(found)
            if len(fields) >= 2:  # named by a value a reader finds under its label; a
                # title row names no field, so it describes the table only as a last resort
                cands = [t for t in (*(t for _, t in pairs), title)
                         if isinstance(t, str) and t and len(t) <= 80]
                return "specification table", [(table, fields, cands)]
    return "", []


def _list_items(tree: Tree, lst: Node) -> tuple[str, Items]:
    items: Items = []
    if lst.label == "dl":
        kids = elements(lst)
        for a, b in zip(kids, kids[1:]):
            if a.label == "dt" and b.label == "dd":
                term = label_text(tree, a)  # a label's colon
                dd = cell_reading(tree, b)
                if term and isinstance(dd, str) and (v := cell_value(dd)) is not None:
                    items.append((a, {"term": term, "definition": v}, [term]))
        return "term", items if len(items) >= MIN_ITEMS else []
    for li in elements(lst, "li"):
        t = reader_value(text_of(tree, li))
        if t and len(t) <= MAX_VALUE_CHARS:
            items.append((li, {"text": t}, [t]))
    return "list item", items if len(items) >= MIN_ITEMS else []


def _block_items(tree: Tree, parent: Node) -> tuple[str, Items]:
    kids = elements(parent)
    sig = Counter((k.label, css_class(tree, k)) for k in kids)
    if not sig:
        return "", []
    (tag, cls), n = sig.most_common(1)[0]
    if n < MIN_ITEMS or not semantic(cls) or tag in ("li", "tr", "option", "script", "style"):
        return "", []
    items: Items = []
    for k in kids:
        if (k.label, css_class(tree, k)) != (tag, cls):
            continue
        found: list[tuple[list[str], Scalar]] = []
        stack = list(reversed(k.children))
        while stack:
            d = stack.pop()
            if d.kind != "element":
                continue
            own = [c for c in d.children if c.kind == "text"]
            dc = semantic(css_class(tree, d))
            if own and dc:
                v = cell_value(text_of(tree, d))
                if v is not None:
                    found.append(([dc], v))
            else:
                stack.extend(reversed(d.children))
        fields = name_fields(found)
        if len(fields) >= 2:
            items.append((k, fields, [str(v) for v in fields.values()]))
    return f"{humanize(semantic(cls))} block", items if len(items) >= MIN_ITEMS else []


_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")
_LABEL_TAGS = frozenset({"b", "strong", "dt", "th", "label", "em"})
_LABEL_CLASS = re.compile(r"(?i)title|label|name|key")
MAX_BLOCK_CHARS = 20_000


def _first_text(tree: Tree, node: Node) -> str:
    """The first non-blank text run under ``node``, as written (entities decoded)."""
    stack = [node]
    while stack:
        n = stack.pop()
        if n.kind == "text":
            t = tree.text[n.start:n.end].strip()
            if t:
                return htmllib.unescape(t)
        stack.extend(reversed(n.children))
    return ""


def _pair(tree: Tree, el: Node) -> tuple[str, str] | None:
    """(label, value) of a DOM label/value pair: an element whose first child element
    reads as a label (``<b>Genres:</b> ...``, ``<div class="spec-title">``) followed by
    the value text."""
    kids = elements(el)
    if len(kids) < 2 and not (kids and any(c.kind == "text" for c in el.children)):
        return None
    first = kids[0]
    if first.label in _HEADINGS or any(c.kind == "text" and c.start < first.start
                                       for c in el.children):
        return None
    label = text_of(tree, first)
    if not label or len(label) > 40:
        return None
    if not (label.endswith(":") or first.label in _LABEL_TAGS
            or _LABEL_CLASS.search(css_class(tree, first))):
        return None
    whole = text_of(tree, el)
    value = reader_value(whole[len(label):]) if whole.startswith(label) else ""
    if not value or len(value) > MAX_VALUE_CHARS:
        return None
    return label.rstrip(":").strip(), value


def _kv_items(tree: Tree, node: Node) -> tuple[str, Items]:
    """One record from the label/value pairs inside a DOM subtree (B.1 "DOM subtrees"),
    when there are at least three and their labels are unique."""
    if node.end - node.start > MAX_BLOCK_CHARS:
        return "", []
    pairs: list[tuple[str, str]] = []
    heads: list[str] = []
    stack = list(reversed(elements(node)))
    while stack:
        d = stack.pop()
        if d.label in _HEADINGS:
            heads.append(_first_text(tree, d))
            continue
        pr = _pair(tree, d)
        if pr:
            pairs.append(pr)
        else:
            stack.extend(reversed(elements(d)))
    labels = [lbl for lbl, _ in pairs]
    if len(pairs) < 3 or len(set(labels)) != len(labels) or not all(labels):
        return "", []
    fields = name_fields([([lbl], cv) for lbl, v in pairs if (cv := cell_value(v)) is not None])
    if len(fields) < 3:
        return "", []
    cands = [h for h in heads if h] + [v for _, v in pairs]
    return "specification block", [(node, fields, cands)]


_KINDS: dict[str, Callable[[Tree, Node], tuple[str, Items]]] = {
    "table": _table_items, "ul": _list_items, "ol": _list_items, "dl": _list_items,
}


def _items(tree: Tree, node: Node) -> tuple[str, Items]:
    fn = _KINDS.get(node.label)  # type: ignore[arg-type]
    if fn:
        return fn(tree, node)
    kind, items = _block_items(tree, node)
    return (kind, items) if items else _kv_items(tree, node)


def _rel(tree: Tree, unit: Node, node: Node) -> str:
    """Path of ``node`` inside the unit, starting at the unit's tag (same in the page and
    in the unit text parsed alone)."""
    return f"/{unit.label}" + tree.path(node)[len(tree.path(unit)):]


def node_records(tree: Tree, unit: Node, unit_id: str, text: str,
                 on_drop: Callable[[str, str], None] | None = None) -> list[Record]:
    """Records of the unit ``unit`` of ``tree``; descriptions are visible in ``text``."""
    kind, items = _items(tree, unit)
    out: list[Record] = []
    counts = Counter(c for _, _, cands in items for c in set(cands))
    taken: set[str] = set()
    labels: dict[int, dict[str, str]] = {}  # per table: a table's rows share its header
    for node, fields, cands in items:
        path = _rel(tree, unit, node)
        desc = next((c for c in cands if counts[c] == 1 and c not in taken
                     and namelike(c) and visible(text, c)), None)
        if desc is None and on_drop:
            on_drop(path, "no unique visible description")
        if desc is not None:
            taken.add(desc)
        accepted = {n: forms for n, v in fields.items() if (forms := parenthetical_forms(v))}
        out.append(Record(id=f"{unit_id}#{path}", unit_id=unit_id, kind=kind,
                          description=desc or "", fields=fields, path=path,
                          select=SELECT.get(kind, ()),
                          keys=field_keys(kind, fields, _labels(tree, node, kind, labels)),
                          accepted=accepted))
    return out


def _labels(tree: Tree, node: Node, kind: str,
            known: dict[int, dict[str, str]]) -> dict[str, str]:
    """Field name -> the header or label text a reader sees (table rows, label tables);
    ``known`` keeps each table's header names."""
    if kind == "table row":
        table = node
        while table.parent is not None and table.label != "table":
            table = table.parent
        if id(table) not in known:
            grid = [g for g in table_layout(tree, table) if g[2]]
            head = [c for c in grid[0][1] if c is not None] if grid else []
            known[id(table)] = {humanize(n): n for n in (label_text(tree, c) for c in head)}
        return known[id(table)]
    if kind == "specification table":
        return {humanize(lbl): lbl for lbl in (label_text(tree, own[0])
                                               for _, _, own in table_layout(tree, node)
                                               if len(own) == 2)}
    return {}


def candidate_units(tree: Tree) -> Iterator[Node]:
    """Disjoint unit roots of a page in document order: tables, repeated DOM blocks and
    lists that hold records (outer candidates first; a unit never overlaps another)."""
    chosen: list[Node] = []
    stack = [tree.root]
    while stack:
        n = stack.pop()
        if n.kind == "element" and hidden(tree, n):
            continue  # nothing in it is shown
        if n.kind == "element" and n.label not in ("html", "body", "head") and n.children:
            if _items(tree, n)[1]:
                chosen.append(n)
                continue
        stack.extend(reversed(n.children))
    yield from sorted(chosen, key=lambda n: n.start)


def page_units(text: str) -> Iterator[tuple[str, str, Tree, Node]]:
    """(unit text, page path, page tree, unit node) of each unit of one page."""
    tree = html_format.parse(text)
    for node in candidate_units(tree):
        yield text[node.start:node.end], tree.path(node), tree, node


def records(text: str, unit_id: str = "",
            on_drop: Callable[[str, str], None] | None = None) -> list[Record]:
    """Records of a unit's text parsed on its own (its first element is the unit)."""
    tree = html_format.parse(text)
    root = next((c for c in tree.root.children if c.kind == "element"), None)
    return node_records(tree, root, unit_id, text, on_drop) if root is not None else []


# ------------------------------------------------------------------ bench hooks (4.1, B.1)

_BODY = re.compile(r"<body\b[^>]*>(.*)</body\s*>", re.S | re.I)
_SECTION = ("<section>", "</section>")


def piece(text: str) -> str:
    """A unit as a composed context holds it: the inside of its page's ``<body>`` (the
    whole text where it has none), trimmed."""
    m = _BODY.search(text)
    return (m.group(1) if m else text).strip()


def unit_pieces(context: str) -> list[str]:
    """The units of a composed page: the inside of each ``<section>`` of its body."""
    tree = html_format.parse(context)
    body = [n for n in tree.nodes if n.kind == "element" and n.label == "body"]
    if len(body) != 1:
        raise ValueError("context page has no single <body>")
    out = []
    for c in body[0].children:
        src = context[c.start:c.end]
        if c.kind == "text" and not src.strip():
            continue
        if c.kind != "element" or c.label != "section":
            raise ValueError(f"stray {c.kind} in <body>")
        if not (src.startswith(_SECTION[0]) and src.endswith(_SECTION[1])):
            raise ValueError("a unit's <section> is not closed")
        out.append(src[len(_SECTION[0]):-len(_SECTION[1])])
    return out


def check_raw(text: str) -> str | None:
    """Why an HTML payload is unusable (NUL bytes, no element at all), or None."""
    tree, why = parsed_or_reason("html", text)
    if why:
        return why
    return None if any(n.kind == "element" for n in tree.nodes) else "no HTML element"


def file_units(text: str, f: UnitFile) -> Iterator[Unit]:
    """The units of one page: its tables, lists and repeated blocks that hold records
    with a unique visible description, each once (pages repeat blocks, e.g. mobile and
    desktop layouts)."""
    n = 0
    seen: set[tuple] = set()
    for utext, page_path, tree, node in page_units(text):
        u = f"{f.id}#{page_path}"
        recs = node_records(tree, node, u, utext, f.drop_for(u))
        if not recs:
            f.note("no records with a unique visible description", unit=u)
            continue
        keys = {(r.kind, tuple(r.fields.items())) for r in recs}
        if keys <= seen:
            f.note("repeats the records of an earlier unit of the page", unit=u)
            continue
        seen |= keys
        n += 1
        yield Unit(id=u, format=f.format, source=f.source, text=utext, records=recs,
                   provenance={**f.base, "page_path": page_path,
                               "line": text.count("\n", 0, node.start) + 1},
                   flags=f.flags)
    if n == 0:
        f.note("no table, list or repeated block with records")


BENCH = BenchFormat(
    "html", lambda source, text, unit_id="", on_drop=None: records(text, unit_id, on_drop),
    piece, Frame('<!DOCTYPE html>\n<html>\n<head>\n<meta charset="utf-8">\n'
                 "<title>Collected records</title>\n</head>\n<body>\n", "\n",
                 "\n</body>\n</html>\n", *_SECTION),
    "<p>x</p>", unit_pieces, check_raw, file_units=file_units, build_cost=1.5)

"""HTML: elements are internal nodes, text runs divisible leaves (paper 3.1, 3.2, A.1).

The tree is built by one regex scan of the ``str`` (exact character offsets, no byte
conversion) that follows the HTML5 tokenizer's rules for tags, quoted attributes,
comments, doctypes, CDATA and raw text, and a simplified HTML5 tree builder for
implied end tags (``p``, ``li``, ``dd``/``dt``, ``td``/``th``, ``tr``, table sections,
``option``, ``head``) and stray end tags (ignored, as a browser does).
tree-sitter-html was measured and not used: on the 352 source pages it yields 4,219
ERROR nodes (at bare ``&`` and ``>`` in text, e.g. breadcrumbs ``A >> B & C``), reads
``a < b`` as a tag and nests ``<option>a<option>b``; and its C parse alone takes longer
than this whole parse (0.19 s against 0.10 s on 4 MB of pages).

Differences from a browser DOM, on purpose: nothing is synthesized (no implied
``html``/``head``/``body``/``tbody``; every node owns a source range), a second
``<html>`` or a ``<!DOCTYPE>`` starts a new top-level document (concatenated pages
stay separate), ``<tag/>`` is a leaf, and misnested formatting end tags close what
they enclose instead of running the adoption agency.

Paths (Eq. 12) are XPath-like: ``/html/body/div[2]/table/tr[3]/td[1]``; ``[n]`` (the
1-based position among same-named siblings) is written only when there are several.
"""

from __future__ import annotations

import re

from treeagent.algorithm.tree import NO_CHILDREN, Node, ParseError, Tree, collector_paused
from treeagent.formats import Format

_ATTRS = r"""(?:[^>=]++|=[\t\n\f\r ]*+(?:"[^"]*+"|'[^']*+'|[^\t\n\f\r >]*+))*+"""
_NAME = r"[A-Za-z][^\t\n\f\r />]*+"
# Every branch matches up to its terminator or to the end of the text, so a failed
# match never rescans the rest of the document (linear time on any input).
_MARKUP = re.compile(
    rf"<(?:(?P<o>{_NAME}){_ATTRS}>?"
    rf"|/(?P<c>{_NAME}){_ATTRS}>?"
    r"|(?P<m>!--)(?:-?>|.*?--!?>|.*+)"
    r"|(?P<d>!\[CDATA\[)(?:.*?\]\]>|.*+)"
    r"|(?P<b>[!?/])[^>]*+>?)",
    re.S,
)
_NONWS = re.compile(r"[^\t\n\f\r ]")
_DOCTYPE = re.compile(r"<!doctype", re.I)
_END_REST = re.compile(rf"{_ATTRS}>?")
_ATTR_PART = re.compile(r"""[^>=]++|=[\t\n\f\r ]*+(?:"[^"]*+"|'[^']*+'|([^\t\n\f\r >]*+))""")
_REF = re.compile(r"&(?:#[xX][0-9A-Fa-f]+;?|#[0-9]+;?|[A-Za-z][A-Za-z0-9]{0,31};)")

_VOID = frozenset(
    "area base basefont bgsound br col embed frame hr image img input keygen link meta param "
    "source track wbr".split()
)
_ATOMIC_RAW = frozenset(("script", "style"))  # atomic leaves, content never parsed (A.1)
_TEXT_ONLY = frozenset("title textarea xmp iframe noembed noframes".split())  # one text child
_HEADINGS = frozenset("h1 h2 h3 h4 h5 h6".split())
_CLOSES_P = frozenset(
    "address article aside blockquote center details dialog dir div dl fieldset figcaption "
    "figure footer form h1 h2 h3 h4 h5 h6 header hgroup hr main menu nav ol p pre section "
    "summary table ul li dd dt listing plaintext search xmp".split()
)
_SECTIONS = frozenset(("tbody", "thead", "tfoot"))
_TABLE_PARTS = frozenset(("caption", "colgroup", "tbody", "thead", "tfoot", "tr", "td", "th"))
_HEAD_OK = frozenset(
    "base basefont bgsound link meta title noscript noframes style script template object "
    "command".split()
)
_SPECIAL = frozenset(
    "address applet area article aside base basefont bgsound blockquote body br button caption "
    "center col colgroup dd details dir div dl dt embed fieldset figcaption figure footer form "
    "frame frameset h1 h2 h3 h4 h5 h6 head header hgroup hr html iframe img input keygen li "
    "link listing main marquee menu meta nav noembed noframes noscript object ol p param "
    "plaintext pre script search section select source style summary table tbody td template "
    "textarea tfoot th thead title tr track ul wbr xmp mi mo mn ms mtext annotation-xml "
    "foreignobject desc".split()
)
_DEFAULT_SCOPE = frozenset(
    "applet caption html table td th marquee object template mi mo mn ms mtext annotation-xml "
    "foreignobject desc".split()
)
# Scope kinds of the HTML5 "has an element in ... scope" tests; "li" is the stop set
# of the li/dd/dt start-tag loop (special elements other than address, div and p).
_SCOPE_SETS = {
    "default": _DEFAULT_SCOPE,
    "button": _DEFAULT_SCOPE | {"button"},
    "list": _DEFAULT_SCOPE | {"ol", "ul"},
    "table": frozenset(("html", "table", "template")),
    "special": _SPECIAL,
    "li": _SPECIAL - {"address", "div", "p"},
}
_END_SCOPE = {
    **dict.fromkeys(_TABLE_PARTS | {"table"}, "table"),
    "li": "list",
    "p": "button",
    **dict.fromkeys(
        "dd dt address article aside blockquote button center details dialog dir div dl "
        "fieldset figcaption figure footer form header hgroup listing main menu nav ol pre "
        "section summary ul search select applet marquee object template a b big code em font "
        "i nobr s small strike strong tt u".split(),
        "default",
    ),
}
_WHOLE_STACK = frozenset(("html", "head", "body"))


class _Builder:
    """Stack of open elements with O(1) scope tests (per-tag and per-scope index lists)."""

    def __init__(self, root: Node) -> None:
        self.nodes: list[Node] = [root]
        self.tags: list[str] = [""]
        self.open_at: dict[str, list[int]] = {}
        self.bounds: dict[str, list[int]] = {k: [] for k in _SCOPE_SETS}
        self.scopes_of: dict[str, tuple[list[int], ...]] = {}

    def _scopes(self, tag: str) -> tuple[list[int], ...]:
        got = self.scopes_of.get(tag)
        if got is None:
            got = tuple(self.bounds[k] for k, s in _SCOPE_SETS.items() if tag in s)
            self.scopes_of[tag] = got
        return got

    def push(self, node: Node, tag: str) -> None:
        i = len(self.nodes)
        self.nodes.append(node)
        self.tags.append(tag)
        at = self.open_at.get(tag)
        if at is None:
            self.open_at[tag] = [i]
        else:
            at.append(i)
        for b in self._scopes(tag):
            b.append(i)

    def top_of(self, tag: str) -> int:
        at = self.open_at.get(tag)
        return at[-1] if at else -1

    def in_scope(self, i: int, scope: str) -> bool:
        """True when no boundary element of ``scope`` is open above stack index ``i``."""
        b = self.bounds[scope]
        return i > 0 and (not b or b[-1] <= i)

    def pop_top(self, end: int) -> None:
        """Close the current element at its explicit end tag (the well-formed case)."""
        node = self.nodes.pop()
        tag = self.tags.pop()
        self.open_at[tag].pop()
        for b in self.scopes_of[tag]:
            b.pop()
        node.end = end
        if node.children:
            _assign_steps(node.children)
        node.children = _closed(node.children)

    def pop_to(self, i: int, end: int = -1) -> None:
        """Close ``nodes[i:]``; ``nodes[i]`` ends at ``end`` when given, the rest implied."""
        nodes, tags, open_at = self.nodes, self.tags, self.open_at
        while len(nodes) > i:
            node = nodes.pop()
            tag = tags.pop()
            open_at[tag].pop()
            for b in self._scopes(tag):
                b.pop()
            kids = node.children
            if end >= 0 and len(nodes) == i:
                node.end = end
            elif kids:
                node.end = kids[-1].end
            if kids:
                _assign_steps(kids)
            node.children = _closed(kids)


def _closed(kids: list[Node]) -> tuple[Node, ...]:
    """A closed element's children as a tuple (memory: the list's blocks serve the next
    element's list; ``Tree.index`` would make the tuple later)."""
    return tuple(kids) if kids else NO_CHILDREN  # type: ignore[return-value]


def _assign_steps(kids: list[Node]) -> None:
    """XPath-like steps: ``/tag``, ``/tag[n]`` only when the tag repeats (Eq. 12)."""
    if len(kids) == 1:
        kids[0].step = "/" + kids[0].label  # type: ignore[operator]
        return
    counts: dict[str, int] = {}
    for kid in kids:
        counts[kid.label] = counts.get(kid.label, 0) + 1  # type: ignore[index]
    if len(counts) == len(kids):
        for kid in kids:
            kid.step = "/" + kid.label  # type: ignore[operator]
        return
    seen: dict[str, int] = {}
    for kid in kids:
        key: str = kid.label  # type: ignore[assignment]
        if counts[key] == 1:
            kid.step = "/" + key
        else:
            n = seen[key] = seen.get(key, 0) + 1
            kid.step = f"/{key}[{n}]"


def _text(start: int, end: int) -> Node:
    return Node("text", start, end, "", "text()", NO_CHILDREN, False, True, start, end, "")


def _leaf(kind: str, start: int, end: int, label: str) -> Node:
    """An atomic leaf: void/self-closing/script/style element, comment, doctype, CDATA."""
    return Node(kind, start, end, "", label, NO_CHILDREN, True)


def _raw_end(text: str, name: str, pos: int) -> tuple[int, int]:
    """(content end, element end) of a raw-text element whose start tag ends at ``pos``."""
    pat = _RAW_ENDS.get(name)
    if pat is None:
        pat = _RAW_ENDS[name] = re.compile(rf"</{re.escape(name)}(?=[\t\n\f\r />])", re.I)
    m = pat.search(text, pos)
    if m is None:
        return len(text), len(text)
    rest = _END_REST.match(text, m.end())
    return m.start(), rest.end() if rest else m.end()


_RAW_ENDS: dict[str, re.Pattern[str]] = {}


def _self_closing(text: str, start: int, end: int) -> bool:
    """``<tag .../>``, unless the ``/`` ends an unquoted value (``<a href=/x/>``)."""
    parts = list(_ATTR_PART.finditer(text, start + 1, end - 1))
    return not parts or parts[-1].group(1) is None


def _open_tag(b: _Builder, name: str) -> None:
    """Implied end tags a start tag ``name`` triggers (simplified HTML5 tree builder)."""
    if b.tags[-1] == "head" and name not in _HEAD_OK:
        b.pop_to(len(b.nodes) - 1)
    if name in _CLOSES_P:
        i = b.top_of("p")
        if i > 0 and b.in_scope(i, "button"):
            b.pop_to(i)
        if name in _HEADINGS and b.tags[-1] in _HEADINGS:
            b.pop_to(len(b.nodes) - 1)
        if name == "li" or name == "dd" or name == "dt":
            i = b.top_of("li") if name == "li" else max(b.top_of("dd"), b.top_of("dt"))
            if i > 0 and b.in_scope(i, "li"):
                b.pop_to(i)
        return
    if name in _TABLE_PARTS:
        if b.tags[-1] == "colgroup":
            b.pop_to(len(b.nodes) - 1)
        if name == "td" or name == "th":
            i = max(b.top_of("td"), b.top_of("th"))
        elif name == "tr":
            i = b.top_of("tr")
        elif name in _SECTIONS:
            i = max(b.top_of("tbody"), b.top_of("thead"), b.top_of("tfoot"))
        else:
            i = b.top_of(name)
        if i > 0 and b.in_scope(i, "table"):
            b.pop_to(i)
        return
    if name == "option" or name == "optgroup":
        if b.tags[-1] == "option":
            b.pop_to(len(b.nodes) - 1)
        if name == "optgroup" and b.tags[-1] == "optgroup":
            b.pop_to(len(b.nodes) - 1)
    elif name in ("a", "nobr", "button", "select"):
        i = b.top_of(name)
        if i > 0 and b.in_scope(i, "default"):
            b.pop_to(i)
    elif name == "html":
        i = b.top_of("html")
        if i > 0:
            b.pop_to(i)
    elif name == "body" or name == "head":
        i = b.top_of(name)
        if i <= 0 and name == "body":
            i = b.top_of("head")
        if i > 0:
            b.pop_to(i)


def _close_tag(b: _Builder, name: str, end: int) -> None:
    """An end tag closes its element and what it encloses; a stray one is ignored."""
    if name in _HEADINGS:
        i = max(b.top_of(h) for h in _HEADINGS)
        scope = "default"
    else:
        i = b.top_of(name)
        if name in _WHOLE_STACK:
            scope = ""
        else:
            scope = _END_SCOPE.get(name, "special")
    if i > 0 and (not scope or b.in_scope(i, scope)):
        b.pop_to(i, end)


def _untag(parent: Node, pos: int, i: int) -> int:
    """Where the trailing text starts when an unterminated tag at ``i`` becomes text."""
    kids = parent.children
    if i > pos and kids and kids[-1].kind == "text" and kids[-1].end == i:
        return kids.pop().start
    return pos


def parse(text: str) -> Tree:
    """Parse HTML into a Tree (3.1); never raises except on an empty document."""
    if not text.strip():
        raise ParseError.at(text, 0, "empty HTML document")
    with collector_paused():  # about half the time on a 4 MB page set otherwise
        return _parse(text)


def _parse(text: str) -> Tree:
    n = len(text)
    root = Node("document", 0, n, "", None, [])
    b = _Builder(root)
    nodes = b.nodes
    search = _MARKUP.search
    nonws = _NONWS.search
    pos = 1 if text[0] == "\ufeff" else 0  # a byte-order mark is not content
    while True:
        m = search(text, pos)
        if m is None:
            break
        i = m.start()
        if i > pos and nonws(text, pos, i):
            nodes[-1].children.append(_text(pos, i))
        end = m.end()
        kind = m.lastgroup
        if kind == "o":
            if text[end - 1] != ">":  # no '>' inside the quotes that ran to the end
                gt = text.find(">", i)
                if gt < 0:  # "<tag ..." without '>': the rest is text
                    pos = _untag(nodes[-1], pos, i)
                    break
                end = gt + 1
            name = m.group("o").lower()
            _open_tag(b, name)
            parent = nodes[-1]
            if name in _VOID or (text[end - 2] == "/" and _self_closing(text, i, end)):
                parent.children.append(_leaf("element", i, end, name))
            elif name in _ATOMIC_RAW:
                end = _raw_end(text, name, end)[1]
                parent.children.append(_leaf("element", i, end, name))
            elif name in _TEXT_ONLY or name == "plaintext":
                body = end
                stop, end = (n, n) if name == "plaintext" else _raw_end(text, name, end)
                node = Node("element", i, end, "", name, [])
                if body < stop and nonws(text, body, stop):
                    node.children.append(_text(body, stop))
                    node.children[0].step = "/text()"
                parent.children.append(node)
            else:
                node = Node("element", i, end, "", name, [])
                parent.children.append(node)
                b.push(node, name)
        elif kind == "c":
            if text[end - 1] != ">":
                gt = text.find(">", i)
                if gt < 0:
                    pos = _untag(nodes[-1], pos, i)
                    break
                end = gt + 1
            name = m.group("c").lower()
            if b.tags[-1] == name:
                b.pop_top(end)
            else:
                _close_tag(b, name, end)
        elif kind == "b":
            if text.startswith("</>", i):
                pass  # an empty end tag is dropped (HTML5)
            elif _DOCTYPE.match(text, i):
                b.pop_to(1)  # a doctype starts a new document
                root.children.append(_leaf("doctype", i, end, "doctype()"))
            else:  # <?...>, <!...>, </3...>: bogus comments
                nodes[-1].children.append(_leaf("comment", i, end, "comment()"))
        elif kind == "m":
            nodes[-1].children.append(_leaf("comment", i, end, "comment()"))
        else:
            nodes[-1].children.append(_leaf("cdata", i, end, "text()"))
        pos = end
        if pos >= n:
            break
    if pos < n and nonws(text, pos, n):
        nodes[-1].children.append(_text(pos, n))
    b.pop_to(1)
    if root.children:
        _assign_steps(root.children)
    return Tree(text, root, "html", "")


def safe_cut(text: str, pos: int) -> bool:
    """A cut keeps character references (``&amp;``, ``&#123;``, ``&#x1F600;``) and
    surrogate pairs whole (A.1)."""
    if pos <= 0 or pos >= len(text):
        return True
    if "\ud800" <= text[pos - 1] <= "\udbff" and "\udc00" <= text[pos] <= "\udfff":
        return False
    amp = text.rfind("&", max(0, pos - 40), pos)
    if amp < 0:
        return True
    m = _REF.match(text, amp)
    return m is None or m.end() <= pos


FORMAT = Format("html", "HTML", (".html", ".htm", ".xhtml"), parse, safe_cut,
                starts=("<",))

"""YAML: mappings and sequences are internal nodes, scalars leaves (paper 3.1, A.1, A.3).

The tree is built from PyYAML's *event* stream (libyaml's ``CSafeLoader`` when present,
else the pure-Python ``SafeLoader``). Nothing is constructed: no tag runs code and an
alias stays an atomic ``*name`` leaf, so an expansion bomb parses into a small tree.

Spans (``text[start:end]`` is a node's native serialization):

* a mapping member spans ``key: value`` (from the key, including its anchor/tag, to the
  value's end) and carries the value's kind and children; label = key, step =
  ``key_step(key)`` (A.3). An explicit ``? key`` member starts at its ``?`` indicator.
* a block-sequence item includes its ``-`` indicator (always: the indicator is found in
  the gap before the item's content), so a run of sibling items reads ``- a\n- b``; a
  flow-sequence item (``[a, b]``) spans its content only.
* flow scalars (plain, ``'``, ``"``) are divisible leaves cut inside the quotes; block
  scalars (``|``, ``>``) and aliases are atomic (A.1). A block scalar ends after its
  last content line's break (after its trailing blank lines with ``+``, before the
  break with ``-``), so its text reloads to its value. An empty value spans ``key:``.
* one document: its root node is the tree root; several: a ``stream`` root whose
  ``document`` children (steps ``[0]``, ``[1]``, ...) take the kind-less place of each
  document's root node (a document node *is* its root node, spanning ``---``..``...``).

Complex (collection) keys, alias keys, duplicate keys, undefined aliases and any tag
outside the YAML core/standard set are rejected with a ``ParseError`` at line:col.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable

import yaml

from treeagent.algorithm.tree import (
    NO_CHILDREN,
    Node,
    ParseError,
    Tree,
    collector_paused,
    index_step,
    key_step,
)
from treeagent.formats import Format
from treeagent.formats.comments import hash_after, hash_lines_before, keep_comments
from treeagent.formats.escapes import escape_starts_at
from treeagent.formats.sniff import looks_like_yaml

_CORE = "tag:yaml.org,2002:"
#: Tags accepted on any node; ``!`` is the non-specific tag (plain "no tag").
ALLOWED_TAGS = frozenset(
    {"!"}
    | {
        _CORE + name
        for name in (
            "str", "int", "float", "bool", "null", "map", "seq", "omap", "set",
            "pairs", "binary", "timestamp", "merge", "value",
        )
    }
)

_C_LOADER = getattr(yaml, "CSafeLoader", None)
_ATOMIC_TAGS = {_CORE + t for t in ("int", "float", "bool", "null")}
#: first character -> patterns of plain scalars that are numbers, booleans or null
_ATOMIC_PLAIN = {
    c: tuple(rx for tag, rx in rs if tag in _ATOMIC_TAGS)
    for c, rs in yaml.SafeLoader.yaml_implicit_resolvers.items()
    if c and any(tag in _ATOMIC_TAGS for tag, _ in rs)
}


def _divisible_plain(value: str) -> bool:
    """A plain scalar may be cut unless it is a number, boolean or null: as in JSON,
    where those are atomic leaves (A.1)."""
    patterns = _ATOMIC_PLAIN.get(value[:1])
    return not (patterns and any(rx.match(value) for rx in patterns))
_SPACE = " \t\r\n"
_PROP_END = " \t\r\n,[]{}"
_MAP, _SEQ, _DOC = 0, 1, 2


_HASH = re.compile("#")
_HASH_AT = operator.methodcaller("start")


def _comment_marks(text: str, lo: int, end: int) -> list[int]:
    """Offsets of the ``#`` in ``text[lo:]`` up to the end of ``end``'s line that may
    start a comment (first in the text or after blank space): keep_comments moves no
    other (a ``$ref: '#/...'`` is none). A literal ``#`` is found by the regex engine's
    fast scan; the character before it is checked here."""
    eol = text.find("\n", end)
    return [i for i in map(_HASH_AT, _HASH.finditer(text, lo, len(text) if eol < 0 else eol + 1))
            if i == 0 or text[i - 1] in " \t\r\n"]


class _UseFallback(Exception):
    """Redo with the Python parser: libyaml's marks disagree with the text (never seen)
    or the input nests deeper than libyaml's fixed limit of 1000 levels."""


class _Frame:
    """An open mapping, sequence or document while events stream in."""

    __slots__ = ("kind", "node", "flow", "expect_key", "key", "key_start", "key_end",
                 "keys", "prev_end", "root", "start", "marker_end", "empty_root")

    def __init__(self, kind: int, node: Node | None, flow: bool, start: int) -> None:
        self.kind = kind
        self.node = node
        self.flow = flow
        self.expect_key = kind == _MAP
        self.key = ""
        self.key_start = self.key_end = start
        self.keys: set[str] = set()
        self.prev_end = start
        self.root: Node | None = None
        self.start = start
        self.marker_end = start
        self.empty_root = False


def _skip_properties(text: str, pos: int, end: int) -> tuple[int, int]:
    """(content start, tag start or -1) of a node whose event starts at ``pos``.

    Skips ``&anchor`` / ``!tag`` properties and the separation (spaces, line breaks,
    comments) after them; the content start never passes ``end``.
    """
    n = len(text)
    i = pos
    tag_at = -1
    while i < n and text[i] in "&!":
        if text[i] == "!":
            tag_at = i
        if text.startswith("!<", i):
            close = text.find(">", i)
            i = n if close < 0 else close + 1
        else:
            while i < n and text[i] not in _PROP_END:
                i += 1
        while i < n:
            c = text[i]
            if c in _SPACE:
                i += 1
            elif c == "#":
                nl = text.find("\n", i)
                i = n if nl < 0 else nl + 1
            else:
                break
    return min(i, max(end, pos)), tag_at


def _find_indicator(text: str, lo: int, hi: int, indicator: str) -> int:
    """Position of a block-sequence ``-`` (or explicit-key ``?``) in the gap ``[lo, hi)``
    before an item's (key's) content; the gap holds only separation, comments, flow
    punctuation, the indicator and, for a first child, the parent's own properties.
    ``hi`` when absent."""
    i = lo
    dash = hi
    while i < hi:
        c = text[i]
        if c == indicator:
            dash = i
            i += 1
        elif c == "#":
            nl = text.find("\n", i, hi)
            i = hi if nl < 0 else nl + 1
        elif c in "&!":
            while i < hi and text[i] not in _SPACE:
                i += 1
        else:
            i += 1
    return dash


class _Builder:
    """Turns one event stream into nodes, iteratively (deep nesting is fine).

    The event loop (``run``) handles the frequent events (plain and quoted scalars,
    collection starts and ends) inline: per-event Python work is the cost of parsing
    once libyaml has produced the events (A.1 preprocessing budget).
    """

    def __init__(self, text: str, offset: int, checked: bool) -> None:
        self.text = text
        self.off = offset
        self.checked = checked  # verify marks against the text (libyaml)
        self.stack: list[_Frame] = []
        self.docs: list[tuple[Node, int, int, bool]] = []
        self.anchors: set[str] = set()
        self.steps: dict[str, str] = {}  # key -> key_step(key); keys repeat a lot
        self.names: dict[str, str] = {}  # one copy of each key string, for every label
        self.indices: list[str] = []  # "[i]", shared by the items of every sequence

    # -- helpers ----------------------------------------------------------------
    def _error(self, pos: int, message: str) -> ParseError:
        return ParseError.at(self.text, pos, message)

    def _check_tag(self, tag: str | None, pos: int, end: int) -> None:
        if tag is None or tag in ALLOWED_TAGS:
            return
        _, tag_at = _skip_properties(self.text, pos, end)
        at = tag_at if tag_at >= 0 else pos
        shown = tag
        if tag_at >= 0:
            stop = tag_at
            while stop < len(self.text) and self.text[stop] not in _PROP_END:
                stop += 1
            shown = self.text[tag_at:stop]
        elif tag.startswith(_CORE):
            shown = "!!" + tag[len(_CORE):]
        raise self._error(at, f"unsupported YAML tag {shown!r}")

    def _step(self, key: str) -> str:
        step = self.steps.get(key)
        if step is None:
            step = self.steps[key] = key_step(key)
        return step

    def _index_step(self, i: int) -> str:
        steps = self.indices
        while len(steps) <= i:
            steps.append(index_step(len(steps)))
        return steps[i]

    def _attach(self, node: Node) -> None:
        top = self.stack[-1]
        if top.kind == _MAP:
            node.start = top.key_start
            if node.end < top.key_end:
                node.end = top.key_end
            node.label = top.key
            node.step = self._step(top.key)
            top.expect_key = True
            top.prev_end = node.end
            top.node.children.append(node)  # type: ignore[union-attr]
        elif top.kind == _SEQ:
            parent = top.node
            assert parent is not None
            i = len(parent.children)
            node.label = i
            node.step = self._index_step(i)
            if not top.flow:
                node.start = _find_indicator(self.text, top.prev_end, node.start, "-")
            top.prev_end = node.end
            parent.children.append(node)
        else:
            top.root = node

    # -- events -----------------------------------------------------------------
    def run(self, get_event: Callable[[], yaml.Event | None]) -> None:
        """Consume the event stream (the hot loop; rare events go to methods).

        ``get_event`` is the loader's own (no generator, no ``check_event`` per event);
        it gives ``StreamEndEvent`` (then None) at the end.
        """
        text = self.text
        off = self.off
        checked = self.checked
        stack = self.stack
        steps = self.steps
        names = self.names
        anchors = self.anchors
        allowed = ALLOWED_TAGS
        scalar_event = yaml.ScalarEvent
        map_start, seq_start = yaml.MappingStartEvent, yaml.SequenceStartEvent
        map_end, seq_end = yaml.MappingEndEvent, yaml.SequenceEndEvent
        alias_event = yaml.AliasEvent
        doc_start, doc_end = yaml.DocumentStartEvent, yaml.DocumentEndEvent
        stream_end = yaml.StreamEndEvent
        while True:
            ev = get_event()
            kind = type(ev)
            if kind is scalar_event:
                s = ev.start_mark.index + off
                e = ev.end_mark.index + off
                tag = ev.tag
                if tag is not None and tag not in allowed:
                    self._check_tag(tag, s, e)
                if ev.anchor is not None:
                    anchors.add(ev.anchor)
                style = ev.style or ""
                value: str = ev.value
                top = stack[-1]
                cs = s
                c0 = text[s : s + 1]
                if c0 == "&" or c0 == "!":
                    cs, _ = _skip_properties(text, s, e)
                if checked and value and cs < e and (style == "" or style == "'" or style == '"'):
                    if text[cs] != (style or value[0]):
                        raise _UseFallback
                if top.kind == _MAP:
                    if top.expect_key:
                        keys = top.keys
                        if value in keys:
                            raise self._error(s, f"duplicate key {value!r}")
                        keys.add(value)
                        start = s
                        prev = top.prev_end
                        if prev < s and text.find("?", prev, s) >= 0:
                            start = _find_indicator(text, prev, s, "?")
                        top.key = names.setdefault(value, value)
                        top.key_start = start
                        top.key_end = e
                        top.expect_key = False
                        continue
                    if style == "" and value:  # plain value in a mapping: the common case
                        key = top.key
                        step = steps.get(key)
                        if step is None:
                            step = steps[key] = key_step(key)
                        start = top.key_start
                        node = Node("scalar", start, e if e > top.key_end else top.key_end,
                                    step, key, NO_CHILDREN, False,
                                    e > cs and _divisible_plain(value),
                                    cs, e, "")
                        top.expect_key = True
                        top.prev_end = node.end
                        top.node.children.append(node)  # type: ignore[union-attr]
                        continue
                self._attach(self._scalar_node(s, e, cs, style, value, top))
            elif kind is map_start or kind is seq_start:
                s = ev.start_mark.index + off
                top = stack[-1]
                if top.kind == _MAP and top.expect_key:
                    raise self._error(s, "complex mapping key (a mapping or sequence as a "
                                      "key) is not supported")
                tag = ev.tag
                if tag is not None and tag not in allowed:
                    self._check_tag(tag, s, ev.end_mark.index + off)
                if ev.anchor is not None:
                    anchors.add(ev.anchor)
                if kind is map_start:
                    frame = _Frame(_MAP, Node("mapping", s, s, "", None, []), bool(ev.flow_style), s)
                else:
                    frame = _Frame(_SEQ, Node("sequence", s, s, "", None, []), bool(ev.flow_style), s)
                stack.append(frame)
            elif kind is map_end or kind is seq_end:
                frame = stack.pop()
                node = frame.node
                e = ev.end_mark.index + off
                kids = node.children
                # closed: its children as a tuple now, while the list's memory can serve
                # the next container's list (memory, Tree.index)
                node.children = tuple(kids) if kids else NO_CHILDREN
                if frame.flow and e > node.start and text[e - 1] == (
                        "}" if frame.kind == _MAP else "]"):
                    node.end = e
                elif kids:
                    node.end = kids[-1].end
                else:
                    node.end = max(node.start, e)
                top = stack[-1]
                if top.kind == _MAP:  # _attach, inline
                    key = top.key
                    node.start = top.key_start
                    if node.end < top.key_end:
                        node.end = top.key_end
                    node.label = key
                    step = steps.get(key)
                    if step is None:
                        step = steps[key] = key_step(key)
                    node.step = step
                    top.expect_key = True
                    top.prev_end = node.end
                    top.node.children.append(node)
                else:
                    self._attach(node)
            elif kind is stream_end or ev is None:
                return
            elif kind is alias_event:
                self.alias(ev)
            elif kind is doc_start:
                self.document_start(ev)
            elif kind is doc_end:
                self.document_end(ev)

    def _scalar_node(self, s: int, e: int, cs: int, style: str, value: str, top: _Frame) -> Node:
        """The leaf of a scalar value (not a key) before it is attached."""
        text = self.text
        empty = not value and not style and s == e
        if style in ("|", ">"):
            header_end = text.find("\n", cs, e)
            header = text[cs : e if header_end < 0 else header_end].split("#", 1)[0]
            end = e
            if "+" not in header:  # clip or strip: drop trailing blank lines
                while end > cs + 1 and text[end - 1] in _SPACE:
                    end -= 1
                while end < e and text[end] in " \t":  # spaces ending the last line stay
                    end += 1
                if "-" not in header:  # clip keeps the final line break: it is content
                    brk = 2 if text.startswith("\r\n", end) else 1
                    if end + brk <= e and text[end : end + brk] in ("\n", "\r\n", "\r"):
                        end += brk
            node = Node("scalar", s, end, children=NO_CHILDREN, atomic=True)
        elif style:  # quoted
            node = Node("scalar", s, e, children=NO_CHILDREN, divisible=e - cs > 2,
                        cut_start=cs + 1, cut_end=e - 1, quote=style)
        elif empty:
            if top.kind == _MAP:
                # the mark of an empty value may sit at the next token: end at the ":"
                i = top.key_end
                while i < len(text) and text[i] in " \t":
                    i += 1
                s = e = i + 1 if text[i : i + 1] == ":" else top.key_end
            node = Node("scalar", s, e, children=NO_CHILDREN, cut_start=e, cut_end=e)
        else:
            node = Node("scalar", s, e, children=NO_CHILDREN,
                        divisible=e > cs and _divisible_plain(value),
                        cut_start=cs, cut_end=e)
        if top.kind == _DOC:
            top.empty_root = empty
        return node

    def alias(self, ev: yaml.AliasEvent) -> None:
        s = ev.start_mark.index + self.off
        e = ev.end_mark.index + self.off
        top = self.stack[-1]
        if top.kind == _MAP and top.expect_key:
            raise self._error(s, f"alias '*{ev.anchor}' used as a mapping key is not supported")
        if ev.anchor not in self.anchors:
            raise self._error(s, f"undefined alias '*{ev.anchor}'")
        if self.checked and self.text[s : s + 1] != "*":
            raise _UseFallback
        self._attach(Node("alias", s, e, children=NO_CHILDREN, atomic=True))

    def document_start(self, ev: yaml.DocumentStartEvent) -> None:
        s = ev.start_mark.index + self.off
        frame = _Frame(_DOC, None, False, s if ev.explicit else -1)
        frame.marker_end = ev.end_mark.index + self.off
        self.stack.append(frame)
        self.anchors.clear()  # anchors are scoped to their document

    def document_end(self, ev: yaml.DocumentEndEvent) -> None:
        frame = self.stack.pop()
        root = frame.root
        assert root is not None
        if frame.empty_root and frame.start >= 0:
            root.start = root.end = root.cut_start = root.cut_end = frame.marker_end
        start = frame.start if frame.start >= 0 else root.start
        end = ev.end_mark.index + self.off if ev.explicit else root.end
        self.docs.append((root, start, max(end, root.end), frame.empty_root))

    def tree(self) -> Tree:
        if not self.docs or (len(self.docs) == 1 and self.docs[0][3]):
            raise self._error(0, "empty YAML document")
        if "#" in self.text:
            lo = 0
            for root, start, end, _ in self.docs:  # implicit documents start at their root
                bound = lo if start == root.start else start
                marks = _comment_marks(self.text, bound, end)
                if marks:
                    keep_comments(self.text, root, bound, hash_lines_before, hash_after,
                                  marks=marks)
                lo = end
        if len(self.docs) == 1:
            return Tree(self.text, self.docs[0][0], "yaml", "$")
        children = []
        for i, (node, start, end, _) in enumerate(self.docs):
            node.kind, node.start, node.end = "document", start, end
            node.label, node.step = i, index_step(i)
            children.append(node)
        root = Node("stream", children[0].start, children[-1].end, children=children)
        return Tree(self.text, root, "yaml", "$")


class _FlatKeysLoader(yaml.SafeLoader):
    """The pure-Python safe loader with linear-time simple-key bookkeeping.

    PyYAML scans every pending simple key on every token; in flow collections each
    open level holds one, so ``[[[[...]]]]`` costs O(depth) per token (16k levels:
    ~50 s). Keys are added in increasing position (a dict keeps that order), so the
    stale ones form a prefix and the nearest one is the first: same behaviour, O(1)
    amortized per token.
    """

    def next_possible_simple_key(self) -> int | None:
        for key in self.possible_simple_keys.values():
            return key.token_number
        return None

    def stale_possible_simple_keys(self) -> None:
        keys = self.possible_simple_keys
        while keys:
            level = next(iter(keys))
            key = keys[level]
            if key.line == self.line and self.index - key.index <= 1024:
                return  # later keys are on this line too, and nearer
            if key.required:
                raise yaml.scanner.ScannerError(
                    "while scanning a simple key", key.mark,
                    "could not find expected ':'", self.get_mark())
            del keys[level]


def _yaml_error(text: str, exc: yaml.YAMLError, offset: int) -> ParseError:
    """A PyYAML/libyaml error as a ParseError at its 1-based line:col."""
    if isinstance(exc, yaml.MarkedYAMLError):
        message = exc.problem or exc.context or "invalid YAML"
        if exc.problem and exc.context:
            message = f"{exc.problem} ({exc.context})"
        mark = exc.problem_mark or exc.context_mark
        if mark is None:
            return ParseError(message, 1, 1)
        # from the character offset: libyaml's line/column at the end of a stream without
        # a final newline point one line too far; elsewhere both agree
        return ParseError.at(text, mark.index + offset, message)
    if isinstance(exc, yaml.reader.ReaderError):
        pos = exc.position
        if exc.encoding != "unicode":  # libyaml reports a byte offset into UTF-8
            pos = len(text.encode("utf-8", "surrogatepass")[:pos].decode("utf-8", "ignore"))
        return ParseError.at(text, pos, str(exc.reason))
    return ParseError(str(exc), 1, 1)


_SURROGATE = re.compile("[\ud800-\udfff]")


class _TextReader:
    """The text handed to libyaml a buffer at a time (PyYAML encodes each piece it
    reads): no UTF-8 copy of the whole text (memory, ~1 MB per MB). A text with a lone
    surrogate goes whole, so that its encoding error comes first, as it always did."""

    __slots__ = ("text", "pos")
    name = "<unicode string>"

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def read(self, size: int) -> str:
        piece = self.text[self.pos : self.pos + size]
        self.pos += len(piece)
        return piece


def _pyyaml_events(loader: type, checked: bool) -> Callable[[_Builder], None]:
    """Feeds a builder PyYAML's events (``loader``: libyaml's or the pure-Python one)."""

    def feed(builder: _Builder) -> None:
        text = builder.text
        whole = not checked or (not text.isascii() and _SURROGATE.search(text) is not None)
        events = loader(text if whole else _TextReader(text))
        try:
            builder.run(events.get_event)
        finally:
            events.dispose()

    return feed


def _compiled_events(builder: _Builder) -> None:
    """Feeds a builder libyaml's events read in compiled code (``_yaml_libyaml``)."""
    assert _LIBYAML is not None
    _LIBYAML.run(builder, _COMPILED_HELPERS)


def _build(text: str, feed: Callable[[_Builder], None], checked: bool) -> Tree:
    offset = 1 if checked and text.startswith("\ufeff") else 0  # libyaml skips the BOM
    builder = _Builder(text, offset, checked)
    try:
        with collector_paused():  # about half of the parse time on a 3.5 MB stream otherwise
            feed(builder)
            assert not builder.stack
            return builder.tree()
    except yaml.YAMLError as exc:
        if checked and "maximum nesting depth" in str(getattr(exc, "problem", "")):
            raise _UseFallback from None
        raise _yaml_error(text, exc, offset) from None
    except UnicodeEncodeError as exc:  # a lone surrogate cannot reach libyaml
        raise ParseError.at(text, exc.start, "invalid character (lone surrogate)") from None


def parse(text: str) -> Tree:
    """Parse YAML text (one document or a stream) into a Tree; raises ParseError.

    libyaml's events read in compiled code where the extension was built, else through
    PyYAML's binding: the same events, the same tree. Where libyaml refuses the text,
    PyYAML's parse gives the message; where libyaml's marks disagree with the text or
    it nests too deep, the pure-Python parser takes over."""
    if _LIBYAML is not None:
        try:
            return _build(text, _compiled_events, True)
        except _UseFallback:
            return _build(text, _pyyaml_events(_FlatKeysLoader, False), False)
        except (_LIBYAML.LibyamlError, ParseError):
            pass  # PyYAML's parse below says why (a lone surrogate: the same error)
    if _C_LOADER is not None:
        try:
            return _build(text, _pyyaml_events(_C_LOADER, True), True)
        except _UseFallback:
            pass
    return _build(text, _pyyaml_events(_FlatKeysLoader, False), False)


def _escape_len(text: str, i: int) -> int:
    nxt = text[i + 1 : i + 2]
    if nxt == "x":
        return 4
    if nxt == "u":
        return 6
    if nxt == "U":
        return 10
    if nxt == "\r" and text[i + 2 : i + 3] == "\n":
        return 3
    return 2


def _is_hex(s: str) -> bool:
    return bool(s) and all(c in "0123456789abcdefABCDEF" for c in s)


def safe_cut(text: str, pos: int) -> bool:
    """May SplitText cut at ``pos``? Never inside a double-quoted escape (``\\n``,
    ``\\x41``, ``\\u263A``, ``\\U0001F600``, ``\\`` + line break), between the halves
    of a surrogate pair (raw or escaped), inside a single-quoted ``''`` or a CRLF (A.1).

    Backslashes are judged as escapes wherever they are (conservative outside ``"``).
    """
    if pos <= 0 or pos >= len(text):
        return True
    for back in range(1, 10):
        i = pos - back
        if i < 0:
            break
        if text[i] == "\\" and escape_starts_at(text, i):
            if back < _escape_len(text, i):
                return False
            break
    before, after = text[pos - 1], text[pos]
    if before == "'" and after == "'":
        return False
    if before == "\r" and after == "\n":
        return False
    if "\ud800" <= before <= "\udbff" and "\udc00" <= after <= "\udfff":
        return False
    if (pos >= 6 and text[pos - 6 : pos - 4] == "\\u" and text[pos : pos + 2] == "\\u"
            and escape_starts_at(text, pos - 6)):
        high, low = text[pos - 4 : pos], text[pos + 2 : pos + 6]
        if (_is_hex(high) and _is_hex(low) and len(low) == 4
                and 0xD800 <= int(high, 16) <= 0xDBFF and 0xDC00 <= int(low, 16) <= 0xDFFF):
            return False
    return True


FORMAT = Format("yaml", "YAML", (".yaml", ".yml"), parse, safe_cut,
                sniff=looks_like_yaml)  # plain text is not claimed (formats.detect)


try:
    from treeagent.formats import _yaml_libyaml as _LIBYAML
except ImportError:  # not built (no C compiler or no libyaml headers where it was installed)
    _LIBYAML = None
else:
    _Frame = _LIBYAML.Frame  # type: ignore[misc]  # the same fields, typed, for both loops
_COMPILED_HELPERS = (Node, NO_CHILDREN, key_step, _ATOMIC_PLAIN, _skip_properties,
                     _UseFallback, ALLOWED_TAGS)

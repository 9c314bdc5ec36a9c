# cython: language_level=3
from libc.string cimport memcpy
"""libyaml's parser driven from compiled code for ``yaml_format`` (paper A.1).

The same event loop as ``yaml_format._Builder.run``, event for event, but reading
libyaml's events in C: no event or mark object is made per event (PyYAML's binding
makes three), and the loop itself is compiled. The rare events (aliases, documents,
block scalars, tags outside the core set, errors) go to the builder's own Python
methods. Any libyaml error raises :class:`LibyamlError`; ``yaml_format.parse`` then
parses again with PyYAML, so that every message stays PyYAML's.
"""

cdef extern from "yaml.h":
    ctypedef enum yaml_event_type_t:
        YAML_NO_EVENT
        YAML_STREAM_START_EVENT
        YAML_STREAM_END_EVENT
        YAML_DOCUMENT_START_EVENT
        YAML_DOCUMENT_END_EVENT
        YAML_ALIAS_EVENT
        YAML_SCALAR_EVENT
        YAML_SEQUENCE_START_EVENT
        YAML_SEQUENCE_END_EVENT
        YAML_MAPPING_START_EVENT
        YAML_MAPPING_END_EVENT
    ctypedef enum yaml_scalar_style_t:
        YAML_ANY_SCALAR_STYLE
        YAML_PLAIN_SCALAR_STYLE
        YAML_SINGLE_QUOTED_SCALAR_STYLE
        YAML_DOUBLE_QUOTED_SCALAR_STYLE
        YAML_LITERAL_SCALAR_STYLE
        YAML_FOLDED_SCALAR_STYLE
    ctypedef enum yaml_sequence_style_t:
        YAML_FLOW_SEQUENCE_STYLE
    ctypedef enum yaml_mapping_style_t:
        YAML_FLOW_MAPPING_STYLE
    ctypedef struct yaml_mark_t:
        size_t index
    ctypedef struct _alias_data:
        unsigned char *anchor
    ctypedef struct _scalar_data:
        unsigned char *anchor
        unsigned char *tag
        unsigned char *value
        size_t length
        int style
    ctypedef struct _collection_data:
        unsigned char *anchor
        unsigned char *tag
        int style
    ctypedef struct _document_start_data:
        int implicit
    ctypedef struct _document_end_data:
        int implicit
    ctypedef union _event_data:
        _alias_data alias
        _scalar_data scalar
        _collection_data sequence_start
        _collection_data mapping_start
        _document_start_data document_start
        _document_end_data document_end
    ctypedef struct yaml_event_t:
        yaml_event_type_t type
        _event_data data
        yaml_mark_t start_mark
        yaml_mark_t end_mark
    ctypedef struct yaml_parser_t:
        pass
    int yaml_parser_initialize(yaml_parser_t *parser)
    void yaml_parser_delete(yaml_parser_t *parser)
    ctypedef int yaml_read_handler_t(void *data, unsigned char *buffer, size_t size,
                                     size_t *size_read) noexcept
    void yaml_parser_set_input(yaml_parser_t *parser, yaml_read_handler_t *handler, void *data)
    int yaml_parser_parse(yaml_parser_t *parser, yaml_event_t *event)
    void yaml_event_delete(yaml_event_t *event)


cdef Py_ssize_t _MAX_DEPTH = 1000  # as PyYAML's own libyaml build allows
cdef Py_ssize_t _READ_CHARS = 65536  # characters encoded to UTF-8 at a time (memory)


cdef class _Source:
    """The text handed to libyaml in UTF-8 a piece at a time: no UTF-8 copy of the
    whole text (memory), as ``yaml_format._TextReader`` does for PyYAML."""

    cdef str text
    cdef Py_ssize_t pos
    cdef bytes pending
    cdef Py_ssize_t used

    def __init__(self, str text):
        self.text = text
        self.pos = 0
        self.pending = b""
        self.used = 0


cdef int _read(void *data, unsigned char *buffer, size_t size, size_t *size_read) noexcept:
    """libyaml's read handler: the next bytes of the text, none at its end."""
    cdef _Source src = <_Source>data
    cdef Py_ssize_t n
    try:
        if src.used >= len(src.pending):
            src.pending = src.text[src.pos : src.pos + _READ_CHARS].encode("utf-8")
            src.pos = min(src.pos + _READ_CHARS, len(src.text))
            src.used = 0
        n = min(<Py_ssize_t>size, len(src.pending) - src.used)
        memcpy(buffer, <const char *>src.pending + src.used, n)
        src.used += n
        size_read[0] = n
        return 1
    except BaseException:  # a lone surrogate: libyaml stops with a reader error
        return 0


class LibyamlError(Exception):
    """libyaml refused the text (PyYAML's parse gives the message)."""


class _Mark:
    __slots__ = ("index",)

    def __init__(self, index):
        self.index = index


class _Event:
    """The fields of a rare event that the builder's methods read."""

    __slots__ = ("start_mark", "end_mark", "explicit", "anchor")

    def __init__(self, start, end, explicit, anchor):
        self.start_mark = _Mark(start)
        self.end_mark = _Mark(end)
        self.explicit = explicit
        self.anchor = anchor


cdef class Frame:
    """An open mapping, sequence or document while events stream in (the fields of
    ``yaml_format._Frame``, typed)."""

    cdef public int kind
    cdef public object node
    cdef public bint flow
    cdef public bint expect_key
    cdef public object key
    cdef public Py_ssize_t key_start
    cdef public Py_ssize_t key_end
    cdef public object keys
    cdef public Py_ssize_t prev_end
    cdef public object root
    cdef public Py_ssize_t start
    cdef public Py_ssize_t marker_end
    cdef public bint empty_root

    def __init__(self, int kind, node, bint flow, Py_ssize_t start):
        self.kind = kind
        self.node = node
        self.flow = flow
        self.expect_key = kind == 0
        self.key = ""
        self.key_start = self.key_end = start
        self.keys = set() if kind == 0 else None
        self.prev_end = start
        self.root = None
        self.start = start
        self.marker_end = start
        self.empty_root = False


cdef Py_ssize_t _find_indicator(str text, Py_ssize_t lo, Py_ssize_t hi, Py_UCS4 indicator):
    """``yaml_format._find_indicator``, compiled."""
    cdef Py_ssize_t i = lo, dash = hi, nl
    cdef Py_UCS4 c
    while i < hi:
        c = text[i]
        if c == indicator:
            dash = i
            i += 1
        elif c == u"#":
            nl = text.find("\n", i, hi)
            i = hi if nl < 0 else nl + 1
        elif c == u"&" or c == u"!":
            while i < hi:
                c = text[i]
                if c == u" " or c == u"\t" or c == u"\r" or c == u"\n":
                    break
                i += 1
        else:
            i += 1
    return dash


cdef inline object _str(const unsigned char *s):
    return None if s == NULL else (<const char *>s).decode("utf-8", "surrogateescape")


cdef bint _divisible_plain(str value, dict atomic_plain):
    """``yaml_format._divisible_plain`` (``value`` not empty): numbers, booleans and
    null are atomic."""
    patterns = atomic_plain.get(value[0])
    if patterns is None:
        return True
    for rx in patterns:
        if rx.match(value) is not None:
            return False
    return True


cdef void _attach(builder, Frame top, node, str text, dict steps, list indices,
                  object key_step) except *:
    """``yaml_format._Builder._attach``, compiled."""
    cdef Py_ssize_t i
    if top.kind == 0:  # mapping
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
    elif top.kind == 1:  # sequence
        parent = top.node
        i = len(parent.children)
        node.label = i
        node.step = indices[i] if i < len(indices) else builder._index_step(i)
        if not top.flow:
            node.start = _find_indicator(text, top.prev_end, node.start, u"-")
        top.prev_end = node.end
        parent.children.append(node)
    else:
        top.root = node


def run(builder, object helpers):
    """Feed libyaml's events for ``builder.text`` to ``builder`` as ``_Builder.run``
    does. ``helpers``: (Node, NO_CHILDREN, key_step, atomic plain
    scalar patterns by first character, skip_properties, use_fallback, allowed tags)."""
    (Node, NO_CHILDREN, key_step, atomic_plain, skip_properties, UseFallback,
     allowed) = helpers
    cdef str text = builder.text
    cdef Py_ssize_t off = builder.off
    cdef bint checked = builder.checked
    cdef list stack = builder.stack
    cdef dict steps = builder.steps
    cdef dict names = builder.names
    cdef list indices = builder.indices
    cdef set anchors = builder.anchors
    cdef dict atomic = atomic_plain
    cdef yaml_parser_t parser
    cdef yaml_event_t ev
    cdef int t, style_c
    cdef Py_ssize_t s, e, cs, start, prev
    cdef bint flow
    cdef Frame top, frame
    cdef object node, kids, key, step, tag, style, keys
    cdef str value
    if not yaml_parser_initialize(&parser):
        raise MemoryError
    source = _Source(text)
    yaml_parser_set_input(&parser, _read, <void *>source)
    # no encoding set: libyaml detects UTF-8 and skips a BOM as PyYAML's stream input does
    try:
        while True:
            if not yaml_parser_parse(&parser, &ev):
                raise LibyamlError
            try:
                t = ev.type
                if t == YAML_SCALAR_EVENT:
                    s = ev.start_mark.index + off
                    e = ev.end_mark.index + off
                    if ev.data.scalar.tag != NULL:
                        tag = _str(ev.data.scalar.tag)
                        if tag not in allowed:
                            builder._check_tag(tag, s, e)
                    if ev.data.scalar.anchor != NULL:
                        anchors.add(_str(ev.data.scalar.anchor))
                    style_c = ev.data.scalar.style
                    value = (<const char *>ev.data.scalar.value)[:ev.data.scalar.length].decode(
                        "utf-8", "surrogateescape")
                    top = stack[-1]
                    cs = s
                    if s < len(text) and (text[s] == u"&" or text[s] == u"!"):
                        cs = skip_properties(text, s, e)[0]
                    if checked and value and cs < e and style_c <= YAML_DOUBLE_QUOTED_SCALAR_STYLE:
                        if style_c == YAML_SINGLE_QUOTED_SCALAR_STYLE:
                            if text[cs] != u"'":
                                raise UseFallback
                        elif style_c == YAML_DOUBLE_QUOTED_SCALAR_STYLE:
                            if text[cs] != u'"':
                                raise UseFallback
                        elif text[cs] != value[0]:
                            raise UseFallback
                    if top.kind == 0 and top.expect_key:
                        keys = top.keys
                        if value in keys:
                            raise builder._error(s, f"duplicate key {value!r}")
                        keys.add(value)
                        start = s
                        prev = top.prev_end
                        if prev < s and text.find("?", prev, s) >= 0:
                            start = _find_indicator(text, prev, s, u"?")
                        top.key = names.setdefault(value, value)
                        top.key_start = start
                        top.key_end = e
                        top.expect_key = False
                        continue
                    if style_c <= YAML_PLAIN_SCALAR_STYLE and value:
                        node = Node("scalar", s, e, "", None, NO_CHILDREN, False,
                                    e > cs and _divisible_plain(value, atomic), cs, e, "")
                    elif (style_c == YAML_SINGLE_QUOTED_SCALAR_STYLE
                          or style_c == YAML_DOUBLE_QUOTED_SCALAR_STYLE):
                        node = Node("scalar", s, e, "", None, NO_CHILDREN, False, e - cs > 2,
                                    cs + 1, e - 1,
                                    "'" if style_c == YAML_SINGLE_QUOTED_SCALAR_STYLE else '"')
                        if top.kind == 2:
                            top.empty_root = False
                    else:  # block scalars, empty values
                        if style_c == YAML_LITERAL_SCALAR_STYLE:
                            style = "|"
                        elif style_c == YAML_FOLDED_SCALAR_STYLE:
                            style = ">"
                        else:
                            style = ""
                        node = builder._scalar_node(s, e, cs, style, value, top)
                    _attach(builder, top, node, text, steps, indices, key_step)
                elif t == YAML_MAPPING_START_EVENT or t == YAML_SEQUENCE_START_EVENT:
                    s = ev.start_mark.index + off
                    top = stack[-1]
                    if top.kind == 0 and top.expect_key:
                        raise builder._error(s, "complex mapping key (a mapping or sequence "
                                             "as a key) is not supported")
                    if ev.data.mapping_start.tag != NULL:  # same layout for sequences
                        tag = _str(ev.data.mapping_start.tag)
                        if tag not in allowed:
                            builder._check_tag(tag, s, ev.end_mark.index + off)
                    if ev.data.mapping_start.anchor != NULL:
                        anchors.add(_str(ev.data.mapping_start.anchor))
                    if len(stack) > _MAX_DEPTH:
                        # the pure-Python parser reads deep flow nesting in linear time;
                        # libyaml's simple-key scan grows with the depth at every token
                        raise UseFallback
                    if t == YAML_MAPPING_START_EVENT:
                        flow = ev.data.mapping_start.style == YAML_FLOW_MAPPING_STYLE
                        frame = Frame(0, Node("mapping", s, s, "", None, []), flow, s)
                    else:
                        flow = ev.data.sequence_start.style == YAML_FLOW_SEQUENCE_STYLE
                        frame = Frame(1, Node("sequence", s, s, "", None, []), flow, s)
                    stack.append(frame)
                elif t == YAML_MAPPING_END_EVENT or t == YAML_SEQUENCE_END_EVENT:
                    frame = stack.pop()
                    node = frame.node
                    e = ev.end_mark.index + off
                    kids = node.children
                    node.children = tuple(kids) if kids else NO_CHILDREN
                    if frame.flow and e > node.start and text[e - 1] == (
                            u"}" if frame.kind == 0 else u"]"):
                        node.end = e
                    elif kids:
                        node.end = kids[-1].end
                    else:
                        node.end = max(node.start, e)
                    _attach(builder, <Frame>stack[-1], node, text, steps, indices, key_step)
                elif t == YAML_STREAM_END_EVENT:
                    return
                elif t == YAML_ALIAS_EVENT:
                    builder.alias(_Event(ev.start_mark.index, ev.end_mark.index, False,
                                         _str(ev.data.alias.anchor)))
                elif t == YAML_DOCUMENT_START_EVENT:
                    builder.document_start(_Event(ev.start_mark.index, ev.end_mark.index,
                                                  not ev.data.document_start.implicit, None))
                elif t == YAML_DOCUMENT_END_EVENT:
                    builder.document_end(_Event(ev.start_mark.index, ev.end_mark.index,
                                                not ev.data.document_end.implicit, None))
            finally:
                yaml_event_delete(&ev)
    finally:
        yaml_parser_delete(&parser)

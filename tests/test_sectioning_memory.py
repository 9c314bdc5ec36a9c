"""What the memory savings of sectioning must leave unchanged: a node's fields behind its
packed storage, the trees of a JavaScript program read part by part (and the errors of
one that cannot be), exact counts from the thinned safe points, and the sections of
``section_text`` (which tokenizes before it parses)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from treeagent import formats
from treeagent.algorithm.preprocess import section_text, section_tree
from treeagent.algorithm.tree import NO_CHILDREN, Node, ParseError, Tree
from treeagent.formats import javascript as js
from treeagent.tokenizers import pieces, tokens

OFFSETS = st.one_of(st.just(-1), st.integers(0, 300), st.integers(2**28, 2**40))
QUOTES = st.sampled_from(["", '"', "'", "`"])


@given(atomic=st.booleans(), divisible=st.booleans(), quote=QUOTES, cut_start=OFFSETS,
       cut_end=OFFSETS)
def test_node_fields_read_back_as_given(atomic, divisible, quote, cut_start, cut_end):
    node = Node("string", 5, 9, ".k", "k", NO_CHILDREN, atomic, divisible, cut_start,
                cut_end, quote)
    assert (node.atomic, node.divisible, node.quote, node.cut_start, node.cut_end) == (
        atomic, divisible, quote, cut_start, cut_end)
    assert node.indivisible == (atomic or not divisible)
    keyword = Node("string", 5, 9, atomic=atomic, divisible=divisible, cut_start=cut_start,
                   cut_end=cut_end, quote=quote)
    assert (keyword.atomic, keyword.divisible, keyword.quote, keyword.cut_start,
            keyword.cut_end) == (atomic, divisible, quote, cut_start, cut_end)


@given(first=st.tuples(st.booleans(), st.booleans(), QUOTES, OFFSETS, OFFSETS),
       second=st.tuples(st.booleans(), st.booleans(), QUOTES, OFFSETS, OFFSETS),
       order=st.permutations(range(5)))
def test_node_setters_change_one_field_each(first, second, order):
    node = Node("scalar", 0, 1, atomic=first[0], divisible=first[1], quote=first[2],
                cut_start=first[3], cut_end=first[4])
    names = ("atomic", "divisible", "quote", "cut_start", "cut_end")
    expected = list(first)
    for i in order:
        setattr(node, names[i], second[i])
        expected[i] = second[i]
        assert [getattr(node, n) for n in names] == expected


def test_index_gives_tuples_preorder_ids_and_parents():
    leaf_a, leaf_b, leaf_c = Node("number", 1, 2), Node("number", 3, 4), Node("number", 6, 7)
    inner = Node("array", 5, 8, children=[leaf_c])
    root = Node("array", 0, 9, children=[leaf_a, leaf_b, inner])
    tree = Tree("[1,2,[3]]", root, "json")
    assert [n.id for n in tree.nodes] == [0, 1, 2, 3, 4]
    assert tree.nodes == [root, leaf_a, leaf_b, inner, leaf_c]
    assert root.children == (leaf_a, leaf_b, inner) and inner.children == (leaf_c,)
    assert all(n.children is NO_CHILDREN for n in (leaf_a, leaf_b, leaf_c))
    assert leaf_c.parent is inner and inner.parent is root and root.parent is None


# -- JavaScript programs read part by part --------------------------------------------

LITERALS = st.sampled_from([
    "{a: 1, 'b': [2, 3,], c: {d: \"x;y\"}}", "[1, -2.5, 'q', null, true]", "'text'",
    "{\"k\": `t;`, n: NaN}", "[{x: 'ü€😀'}, {y: \"\\u00e9\"}]", "{/* c; */ a: 1}",
    "[]", "{}", "12", "\"s\\\"t\"",
])
STATEMENT_FORMS = st.sampled_from([
    "const {name} = {lit};", "let {name} = {lit}; // note;", "var {name} = {lit}\n;",
    "export const {name} = {lit};", "exports.{name} = {lit};",
    "const {name} = {lit}, {name}_b = {lit};", "/* block;\n */ const {name} = {lit};",
])


def _program(data) -> str:
    lines = ["'use strict';"] if data.draw(st.booleans()) else []
    for i in range(data.draw(st.integers(1, 12))):
        form = data.draw(STATEMENT_FORMS)
        lines.append(form.format(name=f"v{i}", lit=data.draw(LITERALS)))
    return "\n".join(lines) + data.draw(st.sampled_from(["", "\n", "\n// end\n"]))


def _shape(tree: Tree) -> list[tuple]:
    return [(n.kind, n.start, n.end, n.step, n.label, n.atomic, n.divisible, n.cut_start,
             n.cut_end, n.quote, len(n.children), n.id) for n in tree.nodes]


def _outcome(monkeypatch, text: str, part_chars: int):
    monkeypatch.setattr(js, "_PART_CHARS", part_chars)
    try:
        return _shape(js.parse(text, crosscheck="twin")), js.static_value(text)
    except ParseError as exc:
        return str(exc)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), part_chars=st.integers(0, 120))
def test_program_parts_read_as_the_whole_text(monkeypatch, data, part_chars):
    text = _program(data)
    assert _outcome(monkeypatch, text, part_chars) == _outcome(monkeypatch, text, 10**9)


@pytest.mark.parametrize("tail", [
    "function f() { return 1; }",  # not a static initializer: the whole text's error
    "const v0 = 5;",  # a duplicate binding
    "const w = {a: };",  # a syntax error in a later part wins over earlier rejections
    "if (x) y = 1;\nelse y = 2;",  # a part that reads alone but not after the cut
    "#!/usr/bin/env node\nconst z = 1;",  # a hashbang line past the start
    "const t = `a;\nb`;",  # a template holding the cut
])
def test_program_parts_keep_the_whole_texts_errors(monkeypatch, tail):
    head = "\n".join(f"const v{i} = {{k: [{i}, 'x;']}};" for i in range(6))
    text = head + "\n" + tail + "\n"
    for part_chars in (1, 20, 40):
        assert _outcome(monkeypatch, text, part_chars) == _outcome(monkeypatch, text, 10**9)


def test_a_long_program_is_read_in_parts(monkeypatch):
    text = "\n".join(f"const v{i} = {{k: [{i}, 'x']}};" for i in range(200)) + "\n"
    seen: list[int] = []
    real = js.syntax_root
    monkeypatch.setattr(js, "syntax_root", lambda data: (seen.append(len(data)), real(data))[1])
    monkeypatch.setattr(js, "_PART_CHARS", 256)
    tree = js.parse(text, crosscheck="twin")
    assert len(seen) > 10 and sum(seen) == len(text)  # parts only, no whole-text parse
    assert [n.label for n in tree.root.children] == [f"v{i}" for i in range(200)]


# -- exact counts and sections ----------------------------------------------------------

# indentation of spaces and tabs: before an added token, cut inside it, it is not always
# as many tokens as whole (" \t  " is one token there, " \t " and " " two)
LINE = st.builds(lambda ind, key, num, word: f"\n{ind}{key}: {num} {word}",
                 st.text(" \t", max_size=6), st.sampled_from(["id", "name", "v2", "x", "<think>",
                                                     "<|endoftext|>x"]),
                 st.integers(0, 10**6), st.sampled_from(["ok", "Wörter", "a-b", "é\u0301"]))


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(LINE, min_size=20, max_size=80), gap=st.sampled_from([1, 7, 64, 500]),
       cuts=st.lists(st.floats(0, 1), min_size=2, max_size=2))
def test_exact_counts_with_thinned_safe_points(monkeypatch, qwen3, lines, gap, cuts):
    monkeypatch.setattr(pieces, "_POINTS_GAP", gap)
    text = "".join(lines)
    a, b = sorted(int(c * len(text)) for c in cuts)
    index = tokens.TokenIndex(text, qwen3)
    assert index.exact(a, b) == qwen3.count(text[a:b])
    assert index.exact(a, b, '"', '"') == qwen3.count('"' + text[a:b] + '"')


def _sections(result) -> list[tuple]:
    return [(s.kind, s.start, s.end, s.path, s.tokens) for s in result.sections]


@pytest.mark.parametrize("fmt, text", [
    ("json", '{"rows": [' + ",".join(f'{{"id": {i}, "name": "row {i} \u00e9"}}'
                                      for i in range(300)) + "]}"),
    ("yaml", "".join(f"- id: {i}\n  name: row {i}\n  tags: [a, b]\n" for i in range(300))),
    ("html", "<html><body>" + "".join(f"<p class=r>row {i} &amp; more</p>"
                                      for i in range(300)) + "</body></html>"),
])
def test_section_text_sections_as_section_tree(qwen3, fmt, text):
    first = section_text(text, fmt, qwen3, 200)
    assert _sections(first) == _sections(section_tree(formats.parse(text, fmt), qwen3, 200))
    assert first.links == section_tree(formats.parse(text, fmt), qwen3, 200).links


def test_section_tree_refuses_another_texts_index(qwen3):
    tree = formats.parse('{"a": [1, 2, 3]}', "json")
    other = tokens.TokenIndex('{"a": [1, 2, 4]}', qwen3)
    with pytest.raises(ValueError, match="not the tokenization"):
        section_tree(tree, qwen3, 5, index=other)


# -- YAML read by libyaml a buffer at a time ------------------------------------------

YAML_VALUES = st.sampled_from(["plain", "'quoted'", '"dq \\u00e9"', "12", "[a, b]",
                               "{k: v}", "|\n    block\n", "Wörter 😀", "x" * 300])
YAML_BREAKS = st.sampled_from(["", "", "\tbad: tab", "k: [unclosed", "dup: 1\ndup: 2",
                               "&a x: *b", "\x07"])


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.lists(YAML_VALUES, min_size=1, max_size=40), brk=YAML_BREAKS,
       at=st.integers(0, 40), pad=st.integers(15000, 40000))
def test_yaml_read_in_buffers_as_whole(monkeypatch, values, brk, at, pad):
    from treeagent.formats import yaml_format

    lines = [f"k{i}: {v}" for i, v in enumerate(values)]
    lines.insert(min(at, len(lines)), brk)
    text = "# " + "p" * pad + "\n" + "\n".join(lines) + "\n"  # errors past libyaml's buffer

    def outcome():
        try:
            return _shape(yaml_format.parse(text))
        except ParseError as exc:
            return str(exc)

    fallbacks: list[str] = []

    class Recorded(yaml_format._FlatKeysLoader):
        def __init__(self, stream):
            fallbacks.append(stream)
            super().__init__(stream)

    with monkeypatch.context() as patch:  # undone after each example
        patch.setattr(yaml_format, "_FlatKeysLoader", Recorded)
        buffered = outcome()
        assert not fallbacks  # libyaml's marks matched the text read in buffers
    with monkeypatch.context() as patch:
        patch.setattr(yaml_format, "_TextReader", lambda t: t)  # the whole text at once
        assert buffered == outcome()


def test_a_prefix_that_joins_the_spans_first_character_is_counted_with_it(monkeypatch, qwen3):
    """A safe cut right at the span's start must not part the prefix from the span's
    first character: Qwen3 reads '":' as one token."""
    monkeypatch.setattr(pieces, "_POINTS_GAP", 1)  # every cut kept, the one at ':' too
    text = "\n v2: 0 ok" * 40
    a = text.index(":")  # a digit cut sits right at the span's start
    assert qwen3.count('":') == 1
    index = tokens.TokenIndex(text, qwen3)
    assert index.exact(a, len(text), '"', '"') == qwen3.count('"' + text[a:] + '"')


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(LINE, min_size=5, max_size=30))
def test_every_safe_point_is_a_token_boundary_of_a_span_that_reaches_its_need(
        monkeypatch, qwen3, lines):
    monkeypatch.setattr(pieces, "_POINTS_GAP", 1)  # every cut kept
    text = "".join(lines)
    index = tokens.TokenIndex(text, qwen3)
    for cut, need in zip(index._safe.tolist(), index._need.tolist()):
        left, right = max(0, cut - 25), min(len(text), max(cut, need + 1) + 12)
        assert qwen3.count(text[left:right]) == (
            qwen3.count(text[left:cut]) + qwen3.count(text[cut:right])), (cut, text[left:right])

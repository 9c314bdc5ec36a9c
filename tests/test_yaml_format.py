"""YAML format: spans, paths, leaf kinds, rejections and SplitText cuts (paper 3.1-3.2, A.1,
A.3). Oracles are PyYAML's own loader and hand-written expectations, never this module."""

from __future__ import annotations

import math
import re
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import SOURCES
from treeagent.algorithm.tree import Node, ParseError, Tree
from treeagent.formats import yaml_format
from treeagent.formats.yaml_format import parse, safe_cut

_SOURCES = [SOURCES] if SOURCES is not None else []  # a mirror of the real sources
OPENAPI = next(
    (p / "yaml" / "apis-guru-openapi-directory" for p in _SOURCES
     if (p / "yaml" / "apis-guru-openapi-directory").is_dir()),
    None,
)
C_LOADER = getattr(yaml, "CSafeLoader", None)


# -- helpers ---------------------------------------------------------------------------
def by_path(tree: Tree) -> dict[str, Node]:
    return {tree.path(n): n for n in tree.nodes}


def check_structure(tree: Tree) -> None:
    """Children in document order, disjoint, inside the parent; cut ranges inside."""
    n = len(tree.text)
    for node in tree.nodes:
        assert 0 <= node.start <= node.end <= n, node
        prev = node.start
        for child in node.children:
            assert child.parent is node
            assert prev <= child.start <= child.end <= node.end, (node, child)
            prev = child.end
        if node.divisible:
            assert not node.children
            assert node.start <= node.cut_start < node.cut_end <= node.end, node
        if node.atomic:
            assert not node.children


def loads(text: str) -> Any:
    return yaml.load(text, Loader=C_LOADER or yaml.SafeLoader)


def col(text: str, pos: int) -> int:
    return pos - (text.rfind("\n", 0, pos) + 1)


def same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


def _reload_matches(text: str, node: Node, expected: Any) -> bool:
    """The node's native text, loaded by PyYAML at its own column (block context) or
    wrapped in brackets (flow context), is ``expected``."""
    src = text[node.start : node.end]
    wrapped = [" " * col(text, node.start) + src]
    if isinstance(expected, dict):
        wrapped.append("{" + src + "}")
    elif isinstance(expected, list):
        wrapped.append("[" + src + "]")
    for candidate in wrapped:
        try:
            if loads(candidate) == expected:
                return True
        except yaml.YAMLError:
            pass
    return False


def check_against_data(tree: Tree, data: Any, docs: bool = False) -> None:
    """Walk tree and data together: kinds, labels, steps, and every node's reloaded text
    (except where an alias inside needs an anchor outside; aliases are never expanded)."""
    text = tree.text
    with_alias: set[int] = set()
    for n in reversed(tree.nodes):
        if n.kind == "alias" or any(c.id in with_alias for c in n.children):
            with_alias.add(n.id)

    def reloads(node: Node, expected: Any) -> bool:
        return node.id in with_alias or _reload_matches(text, node, expected)

    stack: list[tuple[Node, Any, str]] = []
    if docs:
        assert tree.root.kind == "stream"
        assert [c.label for c in tree.root.children] == list(range(len(data)))
        for child, value in zip(tree.root.children, data, strict=True):
            assert child.kind == "document"
            assert reloads(child, value), text[child.start : child.end]
            stack.append((child, value, "document"))
    else:
        assert reloads(tree.root, data)
        stack.append((tree.root, data, ""))
    while stack:
        node, value, role = stack.pop()
        if node.kind == "alias":
            assert node.atomic and not node.children and "*" in text[node.start : node.end]
            continue
        if role != "document":
            want = {dict: "mapping", list: "sequence"}.get(type(value), "scalar")
            assert node.kind == want, (node.kind, value)
        if isinstance(value, dict):
            assert [c.label for c in node.children] == list(value)
            for child in node.children:
                assert tree.path(child) == tree.path(node) + yaml_key_step(child.label)
                assert reloads(child, {child.label: value[child.label]}), (
                    text[child.start : child.end])
                stack.append((child, value[child.label], "member"))
        elif isinstance(value, list):
            assert [c.label for c in node.children] == list(range(len(value)))
            for child, item in zip(node.children, value, strict=True):
                assert tree.path(child) == f"{tree.path(node)}[{child.label}]"
                src = text[child.start : child.end]
                if re.sub(r"\A(?:#[^\n]*\n[ \t]*)+", "", src).startswith("-"):  # comments
                    ok = reloads(child, [item])
                else:
                    ok = reloads(child, item)
                assert ok, src
                stack.append((child, item, "item"))
        elif node.divisible and not isinstance(value, (dict, list)):
            q = node.quote
            token = text[node.cut_start - len(q) : node.cut_end + len(q)]
            if not tagged_before(text, node.cut_start - len(q)):
                assert same(load_token(token), value), (token, value)


def load_token(token: str) -> Any:
    """A scalar token's value, loaded after a key (a bare ``...`` or ``---`` would be a
    document marker), else alone (a flow scalar may continue at column 0)."""
    try:
        return loads("k: " + token)["k"]
    except yaml.YAMLError:
        return loads(token)


def tagged_before(text: str, pos: int) -> bool:
    """Is the scalar token at ``pos`` preceded by a ``!tag`` property?"""
    words = text[max(0, pos - 300) : pos].split()[-2:]
    return any(w.lstrip("[{,").startswith("!") for w in words)


def yaml_key_step(key: str) -> str:
    """Expected A.3 step, written out independently of ``treeagent.algorithm.tree.key_step``."""
    import re

    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
        return "." + key
    return "['" + key.replace("\\", "\\\\").replace("'", "\\'") + "']"


# -- paths and spans (hand-checked) ----------------------------------------------------
OPENAPI_SNIPPET = """\
openapi: 3.0.0
paths:
  /pets:
    get:
      responses:
        '200':
          description: A list of pets.
        default:
          description: "unexpected error"
  /pets/{petId}:
    get:
      parameters:
        - name: petId
          in: path
        -   name: verbose  # wider indentation after the dash
            in: query
"""


def test_openapi_paths_and_spans() -> None:
    tree = parse(OPENAPI_SNIPPET)
    check_structure(tree)
    nodes = by_path(tree)
    assert tree.format == "yaml" and tree.root.kind == "mapping"
    desc = nodes["$.paths['/pets'].get.responses['200'].description"]
    assert tree.source(desc) == "description: A list of pets."
    assert desc.kind == "scalar" and desc.divisible and desc.quote == ""
    assert OPENAPI_SNIPPET[desc.cut_start : desc.cut_end] == "A list of pets."
    r200 = nodes["$.paths['/pets'].get.responses['200']"]
    assert tree.source(r200) == "'200':\n          description: A list of pets."
    assert r200.label == "200" and r200.kind == "mapping"
    err = nodes["$.paths['/pets'].get.responses.default.description"]
    assert err.quote == '"'
    assert OPENAPI_SNIPPET[err.cut_start : err.cut_end] == "unexpected error"
    p0 = nodes["$.paths['/pets/{petId}'].get.parameters[0]"]
    assert tree.source(p0) == "- name: petId\n          in: path"
    assert tree.source(nodes["$.paths['/pets/{petId}'].get.parameters[0].in"]) == "in: path"
    p1 = nodes["$.paths['/pets/{petId}'].get.parameters[1]"]
    assert tree.source(p1) == (
        "-   name: verbose  # wider indentation after the dash\n            in: query")
    assert [c.label for c in tree.root.children] == ["openapi", "paths"]
    assert tree.source(nodes["$.openapi"]) == "openapi: 3.0.0"


def test_odd_keys_use_quoted_brackets() -> None:
    tree = parse("\"it's\": 1\n'a b': {'c.d': [x]}\n_ok9: 2\n")
    assert set(by_path(tree)) == {
        "$", "$['it\\'s']", "$['a b']", "$['a b']['c.d']", "$['a b']['c.d'][0]", "$._ok9"}


def test_sequence_items_include_block_dash_but_flow_items_do_not() -> None:
    text = "- a\n-\n- &x\n  k: v\n- - z\n  - w\n- # comment\n  q: [1, 'two', {x: y}]\n"
    tree = parse(text)
    check_structure(tree)
    assert [tree.source(c) for c in tree.root.children] == [
        "- a", "-", "- &x\n  k: v", "- - z\n  - w", "- # comment\n  q: [1, 'two', {x: y}]"]
    nodes = by_path(tree)
    assert [tree.source(c) for c in nodes["$[3]"].children] == ["- z", "- w"]
    flow = nodes["$[4].q"]
    assert flow.kind == "sequence"
    assert [tree.source(c) for c in flow.children] == ["1", "'two'", "{x: y}"]
    two = nodes["$[4].q[1]"]
    assert (text[two.cut_start : two.cut_end], two.quote) == ("two", "'")
    assert tree.source(nodes["$[4].q[2].x"]) == "x: y"
    assert not nodes["$[1]"].divisible and nodes["$[1]"].kind == "scalar"


def test_indentless_sequence_under_a_key() -> None:
    tree = parse("tags:\n- a\n- b\nnext: 1\n")
    nodes = by_path(tree)
    assert tree.source(nodes["$.tags"]) == "tags:\n- a\n- b"
    assert [tree.source(c) for c in nodes["$.tags"].children] == ["- a", "- b"]


def test_scalar_styles_and_empty_values() -> None:
    text = (
        "plain: hello world\n"
        "multi: first line\n  second line\n"
        "single: 'it''s'\n"
        "double: \"tab\\there\"\n"
        "tagged: !!str &anc 42\n"
        "empty:\n"
        "spaced :\n"
        "null_tag: !!null\n"
        "lit: |\n  line1\n  line2\n\n# trailing comment\n"
        "fold: >-\n  folded\n  text\n"
        "keep: |+\n  kept\n\n"
        "end: 1\n"
    )
    tree = parse(text)
    check_structure(tree)
    n = by_path(tree)

    def cut(node: Node) -> str:
        return text[node.cut_start : node.cut_end]

    assert (cut(n["$.plain"]), n["$.plain"].quote) == ("hello world", "")
    assert cut(n["$.multi"]) == "first line\n  second line"
    assert (cut(n["$.single"]), n["$.single"].quote) == ("it''s", "'")
    assert (cut(n["$.double"]), n["$.double"].quote) == ("tab\\there", '"')
    assert tree.source(n["$.tagged"]) == "tagged: !!str &anc 42" and cut(n["$.tagged"]) == "42"
    for key, src in (("empty", "empty:"), ("spaced", "spaced :"), ("null_tag", "null_tag: !!null")):
        assert tree.source(n[f"$.{key}"]) == src
        assert n[f"$.{key}"].kind == "scalar" and not n[f"$.{key}"].divisible
    lit = n["$.lit"]
    assert lit.atomic and not lit.divisible and tree.source(lit) == "lit: |\n  line1\n  line2\n"
    assert tree.source(n["$.fold"]) == "# trailing comment\nfold: >-\n  folded\n  text"
    assert tree.source(n["$.keep"]) == "keep: |+\n  kept\n\n" and n["$.keep"].atomic
    assert all(c.label != "" for c in tree.root.children)


@pytest.mark.parametrize(
    ("text", "source"),
    [
        ("a: |\n  x  \n\n\nb: 1\n", "a: |\n  x  \n"),
        ("a: |-\n  x  \n  \nb: 1\n", "a: |-\n  x  "),
        ("a: |+\n  x\n\n# c\nb: 1\n", "a: |+\n  x\n\n"),
        ("a: >2 # header comment\n    x\n   y\nb: 1\n", "a: >2 # header comment\n    x\n   y\n"),
        ("- |\n  x\n- y\n", "- |\n  x\n"),
    ],
)
def test_block_scalar_spans_reload_to_their_value(text: str, source: str) -> None:
    tree = parse(text)
    first = tree.root.children[0]
    assert first.atomic and tree.source(first) == source
    expected = {"a": loads(text)["a"]} if source[0] == "a" else [loads(text)[0]]
    assert loads(source) == expected


def test_explicit_key_member_starts_at_its_indicator() -> None:
    tree = parse("? a\n: b\n? c\nd: 1\n?   # comment\n  'e'\n: {? f : 1}\n")
    check_structure(tree)
    assert [(c.label, tree.source(c)) for c in tree.root.children] == [
        ("a", "? a\n: b"), ("c", "? c"), ("d", "d: 1"),
        ("e", "?   # comment\n  'e'\n: {? f : 1}")]
    assert tree.source(by_path(tree)["$.e.f"]) == "? f : 1"


def test_aliases_are_atomic_leaves_and_merge_keys_plain_members() -> None:
    text = "base: &b {x: 1}\nderived:\n  <<: *b\n  y: 2\nlist: [*b, *b]\n"
    tree = parse(text)
    n = by_path(tree)
    merge = n["$.derived['<<']"]
    assert merge.kind == "alias" and merge.atomic and tree.source(merge) == "<<: *b"
    assert [c.label for c in n["$.derived"].children] == ["<<", "y"]
    assert [tree.source(c) for c in n["$.list"].children] == ["*b", "*b"]


def test_billion_laughs_is_not_expanded() -> None:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, cur in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{cur}: &{cur} [" + ",".join([f"*{prev}"] * 9) + "]")
    text = "\n".join(lines) + "\n"
    t0 = time.perf_counter()
    tree = parse(text)
    assert time.perf_counter() - t0 < 1.0
    assert len(tree.nodes) == 1 + 9 + 9 * 9
    aliases = [n for n in tree.nodes if n.kind == "alias"]
    assert len(aliases) == 8 * 9 and all(a.atomic and not a.children for a in aliases)
    assert tree.source(by_path(tree)["$.i[8]"]) == "*h"


def test_multi_document_stream() -> None:
    text = "%YAML 1.1\n---\na: 1\n...\n---\n- x\n- 'y'\n---\n--- plain\n"
    tree = parse(text)
    check_structure(tree)
    root = tree.root
    assert root.kind == "stream" and tree.path(root) == "$"
    assert [c.kind for c in root.children] == ["document"] * 4
    assert [tree.source(c) for c in root.children] == [
        "%YAML 1.1\n---\na: 1\n...", "---\n- x\n- 'y'", "---", "--- plain"]
    n = by_path(tree)
    assert tree.source(n["$[0].a"]) == "a: 1"
    assert tree.source(n["$[1][1]"]) == "- 'y'"
    assert n["$[3]"].divisible and text[n["$[3]"].cut_start : n["$[3]"].cut_end] == "plain"
    assert (root.start, root.end) == (0, len(text) - 1)


def test_single_document_with_markers_and_bom() -> None:
    text = "\ufeff---\nk: \"v\"\nj: 2\n...\n"
    tree = parse(text)
    assert tree.root.kind == "mapping"
    assert [tree.source(c) for c in tree.root.children] == ['k: "v"', "j: 2"]
    k = tree.root.children[0]
    assert text[k.cut_start : k.cut_end] == "v"
    bom_seq = parse("\ufeff- a\n- b\n")
    assert [bom_seq.source(c) for c in bom_seq.root.children] == ["- a", "- b"]


@pytest.mark.parametrize("text", ["", "   \n\n", "# only a comment\n", "---\n", "--- \n...\n"])
def test_empty_input_is_rejected(text: str) -> None:
    with pytest.raises(ParseError, match="empty YAML document") as info:
        parse(text)
    assert (info.value.line, info.value.col) == (1, 1)


def test_unicode_offsets_are_characters() -> None:
    text = "emoji: \"😀😀\"\nnext: 'é'\nk😀: v\n"
    tree = parse(text)
    assert [tree.source(c) for c in tree.root.children] == ['emoji: "😀😀"', "next: 'é'", "k😀: v"]


def test_deep_nesting_builds_iteratively() -> None:
    depth = 3000  # beyond libyaml's 1000-level limit: the Python parser takes over
    tree = parse("- " * depth + "x\n")
    deepest = tree.nodes[-1]
    assert tree.path(deepest) == "$" + "[0]" * depth
    assert tree.source(deepest) == "- x"
    flow = parse("[" * 900 + "]" * 900)
    assert len(flow.nodes) == 900 and flow.source(flow.nodes[-1]) == "[]"
    assert len(parse("[" * 1200 + "7" + "]" * 1200).nodes) == 1201


MESSY = """\
# leading comment
top:   # comment after key
  - &first   # anchor then comment
    name: one
    tags: !!seq [a,   b,
      c]
  -   !!map
    name: two
  - >
    folded
    text

  # comment between items
  - - nested
    -   "quoted # not a comment"
  -
  - 'single ''quoted'''
flow: {a: 1,
  b: [x, {y: z}],
   c: }
str_tag: !!str 123
literal: |-
  keep
    indent
after: *first
...
"""


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_hand_written_layouts_reload_node_by_node(newline: str) -> None:
    text = MESSY.replace("\n", newline)
    tree = parse(text)
    check_structure(tree)
    check_against_data(tree, loads(text))
    n = by_path(tree)
    nl = newline
    assert tree.source(n["$.top[1]"]) == f"-   !!map{nl}    name: two"
    assert tree.source(n["$.top[2]"]) == f"- >{nl}    folded{nl}    text{nl}"
    assert tree.source(n["$.top[4]"]) == "-"
    assert tree.source(n["$.top[0].tags"]) == f"tags: !!seq [a,   b,{nl}      c]"
    assert tree.source(n["$.flow.c"]) == "c:"
    assert tree.source(n["$.after"]) == "after: *first" and n["$.after"].kind == "alias"
    q = n["$.top[3][1]"]
    assert text[q.cut_start : q.cut_end] == "quoted # not a comment"


# -- rejections with line:col ----------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "line", "col", "fragment"),
    [
        ("a: 1\na: 2\n", 2, 1, "duplicate key 'a'"),
        ("m:\n  x: 1\n  y: 2\n  'x': 3\n", 4, 3, "duplicate key 'x'"),
        ("? [a, b]\n: c\n", 1, 3, "complex mapping key"),
        ("k: {[a]: 1}\n", 1, 5, "complex mapping key"),
        ("? {a: 1}\n: c\n", 1, 3, "complex mapping key"),
        ("a: &x k\n*x : v\n", 2, 1, "alias '*x' used as a mapping key"),
        ("a: *nope\n", 1, 4, "undefined alias '*nope'"),
        ("x:\n  - !!python/object/apply:os.system ['ls']\n", 2, 5,
         "unsupported YAML tag '!!python/object/apply:os.system'"),
        ("a: &anc !custom v\n", 1, 9, "unsupported YAML tag '!custom'"),
        ("- !!python/name:os.system\n", 1, 3, "unsupported YAML tag '!!python/name:os.system'"),
        ("%TAG !e! tag:example.com,2000:\n---\na: !e!foo x\n", 3, 4, "'!e!foo'"),
        ("x: !<tag:example.com,2000:app> 1\n", 1, 4, "unsupported YAML tag"),
        ("k: !!python/tuple [1, 2]\n", 1, 4, "unsupported YAML tag '!!python/tuple'"),
        ("x: 1\n y: 2\n", 2, 3, "mapping values are not allowed"),
        ('a: "b', 1, 6, "unexpected end of stream"),
        ("a: [b", 1, 6, ""),
        ("a:\n\tb: 1\n", 2, 1, "cannot start any token"),
        ("é: 1\nb: \x01\n", 2, 4, "control characters"),
        ("\ufeffa: [1,\n}\n", 2, 1, ""),
    ],
)
def test_rejections_carry_line_and_column(text: str, line: int, col: int, fragment: str) -> None:
    with pytest.raises(ParseError) as info:
        parse(text)
    assert (info.value.line, info.value.col) == (line, col), str(info.value)
    assert fragment in info.value.message


@pytest.mark.parametrize(
    "text",
    [
        "a: !!str 1\nb: !!int '3'\nc: !!float 1\nd: !!bool yes\ne: !!null ''\n",
        "s: !!set {a, b}\no: !!omap [a: 1, b: 2]\np: !!pairs [a: 1]\n",
        "b: !!binary aGVsbG8=\nt: !!timestamp 2001-12-14\nm: !!map {}\nq: !!seq []\n",
        "x: ! plain\n<<: {a: 1}\nv: !!value =\nmm: !!merge <<\n",
        "x: !<tag:yaml.org,2002:str> s\n",
    ],
)
def test_standard_tags_are_accepted(text: str) -> None:
    tree = parse(text)
    check_structure(tree)
    assert all(c.label is not None for c in tree.root.children)


def test_parse_never_leaks_a_yaml_exception() -> None:
    for text in ["{", "]", "a: b: c", "- a\nb: c", "*", "!!", "'''", "\x00", "a: \ud800"]:
        with pytest.raises(ParseError):
            parse(text)


def test_pure_python_fallback_gives_the_same_tree(monkeypatch: pytest.MonkeyPatch) -> None:
    fast = parse(OPENAPI_SNIPPET)
    monkeypatch.setattr(yaml_format, "_C_LOADER", None)
    slow = parse(OPENAPI_SNIPPET)
    assert [(slow.path(n), n.start, n.end) for n in slow.nodes] == [
        (fast.path(n), n.start, n.end) for n in fast.nodes]
    for text, where in (("x: 1\n y: 2\n", (2, 3)), ("a: [b", (1, 6)), ("a: 1\na: 2\n", (2, 1))):
        with pytest.raises(ParseError) as info:
            parse(text)
        assert (info.value.line, info.value.col) == where


# -- safe_cut ----------------------------------------------------------------------------
def test_safe_cut_double_quoted_escapes() -> None:
    text = '"a\\nb\\x41c\\u263Ad\\U0001F600e\\\\f\\\n  g"'
    esc = {
        "\\n": 2, "\\x41": 4, "\\u263A": 6, "\\U0001F600": 10, "\\\\": 2, "\\\n": 2,
    }
    for seq, length in esc.items():
        at = text.index(seq)
        assert safe_cut(text, at) and safe_cut(text, at + length), seq
        assert not any(safe_cut(text, at + k) for k in range(1, length)), seq
    f_at = text.index("f")
    assert safe_cut(text, f_at) and safe_cut(text, f_at + 1)


def test_safe_cut_backslash_run_parity() -> None:
    text = '"\\\\x41"'  # an escaped backslash, then the literal characters x41
    assert safe_cut(text, 3) and safe_cut(text, 4) and safe_cut(text, 5)
    assert not safe_cut(text, 2)


def test_safe_cut_surrogates_and_single_quotes() -> None:
    escaped = '"\\uD83D\\uDE00"'
    assert not safe_cut(escaped, 7)
    assert safe_cut(escaped, 1) and safe_cut(escaped, 13)
    raw = "x\ud83d\ude00y"
    assert not safe_cut(raw, 2) and safe_cut(raw, 1) and safe_cut(raw, 3)
    single = "'it''s'"
    assert not safe_cut(single, 4)
    assert safe_cut(single, 3) and safe_cut(single, 5) and safe_cut(single, 6)
    assert not safe_cut("a\r\nb", 2) and safe_cut("a\r\nb", 3)
    plain = "plain words here"
    assert all(safe_cut(plain, p) for p in range(len(plain) + 1))


# -- property-based ----------------------------------------------------------------------
_CHARS = st.characters(blacklist_categories=("Cs",))
_KEYS = st.text(_CHARS, max_size=10).filter(lambda k: k != "<<")
_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-(10**12), 10**12),
    st.floats(allow_nan=False, width=64), st.text(_CHARS, max_size=30),
    st.sampled_from(["yes", "null", "~", "1e3", "0x1F", "- a", "a: b", "#x", "'q'", "\"d\"",
                     "line one\nline two", " lead", "trail ", "tab\there", "back\\slash"]),
)
_DATA = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=4),
    max_leaves=25,
)
_DUMP = st.fixed_dictionaries({
    "default_flow_style": st.sampled_from([False, True, None]),
    "default_style": st.sampled_from([None, None, '"', "'"]),
    "allow_unicode": st.booleans(),
    "width": st.sampled_from([12, 40, 80, 10**6]),
    "indent": st.sampled_from([2, 4]),
    "explicit_start": st.booleans(),
    "sort_keys": st.booleans(),
})
_BREAKS = "\n\r\x85\u2028\u2029"  # YAML 1.1 line breaks
_SETTINGS = settings(max_examples=150, deadline=None,
                     suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _dumped(data: Any, opts: dict[str, Any]) -> str | None:
    text = yaml.safe_dump(data, **opts)
    return text if loads(text) == data else None  # skip PyYAML's own round-trip gaps


@_SETTINGS
@given(_DATA, _DUMP)
def test_generated_documents_reload_node_by_node(data: Any, opts: dict[str, Any]) -> None:
    text = _dumped(data, opts)
    if text is None:
        return
    tree = parse(text)
    check_structure(tree)
    check_against_data(tree, loads(text))  # equal to data, in document order


@_SETTINGS
@given(st.lists(_DATA, min_size=2, max_size=3), _DUMP)
def test_generated_streams_have_document_children(docs: list[Any], opts: dict[str, Any]) -> None:
    text = yaml.safe_dump_all(docs, **opts)
    if list(yaml.load_all(text, Loader=C_LOADER or yaml.SafeLoader)) != docs:
        return
    tree = parse(text)
    check_structure(tree)
    check_against_data(tree, list(yaml.load_all(text, Loader=C_LOADER or yaml.SafeLoader)),
                       docs=True)


@pytest.mark.skipif(C_LOADER is None, reason="libyaml not installed")
@_SETTINGS
@given(_DATA, _DUMP, st.booleans())
def test_libyaml_and_python_parsers_give_identical_trees(
    data: Any, opts: dict[str, Any], bom: bool
) -> None:
    """libyaml through PyYAML's binding, libyaml read in compiled code (where built) and
    PyYAML's pure-Python parser give the same tree."""
    text = ("\ufeff" if bom else "") + yaml.safe_dump(data, **opts)
    slow = yaml_format._build(text, yaml_format._pyyaml_events(yaml.SafeLoader, False), False)
    fast = [yaml_format._build(text, yaml_format._pyyaml_events(C_LOADER, True), True)]
    if yaml_format._LIBYAML is not None:
        fast.append(yaml_format._build(text, yaml_format._compiled_events, True))
    for tree in fast:
        assert len(tree.nodes) == len(slow.nodes)
        for a, b in zip(tree.nodes, slow.nodes, strict=True):
            assert (a.kind, a.start, a.end, a.step, a.label, a.cut_start, a.cut_end, a.quote,
                    a.atomic, a.divisible) == (b.kind, b.start, b.end, b.step, b.label,
                                               b.cut_start, b.cut_end, b.quote, b.atomic,
                                               b.divisible)


@settings(max_examples=200, deadline=None)
@given(st.text(_CHARS, min_size=1, max_size=25), st.sampled_from(['"', "'"]), st.booleans())
def test_every_allowed_cut_keeps_both_fragments_valid(value: str, style: str, uni: bool) -> None:
    text = yaml.safe_dump({"k": value}, default_style=style, width=10**6, allow_unicode=uni)
    tree = parse(text)
    leaf = tree.root.children[0]
    q = leaf.quote
    if not leaf.divisible or any(c in text[leaf.cut_start : leaf.cut_end] for c in _BREAKS):
        return  # multi-line quoted scalars fold; this oracle is for one-line scalars
    assert q in ('"', "'")
    for p in range(leaf.cut_start + 1, leaf.cut_end):
        if safe_cut(text, p):
            left = loads(q + text[leaf.cut_start : p] + q)
            right = loads(q + text[p : leaf.cut_end] + q)
            assert left + right == value, (text, p)


# -- real data ---------------------------------------------------------------------------
def _openapi_files() -> list[Path]:
    assert OPENAPI is not None
    return sorted(p for p in OPENAPI.rglob("*") if p.is_file() and p.suffix in (".yaml", ".yml"))


@pytest.mark.skipif(OPENAPI is None, reason="shared OpenAPI sources absent")
def test_all_openapi_documents_parse_with_sound_trees() -> None:
    files = _openapi_files()
    assert len(files) == 565
    rejected: list[str] = []
    checked_leaves = 0
    t0 = time.perf_counter()
    for i, path in enumerate(files):
        text = path.read_text(encoding="utf-8")
        try:
            tree = parse(text)
        except ParseError as exc:
            rejected.append(f"{path.name}: {exc}")
            continue
        check_structure(tree)
        for node in tree.nodes:
            if isinstance(node.label, str) and node.parent is not None:
                head = text[node.start : node.start + len(node.label) + 2]
                if head[:1] not in ("'", '"', "!", "&"):
                    assert head.startswith(node.label), (path.name, tree.path(node))
        if i % 8 == 0:  # every 8th document: every scalar leaf against PyYAML's data
            data = loads(text)
            for leaf in tree.leaves():
                value: Any = data
                for step_node in _ancestry(leaf):
                    value = value[step_node.label]
                if leaf.divisible:
                    q = leaf.quote
                    token = text[leaf.cut_start - len(q) : leaf.cut_end + len(q)]
                    if not tagged_before(text, leaf.cut_start - len(q)):
                        assert same(load_token(token), value), (path.name, tree.path(leaf))
                        checked_leaves += 1
    elapsed = time.perf_counter() - t0
    assert rejected == []
    assert checked_leaves > 10_000
    assert elapsed < 300, elapsed  # generous: the machine is shared (load up to ~10)


def _ancestry(node: Node) -> list[Node]:
    chain = []
    while node.parent is not None:
        chain.append(node)
        node = node.parent
    return chain[::-1]


@pytest.mark.skipif(OPENAPI is None, reason="shared OpenAPI sources absent")
def test_four_megabyte_stream_parses_quickly() -> None:
    parts: list[str] = []
    size = 0
    for path in _openapi_files():
        doc = path.read_text(encoding="utf-8")
        parts.append(doc if doc.endswith("\n") else doc + "\n")
        size += len(doc)
        if size >= 4_000_000:
            break
    text = "---\n".join(parts)
    t0 = time.perf_counter()
    tree = parse(text)
    elapsed = time.perf_counter() - t0
    assert tree.root.kind == "stream" and len(tree.root.children) == len(parts)
    assert [tree.path(c) for c in tree.root.children[:2]] == ["$[0]", "$[1]"]
    assert elapsed < 20, elapsed  # ~1-2 s measured on a shared 2-core machine


# -- tokenizing indented text: line pieces, tiktoken twin, exact span counts -----------
# YAML is where repeated indented lines make per-line deduplication pay (tokens.py);
# the oracle is always the tokenizer's own whole-text encoding.
_TOKEN_ALPHABET = st.sampled_from([
    " ", "  ", "    ", "\t", "\n", "\n  ", "\n- ", "\r\n", "\r", "a", "Key", "1", "42", ":",
    ": ", "/", "-", "#", "'s", "'", '"', ".", "é", "e\u0301", "\u0301", "\u00a0", "\u3000",
    "\x0b", "\x85", "\u2028", "😀", "中文", "<think>", "<|im_start|>",
])


@settings(max_examples=300, deadline=None)
@given(st.lists(_TOKEN_ALPHABET, max_size=60).map("".join),
       st.sampled_from(["qwen3", "cl100k_base", "o200k_base"]))
def test_line_pieces_tokenize_like_the_whole_text(text: str, name: str) -> None:
    from treeagent.tokenizers import pieces, tokens

    tk = tokens.load(name)
    expected = list(tk.encode(text))
    assert len(tk.token_starts(text)) == len(expected)
    cut = pieces._line_pieces(text)
    assert "".join(cut) == text and all(cut)
    if tk.line_safe_for(text):
        assert pieces._dedup_ids(cut, tk._encode_many).tolist() == expected
    else:  # indentation before an added token ends its own pre-tokenization section
        assert "<" in text


@settings(max_examples=300, deadline=None)
@given(st.lists(_TOKEN_ALPHABET, max_size=60).map("".join))
def test_tiktoken_twin_gives_qwen3_ids_on_nfc_text_without_added_tokens(text: str) -> None:
    import unicodedata

    from treeagent.tokenizers import tokens

    tk = tokens.load("qwen3")
    tk.prepare()
    assert tk._twin is not None
    expected = list(tk.encode(text))
    if tk._twin_applies([text]):
        assert tk._twin.encode_ordinary(text) == expected
    else:  # routed to tokenizers: added tokens or non-NFC text
        assert "<" in text or not unicodedata.is_normalized("NFC", text)
    assert tk._encode_many([text] * 65) == [expected] * 65


@pytest.mark.skipif(OPENAPI is None, reason="shared OpenAPI sources absent")
def test_real_yaml_token_starts_and_exact_span_counts(qwen3: Any) -> None:
    import random

    import numpy as np

    from treeagent.tokenizers.tokens import TokenIndex

    parts: list[str] = []
    for path in _openapi_files():
        parts.append(path.read_text(encoding="utf-8"))
        if sum(map(len, parts)) > 600_000:  # above the twin threshold (256K characters)
            break
    text = "\n---\n".join(parts)
    enc = qwen3._tok.encode(text, add_special_tokens=False)
    starts = qwen3.token_starts(text)
    assert np.array_equal(starts, [o[0] for o in enc.offsets])
    index = TokenIndex(text, qwen3)
    assert index._need is not None and np.all(np.diff(index._need) >= 0)
    breaks = [i for i, c in enumerate(text) if c == "\n"]
    rng = random.Random(7)
    for _ in range(300):  # spans starting/ending around line starts and indentation
        a = rng.choice(breaks) + rng.randrange(-2, 9)
        b = a + rng.randrange(300, 6000) if rng.random() < 0.5 else rng.choice(breaks) + rng.randrange(-2, 9)
        a, b = sorted((max(0, a), min(len(text), b)))
        assert index.exact(a, b) == qwen3.count(text[a:b]), (a, b)


@pytest.mark.skipif(yaml_format._LIBYAML is None, reason="compiled event reader not built")
def test_compiled_reader_gives_pyyamls_trees_and_errors_across_its_read_pieces() -> None:
    """The compiled reader hands libyaml the text in UTF-8 pieces of 65,536 characters:
    multi-byte characters on every side of those cuts, block scalars and flow runs
    across them, and a lone surrogate or a syntax error far into the text."""
    rows = []
    for i in range(6000):
        rows.append(f"- ключ{i}: \"значение 😀 {i}\"\n  note: |\n    ünïcödé line {i}\n"
                    f"  flow: [é, {i}, 'ß']\n")
    text = "".join(rows)
    assert len(text) > 3 * 65536
    via_pyyaml = yaml_format._build(text, yaml_format._pyyaml_events(C_LOADER, True), True)
    compiled = yaml_format._build(text, yaml_format._compiled_events, True)
    assert [(n.kind, n.start, n.end, n.step, n.label, n.cut_start, n.cut_end, n.quote,
             n.atomic, n.divisible) for n in compiled.nodes] == \
        [(n.kind, n.start, n.end, n.step, n.label, n.cut_start, n.cut_end, n.quote,
          n.atomic, n.divisible) for n in via_pyyaml.nodes]
    for bad in (text + "- x: \ud800\n", text + "- [unclosed\n"):
        with pytest.raises(ParseError) as got:
            parse(bad)
        with pytest.raises(ParseError) as want:
            yaml_format._build(bad, yaml_format._pyyaml_events(C_LOADER, True), True)
        assert str(got.value) == str(want.value)

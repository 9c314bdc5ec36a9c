"""The ``twin`` cross-check of JavaScript literals (B.1): json5's reading through a JSON
twin and the C ``json`` decoder must be json5's own reading wherever it is used, and the
parse must reject and accept exactly what the ``mixed`` cross-check does."""

from __future__ import annotations

import json
from pathlib import Path

import json5
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import same
from treeagent import formats
from treeagent.algorithm.tree import ParseError
from treeagent.formats import javascript as js
from treeagent.formats import js_values
from treeagent.formats.js_crosscheck import _join_surrogates, _json_twin

SAMPLES = Path(__file__).resolve().parents[1] / "src" / "treeagent" / "samples" / "bench"


def joined(v: object) -> object:
    """``v`` with surrogate pairs joined in every string: the cross-check compares
    readings so (json joins escaped pairs, json5 does not)."""
    if isinstance(v, dict):
        return {_join_surrogates(k): joined(x) for k, x in v.items()}
    if isinstance(v, list):
        return [joined(x) for x in v]
    return _join_surrogates(v) if isinstance(v, str) else v


def twin_reading(source: str) -> tuple[bool, object]:
    """(True, value) where the twin path reads ``source``; (False, None) where it leaves
    it to json5."""
    twin = _json_twin(source)
    if twin is None:
        return False, None
    try:
        return True, json.loads(twin)
    except ValueError:
        return False, None


# Tokens of JSON5 and near-JSON5 text, valid and not: sequences of them probe every
# rewrite (keys, quotes, comments, trailing commas) and what must not be rewritten.
_TOKENS = st.sampled_from([
    "{", "}", "[", "]", ",", ":", "-", "+", ".", " ", "\n", "\t", "\r", "\v", "\u00a0",
    "\u2028", "a", "b1", "$_", "true", "false", "null", "NaN", "Infinity", "undefined",
    "default", "0", "-0", "1", "01", "1.5", ".5", "5.", "1e3", "0x1F", "-0.0", "1e400",
    '"x"', '"a\\"b"', '"\\u00e9"', '"\\ud83d\\ude00"', '"\\x41"', '"\\\'"', '"a\u2028"',
    "'y'", "'it\\'s'", "'q\"r'", "'\\\\'", "'\\\\\\''", "'\\n'", "'\\0'", "'a\\\nb'",
    "'\\u{41}'", "// c\n", "// c\u2028", "/* c */", "/* ' \" */", "/**/", "/*", "//",
    '"', "'", "\\",
])


_GAPS = st.sampled_from(["", "", " ", "\n", "/* c */", "// c\n", "\v", "\u2028"])
_ATOMS = st.sampled_from([t for t in _TOKENS.elements if t not in "{}[],:"] + [""])
_KEY_TOKENS = st.sampled_from(["a", "b1", "$_", "true", "NaN", "default", "0", "1.5", '"x"',
                               "'y'", "'it\\'s'", "é", "a b", "", "-a", '"\\u0061"'])


def _array(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.builds(lambda items, gaps, trail, sep: "[" + sep.join(
        g + i for i, g in zip(items, gaps)) + trail + "]",
        st.lists(inner, max_size=3), st.lists(_GAPS, min_size=3, max_size=3),
        st.sampled_from(["", ",", ", ", ",,", ",/* c */"]), st.sampled_from([",", ", ", ",,"]))


def _object(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    member = st.builds(lambda k, g, sep, v: k + g + sep + v, _KEY_TOKENS, _GAPS,
                       st.sampled_from([":", ": ", "", "::"]), inner)
    return st.builds(lambda ms, g, trail: "{" + g + ",".join(ms) + trail + "}",
                     st.lists(member, max_size=3), _GAPS,
                     st.sampled_from(["", ",", ",\n", ",,", ",/* c */"]))


# Near-JSON5 documents: nested arrays/objects of the tokens above with empty elements,
# doubled and trailing commas, bad keys and gaps (comments, other whitespace) anywhere.
_DOCUMENTS = st.builds(lambda a, v, b: a + v + b, _GAPS,
                       st.recursive(_ATOMS, lambda inner: _array(inner) | _object(inner),
                                    max_leaves=10), _GAPS)


@settings(max_examples=2000, deadline=None)
@given(st.one_of(st.lists(_TOKENS, max_size=14).map("".join), _DOCUMENTS))
def test_twin_reading_is_json5s_reading(source):
    """Wherever the twin path reads a text, json5 reads it too, to the same value."""
    used, value = twin_reading(source)
    if used:
        assert same(joined(value), joined(json5.loads(source))), source


_KEYS = st.sampled_from(["a", "b_2", "$x", "default", "true", "NaN", "é", "a b", "it's",
                         'q"', "", "\\"])
_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-10**20, 10**20),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(st.characters(codec="utf-8"), max_size=8),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(_KEYS, inner, max_size=4)),
    max_leaves=12,
)


def render(value: object, draw) -> str:
    """``value`` written as JSON5 in a drawn style: keys bare or quoted, strings in either
    quote, comments and trailing commas here and there."""
    gap = draw(st.sampled_from(["", " ", "\n  ", " /* c */ ", " // c\n"]))
    if isinstance(value, dict):
        members = []
        for k, v in value.items():
            bare = k.isidentifier() and k.isascii() and draw(st.booleans())
            members.append(f"{k if bare else render(k, draw)}:{gap}{render(v, draw)}")
        trail = draw(st.sampled_from(["", ",", ",\n"])) if members else ""
        return "{" + gap + ",".join(members) + trail + "}"
    if isinstance(value, list):
        items = [render(v, draw) for v in value]
        trail = draw(st.sampled_from(["", ",", ", "])) if items else ""
        return "[" + gap + ("," + gap).join(items) + trail + "]"
    if isinstance(value, str) and draw(st.booleans()):
        body = json.dumps(value)[1:-1].replace('\\"', '"').replace("'", "\\'")
        return "'" + body + "'"
    return json.dumps(value)


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_twin_reads_generated_json5(data):
    """Generated JSON5 in the styles JavaScript sources use: the twin path agrees with
    json5 wherever it reads, and reads every text written without comments."""
    value = data.draw(_VALUES)
    source = render(value, data.draw)
    used, got = twin_reading(source)
    if used:
        assert same(joined(got), joined(json5.loads(source))), source
    elif "/*" not in source and "//" not in source:
        pytest.fail(f"twin path left plain JSON5 to json5: {source!r}")


@pytest.mark.parametrize("source", [
    "[,]", "{,}", "[1,,]", "[/* c */,]", "{a:1,,}", "[- Infinity]", "{a: 0x10}",
    "['\\x41']", "{a\\u0062: 1}", "[.5, 5., +1]", "{é: 1}", "['a\\\nb']", "[01]",
])
def test_texts_left_to_json5(source):
    """Syntax the twin does not rewrite, or that is no JSON5 at all, goes to json5."""
    assert twin_reading(source) == (False, None)


def _shape(tree) -> list[tuple]:
    return [(n.kind, n.start, n.end, n.label, n.step, n.atomic) for n in tree.nodes]


def _outcome(text: str, mode: str, dynamic: str = "reject") -> tuple:
    try:
        tree = js.parse(text, crosscheck=mode, dynamic=dynamic)
    except ParseError as exc:
        return ("error", exc.message, exc.line, exc.col)
    return ("tree", _shape(tree))


_EDGE_CASES = [
    "const a = {x: 1, 'y': [true, null, -0, -0.0, 1e400, NaN, -Infinity], z: 'q\"r',};",
    "module.exports = [{ // note\n  a: 'it\\'s', /* b */ b: \"\\u00e9\" }, [],];",
    "const k = {1.50: 'x', 0x10: 'y', '\\u{1F600}': 3, [`t`]: 1};",
    "const t = {a: `line\nnext`, b: '\\x41', c: 'a\\\nb', d: .5, e: +1};",
    "[0o17]", '["\\01"]', "const n = [- 1];", "{0o7: 1}", "[,]", "const d = {a: 1, a: 2};",
    "export default {é: 1, $x: [1, 2, 3,], _y: {}};",
]


@pytest.mark.parametrize("dynamic", ["reject", "atomic"])
@pytest.mark.parametrize("text", _EDGE_CASES + [
    "const f = {a: x + 1, b: [...y], c() { return 1; }, d: `t${z}`, e: {[k]: 1, n: 2}};",
    "module.exports = {rules: {x: require('a'), y: 'b'}, list: [f(1), 2,]};",
])
def test_twin_and_mixed_parse_alike(text, dynamic):
    """Same tree, or the same error at the same place, in both modes."""
    assert _outcome(text, "twin", dynamic) == _outcome(text, "mixed", dynamic)


def test_twin_and_mixed_agree_on_the_shipped_samples():
    files = sorted(p for p in (SAMPLES / "javascript").rglob("*") if p.suffix in
                   (".js", ".mjs", ".cjs"))
    assert files
    for f in files:
        text = f.read_text(encoding="utf-8")
        twin, mixed = js.find_initializers(text, crosscheck="twin"), \
            js.find_initializers(text, crosscheck="mixed")
        assert [(i.name, i.start, i.end) for i in twin[0]] == \
            [(i.name, i.start, i.end) for i in mixed[0]], f
        assert all(same(a.value, b.value) for a, b in zip(twin[0], mixed[0])), f
        assert [(r.name, r.line, r.col, r.reason) for r in twin[1]] == \
            [(r.name, r.line, r.col, r.reason) for r in mixed[1]], f


def test_sectioning_parse_uses_the_twin_and_skips_json5(monkeypatch):
    seen: list[str] = []
    real = json5.loads
    monkeypatch.setattr(json5, "loads", lambda s, *a, **k: seen.append(s) or real(s, *a, **k))
    text = "const cfg = {name: 'treeagent', rules: [{id: 1, on: true}], note: \"x\",};"
    tree = formats.parse(text, "javascript")
    assert [n.label for n in tree.nodes[1].children] == ["name", "rules", "note"]
    assert seen == []
    formats.parse("const v = {hex: 0x10, s: 'k'};", "javascript")
    assert seen == ["{hex: 0x10, s: 0}"]  # no twin: json5 reads it, as in mixed mode


def test_twin_catches_a_wrong_reading(monkeypatch):
    real = js_values._number
    monkeypatch.setattr(js_values, "_number", lambda t: real(t) + 1 if t == "7" else real(t))
    with pytest.raises(ParseError) as e:
        js.parse("{a: {b: [1, 7]}}", crosscheck="twin")
    assert e.value.message.startswith("tree-sitter and json5 disagree at $.a.b[1]")
    assert (e.value.line, e.value.col) == (1, 13)
    real_decode = js_values._decode_escapes
    monkeypatch.setattr(js_values, "_decode_escapes", lambda raw, base, template=False:
                        real_decode(raw, base, template).upper())
    with pytest.raises(ParseError, match=r"disagree at \$\.k"):
        js.parse("{k: 'a\\tb'}", crosscheck="twin")

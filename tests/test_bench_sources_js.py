"""JS initializer extraction (B.1): accepted only when static and when tree-sitter and
json5 agree; calls, functions, spreads, identifiers, computed keys, parse errors,
sensitive strings and ambiguous records are rejected with their reasons."""

from __future__ import annotations

import json
import re

import json5
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from treeagent.bench.sources import records_from_text
from treeagent.bench.sources.js_records import file_candidates, value_records
from treeagent.formats import parse
from treeagent.formats.javascript import find_initializers


def _run(src: str):
    rejected: list[tuple[str, int, str]] = []
    accepted = list(file_candidates(src, lambda *a: rejected.append(a)))
    return accepted, {name: reason for name, _, reason in rejected}


@pytest.mark.parametrize("literal, reason", [
    ("{a: f()}", "call expression"),
    ("{a: function () {}}", "function expression"),
    ("[() => 1]", "arrow function"),
    ("{...base, a: 1}", "spread element"),
    ("[1, other]", "identifier reference"),
    ("{[k]: 1}", "computed key"),
    ("{a: `x${y}`}", "template substitution"),
    ("{a: /re/g}", "regular expression"),
    ("{m() { return 1; }}", "method"),
    ("{a: new Date()}", "new expression"),
    ("{a: 1 + 2}", "binary"),
])
def test_dynamic_initializers_are_rejected_with_their_reason(literal, reason):
    accepted, rejected = _run(f"const keep = [{{id: 'one'}}, {{id: 'two'}}];\nconst x = {literal};\n")
    assert [c.name for c in accepted] == ["keep"]
    assert reason in rejected["x"] and re.match(r"\d+:\d+: ", rejected["x"])


def test_a_parse_error_rejects_only_the_initializer_it_touches():
    accepted, rejected = _run("const a = {x: 1, y: };\nconst b = [{id: 'first'}, {id: 'second'}];\n")
    assert [c.name for c in accepted] == ["b"] and "syntax error" in rejected["a"]


@pytest.mark.parametrize("value", [
    "{password: 'hunter2hunter2'}", "{cfg: {apiKey: 'abc123def'}}",
    "['AKIAIOSFODNN7EXAMPLE']", "{t: 'ghp_" + "Ab1" * 12 + "'}",
    "{jwt: 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.sig'}",
])
def test_sensitive_looking_strings_are_rejected(value):
    accepted, rejected = _run(f"const s = {value};\n")
    assert accepted == [] and rejected["s"].startswith("sensitive string at $")


def test_ambiguous_records_are_dropped_and_reported():
    src = "const t = [{name: 'dup', n: 1}, {name: 'dup', n: 1}, {name: 'solo', n: 2}];"
    dropped: list[str] = []
    recs = [r for r in records_from_text("javascript", "eslint", src,
                                         on_drop=lambda p, w: dropped.append(p))
            if r.kind != "object"]  # the per-object records are checked elsewhere
    assert [r.description for r in recs] == ["", "", "solo"] and dropped == ["$[0]", "$[1]"]
    assert {r.select for r in recs} == {("t", "*")}


def test_bare_literal_units_have_no_binding_description():
    (c1, c2) = _run("var a = {k: 1, j: 2}, b = {k: 3, j: 4};")[0]
    assert c1.text == "var a = {k: 1, j: 2}" and c2.text == "{k: 3, j: 4}"
    assert [r.description for r in records_from_text("javascript", "x", c1.text)
            if r.kind != "object"] == []  # "a" is too short
    assert [r for r in records_from_text("javascript", "x", c2.text) if r.kind != "object"] == []


# ------------------------------------------------------------------ generated initializers

_IDENT = st.from_regex(r"[A-Za-z_$][A-Za-z0-9_$]{0,6}", fullmatch=True).filter(
    lambda s: s not in {"do", "if", "in", "for", "new", "var", "let", "try", "case", "else",
                        "enum", "null", "this", "true", "void", "with", "break", "catch",
                        "class", "const", "false", "super", "throw", "while", "yield",
                        "delete", "export", "import", "return", "switch", "typeof",
                        "default", "extends", "finally", "continue", "debugger",
                        "function", "Infinity", "NaN", "undefined", "instanceof"})
_TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\u2028\u2029"),
                max_size=12)
_SCALAR = st.one_of(st.none(), st.booleans(), st.integers(-10**12, 10**12),
                    st.floats(allow_nan=False, allow_infinity=False, width=64), _TEXT)
_VALUE = st.recursive(_SCALAR, lambda inner: st.one_of(
    st.lists(inner, max_size=4),
    # '__proto__' is rejected as ambiguous (its own test in test_javascript_format.py)
    st.dictionaries(st.one_of(_IDENT, _TEXT).filter(lambda k: k != "__proto__"), inner,
                    max_size=4)), max_leaves=12)


def _string(s: str, quote: str) -> str:
    body = json.dumps(s, ensure_ascii=False)[1:-1]
    if quote == "'":
        body = body.replace('\\"', '"').replace("'", "\\'")
    return quote + body + quote


def _render(v, draw) -> str:
    if isinstance(v, dict):
        parts = []
        for k, x in v.items():
            bare = re.fullmatch(r"[A-Za-z_$][A-Za-z0-9_$]*", k) and draw(st.booleans())
            key = k if bare else _string(k, draw(st.sampled_from(["'", '"'])))
            parts.append(f"{key}: {_render(x, draw)}")
        comma = "," if parts and draw(st.booleans()) else ""
        return "{" + ", ".join(parts) + comma + "}"
    if isinstance(v, list):
        items = [_render(x, draw) for x in v]
        comma = "," if items and draw(st.booleans()) else ""
        return "[" + ", ".join(items) + comma + "]"
    if isinstance(v, str):
        return _string(v, draw(st.sampled_from(["'", '"'])))
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    return repr(v)


@st.composite
def _program(draw):
    value = draw(st.one_of(st.lists(_VALUE, max_size=5),
                           st.dictionaries(_IDENT, _VALUE, max_size=5)))
    lead = draw(st.sampled_from(["const", "let", "var", "export const"]))
    comment = draw(st.sampled_from(["", "// note\n", "/* block */ "]))
    return value, f"{comment}{lead} data = {_render(value, draw)};\n"


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, int | float) and not isinstance(b, bool):
        return a == b and (a != 0 or str(a)[0] == str(float(b))[0])
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(_same, a, b))
    return type(a) is type(b) and a == b


@settings(max_examples=150, deadline=None)
@given(_program())
def test_generated_static_initializers_are_accepted_and_json5_agrees(case):
    value, src = case
    accepted, rejected = find_initializers(src)
    assert rejected == [] and len(accepted) == 1
    init = accepted[0]
    ref = json5.loads(src[init.value_start:init.value_end])
    assert _same(init.value, value) and _same(init.value, ref)
    # the extractor keeps it unless it looks sensitive; its unit text parses alone and
    # yields the same records when read again
    cands, _ = _run(src)
    for c in cands:
        parse(c.text, "javascript")
        assert value_records(c.name, c.value, c.text, "u") == \
            records_from_text("javascript", "x", c.text, unit_id="u")


def test_nested_static_literals_are_units_and_dynamic_parents_are_searched():
    src = '''const top = [{id: 'aaa'}, {id: 'bbb'}];
ruleTester.run("no-foo", rule, {
  valid: [
    { code: "var a = 1;", options: [{ allow: ["x"] }] },
    { code: "var b = 2;", options: [] },
  ],
  invalid: [
    { code: "foo()", errors: [{ messageId: "unexpected", line: 1 }] },
    { code: "bar()", errors: [{ messageId: "unexpected", line: 1 }], output: fix() },
  ],
});
'''
    rejected: list[tuple[str, int, str]] = []
    cands = list(file_candidates(src, lambda *a: rejected.append(a), nested=True))
    assert [(c.name, c.local_id) for c in cands] == [
        ("top", "top@L1"), ("<literal>", "literal@L3C10"), ("<literal>", "literal@L8C5")]
    assert cands[1].text.startswith("[\n    { code:") and cands[1].text.endswith("]")
    assert [r.description for r in records_from_text("javascript", "x", cands[1].text)
            if r.kind != "object"] == \
        ["var a = 1;", "var b = 2;"]
    assert rejected == [("<literal>", 2, "9:78: call expression is not a static value")]
    assert [c.name for c in file_candidates(src, lambda *a: None)] == ["top"]  # top level only


def test_anonymous_object_is_described_by_a_name_like_value():
    rec, obj = records_from_text("javascript", "eslint",
                                 '{ code: "var a = 1;", options: ["always"], errors: 2 }')
    assert (rec.kind, rec.description) == ("object literal", "var a = 1;")
    assert rec.fields == {"code": "var a = 1;", "options": "always", "errors": 2}
    assert not rec.counted  # looked up, never aggregated: no name says which literal
    # every object literal counts for aggregations, by its own scalar properties
    assert (obj.kind, obj.description, obj.fields) == ("object", "", {"code": "var a = 1;",
                                                                      "errors": 2})
    assert [r.kind for r in records_from_text("javascript", "eslint",
                                              "{ width: 2, height: 3 }")] == ["object"]

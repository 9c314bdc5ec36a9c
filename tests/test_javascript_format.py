"""Static JavaScript initializers (paper B.1 "JavaScript dataset", 3.1, A.1, A.3).

Expected values, paths and line:col positions are written by hand from JavaScript
semantics; the property tests render generated values as JavaScript and check the tree
against the generator's own record of what it wrote.
"""

from __future__ import annotations

import math
import re

import json5
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import same
from treeagent import formats
from treeagent.algorithm.tree import Node, ParseError, Tree, key_step
from treeagent.formats import javascript as js
from treeagent.formats import js_crosscheck, js_values


def paths(tree: Tree) -> dict[str, Node]:
    return {tree.path(n): n for n in tree.nodes}


# ---------------------------------------------------------------- hand-checked trees


def test_bare_literal_paths_and_spans():
    text = "{\n  rules: { 'no-var': ['error', {allow: 1}], \"eqeqeq\": 2 },\n}\n"
    tree = js.parse(text)
    p = paths(tree)
    assert tree.root.kind == "object" and tree.source(tree.root) == text.strip()
    assert tree.source(p["$.rules['no-var']"]) == "'no-var': ['error', {allow: 1}]"
    leaf = p["$.rules['no-var'][0]"]
    assert (leaf.kind, tree.source(leaf), leaf.quote) == ("string", "'error'", "'")
    assert text[leaf.cut_start : leaf.cut_end] == "error" and leaf.divisible
    assert tree.source(p["$.rules['no-var'][1].allow"]) == "allow: 1"
    assert tree.source(p["$.rules.eqeqeq"]) == '"eqeqeq": 2'
    assert p["$.rules.eqeqeq"].label == "eqeqeq"
    assert js.static_value(text) == {"rules": {"no-var": ["error", {"allow": 1}], "eqeqeq": 2}}


def test_parenthesized_bare_literal_with_semicolon_and_comments():
    text = "// data\n/* more */ ({a: [1, 2]});\n"
    tree = js.parse(text)
    assert tree.source(tree.root) == "{a: [1, 2]}"
    assert js.static_value(text) == {"a": [1, 2]}
    assert js.static_value("\ufeff[1, /* two */ 2, // end\n]") == [1, 2]


def test_program_bindings():
    text = (
        "#!/usr/bin/env node\n"
        "'use strict';\n"
        "// settings\n"
        "const config = { level: 2 };\n"
        "module.exports = [1];\n"
        "export default { x: 'y' };\n"
        "exports.z = 3;\n"
        "export let w = null;\n"
    )
    tree = js.parse(text)
    root = tree.root
    assert (root.kind, root.start, root.end) == ("program", 0, len(text))
    got = [(tree.path(c), c.kind, c.label, tree.source(c)) for c in root.children]
    assert got == [
        ("$.config", "object", "config", "const config = { level: 2 };"),
        ("$['module.exports']", "array", "module.exports", "module.exports = [1];"),
        ("$.default", "object", "default", "export default { x: 'y' };"),
        ("$.z", "number", "z", "exports.z = 3;"),
        ("$.w", "literal", "w", "export let w = null;"),
    ]
    assert tree.source(paths(tree)["$.config.level"]) == "level: 2"
    assert js.static_value(text) == {
        "config": {"level": 2}, "module.exports": [1], "default": {"x": "y"}, "z": 3,
        "w": None,
    }


def test_several_declarators_get_disjoint_spans():
    text = "var a = 1, b = [2], c = 'x';"
    tree = js.parse(text)
    assert [tree.source(c) for c in tree.root.children] == ["var a = 1", "b = [2]", "c = 'x';"]
    c = tree.root.children[2]
    assert text[c.cut_start : c.cut_end] == "x"


def test_registry_and_detect():
    assert formats.detect("x.js", "") == "javascript"
    tree = formats.parse("const a = {b: 1};", "javascript")
    assert tree.format == "javascript" and paths(tree)["$.a.b"].label == "b"
    assert formats.safe_cut("javascript") is js.safe_cut


def test_numbers():
    text = "[-0, +1, 0x10, -0x10, .5, 5., 1e3, 1E-2, NaN, Infinity, -Infinity, +NaN, -0.0, 0]"
    v = js.static_value(text)
    expected = [-0.0, 1, 16, -16, 0.5, 5.0, 1000.0, 0.01, math.nan, math.inf, -math.inf,
                math.nan, -0.0, 0]
    assert same(v, expected)
    tree = js.parse(text)
    assert {n.kind for n in tree.root.children} == {"number"}
    assert tree.source(tree.root.children[0]) == "-0"


def test_numeric_keys_use_the_js_string_form():
    text = "{1: 'a', 1.50: 'b', 0x10: 'c', 1e21: 'd', .5: 'e', 1e-7: 'f', 0.000001: 'g', 2e0: 'h'}"
    tree = js.parse(text)
    labels = [c.label for c in tree.root.children]
    assert labels == ["1", "1.5", "16", "1e+21", "0.5", "1e-7", "0.000001", "2"]
    assert [c.step for c in tree.root.children][:2] == ["['1']", "['1.5']"]
    assert js.static_value(text) == dict(zip(labels, "abcdefgh"))


def test_string_escapes():
    text = (
        r'["\u{1F600}", "\ud83d\ude00", "\x41\u0042\n\t\v\0", '
        "'it\\'s', \"a\\\nb\", \"c\\\r\nd\", \"\\/\\\\\", \"\u00e9\U0001F600\"]"
    )
    v = js.static_value(text)
    assert v == ["\U0001F600", "\U0001F600", "AB\n\t\v\0", "it's", "ab", "cd", "/\\",
                 "\u00e9\U0001F600"]
    assert len(v[1]) == 1  # the escaped surrogate pair is one code point


def test_templates_without_substitutions_are_atomic_strings():
    text = "{a: `one\r\ntwo \\u0041 \\${x}`, b: ``}"
    tree = js.parse(text)
    a = paths(tree)["$.a"]
    assert (a.kind, a.atomic, a.divisible) == ("template", True, False)
    assert js.static_value(text) == {"a": "one\ntwo A ${x}", "b": ""}


def test_identifier_keys_and_reserved_words():
    text = "{\\u0061b: 1, default: 2, if: 3, $x: 4, _y: 5, caf\u00e9: 6, null: 7, NaN: 8}"
    assert list(js.static_value(text)) == ["ab", "default", "if", "$x", "_y", "caf\u00e9",
                                           "null", "NaN"]


def test_non_ascii_offsets_are_characters():
    text = "/* \u00e9\U0001F600 */ const s = {'\u00fc\U0001F600': 'x\u2603', b: [1, '\U0001F600']};"
    tree = js.parse(text)
    p = paths(tree)
    assert tree.source(p["$.s['\u00fc\U0001F600']"]) == "'\u00fc\U0001F600': 'x\u2603'"
    assert tree.source(p["$.s.b[1]"]) == "'\U0001F600'"
    assert tree.source(p["$.s"]) == text[text.index("const") :]


def test_deep_nesting():
    depth = 10_000
    tree = js.parse("[" * depth + "]" * depth)  # strict JSON: read by json in mixed mode
    assert len(tree.nodes) == depth
    node, d = tree.root, 0
    while node.children:
        node, d = node.children[0], d + 1
    assert d == depth - 1
    text = "{a:" * depth + "1" + "}" * depth  # JSON5 only: json5 recurses ~23 frames a level
    v = js.static_value(text)
    for _ in range(depth):
        v = v["a"]
    assert v == 1
    assert js.static_value("[" * 2000 + "]" * 2000, crosscheck="json5") is not None


def test_json5_recursion_limit_is_a_parse_error(monkeypatch):
    monkeypatch.setattr(js_crosscheck, "_FRAMES_PER_LEVEL", 0)  # pretend json5 needed no frames
    with pytest.raises(ParseError) as e:
        js.parse("\n{b:" * 3000 + "1" + "}" * 3000)
    assert e.value.message == "nesting too deep for the json5 cross-check"
    assert (e.value.line, e.value.col) == (2, 1)


def test_crosscheck_modes_agree():
    text = "{a: [1, 2, {\"b\": 'c'}], \"d\": {\"e\": [true, null, -0.5]}, f: 'x\"y'}"
    assert same(js.static_value(text), js.static_value(text, crosscheck="json5"))
    assert js.static_value(text) == {"a": [1, 2, {"b": "c"}], "d": {"e": [True, None, -0.5]},
                                     "f": 'x"y'}


def test_mixed_mode_sends_only_non_json_syntax_to_json5(monkeypatch):
    seen: list[str] = []
    real = json5.loads

    def spy(source, *args, **kwargs):
        seen.append(source)
        return real(source, *args, **kwargs)

    monkeypatch.setattr(json5, "loads", spy)
    js.static_value('{"strict": ["json", {"only": 1.5e3}], "x": null}')
    assert seen == []
    v = js.static_value("{loose: 'yes', big: [1, 2, {\"k\": \"v\"}], s: \"\\u00e9\", n: -0}")
    assert v == {"loose": "yes", "big": [1, 2, {"k": "v"}], "s": "\u00e9", "n": 0}
    assert seen == ["{loose: 0, big: 0, s: 0, n: -0}"]  # the rest was read by json


def test_crosscheck_catches_a_wrong_reading(monkeypatch):
    # Simulate a bug in our own number reading: json5 must notice.
    real = js_values._number
    monkeypatch.setattr(js_values, "_number", lambda t: real(t) + 1 if t == "7" else real(t))
    for mode in ("mixed", "json5"):
        with pytest.raises(ParseError) as e:
            js.parse("{a: {b: [1, 7]}}", crosscheck=mode)
        assert e.value.message.startswith("tree-sitter and json5 disagree at $.a.b[1]")
        assert (e.value.line, e.value.col) == (1, 13)
    real_decode = js_values._decode_escapes
    monkeypatch.setattr(js_values, "_decode_escapes", lambda raw, base, template=False:
                        real_decode(raw, base, template).upper())
    with pytest.raises(ParseError, match=r"disagree at \$\.k"):
        js.parse("{k: 'a\\tb'}")


# ---------------------------------------------------------------- rejections

REJECTIONS = [
    ("{a: f()}", "call expression is not a static value", 1, 5),
    ("{a: new Date()}", "new expression is not a static value", 1, 5),
    ("{a: function () {}}", "function expression is not a static value", 1, 5),
    ("{a: () => 1}", "arrow function is not a static value", 1, 5),
    ("{a: class {}}", "class expression is not a static value", 1, 5),
    ("{m() {}}", "method is not a static value", 1, 2),
    ("{get g() { return 1 }}", "getter is not a static value", 1, 2),
    ("{set s(v) {}}", "setter is not a static value", 1, 2),
    ("{...rest}", "spread element is not a static value", 1, 2),
    ("[1, ...xs]", "spread element is not a static value", 1, 5),
    ("{a: foo}", "identifier reference 'foo' is not a static value", 1, 5),
    ("{a: undefined}", "undefined is not a static value", 1, 5),
    ("{a}", "shorthand property is not a static value", 1, 2),
    ("{[k]: 1}", "computed key is not a static key", 1, 2),
    ("{a: `x${y}`}", "template substitution is not a static value", 1, 7),
    ("{a: /re/g}", "regular expression literal is not a static value", 1, 5),
    ("{a: 1 + 2}", "binary expression is not a static value", 1, 5),
    ("{a: b ? 1 : 2}", "conditional expression is not a static value", 1, 5),
    ("{a: !0}", "unary '!' expression is not a static value", 1, 5),
    ("{a: typeof x}", "unary 'typeof' expression is not a static value", 1, 5),
    ('{a: -"1"}', "unary '-' on a non-number is not a static value", 1, 5),
    ("{a: 10n}", "BigInt literal is not a static value", 1, 5),
    ("{a: (1)}", "parenthesized expression is not a static value", 1, 5),
    ("{a: x.y}", "member expression is not a static value", 1, 5),
    ("[1,,2]", "array hole is not a static value", 1, 4),
    ("{a: 1, 'a': 2}", "duplicate key 'a' in object (ambiguous record)", 1, 8),
    ('{1: 1, "1": 2}', "duplicate key '1' in object (ambiguous record)", 1, 8),
    ("{__proto__: null}", "'__proto__' key sets the prototype (ambiguous record)", 1, 2),
    ("{\n  ok: 1,\n  bad: call(),\n}", "call expression is not a static value", 3, 8),
    ("[1 2]", "syntax error", 1, 4),
    ("{\n  a: 1\n  b: 2\n}", "syntax error", 3, 3),
    ("{a: [1, {b: 2}", "syntax error (unclosed '[')", 1, 5),
    ("const x = {a: 1,\n  b: [1, 2\n};", "syntax error (missing ']')", 2, 11),
    ("{a: 1,, b: 2}", "syntax error (unexpected ',')", 1, 7),
    ('["\\u{110000}"]', "syntax error: code point out of range", 1, 3),
    ("[`\\1`]", "syntax error: octal escape in template", 1, 3),
    ("const a = {x: 1};\nfunction f() {}\n",
     "statement is not a static initializer (function declaration)", 2, 1),
    ('import x from "y";', "statement is not a static initializer (import statement)", 1, 1),
    ("const a = 1;\nfoo();", "statement is not a static initializer (expression statement)",
     2, 1),
    ("[1]; [2]", "statement is not a static initializer (expression statement after the "
     "literal)", 1, 6),
    ("const a = 1, a = 2;", "duplicate binding 'a'", 1, 14),
    ("let y;", "declaration of 'y' has no initializer", 1, 5),
    ("const {a} = b;", "destructuring pattern is not a static initializer", 1, 7),
    ("export default function () {}", "function expression is not a static value", 1, 16),
    ("exports.a = f();", "call expression is not a static value", 1, 13),
    ("'use strict';\n// nothing else\n", "no static initializer found", 1, 1),
    # JavaScript reads these; json5 cannot, so the two interpretations disagree (B.1)
    ("[0o17]", "tree-sitter and json5 disagree at $[0]: json5 cannot read it", 1, 3),
    ('["\\01"]', "tree-sitter and json5 disagree at $[0]: json5 cannot read it", 1, 5),
    ("const n = [- 1];", "tree-sitter and json5 disagree at $.n[0]: json5 cannot read it",
     1, 13),
    ("{0o7: 1}", "tree-sitter and json5 disagree at key 0o7: json5 cannot read it", 1, 2),
    ("[1], [2]", "sequence expression is not a static value (a comma after the literal)",
     1, 6),
    ("(1, 2)", "a bare literal must be an object or an array", 1, 2),
]


def _assert_rejects(read, text, message, line, col):
    with pytest.raises(ParseError) as e:
        read(text)
    assert e.value.message.startswith(message), e.value.message
    assert (e.value.line, e.value.col) == (line, col)


@pytest.mark.parametrize(("text", "message", "line", "col"), REJECTIONS)
def test_rejections(text, message, line, col):
    _assert_rejects(js.parse, text, message, line, col)


def test_dynamic_atomic_keeps_expressions():
    text = "{a: f(), b: [...x], c: {...y}, d() {}, e, g: `${h}`, n: 1n, k: [1, {m: x}]}"
    tree = js.parse(text, dynamic="atomic")
    p = paths(tree)
    for path, src in [("$.a", "a: f()"), ("$.b", "b: [...x]"), ("$.c", "c: {...y}"),
                      ("$.d", "d() {}"), ("$.e", "e"), ("$.g", "g: `${h}`"), ("$.n", "n: 1n"),
                      ("$.k[1].m", "m: x")]:
        node = p[path]
        assert (node.kind, node.atomic, tree.source(node)) == ("expression", True, src)
    v = js.static_value(text, dynamic="atomic")
    assert v["a"] == js.Expression("f()") and v["e"] == js.Expression("e")
    assert v["k"] == [1, {"m": js.Expression("x")}]
    assert js.static_value("const x = f();", dynamic="atomic") == {"x": js.Expression("f()")}
    with pytest.raises(ParseError, match="syntax error"):
        js.parse("{a: f(}", dynamic="atomic")
    with pytest.raises(ParseError, match="statement is not a static initializer"):
        js.parse("const x = 1;\nf();", dynamic="atomic")
    with pytest.raises(ParseError, match="duplicate key 'a'"):
        js.parse("{a: f(), a() {}}", dynamic="atomic")


def test_find_initializers():
    text = (
        'import x from "y";\n'
        "const a = {b: 1};\n"
        "const c = [f()];\n"
        "function g() { const inner = {q: 1}; }\n"
        "module.exports = {a, c};\n"
        "const d = 5;\n"
        "export const e = [1, 2], h = {k: 'v'};\n"
    )
    found, rejected = js.find_initializers(text)
    assert [(i.name, i.kind, i.line, text[i.start : i.end]) for i in found] == [
        ("a", "object", 2, "const a = {b: 1};"),
        ("e", "array", 7, "export const e = [1, 2]"),
        ("h", "object", 7, "h = {k: 'v'};"),
    ]
    assert [i.value for i in found] == [{"b": 1}, [1, 2], {"k": "v"}]
    assert text[found[2].value_start : found[2].value_end] == "{k: 'v'}"
    assert [t.path(n) for t in [found[2].tree] for n in t.nodes] == ["$", "$.k"]
    assert [(r.name, r.line, r.col, r.reason) for r in rejected] == [
        ("c", 3, 12, "call expression is not a static value"),
        ("module.exports", 5, 19, "shorthand property is not a static value"),
    ]


def test_find_initializers_survives_syntax_errors_elsewhere():
    text = "const ok = {a: [1]};\nconst bad = {a: 1,, b: 2};\nif (x {\nexport default [true];\n"
    found, rejected = js.find_initializers(text)
    assert [(i.name, i.value) for i in found] == [("ok", {"a": [1]})]
    assert [(r.name, r.line, r.col, r.reason) for r in rejected] == [
        ("bad", 2, 19, "syntax error (unexpected ',')"),
    ]


# ---------------------------------------------------------------- safe_cut (A.1)


@pytest.mark.parametrize(("text", "unsafe"), [
    ('"a\\nb"', {3}),                      # inside \n
    ('"\\x41"', {2, 3, 4}),                # inside \xHH
    ('"\\u0041z"', {2, 3, 4, 5, 6}),       # inside \uXXXX
    ('"\\u{1F600}"', set(range(2, 10))),   # inside \u{...}
    ('"\\\\n"', {2}),                      # an escaped backslash, then a plain n
    ('"\\ud83d\\ude00"', set(range(2, 7)) | {7} | set(range(8, 13))),  # pair halves
    ('"\\ud83dz"', set(range(2, 7))),      # a lone high surrogate: after it is fine
    ('"a\\\nb"', {3}),                     # line continuation
    ('"a\\\r\nb"', {3, 4}),                # CR LF continuation
    ('"\\101"', {2, 3, 4}),                # legacy octal
    ('"\\u{D83D}\\ude00"', set(range(2, 9)) | {9} | set(range(10, 15))),
])
def test_safe_cut_positions(text, unsafe):
    got = {pos for pos in range(1, len(text)) if not js.safe_cut(text, pos)}
    assert got == unsafe


def test_safe_cut_raw_surrogate_pair():
    text = '"a\ud83d\ude00b"'  # text decoded with surrogatepass
    assert [js.safe_cut(text, p) for p in range(1, 5)] == [True, True, False, True]


# ---------------------------------------------------------------- property tests

_IDENT = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*\Z")
_NUMERIC_KEYS = {  # JS string form -> numeric literals that produce it (by hand)
    "1": ["1", "1.0", "0x1", "1e0"], "1.5": ["1.50", "15e-1"], "16": ["0x10", "16"],
    "0": ["0", "0.0", "0x0"], "100": ["1e2", "100"], "0.5": [".5", "0.5"],
    "1e+21": ["1e21"], "1e-7": ["1e-7", "0.0000001"],
}
_SIMPLE = {"\n": "\\n", "\t": "\\t", "\b": "\\b", "\f": "\\f", "\v": "\\v", "\r": "\\r"}
_SPACE = [" ", "", "\n", "\t", "\r\n", "  ", "/* c */", "// c\n", " /**/ ", "\u00a0"]
_JSON_SPACE = [" ", "", "\n", "\t", "\r\n"]

_chars = st.characters(blacklist_categories=("Cs",))
_strings = st.text(_chars, max_size=12) | st.sampled_from(
    ["", "\U0001F600", "a\U0001F600b", "'\"`$\\", "\u2028\u2029", "\0" "1", "x\ny"])
_keys = st.sampled_from(["a", "b", "_x", "$y", "default", "if", "null", "constructor"]) | \
    st.sampled_from(sorted(_NUMERIC_KEYS)) | _strings.filter(lambda k: k != "__proto__")
_floats = st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from(
    [-0.0, 0.5, 5.0, math.inf, -math.inf])
_scalars = st.none() | st.booleans() | st.integers(-(10**20), 10**20) | _floats | _strings
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_keys, inner, max_size=4),
    max_leaves=20,
)


class Renderer:
    """Writes a value as JavaScript with random syntax, recording what went where."""

    def __init__(self, draw):
        self.draw = draw
        self.strict = False  # write strict JSON (exercises the json side of the check)
        self.out: list[str] = []
        self.n = 0
        # path -> (inner start, inner end, quote, allowed cuts, uses \u{...}, value)
        self.strings: dict[str, tuple[int, int, str, set[int], bool, str]] = {}
        self.keys: dict[str, tuple[int, int]] = {}  # member path -> rendered key span

    def put(self, s: str) -> None:
        self.out.append(s)
        self.n += len(s)

    def space(self) -> None:
        self.put(self.draw(st.sampled_from(_JSON_SPACE if self.strict else _SPACE)))

    def string_body(self, s: str, quote: str) -> tuple[str, set[int], bool]:
        """(body, allowed cut offsets within body, uses \\u{...})."""
        body: list[str] = []
        allowed = {0}
        braces = False
        pos = 0
        template = quote == "`"
        for i, c in enumerate(s):
            nxt = s[i + 1 : i + 2]
            options = ["u"]
            cp = ord(c)
            strict = self.strict
            if c == quote or c == "\\":
                options = ["\\" + c]
            elif strict:
                if c in _SIMPLE and c != "\v":
                    options.append(_SIMPLE[c])
                if cp >= 32:
                    options.append("raw")
            elif template and c in "$\r":
                options = ["\\$" if c == "$" else "\\r"]
            elif c in "\n\r" and not template:
                options.append(_SIMPLE[c])
            else:
                options.append("raw")
                if c in _SIMPLE:
                    options.append(_SIMPLE[c])
            if cp < 256 and not strict:
                options.append("x")
            if c == "\0" and not nxt.isdigit() and not strict:
                options.append("\\0")
            if not strict:
                options.append("u{")
            choice = self.draw(st.sampled_from(options))
            units: list[str]
            if choice == "raw":
                units = [c]
            elif choice == "x":
                units = [f"\\x{cp:02x}"]
            elif choice == "u{":
                units = ["\\u{" + self.draw(st.sampled_from(["", "0"])) + f"{cp:X}" + "}"]
                braces = True
            elif choice == "u":
                if cp > 0xFFFF:
                    v = cp - 0x10000
                    hi, lo = 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF)
                    if strict or self.draw(st.booleans()):
                        units = [f"\\u{hi:04x}" + f"\\u{lo:04X}"]  # one unit: no cut inside
                    else:
                        units = ["\\u{" + f"{hi:x}" + "}" + f"\\u{lo:04x}"]
                        braces = True
                else:
                    units = [f"\\u{cp:04x}"]
            else:
                units = [choice]
            for u in units:
                body.append(u)
                pos += len(u)
                allowed.add(pos)
            if not strict and self.draw(st.integers(0, 9)) == 0:  # a line continuation
                cont = "\\" + self.draw(st.sampled_from(["\n", "\r\n", "\u2028"]))
                body.append(cont)
                pos += len(cont)
                allowed.add(pos)
        return "".join(body), allowed, braces

    def string(self, s: str, path: str, allow_template: bool = True) -> None:
        quotes = ["'", '"', "`"] if allow_template else ["'", '"']
        quote = '"' if self.strict else self.draw(st.sampled_from(quotes))
        body, allowed, braces = self.string_body(s, quote)
        self.put(quote)
        start = self.n
        self.put(body)
        if quote != "`":
            self.strings[path] = (start, self.n, quote, {start + a for a in allowed}, braces, s)
        self.put(quote)

    def number(self, v: int | float) -> None:
        d = self.draw
        if isinstance(v, bool):
            self.put("true" if v else "false")
        elif isinstance(v, int):
            forms = [str(v)]
            if self.strict:
                pass
            elif 0 < abs(v) < 2**53:
                forms.append(("-" if v < 0 else "") + hex(abs(v)))
            if v > 0 and not self.strict:
                forms.append("+" + str(v))
            self.put(d(st.sampled_from(forms)))
        elif math.isinf(v):
            self.put(("-" if v < 0 else d(st.sampled_from(["", "+"]))) + "Infinity")
        elif v == 0 and math.copysign(1, v) < 0:
            self.put(d(st.sampled_from(["-0", "-0.0", "-0e0"])))
        else:
            r = repr(v)
            forms = [r]
            if self.strict:
                self.put(r)
                return
            if v.is_integer() and abs(v) < 1e15:
                forms.append(f"{int(v)}.")
            if r.startswith(("0.", "-0.")):
                forms.append(r.replace("0.", ".", 1))
            self.put(d(st.sampled_from(forms)))

    def value(self, v: object, path: str) -> None:
        d = self.draw
        if v is None:
            self.put("null")
        elif isinstance(v, str):
            self.string(v, path)
        elif isinstance(v, dict | list):
            outer = self.strict
            self.strict = outer and d(st.integers(0, 9)) > 0 or d(st.integers(0, 3)) == 0
            self.container(v, path)
            self.strict = outer
        else:
            self.number(v)

    def container(self, v: dict | list, path: str) -> None:
        d = self.draw
        trailing = not self.strict
        if isinstance(v, dict):
            self.put("{")
            for i, (k, item) in enumerate(v.items()):
                self.space()
                child = path + key_step(k)
                kstart = self.n
                if k in _NUMERIC_KEYS and not self.strict and d(st.booleans()):
                    self.put(d(st.sampled_from(_NUMERIC_KEYS[k])))
                elif _IDENT.match(k) and not self.strict and d(st.booleans()):
                    self.put(k)
                else:
                    self.string(k, child + "#key", allow_template=False)
                self.keys[child] = (kstart, self.n)
                self.space()
                self.put(":")
                self.space()
                self.value(item, child)
                self.space()
                if i < len(v) - 1 or trailing and d(st.booleans()):
                    self.put(",")
            self.space()
            self.put("}")
        else:
            self.put("[")
            for i, item in enumerate(v):
                self.space()
                self.value(item, f"{path}[{i}]")
                self.space()
                if i < len(v) - 1 or trailing and d(st.booleans()):
                    self.put(",")
            self.space()
            self.put("]")

    def text(self) -> str:
        return "".join(self.out)


def check_tree(tree: Tree, r: Renderer) -> None:
    text = tree.text
    p = paths(tree)
    for node in tree.nodes:
        assert 0 <= node.start <= node.end <= len(text)
        prev_end = node.start
        for child in node.children:
            assert child.start >= prev_end and child.end <= node.end  # ordered, disjoint, inside
            prev_end = child.end
    for path, (kstart, kend) in r.keys.items():
        node = p[path]
        assert node.start == kstart and text[node.start :].startswith(text[kstart:kend])
    for path, (start, end, quote, allowed, braces, value) in r.strings.items():
        if path.endswith("#key"):
            continue
        node = p[path]
        assert (node.kind, node.cut_start, node.cut_end, node.quote) == ("string", start, end,
                                                                        quote)
        for pos in range(start, end + 1):
            assert js.safe_cut(text, pos) == (pos in allowed), (path, pos)
        if not braces:  # json5 has no \u{...}: decode the cut range independently
            decoded = json5.loads(quote + text[start:end] + quote)
            assert decoded.encode("utf-16", "surrogatepass").decode("utf-16") == value


@st.composite
def bare_documents(draw):
    v = draw(st.one_of(st.lists(_values, max_size=4), st.dictionaries(_keys, _values,
                                                                      max_size=4)))
    r = Renderer(draw)
    r.space()
    paren = draw(st.booleans())
    if paren:
        r.put("(")
    r.value(v, "$")
    if paren:
        r.put(")")
    if draw(st.booleans()):
        r.put(";")
    r.space()
    return r, v


@st.composite
def programs(draw):
    names = draw(st.lists(st.from_regex(r"v_[a-z0-9]{0,4}", fullmatch=True), min_size=1,
                          max_size=4, unique=True))
    values = [draw(_values) for _ in names]
    r = Renderer(draw)
    expected: dict[str, object] = {}
    specials = draw(st.sets(st.sampled_from(["module.exports", "default"])))
    items = list(zip(names, values))
    i = 0
    while i < len(items):
        r.space()
        form = draw(st.sampled_from(["decl", "export", "exports", "multi"]))
        kw = draw(st.sampled_from(["const", "let", "var"]))
        if form == "multi" and i + 1 < len(items):
            group = items[i : i + 2]
            r.put(f"{kw} ")
            for j, (name, v) in enumerate(group):
                r.put(f"{name} = ")
                r.value(v, "$." + name)
                if j == 0:
                    r.put(", ")
                expected[name] = v
            i += 2
        else:
            name, v = items[i]
            prefix = {"decl": f"{kw} ", "export": f"export {kw} ", "exports": "exports.",
                      "multi": f"{kw} "}[form]
            r.put(f"{prefix}{name} = ")
            r.value(v, "$." + name)
            expected[name] = v
            i += 1
        r.put(";\n")
    for special in sorted(specials):
        v = draw(_values)
        r.put("module.exports = " if special == "module.exports" else "export default ")
        r.value(v, "$" + key_step(special))
        r.put(";\n")
        expected[special] = v
    return r, expected


def run_property(r: Renderer, expected: object) -> None:
    text = r.text()
    got = js.static_value(text)
    assert same(got, expected), (text, got, expected)
    tree = js.parse(text)
    check_tree(tree, r)
    assert same(js.static_value(text, crosscheck="json5"), expected)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bare_documents())
def test_property_bare_literals(doc):
    run_property(*doc)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_property_programs(doc):
    run_property(*doc)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_binding_spans_cut_programs_as_parse_does(doc):
    text = doc[0].text()
    tree = js.parse(text)
    assert js.binding_spans(text) == [(c.start, c.end) for c in tree.root.children]


# structure and syntax errors: binding_spans (no value checks) reports what parse does
STRUCTURAL = [r for r in REJECTIONS if r[1].startswith((
    "syntax error", "statement is not", "duplicate binding", "declaration of",
    "destructuring", "no static initializer")) and not r[0].lstrip().startswith(("{", "["))]


@pytest.mark.parametrize(("text", "message", "line", "col"), STRUCTURAL)
def test_binding_spans_errors(text, message, line, col):
    _assert_rejects(js.binding_spans, text, message, line, col)


def test_binding_spans_leave_values_to_the_unit_check():
    text = "const a = {x: f()};\nconst b = [1];"  # a call: only parse rejects it
    assert js.binding_spans(text) == [(0, 19), (20, 34)]
    with pytest.raises(ParseError, match="call expression"):
        js.parse(text)

"""Whole JavaScript files (formats.js_module): statements, functions, classes and
exports become nodes, static initializers stay value trees, every shipped sample file
sections, and a file of static initializers keeps exactly its old tree."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import CharTokenizer
from treeagent import formats
from treeagent.algorithm.preprocess import section_tree
from treeagent.algorithm.tree import ParseError
from treeagent.cli.main import main
from treeagent.formats import javascript as js
from treeagent.formats import js_module

SAMPLES = Path(__file__).resolve().parents[1] / "src" / "treeagent" / "samples" / "bench"
JS_FILES = sorted(p for p in (SAMPLES / "javascript").rglob("*") if p.suffix in (".js", ".mjs"))

MODULE = """\
'use strict';
import fs from "fs";

const config = {rules: {"no-var": ["error", {a: 1}]}, level: 2};

/** Adds. */
function add(a, b) {
  const sum = a + b;
  if (sum > 10) {
    log(sum);
  } else {
    warn(sum);
  }
  return sum;
}

export class Shape {
  static count = 0;
  constructor(name) { this.name = name; }
  area() {
    return 0;
  }
}

module.exports = {
  meta: {type: "problem", docs: {url: "https://example.org"}},
  create(context) {
    return {Program() { context.report(); }};
  },
};
"""


def shapes(tree):
    return {tree.path(n): n for n in tree.nodes if n.kind != "code"}


def test_module_nodes_and_paths():
    tree = formats.parse(MODULE, "javascript")
    p = shapes(tree)
    top = [(c.kind, tree.path(c)) for c in tree.root.children]
    assert top == [("statement", "$[0]"), ("import", "$[1]"), ("object", "$.config"),
                   ("function", "$.add"), ("export", "$.Shape"),
                   ("object", "$['module.exports']")] or top[:4] == [
        ("statement", "$[0]"), ("import", "$[1]"), ("object", "$.config"), ("function", "$.add")]
    # the static initializer keeps its value tree and its records' paths
    assert tree.source(p["$.config.rules['no-var'][1].a"]) == "a: 1"
    assert tree.source(p["$.config"]).startswith("const config = {")
    # a function: its JSDoc comment, then its statements as units
    add = p["$.add"]
    assert tree.source(add).startswith("/** Adds. */\nfunction add(a, b) {")
    assert [tree.path(c) for c in add.children if c.kind != "code"] == [
        "$.add.sum", "$.add[1]", "$.add[2]"]
    assert [tree.source(c) for c in p["$.add[1]"].children if c.kind != "code"] == [
        "log(sum);", "warn(sum);"]
    # the code between units is kept, with its parent's path
    codes = [tree.source(c) for c in add.children if c.kind == "code"]
    assert codes == ["/** Adds. */\nfunction add(a, b) {", "}"]
    # class members by name
    assert {"$.Shape.count", "$.Shape.constructor", "$.Shape.area"} <= set(p)
    # an object with a method: static members stay value trees, the method is code
    assert p["$['module.exports'].meta.type"].kind == "string"
    assert p["$['module.exports'].create"].kind == "method"
    assert p["$['module.exports'].create[0]"].kind == "statement"


def test_atomic_where_a_statement_cannot_be_split():
    tree = formats.parse("function f() {\n  return g(1, 2);\n}\nh();\n", "javascript")
    p = shapes(tree)
    assert p["$.f[0]"].atomic and p["$.f[0]"].is_leaf
    assert p["$[1]"].atomic and tree.source(p["$[1]"]) == "h();"


def outside_leaves(tree) -> list[tuple[int, str]]:
    """(offset, kind of the deepest node holding it) of each non-blank character no leaf
    holds, separators left out."""
    text = tree.text
    covered = bytearray(len(text))
    for leaf in tree.leaves():
        covered[leaf.start:leaf.end] = b"\x01" * (leaf.end - leaf.start)
    out = []
    for m in re.finditer(r"[^\s,;]", text):
        if not covered[m.start()]:
            holder = tree.root
            while True:
                inner = [c for c in holder.children if c.start <= m.start() < c.end]
                if not inner:
                    break
                holder = inner[0]
            out.append((m.start(), holder.kind))
    return out


def test_every_non_blank_character_is_in_a_leaf_or_a_literals_own_text():
    tree = formats.parse(MODULE, "javascript")
    outside = outside_leaves(tree)
    assert {kind for _, kind in outside} == {"object", "array"}  # `const config = {`, brackets
    assert "".join(MODULE[i] for i, _ in outside if i < MODULE.index("function")) == (
        'constconfig={rules:{"no-var":[{}]}}')  # container members' keys too


def test_syntax_errors_are_still_refused():
    with pytest.raises(ParseError) as e:
        formats.parse("function f( {\n", "javascript")
    assert e.value.line == 1
    with pytest.raises(ParseError, match=r"syntax error \(unexpected ','\)"):  # a bare
        formats.parse("{a: 1,, b: 2}", "javascript")  # literal's own reading's message


def test_repeated_names_get_index_steps():
    tree = formats.parse("var a = f();\nvar a = g();\n", "javascript")
    assert [tree.path(c) for c in tree.root.children] == ["$.a", "$[1]"]


@pytest.mark.parametrize("path", JS_FILES, ids=lambda p: p.name)
def test_every_shipped_sample_file_sections(path, capsys):
    assert main(["sections", str(path), "--budget", "200", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["format"] == "javascript" and out["sections"]
    for a, b in zip(out["sections"], out["sections"][1:]):
        assert a["end"] <= b["start"]
    for s in out["sections"]:
        assert s["tokens"] <= out["budget"] or s["atomic"], s
        assert s["path"].startswith(("$", "($"))


def test_the_benchmark_still_reads_static_initializers_only():
    text = (SAMPLES / "javascript" / "treeagent" / "catalog.js").read_text()
    with pytest.raises(ParseError, match="call expression is not a static value"):
        js.parse(text)  # the benchmark's reading is unchanged
    found, rejected = js.find_initializers(text)
    assert found and rejected


# ---------------------------------------------------------------- property

_IDENT = st.sampled_from(["a", "b", "cfg", "items", "run", "x1"])
_SCALAR = st.one_of(st.integers(-99, 99).map(str), _IDENT.map(lambda s: f'"{s}"'),
                    st.sampled_from(["true", "null"]))


@st.composite
def _expr(draw, depth=0):
    if depth > 2 or draw(st.booleans()):
        return draw(st.one_of(_SCALAR, _IDENT.map(lambda s: f"{s}()")))
    kind = draw(st.sampled_from(["obj", "arr", "arrow"]))
    if kind == "obj":
        keys = draw(st.lists(_IDENT, min_size=1, max_size=3, unique=True))
        return "{" + ", ".join(f"{k}: {draw(_expr(depth + 1))}" for k in keys) + "}"
    if kind == "arr":
        return "[" + ", ".join(draw(st.lists(_expr(depth + 1), max_size=3))) + "]"
    return "() => {\n" + draw(_body(depth + 1)) + "}"


@st.composite
def _body(draw, depth=0):
    lines = []
    for i in range(draw(st.integers(1, 3))):
        form = draw(st.sampled_from(["let", "call", "if", "fn"]))
        if form == "let" or depth > 2:
            lines.append(f"let v{i} = {draw(_expr(depth + 1))};")
        elif form == "call":
            lines.append(f"use({draw(_expr(depth + 1))});")
        elif form == "if":
            lines.append(f"if (x) {{\n{draw(_body(depth + 1))}}}")
        else:
            lines.append(f"function f{i}() {{\n{draw(_body(depth + 1))}}}")
    return "\n".join(lines) + "\n"


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_body(), st.integers(6, 80))
def test_property_module_sections_cover_in_order_within_budget(text, budget):
    tree = js_module.parse(text)
    result = section_tree(tree, CharTokenizer(), budget, search=False)
    covered = bytearray(len(text))
    for a, b in zip(result.sections, result.sections[1:]):
        assert a.end <= b.start
    for s in result.sections:
        assert s.tokens <= budget or s.atomic
        covered[s.start:s.end] = b"\x01" * (s.end - s.start)
    for leaf in tree.leaves():  # sections cover every leaf ...
        assert all(covered[leaf.start:leaf.end]) or not text[leaf.start:leaf.end].strip()
    # ... and leaves all text but a literal's own (brackets, `let v =`)
    assert {kind for _, kind in outside_leaves(tree)} <= {"object", "array"}, text


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(_IDENT, st.lists(_SCALAR, max_size=4)), min_size=1, max_size=4,
                unique_by=lambda t: t[0]))
def test_property_static_programs_keep_their_tree(bindings):
    text = "".join(f"const {n} = [{', '.join(v)}];\n" for n, v in bindings)
    old, new = js.parse(text), formats.parse(text, "javascript")
    assert [(n.kind, n.start, n.end, n.step, n.atomic) for n in old.nodes] == [
        (n.kind, n.start, n.end, n.step, n.atomic) for n in new.nodes]

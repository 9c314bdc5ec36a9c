"""YAML documents and JavaScript bindings without a comment skip the comment pass
(formats/comments.py): that pass must change no span of them, so skipping it changes no
tree; within a YAML document, the pass skips the subtrees with no comment mark near them,
which must change no span either. Checked on the real YAML corpus, the shipped JavaScript
samples and generated text."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from treeagent import formats
from treeagent.algorithm.tree import Tree
from treeagent.formats import javascript as js
from treeagent.formats import yaml_format
from treeagent.formats.comments import (
    hash_after,
    hash_lines_before,
    js_after,
    js_lines_before,
    keep_comments,
)
from treeagent.formats.yaml_format import _comment_marks

SAMPLES = Path(__file__).resolve().parents[1] / "src" / "treeagent" / "samples" / "bench"


def shape(tree: Tree) -> list[tuple]:
    return [(n.kind, n.start, n.end, n.label, n.step, n.atomic, n.cut_start, n.cut_end)
            for n in tree.nodes]


def yaml_pass_changes_nothing(text: str) -> bool:
    tree = formats.parse(text, "yaml")
    before = shape(tree)
    root = tree.root
    for top in root.children if root.kind == "stream" else [root]:
        keep_comments(text, top, 0 if root.kind != "stream" else top.start,
                      hash_lines_before, hash_after)
    return shape(tree) == before


def test_comment_marks_are_found():
    assert _comment_marks("a: 1  # note\n", 0, 4) == [6]
    assert _comment_marks("a: 1\n# note\nb: 2\n", 0, 16) == [5]
    assert _comment_marks("a: |\n  # heading\n  text\n", 0, 20) == [7]  # kept conservative
    assert _comment_marks("$ref: '#/components/x'\nb: a#b\nc: \"#x\"\n", 0, 30) == []
    text = "a: 1\n# above b\nb: 2\n"
    tree = formats.parse(text, "yaml")
    assert tree.root.children[1].start == text.index("# above")  # the pass ran


def test_yaml_corpus_documents_without_comment_marks(sources):
    if sources is None:
        pytest.skip("no mirror of the real sources (set $TREEAGENT_MIRROR)")
    files = sorted((sources / "yaml" / "apis-guru-openapi-directory").rglob("*.yaml"))[:40]
    checked = 0
    for f in files:
        text = f.read_text(encoding="utf-8", errors="replace").lstrip("\ufeff")
        if "#" in text and not _comment_marks(text, 0, len(text)):
            assert yaml_pass_changes_nothing(text), f
            checked += 1
    assert checked >= 5


_PLAIN = st.text(st.sampled_from("ab#:/'\" -"), min_size=1, max_size=6).filter(
    lambda s: s.strip() and not s.strip().startswith(("#", "-", ":", "'", '"'))
    and ": " not in s and " #" not in s and not s.endswith(":"))
_SCALARS = st.one_of(_PLAIN, st.sampled_from(["'#/x'", '"#y"', "'a #b'", "1", "a#b"]))


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.sampled_from(["a", "b", "c#", "$ref"]),
                       st.one_of(_SCALARS, st.lists(_SCALARS, min_size=1, max_size=3)),
                       min_size=1, max_size=4))
def test_generated_yaml_without_comment_marks(data):
    lines = []
    for k, v in data.items():
        if isinstance(v, list):
            lines.append(f"{k}:")
            lines += [f"  - {x}" for x in v]
        else:
            lines.append(f"{k}: {v}")
    text = "\n".join(lines) + "\n"
    try:
        formats.parse(text, "yaml")
    except Exception:
        return
    if not _comment_marks(text, 0, len(text)):
        assert yaml_pass_changes_nothing(text), text


def passes_with_and_without_marks(text: str) -> tuple[list, list]:
    """The shapes after the comment pass over every node and after the pass that skips
    the subtrees without a mark near them, from the same tree before any pass."""
    out = []
    for pruned in (False, True):
        with pytest.MonkeyPatch.context() as m:
            m.setattr(yaml_format, "keep_comments", lambda *a, **k: None)
            tree = formats.parse(text, "yaml")
        root = tree.root
        lo = 0
        for top in root.children if root.kind == "stream" else [root]:
            bound = lo if root.kind != "stream" else top.start
            end = top.end
            keep_comments(text, top, bound, hash_lines_before, hash_after,
                          marks=_comment_marks(text, bound, end) if pruned else None)
            lo = end
        out.append(shape(tree))
    return out[0], out[1]


_LEAVES = st.sampled_from(["v", "1", "'a #b'", "a#b", "[1, 2]", "{a: 1}", "|\n  text\n  # in"])
_NOTES = st.sampled_from(["", "", "above", "after", "both"])
_DOCS = st.recursive(
    st.tuples(_LEAVES, _NOTES),
    lambda inner: st.tuples(
        st.one_of(st.lists(inner, min_size=1, max_size=4).map(lambda xs: ("seq", xs)),
                  st.lists(inner, min_size=1, max_size=4).map(lambda xs: ("map", xs))),
        _NOTES),
    max_leaves=12)


def render(entry, indent: str, keys) -> list[str]:
    """YAML lines for a (value, comment placement) entry as a mapping member or a
    sequence item's content, comments above it and/or after it on its line."""
    value, note = entry
    out = []
    if isinstance(value, tuple):  # a collection: its items on the lines below
        kind, items = value
        for item in items:
            above = [indent + "# above"] if item[1] in ("above", "both") else []
            after = "  # after" if item[1] in ("after", "both") else ""
            head = f"{indent}- " if kind == "seq" else f"{indent}k{next(keys)}:"
            if isinstance(item[0], tuple):
                out += above + [head.rstrip() + after] + render(item, indent + "  ", keys)
            elif item[0].startswith("|"):
                block = item[0].replace("\n", "\n" + indent)
                out += above + [f"{head.rstrip()} {block}"]
            else:
                out += above + [f"{head.rstrip()} {item[0]}{after}"]
    else:
        out.append(f"{indent}{value}")
    return out


@settings(max_examples=300, deadline=None)
@given(_DOCS)
def test_skipping_unmarked_subtrees_changes_no_span(doc):
    if not isinstance(doc[0], tuple):
        doc = (("map", [doc]), "")
    text = "\n".join(render(doc, "", iter(range(10**6)))) + "\n"
    formats.parse(text, "yaml")  # valid by construction
    full, pruned = passes_with_and_without_marks(text)
    assert pruned == full, text


def test_skipping_unmarked_subtrees_on_the_corpus(sources):
    if sources is None:
        pytest.skip("no mirror of the real sources (set $TREEAGENT_MIRROR)")
    checked = 0
    for f in sorted((sources / "yaml" / "apis-guru-openapi-directory").rglob("*.yaml")):
        text = f.read_text(encoding="utf-8", errors="replace").lstrip("\ufeff")
        if _comment_marks(text, 0, len(text)):
            full, pruned = passes_with_and_without_marks(text)
            assert pruned == full, f
            checked += 1
    assert checked >= 10


def js_pass_changes_nothing(text: str) -> bool:
    tree = js.parse(text)
    before = shape(tree)
    for top in tree.root.children:
        keep_comments(text, top, top.start, js_lines_before, js_after, fixed_root=True)
    return shape(tree) == before


def test_js_sample_bindings_without_comments():
    checked = 0
    for f in sorted(p for p in (SAMPLES / "javascript").rglob("*") if p.suffix in
                    (".js", ".mjs", ".cjs")):
        source = f.read_text(encoding="utf-8")
        for init in js.find_initializers(source)[0]:
            literal = source[init.value_start:init.value_end]
            if "//" in literal or "/*" in literal:
                continue
            text = f"const x = {literal};\nconst y = [1, 'a/b'];\n"
            assert js_pass_changes_nothing(text), f
            checked += 1
    assert checked >= 5
    text = "const a = {\n  // the first\n  b: 1,\n};\n"
    assert js.parse(text).nodes[1].children[0].start == text.index("//")  # the pass ran

"""YAML documents and JavaScript bindings without a comment skip the comment pass
(formats/comments.py): that pass must change no span of them, so skipping it changes no
tree. Checked on the real YAML corpus, the shipped JavaScript samples and generated text."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from treeagent import formats
from treeagent.algorithm.tree import Tree
from treeagent.formats import javascript as js
from treeagent.formats.comments import (
    hash_after,
    hash_lines_before,
    js_after,
    js_lines_before,
    keep_comments,
)
from treeagent.formats.yaml_format import _may_comment

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
    assert _may_comment("a: 1  # note\n", 0, 4)
    assert _may_comment("a: 1\n# note\nb: 2\n", 0, 16)
    assert _may_comment("a: |\n  # heading\n  text\n", 0, 20)  # kept conservative
    assert not _may_comment("$ref: '#/components/x'\nb: a#b\nc: \"#x\"\n", 0, 30)
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
        if "#" in text and not _may_comment(text, 0, len(text)):
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
    if not _may_comment(text, 0, len(text)):
        assert yaml_pass_changes_nothing(text), text


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

"""Markdown as a fifth format: the heading tree, its leaves and paths, content detection
(plain text is refused, never read as YAML) and sectioning properties."""

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
from treeagent.cli.main import main

SAMPLES = Path(__file__).resolve().parents[1] / "src" / "treeagent" / "samples"

DOC = """\
Intro words.

# Install

Get it:

- pip
- conda

| os | command |
|----|---------|
| linux | apt |

```sh
pip install treeagent
```

## Linux

Use apt.

### Debian

Same.

## macOS

Use brew.

# Usage

Run it.
"""


def by_path(tree):
    return {tree.path(n): n for n in tree.nodes if n.kind != "heading"}


def test_headings_make_the_tree_and_paths_read_as_breadcrumbs():
    tree = formats.parse(DOC, "markdown")
    p = by_path(tree)
    assert [tree.path(c) for c in tree.root.children] == ["paragraph 1", "# Install", "# Usage"]
    install = p["# Install"]
    assert [(c.kind, tree.path(c)) for c in install.children] == [
        ("heading", "# Install"),
        ("paragraph", "# Install > paragraph 1"),
        ("list", "# Install > list 1"),
        ("table", "# Install > table 1"),
        ("code", "# Install > code 1"),
        ("section", "# Install > ## Linux"),
        ("section", "# Install > ## macOS"),
    ]
    # a section holds everything up to the next heading of the same or a higher level
    assert tree.source(install) == DOC[DOC.index("# Install"):DOC.index("Use brew.") + 9]
    assert tree.source(p["# Install > ## Linux"]) == "## Linux\n\nUse apt.\n\n### Debian\n\nSame."
    assert tree.source(p["# Install > ## Linux > ### Debian > paragraph 1"]) == "Same."
    assert tree.source(p["# Usage"]) == "# Usage\n\nRun it."


def test_blocks_are_leaves_code_atomic_others_divisible():
    tree = formats.parse(DOC, "markdown")
    p = by_path(tree)
    code = p["# Install > code 1"]
    assert code.atomic and code.is_leaf
    assert tree.source(code) == "```sh\npip install treeagent\n```"
    for path in ("# Install > list 1", "# Install > table 1", "# Install > paragraph 1"):
        node = p[path]
        assert node.is_leaf and node.divisible and not node.atomic
    assert tree.source(p["# Install > list 1"]) == "- pip\n- conda"
    assert tree.source(p["# Install > table 1"]).splitlines()[-1] == "| linux | apt |"


def test_setext_headings_repeated_titles_front_matter_and_unclaimed_lines():
    text = ("---\ntitle: x\n---\nGuide\n=====\n\n[ref]: https://example.org\n\n"
            "Part\n----\none\n\nPart\n----\ntwo\n\n    indented code\n")
    tree = formats.parse(text, "markdown")
    shown = [(n.kind, tree.path(n), tree.source(n)) for n in tree.nodes
             if n.is_leaf]
    assert shown == [
        ("front_matter", "front matter 1", "---\ntitle: x\n---"),
        ("heading", "# Guide", "Guide\n====="),
        ("text", "# Guide > text 1", "[ref]: https://example.org"),
        ("heading", "# Guide > ## Part", "Part\n----"),
        ("paragraph", "# Guide > ## Part > paragraph 1", "one"),
        ("heading", "# Guide > ## Part (2)", "Part\n----"),
        ("paragraph", "# Guide > ## Part (2) > paragraph 1", "two"),
        ("code", "# Guide > ## Part (2) > code 1", "    indented code"),
    ]


def test_crlf_line_ends_keep_offsets():
    text = "# A\r\n\r\nx\r\ny\r\n\r\n## B\r\nz\r\n"
    tree = formats.parse(text, "markdown")
    p = by_path(tree)
    assert tree.source(p["# A > paragraph 1"]) == "x\r\ny"
    assert tree.source(p["# A > ## B"]) == "## B\r\nz"
    assert not formats.safe_cut("markdown")(text, text.index("\n"))


def test_empty_document_is_one_leaf():
    tree = formats.parse("\n\n", "markdown")
    assert tree.root.is_leaf and tree.root.divisible


# ---------------------------------------------------------------- detection


@pytest.mark.parametrize("path", sorted((SAMPLES / "bench" / "yaml").rglob("*.yaml")),
                         ids=lambda p: p.parent.parent.name)
def test_shipped_yaml_samples_are_detected_by_content(path):
    assert formats.detect("input", path.read_text()) == "yaml"


@pytest.mark.parametrize("text", [
    "a: 1\nb: [2]\n", "# settings\nname: x\nitems:\n  - 1\n  - 2\n", "---\nk: v\n",
    "%YAML 1.2\n---\na: 1\n", "- one\n- two\n", '"quoted key": 1\nplain: |\n  block\n  text\n',
    "? complex\n: value\n", "a:\nb: c  # note\n...\n",
])
def test_yaml_is_detected_by_content(text):
    assert formats.detect("input", text) == "yaml"


@pytest.mark.parametrize("text", [
    "# Title\n\nSome words.\n", "## Notes\n- a\ntext\n", "```python\nx = 1\n```\n",
])
def test_markdown_is_detected_by_content_and_extension(text):
    assert formats.detect("input", text) == "markdown"
    assert formats.detect("README.md", "plain words") == "markdown"
    assert formats.detect("notes.markdown", "") == "markdown"


@pytest.mark.parametrize("text", [
    "plain words", "Hello world.\nThis is a note: nothing more.\n", "", "   \n",
    "Note: one line\nthen prose without a key\n", "  indented: first line\n",
])
def test_text_of_no_format_is_refused(text):
    with pytest.raises(ValueError, match=r"^cannot tell the format of notes\.txt; "
                                         r"pass --format$"):
        formats.detect("notes.txt", text)


def test_cli_refuses_plain_text_with_exit_2(tmp_path, capsys):
    f = tmp_path / "notes.txt"
    f.write_text("Just some words.\nAnd more words.\n")
    code = main(["sections", str(f)])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err == f"error: cannot tell the format of {f}; pass --format\n"
    assert main(["sections", str(f), "--format", "markdown"]) == 0


def test_cli_sections_a_markdown_file(tmp_path, capsys):
    f = tmp_path / "guide.md"
    f.write_text(DOC)
    assert main(["sections", str(f), "--budget", "24", "--no-search", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["format"] == "markdown"
    assert [s["path"] for s in out["sections"]] == [
        "paragraph 1", "(# Install, [0, 2])", "(# Install, [3, 4])", "(# Install, [5, 6])",
        "# Usage"]


# ---------------------------------------------------------------- property


def _block(kind: str, words: list[str]) -> str:
    body = " ".join(words)
    if kind == "paragraph":
        return body
    if kind == "list":
        return "\n".join(f"- {w}" for w in words)
    if kind == "table":
        return "| a | b |\n|---|---|\n" + "\n".join(f"| {w} | {i} |" for i, w in enumerate(words))
    if kind == "code":
        return "```\n" + "\n".join(words) + "\n```"
    return "> " + body


@st.composite
def documents(draw):
    word = st.text(alphabet="abcdefghij", min_size=1, max_size=8)
    parts = []
    for _ in range(draw(st.integers(1, 12))):
        if draw(st.booleans()):
            level = draw(st.integers(1, 4))
            parts.append("#" * level + " " + draw(word))
        else:
            kind = draw(st.sampled_from(["paragraph", "list", "table", "code", "quote"]))
            parts.append(_block(kind, draw(st.lists(word, min_size=1, max_size=12))))
    return "\n\n".join(parts) + "\n"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents(), st.integers(4, 60))
def test_property_sections_cover_in_order_within_budget(text, budget):
    tree = formats.parse(text, "markdown")
    result = section_tree(tree, CharTokenizer(), budget, search=False)
    sections = result.sections
    for a, b in zip(sections, sections[1:]):
        assert a.end <= b.start  # in order, disjoint
    covered = bytearray(len(text))
    for s in sections:
        covered[s.start:s.end] = b"\x01" * (s.end - s.start)
        assert s.tokens <= budget or s.atomic
        if s.tokens > budget:  # only a code block (or a cut-free piece) may exceed it
            assert s.kind != "siblings"
    for m in re.finditer(r"\S", text):
        assert covered[m.start()], (m.start(), text)
    # every section boundary falls on the heading structure: a section never holds a
    # heading line after other content of a different section
    for s in sections:
        if s.kind == "subtree" and s.node.kind == "section":
            assert result.section_text(s).lstrip().startswith("#")

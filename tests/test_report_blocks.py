"""Typed report blocks: each kind renders to one Markdown text and one HTML text (the
expected strings are written out by hand), and HTML escapes whatever text a block holds."""

from __future__ import annotations

import base64

import pytest

from treeagent.report.blocks import (
    Bold,
    Caution,
    Figure,
    Heading,
    KeyValues,
    Link,
    LinkList,
    Paragraph,
    Table,
    html_document,
    markdown_document,
)

SCRIPT = "<script>alert('x')</script>"


def test_heading(tmp_path):
    assert Heading("Table 1: a & b").markdown() == "## Table 1: a &amp; b"
    assert Heading("Table 1: a & b").html(tmp_path) == "<h2>Table 1: a &amp; b</h2>"
    assert Heading("Report", level=1).markdown() == "# Report"
    assert Heading("Report", level=1).html(tmp_path) == "<h1>Report</h1>"


def test_paragraph(tmp_path):
    p = Paragraph("TreeAgent − Flat: *bold* [x] a_b")
    assert p.markdown() == "TreeAgent − Flat: \\*bold\\* \\[x\\] a\\_b"
    assert p.html(tmp_path) == "<p>TreeAgent − Flat: *bold* [x] a_b</p>"


def test_caution(tmp_path):
    c = Caution("† Too few pairs (n < 30).")
    assert c.markdown() == "> † Too few pairs (n &lt; 30)."
    assert c.html(tmp_path) == '<p class="note">† Too few pairs (n &lt; 30).</p>'


def test_table_with_caption_bold_link_and_notes(tmp_path):
    t = Table(["Memory agent", "Score"],
              [["MemAgent", Bold("79.17")],
               [Link("ex 1", "examples/ex 1.html#memagent/flat"), "—"]],
              id="t1", caption="JSON:", notes=["Only 2 examples."])
    assert t.markdown() == (
        "JSON:\n"
        "\n"
        "| Memory agent | Score |\n"
        "|:--|--:|\n"
        "| MemAgent | **79.17** |\n"
        "| [ex 1](examples/ex%201.html#memagent/flat) | — |\n"
        "\n"
        "> Only 2 examples.")
    assert t.html(tmp_path) == (
        "<p>JSON:</p>\n"
        '<table id="t1"><thead><tr><th>Memory agent</th><th>Score</th></tr></thead><tbody>'
        '<tr><td>MemAgent</td><td class="num"><b>79.17</b></td></tr>'
        '<tr><td><a href="examples/ex 1.html#memagent/flat">ex 1</a></td>'
        '<td class="num">—</td></tr></tbody></table>\n'
        '<p class="note">Only 2 examples.</p>')


def test_plain_table_has_no_id_caption_or_notes(tmp_path):
    t = Table(["A", "B"], [["x|y", "1.5 [0.0, 3.0] n=4†"]])
    assert t.markdown() == "| A | B |\n|:--|--:|\n| x\\|y | 1.5 \\[0.0, 3.0\\] n=4† |"
    assert t.html(tmp_path) == ("<table><thead><tr><th>A</th><th>B</th></tr></thead><tbody>"
                                '<tr><td>x|y</td><td class="num">1.5 [0.0, 3.0] n=4†</td>'
                                "</tr></tbody></table>")


def test_figure_missing_file_keeps_its_path(tmp_path):
    f = Figure("figures/figure2.png", "figure2", caption="All scores are 0.")
    assert f.markdown() == "![figure2](figures/figure2.png)\n\nAll scores are 0."
    assert f.html(tmp_path) == (
        '<figure id="figure2"><img src="figures/figure2.png" alt="figure2" '
        'data-file="figures/figure2.png"><figcaption>All scores are 0.</figcaption></figure>')


def test_figure_embeds_a_png_at_its_size(tmp_path):
    png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\x03\xfc\0\0\x01\x2c"  # 1020 x 300
    (tmp_path / "figures").mkdir()
    (tmp_path / "figures" / "e.png").write_bytes(png)
    f = Figure("figures/e.png", "figure-evidence")
    assert f.markdown() == "![e](figures/e.png)"
    uri = "data:image/png;base64," + base64.b64encode(png).decode()
    assert f.html(tmp_path) == (
        f'<figure id="figure-evidence"><img src="{uri}" width="1020" height="300" '
        'alt="figure-evidence" data-file="figures/e.png"></figure>')


def test_figure_without_a_file(tmp_path):
    assert Figure(None, "figure3").markdown() == "—"
    assert Figure(None, "figure3").html(tmp_path) == "<p>—</p>"


def test_key_values(tmp_path):
    kv = KeyValues([("git commit", "f0b7621"), ("params differing", "seed = 7 (preset 42)")],
                   id="provenance")
    assert kv.markdown() == ("|  |  |\n|:--|--:|\n| git commit | f0b7621 |\n"
                             "| params differing | seed = 7 (preset 42) |")
    assert kv.html(tmp_path) == (
        '<section id="provenance"><table class="kv"><tbody>'
        "<tr><td>git commit</td><td>f0b7621</td></tr>"
        "<tr><td>params differing</td><td>seed = 7 (preset 42)</td></tr>"
        "</tbody></table></section>")


def test_link_list(tmp_path):
    links = LinkList([("scores gate: passed", "validation/scores.json"),
                      ("Every example", "examples/index.html")])
    assert links.markdown() == ("- [scores gate: passed](validation/scores.json)\n"
                                "- [Every example](examples/index.html)")
    assert links.html(tmp_path) == (
        '<ul class="links"><li><a href="validation/scores.json">scores gate: passed</a></li>'
        '<li><a href="examples/index.html">Every example</a></li></ul>')


HOSTILE_BLOCKS = [
    Heading(SCRIPT),
    Paragraph(SCRIPT),
    Caution(SCRIPT),
    Table([SCRIPT], [[SCRIPT]], id=SCRIPT, caption=SCRIPT, notes=[SCRIPT]),
    Table(["x"], [[Bold(SCRIPT)], [Link(SCRIPT, 'x" onclick="alert(1)')]]),
    Figure(SCRIPT, SCRIPT, caption=SCRIPT),
    KeyValues([(SCRIPT, SCRIPT)], id=SCRIPT),
    LinkList([(SCRIPT, '"><script>alert(1)</script>')]),
]


@pytest.mark.parametrize("block", HOSTILE_BLOCKS, ids=lambda b: type(b).__name__)
def test_html_and_markdown_escape_text(block, tmp_path):
    page = block.html(tmp_path)
    assert "<script" not in page and "&lt;script&gt;" in page
    assert 'x" onclick' not in page
    assert "<script" not in block.markdown()


def test_documents_join_the_blocks_in_order(tmp_path):
    blocks = [Heading("Report & co", level=1), Paragraph("first"), Heading("Second"),
              Caution("third")]
    assert markdown_document(blocks) == "# Report &amp; co\n\nfirst\n\n## Second\n\n> third\n"
    page = html_document("Report & co", blocks, tmp_path)
    assert page.startswith("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">")
    assert "<title>Report &amp; co</title><style>" in page
    assert page.endswith("</head><body>\n<h1>Report &amp; co</h1>\n<p>first</p>\n"
                         "<h2>Second</h2>\n<p class=\"note\">third</p>\n</body></html>\n")

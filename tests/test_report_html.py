"""The written report as files: index.html carries its figures (data: URIs, native size),
each caption once, and report.md shows text from the data as text under CommonMark."""

from __future__ import annotations

import base64
import html.parser
import shutil

import pandas as pd
import pytest

from test_report import synthetic_rows
from treeagent.report import figures as F
from treeagent.report.render import ZERO_GAINS_ZERO_SCORES, ZERO_SCORES, build_report, png_size

HOSTILE = ("<script>alert('x')</script> *starred* [a link](http://example.com) "
           "<img src=x onerror=alert(1)> `code` | pipe & &lt;entity")


class _Tags(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.text: list[str] = []
        self._in: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._in.append(tag)

    def handle_endtag(self, tag):
        if tag in self._in:
            self._in.remove(tag)

    def handle_data(self, data):
        self.text.append(("figcaption " if "figcaption" in self._in else "") + data)


def _parse(page: str) -> _Tags:
    p = _Tags()
    p.feed(page)
    return p


@pytest.fixture(scope="module")
def zero(tmp_path_factory):
    out = tmp_path_factory.mktemp("zero")
    build_report(pd.DataFrame([{**r, "score": 0.0} for r in synthetic_rows()]), out)
    return out


def test_index_html_embeds_every_figure_at_native_size(zero):
    page = (zero / "index.html").read_text(encoding="utf-8")
    imgs = [a for tag, a in _parse(page).tags if tag == "img"]
    assert sorted(a["data-file"] for a in imgs) == ["figures/figure2.png", "figures/figure3.png"]
    for a in imgs:
        assert a["src"].startswith("data:image/png;base64,")
        data = base64.b64decode(a["src"].split(",", 1)[1])
        assert data == (zero / a["data-file"]).read_bytes()
        assert (int(a["width"]), int(a["height"])) == png_size(data)
    # the page alone, without figures/, still has them
    alone = zero / "alone"
    alone.mkdir()
    shutil.copy(zero / "index.html", alone / "index.html")
    assert "figures/figure2.png\"" not in page.replace('data-file="figures/figure2.png"', "")


def test_png_size_reads_the_header():
    assert png_size(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\x03\xfc\0\0\x01\x2c") == (1020, 300)
    assert png_size(b"GIF89a") is None


def test_captions_once_and_never_drawn_into_images(zero, monkeypatch):
    page = (zero / "index.html").read_text(encoding="utf-8")
    for note in (ZERO_SCORES, ZERO_GAINS_ZERO_SCORES):
        assert page.count(note) == 1, note
        assert f"figcaption {note}" in _parse(page).text
        assert (zero / "report.md").read_text(encoding="utf-8").count(note) == 1
    drawn = []
    monkeypatch.setattr(F, "_save", lambda fig, plt, path: drawn.append(fig) or path)
    build_report(pd.DataFrame([{**r, "score": 0.0} for r in synthetic_rows()]),
                 zero / "again")
    assert len(drawn) == 2
    for fig in drawn:  # panel titles and axes only: no figure-level text, no suptitle
        assert fig.texts == [] and fig._suptitle is None


def test_figures_fit_the_page_at_native_size(zero, tmp_path):
    import matplotlib.pyplot as plt

    for name in ("figure2.png", "figure3.png"):
        h, w = plt.imread(zero / "figures" / name).shape[:2]
        assert 900 <= w <= 1020, (name, w)  # the page's content is 1180 px wide
    # four formats (Figure E of the demo) wrap into rows instead of shrinking on the page
    table = pd.DataFrame([{"format": f, "length": n, "method": m, "records_split": 10.0}
                          for f in ("json", "yaml", "html", "javascript")
                          for n in (2048, 4096) for m in ("flat", "treeagent")])
    F.evidence_figure(table, tmp_path / "evidence.png")
    h, w = plt.imread(tmp_path / "evidence.png").shape[:2]
    assert 900 <= w <= 1020 and h > 600, (w, h)


def test_report_md_shows_data_text_as_text_under_commonmark(tmp_path):
    from markdown_it import MarkdownIt

    rows = [{**r, "prediction": HOSTILE, "reference": '"<b>ref</b> _x_"'}
            for r in synthetic_rows()]
    build_report(pd.DataFrame(rows), tmp_path)
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    rendered = MarkdownIt("commonmark").enable("table").render(md)
    tags = _parse(rendered)
    names = [t for t, _ in tags.tags]
    assert "script" not in names and "b" not in names and "em" not in names
    assert [a["src"] for t, a in tags.tags if t == "img"] == [
        "figures/figure2.png", "figures/figure3.png"]  # the report's own figures only
    assert not [a for t, a in tags.tags if t == "a" and "example.com" in a.get("href", "")]
    assert "code" not in names
    text = "".join(tags.text)
    # nothing lost: the prediction shows as written (cut at 160 characters), the reference too
    assert HOSTILE[:100] in text
    assert '"<b>ref</b> _x_"' in text
    # the row keeps its five cells (the pipe in the prediction did not split it)
    row = next(r for r in rendered.split("<tr>") if "alert(" in r)
    assert row.count("<td") == 5 and "| pipe" in row


def test_index_html_escapes_data_text(tmp_path):
    rows = [{**r, "prediction": HOSTILE} for r in synthetic_rows()]
    build_report(pd.DataFrame(rows), tmp_path)
    tags = _parse((tmp_path / "index.html").read_text(encoding="utf-8"))
    assert "script" not in [t for t, _ in tags.tags]
    assert HOSTILE[:100] in "".join(tags.text)

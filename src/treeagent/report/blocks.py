"""Typed report blocks: report.md and index.html are one list of these, in order.

Each kind of block is one dataclass with exactly one Markdown rendering (``markdown()``)
and one HTML rendering (``html(base)``, ``base`` the report's folder, where a figure's
file is read to embed it). Text is escaped where it is rendered: :func:`md_text` for
Markdown (a CommonMark renderer shows it as written, never as raw HTML), ``html.escape``
for HTML. A table cell is a ``str``; a :class:`Bold` cell is emphasised, a :class:`Link`
cell links to its ``href``.
"""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

MISSING = "—"
_NUMERIC = re.compile(r"^[-−+\[\]()\d.,%\s—n=†]*$")
_MD_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
_MD_PUNCT = re.compile(r"([\\`*_\[\]|#~])")

#: the caution under the title when a run evaluates the demo's small model
SMALL_MODEL_NOTE = (
    "The demo's SmolLM2-135M-Instruct is a 135M-parameter model and scores near zero on "
    "these questions whichever method it reads; the measurement is the paper preset with "
    "the real checkpoints (python -m treeagent.pipeline.config write --preset paper), while the "
    "evidence-integrity tables below need no model at all.")


class Bold(str):
    """A table cell to emphasise (the strictly best score within a group and column)."""


class Link(str):
    """A table cell that links to ``href`` (report.md and index.html both)."""

    href: str

    def __new__(cls, text: str, href: str) -> Link:
        cell = super().__new__(cls, text)
        cell.href = href
        return cell


def md_text(text: object) -> str:
    """Text for report.md that a CommonMark renderer shows as written: ``&``, ``<``,
    ``>`` as entities (no raw HTML, so a ``<script>`` in a question or prediction stays
    text), emphasis, link, code, table and heading marks backslash-escaped, line breaks
    as spaces."""
    out = "".join(_MD_ENTITIES.get(ch, ch) for ch in str(text))
    return " ".join(_MD_PUNCT.sub(r"\\\1", out).splitlines())


def md_href(href: str) -> str:
    """A link target for report.md (spaces and brackets percent-encoded)."""
    return quote(href, safe="/:#%")


def png_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) in pixels from a PNG's IHDR chunk; None if ``data`` is no PNG."""
    if data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
        return None
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


@dataclass(frozen=True)
class Heading:
    """A section heading (level 1: the report's title)."""

    text: str
    level: int = 2

    def markdown(self) -> str:
        return f"{'#' * self.level} {md_text(self.text)}"

    def html(self, base: Path) -> str:
        return f"<h{self.level}>{html.escape(self.text)}</h{self.level}>"


@dataclass(frozen=True)
class Paragraph:
    """A paragraph of text."""

    text: str

    def markdown(self) -> str:
        return md_text(self.text)

    def html(self, base: Path) -> str:
        return f"<p>{html.escape(self.text)}</p>"


@dataclass(frozen=True)
class Caution:
    """A highlighted note: a caveat the reader must not miss (quoted in Markdown)."""

    text: str

    def markdown(self) -> str:
        return f"> {md_text(self.text)}"

    def html(self, base: Path) -> str:
        return f'<p class="note">{html.escape(self.text)}</p>'


def _md_cell(cell: str) -> str:
    text = md_text(cell)
    if isinstance(cell, Link):
        text = f"[{text}]({md_href(cell.href)})"
    return f"**{text}**" if isinstance(cell, Bold) else text


def _md_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A pipe table: the first column left-aligned, the others right-aligned."""
    lines = ["| " + " | ".join(md_text(h) for h in headers) + " |",
             "|" + "|".join(":--" if i == 0 else "--:" for i in range(len(headers))) + "|"]
    lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _html_cell(cell: str) -> str:
    text = html.escape(str(cell))
    if isinstance(cell, Link):
        text = f'<a href="{html.escape(cell.href)}">{text}</a>'
    cls = ' class="num"' if _NUMERIC.match(str(cell)) else ""
    return f"<td{cls}><b>{text}</b></td>" if isinstance(cell, Bold) else f"<td{cls}>{text}</td>"


@dataclass(frozen=True)
class Table:
    """A table with a header row; ``caption`` is shown above it, each of ``notes`` below
    it as a :class:`Caution`; ``id`` is the HTML table's id (a link target)."""

    headers: Sequence[str]
    rows: Sequence[Sequence[str]]
    id: str = ""
    caption: str | None = None
    notes: Sequence[str] = ()

    def markdown(self) -> str:
        parts = [Paragraph(self.caption).markdown()] if self.caption else []
        parts.append(_md_table(self.headers, self.rows))
        parts += [Caution(n).markdown() for n in self.notes]
        return "\n\n".join(parts)

    def html(self, base: Path) -> str:
        head = "".join(f"<th>{html.escape(h)}</th>" for h in self.headers)
        body = "".join("<tr>" + "".join(_html_cell(c) for c in row) + "</tr>"
                       for row in self.rows)
        attr = f' id="{html.escape(self.id)}"' if self.id else ""
        parts = [Paragraph(self.caption).html(base)] if self.caption else []
        parts.append(f"<table{attr}><thead><tr>{head}</tr></thead><tbody>{body}</tbody>"
                     "</table>")
        parts += [Caution(n).html(base) for n in self.notes]
        return "\n".join(parts)


@dataclass(frozen=True)
class KeyValues:
    """A two-column table of facts, key then value (the provenance)."""

    rows: Sequence[tuple[str, str]]
    id: str

    def markdown(self) -> str:
        return _md_table(["", ""], [[str(k), str(v)] for k, v in self.rows])

    def html(self, base: Path) -> str:
        cells = "".join(f"<tr><td>{html.escape(str(k))}</td><td>{html.escape(str(v))}"
                        f"</td></tr>" for k, v in self.rows)
        return (f'<section id="{html.escape(self.id)}"><table class="kv">'
                f"<tbody>{cells}</tbody></table></section>")


@dataclass(frozen=True)
class Figure:
    """An image file under the report's folder (``src``, relative; None: not drawn),
    with its caption written once below it (never drawn into the image). In HTML it is
    embedded as a data: URI at its native pixel size, so the page alone keeps it; a
    missing file keeps its relative path."""

    src: str | None
    id: str
    caption: str | None = None

    def markdown(self) -> str:
        image = (f"![{md_text(Path(self.src).stem)}]({md_href(self.src)})" if self.src
                 else MISSING)
        return f"{image}\n\n{md_text(self.caption)}" if self.caption else image

    def html(self, base: Path) -> str:
        if not self.src:
            return f"<p>{MISSING}</p>"
        path = base / self.src
        ref, size = self.src, None
        if path.is_file():
            data = path.read_bytes()
            size = png_size(data)
            if size:
                ref = "data:image/png;base64," + base64.b64encode(data).decode("ascii")
        dims = f' width="{size[0]}" height="{size[1]}"' if size else ""
        cap = f"<figcaption>{html.escape(self.caption)}</figcaption>" if self.caption else ""
        return (f'<figure id="{html.escape(self.id)}"><img src="{html.escape(ref)}"{dims} '
                f'alt="{html.escape(self.id or self.src)}" data-file="{html.escape(self.src)}">'
                f"{cap}</figure>")


@dataclass(frozen=True)
class LinkList:
    """A bulleted list of links, (text, href) each."""

    links: Sequence[tuple[str, str]]

    def markdown(self) -> str:
        return "\n".join(f"- [{md_text(text)}]({md_href(href)})" for text, href in self.links)

    def html(self, base: Path) -> str:
        items = "".join(f'<li><a href="{html.escape(href)}">{html.escape(text)}</a></li>'
                        for text, href in self.links)
        return f'<ul class="links">{items}</ul>'


Block = Heading | Paragraph | Caution | Table | KeyValues | Figure | LinkList

STYLE = """
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;
  color:#1d1d1f;max-width:1180px;margin:2em auto;padding:0 1.5em;background:#fff}
h1{font-size:1.7em;margin-bottom:.2em}h2{font-size:1.25em;margin-top:1.8em;
  border-bottom:2px solid #e4e4e7;padding-bottom:.2em}
p.note{background:#fff8e1;border-left:4px solid #f0b400;padding:.6em .9em}
table{border-collapse:collapse;margin:.6em 0 1.2em;font-variant-numeric:tabular-nums}
th{background:#f4f4f5;font-weight:600}td,th{padding:4px 10px;border:1px solid #e4e4e7;
  text-align:left;vertical-align:top}td.num{text-align:right}
tbody tr:nth-child(even){background:#fafafa}td b{color:#b00020}
table.kv td{text-align:left}table.kv td:first-child{font-weight:600;white-space:nowrap}
figure{margin:1em 0;overflow-x:auto}figure img{max-width:none;border:1px solid #e4e4e7}
figcaption{font-style:italic;margin-top:.3em}
ul.links li{margin:.2em 0}
"""


def markdown_document(blocks: Sequence[Block]) -> str:
    """report.md: the blocks' Markdown, a blank line after each."""
    return "\n".join(part for block in blocks for part in (block.markdown(), ""))


def html_document(title: str, blocks: Sequence[Block], base: Path) -> str:
    """index.html: one self-contained page (styles inline, figures embedded)."""
    return (f"<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"viewport\" content=\"width=device-width\"><title>"
            f"{html.escape(title)}</title><style>{STYLE}</style></head><body>\n"
            + "\n".join(block.html(base) for block in blocks) + "\n</body></html>\n")

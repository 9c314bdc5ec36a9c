"""HTML tables and values as a reader sees them, in construction
(:mod:`treeagent.bench.sources.html_records`) and, written separately, in the second
reader (:mod:`treeagent.bench.independent`): tables laid out as a browser lays them out
(rowspan/colspan), hidden and capture-relative text left out, list-valued cells as lists
(docs/fidelity.md "HTML values"). Real excerpts: tests/fixtures/html/README.md."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from test_bench_independent import _confirm, _context
from treeagent.bench import independent, tasks
from treeagent.bench.sources import html_records
from treeagent.formats import html as html_format

FIXTURES = Path(__file__).parent / "fixtures" / "html"


def _fixture(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def _reader_rows(page: str, select: str = "@table-row") -> list[dict]:
    reading = independent.read_context("html", _context("html", "wikitables", [page])[0])
    return [rec for unit in reading.units
            for rec, _, _ in independent._html_records(unit, [select])]


# ------------------------------------------------------------------ the license-plate table


def test_a_row_after_a_rowspan_cell_is_read_with_its_cells_shifted():
    page = _fixture("arizona-plates-1955-present.html")
    text, recs, srcs = _context("html", "wikitables", [page])
    years = [r.fields.get("first issued") for r in recs]
    # 1980 has one cell fewer than the header, 2008 sits under a rowspan="2" slogan
    assert years == [1955, 1958, 1960, 1963, 1965, 1968, 1972, 1980, 1996, 2008]
    latest = recs[-1].fields
    assert latest["slogan"].startswith("GRAND CANYON STATE in dark green thin plain letters")
    assert latest["serial format"] == "ABC1234"
    assert latest["serials issued"] == "AAA0001 to present"
    rows = _reader_rows(page)
    assert [r.get(("@column", "First issued")) for r in rows] == years
    assert rows[-1][("@column", "Slogan")] == latest["slogan"]
    assert rows[-1][("@column", "Serial format")] == "ABC1234"
    agg = next(a for a in tasks.aggregates(recs) if a.name == "first issued")
    top = {"op": "extremum", "kind": agg.kind, "scope": agg.scope(), "field": "first issued",
           "fn": "max"}
    assert _confirm("numeric_extremum", top, 2008, "html", text, srcs) == ""
    assert "gives 2008" in _confirm("numeric_extremum", top, 1996, "html", text, srcs)


# ------------------------------------------------------------------ layout (property)

_SPANS = st.tuples(st.integers(1, 3), st.sampled_from([0, 1, 1, 1, 2, 3, 5]))


def _reference_layout(groups: list[list[list[tuple[int, int]]]]) -> list[list[str | None]]:
    """Slots of each row, written from the HTML table model: a cell starts at the first
    free slot of its row, covers colspan x rowspan slots (rowspan 0 or past the end: to
    the end of its row group); a slot claimed twice keeps its first cell."""
    out: list[list[str | None]] = []
    for g, rows in enumerate(groups):
        slot: dict[tuple[int, int], str] = {}
        for r, cells in enumerate(rows):
            x = 0
            for k, (cs, rs) in enumerate(cells):
                while (r, x) in slot:
                    x += 1
                bottom = len(rows) if rs == 0 else min(len(rows), r + rs)
                for y in range(r, bottom):
                    for dx in range(cs):
                        slot.setdefault((y, x + dx), f"g{g}r{r}c{k}")
                x += cs
        for r in range(len(rows)):
            width = max([x + 1 for (y, x) in slot if y == r], default=0)
            out.append([slot.get((r, x)) for x in range(width)])
    return out


def _page(groups: list[list[list[tuple[int, int]]]], sections: bool) -> str:
    parts = ["<table>"]
    for g, rows in enumerate(groups):
        parts.append("<tbody>" if sections else "")
        for r, cells in enumerate(rows):
            parts.append("<tr>" + "".join(
                f'<td colspan="{cs}" rowspan="{rs}">g{g}r{r}c{k}</td>'
                for k, (cs, rs) in enumerate(cells)) + "</tr>")
        parts.append("</tbody>" if sections else "")
    return "".join(parts) + "</table>"


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(st.lists(_SPANS, min_size=1, max_size=4), min_size=1, max_size=5),
                min_size=1, max_size=3), st.booleans())
def test_both_readers_lay_a_spanned_table_out_as_the_html_table_model(groups, sections):
    if not sections:
        groups = [[row for rows in groups for row in rows]]  # rows of the table itself
    page = _page(groups, sections)
    want = _reference_layout(groups)
    tree = html_format.parse(page)
    table = next(n for n in tree.nodes if n.kind == "element" and n.label == "table")
    built = [[html_records.text_of(tree, c) if c is not None else None for c in slots]
             for _, slots, _ in html_records.table_layout(tree, table)]
    assert built == want
    doc = independent.parse_html(f"<html><body><section>{page}</section></body></html>")
    read = [[independent.shown(c) if c is not None else None for c in slots]
            for slots, _ in independent.layout(next(doc.iter("table")))]
    assert read == want


# ------------------------------------------------------------------ values as shown


def test_an_infobox_value_is_its_visible_text_and_a_list_stays_a_list():
    page = _fixture("mozilla-infobox.html")
    text, recs, srcs = _context("html", "readability", [page])
    (rec,) = recs
    # "February 28, 1998; 18 years ago (1998-02-28)" in the page's text: the ISO date is
    # display:none, "18 years ago" was relative to the day the page was saved
    assert rec.fields["founded"] == "February 28, 1998"
    assert rec.fields["industry"] == "Open-source software"
    assert "divisions" not in rec.fields  # two list items: no single value
    (read,) = _reader_rows(page, "@label-table")
    assert read[("@label", "Founded")] == "February 28, 1998"
    assert read[("@label", "Divisions")] == ["Mozilla Corporation", "Mozilla Foundation"]
    spec = {"op": "lookup", "kind": "specification table", "shape": "value", "ordered": False,
            "record": "Mozilla", "fields": ["founded"], "keys": [["@label", "Founded"]],
            "at": {"anchor": [[["@label", "Industry"], "Open-source software"]],
                   "select": ["@label-table"], "source": "readability"}}
    assert _confirm("one_field", spec, "February 28, 1998", "html", text, srcs) == ""
    assert "gives" in _confirm("one_field", spec, "February 28, 1998; 18 years ago (1998-02-28)",
                               "html", text, srcs)
    divisions = {**spec, "fields": ["divisions"], "keys": [["@label", "Divisions"]]}
    assert "a list of 2 items" in _confirm("one_field", divisions,
                                           "Mozilla Corporation Mozilla Foundation",
                                           "html", text, srcs)


def test_hidden_sort_keys_and_capture_relative_text_are_not_part_of_a_value():
    page = ('<table class="wikitable sortable"><tr><th>Peak</th><th>Height</th>'
            '<th>Born</th><th>Note</th></tr>'
            '<tr><td>Mount Elbert</td><td><span style="display:none" class="sortkey">'
            '!B9916058788061 </span>14,440 ft</td><td>May 3, 1970 (age&#160;45)</td>'
            '<td>first<span hidden>secret</span></td></tr>'
            '<tr><td>Mount Massive</td><td><span class="sortkey">7000</span>14,421 ft</td>'
            '<td>June 1, 1980 (aged 28)</td><td>second<br>line</td></tr>'
            '<tr><td>Mount Harvard</td><td>14,420 ft</td><td>July 2, 1960</td>'
            '<td><span class="visually-hidden">skip </span>third</td></tr>'
            '<tr><td><b>Ykkönen</b> <i>(First Division)</i></td><td>14,000 ft</td>'
            '<td>March 1, 1990</td><td>fourth</td></tr></table>')
    text, recs, srcs = _context("html", "wikitables", [page])
    got = [(r.fields["height"], r.fields["born"]) for r in recs]
    assert got == [("14,440 ft", "May 3, 1970"), ("14,421 ft", "June 1, 1980 (aged 28)"),
                   ("14,420 ft", "July 2, 1960"), ("14,000 ft", "March 1, 1990")]
    assert recs[-1].fields["peak"] == "Ykkönen (First Division)"  # the space between
    assert not any("note" in r.fields for r in recs)  # one cell of the column is a list
    rows = _reader_rows(page)
    assert [(r[("@column", "Height")], r[("@column", "Born")]) for r in rows] == got
    assert [r[("@column", "Note")] for r in rows] == ["first", ["second", "line"], "third",
                                                      "fourth"]
    assert rows[-1][("@column", "Peak")] == "Ykkönen (First Division)"


# ------------------------------------------------------------------ accepted forms


def test_a_value_with_a_trailing_remark_accepts_the_value_without_it():
    from treeagent.bench import accepted, validate
    from treeagent.report.schema import score_rows

    page = ('<table><tr><th>Player</th><th>Born</th><th>Club</th></tr>'
            '<tr><td>Ann Lee</td><td>June 1, 1980 (aged 28)</td><td>Ajax</td></tr>'
            '<tr><td>Bo Kim</td><td>May 2, 1981</td><td>PSV</td></tr>'
            '<tr><td>Cy Ito</td><td>July 3, 1982 (aged 26)</td><td>Ajax</td></tr></table>')
    _, recs, _ = _context("html", "wikitables", [page])
    ann = next(r for r in recs if r.description == "Ann Lee")
    assert ann.accepted == {"born": ("June 1, 1980",)}
    assert next(r for r in recs if r.description == "Bo Kim").accepted == {}
    one = {"op": "lookup", "fields": ["born", "club"]}
    assert accepted.question_forms(one, [ann.id], recs) == [["June 1, 1980"], []]
    assert accepted.question_forms({**one, "fields": ["club"]}, [ann.id], recs) == []
    many = {"op": "lookup_records", "field": "born"}
    ids = [r.id for r in recs if r.description in ("Cy Ito", "Bo Kim")]
    assert accepted.question_forms(many, ids, recs) == [[], ["July 3, 1982"]]
    assert accepted.question_forms({"op": "count"}, ids, recs) == []
    # the build's check: one list per value, each the value without its remark
    assert validate.accepted_problem("June 1, 1980 (aged 28)", [["June 1, 1980"]]) == ""
    assert validate.accepted_problem(["a", "b"], []) == ""
    assert "one list per value" in validate.accepted_problem(["a (b)", "c"], [["a"]])
    assert "without a remark" in validate.accepted_problem("June 1, 1980 (aged 28)", [["June"]])
    # scored rows honour the example's accepted forms
    rows = [{"example_id": f"e{i}", "dataset": "html", "task": "one_field", "length": 8192,
             "agent": "memagent", "method": "flat", "reference": '"June 1, 1980 (aged 28)"',
             "accepted": acc, "prediction": "June 1, 1980"}
            for i, acc in enumerate(['[["June 1, 1980"]]', None])]
    assert score_rows(rows).column("score").to_pylist() == [1.0, 0.0]

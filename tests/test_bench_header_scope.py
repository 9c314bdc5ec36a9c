"""An aggregation over a field a page shows as a column header names the header, so
the rows of another table whose cells merely hold a year are plainly out of scope."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from treeagent.bench import tasks
from treeagent.bench.sources import records_from_text


def _records(years: list[int], dates: list[str]) -> list:
    """Two tables of one context (two pages): films under "Year", events under "Date"."""
    films = "".join(f"<tr><td>Film {i}</td><td>{y}</td></tr>" for i, y in enumerate(years))
    events = "".join(f"<tr><td>Event {i}</td><td>{d}</td></tr>" for i, d in enumerate(dates))
    return [*records_from_text("html", "wikitables", "<table><tr><th>Film</th><th>Year</th>"
                               "</tr>" + films + "</table>", unit_id="html/wikitables/a"),
            *records_from_text("html", "wikitables", "<table><tr><th>Event</th><th>Date</th>"
                               "</tr>" + events + "</table>", unit_id="html/wikitables/b")]


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from([1961, 1968, 1975, 1983, 1989, 1997, 2004, 2012]),
                min_size=4, max_size=6, unique=True),
       st.lists(st.integers(2013, 2020), min_size=3, max_size=4, unique=True))
def test_a_year_column_is_asked_by_its_header(years, later):
    dates = [f"{y}-05-0{i + 1}" for i, y in enumerate(later)]  # later years, not under "Year"
    recs = _records(years, dates)
    asked = []
    for seed in range(8):
        q = tasks.generate("numeric_extremum", recs, random.Random(seed))
        if q is not None and "year" in q.question.lower():
            asked.append(q)
    assert asked
    for q in asked:
        assert 'that have a "Year" value' in q.question, q.question
        assert "state a year" not in q.question
        assert q.answer in (min(years), max(years))

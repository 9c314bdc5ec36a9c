"""Every source with records is evidence (B.1): a label/value table is named by a value a
reader finds under its label, and lookups deal their records out one source at a time."""

from __future__ import annotations

import random
import re
from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from treeagent.bench import tasks
from treeagent.bench.lookups import by_source_in_turn
from treeagent.bench.sources import records_from_text

# a WebSRC auto page's specification table: a title row above label/value rows
SPECS = ('<table><tr><th colspan="2">Performance</th></tr>'
         "<tr><td>Base engine size</td><td>2.5 liters</td></tr>"
         "<tr><td>Horsepower</td><td>203 hp</td></tr>"
         "<tr><td>Torque</td><td>184 lb-ft.</td></tr></table>")


def test_a_label_value_table_under_a_title_is_asked_by_a_value_under_its_label():
    (rec,) = records_from_text("html", "websrc", SPECS, unit_id="html/websrc/a#/table")
    assert rec.kind == "specification table" and rec.description == "2.5 liters"
    asked = {q.question for seed in range(10)
             if (q := tasks.generate("one_field", [rec], random.Random(seed))) is not None}
    assert asked, "no lookup of the table"
    for t in asked:
        assert re.fullmatch(r'What is the (horsepower|torque) of the table with base engine '
                            r'size "2\.5 liters"\? Answer with the value only\.', t), t


def _rows(source: str, n: int) -> list:
    page = ("<table><tr><th>Name</th><th>Height</th><th>Country</th></tr>"
            + "".join(f"<tr><td>{source} peak {i}</td><td>{1000 + i}</td><td>Land {i}</td></tr>"
                      for i in range(n)) + "</table>")
    return records_from_text("html", source, page, unit_id=f"html/{source}/p#/table")


def test_a_source_with_few_anchor_records_is_asked_as_often_as_one_with_many():
    recs = _rows("websrc", 2) + _rows("wikitables", 40)
    first = Counter(tasks.generate("one_field", recs, random.Random(seed)).record_ids[0]
                    .split("/")[1] for seed in range(200))
    assert 70 <= first["websrc"] <= 130, first  # drawn by source first: about half


@given(st.lists(st.tuples(st.sampled_from("abcde"), st.integers()), max_size=60),
       st.integers(0, 2**32))
def test_sources_are_dealt_in_turn(items, seed):
    got = by_source_in_turn(items, lambda x: x[0], random.Random(seed))
    assert sorted(got) == sorted(items)
    total = Counter(s for s, _ in items)
    seen: Counter = Counter()
    for s, _ in got:
        seen[s] += 1
        # no source is dealt a second item while another still waits for its turn
        assert all(seen[s] <= seen[o] + 1 or seen[o] == total[o] for o in total), (got, s)

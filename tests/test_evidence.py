"""Evidence integrity (treeagent.pipeline.evidence): locating evidence records in a composed
context and counting the sections each spans, for Flat and TreeAgent sectioning."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import duckdb
from hypothesis import given
from hypothesis import strategies as st

from treeagent.bench.contexts import compose
from treeagent.bench.sources import records_from_text
from treeagent.pipeline import evidence

SAMPLE = Path(__file__).resolve().parent.parent / "src/treeagent/samples/bench/json"
USGS = SAMPLE / "usgs/libcomcat__dataframes_association__5.json"
CROSSREF = SAMPLE / "crossref/habanero__test_works_sample__0.json"


def _brute(bounds, text, start, end):
    return sum(1 for s, e in bounds
               if any(not text[i].isspace() for i in range(max(s, start), min(e, end))))


@given(st.text(alphabet="ab \n", min_size=1, max_size=60), st.data())
def test_sections_spanned_counts_sections_holding_nonblank_characters(text, data):
    cuts = sorted(data.draw(st.sets(st.integers(1, len(text) - 1), max_size=6))) \
        if len(text) > 1 else []
    edges = [0, *cuts, len(text)]
    bounds = list(zip(edges, edges[1:]))
    start = data.draw(st.integers(0, len(text) - 1))
    end = data.draw(st.integers(start + 1, len(text)))
    assert evidence.sections_spanned(bounds, text, start, end) == _brute(bounds, text, start,
                                                                         end)


def test_owning_unit_prefers_the_longest_unit_id_and_first_occurrence():
    units = ["html/a.html#/x", "html/a.html#/x/y", "json/b.json", "html/a.html#/x/y"]
    assert evidence.owning_unit("html/a.html#/x/y#/tr", units) == 1
    assert evidence.owning_unit("html/a.html#/x#/tr", units) == 0
    assert evidence.owning_unit("json/b.json#$.a[0]", units) == 2
    assert evidence.owning_unit("json/c.json#$.a[0]", units) is None


def _json_at(value, path: str):
    """Follow a ``$.key[3]`` path (independent of the parsers under test)."""
    import re

    for key, index in re.findall(r"\.([A-Za-z_][\w]*)|\[(\d+)\]", path.removeprefix("$")):
        value = value[key] if key else value[int(index)]
    return value


def _example(unit_files: list[Path], record_ids: list[str]):
    units = {f"json/x/{p.name}": ("usgs" if "libcomcat" in p.name else "crossref",
                                  p.read_text(encoding="utf-8")) for p in unit_files}
    unit_ids = list(units)
    context = compose("json", [units[u][1] for u in unit_ids])
    ex = SimpleNamespace(id="ex1", format="json", task="conditional_count", length=8192,
                         context=context, spec={"scope": {"kind": "earthquake event"}})
    return ex, unit_ids, units


def test_locate_finds_each_record_span_in_the_composed_context():
    ex, unit_ids, units = _example([CROSSREF, USGS], [])
    uid = unit_ids[1]
    recs = records_from_text("json", "usgs", units[uid][1], unit_id=uid)
    assert len(recs) >= 3
    located = evidence.locate("json", ex.context, unit_ids, [r.id for r in recs], units)
    raw = json.loads(units[uid][1])
    for rec, loc in zip(recs, located):
        assert loc.start is not None
        assert json.loads(ex.context[loc.start:loc.end]) == _json_at(raw, rec.path)
    missing = evidence.locate("json", ex.context, unit_ids, [uid + "#$.nowhere"], units)
    assert missing[0].start is None


def test_flat_splits_records_that_treeagent_keeps_whole(qwen3):
    ex, unit_ids, units = _example([CROSSREF, USGS], [])
    uid = unit_ids[1]
    ids = [r.id for r in records_from_text("json", "usgs", units[uid][1], unit_id=uid)]
    records, rows = evidence.example_rows(ex, unit_ids, ids, units,
                                          [("memagent", "qwen3", qwen3)],
                                          ["flat", "treeagent"], 300)
    by = {r["method"]: r for r in rows}
    assert by["flat"]["records"] == by["treeagent"]["records"] == len(ids)
    assert by["flat"]["located"] == len(ids) and by["flat"]["aggregation"] is True
    # Flat cuts at every 300 tokens regardless of structure; Algorithm 1 at B* keeps every
    # record that fits its budget in one section
    assert by["flat"]["split"] >= 1 and by["treeagent"]["split"] == 0
    assert by["treeagent"]["budget"] >= 300 == by["flat"]["budget"]
    assert by["flat"]["split_share"] == by["flat"]["split"] / len(ids)
    assert by["flat"]["in_scope_split_share"] == by["flat"]["split_share"]
    assert all(r["whole"] == (r["sections_spanned"] == 1) for r in records)


def test_written_rows_are_queryable_in_duckdb(tmp_path, qwen3):
    ex, unit_ids, units = _example([USGS], [])
    ids = [r.id for r in records_from_text("json", "usgs", units[unit_ids[0]][1],
                                           unit_id=unit_ids[0])]
    records, rows = evidence.example_rows(ex, unit_ids, ids, units,
                                          [("memagent", "qwen3", qwen3)],
                                          ["flat", "tree", "treeagent"], 300)
    evidence.write_rows(records, evidence.RECORD_COLUMNS, tmp_path / evidence.RECORDS_FILE)
    evidence.write_rows(rows, evidence.EXAMPLE_COLUMNS, tmp_path / evidence.EXAMPLES_FILE)
    got = duckdb.sql(f"SELECT method, sum(CASE WHEN NOT whole THEN 1 ELSE 0 END) AS split "
                     f"FROM '{tmp_path / evidence.RECORDS_FILE}' GROUP BY method "
                     f"ORDER BY method").fetchall()
    assert dict(got) == {r["method"]: r["split"] for r in rows}
    assert dict(got)["tree"] == dict(got)["treeagent"]  # same sections at B*
    first = (tmp_path / evidence.RECORDS_FILE).read_bytes()
    evidence.write_rows(records, evidence.RECORD_COLUMNS, tmp_path / evidence.RECORDS_FILE)
    assert (tmp_path / evidence.RECORDS_FILE).read_bytes() == first


def test_javascript_records_named_relative_to_the_binding_value_are_located():
    unit = ("const rivers = [\n  { name: 'Danube', lengthKm: 2850 },\n"
            "  { name: 'Rhine', lengthKm: 1233 },\n];")
    uid = "javascript/treeagent/catalog.js#rivers@L5"
    recs = [r for r in records_from_text("javascript", "treeagent", unit, unit_id=uid)
            if r.kind != "object"]  # the entries (each object literal is a record too)
    assert [r.path for r in recs][:2] == ["$[0]", "$[1]"]  # relative to the value
    context = compose("javascript", [unit])
    located = evidence.locate("javascript", context, [uid], [r.id for r in recs],
                              {uid: ("treeagent", unit)})
    assert [context[x.start:x.end] for x in located] == [
        "{ name: 'Danube', lengthKm: 2850 }", "{ name: 'Rhine', lengthKm: 1233 }"]

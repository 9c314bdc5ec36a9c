"""Variety in every cell (B.1): no repeated (question, answer) within a format and task
across lengths (construction deals lookups out over the lengths; the examples gate
rejects any repeat left), caps on one unit's and one count value's share of a cell, and
every shortfall named per cell in the inventory."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from test_bench_tasks import extract, make_units
from treeagent.bench import build, examples_gate, variety


def _row(i: int, length: int, question: str, answer: str, bad: str = "") -> dict:
    return {"id": f"json-one_field-{length}-{i}", "format": "json", "task": "one_field",
            "length": length, "question": question, "answer": answer, "check_answer": bad}


def test_the_gate_rejects_a_question_and_answer_asked_again_at_another_length():
    df = pd.DataFrame([
        _row(0, 2048, "What is the place of X?", '"Town"'),
        _row(1, 4096, "What is the place of X?", '"Town"'),  # the same at another length
        _row(2, 4096, "What is the place of X?", '"City"'),  # another answer: a new pair
        _row(3, 4096, "What is the place of Y?", '"Town"', bad="spec fails"),
        _row(4, 8192, "What is the place of Y?", '"Town"'),  # the earlier one was rejected
    ])
    assert examples_gate.repeats(df) == ["", "json-one_field-2048-0", "", "", ""]


def test_caps_hold_one_unit_and_one_count_value_to_their_share_of_a_cell():
    assert [variety.most(0.1, n) for n in (1, 3, 10, 25, 50)] == [1, 1, 1, 2, 5]
    assert [variety.most(0.5, n) for n in (1, 3, 4, 50)] == [1, 1, 2, 25]
    caps = variety.Caps(per_cell=3)
    assert caps.allows("one_field", 2048, ["u1"], "a")
    caps.take("one_field", 2048, ["u1"], "a")
    assert not caps.allows("one_field", 2048, ["u1", "u2"], "b")  # u1 has its one
    assert caps.allows("one_field", 4096, ["u1"], "a")  # another cell
    caps.take("conditional_count", 2048, ["u2"], 2)
    # 50 per cell: a unit gets 4, so that it stays within 10% of the 40 or more rows kept
    # when the gate rejects up to a tenth of the cell afterwards
    big = variety.Caps(per_cell=50)
    for _ in range(4):
        assert big.allows("one_field", 2048, ["u1"], "a")
        big.take("one_field", 2048, ["u1"], "a")
    assert not big.allows("one_field", 2048, ["u1"], "a")
    assert 4 <= variety.most(0.1, 40)
    assert not caps.allows("conditional_count", 2048, ["u3"], 2)  # 2 already answers one
    assert caps.allows("conditional_count", 2048, ["u3"], 3)


def test_shortfalls_name_each_cell_over_a_cap_and_each_unused_source():
    rows = [{"task": "conditional_count", "bucket": "8K", "question": f"Q{i}",
             "answer": "2", "source_ids": ["json/usgs/a"]} for i in range(3)]
    cells = variety.by_cell(rows)
    assert cells["conditional_count@8K"] == {
        "kept": 3, "distinct": 3, "top_unit": "json/usgs/a", "top_unit_examples": 3,
        "top_count": 2, "top_count_examples": 3}
    lines = variety.shortfalls("json", cells, 1, ["gbif", "usgs"], ["usgs"])
    assert lines == [
        "json: 1 repeated (question, answer) rejected by the gate",
        "json conditional_count@8K: one unit supplies 3 of 3 examples (json/usgs/a)",
        "json conditional_count@8K: count 2 answers 3 of 3",
        "json: sources with records never used as evidence: gbif"]


@pytest.fixture(scope="module")
def two_lengths(tmp_path_factory):
    out = tmp_path_factory.mktemp("variety")
    params = build.BuildParams(formats=("json",), lengths=(2048, 4096), per_cell=2,
                               questions_per_context=2, tasks=("one_field", "two_records"))
    return build.build(params, {"json": make_units("json", 60, 9)}, out, extract=extract)


def test_no_lookup_is_asked_at_two_lengths(two_lengths):
    rows = two_lengths.examples["json"]
    assert {r["bucket"] for r in rows} == {"demo-2K", "demo-4K"}
    pairs = [(r["task"], r["question"], r["answer"]) for r in rows]
    assert len(set(pairs)) == len(pairs), pairs


def test_the_inventory_reports_variety_per_cell(two_lengths):
    v = two_lengths.inventory["variety"]["json"]
    assert set(v["cells"]) == {"one_field@demo-2K", "one_field@demo-4K", "two_records@demo-2K",
                               "two_records@demo-4K"}
    for cell, f in v["cells"].items():
        kept = [r for r in two_lengths.examples["json"]
                if f"{r['task']}@{r['bucket']}" == cell]
        assert f["kept"] == len(kept)
        assert f["distinct"] == len({(r["question"], r["answer"]) for r in kept})
    assert isinstance(v["shortfalls"], list)
    assert json.dumps(v)  # plain values (written to inventory.json)


def test_a_build_names_its_empty_cells_and_variety_shortfalls():
    inv = {"counts": {"html": {"conditional_count": {"demo-4K": 0}, "one_field": {"demo-4K": 1}}},
           "variety": {"html": {"shortfalls": ["html one_field@demo-4K: count 2 answers 2 of 2"]}}}
    lines = build.shortfall_lines(build.BuildResult(inventory=inv))
    assert lines[0].startswith("empty: html: 1 of 2 requested cells empty "
                               "(conditional_count@demo-4K)"), lines
    assert lines[1:] == ["variety: html one_field@demo-4K: count 2 answers 2 of 2"]
    assert build.shortfall_lines(build.BuildResult(inventory={"counts": {}})) == []


def test_aggregations_kept_at_two_lengths_never_repeat_and_a_repeat_is_rejected_by_name(
        tmp_path):
    params = build.BuildParams(formats=("json",), lengths=(2048, 4096), per_cell=2,
                               questions_per_context=2,
                               tasks=("conditional_count", "most_frequent", "numeric_extremum"))
    result = build.build(params, {"json": make_units("json", 60, 9)}, tmp_path, extract=extract)
    rows = result.examples["json"]
    assert {r["bucket"] for r in rows} == {"demo-2K", "demo-4K"}
    pairs = {(r["task"], r["question"], r["answer"]): r["id"] for r in rows}
    assert len(pairs) == len(rows)
    repeated = [r for r in result.rejections if r["reason"] == "repeated"]
    kept = {r["id"] for r in rows}
    for r in repeated:  # each names the kept example it repeats
        assert r["detail"].rsplit(" ", 1)[1] in kept, r
    assert result.inventory["variety"]["json"]["repeated"] == len(repeated)

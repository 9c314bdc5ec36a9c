"""Independent validation (B.1): rejections carry the right reason; the GX suite names
the expectation a corrupted table fails."""

from __future__ import annotations

import json
import random

import pandas as pd
import pytest

from test_bench_tasks import KIND, extract, make_units, render
from treeagent.bench import contexts, examples_gate, io, tasks, validate


def _scope(records, name):
    """The construction's scope of ``name`` over ``records`` (as a build stores it)."""
    return next(a for a in tasks.aggregates(records) if a.name == name).scope()


def _setup(fmt="json", units=None):
    units = units or make_units(fmt, 4, 11, (4, 5))
    pieces = [contexts.piece(fmt, u.text) for u in units]
    text = contexts.compose(fmt, pieces)
    table = {u.id: (u.source, validate.sha256(p)) for u, p in zip(units, pieces)}
    ctx = validate.check_context(fmt, text, [u.id for u in units], table, extract, None)
    return units, text, ctx


def _row(spec, answer, question="What is it? Answer with the value only.", task="one_field",
         units=None, tokens=2000, length=2048):
    return {"id": "x", "format": "json", "task": task, "length": length,
            "question": question, "spec": json.dumps(spec), "answer": json.dumps(answer),
            "source_ids": [u.id for u in units or []],
            "tokens": json.dumps({"qwen3": tokens, "qwen2.5": tokens})}


def _failed(checks):
    return {k: v for k, v in checks.items() if v}


def test_a_valid_lookup_passes_every_check():
    units, _, ctx = _setup()
    rec = units[0].records[0]
    q = tasks.generate("one_field", [rec], random.Random(0))
    checks = validate.check_example(_row(q.spec, q.answer, q.question, units=units[:1]), ctx, 0.05)
    assert _failed(checks) == {}


def test_duplicated_description_is_rejected_as_not_unique():
    base = make_units("json", 2, 5, (3, 3))
    events = json.loads(base[0].text)["events"]
    clone = make_units("json", 1, 6, (3, 3))[0]
    clone.id = "json/test/clone"
    clone.text = render("json", [dict(events[0], magnitude=9.9)])  # same title, other value
    units, _, ctx = _setup(units=[base[0], clone])
    assert ctx.errors == {}
    spec = {"op": "lookup", "kind": KIND, "record": events[0]["title"], "fields": ["magnitude"],
            "shape": "value"}
    checks = validate.check_example(_row(spec, events[0]["magnitude"], units=units), ctx, 0.05)
    assert "occurs 2 times" in checks["check_unique"]


def test_most_frequent_tie_and_extremum_tie_are_rejected():
    units, _, ctx = _setup()
    counts = {}
    for r in ctx.records:
        counts.setdefault(tasks.norm(r.fields["status"]), 0)
        counts[tasks.norm(r.fields["status"])] += 1
    k = len(counts)  # asking for every value leaves no (k+1)-th: not a unique ranking
    spec = {"op": "most_frequent", "kind": KIND, "field": "status", "k": k,
            "scope": _scope(ctx.records, "status")}
    checks = validate.check_example(_row(spec, list(counts), task="most_frequent", units=units),
                                    ctx, 0.05)
    assert "tie or too few" in checks["check_unique"]
    recs = [validate.Record(id=f"#{i}", unit_id="", kind="k", description=f"d{i}",
                            fields={"size": s}, select=("items", "*"), keys={"size": ("size",)})
            for i, s in enumerate([3, 7, 7])]
    with pytest.raises(validate.Invalid, match="attained 2 times") as exc:
        validate.execute({"op": "extremum", "kind": "k", "field": "size", "fn": "max",
                          "scope": _scope(recs, "size")}, recs)
    assert exc.value.check == "unique"


def test_wrong_answer_bad_sources_leaky_question_and_length_are_caught():
    units, _, ctx = _setup()
    rec = units[1].records[0]
    spec = {"op": "lookup", "kind": KIND, "record": rec.description, "fields": ["depth"],
            "shape": "value"}
    bad = validate.check_example(
        _row(spec, -1, "What is the depth at $.events[0]?", units=units[:1], tokens=3000), ctx, 0.05)
    assert "spec gives" in bad["check_answer"]
    assert "evidence in" in bad["check_sources"]
    assert "structural path" in bad["check_question"]
    assert "outside [1946, 2048]" in bad["check_length"]


def test_changed_unit_text_and_broken_syntax_are_caught():
    units, text, _ = _setup()
    table = {u.id: (u.source, validate.sha256(contexts.piece("json", u.text))) for u in units}
    ids = [u.id for u in units]
    edited = text.replace('"depth": ', '"depth":  ', 1)
    assert "differs" in validate.check_context("json", edited, ids, table, extract, None
                                               ).errors["units"]
    assert "re-parse failed" in validate.check_context("json", text[:-3], ids, table, extract,
                                                       None).errors["parse"]
    assert "recipe lists" in validate.check_context("json", text, ids[:-1], table, extract,
                                                    None).errors["units"]


def test_suite_fails_on_a_corrupted_table_naming_the_expectation(tmp_path):
    units, _, ctx = _setup()
    rec = units[0].records[0]
    q = tasks.generate("one_field", [rec], random.Random(0))
    good = _row(q.spec, q.answer, q.question, units=units[:1])
    good.update(validate.check_example(good, ctx, 0.05))
    good.update({"unit_ids": [u.id for u in units], "content_hash": "0" * 64,
                 "context_hash": "0" * 64, "bucket": "demo-2K", "family": 0})
    # each row its own question: a repeated (question, answer) is rejected by the gate
    rows = [dict(good, id=f"ok{i}", question=good["question"] + " ?" * i) for i in range(3)]
    assert examples_gate.run(pd.DataFrame(rows)).success
    rows.append(dict(good, id="ok0"))  # duplicate id
    rows.append(dict(good, id="long", question=good["question"] + " (long)",
                     tokens=json.dumps({"qwen3": 2100, "qwen2.5": 2100})))
    rows.append(dict(good, id="leak", question="What is $.events[2].depth?"))
    rows.append(dict(good, id="bad", question=good["question"] + " (bad)",
                     check_answer="spec gives 3, stored 4"))
    res = examples_gate.run(pd.DataFrame(rows))
    assert not res.success
    assert "expect_column_values_to_be_unique(id)" in res.failed[3]
    assert any("a_to_be_greater_than_b(length,tokens_max)" in x for x in res.failed[4])
    assert any("not_match_regex(question)" in x for x in res.failed[5])
    assert res.failed[6] == ["expect_column_values_to_be_in_set(check_answer)"]
    assert 0 not in res.failed or res.failed[0] == ["expect_column_values_to_be_unique(id)"]
    rej = examples_gate.rejections(pd.DataFrame(rows), res)
    assert {r["id"]: r["reason"] for r in rej}["bad"] == "answer"
    # the stored table (no check columns) is held to the table-level expectations
    io.write_examples([{k: v for k, v in r.items() if not k.startswith("check_")} for r in rows],
                      tmp_path / "e.parquet", ["qwen3", "qwen2.5"])
    stored = pd.read_parquet(tmp_path / "e.parquet")
    assert set(examples_gate.run(stored).failed) == {0, 3, 4, 5}

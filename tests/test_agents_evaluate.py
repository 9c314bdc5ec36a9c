"""evaluate(): one scheduler run of (agent, method) over examples -> scored-row dicts."""

from __future__ import annotations

import json

from helpers import CharTokenizer
from test_agents_double import TINY_JSON, ScriptedEngine
from treeagent.agents.evaluate import evaluate
from treeagent.bench.model import Example
from treeagent.llm.cache import CallCache
from treeagent.report.schema import SCORED_SCHEMA, score_rows


def _example(i: int, context: str = TINY_JSON, answer=30) -> Example:
    return Example(
        id=f"ex-{i}", format="json", task="numeric_extremum", length=8192,
        question=f"Question {i}: what is the largest value in b?", answer=answer, spec={},
        source_ids=[], tokens={}, context=context, content_hash=f"h{i}",
    )


def _script(r):
    prompt = r.messages[0].content
    if "Question 1:" in prompt:
        return None  # every call of example 1 is unavailable
    return "\\boxed{30}" if r.kind == "answer" else "b holds 30"


def test_rows_have_the_scored_schema_and_an_unavailable_example_scores_zero(tmp_path):
    examples = [_example(0), _example(1), _example(2, context="{broken"), _example(3)]
    engine = ScriptedEngine(_script)
    trace = tmp_path / "trace.jsonl"
    rows = evaluate(examples, agent="memagent", method="treeagent", engine=engine,
                    base_budget=14, tokenizer=CharTokenizer(), concurrency=2, trace=trace)
    assert [r["example_id"] for r in rows] == ["ex-0", "ex-1", "ex-2", "ex-3"]
    wanted = set(SCORED_SCHEMA.names) - {"score"}
    assert all(wanted <= set(r) for r in rows)
    r0 = rows[0]
    assert (r0["dataset"], r0["task"], r0["length"], r0["agent"], r0["method"]) == (
        "json", "numeric_extremum", 8192, "memagent", "treeagent")
    assert (r0["model"], r0["model_revision"], r0["reference"]) == ("scripted-double", "r0", "30")
    assert (r0["calls"], r0["sections"], r0["flat_sections"]) == (5, 4, 5)
    assert r0["input_tokens"] > 0 and r0["prediction"] == "\\boxed{30}" and r0["error"] is None
    assert rows[1]["prediction"] is None and "unavailable" in rows[1]["error"]
    assert rows[2]["prediction"] is None and "ParseError" in rows[2]["error"]
    scores = score_rows(rows).column("score").to_pylist()
    assert scores == [1.0, 0.0, 0.0, 1.0]
    lines = [json.loads(x) for x in trace.read_text().splitlines()]
    assert {x["example_id"] for x in lines} == {"ex-0", "ex-1", "ex-3"}
    assert all(len(x["prompt_sha256"]) == 64 for x in lines)


def test_a_rerun_is_served_from_the_cache(tmp_path):
    cache = tmp_path / "calls.sqlite"
    first = ScriptedEngine(_script)
    rows = evaluate([_example(0), _example(3)], agent="rememr1", method="flat", engine=first,
                    base_budget=14, tokenizer=CharTokenizer(), cache=cache)
    second = ScriptedEngine(_script)
    again = evaluate([_example(0), _example(3)], agent="rememr1", method="flat", engine=second,
                     base_budget=14, tokenizer=CharTokenizer(), cache=cache)
    assert len(first.requests) == 12 and second.requests == []
    assert [r["prediction"] for r in again] == [r["prediction"] for r in rows]
    with CallCache(cache) as store:
        assert len(store) == 12

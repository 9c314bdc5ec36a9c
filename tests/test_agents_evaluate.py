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


def test_overflow_cuts_the_section_text_never_path_or_spans_and_is_counted(tmp_path):
    """A TreeAgent prompt over the request limit loses the end of s_t; a_t and r_t stay
    whole; the cut is in the row, the details and the trace line of that call."""
    from helpers import CharTokenizer
    from test_agents_double import TINY_JSON
    from treeagent.agents import drive, program
    from treeagent.agents.common import CHAT_OVERHEAD, CUT_MARK

    def script(r):
        return {0: "x is alpha.", 1: "y is beta.", 2: "b holds 10, 20, 30."}.get(
            sum(q.kind == "memory" for q in engine.requests) - 1, "\\boxed{30}")

    engine = ScriptedEngine(script)
    whole = drive(program("memagent", "treeagent", TINY_JSON, "json", "beta values?",
                          CharTokenizer(), base_budget=14, options={"max_new_tokens": 4}),
                  engine.respond)
    assert whole.details["clipped"] == 0
    last = engine.prompt(3)  # t = 3: '"c":"gamma"', its path and two spans
    window = len(last) + CHAT_OVERHEAD + 4 - 6  # 6 tokens too many
    engine = ScriptedEngine(script)
    result = drive(program("memagent", "treeagent", TINY_JSON, "json", "beta values?",
                           CharTokenizer(), base_budget=14, context_window=window,
                           options={"max_new_tokens": 4}), engine.respond)
    cut = engine.prompt(3)
    assert CUT_MARK in cut and '"c":"gamma"' not in cut
    assert "\n\nPath: $.c\n\nRetrieved from earlier memory:\n- y is beta.\n</section>" in cut
    # the cut mark is longer than this 11-token section: all of s_t goes, then the memory
    assert result.details["clipped"] == 2
    assert result.details["clips"] == [
        {"request": 3, "template": "memagent_memory", "field": "section", "tokens": 11,
         "kept": 0, "t": 3},
        {"request": 3, "template": "memagent_memory", "field": "memory", "tokens": 19,
         "kept": 0}]
    call = result.trace[3]
    assert [c["field"] for c in call["clipped"]] == ["section", "memory"]
    assert call["step"]["t"] == 3 and call["step"]["path"] == "$.c"
    assert call["step"]["links"] == [1, 2]
    assert [(s["source"], s["text"]) for s in call["step"]["spans"]] == [(1, "y is beta.")]
    assert call["messages"] == [{"role": "user", "content": cut}]  # the prompt itself
    assert "clipped" not in result.trace[2] and "step" not in result.trace[4]


def test_rows_count_clips():
    ex = _example(0)
    rows = evaluate([ex], agent="memagent", method="flat", engine=ScriptedEngine(_script),
                    base_budget=14, tokenizer=CharTokenizer(), context_window=400,
                    options={"max_new_tokens": 4})
    assert rows[0]["clipped"] > 0
    rows = evaluate([ex], agent="memagent", method="flat", engine=ScriptedEngine(_script),
                    base_budget=14, tokenizer=CharTokenizer(), options={"max_new_tokens": 4})
    assert rows[0]["clipped"] == 0


def test_the_paper_preset_runs_all_four_methods():
    """Table 1 has a row per method: the paper preset evaluates Flat, Tree, Tree+Path
    and TreeAgent for every agent (the demo too, for MemAgent)."""
    from treeagent.pipeline import config

    paper = config.validate(config.preset("paper"))
    assert paper.methods == ["flat", "tree", "tree+path", "treeagent"]
    assert config.validate(config.preset("demo")).methods == paper.methods

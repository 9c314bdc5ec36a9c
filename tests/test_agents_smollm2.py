"""End to end with the real SmolLM2-135M-Instruct (transformers, CPU): every agent x
method on a tiny document, all 16 programs batched through one scheduler run; then
evaluate() with a call cache and a rerun served from it.

Kept small for 2 shared cores: 2 sections per mode, at most 4 new tokens per call,
MemReread with width 1, and the dtype params.yaml ships (``auto``: bf16 where the CPU
multiplies bf16 in hardware, 2.5x faster here than fp32).
"""

from __future__ import annotations

import asyncio

import pytest

from treeagent.agents import AGENTS, METHODS, Result, program, with_calls
from treeagent.agents.evaluate import evaluate, model_context_window, resolve_tokenizer
from treeagent.bench.model import Example
from treeagent.llm import make_engine, run_programs

DOC = ('{"stations":[{"id":"A1","city":"Oslo","temp":-3},'
       '{"id":"B2","city":"Lima","temp":19}],"unit":"C"}')
QUESTION = "What is the temperature at the station in Lima?"
BUDGET = 24  # SmolLM2 tokens: Flat 2 sections; B* = 32: ($.stations, [0, 1]) and $.unit
OPTIONS = {"max_new_tokens": 4, "width": 1}


@pytest.fixture(scope="module")
def smollm2():
    engine = make_engine("transformers", max_batch=16, dtype="auto")
    yield engine
    asyncio.run(engine.aclose())


def test_every_agent_and_method_end_to_end(smollm2):
    tokenizer = resolve_tokenizer(smollm2)
    window = model_context_window(smollm2)
    assert window == 8192
    programs = [
        (f"{agent}/{method}",
         program(agent, method, DOC, "json", QUESTION, tokenizer, base_budget=BUDGET,
                 task="one_field", context_window=window, options=OPTIONS))
        for agent in AGENTS for method in METHODS
    ]
    outcomes = run_programs(programs, smollm2, progress=False)
    assert len(outcomes) == 16
    for name, outcome in outcomes.items():
        agent, method = name.split("/")
        assert outcome.ok, (name, outcome.error)
        assert isinstance(outcome.result, Result)
        result = with_calls(outcome.result, outcome.trace)  # the scheduler records calls
        assert isinstance(result, Result)
        assert isinstance(result.prediction, str), (name, result.error)
        assert (result.total_sections, result.flat_sections) == (2, 2)
        assert result.budget == (BUDGET if method == "flat" else 32)
        assert result.calls == len(outcome.trace) >= 3
        assert all(c.input_tokens > 0 and 0 < c.output_tokens <= 4 for c in outcome.trace)
        assert result.input_tokens == sum(c.input_tokens for c in outcome.trace)
        assert result.details["request_limit"] == 8192
        kinds = [c["kind"] for c in result.trace]
        assert kinds[-1] == "answer"
        if agent in ("memagent", "rememr1"):
            assert kinds == ["memory", "memory", "answer"] and result.sections == 2
        if agent == "infmem":
            # at most 2T + 1 replies (T = 2), each one or two calls: two-stage thinking
            # continues a reply whose stage 1 used its whole budget (plan.py bounds)
            assert kinds[0] == "controller" and result.calls <= 2 * 5
        if agent == "memreread":
            assert kinds[:3] == ["memory", "memory", "controller"] and result.calls <= 8
        steps = result.details["steps"]
        if method == "treeagent":
            assert steps[1]["links"] == [0] and steps[1]["path"] == "$.unit"
        elif method == "tree+path":
            assert steps[0]["path"] == "($.stations, [0, 1])"
        else:
            assert all(s["path"] is None and s["links"] == [] for s in steps)


def test_evaluate_with_the_real_engine_resumes_from_its_cache(smollm2, tmp_path):
    example = Example(
        id="lima", format="json", task="one_field", length=8192, question=QUESTION, answer=19,
        spec={}, source_ids=[], tokens={}, context=DOC, content_hash="x",
    )
    cache = tmp_path / "calls.sqlite"
    kwargs = dict(agent="memagent", method="treeagent", engine=smollm2, cache=cache,
                  base_budget=BUDGET, options={"max_new_tokens": 4})
    first = evaluate([example], **kwargs)
    again = evaluate([example], **kwargs)
    assert first[0]["model"] == "SmolLM2-135M-Instruct" and first[0]["calls"] == 3
    assert first[0]["prediction"] is not None and first[0]["flat_sections"] == 2
    assert again[0]["prediction"] == first[0]["prediction"]
    assert again[0]["input_tokens"] == first[0]["input_tokens"]

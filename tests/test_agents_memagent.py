"""MemAgent control flow, memory convention, limits and unavailable responses; the
shared request fitting (Table 2, C.3) and the task instruction."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import CharTokenizer
from test_agents_double import TINY_JSON, ScriptedEngine
from treeagent.agents import drive, program
from treeagent.agents.common import (
    CHAT_OVERHEAD,
    CUT_MARK,
    MIN_NEW_TOKENS,
    NO_MEMORY,
    Calls,
    instruction_name,
    strip_think,
)
from treeagent.agents.templates import Prompts
from treeagent.scoring import TASKS

TOK = CharTokenizer()
Q = "What does b hold?"


def _run(engine, method="tree", **kw):
    return drive(program("memagent", method, TINY_JSON, "json", Q, TOK, base_budget=14, **kw),
                 engine.respond)


def test_memory_is_carried_from_reply_to_next_prompt_and_answer():
    replies = ["m0", "<think>reasoning</think>m1 note", "<think>a</think>x</think> m2", "m3",
               "\\boxed{10, 20, 30}"]
    engine = ScriptedEngine(replies)
    result = _run(engine, task="four_fields")
    assert engine.kinds() == ["memory"] * 4 + ["answer"]
    assert f"<memory>\n{NO_MEMORY}\n</memory>" in engine.prompt(0)
    assert "<memory>\nm0\n</memory>" in engine.prompt(1)
    assert "<memory>\nm1 note\n</memory>" in engine.prompt(2)  # think removed
    assert "<memory>\nm2\n</memory>" in engine.prompt(3)  # text after the last </think>
    assert "<memory>\nm3\n</memory>" in engine.prompt(4)
    assert '<section>\n"b":[10,20,30]\n</section>' in engine.prompt(2)
    assert engine.prompt(0).rstrip().endswith("Updated memory:")
    assert "\\boxed{}" in engine.prompt(4)
    assert result.prediction == "\\boxed{10, 20, 30}"
    assert (result.calls, result.sections, result.total_sections, result.flat_sections) == (5, 4, 4, 5)
    assert result.details["steps"][3] == {"pass": "read", "t": 3, "path": None, "links": [],
                                         "spans": [], "request": 3}


def test_requests_are_greedy_seeded_and_use_table2_limits():
    engine = ScriptedEngine(lambda r: "ok")
    _run(engine)
    for r in engine.requests:
        s = r.sampling
        assert (s.temperature, s.top_p, s.seed, s.max_tokens) == (0.0, 1.0, 42, 1024)
        assert len(r.messages) == 1 and r.messages[0].role == "user"


def test_problem_has_the_question_and_only_an_answer_instruction():
    engine = ScriptedEngine(lambda r: "ok")
    _run(engine, task="two_records")
    problem = engine.prompt(0).split("<problem>\n")[1].split("\n</problem>")[0]
    assert problem.startswith(Q + "\n\n")
    instruction = problem[len(Q):].lower()
    assert "order" in instruction
    for leak in ("$", "path", "schema", "index", "json", "location", "section"):
        assert leak not in instruction


@pytest.mark.parametrize("task", TASKS)
def test_every_task_has_an_instruction(task):
    name = instruction_name(task)
    expected = {"one_field": "single", "conditional_count": "single",
                "numeric_extremum": "single", "most_frequent": "unordered"}.get(task, "ordered")
    assert name == f"instruction_{expected}"
    with pytest.raises(ValueError, match="unknown task"):
        instruction_name("nine_fields")


def test_unavailable_response_ends_the_example_with_no_prediction():
    engine = ScriptedEngine(["m0", None])
    result = _run(engine)
    assert result.prediction is None and result.unavailable
    assert "memory call unavailable" in result.error
    assert result.calls == 2 and result.trace[1]["reply"] is None


def test_unavailable_final_answer_is_no_prediction():
    result = _run(ScriptedEngine(["a", "b", "c", "d", None]))
    assert result.prediction is None and result.calls == 5


def test_empty_reply_becomes_an_empty_memory():
    engine = ScriptedEngine(["", "m1", "m2", "m3", "\\boxed{x}"])
    _run(engine)
    assert "<memory>\n\n</memory>" in engine.prompt(1)


def test_request_limit_is_clamped_to_the_context_window():
    engine = ScriptedEngine(lambda r: "ok")
    result = _run(engine, context_window=1800)
    # CharTokenizer: prompt tokens = characters; + 64 reserved for the chat template
    for r in engine.requests:
        n = len(r.messages[0].content) + 64
        assert n + r.sampling.max_tokens <= 1800
        assert r.sampling.max_tokens >= 256
    assert result.details["request_limit"] == 1800


def test_too_long_prompt_cuts_the_section_and_says_so():
    long_doc = '{"k":"' + "word " * 600 + '"}'
    engine = ScriptedEngine(lambda r: "ok")
    result = drive(program("memagent", "tree", long_doc, "json", Q, TOK, base_budget=5000,
                           context_window=1500), engine.respond)
    first = engine.prompt(0)
    assert CUT_MARK in first
    assert len(first) + 64 + engine.requests[0].sampling.max_tokens <= 1500
    assert result.details["clipped"] >= 1
    assert engine.requests[-1].kind == "answer" and CUT_MARK not in engine.prompt(1)


def test_max_new_tokens_caps_every_call():
    engine = ScriptedEngine(lambda r: "ok")
    _run(engine, options={"max_new_tokens": 7})
    assert {r.sampling.max_tokens for r in engine.requests} == {7}


def test_bad_arguments_raise_at_once():
    with pytest.raises(ValueError, match="unknown agent"):
        program("memgpt", "tree", TINY_JSON, "json", Q, TOK)
    with pytest.raises(ValueError, match="unknown method"):
        program("memagent", "trees", TINY_JSON, "json", Q, TOK)
    with pytest.raises(ValueError, match="unknown option.*widht"):
        program("memagent", "tree", TINY_JSON, "json", Q, TOK, options={"widht": 2})
    with pytest.raises(ValueError, match="base budget"):
        program("memagent", "tree", TINY_JSON, "json", Q, TOK, base_budget=0)


def test_strip_think_keeps_text_after_the_last_close_tag():
    assert strip_think("<think>a</think> b </think> c ") == "c"
    assert strip_think("plain") == "plain"


@settings(max_examples=60, deadline=None)
@given(section=st.integers(0, 3000), memory=st.integers(0, 3000), limit=st.integers(1200, 9000),
       max_tokens=st.sampled_from([8, 1024, 8192]))
def test_fitted_requests_never_exceed_the_limit(section, memory, limit, max_tokens):
    calls = Calls(Prompts(), TOK, limit)
    request = calls.request("memagent_memory", "memory", max_tokens, question=Q,
                            memory="m" * memory, section="s" * section)
    prompt = request.messages[0].content
    used = len(prompt) + CHAT_OVERHEAD
    assert used + request.sampling.max_tokens <= limit
    assert request.sampling.max_tokens >= min(max_tokens, MIN_NEW_TOKENS)
    assert (CUT_MARK in prompt) == (calls.clipped > 0)
    if calls.clipped == 0:  # nothing cut: the fields are whole
        assert "s" * section in prompt and "m" * memory in prompt

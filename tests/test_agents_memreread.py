"""MemReread: root pass, decompose / re-read / integrate within width and node budget;
upstream's tag contract (<confirmed> facts, the query rule, the history layout) and
thinking off on every call."""

from __future__ import annotations

import pytest

from helpers import CharTokenizer
from test_agents_double import TINY_JSON, ScriptedEngine
from treeagent.agents import drive, program
from treeagent.agents.memreread import parse_query

TOK = CharTokenizer()
Q = "What does b hold?"
SECTIONS = 4  # TINY_JSON at C = 14 in the tree modes


def _engine(decompose):
    """Decompose replies from ``decompose(i)`` (i-th decompose call); others are tagged."""
    count = {"controller": 0}

    def script(r):
        prompt = r.messages[-1].content
        if r.kind == "controller":
            count["controller"] += 1
            return decompose(count["controller"])
        if "You merge a checked answer" in prompt:
            return f"integrated {count['controller']}"
        if r.kind == "answer" and "<subquestion>" not in prompt and "Put the final" in prompt:
            return "\\boxed{10, 20, 30}"
        if r.kind == "answer":
            return f"sub-answer {count['controller']}"
        return "note"

    return ScriptedEngine(script)


def _run(engine, method="tree", **options):
    return drive(program("memreread", method, TINY_JSON, "json", Q, TOK, base_budget=14,
                         options=options), engine.respond)


def test_memory_suffices_after_the_root_pass():
    engine = _engine(lambda i: "The notes are enough.")
    result = _run(engine)
    assert engine.kinds() == ["memory"] * SECTIONS + ["controller", "answer"]
    assert result.details["nodes"] == 1 and result.details["subquestions"] == [None]
    assert result.prediction == "\\boxed{10, 20, 30}"
    assert "<query_history>\nNO HISTORY\n</query_history>" in engine.prompt(4)
    assert all(r.template_kwargs == {"enable_thinking": False} for r in engine.requests)


def test_node_budget_counts_the_root_so_width_4_budget_4_asks_three():
    engine = _engine(lambda i: f"<query>sub {i}?</query>")
    result = _run(engine)
    kinds = engine.kinds()
    assert kinds.count("controller") == 3 and result.details["nodes"] == 4
    # root pass, then per sub-question: decompose, re-read, sub-answer, integrate
    one = ["controller"] + ["memory"] * SECTIONS + ["answer", "memory"]
    assert kinds == ["memory"] * SECTIONS + one * 3 + ["answer"]
    assert result.calls == SECTIONS + 3 * len(one) + 1
    assert result.sections == SECTIONS  # distinct sections
    passes = {s["pass"] for s in result.details["steps"]}
    assert passes == {"root", "reread1", "reread2", "reread3"}


@pytest.mark.parametrize(("width", "budget", "asked"), [(1, 4, 1), (4, 2, 1), (2, 3, 2), (4, 1, 0)])
def test_width_and_node_budget_bound_the_subquestions(width, budget, asked):
    engine = _engine(lambda i: f"<query>sub {i}?</query>")
    result = _run(engine, width=width, node_budget=budget)
    assert engine.kinds().count("controller") == asked
    assert result.details["nodes"] == 1 + asked


def test_reread_uses_the_subquestion_fresh_memory_and_integrates_its_answer():
    engine = _engine(lambda i: "<query>Which values are in b?</query>" if i == 1 else "")
    _run(engine)
    reread = engine.prompt(SECTIONS + 1)
    assert "<problem>\nWhich values are in b?\n</problem>" in reread
    assert "<memory>\nNo previous memory\n</memory>" in reread
    integrate = next(engine.prompt(i) for i in range(len(engine.requests))
                     if "You merge a checked answer" in engine.prompt(i))
    assert "<subquestion>\nWhich values are in b?\n</subquestion>" in integrate
    assert "<subanswer>\nsub-answer 1\n</subanswer>" in integrate
    assert "<memory>\nnote\n</memory>" in integrate  # the root memory
    second = [engine.prompt(i) for i, r in enumerate(engine.requests) if r.kind == "controller"][1]
    assert "<memory>\nintegrated 1\n</memory>" in second
    assert ("<query_history>\n<query>Which values are in b?</query> <result>sub-answer 1"
            "</result>\n</query_history>") in second
    assert "<memory>\nintegrated 1\n</memory>" in engine.prompt(len(engine.requests) - 1)


def test_controller_limit_is_8192_and_reads_use_treeagent_observations():
    engine = _engine(lambda i: "<query>Which values are in b?</query>" if i == 1 else "")
    result = _run(engine, method="treeagent")
    controller = [r for r in engine.requests if r.kind == "controller"]
    assert {r.sampling.max_tokens for r in controller} == {8192}
    reread_steps = [s for s in result.details["steps"] if s["pass"] == "reread1"]
    assert [s["links"] for s in reread_steps] == [[], [0], [], [1, 2]]
    assert all(s["path"] for s in reread_steps)


def test_parse_query():
    # upstream: greedy <query>(.+)</query> across lines, outer braces stripped, > 5 chars
    assert parse_query("<query> which a? </query> and <query>b?</query>") == (
        "which a? </query> and <query>b?")
    assert parse_query("<query>{Which values\nare in b?}</query>") == "Which values\nare in b?"
    assert parse_query("<query>short</query>") is None  # 5 characters: memory suffices
    assert parse_query("<query>sixsix</query>") == "sixsix"
    assert parse_query("<think><query>not this one</query></think>nothing") is None
    assert parse_query("<query>unclosed question") is None


def test_confirmed_facts_reach_the_decompose_call_and_the_templates_state_the_rule():
    confirmed = "<confirmed>b holds 10, 20 and 30</confirmed>; c is unknown"

    def decompose(i):
        return "<query>What is c?</query>" if i == 1 else ""

    engine = _engine(decompose)
    inner = engine._script

    def script(r):
        if "You merge a checked answer" in r.messages[-1].content:
            return confirmed
        return inner(r)

    engine._script = script
    _run(engine)
    second = [engine.prompt(i) for i, r in enumerate(engine.requests) if r.kind == "controller"][1]
    assert f"<memory>\n{confirmed}\n</memory>" in second  # tags kept verbatim
    from treeagent.agents.templates import Prompts

    p = Prompts()
    assert "<confirmed>...</confirmed>" in p.text("memreread_integrate")
    assert "<confirmed>...</confirmed>" in p.text("memreread_decompose")
    assert "<query>" in p.text("memreread_decompose")


def test_unavailable_reread_gives_no_prediction():
    def script(r):
        if r.kind == "controller":
            return "<query>what is x?</query>"
        if "<problem>\nwhat is x?" in r.messages[-1].content:
            return None
        return "note"

    result = _run(ScriptedEngine(script))
    assert result.prediction is None and "unavailable" in result.error

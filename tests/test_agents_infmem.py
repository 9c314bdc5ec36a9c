"""InfMem: planner tool-call parsing, early stop, BM25 (hand-computed), per-section cap,
near-duplicate removal and exclusion of the current section."""

from __future__ import annotations

import json
import math
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import CharTokenizer
from test_agents_double import TINY_JSON, ScriptedEngine
from treeagent.agents import drive, program
from treeagent.agents.bm25 import BM25Index, jaccard, subchunks, words
from treeagent.agents.infmem import Plan, parse_plan

TOK = CharTokenizer()
Q = "What does b hold?"


def call(args: object, name: str = "retrievesearch") -> str:
    return f'<tool_call>{json.dumps({"name": name, "arguments": args})}</tool_call>'


@pytest.mark.parametrize(
    ("reply", "plan"),
    [
        (call({"query": "b values", "top_k": 5}), Plan("search", "b values", 5)),
        (call({"query": "b"}), Plan("search", "b", 8)),  # default top_k
        (call({"query": "b", "top_k": 99}), Plan("search", "b", 20)),  # clamped
        (call({"query": "b", "top_k": 1}), Plan("search", "b", 3)),
        (call({"query": "b", "top_k": "many"}), Plan("search", "b", 8)),
        (call(json.dumps({"query": "as string", "top_k": 4})), Plan("search", "as string", 4)),
        (call("{not json"), Plan("search", Q, 8)),  # unreadable arguments: the question
        (call({"top_k": 4}), Plan("search", Q, 4)),
        ('Let me look.\n<tool_call>{"name": "retrievesearch", "arguments": {"query": "q"}}',
         Plan("search", "q", 8)),  # unclosed final block
        ("<think>maybe STOP?</think>" + call({"query": "after think"}),
         Plan("search", "after think", 8)),  # reasoning is not parsed
        (call({"query": "x"}, name="websearch"), Plan("none")),
        ("STOP", Plan("stop")),
        ("The memory suffices. STOP.", Plan("stop")),
        ("STOP " + call({"query": "x"}), Plan("stop")),  # upstream: STOP wins
        ("I am not sure what to do.", Plan("none")),
        ("<tool_call>garbage</tool_call>", Plan("none")),
        ("STOPPED", Plan("none")),
    ],
)
def test_parse_plan(reply, plan):
    assert parse_plan(reply, Q) == plan


def test_native_tool_calls_are_used_first():
    native = [{"type": "function", "function": {"name": "retrievesearch",
                                                "arguments": '{"query": "native", "top_k": 6}'}}]
    assert parse_plan("", Q, native) == Plan("search", "native", 6)


def _scripted(plans: list[str]):
    """Planner replies from ``plans`` in order; write calls echo the step; answer boxed."""
    it = iter(plans)

    def script(r):
        if r.kind == "controller":
            return next(it)
        if r.kind == "memory":
            return f"memory after write {sum(q.kind == 'memory' for q in engine.requests)}"
        return "\\boxed{10}"

    engine = ScriptedEngine(script)
    return engine


def _run(engine, method="tree"):
    return drive(program("infmem", method, TINY_JSON, "json", Q, TOK, base_budget=14),
                 engine.respond)


def test_three_consecutive_stops_end_reading_early():
    engine = _scripted(["STOP", "STOP", "STOP", "STOP"])
    result = _run(engine)
    assert engine.kinds() == ["controller", "memory", "controller", "memory", "controller",
                              "answer"]
    assert result.details["early_stop"] == 2
    assert (result.sections, result.total_sections) == (2, 4)
    assert result.prediction == "\\boxed{10}"
    assert "<memory>\nmemory after write 2\n</memory>" in engine.prompt(5)
    assert "<retrieved_chunk>\n\n</retrieved_chunk>" in engine.prompt(1)


def test_a_search_resets_the_stop_count():
    engine = _scripted(["STOP", "STOP", call({"query": "gamma"}), "STOP"])
    result = _run(engine)
    assert "early_stop" not in result.details and result.sections == 4
    assert [p["action"] for p in result.details["plans"]] == ["stop", "stop", "search", "stop"]


def test_malformed_plan_restarts_the_count_at_one():
    # upstream: a non-STOP reply resets the count, and a reply without a call adds one
    engine = _scripted(["STOP", "STOP", "hmm", "STOP"])
    result = _run(engine)
    assert "early_stop" not in result.details and result.sections == 4
    engine = _scripted(["hmm", "STOP", "STOP", "STOP"])
    assert _run(engine).details["early_stop"] == 2


def test_search_results_go_to_the_write_prompt_and_exclude_the_current_section():
    engine = _scripted([call({"query": "gamma alpha beta b", "top_k": 20})] + ["STOP"] * 3)
    result = _run(engine)
    write = engine.prompt(1)
    retrieved = write.split("<retrieved_chunk>\n")[1].split("\n</retrieved_chunk>")[0]
    assert retrieved.startswith("[Passage 1] ")
    assert '"x":"alpha"' not in retrieved  # section 0 is being read
    assert '"c":"gamma"' in retrieved and '"y":"beta"' in retrieved
    assert '<recurrent_chunk>\n"x":"alpha"\n</recurrent_chunk>' in write
    assert result.details["retrieved"][0]["t"] == 0
    history = engine.prompt(2).split("<retrieval_history>\n")[1]
    assert "Search 1: query='gamma alpha beta b', top_k=20" in history


def test_treeagent_observation_goes_in_the_recurrent_chunk():
    engine = _scripted(["STOP", call({"query": "zzz"}), "hmm", "hmm"])
    _run(engine, method="treeagent")
    last_write = [i for i, r in enumerate(engine.requests) if r.kind == "memory"][-1]
    chunk = engine.prompt(last_write).split("<recurrent_chunk>\n")[1].split("\n</recurrent_chunk>")[0]
    assert chunk.startswith('"c":"gamma"\n\nPath: $.c')


def test_bm25_scores_by_hand():
    index = BM25Index([(0, "apple banana"), (1, "apple apple cherry"), (2, "durian")])
    # N = 3, avgdl = 2, k1 = 1.5, b = 0.75; idf(apple) = ln(1 + (3-2+.5)/(2+.5)) = ln 1.6
    idf_apple = math.log(1.6)
    s0 = idf_apple * 1 * 2.5 / (1 + 1.5 * (0.25 + 0.75 * 2 / 2))
    s1 = idf_apple * 2 * 2.5 / (2 + 1.5 * (0.25 + 0.75 * 3 / 2))
    assert index.scores("apple") == pytest.approx([s0, s1, 0.0])
    assert [h.chunk for h in index.search("apple", 3)] == [1, 0]  # zero scores dropped


def test_bm25_caps_two_per_section_and_drops_near_duplicates():
    chunks = [(0, "alpha beta gamma one"), (0, "alpha beta gamma two"),
              (0, "alpha beta gamma three"), (1, "alpha beta gamma delta epsilon zeta eta"),
              (1, "alpha beta gamma delta epsilon zeta eta"), (2, "alpha other words here")]
    index = BM25Index(chunks)
    hits = index.search("alpha beta gamma", top_k=10)
    by_section = [h.section for h in hits]
    assert by_section.count(0) == 2  # the third chunk of section 0 is over the cap
    assert [h.chunk for h in hits if h.section == 1] == [3]  # chunk 4 duplicates chunk 3
    assert 2 in by_section
    assert index.search("alpha beta gamma", top_k=2, exclude_section=0)[0].section == 1
    assert len(index.search("alpha beta gamma", top_k=1)) == 1


def test_jaccard_and_words():
    assert words('{"magType":"mw","Mag":5.5}') == ["magtype", "mw", "mag", "5", "5"]
    assert jaccard({"a", "b"}, {"a", "b", "c"}) == pytest.approx(2 / 3)
    assert jaccard(set(), set()) == 1.0


@settings(max_examples=50, deadline=None)
@given(text=st.text(min_size=0, max_size=400), size=st.integers(1, 50))
def test_subchunks_partition_the_text_within_the_token_size(text, size):
    pieces = subchunks(text, TOK, size)
    assert all(0 < len(p) <= size for p in pieces)  # one token per character
    assert re.sub(r"\s", "", "".join(pieces)) == re.sub(r"\s", "", text)  # nothing lost
    assert all(p.strip() for p in pieces)  # whitespace-only pieces are not indexed


@settings(max_examples=50, deadline=None)
@given(
    docs=st.lists(st.tuples(st.integers(0, 4), st.lists(st.sampled_from(
        ["red", "green", "blue", "cyan", "gray"]), min_size=1, max_size=6).map(" ".join)),
        min_size=1, max_size=15),
    top_k=st.integers(3, 20), exclude=st.integers(0, 4),
)
def test_bm25_search_respects_every_rule(docs, top_k, exclude):
    index = BM25Index(docs)
    hits = index.search("red blue", top_k, exclude_section=exclude)
    assert len(hits) <= top_k
    assert all(h.section != exclude and h.score > 0 for h in hits)
    assert max((sum(h.section == s for h in hits) for s in range(5)), default=0) <= 2
    for i, a in enumerate(hits):
        for b in hits[i + 1:]:
            assert jaccard(set(words(a.text)), set(words(b.text))) < 0.8
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)

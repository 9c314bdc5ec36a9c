"""InfMem: the planner in the checkpoint's protocol (Qwen-Agent function calls in the
system message, replies in that format, in OpenAI ``tool_calls`` and in ``<tool_call>``),
two-stage thinking, early stop, the answer phrase, and the BM25 index (hand-computed
rank_bm25 scores, 100-token overlap, per-section cap, near duplicates, refill)."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import CharTokenizer
from test_agents_double import TINY_JSON, ScriptedEngine
from treeagent.agents import drive, program
from treeagent.agents.bm25 import BM25Index, jaccard, subchunks, words
from treeagent.agents.infmem import TOOL, Plan, Search, parse_plan, tool_description

TOK = CharTokenizer()
Q = "What does b hold?"
FN = "✿FUNCTION✿: retrievesearch\n✿ARGS✿: "


def fn(args: str, name: str = "retrievesearch") -> str:
    return f"✿FUNCTION✿: {name}\n✿ARGS✿: {args}"


def nous(args: object, name: str = "retrievesearch") -> str:
    return f'<tool_call>{json.dumps({"name": name, "arguments": args})}</tool_call>'


def s(query: str, k: int = 8, asked: object = None, asked_k: object = 8) -> Search:
    return Search(query, k, query if asked is None else asked, asked_k)


@pytest.mark.parametrize(
    ("reply", "plan"),
    [
        # Qwen-Agent's format, as the checkpoint was trained (reasoning before the call)
        ("<think>\nneed b\n</think>\n\n" + fn('{"query": "b values", "top_k": 5}'),
         Plan("call", (s("b values", 5, asked_k=5),))),
        (fn('{"query": "b"}'), Plan("call", (s("b"),))),  # default top_k
        (fn('{"query": "b", "top_k": 99}'), Plan("call", (s("b", 20, asked_k=99),))),
        (fn('{"query": "b", "top_k": 1}'), Plan("call", (s("b", 3, asked_k=1),))),
        (fn('{"query": "b", "top_k": "many"}'), Plan("call", (s("b", 8, asked_k="many"),))),
        (fn('{"query": "  two\\n words "}'), Plan("call", (s("two words", asked="  two\n words "),))),
        (fn('{"query": "b"} <!-- a comment -->'), Plan("call", (s("b"),))),  # trailing comment
        (fn('{"query": "b"}') + "\n✿RESULT✿: x\n✿RETURN✿: y", Plan("call", (s("b"),))),
        (fn('{"query": "one"}') + "\n" + fn('{"query": "two", "top_k": 4}'),
         Plan("call", (s("one"), s("two", 4, asked_k=4)))),  # parallel calls
        (fn("{not json"), Plan("call", (s(Q),))),  # unreadable arguments: the question
        (fn('{"top_k": 4}'), Plan("call", (s(Q, 4, asked_k=4),))),
        (fn('{"query": 7}'), Plan("call", (Search(Q, 8, 7, 8),))),  # not text: the question
        (fn('{"query": "x"}', name="websearch"), Plan("call", ())),  # a call, no search
        # Qwen's <tool_call> form (a template's own tool format)
        (nous({"query": "b values", "top_k": 5}), Plan("call", (s("b values", 5, asked_k=5),))),
        (nous(json.dumps({"query": "as string"})), Plan("call", (s("as string"),))),
        ('Look.\n<tool_call>{"name": "retrievesearch", "arguments": {"query": "q"}}',
         Plan("call", (s("q"),))),  # unclosed final block
        # STOP anywhere wins, reasoning included (upstream checks the raw reply)
        ("STOP", Plan("stop")),
        ("<think>should I STOP? no</think>" + fn('{"query": "b"}'), Plan("stop")),
        ("STOP " + fn('{"query": "x"}'), Plan("stop")),
        ("STOPPED", Plan("stop")),
        ("I am not sure what to do.", Plan("none")),
        ("<tool_call>garbage</tool_call>", Plan("none")),
        ("✿FUNCTION✿: retrievesearch", Plan("none")),  # no ✿ARGS✿: not a call upstream
    ],
)
def test_parse_plan(reply, plan):
    assert parse_plan(reply, Q) == plan


def test_openai_tool_calls_are_read_when_the_text_has_no_call():
    native = [{"type": "function", "function": {"name": "retrievesearch",
                                                "arguments": '{"query": "native", "top_k": 6}'}}]
    assert parse_plan("", Q, native) == Plan("call", (s("native", 6, asked_k=6),))
    assert parse_plan("STOP", Q, native) == Plan("stop")


def test_tool_description_is_qwen_agents_layout():
    text = tool_description(TOOL)
    params = json.dumps(TOOL["function"]["parameters"], ensure_ascii=False)
    assert text.startswith("### retrievesearch\n\nretrievesearch: ")
    assert f" Parameters: {params} " in text


def _scripted(plans: list[str], think: bool = True):
    """Planner replies from ``plans`` in order (after a closed reasoning block, so one
    stage each); write calls echo the step; the answer ends with upstream's phrase."""
    it = iter(plans)
    close = "<think>\nok\n</think>\n\n" if think else ""

    def script(r):
        if r.kind == "controller":
            return close + next(it)
        if r.kind == "memory":
            return close + f"memory after write {sum(q.kind == 'memory' for q in engine.requests)}"
        return close + "Therefore, the answer is 10"

    engine = ScriptedEngine(script)
    return engine


def _run(engine, method="tree", **options):
    return drive(program("infmem", method, TINY_JSON, "json", Q, TOK, base_budget=14,
                         options=options or None), engine.respond)


def test_planner_request_carries_the_tool_block_as_system_message_and_thinks():
    engine = _scripted(["STOP"] * 3)
    _run(engine)
    plan = engine.requests[0]
    assert [m.role for m in plan.messages] == ["system", "user"]
    system = plan.messages[0].content
    assert system.startswith("# Tools\n\n") and tool_description(TOOL) in system
    assert "✿FUNCTION✿: " in system and "[retrievesearch]" in system
    assert "✿ARGS✿: " in system and "✿RESULT✿: " in system and "✿RETURN✿: " in system
    assert all(r.template_kwargs == {"enable_thinking": True} for r in engine.requests)
    assert "Current retrieval step: 1  Maximum allowed retrieval steps: 4" in engine.prompt(0)
    answer = engine.prompt(len(engine.requests) - 1)
    assert "Therefore, the answer is" in answer and "boxed" not in answer


def test_three_consecutive_stops_end_reading_early():
    engine = _scripted(["STOP", "STOP", "STOP", "STOP"])
    result = _run(engine)
    assert engine.kinds() == ["controller", "memory", "controller", "memory", "controller",
                              "answer"]
    assert result.details["early_stop"] == 2
    assert (result.sections, result.total_sections) == (2, 4)
    assert result.prediction.endswith("Therefore, the answer is 10")
    assert "<memory>\nmemory after write 2\n</memory>" in engine.prompt(5)  # think dropped
    assert "<retrieved_chunk>\n\n</retrieved_chunk>" in engine.prompt(1)


def test_a_search_resets_the_stop_count():
    engine = _scripted(["STOP", "STOP", fn('{"query": "gamma"}'), "STOP"])
    result = _run(engine)
    assert "early_stop" not in result.details and result.sections == 4
    assert [p["action"] for p in result.details["plans"]] == ["stop", "stop", "call", "stop"]


def test_malformed_plan_restarts_the_count_at_one():
    # upstream: a non-STOP reply resets the count, and a reply without a call adds one
    engine = _scripted(["STOP", "STOP", "hmm", "STOP"])
    result = _run(engine)
    assert "early_stop" not in result.details and result.sections == 4
    engine = _scripted(["hmm", "STOP", "STOP", "STOP"])
    assert _run(engine).details["early_stop"] == 2
    engine = _scripted([fn('{"q": 1}', name="other")] * 4)  # other tool: a call, no stop
    result = _run(engine)
    assert "early_stop" not in result.details and "retrieved" not in result.details


def test_search_results_go_to_the_write_prompt_and_exclude_the_current_section():
    engine = _scripted([fn('{"query": "gamma alpha beta b", "top_k": 20}')] + ["STOP"] * 3)
    result = _run(engine)
    write = engine.prompt(1)
    retrieved = write.split("<retrieved_chunk>\n")[1].split("\n</retrieved_chunk>")[0]
    assert retrieved.startswith("[Retrieved #1] ")
    assert '"x":"alpha"' not in retrieved  # section 0 is being read
    assert '"c":"gamma"' in retrieved and '"y":"beta"' in retrieved
    assert '<recurrent_chunk>\n"x":"alpha"\n</recurrent_chunk>' in write
    assert result.details["retrieved"][0]["t"] == 0
    history = engine.prompt(2).split("<retrieval_history>\n")[1]
    assert "Step 1: query='gamma alpha beta b', top_k=20" in history


def test_treeagent_observation_goes_in_the_recurrent_chunk():
    engine = _scripted(["STOP", fn('{"query": "zzz"}'), "hmm", "hmm"])
    _run(engine, method="treeagent")
    last_write = [i for i, r in enumerate(engine.requests) if r.kind == "memory"][-1]
    chunk = engine.prompt(last_write).split("<recurrent_chunk>\n")[1].split("\n</recurrent_chunk>")[0]
    assert chunk.startswith('"c":"gamma"\n\nPath: $.c')


def test_two_stage_thinking_closes_a_cut_reasoning_and_continues():
    """Stage 1 (budget 1,024) ends inside its reasoning: the closing sentence and
    </think> are appended and stage 2 continues that prefix; the memory is the text
    after </think>."""
    replies = iter(["<think>\nstill reasoning", "STOP",  # planner: stage 1, stage 2
                    "<think>\nreading", "new notes",  # write
                    "<think>\nmore", "STOP", "<think>\nx", "notes 2",
                    "<think>\ny", "STOP", "<think>\nz", "Therefore, the answer is 10"])
    engine = ScriptedEngine(lambda r: next(replies))
    result = _run(engine)
    first, second = engine.requests[0], engine.requests[1]
    assert first.sampling.max_tokens == 1024 and len(first.messages) == 2
    assert second.messages[:2] == first.messages and second.messages[2].role == "assistant"
    prefix = second.messages[2].content
    assert prefix.startswith("<think>\nstill reasoning\n\n") and prefix.endswith("\n</think>\n\n")
    assert "CURRENT MEMORY:\nnew notes\n" in engine.prompt(4)
    assert result.prediction.endswith("</think>\n\nTherefore, the answer is 10")
    assert result.calls == 12


def test_thinking_can_be_switched_off_per_run():
    engine = _scripted(["STOP"] * 3, think=False)
    _run(engine, thinking=False)
    assert engine.kinds() == ["controller", "memory", "controller", "memory", "controller",
                              "answer"]
    assert all(r.template_kwargs == {"enable_thinking": False} for r in engine.requests)


# -- BM25 ----------------------------------------------------------------------------


def test_bm25_scores_by_hand_as_rank_bm25():
    index = BM25Index([(0, "apple banana"), (1, "apple apple cherry"), (2, "durian")])
    # N = 3, avgdl = 2, k1 = 1.5, b = 0.75; idf(apple) = ln(3-2+.5) - ln(2+.5) < 0, so it
    # becomes 0.25 x the mean idf over apple, banana, cherry, durian
    idf_one = math.log(2.5) - math.log(1.5)
    mean = (math.log(1.5) - math.log(2.5) + 3 * idf_one) / 4
    idf_apple = 0.25 * mean
    s0 = idf_apple * 1 * 2.5 / (1 + 1.5 * (0.25 + 0.75 * 2 / 2))
    s1 = idf_apple * 2 * 2.5 / (2 + 1.5 * (0.25 + 0.75 * 3 / 2))
    assert index.scores(["apple"]) == pytest.approx([s0, s1, 0.0])
    assert index.scores(["apple", "apple"]) == pytest.approx([2 * s0, 2 * s1, 0.0])
    # refill: fewer than k candidates pass, zero scores fill the rest
    assert [h.chunk for h in index.search("apple", 3)] == [1, 0, 2]
    assert index.search("!!!", 3) == []  # a query without words finds nothing


def test_bm25_caps_two_per_section_drops_near_duplicates_then_refills():
    chunks = [(0, "alpha beta gamma one"), (0, "alpha beta gamma two"),
              (0, "alpha beta gamma three"), (1, "alpha beta gamma delta epsilon zeta eta"),
              (1, "alpha beta gamma delta epsilon zeta eta x"), (2, "alpha other words here")]
    index = BM25Index(chunks)
    hits = index.search("alpha beta gamma", top_k=4)
    # chunk 4 has Jaccard 7/8 > 0.8 with chunk 3; the third chunk of section 0 is over
    # the cap: the candidates give 4 hits without either
    assert sorted(h.chunk for h in hits) == [0, 1, 3, 5]
    hits = index.search("alpha beta gamma", top_k=6)  # refill adds both, in rank order
    assert sorted(h.chunk for h in hits) == [0, 1, 2, 3, 4, 5]
    assert all(h.section != 0 for h in index.search("alpha beta gamma", 6, exclude_section=0))
    # Jaccard exactly 0.8 is kept (upstream drops only > 0.8)
    same = BM25Index([(0, "a b c d x"), (1, "a b c d"), (2, "zz"), (3, "yy"), (4, "ww")])
    assert jaccard({"a", "b", "c", "d", "x"}, {"a", "b", "c", "d"}) == pytest.approx(0.8)
    assert [h.chunk for h in same.search("a b", 2)] == [1, 0]


def test_words_and_jaccard():
    assert words('{"magType":"mw","Mag":5.5}') == ["magtype", "mw", "mag", "5", "5"]
    assert words("Café 地震数据") == ["caf", "地", "震", "数", "据", "地震", "震数", "数据"]
    assert jaccard({"a", "b"}, {"a", "b", "c"}) == pytest.approx(2 / 3)
    assert jaccard(set(), set()) == 0.0


@settings(max_examples=50, deadline=None)
@given(text=st.text(min_size=1, max_size=400), size=st.integers(2, 50),
       overlap=st.integers(0, 60))
def test_subchunks_are_overlapping_windows(text, size, overlap):
    pieces = subchunks(text, TOK, size, overlap)  # one token per character
    step = max(1, size - min(overlap, size - 1))
    assert all(0 < len(p) <= size for p in pieces)
    assert pieces == [text[i:i + size] for i in range(0, len(text), step)][: len(pieces)]
    assert text.endswith(pieces[-1]) and len(pieces) == max(
        1, -(-max(len(text) - size, 0) // step) + 1)


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
    allowed = {text for sec, text in docs if sec != exclude}
    assert len(hits) == min(top_k, len(allowed))  # refill fills up to k distinct texts
    assert len({h.text for h in hits}) == len(hits)
    assert all(h.section != exclude and h.text == docs[h.chunk][1] for h in hits)
    scores = index.scores(words("red blue"))
    best = max((scores[i] for i, (sec, _) in enumerate(docs) if sec != exclude), default=0)
    assert not hits or hits[0].score == best

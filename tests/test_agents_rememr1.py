"""ReMemR1: tag parsing, recall by TF-IDF cosine (hand-computed), training order."""

from __future__ import annotations

import math

import pytest

from helpers import CharTokenizer
from test_agents_double import TINY_JSON, ScriptedEngine
from treeagent.agents import drive, program
from treeagent.agents.rememr1 import NO_RECALL, best_memory, parse_reply, tfidf_scores

TOK = CharTokenizer()  # one token per character: hand-computable TF-IDF
Q = "What does b hold?"


def test_tfidf_cosine_by_hand():
    # docs "ab", "bc"; query "a". n = 2; idf(a) = idf(c) = ln(3/2) + 1, idf(b) = ln(3/3) + 1 = 1
    ia = math.log(1.5) + 1
    assert tfidf_scores("a", ["ab", "bc"], TOK) == pytest.approx([ia / math.sqrt(ia**2 + 1), 0.0])
    # query "ab" against "ab": identical vectors
    assert tfidf_scores("AB", ["ab", "bc"], TOK)[0] == pytest.approx(1.0)  # lowercased
    # query "bb" = (0, 2, 0) -> unit b; doc "abb" = (ia, 2, 0)/norm, doc "bc" = (0, 1, ia)/norm
    got = tfidf_scores("bb", ["abb", "bc"], TOK)
    assert got == pytest.approx([2 / math.sqrt(ia**2 + 4), 1 / math.sqrt(1 + ia**2)])


def test_best_memory_ties_go_to_the_latest_and_empty_cases():
    assert best_memory("a", ["ab", "bc"], TOK) == 0
    assert best_memory("zz", ["ab", "bc", "cd"], TOK) == 2  # all zero: the latest
    assert best_memory("b", ["xb", "yb"], TOK) == 1
    assert best_memory("a", [], TOK) is None
    assert best_memory("", ["ab"], TOK) is None
    assert best_memory("  ", ["ab"], TOK) == 0  # upstream: any non-empty query recalls


def test_best_memory_with_the_real_tokenizer(qwen3):
    memories = ["The magnitude of event A is 4.5.", "Event B happened in Nevada.",
                "The depth of event C is 10 km."]
    assert best_memory("Where did event B happen?", memories, qwen3) == 1
    assert best_memory("magnitude of A", memories, qwen3) == 0


def test_parse_reply():
    ok = "<thinking>t</thinking><update>notes</update><recall>who?</recall>"
    assert parse_reply(ok) == ("<thinking>t</thinking><update>notes</update>", "who?", True)
    assert parse_reply("<think>r</think><update>u</update>") == ("<update>u</update>", None, False)
    two = "<thinking>t</thinking><update>a</update><update>b</update>"
    assert parse_reply(two) == (two, None, False)
    assert parse_reply("free text <recall></recall>") == ("free text", None, False)
    # upstream: greedy and on one line
    assert parse_reply("<recall>one</recall> x <recall>two</recall>")[1] == (
        "one</recall> x <recall>two")
    assert parse_reply("<recall>two\nlines</recall>") == ("", None, False)


def _memory(t: int, recall: str | None = None) -> str:
    tail = f"<recall>{recall}</recall>" if recall else ""
    return f"<thinking>step {t}</thinking><update>fact{t} q{t}</update>{tail}"


def test_recall_uses_memories_saved_before_the_step_training_order():
    replies = [_memory(0, "fact0"), _memory(1, "q0"), _memory(2), _memory(3, "q2"), "\\boxed{10}"]
    engine = ScriptedEngine(replies)
    result = drive(program("rememr1", "tree", TINY_JSON, "json", Q, TOK, base_budget=14),
                   engine.respond)
    recalled = [p.split("<recalled_memory>\n")[1].split("\n</recalled_memory>")[0]
                for p in (engine.prompt(i) for i in range(5))]
    # step 0 recalls before m_0 is saved: nothing to recall (evaluation order would give m_0)
    assert recalled[0] == NO_RECALL and recalled[1] == NO_RECALL
    assert recalled[2] == "<thinking>step 0</thinking><update>fact0 q0</update>"  # by step 1
    assert recalled[3] == NO_RECALL  # step 2 asked for nothing
    assert recalled[4] == "<thinking>step 2</thinking><update>fact2 q2</update>"  # final prompt
    assert "<memory>\n<thinking>step 0</thinking><update>fact0 q0</update>\n</memory>" in engine.prompt(1)
    assert [r["memory"] for r in result.details["recalls"]] == [None, 0, None, 2]
    assert result.details["malformed"] == 0 and result.prediction == "\\boxed{10}"
    assert {r.sampling.max_tokens for r in engine.requests} == {2048}


def test_malformed_replies_are_kept_and_counted():
    engine = ScriptedEngine(["no tags at all", _memory(1), "<update>a</update><update>b</update>",
                             _memory(3), "<thinking>t</thinking>", "\\boxed{1}"])
    result = drive(program("rememr1", "flat", TINY_JSON, "json", Q, TOK, base_budget=14),
                   engine.respond)
    assert "<memory>\nno tags at all\n</memory>" in engine.prompt(1)
    assert result.details["malformed"] == 3  # flat has 5 sections: replies 0, 2, 4 are malformed
    assert result.prediction == "\\boxed{1}"


def test_recall_terms_strip_the_space_marker(qwen3):
    """Upstream drops the tokenizer's space marker, so a query's first word (no space
    before it) matches the same word inside a memory (a space before it)."""
    from treeagent.agents.rememr1 import words

    assert words(" Temperature", qwen3) == words("temperature", qwen3) == ["temperature"]
    assert qwen3.encode(" temperature") != qwen3.encode("temperature")  # ids differ
    memories = ["The station noted a temperature of 31.", "Pressure fell at noon."]
    assert tfidf_scores("temperature", memories, qwen3)[0] > 0
    assert best_memory("temperature", memories, qwen3) == 0
    assert best_memory("Pressure", ["noon pressure 5", "temperature rose"], qwen3) == 0

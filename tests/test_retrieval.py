"""Span retrieval (A.3) against hand-computed scores."""

from __future__ import annotations

from collections import Counter

from helpers import CharTokenizer
from treeagent.algorithm import retrieval


def test_terms_split_camel_case_underscores_and_drop_function_words():
    assert retrieval.terms("The magType of event_id isHTTPServer") == Counter(
        {"mag": 1, "type": 1, "event": 1, "id": 1, "http": 1, "server": 1}
    )


def test_score_is_equation_a3():
    q = retrieval.terms("magnitude magnitude place")
    z = retrieval.terms("magnitude 4.5 near place place")
    # shared {magnitude, place}: min(2,1) + min(1,2) = 2, plus 0.25 * 2
    assert retrieval.score(q, z) == 2.5


def test_retrieve_ranks_ties_truncates_and_limits():
    history = {
        0: "Event A has magnitude 4.5.\nUnrelated line.",
        2: "Magnitude of event B is 5.1. Event B place is Nevada.",
        3: "Saved later but not linked: magnitude 9.",
    }
    got = retrieval.retrieve(
        "What is the magnitude of event B?", [2, 0, 0], history, CharTokenizer(), span_tokens=20
    )
    # scores: "Magnitude of event B is 5.1." -> magnitude, event, b: 3 + 0.75 = 3.75
    # "Event B place is Nevada." -> event, b: 2.5 ; "Event A has magnitude 4.5." ->
    # event, magnitude: 2.5 (source 0 wins the tie with source 2)
    assert [(r.source, r.order, r.score) for r in got] == [(2, 0, 3.75), (0, 0, 2.5), (2, 1, 2.5)]
    assert got[0].text == "Magnitude of event B"  # truncated to 20 tokens (characters)
    assert retrieval.render(got).count("\n") == 2


def test_retrieve_at_most_k_and_empty_when_no_overlap():
    history = {i: f"value {i} of field alpha" for i in range(10)}
    got = retrieval.retrieve("alpha field", range(10), history, CharTokenizer())
    assert len(got) == 4 and [r.source for r in got] == [0, 1, 2, 3]
    assert retrieval.retrieve("zebra", range(10), history, CharTokenizer()) == []
    assert retrieval.retrieve("alpha", [], history, CharTokenizer()) == []

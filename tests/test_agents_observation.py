"""Observations o_t of the four modes for a known small tree (paper 3, A.3, C.2)."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import CharTokenizer
from test_agents_double import TINY_JSON
from treeagent.agents import observation
from treeagent.agents.observation import Reader, prepare
from treeagent.algorithm import retrieval
from treeagent.algorithm.tree import ParseError

TOK = CharTokenizer()
QUESTION = "Which value follows beta and what does b hold?"
MEMORIES = ["x is alpha, not beta.", "y is beta.\nUnrelated note.", "b holds 10, 20, 30.",
            "c is gamma and beta."]


def _observe_all(method: str, base_budget: int = 14) -> list[observation.Observation]:
    doc = prepare(TINY_JSON, "json", TOK, method, base_budget)
    reader = Reader(doc, QUESTION, TOK)
    out = []
    for t in range(len(doc)):
        out.append(reader.observe(t))
        reader.save(t, MEMORIES[t % len(MEMORIES)])
    return out


def test_flat_is_fixed_length_text_without_path_or_links():
    obs = _observe_all("flat")
    assert [o.section for o in obs] == [
        '{"a":{"x":"alp', 'ha","y":"beta"', '},"b":[10,20,3', '0],"c":"gamma"', "}"]
    assert all(o.path is None and o.links == () and o.retrieved == () for o in obs)
    assert [o.render() for o in obs] == [o.section for o in obs]


def test_tree_is_structural_sections_at_the_searched_budget_without_path():
    doc = prepare(TINY_JSON, "json", TOK, "tree", 14)
    assert (doc.budget, doc.flat_count, doc.links, doc.accessible) == (14, 5, 0, {})
    obs = _observe_all("tree")
    assert [o.section for o in obs] == [
        '"x":"alpha"', '"y":"beta"', '"b":[10,20,30]', '"c":"gamma"']
    assert [o.render() for o in obs] == [o.section for o in obs]
    assert all(o.path is None and o.retrieved == () for o in obs)


def test_tree_path_adds_the_structural_path_line():
    obs = _observe_all("tree+path")
    assert [o.path for o in obs] == ["$.a.x", "$.a.y", "$.b", "$.c"]
    assert obs[2].render() == '"b":[10,20,30]\n\nPath: $.b'
    assert all(o.retrieved == () for o in obs)


def test_sibling_sections_carry_the_parent_path_and_range():
    obs = _observe_all("tree+path", base_budget=20)  # B* = 22 groups $.a's children
    assert obs[0].section == '"x":"alpha","y":"beta"'
    assert obs[0].render() == '"x":"alpha","y":"beta"\n\nPath: ($.a, [0, 1])'


def test_treeagent_adds_spans_from_linked_memories_saved_before_the_step():
    doc = prepare(TINY_JSON, "json", TOK, "treeagent", 14)
    assert doc.accessible == {1: [0], 3: [1, 2]} and doc.links == 3
    obs = _observe_all("treeagent")
    assert [o.links for o in obs] == [(), (0,), (), (1, 2)]
    # t = 1 reads m_0 only; t = 3 reads m_1 and m_2, never m_0 (not in L_3), ties by source
    assert [(r.source, r.order, r.score) for r in obs[1].retrieved] == [(0, 0, 1.25)]
    assert [(r.source, r.order, r.score) for r in obs[3].retrieved] == [(1, 0, 1.25), (2, 0, 1.25)]
    assert obs[3].render() == (
        '"c":"gamma"\n\nPath: $.c\n\nRetrieved from earlier memory:\n'
        "- y is beta.\n- b holds 10, 20, 30."
    )
    assert obs[0].render() == '"x":"alpha"\n\nPath: $.a.x'  # no links: no block
    assert obs[3].summary() == {"t": 3, "path": "$.c", "links": [1, 2], "spans": [
        {"source": 1, "order": 0, "text": "y is beta."},
        {"source": 2, "order": 0, "text": "b holds 10, 20, 30."}]}


def test_treeagent_spans_are_truncated_and_at_most_four():
    doc = prepare(TINY_JSON, "json", TOK, "treeagent", 14)
    reader = Reader(doc, "beta", TOK, k=4, span_tokens=5)
    for t in range(3):
        reader.observe(t)
        reader.save(t, "\n".join(f"beta line {i} of {t}" for i in range(6)))
    got = reader.observe(3).retrieved
    assert len(got) == 4 and all(len(r.text) <= 5 for r in got)
    assert [r.source for r in got] == [1, 1, 1, 1]  # ties: lower source, then span order


def test_no_span_when_no_overlap():
    doc = prepare(TINY_JSON, "json", TOK, "treeagent", 14)
    reader = Reader(doc, "zebra", TOK)
    for t in range(3):
        reader.observe(t)
        reader.save(t, "nothing relevant")
    assert reader.observe(3).retrieved == ()


def test_steps_must_be_observed_and_saved_in_order():
    doc = prepare(TINY_JSON, "json", TOK, "treeagent", 14)
    reader = Reader(doc, QUESTION, TOK)
    with pytest.raises(ValueError, match="out of order"):
        reader.observe(1)
    reader.observe(0)
    with pytest.raises(ValueError, match="out of order"):
        reader.save(1, "m")
    reader.save(0, "m0")
    assert reader.history == {0: "m0"}


def test_flat_needs_no_parse_but_tree_modes_do():
    assert len(prepare("not json at all {", None, TOK, "flat", 5)) == 4
    with pytest.raises(ParseError):
        prepare("not json at all {", "json", TOK, "tree", 5)
    with pytest.raises(ValueError, match="unknown method"):
        prepare(TINY_JSON, "json", TOK, "paths", 5)


_scalars = st.one_of(st.integers(-99, 999), st.sampled_from(["alpha", "beta", "gamma x", ""]))
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, min_size=1, max_size=4),
        st.dictionaries(st.sampled_from(["a", "b", "c", "d", "e"]), inner, min_size=1, max_size=4),
    ),
    max_leaves=20,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=_values, budget=st.integers(6, 40))
def test_retrieval_reads_only_linked_states_saved_before_the_step(value, budget):
    text = json.dumps(value, separators=(",", ":"))
    seen: list[tuple[int, list[int], list[int]]] = []
    real = retrieval.retrieve

    def spy(question, sources, history, tokenizer, k=4, span_tokens=96):
        seen.append((current[0], list(sources), sorted(history)))
        return real(question, sources, history, tokenizer, k, span_tokens)

    doc = prepare(text, "json", TOK, "treeagent", budget)
    reader = Reader(doc, "alpha beta gamma", TOK)
    current = [0]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(observation, "retrieve", spy)
        for t in range(len(doc)):
            current[0] = t
            o = reader.observe(t)
            assert list(o.links) == doc.accessible.get(t, [])
            assert all(i < t for i in o.links)
            assert {r.source for r in o.retrieved} <= set(o.links)
            reader.save(t, f"alpha beta gamma saved at {t}")
    for t, sources, history in seen:
        assert history and all(i < t for i in history) and sources

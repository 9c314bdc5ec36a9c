"""Accepted forms (C.4 matching, docs/fidelity.md "HTML values"): a prediction matching
any form an example accepts for a reference value scores as the reference does."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from treeagent.scoring import score, score_json


def test_an_accepted_form_scores_as_the_reference():
    ref = "June 1, 1980 (aged 28)"
    assert score("one_field", ref, "June 1, 1980") == 0.0
    assert score("one_field", ref, "June 1, 1980", [["June 1, 1980"]]) == 1.0
    assert score("one_field", ref, "The answer is June 1, 1980 (aged 28)", [["June 1, 1980"]]) == 1.0
    assert score("one_field", ref, "June 2, 1980", [["June 1, 1980"]]) == 0.0
    assert score_json("one_field", '"June 1, 1980 (aged 28)"', "June 1, 1980",
                      '[["June 1, 1980"]]') == 1.0


def test_accepted_forms_belong_to_their_own_value_in_ordered_and_unordered_tasks():
    refs = ["1,646 mi (2,649 km)", "Denver, Colorado"]
    acc = [["1,646 mi"], []]
    assert score("two_fields", refs, '["1,646 mi", "Denver, Colorado"]', acc) == 1.0
    assert score("two_fields", refs, '["1,646 mi", "Denver, Colorado"]') == 0.5
    # the form accepted for value 1 is not accepted in value 2's place
    assert score("two_fields", ["x (y)", "z"], '["z", "x"]', [["x"], []]) == 0.0
    assert score("most_frequent", ["a (b)", "c"], "c, a", [["a"], []]) == 1.0
    # re-joining comma pieces works against an accepted form too
    assert score("two_fields", ["Anza, CA (Riverside County)", "q"], "Anza, CA, q",
                 [["Anza, CA"], []]) == 1.0


def test_accepted_forms_must_give_one_list_per_reference_value():
    with pytest.raises(ValueError, match="one list per reference value"):
        score("two_fields", ["a", "b"], "a, b", [["a"]])


@given(st.sampled_from(["one_field", "two_fields", "most_frequent", "numeric_extremum"]),
       st.lists(st.integers(0, 50), min_size=1, max_size=4), st.text(max_size=30))
def test_no_accepted_forms_score_as_before(task, values, prediction):
    ref = values[0] if task in ("one_field", "numeric_extremum") else values
    n = 1 if not isinstance(ref, list) else len(ref)
    assert score(task, ref, prediction, [[]] * n) == score(task, ref, prediction)
    assert score(task, ref, prediction, None) == score(task, ref, prediction)

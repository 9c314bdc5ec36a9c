"""Scorer rules (paper 4.2 Metrics, C.4): extraction, splitting, matching, task scores."""

from __future__ import annotations

import argparse

import pytest

from treeagent import scoring
from treeagent.scoring import TASKS, extract_answer, match_value, score, split_values

# ---------------------------------------------------------------- extraction

EXTRACT = [
    # (response, extracted answer)
    ("\\boxed{42}", "42"),
    ("first \\boxed{1} then \\boxed{2}", "2"),  # last boxed wins
    ("\\boxed{\\text{Anza, CA}}", "Anza, CA"),  # \text unwrapped
    ("\\boxed{{a}, {b}}", "{a}, {b}"),  # nested braces balanced
    ("\\boxed{f(\\{x\\}) = {1}}", "f(x) = {1}"),  # escaped braces do not count
    ("\\boxed{1{,}234}", "1,234"),
    ("so \\boxed{42", ""),  # unclosed: malformed
    ("<think>the answer is 7 \\boxed{7}</think>The answer is 8.", "8."),
    ("<think>unclosed reasoning \\boxed{3}", ""),
    ("stray reasoning </think>\n\\boxed{5}", "5"),
    ("Let me see.\nThe answer is: Anza, CA\nBecause ...", "Anza, CA"),
    ("so the ANSWER IS 12 records", "12 records"),
    ("**Final Answer:** 3.5", "3.5"),
    ("Answer:\n\n- a\n- b\n\nThat is all.", "- a\n- b"),
    ("I looked.\n\nparis\n\n", "paris"),
    ("Here:\n```json\n[1,\n 2]\n```", "[1,\n 2]"),
    ('Result:\n[\n  "a",\n  "b"\n]', '[\n  "a",\n  "b"\n]'),
    ("", ""),
    (None, ""),
    ("   \n\t", ""),
]


@pytest.mark.parametrize(("text", "expected"), EXTRACT)
def test_extract_answer(text, expected):
    assert extract_answer(text) == expected


# ---------------------------------------------------------------- splitting

SPLIT = [
    ("a, b, c", ["a", "b", "c"]),
    ("a, b and c", ["a", "b", "c"]),
    ("a, b, and c", ["a", "b", "c"]),
    ("a; b, c", ["a", "b, c"]),  # semicolons outrank commas
    ("- a, b\n- c", ["a, b", "c"]),  # lines outrank both; bullets removed
    ("1. x\n2) y", ["x", "y"]),
    ('["x, y", 3, true, null]', ["x, y", "3", "true", "null"]),
    ("['p', 'q']", ["p", "q"]),  # Python-style list
    ('{"mag": 3.2, "place": "Anza"}', ["3.2", "Anza"]),  # object: values in order
    ("[a, b]", ["a", "b"]),  # unparseable list unwrapped
    ("1,234, 5", ["1,234", "5"]),  # thousands separator kept
    ("1,234,567", ["1,234,567"]),
    ("3,4", ["3", "4"]),
    ("**a, b**", ["a", "b"]),
    ("a,", ["a"]),
    ("", []),
]


@pytest.mark.parametrize(("answer", "expected"), SPLIT)
def test_split_values(answer, expected):
    assert split_values(answer) == expected


# ---------------------------------------------------------------- matching

MATCH = [
    # text: case and surrounding formatting
    ("Anza, CA", "anza, ca", True),
    ('"Anza"', "Anza", True),
    ("**Anza**", "Anza", True),
    ("`Anza`.", "Anza", True),
    ("  anza  ", "Anza", True),
    ("Anza!", "Anza", True),
    ("“Anza”", "Anza", True),
    ("Anza  CA", "Anza CA", True),
    ("Anzas", "Anza", False),
    ("", "Anza", False),
    # numbers: tolerance max(0.01, 0.1% |ref|)
    ("100.099", 100, True),
    ("100.101", 100, False),
    ("99.901", 100, True),
    ("99.899", 100, False),
    ("5.009", 5, True),  # 0.01 absolute floor for small references
    ("5.011", 5, False),
    ("0.0099", 0, True),
    ("0.0101", 0, False),
    ("-1000.9", -1000, True),  # 0.1% of |-1000| = 1
    ("-1001.1", -1000, False),
    ("1,234.5", 1234.5, True),
    ("4.5e3", 4500, True),
    ("4.5E3", 4500.0, True),
    ("\u22123", -3, True),  # Unicode minus
    ("12.5%", 12.5, True),
    ("12.5%", 0.125, True),
    ("12.5%", 1.25, False),
    ("3.2", "3.2", True),  # numeric string reference
    ("3.20", "3.2", True),
    ("1234", "1,234", True),
    ("3.2 km", 3.2, False),  # units are not formatting
    ("true", True, True),
    ("1", True, False),  # booleans are not numbers
    ("null", None, True),
    # natural forms of one value: a unit mark after a space, parentheses
    ('77.6 "', '77.6"', True),
    ('77.6"', '77.6 "', True),
    ("45 %", "45%", True),
    ("(3)", 3, True),
    ("(3)", "3", True),
    ("3", "(3)", True),
    ('77.6 "', '77.5"', False),  # still a different value
    ("(3)", 4, False),
]


@pytest.mark.parametrize(("pred", "ref", "expected"), MATCH)
def test_match_value(pred, ref, expected):
    assert match_value(pred, ref) is expected


def test_tolerance_constants_follow_c4():
    assert (scoring.ABS_TOLERANCE, scoring.REL_TOLERANCE) == (0.01, 0.001)
    assert scoring.within_tolerance(10.01, 10) and not scoring.within_tolerance(10.0101, 10)
    assert scoring.within_tolerance(20.02, 20) and not scoring.within_tolerance(20.0201, 20)


# ---------------------------------------------------------------- task scores

SCORES = [
    # ordered multi-value: position i against reference i
    ("two_fields", ["Anza", 3.2], "Anza, 3.2", 1.0),
    ("two_fields", ["Anza", 3.2], "3.2, Anza", 0.0),
    ("four_fields", ["a", "b", "c", "d"], "a, b, x, d", 0.75),
    ("four_fields", ["a", "b", "c", "d"], "a, b", 0.5),  # 2 / max(2, 4)
    ("four_fields", ["a", "b", "c", "d"], "a, b, c, d, e, f, g, h", 0.5),  # 4 / 8
    ("two_records", ["Anza, CA", "Ridgecrest, CA"], "Anza, CA, Ridgecrest, CA", 1.0),
    ("two_records", ["Anza, CA", "Ridgecrest, CA"], "Anza, CA; Ridgecrest, CA", 1.0),
    ("two_records", ["Anza, CA", "Ridgecrest, CA"], "Ridgecrest, CA; Anza, CA", 0.0),
    ("four_records", [1, 2, 3, 4], "\\boxed{[1, 2, 3, 4]}", 1.0),
    ("four_records", [1, 2, 3, 4], '["1", "2", "5", "4"]', 0.75),
    ("two_records", ["Trinidad and Tobago", "Peru"], "Trinidad and Tobago and Peru", 1.0),
    # unordered: most_frequent
    ("most_frequent", ["CA", "NV"], "nv, ca", 1.0),
    ("most_frequent", ["CA", "NV"], "CA, CA", 0.5),  # one-to-one matching
    ("most_frequent", ["CA", "NV", "AK"], "AK and CA", 2 / 3),
    ("most_frequent", ["CA", "NV"], "CA, NV, AK, HI", 0.5),
    ("most_frequent", ["Anza, CA", "NV"], "NV, Anza, CA", 1.0),
    # single value: 1 or 0
    ("one_field", "Anza, CA", "The answer is **Anza, CA**.", 1.0),
    ("one_field", ["Anza"], "anza", 1.0),
    ("one_field", "Anza", "Anza, Ridgecrest", 0.0),  # two values for one field
    ("conditional_count", 12, "\\boxed{12}", 1.0),
    ("conditional_count", 12, "There are 12 records.", 1.0),  # exactly one number
    ("conditional_count", 12, "12 of 40 records", 0.0),  # two numbers: ambiguous
    ("conditional_count", 12, "13", 0.0),
    ("numeric_extremum", 1234.5, "The answer is 1,234.5", 1.0),
    ("numeric_extremum", 4500, "4.5e3", 1.0),
    ("numeric_extremum", 100, "100.099", 1.0),
    ("numeric_extremum", 100, "100.101", 0.0),
    ("numeric_extremum", 0.5, "<think>0.5</think>0.7", 0.0),
    # empty, malformed, unavailable
    ("one_field", "x", None, 0.0),
    ("one_field", "x", "", 0.0),
    ("two_fields", ["a", "b"], "\\boxed{a, b", 0.0),
    ("most_frequent", ["a"], "<think>a</think>", 0.0),
    ("four_fields", ["a", "b", "c", "d"], "**.**", 0.0),
]


@pytest.mark.parametrize(("task", "ref", "pred", "expected"), SCORES)
def test_score(task, ref, pred, expected):
    assert score(task, ref, pred) == pytest.approx(expected)


def test_task_ids_are_the_eight_paper_tasks():
    assert TASKS == ("one_field", "two_fields", "four_fields", "two_records", "four_records",
                     "conditional_count", "most_frequent", "numeric_extremum")


def test_unknown_task_and_bad_single_reference_raise():
    with pytest.raises(ValueError, match="unknown task"):
        score("three_fields", ["a"], "a")
    with pytest.raises(ValueError, match="single reference"):
        score("conditional_count", [1, 2], "1")


# ---------------------------------------------------------------- CLI

def _cli(argv):
    from treeagent.report import cli

    parser = argparse.ArgumentParser(prog="treeagent")
    cli.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


def test_cli_score_prints_score(capsys):
    rc = _cli(["score", "--task", "four_fields", "--reference", '["a","b","c","d"]',
               "--prediction", "A, b, x"])
    assert rc == 0
    assert capsys.readouterr().out.strip() == "0.5"


def test_cli_score_bad_reference(capsys):
    rc = _cli(["score", "--task", "one_field", "--reference", "[1,", "--prediction", "1"])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.startswith("error: --reference: ") and err.count("\n") == 1


def test_score_is_a_fraction_for_any_text():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    @settings(max_examples=300, deadline=None)
    @given(st.sampled_from(TASKS), st.text(alphabet=st.characters(), max_size=80))
    def check(task, text):
        ref = 7 if task in scoring.SINGLE_VALUE_TASKS else ["a, b", 7, "c"]
        value = score(task, ref, text)
        assert 0.0 <= value <= 1.0
        # a final empty \boxed{} is an empty answer, whatever precedes it
        assert score(task, ref, text + "\\boxed{}") == 0.0

    check()

"""Section-count match rate (paper 4.5, C.5) from evidence example rows, by hand."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from treeagent.pipeline.evidence import MatchRate, match_rates

K8, K16 = 8192, 16384


def _row(agent, fmt, length, method, sections, flat_sections, ex="e"):
    return {"example_id": ex, "agent": agent, "format": fmt, "length": length,
            "method": method, "sections": sections, "flat_sections": flat_sections}


# (agent, format, length, n_x(B*), T_flat) of the TreeAgent rows
TREEAGENT = [
    ("memagent", "json", K8, 2, 2), ("memagent", "json", K8, 3, 2),
    ("memagent", "json", K16, 4, 4), ("memagent", "json", K16, 4, 4),
    ("memagent", "yaml", K8, 1, 2),
    ("infmem", "json", K8, 2, 2), ("infmem", "json", K8, 2, 2),
    ("infmem", "json", K16, 5, 4), ("infmem", "json", K16, 4, 4),
    ("infmem", "yaml", K8, 2, 2),
]


def _rows():
    rows = [_row(a, f, n, "treeagent", s, t, ex=f"{f}-{n}-{i}")
            for i, (a, f, n, s, t) in enumerate(TREEAGENT)]
    # Flat and Tree rows never count (Tree's count equals TreeAgent's, Flat's is T_flat)
    rows += [_row(a, f, n, "flat", t, t) for a, f, n, _, t in TREEAGENT]
    rows += [_row(a, f, n, "tree", 99, t) for a, f, n, _, t in TREEAGENT]
    # a TreeAgent row without a count is left out, not counted as a mismatch
    rows.append(_row("infmem", "json", K8, "treeagent", None, 2))
    return rows


def test_match_rate_per_agent_and_format_by_hand():
    got = {(r.agent, r.format): r for r in match_rates(_rows())}
    assert got[("memagent", "json")] == MatchRate("memagent", "json", None, 4, 3, 75.0)
    assert got[("infmem", "json")] == MatchRate("infmem", "json", None, 4, 3, 75.0)
    assert got[("memagent", "yaml")] == MatchRate("memagent", "yaml", None, 1, 0, 0.0)
    assert got[("infmem", "yaml")] == MatchRate("infmem", "yaml", None, 1, 1, 100.0)
    # the agent mean weights agents equally (the paper's 74.8% is such a mean)
    assert got[("mean", "json")] == MatchRate("mean", "json", None, 8, None, 75.0)
    assert got[("mean", "yaml")] == MatchRate("mean", "yaml", None, 2, None, 50.0)
    assert [(r.agent, r.format) for r in match_rates(_rows())] == [
        ("memagent", "json"), ("memagent", "yaml"), ("infmem", "json"), ("infmem", "yaml"),
        ("mean", "json"), ("mean", "yaml")]


def test_match_rate_per_length_by_hand():
    got = {(r.agent, r.format, r.length): (r.examples, r.matched, r.rate)
           for r in match_rates(_rows(), by_length=True)}
    assert got[("memagent", "json", K8)] == (2, 1, 50.0)
    assert got[("memagent", "json", K16)] == (2, 2, 100.0)
    assert got[("infmem", "json", K8)] == (2, 2, 100.0)
    assert got[("infmem", "json", K16)] == (2, 1, 50.0)
    assert got[("mean", "json", K8)] == (4, None, 75.0)
    assert got[("mean", "json", K16)] == (4, None, 75.0)
    assert got[("mean", "yaml", K8)] == (2, None, 50.0)


def test_one_agent_has_no_mean_and_no_rows_give_nothing():
    rows = [r for r in _rows() if r["agent"] == "memagent"]
    assert [r.agent for r in match_rates(rows)] == ["memagent", "memagent"]
    assert match_rates([]) == []
    assert match_rates([_row("a", "json", K8, "flat", 2, 2)]) == []


counts = st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), st.sampled_from(["json", "html"]),
                            st.integers(1, 6), st.integers(1, 6)), max_size=40)


@given(counts)
def test_property_rates_are_shares_and_the_mean_lies_between_the_agents(cases):
    rows = [_row(a, f, K8, "treeagent", s, t) for a, f, s, t in cases]
    out = match_rates(rows)
    for r in out:
        assert 0 <= r.rate <= 100
        if r.agent != "mean":
            assert r.matched == sum(1 for a, f, s, t in cases
                                    if (a, f) == (r.agent, r.format) and s == t)
            assert r.examples == sum(1 for a, f, *_ in cases if (a, f) == (r.agent, r.format))
    for mean in (r for r in out if r.agent == "mean"):
        agents = [r.rate for r in out if r.agent != "mean" and r.format == mean.format]
        assert agents  # the agents that have rows of that format
        assert min(agents) - 1e-9 <= mean.rate <= max(agents) + 1e-9
    # per-length rows over a single length give the same rates
    assert [r.rate for r in match_rates(rows, by_length=True)] == pytest.approx(
        [r.rate for r in out])

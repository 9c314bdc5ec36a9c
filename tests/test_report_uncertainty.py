"""Scores with their uncertainty (n, 95% interval, the small-n flag), truthful Missing
cells, notes where columns average different task sets, and Table 4's warning."""

from __future__ import annotations

import math
import re

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from test_report import synthetic_rows
from treeagent.report import tables as T
from treeagent.report import uncertainty as U
from treeagent.report.render import build_report


def test_wilson_matches_hand_values():
    # z = 1.96: 0 of 10 -> [0, z^2 / (n + z^2)]; 5 of 10 -> 0.5 -/+ 0.26339
    assert U.wilson(0, 10) == pytest.approx((0.0, 3.8415 / 13.8415), abs=1e-4)
    assert U.wilson(5, 10) == pytest.approx((0.23659, 0.76341), abs=1e-4)
    assert U.wilson(10, 10)[1] == 1.0 and U.wilson(10, 10)[0] == pytest.approx(0.72247, abs=1e-4)
    assert all(math.isnan(x) for x in U.wilson(0, 0))


@given(st.integers(1, 400).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
@settings(max_examples=200, deadline=None)
def test_wilson_contains_the_proportion_and_narrows_with_n(kn):
    k, n = kn
    lo, hi = U.wilson(k, n)
    assert 0.0 <= lo <= k / n <= hi <= 1.0
    lo2, hi2 = U.wilson(4 * k, 4 * n)  # same proportion, four times the examples
    assert hi2 - lo2 < hi - lo


@given(st.lists(st.floats(0.01, 100.0), min_size=1, max_size=50))
def test_kish_n_is_n_for_equal_weights_and_at_most_n(weights):
    assert U.kish_n([1.0] * len(weights)) == pytest.approx(len(weights))
    assert 1.0 - 1e-9 <= U.kish_n(weights) <= len(weights) + 1e-9


def test_binary_cells_of_equal_size_give_wilson_of_the_pooled_count():
    iv = U.weighted_interval([(1.0, [1, 0, 0, 0]), (1.0, [1, 1, 0, 0])])
    assert iv.method == U.WILSON and iv.n == 8
    assert (iv.lo, iv.hi) == pytest.approx(U.wilson(3, 8))


@given(st.lists(st.lists(st.sampled_from([0.0, 0.25, 0.5, 1.0]), min_size=1, max_size=8),
                min_size=1, max_size=5), st.integers(0, 2**16))
@settings(max_examples=60, deadline=None)
def test_interval_contains_the_weighted_mean_and_is_seeded(cells, seed):
    strata = [(1.0 / (i + 1), v) for i, v in enumerate(cells)]
    mean = sum(w * sum(v) / len(v) for w, v in strata) / sum(w for w, _ in strata)
    iv = U.weighted_interval(strata, seed=seed)
    assert iv.n == sum(len(v) for v in cells)
    assert iv.lo - 1e-9 <= mean <= iv.hi + 1e-9
    assert 0.0 <= iv.lo <= iv.hi <= 1.0
    assert U.weighted_interval(strata, seed=seed) == iv


def test_table1_intervals_weigh_examples_as_c4_does():
    scores = pd.DataFrame(synthetic_rows())
    iv = U.table1_intervals(scores)
    # InfMem Flat JSON: binary scores, cells of 3, 1, 4 and 2 examples weighted 1/4 each:
    # example weights 1/12 (x3), 1/4, 1/16 (x4), 1/8 (x2) -> Kish n_eff = 1 / 0.1302083
    n_eff = 1 / (3 / 144 + 1 / 16 + 4 / 256 + 2 / 64)
    got = iv[("infmem", "flat")]["json"]
    assert got.method == U.WILSON and got.n == 10 and got.small
    assert (got.lo, got.hi) == pytest.approx(U.wilson(0.25 * n_eff, n_eff))
    # MemAgent Flat JSON holds a 0.5: partial scores, so the bootstrap
    assert iv[("memagent", "flat")]["json"].method == U.BOOTSTRAP
    # a missing cell leaves the score missing, and so its interval
    assert not iv[("memagent", "tree")]["json"].known
    # every interval holds its Table 1 score; the agent mean counts both agents' examples
    t1 = T.table1(T.cell_means(scores))
    for (group, method), row in iv.items():
        for col, x in row.items():
            v = t1.value(group, method, col)
            if not math.isnan(v):
                assert 100 * x.lo - 1e-6 <= v <= 100 * x.hi + 1e-6, (group, method, col)
    assert iv[("mean", "treeagent")]["avg"].n == 36 and not iv[("mean", "treeagent")]["avg"].small


def _plain(line: str) -> str:
    """A report.md table row without its intervals and n."""
    return re.sub(r" \\\[[^|]*?\\\] n=\d+†?", "", line)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("uncertainty")
    rows = [r for r in synthetic_rows() if not (r["dataset"] == "json" and r["agent"] == "infmem"
                                                and r["method"] == "flat"
                                                and r["example_id"].endswith("-1"))]
    grid = [(d, t, n) for d in ("json", "yaml", "html") for t in ("one_field", "conditional_count")
            for n in (8192, 16384)] + [("yaml", "most_frequent", 8192)]
    metrics = build_report(pd.DataFrame(rows), out, grid=grid)
    return out, metrics, (out / "report.md").read_text(encoding="utf-8")


def test_table1_shows_interval_n_and_flag_beside_every_score(report):
    _, metrics, md = report
    lines = md.splitlines()
    flat = next(line for line in lines if line.startswith("| MemAgent | Flat |"))
    cells = [c.strip() for c in flat.strip("|").split("|")][2:]
    assert len(cells) == 3
    for cell in cells:  # score [lo, hi] n=N, flagged: 10, 8 and 18 examples (< 20)
        assert re.fullmatch(r"\d+\.\d\d \\\[\d+\.\d, \d+\.\d\\\] n=\d+†", cell), cell
    assert _plain(flat) == "| MemAgent | Flat | 58.33 | 50.00 | 54.17 |"
    mean = next(line for line in lines if line.startswith("|  | TreeAgent |")
                and "n=36" in line)
    assert mean.rstrip(" |").endswith("n=36**")  # 36 examples: not flagged
    assert "fewer than 20 examples" in md
    assert metrics["intervals"]["infmem"]["treeagent"]["json"]["n"] == 10
    assert metrics["intervals"]["infmem"]["treeagent"]["json"]["method"] == U.WILSON


def test_per_task_tables_show_interval_and_n(report):
    _, _, md = report
    row = next(line for line in md.splitlines()
               if line.startswith("| InfMem | Flat | Conditional Count |"))
    lo, hi = U.wilson(3, 3)  # four examples, one dropped by the fixture
    assert f"| 100.0 \\[{100 * lo:.1f}, 100.0\\] n=3† |" in row


def test_missing_cells_list_grid_cells_with_no_example(report):
    _, metrics, md = report
    missing = md[md.index("## Missing cells"):]
    # one InfMem Flat JSON example dropped: no cell is empty by that; the build's grid
    # adds HTML (4 cells) and YAML most_frequent at 8K with no example at all
    assert "## Missing cells: 20" in missing and metrics["missing_cells"] == 20
    assert "| html | all | all | one\\_field | 8K | no examples built |" in missing
    assert "| yaml | all | all | most\\_frequent | 8K | no examples built |" in missing


def test_a_note_where_columns_average_different_task_sets(report):
    _, _, md = report
    assert "> YAML averages 4 of 5 task × length cells (no examples: " in md
    assert "> HTML has no scored examples" in md
    assert "compare them with care" in md
    # the same design without a grid and with every dataset alike: no note
    cells = T.cell_means(pd.DataFrame(synthetic_rows()))
    assert T.column_notes(cells) == []
    whole = [(d, t, n) for d in ("json", "yaml", "html") for t in ("one_field", "conditional_count")
             for n in (8192, 16384)]  # only a whole dataset lacks: AVG. said to leave it out
    assert T.column_notes(cells, whole) == [
        "HTML has no scored examples: no column, and AVG. leaves it out.",
        "AVG. averages the datasets shown only."]
    assert T.column_notes(cells, [(d, t, n) for d in ("json", "yaml")
                                  for t in ("one_field", "conditional_count")
                                  for n in (8192, 16384)]) == []


def test_table4_warns_when_few_matched_pairs(tmp_path):
    rows = [r for r in synthetic_rows() if r["dataset"] == "json"
            and r["example_id"] in {"json-one_field-8192-0", "json-one_field-16384-0"}]
    build_report(pd.DataFrame(rows), tmp_path)
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    table4 = md[md.index("## Table 4"):md.index("## Section-count")]
    assert "| MemAgent | 0.00 | \\[—, —\\] | 2† |" not in table4
    assert re.search(r"\| MemAgent \| [^|]+ \| [^|]+ \| 2† \|", table4), table4
    assert "Too few matched pairs to mean anything (MemAgent 2, InfMem 2" in table4
    # 10 pairs are still too few (the rule: fewer than 20)
    build_report(pd.DataFrame(synthetic_rows()), tmp_path / "ten")
    md = (tmp_path / "ten" / "report.md").read_text(encoding="utf-8")
    assert "| 10† |" in md and "Too few matched pairs" in md

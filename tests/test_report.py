"""Report numbers against hand-computed values (paper 4.3-4.5, C.4-C.5).

The synthetic table below has cells with different example counts, so the C.4 rule
(mean per cell, then cells equally) differs from a plain mean over examples.
"""

from __future__ import annotations

import argparse
import json
import math
import re

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from treeagent.report import tables as T
from treeagent.report.schema import SCORED_SCHEMA, score_rows, write_scores

K8, K16 = 8192, 16384

# JSON cells: (task, length) -> agent -> (flat scores, treeagent scores), paired by position.
JSON_CELLS = {
    ("one_field", K8): {"memagent": ([1, 0, 0], [1, 1, 0]), "infmem": ([0, 0, 0], [0, 0, 1])},
    ("one_field", K16): {"memagent": ([1], [1]), "infmem": ([0], [1])},
    ("conditional_count", K8): {"memagent": ([0, 0, 0, 1], [1, 0, 0, 1]),
                                "infmem": ([1, 1, 1, 1], [1, 1, 1, 1])},
    ("conditional_count", K16): {"memagent": ([0.5, 1], [1, 1]), "infmem": ([0, 0], [0, 1])},
}
# YAML: every cell has two examples with the same score per (agent, method).
YAML_SCORE = {("memagent", "flat"): 0.5, ("memagent", "treeagent"): 0.75,
              ("infmem", "flat"): 0.25, ("infmem", "treeagent"): 0.5}


def _row(**kw):
    base = {"model": "m", "model_revision": "r1", "prediction": "x", "reference": '"x"',
            "calls": None, "input_tokens": None, "output_tokens": None, "sections": None,
            "flat_sections": None, "seconds": 1.0}
    return {**base, **kw}


def synthetic_rows() -> list[dict]:
    rows = []
    m_treeagent_sections = iter([5, 5, 6, 5, 5, 6, 5, 5, 6, 5])  # 7 of 10 equal T_flat = 5
    i_treeagent_sections = iter([4, 3, 4, 4, 4, 4, 3, 4, 4, 4])  # 8 of 10 equal 4
    i_missing_tokens = {"json-one_field-8192-1"}
    for (task, length), by_agent in JSON_CELLS.items():
        for agent, (flat, tree) in by_agent.items():
            for i, (f, t) in enumerate(zip(flat, tree)):
                ex = f"json-{task}-{length}-{i}"
                common = {"example_id": ex, "dataset": "json", "task": task, "length": length,
                          "agent": agent}
                if agent == "memagent":
                    t_calls = 12 if task == "conditional_count" and length == K8 else 11
                    rows.append(_row(**common, method="flat", score=f, calls=10,
                                     input_tokens=1000, sections=5, flat_sections=5))
                    rows.append(_row(**common, method="treeagent", score=t, calls=t_calls,
                                     input_tokens=950, sections=next(m_treeagent_sections),
                                     flat_sections=5))
                else:
                    rows.append(_row(**common, method="flat", score=f, calls=5,
                                     input_tokens=100, sections=4))
                    rows.append(_row(**common, method="treeagent", score=t, calls=5,
                                     input_tokens=None if ex in i_missing_tokens else 110,
                                     sections=next(i_treeagent_sections)))
    for (agent, method), s in YAML_SCORE.items():
        for task in ("one_field", "conditional_count"):
            for length in (K8, K16):
                for i in range(2):
                    rows.append(_row(example_id=f"yaml-{task}-{length}-{i}", dataset="yaml",
                                     task=task, length=length, agent=agent, method=method,
                                     score=s))
    # "tree" only for one MemAgent JSON cell: every other Tree cell is missing.
    rows.append(_row(example_id="json-one_field-8192-0", dataset="json", task="one_field",
                     length=K8, agent="memagent", method="tree", score=1.0))
    return rows


@pytest.fixture(scope="module")
def scores() -> pd.DataFrame:
    return pd.DataFrame(synthetic_rows())


@pytest.fixture(scope="module")
def cells(scores) -> pd.DataFrame:
    return T.cell_means(scores)


# Hand-computed (C.4): JSON dataset scores average the four (task, length) cell means.
M_FLAT_JSON = (1 / 3 + 1 + 1 / 4 + 3 / 4) / 4  # 7/12
M_TREE_JSON = (2 / 3 + 1 + 1 / 2 + 1) / 4  # 19/24
I_FLAT_JSON = (0 + 0 + 1 + 0) / 4
I_TREE_JSON = (1 / 3 + 1 + 1 + 1 / 2) / 4  # 17/24
M_FLAT_AVG = (M_FLAT_JSON + 0.5) / 2  # 13/24
M_TREE_AVG = (M_TREE_JSON + 0.75) / 2  # 37/48
I_FLAT_AVG = (I_FLAT_JSON + 0.25) / 2
I_TREE_AVG = (I_TREE_JSON + 0.5) / 2  # 29/48


def test_cell_means_and_counts(cells):
    c = cells.set_index(T.KEY)
    assert c.loc[("json", "conditional_count", K8, "memagent", "flat"), "score"] == 0.25
    assert c.loc[("json", "conditional_count", K8, "memagent", "flat"), "n"] == 4
    assert c.loc[("json", "one_field", K8, "memagent", "flat"), "score"] == pytest.approx(1 / 3)


def test_table1_matches_hand_computation(cells):
    t1 = T.table1(cells)
    assert t1.datasets == ["json", "yaml"] and t1.methods == ["flat", "tree", "treeagent"]
    assert t1.value("memagent", "flat", "json") == pytest.approx(100 * 7 / 12)
    assert t1.value("memagent", "flat", "json") == pytest.approx(100 * M_FLAT_JSON)
    # not the example-weighted mean (4.5 / 10)
    assert t1.value("memagent", "flat", "json") != pytest.approx(45.0)
    assert t1.value("memagent", "treeagent", "json") == pytest.approx(100 * 19 / 24)
    assert t1.value("infmem", "flat", "json") == pytest.approx(25.0)
    assert t1.value("infmem", "treeagent", "json") == pytest.approx(100 * 17 / 24)
    assert t1.value("memagent", "flat", "avg") == pytest.approx(100 * 13 / 24)
    assert t1.value("memagent", "treeagent", "avg") == pytest.approx(100 * 37 / 48)
    assert t1.value("infmem", "flat", "avg") == pytest.approx(25.0)
    assert t1.value("infmem", "treeagent", "avg") == pytest.approx(100 * 29 / 48)
    # agent-mean group: agents equally
    assert t1.value("mean", "flat", "json") == pytest.approx(100 * 5 / 12)
    assert t1.value("mean", "flat", "avg") == pytest.approx(100 * 19 / 48)
    assert t1.value("mean", "treeagent", "avg") == pytest.approx(100 * 11 / 16)


def test_missing_cells_stay_missing(cells):
    t1 = T.table1(cells)
    for agent in ("memagent", "infmem", "mean"):
        for col in ("json", "yaml", "avg"):
            assert math.isnan(t1.value(agent, "tree", col)), (agent, col)
    missing = T.missing_cells(cells)
    # Tree: MemAgent lacks 3 JSON + 4 YAML cells, InfMem all 8.
    assert len(missing) == 15
    assert set(missing["method"]) == {"tree"}


def test_length_curve_figure2_data(cells):
    curve = T.length_curve(cells).set_index(["agent", "method", "length"])["score"]
    # tasks equally within each dataset at that length, then datasets equally
    assert curve[("memagent", "flat", K8)] == pytest.approx(100 * ((1 / 3 + 1 / 4) / 2 + 0.5) / 2)
    assert curve[("memagent", "flat", K16)] == pytest.approx(100 * ((1 + 3 / 4) / 2 + 0.5) / 2)
    assert curve[("memagent", "treeagent", K8)] == pytest.approx(100 * 2 / 3)
    assert curve[("infmem", "treeagent", K16)] == pytest.approx(100 * ((1 + 1 / 2) / 2 + 0.5) / 2)
    assert set(curve.index.get_level_values("method")) == {"flat", "treeagent"}


def test_task_gains_figure3_data(cells):
    g = T.task_gains(cells, "json").set_index(["agent", "task"])["gain"]
    assert g[("memagent", "one_field")] == pytest.approx(100 * (5 / 6 - 2 / 3))
    assert g[("memagent", "conditional_count")] == pytest.approx(25.0)
    assert g[("infmem", "one_field")] == pytest.approx(100 * 2 / 3)
    assert g[("infmem", "conditional_count")] == pytest.approx(25.0)
    assert g[("mean", "one_field")] == pytest.approx((100 / 6 + 200 / 3) / 2)


def _independent_bootstrap(diffs, resamples=20000, seed=7):
    import random

    rng = random.Random(seed)
    means = sorted(sum(rng.choice(diffs) for _ in diffs) / len(diffs) for _ in range(resamples))
    return means[int(0.025 * resamples)], means[int(0.975 * resamples) - 1]


def test_paired_differences_table4(scores):
    d = T.paired_differences(scores, "json").set_index("agent")
    # MemAgent diffs (%): 0,100,0 | 0 | 100,0,0,0 | 50,0 -> mean 25
    m_diffs = [0, 100, 0, 0, 100, 0, 0, 0, 50, 0]
    assert d.loc["memagent", "n"] == 10
    assert d.loc["memagent", "diff"] == pytest.approx(25.0)
    lo, hi = d.loc["memagent", "lo"], d.loc["memagent", "hi"]
    # no difference is negative, so no resampled mean is: the normal approximation's
    # lower bound (-1.34) is impossible, the bootstrap's is not
    assert 0.0 <= lo < 25.0 < hi <= 100.0
    ref_lo, ref_hi = _independent_bootstrap(m_diffs)
    assert lo == pytest.approx(ref_lo, abs=3.0) and hi == pytest.approx(ref_hi, abs=3.0)
    # InfMem diffs: 0,0,100 | 100 | 0,0,0,0 | 0,100 -> mean 30
    assert d.loc["infmem", "diff"] == pytest.approx(30.0)
    ref_lo, ref_hi = _independent_bootstrap([0, 0, 100, 100, 0, 0, 0, 0, 0, 100])
    assert d.loc["infmem", "lo"] == pytest.approx(ref_lo, abs=3.0)
    assert d.loc["infmem", "hi"] == pytest.approx(ref_hi, abs=3.0)
    again = T.paired_differences(scores, "json").set_index("agent")
    assert again.loc["memagent", "lo"] == lo and again.loc["memagent", "hi"] == hi  # seeded


def test_bootstrap_ci_degenerate_and_small_inputs():
    assert T.bootstrap_ci([40.0] * 7) == (40.0, 40.0)
    assert all(math.isnan(x) for x in T.bootstrap_ci([10.0]))
    lo, hi = T.bootstrap_ci([0.0, 100.0] * 50, seed=1)
    assert 35.0 < lo < 50.0 < hi < 65.0


def test_computation_ratios_table3(scores):
    r = T.computation_ratios(scores, "json").set_index("agent")
    assert r.loc["memagent", "calls"] == pytest.approx((6 * 11 + 4 * 12) / 100)
    assert r.loc["memagent", "input_tokens"] == pytest.approx(0.95)
    assert r.loc["infmem", "calls"] == pytest.approx(1.0)
    # one TreeAgent row lacks input_tokens: that pair is left out, not counted as zero
    assert r.loc["infmem", "input_tokens"] == pytest.approx(1.1)


def test_section_match_rate(scores):
    s = T.section_match_rate(scores, "json").set_index("agent")
    assert s.loc["memagent", "rate"] == pytest.approx(70.0)  # own flat_sections
    assert s.loc["infmem", "rate"] == pytest.approx(80.0)  # falls back to the Flat row
    assert s.loc["mean", "rate"] == pytest.approx(75.0)


def test_check_scores_rejects_duplicates_and_mixed_revisions(scores):
    with pytest.raises(ValueError, match="duplicate"):
        T.check_scores(pd.concat([scores, scores.iloc[:1]]))
    mixed = scores.copy()
    mixed.loc[mixed.index[0], "model_revision"] = "r2"
    with pytest.raises(ValueError, match="model revisions"):
        T.check_scores(mixed)


# ---------------------------------------------------------------- written report

@pytest.fixture(scope="module")
def report_dir(scores, tmp_path_factory):
    from treeagent.report.render import build_report

    out = tmp_path_factory.mktemp("reports")
    metrics = build_report(scores, out)
    return out, metrics


def test_metrics_json(report_dir):
    out, metrics = report_dir
    data = json.loads((out / "metrics.json").read_text())
    assert data == json.loads(json.dumps(metrics))
    assert data["overall"]["memagent"]["flat"] == pytest.approx(100 * M_FLAT_AVG, abs=1e-4)
    assert data["overall"]["infmem"]["treeagent"] == pytest.approx(100 * I_TREE_AVG, abs=1e-4)
    assert data["overall"]["memagent"]["tree"] is None
    assert data["agent_mean"]["treeagent"] == pytest.approx(68.75)
    assert data["gain"]["memagent"] == pytest.approx(100 * (M_TREE_AVG - M_FLAT_AVG), abs=1e-4)
    assert data["gain"]["mean"] == pytest.approx(100 * (11 / 16 - 19 / 48), abs=1e-4)
    assert data["section_match_rate"]["mean"] == pytest.approx(75.0)
    assert data["paired"]["memagent"]["diff"] == pytest.approx(25.0)
    assert data["missing_cells"] == 15


def _plain(line: str) -> str:
    """A report.md table row without its intervals and n (test_report_uncertainty.py
    checks those)."""
    return re.sub(r" \\\[[^|]*?\\\] n=\d+†?", "", line)


def test_markdown_table1_and_missing(report_dir):
    out, _ = report_dir
    md = (out / "report.md").read_text()
    lines = [_plain(line) for line in md.splitlines()]
    header = next(line for line in lines if line.startswith("| Memory agent | Method"))
    assert header == "| Memory agent | Method | JSON | YAML | AVG. |"
    assert "| MemAgent | Flat | 58.33 | 50.00 | 54.17 |" in lines
    assert "|  | Tree | — | — | — |" in lines
    assert "|  | TreeAgent | **79.17** | **75.00** | **77.08** |" in lines
    assert "| Two-agent mean | Flat | 41.67 | 37.50 | 39.58 |" in lines
    table4 = next(line for line in lines if line.startswith("| MemAgent | 25.00 | \\["))
    assert table4.endswith("| 10† |") and "[-" not in table4  # bootstrap: no negative bound
    assert "| MemAgent | 1.140 | 0.950 | 10 |" in lines  # Table 3
    assert "| Agent mean | 75.00 | 20 |" in lines  # match rate
    assert "Missing cells: 15" in md


def test_html_and_figures(report_dir):
    out, _ = report_dir
    page = (out / "index.html").read_text()
    assert 'data-file="figures/figure2.png"' in page and 'data-file="figures/figure3.png"' in page
    assert '<td class="num"><b>79.17 [' in page and '<td class="num">—</td>' in page
    for name in ("figure2.png", "figure3.png"):
        data = (out / "figures" / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
        assert len(data) > 10_000


# ---------------------------------------------------------------- schema and scoring rows

def test_score_rows_and_write_scores(tmp_path):
    preds = pa.table({
        "example_id": ["a", "b", "c", "d"],
        "dataset": ["json"] * 4,
        "task": ["two_fields", "most_frequent", "conditional_count", "one_field"],
        "length": [8192] * 4,
        "agent": ["memagent"] * 4,
        "method": ["flat"] * 4,
        "prediction": ["\\boxed{Anza, 3.2}", "NV, CA, AK", "<think>..</think>There are 7.",
                       None],
        "reference": ['["Anza", 3.2]', '["CA", "NV"]', "7", '"x"'],
        "calls": [3, 3, 3, 3],
        "extra": [1, 2, 3, 4],
    })
    scored = score_rows(preds)
    assert scored.schema.equals(SCORED_SCHEMA)
    assert scored.column("score").to_pylist() == [1.0, 2 / 3, 1.0, 0.0]
    assert scored.column("sections").null_count == 4  # absent optional column -> null
    path = write_scores(scored, tmp_path / "runs" / "scores.parquet")
    back = pq.read_table(path)
    assert back.schema.equals(SCORED_SCHEMA, check_metadata=False)
    assert back.column("prediction").to_pylist()[3] is None
    assert back.schema.field("score").metadata[b"doc"].startswith(b"answer score")


def test_score_rows_bad_reference_names_example():
    preds = [{"example_id": "z9", "dataset": "json", "task": "one_field", "length": 8192,
              "agent": "a", "method": "flat", "prediction": "1", "reference": "[1,"}]
    with pytest.raises(ValueError, match="z9"):
        score_rows(preds)


# ---------------------------------------------------------------- CLI: query and report

def _cli(argv):
    from treeagent.report import cli

    parser = argparse.ArgumentParser(prog="treeagent")
    cli.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


@pytest.fixture()
def project(tmp_path, monkeypatch):
    rows = synthetic_rows()
    half = len(rows) // 2
    write_scores(pd.DataFrame(rows[:half]), tmp_path / "runs" / "memagent" / "scores.parquet")
    write_scores(pd.DataFrame(rows[half:]), tmp_path / "runs" / "other" / "scores-2.parquet")
    (tmp_path / "validated").mkdir()
    pq.write_table(pa.table({"example_id": ["e1", "e2"]}),
                   tmp_path / "validated" / "examples.parquet")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_query_over_parquet_views(project, capsys):
    rc = _cli(["query", "SELECT agent, method, n FROM cells WHERE dataset = 'json' AND "
               "task = 'conditional_count' AND length = 8192 ORDER BY agent, method"])
    out = capsys.readouterr().out.splitlines()
    assert rc == 0
    assert out[0].split() == ["agent", "method", "n"]
    assert [line.split() for line in out[2:6]] == [
        ["infmem", "flat", "4"], ["infmem", "treeagent", "4"],
        ["memagent", "flat", "4"], ["memagent", "treeagent", "4"]]
    assert out[-1] == "(4 rows)"
    rc = _cli(["query", "SELECT count(*) AS k FROM examples"])
    assert rc == 0 and capsys.readouterr().out.splitlines()[2].strip() == "2"


def test_query_sql_error_is_one_line(project, capsys):
    rc = _cli(["query", "SELEC nonsense"])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("error: ") and err.count("\n") == 1


def test_report_cli_writes_outputs_and_database(project, capsys):
    rc = _cli(["report", "--scores", "runs/**/scores*.parquet", "--out", "reports"])
    assert rc == 0, capsys.readouterr().err
    metrics = json.loads((project / "reports" / "metrics.json").read_text())
    assert metrics["overall"]["memagent"]["treeagent"] == pytest.approx(100 * 37 / 48, abs=1e-4)
    capsys.readouterr()
    rc = _cli(["query", "--db", "reports/treeagent.duckdb",
               "SELECT round(100 * avg(diff), 4) AS d FROM paired "
               "WHERE agent = 'memagent' AND dataset = 'json'"])
    assert rc == 0
    assert capsys.readouterr().out.splitlines()[2].strip() == "25.0"


def test_report_cli_no_files(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    rc = _cli(["report", "--scores", "runs/**/scores*.parquet"])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("error: --scores: no Parquet files match")


# ---------------------------------------------------------------- report additions

def test_table1_bolds_only_a_strict_best():
    from treeagent.report.render import Bold, table1_rows

    rows = []
    for method, score in (("flat", 0.5), ("treeagent", 0.5), ("tree", 0.25)):
        rows.append(_row(example_id="e", dataset="json", task="one_field", length=K8,
                         agent="memagent", method=method, score=score))
    _, table = table1_rows(T.table1(T.cell_means(pd.DataFrame(rows))), T.AGENT_NAMES)
    assert not any(isinstance(c, Bold) for row in table for c in row)  # a tie: no bold
    rows[1]["score"] = 0.75
    _, table = table1_rows(T.table1(T.cell_means(pd.DataFrame(rows))), T.AGENT_NAMES)
    bold = [(row[1], c) for row in table for c in row if isinstance(c, Bold)]
    assert [m for m, _ in bold] == ["TreeAgent"] * 2  # JSON and AVG. (one agent: no mean)


def test_task_length_scores_give_n_per_cell(cells):
    t = T.task_length_scores(cells, "json")
    row = t[(t.agent == "memagent") & (t.method == "flat") & (t.task == "conditional_count")
            & (t.length == K8)].iloc[0]
    assert row["n"] == 4 and row["score"] == pytest.approx(25.0)
    assert set(t["task"]) == {"one_field", "conditional_count"}


def test_evidence_integrity_table_by_hand():
    rows = []
    for ex, agg, split, located in (("a", False, 1, 1), ("b", True, 2, 8), ("c", True, 0, 4)):
        for agent in ("memagent", "infmem"):  # same tokenizer: counted once
            rows.append({"tokenizer": "qwen3", "example_id": ex, "format": "json",
                         "length": K8, "method": "flat", "agent": agent, "split": split,
                         "located": located, "aggregation": agg, "sections": 4})
    t = T.evidence_integrity(pd.DataFrame(rows)).iloc[0]
    assert t["examples"] == 3 and t["records"] == 13
    assert t["records_split"] == pytest.approx(100 * 3 / 13)
    assert t["examples_split"] == pytest.approx(100 * 2 / 3)
    assert t["in_scope_split"] == pytest.approx(100 * 2 / 12)


def test_provenance_lists_params_that_differ_from_the_preset():
    from types import SimpleNamespace

    from treeagent.pipeline import config
    from treeagent.report import provenance

    data = config.preset("demo")
    config.assign(data, "build.per_cell", 3)
    prov = provenance.collect(SimpleNamespace(data=data), pd.DataFrame(synthetic_rows()))
    assert prov["params_diff"] == [("build.per_cell", 3, 1)]
    assert prov["models"] == [("infmem", "m", "r1"), ("memagent", "m", "r1")]
    assert prov["params_hash"] != provenance.params_hash(config.preset("demo"))
    assert len(prov["commit"]) >= 7


# ---------------------------------------------------------------- prompt cuts

# (agent, method) -> the rows' clipped values; None: a row without a count
CLIPS = {("memagent", "flat"): [0, 0, 0], ("memagent", "treeagent"): [2, 0, 1],
         ("infmem", "flat"): [None, None, None], ("infmem", "treeagent"): [0, 5, 0]}


def _clip_rows() -> list[dict]:
    return [_row(example_id=f"e{i}", dataset="json", task="one_field", length=K8,
                 agent=agent, method=method, score=0.5, clipped=c)
            for (agent, method), values in CLIPS.items() for i, c in enumerate(values)]


def test_clip_totals_and_counts_by_hand():
    from treeagent.agents.evaluate import clip_totals

    assert clip_totals([2, 0, 1]) == {"examples": 3, "recorded": 3,
                                        "clipped_examples": 2, "cuts": 3}
    assert clip_totals(iter([None, 4, float("nan")])) == {
        "examples": 3, "recorded": 1, "clipped_examples": 1, "cuts": 4}
    assert clip_totals([]) == {"examples": 0, "recorded": 0, "clipped_examples": 0,
                                 "cuts": 0}
    c = T.clip_counts(pd.DataFrame(_clip_rows()))
    got = {(r.agent, r.method): (r.examples, r.recorded, r.clipped_examples, r.cuts)
           for r in c.itertuples()}
    assert list(got) == [("memagent", "flat"), ("memagent", "treeagent"),
                         ("infmem", "flat"), ("infmem", "treeagent")]  # canonical order
    assert got == {("memagent", "flat"): (3, 3, 0, 0), ("memagent", "treeagent"): (3, 3, 2, 3),
                   ("infmem", "flat"): (3, 0, 0, 0), ("infmem", "treeagent"): (3, 3, 1, 5)}


def test_report_counts_clipped_prompts_per_agent_and_method(tmp_path):
    from treeagent.report.render import build_report

    scores = score_rows(_clip_rows()).to_pandas()  # the column survives scoring
    metrics = build_report(scores, tmp_path)
    assert metrics["clipped"] == {
        "memagent": {"flat": {"cuts": 0, "examples": 0},
                     "treeagent": {"cuts": 3, "examples": 2}},
        "infmem": {"flat": {"cuts": None, "examples": None},
                   "treeagent": {"cuts": 5, "examples": 1}}}
    lines = (tmp_path / "report.md").read_text().splitlines()
    assert "## Prompts clipped to fit the request limit" in lines
    assert "| MemAgent | Flat | 3 | 0 | 0 | 0 cuts in 0 of 3 examples |" in lines  # zeros shown
    assert "|  | TreeAgent | 3 | 2 | 3 | 3 cuts in 2 of 3 examples |" in lines
    assert "| InfMem | Flat | 3 | — | — | not recorded |" in lines
    assert "|  | TreeAgent | 3 | 1 | 5 | 5 cuts in 1 of 3 examples |" in lines
    assert 'id="clipped"' in (tmp_path / "index.html").read_text()


def test_scored_rows_keep_the_clip_count():
    table = score_rows([{"example_id": "a", "dataset": "json", "task": "one_field",
                         "length": K8, "agent": "memagent", "method": "flat",
                         "prediction": "x", "reference": '"x"', "clipped": 4}])
    assert table.column("clipped").to_pylist() == [4]
    assert SCORED_SCHEMA.field("clipped").nullable


# ---------------------------------------------------------------- one agent, zero scores

def test_one_agent_has_no_mean_rows(tmp_path):
    from treeagent.report.render import _group_label, build_report

    rows = [r for r in synthetic_rows() if r["agent"] == "memagent"]
    metrics = build_report(pd.DataFrame(rows), tmp_path)
    md = (tmp_path / "report.md").read_text()
    lines = [_plain(line) for line in md.splitlines()]
    assert "agent mean" not in md.lower()  # the Gain line, Figure 3 data, match rate
    assert not [line for line in lines if line.startswith("| Mean over")]  # Table 1
    table1 = [line for line in lines if line.startswith("| ") and "| Flat |" in line]
    assert table1[0].startswith("| MemAgent | Flat | 58.33 | 50.00 | 54.17 |")
    assert "Gain TreeAgent − Flat (AVG.): MemAgent 22.92" in lines
    assert metrics["agent_mean"]["flat"] == pytest.approx(100 * M_FLAT_AVG, abs=1e-4)
    assert _group_label(1) == "Mean over 1 agent" and _group_label(7) == "Mean over 7 agents"


def _red_pixels(path) -> int:
    import matplotlib.pyplot as plt
    import numpy as np

    img = plt.imread(path)[..., :3]
    r, g, b = img[..., 0], img[..., 1], img[..., 2]  # TreeAgent's #d62728
    return int(np.sum((r > 0.7) & (g < 0.3) & (b < 0.3)))


def _figure_bars(path, color) -> int:
    import matplotlib.pyplot as plt
    import numpy as np

    img = plt.imread(path)[..., :3]
    return int(np.sum(np.all(np.abs(img - np.array(color)) < 0.03, axis=-1)))


def test_all_zero_scores_still_show_points_and_bars(tmp_path):
    from treeagent.report.render import ZERO_GAINS_ZERO_SCORES, ZERO_SCORES, build_report

    rows = synthetic_rows()
    build_report(pd.DataFrame([{**r, "score": 0.5} for r in rows]), tmp_path / "half")
    build_report(pd.DataFrame([{**r, "score": 0.0} for r in rows]), tmp_path / "zero")
    md = (tmp_path / "zero" / "report.md").read_text()
    assert f"![figure2](figures/figure2.png)\n\n{ZERO_SCORES}" in md
    assert f"![figure3](figures/figure3.png)\n\n{ZERO_GAINS_ZERO_SCORES}" in md
    assert ZERO_SCORES not in (tmp_path / "half" / "report.md").read_text()
    # Figure 2: TreeAgent's points at 0 are drawn whole over the axis, as at 50
    half = _red_pixels(tmp_path / "half" / "figures" / "figure2.png")
    zero = _red_pixels(tmp_path / "zero" / "figures" / "figure2.png")
    assert half > 200 and zero >= 0.9 * half, (half, zero)
    # Figure 3: gains of 0 are ticks in the task colours (no bar of height 0 is invisible)
    tab10 = (0.12156862745098039, 0.4666666666666667, 0.7058823529411765)  # first task
    assert _figure_bars(tmp_path / "zero" / "figures" / "figure3.png", tab10) > 50

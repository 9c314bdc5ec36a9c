"""Table 3's section-count match rate per format (paper 4.5, C.5), from a tiny synthetic
run folder: scores plus the evidence stage's example rows, read back as the report flow
reads them. Expected numbers by hand."""

from __future__ import annotations

import json

import pandas as pd
import pyarrow.parquet as pq
import pytest

from treeagent.pipeline import evidence
from treeagent.report.schema import write_scores

K8 = 8192
# (agent, format, example) -> (TreeAgent n(B*), T_flat): MemAgent JSON 3 of 4 equal,
# InfMem JSON 1 of 4, MemAgent YAML 2 of 2, InfMem YAML 0 of 2
COUNTS = {
    ("memagent", "json"): [(5, 5), (5, 5), (6, 5), (4, 4)],
    ("infmem", "json"): [(5, 5), (6, 5), (6, 5), (3, 4)],
    ("memagent", "yaml"): [(2, 2), (3, 3)],
    ("infmem", "yaml"): [(3, 2), (4, 3)],
}


def _run_folder(root):
    scores, examples = [], []
    for (agent, fmt), pairs in COUNTS.items():
        for i, (n_tree, n_flat) in enumerate(pairs):
            ex = f"{fmt}-one_field-{K8}-{i}"
            for method, n in (("flat", n_flat), ("treeagent", n_tree)):
                scores.append({"example_id": ex, "dataset": fmt, "task": "one_field",
                               "length": K8, "agent": agent, "method": method,
                               "score": 1.0, "model": "m", "model_revision": "r",
                               "prediction": "x", "reference": '"x"', "calls": n,
                               "input_tokens": 100 * n, "output_tokens": 1, "sections": n,
                               "flat_sections": n_flat, "seconds": 1.0})
                examples.append({"example_id": ex, "format": fmt, "task": "one_field",
                                 "length": K8, "agent": agent, "method": method,
                                 "tokenizer": "qwen3", "base_budget": 5000,
                                 "budget": 5000 if method == "flat" else 5100,
                                 "sections": n, "flat_sections": n_flat,
                                 "aggregation": False, "records": 1, "located": 1,
                                 "split": 0, "split_share": 0.0,
                                 "in_scope_split_share": None, "max_sections_spanned": 1})
    write_scores(pd.DataFrame(scores), root / "runs" / "scores.parquet")
    evidence.write_rows(examples, evidence.EXAMPLE_COLUMNS,
                        root / "runs" / "evidence" / evidence.EXAMPLES_FILE)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    from treeagent.report.render import build_report

    root = tmp_path_factory.mktemp("run")
    _run_folder(root)
    scores = pq.read_table(root / "runs" / "scores.parquet").to_pandas()
    ev = pq.read_table(root / "runs" / "evidence" / evidence.EXAMPLES_FILE).to_pandas()
    out = root / "reports"
    build_report(scores, out, evidence=ev)
    return out


def _table3(md: str) -> list[str]:
    lines = md.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("## Table 3"))
    return [line for line in lines[start + 1:start + 12] if line.startswith("|")]


def test_table3_has_the_match_rate_per_format_with_n(report):
    table = _table3((report / "report.md").read_text())
    assert table[0] == ("| Memory agent | Model calls | Input tokens | Matched | "
                        "Equal section counts, JSON | Equal section counts, YAML |")
    # calls ratio: MemAgent (5+5+6+4)/(5+5+5+4) = 20/19; InfMem 20/19 too
    assert table[2] == "| MemAgent | 1.053 | 1.053 | 4 | 75.0% n=4 | 100.0% n=2 |"
    assert table[3] == "| InfMem | 1.053 | 1.053 | 4 | 25.0% n=4 | 0.0% n=2 |"
    md = (report / "report.md").read_text()
    assert "Agent mean (agents weighted equally): JSON 50.0% n=8, YAML 50.0% n=4." in md
    assert "the paper: 74.8% on JSON" in md
    html = (report / "index.html").read_text()
    assert "<th>Equal section counts, YAML</th>" in html
    assert "<td>25.0% n=4</td>" in html or ">25.0% n=4</td>" in html


def test_metrics_json_has_the_match_rate_per_format(report):
    m = json.loads((report / "metrics.json").read_text())["section_match_by_format"]
    assert m == {"json": {"memagent": {"rate": 75.0, "n": 4}, "infmem": {"rate": 25.0, "n": 4},
                          "mean": {"rate": 50.0, "n": 8}},
                 "yaml": {"memagent": {"rate": 100.0, "n": 2}, "infmem": {"rate": 0.0, "n": 2},
                          "mean": {"rate": 50.0, "n": 4}}}


def test_without_evidence_rows_table3_is_unchanged(tmp_path):
    from treeagent.report.render import build_report

    _run_folder(tmp_path)
    scores = pq.read_table(tmp_path / "runs" / "scores.parquet").to_pandas()
    metrics = build_report(scores, tmp_path / "reports")
    table = _table3((tmp_path / "reports" / "report.md").read_text())
    assert table[0] == "| Memory agent | Model calls | Input tokens | Matched |"
    assert "section_match_by_format" not in metrics

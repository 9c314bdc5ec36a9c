"""The report's git state is the tree's state when the run started: what
``flows/benchmark.py`` records before ``dvc repro``, else git without the files the
pipeline itself writes (``dvc.lock`` and the stages' tracked outputs)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from treeagent.report import provenance

ROOT = Path(__file__).resolve().parent.parent
DVC_YAML = """stages:
  evaluate:
    matrix: {agent: [a], method: [m]}
    cmd: python run.py
    outs:
      - runs/${item.agent}/${item.method}/predictions.parquet
    metrics:
      - runs/${item.agent}/${item.method}/summary.json:
          cache: false
  report:
    cmd: python report.py
    outs: [reports/validation/scores.json]
    metrics: [reports/metrics.json]
    plots: [reports/figures/figure2.png]
"""
TRACKED = {"dvc.yaml": DVC_YAML, "dvc.lock": "schema: '2.0'\n", "code.py": "x = 1\n",
           "params.yaml": "seed: 1\n", "runs/a/m/summary.json": "{}\n",
           "reports/metrics.json": "{}\n", "runs/a/summary.json.txt": "kept\n"}


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, text=True,
                          capture_output=True).stdout.strip()


@pytest.fixture()
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv(provenance.STATE_ENV, raising=False)
    for rel, text in TRACKED.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "start")
    return tmp_path


def test_what_the_pipeline_writes_is_no_change_of_the_source(repo: Path) -> None:
    head = _git(repo, "rev-parse", "HEAD")
    for rel in ("dvc.lock", "runs/a/m/summary.json", "reports/metrics.json"):
        (repo / rel).write_text("rewritten by a stage\n")
    assert provenance.git_commit(repo) == head


@pytest.mark.parametrize("rel", ["code.py", "params.yaml", "dvc.yaml",
                                 "runs/a/summary.json.txt"])
def test_a_changed_code_or_params_file_is_a_change(repo: Path, rel: str) -> None:
    (repo / rel).write_text((repo / rel).read_text() + "# edited\n")
    assert provenance.git_commit(repo) == _git(repo, "rev-parse", "HEAD") + " + changes"


def test_the_state_recorded_at_the_start_wins(repo: Path, monkeypatch) -> None:
    start = _git(repo, "rev-parse", "HEAD")
    monkeypatch.setenv(provenance.STATE_ENV, start)
    (repo / "code.py").write_text("x = 2\n")  # edited and committed while the run went on
    _git(repo, "commit", "-qam", "later")
    assert provenance.git_commit(repo) == start
    monkeypatch.setenv(provenance.STATE_ENV, "not a state")  # not ours: read git
    assert provenance.git_commit(repo) == _git(repo, "rev-parse", "HEAD")


def test_pipeline_written_matches_each_templated_path_segment(repo: Path) -> None:
    patterns = provenance.pipeline_written(repo)

    def written(rel: str) -> bool:
        return any(p.fullmatch(rel) for p in patterns)

    assert all(map(written, ["dvc.lock", "runs/x/y/summary.json", "reports/metrics.json",
                             "reports/figures/figure2.png", "runs/x/y/predictions.parquet"]))
    assert not any(map(written, ["runs/x/summary.json", "runs/x/y/z/summary.json",
                                 "dvc.yaml", "params.yaml", "reports/metrics.json.bak"]))


def test_outside_a_checkout_the_state_is_unknown(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv(provenance.STATE_ENV, raising=False)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    assert provenance.git_commit(tmp_path) == "unknown"


def test_the_benchmark_flow_hands_the_start_state_to_its_stages(repo: Path,
                                                                 monkeypatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT / "flows"))
    benchmark = pytest.importorskip("benchmark")
    start = _git(repo, "rev-parse", "HEAD")
    (repo / "code.py").write_text("x = 3\n")
    with benchmark._source_state(str(repo)) as state:
        assert state == start + " + changes"
        env = benchmark._stage_env(None)  # what `dvc repro` and so the stages inherit
        assert env[provenance.STATE_ENV] == state
        (repo / "code.py").write_text("x = 1\n")  # back as committed: the start still counts
        assert provenance.git_commit(repo) == start + " + changes"
    assert provenance.STATE_ENV not in os.environ
    assert sys.modules["benchmark"] is benchmark

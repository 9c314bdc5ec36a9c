"""The pipeline end to end in a temporary git + DVC repository (real DVC stages, real
Prefect flows, real GX gates, real SmolLM2 inference on a tiny grid).

One module-scoped project; the tests run in order: the DAG (``flows/benchmark.py`` as a
user runs it, with its temporary Prefect server), then, all reporting to one ``prefect
server start``, the no-op rerun, the model-revision rerun, a failing gate, ``dvc exp run
-S``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import BIN, Project, installed_or_skip, ran, seed_prefect_home
from treeagent.pipeline import config

installed_or_skip("dvc")
installed_or_skip("prefect")
installed_or_skip("great_expectations")  # run by the stages, not here

STAGES_BEFORE_EVALUATE = {"acquire", "validate_raw", "build", "validate_examples", "plan",
                          "evidence"}
MEMAGENT_STAGES = {"evaluate@memagent-flat", "evaluate@memagent-treeagent",
                   "score@memagent-flat", "score@memagent-treeagent", "report"}
TINY = {  # the demo preset, one format, one task, one length: minutes on 2 cores (the
    # real model's prompt tokens are most of it; tests/test_plugin_pipeline.py builds and
    # reports two lengths)
    "acquire.formats": ["json", "yaml"], "build.formats": ["json"],
    "build.tasks": ["one_field"], "build.lengths": [2048], "build.per_cell": 1,
    "sectioning.base_budget": 512, "agents.memagent.max_new_tokens": 8,
    "evaluate.concurrency": 4, "evaluate.methods": ["flat", "treeagent"],
}


def up_to_date(status: str) -> bool:
    """``dvc status`` with nothing to rerun: the ``models`` stage always runs (it looks
    at the models themselves: docs/pipeline.md, "Rerun when a model changes"), so it is
    the one stage listed."""
    return set(re.findall(r"^(\S+):$", status, re.M)) == {"models"} and \
        "always changed" in status


def cached(output: str) -> set[str]:
    """Stages DVC restored from its run cache (same deps and params seen before)."""
    return set(re.findall(r"Stage '([^']+)' is cached - skipping run", output))


def skipped(output: str) -> set[str]:
    return set(re.findall(r"Stage '([^']+)' didn't change, skipping", output))


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory, prefect_db: Path) -> Project:
    data = config.preset("demo")
    for key, value in TINY.items():
        config.assign(data, key, value)
    p = Project.create(tmp_path_factory.mktemp("pipeline"),
                       config.dump(config.validate(data).data))
    p.init("tiny pipeline")
    # the database the DAG's temporary Prefect server starts on, migrated once for the run
    seed_prefect_home(Path(p.env["PREFECT_HOME"]), prefect_db)
    return p


@pytest.fixture(scope="module")
def one_server(project: Project, prefect_api: str) -> Iterator[str]:
    """For the commands after the DAG test (which runs benchmark.py as a user does, with
    its own temporary Prefect server): the test process's ``prefect server start`` that
    they all report to, else each stage that ``dvc`` runs alone would start a temporary
    server of its own."""
    project.env["PREFECT_API_URL"] = prefect_api
    try:
        yield prefect_api
    finally:
        del project.env["PREFECT_API_URL"]


def test_dag_end_to_end(project: Project) -> None:
    out = project.benchmark().stdout
    assert ran(out) == STAGES_BEFORE_EVALUATE | MEMAGENT_STAGES | {"models"}, out[-3000:]
    for gate in ("raw", "examples", "evidence", "scores"):
        assert project.json(f"reports/validation/{gate}.json")["success"] is True
    import pyarrow.parquet as pq

    evidence = pq.read_table(project.path / "runs/evidence/evidence.parquet").to_pylist()
    assert {(r["method"], r["located"] == r["records"] >= 1) for r in evidence} == {
        ("flat", True), ("treeagent", True)}

    examples = pq.read_table(project.path / "validated/examples/json.parquet")
    assert examples.num_rows >= 1
    for method in ("flat", "treeagent"):
        scores = pq.read_table(project.path / f"runs/memagent/{method}/scores.parquet")
        assert sorted(scores.column("example_id").to_pylist()) == sorted(
            examples.column("id").to_pylist())
        assert all(0.0 <= s <= 1.0 for s in scores.column("score").to_pylist())
        summary = project.json(f"runs/memagent/{method}/summary.json")
        assert summary["calls"] >= summary["examples"] >= 1
    metrics = project.json("reports/metrics.json")
    # the grid is json x one_field x 2048, one example
    assert examples.column("length").to_pylist() == [2048]
    assert (metrics["rows"], metrics["missing_cells"]) == (2, 0)
    for rel in ("report.md", "index.html", "treeagent.duckdb", "figures/figure2.png"):
        assert (project.path / "reports" / rel).stat().st_size > 0
    assert up_to_date(project.dvc("status").stdout)
    shown = project.dvc("metrics", "show", "--json").stdout
    assert "reports/metrics.json" in shown and "summary.json" in shown


def test_second_repro_is_a_noop(project: Project, one_server: str) -> None:
    out = project.dvc("repro").stdout
    assert ran(out) == {"models"}, out  # the lock is rewritten with the same bytes
    assert STAGES_BEFORE_EVALUATE | MEMAGENT_STAGES <= skipped(out)


def test_model_revision_reruns_only_that_agent(project: Project, one_server: str) -> None:
    # infmem is not evaluated: its revision is read by no stage
    config.set_values(project.path / "params.yaml", {"agents.infmem.revision": "r9"})
    assert up_to_date(project.dvc("status").stdout)
    bumped = project.run(str(BIN / "python"), "flows/schedule.py", "bump", "memagent", "r2",
                         "--no-event").stdout
    assert "'revision': 'r2'" in bumped and "'previous_revision': 'auto'" in bumped
    status = project.dvc("status").stdout
    assert set(re.findall(r"^(\S+):$", status, re.M)) == {
        "evaluate@memagent-flat", "evaluate@memagent-treeagent", "models"}, status
    assert "modified:           agents.memagent" in status
    out = project.benchmark().stdout
    # the relabelled revision gives the same predictions (calls answered from the cache,
    # no wall-clock seconds in the outputs): scoring is not repeated; the report is
    # (summary.json records the pin)
    scores = {"score@memagent-flat", "score@memagent-treeagent"}
    assert ran(out) == (MEMAGENT_STAGES - scores) | {"models"}, out[-3000:]
    assert STAGES_BEFORE_EVALUATE | scores <= skipped(out)
    assert project.json("runs/memagent/flat/summary.json")["pinned_revision"] == "r2"
    assert up_to_date(project.dvc("status").stdout)


def test_failing_gate_stops_the_pipeline(project: Project, one_server: str) -> None:
    params = project.path / "params.yaml"
    before = params.read_text()
    # only JSON sources exist for `usgs`: the YAML format acquires nothing
    config.set_values(params, {"acquire.sources": ["usgs"]})
    try:
        proc = project.benchmark(check=False)
        assert proc.returncode == 1, proc.stdout[-3000:]
        assert ran(proc.stdout) - {"models"} == {"acquire", "validate_raw"}  # no build
        assert ("gate 'raw' failed (1 expectation(s))" in proc.stdout
                and "formats: expect_column_values_to_be_between(column=units, min_value=1"
                in proc.stdout and "e.g. ['yaml']" in proc.stdout), proc.stdout[-3000:]
        assert "failed to reproduce 'validate_raw'" in proc.stdout
        saved = project.json("reports/validation/raw.json")
        assert saved["success"] is False and len(saved["failed"]) == 1
    finally:
        params.write_text(before)
    out = project.dvc("repro").stdout  # the data is back: downstream stages are unchanged
    assert (ran(out) | cached(out)) - {"models"} == {"acquire", "validate_raw"}, out[-3000:]
    assert {"build", "validate_examples", "report"} <= skipped(out)
    assert project.json("reports/validation/raw.json")["success"] is True


def test_exp_run_sets_a_param(project: Project, one_server: str) -> None:
    project.run("git", "add", "-A")
    project.run("git", "commit", "-qm", "after reruns")
    # a knob that only the plan reads (its wall-clock estimate): the experiment reruns
    # that stage alone
    out = project.dvc("exp", "run", "-S", "runner.workers=2").stdout
    assert "Ran experiment" in out, out
    assert ran(out) - {"models"} == {"plan"}, out[-3000:]
    assert config.load(project.path / "params.yaml")["runner.workers"] == 2
    shown = json.dumps(json.loads(project.dvc("exp", "show", "--json").stdout))
    assert '"runner": {' in shown and '"workers": 2' in shown, shown[:3000]

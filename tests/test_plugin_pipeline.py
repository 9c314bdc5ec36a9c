"""Plug-ins end to end: an installed distribution declares a format (with its benchmark
hooks, its source groups and, apart from them, its own second reader) and an agent, and
the demo-size DVC pipeline runs with them through to the report (real DVC stages, real
Prefect flows, real GX gates, a tiny grid; the agent's calls go through the OpenAI engine
to the loopback test double of an OpenAI-compatible server: the real model's runs are
tests/test_pipeline.py's).

The toy distribution (``tests/fixtures/toy_plugin``) is installed with pip into a fresh
virtual environment that also sees the project's environment; the pipeline runs in a
temporary git + DVC project whose stages' ``python`` is that environment's.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import ROOT, Project, installed_or_skip, ran
from treeagent.pipeline import config

installed_or_skip("dvc")
installed_or_skip("prefect")
installed_or_skip("great_expectations")  # run by the stages, not here
from loopback_server import LoopbackOpenAI  # noqa: E402 (after the skips)

TOY = ROOT / "tests" / "fixtures" / "toy_plugin"
SAMPLES = ROOT / "src" / "treeagent" / "samples" / "bench" / "json"
TINY = {  # the demo preset on the toy format and agent: one task, two lengths
    "acquire.mode": "mirror", "acquire.formats": ["toyjson"], "build.formats": ["toyjson"],
    "build.tasks": ["one_field"], "build.lengths": [2048, 4096], "build.per_cell": 1,
    "sectioning.base_budget": 512, "evaluate.agents": ["toyagent"],
    "evaluate.concurrency": 4, "evaluate.methods": ["flat", "treeagent"],
    "report.dataset": "toyjson",
}
TOY_STAGES = {"evaluate@toyagent-flat", "evaluate@toyagent-treeagent", "score@toyagent-flat",
              "score@toyagent-treeagent", "report", "acquire", "validate_raw", "build",
              "validate_examples", "plan", "evidence", "models"}


def _venv_with_toy(where: Path) -> Path:
    """A virtual environment seeing the project's packages (its site-packages added as a
    site directory: ``--system-site-packages`` of a venv's python would add the base
    interpreter's, not the venv's) with the toy distribution installed by pip, offline.
    Returns its ``bin`` folder."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True,
                   timeout=300)  # pip and setuptools: the project's
    python = where / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig."
                           "get_paths()['purelib'])"], check=True, text=True,
                          stdout=subprocess.PIPE).stdout.strip()
    (Path(site) / "_treeagent_project.pth").write_text(
        f"import site; site.addsitedir({sysconfig.get_paths()['purelib']!r})\n")
    src = where.parent / "toy_src"
    shutil.copytree(TOY, src)
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                    "--no-build-isolation", str(src)], check=True, timeout=600,
                   env={"PIP_DISABLE_PIP_VERSION_CHECK": "1", "PATH": str(where / "bin")})
    return where / "bin"


@pytest.fixture(scope="module")
def server() -> Iterator[LoopbackOpenAI]:
    with LoopbackOpenAI() as s:
        yield s


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory, prefect_api: str,
            server: LoopbackOpenAI) -> tuple[Project, Path]:
    base = tmp_path_factory.mktemp("plugin")
    bindir = _venv_with_toy(base / "venv")
    mirror = base / "mirror" / "toyjson"
    for folder in sorted(SAMPLES.iterdir()):  # the JSON samples, as the toy format's
        shutil.copytree(folder, mirror / folder.name)
    data = config.preset("demo")
    for key, value in TINY.items():
        config.assign(data, key, value)
    config.assign(data, "acquire.mirror_dir", str(base / "mirror"))
    config.assign(data, "engine.name", "openai")
    config.assign(data, "engine.options", {"base_urls": [server.url], "max_retries": 0,
                                           "timeout": 60})
    data["agents"]["toyagent"] = {**data["agents"]["memagent"], "max_new_tokens": 8}
    p = Project.create(base / "project", config.dump(data))  # validated below, by the venv
    p.env["PATH"] = f"{bindir}:{p.env['PATH']}"  # the stages' python sees the plug-in
    p.env["PREFECT_API_URL"] = prefect_api
    p.run(str(bindir / "python"), "-m", "treeagent.pipeline.config", "check", "params.yaml")
    p.init("toy plug-in pipeline")
    return p, bindir


def test_the_toy_format_and_agent_run_through_to_the_report(project) -> None:
    p, bindir = project
    out = p.run(str(bindir / "python"), "flows/benchmark.py").stdout
    assert ran(out) == TOY_STAGES, out[-3000:]
    for gate in ("raw", "examples", "evidence", "scores"):
        assert p.json(f"reports/validation/{gate}.json")["success"] is True
    import pyarrow.parquet as pq

    examples = pq.read_table(p.path / "validated/examples/toyjson.parquet").to_pylist()
    assert examples and {e["format"] for e in examples} == {"toyjson"}
    # confirmed by the toy's own second reader: no example is flagged unconfirmed
    assert not any("unconfirmed" in f for e in examples for f in e["flags"])
    ids = sorted(e["id"] for e in examples)
    for method in ("flat", "treeagent"):
        scores = pq.read_table(p.path / f"runs/toyagent/{method}/scores.parquet")
        assert sorted(scores.column("example_id").to_pylist()) == ids
        assert all(0.0 <= s <= 1.0 for s in scores.column("score").to_pylist())
        summary = p.json(f"runs/toyagent/{method}/summary.json")
        assert summary["calls"] == summary["examples"] == len(ids)  # one call an example
    report = (p.path / "reports/report.md").read_text()
    assert "ToyAgent" in report and "ToyJSON" in report
    plan = (p.path / "reports/plan.md").read_text()
    assert "cost unknown" in plan and "toyagent" in plan.lower(), plan[-2000:]
    assert json.loads((p.path / "validated/inventory.json").read_text())["examples"] == len(ids)
    # the grid is toyjson x one_field x {2048, 4096}: a length without an example is missing
    metrics = p.json("reports/metrics.json")
    built = {e["length"] for e in examples}
    assert metrics["rows"] == 2 * len(ids) and metrics["missing_cells"] == 2 - len(built)

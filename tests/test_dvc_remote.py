"""Outputs shared across hosts through a DVC remote (docs/pipeline.md, "Many GPUs and
hosts"): a run of flows/benchmark.py pushes its outputs to a local-directory remote, a
second clone pulls validated/ and runs/ and finds the pipeline up to date; with no
remote configured the run says so and pushes nothing. Offline, on a tiny pipeline in a
temporary git repository (two stages writing validated/ and runs/)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from helpers import installed_or_skip

installed_or_skip("dvc")
installed_or_skip("prefect")

from treeagent.pipeline import config  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
sys.path.insert(0, str(ROOT / "flows"))

import _remote  # noqa: E402

MAKE = '''import json, sys, pathlib, yaml
seed = yaml.safe_load(open("params.yaml"))["seed"]
if sys.argv[1] == "build":
    out = pathlib.Path("validated/examples"); out.mkdir(parents=True, exist_ok=True)
    (out / "json.jsonl").write_text("".join(json.dumps({"id": i, "v": i * seed}) + "\\n"
                                            for i in range(5)))
else:
    rows = pathlib.Path("validated/examples/json.jsonl").read_text().splitlines()
    out = pathlib.Path("runs/memagent/flat"); out.mkdir(parents=True, exist_ok=True)
    (out / "predictions.jsonl").write_text("".join(r + "\\n" for r in reversed(rows)))
    (out / "summary.json").write_text(json.dumps({"examples": len(rows)}))
'''
STAGES = {"stages": {
    "build": {"cmd": "python make.py build", "deps": ["make.py"], "params": ["seed"],
              "outs": ["validated"]},
    "evaluate": {"cmd": "python make.py evaluate", "deps": ["make.py", "validated"],
                 "outs": ["runs/memagent/flat/predictions.jsonl"],
                 "metrics": [{"runs/memagent/flat/summary.json": {"cache": False}}]},
}}
ENV = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
       "DVC_NO_ANALYTICS": "1", "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
       "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}


def sh(cwd: Path, *args: str, env: dict[str, str] = ENV) -> str:
    done = subprocess.run(list(args), cwd=cwd, env=env, text=True, capture_output=True)
    assert done.returncode == 0, f"{' '.join(args)}: {done.stdout}{done.stderr}"
    return done.stdout + done.stderr


def dvc(cwd: Path, *args: str) -> str:
    return sh(cwd, str(BIN / "dvc"), *args)


@pytest.fixture
def origin(tmp_path: Path) -> Path:
    """A committed tiny pipeline, reproduced, its dvc.lock committed; no remote."""
    repo = tmp_path / "origin"
    repo.mkdir()
    sh(repo, "git", "init", "-q")
    (repo / "make.py").write_text(MAKE)
    (repo / "dvc.yaml").write_text(yaml.safe_dump(STAGES, sort_keys=False))
    (repo / "params.yaml").write_text(yaml.safe_dump(config.preset("demo")))
    dvc(repo, "init", "-q")
    dvc(repo, "config", "core.analytics", "false")
    dvc(repo, "repro", "-q")
    sh(repo, "git", "add", ".")
    sh(repo, "git", "commit", "-q", "-m", "tiny pipeline")
    return repo


def files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_no_remote_is_reported(origin):
    assert _remote.default_remote(origin) is None
    assert "dvc remote add -d --local" in _remote.none_configured("push")


def test_run_pushes_and_a_second_clone_pulls_an_up_to_date_pipeline(origin, tmp_path,
                                                                   prefect_api):
    store = tmp_path / "store"
    dvc(origin, "remote", "add", "-d", "--local", "shared", str(store))  # a machine path
    assert _remote.default_remote(origin) == ("shared", str(store))
    sh(origin, sys.executable, str(ROOT / "flows" / "benchmark.py"), "--project",
       str(origin), "--push", env={**ENV, "PREFECT_API_URL": prefect_api})
    assert store.is_dir() and any(p.is_file() for p in store.rglob("*"))

    clone = tmp_path / "clone"
    sh(tmp_path, "git", "clone", "-q", str(origin), str(clone))
    predictions = "runs/memagent/flat/predictions.jsonl"
    assert not (clone / "validated").exists() and not (clone / predictions).exists()
    dvc(clone, "remote", "add", "-d", "--local", "shared", str(store))
    dvc(clone, "pull", "-q")
    assert files(clone / "validated") == files(origin / "validated")
    assert files(clone / "runs") == files(origin / "runs")  # summary.json: from git
    assert "up to date" in dvc(clone, "status")
    assert "up to date" in dvc(clone, "repro")  # nothing reruns: the pulled outputs are current


@pytest.mark.parametrize(("push", "runner", "wanted"), [
    (None, {"name": "thread", "address": None}, False),
    (None, {"name": "dask", "address": None}, False),  # a LocalCluster: one host
    (None, {"name": "dask", "address": "tcp://10.0.0.1:8786"}, True),
    (False, {"name": "dask", "address": "tcp://10.0.0.1:8786"}, False),
    (True, {"name": "thread", "address": None}, True),
])
def test_push_by_default_only_when_the_run_spans_hosts(push, runner, wanted):
    params = config.preset("demo")
    params["runner"].update(runner)
    assert _remote.push_wanted(push, config.Params(params)) is wanted

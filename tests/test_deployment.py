"""prefect.yaml: ``prefect deploy --all`` registers ``benchmark/benchmark-nightly`` on the
``treeagent`` process work pool with the nightly cron and the ``model.updated`` trigger,
and a ``prefect worker start`` outside any serving terminal completes the run that
``flows/schedule.py bump`` triggers. Also: ``bump`` with no reachable server fails with
one line and leaves params.yaml as it was."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from helpers import BIN, ROOT, free_port, installed_or_skip, prefect_server, stop_group
from treeagent.pipeline import config

httpx = pytest.importorskip("httpx")
installed_or_skip("prefect")

SCHEDULE = str(ROOT / "flows" / "schedule.py")


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.update({"PREFECT_HOME": str(home), "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
                "DO_NOT_TRACK": "1", "PREFECT_UI_ENABLED": "false",
                "PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}", **extra})
    return env


def _wait(predicate: Callable[[], Any], timeout: float, what: str,
          proc: subprocess.Popen, log: Path) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        if proc.poll() is not None:
            break
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}\n{log.read_text()[-3000:]}")


def _post(api: str, path: str, body: dict) -> list[dict]:
    r = httpx.post(f"{api}{path}", json=body, timeout=10)
    r.raise_for_status()
    return r.json()


def _params(tmp_path: Path) -> Path:
    params = tmp_path / "params.yaml"
    params.write_text((ROOT / "params.yaml").read_text())
    return params


@pytest.mark.parametrize("api_url", [None, "unreachable"])
def test_bump_without_a_reachable_server_fails_with_one_line(tmp_path: Path,
                                                             api_url: str | None) -> None:
    params = _params(tmp_path)
    before = params.read_text()
    extra = {"PREFECT_API_URL": f"http://127.0.0.1:{free_port()}/api"} if api_url else {}
    proc = subprocess.run([str(BIN / "python"), SCHEDULE, "bump", "memagent", "rev-2",
                           "--params", str(params)], env=_env(tmp_path / "home", **extra),
                          text=True, capture_output=True, timeout=60)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    assert "model.updated" in lines[0]
    assert (extra["PREFECT_API_URL"] if api_url else "PREFECT_API_URL") in lines[0]
    assert params.read_text() == before  # nothing pinned that no run will pick up


def test_prefect_yaml_trigger_is_the_served_one() -> None:
    yaml = pytest.importorskip("yaml")
    sys.path.insert(0, str(ROOT / "flows"))
    import schedule

    (dep,) = yaml.safe_load((ROOT / "prefect.yaml").read_text())["deployments"]
    (trig,) = dep["triggers"]
    served = schedule.trigger(".")
    assert trig["expect"] == sorted(served.expect) == [schedule.EVENT]
    assert trig["match"] == served.match.model_dump()
    assert trig["parameters"] == served.parameters == {**dep["parameters"],
                                                       "reason": trig["parameters"]["reason"]}


def _tiny_project(root: Path) -> Path:
    """A DVC project whose one stage is ``echo``: the deployment's real flow, cheaply.
    ``flows`` links to this checkout's, so the deployment's entrypoint resolves there."""
    project = root / "project"
    project.mkdir()
    _params(project)
    (project / "flows").symlink_to(ROOT / "flows")
    (project / "dvc.yaml").write_text(
        "stages:\n  hello:\n    cmd: echo hello > out.txt\n    outs: [out.txt]\n")
    subprocess.run([str(BIN / "dvc"), "init", "--no-scm", "-q"], cwd=project, check=True,
                   env=_env(root / "home"), timeout=60)
    return project


def test_deployment_runs_on_a_worker_when_a_model_is_bumped(tmp_path: Path,
                                                             prefect_db: Path) -> None:
    project = _tiny_project(tmp_path)
    with prefect_server(_env(tmp_path / "home"), tmp_path / "server.log", 60,
                        db=prefect_db) as api:
        env = _env(tmp_path / "home", PREFECT_API_URL=api)
        worker: subprocess.Popen | None = None
        try:
            def cli(*args: str, cwd: Path = tmp_path, **extra: str) -> None:
                done = subprocess.run([str(BIN / "prefect"), *args], cwd=cwd, text=True,
                                      env={**env, **extra}, capture_output=True, timeout=60)
                assert done.returncode == 0, done.stdout + done.stderr
            cli("work-pool", "create", "treeagent", "--type", "process")
            # the documented command, from the checkout; $PWD names the pull step's directory
            cli("deploy", "--all", cwd=ROOT, PWD=str(project))

            (dep,) = _post(api, "/deployments/filter", {})
            assert (dep["name"], dep["work_pool_name"]) == ("benchmark-nightly", "treeagent")
            assert [s["schedule"]["cron"] for s in dep["schedules"]] == ["0 3 * * *"]
            assert dep["pull_steps"] == [{"prefect.deployments.steps.set_working_directory":
                                          {"directory": str(project)}}]
            (auto,) = _post(api, "/automations/filter", {})
            assert auto["trigger"]["expect"] == ["model.updated"]
            assert auto["actions"][0]["deployment_id"] == dep["id"]

            wlog = tmp_path / "worker.log"
            worker = subprocess.Popen([str(BIN / "prefect"), "worker", "start", "--pool",
                                       "treeagent"], cwd=tmp_path, env=env, stdout=wlog.open("w"),
                                      stderr=subprocess.STDOUT, start_new_session=True)
            bump = subprocess.run([str(BIN / "python"), SCHEDULE, "bump", "memagent", "rev-2",
                                   "--params", str(project / "params.yaml")], env=env, text=True,
                                  capture_output=True, timeout=60)
            assert bump.returncode == 0, bump.stderr
            assert config.load(project / "params.yaml")["agents.memagent.revision"] == "rev-2"

            def finished() -> list[dict]:
                runs = _post(api, "/flow_runs/filter",
                             {"deployments": {"id": {"any_": [dep["id"]]}}})
                return [r for r in runs if r["parameters"].get("reason")
                        and r["state_type"] in ("COMPLETED", "FAILED", "CRASHED")]
            (run,) = _wait(finished, 60, "the worker to finish the triggered run", worker, wlog)
            assert run["state_type"] == "COMPLETED", wlog.read_text()[-3000:]
            assert run["parameters"] == {"project": ".", "push": True, "reason":
                                         "model.updated treeagent.model.memagent revision rev-2"}
            assert (project / "out.txt").read_text() == "hello\n"  # dvc repro ran in the project
            assert (project / "dvc.lock").exists()
        finally:
            if worker is not None:
                stop_group(worker)

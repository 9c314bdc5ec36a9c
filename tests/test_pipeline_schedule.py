"""flows/schedule.py against a local ``prefect server start``: the served deployment has a
cron schedule and a ``model.updated`` trigger; ``bump`` pins a revision in params.yaml and
emits the event; the trigger creates a flow run of the deployment with the reason."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import BIN, ROOT, installed_or_skip, prefect_server, stop_group
from treeagent.pipeline import config

httpx = pytest.importorskip("httpx")
installed_or_skip("prefect")


def _wait(predicate, timeout: float, what: str, proc: subprocess.Popen | None = None,
          log: Path | None = None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        if proc is not None and proc.poll() is not None:
            break
        time.sleep(0.25)  # each poll is one local HTTP request
    detail = log.read_text()[-3000:] if log and log.exists() else ""
    raise AssertionError(f"timed out waiting for {what}\n{detail}")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, prefect_db: Path
           ) -> Iterator[tuple[str, dict[str, str]]]:
    home = tmp_path_factory.mktemp("prefect-home")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env.update({"PREFECT_HOME": str(home), "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
                "DO_NOT_TRACK": "1", "PREFECT_UI_ENABLED": "false",
                "PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}"})
    with prefect_server(env, home / "server.log", db=prefect_db) as api:
        yield api, {**env, "PREFECT_API_URL": api}


def _post(api: str, path: str, body: dict) -> list[dict]:
    r = httpx.post(f"{api}{path}", json=body, timeout=10)
    r.raise_for_status()
    return r.json()


def test_model_updated_event_triggers_a_run(server: tuple[str, dict[str, str]],
                                             tmp_path: Path) -> None:
    api, env = server
    project = tmp_path / "project"
    project.mkdir()
    (project / "params.yaml").write_text((ROOT / "params.yaml").read_text())
    log = tmp_path / "serve.log"
    serve = subprocess.Popen([str(BIN / "python"), str(ROOT / "flows" / "schedule.py"), "serve",
                              "--project", str(project), "--cron", "0 3 * * *"],
                             env=env, stdout=log.open("w"), stderr=subprocess.STDOUT,
                             start_new_session=True)
    try:
        deployments = _wait(lambda: _post(api, "/deployments/filter", {}), 180,
                            "the served deployment", serve, log)
        (dep,) = deployments
        assert dep["name"] == "treeagent"
        assert [s["schedule"]["cron"] for s in dep["schedules"]] == ["0 3 * * *"]
        # serve() creates the deployment first and its trigger's automation just after.
        automations = _wait(lambda: _post(api, "/automations/filter", {}), 60,
                            "the deployment's automation", serve, log)
        assert any("model.updated" in a["trigger"]["expect"] for a in automations)

        bump = subprocess.run([str(BIN / "python"), str(ROOT / "flows" / "schedule.py"),
                               "bump", "memagent", "rev-2", "--params",
                               str(project / "params.yaml")],
                              env=env, text=True, capture_output=True, timeout=120)
        assert bump.returncode == 0, bump.stderr
        assert "'event_id': '" in bump.stdout
        assert config.load(project / "params.yaml")["agents.memagent.revision"] == "rev-2"

        def triggered() -> list[dict]:
            runs = _post(api, "/flow_runs/filter",
                         {"deployments": {"id": {"any_": [dep["id"]]}}})
            return [r for r in runs if "model.updated" in r["parameters"].get("reason", "")]
        (run,) = _wait(triggered, 120, "a flow run triggered by model.updated", serve, log)
        assert run["parameters"]["reason"] == (
            "model.updated treeagent.model.memagent revision rev-2")
        assert run["parameters"]["project"] == str(project)
        assert run["parameters"]["push"] is True  # every scheduled run ends with dvc push
        assert "no DVC remote configured" in log.read_text()  # said once, at serve time
    finally:
        stop_group(serve)

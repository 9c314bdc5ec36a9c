"""flows/benchmark.py with ``serve.enabled``: the servers (flows/serve.py) are up and
healthy while ``dvc repro`` runs, their URLs in ``$TREEAGENT_SERVERS`` of the stages'
environment, and all stopped afterwards -- after success and after a failed stage. The
servers are the TEST DOUBLE tests/vllm_serve_double.py in place of the vllm binary; the
``dvc`` task is replaced by a recorder (no pipeline runs) and the flow functions are
called directly (``.fn``: no Prefect server)."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import yaml

from helpers import installed_or_skip
from test_serve import DOUBLE, alive, free_ports, records
from treeagent.llm import serve
from treeagent.pipeline import config

installed_or_skip("prefect")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "flows"))
benchmark = serve_flow = None  # flows/benchmark.py and flows/serve.py: the fixture below


@pytest.fixture(autouse=True, scope="module")
def _import_flows() -> None:
    """Import the flows (and Prefect, ~1 s) where this file's tests run, not in every
    worker that only collects it."""
    global benchmark, serve_flow
    import benchmark
    import serve as serve_flow


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A project whose params enable two agents x two replicas on GPUs 0-3, and a flow
    whose stages are recorded instead of run."""
    vllm = tmp_path / "bin" / "vllm"
    vllm.parent.mkdir()
    vllm.write_text(f"#!/bin/sh\nexec {sys.executable} {DOUBLE} \"$@\"\n")
    vllm.chmod(0o755)
    monkeypatch.setenv("TREEAGENT_VLLM_BIN", str(vllm))
    monkeypatch.setenv("VLLM_DOUBLE_RECORD", str(tmp_path / "starts.jsonl"))
    monkeypatch.setenv("TREEAGENT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv(serve.SERVERS_ENV, raising=False)
    data = config.preset("paper")
    data["evaluate"]["agents"] = ["memagent", "infmem"]
    data["serve"].update(gpus=[0, 1, 2, 3], port=free_ports(4))
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(data))
    monkeypatch.setattr(benchmark, "_api_url", lambda: None)
    monkeypatch.setattr(benchmark, "get_run_logger", lambda: logging.getLogger("test"))
    monkeypatch.setattr(benchmark, "read_metrics", lambda project: {})
    monkeypatch.setattr(serve_flow, "start_servers", serve_flow.start_servers.fn)
    monkeypatch.setattr(serve_flow, "stop_servers", serve_flow.stop_servers.fn)
    return tmp_path


def stage_recorder(seen: list[dict], fail: bool = False):
    def dvc(args, project, api_url):
        table = json.loads(benchmark._stage_env(api_url)[serve.SERVERS_ENV])
        health = {url: httpx.get(url.removesuffix("/v1") + "/health").status_code
                  for urls in table.values() for url in urls}
        seen.append({"args": args, "table": table, "health": health})
        if fail:
            raise RuntimeError("dvc repro failed (exit 1): Stage 'evaluate@memagent-flat'")
        return []
    return dvc


def assert_none_left(project: Path) -> None:
    found = records(project / "starts.jsonl")
    assert len(found) == 4
    assert [pid for r in found for pid in (r["pid"], r["worker"]) if alive(pid)] == []
    assert serve.SERVERS_ENV not in os.environ


def test_servers_up_during_repro_and_stopped_after(project, monkeypatch):
    seen: list[dict] = []
    monkeypatch.setattr(benchmark, "dvc", stage_recorder(seen))
    benchmark.benchmark_flow.fn(str(project))
    first = yaml.safe_load((project / "params.yaml").read_text())["serve"]["port"]
    assert [s["args"] for s in seen] == [["repro"]]
    assert seen[0]["table"] == {
        "memagent": [f"http://127.0.0.1:{first}/v1", f"http://127.0.0.1:{first + 1}/v1"],
        "infmem": [f"http://127.0.0.1:{first + 2}/v1", f"http://127.0.0.1:{first + 3}/v1"]}
    assert set(seen[0]["health"].values()) == {200}
    assert_none_left(project)


def test_servers_stopped_after_a_failed_stage(project, monkeypatch):
    seen: list[dict] = []
    monkeypatch.setattr(benchmark, "dvc", stage_recorder(seen, fail=True))
    with pytest.raises(RuntimeError, match="evaluate@memagent-flat"):
        benchmark.benchmark_flow.fn(str(project))
    assert len(seen) == 1
    assert_none_left(project)


def test_serve_disabled_starts_nothing(project, monkeypatch):
    data = yaml.safe_load((project / "params.yaml").read_text())
    data["serve"]["enabled"] = False
    data["evaluate"]["shards"] = 1  # the vllm engine with several shards needs the servers
    (project / "params.yaml").write_text(yaml.safe_dump(data))
    env: list[dict] = []
    monkeypatch.setattr(benchmark, "dvc", lambda args, project, api_url: env.append(
        benchmark._stage_env(api_url)))
    benchmark.benchmark_flow.fn(str(project))
    assert serve.SERVERS_ENV not in env[0]
    assert records(project / "starts.jsonl") == []


def test_sigterm_to_the_flow_process_stops_the_servers(project):
    """SIGTERM ends Python without ``finally`` blocks by default; while serving, it
    stops the servers as Ctrl-C does."""
    flows = Path(benchmark.__file__).parent
    script = (f"import sys, time; sys.path.insert(0, {str(flows)!r}); import serve\n"
              "serve.start_servers = serve.start_servers.fn\n"
              "serve.stop_servers = serve.stop_servers.fn\n"
              f"with serve.serving({str(project / 'params.yaml')!r}, 60):\n"
              "    print('UP', flush=True)\n"
              "    time.sleep(600)\n")
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline() == "UP\n"
        assert len(records(project / "starts.jsonl")) == 4
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "KeyboardInterrupt" in proc.stderr.read()
    assert_none_left(project)


def test_servers_named_in_the_environment_are_used_as_they_are(project, monkeypatch):
    """A head host without GPUs runs the benchmark flow over servers started elsewhere."""
    monkeypatch.setenv(serve.SERVERS_ENV, json.dumps({"memagent": ["http://gpu1:18100/v1"]}))
    env: list[dict] = []
    monkeypatch.setattr(benchmark, "dvc", lambda args, project, api_url: env.append(
        benchmark._stage_env(api_url)))
    benchmark.benchmark_flow.fn(str(project))
    assert json.loads(env[0][serve.SERVERS_ENV]) == {"memagent": ["http://gpu1:18100/v1"]}
    assert records(project / "starts.jsonl") == []  # nothing started here

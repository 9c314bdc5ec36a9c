"""The task runners of ``params.yaml`` ``runner:`` (treeagent.pipeline.runners): a dask
LocalCluster started without a Prefect API URL has its worker processes report to the
flow's own temporary server instead of each starting one of its own."""
import json
import os
import subprocess
import sys
from pathlib import Path

from helpers import installed_or_skip, seed_prefect_home

installed_or_skip("prefect_dask")

DRIVER = """
import json, os, sys
from treeagent.pipeline.runners import map_on_runner

def probe(i):
    return {"i": i, "pid": os.getpid(), "api": os.environ.get("PREFECT_API_URL"),
            "temporary_server": "prefect.server.api.server" in sys.modules}

if __name__ == "__main__":
    rows = map_on_runner(probe, list(range(6)), {"name": "dask", "address": None,
                                                 "workers": 2}, name="probe")
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import TaskRunFilter, TaskRunFilterName
    with get_client(sync_client=True) as client:  # the flow's server, still up
        runs = client.read_task_runs(task_run_filter=TaskRunFilter(
            name=TaskRunFilterName(like_="probe")))
    print("RESULT " + json.dumps({"rows": rows, "driver": os.getpid(),
                                  "after": os.environ.get("PREFECT_API_URL"),
                                  "task_runs": len(runs)}))
"""


def test_dask_workers_report_to_the_flows_temporary_server(tmp_path: Path,
                                                          prefect_db: Path) -> None:
    (tmp_path / "driver.py").write_text(DRIVER)
    seed_prefect_home(tmp_path / ".prefect", prefect_db)  # the temporary server's database
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.update({"PREFECT_HOME": str(tmp_path / ".prefect"), "DO_NOT_TRACK": "1",
                "PREFECT_SERVER_ANALYTICS_ENABLED": "false"})
    proc = subprocess.run([sys.executable, "driver.py"], cwd=tmp_path, env=env, text=True,
                          capture_output=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = json.loads(proc.stdout.split("RESULT ", 1)[1].splitlines()[0])
    rows = out["rows"]
    assert [r["i"] for r in rows] == list(range(6))
    assert out["driver"] not in {r["pid"] for r in rows}  # ran in the worker processes
    apis = {r["api"] for r in rows}
    assert len(apis) == 1 and next(iter(apis)).startswith("http://127.0.0.1:")
    assert not any(r["temporary_server"] for r in rows)  # no worker started a server
    assert out["after"] is None  # the driver's environment is as it was
    assert out["task_runs"] == 6  # every task run is in the flow's server
    assert proc.stderr.count("Starting temporary server") == 1

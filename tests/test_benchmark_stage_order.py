"""flows/benchmark.py --no-dvc runs dvc.yaml's stages in dvc.yaml's order: the order it
reads (matrix stages expanded over the params' agents x methods) is the list DVC itself
gives for the same dvc.yaml and params."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from helpers import installed_or_skip

installed_or_skip("dvc")
installed_or_skip("prefect")

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
sys.path.insert(0, str(ROOT / "flows"))
benchmark = None  # flows/benchmark.py, imported by the fixture below


@pytest.fixture(autouse=True, scope="module")
def _import_benchmark() -> None:
    """Import flows/benchmark.py (and Prefect, ~1 s) where this file's tests run, not in
    every worker that only collects it."""
    global benchmark
    import benchmark


def test_stage_order_is_dvcs(tmp_path):
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["evaluate"]["agents"] = ["memagent", "zagent"]
    params["evaluate"]["methods"] = ["treeagent", "flat"]
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    shutil.copy(ROOT / "dvc.yaml", tmp_path / "dvc.yaml")
    run = {"cwd": tmp_path, "check": True, "capture_output": True, "text": True}
    subprocess.run([str(BIN / "dvc"), "init", "--no-scm", "-q"], **run)
    dvc = subprocess.run([str(BIN / "dvc"), "stage", "list", "--name-only"], **run)
    order = benchmark.stage_order(tmp_path / "dvc.yaml")
    assert [name for name, _, _ in order] == dvc.stdout.split()
    got = {name: (flow, args) for name, flow, args in order}
    assert got["evaluate@zagent-flat"] == (
        "evaluate", ["--agent", "zagent", "--method", "flat"])
    assert got["score@memagent-treeagent"] == (
        "score", ["--agent", "memagent", "--method", "treeagent"])
    assert got["validate_raw"] == ("validate", ["raw"])
    assert got["build"] == ("build", [])  # the PYTHONHASHSEED assignment is not an argument
    assert all((ROOT / "flows" / f"{flow}.py").is_file() for flow, _ in got.values())


def test_call_maps_a_command_onto_the_flow_function():
    seen = []

    def gate_flow(gate, params="default", out_dir="o"):
        seen.append((gate, params, out_dir))

    def score_flow(agent, method, runs_dir="runs"):
        seen.append((agent, method, runs_dir))

    benchmark._call(gate_flow, ["raw", "--out-dir", "x"], "p.yaml")
    benchmark._call(score_flow, ["--agent", "a", "--method", "tree+path"], "p.yaml")
    assert seen == [("raw", "p.yaml", "x"), ("a", "tree+path", "runs")]


def test_no_dvc_runs_each_stage_flow_in_dvc_yaml_order(tmp_path, monkeypatch):
    import types

    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["evaluate"]["agents"] = ["memagent"]
    params["evaluate"]["methods"] = ["treeagent", "flat"]
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    shutil.copy(ROOT / "dvc.yaml", tmp_path / "dvc.yaml")
    monkeypatch.chdir(tmp_path)
    calls = []

    fakes = {
        "acquire": lambda params="": calls.append(("acquire", (), {"params": params})),
        "validate": lambda gate, params="": calls.append(("validate", (gate,), {"params": params})),
        "build": lambda params="": calls.append(("build", (), {"params": params})),
        "evaluate": lambda agent, method, params="": calls.append(
            ("evaluate", (), {"agent": agent, "method": method, "params": params})),
        "evidence": lambda params="": calls.append(("evidence", (), {"params": params})),
        "score": lambda agent, method: calls.append(
            ("score", (), {"agent": agent, "method": method})),
        "report": lambda params="": calls.append(("report", (), {"params": params})),
        "plan": lambda params="": calls.append(("plan", (), {"params": params})),
    }
    for name, fn in fakes.items():
        monkeypatch.setitem(sys.modules, name, types.SimpleNamespace(**{f"{name}_flow": fn}))
    benchmark._in_process("params.yaml")
    p = {"params": "params.yaml"}
    assert calls == [
        ("acquire", (), p), ("validate", ("raw",), p), ("build", (), p),
        ("validate", ("examples",), p),
        ("evaluate", (), {"agent": "memagent", "method": "treeagent", **p}),
        ("evaluate", (), {"agent": "memagent", "method": "flat", **p}),
        ("evidence", (), p),
        ("score", (), {"agent": "memagent", "method": "treeagent"}),
        ("score", (), {"agent": "memagent", "method": "flat"}),
        ("report", (), p), ("plan", (), p)]

"""A rerun with other call latencies changes no tracked file (docs/pipeline.md, "Git
stays clean"): the pipeline runs twice in a git clone of this repository, its calls
answered by the loopback test double of an OpenAI-compatible server with a different
delay each time; afterwards ``dvc.lock`` and every tracked file are byte-identical, and
the report names the commit the run started from without "+ changes" although DVC
rewrote ``dvc.lock`` during the run.

The working tree's code (``flows/``, ``src/treeagent/``, ``dvc.yaml`` and the ignore
files) is laid over the clone, so the test checks the code about to be committed.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import BIN, ROOT, copy_code, installed_or_skip, pipeline_env
from treeagent.pipeline import config

installed_or_skip("dvc")
installed_or_skip("prefect")
installed_or_skip("great_expectations")  # run by the stages, not here
from loopback_server import LoopbackOpenAI  # noqa: E402 (after the skips)

CODE = ("flows", "src/treeagent", "dvc.yaml", ".dvcignore", ".gitignore")
TINY = {  # one format, one task, one length, the two methods Figure 2 compares
    "acquire.formats": ["json"], "build.formats": ["json"], "build.tasks": ["one_field"],
    "build.lengths": [4096], "build.per_cell": 1, "sectioning.base_budget": 512,
    "agents.memagent.max_new_tokens": 8, "evaluate.concurrency": 4,
    "evaluate.methods": ["flat", "treeagent"],
}
EVALUATE = ("evaluate@memagent-flat", "evaluate@memagent-treeagent")
LATENCIES = (0.0, 0.05)  # seconds the loopback server waits before each reply, per run


def _env(home: Path) -> dict[str, str]:
    """:func:`helpers.pipeline_env` without git's or treeagent's variables either (the
    clone's git and cache are its own)."""
    return pipeline_env(home, drop=("PREFECT_API", "GIT_", "TREEAGENT_"))


def _run(cwd: Path, env: dict[str, str], *cmd: str) -> str:
    proc = subprocess.run(cmd, cwd=cwd, env=env, text=True, timeout=900,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert proc.returncode == 0, f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stdout[-6000:]}"
    return proc.stdout


def _tracked(repo: Path, env: dict[str, str]) -> dict[str, bytes]:
    names = _run(repo, env, "git", "ls-files", "-z").split("\0")
    return {n: (repo / n).read_bytes() for n in names if n and (repo / n).is_file()}


def _latencies(repo: Path) -> list[float]:
    """Latencies of the calls that reached the server (not answered from the cache)."""
    calls = [json.loads(line) for method in ("flat", "treeagent") for line in
             (repo / f"runs/memagent/{method}/trace.jsonl").read_text().splitlines()]
    return [c["latency"] for c in calls if not c["cached"]]


def _report_commit(repo: Path) -> str:
    m = re.search(r"git commit\s*\|\s*([^|\n]+?)\s*\|", (repo / "reports/report.md").read_text())
    assert m, "the report has no git commit row"
    return m.group(1)


@pytest.fixture()
def clone(tmp_path: Path) -> Path:
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    repo = tmp_path / "clone"
    env = _env(tmp_path)
    _run(tmp_path, env, "git", "clone", "-q", "--no-hardlinks", str(ROOT), str(repo))
    copy_code(repo, CODE)
    return repo


def test_rerun_with_other_call_latencies_leaves_every_tracked_file_unchanged(
        clone: Path, prefect_api: str, tmp_path: Path) -> None:
    env = {**_env(tmp_path), "PREFECT_API_URL": prefect_api}
    git = ("git", "-C", str(clone))
    with LoopbackOpenAI(latency=LATENCIES[0]) as server:  # one port for both runs
        data = config.preset("demo")
        for key, value in {**TINY, "engine.name": "openai",
                           "engine.options": {"base_urls": [server.url], "max_retries": 0,
                                              "timeout": 60}}.items():
            config.assign(data, key, value)
        (clone / "params.yaml").write_text(config.dump(config.validate(data).data))
        _run(clone, env, *git, "add", "-A")
        _run(clone, env, *git, "commit", "-qm", "tiny grid on the loopback server")
        start = _run(clone, env, *git, "rev-parse", "HEAD").strip()

        _run(clone, env, str(BIN / "python"), "flows/benchmark.py")
        # DVC rewrote dvc.lock and the tracked metrics during the run (other params than
        # the committed lock's); whatever else it wrote is git-ignored
        status = _run(clone, env, *git, "status", "--porcelain").splitlines()
        assert " M dvc.lock" in status and not [s for s in status if s.startswith("??")], status
        first_commit, first = _report_commit(clone), _latencies(clone)
        _run(clone, env, *git, "add", "-A")
        _run(clone, env, *git, "commit", "-qm", "the first run's lock and metrics")
        committed = _run(clone, env, *git, "rev-parse", "HEAD").strip()
        before = _tracked(clone, env)

        server.latency = LATENCIES[1]
        shutil.rmtree(clone / ".cache")  # every call reaches the server again
        out = _run(clone, env, str(BIN / "dvc"), "repro", "--force", "--downstream",
                   *EVALUATE)
        assert set(re.findall(r"Running stage '([^']+)'", out)) == {
            *EVALUATE, "score@memagent-flat", "score@memagent-treeagent", "report"}, out[-3000:]
    second = _latencies(clone)
    assert len(second) >= 2 and len(first) >= 2 and second != first
    assert min(second) >= LATENCIES[1]  # the delay reached every call sent

    after = _tracked(clone, env)
    changed = sorted(n for n in before.keys() | after.keys() if before.get(n) != after.get(n))
    assert changed == [], changed
    assert _run(clone, env, *git, "status", "--porcelain") == ""
    # the report names the commit each run started from, unchanged by what DVC wrote
    assert (first_commit, _report_commit(clone)) == (start, committed)

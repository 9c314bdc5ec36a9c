"""Sharded evaluation (treeagent.agents.shards, flows/evaluate.py): deterministic shards,
one endpoint per shard, per-shard cache files merged into the main cache, and outputs
byte-identical whichever Prefect task runner ran the shards.

The engine is the ``openai`` engine against the loopback TEST DOUBLE of an
OpenAI-compatible server (tests/loopback_server.py): the real SmolLM2 model would make
three runs of the demo grid too slow for CI. The examples are the demo grid built from the
shipped sample by the real build (``treeagent bench build --preset demo``).
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from treeagent.agents.shards import (
    ShardSpec,
    evaluate_shard,
    example_ids,
    merge_shards,
    positions,
    shard_options,
)
from treeagent.llm import Message, Request, Response, Sampling
from treeagent.llm.cache import CallCache, Identity, JournalEntry, call_key, shard_path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
BIN = Path(sys.executable).parent


@given(st.integers(0, 200), st.integers(1, 17))
def test_shards_partition_the_examples_and_are_balanced(count: int, shards: int) -> None:
    parts = [positions(count, k, shards) for k in range(shards)]
    flat = sorted(i for p in parts for i in p)
    assert flat == list(range(count))  # every position once
    sizes = [len(p) for p in parts]
    assert max(sizes) - min(sizes) <= 1
    assert all(p == sorted(p) for p in parts)


def test_a_shard_index_out_of_range_is_refused() -> None:
    with pytest.raises(ValueError, match="shard 3 is not in 0..2"):
        positions(10, 3, 3)


def test_each_shard_drives_one_server_when_there_are_enough_shards() -> None:
    urls = ["http://a/v1", "http://b/v1", "http://c/v1"]
    picked = [shard_options({"base_urls": urls, "timeout": 5}, k, 6)["base_urls"]
              for k in range(6)]
    assert picked == [[urls[0]], [urls[1]], [urls[2]], [urls[0]], [urls[1]], [urls[2]]]
    # fewer shards than servers: each shard spreads over all of them
    assert shard_options({"base_urls": urls}, 1, 2)["base_urls"] == urls
    assert shard_options({"model": "m"}, 1, 4) == {"model": "m"}


def _entry(text: str, prompt: str) -> JournalEntry:
    req = Request((Message("user", prompt),), Sampling(max_tokens=4))
    return JournalEntry(call_key("e", "m", "r", req), "p", req, Response(text, 3, 1, 0.1),
                        Identity("e", "m", "r"))


def test_a_shard_reads_the_main_cache_beneath_its_own_and_merges_into_it(tmp_path) -> None:
    main = tmp_path / "calls.sqlite"
    with CallCache(main, run_id="a/b") as cache:
        cache.record([_entry("old", "q1")])
    part = shard_path(main, "a/b", 1, 2)
    assert part == tmp_path / "calls.shards" / "a" / "b" / "1-of-2.sqlite"
    old, new = _entry("old", "q1"), _entry("new", "q2")
    with CallCache(part, run_id="a/b", base=main) as shard:
        assert shard.get(old.key).text == "old"  # from the main cache
        assert shard.get(new.key) is None
        shard.record([new])
    with CallCache(main) as cache:
        assert cache.get(new.key) is None  # not merged yet
        assert cache.merge(part) == 1
        assert cache.get(new.key).text == "new" and cache.get(old.key).text == "old"
        assert [r["prompt_hash"] for r in cache.journal("a/b")] == ["", ""]
        assert len(cache) == 2
    assert not part.exists() and not Path(f"{part}-wal").exists()


@pytest.fixture(scope="module")
def validated(tmp_path_factory) -> Path:
    """The demo grid, built from the shipped sample by the real build."""
    root = tmp_path_factory.mktemp("grid")
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    subprocess.run([str(BIN / "treeagent"), "bench", "build", "--preset", "demo",
                    "--raw", str(root / "raw"), "--out", str(root / "validated"),
                    "--allow-empty"], cwd=root, env=env, check=True, capture_output=True,
                   timeout=300)
    return root / "validated"


DRIVER = """
import hashlib, json, sys
from pathlib import Path
sys.path.insert(0, {flows!r})
sys.path.insert(0, {tests!r})
from loopback_server import LoopbackOpenAI
from treeagent.pipeline import config
from treeagent.pipeline.runners import from_params, workers_report_here

if __name__ == "__main__":
    import evaluate as ev
    root, validated = Path(sys.argv[1]), sys.argv[2]
    out = {{}}
    with LoopbackOpenAI(latency=0.005) as a, LoopbackOpenAI(latency=0.005) as b:
        for name, runner in (("thread1", {{"name": "thread", "address": None, "workers": 1}}),
                             ("thread2", {{"name": "thread", "address": None, "workers": 2}}),
                             ("dask2", {{"name": "dask", "address": None, "workers": 2}})):
            data = config.preset("demo")
            for key, value in {{
                    "engine.name": "openai", "runner": runner, "evaluate.shards": 2,
                    "engine.options": {{"base_urls": [a.url, b.url], "max_retries": 0,
                                       "timeout": 60}},
                    "evaluate.cache": str(root / name / "calls.sqlite"),
                    "agents.memagent.max_new_tokens": 8}}.items():
                config.assign(data, key, value)
            params = root / name / "params.yaml"
            params.parent.mkdir()
            params.write_text(config.dump(config.validate(data).data))
            before = (a.answered, b.answered)
            with workers_report_here(runner):  # as flows/evaluate.py runs it
                ev.evaluate_flow.with_options(task_runner=from_params(runner))(
                    "memagent", "treeagent", str(params), validated, str(root / name / "runs"))
            run = root / name / "runs" / "memagent" / "treeagent"
            out[name] = {{
                "files": {{f: hashlib.sha256((run / f).read_bytes()).hexdigest()
                          for f in ("predictions.parquet", "summary.json")}},
                "served": [a.answered - before[0], b.answered - before[1]],
                "trace": sum(1 for _ in open(run / "trace.jsonl")),
                "leftover": sorted(str(p) for p in (root / name).glob("calls.shards/**/*.sqlite")),
            }}
    print("RESULT " + json.dumps(out))
"""


def _env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env.update({"PREFECT_HOME": str(tmp / ".prefect"), "DO_NOT_TRACK": "1",
                "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "PYTHONHASHSEED": "0"})
    return env


def test_outputs_are_byte_identical_with_one_thread_two_threads_and_a_dask_cluster(
        validated: Path, tmp_path: Path, prefect_api: str) -> None:
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER.format(flows=str(ROOT / "flows"), tests=str(TESTS)))
    proc = subprocess.run([sys.executable, str(driver), str(tmp_path), str(validated)],
                          cwd=tmp_path, env={**_env(tmp_path), "PREFECT_API_URL": prefect_api},
                          text=True, capture_output=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads(proc.stdout.split("RESULT ", 1)[1].splitlines()[0])
    files = {name: r["files"] for name, r in result.items()}
    assert files["thread1"] == files["thread2"] == files["dask2"], files
    n = len(example_ids(sorted(validated.glob("examples/*.parquet"))))
    assert n >= 4
    summary = json.loads((tmp_path / "dask2/runs/memagent/treeagent/summary.json").read_text())
    assert summary["examples"] == n and summary["errors"] == 0
    for r in result.values():
        assert r["leftover"] == []  # every shard's cache file merged and removed
        assert r["trace"] == summary["calls"]  # every call of both shards in trace.jsonl
        # shard k drove server k only; each server answered its shard's calls
        assert all(r["served"]) and sum(r["served"]) == summary["calls"]
    with CallCache(tmp_path / "dask2" / "calls.sqlite") as cache:
        assert len(cache.journal("memagent/treeagent")) == summary["calls"]


SHARD_DRIVER = """
import pickle, sys
from treeagent.agents.shards import evaluate_shard
if __name__ == "__main__":
    evaluate_shard(pickle.load(open(sys.argv[1], "rb")))
"""


def _specs(validated: Path, tmp: Path, url: str, cache: Path, out: Path) -> list[ShardSpec]:
    files = tuple(str(p) for p in sorted(validated.glob("examples/*.parquet")))
    kwargs = {"base_budget": 768, "concurrency": 2, "cache": str(cache),
              "options": {"max_new_tokens": 8}}
    out.mkdir(parents=True, exist_ok=True)
    return [ShardSpec("memagent", "flat", k, 2, files, "openai",
                      {"model": "smollm2", "base_urls": [url], "max_retries": 0,
                       "timeout": 60, "revision": "loop-rev"},  # cached: a known revision
                      kwargs, str(out), progress=False)
            for k in range(2)]


def _answered(db: Path) -> int:
    try:
        with sqlite3.connect(db) as conn:
            return conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
    except sqlite3.Error:
        return 0


def test_a_shard_killed_midway_resumes_from_its_file_and_loses_no_call(
        validated: Path, tmp_path: Path) -> None:
    import pickle

    log = tmp_path / "server.log"
    server = subprocess.Popen([sys.executable, str(TESTS / "loopback_server.py"),
                               "--latency", "0.1", "--log", str(log)],
                              stdout=subprocess.PIPE, text=True)
    try:
        url = f"http://127.0.0.1:{server.stdout.readline().split()[1]}/v1"
        cache = tmp_path / "calls.sqlite"
        specs = _specs(validated, tmp_path, url, cache, tmp_path / "runs")
        (tmp_path / "spec.pkl").write_bytes(pickle.dumps(specs[0]))
        (tmp_path / "shard.py").write_text(SHARD_DRIVER)
        worker = subprocess.Popen([sys.executable, str(tmp_path / "shard.py"),
                                   str(tmp_path / "spec.pkl")], env=_env(tmp_path))
        part = shard_path(cache, "memagent/flat", 0, 2)
        deadline = time.time() + 120
        while _answered(part) < 6 and worker.poll() is None and time.time() < deadline:
            time.sleep(0.05)
        assert worker.poll() is None, "the shard finished before it could be killed"
        worker.send_signal(signal.SIGKILL)  # kill -9 of the worker mid-shard
        worker.wait()
        committed = _answered(part)
        assert committed >= 6 and part.exists()

        results = [evaluate_shard(s) for s in specs]  # the rerun: both shards
        rows = merge_shards(results, specs)
    finally:
        server.terminate()
        server.wait()
    prompts = [json.loads(line) for line in log.read_text().splitlines()]
    repeats = len(prompts) - len(set(prompts))
    # at most the calls in flight when the worker died were asked again (concurrency 2,
    # one call per example in flight), and none of the committed ones
    assert repeats <= 2, repeats
    with CallCache(cache) as main:
        assert len(main) == len(set(prompts))  # every answered call is in the main cache
    assert [r["example_id"] for r in rows] == example_ids(specs[0].example_files)
    assert all(r["error"] is None and r["prediction"] is not None for r in rows)
    assert not part.exists()


def test_a_corrupt_examples_table_stops_the_stage_with_one_line(tmp_path: Path) -> None:
    validated = tmp_path / "validated" / "examples"
    validated.mkdir(parents=True)
    (validated / "json.parquet").write_bytes(b"PAR1 not really a table")
    params = tmp_path / "params.yaml"
    params.write_text((ROOT / "params.yaml").read_text())
    proc = subprocess.run(
        [sys.executable, str(ROOT / "flows" / "evaluate.py"), "--agent", "memagent",
         "--method", "flat", "--params", str(params)],
        cwd=tmp_path, env=_env(tmp_path), text=True, capture_output=True, timeout=300)
    assert proc.returncode == 2, proc.stderr[-2000:]
    errors = [x for x in proc.stderr.splitlines() if x.startswith("error:")]
    assert len(errors) == 1 and "validated/examples/json.parquet" in errors[0], proc.stderr
    assert "Traceback" not in proc.stderr

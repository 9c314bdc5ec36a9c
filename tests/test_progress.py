"""Progress of long steps: log lines with done/total, rate and ETA at a fixed interval
when stderr is not a terminal; evaluate() and ``treeagent run`` report through it."""

from __future__ import annotations

import json
import logging
import re

from treeagent.pipeline.progress import Progress, interval_from_env, planned_calls


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def _logger() -> tuple[logging.Logger, Lines]:
    logger = logging.getLogger("test-progress-lines")
    logger.handlers.clear()
    logger.propagate = False
    logger.setLevel(logging.INFO)
    sink = Lines()
    logger.addHandler(sink)
    return logger, sink


def test_log_lines_at_the_interval_carry_done_total_rate_and_eta():
    clock = Clock()
    logger, sink = _logger()
    bar = Progress("evaluate a/b", {"examples": 10, "calls": None}, terminal=False,
                   interval=30, clock=clock, logger=logger)
    clock.now += 10
    bar.update(examples=1, calls=4)
    assert sink.lines == []  # before the interval: quiet
    clock.now += 20
    bar.update(examples=3, calls=12, info="5 cached")
    assert sink.lines == ["evaluate a/b: examples 3/10 (0.10/s, ETA 1:10); "
                          "calls 12 (0.40/s); elapsed 0:30; 5 cached"]
    clock.now += 29
    bar.update(examples=4)
    assert len(sink.lines) == 1  # 29 s after the last line
    clock.now += 1
    bar.update(examples=5)
    assert len(sink.lines) == 2 and "examples 5/10 (5.00/min, ETA 1:00)" in sink.lines[1]
    clock.now += 3600
    bar.update(examples=10, calls=40)  # a line: the interval has passed
    clock.now += 5
    bar.update(calls=42)  # no line: 5 s after the last one
    bar.close()
    bar.close()  # idempotent: one final line
    assert len(sink.lines) == 4
    assert sink.lines[-1].startswith("evaluate a/b: examples 10/10 (") and "ETA 0:00" in (
        sink.lines[-1]) and "calls 42 " in sink.lines[-1] and "elapsed 1:01:05" in (
        sink.lines[-1])


def test_slow_rates_read_per_minute_and_unknown_eta_is_a_question_mark():
    clock = Clock()
    logger, sink = _logger()
    bar = Progress("build", {"cells": 4}, terminal=False, interval=1, clock=clock,
                   logger=logger)
    clock.now += 2
    bar.update(cells=0)
    assert sink.lines == ["build: cells 0/4 (0.00/min, ETA ?); elapsed 0:02"]
    clock.now += 58
    bar.update(cells=1)
    assert "cells 1/4 (1.00/min, ETA 3:00)" in sink.lines[-1]


def test_the_final_line_is_not_a_repeat_of_the_last_one():
    clock = Clock()
    logger, sink = _logger()
    bar = Progress("score", {"rows": 2}, terminal=False, interval=1, clock=clock,
                   logger=logger)
    clock.now += 1
    bar.update(rows=2)
    bar.close()
    assert sink.lines == ["score: rows 2/2 (2.00/s, ETA 0:00); elapsed 0:01"]


def test_disabled_progress_says_nothing():
    logger, sink = _logger()
    bar = Progress("x", {"n": 2}, enabled=False, terminal=False, interval=0, logger=logger)
    bar.update(n=1)
    bar.close()
    assert sink.lines == []


def test_interval_from_the_environment(monkeypatch):
    monkeypatch.setenv("TREEAGENT_PROGRESS_INTERVAL", "5")
    assert interval_from_env() == 5
    for bad in ("", "soon", "-1", "0"):
        monkeypatch.setenv("TREEAGENT_PROGRESS_INTERVAL", bad)
        assert interval_from_env() == 30


def test_planned_calls_scale_the_plan_per_example(tmp_path):
    plan = tmp_path / "plan.json"
    rows = [{"agent": "memagent", "method": "flat", "examples": 2, "calls_max": 14},
            {"agent": "memagent", "method": "flat", "examples": 2, "calls_max": 6},
            {"agent": "memagent", "method": "treeagent", "examples": 4, "calls_max": 100}]
    plan.write_text(json.dumps({"rows": rows}), encoding="utf-8")
    assert planned_calls("memagent", "flat", 2, plan) == 10
    assert planned_calls("infmem", "flat", 2, plan) is None
    assert planned_calls("memagent", "flat", 2, tmp_path / "missing.json") is None
    plan.write_text("{not json", encoding="utf-8")
    assert planned_calls("memagent", "flat", 2, plan) is None


def test_evaluate_logs_examples_done_of_total_when_not_a_terminal(monkeypatch, capsys):
    from helpers import CharTokenizer
    from test_agents_double import ScriptedEngine
    from test_agents_evaluate import _example, _script
    from treeagent.agents.evaluate import evaluate

    monkeypatch.setenv("TREEAGENT_PROGRESS_INTERVAL", "0.000001")
    monkeypatch.setattr("sys.stderr.isatty", lambda: False, raising=False)
    examples = [_example(0), _example(2), _example(3)]
    evaluate(examples, agent="memagent", method="treeagent", engine=ScriptedEngine(_script),
             base_budget=14, tokenizer=CharTokenizer(), concurrency=1, progress=True,
             calls_total=15)
    err = capsys.readouterr().err
    lines = [x for x in err.splitlines() if "examples" in x]
    assert lines, err
    assert all(re.search(r"examples [0-3]/3 ", x) for x in lines)
    assert "examples 3/3 " in lines[-1] and "calls 15/15 " in lines[-1]
    assert "elapsed" in lines[-1] and "ETA" in lines[-1]


def test_treeagent_run_ends_with_a_line_with_total_and_elapsed(monkeypatch, capsys,
                                                                tmp_path):
    import treeagent.llm
    from test_agents_double import ScriptedEngine
    from treeagent.cli.main import main

    def make(name, model=None, **options):
        return ScriptedEngine(lambda r: "temp 19" if r.kind == "memory"
                              else "The answer is \\boxed{19}.")

    monkeypatch.setattr(treeagent.llm, "make_engine", make)
    doc = tmp_path / "d.json"
    doc.write_text('{"a":{"city":"Lima","temp":19}}', encoding="utf-8")
    status = main(["run", str(doc), "-q", "Temperature in Lima?", "--tokenizer", "qwen3",
                   "--agent", "memagent", "--method", "flat"])
    out, err = capsys.readouterr()
    assert status == 0, err
    last = err.strip().splitlines()[-1]
    assert re.fullmatch(r"run d\.json: programs 1/1 \(.+\); calls \d+ \(.+\); "
                        r"elapsed \d+:\d\d.*", last), err


def test_no_tqdm_bar_reaches_a_piped_stderr_when_smollm2_loads():
    """Loads the shipped SmolLM2 (one 1-token reply) in a child process whose stderr is
    a pipe: transformers' "Loading weights" bar stays off."""
    import subprocess
    import sys

    code = ("import asyncio\n"
            "from treeagent.llm import make_engine\n"
            "from treeagent.llm.base import Message, Request, Sampling\n"
            "e = make_engine('transformers')\n"
            "r = asyncio.run(e.generate([Request((Message('user', 'Hi'),), "
            "Sampling(max_tokens=1))]))\n"
            "assert r[0].text is not None, r\n"
            "asyncio.run(e.aclose())\n")
    got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert got.returncode == 0, got.stderr[-2000:]
    assert "it/s]" not in got.stderr and "Loading weights" not in got.stderr, got.stderr


def test_a_build_cell_task_logs_examples_done_of_its_cells_need(monkeypatch, capsys,
                                                                tmp_path):
    import dataclasses

    from treeagent.bench import build, cells, sources, validate
    from treeagent.pipeline import config

    params = build.BuildParams(**config.Params(config.preset("demo")).build_kwargs())
    params = dataclasses.replace(params, formats=("json",), lengths=(4096,))
    sources.acquire("sample", formats=params.formats, raw_dir=tmp_path, progress=False)
    monkeypatch.setenv("TREEAGENT_PROGRESS_INTERVAL", "0.000001")
    monkeypatch.setattr("sys.stderr.isatty", lambda: False, raising=False)
    capsys.readouterr()
    (spec,) = cells.cells(params, tmp_path, 1)
    result = cells.build_cell(spec)
    lines = capsys.readouterr().err.splitlines()
    need = params.per_cell * len(params.tasks)
    assert lines and all(re.match(rf"build json 4096: json \d+/{need} \(", x) for x in lines)
    kept = sum(not any(r[f"check_{c}"] for c in validate.CHECKS) for r in result.rows)
    assert f"json {kept}/{need} " in lines[-1] and "elapsed" in lines[-1]


def test_the_score_stage_logs_rows_done_of_total_in_prefects_log(tmp_path, prefect_api):
    """flows/score.py in a child process (stdout and stderr pipes): the progress lines go
    through Prefect's run logger, so they carry the task run's name."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    import pyarrow as pa
    import pyarrow.parquet as pq

    from helpers import CharTokenizer
    from test_agents_double import ScriptedEngine
    from test_agents_evaluate import _example, _script
    from treeagent.agents.evaluate import evaluate

    root = Path(__file__).resolve().parent.parent
    run = tmp_path / "runs" / "memagent" / "flat"
    run.mkdir(parents=True)
    rows = evaluate([_example(i) for i in (0, 2, 3)], agent="memagent", method="flat",
                    engine=ScriptedEngine(_script), base_budget=14,
                    tokenizer=CharTokenizer())
    pq.write_table(pa.Table.from_pylist(rows), run / "predictions.parquet")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env.update({"PREFECT_HOME": str(tmp_path / ".prefect"), "DO_NOT_TRACK": "1",
                "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "PREFECT_API_URL": prefect_api,
                "TREEAGENT_PROGRESS_INTERVAL": "1000"})
    got = subprocess.run([sys.executable, str(root / "flows" / "score.py"), "--agent",
                          "memagent", "--method", "flat", "--runs", str(tmp_path / "runs")],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert got.returncode == 0, got.stderr[-3000:]
    logs = got.stdout + got.stderr
    lines = [x for x in logs.splitlines() if "rows 3/3 (" in x]
    assert len(lines) == 1 and "score-" in lines[0] and "elapsed" in lines[0], logs[-3000:]


def test_a_line_comes_at_the_interval_while_nothing_finishes():
    """The real clock: one update, then none; the beat logs the counts again."""
    import time

    logger, sink = _logger()
    bar = Progress("evaluate a/b", {"examples": 4}, terminal=False, interval=0.1,
                   logger=logger)
    bar.update(examples=1)
    deadline = time.monotonic() + 10
    while len(sink.lines) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    bar.close()
    assert len(sink.lines) >= 2 and all("examples 1/4 (" in x for x in sink.lines[:2])

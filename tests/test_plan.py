"""``treeagent plan``: planned calls against real runs on a tiny built grid,
bounds for InfMem and MemReread, the plan's output schema and the CLI.

The MemAgent count is checked against a real SmolLM2-135M run (transformers, CPU); the
other agents against the scripted engine test double, whose replies steer each workflow
to its fewest and most calls (the planner must reach its bounds exactly there) and, in a
property test, anywhere in between.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from test_agents_double import ScriptedEngine
from test_bench_tasks import make_units, render
from treeagent.agents.evaluate import evaluate
from treeagent.agents.setup import resolve
from treeagent.bench.model import Example
from treeagent.cli.main import main
from treeagent.llm import make_engine
from treeagent.pipeline import config, plan

BUDGET = 512  # SmolLM2 tokens: 5 sections per 2K-token example
CAP = 4  # new tokens per call
METHODS = ["flat", "treeagent"]
OPTIONS = {"memreread": {"width": 2}}


def _example(i: int, task: str, units: int) -> Example:
    """A JSON context of ~2K SmolLM2 tokens from hand-built units (their events)."""
    events = [e for u in make_units("json", 40, 9)[i : i + units]
              for e in json.loads(u.text)["events"]]
    return Example(id=f"ex-{i}", format="json", task=task, length=2048,
                   question=f"What is the id of event {i}?", answer="x", spec={},
                   source_ids=[], tokens={}, context=render("json", events),
                   content_hash=f"h{i}")


@pytest.fixture(scope="module")
def examples():
    return [_example(0, "one_field", 8), _example(10, "two_records", 7)]


@pytest.fixture(scope="module")
def setups():
    return {a: resolve(a, "smollm2", max_new_tokens=CAP, options=OPTIONS.get(a, {}))
            for a in ("memagent", "infmem", "memreread", "rememr1")}


def _rows(examples, setup, methods=METHODS):
    return {r.method: r for r in plan.plan_examples(examples, [setup], methods, BUDGET)}


def _run(examples, setup, method, engine):
    options = {"max_new_tokens": CAP, **setup.options}
    return evaluate(examples, agent=setup.agent, method=method, engine=engine,
                    base_budget=BUDGET, tokenizer=setup.tokenizer, options=options,
                    context_window=8192, concurrency=4)


def test_memagent_plan_equals_a_real_smollm2_run(examples, setups):
    """Kept small for 2 shared cores: one ~1.1K-token example at C = 256 (5 sections)."""
    setup, small, budget = setups["memagent"], [_example(20, "one_field", 3)], 256
    rows = {r.method: r for r in plan.plan_examples(small, [setup], METHODS, budget)}
    # dtype auto as params.yaml has it: bf16 where the CPU has bf16 units (faster there)
    engine = make_engine("transformers", dtype="auto")  # torch threads: this worker's share
    try:
        for method in METHODS:
            real = evaluate(small, agent="memagent", method=method, engine=engine,
                            base_budget=budget, tokenizer=setup.tokenizer,
                            options={"max_new_tokens": CAP}, context_window=8192)
            row = rows[method]
            assert all(r["error"] is None for r in real)
            calls = sum(r["calls"] for r in real)
            assert row.cost.calls_min == row.cost.calls_max == calls
            assert row.sections == sum(r["sections"] for r in real) == calls - 1
            assert row.flat_sections == sum(r["flat_sections"] for r in real)
            used = sum(r["input_tokens"] for r in real)
            assert row.cost.input_tokens_min <= used <= row.cost.input_tokens_max
            assert sum(r["output_tokens"] for r in real) <= row.cost.output_tokens_max
    finally:
        asyncio.run(engine.aclose())


def test_memagent_plan_equals_its_run_on_every_example(examples, setups):
    setup = setups["memagent"]
    rows = _rows(examples, setup)
    for method in METHODS:
        real = _run(examples, setup, method, ScriptedEngine(lambda r: "notes"))
        assert sum(r["calls"] for r in real) == rows[method].cost.calls_max
        assert rows[method].cost.calls_min == rows[method].cost.calls_max


def _rememr1_script(request):
    if request.kind == "answer":
        return "\\boxed{1}"
    return "<thinking>t</thinking><update>id 7</update><recall>id</recall>"


def test_rememr1_plan_equals_its_run(examples, setups):
    setup = setups["rememr1"]
    rows = _rows(examples, setup)
    for method in METHODS:
        real = _run(examples, setup, method, ScriptedEngine(_rememr1_script))
        assert rows[method].cost.calls_min == rows[method].cost.calls_max
        assert sum(r["calls"] for r in real) == rows[method].cost.calls_max


SEARCH = '<tool_call>{"name": "retrievesearch", "arguments": {"query": "id"}}</tool_call>'


def _infmem(plans: str, closes: bool):
    """Planner replies ``plans``; every reply closes its reasoning (``</think>``, one
    call per reply) or never does (a second stage per reply)."""
    def script(request):
        text = plans if request.kind == "controller" else "notes"
        return f"</think>{text}" if closes else text
    return script


def _memreread(asks: bool):
    def script(request):
        if request.kind == "controller":
            return "<query>Which id?</query>" if asks else "The memory suffices."
        return "notes"
    return script


@pytest.mark.parametrize(("agent", "fewest", "most"), [
    ("infmem", _infmem("STOP", closes=True), _infmem(SEARCH, closes=False)),
    ("memreread", _memreread(False), _memreread(True)),
])
def test_bounds_are_reached_by_the_fewest_and_most_calls(examples, setups, agent, fewest,
                                                          most):
    setup = setups[agent]
    rows = _rows(examples, setup, ["flat"])
    low = sum(r["calls"] for r in _run(examples, setup, "flat", ScriptedEngine(fewest)))
    high = sum(r["calls"] for r in _run(examples, setup, "flat", ScriptedEngine(most)))
    cost = rows["flat"].cost
    assert (low, high) == (cost.calls_min, cost.calls_max)
    assert low < high


REPLIES = st.sampled_from(["STOP", SEARCH, "no decision", "<query>Which id?</query>",
                           "</think>STOP", "</think>" + SEARCH, "notes"])


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(agent=st.sampled_from(["infmem", "memreread"]), replies=st.lists(REPLIES, min_size=1,
                                                                          max_size=12))
def test_any_run_falls_inside_the_bounds(examples, setups, agent, replies):
    setup = setups[agent]
    example = examples[:1]
    cost = _rows(example, setup, ["treeagent"])["treeagent"].cost
    turn = iter(range(10**6))
    engine = ScriptedEngine(lambda request: replies[next(turn) % len(replies)])
    calls = _run(example, setup, "treeagent", engine)[0]["calls"]
    assert cost.calls_min <= calls <= cost.calls_max


# -- output ---------------------------------------------------------------------------

def test_plan_document_schema_and_hours(examples, setups, tmp_path):
    rows = plan.plan_examples(examples, list(setups.values()), METHODS, BUDGET)
    tp = plan.Throughput(2000.0, 40.0)
    doc = plan.document(rows, list(setups.values()), tp, gpus=4)
    json_path, md_path = plan.write(doc, tmp_path)
    stored = json.loads(json_path.read_text())
    assert stored == json.loads(json.dumps(doc))
    assert stored["columns"] == list(plan.ROW_KEYS) and stored["gpus"] == 4
    assert len(stored["rows"]) == 4 * len(METHODS)
    for row in stored["rows"]:
        assert list(row) == list(plan.ROW_KEYS)
        assert row["calls_min"] <= row["calls_max"]
        assert row["input_tokens_min"] <= row["input_tokens_max"]
        hours = (row["input_tokens_max"] / 2000 + row["output_tokens_max"] / 40) / 3600
        assert row["gpu_hours"] == pytest.approx(hours, abs=1e-4)
    totals = stored["totals"]
    for key in ("calls_min", "calls_max", "input_tokens_max", "output_tokens_max", "examples"):
        assert totals[key] == sum(r[key] for r in stored["rows"])
    assert "wall_hours" not in totals and stored["wall"] is None  # no layout given
    assert set(stored["agents"]) == set(setups)
    assert stored["agents"]["memagent"]["request_limit"] == 8192  # SmolLM2's window
    table = md_path.read_text().splitlines()
    assert sum(line.startswith("| memagent | flat | json | 2048 |") for line in table) == 1
    assert any(line.startswith("| total |") for line in table)


def _params(tmp_path: Path) -> Path:
    p = config.preset("demo")
    p["build"]["formats"] = ["json"]
    p["evaluate"]["agents"] = ["memagent", "rememr1"]
    p["evaluate"]["methods"] = METHODS
    p["sectioning"]["base_budget"] = BUDGET
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(p))
    return path


def test_cli_prints_and_writes_the_plan(examples, tmp_path, capsys, monkeypatch):
    grid = tmp_path / "validated"
    monkeypatch.setattr(plan, "read_grid", lambda folder, formats: (
        iter(examples) if (Path(folder), list(formats)) == (grid, ["json"]) else iter(())))
    params = _params(tmp_path)
    out = tmp_path / "reports"
    code = main(["plan", "--params", str(params), "--validated", str(grid), "--out", str(out),
                 "--prompt-tps", "1000", "--output-tps", "50", "--json"])
    assert code == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads((out / "plan.json").read_text())
    assert {(r["agent"], r["method"]) for r in printed["rows"]} == {
        (a, m) for a in ("memagent", "rememr1") for m in ("flat", "treeagent")}
    assert (out / "plan.md").read_text().count("| memagent |") == 2
    wall = printed["wall"]
    assert wall["rates"]["prompt"] == {"tokens_per_s": 1000.0, "source": "given"}
    assert wall["rates"]["sequence"]["source"].startswith("stated default")
    assert wall["layout"]["gpus"] == {"memagent": 1, "rememr1": 1}  # --gpus 1: in turn
    assert printed["totals"]["wall_hours"] == wall["total_hours"] == wall["parallel_hours"]
    assert [(s["agent"], s["method"], s["examples"]) for s in wall["stages"]] == [
        (a, m, 2) for a in ("memagent", "rememr1") for m in ("flat", "treeagent")]


def test_example_costs_add_up_to_the_row_in_grid_order(examples, setups):
    rows = plan.plan_examples(examples, [setups["memagent"]], METHODS, BUDGET)
    for row in rows:
        assert [i for i, _ in row.example_costs] == [0, 1]
        total = plan.Cost()
        for _, cost in row.example_costs:
            total.add(cost)
        assert total == row.cost


def test_cli_wall_clock_follows_gpus_and_serve(examples, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(plan, "read_grid", lambda folder, formats: iter(examples))
    params = _params(tmp_path)
    base = ["plan", "--params", str(params), "--out", str(tmp_path / "r"), "--json"]
    assert main([*base, "--gpus", "8", "--sequence-tps", "40", "--call-latency", "0"]) == 0
    spread = json.loads(capsys.readouterr().out)
    assert spread["wall"]["layout"]["gpus"] == {"memagent": 4, "rememr1": 4}
    assert spread["wall"]["rates"]["sequence"] == {"tokens_per_s": 40.0, "source": "given"}
    assert spread["wall"]["rates"]["call"] == {"seconds": 0.0, "source": "given"}
    assert spread["wall"]["rates"]["output"]["source"].startswith("stated default")
    p = yaml.safe_load(params.read_text())
    p["serve"].update(enabled=True, replicas=2, tensor_parallel=2)
    params.write_text(yaml.safe_dump(p))
    assert main(base) == 0
    served = json.loads(capsys.readouterr().out)
    assert served["gpus"] == 8
    assert served["wall"]["layout"]["replicas"] == {"memagent": 2, "rememr1": 2}
    assert main([*base[:-1]]) == 0
    text = capsys.readouterr().out
    assert "Rates assumed:" in text and "with one evaluate stage at a time" in text


@pytest.mark.parametrize(("argv", "message"), [
    (["--prompt-tps", "100"], "give both --prompt-tps and --output-tps"),
    (["--gpus", "0"], "must be positive"),
    (["--sequence-tps", "-3"], "must be positive"),
    (["--call-latency", "-0.1"], "--call-latency must be at least 0"),
    (["--validated", "nowhere"], "nowhere/examples/json.parquet: no built examples"),
    (["--params", "missing.yaml"], "missing.yaml"),
])
def test_cli_bad_input_is_one_line_and_exit_2(tmp_path, capsys, monkeypatch, argv, message):
    monkeypatch.chdir(tmp_path)
    params = _params(tmp_path)
    args = ["plan", "--params", str(params), "--out", "r", *argv]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and "Traceback" not in err


class TimedEngineDouble:
    """Test double of a GPU engine: a batch takes prompt/P + new tokens/O seconds."""

    name, model, revision = "timed-double", "timed", "0"

    def __init__(self, prompt_rate: float, output_rate: float) -> None:
        self.rates = (prompt_rate, output_rate)

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    async def generate(self, requests):
        from treeagent.llm import Response

        prompt = [sum(len(m.content.split()) for m in r.messages) for r in requests]
        new = [r.sampling.max_tokens for r in requests]
        await asyncio.sleep(sum(prompt) / self.rates[0] + sum(new) / self.rates[1])
        return [Response("x " * n, p, n, 0.0) for p, n in zip(prompt, new)]


def test_measure_recovers_the_prompt_and_output_rates():
    tp = plan.measure(TimedEngineDouble(40000.0, 2000.0), prompt_tokens=2000, calls=8,
                      new_tokens=128, runs=3)
    # a batch's prefill takes 0.4 s and a lone call decodes for 64 ms: a loaded machine's
    # timer jitter (~10 ms) stays inside the tolerance
    assert tp.prompt == pytest.approx(40000, rel=0.1)
    assert tp.output == pytest.approx(2000, rel=0.1)
    assert tp.sequence == pytest.approx(2000, rel=0.1)  # a lone call: new tokens / O
    assert "timed-double" in tp.source

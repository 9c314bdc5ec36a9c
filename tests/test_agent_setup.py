"""One agent setup for every stage (:mod:`treeagent.agents.setup`).

A plug-in agent declared without a cost model is planned as "cost unknown" and the
evidence stage runs it; a served model without local files and without a tokenizer
setting stops ``treeagent run``, evaluation, evidence and plan with the same line; with
``agents.<a>.tokenizer: qwen2.5`` every stage counts with Qwen2.5.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest
import yaml

from test_agents_double import ScriptedEngine
from treeagent import registry
from treeagent.agents.common import Agent, Limits
from treeagent.agents.evaluate import evaluate
from treeagent.agents.memagent import run as memagent_run
from treeagent.bench.contexts import compose
from treeagent.bench.model import Example
from treeagent.bench.sources import records_from_text
from treeagent.cli.main import main
from treeagent.pipeline import config, evidence, plan
from treeagent.tokenizers import tokens

ROOT = Path(__file__).resolve().parent.parent


def _evidence_flow() -> ModuleType:
    """flows/evidence.py (the stage's setup), imported when a test needs it: it imports
    Prefect, which every worker would otherwise pay for while collecting."""
    if str(ROOT / "flows") not in sys.path:
        sys.path.insert(0, str(ROOT / "flows"))
    import evidence

    return evidence

USGS = ROOT / "src/treeagent/samples/bench/json/usgs/libcomcat__dataframes_association__5.json"
SERVED = "example-org/served-model"  # a served model's name: no local files
# the README's plug-in: MemAgent's workflow at 512 new tokens, no cost model declared
PLUGIN = Agent("memagent512", "MemAgent-512", Limits(512, 512, None, 8192), {},
               memagent_run)
# one token per "<think>" under Qwen3 (an added token there), several under Qwen2.5
THINKS = json.dumps({"notes": " ".join(["<think>"] * 60)})


@pytest.fixture
def plugin():
    registry.AGENTS.register(PLUGIN)
    try:
        yield
    finally:
        registry.AGENTS.unregister(PLUGIN.name)


def _params(agent: str, model: str = "smollm2", **extra) -> config.Params:
    data = config.preset("demo")
    data["evaluate"]["agents"] = [agent]
    data["agents"][agent] = {"model": model, "revision": "auto", "max_new_tokens": 64,
                             "options": {}, "engine_options": {}, **extra}
    return config.validate(data)


def _example(context: str, i: int = 0) -> Example:
    return Example(id=f"ex-{i}", format="json", task="one_field", length=2048,
                   question="What is the first note?", answer="x", spec={}, source_ids=[],
                   tokens={}, context=context, content_hash=f"h{i}")


def _usgs() -> tuple[Example, list[str], dict[str, tuple[str, str]], list[str]]:
    uid = f"json/x/{USGS.name}"
    units = {uid: ("usgs", USGS.read_text(encoding="utf-8"))}
    ex = _example(compose("json", [units[uid][1]]))
    ids = [r.id for r in records_from_text("json", "usgs", units[uid][1], unit_id=uid)]
    return ex, [uid], units, ids


def _plan(p: config.Params, examples: list[Example], monkeypatch) -> tuple[list, list]:
    """``plan.plan_params`` over ``examples`` (as if they were the built grid)."""
    monkeypatch.setattr(plan, "read_grid", lambda validated, formats: iter(examples))
    return plan.plan_params(p, "no-grid")


# --------------------------------------------------------------------------- plug-in


def test_a_plugin_agent_without_a_cost_model_is_planned_as_cost_unknown(plugin, monkeypatch):
    ex, *_ = _usgs()
    rows, setups = _plan(_params(PLUGIN.name), [ex], monkeypatch)
    assert [s.agent for s in setups] == [PLUGIN.name]
    assert {r.method for r in rows} == set(registry.METHODS.names)
    doc = plan.document(rows, setups, plan.Throughput(1000.0, 100.0))
    for row in doc["rows"]:
        assert row["sections"] >= 1 and row["examples"] == 1  # sections are still exact
        assert row["calls_min"] is row["calls_max"] is row["gpu_hours"] is None
    assert doc["totals"]["cost_unknown"] == {"rows": len(rows), "agents": [PLUGIN.name]}
    assert doc["totals"]["calls_max"] == 0
    table = plan.table(doc)
    assert table.count("cost unknown |") == len(rows)
    assert "Cost unknown: 4 row(s) of memagent512" in table


def test_the_evidence_stage_runs_a_plugin_agent_without_a_cost_model(plugin):
    ex, unit_ids, units, ids = _usgs()
    setups = _evidence_flow().tokenizers(_params(PLUGIN.name))
    assert [(a, name) for a, name, _ in setups] == [
        (PLUGIN.name, "SmolLM2-135M-Instruct")]
    records, rows = evidence.example_rows(ex, unit_ids, ids, units, setups,
                                          ["flat", "treeagent"], 300)
    assert {r["agent"] for r in rows} == {PLUGIN.name}
    assert all(r["located"] == len(ids) for r in rows)


def test_a_planned_agent_keeps_its_cost_beside_a_plugin_without_one(plugin, monkeypatch):
    p = _params(PLUGIN.name)
    p.data["evaluate"]["agents"] = ["memagent", PLUGIN.name]
    ex, *_ = _usgs()
    rows, setups = _plan(p, [ex], monkeypatch)
    known = [r for r in rows if r.agent == "memagent"]
    assert known and all(r.cost.calls_min == r.cost.calls_max == r.sections + 1
                         for r in known)  # MemAgent: T memory calls + 1 answer
    doc = plan.document(rows, setups, None)
    assert doc["totals"]["calls_max"] == sum(r.sections + 1 for r in known)
    assert doc["totals"]["cost_unknown"]["rows"] == len(rows) - len(known)


# --------------------------------------------------------------------------- tokenizer


def _one_line(text: str) -> str:
    assert "\n" not in text.strip() and "Traceback" not in text, text
    return text.strip()


def test_a_served_model_without_a_tokenizer_setting_stops_every_stage_with_one_line(
        tmp_path, monkeypatch, capsys):
    p = _params("memagent", SERVED)
    said = {}
    with pytest.raises(ValueError) as stop:
        _evidence_flow().tokenizers(p)
    said["evidence"] = str(stop.value)
    with pytest.raises(ValueError) as stop:
        _plan(p, [_example(THINKS)], monkeypatch)
    said["plan"] = str(stop.value)
    with pytest.raises(ValueError) as stop:
        evaluate([_example(THINKS)], agent="memagent", method="flat",
                 engine=ScriptedEngine(lambda r: "memory"), **p.evaluate_kwargs("memagent"))
    said["evaluate"] = str(stop.value).replace(ScriptedEngine.model, SERVED)
    doc = tmp_path / "doc.json"
    doc.write_text(THINKS, encoding="utf-8")
    code = main(["run", str(doc), "-q", "What is the first note?", "--engine", "openai",
                 "--model", SERVED, "--base-url", "http://127.0.0.1:9/v1"])
    err = _one_line(capsys.readouterr().err)
    assert code == 2 and err.startswith("error: --tokenizer: ")
    said["run"] = err.removeprefix("error: --tokenizer: ")
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump(p.data), encoding="utf-8")
    code = main(["plan", "--params", str(params), "--validated", str(tmp_path / "none"),
                 "--out", str(tmp_path / "out")])
    err = _one_line(capsys.readouterr().err)
    assert code == 2 and err.startswith(f"error: {params}: ")
    said["plan cli"] = err.removeprefix(f"error: {params}: ")
    line = said["evidence"]
    assert all(_one_line(s) == line for s in said.values()), said
    assert "agent 'memagent'" in line and repr(SERVED) in line
    assert "agents.memagent.tokenizer" in line


def test_the_tokenizer_setting_is_used_by_every_stage(monkeypatch):
    qwen25, qwen3 = tokens.load("qwen2.5"), tokens.load("qwen3")
    assert qwen25.encode("<think>") != qwen3.encode("<think>")
    p = _params("memagent", SERVED, tokenizer="qwen2.5")
    # evidence
    [(agent, name, tok)] = _evidence_flow().tokenizers(p)
    assert (agent, name) == ("memagent", "qwen2.5")
    assert tok.encode(THINKS) == qwen25.encode(THINKS)
    # plan
    example = _example(THINKS)
    p.data["evaluate"]["methods"] = ["flat"]
    p.data["sectioning"]["base_budget"] = 64
    rows, setups = _plan(p, [example], monkeypatch)
    assert plan.document(rows, setups, None)["agents"]["memagent"]["tokenizer"] == "qwen2.5"
    # evaluation: the same Flat sections as the plan (Qwen2.5's count, not Qwen3's)
    got = evaluate([example], agent="memagent", method="flat",
                   engine=ScriptedEngine(lambda r: "memory"), **p.evaluate_kwargs("memagent"))
    assert got[0]["error"] is None
    assert got[0]["sections"] == rows[0].sections
    by_qwen3 = plan.plan_examples([example], [_with_tokenizer(setups[0], qwen3)], ["flat"], 64)
    assert by_qwen3[0].sections < rows[0].sections
    # treeagent run: --tokenizer counts the same way
    from treeagent.agents.evaluate import resolve_tokenizer

    run_tok = resolve_tokenizer(ScriptedEngine(lambda r: ""), "qwen2.5", agent="memagent")
    assert run_tok.encode(THINKS) == qwen25.encode(THINKS)


def _with_tokenizer(setup, tok):
    return dataclasses.replace(setup, tokenizer=tok, tokenizer_name="other")

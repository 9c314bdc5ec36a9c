"""The per-example state a workflow reads from: document, question, prompts, limits."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from treeagent.agents.common import Calls, Limits
from treeagent.agents.observation import Document, Observation, Reader
from treeagent.agents.templates import Prompts
from treeagent.tokenizers.tokens import Tokenizer


@dataclass
class Context:
    """What one example's workflow needs.

    ``problem`` is the question plus the task instruction (C.3), as the prompts show it;
    ``query`` is the bare question, which guides span retrieval (A.3). ``details``
    collects what the run records beyond the scored row (per-step observations, the
    workflow's own actions).
    """

    doc: Document
    problem: str
    query: str
    prompts: Prompts
    calls: Calls
    limits: Limits
    tokenizer: Tokenizer
    options: dict[str, Any] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)
    read: set[int] = field(default_factory=set)

    def reader(self, query: str | None = None) -> Reader:
        """A fresh reading pass (its own H_t) guided by ``query`` (default: the question)."""
        return Reader(self.doc, self.query if query is None else query, self.tokenizer)

    def observed(self, label: str, obs: Observation) -> None:
        """Record o_t of the pass ``label`` and mark section t as read; the next
        request built is the one that carries o_t (its index ties the step to its call
        in the trace)."""
        self.read.add(obs.t)
        self.details.setdefault("steps", []).append(
            {"pass": label, **obs.summary(), "request": self.calls.built})

    def note(self, key: str, value: Any) -> None:
        """Append ``value`` to the list ``details[key]`` (workflow actions)."""
        self.details.setdefault(key, []).append(value)

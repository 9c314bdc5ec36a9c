"""What the cost models share: one example's calls and token bounds (``treeagent plan``).

Each agent's cost model sits beside its workflow in its module and is named by its
record (:attr:`treeagent.agents.common.Agent.cost_model`): ``cost_model(setup, sizer,
problem, steps) -> Cost`` gives the calls and token bounds of one example from its
setup (:class:`treeagent.agents.setup.AgentSetup`), a :class:`Sizer` over the example's
prompts, the problem text and the observations (:func:`observations`). The bounds:
per call from the template (rendered with the example's problem), the section, its
path, the retrieved spans (at most 4 x 96 tokens, A.3), each variable field at its cap
and the chat template's allowance; each call at most the request limit (Table 2,
clamped to the context window); output at most each call's new-token limit.
:mod:`treeagent.pipeline.plan` sums them over the grid.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from treeagent.agents.common import CHAT_OVERHEAD, MIN_NEW_TOKENS, NO_MEMORY
from treeagent.agents.observation import PATH_LABEL, RETRIEVED_HEADER, Document
from treeagent.agents.templates import Prompts, spec_of
from treeagent.algorithm.retrieval import MAX_SPANS, SPAN_TOKENS
from treeagent.tokenizers.tokens import Tokenizer

if TYPE_CHECKING:
    from treeagent.agents.setup import AgentSetup

MARGIN = 4
"""Tokens added per variable field to an upper bound: a BPE merge where a field meets
the template text can shift a count by a token or two."""


@dataclass
class Cost:
    """Calls and tokens of one example (or a sum of them): bounds, min <= max."""

    calls_min: int = 0
    calls_max: int = 0
    input_tokens_min: int = 0
    input_tokens_max: int = 0
    output_tokens_max: int = 0

    def add(self, other: Cost, times: int = 1) -> None:
        self.calls_min += other.calls_min * times
        self.calls_max += other.calls_max * times
        self.input_tokens_min += other.input_tokens_min * times
        self.input_tokens_max += other.input_tokens_max * times
        self.output_tokens_max += other.output_tokens_max * times


class Sizer:
    """Token counts of one example's prompts: templates rendered with the known fields
    (the others empty), observations, caps; memoized per template and fields."""

    def __init__(self, prompts: Prompts, tokenizer: Tokenizer, request_limit: int) -> None:
        self.prompts = prompts
        self.tokenizer = tokenizer
        self.limit = request_limit
        self._base: dict[tuple, int] = {}

    def count(self, text: str) -> int:
        return self.tokenizer.count(text)

    def base(self, template: str, **known: str) -> int:
        key = (template, *sorted(known.items()))
        hit = self._base.get(key)
        if hit is None:
            spec = spec_of(template)
            assert spec is not None, template  # Prompts.render refused it otherwise
            fields = {name: "" for name in spec.required + spec.optional} | known
            hit = self._base[key] = self.count(self.prompts.render(template, **fields))
        return hit

    def call(self, template: str, known: dict[str, str], low: int, high: int,
             fields: int, system: int = 0) -> tuple[int, int]:
        """(min, max) input tokens of one call: the template with ``known`` fields, plus
        ``low``/``high`` tokens of the variable ones (``fields`` of them); both at most
        what fits the request limit."""
        b = self.base(template, **known) + system
        upper = b + high + CHAT_OVERHEAD + MARGIN * fields
        # a request over the limit is cut to about limit - MIN_NEW_TOKENS (common.Calls)
        lower = min(b + low, self.limit - MIN_NEW_TOKENS - CHAT_OVERHEAD - 32)
        return max(0, lower), min(upper, self.limit)


@dataclass(frozen=True)
class Step:
    """Observation o_t's tokens: exact part (section + path) and the spans' bound."""

    low: int
    high: int


def observations(doc: Document, sizer: Sizer, spans: int = MAX_SPANS,
                 span_tokens: int = SPAN_TOKENS) -> list[Step]:
    """o_t per section: the section text, ``Path: a_t`` (Tree+Path, TreeAgent) and, in
    TreeAgent at a step with residual links, at most ``spans`` spans (Eq. 16, A.3)."""
    header = sizer.count(RETRIEVED_HEADER) + 2
    out = []
    for t, s in enumerate(doc.sections):
        low = s.tokens if s.tokens >= 0 else sizer.count(doc.text(t))
        path = doc.path(t)
        if path is not None:
            low += sizer.count(f"\n\n{PATH_LABEL}{path}")
        high = low + MARGIN
        sources = doc.sources(t)
        if sources:
            high += header + spans * (span_tokens + 4)
        out.append(Step(low, high))
    return out


class Replies:
    """Adds one reply's calls and tokens to a :class:`Cost`: one call, or with two-stage
    thinking (InfMem, :func:`treeagent.agents.common.reply_with_calls`) one or two."""

    def __init__(self, setup: AgentSetup, sizer: Sizer) -> None:
        self.budget = setup.thinking_budget
        self.stop = sizer.count(sizer.prompts.render("thinking_stop")) + 8 if self.budget else 0
        self.limit = sizer.limit

    def add(self, cost: Cost, inputs: tuple[int, int], cap: int, minimal: bool = True,
            maximal: bool = True) -> None:
        low, high = inputs
        if minimal:
            cost.calls_min += 1
            cost.input_tokens_min += low
        if maximal:
            if self.budget:  # stage 1 thinks <= budget; stage 2 continues that prefix
                cost.calls_max += 2
                cost.input_tokens_max += high + min(high + self.budget + self.stop, self.limit)
                cost.output_tokens_max += self.budget + cap
            else:
                cost.calls_max += 1
                cost.input_tokens_max += high
                cost.output_tokens_max += cap

    def out_cap(self, cap: int) -> int:
        """A reply's longest text in tokens (both stages with two-stage thinking)."""
        return cap + self.budget + self.stop


def memory_pass(cost: Cost, r: Replies, sizer: Sizer, template: str, question: str,
                 steps: Sequence[Step], memory_cap: int, q_high: int = 0,
                 minimal: bool = True, extra: dict[str, int] | None = None) -> None:
    """T memory calls of a MemAgent-style pass (MemAgent, MemReread, ReMemR1)."""
    no_memory = sizer.count(NO_MEMORY)
    extra_high = sum((extra or {}).values())
    for t, step in enumerate(steps):
        mem_low, mem_high = (no_memory, no_memory) if t == 0 else (0, memory_cap)
        inputs = sizer.call(template, {"question": question}, step.low + mem_low,
                            step.high + mem_high + q_high + extra_high, 3 + len(extra or {}))
        r.add(cost, inputs, memory_cap, minimal=minimal)


CostModel = Callable[["AgentSetup", Sizer, str, Sequence[Step]], Cost]
"""An agent's cost model, named in its record (:attr:`treeagent.agents.common.Agent.cost_model`)
beside its workflow: the calls and token bounds of one example from its setup, the
sizer, the problem text and the observations."""

"""What an evaluation will cost, before any call: ``treeagent plan``.

From a built grid (``validated/examples/<format>.parquet``) and the parameters, per
agent x method x format x length:

* sections: exact. Every mode's sectioning is known from the text (Flat: fixed
  C-token sections, Eq. 2; Tree, Tree+Path and TreeAgent: Algorithm 1 at the searched
  budget B*, A.2), counted with the evaluated model's tokenizer as the run does (C.1).
* model calls: exact for MemAgent and ReMemR1 (T memory calls + 1 answer: no early stop,
  no controller); bounds for InfMem (early stop after three STOPs; two-stage thinking
  makes a reply one or two calls) and MemReread (root pass + up to
  min(width, node_budget - 1) decompose/re-read/sub-answer/integrate rounds).
* input tokens: bounds per call from the template (rendered with the example's problem),
  the section, its path, the retrieved spans (at most 4 x 96 tokens, A.3), each
  variable field at its cap (a memory <= the memory call's new-token limit, ...) and
  the chat template's allowance; each call at most the request limit (Table 2, clamped
  to the context window). Output tokens: at most each call's new-token limit.
* time: GPU-hours at a throughput the user gives (prompt and output tokens/s per GPU)
  or measures (:func:`measure`), from the upper bounds: ``input / prompt_rate +
  output / output_rate``; the wall clock under the pipeline's sharding from each
  example's bounds (:mod:`treeagent.plan_wall`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from treeagent.agents import infmem, memreread
from treeagent.agents.bm25 import SUBCHUNK_TOKENS
from treeagent.agents.common import (
    CHAT_OVERHEAD,
    MIN_NEW_TOKENS,
    NO_MEMORY,
    Limits,
    generation_limit,
    problem_text,
)
from treeagent.agents.observation import PATH_LABEL, RETRIEVED_HEADER, Document, prepare
from treeagent.agents.runner import AGENTS, capped
from treeagent.agents.templates import Prompts, spec_of
from treeagent.registry import AGENTS as AGENT_RECORDS
from treeagent.retrieval import MAX_SPANS, SPAN_TOKENS
from treeagent.tokens import Tokenizer

MARGIN = 4
"""Tokens added per variable field to an upper bound: a BPE merge where a field meets
the template text can shift a count by a token or two."""

SCHEMA_VERSION = 1
ROW_KEYS = ("agent", "method", "format", "length", "examples", "sections", "flat_sections",
            "budget_mean", "calls_min", "calls_max", "input_tokens_min", "input_tokens_max",
            "output_tokens_max", "gpu_hours")
"""Columns of a plan row (``reports/plan.json`` rows, the printed table)."""


@dataclass(frozen=True)
class Throughput:
    """Tokens per second per GPU: prompt (prefill) and output (decode, batched); and one
    sequence's decode rate where known (it bounds an example's chain of calls)."""

    prompt: float
    output: float
    source: str = "given"
    sequence: float | None = None

    def gpu_hours(self, input_tokens: int, output_tokens: int) -> float:
        return (input_tokens / self.prompt + output_tokens / self.output) / 3600.0


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


@dataclass
class Row:
    """One cell of the plan: agent x method x format x length."""

    agent: str
    method: str
    format: str
    length: int
    examples: int = 0
    sections: int = 0
    flat_sections: int = 0
    budget_sum: int = 0
    cost: Cost = field(default_factory=Cost)
    example_costs: list[tuple[int, Cost]] = field(default_factory=list, repr=False)
    """Each example's cost with its position in the grid (the evaluate stage's order)."""

    def as_dict(self, throughput: Throughput | None) -> dict[str, Any]:
        c = self.cost
        hours = (round(throughput.gpu_hours(c.input_tokens_max, c.output_tokens_max), 4)
                 if throughput else None)
        return {"agent": self.agent, "method": self.method, "format": self.format,
                "length": self.length, "examples": self.examples, "sections": self.sections,
                "flat_sections": self.flat_sections,
                "budget_mean": round(self.budget_sum / self.examples, 1) if self.examples else 0,
                **asdict(c), "gpu_hours": hours}


# --------------------------------------------------------------------------- call costs

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


def _memory_pass(cost: Cost, r: Replies, sizer: Sizer, template: str, question: str,
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


CostModel = Callable[["AgentSetup", "Sizer", str, Sequence["Step"]], "Cost"]
_COST_MODELS: dict[str, CostModel] = {}


def cost_model_of(agent: str) -> Callable[[CostModel], CostModel]:
    """Register the decorated function as ``agent``'s cost model (one per agent; a
    plug-in agent registers its own the same way)."""

    def register(fn: CostModel) -> CostModel:
        _COST_MODELS[agent] = fn
        return fn

    return register


@cost_model_of("memagent")
def cost_memagent(setup: AgentSetup, sizer: Sizer, problem: str, steps: Sequence[Step]
                  ) -> Cost:
    """T + 1 calls."""
    cost, r, limits = Cost(), Replies(setup, sizer), setup.limits
    mem = r.out_cap(limits.memory)
    _memory_pass(cost, r, sizer, "memagent_memory", problem, steps, mem)
    r.add(cost, sizer.call("memagent_answer", {"question": problem}, 0, mem, 1), limits.answer)
    return cost


@cost_model_of("rememr1")
def cost_rememr1(setup: AgentSetup, sizer: Sizer, problem: str, steps: Sequence[Step]
                 ) -> Cost:
    """T + 1 calls; a recalled memory is a past memory (<= the memory cap)."""
    cost, r, limits = Cost(), Replies(setup, sizer), setup.limits
    mem = r.out_cap(limits.memory)
    recalled = max(mem, sizer.count("No memory was recalled."))
    _memory_pass(cost, r, sizer, "rememr1_memory", problem, steps, mem,
                 extra={"recalled": recalled})
    r.add(cost, sizer.call("rememr1_answer", {"question": problem}, 0, mem + recalled, 2),
          limits.answer)
    return cost


@cost_model_of("infmem")
def cost_infmem(setup: AgentSetup, sizer: Sizer, problem: str, steps: Sequence[Step]
                 ) -> Cost:
    """Per step a planner reply and a write reply, the answer after the last step or
    right after the ``EARLY_STOP``-th consecutive STOP (no write for that step)."""
    cost, r, limits = Cost(), Replies(setup, sizer), setup.limits
    controller = limits.controller or limits.memory
    mem, plan_out = r.out_cap(limits.memory), r.out_cap(controller)
    early = int(getattr(infmem, "EARLY_STOP", 3))
    system = _infmem_system(sizer)
    retrieved = int(getattr(infmem, "TOP_K_MAX", 20)) * (SUBCHUNK_TOKENS + 8)
    T = len(steps)
    stop_at = early - 1 if T >= early else None  # the step whose plan ends reading early
    for t, step in enumerate(steps):
        history = 16 + t * (plan_out + 32)  # "Reading step ..." + earlier searches
        memory = mem if t else sizer.count(NO_MEMORY)
        plan = sizer.call("infmem_plan", {"question": problem}, 0, history + memory, 2,
                          system=system)
        r.add(cost, plan, controller, minimal=stop_at is None or t <= stop_at)
        write = sizer.call("infmem_write", {"question": problem}, step.low,
                           step.high + retrieved + memory + history, 4)
        r.add(cost, write, limits.memory, minimal=stop_at is None or t < stop_at)
    r.add(cost, sizer.call("infmem_answer", {"question": problem}, 0, mem, 1), limits.answer)
    return cost


def _infmem_system(sizer: Sizer) -> int:
    """Tokens of InfMem's tool block (its planner's system message), when it has one."""
    describe = getattr(infmem, "tool_description", None)
    if "infmem_tools" not in getattr(infmem, "TEMPLATES", ()) or describe is None:
        return sizer.count(json.dumps(infmem.TOOL, ensure_ascii=False))
    fn = infmem.TOOL["function"]
    text = sizer.prompts.render("infmem_tools", tools=describe(infmem.TOOL),
                                tool_names=fn["name"])
    return sizer.count(text) + 16


@cost_model_of("memreread")
def cost_memreread(setup: AgentSetup, sizer: Sizer, problem: str, steps: Sequence[Step]
                 ) -> Cost:
    """Root pass (T), then up to q = min(width, node_budget - 1) rounds of decompose +
    re-read (T) + sub-answer + integrate; at least one decompose (when q >= 1) that
    asks nothing; the answer."""
    cost, r, limits = Cost(), Replies(setup, sizer), setup.limits
    controller = limits.controller or limits.memory
    width = int(setup.options.get("width", memreread.WIDTH))
    nodes = int(setup.options.get("node_budget", memreread.NODE_BUDGET))
    rounds = max(0, min(width, nodes - 1))
    mem, sub, ans = (r.out_cap(limits.memory), r.out_cap(controller),
                     r.out_cap(limits.answer))
    _memory_pass(cost, r, sizer, "memreread_memory", problem, steps, mem)
    for i in range(rounds):
        history = i * (sub + ans + 16)
        known = {"question": problem, "stack": getattr(memreread, "EMPTY_STACK", "")}
        decompose = sizer.call("memreread_decompose", known, 0, mem + history, 3)
        r.add(cost, decompose, controller, minimal=i == 0)
        # the re-read: the sub-question is the problem (<= the decompose reply)
        _memory_pass(cost, r, sizer, "memreread_memory", "", steps, mem, q_high=sub,
                     minimal=False)
        r.add(cost, sizer.call("memreread_subanswer", {}, 0, sub + mem, 2), limits.answer,
              minimal=False)
        r.add(cost, sizer.call("memreread_integrate", {"question": problem}, 0,
                               mem + sub + ans + mem, 4), limits.memory, minimal=False)
    r.add(cost, sizer.call("memreread_answer", {"question": problem}, 0, mem, 1),
          limits.answer)
    return cost


def cost_model(agent: str) -> CostModel:
    """The cost model registered for ``agent`` (:func:`cost_model_of`); ValueError for
    an unknown agent or one without a cost model (it cannot be planned)."""
    AGENT_RECORDS.get(agent)  # ValueError naming the agents
    if agent not in _COST_MODELS:
        raise ValueError(f"no cost model for agent {agent!r} "
                         f"(planned: {', '.join(_COST_MODELS)})")
    return _COST_MODELS[agent]


# --------------------------------------------------------------------------- planning

@dataclass
class AgentSetup:
    """What planning needs of one agent: its tokenizer, limits and options."""

    agent: str
    tokenizer: Tokenizer
    limits: Limits
    request_limit: int
    options: dict[str, Any]
    tokenizer_name: str
    thinking_budget: int = 0  # InfMem's stage-1 thinking budget (0: one call per reply)


def plan_examples(examples: Iterable[Any], setups: Sequence[AgentSetup], methods: Sequence[str],
                  base_budget: int, prompts: Prompts | None = None) -> list[Row]:
    """Plan rows for ``examples`` (objects with ``format, length, task, question,
    context``) for every agent setup x method; sections are computed once per example,
    tokenizer (by name) and sectioning (Flat / structural)."""
    prompts = prompts or Prompts()
    rows: dict[tuple[str, str, str, int], Row] = {}
    for position, ex in enumerate(examples):
        docs: dict[tuple[str, str], Document] = {}
        for setup in setups:
            sizer = Sizer(prompts, setup.tokenizer, setup.request_limit)
            problem = problem_text(ex.question, ex.task, prompts)
            for method in methods:
                key = (setup.tokenizer_name, "flat" if method == "flat" else "treeagent")
                if key not in docs:
                    docs[key] = prepare(ex.context, ex.format, setup.tokenizer, key[1],
                                        base_budget)
                doc = _as_method(docs[key], method)
                steps = observations(doc, sizer)
                cost = cost_model(setup.agent)(setup, sizer, problem, steps)
                row = rows.setdefault((setup.agent, method, ex.format, ex.length),
                                      Row(setup.agent, method, ex.format, ex.length))
                row.examples += 1
                row.sections += len(doc)
                row.flat_sections += doc.flat_count
                row.budget_sum += doc.budget
                row.cost.add(cost)
                row.example_costs.append((position, cost))
    order = {a: i for i, a in enumerate(AGENTS)}
    return sorted(rows.values(), key=lambda r: (order[r.agent], methods.index(r.method),
                                                r.format, r.length))


def _as_method(doc: Document, method: str) -> Document:
    """The structural sectioning seen by ``method`` (same sections; path and links only
    where the mode has them)."""
    if method == doc.method:
        return doc
    accessible = doc.accessible if method == "treeagent" else {}
    return Document(method, doc.source, doc.sections, doc.base_budget, doc.budget,
                    doc.flat_count, accessible, doc.links if method == "treeagent" else 0)


def agent_setup(agent: str, model: str, max_new_tokens: int | None,
                options: dict[str, Any], engine_options: dict[str, Any],
                tokenizer: str | None = None) -> AgentSetup:
    """An agent's limits (Table 2, capped), request limit (clamped to the model's
    context window) and tokenizer: the local model's own, else ``tokenizer`` (a
    built-in name or folder; default qwen3, the paper checkpoints' vocabulary)."""
    from treeagent import tokens
    from treeagent.llm.models import ModelError, resolve_model, tokenizer_dir

    record = AGENT_RECORDS.get(agent)  # ValueError naming the agents
    cost_model(agent)  # ValueError: the agent has no cost model
    limits = capped(record.limits, max_new_tokens)
    window = engine_options.get("max_model_len") or engine_options.get("context_window")
    name = tokenizer
    try:
        source = resolve_model(model)
    except ModelError:
        source = None
    if tokenizer is None and source is not None and source.local:
        from treeagent.agents.evaluate import model_context_window

        folder = tokenizer_dir(model)
        tok, name = tokens.load(str(folder)), source.model_id

        class _Local:  # what model_context_window reads of an engine
            pass

        local = _Local()
        local.source, local.model = source, source.model_id  # type: ignore[attr-defined]
        window = window or model_context_window(local)  # type: ignore[arg-type]
    else:
        name = name or "qwen3"
        tok = tokens.load(name)
    return AgentSetup(agent, tok, limits, generation_limit(limits, window), dict(options),
                      str(name), _thinking_budget(agent, options, max_new_tokens))


def _thinking_budget(agent: str, options: dict[str, Any], max_new_tokens: int | None) -> int:
    """Stage-1 budget of two-stage thinking as the run sets it (0: one call per reply)."""
    from treeagent.agents import runner

    opts = {**options, **({"max_new_tokens": max_new_tokens} if max_new_tokens else {})}
    thinking = runner.thinking(agent, opts)
    return int(thinking.budget or 0) if thinking.enabled else 0


def plan_params(params: Any, validated: str | Path = "validated",
                tokenizer: str | None = None) -> tuple[list[Row], list[AgentSetup]]:
    """Plan rows for ``params`` (a :class:`treeagent.config.Params`) over the grid in
    ``validated``: every ``evaluate.agents`` x ``evaluate.methods`` x built format."""
    setups = []
    for agent in params.agents:
        a = params.data["agents"][agent]
        setups.append(agent_setup(agent, a["model"], a["max_new_tokens"], a["options"],
                                  {**params.data["engine"]["options"], **a["engine_options"]},
                                  tokenizer))
    rows = plan_examples(read_grid(validated, params["build.formats"]), setups,
                         params.methods, int(params["sectioning.base_budget"]))
    return rows, setups


def read_grid(validated: str | Path, formats: Sequence[str]) -> Iterator[Any]:
    """The built examples of ``formats`` in ``validated/examples/`` (contexts
    materialized); :class:`FileNotFoundError` naming a missing table."""
    from treeagent.bench.io import read_examples

    folder = Path(validated) / "examples"
    missing = [folder / f"{f}.parquet" for f in formats if not (folder / f"{f}.parquet").is_file()]
    if missing:
        raise FileNotFoundError(f"{missing[0]}: no built examples (run `dvc repro build`)")
    for fmt in formats:
        yield from read_examples(folder / f"{fmt}.parquet")


# --------------------------------------------------------------------------- output

def document(rows: Sequence[Row], setups: Sequence[AgentSetup],
             throughput: Throughput | None, gpus: int = 1,
             wall: dict[str, Any] | None = None) -> dict[str, Any]:
    """The plan as written to ``reports/plan.json`` (schema: :data:`ROW_KEYS` rows);
    ``wall``: the wall-clock estimate (:func:`treeagent.plan_wall.estimate`), whose total
    becomes ``totals.wall_hours``."""
    out_rows = [r.as_dict(throughput) for r in rows]
    total = Cost()
    for r in rows:
        total.add(r.cost)
    totals: dict[str, Any] = {"examples": sum(r.examples for r in rows),
                              "sections": sum(r.sections for r in rows), **asdict(total)}
    if throughput is not None:
        hours = throughput.gpu_hours(total.input_tokens_max, total.output_tokens_max)
        totals.update(gpu_hours=round(hours, 4))
    if wall is not None:
        totals.update(wall_hours=wall["total_hours"])
    return {
        "schema": SCHEMA_VERSION, "columns": list(ROW_KEYS), "rows": out_rows,
        "totals": totals, "gpus": gpus,
        "throughput": asdict(throughput) if throughput is not None else None,
        "wall": wall,
        "agents": {s.agent: {"tokenizer": s.tokenizer_name, "request_limit": s.request_limit,
                             "limits": asdict(s.limits), "options": s.options}
                   for s in setups},
    }


def _human(n: float) -> str:
    for unit, size in (("G", 1e9), ("M", 1e6), ("K", 1e3)):
        if abs(n) >= size:
            return f"{n / size:.1f}{unit}"
    return f"{n:.0f}"


def table(plan: dict[str, Any]) -> str:
    """The plan as a Markdown table (what ``treeagent plan`` prints)."""
    head = ("| agent | method | format | length | examples | sections | B* | calls | "
            "input tokens | output tokens | GPU-h |")
    lines = [head, "|" + "---|" * 11]

    def span(lo: int, hi: int) -> str:
        return _human(lo) if lo == hi else f"{_human(lo)}-{_human(hi)}"

    rows = [*plan["rows"], {**plan["totals"], "agent": "total", "method": "", "format": "",
                            "length": "", "budget_mean": ""}]
    for r in rows:
        hours = r.get("gpu_hours")
        lines.append(
            f"| {r['agent']} | {r['method']} | {r['format']} | {r['length']} | "
            f"{r['examples']} | {r['sections']} | {r['budget_mean']} | "
            f"{span(r['calls_min'], r['calls_max'])} | "
            f"{span(r['input_tokens_min'], r['input_tokens_max'])} | "
            f"<={_human(r['output_tokens_max'])} | "
            f"{'' if hours is None else f'<={hours:.3g}'} |")
    if plan.get("wall"):
        lines += ["", *wall_lines(plan["wall"])]
    if not plan["throughput"]:
        lines.append("\nGPU-h per row: only at given or measured rates (--prompt-tps and "
                     "--output-tps, or --measure).")
    return "\n".join(lines)


def wall_lines(wall: dict[str, Any]) -> list[str]:
    """The wall-clock estimate (:mod:`treeagent.plan_wall`) as printed under the table:
    the rates with their sources, the layout, the times."""
    from treeagent.plan_wall import DEFAULT_BASIS, DEFAULT_SOURCE

    r, lay = wall["rates"], wall["layout"]
    out = ["Rates assumed:"]
    for key, label in (("prompt", "prompt tokens/s per GPU"),
                       ("output", "output tokens/s per GPU (batched)"),
                       ("sequence", "decode tokens/s of one sequence")):
        out.append(f"- {r[key]['tokens_per_s']:,.0f} {label}: {r[key]['source']}")
    out.append(f"- {r['call']['seconds']:g} s per call before its prefill (round trip, "
               f"wait for a batch): {r['call']['source']}")
    if any(r[k]["source"] == DEFAULT_SOURCE for k in r):
        out.append(f"  ({DEFAULT_BASIS})")
    gpus = ", ".join(f"{a} {n} GPU(s) in {lay['replicas'][a]} replica(s)"
                     for a, n in lay["gpus"].items())
    out.append(f"Layout ({lay['source']}): {gpus}; {lay['shards']} shard(s) per stage, "
               f"{lay['concurrency']} example(s) in flight per shard, "
               f"{lay['workers']} worker(s).")
    slow = max(wall["stages"], key=lambda s: s["seconds"], default=None)
    if slow is not None:
        out.append(f"Slowest stage: evaluate@{slow['agent']}-{slow['method']} "
                   f"{_duration(slow['seconds'])} ({slow['bound']} bound).")
    out.append(f"Wall clock (token upper bounds at these rates): "
               f"{_duration(wall['total_hours'] * 3600)} with one evaluate stage at a time "
               f"(dvc repro); {_duration(wall['parallel_hours'] * 3600)} with every agent's "
               "stages at once on its own GPUs.")
    return out


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def write(plan: dict[str, Any], out: str | Path) -> tuple[Path, Path]:
    """``out/plan.json`` and ``out/plan.md``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    j, m = out / "plan.json", out / "plan.md"
    j.write_text(json.dumps(plan, indent=2) + "\n", encoding="utf-8")
    m.write_text("# Evaluation plan (upper bounds; `treeagent plan`)\n\n" + table(plan) + "\n",
                 encoding="utf-8")
    return j, m


# --------------------------------------------------------------------------- measuring

def measure(engine: Any, prompt_tokens: int = 3000, calls: int = 32, new_tokens: int = 64,
            runs: int = 3) -> Throughput:
    """Prompt and output tokens/s of ``engine`` (median of ``runs``): ``calls`` prompts of
    ~``prompt_tokens`` tokens with 1 new token (prefill), then with ``new_tokens``; the
    output rate is the extra output over the extra time; one sequence's rate the same
    with a lone call."""
    import asyncio
    import statistics

    from treeagent.llm.base import Message, Request, Sampling

    words = "the quick brown fox jumps over the lazy dog near a river bank".split()
    filler = " ".join(words[i % len(words)] for i in range(prompt_tokens))
    text = filler
    while engine.count_tokens(text) > prompt_tokens and len(text) > 10:
        text = text[: int(len(text) * 0.9)]

    def requests(n_new: int) -> list[Request]:
        return [Request((Message("user", f"{i}: {text}"),), Sampling(max_tokens=n_new))
                for i in range(calls)]

    async def timed(batch: list[Request]) -> tuple[float, int, int]:
        started = time.perf_counter()
        replies = await engine.generate(batch)
        if not all(r.available for r in replies):
            bad = next(r for r in replies if not r.available)
            raise RuntimeError(f"measuring {engine.name}: a call failed: {bad.error}")
        return (time.perf_counter() - started, sum(r.input_tokens for r in replies),
                sum(r.output_tokens for r in replies))

    async def once() -> tuple[float, float]:
        t1, p1, _ = await timed(requests(1))
        t2, p2, o2 = await timed(requests(new_tokens))
        decode = max(t2 - t1 * p2 / max(p1, 1), 1e-9)
        return p1 / t1, max(o2 - calls, 1) / decode

    async def sequence() -> float:
        """One sequence's decode rate: a lone call with ``new_tokens`` against one with 1."""
        t1, _, _ = await timed(requests(1)[:1])
        t2, _, o2 = await timed(requests(new_tokens)[:1])
        return max(o2 - 1, 1) / max(t2 - t1, 1e-9)

    async def all_runs() -> tuple[list[tuple[float, float]], list[float]]:
        await timed(requests(1)[:1])  # load / warm up
        batched = [await once() for _ in range(runs)]
        return batched, [await sequence() for _ in range(runs)]

    results, lone = asyncio.run(all_runs())
    return Throughput(statistics.median(p for p, _ in results),
                      statistics.median(o for _, o in results),
                      source=f"measured on {engine.name} {engine.model}",
                      sequence=statistics.median(lone))

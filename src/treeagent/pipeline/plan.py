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
  example's bounds (:mod:`treeagent.pipeline.plan_wall`).

Each agent's cost model sits beside its workflow in its module, named by its record
(:attr:`treeagent.agents.common.Agent.cost_model`), over the per-call arithmetic they
share (:mod:`treeagent.agents.costing`); this module sums them over the grid. An agent
whose record names none is planned as "cost unknown": its rows give the sections only.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from treeagent.agents.common import problem_text
from treeagent.agents.costing import Cost, CostModel, Sizer, observations
from treeagent.agents.observation import Document, prepare
from treeagent.agents.runner import AGENTS
from treeagent.agents.templates import Prompts
from treeagent.registry import AGENTS as AGENT_RECORDS

if TYPE_CHECKING:
    from treeagent.agents.setup import AgentSetup

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
    cost_known: bool = True
    """False for an agent whose record names no cost model: sections only."""

    def as_dict(self, throughput: Throughput | None) -> dict[str, Any]:
        if not self.cost_known:  # the cost columns say "unknown" (null)
            unknown = dict.fromkeys(asdict(self.cost))
            return {**self._sections(), **unknown, "gpu_hours": None}
        c = self.cost
        hours = (round(throughput.gpu_hours(c.input_tokens_max, c.output_tokens_max), 4)
                 if throughput else None)
        return {**self._sections(), **asdict(c), "gpu_hours": hours}

    def _sections(self) -> dict[str, Any]:
        return {"agent": self.agent, "method": self.method, "format": self.format,
                "length": self.length, "examples": self.examples, "sections": self.sections,
                "flat_sections": self.flat_sections,
                "budget_mean": round(self.budget_sum / self.examples, 1) if self.examples else 0}


def cost_model(agent: str) -> CostModel:
    """The cost model ``agent``'s record names; ValueError for an unknown agent or one
    whose record names none (:func:`plan_examples` plans it as "cost unknown")."""
    record = AGENT_RECORDS.get(agent)  # ValueError naming the agents
    model = getattr(record, "cost_model", None)
    if model is None:
        raise ValueError(f"no cost model for agent {agent!r} (its Agent record names none: "
                         "the plan says cost unknown)")
    return model


# --------------------------------------------------------------------------- planning

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
                row = rows.setdefault((setup.agent, method, ex.format, ex.length),
                                      Row(setup.agent, method, ex.format, ex.length,
                                          cost_known=setup.cost_model is not None))
                row.examples += 1
                row.sections += len(doc)
                row.flat_sections += doc.flat_count
                row.budget_sum += doc.budget
                if row.cost_known:
                    cost = setup.cost_model(setup, sizer, problem, observations(doc, sizer))
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


def plan_params(params: Any, validated: str | Path = "validated",
                tokenizer: str | None = None) -> tuple[list[Row], list[AgentSetup]]:
    """Plan rows for ``params`` (a :class:`treeagent.pipeline.config.Params`) over the grid in
    ``validated``: every ``evaluate.agents`` x ``evaluate.methods`` x built format."""
    from treeagent.agents.setup import from_params

    setups = [from_params(params, agent, tokenizer) for agent in params.agents]
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
    ``wall``: the wall-clock estimate (:func:`treeagent.pipeline.plan_wall.estimate`), whose total
    becomes ``totals.wall_hours``."""
    out_rows = [r.as_dict(throughput) for r in rows]
    total = Cost()
    for r in rows:
        total.add(r.cost)
    totals: dict[str, Any] = {"examples": sum(r.examples for r in rows),
                              "sections": sum(r.sections for r in rows), **asdict(total)}
    unknown = [r for r in rows if not r.cost_known]
    if unknown:  # the sums above leave these rows out
        totals.update(cost_unknown={"rows": len(unknown),
                                    "agents": list(dict.fromkeys(r.agent for r in unknown))})
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
        if r["calls_min"] is None:  # an agent without a cost model
            lines.append(
                f"| {r['agent']} | {r['method']} | {r['format']} | {r['length']} | "
                f"{r['examples']} | {r['sections']} | {r['budget_mean']} | "
                "cost unknown | - | - | |")
            continue
        lines.append(
            f"| {r['agent']} | {r['method']} | {r['format']} | {r['length']} | "
            f"{r['examples']} | {r['sections']} | {r['budget_mean']} | "
            f"{span(r['calls_min'], r['calls_max'])} | "
            f"{span(r['input_tokens_min'], r['input_tokens_max'])} | "
            f"<={_human(r['output_tokens_max'])} | "
            f"{'' if hours is None else f'<={hours:.3g}'} |")
    unknown = plan["totals"].get("cost_unknown")
    if unknown:
        lines.append(f"\nCost unknown: {unknown['rows']} row(s) of "
                     f"{', '.join(unknown['agents'])} (no cost model in the agent's record); "
                     "the total and the wall clock leave them out.")
    if plan.get("wall"):
        lines += ["", *wall_lines(plan["wall"])]
    if not plan["throughput"]:
        lines.append("\nGPU-h per row: only at given or measured rates (--prompt-tps and "
                     "--output-tps, or --measure).")
    return "\n".join(lines)


def wall_lines(wall: dict[str, Any]) -> list[str]:
    """The wall-clock estimate (:mod:`treeagent.pipeline.plan_wall`) as printed under the table:
    the rates with their sources, the layout, the times."""
    from treeagent.pipeline.plan_wall import DEFAULT_BASIS, DEFAULT_SOURCE

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

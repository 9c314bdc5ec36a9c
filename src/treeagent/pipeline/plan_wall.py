"""Wall-clock estimate of the evaluation under the pipeline's sharding (``treeagent plan``).

An evaluate stage (one agent x method) splits its examples into ``evaluate.shards``
deterministic shards, example ``i`` of the stage's order (``build.formats``, file order)
going to shard ``i mod shards``; shard ``k`` drives replica ``k mod R`` of its agent's
``R`` servers (with fewer shards than servers, every shard spreads its calls over all of
them: :mod:`treeagent.agents.shards`) and keeps ``evaluate.concurrency`` examples in
flight; at most
``runner.workers`` shards run at once. A replica of ``t`` GPUs (tensor parallel) serves
``t`` times the per-GPU rates. The estimate of a stage is the largest of three bounds:

* throughput: per replica, the sum over its examples of ``input / (P t) + output /
  (O t)`` (P, O: prompt and output tokens/s per GPU, batched);
* chain: an example's calls are sequential (a memory agent reads section after section),
  so it takes at least ``chain = calls L + input / (P t) + output / S`` (L: a call's
  latency before its prefill, S: one sequence's decode tokens/s); a shard at least
  ``max(longest chain, sum of chains / concurrency)``;
* workers: the shards' chain bounds spread over ``runner.workers``.

Tokens are the plan's upper bounds per example (:mod:`treeagent.pipeline.plan`); the bounds on
scheduling assume perfect batching and no per-call overhead. Stages of one agent run one
after another; ``dvc repro`` runs every evaluate stage one at a time, while agents on
their own GPUs can run at once (``total_hours`` vs ``parallel_hours``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

DEFAULT_PROMPT_TPS = 20000.0
DEFAULT_OUTPUT_TPS = 1500.0
DEFAULT_SEQUENCE_TPS = 100.0
DEFAULT_CALL_SECONDS = 0.05
DEFAULT_SOURCE = "stated default"
DEFAULT_BASIS = ("stated defaults are not measurements: rough figures for a 4-7B model in "
                 "bf16 under vLLM on one H100-class GPU (docs/pipeline.md); measure yours "
                 "with --measure")


@dataclass(frozen=True)
class Rate:
    """Tokens per second and where the figure comes from."""

    value: float
    source: str


@dataclass(frozen=True)
class Rates:
    """Prompt and output tokens/s per GPU (batched), one sequence's decode tokens/s, and a
    call's latency before its prefill (seconds: the round trip, the wait for a batch)."""

    prompt: Rate
    output: Rate
    sequence: Rate
    call: Rate

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {k: {"tokens_per_s": getattr(self, k).value,
                                   "source": getattr(self, k).source}
                               for k in ("prompt", "output", "sequence")}
        return {**out, "call": {"seconds": self.call.value, "source": self.call.source}}


def rates(prompt: float | None = None, output: float | None = None,
          sequence: float | None = None, source: str = "given",
          call: float | None = None) -> Rates:
    """Rates from what is known (given or measured, labelled ``source``), each missing one
    at its stated default."""

    def pick(value: float | None, default: float) -> Rate:
        return Rate(value, source) if value is not None else Rate(default, DEFAULT_SOURCE)

    return Rates(pick(prompt, DEFAULT_PROMPT_TPS), pick(output, DEFAULT_OUTPUT_TPS),
                 pick(sequence, DEFAULT_SEQUENCE_TPS), pick(call, DEFAULT_CALL_SECONDS))


@dataclass(frozen=True)
class Layout:
    """Where the evaluation runs: GPUs and replicas per agent, shards, slots, workers."""

    gpus: Mapping[str, int]  # per agent
    replicas: Mapping[str, int]  # per agent; each replica has gpus // replicas GPUs
    shards: int
    concurrency: int  # examples in flight per shard
    workers: int  # shards running at once
    shared: bool  # the agents take turns on the same GPUs
    source: str

    def as_dict(self) -> dict[str, Any]:
        return {"gpus": dict(self.gpus), "replicas": dict(self.replicas),
                "shards": self.shards, "concurrency": self.concurrency,
                "workers": self.workers, "shared": self.shared, "source": self.source}


def layout(agents: Sequence[str], *, shards: int, concurrency: int, workers: int,
           tensor_parallel: int = 1, replicas: int = 1, gpus: int | None = None) -> Layout:
    """The layout with ``replicas`` servers of ``tensor_parallel`` GPUs per agent (the
    ``serve`` parameters), or, given ``gpus``, those GPUs spread over the agents (the
    first ``gpus mod agents`` get one more; fewer GPUs than agents: every agent in turn
    on all of them), each agent's share cut into replicas of ``tensor_parallel`` GPUs."""
    if gpus is None:
        per = {a: replicas * tensor_parallel for a in agents}
        reps = {a: replicas for a in agents}
        return Layout(per, reps, shards, concurrency, workers, False,
                      f"serve: {replicas} replica(s) x {tensor_parallel} GPU(s) per agent")
    shared = gpus < len(agents)
    if shared:
        per = {a: gpus for a in agents}
        how = f"--gpus {gpus}: every agent in turn on all {gpus}"
    else:
        base, extra = divmod(gpus, len(agents))
        per = {a: base + (i < extra) for i, a in enumerate(agents)}
        how = f"--gpus {gpus} spread over {len(agents)} agent(s)"
    reps = {a: max(1, n // tensor_parallel) for a, n in per.items()}
    return Layout(per, reps, shards, concurrency, workers, shared,
                  f"{how}, replicas of {tensor_parallel} GPU(s)")


@dataclass(frozen=True)
class ExampleCost:
    """Upper bounds of one example's input and output tokens and calls."""

    input_tokens: int
    output_tokens: int
    calls: int = 0


def stage_seconds(examples: Sequence[ExampleCost], gpus: int, replicas: int,
                  lay: Layout, r: Rates) -> tuple[float, str]:
    """(seconds, binding bound) of one evaluate stage over ``examples`` in stage order."""
    if not examples:
        return 0.0, "none"
    t = max(1, gpus // replicas)  # GPUs per replica
    prompt, output, seq = r.prompt.value * t, r.output.value * t, r.sequence.value
    work = [0.0] * replicas
    chains: list[list[float]] = [[] for _ in range(lay.shards)]
    for i, ex in enumerate(examples):
        k = i % lay.shards
        work[k % replicas] += ex.input_tokens / prompt + ex.output_tokens / output
        chains[k].append(ex.calls * r.call.value + ex.input_tokens / prompt
                         + ex.output_tokens / seq)
    if lay.shards < replicas:  # each shard spreads its calls over every replica
        work = [sum(work) / replicas] * replicas
    shard = [max(max(c), sum(c) / lay.concurrency) if c else 0.0 for c in chains]
    bounds = {"throughput": max(work), "chain": max(shard),
              "workers": sum(shard) / lay.workers}
    name = max(bounds, key=lambda b: bounds[b])
    return bounds[name], name


def estimate(stages: Mapping[tuple[str, str], Sequence[ExampleCost]], lay: Layout,
             r: Rates) -> dict[str, Any]:
    """Seconds per stage, hours per agent and in total: ``total_hours`` with one stage at a
    time (``dvc repro``), ``parallel_hours`` with each agent's stages running at once
    beside the other agents' (on their own GPUs; the same when they share them)."""
    rows, per_agent = [], {}
    for (agent, method), examples in stages.items():
        seconds, bound = stage_seconds(examples, lay.gpus[agent], lay.replicas[agent], lay, r)
        rows.append({"agent": agent, "method": method, "examples": len(examples),
                     "seconds": round(seconds, 1), "bound": bound})
        per_agent[agent] = per_agent.get(agent, 0.0) + seconds
    total = sum(per_agent.values())
    parallel = total if lay.shared else max(per_agent.values(), default=0.0)
    return {"rates": r.as_dict(), "layout": lay.as_dict(), "stages": rows,
            "agent_hours": {a: round(s / 3600, 4) for a, s in per_agent.items()},
            "total_hours": round(total / 3600, 4), "parallel_hours": round(parallel / 3600, 4)}


def stage_costs(rows: Sequence[Any]) -> dict[tuple[str, str], list[ExampleCost]]:
    """Per (agent, method), the examples' costs in stage order, from plan rows that keep
    their examples' costs (:attr:`treeagent.pipeline.plan.Row.example_costs`)."""
    found: dict[tuple[str, str], list[tuple[int, ExampleCost]]] = {}
    for row in rows:
        found.setdefault((row.agent, row.method), []).extend(
            (i, ExampleCost(c.input_tokens_max, c.output_tokens_max, c.calls_max))
            for i, c in row.example_costs)
    return {key: [c for _, c in sorted(v, key=lambda p: p[0])] for key, v in found.items()}


def from_params(params: Any, rows: Sequence[Any], throughput: Any = None,
                sequence_tps: float | None = None, gpus: int | None = None,
                call_seconds: float | None = None) -> tuple[dict[str, Any], int]:
    """The estimate for plan ``rows`` under ``params``' sharding (``evaluate.shards``,
    ``.concurrency``, ``runner.workers``) and serving (``serve.replicas`` x
    ``.tensor_parallel`` per agent when ``serve.enabled``; else ``gpus``, default 1, spread
    over the agents), at ``throughput``'s rates (a :class:`treeagent.pipeline.plan.Throughput`)
    and ``sequence_tps`` and ``call_seconds``, defaults where missing; and the GPUs it
    uses."""
    tp = throughput
    r = rates(tp.prompt if tp else None, tp.output if tp else None,
              tp.sequence if tp else None, tp.source if tp else "given")
    if sequence_tps is not None:
        r = replace(r, sequence=Rate(sequence_tps, "given"))
    if call_seconds is not None:
        r = replace(r, call=Rate(call_seconds, "given"))
    serve = params["serve"]
    if gpus is None and not serve["enabled"]:
        gpus = 1
    lay = layout(params.agents, shards=params["evaluate.shards"],
                 concurrency=params["evaluate.concurrency"], workers=params["runner.workers"],
                 tensor_parallel=serve["tensor_parallel"], replicas=serve["replicas"], gpus=gpus)
    used = gpus if gpus is not None else sum(lay.gpus.values())
    return estimate(stage_costs(rows), lay, r), used

"""One example as a generator program: section, run a workflow, answer.

``program(...)`` returns a generator that yields :class:`~treeagent.llm.base.Request`
objects, receives their :class:`~treeagent.llm.base.Response` and returns a
:class:`Result` — the shape the scheduler (``treeagent.llm``) drives, many examples at
once. The scheduler records the calls; :func:`with_calls` adds them to the result. Preparation (parse, tokenize, budget search) runs lazily at the first ``next()``,
so only admitted examples hold their sections in memory.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from treeagent import registry
from treeagent.agents.common import Calls, Unavailable, problem_text
from treeagent.agents.context import Context
from treeagent.agents.observation import check_method, prepare
from treeagent.agents.setup import capped, resolve, thinking
from treeagent.agents.templates import Prompts
from treeagent.algorithm.tree import Tree
from treeagent.llm.base import Request, Response
from treeagent.tokenizers.tokens import Tokenizer

if TYPE_CHECKING:
    from treeagent.llm.scheduler import CallTrace

__all__ = ["AGENTS", "OPTIONS", "Result", "capped", "drive", "program", "thinking",
           "with_calls"]

AGENTS = registry.AGENTS.names
"""Names of the registered agents (a live view of :data:`treeagent.registry.AGENTS`)."""
OPTIONS = frozenset({"max_new_tokens", "width", "node_budget", "thinking", "thinking_budget"})
"""Workflow options a program accepts (MemReread: ``width``, ``node_budget``; every
agent: ``thinking`` true/false/null overrides the checkpoint's ``enable_thinking``,
``thinking_budget`` InfMem's stage-1 budget, 0 or null for one stage; see
:attr:`treeagent.agents.common.Agent.thinking`)."""


@dataclass
class Result:
    """What one example's run gives. ``prediction`` is the raw final reply, or None
    when a response was unavailable (the answer is then empty and scores 0, C.4).
    The call counts and ``trace`` are filled from the scheduler's record of the calls
    by :func:`with_calls`."""

    agent: str
    method: str
    prediction: str | None
    sections: int  # distinct sections read (InfMem may stop early)
    total_sections: int  # sections of this mode's sectioning
    flat_sections: int  # T_flat(x, C)
    budget: int  # B* (C for flat)
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_calls: int = 0
    seconds: float = 0.0
    error: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    trace: list[dict[str, Any]] = field(default_factory=list)

    @property
    def unavailable(self) -> bool:
        return self.prediction is None


def with_calls(result: Result, calls: Sequence[CallTrace]) -> Result:
    """``result`` with its model calls as the scheduler recorded them (the one record of
    calls): counts and tokens (Table 3), and per call its kind, prompt hash, the prompt
    itself where the run kept requests, reply, tokens, latency, cache hit, error, the
    reading step it carried and any cut made to fit it (:func:`audit`)."""
    trace: list[dict[str, Any]] = []
    for i, c in enumerate(calls):
        entry: dict[str, Any] = {"call": i, "kind": c.kind, "prompt_sha256": c.prompt_hash}
        if c.request is not None:
            entry["messages"] = [{"role": m.role, "content": m.content}
                                 for m in c.request.messages]
            entry["template_kwargs"] = dict(c.request.template_kwargs)
            entry["max_tokens"] = c.request.sampling.max_tokens
        entry.update(reply=c.reply, input_tokens=c.input_tokens,
                     output_tokens=c.output_tokens, latency=c.latency, cached=c.cached,
                     error=c.error)
        trace.append(entry)
    audit(trace, result.details.get("steps", []), result.details.get("clips", []))
    return dataclasses.replace(
        result, calls=len(calls), input_tokens=sum(c.input_tokens for c in calls),
        output_tokens=sum(c.output_tokens for c in calls),
        cached_calls=sum(bool(c.cached) for c in calls), trace=trace)


def audit(trace: list[dict[str, Any]], steps: list[dict[str, Any]],
          clips: list[dict[str, Any]]) -> None:
    """Attach to each call of ``trace`` the reading step it carried (section index,
    path, link sources, spans with their sources) and the cuts made to fit it (6)."""
    for step in steps:
        i = step.get("request")
        if i is not None and 0 <= i < len(trace):
            trace[i]["step"] = {k: v for k, v in step.items() if k != "request"}
    for clip in clips:
        i = clip["request"]
        if 0 <= i < len(trace):
            trace[i].setdefault("clipped", []).append(
                {k: v for k, v in clip.items() if k != "request"})


def program(
    agent: str,
    method: str,
    document: str | Tree,
    fmt: str | None,
    question: str,
    tokenizer: Tokenizer,
    *,
    base_budget: int = 5000,
    task: str | None = None,
    prompts: Prompts | str | Path | None = None,
    context_window: int | None = None,
    options: dict[str, Any] | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> Generator[Request, Response, Result]:
    """A generator program answering ``question`` about ``document`` with ``agent`` in
    ``method`` mode (``prompts``: a template set or a folder overriding the packaged
    templates). ``tokenizer`` is the evaluated model's (sections are counted with
    it, C.1); ``task`` selects the task instruction (C.3; None: the open instruction);
    ``context_window`` clamps the request limit; ``options`` holds workflow settings
    (MemReread ``width``/``node_budget``; ``max_new_tokens`` caps every call, see
    :func:`capped`). Bad arguments raise here, at once."""
    registry.AGENTS.get(agent)  # ValueError naming the agents
    check_method(method)
    if base_budget < 1:
        raise ValueError("the base budget C must be a positive number of tokens")
    unknown = sorted(set(options or {}) - OPTIONS)
    if unknown:
        raise ValueError(f"unknown option(s) {', '.join(unknown)} "
                         f"(known: {', '.join(sorted(OPTIONS))})")
    thinking(agent, dict(options or {}))  # checks the thinking options now
    prompts = prompts if isinstance(prompts, Prompts) else Prompts(prompts)
    problem = problem_text(question, task, prompts)  # checks the task name now
    return _run(agent, method, document, fmt, question, problem, tokenizer, base_budget,
                prompts, context_window, dict(options or {}), clock)


def _run(agent: str, method: str, document: str | Tree, fmt: str | None, question: str,
         problem: str, tokenizer: Tokenizer, base_budget: int, prompts: Prompts,
         context_window: int | None, options: dict[str, Any],
         clock: Callable[[], float]) -> Generator[Request, Response, Result]:
    start = clock()
    setup = resolve(agent, tokenizer=tokenizer, options=options, window=context_window)
    doc = prepare(document, fmt, tokenizer, method, base_budget)
    calls = Calls(prompts, tokenizer, setup.request_limit, thinking=setup.thinking)
    ctx = Context(doc, problem, question.strip(), prompts, calls, setup.limits, tokenizer,
                  options)
    ctx.details.update({"links": doc.links, "request_limit": calls.request_limit})
    prediction: str | None
    error = None
    try:
        prediction = yield from setup.record.run(ctx)
    except Unavailable as exc:
        prediction, error = None, str(exc)
    ctx.details["clipped"] = calls.clipped
    ctx.details["clips"] = calls.clips
    return Result(
        agent=agent, method=method, prediction=prediction, sections=len(ctx.read),
        total_sections=len(doc), flat_sections=doc.flat_count, budget=doc.budget,
        seconds=clock() - start, error=error, details=ctx.details,
    )


class _Respond:
    """``respond`` as an engine of the scheduler, one request at a time (for :func:`drive`)."""

    name = model = "respond"
    revision = "-"
    max_batch = 1

    def __init__(self, respond: Callable[[Request], Response]) -> None:
        self.respond = respond

    async def generate(self, requests: Sequence[Request]) -> list[Response]:
        return [self.respond(r) for r in requests]

    async def aclose(self) -> None:
        return None


def drive(gen: Generator[Request, Response, Any], respond: Callable[[Request], Response]) -> Any:
    """Run a program synchronously, answering each request with ``respond``, through the
    scheduler (one program; no cache). A :class:`Result` comes back with its calls
    (:func:`with_calls`); an error the program raised is raised again here."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise RuntimeError("drive() runs its own event loop; inside one, use arun_programs")
    from treeagent.llm.scheduler import run_programs  # keeps plain imports light

    outcome = run_programs([("program", gen)], _Respond(respond), concurrency=1,
                           progress=False, keep_requests=True)["program"]
    if outcome.error is not None:
        raise RuntimeError(outcome.error)
    if isinstance(outcome.result, Result):
        return with_calls(outcome.result, outcome.trace)
    return outcome.result

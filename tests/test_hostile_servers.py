"""Hostile and failing servers: no key fragment is ever stored or
printed, replies are capped in bytes and tokens and counted, a hung server costs at most
the call's deadline, invalid base URLs are refused at once."""

from __future__ import annotations

import asyncio
import json
import resource
import threading
import time
from collections.abc import Callable

import pytest

from treeagent.llm import CallCache, Message, Request, Sampling, make_engine, run_programs
from treeagent.llm.openai_engine import ERROR_CHARS, check_base_url, cut, scrub
from treeagent.tokenizers import tokens

KEY_ENV = "TREEAGENT_HOSTILE_KEY"
SECRET = "sk-QZ7_vW9x_KEY_Lp4T_nR2m_Yc8J_hB5s"
TRANSPORTS = ["httpx", "aiohttp", "httptools"]

Handler = Callable[[dict, asyncio.StreamWriter], "asyncio.Future | None"]


class HostileServer:
    """TEST DOUBLE: an HTTP/1.1 server whose ``reply(body, writer)`` coroutine writes
    whatever a hostile or broken server would (one request per connection)."""

    def __init__(self, reply) -> None:
        self.reply = reply
        self.port = 0
        self.requests = 0
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            length = 0
            await reader.readline()
            while (line := await reader.readline()) not in (b"\r\n", b""):
                name, _, value = line.decode("latin-1").partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            body = json.loads(await reader.readexactly(length))
            self.requests += 1
            await self.reply(body, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    def _run(self) -> None:
        loop = self._loop
        asyncio.set_event_loop(loop)
        server = loop.run_until_complete(asyncio.start_server(self._handle, "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        loop.run_forever()
        server.close()
        tasks = asyncio.all_tasks(loop)  # handlers still writing or sleeping: end them
        for task in tasks:
            task.cancel()
        loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
        loop.run_until_complete(server.wait_closed())
        loop.close()

    def __enter__(self) -> HostileServer:
        self._thread.start()
        self._ready.wait(5)
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)


def _head(status: int, length: int | None, extra: str = "") -> bytes:
    size = f"Content-Length: {length}\r\n" if length is not None else ""
    return (f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\n{size}{extra}"
            "Connection: close\r\n\r\n").encode()


def _completion(content: str, completion_tokens: int = 3) -> bytes:
    return json.dumps({"choices": [{"message": {"content": content}}],
                       "usage": {"prompt_tokens": 5,
                                 "completion_tokens": completion_tokens}}).encode()


def _engine(url: str, http_client: str, **options):
    base = {"timeout": 2.0, "max_retries": 0, "backoff_base": 0.01, "backoff_max": 0.02,
            "api_key_env": KEY_ENV, "http_client": http_client, "tokenizer": "cl100k_base"}
    return make_engine("openai", "hostile-model", base_urls=[url], **{**base, **options})


def _ask(text: str = "q", max_tokens: int = 16) -> Request:
    return Request((Message("user", text),), Sampling(max_tokens=max_tokens))


def _one(prompt: str):
    reply = yield _ask(prompt)
    return reply.text


def _fragments(secret: str, n: int = 5) -> set[str]:
    return {secret[i:i + n] for i in range(len(secret) - n + 1)}


# ------------------------------------------------------------------ secrets (item 4)


@pytest.mark.parametrize("pad", [ERROR_CHARS - 12, ERROR_CHARS - 3, 2 * ERROR_CHARS - 20])
def test_scrub_comes_before_the_cut(pad):
    text = "x" * pad + f"Authorization: Bearer {SECRET} trailing"
    out = cut(scrub(text, SECRET), ERROR_CHARS)
    assert not any(f in out for f in _fragments(SECRET))
    echoed = cut(scrub("y" * pad + "bearer sk-other-credential-zzzzzz", None), ERROR_CHARS)
    assert "credential" not in echoed and "sk-other" not in echoed


@pytest.mark.parametrize("http_client", TRANSPORTS)
@pytest.mark.parametrize("status", [400, 503])
def test_error_bodies_echoing_the_key_leave_no_fragment(tmp_path, monkeypatch, http_client,
                                                        status):
    monkeypatch.setenv(KEY_ENV, SECRET)

    async def reply(body, writer):  # the key straddles the old 200-character cut
        text = ("e" * 185 + f"Bearer {SECRET} and again {SECRET}" + "z" * 400).encode()
        writer.write(_head(status, len(text)) + text)
        await writer.drain()

    db = tmp_path / "calls.sqlite"
    with HostileServer(reply) as server:
        eng = _engine(server.url, http_client, max_retries=1)
        out = run_programs([("p", _one("p"))], eng, db, progress=False)
        asyncio.run(eng.aclose())
    error = out["p"].trace[0].error
    assert error and f"HTTP {status}" in error and len(error) < 3 * ERROR_CHARS
    journal = json.dumps(CallCache(db).journal(out.run_id))
    for place in (error, journal):
        assert not any(f in place for f in _fragments(SECRET)), place


@pytest.mark.parametrize("http_client", TRANSPORTS)
def test_reply_text_echoing_the_key_is_scrubbed(monkeypatch, http_client):
    monkeypatch.setenv(KEY_ENV, SECRET)

    async def reply(body, writer):
        text = _completion(f"your key is {SECRET}")
        writer.write(_head(200, len(text)) + text)

    with HostileServer(reply) as server:
        eng = _engine(server.url, http_client)
        r = asyncio.run(_complete(eng, _ask()))
    assert r.text == "your key is ***"


async def _complete(eng, request):
    try:
        return await eng.complete(request)
    finally:
        await eng.aclose()


# ------------------------------------------------------------------ reply caps (item 5)


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@pytest.mark.parametrize("http_client", TRANSPORTS)
@pytest.mark.parametrize("declared", [True, False])
def test_huge_replies_are_refused_while_they_arrive(http_client, declared):
    total = 48 * 2**20  # 48 MB, written in 64 KB pieces; the client keeps at most 1 MB

    async def reply(body, writer):
        writer.write(_head(200, total if declared else None))
        piece = b"x" * 65536
        for _ in range(total // len(piece)):
            writer.write(piece)
            await writer.drain()

    before = _rss_mb()
    with HostileServer(reply) as server:
        eng = _engine(server.url, http_client, max_reply_bytes=2**20)
        t0 = time.perf_counter()
        r = asyncio.run(_complete(eng, _ask()))
        elapsed = time.perf_counter() - t0
    assert r.text is None and "larger than 1048576 bytes" in r.error
    assert eng.stats["capped_bytes"] == 1 and server.requests == 1  # not retried
    assert elapsed < 10 and _rss_mb() - before < 40


@pytest.mark.parametrize("http_client", TRANSPORTS)
def test_replies_past_max_tokens_are_cut_and_counted(http_client):
    words = " ".join(f"word{i}" for i in range(5000))

    async def reply(body, writer):
        text = _completion(words, completion_tokens=4)  # a server that ignores max_tokens
        writer.write(_head(200, len(text)) + text)

    with HostileServer(reply) as server:
        eng = _engine(server.url, http_client)
        r = asyncio.run(_complete(eng, _ask(max_tokens=32)))
    tok = tokens.load("cl100k_base")
    assert tok.count(r.text) <= 32 and words.startswith(r.text) and len(r.text) > 20
    assert r.output_tokens == 32 and eng.stats["capped_tokens"] == 1


# ------------------------------------------------------------------ deadlines (item 6)


@pytest.mark.parametrize("http_client", TRANSPORTS)
def test_a_hung_server_costs_at_most_the_deadline(http_client):
    async def reply(body, writer):
        await asyncio.sleep(30)

    with HostileServer(reply) as server:
        eng = _engine(server.url, http_client, timeout=0.3, max_retries=50, deadline=1.0)
        t0 = time.perf_counter()
        r = asyncio.run(_complete(eng, _ask()))
        elapsed = time.perf_counter() - t0
    assert r.text is None and "deadline of 1 s exceeded" in r.error
    assert 0.9 < elapsed < 2.5 and 2 <= server.requests <= 4
    assert eng.stats["deadline_exceeded"] == 1


def test_default_deadline_is_twice_the_timeout():
    eng = make_engine("openai", "m", base_urls=["http://127.0.0.1:1/v1"], timeout=7)
    assert eng.deadline == 14 and eng.max_retries == 6


@pytest.mark.parametrize("url", ["htp://x/v1", "http:///v1", "http://h:99999/v1",
                                 "http://h /v1", "127.0.0.1:8000/v1", "", "http://h\n/v1"])
def test_invalid_base_urls_are_refused_at_once(url):
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match="invalid base URL"):
        make_engine("openai", "m", base_urls=[url])
    assert time.perf_counter() - t0 < 0.5
    assert check_base_url("https://api.example.org/v1/") == "https://api.example.org/v1"


@pytest.mark.parametrize("options", [{"timeout": 0}, {"timeout": -1}, {"deadline": 0},
                                     {"max_retries": -1}])
def test_bad_timeouts_and_retries_are_refused(options):
    with pytest.raises(ValueError):
        make_engine("openai", "m", base_urls=["http://127.0.0.1:1/v1"], **options)

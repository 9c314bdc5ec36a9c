"""Any OpenAI-compatible ``/v1/chat/completions`` server (vLLM, SGLang, hosted) over
HTTP/1.1 (http and https).

* ``concurrency`` requests in flight (a semaphore), spread over several ``base_urls``
  by least in-flight: how users scale over GPUs and hosts.
* Transport: ``http_client="auto"`` (default) takes httptools, the least client CPU per
  call (TLS included), unless a proxy from the environment (``HTTPS_PROXY``...,
  less ``NO_PROXY``) applies to a base URL: then httpx, the one client that honours
  proxies. ``"httptools"``, ``"aiohttp"`` or ``"httpx"`` name one; figures in
  ``http_clients``.
* Timeouts: ``timeout`` bounds each attempt whole (connect to last byte: a server that
  trickles bytes is cut there too), ``deadline`` each call (all attempts and waits;
  default twice ``timeout``); retries (``max_retries``) with exponential backoff and full
  jitter on 408/429/5xx, connection errors, timeouts and malformed 200 replies (not
  JSON, no ``choices``, a message with neither content nor tool calls: a proxy's error
  page, an overloaded server), honouring ``Retry-After``. Retries exhausted or deadline
  passed: the Response is unavailable (``text=None``, ``error`` set; paper C.4) -- never
  an exception.
* Replies are capped: a body over ``max_reply_bytes`` is refused while it arrives (the
  call is unavailable), a reply text over the request's ``max_tokens`` (a server that
  ignores it) is cut to it; both are counted in :attr:`OpenAIEngine.stats`, with the
  requests sent (every attempt), the retries and the malformed replies.
* The API key comes from the environment variable named by ``api_key_env``; it is sent
  only in the ``Authorization`` header and scrubbed (before any cut) from every error
  message and reply text, as is any ``Bearer`` credential a server echoes.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import os
import random
import re
import time
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from treeagent.llm.base import Request, Response
from treeagent.llm.http_clients import TRANSPORTS, Reply, ReplyTooLarge, default_client

log = logging.getLogger(__name__)
RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
MAX_REPLY_BYTES = 16 * 2**20
ERROR_CHARS = 300  # server text kept in an error message (after scrubbing)
_BEARER = re.compile(r"(?i)\b(bearer\s+)[^\s\"',;]+")


def check_base_url(url: str) -> str:
    """``url`` without a trailing slash; ``ValueError`` naming the problem unless it is
    an absolute http(s) URL with a host (and a valid port)."""
    if not isinstance(url, str) or any(c.isspace() or ord(c) < 32 for c in url):
        raise ValueError(f"invalid base URL {url!r}: spaces or control characters")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (raises ValueError on a bad port)
    except ValueError as exc:
        raise ValueError(f"invalid base URL {url!r}: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"invalid base URL {url!r}: expected http(s)://HOST[:PORT]/PATH")
    return url.rstrip("/")


def scrub(text: str, secret: str | None) -> str:
    """``text`` without ``secret`` and without any ``Bearer <credential>``."""
    if secret:
        text = text.replace(secret, "***")
    return _BEARER.sub(r"\1***", text) if "earer" in text or "EARER" in text else text


def cut(text: str, limit: int = ERROR_CHARS) -> str:
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} chars)"


class _Retryable(Exception):
    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class _Malformed(_Retryable):
    """A 200 reply that is not a completion (retried like a 5xx, and counted)."""


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


class OpenAIEngine:
    """An :class:`~treeagent.llm.base.Engine` over OpenAI-compatible HTTP servers."""

    name = "openai"
    max_batch = 1  # the scheduler hands calls over one by one: no batch waits for its slowest

    def __init__(
        self,
        model: str,
        *,
        base_urls: Sequence[str] | str = ("http://127.0.0.1:8000/v1",),
        api_key_env: str = "OPENAI_API_KEY",
        revision: str = "unversioned",
        concurrency: int = 64,
        timeout: float = 600.0,
        connect_timeout: float = 10.0,
        max_retries: int = 6,
        deadline: float | None = None,
        max_reply_bytes: int = MAX_REPLY_BYTES,
        backoff_base: float = 0.5,
        backoff_max: float = 30.0,
        retry_after_max: float = 120.0,
        tokenizer: str | None = None,
        extra_body: dict[str, Any] | None = None,
        pool_size: int = 8,
        http_client: str = "auto",
    ) -> None:
        urls = [base_urls] if isinstance(base_urls, str) else list(base_urls)
        if not urls:
            raise ValueError("base_urls is empty")
        if not timeout > 0 or (deadline is not None and not deadline > 0):
            raise ValueError("timeout and deadline must be positive seconds")
        if not isinstance(max_retries, int) or max_retries < 0:
            raise ValueError("max_retries must be a whole number >= 0")
        self.model = model
        self.revision = revision
        self.base_urls = [check_base_url(u) for u in urls]
        self.api_key_env = api_key_env
        self.concurrency = concurrency
        self.max_retries = max_retries
        self.timeout = timeout
        self.deadline = deadline if deadline is not None else 2 * timeout
        self.max_reply_bytes = max_reply_bytes
        #: replies refused for size, cut to max_tokens, calls past their deadline;
        #: requests sent (every attempt), retries, malformed 200 replies
        self.stats = {"capped_bytes": 0, "capped_tokens": 0, "deadline_exceeded": 0,
                      "requests": 0, "retries": 0, "malformed": 0}
        self.backoff_base, self.backoff_max = backoff_base, backoff_max
        self.retry_after_max = retry_after_max
        self.extra_body = dict(extra_body or {})
        self.in_flight = dict.fromkeys(self.base_urls, 0)
        self.sent = dict.fromkeys(self.base_urls, 0)  # attempts per server
        self._turn = 0
        self._tokenizer_name = self.tokenizer_name = tokenizer
        self._tokenizer: Any = None
        if http_client == "auto":
            http_client = default_client(self.base_urls)
        if http_client not in TRANSPORTS:
            raise ValueError(f"http_client must be auto or one of {', '.join(TRANSPORTS)}")
        self.http_client = http_client
        self._transport_args = (concurrency, timeout, connect_timeout, pool_size,
                                max_reply_bytes)
        self._transport: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._semaphore: asyncio.Semaphore | None = None
        self._jitter = random.Random()

    # -- plumbing ---------------------------------------------------------------------
    def _key(self) -> str | None:
        return os.environ.get(self.api_key_env) or None

    def _scrub(self, text: str) -> str:
        return scrub(text, self._key())

    def _ensure_transport(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        if self._transport is None or self._semaphore is None or self._loop is not loop:
            self._loop = loop  # clients belong to one event loop (run_programs makes one)
            self._transport = TRANSPORTS[self.http_client](*self._transport_args)
            self._semaphore = asyncio.Semaphore(self.concurrency)
        return self._semaphore

    def _pick(self) -> str:
        """The server with the fewest requests in flight (ties: round robin)."""
        least = min(self.in_flight.values())
        n = len(self.base_urls)
        for i in range(n):
            url = self.base_urls[(self._turn + i) % n]
            if self.in_flight[url] == least:
                self._turn = (self._turn + i + 1) % n
                return url
        return self.base_urls[0]  # pragma: no cover

    def payload(self, request: Request) -> dict[str, Any]:
        """The JSON body for one request."""
        s = request.sampling
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
            "max_tokens": s.max_tokens,
            "temperature": s.temperature,
            "top_p": s.top_p,
        }
        if s.seed is not None:
            body["seed"] = s.seed
        if s.stop:
            body["stop"] = list(s.stop)
        if request.tools:
            body["tools"] = list(request.tools)
        if request.template_kwargs:  # vLLM / SGLang: arguments of the chat template
            body["chat_template_kwargs"] = dict(request.template_kwargs)
        if request.continues:  # vLLM: continue the final assistant message
            body["continue_final_message"] = True
            body["add_generation_prompt"] = False
        body.update(self.extra_body)
        return body

    # -- calls ------------------------------------------------------------------------
    async def generate(self, requests: Sequence[Request]) -> list[Response]:
        if len(requests) == 1:  # the scheduler's usual case: no gather task in between
            return [await self.complete(requests[0])]
        return list(await asyncio.gather(*(self.complete(r) for r in requests)))

    async def complete(self, request: Request) -> Response:
        """One call with retries; never raises (except cancellation)."""
        semaphore = self._ensure_transport()
        transport = self._transport
        body = self.payload(request)
        headers = {"Authorization": f"Bearer {key}"} if (key := self._key()) else {}
        last = ["no attempt"]
        async with semaphore:
            started = time.perf_counter()  # the deadline counts from leaving the queue
            try:
                async with asyncio.timeout(self.deadline):
                    return await self._attempts(transport, body, headers, request, started, last)
            except TimeoutError:
                self.stats["deadline_exceeded"] += 1
                return self._unavailable(
                    f"deadline of {self.deadline:g} s exceeded: {last[0]}", started)

    async def _attempts(self, transport: Any, body: dict[str, Any], headers: dict[str, str],
                        request: Request, started: float, last: list[str]) -> Response:
        for attempt in range(self.max_retries + 1):
            url = self._pick()
            self.in_flight[url] += 1
            self.sent[url] += 1
            self.stats["requests"] += 1
            try:
                async with asyncio.timeout(self.timeout):  # the whole attempt, not per read
                    reply = await transport.post(f"{url}/chat/completions", body, headers)
                return self._parse(reply, started, request.sampling.max_tokens)
            except _Retryable as exc:
                self.stats["malformed"] += isinstance(exc, _Malformed)
                last[0], wait = str(exc), exc.retry_after
            except TimeoutError:  # this attempt's timeout (the call's deadline propagates)
                last[0], wait = f"attempt timeout of {self.timeout:g} s exceeded", None
            except ReplyTooLarge as exc:  # would come again: unavailable now
                self.stats["capped_bytes"] += 1
                return self._unavailable(str(exc), started)
            except transport.retry_errors as exc:
                last[0], wait = f"{type(exc).__name__}: {exc}", None
            except Exception as exc:  # not retryable (4xx, bad JSON): unavailable now
                return self._unavailable(f"{type(exc).__name__}: {exc}", started)
            finally:
                self.in_flight[url] -= 1
            if attempt == self.max_retries:
                break
            self.stats["retries"] += 1
            await asyncio.sleep(self._delay(attempt, wait))
        return self._unavailable(f"retries exhausted ({self.max_retries}): {last[0]}", started)

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        """Full jitter: uniform(0, min(cap, base * 2**attempt)); at least Retry-After."""
        jitter = self._jitter.uniform(0, min(self.backoff_max, self.backoff_base * 2**attempt))
        if retry_after is not None:
            return max(min(retry_after, self.retry_after_max), jitter)
        return jitter

    def _unavailable(self, error: str, started: float) -> Response:
        """Errors quote server text: scrubbed whole first, then cut (no key fragment)."""
        return Response(None, latency=time.perf_counter() - started,
                        error=cut(self._scrub(error), 2 * ERROR_CHARS))

    def _parse(self, reply: Reply, started: float, max_tokens: int) -> Response:
        status, headers, text = reply
        if status in RETRY_STATUS:
            after = parse_retry_after(headers.get("retry-after"))
            raise _Retryable(f"HTTP {status}: {cut(self._scrub(text))}", after)
        if status >= 400:
            raise ValueError(f"HTTP {status}: {cut(self._scrub(text))}")
        try:
            data = json.loads(text)
        except ValueError:
            raise _Malformed(f"HTTP {status}: reply is not JSON: "
                             f"{cut(self._scrub(text))}") from None
        choices = data.get("choices") if isinstance(data, dict) else None
        if not (isinstance(choices, list) and choices and isinstance(choices[0], dict)):
            raise _Malformed(f"HTTP {status}: reply has no choices: {cut(self._scrub(text))}")
        message = choices[0].get("message") or {}
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        content = message.get("content") if isinstance(message, dict) else None
        if content is None and not (isinstance(message, dict) and message.get("tool_calls")):
            raise _Malformed(f"HTTP {status}: reply has no content (null) and no tool calls")
        content = content or ""
        if not isinstance(content, str):
            raise ValueError(f"reply content is a {type(content).__name__}, not text")
        content = self._scrub(content)
        output_tokens = int(usage.get("completion_tokens") or 0)
        if len(content) > 4 * max_tokens:  # long for its limit: hold it to max_tokens
            n = self.count_tokens(content)
            if n > max_tokens:
                self.stats["capped_tokens"] += 1
                log.warning("reply of %d tokens cut to max_tokens=%d", n, max_tokens)
                content = self._truncate(content, max_tokens)
                output_tokens = max_tokens
        return Response(
            text=content,
            input_tokens=int(usage.get("prompt_tokens") or 0),
            output_tokens=output_tokens,
            latency=time.perf_counter() - started,
            tool_calls=list(message.get("tool_calls") or []),
        )

    # -- tokens -----------------------------------------------------------------------
    def count_tokens(self, text: str) -> int:
        """Tokens under ``tokenizer`` (a ``treeagent.tokenizers.tokens`` name or folder), else under
        the model's own files when ``model`` is a local spec; else ~4 bytes per token."""
        if self._tokenizer is None:
            self._tokenizer = self._load_tokenizer()
        if self._tokenizer is False:
            return (len(text.encode()) + 3) // 4
        return self._tokenizer.count(text)

    def _truncate(self, text: str, n: int) -> str:
        if self._tokenizer is False:
            return text.encode()[: 4 * n].decode("utf-8", errors="ignore")
        return self._tokenizer.truncate(text, n)

    def _load_tokenizer(self) -> Any:
        from treeagent.llm.models import ModelError, tokenizer_dir
        from treeagent.tokenizers import tokens

        if self._tokenizer_name:
            return tokens.load(self._tokenizer_name)
        try:
            return tokens.load(str(tokenizer_dir(self.model)))
        except (ModelError, tokens.TokenizerError, OSError):
            log.warning("no tokenizer for %s: estimating 4 bytes per token", self.model)
            return False

    async def aclose(self) -> None:
        transport, self._transport = self._transport, None
        if transport is not None and self._loop is asyncio.get_running_loop():
            await transport.aclose()  # clients of an earlier (closed) loop are just dropped

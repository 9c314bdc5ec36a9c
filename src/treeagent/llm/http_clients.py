"""HTTP transports for the openai engine: ``httptools`` (the default, see
:func:`default_client`), ``aiohttp`` and ``httpx``.

All POST JSON and return ``(status, headers, text)`` (header names lower-case);
transport failures raise one of ``retry_errors`` (connection refused/reset/dropped,
timeouts, malformed replies); a body past ``max_reply_bytes`` (its declared length, or
the bytes received so far) raises :class:`ReplyTooLarge` and is never held whole. Client CPU per call of a whole run (scheduler, journal and
HTTP client), measured here on the loopback test double (64 in flight, 100 ms latency,
``benchmarks/scheduler.py``, medians of 7): httptools 0.30 ms (keep-alive connections
on asyncio protocols, replies parsed by llhttp in C), aiohttp 0.46 ms, httpx 1.34 ms
even with its pool split into shards of 8 connections (httpcore scans its whole pool on
every request: one pool of 64 costs ~10 ms). httpx alone honours proxy settings from
the environment (``HTTPS_PROXY``...); the other two connect directly. All three speak
TLS with the system's default certificate store.
"""

from __future__ import annotations

import asyncio
import functools
import json
import ssl
import urllib.request
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

import httptools
import httpx

Reply = tuple[int, Mapping[str, str], str]
DEFAULT_MAX_REPLY = 16 * 2**20


class ReplyTooLarge(ValueError):
    """A reply body over the transport's byte cap (the connection is dropped)."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"reply larger than {limit} bytes (max_reply_bytes): refused")


def _decode(data: bytes, charset: str | None) -> str:
    try:
        return data.decode(charset or "utf-8", errors="replace")
    except LookupError:  # an unknown charset name
        return data.decode("utf-8", errors="replace")


def _declared_length(headers: Mapping[str, str], limit: int) -> None:
    value = headers.get("content-length")
    if value is not None and value.strip().isdigit() and int(value) > limit:
        raise ReplyTooLarge(limit)


@functools.lru_cache(maxsize=1)
def _ssl_context() -> ssl.SSLContext:
    return ssl.create_default_context()  # loaded once, shared by every client


class HttpxTransport:
    """httpx.AsyncClient shards of at most ``pool_size`` connections each."""

    def __init__(self, concurrency: int, timeout: float, connect_timeout: float,
                 pool_size: int = 8, max_reply_bytes: int = DEFAULT_MAX_REPLY) -> None:  # fmt: skip
        self._limit = max_reply_bytes
        shards = max(1, -(-concurrency // pool_size))
        limits = httpx.Limits(max_connections=pool_size, max_keepalive_connections=pool_size)
        t = httpx.Timeout(timeout, connect=connect_timeout)
        self._clients = [
            httpx.AsyncClient(timeout=t, limits=limits, verify=_ssl_context())
            for _ in range(shards)
        ]
        self._load = [0] * shards
        self.retry_errors: tuple[type[BaseException], ...] = (httpx.TransportError,)

    async def post(self, url: str, body: dict[str, Any], headers: dict[str, str]) -> Reply:
        shard = self._load.index(min(self._load))
        self._load[shard] += 1
        try:
            async with self._clients[shard].stream("POST", url, json=body,
                                                   headers=headers) as r:  # fmt: skip
                _declared_length(r.headers, self._limit)
                chunks, size = [], 0
                async for chunk in r.aiter_bytes():  # decompressed: no gzip bomb either
                    size += len(chunk)
                    if size > self._limit:
                        raise ReplyTooLarge(self._limit)
                    chunks.append(chunk)
                return r.status_code, r.headers, _decode(b"".join(chunks), r.charset_encoding)
        finally:
            self._load[shard] -= 1

    async def aclose(self) -> None:
        for client in self._clients:
            await client.aclose()


class AiohttpTransport:
    """One aiohttp.ClientSession (its connector is cheap per request)."""

    def __init__(self, concurrency: int, timeout: float, connect_timeout: float,
                 pool_size: int = 8, max_reply_bytes: int = DEFAULT_MAX_REPLY) -> None:  # fmt: skip
        import aiohttp

        self._limit = max_reply_bytes
        connector = aiohttp.TCPConnector(limit=concurrency + 8, ssl=_ssl_context())
        self._session = aiohttp.ClientSession(
            connector=connector,
            timeout=aiohttp.ClientTimeout(total=timeout, sock_connect=connect_timeout),
        )
        self.retry_errors = (aiohttp.ClientError, asyncio.TimeoutError)

    async def post(self, url: str, body: dict[str, Any], headers: dict[str, str]) -> Reply:
        data = json.dumps(body).encode()
        hdrs = {"Content-Type": "application/json", **headers}
        async with self._session.post(url, data=data, headers=hdrs) as r:
            _declared_length(r.headers, self._limit)
            chunks, size = [], 0
            async for chunk in r.content.iter_chunked(1 << 16):
                size += len(chunk)
                if size > self._limit:
                    r.close()
                    raise ReplyTooLarge(self._limit)
                chunks.append(chunk)
            return r.status, r.headers, _decode(b"".join(chunks), r.charset)

    async def aclose(self) -> None:
        await self._session.close()


class _Connection(asyncio.Protocol):
    """One keep-alive HTTP/1.1 connection: at most one request at a time (no pipelining)."""

    def __init__(self, limit: int = DEFAULT_MAX_REPLY) -> None:
        self.limit = limit
        self.size = 0
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.closed = False
        self.received = False  # any byte of the current reply arrived
        self.reply: asyncio.Future | None = None
        self.headers: dict[str, str] = {}
        self.body: list[bytes] = []
        self.until_close = False  # a reply delimited by closing the connection (no length)

    # asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        if self.reply is None or self.reply.done():  # bytes nobody asked for: unusable
            self.close()
            return
        self.received = True
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._resolve(exc=ConnectionError(f"malformed HTTP reply: {exc}"))
            self.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.until_close and self.reply is not None and not self.reply.done():
            self._resolve(result=(self.parser.get_status_code(), self.headers,
                                  b"".join(self.body), False))  # fmt: skip
        else:
            self._resolve(exc=ConnectionError(f"connection closed before the reply ({exc})"))

    # httptools callbacks
    def on_message_begin(self) -> None:
        self.headers, self.body, self.size = {}, [], 0

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers[name.decode("latin-1").lower()] = value.decode("latin-1")

    def on_headers_complete(self) -> None:
        self.until_close = not ({"content-length", "transfer-encoding"} & self.headers.keys())
        try:
            _declared_length(self.headers, self.limit)
        except ReplyTooLarge as exc:
            self._refuse(exc)

    def on_body(self, body: bytes) -> None:
        self.size += len(body)
        if self.size > self.limit:
            self._refuse(ReplyTooLarge(self.limit))
            return
        self.body.append(body)

    def _refuse(self, exc: ReplyTooLarge) -> None:
        self.until_close = False
        self.body = []
        self._resolve(exc=exc)
        self.close()

    def on_message_complete(self) -> None:
        status = self.parser.get_status_code()
        if 100 <= status < 200:  # an interim reply: the final one follows
            return
        self.until_close = False
        self._resolve(result=(status, self.headers, b"".join(self.body),
                              self.parser.should_keep_alive()))  # fmt: skip

    # helpers
    def _resolve(self, result: Any = None, exc: Exception | None = None) -> None:
        if self.reply is not None and not self.reply.done():
            if exc is not None:
                self.reply.set_exception(exc)
            else:
                self.reply.set_result(result)

    def request(self, data: bytes) -> asyncio.Future:
        assert self.transport is not None
        self.reply = asyncio.get_running_loop().create_future()
        self.received = False
        self.transport.write(data)
        return self.reply

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()


class HttptoolsTransport:
    """Keep-alive HTTP/1.1 connections on asyncio protocols, replies parsed by httptools
    (llhttp: Content-Length, chunked, or until close). A reused connection that fails
    before any byte of the reply (the server closed it while idle) is retried at once
    on a new connection; any other failure closes the connection and is retryable."""

    def __init__(self, concurrency: int, timeout: float, connect_timeout: float,
                 pool_size: int = 8, max_reply_bytes: int = DEFAULT_MAX_REPLY) -> None:  # fmt: skip
        self._timeout, self._connect_timeout = timeout, connect_timeout
        self._limit = max_reply_bytes
        self._max_idle = concurrency + 8
        self._idle: dict[tuple[str, str, int], list[_Connection]] = {}
        self._open: set[_Connection] = set()
        self.retry_errors = (OSError, asyncio.TimeoutError)  # ConnectionError is an OSError

    @staticmethod
    @functools.lru_cache(maxsize=64)
    def _target(url: str) -> tuple[tuple[str, str, int], bytes]:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {url}")
        port = parts.port or (443 if parts.scheme == "https" else 80)
        host = parts.hostname if parts.port is None else f"{parts.hostname}:{port}"
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        head = f"POST {path} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: treeagent\r\n"
        head += "Accept: application/json\r\nContent-Type: application/json\r\n"
        return (parts.scheme, parts.hostname, port), head.encode("latin-1")

    async def _connect(self, origin: tuple[str, str, int]) -> _Connection:
        scheme, host, port = origin
        loop = asyncio.get_running_loop()
        async with asyncio.timeout(self._connect_timeout):
            _, conn = await loop.create_connection(
                lambda: _Connection(self._limit), host, port,
                ssl=_ssl_context() if scheme == "https" else None,
            )  # fmt: skip
        self._open.add(conn)
        return conn

    async def post(self, url: str, body: dict[str, Any], headers: dict[str, str]) -> Reply:
        origin, head = self._target(url)
        data = json.dumps(body).encode()
        extra = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        if extra.count("\n") != len(headers) or extra.count("\r") != len(headers):
            raise ValueError("a header name or value holds a line break")  # no injection
        message = b"%s%sContent-Length: %d\r\n\r\n%s" % (head, extra.encode("latin-1"),
                                                           len(data), data)  # fmt: skip
        idle = self._idle.setdefault(origin, [])
        while True:
            while idle and idle[-1].closed:
                self._open.discard(idle.pop())
            reused = bool(idle)
            conn = idle.pop() if reused else await self._connect(origin)
            try:
                async with asyncio.timeout(self._timeout):
                    status, hdrs, raw, keep = await conn.request(message)
            except ConnectionError:
                self._drop(conn)
                if reused and not conn.received:
                    continue  # a stale keep-alive connection: once more, on a new one
                raise
            except ReplyTooLarge:
                self._drop(conn)
                raise
            except BaseException:  # timeouts, cancellation: the connection's state is unknown
                self._drop(conn)
                raise
            if keep and not conn.closed and len(idle) < self._max_idle:
                idle.append(conn)
            else:
                self._drop(conn)
            return status, hdrs, raw.decode("utf-8", errors="replace")

    def _drop(self, conn: _Connection) -> None:
        conn.close()
        self._open.discard(conn)

    async def aclose(self) -> None:
        for conn in list(self._open):
            conn.close()
        self._open.clear()
        self._idle.clear()
        await asyncio.sleep(0)  # let the transports finish closing


def default_client(urls: Sequence[str]) -> str:
    """The openai engine's ``http_client="auto"``: ``httptools`` (>= 90% of ideal at 64
    in flight in ``benchmarks/scheduler.py``, where httpx reaches ~70%), or ``httpx``
    where a proxy from the environment (``HTTP(S)_PROXY``, ``ALL_PROXY``, less
    ``NO_PROXY``) applies to one of ``urls``: httptools would connect directly."""
    proxies = urllib.request.getproxies_environment()
    for url in urls:
        parts = urlsplit(url)
        host = parts.netloc.rpartition("@")[2]
        if (proxies.get(parts.scheme) or proxies.get("all")) and not (
            urllib.request.proxy_bypass_environment(host, proxies)
        ):
            return "httpx"
    return "httptools"


TRANSPORTS = {"httpx": HttpxTransport, "aiohttp": AiohttpTransport, "httptools": HttptoolsTransport}

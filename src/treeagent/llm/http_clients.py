"""HTTP transports for the openai engine: ``httpx`` (default) and ``aiohttp``.

Both POST JSON and return ``(status, headers, text)``; transport failures raise one of
``retry_errors`` (connection refused/reset/dropped, timeouts). Measured here on the
loopback test double (64 in flight, ``benchmarks/scheduler.py``): httpx costs ~2.4 ms of
client CPU per call even with its pool split into shards of 8 connections (httpcore
scans its whole pool on every request: one pool of 64 costs ~10 ms), aiohttp ~0.4 ms.
"""

from __future__ import annotations

import asyncio
import functools
import json
import ssl
from collections.abc import Mapping
from typing import Any

import httpx

Reply = tuple[int, Mapping[str, str], str]


@functools.lru_cache(maxsize=1)
def _ssl_context() -> ssl.SSLContext:
    return ssl.create_default_context()  # loaded once, shared by every client


class HttpxTransport:
    """httpx.AsyncClient shards of at most ``pool_size`` connections each."""

    def __init__(self, concurrency: int, timeout: float, connect_timeout: float,
                 pool_size: int = 8) -> None:  # fmt: skip
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
            r = await self._clients[shard].post(url, json=body, headers=headers)
            return r.status_code, r.headers, r.text
        finally:
            self._load[shard] -= 1

    async def aclose(self) -> None:
        for client in self._clients:
            await client.aclose()


class AiohttpTransport:
    """One aiohttp.ClientSession (its connector is cheap per request)."""

    def __init__(self, concurrency: int, timeout: float, connect_timeout: float,
                 pool_size: int = 8) -> None:  # fmt: skip
        import aiohttp

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
            return r.status, r.headers, await r.text()

    async def aclose(self) -> None:
        await self._session.close()


TRANSPORTS = {"httpx": HttpxTransport, "aiohttp": AiohttpTransport}

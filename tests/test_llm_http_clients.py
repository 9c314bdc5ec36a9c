"""HTTP transports of the openai engine against a scripted raw-socket server: how replies
are delimited (length, chunked, close), stale keep-alive connections, malformed replies."""

from __future__ import annotations

import asyncio
import json

import pytest

from helpers import RawServer, chunked, reply
from treeagent.llm.http_clients import TRANSPORTS

CLIENTS = sorted(TRANSPORTS)
BODY = {"choices": [{"message": {"content": "héllo"}}]}


def post_all(client: str, url: str, n: int, headers: dict[str, str] | None = None) -> list:
    async def go() -> list:
        transport = TRANSPORTS[client](4, 2.0, 2.0, 8)
        try:
            return [await transport.post(url, {"i": i}, headers or {}) for i in range(n)]
        finally:
            await transport.aclose()

    return asyncio.run(go())


PAYLOAD = json.dumps(BODY).encode()


@pytest.mark.parametrize("client", CLIENTS)
@pytest.mark.parametrize("framing", ["length", "chunked", "close"])
def test_replies_are_read_whole_however_they_are_delimited(client: str, framing: str) -> None:
    def script(n: int, on_conn: int) -> tuple[bytes, bool]:
        if framing == "length":
            return reply(PAYLOAD, f"Content-Length: {len(PAYLOAD)}", "Retry-After: 3"), False
        if framing == "chunked":
            return reply(chunked(PAYLOAD), "Transfer-Encoding: chunked", "Retry-After: 3"), False
        return reply(PAYLOAD, "Connection: close", "Retry-After: 3"), True  # no length

    server = RawServer(script)
    try:
        replies = post_all(client, server.endpoint, 3)
    finally:
        server.stop()
    for status, headers, text in replies:
        assert status == 200 and json.loads(text) == BODY and headers.get("retry-after") == "3"
    assert server.requests == 3
    # a connection is kept between requests unless the server closes it
    assert server.connections == (3 if framing == "close" else 1)


@pytest.mark.parametrize("client", CLIENTS)
def test_a_keep_alive_connection_the_server_closed_is_replaced(client: str) -> None:
    """The server answers, then closes the connection (as idle-timeouts do) without
    saying so: the next request must reach the server on a new connection."""
    ok = reply(PAYLOAD, f"Content-Length: {len(PAYLOAD)}")
    server = RawServer(lambda n, on_conn: (ok, True))
    try:

        async def go() -> list:
            transport = TRANSPORTS[client](4, 2.0, 2.0, 8)
            try:
                first = await transport.post(server.endpoint, {"i": 0}, {})
                await asyncio.sleep(0.1)  # the server's close lands while the connection idles
                return [first, await transport.post(server.endpoint, {"i": 1}, {})]
            finally:
                await transport.aclose()

        replies = asyncio.run(go())
    finally:
        server.stop()
    assert [r[0] for r in replies] == [200, 200] and server.connections == 2


@pytest.mark.parametrize("client", CLIENTS)
def test_a_malformed_reply_is_a_retryable_transport_error(client: str) -> None:
    server = RawServer(lambda n, on_conn: (b"HTTP/1.1 abc\r\nnot a header\r\n\r\n", True))
    try:

        async def go() -> type[BaseException]:
            transport = TRANSPORTS[client](4, 2.0, 2.0, 8)
            try:
                await transport.post(server.endpoint, {}, {})
            except transport.retry_errors as exc:
                return type(exc)
            finally:
                await transport.aclose()
            raise AssertionError("a malformed reply was accepted")

        asyncio.run(go())
    finally:
        server.stop()


@pytest.mark.parametrize("client", CLIENTS)
def test_request_carries_host_json_body_and_extra_headers(client: str) -> None:
    ok = reply(PAYLOAD, f"Content-Length: {len(PAYLOAD)}")
    server = RawServer(lambda n, on_conn: (ok, False))
    try:
        post_all(client, server.endpoint, 1, {"Authorization": "Bearer k"})
    finally:
        server.stop()
    head = server.heads[0].lower()
    assert head.startswith("post /v1/chat/completions http/1.1\r\n")
    assert f"host: 127.0.0.1:{server.port}\r\n" in head
    assert "content-type: application/json" in head and "authorization: bearer k\r\n" in head


def test_httptools_reconnects_at_once_when_a_reused_connection_is_dead() -> None:
    """A stale connection whose close has not been seen yet: the request fails before
    any byte of the reply, and is sent again on a new connection without an error."""
    ok = reply(PAYLOAD, f"Content-Length: {len(PAYLOAD)}")
    # the server hangs up on the second request of every connection without answering
    server = RawServer(lambda n, on_conn: (ok, False) if on_conn == 1 else (b"", True))
    try:
        replies = post_all("httptools", server.endpoint, 3)
    finally:
        server.stop()
    assert [r[0] for r in replies] == [200] * 3
    assert server.connections == 3 and server.requests == 5  # 2 requests died with a socket


def test_httptools_refuses_a_header_with_a_line_break() -> None:
    ok = reply(PAYLOAD, f"Content-Length: {len(PAYLOAD)}")
    server = RawServer(lambda n, on_conn: (ok, False))
    try:
        with pytest.raises(ValueError, match="line break"):
            post_all("httptools", server.endpoint, 1, {"Authorization": "Bearer k\r\nX-Evil: 1"})
    finally:
        server.stop()
    assert server.requests == 0

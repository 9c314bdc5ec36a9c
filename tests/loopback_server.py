"""A TEST DOUBLE of an OpenAI-compatible server on 127.0.0.1, for fault injection and the
scheduler benchmark. Not a model: it answers ``echo:<last user message>`` after a fixed
latency, unless a fault plan says otherwise for that attempt.

Fault plan: ``faults(prompt, attempt) -> action | None`` where ``attempt`` counts this
prompt's arrivals from 1 and ``action`` is ``"500"``, ``"429:<seconds>"`` (Retry-After),
``"hang"`` (never answers), ``"drop"`` (closes the connection without a reply),
``"400"``, or a malformed 200 reply: ``"notjson"`` (an HTML page), ``"nochoices"`` (JSON
without ``choices``) or ``"nullcontent"`` (a message whose content is null). In a thread: ``with LoopbackOpenAI(...) as server: server.url``. As a process:
``python tests/loopback_server.py --latency 0.05 [--log FILE]`` prints ``PORT <n>``;
``--log`` appends every prompt that arrives (one JSON string per line, flushed).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import ssl
import sys
import threading
from collections.abc import Callable

FaultPlan = Callable[[str, int], str | None]


class LoopbackOpenAI:
    """Test double: asyncio HTTP/1.1 server (keep-alive) speaking ``/v1/chat/completions``."""

    def __init__(
        self, latency: float = 0.0, faults: FaultPlan | None = None, log_path: str | None = None,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.latency = latency
        self.ssl_context = ssl_context  # serve https with it
        self.faults = faults
        self.seen: list[str] = []  # prompts in arrival order (every attempt)
        self.arrivals: collections.Counter[str] = collections.Counter()
        self.bodies: list[dict] = []
        self.auth_headers: list[str] = []
        self.answered = 0
        self.port = 0
        self._log = open(log_path, "a", encoding="utf-8") if log_path else None  # noqa: SIM115
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.base_events.Server | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()

    @property
    def url(self) -> str:
        scheme = "https" if self.ssl_context else "http"
        return f"{scheme}://127.0.0.1:{self.port}/v1"

    # -- HTTP -------------------------------------------------------------------------
    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                line = await reader.readline()
                if not line:
                    return
                method, path = line.decode("latin-1").split(" ")[:2]
                headers: dict[str, str] = {}
                while (h := await reader.readline()) not in (b"\r\n", b"\n", b""):
                    k, _, v = h.decode("latin-1").partition(":")
                    headers[k.strip().lower()] = v.strip()
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                status, extra, payload = await self._route(method, path, headers, body)
                if status == -1:  # drop: close without a reply
                    writer.transport.abort()
                    return
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                head = [f"HTTP/1.1 {status} X", "Content-Type: application/json",
                        f"Content-Length: {len(data)}", "Connection: keep-alive"]  # fmt: skip
                head += [f"{k}: {v}" for k, v in extra.items()]
                writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + data)
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, ValueError):
            return
        except asyncio.CancelledError:  # shutdown: end quietly (a test double)
            return
        finally:
            writer.close()

    async def _route(
        self, method: str, path: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, dict[str, str], dict | bytes]:
        if method == "GET" and path in ("/health", "/v1/models"):
            return 200, {}, {"data": [{"id": "loopback"}]}
        if not (method == "POST" and path.endswith("/chat/completions")):
            return 404, {}, {"error": "not found"}
        request = json.loads(body)
        prompt = request["messages"][-1]["content"]
        self.seen.append(prompt)
        self.arrivals[prompt] += 1
        self.bodies.append(request)
        self.auth_headers.append(headers.get("authorization", ""))
        if self._log is not None:
            self._log.write(json.dumps(prompt) + "\n")
            self._log.flush()
        action = self.faults(prompt, self.arrivals[prompt]) if self.faults else None
        if action == "hang":
            await asyncio.sleep(3600)
        if action == "drop":
            return -1, {}, {}
        if action == "500":
            return 500, {}, {"error": "injected 500"}
        if action == "400":  # a careless server that echoes the request's credentials
            return 400, {}, {"error": "bad request", "auth": headers.get("authorization")}
        if action == "notjson":  # a proxy's error page served with status 200
            return 200, {}, b"<html><body>502 Bad Gateway</body></html>"
        if action == "nochoices":
            return 200, {}, {"object": "error", "message": "overloaded"}
        if action == "nullcontent":
            return 200, {}, {"choices": [{"index": 0, "finish_reason": "stop",
                                          "message": {"role": "assistant", "content": None}}]}
        if action and action.startswith("429"):
            return 429, {"Retry-After": action.partition(":")[2] or "0"}, {"error": "slow down"}
        if self.latency:
            await asyncio.sleep(self.latency)
        self.answered += 1
        text = f"echo:{prompt}"
        return 200, {}, {
            "id": "cmpl-loopback", "object": "chat.completion", "model": request.get("model"),
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": len(prompt.split()), "completion_tokens": len(text.split())},
        }  # fmt: skip

    # -- lifecycle --------------------------------------------------------------------
    async def serve(self, port: int = 0) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", port, backlog=1024,
                                                  ssl=self.ssl_context)
        self.port = self._server.sockets[0].getsockname()[1]

    def start(self) -> LoopbackOpenAI:
        """Serve from a background thread (its own event loop)."""

        def run() -> None:
            self._loop = asyncio.new_event_loop()
            self._loop.run_until_complete(self.serve())
            self._ready.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, daemon=True, name="loopback-openai")
        self._thread.start()
        self._ready.wait(10)
        return self

    def stop(self) -> None:
        loop = self._loop
        if loop is None:
            return

        async def shutdown() -> None:
            assert self._server is not None
            self._server.close()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(shutdown(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(10)
        loop.close()
        self._loop = None
        if self._log is not None:
            self._log.close()

    def __enter__(self) -> LoopbackOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--log", default=None)
    args = parser.parse_args()

    async def run() -> None:
        server = LoopbackOpenAI(args.latency, log_path=args.log)
        await server.serve(args.port)
        print(f"PORT {server.port}", flush=True)
        await asyncio.Event().wait()

    asyncio.run(run())
    sys.exit(0)


if __name__ == "__main__":
    main()

"""A TEST DOUBLE launched in place of ``vllm serve``: not a model. It takes vLLM's
command line (``[MODE ...] serve WEIGHTS --host H --port P [flags ...]``), serves the
loopback OpenAI double (tests/loopback_server.py: ``echo:<prompt>`` replies) on that
address, and starts one worker process, as vLLM's engine core does, in its process
group. Each start appends a JSON line to ``$VLLM_DOUBLE_RECORD`` (pids, port, argv,
``CUDA_VISIBLE_DEVICES``, ``VLLM_API_KEY`` present or not); each prompt that arrives is
appended to ``$VLLM_DOUBLE_RECORD.<port>.prompts``.

Modes before ``serve``: ``--unhealthy`` (``/health`` answers 503 for ever), ``--exit N``
(exits with status N before serving; with ``--after-starts K``, only once K starts of
other doubles are recorded, so that there are started servers for the crash to stop),
``--ignore-sigterm`` (only SIGKILL stops it).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from loopback_server import LoopbackOpenAI  # noqa: E402


class UnhealthyLoopback(LoopbackOpenAI):
    """Test double that never reports healthy."""

    async def _route(self, method, path, headers, body):  # type: ignore[override]
        if path == "/health":
            return 503, {}, {"error": "loading"}
        return await super()._route(method, path, headers, body)


def wait_for_starts(count: int, timeout: float = 60.0) -> None:
    """Wait until ``$VLLM_DOUBLE_RECORD`` holds ``count`` starts (or ``timeout`` s pass)."""
    path = Path(os.environ.get("VLLM_DOUBLE_RECORD", ""))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.is_file() and len(path.read_text().splitlines()) >= count:
            return
        time.sleep(0.05)


def main(argv: list[str]) -> int:
    modes, rest = argv[:argv.index("serve")], argv[argv.index("serve") + 1:]
    flags = dict(zip(rest[1::2], rest[2::2], strict=False))
    if "--exit" in modes:
        if "--after-starts" in modes:
            wait_for_starts(int(modes[modes.index("--after-starts") + 1]))
        print("double: exiting at start", flush=True)
        return int(modes[modes.index("--exit") + 1])
    worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
    record = os.environ.get("VLLM_DOUBLE_RECORD")
    port = int(flags["--port"])
    if record:
        with open(record, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"pid": os.getpid(), "worker": worker.pid, "port": port,
                                 "argv": argv, "cuda": os.environ.get("CUDA_VISIBLE_DEVICES"),
                                 "api_key": "VLLM_API_KEY" in os.environ}) + "\n")

    def on_term(signum, frame):  # reap the worker (vLLM stops its engine core), then go
        worker.terminate()
        worker.wait()
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, signal.SIG_IGN if "--ignore-sigterm" in modes else on_term)
    kind = UnhealthyLoopback if "--unhealthy" in modes else LoopbackOpenAI
    server = kind(log_path=f"{record}.{port}.prompts" if record else None)

    async def run() -> None:
        await server.serve(port)
        print(f"double: serving {rest[0]} on port {port}", flush=True)
        await asyncio.Event().wait()

    asyncio.run(run())
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

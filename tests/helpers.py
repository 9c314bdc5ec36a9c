"""Shared test helpers: the source mirror, a character-level tokenizer test double, strict
value equality, stopping a process group a test started, a scripted raw-bytes HTTP server,
a temporary git + DVC copy of the pipeline, and a ``prefect server start`` of a test's own."""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from loopback_server import LoopbackOpenAI

ROOT = Path(__file__).resolve().parent.parent  # the checkout
BIN = Path(sys.executable).parent  # this environment's python, dvc and prefect
SOURCES = (Path(os.environ["TREEAGENT_MIRROR"])  # a mirror of the real sources, if any
           if os.environ.get("TREEAGENT_MIRROR") else None)


def installed_or_skip(name: str) -> None:
    """Skip the calling test module unless ``name`` is installed, without importing it
    (``pytest.importorskip`` would: 2.4 s for great_expectations in every worker that
    collects a module whose tests only run it in subprocesses)."""
    import importlib.util

    import pytest

    if importlib.util.find_spec(name) is None:
        pytest.skip(f"{name} is not installed", allow_module_level=True)


class CharTokenizer:
    """Test double: one token per character, so lengths are additive (paper 3.1 model)."""

    name = "chars"
    digit_safe = False

    def encode(self, text: str) -> list[int]:
        return [ord(c) for c in text]

    def count(self, text: str) -> int:
        return len(text)

    def count_batch(self, texts: list[str]) -> list[int]:
        return [len(t) for t in texts]

    def token_starts(self, text: str) -> np.ndarray:
        return np.arange(len(text), dtype=np.int64)

    def truncate(self, text: str, n: int) -> str:
        return text[:n]


def same(a: object, b: object) -> bool:
    """Strict equality: types (bool/int/float), zero signs, NaN == NaN, key order."""
    if isinstance(a, dict):
        return (isinstance(b, dict) and list(a) == list(b)
                and all(same(a[k], b[k]) for k in a))
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(same, a, b))
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        if math.isnan(a):
            return math.isnan(b)
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    return a == b


def stop_group(proc: subprocess.Popen) -> None:
    """SIGTERM the process group of ``proc`` (started with ``start_new_session``), SIGKILL
    it after 20 s, and reap ``proc``."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()



# -- a scripted raw-bytes HTTP server --------------------------------------------------
# A script gets (request number on this server, request number on this connection) and
# returns the raw bytes to send back, and whether to close the connection afterwards.
Script = Callable[[int, int], tuple[bytes, bool]]


class RawServer(LoopbackOpenAI):
    """A TEST DOUBLE speaking raw bytes (the loopback server's thread and lifecycle, its
    own handler), over TLS given ``ssl_context``: reads one HTTP request (Content-Length
    body), records its head, writes whatever the script says. Started on construction."""

    def __init__(self, script: Script, ssl_context: ssl.SSLContext | None = None) -> None:
        super().__init__(ssl_context=ssl_context)
        self.script = script
        self.requests = 0
        self.connections = 0
        self.heads: list[str] = []
        self.start()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        on_conn = 0
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                self.heads.append(head.decode("latin-1"))
                length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                              if line.lower().startswith(b"content-length"))  # fmt: skip
                await reader.readexactly(length)
                self.requests += 1
                on_conn += 1
                data, close = self.script(self.requests, on_conn)
                writer.write(data)
                await writer.drain()
                if close:
                    break
        except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError,
                asyncio.CancelledError):
            pass
        finally:
            writer.close()

    @property
    def endpoint(self) -> str:
        return f"{self.url}/chat/completions"


def reply(payload: bytes, *headers: str, status: str = "200 OK") -> bytes:
    """One raw HTTP/1.1 response: status line, ``headers``, ``payload``."""
    head = "".join(f"{h}\r\n" for h in headers)
    return f"HTTP/1.1 {status}\r\n{head}\r\n".encode() + payload


def chunked(payload: bytes, size: int = 7) -> bytes:
    """``payload`` in chunked transfer encoding, ``size`` bytes a chunk."""
    parts = [payload[i : i + size] for i in range(0, len(payload), size)]
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n"

# -- the pipeline in a temporary git + DVC project --------------------------------------
PIPELINE_CODE = ("flows", "src/treeagent", "dvc.yaml", ".dvcignore")
PROJECT_GITIGNORE = ("/raw/\n/validated/\n/runs/\n/reports/\n/.cache/\n/.prefect-home/\n"
                     "__pycache__/\n")


def pipeline_env(home: Path, drop: tuple[str, ...] = ("PREFECT_API",)) -> dict[str, str]:
    """This process's environment without the variables starting with ``drop``, for the
    pipeline's commands: this environment's binaries first, Prefect's home under ``home``,
    no analytics, a git identity."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env.update({"PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}", "DVC_NO_ANALYTICS": "1",
                "PREFECT_HOME": str(home / ".prefect-home"), "DO_NOT_TRACK": "1",
                "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "PYTHONUNBUFFERED": "1",
                "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
                "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"})
    return env


def copy_code(dest: Path, names: tuple[str, ...] = PIPELINE_CODE) -> None:
    """Copy the checkout's ``names`` (folders without bytecode) to ``dest``, replacing
    what is there."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in names:
        if (ROOT / name).is_dir():
            shutil.rmtree(dest / name, ignore_errors=True)
            shutil.copytree(ROOT / name, dest / name, ignore=ignore)
        else:
            shutil.copy(ROOT / name, dest / name)


class Project:
    """A temporary project holding a copy of the pipeline's code: its commands run there
    with :func:`pipeline_env`, output captured."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.env = pipeline_env(path)

    @classmethod
    def create(cls, path: Path, params: str) -> Project:
        """The pipeline's code and ``params`` (params.yaml's text) in ``path``, with a
        .gitignore for what the pipeline writes; :meth:`init` makes it a repository."""
        path.mkdir(parents=True, exist_ok=True)
        copy_code(path)
        (path / "params.yaml").write_text(params)
        (path / ".gitignore").write_text(PROJECT_GITIGNORE)
        return cls(path)

    def init(self, message: str) -> None:
        """``git init`` + ``dvc init`` (analytics off), everything committed."""
        self.run("git", "init", "-q")
        self.dvc("init", "-q")
        self.dvc("config", "core.analytics", "false")
        self.run("git", "add", "-A")
        self.run("git", "commit", "-qm", message)

    def run(self, *cmd: str, check: bool = True, timeout: float = 1200
            ) -> subprocess.CompletedProcess[str]:
        """Run ``cmd`` here; past ``timeout`` s (or on any interruption) its whole process
        group is killed, so no stage it started is left holding DVC's lock."""
        child = subprocess.Popen(cmd, cwd=self.path, env=self.env, text=True,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 start_new_session=True)
        try:
            out, _ = child.communicate(timeout=timeout)
        except BaseException:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, signal.SIGKILL)
            child.communicate()
            raise
        proc = subprocess.CompletedProcess(cmd, child.returncode, out)
        if check and proc.returncode:
            raise AssertionError(f"{' '.join(cmd)} exited {proc.returncode}:\n"
                                 f"{proc.stdout[-6000:]}")
        return proc

    def dvc(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.run(str(BIN / "dvc"), *args, check=check)

    def benchmark(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.run(str(BIN / "python"), "flows/benchmark.py", *args, check=check)

    def json(self, rel: str) -> Any:
        return json.loads((self.path / rel).read_text())


def ran(output: str) -> set[str]:
    """Stages DVC ran, by its output."""
    return set(re.findall(r"Running stage '([^']+)'", output))


# -- a Prefect server of the test's own ---------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def prefect_healthy(api: str) -> bool:
    """Whether the API at ``api`` (plain HTTP on the loopback) answers ``/health``. Polled
    every 0.2 s while a server starts: urllib, as an ``httpx.get`` would build a client
    and load the CA bundle each time (~60 ms of CPU a poll)."""
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(f"{api}/health", timeout=2) as reply:
            return reply.status == 200
    except (urllib.error.URLError, OSError):
        return False


#: Prefect server services a flow's runs do not need: what schedules, triggers, expires,
#: cleans up or repossesses runs (the event persister and the task-run recorder stay on:
#: they record the runs). Each one polls the database on its loop while the server runs.
IDLE_SERVICES = {f"PREFECT_SERVER_SERVICES_{name}_ENABLED": "false" for name in (
    "SCHEDULER", "LATE_RUNS", "FOREMAN", "PAUSE_EXPIRATIONS", "CANCELLATION_CLEANUP",
    "REPOSSESSOR", "TRIGGERS", "CLEANUP_RECONCILER")} | {
    "PREFECT_SERVER_SERVICES_DB_VACUUM_ENABLED": "[]"}


def migrated_prefect_db(folder: Path, timeout: float = 300) -> Path:
    """A Prefect database migrated once for a whole test run, in ``folder`` (one that every
    process of the run sees; a lock file there makes the first one migrate it). Each
    server and temporary server of the run starts on a copy (:func:`seed_prefect_home`):
    migrating a fresh database is ~5 of the ~8 CPU s a server takes to start."""
    import fcntl

    db = folder / "prefect-migrated" / "prefect.db"
    with (folder / "prefect-migrated.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if db.exists():
            return db
        work = folder / "prefect-migrating"
        shutil.rmtree(work, ignore_errors=True)
        env = pipeline_env(work, drop=("PREFECT_",))
        home = Path(env["PREFECT_HOME"])
        home.mkdir(parents=True)
        done = subprocess.run([str(BIN / "prefect"), "server", "database", "upgrade", "-y"],
                              env=env, text=True, capture_output=True, timeout=timeout)
        if done.returncode or not (home / "prefect.db").exists():
            raise AssertionError("prefect server database upgrade failed:\n"
                                 f"{(done.stdout + done.stderr)[-3000:]}")
        os.replace(home, db.parent)  # whole: a run that stopped midway leaves no database
        shutil.rmtree(work)
        return db


def seed_prefect_home(home: Path, db: Path) -> None:
    """Put a copy of the migrated database ``db`` where Prefect keeps its own (its default
    SQLite file under ``PREFECT_HOME``), so that a server started with that home does not
    migrate a fresh one."""
    home.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(db, home / "prefect.db")


SHARED_SERVER = "prefect-api.json"
"""The file naming the run's shared server (:func:`shared_prefect_server`)."""


def _start_prefect_server(env: dict[str, str], log: Path, timeout: float,
                          owner: int | None = None, db: Path | None = None
                          ) -> tuple[subprocess.Popen, str]:
    """``prefect server start`` on a free loopback port (UI off, in its own process group,
    output to ``log``) and its API URL once ``/health`` answers (the group stopped if it
    never does). With ``owner``, a watchdog in the group stops the server once process
    ``owner`` is gone; with ``db`` (:func:`migrated_prefect_db`), it starts on a copy of
    that database in ``env``'s ``PREFECT_HOME``."""
    if db is not None:
        seed_prefect_home(Path(env["PREFECT_HOME"]), db)
    port = free_port()
    api = f"http://127.0.0.1:{port}/api"
    cmd = [str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(port)]
    if owner is not None:
        cmd = ["bash", "-c", '"$@" & s=$!; '
               f"while kill -0 {owner} 2>/dev/null && kill -0 $s 2>/dev/null; "
               "do sleep 1; done; kill $s 2>/dev/null; wait $s", "watchdog", *cmd]
    proc = subprocess.Popen(cmd, env={**env, "PREFECT_UI_ENABLED": "false"},
                            stdout=log.open("w"), stderr=subprocess.STDOUT,
                            start_new_session=True)
    deadline = time.monotonic() + timeout
    while not prefect_healthy(api):
        if proc.poll() is not None or time.monotonic() > deadline:
            stop_group(proc)
            raise AssertionError(f"prefect server start: not healthy\n{log.read_text()[-3000:]}")
        time.sleep(0.2)
    return proc, api


def shared_prefect_server(folder: Path, env: dict[str, str], owner: int,
                          timeout: float = 240, db: Path | None = None) -> str:
    """The API URL of one ``prefect server start`` for every process of a test run that
    asks for it in ``folder`` (a folder they all see; a lock file there makes the first
    one start it and write its URL to :data:`SHARED_SERVER`). It runs in its own process
    group until :func:`stop_shared_prefect_server`, and a watchdog in that group stops
    it once process ``owner`` (the run's controller) is gone. ``db``: as for
    :func:`prefect_server`."""
    import fcntl

    info = folder / SHARED_SERVER
    with (folder / "prefect-api.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if info.exists():
            return json.loads(info.read_text())["api"]
        proc, api = _start_prefect_server(env, folder / "prefect-api.log", timeout, owner, db)
        info.write_text(json.dumps({"api": api, "group": proc.pid}))
        return api


def stop_shared_prefect_server(folder: Path) -> None:
    """Stop the server :func:`shared_prefect_server` started in ``folder``, if any:
    SIGTERM to its process group, SIGKILL after 20 s."""
    info = folder / SHARED_SERVER
    if not info.exists():
        return
    group = int(json.loads(info.read_text())["group"])
    info.unlink()
    for sig, wait in ((signal.SIGTERM, 20.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(group, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if not group_running(group):
                return
            time.sleep(0.1)


def group_running(group: int) -> bool:
    """Whether a process of process group ``group`` still runs. A process that has exited
    but is not yet reaped by its parent (a zombie: the group's leader, whose parent is
    the xdist worker that started it) still answers ``killpg(group, 0)``, which would
    make a stop wait out its whole grace period, so ``/proc`` is read where there is one."""
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    proc = Path("/proc")
    if not (proc / "self" / "stat").exists():
        return True
    for stat in proc.glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        if fields[2] == str(group) and fields[0] != "Z":  # state, ppid, pgrp, ...
            return True
    return False


@contextmanager
def prefect_server(env: dict[str, str], log: Path, timeout: float = 240,
                   db: Path | None = None) -> Iterator[str]:
    """``prefect server start`` on a free loopback port (UI off, in its own process group,
    output to ``log``); yields its API URL once ``/health`` answers, and stops the group
    afterwards. With ``db`` (:func:`migrated_prefect_db`), it starts on a copy of that
    database instead of migrating a fresh one."""
    proc, api = _start_prefect_server(env, log, timeout, db=db)
    try:
        yield api
    finally:
        stop_group(proc)

"""The durable call cache and journal.

Every engine reply is committed to SQLite (WAL) *before* the scheduler hands it to its
workflow. ``synchronous="NORMAL"`` (default): a commit is in the operating system's hands
when :meth:`CallCache.record` returns, so it survives the process being killed (``kill
-9``, OOM, a crash); only a power loss or OS crash can roll back the last commits, and
their calls are then simply asked again. ``synchronous="FULL"``: each commit also waits
for the disk (fsync; ~0.3 ms here, far more on network file systems).

The key is a sha256 over (engine name, model id, model revision, rendered prompt =
canonical JSON of messages + tools, sampling parameters), so

* a rerun reuses every answered call, and a run killed with ``kill -9`` resumes with no
  answered call repeated or lost (a call whose reply was not yet committed was never
  handed to its workflow, so asking again is not a repeat);
* a new model revision changes the key of exactly that model's calls.

Unavailable replies (retries exhausted, paper C.4) are journaled for the run summary but
are not cached as answers: a rerun asks again. One :meth:`record` call is one
transaction (one fsync under ``FULL``).

Many processes and hosts: each shard of a sharded evaluation writes its own file
(:func:`shard_path`; one writer per file, so no writer ever waits on another host's
lock) and reads the run's main cache beneath it (``base=``); when the shards are done,
:meth:`CallCache.merge` folds each shard file into the main cache in one transaction
and the file is removed. A shard killed midway leaves its file behind: its rerun opens
the same file and asks again only the calls whose replies were not committed.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from treeagent.llm.base import Request, Response

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    engine TEXT NOT NULL, model TEXT NOT NULL, revision TEXT NOT NULL,
    text TEXT NOT NULL, tool_calls TEXT NOT NULL,
    input_tokens INTEGER NOT NULL, output_tokens INTEGER NOT NULL,
    latency REAL NOT NULL, created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS journal (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL, program TEXT NOT NULL, key TEXT NOT NULL,
    prompt_hash TEXT NOT NULL, kind TEXT NOT NULL,
    engine TEXT NOT NULL, model TEXT NOT NULL, revision TEXT NOT NULL,
    available INTEGER NOT NULL, error TEXT,
    input_tokens INTEGER NOT NULL, output_tokens INTEGER NOT NULL,
    latency REAL NOT NULL, created REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS journal_run ON journal (run_id);
"""


def _canonical(obj: object) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def rendered_prompt(request: Request) -> list:
    """The prompt as cached: messages, tool schemas and chat-template arguments (when
    any: keys of requests without them are unchanged; ``kind`` is not sent)."""
    prompt = [[[m.role, m.content] for m in request.messages], list(request.tools)]
    if request.template_kwargs:
        prompt.append(dict(request.template_kwargs))
    return prompt


def prompt_hash(request: Request) -> str:
    """sha256 of the rendered prompt (traces name prompts by this hash)."""
    return hashlib.sha256(_canonical(rendered_prompt(request))).hexdigest()


def call_key(engine: str, model: str, revision: str, request: Request) -> str:
    """The cache key: sha256 over engine, model id, revision, prompt and sampling."""
    s = request.sampling  # the fields of Sampling, as dataclasses.asdict would give them
    sampling = {"max_tokens": s.max_tokens, "temperature": s.temperature, "top_p": s.top_p,
                "seed": s.seed, "stop": list(s.stop)}
    payload = [engine, model, revision, rendered_prompt(request), sampling]
    return hashlib.sha256(_canonical(payload)).hexdigest()


def engine_key(engine: object, request: Request) -> str:
    """:func:`call_key` for an engine's name, model and revision."""
    return call_key(engine.name, engine.model, engine.revision, request)  # type: ignore[attr-defined]


@dataclass(frozen=True, slots=True)
class Identity:
    """Which engine and weights answered: (engine name, model id, model revision)."""

    engine: str
    model: str
    revision: str

    @classmethod
    def of(cls, engine: object) -> Identity:
        return cls(engine.name, engine.model, engine.revision)  # type: ignore[attr-defined]


@dataclass(frozen=True, slots=True)
class JournalEntry:
    """One engine reply to record: the call's key, who asked, and the reply."""

    key: str
    program: str
    request: Request
    response: Response
    identity: Identity
    prompt_hash: str = ""


def cacheable(revision: str) -> bool:
    """Can a call of weights at ``revision`` be answered from the cache? Not when the
    revision is unknown (``unversioned``: a hub label, a served name without a lock
    entry): its key would stay the same when the weights change."""
    from treeagent.llm.models import UNVERSIONED

    return revision != UNVERSIONED


class CacheError(ValueError):
    """A cache path that cannot hold the call cache (a folder, not SQLite, unwritable)."""


class CallCache:
    """SQLite-backed cache + journal. Thread-safe: one writer connection (used by
    :meth:`record`, usually from the scheduler's writer thread) and one reader."""

    def __init__(self, path: str | Path, run_id: str = "", synchronous: str = "NORMAL",
                 base: str | Path | None = None) -> None:
        if synchronous not in ("NORMAL", "FULL"):
            raise ValueError(f"synchronous must be NORMAL or FULL, not {synchronous!r}")
        self.synchronous = synchronous
        self.path = Path(path)
        self.run_id = run_id or f"{time.strftime('%Y%m%dT%H%M%S')}-{id(self):x}"
        self._write_lock = threading.Lock()
        self._read_lock = threading.Lock()
        try:
            if self.path.is_dir():
                raise CacheError(f"{self.path}: is a folder, not a cache file")
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._writer = self._connect()
            self._writer.executescript(_SCHEMA)
            self._check_tables()
            self._reader = self._connect()
            self._base = None  # answers beneath this file's (read only): the main cache
            if base is not None and Path(base).is_file():
                self._base = sqlite3.connect(Path(base), isolation_level=None,
                                             check_same_thread=False)
                self._base.execute("PRAGMA busy_timeout=60000")
        except sqlite3.DatabaseError as exc:  # not SQLite, read-only, locked, corrupt
            raise CacheError(f"{self.path}: cannot be used as a call cache ({exc})") from None
        except OSError as exc:
            raise CacheError(f"{self.path}: {exc.strerror or exc}") from None

    def _check_tables(self) -> None:
        """An SQLite file of another program (same table names, other columns) is refused."""
        for table, needed in (("responses", {"key", "text", "tool_calls"}),
                              ("journal", {"run_id", "program", "available", "error"})):
            cols = {row[1] for row in self._writer.execute(f"PRAGMA table_info({table})")}
            if not needed <= cols:
                raise CacheError(f"{self.path}: table {table!r} is not a call cache's")

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(f"PRAGMA synchronous={self.synchronous}")
        conn.execute("PRAGMA busy_timeout=60000")
        return conn

    def get_many(self, keys: Sequence[str]) -> dict[str, Response]:
        """Cached answers for those of ``keys`` that have one (``cached=True``): this
        file's, then the main cache's beneath it for the keys still missing."""
        found: dict[str, Response] = {}
        unique = list(dict.fromkeys(keys))
        with self._read_lock:
            for i in range(0, len(unique), 500):
                part = unique[i : i + 500]
                found.update(_answers(self._reader, part))
                if self._base is not None and len(found) < len(unique):
                    found.update(_answers(self._base, [k for k in part if k not in found]))
        return found

    def get(self, key: str) -> Response | None:
        return self.get_many([key]).get(key)

    def record(self, entries: Iterable[JournalEntry], run_id: str | None = None) -> None:
        """Journal every entry (under ``run_id``, default this cache's) and cache the
        available ones, in one durable transaction."""
        now = time.time()
        run = run_id or self.run_id
        journal_rows = []
        answer_rows = []
        for e in entries:
            r, who = e.response, e.identity
            journal_rows.append(
                (run, e.program, e.key, e.prompt_hash, e.request.kind, who.engine,
                 who.model, who.revision, int(r.available), r.error, r.input_tokens,
                 r.output_tokens, r.latency, now)
            )  # fmt: skip
            if r.available and cacheable(who.revision):  # unversioned: journaled only
                answer_rows.append(
                    (e.key, who.engine, who.model, who.revision, r.text,
                     json.dumps(r.tool_calls), r.input_tokens, r.output_tokens, r.latency, now)
                )  # fmt: skip
        if not journal_rows:
            return
        with self._write_lock:
            conn = self._writer
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.executemany(
                    "INSERT INTO journal (run_id, program, key, prompt_hash, kind, engine, "
                    "model, revision, available, error, input_tokens, output_tokens, latency, "
                    "created) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    journal_rows,
                )
                conn.executemany(
                    "INSERT OR IGNORE INTO responses VALUES (?,?,?,?,?,?,?,?,?,?)", answer_rows
                )
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

    def merge(self, other: str | Path, remove: bool = True) -> int:
        """Fold the cache file ``other`` (a shard's) into this one in one transaction:
        its answers (kept where this cache has none for a key) and its journal rows, in
        their order; then delete ``other`` (and its WAL files) when ``remove``. Returns
        the journal rows moved. A file that is not a call cache raises
        :class:`CacheError` naming it."""
        other = Path(other)
        if not other.is_file():
            return 0
        check = CallCache(other)  # refuses a file that is not a call cache, naming it
        check.close()
        cols = ("run_id, program, key, prompt_hash, kind, engine, model, revision, "
                "available, error, input_tokens, output_tokens, latency, created")
        with self._write_lock:
            conn = self._writer
            conn.execute("ATTACH DATABASE ? AS shard", (str(other),))
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    conn.execute("INSERT OR IGNORE INTO responses SELECT * FROM shard.responses")
                    moved = conn.execute(
                        f"INSERT INTO journal ({cols}) SELECT {cols} FROM shard.journal "
                        "ORDER BY id").rowcount
                    conn.execute("COMMIT")
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
            finally:
                conn.execute("DETACH DATABASE shard")
        if remove:
            for suffix in ("", "-wal", "-shm"):
                Path(f"{other}{suffix}").unlink(missing_ok=True)
        return moved

    def journal(self, run_id: str | None = None) -> list[dict]:
        """Journal rows (all runs, or one run), oldest first."""
        sql = "SELECT * FROM journal" + (" WHERE run_id = ?" if run_id else "") + " ORDER BY id"
        with self._read_lock:
            cur = self._reader.execute(sql, (run_id,) if run_id else ())
            names = [d[0] for d in cur.description]
            return [dict(zip(names, row)) for row in cur.fetchall()]

    def summary(self, run_id: str | None = None) -> dict[str, int | float]:
        """Engine calls, unavailable calls, tokens in/out and model seconds of a run."""
        sql = (
            "SELECT COUNT(*), COALESCE(SUM(1 - available), 0), COALESCE(SUM(input_tokens), 0), "
            "COALESCE(SUM(output_tokens), 0), COALESCE(SUM(latency), 0) FROM journal"
        )
        with self._read_lock:
            row = self._reader.execute(
                sql + (" WHERE run_id = ?" if run_id else ""), (run_id,) if run_id else ()
            ).fetchone()
        keys = ("calls", "unavailable", "input_tokens", "output_tokens", "latency_seconds")
        return dict(zip(keys, row))

    def __len__(self) -> int:
        with self._read_lock:
            return self._reader.execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    def close(self) -> None:
        with self._write_lock, self._read_lock:
            self._writer.close()
            self._reader.close()
            if self._base is not None:
                self._base.close()

    def __enter__(self) -> CallCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _answers(conn: sqlite3.Connection, keys: Sequence[str]) -> dict[str, Response]:
    """The answers ``conn``'s ``responses`` table holds for ``keys`` (at most 500)."""
    if not keys:
        return {}
    rows = conn.execute(
        "SELECT key, text, tool_calls, input_tokens, output_tokens, latency "
        f"FROM responses WHERE key IN ({','.join('?' * len(keys))})", list(keys)).fetchall()
    return {key: Response(text, n_in, n_out, latency, None, True, json.loads(tools))
            for key, text, tools, n_in, n_out, latency in rows}


def shard_folder(cache: str | Path, run: str) -> Path:
    """The folder of ``run``'s shard files beside the main cache ``cache``:
    ``<cache stem>.shards/<run>/``."""
    cache = Path(cache)
    return cache.parent / f"{cache.stem}.shards" / run


def shard_path(cache: str | Path, run: str, shard: int, shards: int) -> Path:
    """The cache file of one shard of ``run`` beside the main cache ``cache``:
    ``<cache stem>.shards/<run>/<shard>-of-<shards>.sqlite`` (the same path on every
    rerun, so a killed shard resumes from its own file)."""
    return shard_folder(cache, run) / f"{shard}-of-{shards}.sqlite"

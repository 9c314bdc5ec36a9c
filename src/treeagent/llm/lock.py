"""The models lock: each evaluated agent's model resolved to an immutable revision.

``treeagent models lock`` (DVC stage ``models``, always run) writes ``models.lock``, one
entry per agent of ``evaluate.agents``:

* local weights (``smollm2``, a folder, a ``.gguf`` file): the content hash of the
  weight files (:func:`treeagent.llm.models.model_revision`);
* a hub name: the commit of the requested revision (``agents.<a>.revision``; ``auto``
  asks for ``main``), looked up with ``huggingface_hub`` when the hub can be reached; a
  pinned 40-hex commit is kept as is offline, and a moving label (``main``, a tag) that
  cannot be looked up is refused unless ``allow_moving`` (the entry then says
  ``moving: true`` and its calls bypass the call cache);
* a served endpoint (the ``openai`` engine with ``base_urls``, ``serve.enabled`` false):
  the model id the server reports (``/v1/models``) and a fingerprint, the sha256 of its
  greedy replies to :data:`PROBES` (temperature 0, :data:`PROBE_TOKENS` tokens each).

Each ``evaluate@<agent>-<method>`` stage reads only its agent's entry (``params:
models.lock: [<agent>]``), so a changed model reruns exactly that agent's stages and an
unchanged one writes the same bytes (no rerun). :func:`locked_options` hands the
resolved revision to the engine: the revision it loads (``from_pretrained(revision=)``,
``vllm serve --revision``) and the one in every cache key (docs/pipeline.md, "Rerun when
a model changes").
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from treeagent.llm.models import UNVERSIONED, is_commit, model_revision, resolve_model

if TYPE_CHECKING:
    from treeagent.pipeline.config import Params

LOCK_FILE = "models.lock"
LOCK_ENV = "TREEAGENT_MODELS_LOCK"
"""Environment variable naming the lock file an evaluation reads (default ``models.lock``
in the working directory, where DVC runs the stages)."""
PROBES = (
    "Repeat exactly: the quick brown fox jumps over the lazy dog.",
    "What is 17 + 25? Answer with the number only.",
    'Write the JSON object {"a": [1, 2, 3]} and nothing else.',
)
"""Fixed prompts whose greedy replies fingerprint a served model."""
PROBE_TOKENS = 16
_HEADER = ("# models.lock: each evaluated agent's model at an immutable revision, written by\n"
           "# `treeagent models lock` (DVC stage `models`); docs/pipeline.md \"Rerun when a\n"
           "# model changes\". Each evaluate@<agent>-* stage reads only its agent's entry.\n")


class LockError(ValueError):
    """A model that cannot be locked, or a lock file that cannot be read (one line)."""


@dataclass(frozen=True)
class LockEntry:
    """One agent's locked model. ``source``: ``local``, ``hub`` or ``served``."""

    model: str  # agents.<a>.model as params name it (the key an evaluation matches)
    model_id: str  # the id recorded in cache keys (a served model: what the server reports)
    revision: str  # content hash, hub commit, or ``served-<fingerprint[:16]>``
    source: str
    requested: str | None = None  # a hub name's requested revision (label or commit)
    fingerprint: str | None = None  # a served model's probe fingerprint (sha256)
    moving: bool = False  # a hub label locked as is (--allow-moving): not immutable

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v not in (None, False)}

    @property
    def cache_revision(self) -> str:
        """The revision in cache keys: never a moving label."""
        return UNVERSIONED if self.moving else self.revision


HubLookup = Callable[[str, str], "str | None"]
"""``lookup(repo_id, revision) -> commit`` (None: the hub cannot be reached)."""
Prober = Callable[[str, str, Mapping[str, Any]], "tuple[str, str]"]
"""``probe(base_url, model, engine options) -> (reported model id, fingerprint)``."""


def hub_commit(repo_id: str, revision: str) -> str | None:
    """The commit ``revision`` of ``repo_id`` points at now, or None when the hub cannot
    be reached (offline, ``HF_HUB_OFFLINE``, ``huggingface_hub`` not installed)."""
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on"):
        return None
    try:
        from huggingface_hub import HfApi
    except ImportError:
        return None
    try:
        sha = HfApi().model_info(repo_id, revision=revision, timeout=20).sha
    except Exception:  # noqa: BLE001 (network, offline mode, unknown repo: not resolvable)
        return None
    return sha if is_commit(sha) else None


def served_fingerprint(base_url: str, model: str, options: Mapping[str, Any]) -> tuple[str, str]:
    """``(model id, fingerprint)`` of the model served at ``base_url``: the id ``/models``
    reports (``model`` when listed, else the only one), and the sha256 over that id and
    the greedy replies to :data:`PROBES`."""
    import httpx

    from treeagent.llm.base import Message, Request, Sampling
    from treeagent.llm.openai_engine import OpenAIEngine

    key = os.environ.get(str(options.get("api_key_env", "OPENAI_API_KEY")))
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    try:
        reply = httpx.get(base_url.rstrip("/") + "/models", headers=headers, timeout=20,
                          trust_env=False)
        reply.raise_for_status()
        ids = [m["id"] for m in reply.json()["data"]]
    except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
        raise LockError(f"{base_url}/models: no model list ({type(exc).__name__})") from None
    if model in ids:
        served = model
    elif len(ids) == 1:
        served = ids[0]
    else:
        raise LockError(f"{base_url}/models lists {ids}, not {model!r}")
    engine = OpenAIEngine(served, base_urls=[base_url], revision="probe", max_retries=2,
                          api_key_env=str(options.get("api_key_env", "OPENAI_API_KEY")))
    sampling = Sampling(max_tokens=PROBE_TOKENS, temperature=0.0)
    requests = [Request((Message("user", p),), sampling) for p in PROBES]
    replies = asyncio.run(engine.generate(requests))
    if not all(r.available for r in replies):
        raise LockError(f"{base_url}: a probe got no reply ({replies[0].error or 'unavailable'})")
    payload = json.dumps([served, [r.text for r in replies]], ensure_ascii=False)
    return served, hashlib.sha256(payload.encode()).hexdigest()


def resolve_entry(params: Params, agent: str, *, allow_moving: bool = False,
                  lookup: HubLookup = hub_commit, probe: Prober = served_fingerprint
                  ) -> LockEntry:
    """``agent``'s model at an immutable revision (the module docstring); LockError
    names the params key when it cannot be resolved."""
    from treeagent.llm.models import ModelError

    key = f"agents.{agent}"
    spec = str(params[f"{key}.model"])
    name, options = params.engine_spec(agent)
    if name == "openai" and not params["serve.enabled"] and options.get("base_urls"):
        urls = options["base_urls"]
        first = urls if isinstance(urls, str) else urls[0]
        served, fingerprint = probe(first, spec, options)
        return LockEntry(spec, served, f"served-{fingerprint[:16]}", "served",
                         fingerprint=fingerprint)
    try:
        source = resolve_model(spec)
    except ModelError as exc:
        raise LockError(f"{key}.model: {exc}") from None
    if source.local:
        return LockEntry(spec, source.model_id, model_revision(source), "local")
    pinned = str(params[f"{key}.revision"])
    requested = "main" if pinned == "auto" else pinned
    commit = lookup(spec, requested)
    if commit is None and is_commit(requested):
        commit = requested.lower()
    if commit is not None:
        return LockEntry(spec, spec, commit, "hub", requested=requested)
    if not allow_moving:
        raise LockError(f"{key}.revision: {requested!r} is a moving label and the hub cannot "
                        f"be reached to look up its commit: pin a 40-hex commit, or pass "
                        f"--allow-moving (its calls then bypass the call cache)")
    return LockEntry(spec, spec, requested, "hub", requested=requested, moving=True)


def lock_entries(params: Params, **options: Any) -> dict[str, LockEntry]:
    """:func:`resolve_entry` for each agent of ``evaluate.agents``, in that order."""
    return {agent: resolve_entry(params, agent, **options) for agent in params.agents}


def render(entries: Mapping[str, LockEntry]) -> str:
    """The lock file's text: the same entries give the same bytes."""
    body = {agent: entry.as_dict() for agent, entry in entries.items()}
    return _HEADER + yaml.safe_dump(body, sort_keys=True, default_flow_style=False)


def write_lock(path: str | os.PathLike[str], entries: Mapping[str, LockEntry]) -> bool:
    """Write the lock (atomically); True when its bytes changed."""
    path = Path(path)
    text = render(entries)
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return False
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
    return True


def read_lock(path: str | os.PathLike[str]) -> dict[str, LockEntry]:
    """The entries of a lock file; LockError names the file and the entry at fault."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise LockError(f"{path}: cannot be read as a models lock ({type(exc).__name__})") \
            from None
    if not isinstance(data, dict):
        raise LockError(f"{path}: expected a mapping of agent -> entry")
    fields = set(LockEntry.__dataclass_fields__)
    out = {}
    for agent, raw in data.items():
        if not (isinstance(raw, dict) and {"model", "model_id", "revision", "source"} <= set(raw)
                and set(raw) <= fields):
            raise LockError(f"{path}: entry {agent!r} is not a lock entry (keys: "
                            f"model, model_id, revision, source[, requested, fingerprint, moving])")
        out[str(agent)] = LockEntry(**{k: (v if k == "moving" else str(v))
                                       for k, v in raw.items()})
    return out


def locked_entry(params: Params, agent: str, path: str | os.PathLike[str] | None = None,
                 *, strict: bool = True) -> LockEntry | None:
    """``agent``'s entry in the lock (``$TREEAGENT_MODELS_LOCK``, else ``models.lock``),
    None when there is no lock file or no entry for it. An entry for another model than
    params name (a stale lock: run ``treeagent models lock``) raises LockError, or is
    None when not ``strict`` (planning, before the models stage has run)."""
    path = Path(path or os.environ.get(LOCK_ENV) or LOCK_FILE)
    if not path.is_file():
        return None
    entry = read_lock(path).get(agent)
    if entry is None:
        return None
    spec = str(params[f"agents.{agent}.model"])
    if entry.model != spec:
        if not strict:
            return None
        raise LockError(f"{path}: {agent} is locked for model {entry.model!r}, params name "
                        f"{spec!r}: run treeagent models lock")
    return entry


def locked_options(name: str, options: Mapping[str, Any], entry: LockEntry | None
                   ) -> dict[str, Any]:
    """``make_engine`` options with the locked revision: a hub name's commit (loaded by
    the ``transformers``/``vllm`` engines and keyed by all), a served model's
    fingerprint revision. Local weights are hashed by the engine itself (the lock entry
    is that same hash when nothing changed since locking)."""
    out = dict(options)
    if entry is None or entry.source == "local":
        return out
    if name == "openai":
        out["revision"] = entry.cache_revision
    elif name in ("transformers", "vllm"):
        out["revision"] = entry.revision if entry.source == "hub" else entry.cache_revision
    return out

"""The models lock (treeagent.llm.lock, `treeagent models lock`): each agent's model at an
immutable revision; a changed model changes its entry and its cache keys, an unchanged
one gives the same bytes; unknown revisions bypass the call cache."""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Sequence
from pathlib import Path

import pytest
import yaml

from loopback_server import LoopbackOpenAI
from treeagent.cli.main import main as cli
from treeagent.llm import CallCache, Message, Request, Response, Sampling, lock, run_programs, serve
from treeagent.llm.models import SMOLLM2_GGUF, UNVERSIONED, resolve_model
from treeagent.llm.transformers_engine import TransformersEngine
from treeagent.pipeline import config

COMMIT = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    """Hash memo and lock lookups of this test only; the hub is never asked."""
    monkeypatch.setenv("TREEAGENT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv(lock.LOCK_ENV, raising=False)


@pytest.fixture
def weights(tmp_path) -> Path:
    """SmolLM2's GGUF weights copied to a folder of their own."""
    folder = tmp_path / "smol"
    folder.mkdir()
    source = resolve_model("smollm2")
    shutil.copyfile(source.folder / SMOLLM2_GGUF, folder / SMOLLM2_GGUF)
    return folder


def alter_in_place(path: Path) -> None:
    """Flip bytes in the middle of the file, keeping its size and modification time (as a
    copy that preserves times would)."""
    st = path.stat()
    with path.open("r+b") as f:
        f.seek(st.st_size // 2)
        chunk = f.read(64)
        f.seek(st.st_size // 2)
        f.write(bytes(b ^ 0xFF for b in chunk))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def demo_params(tmp_path: Path, **models: str) -> Path:
    data = config.preset("demo")
    data["evaluate"]["agents"] = list(models)
    for agent, model in models.items():
        data["agents"][agent]["model"] = model
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


# --------------------------------------------------------------------- local weights

def test_same_weights_same_bytes_altered_weights_new_entry(tmp_path, weights, capsys):
    params = demo_params(tmp_path, memagent=str(weights))
    out = tmp_path / "models.lock"
    assert cli(["models", "lock", "--params", str(params), "-o", str(out)]) == 0
    first = out.read_bytes()
    entry = lock.read_lock(out)["memagent"]
    assert entry.source == "local" and entry.model == str(weights)
    assert len(entry.revision) == 16 and entry.revision in first.decode()

    assert cli(["models", "lock", "--params", str(params), "-o", str(out)]) == 0
    assert out.read_bytes() == first  # unchanged model: byte-identical lock
    assert "unchanged" in capsys.readouterr().out.splitlines()[-1]

    alter_in_place(weights / SMOLLM2_GGUF)
    assert cli(["models", "lock", "--params", str(params), "-o", str(out)]) == 0
    changed = lock.read_lock(out)["memagent"]
    assert changed.revision != entry.revision and changed.model == entry.model


class EchoTransformersDouble(TransformersEngine):
    """TEST DOUBLE: the real engine's model resolution and revision, replies echoed
    instead of generated (no model load)."""

    async def generate(self, requests: Sequence[Request]) -> list[Response]:
        return [Response("echo:" + r.messages[-1].content, 1, 1) for r in requests]


def one_call(text: str):
    reply = yield Request((Message("user", text),), Sampling(max_tokens=4))
    return reply.text


def test_replaced_weights_get_zero_cache_hits(tmp_path, weights):
    db = tmp_path / "calls.sqlite"
    prompts = ["a", "b", "c"]

    def run():
        engine = EchoTransformersDouble(str(weights), device="cpu")
        return run_programs(((p, one_call(p)) for p in prompts), engine, db, progress=False)

    assert run().totals.cached_calls == 0
    assert run().totals.cached_calls == 3  # same weights: every call from the cache
    alter_in_place(weights / SMOLLM2_GGUF)
    again = run()
    assert again.totals.cached_calls == 0 and again.totals.engine_calls == 3


# --------------------------------------------------------------------- hub names

def paper(**agent_revisions: str) -> config.Params:
    data = config.preset("paper")
    for agent, revision in agent_revisions.items():
        data["agents"][agent]["revision"] = revision
    return config.validate(data)


def test_pinned_commit_reaches_the_vllm_command_line():
    servers = serve.plan(paper(infmem=COMMIT), environ={})
    infmem = [s for s in servers if s.agent == "infmem"]
    assert infmem and all(s.command[s.command.index("--revision") + 1] == COMMIT
                          for s in infmem)
    others = [s for s in servers if s.agent != "infmem"]
    assert all(s.command[s.command.index("--revision") + 1] == "main" for s in others)


def test_locked_commit_of_a_label_reaches_the_servers_and_the_cache_key(tmp_path,
                                                                      monkeypatch):
    params = paper()
    entries = lock.lock_entries(params, lookup=lambda repo, rev: COMMIT if rev == "main"
                                else None)
    path = tmp_path / "models.lock"
    lock.write_lock(path, entries)
    monkeypatch.setenv(lock.LOCK_ENV, str(path))
    for s in serve.plan(params, environ={}):
        assert s.command[s.command.index("--revision") + 1] == COMMIT
    assert serve.served_revision(params, "rememr1") == COMMIT
    name, options = params.engine_spec("rememr1")
    options = lock.locked_options(name, options, lock.locked_entry(params, "rememr1"))
    assert name == "vllm" and options["revision"] == COMMIT


def test_moving_label_is_refused_offline_unless_allowed(tmp_path, capsys):
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(config.preset("paper")), encoding="utf-8")
    out = tmp_path / "models.lock"
    assert cli(["models", "lock", "--params", str(path), "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "agents.memagent.revision: 'main' is a moving label" in err[0]
    assert not out.exists()

    assert cli(["models", "lock", "--params", str(path), "-o", str(out),
                "--allow-moving"]) == 0
    entry = lock.read_lock(out)["infmem"]
    assert entry.moving and entry.revision == "main" and entry.cache_revision == UNVERSIONED


def test_pinned_commit_is_kept_offline():
    entry = lock.resolve_entry(paper(memagent=COMMIT.upper()), "memagent",
                               lookup=lambda repo, rev: None)
    assert (entry.source, entry.revision, entry.moving) == ("hub", COMMIT, False)


def test_hub_name_at_a_label_is_unversioned_and_at_a_commit_is_keyed_by_it():
    label = EchoTransformersDouble("yrshi/ReMemR1-7B", device="cpu", revision="main")
    pinned = EchoTransformersDouble("yrshi/ReMemR1-7B", device="cpu", revision=COMMIT)
    assert label.revision == UNVERSIONED and pinned.revision == COMMIT
    assert pinned.source.revision == COMMIT  # what from_pretrained is given


# --------------------------------------------------------------------- served endpoints

def test_served_endpoint_is_locked_by_reported_id_and_probe_fingerprint(tmp_path):
    data = config.preset("demo")
    data["engine"] = {"name": "openai", "options": {}}
    with LoopbackOpenAI() as server:
        data["agents"]["memagent"]["model"] = "whatever-name"
        data["agents"]["memagent"]["engine_options"] = {"base_urls": [server.url]}
        params = config.validate(data)
        first = lock.resolve_entry(params, "memagent")
        second = lock.resolve_entry(params, "memagent")
        bodies = list(server.bodies)
    assert first == second and first.source == "served" and first.model_id == "loopback"
    assert first.revision == f"served-{first.fingerprint[:16]}"
    probes = [b for b in bodies if b["messages"][-1]["content"] in lock.PROBES]
    assert len(probes) == 2 * len(lock.PROBES)
    assert all(b["temperature"] == 0 and b["max_tokens"] == lock.PROBE_TOKENS for b in probes)
    assert len(first.fingerprint) == 64


# --------------------------------------------------------------------- cache bypass

class EchoDouble:
    """TEST DOUBLE engine whose revision is given."""

    name = "echo"
    model = "echo-model"
    max_batch = 8

    def __init__(self, revision: str) -> None:
        self.revision = revision

    async def generate(self, requests: Sequence[Request]) -> list[Response]:
        return [Response("echo:" + r.messages[-1].content, 1, 1) for r in requests]

    def count_tokens(self, text: str) -> int:
        return len(text.split())


def test_unversioned_model_bypasses_the_cache_and_says_so(tmp_path, caplog):
    db = tmp_path / "calls.sqlite"
    caplog.set_level(logging.WARNING, logger="treeagent.llm.scheduler")
    for _ in range(2):
        out = run_programs(((p, one_call(p)) for p in "xyz"), EchoDouble(UNVERSIONED), db,
                           progress=False)
        assert out.totals.cached_calls == 0 and out.totals.engine_calls == 3
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 2 and all("call cache is bypassed" in w for w in warnings)
    with CallCache(db) as cache:
        assert len(cache) == 0 and len(cache.journal()) == 6  # journaled, never cached
    pinned = [run_programs(((p, one_call(p)) for p in "xyz"), EchoDouble("r1"), db,
                           progress=False).totals.cached_calls for _ in range(2)]
    assert pinned == [0, 3]


def test_a_bad_lock_file_is_one_line(tmp_path):
    path = tmp_path / "models.lock"
    path.write_text("memagent: [1, 2]\n", encoding="utf-8")
    with pytest.raises(lock.LockError, match=r"models.lock: entry 'memagent' is not"):
        lock.read_lock(path)

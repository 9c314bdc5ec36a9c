"""Call cache keys and the durable journal."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sqlite3

import pytest
from hypothesis import given
from hypothesis import strategies as st

from treeagent.llm import CallCache, Message, Request, Response, Sampling, call_key
from treeagent.llm.cache import Identity, JournalEntry

WHO = Identity("openai", "m", "rev1")
texts = st.text(max_size=40)
requests = st.builds(
    lambda role, content, max_tokens, temperature, stop, kind: Request(
        (Message(role, content),), Sampling(max_tokens, temperature, stop=stop), kind=kind
    ),
    st.sampled_from(["system", "user"]),
    texts,
    st.integers(1, 4096),
    st.sampled_from([0.0, 0.7]),
    st.lists(texts, max_size=2).map(tuple),
    st.sampled_from(["memory", "answer", "controller"]),
)


@given(requests)
def test_key_is_stable_and_ignores_the_trace_only_kind(req: Request) -> None:
    again = Request(req.messages, req.sampling, kind="other")
    assert call_key("e", "m", "r", req) == call_key("e", "m", "r", again)


@given(requests, st.sampled_from([None, 7]), st.sampled_from([1.0, 0.9]))
def test_key_covers_every_sampling_field_as_written_before(req: Request, seed, top_p) -> None:
    """Keys of caches already on disk stay valid: the sampling part is every field of
    Sampling (a new field must enter the key) serialized as dataclasses.asdict did."""
    req = Request(req.messages, dataclasses.replace(req.sampling, seed=seed, top_p=top_p))
    sampling = dataclasses.asdict(req.sampling)
    sampling["stop"] = list(req.sampling.stop)
    prompt = [[[m.role, m.content] for m in req.messages], list(req.tools)]
    body = json.dumps(["e", "m", "r", prompt, sampling], sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False).encode()
    assert call_key("e", "m", "r", req) == hashlib.sha256(body).hexdigest()


@given(requests, st.sampled_from(["engine", "model", "revision", "prompt", "sampling", "tools"]))
def test_every_key_part_changes_the_key(req: Request, part: str) -> None:
    base = call_key("e", "m", "r", req)
    if part == "engine":
        other = call_key("e2", "m", "r", req)
    elif part == "model":
        other = call_key("e", "m2", "r", req)
    elif part == "revision":
        other = call_key("e", "m", "r2", req)
    elif part == "prompt":
        msgs = (*req.messages, Message("user", "more"))
        other = call_key("e", "m", "r", Request(msgs, req.sampling))
    elif part == "sampling":
        s = req.sampling
        other = call_key("e", "m", "r", Request(req.messages, Sampling(s.max_tokens + 1, s.temperature, stop=s.stop)))
    else:
        other = call_key("e", "m", "r", Request(req.messages, req.sampling, tools=({"type": "function"},)))
    assert other != base


def entry(prompt: str, response: Response, who: Identity = WHO) -> JournalEntry:
    req = Request((Message("user", prompt),), Sampling(8))
    return JournalEntry(call_key(who.engine, who.model, who.revision, req), "p", req, response, who)


def test_answers_are_cached_unavailable_ones_only_journaled(tmp_path) -> None:
    cache = CallCache(tmp_path / "c.sqlite", run_id="run-a")
    ok, bad = entry("a", Response("A", 3, 1, 0.5)), entry("b", Response(None, error="HTTP 500"))
    cache.record([ok, bad])
    assert cache.get(ok.key).text == "A" and cache.get(ok.key).cached
    assert cache.get(bad.key) is None  # a rerun asks again
    rows = cache.journal("run-a")
    assert [(r["key"], r["available"], r["error"]) for r in rows] == [
        (ok.key, 1, None), (bad.key, 0, "HTTP 500")
    ]  # fmt: skip
    assert cache.summary("run-a") == {
        "calls": 2, "unavailable": 1, "input_tokens": 3, "output_tokens": 1, "latency_seconds": 0.5
    }  # fmt: skip


def test_revision_change_misses_same_revision_hits(tmp_path) -> None:
    cache = CallCache(tmp_path / "c.sqlite")
    cache.record([entry("q", Response("old", 1, 1))])
    same = entry("q", Response("x"))
    new = entry("q", Response("x"), Identity("openai", "m", "rev2"))
    assert cache.get(same.key).text == "old"
    assert cache.get(new.key) is None


def test_records_are_durable_and_visible_to_a_new_connection(tmp_path) -> None:
    path = tmp_path / "c.sqlite"
    cache = CallCache(path)
    cache.record([entry(str(i), Response(f"r{i}")) for i in range(50)])
    # no close(): what a kill -9 leaves behind must already be committed
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0] == 50
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert len(CallCache(path)) == 50


def test_synchronous_mode_is_applied_and_checked(tmp_path) -> None:
    """NORMAL (default) survives a killed process; FULL also waits for the disk."""
    levels = {"NORMAL": 1, "FULL": 2}  # SQLite's numbers for PRAGMA synchronous
    for mode, level in levels.items():
        cache = CallCache(tmp_path / f"{mode}.sqlite", **({} if mode == "NORMAL" else
                                                          {"synchronous": mode}))
        for conn in (cache._writer, cache._reader):
            assert conn.execute("PRAGMA synchronous").fetchone()[0] == level
        cache.close()
    with pytest.raises(ValueError, match="NORMAL or FULL"):
        CallCache(tmp_path / "x.sqlite", synchronous="OFF")
    assert not (tmp_path / "x.sqlite").exists()

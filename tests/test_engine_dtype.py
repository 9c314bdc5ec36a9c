"""The transformers engine's dtype: the ``auto`` rule, explicit dtypes, and a cache
revision per dtype (real SmolLM2 weights; generation only where a test needs it)."""

from __future__ import annotations

import pytest

from treeagent.llm import Message, Request, Sampling, make_engine, model_revision, resolve_model
from treeagent.llm import transformers_engine as te


def ask(text: str, max_tokens: int = 3) -> Request:
    return Request((Message("user", text),), Sampling(max_tokens=max_tokens))


@pytest.fixture(scope="module")
def weights_hash() -> str:
    return model_revision(resolve_model("smollm2"))


def test_auto_is_bf16_only_where_the_cpu_has_bf16_units() -> None:
    assert te.select_dtype("auto", "cpu", bf16_units=True) == "bfloat16"
    assert te.select_dtype("auto", "cpu", bf16_units=False) == "float32"
    assert te.select_dtype("auto", "cuda:0", bf16_units=False) == "bfloat16"
    assert te.select_dtype("AUTO", "cpu", bf16_units=False) == "float32"


def test_explicit_dtypes_and_the_device_defaults() -> None:
    for given, full in (("fp32", "float32"), ("float32", "float32"), ("bf16", "bfloat16"),
                        ("bfloat16", "bfloat16"), ("fp16", "float16")):
        assert te.select_dtype(given, "cpu", bf16_units=False) == full
        assert te.select_dtype(given, "cuda:0", bf16_units=True) == full
    assert te.select_dtype(None, "cpu", bf16_units=True) == "float32"  # default unchanged
    assert te.select_dtype(None, "cuda:1") == "bfloat16"
    with pytest.raises(ValueError, match="dtype 'int4'"):
        te.select_dtype("int4", "cpu")
    with pytest.raises(ValueError, match="dtype 'int4'"):
        make_engine("transformers", device="cpu", dtype="int4")


def test_bf16_units_are_read_from_torch(monkeypatch) -> None:
    import torch

    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: False)
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: False)
    assert te.cpu_has_bf16_units() is False
    assert make_engine("transformers", device="cpu", dtype="auto").dtype == "float32"
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: True)
    assert te.cpu_has_bf16_units() is True
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: False)
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: True)
    assert make_engine("transformers", device="cpu", dtype="auto").dtype == "bfloat16"


def test_the_revision_names_a_dtype_other_than_fp32(monkeypatch, weights_hash) -> None:
    fp32 = make_engine("transformers", device="cpu", dtype="float32")
    bf16 = make_engine("transformers", device="cpu", dtype="bf16")
    fp16 = make_engine("transformers", device="cpu", dtype="float16")
    assert fp32.revision == weights_hash  # fp32 caches from before stay valid
    assert bf16.revision == weights_hash + "-bf16"
    assert fp16.revision == weights_hash + "-fp16"
    assert make_engine("transformers", dtype="bf16", revision="run-b").revision == "run-b-bf16"
    monkeypatch.setattr(te, "cpu_has_bf16_units", lambda: False)
    assert make_engine("transformers", device="cpu", dtype="auto").revision == weights_hash
    monkeypatch.setattr(te, "cpu_has_bf16_units", lambda: True)
    assert make_engine("transformers", device="cpu", dtype="auto").revision == bf16.revision


def test_cached_calls_of_another_dtype_are_not_reused(tmp_path) -> None:
    from treeagent.llm import run_programs

    def program(question: str):
        reply = yield ask(question)
        return reply.text

    db = tmp_path / "calls.sqlite"
    fp32 = make_engine("transformers", device="cpu", dtype="float32", threads=1)
    bf16 = make_engine("transformers", device="cpu", dtype="bfloat16", threads=1)
    first = run_programs([("q", program("Name a color."))], fp32, db, progress=False)
    other = run_programs([("q", program("Name a color."))], bf16, db, progress=False)
    again = run_programs([("q", program("Name a color."))], bf16, db, progress=False)
    assert first.totals.engine_calls == 1
    assert other.totals.engine_calls == 1 and other.totals.cached_calls == 0
    assert again.totals.cached_calls == 1  # its own dtype's reply is reused
    import torch

    assert next(bf16._model.parameters()).dtype == torch.bfloat16
    assert next(fp32._model.parameters()).dtype == torch.float32

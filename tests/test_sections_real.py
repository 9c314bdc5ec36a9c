"""Sectioning with the real Qwen3 tokenizer on generated and real JSON."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from treeagent.algorithm.preprocess import section_text
from treeagent.algorithm.tree import ParseError
from treeagent.formats import json_format
from treeagent.tokenizers import tokens
from treeagent.tokenizers.tokens import TokenIndex

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=60),
    lambda kids: st.lists(kids, max_size=6) | st.dictionaries(st.text(max_size=8), kids, max_size=6),
    max_leaves=40,
)


def check_invariants(result, tokenizer):
    text = result.tree.text
    b = result.budget
    secs = result.sections
    for prev, cur in zip(secs, secs[1:]):
        assert prev.end <= cur.start  # document order, disjoint
    for s in secs:
        assert s.tokens == tokenizer.count(s.text(text))  # exact counts
        assert s.tokens <= b or s.atomic  # (c)
    for leaf in result.tree.leaves():  # (b) every leaf's content exactly once
        inside = [s for s in secs if s.start < leaf.end and leaf.start < s.end]
        assert inside and inside[0].start <= leaf.start and inside[-1].end >= leaf.end
        if len(inside) > 1:
            assert all(s.kind == "span" and s.node is leaf for s in inside)
    for node in result.tree.nodes:  # (a) Eq. 4 with exact counts of the subtree alone
        if tokenizer.count(text[node.start:node.end]) <= b:
            touching = [s for s in secs if s.start < node.end and node.start < s.end]
            assert len(touching) == 1


@settings(max_examples=60, deadline=None)
@given(json_values, st.integers(8, 80), st.sampled_from([None, 1, 2]))
def test_generated_json(qwen3, value, c, indent):
    text = json.dumps({"records": value}, indent=indent, ensure_ascii=False)
    check_invariants(section_text(text, "json", qwen3, c), qwen3)


def test_real_json_sources(qwen3, sources):
    if sources is None:
        pytest.skip("no mirror of the real sources (set $TREEAGENT_MIRROR)")
    for name in ("usgs/libcomcat__dataframes_association__3.json",
                 "gbif", "nvd", "clinicaltrials", "crossref"):
        path = sources / "json" / name
        files = [path] if path.is_file() else sorted(path.glob("*.json"))[:2]
        for f in files:
            text = f.read_text(encoding="utf-8")[:200_000]
            try:
                tree = json_format.parse(text)
            except Exception:
                text = f.read_text(encoding="utf-8")
                if len(text) > 400_000:
                    continue
                tree = json_format.parse(text)
            from treeagent.algorithm.preprocess import section_tree
            check_invariants(section_tree(tree, qwen3, 700), qwen3)


def test_split_text_keeps_escapes_and_surrogates(qwen3):
    body = ("Caf\\u00e9 \\ud83d\\ude00 line\\nbreak \\\"quoted\\\" 😀 é. " * 60)
    text = '{"note": "' + body + '", "n": 1}'
    result = section_text(text, "json", qwen3, 40, search=False)
    spans = [s for s in result.sections if s.kind == "span"]
    assert len(spans) > 5
    pieces = []
    for s in spans:
        frag = s.text(text)
        if frag.startswith('"note"'):
            frag = frag[len('"note": '):]
        pieces.append(json.loads(frag))  # each fragment is a valid, re-quoted string
        assert s.path == "$.note"
    assert "".join(pieces) == json.loads(text)["note"]
    assert all(s.tokens <= 40 for s in spans)


@pytest.mark.parametrize(
    "text, cut, ok",
    [
        ('"ab\\u00e9cd"', 4, False), ('"ab\\u00e9cd"', 6, False), ('"ab\\u00e9cd"', 9, True),
        ('"a\\nb"', 3, False), ('"a\\nb"', 4, True), ('"a\\\\nb"', 4, True),
        ('"\\ud83d\\ude00"', 7, False), ('"\\ud83d\\ude00"', 13, True),
    ],
)
def test_json_safe_cut(text, cut, ok):
    assert json_format.safe_cut(text, cut) is ok


def test_json_paths():
    text = '{"features": [{"id": "a", "odd key": {"it\'s": 1}}], "_x1": [true]}'
    tree = json_format.parse(text)
    paths = {tree.path(n): tree.source(n) for n in tree.nodes}
    assert paths["$"] == text
    assert paths["$.features[0].id"] == '"id": "a"'
    assert paths["$.features[0]['odd key']['it\\'s']"] == '"it\'s": 1'
    assert paths["$._x1[0]"] == "true"


@pytest.mark.parametrize(
    "text, line, col",
    [('{"a": 1,}', 1, 9), ('{"a": [1, 2}', 1, 12), ('[NaN]', 1, 1), ("", 1, 1),
     ('{"a": 1}\n{"b": 2}', 2, 1), ('{"a" 1}', 1, 6)],
)
def test_json_errors_have_positions(text, line, col):
    with pytest.raises(ParseError) as e:
        json_format.parse(text)
    assert (e.value.line, e.value.col) == (line, col)


def test_token_index_exact_matches_tokenizer(qwen3, sources):
    rng = random.Random(0)
    text = json.dumps([{"id": i, "name": f"rec{i} café 😀", "v": i * 1.5} for i in range(400)])
    if sources is not None:
        text += (sources / "json" / "gbif").glob("*.json").__next__().read_text()[:50000]
    index = TokenIndex(text, qwen3)
    assert index.total == qwen3.count(text)
    for _ in range(200):
        a = rng.randrange(len(text))
        b = min(len(text), a + rng.randrange(1, 3000))
        assert index.exact(a, b) == qwen3.count(text[a:b])
        assert abs(index.count(a, b) - qwen3.count(text[a:b])) <= 4


def test_token_starts_match_offsets(qwen3):
    text = '{"ключ": "значение 😀", "n": [1, 22, 333], "e": "é"}' * 300
    starts = qwen3.token_starts(text)
    enc = qwen3._tok.encode(text, add_special_tokens=False)
    assert np.array_equal(starts, [o[0] for o in enc.offsets])


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base", "qwen2.5"])
def test_other_tokenizers(name):
    tk = tokens.load(name)
    text = '{"a": [1, 2, 3], "b": "hello world 😀"}' * 50
    assert tk.count(text) == len(tk.encode(text)) > 0
    assert len(tk.token_starts(text)) == tk.count(text)
    assert TokenIndex(text, tk).exact(3, 1500) == tk.count(text[3:1500])


def test_qwen25_differs_from_qwen3_only_in_added_tokens():
    q3, q25 = tokens.load("qwen3"), tokens.load("qwen2.5")
    assert q3.count("plain text 123") == q25.count("plain text 123")
    assert q3.count("<think>") == 1 and q25.count("<think>") > 1


def test_unknown_tokenizer_is_a_clear_error():
    with pytest.raises(tokens.TokenizerError, match="unknown tokenizer"):
        tokens.load("no-such-tokenizer")

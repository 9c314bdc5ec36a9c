"""LangChain ``TextSplitter`` that emits TreeAgent sections (paper 3.1-3.2, A.2).

>>> from treeagent.integrations.langchain import TreeSplitter
>>> docs = TreeSplitter(chunk_size=512).create_documents([open("events.json").read()])
>>> docs[0].metadata["section_path"], docs[0].metadata["tokens"]

Each section is a whole subtree, a run of adjacent siblings or a fragment of one long
leaf; ``chunk_size`` is a hard maximum in tokens (docs/library.md); sections never
overlap, so ``chunk_overlap`` is 0. Metadata keys:
:data:`treeagent.integrations.METADATA_KEYS`.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from langchain_core.documents import Document
from langchain_text_splitters import TextSplitter

from treeagent.integrations import ChunkOptions, chunk_document


class TreeSplitter(TextSplitter):
    """Structure-aware splitter for JSON, HTML, YAML and static JavaScript.

    ``chunk_size``: most tokens of ``tokenizer`` in a chunk (default 2048); or
    ``budget``: the paper's base budget C (sections up to 2C-1 tokens). ``tokenizer``:
    a name (``qwen3``, ``qwen2.5``, ``cl100k_base``, ``o200k_base``), a folder holding
    ``tokenizer.json``, a tokenizer object or a function counting tokens. ``format`` is
    detected from each document's ``source`` metadata or its content when ``None``;
    ``search=False`` sections at the budget itself; ``on_error="fallback"`` splits a
    document that does not parse as plain text instead of raising.
    """

    def __init__(self, chunk_size: int | None = None, chunk_overlap: int = 0, *,
                 budget: int | None = None, tokenizer: Any = "qwen3",
                 format: str | None = None, search: bool = True, on_error: str = "raise",
                 **kwargs: Any) -> None:
        for name in ("length_function", "keep_separator", "strip_whitespace"):
            if name in kwargs:
                raise ValueError(f"TreeSplitter does not take {name}: sections keep the "
                                 "input's text and are measured by the tokenizer")
        self.options = ChunkOptions(chunk_size, budget, tokenizer, format, search, on_error,
                                    chunk_overlap)
        super().__init__(chunk_size=self.options.limit, chunk_overlap=0,
                         length_function=self.options.counter.count, **kwargs)

    @classmethod
    def from_tiktoken_encoder(cls, encoding_name: str = "cl100k_base",
                              model_name: str | None = None, allowed_special: Any = None,
                              disallowed_special: Any = "all", **kwargs: Any) -> TreeSplitter:
        """A splitter counting tokens of a tiktoken encoding (``cl100k_base`` and
        ``o200k_base`` load offline), or of ``model_name``'s encoding. Text is counted as
        ordinary text: special-token text is not treated as special."""
        if model_name is not None:
            from tiktoken.model import encoding_name_for_model

            encoding_name = encoding_name_for_model(model_name)
        return cls(tokenizer=encoding_name, **kwargs)

    @classmethod
    def from_huggingface_tokenizer(cls, tokenizer: Any, **kwargs: Any) -> TreeSplitter:
        """A splitter counting tokens of a ``transformers`` or ``tokenizers`` tokenizer."""
        return cls(tokenizer=tokenizer, **kwargs)

    def split_text(self, text: str) -> list[str]:
        """The sections' texts, in document order."""
        return [c.text for c in chunk_document(text, self.options)]

    def create_documents(self, texts: list[str],
                         metadatas: list[dict[Any, Any]] | None = None) -> list[Document]:
        """One Document per section; each keeps its input's metadata and adds the
        section's (structural path, kind, offsets, token count, ...)."""
        given = metadatas or [{}] * len(texts)
        documents = []
        for i, (text, base) in enumerate(zip(texts, given, strict=True)):
            source = base.get("source")
            name = str(source) if source else f"texts[{i}]"
            for chunk in chunk_document(text, self.options, source, name):
                metadata = copy.deepcopy(base)
                metadata.update(chunk.metadata)
                documents.append(Document(page_content=chunk.text, metadata=metadata))
        return documents

    def split_documents(self, documents: Iterable[Document]) -> list[Document]:
        """Split each Document into its sections (as ``create_documents``)."""
        documents = list(documents)
        return self.create_documents([d.page_content for d in documents],
                                     [d.metadata for d in documents])

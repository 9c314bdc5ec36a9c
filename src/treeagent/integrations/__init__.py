"""Adapters for other frameworks: LangChain (:mod:`.langchain`) and LlamaIndex
(:mod:`.llama_index`). Both emit the chunks of :func:`treeagent.chunking.chunk_document`
(TreeAgent sections, Algorithm 1 at the searched budget B*, A.2) with the same
metadata (:data:`METADATA_KEYS`) and the same conventions (docs/library.md).

Install with ``pip install 'treeagent[langchain]'`` or ``'treeagent[llama-index]'``.
"""

from __future__ import annotations

from treeagent.chunking import (
    METADATA_KEYS,
    Chunk,
    ChunkOptions,
    DocumentError,
    FallbackWarning,
    chunk_document,
)

__all__ = ["METADATA_KEYS", "Chunk", "ChunkOptions", "DocumentError", "FallbackWarning",
           "chunk_document"]

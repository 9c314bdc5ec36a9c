"""Adapters for other frameworks: LangChain (:mod:`.langchain`) and LlamaIndex
(:mod:`.llama_index`). Both emit the TreeAgent sections of a document (Algorithm 1 at
the searched budget B*, A.2) with the same metadata, built here once.

Install with ``pip install treeagent[langchain]`` or ``treeagent[llama-index]``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from treeagent import formats, tokens
from treeagent.preprocess import section_text

METADATA_KEYS = (
    "section_index", "section_path", "section_kind", "start_index", "end_index",
    "tokens", "atomic", "format", "tokenizer", "budget",
)
"""Metadata every emitted chunk carries (``start_index``/``end_index``: character
offsets of the section in the input; a split string fragment's text also re-adds its
quotes, A.1, so it is then two characters longer than ``text[start:end]``)."""


@dataclass(frozen=True)
class SectionChunk:
    """One section of a document as a framework-neutral chunk."""

    text: str
    metadata: dict[str, Any]


@dataclass(frozen=True)
class SectionOptions:
    """How to section: base budget C in tokens, tokenizer name or folder, format
    (``None``: detected from the content or the ``source`` metadata's extension) and
    whether to search the budget B* in [C, 2C-1] (A.2)."""

    budget: int = 5000
    tokenizer: str = "qwen3"
    format: str | None = None
    search: bool = True

    def __post_init__(self) -> None:
        if self.budget < 1:
            raise ValueError("budget must be a positive number of tokens")
        if self.format is not None and self.format not in formats.FORMATS:
            raise ValueError(f"format must be one of {', '.join(formats.FORMATS)}")


def detect_format(text: str, source: Any = None) -> str:
    """The format from a ``source`` file name's extension, else from the content."""
    return formats.detect(str(source) if source else "", text)


def section_chunks(text: str, options: SectionOptions, source: Any = None) -> list[SectionChunk]:
    """The sections of ``text`` with their metadata (raises ``treeagent.tree.ParseError``,
    a ``ValueError`` naming line and column, on malformed input)."""
    if not text.strip():
        return []
    fmt = options.format or detect_format(text, source)
    tokenizer = tokens.load(options.tokenizer)
    result = section_text(text, fmt, tokenizer, options.budget, options.search)
    chunks = []
    for s in result.sections:
        chunks.append(SectionChunk(result.section_text(s), {
            "section_index": s.index,
            "section_path": s.path or "",
            "section_kind": s.kind,
            "start_index": s.start,
            "end_index": s.end,
            "tokens": s.tokens,
            "atomic": s.atomic,
            "format": fmt,
            "tokenizer": tokenizer.name,
            "budget": result.budget,
        }))
    return chunks

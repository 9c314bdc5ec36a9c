"""Chunks for library users: ``treeagent.chunk(text or texts)`` and :class:`TreeChunker`
(the LangChain and LlamaIndex adapters are built on the same function).

Conventions shared with LangChain and chonkie (docs/library.md):

* ``chunk_size`` is a hard maximum in tokens: no chunk is longer. The budget search
  (A.2) runs over [C, chunk_size] with base budget C = ceil(chunk_size / 2), so its
  range has the paper's width and its top at chunk_size; a section no structural cut
  brings under chunk_size (an atomic value) is cut by the plain text split.
* ``budget=C`` instead keeps the paper's convention (search over [C, 2C-1]; atomic
  sections may exceed the budget), as the benchmark does.
* ``on_error="fallback"`` sections a document that does not parse (or whose format
  cannot be told) with a plain recursive text split, marks its chunks ``fallback`` with
  the error in their metadata and warns naming the document; ``"raise"`` (default)
  raises :class:`DocumentError` naming it.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from treeagent import formats
from treeagent.algorithm.text_split import recursive_spans
from treeagent.algorithm.tree import ParseError
from treeagent.tokenizers.token_counters import resolve
from treeagent.tokenizers.tokens import Tokenizer

DEFAULT_CHUNK_SIZE = 2048
ON_ERROR = ("raise", "fallback")

METADATA_KEYS = (
    "section_index", "section_path", "section_kind", "start_index", "end_index",
    "tokens", "atomic", "format", "tokenizer", "budget", "fallback",
)
"""Metadata every chunk carries (``start_index``/``end_index``: character offsets of
the chunk in the input; a split string fragment's text also re-adds its quotes, A.1, so
it is then two characters longer than ``text[start:end]``; ``section_kind`` ``text``:
cut by the plain text split). Fallback chunks also carry ``parse_error``."""


class DocumentError(ValueError):
    """A document that cannot be sectioned; the message names it (and ``line:col``)."""

    def __init__(self, document: str, error: Exception) -> None:
        self.document = document
        self.error = error
        self.line: int | None = getattr(error, "line", None)
        self.col: int | None = getattr(error, "col", None)
        where = f"{document}:{self.line}:{self.col}" if self.line is not None else document
        super().__init__(f"{where}: {getattr(error, 'message', None) or error}")


class FallbackWarning(UserWarning):
    """A document was sectioned by the plain text split (``on_error="fallback"``)."""


@dataclass(frozen=True)
class Chunk:
    """One chunk: its text, character offsets in the input, exact token count and
    structural path (Eq. 13; empty for plain-text chunks), with all its metadata."""

    text: str
    start_index: int
    end_index: int
    token_count: int
    path: str
    metadata: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class ChunkOptions:
    """How to chunk; ``chunk_size`` (a hard maximum) and ``budget`` (the paper's C)
    exclude each other; with neither, ``chunk_size`` is ``DEFAULT_CHUNK_SIZE``."""

    chunk_size: int | None = None
    budget: int | None = None
    tokenizer: Any = "qwen3"
    format: str | None = None
    search: bool = True
    on_error: str = "raise"
    chunk_overlap: int = 0  # accepted as 0 (as chonkie and LangChain take it): no overlap

    def __post_init__(self) -> None:
        if self.chunk_overlap:
            raise ValueError("sections never overlap: chunk_overlap must be 0")
        if self.chunk_size is not None and self.budget is not None:
            raise ValueError("pass chunk_size (a maximum) or budget (the paper's C), not both")
        if self.chunk_size is None and self.budget is None:
            object.__setattr__(self, "chunk_size", DEFAULT_CHUNK_SIZE)
        for name in ("chunk_size", "budget"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or value < 1):
                raise ValueError(f"{name} must be a positive number of tokens, not {value!r}")
        if self.format is not None and self.format not in formats.FORMATS:
            raise ValueError(f"format must be one of {', '.join(formats.FORMATS)}")
        if self.on_error not in ON_ERROR:
            raise ValueError(f"on_error must be 'raise' or 'fallback', not {self.on_error!r}")

    @functools.cached_property
    def counter(self) -> Tokenizer:
        """The tokenizer (resolved once)."""
        return resolve(self.tokenizer)

    @property
    def limit(self) -> int:
        """Most tokens a plain-text chunk may hold (chunk_size, else C)."""
        return self.chunk_size or self.budget  # type: ignore[return-value]


def chunk_document(text: str, options: ChunkOptions, source: Any = None,
                   name: str | None = None) -> list[Chunk]:
    """The chunks of one document. ``source`` (a file name) helps tell the format;
    ``name`` names the document in errors and warnings (default: ``source``)."""
    if not text.strip():
        return []
    name = name or (str(source) if source else "the document")
    tokenizer = options.counter
    fmt: str | None = options.format
    try:
        fmt = fmt or formats.detect(str(source) if source else "", text)
        tree = formats.parse(text, fmt)
    except (ParseError, ValueError, RecursionError) as exc:  # nesting past the stack too
        if options.on_error == "raise":
            raise DocumentError(name, exc) from exc
        error = str(DocumentError(name, exc))
        warnings.warn(f"{error}; sectioned as plain text", FallbackWarning, stacklevel=3)
        return _fallback(text, options, tokenizer, fmt, error)
    return _structural(tree, options, tokenizer, fmt)


def _structural(tree, options: ChunkOptions, tokenizer: Tokenizer, fmt: str) -> list[Chunk]:
    from treeagent.algorithm.preprocess import section_tree

    size = options.chunk_size
    if size is None:
        result = section_tree(tree, tokenizer, options.budget, options.search)
    elif options.search:
        result = section_tree(tree, tokenizer, (size + 1) // 2, True, top=size)
    else:
        result = section_tree(tree, tokenizer, size, False)
    base = {"format": fmt, "tokenizer": tokenizer.name, "budget": result.budget,
            "fallback": False}
    out: list[Chunk] = []
    for s in result.sections:
        text = result.section_text(s)
        meta = {"section_path": s.path or "", "section_kind": s.kind, "atomic": s.atomic}
        if size is None or s.tokens <= size:
            out.append(_chunk(text, s.start, s.end, s.tokens, meta, base))
            continue
        # over chunk_size with no structural cut left: the plain text split, offsets
        # mapped from the section's text (quotes re-added by A.1) to the input
        lead = len(s.prefix)
        for a, b in recursive_spans(text, size, tokenizer.count):
            start = s.start + min(max(a - lead, 0), s.end - s.start)
            end = s.start + min(max(b - lead, 0), s.end - s.start)
            piece = text[a:b]
            out.append(_chunk(piece, start, end, tokenizer.count(piece),
                              {**meta, "section_kind": "text"}, base))
    return _numbered(out)


def _fallback(text: str, options: ChunkOptions, tokenizer: Tokenizer, fmt: str | None,
              error: str) -> list[Chunk]:
    base = {"format": fmt, "tokenizer": tokenizer.name, "budget": options.limit,
            "fallback": True, "parse_error": error}
    meta = {"section_path": "", "section_kind": "text", "atomic": False}
    return _numbered([
        _chunk(text[a:b], a, b, tokenizer.count(text[a:b]), meta, base)
        for a, b in recursive_spans(text, options.limit, tokenizer.count)
    ])


def _chunk(text: str, start: int, end: int, n: int, meta: dict, base: dict) -> Chunk:
    metadata = {"section_index": -1, **meta, "start_index": start, "end_index": end,
                "tokens": n, **base}
    return Chunk(text, start, end, n, meta["section_path"], metadata)


def _numbered(chunks: list[Chunk]) -> list[Chunk]:
    for i, c in enumerate(chunks):
        c.metadata["section_index"] = i
    return chunks


class TreeChunker:
    """A callable chunker (chonkie's style): ``TreeChunker(chunk_size=512)(text)`` gives
    a list of :class:`Chunk`; a list of texts gives one list per text. Sections never
    overlap: ``chunk_overlap`` is accepted as 0 (as chonkie and LangChain take it), any
    other value is refused.

    ``tokenizer``: a name (``qwen3``, ``qwen2.5``, ``cl100k_base``, ``o200k_base``), a
    folder holding ``tokenizer.json``, a tokenizer object (tiktoken, tokenizers,
    transformers) or a function counting tokens.
    """

    def __init__(self, chunk_size: int | None = None, *, budget: int | None = None,
                 tokenizer: Any = "qwen3", format: str | None = None, search: bool = True,
                 on_error: str = "raise", chunk_overlap: int = 0) -> None:
        self.options = ChunkOptions(chunk_size, budget, tokenizer, format, search, on_error,
                                    chunk_overlap)

    def __call__(self, text: str | Iterable[str]) -> list[Chunk] | list[list[Chunk]]:
        if isinstance(text, str):
            return chunk_document(text, self.options)
        return [chunk_document(t, self.options, name=f"texts[{i}]")
                for i, t in enumerate(text)]


def chunk(text: str | Iterable[str], chunk_size: int | None = None, **options: Any,
          ) -> list[Chunk] | list[list[Chunk]]:
    """Chunks of a text (or one list of chunks per text); options as :class:`TreeChunker`."""
    return TreeChunker(chunk_size, **options)(text)

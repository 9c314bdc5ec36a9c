"""Token counts and parses kept across the contexts of a build (4.1, B.1).

A grid's contexts are made of the same units over and over: a 1M-token context holds
hundreds of them, and every unit of a format appears in many contexts and length cells.
Counting or parsing each context from scratch repeats that work once per context; the
caches here do it once per distinct piece of text and give the same results:

* :class:`LineCounts`: the token count of a long text as the sum of the counts of its
  line pieces (``treeagent.tokenizers.tokens._iter_line_pieces``: cuts at pre-token
  boundaries, exact for line-safe tokenizers), each distinct piece tokenized once per
  tokenizer for the life of the cache;
* :func:`yaml_unit_pieces`: a composed YAML stream split into its documents by parsing
  each distinct document once.

Every cache holds only its own results: construction's counts and parses are never
handed to the second reader (:mod:`treeagent.bench.independent`), which keeps its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from treeagent.tokenizers import tokens as _tokens

#: characters of piece text a :class:`LineCounts` keeps before it starts afresh
LINE_CACHE_CHARS = 1 << 27
_BATCH_CHARS = 1 << 18


class LineCounts:
    """Exact token counts of texts under one line-safe tokenizer, each distinct line
    piece tokenized once (while the pieces kept stay under ``limit`` characters)."""

    def __init__(self, tok: _tokens.Tokenizer, limit: int = LINE_CACHE_CHARS) -> None:
        self.tok = tok
        self.limit = limit
        self._counts: dict[str, int] = {}
        self._chars = 0

    def applies(self, text: str) -> bool:
        """Are line cuts pre-token boundaries of ``text`` under this tokenizer?"""
        safe = getattr(self.tok, "line_safe_for", None)
        return bool(getattr(self.tok, "line_safe", False)) and safe is not None and safe(text)

    def _pieces(self, text: str) -> Iterator[str]:
        return _tokens._iter_capped(_tokens._iter_line_pieces(text),
                                    bool(getattr(self.tok, "digit_safe", False)))

    def count(self, text: str) -> int:
        """``len(tok.encode(text))`` for a text where :meth:`applies` holds."""
        known = self._counts
        total = 0
        todo: dict[str, int] = {}  # new piece -> occurrences in text
        for p in self._pieces(text):
            n = known.get(p)
            if n is None:
                todo[p] = todo.get(p, 0) + 1
            else:
                total += n
        if todo:
            if self._chars > self.limit:
                known.clear()
                self._chars = 0
            batch: list[str] = []
            size = 0
            for p in todo:
                batch.append(p)
                size += len(p)
                if size >= _BATCH_CHARS:
                    total += self._add(batch, todo)
                    batch, size = [], 0
            if batch:
                total += self._add(batch, todo)
        return total

    def _add(self, batch: list[str], times: dict[str, int]) -> int:
        total = 0
        for p, ids in zip(batch, self.tok._encode_many(batch)):  # type: ignore[attr-defined]
            self._counts[p] = len(ids)
            self._chars += len(p)
            total += len(ids) * times[p]
        return total


def memo(read: Callable[[str], object], limit: int) -> Callable[[str], object]:
    """``read`` with its results kept per distinct text while the texts kept stay under
    ``limit`` characters (then it starts afresh)."""
    kept: dict[str, object] = {}
    chars = [0]

    def cached(text: str) -> object:
        hit = kept.get(text, kept)
        if hit is not kept:
            return hit
        value = read(text)
        if chars[0] + len(text) > limit:
            kept.clear()
            chars[0] = 0
        kept[text] = value
        chars[0] += len(text)
        return value

    return cached

"""Token counts and parses kept across the contexts of a build (4.1, B.1).

A grid's contexts are made of the same units over and over: a 1M-token context holds
hundreds of them, and every unit of a format appears in many contexts and length cells.
Counting or parsing each context from scratch repeats that work once per context; the
caches here do it once per distinct piece of text and give the same results:

* :class:`LineCounts`: the token count of a long text as the sum of the counts of its
  blocks (cut at unindented line starts), each distinct block counted once by the sum
  of its line pieces (``treeagent.tokenizers.pieces._iter_line_pieces``: cuts at
  pre-token boundaries, exact for line-safe tokenizers), each distinct piece tokenized
  once per tokenizer for the life of the cache;
* :func:`yaml_unit_pieces`: a composed YAML stream split into its documents by parsing
  each distinct document once.

Every cache holds only its own results: construction's counts and parses are never
handed to the second reader (:mod:`treeagent.bench.independent`), which keeps its own.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from treeagent.tokenizers import tokens as _tokens
from treeagent.tokenizers.pieces import _iter_capped, _iter_line_pieces

#: characters of piece text a :class:`LineCounts` keeps before it starts afresh
LINE_CACHE_CHARS = 1 << 26
_BATCH_CHARS = 1 << 18
#: where :meth:`LineCounts.count` cuts a text into blocks: after a line break followed by
#: a character :data:`treeagent.tokenizers.pieces._LINE_START` starts a line with
_BLOCK_START = re.compile(r"\n(?=[!-.0-~])")


class LineCounts:
    """Exact token counts of texts under one line-safe tokenizer, each distinct line
    piece tokenized once (while the pieces kept stay under ``limit`` characters)."""

    def __init__(self, tok: _tokens.Tokenizer, limit: int = LINE_CACHE_CHARS) -> None:
        self.tok = tok
        self.limit = limit
        self._counts: dict[str, int] = {}  # line piece -> tokens
        self._chars = 0
        self._blocks: dict[str, int] = {}  # block (see :meth:`count`) -> tokens
        self._block_chars = 0

    def applies(self, text: str) -> bool:
        """Does :meth:`count` count ``text`` exactly? Where line cuts are pre-token
        boundaries of ``text`` under this tokenizer; or, with a line-safe split pattern,
        where the text holds added tokens that stay off line breaks (``added_local``):
        then the blocks of :meth:`count` that hold one are tokenized whole."""
        if not getattr(self.tok, "line_safe", False):
            return False
        safe = getattr(self.tok, "line_safe_for", None)
        # added_local first: then no scan of the whole text for added tokens is needed
        return safe is not None and (bool(getattr(self.tok, "added_local", False)) or safe(text))

    def _pieces(self, text: str) -> Iterator[str]:
        return _iter_capped(_iter_line_pieces(text), bool(getattr(self.tok, "digit_safe", False)))

    def count(self, text: str) -> int:
        """``len(tok.encode(text))`` for a text where :meth:`applies` holds.

        The text is cut into blocks at line starts without indentation (a line break
        followed by an ASCII character other than space and "/"): each such place is a
        cut of :func:`treeagent.tokenizers.pieces._iter_line_pieces` whatever surrounds
        it, and no piece spans it, so the text's pieces are its blocks' pieces in order.
        Each distinct block (a unit repeated over the contexts of a grid, mostly) is
        counted once: by its line pieces, or whole when it holds an added token (which
        no cut then falls inside: an added token holds no line break)."""
        bounds = [0, *(m.end() for m in _BLOCK_START.finditer(text)), len(text)]
        known = self._blocks
        total = 0
        new: dict[str, int] = {}  # new block -> occurrences in text
        for a, b in zip(bounds, bounds[1:]):
            block = text[a:b]
            n = known.get(block)
            if n is None:
                new[block] = new.get(block, 0) + 1
            else:
                total += n
        if new:
            if self._block_chars > self.limit:
                known.clear()
                self._block_chars = 0
            blocks = list(new)
            plain = [b for b in blocks if self.tok.line_safe_for(b)]  # type: ignore[attr-defined]
            counts = dict(zip(plain, self._count_many(plain)))
            for block in blocks:
                n = counts[block] if block in counts else self.tok.count(block)
                known[block] = n
                self._block_chars += len(block)
                total += n * new[block]
        return total

    def _count_many(self, texts: list[str]) -> list[int]:
        """The counts of ``texts``, each distinct line piece among them tokenized once
        (in batches) for the life of the cache."""
        known = self._counts
        if self._chars > self.limit:
            known.clear()
            self._chars = 0
        pieces = [list(self._pieces(t)) for t in texts]
        todo = [p for p in dict.fromkeys(p for ps in pieces for p in ps) if p not in known]
        batch: list[str] = []
        size = 0
        for p in todo:
            batch.append(p)
            size += len(p)
            if size >= _BATCH_CHARS:
                self._add(batch)
                batch, size = [], 0
        if batch:
            self._add(batch)
        return [sum(known[p] for p in ps) for ps in pieces]

    def _add(self, batch: list[str]) -> None:
        for p, ids in zip(batch, self.tok._encode_many(batch)):  # type: ignore[attr-defined]
            self._counts[p] = len(ids)
            self._chars += len(p)


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


# ------------------------------------------------------------------ YAML documents

_SENTINEL = "---\nx: 1\n"
YAML_CACHE_CHARS = 1 << 26


def _yaml_one_document(chunk: str) -> bool:
    """Is ``chunk`` (``---`` line first) exactly one document of a YAML stream? Parsed
    with a second document after it: the stream must hold two documents, the first
    starting at 0 and the second right after ``chunk`` (what a parse of any stream
    holding ``chunk`` between ``---`` lines finds there: documents do not see each
    other)."""
    from treeagent.formats import parse as parse_format

    try:
        root = parse_format(chunk + _SENTINEL, "yaml").root
    except Exception:  # noqa: BLE001 - the parse of the whole stream says why
        return False
    return (root.kind == "stream" and len(root.children) == 2
            and root.children[0].start == 0 and root.children[1].start == len(chunk))


_yaml_checked = memo(_yaml_one_document, YAML_CACHE_CHARS)


def yaml_unit_pieces(context: str, whole: Callable[[str], list[str]]) -> list[str]:
    """``whole(context)`` (the YAML hook ``unit_pieces``: the documents of a composed
    stream, each after its ``---`` line, from one parse of the whole stream), found by
    parsing each distinct document once: the stream is cut at its ``---`` lines and
    each piece checked alone (:func:`_yaml_one_document`, cached); any doubt (a piece
    that is not one document there, text before the first ``---``) falls back to
    ``whole``, which also raises what it raises."""
    if not context.startswith("---\n"):
        return whole(context)
    cuts = [0]
    at = context.find("\n---\n")
    while at >= 0:
        cuts.append(at + 1)
        at = context.find("\n---\n", at + 1)
    cuts.append(len(context))
    chunks = [context[a:b] for a, b in zip(cuts, cuts[1:])]
    if len(chunks) < 2 or not all(_yaml_checked(c) for c in chunks):
        return whole(context)
    return [c[4:] for c in chunks]


# ------------------------------------------------------------------ JSON responses

JSON_CACHE_CHARS = 1 << 26
_JSON_HEAD, _JSON_SEP, _JSON_TAIL = "[\n", ",\n", "\n]\n"


def _json_one_value(piece: str) -> bool:
    """Is ``piece`` exactly one element of a JSON list as the format parser reads it
    (``[\\n`` + piece + ``\\n]\\n``: one child spanning the piece)? Elements of a list do
    not see each other: a list of such pieces parses into them."""
    from treeagent.formats import parse as parse_format

    try:
        root = parse_format(_JSON_HEAD + piece + _JSON_TAIL, "json").root
    except Exception:  # noqa: BLE001 - the parse of the whole context says why
        return False
    return (root.kind == "array" and len(root.children) == 1
            and root.children[0].start == len(_JSON_HEAD)
            and root.children[0].end == len(_JSON_HEAD) + len(piece))


_json_checked = memo(_json_one_value, JSON_CACHE_CHARS)


def json_unit_pieces(context: str, whole: Callable[[str], list[str]]) -> list[str]:
    """``whole(context)`` (the JSON hook ``unit_pieces``: the responses of a composed
    list, from one parse of the whole context), found by parsing each distinct response
    once: the C decoder finds where each value ends, each piece is checked alone
    (:func:`_json_one_value`, cached) and the pieces must rebuild the context exactly;
    any doubt falls back to ``whole``, which also raises what it raises."""
    import json

    if not (context.startswith(_JSON_HEAD) and context.endswith(_JSON_TAIL)):
        return whole(context)
    decode = json.JSONDecoder().raw_decode
    pieces: list[str] = []
    at, end = len(_JSON_HEAD), len(context) - len(_JSON_TAIL)
    try:
        while True:
            stop = decode(context, at)[1]
            pieces.append(context[at:stop])
            if stop == end:
                break
            if not context.startswith(_JSON_SEP, stop):
                return whole(context)
            at = stop + len(_JSON_SEP)
    except ValueError:
        return whole(context)
    if (_JSON_HEAD + _JSON_SEP.join(pieces) + _JSON_TAIL != context
            or not all(_json_checked(p) for p in pieces)):
        return whole(context)
    return pieces

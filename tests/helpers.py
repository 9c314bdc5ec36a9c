"""Shared test helpers: the real Qwen3 tokenizer and a character-level test double."""

from __future__ import annotations

from pathlib import Path

import numpy as np

SOURCES = next(
    (p for p in (Path(__file__).resolve().parents[2] / "shared" / "sources",
                 Path("/work/shared/sources")) if p.is_dir()),
    None,
)


class CharTokenizer:
    """Test double: one token per character, so lengths are additive (paper 3.1 model)."""

    name = "chars"
    digit_safe = False

    def encode(self, text: str) -> list[int]:
        return [ord(c) for c in text]

    def count(self, text: str) -> int:
        return len(text)

    def count_batch(self, texts: list[str]) -> list[int]:
        return [len(t) for t in texts]

    def token_starts(self, text: str) -> np.ndarray:
        return np.arange(len(text), dtype=np.int64)

    def truncate(self, text: str, n: int) -> str:
        return text[:n]

"""Shared test helpers: the source mirror, a character-level tokenizer test double, strict
value equality, and stopping a process group a test started."""

from __future__ import annotations

import math
import os
import signal
import subprocess
from pathlib import Path

import numpy as np

SOURCES = (Path(os.environ["TREEAGENT_MIRROR"])  # a mirror of the real sources, if any
           if os.environ.get("TREEAGENT_MIRROR") else None)


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


def same(a: object, b: object) -> bool:
    """Strict equality: types (bool/int/float), zero signs, NaN == NaN, key order."""
    if isinstance(a, dict):
        return (isinstance(b, dict) and list(a) == list(b)
                and all(same(a[k], b[k]) for k in a))
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(same, a, b))
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        if math.isnan(a):
            return math.isnan(b)
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    return a == b


def stop_group(proc: subprocess.Popen) -> None:
    """SIGTERM the process group of ``proc`` (started with ``start_new_session``), SIGKILL
    it after 20 s, and reap ``proc``."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()

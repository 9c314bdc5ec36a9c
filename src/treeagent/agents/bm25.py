"""InfMem's retrieval index: BM25 over 500-token sub-chunks of every section.

Sub-chunks are consecutive pieces of at most 500 model tokens of each section's text,
so every sub-chunk belongs to exactly one section: "the whole input excluding the
current section" is every sub-chunk of the other sections. A search returns the top-k
sub-chunks by BM25, at most 2 per section, dropping a candidate whose word set has
Jaccard similarity >= 0.8 with one already taken (AGENTS.md, InfMem).

Scoring is Okapi BM25 (k1 = 1.5, b = 0.75) with the non-negative idf
ln(1 + (N - df + 0.5) / (df + 0.5)). Words are lowercased runs of letters and digits
(``\\w+``): upstream splits on whitespace only, which leaves a JSON or HTML record as
a few giant words that never match a query.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from treeagent.tokens import Tokenizer

SUBCHUNK_TOKENS = 500
PER_SECTION = 2
NEAR_DUPLICATE = 0.8
K1 = 1.5
B = 0.75

_WORD = re.compile(r"\w+")


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def jaccard(a: set[str], b: set[str]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def subchunks(text: str, tokenizer: Tokenizer, size: int = SUBCHUNK_TOKENS) -> list[str]:
    """Consecutive pieces of ``text`` of at most ``size`` tokens (cut at token starts)."""
    starts = tokenizer.token_starts(text)
    n = len(starts)
    pieces = []
    for i in range(0, n, size):
        a = int(starts[i]) if i else 0
        b = int(starts[i + size]) if i + size < n else len(text)
        if text[a:b].strip():
            pieces.append(text[a:b])
    return pieces


@dataclass(frozen=True)
class Hit:
    chunk: int  # sub-chunk id (document order)
    section: int
    score: float
    text: str


class BM25Index:
    """BM25 over sub-chunks, each tagged with the section it comes from."""

    def __init__(self, chunks: Sequence[tuple[int, str]], k1: float = K1, b: float = B) -> None:
        self.sections = [s for s, _ in chunks]
        self.texts = [t for _, t in chunks]
        self.k1, self.b = k1, b
        self.tf = [Counter(words(t)) for t in self.texts]
        self.sets = [set(c) for c in self.tf]
        self.lengths = [sum(c.values()) for c in self.tf]
        n = len(self.tf)
        self.avg = (sum(self.lengths) / n) if n else 0.0
        df: Counter[str] = Counter()
        for c in self.tf:
            df.update(c.keys())
        self.idf = {w: math.log(1 + (n - d + 0.5) / (d + 0.5)) for w, d in df.items()}

    @classmethod
    def from_sections(cls, texts: Sequence[str], tokenizer: Tokenizer,
                      size: int = SUBCHUNK_TOKENS) -> BM25Index:
        return cls([(s, piece) for s, text in enumerate(texts)
                    for piece in subchunks(text, tokenizer, size)])

    def __len__(self) -> int:
        return len(self.texts)

    def scores(self, query: str) -> list[float]:
        q = Counter(words(query))
        out = []
        for tf, length in zip(self.tf, self.lengths):
            s = 0.0
            norm = self.k1 * (1 - self.b + self.b * length / self.avg) if self.avg else self.k1
            for w, qc in q.items():
                f = tf.get(w)
                if f:
                    s += qc * self.idf[w] * f * (self.k1 + 1) / (f + norm)
            out.append(s)
        return out

    def search(self, query: str, top_k: int, exclude_section: int | None = None,
               per_section: int = PER_SECTION, near_duplicate: float = NEAR_DUPLICATE
               ) -> list[Hit]:
        """Top-``top_k`` sub-chunks with a positive score, best first (ties: document
        order), skipping ``exclude_section``, at most ``per_section`` per section and no
        near-duplicate (Jaccard >= ``near_duplicate``) of a chunk already taken."""
        scores = self.scores(query)
        order = sorted((i for i, s in enumerate(scores) if s > 0), key=lambda i: (-scores[i], i))
        taken: list[Hit] = []
        per: Counter[int] = Counter()
        for i in order:
            if len(taken) >= top_k:
                break
            section = self.sections[i]
            if section == exclude_section or per[section] >= per_section:
                continue
            if any(jaccard(self.sets[i], self.sets[h.chunk]) >= near_duplicate for h in taken):
                continue
            taken.append(Hit(i, section, scores[i], self.texts[i]))
            per[section] += 1
        return taken

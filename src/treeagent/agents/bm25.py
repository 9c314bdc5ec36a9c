"""InfMem's retrieval index: BM25 over overlapping 500-token sub-chunks of every section
(upstream's "enhanced" index, the default of its evaluation).

Sub-chunks are windows of 500 model tokens that start every 400 tokens (100 tokens of
overlap) inside each section and never cross a section's end, so every sub-chunk belongs
to exactly one section: "the whole input excluding the current section" is every
sub-chunk of the other sections.

Words: the lowercased text's runs of ``[a-z0-9_]``, plus every CJK character and every
pair of adjacent CJK characters (upstream ``tokenize_mixed``). Scoring is Okapi BM25 as
``rank_bm25.BM25Okapi`` computes it: k1 = 1.5, b = 0.75, idf ln((N - df + 0.5) /
(df + 0.5)), a negative idf replaced by 0.25 x the mean idf; a query word counts once
per occurrence.

A search (upstream ``bm25_retrieve_for_recurrent_chunk_enhanced``): the best
max(40, 6 k) sub-chunks are candidates, taken best first, skipping the current section,
a third one from the same section, and one whose word set has Jaccard similarity
> 0.8 with one already taken; if fewer than k are taken, the rest are refilled from
the whole ranking (current section still skipped, same text not twice; no per-section
cap, no near-duplicate test, zero scores included). Ties go to document order (upstream
leaves them to numpy's unstable sort).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from treeagent.tokenizers.tokens import Tokenizer

SUBCHUNK_TOKENS = 500
OVERLAP_TOKENS = 100
PER_SECTION = 2
NEAR_DUPLICATE = 0.8
CANDIDATES_MIN = 40
CANDIDATES_PER_K = 6
K1 = 1.5
B = 0.75
EPSILON = 0.25

_WORD = re.compile(r"[a-z0-9_]+")


def _cjk(ch: str) -> bool:
    return "\u4e00" <= ch <= "\u9fff"


def words(text: str) -> list[str]:
    """BM25 words of ``text`` (upstream ``tokenize_mixed``)."""
    lower = text.lower()
    out = _WORD.findall(lower)
    cjk = [ch for ch in lower if _cjk(ch)]
    out += cjk
    out += [a + b for a, b in zip(cjk, cjk[1:])]
    return out


def jaccard(a: set[str], b: set[str]) -> float:
    """|a & b| / |a | b|, 0 for two empty sets (upstream ``_jaccard``)."""
    union = len(a | b)
    return len(a & b) / union if union else 0.0


def subchunks(text: str, tokenizer: Tokenizer, size: int = SUBCHUNK_TOKENS,
              overlap: int = OVERLAP_TOKENS) -> list[str]:
    """Windows of ``size`` tokens of ``text`` starting every ``size - overlap`` tokens
    (cut at token starts); the last window ends at the text's end."""
    starts = tokenizer.token_starts(text)
    n = len(starts)
    step = max(1, size - min(overlap, size - 1))
    pieces = []
    i = 0
    while i < n:
        j = min(n, i + size)
        a = int(starts[i]) if i else 0
        b = int(starts[j]) if j < n else len(text)
        pieces.append(text[a:b])
        if j >= n:
            break
        i += step
    return pieces


@dataclass(frozen=True)
class Hit:
    chunk: int  # sub-chunk id (document order)
    section: int
    score: float
    text: str


class BM25Index:
    """BM25 over sub-chunks, each tagged with the section it comes from."""

    def __init__(self, chunks: Sequence[tuple[int, str]], k1: float = K1, b: float = B,
                 epsilon: float = EPSILON) -> None:
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
        self.idf = {w: math.log(n - d + 0.5) - math.log(d + 0.5) for w, d in df.items()}
        if self.idf:
            floor = epsilon * sum(self.idf.values()) / len(self.idf)
            for w, v in self.idf.items():
                if v < 0:
                    self.idf[w] = floor

    @classmethod
    def from_sections(cls, texts: Sequence[str], tokenizer: Tokenizer,
                      size: int = SUBCHUNK_TOKENS, overlap: int = OVERLAP_TOKENS) -> BM25Index:
        return cls([(s, piece) for s, text in enumerate(texts)
                    for piece in subchunks(text, tokenizer, size, overlap)])

    def __len__(self) -> int:
        return len(self.texts)

    def scores(self, query_words: list[str]) -> list[float]:
        out = [0.0] * len(self.tf)
        for w in query_words:  # every occurrence counts, as in rank_bm25
            idf = self.idf.get(w)
            if not idf:
                continue
            for i, (tf, length) in enumerate(zip(self.tf, self.lengths)):
                f = tf.get(w)
                if f:
                    norm = self.k1 * (1 - self.b + self.b * length / self.avg)
                    out[i] += idf * f * (self.k1 + 1) / (f + norm)
        return out

    def search(self, query: str, top_k: int, exclude_section: int | None = None,
               per_section: int = PER_SECTION, near_duplicate: float = NEAR_DUPLICATE
               ) -> list[Hit]:
        """The top-``top_k`` sub-chunks for ``query`` (rules in the module docstring)."""
        q = words(query)
        if not q or not self.texts:
            return []
        scores = self.scores(q)
        ranked = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
        candidates = ranked[: min(len(ranked), max(CANDIDATES_MIN, top_k * CANDIDATES_PER_K))]
        taken: list[Hit] = []
        per: Counter[int] = Counter()
        for i in candidates:
            section = self.sections[i]
            if section == exclude_section or per[section] >= per_section:
                continue
            if any(jaccard(self.sets[i], self.sets[h.chunk]) > near_duplicate for h in taken):
                continue
            taken.append(Hit(i, section, scores[i], self.texts[i]))
            per[section] += 1
            if len(taken) >= top_k:
                return taken
        texts = {h.text for h in taken}
        for i in ranked:  # refill (upstream): the whole ranking, no cap, no dedup
            if self.sections[i] == exclude_section or self.texts[i] in texts:
                continue
            taken.append(Hit(i, self.sections[i], scores[i], self.texts[i]))
            texts.add(self.texts[i])
            if len(taken) >= top_k:
                break
        return taken

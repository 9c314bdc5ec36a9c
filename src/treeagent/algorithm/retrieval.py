"""Lexical span retrieval over saved memory states (paper 3.3, Eq. A.3)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from treeagent.tokenizers.tokens import Tokenizer

MAX_SPANS = 4
SPAN_TOKENS = 96

FUNCTION_WORDS = frozenset(
    """a an the and or but nor so yet if then else of in on at to for from by with without
    into onto over under about above below between among through during before after as
    is are was were be been being am do does did doing have has had having can could may
    might must shall should will would this that these those it its itself he she they
    them their theirs his her hers him we us our ours you your yours i me my mine what
    which who whom whose when where why how all any each every some no not only own same
    such than too very s t just there here also both either neither more most other""".split()
)

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_WORD = re.compile(r"[^\W_]+")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def terms(text: str) -> Counter[str]:
    """Lowercased terms with camelCase and underscores split, function words removed."""
    out: Counter[str] = Counter()
    for word in _WORD.findall(_CAMEL.sub(" ", text.replace("_", " "))):
        w = word.lower()
        if w not in FUNCTION_WORDS:
            out[w] += 1
    return out


def spans(memory: str) -> list[str]:
    """Split a saved state at line and sentence boundaries (A.3)."""
    out: list[str] = []
    for line in memory.splitlines():
        out.extend(p.strip() for p in _SENTENCE.split(line) if p.strip())
    return out


def score(query_terms: Counter[str], span_terms: Counter[str]) -> float:
    """Eq. A.3: sum over shared terms of min(c_q, c_z), plus 0.25 per shared term."""
    shared = query_terms.keys() & span_terms.keys()
    return sum(min(query_terms[w], span_terms[w]) for w in shared) + 0.25 * len(shared)


@dataclass(frozen=True)
class Retrieved:
    source: int  # saved-state (section) index
    order: int  # span order within that state
    score: float
    text: str  # truncated to SPAN_TOKENS tokens


def retrieve(
    question: str,
    sources: Sequence[int],
    history: Mapping[int, str],
    tokenizer: Tokenizer,
    k: int = MAX_SPANS,
    span_tokens: int = SPAN_TOKENS,
) -> list[Retrieved]:
    """R(q, L_t, H_{t-1}) of Eq. 16: at most ``k`` spans with positive overlap, ranked by
    score, ties by source index then span order; each truncated to ``span_tokens``."""
    q = terms(question)
    scored: list[tuple[float, int, int, str]] = []
    for source in sorted(set(sources)):
        if source not in history:
            continue
        for order, span in enumerate(spans(history[source])):
            s = score(q, terms(span))
            if s > 0:
                scored.append((-s, source, order, span))
    scored.sort(key=lambda x: (x[0], x[1], x[2]))
    return [
        Retrieved(src, order, -neg, tokenizer.truncate(span, span_tokens))
        for neg, src, order, span in scored[:k]
    ]


def render(retrieved: Sequence[Retrieved]) -> str:
    """r_t: the selected spans concatenated, one per line (empty when none)."""
    return "\n".join(r.text for r in retrieved)

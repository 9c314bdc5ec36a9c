"""Contexts in native syntax filled to a length bucket with distractor units (4.1, B.1).

Composition (each context is one valid document of its format; the frame and the piece
are hooks of the format's bench module, :class:`treeagent.bench.model.BenchFormat`):

* JSON: an ordered list of responses, ``[\\n`` + units joined by ``,\\n`` + ``\\n]``;
* HTML: one page whose ``<body>`` holds each unit in its own ``<section>`` element;
* YAML: a multi-document stream, each unit one ``---`` document;
* JavaScript: a module of initializers, one statement per unit: a unit that is a
  binding statement (``const rules = {...};``, ``module.exports = ...``) keeps it, a bare
  literal becomes ``const entry_NNNN = <literal>;``. Binding names must differ within
  a module: the builder treats a repeated name like a repeated record description.

A unit enters a context as its *piece* (:func:`piece`): its text with document
framing removed (a YAML ``---``/``...`` marker and directives, an HTML page's shell
around its body), so that pieces can be nested in one document.

Lengths are buckets of construction tokens (8,192 * 2^k up to 1M, plus small demo
buckets). A context *hits its bucket from below*: under every construction tokenizer its
token count n satisfies ``ceil(L * (1 - tolerance)) <= n <= L``. Token counts are
accumulated per unit (each distinct unit counted once per tokenizer, plus wrapper and
separator costs) and then verified by one full count of the composed text; a full count
above L drops the last distractors and recounts.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from treeagent.bench.model import BenchFormat
from treeagent.pipeline.config import DEMO_LENGTHS, PAPER_LENGTHS
from treeagent.tokenizers import pieces as _pieces
from treeagent.tokenizers import tokens as _tokens

BUCKETS: dict[str, int] = {
    f"{n // 1024}K" if n < 1 << 20 else "1M": n for n in PAPER_LENGTHS
}
"""The paper's eight length buckets (4.1): 8K ... 1M construction tokens."""
DEMO_BUCKETS: dict[str, int] = {f"demo-{n // 1024}K": n for n in DEMO_LENGTHS}
"""Short buckets for the CPU demo only (not part of the paper's grid)."""
ALL_BUCKETS = {**DEMO_BUCKETS, **BUCKETS}
DEFAULT_TOKENIZERS = ("qwen3", "qwen2.5")
DEFAULT_TOLERANCE = 0.05

def bucket_label(length: int) -> str:
    for label, n in ALL_BUCKETS.items():
        if n == length:
            return label
    return str(length)


def parse_bucket(text: str) -> int:
    """'8K', '1M', 'demo-2K' or a plain token count -> tokens."""
    key = text.strip()
    for label, n in ALL_BUCKETS.items():
        if key.lower() == label.lower():
            return n
    if key.isdigit() and int(key) > 0:
        return int(key)
    raise ValueError(f"unknown length {text!r} (use {', '.join(ALL_BUCKETS)} or a number)")


# ------------------------------------------------------------------ composition


def hooks(fmt: str) -> BenchFormat:
    """The format's benchmark hooks (its bench module's ``BENCH``)."""
    from treeagent.bench.sources.registry import BENCH

    return BENCH.get(fmt)


def piece(fmt: str, text: str) -> str:
    """The unit's text as it is placed inside a composed context (module docstring)."""
    return hooks(fmt).piece(text)


def compose(fmt: str, pieces: Sequence[str]) -> str:
    """One document of ``fmt`` holding ``pieces`` in order (module docstring)."""
    f = hooks(fmt).frame
    return f.head + f.sep.join(f.wrap(p, i) for i, p in enumerate(pieces)) + f.tail


# ------------------------------------------------------------------ token counting


class Counter:
    """Token counts under several construction tokenizers.

    ``many`` counts distinct texts once each; ``full`` counts a whole context (in
    parallel pieces cut at digit boundaries, exact for digit-safe tokenizers). A
    tokenizer whose BPE model, normalizer and pre-tokenizer equal an earlier one's and
    that differs only in added tokens (Qwen2.5 vs Qwen3) reuses that count for texts
    containing none of the differing added tokens -- the same tokens by construction.
    Line-safe tokenizers count through a :class:`treeagent.bench.unit_cache.LineCounts`:
    each distinct line piece is tokenized once for all the texts this counter sees.
    """

    def __init__(self, names: Sequence[str] = DEFAULT_TOKENIZERS) -> None:
        from treeagent.bench.unit_cache import LineCounts

        self.names = tuple(names)
        self.toks = [_tokens.load(n) for n in self.names]
        self.lines = [LineCounts(t) for t in self.toks]
        self._same: list[tuple[int, tuple[str, ...]] | None] = [None] * len(self.toks)
        specs = [_core_spec(n) for n in self.names]
        for j in range(len(self.toks)):
            for i in range(j):
                if specs[i] is not None and specs[j] is not None and specs[i][0] == specs[j][0]:
                    self._same[j] = (i, tuple(sorted(specs[i][1] ^ specs[j][1])))
                    break

    def _alias(self, j: int, text: str) -> int | None:
        same = self._same[j]
        if same is None or any(s in text for s in same[1]):
            return None
        return same[0]

    def many(self, texts: Sequence[str]) -> np.ndarray:
        """Counts, shape (len(texts), tokenizers)."""
        out = np.zeros((len(texts), len(self.toks)), dtype=np.int64)
        for j, tok in enumerate(self.toks):
            todo: list[int] = []
            lines = self.lines[j]
            for k, text in enumerate(texts):
                alias = self._alias(j, text)
                if alias is not None:
                    out[k, j] = out[k, alias]
                elif lines.applies(text):
                    out[k, j] = lines.count(text)
                else:
                    todo.append(k)
            small = [k for k in todo if len(texts[k]) < 1 << 16]
            for a in range(0, len(small), 256):
                batch = small[a:a + 256]
                out[batch, j] = tok.count_batch([texts[k] for k in batch])
            for k in todo:
                if len(texts[k]) >= 1 << 16:
                    out[k, j] = _count_parallel(tok, texts[k])
        return out

    def full(self, text: str) -> dict[str, int]:
        counts: list[int] = []
        for j, tok in enumerate(self.toks):
            alias = self._alias(j, text)
            if alias is not None:
                counts.append(counts[alias])
            elif self.lines[j].applies(text):
                counts.append(self.lines[j].count(text))
            else:
                counts.append(_count_parallel(tok, text))
        return dict(zip(self.names, counts))


@functools.lru_cache(maxsize=16)
def _core_spec(name: str) -> tuple[str, frozenset[str]] | None:
    """Digest of tokenizer ``name``'s model, normalizer and pre-tokenizer (its spec less
    added tokens and post-processor) and its added tokens; None for a non-HF tokenizer.
    Once per name and process: serializing a BPE vocabulary takes about half a second,
    and every build and every cell of a sharded build makes a :class:`Counter`."""
    inner = getattr(_tokens.load(name), "_tok", None)
    if inner is None:
        return None
    spec = json.loads(inner.to_str())
    added = frozenset(a["content"] for a in spec.pop("added_tokens", []))
    spec.pop("post_processor", None)
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest(), added


def _count_parallel(tok: _tokens.Tokenizer, text: str) -> int:
    """Exact count of a long text: through ``token_starts`` when the tokenizer tokenizes
    each distinct line once (``line_safe``), else in pieces cut at digit boundaries."""
    if len(text) < 1 << 16:
        return tok.count(text)
    if getattr(tok, "line_safe", False):
        return len(tok.token_starts(text))
    if not getattr(tok, "digit_safe", False):
        return tok.count(text)
    points = _pieces._split_points(text)
    return sum(tok.count_batch([text[a:b] for a, b in zip(points, points[1:])]))


# ------------------------------------------------------------------ filling


@dataclass(slots=True)
class Pool:
    """Pieces of one format's units, their token costs and description sets."""

    fmt: str
    ids: list[str]
    pieces: list[str]
    cost: np.ndarray  # (units, tokenizers): tokens of the wrapped piece plus its separator
    keys: list[frozenset[str]]  # normalized record descriptions and record ids per unit
    overhead: np.ndarray  # head + tail per tokenizer
    names: list[frozenset[str]] = field(default_factory=list)  # keys that never repeat

    def __post_init__(self) -> None:
        if not self.names:
            self.names = [frozenset(k for k in ks if k.startswith("n:")) for ks in self.keys]


def make_pool(fmt: str, ids: Sequence[str], pieces: Sequence[str],
              keys: Sequence[frozenset[str]], counter: Counter) -> Pool:
    """Count each distinct piece once per tokenizer; add its wrapper and separator cost."""
    h = hooks(fmt)
    f = h.frame
    bare = counter.many(pieces)
    base = counter.many([h.probe, f.wrap(h.probe, 0) + f.sep, h.probe + f.sep])
    wrapped, plain = base[1] - base[0], base[2] - base[0]
    extra = np.zeros((len(pieces), len(counter.names)), dtype=np.int64)
    for i, p in enumerate(pieces):
        extra[i] = plain if f.keep is not None and f.keep(p) else wrapped
    overhead = counter.many([f.head + f.tail])[0] - counter.many([f.sep])[0]
    return Pool(fmt, list(ids), list(pieces), bare + extra, list(keys), overhead)


@dataclass(slots=True)
class Context:
    """A composed context and how it was made (the recipe is ``order``)."""

    order: list[int]  # pool indices in document order (anchors included)
    anchors: list[int]
    text: str
    tokens: dict[str, int]
    estimate: dict[str, int]
    reused: int = 0  # distractor occurrences beyond each unit's first
    fill: float = 0.0  # min over tokenizers of tokens / length
    notes: list[str] = field(default_factory=list)


def build_context(pool: Pool, counter: Counter, anchors: Sequence[int], length: int,
                  rng: random.Random, depth: float, *, tolerance: float = DEFAULT_TOLERANCE,
                  allow_reuse: bool = False) -> Context:
    """Fill ``length`` with distractors around ``anchors`` (placed at relative ``depth``).

    Distractors are drawn in ``rng`` order; a unit sharing a record description or id
    with the context so far is skipped (answers stay unique). Without ``allow_reuse``
    every unit occurs at most once and a bucket that distinct units cannot fill is left
    short (``fill < 1 - tolerance``); with it, distractors repeat and ``reused`` says
    how often.
    """
    lo = math.ceil(length * (1 - tolerance))
    est = pool.overhead.astype(np.int64).copy()
    taken: set[str] = set()
    for a in anchors:
        est += pool.cost[a]
        taken |= pool.keys[a]
    chosen: list[int] = []
    reused = 0
    order = list(range(len(pool.ids)))
    rng.shuffle(order)
    anchor_set, anchor_keys = set(anchors), set(taken)
    seen: set[int] = set()
    for u in order:  # distinct units first
        if not (est < lo).any():
            break
        if u in anchor_set or pool.keys[u] & taken or (est + pool.cost[u] > length).any():
            continue
        taken |= pool.keys[u]
        seen.add(u)
        chosen.append(u)
        est += pool.cost[u]
    progress = allow_reuse
    while progress and (est < lo).any():  # flagged reuse: repeat distractors
        progress = False
        for u in order:
            if not (est < lo).any():
                break
            if (u in anchor_set or pool.keys[u] & anchor_keys or pool.names[u] & taken
                    or (est + pool.cost[u] > length).any()):
                continue  # a JS binding name can never repeat in one module
            reused += u in seen
            seen.add(u)
            taken |= pool.names[u]
            chosen.append(u)
            est += pool.cost[u]
            progress = True
    return _finish(pool, counter, list(anchors), chosen, est, length, depth, reused)


def _finish(pool: Pool, counter: Counter, anchors: list[int], chosen: list[int],
            est: np.ndarray, length: int, depth: float, reused: int) -> Context:
    notes: list[str] = []
    first = est.copy()
    while True:
        at = round(depth * len(chosen))
        order = chosen[:at] + anchors + chosen[at:]
        text = compose(pool.fmt, [pool.pieces[u] for u in order])
        counts = counter.full(text)
        full = np.array([counts[n] for n in counter.names], dtype=np.int64)
        if not (full > length).any() or not chosen:
            break
        delta = full - est  # boundary effects the per-unit sum did not see
        notes.append(f"full count {int((full - length).max())} over the bucket")
        while chosen and (est + delta > length).any():
            est = est - pool.cost[chosen.pop()]
    estimate = dict(zip(counter.names, (int(x) for x in first)))
    estimate = dict(zip(counter.names, (int(x) for x in est)))
    fill = min(counts[n] / length for n in counter.names)
    return Context(order, anchors, text, counts, estimate, reused, fill, notes)

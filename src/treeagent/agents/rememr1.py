"""ReMemR1 (syr-cn/ReMemR1): revisitable memory with callbacks.

Per section t the prompt holds ``<problem>``, ``<recalled_memory>`` (default "No memory
was recalled."), ``<memory>`` m_{t-1} and ``<section>`` (the mode's observation o_t).
The reply should hold ``<thinking>...</thinking>``, exactly one ``<update>...</update>``
and optionally one ``<recall>query</recall>``. m_t is the reply (after its last
``</think>``) with the recall block removed. A recall query retrieves the single best
past memory by TF-IDF cosine over the model tokenizer's tokens with the space marker
stripped (:func:`words`, :func:`best_memory`); it fills the next step's ``<recalled_memory>`` and, after the
last section, the final prompt's. Limits: 2,048 new tokens per memory and answer call,
requests <= 40,960 (Table 2).

Order of retrieval (upstream issue #5): we use the *training* order — the recall query
of step t searches the memories m_1..m_{t-1} saved before step t, and only then is m_t
added to the history (upstream evaluation adds m_t first and can recall the memory it
has just written). The initial "No previous memory" is not a past memory.

Malformed replies (no ``<thinking>``, zero or several ``<update>`` blocks) are kept as
upstream's evaluation keeps them: the memory is still the reply minus the recall block;
we count them in ``details["malformed"]``. The recall query is upstream's greedy
one-line ``<recall>(.+)</recall>``; an empty tag, or a query spread over lines, recalls
nothing.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

from treeagent.agents.common import (
    NO_MEMORY,
    Agent,
    Limits,
    Program,
    Thinking,
    ask,
    strip_think,
    tag_blocks,
)
from treeagent.agents.context import Context
from treeagent.agents.costing import Cost, Replies, Sizer, Step, memory_pass
from treeagent.agents.templates import Spec

if TYPE_CHECKING:
    from treeagent.agents.setup import AgentSetup
from treeagent.tokenizers.tokens import Tokenizer

NAME = "rememr1"
LIMITS = Limits(2048, 2048, 1024, 40960)  # Table 2: memory, answer, controller, request
TEMPLATES = {  # name -> placeholders (treeagent.agents.templates)
    "rememr1_memory": Spec(("question", "recalled", "memory", "section")),
    "rememr1_answer": Spec(("question", "memory"), ("recalled",)),
}
NO_RECALL = "No memory was recalled."

_RECALL = re.compile(r"<recall>.*?</recall>", re.S)


def words(text: str, tokenizer: Tokenizer) -> list[str]:
    """Recall-retrieval terms: the model tokenizer's tokens of the lowercased text with
    the space marker removed (upstream ``tokenize`` then ``replace('Ġ', '')``), so
    " temperature" and "temperature" are one term. A token's term is its text with
    spaces removed (byte-level BPE spells a space as Ġ, so this is the same term set;
    a token that ends inside a multi-byte character joins the next one)."""
    lower = text.lower()
    starts = [int(i) for i in tokenizer.token_starts(lower)]
    ends = starts[1:] + [len(lower)]
    return [lower[a:b].replace(" ", "") for a, b in zip(starts, ends) if b > a]


def _vector(counts: Counter[str], idf: dict[str, float]) -> dict[str, float]:
    vec = {w: c * idf[w] for w, c in counts.items() if w in idf}
    norm = math.sqrt(sum(v * v for v in vec.values()))
    return {w: v / norm for w, v in vec.items()} if norm else {}


def tfidf_scores(query: str, memories: Sequence[str], tokenizer: Tokenizer) -> list[float]:
    """Cosine of the query with each memory under TF-IDF over :func:`words`, fitted
    on ``memories`` (raw counts, smoothed idf ln((1 + n) / (1 + df)) + 1, l2 norm:
    scikit-learn's ``TfidfVectorizer`` defaults, as upstream)."""
    docs = [Counter(words(m, tokenizer)) for m in memories]
    n = len(docs)
    df: Counter[str] = Counter()
    for d in docs:
        df.update(d.keys())
    idf = {w: math.log((1 + n) / (1 + k)) + 1 for w, k in df.items()}
    q = _vector(Counter(words(query, tokenizer)), idf)
    out = []
    for d in docs:
        v = _vector(d, idf)
        out.append(sum(x * v.get(w, 0.0) for w, x in q.items()))
    return out


def best_memory(query: str, memories: Sequence[str], tokenizer: Tokenizer) -> int | None:
    """Index of the top-1 memory (upstream always returns one; ties go to the latest
    memory, as upstream's reversed argsort does); None when there is none."""
    if not memories or not query:
        return None
    scores = tfidf_scores(query, memories, tokenizer)
    return max(range(len(scores)), key=lambda i: (scores[i], i))


_RECALL_QUERY = re.compile(r"<recall>(.+)</recall>")


def parse_reply(reply: str) -> tuple[str, str | None, bool]:
    """(m_t, recall query or None, well-formed?) of one memory reply. The query is
    upstream's greedy one-line ``<recall>(.+)</recall>``; the memory is the reply with
    every ``<recall>...</recall>`` block removed."""
    body = strip_think(reply)
    m = _RECALL_QUERY.search(body)
    query = m.group(1) if m else None
    memory = _RECALL.sub("", body).strip()
    well_formed = len(tag_blocks(body, "update")) == 1 and bool(tag_blocks(body, "thinking"))
    return memory, query, well_formed


def run(ctx: Context) -> Program:
    """The ReMemR1 workflow; returns the raw final reply (the prediction)."""
    calls, limits = ctx.calls, ctx.limits
    reader = ctx.reader()
    memory, recalled = NO_MEMORY, NO_RECALL
    past: list[str] = []  # m_1 .. m_{t-1}
    malformed = 0
    for t in range(len(ctx.doc)):
        obs = reader.observe(t)
        ctx.observed("read", obs)
        request = calls.request(
            "rememr1_memory", "memory", limits.memory, question=ctx.problem,
            recalled=recalled, memory=memory, section=obs,
        )
        memory, query, ok = parse_reply((yield from ask(request)))
        malformed += not ok
        hit = best_memory(query, past, ctx.tokenizer) if query else None
        recalled = past[hit] if hit is not None else NO_RECALL
        ctx.note("recalls", {"t": t, "query": query, "memory": hit})
        past.append(memory)
        reader.save(t, memory)
    ctx.details["malformed"] = malformed
    answer = calls.request(
        "rememr1_answer", "answer", limits.answer, question=ctx.problem,
        recalled=recalled, memory=memory,
    )
    return (yield from ask(answer))


def cost(setup: AgentSetup, sizer: Sizer, problem: str, steps: Sequence[Step]) -> Cost:
    """Planned calls and token bounds of one example (:mod:`treeagent.pipeline.plan`): T memory
    calls + 1 answer, exactly; a recalled memory is a past memory (<= the memory cap)."""
    cost, r, limits = Cost(), Replies(setup, sizer), setup.limits
    mem = r.out_cap(limits.memory)
    recalled = max(mem, sizer.count(NO_RECALL))
    memory_pass(cost, r, sizer, "rememr1_memory", problem, steps, mem,
                extra={"recalled": recalled})
    r.add(cost, sizer.call("rememr1_answer", {"question": problem}, 0, mem + recalled, 2),
          limits.answer)
    return cost


AGENT = Agent(NAME, "ReMemR1", LIMITS, TEMPLATES, run,
              thinking=Thinking(),  # Qwen2.5 base
              paper_model="yrshi/ReMemR1-7B", paper_tokenizer="qwen2.5",
              cost_model=cost)
